"""The expected time (`gm.expect`): the ladders in the order they measured, and measured over
expected near 1 on the records' judged half."""

import itertools

import numpy as np
import pytest

import gpumodel as gm
from gpumodel import expected as E
from gpumodel import published as P
from gpumodel.kernel_info import GEMM_LADDER, KERNELS

SIZE = 4096


def _course(kernel, gpu):
    info = KERNELS[kernel]
    w = gm.gemm(SIZE, SIZE, SIZE, block=info.block, thread=info.thread)
    return gm.expect(w, gpu, E.gemm_launch(SIZE, SIZE, SIZE, info.block, info.thread))


@pytest.mark.parametrize("gpu", gm.preset_names())
def test_the_course_ladder_is_expected_slower_to_faster_on_every_preset(gpu):
    times = [_course(k, gpu).time for k in GEMM_LADDER]
    assert times[0] > times[1] > times[2], dict(zip(GEMM_LADDER, times))


def test_the_expected_time_is_never_below_the_bound_and_names_what_holds_it():
    for kernel, gpu in itertools.product(GEMM_LADDER, gm.preset_names()):
        e = _course(kernel, gpu)
        assert e.time >= e.bound * (1 - 1e-12)
        assert e.limiter in gm.BOUNDS + E.LIMITERS and e.reason


def _rate(r):
    return P.compare(r).measured, P.record_expect(r).time


def _pairs(records):
    """Pairs (slower, faster) of records whose measured rate differs by at least 15 %."""
    rate = {id(r): r for r in records}
    for a, b in itertools.permutations(rate.values(), 2):
        flops = lambda r: P.attention_flops(r.run) if r.run["kind"] == "attention" else 2.0 * r.run["size"] ** 3
        ta, tb = P.compare(a).measured, P.compare(b).measured
        if flops(b) / tb >= 1.15 * flops(a) / ta:
            yield a, b, flops


def test_boehm_every_step_measured_15_percent_faster_is_expected_faster():
    boehm = [r for r in P.records() if r.source == "boehm2022sgemm"]
    pairs = list(_pairs(boehm))
    assert len(pairs) >= 20
    for slow, fast, _ in pairs:
        assert P.record_expect(fast).time < P.record_expect(slow).time, (slow.what, fast.what)


def test_flashattention_versions_measured_15_percent_faster_are_expected_faster():
    flash = [r for r in P.records() if r.run["kind"] == "attention" and r.run["attention"] == "flash"]
    cap = lambda r: gm.gpu(r.gpu).capability.version
    pairs = [(a, b, f) for a, b, f in _pairs(flash) if a.source != b.source and cap(a) == cap(b)]
    assert {(a.source, b.source) for a, b, _ in pairs} >= {("dao2022flashattention", "dao2023flashattention2"),
                                                         ("dao2023flashattention2", "shah2024flashattention3")}
    for slow, fast, flops in pairs:
        assert flops(fast) / P.record_expect(fast).time > flops(slow) / P.record_expect(slow).time, (slow.what, fast.what)


def test_measured_over_expected_on_the_judged_half_has_a_median_within_the_band():
    judged = P.measured_over_expected("judge")
    assert len(judged) >= 20
    assert 0.8 <= np.median(judged) <= 1.25


def test_the_shares_come_from_the_estimate_half_only():
    halves = {P.half(r) for r in P.records()}
    assert halves == {"estimate", "judge"}
    assert all(P.half(r) == "judge" for r in P.records() if r.holdout)
    assert all(0 < s <= 1 for s in P.shares().values())


def test_comparison_expected_is_the_records_expectation():
    c = next(c for c in P.comparisons() if c.record.source == "boehm2022sgemm")
    assert c.expected.time == P.record_expect(c.record).time and c.expected.bound == pytest.approx(c.model)
    assert next(c for c in P.comparisons() if c.quantity == "latency").expected is None


def test_latency_falls_back_to_a_measured_part_of_the_same_generation():
    assert E.latency("A100-40GB").kind == "measured"
    f = E.latency("RTX-A6000")
    assert f.kind == "estimate" and "A100" in f.note


@pytest.mark.parametrize("bad, error", [("x", TypeError), (3, TypeError)])
def test_bad_inputs_are_refused(bad, error):
    with pytest.raises(error, match="work must be"):
        gm.expect(bad, "A100-40GB")
    with pytest.raises(TypeError, match="launch must be"):
        gm.expect(gm.vector_add(2**20), "A100-40GB", launch="fast")
