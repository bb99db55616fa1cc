"""Decode: one generated token's bytes against HBM, the formulas of chapter 9.

A decode step of a language model reads every weight once for the whole batch, and every
sequence's KV cache once for that sequence alone. So:

- the KV cache a token adds (`kv_bytes_per_token`): per layer, a key and a value per key-value
  head (multi-head attention: one per query head; grouped-query attention: one per group of
  query heads), or one latent vector and a shared RoPE key (multi-head latent attention, MLA);
  in any cache format of `KV_FORMATS`, scales included;
- the step as a `Workload` (`step`) that the model times (`gm.predict`): its tokens per second
  (`tokens_per_second`), the batch at which it leaves HBM's bound (`critical_batch`, chapter 6's
  critical batch with the cache), the batches whose caches fit (`max_batch`);
- the cache in pages (`paged_kv`: sectors read, the page table, the memory a last page wastes);
- split-KV ("flash-decoding", `split_kv`): blocks of heads x splits against the SMs, and the
  partial softmaxes written and merged.

`gpumodel.simulate.paged_decode_attention` does the work and counts the same bytes. NumPy and
the standard library only; SI units (bytes, seconds, FLOP/s). Exercises in
`gpumodel.course.decode`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from . import _check, low_precision, presets
from .hardware import SECTOR_BYTES
from .model import predict
from .tensor_cores import WEIGHT_BYTES
from .workloads import Workload


@dataclass(frozen=True)
class Model:
    """A decoder's shape: `layers`; `heads` query heads of `head_dim`; `kv_heads` key-value
    heads (= heads: MHA; fewer: GQA); `params`, the weights one token's step reads (for a
    mixture of experts, the activated ones: a lower bound on what a batch reads); for MLA,
    `latent` (the compressed KV's width, d_c) and `rope` (the decoupled RoPE key's, d_h^R),
    cached once per layer and shared by every head. `source`: a references.bib key and where."""

    name: str
    layers: int
    heads: int
    kv_heads: int
    head_dim: int
    params: float
    latent: int = 0
    rope: int = 0
    source: str = ""

    def __post_init__(self):
        for name in ("layers", "kv_heads", "heads", "head_dim"):
            _check.one(name, getattr(self, name))
        _check.real("params", self.params, least=1.0)
        for name in ("latent", "rope"):
            _check.one(name, getattr(self, name), zero=True)
        if self.heads % self.kv_heads:
            raise ValueError(f"heads must be a multiple of kv_heads ({self.kv_heads}), got {self.heads!r}")

    @property
    def attention(self) -> str:
        """"mla", "mha" (a key-value head per query head) or "gqa"."""
        return "mla" if self.latent else ("mha" if self.kv_heads == self.heads else "gqa")

    @property
    def group(self) -> int:
        """Query heads per key-value head (all of them for MLA's one shared latent)."""
        return self.heads if self.latent else self.heads // self.kv_heads

    @property
    def rows(self) -> int:
        """Cached rows one token adds: 2 x kv_heads per layer (a key and a value each), or one
        latent row per layer for MLA."""
        return self.layers * (1 if self.latent else 2 * self.kv_heads)

    @property
    def row_elements(self) -> int:
        """Elements of one cached row: head_dim, or latent + rope for MLA."""
        return self.latent + self.rope if self.latent else self.head_dim

    @property
    def attention_flops(self) -> float:
        """FLOPs per token of context per sequence in one step: QK and PV, 2 x head_dim each per
        query head per layer (4 h d L); for MLA with the up-projections absorbed, the score
        reads the latent and the RoPE key (2(d_c + d_h^R)) and the output the latent (2 d_c)."""
        per_head = 2 * (2 * self.latent + self.rope) if self.latent else 4 * self.head_dim
        return float(self.layers * self.heads * per_head)


MODELS = {
    "Llama-2-7B": Model("Llama-2-7B", 32, 32, 32, 128, 6.7e9, source="touvron2023llama, Table 2 (the 6.7B model)"),
    "Llama-3-8B": Model("Llama-3-8B", 32, 32, 8, 128, 8.0e9, source="dubey2024llama3, Table 3 (8B)"),
    "DeepSeek-V2": Model("DeepSeek-V2", 60, 128, 1, 128, 21e9, latent=512, rope=64,
                         source="deepseek2024v2, section 2.1 and 3.1.2 (21B activated of 236B)"),
}
"""The chapter's models: a dense MHA model, a GQA model (8 key-value heads), an MLA model."""

KV_INT4 = (0.5, 32, 4)
"""An int4 cache: half a byte per element, and per group of 32 elements of a row an fp16 scale
and an fp16 zero point (4 bytes), as KIVI quantises its cache (liu2024kivi)."""
KV_FORMATS = {"fp32": (4.0, None, 0), "fp16": (2.0, None, 0), "bf16": (2.0, None, 0), "int4": KV_INT4,
              **{name: low_precision.FORMATS[name] for name in ("fp8", "mxfp8", "mxfp4", "nvfp4")}}
"""Cache formats: (bytes per element, elements sharing a scale, bytes per scale); the block-scaled
ones are chapter 7's (`gpumodel.low_precision.FORMATS`)."""


def model(name) -> Model:
    """A `Model`, or the one of MODELS named `name`."""
    if isinstance(name, Model):
        return name
    return MODELS[_check.choice("name", name, tuple(MODELS))]


def row_bytes(elements, kv: str = "fp16"):
    """Bytes of one cached row of `elements` values in the cache format `kv` (KV_FORMATS): the
    values and one scale per started group. Chapter 9."""
    n = _check.size("elements", elements)
    size, group, scale = KV_FORMATS[_check.choice("kv", kv, tuple(KV_FORMATS))]
    return _check.as_output(n * size + (np.ceil(n / group) * scale if group else 0))


def kv_bytes_per_token(name, kv: str = "fp16") -> float:
    """Bytes of KV cache one token of context adds to a sequence of the model `name` (a name of
    MODELS or a `Model`), in the cache format `kv`: rows x row bytes; for MHA and GQA in fp16,
    chapter 6's layers x 2 x kv_heads x head_dim x 2. Chapter 9."""
    m = model(name)
    return float(m.rows * row_bytes(m.row_elements, kv))


def step(name, batch, context, weight: str = "fp16", kv: str = "fp16", math: str = "fp16") -> Workload:
    """One decode step of `batch` sequences, each with `context` cached tokens: the weights read
    once (`weight`, WEIGHT_BYTES each), each sequence's cache read and its new token's row
    written (`kv`); 2 flops per weight per sequence and `Model.attention_flops` per token of
    context, on the `math` units. Activations and the softmax's exponentials are left out
    (a few kilobytes per sequence). HBM and L2 carry the same bytes. Chapter 9."""
    m = model(name)
    b, c = _check.size("batch", batch), _check.count("context", context)
    _check.broadcast(("batch", b), ("context", c))
    b_w = WEIGHT_BYTES[_check.choice("weight", weight, WEIGHT_BYTES)]
    per_token = kv_bytes_per_token(m, kv)
    nbytes = m.params * b_w + b * (c + 1) * per_token
    flops = 2 * m.params * b + b * c * m.attention_flops
    return Workload(f"decode step ({m.name}, {weight} weights, {kv} cache)", flops=flops,
                    bytes={"registers": 0 * flops, "smem": 0 * flops, "l2": nbytes, "hbm": nbytes}, math=math,
                    note="weights once per step, each cache once per sequence")


def step_time(name, gpu, batch, context, weight: str = "fp16", kv: str = "fp16", math: str = "fp16"):
    """The model's bound on one step (`step`) on `gpu`, in seconds. Chapter 9."""
    return predict(step(name, batch, context, weight, kv, math), gpu).time


def tokens_per_second(name, gpu, batch, context, weight: str = "fp16", kv: str = "fp16", math: str = "fp16"):
    """Tokens the batch generates per second on `gpu`, at most: batch / `step_time`. Chapter 9."""
    b = _check.size("batch", batch)
    return _check.as_output(b / np.asarray(step_time(name, gpu, batch, context, weight, kv, math)))


def critical_batch(name, gpu, context, weight: str = "fp16", kv: str = "fp16", math: str = "fp16",
                   largest: int = 1 << 20):
    """The smallest batch at which the step (`step`) on `gpu` is no longer HBM-bound, or None
    when none is: with the cache, F/B = 2B(P + c a / 2) / (P s_w + B(c + 1) k) tends to
    (2P + c a) / ((c + 1) k) as B grows, and a context long enough keeps that below the ridge.
    (P weights of s_w bytes, a attention flops and k cache bytes per token of context), so
    B* = ceil(R P s_w / (2P + c a - R (c + 1) k)) at the HBM ridge R: chapter 6's ceil(R s_w / 2)
    (activations left out) when the cache is nothing. Chapter 9."""
    m, g = model(name), presets.gpu(gpu)
    c, largest = _check.one("context", context, zero=True), _check.one("largest", largest)
    w = step(m, 1, c, weight, kv, math)  # refuses a bad weight, kv or math, naming it
    ridge = g.running(math).ridge("hbm", math)
    per_batch_flops = 2 * m.params + c * m.attention_flops
    per_batch_bytes = (c + 1) * kv_bytes_per_token(m, kv)
    room = per_batch_flops - ridge * per_batch_bytes
    if room <= 0:
        return None
    fixed = float(w.bytes["hbm"]) - per_batch_bytes  # the weights
    batch = max(1, int(np.ceil(ridge * fixed / room)))
    # Settle the rounding against the model itself (the boundary is where predict's bound changes).
    while batch > 1 and predict(step(m, batch - 1, c, weight, kv, math), g).bound != "hbm":
        batch -= 1
    while batch <= largest and predict(step(m, batch, c, weight, kv, math), g).bound == "hbm":
        batch += 1
    return batch if batch <= largest else None


def max_batch(name, gpu, context, weight: str = "fp16", kv: str = "fp16") -> int:
    """The most sequences of `context` tokens whose caches fit in `gpu`'s HBM beside the
    weights (0 when the weights alone do not fit). Chapter 9."""
    m, g = model(name), presets.gpu(gpu)
    c = _check.one("context", context, zero=True)
    b_w = WEIGHT_BYTES[_check.choice("weight", weight, WEIGHT_BYTES)]
    room = g.capacity("hbm") - m.params * b_w
    return max(0, int(room // ((c + 1) * kv_bytes_per_token(m, kv))))


@dataclass(frozen=True)
class PagedKV:
    """A cached stream (one layer's keys, or values, of one key-value head of one sequence) of
    `context` rows of `row_bytes` in pages of `page_tokens` rows: `pages`; the `stride` between
    pages in the pool (a page's bytes rounded up to whole sectors); the `sectors` its rows fill
    (read once by a decode step); `contiguous`, the sectors of the same rows stored end to end;
    `table_bytes`, the page indices a reader looks up (`index_bytes` each); `allocated`, the
    pool's bytes for the stream (the last page's unused rows included)."""

    context: int
    page_tokens: int
    row_bytes: int
    pages: int
    stride: int
    sectors: int
    contiguous: int
    table_bytes: int
    allocated: int

    @property
    def read_bytes(self) -> int:
        """Bytes the sectors carry: sectors x 32."""
        return self.sectors * SECTOR_BYTES

    @property
    def wasted(self) -> float:
        """The fraction of `allocated` holding no row."""
        return 1 - self.context * self.row_bytes / self.allocated


def _sectors(nbytes: int) -> int:
    return -(-nbytes // SECTOR_BYTES)


def paged_kv(context, page_tokens, row_bytes, index_bytes: int = 4) -> PagedKV:
    """The pages of one cached stream (see `PagedKV`): pages start at multiples of the stride
    (page_tokens x row_bytes rounded up to 32 bytes), so each page's rows fill ceil(used / 32)
    sectors wherever the page lies; a page's rows are contiguous (the page-major, head-major
    layout). Chapter 9."""
    c, p = _check.one("context", context), _check.one("page_tokens", page_tokens)
    r, index_bytes = _check.one("row_bytes", row_bytes), _check.one("index_bytes", index_bytes)
    pages = -(-c // p)
    last = c - (pages - 1) * p
    stride = _sectors(p * r) * SECTOR_BYTES
    return PagedKV(c, p, r, pages, stride, (pages - 1) * _sectors(p * r) + _sectors(last * r), _sectors(c * r),
                   pages * index_bytes, pages * stride)


PARTIAL_BYTES = 4
"""Bytes of each value of a partial result (fp32): a split's output row and its log-sum-exp."""


@dataclass(frozen=True)
class SplitKV:
    """One layer's decode attention split along the context (see `split_kv`): `blocks` =
    batch x kv_heads x splits against the GPU's `sms`, in `waves`, keeping `busy` of the SMs'
    time; `kv_bytes` the cache read; `partial_bytes` the partial results written and read back
    by the merge; `merge_flops` and `merge_special` (exponentials) the merge's work."""

    splits: int
    blocks: int
    sms: int
    waves: int
    busy: float
    kv_bytes: float
    partial_bytes: float
    merge_flops: float
    merge_special: float

    @property
    def merge_share(self) -> float:
        """The partial results' bytes over the cache's."""
        return self.partial_bytes / self.kv_bytes


def split_kv(gpu, batch, heads, kv_heads, head_dim, context, splits, page_tokens: int = 16, kv: str = "fp16") -> SplitKV:
    """Decode attention for one layer, `batch` sequences of `context` tokens, `heads` query
    heads sharing `kv_heads` key-value heads of `head_dim`, the context cut into `splits` runs
    of whole pages of `page_tokens` (at most one split per page). One block per key-value head
    per split serves the head's whole group, so the cache is read once (`paged_kv`, keys and
    values). With more than one split, each block writes per query head an fp32 output row and
    its log-sum-exp (head_dim + 1 values) that the merge reads back; the merge rescales each
    by exp(lse_s - lse) (one exponential) and adds (2 head_dim + 2 flops per split per head).
    Chapter 9."""
    g = presets.gpu(gpu)
    b, h, h_kv = _check.one("batch", batch), _check.one("heads", heads), _check.one("kv_heads", kv_heads)
    d, s = _check.one("head_dim", head_dim), _check.one("splits", splits)
    if h % h_kv:
        raise ValueError(f"heads must be a multiple of kv_heads ({h_kv}), got {heads!r}")
    stream = paged_kv(context, page_tokens, int(row_bytes(d, kv)))
    _check.not_larger("splits", s, "the pages (context / page_tokens, rounded up)", stream.pages)
    blocks = b * h_kv * s
    sms = int(g.sms.value)
    waves = -(-blocks // sms)
    merged = s > 1
    rows = b * h * s
    return SplitKV(s, blocks, sms, waves, blocks / (waves * sms), float(2 * b * h_kv * stream.read_bytes),
                   float(2 * rows * (d + 1) * PARTIAL_BYTES) if merged else 0.0,
                   float(rows * (2 * d + 2)) if merged else 0.0, float(rows) if merged else 0.0)


def splits_to_fill(gpu, batch, kv_heads) -> int:
    """The fewest splits that give every SM of `gpu` a block: ceil(SMs / (batch x kv_heads)).
    Chapter 9."""
    b, h_kv = _check.one("batch", batch), _check.one("kv_heads", kv_heads)
    return max(1, math.ceil(presets.gpu(gpu).sms.value / (b * h_kv)))
