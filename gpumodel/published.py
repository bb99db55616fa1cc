"""What others measured, held against the model. `data/published/*.toml` holds, one file per
source (a `references.bib` key), records of published measurements (and `[reasons]` that
several records share, by name): the GPU, what was run
and where in the source it is (figure, table, file and commit), the value with its unit,
and the run as a `gpumodel` workload. `comparisons()` predicts each on its GPU's preset at
the highest rates the part reaches (`GPU.bound`), or at its rated clocks (`rated=True`).
A record may carry `also`: other figures the source prints beside the value (a unit
from `ALSO_UNITS` ending each name, as in `hbm_GB`), shown by the chapters, not compared.

The model is a bound: `fraction` (the model's time over the measured time, or the measured
rate over the model's) is at most 1 for every record. Every record is compared, none left
out: one faster than the model is a violation, shown with its analysis in `violation`; one
slower than the model by more than 1.5x says why in `reason`. A record whose value set a
preset's figure names that figure in `sets_preset` (its 100 % is by construction); a record
that set no preset and played no part in changing the model is marked `holdout`. A launch
record (host time per kernel) is held against the published launch cost of its path on its
GPU (`gpumodel.overhead`), the least that path costs. A decode record (tokens per second) is
held against `gpumodel.decode.step` at its batch and context, as a time per step. A collective
record (NCCL's tests' bus bandwidth) is held against its bytes over its link (`gpumodel.collectives`,
no latency), and a tensor-parallel decode record against `gpumodel.parallel.step` without the
link's latencies: both bounds; neither has an expected time (`record_expect` is for one GPU's
kernels). Latency records are a cross-check of the presets' latencies, not a bound.
Chapters 1 to 5, 7, 9 and 10 and the appendix "How good is the model?".
"""

from __future__ import annotations

import functools
import hashlib
import math
import numbers
import pathlib
from dataclasses import dataclass, field, replace

import numpy as np

from . import _check, collectives, decode, links, parallel, presets
from .expected import (CLASSES, ESTIMATES, REASONS, Expectation, Launch, dequantise_time, facts, gemm_launch, kernel_notes,
                       SM_FAMILY, library_tile, read_time, share_class, sm_family)
from .expected import expect as _expect
from .hardware import LEVELS
from .model import predict
from .overhead import PATHS, launch_cost
from .presets import DataError, _no_gaps, _read
from .tensor_cores import WEIGHT_BYTES
from .waves import warm_read_time
from .workloads import LAYOUTS, attention, attention_backward, gemm, gemm_ideal

DATA = presets.DATA / "published"
SCALE = {"GB/s": 1e9, "TB/s": 1e12, "GFLOP/s": 1e9, "TFLOP/s": 1e12, "ms": 1e-3, "us": 1e-6, "cycles": 1.0,
         "tokens/s": 1.0}
"""Each accepted unit in SI (bytes/s, FLOP/s, seconds, cycles, tokens/s)."""
MOST = {"GB/s": 1e14, "TB/s": 1e14, "GFLOP/s": 1e17, "TFLOP/s": 1e17, "ms": 3600.0, "us": 3600.0, "cycles": 1e5,
        "tokens/s": 1e6}
"""The largest value a record may state in each unit, in SI: 100 TB/s, 100 PFLOP/s, an hour,
100,000 cycles, a million tokens a second (each far above any single GPU's)."""
UNITS = {"read": ("GB/s", "TB/s"), "gemm": ("GFLOP/s", "TFLOP/s", "ms"), "attention": ("GFLOP/s", "TFLOP/s", "ms"),
         "latency": ("cycles",), "launch": ("us",), "decode": ("tokens/s",), "collective": ("GB/s",),
         "parallel": ("tokens/s", "ms"), "request": ("ms",)}
"""The units each kind of run may be measured in."""
RUN_KEYS = {"read": {"bytes", "chunk", "threads"}, "gemm": {"size", "shape", "dtype", "block", "thread", "layout", "ideal"},
            "attention": {"batch", "heads", "seq", "head_dim", "dtype", "attention", "passes", "block"},
            "latency": {"level"},
            "launch": {"path"},
            "decode": {"model", "batch", "context", "weight", "kv"},
            "collective": {"collective", "gpus", "message", "link", "algorithm"},
            "parallel": {"model", "batch", "context", "weight", "kv", "math", "output", "gpus", "link"},
            "request": {"model", "batch", "prompt", "output", "weight", "kv", "math", "gpus", "link"}}
RUN_NEEDS = {"read": {"bytes"}, "gemm": set(), "attention": {"batch", "heads", "seq", "head_dim", "attention", "passes"},
             "latency": {"level"}, "launch": {"path"}, "decode": {"model", "batch", "context"},
             "collective": {"collective", "gpus", "message", "link"}, "parallel": {"model", "batch", "context", "gpus", "link"},
             "request": {"model", "batch", "prompt", "output", "gpus", "link"}}
"""The keys each kind of run must have (a GEMM one of `size`, square, and `shape`, [m, n, k]);
the others of RUN_KEYS have defaults (dtype: fp32 for a GEMM, fp16 for attention; no block: the naive GEMM kernel, or the flash kernel's default tile;
no thread: one result per thread; fp16 weights and cache for a decode step; no chunk and threads:
a read whose blocks share no data, so no L1 reuse; a ring for a collective). A parallel run's
`ms` is the time of one step (the inter-token latency), its `tokens/s` the batch's tokens per second."""
RECORD_KEYS = {"gpu", "what", "where", "run", "value", "unit", "chapter", "reason", "violation", "sets_preset", "holdout",
               "also"}
