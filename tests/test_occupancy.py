"""The occupancy calculator on worked cases, each derived by hand from the CUDA occupancy
rules (registers per warp rounded up to a multiple of 256; shared memory per block rounded
up to 128 bytes plus 1 KB reserved from compute capability 8.0; the per-SM limits of the
Programming Guide's table), and the tile search built on it."""

import numpy as np
import pytest

import gpumodel as gm
from gpumodel.occupancy import occupancy


@pytest.mark.parametrize("preset, threads, registers, smem, blocks, warps, limiter", [
    # 113 regs -> 120 x 32 = 3840 per warp; 4 x (16384 // 3840) = 16 warps; // 8 per block = 2.
    ("A100-40GB", 256, 113, 8192, 2, 16, "registers"),
    # 176 regs -> 5632 per warp; 4 x (16384 // 5632) = 8 warps, one per 32-thread block.
    ("H100-SXM", 32, 176, 5120, 8, 8, "registers"),
    # 32 regs -> 1024 per warp -> 64 warps; 2048 threads / 128 = 16 blocks, ties with registers.
    ("A100-40GB", 128, 32, 0, 16, 64, "threads"),
    # 48 KB + 1 KB reserved = 50176 B; 164 KB // 50176 = 3 blocks of 8 warps.
    ("A100-40GB", 256, 32, 48 * 1024, 3, 24, "smem"),
    # 37 regs -> 40 x 32 = 1280 per warp; 4 x (16384 // 1280) = 48 warps; // 4 = 12 blocks.
    ("A100-40GB", 128, 37, 0, 12, 48, "registers"),
    # 32 threads, 16 regs: 32 blocks max on compute capability 8.0, 32 warps.
    ("A100-40GB", 32, 16, 0, 32, 32, "blocks"),
    # T4 (7.5): 1024 threads per SM, so one 1024-thread block, 32 warps.
    ("T4", 1024, 32, 0, 1, 32, "threads"),
    # T4: no reserved shared memory; 64 KB // 16 KB = 4 blocks.
    ("T4", 64, 32, 16 * 1024, 4, 8, "smem"),
    # RTX 4090 (8.9): 48 warps per SM; 256 threads -> 6 blocks.
    ("RTX-4090", 256, 32, 0, 6, 48, "threads"),
    # H100: 72 regs -> 2304 per warp -> 4 x 7 = 28 warps -> 7 blocks of 4 (the chapter's exercise).
    ("H100-SXM", 128, 72, 16 * 1024, 7, 28, "registers"),
])
def test_worked_cases(preset, threads, registers, smem, blocks, warps, limiter):
    o = occupancy(preset, threads, registers, smem)
    assert (o.blocks, o.warps, o.limiter) == (blocks, warps, limiter)
    assert o.fraction == warps / gm.occupancy.limits(preset).max_warps_per_sm


def test_every_preset_has_limits():
    for name in gm.preset_names():
        lim = gm.occupancy.limits(name)
        assert lim.max_warps_per_sm * 32 == lim.max_threads_per_sm
        assert lim.max_smem_per_block <= lim.smem_per_sm
        assert lim.smem_per_sm == gm.gpu(name).smem_per_sm.value


def test_occupancy_broadcasts():
    o = occupancy("A100-40GB", 256, np.array([32, 64, 128, 255]), 0)
    assert list(o.warps) == [64, 32, 16, 8]


@pytest.mark.parametrize("kwargs, message", [
    ({"threads": 2048}, "threads must be at most 1024"), ({"registers": 300}, "registers must be at most 255"),
    ({"smem": 200 * 1024}, "smem must be at most"), ({"smem": -1}, "smem must be a whole number"),
    ({"threads": 0}, "threads must be positive"),
])
def test_bad_launches(kwargs, message):
    args = {"threads": 256, "registers": 32, "smem": 0, **kwargs}
    with pytest.raises(ValueError, match=message):
        occupancy("A100-40GB", **args)


def test_tile_search_respects_the_limits_and_sorts_by_time():
    r = gm.tiles.search("A100-40GB")
    lim = gm.occupancy.limits("A100-40GB")
    assert np.all(r["smem"] <= lim.max_smem_per_block) and np.all(r["registers"] <= 255)
    assert np.all((r["threads"] >= 32) & (r["threads"] <= 1024))
    assert np.all(np.diff(r["time"]) >= 0)
    best = gm.predict(gm.gemm(4096, 4096, 4096, block=(r["block_m"][0], r["block_n"][0], 8),
                              thread=(r["thread_m"][0], r["thread_n"][0])), gm.gpu("A100-40GB"))
    assert best.time == r["time"][0] and best.bound == "compute"


def test_estimated_registers_are_close_to_the_compilers():
    """The search's register estimate against ptxas for the two tiled kernels."""
    report = {(x.kernel, x.arch): x.registers for x in gm.compiler.report(("sm_80",)) if x.file == "gemm.cu"}
    assert abs(gm.tiles.registers_estimate(8, 8) - report[("gemm_reg128", "sm_80")]) <= 16
    assert gm.tiles.registers_estimate(16, 16) > 255  # the spilling tile is illegal in the search


def test_a_partial_warp_counts_as_a_whole_one():
    """48 threads are two warps: 64 warp slots allow 32 such blocks, 64 warps resident."""
    o = gm.occupancy.occupancy("A100-40GB", 48, 32, 0)
    assert o.per_resource["threads"] == 32 and o.warps == 64


@pytest.mark.parametrize("version, limits", [
    ((7, 0), (2048, 64, 32, 65536, 255, 1024, 96, 96, 0)),
    ((8, 0), (2048, 64, 32, 65536, 255, 1024, 164, 163, 1)),
    ((9, 0), (2048, 64, 32, 65536, 255, 1024, 228, 227, 1)),
])
def test_the_capability_limits(version, limits):
    """The Programming Guide's table, transcribed again (threads, warps and blocks per SM,
    registers per SM and per thread, threads per block, shared memory in KiB per SM, per
    block and reserved per block)."""
    c = gm.presets.capability(version)
    assert (c.max_threads_per_sm, c.max_warps_per_sm, c.max_blocks_per_sm, c.registers_per_sm,
            c.max_registers_per_thread, c.max_threads_per_block, c.smem_per_sm // 1024,
            c.max_smem_per_block // 1024, c.reserved_smem_per_block // 1024) == limits
