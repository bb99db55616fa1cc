"""A traced run of any CUDA C kernel on the CPU: its global and shared-memory accesses grouped
per warp instruction and counted in sectors, requests and wavefronts, as bytes per level.

The route (ARCHITECTURE.md, "The kernel lab"): g++ compiles the learner's source unchanged with
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
the CPU ran them), and a read of shared memory the block has not written.

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
import numbers
import pathlib
import shutil
import signal
import subprocess
import tempfile
from dataclasses import dataclass, field

import numpy as np

from .. import _check
from ..hardware import MAX_BLOCK, MAX_BLOCK_DIM, MAX_GRID_DIM, REGISTER_BYTES_PER_FLOP, SECTOR_BYTES, WAVEFRONT_BYTES
from ..model import predict
from ..presets import preset_names
from ..published import expect
from ..workloads import Workload
from .dwarf import line_table, locate
from .emulator import (ARCH, MAX_DYNAMIC_SHARED, SOURCE_NAME, SUPPORTED, arguments, compile_flags, compile_with_header, entries,
                       parameters, precompiled, wrapper)
from .safety import (OUTPUT_LIMIT, RUN_MEMORY, CompileError, LabError, cache_folder, cached, digest, fmt_bytes, gxx, out_of_memory,
                     prune, run)

HERE = pathlib.Path(__file__).resolve().parent
KERNEL_FLAGS = ["-std=c++20", "-O1", "-gdwarf-4", "-fno-tree-vectorize", "-fno-tree-sra", "-fsanitize=thread",
                "-fstack-clash-protection", "-pthread", "-fPIE"]
"""-O1 keeps values in registers as a GPU compiler would; no vectorizer, which would merge a
thread's loads; no scalar replacement of aggregates, which would split a float4 (or float2,
int4, double2) load or store into its fields where the GPU issues one 64- or 128-bit access
(the hook is then __tsan_read16 or __tsan_read_range of the whole vector); DWARF 4 so addr2line (binutils 2.40) reads the lines; -fsanitize=thread inserts the hooks;
-fstack-clash-protection makes a frame larger than a page touch each page, so a large local
array meets the guard page below its fiber's stack (a stack overflow) rather than another's stack.
Position-independent (and linked -pie), so a code offset from the start of the executable is
the address addr2line reads."""
RUNTIME_FLAGS = ["-std=c++20", "-O2", "-pthread", "-fPIE"]
MAX_THREADS = 2**16
"""The most CUDA threads a trace runs; a larger launch runs an evenly spaced sample of its
blocks and scales the counts."""
MAX_LAUNCH_BLOCKS = 2**32 - 1
"""The most blocks a traced launch may have: the runtime numbers a block in 32 bits (CUDA
allows more, up to `MAX_GRID_DIM`'s product)."""
CACHE_KEEP = 64
"""Traced executables (and failed builds) kept in the build folder (about 50 KB each);
building one more removes the least recently used beyond these."""
OUTPUT_LINES = 40
"""Lines of the kernel's printf output `Trace.report` shows (the first; the rest counted)."""
FAILED_OUTPUT_LINES = 20
"""Lines of the kernel's printf output a failed run's `LabError` shows (the last ones)."""
OUTPUT_WIDTH = 300
"""Characters of one printed line shown; a longer one is cut."""
RUNTIME_KEEP = 4
"""Versions of the runtime's object the build folder keeps (the most recently used): several
checkouts or versions of the package on one account each link their own, and pruning another's
while it links would fail that build."""


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

    @property
    def where(self) -> str:
        return where(self.line, self.column)

    @property
    def cost(self) -> tuple:
        """(unit, got, ideal): sectors for a global access, wavefronts for a shared one."""
        if self.space == "global":
            return "sectors", self.sectors, self.ideal_sectors
        return "wavefronts", self.wavefronts, self.ideal_wavefronts

    @property
    def kind(self) -> str:
        return f"{self.space} {'store' if self.write else 'load'} {self.size * 8}-bit"


def where(line: int, column: int = 0) -> str:
    """"line 12, column 5", or "line 12" where the column is unknown."""
    return f"line {line}, column {column}" if column else f"line {line}"


HAZARDS = ("read-after-write", "write-after-read", "write-after-write", "uninitialized read")


@dataclass
class Race:
    """A shared-memory hazard the trace found: `hazard` (one of `HAZARDS`), the `first` and
    `second` access as (line, column, source text) in the order the CPU ran them (one thread
    after another; the same access twice for an uninitialized read), their threads, the first
    block where it happened and `count`, how many times in the traced blocks; `one_warp`: every
    hazard of the trace is between lanes of one warp (the fix a __syncwarp(), not a __syncthreads())."""

    hazard: str
    first: tuple
    second: tuple
    threads: tuple
    block: tuple
    count: int
    one_warp: bool = False

    @property
    def message(self) -> str:
        (line1, col1, text1), (line2, col2, text2) = self.first, self.second
        t1, t2 = self.threads
        if self.hazard == "uninitialized read":
            return (f"uninitialized read of shared memory: thread {t1} of block {self.block} reads at "
                    f"{where(line1, col1)} (`{text1}`) a word no thread of the block has written "
                    f"({self.count:,} such words)")
        verbs = {"read-after-write": ("writes", "reads it"), "write-after-read": ("reads", "writes it"),
                 "write-after-write": ("writes", "writes it")}[self.hazard]
        lo, hi = sorted((line1, line2))
        barrier = "__syncwarp()" if self.one_warp else "__syncthreads()"
        fix = (f"a {barrier} between line {lo} and line {hi}" if lo != hi else
               f"a {barrier} between one pass of line {lo} and the next")
        if self.one_warp:
            fix += (" (the two are lanes of one warp, and a warp's lanes need not run in step: since Volta each "
                    "thread is scheduled on its own, CUDA C++ Programming Guide, \"Independent Thread Scheduling\")")
        return (f"{self.hazard} race on shared memory: thread {t1} {verbs[0]} at {where(line1, col1)} (`{text1}`), "
                f"then thread {t2} {verbs[1]} at {where(line2, col2)} (`{text2}`) with no barrier between "
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
               + (f" (a sample; counts scaled by {self.scale:.3g})" if self.sampled else "")]
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
                   + " (l1: sectors requested; l2: each sector once per block; hbm: once per launch)")
        if self.sampled:
            out.append("  hbm is an estimate from the sample's footprint: sectors several traced blocks touch counted "
                       f"once, those one block touches scaled by {self.scale:.3g}, at most each array's size")
        for race in self.races:
            out.append("RACE " + race.message if race.hazard != "uninitialized read" else "INITCHECK " + race.message)
        work = self.workload(flops)
        out.append("time per GPU: at best (the bound: no kernel moving these bytes beats it; the level that sets it), "
                   "expected (what a kernel like this gets, gm.expect; what holds it there)")
        for gpu in gpus or preset_names():
            p, e = predict(work, gpu), expect(self, gpu, flops=flops)
            out.append(f"  {gpu:14} {float(p.time) * 1e6:10.2f} us at best, bound by {p.bound}; "
                       f"expected {e.time * 1e6:10.2f} us, held by {e.limiter}")
        if self.output:
            out.append("the kernel printed (in the lab's thread order, not a GPU's: `Trace.output`):")
            out.append(printed(self.output, OUTPUT_LINES))
        return "\n".join(out)


