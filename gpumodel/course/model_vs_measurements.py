"""Chapter `98_model_vs_measurements` (How good is the model): its exercises' checkers and its widget exercises.

A checker takes the learner's answer and returns `Feedback`; a widget exercise (`WIDGET_EXERCISES`)
is an explorer of the model with an answer box."""

from __future__ import annotations

from .. import presets
from ..published import comparisons
from .checks import Feedback, check_number


def check_bound_fraction(gpu, what: str, answer) -> Feedback:
    """Appendix "How good is the model?": the fraction (0 to 1) of the model's bound that
    the published measurement `what` on preset `gpu` reached (`gpumodel.published`)."""

    named = isinstance(gpu, str) and isinstance(what, str)
    found = [c for c in comparisons() if named and c.record.gpu == gpu and c.record.what == what]
    if not found:
        raise ValueError(f"gpu and what must name a published record, got {gpu!r}, {what!r}")
    c = found[0]
    mistakes = [(1 / c.fraction, "That is the bound over the measurement; the question asks for the measurement's "
                 "share of the bound.")]
    if c.quantity == "bandwidth" and c.record.run.get("kind") == "read":  # a re-read: not every byte comes from HBM
        mistakes.append((c.measured / presets.gpu(gpu).bound().bandwidth("hbm"), "That charges every byte to HBM. "
                         "The benchmark reads the array pass after pass: the last L2-sized part of one pass is still "
                         "in L2 when the next begins."))
    return check_number(answer, c.fraction, "of the bound", rtol=0.02, key=f"check_bound_fraction({gpu}, {what})",
                        units={"%": 0.01}, mistakes=mistakes,
                        ranges=[(1.5, 1e308, "Give the share as a fraction (0.5 is half), or as a percentage with %.")],
                        explain=f"The model's bound is set by {c.bound}; the run reached that share of it.",
                        hint="Put the measurement and the model's figure in the same unit, then divide the "
                        "measured rate by the model's (or the model's time by the measured time).")


WIDGET_EXERCISES = ()
"""This chapter's widget exercises, in the order it shows them."""

RELIES_ON = {
    "ex-measured-stream": ("formulas:A roofline per level",),  # the bound of a repeated read; the question gives
                                                                # the run, the preset's HBM rate and its L2
}
"""What each checkpoint and exercise needs from the page above it (tests/test_checkpoints.py)."""
