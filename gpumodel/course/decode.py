"""Chapter `09_decode` (Decode: the KV cache against HBM): its checkpoints, exercises, widget
exercise and kernel-lab exercise.

A checker takes the learner's answer and returns `Feedback`; a widget exercise (`WIDGET_EXERCISES`)
is an explorer of the model with an answer box; the lab exercise (`check_split_kernel`) traces a
learner's split-KV kernel and holds it to a byte budget from `gpumodel.decode`."""

from __future__ import annotations

import numpy as np

from .. import _check, presets
from .. import decode as dc
from ..hardware import SECTOR_BYTES
from ..model import predict
from ..units import fmt_bandwidth, fmt_bound, fmt_bytes, fmt_capacity, fmt_flops, fmt_time
from .checks import Feedback, check_number, lab_run, number_rules
from .widgets import Checkpoint, WidgetExercise, bars

SPLIT_WITHIN = dc.SPLIT_RULE["within"]

# --- checkpoints, one per section ---------------------------------------------------------


def cp_bytes(name: str = "Llama-3-8B", context: int = 4096) -> Checkpoint:
    """Section "A token's bytes": the smallest batch of sequences of `context` tokens whose caches
    outweigh the weights a step reads (the section's rule of thumb, worked there for Llama-2-7B,
    applied to another LLM: the learner finds its crossover from its weights and bytes a token)."""
    m, context = dc.model(name), _check.one("context", context, dc.MOST_CONTEXT)
    per_token, weights = dc.kv_bytes_per_token(m), 2 * float(dc.weights_read(m, 1))
    crossover = weights / per_token
    batch = int(np.floor(crossover / context)) + 1
    wrong = [(float(batch - 1), "At that batch the weights still outweigh the caches: round up.")]
    page = dc.model("Llama-2-7B")
    page_batch = int(np.floor(2 * float(dc.weights_read(page, 1)) / dc.kv_bytes_per_token(page) / context)) + 1
    if m.name != page.name and page_batch != batch:
        wrong.append((float(page_batch), "That is Llama-2-7B's batch, from the page's crossover; this LLM's weights "
                      "and bytes a token give another."))
    return Checkpoint(
        "cp-decode-bytes",
        f"{name} reads {fmt_bytes(weights)} of weights a step and caches {fmt_bytes(per_token)} per token of "
        f"context. Its sequences hold {context:,} tokens each. From what batch do the caches' bytes pass the "
        "weights'?",
        number_rules(float(batch), "sequences", 0, whole=True,
                     mistakes=wrong,
                     explain=f"The caches pass the weights once the batch holds more than {crossover:,.0f} cached "
                     f"tokens (the weights' bytes over a token's), and {batch} sequences of {context:,} hold "
                     f"{batch * context:,}. Past that batch, more sequences add cache bytes as fast as tokens.",
                     hint="First find how many cached tokens weigh as much as the weights, then how many sequences "
                     "of this context hold more than that."),
        "batch")


def cp_gqa(heads: int = 40, kv_heads: int = 8) -> Checkpoint:
    """Section "Fewer key-value heads: GQA and MLA": a GQA model's attention intensity, 2g/s
    flops per cached byte for a group of g in an fp16 cache."""
    heads, kv_heads = _check.one("heads", heads), _check.one("kv_heads", kv_heads)
    _check.divides("kv_heads", kv_heads, "heads", heads)
    m = dc.Model("checkpoint", 1, heads, kv_heads, 128, 1.0)
    intensity = m.attention_flops / dc.kv_bytes_per_token(m)
    group = heads // kv_heads
    wrong = [(2.0 * group, "That counts one byte a cached value; fp16 is two.")]
    if group != 4:
        wrong.append((4.0, "That is Llama-3-8B's figure, for its group of four; count this model's group."))
    if group != 8:
        wrong.append((8.0, "That is the printout's figure for a group of eight; count this model's group."))
    return Checkpoint(
        "cp-decode-gqa",
        f"An LLM has {heads} query heads sharing {kv_heads} key-value heads, its cache in fp16. How many "
        "flops does its attention do per cached byte?",
        number_rules(intensity, "FLOP/B", 0.01, mistakes=wrong,
                     explain=f"A group of {group} query heads scores each cached key and value: 2g/s = "
                     f"2 x {group} / 2. The cache shrank by the group, the flops did not, so the intensity grew by it.",
                     hint="Find the group (query heads per key-value head), then use the section's flops per "
                     "byte for a group of g at s bytes a value."),
        "FLOP/B")