def printed(output: str, lines: int, last: bool = False) -> str:
    """The first `lines` lines of a kernel's printf `output` (the last ones where `last`),
    each indented four spaces (a Markdown code block) and cut at `OUTPUT_WIDTH` characters,
    with "... N more lines" for those left out."""
    rows = output.splitlines()
    shown = rows[-lines:] if last else rows[:lines]
    cut = [r if len(r) <= OUTPUT_WIDTH else r[:OUTPUT_WIDTH] + f" ... ({len(r) - OUTPUT_WIDTH:,} more characters)"
           for r in shown]
    more = [f"... {len(rows) - len(shown):,} more lines" + (" before these" if last else "")] if len(rows) > len(shown) else []
    return "\n".join("    " + r for r in (more + cut if last else cut + more))


def _build_dir() -> pathlib.Path:
    """The user's private cache folder (`safety`: created 0700, owner and mode checked)."""
    return cache_folder()


def _compile(args: list, what: str) -> None:
    gxx(args, what, SOURCE_NAME, SUPPORTED)


def _runtime(folder: pathlib.Path) -> pathlib.Path:
    """The runtime's object file, built once per version of its sources, verified by its hash."""
    sources = (HERE / "trace_runtime.cpp").read_bytes() + (HERE / "cuda_emu.h").read_bytes()
    obj = cached(folder, f"runtime-{digest(sources + str(RUNTIME_FLAGS).encode())}.o", lambda out: _compile(
        [*RUNTIME_FLAGS, f"-I{HERE}", "-c", str(HERE / "trace_runtime.cpp"), "-o", str(out)], "the lab's runtime"))
    prune(folder, "runtime-", RUNTIME_KEEP)
    return obj


