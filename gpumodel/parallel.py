"""A decode step split over GPUs. Tensor parallelism (Megatron-LM's split, `step`): each of n GPUs holds
1/n of every weight matrix and the key-value heads of its query heads, and reads them from its
own HBM; after each layer's attention and after its MLP the GPUs all-reduce the batch's
activations (batch x width numbers of 2 bytes), and the LM head's logits, split by vocabulary,
are gathered once. Chapter 10.

    step time = the bound on one GPU's share of the step (chapter 9's model)
              + (2 x layers) all-reduces + one all-gather over the link, one after another:

each collective waits for the layer before it and the next layer waits for it, so their times
add to the step's. Each all-reduce runs by the fastest algorithm the link offers for its size, as
NCCL's tuner chooses (`collective`): a ring; a double binary tree where the link joins nodes; an
in-switch reduction (NVLS) where the link's switches add; across nodes of several GPUs, the
hierarchical one (within each node, then across). Within one node NCCL's tree is a chain as
long as the ring, with more bytes, so it is never the faster there and is not offered. A GPU holds ceil(kv_heads / n) key-value heads where n <= kv_heads; past that
each head is kept on n / kv_heads GPUs (the cache no longer shrinks). Each GPU computes whole
query heads, so n must divide the model's query heads (`head_splits`), as serving engines require. The link's latency per
step is the data's where one is published (0 otherwise: then the link term is a bound too).
Expert parallelism for a mixture of experts (`expert_step`): each GPU holds 1/n of the routed
experts, and two all-to-alls per MoE layer carry the tokens to their experts and back.
Prefill and decode on different GPUs (`kv_transfer`): a prompt's KV cache crosses a link.
Pipeline parallelism's idle share (`pipeline_bubble`). A request from its arrival to its last token
(`request`): its prompt's prefill over the same GPUs (`prefill`), then a decode step per token after
the first.
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
    them), or the larger of the two where two micro-batches `overlap`; `bound` is "link" where the collectives take longer than the GPU's share; `held` the
    bytes of weights and cache each GPU keeps, `fits` whether they fit its HBM."""

    gpus: int
    time: float
    gpu_time: float
    gpu_bound: str
    link_time: float
    collectives: int
    held: float
    fits: bool
    algorithm: str = ""
    """The algorithm its all-reduces ran by ("" where there are none)."""
    overlap: bool = False
    """Whether two micro-batches overlapped one's collectives with the other's computing: then
    `time` is the larger of `gpu_time` and `link_time`, not their sum."""

    @property
    def bound(self) -> str:
        """"link" where the collectives take longer than one GPU's share of the step, else what binds that share."""
        return "link" if self.link_time > self.gpu_time else self.gpu_bound


def _share(name, gpus: int, batch, context, weight: str, kv: str, math: str, chunk: int = 0) -> tuple[Workload, float]:
    """(one GPU's share of the step, the bytes it holds): 1/n of the weights and of the flops,
    and the cache of its key-value heads; with `chunk` prompt tokens prefilled in the same step
    (`decode.chunked_step`, no cached prefix), their flops and their rows written too."""
    m = decode.model(name)
    whole = decode.chunked_step(m, batch, context, chunk, 0, weight, kv, math) if chunk else \
        decode.step(m, batch, context, weight, kv, math)
    heads = _kv_heads_held(m, gpus)
    cache = float(np.asarray(batch) * (np.asarray(context) + 1) * decode.kv_bytes_per_token(m, kv))
    written = float(chunk * decode.kv_bytes_per_token(m, kv))  # the chunk's own rows
    weights = float(np.asarray(whole.bytes["hbm"])) - cache - written
    mine = weights / gpus + (cache + written) * heads / m.kv_heads
    flops = float(np.asarray(whole.flops)) / gpus
    share = Workload(f"{whole.name}, one of {gpus} GPUs", flops=flops,
                     bytes={"registers": 0.0, "smem": 0.0, "l2": mine, "hbm": mine}, math=math)
    held = m.params * WEIGHT_BYTES[weight] / gpus + cache * heads / m.kv_heads
    return share, held


