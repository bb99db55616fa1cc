"""The lab's last room, the reporter: a traced run of any CUDA C kernel on the CPU, its global and shared-memory accesses grouped
per warp instruction and counted in sectors, requests and wavefronts, as bytes per level.

The route (ARCHITECTURE.md, "The kernel lab": `trace` hands the source from room to room,
reader -> builder -> runner -> reporter): g++ compiles the learner's source unchanged with
`-fsanitize=thread`, which makes it call `__tsan_readN`/`__tsan_writeN(address)` before each
load and store it keeps; `trace_runtime.cpp` defines those hooks (no libtsan is linked), runs
each CUDA thread as a fiber taking turns with its block's others (`cuda_emu.h`), and knows whose access it is from the
thread's `threadIdx`/`blockIdx` and which instruction from the hook's return address. A warp
instruction is one access site executed for the k-th time by the warp's threads (lockstep);
fewer lanes than the warp's threads is a divergent instruction. The run is a subprocess with a
time limit, so a crash or an endless loop leaves the notebook running. A site is one access in
the source, told apart by line and column (`dwarf.py` reads the columns).

Races (`Trace.races`), as compute-sanitizer's racecheck and initcheck name them: two threads
touching the same shared-memory word between the same two barriers, at least one writing and not
in the same warp instruction (read-after-write, write-after-read, write-after-write, in the order
the CPU ran them), and a read of shared memory the block has not written. A word of global memory
(an argument array, a cudaMalloc'd array) is checked by the same rules between two threads of one
block (`Race.space` "global"): a warp-synchronous reduction through a `volatile` global pointer
without `__syncwarp` is named as its shared-memory form is. Not between blocks, nor an
uninitialised global read.

Levels (32-byte sectors): `l1` is every sector the warps request (loads and stores); `l2` what
leaves L1 if L1 keeps what a block loads while it runs (each sector a block loads once, every
sector stored); `hbm` each distinct sector of the launch once (the compulsory traffic: L2 keeps
all the kernel touches) and `hbm_no_reuse` = `l2` (L2 keeps nothing). A sampled launch's `hbm`
is estimated from the sample's footprint (`Trace.hbm_sectors`), never the sample's scaled up. No cache is simulated beyond
these bounds. `smem` is shared-memory wavefronts x 128 B (`gpumodel.simulate.wavefronts`' rules).
Registers are not memory and are not traced: the workload takes them from the FLOPs the caller
states. Chapter 2's lab introduces it.
"""


from __future__ import annotations

import math
import pathlib
from dataclasses import dataclass, field

import numpy as np

from .. import _check
from ..hardware import REGISTER_BYTES_PER_FLOP, SECTOR_BYTES, WAVEFRONT_BYTES
from ..model import predict
from ..presets import gpu as preset, preset_names
from ..published import expect
from ..units import fmt_bytes
from ..workloads import Workload
from .builder import build
from .limits import PROGRAM_MEMORY, physical_memory
from .reader import (ARCH, arch_number, compile_options, launched, own_headers, source_line, where,
                     without_framework)
from .runner import MAX_THREADS, PROGRAM_THREADS, index, launch, printed, run_program_traced, run_traced

OUTPUT_LINES = 40
"""Lines of the kernel's printf output `Trace.report` shows (the first; the rest counted)."""

RACES_SHOWN = 2
"""Races `Program.report` writes out under each launch (the most frequent; the rest counted)."""


@dataclass
class Site:
    """One load or store in the source, summed over the warp instructions that ran it."""

    line: int
    space: str  # "global" or "shared"
    write: bool
    size: int  # bytes per thread
    instructions: int
    lanes: int
    divergent: int  # instructions with fewer active lanes than the warp has threads
    sectors: int
    ideal_sectors: int
    wavefronts: int
    ideal_wavefronts: int
    column: int = 0  # 0 where the line table has none
    text: str = ""  # the source line
    called_at: int = 0  # the line that called the device function the access is in (0: in the kernel itself)
    place: str = ""  # "header:line" where line is 0: the access is in a header's function not inlined into the kernel

    @property
    def where(self) -> str:
        if not self.line and self.place:
            return self.place
        return where(self.line, self.column) + (f" (called at line {self.called_at})" if self.called_at else "")

    @property
    def cost(self) -> tuple:
        """(unit, got, ideal): sectors for a global access, wavefronts for a shared one."""
        if self.space == "global":
            return "sectors", self.sectors, self.ideal_sectors
        return "wavefronts", self.wavefronts, self.ideal_wavefronts

    @property
    def kind(self) -> str:
        return f"{self.space} {'store' if self.write else 'load'} {self.size * 8}-bit"


