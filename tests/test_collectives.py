"""Collectives counted (gpumodel.collectives) and a ring all-reduce run among simulated GPUs
(simulate.ring_allreduce): the program's bytes and steps are the formula's."""

import re

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


# Each parameter refused by its own name (issue 72: `make mutation` found every name could be
# dropped or misspelt unnoticed by these tests), and arrays that do not broadcast named in pairs.
VALID = {
    collectives.bytes_sent: dict(collective="all-reduce", gpus=8, message=2.0**20, algorithm="ring"),
    collectives.steps: dict(collective="all-reduce", gpus=8, algorithm="tree"),
    collectives.collective_time: dict(collective="all-reduce", gpus=8, message=2.0**20, bandwidth=100e9, latency=1e-6,
                                      base=5e-6, algorithm="ring"),
    collectives.hierarchical_bytes: dict(gpus=16, per_node=8, message=2.0**20),
    collectives.hierarchical_time: dict(gpus=16, per_node=8, message=2.0**20, node_bandwidth=450e9,
                                        network_bandwidth=50e9, node_latency=1e-6, network_latency=5e-6, base=1e-5),
    collectives.bus_bandwidth: dict(collective="all-reduce", gpus=8, message=2.0**20, seconds=1e-3),
}
BAD = {"collective": "broadcast", "algorithm": "butterfly", "gpus": 2.5, "per_node": 0, "message": -1.0,
       "bandwidth": -1.0, "latency": -1.0, "base": float("nan"), "node_bandwidth": -1.0, "network_bandwidth": -1.0,
       "node_latency": -1.0, "network_latency": -1.0, "seconds": -1.0}
NAMED = [(f, p) for f, kwargs in VALID.items() for p in kwargs]


@pytest.mark.parametrize("f, param", NAMED, ids=[f"{f.__name__}:{p}" for f, p in NAMED])
def test_each_bad_argument_is_refused_by_its_own_name(f, param):
    f(**VALID[f])  # the valid call runs
    with pytest.raises(ValueError) as err:
        f(**{**VALID[f], param: BAD[param]})
    assert re.search(rf"(?<!\w){param} must", str(err.value)), str(err.value)


@pytest.mark.parametrize("f, first, second", [
    (collectives.bytes_sent, "gpus", "message"), (collectives.collective_time, "sent", "bandwidth"),
    (collectives.collective_time, "sent", "latency"), (collectives.collective_time, "sent", "base"),
    (collectives.hierarchical_bytes, "gpus", "per_node"), (collectives.hierarchical_bytes, "gpus", "message")])
def test_arrays_that_do_not_broadcast_are_refused_naming_both(f, first, second):
    """`first` (gpus, or the bytes each GPU sends: gpus' shape) of 2 and `second` of 3 values."""
    kwargs = {**VALID[f], "gpus": np.array([16, 32]), second: np.full(3, VALID[f].get(second, 8))}
    with pytest.raises(ValueError, match=rf"^{first} and {second} must broadcast: shapes \(2,\) and \(3,\)"):
        f(**kwargs)


def test_gpus_are_counted_up_to_a_million():
    assert collectives.steps("all-gather", collectives.MOST_GPUS) == collectives.MOST_GPUS - 1
    with pytest.raises(ValueError, match="^gpus must be at most"):
        collectives.steps("all-gather", collectives.MOST_GPUS + 1)


@pytest.mark.parametrize("node, network", [(0.0, 50e9), (450e9, 0), (450e9, np.array([50e9, 0.0]))])
def test_a_hierarchical_all_reduce_refuses_a_link_of_no_bandwidth(node, network):
    with pytest.raises(ValueError, match="^node_bandwidth and network_bandwidth must be positive"):
        collectives.hierarchical_time(16, 8, 2.0**20, node, network)


def test_a_slow_link_or_a_message_of_nothing_is_counted_not_refused():
    """A bandwidth under 1 B/s is positive; a message of 0 bytes sends 0 by every algorithm (no 0/0)."""
    assert collectives.collective_time("all-gather", 2, 1.0, 0.5) == 1.0
    assert collectives.hierarchical_time(16, 8, 8.0, 0.5, 0.5) == pytest.approx(2 * 7 / 8 * 8.0 / 0.5)
    for algorithm in collectives.ALGORITHMS:
        assert collectives.bytes_sent("all-reduce", 8, 0.0, algorithm) == 0.0


def test_the_other_collectives_bus_bandwidth_is_n_minus_1_over_n_of_the_algorithm_bandwidth():
    for kind in ("all-gather", "reduce-scatter", "all-to-all"):
        assert collectives.bus_bandwidth(kind, 8, 1e9, 1e-2) == pytest.approx(1e11 * 7 / 8)
    assert collectives.bus_bandwidth("all-reduce", 8, 1e9, 1e-2) == pytest.approx(1e11 * 2 * 7 / 8)


@pytest.mark.parametrize("gpus, per_node", [(17, 8), (24, 16), (8, 8), (4, 8)])
def test_a_hierarchical_all_reduce_needs_whole_nodes_and_two_of_them(gpus, per_node):
    with pytest.raises(ValueError, match="gpus must be a multiple of per_node covering 2 nodes or more"):
        collectives.hierarchical_bytes(gpus, per_node, 2.0**20)


def test_a_hierarchical_all_reduce_over_four_nodes_counted_by_hand():
    """32 GPUs in 4 nodes of 8: 2 x 7/8 of the message within a node, 2 x 3/4 of an eighth across;
    with no latency given, the slower stage alone (a bound); each stage's steps pay their latency."""
    m = 2.0**23
    within, across = collectives.hierarchical_bytes(32, 8, m)
    assert within == 2 * 7 / 8 * m and across == 2 * 3 / 4 * m / 8
    assert collectives.hierarchical_time(32, 8, m, 450e9, 50e9) == max(within / 450e9, across / 50e9)
    bare = collectives.hierarchical_time(32, 8, m, 450e9, 50e9)
    assert collectives.hierarchical_time(32, 8, m, 450e9, 50e9, node_latency=1e-6) - bare == pytest.approx(14e-6)
    assert collectives.hierarchical_time(32, 8, m, 450e9, 50e9, network_latency=1e-6) - bare == pytest.approx(6e-6)
    assert collectives.hierarchical_time(32, 8, m, 450e9, 50e9, base=1e-6) - bare == pytest.approx(1e-6)


def test_a_node_of_more_than_a_million_gpus_is_refused_by_its_own_name():
    with pytest.raises(ValueError, match="^per_node must be at most"):
        collectives.hierarchical_bytes(2**20, 2**20 + 1, 2.0**20)