def build(source: str, names: list | None = None, arch: str = ARCH) -> pathlib.Path:
    """The traced executable for the kernels `names` of `source` (`emulator.entries`: those that
    are not templates, by default), compiled for `arch`, cached by content (a failed build too)
    and verified by its hash. Raises `LabError` with g++'s messages when the source does not
    compile."""
    if not shutil.which("g++"):
        raise LabError("the kernel lab needs g++ (C++20) on the machine, and there is none here")
    folder = _build_dir()
    runtime = _runtime(folder)
    text = wrapper(source, entries(source) if names is None else names, traced=True)
    flags = [*KERNEL_FLAGS, *compile_flags(arch)]
    key = digest((text + str(flags) + runtime.name).encode())

    def make(exe):
        cpp, obj = (exe.with_suffix(end) for end in (".cpp", ".o"))
        cpp.write_text(text)
        try:
            compile_with_header([*flags, "-c", str(cpp), "-o", str(obj)], precompiled(flags, traced=True), "the kernel",
                                source)
            try:
                _compile([str(obj), str(runtime), "-pthread", "-pie", "-o", str(exe)], "the traced kernel")
            except CompileError as err:  # a link may fail for want of the runtime (another process pruned it): not cached
                raise LabError(str(err)) from None
        finally:
            for path in (cpp, obj):
                path.unlink(missing_ok=True)
    try:
        return cached(folder, f"trace-{key}", make)
    finally:
        _prune(folder)


def _prune(folder: pathlib.Path) -> None:
    """Remove the least recently used (built or reused) traced executables beyond `CACHE_KEEP`."""
    prune(folder, "trace-", CACHE_KEEP)


def _lines(exe: pathlib.Path, offsets: list) -> dict:
    """The kernel source's (line, column) of each code offset: the innermost frame in kernel.cu
    (addr2line follows inlined calls), its column where the line table's innermost row is that
    line (an access inlined from the lab's own header, as `__ldg`, gets none)."""
    if not offsets:
        return {}
    done = subprocess.run(["addr2line", "-e", str(exe), "-i", "-a", *offsets], capture_output=True, text=True, check=True)
    lines, current = {}, None
    for row in done.stdout.splitlines():
        if row.startswith("0x"):
            current = f"{int(row, 16):x}"
        elif current not in lines and SOURCE_NAME in row:
            lines[current] = int(row.rsplit(":", 1)[1].split()[0])
    table = line_table(exe)
    found = {}
    for o in offsets:
        line = lines.get(o, 0)
        inner = locate(table, int(o, 16))
        found[o] = (line, inner[2] if inner and inner[0] == SOURCE_NAME and inner[1] == line else 0)
    return found


SHARED_ALIGN = 1 << 16
"""Where cuda_emu.h starts each __shared__ array: at a multiple of 64 KiB (static shared memory
is at most 48 KiB), which leaves a stretch past its end before the next array."""


