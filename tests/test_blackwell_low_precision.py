"""Chapter 7's model terms against cases derived by hand: the overhead regime
(gpumodel.overhead), Blackwell's formulas (gpumodel.blackwell), setmaxnreg's split
(gpumodel.occupancy.consumer_registers) and the low-precision counts
(gpumodel.low_precision); the launch records against the model; the chapter's checkers
and widget exercises."""

import numpy as np
import pytest

import gpumodel as gm
from gpumodel import blackwell as bw
from gpumodel import low_precision as lp
from gpumodel import overhead as oh
from gpumodel.course import blackwell_low_precision as course

US = 1e-6


# Overhead.


def test_a_launch_bound_sequence_of_small_kernels():
    """N kernels of 1 us, each launched in 3 us: the host launches the last at 3N us and
    the GPU runs it for 1 us, so T = 3N + 1 us; the GPU works N of those us."""
    for n in (1, 2, 10, 1000):
        s = oh.sequence_time([1 * US] * n, 3 * US)
        assert s.time == pytest.approx((3 * n + 1) * US)
        assert s.device == pytest.approx(n * US) and s.host == pytest.approx(3 * n * US)
        assert s.bound == ("overhead" if n > 1 else "kernels")
        assert s.idle == pytest.approx(1 - n / (3 * n + 1))


def test_long_kernels_hide_the_launches_and_a_graph_pays_one():
    """Kernels of 5 us launched every 3 us: the first starts at 3 us, the rest follow back
    to back: T = 3 + 5N us. A graph: one launch, then the kernels: 3 + N t."""
    s = oh.sequence_time([5 * US] * 10, 3 * US)
    assert s.time == pytest.approx(53 * US) and s.bound == "kernels"
    g = oh.sequence_time([1 * US] * 10, 3 * US, graph=True)
    assert g.time == pytest.approx(13 * US) and g.host == pytest.approx(3 * US) and g.bound == "kernels"


def test_a_mixed_sequence_matches_a_step_by_step_simulation():
    rng = np.random.default_rng(3)
    for _ in range(20):
        t = rng.uniform(0, 10, size=rng.integers(1, 30)) * US
        launch = rng.uniform(0.5, 8) * US
        end = 0.0
        for i, ti in enumerate(t, start=1):  # kernel i starts when launched (i L) and its predecessor is done
            end = max(end, i * launch) + ti
        assert oh.sequence_time(t, launch).time == pytest.approx(end)


def test_launch_costs_are_sourced_data_and_refused_where_none_is_published():
    cost = oh.launch_cost("B200")
    assert cost.seconds == pytest.approx(3.0 * US) and cost.source in gm.presets.bib_keys() and cost.kind == "measured"
    assert [oh.launch_cost("B200", p).seconds for p in oh.PATHS] == pytest.approx([3.0 * US, 4.7 * US, 6.8 * US])
    with pytest.raises(ValueError, match="gpu must be one with a published 'driver' launch cost \\(B200\\)"):
        oh.launch_cost("T4")
    with pytest.raises(ValueError, match="path must be one of"):
        oh.launch_cost("B200", "python")
    with pytest.raises(ValueError, match="kernel_times must not be empty"):
        oh.sequence_time([], 3 * US)
    with pytest.raises(ValueError, match="launch must be a finite number >= 0"):
        oh.sequence_time([1 * US], -1)


def test_predict_sequence_uses_the_model_for_each_kernel():
    w = [gm.vector_add(2**10)] * 50 + [gm.vector_add(2**24)]
    s = oh.predict_sequence(w, "B200")
    t = [float(gm.predict(x, "B200").time) for x in w]
    assert s.time == pytest.approx(oh.sequence_time(t, 3 * US).time) and s.device == pytest.approx(sum(t))


