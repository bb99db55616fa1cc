"""Answer checkers for the exercises: a learner's answer in, right or not with the reason
out. Each chapter's checkers say which exercise they serve.

A checker returns `Feedback`, which prints as a sentence and is truthy when right. `None`
means "not answered yet". A wrong answer gets a hint (units, a factor, where to look), never
the answer; the reasoning comes with the right one. An answer of the wrong type (a string
or a list where a number is expected) gets a sentence, not a traceback. A number may be a
Python or NumPy number, or a 0-d array.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from . import _check, presets
from .hardware import BANK_BYTES, SMEM_BANKS
from .model import BOUNDS, TIE_RTOL, predict
from .units import fmt_bandwidth, fmt_intensity, fmt_time
from .workloads import attention, elementwise_chain, flash_block, gemm, seed_kernels


@dataclass(frozen=True)
class Feedback:
    """Whether an answer is right, and why (or a hint)."""

    correct: bool
    message: str

    def __bool__(self) -> bool:
        return self.correct

    def __str__(self) -> str:
        return ("Right. " if self.correct else "Not yet. ") + self.message

    def _repr_markdown_(self) -> str:
        return ("**Right.** " if self.correct else "**Not yet.** ") + self.message


def _wrong_type(answer, wanted: str) -> Feedback:
    """The sentence for an answer that is not what the question asks for."""
    shown = repr(answer)
    shown = shown if len(shown) <= 40 else shown[:37] + "..."
    return Feedback(False, f"The answer should be {wanted}; {shown} is a {type(answer).__name__}. "
                    "Replace it and run the cell again.")


POWER_OF_TEN = "by a power of ten: check the units."
FACTOR_OF_TWO = "by a factor of two: is every flop counted (an FMA is two), and every byte (reads and writes)?"


def number_rules(expected: float, unit: str, rtol: float = 0.02, explain: str = "", hint: str = "") -> dict:
    """How a numeric answer is judged, as data (JSON), so that Python (`verdict`) and the
    static site's answer boxes judge alike: right within `rtol` of `expected` (in `unit`);
    otherwise the first band of `value / expected` that holds it names the mistake (a wrong
    sign, a power of ten, a factor of two, close), else "too high" or "too low". `hint`
    (which must not give the answer away) follows every wrong verdict; `explain` the right one."""
    expected = _check.real("expected", expected)
    rtol = _check.real("rtol", rtol, least=0)
    closeness = f"within {100 * rtol:g}% of {expected:.4g} {unit}" if rtol else "exactly it"
    bands = [[-1e308, 0.0, "The sign is wrong."]]
    for decades in (-3, -2, -1, 1, 2, 3):
        direction = "high" if decades > 0 else "low"
        bands.append([10 ** (decades - 0.05), 10 ** (decades + 0.05), f"Too {direction} {POWER_OF_TEN}"])
    bands += [[1.95, 2.05, f"Too high {FACTOR_OF_TWO}"], [0.4875, 0.5125, f"Too low {FACTOR_OF_TWO}"],
              [0.9, 1.0, "Close, but a little too low: carry more digits, or check a rounded figure."],
              [1.0, 1.1, "Close, but a little too high: carry more digits, or check a rounded figure."]]
    suffix = f" {hint}" if hint else ""
    return {"kind": "number", "answer": expected, "unit": unit, "rtol": rtol,
            "right": f"That is {closeness}. {explain}".strip(),
            "bands": [[lo, hi, text + suffix] for lo, hi, text in bands] if expected else [],
            "high": "Too high." + suffix, "low": "Too low." + suffix,
            "not_number": f"Type a number in {unit}."}


def choice_rules(answer: str, wrong: dict, explain: str = "") -> dict:
    """How a named answer (one word, say a GPU) is judged, as data: right when it is
    `answer` (case and spaces ignored); `wrong` maps every other accepted name to its hint."""
    if not isinstance(answer, str):
        raise TypeError(f"answer must be the right name as a string, got {answer!r}")
    if not isinstance(wrong, dict) or not all(isinstance(name, str) for name in wrong):
        raise TypeError(f"wrong must be a dict from names (strings) to hints, got {wrong!r}")
    key = _key(answer)
    if key in map(_key, wrong):
        raise ValueError(f"wrong must not hold the answer {answer!r}")
    return {"kind": "choice", "answer": key, "right": explain,
            "wrong": {_key(name): text for name, text in wrong.items()},
            "not_number": f"Type one of: {', '.join([answer, *wrong])}."}


def _key(name: str) -> str:
    """A typed name as the rules compare it: lower case, no spaces."""
    return "".join(str(name).lower().split())


def verdict(rules: dict, answer) -> Feedback:
    """Judge `answer` by `rules` (`number_rules` or `choice_rules`). Text is read as the
    answer box on the site reads it; a number may be Python's or NumPy's."""
    if not isinstance(rules, dict) or rules.get("kind") not in ("number", "choice"):
        raise TypeError(f"rules must be made by number_rules or choice_rules, got {rules!r}")
    if rules["kind"] == "choice":
        key = _key(answer) if isinstance(answer, str) else None
        if key == rules["answer"]:
            return Feedback(True, rules["right"])
        return Feedback(False, rules["wrong"].get(key, rules["not_number"]))
    if isinstance(answer, str):
        try:
            answer = float(answer.strip())
        except ValueError:
            return Feedback(False, rules["not_number"])
    value = _check.answer(answer)
    if value is None:
        return Feedback(False, rules["not_number"])
    expected = rules["answer"]
    if math.isclose(value, expected, rel_tol=rules["rtol"]):
        return Feedback(True, rules["right"])
    ratio = value / expected if expected else None
    for lo, hi, text in rules["bands"]:
        if ratio is not None and lo <= ratio < hi:
            return Feedback(False, text)
    return Feedback(False, rules["high"] if value > expected else rules["low"])


def check_number(answer, expected: float, unit: str, rtol: float = 0.02, explain: str = "", hint: str = "") -> Feedback:
    """Right when `answer` is within `rtol` of `expected` (both in `unit`). `explain` comes
    with a right answer; `hint` (which must not give the answer away) with a wrong one."""
    if answer is None:
        return Feedback(False, f"No answer yet: replace None with a number in {unit}.")
    value = _check.answer(answer)
    if value is None:
        return _wrong_type(answer, f"a number in {unit}")
    judged = verdict(number_rules(expected, unit, rtol, explain, hint), value)
    return Feedback(judged.correct, f"{value:g} {unit}: {judged.message}")


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


L2_TILES = (16, 32, 64, 128, 256, 512)


def check_l2_tile(gpu, size: int, answer) -> Feedback:
    """Chapter 4: the smallest square block tile (of L2_TILES) at which L2 stops binding an
    fp16 size^3 tensor-core GEMM on `gpu`: L2 intensity about b / 2 against the L2 ridge."""
    size = int(_check.size("size", size))
    p = {b: predict(gemm(size, size, size, block=(b, b), thread=(min(b, 64),) * 2, dtype="fp16"), gpu)
         for b in L2_TILES if b <= size}
    fine = [b for b, q in p.items() if q.level_times["l2"] <= q.compute_time]
    if not fine:
        raise ValueError(f"size must allow a tile that escapes L2 on {presets.gpu(gpu).name}, got {size!r}")
    b = fine[0]
    return check_number(answer, b, "elements per side", rtol=0,
                        explain=f"A {b} x {b} fp16 tile does about {b // 2} flops per byte it reads from L2 (b / s, "
                        f"s = 2 bytes), past the {presets.gpu(gpu).name}'s fp16 L2 ridge of "
                        f"{fmt_intensity(p[b].ridge['l2'])}; the tile half its size falls short.",
                        hint="The L2 intensity of a b x b tile is about b / s; the ridge is the tensor peak over the L2 "
                        "bandwidth. Take the next power of two.")


def check_attention_limit(head_dim: int, dtype: str, answer) -> Feedback:
    """Chapter 5: the HBM intensity (FLOP/B) that standard attention approaches as N grows,
    for `head_dim` and `dtype`: 4 N^2 d flops over the N^2 matrices' trips."""
    w = attention(1, 1, 2**24, head_dim, dtype, "standard")
    limit = float(w.flops / w.bytes["hbm"])
    return check_number(answer, limit, "FLOP/B", rtol=0.01,
                        explain=f"The N^2 terms win: 4 N^2 d flops over 4 trips of N^2 elements of "
                        f"{_check.dtype_bytes(dtype)} bytes, d / s. Every preset's tensor-core HBM ridge is higher, "
                        "so standard attention stays memory-bound at any length.",
                        hint="Keep only the terms that grow as N^2: the flops of the two matmuls and the trips of the "
                        "scores and probabilities.")


