"""The lab's third room, the runner: a built kernel run on the CPU within the lab's limits, and
each fault it meets said in the learner's terms at the learner's line. ARCHITECTURE.md, "The
kernel lab" (reader -> builder -> runner -> reporter); chapter 2's lab.

Two ways to run. Traced (`run_traced`): the builder's executable in a subprocess with a time,
memory and output limit (`limits`), the launch written to a spec file, the runtime's counts read
back from a stats file; a crash, an endless loop, an access out of bounds, a barrier not every
thread reaches or a stack overflow raises `LabError` naming the line. Plain (`Emulator`): the
builder's shared library loaded in this process, for the tests' and the CuPy stand-in's kernels
(checked code, no limits, nothing counted)."""

from __future__ import annotations

import collections
import ctypes
import math
import numbers
import os
import pathlib
import signal
import shutil
import tempfile
from dataclasses import dataclass, field

import numpy as np

from .. import _check
from ..cuda import compiler
from ..hardware import MAX_BLOCK, MAX_BLOCK_DIM, MAX_GRID_DIM
from ..units import fmt_bytes
from .builder import library, private
from .limits import INPUT_BYTES, OUTPUT_LIMIT, PROGRAM_MEMORY, RUN_MEMORY, LabError, out_of_memory, run
from .reader import (MAX_DYNAMIC_SHARED, arguments, device_statics, entries, instantiate, lines, shared_gaps,
                     source_line, where)

MAX_THREADS = 2**16
"""The most CUDA threads a trace traces; a larger launch traces an evenly spaced sample of its
blocks and scales the counts, and runs the rest untraced, so its arrays hold the whole result."""
PROGRAM_THREADS = 2**13
"""The most CUDA threads each launch of a whole program traces (an evenly spaced sample of its
blocks, the counts scaled; every block runs): a program makes many launches, each as large as
its author's GPU takes, and its first run should take seconds, not minutes."""
MAX_LAUNCH_BLOCKS = 2**32 - 1
"""The most blocks a traced launch may have: the runtime numbers a block in 32 bits (CUDA
allows more, up to `MAX_GRID_DIM`'s product)."""
FAILED_OUTPUT_LINES = 20
"""Lines of the kernel's printf output a failed run's `LabError` shows (the last ones)."""
OUTPUT_WIDTH = 300
"""Characters of one printed line shown; a longer one is cut."""


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


LEAST_TIMEOUT = 1.0
"""The shortest time limit a traced run may have (seconds): starting one takes about 0.1 s on a
busy machine, so a shorter limit would stop a correct kernel as an endless loop."""


@dataclass(frozen=True)
class Launch:
    """A launch the lab runs: `grid` and `block` as CUDA's dim3 (x, y, z), `shared_mem` bytes of
    dynamic shared memory, at most `timeout` seconds, at most `max_threads` CUDA threads traced."""

    grid: tuple
    block: tuple
    shared_mem: int
    timeout: float
    max_threads: int

    @property
    def threads(self) -> int:
        """Threads per block."""
        return math.prod(self.block)

    @property
    def blocks(self) -> int:
        """Blocks in the grid."""
        return math.prod(self.grid)


def launch(grid, block, shared_mem: int = 0, timeout: float = 30.0, max_threads: int = MAX_THREADS) -> Launch:
    """The checked `Launch`: ValueError or TypeError naming the parameter for one CUDA would
    refuse (grid and block past `MAX_GRID_DIM`, `MAX_BLOCK_DIM` or `MAX_BLOCK` threads) or the
    lab cannot run (more than `MAX_LAUNCH_BLOCKS` blocks, `shared_mem` past `MAX_DYNAMIC_SHARED`,
    a timeout that is not a positive number of seconds, `max_threads` below one)."""
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
    if not LEAST_TIMEOUT <= timeout < math.inf:
        raise ValueError(f"timeout must be a finite number of seconds, at least {LEAST_TIMEOUT:g} (starting a traced "
                         f"run alone takes about a tenth of that), got {timeout!r}")
    if not _is_int(max_threads):
        raise TypeError(f"max_threads must be an int (the most CUDA threads traced), got {max_threads!r}")
    if max_threads < 1:
        raise ValueError(f"max_threads must be at least 1 (a block at least is traced), got {max_threads!r}")
    return Launch(grid, block, shared_mem, float(timeout), int(max_threads))


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


