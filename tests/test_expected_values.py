"""The expected time's rules (`gpumodel.expected`) pinned to values derived by hand, and each
threshold tested just below and just above: the GEMM launches' counts, the occupancy limiter,
the tensor-core share, the waves factor, the shares accepted, the queue, Little's law's
latency mix, the tag stage, issue, the ramp and the launch. The facts used are those of
data/expect.toml (4 instructions a clock per SM, 1 of them a load or store, 4 tag lines a
clock) and the presets (A100 40 GB: 108 SMs at 1.41 GHz, HBM 466 clocks, L2 262, shared 29;
H100 SXM: 132 SMs at 1.98 GHz, HBM 700 clocks, L2 291, shared 29), each checked first."""

import math
import re

import pytest

import gpumodel as gm
from gpumodel import expected as E
from gpumodel.workloads import Workload

A100, H100 = gm.gpu("A100-40GB"), gm.gpu("H100-SXM")


def work(l2=4096.0, hbm=1024.0, flops=1e6, math_="fp32"):
    """A workload with the bytes and FLOPs given, nothing at the SM's own levels."""
    return Workload("w", flops, {"registers": 0.0, "smem": 0.0, "l2": l2, "hbm": hbm}, math=math_)


def test_the_facts_and_presets_these_derivations_use():
    f = E.facts()
    assert (f["issue_per_sm"].value, f["lsu_per_sm"].value, f["tags_per_clock"].value) == (4, 1, 4)
    assert (f["dequantise_int8"].value, f["dequantise_int4"].value) == (1, 3)
    assert (A100.sms.value, A100.clock.value, H100.sms.value, H100.clock.value) == (108, 1.41e9, 132, 1.98e9)
    assert [E.latency(H100, lv).value for lv in ("hbm", "l2")] + [E.l1_latency(H100).value] == [700, 291, 29]
    assert E.latency(A100, "hbm").value == 466


# gemm_launch: the naive kernel.

def test_the_naive_gemm_launch_counts_by_hand():
    """m = n = k = 64: 4,096 results, one thread each, 128 warps in 16 blocks of 256. Per warp
    and step of k: a load of A and of B (2 tag clocks coalesced; uncoalesced A's 32 rows are 32
    lines of one set, so 32 + 1 with B's), 2k loads and 1 store to the LSU: 128 x 129 = 16,512.
    Sectors a step: A's word 1 (coalesced: a broadcast) or 32 (one per row), B's row 4."""
    good, bad = E.gemm_launch(64, 64, 64), E.gemm_launch(64, 64, 64, coalesced=False)
    for launch in (good, bad):
        assert (launch.threads, launch.blocks, launch.registers, launch.smem, launch.rounds) == (256, 16, 32, 0, 64)
        assert launch.lsu == 128 * (2 * 64 + 1) == 16512
        assert launch.instructions == 64**3 / 32 + 16512
    assert good.tags == 128 * 64 * 2 and bad.tags == 128 * 64 * 33 == 270336
    assert good.load_bytes == 32 * 128 * 64 * (1 + 4) and bad.load_bytes == 32 * 128 * 64 * (32 + 4)
    assert E.gemm_launch(64, 64, 64, registers=40).registers == 40


def test_the_naive_gemm_launch_rounds_warps_and_blocks_up():
    """m = n = 33: 1,089 results, 34.03 warps -> 35, 4.25 blocks of 256 -> 5."""
    launch = E.gemm_launch(33, 33, 10)
    assert launch.blocks == 5 and launch.lsu == 35 * 21 and launch.tags == 35 * 10 * 2


# gemm_launch: the tiled kernels.

def test_the_tiled_gemm_launch_counts_by_hand_and_rounds_k_tiles_up():
    """m = n = 128, k = 100, 64 x 64 x 8 blocks of 4 x 4 thread tiles: 256 threads (8 warps),
    2 x 2 = 4 blocks, 32 warps; ceil(100 / 8) = 13 tiles (floored: 12). A thread stages
    (64 + 64) x 8 / 256 = 4 elements a tile (4 loads and 4 stores) and reads 4 + 4 operands per
    step of k: lsu = 32 x 13 x (8 + 8 x 8) = 29,952; the global loads' tags 2 x 4 a tile,
    32 x 13 x 8 = 3,328. Shared memory: (64 + 64) x 8 floats = 4,096 B (not 1,024 elements).
    Registers: 16 accumulators, 4 + 4 operands and 24 more = 48. Bytes loaded: 4 blocks x 13
    tiles x 1,024 floats x 4 B."""
    launch = E.gemm_launch(128, 128, 100, (64, 64, 8), (4, 4))
    assert (launch.threads, launch.blocks, launch.registers, launch.smem, launch.rounds) == (256, 4, 48, 4096, 13)
    assert launch.lsu == 29952 and launch.tags == 3328
    assert launch.load_bytes == 4 * 4 * 13 * 128 * 8 == 212992
    assert launch.instructions == 128 * 128 * 100 / 32 + 29952


def test_the_tiled_launch_rounds_the_grid_up_and_caps_the_registers():
    """m = 130: ceil(130 / 64) = 3 rows of blocks x 2 = 6 blocks. A 16 x 16 thread tile asks
    256 + 32 + 24 = 312 registers: capped at 255. Without bK the tile is one deep."""
    assert E.gemm_launch(130, 128, 64, (64, 64, 8), (4, 4)).blocks == 6
    assert E.gemm_launch(256, 256, 64, (128, 128, 8), (16, 16)).registers == 255
    flat = E.gemm_launch(64, 64, 10, (64, 64), (4, 4))
    assert flat.rounds == 10 and flat.smem == 4 * 128


