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


@pytest.mark.slow
def test_estimated_registers_are_close_to_the_compilers():
    """The search's register estimate against ptxas for the two tiled kernels."""
    report = {(x.kernel, x.arch): x.registers for x in gm.cuda.compiler.report(("sm_80",)) if x.file == "gemm.cu"}
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


def test_each_resource_reports_the_blocks_it_allows():
    """A100, 256 threads, 32 registers, 16 KiB of shared memory: 64 warps / 8 = 8 blocks by
    threads; 32 by the block limit; 1024 registers per warp, 4 x (16384 // 1024) = 64 warps,
    / 8 = 8 blocks by registers; 16 KiB + 1 KiB reserved = 17 KiB, 164 // 17 = 9 by shared memory."""
    o = occupancy("A100-40GB", 256, 32, 16 * 1024)
    assert o.per_resource == {"threads": 8, "blocks": 32, "registers": 8, "smem": 9}


def test_a_block_without_shared_memory_still_reserves_some_from_8_0():
    """No shared memory asked: on 8.0 a block still takes its 1 KiB reserved, 164 per SM;
    on 7.0 nothing is reserved, and shared memory allows more blocks than even the smallest
    allocation (128 B: 96 KiB / 128 = 768) would."""
    assert occupancy("A100-40GB", 256, 32).per_resource["smem"] == 164
    v100 = occupancy("V100", 256, 32)
    assert v100.per_resource["smem"] > occupancy("V100", 256, 32, 128).per_resource["smem"] == 768
    assert v100.limiter != "smem"


def test_the_largest_block_shared_memory_is_allowed():
    """163 KiB, the most a block may have on 8.0, plus 1 KiB reserved fills the SM's 164 KiB."""
    o = occupancy("A100-40GB", 256, 32, 163 * 1024)
    assert (o.blocks, o.limiter) == (1, "smem")


def test_shared_memory_per_block_is_rounded_up_to_128_bytes():
    """T4 (nothing reserved): 8193 B is rounded up to 8320 B = 65 x 128; 65536 // 8320 = 7
    blocks, where 8192 B would allow 8."""
    assert occupancy("T4", 64, 32, 8193).per_resource["smem"] == 7
    assert occupancy("T4", 64, 32, 8192).per_resource["smem"] == 8


def test_shared_memory_per_tile():
    """A as bM x 8 and B as 8 x bN floats: 4 B x 8 x (128 + 128) = 8 KiB for 128 x 128."""
    assert gm.tiles.smem_bytes(128, 128) == 8192
    assert gm.tiles.smem_bytes(64, 32, bk=16) == 4 * 16 * 96


@pytest.mark.parametrize("preset, tile, legal", [
    ("A100-40GB", (32, 32, 4, 8), True),      # 8 x 4 = 32 threads: the fewest allowed
    ("A100-40GB", (32, 32, 8, 8), False),     # 16 threads: fewer than a warp
    ("A100-40GB", (32, 32, 1, 1), True),      # 1024 threads: the most allowed
    ("A100-40GB", (64, 32, 1, 1), False),     # 2048 threads
    ("A100-40GB", (56, 112, 7, 28), True),    # 7 x 28 + 7 + 28 + 24 = 255 registers: the most allowed
    ("A100-40GB", (56, 116, 7, 29), False),   # 263 registers
    ("T4", (2016, 32, 63, 1), True),          # 4 x 8 x 2048 = 64 KiB, T4's per-block limit; 32 x 32 threads
    ("T4", (2048, 32, 64, 1), False),         # 4 x 8 x 2080 B: over it
    ("A100-40GB", (48, 32, 5, 1), False),     # 5 does not divide 48
])
def test_legal_tiles_at_the_limits(preset, tile, legal):
    assert bool(gm.tiles.is_legal(preset, *tile)) is legal


def test_a_tile_as_large_as_the_matrix_is_searched():
    r = gm.tiles.search("A100-40GB", 16, 16, 16)
    assert set(r["block_m"]) == {16} and set(r["block_n"]) == {16}


def test_the_search_reports_every_column_and_the_warps_of_each_tile():
    g = "A100-40GB"
    r = gm.tiles.search(g, 2048, 2048, 2048)
    assert list(r) == ["block_m", "block_n", "thread_m", "thread_n", "threads", "registers", "smem", "time",
                       "bound", "warps"]
    assert set(r["bound"]) <= set(gm.model.BOUNDS)
    assert np.array_equal(r["warps"], occupancy(g, r["threads"], r["registers"], r["smem"]).warps)
    # On the T4 (64 KiB per SM) a tile's shared memory is what limits some of them.
    t4 = gm.tiles.search("T4", 4096, 4096, 4096)
    assert np.array_equal(t4["warps"], occupancy("T4", t4["threads"], t4["registers"], t4["smem"]).warps)
    assert np.any(occupancy("T4", t4["threads"], t4["registers"], t4["smem"]).limiter == "smem")
    # Equal times: the tile that keeps more warps resident comes first.
    ties = np.flatnonzero(np.diff(r["time"]) == 0)
    assert ties.size and np.all(r["warps"][ties] >= r["warps"][ties + 1])
