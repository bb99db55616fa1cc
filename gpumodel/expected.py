"""The expected time: what a kernel like this gets, beside the bound no kernel can beat.

`expect(workload_or_trace, gpu, launch)` starts from the bound's parts (`predict`: the
arithmetic, the special functions, each level's bytes over its bandwidth) and adds the
mechanisms that hold real kernels below it, each from a sourced fact (`data/expect.toml`, the
presets' latencies, the occupancy limits) or an estimate said to be one:

- latency (Little's law on bytes): each SM keeps `warps x bytes of one round of independent
  loads` in flight; a round waits the mean latency of where its bytes come from (an L1 hit,
  L2, HBM: `Launch.load_bytes` against the workload's L2 and HBM bytes), loaded by queueing at
  the busiest level beyond the SM (the finite-population single-server queue, M/M/1//N:
  the bytes in flight circulate between the unloaded latency and that level's bandwidth), so
  throughput is bytes in flight over loaded latency and never above the bandwidth. A round
  waits its slowest load: the L1-hit latency only when all its sectors hit. A round is
  loads issued before any of their results is used: an unrolled tile load is one round, not
  one per load (`trace_launch` takes the lab's count, `gemm_launch` the kernel's own
  structure). Named 'occupancy' when registers or shared memory set the warps.
- uncoalesced: the L1 tag stage resolves `tags_per_clock` lines a clock, lines of one set
  one a clock: a warp reading 32 rows 16 KB apart takes 32 clocks of it.
- issue: four warp instructions a clock per SM, one of them a load or store (the MIO's LSU
  port); the tensor cores at the share of their peak the kernel's instructions reach; a
  quantised decode step's dequantising instructions (`dequantise`).
- waves (the tail): a grid of fewer blocks than whole waves leaves SMs idle in the last one;
  ramp: the first tile's loads before any math and the last tile's stores after it (two HBM
  latencies); launch: a kernel timed back to back waits at least its host launch
  (`gpumodel.overhead`).

What no mechanism here explains (DRAM refresh and bus turns, the scheduler's own gaps) is an
achievable share per class of limiter, estimated on the 'estimate' half of the published
records by one command, `python -m gpumodel.estimates`, which writes
`data/expect_estimates.toml`; nothing is re-estimated on import, so adding a record moves no
expected time until that command is run again. Its accuracy on the other half is
`gpumodel.published.accuracy`. Chapters 3, 4, 5, 8 and 98.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field, replace

import numpy as np

from . import _check, presets
from .hardware import KINDS, MATH, WARP, Fact
from .model import BOUNDS, predict
from .occupancy import occupancy
from .tensor_cores import WEIGHT_BYTES
from .workloads import LAYOUTS, Workload, gemm, operand_load_instructions

DATA = presets.DATA / "expect.toml"
ESTIMATES = presets.DATA / "expect_estimates.toml"
"""The achievable shares, written by `python -m gpumodel.estimates` (`gpumodel.published.write_estimates`)."""
LIMITERS = ("latency", "occupancy", "uncoalesced", "issue", "dequantise", "waves", "launch")
"""What can hold a kernel below its bound, beside the bound's own parts (`model.BOUNDS`)."""
BOUND_PARTS = BOUNDS + ("overhead", "link")
"""What can set a bound: a part of the model's, a launch record's overhead, or the link of a record
past one GPU (`published.compare`)."""
HOLDERS = BOUND_PARTS + LIMITERS
"""What can hold an expected time (`Expectation.limiter`)."""
DEFAULT_REGISTERS = 32
"""Registers per thread assumed where neither a compiler report nor the caller gives them."""


FACT_UNITS = {"issue_per_sm": "instruction/clk", "lsu_per_sm": "instruction/clk", "tags_per_clock": "line/clk",
              "mma_sync_on_hopper": "fraction", "dequantise_int8": "instruction/weight",
              "dequantise_int4": "instruction/weight"}
"""The facts `data/expect.toml` holds, each with its unit (a fraction is at most 1)."""
FACT_MOST = 64
"""The most any other fact may be: instructions or lines a clock, instructions a weight."""
KERNEL_NOTES = {"coalesced": (False,), "grid": ("heads",), "mma": ("mma.sync",), "tiles": ("by shape",)}
"""What a `[[kernel]]` entry of `data/expect.toml` may say of a record's kernel, and the values."""


