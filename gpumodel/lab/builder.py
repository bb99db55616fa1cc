"""The lab's second room, the builder: the learner's source compiled by g++ against the lab's
stand-in for CUDA (`cuda_emu.h`, `include/`), into a traced executable (`build`, linked with
`trace_runtime.cpp`) or the CPU emulator's shared library (`library`), each kept in a private
cache by content. ARCHITECTURE.md, "The kernel lab" (reader -> builder -> runner -> reporter);
chapter 2's lab.

The cache: `$GPUMODEL_CACHE/lab` where that variable is set (tests point it at a folder of
their own), else `$XDG_CACHE_HOME/gpumodel/lab`, else `~/.cache/gpumodel/lab`; folders created
mode 0700. Before each use the folder must be a directory (not a symbolic link), owned by the
user, with no permission for group or others, in a folder no one else may rename it out of
(owned by the user or root, writable by no one else unless sticky, as /tmp is); anything else
is refused (`UnsafeCache`), never repaired or worked around. An entry `name` is a manifest
`name.sha256` holding the SHA-256 of the file built (content-addressed beside it as
`stem.<hash>suffix`, so that two processes building at once never see half a file) or the
error g++ gave; a file whose content no longer hashes to its manifest is deleted and built
again, never run or linked. g++ runs under the compiler's limits (`limits`)."""

from __future__ import annotations

import concurrent.futures
import functools
import hashlib
import itertools
import os
import pathlib
import re
import shutil
import threading
import time

from ..folders import create, problems
from ..units import fmt_bytes
from .limits import COMPILE_MEMORY, COMPILE_SECONDS, LabError, limit_message, run
from .reader import (ARCH, SOURCE_NAME, SUPPORTED, arch_number, entries, for_gxx, host_code, kernel_pointer, opened,
                     own_headers, without_framework)

HERE = pathlib.Path(__file__).resolve().parent
INCLUDE = HERE / "include"
"""Stand-ins for the CUDA headers device code includes (`cuda_runtime.h`, `cooperative_groups.h`
...), first on the include path."""
KERNEL_FLAGS = ["-std=c++20", "-O1", "-gdwarf-4", "-fno-tree-vectorize", "-fno-tree-sra", "-fsanitize=thread",
                "-fstack-clash-protection", "-pthread", "-fPIE", "-ffunction-sections", "-fdata-sections"]
"""-O1 keeps values in registers as a GPU compiler would; no vectorizer, which would merge a
thread's loads; no scalar replacement of aggregates, which would split a float4 (or float2,
int4, double2) load or store into its fields where the GPU issues one 64- or 128-bit access
(the hook is then __tsan_read16 or __tsan_read_range of the whole vector); DWARF 4 so addr2line (binutils 2.40) reads the lines; -fsanitize=thread inserts the hooks;
-fstack-clash-protection makes a frame larger than a page touch each page, so a large local
array meets the guard page below its fiber's stack (a stack overflow) rather than another's stack.
Position-independent (and linked -pie), so a code offset from the start of the executable is
the address addr2line reads. A section per function and per static, so that linking with
--gc-sections drops the file's host code (never run) and what only it names (cuBLAS, a
`cudaDeviceProp` declared extern)."""
RUNTIME_FLAGS = ["-std=c++20", "-O2", "-pthread", "-fPIE"]
EMULATOR_FLAGS = ["-std=c++20", "-O1", "-shared", "-fPIC", "-pthread"]
"""The CPU emulator's library: no tracing hooks, position-independent."""
PRINTS = ["-Wl,--wrap=printf,--wrap=puts,--wrap=putchar"]
"""A whole program's printing, seen by program_runtime.cpp (a launch that prints runs each time)."""
CACHE_KEEP = 64
"""Traced executables (and failed builds) kept in the build folder (about 50 KB each);
building one more removes the least recently used beyond these."""
RUNTIME_KEEP = 4
"""Versions of the runtime's object the build folder keeps (the most recently used): several
checkouts or versions of the package on one account each link their own, and pruning another's
while it links would fail that build."""
HEADER_KEEP = 4
"""Precompiled headers (about 65 MB each) the lab's cache keeps: the most recently used."""
HASH = "sha256"
ORPHAN_SECONDS = 600
"""How old a cached file its manifest no longer records must be before pruning removes it."""


class CompileError(LabError):
    """g++ refused the source: the same source fails the same way, so the failure is cached."""


class UnsafeCache(LabError):
    """The lab's cache folder is one another user could have written to: refused."""


