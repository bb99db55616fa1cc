"""Chapter `01_hierarchy` (The memory hierarchy): its exercises' checkers and its widget exercises.

A checker takes the learner's answer and returns `Feedback`; a widget exercise (`WIDGET_EXERCISES`)
is an explorer of the model with an answer box."""

from __future__ import annotations

import math

from .. import _check, presets
from ..kernel_info import label
from ..model import BOUNDS, TIE_RTOL, predict
from ..units import fmt_bytes, fmt_intensity, fmt_percent, fmt_time
from ..workloads import seed_kernels
from .checks import Feedback, _wrong_type, check_number, number_rules
from .widgets import GPUS, WidgetExercise, bars, prediction_view


def check_bound(kernel: str, gpu, answer) -> Feedback:
    """Chapter 1: which part bounds one of chapter 1's kernels (`gm.seed_kernels()`) on
    `gpu`: "compute", "registers", "smem", "l2" or "hbm". A wrong bound is told how long its
    part takes, against the kernel's time."""
    kernels = seed_kernels()
    _check.choice("kernel", kernel, kernels)
    if answer is None:
        return Feedback(False, f"No answer yet: replace None with one of {BOUNDS}.")
    if not isinstance(answer, str) or answer not in BOUNDS:
        return _wrong_type(answer, f"one of the strings {', '.join(map(repr, BOUNDS))}")
    p = predict(kernels[kernel], presets.gpu(gpu))
    times = p.times
    if answer == p.bound:
        shown = ", ".join(f"{part} {fmt_time(times[part])}" for part in BOUNDS)
        return Feedback(True, f"The model's times on the {p.gpu.name}: {shown}; the largest, {p.bound}, sets "
                        f"{fmt_time(p.time)}.")
    if times[answer] >= p.time * (1 - TIE_RTOL):
        return Feedback(False, f"In the model, {answer} needs the whole {fmt_time(p.time)}, but so does another part, "
                        "and ties go to the part listed first in gm.BOUNDS.")
    return Feedback(False, f"In the model, {answer} needs {fmt_time(times[answer])}, but the kernel takes "
                    f"{fmt_time(p.time)}: another part needs longer. Compare what each part is asked for, per flop, "
                    "with what it serves.")


def check_fmas_per_load(gpu, answer) -> Feedback:
    """Chapter 1: the fewest FMAs a kernel must do per 4-byte float it loads from HBM for
    HBM to stop binding it on `gpu` (a whole number): 2k / 4 >= peak FP32 / HBM bandwidth."""
    g = presets.gpu(gpu)
    balance = g.ridge("hbm")
    fewest = math.ceil(2 * balance)
    return check_number(answer, fewest, "FMAs", rtol=0,
                        explain=f"{fewest} FMAs are {2 * fewest} flops per 4 bytes, {fewest / 2:g} FLOP/B, just past "
                        f"the {g.name}'s balance of {fmt_intensity(balance)}.",
                        hint="An FMA is two flops; a float is four bytes; compare with the GPU's machine balance.")


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
        "GPUs", labels={"kernel": label})


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

    have = {w: in_flight(gpu, w, width, loads)[0] for w in LITTLE_WARPS}
    need = in_flight(gpu, 1, width, loads)[1]
    fewest = min(w for w in LITTLE_WARPS if have[w] >= need)
    return WidgetExercise(
        "littles-law", {"gpu": with_latency, "warps": list(LITTLE_WARPS), "width": list(LOAD_BYTES),
                        "loads": list(LITTLE_LOADS)},
        view,
        number_rules(fewest, "warps", 0, explain=f"{fewest} warps x 32 threads x {loads} x {LOAD_BYTES[width]} B = "
                     f"{fmt_bytes(have[fewest])} in flight, against the {fmt_bytes(need)} that bandwidth x latency "
                     "asks of each SM.",
                     hint="Set the GPU, load width and loads first; then raise the warps until the bars match."),
        "warps per SM", labels={"warps": lambda w: f"{w} warps", "loads": lambda n: f"{n} in flight"})


WIDGET_EXERCISES = (seed_bounds, littles_law)
"""This chapter's widget exercises, in the order it shows them."""