@functools.cache
def facts() -> dict:
    """The sourced facts of `data/expect.toml` by name, as `Fact`s (value as stated); a fact
    missing, unknown or malformed is refused naming the file and the key."""
    data = presets._read(DATA)
    presets._no_gaps("expect.toml", set() if "facts" in data else {"facts"}, set(data) - {"facts", "kernel"})
    table = data["facts"]
    presets._no_gaps("expect.toml [facts]", set(FACT_UNITS) - set(table), set(table) - set(FACT_UNITS))
    out = {}
    for name, entry in table.items():
        where = f"expect.toml facts.{name}"
        if not isinstance(entry, dict):
            raise presets.DataError(f"{where} must be a table with value, unit, kind and source")
        presets._no_gaps(where, {"value", "unit", "kind", "source"} - set(entry),
                         set(entry) - {"value", "unit", "kind", "source", "where", "note"})
        unit = FACT_UNITS[name]
        value = presets._number(where, entry["value"], 1 if unit == "fraction" else FACT_MOST)
        if entry["unit"] != unit:
            raise presets.DataError(f"{where}.unit must be {unit!r}, got {entry['unit']!r}")
        if entry["kind"] not in KINDS:
            raise presets.DataError(f"{where}.kind must be one of {KINDS}, got {entry['kind']!r}")
        if entry["source"] not in presets.bib_keys():
            raise presets.DataError(f"{where}.source is not a key of references.bib")
        if entry["kind"] == "estimate" and not entry.get("note"):
            raise presets.DataError(f"{where}.note must say how an estimate was made")
        out[name] = Fact(value, unit, entry["kind"], entry["source"], str(entry.get("where", "")),
                         str(entry.get("note", "")))
    return out


@functools.cache
def _kernels() -> tuple:
    entries = presets._read(DATA).get("kernel", [])
    if not isinstance(entries, list):
        raise presets.DataError("expect.toml kernel must be an array of tables ([[kernel]])")
    seen = set()
    for i, k in enumerate(entries):
        where = f"expect.toml kernel[{i}]"
        if not isinstance(k, dict):
            raise presets.DataError(f"{where} must be a table with source, what and what the kernel does")
        presets._no_gaps(where, {"source", "what"} - set(k), set(k) - {"source", "what"} - set(KERNEL_NOTES))
        if k["source"] not in presets.bib_keys():
            raise presets.DataError(f"{where}.source is not a key of references.bib")
        if not isinstance(k["what"], str) or not k["what"]:
            raise presets.DataError(f"{where}.what must be a record's text or \"*\", got {k['what']!r}")
        if set(k) == {"source", "what"}:
            raise presets.DataError(f"{where} says nothing of the kernel: give one of {sorted(KERNEL_NOTES)}")
        for key in set(k) & set(KERNEL_NOTES):
            if k[key] not in KERNEL_NOTES[key] or isinstance(k[key], bool) != isinstance(KERNEL_NOTES[key][0], bool):
                raise presets.DataError(f"{where}.{key} must be one of {KERNEL_NOTES[key]}, got {k[key]!r}")
        if (k["source"], k["what"]) in seen:
            raise presets.DataError(f"{where} repeats an entry for {k['source']!r}, {k['what']!r}")
        seen.add((k["source"], k["what"]))
    return tuple(entries)


def kernel_notes(source: str, what: str) -> dict:
    """What `data/expect.toml` says a published record's kernel does beyond its run: the
    record's `source` (a key of references.bib) and `what` (its text)."""
    if not isinstance(source, str) or source not in presets.bib_keys():
        raise ValueError(f"source must be a key of references.bib (a record's source), got {source!r}")
    if not isinstance(what, str):
        raise ValueError(f"what must be a record's text of what it measured, got {what!r}")
    out = {}
    for k in _kernels():
        if k["source"] == source and k["what"] in ("*", what):
            out.update({key: v for key, v in k.items() if key not in ("source", "what")})
    return out


