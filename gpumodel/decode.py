"""Decode: one generated token's bytes against HBM, the formulas of chapter 9.

A decode step of a language model reads every weight once for the whole batch, and every
sequence's KV cache once for that sequence alone. So:

- the KV cache a token adds (`kv_bytes_per_token`): per layer, a key and a value per key-value
  head (multi-head attention: one per query head; grouped-query attention: one per group of
  query heads), or one latent vector and a shared RoPE key (multi-head latent attention, MLA);
  in any cache format of `KV_FORMATS`, scales included;
- the weights a step reads (`weights_read`): every matrix once, the LM head included, but of the
  input embedding table only the rows the batch looks up; for a mixture of experts, the routed
  experts the batch touches (`experts_touched`);
- one weight GEMM of a step, chapter 6's: its HBM intensity at a batch (`gemm_intensity`) and
  the batch at which it reaches HBM's ridge (`gemm_critical_batch`);
- the step as a `Workload` (`step`) that the model times (`gm.predict`): its tokens per second
  (`tokens_per_second`), the batch at which it leaves HBM's bound (`critical_batch`, chapter 6's
  critical batch with the cache), the batches whose caches fit (`max_batch`);
- quantised weights with their groups' scales (`weight_bytes`), and the step's time with the
  instructions that unpack them (`quantised_step`);
- a prefix shared by the batch, read once (`prefix_cache_bytes`);
- the cache in pages (`paged_kv`: sectors read, the page table, the memory a last page wastes);
- split-KV ("flash-decoding", `split_kv`): blocks of heads x splits against the SMs, and the
  partial softmaxes written and merged; the split count chosen for full waves (`wave_splits`).

`gpumodel.simulate.paged_decode_attention` does the work and counts the same bytes. NumPy and
the standard library only; SI units (bytes, seconds, FLOP/s). Exercises in
`gpumodel.course.decode`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from . import _check, low_precision, presets
from .expected import dequantise_time
from .hardware import SECTOR_BYTES
from .model import TIE_RTOL, predict
from .tensor_cores import WEIGHT_BYTES
from .workloads import Workload

MOST_CONTEXT = 2**24
"""The longest context a step takes (tokens): 16.8 million, past every model's window."""
MOST_BATCH = 2**20
"""The most sequences a step takes: a million, past any server's batch."""
MOST_WIDTH = 2**20
"""The largest of a model's counts (layers, heads, widths, experts): a million."""
MOST_VOCAB = 2**24
"""The largest vocabulary (tokens): 16.8 million."""
MOST_PARAMS = 1e15
"""The most weights a model may hold: a thousand times the largest published."""


