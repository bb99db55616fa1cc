"""The kernel lab on a shared machine (a class's JupyterHub): its private build cache, each
cached file checked against the hash recorded when it was built, and g++ and the traced run
bounded in time, memory and output. ARCHITECTURE.md, "The kernel lab"; chapter 2's lab.

The cache: `$GPUMODEL_CACHE/lab` where that variable is set (tests point it at a folder of
their own), else `$XDG_CACHE_HOME/gpumodel/lab`, else `~/.cache/gpumodel/lab`; folders created
mode 0700. Before each use the folder must be a directory (not a symbolic link), owned by the
user, with no permission for group or others, in a folder no one else may rename it out of
(owned by the user or root, writable by no one else unless sticky, as /tmp is); anything else
is refused (`UnsafeCache`), never repaired or worked around. An entry `name` is a manifest
`name.sha256` holding the SHA-256 of the file built (content-addressed beside it as
`stem.<hash>suffix`, so that two processes building at once never see half a file) or the
error g++ gave; a file whose content no longer hashes to its manifest is deleted and built
again, never run or linked."""

from __future__ import annotations

import hashlib
import os
import pathlib
import re
import selectors
import signal
import stat
import subprocess
import time
from dataclasses import dataclass

from ..units import fmt_bytes

COMPILE_SECONDS = 60.0
"""Wall-clock seconds g++ may take for one file (a course kernel: about 1 s)."""
COMPILE_MEMORY = 2 * 10**9
"""Address space (bytes) g++ and each program it starts may take (a course kernel: under 200 MB)."""
RUN_MEMORY = 2 * 10**9
"""Address space (bytes) a traced run may take beyond its arrays' bytes."""
OUTPUT_LIMIT = 10**6
"""Bytes read from a process's stdout or stderr each (the learner's printf, g++'s messages);
past them it is stopped."""
HASH = "sha256"


class LabError(RuntimeError):
    """The learner's kernel did not compile, crashed, ran too long or went out of bounds."""


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
    for level in reversed([folder, *folder.parents]):
        if not level.exists() and not level.is_symlink():
            try:
                level.mkdir(mode=0o700)
            except FileExistsError:  # made by another process at once: checked below
                pass
            except OSError as err:
                raise UnsafeCache(f"the kernel lab cannot create its cache folder {level}: {err.strerror}; set "
                                  "GPUMODEL_CACHE to a folder of yours") from None
    return private(folder)


def private(folder: pathlib.Path) -> pathlib.Path:
    """`folder` where no other user can have written to it: a directory, not a symbolic link,
    owned by this user, with no permission for group or others, in a parent no one else may
    change (owned by this user or root; group and others may not write unless it is sticky).
    UnsafeCache naming the folder and what is wrong otherwise."""
    folder = pathlib.Path(folder)
    problems = []
    try:
        st = os.lstat(folder)
    except FileNotFoundError:
        raise UnsafeCache(f"the kernel lab's cache folder {folder} does not exist") from None
    if stat.S_ISLNK(st.st_mode):
        problems.append("it is a symbolic link")
    elif not stat.S_ISDIR(st.st_mode):
        problems.append("it is not a directory")
    else:
        if st.st_uid != os.getuid():
            problems.append(f"it is owned by uid {st.st_uid}, not by you (uid {os.getuid()})")
        if st.st_mode & 0o077:
            problems.append(f"its mode is {stat.S_IMODE(st.st_mode):04o}: group or others may use it (0700 wanted)")
        up = os.stat(folder.parent)
        if up.st_uid not in (0, os.getuid()):
            problems.append(f"its parent {folder.parent} is owned by uid {up.st_uid}, who could replace it")
        elif up.st_mode & 0o022 and not up.st_mode & stat.S_ISVTX:
            problems.append(f"its parent {folder.parent} (mode {stat.S_IMODE(up.st_mode):04o}) lets others replace it")
    if problems:
        raise UnsafeCache(f"the kernel lab refuses its cache folder {folder}: {'; '.join(problems)}. Another user could "
                          "have put a program there that the lab would run as you. Remove it (the lab makes a private "
                          "one) or set GPUMODEL_CACHE to a private folder of yours.")
    return folder


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