@pytest.mark.parametrize("layout, per_k, vector", [("strided", 4 + 4, 1), ("strided_a128", 4 / 4 + 4, 1),
                                                    ("warp_tiled", (4 + 4) / 4, 4)])
def test_each_layouts_loads_per_step_of_k(layout, per_k, vector):
    """128^2 x 64, 64 x 64 x 8 blocks of 4 x 4: 32 warps, 8 tiles, 4 / vector staged per tile."""
    launch = E.gemm_launch(128, 128, 64, (64, 64, 8), (4, 4), layout=layout)
    staged = 4 / vector
    assert launch.lsu == 32 * 8 * (2 * staged + 8 * per_k) and launch.tags == 32 * 8 * 2 * staged


# The mechanisms: occupancy, tensor cores, tags, issue, waves, ramp, launch.

def test_registers_or_shared_memory_that_set_the_warps_are_named_occupancy_threads_latency():
    """A100, 256 threads: 8 blocks by threads. 100,000 B of shared memory (+ 1 KiB reserved)
    leave room for 1 block: smem limits. 255 registers a thread: 8,160 a warp (rounded to 256s:
    8,192), 2 warps per partition, 8 per SM, 1 block: registers limit. 32 registers: threads."""
    base = dict(threads=256, blocks=1000, rounds=4)
    for extra, hold, limiter in (({"smem": 100000}, "occupancy", "smem"), ({"registers": 255}, "occupancy", "registers"),
                                 ({}, "latency", "threads")):
        _, parts, _, occ, _, _ = E._mechanisms(work(), A100, E.Launch(**base, **extra))
        assert occ == limiter and hold in parts and ({"latency", "occupancy"} - {hold}).isdisjoint(parts)


@pytest.mark.parametrize("math_, scaled", [("fp32", False), ("tf32", True), ("fp16", True), ("bf16", True),
                                           ("fp8", True)])
def test_the_tensor_core_share_divides_the_compute_time_of_every_precision_but_fp32(math_, scaled):
    gpu = gm.gpu("A100-80GB") if math_ == "tf32" else H100  # the H100 preset has no TF32 peak
    w = work(flops=1e12, math_=math_)
    full = E._mechanisms(w, gpu, E.Launch(256, 100))[1]["compute"]
    half = E._mechanisms(w, gpu, E.Launch(256, 100, mma_share=0.5))[1]["compute"]
    assert full == pytest.approx(float(gm.predict(w, gpu).times["compute"]))
    assert half == pytest.approx(2 * full if scaled else full, rel=1e-12)


def test_the_tag_stage_takes_four_lines_a_clock_unless_more_tags_than_loads_then_one():
    """A100: 108 SMs x 1.41 GHz. 432 tags against 432 loads: 432 / (108 x 4 x clock) = 1 / clock;
    433 tags against 432 loads (one set): 433 / (108 x clock)."""
    clock = A100.clock.value
    at = E._mechanisms(work(), A100, E.Launch(256, 100, tags=432, lsu=432))[1]
    over = E._mechanisms(work(), A100, E.Launch(256, 100, tags=433, lsu=432))[1]
    alone = E._mechanisms(work(), A100, E.Launch(256, 100, tags=432))[1]
    assert at["uncoalesced"] == pytest.approx(1 / clock) and alone["uncoalesced"] == pytest.approx(1 / clock)
    assert over["uncoalesced"] == pytest.approx(433 / 108 / clock)
    assert E._mechanisms(work(), A100, E.Launch(256, 100))[1]["uncoalesced"] == 0


def test_issue_is_four_instructions_a_clock_or_one_load_or_store_whichever_is_slower():
    clock = A100.clock.value
    instr = E._mechanisms(work(), A100, E.Launch(256, 100, instructions=108 * 40, lsu=108 * 9))[1]["issue"]
    lsu = E._mechanisms(work(), A100, E.Launch(256, 100, instructions=108 * 40, lsu=108 * 11))[1]["issue"]
    assert instr == pytest.approx(10 / clock) and lsu == pytest.approx(11 / clock)


@pytest.mark.parametrize("blocks, waves", [
    (200, 108 * 2 / 200),  # one wave (< 864 slots): 2 blocks on some SMs, rounds of 108
    (863, 108 * 8 / 863),  # just below a full wave
    (864, 1.0),  # 108 SMs x 8 blocks: exactly one wave
    (865, 2 * 864 / 865),  # one block over: a second wave
])
def test_the_waves_factor_below_and_above_one_full_wave(blocks, waves):
    """A100, 256 threads of 32 registers: 8 blocks an SM, 864 a wave. Fewer blocks than a wave
    are spread over the SMs (108 x ceil(B / 108) / B); more fill whole waves (ceil(B / 864) x
    864 / B)."""
    assert E._mechanisms(work(), A100, E.Launch(256, blocks))[2] == pytest.approx(waves, rel=1e-12)


def test_waves_names_the_limiter_only_past_15_percent_and_never_for_a_wait():
    assert E._limit({"compute": 1.0}, 1.15) == ("compute", pytest.approx(1.15))
    assert E._limit({"compute": 1.0}, 1.151) == ("waves", pytest.approx(1.151))
    assert E._limit({"latency": 1.0, "compute": 0.9}, 1.2) == ("waves", pytest.approx(1.08))
    assert E._limit({"latency": 1.0, "compute": 0.8}, 1.2) == ("latency", 1.0)  # 0.96 < 1: waits take no factor
    assert E._limit({"occupancy": 1.0, "launch": 2.0}, 3.0) == ("launch", 2.0)


