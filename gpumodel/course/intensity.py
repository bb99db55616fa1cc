"""Chapter `02_intensity` (Arithmetic intensity, the roofline and fusion): its exercises' checkers and its widget exercises.

A checker takes the learner's answer and returns `Feedback`; a widget exercise (`WIDGET_EXERCISES`)
is an explorer of the model with an answer box."""

from __future__ import annotations

import numpy as np

from .. import _check, presets
from ..model import predict
from ..units import fmt_bandwidth, fmt_flops, fmt_percent
from ..workloads import elementwise_chain, seed_kernels, warp_sectors
from .checks import FLOPS_AND_BYTES, Feedback, check_number, lab_run, lab_run_triton, number_rules
from .widgets import GPUS, Checkpoint, WidgetExercise, asked, bars, prediction_view, upto


def check_fusion_limit(gpu, dtype: str, answer) -> Feedback:
    """Chapter 2: the most that fusing a chain of one-flop elementwise ops on `dtype`
    elements can gain on `gpu`, however long the chain (unfused time over fused)."""
    ops = 10**6  # long enough that both are past their turning points
    unfused, fused = (predict(elementwise_chain(2**26, ops, f, dtype), gpu) for f in (False, True))
    gain = float(unfused.time / fused.time)
    balance = presets.gpu(gpu).ridge("hbm")
    return check_number(answer, gain, "times", rtol=0.02, key=f"check_fusion_limit({gpu}, {dtype})",
                        units={"x": 1, "×": 1}, doubled=FLOPS_AND_BYTES,
                        mistakes=[(balance, "That is the machine balance, flops per byte; the gain compares the time "
                                   "of one op unfused (its bytes through HBM) with its time fused."),
                                  (float(unfused.time / fused.compute_time),
                                   "Too high by a factor of two: that is the gain if the fused chain were bound by "
                                   "its arithmetic alone. Chapter 1's model charges every flop its register traffic "
                                   "too: which of the two takes longer per op?")],
                        explain=f"Unfused, every op costs a trip through HBM; fused, a long chain is bound by "
                        f"{fused.bound} instead, so the gain stops growing at the ratio of those two per-op costs.",
                        hint="A long fused chain is no longer HBM-bound: find what bounds it, and divide the per-op "
                        "costs.")


LAB_N, LAB_GRID, LAB_BLOCK = 2**14, 4, 128
"""The lab's launch: n floats over 4 blocks of 128 threads, 32 elements per thread."""
LAB_STARTER = r"""__global__ void scale_by_two(const float* x, float* y, int n) {
    // each thread takes a contiguous chunk of the array, as a CPU thread would
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    int per = n / (gridDim.x * blockDim.x);
    for (int k = 0; k < per; ++k) y[t * per + k] = 2.0f * x[t * per + k];
}
"""


def check_coalesced_kernel(source: str, kernel: str = "scale_by_two") -> Feedback:
    """Chapter 2's lab: `kernel(x, y, n)` of the CUDA C `source`, launched as `LAB_GRID` x
    `LAB_BLOCK` over `LAB_N` floats, must compute y = 2x with its global loads touching no
    more sectors per request than the ideal (traced on the CPU by `gm.lab.trace`)."""
    x = np.arange(LAB_N, dtype=np.float32)
    traced = lab_run(source, kernel, LAB_GRID, LAB_BLOCK, [x, np.zeros_like(x), LAB_N], 1, 2 * x,
                     "y must be 2 x, every element computed by exactly one thread")
    if isinstance(traced, Feedback):
        return traced
    loads = traced.counts()["global loads"]
    got, ideal = loads["sectors"] / loads["requests"], loads["ideal"] / loads["requests"]
    if got <= ideal:
        return Feedback(True, f"{got:.2f} sectors per load request, the ideal: each warp reads 32 consecutive floats.")
    return Feedback(False, f"{got:.2f} sectors per load request where {ideal:.2f} would do (line {traced.hottest().line}). "
                    "At each step of the loop, neighbouring threads must read neighbouring floats.")