def cached(folder: pathlib.Path, name: str, build) -> pathlib.Path:
    """The file `name` of the private `folder`, verified: its content hashes to the SHA-256
    recorded when it was built. Where it is absent or differs (then deleted), `build(path)`
    writes it and its hash is recorded; a `CompileError` of `build` is recorded too and raised
    again at once for the same `name`."""
    private(folder)
    manifest = _manifest(folder, name)
    try:
        kind, _, value = manifest.read_text().partition("\n")
    except FileNotFoundError:
        kind = value = ""
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
    stem, dot, suffix = name.partition(".")
    tmp = folder / f"{stem}.{os.getpid()}.part{dot}{suffix}"
    try:
        build(tmp)
        content = _file_digest(tmp)
    except BaseException as err:
        tmp.unlink(missing_ok=True)
        if isinstance(err, CompileError):
            _write_atomic(manifest, f"error\n{err}")
        raise
    blob = _blob(folder, name, content)
    tmp.replace(blob)  # atomic; the same content has the same name
    _write_atomic(manifest, f"{HASH}\n{content}")
    return blob


def prune(folder: pathlib.Path, prefix: str, keep: int) -> None:
    """Remove the entries of `folder` named `prefix`... (manifest and files) beyond the `keep`
    most recently used."""
    def used(path):
        try:
            return path.stat().st_mtime_ns
        except FileNotFoundError:  # another process pruned it first
            return 0
    manifests = sorted(folder.glob(f"{prefix}*.{HASH}"), key=used, reverse=True)
    for manifest in manifests[keep:]:
        name = manifest.name[:-len(HASH) - 1]
        stem, dot, suffix = name.partition(".")
        pattern = re.compile(re.escape(stem) + r"\.[0-9a-f]{64}" + re.escape(dot + suffix))
        for blob in folder.glob(f"{stem}.*"):
            if pattern.fullmatch(blob.name):
                blob.unlink(missing_ok=True)
        manifest.unlink(missing_ok=True)


# Bounded processes.

@dataclass
class Done:
    """How a bounded process ended: its exit status (negative: the signal), its stdout and
    stderr (at most `OUTPUT_LIMIT` bytes each, decoded), and the limit that stopped it, if one did
    ("time" or "output")."""

    returncode: int
    stdout: str
    stderr: str
    stopped: str | None = None


def run(command: list, seconds: float, memory: int, output: int = OUTPUT_LIMIT) -> Done:
    """Run `command` in a session of its own, its address space limited to `memory` bytes per
    process (RLIMIT_AS, set by the shell that execs it: no Python runs between fork and exec),
    killed with its children past `seconds` of wall time or `output` bytes on stdout or stderr."""
    limit = (f'ulimit -v {max(1, memory // 1024)} 2>/dev/null || [ "$(ulimit -v)" != unlimited ] || '
             '{ echo "the lab cannot limit the memory of what it runs (ulimit -v)" >&2; exit 125; }; exec "$@"')
    limited = ["/bin/sh", "-c", limit, "gm-lab", *map(str, command)]
    proc = subprocess.Popen(limited, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True)
    kept = {proc.stdout.fileno(): bytearray(), proc.stderr.fileno(): bytearray()}
    deadline, stopped = time.monotonic() + seconds, None
    with selectors.DefaultSelector() as selector:
        for fd in kept:
            selector.register(fd, selectors.EVENT_READ)
        while selector.get_map() and stopped is None:
            left = deadline - time.monotonic()
            if left <= 0:
                stopped = "time"
                break
            for key, _ in selector.select(min(left, 1.0)):
                chunk = os.read(key.fd, 1 << 16)
                if not chunk:
                    selector.unregister(key.fd)
                    continue
                kept[key.fd] += chunk[:output + 1 - len(kept[key.fd])]
                if len(kept[key.fd]) > output:
                    stopped = "output"
        try:
            proc.wait(timeout=max(0.0, deadline - time.monotonic()) if stopped is None else 0.001)
        except subprocess.TimeoutExpired:
            stopped = stopped or "time"
        if stopped:
            try:
                os.killpg(proc.pid, signal.SIGKILL)  # its group: g++'s cc1plus and as too
            except ProcessLookupError:
                pass
            proc.wait()
    proc.stdout.close()
    proc.stderr.close()
    out, err = (bytes(kept[fd][:output]).decode(errors="replace") for fd in kept)
    return Done(proc.returncode, out, err, stopped)


