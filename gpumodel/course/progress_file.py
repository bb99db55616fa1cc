"""The learner's progress file, kept across kernels and notebooks: each question checked, its
tries and whether it was ever right. `gpumodel/progress.json` in $XDG_DATA_HOME (in
~/.local/share where that is unset). ARCHITECTURE.md, "What the course keeps on a learner's machine"; chapter 1.

Every checker reads it, so on a machine others share it is read as a file another user may have
touched: only from a private folder (`gpumodel.folders`), only a regular file of this user's
(no FIFO, device or symbolic link), at most `MOST_BYTES`, each count a whole number from 0 to
`MOST_TRIES`. A file that breaks any of these, or does not parse, is set aside under a new name
and progress starts afresh, with one message; a checker never fails because of it. Where the
folder is not private the file is neither read nor written, and this session's progress is all
there is. Writers hold the folder's lock while they read, change and replace the file."""

from __future__ import annotations

import contextlib
import json
import os
import pathlib
import stat
import tempfile
import time

from ..folders import create, problems

MOST_BYTES = 1 << 20
"""The largest progress file read (bytes): a course's few hundred questions take about 20 kB."""
MOST_TRIES = 10**6
"""The most tries a question may hold."""
MOST_KEY = 200
"""The longest question key kept (characters; the course's own are under 60)."""
NOTES: list = []
"""What this session found wrong with the file or its folder, each said once (`progress()` shows them)."""


def path() -> pathlib.Path:
    """Where the progress file is (it may not exist)."""
    base = os.environ.get("XDG_DATA_HOME") or str(pathlib.Path.home() / ".local" / "share")
    return pathlib.Path(base) / "gpumodel" / "progress.json"


def _note(text: str) -> None:
    if text not in NOTES:
        NOTES.append(text)
        print(text)


def _private(folder: pathlib.Path) -> bool:
    """Whether `folder` is private; where not, the one message that says why."""
    found = problems(folder)
    if found:
        _note(f"Your progress folder {folder} is not private ({'; '.join(found)}): another user could have changed "
              "what it holds, so the course neither reads nor writes your progress there, and keeps this session's "
              "only. Make it yours with mode 0700 (chmod 700), or set XDG_DATA_HOME to a private folder.")
    return not found


class _Unreadable(ValueError):
    """The progress file is not one the course reads."""


def _no_constant(name: str):
    raise _Unreadable(f"it holds {name}, which is not a number JSON allows")


def _questions(data: bytes) -> dict:
    """key -> (tries, ever right) of a progress file's bytes; `_Unreadable` saying why not."""
    try:
        parsed = json.loads(data, parse_constant=_no_constant)
    except _Unreadable:
        raise
    except RecursionError:
        raise _Unreadable("it is nested too deeply") from None
    except (UnicodeDecodeError, ValueError) as err:
        raise _Unreadable(f"it is not JSON: {err}") from None
    questions = parsed.get("questions") if isinstance(parsed, dict) else None
    if not isinstance(questions, dict):
        raise _Unreadable('it holds no "questions" object')
    kept = {}
    for key, value in questions.items():
        if len(key) > MOST_KEY:
            raise _Unreadable(f"a question's key is longer than {MOST_KEY} characters")
        if (not isinstance(value, list) or len(value) != 2 or type(value[0]) is not int
                or not 0 <= value[0] <= MOST_TRIES or type(value[1]) is not bool):
            raise _Unreadable(f"question {key[:60]!r} holds {str(value)[:60]}, not [tries from 0 to {MOST_TRIES:,}, "
                              "true or false]")
        kept[key] = (value[0], value[1])
    return kept


def _set_aside(file: pathlib.Path, why: str) -> None:
    """Rename `file` out of the way (it, not what it may link to) and say so once."""
    aside = file.with_name(f"{file.name}.unreadable-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}")
    try:
        os.rename(file, aside)
        done = f"it was set aside as {aside.name}"
    except OSError as err:
        done = f"it could not be set aside ({err.strerror}): remove it"
    _note(f"Your progress file {file} could not be read ({why}); {done}, and your progress starts afresh.")


def read() -> dict:
    """The questions the file keeps, key -> (tries, ever right); {} where there is none, its
    folder is not private, or it was unreadable (then set aside)."""
    file = path()
    if not file.parent.exists() or not _private(file.parent):
        return {}
    try:
        fd = os.open(file, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return {}
    except OSError as err:  # a symbolic link (ELOOP), or one it may not read
        _set_aside(file, "it is a symbolic link" if os.path.islink(file) else err.strerror)
        return {}
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):  # a folder among them: no file object can be made of it
        os.close(fd)
        why = "it is not a regular file"
    elif st.st_uid != os.getuid():
        os.close(fd)
        why = f"it is owned by uid {st.st_uid}, not by you"
    else:
        with os.fdopen(fd, "rb") as f:
            data = f.read(MOST_BYTES + 1)
        why = f"it is larger than {MOST_BYTES:,} bytes" if len(data) > MOST_BYTES else ""
    if not why:
        try:
            return _questions(data)
        except _Unreadable as err:
            why = str(err)
    _set_aside(file, why)
    return {}


@contextlib.contextmanager
def _locked(folder: pathlib.Path):
    """Hold the progress folder's lock (`fcntl.flock` on `progress.lock`, a file of mode 0600 in
    it) while a writer reads, changes and replaces the file, so that two notebooks checking at
    once keep each other's answers. Where the lock cannot be had (no `fcntl`, as on Windows, or
    the lock file cannot be opened), the write goes ahead unlocked."""
    try:
        import fcntl
        fd = os.open(folder / "progress.lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except (ImportError, OSError):
        yield
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock


def add(key: str, correct: bool) -> None:
    """Add one try at `key` (right or not), under the folder's lock (`_locked`): the file read,
    written whole to a new file of mode 0600 in its private folder (made mode 0700), then moved
    over the old one. Where the folder cannot be made, or is not private, nothing is written."""
    file = path()
    if create(file.parent) or not _private(file.parent):
        return
    with _locked(file.parent):
        _add(file, key, correct)


def _add(file: pathlib.Path, key: str, correct: bool) -> None:
    kept = read()
    tries, right = kept.get(key, (0, False))
    kept[key] = (min(tries + 1, MOST_TRIES), right or correct)
    try:
        fd, tmp = tempfile.mkstemp(dir=file.parent, prefix=".progress-", suffix=".json")  # mode 0600
        with os.fdopen(fd, "w") as out:
            json.dump({"questions": {k: list(v) for k, v in kept.items()}}, out, indent=1)
        os.replace(tmp, file)
    except OSError:
        pass
