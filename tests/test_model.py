"""The model reproduces the figures derived by hand (ARCHITECTURE.md, "The model", "The bound") and
the article's, exactly."""

import math

import numpy as np
import pytest

import gpumodel as gm

A100 = gm.gpu("A100-40GB")
H100 = gm.gpu("H100-SXM")
N = 4096


def test_a100_derived_bandwidths():
    got = [A100.bandwidth(lv) / 1e12 for lv in gm.LEVELS]
    assert [round(x, 3) for x in got[1:]] == [19.492, 7.219, 1.555]
    assert round(got[0]) == 117
    assert gm.fmt_bandwidth(A100.bandwidth("smem"), 4) == "19.49 TB/s"
    assert gm.fmt_flops(A100.peak_flops) == "19.5 TFLOP/s"


def test_vector_add_is_hbm_bound():
    p = gm.predict(gm.vector_add(2**28), A100)
    assert gm.fmt_time(p.time) == "2.07 ms"
    assert p.bound == "hbm"
    assert p.busy["compute"] < 0.01
    assert p.busy["hbm"] == 1.0


def test_gemm_16x16_tiles_smem_bound():
    p = gm.predict(gm.gemm(N, N, N, block=(16, 16), thread=(1, 1)), A100)
    assert p.bound == "smem"
    assert gm.fmt_time(p.time) == "30.0 ms"


def test_gemm_128x128_8x8_compute_bound_on_a100():
    p = gm.predict(gm.gemm(N, N, N, block=(128, 128), thread=(8, 8)), A100)
    assert p.bound == "compute"
    assert gm.fmt_time(p.time) == "7.05 ms"
    assert p.busy["compute"] == 1.0
    # Registers need exactly F/P: the tie goes to compute.
    assert p.level_times["registers"] == pytest.approx(p.compute_time, rel=1e-12)


def test_same_kernel_on_h100_is_smem_bound_by_six_percent():
    assert (H100.sms.value, H100.fp32_lanes_per_sm.value, H100.clock.value) == (132, 128, 1.98e9)
    p = gm.predict(gm.gemm(N, N, N, block=(128, 128), thread=(8, 8)), H100)
    assert p.bound == "smem"
    assert p.level_times["smem"] / p.compute_time == pytest.approx(1.0625)


def test_article_fp16_gemm_without_l2_reuse():
    """seeds/002: n = 8192 fp16, b = 128, every tile read reaching HBM: ~17 GB, ~3.5 ms of
    tensor math against ~11 ms of HBM at 312 TFLOP/s and 1.5 TB/s."""
    w = gm.gemm(8192, 8192, 8192, block=(128, 128), thread=(64, 64), dtype="fp16", l2_reuse=False)
    assert w.math == "fp16"
    assert w.bytes["hbm"] == pytest.approx(17e9, rel=0.02)
    assert A100.peak("fp16") == 312e12
    assert w.flops / 312e12 == pytest.approx(3.5e-3, rel=0.01)
    assert w.bytes["hbm"] / 1.5e12 == pytest.approx(11e-3, rel=0.05)
    p = gm.predict(w, A100)
    assert p.bound == "hbm"
    # With L2 catching the reuse, HBM carries only the compulsory bytes.
    reuse = gm.predict(gm.gemm(8192, 8192, 8192, block=(128, 128), thread=(64, 64), dtype="fp16"), A100)
    assert reuse.workload.bytes["hbm"] == 2 * 3 * 8192**2
    assert reuse.bound == "compute"


@pytest.mark.parametrize("fused, intensity", [(False, 0.25), (True, 0.75)])
def test_article_relu_scale_bias_chain(fused, intensity):
    p = gm.predict(gm.elementwise_chain(2**24, ops=3, fused=fused, dtype="fp16"), A100)
    assert p.intensity["hbm"] == intensity
    assert p.bound == "hbm"


def test_fusion_is_three_times_faster():
    unfused, fused = (gm.predict(gm.elementwise_chain(2**24, 3, f, "fp16"), A100) for f in (False, True))
    assert unfused.time / fused.time == pytest.approx(3.0)


