"""The expected time: what a kernel like this gets, beside the bound no kernel can beat.

`expect(workload_or_trace, gpu, launch)` starts from the bound's parts (`predict`: the
arithmetic, the special functions, each level's bytes over its bandwidth) and adds what holds
real kernels below it, each from a sourced hardware fact (`data/expect.toml`, the presets'
latencies, the occupancy limits):

- latency: each warp waits the L2 latency once per round of loads it has in flight together
  (a step of the naive GEMM's k loop, a tile of a tiled one); the SM hides it only with the
  other warps occupancy lets it keep (Little's law, `GPU.in_flight`'s rule: requests in
  flight = throughput x latency). Named 'occupancy' when registers or shared memory set the
  warps, 'latency' otherwise.
- uncoalesced: the L1 tag stage resolves `tags_per_clock` lines a clock, lines of one set
  one a clock: a warp reading 32 rows 16 KB apart takes 32 clocks of it.
- issue: four warp instructions a clock per SM, one of them a load or store (the MIO's LSU
  port); and the tensor cores at the share of their peak the kernel's instructions reach.
- waves: a grid of fewer blocks than whole waves leaves SMs idle in the last one (under one
  wave, the SMs without a block); the latency already counts only the warps there are.

Then each limiter's achievable share is estimated from the published records (`half`): on
the 'estimate' half, the median of mechanism-over-measured per limiter; the 'judge' half
is never used to estimate. Chapters 3, 4, 5 and 98.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, replace

import numpy as np

from . import _check, presets
from .hardware import WARP, Fact
from .model import predict
from .occupancy import occupancy
from .workloads import Workload

DATA = presets.DATA / "expect.toml"
LIMITERS = ("latency", "occupancy", "uncoalesced", "issue", "waves")
"""What can hold a kernel below its bound, beside the bound's own parts (`model.BOUNDS`)."""
DEFAULT_REGISTERS = 32
"""Registers per thread assumed where neither a compiler report nor the caller gives them."""


@functools.cache
def facts() -> dict:
    """The sourced facts of `data/expect.toml` by name, as `Fact`s (value as stated)."""
    data = presets._read(DATA)
    out = {}
    for name, entry in data["facts"].items():
        if entry["source"] not in presets.bib_keys():
            raise presets.DataError(f"expect.toml facts.{name}.source is not a key of references.bib")
        out[name] = Fact(float(entry["value"]), entry["unit"], entry["kind"], entry["source"], entry.get("where", ""),
                         entry.get("note", ""))
    return out


@functools.cache
def _kernels() -> tuple:
    return tuple(presets._read(DATA).get("kernel", ()))


def kernel_notes(source: str, what: str) -> dict:
    """What `data/expect.toml` says a published record's kernel does beyond its run."""
    out = {}
    for k in _kernels():
        if k["source"] == source and k["what"] in ("*", what):
            out.update({key: v for key, v in k.items() if key not in ("source", "what")})
    return out


@dataclass(frozen=True)
class Launch:
    """How a kernel runs, beyond its bytes: `threads`, `registers` (per thread) and `smem`
    (bytes) per block, `blocks` in the grid; `rounds`, the rounds of loads each warp waits on
    in turn (the L2 latency each); `tags`, L1 tag-stage clocks of its global requests;
    `lsu` and `instructions`, warp instructions to the load/store port and in all;
    `mma_share`, the share of the tensor-core peak its instructions can reach."""

    threads: int
    blocks: float
    registers: int = DEFAULT_REGISTERS
    smem: int = 0
    rounds: float = 0.0
    tags: float = 0.0
    lsu: float = 0.0
    instructions: float = 0.0
    mma_share: float = 1.0


@dataclass(frozen=True)
class Expectation:
    """The expected `time` (s) and the `bound` (s, `predict`'s) of a workload on `gpu`;
    `bound_part` the part that sets the bound, `limiter` what holds the expected time (a
    part of the bound or one of LIMITERS), `share` the achievable share applied (estimated
    on the records' 'estimate' half), `parts` each mechanism's time before it (s), `reason`
    one line."""

    time: float
    bound: float
    bound_part: str
    limiter: str
    share: float
    parts: dict
    reason: str
    gpu: str = ""


