"""Chapter `04_roofline_levels` (A roofline per level): its exercises' checkers and its widget exercises.

A checker takes the learner's answer and returns `Feedback`; a widget exercise (`WIDGET_EXERCISES`)
is an explorer of the model with an answer box."""

from __future__ import annotations

import datetime
import functools
import json
import math
import pathlib

import numpy as np

from .. import _check, presets
from ..hardware import WAVEFRONT_BYTES
from ..lab import trace
from ..model import predict
from ..published import expect
from ..units import fmt_bandwidth, fmt_bytes, fmt_capacity, fmt_flops, fmt_intensity, fmt_time, powers
from ..waves import block_coordinates, gemm_hbm, warm_read_time
from ..workloads import gemm
from .checks import (BYTES, FLOPS_AND_BYTES, Feedback, bound_and_expected, check_number, lab_run, lab_run_triton,
                     number_rules, units_as)
from .widgets import GPUS, Checkpoint, WidgetExercise, _power, asked, bars, upto

L2_TILES = (16, 32, 64, 128, 256, 512)


def check_l2_tile(gpu, size: int, answer) -> Feedback:
    """Chapter 4: the smallest square block tile (of L2_TILES) at which L2 stops binding an
    fp16 size^3 tensor-core GEMM on `gpu`: L2 intensity about b / 2 against the L2 ridge."""
    size = _check.one("size", size)
    p = {b: predict(gemm(size, size, size, block=(b, b), thread=(min(b, 64),) * 2, dtype="fp16"), gpu)
         for b in L2_TILES if b <= size}
    fine = [b for b, q in p.items() if q.level_times["l2"] <= q.compute_time]
    if not fine:
        raise ValueError(f"size must allow a tile that escapes L2 on {presets.gpu(gpu).name}, got {size!r}")
    b = fine[0]
    return check_number(answer, b, "elements per side", rtol=0, key=f"check_l2_tile({presets.gpu(gpu).name}, {size})",
                        doubled=FLOPS_AND_BYTES,
                        mistakes=[(b // 2, "A tile that size still reads more L2 bytes per flop than the ridge allows: "
                                   "an fp16 element is two bytes.")] if b // 2 in L2_TILES else [],
                        explain=f"A {b} x {b} fp16 tile does about {b // 2} flops per byte it reads from L2 (b / s, "
                        f"s = 2 bytes), past the {presets.gpu(gpu).name}'s fp16 L2 ridge of "
                        f"{fmt_intensity(p[b].ridge['l2'])}; the tile half its size falls short.",
                        hint="The L2 intensity of a b x b tile is about b / s; the ridge is the tensor peak over the L2 "
                        "bandwidth. Take the next power of two.")