def test_article_score_matrix_sizes():
    one = gm.score_matrix_bytes(1, 1, 4096, "fp16")
    assert one == 4096**2 * 2
    assert one == pytest.approx(33.5e6, rel=0.005)
    assert gm.score_matrix_bytes(8, 32, 4096, "fp16") == pytest.approx(8.6e9, rel=0.005)


def test_standard_attention_follows_dao_algorithm_0():
    b, h, n, d = 2, 4, 1024, 64
    w = gm.attention(b, h, n, d, "fp16", "standard")
    assert w.bytes["hbm"] == 2 * b * h * (4 * n * d + 4 * n * n)
    assert w.flops == 4 * b * h * n * n * d


def test_flash_attention_rereads_kv_once_per_query_block():
    b, h, n, d, br = 1, 2, 1000, 64, 128
    w = gm.attention(b, h, n, d, "fp16", "flash", block=(br, 64))
    blocks = math.ceil(n / br)
    assert w.bytes["hbm"] == 2 * b * h * (2 * n * d + 2 * n * d * blocks)
    standard = gm.attention(b, h, n, d, "fp16", "standard")
    assert w.bytes["hbm"] < standard.bytes["hbm"]
    assert w.flops == standard.flops


def test_flash_attention_beats_standard_at_long_sequences():
    std, flash = (gm.predict(gm.attention(8, 32, 4096, 128, "fp16", k), A100) for k in ("standard", "flash"))
    assert std.bound == "hbm"
    assert flash.time < std.time


def test_padded_transpose_removes_the_32_way_conflict():
    plain, padded = (gm.transpose(4096, p) for p in (False, True))
    assert plain.bytes["smem"] == 4 * 4096**2 * 33
    assert padded.bytes["smem"] == 4 * 4096**2 * 2
    assert plain.bytes["hbm"] == padded.bytes["hbm"] == 8 * 4096**2
    assert gm.predict(plain, A100).bound == "smem"
    assert gm.predict(padded, A100).bound == "hbm"


def test_partial_tiles_count_as_whole_tiles():
    w = gm.gemm(130, 100, 64, block=(64, 64, 16), thread=(4, 4))
    m_p, n_p, k_p = 192, 128, 64
    tiles = 4 * (m_p * k_p * 2 + k_p * n_p * 3)
    assert w.bytes["l2"] == tiles + 4 * 130 * 100
    assert w.bytes["smem"] == tiles + 4 * k_p * (m_p * n_p / 16) * 8
    assert w.bytes["hbm"] == 4 * (130 * 64 + 64 * 100 + 130 * 100)
    assert w.flops == 2 * 130 * 100 * 64


def test_naive_gemm_charges_what_must_cross_l2_at_best():
    """Each 16 x 16 block's rows of A and columns of B once (L1 keeps what its threads
    share); the request count, 2sMNK, is a separate estimate, 16 times more here. Every
    warp's load and store is a 128 B wavefront of the L1/shared-memory path, whatever the
    dtype (one 32-bit register per lane)."""
    w = gm.gemm(256, 512, 128)
    assert w.bytes["l2"] == 4 * (128 * (256 * 512 / 16) * 2 + 256 * 512)
    assert w.bytes["hbm"] == 4 * (256 * 128 + 128 * 512 + 256 * 512)
    assert w.bytes["smem"] == 128 * (256 * 512 / 32) * (2 * 128 + 1) == gm.gemm(256, 512, 128, dtype="fp16").bytes["smem"]
    requests = gm.gemm_requests(256, 512, 128)
    assert requests.bytes["l2"] == 4 * (2 * 256 * 512 * 128 + 256 * 512)
    assert gm.predict(requests, A100).bound == "l2" and gm.predict(w, A100).time < gm.predict(requests, A100).time
    with pytest.raises(ValueError, match="thread must be"):
        gm.gemm(64, 64, 64, thread=(2, 2))