@dataclass(frozen=True)
class Launch:
    """How a kernel runs, beyond its bytes: `threads`, `registers` (per thread) and `smem`
    (bytes) per block, `blocks` in the grid; `rounds`, the rounds of independent loads each warp
    waits on in turn; `load_bytes`, the bytes all its global loads request (sectors x 32 B; 0:
    the workload's L2 bytes, every load beyond L1); `tags`, L1 tag-stage clocks of its global
    requests; `lsu` and `instructions`, warp instructions to the load/store port and in all;
    `mma_share`, the share of the tensor-core peak its instructions can reach; `timed`, True for
    a kernel timed one launch after another (a library's), which waits at least its host launch."""

    threads: int
    blocks: int
    registers: int = DEFAULT_REGISTERS
    smem: int = 0
    rounds: float = 0.0
    tags: float = 0.0
    lsu: float = 0.0
    instructions: float = 0.0
    mma_share: float = 1.0
    load_bytes: float = 0.0
    timed: bool = False

    def __post_init__(self):
        checked = {"threads": _check.one("threads", self.threads), "blocks": _check.one("blocks", self.blocks),
                   "registers": _check.one("registers", self.registers, most_registers()),
                   "smem": _check.one("smem", self.smem, zero=True),
                   **{name: _check.real(name, getattr(self, name), least=0)
                      for name in ("rounds", "tags", "lsu", "instructions", "load_bytes")},
                   "mma_share": _check.real("mma_share", self.mma_share, most=1),
                   "timed": _check.flag("timed", self.timed)}
        if checked["mma_share"] <= 0:
            raise ValueError(f"mma_share must be a finite number > 0 and <= 1, got {self.mma_share!r}")
        for name, value in checked.items():
            object.__setattr__(self, name, value)


@dataclass(frozen=True)
class Expectation:
    """The expected `time` (s) and the `bound` (s, `predict`'s) of a workload on `gpu`;
    `bound_part` the part that sets the bound, `limiter` what holds the expected time (a
    part of the bound or one of LIMITERS), `share` the achievable share applied (estimated
    on the records' 'estimate' half), `parts` each mechanism's time before it (s; 'ramp' is
    added to the slowest), `reason` one line."""

    time: float
    bound: float
    bound_part: str
    limiter: str
    share: float
    parts: dict
    reason: str
    gpu: str = ""
    latency: dict = field(default_factory=dict)
    """Little's law's figures (`latency_time`): bytes in flight, unloaded and loaded latency (s)."""

    def __post_init__(self):
        for name in ("time", "bound"):  # a kernel that moves nothing is bound by nothing
            _check.real(name, getattr(self, name), least=0)
        if not 0 < _check.real("share", self.share, most=1):
            raise ValueError(f"share must be a finite number > 0 and <= 1, got {self.share!r}")
        parts = self.bound_part.split("+") if isinstance(self.bound_part, str) else [self.bound_part]
        for part in parts:
            _check.choice("bound_part", part, BOUND_PARTS)
        _check.choice("limiter", self.limiter, HOLDERS)
        if not isinstance(self.parts, dict) or not all(_check.real(f"parts[{k!r}]", v, least=0) >= 0
                                                       for k, v in self.parts.items()):
            raise TypeError(f"parts must be a dict of mechanism to seconds, got {self.parts!r}")


def latency(gpu, level: str = "l2") -> Fact:
    """`level`'s load latency in clocks: the GPU's own measurement, else that of a preset of
    the same compute capability, else of the same major version (the same generation)."""
    g = presets.gpu(gpu)
    _check.choice("level", level, presets.TABLES["latency"][0])
    if level in g.latency:
        return g.latency[level]
    for same in (lambda o: o.capability.version == g.capability.version,
                 lambda o: o.capability.version[0] == g.capability.version[0]):
        for name in presets.preset_names():
            other = presets.gpu(name)
            if same(other) and level in other.latency:
                f = other.latency[level]
                return replace(f, kind="estimate", note=f"{other.name}'s ({f.note}), the nearest part measured")
    raise ValueError(f"level must be a level measured on a preset of {g.name}'s generation, got {level!r}")


def l1_latency(gpu) -> Fact:
    """An L1 hit's latency in clocks: an estimate, the preset's shared-memory latency (`latency`):
    the L1 and shared memory are one SRAM behind one data path (chapter 3), and a hit adds only
    its tag lookup to that path, so it takes at least this long."""
    g = presets.gpu(gpu)
    try:
        f = latency(g, "smem")
    except ValueError:  # none measured on its generation: the newest earlier generation's
        older = [presets.gpu(n) for n in presets.preset_names() if "smem" in presets.gpu(n).latency
                 and presets.gpu(n).capability.version < g.capability.version]
        if not older:
            raise ValueError(f"gpu: no preset of {g.name}'s generation or an earlier one measures the shared-memory "
                             f"latency an L1 hit is estimated from (compute capability {g.capability.name})") from None
        other = max(older, key=lambda o: o.capability.version)
        f = replace(other.latency["smem"], note=f"{other.name}'s, an earlier generation's ({other.latency['smem'].note})")
    return replace(f, kind="estimate", note=f"the shared-memory latency ({f.note}): one SRAM and data path with the L1")


