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
    assert gm.course.hierarchy.check_bound(kernel, preset, bound)
    for wrong in (b for b in gm.BOUNDS if b != bound):
        feedback = gm.course.hierarchy.check_bound(kernel, preset, wrong)
        assert not feedback and wrong in feedback.message
        assert bound not in feedback.message and gm.fmt_bound(bound) not in feedback.message, "a hint, not the answer"


def test_check_bound_answers_bad_input_with_a_sentence():
    with pytest.raises(ValueError, match="kernel must be one of"):
        gm.course.hierarchy.check_bound("matmul", "T4", "smem")
    for answer in ("memory", ["smem"], 3, True):
        feedback = gm.course.hierarchy.check_bound("vector_add", "T4", answer)
        assert not feedback and feedback.message.startswith("The answer should be one of the strings")
    assert "No answer yet" in gm.course.hierarchy.check_bound("vector_add", "T4", None).message


@pytest.mark.parametrize("gpu", ["A100-40GB", "H100-SXM", "L4"])
def test_check_fmas_per_load(gpu):
    g = gm.gpu(gpu)
    balance = g.peak_flops / g.bandwidth("hbm")
    k = next(k for k in range(1, 1000) if 2 * k / 4 >= balance)  # 2k flops per 4 bytes
    assert gm.course.hierarchy.check_fmas_per_load(gpu, k)
    assert not gm.course.hierarchy.check_fmas_per_load(gpu, k - 1) and not gm.course.hierarchy.check_fmas_per_load(gpu, k + 1)


def test_check_decode_batch():
    """Brute force over B, from the flops and bytes the exercise states."""
    h100, w = gm.gpu("H100-SXM"), 8192
    ridge = h100.peak("fp16") / h100.bandwidth("hbm")
    b = next(b for b in range(1, 5000) if 2 * b * w * w / (2 * (w * w + 2 * b * w)) >= ridge)
    assert 250 < b < 400
    assert gm.course.tensor_cores.check_critical_batch("H100-SXM", w, "fp16", b)
    assert not gm.course.tensor_cores.check_critical_batch("H100-SXM", w, "fp16", b - 10)
    assert not gm.course.tensor_cores.check_critical_batch("H100-SXM", w, "fp16", round(ridge))  # the ridge itself is not the batch
    with pytest.raises(ValueError, match="width must be large enough"):
        gm.course.tensor_cores.check_critical_batch("H100-SXM", 64, "fp16", 1)


@pytest.mark.parametrize("gpu", ["A100-40GB", "H100-SXM"])
def test_check_fusion_limit_is_four_times_the_balance(gpu):
    g = gm.gpu(gpu)
    assert gm.course.intensity.check_fusion_limit(gpu, "fp32", 4 * g.peak_flops / g.bandwidth("hbm"))
    assert not gm.course.intensity.check_fusion_limit(gpu, "fp32", 10**6)  # not the number of ops
    assert not gm.course.intensity.check_fusion_limit(gpu, "fp32", 2 * g.peak_flops / g.bandwidth("hbm"))
    # Without chapter 1's register traffic a fused op costs its flop alone: twice the gain, and the hint
    # names that term, not the flops' count (an FMA is not the slip here).
    arithmetic_only = gm.course.intensity.check_fusion_limit(gpu, "fp32", 8 * g.peak_flops / g.bandwidth("hbm"))
    assert not arithmetic_only and "register traffic" in arithmetic_only.message
    assert "FMA" not in arithmetic_only.message


@pytest.mark.parametrize("gpu, t", [("T4", 4), ("V100", 4), ("A100-40GB", 4), ("H100-SXM", 8), ("RTX-4090", 8)])
def test_check_operand_tile(gpu, t):
    assert gm.course.tiling.check_operand_tile(gpu, t)
    assert not gm.course.tiling.check_operand_tile(gpu, t * 2)