# The cache.

def cache_root() -> pathlib.Path:
    """The lab's cache folder (see the module's docstring), not yet created or checked."""
    if os.environ.get("GPUMODEL_CACHE"):
        return pathlib.Path(os.environ["GPUMODEL_CACHE"]) / "lab"
    base = os.environ.get("XDG_CACHE_HOME", "")
    base = pathlib.Path(base) if os.path.isabs(base) else pathlib.Path.home() / ".cache"  # XDG: a relative one is ignored
    return base / "gpumodel" / "lab"


def cache_folder(name: str = "") -> pathlib.Path:
    """The private folder `name` of the lab's cache (its root for ""), created mode 0700 where
    missing and checked (`private`)."""
    folder = cache_root() / name if name else cache_root()
    why = create(folder)
    if why:
        raise UnsafeCache(f"the kernel lab cannot create its cache folder: {why}; set GPUMODEL_CACHE to a folder "
                          "of yours")
    return private(folder)


def private(folder: pathlib.Path) -> pathlib.Path:
    """`folder` where no other user can have written to it (`gpumodel.folders`: a directory of
    this user's, mode 0700, on a path no one else may change); UnsafeCache naming the folder and
    what is wrong otherwise."""
    found = problems(folder)
    if found:
        raise UnsafeCache(f"the kernel lab refuses its cache folder {folder}: {'; '.join(found)}. Another user could "
                          "have put a program there that the lab would run as you. Remove it (the lab makes a private "
                          "one) or set GPUMODEL_CACHE to a private folder of yours.")
    return pathlib.Path(folder)


def digest(data: bytes) -> str:
    """The SHA-256 of `data`, in hex: a cache key of what builds a file."""
    return hashlib.new(HASH, data).hexdigest()


def _file_digest(path: pathlib.Path) -> str:
    h = hashlib.new(HASH)
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _manifest(folder: pathlib.Path, name: str) -> pathlib.Path:
    return folder / f"{name}.{HASH}"


def _blob(folder: pathlib.Path, name: str, content: str) -> pathlib.Path:
    """Where the file `name` whose content hashes to `content` lies: "trace-KEY.HASH", "runtime-KEY.HASH.o"."""
    stem, dot, suffix = name.partition(".")
    return folder / f"{stem}.{content}{dot}{suffix}"


def _write_atomic(path: pathlib.Path, text: str) -> None:
    tmp = path.with_name(f"{path.name}.{os.getpid()}.part")
    tmp.write_text(text)
    tmp.replace(path)


def _verified(folder: pathlib.Path, name: str) -> pathlib.Path | None:
    """The file `name` of `folder` where its manifest records it and its content still hashes
    to the record (a changed one is deleted: never run); None where there is none. Raises the
    `CompileError` a failed build recorded."""
    manifest = _manifest(folder, name)
    try:
        kind, _, value = manifest.read_text().partition("\n")
    except FileNotFoundError:
        return None
    if kind == "error":
        os.utime(manifest)
        raise CompileError(value)
    if kind == HASH:
        blob = _blob(folder, name, value.strip())
        try:
            if _file_digest(blob) == value.strip():
                os.utime(manifest)  # used now: pruning keeps the most recently used
                return blob
            blob.unlink()  # changed since it was built: never run, built again
        except FileNotFoundError:
            pass
    return None


def cached(folder: pathlib.Path, name: str, build) -> pathlib.Path:
    """The file `name` of the private `folder`, verified (`_verified`). Where it is absent or
    differs, `build(path)` writes it and its hash is recorded; where another process recorded
    one meanwhile (traces started together), that one is used and this build dropped, so they
    share it. A `CompileError` of `build` is recorded too and raised again at once for the
    same `name`."""
    private(folder)
    found = _verified(folder, name)
    if found is not None:
        return found
    stem, dot, suffix = name.partition(".")
    tmp = folder / f"{stem}.{os.getpid()}.part{dot}{suffix}"
    try:
        build(tmp)
        content = _file_digest(tmp)
    except BaseException as err:
        tmp.unlink(missing_ok=True)
        if isinstance(err, CompileError):
            _write_atomic(_manifest(folder, name), f"error\n{err}")
        raise
    found = _verified(folder, name)
    if found is not None:
        tmp.unlink()
        return found
    blob = _blob(folder, name, content)
    tmp.replace(blob)  # atomic; the same content has the same name
    _write_atomic(_manifest(folder, name), f"{HASH}\n{content}")
    return blob