@dataclass(frozen=True)
class Model:
    """A decoder's shape: `layers`; `heads` query heads of `head_dim`; `kv_heads` key-value
    heads (= heads: MHA; fewer: GQA); `params`, every weight the model stores (for a mixture of
    experts, all its experts); for MLA, `latent` (the compressed KV's width, d_c) and `rope` (the
    decoupled RoPE key's, d_h^R), cached once per layer and shared by every head. `source`: a
    references.bib key and where.

    What a step reads of the weights (`weights_read`): `hidden` is the model's width (0: heads x
    head_dim) and `vocab` its vocabulary, so the input embedding table is vocab x hidden weights of
    which a step reads one row per sequence; `tied` says the LM head is that same table (then read
    whole, once, as the LM head). A mixture of experts has `moe_layers` layers of `experts` routed
    experts of `expert_params` weights each, `active` of them routed per token (shared experts are
    in the rest of `params`). Chapter 9."""

    name: str
    layers: int
    heads: int
    kv_heads: int
    head_dim: int
    params: float
    latent: int = 0
    rope: int = 0
    source: str = ""
    hidden: int = 0
    vocab: int = 0
    tied: bool = False
    moe_layers: int = 0
    experts: int = 0
    active: int = 0
    expert_params: float = 0.0

    def __post_init__(self):
        checked = {name: _check.one(name, getattr(self, name), MOST_WIDTH) for name in ("layers", "kv_heads", "heads",
                                                                                        "head_dim")}
        checked |= {name: _check.one(name, getattr(self, name), MOST_VOCAB if name == "vocab" else MOST_WIDTH,
                                     zero=True)
                    for name in ("latent", "rope", "hidden", "vocab", "moe_layers", "experts", "active")}
        checked |= {name: _check.real(name, getattr(self, name), least=least, most=MOST_PARAMS)
                    for name, least in (("params", 1.0), ("expert_params", 0.0))}
        checked["tied"] = _check.flag("tied", self.tied)
        for name in ("name", "source"):
            if not isinstance(getattr(self, name), str) or (name == "name" and not self.name.strip()):
                raise TypeError(f"{name} must be text (a str{', not empty' if name == 'name' else ''}), "
                                f"got {getattr(self, name)!r}")
        for name, value in checked.items():
            object.__setattr__(self, name, value)  # the checked value, not what was given
        if self.rope and not self.latent:
            raise ValueError(f"rope (the decoupled RoPE key's width of multi-head latent attention) needs latent, the "
                             f"compressed cache's width: set latent too, or rope=0; got rope={self.rope!r}, latent=0")
        if self.heads % self.kv_heads:
            raise ValueError(f"heads must be a multiple of kv_heads ({self.kv_heads}), got {self.heads!r}")
        if self.experts or self.moe_layers or self.active or self.expert_params:
            if not (self.experts and self.moe_layers and self.active and self.expert_params):
                raise ValueError("experts, active, moe_layers and expert_params must be all set (a mixture of "
                                 f"experts) or all 0, got {self.experts!r}, {self.active!r}, {self.moe_layers!r}, "
                                 f"{self.expert_params!r}")
            _check.not_larger("active", self.active, "experts", self.experts)
            _check.not_larger("moe_layers", self.moe_layers, "layers", self.layers)
        if self.embedding + self.routed >= self.params:
            raise ValueError(f"params must exceed the embedding table and the routed experts "
                             f"({self.embedding + self.routed:g} weights), got {self.params!r}")

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
    def width(self) -> int:
        """The model's width, one embedding row's weights: `hidden`, or heads x head_dim."""
        return self.hidden or self.heads * self.head_dim

    @property
    def embedding(self) -> float:
        """Weights of the input embedding table, vocab x width (0 when `vocab` is not given)."""
        return float(self.vocab * self.width)

    @property
    def routed(self) -> float:
        """Weights of all routed experts: moe_layers x experts x expert_params (0 for a dense model)."""
        return float(self.moe_layers * self.experts * self.expert_params)

    @property
    def active_params(self) -> float:
        """Weights one token multiplies (2 flops each): all but the input embedding table (a
        lookup, unless tied to the LM head) and the routed experts it is not sent to."""
        untouched = self.moe_layers * (self.experts - self.active) * self.expert_params
        return float(self.params - (0 if self.tied else self.embedding) - untouched)

    @property
    def attention_flops(self) -> float:
        """FLOPs per token of context per sequence in one step: QK and PV, 2 x head_dim each per
        query head per layer (4 h d L); for MLA with the up-projections absorbed, the score
        reads the latent and the RoPE key (2(d_c + d_h^R)) and the output the latent (2 d_c)."""
        per_head = 2 * (2 * self.latent + self.rope) if self.latent else 4 * self.head_dim
        return float(self.layers * self.heads * per_head)


