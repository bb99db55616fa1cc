"""Chapter `08_capstone` (Capstone: a kernel within its byte budget): the tasks a learner picks
from, each with a byte budget per level derived from the model, and the score of a kernel
against it.

A task is data: a statement, a starter kernel (CUDA C, right but wasteful in bytes), its
launch, sizes that trace in seconds on a CPU, a NumPy reference and the model's workload of a
kernel that moves no byte more than it must. The budget per level comes from that workload:
HBM its compulsory bytes (each input read once, the output written once); L2 the bytes the
model sends through L2 (for a tiled task, each tile once per block); L1, the sectors the warps
request, the same bytes (perfect coalescing: every sector a block needs requested once); shared
memory the model's tile formula where the task stages tiles (and nothing where it does not).
`score` traces the learner's kernel (`gm.lab.trace`), correctness first, then holds its bytes
against the budget level by level, and times both in the model.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Callable

import numpy as np

from .. import _check
from ..hardware import REGISTER_BYTES_PER_FLOP, SECTOR_BYTES, WAVEFRONT_BYTES
from ..kernel_info import KERNELS
from ..lab import Trace
from ..model import predict
from ..presets import preset_names
from ..units import LEVEL_NAMES as UNIT_LEVEL_NAMES
from ..units import fmt_bound, fmt_bytes, fmt_time
from ..workloads import Workload, attention, elementwise_chain, gemm
from .checks import Feedback, bound_and_expected, check_number, lab_run, part_name, record
from .flashattention import OVERFLOW_SCORE, lab_qkv
from .tables import markdown_table

LEVELS = ("hbm", "l2", "l1", "smem")
"""The levels a budget covers, as `gm.lab.Trace.bytes` names them, outermost first."""
LEVEL_NAMES = {**UNIT_LEVEL_NAMES, "l1": "L1 (sectors requested)"}


@dataclass(frozen=True)
class Task:
    """One capstone task: `name`, a one-line `statement`, the `kernel` function the learner
    writes and its `starter` source, the starter's launch (`grid`, `block`), the `sizes`, a
    `make()` that returns fresh (args, index of the output among them, the NumPy result), the
    `rule` the result owes, and `workload()`: the model's workload of a kernel within budget."""

    name: str
    statement: str
    kernel: str
    starter: str
    grid: tuple
    block: tuple
    sizes: dict
    make: Callable
    rule: str
    workload: Callable

    @property
    def flops(self) -> float:
        """The task's FLOPs, as the model counts them (its workload's)."""
        return float(self.workload().flops)


ROWS, COLS = 64, 256
"""The row-wise tasks' input: ROWS rows of COLS FP32 values."""
SOFTMAX_FLOPS, LAYERNORM_FLOPS = 5, 6
"""FLOPs per element: softmax compares for the max, subtracts it, exponentiates, adds to the sum
and divides; layernorm adds for the mean, subtracts it, squares and adds for the variance,
subtracts and multiplies by the reciprocal square root (the per-row terms left out)."""
EPS = 1e-5
"""Layernorm's epsilon, added to the variance."""


def _rows() -> np.ndarray:
    return np.random.default_rng(0).standard_normal((ROWS, COLS)).astype(np.float32)


SOFTMAX_OFFSET = OVERFLOW_SCORE
"""Added to every other row of the softmax task's input: exp of an unshifted row overflows FP32
(chapter 5), its softmax is the same."""


def _softmax():
    x = _rows()
    x[::2] += SOFTMAX_OFFSET
    e = np.exp(x.astype(np.float64) - x.max(axis=1, keepdims=True))
    return [x, np.zeros_like(x), ROWS, COLS], 1, e / e.sum(axis=1, keepdims=True)


def _layernorm():
    x = _rows()
    x64 = x.astype(np.float64)
    mean, var = x64.mean(axis=1, keepdims=True), x64.var(axis=1, keepdims=True)
    return [x, np.zeros_like(x), ROWS, COLS, EPS], 1, (x64 - mean) / np.sqrt(var + EPS)