@dataclass
class Run:
    """A traced run that finished: the runtime's `rows` (each line of its stats file, split),
    `where` each code offset they name is in the source ((line, column)) and the line that
    called it (`calls`: `reader.lines`), what the kernel printed (`output`) and how many blocks
    ran (`traced`)."""

    rows: list
    where: dict
    calls: dict
    output: str
    traced: int
    places: dict = field(default_factory=dict)  # an offset in a header's function not inlined: "header:line"


def run_traced(exe: pathlib.Path, source: str, kernel: str, names: list, shape: Launch, params: list,
               values: list) -> Run:
    """Run `kernel` (the `names.index(kernel)`-th entry of the traced executable `exe`, built
    from `source`) on `shape` with `values` (`reader.arguments`) for its `params`: every block runs, an
    evenly spaced sample of them traced where the launch has more than `shape.max_threads` threads; each array written
    back after the run. LabError where it fails (`_crashed`, `_faults`), ending with the last
    lines it printed (`FAILED_OUTPUT_LINES`)."""
    grid, block = shape.grid, shape.block
    traced = max(1, min(shape.blocks, shape.max_threads // shape.threads))
    chosen = np.unique(np.linspace(0, shape.blocks - 1, traced).round().astype(np.int64))
    arrays = [(name, v.nbytes) for (_, name), v in zip(params, values) if isinstance(v, np.ndarray)]
    with tempfile.TemporaryDirectory(prefix="gm-lab-") as tmp:
        tmp = pathlib.Path(tmp)
        spec = [f"kernel {names.index(kernel)}", f"grid {grid[0]} {grid[1]} {grid[2]}",
                f"block {block[0]} {block[1]} {block[2]}", "blocks " + " ".join(map(str, chosen)),
                f"shared_mem {shape.shared_mem}"]
        gaps = shared_gaps(exe)
        spec += [f"gap {lo} {start} {end}" for _, lo, _, start, end in gaps]
        spec += [f"device {lo} {size}" for lo, size in device_statics(exe)]  # global memory, not shared
        for i, value in enumerate(values):
            if isinstance(value, np.ndarray):
                path = tmp / f"arg{i}.bin"
                value.tofile(path)
                spec.append(f"arg P {value.nbytes} {path}")
            elif value is None:
                spec.append("arg N")
            else:
                spec.append(f"arg V {value.tobytes().hex()}")
        (tmp / "spec").write_text("\n".join(spec) + "\n")
        memory = RUN_MEMORY + sum(nbytes for _, nbytes in arrays)
        done = run([exe, tmp / "spec", tmp / "stats"], shape.timeout, memory)
        try:
            if done.stopped == "time":
                large = (f" Or a launch too large to run here: every one of its {shape.threads * shape.blocks:,} "
                         "threads runs on the CPU (a sample traced), so ask for a smaller size or a longer timeout."
                         if len(chosen) < shape.blocks else "")
                raise LabError(f"{kernel} ran past the time limit of {shape.timeout:g} s: an endless loop, a "
                               "__syncthreads() that not every thread of the block reaches, or a shuffle that not "
                               "every lane of the warp reaches?" + large)
            if done.stopped == "output":
                raise LabError(f"{kernel} printed more than the lab's output limit of {fmt_bytes(OUTPUT_LIMIT)} and "
                               "was stopped: a printf in a loop, or in every thread?")
            if done.returncode:
                _wrong_size(tmp / "stats", params, values)
                _crashed(done, tmp / "stats", exe, kernel, grid, block, source, memory)
            rows = [r.split() for r in (tmp / "stats").read_text().split("\n") if r]
            for i, value in enumerate(values):
                if isinstance(value, np.ndarray) and value.flags.writeable:  # a read-only one is a const parameter's
                    value[...] = np.fromfile(tmp / f"arg{i}.bin", dtype=value.dtype).reshape(value.shape)
            calls, places = {}, {}
            where = lines(exe, [r[1] for r in rows if r[0] == "site"] + [r[2] for r in rows if r[0] == "oob"]
                          + [pc for r in rows if r[0] == "hazard" for pc in r[2:4]]
                          + [pc for r in rows if r[0] == "barriers" for pc in r[1:3]], calls, places)
            _faults(rows, where, kernel, shape, arrays, gaps, source)
            return Run(rows, where, calls, done.stdout, len(chosen), places)
        except LabError as error:
            if not done.stdout:
                raise
            raise LabError(f"{error}\n\nWhat it printed before it failed (the lab's thread order, not a GPU's):\n\n"
                           + printed(done.stdout, FAILED_OUTPUT_LINES, last=True)) from None


MAX_TRACED_LAUNCHES = 100
"""Launches of a whole program traced, each counted and reported; later ones run untraced."""

REPEATED_LOOP, REPEATS_HINT = 10, 3
"""A program stopped at its time limit in a launch traced `REPEATED_LOOP` times before at its line
is advised to pass `repeats=REPEATS_HINT` (a benchmark's loop)."""


@dataclass
class ProgramLaunch:
    """One traced launch of a whole program: the `kernel` expression as written (one space between words),
    the `line` it is launched at, its `shape`, how many blocks ran traced, the runtime's `rows`
    for it and the program's device `arrays` then ((name, bytes) each)."""

    kernel: str
    line: int
    shape: Launch
    traced: int
    rows: list
    arrays: list


@dataclass
class ProgramRun:
    """A whole program that ran to its end: its traced `launches` in order, where each code
    offset they name is (`Run.where`, `Run.calls`), what it printed, its exit status, the
    launches past `MAX_TRACED_LAUNCHES` run untraced, the launches not run again (program_runtime.cpp:
    each the same as one that ran, on the same contents of what it touched), the launches past
    the `repeats` runs of the same kernel, configuration and arguments not run (`capped`), the events it
    recorded, the launches CUDA would have refused ((kernel, line, grid, block, shared_mem) each),
    the cudaMalloc calls past its memory ((bytes, line) each) and the cooperative launches (run untraced)."""

    launches: list
    where: dict
    calls: dict
    output: str
    returncode: int
    untraced: int
    repeated: int
    capped: int
    events: int
    refused: list
    unallocated: list
    cooperative: int
    places: dict = field(default_factory=dict)  # as `Run.places`


_NUMBERS_AFTER_KERNEL = {"launch": 9, "refused": 8}
"""How many numbers follow the kernel's name in program_runtime.cpp's "launch" and "refused" rows."""


def _sections(text: str) -> tuple:
    """The program runtime's stats `text` (program_runtime.cpp) as (the launches, each a dict
    with its rows, the last being the one a fault stopped where it has no "end"; the other rows)."""
    launches, other, current = [], [], None
    for row in (r.split() for r in text.splitlines() if r):
        if row[0] in _NUMBERS_AFTER_KERNEL:  # the kernel's name may hold spaces: `k<128, true>`
            row = [row[0], " ".join(row[1:-_NUMBERS_AFTER_KERNEL[row[0]]]), *row[-_NUMBERS_AFTER_KERNEL[row[0]]:]]
        if row[0] == "launch":
            current = {"kernel": row[1], "line": int(row[2]), "dims": [int(v) for v in row[3:10]],
                       "traced": int(row[10]), "rows": [], "arrays": [], "ended": False}
            launches.append(current)
        elif row[0] == "end":
            current["ended"], current = True, None
        elif current is not None and row[0] == "array":
            current["arrays"].append(row[1:])
        elif current is not None:
            current["rows"].append(row)
        else:
            other.append(row)
    return launches, other


def _loop_hint(launches: list) -> str:
    """Where one line's launch was traced `REPEATED_LOOP` times or more: a sentence on `repeats`."""
    found = collections.Counter((s["kernel"], s["line"]) for s in launches).most_common(1)
    if not found or found[0][1] < REPEATED_LOOP:
        return ""
    (kernel, line), runs = found[0]
    return (f" Its launch of {kernel} at line {line} ran {runs} times or more: where that is a benchmark's loop, "
            f"run_program(..., repeats={REPEATS_HINT}) runs each launch with the same arguments at most {REPEATS_HINT} "
            "times and counts the rest.")


def copy_inputs(folder: pathlib.Path | None, into: pathlib.Path, name: str) -> None:
    """Copy what `folder` holds (its input files and data folders; links copied as what they
    point to; sockets, FIFOs and devices left out; `name`, the program itself, too) into the run
    folder `into`, so that nothing the program writes can reach the learner's files. LabError
    where it holds more than `INPUT_BYTES`."""
    entries = [e for e in sorted(folder.iterdir()) if e.name != name] if folder else []
    total = 0
    for entry in entries:
        for path in [entry, *(entry.rglob("*") if entry.is_dir() else ())]:
            total += path.stat().st_size if path.is_file() else 0
    if total > INPUT_BYTES:
        raise LabError(f"the program's folder {folder} holds {total / 2**20:,.0f} MiB, more than the "
                       f"{INPUT_BYTES // 2**20} MiB the lab copies for a run: put the program and its input files "
                       "in a folder of their own")
    for entry in entries:
        if entry.is_dir():
            shutil.copytree(entry, into / entry.name, ignore=_not_files)
        elif entry.is_file():
            shutil.copyfile(entry, into / entry.name)


def _not_files(where: str, names: list) -> list:
    """What a copied data folder leaves out: anything neither a folder nor a regular file."""
    return [n for n in names if not (os.path.isdir(os.path.join(where, n)) or os.path.isfile(os.path.join(where, n)))]


def run_program_traced(exe: pathlib.Path, name: str, source: str, argv: tuple, timeout: float, max_threads: int,
                       properties: dict, repeats: int | None = None, memory: int = PROGRAM_MEMORY,
                       folder: pathlib.Path | None = None) -> ProgramRun:
    """Run the whole program `exe` (built from `source` by `builder.build(program=True)`) as
    `./name` with `argv` in a private temporary folder (holding copies of what the source's
    `folder`, if any, holds: `copy_inputs`), within `timeout` seconds and `memory` bytes, each
    launch sampled to `max_threads` traced threads, `properties` what cudaGetDeviceProperties
    gives (program_runtime.cpp's "prop" lines), each launch run at most `repeats` times with the
    same kernel, configuration and arguments (None: every time). LabError where it faults (named as
    `run_traced` names a kernel's faults, at the launch it stopped) or crashes in its host code."""
    with tempfile.TemporaryDirectory(prefix="gm-lab-") as tmp:
        tmp = pathlib.Path(tmp)
        gaps = shared_gaps(exe)
        spec = [f"max_threads {max_threads}", f"max_launches {MAX_TRACED_LAUNCHES}", f"max_repeats {repeats or 0}",
                *(f"gap {lo} {start} {end}" for _, lo, _, start, end in gaps),
                *(f"shared {lo} {size}" for lo, size in sorted({(lo, size) for _, lo, size, _, _ in gaps})),
                *(f"static {lo} {size}" for lo, size in device_statics(exe)),
                *(f"prop {k} {v}" for k, v in properties.items())]
        (tmp / "spec").write_text("\n".join(spec) + "\n")
        (tmp / "run").mkdir()  # its working folder, holding it under its own name (argv[0], as the learner runs it)
        (tmp / "run" / name).symlink_to(exe)
        copy_inputs(folder, tmp / "run", name)
        done = run(["env", "-C", tmp / "run", f"GM_LAB_SPEC={tmp / 'spec'}", f"GM_LAB_STATS={tmp / 'stats'}", f"./{name}", *argv],
                   timeout, memory)
        text = (tmp / "stats").read_text(errors="replace") if (tmp / "stats").exists() else ""
        launches, other = _sections(text)
        running = launches[-1] if launches and not launches[-1]["ended"] else None
        kernel = f"the program's launch of {running['kernel']} at line {running['line']}" if running else "the program"
        shape = (running["dims"][:3], running["dims"][3:6]) if running else ((1, 1, 1), (1, 1, 1))
        try:
            if done.stopped == "time":
                raise LabError(f"the program ran past the time limit of {timeout:g} s"
                               + (f", in its launch of {running['kernel']} at line {running['line']}" if running else "")
                               + ": an endless loop, a barrier or shuffle not every thread reaches, or more work than "
                               "the CPU does in that time (pass a larger timeout, or a smaller size through argv)?"
                               + ("" if repeats else _loop_hint(launches)))
            if done.stopped == "output":
                raise LabError(f"the program printed more than the lab's output limit of {fmt_bytes(OUTPUT_LIMIT)} "
                               "and was stopped: a printf in a loop, or in every thread?")
            if done.returncode < 0 or any(r[0] == "fault" for r in other + (running["rows"] if running else [])):
                _crashed(done, tmp / "stats", exe, kernel, *shape, source, memory)
            if done.returncode == 125:  # limits.run's shell could not bound the memory
                raise LabError(done.stderr.strip())
            finished = [s for s in launches if s["ended"]]
            offsets = [r[1] for s in finished for r in s["rows"] if r[0] == "site"]
            offsets += [r[2] for s in finished for r in s["rows"] if r[0] == "oob"]
            offsets += [pc for s in finished for r in s["rows"] if r[0] in ("hazard", "barriers")
                        for pc in (r[2:4] if r[0] == "hazard" else r[1:3])]
            offsets += [a[2] for s in finished for a in s["arrays"]] + [r[2] for r in other if r[0] == "nomemory"]
            calls, places = {}, {}
            where_of = lines(exe, sorted(set(offsets)), calls, places)
            traced = []
            for s in finished:
                arrays = [(f"the array cudaMalloc'd at line {where_of[a[2]][0]}" + (" (freed)" if a[3] == "1" else ""),
                           int(a[1])) for a in s["arrays"]]
                dims = s["dims"]
                one = Launch(tuple(dims[:3]), tuple(dims[3:6]), dims[6], timeout, max_threads)
                _faults(s["rows"], where_of, f"{s['kernel']} (launched at line {s['line']})", one, arrays, gaps, source)
                traced.append(ProgramLaunch(s["kernel"], s["line"], one, s["traced"], s["rows"], arrays))
        except LabError as error:
            if not done.stdout:
                raise
            raise LabError(f"{error}\n\nWhat it printed before it failed (the lab's thread order, not a GPU's):\n\n"
                           + printed(done.stdout, FAILED_OUTPUT_LINES, last=True)) from None
        numbers = {r[0]: int(r[1]) for r in other if r[0] in ("untraced", "repeated", "capped", "events", "cooperative")}
        refused = [(r[1], int(r[2]), tuple(map(int, r[3:6])), tuple(map(int, r[6:9])), int(r[9]))
                   for r in other if r[0] == "refused"]
        unallocated = [(int(r[1]), where_of[r[2]][0]) for r in other if r[0] == "nomemory"]
        return ProgramRun(traced, where_of, calls, done.stdout, done.returncode, numbers.get("untraced", 0),
                          numbers.get("repeated", 0), numbers.get("capped", 0), numbers.get("events", 0), refused,
                          unallocated, numbers.get("cooperative", 0), places)


def _faults(rows, where, kernel, shape: Launch, arrays: list, gaps: list, source: str) -> None:
    """Raise the `LabError` of a fault the runtime's `rows` record in a run that finished: two
    __syncthreads() calls met at one opening of a barrier, too many accesses between barriers,
    an access out of bounds (`_out_of_bounds`; `arrays` (name, bytes) each)."""
    for r in rows:  # two calls of __syncthreads() at one opening: two barriers unless one call the compiler copied
        if r[0] == "barriers" and where[r[1]] != where[r[2]]:
            _barrier_error(kernel, int(r[3]), int(r[4]), index(int(r[5]), shape.grid), where[r[1]], where[r[2]], source)
    for r in rows:
        if r[0] == "overflow":
            raise LabError(f"{kernel} makes more than {int(r[1]):,} accesses in one block between two "
                           "__syncthreads(): trace it at a smaller size")
        if r[0] == "oob":
            _out_of_bounds(r, where[r[2]][0], kernel, arrays, (gaps, shape.shared_mem), source)


def _barrier_error(kernel, waited, threads, block, at, other, source) -> None:
    """Raise the `LabError` of a __syncthreads() not every thread of the block reaches: `waited`
    of `threads` threads of `block` waited at the call at `at` (line, column), the others at
    `other` or, where that is None, returned without reaching it."""
    def shown(place):
        text = source_line(source, place[0])
        return where(*place) + (f" (`{text}`)" if text else "")
    others = (f"the other {threads - waited} at {shown(other)}" if other else
              f"the other {threads - waited} returned without reaching it")
    raise LabError(
        f"{kernel}: barrier not reached by every thread of the block: {waited} of {threads} threads of block {block} "
        f"waited at the __syncthreads() at {shown(at)}, {others}. CUDA allows __syncthreads() in conditional code only "
        "where the condition is the same for every thread of the block (CUDA C++ Programming Guide, Synchronization "
        "Functions); otherwise a GPU may hang or give wrong results. Keep every thread of the block to each barrier: "
        "guard the work (if (i < n) { ... }), not the barrier.")


def _wrong_size(stats: pathlib.Path, params: list, values: list) -> None:
    """TypeError naming the parameter where the traced run refused a value of another size than its
    type's (trace_runtime.cpp's "fault argument": a struct whose fields are not the C struct's)."""
    text = stats.read_text(errors="replace") if stats.exists() else ""
    row = next((r.split() for r in text.splitlines() if r.startswith("fault argument ")), None)
    if row is None:
        return
    i, given, want = (int(v, 16) for v in row[2:5])
    ctype, name = params[i]
    fields = getattr(getattr(values[i], "dtype", None), "names", None)
    raise TypeError(f"args: {name} is {ctype}, which takes {want} bytes (its sizeof in C++ here), got {given}"
                    + (f" in the fields {', '.join(fields)}" if fields else "") + ": give it the struct's fields "
                    "in their C order and types, aligned as C aligns them (np.dtype([...], align=True), or a "
                    "ctypes.Structure)")


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
        _barrier_error(kernel, waited, threads, index(block_id, grid), lines(exe, [site])[site], None, source)
    if row and row[1] == "grid":
        line, column = lines(exe, [row[2]])[row[2]]
        text = source_line(source, line)
        at = f"grid.sync() at {where(line, column)}" + (f" (`{text}`)" if text else "")
        waited, blocks = int(row[3], 16), int(row[4], 16)
        if not blocks:
            raise LabError(f"{kernel} waits at {at}, but its launch is not cooperative: a grid's blocks may wait for "
                           "each other only in a launch by cudaLaunchCooperativeKernel (every block resident at once), "
                           "which the lab runs in a whole program (gm.lab.run_program).")
        raise LabError(f"{kernel} never finishes: {waited} of its {blocks} blocks wait at {at} while the others "
                       "returned without reaching it; every block of the grid must reach each grid.sync().")
    if row and row[1] == "memory":
        who = "the lab itself" if row[2] == "-" else (f"thread {index(int(row[2], 16), block)} of block "
                                                      f"{index(int(row[3], 16), grid)}")
        raise LabError(f"{kernel} ran out of memory: an allocation failed (std::bad_alloc) in {who}: a new or malloc "
                       f"in the kernel asking for more than the traced run may use ({limit}), or arrays too large to trace here?")
    if row and row[1] == "stack":
        raise LabError(f"{kernel} overflowed its thread's stack ({int(row[2], 16) // 1024} kB per thread in the lab): "
                       f"thread {index(int(row[3], 16), block)} of block {index(int(row[4], 16), grid)} went past "
                       "it. Deep recursion or a large local array?")
    if row and row[1] == "signal":
        signal_name, pc, address = signal.Signals(int(row[2], 16)).name, row[3], int(row[6], 16)
        line, column = lines(exe, [pc])[pc]
        text = source_line(source, line)
        at = f" at {where(line, column)}" + (f" (`{text}`)" if text else "") if line else " (in code the lab cannot place)"
        raise LabError(f"{kernel} crashed ({signal_name}){at}: thread {index(int(row[4], 16), block)} of block "
                       f"{index(int(row[5], 16), grid)} touched address {address:#x}, which is none of the kernel's "
                       "memory: an index past the end of a local array (which the lab does not guard), a pointer "
                       f"never set or set to NULL (malloc returns NULL past the lab's memory limit of {fmt_bytes(memory)}), "
                       "or an index that wrapped" + _wrapped(grid, block) + ".")
    if row and row[1] == "host":
        signal_name, pc, address = signal.Signals(int(row[2], 16)).name, row[3], int(row[4], 16)
        line, column = lines(exe, [pc])[pc]
        text = source_line(source, line)
        at = f" at {where(line, column)}" + (f" (`{text}`)" if text else "") if line else " (in code the lab cannot place)"
        raise LabError(f"{kernel} crashed ({signal_name}) in its host code{at}, touching address {address:#x}: a "
                       "pointer never set, set to NULL or freed, or a device array read on the host (copy it back "
                       "with cudaMemcpy first)?")
    if out_of_memory(done.stderr):
        raise LabError(f"{kernel} ran out of memory: {limit}.\n" + done.stderr[-500:])
    if "deadlock:" in done.stderr:
        raise LabError(f"{kernel} never finishes: a __syncthreads() that not every thread of the block reaches, "
                       "or a shuffle that not every lane of the warp reaches, while the others wait at another.\n"
                       + done.stderr[done.stderr.index("deadlock:"):][:500])
    why = (f"signal {signal.Signals(-done.returncode).name}" if done.returncode < 0
           else f"exit status {done.returncode}")
    why += _wrapped(grid, block)
    raise LabError(f"{kernel} crashed ({why}): an access far outside its arrays, or a bad pointer (malloc "
                   f"returns NULL past the lab's memory limit of {fmt_bytes(memory)})?\n" + done.stderr[-2000:])


def _wrapped(grid: tuple, block: tuple) -> str:
    """Where a launch has more threads than an int holds, the clause that says an int index wraps."""
    threads = math.prod(grid) * math.prod(block)
    return ("" if threads <= 2**31 - 1 else f"; the launch has {threads:,} threads, more than an int holds: an index "
            "computed as an int (blockIdx.x * blockDim.x + threadIdx.x) wraps to a negative number past 2^31 - 1, so "
            "compute it as size_t")


def index(linear: int, shape: tuple) -> tuple:
    """The (x, y, z) of a linear thread or block id in a block or grid of `shape`."""
    return (linear % shape[0], linear // shape[0] % shape[1], linear // (shape[0] * shape[1]))


def _out_of_bounds(row, line, kernel, arrays, shared, source) -> None:
    """LabError for the runtime's "oob" row: `shared` is (`reader.shared_gaps`, the launch's shared_mem)."""
    count, write, array, offset = int(row[1]), bool(int(row[3])), int(row[4]), int(row[5])
    thread, block = tuple(int(v) for v in row[6:9]), tuple(int(v) for v in row[9:12])
    what = "writes" if write else "reads"
    if array >= 0:
        name, nbytes = arrays[array]
        place = f"byte {offset} of {name}, which holds bytes 0 to {nbytes - 1}"
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


class Emulator:
    """Runs kernels in this process: each source built once into a shared library in
    `build_dir` (a private folder: `builder.private`), verified by its hash before it is loaded
    (`builder.library`)."""

    def __init__(self, build_dir: pathlib.Path):
        if not shutil.which("g++"):
            raise RuntimeError("the CPU emulator needs g++ (C++20)")
        self.build_dir = private(pathlib.Path(build_dir))
        self.libraries: dict = {}

    def compile(self, source: str, names: list | None = None):
        """The loaded library of `source` that launches `names` (`entries(source)` by default);
        LabError where g++ refuses it or a limit stops g++."""
        names = entries(source) if names is None else names
        key = (source, tuple(names))
        if key not in self.libraries:
            self.libraries[key] = ctypes.CDLL(str(library(self.build_dir, source, names)))
        return self.libraries[key]
    def launch(self, source: str, kernel: str, grid, block, args, shared_mem: int = 0) -> None:
        """Run `kernel` (a name or a name expression) of `source` on a grid: `args` are NumPy
        arrays (passed as device pointers) and scalars, in the kernel's parameter order;
        `shared_mem` bytes of dynamic shared memory."""
        names = entries(source, kernel)
        lib = self.compile(source, names)
        k, params = instantiate(source, kernel)
        held = [None if v is None else np.asarray(v) for v in arguments(params, args, k.defaults)]  # a scalar: a 0-d array
        pointers = (ctypes.c_void_p * max(1, len(held)))(*[None if v is None else v.ctypes.data for v in held])
        grid, block = (tuple(grid) + (1, 1))[:3], (tuple(block) + (1, 1))[:3]
        lib.emu_launch_kernel(names.index(kernel), *map(ctypes.c_uint, grid + block), ctypes.c_size_t(shared_mem), pointers)

    def run(self, plan) -> np.ndarray:
        """Execute every step of `plan` and return its result buffer."""
        source = compiler.kernel_source(plan.file)
        buffers = {name: np.ascontiguousarray(a, dtype=np.float32).copy() for name, a in plan.inputs.items()}
        buffers.update({name: np.zeros(shape, np.float32) for name, shape in plan.outputs.items()})
        for step in plan.steps:
            args = [buffers[a] if isinstance(a, str) else a for a in step.args]
            self.launch(source, step.kernel, step.grid, step.block, args)
        return buffers[plan.result]

