"""Chapter `06_tensor_cores` (Feeding the tensor cores): its exercises' checkers and its widget exercises.

A checker takes the learner's answer and returns `Feedback`; a widget exercise (`WIDGET_EXERCISES`)
is an explorer of the model with an answer box."""

from __future__ import annotations

import math

import numpy as np

from .. import _check, presets
from ..hardware import MATH
from ..decode import gemm_critical_batch, gemm_intensity
from ..tensor_cores import WEIGHT_BYTES, operand_intensity, wave_quantisation
from ..units import fmt_intensity, fmt_percent
from .checks import FLOPS_AND_BYTES, Feedback, check_number, judge, number_rules
from .widgets import Checkpoint, WidgetExercise, asked, bars, upto


def check_operand_n(gpu, answer, m: int = 64, dtype: str = "fp16") -> Feedback:
    """Chapter 6: the smallest n (a multiple of 8, as the n of mma.sync's m16n8k16 and wgmma's
    N are) of an m x n tile (a warp's or a warpgroup's) whose operands, both read from shared
    memory, give at least the shared-memory ridge of `gpu`'s tensor cores:
    2mn / (s(m + n)) >= peak / W_smem. The chapter asks it of the A100's warp tile."""
    g = presets.gpu(gpu)
    ridge = g.ridge("smem", _check.choice("dtype", dtype, MATH))
    ns = np.arange(8, 257, 8)
    enough = operand_intensity(m, ns, 16, dtype) >= ridge
    if not enough.any():
        raise ValueError(f"m must be large enough for some n up to 256 to reach the ridge, got {m!r}")
    smallest = int(ns[enough.argmax()])
    reached = float(operand_intensity(m, smallest, 16, dtype))
    below = (f"; n = {smallest - 8} gives {fmt_intensity(float(operand_intensity(m, smallest - 8, 16, dtype)))}, "
             "short of it") if smallest > 8 else ""
    mistakes = [(smallest + 8, "That width reaches the ridge, but a narrower one does too: the intensity falls more "
                 "slowly than n.")]
    if smallest > 8:
        mistakes.insert(0, (smallest - 8, "One step short: at that width the tile still falls below the ridge; "
                            "round up, not down."))
    return check_number(answer, smallest, "columns", rtol=0, key=f"check_operand_n({g.name}, {m}, {dtype})",
                        doubled=FLOPS_AND_BYTES, mistakes=mistakes,
                        explain=f"With n = {smallest} the tile does {fmt_intensity(reached)} of operands, enough to "
                        f"reach the {g.name}'s shared-memory ridge of {fmt_intensity(ridge)}{below}. A narrower tile "
                        "leaves the tensor cores waiting on shared memory.",
                        hint="Write the flops (2mnk) and the operand bytes (s(mk + kn)); k cancels. Set the ratio equal "
                        "to the peak over the shared-memory bandwidth, solve for n, and round up to a multiple of 8.")


WORKED = ("H100-SXM", 8192)
"""The GPU and width at which the chapter works the critical batch out (its exercises ask for others)."""


