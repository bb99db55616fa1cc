"""Chapter `99_appendix_presets` (The presets): its exercises' checkers and its widget exercises.

A checker takes the learner's answer and returns `Feedback`; a widget exercise (`WIDGET_EXERCISES`)
is an explorer of the model with an answer box."""

from __future__ import annotations

from .. import _check, presets
from ..hardware import BANK_BYTES, SMEM_BANKS
from ..units import fmt_bandwidth, fmt_intensity, fmt_number
from .checks import Feedback, check_number, choice_rules
from .plots import PART_LABELS
from .widgets import WidgetExercise, asked, bars


def check_hbm_bytes_per_clock(gpu, answer) -> Feedback:
    """Appendix: the HBM bytes each SM of `gpu` gets per clock when all share it evenly."""
    g = presets.gpu(gpu)
    per = g.bandwidth("hbm") / (g.sms.value * g.clock.value)
    return check_number(answer, per, "B/clk", rtol=0.01, key=f"check_hbm_bytes_per_clock({g.name})",
                        mistakes=[(per * g.sms.value, "That is the whole GPU's bytes per clock; share them among the "
                                   "SMs.")],
                        explain=f"{fmt_bandwidth(g.bandwidth('hbm'), 4)} over {g.sms.value:g} SMs and "
                        f"{g.clock.value / 1e6:g} MHz; against the {SMEM_BANKS * BANK_BYTES} B/clk of its own "
                        "shared memory, HBM is a trickle.",
                        hint="Divide the bandwidth by the SMs and by the clock in Hz.")


# Appendix

RIDGE_MATH = ("fp32", "fp16")


def highest_ridge(math: str = "fp16") -> WidgetExercise:
    """Appendix: which preset has the highest `math` ridge point against HBM (peak over HBM
    bandwidth, FLOP/B)?"""
    _check.member("math", math, RIDGE_MATH)
    names = presets.preset_names()

    def ridge(gpu, math, level="hbm"):
        g = presets.gpu(gpu)
        return g.ridge(level, math)

    def view(gpu, math):
        rows = [(f"{PART_LABELS[lv]} ridge", ridge(gpu, math, lv), fmt_intensity(ridge(gpu, math, lv)), lv == "hbm")
                for lv in ("registers", "smem", "l2", "hbm")]
        return bars(f"The {gpu}, {math} math: a kernel needs <b>{fmt_intensity(ridge(gpu, math))}</b> against HBM "
                    "to be compute-bound", rows)

    best = max(names, key=lambda g: ridge(g, math))
    return WidgetExercise(
        "highest-ridge", {"gpu": names, "math": list(RIDGE_MATH)}, view,
        choice_rules(best, {g: f"The {g}'s {math} HBM ridge is {fmt_number(ridge(g, math))} FLOP/B; another preset's "
                            "is higher." for g in names if g != best},
                     explain=f"{fmt_number(ridge(best, math))} FLOP/B: the most {math} math per byte of its memory, so "
                     "the hardest GPU of the presets to keep busy from HBM."),
        "preset name", asks=asked(gpu=list(names), math=math))


WIDGET_EXERCISES = (highest_ridge,)
"""This chapter's widget exercises, in the order it shows them."""


RELIES_ON = {
    "ex-presets-hbm-per-clock": (),  # the preset table above gives the H100's SMs, clock and HBM bandwidth
    "ex-presets-explore-ridge": (),  # the explorer shows every preset's ridge
}
"""What each checkpoint and exercise needs from the page above it (tests/test_checkpoints.py)."""