@functools.cache
def most_registers() -> int:
    """The most registers a thread may have on any compute capability (capabilities.toml)."""
    return max(c.max_registers_per_thread for c in presets.capabilities().values())


def gemm_launch(m, n, k, block=None, thread=(1, 1), layout: str = "strided", coalesced: bool = True,
                registers: int | None = None) -> Launch:
    """The `Launch` of an FP32 GEMM as `gm.gemm` shapes it (one thread per result for the
    naive kernel, `block` and `thread` tiles otherwise): a naive warp waits once per step of
    k (the block's first touch of a row of B), a tiled one once per tile; the naive kernel
    with `coalesced=False` reads A down a column, 32 lines of one set per load. A tile's loads
    are independent of one another (each goes to shared memory): one round per tile, however
    many loads a thread makes of it."""
    m, n, k = (_check.one(name, v) for name, v in (("m", m), ("n", n), ("k", k)))
    coalesced = _check.flag("coalesced", coalesced)
    if registers is not None:
        registers = _check.one("registers", registers, most_registers())
    gemm(m, n, k, block, thread, layout=layout)  # refuses the tiles and layouts gm.gemm refuses
    thread = _check.one_pair("thread", thread)
    fma_warps = m * n * k / WARP
    if block is None:
        warps = math.ceil(m * n / WARP)
        tags = warps * k * (2 if coalesced else WARP + 1)
        lsu = warps * (2 * k + 1)
        sectors = (1 if coalesced else WARP) + 4  # a step of k: A's word (a broadcast, or 32 rows), B's 128 B row
        return Launch(256, math.ceil(m * n / 256), registers or DEFAULT_REGISTERS, 0, rounds=k, tags=tags, lsu=lsu,
                      instructions=fma_warps + lsu, load_bytes=32.0 * warps * k * sectors)
    b_m, b_n = _check.one_pair("block", block[:2])
    b_k = _check.one("block[2]", block[2]) if len(block) == 3 else 1
    t_m, t_n = thread
    threads = b_m * b_n // (t_m * t_n)
    tiles = math.ceil(k / b_k)
    blocks = math.ceil(m / b_m) * math.ceil(n / b_n)
    warps = blocks * math.ceil(threads / WARP)
    vector = 4 if layout == "warp_tiled" else 1
    staged = (b_m + b_n) * b_k / threads / vector  # loads and as many stores per thread per tile
    lsu = warps * tiles * (2 * staged + b_k * operand_load_instructions(thread, layout))
    regs = registers or min(255, t_m * t_n + t_m + t_n + 24)
    return Launch(threads, blocks, regs, 4 * (b_m + b_n) * b_k, rounds=tiles, tags=warps * tiles * 2 * staged,
                  lsu=lsu, instructions=fma_warps + lsu, load_bytes=4.0 * blocks * tiles * (b_m + b_n) * b_k)


LIBRARY_ROWS = (64, 128, 256)
"""The rows of a tile `library_tile` tries for any m (DeepGEMM's sm90 heuristic; 16 and 32 too
for an m no larger)."""
LIBRARY_COLUMNS = tuple(range(16, 257, 16))
"""The columns of a tile `library_tile` tries: 16 to 256 in steps of 16."""