HAZARDS = ("read-after-write", "write-after-read", "write-after-write", "uninitialized read")


@dataclass
class Race:
    """A hazard the trace found: `hazard` (one of `HAZARDS`), the `first` and
    `second` access as (line, column, source text) in the order the CPU ran them (one thread
    after another; the same access twice for an uninitialized read), their threads, the first
    block where it happened and `count`, how many times in the traced blocks; `one_warp`: every
    hazard of the trace is between lanes of one warp (the fix a __syncwarp(), not a __syncthreads());
    `space`: "shared" or "global", the memory of the word."""

    hazard: str
    first: tuple
    second: tuple
    threads: tuple
    block: tuple
    count: int
    one_warp: bool = False
    next_pass: bool = False  # a barrier already lies between the two lines: the race is across a loop's passes
    space: str = "shared"
    places: tuple = ("", "")  # "header:line" of an access in a header's device function not inlined (its line 0)

    @property
    def message(self) -> str:
        (line1, col1, text1), (line2, col2, text2) = self.first, self.second
        at1, at2 = (place if not line and place else where(line, col)
                    for (line, col), place in zip(((line1, col1), (line2, col2)), self.places))
        t1, t2 = self.threads
        if self.hazard == "uninitialized read":
            return (f"uninitialized read of shared memory: thread {t1} of block {self.block} reads at "
                    f"{at1} (`{text1}`) a word no thread of the block has written "
                    f"({self.count:,} such words)")
        verbs = {"read-after-write": ("writes", "reads it"), "write-after-read": ("reads", "writes it"),
                 "write-after-write": ("writes", "writes it")}[self.hazard]
        lo, hi = sorted((line1, line2))
        barrier = "__syncwarp()" if self.one_warp else "__syncthreads()"
        if not (line1 and line2) and any(self.places):  # in a header's function: its lines, in the order they ran
            fix = (f"a {barrier} between one pass of {at1} and the next" if at1 == at2 else
                   f"a {barrier} between {at1} and {at2}")
        elif lo == hi:
            fix = f"a {barrier} between one pass of line {lo} and the next"
        else:
            fix = (f"a {barrier} after line {hi}, at the end of the loop's body: the barrier between line {lo} and "
                   f"line {hi} orders them within a pass, but the next pass reaches line {lo} before every thread has "
                   f"finished line {hi}" if self.next_pass else f"a {barrier} between line {lo} and line {hi}")
        if self.one_warp:
            fix += (" (the two are lanes of one warp, and a warp's lanes need not run in step: since Volta each "
                    "thread is scheduled on its own, CUDA C++ Programming Guide, \"Independent Thread Scheduling\")")
        return (f"{self.hazard} race on {self.space} memory: thread {t1} {verbs[0]} at {at1} (`{text1}`), "
                f"then thread {t2} {verbs[1]} at {at2} (`{text2}`) with no barrier between "
                f"(block {self.block}; {self.count:,} such hazards). Missing: {fix}.")


