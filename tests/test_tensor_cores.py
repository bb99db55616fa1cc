"""Chapter 6's helpers (gpumodel.tensor_cores): the formulas against brute force or the
model, and each checker with a right answer, a wrong one (whose hint does not give the
answer away) and one of the wrong type."""

import math

import numpy as np
import pytest

import gpumodel as gm

tc = gm.tensor_cores
dc = gm.decode


# The formulas.


@pytest.mark.parametrize("m, n, k", [(16, 8, 16), (64, 64, 16), (64, 256, 16), (128, 128, 32)])
def test_mma_tile_counts_flops_and_operand_bytes(m, n, k):
    flops, nbytes = tc.mma_tile(m, n, k, "fp16")
    assert flops == 2 * m * n * k and nbytes == 2 * (m * k + k * n)
    assert tc.mma_tile(m, n, k, "fp16", a_in_registers=True)[1] == 2 * k * n
    assert tc.operand_intensity(m, n, k) == pytest.approx(2 * m * n / (2 * (m + n)))
    assert tc.operand_intensity(m, n, 2 * k) == pytest.approx(tc.operand_intensity(m, n, k)), "k cancels"


def test_mma_tile_rejects_bad_input():
    with pytest.raises(ValueError, match="m must be positive"):
        tc.mma_tile(0, 8, 16)
    with pytest.raises(ValueError, match="dtype must be one of"):
        tc.mma_tile(16, 8, 16, "fp8")
    with pytest.raises(ValueError, match="a_in_registers must be True or False"):
        tc.mma_tile(16, 8, 16, "fp16", a_in_registers="yes")


def test_swizzle_removes_the_conflicts_of_a_plain_tile():
    for index in (0, 5, 31):
        plain = gm.simulate.warp_addresses((32, 32), 0, "column", index)
        assert gm.simulate.bank_conflicts(plain) == 32
        for direction in ("row", "column"):
            assert gm.simulate.bank_conflicts(tc.swizzled_addresses((32, 32), direction, index)) == 1


def test_swizzle_is_a_permutation_of_each_row():
    rows = [np.sort(tc.swizzled_addresses((32, 32), "row", r)) for r in range(32)]
    assert all(np.array_equal(a, r * 32 + np.arange(32)) for r, a in enumerate(rows))


def test_ldmatrix_phase_conflicts_unless_swizzled():
    for chunk in range(8):
        assert gm.simulate.bank_conflicts(tc.ldmatrix_addresses(128, chunk)) == 8
        assert gm.simulate.bank_conflicts(tc.ldmatrix_addresses(128, chunk, swizzled=True)) == 1
    assert gm.simulate.bank_conflicts(tc.ldmatrix_addresses(64, 1)) == 4  # rows 2 apart share banks
    with pytest.raises(ValueError, match="row_bytes = 128"):
        tc.ldmatrix_addresses(64, 0, swizzled=True)
    with pytest.raises(ValueError, match="chunk must be"):
        tc.ldmatrix_addresses(128, 8)
    with pytest.raises(ValueError, match="power of two"):
        tc.swizzled_addresses((32, 48))


def test_cluster_gemm_takes_l2_from_the_cluster_tile_and_the_rest_from_the_block():
    n = 8192
    alone = gm.gemm(n, n, n, block=(128, 256), thread=(64, 256), dtype="fp16")
    big = gm.gemm(n, n, n, block=(256, 256), thread=(64, 256), dtype="fp16")
    w = tc.cluster_gemm(n, n, n, block=(128, 256), thread=(64, 256), cluster=(2, 1))
    assert w.bytes["l2"] == big.bytes["l2"] < alone.bytes["l2"]
    assert all(w.bytes[lv] == alone.bytes[lv] for lv in ("registers", "smem", "hbm"))
    assert gm.predict(w, "H100-SXM").times["l2"] < 0.7 * gm.predict(alone, "H100-SXM").times["l2"]
    assert gm.predict(w, "H100-PCIe").bound == "compute" and gm.predict(alone, "H100-PCIe").bound == "l2"