def test_the_ramp_is_two_hbm_latencies_and_a_timed_kernel_waits_its_launch():
    """A100: 2 x 466 / 1.41 GHz = 0.661 us. A tiny kernel timed back to back is held by its host
    launch (3 us, B200's published driver launch) and adds no ramp."""
    e = E.expect(work(), A100, E.Launch(256, 100, rounds=1))
    assert e.parts["ramp"] == pytest.approx(2 * 466 / 1.41e9)
    assert e.time == pytest.approx(max(v for k, v in e.parts.items() if k != "ramp") * 1.0 + e.parts["ramp"])
    timed = E.expect(gm.vector_add(32), A100, E.Launch(32, 1, timed=True))
    assert timed.limiter == "launch" and timed.time == E._launch_cost(A100).value == 3e-6
    assert "launch" not in E.expect(gm.vector_add(32), A100, E.Launch(32, 1)).parts


def test_without_a_launch_the_expected_time_is_the_bound_over_the_share():
    w = gm.vector_add(2**24)
    e = E.expect(w, A100)
    p = gm.predict(w, A100)
    assert (e.time, e.limiter, e.share, e.parts["ramp"]) == (float(p.time), "hbm", 1.0, 0.0)
    shared = E.expect(w, A100, shares={"hbm": 0.8, "sm": 0.5})
    assert shared.time == pytest.approx(float(p.time) / 0.8) and shared.share == 0.8
    assert "at 80% of that" in shared.reason and "at " not in e.reason


# Shares, mma_share: the boundaries.

@pytest.mark.parametrize("share, ok", [(0.0, False), (-0.1, False), (1e-9, True), (1.0, True), (1.0 + 1e-9, False)])
def test_a_share_must_be_above_0_and_at_most_1(share, ok):
    w = gm.vector_add(2**20)
    if ok:
        assert E.expect(w, A100, shares={"hbm": share}).share == share
        assert E.Launch(32, 1, mma_share=share).mma_share == share
    else:
        with pytest.raises(ValueError, match=r"shares\['hbm'\]"):
            E.expect(w, A100, shares={"hbm": share})
        with pytest.raises(ValueError, match="mma_share"):
            E.Launch(32, 1, mma_share=share)


def test_shares_must_be_a_dict_of_known_classes():
    with pytest.raises(TypeError, match="shares must be a dict"):
        E.expect(gm.vector_add(32), A100, shares=[("hbm", 0.5)])
    with pytest.raises(ValueError, match="got the key 'dram'"):
        E.expect(gm.vector_add(32), A100, shares={"dram": 0.5})


@pytest.mark.parametrize("limiter, math_, cls", [
    ("compute", "fp32", "sm"), ("compute", "fp16", "tensor"), ("compute", "tf32", "tensor"),
    ("waves", "fp16", "tensor"), ("waves", "fp32", "sm"), ("issue", "fp16", "sm"), ("latency", "bf16", "sm"),
    ("smem", "fp16", "sm"), ("hbm", "fp16", "hbm"), ("l2", "fp32", "l2"), ("launch", "fp16", "overhead"),
    ("overhead", "fp32", "overhead")])
def test_each_limiter_belongs_to_one_share_class(limiter, math_, cls):
    assert E.share_class(limiter, math_) == cls


def test_dequantising_takes_its_instructions_per_weight_at_the_issue_rate():
    """1e9 int4 weights, 3 instructions each, on 108 SMs x 4 warp instructions x 32 lanes a
    clock at 1.41 GHz; int8 1 instruction; fp16 none."""
    rate = 108 * 4 * 32 * 1.41e9
    assert E.lane_issue_rate(A100) == pytest.approx(rate, rel=1e-12)
    assert E.dequantise_time(1e9, "int4", A100) == pytest.approx(3e9 / rate, rel=1e-12)
    assert E.dequantise_time(1e9, "int8", A100) == pytest.approx(1e9 / rate, rel=1e-12)
    assert E.dequantise_time(1e9, "fp16", A100) == 0.0
    e = E.expect(gm.vector_add(32), A100, dequantise=1.0)
    assert e.limiter == "dequantise" and e.parts["dequantise"] == 1.0 and e.time == pytest.approx(1.0)


# The queue and Little's law.

def test_the_queue_by_hand_and_between_whole_populations():
    """Erlang B with a = think / service = 1: B(1) = 1/2, B(2) = (1/2) / (1 + 1 + 1/2) = 1/5, so
    X(1) = 1/2, X(2) = 4/5 a service time; X(1.5) halfway, X(0.5) half of X(1)."""
    assert E.served(1, 1.0, 1.0) == pytest.approx(0.5)
    assert E.served(2, 1.0, 1.0) == pytest.approx(0.8)
    assert E.served(1.5, 1.0, 1.0) == pytest.approx(0.65)
    assert E.served(0.5, 1.0, 1.0) == pytest.approx(0.25)
    assert E.served(2, 2.0, 0.5) == pytest.approx((1 - 8 / 13) / 0.5)  # a = 4: B(2) = 8 / (1 + 4 + 8)
    for bad in ((0, 1.0, 1.0), (1, 0.0, 1.0), (1, 1.0, -1.0)):
        with pytest.raises(ValueError, match="must be a finite number"):
            E.served(*bad)