RUN_FIELDS = {
    # a run's field -> what it must hold: "size" a positive whole number, "amount" a positive number,
    # "tile" a list of positive whole numbers, "flag" true or false, a tuple one of those strings
    "bytes": "amount", "chunk": "amount", "threads": "size", "size": "size", "batch": "size", "heads": "size", "seq": "size", "head_dim": "size",
    "shape": "shape", "block": "tile", "thread": "tile", "ideal": "flag", "dtype": tuple(_check.DTYPE_BYTES), "layout": LAYOUTS,
    "attention": ("standard", "flash", "flash1"), "passes": ("forward", "forward+backward"), "level": LEVELS, "path": PATHS,
    "model": tuple(decode.MODELS), "context": "size", "prompt": "size", "output": "size", "math": ("fp16", "bf16", "fp8"), "weight": tuple(WEIGHT_BYTES), "kv": tuple(decode.KV_FORMATS),
    "collective": collectives.COLLECTIVES, "gpus": "size", "message": "amount", "link": "link",
    "algorithm": collectives.ALGORITHMS + (collectives.HIERARCHICAL,),
}
"""What each field of a record's `run` holds."""
CHAPTERS = (0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 98, 99)
"""The chapters' numbers, as `chapters/NN_topic.md` number them (tests/test_published.py holds the
two equal): a record's `chapter`, and the `chapter` that `comparisons` takes."""
ALSO_UNITS = ("GB", "GFLOP")
"""The units an `also` figure may be in; its name ends with one (`hbm_GB`, `work_GFLOP`)."""
SLOW = 1.5
"""A measurement this many times slower than the model's bound needs a reason."""


@dataclass(frozen=True)
class Record:
    """One published measurement (see the module doc); `value` in `unit`."""

    source: str
    gpu: str
    what: str
    where: str
    run: dict
    value: float
    unit: str
    chapter: int
    reason: str = ""
    violation: str = ""
    sets_preset: str = ""
    holdout: bool = False
    also: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Comparison:
    """A record against the model: `model` and `measured` in `quantity` ("time" in seconds (a launch's host time included),
    "bandwidth" in bytes/s, "latency" in cycles), `fraction` of the model's bound reached,
    and the model's bound (a part, or "L2"/"HBM" for a read)."""

    record: Record
    quantity: str
    model: float
    measured: float
    fraction: float
    bound: str

    @property
    def expected(self):
        """The expected time of the record's kernel (`record_expect`): an
        `Expectation`, None for a latency record."""
        return record_expect(self.record)

    @property
    def slow(self) -> bool:
        """More than SLOW times slower than the model's bound."""
        return self.quantity != "latency" and self.fraction < 1 / SLOW


@functools.cache
def records() -> tuple:
    """Every record of `data/published/*.toml`, checked: a known GPU, a bib key, a run with the
    keys its kind needs, a unit its kind accepts, a positive value, a chapter of the book, no
    record repeated; a DataError naming file and key otherwise."""
    out = []
    for path in sorted(DATA.glob("*.toml")):
        data = _read(path)
        source = data.get("source")
        if source not in presets.bib_keys():
            raise DataError(f"{path.name}: source must be a key of references.bib, got {source!r}")
        reasons = data.get("reasons", {})  # reasons several records share, by name
        raw = data.get("record", [])
        for i, entry in enumerate(raw):
            where = f"{path.name} record {i + 1}"
            if entry in raw[:i]:
                raise DataError(f"{where} repeats record {raw.index(entry) + 1} word for word")
            entry = {**entry, **{key: _shared(f"{where}.{key}", entry[key], reasons)
                                 for key in ("reason", "violation") if key in entry}}
            _no_gaps(where, {"gpu", "what", "where", "run", "value", "unit", "chapter"} - set(entry),
                     set(entry) - RECORD_KEYS)
            kind = entry["run"].get("kind") if isinstance(entry["run"], dict) else None
            if kind not in UNITS:
                raise DataError(f"{where}: run must be a table whose kind is one of {sorted(UNITS)}, got {entry['run']!r}")
            _run_fields(f"{where}.run", entry["run"], kind)
            if entry["unit"] not in UNITS[kind]:
                raise DataError(f"{where}.unit must be one of {UNITS[kind]} for a {kind}, got {entry['unit']!r}")
            if entry["gpu"] not in presets.preset_names():
                raise DataError(f"{where}.gpu must be a preset, got {entry['gpu']!r}")
            if kind in BEYOND_ONE_GPU:
                _joined(f"{where}.run", entry["run"], entry["gpu"])
            try:
                _chapter(entry["chapter"])
            except ValueError as err:
                raise DataError(f"{where}.{err}") from None
            _field(f"{where}.holdout", entry.get("holdout", False), "flag")
            if "sets_preset" in entry:
                _sets_preset(f"{where}.sets_preset", entry, source)
            value = entry["value"]
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < math.inf:
                raise DataError(f"{where}.value must be a finite positive number, got {value!r}")
            if value * SCALE[entry["unit"]] > MOST[entry["unit"]]:
                raise DataError(f"{where}.value must be at most {MOST[entry['unit']] / SCALE[entry['unit']]:g} "
                                f"{entry['unit']}, got {value!r}")
            for name, value in entry.get("also", {}).items():
                if not name.endswith(tuple("_" + unit for unit in ALSO_UNITS)) or not (isinstance(value, (int, float))
                                                                                      and value > 0):
                    raise DataError(f"{where}.also.{name} must be a positive number named for its unit "
                                    f"(ending in one of {['_' + u for u in ALSO_UNITS]}), got {value!r}")
            out.append(Record(source=source, **entry))
    return tuple(out)