_IN_FLIGHT: dict = {}
_IN_FLIGHT_LOCK = threading.Lock()


def _once(folder: pathlib.Path, name: str, build) -> pathlib.Path:
    """`cached(folder, name, build)`, one build of an entry at a time in this process: a thread
    that finds it being built (by `prepare` in the background) waits for that build."""
    key = str(folder / name)
    with _IN_FLIGHT_LOCK:
        running = _IN_FLIGHT.get(key)
        if running is None:
            mine = _IN_FLIGHT[key] = concurrent.futures.Future()
    if running is not None:
        return running.result()
    try:
        found = cached(folder, name, build)
    except BaseException as err:
        mine.set_exception(err)
        raise
    else:
        mine.set_result(found)
        return found
    finally:
        with _IN_FLIGHT_LOCK:
            _IN_FLIGHT.pop(key, None)


def prune(folder: pathlib.Path, prefix: str, keep: int) -> None:
    """Remove the entries of `folder` named `prefix`... (manifest and files) beyond the `keep`
    most recently used, and of those kept any file its manifest no longer records (two
    processes built it at once, and the other's record won) once it is `ORPHAN_SECONDS` old:
    the process that built it may still be using it until then."""
    def used(path):
        try:
            return path.stat().st_mtime_ns
        except FileNotFoundError:  # another process pruned it first
            return 0
    manifests = sorted(folder.glob(f"{prefix}*.{HASH}"), key=used, reverse=True)
    old = time.time_ns() - ORPHAN_SECONDS * 10**9
    for rank, manifest in enumerate(manifests):
        name = manifest.name[:-len(HASH) - 1]
        stem, dot, suffix = name.partition(".")
        pattern = re.compile(re.escape(stem) + r"\.([0-9a-f]{64})" + re.escape(dot + suffix))
        try:
            recorded = manifest.read_text().partition("\n")[2].strip() if rank < keep else None
        except FileNotFoundError:
            recorded = None
        for blob in folder.glob(f"{stem}.*"):
            match = pattern.fullmatch(blob.name)
            if match and (rank >= keep or match[1] != recorded and 0 < used(blob) < old):
                blob.unlink(missing_ok=True)
        if rank >= keep:
            manifest.unlink(missing_ok=True)


# g++.

_DIAGNOSTIC = re.compile(r"(?P<file>[^\s:][^:]*):(?P<line>\d+):(?:(?P<column>\d+):)? (?P<kind>(?:fatal )?error): "
                         r"(?P<text>.*)")
_LINK = re.compile(r".*?(?:: )?(undefined reference to .*|multiple definition of .*)")
_FUNCTION = re.compile(r".*: in function (`.*'):$")


_INCLUDED_FROM = re.compile(r"^(?:In file included from|\s+from) (?P<file>.+?):(?P<line>\d+)(?::\d+)?[,:]$")
"""g++'s lines before an error in a header: "In file included from a.cuh:2," then "   from kernel.cu:1:"."""


def _chain(includes: list, reached: str | None, source_name: str) -> str:
    """Where an error in a header of the learner's came from: the include chain from `source_name`
    (`includes`: g++'s "included from" places, innermost first) and the learner's line whose
    template instantiation `reached` it."""
    steps = [f"{os.path.basename(file)}:{line}" for file, line in reversed(includes)]
    parts = ([f"included from {steps[0]}" + (f" through {', '.join(steps[1:])}" if len(steps) > 1 else "")]
             if steps and steps[0].startswith(f"{source_name}:") else [])
    parts += [f"reached from {reached}"] if reached else []
    return f" ({'; '.join(parts)})" if parts else ""