MODELS = {
    "Llama-2-7B": Model("Llama-2-7B", 32, 32, 32, 128, 6.7e9, vocab=32000,
                        source="touvron2023llama2, section 2.2 (Llama 1's architecture and tokenizer, 32k tokens) "
                        "and Table 1 (7B, no GQA); the shape from touvron2023llama, Table 2 (6.7B: 32 layers, "
                        "32 heads, width 4096)"),
    "Llama-2-70B": Model("Llama-2-70B", 80, 64, 8, 128, 68.98e9, vocab=32000,
                         source="touvron2023llama2, Table 1 (70B, grouped-query attention); the shape from "
                         "meta2023llama2_70b_config (80 layers, width 8192, 64 heads, 8 key-value heads, FFN width "
                         "28,672, a vocabulary of 32,000), whose weights add up to 68.98 B"),
    "Llama-3-8B": Model("Llama-3-8B", 32, 32, 8, 128, 8.0e9, vocab=128000,
                        source="dubey2024llama3, Table 3 (8B: 32 layers, width 4096, 32 heads, 8 key-value heads, "
                        "vocabulary 128,000)"),
    "Llama-3-70B": Model("Llama-3-70B", 80, 64, 8, 128, 70.55e9, hidden=8192, vocab=128000,
                         source="dubey2024llama3, Table 3 (70B: 80 layers, width 8192, FFN width 28,672, 64 heads, "
                         "8 key-value heads, vocabulary 128,000), whose weights add up to 70.55 B"),
    "DeepSeek-V2": Model("DeepSeek-V2", 60, 128, 1, 128, 236e9, latent=512, rope=64, hidden=5120, vocab=100000,
                         moe_layers=59, experts=160, active=6, expert_params=3 * 5120 * 1536,
                         source="deepseek2024v2, section 3.1.1 (a vocabulary of 100K) and 3.1.2 (60 layers, width "
                         "5120, 128 heads of 128, d_c = 512, d_h^R = 64; every FFN but the first layer's an MoE "
                         "layer of 2 shared and 160 routed experts of intermediate width 1536, 6 routed per "
                         "token; 236B in all, 21B activated per token)"),
    "DeepSeek-V3": Model("DeepSeek-V3", 61, 128, 1, 128, 671e9, latent=512, rope=64, hidden=7168, vocab=128000,
                         moe_layers=58, experts=256, active=8, expert_params=3 * 7168 * 2048,
                         source="deepseek2024v3, section 4.1 (a vocabulary of 128K) and 4.2 (61 layers, width 7168, "
                         "128 heads of 128, d_c = 512, d_h^R = 64; every FFN but the first three layers' an MoE layer "
                         "of 1 shared and 256 routed experts of intermediate width 2048, 8 routed per token; 671B in "
                         "all, 37B activated per token)"),
}
"""The chapters' models: a dense MHA model, three GQA models (8 key-value heads; Llama-3-70B is
chapter 10's), two MLA models that are mixtures of experts (DeepSeek-V3 is chapter 10's). Their embedding and LM head are separate tables (none is tied)."""

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
    chapter 6's layers x 2 x kv_heads x head_dim x 2. Chapters 6 and 9."""
    m = model(name)
    return float(m.rows * row_bytes(m.row_elements, kv))


def experts_touched(experts, active, batch):
    """The expected number of distinct routed experts a batch of `batch` tokens touches in one
    MoE layer of `experts`, each token routed to `active` of them: E (1 - (1 - k/E)^B), the
    standard result when every token picks its k experts at random and the tokens independently
    (a given expert is missed by one token with probability 1 - k/E, by all B with that to the
    B). Real routers are trained toward this balance; a skewed router touches fewer. Chapter 9."""
    e, k = _check.one("experts", experts, MOST_WIDTH), _check.one("active", active, MOST_WIDTH)
    _check.not_larger("active", k, "experts", e)
    b = _check.size("batch", batch, MOST_BATCH)
    return _check.as_output(e * (1 - (1 - k / e) ** b))


def weights_read(name, batch):
    """Weights one decode step of `batch` sequences reads: every matrix once (the LM head
    included); of the input embedding table only the batch's rows (the whole table once when it
    is tied to the LM head); of a mixture of experts' routed experts only those the batch touches
    (`experts_touched`, in expectation). A dense untied model reads params - vocab x width +
    batch x width. Chapter 9."""
    m = model(name)
    b = _check.size("batch", batch, MOST_BATCH)
    table = 0.0 if m.tied else m.embedding - b * m.width
    untouched = (m.moe_layers * m.expert_params * (m.experts - experts_touched(m.experts, m.active, b))
                 if m.experts else 0.0)
    return _check.as_output(m.params - table - untouched)


INT4_GROUPS = {"gpt-fast": (32, 4), "Marlin": (128, 2)}
"""Two int4 weight formats as (weights sharing a scale, bytes of the scale and zero point):
gpt-fast's, a bf16 scale and zero point a group of 32 (pytorch_gptfast, quantize.py); Marlin's,
an fp16 scale a group of 128 (frantar2024marlin)."""


