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

KEYS = {"name", "gpus", "domain", "bandwidth", "latency", "base"}
SI_UNITS = {"bandwidth": ("B/s",), "latency": ("s",), "base": ("s",)}
"""The SI unit of each fact (presets.UNITS names the units a file may state it in)."""
MOST_DOMAIN = 10**6
"""The most GPUs one link may join (a data-centre network's, far above any switch's)."""


@dataclass(frozen=True)
class Link:
    """One kind of link: its `name`, the presets it joins (`gpus`), the most GPUs it joins as
    one (`domain`), and its facts in SI: `bandwidth` (bytes/s one way per GPU), `latency` (s per
    step of a collective), `base` (s per collective)."""

    name: str
    gpus: tuple
    domain: int
    facts: dict

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
    or more, each fact sourced in its unit); a DataError naming the entry otherwise."""
    out = {}
    for i, entry in enumerate(_read(DATA / "links.toml").get("link", [])):
        where = f"links.toml link {i + 1}"
        if not isinstance(entry, dict):
            raise DataError(f"{where} must be a table with {sorted(KEYS)}")
        _no_gaps(where, KEYS - set(entry), set(entry) - KEYS)
        unknown = [g for g in entry["gpus"] if g not in presets.preset_names()] if isinstance(entry["gpus"], list) else [entry["gpus"]]
        if unknown or not entry["gpus"]:
            raise DataError(f"{where}.gpus must be a list of presets, got {entry['gpus']!r}")
        domain = entry["domain"]
        if isinstance(domain, bool) or not isinstance(domain, int) or not 2 <= domain <= MOST_DOMAIN:
            raise DataError(f"{where}.domain must be a whole number of GPUs from 2 to {MOST_DOMAIN}, got {domain!r}")
        if entry["name"] in out:
            raise DataError(f"{where} repeats the link {entry['name']!r}")
        facts = {key: _fact(f"{where}.{key}", entry[key], SI_UNITS[key]) for key in SI_UNITS}
        out[entry["name"]] = Link(entry["name"], tuple(entry["gpus"]), domain, facts)
    return out


def link(link) -> Link:
    """The link named `link` (a key of `links()`)."""
    return links()[_check.choice("link", link, tuple(links()))]


def links_of(gpu) -> list:
    """The links `gpu` (a preset or GPU) has, fastest first."""
    name = presets.gpu(gpu).name
    return sorted((k for k in links().values() if name in k.gpus), key=lambda k: -k.bandwidth)