def test_the_ideal_gemm_is_flops_and_compulsory_bytes():
    w = gm.gemm_ideal(1024, 512, 256, "fp16")
    assert w.flops == 2 * 1024 * 512 * 256 and w.math == "fp16"
    assert w.bytes["hbm"] == w.bytes["l2"] == 2 * (1024 * 256 + 256 * 512 + 1024 * 512)
    assert w.bytes["smem"] == w.bytes["registers"] == 0
    assert gm.predict(w, A100).bound == "hbm"  # small: 8 flops per byte
    assert gm.predict(gm.gemm_ideal(4096, 4096, 4096, "fp16"), A100).bound == "compute"


def test_intensity_and_ridge():
    p = gm.predict(gm.vector_add(1000), A100)
    assert p.intensity["hbm"] == pytest.approx(1 / 12)
    assert p.intensity["smem"] == np.inf
    assert p.ridge["hbm"] == pytest.approx(A100.peak_flops / 1.555e12)


def test_tensor_peak_missing_is_a_clear_error():
    with pytest.raises(ValueError, match="V100 has no bf16"):
        gm.predict(gm.gemm(256, 256, 256, block=(128, 128), dtype="bf16"), gm.gpu("V100"))


def test_a_sweep_is_one_call():
    sizes = np.arange(1, 100_001)
    p = gm.predict(gm.vector_add(sizes), A100)
    assert p.time.shape == (100_000,)
    assert set(np.unique(p.bound)) == {"hbm"}


def test_attention_backward_follows_dao_algorithm_3_and_flash_recomputes():
    b, h, n, d = 2, 4, 1024, 64
    std = gm.attention_backward(b, h, n, d, "fp16", "standard")
    assert std.bytes["hbm"] == 2 * b * h * (8 * n * d + 7 * n * n)
    flash = gm.attention_backward(b, h, n, d, "fp16", "flash", block=(128, 128))
    assert flash.bytes["hbm"] == 2 * b * h * (6 * n * d + 4 * n * d * 8)
    assert flash.flops == 1.25 * std.flops  # the recomputed product
    cached = gm.attention_backward(b, h, n, d, "fp16", "flash", block=(128, 128), l2_reuse=True)
    assert cached.bytes["hbm"] == 2 * b * h * 8 * n * d and cached.bytes["l2"] == flash.bytes["l2"]


def test_flash_with_l2_reuse_reads_each_matrix_once():
    w = gm.attention(2, 4, 1024, 64, "fp16", "flash", block=(128, 64), l2_reuse=True)
    assert w.bytes["hbm"] == 2 * 2 * 4 * 4 * 1024 * 64
    assert w.bytes["l2"] == gm.attention(2, 4, 1024, 64, "fp16", "flash", block=(128, 64)).bytes["hbm"]


def test_flash1_walks_key_blocks_outer_with_fp32_partials_between_them():
    """By hand, one head, N = 1,024, d = 64, fp16, 256-key blocks (FlashAttention's first
    release): 4 steps; K, V and O once and Q at every step, 2 (3 + 4) N d bytes; the fp32
    output and one statistic per row out and back between steps, 8 x 3 x N (d + 1)."""
    w = gm.attention(1, 1, 1024, 64, "fp16", "flash1", block=(16, 256))
    assert w.bytes["l2"] == w.bytes["hbm"] == 2 * 7 * 1024 * 64 + 8 * 3 * 1024 * 65
    assert w.bytes["smem"] == 2 * 2 * (2 + 4) * 1024 * 64  # K, V once, Q at every step; written and read
    cached = gm.attention(1, 1, 1024, 64, "fp16", "flash1", block=(16, 256), l2_reuse=True)
    assert cached.bytes["hbm"] == 2 * 4 * 1024 * 64 and cached.bytes["l2"] == w.bytes["l2"]
    one_step = gm.attention(1, 1, 256, 64, "fp16", "flash1", block=(16, 256))
    assert one_step.bytes["l2"] == 2 * 4 * 256 * 64  # nothing goes out between steps when there is one
    assert w.flops == gm.attention(1, 1, 1024, 64, "fp16", "flash").flops


def test_attention_memory():
    assert gm.attention_memory(1, 1, 4096, 64, "fp16", "standard") == 2 * (4 * 4096 * 64 + 2 * 4096**2)
    assert gm.attention_memory(1, 1, 4096, 64, "fp16", "flash") == 2 * 4 * 4096 * 64