def test_a_round_waits_its_slowest_sector_from_hbm_l2_or_l1():
    """H100, 8,192 B requested in rounds of 64 B (2 sectors) over a workload of 4,096 B at L2
    and 1,024 at HBM: a sector from beyond L1 with probability 1/2, from HBM 1/8. A round of two
    waits HBM with 1 - (7/8)^2 = 15/64, L2 with 3/4 - 15/64, L1 (all hit) with 1/4. With 32 B in
    flight (one sector) the queue serves one at a time: a round takes the unloaded latency plus a
    service time (32 B at the busier level's rate)."""
    w = work(l2=4096.0, hbm=1024.0, flops=0.0)
    launch = E.Launch(32, 1, rounds=128, load_bytes=8192)
    wps = 32 / (132 * 64)
    lat = E.latency_time(w, H100, launch, wps)
    unloaded = (15 / 64 * 700 + (3 / 4 - 15 / 64) * 291 + 1 / 4 * 29) / 1.98e9
    p = gm.predict(w, H100)
    level = "l2" if p.level_times["l2"] > p.level_times["hbm"] else "hbm"
    service = 32 * float(p.level_times[level]) / 8192
    assert lat["in_flight"] == pytest.approx(32) and lat["unloaded"] == pytest.approx(unloaded, rel=1e-12)
    assert lat["level"] == level and lat["loaded"] == pytest.approx(unloaded + service, rel=1e-9)
    assert lat["time"] == pytest.approx(8192 / 32 * (unloaded + service), rel=1e-9)


def test_without_load_bytes_the_requests_are_the_l2_bytes_and_without_rounds_nothing_waits():
    """vector_add(2^10): 12,288 B at L2 and HBM; 2 warps x 256 rounds: 24 B a round, one sector,
    always from HBM."""
    w = gm.vector_add(2**10)
    lat = E.latency_time(w, H100, E.Launch(32, 2, rounds=256), 1.0)
    assert lat["in_flight"] == pytest.approx(132 * 24) and lat["unloaded"] == pytest.approx(700 / 1.98e9)
    assert E.latency_time(w, H100, E.Launch(32, 2), 1.0) == {"time": 0.0, "in_flight": 0.0, "unloaded": 0.0,
                                                             "loaded": 0.0, "level": ""}
    with pytest.raises(ValueError, match="warps_per_sm must be"):
        E.latency_time(w, H100, E.Launch(32, 2, rounds=1), 0.0)


def test_a_latency_limit_that_queues_past_twice_the_unloaded_latency_is_named_for_its_level():
    """The latency part whose loaded latency is at least twice the unloaded one is the level's
    bandwidth: 16,384 warps of one round of 6 KiB on the H100 (the HBM time, queued)."""
    w = gm.vector_add(2**26)
    e = E.expect(w, H100, E.Launch(256, 2**14, rounds=1))
    assert e.latency["loaded"] >= 2 * e.latency["unloaded"] and e.limiter == "hbm"
    few = E.expect(gm.vector_add(2**10), H100, E.Launch(32, 2, rounds=256))
    assert few.latency["loaded"] < 2 * few.latency["unloaded"] and few.limiter == "latency"


def test_the_launch_cost_is_the_published_driver_launch_or_the_nearest_said_to_be_an_estimate():
    """The B200 has a published driver launch (tritonbench, 3 us, measured); the A100 none, so it
    takes that one as an estimate, naming whose it is."""
    b200 = E._launch_cost(gm.gpu("B200"))
    assert (b200.value, b200.unit, b200.kind, b200.source) == (3e-6, "s", "measured", "tritonbench_pr1017")
    a100 = E._launch_cost(A100)
    assert (a100.value, a100.unit, a100.kind, a100.source, a100.where) == (3e-6, "s", "estimate", "tritonbench_pr1017",
                                                                          b200.where)
    assert a100.note == "B200's driver launch: a host cost, the one published"


def test_the_naive_grid_is_256_thread_blocks_rounded_up():
    """16 x 257 = 4,112 results: 16.06 blocks of 256 -> 17."""
    assert E.gemm_launch(16, 257, 1).blocks == 17


@pytest.mark.parametrize("call, name", [
    (lambda: E.gemm_launch(0, 64, 64), "m"), (lambda: E.gemm_launch(64, 0, 64), "n"),
    (lambda: E.gemm_launch(64, 64, 0), "k"), (lambda: E.gemm_launch(64, 64, 64, coalesced=1), "coalesced"),
    (lambda: E.gemm_launch(64, 64, 64, registers=0), "registers"),
    (lambda: E.gemm_launch(64, 64, 64, (64, 64, 8), (4, 4), layout="diagonal"), "layout"),
    (lambda: E.dequantise_time(-1.0, "int4", A100), "weights"),
    (lambda: E.dequantise_time(1.0, "int3", A100), "weight"),
])
def test_bad_launch_and_dequantise_inputs_are_refused_naming_the_parameter(call, name):
    with pytest.raises(ValueError, match=f"^{re.escape(name)} must"):
        call()


# Issue 51, item 1: the rules a mutation run of gpumodel/expected.py found unpinned.

def _site(space, instructions, sectors, write=False):
    from types import SimpleNamespace
    return SimpleNamespace(space=space, instructions=instructions, sectors=sectors, write=write)


def _trace(**over):
    """A stand-in for a lab Trace: blocks of 64 threads (2 warps), 10 blocks, 2 traced with 12
    rounds among their 4 warps (3 a warp), each site run 5 times over (scale)."""
    from types import SimpleNamespace
    sites = [_site("global", 4, 64), _site("global", 8, 8), _site("global", 2, 8, write=True), _site("shared", 6, 0)]
    return SimpleNamespace(**{"sites": sites, "scale": 5, "block": (64, 1, 1), "blocks": 10, "blocks_traced": 2,
                              "rounds": 12, **over})


def test_trace_launch_counts_a_traces_sites_by_hand():
    """lsu: 5 x (4 + 8 + 2 + 6) = 100 (every site). Tags, the global sites only, each
    max(instructions, sectors / 4): 64 / 4 = 16 over 4 (uncoalesced), 8 (8 / 4 = 2 under 8),
    the store 2: 5 x 26 = 130. Load bytes: the global loads' sectors, 5 x 32 x (64 + 8) =
    11,520. Rounds 12 / (2 blocks x 2 warps) = 3. No flops by default: instructions are the
    lsu; 6,400 flops are 3,200 FMAs, 100 warp instructions."""
    launch = E.trace_launch(_trace())
    assert (launch.threads, launch.blocks, launch.registers, launch.smem, launch.rounds) == (64, 10, 32, 0, 3)
    assert (launch.lsu, launch.tags, launch.load_bytes, launch.instructions) == (100, 130, 11520, 100)
    assert E.trace_launch(_trace(), flops=6400.0, registers=40).instructions == 200
    assert E.trace_launch(_trace(), registers=40).registers == 40


