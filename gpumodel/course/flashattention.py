"""Chapter `05_flashattention` (FlashAttention): its exercises' checkers and its widget exercises.

A checker takes the learner's answer and returns `Feedback`; a widget exercise (`WIDGET_EXERCISES`)
is an explorer of the model with an answer box."""

from __future__ import annotations

import numpy as np

from .. import _check, presets
from ..model import predict
from ..blackwell import tensor_per_exp
from ..units import fmt_bytes, fmt_capacity
from ..workloads import attention, attention_memory, flash_block
from .checks import BYTES, FLOPS_AND_BYTES, Feedback, check_number, lab_run, lab_run_triton, number_rules, units_as
from .widgets import GPUS, Checkpoint, WidgetExercise, _power, asked, bars, prediction_view, upto


def tensor_over_sfu(gpu="H100-SXM", math: str = "fp16") -> float:
    """Chapter 5: tensor-core flops of `math` per special-function result, both at one clock
    (`gm.blackwell.tensor_per_exp`, which chapter 7 takes further)."""
    return float(tensor_per_exp(gpu, math))


def check_attention_limit(head_dim: int, dtype: str, answer) -> Feedback:
    """Chapter 5: the HBM intensity (FLOP/B) that standard attention approaches as N grows,
    for `head_dim` and `dtype`: 4 N^2 d flops over the N^2 matrices' trips."""
    w = attention(1, 1, 2**24, head_dim, dtype, "standard")
    limit = float(w.flops / w.bytes["hbm"])
    s = _check.dtype_bytes(dtype)
    return check_number(answer, limit, "FLOP/B", rtol=0.01, key=f"check_attention_limit({head_dim}, {dtype})",
                        doubled=FLOPS_AND_BYTES,
                        mistakes=[(limit * s, "That is flops per element; the question asks per byte.")]
                        if s != 2 else [],
                        explain=f"The N² terms win: 4 N² d flops over 4 trips of N² elements of "
                        f"{_check.dtype_bytes(dtype)} bytes, d / s. Every preset's tensor-core HBM ridge is higher, "
                        "so standard attention stays memory-bound at any length.",
                        hint="Keep only the terms that grow as N²: the flops of the two matmuls and the trips of the "
                        "scores and probabilities.")


def check_flash_block(sram_bytes: int, head_dim: int, dtype: str, answer) -> Feedback:
    """Chapter 5: the largest power-of-two block that fits `sram_bytes` (see flash_block)."""
    expected = flash_block(sram_bytes, head_dim, dtype)
    return check_number(answer, float(expected), "rows", rtol=0,
                        key=f"check_flash_block({sram_bytes}, {head_dim}, {dtype})",
                        doubled="the largest power of two that fits is asked; count the Q, K and V blocks and the "
                        "block of scores, each element of its dtype's bytes.",
                        hint="Write the elements a block of B rows needs (three B x d blocks and B x B scores), times "
                        "the bytes per element, and find the largest power of two B that fits.",
                        explain=f"3 x {expected} x {head_dim} + {expected}² elements fit; twice that block does not.")



LAB_N, LAB_D, LAB_BLOCK = 64, 16, 32
"""The attention lab's launch: one head of 64 queries and keys of 16 FP32 values, a thread per
query row, 2 blocks of 32 threads."""
LAB_STARTER = r"""#define D 16
__global__ void attention(const float* Q, const float* K, const float* V, float* O, float* S, int n, float scale) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;  // this thread's query row
    if (i >= n) return;
    float* s = S + i * n;                           // its row of scores, in global memory
    float m = -INFINITY, sum = 0.0f;
    for (int j = 0; j < n; ++j) {
        float dot = 0.0f;
        for (int k = 0; k < D; ++k) dot += Q[i * D + k] * K[j * D + k];
        s[j] = dot * scale;
        m = fmaxf(m, s[j]);
    }
    for (int j = 0; j < n; ++j) sum += expf(s[j] - m);
    for (int k = 0; k < D; ++k) {
        float acc = 0.0f;
        for (int j = 0; j < n; ++j) acc += expf(s[j] - m) * V[j * D + k];
        O[i * D + k] = acc / sum;
    }
}
"""