CHAIN_SCALE, CHAIN_BIAS = 0.5, -0.25
"""The chain lab's constants: y = relu(x) * 0.5 - 0.25."""
CHAIN_STARTER = r"""__global__ void chain(const float* x, float* tmp, float* y, float s, float b, int n) {
    // three passes, as three kernels would make: each reads and writes an array in global memory
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;  // a thread past the end has no element
    tmp[i] = fmaxf(x[i], 0.0f);
    tmp[i] = tmp[i] * s;
    y[i] = tmp[i] + b;
}
"""


def check_fused_chain(source: str, kernel: str = "chain") -> Feedback:
    """Chapter 2's fusion lab: `kernel(x, tmp, y, s, b, n)` of the CUDA C `source`, launched as
    `LAB_GRID` x `LAB_BLOCK` threads, one element each, must compute y = relu(x) s + b and
    move no more global bytes than the compulsory ones, x read once and y written once."""
    n = LAB_GRID * LAB_BLOCK
    x = np.linspace(-1, 1, n, dtype=np.float32)
    want = np.maximum(x, 0) * np.float32(CHAIN_SCALE) + np.float32(CHAIN_BIAS)
    args = [x, np.zeros_like(x), np.zeros_like(x), CHAIN_SCALE, CHAIN_BIAS, n]
    traced = lab_run(source, kernel, LAB_GRID, LAB_BLOCK, args, 2, want, "y must be relu(x) * s + b")
    if isinstance(traced, Feedback):
        return traced
    got, compulsory = traced.bytes["l2"], 2 * x.nbytes
    if got <= compulsory:
        return Feedback(True, f"{got:,.0f} B through L2, the compulsory {compulsory:,} B: x read once, y written "
                        "once, the intermediates in a register.")
    return Feedback(False, f"{got:,.0f} B through L2 where {compulsory:,} B would do ({got / compulsory:.2g}x; worst: "
                    f"line {traced.hottest().line}; the trace counts the code as compiled, which already keeps some "
                    "reloads in registers). Which of these loads and stores carry a value that never needs to leave "
                    "the thread?")


SOFTMAX_ROWS, SOFTMAX_COLS, SOFTMAX_BLOCK = 32, 200, 256
"""Chapter 2's Triton lab: a softmax over each row of a 32 x 200 FP32 matrix, a program per row,
its row in one block of 256 lanes (the last 56 masked off)."""

TRITON_SOFTMAX_STARTER = """import triton
import triton.language as tl


@triton.jit
def softmax(x_ptr, e_ptr, y_ptr, cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)  # one program per row
    lanes = tl.arange(0, BLOCK)
    keep = lanes < cols
    at = row * cols + lanes
    x = tl.load(x_ptr + at, mask=keep, other=-float("inf"))
    tl.store(e_ptr + at, tl.exp(x - tl.max(x, axis=0)), mask=keep)  # the exponentials, to global memory
    e = tl.load(e_ptr + at, mask=keep, other=0.0)  # and back
    tl.store(y_ptr + at, e / tl.sum(e, axis=0), mask=keep)
"""