def test_trace_launch_refuses_what_lacks_sites_or_scale_naming_its_type():
    from types import SimpleNamespace
    for bad in (SimpleNamespace(sites=[]), SimpleNamespace(scale=1)):
        with pytest.raises(TypeError, match=r"^trace must be the Trace gm.lab.trace returns, got SimpleNamespace$"):
            E.trace_launch(bad)


def test_gemm_launch_refuses_a_swept_tile_naming_the_element():
    """gm.gemm takes a sweep of tiles; one launch takes one tile, and names the element swept."""
    import numpy as np
    for block, thread, name in (((64, 64, 8), (np.array([4, 4]), 4), "thread[0]"),
                                ((np.array([64, 64]), 64, 8), (4, 4), "block[0]"),
                                ((64, 64, np.array([8, 8])), (4, 4), "block[2]"),
                                (None, (np.array([1, 1]), 1), "thread[0]")):
        with pytest.raises(ValueError, match=rf"^{re.escape(name)} must be one whole number, not an array"):
            E.gemm_launch(128, 128, 64, block, thread)


def test_kernel_notes_are_the_entries_notes_without_their_source_and_text():
    """boehm2022sgemm's kernel 1 is uncoalesced (its own entry); every FlashAttention record
    ('*') runs a block per head."""
    assert E.kernel_notes("boehm2022sgemm", "kernel 1, naive (uncoalesced)") == {"coalesced": False}
    assert E.kernel_notes("dao2022flashattention", "anything") == {"grid": "heads"}
    assert E.kernel_notes("boehm2022sgemm", "kernel 2") == {}
    with pytest.raises(ValueError, match=r"^source must be a key of references.bib \(a record's source\), got 'nobody'$"):
        E.kernel_notes("nobody", "kernel 2")
    with pytest.raises(ValueError, match=r"^source must be a key"):
        E.kernel_notes(3, "kernel 2")
    with pytest.raises(ValueError, match=r"^what must be a record's text of what it measured, got 3$"):
        E.kernel_notes("boehm2022sgemm", 3)


@pytest.mark.parametrize("args, message", [
    ((-1.0, 1.0, 1.0), "population must be a finite number >= 0, got -1.0"),
    ((0, 1.0, 1.0), "population must be a finite number > 0, got 0"),
    ((1, -1.0, 1.0), "think must be a finite number >= 0, got -1.0"),
    ((1, 0.0, 1.0), "think must be a finite number > 0, got 0.0"),
    ((1, 1.0, -1.0), "service must be a finite number >= 0, got -1.0"),
    ((1, 1.0, 0.0), "service must be a finite number > 0, got 0.0"),
])
def test_the_queue_refuses_a_negative_or_zero_input_naming_it(args, message):
    """A negative number fails the finite-number check (>= 0), zero the queue's own (> 0)."""
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        E.served(*args)


def test_the_launch_cost_keeps_the_published_note():
    assert E._launch_cost(gm.gpu("B200")).note == gm.overhead.launch_cost("B200").note == (
        "a GB200 (the B200 GPU beside a Grace CPU), an empty kernel with no arguments")


def test_dequantising_a_fraction_of_a_weight_is_allowed():
    """Weights are counted, not required whole: half a weight of int8, 1 instruction."""
    assert E.dequantise_time(0.5, "int8", A100) == pytest.approx(0.5 / (108 * 4 * 32 * 1.41e9), rel=1e-12)
    assert E.dequantise_time(0.0, "int4", A100) == 0.0


def test_the_l1_hit_latency_is_the_shared_memory_latency_said_to_be_an_estimate():
    """A100 measures its own shared-memory latency (29 clocks); the B200 none, nor does any
    Blackwell preset: the newest earlier generation's, the H100 PCIe's."""
    a100 = E.l1_latency(A100)
    assert (a100.value, a100.kind) == (29, "estimate")
    assert a100.note == f"the shared-memory latency ({A100.latency['smem'].note}): one SRAM and data path with the L1"
    pcie = gm.gpu("H100-PCIe").latency["smem"]
    b200 = E.l1_latency(gm.gpu("B200"))
    assert (b200.value, b200.kind, b200.source) == (pcie.value, "estimate", pcie.source)
    assert b200.note == (f"the shared-memory latency (H100-PCIe's, an earlier generation's ({pcie.note})): "
                         "one SRAM and data path with the L1")


@pytest.mark.parametrize("kwargs, message", [
    ({"threads": 0}, "threads must be positive (>= 1), got 0"),
    ({"blocks": 0}, "blocks must be positive (>= 1), got 0"),
    ({"registers": 0}, "registers must be positive (>= 1), got 0"),
    ({"smem": -1}, "smem must be a whole number >= 0, got -1"),
    ({"rounds": -1}, "rounds must be a finite number >= 0, got -1"),
    ({"tags": -1}, "tags must be a finite number >= 0, got -1"),
    ({"lsu": -1}, "lsu must be a finite number >= 0, got -1"),
    ({"instructions": -1}, "instructions must be a finite number >= 0, got -1"),
    ({"load_bytes": -1}, "load_bytes must be a finite number >= 0, got -1"),
    ({"mma_share": 1.5}, "mma_share must be a finite number <= 1, got 1.5"),
    ({"mma_share": 0}, "mma_share must be a finite number > 0 and <= 1, got 0"),
    ({"timed": 1}, "timed must be True or False, got 1"),
])
def test_a_launch_refuses_each_field_naming_it(kwargs, message):
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        E.Launch(**{"threads": 32, "blocks": 1, **kwargs})


