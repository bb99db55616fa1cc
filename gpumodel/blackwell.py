"""Blackwell (sm_100) as the course counts it, in the small formulas of chapter 7.

They are:

- where the accumulator lives: registers per thread for a warpgroup's fp32 accumulator on
  Hopper (`accumulator_registers`), Tensor Memory columns on Blackwell (`tmem_columns`);
- the 2-CTA MMA (`tcgen05.mma.cta_group::2`): two CTAs of an SM pair run one M x N tile,
  each holding half of A's rows and half of B's columns (`pair_tile`);
- the MMA rate per SM per clock and the shared-memory ridge it sets (`mma_per_clock`,
  `smem_ridge`);
- the exponentials of a softmax against the MMAs (`tensor_per_exp`, `exp_over_mma`), and
  what moving some of them onto the FMA units as a polynomial buys (`emulated_share`);
- persistent scheduling, static or by cluster launch control (`tile_schedule`).

Sources: the PTX ISA and CUTLASS's tcgen05 guide (TMEM, the 2-CTA MMA), Tilus's tcgen05
pages (TMEM's 128 lanes x 512 columns), CUTLASS's cluster launch control page, the FlashAttention-4 paper (the B200's 8192 MMA
FLOP, 128 shared-memory bytes and 16 exponentials per clock per SM). NumPy only.
"""

from __future__ import annotations

import numpy as np

from . import _check, presets
from .hardware import BANK_BYTES, REGISTER_BYTES, SMEM_BANKS
from .tensor_cores import mma_tile

WARPGROUP = 128
"""Threads in a warpgroup (four warps): the unit that issues a Hopper wgmma."""
TMEM_LANES = 128
TMEM_COLUMNS = 512
"""Tensor Memory per SM: 128 lanes x 512 columns of 32-bit cells, 256 KiB (Tilus's tcgen05
pages; PTX ISA, "Tensor Memory")."""
VARIANTS = {
    # target -> (a GPU of it, tcgen05 and Tensor Memory, exponentials per clock per SM over sm_100's,
    #            SMs, memory in GB; None where the course's sources publish none)
    "sm_100": ("B200", True, 1, None, None),  # SMs and memory: the B200 preset
    "sm_103": ("B300 (Blackwell Ultra)", True, 2, 160, 288),
    "sm_120": ("GeForce RTX 50 series", False, 1, None, None),
}
"""Blackwell's three targets. tcgen05 (and with it Tensor Memory) is an sm_100a/sm_103a (and
sm_110a) feature, not sm_120's (PTX ISA, tcgen05's target notes, as CCCL's PTX pages list them);
sm_103 doubles sm_100's SFU throughput for MUFU.EX2 (NVIDIA, "Making Softmax More Efficient with
NVIDIA Blackwell Ultra"), has 160 SMs on two dies in its full implementation and 288 GB of HBM3e
(NVIDIA, "Inside NVIDIA Blackwell Ultra"); sm_120's SFUs are the CUDA guide's (capability 12.0)."""
ACCUMULATOR_BYTES = 4  # fp32
ATTENTION_FLOPS_PER_SCORE = 4  # per head-dimension element: 2d for Q K^T and 2d for P V


def accumulator_registers(m, n, threads: int = WARPGROUP):
    """32-bit registers per thread that an m x n fp32 accumulator takes when `threads`
    threads hold it in registers (Hopper's wgmma: one warpgroup, 128 threads): m n / threads.
    Chapter 7."""
    m, n = _check.size("m", m), _check.size("n", n)
    threads = _check.size("threads", threads)
    return _check.as_output(m * n * ACCUMULATOR_BYTES / REGISTER_BYTES / threads)


def tmem_columns(m, n):
    """Tensor Memory columns an m x n fp32 accumulator takes, one row per lane (m at most
    128 lanes): n columns, of TMEM_COLUMNS per SM. Chapter 7."""
    m, n = _check.size("m", m), _check.size("n", n)
    if np.any(m > TMEM_LANES):
        raise ValueError(f"m must be at most {TMEM_LANES} (Tensor Memory's lanes) per CTA, got {m!r}")
    if np.any(n > TMEM_COLUMNS):
        raise ValueError(f"n must be at most {TMEM_COLUMNS} (Tensor Memory's columns), got {n!r}")
    return _check.as_output(n * ACCUMULATOR_BYTES / REGISTER_BYTES)


