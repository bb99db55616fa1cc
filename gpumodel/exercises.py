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
import numbers
from dataclasses import dataclass

import numpy as np

from . import presets
from .hardware import LEVELS
from .model import BOUNDS, predict
from .units import fmt_bandwidth, fmt_time
from .workloads import elementwise_chain, flash_block, seed_kernels, warp_sectors


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


def _real(answer) -> float | None:
    """`answer` as a float if it is one finite real number (Python or NumPy, or a 0-d array)."""
    if isinstance(answer, np.ndarray) and answer.ndim == 0:
        answer = answer[()]
    if isinstance(answer, (bool, np.bool_)) or not isinstance(answer, numbers.Real):
        return None
    return float(answer) if math.isfinite(answer) else None


def _wrong_type(answer, wanted: str) -> Feedback:
    """The sentence for an answer that is not what the question asks for."""
    shown = repr(answer)
    shown = shown if len(shown) <= 40 else shown[:37] + "..."
    return Feedback(False, f"The answer should be {wanted}; {shown} is a {type(answer).__name__}. "
                    "Replace it and run the cell again.")


def _hint(value: float, expected: float) -> str:
    """A hint for a wrong number that does not give the expected one away."""
    if expected and value and (value > 0) != (expected > 0):
        return "The sign is wrong."
    ratio = abs(value / expected) if expected else math.inf
    direction = "high" if value > expected else "low"
    decades = math.log10(ratio) if 0 < ratio < math.inf else 0.0
    if round(decades) and abs(decades - round(decades)) < 0.05:
        return f"Too {direction} by a power of ten: check the units."
    if 0.9 < ratio < 1.1:
        return f"Close, but a little too {direction}: carry more digits, or check a rounded figure."
    if abs(ratio - 2) < 0.05 or abs(ratio - 0.5) < 0.025:
        return (f"Too {direction} by a factor of two: is every flop counted (an FMA is two), and every byte "
                "(reads and writes)?")
    return f"Too {direction}."


def check_number(answer, expected: float, unit: str, rtol: float = 0.02, explain: str = "", hint: str = "") -> Feedback:
    """Right when `answer` is within `rtol` of `expected` (both in `unit`). `explain` comes
    with a right answer; `hint` (which must not give the answer away) with a wrong one."""
    if answer is None:
        return Feedback(False, f"No answer yet: replace None with a number in {unit}.")
    value = _real(answer)
    if value is None:
        return _wrong_type(answer, f"a number in {unit}")
    if math.isclose(value, expected, rel_tol=rtol):
        closeness = f"is within {100 * rtol:g}% of {expected:.4g} {unit}" if rtol else "is exactly it"
        return Feedback(True, f"{value:g} {unit} {closeness}. {explain}".strip())
    return Feedback(False, f"{value:g} {unit}: {_hint(value, expected)} {hint}".strip())


def check_bandwidth(gpu, level: str, answer) -> Feedback:
    """Appendix "GPU presets": the bandwidth of `level` on `gpu`, derived from its
    figures, in TB/s."""
    if level not in LEVELS:
        raise ValueError(f"level must be one of {LEVELS}, got {level!r}")
    g = presets.gpu(gpu)
    formulas = {
        "registers": "6 x the FP32 peak (three 4-byte operands per 2-flop FMA)",
        "smem": f"{g.sms.value:g} SMs x 32 banks x 4 B x {g.clock.value / 1e6:g} MHz",
        "l2": f"{g.l2_bytes_per_clock:g} B/clk x {g.clock.value / 1e6:g} MHz",
        "hbm": "the datasheet figure",
    }
    expected = g.bandwidth(level)
    return check_number(answer, expected / 1e12, "TB/s", rtol=0.01,
                        explain=f"{g.name}: {formulas[level]} = {fmt_bandwidth(expected, 4)}.")


def check_bound(kernel: str, gpu, answer) -> Feedback:
    """Chapter 1: which part bounds one of chapter 1's kernels (`gm.seed_kernels()`) on
    `gpu`: "compute", "registers", "smem", "l2" or "hbm"."""
    def explain(p):
        times = ", ".join(f"{part} {fmt_time(p.compute_time if part == 'compute' else p.level_times[part])}"
                          for part in BOUNDS)
        return f"The model's times on the {p.gpu.name}: {times}; the largest, {p.bound}, sets {fmt_time(p.time)}."

    return _check_bound_of(seed_kernels(), kernel, gpu, answer, explain)