@dataclass
class Trace:
    """What `trace` found: `sites` (one per load or store in the source), the launch, the
    blocks traced out of all (`scale` = all / traced), the arrays after the run and `output`,
    what the kernel printed."""

    kernel: str
    grid: tuple
    block: tuple
    sites: list
    footprint: list  # per array: (sectors several traced blocks touch, sectors one touches, sectors it spans)
    l2_sectors: int
    local_accesses: int
    blocks_traced: int
    blocks: int
    arrays: list = field(default_factory=list)
    races: list = field(default_factory=list)  # `Race`s, most frequent first
    output: str = ""
    """What the kernel printed (printf), in the order the threads ran here, which is not a GPU's:
    the lab runs the traced blocks one after another and, in each, thread 0 first, each thread on
    its own until it waits at a barrier (or a shuffle) or returns, then the next; a GPU runs a
    warp's lanes through each printf together and its warps and blocks in no fixed order, and
    shows the output when the kernel finishes. A sampled launch
    prints only its traced blocks' lines."""
    rounds: int = 0
    """Rounds of global loads the traced warps wait on in turn, summed over the warps: per warp
    and phase (between barriers), a load whose site already ran in the open round starts one,
    and a phase's loads staged into shared memory are one round together (`trace_runtime.cpp`,
    `phase_rounds`). The expected time's loads in flight (`gm.expected.trace_launch`)."""
    left_out: list = field(default_factory=list)
    """What the lab left out of the file's build as code written against PyTorch (`reader.without_framework`:
    the host wrappers of a library's kernel file, say), each "name (line N)" or "name (header, line N)"."""

    @property
    def scale(self) -> float:
        return self.blocks / self.blocks_traced

    @property
    def sampled(self) -> bool:
        return self.blocks_traced < self.blocks

    @property
    def hbm_sectors(self) -> float:
        """The launch's distinct global sectors. Traced whole, exact. Sampled, an estimate from
        the sample's footprint, per array: a sector several traced blocks touch is shared
        between blocks, and the sample has found it (counted once); one only one traced block
        touches is that block's own, and each block untraced has as many (scaled); at most the
        sectors the array spans."""
        return sum(min(spans, several + self.scale * one) for several, one, spans in self.footprint)

    def _sum(self, attr: str, space: str, write=None) -> float:
        return self.scale * sum(getattr(s, attr) for s in self.sites
                                if s.space == space and (write is None or s.write == write))

    def counts(self) -> dict:
        """Per space and direction: requests (warp instructions), sectors or wavefronts, the
        ideal (no wasted sector, no conflict) and bytes the threads asked for; scaled."""
        rows = {}
        for space, unit in (("global", "sectors"), ("shared", "wavefronts")):
            for write in (False, True):
                name = f"{space} {'stores' if write else 'loads'}"
                rows[name] = {"requests": self._sum("instructions", space, write),
                              unit: self._sum(unit, space, write),
                              "ideal": self._sum(f"ideal_{unit}", space, write),
                              "divergent": self._sum("divergent", space, write)}
        return rows

    @property
    def bytes(self) -> dict:
        """Bytes per level (see the module's docstring); `hbm_no_reuse` beside them."""
        l2 = SECTOR_BYTES * self.l2_sectors * self.scale
        return {"smem": WAVEFRONT_BYTES * self._sum("wavefronts", "shared"), "l1": SECTOR_BYTES * self._sum("sectors", "global"),
                "l2": l2, "hbm": SECTOR_BYTES * self.hbm_sectors, "hbm_no_reuse": l2}

    @property
    def l1_path_bytes(self) -> float:
        """Bytes the global loads and stores take on the SM's L1/shared-memory data path (one
        SRAM, returning 128 B a clock, one 32-bit register per lane: the rule shared memory's
        wavefronts follow, `gm.simulate.wavefronts`): each warp instruction at least one 128 B
        wavefront, as `gm.gemm` charges the naive kernel; its sectors' bytes when they are more;
        and its lanes' registers when they are more, two to a slot at best (a warp-uniform float4
        takes two wavefronts, though it touches one sector); scaled. A broadcast thus costs a
        wavefront from L1 as from shared memory, so moving reuse from L1 into shared memory gains
        nothing here: what it gains is latency, which the expected time counts (`gm.expect`). The model's other formulas (elementwise,
        strided, tiled: `gm.gemm` with tiles, `gm.transpose`) leave the global requests out of
        that level: there the traced workload is higher by exactly these bytes."""
        return self.scale * sum(max(WAVEFRONT_BYTES * s.instructions, SECTOR_BYTES * s.sectors, s.lanes * s.size / 2)
                                for s in self.sites if s.space == "global")

    def workload(self, flops: float = 0.0) -> Workload:
        """A `gm.Workload` of the traced bytes, with `flops` (FP32) the caller counts: the model's
        `smem` level carries the shared-memory wavefronts and `l1_path_bytes`."""
        flops = float(_check.amount("flops", flops))
        b = self.bytes
        return Workload(f"{self.kernel} (traced)", flops,
                        {"registers": REGISTER_BYTES_PER_FLOP * flops, "smem": b["smem"] + self.l1_path_bytes,
                         "l2": b["l2"], "hbm": b["hbm"]},
                        note="bytes from a traced run on the CPU")

    def hottest(self, spaces=("global", "shared")) -> Site:
        """The site in `spaces` that moves the most bytes over its ideal (a sector 32 B, a
        wavefront 128 B; ties: the most bytes); any site where `spaces` holds none."""
        def waste(s):
            _, got, ideal = s.cost
            size = SECTOR_BYTES if s.space == "global" else WAVEFRONT_BYTES
            return (size * (got - ideal), size * got)
        return max([s for s in self.sites if s.space in spaces] or self.sites, key=waste)

    def report(self, flops: float = 0.0, gpus=None) -> str:
        """The text a learner reads: per level, per access, the worst line, and on each GPU the
        bound with the level that sets it and the expected time with what holds it."""
        out = [f"{self.kernel}<<<{self.grid}, {self.block}>>>: {self.blocks_traced} of {self.blocks} blocks traced"
               + (f" (a sample: every block ran, these traced; counts scaled by {self.scale:.3g})" if self.sampled else "")]
        if self.left_out:
            out.append(f"left out of the build, as code written against PyTorch (which the lab does not have; the kernel "
                       f"needs none of it): {', '.join(self.left_out)}")
        out += self.counted()
        work = self.workload(flops)
        out.append("time per GPU: at best (the bound: no kernel moving these bytes beats it; the level that sets it), "
                   "expected (what a kernel like this gets, gm.expect; what holds it there)")
        apart = []
        for gpu in gpus or preset_names():
            p, e = predict(work, gpu), expect(self, gpu, flops=flops)
            out.append(f"  {gpu:14} {float(p.time) * 1e6:10.2f} us at best, bound by {p.bound}; "
                       f"expected {e.time * 1e6:10.2f} us, held by {e.limiter}")
            apart.append((e.time / float(p.time) if p.time > 0 else math.inf, gpu, e))
        out += far_apart(max(apart, key=lambda row: row[0]))
        if self.output:
            out.append("the kernel printed (in the lab's thread order, not a GPU's: `Trace.output`):")
            out.append(printed(self.output, OUTPUT_LINES))
        return "\n".join(out)

    def counted(self) -> list:
        """The report's lines of counts: per access kind, per line, the worst, the bytes per
        level, the races."""
        out = []
        out.append(f"{'access':34} {'requests':>10} {'sectors/wavefr.':>16} {'per request':>12} {'ideal':>8} {'divergent':>10}")
        for name, row in self.counts().items():
            unit = "sectors" if name.startswith("global") else "wavefronts"
            if row["requests"]:
                out.append(f"{name:34} {row['requests']:10.0f} {row[unit]:16.0f} {row[unit] / row['requests']:12.2f} "
                           f"{row['ideal'] / row['requests']:8.2f} {row['divergent']:10.0f}")
        out.append("by line:")
        for s in sorted(self.sites, key=lambda s: (s.line, s.column, s.space, s.write)):
            unit, got, ideal = s.cost
            out.append(f"  {s.where + ':':22} {s.kind:24} {s.instructions:8} requests, {got / s.instructions:6.2f} "
                       f"{unit}/request (ideal {ideal / s.instructions:.2f})   {s.text}")
        if self.sites:  # a kernel that only prints has none
            worst = self.hottest()
            out.append(f"worst: {worst.where} ({worst.kind}): {worst.text}")
        b = self.bytes
        out.append("bytes: " + ", ".join(f"{k} {v:,.0f}" for k, v in b.items())
                   + " (l1: sectors requested; l2: each sector a block loads once, every sector stored; hbm: each distinct "
                   "sector once per launch)")
        if self.sampled:
            out.append("  hbm is an estimate from the sample's footprint: sectors several traced blocks touch counted "
                       f"once, those one block touches scaled by {self.scale:.3g}, at most each array's size")
        for race in self.races:
            out.append("RACE " + race.message if race.hazard != "uninitialized read" else "INITCHECK " + race.message)
        return out