def test_a_launch_keeps_its_fields_checked_as_ints_and_floats_and_zero_is_allowed():
    import numpy as np
    launch = E.Launch(32.0, 2.0, registers=40.0, smem=1024.0, rounds=3, tags=0, lsu=0, instructions=0, load_bytes=0,
                      mma_share=1, timed=np.bool_(True))  # a NumPy bool is kept as Python's
    assert (launch.threads, launch.blocks, launch.registers, launch.smem) == (32, 2, 40, 1024)
    assert E.Launch(32, 1, smem=0).smem == 0
    assert all(type(getattr(launch, f)) is int for f in ("threads", "blocks", "registers", "smem"))
    assert all(type(getattr(launch, f)) is float for f in ("rounds", "tags", "lsu", "instructions", "load_bytes",
                                                           "mma_share"))
    assert launch.timed is True and launch.rounds == 3.0


def _expectation(**over):
    fields = {"time": 1.0, "bound": 1.0, "bound_part": "hbm", "limiter": "latency", "share": 1.0, "parts": {},
              "reason": "r"}
    return E.Expectation(**{**fields, **over})


@pytest.mark.parametrize("over, error, message", [
    ({"time": -1.0}, ValueError, "time must be a finite number >= 0, got -1.0"),
    ({"bound": -1.0}, ValueError, "bound must be a finite number >= 0, got -1.0"),
    ({"share": 0.0}, ValueError, "share must be a finite number > 0 and <= 1, got 0.0"),
    ({"share": 1.5}, ValueError, "share must be a finite number <= 1, got 1.5"),
    ({"bound_part": "hbm+dram"}, ValueError, f"bound_part must be one of {E.BOUND_PARTS}, got 'dram'"),
    ({"bound_part": None}, ValueError, f"bound_part must be one of {E.BOUND_PARTS}, got None"),
    ({"limiter": "dram"}, ValueError, f"limiter must be one of {E.HOLDERS}, got 'dram'"),
    ({"parts": {"issue": -1.0}}, ValueError, "parts['issue'] must be a finite number >= 0, got -1.0"),
    ({"parts": [("issue", 1.0)]}, TypeError, "parts must be a dict of mechanism to seconds, got [('issue', 1.0)]"),
])
def test_an_expectation_refuses_each_field_naming_it(over, error, message):
    with pytest.raises(error, match=f"^{re.escape(message)}$"):
        _expectation(**over)


def test_an_expectation_takes_a_bound_set_by_two_parts_zero_times_and_a_share_of_one():
    e = _expectation(time=0.0, bound=0.0, bound_part="hbm+l2", limiter="overhead", share=1.0,
                     parts={"hbm": 0.0, "issue": 2.0})
    assert (e.time, e.bound, e.bound_part, e.share, e.gpu, e.latency) == (0.0, 0.0, "hbm+l2", 1.0, "", {})
    assert _expectation(share=1e-9).share == 1e-9


def test_share_class_refuses_an_unknown_limiter_or_math_naming_it():
    with pytest.raises(ValueError, match=rf"^limiter must be one of {re.escape(str(E.HOLDERS))}, got 'dram'$"):
        E.share_class("dram", "fp32")
    with pytest.raises(ValueError, match=r"^math_ must be one of .*, got 'fp64'$"):
        E.share_class("hbm", "fp64")


@pytest.mark.parametrize("limiter", E.SM_PARTS)
def test_every_part_inside_the_sm_is_one_class_but_the_tensor_cores_compute_and_waves(limiter):
    """'sm' for FP32 math; the tensor cores' math keeps 'sm' for all but compute and waves;
    launch is the host's overhead."""
    tensor = "tensor" if limiter in ("compute", "waves") else "sm"
    want = ("overhead", "overhead") if limiter == "launch" else ("sm", tensor)
    assert (E.share_class(limiter, "fp32"), E.share_class(limiter, "fp8")) == want


def test_the_l1_tag_stage_is_a_class_of_its_own():
    """An uncoalesced kernel waits on lines of one set, a clock each, in the L1's tag stage:
    not an SM pipeline sharing issue with the others, so its share is estimated apart."""
    assert "uncoalesced" not in E.SM_PARTS and "uncoalesced" in E.LIMITERS
    assert E.share_class("uncoalesced", "fp32") == E.share_class("uncoalesced", "fp16") == "uncoalesced"


def test_a_level_latency_falls_back_to_the_same_version_then_the_same_major_version():
    """The L4 (8.9) measures no HBM latency: the RTX 4090 (also 8.9) does, before the A100
    (8.0) of the same generation; the RTX A6000 (8.6) has no part of its own version measured,
    so the A100's. The B200 (10.0) has no shared-memory latency on any Blackwell preset."""
    l4, a6000 = E.latency("L4", "hbm"), E.latency("RTX-A6000", "hbm")
    r4090 = gm.gpu("RTX-4090").latency["hbm"]
    assert (l4.value, l4.kind, l4.source) == (r4090.value, "estimate", r4090.source)
    assert l4.note == f"RTX-4090's ({r4090.note}), the nearest part measured"
    assert a6000.value == 466 and a6000.note == f"A100-40GB's ({A100.latency['hbm'].note}), the nearest part measured"
    assert E.latency("RTX-A6000").value == 262  # l2 by default
    assert E.latency(A100, "hbm") == A100.latency["hbm"]
    with pytest.raises(ValueError, match=r"^level must be a level measured on a preset of B200's generation, got 'smem'$"):
        E.latency("B200", "smem")
    with pytest.raises(ValueError, match=r"^level must be one of \('smem', 'l2', 'hbm'\), got 'dram'$"):
        E.latency("B200", "dram")


