"""Collectives counted (gpumodel.collectives) and a ring all-reduce run among simulated GPUs
(simulate.ring_allreduce): the program's bytes and steps are the formula's."""

import numpy as np
import pytest

from gpumodel import collectives, simulate


@pytest.mark.parametrize("gpus", [2, 3, 4, 8])
def test_a_simulated_ring_all_reduce_sends_what_the_formula_counts_and_sums_every_row(gpus):
    x = np.random.default_rng(gpus).standard_normal((gpus, 24 * gpus)).astype(np.float32)
    run = simulate.ring_allreduce(x)
    message = x[0].nbytes
    for g in range(gpus):
        assert run.parts[f"bytes sent by GPU {g}"] == collectives.bytes_sent("all-reduce", gpus, message)
    assert run.parts["steps"] == collectives.steps("all-reduce", gpus)
    np.testing.assert_allclose(run.result, np.broadcast_to(x.sum(axis=0), x.shape), rtol=1e-5, atol=1e-5)
    assert np.array_equal(run.result, np.broadcast_to(run.result[0], x.shape))  # every GPU holds the same sum


def test_uneven_chunks_send_at_most_one_element_more_than_the_formula():
    x = np.ones((4, 10), np.float32)
    run = simulate.ring_allreduce(x)
    formula = collectives.bytes_sent("all-reduce", 4, x[0].nbytes)
    sent = [run.parts[f"bytes sent by GPU {g}"] for g in range(4)]
    assert run.bytes["link"] == max(sent) and np.mean(sent) == formula
    assert max(sent) - formula <= 2 * 3 * 4  # one float more in each of the 2(n - 1) steps at most
    assert np.all(run.result == 4)


def test_a_rings_bus_bandwidth_is_its_links_and_an_in_switch_reduction_beats_it():
    """NCCL's bus bandwidth equals the link's rate for a ring without latency; the switch that
    adds (NVLS) sends each byte once, so its bus bandwidth is 2(n - 1)/n of the link's."""
    gpus, message, link = 8, 2**30, 450e9
    for algorithm, factor in (("ring", 1.0), ("in-switch", 2 * (gpus - 1) / gpus)):
        t = collectives.collective_time("all-reduce", gpus, message, link, algorithm=algorithm)
        assert collectives.bus_bandwidth("all-reduce", gpus, message, t) == pytest.approx(link * factor)


def test_a_tree_wins_small_messages_and_a_ring_large_ones_when_steps_cost_latency():
    sizes = 2.0 ** np.arange(10, 34)
    ring = collectives.collective_time("all-reduce", 64, sizes, 50e9, latency=5e-6)
    tree = collectives.collective_time("all-reduce", 64, sizes, 50e9, latency=5e-6, algorithm="tree")
    assert tree[0] < ring[0] and ring[-1] < tree[-1]
    assert collectives.steps("all-reduce", 64, "tree") == 12 and collectives.steps("all-reduce", 64) == 126


def test_gathers_and_scatters_are_half_a_ring_all_reduce():
    for kind in ("all-gather", "reduce-scatter", "all-to-all"):
        assert 2 * collectives.bytes_sent(kind, 4, 1000.0) == collectives.bytes_sent("all-reduce", 4, 1000.0)
        assert collectives.steps(kind, 4) == 3


def test_bad_collectives_are_refused_by_name():
    with pytest.raises(ValueError, match="gpus must be 2 or more"):
        collectives.bytes_sent("all-reduce", 1, 100)
    with pytest.raises(ValueError, match="algorithm 'tree' is an all-reduce's"):
        collectives.bytes_sent("all-gather", 4, 100, algorithm="tree")
    with pytest.raises(ValueError, match="collective must be one of"):
        collectives.steps("broadcast", 4)
    with pytest.raises(ValueError, match="bandwidth must be positive"):
        collectives.collective_time("all-reduce", 4, 100, 0)
    with pytest.raises(ValueError, match="x must be a 2-D array of one row per GPU"):
        simulate.ring_allreduce(np.ones(8))


@pytest.mark.parametrize("gpus, steps", [(2, 2), (3, 4), (6, 6), (8, 6), (9, 8), (72, 14)])
def test_a_trees_steps_round_log2_up_and_an_in_switch_reduction_takes_two_at_any_count(gpus, steps):
    """2 ceil(log2 n) for the double binary tree, a power of two or not; 2 for NVLS."""
    assert collectives.steps("all-reduce", gpus, "tree") == steps
    assert collectives.steps("all-reduce", gpus, "in-switch") == 2


def test_the_base_is_paid_once_and_each_step_its_latency():
    m, w = 2.0**20, 100e9
    bare = collectives.collective_time("all-reduce", 8, m, w)
    assert bare == pytest.approx(2 * 7 / 8 * m / w)
    assert collectives.collective_time("all-reduce", 8, m, w, base=5e-6) - bare == pytest.approx(5e-6)
    assert collectives.collective_time("all-reduce", 8, m, w, latency=1e-6) - bare == pytest.approx(14e-6)
    assert collectives.collective_time("all-reduce", 8, m, w, latency=1e-6, algorithm="tree") \
        == pytest.approx(6e-6 + 2 * m / w)


@pytest.mark.parametrize("seconds, message", [(0, "must be positive"), (0.0, "must be positive"),
                                              (-1e-6, "must be finite and not negative")])
def test_bus_bandwidth_refuses_a_time_that_is_not_positive(seconds, message):
    with pytest.raises(ValueError, match=rf"^seconds {message}"):
        collectives.bus_bandwidth("all-reduce", 8, 2.0**20, seconds)