def test_check_l2_tile():
    assert gm.course.roofline_levels.check_l2_tile("H100-SXM", 8192, 256)
    assert gm.course.roofline_levels.check_l2_tile("A100-40GB", 8192, 128)  # the A100's L2 ridge is less than half the H100's
    assert not gm.course.roofline_levels.check_l2_tile("H100-SXM", 8192, 128)
    with pytest.raises(ValueError, match="size must allow a tile"):
        gm.course.roofline_levels.check_l2_tile("H100-SXM", 64, 64)


@pytest.mark.parametrize("d, dtype", [(64, "fp16"), (128, "fp16"), (128, "fp32")])
def test_check_attention_limit_is_d_over_s(d, dtype):
    s = 4 if dtype == "fp32" else 2
    assert gm.course.flashattention.check_attention_limit(d, dtype, d / s)
    assert not gm.course.flashattention.check_attention_limit(d, dtype, d)


def test_check_hbm_bytes_per_clock():
    h100 = gm.gpu("H100-SXM")
    per = 3.35e12 / (132 * 1.98e9)  # the datasheet figures, independently
    assert h100.sms.value == 132 and h100.clock.value == 1.98e9 and h100.bandwidth("hbm") == 3.35e12
    assert gm.course.appendix_presets.check_hbm_bytes_per_clock("H100-SXM", per)
    assert not gm.course.appendix_presets.check_hbm_bytes_per_clock("H100-SXM", per * 32)


def test_check_padding():
    assert gm.course.tiling.check_padding(32, 64, 1)
    assert not gm.course.tiling.check_padding(32, 64, 0)
    assert not gm.course.tiling.check_padding(32, 64, 3)  # conflict-free, but more than needed
    assert "less padding would do" in gm.course.tiling.check_padding(32, 64, 3).message  # not how much less
    assert gm.course.tiling.check_padding(32, 64, np.int64(1))
    assert gm.course.tiling.check_padding(32, 64, "1")  # text is read as the site's box reads it
    for answer in (1.5, -1, "one", [1]):
        assert gm.course.tiling.check_padding(32, 64, answer).message.startswith("The answer should be a whole number")


def test_check_occupancy():
    assert gm.course.tiling.check_occupancy("H100-SXM", 128, 72, 16 * 1024, 28)
    assert not gm.course.tiling.check_occupancy("H100-SXM", 128, 72, 16 * 1024, 64)


def test_chapter_five_checkers():
    assert gm.course.flashattention.check_flash_block(96 * 1024, 128, "fp16", 64)
    assert not gm.course.flashattention.check_flash_block(96 * 1024, 128, "fp16", 128)
    assert gm.flash_block(32 * 1024, 64, "fp16") == 64  # 2 (3 x 64 x 64 + 64^2) = 32 KiB exactly
    with pytest.raises(ValueError, match="sram_bytes must hold"):
        gm.flash_block(100, 128, "fp16")


