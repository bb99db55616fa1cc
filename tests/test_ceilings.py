"""Every count and size has a ceiling that names the parameter and the largest value accepted;
constructors keep the values they checked; result types check what they hold; a swept
workload is refused by `gm.expect` by name; answer rules are finite, with a tolerance that
cannot make a factor-of-two slip right (issue 51, item 3)."""

import dataclasses
import math

import numpy as np
import pytest

import gpumodel as gm
from gpumodel import _check
from gpumodel import decode as dc
from gpumodel import expected as E
from gpumodel.course import checks

MODEL = "Llama-3-8B"


def test_a_count_has_a_ceiling_that_names_it():
    assert _check.count("n", 2**53) == 2**53
    with pytest.raises(ValueError, match=r"n must be at most 2\*\*53, got 9007199254740993"):
        _check.count("n", 2**53 + 1)
    assert _check.one("n", 7, most=7, zero=True) == 7
    with pytest.raises(ValueError, match="n must be at most 7, got 8"):
        _check.one("n", 8, most=7, zero=True)


@pytest.mark.parametrize("context", [2**60, 1e308, dc.MOST_CONTEXT + 1])
def test_a_decode_step_refuses_a_context_past_the_ceiling_naming_it(context):
    with pytest.raises(ValueError, match=f"context must be at most {dc.MOST_CONTEXT:,}"):
        dc.step(MODEL, 1, context)


def test_the_ceilings_themselves_are_accepted():
    assert float(dc.step(MODEL, dc.MOST_BATCH, dc.MOST_CONTEXT).bytes["hbm"]) > 0
    with pytest.raises(ValueError, match=f"batch must be at most {dc.MOST_BATCH:,}"):
        dc.step(MODEL, dc.MOST_BATCH + 1, 1)
    with pytest.raises(ValueError, match=f"context must be at most {dc.MOST_CONTEXT:,}"):
        dc.max_batch(MODEL, "H100-SXM", dc.MOST_CONTEXT + 1)


def test_launch_refuses_shared_memory_past_any_count():
    with pytest.raises(ValueError, match=r"smem must be at most 2\*\*53"):
        E.Launch(256, 1, smem=1e308)


def model(**changed) -> dc.Model:
    shape = dict(name="m", layers=2, heads=8, kv_heads=8, head_dim=64, params=1e9) | changed
    return dc.Model(**shape)


@pytest.mark.parametrize("name, value, most", [("latent", 1e308, dc.MOST_WIDTH), ("layers", 2**21, dc.MOST_WIDTH),
                                              ("vocab", 2**25, dc.MOST_VOCAB)])
def test_a_model_refuses_a_count_past_its_ceiling_naming_it(name, value, most):
    with pytest.raises(ValueError, match=f"{name} must be at most {most:,}"):
        model(**{name: value})


def test_a_model_refuses_weights_past_the_ceiling():
    with pytest.raises(ValueError, match=r"params must be a finite number >= 1 and <= 1e\+15, got 1e\+16"):
        model(params=1e16)


def test_a_model_keeps_the_values_it_checked_not_those_given():
    m = model(layers=2.0, heads=np.int64(8), params=np.float32(1e9), tied=np.bool_(False))
    assert (type(m.layers), type(m.heads), type(m.params), type(m.tied)) == (int, int, float, bool)
    assert (m.layers, m.heads, m.tied) == (2, 8, False) and math.isclose(m.params, 1e9, rel_tol=1e-7)


def test_rope_without_a_latent_is_refused():
    with pytest.raises(ValueError, match="rope .* needs latent"):
        model(rope=64)
    assert model(latent=512, rope=64).attention == "mla"


def test_heads_must_be_a_multiple_of_kv_heads():
    with pytest.raises(ValueError, match=r"heads must be a multiple of kv_heads \(3\), got 8"):
        model(kv_heads=3)
    assert model(kv_heads=4).group == 2


@pytest.fixture(scope="module")
def expectation():
    return gm.expect(gm.vector_add(2**24), "H100-SXM")


@pytest.mark.parametrize("field, value, words", [
    ("time", math.nan, "time must be a finite number"), ("time", -1e-6, "time must be a finite number >= 0"),
    ("bound", -1.0, "bound must be a finite number >= 0"), ("share", 0.0, "share must be a finite number > 0 and <= 1"),
    ("share", 1.5, "share must be a finite number"), ("limiter", "nope", "limiter must be one of"),
    ("bound_part", "dram", "bound_part must be one of"), ("parts", {"hbm": math.inf}, "parts"),
])
def test_an_expectation_refuses_what_it_cannot_hold(expectation, field, value, words):
    with pytest.raises((ValueError, TypeError), match=words):
        dataclasses.replace(expectation, **{field: value})


def test_an_expectation_holds_every_limiter_the_model_names(expectation):
    for limiter in E.HOLDERS:
        assert dataclasses.replace(expectation, limiter=limiter).limiter == limiter


def test_expect_refuses_a_swept_workload_by_name():
    with pytest.raises(ValueError, match="work must be one configuration, not a sweep of 3"):
        gm.expect(gm.vector_add(np.array([2**20, 2**22, 2**24])), "H100-SXM")


def test_answer_rules_are_checked_before_a_box_is_made():
    with pytest.raises(TypeError, match="rules must be made by number_rules or choice_rules, got None"):
        checks.answer_box(None, "x")
    rules = checks.number_rules(4096, "B")
    for bad in (math.nan, math.inf):
        with pytest.raises(ValueError, match="rules must hold finite numbers"):
            checks.answer_box({**rules, "answer": bad}, "x")
    with pytest.raises(ValueError, match=f"rtol must be from 0 to {checks.MOST_RTOL:g}"):
        checks.verdict({**rules, "rtol": 5}, "1")
    assert "4096" in checks.answer_box(rules, "x")


def test_a_tolerance_cannot_make_a_factor_of_two_right():
    assert checks.MOST_RTOL < 0.5  # a doubled answer is 50 % off the larger of the two
    with pytest.raises(ValueError, match=f"rtol must be a finite number >= 0 and <= {checks.MOST_RTOL:g}, got 5"):
        checks.number_rules(1.0, "B", rtol=5)
    widest = checks.number_rules(1.0, "B", rtol=checks.MOST_RTOL)
    assert not checks.verdict(widest, "2").correct and checks.verdict(widest, "1.25").correct


def test_a_range_must_run_low_to_high():
    with pytest.raises(ValueError, match=r"ranges must hold \(low, high, hint\) with low <= high, got \(5, 1"):
        checks.number_rules(1.0, "B", ranges=[(5, 1, "between")])
