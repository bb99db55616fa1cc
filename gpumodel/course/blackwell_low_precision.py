"""Chapter `07_blackwell_low_precision` (Overhead, Blackwell and low precision): its
checkpoints' checkers and its widget exercises.

A checker takes the learner's answer and returns `Feedback`; a widget exercise (`WIDGET_EXERCISES`)
is an explorer of the model with an answer box."""

from __future__ import annotations

from .. import _check, presets
from ..blackwell import pair_intensity
from ..low_precision import bytes_per_element
from ..model import predict
from ..hardware import WARP
from ..occupancy import SETMAXNREG, consumer_registers, limits
from ..overhead import launch_cost, launch_costs, sequence_time
from ..tensor_cores import operand_intensity
from ..units import fmt_intensity, fmt_time
from ..workloads import gemm_ideal, vector_add
from .checks import Feedback, check_number, number_rules
from .widgets import Checkpoint, WidgetExercise, asked, bars, upto


def check_launch_bound(kernels: int, kernel_time: float, answer, gpu: str = "B200") -> Feedback:
    """Chapter 7: the time, in microseconds, of `kernels` kernels of `kernel_time` seconds
    each launched one by one on `gpu` by the CUDA driver (`sequence_time`)."""
    kernels = _check.integer("kernels", kernels, 1, 10**6)
    kernel_time = _check.real("kernel_time", kernel_time, least=0)
    launch = launch_cost(gpu).seconds
    expected = sequence_time([kernel_time] * kernels, launch).time * 1e6
    return check_number(answer, expected, "us", rtol=0.01,
                        explain=f"Each kernel is shorter than a launch ({fmt_time(launch)}), so the GPU waits on "
                        "the host: N launches, then the last kernel.",
                        hint="Which is longer, a kernel or a launch? The longer one sets the pace; add what the "
                        "other contributes once, at the start or the end.")


def check_pair_intensity(answer, m: int = 256, n: int = 256) -> Feedback:
    """Chapter 7: the FLOP per shared-memory byte each CTA of a 2-CTA fp16 MMA of m x n reads."""
    expected = float(pair_intensity(m, n, 64))
    return check_number(answer, expected, "FLOP/B", rtol=0.01,
                        explain=f"Each CTA computes {m // 2} x {n} of the result from {m // 2} rows of A and "
                        f"{n // 2} columns of B: the pair shares B, so each SM reads half of it.",
                        hint="Per CTA: the flops are 2 (m/2) n k; the bytes are 2 bytes times (m/2) k of A plus "
                        "k (n/2) of B. k cancels.")


def check_consumer_registers(answer, producer_registers: int = 40, gpu: str = "H100-SXM") -> Feedback:
    """Chapter 7: the registers per thread each of two consumer warpgroups may take with
    setmaxnreg once one producer warpgroup has lowered itself to `producer_registers`."""
    expected = consumer_registers(gpu, producer_registers)
    registers, warpgroup, step = limits(gpu).registers_per_sm, 4 * WARP, SETMAXNREG[2]
    return check_number(answer, expected, "registers", rtol=0,
                        explain=f"The register file holds {registers // warpgroup} registers per thread of one "
                        f"warpgroup; what the producer gives up, the two consumers share, in steps of {step}.",
                        hint=f"Divide the SM's {registers:,} registers by {warpgroup} threads, take away the "
                        f"producer's, halve, and round down to a multiple of {step}.")


def check_nvfp4_bytes(answer) -> Feedback:
    """Chapter 7: the bytes one NVFP4 weight costs, its share of the block scale included."""
    return check_number(answer, bytes_per_element("nvfp4"), "bytes", rtol=0.001,
                        explain="Half a byte for the value, and one scale byte shared by sixteen values.",
                        hint="Four bits per value; one FP8 scale per block of 16 values.")


def check_held_clock(answer, mhz: float = 1500, n: int = 8192, gpu: str = "H100-SXM") -> Feedback:
    """Chapter 7: the model's time, in milliseconds, of an n^3 fp16 GEMM on `gpu` held at
    `mhz` MHz under load (`GPU.at_clock`)."""
    g = presets.gpu(gpu)
    n = _check.one("n", n)
    expected = float(predict(gemm_ideal(n, n, n, "fp16"), g.at_clock(mhz)).time) * 1e3
    return check_number(answer, expected, "ms", rtol=0.01,
                        explain="The GEMM is compute-bound, so its time is its flops over the tensor peak, and "
                        "the peak scales with the clock: the time at the rated clock times rated/held.",
                        hint="Find the time at the clock the peak is rated at, then scale it by how much "
                        "slower the held clock is.")


VECTOR_SIZES = (2**10, 2**14, 2**18, 2**20, 2**22, 2**24)


LAUNCH_KERNELS = (10, 100, 1000)
"""How many vector adds the launch explorer offers to launch one by one (the answer holds at each)."""
LAUNCH_GPUS = tuple(sorted({cost.gpu for cost in launch_costs()}))
"""The GPUs with a published launch cost (`gpumodel/data/launch.toml`)."""
RIDGE_GPUS = ("H100-SXM", "B200")
"""The GPUs the tile explorer compares."""


