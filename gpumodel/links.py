"""The links between GPUs as data (`data/links.toml`): NVLink through NVSwitch, an NVL72 rack,
PCIe, InfiniBand. Each is a level past one GPU's HBM, with a bandwidth one way per GPU and, where
NCCL's tuning model gives them, a latency per step of a collective and per collective. Chapter 10.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from . import _check, presets
from .hardware import Fact
from .presets import DATA, DataError, _fact, _no_gaps, _read

KEYS = {"name", "gpus", "between", "domain", "bandwidth", "latency", "base", "tree_base", "tree_latency"}
IN_SWITCH = {"in_switch_latency", "in_switch_bandwidth"}
OPTIONAL = IN_SWITCH | {"node_link"}
"""What a link may state beyond KEYS: the in-switch pair, and for a network the `node_link`
that joins the GPUs of each of its nodes."""
"""A link whose switches add (NVLink SHARP) states both; any other neither."""
SI_UNITS = {"bandwidth": ("B/s",), "latency": ("s",), "base": ("s",), "tree_base": ("s",), "tree_latency": ("s",),
            "in_switch_latency": ("s",), "in_switch_bandwidth": ("B/s",)}
"""The SI unit of each fact (presets.UNITS names the units a file may state it in)."""
BETWEEN = ("gpus", "nodes")
"""What a link joins: the GPUs of one node, or nodes (a network)."""
MOST_DOMAIN = 10**6
"""The most GPUs one link may join (a data-centre network's, far above any switch's)."""


@dataclass(frozen=True)
class Link:
    """One kind of link: its `name`, the presets it joins (`gpus`), the most GPUs it joins as
    one (`domain`), whether it joins a node's GPUs or nodes (`between`), and its facts in SI:
    `bandwidth` (bytes/s one way per GPU), `latency` and `tree_latency` (s per step of a ring's
    and a tree's collective), `base` and `tree_base` (s per collective), and where its switches
    add, `in_switch_latency` (s per collective) and `in_switch_bandwidth` (bytes/s); for a
    network, the link that joins each node's GPUs (`node_link`, a name), over which a
    hierarchical all-reduce reduces within the node before and after the network."""

    name: str
    gpus: tuple
    domain: int
    facts: dict
    between: str = "gpus"
    node_link: str = ""

    @property
    def in_switch(self) -> bool:
        """Whether its switches add (an in-switch all-reduce, NVLS, runs on it)."""
        return "in_switch_latency" in self.facts

    @property
    def bandwidth(self) -> float:
        return self.facts["bandwidth"].value

    @property
    def latency(self) -> float:
        return self.facts["latency"].value

    @property
    def base(self) -> float:
        return self.facts["base"].value


@functools.cache
def links() -> dict:
    """Every link of `data/links.toml` by name, checked (its keys, presets, a domain of 2 GPUs
    or more, what it joins, each fact sourced in its unit, the in-switch pair whole and no faster
    than the link); a DataError naming the entry otherwise."""
    out = {}
    for i, entry in enumerate(_read(DATA / "links.toml").get("link", [])):
        where = f"links.toml link {i + 1}"
        if not isinstance(entry, dict):
            raise DataError(f"{where} must be a table with {sorted(KEYS)}")
        _no_gaps(where, KEYS - set(entry), set(entry) - KEYS - OPTIONAL)
        if 0 < len(IN_SWITCH & set(entry)) < len(IN_SWITCH):
            raise DataError(f"{where} must state both of {sorted(IN_SWITCH)} or neither, got only "
                            f"{sorted(IN_SWITCH & set(entry))}")
        if entry["between"] not in BETWEEN:
            raise DataError(f"{where}.between must be one of {BETWEEN}, got {entry['between']!r}")
        unknown = [g for g in entry["gpus"] if g not in presets.preset_names()] if isinstance(entry["gpus"], list) else [entry["gpus"]]
        if unknown or not entry["gpus"]:
            raise DataError(f"{where}.gpus must be a list of presets, got {entry['gpus']!r}")
        domain = entry["domain"]
        if isinstance(domain, bool) or not isinstance(domain, int) or not 2 <= domain <= MOST_DOMAIN:
            raise DataError(f"{where}.domain must be a whole number of GPUs from 2 to {MOST_DOMAIN}, got {domain!r}")
        if entry["name"] in out:
            raise DataError(f"{where} repeats the link {entry['name']!r}")
        facts = {key: _fact(f"{where}.{key}", entry[key], SI_UNITS[key]) for key in SI_UNITS if key in entry}
        if "in_switch_bandwidth" in facts and facts["in_switch_bandwidth"].value > facts["bandwidth"].value:
            raise DataError(f"{where}.in_switch_bandwidth must be at most the link's bandwidth")
        node = entry.get("node_link", "")
        if node and (entry["between"] != "nodes" or node not in out or out[node].between != "gpus"
                     or not set(entry["gpus"]) <= set(out[node].gpus)):
            raise DataError(f"{where}.node_link must name a link between the GPUs of a node, stated above it, that "
                            f"every GPU of this network has, on a link between nodes; got {node!r}")
        out[entry["name"]] = Link(entry["name"], tuple(entry["gpus"]), domain, facts, entry["between"], node)
    return out


def link(link) -> Link:
    """The link named `link` (a key of `links()`)."""
    return links()[_check.choice("link", link, tuple(links()))]


def links_of(gpu) -> list:
    """The links `gpu` (a preset or GPU) has, fastest first."""
    name = presets.gpu(gpu).name
    return sorted((k for k in links().values() if name in k.gpus), key=lambda k: -k.bandwidth)