def cp_critical(name: str = "Llama-3-8B", gpu: str = "H200") -> Checkpoint:
    """Section "The critical batch, with the cache": the critical batch with no context on
    another GPU than the section's, from that GPU's fp16 peak and HBM bandwidth (its ridge is
    the learner's step: the page prints only the H100's)."""
    g = presets.gpu(gpu).running("fp16")
    peak, bandwidth = g.peak("fp16"), g.bandwidth("hbm")
    ridge = peak / bandwidth
    batch = dc.critical_batch(name, gpu, 0)
    section = dc.critical_batch(name, "H100-SXM", 0)
    wrong = [(float(np.floor(ridge)), "That is the ridge itself: the batch must pass it, and the embedding row and "
              "cache row each sequence adds push it a little higher.")]
    if gpu != "H100-SXM":
        wrong.append((float(section), "That is the H100's batch, printed above; this GPU's ridge is another."))
    return Checkpoint(
        "cp-decode-critical",
        f"The {gpu} does {fmt_flops(peak)} of fp16 math and reads HBM at {fmt_bandwidth(bandwidth)}. With (almost) "
        f"no context, from what batch is a {name} decode step with fp16 weights no longer HBM-bound on it?",
        number_rules(float(batch), "sequences", 0, whole=True, mistakes=wrong,
                     explain=f"Its ridge is {fmt_flops(peak)} over {fmt_bandwidth(bandwidth)}, {ridge:.1f} FLOP/B. "
                     "With no cache the weights are the bytes: 2 bytes of fp16 weight buy 2 flops per sequence, so "
                     "the batch must pass the ridge's value. The embedding row and the cache row each sequence adds "
                     "push it a little higher. More bandwidth for the same flops lowers the ridge, and the batch "
                     "with it.",
                     hint="First find this GPU's ridge from its peak and its bandwidth. Then, with no cache, the "
                     "step reads the weights once for the whole batch: how many sequences must share each weight "
                     "byte before the flops per byte pass the ridge?"),
        "batch")


EXPERTS = (8, 2, 4)
"""cp-decode-experts' layer: 8 experts, 2 active per token (Mixtral's shape), a step of 4 tokens."""


def cp_experts() -> Checkpoint:
    """Section "A mixture of experts": the experts a small batch touches in expectation,
    E (1 - (1 - k_a/E)^B), for a layer of another shape than DeepSeek-V2's."""
    experts, active, batch = EXPERTS
    touched = float(dc.experts_touched(experts, active, batch))
    missed = (1 - active / experts) ** batch
    return Checkpoint(
        "cp-decode-experts",
        f"A mixture-of-experts layer has {experts} experts, and its router sends each token to {active} of them. "
        f"A step of {batch} tokens spreads them evenly at random. How many experts does the layer read, in "
        "expectation?",
        number_rules(touched, "experts", 0.02,
                     mistakes=[(float(min(experts, active * batch)), "That counts every token's experts as "
                                "different ones; tokens often pick the same expert."),
                               (float(active), "That is one token's experts; each token of the batch picks its own."),
                               (experts * missed, "That counts the experts every token missed, not those read.")],
                     explain=f"An expert is missed by all {batch} tokens with probability (1 - {active}/{experts})^"
                     f"{batch} = {missed:.3f}, so {1 - missed:.0%} of the {experts} experts are read. Even a small "
                     "batch reads most of a layer's weights.",
                     hint="Find the chance that one expert is missed by every token, then count the experts that "
                     "are not."),
        "experts")


PREFIX = (16, 2048, 1024)
"""cp-decode-prefix's batch: 16 sequences of 2,048 tokens sharing their first 1,024, in
Llama-3-8B's fp16 cache."""


