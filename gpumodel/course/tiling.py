"""Chapter `03_tiling` (Tiling): its exercises' checkers and its widget exercises.

A checker takes the learner's answer and returns `Feedback`; a widget exercise (`WIDGET_EXERCISES`)
is an explorer of the model with an answer box."""

from __future__ import annotations

import numpy as np

from .. import _check, presets
from ..model import predict
from ..occupancy import limits, occupancy
from ..simulate import bank_conflicts, warp_addresses
from ..tiles import is_legal, registers_estimate, smem_bytes
from ..units import fmt_intensity
from ..workloads import gemm
from .checks import FLOPS_AND_BYTES, Feedback, _wrong_type, check_number, judge, lab_run, number_rules
from .widgets import GPUS, Checkpoint, WidgetExercise, asked, bars, prediction_view, upto


def check_operand_tile(gpu, answer) -> Feedback:
    """Chapter 3: the square thread tile t at which the register-blocked kernel's operand
    reads from shared memory (t/4 FLOP/B for FP32) meet `gpu`'s shared-memory ridge."""
    g = presets.gpu(gpu)
    ridge = g.ridge("smem")
    t = 4 * ridge
    return check_number(answer, t, "results per side", rtol=0.01, key=f"check_operand_tile({g.name})",
                        doubled=FLOPS_AND_BYTES,
                        mistakes=[(ridge, "That sets t equal to the ridge: a float is four bytes, and a thread reads "
                                   "a column of A and a row of B for its t² FMAs.")],
                        explain=f"The ridge is {g.fp32_lanes_per_sm.value:g} lanes x 2 flops over 32 banks x 4 B = "
                        f"{fmt_intensity(ridge)}; t / 4 meets it at t = {t:g}. The tile copies add bytes, so a tile "
                        "exactly at the ridge still lands on the shared-memory side.",
                        hint="Per k step a thread reads 2t floats and does t² FMAs; both rates scale with SMs and "
                        "clock, which cancel.")


def padding_rules(rows: int, cols: int) -> dict:
    """Chapter 3: the rules of "the smallest padding, in 4-byte words per row, that makes a
    warp's column read of a `rows` x `cols` float tile conflict-free": every padding up to a
    bank cycle is judged by the conflicts it leaves."""
    rows, cols = _check.one("rows", rows), _check.one("cols", cols)
    if rows < 32:
        raise ValueError(f"rows must be at least 32 (a warp reads 32 rows of a column), got {rows!r}")
    degree = {p: bank_conflicts(warp_addresses((rows, cols), p, "column")) for p in range(33)}
    smallest = next(p for p in range(33) if degree[p] == 1)
    mistakes = [(p, f"With that padding the column read is still {degree[p]}-way conflicted." if degree[p] > 1
                 else "Conflict-free, but less padding would do, and padding costs shared memory.")
                for p in range(33) if p != smallest]
    return number_rules(smallest, "words", 0, whole=True, mistakes=mistakes,
                        ranges=[(33, 1e308, "That is more than a bank cycle of 32 words; a few words do.")],
                        explain=f"Rows of {cols + smallest} words put the 32 elements of a column in 32 different banks.",
                        hint="A column's 32 elements are a row apart: a row of w words moves the bank by w mod 32.")


def check_padding(rows: int, cols: int, answer) -> Feedback:
    """Chapter 3: the padding, in 4-byte words per row, that makes a warp's column read of a
    `rows` x `cols` float tile conflict-free (the smallest such padding is asked for)."""
    rules = padding_rules(rows, cols)
    if answer is not None and not isinstance(answer, str):
        value = _check.answer(answer)
        if value is None or value < 0 or value != int(value):
            return _wrong_type(answer, "a whole number of words, 0 or more")
    return judge(rules, answer, "a whole number of words, 0 or more", f"check_padding({rows}, {cols})")


def check_occupancy(gpu, threads: int, registers: int, smem: int, answer) -> Feedback:
    """Chapter 3: resident warps per SM for a launch of `threads` per block, `registers`
    per thread and `smem` bytes of shared memory per block on `gpu`."""
    threads, registers = _check.one("threads", threads), _check.one("registers", registers)
    smem = _check.one("smem", smem, zero=True)
    o = occupancy(gpu, threads, registers, smem)
    limits = ", ".join(f"{k} allow {v:g} blocks" for k, v in o.per_resource.items())
    per_block = threads // 32 + (threads % 32 > 0)
    mistakes = {float(v * per_block): f"That is what the {k} limit alone allows; another limit binds first."
                for k, v in o.per_resource.items() if v * per_block != o.warps and k != "blocks"}
    if o.blocks != o.warps:
        mistakes[float(o.blocks)] = "That counts blocks; the question asks for warps (32 threads each)."
    return check_number(answer, float(o.warps), "warps", rtol=0, key=f"check_occupancy({gpu}, {threads}, {registers}, {smem})",
                        mistakes=list(mistakes.items()),
                        hint="Work out how many blocks each resource allows (threads, registers, shared memory, "
                        "blocks); the smallest count binds.",
                        explain=f"{limits}; the {o.limiter} limit binds: {o.blocks:g} blocks of "
                        f"{threads // 32 + (threads % 32 > 0)} warps.")


