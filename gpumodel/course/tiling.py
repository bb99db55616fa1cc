"""Chapter `03_tiling` (Tiling): its exercises' checkers and its widget exercises.

A checker takes the learner's answer and returns `Feedback`; a widget exercise (`WIDGET_EXERCISES`)
is an explorer of the model with an answer box."""

from __future__ import annotations

from .. import _check, presets
from ..model import predict
from ..occupancy import limits, occupancy
from ..simulate import bank_conflicts, warp_addresses
from ..tiles import is_legal
from ..units import fmt_intensity
from ..workloads import gemm
from .checks import Feedback, _wrong_type, check_number, number_rules
from .widgets import GPUS, WidgetExercise, bars, prediction_view


def check_operand_tile(gpu, answer) -> Feedback:
    """Chapter 3: the square thread tile t at which the register-blocked kernel's operand
    reads from shared memory (t/4 FLOP/B for FP32) meet `gpu`'s shared-memory ridge."""
    g = presets.gpu(gpu)
    ridge = g.ridge("smem")
    t = 4 * ridge
    return check_number(answer, t, "results per side", rtol=0.01,
                        explain=f"The ridge is {g.fp32_lanes_per_sm.value:g} lanes x 2 flops over 32 banks x 4 B = "
                        f"{fmt_intensity(ridge)}; t / 4 meets it at t = {t:g}. The tile copies add bytes, so a tile "
                        "exactly at the ridge still lands on the shared-memory side.",
                        hint="Per k step a thread reads 2t floats and does t^2 FMAs; both rates scale with SMs and "
                        "clock, which cancel.")


def check_padding(rows: int, cols: int, answer) -> Feedback:
    """Chapter 3: the padding, in 4-byte words per row, that makes a warp's column read of a
    `rows` x `cols` float tile conflict-free (the smallest such padding is asked for)."""

    rows, cols = _check.one("rows", rows), _check.one("cols", cols)
    if rows < 32:
        raise ValueError(f"rows must be at least 32 (a warp reads 32 rows of a column), got {rows!r}")
    if answer is None:
        return Feedback(False, "No answer yet: replace None with a number of words.")
    value = _check.answer(answer)
    if value is None or value < 0 or value != int(value):
        return _wrong_type(answer, "a whole number of words, 0 or more")
    answer = int(value)
    if answer > 32:
        return Feedback(False, f"{answer} words of padding per row is more than a bank cycle of 32 words; a few words do.")
    degree = bank_conflicts(warp_addresses((rows, cols), answer, "column"))
    smallest = next(p for p in range(33) if bank_conflicts(warp_addresses((rows, cols), p, "column")) == 1)
    if degree > 1:
        return Feedback(False, f"With {answer} words of padding the column read is still {degree}-way conflicted.")
    if answer > smallest:
        return Feedback(False, "Conflict-free, but less padding would do, and padding costs shared memory.")
    return Feedback(True, f"Rows of {cols + answer} words put the 32 elements of a column in 32 different banks.")


def check_occupancy(gpu, threads: int, registers: int, smem: int, answer) -> Feedback:
    """Chapter 3: resident warps per SM for a launch of `threads` per block, `registers`
    per thread and `smem` bytes of shared memory per block on `gpu`."""
    threads, registers = _check.one("threads", threads), _check.one("registers", registers)
    smem = _check.one("smem", smem, zero=True)
    o = occupancy(gpu, threads, registers, smem)
    limits = ", ".join(f"{k} allow {v:g} blocks" for k, v in o.per_resource.items())
    return check_number(answer, float(o.warps), "warps", rtol=0,
                        explain=f"{limits}; the {o.limiter} limit binds: {o.blocks:g} blocks of "
                        f"{threads // 32 + (threads % 32 > 0)} warps.")


THREAD_TILES = (1, 2, 4, 8, 16)


TILE_BLOCKS = (16, 32, 64, 128)


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
                             f"{gpu}: {(block // thread) ** 2 if block % thread == 0 else 'no whole number of'} "
                             "threads per block, or too much shared memory, or too many registers")
        return prediction_view(workload(block, thread), gpu, f"{block} x {block} tiles, {thread} x {thread} per thread")

    smallest = next((t for t in THREAD_TILES if is_legal(gpu, block, block, t, t)
                     and predict(workload(block, t), gpu).bound != "smem"), None)
    if smallest is None:
        raise ValueError(f"gpu and block must admit a thread tile of {THREAD_TILES} that shared memory does not "
                         f"bind, got {gpu!r} and {block!r}")
    return WidgetExercise(
        "thread-tile", {"gpu": list(GPUS), "block": list(TILE_BLOCKS), "thread": list(THREAD_TILES)},
        view,
        number_rules(smallest, "results per side", 0,
                     explain=f"At {smallest} x {smallest} each operand read from shared memory feeds {smallest} FMAs: "
                     "enough, on this GPU, for 32 banks to keep up with its FP32 lanes.",
                     hint="Hold the GPU and the block tile; raise the thread tile until the red bar leaves shared memory."),
        "thread tile side")


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
        "registers per thread", labels={"smem_kib": lambda k: f"{k} KiB"})


WIDGET_EXERCISES = (thread_tile, occupancy_limit)
"""This chapter's widget exercises, in the order it shows them."""