def check_critical_batch(gpu, width, weight: str, answer) -> Feedback:
    """Chapter 6: the smallest batch at which a decode GEMM with `weight` weights (fp16
    activations, fp16 tensor math) on `gpu` stops being HBM-bound (`gemm_critical_batch`). The
    chapter's own case (`WORKED`, same weights) is a slip where the question asks another."""
    smallest = gemm_critical_batch(gpu, width, weight)
    g = presets.gpu(gpu)
    slips = {math.ceil(g.ridge("hbm", "fp16") * WEIGHT_BYTES[weight] / 2): "That leaves out the activations' bytes: "
             "2 per element, read in and written out.",
             gemm_critical_batch(gpu, width, weight, math="fp32"): "That uses the FP32 ALUs' peak; this GEMM runs on the "
             "tensor cores at fp16."}
    if (g.name, int(width)) != WORKED:
        slips.setdefault(gemm_critical_batch(WORKED[0], WORKED[1], weight),
                         f"That is the chapter's own case, the {WORKED[0]} at the width it worked; this question "
                         "changes the GPU or the width, so redo the count with its ridge and its width.")
    if smallest > 1:
        slips.setdefault(smallest - 1, "One short: at that batch the intensity still falls just below the ridge. "
                         "Carry the figures at the precision the question gives them, and round up.")
    reached, ridge = float(gemm_intensity(smallest, width, weight)), g.ridge("hbm", "fp16")
    relation = "past" if fmt_intensity(reached) != fmt_intensity(ridge) else "level with"
    return check_number(answer, smallest, "sequences", rtol=0, whole=True,
                        key=f"check_critical_batch({g.name}, {width}, {weight})",
                        doubled=FLOPS_AND_BYTES,
                        mistakes=list(slips.items()),
                        explain=f"At B = {smallest} the {weight} GEMM does {fmt_intensity(reached)} of HBM traffic, "
                        f"{relation} the {g.name}'s ridge of {fmt_intensity(ridge)}, and one sequence fewer falls short "
                        "of it. A lower ridge or "
                        "fewer bytes per weight, and fewer sequences must share each weight; a narrower matrix, "
                        "and the activations' bytes weigh more beside the weights'.",
                        hint=f"The flops are 2Bw²; the bytes are {WEIGHT_BYTES[weight]:g} per weight for w² weights "
                        "plus 2 bytes per activation for the 2Bw activations in and out. Solve for B and round up.")


def check_last_wave(m, n, block, gpu, answer) -> Feedback:
    """Chapter 6: the occupancy of the last wave, (tiles mod SMs) / SMs as a fraction, of an
    m x n output in `block` tiles, one block per SM of `gpu`."""
    w = wave_quantisation(m, n, block, gpu)
    rules = number_rules(
        w.last, "of the SMs", rtol=0.01, units={"%": 0.01},
        mistakes=[(w.efficiency, "That is the share of the whole grid's SM time; the question asks about the last wave "
                   "alone."), (1 - w.last, "That is the idle share of the last wave; the question asks for the busy "
                   "share.")],
        ranges=[(1, 1e308, "Give the occupancy as a fraction between 0 and 1 (or a percentage, with %), not a count "
                 "of SMs or tiles.")],
        explain=f"{w.tiles} tiles on {w.slots} SMs take {w.waves} waves; the last one keeps "
        f"{w.tiles % w.slots or w.slots} SMs busy, so the grid uses {w.efficiency:.1%} of the SMs' time.",
        hint="Count the tiles along each side (round up), multiply, and find what is left after as many full waves of "
        "one tile per SM as fit.")
    return judge(rules, answer, "a fraction between 0 and 1", f"check_last_wave({m}, {n}, {block}, {gpu})",
                 "fraction of the SMs")


DECODE_BATCHES = (1, 8, 32, 64, 128, 192, 256, 320, 384, 512, 1024)


WEIGHTS = ("fp16", "int8", "int4")


DECODE_GPUS = ("A100-40GB", "H100-SXM", "H200", "L4")


