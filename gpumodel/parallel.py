"""A decode step split over GPUs (tensor parallelism, Megatron-LM's split): each of n GPUs holds
1/n of every weight matrix and the key-value heads of its query heads, and reads them from its
own HBM; after each layer's attention and after its MLP the GPUs all-reduce the batch's
activations (batch x width numbers of 2 bytes), and the LM head's logits, split by vocabulary,
are gathered once. Chapter 10.

    step time = the bound on one GPU's share of the step (chapter 9's model)
              + (2 x layers) all-reduces + one all-gather over the link, one after another:

each collective waits for the layer before it and the next layer waits for it, so their times
add to the step's. A GPU holds ceil(kv_heads / n) key-value heads where n <= kv_heads; past that
each head is kept on n / kv_heads GPUs (the cache no longer shrinks). The link's latency per
step is the data's where one is published (0 otherwise: then the link term is a bound too).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import _check, collectives, decode, links
from .model import predict
from .presets import gpu as preset
from .tensor_cores import WEIGHT_BYTES
from .workloads import Workload

ACTIVATION_BYTES = 2
"""Bytes of one activation the GPUs all-reduce (bf16 or fp16)."""


@dataclass(frozen=True)
class ParallelStep:
    """One tensor-parallel decode step on `gpus` GPUs: `time` (s) = `gpu_time` (the bound on one
    GPU's share, `gpu_bound` says what sets it) + `link_time` (its collectives, `collectives` of
    them); `bound` is "link" where the collectives take longer than the GPU's share; `held` the
    bytes of weights and cache each GPU keeps, `fits` whether they fit its HBM."""

    gpus: int
    time: float
    gpu_time: float
    gpu_bound: str
    link_time: float
    collectives: int
    held: float
    fits: bool

    @property
    def bound(self) -> str:
        """"link" where the collectives take longer than one GPU's share of the step, else what binds that share."""
        return "link" if self.link_time > self.gpu_time else self.gpu_bound


def _share(name, gpus: int, batch, context, weight: str, kv: str, math: str) -> tuple[Workload, float]:
    """(one GPU's share of the step, the bytes it holds): 1/n of the weights and of the flops,
    and the cache of its key-value heads."""
    m = decode.model(name)
    whole = decode.step(m, batch, context, weight, kv, math)
    heads = -(-m.kv_heads // gpus) if gpus <= m.kv_heads else 1
    cache = float(np.asarray(batch) * (np.asarray(context) + 1) * decode.kv_bytes_per_token(m, kv))
    weights = float(np.asarray(whole.bytes["hbm"])) - cache
    mine = weights / gpus + cache * heads / m.kv_heads
    flops = float(np.asarray(whole.flops)) / gpus
    share = Workload(f"{whole.name}, one of {gpus} GPUs", flops=flops,
                     bytes={"registers": 0.0, "smem": 0.0, "l2": mine, "hbm": mine}, math=math)
    held = m.params * WEIGHT_BYTES[weight] / gpus + cache * heads / m.kv_heads
    return share, held


def step(name, gpu, gpus, batch, context, link: str, weight: str = "fp16", kv: str = "fp16", math: str = "fp16",
         algorithm: str = "ring", latency: bool = True) -> ParallelStep:
    """One decode step of `batch` sequences with `context` cached tokens of model `name` split
    over `gpus` GPUs of `gpu` joined by `link` (a name of `links.links()`), its all-reduces by
    `algorithm` (collectives.ALGORITHMS), each collective paying the link's latencies (NCCL's
    tuner's estimates) or, without `latency`, its bytes alone: then the step's time is a bound.
    See the module doc. Chapter 10."""
    m, device = decode.model(name), preset(gpu)
    n = _check.one("gpus", gpus, collectives.MOST_GPUS)
    b = _check.one("batch", batch, decode.MOST_BATCH)
    c = _check.one("context", context, decode.MOST_CONTEXT, zero=True)
    joined = links.link(link)
    if device.name not in joined.gpus:
        raise ValueError(f"link must be one {device.name} has ({', '.join(k.name for k in links.links_of(device))}), got {link!r}")
    lat, base = (joined.latency, joined.base) if _check.flag("latency", latency) else (0.0, 0.0)
    if n > joined.domain:
        raise ValueError(f"gpus must be at most {joined.domain}, the GPUs {joined.name} joins in one domain, got {gpus!r}")
    share, held = _share(m, n, b, c, weight, kv, math)
    alone = predict(share, device)
    count = 2 * m.layers + 1
    if n == 1:
        link_time = 0.0
    else:
        per_layer = collectives.collective_time("all-reduce", n, b * m.width * ACTIVATION_BYTES, joined.bandwidth,
                                                lat, base, algorithm)
        logits = collectives.collective_time("all-gather", n, b * m.vocab * ACTIVATION_BYTES, joined.bandwidth, lat, base)
        link_time = float(2 * m.layers * per_layer + logits)
    gpu_time = float(alone.time)
    return ParallelStep(n, gpu_time + link_time, gpu_time, str(alone.bound), link_time, count if n > 1 else 0,
                        held, held <= device.capacity("hbm"))
