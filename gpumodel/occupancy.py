"""Occupancy: how many blocks and warps of a kernel an SM keeps resident, and which
resource stops it keeping more. Chapter 3.

The limits per compute capability are the CUDA C++ Programming Guide's ("Technical
Specifications per Compute Capability"); the allocation rules are those of NVIDIA's
occupancy calculator (`cuda_occupancy.h`): registers are allocated per warp in units of 256
(so a thread's count is rounded up to a multiple of 8), out of four equal partitions of the
register file (one per warp scheduler), and shared memory per block in units of 128 bytes
plus a reserved 1 KB per block from compute capability 8.0 on.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import _check
from .presets import gpu

WARP = 32
REGISTER_UNIT = 256  # registers, allocated per warp
REGISTER_PARTITIONS = 4  # an SM's register file is split among its 4 warp schedulers
SMEM_UNIT = 128  # bytes


@dataclass(frozen=True)
class Limits:
    """One compute capability's per-SM limits (threads, warps, blocks, 32-bit registers,
    shared-memory bytes) and per-block and per-thread ones."""

    max_threads_per_sm: int
    max_warps_per_sm: int
    max_blocks_per_sm: int
    registers_per_sm: int
    max_registers_per_thread: int
    smem_per_sm: int
    max_smem_per_block: int
    reserved_smem_per_block: int
    max_threads_per_block: int = 1024


KB = 1024
LIMITS = {
    (7, 0): Limits(2048, 64, 32, 65536, 255, 96 * KB, 96 * KB, 0),
    (7, 5): Limits(1024, 32, 16, 65536, 255, 64 * KB, 64 * KB, 0),
    (8, 0): Limits(2048, 64, 32, 65536, 255, 164 * KB, 163 * KB, 1 * KB),
    (8, 9): Limits(1536, 48, 24, 65536, 255, 100 * KB, 99 * KB, 1 * KB),
    (9, 0): Limits(2048, 64, 32, 65536, 255, 228 * KB, 227 * KB, 1 * KB),
    (10, 0): Limits(2048, 64, 32, 65536, 255, 228 * KB, 227 * KB, 1 * KB),
}
CAPABILITY = {"V100": (7, 0), "T4": (7, 5), "A100-40GB": (8, 0), "A100-80GB": (8, 0), "L4": (8, 9),
              "RTX-4090": (8, 9), "H100-SXM": (9, 0), "H100-PCIe": (9, 0), "H200": (9, 0), "B200": (10, 0)}
"""Each preset's compute capability (the CUDA Programming Guide's list of GPUs)."""
LIMITERS = ("threads", "blocks", "registers", "smem")


@dataclass(frozen=True)
class Occupancy:
    """Resident `blocks` and `warps` per SM, the fraction of the SM's warp slots used, and
    the resource that `limiter` names ("threads", "blocks", "registers" or "smem")."""

    blocks: np.ndarray
    warps: np.ndarray
    fraction: np.ndarray
    limiter: np.ndarray
    per_resource: dict


def limits(preset: str) -> Limits:
    """The occupancy limits of a preset's compute capability."""
    gpu(preset)  # a clear error for an unknown name
    return LIMITS[CAPABILITY[preset]]


def occupancy(preset: str, threads, registers, smem=0) -> Occupancy:
    """Blocks and warps of a kernel resident on one SM of `preset`, for `threads` per block,
    `registers` per thread and `smem` bytes of shared memory per block (arrays broadcast).
    Ties between limiting resources are reported in the order of LIMITERS."""
    lim = limits(preset)
    threads = _check.size("threads", threads)
    registers = _check.size("registers", registers)
    smem = np.asarray(smem, dtype=np.float64)
    if np.any(~np.isfinite(smem)) or np.any(smem < 0) or np.any(smem != np.round(smem)):
        raise ValueError(f"smem must be a whole number of bytes >= 0, got {smem!r}")
    if np.any(threads > lim.max_threads_per_block):
        raise ValueError(f"threads must be at most {lim.max_threads_per_block} per block, got {threads!r}")
    if np.any(registers > lim.max_registers_per_thread):
        raise ValueError(f"registers must be at most {lim.max_registers_per_thread} per thread, got {registers!r}")
    if np.any(smem > lim.max_smem_per_block):
        raise ValueError(f"smem must be at most {lim.max_smem_per_block} bytes per block on {preset}, got {smem!r}")
    warps_per_block = np.ceil(threads / WARP)
    regs_per_warp = np.ceil(registers * WARP / REGISTER_UNIT) * REGISTER_UNIT
    smem_per_block = np.ceil((smem + lim.reserved_smem_per_block) / SMEM_UNIT) * SMEM_UNIT
    per_resource = {
        "threads": np.floor(lim.max_warps_per_sm / warps_per_block),
        "blocks": np.full(np.broadcast(threads, registers, smem).shape, float(lim.max_blocks_per_sm)),
        "registers": np.floor(REGISTER_PARTITIONS * np.floor(lim.registers_per_sm / REGISTER_PARTITIONS / regs_per_warp)
                              / warps_per_block),
        # A block with no shared memory (and none reserved) is not limited by it.
        "smem": np.floor(lim.smem_per_sm / np.maximum(smem_per_block, SMEM_UNIT))
        + np.where(smem_per_block > 0, 0, lim.max_blocks_per_sm),
    }
    stacked = np.stack(np.broadcast_arrays(*per_resource.values()))
    blocks = stacked.min(axis=0)
    limiter = np.asarray(LIMITERS)[np.argmin(stacked, axis=0)]
    warps = blocks * warps_per_block
    out = _check.as_output
    return Occupancy(out(blocks), out(warps), out(warps / lim.max_warps_per_sm), out(limiter),
                     {k: out(np.broadcast_to(v, blocks.shape)) for k, v in per_resource.items()})