def _kv_heads_held(m, gpus: int) -> int:
    """Key-value heads one of `gpus` GPUs holds: ceil(kv_heads / n), or one past kv_heads GPUs."""
    return -(-m.kv_heads // gpus) if gpus <= m.kv_heads else 1


def _whole_heads(m, n: int, joined, gpus) -> None:
    """Refuse a GPU count `n` that does not divide the model's query heads (`head_splits`)."""
    if m.heads % n:
        raise ValueError(f"gpus must divide {m.name}'s {m.heads} query heads, so that each GPU computes whole heads "
                         f"({', '.join(map(str, head_splits(m, joined.domain)))} over {joined.name}), got {gpus!r}")


def _setup(name, gpu, gpus, batch, context, link: str, latency: bool) -> tuple:
    """(model, GPU, gpus, batch, context, Link, latency per step, base) checked: `link` one `gpu`
    has, `gpus` within its domain; without `latency`, no latency and no base."""
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
    return m, device, n, b, c, joined, lat, base


FASTEST = "fastest"
"""The algorithm that asks for the fastest one the link offers (`collective`)."""


def algorithms(link, collective_name: str = "all-reduce") -> tuple:
    """The algorithms `collective_name` runs by over `link` (a name of `links.links()`): every
    collective a ring; an all-reduce also a double binary tree where the link joins nodes, a
    hierarchical one where it joins nodes of several GPUs (its `node_link`), and an in-switch
    reduction where its switches add (see the module doc)."""
    joined = links.link(link)
    _check.choice("collective_name", collective_name, collectives.COLLECTIVES)
    if collective_name != "all-reduce":
        return ("ring",)
    return (("ring",) + (("tree",) if joined.between == "nodes" else ())
            + ((collectives.HIERARCHICAL,) if joined.node_link else ()) + (("in-switch",) if joined.in_switch else ()))


def collective(link, collective_name: str, gpus, message, algorithm: str = FASTEST, latency: bool = True) -> tuple:
    """(seconds, algorithm) of `collective_name` of `message` bytes among `gpus` GPUs over `link`,
    by `algorithm` (one of `algorithms(link, collective_name)`, or FASTEST for the quickest of
    them, as NCCL's tuner picks). With `latency`, each pays NCCL's tuner's costs for it: the
    ring's and the tree's base and steps at the link's rate, the in-switch reduction its one
    latency at the rate NCCL credits it, the hierarchical one its steps within the node at the
    node link's latency and across at the network's (only over whole nodes, two or more); without,
    its bytes alone at the links' rates: a bound. Chapter 10."""
    joined = links.link(link)
    offered = algorithms(link, collective_name)
    _check.choice("algorithm", algorithm, collectives.ALGORITHMS + (collectives.HIERARCHICAL, FASTEST))
    if algorithm != FASTEST and algorithm not in offered:
        raise ValueError(f"algorithm must be {FASTEST!r} or one that {collective_name} runs by over {joined.name} "
                         f"({', '.join(offered)}), got {algorithm!r}")
    latency = _check.flag("latency", latency)
    n = _check.one("gpus", gpus, collectives.MOST_GPUS)
    m = _check.real("message", message, least=0)
    node = links.link(joined.node_link) if joined.node_link else None
    whole = node is not None and n % node.domain == 0 and n >= 2 * node.domain
    if algorithm == collectives.HIERARCHICAL and not whole:
        raise ValueError(f"gpus must fill two or more whole nodes of {node.domain} GPUs for a hierarchical "
                         f"all-reduce over {joined.name}, got {gpus!r}")
    f = joined.facts
    priced = {}
    for a in offered if algorithm == FASTEST else (algorithm,):
        if a == "in-switch" and latency:
            priced[a] = f["in_switch_latency"].value + m / f["in_switch_bandwidth"].value
        elif a == collectives.HIERARCHICAL:
            if not whole:
                continue  # not whole nodes: the flat algorithms only
            waits = (node.latency, joined.latency, joined.base) if latency else (0.0, 0.0, 0.0)
            priced[a] = float(collectives.hierarchical_time(n, node.domain, m, node.bandwidth, joined.bandwidth, *waits))
        else:
            lat, base = ((f["tree_latency"].value, f["tree_base"].value) if a == "tree" else
                         (joined.latency, joined.base)) if latency else (0.0, 0.0)
            priced[a] = float(collectives.collective_time(collective_name, n, m, joined.bandwidth, lat, base, a))
    best = min(priced, key=priced.get)
    return priced[best], best


def head_splits(name, most: int) -> tuple:
    """The GPU counts, 1 to `most`, over which tensor parallelism can split the model `name`:
    those that divide its query heads, so that each GPU computes whole heads."""
    m = decode.model(name)
    return tuple(n for n in range(1, _check.one("most", most, collectives.MOST_GPUS) + 1) if m.heads % n == 0)


def pipeline_bubble(stages, microbatches):
    """The share of a pipeline's time its GPUs sit idle when `stages` GPUs each hold a slice of
    the layers and a batch passes through them as `microbatches` micro-batches one after
    another: (stages - 1) / (microbatches + stages - 1) (huang2019gpipe): each
    stage waits for the first micro-batch to reach it and idles once the last has left it."""
    p = _check.count("stages", stages, collectives.MOST_GPUS)
    m = _check.count("microbatches", microbatches, decode.MOST_BATCH)
    _check.broadcast(("stages", p), ("microbatches", m))
    for name, v, given in (("stages", p, stages), ("microbatches", m, microbatches)):
        if np.any(v < 1):
            raise ValueError(f"{name} must be at least 1, got {given!r}")
    return (p - 1) / (m + p - 1)


def kv_transfer(name, tokens, link: str, gpus: int = 1, kv: str = "fp16") -> float:
    """Seconds to move the KV cache of `tokens` tokens of the model `name` from the GPUs that ran
    its prefill to those that decode it (prefill and decode disaggregated, zhong2024distserve):
    `gpus` GPUs each send their share of the key-value heads over a `link` of their own at its
    one-way bandwidth. A bound: no latency, and no overlap with the prefill's layers."""
    tokens = _check.one("tokens", tokens, decode.MOST_CONTEXT)
    gpus = _check.one("gpus", gpus, collectives.MOST_GPUS)
    nbytes = decode.kv_bytes_per_token(name, kv) * tokens
    return float(nbytes / gpus / links.link(link).bandwidth)


def step(name, gpu, gpus, batch, context, link: str, weight: str = "fp16", kv: str = "fp16", math: str = "fp16",
         algorithm: str = FASTEST, latency: bool = True, overlap: bool = False, chunk: int = 0) -> ParallelStep:
    """One decode step of `batch` sequences with `context` cached tokens of model `name` split
    over `gpus` GPUs of `gpu` joined by `link` (a name of `links.links()`), its all-reduces by
    `algorithm` (one the link offers, or FASTEST: `collective`), each collective paying NCCL's
    tuner's costs or, without `latency`, its bytes alone: then the step's time is a bound. See
    the module doc. `gpus` must divide the model's query heads (`head_splits`). With `overlap`,
    the batch runs as two micro-batches, one's collectives while the other computes, as
    DeepSeek-V3 decodes (deepseek2024v3, Section 3.4): each micro-batch reads the weights again,
    and the step takes the longer of the two micro-batches' GPU times and their collectives'
    times together. `chunk`: prompt tokens prefilled in the same step, as continuous batching
    with chunked prefill runs them (`decode.chunked_step`; `decode.served_chunk` gives the mean
    a served batch carries): their flops, and their activations in every all-reduce. Chapter 10."""
    m, device, n, b, c, joined, _, _ = _setup(name, gpu, gpus, batch, context, link, latency)
    k = _check.count("chunk", chunk, decode.MOST_CONTEXT)
    if k and _check.flag("overlap", overlap):
        raise ValueError("chunk must be 0 where two micro-batches overlap (the model splits decoding sequences, "
                         f"not a prompt), got {chunk!r}")
    _whole_heads(m, n, joined, gpus)
    if _check.flag("overlap", overlap) and b < 2:
        raise ValueError(f"batch must be at least 2 to overlap two micro-batches, got {batch!r}")
    parts = [_step_parts(m, device, n, part, c, joined, weight, kv, math, algorithm, latency, k)
             for part in ((b - b // 2, b // 2) if overlap else (b,))]
    gpu_time, link_time = (sum(p[i] for p in parts) for i in (0, 2))
    held = _share(m, n, b, c, weight, kv, math)[1]
    time = max(gpu_time, link_time) if overlap else gpu_time + link_time
    return ParallelStep(n, time, gpu_time, parts[0][1], link_time, (2 * m.layers + 1) * len(parts) if n > 1 else 0,
                        held, held <= device.capacity("hbm"), parts[0][3], overlap)


def _step_parts(m, device, n: int, batch: int, context: int, joined, weight: str, kv: str, math: str, algorithm: str,
                latency: bool, chunk: int = 0) -> tuple:
    """(seconds of one GPU's share, what bounds it, seconds of the collectives, the all-reduces'
    algorithm) of a step of `batch` sequences and `chunk` prompt tokens: 2 all-reduces a layer
    of all their activations and the decoding sequences' logits' all-gather."""
    alone = predict(_share(m, n, batch, context, weight, kv, math, chunk)[0], device)
    if n == 1:
        return float(alone.time), str(alone.bound), 0.0, ""
    per_layer, ran = collective(joined.name, "all-reduce", n, (batch + chunk) * m.width * ACTIVATION_BYTES, algorithm,
                                latency)
    logits, _ = collective(joined.name, "all-gather", n, batch * m.vocab * ACTIVATION_BYTES, "ring", latency)
    return float(alone.time), str(alone.bound), float(2 * m.layers * per_layer + logits), ran


def expert_step(name, gpu, gpus, batch, context, link: str, weight: str = "fp8", kv: str = "fp16", math: str = "fp16",
                latency: bool = True) -> ParallelStep:
    """One decode step of a mixture of experts `name` split over `gpus` GPUs by expert
    parallelism (as DeepSeek-V3 serves its decode): each GPU holds 1/n of every MoE layer's routed
    experts and a whole copy of the rest (attention, shared experts, embedding, LM head), and runs
    attention for its ceil(batch / n) of the sequences. In each MoE layer an all-to-all sends each
    of its tokens' hidden vectors (width x 2 bytes) to the GPUs of the `active` experts it is
    routed to, and another brings the results back: 2 x moe_layers all-to-alls a step, over `link`.
    Each GPU reads its experts that the whole batch touches (`decode.experts_touched`, 1/n of them
    in expectation) and the whole of the rest; it computes 1/n of the batch's expert flops. The
    step's time adds the GPU's bound and the collectives' times, as `step`'s. Chapter 10."""
    m, device, n, b, c, joined, lat, base = _setup(name, gpu, gpus, batch, context, link, latency)
    if not m.experts:
        moe = [k for k, v in decode.MODELS.items() if v.experts]
        raise ValueError(f"name must be a mixture of experts (one of {moe}), got {name!r}, a dense model")
    if n > m.experts:
        raise ValueError(f"gpus must be at most {m.experts}, {m.name}'s routed experts per layer, got {gpus!r}")
    mine = -(-b // n)  # sequences on the busiest GPU
    s_w = WEIGHT_BYTES[_check.choice("weight", weight, WEIGHT_BYTES)]
    cache = mine * (c + 1) * decode.kv_bytes_per_token(m, kv)
    rest = m.params - m.routed  # every weight but the routed experts': each GPU holds them all
    table = 0.0 if m.tied else m.embedding - mine * m.width  # of the embedding, its sequences' rows
    experts_read = m.moe_layers * m.expert_params * float(decode.experts_touched(m.experts, m.active, b)) / n
    hbm = (rest - table + experts_read) * s_w + cache
    dense_flops = 2 * (m.active_params - m.moe_layers * m.active * m.expert_params) * mine
    flops = dense_flops + 2 * m.moe_layers * m.active * m.expert_params * b / n + mine * c * m.attention_flops
    share = Workload(f"decode step ({m.name}, {weight} weights, {kv} cache), one of {n} GPUs by experts",
                     flops=flops, bytes={"registers": 0.0, "smem": 0.0, "l2": hbm, "hbm": hbm}, math=math)
    alone = predict(share, device)
    count = 2 * m.moe_layers if n > 1 else 0
    dispatch = mine * m.active * m.width * ACTIVATION_BYTES  # the hidden vectors this GPU's tokens send out
    link_time = (count * float(collectives.collective_time("all-to-all", n, dispatch, joined.bandwidth, lat, base))
                 if n > 1 else 0.0)
    held = (rest + m.routed / n) * s_w + cache
    gpu_time = float(alone.time)
    return ParallelStep(n, gpu_time + link_time, gpu_time, str(alone.bound), link_time, count, held,
                        held <= device.capacity("hbm"))


def prefill(name, gpu, gpus, batch, prompt, link: str, weight: str = "fp16", kv: str = "fp16", math: str = "fp16",
            algorithm: str = FASTEST, latency: bool = True) -> ParallelStep:
    """The prefill of `batch` prompts of `prompt` tokens each, all at once, split over `gpus` GPUs
    as `step` splits a decode step: one GPU's share of `decode.chunked_step`'s workload for each
    prompt (2 flops per active weight per token, causal attention within the prompt, its cache
    written), the weights read once for all of them; 2 all-reduces a layer of every prompt
    token's activations; the last token's logits gathered. What the first token waits for
    (the time to first token, at least). Chapter 10."""
    p = _check.one("prompt", prompt, decode.MOST_CONTEXT)
    m, device, n, b, _, joined, _, _ = _setup(name, gpu, gpus, batch, p, link, latency)
    _check.choice("algorithm", algorithm, collectives.ALGORITHMS + (collectives.HIERARCHICAL, FASTEST))
    _whole_heads(m, n, joined, gpus)
    one = decode.chunked_step(m, 0, 0, p, weight=weight, kv=kv, math=math)
    weights = decode.weight_bytes(decode.weights_read(m, b * p), weight)
    cache = b * p * decode.kv_bytes_per_token(m, kv)
    heads = _kv_heads_held(m, n)
    mine = weights / n + cache * heads / m.kv_heads
    share = Workload(f"prefill of {b} x {p} tokens ({m.name}), one of {n} GPUs", flops=b * float(one.flops) / n,
                     bytes={"registers": 0.0, "smem": 0.0, "l2": mine, "hbm": mine}, math=math)
    alone = predict(share, device)
    link_time, ran = 0.0, ""
    if n > 1:
        per_layer, ran = collective(joined.name, "all-reduce", n, b * p * m.width * ACTIVATION_BYTES, algorithm, latency)
        logits, _ = collective(joined.name, "all-gather", n, b * m.vocab * ACTIVATION_BYTES, "ring", latency)
        link_time = float(2 * m.layers * per_layer + logits)
    held = m.params * WEIGHT_BYTES[weight] / n + cache * heads / m.kv_heads
    return ParallelStep(n, float(alone.time) + link_time, float(alone.time), str(alone.bound), link_time,
                        (2 * m.layers + 1) if n > 1 else 0, held, held <= device.capacity("hbm"), ran)


@dataclass(frozen=True)
class Request:
    """A batch of requests from arrival to last token: `prefill` (`prefill`: the first token's
    wait), then `steps` decode steps (one per token after the first), each as long as `step`
    (`step` at the mean context they see; None where there are none)."""

    prefill: ParallelStep
    steps: int
    step: ParallelStep | None

    @property
    def decoding(self) -> float:
        """Seconds of the decode steps after the prefill."""
        return self.steps * self.step.time if self.step else 0.0

    @property
    def time(self) -> float:
        """Seconds from the requests' arrival to their last token."""
        return self.prefill.time + self.decoding

    @property
    def bounds(self) -> str:
        """What binds each phase, the prefill's first: "compute+hbm", or one name where both agree."""
        return "+".join(dict.fromkeys([self.prefill.bound] + ([self.step.bound] if self.step else [])))

    @property
    def bound(self) -> str:
        """What binds the longer of the two phases: the prefill's bound or the steps'."""
        return self.step.bound if self.decoding > self.prefill.time else self.prefill.bound


def request(name, gpu, gpus, batch, prompt, output, link: str, weight: str = "fp16", kv: str = "fp16",
            math: str = "fp16", algorithm: str = FASTEST, latency: bool = True) -> Request:
    """`batch` requests of `prompt` tokens each that generate `output` tokens each, run together
    on `gpus` GPUs over `link`: the prompts' `prefill` (its last token's logits give the first
    token), then output - 1 decode steps (`step`). A step's bytes grow with its context,
    linearly, so the steps are priced at their mean context, prompt + output // 2. Chapter 10."""
    out = _check.one("output", output, decode.MOST_CONTEXT)
    p = _check.one("prompt", prompt, decode.MOST_CONTEXT)
    first = prefill(name, gpu, gpus, batch, p, link, weight, kv, math, algorithm, latency)
    if out == 1:
        return Request(first, 0, None)
    return Request(first, out - 1, step(name, gpu, gpus, batch, p + out // 2, link, weight, kv, math, algorithm,
                                        latency))