def test_pipeline_follows_littles_law():
    for name in ("A100-40GB", "H100-SXM"):
        g = gm.gpu(name)
        p = tc.pipeline(g, block=(128, 128), bk=64)
        assert p.stage_bytes == 2 * 256 * 64
        assert p.stage_time == pytest.approx(2 * 128 * 128 * 64 * g.sms.value / g.peak("fp16"))
        assert p.in_flight == pytest.approx(p.stage_bytes * p.latency / p.stage_time)
        assert p.stages == 1 + math.ceil(p.in_flight / p.stage_bytes) and p.smem == p.stages * p.stage_bytes
        assert p.littles_law == pytest.approx(g.in_flight("hbm") / g.sms.value)
    assert tc.pipeline("H100-SXM").stages > tc.pipeline("A100-40GB").stages, "faster math, deeper pipeline"
    with pytest.raises(ValueError, match="latency"):
        tc.pipeline("H100-SXM", level="smem")


def test_waves_and_tails():
    w = tc.wave_quantisation(4096, 4096, (128, 128), "H100-SXM")
    assert (w.tiles, w.slots, w.waves) == (1024, 132, 8)
    assert w.last == pytest.approx(100 / 132) and w.efficiency == pytest.approx(1024 / (8 * 132))
    full = tc.wave_quantisation(1056, 1024, (8, 1024), "H100-SXM")  # 132 tiles: one full wave
    assert full.last == 1.0 and full.efficiency == 1.0
    assert tc.wave_quantisation(100, 100, (64, 64), "H100-SXM").tiles == 4  # partial tiles count
    with pytest.raises(ValueError, match="block\\[0\\] must not exceed m"):
        tc.wave_quantisation(64, 64, (128, 64), "H100-SXM")


def test_split_k_and_stream_k():
    assert tc.split_k_bytes(1024, 1024, 2) == 2 * 2 * 1024 * 1024 * 4
    s = tc.stream_k(1024, 64, 132)
    assert s["tiles"] == 8 * 64 and s["stream_k"] == math.ceil(1024 * 64 / 132)
    assert tc.stream_k(132, 10, 132)["ratio"] == 1.0


# The checkers.


def _is_hint(feedback, answer):
    return not feedback and str(answer) not in feedback.message.split(":", 1)[1]


def test_check_operand_n():
    ridge = 4096 / 128  # dense fp16 FLOP per clock per SM over shared-memory bytes per clock
    n = next(n for n in range(8, 257, 8) if 64 * n / (64 + n) >= ridge)  # brute force from the formula
    assert gm.course.tensor_cores.check_operand_n("H100-SXM", n)
    for wrong in (n - 8, n + 8, 256):
        feedback = gm.course.tensor_cores.check_operand_n("H100-SXM", wrong)
        assert _is_hint(feedback, n)
    for bad in ("fifty-six", [n], True):
        feedback = gm.course.tensor_cores.check_operand_n("H100-SXM", bad)
        assert not feedback and feedback.message.startswith("The answer should be")
    assert "No answer yet" in gm.course.tensor_cores.check_operand_n("H100-SXM", None).message


def test_check_critical_batch():
    w, b_w = 8192, 0.5
    g = gm.gpu("H100-SXM")
    ridge = g.peak("fp16") / g.bandwidth("hbm")
    b = next(b for b in range(1, 5000) if 2 * b * w * w / (b_w * w * w + 4 * b * w) >= ridge)
    assert gm.course.tensor_cores.check_critical_batch("H100-SXM", w, "int4", b)
    for wrong in (b - 5, 4 * b, dc.gemm_critical_batch("H100-SXM", w, "fp16")):
        assert _is_hint(gm.course.tensor_cores.check_critical_batch("H100-SXM", w, "int4", wrong), b)
    assert gm.course.tensor_cores.check_critical_batch("H100-SXM", w, "int4", str(b))  # read as the site's box reads it
    assert not gm.course.tensor_cores.check_critical_batch("H100-SXM", w, "int4", None)
    assert gm.course.tensor_cores.check_critical_batch("H100-SXM", w, "int4", "eighty").message.startswith("The answer should be")


