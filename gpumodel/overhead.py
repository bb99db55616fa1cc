"""The third regime, overhead: the host's time to launch each kernel. Chapter 7.

A GPU runs a kernel only after the host has launched it, and the host launches one kernel
at a time, each taking `L` seconds (the CUDA driver's, plus Python's and a framework's when
they sit on top). Launches are asynchronous: the host goes on to the next while the GPU
works. Kernel i (from 1) is launched by time iL and starts when both it is launched and
kernel i-1 has finished, so a sequence of kernels taking t_1 ... t_N on the GPU ends at

    T = max over j of ( jL + t_j + t_(j+1) + ... + t_N ),

the latest of: the host launching j kernels, then the GPU running the rest back to back.
Kernels shorter than L leave the GPU waiting (launch-bound, T = NL + t_N when all are);
longer ones hide the host (T = L + sum t). A CUDA graph launches the whole sequence at
once: T = L + sum t, a bound that leaves out the gaps between a graph's kernels.

The launch costs are data (`gpumodel/data/launch.toml`): per GPU and launch path, each
measured and sourced. NumPy only; seconds.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from . import _check, presets
from .hardware import KINDS
from .model import predict
from .presets import DATA, DataError, _no_gaps, _read
from .workloads import Workload

PATHS = ("driver", "triton", "inductor")
"""What runs on the host per kernel: the CUDA driver alone, Triton's launcher on it, or
torch.compile's (Inductor's) per-kernel path on that."""
ENTRY_KEYS = {"gpu", "path", "value", "unit", "kind", "source", "where", "note"}
QUOTED_KEYS = {"value", "unit", "where"}


@dataclass(frozen=True)
class LaunchCost:
    """One published launch cost: `seconds` per kernel on `gpu` by `path`, with its `kind`,
    `source` (a references.bib key), `where` in it and a `note`; `quoted` (s), where the
    source's prose also states a figure for the path, that figure, and `quoted_where` where."""

    gpu: str
    path: str
    seconds: float
    kind: str
    source: str
    where: str
    note: str
    quoted: float | None = None
    quoted_where: str = ""


MOST_US = 1e4
"""The longest host launch a file may state, in microseconds (10 ms: far above any published)."""


def _microseconds(where: str, table) -> float:
    """A table's `value` in `unit` "us": a number, not a bool or a string, > 0 and at most MOST_US."""
    if table["unit"] != "us":
        raise DataError(f"{where}.unit must be 'us', got {table['unit']!r}")
    return presets._number(where, table["value"], MOST_US, "a number of microseconds")


@functools.cache
def launch_costs() -> tuple:
    """Every launch cost of `data/launch.toml`, checked (a preset, a path of PATHS, a bib key,
    a kind of KINDS, microseconds, a positive value, one entry per GPU and path); a DataError
    naming the entry otherwise."""
    out, seen = [], set()
    entries = _read(DATA / "launch.toml").get("launch", [])
    if not isinstance(entries, list):
        raise DataError("launch.toml: launch must be an array of tables ([[launch]])")
    for i, entry in enumerate(entries):
        where = f"launch.toml entry {i + 1}"
        if not isinstance(entry, dict):
            raise DataError(f"{where} must be a table with {sorted(ENTRY_KEYS)}")
        _no_gaps(where, ENTRY_KEYS - set(entry), set(entry) - ENTRY_KEYS - {"quoted"})
        quoted = entry.get("quoted")
        if quoted is not None:
            if not isinstance(quoted, dict):
                raise DataError(f"{where}.quoted must be a table with {sorted(QUOTED_KEYS)}")
            _no_gaps(f"{where}.quoted", QUOTED_KEYS - set(quoted), set(quoted) - QUOTED_KEYS)
            _microseconds(f"{where}.quoted", quoted)
        if entry["gpu"] not in presets.preset_names() or entry["path"] not in PATHS:
            raise DataError(f"{where}: gpu must be a preset and path one of {PATHS}, got {entry['gpu']!r}, {entry['path']!r}")
        if entry["source"] not in presets.bib_keys():
            raise DataError(f"{where}.source {entry['source']!r} is not a key of references.bib")
        if entry["kind"] not in KINDS:
            raise DataError(f"{where}.kind must be one of {KINDS}, got {entry['kind']!r}")
        if (entry["gpu"], entry["path"]) in seen:
            raise DataError(f"{where} repeats the {entry['path']!r} launch of the {entry['gpu']}")
        seen.add((entry["gpu"], entry["path"]))
        out.append(LaunchCost(entry["gpu"], entry["path"], _microseconds(where, entry) * 1e-6, entry["kind"],
                              entry["source"], entry["where"], entry["note"], quoted and quoted["value"] * 1e-6,
                              quoted["where"] if quoted else ""))
    return tuple(out)


