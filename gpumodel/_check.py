"""Input checks shared by the whole package: bad input is a `ValueError` (or a `TypeError`
for a thing of the wrong kind) naming the parameter and what is accepted, never a NaN, a
warning or a crash deep in NumPy. Messages read "<param> must be <what is accepted>, got
<value>".

A swept parameter is a `size` (or `count`, `amount`) and its sweep's parameters go through
`broadcast` together; a parameter that takes one number (a loop bound, a grid) is `one`; a
widget control's value is a `member` of its menu; a simulation's input is checked by `shape`
and its work before `array` copies it."""

from __future__ import annotations

import math
import numbers

import numpy as np

DTYPE_BYTES = {"fp32": 4, "fp16": 2, "bf16": 2, "fp8": 1}
DTYPES = ("fp32", "fp16", "bf16")
"""The element types every workload builder takes; fp8 only a library GEMM (`gemm_ideal`)."""
LARGEST = 2**53
"""The largest size: float64 counts every whole number up to it exactly."""
MOST_CONFIGURATIONS = 2**20
"""The most configurations one sweep may hold (the size of its broadcast shape): a million
configurations take about half a second through a builder and `predict` on one core."""
BIGGEST = 1e150
"""The largest magnitude a simulation's input (or a time summed over a sequence of kernels) may
hold: products of two such numbers, summed over any dimension a simulation accepts, stay finite
in float64."""


