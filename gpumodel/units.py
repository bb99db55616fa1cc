"""Human units at the edge: every chapter prints times, sizes and rates the same way.

Decimal SI prefixes (1 TB/s = 1e12 bytes/s, 1 MB = 1e6 bytes), three significant
figures unless `digits` says otherwise: `fmt_time(2.0714e-3) == "2.07 ms"`.
"""

from __future__ import annotations

import math
import re
from decimal import ROUND_HALF_UP, Decimal

from . import _check

_PREFIXES = [(1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"), (1.0, "")]
_TIME = [(1.0, "s"), (1e-3, "ms"), (1e-6, "µs"), (1e-9, "ns")]


def _round(x: float, digits: int) -> float:
    """x rounded half-up to `digits` significant figures, as written (1.555 -> 1.56)."""
    digits = _check.integer("digits", digits, 1, 17)
    if x == 0:
        return 0.0
    exponent = math.floor(math.log10(abs(x)))
    step = Decimal(1).scaleb(exponent - digits + 1)
    return float(Decimal(repr(x)).quantize(step, rounding=ROUND_HALF_UP))


def _significant(x: float, digits: int) -> str:
    """x with `digits` significant figures, trailing zeros kept (30.0, not 30)."""
    x = _round(x, digits)
    if x == 0:
        return "0"
    decimals = max(digits - 1 - math.floor(math.log10(abs(x))), 0)
    return f"{x:.{decimals}f}"


def _prefixed(x: float, unit: str, digits: int) -> str:
    for scale, prefix in _PREFIXES:
        if abs(_round(x, digits)) >= scale:
            return f"{_significant(x / scale, digits)} {prefix}{unit}"
    return f"{_significant(x, digits)} {unit}"


def fmt_time(seconds, digits: int = 3) -> str:
    """A time in seconds as `2.07 ms`, `13.8 µs`, `1.20 s`."""
    seconds = _check.real("seconds", seconds)
    for scale, unit in _TIME:
        if abs(_round(seconds, digits)) >= scale:
            return f"{_significant(seconds / scale, digits)} {unit}"
    return f"{_significant(seconds / 1e-9, digits)} ns"


def fmt_bytes(nbytes, digits: int = 3) -> str:
    """A size in bytes as `33.5 MB`, `8.59 GB` (decimal prefixes)."""
    return _prefixed(_check.real("nbytes", nbytes), "B", digits)


def fmt_capacity(nbytes) -> str:
    """A capacity: binary units on chip (`256 KiB`, `40 MiB`), decimal GB for memory
    (`80 GB`), as the datasheets state them."""
    nbytes = _check.real("nbytes", nbytes)
    for scale, unit in ((1e9, "GB"), (1024**2, "MiB"), (1024, "KiB"), (1, "B")):
        if nbytes >= scale:
            q = nbytes / scale
            return f"{q:g} {unit}" if q == round(q) else f"{_significant(q, 3)} {unit}"
    return f"{nbytes:g} B"


def fmt_bandwidth(bytes_per_second, digits: int = 3) -> str:
    """A bandwidth in bytes/s as `7.22 TB/s`."""
    return _prefixed(_check.real("bytes_per_second", bytes_per_second), "B/s", digits)


def fmt_flops(flops_per_second, digits: int = 3) -> str:
    """A rate in FLOP/s as `19.5 TFLOP/s`."""
    return _prefixed(_check.real("flops_per_second", flops_per_second), "FLOP/s", digits)


def fmt_count(flops, digits: int = 3) -> str:
    """An amount of work in flops as `1.10 TFLOP`."""
    return _prefixed(_check.real("flops", flops), "FLOP", digits)


def fmt_number(x, digits: int = 3) -> str:
    """A plain number to `digits` significant figures, trailing zeros kept: 20 -> `20.0`."""
    return _significant(_check.real("x", x), digits)


SUPERSCRIPTS = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")


def superscript(power: int) -> str:
    """An integer power as a superscript: 18 -> `¹⁸`, -7 -> `⁻⁷`."""
    return str(_check.integer("power", power, -10**6, 10**6)).translate(SUPERSCRIPTS)


def powers(text: str) -> str:
    """`text` with its caret powers as a reader writes them: "8192^3" -> `8192³`, "K^T" -> `Kᵀ`
    (the published records name their sizes with carets, as their sources do)."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    return re.sub(r"(\w)\^(T\b|-?\d+)", lambda m: m[1] + ("ᵀ" if m[2] == "T" else superscript(int(m[2]))), text)


def fmt_exact(x) -> str:
    """`x` as a reader writes it, never in e-notation: a whole number with thousands separated
    (536,870,912), four significant digits between 0.001 and a million, else 5.369 × 10⁸."""
    x = _check.real("x", x)
    if x.is_integer() and abs(x) < 1e15:
        return f"{int(x):,}"
    if 1e-3 <= abs(x) < 1e6:  # four significant digits, never "3.231e+04"
        rounded = float(f"{x:.4g}")
        return f"{int(rounded):,}" if rounded.is_integer() else f"{rounded:,}"
    mantissa, exponent = f"{x:.4g}".split("e")
    return f"{mantissa} × 10{superscript(int(exponent))}"


def fmt_intensity(flops_per_byte, digits: int = 3) -> str:
    """An arithmetic intensity as `0.250 FLOP/B`."""
    return f"{_significant(_check.real('flops_per_byte', flops_per_byte), digits)} FLOP/B"


LEVEL_NAMES = {"registers": "registers", "smem": "shared memory", "l2": "L2", "hbm": "HBM"}
"""Each level as prose names it."""


def fmt_bound(bound) -> str:
    """A bound as prose names it: "smem" -> `shared memory`, "hbm" -> `HBM`, "sfu" -> `the
    special-function units`; a sequence of kernels (chapter 7) is bound by "overhead" or "kernels",
    a step over several GPUs (chapter 10) by its "link"."""
    names = {"compute": "compute", "sfu": "the special-function units", "overhead": "launch overhead",
             "kernels": "the kernels themselves", "link": "the link between GPUs", **LEVEL_NAMES}
    if str(bound) not in names:
        raise ValueError(f"bound must be one of {tuple(names)}, got {bound!r}")
    return names[str(bound)]


def fmt_percent(fraction, digits: int = 2) -> str:
    """A fraction as a percentage: 0.0066 -> `0.66%`, 1.0 -> `100%`."""
    percent = 100 * _check.real("fraction", fraction)
    if not math.isfinite(percent):
        raise ValueError(f"fraction must be at most 1e306 in magnitude, got {fraction!r}")
    return f"{_significant(percent, digits)}%"


def fmt_list(words) -> str:
    """Words as a list in prose: ["T4"] -> `T4`, ["T4", "L4"] -> `T4 and L4`,
    ["T4", "L4", "B200"] -> `T4, L4 and B200` (chapters glue lists of presets this way)."""
    if isinstance(words, str) or not hasattr(words, "__iter__"):
        raise TypeError(f"words must be a sequence of strings, got {words!r}")
    words = list(words)
    if not words or not all(isinstance(w, str) and w.strip() for w in words):
        raise ValueError(f"words must be one or more non-empty strings, got {words!r}")
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} and {words[-1]}"