def cp_prefix() -> Checkpoint:
    """Section "A shared prefix": the cache bytes a step saves when a kernel reads the shared
    prefix once for the batch, (B - 1) c_s k."""
    batch, context, prefix = PREFIX
    per_token = dc.kv_bytes_per_token("Llama-3-8B")
    apart = float(dc.prefix_cache_bytes("Llama-3-8B", batch, context, prefix, shared=False))
    once = float(dc.prefix_cache_bytes("Llama-3-8B", batch, context, prefix))
    saved = apart - once
    return Checkpoint(
        "cp-decode-prefix",
        f"A batch of {batch} sequences of {context:,} tokens shares its first {prefix:,} tokens. The LLM caches "
        f"{per_token:,.0f} B per token of context. A kernel reads the shared part once for the batch. How many "
        "bytes of cache a step does it save, against a kernel that reads each sequence's cache on its own?",
        number_rules(saved, "bytes", 0.01,
                     mistakes=[(batch * prefix * per_token, "That saves the prefix for every sequence; the kernel "
                                "still reads one copy."),
                               (once, "That is what the kernel reads, not what it saves.")],
                     explain=f"Read once, the prefix costs one copy instead of {batch}: {batch - 1} copies of "
                     f"{prefix:,} tokens are saved, {saved / apart:.0%} of the step's cache bytes.",
                     hint="How many copies of the shared tokens does each kernel read?"),
        "bytes")