def _shared_gaps(exe: pathlib.Path) -> list:
    """The stretches past the end of each __shared__ array of the traced executable `exe` that
    hold none of the kernel's own statics (nm's symbols and the lines they are declared at, and the
    guard of a static with a constructor that runs): (the
    array's name, its offset in the executable, its bytes, the stretch's first and end offsets)."""
    done = subprocess.run(["nm", "-S", "-C", "-l", "--defined-only", str(exe)], capture_output=True, text=True,
                          check=True)
    symbols = []  # (offset, bytes, demangled name, declared in the kernel's source)
    for row in done.stdout.splitlines():
        symbol, _, place = row.partition("\t")
        fields = symbol.split(maxsplit=3)
        if len(fields) == 4 and fields[2] in "bBdDuV":
            symbols.append((int(fields[0], 16), int(fields[1], 16), fields[3],
                            place.rsplit(":", 1)[0].endswith("/" + SOURCE_NAME)))
    mine = {name for _, _, name, in_source in symbols if in_source}
    own = [(lo, size, name.rsplit("::", 1)[-1]) for lo, size, name, in_source in symbols
           if in_source or name.removeprefix("guard variable for ") in mine]  # the kernel's statics and their guards
    gaps = []
    for lo, size, name in own:
        if lo % SHARED_ALIGN == 0 and size:
            start = lo + size
            for other, other_size, _ in sorted(o for o in own if lo + size <= o[0] < lo + SHARED_ALIGN):
                if other > start:
                    gaps.append((name, lo, size, start, other))
                start = max(start, other + other_size)
            if start < lo + SHARED_ALIGN:
                gaps.append((name, lo, size, start, lo + SHARED_ALIGN))
    return gaps


def _dims(name: str, value, most: tuple) -> tuple:
    """`value` (an int, or 1 to 3 of them) as CUDA's dim3 (x, y, z), each from 1 to `most`'s."""
    dims = tuple(value) if isinstance(value, (tuple, list, np.ndarray)) else (value,)
    if not 1 <= len(dims) <= 3 or not all(_is_int(v) for v in dims):
        raise TypeError(f"{name} must be an int or a tuple of 1 to 3 ints (dim3's x, y, z), got {value!r}")
    dims = tuple(int(v) for v in dims) + (1,) * (3 - len(dims))
    for axis, v, limit in zip("xyz", dims, most):
        if not 1 <= v <= limit:
            raise ValueError(f"{name}'s {axis} must be from 1 to {limit:,} (CUDA's limit on a {name}'s {axis} "
                             f"dimension), got {value!r}")
    return dims


def _is_int(value) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, (bool, np.bool_))