def decode_batch(gpu: str = "H100-SXM", weight: str = "int8", width: int = 8192) -> WidgetExercise:
    """Chapter 6: the smallest batch (of DECODE_BATCHES) at which the HBM intensity of a
    decode step's weight GEMM with `weight` weights reaches `gpu`'s HBM ridge (the tensor
    cores' fp16 peak over HBM bandwidth)."""
    _check.member("gpu", gpu, DECODE_GPUS)
    _check.member("weight", weight, WEIGHTS)
    width = _check.one("width", width)
    if gemm_intensity(DECODE_BATCHES[-1], width, weight) < presets.gpu(gpu).ridge("hbm", "fp16"):
        raise ValueError(f"width must let a batch of {DECODE_BATCHES[-1]} reach the {gpu}'s HBM ridge with {weight} "
                         f"weights, got {width!r}")

    def view(gpu, weight, batch):
        g = presets.gpu(gpu)
        intensity, ridge = float(gemm_intensity(batch, width, weight)), g.ridge("hbm", "fp16")
        side = "below" if intensity < ridge else "at or past"
        return bars(f"Decode GEMM, batch {batch}, {weight} weights, width {width:,} on the {gpu}: "
                    f"<b>{fmt_intensity(intensity)}</b> against HBM, <b>{side}</b> the HBM ridge",
                    [("intensity", intensity, fmt_intensity(intensity), intensity < ridge),
                     ("HBM ridge", ridge, fmt_intensity(ridge), False)])

    g = presets.gpu(gpu)
    smallest = next(b for b in DECODE_BATCHES
                    if gemm_intensity(b, width, weight) >= g.ridge("hbm", "fp16"))
    exact = gemm_critical_batch(g, width, weight)  # the critical batch itself, which the menu may not offer
    mistakes = [] if exact in DECODE_BATCHES else [
        (exact, "That is the critical batch itself, where the intensity first reaches the ridge. The explorer "
         "offers only some batches: which is the first of them at or past it?")]
    return WidgetExercise(
        "decode-batch", {"gpu": list(DECODE_GPUS), "weight": list(WEIGHTS),
                         "batch": list(DECODE_BATCHES)},
        view,
        number_rules(smallest, "sequences", 0, explain="Each weight is read once per step whatever the batch, so "
                     "narrower weights cut the bytes and the batch the tensor cores need shrinks with them.",
                     hint="Fix the GPU and the weights; step through the batches the explorer offers until the "
                     "intensity bar passes the ridge.",
                     doubled=FLOPS_AND_BYTES, mistakes=mistakes),
        "the smallest batch the explorer offers", asks=asked(gpu=gpu, weight=weight, batch=upto(DECODE_BATCHES, smallest)))


WAVE_SIZES = (2048, 3072, 4096, 5120, 6144, 7168, 8192)


WAVE_GPUS = ("A100-40GB", "H100-SXM", "B200")


WAVE_BLOCKS = (128, 256)


def wave_tail(gpu: str = "H100-SXM", block: int = 128) -> WidgetExercise:
    """Chapter 6: the square output size (of WAVE_SIZES) whose `block` x `block` tiles fill
    the most of their last wave on `gpu` (one block per SM)."""
    _check.member("gpu", gpu, WAVE_GPUS)
    _check.member("block", block, WAVE_BLOCKS)

    def view(gpu, size, block):
        w = wave_quantisation(size, size, (block, block), gpu)
        waves = f"{w.waves} wave" if w.waves == 1 else f"{w.waves} waves"
        return bars(f"{size:,} x {size:,} output in {block} x {block} tiles on the {gpu}: {w.tiles:,} tiles, "
                    f"{waves}, the last <b>{fmt_percent(w.last, 3)}</b> full",
                    [("last wave", w.last, fmt_percent(w.last, 3), w.last < 0.5),
                     ("all waves", w.efficiency, fmt_percent(w.efficiency, 3), False)])

    best = max(WAVE_SIZES, key=lambda n: wave_quantisation(n, n, (block, block), gpu).last)
    return WidgetExercise(
        "wave-tail", {"gpu": list(WAVE_GPUS), "size": list(WAVE_SIZES), "block": list(WAVE_BLOCKS)},
        view,
        number_rules(best, "elements per side", 0, explain="Its tile count is just under a multiple of the SMs, so "
                     "the last wave keeps almost every SM busy; the others leave part of the GPU idle at the end.",
                     hint="Hold the GPU and the tile; compare the last wave's bar across sizes."),
        "size", labels={"block": lambda b: f"{b} x {b}"}, asks=asked(gpu=gpu, size=list(WAVE_SIZES), block=block))