def _joined(where: str, run: dict, gpu: str) -> None:
    """Refuse a run past one GPU whose link `gpu` does not have, whose GPUs are more than the
    link joins as one, or whose algorithm the link does not run (`parallel.algorithms`)."""
    joined = links.link(run["link"])
    if gpu not in joined.gpus:
        raise DataError(f"{where}.link must be a link the {gpu} has ({', '.join(k.name for k in links.links_of(gpu))}), "
                        f"got {run['link']!r}")
    if run["gpus"] > joined.domain:
        raise DataError(f"{where}.gpus must be at most {joined.domain}, the GPUs {joined.name} joins as one, "
                        f"got {run['gpus']!r}")
    offered = parallel.algorithms(joined.name, run.get("collective", "all-reduce"))
    if run.get("algorithm", "ring") not in offered:
        raise DataError(f"{where}.algorithm must be one {joined.name} runs ({', '.join(offered)}), "
                        f"got {run['algorithm']!r}")


def _shared(where: str, text, reasons: dict) -> str:
    """A record's reason or violation: its own sentence, or the name (one word) of a reason its
    file's [reasons] table holds."""
    if not isinstance(text, str) or not text:
        raise DataError(f"{where} must be a sentence or the name of one of [reasons], got {text!r}")
    if len(text.split()) > 1:
        return text
    if text not in reasons or not isinstance(reasons[text], str):
        raise DataError(f"{where} must name one of [reasons] {sorted(reasons)} (or be a sentence), got {text!r}")
    return reasons[text]


def _sets_preset(where: str, entry: dict, source: str) -> None:
    """Refuse a `sets_preset` that does not begin with a figure of the record's preset citing its
    source, then a colon ("l2_bandwidth: ..."), or that comes with `holdout`."""
    citing = sorted(name for name, fact in presets.gpu(entry["gpu"]).facts().items() if fact.source == source)
    text = entry["sets_preset"]
    if not isinstance(text, str) or ":" not in text or text.split(":")[0] not in citing:
        raise DataError(f"{where} must be a figure of the {entry['gpu']} preset citing {source} {citing}, "
                        f"a colon and why, got {text!r}")
    if entry.get("holdout"):
        raise DataError(f"{where}: a record that sets a preset is not holdout")


def _run_fields(where: str, run: dict, kind: str) -> None:
    """Refuse a run of `kind` with a key missing or unknown, or a field that does not hold what
    RUN_FIELDS says."""
    _no_gaps(where, RUN_NEEDS[kind] - set(run), set(run) - RUN_KEYS[kind] - {"kind"})
    if kind == "gemm" and len({"size", "shape"} & set(run)) != 1:
        raise DataError(f"{where} must hold one of size (a square GEMM) and shape ([m, n, k]), got {sorted(run)}")
    for name, value in run.items():
        if name != "kind":
            _field(f"{where}.{name}", value, RUN_FIELDS[name])


def _field(where: str, value, wanted) -> None:
    """Refuse a record's field that does not hold what `wanted` (a kind of RUN_FIELDS) says."""
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    if isinstance(wanted, tuple):
        fine, accepted = value in wanted, f"one of {wanted}"
    else:
        fine, accepted = {
            "amount": (number and 0 < value < math.inf, "a positive number"),
            "size": (number and 0 < value <= _check.LARGEST and value == int(value), "a positive whole number"),
            "tile": (isinstance(value, list) and len(value) in (2, 3) and all(
                isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in value),
                "a list of 2 or 3 positive whole numbers"),
            "shape": (isinstance(value, list) and len(value) == 3 and all(
                isinstance(v, int) and not isinstance(v, bool) and 0 < v <= _check.LARGEST for v in value),
                "a list of 3 positive whole numbers, [m, n, k]"),
            "flag": (isinstance(value, bool), "true or false"),
            "link": (isinstance(value, str) and value in links.links(), f"a link of data/links.toml, one of {tuple(links.links())}"),
        }[wanted]
    if not fine:
        raise DataError(f"{where} must be {accepted}, got {value!r}")


def attention_flops(run: dict) -> float:
    """FLOPs of an attention run (a record's `run` table) counted the FlashAttention papers'
    way: 4 N^2 d per head forward, 2.5 times that backward (softmax and masking not counted)."""
    if not isinstance(run, dict) or run.get("kind", "attention") != "attention":
        raise ValueError(f"run must be an attention run's table ({', '.join(sorted(RUN_KEYS['attention']))}), got {run!r}")
    _run_fields("run", run, "attention")
    forward = 4.0 * run["seq"] ** 2 * run["head_dim"] * run["heads"] * run["batch"]
    return forward * (3.5 if run["passes"] == "forward+backward" else 1.0)


def gemm_shape(run: dict) -> tuple[int, int, int]:
    """(m, n, k) of a gemm run (a record's `run` table): its `shape`, or `size` three times."""
    if not isinstance(run, dict) or run.get("kind") != "gemm":
        raise ValueError(f"run must be a gemm run's table (with its kind), got {run!r}")
    _run_fields("run", run, "gemm")
    return tuple(run["shape"]) if "shape" in run else (run["size"],) * 3


