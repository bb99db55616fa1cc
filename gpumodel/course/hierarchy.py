"""Chapter `01_hierarchy` (The memory hierarchy): its exercises' checkers and its widget exercises.

A checker takes the learner's answer and returns `Feedback`; a widget exercise (`WIDGET_EXERCISES`)
is an explorer of the model with an answer box."""

from __future__ import annotations

import math

from .. import _check, presets
from ..hardware import WARP, WAVEFRONT_BYTES
from ..kernel_info import info, label
from ..model import BOUNDS, TIE_RTOL, predict
from ..units import fmt_bandwidth, fmt_bytes, fmt_count, fmt_flops, fmt_intensity, fmt_percent, fmt_time
from ..workloads import operand_wavefronts, seed_kernels
from .checks import BYTES, FLOPS_AND_BYTES, TIMES, Feedback, check_number, choice_rules, judge, number_rules, units_as
from .widgets import GPUS, Checkpoint, WidgetExercise, asked, bars, prediction_view, upto


def _call(name: str, *args) -> str:
    """A checker's call as `progress()` names it: check_bound(gemm_smem16, T4)."""
    return f"{name}({', '.join(str(getattr(a, 'name', a)) for a in args)})"


def bound_rules(kernel: str, gpu) -> dict:
    """Chapter 1: the rules of "which part bounds `kernel` on `gpu`?": each wrong part is told
    how long it takes against the kernel's time (never which part is slower)."""
    kernels = seed_kernels()
    _check.choice("kernel", kernel, kernels)
    p = predict(kernels[kernel], presets.gpu(gpu))
    times = p.times
    shown = ", ".join(f"{part} {fmt_time(times[part])}" for part in BOUNDS)
    wrong = {}
    for part in BOUNDS:
        if part == p.bound:
            continue
        if times[part] >= p.time * (1 - TIE_RTOL):
            wrong[part] = (f"In the model, {part} needs the whole {fmt_time(p.time)}, but so does another part, and "
                           "ties go to the part listed first in gm.BOUNDS.")
        elif times[part] == 0:
            wrong[part] = f"This kernel asks nothing of {part}: count what each part is asked for per flop."
        else:
            wrong[part] = (f"In the model, {part} needs {fmt_time(times[part])}, but the kernel takes {fmt_time(p.time)}: "
                           "another part needs longer. Compare what each part is asked for, per flop, with what it "
                           "serves.")
    return choice_rules(p.bound, wrong, f"The model's times on the {p.gpu.name}: {shown}; the largest, {p.bound}, sets "
                        f"{fmt_time(p.time)}.")


def smem_bytes_per_flop(kernel: str) -> tuple:
    """Chapter 1: (tile copies, operand reads) in shared-memory bytes per FP32 flop of the
    tiled GEMM `kernel` (`gemm_smem16`, `gemm_reg128`), as compiled: each element of A and B
    written once for a block's bN or bM uses, s (1/bM + 1/bN) / 2; the operands read in the
    wavefronts of the kernel's layout (`gpumodel.workloads.operand_wavefronts`), 128 bytes
    each, for a warp's 32 x tM x tN multiply-adds: 2 (tM + tN) / (tM tN) read one word a load."""
    _check.choice("kernel", kernel, ("gemm_smem16", "gemm_reg128"))
    k = info(kernel)
    (b_m, b_n, _), (t_m, t_n) = k.block, k.thread
    waves = operand_wavefronts(k.block, k.thread, k.layout)
    return 4 * (1 / b_m + 1 / b_n) / 2, float(WAVEFRONT_BYTES * waves / (WARP * 2 * t_m * t_n))


def check_bound(kernel: str, gpu, answer) -> Feedback:
    """Chapter 1: which part bounds one of chapter 1's kernels (`gm.seed_kernels()`) on
    `gpu`: "compute", "sfu", "registers", "smem", "l2" or "hbm". A wrong bound is told how long
    its part takes, against the kernel's time."""
    return judge(bound_rules(kernel, gpu), answer, f"one of the strings {', '.join(map(repr, BOUNDS))}",
                 _call("check_bound", kernel, gpu), "bound (compute, hbm, l2, registers, sfu or smem)")