def library_tile(m, n, k, gpu, dtype: str = "fp16") -> tuple[int, int]:
    """The output tile (rows, columns) a library block computes for an m x n x k GEMM on `gpu`,
    chosen as DeepGEMM chooses it for Hopper (deepseek2025deepgemm: `get_layout_candidates` and
    `get_layout_info` of csrc/jit_kernels/heuristics/sm90.hpp): 64 or 128 rows (16 and 32 too
    for a skinny m, 256 where the columns are at most 128), 16 to 256 columns in steps of 16;
    the tile whose blocks together fetch the fewest bytes from L2 (each k (rows + columns)
    operand elements and its tile of C), over the share of the SMs its last wave keeps busy.
    A skinny GEMM so gets narrow tiles that fill the SMs; a large one the largest tiles."""
    m, n, k = (_check.one(name, v) for name, v in (("m", m), ("n", n), ("k", k)))
    sms = presets.gpu(gpu).sms.value
    s = _check.dtype_bytes(dtype, tuple(_check.DTYPE_BYTES))
    rows = LIBRARY_ROWS + tuple(r for r in (16, 32) if m <= r)
    best = None
    for b_m in rows:
        for b_n in LIBRARY_COLUMNS:
            if b_m > 128 and b_n > 128:
                continue
            blocks = math.ceil(m / b_m) * math.ceil(n / b_n)
            busy = blocks / (math.ceil(blocks / sms) * sms)  # the waves' share of the SMs kept busy
            cost = blocks * (k * (b_m + b_n) + b_m * b_n) * s / busy
            if best is None or cost < best[0]:
                best = (cost, (b_m, b_n))
    return best[1]


def trace_launch(trace, flops: float = 0.0, registers: int = DEFAULT_REGISTERS) -> Launch:
    """The `Launch` of a traced run (`gm.lab.trace`): its threads and blocks, its load and store
    instructions, their L1 tag clocks (a warp's sectors over the tag stage's 4 sectors per
    line, at least one), the bytes its global loads request (sectors x 32 B), and its rounds per
    warp (`Trace.rounds`: a site run again in the open round starts one, a phase's loads staged
    into shared memory are one round together, as a tile load's loads are independent).
    `flops` counts as FMAs."""
    flops = _check.real("flops", flops, least=0)
    registers = _check.one("registers", registers)
    if not hasattr(trace, "sites") or not hasattr(trace, "scale"):
        raise TypeError(f"trace must be the Trace gm.lab.trace returns, got {type(trace).__name__}")
    threads = int(np.prod(trace.block))
    loads = [s for s in trace.sites if s.space == "global" and not s.write]
    rounds = trace.rounds / (trace.blocks_traced * math.ceil(threads / WARP))
    lsu = trace.scale * sum(s.instructions for s in trace.sites)
    tags = trace.scale * sum(max(s.instructions, s.sectors / 4) for s in trace.sites if s.space == "global")
    load_bytes = trace.scale * 32.0 * sum(s.sectors for s in loads)
    return Launch(threads, trace.blocks, registers, 0, rounds=rounds, tags=tags, lsu=lsu,
                  instructions=lsu + flops / 2 / WARP, load_bytes=load_bytes)


def _erlang_b(n: int, a: float) -> float:
    """Erlang's loss formula B(n, a) = (a^n / n!) / sum over k <= n of a^k / k!, in logarithms:
    the probability that the machine-repairman queue's server idles (`served`)."""
    logs = np.arange(n + 1) * math.log(a) - _lgamma_range(n)
    top = logs.max()
    return float(math.exp(logs[-1] - top) / np.exp(logs - top).sum())


def _lgamma_range(n: int) -> np.ndarray:
    """lgamma(k + 1) for k = 0 .. n (log k!), by a cumulative sum of logs."""
    return np.concatenate(([0.0], np.cumsum(np.log(np.arange(1, n + 1, dtype=float)))))


def served(population: float, think: float, service: float) -> float:
    """Throughput (requests/s) of `population` requests circulating between a delay of `think`
    seconds (the unloaded latency) and one server taking `service` seconds each (a level's
    bandwidth): the finite-population single-server queue M/M/1//N (the machine-repairman
    model), X = (1 - B(N, think/service)) / service; at most 1/service and N/think. The loaded
    latency is N/X. Chapter 98."""
    for name, v in (("population", population), ("think", think), ("service", service)):
        if _check.real(name, v, least=0) <= 0:
            raise ValueError(f"{name} must be a finite number > 0, got {v!r}")
    low = math.floor(population)  # between whole populations, linearly (X(0) = 0)
    rate = [(1.0 - _erlang_b(n, think / service)) / service if n else 0.0 for n in (low, low + 1)]
    return rate[0] + (population - low) * (rate[1] - rate[0])


SECTOR = 32
"""Bytes of one request in flight (a sector), the queue's unit (`served`)."""


def _launch(launch, none: bool = True) -> None:
    """Refuse a `launch` that is not a `Launch` (nor None, where `none`)."""
    if not isinstance(launch, Launch) and not (none and launch is None):
        accepted = " or None" if none else ""
        raise TypeError(f"launch must be a gm.expected.Launch (gemm_launch, trace_launch){accepted}, "
                        f"got {type(launch).__name__}")