def trace(source: str, kernel: str, grid, block, args, *, shared_mem: int = 0, arch: str = ARCH,
          timeout: float = 30.0, max_threads: int = MAX_THREADS, options: tuple = ()) -> Trace:
    """Run `kernel` of the CUDA C `source` on the CPU over `grid` x `block` with `args` (NumPy
    arrays for pointers, written back after the run; numbers for scalars, as their parameter's
    C type; a struct passed by value as a NumPy structured scalar of its fields in C's order and
    layout, `np.dtype([...], align=True)`, as CuPy passes one, or a ctypes.Structure, its size held
    to the type's sizeof; an enum as an int), tracing every global and shared-memory access; as
    CuPy's `RawModule` and launch take them: `kernel` a name or a C++ name expression ("reduce<float>", "sgemm<128, 128, 8>"),
    `shared_mem` the bytes of the `extern __shared__` arrays, the source compiled for `arch`
    (`__CUDA_ARCH__`) with NVRTC-style `options` ("-I<folder>" for the file's own headers,
    "-DNAME=value"; `reader.compile_options`). A pointer takes None (NULL); parameters left out
    at the end take their default arguments. More than `max_threads` threads: an evenly spaced sample of the blocks
    runs (the result says so; the arrays are then only partly computed; a block at least).
    Raises ValueError or TypeError, before compiling, for a launch CUDA would refuse (grid and
    block past `MAX_GRID_DIM`, `MAX_BLOCK_DIM` or `MAX_BLOCK` threads) or a wrong argument
    (`reader.arguments`), and `LabError` when the kernel does not compile, crashes, runs past `timeout`
    seconds, takes more than `limits.RUN_MEMORY` bytes beyond its arrays, prints more than
    `limits.OUTPUT_LIMIT` bytes, touches memory outside its arrays, reaches a __syncthreads() that
    not every thread of its block reaches (some returned, or wait at another), runs out of memory or
    overflows a thread's stack; its message ends with the last lines the kernel printed before
    (`runner.FAILED_OUTPUT_LINES`). What it printed is `Trace.output`. Chapter 2's lab."""
    if not isinstance(source, str):
        raise TypeError(f"source must be the kernel's CUDA C source (a str), got {type(source).__name__}")
    if not isinstance(kernel, str):
        raise TypeError(f"kernel must name a kernel defined in source (a str), got {kernel!r}")
    kernel = kernel.strip()
    shape = launch(grid, block, shared_mem, timeout, max_threads)
    flags, defines, folders = compile_options(options)
    try:
        names, values, params = launched(source, kernel, args, defines, folders)
    except (ValueError, TypeError):
        build(source, arch=arch, options=flags)  # a source that does not compile says so first
        raise
    done = run_traced(build(source, names, arch, flags), source, kernel, names, shape, params, values)
    traced = _trace(source, kernel, shape, done.rows, done.where, done.calls, done.traced,
                    [v for v in values if isinstance(v, np.ndarray)], done.output, done.places)
    traced.left_out = _left_out(source, folders)
    return traced