WIDGET_EXERCISES = (decode_batch, wave_tail)
"""This chapter's widget exercises, in the order it shows them."""


def cp_decode(width: int = 8192) -> Checkpoint:
    """Chapter 6, "Decode, and narrower numbers": a batch of 8 decode GEMM's HBM intensity,
    reasoned from batch 1's (each weight read once, used by every sequence)."""
    batch = 8
    intensity = float(gemm_intensity(batch, width, "fp16"))
    one = float(gemm_intensity(1, width, "fp16"))
    return Checkpoint(
        "cp-tc-decode",
        f"At batch 1 the decode GEMM (a {width:,} x {width:,} fp16 weight matrix read from HBM) does about "
        f"{fmt_intensity(one)}, as computed above. Now {batch} sequences share each weight read, each with its own "
        "fp16 activation row in and out. About how many flops per HBM byte does the GEMM do?",
        number_rules(intensity, "FLOP/B", 0.02, doubled="an fp16 weight is two bytes, and each use of it is one FMA "
                     "of two flops.",
                     mistakes=[(one, "That is batch 1's intensity: each weight read is now used by every sequence "
                                "of the batch.")],
                     explain="The weights' bytes stay the same while the flops grow with the batch; the activations "
                     "add only a little. Still far below the ridge, so the step is still HBM-bound.",
                     hint="Count the flops each weight now does (two per sequence) against its two bytes; the "
                     "activations' bytes are few beside the weights'."),
        "intensity")


def cp_waves(tiles: int = 300, gpu: str = "H100-SXM") -> Checkpoint:
    """Chapter 6, "Waves and tails": the empty slots of the last wave of `tiles` one-per-SM
    tiles on `gpu`, how many tiles more the grid could hold in the same waves."""
    tiles = _check.integer("tiles", tiles, 1, 2**31)
    sms = int(presets.gpu(gpu).sms.value)
    waves = math.ceil(tiles / sms)
    spare = waves * sms - tiles
    return Checkpoint(
        "cp-tc-waves",
        f"A GEMM's grid has {tiles} tiles, and the {gpu}'s {sms} SMs each run one tile at a time. How many more tiles "
        "could the grid hold and still finish in the same number of waves?",
        number_rules(float(spare), "tiles", 0, whole=True,
                     explain="Those are the last wave's idle SMs: work added there is free, which is what split-K and "
                     "stream-K exploit.",
                     hint="Find the waves first (round up), then compare the slots they offer with the tiles.",
                     mistakes=[(float(tiles % sms), "That is how many tiles the last wave runs; the question asks "
                                "for its empty slots."),
                               (float(waves), "That is the number of waves; the question asks for tiles.")]),
        "tiles")


CHECKPOINTS = {"cp-tc-decode": cp_decode, "cp-tc-waves": cp_waves}
"""This chapter's checkpoints, in the order it shows them."""

RELIES_ON = {
    "cp-tc-decode": ("gemv_intensity",),                      # the prompt gives batch 1's; the page's batch-B count
    "cp-tc-waves": (),                                        # the question gives the tiles and the SMs
    "ex-tc-operand-n": ("a100_smem_ridge", "warp_tile"),      # the A100's ridge; the page's 64 x 64 tile and its formula
    "ex-intensity-decode": ("b_star", "term:critical batch"),  # the H200's figures are in the question
    "ex-tc-int4-batch": ("b_int4", "hbm_ridge", "term:critical batch"),
    "ex-tc-last-wave": ("w_sms",),
    "ex-tensor-explore-decode": ("hbm_ridge", "b_int4", "term:critical batch"),  # int8's batch is the learner's to find
    "ex-tensor-explore-waves": ("w_sms",),
}
"""What each checkpoint and exercise needs from the page above it (tests/test_checkpoints.py)."""
