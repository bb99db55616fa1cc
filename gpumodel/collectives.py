"""Collectives counted: the bytes each GPU sends (and receives) to all-reduce, all-gather,
reduce-scatter or all-to-all a message among n GPUs, the steps it takes, and its time over a
link, `T = base + steps x latency + bytes / bandwidth`. Chapter 10.

- Ring (NCCL's ring algorithm): a reduce-scatter then an all-gather around a ring of n GPUs,
  each in n - 1 steps that pass a 1/n share of the message to the next GPU: an all-reduce sends
  2(n - 1)/n of the message from every GPU, in 2(n - 1) steps.
- Tree (NCCL's double binary tree): the message halved over two binary trees in which each GPU
  is a leaf of one and an inner node of the other; a reduce up and a broadcast down send twice
  the message from every GPU, in 2 log2(n) steps (fewer steps than the ring, more bytes).
- In-switch (NVLink SHARP, "NVLS"): the switch adds what the GPUs send and multicasts the sum,
  so each GPU sends its message once and receives the sum once, in 2 steps.
- Hierarchical, across nodes of g GPUs (NCCL's tree and its network rings reduce within a node
  first): a reduce-scatter within each node, an all-reduce of each GPU's 1/g share among the k
  nodes over its own network link, an all-gather within the node. Each GPU sends 2(g - 1)/g of
  the message over the node's link and 2(k - 1)/k of a 1/g share over the network; the two
  stages pipeline, so the slower one sets the time (`hierarchical_time`).

`message` is the bytes of the array being reduced or gathered (the whole, after a gather).
NCCL's tests report an all-reduce's "bus bandwidth" as message / time x 2(n - 1)/n, the rate each
GPU's link would carry for a ring (`bus_bandwidth`). NumPy only; bytes and seconds.
"""

from __future__ import annotations

import numpy as np

from . import _check

COLLECTIVES = ("all-reduce", "all-gather", "reduce-scatter", "all-to-all")
ALGORITHMS = ("ring", "tree", "in-switch")
"""How an all-reduce moves its bytes; the other collectives run as a ring's half (all-gather,
reduce-scatter) or as n - 1 direct exchanges (all-to-all)."""
MOST_GPUS = 2**20
"""The most GPUs a collective is counted over."""


def _gpus(gpus) -> np.ndarray:
    """`gpus` checked: a whole number (or array) from 2 up: one GPU has no collective."""
    n = _check.size("gpus", gpus, MOST_GPUS)
    if np.any(n < 2):
        raise ValueError(f"gpus must be 2 or more (one GPU exchanges nothing), got {gpus!r}")
    return n


def _sizes(collective: str, algorithm: str) -> tuple[str, str]:
    """The collective and algorithm checked: an algorithm other than the ring is an all-reduce's."""
    _check.choice("collective", collective, COLLECTIVES)
    _check.choice("algorithm", algorithm, ALGORITHMS)
    if algorithm != "ring" and collective != "all-reduce":
        raise ValueError(f"algorithm {algorithm!r} is an all-reduce's; {collective} runs as 'ring'")
    return collective, algorithm


def bytes_sent(collective: str, gpus, message, algorithm: str = "ring"):
    """The bytes each GPU sends (and receives) for `collective` of `message` bytes among `gpus`
    GPUs by `algorithm` (see the module doc)."""
    collective, algorithm = _sizes(collective, algorithm)
    n, m = _gpus(gpus), _check.amount("message", message)
    _check.broadcast(("gpus", n), ("message", m))
    share = (n - 1) / n * m
    if collective == "all-reduce":
        return _check.as_output({"ring": 2 * share, "tree": 2 * m + 0 * share, "in-switch": m + 0 * share}[algorithm])
    return _check.as_output(share)


def steps(collective: str, gpus, algorithm: str = "ring"):
    """The exchanges one after another that `collective` among `gpus` GPUs takes by `algorithm`:
    each pays the link's latency once."""
    collective, algorithm = _sizes(collective, algorithm)
    n = _gpus(gpus)
    if collective == "all-reduce":
        return _check.as_output({"ring": 2 * (n - 1), "tree": 2 * np.ceil(np.log2(n)).astype(int),
                                 "in-switch": 2 + 0 * n}[algorithm])
    return _check.as_output(n - 1)


