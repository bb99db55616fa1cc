"""The landing page's map of the course, read from the chapters themselves: what each
chapter promises ("By the end ... you will be able to:"), how long it takes, and whether
it runs CUDA kernels when a GPU answers."""

from __future__ import annotations

import math
import pathlib
import re

CHAPTERS = pathlib.Path(__file__).resolve().parents[2] / "chapters"
READING_WPM = 200
"""Reading speed assumed for the course's prose, words per minute (an estimate)."""
MINUTES_PER_EXERCISE = 10
"""Time assumed per exercise, minutes (an estimate: explore, answer, read the solution)."""


def _parts(text: str) -> tuple[str, str]:
    """The prose of a MyST chapter (no front matter, no code cells) and its title."""
    text = re.sub(r"\A---\n.*?\n---\n", "", text, flags=re.S)
    prose = re.sub(r"^```\{code-cell\}.*?^```$", "", text, flags=re.S | re.M)
    return prose, re.search(r"^# (.+)$", prose, re.M).group(1)


def chapter(path: pathlib.Path) -> dict:
    """One chapter's entry: its name, title, promises, minutes reading and exercising, and
    whether it runs kernels on a GPU (it includes `_gpu_optional.md`)."""
    prose, title = _parts(path.read_text())
    goals = re.search(r"you will be able to:\n\n((?:- .*\n(?:  .*\n)*)+)", prose)
    promises = [" ".join(item.split()) for item in re.split(r"^- ", goals.group(1), flags=re.M)[1:]] if goals else []
    exercises = len(re.findall(r"^`{3,}\{exercise\}", prose, re.M))
    return {"name": path.stem, "title": title, "promises": promises,
            "reading_min": math.ceil(len(prose.split()) / READING_WPM),
            "exercise_min": exercises * MINUTES_PER_EXERCISE, "exercises": exercises,
            "gpu": "_gpu_optional.md" in prose}


def chapters(directory=CHAPTERS) -> list[dict]:
    """Every numbered chapter's entry (see `chapter`), in order."""
    return [chapter(p) for p in sorted(pathlib.Path(directory).glob("[0-9]*.md"))]


def start_here(directory=CHAPTERS) -> str:
    """The landing page's list in Markdown: each chapter, the time it takes, what needs a
    GPU, and what you will be able to do after it."""
    out = []
    for c in chapters(directory):
        runs = "its kernels run on a GPU, the rest anywhere" if c["gpu"] else "runs anywhere"
        out.append(f"- {{doc}}`chapters/{c['name']}`: about {c['reading_min']} min reading + "
                   f"{c['exercise_min']} min for {c['exercises']} exercise{'s' * (c['exercises'] != 1)}; {runs}.")
        out += [f"  - {p.rstrip(';.')}" for p in c["promises"]]
    return "\n".join(out) + "\n"
