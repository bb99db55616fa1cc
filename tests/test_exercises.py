"""Every chapter's checkers, called with right and wrong answers."""

import pytest

import gpumodel as gm


@pytest.mark.parametrize("kernel, preset, bound", [
    ("vector_add", "A100-40GB", "hbm"),
    ("gemm_smem16", "T4", "smem"),
    ("gemm_reg128", "A100-40GB", "compute"),
    ("gemm_reg128", "RTX-4090", "smem"),
])
def test_check_bound(kernel, preset, bound):
    assert gm.exercises.check_bound(kernel, preset, bound)
    wrong = next(b for b in gm.BOUNDS if b != bound)
    feedback = gm.exercises.check_bound(kernel, preset, wrong)
    assert not feedback and f"the largest, {bound}" in feedback.message


def test_check_bound_refuses_bad_input():
    with pytest.raises(ValueError, match="kernel must be one of"):
        gm.exercises.check_bound("matmul", "T4", "smem")
    with pytest.raises(ValueError, match="answer must be one of"):
        gm.exercises.check_bound("vector_add", "T4", "memory")
    assert "No answer yet" in gm.exercises.check_bound("vector_add", "T4", None).message


def test_check_machine_balance():
    h100 = gm.gpu("H100-SXM")
    right = h100.peak_flops / h100.bandwidth("hbm")
    assert gm.exercises.check_machine_balance("H100-SXM", round(right, 1))
    assert not gm.exercises.check_machine_balance("H100-SXM", right / 2)
    assert not gm.exercises.check_machine_balance("H100-SXM", h100.peak_flops / h100.bandwidth("l2"))


@pytest.mark.parametrize("ops, fused, dtype, right", [(3, False, "fp16", 0.25), (3, True, "fp16", 0.75), (5, False, "fp32", 0.125)])
def test_check_chain_intensity(ops, fused, dtype, right):
    assert gm.exercises.check_chain_intensity(ops, fused, dtype, right)
    assert not gm.exercises.check_chain_intensity(ops, fused, dtype, right * 2)


def test_check_fusion_speedup():
    assert gm.exercises.check_fusion_speedup(5, 5.0)
    assert not gm.exercises.check_fusion_speedup(5, 10)
    with pytest.raises(ValueError, match="ops must be a positive integer"):
        gm.exercises.check_fusion_speedup(0, 1)


def test_check_sector_stride():
    assert gm.exercises.check_sector_stride(8)
    assert not gm.exercises.check_sector_stride(32)
    assert gm.exercises.check_sector_stride(16, elem_bytes=2)


def test_check_tile_a100_not_h100():
    assert gm.exercises.check_tile_a100_not_h100(128, 8)
    assert not gm.exercises.check_tile_a100_not_h100(16, 1)
    with pytest.raises(ValueError, match="legal tile"):
        gm.exercises.check_tile_a100_not_h100(16, 3)


def test_check_padding():
    assert gm.exercises.check_padding(32, 64, 1)
    assert not gm.exercises.check_padding(32, 64, 0)
    assert not gm.exercises.check_padding(32, 64, 3)  # conflict-free, but more than needed
    with pytest.raises(ValueError, match="answer must be a whole number"):
        gm.exercises.check_padding(32, 64, 1.5)


def test_check_occupancy():
    assert gm.exercises.check_occupancy("H100-SXM", 128, 72, 16 * 1024, 28)
    assert not gm.exercises.check_occupancy("H100-SXM", 128, 72, 16 * 1024, 64)


def test_chapter_four_checkers():
    assert gm.exercises.check_binding_level("transpose_smem", "H100-SXM", "smem")
    assert not gm.exercises.check_binding_level("transpose_smem", "H100-SXM", "hbm")
    traffic = {g: gm.waves.gemm_hbm(8192, 8192, 8192, gpu="H100-SXM", blocks_per_sm=2, order="grouped", group=g).hbm
               for g in gm.exercises.GROUPS}
    best = min(traffic, key=traffic.get)
    assert gm.exercises.check_best_group(8192, "H100-SXM", 1.0, best)
    assert not gm.exercises.check_best_group(8192, "H100-SXM", 1.0, next(g for g in traffic if g != best))
    l2 = gm.gpu("H100-SXM").capacity("l2")
    assert gm.exercises.check_l2_overflow("H100-SXM", l2 // 12 + 1)
    assert not gm.exercises.check_l2_overflow("H100-SXM", l2 // 4)


def test_chapter_five_checkers():
    assert gm.exercises.check_score_bytes(4, 16, 8192, "fp16", 4 * 16 * 8192**2 * 2 / 1e9)
    assert not gm.exercises.check_score_bytes(4, 16, 8192, "fp16", 4 * 16 * 8192**2 * 4 / 1e9)
    assert gm.exercises.check_flash_block(96 * 1024, 128, "fp16", 64)
    assert not gm.exercises.check_flash_block(96 * 1024, 128, "fp16", 128)
    assert gm.exercises.flash_block(32 * 1024, 64, "fp16") == 64  # 2 (3 x 64 x 64 + 64^2) = 32 KiB exactly
    with pytest.raises(ValueError, match="sram_bytes must hold"):
        gm.exercises.flash_block(100, 128, "fp16")
    hbm = gm.gpu("H100-SXM").capacity("hbm")
    n = 2
    while 2 * 32 * (4 * n * 128 + 2 * n * n) <= hbm:
        n *= 2
    assert gm.exercises.check_attention_overflow("H100-SXM", 1, 32, 128, "fp16", n)
    assert not gm.exercises.check_attention_overflow("H100-SXM", 1, 32, 128, "fp16", n * 2)