def diagnostics(stderr: str, source_name: str) -> list:
    """g++'s and the linker's errors as a learner reads them, each at a line of `source_name`:
    an error inside a header (the lab's stand-in for CUDA, the C++ library) at the learner's
    line that led there, the header named by its file name; no path of the build folder. An
    error in a header of the learner's own at its own line, with the chain of includes from
    `source_name` that reached it and the line of `source_name` whose template it was
    instantiating."""
    rows, here, function = [], None, ""
    learner = re.compile(re.escape(source_name) + r":\d+(?::\d+)?")
    includes, chains, reached = [], {}, None  # "included from" places being read; per header, its chain
    for row in stderr.splitlines():
        if (m := _INCLUDED_FROM.match(row)) is not None:
            if row.startswith("In file"):
                includes = []
            includes.append((m["file"], m["line"]))
            continue
        if includes and (header := re.match(r"(?P<file>[^\s:][^:]*):", row)) is not None:
            chains[header["file"]], includes = includes, []  # the chain of the header the next row names
        if "In instantiation of" in row:
            reached = None
        elif "required from" in row and (found := learner.findall(row)):
            reached = found[-1]
        if (m := _DIAGNOSTIC.match(row)) is not None:
            if m["file"] == source_name:
                rows.append(row)
                here = f"{source_name}:{m['line']}" + (f":{m['column']}" if m["column"] else "")
                continue
            inside = os.path.basename(m["file"])
            if _learners(m["file"]):  # a header of the learner's own (found through -I): its own line, and how it came in
                rows.append(f"{inside}:{m['line']}" + (f":{m['column']}" if m["column"] else "") + f": {m['kind']}: "
                            f"{m['text']}{_chain(chains.get(m['file'], []), reached, source_name)}")
                reached = None
                continue
            if inside == "gm_body.cpp":  # the lab's own call of the kernels, not the learner's line
                rows.append(f"the lab's call of the kernel: {m['kind']}: {m['text']}")
                continue
            at = here or f"{inside}:{m['line']}" + (f":{m['column']}" if m["column"] else "")
            rows.append(f"{at}: {m['kind']}: {m['text']}" + (f" (inside {inside})" if here else ""))
        elif (m := _FUNCTION.match(row)) is not None:
            function = f"in function {m.group(1)}: "
        elif (m := _LINK.fullmatch(row)) is not None:
            rows.append(f"{source_name}: {function}{m.group(1)}")
        elif row.startswith(source_name + ": In "):
            rows.append(row)  # "kernel.cu: In function 'void k(float*)':"
        else:
            found = learner.findall(row)  # "kernel.cu:3:12:   required from here", "In file included from kernel.cu:1"
            here = found[-1] if found else here
    return rows


def _learners(file: str) -> bool:
    """Whether a file g++ names is one of the learner's (not the lab's stand-in, not the system's)."""
    path = pathlib.Path(file)
    return path.is_absolute() and HERE not in path.parents and not file.startswith(("/usr/", "/opt/", "/lib"))


SHOWN_ERRORS = 5
"""The compiler's errors a learner is shown (the first ones); the rest are counted."""
_NO_HEADER = re.compile(r"fatal error: (\S+): No such file or directory")
_MASKLESS_FIX = {"__shfl": "__shfl_sync(0xffffffff, v, lane)", "__shfl_up": "__shfl_up_sync(0xffffffff, v, delta)",
                 "__shfl_down": "__shfl_down_sync(0xffffffff, v, delta)",
                 "__shfl_xor": "__shfl_xor_sync(0xffffffff, v, lane_mask)", "__any": "__any_sync(0xffffffff, p)",
                 "__all": "__all_sync(0xffffffff, p)", "__ballot": "__ballot_sync(0xffffffff, p)"}
"""The warp functions of CUDA 8 and before (no mask), and their CUDA 9 form for all 32 lanes."""
_MASKLESS = re.compile(r"‘(" + "|".join(_MASKLESS_FIX) + r")’ was not declared")


def gxx(args: list, what: str) -> None:
    """Run g++ with `args` under the compiler's limits. LabError naming the limit where one
    stopped it; CompileError with its errors (`diagnostics`) where it failed."""
    done = run(["g++", *args], COMPILE_SECONDS, COMPILE_MEMORY)
    stopped = limit_message(f"g++ compiling {what}", done, COMPILE_SECONDS, COMPILE_MEMORY)
    if stopped:
        raise LabError(f"{stopped}: a macro or template that expands without end? The lab limits g++ to "
                       f"{COMPILE_SECONDS:g} s and {fmt_bytes(COMPILE_MEMORY)} of memory.")
    if done.returncode:
        errors = diagnostics(done.stderr, SOURCE_NAME) or done.stderr.splitlines()
        header = next((m[1] for e in errors if (m := _NO_HEADER.search(e))), None)
        closing = (f"{header} is not a header the lab has: leave its #include out, and put into the source "
                   f"what the kernel needs from it; {SUPPORTED}." if header else
                   f"Where it names something of CUDA's that is missing: {SUPPORTED}.")
        old = sorted({m[1] for e in errors if (m := _MASKLESS.search(e))})
        if old:
            closing = (f"{', '.join(old)}: the warp functions without a mask, which CUDA 9 replaced with their _sync forms "
                       f"and nvcc refuses for sm_70 and newer; write {_MASKLESS_FIX[old[0]]}.\n" + closing)
        numbered = list(itertools.accumulate("error" in r for r in errors))  # errors so far, at each row
        shown = [e.replace("_Float16", "half") for e, n in zip(errors, numbered) if n <= SHOWN_ERRORS]
        hidden = (numbered[-1] if numbered else 0) - SHOWN_ERRORS
        more = (f"... and {hidden} more errors: the first often causes others, so fix it and compile again\n"
                if hidden > 0 else "")
        raise CompileError(f"{what} does not compile:\n" + "\n".join(shown) + "\n" + more + closing)