def check_triton_softmax(source: str, kernel: str = "softmax") -> Feedback:
    """Chapter 2's Triton lab: `kernel(x, e, y, cols, BLOCK)` of the Python `source`, a program
    per row of a `SOFTMAX_ROWS` x `SOFTMAX_COLS` FP32 matrix, must compute each row's softmax into
    y and move no more bytes through L2 than the compulsory ones, x read once and y written once
    (`e` is scratch it may leave unused)."""
    x = (np.random.default_rng(2).standard_normal((SOFTMAX_ROWS, SOFTMAX_COLS)) * 4).astype(np.float32)
    shifted = np.exp(x - x.max(axis=1, keepdims=True))
    want = shifted / shifted.sum(axis=1, keepdims=True)
    args = [x, np.zeros_like(x), np.zeros_like(x), SOFTMAX_COLS]
    traced = lab_run_triton(source, kernel, (SOFTMAX_ROWS,), args, 2, want, "each row of y must be softmax(x)",
                            BLOCK=SOFTMAX_BLOCK)
    if isinstance(traced, Feedback):
        return traced
    got, compulsory = traced.bytes["l2"], 2 * x.nbytes
    if got <= compulsory:
        return Feedback(True, f"{got:,.0f} B through L2, the compulsory {compulsory:,} B: each row read once and "
                        "written once, its exponentials kept in the program's registers.")
    lines = sorted({s.line for s in traced.sites})
    return Feedback(False, f"{got:,.0f} B through L2 where {compulsory:,} B would do ({got / compulsory:.2g}x; a "
                    "program pays at L2 once for each sector it touches, so reading back what it wrote costs nothing "
                    "more). A program holds its whole row as a block of values: which of its loads and stores (lines "
                    f"{', '.join(map(str, lines))}) only carry a value it already has?")


STRIDES = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64)


def _ordinal(n: int) -> str:
    """2 -> "2nd", 3 -> "3rd", 11 -> "11th", 24 -> "24th"."""
    suffix = "th" if n % 100 in (11, 12, 13) else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


ELEM_BYTES = (1, 2, 4, 8)


def stride_sectors(elem_bytes: int = 2) -> WidgetExercise:
    """Chapter 2: the smallest stride (elements of `elem_bytes`) past which a warp's read
    touches no more sectors."""
    _check.member("elem_bytes", elem_bytes, ELEM_BYTES)

    def view(stride, elem):
        sectors = float(warp_sectors(stride, elem))
        useful, moved = 32 * elem, 32 * sectors
        which = "every" if stride == 1 else f"every {_ordinal(stride)}"
        return bars(f"A warp reading {which} {elem}-byte element: <b>{sectors:g} sector{'s' if sectors != 1 else ''}</b>, "
                    f"{fmt_percent(useful / moved, 3)} of the bytes moved are used",
                    [("sectors", sectors, f"{sectors:g} of 32", sectors == 32), ("bytes used", useful, f"{useful} B", False),
                     ("bytes moved", moved, f"{moved:g} B", False)])

    smallest = next(s for s in STRIDES if all(warp_sectors(t, elem_bytes) == warp_sectors(s, elem_bytes)
                                              for t in STRIDES if t >= s))
    return WidgetExercise(
        "stride-sectors", {"stride": list(STRIDES), "elem": list(ELEM_BYTES)}, view,
        number_rules(smallest, "elements", 0, explain=f"{smallest} x {elem_bytes} B = 32 B: each thread now has a "
                     "sector of its own, and no stride can cost more than 32 sectors.",
                     hint="Set the element size, then walk the stride up until the sector count stops growing."),
        "stride (elements)", labels={"elem": lambda b: f"{b}-byte elements"},
        asks=asked(stride=list(STRIDES), elem=elem_bytes))


CHAIN_OPS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512)


CHAIN_DTYPES = ("fp32", "fp16")


