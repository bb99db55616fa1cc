"""Input checks shared by the workload builders: bad input is a `ValueError` naming the
parameter and what is accepted, never a NaN or a crash deep in NumPy."""

from __future__ import annotations

import numpy as np

DTYPE_BYTES = {"fp32": 4, "fp16": 2, "bf16": 2}


def size(name: str, value) -> np.ndarray:
    """`value` as a float64 array of positive whole numbers (a scalar stays 0-d). Only
    numbers are sizes: not True, not the string "4096", not a date."""
    wanted = f"{name} must be a positive integer (or an array of them), got {value!r}"
    if isinstance(value, (str, bytes, bool, np.bool_)) or value is None:
        raise ValueError(wanted)
    try:
        raw = np.asarray(value)
    except (TypeError, ValueError):
        raise ValueError(wanted) from None
    if raw.dtype.kind not in "iuf":  # bool, str, object, datetime...: not a count
        raise ValueError(wanted)
    arr = raw.astype(np.float64)
    if arr.size == 0:
        raise ValueError(f"{name} must not be empty")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite, got {value!r}")
    if not np.all(arr == np.round(arr)):
        raise ValueError(f"{name} must be a whole number, got {value!r}")
    if not np.all(arr > 0):
        raise ValueError(f"{name} must be positive (>= 1), got {value!r}")
    if np.any(arr > 2**53):
        raise ValueError(f"{name} must be at most 2**53, got {value!r}")
    return arr


def pair(name: str, value) -> tuple[np.ndarray, np.ndarray]:
    """A tile `(rows, cols)`: two positive sizes (each may be an array)."""
    if not isinstance(value, (tuple, list, np.ndarray)) or np.ndim(value) == 0 or len(value) != 2:
        raise ValueError(f"{name} must be a pair (rows, cols) of positive integers, got {value!r}")
    return size(f"{name}[0]", value[0]), size(f"{name}[1]", value[1])


def dtype_bytes(dtype: str, accepted=tuple(DTYPE_BYTES)) -> int:
    """Bytes per element of `dtype`, one of `accepted`."""
    if dtype not in accepted:
        raise ValueError(f"dtype must be one of {accepted}, got {dtype!r}")
    return DTYPE_BYTES[dtype]


def choice(name: str, value, accepted) -> str:
    """`value` if it is one of `accepted`."""
    if value not in accepted:
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