def test_the_launch_records_are_bounded_by_the_model():
    """The records (19 arguments, a whole compiled call) cost at least the no-argument
    launches the model takes; the whole call says why it is far slower."""
    launch = [c for c in gm.published.comparisons(chapter=7) if c.record.run["kind"] == "launch"]
    assert len(launch) == 4
    for c in launch:
        assert c.model == pytest.approx(oh.launch_cost(c.record.gpu, c.record.run["path"]).seconds)
        assert 0 < c.fraction <= 1 and c.record.holdout
        assert c.slow == bool(c.record.reason)
    assert {round(c.fraction, 3) for c in launch} == {round(3.0 / 3.3, 3), round(4.7 / 5.6, 3), round(6.8 / 9.1, 3),
                                                      round(6.8 / 44.3, 3)}


# Real clocks and power.


def test_a_gpu_held_at_a_clock():
    """At the H100's rated 1830 MHz the fp16 peak is the datasheet's 989.4 TFLOP/s; at half
    that clock every on-chip rate and tensor peak halves and HBM stays; at the 1980 MHz boost
    it is `bound`. An 8192^3 fp16 GEMM is compute-bound: 2 8192^3 / peak."""
    h100 = gm.gpu("H100-SXM")
    rated, half = h100.at_clock(1830), h100.at_clock(915)
    assert rated.peak("fp16") == pytest.approx(989.4e12) and rated.tensor_clock is None
    assert half.peak("fp16") == pytest.approx(989.4e12 / 2)
    assert half.peak_flops == pytest.approx(h100.peak_flops * 915 / 1980)
    for level in ("smem", "l2"):
        assert half.bandwidth(level) == pytest.approx(h100.bandwidth(level) * 915 / 1980)
    assert half.bandwidth("hbm") == h100.bandwidth("hbm")
    assert h100.at_clock(1980).peak("fp16") == pytest.approx(h100.bound().peak("fp16"))
    p = gm.predict(gm.gemm_ideal(8192, 8192, 8192, "fp16"), h100.at_clock(1500))
    assert p.bound == "compute" and float(p.time) == pytest.approx(2 * 8192**3 / (989.4e12 * 1500 / 1830))
    for bad in (0, -1500, float("nan"), "1500", True):
        with pytest.raises(ValueError, match="mhz"):
            h100.at_clock(bad)


def test_the_zero_and_random_matmuls_are_bounded_and_imply_a_lower_clock():
    """Horace He's 8192^3 matmul on an A100, 295 TFLOP/s on zeros and 257 on randn inputs,
    against the A100's 312 TFLOP/s at 1410 MHz: 295/312 and 257/312, so the clocks held were
    at least 1410 x those fractions (1333 and 1161 MHz), at which the model is the measurement."""
    runs = {c.record.value: c for c in gm.published.comparisons(chapter=7) if c.record.source == "he2024strangely"}
    assert set(runs) == {295, 257}
    a100 = gm.gpu("A100-80GB")
    for value, c in runs.items():
        assert c.fraction == pytest.approx(value / 312) and c.bound == "compute" and c.record.holdout
        held = a100.at_clock(1410 * c.fraction)
        assert held.peak("fp16") == pytest.approx(value * 1e12)