def latency_time(work: Workload, gpu, launch: Launch, warps_per_sm: float) -> dict:
    """Little's law on bytes for `work` run as `launch` on `gpu` with `warps_per_sm` warps on each
    SM: {'time' (s), 'in_flight' (bytes, the GPU), 'unloaded' and 'loaded' latency (s), 'level'
    that queues}. A round's sectors come from L1 (hits), L2 and HBM in the shares of the
    workload's bytes, and it waits its slowest: the L1-hit latency only when all of them hit; the loaded latency is the machine-repairman queue's at the busier of L2 and HBM."""
    if not isinstance(work, Workload):
        raise TypeError(f"work must be a Workload (gm.gemm, gm.vector_add, ...), got {type(work).__name__}")
    g = presets.gpu(gpu)
    p = predict(work, g)
    _launch(launch, none=False)
    if _check.real("warps_per_sm", warps_per_sm, least=0) <= 0:
        raise ValueError(f"warps_per_sm must be a finite number > 0, got {warps_per_sm!r}")
    requested = launch.load_bytes or float(work.bytes["l2"])
    warps = launch.blocks * math.ceil(launch.threads / WARP)
    if not launch.rounds or not requested:
        return {"time": 0.0, "in_flight": 0.0, "unloaded": 0.0, "loaded": 0.0, "level": ""}
    per_round = requested / (warps * launch.rounds)  # bytes of one round of one warp
    in_flight = g.sms.value * warps_per_sm * per_round
    hbm, l2 = (min(requested, float(work.bytes[level])) for level in ("hbm", "l2"))
    l2 = max(l2, hbm)
    clock = g.clock.value
    # a round waits its slowest load: of its sectors, each from HBM, L2 or L1 in the shares of the bytes
    sectors = max(1.0, per_round / SECTOR)
    beyond_l1 = 1 - (1 - l2 / requested) ** sectors  # some sector of the round comes from L2 or HBM
    from_hbm = 1 - (1 - hbm / requested) ** sectors
    unloaded = (from_hbm * latency(g, "hbm").value + (beyond_l1 - from_hbm) * latency(g, "l2").value
                + (1 - beyond_l1) * l1_latency(g).value) / clock
    level = max(("l2", "hbm"), key=lambda name: float(p.level_times[name]))
    service = SECTOR * float(p.level_times[level]) / requested  # seconds per requested sector at that level's peak
    rate = served(in_flight / SECTOR, unloaded, service) if service > 0 else in_flight / SECTOR / unloaded
    return {"time": requested / SECTOR / rate, "in_flight": in_flight, "unloaded": unloaded,
            "loaded": in_flight / SECTOR / rate, "level": level}


def _launch_cost(g) -> Fact:
    """The host launch of one kernel by the CUDA driver (`overhead.launch_cost`); a GPU with
    none published takes the nearest published one, said to be an estimate (a host cost)."""
    from .overhead import launch_cost, launch_costs
    try:
        c = launch_cost(g, "driver")
        return Fact(c.seconds, "s", c.kind, c.source, c.where, c.note)
    except ValueError:
        c = next(c for c in launch_costs() if c.path == "driver")
        return Fact(c.seconds, "s", "estimate", c.source, c.where, f"{c.gpu}'s driver launch: a host cost, the one published")


def lane_issue_rate(gpu) -> float:
    """Lane instructions `gpu` issues a second at its boost clock: SMs x `issue_per_sm` warp
    instructions a clock x 32 lanes. Chapter 9."""
    g = presets.gpu(gpu)
    return g.sms.value * facts()["issue_per_sm"].value * WARP * g.clock.value


def dequantise_time(weights: float, weight: str, gpu) -> float:
    """Seconds the lanes of `gpu` take to issue the instructions that turn `weights` weights of
    format `weight` (fp16 and bf16: none) into the math's format (`data/expect.toml`'s
    `dequantise_<format>`, instructions per weight, an estimate) at `lane_issue_rate`. Chapter
    9's quantised decode."""
    weights = _check.real("weights", weights, least=0)
    _check.choice("weight", weight, WEIGHT_BYTES)
    per = facts().get(f"dequantise_{weight}")
    return 0.0 if per is None else weights * per.value / lane_issue_rate(gpu)