def test_a_launch_argument_must_be_a_launch_naming_its_type_and_whether_none_is_accepted():
    w = gm.vector_add(2**10)
    with pytest.raises(TypeError, match=r"^launch must be a gm\.expected\.Launch \(gemm_launch, trace_launch\) or None, "
                                        r"got str$"):
        E.expect(w, A100, launch="fast")
    with pytest.raises(TypeError, match=r"^launch must be a gm\.expected\.Launch \(gemm_launch, trace_launch\), "
                                        r"got NoneType$"):
        E.latency_time(w, A100, None, 1.0)


def test_latency_time_refuses_a_non_workload_or_negative_warps_naming_them():
    with pytest.raises(TypeError, match=r"^work must be a Workload \(gm\.gemm, gm\.vector_add, \.\.\.\), got str$"):
        E.latency_time("x", A100, E.Launch(32, 1), 1.0)
    with pytest.raises(ValueError, match=r"^warps_per_sm must be a finite number >= 0, got -1\.0$"):
        E.latency_time(gm.vector_add(2**10), A100, E.Launch(32, 1, rounds=1), -1.0)
    with pytest.raises(ValueError, match=r"^warps_per_sm must be a finite number > 0, got 0$"):
        E.latency_time(gm.vector_add(2**10), A100, E.Launch(32, 1, rounds=1), 0)


@pytest.mark.parametrize("kwargs, error, message", [
    ({"flops": -1.0}, ValueError, "flops must be a finite number >= 0, got -1.0"),
    ({"dequantise": -1.0}, ValueError, "dequantise must be a finite number >= 0, got -1.0"),
    ({"shares": [("hbm", 0.5)]}, TypeError, "shares must be a dict of share class to share, or None, got list"),
    ({"shares": {3: 0.5}}, ValueError, f"shares must map share classes {E.CLASSES} to shares, got the key 3"),
    ({"shares": {"dram": 0.5}}, ValueError, f"shares must map share classes {E.CLASSES} to shares, got the key 'dram'"),
    ({"shares": {"hbm": 0.0}}, ValueError, "shares['hbm'] must be a finite number > 0 and <= 1, got 0.0"),
    ({"shares": {"hbm": 1.5}}, ValueError, "shares['hbm'] must be a finite number <= 1, got 1.5"),
])
def test_expect_refuses_each_bad_argument_naming_it(kwargs, error, message):
    with pytest.raises(error, match=f"^{re.escape(message)}$"):
        E.expect(gm.vector_add(2**10), A100, **kwargs)


def test_expect_refuses_what_is_neither_a_workload_nor_a_trace_and_a_sweep():
    import numpy as np
    from types import SimpleNamespace
    for bad, name in (("x", "str"), (SimpleNamespace(sites=[]), "SimpleNamespace"),
                      (SimpleNamespace(workload=None), "SimpleNamespace")):
        with pytest.raises(TypeError, match=f"^work must be a Workload or a lab Trace, got {name}$"):
            E.expect(bad, A100)
    with pytest.raises(ValueError, match=r"^work must be one configuration, not a sweep of 2 \(vector add\): gm\.expect "
                                         r"takes one size at a time \(gm\.predict takes a sweep\)$"):
        E.expect(gm.vector_add(np.array([2**10, 2**11])), A100)
    with pytest.raises(ValueError, match=r"^work must be one configuration, not a sweep of 1,001 "):
        E.expect(gm.vector_add(np.arange(1, 1002)), A100)


def test_a_trace_is_expected_as_its_workload_of_no_flops_by_default_and_its_launch():
    """The stand-in trace's workload charges the flops it is given: with none, no compute. With
    64,000 flops, 32,000 FMAs are 1,000 warp instructions beside its 100 loads and stores: issue
    takes 1,100 / 4 clocks of the A100's 108 SMs."""
    def workload(flops):
        return work(l2=11520.0, hbm=11520.0, flops=flops)
    t = _trace(workload=workload)
    e = E.expect(t, A100)
    assert e.parts["compute"] == 0.0
    assert e == E.expect(workload(0.0), A100, E.trace_launch(t))
    flopped = E.expect(t, A100, flops=64000.0)
    assert flopped == E.expect(workload(64000.0), A100, E.trace_launch(t, 64000.0))
    assert flopped.parts["issue"] == pytest.approx(1100 / (108 * 4 * 1.41e9), rel=1e-12)
    own = E.Launch(64, 10, rounds=1)
    assert E.expect(t, A100, own) == E.expect(workload(0.0), A100, own)


def test_without_a_launch_the_mechanisms_are_the_bounds_parts_alone():
    w = work()
    p, parts, waves, occ, ramp, lat = E._mechanisms(w, A100, None)
    assert parts == {name: float(t) for name, t in gm.predict(w, A100).times.items()}
    assert (waves, occ, ramp, lat) == (1.0, "", 0.0, {})


def test_a_round_under_one_sector_still_waits_one_sectors_mix():
    """H100, 4,096 B requested in 256 rounds of one warp: 16 B a round, under one sector, so
    one sector's odds: from HBM 1,024 / 4,096 = 1/4, L2 3/4, never an L1 hit (all bytes reach L2)."""
    lat = E.latency_time(work(l2=4096.0, hbm=1024.0, flops=0.0), H100, E.Launch(32, 1, rounds=256, load_bytes=4096), 1.0)
    assert lat["unloaded"] == pytest.approx((700 / 4 + 3 / 4 * 291) / 1.98e9, rel=1e-12)