def workloads(run: dict, gpu=None) -> list:
    """The workloads of a gemm or attention run (a record's `run` table) as the model charges
    them: one GEMM; attention's forward pass, and its backward pass for "forward+backward"
    (FlashAttention's first release walks key/value blocks outer backward too, as "flash"
    does: Dao et al. 2022, Algorithm 4), with L2 catching the flash kernels' re-reads (K and V,
    a first-release kernel's Q and partial outputs; Q and dO backward), at best. With `gpu`,
    through caches that keep the lines used most recently (the expected time's): a
    first-release kernel's re-reads come back from L2 only if one step's, for the heads in
    flight (one block per batch and head, at least one per SM), fit in it."""
    if not isinstance(run, dict) or run.get("kind") not in ("gemm", "attention"):
        raise ValueError(f"run must be a gemm or an attention run's table (with its kind), got {run!r}")
    _run_fields("run", run, run["kind"])
    g, kept = (None if gpu is None else presets.gpu(gpu)), True
    if run["kind"] == "gemm":
        shape, dtype = gemm_shape(run), run.get("dtype", "fp32")
        if run.get("ideal"):
            return [gemm_ideal(*shape, dtype)]
        if "block" in run:
            return [gemm(*shape, block=tuple(run["block"]), thread=tuple(run.get("thread", (1, 1))), dtype=dtype,
                         layout=run.get("layout", "strided"))]
        return [gemm(*shape, dtype=dtype)]
    args = (run["batch"], run["heads"], run["seq"], run["head_dim"], run.get("dtype", "fp16"))
    tile = {"block": tuple(run["block"])} if "block" in run else {}
    if g is not None and run["attention"] == "flash1":
        heads = min(run["batch"] * run["heads"], g.sms.value)
        step = run["seq"] * (run["head_dim"] * (_check.DTYPE_BYTES[args[4]] + 4) + 4)  # Q and the fp32 partials
        kept = heads * step <= g.capacity("l2")
    out = [attention(*args, run["attention"], l2_reuse=kept, **tile)]
    if run["passes"] == "forward+backward":
        out.append(attention_backward(*args, "standard" if run["attention"] == "standard" else "flash", l2_reuse=True))
    return out


def _time(run: dict, gpu) -> tuple[float, float, str]:
    """(model seconds, FLOPs, bound) of a gemm or attention run on `gpu`."""
    parts = [predict(w, gpu) for w in workloads(run)]
    flops = float(parts[0].workload.flops) if run["kind"] == "gemm" else attention_flops(run)
    bounds = "+".join(dict.fromkeys(str(p.bound) for p in parts))
    return sum(float(p.time) for p in parts), flops, bounds


def _record(record) -> Record:
    """`record` if it is a `Record` (of `records()`, checked when its file is loaded)."""
    if not isinstance(record, Record):
        raise TypeError(f"record must be a Record of gm.published.records(), got {type(record).__name__}")
    return record


def compare(record: Record, rated: bool = False) -> Comparison:
    """`record` against the model on its GPU's preset at the highest rates it reaches
    (`GPU.bound`), or at its rated clocks when `rated`."""
    _record(record)
    rated = _check.flag("rated", rated)
    g, run = presets.gpu(record.gpu), record.run
    g = g if rated else g.bound()
    measured = record.value * SCALE[record.unit]
    if run["kind"] == "latency":
        level = run["level"]
        if level not in LEVELS or level not in g.latency:
            raise DataError(f"{record.gpu} has no preset latency for run.level {level!r}")
        preset = g.latency[level].value
        return Comparison(record, "latency", preset, measured, preset / measured, level)
    if run["kind"] == "launch":
        model = launch_cost(g, run["path"]).seconds
        return Comparison(record, "time", model, measured, model / measured, "overhead")
    if run["kind"] == "collective":  # bus bandwidth against the bytes' own over the link
        n, m, algorithm = run["gpus"], run["message"], run.get("algorithm", "ring")
        seconds, _ = parallel.collective(run["link"], run["collective"], n, m, algorithm, latency=False)
        model = float(collectives.bus_bandwidth(run["collective"], n, m, seconds))
        return Comparison(record, "bandwidth", model, measured, measured / model, "link")
    if run["kind"] == "parallel":  # tokens/s or ms -> seconds per step of the batch
        p = run_step(run, g, latency=False)
        step = measured if record.unit == "ms" else run["batch"] / measured
        return Comparison(record, "time", p.time, step, p.time / step, p.bound)
    if run["kind"] == "request":  # ms from the requests' arrival to their last token
        r = _request(run, g, latency=False)
        return Comparison(record, "time", r.time, measured, r.time / measured, r.bounds)
    if run["kind"] == "decode":  # tokens/s -> seconds per step of the batch
        formats = {"weight": run.get("weight", "fp16"), "kv": run.get("kv", "fp16")}
        p = predict(decode.step(run["model"], run["batch"], run["context"], **formats), g)
        step = run["batch"] / measured
        return Comparison(record, "time", float(p.time), step, float(p.time) / step, str(p.bound))
    if run["kind"] == "read":
        nbytes = run["bytes"]
        seconds = float(warm_read_time(g, nbytes, run.get("chunk"), run.get("threads")))
        model = nbytes / seconds
        return Comparison(record, "bandwidth", model, measured, measured / model, _read_bound(g, nbytes, seconds))
    seconds, flops, bound = _time(run, g)
    measured_s = measured if record.unit == "ms" else flops / measured
    return Comparison(record, "time", seconds, measured_s, seconds / measured_s, bound)


