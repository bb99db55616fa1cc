"""An L2 model of waves: how much of a tiled GEMM's tile traffic reaches HBM, given the order
in which blocks run. Chapter 4.

A GPU runs a grid's blocks in waves of `SMs x blocks per SM`. Within a wave, every block
needs its row panel of A (bM x K) and its column panel of B (K x bN). Blocks that share a
panel can share it through L2: HBM supplies each distinct panel of a wave once, as long as
what the wave needs at one time fits in L2. Blocks of a wave start together but drift apart
along K; with `drift_k` the spread of their positions along K (K itself, the pessimistic
default, means they may be anywhere), the wave's working set is its distinct panels times
drift_k / K. If that is x times L2, a fraction 1/x of the reuse survives. Nothing is assumed
to survive from one wave to the next. So the HBM bytes lie between the compulsory
bytes (everything read once) and the no-reuse bytes (every tile read reaches HBM), and they
fall as L2 grows.

The order of blocks decides which panels a wave touches: row-major order sweeps a few rows of
C across all its columns; grouped ("swizzled") order walks `group` rows at a time down the
columns, so a wave touches a squarer patch of C and fewer distinct panels.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import _check, presets

ORDERS = ("row", "grouped")
MAX_BLOCKS = 2**20
"""The largest grid the wave model walks (about a million tiles: a 131,072^2 output in
128 x 128 tiles), in well under a second; larger grids would take seconds and gigabytes."""


def block_coordinates(rows: int, cols: int, order: str = "row", group: int = 8) -> tuple[np.ndarray, np.ndarray]:
    """(row, col) of the block that runs at each position of the launch, for a grid of
    `rows` x `cols` tiles of C. "grouped" is the order Triton's matmul tutorial and CUTLASS's
    swizzle use: `group` rows at a time, column by column within the group."""
    rows, cols = _check.one("rows", rows), _check.one("cols", cols)
    _check.choice("order", order, ORDERS)
    group = _check.one("group", group)
    _check.work("rows x cols", rows * cols, MAX_BLOCKS, "blocks")
    pid = np.arange(rows * cols)
    if order == "row":
        return pid // cols, pid % cols
    per_group = group * cols
    first_row = (pid // per_group) * group
    height = np.minimum(rows - first_row, group)  # the last group may be shorter
    inside = pid % per_group
    return first_row + inside % height, inside // height


@dataclass(frozen=True)
class WaveTraffic:
    """HBM bytes of a tiled GEMM's A and B panels and C under the wave model, next to its
    bounds, with the wave size and the average distinct panels per wave."""

    hbm: float
    compulsory: float
    no_reuse: float
    wave: int
    waves: int
    rows_per_wave: float
    cols_per_wave: float


def gemm_hbm(m: int, n: int, k: int, block=(128, 128), dtype: str = "fp16", gpu="A100-40GB",
             blocks_per_sm: int = 1, order: str = "row", group: int = 8, l2_bytes=None,
             drift_k=None) -> WaveTraffic:
    """HBM bytes of an m x n x k GEMM with `block` tiles on `gpu` (a `GPU` or a preset name) under the wave model
    (see the module doc). `l2_bytes` overrides the GPU's L2 capacity; `drift_k` (at most
    k; default k) is how far apart along K a wave's blocks may be."""
    s = _check.dtype_bytes(dtype)
    m, n, k = (_check.one(name, v) for name, v in (("m", m), ("n", n), ("k", k)))
    b_m, b_n = _check.one_pair("block", block)
    _check.not_larger("block[0]", b_m, "m", m)
    _check.not_larger("block[1]", b_n, "n", n)
    g = presets.gpu(gpu)
    l2 = float(g.capacity("l2") if l2_bytes is None else _check.one("l2_bytes", l2_bytes))
    rows, cols = -(-m // b_m), -(-n // b_n)
    wave = int(g.sms.value) * _check.one("blocks_per_sm", blocks_per_sm)
    row, col = block_coordinates(rows, cols, order, group)
    a_panel, b_panel = s * b_m * k, s * b_n * k
    spread = k if drift_k is None else min(k, _check.one("drift_k", drift_k))
    wave_of = np.arange(rows * cols) // wave
    waves = int(wave_of[-1]) + 1
    unique_r, unique_c = _per_wave(wave_of, row, rows, waves), _per_wave(wave_of, col, cols, waves)
    distinct = unique_r * float(a_panel) + unique_c * float(b_panel)
    every = np.bincount(wave_of, minlength=waves) * float(a_panel + b_panel)
    kept = np.minimum(1.0, l2 / (distinct * spread / k))  # the share of each wave's reuse that survives
    total = float(np.cumsum(distinct + (1 - kept) * (every - distinct))[-1])  # wave by wave, in order
    c_bytes = s * m * n
    return WaveTraffic(
        hbm=total + c_bytes,
        compulsory=s * (m * k + k * n) + c_bytes,
        no_reuse=rows * cols * (a_panel + b_panel) + c_bytes,
        wave=wave,
        waves=waves,
        rows_per_wave=int(unique_r.sum()) / waves,
        cols_per_wave=int(unique_c.sum()) / waves,
    )


def _per_wave(wave_of: np.ndarray, index: np.ndarray, size: int, waves: int) -> np.ndarray:
    """How many distinct values of `index` (each below `size`) each wave holds."""
    keys = np.sort(wave_of * size + index)
    first = np.ones(keys.size, bool)
    first[1:] = keys[1:] != keys[:-1]  # the first of each distinct (wave, index)
    return np.bincount(keys[first] // size, minlength=waves)


CACHES = ("best", "recent")
"""How a warm read's caches are taken: at their `best` (the bound) or keeping the lines used
most recently (`recent`, the expected time's estimate of a policy NVIDIA does not publish)."""


def _reach(g, nbytes, chunk, threads) -> tuple:
    """(footprint, sharing, resident) of a chunked re-read (see `l1_share`): the bytes one SM
    meets, the co-resident blocks of an SM reading one chunk, and the blocks of an SM at once."""
    nbytes, chunk = _check.size("nbytes", nbytes), _check.size("chunk", chunk)
    threads = _check.size("threads", threads)
    _check.not_larger("chunk", chunk, "nbytes", nbytes)
    _check.not_larger("threads", threads, "the GPU's most threads per block", g.capability.max_threads_per_block)
    chunks = np.maximum(np.round(nbytes / chunk), 1).astype(np.int64)
    turn = chunks // np.gcd(chunks, int(g.sms.value))  # blocks on one SM between two of the same chunk
    resident = g.capability.max_threads_per_sm // threads
    return chunk * turn, np.ceil(resident / turn), resident


def l1_share(gpu, nbytes, chunk, threads) -> np.ndarray:
    """The largest share of a re-read of `nbytes` that the SMs' L1s can serve, when each block
    of `threads` threads reads one `chunk` of bytes, chunk number (block mod chunks), as
    gpu-benches' gpu-l2-cache does. Blocks are handed to the SMs in turn, so block b + S (S
    SMs) follows block b on an SM and an SM meets only chunks/gcd(chunks, S) of the chunks:
    its footprint. L1 can serve at most two things (the larger bounds it): what of the
    footprint it holds (the SM's unified data cache over the footprint: no replacement
    order does better on a cyclic re-read), and, when co-resident blocks of one SM read the
    same chunk at once, all but the first of them. Chapters 1 and 98."""
    g = presets.gpu(gpu)
    footprint, sharing, _ = _reach(g, nbytes, chunk, threads)
    held = np.minimum(1.0, g.l1_per_sm.value / footprint)
    return _check.as_output(np.maximum(held, 1 - 1 / sharing))


def l1_hits(gpu, nbytes, chunk, threads) -> np.ndarray:
    """The share of the same re-read (`l1_share`'s) that L1s keeping the lines used most
    recently serve, at most `l1_share`: all of it when an SM's footprint fits its L1; else a
    line hits only if the SM has fetched less than its L1 since another block read it. With
    one block per chunk that other read is a whole footprint back: no hit. With `sharing`
    blocks on one chunk, at independent places in it (blocks start as others retire), the
    nearest one ahead is a gap g behind, g/chunk ~ Beta(1, sharing - 1), while all `resident`
    blocks of the SM fetch resident x g: a hit with probability 1 - (1 - L1/(resident x
    chunk))^(sharing - 1). An estimate of the policy, not fitted. Chapter 98."""
    g = presets.gpu(gpu)
    footprint, sharing, resident = _reach(g, nbytes, chunk, threads)
    l1 = g.l1_per_sm.value
    near = 1 - (1 - np.minimum(1.0, l1 / (resident * chunk))) ** (sharing - 1)
    return _check.as_output(np.where(footprint <= l1, 1.0, near))


def warm_read_time(gpu, nbytes, chunk=None, threads=None, cache: str = "best") -> np.ndarray:
    """Seconds to read `nbytes` again right after reading it (a benchmark's second run). At
    the caches' `best` (the bound): HBM supplies only what cannot have stayed in L2, `nbytes -
    L2 capacity`; L2 supplies the rest but what the SMs' L1s can serve (`l1_share`, for a read
    of one `chunk` per block of `threads` threads; none otherwise); every byte crosses the
    SM's L1/shared data path. The parts overlap, so the slowest sets the time. While the data
    fit, that is L2 alone; just past the capacity, mostly L2. Through caches keeping the most
    `recent` lines (the expected time's estimate): L1 serves `l1_hits`, and a cyclic re-read
    larger than L2 evicts each line before it comes round again, so HBM supplies every byte.
    Chapter 4's "small benchmarks lie"; chapter 98."""
    g = presets.gpu(gpu)
    nbytes = _check.size("nbytes", nbytes)
    best = _check.choice("cache", cache, CACHES) == "best"
    if (chunk is None) != (threads is None):
        raise ValueError(f"chunk and threads go together (a chunked re-read), got chunk={chunk!r}, threads={threads!r}")
    served = 0 if chunk is None else (l1_share if best else l1_hits)(g, nbytes, chunk, threads)
    over = nbytes > g.capacity("l2")
    spill = np.maximum(nbytes - g.capacity("l2"), 0) if best else np.where(over, nbytes, 0)
    return _check.as_output(np.maximum.reduce([(1 - served) * nbytes / g.bandwidth("l2"), nbytes / g.bandwidth("smem"),
                                               spill / g.bandwidth("hbm")]))