def launch_cost(gpu, path: str = "driver") -> LaunchCost:
    """The published host time per kernel launch on `gpu` by `path` (one of PATHS). A GPU
    with none published is refused, naming those that have one. Chapter 7."""
    name = presets.gpu(gpu).name
    _check.choice("path", path, PATHS)
    for cost in launch_costs():
        if cost.gpu == name and cost.path == path:
            return cost
    known = sorted({c.gpu for c in launch_costs() if c.path == path})
    raise ValueError(f"gpu must be one with a published {path!r} launch cost ({', '.join(known)}), got {name!r}")


@dataclass(frozen=True)
class Sequence:
    """A sequence of kernels as the host launches them: `time` (s) from the first launch to
    the last kernel's end, `device` (the kernels' own times, summed), `host` (the launches,
    summed), and `bound`: "overhead" when the GPU waits on the host for longer than the
    last launch takes (time > L + device), else "kernels"."""

    time: float
    device: float
    host: float
    bound: str

    @property
    def idle(self) -> float:
        """The fraction of `time` the GPU runs no kernel."""
        return 1 - self.device / self.time


def sequence_time(kernel_times, launch: float, graph: bool = False) -> Sequence:
    """The time of kernels taking `kernel_times` (s, in order) on the GPU, each launched by
    the host in `launch` seconds (see the module doc); with `graph`, the whole sequence is
    one launch. Each time is at most `_check.BIGGEST`, so that their sum stays finite. Chapter 7."""
    t = _check.amount("kernel_times", kernel_times, most=_check.BIGGEST).ravel()
    launch = _check.real("launch", launch, least=0, most=_check.BIGGEST)
    _check.flag("graph", graph)
    device = float(t.sum())
    if graph:
        return Sequence(launch + device, device, launch, "kernels")
    rest = np.cumsum(t[::-1])[::-1]  # t_j + ... + t_N for j = 1 .. N
    time = float(np.max(launch * np.arange(1, t.size + 1) + rest))
    bound = "overhead" if time > (launch + device) * (1 + 1e-12) else "kernels"
    return Sequence(time, device, launch * t.size, bound)


def predict_sequence(workloads, gpu, path: str = "driver", graph: bool = False) -> Sequence:
    """`sequence_time` of `workloads` (a list of `Workload`s, each one kernel) on `gpu`, each
    kernel's time the model's (`predict`) and each launch the published cost of `path` on
    that GPU (`launch_cost`). Chapter 7."""
    if not isinstance(workloads, (list, tuple)) or not workloads or not all(isinstance(w, Workload) for w in workloads):
        raise TypeError(f"workloads must be a non-empty list of Workloads (gm.vector_add, gm.gemm, ...), one per kernel, got {workloads!r}")
    g = presets.gpu(gpu)
    distinct = {id(w): w for w in workloads}
    once = {key: float(predict(w, g).time) for key, w in distinct.items()}  # a kernel repeated is predicted once
    times = [once[id(w)] for w in workloads]
    return sequence_time(times, launch_cost(gpu, path).seconds, graph)

