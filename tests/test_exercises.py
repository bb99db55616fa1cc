"""Every chapter's checkers, called with right and wrong answers."""

import numpy as np
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
    for wrong in (b for b in gm.BOUNDS if b != bound):
        feedback = gm.exercises.check_bound(kernel, preset, wrong)
        assert not feedback and wrong in feedback.message
        assert bound not in feedback.message and gm.fmt_bound(bound) not in feedback.message, "a hint, not the answer"


def test_check_bound_answers_bad_input_with_a_sentence():
    with pytest.raises(ValueError, match="kernel must be one of"):
        gm.exercises.check_bound("matmul", "T4", "smem")
    for answer in ("memory", ["smem"], 3, True):
        feedback = gm.exercises.check_bound("vector_add", "T4", answer)
        assert not feedback and feedback.message.startswith("The answer should be one of the strings")
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
    assert "less padding would do" in gm.exercises.check_padding(32, 64, 3).message  # not how much less
    assert gm.exercises.check_padding(32, 64, np.int64(1))
    for answer in (1.5, -1, "1", [1]):
        assert gm.exercises.check_padding(32, 64, answer).message.startswith("The answer should be a whole number")


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


NUMBER_CHECKS = [  # (checker with its parameters, the right answer)
    (lambda a: gm.exercises.check_machine_balance("H100-SXM", a),
     gm.gpu("H100-SXM").peak_flops / gm.gpu("H100-SXM").bandwidth("hbm")),
    (lambda a: gm.exercises.check_bandwidth("H100-SXM", "smem", a), gm.gpu("H100-SXM").bandwidth("smem") / 1e12),
    (lambda a: gm.exercises.check_chain_intensity(3, True, "fp16", a), 0.75),
    (lambda a: gm.exercises.check_fusion_speedup(5, a), 5.0),
    (lambda a: gm.exercises.check_occupancy("H100-SXM", 128, 72, 16 * 1024, a), 28.0),
    (lambda a: gm.exercises.check_score_bytes(4, 16, 8192, "fp16", a), 4 * 16 * 8192**2 * 2 / 1e9),
    (lambda a: gm.exercises.check_l2_overflow("H100-SXM", a), gm.gpu("H100-SXM").capacity("l2") // 12 + 1),
]


@pytest.mark.parametrize("check, right", NUMBER_CHECKS)
def test_numeric_checkers_take_numpy_numbers(check, right):
    assert check(right) and check(np.float64(right)) and check(np.array(right)) and check(np.float32(right))


@pytest.mark.parametrize("factor, says", [(2, "factor of two"), (10, "power of ten"), (0.001, "power of ten"),
                                          (1.05, "a little too high"), (3.7, "Too high"), (0.3, "Too low"), (-1, "sign")])
@pytest.mark.parametrize("check, right", NUMBER_CHECKS)
def test_a_wrong_number_gets_a_hint_not_the_answer(check, right, factor, says):
    feedback = check(right * factor)
    assert not feedback and says in feedback.message
    for shown in {f"{right:g}", f"{right:.3g}", f"{right:.4g}", gm.fmt_number(right)}:
        assert shown not in feedback.message.replace(f"{right * factor:g}", ""), (shown, feedback.message)


@pytest.mark.parametrize("answer", ["4.5", [4.5], {"a": 1}, True, np.array([1.0, 2.0]), float("nan"), float("inf")])
@pytest.mark.parametrize("check, right", NUMBER_CHECKS)
def test_a_wrong_type_gets_a_sentence(check, right, answer):
    feedback = check(answer)
    assert not feedback and feedback.message.startswith("The answer should be a number in")