def _left_out(source: str, folders) -> list:
    """What the build left out of `source` and the headers it includes from `folders` as code
    written against PyTorch (`reader.without_framework`), each as `Trace.left_out` names it."""
    left = [f"{name} (line {line})" for name, line in without_framework(source)[1]]
    for header, path in own_headers(source, folders).items():
        left += [f"{name} ({header}, line {line})"
                 for name, line in without_framework(path.read_text(errors="replace"))[1]]
    return left


def _trace(source: str, kernel: str, shape, rows: list, where_of: dict, calls: dict, traced: int, arrays: list,
           output: str, places: dict | None = None) -> Trace:
    """The `Trace` of one launch of `kernel` (`runner.Launch` `shape`) from the runtime's `rows`,
    `traced` blocks of it run traced."""
    def text(line):
        return source_line(source, line)
    other = {r[0]: int(r[1]) for r in rows if r[0] in ("l2_sectors", "local", "rounds")}
    footprint = [tuple(int(v) for v in r[2:5]) for r in rows if r[0] == "footprint"]
    return Trace(kernel, shape.grid, shape.block, _sites([r for r in rows if r[0] == "site"], where_of, calls, text,
                                                          places or {}),
                 footprint, other["l2_sectors"], other["local"], traced, shape.blocks, arrays,
                 _races([r for r in rows if r[0] == "hazard"], where_of, text, shape.block, shape.grid, places), output,
                 other.get("rounds", 0))