def _rowwise(flops_per_element: int) -> Callable:
    """A row-wise task's workload: the bytes of a fused elementwise chain (chapter 2), its
    input read once and its output written once, nothing staged in shared memory."""
    return lambda: elementwise_chain(ROWS * COLS, flops_per_element, fused=True)


SOFTMAX_STARTER = r"""__global__ void softmax(const float* x, float* y, int rows, int cols) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;  // one thread per row
    if (r >= rows) return;
    float m = -INFINITY, sum = 0.0f;
    for (int j = 0; j < cols; ++j) m = fmaxf(m, x[r * cols + j]);
    for (int j = 0; j < cols; ++j) sum += expf(x[r * cols + j] - m);
    for (int j = 0; j < cols; ++j) y[r * cols + j] = expf(x[r * cols + j] - m) / sum;
}
"""

LAYERNORM_STARTER = r"""__global__ void layernorm(const float* x, float* y, int rows, int cols, float eps) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;  // one thread per row
    if (r >= rows) return;
    float mean = 0.0f, var = 0.0f;
    for (int j = 0; j < cols; ++j) mean += x[r * cols + j];
    mean /= cols;
    for (int j = 0; j < cols; ++j) var += (x[r * cols + j] - mean) * (x[r * cols + j] - mean);
    var /= cols;
    for (int j = 0; j < cols; ++j) y[r * cols + j] = (x[r * cols + j] - mean) / sqrtf(var + eps);
}
"""

GEMM_SIZE = 64
"""The GEMM task's M = N = K."""
GEMM_TILE = "gemm_smem16"
"""The course kernel whose tiles the GEMM budget counts with: chapter 3's 16 x 16 shared-memory tiles."""


def _gemm():
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal((GEMM_SIZE, GEMM_SIZE)).astype(np.float32) for _ in range(2))
    n = GEMM_SIZE
    return [a, b, np.zeros((n, n), np.float32), n, n, n], 2, a.astype(np.float64) @ b


def _gemm_workload(size: int = GEMM_SIZE) -> Workload:
    tile = KERNELS[GEMM_TILE]
    return gemm(size, size, size, block=tile.block, thread=tile.thread)


def check_gemm_l2_budget(size: int, answer) -> Feedback:
    """Chapter 8: the GEMM task's L2 budget, in bytes, at `size` x `size` x `size` FP32 (whole
    tiles): each tile of A and B read once per block, C written once."""
    b = KERNELS[GEMM_TILE].block[0]
    size = _check.integer("size", size, b, 2**14)
    if size % b:
        raise ValueError(f"size must be a multiple of the tile, {b}, got {size}")
    return check_number(answer, float(_gemm_workload(size).bytes["l2"]), "bytes", rtol=0.01,
                        key=f"check_gemm_l2_budget({size})",
                        explain=f"{(size // b) ** 2:,} blocks each read a {b} x {size} strip of A and a {size} x {b} "
                        "strip of B, 4 bytes an element, and C is written once.",
                        hint="Count the blocks; each reads its rows of A and its columns of B in full, once. Add C.")


GEMM_STARTER = r"""__global__ void gemm(const float* A, const float* B, float* C, int m, int n, int k) {
    int row = blockIdx.x * blockDim.x + threadIdx.x;  // neighbouring threads take neighbouring rows
    int col = blockIdx.y * blockDim.y + threadIdx.y;
    if (row >= m || col >= n) return;
    float acc = 0.0f;
    for (int p = 0; p < k; ++p) acc += A[row * k + p] * B[p * n + col];
    C[row * n + col] = acc;
}
"""

SEQ, HEAD_DIM, QUERY_BLOCK = 64, 16, 32
"""The attention task: one head of 64 queries and keys of 16 FP32 values, 32 query rows per block."""