def test_the_b200_gemms_are_bounded_and_clear_the_shared_memory_ridge():
    """Tilus's 8192^3 fp16 GEMMs on the B200 against 2250 TFLOP/s scaled from 1855.8 to
    1980 MHz (2400.6); one CTA's 128 x 256 tile reads 2 128 256 / (2 (128 + 256)) = 85.3 FLOP/B
    and the 2-CTA 256 x 256 reads 2 128 256 / (2 (128 + 128)) = 128 per SM, both above the ridge
    of 64. V5's 128 x 256 tiles pull 2 (8192^3/256 + 8192^3/128) + 2 8192^2 bytes through L2,
    13.03 GB, at 13,058 B per clock x 1.98 GHz = 25.85 TB/s 0.504 ms, above its 0.458 ms of MMAs: V5 is bound by L2, V6 (twice
    the tile) and cuBLAS (the least any GEMM does) by the tensor cores. cuBLAS's 1599.8 at
    96.6 % utilization is a full rate of 1656.1 TFLOP/s: 8192 x 148 SMs x f gives f = 1366 MHz."""
    runs = {c.record.value: c for c in gm.published.comparisons(chapter=7) if c.record.source == "nvidia_tilus_matmul"}
    assert set(runs) == {1506.3, 1610.2, 1599.8}
    flops, bound = 2 * 8192**3, 2250e12 * 1980 / 1855.8
    l2_v5 = 2 * (8192**3 / 256 + 8192**3 / 128) + 2 * 8192**2
    assert l2_v5 == pytest.approx(13.03e9, rel=1e-3)
    expected = {1506.3: ("l2", l2_v5 / (13058 * 1.98e9)), 1610.2: ("compute", flops / bound), 1599.8: ("compute", flops / bound)}
    for value, c in runs.items():
        level, seconds = expected[value]
        assert c.bound == level and c.model == pytest.approx(seconds) and c.fraction == pytest.approx(seconds * value * 1e12 / flops)
    ridge = bw.smem_ridge("B200")
    solo, pair = float(gm.tensor_cores.operand_intensity(128, 256, 16)), float(bw.pair_intensity(256, 256, 64))
    assert solo == pytest.approx(256 / 3) and pair == pytest.approx(128) and min(solo, pair) > ridge
    full = 1599.8 / 0.966
    mhz = full * 1e12 / (8192 * 148) / 1e6
    assert mhz == pytest.approx(1366, abs=0.5)
    assert gm.gpu("B200").at_clock(mhz).peak("fp16") / 1e12 == pytest.approx(full, rel=1e-4)


def test_flashattention4_forward_is_bounded_where_the_exponentials_tie_the_mmas():
    """At d = 128 on the B200 the exponentials take as long as the MMAs (512 = 4 x 128), and
    with FlashAttention-4's own 256 x 128 tile (two 128-row query tiles per CTA) that tie is the bound:
    4 x 16 x 4 x 8192^2 x 128 FLOPs at 2250 x 1980/1855.8 TFLOP/s, and 4 x 16 x 8192^2
    exponentials at 148 SMs x 16 x 1.98 GHz, are the same 0.916 ms; the measured 1.433 ms is
    slower than the bound (the largest of the limits), with its reason."""
    (c,) = [c for c in gm.published.comparisons(chapter=7) if c.record.source == "flashattention_pr2280"]
    flops, exps = 4 * 16 * 4 * 8192**2 * 128, 4 * 16 * 8192**2
    mma, sfu = flops / (2250e12 * 1980 / 1855.8), exps / (148 * 16 * 1.98e9)
    assert mma == pytest.approx(sfu) == pytest.approx(0.916e-3, rel=1e-3)
    p = gm.predict(gm.attention(4, 16, 8192, 128, "bf16", "flash", block=(256, 128), l2_reuse=True),
                   gm.gpu("B200").bound())
    assert float(p.compute_time) == pytest.approx(mma) and float(p.sfu_time) == pytest.approx(sfu)
    assert float(p.level_times["smem"]) < mma  # FlashAttention-4's 256 x 128 tile: shared memory does not bind
    assert c.model == pytest.approx(mma) == pytest.approx(float(p.time)) and c.measured == pytest.approx(1.433e-3)
    assert c.fraction < 1 and c.slow and "exponentials" in c.record.reason


# Blackwell.


def test_the_b200_shared_memory_ridge_is_64_at_its_tensor_clock():
    """8192 FLOP per clock per SM (FlashAttention-4) over 128 bytes per clock per SM = 64;
    the H100: 4096 / 128 = 32. The GPU record's ridge at the tensor clock agrees."""
    assert bw.mma_per_clock("B200") == pytest.approx(8192, rel=1e-4)
    assert bw.smem_ridge("B200") == pytest.approx(64, rel=1e-4)
    assert gm.gpu("B200").ridge("smem", "fp16") == pytest.approx(64, rel=1e-4)
    assert bw.smem_ridge("H100-SXM") == pytest.approx(32, rel=1e-4)