def test_fmt_bound():
    assert gm.fmt_bound("smem") == "shared memory" and gm.fmt_bound("hbm") == "HBM"
    with pytest.raises(ValueError, match="bound must be one of"):
        gm.fmt_bound("l1")


def test_the_softmax_exponentials_run_on_the_special_function_units():
    """16 results per clock per SM: on an H100 SXM the N^2 exponentials of attention take
    about half the matmuls' time at d = 128 and about all of it at d = 64 (Shah et al. 2024):
    per score, 1/16 of an SM-clock against 4d flops at 4096 per SM-clock, a share of 64/d,
    both at the 1.83 GHz the tensor peak is rated at."""
    h100 = gm.gpu("H100-SXM")
    assert h100.special_rate == 132 * 16 * h100.clock.value
    for d in (128, 64):
        p = gm.predict(gm.attention(1, 16, 4096, d, "fp16", "flash", l2_reuse=True), h100)
        assert p.sfu_time == pytest.approx(16 * 4096**2 / (132 * 16 * 1.83e9))
        assert p.sfu_time / p.compute_time == pytest.approx(64 / d, rel=1e-3)
        assert p.times["sfu"] == p.sfu_time and p.bound == "compute"
    w = gm.Workload("exp only", flops=1.0, bytes={lv: 0.0 for lv in gm.LEVELS}, special=1e9)
    assert gm.predict(w, h100).bound == "sfu"
    assert gm.attention_backward(1, 2, 256, 16, kind="standard").special == 0  # P was stored
    assert gm.attention_backward(1, 2, 256, 16, kind="flash").special == 2 * 256**2  # recomputed


def test_flash_block_doubles_while_it_fits():
    assert gm.flash_block(228 * 1024, 64) == 256 and gm.flash_block(16 * 1024, 64) == 32
    assert gm.flash_block(2 * (3 * 64 * 64 + 64 * 64), 64) == 64  # exactly 64 fits


def test_a_prediction_is_frozen():
    import dataclasses

    p = gm.predict(gm.vector_add(1024), A100)
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.time = 0


def test_the_named_kernels_have_the_chapters_sizes():
    kernels = gm.catalogue()
    assert kernels["vector_add"].flops == 2**28 and kernels["vector_add"].bytes["l2"] == 12 * 2**28
    assert kernels["chain_fused"].flops == 3 * 2**26 and kernels["chain_unfused"].bytes["hbm"] == 6 * 4 * 2**26
    assert kernels["gemm_reg128"].flops == 2 * 4096**3 == kernels["gemm_smem16"].flops
    assert kernels["transpose_smem"].bytes["hbm"] == 2 * 4 * 8192**2
    assert kernels["gemm_fp16"].flops == 2 * 8192**3 and kernels["gemm_fp16"].math == "fp16"
    assert kernels["gemm_fp16"].bytes["hbm"] == 2 * 3 * 8192**2  # A, B and C once, 2 bytes each
    for kind in ("standard", "flash"):  # QK^T and PV: 4 N^2 d flops per head
        assert kernels[f"attention_{kind}"].flops == 4 * 8 * 32 * 4096**2 * 128
    assert kernels["attention_flash"].bytes["hbm"] == 4 * 2 * 8 * 32 * 4096 * 128  # Q, K, V, O once


def test_the_fp16_gemm_and_attention_bind_where_chapters_4_to_6_say():
    kernels = gm.catalogue()
    assert gm.predict(kernels["gemm_fp16"], "A100-40GB").bound == "compute"
    assert gm.predict(kernels["gemm_fp16"], "H100-SXM").bound == "l2"  # 128 x 128 tiles starve it (chapter 6)
    assert gm.predict(kernels["attention_standard"], "A100-40GB").bound == "hbm"