TRITON_LAB_BLOCK = 16
"""The Triton attention lab's blocks: a program per 16 query rows, keys 16 at a time (`LAB_N`
queries and keys of `LAB_D` values, as the CUDA lab's)."""
TRITON_LAB_STARTER = """import triton
import triton.language as tl


@triton.jit
def attention(q_ptr, k_ptr, v_ptr, o_ptr, s_ptr, n, scale, D: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr):
    rows = tl.program_id(0) * BM + tl.arange(0, BM)  # this program's query rows
    d = tl.arange(0, D)
    q = tl.load(q_ptr + rows[:, None] * D + d[None, :])
    m = tl.full((BM,), -float("inf"), tl.float32)
    for j in range(0, n, BN):  # the scores, a block of keys at a time, to global memory
        cols = j + tl.arange(0, BN)
        k = tl.load(k_ptr + cols[:, None] * D + d[None, :])
        s = tl.dot(q, tl.trans(k), input_precision="ieee") * scale
        tl.store(s_ptr + rows[:, None] * n + cols[None, :], s)
        m = tl.maximum(m, tl.max(s, axis=1))
    total = tl.zeros((BM,), tl.float32)
    acc = tl.zeros((BM, D), tl.float32)
    for j in range(0, n, BN):  # and back: the softmax's weights times V
        cols = j + tl.arange(0, BN)
        p = tl.exp(tl.load(s_ptr + rows[:, None] * n + cols[None, :]) - m[:, None])
        total += tl.sum(p, axis=1)
        acc += tl.dot(p, tl.load(v_ptr + cols[:, None] * D + d[None, :]), input_precision="ieee")
    tl.store(o_ptr + rows[:, None] * D + d[None, :], acc / total[:, None])
"""
"""Chapter 5's Triton lab's starter: the CUDA lab's standard attention, a program per block of
query rows, its scores through `s_ptr` in global memory (FP32 dots, `input_precision="ieee"`:
TF32 would round the lab's large scores)."""


def _attention_reference(q: np.ndarray, k: np.ndarray, v: np.ndarray) -> np.ndarray:
    """softmax(Q Kᵀ / sqrt(d)) V in float64, the labs' reference."""
    scores = q.astype(np.float64) @ k.T / np.sqrt(q.shape[1])
    p = np.exp(scores - scores.max(axis=1, keepdims=True))
    return (p / p.sum(axis=1, keepdims=True)) @ v