@dataclass
class Program:
    """What `run_program` found: each traced launch's `Trace` in order (`launches`) and the line
    it is launched at (`lines`), what the program printed (`output`: its own printf and its
    kernels', in the lab's order), its exit status, the launches run untraced past
    `runner.MAX_TRACED_LAUNCHES`, the launches not run again (`repeated`: each the same kernel,
    configuration and arguments as one that ran, with nothing it read or wrote written since, so
    that what it would write is in memory already, or on the same contents of what it touched, so
    that what it wrote then is copied in: a benchmark's loop), the launches not run
    because the same one had run `repeats` times (`capped`), the cudaMalloc calls past
    the program's `memory` (bytes; `unallocated`: (bytes, line) each), the launches CUDA would have refused ((kernel, line, grid,
    block, shared_mem) each: cudaGetLastError returned cudaErrorInvalidConfiguration and nothing
    ran), whether it timed itself with events, the `gpu` whose properties it was given, and the
    cooperative launches (`cooperative`: run untraced, since their blocks take turns at the grid's
    barrier while the lab counts one block's accesses at a time)."""

    launches: list
    lines: list
    output: str
    returncode: int
    untraced: int
    repeated: int
    capped: int
    repeats: int | None
    memory: int
    unallocated: list
    refused: list
    timed: bool
    gpu: str
    cooperative: int

    def report(self, flops: float = 0.0) -> str:
        """The text a learner reads: each traced launch with its blocks, its bytes per level and
        the bound on `gpu`; launches refused; what the program printed and its exit status.
        `flops` (FP32) is charged to every launch (the lab cannot count them). One launch whole:
        `launches[i].report()`."""
        out = [f"the program ran on the CPU as on one {self.gpu}: {len(self.launches)} "
               + ("launch" if len(self.launches) == 1 else "launches") + " traced"
               + (f", {self.untraced} more run untraced" if self.untraced else "")
               + (f", {self.cooperative} cooperative " + ("launch" if self.cooperative == 1 else "launches")
                  + " run untraced (their blocks wait for each other at the grid's barrier; the lab counts one block "
                  "at a time)" if self.cooperative else "")
               + (f", {self.repeated} not run again (each the same launch as one before it on the same contents of "
                  "what it reads and writes: its results were in memory already, or copied in)" if self.repeated else "")
               + (f", {self.capped} not run because the same launch (kernel, configuration and arguments) had run "
                  f"{self.repeats} times (repeats={self.repeats}: memory is as its last run left it)" if self.capped else "")
               + f"; it ended with exit status {self.returncode}"]
        for i, (t, line) in enumerate(zip(self.launches, self.lines), 1):
            b, p = t.bytes, predict(t.workload(flops), self.gpu)
            out.append(f"  {i}. line {line}: {t.kernel}<<<{t.grid}, {t.block}>>>, {t.blocks_traced} of {t.blocks} blocks "
                       f"traced; bytes l1 {b['l1']:,.0f}, l2 {b['l2']:,.0f}, hbm {b['hbm']:,.0f}; at best "
                       f"{float(p.time) * 1e6:.2f} us, bound by {p.bound}" + ("; RACES" if t.races else ""))
            for race in t.races[:RACES_SHOWN]:
                out.append("     " + ("RACE " if race.hazard != "uninitialized read" else "INITCHECK ") + race.message)
            if len(t.races) > RACES_SHOWN:
                out.append(f"     and {len(t.races) - RACES_SHOWN} more (Program.launches[{i - 1}].races)")
        for size, line in self.unallocated:
            out.append(f"  cudaMalloc of {fmt_bytes(size)} at line {line} failed (cudaErrorMemoryAllocation): the lab "
                       f"ran the program in {fmt_bytes(self.memory)} of the CPU's memory, its arrays included (its "
                       "host copies too); a smaller size fits, or pass run_program(..., memory=BYTES) where this "
                       f"machine has more ({fmt_bytes(physical_memory())} in all)")
        for kernel, line, grid, block, shared_mem in self.refused:
            out.append(f"  refused at line {line}: {kernel}<<<{grid}, {block}, {shared_mem}>>>, a launch CUDA refuses "
                       "(cudaErrorInvalidConfiguration, returned by the next cudaGetLastError); nothing ran")
        out.append("what the program printed (in the lab's thread order, not a GPU's):")
        out.append(printed(self.output, OUTPUT_LINES) if self.output else "    (nothing)")
        if self.timed:
            out.append("Times it measured with cudaEvent calls are the CPU's, running the lab, not a GPU's"
                       + (", and a launch not run again took none." if self.repeated or self.capped else "."))
        return "\n".join(out)