def weight_bytes(weights, weight: str = "fp16", group: int = 0, scale_bytes: float = 0.0):
    """Bytes of `weights` weights stored as `weight` (WEIGHT_BYTES each) with `scale_bytes` of
    scale (and zero point) for each group of `group` weights that share them (0: no groups, or
    one scale an output channel, a few bytes a row, left out): what a quantised kernel reads.
    In INT4_GROUPS' formats, gpt-fast's int4 is 0.625 B a weight, Marlin's 0.515625 B. Chapter 9."""
    w = _check.amount("weights", weights, MOST_PARAMS)
    per = WEIGHT_BYTES[_check.choice("weight", weight, WEIGHT_BYTES)]
    g = _check.count("group", group, MOST_WIDTH)
    s = _check.amount("scale_bytes", scale_bytes, 64.0)
    if np.any((g == 0) & (s > 0)):
        raise ValueError(f"scale_bytes {scale_bytes} needs a group of weights to share them: give group > 0")
    _check.broadcast(("weights", w), ("group", g), ("scale_bytes", s))
    return _check.as_output(w * (per + np.where(g > 0, s / np.maximum(g, 1), 0.0)))


def step(name, batch, context, weight: str = "fp16", kv: str = "fp16", math: str = "fp16", queries=1,
         group: int = 0, scale_bytes: float = 0.0) -> Workload:
    """One decode step of `batch` sequences, each with `context` cached tokens and `queries` new
    tokens (1; more where a speculative step checks drafted tokens, `speculative_speedup`): the
    weights the step reads (`weights_read` for batch x queries tokens; `weight`, WEIGHT_BYTES
    each, and `scale_bytes` a `group` of them, `weight_bytes`), each sequence's cache read once
    and its new tokens' rows written (`kv`); 2 flops per active weight (`Model.active_params`)
    per token and `Model.attention_flops` per token of context per query, on the `math` units.
    Activations and the softmax's exponentials are left out (a few kilobytes per sequence). HBM
    and L2 carry the same bytes. Chapter 9."""
    m = model(name)
    b, c = _check.size("batch", batch, MOST_BATCH), _check.count("context", context, MOST_CONTEXT)
    q = _check.size("queries", queries, MOST_WIDTH)
    _check.broadcast(("batch", b), ("context", c), ("queries", q))
    per_token = kv_bytes_per_token(m, kv)
    nbytes = weight_bytes(weights_read(m, b * q), weight, group, scale_bytes) + b * (c + q) * per_token
    flops = 2 * m.active_params * b * q + b * q * c * m.attention_flops
    return Workload(f"decode step ({m.name}, {weight} weights, {kv} cache)", flops=flops,
                    bytes={"registers": 0 * flops, "smem": 0 * flops, "l2": nbytes, "hbm": nbytes}, math=math,
                    note="the weights a step reads once per step, each cache once per sequence")


MMA_ROWS = 16
"""Rows of the A operand of the smallest tensor-core MMA for 16-bit inputs, mma.m16n8k16 (PTX ISA,
warp-level matrix multiply-accumulate; references.bib: nvidia_ptx_isa)."""


def mma_fill(name, queries=1):
    """The share of an MMA's MMA_ROWS rows that one sequence's queries fill when a decode kernel
    packs the query heads that share a key-value head (`Model.group`, all heads for MLA's one
    latent) into its rows, each head with `queries` new tokens (1; more in a speculative step):
    group x queries / MMA_ROWS, at most 1 (a larger group fills several MMAs). Chapter 9."""
    m = model(name)
    q = _check.size("queries", queries, MOST_WIDTH)
    return _check.as_output(np.minimum(1.0, m.group * np.asarray(q, float) / MMA_ROWS))


LOGIT_BYTES = 4
"""Bytes of a logit as a sampler reads it: FP32, the LM head's output as the softmax takes it."""