def test_tensor_flops_per_exponential_is_512_on_the_b200():
    """8192 MMA FLOP / 16 SFU results per clock per SM = 512 (256 on the H100); attention
    at d = 128 spends 4 x 128 = 512 FLOPs per exponential, so the ratio is exactly 1."""
    assert bw.tensor_per_exp("B200") == pytest.approx(512, rel=1e-4)
    assert bw.tensor_per_exp("H100-SXM") == pytest.approx(256, rel=1e-4)
    assert bw.exp_over_mma("B200", 128) == pytest.approx(1, rel=1e-4)
    assert bw.exp_over_mma("B200", 64) == pytest.approx(2, rel=1e-4)


def test_emulated_share_balances_lanes_and_sfus():
    """128 lanes, 16 SFUs, 8 FMAs per emulated exponential: s/128 x 8 = (1 - s)/16 at s = 1/2."""
    assert bw.emulated_share("B200", 8) == pytest.approx(0.5)
    assert bw.emulated_share("B200", 1) == pytest.approx(128 / 144)


def test_accumulators_in_registers_and_in_tensor_memory():
    assert bw.accumulator_registers(64, 256) == 128  # 64 x 256 x 4 B / 4 B / 128 threads
    assert bw.accumulator_registers(128, 256) == 256
    assert bw.tmem_columns(128, 256) == 256 and bw.TMEM_LANES * bw.TMEM_COLUMNS * 4 == 256 * 1024
    with pytest.raises(ValueError, match="m must be at most 128"):
        bw.tmem_columns(256, 64)
    with pytest.raises(ValueError, match="n must be at most 512"):
        bw.tmem_columns(128, 1024)


def test_the_pair_mma_halves_each_sms_share_of_b():
    """256 x 256 x 64 on two CTAs: each does 2 x 128 x 256 x 64 flops for 2 x (128 x 64 +
    64 x 128) bytes: 128 FLOP/B, against 85.3 for one CTA's 128 x 256 and 51.2 for m64n256."""
    flops, nbytes = bw.pair_tile(256, 256, 64)
    assert flops == 2 * 128 * 256 * 64 and nbytes == 2 * (128 * 64 + 64 * 128)
    assert bw.pair_intensity(256, 256, 64) == pytest.approx(128)
    m64 = gm.tensor_cores.operand_intensity(64, 256, 16)
    assert m64 == pytest.approx(51.2) and bw.smem_ridge("H100-SXM") < m64 < bw.smem_ridge("B200")
    with pytest.raises(ValueError, match="m and n must be even"):
        bw.pair_tile(255, 256, 64)


def test_cluster_launch_control_against_the_static_scheduler():
    """CUTLASS's example: 400 tiles on 100 SMs, 20 held by another kernel for 4 tile-times.
    Static: the 20 late workers each still own 4 tiles, ending at 4 + 4 = 8. Dynamic: 80 SMs
    do 320 tiles by time 4, then all 100 do the last 80 by 5."""
    assert bw.tile_schedule(400, 100, 20, 4.0) == 8 and bw.tile_schedule(400, 100, 20, 4.0, dynamic=True) == 5
    assert bw.tile_schedule(400, 100, 20, 10.0, dynamic=True) == 5  # the early 80 finish alone
    assert bw.tile_schedule(401, 100) == 5 == bw.tile_schedule(401, 100, dynamic=True)  # equal tiles: the same tail
    assert bw.tile_schedule(5, 100, 100, 3.0, dynamic=True) == 4
    for dynamic in (False, True):  # every SM late (a probe asked): the whole schedule starts after the delay
        assert bw.tile_schedule(300, 148, 148, 0.5, dynamic) == 0.5 + bw.tile_schedule(300, 148, dynamic=dynamic) == 3.5
    with pytest.raises(ValueError, match="late_sms must be an integer from 0 to 100"):
        bw.tile_schedule(400, 100, 101)