def fused_chain(gpu: str = "H100-SXM", dtype: str = "fp16") -> WidgetExercise:
    """Chapter 2: the shortest fused chain (ops, of CHAIN_OPS) of `dtype` elements that HBM
    no longer bounds on `gpu`."""
    _check.member("gpu", gpu, GPUS)
    _check.member("dtype", dtype, CHAIN_DTYPES)

    def workload(ops, fused, dtype):
        return elementwise_chain(2**26, ops, fused == "fused", dtype)

    shortest = next(o for o in CHAIN_OPS if predict(workload(o, "fused", dtype), gpu).bound != "hbm")
    return WidgetExercise(
        "fused-chain", {"gpu": list(GPUS), "ops": list(CHAIN_OPS), "fused": ["unfused", "fused"],
                        "dtype": list(CHAIN_DTYPES)},
        lambda gpu, ops, fused, dtype: prediction_view(workload(ops, fused, dtype), gpu,
                                                       f"{ops} ops, {fused}, {dtype}, 2²⁶ elements"),
        number_rules(shortest, "ops", 0, explain=f"Fused, {shortest} one-flop ops on {dtype} elements make "
                     f"{shortest} flops per {2 * (2 if dtype != 'fp32' else 4)} bytes of HBM, past the point where "
                     "the ALUs (and the register traffic they need) take longer than the trip through HBM.",
                     hint="Fix the GPU, fused and the dtype; double the ops until the red bar leaves HBM.",
                     doubled=FLOPS_AND_BYTES),
        "ops", asks=asked(gpu=gpu, ops=upto(CHAIN_OPS, shortest), fused="fused", dtype=dtype))


WIDGET_EXERCISES = (stride_sectors, fused_chain)
"""This chapter's widget exercises, in the order it shows them."""


def cp_vector_add() -> Checkpoint:
    """Chapter 2, "Intensity and machine balance": the HBM intensity of an fp32 vector add."""
    w = seed_kernels()["vector_add"]
    intensity = float(w.flops / w.bytes["hbm"])
    return Checkpoint(
        "cp-intensity-vector-add",
        "What is the arithmetic intensity against HBM, in FLOP/B, of an fp32 vector add c = a + b "
        "(one add per element)?",
        number_rules(intensity, "FLOP/B", 0.02,
                     explain="One flop for three floats through HBM: two read, one written.",
                     hint="Count the bytes of every array that crosses HBM for one element.",
                     mistakes=[(1 / 8, "That counts the two reads; c is written through HBM too."),
                               (1 / 4, "That counts one array; a vector add reads two and writes one."),
                               (1 / 3, "That counts floats, not bytes: a float is four bytes.")]),
        "intensity")


ELEMENT_BYTES = 8
"""cp_balance's elementwise kernel: one FP32 value read and one written per element."""


def cp_balance(gpu: str = "H100-SXM") -> Checkpoint:
    """Chapter 2, "Intensity and machine balance": the flops per element an elementwise FP32
    kernel (one value read, one written: `ELEMENT_BYTES` through HBM) needs on `gpu` to reach
    its FP32 machine balance, past which it is compute-bound."""
    g = presets.gpu(gpu)
    balance = g.ridge("hbm")
    return Checkpoint(
        "cp-intensity-balance",
        f"The {g.name} does {fmt_flops(g.peak_flops, 4)} in FP32 and reads HBM at {fmt_bandwidth(g.bandwidth('hbm'), 4)}. "
        "An elementwise kernel reads one FP32 value and writes one per element. How many flops must it do per element "
        "to reach the machine balance, past which it is compute-bound?",
        number_rules(ELEMENT_BYTES * balance, "flops", 0.02,
                     explain="The machine balance, peak flops over HBM bandwidth, is flops per byte; each element "
                     f"moves {ELEMENT_BYTES} bytes, four read and four written.",
                     hint="Find the machine balance in flops per byte first, then count the bytes one element moves.",
                     mistakes=[(balance, "That is the machine balance, flops per byte; an element moves more than "
                                "one byte."),
                               (ELEMENT_BYTES // 2 * balance, "That counts the bytes read; the value written crosses "
                                "HBM too."),
                               (ELEMENT_BYTES * g.bandwidth("hbm") / g.peak_flops, "That is bytes per flop, the "
                                "inverse: divide the flops by the bytes.")]),
        "flops per element")