def trace(source: str, kernel: str, grid, block, args, *, shared_mem: int = 0, arch: str = ARCH,
          timeout: float = 30.0, max_threads: int = MAX_THREADS) -> Trace:
    """Run `kernel` of the CUDA C `source` on the CPU over `grid` x `block` with `args` (NumPy
    arrays for pointers, written back after the run; numbers for scalars, as their parameter's
    C type), tracing every global and shared-memory access; as CuPy's `RawModule` and launch
    take them: `kernel` a name or a C++ name expression ("reduce<float>", "sgemm<128, 128, 8>"),
    `shared_mem` the bytes of the `extern __shared__` arrays, the source compiled for `arch`
    (`__CUDA_ARCH__`). More than `max_threads` threads: an evenly spaced sample of the blocks
    runs (the result says so; the arrays are then only partly computed; a block at least).
    Raises ValueError or TypeError, before compiling, for a launch CUDA would refuse (grid and
    block past `MAX_GRID_DIM`, `MAX_BLOCK_DIM` or `MAX_BLOCK` threads) or a wrong argument
    (`arguments`), and `LabError` when the kernel does not compile, crashes, runs past `timeout`
    seconds, takes more than `safety.RUN_MEMORY` bytes beyond its arrays, prints more than
    `safety.OUTPUT_LIMIT` bytes, touches memory outside its arrays, reaches a __syncthreads() that
    not every thread of its block reaches (some returned, or wait at another), runs out of memory or
    overflows a thread's stack; its message ends with the last lines the kernel printed before
    (`FAILED_OUTPUT_LINES`). What it printed is `Trace.output`. Chapter 2's lab."""
    if not isinstance(source, str):
        raise TypeError(f"source must be the kernel's CUDA C source (a str), got {type(source).__name__}")
    if not isinstance(kernel, str):
        raise TypeError(f"kernel must name a kernel defined in source (a str), got {kernel!r}")
    grid, block = _dims("grid", grid, MAX_GRID_DIM), _dims("block", block, MAX_BLOCK_DIM)
    threads, blocks = math.prod(block), math.prod(grid)
    if threads > MAX_BLOCK:
        raise ValueError(f"block must hold at most {MAX_BLOCK} threads (CUDA's limit), got {block} = {threads}")
    if blocks > MAX_LAUNCH_BLOCKS:
        raise ValueError(f"grid must hold at most {MAX_LAUNCH_BLOCKS:,} blocks in a traced launch (the lab's "
                         f"limit), got {grid} = {blocks:,}")
    shared_mem = _check.integer("shared_mem (bytes of dynamic shared memory)", shared_mem, 0, MAX_DYNAMIC_SHARED)
    if isinstance(timeout, (bool, np.bool_)) or not isinstance(timeout, numbers.Real):
        raise TypeError(f"timeout must be a number of seconds, got {timeout!r}")
    if not 0 < timeout < math.inf:
        raise ValueError(f"timeout must be a positive, finite number of seconds, got {timeout!r}")
    if not _is_int(max_threads):
        raise TypeError(f"max_threads must be an int (the most CUDA threads traced), got {max_threads!r}")
    if max_threads < 1:
        raise ValueError(f"max_threads must be at least 1 (a block at least is traced), got {max_threads!r}")
    try:
        names = entries(source, kernel)
        spec = [("P" if isinstance(v, np.ndarray) else "V", v) for v in arguments(parameters(source, kernel), args)]
    except (ValueError, TypeError):
        build(source, arch=arch)  # a source that does not compile says so first
        raise
    traced = max(1, min(blocks, int(max_threads) // threads))
    chosen = np.unique(np.linspace(0, blocks - 1, traced).round().astype(np.int64))
    exe = build(source, names, arch)
    with tempfile.TemporaryDirectory(prefix="gm-lab-") as tmp:
        tmp = pathlib.Path(tmp)
        lines = [f"kernel {names.index(kernel)}", f"grid {grid[0]} {grid[1]} {grid[2]}",
                 f"block {block[0]} {block[1]} {block[2]}", "blocks " + " ".join(map(str, chosen)),
                 f"shared_mem {shared_mem}"]
        shared = (_shared_gaps(exe), shared_mem)
        lines += [f"gap {lo} {start} {end}" for _, lo, _, start, end in shared[0]]
        for i, (kind, value) in enumerate(spec):
            if kind == "P":
                path = tmp / f"arg{i}.bin"
                value.tofile(path)
                lines.append(f"arg P {value.nbytes} {path}")
            else:
                lines.append(f"arg V {value.tobytes().hex()}")
        (tmp / "spec").write_text("\n".join(lines) + "\n")
        memory = RUN_MEMORY + sum(value.nbytes for kind, value in spec if kind == "P")
        done = run([exe, tmp / "spec", tmp / "stats"], timeout, memory)
        try:
            if done.stopped == "time":
                raise LabError(f"{kernel} ran past the time limit of {timeout:g} s: an endless loop, a __syncthreads() "
                               "that not every thread of the block reaches, or a shuffle that not every lane of the "
                               "warp reaches?")
            if done.stopped == "output":
                raise LabError(f"{kernel} printed more than the lab's output limit of {fmt_bytes(OUTPUT_LIMIT)} and "
                               "was stopped: a printf in a loop, or in every thread?")
            if done.returncode:
                _crashed(done, tmp / "stats", exe, kernel, grid, block, source, memory)
            stats = (tmp / "stats").read_text().split("\n")
            for i, (kind, value) in enumerate(spec):
                if kind == "P" and value.flags.writeable:  # a read-only one is a const parameter's (`arguments`)
                    value[...] = np.fromfile(tmp / f"arg{i}.bin", dtype=value.dtype).reshape(value.shape)
            return _parse(stats, exe, kernel, grid, block, len(chosen), blocks, spec, shared, source, done.stdout)
        except LabError as error:
            if not done.stdout:
                raise
            raise LabError(f"{error}\n\nWhat it printed before it failed (the lab's thread order, not a GPU's):\n\n"
                           + printed(done.stdout, FAILED_OUTPUT_LINES, last=True)) from None


def _barrier_error(kernel, waited, threads, block, at, other, source) -> None:
    """Raise the `LabError` of a __syncthreads() not every thread of the block reaches: `waited`
    of `threads` threads of `block` waited at the call at `at` (line, column), the others at
    `other` or, where that is None, returned without reaching it."""
    source_lines = source.splitlines()

    def shown(place):
        line, column = place
        text = f" (`{source_lines[line - 1].strip()}`)" if 0 < line <= len(source_lines) else ""
        return where(line, column) + text
    others = (f"the other {threads - waited} at {shown(other)}" if other else
              f"the other {threads - waited} returned without reaching it")
    raise LabError(
        f"{kernel}: barrier not reached by every thread of the block: {waited} of {threads} threads of block {block} "
        f"waited at the __syncthreads() at {shown(at)}, {others}. CUDA allows __syncthreads() in conditional code only "
        "where the condition is the same for every thread of the block (CUDA C++ Programming Guide, Synchronization "
        "Functions); otherwise a GPU may hang or give wrong results. Keep every thread of the block to each barrier: "
        "guard the work (if (i < n) { ... }), not the barrier.")


def _crashed(done, stats: pathlib.Path, exe, kernel, grid, block, source, memory: int) -> None:
    """Raise the `LabError` that says why the traced run of `kernel` failed: a fault the runtime
    named in `stats` (trace_runtime.cpp: a barrier not every thread reaches, an allocation that
    failed, a stack overflow), the memory limit of `memory` bytes reached, a deadlock, or a crash
    (a signal, most often an access far from any array, which no guard zone catches)."""
    limit = f"the lab's memory limit is {fmt_bytes(memory)} (its arrays and {fmt_bytes(RUN_MEMORY)} beyond them)"
    text = stats.read_text(errors="replace") if stats.exists() else ""
    row = next((r.split() for r in text.splitlines() if r.startswith("fault ")), None)
    if row and row[1] == "barrier":
        waited, threads, site, block_id = int(row[2], 16), int(row[3], 16), row[4], int(row[5], 16)
        _barrier_error(kernel, waited, threads, _index(block_id, grid), _lines(exe, [site])[site], None, source)
    if row and row[1] == "memory":
        who = "the lab itself" if row[2] == "-" else (f"thread {_index(int(row[2], 16), block)} of block "
                                                      f"{_index(int(row[3], 16), grid)}")
        raise LabError(f"{kernel} ran out of memory: an allocation failed (std::bad_alloc) in {who}: a new or malloc "
                       f"in the kernel asking for more than the traced run may use ({limit}), or arrays too large to trace here?")
    if row and row[1] == "stack":
        raise LabError(f"{kernel} overflowed its thread's stack ({int(row[2], 16) // 1024} kB per thread in the lab): "
                       f"thread {_index(int(row[3], 16), block)} of block {_index(int(row[4], 16), grid)} went past "
                       "it. Deep recursion or a large local array?")
    if out_of_memory(done.stderr):
        raise LabError(f"{kernel} ran out of memory: {limit}.\n" + done.stderr[-500:])
    if "deadlock:" in done.stderr:
        raise LabError(f"{kernel} never finishes: a __syncthreads() that not every thread of the block reaches, "
                       "or a shuffle that not every lane of the warp reaches, while the others wait at another.\n"
                       + done.stderr[done.stderr.index("deadlock:"):][:500])
    why = (f"signal {signal.Signals(-done.returncode).name}" if done.returncode < 0
           else f"exit status {done.returncode}")
    raise LabError(f"{kernel} crashed ({why}): an access far outside its arrays, or a bad pointer (malloc "
                   f"returns NULL past the lab's memory limit of {fmt_bytes(memory)})?\n" + done.stderr[-2000:])


def _sites(rows, where, text) -> list:
    """One `Site` per access in the source: the code offsets of one line and column (a loop the
    compiler unrolled, say) summed; without a column, one per offset."""
    merged = {}
    for r in rows:
        n = [int(v) for v in r[2:]]
        line, column = where[r[1]]
        key = (line, column, n[0], n[1], n[2]) if column else r[1]
        if key in merged:
            old = merged[key]
            for name, value in zip(("instructions", "lanes", "divergent", "sectors", "ideal_sectors", "wavefronts",
                                    "ideal_wavefronts"), n[3:10]):
                setattr(old, name, getattr(old, name) + value)
        else:
            merged[key] = Site(line, ("global", "shared")[n[0]], bool(n[1]), *n[2:10], column, text(line))
    return list(merged.values())


def _index(linear: int, shape: tuple) -> tuple:
    """The (x, y, z) of a linear thread or block id in a block or grid of `shape`."""
    return (linear % shape[0], linear // shape[0] % shape[1], linear // (shape[0] * shape[1]))


def _races(rows, where, text, block, grid) -> list:
    """`Race`s from the runtime's hazard rows (threads and blocks as linear ids), most frequent
    first; `one_warp` where no hazard of the trace is between two warps."""
    uninitialized = HAZARDS.index("uninitialized read")
    one_warp = not any(int(r[9]) for r in rows)
    races = []
    for r in rows:
        hazard, first, second, count, t1, t2, b = int(r[1]), r[2], r[3], *map(int, r[4:8])
        (l1, c1), (l2, c2) = where[first], where[second]
        races.append(Race(HAZARDS[hazard], (l1, c1, text(l1)), (l2, c2, text(l2)), (_index(t1, block), _index(t2, block)),
                          _index(b, grid), count, one_warp and hazard != uninitialized))
    return sorted(races, key=lambda race: (race.hazard == "uninitialized read", -race.count, race.first, race.second))


def _parse(stats, exe, kernel, grid, block, traced, blocks, spec, shared, source, output) -> Trace:
    rows = [r.split() for r in stats if r]
    hazards = [r for r in rows if r[0] == "hazard"]
    barriers = [r for r in rows if r[0] == "barriers"]
    where = _lines(exe, [r[1] for r in rows if r[0] == "site"] + [r[2] for r in rows if r[0] == "oob"]
                   + [pc for r in hazards for pc in r[2:4]] + [pc for r in barriers for pc in r[1:3]])
    for r in barriers:  # two calls of __syncthreads() at one opening: two barriers unless one call the compiler copied
        if where[r[1]] != where[r[2]]:
            _barrier_error(kernel, int(r[3]), int(r[4]), _index(int(r[5]), grid), where[r[1]], where[r[2]], source)
    source_lines = source.splitlines()

    def text(line):
        return source_lines[line - 1].strip() if 0 < line <= len(source_lines) else ""
    other = {r[0]: int(r[1]) for r in rows if r[0] in ("l2_sectors", "local", "rounds")}
    for r in rows:
        if r[0] == "overflow":
            raise LabError(f"{kernel} makes more than {int(r[1]):,} accesses in one block between two "
                           "__syncthreads(): trace it at a smaller size")
        if r[0] == "oob":
            _out_of_bounds(r, where[r[2]][0], kernel, spec, shared, source)
    footprint = [tuple(int(v) for v in r[2:5]) for r in rows if r[0] == "footprint"]
    races = _races(hazards, where, text, block, grid)
    return Trace(kernel, grid[:3], block[:3], _sites([r for r in rows if r[0] == "site"], where, text), footprint,
                 other["l2_sectors"], other["local"], traced, blocks, [v for k, v in spec if k == "P"], races,
                 output, other.get("rounds", 0))


def _out_of_bounds(row, line, kernel, spec, shared, source) -> None:
    """LabError for the runtime's "oob" row: `shared` is (`_shared_gaps`, the launch's shared_mem)."""
    count, write, array, offset = int(row[1]), bool(int(row[3])), int(row[4]), int(row[5])
    thread, block = tuple(int(v) for v in row[6:9]), tuple(int(v) for v in row[9:12])
    what = "writes" if write else "reads"
    if array >= 0:
        names = [n for (t, n) in parameters(source, kernel) if "*" in t]
        nbytes = [v for k, v in spec if k == "P"][array].nbytes
        place = f"byte {offset} of {names[array]}, which holds bytes 0 to {nbytes - 1}"
    elif array == -2:
        place = (f"byte {offset} of the launch's dynamic shared memory (extern __shared__), which holds the "
                 f"shared_mem={shared[1]} bytes the launch asked for")
    elif array <= -3:
        name, _, nbytes, _, _ = shared[0][-3 - array]
        place = f"byte {offset} of the __shared__ array {name}, which holds bytes 0 to {nbytes - 1}"
    else:
        place = "an address in none of its arrays"
    raise LabError(f"{kernel} {what} out of bounds at line {line}: thread {thread} of block {block} {what} {place}; "
                   f"{count} such accesses in all. Guard the index (if (i < n)).")


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