def check_fmas_per_load(gpu, answer) -> Feedback:
    """Chapter 1: the fewest FMAs a kernel must do per 4-byte float it loads from HBM for
    HBM to stop binding it on `gpu` (a whole number): 2k / 4 >= peak FP32 / HBM bandwidth."""
    g = presets.gpu(gpu)
    balance = g.ridge("hbm")
    fewest = math.ceil(2 * balance)
    return check_number(answer, fewest, "FMAs", rtol=0, key=_call("check_fmas_per_load", gpu), whole=True,
                        explain=f"{fewest} FMAs are {2 * fewest} flops per 4 bytes, {fewest / 2:g} FLOP/B, just past "
                        f"the {g.name}'s balance of {fmt_intensity(balance)}.",
                        hint="k FMAs on one float are 2k flops on 4 bytes; set that intensity equal to the peak over "
                        "the bandwidth.",
                        doubled=FLOPS_AND_BYTES,
                        mistakes=[(fewest - 1, "Just short: at the balance itself HBM still binds; round up, not "
                                   "down."),
                                  (math.ceil(balance / 2), "That counts one flop per byte of the float: a float is "
                                   "four bytes and an FMA two flops.")])


def seed_bounds() -> WidgetExercise:
    """Chapter 1: on how many of the explorer's GPUs is the 128 x 128 tiled GEMM compute-bound?"""
    kernels = seed_kernels()
    count = sum(predict(kernels["gemm_reg128"], g).bound == "compute" for g in GPUS)
    return WidgetExercise(
        "seed-bounds", {"kernel": list(kernels), "gpu": list(GPUS)},
        lambda kernel, gpu: prediction_view(kernels[kernel], gpu, label(kernel)),
        number_rules(count, "GPUs", 0, explain="The others run out of shared-memory bandwidth first: their SMs do "
                     "more FP32 work per clock than 32 banks can feed at this tile.",
                     hint="Pick the 128 x 128 GEMM and step through every GPU; count the red ALU bars."),
        "GPUs", labels={"kernel": label}, asks=asked(kernel="gemm_reg128", gpu=list(GPUS)))


LITTLE_WARPS = (1, 2, 4, 6, 8, 12, 16, 24, 32, 48, 64)


LOAD_BYTES = {"float (4 B)": 4, "float2 (8 B)": 8, "float4 (16 B)": 16}


LITTLE_LOADS = (1, 2, 4)


def littles_law(gpu: str = "A100-40GB", width: str = "float4 (16 B)", loads: int = 2) -> WidgetExercise:
    """Chapter 1: the fewest resident warps per SM (of LITTLE_WARPS) that keep `gpu`'s HBM
    busy when each thread has `loads` loads of `width` in flight (Little's law)."""
    with_latency = [g for g in GPUS if "hbm" in presets.gpu(g).latency]
    _check.member("gpu", gpu, with_latency)
    _check.member("width", width, LOAD_BYTES)
    _check.member("loads", loads, LITTLE_LOADS)

    def in_flight(gpu, warps, width, loads):
        g = presets.gpu(gpu)
        if warps * 32 > g.capability.max_threads_per_sm:
            raise ValueError(f"the {g.name} keeps at most {g.capability.max_threads_per_sm // 32} warps per SM")
        return warps * 32 * LOAD_BYTES[width] * loads, g.in_flight("hbm") / g.sms.value

    def view(gpu, warps, width, loads):
        have, need = in_flight(gpu, warps, width, loads)
        share = min(1.0, have / need)
        return bars(f"HBM of the {gpu}: at most <b>{fmt_percent(share, 3)}</b> of its bandwidth "
                    "(bytes in flight over bandwidth x latency)",
                    [("in flight per SM", have, fmt_bytes(have), share < 1),
                     ("needed per SM", need, fmt_bytes(need), False)])

    kept = presets.gpu(gpu).capability.max_threads_per_sm // 32
    have = {w: in_flight(gpu, w, width, loads)[0] for w in LITTLE_WARPS if w <= kept}
    need = in_flight(gpu, 1, width, loads)[1]
    enough = [w for w in have if have[w] >= need]
    if not enough:
        raise ValueError(f"width and loads must let the {kept} warps an SM of the {gpu} keeps fill its HBM, got "
                         f"{width!r} and {loads!r}")
    fewest = enough[0]
    return WidgetExercise(
        "littles-law", {"gpu": with_latency, "warps": list(LITTLE_WARPS), "width": list(LOAD_BYTES),
                        "loads": list(LITTLE_LOADS)},
        view,
        number_rules(fewest, "warps", 0, explain=f"{fewest} warps x 32 threads x {loads} x {LOAD_BYTES[width]} B = "
                     f"{fmt_bytes(have[fewest])} in flight, against the {fmt_bytes(need)} that bandwidth x latency "
                     "asks of each SM.",
                     hint="Set the GPU, load width and loads first; then raise the warps until the bars match."),
        "warps per SM", labels={"warps": lambda w: f"{w} warps", "loads": lambda n: f"{n} in flight"},
        asks=asked(gpu=gpu, warps=upto(LITTLE_WARPS, fewest), width=width, loads=loads))