def cp_roofline(gpu: str = "H100-SXM", intensity: float = 4.0) -> Checkpoint:
    """Chapter 2, "The roofline": the rate a kernel of `intensity` (FLOP/B, positive) attains on `gpu` (FP32)."""
    g = presets.gpu(gpu)
    intensity = _check.real("intensity", intensity, least=1e-6, most=1e6)
    rate = min(g.peak_flops, intensity * g.bandwidth("hbm"))
    return Checkpoint(
        "cp-intensity-roofline",
        f"On the {g.name}'s FP32 roofline (peak {fmt_flops(g.peak_flops, 4)}, HBM {fmt_bandwidth(g.bandwidth('hbm'), 4)}), "
        f"what rate, in TFLOP/s, can a kernel of {intensity:g} FLOP/B attain?",
        number_rules(rate / 1e12, "TFLOP/s", 0.02, units={"GFLOP/s": 1e-3, "PFLOP/s": 1e3},
                     explain="Below the ridge the slanted roof, intensity times bandwidth, is the limit.",
                     hint="Compare the intensity with the ridge first: which roof is lower there?",
                     mistakes=[(g.peak_flops / 1e12, "That is the flat roof, the peak; at this intensity the kernel is "
                                "under the slanted one.")]),
        "attainable rate")


def cp_sectors(stride: int = 4, elem: int = 4) -> Checkpoint:
    """Chapter 2, "Coalescing": the 32-byte sectors a warp's strided read touches (`stride` in
    elements, `elem` bytes, one of `ELEM_BYTES`). The page works strides 1, 2 and 8 of floats;
    the default asks for one it did not."""
    stride = _check.integer("stride", stride, 1, 2**16)
    if _check.integer("elem", elem, 1, max(ELEM_BYTES)) not in ELEM_BYTES:
        raise ValueError(f"elem must be one of {ELEM_BYTES} (bytes), got {elem!r}")
    sectors = float(warp_sectors(stride, elem))
    used = 32 * elem / (32 * sectors)
    mistakes = [(float(warp_sectors(1, elem)), "That is a contiguous read; the stride spreads the elements out.")]
    if sectors != 32:
        mistakes.append((32.0, "Neighbouring threads still share sectors at this stride."))
    if stride != 2 and warp_sectors(2, elem) != sectors:
        mistakes.append((float(warp_sectors(2, elem)), "That is a stride of 2, the page's case; this stride spreads "
                         "the elements further."))
    return Checkpoint(
        "cp-intensity-sectors",
        f"The 32 threads of a warp read {elem}-byte elements with a stride of {stride} elements (thread t reads "
        f"element {stride}t). How many 32-byte sectors does the read touch?",
        number_rules(sectors, "sectors", 0, explain=f"The warp spans {32 * stride * elem:,} bytes; each sector it "
                     f"touches is {fmt_percent(used, 3)} used.",
                     hint="Work out the span of addresses the warp covers, in bytes, and divide by the sector size; "
                     "no thread can touch more than one sector.",
                     mistakes=mistakes),
        "sectors")


CHECKPOINTS = {"cp-intensity-vector-add": cp_vector_add, "cp-intensity-balance": cp_balance,
               "cp-intensity-roofline": cp_roofline,
               "cp-intensity-sectors": cp_sectors}
"""This chapter's checkpoints, in the order it shows them."""

RELIES_ON = {
    "cp-intensity-vector-add": (),  # the question names the kernel; the page defines intensity above it
    "cp-intensity-balance": ("term:machine balance",),  # the question gives the peak and the bandwidth
    "cp-intensity-roofline": (),  # the question gives the peak, the bandwidth and the intensity
    "cp-intensity-sectors": (),  # the question gives the stride and the element size
    "ex-intensity-lab-coalesce": ("sectors_1",),
    "ex-intensity-lab-fuse": (),
    "ex-intensity-lab-triton-softmax": (),
    "ex-intensity-fusion-limit": ("formulas:The memory hierarchy", "term:machine balance"),
    "ex-intensity-explore-stride": (),  # the explorer shows every count
    "ex-intensity-explore-fusion": (),  # the explorer shows every bound
}
"""What each checkpoint and exercise needs from the page above it (tests/test_checkpoints.py)."""