def latency(gpu, level: str = "l2") -> Fact:
    """`level`'s load latency in clocks: the GPU's own measurement, else that of a preset of
    the same compute capability, else of the same major version (the same generation)."""
    g = presets.gpu(gpu)
    if level in g.latency:
        return g.latency[level]
    for same in (lambda o: o.capability.version == g.capability.version,
                 lambda o: o.capability.version[0] == g.capability.version[0]):
        for name in presets.preset_names():
            other = presets.gpu(name)
            if same(other) and level in other.latency:
                f = other.latency[level]
                return replace(f, kind="estimate", note=f"{other.name}'s ({f.note}), the nearest part measured")
    raise ValueError(f"no preset of {g.name}'s generation has a measured {level!r} latency")


def gemm_launch(m, n, k, block=None, thread=(1, 1), layout: str = "strided", coalesced: bool = True,
                registers: int | None = None) -> Launch:
    """The `Launch` of an FP32 GEMM as `gm.gemm` shapes it (one thread per result for the
    naive kernel, `block` and `thread` tiles otherwise): a naive warp waits once per step of
    k (the block's first touch of a row of B), a tiled one once per tile; the naive kernel
    with `coalesced=False` reads A down a column, 32 lines of one set per load."""
    m, n, k = (int(_check.one(name, v)) for name, v in (("m", m), ("n", n), ("k", k)))
    coalesced = _check.flag("coalesced", coalesced)
    fma_warps = m * n * k / WARP
    if block is None:
        warps = math.ceil(m * n / WARP)
        tags = warps * k * (2 if coalesced else WARP + 1)
        lsu = warps * (2 * k + 1)
        return Launch(256, math.ceil(m * n / 256), registers or DEFAULT_REGISTERS, 0, rounds=k, tags=tags, lsu=lsu,
                      instructions=fma_warps + lsu)
    b_m, b_n = block[:2]
    b_k = block[2] if len(block) == 3 else 1
    t_m, t_n = thread
    threads = b_m * b_n // (t_m * t_n)
    tiles = math.ceil(k / b_k)
    blocks = math.ceil(m / b_m) * math.ceil(n / b_n)
    warps = blocks * math.ceil(threads / WARP)
    vector = 4 if layout == "warp_tiled" else 1
    staged = (b_m + b_n) * b_k / threads / vector  # loads and as many stores per thread per tile
    per_k = {"strided": t_m + t_n, "strided_a128": t_m / 4 + t_n, "warp_tiled": (t_m + t_n) / 4}[layout]
    lsu = warps * tiles * (2 * staged + b_k * per_k)
    regs = registers or min(255, t_m * t_n + t_m + t_n + 24)
    return Launch(threads, blocks, regs, 4 * (b_m + b_n) * b_k, rounds=tiles, tags=warps * tiles * 2 * staged,
                  lsu=lsu, instructions=fma_warps + lsu)


def trace_launch(trace, flops: float = 0.0, registers: int = DEFAULT_REGISTERS) -> Launch:
    """The `Launch` of a traced run (`gm.lab.trace`): its threads and blocks, its load and store
    instructions, their L1 tag clocks (a warp's sectors over the tag stage's 4 sectors per
    line, at least one), and its rounds: global load sites a warp runs equally often are one
    loop's, their loads in flight together, so each distinct count per warp is that many rounds
    (a site run several times a pass counts a round each: a trace cannot tell an unrolled loop's
    independent loads from dependent ones). `flops` counts as FMAs."""
    threads = int(np.prod(trace.block))
    loads = [s for s in trace.sites if s.space == "global" and not s.write]
    warps = trace.blocks * math.ceil(threads / WARP)
    rounds = sum({round(trace.scale * s.instructions / warps, 9) for s in loads})
    lsu = trace.scale * sum(s.instructions for s in trace.sites)
    tags = trace.scale * sum(max(s.instructions, s.sectors / 4) for s in trace.sites if s.space == "global")
    return Launch(threads, trace.blocks, registers, 0, rounds=rounds, tags=tags, lsu=lsu,
                  instructions=lsu + flops / 2 / WARP)