def lm_head(name, batch, weight: str = "fp16") -> dict:
    """The bytes of a decode step of `batch` sequences that end in the vocabulary: `"weights"`,
    the LM head's vocab x width weights (`weight`, WEIGHT_BYTES each; in `step`'s weights, as
    every matrix is), and `"logits"`, the batch's batch x vocab logits written once by the head and
    read once by the sampler (LOGIT_BYTES each: the least a sampler moves; `step` leaves them out
    with the other activations). Chapter 9."""
    m = model(name)
    b = _check.size("batch", batch, MOST_BATCH)
    if not m.vocab:
        raise ValueError(f"name must be a model whose vocabulary is known, got {m.name!r}")
    head = m.vocab * m.width * WEIGHT_BYTES[_check.choice("weight", weight, WEIGHT_BYTES)]
    return {"weights": float(head), "logits": _check.as_output(2 * LOGIT_BYTES * m.vocab * np.asarray(b, float))}


def chunked_step(name, batch, context, chunk, prefix=0, weight: str = "fp16", kv: str = "fp16",
                 math: str = "fp16") -> Workload:
    """A step of continuous batching with a chunked prefill (agrawal2024sarathi): `batch` sequences
    decoding, `context` cached tokens each, and `chunk` tokens of one prompt whose first `prefix`
    tokens are cached already. The weights are read once for all batch + chunk tokens
    (`weights_read`); each decoding cache is read and its new row written, and the prompt's
    cached prefix is read and its chunk's rows written (attention within the chunk stays on chip,
    as FlashAttention keeps it); 2 flops per active weight per token, and per token the attention
    over what it sees: a decoding token its context, a chunk's token the prefix and the chunk's
    tokens up to it (causal, (chunk + 1) / 2 on average). `chunk` 0 is `step`. Chapter 10."""
    m = model(name)
    b, c = _check.count("batch", batch, MOST_BATCH), _check.count("context", context, MOST_CONTEXT)
    n, p = _check.count("chunk", chunk, MOST_CONTEXT), _check.count("prefix", prefix, MOST_CONTEXT)
    _check.broadcast(("batch", b), ("context", c), ("chunk", n), ("prefix", p))
    if np.any(np.asarray(b) + np.asarray(n) == 0):
        raise ValueError("batch and chunk must not both be 0: a step has at least one token")
    per_token = kv_bytes_per_token(m, kv)
    nbytes = weight_bytes(weights_read(m, b + n), weight) + (b * (c + 1) + p + n) * per_token
    flops = 2 * m.active_params * (b + n) + (b * c + n * (p + (n + 1) / 2)) * m.attention_flops
    return Workload(f"decode step with a prefill chunk ({m.name})", flops=flops,
                    bytes={"registers": 0 * flops, "smem": 0 * flops, "l2": nbytes, "hbm": nbytes}, math=math,
                    note="the weights once, each decoding cache and the prompt's cached prefix once")


def served_chunk(batch, prompt, output) -> int:
    """Prompt tokens a decode step prefills on average (rounded down) while `batch` requests are
    served continuously, each with a prompt of `prompt` tokens that generates `output` tokens and
    is replaced as it ends: while one request emits `output` tokens, each of the other batch - 1
    is replaced once, so (batch - 1) x prompt / output prompt tokens join each of its steps.
    Chapter 10."""
    b = _check.one("batch", batch, MOST_BATCH)
    p, o = _check.one("prompt", prompt, MOST_CONTEXT), _check.one("output", output, MOST_CONTEXT)
    return (b - 1) * p // o


def free_chunk(name, gpu, batch, context, weight: str = "fp16", kv: str = "fp16", math: str = "fp16") -> int:
    """The most prompt tokens (a chunk with no cached prefix) that a decode step of `batch`
    sequences at `context` takes along on `gpu` while HBM still binds it (0 where the decode
    step alone is not HBM's): Sarathi-Serve's token budget where the chunk costs the step only
    its bytes. Chapter 10."""
    b, c = _check.integer("batch", batch, 1, MOST_BATCH), _check.integer("context", context, 0, MOST_CONTEXT)

    def hbm_bound(n: int) -> bool:
        return predict(chunked_step(name, b, c, n, 0, weight, kv, math), gpu).bound == "hbm"

    if not hbm_bound(0):
        return 0
    low, high = 0, 1
    while high <= MOST_CONTEXT and hbm_bound(high):
        low, high = high, 2 * high
    while high - low > 1:  # hbm_bound(low) holds, hbm_bound(high) does not
        middle = (low + high) // 2
        low, high = (middle, high) if hbm_bound(middle) else (low, middle)
    return low