def cp_paged(context: int = 1000, page_tokens: int = 2, row: int = 72) -> Checkpoint:
    """Section "Paged KV": the sectors a step reads for one key-value head's stream in pages
    that start on a sector (`dc.paged_kv`)."""
    pages = dc.paged_kv(context, page_tokens, _check.one("row", row))
    per_page = -(-page_tokens * row // SECTOR_BYTES)
    wrong = [(float(pages.contiguous), "That is the rows stored end to end; each page starts on a sector of its own.")]
    if page_tokens > 1:
        wrong.append((float(context * -(-row // SECTOR_BYTES)), "That rounds each row up to sectors; the rows of "
                      "a page lie end to end."))
    return Checkpoint(
        "cp-decode-paged",
        f"A key-value head's stream of {context:,} rows of {row} B is cached in pages of {page_tokens} rows. "
        f"Each page starts on a {SECTOR_BYTES}-byte sector. How many sectors does a step read for the stream?",
        number_rules(float(pages.sectors), "sectors", 0, whole=True, mistakes=wrong,
                     explain=f"{pages.pages:,} pages of {page_tokens * row} B fill {per_page} sectors each "
                     f"(the last page {-(-(context - (pages.pages - 1) * page_tokens) * row // SECTOR_BYTES)}), "
                     f"against {pages.contiguous:,} for the rows end to end: each page pays its partial sector.",
                     hint="Count the pages, then the sectors one page's bytes fill, rounded up."),
        "sectors")


def cp_split(gpu: str = "H100-SXM", batch: int = 4, kv_heads: int = 8) -> Checkpoint:
    """Section "Split-KV": the split count FlashAttention 2's heuristic chooses (`dc.wave_splits`)."""
    sms = int(presets.gpu(gpu).sms.value)
    blocks = _check.one("batch", batch) * _check.one("kv_heads", kv_heads)
    chosen = dc.wave_splits(gpu, batch, kv_heads)
    every_sm = -(-sms // blocks)
    wrong = [(float(every_sm), f"That gives every SM a block, but {every_sm * blocks} blocks run in "
              f"{-(-every_sm * blocks // sms)} waves, the last nearly empty.")] if every_sm != chosen else []
    section = dc.wave_splits(gpu, 1, kv_heads)
    if batch != 1 and section != chosen:
        wrong.append((float(section), "That is the section's count for one sequence; here each split has more "
                      "blocks."))
    return Checkpoint(
        "cp-decode-split",
        f"Batch {batch}, {kv_heads} key-value heads, one block per key-value head per sequence per split, one block "
        f"at a time per SM on the {gpu}'s {sms} SMs. FlashAttention's rule takes the fewest splits whose waves are "
        f"at least {SPLIT_WITHIN:.0%} as full as the fullest split count's. How many splits does it take?",
        number_rules(float(chosen), "splits", 0, whole=True, mistakes=wrong,
                     explain="A wave is as full as the blocks it runs over the SMs; past that count more splits "
                     "add partial results to merge and buy little.",
                     hint="For each split count S, blocks = S x the blocks of one split; the waves' fullness is "
                     "blocks / (SMs x waves). Find the best, then the fewest S within the rule's share of it."),
        "splits")


def cp_quant(elements: int = 64) -> Checkpoint:
    """Section "A quantised cache": an int4 row's bytes with its scales, for a row of another
    length than the section's."""
    row = float(dc.row_bytes(_check.one("elements", elements), "int4"))
    _, group, scale = dc.KV_INT4
    wrong = [(elements / 2, "That leaves out the scales and zero points.")]
    if elements != 128:
        wrong.append((float(dc.row_bytes(128, "int4")), "That is the section's row of 128 values."))
    return Checkpoint(
        "cp-decode-quant",
        f"An LLM's head dimension is {elements}. Its int4 cache stores each row of {elements} values with an "
        f"fp16 scale and an fp16 zero point per group of {group}. How many bytes is the row?",
        number_rules(row, "bytes", 0, mistakes=wrong,
                     explain=f"The scales and zero points are {(row - elements / 2) / row:.0%} of the row here: "
                     f"int4's row is {row / float(dc.row_bytes(elements, 'fp16')):.0%} of fp16's, not a quarter.",
                     hint=f"Half a byte per value, plus {scale:g} bytes per started group."),
        "bytes")


def cp_weights(group: int = 64, scale_bytes: int = 2) -> Checkpoint:
    """Section "Quantised weights": the most an int4 model with scales can gain at batch 1."""
    g, sb = _check.one("group", group, dc.MOST_WIDTH), _check.one("scale_bytes", scale_bytes, 64)
    gain = float(dc.weight_bytes(1, "fp16") / dc.weight_bytes(1, "int4", g, sb))
    return Checkpoint(
        "cp-decode-weights",
        f"An LLM with int4 weights keeps a {sb}-byte scale for each group of {g} weights. At batch 1, where reading the "
        "weights is the step, at most how many times faster is its step than with fp16 weights?",
        number_rules(gain, "times", 0.01,
                     mistakes=[(4.0, "That leaves out the scales: they are read with the weights.")],
                     explain=f"fp16 is 2 bytes a weight; int4 is half a byte and {sb}/{g} of a byte of scale, so "
                     f"{gain:.4g} times at most, and only when unpacking hides under the read.",
                     hint="Bytes per weight: half a byte, plus the scale shared by the group.",
                     units={"x": 1.0}),
        "times")


CHECKPOINTS = {"cp-decode-bytes": cp_bytes, "cp-decode-gqa": cp_gqa, "cp-decode-critical": cp_critical,
               "cp-decode-weights": cp_weights, "cp-decode-experts": cp_experts, "cp-decode-prefix": cp_prefix,
               "cp-decode-paged": cp_paged, "cp-decode-split": cp_split, "cp-decode-quant": cp_quant}
"""This chapter's checkpoints, in the order it shows them."""

RELIES_ON = {
    "cp-decode-bytes": ("l2_crossover",),                    # the rule of thumb: caches pass the weights past W/k tokens
    "cp-decode-gqa": ("term:GQA",),                          # 2g/s flops per byte, in the section's text
    "cp-decode-critical": ("crit_l3_0", "h100_ridge", "term:ridge"),  # the H100's batch beside its ridge: B* just above R
    "cp-decode-weights": ("qw_mg_bytes", "term:weight-only quantisation"),  # bytes a weight with its scales
    "cp-decode-experts": ("term:mixture of experts",),      # E(1 - (1 - k_a/E)^B), in the section's text
    "cp-decode-prefix": ("px_once", "px_apart"),            # (c_s + B(c - c_s + 1))k against B(c + 1)k, worked above
    "cp-decode-paged": ("term:paged KV cache", "term:sector"),  # ceil(p r / 32) sectors a page
    "cp-decode-split": ("split_chosen", "term:split-KV"),    # the rule worked at batch 1
    "cp-decode-quant": ("int4_row", "kv_group"),             # the section's row of 128 with its scales
    "ex-decode-lab-split": ("lab_hbm", "lab_l1"),            # the budget
    "ex-decode-kv-bytes": (),                                # the question gives every figure
    "ex-decode-long-context": ("formulas:Decode", "l2_kv", "h100_ridge"),  # B*'s denominator; P_0, a, e in the question
    "ex-decode-explore-throughput": (),                      # read from the explorer
}
"""What each checkpoint and exercise needs from the page above it (tests/test_checkpoints.py)."""

# --- end-of-chapter exercises -------------------------------------------------------------


def check_kv_bytes(layers, kv_heads, head_dim, kv: str, answer) -> Feedback:
    """Chapter 9: the cache bytes per token of a model with `layers`, `kv_heads` of `head_dim`,
    in the cache format `kv` (scales included), judged exactly (a whole count of bytes)."""
    m = dc.Model("exercise", layers, kv_heads, kv_heads, head_dim, 1.0)
    right = dc.kv_bytes_per_token(m, kv)
    rows = layers * 2 * kv_heads
    values = rows * head_dim * dc.KV_FORMATS[kv][0]
    wrong = [(right / 2, "That counts keys or values, not both.")]
    _, group, scale = dc.KV_FORMATS[kv]
    if group:
        scales = right - values
        twice = ("That counts 8 bytes of scale a group: the scale and the zero point are 2 bytes each, 4 bytes "
                 "together." if kv == "int4" else "That counts each group's scale twice.")
        wrong += [(values, "That leaves out the scales."), (right + scales, twice)]
        if head_dim % group:
            wrong.append((values + rows * (head_dim // group) * scale, "That leaves out the short last group's "
                          "scale: a group that is not full stores one too."))
        if head_dim != 128:
            wrong.append((rows * float(dc.row_bytes(128, kv)), "That is the section's row of 128 values; this "
                          f"head has {head_dim}."))
    return check_number(answer, right, "bytes", rtol=0, key=f"check_kv_bytes({layers}, {kv_heads}, {head_dim}, {kv})",
                        whole=True, doubled="a token caches a key and a value: count both, once each.",
                        mistakes=wrong,
                        explain=f"{layers} layers x 2 x {kv_heads} heads x one row of {head_dim} values, "
                        f"{fmt_bytes(float(dc.row_bytes(head_dim, kv)))} a row in {kv}.",
                        hint="Rows per token (a key and a value per key-value head per layer) times one row's bytes.")


_LONGEST: dict = {}


def _longest_context(name, gpu) -> int | None:
    """The longest context (tokens) at which some batch still takes the step of `name` on `gpu`
    out of HBM's bound (`critical_batch` is not None), or None when no batch does even with no
    context. The critical batch's denominator falls as the context grows, so bisection finds it.
    Chapter 9's exercise."""
    key = (name, gpu) if isinstance(name, str) and isinstance(gpu, str) else None
    if key in _LONGEST:
        return _LONGEST[key]
    if dc.critical_batch(name, gpu, 0) is None:
        found = None
    elif dc.critical_batch(name, gpu, dc.MOST_CONTEXT) is not None:
        found = dc.MOST_CONTEXT
    else:
        low, high = 0, dc.MOST_CONTEXT  # a critical batch at low, none at high
        while high - low > 1:
            mid = (low + high) // 2
            low, high = (mid, high) if dc.critical_batch(name, gpu, mid) is not None else (low, mid)
        found = low
    if key:
        _LONGEST[key] = found
    return found


def check_long_context(name: str, gpu: str, answer) -> Feedback:
    """Chapter 9: the longest context at which some batch still takes the step of `name` on
    `gpu` out of HBM's bound (`_longest_context`)."""
    longest = _longest_context(name, gpu)
    if longest is None:
        raise ValueError(f"name must be an LLM that some batch takes out of HBM's bound on {gpu} with no context, "
                         f"got {name!r}")
    m = dc.model(name)
    wrong = []
    if not m.experts:  # the one-flop slip: P_0 flops a sequence where a multiply and an add are 2 P_0
        ridge = presets.gpu(gpu).running("fp16").ridge("hbm", "fp16")
        p0, k, e = float(dc.weights_read(m, 1)) - m.width, dc.kv_bytes_per_token(m), 2 * m.width
        one_flop = (p0 - ridge * (e + k)) / (ridge * k - m.attention_flops)
        if one_flop > 1:
            wrong.append((float(np.ceil(one_flop) - 1), "That gives each weight one flop per sequence; a multiply "
                          "and an add are two."))
    for c in CONTEXTS:
        if c > longest:
            wrong.append((float(c), "At that context no batch leaves HBM's bound any more: look shorter."))
    return check_number(answer, float(longest), "tokens", rtol=0.02, whole=True, key=f"check_long_context({name}, {gpu})",
                        mistakes=wrong,
                        explain="Up to it the denominator 2P_0 + c a - R(e + (c + 1)k) stays positive: a batch "
                        "large enough takes the step to the math. One token more and no batch does. Past it a "
                        "sequence's cache bytes outgrow the flops that use them, so only fewer or narrower cached "
                        "bytes move the step toward the tensor cores.",
                        hint="Set the critical batch's denominator, 2P_0 + c a - R(e + (c + 1) k), to zero and "
                        "solve for c; the answer is the last whole token below that.")


# --- the widget exercise ------------------------------------------------------------------

BATCHES = (1, 8, 32, 128, 256)
CONTEXTS = (256, 1024, 4096, 16384, 65536)
GPUS = ("H100-SXM", "B200")
WIDGET_MODELS = tuple(dc.MODELS)


def _refusal(model, gpu, batch, context) -> str | None:
    """Why `batch` caches of `context` tokens and `model`'s weights cannot run on `gpu`, or None."""
    fits = dc.max_batch(model, gpu, context)
    if batch <= fits:
        return None
    g, m = presets.gpu(gpu), dc.model(model)
    if fits == 0 and m.params * 2 > g.capacity("hbm"):
        return (f"the weights of {model} alone ({fmt_bytes(m.params * 2)} in fp16, every expert stored) need more "
                f"than the {gpu}'s {fmt_capacity(g.capacity('hbm'))}: it runs spread over several GPUs")
    return (f"{batch} caches of {context:,} tokens and the weights of {model} need more than the "
            f"{gpu}'s {fmt_capacity(g.capacity('hbm'))} (at most {fits} fit)")


def throughput(question_gpu: str = "B200", question_batch: int = 8, question_context: int = 16384) -> WidgetExercise:
    """Chapter 9: tokens per second against batch and context for MHA (Llama-2-7B), GQA
    (Llama-3-8B) and MLA (DeepSeek-V2) on the H100 SXM and the B200; a combination whose weights
    and caches do not fit in HBM cannot run (DeepSeek-V2's weights fit on neither). The question:
    how many times more tokens per second the GQA model serves than the MHA model at the given
    point, which both models must fit."""
    _check.member("question_gpu", question_gpu, GPUS)
    _check.member("question_batch", question_batch, BATCHES)
    _check.member("question_context", question_context, CONTEXTS)
    asks = tuple({"model": m, "gpu": question_gpu, "batch": question_batch, "context": question_context}
                 for m in ("Llama-3-8B", "Llama-2-7B"))
    for state in asks:
        why = _refusal(**state)
        if why:
            raise ValueError(f"question_batch must be a batch that fits at question_context on question_gpu: {why}")

    def view(model, gpu, batch, context):
        why = _refusal(model, gpu, batch, context)
        if why:
            raise ValueError(why)
        pr = predict(dc.step(model, batch, context), gpu)
        tps = batch / float(pr.time)
        m = dc.model(model)
        weights, cache = float(dc.weights_read(m, batch)) * 2, batch * (context + 1) * dc.kv_bytes_per_token(m)
        return bars(f"{model} ({m.attention.upper()}) on the {gpu}, batch {batch}, context {context:,}: "
                    f"<b>{tps:,.0f} tokens/s</b>, a step of {fmt_time(float(pr.time))}, bound by "
                    f"<b>{fmt_bound(pr.bound)}</b>",
                    [("weights read", weights, fmt_bytes(weights), False),
                     ("caches read", cache, fmt_bytes(cache), cache > weights)])

    ratio = (float(dc.tokens_per_second("Llama-3-8B", question_gpu, question_batch, question_context))
             / float(dc.tokens_per_second("Llama-2-7B", question_gpu, question_batch, question_context)))
    return WidgetExercise(
        "decode-throughput", {"model": list(WIDGET_MODELS), "gpu": list(GPUS), "batch": list(BATCHES),
                              "context": list(CONTEXTS)},
        view,
        number_rules(ratio, "times", 0.02, explain="Both steps are HBM-bound, so tokens per second go as one over "
                     "the bytes: the GQA cache is a quarter of MHA's (8 key-value heads of 32), and the ratio nears 4 "
                     "as the caches outgrow the weights.",
                     hint="Read the tokens per second of both models at that GPU, batch and context, and divide."),
        "ratio", asks=asks)


WIDGET_EXERCISES = (throughput,)
"""This chapter's widget exercises, in the order it shows them."""

# --- the kernel lab: split-KV for one query row -------------------------------------------

LAB_N, LAB_D, LAB_SPLITS = 256, 32, 4
"""The lab's decode attention: one query row of 32 FP32 values against 256 cached keys and
values, split into 4 runs of 64, one block of one warp per split."""

LAB_STARTER = r"""#define D 32
__global__ void split_kv(const float* q, const float* K, const float* V, float* O, float* LSE, int n, float scale) {
    int s = blockIdx.x, per = n / gridDim.x;       // this block's split: keys [s * per, (s + 1) * per)
    if (threadIdx.x != 0) return;                  // one thread does the split alone
    float m = -INFINITY, l = 0.0f, acc[D] = {};
    for (int j = s * per; j < (s + 1) * per; ++j) {
        float dot = 0.0f;
        for (int k = 0; k < D; ++k) dot += q[k] * K[j * D + k];
        float x = dot * scale, m_new = fmaxf(m, x), r = expf(m - m_new), p = expf(x - m_new);
        l = l * r + p;
        for (int k = 0; k < D; ++k) acc[k] = acc[k] * r + p * V[j * D + k];
        m = m_new;
    }
    for (int k = 0; k < D; ++k) O[s * D + k] = acc[k] / l;
    LSE[s] = m + logf(l);                          // the merge needs it to weigh this split
}
"""


INT4_GEMV = r"""#include <cuda_fp16.h>
// y = W x, W of N rows of K int4 weights: eight a 32-bit word along k;
// 32 weights along k share a scale and a zero point (a __half2):
// w = q * scale + zero. A warp a row.
extern "C" __global__ void gemv_int4(const unsigned* W, const __half2* SZ,
                                     const float* x, float* y, int N, int K) {
    int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    int lane = threadIdx.x % 32;
    if (row >= N) return;
    const unsigned* w = W + (size_t)row * (K / 8);
    const __half2* sz = SZ + (size_t)row * (K / 32);
    float acc = 0.0f;
    for (int i = lane; i < K / 8; i += 32) {   // 32 words: 128 bytes a warp
        unsigned packed = w[i];
        float2 g = __half22float2(sz[i / 4]);  // 4 words share a group's
        for (int j = 0; j < 8; ++j) {          // unpack: take 4 bits,
            float q = (float)((packed >> (4 * j)) & 0xFu);  // convert,
            acc += (q * g.x + g.y) * x[i * 8 + j];          // scale and zero
        }
    }
    for (int off = 16; off > 0; off >>= 1)
        acc += __shfl_xor_sync(0xffffffff, acc, off);
    if (lane == 0) y[row] = acc;
}
"""
"""Chapter 9's quantised GEMV (our own kernel), in gpt-fast's int4 format
(`gpumodel.decode.INT4_GROUPS`): a group of 32 weights along k shares a `__half2` scale and zero point."""


def trace_int4_gemv(rows: int = 64, width: int = 2048):
    """`INT4_GEMV` traced on the CPU (`gm.lab.trace`, a warp a row, four rows a block) on random
    weights, scales and a vector, after checking its output against NumPy's: the `Trace`.
    Chapter 9's "Quantised weights"."""
    from ..lab import trace  # the lab compiles with g++: imported when a trace is asked for

    n = _check.one("rows", rows, 4096)
    k = _check.one("width", width, 1 << 16)
    _check.divides("4 (rows a block)", 4, "rows", n)
    _check.divides("256 (a warp's words of weights)", 256, "width", k)
    group, _ = dc.INT4_GROUPS["gpt-fast"]  # the kernel's: 4 words of 8 weights a __half2
    rng = np.random.default_rng(0)
    q = rng.integers(0, 16, (n, k), dtype=np.uint32)
    words = np.zeros((n, k // 8), np.uint32)
    for j in range(8):
        words |= q[:, j::8] << np.uint32(4 * j)
    sz = rng.standard_normal((n, k // group, 2)).astype(np.float16)
    x = rng.standard_normal(k).astype(np.float32)
    y = np.zeros(n, np.float32)
    t = trace(INT4_GEMV, "gemv_int4", n // 4, 128, [words, sz, x, y, n, k])
    scale, zero = (np.repeat(sz[:, :, c].astype(np.float64), group, axis=1) for c in (0, 1))
    want = (q * scale + zero) @ x.astype(np.float64)
    if not np.allclose(t.arrays[3], want, rtol=1e-4, atol=1e-3 * np.abs(want).max()):
        raise AssertionError("the int4 GEMV's output differs from NumPy's")  # the course's own kernel is wrong
    return t


def _lab_inputs():
    group, _ = dc.INT4_GROUPS["gpt-fast"]  # the kernel's: 4 words of 8 weights a __half2
    rng = np.random.default_rng(0)
    q = rng.standard_normal(LAB_D).astype(np.float32)
    k, v = (rng.standard_normal((LAB_N, LAB_D)).astype(np.float32) for _ in range(2))
    return q, k, v, 1 / np.sqrt(LAB_D)


def lab_reference():
    """(O, LSE) of the lab's splits, in float64: each split's softmax-weighted values and the
    log-sum-exp of its scores."""
    q, k, v, scale = _lab_inputs()
    scores = (k.astype(np.float64) @ q * scale).reshape(LAB_SPLITS, -1)
    m = scores.max(axis=1, keepdims=True)
    p = np.exp(scores - m)
    l = p.sum(axis=1, keepdims=True)
    o = np.einsum("sj,sjd->sd", p / l, v.astype(np.float64).reshape(LAB_SPLITS, -1, LAB_D))
    return o, (m + np.log(l)).ravel()


def _sector_bytes(nbytes: float) -> float:
    return SECTOR_BYTES * -(-nbytes // SECTOR_BYTES)


def lab_budget() -> dict:
    """The lab's bytes per level, from `gpumodel.decode.split_kv` (FP32 cache, one query head,
    each split a page run): HBM the cache once, q once and the partials written (O and LSE, each
    array in whole sectors); L1 (sectors requested) the same with q read by every block and each
    split's LSE its own sector (its write is one lane's). Chapter 9."""
    f = dc.split_kv("H100-SXM", 1, 1, 1, LAB_D, LAB_N, LAB_SPLITS, page_tokens=LAB_N // LAB_SPLITS, kv="fp32")
    q_bytes, o_bytes = 4 * LAB_D, f.partial_bytes / 2 - 4 * LAB_SPLITS  # partials written: O rows, LSE values
    hbm = f.kv_bytes + _sector_bytes(q_bytes) + _sector_bytes(o_bytes) + _sector_bytes(4 * LAB_SPLITS)
    l1 = f.kv_bytes + LAB_SPLITS * (_sector_bytes(q_bytes) + SECTOR_BYTES) + o_bytes
    return {"hbm": hbm, "l1": l1}


def check_split_kernel(source: str, kernel: str = "split_kv") -> Feedback:
    """Chapter 9's lab: `kernel(q, K, V, O, LSE, n, scale)` of the CUDA C `source`, launched as
    LAB_SPLITS blocks of 32 threads, must write each split's output row and log-sum-exp
    (`lab_reference`) with its traced bytes within `lab_budget` at HBM and at L1: the keys and
    values read once, each warp's reads coalesced."""
    if not isinstance(source, str):
        raise TypeError(f"source must be the kernel's CUDA C source as a str, got {type(source).__name__}")
    q, k, v, scale = _lab_inputs()
    o_want, lse_want = lab_reference()
    args = [q, k, v, np.zeros((LAB_SPLITS, LAB_D), np.float32), np.zeros(LAB_SPLITS, np.float32), LAB_N, float(scale)]
    traced = lab_run(source, kernel, LAB_SPLITS, 32, args, 3, o_want, "O[s] must be split s's softmax-weighted values")
    if isinstance(traced, Feedback):
        return traced
    if not np.allclose(args[4], lse_want, rtol=1e-4, atol=1e-5):
        return Feedback(False, f"LSE[s] must be the log-sum-exp of split s's scores (m + log l): LSE[0] is "
                        f"{args[4][0]:g}, not {lse_want[0]:g}. Correctness first, then bytes.")
    budget, got = lab_budget(), {lv: traced.bytes[lv] for lv in ("hbm", "l1")}
    over = [lv for lv in got if got[lv] > budget[lv]]
    table = "; ".join(f"{lv.upper()}: {fmt_bytes(got[lv])} of {fmt_bytes(budget[lv])}" for lv in got)
    if not over:
        return Feedback(True, f"Correct, and within the budget ({table}): each key and value row is read once, a "
                        "warp's 32 lanes taking its 32 values in one 128-byte request.")
    return Feedback(False, f"Correct, but over the budget ({table}). How many sectors does one lane's 4-byte load "
                    "cost, and how many would the warp's 32 lanes reading one row together cost?")
