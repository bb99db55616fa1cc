"""Chapter `02_intensity` (Arithmetic intensity, the roofline and fusion): its exercises' checkers and its widget exercises.

A checker takes the learner's answer and returns `Feedback`; a widget exercise (`WIDGET_EXERCISES`)
is an explorer of the model with an answer box."""

from __future__ import annotations

from .. import _check
from ..model import predict
from ..units import fmt_percent
from ..workloads import elementwise_chain, warp_sectors
from .checks import Feedback, check_number, number_rules
from .widgets import GPUS, WidgetExercise, bars, prediction_view


def check_fusion_limit(gpu, dtype: str, answer) -> Feedback:
    """Chapter 2: the most that fusing a chain of one-flop elementwise ops on `dtype`
    elements can gain on `gpu`, however long the chain (unfused time over fused)."""
    ops = 10**6  # long enough that both are past their turning points
    unfused, fused = (predict(elementwise_chain(2**26, ops, f, dtype), gpu) for f in (False, True))
    gain = float(unfused.time / fused.time)
    return check_number(answer, gain, "times", rtol=0.02,
                        explain=f"Unfused, every op costs a trip through HBM; fused, a long chain is bound by "
                        f"{fused.bound} instead, so the gain stops growing at the ratio of those two per-op costs.",
                        hint="A long fused chain is no longer HBM-bound: find what bounds it, and divide the per-op "
                        "costs.")


STRIDES = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64)


ELEM_BYTES = (1, 2, 4, 8)


def stride_sectors(elem_bytes: int = 2) -> WidgetExercise:
    """Chapter 2: the smallest stride (elements of `elem_bytes`) past which a warp's read
    touches no more sectors."""
    _check.member("elem_bytes", elem_bytes, ELEM_BYTES)

    def view(stride, elem):
        sectors = float(warp_sectors(stride, elem))
        useful, moved = 32 * elem, 32 * sectors
        return bars(f"A warp reading every {stride}th {elem}-byte element: <b>{sectors:g} sectors</b>, "
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
        "stride (elements)", labels={"elem": lambda b: f"{b}-byte elements"})


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
                                                       f"{ops} ops, {fused}, {dtype}, 2^26 elements"),
        number_rules(shortest, "ops", 0, explain=f"Fused, {shortest} one-flop ops on {dtype} elements make "
                     f"{shortest} flops per {2 * (2 if dtype != 'fp32' else 4)} bytes of HBM, past the point where "
                     "the ALUs (and the register traffic they need) take longer than the trip through HBM.",
                     hint="Fix the GPU, fused and the dtype; double the ops until the red bar leaves HBM."),
        "ops")


WIDGET_EXERCISES = (stride_sectors, fused_chain)
"""This chapter's widget exercises, in the order it shows them."""