def _mechanisms(work: Workload, gpu, launch: Launch | None):
    """(prediction, {part or limiter: seconds}, waves factor, occupancy limiter, additive seconds, latency)."""
    p = predict(work, gpu)
    g = p.gpu
    parts = {name: float(t) for name, t in p.times.items()}
    if launch is None:
        return p, parts, 1.0, "", 0.0, {}
    sms, clock = g.sms.value, g.clock.value
    occ = occupancy(g, launch.threads, launch.registers, launch.smem)
    resident = float(occ.warps)
    warps = launch.blocks * math.ceil(launch.threads / WARP)
    per_sm = min(resident, warps / sms)
    if launch.mma_share < 1 and work.math != "fp32":
        parts["compute"] /= launch.mma_share
    f = facts()
    hold = "occupancy" if str(occ.limiter) in ("registers", "smem") else "latency"
    lat = latency_time(work, g, launch, per_sm)
    parts[hold] = lat["time"]
    parts["uncoalesced"] = launch.tags / (sms * f["tags_per_clock"].value * clock) if launch.tags else 0.0
    if launch.tags and launch.lsu and launch.tags > launch.lsu:  # one set: a clock per line
        parts["uncoalesced"] = launch.tags / (sms * clock)
    parts["issue"] = max(launch.instructions / (sms * f["issue_per_sm"].value * clock),
                         launch.lsu / (sms * f["lsu_per_sm"].value * clock))
    if launch.timed:
        parts["launch"] = _launch_cost(g).value
    per_wave = sms * float(occ.blocks)
    if launch.blocks < per_wave:  # one wave: an SM's rate is split among its blocks, spread over the SMs
        waves = sms * math.ceil(launch.blocks / sms) / launch.blocks
    else:
        waves = math.ceil(launch.blocks / per_wave) * per_wave / launch.blocks
    ramp = 2 * latency(g, "hbm").value / clock  # the first tile's loads before any math, the last one's stores after
    return p, parts, waves, str(occ.limiter), ramp, lat


WAITS = ("latency", "occupancy", "launch")
"""Mechanisms timed from the warps each SM keeps, idle SMs already counted: no waves factor."""


def _limit(parts: dict, waves: float) -> tuple[str, float]:
    """(what holds the kernel, seconds): the slowest mechanism, the throughputs times the waves
    factor; 'waves' when that factor, more than 15 %, makes a throughput the slowest."""
    timed = {name: t * (1.0 if name in WAITS else waves) for name, t in parts.items()}
    name = max(timed, key=timed.get)
    return ("waves" if waves > 1.15 and name not in WAITS else name), timed[name]


def read_time(gpu, nbytes, chunk=None, threads=None) -> float:
    """Expected seconds to read `nbytes` again right after reading it (a benchmark's second run),
    at the bound's rates through caches that keep the lines used most recently, as real ones
    roughly do (`gpumodel.waves.warm_read_time` with `cache="recent"`). Chapter 98."""
    from .waves import warm_read_time  # the bound's rule, beside which this is the expected one

    return float(warm_read_time(gpu, nbytes, chunk, threads, cache="recent"))


REASONS = {"latency": "too few bytes in flight per SM for the loaded latency (Little's law): warps x one round of independent loads",
           "occupancy": "{occ} limit the warps an SM keeps, too few bytes in flight for the loaded latency",
           "uncoalesced": "uncoalesced global loads: the L1 tag stage takes a clock per line",
           "issue": "instruction issue: four warp instructions a clock per SM, one a load or store",
           "dequantise": "the instructions that dequantise the weights, at the SMs' issue rate",
           "waves": "the grid's last wave leaves SMs idle",
           "launch": "a kernel shorter than its host launch waits for the next launch"}