def compile_flags(arch: str = ARCH) -> list:
    """g++'s flags for device code: the stand-in headers first, CUDA's macros (nvcc 12.4's, as
    the stand-in follows CUDA 12.4), and a
    variable-length array an error (g++ allows one as an extension; nvcc refuses it)."""
    return [f"-I{INCLUDE}", f"-I{HERE}", "-D__CUDACC__", "-D__CUDACC_VER_MAJOR__=12", "-D__CUDACC_VER_MINOR__=4",
            f"-D__CUDA_ARCH__={arch_number(arch)}", "-Werror=vla"]


PREPARING = ("Preparing the kernel lab (once per installed version: its CUDA stand-in is precompiled, about 10 s, "
             "30 s on a busy machine; `python -m gpumodel.lab` or gm.lab.prepare() does it ahead) ...")
"""What the first trace says while the precompiled header is built, so that it does not look like a hang."""


def _stand_in() -> bytes:
    """The lab's stand-in for CUDA, as bytes: cuda_emu.h and every header of include/ (what a
    cached header or runtime was built from)."""
    return b"".join(path.read_bytes() for path in [HERE / "cuda_emu.h", *sorted(p for p in INCLUDE.rglob("*") if p.is_file())])


def _prologue(traced: bool) -> str:
    return f'{"#define GM_LAB_TRACE" if traced else ""}\n#include "cuda_emu.h"\n'


@functools.cache
def _compiler_version() -> str:
    return run(["g++", "--version"], COMPILE_SECONDS, COMPILE_MEMORY).stdout


def _header_key(flags: list, traced: bool) -> str:
    return digest(_prologue(traced).encode() + _stand_in() + (str(flags) + _compiler_version()).encode())


def precompiled(flags: list, traced: bool = False, quiet: bool = False) -> list:
    """g++'s flags that make it read `cuda_emu.h` precompiled with `flags` (a course kernel then
    compiles in about 0.3 s instead of 1.5 s, most of which went to the header's 85,000
    preprocessed lines). The .gch is built once per g++, header and flags in the lab's private
    cache (`cache_folder`) and verified by its hash before each use."""
    folder = cache_folder()
    text = _prologue(traced)
    key = _header_key(flags, traced)

    def make(gch):
        if not quiet:
            print(PREPARING, flush=True)  # the first trace of an installed version: not a hang
        header = gch.with_suffix("")
        header.write_text(text)
        try:
            gxx([*flags, "-x", "c++-header", str(header), "-o", str(gch)], "the lab's header")
        finally:
            header.unlink(missing_ok=True)
    gch = _once(folder, f"header-{key}.h.gch", make)
    prune(folder, "header-", HEADER_KEEP)
    return ["-include", str(gch.with_suffix(""))]


def compile_with_header(args: list, header: list, what: str, source: str, program: bool = False) -> None:
    """g++ with `args` after the `precompiled` flags `header`, compiling `source` (for the
    messages; a whole `program`'s host code is its own, and runs). A failure after another
    process pruned that header is not the source's: `LabError`, not cached."""
    try:
        gxx([*header, *args], what)
    except CompileError as err:
        if not pathlib.Path(header[-1] + ".gch").exists():
            raise LabError(f"{err}\n(the lab's precompiled header was removed meanwhile: run it again)") from None
        missing = _NO_HEADER.search(str(err))  # a header the lab lacks: the host code is beside the point
        ours = any(row.startswith(f"{SOURCE_NAME}:") for row in str(err).splitlines())  # not only in a header
        raise CompileError(f"{err}{'' if program or missing or not ours else host_code(source)}"
                           f"{'' if program else _framework_note(source)}") from None