def _check_bound_of(kernels: dict, kernel: str, gpu, answer, explain) -> Feedback:
    """Right when `answer` is the bound of `kernels[kernel]` on `gpu`; `explain(p)` says why.
    A wrong bound is told how long its part takes, against the kernel's time."""
    if kernel not in kernels:
        raise ValueError(f"kernel must be one of {list(kernels)}, got {kernel!r}")
    if answer is None:
        return Feedback(False, f"No answer yet: replace None with one of {BOUNDS}.")
    if not isinstance(answer, str) or answer not in BOUNDS:
        return _wrong_type(answer, f"one of the strings {', '.join(map(repr, BOUNDS))}")
    p = predict(kernels[kernel], presets.gpu(gpu))
    if answer == p.bound:
        return Feedback(True, explain(p))
    took = p.compute_time if answer == "compute" else p.level_times[answer]
    if took >= p.time * (1 - 1e-9):
        return Feedback(False, f"In the model, {answer} needs the whole {fmt_time(p.time)}, but so does another part, "
                        "and ties go to the part listed first in gm.BOUNDS.")
    return Feedback(False, f"In the model, {answer} needs {fmt_time(took)}, but the kernel takes {fmt_time(p.time)}: "
                    "another part needs longer. Compare what each part is asked for, per flop, with what it serves.")


def check_machine_balance(gpu, answer) -> Feedback:
    """Chapter 1: the FP32 flops per HBM byte at which `gpu` is as fast at arithmetic
    as at feeding it (peak FP32 / HBM bandwidth), in FLOP/B."""
    g = presets.gpu(gpu)
    expected = g.peak_flops / g.bandwidth("hbm")
    return check_number(answer, expected, "FLOP/B", rtol=0.02,
                        explain=f"{g.name}: {g.peak_flops / 1e12:.4g} TFLOP/s / {fmt_bandwidth(g.bandwidth('hbm'), 4)}.")


def check_chain_intensity(ops: int, fused: bool, dtype: str, answer) -> Feedback:
    """Chapter 2: the HBM intensity (FLOP/B) of a chain of `ops` one-flop elementwise
    steps, fused or not, on elements of `dtype`."""
    w = elementwise_chain(1, ops, fused, dtype)
    expected = float(w.flops / w.bytes["hbm"])
    trips = float(w.bytes["hbm"]) / (2 if dtype != "fp32" else 4)
    return check_number(answer, expected, "FLOP/B", rtol=0.01,
                        explain=f"{ops} flops per element over {trips:g} trips of {2 if dtype != 'fp32' else 4} bytes.")


def check_fusion_speedup(ops: int, answer) -> Feedback:
    """Chapter 2: the most fusing a chain of `ops` elementwise kernels can gain when every
    kernel is HBM-bound: the ratio of trips, 2 x ops to 2."""
    if not isinstance(ops, int) or ops < 1:
        raise ValueError(f"ops must be a positive integer, got {ops!r}")
    return check_number(answer, float(ops), "times", rtol=0.01,
                        explain=f"unfused, {2 * ops} trips per element; fused, 2: at most {ops}x.")


def check_sector_stride(answer, elem_bytes: int = 4) -> Feedback:
    """Chapter 2: the smallest stride (in elements of `elem_bytes`) at which one warp's
    load touches 32 sectors, one per thread."""
    expected = next(s for s in range(1, 1025) if warp_sectors(s, elem_bytes) == 32)
    return check_number(answer, float(expected), "elements", rtol=0,
                        explain=f"a 32-byte sector holds {32 // elem_bytes} elements of {elem_bytes} bytes; "
                        f"a stride of {expected} puts each thread in its own sector.")