def collective_time(collective: str, gpus, message, bandwidth, latency=0.0, base=0.0, algorithm: str = "ring"):
    """Seconds for `collective` of `message` bytes among `gpus` GPUs over links of `bandwidth`
    (bytes/s each way, per GPU): `base` (s, once) + steps x `latency` (s per step) + bytes sent /
    bandwidth, as NCCL's tuner models it. With no latency and no base, a bound."""
    w = _check.amount("bandwidth", bandwidth)
    if np.any(w <= 0):
        raise ValueError(f"bandwidth must be positive (bytes per second each way), got {bandwidth!r}")
    lat, fixed = _check.amount("latency", latency), _check.amount("base", base)
    sent = bytes_sent(collective, gpus, message, algorithm)
    _check.broadcast(("sent", np.asarray(sent)), ("bandwidth", w), ("latency", lat), ("base", fixed))
    return _check.as_output(fixed + steps(collective, gpus, algorithm) * lat + np.asarray(sent) / w)


HIERARCHICAL = "hierarchical"
"""The all-reduce across nodes that reduces within each node first (`hierarchical_time`)."""


def hierarchical_bytes(gpus, per_node, message) -> tuple:
    """(bytes each GPU sends over its node's link, bytes it sends over the network) for a
    hierarchical all-reduce of `message` bytes among `gpus` GPUs in nodes of `per_node`."""
    n, g = _gpus(gpus), _check.size("per_node", per_node, MOST_GPUS)
    m = _check.amount("message", message)
    _check.broadcast(("gpus", n), ("per_node", g), ("message", m))
    if np.any(n % g) or np.any(n < 2 * g):
        raise ValueError(f"gpus must be a multiple of per_node covering 2 nodes or more, got {gpus!r} GPUs in nodes "
                         f"of {per_node!r}")
    k = n // g
    return _check.as_output(2 * (g - 1) / g * m), _check.as_output(2 * (k - 1) / k * m / g)


def hierarchical_time(gpus, per_node, message, node_bandwidth, network_bandwidth, node_latency=0.0,
                      network_latency=0.0, base=0.0):
    """Seconds for a hierarchical all-reduce of `message` bytes among `gpus` GPUs in nodes of
    `per_node` (see the module doc): `base` + each stage's steps (2(g - 1) within a node, 2(k - 1)
    across k nodes) x its latency (s) + the slower stage's bytes over its bandwidth (bytes/s one
    way per GPU: the node's link, each GPU's network link), the two stages pipelined. With no
    latency and no base, a bound."""
    within, across = hierarchical_bytes(gpus, per_node, message)
    rates = [_check.amount(name, v) for name, v in (("node_bandwidth", node_bandwidth),
                                                     ("network_bandwidth", network_bandwidth))]
    if any(np.any(w <= 0) for w in rates):
        raise ValueError(f"node_bandwidth and network_bandwidth must be positive (bytes per second each way), got "
                         f"{node_bandwidth!r} and {network_bandwidth!r}")
    lats = [_check.amount(name, v) for name, v in (("node_latency", node_latency), ("network_latency", network_latency),
                                                    ("base", base))]
    n, g = _gpus(gpus), _check.size("per_node", per_node, MOST_GPUS)
    waits = lats[2] + 2 * (g - 1) * lats[0] + 2 * (n // g - 1) * lats[1]
    return _check.as_output(waits + np.maximum(np.asarray(within) / rates[0], np.asarray(across) / rates[1]))


def bus_bandwidth(collective: str, gpus, message, seconds):
    """NCCL's tests' "bus bandwidth" of a collective that took `seconds`: its algorithm bandwidth
    (message / seconds) times 2(n - 1)/n for an all-reduce and (n - 1)/n for the others, so that
    a ring's equals the rate each GPU's link carried."""
    _check.choice("collective", collective, COLLECTIVES)
    n, m, t = _gpus(gpus), _check.amount("message", message), _check.amount("seconds", seconds)
    if np.any(t <= 0):
        raise ValueError(f"seconds must be positive, got {seconds!r}")
    factor = (2 if collective == "all-reduce" else 1) * (n - 1) / n
    return _check.as_output(m / t * factor)