def expected_tokens(drafted, acceptance):
    """Tokens a speculative step yields per sequence, in expectation, when `drafted` tokens are
    drafted and each is accepted with probability `acceptance` (independently, given the ones
    before it were): (1 - a^(k + 1)) / (1 - a), k + 1 where a = 1 (leviathan2023speculative,
    section 3.3, equation 1). Chapter 10."""
    k = _check.count("drafted", drafted, MOST_WIDTH)
    a = _check.amount("acceptance (a probability, 0 to 1)", acceptance, 1.0)
    _check.broadcast(("drafted", k), ("acceptance", a))
    with np.errstate(divide="ignore", invalid="ignore"):
        return _check.as_output(np.where(a < 1, (1 - a ** (k + 1)) / np.where(a < 1, 1 - a, 1), k + 1.0))


def speculative_speedup(name, gpu, batch, context, drafted, acceptance, weight: str = "fp16", kv: str = "fp16",
                        math: str = "fp16"):
    """How many times more tokens per second a speculative step gives than a plain one: the
    target model checks `drafted` tokens and the next in one step of drafted + 1 queries per
    sequence (`step`), yielding `expected_tokens` of them. The draft's own cost is left out (a
    multi-token-prediction module is one layer; a separate draft model adds its steps), so this
    is at most what a run gains. Chapter 10."""
    plain = predict(step(name, batch, context, weight, kv, math), gpu).time
    k = _check.count("drafted", drafted, MOST_WIDTH)
    checked = predict(step(name, batch, context, weight, kv, math, queries=k + 1), gpu).time
    return _check.as_output(expected_tokens(k, acceptance) * np.asarray(plain) / np.asarray(checked))


def quantised_step(name, gpu, batch, context, weight: str, group: int, scale_bytes: float, kv: str = "fp16") -> dict:
    """Seconds of one decode step on `gpu` whose weights are stored as `weight` with
    `scale_bytes` a `group` (`weight_bytes`): "packed", the bound on the packed weights alone
    (as `step` counts a format with no groups); "scaled", the bound with the scales read too;
    "dequantise", the lanes issuing the instructions that unpack every weight read
    (`expected.dequantise_time`, an estimate per weight); "overlapped", the longer of the scaled
    read and the unpacking (a kernel that unpacks one tile while the next loads); "in_turn",
    their sum (a kernel that waits for its loads, then unpacks). Chapter 9."""
    packed = float(step_time(name, gpu, batch, context, weight, kv))
    scaled = float(predict(step(name, batch, context, weight, kv, group=group, scale_bytes=scale_bytes), gpu).time)
    unpack = dequantise_time(float(weights_read(name, batch)), weight, gpu)
    return {"packed": packed, "scaled": scaled, "dequantise": unpack, "overlapped": max(scaled, unpack),
            "in_turn": scaled + unpack}


def step_time(name, gpu, batch, context, weight: str = "fp16", kv: str = "fp16", math: str = "fp16"):
    """The model's bound on one step (`step`) on `gpu`, in seconds. Chapter 9."""
    return predict(step(name, batch, context, weight, kv, math), gpu).time


def tokens_per_second(name, gpu, batch, context, weight: str = "fp16", kv: str = "fp16", math: str = "fp16"):
    """Tokens the batch generates per second on `gpu`, at most: batch / `step_time`. It does not
    ask whether the weights and caches fit (`max_batch`). Chapter 9."""
    b = _check.size("batch", batch, MOST_BATCH)
    return _check.as_output(b / np.asarray(step_time(name, gpu, batch, context, weight, kv, math)))


def _weight_bytes(weight: str) -> float:
    return WEIGHT_BYTES[_check.choice("weight", weight, WEIGHT_BYTES)]


def gemm_intensity(batch, width, weight: str = "fp16", act_bytes: float = 2):
    """HBM intensity (FLOP/B) of one weight GEMM of a decode step: `batch` rows of activations
    (`act_bytes` each) times a `width` x `width` weight matrix stored as `weight`:
    2Bw^2 / (b_w w^2 + 2 s_a B w), weights read once, activations in and out. Chapter 6."""
    b, w = _check.size("batch", batch), _check.size("width", width)
    _check.broadcast(("batch", b), ("width", w))
    b_w = _weight_bytes(weight)
    if _check.real("act_bytes", act_bytes) <= 0:
        raise ValueError(f"act_bytes must be a positive number, got {act_bytes!r}")
    return _check.as_output(2 * b * w * w / (b_w * w * w + 2 * act_bytes * b * w))


