"""The best-tile search: every legal (block, thread) tile of a tiled GEMM through the
vectorised model, under a GPU's shared-memory, thread and register limits. Chapter 3.
"""

from __future__ import annotations

import numpy as np

from .model import predict
from .occupancy import limits, occupancy
from . import _check, presets
from .workloads import gemm

BK = 8
BLOCKS = (16, 32, 64, 128, 256)
THREAD_TILES = (1, 2, 4, 8, 16)
REGISTER_OVERHEAD = 24
"""Registers a tiled-GEMM thread needs beyond its tM x tN accumulators and tM + tN operand
values (indices, pointers, loop counters): a rough estimate, close to what ptxas reports for
the kernels in kernels/gemm.cu (see the compiler report in chapter 3)."""


def registers_estimate(t_m, t_n):
    """Registers per thread a tM x tN register tile needs, roughly (see REGISTER_OVERHEAD)."""
    t_m, t_n = _check.size("t_m", t_m), _check.size("t_n", t_n)
    _check.broadcast(("t_m", t_m), ("t_n", t_n))
    return t_m * t_n + t_m + t_n + REGISTER_OVERHEAD


def smem_bytes(b_m, b_n, bk=BK):
    """Shared memory per block of `kernels/gemm.cu`'s tiles, in bytes: A as bM x bK, B as bK x bN."""
    b_m, b_n, bk = _check.size("b_m", b_m), _check.size("b_n", b_n), _check.size("bk", bk)
    _check.broadcast(("b_m", b_m), ("b_n", b_n), ("bk", bk))
    return 4 * bk * (b_m + b_n)


def is_legal(gpu, b_m, b_n, t_m, t_n):
    """Whether a tile can be launched on `gpu` (a `GPU` or a preset name): thread tiles divide block tiles, 32 to
    1024 threads per block, shared memory within the per-block limit, at most 255 registers
    (estimated). Broadcasts."""
    lim = limits(gpu)
    b_m, b_n, t_m, t_n = (_check.size(name, a) for name, a in (("b_m", b_m), ("b_n", b_n), ("t_m", t_m), ("t_n", t_n)))
    _check.broadcast(("b_m", b_m), ("b_n", b_n), ("t_m", t_m), ("t_n", t_n))
    threads = (b_m / t_m) * (b_n / t_n)
    return ((b_m % t_m == 0) & (b_n % t_n == 0) & (threads >= 32) & (threads <= lim.max_threads_per_block)
            & (smem_bytes(b_m, b_n) <= lim.max_smem_per_block)
            & (registers_estimate(t_m, t_n) <= lim.max_registers_per_thread))


def search(gpu, m: int = 4096, n: int = 4096, k: int = 4096) -> dict:
    """Every legal tile for an FP32 m x n x k GEMM on `gpu` (a `GPU` or a preset name), fastest first: a dict of
    equal-length arrays (block_m, block_n, thread_m, thread_n, threads, registers, smem,
    time in s, bound, warps resident per SM). Legal: tiles that fit the matrix, 32 to 1024
    threads per block, the shared memory a block may have, at most 255 registers."""
    m, n, k = _check.one("m", m), _check.one("n", n), _check.one("k", k)
    grid = np.array(np.meshgrid(BLOCKS, BLOCKS, THREAD_TILES, THREAD_TILES, indexing="ij")).reshape(4, -1)
    b_m, b_n, t_m, t_n = grid.astype(float)
    threads = (b_m / t_m) * (b_n / t_n)
    regs = registers_estimate(t_m, t_n)
    smem = smem_bytes(b_m, b_n)
    legal = is_legal(gpu, b_m, b_n, t_m, t_n) & (b_m <= m) & (b_n <= n)
    if not legal.any():
        raise ValueError(f"m and n must admit a tile: no legal block tile of {BLOCKS} fits {m:g} x {n:g}")
    b_m, b_n, t_m, t_n, threads, regs, smem = (a[legal] for a in (b_m, b_n, t_m, t_n, threads, regs, smem))
    p = predict(gemm(m, n, k, block=(b_m, b_n, BK), thread=(t_m, t_n)), presets.gpu(gpu))
    occ = occupancy(gpu, threads, regs, smem)
    order = np.lexsort((-occ.warps, p.time))
    return {name: np.asarray(a)[order] for name, a in {
        "block_m": b_m, "block_n": b_n, "thread_m": t_m, "thread_n": t_n, "threads": threads,
        "registers": regs, "smem": smem, "time": p.time, "bound": p.bound, "warps": occ.warps}.items()}
