"""The slowest-call sweep of `make bench` (`tests/benchmark.py`), run with sizes up to 2^12 so
that it cannot break unseen: every call it makes returns or is refused (a ValueError or
TypeError); anything else, a StopIteration from a widget exercise's menu say, fails here."""

import benchmark
from test_bad_inputs import SIGNATURES

import gpumodel as gm

LARGEST = 12


def test_the_benchmark_sweep_runs_at_small_sizes():
    slowest = benchmark.slowest_calls(LARGEST)
    assert not [key for key, (seconds, _, _) in slowest.items() if seconds == float("inf")]
    exercises = {f"course.{make.__module__.split('.')[-1]}.{make.__name__}" for make in gm.course.widget_exercises()}
    # every function has an accepted call (its valid one), every exercise is built and rendered
    assert set(SIGNATURES) | exercises | {f"{key}.render" for key in exercises} <= set(slowest)


def test_the_small_sweep_pushes_sizes_only_up_to_its_largest():
    exercises = {key for key, _, _ in benchmark._exercise_probes()}  # their menus' values, not pushed sizes
    descriptions = [what for key, what, _ in benchmark.probes(LARGEST) if key not in exercises]
    assert any(what.endswith(f"={2**10}") for what in descriptions)
    assert not any(what.endswith(f"={2**16}") for what in descriptions)
    edges = {id(call) for calls in benchmark.EDGES.values() for _, call in calls}
    assert not edges & {id(call) for _, _, call in benchmark.probes(LARGEST)}
    assert set(benchmark.EDGES) <= set(SIGNATURES)  # the full sweep's edge calls name functions of the sweep