def test_attention_shared_memory_bytes():
    """Each staged byte written once and read once: standard attention stages Q, K, V tiles
    and the scores (3Nd + N^2 per head); flash stages Q once and K, V once per query block."""
    n, d, s = 1024, 64, 2
    std = gm.attention(1, 1, n, d, "fp16", "standard")
    assert std.bytes["smem"] == 2 * s * (3 * n * d + n * n)
    flash = gm.attention(1, 1, n, d, "fp16", "flash", block=(128, 64))
    assert flash.bytes["smem"] == 2 * s * (n * d + 2 * n * d * (n // 128))


def test_ties_go_to_the_part_listed_first():
    """Times within TIE_RTOL of each other tie; compute wins a tie with registers."""
    assert gm.model.TIE_RTOL == 1e-9
    w = gm.Workload("tie", flops=1e12, bytes={"registers": 6e12 * (1 + 1e-12), "smem": 0.0, "l2": 0.0, "hbm": 0.0})
    assert gm.predict(w, A100).bound == "compute"
    w = gm.Workload("no tie", flops=1e12, bytes={"registers": 6e12 * (1 + 1e-6), "smem": 0.0, "l2": 0.0, "hbm": 0.0})
    assert gm.predict(w, A100).bound == "registers"


def test_intensity_below_one_byte_and_at_none():
    """F / B for any bytes moved, however few; inf only where none move."""
    w = gm.Workload("tiny", flops=8.0, bytes={"registers": 0.5, "smem": 1.0, "l2": 0.0, "hbm": 16.0})
    p = gm.predict(w, A100)
    assert (p.intensity["registers"], p.intensity["smem"], p.intensity["l2"], p.intensity["hbm"]) == (16.0, 8.0, np.inf, 0.5)


def test_parts_of_a_sweep_that_do_nothing_are_not_busy():
    w = gm.Workload("some nothing", flops=np.array([0.0, 1e12, 0.0, 0.0]),
                    bytes={"registers": 0.0, "smem": 0.0, "l2": 0.0, "hbm": np.array([0.0, 0.0, 1e9, 0.0])})
    p = gm.predict(w, A100)
    assert p.busy["compute"].tolist() == [0.0, 1.0, 0.0, 0.0]
    assert p.busy["hbm"].tolist() == [0.0, 0.0, 1.0, 0.0]
    assert p.time[0] == p.time[3] == 0.0


@pytest.mark.parametrize("function, threads", [
    ("vector_add", 256), ("gemm_naive", 16 * 16), ("gemm_spill", 8 * 8), ("transpose_padded", 32 * 8),
    ("attn_softmax", 256), ("flash_attn_d64", 64),
])
def test_threads_per_block_of_each_cuda_function(function, threads):
    assert gm.kernel_info.threads_per_block(function) == threads


def test_workloads_say_what_they_are():
    """The name and note a reader sees in the tables: the variant, the dtype, what is counted."""
    assert (gm.vector_add(64).name, gm.transpose(64, padded=True).name) == ("vector add", "padded shared-memory transpose")
    assert (gm.gemm(64, 64, 64).name, gm.gemm(64, 64, 64, block=(16, 16), dtype="bf16").name) == \
        ("naive GEMM (fp32)", "tiled GEMM (bf16)")
    assert gm.attention(1, 1, 256, 64, kind="flash").name == "flash attention (fp16)"
    unfused, fused = gm.elementwise_chain(64), gm.elementwise_chain(64, fused=True)
    assert (unfused.name, unfused.note) == ("elementwise chain of 3 (unfused, fp32)", "2 x ops trips through HBM per element")
    assert (fused.name, fused.note) == ("elementwise chain of 3 (fused, fp32)", "2 trips through HBM per element")
    naive = gm.gemm_requests(64, 64, 64, "fp16")
    assert naive.name == "naive GEMM, every request (fp16)" and "an estimate, not a bound" in naive.note
    ideal = gm.gemm_ideal(64, 64, 64)
    assert (ideal.name, ideal.math) == ("ideal GEMM (fp32)", "fp32") and ideal.note
    std = gm.workloads.attention_backward(1, 1, 64, 32)
    flash = gm.workloads.attention_backward(1, 1, 256, 32, kind="flash")
    assert (std.name, std.note) == ("standard attention backward (fp16)", "reads the stored probabilities")
    assert (flash.name, flash.note) == ("flash attention backward (fp16)", "recomputes the scores on chip")


def test_what_no_kernel_moves_is_zero():
    """Elementwise chains and the naive GEMM stage nothing in shared memory; the ideal GEMM
    charges neither shared memory nor registers."""
    assert gm.elementwise_chain(64).bytes["smem"] == 0 and gm.gemm_requests(64, 64, 64).bytes["smem"] == 0
    ideal = gm.gemm_ideal(64, 64, 64)
    assert ideal.bytes["registers"] == ideal.bytes["smem"] == 0


def test_a_fused_chain_makes_two_trips_whatever_the_ops():
    """Read once, write once: 2 x 4 B x n, for one op or five; a sweep over ops keeps its shape."""
    w = gm.elementwise_chain(1000, ops=np.array([1, 5]), fused=True)
    assert w.bytes["hbm"].tolist() == [8000.0, 8000.0]
    assert gm.elementwise_chain(1000, ops=np.array([1, 5])).bytes["hbm"].tolist() == [8000.0, 40000.0]


def test_flash_backward_with_l2_reuse_reads_and_writes_each_matrix_once():
    """Q, K, V, O, dO in, dQ, dK, dV out: 8 matrices of N x d, 2 B each, per head."""
    w = gm.workloads.attention_backward(2, 4, 4096, 64, kind="flash", l2_reuse=True)
    assert w.bytes["hbm"] == 2 * 8 * 8 * 4096 * 64


def test_vector_add_moves_twelve_bytes_per_element():
    """Two 4-byte loads and a 4-byte store per element, and one add reading three 4-byte operands."""
    w = gm.vector_add(1000)
    assert {lv: float(b) for lv, b in w.bytes.items()} == {"registers": 12000, "smem": 0, "l2": 12000, "hbm": 12000}


def test_the_naive_gemm_without_tiles():
    """block=None: one result per thread, 6 register bytes per flop; without L2 reuse HBM
    carries what L2 does. Its threads hold one result each, so only a (1, 1) thread tile."""
    w = gm.gemm(64, 64, 64)
    assert w.bytes["registers"] == 6 * 2 * 64**3
    no_reuse = gm.gemm(64, 64, 64, l2_reuse=False)
    assert no_reuse.bytes["hbm"] == no_reuse.bytes["l2"] > w.bytes["hbm"] == 4 * 3 * 64**2
    for thread in ((1, 2), (2, 1)):
        with pytest.raises(ValueError, match=r"^thread must be \(1, 1\) for the naive kernel"):
            gm.gemm(64, 64, 64, thread=thread)


def test_attention_bytes_scale_with_batch_and_heads():
    """Per head as in test_attention_shared_memory_bytes, times batch x heads = 8."""
    n, d, s, bh = 1024, 64, 2, 2 * 4
    std = gm.attention(2, 4, n, d, "fp16", "standard")
    assert std.bytes["smem"] == bh * 2 * s * (3 * n * d + n * n)
    flash = gm.attention(2, 4, n, d, "fp16", "flash", block=(128, 64))
    assert flash.bytes["smem"] == bh * 2 * s * (n * d + 2 * n * d * (n // 128))
    # Peak memory: Q, K, V, O, plus S and P for the standard kernel.
    assert gm.workloads.attention_memory(2, 4, n, d) == s * bh * (4 * n * d + 2 * n * n)
    assert gm.workloads.attention_memory(2, 4, n, d, kind="flash") == s * bh * 4 * n * d


def test_fp32_attention_runs_on_the_fp32_lanes_with_register_traffic():
    w = gm.attention(1, 1, 256, 64, "fp32")
    assert w.math == "fp32" and w.bytes["registers"] == 6 * w.flops
    assert gm.attention(1, 1, 256, 64, "fp16").bytes["registers"] == 0


def test_a_workload_checks_its_levels_and_math():
    with pytest.raises(ValueError, match=r"^bytes must be a dict with exactly the levels \('registers', 'smem', 'l2', 'hbm'\), got"):
        gm.Workload("x", flops=1.0, bytes={"hbm": 1.0})
    with pytest.raises(ValueError, match="^math must be one of"):
        gm.Workload("x", flops=1.0, bytes={lv: 1.0 for lv in gm.LEVELS}, math="fp6")


def test_the_catalogue_at_the_chapters_sizes():
    k = gm.catalogue()
    assert k["chain_fused"].bytes["hbm"] == 2 * 4 * 2**26 and "(fused" in k["chain_fused"].name
    assert "(unfused" in k["chain_unfused"].name
    assert k["gemm_naive"].flops == 2 * 4096**3 and k["gemm_naive"].bytes["registers"] == 12 * 4096**3
    # 2^24 reads at stride 8 floats: every thread a sector of its own, 2^19 warps x 32 sectors x 32 B, + 4 B written each.
    assert k["strided_read"].bytes["hbm"] == 2**19 * 32 * 32 + 4 * 2**24 and k["strided_read"].name == "strided read (stride 8)"
    # 8192^2 floats through 32 x 32 tiles: written once, read back in 32 wavefronts (plain) or 1 (padded).
    assert k["transpose_smem"].bytes["smem"] == 4 * 8192**2 * 33 and k["transpose_padded"].bytes["smem"] == 4 * 8192**2 * 2
    assert k["transpose_smem"].name == "plain shared-memory transpose" == gm.transpose(64).name


def test_a_sweep_of_strides_is_named_as_several():
    w = gm.workloads.strided_read(1024, np.array([1, 2, 4]))
    assert w.name == "strided read (stride several)" and w.flops.tolist() == [0, 0, 0]
    assert gm.transpose(64).flops == 0


@pytest.mark.parametrize("sram, block", [(385, None), (386, 1), (775, 1), (776, 2)])
def test_the_flash_block_at_the_edge_of_fitting(sram, block):
    """fp16, d = 64: Br = 1 needs 2 x (3 x 64 + 1) = 386 bytes; Br = 2 needs 2 x (3 x 128 + 4) = 776."""
    if block is None:
        with pytest.raises(ValueError, match="^sram_bytes must hold at least a 1-row block"):
            gm.workloads.flash_block(sram, 64)
    else:
        assert gm.workloads.flash_block(sram, 64) == block


def test_the_notes_say_what_each_variant_counts():
    """The note beside each workload in the tables: what is counted, and how variants differ."""
    assert gm.vector_add(64).note == "each element read twice and written once, nothing reused"
    assert gm.transpose(64).note == "column reads are 32-way bank conflicts"
    assert gm.transpose(64, padded=True).note == "column reads are conflict-free"
    assert gm.attention(1, 1, 256, 64).note == "the N x N scores go through HBM"
    assert gm.attention(1, 1, 256, 64, kind="flash").note == "the N x N scores never reach HBM"
    assert gm.workloads.strided_read(64, 2).note == "each warp's read costs every 32-byte sector it touches"
    assert gm.gemm(64, 64, 64).note.startswith("at best: L1 keeps what a block's threads share")
    assert gm.gemm(64, 64, 64, block=(16, 16)).note == ""
    assert gm.gemm(64, 64, 64, block=(16, 16), dtype="fp16").note == "tensor-core register traffic is not modelled"
    assert gm.gemm_requests(64, 64, 64).note == "every operand a thread requests, through L2: an estimate, not a bound"
    assert gm.gemm_ideal(64, 64, 64).note == "the compulsory bytes and the flops; nothing else"


def test_flash_backward_stages_every_global_byte_through_shared_memory_twice():
    w = gm.workloads.attention_backward(1, 2, 1024, 64, kind="flash")
    assert w.bytes["smem"] == 2 * w.bytes["l2"] == 2 * 2 * 2 * (6 * 1024 * 64 + 4 * 1024 * 64 * (1024 // 128))


def test_no_overlap_time_is_the_sum_of_every_parts_time():
    """The upper bound beside `time`: each part after the other (a mutant took the maximum)."""
    p = gm.predict(gm.attention(1, 8, 2048, 64, "fp16", "standard"), "A100-40GB")
    parts = [p.compute_time, p.sfu_time, *p.level_times.values()]
    assert sum(t > 0 for t in parts) >= 4
    assert p.no_overlap_time == pytest.approx(math.fsum(parts), rel=1e-12) and p.no_overlap_time > p.time