def _mechanisms(work: Workload, gpu, launch: Launch | None):
    """(prediction, {part or limiter: seconds}, waves factor, occupancy limiter)."""
    p = predict(work, gpu)
    g = p.gpu
    parts = {name: float(t) for name, t in p.times.items()}
    if launch is None:
        return p, parts, 1.0, ""
    sms, clock = g.sms.value, g.clock.value
    occ = occupancy(g, launch.threads, launch.registers, launch.smem)
    resident = float(occ.warps)
    warps = launch.blocks * math.ceil(launch.threads / WARP)
    per_sm = min(resident, warps / sms)
    if launch.mma_share < 1 and work.math != "fp32":
        parts["compute"] /= launch.mma_share
    f = facts()
    hold = "occupancy" if str(occ.limiter) in ("registers", "smem") else "latency"
    parts[hold] = launch.rounds * warps * latency(g, "l2").value / (sms * per_sm * clock)
    parts["uncoalesced"] = launch.tags / (sms * f["tags_per_clock"].value * clock) if launch.tags else 0.0
    if launch.tags and launch.lsu and launch.tags > launch.lsu:  # one set: a clock per line
        parts["uncoalesced"] = launch.tags / (sms * clock)
    parts["issue"] = max(launch.instructions / (sms * f["issue_per_sm"].value * clock),
                         launch.lsu / (sms * f["lsu_per_sm"].value * clock))
    per_wave = sms * float(occ.blocks)
    if launch.blocks < per_wave:  # one wave: an SM's rate is split among its blocks, spread over the SMs
        waves = sms * math.ceil(launch.blocks / sms) / launch.blocks
    else:
        waves = math.ceil(launch.blocks / per_wave) * per_wave / launch.blocks
    return p, parts, waves, str(occ.limiter)


WAITS = ("latency", "occupancy")
"""Mechanisms timed from the warps each SM keeps, idle SMs already counted: no waves factor."""


def _limit(parts: dict, waves: float) -> tuple[str, float]:
    """(what holds the kernel, seconds): the slowest mechanism, the throughputs times the waves
    factor; 'waves' when that factor, more than 15 %, makes a throughput the slowest."""
    timed = {name: t * (1.0 if name in WAITS else waves) for name, t in parts.items()}
    name = max(timed, key=timed.get)
    return ("waves" if waves > 1.15 and name not in WAITS else name), timed[name]


REASONS = {"latency": "warps wait the L2 latency each round of loads, too few of them to hide it",
           "occupancy": "{occ} limit the warps an SM keeps, too few to hide the L2 latency",
           "uncoalesced": "uncoalesced global loads: the L1 tag stage takes a clock per line",
           "issue": "instruction issue: four warp instructions a clock per SM, one a load or store",
           "waves": "the grid's last wave leaves SMs idle"}


def expect(work, gpu, launch: Launch | None = None, flops: float = 0.0, shares: dict | None = None) -> Expectation:
    """The expected time of `work` (a `Workload`, or a lab `Trace` with its `flops`) on `gpu`
    (see the module doc); `launch` describes how it runs (`gemm_launch`, `trace_launch`;
    without one only the bound's parts count). `shares` maps a limiter class (`share_class`) to
    its achievable share; none given, the mechanisms alone (`gm.expect` passes the shares
    estimated on the records, `gpumodel.published.shares`)."""
    if not isinstance(work, Workload):
        if not hasattr(work, "sites") or not hasattr(work, "workload"):
            raise TypeError(f"work must be a Workload or a lab Trace, got {type(work).__name__}")
        launch = launch or trace_launch(work, flops)
        work = work.workload(flops)
    if launch is not None and not isinstance(launch, Launch):
        raise TypeError(f"launch must be a gm.expected.Launch (gemm_launch, trace_launch) or None, got {type(launch).__name__}")
    p, parts, waves, occ = _mechanisms(work, gpu, launch)
    limiter, t = _limit(parts, waves)
    s = (shares or {}).get(share_class(limiter, work.math), 1.0)
    why = REASONS.get(limiter, f"the bound's {limiter}").format(occ=occ)
    reason = f"{why}; at {s:.0%} of that, the share such kernels reach on the records" if s != 1 else why
    return Expectation(t / s, float(p.time), str(p.bound), limiter, s, parts, reason, p.gpu.name)


SM_PARTS = ("compute", "sfu", "registers", "smem") + LIMITERS
"""Limiters inside the SM, one achievable share for all: its pipelines issue, load and wait
together, so no one of them runs at its own peak while the others idle."""


def share_class(limiter: str, math_: str) -> str:
    """The class an achievable share is estimated for: the tensor cores ('tensor', their
    kernels' waves too), the SM's own parts ('sm'), each level beyond it, a launch's overhead."""
    if limiter in SM_PARTS:
        return "tensor" if math_ != "fp32" and limiter in ("compute", "waves") else "sm"
    return limiter