def check_tile_a100_not_h100(block: int, thread: int) -> Feedback:
    """Chapter 3: is a 4096^3 FP32 GEMM with `block` x `block` tiles and `thread` x `thread`
    results per thread compute-bound on the A100 but not on the H100 SXM?"""
    from .workloads import gemm

    from .tiles import is_legal

    n = 4096
    try:
        w = gemm(n, n, n, block=(block, block), thread=(thread, thread))
    except ValueError as err:
        raise ValueError(f"block and thread must make a legal tile: {err}") from None
    for name in ("A100-40GB", "H100-SXM"):
        if not is_legal(name, block, block, thread, thread):
            threads = (block // thread) ** 2
            return Feedback(False, f"That tile cannot be launched on the {name}: {threads} threads per block "
                            "(32 to 1024 allowed), or too many registers or too much shared memory.")
    a100, h100 = predict(w, "A100-40GB"), predict(w, "H100-SXM")
    verdict = f"On the A100: {a100.bound}-bound; on the H100: {h100.bound}-bound."
    return Feedback(a100.bound == "compute" and h100.bound != "compute", verdict)


def check_padding(rows: int, cols: int, answer) -> Feedback:
    """Chapter 3: the padding, in 4-byte words per row, that makes a warp's column read of a
    `rows` x `cols` float tile conflict-free (the smallest such padding is asked for)."""
    from .simulate import bank_conflicts, warp_addresses

    if answer is None:
        return Feedback(False, "No answer yet: replace None with a number of words.")
    value = _real(answer)
    if value is None or value < 0 or value != int(value):
        return _wrong_type(answer, "a whole number of words, 0 or more")
    answer = int(value)
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


def check_binding_level(kernel: str, gpu, answer) -> Feedback:
    """Chapter 4: which part binds a kernel of `gm.catalogue()` on `gpu`."""
    from .workloads import catalogue

    return _check_bound_of(catalogue(), kernel, gpu, answer,
                           lambda p: f"On the roofline per level, the lowest point is {p.bound}'s: {fmt_time(p.time)}.")


GROUPS = (1, 2, 4, 8, 16, 32, 64)


def check_best_group(size: int, gpu, drift_fraction: float, answer) -> Feedback:
    """Chapter 4: the group size (of GROUPS) that minimises an fp16 size^3 GEMM's HBM traffic
    under the wave model (128 x 128 tiles, two blocks per SM, drift over a fraction of K)."""
    from .waves import gemm_hbm

    if not 0 < drift_fraction <= 1:
        raise ValueError(f"drift_fraction must be in (0, 1], got {drift_fraction!r}")
    drift = max(1, int(size * drift_fraction))
    traffic = {g: gemm_hbm(size, size, size, gpu=gpu, blocks_per_sm=2, order="grouped", group=g,
                           drift_k=drift).hbm for g in GROUPS}
    best = min(traffic, key=traffic.get)
    if answer is None:
        return Feedback(False, f"No answer yet: replace None with one of {GROUPS}.")
    value = _real(answer)
    if value not in traffic:
        return _wrong_type(answer, f"one of the group sizes {GROUPS}")
    if value != best:
        return Feedback(False, f"Group size {value:g} moves {traffic[value] / 1e9:.3g} GB through HBM; "
                        "another moves less. Try the sizes on either side.")
    table = ", ".join(f"{g}: {traffic[g] / 1e9:.3g} GB" for g in GROUPS)
    return Feedback(True, f"HBM traffic by group size: {table}.")


def check_l2_overflow(gpu, answer) -> Feedback:
    """Chapter 4: the smallest vector add (elements of fp32) whose three arrays no longer
    fit in `gpu`'s L2."""
    g = presets.gpu(gpu)
    expected = math.floor(g.capacity("l2") / 12) + 1
    return check_number(answer, float(expected), "elements", rtol=1e-3,
                        explain=f"12 bytes per element against {g.capacity('l2'):,.0f} bytes of L2.")


def check_score_bytes(batch: int, heads: int, seq: int, dtype: str, answer) -> Feedback:
    """Chapter 5: the bytes of the N x N scores of `batch` x `heads` heads, in GB."""
    from .workloads import score_matrix_bytes

    expected = float(score_matrix_bytes(batch, heads, seq, dtype))
    return check_number(answer, expected / 1e9, "GB", rtol=0.01,
                        explain=f"{batch} x {heads} heads x {seq}^2 scores x {2 if dtype != 'fp32' else 4} bytes.")


def check_flash_block(sram_bytes: int, head_dim: int, dtype: str, answer) -> Feedback:
    """Chapter 5: the largest power-of-two block that fits `sram_bytes` (see flash_block)."""
    expected = flash_block(sram_bytes, head_dim, dtype)
    return check_number(answer, float(expected), "rows", rtol=0,
                        explain=f"3 x {expected} x {head_dim} + {expected}^2 elements fit; twice that block does not.")


def check_attention_overflow(gpu, batch: int, heads: int, head_dim: int, dtype: str, answer) -> Feedback:
    """Chapter 5: the smallest power-of-two sequence length at which standard attention's
    forward pass (Q, K, V, O and the N x N scores and probabilities) no longer fits in
    `gpu`'s HBM."""
    from .workloads import attention_memory

    capacity = presets.gpu(gpu).capacity("hbm")
    seq = 2
    while attention_memory(batch, heads, seq, head_dim, dtype, "standard") <= capacity:
        seq *= 2
    flash = float(attention_memory(batch, heads, seq, head_dim, dtype, "flash"))
    return check_number(answer, float(seq), "tokens", rtol=0,
                        explain=f"at N = {seq} standard attention needs "
                        f"{float(attention_memory(batch, heads, seq, head_dim, dtype)) / 1e9:.3g} GB of the "
                        f"{capacity / 1e9:g} GB; flash needs {flash / 1e9:.3g} GB.")