def run_step(run: dict, gpu, latency: bool = True) -> parallel.ParallelStep:
    """The `parallel.step` a parallel run (a record's `run` of kind "parallel") names on `gpu`:
    its formats (fp16 unless it says), and where it says each request's `output`, the prompt
    tokens its served batch prefills in each step (`decode.served_chunk`, the run's context
    taken as each request's prompt)."""
    if not isinstance(run, dict) or run.get("kind") != "parallel":
        raise ValueError(f"run must be a parallel run's table (with its kind), got {run!r}")
    chunk = decode.served_chunk(run["batch"], run["context"], run["output"]) if "output" in run else 0
    return parallel.step(run["model"], gpu, run["gpus"], run["batch"], run["context"], run["link"], latency=latency,
                         chunk=chunk, **_formats(run))


def _request(run: dict, g, latency: bool) -> parallel.Request:
    """A request run's `parallel.request` on `g`, with or without the collectives' latencies."""
    return parallel.request(run["model"], g, run["gpus"], run["batch"], run["prompt"], run["output"], run["link"],
                            latency=latency, **_formats(run))


def _formats(run: dict) -> dict:
    """A run past one GPU's weight, cache and math formats, fp16 where it names none."""
    return {name: run.get(name, "fp16") for name in ("weight", "kv", "math")}


def _read_bound(g, nbytes, seconds) -> str:
    """What sets a warm read's bound: HBM with L2 beside it ("l2+hbm") once the data outgrow
    L2 and HBM's share is the slowest, the L1/shared data path ("smem") when every byte
    crossing it is, L2 otherwise."""
    if nbytes > g.capacity("l2") and seconds * (1 - 1e-12) <= (nbytes - g.capacity("l2")) / g.bandwidth("hbm"):
        return "l2+hbm"
    return "smem" if seconds * (1 - 1e-12) <= nbytes / g.bandwidth("smem") else "l2"


def _chapter(chapter) -> None:
    """Refuse a chapter that is not a chapter's number (an integer of CHAPTERS)."""
    if isinstance(chapter, bool) or not isinstance(chapter, numbers.Integral) or chapter not in CHAPTERS:
        raise ValueError(f"chapter must be a chapter's number, one of {CHAPTERS}, got {chapter!r}")


def comparisons(chapter: int | None = None, rated: bool = False) -> list[Comparison]:
    """Every record against the model (of `chapter`, when given; at the rated clocks when
    `rated`, see `compare`); none is left out."""
    if chapter is not None:
        _chapter(chapter)
    rated = _check.flag("rated", rated)
    return [compare(r, rated) for r in records() if chapter is None or r.chapter == chapter]


def violations(chapter: int | None = None) -> list[Comparison]:
    """The comparisons in which the measurement is faster than the model's bound (each says
    why in its record's `violation`)."""
    return [c for c in comparisons(chapter) if c.quantity != "latency" and c.fraction > 1 + 1e-9]


# The expected time on the records (`gpumodel.expected`): halves, launches, shares.


def half(record) -> str:
    """'estimate' or 'judge': a `holdout` record is judged; any other by the first byte of the
    SHA-256 of its source, GPU and text (`source|gpu|what`): even estimates, odd is judged. A
    record's half depends on nothing but itself, so adding a record moves no other's."""
    if _record(record).holdout:
        return "judge"
    key = f"{record.source}|{record.gpu}|{record.what}".encode()
    return "estimate" if hashlib.sha256(key).digest()[0] % 2 == 0 else "judge"


LIBRARY_TILE = (128, 128)
"""The output tile a library GEMM's block computes, for its waves, where the library does not
publish its choice (cuBLAS: an estimate, 128 x 128 is one CUTLASS and cuBLAS use); a library
whose rule is published (`data/expect.toml`'s kernel note `tiles = "by shape"`) gets the tile
`library_tile` chooses for the shape."""


def record_launch(record) -> Launch | None:
    """The `Launch` of a published GEMM or flash-attention record, timed one launch after
    another (None for reads, launches, decode steps and standard attention's several kernels):
    an FP32 GEMM kernel as `gemm_launch` shapes it; a library's GEMM (cuBLAS, fp16 and narrower,
    or an `ideal` run) one block per `LIBRARY_TILE` of C, one block per SM (its pipeline keeps
    its own loads in flight: no rounds); a flash kernel one block per 128 query rows."""
    run, notes = _record(record).run, kernel_notes(record.source, record.what)
    g = presets.gpu(record.gpu)
    if run["kind"] == "gemm" and not run.get("ideal") and run.get("dtype", "fp32") == "fp32":
        block = tuple(run["block"]) if "block" in run else None
        return replace(gemm_launch(*gemm_shape(run), block, tuple(run.get("thread", (1, 1))),
                                   run.get("layout", "strided"), notes.get("coalesced", True)), timed=True)
    if run["kind"] == "gemm":
        m, n, k = gemm_shape(run)
        tile = library_tile(m, n, k, g, run.get("dtype", "fp32")) if notes.get("tiles") == "by shape" else LIBRARY_TILE
        tiles = math.ceil(m / tile[0]) * math.ceil(n / tile[1])
        return Launch(256, tiles, 128, g.capability.max_smem_per_block, timed=True)
    if run["kind"] == "attention" and run["attention"] != "standard":
        rows = 128
        grid = run["batch"] * run["heads"] * (1 if notes.get("grid") == "heads" else math.ceil(run["seq"] / rows))
        share = facts()["mma_sync_on_hopper"].value if (notes.get("mma") == "mma.sync"
                                                       and g.capability.version[0] >= 9) else 1.0
        smem = 2 * 3 * rows * run["head_dim"]  # Q, K and V tiles of 128 rows, 2-byte elements
        return Launch(128, grid, 255, min(smem, g.capability.max_smem_per_block), mma_share=share, timed=True)
    return None