def check_triton_flash(source: str, kernel: str = "attention") -> Feedback:
    """Chapter 5's Triton lab: `kernel(q, k, v, o, s, n, scale, D, BM, BN)` of the Python `source`,
    a program per `TRITON_LAB_BLOCK` query rows of the CUDA lab's inputs (`lab_qkv`), must compute
    O = softmax(Q Kᵀ scale) V while its traced HBM bytes stay at the compulsory ones (Q, K, V read
    once, O written once): the scores never reach global memory."""
    q, k, v = lab_qkv(LAB_N, LAB_D)
    args = [q, k, v, np.zeros_like(q), np.zeros((LAB_N, LAB_N), np.float32), LAB_N, float(1 / np.sqrt(LAB_D))]
    traced = lab_run_triton(source, kernel, (LAB_N // TRITON_LAB_BLOCK,), args, 3, _attention_reference(q, k, v),
                            "O must be softmax(Q Kᵀ scale) V", D=LAB_D, BM=TRITON_LAB_BLOCK, BN=TRITON_LAB_BLOCK)
    if isinstance(traced, Feedback):
        return traced
    got, compulsory = traced.bytes["hbm"], float(sum(a.nbytes for a in (q, k, v, q)))
    if got <= compulsory:
        return Feedback(True, f"{fmt_bytes(got)} from HBM, the compulsory {fmt_bytes(compulsory)}: each block of "
                        "scores lived only in the program's registers.")
    return Feedback(False, f"{fmt_bytes(got)} from HBM where the compulsory {fmt_bytes(compulsory)} would do (worst: "
                    f"line {traced.hottest().line}). What must a program keep of the scores it has seen, if each "
                    "block of keys is folded in as it arrives?")


OVERFLOW_SCORE = 100.0
"""What the labs' attention inputs add to every score: exp(100), about 2.7e43, overflows FP32
(largest 3.4e38), so a softmax that does not subtract the row's maximum gets inf, then NaN."""


def lab_qkv(n: int, d: int, seed: int = 0) -> tuple:
    """Q, K, V (`n` x `d` FP32, standard normal) for a lab's attention, with `OVERFLOW_SCORE`
    added to every score at `scale` = 1/sqrt(d): K's last column a constant 10, Q's last column
    what makes that column add `OVERFLOW_SCORE` to each score of its row. A constant per row
    leaves the row's softmax as it is; only a kernel that subtracts the row's (running) maximum
    survives it. Chapter 5."""
    n, d = _check.integer("n", n, 1, 2**16), _check.integer("d", d, 2, 1024)
    seed = _check.integer("seed", seed, 0, 2**32)
    q, k, v = (np.random.default_rng(seed).standard_normal((3, n, d))).astype(np.float32)
    k[:, -1] = 10.0
    q[:, -1] = OVERFLOW_SCORE * np.sqrt(d) / 10.0
    return q, k, v


def check_flash_kernel(source: str, kernel: str = "attention") -> Feedback:
    """Chapter 5's lab: `kernel(Q, K, V, O, S, n, scale)` of the CUDA C `source`, a thread per
    query row over `LAB_N` x `LAB_D` FP32 matrices, must compute O = softmax(Q Kᵀ scale) V
    while its traced HBM bytes stay at the flash workload's compulsory bytes (Q, K, V read
    once, O written once; exactly, as these sizes fill whole sectors): the N x N scores in
    `S`, a scratch array, never reach global memory. Every score is raised by `OVERFLOW_SCORE`
    (`lab_qkv`): a softmax without the row's maximum overflows."""
    q, k, v = lab_qkv(LAB_N, LAB_D)
    args = [q, k, v, np.zeros_like(q), np.zeros((LAB_N, LAB_N), np.float32), LAB_N, float(1 / np.sqrt(LAB_D))]
    traced = lab_run(source, kernel, LAB_N // LAB_BLOCK, LAB_BLOCK, args, 3, _attention_reference(q, k, v),
                     "O must be softmax(Q Kᵀ scale) V")
    if isinstance(traced, Feedback):
        return traced
    got = traced.bytes["hbm"]
    compulsory = float(attention(1, 1, LAB_N, LAB_D, "fp32", "flash", block=(LAB_BLOCK, LAB_BLOCK),
                                 l2_reuse=True).bytes["hbm"])
    if got <= compulsory:
        return Feedback(True, f"{fmt_bytes(got)} from HBM, the compulsory {fmt_bytes(compulsory)}: the scores "
                        "stayed in registers.")
    return Feedback(False, f"{fmt_bytes(got)} from HBM where the compulsory {fmt_bytes(compulsory)} would do; the "
                    f"{LAB_N} x {LAB_N} scores in FP32 are {fmt_bytes(4.0 * LAB_N * LAB_N)}. What does a row need to "
                    "keep of the scores it has seen, if each block of keys is folded in as it arrives?")


SEQS = tuple(2**p for p in range(10, 18))


SPEEDUP_HEAD_DIMS = (64, 128, 256)


def attention_fit(gpu: str = "L4", heads: int = 32, head_dim: int = 128) -> WidgetExercise:
    """Chapter 5: the smallest power-of-two sequence length at which standard attention's
    forward pass (batch 1, fp16) no longer fits in `gpu`'s memory."""
    _check.member("gpu", gpu, GPUS)
    heads, head_dim = _check.one("heads", heads), _check.one("head_dim", head_dim)
    if attention_memory(1, heads, SEQS[-1], head_dim, "fp16") <= presets.gpu(gpu).capacity("hbm"):
        raise ValueError(f"heads and head_dim must make standard attention outgrow the {gpu}'s memory by "
                         f"N = {SEQS[-1]:,}, got {heads} and {head_dim}")

    def view(gpu, seq, kind):
        g = presets.gpu(gpu)
        need = float(attention_memory(1, heads, seq, head_dim, "fp16", kind))
        fits = need <= g.capacity("hbm")
        return bars(f"{kind.capitalize()} attention, N = {seq:,}, {heads} heads, d = {head_dim}: "
                    f"{fmt_capacity(need)} {'fits' if fits else '<b>does not fit</b>'} in the {gpu}'s memory",
                    [("needed", need, fmt_capacity(need), not fits),
                     ("HBM", g.capacity("hbm"), fmt_capacity(g.capacity("hbm")), False)])

    capacity = presets.gpu(gpu).capacity("hbm")
    first = next(n for n in SEQS if attention_memory(1, heads, n, head_dim, "fp16") > capacity)
    return WidgetExercise(
        "attention-fit", {"gpu": list(GPUS), "seq": list(SEQS), "kind": ["standard", "flash"]}, view,
        number_rules(first, "tokens", 0, explain="The N x N scores and probabilities grow with N²; FlashAttention "
                     "never writes them, and at that length still needs "
                     f"{fmt_bytes(float(attention_memory(1, heads, first, head_dim, 'fp16', 'flash')))}.",
                     hint="Pick the GPU and standard attention, then double N until the red bar passes HBM."),
        "sequence length", labels={"seq": _power}, asks=asked(gpu=gpu, seq=upto(SEQS, first), kind="standard"))


FLASH_L2_REUSE = True
"""The chapter's assumption for FlashAttention's re-reads of K and V: the query blocks of a head
run together and L2 serves them (`attention(..., l2_reuse=True)`); its explorer uses the same."""


def flash_speedup(gpu: str = "H100-SXM", seq: int = 16384, head_dim: int = 64) -> WidgetExercise:
    """Chapter 5: how many times faster flash attention is than standard in the model, on
    `gpu` at `seq` tokens and `head_dim` (batch 1, 32 heads, fp16), with L2 serving the flash
    kernel's re-reads of K and V as the chapter's text assumes (`FLASH_L2_REUSE`). The question
    then asks the learner to try the largest head dimension offered, so it asks about that too."""
    _check.member("gpu", gpu, GPUS)
    _check.member("seq", seq, SEQS)
    _check.member("head_dim", head_dim, SPEEDUP_HEAD_DIMS)

    def workload(seq, head_dim, kind):
        return attention(1, 32, seq, head_dim, "fp16", kind, l2_reuse=kind == "flash" and FLASH_L2_REUSE)

    ratio = float(predict(workload(seq, head_dim, "standard"), gpu).time / predict(workload(seq, head_dim, "flash"),
                                                                                   gpu).time)
    return WidgetExercise(
        "flash-speedup", {"gpu": list(GPUS), "seq": list(SEQS), "head_dim": list(SPEEDUP_HEAD_DIMS),
                          "kind": ["standard", "flash"]},
        lambda gpu, seq, head_dim, kind: prediction_view(workload(seq, head_dim, kind), gpu,
                                                         f"{kind.capitalize()} attention, N = {seq:,}, d = {head_dim}"),
        number_rules(ratio, "times", 0.02, explain="Standard attention is HBM-bound by its N x N matrices, whose "
                     "bytes do not grow with d; with L2 serving the re-reads of K and V, FlashAttention is bound by its "
                     "tensor math, which grows with d, so its advantage shrinks as d grows.",
                     hint="Read both times at the same GPU, N and d, and divide."),
        "times faster", labels={"seq": _power},
        asks=asked(gpu=gpu, seq=seq, head_dim=sorted({head_dim, SPEEDUP_HEAD_DIMS[-1]}), kind=["standard", "flash"]))


WIDGET_EXERCISES = (attention_fit, flash_speedup)
"""This chapter's widget exercises, in the order it shows them."""


def cp_scores(seq: int = 16384, dtype: str = "fp16") -> Checkpoint:
    """Chapter 5, "The score matrix in bytes": one head's N x N scores (N = `seq` tokens), in MiB."""
    seq = _check.integer("seq", seq, 1, 2**24)
    s = _check.dtype_bytes(dtype)
    return Checkpoint(
        "cp-flash-scores",
        f"One attention head over N = {seq:,} tokens in {dtype}: how many MiB does its N x N score matrix take?",
        number_rules(seq * seq * s / 2**20, "MiB", 0.01, units=units_as("MiB", BYTES),
                     doubled=f"an {dtype} element is {s} bytes.",
                     explain="It grows with N²: double the tokens, four times the bytes.",
                     hint="Elements times bytes per element, then divide by 2²⁰."),
        "scores")


def cp_trips() -> Checkpoint:
    """Chapter 5, "Standard attention, pass by pass": the N x N matrices' trips through HBM when a
    separate masking kernel sits between QKᵀ and the softmax (a case the page does not work: it
    counts the three-kernel path's trips)."""
    n = 2**20  # long enough that the N^2 terms are all of the bytes, to the nearest trip
    trips = round(float(attention(1, 1, n, 64, "fp16", "standard").bytes["hbm"]) / (n * n * 2))
    mask = 2  # the masking kernel reads S and writes the masked S back
    return Checkpoint(
        "cp-flash-trips",
        "A library runs standard attention's forward pass with a separate masking kernel between QKᵀ and the "
        "softmax: it reads S from HBM and writes the masked S back. How many times does an N x N matrix cross "
        "HBM now, in all?",
        number_rules(float(trips + mask), "trips", 0, doubled="count each matrix's write and its read.",
                     mistakes=[(float(trips), "That is the three-kernel path of the page; the masking kernel "
                                "moves S too."),
                               (float(trips + 1), "The masking kernel both reads S and writes it back.")],
                     explain=f"The page's {trips} trips, and the masking kernel's read and write of S: each "
                     "elementwise kernel between the matmuls adds two. Separate masking and dropout kernels are "
                     "why a real standard attention moves more than the page's count.",
                     hint="List the passes, and for each the N x N matrices it writes or reads."),
        "trips")


CHECKPOINTS = {"cp-flash-scores": cp_scores, "cp-flash-trips": cp_trips}
"""This chapter's checkpoints, in the order it shows them."""

RELIES_ON = {
    "cp-flash-scores": ("score_one", "score_one_mib"),  # the worked size at N = 4096; the question asks another N
    "cp-flash-trips": ("term:kernel", "term:HBM"),  # the three kernels' trips, listed above; a fourth kernel added
    "ex-flash-limit": ("term:intensity",),  # the bytes and flops per head, given above as formulas
    "ex-flash-block": (),  # the question gives every figure and what the block holds
    "ex-flash-explore-fit": (),  # the explorer shows each footprint
    "ex-flash-explore-speedup": (),  # the explorer shows each time
    "ex-flash-lab-block-loop": ("lab_compulsory",),  # the compulsory bytes the traced kernel must reach
    "ex-flash-lab-triton": ("lab_compulsory",),
}
"""What each checkpoint and exercise needs from the page above it (tests/test_checkpoints.py)."""