def test_check_last_wave():
    tiles, sms = (6144 // 128) * (6144 // 256), 132
    right = (tiles % sms) / sms
    assert gm.course.tensor_cores.check_last_wave(6144, 6144, (128, 256), "H100-SXM", right)
    assert gm.course.tensor_cores.check_last_wave(6144, 6144, (128, 256), "H100-SXM", np.float32(right))
    for wrong in (1 - right, tiles / sms % 1 + 0.2, 0.5):
        feedback = gm.course.tensor_cores.check_last_wave(6144, 6144, (128, 256), "H100-SXM", wrong)
        assert not feedback and f"{right:.3}" not in feedback.message and str(tiles % sms) not in feedback.message
    percent = gm.course.tensor_cores.check_last_wave(6144, 6144, (128, 256), "H100-SXM", 100 * right)
    assert not percent and "as a fraction between 0 and 1" in percent.message and f"{right:.3}" not in percent.message
    for typed in (f"{right:.3f}", f"{100 * right:.2f}%", f"{100 * right:.1f} %"):  # a percentage says so
        assert gm.course.tensor_cores.check_last_wave(6144, 6144, (128, 256), "H100-SXM", typed), typed
    for bad in ([right], None):
        assert not gm.course.tensor_cores.check_last_wave(6144, 6144, (128, 256), "H100-SXM", bad)
    assert gm.course.tensor_cores.check_last_wave(6144, 6144, (128, 256), "H100-SXM", "most").message.startswith("The answer should be")


def test_split_k_partial_sums_cost_at_the_level_that_holds_them():
    """Chapter 6: 1024 x 1024 fp32 partial sums in two slices fit the H100's L2 and cost at its
    bandwidth (at the tensor clock); sums larger than the L2 cost at HBM."""
    h100 = gm.gpu("H100-SXM")
    seconds, level = tc.split_k_time(1024, 1024, 2, h100)
    assert level == "l2" and seconds == pytest.approx(2 * 2 * 1024**2 * 4 / h100.running("fp16").bandwidth("l2"))
    seconds, level = tc.split_k_time(8192, 8192, 2, h100)
    assert level == "hbm" and seconds == pytest.approx(2 * 2 * 8192**2 * 4 / h100.bandwidth("hbm"))


def test_split_k_time_broadcasts_as_split_k_bytes_does():
    """A probe of bad input: an array of sizes raised NumPy's "truth value of an array is ambiguous"."""
    seconds, level = tc.split_k_time([1024, 8192], 1024, [[2], [4]], "H100-SXM")
    assert np.shape(seconds) == np.shape(level) == np.shape(tc.split_k_bytes([1024, 8192], 1024, [[2], [4]])) == (2, 2)
    for (i, j), s in np.ndenumerate(seconds):
        assert (s, level[i, j]) == tc.split_k_time([1024, 8192][j], 1024, [2, 4][i], "H100-SXM")


def test_a_full_last_wave_is_one():
    """108 tiles of 128 x 128 on the A100's 108 SMs: one full wave, whose occupancy 1.0 is right
    (not mistaken for a percentage)."""
    w = gm.tensor_cores.wave_quantisation(9 * 128, 12 * 128, (128, 128), "A100-40GB")
    assert (w.tiles, w.waves, w.last, w.efficiency) == (108, 1, 1.0, 1.0)
    assert gm.course.tensor_cores.check_last_wave(9 * 128, 12 * 128, (128, 128), "A100-40GB", 1.0)
    assert gm.course.tensor_cores.check_last_wave(9 * 128, 24 * 128, (128, 128), "A100-40GB", 1)
