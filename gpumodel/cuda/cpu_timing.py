"""Timings on the reader's own CPU: a bandwidth-versus-working-set sweep (NumPy), the
fused and unfused elementwise chain, and a small timer. Chapters 1 and 2. The GPU's
counterparts are in `gpumodel.cuda.runtime`.

Nothing here is asserted in tests: timings vary with the machine. Tests check shapes,
units and bad input; the numbers are what the reader's machine does.
"""

from __future__ import annotations

import time

import numpy as np

from .. import _check


def seconds_per_call(fn, target: float = 0.05, repeats: int = 3) -> float:
    """Best time of one `fn()` call, in seconds: calls are batched so that each timing lasts
    about `target` seconds (so short calls are not lost in the timer's resolution), and the
    best of `repeats` batches is kept (the least disturbed by the rest of the machine)."""
    fn()
    start = time.perf_counter()
    fn()
    once = max(time.perf_counter() - start, 1e-7)
    calls = max(1, int(target / once))
    best = np.inf
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        best = min(best, (time.perf_counter() - start) / calls)
    return best


def working_sets(smallest: int = 32 * 1024, largest: int = 256 * 1024**2, per_octave: int = 2) -> np.ndarray:
    """Working-set sizes in bytes, `per_octave` per doubling from `smallest` to `largest`,
    rounded to multiples of 8 KiB."""
    lo, hi = _check.size("smallest", smallest), _check.size("largest", largest)
    if lo > hi:
        raise ValueError(f"smallest must not exceed largest, got {smallest} > {largest}")
    count = int(np.floor(np.log2(hi / lo) * per_octave)) + 1
    return np.unique((lo * 2 ** (np.arange(count) / per_octave) // 8192 * 8192).astype(np.int64))


def cpu_sweep(sizes=None, target: float = 0.005) -> tuple[np.ndarray, np.ndarray]:
    """Copy bandwidth of this CPU against working set: for each size in bytes, two float32
    arrays of half that size (the leading parts of two arrays allocated once, for the
    largest size), `np.copyto` timed; bandwidth counts the read and the write.
    Returns (sizes in bytes, bandwidth in bytes/s)."""
    sizes = working_sets() if sizes is None else np.asarray([int(_check.size("sizes", s)) for s in np.ravel(sizes)])
    counts = [max(1, int(size) // 8) for size in sizes]
    source, destination = np.ones(max(counts), np.float32), np.empty(max(counts), np.float32)
    bandwidth = []
    for n in counts:
        src, dst = source[:n], destination[:n]
        bandwidth.append(8 * n / seconds_per_call(lambda: np.copyto(dst, src), target))
    return sizes, np.asarray(bandwidth)


def cpu_caches() -> dict:
    """This CPU's data caches as the Linux kernel reports them (sysfs): name -> bytes per
    instance, e.g. {"L1d": 49152, "L2": 1048576, "L3": 33554432}; {} where not reported."""
    import pathlib

    caches = {}
    for index in sorted(pathlib.Path("/sys/devices/system/cpu/cpu0/cache").glob("index*")):
        try:
            kind = (index / "type").read_text().strip()
            level = (index / "level").read_text().strip()
            size = (index / "size").read_text().strip()
        except OSError:
            continue
        if kind == "Instruction":
            continue
        units = {"K": 1024, "M": 1024**2, "G": 1024**3}
        caches[f"L{level}" + ("d" if kind == "Data" else "")] = int(size[:-1]) * units[size[-1]] if size[-1] in units else int(size)
    return caches


def cpu_chain(n: int = 2**24, chunk: int = 2**16, target: float = 0.02) -> dict:
    """Chapter 2's relu / scale / bias chain on the CPU with NumPy, three ways, in seconds:

    - "temporaries": `np.maximum(x, 0) * s + b`, a new array per step (6 passes over
      memory, plus allocation);
    - "out=": the same three passes written into one preallocated array (6 passes);
    - "chunked": the three steps on one cache-sized chunk at a time (`chunk` floats), so
      the intermediates stay in cache and memory sees 2 passes: fusion by blocking.
    """
    n, chunk = int(_check.size("n", n)), int(_check.size("chunk", chunk))
    x = np.random.default_rng(0).standard_normal(n, dtype=np.float32)
    w = np.empty_like(x)
    scale, bias = np.float32(0.5), np.float32(-0.25)

    def temporaries():
        return np.maximum(x, 0) * scale + bias

    def out():
        np.maximum(x, 0, out=w)
        np.multiply(w, scale, out=w)
        np.add(w, bias, out=w)

    def chunked():
        for i in range(0, n, chunk):
            part = w[i:i + chunk]
            np.maximum(x[i:i + chunk], 0, out=part)
            np.multiply(part, scale, out=part)
            np.add(part, bias, out=part)

    want = temporaries()
    for fn in (out, chunked):
        fn()
        if not np.array_equal(w, want):
            raise AssertionError(f"{fn.__name__} computed something else")
    return {name: seconds_per_call(fn, target) for name, fn in
            (("temporaries", temporaries), ("out=", out), ("chunked", chunked))}