LAB_N, LAB_BLOCK = 64, (32, 8)
"""The transpose lab's launch: a 64 x 64 matrix in 32 x 32 tiles, 2 x 2 blocks of 32 x 8 threads."""
LAB_STARTER = r"""#define TILE 32
#define ROWS 8
__global__ void transpose(const float* in, float* out, int n) {
    __shared__ float tile[TILE][TILE];
    int x = blockIdx.x * TILE + threadIdx.x;
    for (int j = 0; j < TILE; j += ROWS)  // a warp writes a row of the tile
        tile[threadIdx.y + j][threadIdx.x] = in[(blockIdx.y * TILE + threadIdx.y + j) * n + x];
    __syncthreads();
    x = blockIdx.y * TILE + threadIdx.x;
    for (int j = 0; j < TILE; j += ROWS)  // and reads a column of it
        out[(blockIdx.x * TILE + threadIdx.y + j) * n + x] = tile[threadIdx.x][threadIdx.y + j];
}
"""


def check_conflict_free_transpose(source: str, kernel: str = "transpose") -> Feedback:
    """Chapter 3's lab: `kernel(in, out, n)` of the CUDA C `source`, launched over `LAB_N` x
    `LAB_N` floats as 2 x 2 blocks of `LAB_BLOCK` threads, must write out = in^T with every
    shared-memory load and store taking the ideal wavefronts: no bank conflict."""
    a = np.arange(LAB_N * LAB_N, dtype=np.float32).reshape(LAB_N, LAB_N)
    blocks = (LAB_N // 32, LAB_N // 32)
    traced = lab_run(source, kernel, blocks, LAB_BLOCK, [a, np.zeros_like(a), LAB_N], 1, a.T,
                     "out must be the transpose of in")
    if isinstance(traced, Feedback):
        return traced
    counts = traced.counts()
    got = sum(counts[f"shared {kind}"]["wavefronts"] for kind in ("loads", "stores"))
    ideal = sum(counts[f"shared {kind}"]["ideal"] for kind in ("loads", "stores"))
    if not ideal:
        return Feedback(False, "No shared-memory access was traced: the lab asks for the transpose through a tile.")
    if got <= ideal:
        return Feedback(True, f"{got:,.0f} shared-memory wavefronts, the ideal: every warp's 32 words fall in 32 "
                        "different banks.")
    return Feedback(False, f"{got:,.0f} shared-memory wavefronts where {ideal:,.0f} would do, {got - ideal:,.0f} "
                    f"of them bank conflicts (worst: line {traced.hottest().line}). Which bank holds "
                    "each word of the column a warp reads?")


THREAD_TILES = (1, 2, 4, 8, 16)


TILE_BLOCKS = (16, 32, 64, 128)


def _illegal(gpu, block: int, thread: int) -> str:
    """Why square `block` tiles with square `thread` tiles cannot launch on `gpu` (`is_legal`
    says they cannot): every limit they break, in `is_legal`'s order."""
    lim, threads = limits(gpu), (block // thread) ** 2
    why = []
    if block % thread:
        why.append(f"{thread} does not divide {block}")
    elif not 32 <= threads <= lim.max_threads_per_block:
        why.append(f"{threads} threads per block, where 32 to {lim.max_threads_per_block} launch")
    if smem_bytes(block, block) > lim.max_smem_per_block:
        why.append(f"{smem_bytes(block, block):g} B of shared memory per block, over its "
                   f"{lim.max_smem_per_block:g} B")
    if registers_estimate(thread, thread) > lim.max_registers_per_thread:
        why.append(f"about {registers_estimate(thread, thread):g} registers per thread, over the "
                   f"{lim.max_registers_per_thread:g} a thread may have")
    return "; ".join(why)


def thread_tile(gpu: str = "A100-40GB", block: int = 128) -> WidgetExercise:
    """Chapter 3: the smallest square thread tile at which shared memory stops binding the
    4096^3 FP32 GEMM with `block` x `block` tiles on `gpu`."""
    _check.member("gpu", gpu, GPUS)
    _check.member("block", block, TILE_BLOCKS)

    def workload(block, thread):
        return gemm(4096, 4096, 4096, block=(block, block), thread=(thread, thread))

    def view(gpu, block, thread):
        if not is_legal(gpu, block, block, thread, thread):
            raise ValueError(f"{block} x {block} tiles with {thread} x {thread} per thread cannot launch on the "
                             f"{gpu}: {_illegal(gpu, block, thread)}")
        return prediction_view(workload(block, thread), gpu, f"{block} x {block} tiles, {thread} x {thread} per thread")

    launch = [t for t in THREAD_TILES if is_legal(gpu, block, block, t, t)]
    smallest = next((t for t in launch if predict(workload(block, t), gpu).bound != "smem"), None)
    if smallest is None:
        raise ValueError(f"gpu and block must admit a thread tile of {THREAD_TILES} that shared memory does not "
                         f"bind, got {gpu!r} and {block!r}")
    return WidgetExercise(
        "thread-tile", {"gpu": list(GPUS), "block": list(TILE_BLOCKS), "thread": list(THREAD_TILES)},
        view,
        number_rules(smallest, "results per side", 0,
                     explain=f"At {smallest} x {smallest} each operand read from shared memory feeds {smallest} FMAs: "
                     "enough, on this GPU, for 32 banks to keep up with its FP32 units.",
                     hint="Hold the GPU and the block tile; raise the thread tile until the red bar leaves shared memory."),
        "thread tile side", asks=asked(gpu=gpu, block=block, thread=upto(launch, smallest)))


OCC_GPUS = ("V100", "A100-40GB", "RTX-4090", "H100-SXM")


OCC_THREADS = (64, 128, 256, 512, 1024)


OCC_REGISTERS = (32, 40, 48, 64, 80, 96, 128, 168, 255)


OCC_SMEM_KIB = (0, 16, 32, 48, 64, 100)


def occupancy_limit(gpu: str = "H100-SXM", threads: int = 256, smem_kib: int = 32, warps: int = 32) -> WidgetExercise:
    """Chapter 3: the most registers per thread (of OCC_REGISTERS) at which `threads`-thread
    blocks with `smem_kib` KiB of shared memory still keep `warps` warps on one SM of `gpu`."""
    _check.member("gpu", gpu, OCC_GPUS)
    _check.member("threads", threads, OCC_THREADS)
    _check.member("smem_kib", smem_kib, OCC_SMEM_KIB)
    if smem_kib * 1024 > limits(gpu).max_smem_per_block:
        raise ValueError(f"smem_kib must be at most {limits(gpu).max_smem_per_block // 1024} on the {gpu}, got {smem_kib!r}")
    reachable = float(occupancy(gpu, threads, OCC_REGISTERS[0], smem_kib * 1024).warps)
    if _check.integer("warps", warps, 1, limits(gpu).max_warps_per_sm) > reachable:
        raise ValueError(f"warps must be at most {reachable:g}, the most {threads}-thread blocks with {smem_kib} KiB "
                         f"of shared memory keep on one SM of the {gpu}, got {warps!r}")

    def view(gpu, threads, registers, smem_kib):
        o = occupancy(gpu, threads, registers, smem_kib * 1024)
        rows = [(f"{k} allow", v, f"{v:g} blocks", k == o.limiter) for k, v in o.per_resource.items()]
        return bars(f"{o.blocks:g} blocks of {threads} threads: <b>{o.warps:g} warps</b> resident, "
                    f"limited by {o.limiter}", rows)

    most = max(r for r in OCC_REGISTERS if occupancy(gpu, threads, r, smem_kib * 1024).warps >= warps)
    return WidgetExercise(
        "occupancy-limit", {"gpu": list(OCC_GPUS), "threads": list(OCC_THREADS), "registers": list(OCC_REGISTERS),
                            "smem_kib": list(OCC_SMEM_KIB)},
        view,
        number_rules(most, "registers", 0, explain=f"At {most} registers a thread the register file still holds "
                     f"{warps} warps; one step more and the registers, not the shared memory, bind.",
                     hint="Fix the GPU, threads and shared memory; raise the registers until the warps fall."),
        "registers per thread", labels={"smem_kib": lambda k: f"{k} KiB"},
        asks=asked(gpu=gpu, threads=threads, registers=upto(OCC_REGISTERS, most, past=1), smem_kib=smem_kib))


WIDGET_EXERCISES = (thread_tile, occupancy_limit)
"""This chapter's widget exercises, in the order it shows them."""


def cp_tile_intensity(b: int = 128, dtype: str = "fp16") -> Checkpoint:
    """Chapter 3, "Why tiling raises intensity": a b x b tile's intensity, b / s FLOP/B (asked
    for another precision than the page's FP32 examples)."""
    b = _check.integer("b", b, 1, 2**14)
    s = _check.dtype_bytes(dtype)
    mistakes = [(float(b), "That is flops per element; divide by the bytes of an element.")]
    if s != 4:
        mistakes.append((b / 4, f"That divides by FP32's four bytes; an {dtype} element has {s}."))
    return Checkpoint(
        "cp-tiling-intensity",
        f"A GEMM on {dtype} elements ({s} bytes each) is cut into {b} x {b} tiles. What intensity, in FLOP/B, "
        "does each triple of tiles give against the memory the tiles are read from?",
        number_rules(b / s, "FLOP/B", 0.02, explain=f"2b³ flops over 2b² elements of {s} bytes: b / s.",
                     hint="Count the flops of one tile triple and the bytes of the two input tiles it reads.",
                     mistakes=mistakes),
        "intensity")


def cp_banks(stride: int = 2) -> Checkpoint:
    """Chapter 3, "Bank conflicts": the wavefronts of a warp's strided shared-memory read (`stride` in words)."""
    stride = _check.integer("stride", stride, 1, 2**16)
    degree = float(bank_conflicts([stride * t for t in range(32)]))
    return Checkpoint(
        "cp-tiling-banks",
        f"The 32 threads of a warp read the 4-byte words 0, {stride}, {2 * stride}, ... of shared memory (thread t "
        f"reads word {stride}t). How many wavefronts does the read take?",
        number_rules(degree, "wavefronts", 0, explain="Word w sits in bank w mod 32: even words use half the banks, "
                     "each bank twice.",
                     hint="Write down the bank of each thread's word (word mod 32) and count the most words in one bank.",
                     mistakes=[(1.0, "That would be conflict-free; check which banks the words land in."),
                               (32.0, "Not every thread hits the same bank; count per bank.")]),
        "wavefronts")


def cp_register_blocks(gpu: str = "A100-40GB", threads: int = 256, registers: int = 136) -> Checkpoint:
    """Chapter 3, "Occupancy": the blocks the register file alone allows on one SM, for a
    kernel whose registers grew past the page's (a what-if: 136 registers leave one block where
    `gemm_reg128`'s 112 leave two)."""
    g = presets.gpu(gpu)
    blocks = float(occupancy(gpu, threads, registers, 0).per_resource["registers"])
    file = g.capability.registers_per_sm
    mistakes = [(blocks * threads // 32, "That counts warps; the question asks for blocks.")]
    share = file / (threads * registers)
    if share != int(share) and float(int(share) + 1) != blocks:
        mistakes.append((float(int(share) + 1), "That rounds up: a block that does not fit whole does not launch."))
    return Checkpoint(
        "cp-tiling-registers",
        f"A change to a kernel raises its registers to {registers} per thread. It runs blocks of {threads} threads "
        f"on the {g.name}, whose SMs hold {file:,} registers each. How many blocks fit on one SM by registers alone?",
        number_rules(blocks, "blocks", 0, whole=True,
                     explain="Each block needs threads x registers of the register file; whole blocks only.",
                     hint="Divide the registers of an SM by what one block uses, and keep the whole part.",
                     mistakes=mistakes),
        "blocks")


CHECKPOINTS = {"cp-tiling-intensity": cp_tile_intensity, "cp-tiling-banks": cp_banks,
               "cp-tiling-registers": cp_register_blocks}
"""This chapter's checkpoints, in the order it shows them."""

RELIES_ON = {
    "cp-tiling-intensity": ("term:intensity",),           # I = b/s is derived just above; the question gives b and s
    "cp-tiling-banks": ("term:bank conflict",),           # a word's bank, word mod 32, from "Bank conflicts"
    "ex-tiling-lab-banks": ("term:bank conflict", "transpose_padded_conflict"),  # the padding that fixes a column read
    "cp-tiling-registers": ("term:occupancy", "reg128_blocks"),  # per-warp allocation; the question gives the figures
    "ex-tiling-operand-tile": ("smem_intensity", "a100_smem_ridge", "term:ridge point"),  # t/s; the T4's units in the question
    "ex-tiling-padding": ("term:bank conflict", "transpose_padded_conflict"),
    "ex-tiling-occupancy": ("term:occupancy",),            # the question gives the H100's limits
    "ex-tiling-explore-thread": ("a100_smem_ridge", "smem_intensity"),  # predict from the ridge, check in the explorer
    "ex-tiling-explore-occupancy": ("h100_regs",),         # the H100's register file, given in the exercise above
}
"""What each checkpoint and exercise needs from the page above it (tests/test_checkpoints.py)."""
