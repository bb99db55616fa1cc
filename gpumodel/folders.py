"""A folder only its owner can have written to, for what the course keeps on a machine others
share: the kernel lab's build cache (`lab.builder`) and the learner's progress file
(`course.progress_file`). ARCHITECTURE.md, "What the course keeps on a learner's machine".

A folder is private when it is a directory, not a symbolic link, owned by this user, with no
permission for group or others, and when no one else can rename it or any folder above it out
of the way: each folder on its path is owned by this user or root and writable by no one else
unless it is sticky (as /tmp is)."""

from __future__ import annotations

import os
import pathlib
import stat


def create(folder: pathlib.Path) -> str:
    """Make each missing folder of `folder`'s path, mode 0700; the system's reason where one
    cannot be made, else ""."""
    for level in reversed([folder, *folder.parents]):
        if not level.exists() and not level.is_symlink():
            try:
                level.mkdir(mode=0o700)
            except FileExistsError:  # made by another process at once: checked after
                pass
            except OSError as err:
                return f"{level} cannot be created: {err.strerror}"
    return ""


def problems(folder: pathlib.Path) -> list:
    """What could let another user have written to `folder` (sentences; [] where it is private)."""
    folder = pathlib.Path(folder)
    try:
        st = os.lstat(folder)
    except FileNotFoundError:
        return ["it does not exist"]
    if stat.S_ISLNK(st.st_mode):
        return ["it is a symbolic link"]
    if not stat.S_ISDIR(st.st_mode):
        return ["it is not a directory"]
    found = []
    if st.st_uid != os.getuid():
        found.append(f"it is owned by uid {st.st_uid}, not by you (uid {os.getuid()})")
    if st.st_mode & 0o077:
        found.append(f"its mode is {stat.S_IMODE(st.st_mode):04o}: group or others may use it (0700 wanted)")
    for up in folder.absolute().parents:
        what = "its parent" if up == folder.absolute().parent else "the folder"
        above = os.stat(up)
        if above.st_uid not in (0, os.getuid()):
            found.append(f"{what} {up} is owned by uid {above.st_uid}, who could replace it")
        elif above.st_mode & 0o022 and not above.st_mode & stat.S_ISVTX:
            found.append(f"{what} {up} (mode {stat.S_IMODE(above.st_mode):04o}) lets others replace it")
    return found