def run_program(source_or_path, argv=(), options: tuple = (), *, gpu: str | None = None, arch: str = ARCH,
                timeout: float = 120.0, max_threads: int = PROGRAM_THREADS, repeats: int | None = None,
                memory: float = PROGRAM_MEMORY) -> Program:
    """Build a whole CUDA C program (a str of source, or a path to a .cu file, whose folder is
    then on the include path) with its own `main`, and run it on the CPU with `argv` (strs):
    cudaMalloc, cudaMemcpy, cudaMemset, cudaMemcpyToSymbol and `__constant__`, cudaFree, events,
    streams, cudaGetLastError and cudaDeviceSynchronize as include/cuda_runtime.h declares them,
    each launch `k<<<grid, block, shared_mem, stream>>>(args)` run whole before it returns and
    traced as `trace` traces a kernel (more than `max_threads` threads: an evenly spaced sample of
    its blocks traced, every block run, so the program's own checks see whole results). The
    program sees `gpu`'s properties (cudaGetDeviceProperties; by default the first preset of
    `arch`'s compute capability) and is compiled for `arch` with `options` as `trace` takes them.
    `repeats` (for a benchmark's loop of an in-place kernel) runs each launch at most that many
    times with the same kernel, configuration and arguments since the host last wrote an array it
    touches (a check that resets its output first runs every time), and counts the rest (None:
    all run).
    `memory` is the address space in bytes the program may take, its arrays and host copies
    included (more than the machine's memory is refused).
    It runs in a private temporary folder holding copies of the files beside a file's (its input
    files, a data folder, at most `limits.INPUT_BYTES`): what it writes, to a copy or anew, stays
    there and the learner's files are never touched. It runs within `timeout` seconds. Raises `LabError` where it
    does not compile or link (a call into cuBLAS, say, is named), faults as `trace` names a
    kernel's faults (at the launch it stopped), or crashes in its host code; its exit status,
    whatever it is, is the result's. Chapter 8's lab ("Whole programs")."""
    source, folder, file = _program_source(source_or_path)
    name = file.rsplit(".", 1)[0]
    if isinstance(argv, (str, bytes)) or not all(isinstance(a, str) for a in argv):
        raise TypeError(f"argv must be a sequence of strs (the program's arguments after its name), got {argv!r}")
    shape = launch(1, 1, 0, timeout, max_threads)
    if repeats is not None:
        repeats = _check.integer("repeats (None: every run)", repeats, 1, 2**31 - 1)
    memory = int(_check.real("memory (bytes, at most the machine's)", memory, PROGRAM_MEMORY // 4, physical_memory()))
    flags, _, _ = compile_options(tuple(options) + ((f"-I{folder}",) if folder else ()))
    device = preset(gpu) if gpu is not None else _gpu_of(arch)
    exe = build(source, arch=arch, options=flags, program=True, file_name=file)
    done = run_program_traced(exe, name, source, tuple(argv), shape.timeout, shape.max_threads, _properties(device),
                              repeats, memory, folder)
    traces = [_trace(source, one.kernel, one.shape, one.rows, done.where, done.calls, one.traced, [], "", done.places)
              for one in done.launches]
    return Program(traces, [one.line for one in done.launches], done.output, done.returncode, done.untraced,
                   done.repeated, done.capped, repeats, memory, done.unallocated, done.refused, done.events > 0, device.name,
                   done.cooperative)


def _program_source(source_or_path) -> tuple:
    """(the program's source, the folder of its file or None, its file's name or "program.cu")
    from `run_program`'s first argument."""
    if isinstance(source_or_path, pathlib.Path) or (isinstance(source_or_path, str) and "\n" not in source_or_path
                                                    and source_or_path.endswith((".cu", ".cpp", ".cuh"))):
        path = pathlib.Path(source_or_path)
        if not path.is_file():
            raise ValueError(f"source_or_path names no file: {str(path)!r} (give a .cu file's path or its source)")
        return path.read_text(), path.resolve().parent, path.name
    if not isinstance(source_or_path, str):
        raise TypeError(f"source_or_path must be a program's CUDA C source (a str) or a path to a .cu file, got "
                        f"{type(source_or_path).__name__}")
    return source_or_path, None, "program.cu"


def _gpu_of(arch: str):
    """The first preset (oldest first) of `arch`'s compute capability."""
    number = arch_number(arch)
    found = [preset(n) for n in preset_names() if preset(n).capability.version == divmod(number // 10, 10)]
    if not found:
        raise ValueError(f"arch {arch!r} is the compute capability of no preset GPU: pass gpu= (one of {preset_names()})")
    return found[0]


def _properties(device) -> dict:
    """What cudaGetDeviceProperties gives a program run on `device` (program_runtime.cpp's "prop" lines)."""
    c = device.capability
    return {"major": c.version[0], "minor": c.version[1], "sms": int(device.sms.value), "l2": int(device.l2_capacity.value),
            "memory": int(device.hbm_capacity.value), "clock_khz": int(device.clock.value / 1e3),
            "smem_per_block_optin": c.max_smem_per_block, "smem_per_sm": c.smem_per_sm,
            "threads_per_sm": c.max_threads_per_sm, "blocks_per_sm": c.max_blocks_per_sm,
            "registers_per_sm": c.registers_per_sm, "name": (device.devices or (device.name,))[0]}


def _sites(rows, where, calls, text, places=None) -> list:
    """One `Site` per access in the source and call of it: the code offsets of one line, column
    and call site (a loop the compiler unrolled, say) summed; without a column, one per offset
    (its `place` in a header where the source has none)."""
    merged = {}
    for r in rows:
        n = [int(v) for v in r[2:]]
        line, column = where[r[1]]
        key = (line, column, calls.get(r[1], 0), n[0], n[1], n[2]) if column else r[1]
        if key in merged:
            old = merged[key]
            for name, value in zip(("instructions", "lanes", "divergent", "sectors", "ideal_sectors", "wavefronts",
                                    "ideal_wavefronts"), n[3:10]):
                setattr(old, name, getattr(old, name) + value)
        else:
            place = (places or {}).get(r[1], "")
            merged[key] = Site(line, ("global", "shared")[n[0]], bool(n[1]), *n[2:10], column,
                               text(line) if line or not place else "(in a device function of the header, not inlined)",
                               calls.get(r[1], 0), place)
    return list(merged.values())


def _races(rows, where, text, block, grid, places=None) -> list:
    """`Race`s from the runtime's hazard rows (threads and blocks as linear ids), most frequent
    first; `one_warp` where no hazard of the trace is between two warps; an access in a header's
    device function the compiler did not inline at its `places` ("header:line")."""
    uninitialized = HAZARDS.index("uninitialized read")
    one_warp = not any(int(r[9]) for r in rows)
    races = []
    for r in rows:
        hazard, first, second, count, t1, t2, b = int(r[1]), r[2], r[3], *map(int, r[4:8])
        (l1, c1), (l2, c2) = where[first], where[second]
        lo, hi = sorted((l1, l2))
        between = any("__syncthreads" in text(line) for line in range(lo + 1, hi))
        at = [(places or {}).get(pc, "") for pc in (first, second)]
        said = [text(line) if line or not place else "in a device function of the header, not inlined"
                for line, place in ((l1, at[0]), (l2, at[1]))]
        races.append(Race(HAZARDS[hazard], (l1, c1, said[0]), (l2, c2, said[1]), (index(t1, block), index(t2, block)),
                          index(b, grid), count, one_warp and hazard != uninitialized, bool(between and l1 and l2),
                          "global" if int(r[10]) else "shared", tuple(at)))
    return sorted(races, key=lambda race: (race.hazard == "uninitialized read", -race.count, race.first, race.second))


def trace_plan(plan) -> list:
    """Trace every step of a `gpumodel.cuda.plans.Plan` (a course kernel at a size), in
    order, on the plan's inputs: one `Trace` per step. Chapter 2's lab."""
    from ..cuda.compiler import kernel_source

    source = kernel_source(plan.file)
    buffers = {name: np.ascontiguousarray(a, dtype=np.float32).copy() for name, a in plan.inputs.items()}
    buffers.update({name: np.zeros(shape, np.float32) for name, shape in plan.outputs.items()})
    traces = []
    for step in plan.steps:
        args = [buffers[a] if isinstance(a, str) else a.item() for a in step.args]
        traces.append(trace(source, step.kernel, step.grid, step.block, args))
    return traces


def total_bytes(traces: list) -> dict:
    """Bytes per level summed over the steps' traces."""
    return {level: sum(t.bytes[level] for t in traces) for level in traces[0].bytes}


FAR_APART = 3.0
"""From this ratio of expected time to bound, a report says why the two are far apart."""


def far_apart(row) -> list:
    """The report's line on why the expected time is far above the bound, where it is (`row`:
    the ratio, the GPU, its `Expectation`); none where the two are close."""
    ratio, gpu, e = row
    if ratio < FAR_APART:
        return []
    return [f"why so far apart: the bound counts bytes and flops at each level's full rate; on the {gpu} the "
            f"expected time is {ratio:,.0f} times it because a real kernel like this one is held by {e.reason}"]