def _numbers(name: str, value, wanted: str) -> np.ndarray:
    """`value` as a non-empty float64 array of finite numbers; only numbers count: not a
    bool, a string, None, a date or a dict."""
    if isinstance(value, (str, bytes, bool, np.bool_, dict)) or value is None:
        raise ValueError(f"{name} must be {wanted}, got {value!r}")
    try:
        raw = np.asarray(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be {wanted}, got {value!r}") from None
    if raw.dtype.kind not in "iuf":  # bool, str, object, datetime, complex...: not a number
        raise ValueError(f"{name} must be {wanted}, got {value!r}")
    if raw.size == 0:
        raise ValueError(f"{name} must not be empty")
    arr = raw.astype(np.float64)
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite, got {value!r}")
    return arr


def array(name: str, value, most: float = BIGGEST) -> np.ndarray:
    """`value` as a non-empty float64 array of finite numbers no larger than `most` in
    magnitude (a simulation's matrix)."""
    return _at_most(name, _numbers(name, value, "an array of numbers"), most)


def _at_most(name: str, arr: np.ndarray, most: float) -> np.ndarray:
    """`arr` if no entry is larger than `most` in magnitude."""
    if np.any(np.abs(arr) > most):
        raise ValueError(f"{name} must hold numbers of magnitude at most {most:g}, got {np.abs(arr).max():g}")
    return arr


def running(name: str, value, shape: tuple, start: float | None = None) -> np.ndarray:
    """A running statistic of an online algorithm: a float64 array of `shape` whose entries
    are finite numbers, or `start` (a maximum that starts at -inf) where nothing is folded in yet."""
    try:
        raw = np.asarray(None if isinstance(value, (str, bytes, bool, dict)) else value)
    except ValueError:  # a ragged list
        raw = np.asarray(None)
    if raw.dtype.kind not in "iuf" or raw.shape != shape:
        raise ValueError(f"{name} must be an array of numbers of shape {shape}, got {value!r}")
    arr = raw.astype(np.float64)
    if not np.all(np.isfinite(arr) | (arr == start)):
        also = "" if start is None else f" (or {start:g} where nothing is folded in yet)"
        raise ValueError(f"{name} must hold finite numbers{also}, got {value!r}")
    return arr


def shape(name: str, value) -> tuple:
    """The shape of `value` without copying an array (checked before the work it implies);
    () for anything that is not an array or a regular nesting of lists."""
    try:
        return np.shape(value)
    except ValueError:  # a ragged list
        raise ValueError(f"{name} must be an array of numbers, got a ragged {type(value).__name__}") from None


def size(name: str, value, most: int = LARGEST) -> np.ndarray:
    """`value` as a float64 array of positive whole numbers up to `most` (a scalar stays
    0-d). Only numbers are sizes: not True, not the string "4096", not a date."""
    arr = _numbers(name, value, "a positive integer (or an array of them)")
    if not np.all(arr == np.round(arr)):
        raise ValueError(f"{name} must be a whole number, got {value!r}")
    if not np.all(arr > 0):
        raise ValueError(f"{name} must be positive (>= 1), got {value!r}")
    _at_most_count(name, value, most)
    return arr


def _at_most_count(name: str, value, most: int) -> None:
    """ValueError naming the largest accepted where a count of `value` is above `most`."""
    if np.any(np.asarray(value) > most):  # before float64 rounds 2**53 + 1 down
        limit = "2**53" if most == LARGEST else f"{most:,}"
        raise ValueError(f"{name} must be at most {limit}, got {value!r}")


def one(name: str, value, most: int = LARGEST, zero: bool = False) -> int:
    """`value` as an int: one positive whole number up to `most` (or >= 0 with `zero`), not an
    array of them: a loop bound or a count that is not swept."""
    if isinstance(value, (list, tuple, np.ndarray)) and np.ndim(value) != 0:
        raise ValueError(f"{name} must be one whole number, not an array, got {value!r}")
    return int(count(name, value, most) if zero else size(name, value, most))


def broadcast(*named) -> tuple:
    """The shape that the (name, array) pairs of `named` broadcast to, or a ValueError naming
    the first two that do not ("m and n must broadcast: shapes (2,) and (3,)"), or all of them
    when the shape holds more than MOST_CONFIGURATIONS."""
    shape, seen = (), []
    for name, value in named:
        here = np.shape(value)
        try:
            shape = np.broadcast_shapes(shape, here)
        except ValueError:
            other, there = next((n, s) for n, s in seen if not _broadcasts(s, here))
            raise ValueError(f"{other} and {name} must broadcast: shapes {there} and {here}") from None
        seen.append((name, here))
    if math.prod(shape) > MOST_CONFIGURATIONS:
        names = ", ".join(name for name, _ in named)
        raise ValueError(f"{names} must broadcast to at most {MOST_CONFIGURATIONS:,} configurations, got shape {shape}")
    return shape


def _broadcasts(a: tuple, b: tuple) -> bool:
    return all(x == y or 1 in (x, y) for x, y in zip(reversed(a), reversed(b)))


def member(name: str, value, menu) -> object:
    """`value` if it is one of `menu` (a widget's control: strings or numbers), of the same
    kind as its options (a number for numbers, not a bool or a string)."""
    menu = list(menu)
    kind = str if all(isinstance(v, str) for v in menu) else numbers.Real
    right_kind = isinstance(value, kind) and not isinstance(value, (bool, np.bool_))
    if not right_kind or not any(value == v for v in menu):
        raise ValueError(f"{name} must be one of {menu}, got {value!r}")
    return value


def count(name: str, value, most: int = LARGEST) -> np.ndarray:
    """`value` as a float64 array of whole numbers from 0 to `most` (bytes of shared memory,
    tokens of context)."""
    arr = _numbers(name, value, "a whole number >= 0 (or an array of them)")
    if np.any(arr < 0) or not np.all(arr == np.round(arr)):
        raise ValueError(f"{name} must be a whole number >= 0, got {value!r}")
    _at_most_count(name, value, most)
    return arr


def amount(name: str, value, most: float = math.inf) -> np.ndarray:
    """`value` as a float64 array of finite numbers >= 0 (flops, bytes), none above `most`:
    not a bool or a string."""
    arr = _numbers(name, value, "a number >= 0 (or an array of them)")
    if np.any(arr < 0):
        raise ValueError(f"{name} must be finite and not negative, got {arr[arr < 0].ravel()[0]!r}")
    return _at_most(name, arr, most)


def real(name: str, value, least: float | None = None, most: float | None = None) -> float:
    """`value` as a float: one finite real number (Python's or NumPy's, or a 0-d array),
    not a bool; at least `least` and at most `most` when given."""
    limits = " and ".join(f"{sign} {x:g}" for sign, x in ((">=", least), ("<=", most)) if x is not None)
    wanted = f"a finite number {limits}".rstrip()
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value[()]
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real) or not math.isfinite(value):
        raise ValueError(f"{name} must be {wanted}, got {value!r}")
    if (least is not None and value < least) or (most is not None and value > most):
        raise ValueError(f"{name} must be {wanted}, got {value!r}")
    return float(value)