def _framework_note(source: str) -> str:
    """Where the lab left code written against PyTorch out of `source` (`reader.without_framework`):
    a sentence saying so, naming what it left out, and what an error that names PyTorch means."""
    text, left = without_framework(source)
    if text == source:
        return ""
    named = ", ".join(f"{name} (line {line})" for name, line in left[:6]) + (f" and {len(left) - 6} more" if len(left) > 6 else "")
    return ("\nThe lab left out the file's PyTorch headers" + (f" and the code written against them: {named}" if left else "")
            + ". PyTorch is not part of the lab: an error above that names torch::, at:: or c10:: is in code it kept (a "
            "kernel, or a device function one calls), which needs PyTorch's types; a kernel traces with NumPy arrays as "
            "its pointers.")


def wrapper(source: str, names: list, traced: bool = False) -> str:
    """What g++ compiles: cuda_emu.h, the source as `SOURCE_NAME` (its `extern __shared__` arrays
    at the launch's dynamic shared memory), and `gm_body(i, args)`, which calls the i-th of
    `names` with `args` (a pointer's value, a scalar's address), itself not instrumented (g++
    does not inline across that difference), and `gm_value_bytes(i, k)`, the bytes its k-th
    parameter takes by value (-1 for a pointer), which the traced run checks a struct's against. Untraced, `emu_launch_kernel` launches it on a grid."""
    cases = " ".join(f"case {i}: {{ {opened(source, name)}emu_call({kernel_pointer(source, name)}, a); break; }}"
                     for i, name in enumerate(names))
    sizes = " ".join(f"case {i}: {{ {opened(source, name)}return emu_value_bytes({kernel_pointer(source, name)}, i); }}"
                     for i, name in enumerate(names))
    text = (f'{_prologue(traced)}#define main gm_learner_main\n#line 1 "{SOURCE_NAME}"\n'
            f'{for_gxx(source)}\n#undef main\n#line 1 "gm_body.cpp"\n'
            f'extern "C" __attribute__((no_sanitize("thread"))) void gm_body(int kernel, void** a) {{\n'
            f"    switch (kernel) {{ {cases} }}\n}}\n"
            f'extern "C" __attribute__((no_sanitize("thread"))) long gm_value_bytes(int kernel, int i) {{\n'
            f"    switch (kernel) {{ {sizes} }}\n    return -1;\n}}\n")
    if not traced:
        text += ('extern "C" void emu_launch_kernel(int kernel, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, '
                 "unsigned bz, size_t shared_mem, void** a) {\n    emu_launch(dim3(gx, gy, gz), dim3(bx, by, bz), "
                 "shared_mem, [=] { gm_body(kernel, a); });\n}\n")
    return text


def _runtime_entry(name: str = "trace_runtime") -> str:
    """The cache entry of the runtime's object (`name`.cpp), named by its sources and flags."""
    sources = (HERE / f"{name}.cpp").read_bytes() + (HERE / "trace_runtime.cpp").read_bytes() + _stand_in()
    return f"runtime-{digest(sources + str(RUNTIME_FLAGS).encode())}.o"


def _runtime(folder: pathlib.Path, name: str = "trace_runtime") -> pathlib.Path:
    """The runtime's object file (`name`.cpp: trace_runtime, or program_runtime for a whole
    program), built once per version of its sources, verified by its hash."""
    obj = _once(folder, _runtime_entry(name), lambda out: gxx(
        [*RUNTIME_FLAGS, f"-I{INCLUDE}", f"-I{HERE}", "-c", str(HERE / f"{name}.cpp"), "-o", str(out)],
        "the lab's runtime"))
    prune(folder, "runtime-", RUNTIME_KEEP)
    return obj


PREPARED = ("header", "trace_runtime", "program_runtime")
"""What `prepare` builds, in this order: the precompiled stand-in a kernel is compiled against,
and the runtimes of a traced kernel and of a whole program (each about 4 to 10 s of g++ on a quiet core)."""