# Warp specialisation and low precision.


def test_setmaxnreg_split():
    """512 registers per thread-slot of a warpgroup (65,536 / 128): a producer at 24 leaves
    (512 - 24) / 2 = 244 -> 240 each for two consumers; at 40, 236 -> 232; three consumers
    with a producer at 32: 160."""
    assert gm.occupancy.consumer_registers("H100-SXM", 24) == 240
    assert gm.occupancy.consumer_registers("H100-SXM", 40) == 232
    assert gm.occupancy.consumer_registers("H100-SXM", 32, consumers=3) == 160
    assert gm.occupancy.consumer_registers("H100-SXM", 24, consumers=1) == 256  # capped
    with pytest.raises(ValueError, match="producer_registers must be a multiple of 8"):
        gm.occupancy.consumer_registers("H100-SXM", 30)
    with pytest.raises(ValueError, match="producer_registers leaves"):
        gm.occupancy.consumer_registers("H100-SXM", 256, consumers=8, producers=2)


def test_low_precision_counts():
    assert lp.wgmma_k("fp16") == 16 and lp.wgmma_k("fp8") == 32
    tensor, core = lp.promotion_flops(4096)
    assert tensor == 8192 and core == 64  # 32 promotions, a multiply and an add each
    assert lp.promotion_flops(129)[1] == 4
    assert lp.bytes_per_element("mxfp8") == 1 + 1 / 32 and lp.bytes_per_element("nvfp4") == 0.5 + 1 / 16
    assert lp.block_scaled_bytes(33, "mxfp8") == 33 + 2 and lp.block_scaled_bytes(16, "fp16") == 32
    assert lp.dequant_ops_per_flop(64, 4) == pytest.approx(4 / 128)
    assert lp.swap_ab_use(16) == 0.25 and lp.swap_ab_use(16, swapped=True) == 1
    assert lp.swap_ab_use(12, swapped=True) == 12 / 16 and lp.swap_ab_use(64) == 1


# The chapter's checkers and widget exercises.


@pytest.mark.parametrize("check, right, wrong", [
    (lambda a: course.check_launch_bound(100, 1e-6, a), 301, 103),
    (course.check_pair_intensity, 128, 85.3),
    (course.check_consumer_registers, 232, 236),
    # setmaxnreg shares the block's pool, 168 x 384 = 64,512: (64,512 - 128 x 48) / 256 = 228, so 224
    # (the whole register file would give (512 - 48) / 2 = 232)
    (lambda a: course.check_consumer_registers(a, 48), 224, 232),
    # 4096 x 14336 weights at 0.5 + 1/16 bytes each: 31.5 MiB; 28 without the scales
    (course.check_nvfp4_bytes, 31.5, 28),
    (course.check_held_clock, 1.356, 1.111),
])
def test_checkers(check, right, wrong):
    assert check(right) and not check(wrong)
    assert str(right) not in check(wrong).message.split(":", 1)[1]
    assert not check("a lot") and "should be" in check("a lot").message
    assert not check(None) and "No answer yet" in check(None).message


def test_widget_exercises_have_the_answers_derived_by_hand():
    """A vector add of n floats moves 12n bytes: 2^24 floats take 201 MB / 7.7 TB/s =
    26 us, past torch.compile's 6.8 us launch (the exercise's what-if); 2^22 take 6.5 us, past
    the driver's 3 us but not Inductor's. An m128 tile reads 128n/(128 + n) FLOP per byte: 64
    at n = 128."""
    launch, tile = course.launch_bound(), course.tile_ridge()
    assert launch.rules["answer"] == 2**24 and launch.check(2**24) and not launch.check(2**22)
    assert tile.rules["answer"] == 128 and tile.check("128") and not tile.check(96)
    assert "overhead" in launch.render(elements=2**10, kernels=100, path="driver")
    assert "overhead" in launch.render(elements=2**22, kernels=100, path="inductor")
    assert "overhead" not in launch.render(elements=2**22, kernels=100, path="driver")
    assert "below" in tile.render(gpu="B200", tile="m64 (wgmma or tcgen05)", n=256)
    assert "at or past" in tile.render(gpu="H100-SXM", tile="m64 (wgmma or tcgen05)", n=256)