def launch_bound(gpu: str = "B200") -> WidgetExercise:
    """Chapter 7: the smallest vector add (of VECTOR_SIZES, fp32) that outlasts a launch by
    the CUDA driver on `gpu`, so that back-to-back launches keep the GPU busy."""
    launch = launch_cost(_check.member("gpu", gpu, LAUNCH_GPUS)).seconds

    def view(elements, kernels):
        kernel = float(predict(vector_add(elements), gpu).time)
        s = sequence_time([kernel] * kernels, launch)
        return bars(f"{kernels} vector adds of {elements:,} floats on the {gpu}, one launch each "
                    f"({fmt_time(launch)}): <b>{fmt_time(s.time)}</b>, bound by <b>{s.bound}</b>, "
                    f"the GPU idle {s.idle:.0%} of it",
                    [("one kernel", kernel, fmt_time(kernel), kernel < launch),
                     ("one launch", launch, fmt_time(launch), False),
                     ("sequence", s.time, fmt_time(s.time), s.bound == "overhead"),
                     ("as a graph", sequence_time([kernel] * kernels, launch, graph=True).time,
                      fmt_time(sequence_time([kernel] * kernels, launch, graph=True).time), False)])

    smallest = next(n for n in VECTOR_SIZES if float(predict(vector_add(n), gpu).time) >= launch)
    return WidgetExercise(
        "launch-bound", {"elements": list(VECTOR_SIZES), "kernels": list(LAUNCH_KERNELS)}, view,
        number_rules(smallest, "elements", 0, explain="From there on each kernel takes longer on the GPU than the "
                     "host takes to launch the next, so the launches hide behind the work.",
                     hint="Raise the size until the kernel's bar is at least as long as the launch's."),
        "elements", asks=asked(elements=upto(VECTOR_SIZES, smallest), kernels=list(LAUNCH_KERNELS)))


TILES = {"m64 (wgmma)": (64, False), "m128 (tcgen05, 1 CTA)": (128, False), "m256 (tcgen05, 2 CTAs)": (256, True)}
TILE_NS = (32, 64, 96, 128, 192, 256)


def tile_ridge(gpu: str = "B200", tile: str = "m128 (tcgen05, 1 CTA)") -> WidgetExercise:
    """Chapter 7: the smallest N (of TILE_NS) at which an fp16 MMA tile of `tile` reads few
    enough shared-memory bytes per FLOP to keep `gpu`'s tensor cores busy."""
    _check.member("gpu", gpu, RIDGE_GPUS)
    _check.member("tile", tile, list(TILES))

    def intensity(tile, n):
        m, pair = TILES[tile]
        return float(pair_intensity(m, n, 64) if pair else operand_intensity(m, n, 16))

    def view(gpu, tile, n):
        ridge = presets.gpu(gpu).ridge("smem", "fp16")
        value = intensity(tile, n)
        side = "below" if value < ridge else "at or past"
        return bars(f"{tile}, N = {n} on the {gpu}: <b>{fmt_intensity(value)}</b> against each SM's shared memory, "
                    f"<b>{side}</b> the ridge",
                    [("tile", value, fmt_intensity(value), value < ridge),
                     ("smem ridge", ridge, fmt_intensity(ridge), False)])

    ridge = presets.gpu(gpu).ridge("smem", "fp16")
    smallest = next((n for n in TILE_NS if intensity(tile, n) >= ridge), None)
    if smallest is None:
        raise ValueError(f"gpu and tile must give a tile that reaches the {gpu}'s shared-memory ridge "
                         f"({fmt_intensity(ridge)}) at some N of {TILE_NS}, got {gpu!r} and {tile!r}")
    return WidgetExercise(
        "tile-ridge", {"gpu": list(RIDGE_GPUS), "tile": list(TILES), "n": list(TILE_NS)}, view,
        number_rules(smallest, "columns", 0, explain="A wider tile reuses each row of A across more columns; on "
                     f"the B200 the ridge is {presets.gpu('B200').ridge('smem', 'fp16') / presets.gpu('H100-SXM').ridge('smem', 'fp16'):.2g} "
                     "times the H100's, so a tile needs that much more reuse.",
                     hint="Fix the GPU and the tile; raise N until the tile's bar passes the ridge."),
        "N", asks=asked(gpu=gpu, tile=tile, n=upto(TILE_NS, smallest)))


WIDGET_EXERCISES = (launch_bound, tile_ridge)
"""This chapter's widget exercises, in the order it shows them."""


def _checkpoint(key: str, question: str, unanswered: Feedback, prompt: str) -> Checkpoint:
    """A checkpoint asking `question`, judged by the rules its checker gives an unanswered call."""
    return Checkpoint(key, question, unanswered.rules, prompt)


CHECKPOINTS = {
    "cp-bw-launches": lambda: _checkpoint(
        "cp-bw-launches", "100 kernels of 1 us each are launched one by one by the CUDA driver on the B200. "
        "How long do they take?", check_launch_bound(100, 1e-6, None), "time"),
    "cp-bw-pair": lambda: _checkpoint(
        "cp-bw-pair", "A 2-CTA fp16 MMA of 256 x 256: how many FLOP does each CTA do per byte it reads from "
        "shared memory?", check_pair_intensity(None), "intensity"),
    "cp-bw-registers": lambda: _checkpoint(
        "cp-bw-registers", "One producer warpgroup has lowered itself to 40 registers per thread. How many "
        "registers per thread can each of two consumer warpgroups take?", check_consumer_registers(None),
        "registers"),
    "cp-bw-nvfp4": lambda: _checkpoint(
        "cp-bw-nvfp4", "How many bytes does one NVFP4 weight cost, its share of the block scale included?",
        check_nvfp4_bytes(None), "bytes"),
    "cp-bw-held-clock": lambda: _checkpoint(
        "cp-bw-held-clock", "What is the model's time of the 8192³ fp16 GEMM on an H100 SXM held at 1500 MHz?",
        check_held_clock(None), "time"),
}
"""This chapter's checkpoints, in the order it shows them (the checkers above judge them)."""