LAB_M, LAB_N, LAB_K, LAB_GPU = 64, 64, 256, "A100-40GB"
"""The GEMM lab: C = A B for an M x K and a K x N FP32 matrix, scored on the `LAB_GPU` preset."""
LAB_FLOPS = 2 * LAB_M * LAB_N * LAB_K
"""The lab GEMM's flops, two per FMA."""
LAB_GRID, LAB_BLOCK = (LAB_N // 16, LAB_M // 16), (16, 16)
"""The starter's launch: blocks of 16 x 16 threads over 16 x 16 tiles of C, one result per thread."""
LAB_STARTER = r"""#define TILE 16
__global__ void gemm(const float* A, const float* B, float* C, int M, int N, int K) {
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE];
    int row = blockIdx.y * TILE + threadIdx.y, col = blockIdx.x * TILE + threadIdx.x;
    float acc = 0.0f;  // this thread's one result
    for (int k0 = 0; k0 < K; k0 += TILE) {
        As[threadIdx.y][threadIdx.x] = A[row * K + k0 + threadIdx.x];
        Bs[threadIdx.y][threadIdx.x] = B[(k0 + threadIdx.y) * N + col];
        __syncthreads();
        for (int k = 0; k < TILE; ++k) acc += As[threadIdx.y][k] * Bs[k][threadIdx.x];
        __syncthreads();
    }
    C[row * N + col] = acc;
}
"""


def fmas_per_shared_read(traced) -> float:
    """Chapter 4's lab: the lab GEMM's FMAs per float its threads read from shared memory,
    from `traced`, a `gm.lab.Trace` of it."""
    reads = traced.scale * sum(s.lanes * s.size / 4 for s in traced.sites if s.space == "shared" and not s.write)
    return LAB_FLOPS / 2 / reads if reads else float("inf")


@functools.cache
def _starter_expected() -> tuple:
    """(expected seconds, blocks) of `LAB_STARTER` at its own launch on `LAB_GPU` (`gm.expect`)."""
    args = [np.zeros((LAB_M, LAB_K), np.float32), np.zeros((LAB_K, LAB_N), np.float32),
            np.zeros((LAB_M, LAB_N), np.float32), LAB_M, LAB_N, LAB_K]
    traced = trace(LAB_STARTER, "gemm", LAB_GRID, LAB_BLOCK, args)
    return float(expect(traced, LAB_GPU, flops=LAB_FLOPS).time), traced.blocks


def _worse_than_starter(traced) -> str:
    """A sentence (starting with a space) when the learner's `traced` kernel, though it passes on the
    bound, has an expected time longer than the starter's; "" otherwise."""
    mine = float(expect(traced, LAB_GPU, flops=LAB_FLOPS).time)
    theirs, starter_blocks = _starter_expected()
    if mine <= theirs:
        return ""
    if traced.blocks < starter_blocks:
        mine_run = ("its one block runs on one SM" if traced.blocks == 1
                    else f"its {traced.blocks} blocks run on {traced.blocks} SMs")
        why = f"{mine_run}, where the starter's {starter_blocks} ran on {starter_blocks}"
    else:
        why = "the bound counts bytes and flops, while the expected time also counts latency, issue and idle SMs"
    return (f" The lab scores the bound, and that is met, but the expected time got worse: {fmt_time(mine)} against "
            f"the starter's {fmt_time(theirs)}, because {why}.")


def check_thread_tile_gemm(source: str, grid=LAB_GRID, block=LAB_BLOCK, kernel: str = "gemm") -> Feedback:
    """Chapter 4's lab: `kernel(A, B, C, M, N, K)` of the CUDA C `source`, launched over `grid`
    x `block`, must compute C = A B for `LAB_M` x `LAB_K` and `LAB_K` x `LAB_N` FP32 matrices
    (checked against NumPy first) through tiles in shared memory, and shared memory must not
    bind it: the traced workload with the GEMM's 2MNK flops, predicted on `LAB_GPU`, needs no
    more time for its shared-memory wavefronts than for its FP32 math."""
    rng = np.random.default_rng(0)
    a = rng.integers(-2, 3, (LAB_M, LAB_K)).astype(np.float32)  # small integers: every sum is exact
    b = rng.integers(-2, 3, (LAB_K, LAB_N)).astype(np.float32)
    args = [a, b, np.zeros((LAB_M, LAB_N), np.float32), LAB_M, LAB_N, LAB_K]
    traced = lab_run(source, kernel, grid, block, args, 2, a @ b, "C must be A B")
    if isinstance(traced, Feedback):
        return traced
    shared = [s for s in traced.sites if s.space == "shared"]
    if not shared:
        return Feedback(False, "No shared-memory access was traced: the lab asks for tiles of A and B staged in "
                        "shared memory.")
    p = predict(traced.workload(LAB_FLOPS), LAB_GPU)
    smem, math, ridge = float(p.level_times["smem"]), float(p.compute_time), float(p.ridge["smem"])
    per_fma = traced.bytes["smem"] / WAVEFRONT_BYTES / (LAB_FLOPS / 2 / 32)  # wavefronts per warp-wide FMA instruction
    keep_up = 64 / ridge / WAVEFRONT_BYTES  # a warp-wide FMA's 64 flops, at the ridge, may cost 64 / ridge bytes
    reach = (f"{fmt_intensity(float(p.intensity['smem']))} through the L1/shared-memory path against a ridge of "
             f"{fmt_intensity(ridge)}: {per_fma:.2f} wavefronts per warp-wide FMA, where the banks keep up with "
             f"{keep_up:.2f}; each float read from shared memory feeds {fmas_per_shared_read(traced):.2g} FMAs")
    expected = bound_and_expected(traced, LAB_GPU, LAB_FLOPS, p.bound)
    if smem <= math:
        return Feedback(True, f"On the {LAB_GPU} the L1/shared-memory path needs {fmt_time(smem)}, the FP32 math "
                        f"{fmt_time(math)}: {reach}, held in registers across a tile of results."
                        f"{_worse_than_starter(traced)}\n\n{expected}")
    worst = max(shared, key=lambda s: s.wavefronts)
    return Feedback(False, f"On the {LAB_GPU} the L1/shared-memory path needs {fmt_time(smem)} where the FP32 math needs "
                    f"{fmt_time(math)}: shared memory binds. The kernel reaches {reach} (most wavefronts: line "
                    f"{worst.line}). How could one value read from shared memory feed more FMAs?\n\n{expected}")


GROUPS = (1, 2, 4, 8, 16, 32, 64)


GROUP_GPUS = ("A100-40GB", "H100-SXM")


def block_group(gpu: str = "H100-SXM", size: int = 8192) -> WidgetExercise:
    """Chapter 4: the group size (of GROUPS) that minimises the HBM traffic of an fp16
    size^3 GEMM with 128 x 128 tiles, two blocks per SM, blocks drifting over all of K."""
    _check.member("gpu", gpu, GROUP_GPUS)
    size = _check.integer("size", size, 1024, 32768)

    def traffic(gpu, group, drift):
        return gemm_hbm(size, size, size, gpu=gpu, blocks_per_sm=2, order="grouped", group=group,
                        drift_k=size if drift == "all of K" else size // 8)

    def view(gpu, group, drift):
        t = traffic(gpu, group, drift)
        return bars(f"fp16 {powers(f'{size}^3')} GEMM on the {gpu}, groups of {group} block rows: <b>{fmt_bytes(t.hbm)}</b> "
                    f"through HBM, {t.rows_per_wave:.1f} rows x {t.cols_per_wave:.1f} columns of tiles per wave",
                    [("this order", t.hbm, fmt_bytes(t.hbm), True), ("compulsory", t.compulsory, fmt_bytes(t.compulsory),
                                                                     False),
                     ("no reuse", t.no_reuse, fmt_bytes(t.no_reuse), False)])

    moved = {g: traffic(gpu, g, "all of K").hbm for g in GROUPS}
    best = min(moved, key=moved.get)
    return WidgetExercise(
        "block-group", {"gpu": list(GROUP_GPUS), "group": list(GROUPS), "drift": ["all of K", "1/8 of K"]},
        view,
        number_rules(best, "block rows", 0, explain="Groups of that many rows make a wave's tiles the squarest "
                     "patch: the fewest distinct panels of A and B per wave, so the most reuse L2 can keep.",
                     hint="Hold the GPU and the drift; step through the groups and watch the red bar."),
        "group size", asks=asked(gpu=gpu, group=list(GROUPS), drift="all of K"))


L2_SIZES = tuple(2**p for p in range(18, 27))


def l2_overflow(gpu: str = "L4") -> WidgetExercise:
    """Chapter 4: the smallest vector add (fp32 elements, a power of two) whose three
    arrays no longer fit in `gpu`'s L2."""
    _check.member("gpu", gpu, GPUS)

    def view(gpu, n):
        g, nbytes = presets.gpu(gpu), 12 * n
        fits = nbytes <= g.capacity("l2")
        rate = nbytes / float(warm_read_time(g, nbytes))
        return bars(f"Vector add of {n:,} floats on the {gpu}: {fmt_capacity(nbytes)} "
                    f"{'fit' if fits else '<b>do not fit</b>'} in L2; a repeat run reads at {fmt_bytes(rate)}/s",
                    [("working set", nbytes, fmt_capacity(nbytes), not fits),
                     ("L2", g.capacity("l2"), fmt_capacity(g.capacity("l2")), False)])

    first = next(n for n in L2_SIZES if 12 * n > presets.gpu(gpu).capacity("l2"))
    return WidgetExercise(
        "l2-overflow", {"gpu": list(GPUS), "n": list(L2_SIZES)}, view,
        number_rules(first, "elements", 0, explain=f"{first:,} floats in each of three arrays is {fmt_capacity(12 * first)}, "
                     "more than the L2 holds: from here a benchmark's second run starts to read HBM.",
                     hint="Pick the GPU and walk the length up; type it as a plain number of elements."),
        "elements", labels={"n": _power}, asks=asked(gpu=gpu, n=upto(L2_SIZES, first)))


WIDGET_EXERCISES = (block_group, l2_overflow)
"""This chapter's widget exercises, in the order it shows them."""


def cp_l2_ridge(gpu: str = "H100-SXM") -> Checkpoint:
    """Chapter 4, "One roof per level": the fp16 tensor-core ridge against L2, the peak and the
    L2 rate both at the clock the tensor peak is rated at (`GPU.running`, as `GPU.ridge` takes them)."""
    g = presets.gpu(gpu)
    tc = g.running("fp16")
    clock = f"{tc.clock.value / 1e6:,.0f} MHz"
    boost = g.peak("fp16") / g.bandwidth("l2")  # the tensor peak over the L2 at the boost clock: two clocks mixed
    return Checkpoint(
        "cp-levels-l2-ridge",
        f"The {g.name}'s tensor cores peak at {fmt_flops(tc.peak('fp16'), 4)} (fp16), rated at {clock}. At that "
        f"clock its L2 serves {fmt_bandwidth(tc.bandwidth('l2'), 4)}. Where is the ridge of its L2 roof, in FLOP/B?",
        number_rules(g.ridge("l2", "fp16"), "FLOP/B", 0.02,
                     explain="A kernel needs that many flops per byte it reads from L2 before the tensor cores, "
                     "not L2, bound it.",
                     hint="A ridge is a peak over a bandwidth; put both in base units.",
                     mistakes=[(boost, f"That divides by the L2 at the {g.clock.value / 1e6:,.0f} MHz boost clock. "
                                f"The tensor peak is rated at {clock}, and L2's rate follows the clock: take both "
                                "at the same clock."),
                               (g.ridge("l2"), "That uses the FP32 peak; the question is about the tensor cores."),
                               (g.ridge("hbm", "fp16"), "That is the HBM ridge; use the L2 bandwidth.")]),
        "ridge")


def cp_working_set(n: int = 2**22) -> Checkpoint:
    """Chapter 4, "Small benchmarks lie": a vector add's working set, three fp32 arrays of `n` elements, in MiB."""
    n = _check.integer("n", n, 1, 2**40)
    return Checkpoint(
        "cp-levels-working-set",
        f"A benchmark adds two fp32 vectors of {n:,} elements into a third. How many MiB do its three arrays take "
        "together (is that more than an L2)?",
        number_rules(12 * n / 2**20, "MiB", 0.01, units=units_as("MiB", BYTES),
                     explain="Three arrays of 4-byte floats; small enough to stay in some GPUs' L2 between runs.",
                     hint="Bytes per element times elements times arrays, then divide by 2²⁰.",
                     mistakes=[(4 * n / 2**20, "That is one array; the benchmark touches three."),
                               (8 * n / 2**20, "That is the two inputs; the output is written too.")]),
        "working set")


TRITON_SHAPE = (512, 1024, 32)
"""M, N, K of chapter 4's Triton lab: 8 x 16 tiles of 64 x 64, one step of K (fp16 A and B, fp32 C)."""
TRITON_TILE = (64, 64, 32)
TRITON_TILES = (TRITON_SHAPE[0] // TRITON_TILE[0], TRITON_SHAPE[1] // TRITON_TILE[1])
"""The rows and columns of tiles of C, one program each."""
TRITON_GPU = "T4"
"""Its GPU: 40 SMs, so 128 programs run in waves of 40 and the order within a wave shows."""


def first_wave_tiles(group: int) -> int:
    """The distinct tiles of A and B (A's row tiles plus B's column tiles) that the first wave of
    the Triton lab's programs reads on `TRITON_GPU`, one program per SM, in grouped order with
    `group` rows of tiles (1: row order)."""
    rows, cols = TRITON_TILES
    group = _check.integer("group", group, 1, rows)
    r, c = block_coordinates(rows, cols, "grouped", group)
    wave = int(presets.gpu(TRITON_GPU).sms.value)
    return len(set(r[:wave].tolist())) + len(set(c[:wave].tolist()))


def cp_triton_wave(group: int = 8) -> Checkpoint:
    """Chapter 4, "The same order in Triton": the tiles of A and B the first wave reads in groups of `group`."""
    rows, cols = TRITON_TILES
    group = _check.integer("group", group, 2, rows)
    wave = int(presets.gpu(TRITON_GPU).sms.value)
    return Checkpoint(
        "cp-levels-triton-wave",
        f"The Triton lab's product has {rows} x {cols} tiles of C, one program each, and K is one step, so a "
        f"program reads one tile of A and one of B. The {TRITON_GPU} runs the first {wave} programs as one wave. "
        f"With GROUP = {group}, how many distinct tiles of A and B together does that wave read?",
        number_rules(float(first_wave_tiles(group)), "tiles", 0, whole=True,
                     explain="Fewer distinct tiles per wave is fewer bytes that must come from HBM while the wave runs.",
                     hint=f"Write out which (row, column) of C programs 0 to {wave - 1} take, then count the rows "
                     "and the columns they touch.",
                     mistakes=[(float(first_wave_tiles(1)), "That is row order (GROUP = 1): in groups the programs "
                                "walk down a group's rows before moving a column.")]),
        "tiles")


CHECKPOINTS = {"cp-levels-l2-ridge": cp_l2_ridge, "cp-levels-triton-wave": cp_triton_wave,
               "cp-levels-working-set": cp_working_set}
"""This chapter's checkpoints, in the order it shows them."""

RELIES_ON = {
    "cp-levels-l2-ridge": ("term:ridge",),  # the prompt gives the peak and the L2 rate, both at the tensor clock
    "cp-levels-triton-wave": ("term:swizzle",),  # the grouped order; the prompt gives the tiles and the wave
    "cp-levels-working-set": (),  # the prompt gives the length and the three fp32 arrays
    "ex-levels-lab-thread-tile": ("lab_reuse", "term:registers"),  # FMAs per shared-memory read; results in registers
    "ex-levels-lab-triton-order": ("term:swizzle",),  # the question gives the bytes to reach and the best group
    "ex-levels-l2-tile": ("term:ridge",),  # the question gives the peak and the L2 rate at the tensor clock
    "ex-levels-explore-group": ("term:wave", "term:swizzle"),  # the question gives the blocks of an H100 wave
    "ex-levels-explore-overflow": (),  # the question gives the L4's L2; three fp32 arrays
}
"""What each checkpoint and exercise needs from the page above it (tests/test_checkpoints.py)."""


TRITON_GROUPS = (1, 4, 8)
TRITON_RECORD = presets.DATA / "triton_lab.json"
"""The lab's result as recorded (`python -m gpumodel.course.roofline_levels`), shown where Triton is not installed."""


def recorded_triton_order(path=None) -> dict:
    """The Triton lab's recorded result (`TRITON_RECORD`, or `path`), read strictly: "how" (text),
    "gpu" (a preset) and "bytes", for each of `TRITON_GROUPS` the positive "traced" and "model"
    bytes; a DataError naming the file and the key otherwise."""
    path = pathlib.Path(path or TRITON_RECORD)
    try:
        data = json.loads(path.read_text())
    except ValueError as err:
        raise presets.DataError(f"{path.name}: not valid JSON ({err})") from None
    if not isinstance(data, dict) or set(data) != {"how", "gpu", "bytes"}:
        raise presets.DataError(f"{path.name} must hold how, gpu and bytes, and nothing else")
    if not isinstance(data["how"], str) or data["gpu"] not in presets.preset_names():
        raise presets.DataError(f"{path.name}: how must be text and gpu a preset, got {data['how']!r}, {data['gpu']!r}")
    rows = data["bytes"]
    if not isinstance(rows, dict) or set(rows) != {str(g) for g in TRITON_GROUPS}:
        raise presets.DataError(f"{path.name}.bytes must hold the groups {list(TRITON_GROUPS)}, got {rows!r}")
    for group, row in rows.items():
        if not isinstance(row, dict) or set(row) != {"traced", "model"} or not all(
                isinstance(v, (int, float)) and not isinstance(v, bool) and 0 < v < math.inf for v in row.values()):
            raise presets.DataError(f"{path.name}.bytes.{group} must hold positive traced and model bytes, got {row!r}")
    return data


def triton_order(record: bool = False) -> dict:
    """Chapter 4's Triton lab: the grouped matmul (`triton_matmul`) traced in Triton's
    interpreter for each group size of `TRITON_GROUPS`, with the HBM bytes of its loads of A and
    B on `TRITON_GPU` (`Trace.bytes_on`, C's writes left out) beside the wave model's
    (`gemm_hbm`, grouped order). Where Triton is not installed, the recorded result (its
    `"recorded"` entry says with what); `record` writes the traced one there."""
    try:
        from . import triton_matmul
    except ImportError:
        return recorded_triton_order()
    import triton

    from ..lab import trace_triton
    from ..lab.triton_trace import INSTALL

    m, n, k = TRITON_SHAPE
    bm, bn, bk = TRITON_TILE
    rng = np.random.default_rng(0)
    a, b = rng.random((m, k)).astype(np.float16), rng.random((k, n)).astype(np.float16)
    rows = {}
    for group in TRITON_GROUPS:
        c = np.zeros((m, n), np.float32)
        traced = trace_triton(triton_matmul.grouped_matmul, (m // bm * (n // bn),), [a, b, c, m, n, k],
                              BM=bm, BN=bn, BK=bk, GROUP=group)
        if not np.allclose(c, a.astype(np.float32) @ b.astype(np.float32), rtol=1e-3):
            raise AssertionError("the grouped matmul's C is not A B")  # the check before the bytes
        model = gemm_hbm(m, n, k, block=(bm, bn), dtype="fp16", gpu=TRITON_GPU, order="grouped", group=group)
        rows[str(group)] = {"traced": traced.bytes_on(TRITON_GPU)["hbm"] - 4 * m * n, "model": model.hbm - 2 * m * n}
    result = {"how": f"traced now, in the interpreter of Triton {triton.__version__}", "gpu": TRITON_GPU, "bytes": rows}
    if record:
        note = (f"recorded on {datetime.date.today()} with Triton {triton.__version__} by `python -m "
                f"gpumodel.course.roofline_levels`; to trace it here, {INSTALL}")
        TRITON_RECORD.write_text(json.dumps({**result, "how": note}, indent=1) + "\n")
    return result


TRITON_ORDER_STARTER = """import triton
import triton.language as tl


@triton.jit
def matmul(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
           GROUP: tl.constexpr):
    pid = tl.program_id(0)
    across = tl.cdiv(N, BN)
    pm = pid // across  # row order: a row of tiles of C, column after column
    pn = pid % across
    rm = pm * BM + tl.arange(0, BM)
    rn = pn * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :])
        b = tl.load(b_ptr + (k + rk)[:, None] * N + rn[None, :])
        acc += tl.dot(a, b)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc)
"""
"""Chapter 4's Triton lab's starter: the section's product with its programs in row order, GROUP unused."""


def fewest_hbm_bytes() -> tuple:
    """(the group size, the HBM bytes of A and B) of the grouped order that reads the fewest on
    `TRITON_GPU`, in the wave model (`gemm_hbm`), over every group size from 1 to the rows of tiles."""
    m, n, k = TRITON_SHAPE
    bytes_by_group = {g: gemm_hbm(m, n, k, block=TRITON_TILE[:2], dtype="fp16", gpu=TRITON_GPU, order="grouped",
                                  group=g).hbm - 2 * m * n for g in range(1, TRITON_TILES[0] + 1)}
    best = min(bytes_by_group, key=bytes_by_group.get)
    return best, bytes_by_group[best]


def check_triton_order(source: str, GROUP: int = 1, kernel: str = "matmul") -> Feedback:  # noqa: N803 (Triton's name)
    """Chapter 4's Triton lab: `kernel(a, b, c, M, N, K, BM, BN, BK, GROUP)` of the Python `source`,
    a program per 64 x 64 tile of C over the `TRITON_SHAPE` product (fp16 A and B, fp32 C), must
    compute C = A B (against NumPy first), and its loads of A and B must ask no more of HBM on
    `TRITON_GPU`, in the wave model of its programs in launch order (`TritonTrace.bytes_on`), than
    the best grouped order does (`fewest_hbm_bytes`). `GROUP` is passed to it as a meta-parameter."""
    m, n, k = TRITON_SHAPE
    bm, bn, bk = TRITON_TILE
    rng = np.random.default_rng(0)
    a = rng.integers(-2, 3, (m, k)).astype(np.float16)  # small integers: every sum is exact
    b = rng.integers(-2, 3, (k, n)).astype(np.float16)
    args = [a, b, np.zeros((m, n), np.float32), m, n, k]
    traced = lab_run_triton(source, kernel, (TRITON_TILES[0] * TRITON_TILES[1],), args, 2,
                            a.astype(np.float32) @ b.astype(np.float32), "C must be A B",
                            BM=bm, BN=bn, BK=bk, GROUP=_check.one("GROUP", GROUP))
    if isinstance(traced, Feedback):
        return traced
    got = traced.bytes_on(TRITON_GPU)["hbm"] - 4 * m * n  # C's writes left out: every order writes them once
    group, fewest = fewest_hbm_bytes()
    if got <= fewest:
        return Feedback(True, f"{fmt_bytes(got)} of A and B from HBM on the {TRITON_GPU}, as few as the best grouped "
                        f"order reads (GROUP = {group}): each wave of {int(presets.gpu(TRITON_GPU).sms.value)} programs "
                        "shares its tiles of A and B.")
    return Feedback(False, f"{fmt_bytes(got)} of A and B from HBM on the {TRITON_GPU}, where the best grouped order "
                    f"reads {fmt_bytes(fewest)}. Which tiles does the first wave of "
                    f"{int(presets.gpu(TRITON_GPU).sms.value)} programs read, and how could the order of `pid` make "
                    "it read fewer distinct ones?")


def triton_source() -> str:
    """The lab's Triton kernel as its file has it (read, not imported: no Triton needed)."""
    text = (presets.DATA.parent / "course" / "triton_matmul.py").read_text()
    return text[text.index("@triton.jit"):]


if __name__ == "__main__":
    print(json.dumps(triton_order(record=True), indent=1))