BEYOND_ONE_GPU = ("collective", "parallel", "request")
"""The kinds of run past one GPU: a collective's expected time is NCCL's tuner's price of it
(`parallel.collective` with latencies), a tensor-parallel step's `parallel.step` with them."""


def record_expect(record, share: bool = True, table: dict | None = None) -> Expectation | None:
    """A published record's expected time on its GPU at the bound's rates (None for a latency
    record): past one GPU, the collectives' and steps' prices with their latencies (`_beyond`);
    else its workloads as `compare` charges them, with its `record_launch`; a decode step's
    dequantising (`dequantise_time`); a read's or a launch's: the bound, then the share; passes
    add up; when `share`, at the shares of `table` (share name -> share), by default those of
    `data/expect_estimates.toml`."""
    share = _check.flag("share", share)
    g = presets.gpu(_record(record).gpu).bound()
    c = compare(record)
    if c.quantity == "latency":
        return None
    if record.run["kind"] in BEYOND_ONE_GPU:
        return _at_share(_beyond(record, g, c), _math(record.run), share, record.run["kind"], table)
    bound = c.model if c.quantity == "time" else record.run["bytes"] / c.model
    launch = record_launch(record)
    run = record.run
    if launch is None:
        math_ = _math(run)
        limiter, t, parts = c.bound.split("+")[0], bound, {}
        if run["kind"] == "read":
            t = read_time(g, run["bytes"], run.get("chunk"), run.get("threads"))
            limiter = "hbm" if run["bytes"] > g.capacity("l2") else c.bound
            parts = {limiter: t}
        if run["kind"] == "decode":
            d = dequantise_time(decode.model(run["model"]).params, run.get("weight", "fp16"), g)
            parts = {"dequantise": d}
            limiter, t = ("dequantise", d) if d > bound else (limiter, bound)
        return _at_share(Expectation(t, bound, c.bound, limiter, 1.0, {c.bound.split("+")[0]: bound, **parts}, "",
                                     g.name), math_, share, run["kind"], table)
    found = [_expect(w, g, launch) for w in workloads(run, g)]
    first = max(found, key=lambda e: e.time)
    t = sum(e.time for e in found)
    return _at_share(Expectation(t, bound, c.bound, first.limiter, 1.0, first.parts, first.reason, g.name, first.latency),
                     _math(run), share, run["kind"], table)


def _beyond(record, g, c: Comparison) -> Expectation:
    """The expected time of a record past one GPU on `g` (its preset at the bound's rates), at no
    share: a collective as NCCL's tuner prices it by the record's algorithm; a tensor-parallel
    step with its collectives' latencies, held by its link where they outweigh the GPU's share."""
    run = record.run
    if run["kind"] == "collective":
        n, m, algorithm = run["gpus"], run["message"], run.get("algorithm", "ring")
        bound, _ = parallel.collective(run["link"], run["collective"], n, m, algorithm, latency=False)
        t, _ = parallel.collective(run["link"], run["collective"], n, m, algorithm)
        return Expectation(t, bound, "link", "link", 1.0, {"link": t}, "", g.name)
    if run["kind"] == "request":
        r = _request(run, g, latency=True)
        return Expectation(r.time, c.model, c.bound, r.bound, 1.0, {"prefill": r.prefill.time, "decode": r.decoding},
                           "", g.name)
    p = run_step(run, g)
    return Expectation(p.time, c.model, c.bound, p.bound, 1.0, {"gpu": p.gpu_time, "link": p.link_time}, "", g.name)


def share_for(kind: str, cls: str, table: dict | None = None, gpu=None) -> float:
    """The achievable share of limiter class `cls` for a record whose run is of `kind` on `gpu`,
    from `table` (share name -> share; by default `shares`): the first the estimate has of
    `_share_names` (the kind's own before the class's over all kinds; for the SM's parts on a
    GPU of `SM_FAMILY`, that family's before the others'), else 1."""
    _check.choice("kind", kind, tuple(CLASS_NAMES))
    _check.choice("cls", cls, CLASSES)
    table = shares() if table is None else _share_table(table)
    return next((table[name] for name in _share_names(kind, cls, gpu) if name in table), 1.0)


def _share_names(kind: str | None, cls: str, gpu=None) -> list:
    """The share names a record of `kind` (None: any kind) held by class `cls` on `gpu` may take,
    first first: 'gemm.sm@ga10x', 'sm@ga10x' (the SM's parts on a GPU of `SM_FAMILY`), 'gemm.sm', 'sm'."""
    family = sm_family(gpu) if gpu is not None else ""  # a GPU given is checked, whatever the class
    family = family if cls == "sm" else ""
    names = ([f"{kind}.{cls}"] if kind else []) + [cls]
    return [f"{name}@{family}" for name in names] + names if family else names


