"""Feeding the tensor cores: the small formulas of chapter 6.

- operand traffic of one MMA tile (`mma_tile`, `operand_intensity`): 2mnk flops for
  s(mk + kn) bytes of operands read from shared memory;
- swizzled shared-memory layouts (`swizzled_addresses`, `ldmatrix_addresses`), whose word
  addresses go into `gpumodel.simulate.bank_conflicts`;
- thread-block clusters sharing panels through TMA multicast (`cluster_gemm`);
- how deep a copy pipeline must be (`pipeline`), from the latency of a level and the time
  the tensor cores take for one stage;
- waves and tails (`wave_quantisation`, `split_k_bytes`, `stream_k`).

The chapter's decode formulas (a decode GEMM's intensity and critical batch, the KV cache a
token adds) are `gpumodel.decode`'s. NumPy and the standard library only; SI units (bytes,
seconds, FLOP/s). The chapter's exercises are in `gpumodel.course.tensor_cores`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from . import _check, presets
from .hardware import WARP
from .workloads import Workload, gemm

WEIGHT_BYTES = {"fp16": 2.0, "bf16": 2.0, "fp8": 1.0, "int8": 1.0, "int4": 0.5}
"""Bytes per weight of each storage format (int4 packs two weights in a byte)."""
LDMATRIX_ROW_BYTES = 16
"""ldmatrix: each thread names one 16-byte row (eight 16-bit elements) of an 8 x 8 matrix."""
WORD = 4  # bytes per shared-memory bank word


def mma_tile(m, n, k, dtype: str = "fp16", a_in_registers: bool = False) -> tuple:
    """(flops, operand bytes) of an m x n x k matrix-multiply tile: 2mnk flops; the
    operands A (m x k) and B (k x n) read once from shared memory, s(mk + kn) bytes, or
    only s kn when A already sits in registers (wgmma may take A from registers). Chapter 6."""
    m, n, k = _check.size("m", m), _check.size("n", n), _check.size("k", k)
    _check.broadcast(("m", m), ("n", n), ("k", k))
    s = _check.dtype_bytes(dtype)
    _check.flag("a_in_registers", a_in_registers)
    flops = 2 * m * n * k
    nbytes = s * k * n if a_in_registers else s * (m * k + k * n)
    return _check.as_output(flops), _check.as_output(nbytes)


def operand_intensity(m, n, k, dtype: str = "fp16", a_in_registers: bool = False):
    """FLOP per byte of operands read from shared memory by an m x n x k tile (`mma_tile`).
    It does not depend on k: 2mn / (s(m + n)), or 2m/s with A in registers. Chapter 6."""
    flops, nbytes = mma_tile(m, n, k, dtype, a_in_registers)
    return _check.as_output(np.asarray(flops) / np.asarray(nbytes))


def _power_of_two(name: str, value) -> int:
    value = _check.one(name, value)
    if value & (value - 1):
        raise ValueError(f"{name} must be a power of two, got {value!r}")
    return value


def swizzled_addresses(shape=(32, 32), direction: str = "column", index: int = 0) -> np.ndarray:
    """Word addresses a warp touches in a row-major array of 4-byte words whose element
    (r, c) is stored at column c XOR (r mod cols) of row r: the swizzle that replaces
    padding. Thread t reads (t, index) for a "column" access, (index, t) for a "row" access.
    `cols` must be a power of two (so the XOR stays inside the row). Chapter 6; compare
    `gpumodel.simulate.warp_addresses`, the plain and padded layouts of chapter 3."""
    rows, cols = _check.one_pair("shape", shape)
    _power_of_two("shape[1]", cols)
    _check.choice("direction", direction, ("row", "column"))
    along, across = (rows, cols) if direction == "column" else (cols, rows)
    if along < WARP:
        raise ValueError(f"shape must hold a whole warp ({WARP} elements) along the {direction}, got {shape}")
    index = _check.integer("index", index, 0, across - 1)
    t = np.arange(WARP)
    row, col = (t, np.full(WARP, index)) if direction == "column" else (np.full(WARP, index), t)
    return row * cols + (col ^ (row % cols))


def ldmatrix_addresses(row_bytes: int = 128, chunk: int = 0, swizzled: bool = False) -> np.ndarray:
    """The 32 word addresses of one phase of `ldmatrix`: eight threads each name a 16-byte
    row of an 8 x 8 matrix of 16-bit elements, here rows 0 to 7 of a shared-memory tile whose
    rows are `row_bytes` long, all at 16-byte chunk `chunk`. Swizzled, row r keeps its chunk
    c at c XOR (r mod 8) (the 128-byte swizzle of CUTLASS and of Hopper's TMA; `row_bytes`
    must then be 128). Feed the result to `gpumodel.simulate.bank_conflicts`. Chapter 6."""
    row_bytes = _check.one("row_bytes", row_bytes)
    if row_bytes % LDMATRIX_ROW_BYTES:
        raise ValueError(f"row_bytes must be a multiple of {LDMATRIX_ROW_BYTES}, got {row_bytes!r}")
    chunks = row_bytes // LDMATRIX_ROW_BYTES
    chunk = _check.integer("chunk", chunk, 0, chunks - 1)
    _check.flag("swizzled", swizzled)
    if swizzled and row_bytes != 8 * LDMATRIX_ROW_BYTES:
        raise ValueError(f"the 128-byte swizzle needs row_bytes = 128, got {row_bytes!r}")
    rows = np.arange(8)
    where = chunk ^ rows if swizzled else np.full(8, chunk)
    words = LDMATRIX_ROW_BYTES // WORD
    first = rows * (row_bytes // WORD) + where * words
    return (first[:, None] + np.arange(words)[None, :]).ravel()


def cluster_gemm(m, n, k, block=(128, 256), thread=(64, 256), cluster=(2, 1), dtype: str = "fp16") -> Workload:
    """A tensor-core GEMM whose blocks run in clusters of `cluster` = (cM, cN) blocks that
    share their panels through TMA multicast, modelled as an approximation: L2 is charged
    the bytes of one tile cM x cN times the size of a block's (each shared panel leaves L2
    once for the whole cluster); shared memory, registers and HBM are charged as for the
    block alone (multicast still writes every block's copy into its own shared memory).
    Chapter 6."""
    c_m, c_n = _check.one_pair("cluster", cluster)
    b_m, b_n = _check.one_pair("block", block)
    m, n = _check.size("m", m), _check.size("n", n)
    _check.not_larger("cluster[0] x block[0]", c_m * b_m, "m", m)  # named for what the caller passed
    _check.not_larger("cluster[1] x block[1]", c_n * b_n, "n", n)
    alone = gemm(m, n, k, block=(b_m, b_n), thread=thread, dtype=dtype)
    together = gemm(m, n, k, block=(c_m * b_m, c_n * b_n), thread=thread, dtype=dtype)
    return Workload(f"clustered GEMM ({dtype}, {c_m}x{c_n} clusters)", flops=alone.flops,
                    bytes={**alone.bytes, "l2": together.bytes["l2"]}, math=alone.math,
                    note="L2 bytes of the cluster's tile: an approximation of TMA multicast")


@dataclass(frozen=True)
class Pipeline:
    """How deep a block's copy pipeline must be to keep the tensor cores busy: one stage's
    `stage_bytes` and the `stage_time` the tensor cores take for it (one block per SM at
    the tensor peak), the `latency` (s) of the level the copies come from, the
    `in_flight` bytes that must be requested and not yet arrived (stage_bytes x latency /
    stage_time), the `stages` (those in flight plus the one being computed), the shared
    memory they take (`smem`), and `littles_law`: the bytes in flight per SM that keep the
    level itself at full bandwidth (chapter 1)."""

    stage_bytes: float
    stage_time: float
    latency: float
    in_flight: float
    stages: int
    smem: float
    littles_law: float


def pipeline(gpu, block=(128, 128), bk: int = 64, dtype: str = "fp16", level: str = "hbm") -> Pipeline:
    """The copy pipeline of a tensor-core GEMM block `block` = (bM, bN) with K steps of
    `bk`, fed from `level` of `gpu` (a level with a measured latency). A model: the latency
    is a pointer chase's, and the transfer time of a stage is not added. Chapter 6."""
    g = presets.gpu(gpu)
    b_m, b_n = map(float, _check.one_pair("block", block))
    bk = float(_check.one("bk", bk))
    s = _check.dtype_bytes(dtype, ("fp16", "bf16"))
    stage_bytes = s * (b_m + b_n) * bk
    stage_time = 2 * b_m * b_n * bk / (g.peak(dtype) / g.sms.value)
    littles_law = g.in_flight(level) / g.sms.value  # raises, naming the levels, when no latency is known
    latency = g.latency[level].value / g.clock.value
    in_flight = stage_bytes * latency / stage_time
    stages = 1 + math.ceil(in_flight / stage_bytes)
    return Pipeline(stage_bytes, stage_time, latency, in_flight, stages, stages * stage_bytes, littles_law)


@dataclass(frozen=True)
class WaveQuantisation:
    """A grid of `tiles` blocks on `slots` = SMs x blocks per SM: `waves` (rounded up), the
    `last` wave's occupancy ((tiles mod slots) / slots, 1 when it is full) and the
    `efficiency` tiles / (waves x slots), the fraction of the slots' time doing work."""

    tiles: int
    slots: int
    waves: int
    last: float
    efficiency: float


def wave_quantisation(m, n, block, gpu, blocks_per_sm: int = 1) -> WaveQuantisation:
    """Wave quantisation of an m x n output cut into `block` = (bM, bN) tiles on `gpu`,
    `blocks_per_sm` resident per SM, every tile taking the same time. Chapter 6."""
    m, n = _check.one("m", m), _check.one("n", n)
    b_m, b_n = _check.one_pair("block", block)
    _check.not_larger("block[0]", b_m, "m", m)
    _check.not_larger("block[1]", b_n, "n", n)
    per_sm = _check.one("blocks_per_sm", blocks_per_sm)
    tiles = -(-m // b_m) * -(-n // b_n)
    slots = int(presets.gpu(gpu).sms.value) * per_sm
    count = -(-tiles // slots)
    rest = tiles % slots
    return WaveQuantisation(tiles, slots, count, rest / slots if rest else 1.0, tiles / (count * slots))


def split_k_bytes(m, n, splits, partial_bytes: int = 4):
    """Extra global traffic of split-K: each of `splits` slices writes an m x n partial sum
    (`partial_bytes` per element, fp32) that a reduction reads back. Chapter 6."""
    m, n, splits = _check.size("m", m), _check.size("n", n), _check.size("splits", splits)
    partial_bytes = _check.size("partial_bytes", partial_bytes)
    _check.broadcast(("m", m), ("n", n), ("splits", splits), ("partial_bytes", partial_bytes))
    return _check.as_output(2 * splits * m * n * partial_bytes)


def split_k_time(m, n, splits, gpu, math: str = "fp16", partial_bytes: int = 4) -> tuple:
    """(seconds, level): the time split-K's partial sums (`split_k_bytes`: written by the
    slices, read back by the reduction) take at the level that holds them, L2 when one set of
    them fits in it, else HBM, at the clock `math` runs at; arrays for arrays of sizes. Chapter 6."""
    g = presets.gpu(gpu).running(math)
    nbytes = np.asarray(split_k_bytes(m, n, splits, partial_bytes))
    in_l2 = nbytes / 2 <= g.capacity("l2")
    seconds = nbytes / np.where(in_l2, g.bandwidth("l2"), g.bandwidth("hbm"))
    return _check.as_output(seconds), _check.as_output(np.where(in_l2, "l2", "hbm"))


def stream_k(tiles, k_steps, sms) -> dict:
    """Stream-K against one tile per block: the time (in K steps of one tile) of the busiest
    SM when `tiles` tiles of `k_steps` steps each are dealt out whole, in waves, or as an even
    share of all tiles x k_steps steps (ceil), and the ratio of the two. Chapter 6."""
    tiles, k_steps, sms = (_check.one(name, v) for name, v in (("tiles", tiles), ("k_steps", k_steps), ("sms", sms)))
    whole = -(-tiles // sms) * k_steps
    even = -(-(tiles * k_steps) // sms)
    return {"tiles": whole, "stream_k": even, "ratio": even / whole}