def _attention():
    q, k, v = lab_qkv(SEQ, HEAD_DIM)
    scale = 1 / np.sqrt(HEAD_DIM)
    s = q.astype(np.float64) @ k.T * scale
    p = np.exp(s - s.max(axis=1, keepdims=True))
    return [q, k, v, np.zeros_like(q), SEQ, float(scale)], 3, (p / p.sum(axis=1, keepdims=True)) @ v


def _attention_workload() -> Workload:
    """FlashAttention's workload (chapter 5) with blocks of `QUERY_BLOCK` queries and keys: Q, K,
    V read and O written once at HBM, K and V once per query block at L2."""
    return attention(1, 1, SEQ, HEAD_DIM, "fp32", "flash", block=(QUERY_BLOCK, QUERY_BLOCK), l2_reuse=True)


ATTENTION_STARTER = r"""#define D 16
__global__ void attention(const float* Q, const float* K, const float* V, float* O, int n, float scale) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;  // one thread per query row
    if (i >= n) return;
    float m = -INFINITY, sum = 0.0f, acc[D] = {};
    for (int j = 0; j < n; ++j) {  // pass 1: the row's largest score
        float dot = 0.0f;
        for (int k = 0; k < D; ++k) dot += Q[i * D + k] * K[j * D + k];
        m = fmaxf(m, dot * scale);
    }
    for (int j = 0; j < n; ++j) {  // pass 2: the scores again, weighted
        float dot = 0.0f;
        for (int k = 0; k < D; ++k) dot += Q[i * D + k] * K[j * D + k];
        float p = expf(dot * scale - m);
        sum += p;
        for (int k = 0; k < D; ++k) acc[k] += p * V[j * D + k];
    }
    for (int k = 0; k < D; ++k) O[i * D + k] = acc[k] / sum;
}
"""

def flash_design_source() -> str:
    """Chapter 5's FlashAttention kernel (`flash_forward` of `kernels/attention.cu`: one query
    row per thread, K and V staged in shared memory, where every lane of a warp reads the same
    word at once) as a kernel for the attention task: its name and parameters, D = `HEAD_DIM`,
    `QUERY_BLOCK` query rows per block and keys per tile, chunks of 16 keys. Chapters 5 and 8."""
    from ..cuda.compiler import function_source, kernel_source

    constants = "\n".join(line for line in kernel_source("attention.cu").splitlines() if line.startswith("constexpr"))
    return (f"{constants}\n{function_source('attention.cu', 'flash_forward')}\n"
            "__global__ void attention(const float* Q, const float* K, const float* V, float* O, int n, float scale) {\n"
            f"    flash_forward<{HEAD_DIM}, {QUERY_BLOCK}, {QUERY_BLOCK}, 16>(Q, K, V, O, n, scale);\n}}\n")


def over_budget(task: str, source: str, grid=None, block=None, shared_mem: int = 0) -> dict:
    """Traced bytes over the budget, per level of `LEVELS`, of a correct kernel in CUDA C
    `source` for `task` (a name of `TASKS`), launched as `score` launches it (0 where both are
    zero, inf where only the budget is). A kernel that does not compile, run or give the right
    result raises ValueError with the lab's message. Chapters 5 and 8."""
    t = _task(task)
    if not isinstance(source, str):
        raise TypeError(f"source must be the kernel's CUDA C source as a str, got {type(source).__name__}")
    args, out, want = t.make()
    traced = lab_run(source, t.kernel, t.grid if grid is None else grid, t.block if block is None else block,
                     args, out, want, t.rule, shared_mem)
    if isinstance(traced, Feedback):
        raise ValueError(f"source must be a correct kernel for {task!r}: {traced.message}")
    allowed = budget(task)
    return {lv: (traced.bytes[lv] / allowed[lv] if allowed[lv] else 0.0 if traced.bytes[lv] == 0 else np.inf)
            for lv in LEVELS}