def gemm_critical_batch(gpu, width, weight: str = "fp16", math: str = "fp16", act_bytes: float = 2,
                        largest: int = 1 << 16) -> int:
    """The smallest batch at which one weight GEMM of a decode step (`gemm_intensity`,
    activations of `act_bytes`) reaches the HBM ridge of `gpu` for `math`: the fp16 peak where
    narrow weights are widened to fp16 in registers before the MMA, the fp8 peak where weights
    and activations are both fp8. The whole step's, cache and all, is `critical_batch`.
    Chapter 6."""
    g = presets.gpu(gpu)
    ridge = g.ridge("hbm", math)
    w, largest = _check.one("width", width), _check.one("largest", largest)
    gemm_intensity(1, w, weight, act_bytes)  # refuses a bad weight or act_bytes, naming it
    # The intensity 2Bw / (b_w w + 2 s_a B) grows with B towards w / s_a: solve for B, then step to
    # the first whole batch that reaches the ridge as gemm_intensity computes it.
    room = 2 * (w - act_bytes * ridge)
    solved = np.ceil(ridge * _weight_bytes(weight) * w / room) if room > 0 else largest + 1
    batch = int(min(max(solved, 1), largest + 1))
    while batch > 1 and gemm_intensity(batch - 1, w, weight, act_bytes) >= ridge:
        batch -= 1
    while batch <= largest and gemm_intensity(batch, w, weight, act_bytes) < ridge:
        batch += 1
    if batch > largest:
        raise ValueError(f"width must be large enough for a batch of at most {largest} to reach the ridge, got {width!r}")
    return batch


def critical_batch(name, gpu, context, weight: str = "fp16", kv: str = "fp16", math: str = "fp16",
                   largest: int = 1 << 20):
    """The smallest batch at which the step (`step`) on `gpu` is no longer HBM-bound, or None
    when none up to `largest` is. For a dense model (P weights read, of s_w bytes; a attention
    flops, k cache bytes per token of context; e = width x s_w bytes of embedding row per
    sequence) F/B = 2B(P + c a / 2) / (P s_w + B(e + (c + 1) k)) rises with B toward
    (2P + c a) / (e + (c + 1) k), and a context long enough keeps that below the ridge R; else
    B* = ceil(R P s_w / (2P + c a - R (e + (c + 1) k))): chapter 6's ceil(R s_w / 2) when the
    cache and the row are nothing. A mixture of experts reads more experts as B grows, so its
    B* comes from the model alone: F/B never falls as B grows (the bytes grow no faster than
    linearly), and the batch is found by bisection on predict's bound. It does not ask whether
    the batch fits (`max_batch`). Chapter 9."""
    m, g = model(name), presets.gpu(gpu)
    c, largest = _check.one("context", context, MOST_CONTEXT, zero=True), _check.one("largest", largest, MOST_BATCH)
    step(m, 1, c, weight, kv, math)  # refuses a bad weight, kv or math, naming it
    ridge = g.running(math).ridge("hbm", math)
    b_w = WEIGHT_BYTES[weight]
    per_batch_flops = 2 * m.active_params + c * m.attention_flops
    per_batch_bytes = (c + 1) * kv_bytes_per_token(m, kv) + (0 if m.tied else m.width * b_w)
    if per_batch_flops <= ridge * per_batch_bytes * (1 - TIE_RTOL):  # below the ridge for every batch, ties as predict's
        return None

    def on_hbm(batch: int) -> bool:
        return bool(predict(step(m, batch, c, weight, kv, math), g).bound == "hbm")

    if not on_hbm(1):
        return 1
    low, high = 1, 2  # on_hbm(low) holds; find a high where it does not
    while high < largest and on_hbm(high):
        low, high = high, min(2 * high, largest)
    if on_hbm(high):
        return None
    while high - low > 1:
        mid = (low + high) // 2
        low, high = (mid, high) if on_hbm(mid) else (low, mid)
    return high