def answer(value) -> float | None:
    """A learner's numeric answer as a float, or None when it is not one finite real number
    (a bool, a list, a string, NaN): the checkers then answer with a sentence."""
    try:
        return real("answer", value)
    except ValueError:
        return None


def integer(name: str, value, least: int, most: int) -> int:
    """`value` as an int: one Python or NumPy integer (not a bool, not 1.0) from `least` to `most`."""
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value[()]
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral) or not least <= value <= most:
        raise ValueError(f"{name} must be an integer from {least} to {most}, got {value!r}")
    return int(value)


def work(what: str, amount: float, limit: float, unit: str) -> None:
    """Refuse, up front, a call whose `amount` of work or memory exceeds `limit` (in `unit`)."""
    if amount > limit:
        raise ValueError(f"{what} must be at most {limit:,.0f} {unit}, got {amount:,.0f}")


def pair(name: str, value) -> tuple[np.ndarray, np.ndarray]:
    """A tile `(rows, cols)`: a tuple, list or 1-D array of two positive sizes (each may be an array)."""
    if not isinstance(value, (tuple, list, np.ndarray)) or getattr(value, "ndim", 1) != 1 or len(value) != 2:
        raise ValueError(f"{name} must be a pair (rows, cols) of positive integers, got {value!r}")
    return size(f"{name}[0]", value[0]), size(f"{name}[1]", value[1])


def one_pair(name: str, value) -> tuple[int, int]:
    """A tile `(rows, cols)` that is not swept: a tuple, list or 1-D array of two positive
    integers, one number each."""
    if not isinstance(value, (tuple, list, np.ndarray)) or getattr(value, "ndim", 1) != 1 or len(value) != 2:
        raise ValueError(f"{name} must be a pair (rows, cols) of positive integers, got {value!r}")
    return one(f"{name}[0]", value[0]), one(f"{name}[1]", value[1])


def dtype_bytes(dtype: str, accepted=DTYPES) -> int:
    """Bytes per element of `dtype`, one of `accepted`."""
    return DTYPE_BYTES[choice("dtype", dtype, accepted)]


def choice(name: str, value, accepted) -> str:
    """`value` if it is one of the strings `accepted`."""
    if not isinstance(value, str) or value not in accepted:
        raise ValueError(f"{name} must be one of {tuple(accepted)}, got {value!r}")
    return value


def flag(name: str, value) -> bool:
    """`value` if it is a bool."""
    if not isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{name} must be True or False, got {value!r}")
    return bool(value)


def not_larger(small_name: str, small, big_name: str, big) -> None:
    """Raise if any element of `small` exceeds `big` (a tile larger than its matrix)."""
    if np.any(np.broadcast_to(small, np.broadcast(small, big).shape) > big):
        raise ValueError(f"{small_name} must not exceed {big_name}: got {small_name}={_show(small)}, {big_name}={_show(big)}")


def divides(part_name: str, part, whole_name: str, whole) -> None:
    """Raise unless every `part` divides its `whole` (a thread tile inside a block tile)."""
    if np.any(np.mod(whole, part) != 0):
        raise ValueError(f"{part_name} must divide {whole_name}: got {part_name}={_show(part)}, {whole_name}={_show(whole)}")


def _show(a) -> str:
    a = np.asarray(a)
    return str(int(a)) if a.ndim == 0 else f"array of shape {a.shape}"


def as_output(a):
    """A 0-d array as its scalar (a float or a str), anything else as an array: results are
    plain numbers for one configuration and arrays for a sweep."""
    a = np.asarray(a)
    return a[()] if a.ndim == 0 else a