@pytest.mark.parametrize("gpu", course.RIDGE_GPUS)
@pytest.mark.parametrize("tile", list(course.TILES))
def test_the_tile_explorer_builds_for_every_gpu_and_tile_its_menus_offer(gpu, tile):
    """Every (gpu, tile) of the explorer's menus gives an exercise, or a ValueError naming both
    when no N offered reaches the ridge (make bench once stopped on a StopIteration here).
    By hand, an m x n tile reads mn/(m + n) FLOP per byte, the 2-CTA m256 one 256n/(256 + n):
    against the H100's ridge of 32 and the B200's of 64, the smallest N offered is as below;
    an m64 tile stays under 64 at every N (its limit is 64), so on the B200 it is refused."""
    smallest = {("H100-SXM", "m64 (wgmma or tcgen05)"): 64, ("H100-SXM", "m128 (tcgen05, 1 CTA)"): 64,
                ("H100-SXM", "m256 (tcgen05, 2 CTAs)"): 64, ("B200", "m64 (wgmma or tcgen05)"): None,
                ("B200", "m128 (tcgen05, 1 CTA)"): 128, ("B200", "m256 (tcgen05, 2 CTAs)"): 96}[gpu, tile]
    if smallest is None:
        with pytest.raises(ValueError, match="gpu and tile"):
            course.tile_ridge(gpu, tile)
    else:
        assert course.tile_ridge(gpu, tile).rules["answer"] == smallest


@pytest.mark.parametrize("old, new, message", [
    ("value = 3.0", "value = inf", r"entry 1.value must be a number of microseconds > 0 and <= 10000"),
    ("value = 3.0", "value = true", r"entry 1.value must be a number of microseconds"),
    ("value = 3.0", "value = \"3\"", r"entry 1.value must be a number of microseconds"),
    ("value = 3.0", "value = 0", r"entry 1.value must be a number of microseconds"),
    ("quoted = { value = 1.3,", "quoted = { value = -1.3,", r"entry 1.quoted.value must be a number"),
    ("unit = \"us\"\nkind = \"measured\"", "unit = \"ms\"\nkind = \"measured\"", r"entry 1.unit must be 'us'"),
    ("kind = \"measured\"", "kind = \"remembered\"", r"entry 1.kind must be one of"),
    ("path = \"triton\"", "path = \"driver\"", r"entry 2 repeats the 'driver' launch of the B200"),
    ("path = \"triton\"", "path = \"graph\"", r"entry 2: gpu must be a preset and path one of"),
    ("source = \"tritonbench_pr1017\"", "source = \"nobody\"", r"entry 1.source 'nobody' is not a key"),
    ("note = \"a GB200;", "colour = 1\nnote = \"a GB200;", r"entry 2: unknown keys \['colour'\]"),
])
def test_a_bad_launch_file_is_refused_naming_the_entry(old, new, message, tmp_path, monkeypatch):
    text = (oh.DATA / "launch.toml").read_text()
    assert old in text, old
    (tmp_path / "launch.toml").write_text(text.replace(old, new, 1))
    monkeypatch.setattr(oh, "DATA", tmp_path)
    oh.launch_costs.cache_clear()
    try:
        with pytest.raises(gm.presets.DataError, match=message):
            oh.launch_costs()
    finally:
        monkeypatch.undo()
        oh.launch_costs.cache_clear()