def pair_tile(m, n, k, dtype: str = "fp16") -> tuple:
    """(flops, operand bytes) per CTA of an m x n x k tile run by `tcgen05.mma.cta_group::2`
    on a pair of CTAs: each holds m/2 rows of A and n/2 columns of B in its shared memory and
    computes m/2 x n of the result, so each SM does 2 (m/2) n k flops for s((m/2) k + k n/2)
    bytes. `m` and `n` must be even. Chapter 7."""
    m, n = _check.size("m", m), _check.size("n", n)
    if np.any(m % 2) or np.any(n % 2):
        raise ValueError(f"m and n must be even (each CTA of the pair takes half), got {m!r}, {n!r}")
    flops, _ = mma_tile(m // 2, n, k, dtype)
    _, a_half = mma_tile(m // 2, n // 2, k, dtype)  # A's m/2 x k and B's k x n/2
    return flops, a_half


def pair_intensity(m, n, k, dtype: str = "fp16"):
    """FLOP per byte of operands each CTA of a 2-CTA MMA reads from its shared memory
    (`pair_tile`). Chapter 7."""
    flops, nbytes = pair_tile(m, n, k, dtype)
    return _check.as_output(np.asarray(flops) / np.asarray(nbytes))


def mma_per_clock(gpu, math: str = "fp16") -> float:
    """Dense tensor-core FLOP per clock per SM of `gpu` for `math`: the peak over SMs x the
    clock the peak is rated at (`GPU.running`). Chapter 7."""
    g = presets.gpu(gpu).running(math)
    return g.peak(math) / (g.sms.value * g.clock.value)


def smem_ridge(gpu, math: str = "fp16") -> float:
    """The shared-memory ridge of `gpu`'s tensor cores in FLOP/B, per clock per SM: the MMA
    rate over 32 banks x 4 bytes. No clock in it: both run at the tensor clock. Chapter 7."""
    return mma_per_clock(gpu, math) / (SMEM_BANKS * BANK_BYTES)


def tensor_per_exp(gpu, math: str = "fp16") -> float:
    """Tensor-core FLOPs per exponential the special-function units return in the same
    time: the MMA rate over the SFUs' results, both per clock per SM. Chapter 7."""
    g = presets.gpu(gpu)
    return mma_per_clock(g, math) / g.capability.special_functions_per_sm


def exp_over_mma(gpu, head_dim, math: str = "fp16"):
    """The SFUs' time for a softmax's exponentials over the tensor cores' time for the two
    matrix products, in attention with `head_dim` d: each score costs one exponential and
    4d FLOPs, so the ratio is `tensor_per_exp` / 4d. Above 1 the exponentials bind. Chapter 7."""
    d = _check.size("head_dim", head_dim)
    return _check.as_output(tensor_per_exp(gpu, math) / (ATTENTION_FLOPS_PER_SCORE * d))


def emulated_share(gpu, fma_per_exp):
    """The share of exponentials to compute on the FMA units, as a polynomial of
    `fma_per_exp` FMA-pipe instructions each, so that the SFUs and the FMA lanes finish
    together: s / lanes = (1 - s) / sfus, s = lanes / (lanes + sfus x fma_per_exp). The
    softmax's other FMA work is left out, so this is the most worth moving. Chapter 7."""
    cost = _check.real("fma_per_exp", fma_per_exp, least=1)
    cap = presets.gpu(gpu).capability
    return cap.fp32_lanes_per_sm / (cap.fp32_lanes_per_sm + cap.special_functions_per_sm * cost)


def tile_schedule(tiles, sms, late_sms: int = 0, delay: float = 0.0, dynamic: bool = False) -> float:
    """The time, in tile-times, a persistent GEMM of `tiles` equal tiles takes on `sms` SMs
    of which `late_sms` are held by another kernel for `delay` tile-times. Static (CUTLASS's
    persistent scheduler): one worker per SM, worker i takes tiles i, i + sms, ...; the late
    workers start after the delay. Dynamic (Blackwell's cluster launch control): whichever
    SM is free takes the next tile, so the time is the `tiles`-th earliest tile end over all
    SMs. Chapter 7."""
    tiles = int(_check.size("tiles", tiles, most=2**24))
    sms = int(_check.size("sms", sms, most=2**16))
    late = _check.integer("late_sms", late_sms, 0, sms)
    delay = _check.real("delay", delay, least=0)
    _check.flag("dynamic", dynamic)
    start = np.where(np.arange(sms) < sms - late, 0.0, delay)  # when each SM is first free
    if not dynamic:
        share = tiles // sms + (np.arange(sms) < tiles % sms)
        return float(np.max(np.where(share > 0, start + share, 0.0)))
    rounds = -(-tiles // (sms - late or sms)) + 1  # enough tile ends per SM to hold the answer
    ends = (start[:, None] + np.arange(1, rounds + 1)[None, :]).ravel()
    return float(np.partition(ends, tiles - 1)[tiles - 1])