def out_of_memory(text: str) -> bool:
    """Whether a process's messages say an allocation failed (RLIMIT_AS reached)."""
    return any(s in text for s in ("virtual memory exhausted", "out of memory allocating", "Cannot allocate memory", "could not map",
                                   "std::bad_alloc"))


def limit_message(what: str, done: Done, seconds: float, memory: int) -> str | None:
    """What stopped `what` (a sentence naming the limit), where a limit did."""
    if done.stopped == "time":
        return f"{what} ran past the time limit of {seconds:g} s"
    if done.stopped == "output":
        return f"{what} printed more than the lab's output limit of {fmt_bytes(OUTPUT_LIMIT)} and was stopped"
    if done.returncode and out_of_memory(done.stderr):
        return f"{what} ran out of the lab's memory limit of {fmt_bytes(memory)}"
    return None


# g++.

_DIAGNOSTIC = re.compile(r"(?P<file>[^\s:][^:]*):(?P<line>\d+):(?:(?P<column>\d+):)? (?P<kind>(?:fatal )?error): "
                         r"(?P<text>.*)")
_LINK = re.compile(r".*?(?:: )?(undefined reference to .*|multiple definition of .*)")
_FUNCTION = re.compile(r".*: in function (`.*'):$")


def diagnostics(stderr: str, source_name: str) -> list:
    """g++'s and the linker's errors as a learner reads them, each at a line of `source_name`:
    an error inside a header (the lab's stand-in for CUDA, the C++ library) at the learner's
    line that led there, the header named by its file name; no path of the build folder."""
    rows, here, function = [], None, ""
    learner = re.compile(re.escape(source_name) + r":\d+(?::\d+)?")
    for row in stderr.splitlines():
        if (m := _DIAGNOSTIC.match(row)) is not None:
            if m["file"] == source_name:
                rows.append(row)
                here = f"{source_name}:{m['line']}" + (f":{m['column']}" if m["column"] else "")
                continue
            inside = os.path.basename(m["file"])
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


_NO_HEADER = re.compile(r"fatal error: (\S+): No such file or directory")


def gxx(args: list, what: str, source_name: str, supported: str) -> None:
    """Run g++ with `args` under the compiler's limits. LabError naming the limit where one
    stopped it; CompileError with its errors (`diagnostics`) where it failed."""
    done = run(["g++", *args], COMPILE_SECONDS, COMPILE_MEMORY)
    stopped = limit_message(f"g++ compiling {what}", done, COMPILE_SECONDS, COMPILE_MEMORY)
    if stopped:
        raise LabError(f"{stopped}: a macro or template that expands without end? The lab limits g++ to "
                       f"{COMPILE_SECONDS:g} s and {fmt_bytes(COMPILE_MEMORY)} of memory.")
    if done.returncode:
        errors = diagnostics(done.stderr, source_name) or done.stderr.splitlines()
        header = next((m[1] for e in errors if (m := _NO_HEADER.search(e))), None)
        closing = (f"{header} is not a header the lab has: leave its #include out, and put into the source "
                   f"what the kernel needs from it; {supported}." if header else
                   f"Where it names something of CUDA's that is missing: {supported}.")
        raise CompileError(f"{what} does not compile:\n" + "\n".join(errors[:20]) + "\n" + closing)