def max_batch(name, gpu, context, weight: str = "fp16", kv: str = "fp16") -> int:
    """The most sequences of `context` tokens whose caches fit in `gpu`'s HBM beside the
    weights (0 when the weights alone do not fit). Chapter 9."""
    m, g = model(name), presets.gpu(gpu)
    c = _check.one("context", context, MOST_CONTEXT, zero=True)
    b_w = WEIGHT_BYTES[_check.choice("weight", weight, WEIGHT_BYTES)]
    room = g.capacity("hbm") - m.params * b_w
    return max(0, int(room // ((c + 1) * kv_bytes_per_token(m, kv))))


def prefix_cache_bytes(name, batch, context, prefix, kv: str = "fp16", shared: bool = True):
    """Cache bytes one step of `batch` sequences of `context` tokens reads (and writes: each new
    token's row) when their first `prefix` tokens are one cache, as a system prompt, beam search
    or parallel sampling share it: with `shared`, a kernel that reads the shared pages once for
    the whole batch (FlashInfer's cascade attention) reads (P + B (c - P + 1)) k bytes; without,
    each sequence reads them again: B (c + 1) k, as with no sharing. Chapter 9."""
    m = model(name)
    b, c = _check.size("batch", batch, MOST_BATCH), _check.count("context", context, MOST_CONTEXT)
    p = _check.count("prefix", prefix, MOST_CONTEXT)
    _check.broadcast(("batch", b), ("context", c), ("prefix", p))
    _check.not_larger("prefix", p, "context", c)
    k = kv_bytes_per_token(m, kv)
    once = p if _check.flag("shared", shared) else b * p
    return _check.as_output((once + b * (c - p + 1)) * k)


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
    c, p = _check.one("context", context, MOST_CONTEXT), _check.one("page_tokens", page_tokens, MOST_CONTEXT)
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
    b, h = _check.one("batch", batch, MOST_BATCH), _check.one("heads", heads, MOST_WIDTH)
    h_kv, d = _check.one("kv_heads", kv_heads, MOST_WIDTH), _check.one("head_dim", head_dim, MOST_WIDTH)
    s = _check.one("splits", splits)
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


SPLIT_RULE = {"alone": 0.8, "within": 0.85, "most": 128}
"""FlashAttention 2's split heuristic (`num_splits_heuristic`, csrc/flash_attn/flash_api.cpp,
dao2023flashattention2): no split when the unsplit blocks already fill `alone` of the SMs;
else the fewest splits whose waves are `within` of the fullest, of at most `most` splits."""


def wave_splits(gpu, batch, kv_heads, chunks: int = 128, slots_per_sm: int = 1) -> int:
    """The split count FlashAttention 2's heuristic chooses (SPLIT_RULE) for batch x kv_heads
    blocks on `gpu`: with n = batch x kv_heads blocks per split and W = SMs x `slots_per_sm`
    block slots, a split count S fills its waves to e(S) = (nS / W) / ceil(nS / W); the rule
    takes the fewest S whose e(S) is at least 0.85 of the best e over S <= min(128, W, chunks),
    skipping an S that cuts the `chunks` (blocks of keys along the context) no finer than S - 1;
    and 1 when n is already 0.8 W. (FlashAttention 2 passes twice the SMs: two blocks of 128
    threads fit on an SM.) Chapter 9."""
    g = presets.gpu(gpu)
    n = _check.one("batch", batch, MOST_BATCH) * _check.one("kv_heads", kv_heads, MOST_WIDTH)
    chunks, slots = _check.one("chunks", chunks), _check.one("slots_per_sm", slots_per_sm)
    width = int(g.sms.value) * slots
    if n >= SPLIT_RULE["alone"] * width:
        return 1
    eligible = [s for s in range(1, min(SPLIT_RULE["most"], width, chunks) + 1)
                if s == 1 or -(-chunks // s) != -(-chunks // (s - 1))]
    full = {s: n * s / width / math.ceil(n * s / width) for s in eligible}
    best = max(full.values())
    return next(s for s in eligible if full[s] >= SPLIT_RULE["within"] * best)