H100 = gm.gpu("H100-SXM")
NUMBER_CHECKS = [  # (checker with its parameters, the right answer)
    (lambda a: gm.course.hierarchy.check_fmas_per_load("H100-SXM", a), 40),
    (lambda a: gm.course.intensity.check_fusion_limit("H100-SXM", "fp32", a), 4 * H100.peak_flops / H100.bandwidth("hbm")),
    (lambda a: gm.course.tiling.check_operand_tile("T4", a), 4),
    (lambda a: gm.course.roofline_levels.check_l2_tile("H100-SXM", 8192, a), 256),
    (lambda a: gm.course.flashattention.check_attention_limit(128, "fp16", a), 64),
    (lambda a: gm.course.appendix_presets.check_hbm_bytes_per_clock("H100-SXM", a), 3.35e12 / (132 * 1.98e9)),
    (lambda a: gm.course.tiling.check_occupancy("H100-SXM", 128, 72, 16 * 1024, a), 28.0),
    (lambda a: gm.course.flashattention.check_flash_block(96 * 1024, 128, "fp16", a), 64),
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


@pytest.mark.parametrize("answer", ["4.5 apples", [4.5], {"a": 1}, True, np.array([1.0, 2.0]), float("nan"), float("inf")])
@pytest.mark.parametrize("check, right", NUMBER_CHECKS)
def test_a_wrong_type_gets_a_sentence(check, right, answer):
    feedback = check(answer)
    assert not feedback and feedback.message.startswith("The answer should be a number")


def test_check_bound_fraction():
    pcie, nbytes = gm.gpu("H100-PCIe"), 2**31  # a 2 GiB read: HBM serves what does not stay in L2
    right = 1942e9 * (nbytes - pcie.capacity("l2")) / pcie.bandwidth("hbm") / nbytes
    assert gm.course.model_vs_measurements.check_bound_fraction("H100-PCIe", "stream read, 2 GiB (gpu-stream)", right)
    wrong = gm.course.model_vs_measurements.check_bound_fraction("H100-PCIe", "stream read, 2 GiB (gpu-stream)", 1 / right)
    assert not wrong and f"{right:.3g}" not in wrong.message
    with pytest.raises(ValueError, match="must name a published record"):
        gm.course.model_vs_measurements.check_bound_fraction("H100-PCIe", "no such run", 0.5)


# Issue 26: mutants the tests could not see.

@pytest.mark.parametrize("factor, direction, other", [(10, "high", "low"), (100, "high", "low"), (0.1, "low", "high"),
                                                      (0.01, "low", "high")])
def test_a_power_of_ten_hint_says_which_way(factor, direction, other):
    rules = gm.course.checks.number_rules(5.0, "ms")
    message = gm.course.checks.verdict(rules, 5.0 * factor).message.lower()
    assert gm.course.checks.POWER_OF_TEN in message and direction in message and other not in message


def test_the_tolerance_is_relative():
    """1 % off a large value is right with a 2 % tolerance; so is 1 % off a small one, and 3 % is not."""
    for expected in (1e9, 1e-6):
        assert gm.course.checks.check_number(1.01 * expected, expected, "B")
        assert not gm.course.checks.check_number(1.03 * expected, expected, "B")


@pytest.mark.parametrize("ratio, factor_of_two", [(2.0, True), (1.96, True), (2.04, True), (0.5, True), (1.9, False),
                                                  (2.1, False), (0.45, False), (0.55, False)])
def test_the_factor_of_two_band_is_narrow(ratio, factor_of_two):
    message = gm.course.checks.verdict(gm.course.checks.number_rules(7.0, "s"), 7.0 * ratio).message
    assert ("by a factor of two" in message) == factor_of_two, message


@pytest.mark.parametrize("edit, message", [
    (lambda d: {**d, "gpu": "T5"}, "gpu a preset"),
    (lambda d: {**d, "extra": 1}, "must hold how, gpu and bytes"),
    (lambda d: {**d, "bytes": {**d["bytes"], "4": {"traced": -1.0, "model": 1.0}}}, r"bytes.4 must hold positive"),
    (lambda d: {**d, "bytes": {"1": d["bytes"]["1"]}}, "must hold the groups"),
    (lambda d: {**d, "bytes": {**d["bytes"], "8": {"traced": True, "model": 1.0}}}, r"bytes.8 must hold positive"),
])
def test_the_triton_labs_recorded_result_is_read_strictly(edit, message, tmp_path):
    import json

    from gpumodel.course import roofline_levels

    good = roofline_levels.recorded_triton_order()
    path = tmp_path / "triton_lab.json"
    path.write_text(json.dumps(edit(good)))
    with pytest.raises(gm.presets.DataError, match=message):
        roofline_levels.recorded_triton_order(path)
    path.write_text("{not json")
    with pytest.raises(gm.presets.DataError, match="not valid JSON"):
        roofline_levels.recorded_triton_order(path)