WIDGET_EXERCISES = (seed_bounds, littles_law)
"""This chapter's widget exercises, in the order it shows them."""


def cp_time() -> Checkpoint:
    """Chapter 1, "One formula for a kernel's time": the model's time of a kernel from its
    flops and HBM bytes on the A100: the larger of F/P and B/W, not their sum."""
    g, flops, nbytes = presets.gpu("A100-40GB"), 1e12, 2e11
    compute, memory = flops / g.peak_flops, nbytes / g.bandwidth("hbm")
    return Checkpoint(
        "cp-hierarchy-time",
        f"A kernel does {fmt_count(flops)} of FP32 work and moves {fmt_bytes(nbytes)} through HBM on the {g.name} "
        f"(peak {fmt_flops(g.peak_flops, 4)}, HBM {fmt_bandwidth(g.bandwidth('hbm'), 4)}). How long does the model "
        "say it takes, in ms?",
        number_rules(1e3 * max(compute, memory), "ms", 0.02, units=units_as("ms", TIMES),
                     explain=f"{'HBM' if memory > compute else 'The arithmetic'} needs longer, and the parts work "
                     "at once: the slower sets the time.",
                     hint="Work out the time each part needs on its own.",
                     mistakes=[(1e3 * (compute + memory), "That adds the two times; the parts work at the same time, "
                                "so the slower one alone sets the kernel's time."),
                               (1e3 * min(compute, memory), "That is the faster part's time; the slower one sets the "
                                "kernel's.")]),
        "time")


def cp_little() -> Checkpoint:
    """Chapter 1, "Latency": Little's law for the H100 SXM's HBM, bytes in flight = bandwidth x
    latency (a what-if: the page works the A100's)."""
    g = presets.gpu("H100-SXM")
    cycles = g.latency["hbm"].value
    need = g.in_flight("hbm")
    return Checkpoint(
        "cp-hierarchy-little",
        f"The page worked the A100's HBM; now take the {g.name}'s. It answers a load after about {cycles:g} cycles "
        f"at {g.clock.value / 1e9:.3g} GHz and serves {fmt_bandwidth(g.bandwidth('hbm'), 4)}. How many kB must the "
        "whole GPU keep in flight to use all of that bandwidth?",
        number_rules(need / 1e3, "kB", 0.02, units=units_as("kB", BYTES),
                     explain="Bandwidth times latency: fewer bytes in flight, and HBM waits on requests.",
                     hint="Turn the latency into seconds first (cycles over the clock), then use Little's law.",
                     mistakes=[(g.bandwidth("hbm") * cycles / 1e3, "That multiplies by the latency in cycles; turn "
                                "it into seconds with the clock first.")]),
        "bytes in flight")


CHECKPOINTS = {"cp-hierarchy-time": cp_time, "cp-hierarchy-little": cp_little}
"""This chapter's checkpoints, in the order it shows them."""


RELIES_ON = {
    "cp-hierarchy-time": (),  # the question gives the flops, the bytes, the peak and the bandwidth
    "cp-hierarchy-little": (),  # the question gives the H100's latency, clock and bandwidth
    "ex-hierarchy-bound": ("t16_bytes_per_flop",),  # the question gives the T4's figures and the L2 and HBM bytes
    "ex-hierarchy-fmas": (),  # the question gives the H100's peak and bandwidth
    "ex-hierarchy-4090": ("h100_lanes", "h128_over"),  # as many FP32 units per SM as the H100, which starves above
    "ex-hierarchy-explore-bounds": (),  # the explorer shows every GPU's bound
    "ex-hierarchy-explore-little": ("a100_in_flight_sm",),  # the bytes each SM must keep in flight
}
"""What each checkpoint and exercise needs from the page above it (tests/test_checkpoints.py)."""