TASKS = {
    "softmax": Task("softmax", f"y = softmax(x) along each row of a {ROWS} x {COLS} FP32 matrix.", "softmax",
                    SOFTMAX_STARTER, (ROWS // 32,), (32,), {"rows": ROWS, "cols": COLS}, _softmax,
                    "y must be softmax(x), row by row", _rowwise(SOFTMAX_FLOPS)),
    "layernorm": Task("layernorm", f"y = (x - mean) / sqrt(var + eps) along each row of a {ROWS} x {COLS} FP32 "
                      "matrix (no scale or shift).", "layernorm", LAYERNORM_STARTER, (ROWS // 32,), (32,),
                      {"rows": ROWS, "cols": COLS}, _layernorm, "y must be each row normalised",
                      _rowwise(LAYERNORM_FLOPS)),
    "gemm": Task("gemm", f"C = A B for {GEMM_SIZE} x {GEMM_SIZE} FP32 matrices.", "gemm", GEMM_STARTER,
                 (GEMM_SIZE // 16, GEMM_SIZE // 16), (16, 16), {"m": GEMM_SIZE, "n": GEMM_SIZE, "k": GEMM_SIZE},
                 _gemm, "C must be A B", _gemm_workload),
    "attention": Task("attention", f"O = softmax(Q Kᵀ scale) V for one head of {SEQ} queries and keys of "
                      f"{HEAD_DIM} FP32 values.", "attention", ATTENTION_STARTER, (SEQ // QUERY_BLOCK,),
                      (QUERY_BLOCK,), {"seq": SEQ, "head_dim": HEAD_DIM}, _attention,
                      "O must be softmax(Q Kᵀ scale) V", _attention_workload),
}
"""The capstone's tasks by name, in the order the chapter lists them."""


def _task(task: str) -> Task:
    """The capstone task named `task`, one of `TASKS`."""
    return TASKS[_check.choice("task", task, tuple(TASKS))]


def budget(task: str) -> dict:
    """Bytes per level (`LEVELS`) that a kernel for `task` (a name of `TASKS`) may move: HBM, L2
    and shared memory from the model's workload (`Task.workload`), L1 the L2 bytes (every
    sector a block needs, requested once). Chapter 8."""
    w = _task(task).workload()
    return {"hbm": float(w.bytes["hbm"]), "l2": float(w.bytes["l2"]), "l1": float(w.bytes["l2"]),
            "smem": float(w.bytes["smem"])}


def _timed(name: str, flops: float, levels: dict) -> Workload:
    """A workload the model times from a budget's bytes per level (`LEVELS`) and FP32 `flops`:
    HBM and L2 as they are; the model's `smem` level, the SM's L1/shared-memory data path,
    carries the shared-memory bytes and the L1 sectors, as `gm.lab.Trace.workload` charges a
    kernel whose requests are coalesced; registers `REGISTER_BYTES_PER_FLOP` per flop. Chapter 8."""
    return Workload(name, flops, {"registers": REGISTER_BYTES_PER_FLOP * flops, "smem": levels["smem"] + levels["l1"],
                                  "l2": levels["l2"], "hbm": levels["hbm"]})


def budget_time(task: str, gpu: str = "H100-SXM") -> float:
    """The model's time (seconds) on `gpu` of a kernel for `task` that moves its budget. Chapter 8."""
    flops = _task(task).flops
    _check.choice("gpu", gpu, preset_names())
    return float(predict(_timed(f"{task} (budget)", flops, budget(task)), gpu).time)


def budget_table(gpu: str = "H100-SXM") -> str:
    """Every task's statement, budget per level (bytes) and the budget's time on `gpu` in the
    model, as a Markdown table. Chapter 8."""
    _check.choice("gpu", gpu, preset_names())
    rows = [[f"`{t.name}`", t.statement, *(fmt_bytes(budget(t.name)[lv]) for lv in LEVELS),
             fmt_time(budget_time(t.name, gpu))] for t in TASKS.values()]
    return markdown_table(["task", "statement", *(LEVEL_NAMES[lv] for lv in LEVELS), f"time on the {gpu}"], rows)


def _ratio(got: float, allowed: float) -> str:
    if allowed:
        return f"{got / allowed:.2f}x"
    return "none, as budgeted" if got == 0 else "over a budget of 0"


def score(task: str, source: str, kernel: str | None = None, grid=None, block=None, gpu: str = "H100-SXM",
          shared_mem: int = 0) -> Feedback:
    """Chapter 8's capstone: trace `kernel` (the task's, by default; a name expression such as
    "softmax<128>" for a template) of the CUDA C `source` for `task` (a name of `TASKS`) on the
    CPU, launched as `grid` x `block` (the starter's, by default) with `shared_mem` bytes of
    dynamic shared memory. Right when the result matches the NumPy reference and the bytes at every level
    stay within `budget`; the feedback holds a table per level (traced bytes, budget, ratio),
    where the bytes go (the worst line, `Trace.hottest`, or the lines carrying a level's
    repeated bytes), the bound on `gpu` of the kernel and of the budget (with why a kernel over
    budget is not slower where it is not) and the kernel's expected time (`gm.expect`: what holds it)."""
    t = _task(task)
    if not isinstance(source, str):
        raise TypeError(f"source must be the kernel's CUDA C source as a str, got {type(source).__name__}")
    if kernel is not None and (not isinstance(kernel, str) or not kernel.strip()):
        raise ValueError(f"kernel must be the kernel's name or name expression (a non-empty str), or None for the "
                         f"task's {t.kernel!r}, got {kernel!r}")
    _check.choice("gpu", gpu, preset_names())
    args, out, want = t.make()
    traced = lab_run(source, t.kernel if kernel is None else kernel, t.grid if grid is None else grid, t.block if block is None else block,
                     args, out, want, t.rule, shared_mem)
    if isinstance(traced, Feedback):
        return record(f"capstone {task}", traced)
    return record(f"capstone {task}", _judge(t, traced, gpu))


def _moved(traced: Trace, site) -> tuple:
    """(bytes, ideal bytes) `site` moves at its level, scaled to the launch: a sector 32 B, a
    wavefront 128 B."""
    _, got, ideal = site.cost
    size = traced.scale * (SECTOR_BYTES if site.space == "global" else WAVEFRONT_BYTES)
    return size * got, size * ideal


CARRIER_SHARE = 0.2
"""A site at its ideal is named as carrying a level when it moves at least this share of the level's bytes."""


def _worst(traced: Trace, over: list, got: dict, allowed: dict) -> str:
    """The sentence naming where the bytes go: at the level most over budget (`over[0]`; any
    level where none is), the site with the most bytes over its ideal (`Trace.hottest`), by line,
    column and source; where that waste is under half the level's excess, the bytes over budget
    are the same data requested again, and the sites carrying most of the level are named."""
    level = over[0] if over else None
    space = ("shared",) if level == "smem" else ("global",) if level else ("global", "shared")
    worst = traced.hottest(space)
    unit, have, ideal = worst.cost
    moved, least = _moved(traced, worst)
    text = (f"Worst line: {worst.where} ({worst.kind}), `{worst.text}`: {have / worst.instructions:.2f} {unit} per "
            f"request, ideal {ideal / worst.instructions:.2f}, {fmt_bytes(moved - least)} over its ideal.")
    sites = sorted((s for s in traced.sites if s.space in space), key=lambda s: (_moved(traced, s)[0], not s.write),
                   reverse=True)  # ties: loads first, a store is needed once
    if level is None or sum(a - b for a, b in map(functools.partial(_moved, traced), sites)) >= (
            got[level] - allowed[level]) / 2:
        return text
    carriers = [s for s in sites if _moved(traced, s)[0] >= CARRIER_SHARE * got[level]][:3] or sites[:1]
    named = "; ".join(f"{s.where} ({s.kind}), `{s.text}`: {fmt_bytes(_moved(traced, s)[0])}, "
                      f"{_moved(traced, s)[0] / got[level]:.0%}" for s in carriers)
    return (f"Where the {LEVEL_NAMES[level]} bytes go: {named}. Each request there is at or near its ideal: the "
            f"bytes over budget are the same data requested again, which a kernel within budget loads once "
            f"and reuses.")


def _binding(mine, budgeted) -> str:
    """Why a kernel over budget is not slower in the model than its budget (`Prediction`s of
    both): a time is its slowest part's, and the bytes over budget do not make that part slower."""
    ours, theirs = str(mine.bound), str(budgeted.bound)
    parts = (f"both {part_name(ours)}" if ours == theirs
             else f"{part_name(ours)} for your kernel, {part_name(theirs)} for the budget")
    where = (f", where your kernel moves {fmt_bytes(mine.workload.bytes[ours])} and the budget "
             f"{fmt_bytes(budgeted.workload.bytes[ours])}" if ours in mine.workload.bytes else "")
    return (f" Not slower in the model, because a time there is its slowest part's alone: {parts}{where}. The bytes "
            f"over budget still cost a real GPU requests and latency this bound leaves out, and the task asks for "
            f"every level within budget.")


def _judge(t: Task, traced: Trace, gpu: str) -> Feedback:
    """The score of a correct kernel's trace `traced` for task `t`: within budget at every
    level or not, with the table, where the bytes go (`_worst`) and the model's times on `gpu`
    (each with the part that binds it)."""
    allowed = budget(t.name)
    got = {lv: traced.bytes[lv] for lv in LEVELS}
    over = sorted((lv for lv in LEVELS if got[lv] > allowed[lv]),
                  key=lambda lv: got[lv] / allowed[lv] if allowed[lv] else np.inf, reverse=True)
    table = markdown_table(["level", "traced", "budget", "traced / budget"],
                           [[LEVEL_NAMES[lv], fmt_bytes(got[lv]), fmt_bytes(allowed[lv]), _ratio(got[lv], allowed[lv])]
                            for lv in LEVELS])
    line = _worst(traced, over, got, allowed)
    mine = predict(traced.workload(t.flops), gpu)
    budgeted = predict(_timed(f"{t.name} (budget)", t.flops, budget(t.name)), gpu)
    ratio = float(mine.time) / float(budgeted.time)
    times = (f"- In the model, on the {gpu}, at best (the bound: no kernel moving these bytes beats it): your kernel "
             f"{fmt_time(float(mine.time))}, the budget {fmt_time(float(budgeted.time))} ({ratio:.2f}x).")
    if over and round(ratio, 2) <= 1:
        times += _binding(mine, budgeted)
    if over:
        levels = "; ".join(f"{LEVEL_NAMES[lv]}: {_ratio(got[lv], allowed[lv])}" for lv in over)
        head = f"Correct, but over the budget at {levels}."
    else:
        head = "Correct, and within the budget at every level."
    items = f"- {line}\n{times}\n{bound_and_expected(traced, gpu, t.flops, mine.bound)}"
    return Feedback(not over, f"{head}\n\n{items}\n\n{table}")


def editor(task: str):
    """The lab editor (`gm.course.widgets.LabEditor`) for `task` (a name of `TASKS`): its
    starter and launch, scored by `score`. Chapter 8."""
    from .widgets import LabEditor

    t = _task(task)
    return LabEditor(t.starter, functools.partial(score, task), launch={"grid": t.grid, "block": t.block})


WIDGET_EXERCISES = ()
"""This chapter's widget exercises, in the order it shows them: none, its exercises are kernels."""

RELIES_ON = {
    "ex-capstone-budget": ("gemm_tile",),  # the tile is glued above; the question gives the size
    "ex-capstone-softmax": ("term:warp shuffle",),  # the reductions across the warp: the shuffle section above
    "ex-capstone-layernorm": ("term:warp shuffle",),
    "ex-capstone-gemm": (),  # the question names chapter 3's tiles; the budget table above gives the bytes
    "ex-capstone-attention": (),  # the question names chapter 5's online softmax
}
"""What each exercise needs from the page above it (tests/test_checkpoints.py); the chapter has no checkpoints."""
