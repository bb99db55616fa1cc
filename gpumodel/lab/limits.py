"""The lab's bounds, which every room that starts a process keeps: g++ and the traced run each
run in a session of their own, bounded in wall time, address space and output, so that a
learner's endless loop, template bomb or printf flood stops with a sentence, never a hung or
swamped notebook (a class's JupyterHub shares one machine). `LabError` is what the learner's
kernel meets when it does not compile, run or finish. ARCHITECTURE.md, "The kernel lab"."""

from __future__ import annotations

import os
import secrets
import selectors
import signal
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
PROGRAM_MEMORY = 2 * RUN_MEMORY
"""Address space (bytes) a whole program may take: the traced run's, and as much again for the
arrays it allocates itself."""
INPUT_BYTES = 256 * 2**20
"""The most bytes of a whole program's folder copied into its run folder (its input files, a
data folder); a folder holding more is refused with what to do."""


def physical_memory() -> int:
    """The bytes of memory this machine has (what run_program's `memory` may be at most)."""
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


OUTPUT_LIMIT = 10**6
"""Bytes read from a process's stdout or stderr each (the learner's printf, g++'s messages);
past them it is stopped."""


class LabError(RuntimeError):
    """The learner's kernel did not compile, crashed, ran too long or went out of bounds."""


@dataclass
class Done:
    """How a bounded process ended: its exit status (negative: the signal), its stdout and
    stderr (at most `OUTPUT_LIMIT` bytes each, decoded), and the limit that stopped it, if one did
    ("time" or "output")."""

    returncode: int
    stdout: str
    stderr: str
    stopped: str | None = None


RUN_TOKEN = "GM_LAB_RUN"
"""The environment variable that marks every process of one bounded run (`run`, `end_strays`)."""


def end_strays(token: str) -> int:
    """Kill every process of this user's whose environment carries `RUN_TOKEN`=`token`: what a
    run left behind outside its process group (a child that called setsid(), a daemon), found
    through /proc (Linux; elsewhere nothing is found). A process caught mid-fork or mid-exec can
    hide from one look (its environment reads empty), so /proc is read again until a look finds
    none, at least twice and at most STRAY_LOOKS times, STRAY_PAUSE apart. Returns how many
    kills were sent (a process still dying when looked at again is sent another)."""
    mark, killed = f"{RUN_TOKEN}={token}".encode() + b"\0", 0
    for look in range(STRAY_LOOKS):
        found = _kill_marked(mark)
        killed += found
        if look >= 1 and not found:
            break
        time.sleep(STRAY_PAUSE)
    return killed


STRAY_PAUSE, STRAY_LOOKS = 0.02, 50
"""Seconds between two looks for strays, and the most looks (`end_strays`)."""


def _kill_marked(mark: bytes) -> int:
    """One look through /proc: kill each process whose environment holds `mark`; how many."""
    killed = 0
    for entry in os.scandir("/proc") if os.path.isdir("/proc") else ():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry.name}/environ", "rb") as f:
                if mark not in f.read() + b"\0":
                    continue
            os.kill(int(entry.name), signal.SIGKILL)
            killed += 1
        except OSError:  # gone already, or another user's
            continue
    return killed


def run(command: list, seconds: float, memory: int, output: int = OUTPUT_LIMIT) -> Done:
    """Run `command` in a session of its own, its address space limited to `memory` bytes per
    process (RLIMIT_AS, set by the shell that execs it: no Python runs between fork and exec),
    killed with its children past `seconds` of wall time or `output` bytes on stdout or stderr.
    Every process it starts carries a token in its environment, and whatever still carries it
    once the command has ended (or been stopped) is killed too (`end_strays`): a child that left
    the process group cannot outlive the run."""
    limit = (f'ulimit -v {max(1, memory // 1024)} 2>/dev/null || [ "$(ulimit -v)" != unlimited ] || '
             '{ echo "the lab cannot limit the memory of what it runs (ulimit -v)" >&2; exit 125; }; exec "$@"')
    limited = ["/bin/sh", "-c", limit, "gm-lab", *map(str, command)]
    token = secrets.token_hex(16)
    proc = subprocess.Popen(limited, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True, env={**os.environ, RUN_TOKEN: token})
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
            if proc.poll() is not None:  # the command is done: what it left holding its output goes too
                end_strays(token)
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
        end_strays(token)
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