def prepare(wait: bool = True) -> list:
    """Build what every first trace needs (`PREPARED`) into the lab's private cache, two g++ at a
    time, so that a learner's first `gm.lab.trace` compiles only the kernel (under a second, not
    12 to 40 s). Returns the names of the parts that were not yet built. With `wait=False` it
    returns at once and builds in the background (a trace that needs a part still building waits
    for it, never builds it twice), saying so in one line. `make` runs it after installing
    (`python -m gpumodel.lab`). Chapter 2's lab."""
    if not isinstance(wait, bool):
        raise TypeError(f"wait must be True or False, got {wait!r}")
    if not shutil.which("g++"):
        raise LabError("the kernel lab needs g++ (C++20) on the machine, and there is none here")
    folder = cache_folder()
    header_flags = [*KERNEL_FLAGS, *compile_flags(ARCH)]
    parts = {"trace_runtime": lambda: _runtime(folder, "trace_runtime"),
             "program_runtime": lambda: _runtime(folder, "program_runtime"),
             "header": lambda: precompiled(header_flags, traced=True, quiet=True)}
    missing = [name for name in PREPARED if _verified(folder, _part_entry(name, header_flags)) is None]
    if not missing:
        return []
    if not wait:
        print(f"Preparing the kernel lab in the background ({', '.join(missing)}: about 10 s) ...", flush=True)

    def work():
        with concurrent.futures.ThreadPoolExecutor(2) as pool:
            for done in [pool.submit(parts[name]) for name in missing]:
                try:
                    done.result()
                except LabError:
                    if wait:
                        raise  # in the background a failure is left for the trace that needs the part to name
    if wait:
        work()
    else:
        threading.Thread(target=work, name="gpumodel-lab-prepare", daemon=True).start()
    return missing


def _part_entry(part: str, header_flags: list) -> str:
    """The cache entry of one of `PREPARED`."""
    if part == "header":
        return f"header-{_header_key(header_flags, True)}.h.gch"
    return _runtime_entry(part)


def build(source: str, names: list | None = None, arch: str = ARCH, options: tuple = (), program: bool = False,
          file_name: str = SOURCE_NAME) -> pathlib.Path:
    """The traced executable for the kernels `names` of `source` (`reader.entries`: those that
    are not templates, by default), compiled for `arch` with g++'s `options`
    (`reader.compile_options`), cached by content (a failed build too)
    and verified by its hash; for a whole `program`, the file with its own main and launches
    (`reader.for_gxx`), linked with program_runtime.cpp, its __FILE__ `file_name` (the learner's
    file's, as nvcc gives it: error macros print it). Raises `LabError` with g++'s messages
    when the source does not compile or link."""
    if not shutil.which("g++"):
        raise LabError("the kernel lab needs g++ (C++20) on the machine, and there is none here")
    folder = cache_folder()
    runtime_name = "program_runtime" if program else "trace_runtime"
    text = (program_text(source) if program else
            wrapper(source, entries(source) if names is None else names, traced=True))
    own = [*KERNEL_FLAGS, *compile_flags(arch)]
    flags = [*own, *options]  # the source's own -I folders do not change the precompiled header, so it is shared
    folders = [pathlib.Path(f[2:]) for f in options if f.startswith("-I")]
    found = own_headers(source, folders)
    headers = {name: path.read_text(errors="replace") for name, path in found.items()}
    rewritten = {name: for_gxx(text, program) for name, text in headers.items()}
    aliases = _other_names(found, folders)
    # Only __FILE__ renamed (not the line table's file, nor g++'s messages), and not in the precompiled header's flags.
    renamed = [f"-fmacro-prefix-map={SOURCE_NAME}={file_name}"] if file_name != SOURCE_NAME else []
    key = digest((text + str(flags + renamed) + _runtime_entry(runtime_name) + str(sorted(headers.items()))).encode()
                 + pathlib.Path(__file__).read_bytes() + (HERE / "reader.py").read_bytes())  # their messages

    def make(exe):
        cpp, obj, copies = (exe.with_suffix(end) for end in (".cpp", ".o", ".headers"))
        cpp.write_text(text)
        own_flags = [*renamed, *flags]
        if any(rewritten[name] != headers[name] for name in rewritten):  # an extern __shared__ or a launch in a header
            for name, header in rewritten.items():  # all of them, so that one includes the others' copies
                create((copies / name).parent)
                (copies / name).write_text(header)
            for alias, name in aliases.items():  # one header, one copy: its #pragma once holds under either name
                create((copies / alias).parent)
                (copies / alias).write_text(f'#include "{copies / name}"\n')
            own_flags = [f"-I{copies}", *own_flags]
        with concurrent.futures.ThreadPoolExecutor(1) as pool:  # the runtime builds beside the kernel (cold: 12 s -> 8 s)
            built_runtime = pool.submit(_runtime, folder, runtime_name)
            try:
                header = precompiled([f for f in flags if not f.startswith("-I") or f in own], traced=True)
                compile_with_header([*own_flags, "-c", str(cpp), "-o", str(obj)], header,
                                    "the program" if program else "the kernel", source, program)
                try:
                    runtime = built_runtime.result()
                except CompileError as err:  # the lab's own runtime, not the learner's kernel: not cached as its error
                    raise LabError(str(err)) from None
                try:
                    gxx([str(obj), str(runtime), "-pthread", "-pie", "-Wl,--gc-sections", *(PRINTS if program else []),
                         "-o", str(exe)],
                        "the program" if program else "the traced kernel")
                except CompileError as err:  # a link may fail for want of the runtime (another process pruned it): not cached
                    raise LabError(f"{err}{_not_emulated(str(err)) if program else ''}") from None
            finally:
                for path in (cpp, obj):
                    path.unlink(missing_ok=True)
                shutil.rmtree(copies, ignore_errors=True)
    try:
        return cached(folder, f"{'program' if program else 'trace'}-{key}", make)
    except LabError as err:  # g++'s messages name the learner's file as it is called, not as the lab compiled it
        if file_name == SOURCE_NAME:
            raise
        raise type(err)(str(err).replace(f"{SOURCE_NAME}:", f"{file_name}:")) from None
    finally:
        prune(folder, "program-" if program else "trace-", CACHE_KEEP)  # the least recently used beyond CACHE_KEEP