def test_loads_that_reach_no_level_beyond_l1_wait_the_l1_latency_unqueued():
    """A workload of no L2 or HBM bytes and 3,200 B of L1 loads in one round of one warp: every
    sector hits L1 (29 clocks), and no level's bandwidth queues them (service 0): the rate is
    Little's law's, 132 SMs x 3,200 B / 32 B per 29 clocks, so the loaded latency is the
    unloaded one and the requests take 100 sectors / that rate = 29 clocks / 132."""
    lat = E.latency_time(work(l2=0.0, hbm=0.0, flops=0.0), H100, E.Launch(32, 1, rounds=1, load_bytes=3200), 1.0)
    l1 = 29 / 1.98e9
    assert lat["in_flight"] == 132 * 3200 and lat["level"] == "l2"
    assert lat["unloaded"] == pytest.approx(l1, rel=1e-12) and lat["loaded"] == pytest.approx(l1, rel=1e-12)
    assert lat["time"] == pytest.approx(l1 / 132, rel=1e-12)


def test_the_load_store_rate_is_the_facts(monkeypatch):
    """With lsu_per_sm 2 (the datum changed), 108 x 22 loads take 11 clocks of the A100, beside
    108 x 40 instructions at 4 a clock, 10."""
    from dataclasses import replace
    f = E.facts()
    monkeypatch.setattr(E, "facts", lambda: {**f, "lsu_per_sm": replace(f["lsu_per_sm"], value=2)})
    launch = E.Launch(256, 100, instructions=108 * 40, lsu=108 * 22)
    assert E._mechanisms(work(), A100, launch)[1]["issue"] == pytest.approx(11 / A100.clock.value, rel=1e-12)


def _held(monkeypatch, parts, lat, occ="threads", ramp=0.0, launch_kwargs=None, **kwargs):
    """expect on the H100 with `_mechanisms` answering `parts`, no waves, `occ`, `ramp`, `lat`:
    the naming rules alone."""
    w = gm.vector_add(2**20)
    p = gm.predict(w, H100)
    monkeypatch.setattr(E, "_mechanisms", lambda work, gpu, launch: (p, dict(parts), 1.0, occ, ramp, lat))
    return E.expect(w, H100, E.Launch(256, 1056, rounds=1, **(launch_kwargs or {})), **kwargs)


@pytest.mark.parametrize("hold, loaded, named", [
    ("latency", 2e-6, "hbm"),  # loaded exactly twice the unloaded 1 us: queueing, the level's bandwidth
    ("latency", 1.999e-6, "latency"),  # just under twice: latency
    ("occupancy", 2e-6, "hbm"),
    ("occupancy", 1.999e-6, "occupancy"),
    ("launch", 5e-6, "launch"),  # a launch is never renamed
])
def test_a_wait_is_named_for_the_queueing_level_from_twice_the_unloaded_latency(monkeypatch, hold, loaded, named):
    lat = {"time": 3e-6, "in_flight": 1.0, "unloaded": 1e-6, "loaded": loaded, "level": "hbm"}
    e = _held(monkeypatch, {"hbm": 1e-6, hold: 3e-6}, lat)
    assert e.limiter == named and e.time == 3e-6 and e.latency == lat


def test_the_reason_names_the_limiter_and_the_share_applied(monkeypatch):
    """An occupancy limit names what sets the warps (`occ`); a share below 1 is said as a
    percentage; a bound's part is 'the bound's <part>'. The time is the slowest over the share
    plus the ramp, except for a launch."""
    lat = {"time": 3e-6, "in_flight": 1.0, "unloaded": 1e-6, "loaded": 1e-6, "level": "hbm"}
    e = _held(monkeypatch, {"hbm": 1e-6, "occupancy": 3e-6}, lat, occ="registers", ramp=1e-7, shares={"sm": 0.5})
    assert e.reason == ("registers limit the warps an SM keeps, too few bytes in flight for the loaded latency; "
                        "at 50% of that, the share such kernels reach on the records")
    assert (e.limiter, e.share, e.time, e.gpu) == ("occupancy", 0.5, pytest.approx(6e-6 + 1e-7, rel=1e-12), "H100-SXM")
    assert e.parts == {"hbm": 1e-6, "occupancy": 3e-6, "ramp": 1e-7}
    e = _held(monkeypatch, {"hbm": 1e-6, "latency": 3e-6}, lat, ramp=1e-7)
    assert e.reason == E.REASONS["latency"] == ("too few bytes in flight per SM for the loaded latency (Little's law): "
                                                "warps x one round of independent loads")
    assert e.share == 1.0 and e.time == pytest.approx(3e-6 + 1e-7, rel=1e-12)
    e = _held(monkeypatch, {"hbm": 4e-6, "latency": 3e-6}, lat, ramp=1e-7)
    assert e.reason == "the bound's hbm" and e.time == pytest.approx(4e-6 + 1e-7, rel=1e-12)
    e = _held(monkeypatch, {"hbm": 1e-6, "launch": 3e-6}, lat, ramp=1e-7, shares={"overhead": 0.5})
    assert e.limiter == "launch" and e.time == pytest.approx(6e-6, rel=1e-12)


def test_an_l1_latency_with_no_measured_generation_at_or_before_it_is_refused_by_name():
    """A live GPU older than every preset that measures shared memory (a Pascal part, 6.0) has
    no latency to estimate an L1 hit from: a ValueError naming it, not max() of nothing (found
    by a mutation run)."""
    import dataclasses

    t4 = gm.gpu("T4")
    pascal = dataclasses.replace(t4, capability=dataclasses.replace(t4.capability, version=(6, 0)), latency={})
    with pytest.raises(ValueError, match=r"no preset of T4's generation or an earlier one measures the shared-memory"):
        gm.expected.l1_latency(pascal)