def _share_table(table) -> dict:
    """`table` checked: share names ('sm', a kind and a class: 'read.hbm', and for the SM's parts
    on `SM_FAMILY`'s GPUs 'sm@ga10x' or 'gemm.sm@ga10x') -> shares in (0, 1]."""
    if not isinstance(table, dict):
        raise TypeError(f"table must be a dict of share name to share, or None, got {type(table).__name__}")
    for name, value in table.items():
        plain, _, family = name.partition("@") if isinstance(name, str) else ("", "", "")
        kind, _, cls = plain.rpartition(".")
        if cls not in CLASSES or kind not in ("", *CLASS_NAMES) or family not in ("", SM_FAMILY) or (
                family and cls != "sm"):
            raise ValueError(f"table must map share names (a class of {CLASSES}, or 'kind.class' with a kind of "
                             f"{tuple(CLASS_NAMES)}; 'sm' may end in '@{SM_FAMILY}') to shares, got the key {name!r}")
        if _check.real(f"table[{name!r}]", value, most=1) <= 0:
            raise ValueError(f"table[{name!r}] must be a share in (0, 1], got {value!r}")
    return table


def _at_share(e: Expectation, math_: str, share: bool, kind: str = "", table: dict | None = None) -> Expectation:
    """`e` at its limiter class's achievable share (`share_for`, from `table`), when `share`
    (the ramp, a latency, is not scaled)."""
    s = share_for(kind, share_class(e.limiter, math_), table, e.gpu) if share else 1.0
    why = REASONS.get(e.limiter, f"the bound's {e.limiter}").format(occ="registers or shared memory")
    ramp = e.parts.get("ramp", 0.0) if e.limiter != "launch" else 0.0
    return replace(e, time=(e.time - ramp) / s + ramp, share=s, reason=f"{why}; at {s:.0%} of that" if s != 1 else why)


def measured_time(record) -> float:
    """A record's measured time in seconds (a read's: its bytes over the measured rate)."""
    c = compare(_record(record))
    if c.quantity == "latency":
        raise ValueError(f"record must be a record of a time or a bandwidth, not of a latency, got {record.what!r}")
    if record.run["kind"] == "collective":  # the message over the algorithm bandwidth, busbw / factor
        run = record.run
        return float(collectives.bus_bandwidth(run["collective"], run["gpus"], run["message"], 1.0)) / c.measured
    return c.measured if c.quantity == "time" else record.run["bytes"] / c.measured


def estimate_shares(records_=None, halves=("estimate",)) -> dict:
    """Each limiter class's achievable share: the median, over the records of `halves` (of
    `records_`, all by default), of the mechanisms' time over the measured time (at most 1); per
    class ('hbm') over all kinds of run, and per kind of run and class ('read.hbm': a stream
    benchmark is not a decode step), which `share_for` prefers. What `python -m
    gpumodel.estimates` writes to `data/expect_estimates.toml` (the 'estimate' half)."""
    chosen = [r for r in (records() if records_ is None else records_) if half(r) in halves]
    return _medians(sample for r in chosen for sample in _samples(r, record_expect(r, share=False)))


def _samples(record, bare: Expectation | None) -> list:
    """What a record gives the share estimate, from its expected time at no share (`bare`):
    (share name, mechanisms' time over measured time), for its class and for its kind and class."""
    if bare is None:
        return []
    ratio, cls = bare.time / measured_time(record), share_class(bare.limiter, _math(record.run))
    return [(name, ratio) for name in _share_names(record.run["kind"], cls, record.gpu)]


def _medians(samples) -> dict:
    """Each share name's median ratio (at most 1) and its count, from (share name, ratio) pairs."""
    by = {}
    for name, ratio in samples:
        by.setdefault(name, []).append(ratio)
    return {k: {"share": float(min(1.0, np.median(v))), "records": len(v)} for k, v in sorted(by.items())}


def _math(run: dict) -> str:
    """The math a record's run is charged at: its workload's for a GEMM or attention, a request's
    or a tensor-parallel step's own (fp16 unless it says), else FP32."""
    if run["kind"] in ("request", "parallel"):
        return run.get("math", "fp16")
    return workloads(run)[0].math if run["kind"] in ("gemm", "attention") else "fp32"


def write_estimates(path=None) -> str:
    """Write `estimate_shares` to `data/expect_estimates.toml` (or `path`); returns the text."""
    lines = ["# Written by `python -m gpumodel.estimates` (gpumodel.published.write_estimates): each limiter",
             "# class's achievable share, the median over the published records of the 'estimate' half",
             "# (gpumodel.published.half) of the mechanisms' time over the measured time, at most 1.",
             "# Never edited by hand; the 'judge' half is never read. Regenerate after adding a record.", ""]
    for name, entry in estimate_shares().items():
        lines += [f"[share.\"{name}\"]", f"value = {entry['share']:.4f}", f"records = {entry['records']}", ""]
    text = "\n".join(lines)
    pathlib.Path(path or ESTIMATES).write_text(text)
    shares.cache_clear()
    return text


@functools.cache
def shares() -> dict:
    """Each limiter class's achievable share as `data/expect_estimates.toml` holds it (written by
    `python -m gpumodel.estimates`, never on import): a class it lacks gets none (1). The file
    is read strictly: a `[share."<name>"]` table per share, each name a class or a kind and a
    class, each holding only `value` (in (0, 1]) and `records` (a count of at least 1)."""
    if not ESTIMATES.exists():
        raise DataError(f"{ESTIMATES.name} is missing: run `python -m gpumodel.estimates` to write it")
    data = _read(ESTIMATES)
    table = data.get("share")
    if set(data) != {"share"} or not isinstance(table, dict) or not table:
        raise DataError(f"{ESTIMATES.name} must hold [share.\"<name>\"] tables and nothing else, got the keys "
                        f"{sorted(data)}: run `python -m gpumodel.estimates` to write it")
    out = {}
    for name, entry in table.items():
        where = f"{ESTIMATES.name} share.{name}"
        if not isinstance(entry, dict) or set(entry) != {"value", "records"}:
            raise DataError(f"{where} must hold value and records, and nothing else, got {entry!r}")
        value, count = entry["value"], entry["records"]
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= 1:
            raise DataError(f"{where}.value must be a number in (0, 1], got {value!r}")
        if isinstance(count, bool) or not isinstance(count, int) or count < 1:
            raise DataError(f"{where}.records must be a whole number of at least 1, got {count!r}")
        out[name] = float(value)
    try:
        return _share_table(out)
    except ValueError as err:
        raise DataError(f"{ESTIMATES.name}: {err}") from None