def expect(work, gpu, launch: Launch | None = None, flops: float = 0.0, shares: dict | None = None,
           dequantise: float = 0.0) -> Expectation:
    """The expected time of `work` (a `Workload`, or a lab `Trace` with its `flops`) on `gpu`
    (see the module doc); `launch` describes how it runs (`gemm_launch`, `trace_launch`;
    without one only the bound's parts and `dequantise` count). `shares` maps a limiter class
    (`share_class`) to its achievable share; none given, the mechanisms alone (`gm.expect`
    passes the shares estimated on the records' 'estimate' half, `gpumodel.published.shares`).
    `dequantise`, seconds of dequantising instructions (`dequantise_time`)."""
    flops = _check.real("flops", flops, least=0)
    dequantise = _check.real("dequantise", dequantise, least=0)
    _launch(launch)
    if shares is not None and not isinstance(shares, dict):
        raise TypeError(f"shares must be a dict of share class to share, or None, got {type(shares).__name__}")
    for name, share in (shares or {}).items():
        if not isinstance(name, str) or name not in CLASSES:
            raise ValueError(f"shares must map share classes {CLASSES} to shares, got the key {name!r}")
        if _check.real(f"shares[{name!r}]", share, most=1) <= 0:
            raise ValueError(f"shares[{name!r}] must be a finite number > 0 and <= 1, got {share!r}")
    if not isinstance(work, Workload):
        if not hasattr(work, "sites") or not hasattr(work, "workload"):
            raise TypeError(f"work must be a Workload or a lab Trace, got {type(work).__name__}")
        launch = launch or trace_launch(work, flops)
        work = work.workload(flops)
    swept = max([np.size(work.flops), *map(np.size, work.bytes.values())])
    if swept > 1:
        raise ValueError(f"work must be one configuration, not a sweep of {swept:,} ({work.name}): gm.expect takes one "
                         "size at a time (gm.predict takes a sweep)")
    p, parts, waves, occ, ramp, lat = _mechanisms(work, gpu, launch)
    if dequantise:
        parts["dequantise"] = dequantise
    limiter, t = _limit(parts, waves)
    if limiter in WAITS[:2] and lat["loaded"] >= 2 * lat["unloaded"]:  # queueing, not latency: the level's bandwidth
        limiter = lat["level"]
    s = (shares or {}).get(share_class(limiter, work.math), 1.0)
    why = REASONS.get(limiter, f"the bound's {limiter}").format(occ=occ)
    reason = f"{why}; at {s:.0%} of that, the share such kernels reach on the records" if s != 1 else why
    time = t / s + (0.0 if limiter == "launch" else ramp)
    return Expectation(time, float(p.time), str(p.bound), limiter, s, {**parts, "ramp": ramp}, reason, p.gpu.name, lat)


SM_PARTS = ("compute", "sfu", "registers", "smem") + tuple(name for name in LIMITERS if name != "uncoalesced")
"""Limiters inside the SM, one achievable share for all: its pipelines issue, load and wait
together, so no one of them runs at its own peak while the others idle. The L1 tag stage
('uncoalesced') is not one of them: a warp's lines of one set queue there one a clock,
whatever the pipelines do, so it has a class of its own."""


CLASSES = ("tensor", "sm", "uncoalesced") + tuple(p for p in BOUNDS if p not in SM_PARTS) + ("overhead", "link")
"""The classes an achievable share is estimated for (`share_class`); 'overhead' is a launch
record's, 'link' a collective's or a step's past one GPU held by its collectives (`published.compare`)."""


SM_FAMILY = "ga10x"
"""The SM design whose SM-parts share ('sm') is estimated apart from the others': GA10x's
(nvidia2021ga102), kept by AD10x (nvidia2022ada) and later workstation and GeForce parts. Of
its 128 FP32 lanes half sit on a datapath that INT32 shares, and it keeps 1,536 threads where
the data-centre SMs (GA100, GH100, GB100) keep 2,048; SGEMM kernels on it reach a smaller share
of what the mechanisms allow (chapter 98). The Guide's figures tell the two apart (`sm_family`)."""


def sm_family(gpu) -> str:
    """`SM_FAMILY` for a GPU of that SM design (128 FP32 lanes and 1,536 threads an SM, as the
    CUDA Guide gives them), "" for any other."""
    c = presets.gpu(gpu).capability
    return SM_FAMILY if (c.fp32_lanes_per_sm, c.max_threads_per_sm) == (128, 1536) else ""


def share_class(limiter: str, math_: str) -> str:
    """The class an achievable share is estimated for: the tensor cores ('tensor', their
    kernels' waves too), the SM's own parts ('sm'), the L1 tag stage ('uncoalesced'), each
    level beyond it, a launch's overhead, the links between GPUs ('link')."""
    _check.choice("limiter", limiter, HOLDERS)
    _check.choice("math_", math_, MATH)
    if limiter == "launch":
        return "overhead"
    if limiter in ("uncoalesced", "link"):
        return limiter
    if limiter in SM_PARTS:
        return "tensor" if math_ != "fp32" and limiter in ("compute", "waves") else "sm"
    return limiter