def _other_names(found: dict, folders: list) -> dict:
    """Each other name an #include may reach a header of `found` (`reader.own_headers`: its name ->
    its path) by, through another of the include `folders` (src/ggml-cuda/common.cuh is
    "ggml-cuda/common.cuh" from src and "common.cuh" from src/ggml-cuda) -> the name its copy has;
    the first folder's where two headers share a name, as g++ searches them."""
    names, taken = {}, set(found)
    for folder in (pathlib.Path(f).resolve() for f in folders):
        for name, path in found.items():
            if path.is_relative_to(folder) and (alias := path.relative_to(folder).as_posix()) not in taken:
                names[alias] = name
                taken.add(alias)
    return names


def program_text(source: str) -> str:
    """What g++ compiles for a whole program: cuda_emu.h and the source as `SOURCE_NAME`, its
    main kept and its launches run (`reader.for_gxx`)."""
    return f'{_prologue(True)}#line 1 "{SOURCE_NAME}"\n{for_gxx(source, program=True)}\n'


_LIBRARIES = {"cublasLt": "cuBLASLt", "cublas": "cuBLAS", "curand": "cuRAND", "cufft": "cuFFT", "cudnn": "cuDNN",
              "nvtx": "NVTX"}
"""Prefixes of the names of CUDA's libraries, which a program may call and the lab does not run."""


def _not_emulated(message: str) -> str:
    """Where a program's link failed for a function the lab does not define: a sentence naming
    them and their libraries."""
    missing = sorted(set(re.findall(r"undefined reference to `(\w+)", message)))
    if not missing:
        return ""
    libraries = {name: next((v for k, v in _LIBRARIES.items() if name.startswith(k)), None) for name in missing}
    ours = [f"{name} ({lib})" for name, lib in libraries.items() if lib]
    cuda = [name for name, lib in libraries.items() if not lib and name.startswith("cuda")]
    other = [name for name, lib in libraries.items() if not lib and not name.startswith("cuda")]
    return "".join([
        f"\nThe program calls {', '.join(ours)}, which the lab does not run on the CPU: leave those calls out, or "
        "trace its kernels one at a time with gm.lab.trace." if ours else "",
        f"\nThe program calls {', '.join(cuda)}, which the lab's CUDA runtime does not have." if cuda else "",
        f"\n{', '.join(other)} is defined in none of the file's code: the lab builds a program from one file (put "
        "what it needs from the others into it)." if other else ""])


def library(folder: pathlib.Path, source: str, names: list) -> pathlib.Path:
    """The CPU emulator's shared library of `source` that launches `names`, in the private
    `folder`, cached by content and verified by its hash. LabError where g++ refuses it or a
    limit stops g++."""
    text = wrapper(source, names)
    flags = [*EMULATOR_FLAGS, *compile_flags()]
    header = precompiled(flags)

    def make(lib):
        cpp = lib.with_suffix(".cpp")
        cpp.write_text(text)
        try:
            compile_with_header([*flags, str(cpp), "-o", str(lib)], header, "the kernel", source)
        finally:
            cpp.unlink(missing_ok=True)
    return cached(folder, f"emulator-{digest((text + str(EMULATOR_FLAGS)).encode())}.so", make)