def measured_over_expected(which: str = "judge", model: str = "expected") -> np.ndarray:
    """Measured time over the `model`'s ('expected', or 'bound': `predict`'s) for the records
    of half `which` ('estimate' or 'judge'), latency records left out. Chapter 98."""
    _check.choice("which", which, ("estimate", "judge"))
    _check.choice("model", model, ("expected", "bound"))
    pairs = [(r, record_expect(r)) for r in records() if half(r) == which]
    return np.asarray([measured_time(r) / (e.time if model == "expected" else e.bound) for r, e in pairs if e is not None])


CLASS_NAMES = {"gemm": "GEMM", "attention": "attention", "read": "memory streams", "decode": "decode",
               "launch": "launches", "collective": "collectives", "parallel": "tensor-parallel steps",
               "request": "requests end to end"}
"""The classes of records `accuracy` reports, by their run's kind."""


def accuracy(which: str = "judge") -> dict:
    """How well the expected time holds on the records of half `which` (latency records left
    out): per class of `CLASS_NAMES` and 'all', {'records', 'median' (measured over expected),
    'within' (the share within 1.5x either way), 'beyond_2' (records off by more than 2x)}.
    Chapters quote it beside an expected time; chapter 98 shows it whole."""
    _check.choice("which", which, ("estimate", "judge"))
    return _summary([(r, record_expect(r)) for r in records() if half(r) == which and _judged(r)])


def _judged(record) -> bool:
    """Whether a record has an expected time to judge (not a latency)."""
    return record.run["kind"] != "latency"


def left_out_accuracy() -> dict:
    """How well the expected time holds on sources it was not estimated from: each source's
    records (a paper, a benchmark's file) judged at the shares `estimate_shares` gives on every
    other source's records, both halves; the same figures as `accuracy`. Chapter 98."""
    return _summary(left_out_expected())


def left_out_expected() -> list:
    """(record, its expected time) for every judged record, at the shares `estimate_shares`
    gives on every other source's records (`left_out_accuracy`'s pairs), worked out once for
    the records loaded (several chapters ask). Chapters 3 and 98."""
    loaded = records()
    if _LEFT_OUT.get("records") is not loaded:
        _LEFT_OUT.clear()
        _LEFT_OUT.update(records=loaded, pairs=tuple(_left_out_pairs(loaded)))
    return list(_LEFT_OUT["pairs"])


_LEFT_OUT: dict = {}
"""`left_out_expected`'s pairs and the records they were worked out for."""


def _left_out_pairs(loaded) -> list:
    """`left_out_expected`'s pairs for the records `loaded`."""
    bare = [(r, record_expect(r, share=False)) for r in loaded]
    samples = [(r.source, _samples(r, e)) for r, e in bare]
    expected = []
    for source in sorted({r.source for r, _ in bare}):
        table = {name: entry["share"] for name, entry in
                 _medians(pair for s, pairs in samples if s != source for pair in pairs).items()}
        expected += [(r, _at_share(e, _math(r.run), True, r.run["kind"], table)) for r, e in bare
                     if r.source == source and _judged(r)]
    return expected


def _summary(expected: list) -> dict:
    """`accuracy`'s figures for (record, its expected time) pairs."""
    by = {}
    for r, e in expected:
        ratio = measured_time(r) / e.time
        by.setdefault(r.run["kind"], []).append(ratio)
        by.setdefault("all", []).append(ratio)
    out = {}
    for name, ratios in by.items():
        v = np.asarray(ratios)
        out[name] = {"records": len(v), "median": float(np.median(v)),
                     "within": float(np.mean((v <= 1.5) & (v >= 1 / 1.5))), "beyond_2": int(np.sum((v > 2) | (v < 0.5)))}
    return out


def accuracy_note() -> str:
    """One phrase for a chapter to glue beside an expected time: with each source left out of
    the estimate that judges it (`left_out_accuracy`), the median measured over expected and the
    share within 1.5x."""
    a = left_out_accuracy()["all"]
    return (f"on {a['records']} published measurements, each judged at shares estimated without its own source, "
            f"measured over expected has a median of {a['median']:.2f}, {a['within']:.0%} within 1.5x")


def expect(work, gpu, launch: Launch | None = None, flops: float = 0.0) -> Expectation:
    """`gm.expect`: the expected time of `work` (a `Workload` or a lab `Trace`) on `gpu`, its
    mechanisms (`gpumodel.expected.expect`) at the achievable shares estimated on the
    records' 'estimate' half (`shares`, each class over all kinds of run: a kernel of one's
    own is none of the records' kinds; on a GPU of `SM_FAMILY`, its SM parts' share where the
    estimate has one). Chapters 3, 4, 5 and 98."""
    table = shares()
    by_class = {cls: [table[name] for name in _share_names(None, cls, gpu) if name in table] for cls in CLASSES}
    return _expect(work, gpu, launch, flops, {cls: found[0] for cls, found in by_class.items() if found})