def check_hbm_bytes_per_clock(gpu, answer) -> Feedback:
    """Appendix: the HBM bytes each SM of `gpu` gets per clock when all share it evenly."""
    g = presets.gpu(gpu)
    per = g.bandwidth("hbm") / (g.sms.value * g.clock.value)
    return check_number(answer, per, "B/clk", rtol=0.01,
                        explain=f"{fmt_bandwidth(g.bandwidth('hbm'), 4)} over {g.sms.value:g} SMs and "
                        f"{g.clock.value / 1e6:g} MHz; against the {SMEM_BANKS * BANK_BYTES} B/clk of its own "
                        "shared memory, HBM is a trickle.",
                        hint="Divide the bandwidth by the SMs and by the clock in Hz.")


def check_padding(rows: int, cols: int, answer) -> Feedback:
    """Chapter 3: the padding, in 4-byte words per row, that makes a warp's column read of a
    `rows` x `cols` float tile conflict-free (the smallest such padding is asked for)."""
    from .simulate import bank_conflicts, warp_addresses

    rows, cols = int(_check.size("rows", rows)), int(_check.size("cols", cols))
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
    from .occupancy import occupancy

    o = occupancy(gpu, threads, registers, smem)
    limits = ", ".join(f"{k} allow {v:g} blocks" for k, v in o.per_resource.items())
    return check_number(answer, float(o.warps), "warps", rtol=0,
                        explain=f"{limits}; the {o.limiter} limit binds: {o.blocks:g} blocks of "
                        f"{threads // 32 + (threads % 32 > 0)} warps.")


def check_flash_block(sram_bytes: int, head_dim: int, dtype: str, answer) -> Feedback:
    """Chapter 5: the largest power-of-two block that fits `sram_bytes` (see flash_block)."""
    expected = flash_block(sram_bytes, head_dim, dtype)
    return check_number(answer, float(expected), "rows", rtol=0,
                        explain=f"3 x {expected} x {head_dim} + {expected}^2 elements fit; twice that block does not.")




def check_bound_fraction(gpu, what: str, answer) -> Feedback:
    """Appendix "How good is the model?": the fraction (0 to 1) of the model's bound that
    the published measurement `what` on preset `gpu` reached (`gpumodel.published`)."""
    from .published import comparisons

    named = isinstance(gpu, str) and isinstance(what, str)
    found = [c for c in comparisons() if named and c.record.gpu == gpu and c.record.what == what]
    if not found:
        raise ValueError(f"gpu and what must name a published record, got {gpu!r}, {what!r}")
    c = found[0]
    return check_number(answer, c.fraction, "of the bound", rtol=0.02,
                        explain=f"The model's bound is set by {c.bound}; the run reached that share of it.",
                        hint="Put the measurement and the model's figure in the same unit, then divide the "
                        "measured rate by the model's (or the model's time by the measured time).")
