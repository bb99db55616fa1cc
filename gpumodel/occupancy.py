"""Occupancy: how many blocks and warps of a kernel an SM keeps resident, and which
resource stops it keeping more. Chapter 3.

The limits per compute capability are the CUDA C++ Programming Guide's ("Technical
Specifications per Compute Capability"); the allocation rules are those of NVIDIA's
occupancy calculator (`cuda_occupancy.h`): registers are allocated per warp in units of 256
(so a thread's count is rounded up to a multiple of 8), out of four equal partitions of the
register file (one per warp scheduler), and shared memory per block in units of 128 bytes
plus the reserved shared memory per block of the capability (1 KiB from 8.0 on).
The limits are data: `gpumodel/data/capabilities.toml`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import _check, presets
from .hardware import WARP, Capability

REGISTER_UNIT = 256  # registers, allocated per warp
REGISTER_PARTITIONS = 4  # an SM's register file is split among its 4 warp schedulers
SMEM_UNIT = 128  # bytes

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


def limits(gpu) -> Capability:
    """The occupancy limits of `gpu` (a `GPU` or a preset name): its compute capability's."""
    return presets.gpu(gpu).capability


def occupancy(gpu, threads, registers, smem=0) -> Occupancy:
    """Blocks and warps of a kernel resident on one SM of `gpu`, for `threads` per block,
    `registers` per thread and `smem` bytes of shared memory per block (arrays broadcast).
    Ties between limiting resources are reported in the order of LIMITERS."""
    lim = limits(gpu)
    threads = _check.size("threads", threads)
    registers = _check.size("registers", registers)
    smem = _check.count("smem", smem)
    _check.broadcast(("threads", threads), ("registers", registers), ("smem", smem))
    if np.any(threads > lim.max_threads_per_block):
        raise ValueError(f"threads must be at most {lim.max_threads_per_block} per block, got {threads!r}")
    if np.any(registers > lim.max_registers_per_thread):
        raise ValueError(f"registers must be at most {lim.max_registers_per_thread} per thread, got {registers!r}")
    if np.any(smem > lim.max_smem_per_block):
        raise ValueError(f"smem must be at most {lim.max_smem_per_block} bytes per block on {presets.gpu(gpu).name}, got {smem!r}")
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


SETMAXNREG = (24, 256, 8)
"""setmaxnreg: a warpgroup's registers per thread go from 24 to 256 in steps of 8 (PTX ISA)."""


def consumer_registers(gpu, producer_registers, consumers: int = 2, producers: int = 1) -> int:
    """The most registers per thread the `consumers` warpgroups of a warp-specialised block
    can raise themselves to with setmaxnreg once the `producers` warpgroups have lowered
    themselves to `producer_registers`, one block per SM: the register file's registers per
    128 threads, less the producers', shared among the consumers, rounded down to a multiple
    of 8 and at most 256. Chapter 7."""
    least, most, step = SETMAXNREG
    lim = limits(gpu)
    rp = _check.integer("producer_registers", producer_registers, least, most)
    if rp % step:
        raise ValueError(f"producer_registers must be a multiple of {step}, got {rp!r}")
    consumers = _check.integer("consumers", consumers, 1, 8)
    producers = _check.integer("producers", producers, 1, 8)
    per_thread = lim.registers_per_sm // (4 * WARP)  # registers per thread of one warpgroup's 128 threads
    share = (per_thread - producers * rp) // consumers // step * step
    if share < least:
        raise ValueError(f"producer_registers leaves the {consumers} consumers fewer than {least} registers each")
    return min(most, share)
