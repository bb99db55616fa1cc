"""The "your progress" page: every exercise and checkpoint of the chapters, read from the
chapters themselves, marked right or not yet from what this browser kept (widgets.js keeps
{chapter: {question: true}} in localStorage when an answer box judges an answer right); the
labs, checked in Jupyter only, are marked so and left out of the count."""

from __future__ import annotations

import html
import pathlib
import re

from ..units import powers
from .syllabus import CHAPTERS, _parts

EXERCISE = re.compile(r"^(`{3,})\{exercise\}[^\n]*\n:label: ([\w-]+)\n(.*?)^\1$", re.S | re.M)
LAB = re.compile(r"LabEditor\(|\.editor\(")
"""An exercise's code cell that opens the lab's editor: a kernel traced with g++, in Jupyter only."""
CHECKPOINT = re.compile(r"""gm\.course\.checkpoint\(["']([\w-]+)["']\)""")


GLUE = re.compile(r"\{glue(?::md|:text)?\}`([^`]*)`")
BRACED_POWER = re.compile(r"\^\{(-?\d+|T)\}")
"""A braced power in TeX ($2^{10}$), unbraced so that `units.powers` sets it as $N^2$ and $K^T$."""


def _glued(stem: str, directory) -> dict:
    """The values chapter `stem` glues, as its generated notebook records them (the chapter run
    by `make notebooks`); {} where there is none."""
    import nbformat

    path = pathlib.Path(directory).parent / "notebooks" / f"{stem}.ipynb"
    return dict(nbformat.read(path, as_version=4).metadata.get("gpumodel", {}).get("glued", {})) if path.exists() else {}


def _first_sentence(text: str, most: int = 110, glued: dict | None = None) -> str:
    """The first sentence of Markdown `text`, plain, at most `most` characters, each glued value
    as `glued` gives it (its name where it holds none)."""
    text = GLUE.sub(lambda m: (glued or {}).get(m[1], m[1]), text)
    text = powers(BRACED_POWER.sub(r"^\1", text))  # $2N^3/b$ as 2N³/b
    plain = re.sub(r"\{[\w:]+\}`([^`<]*)(?:<[^>]*>)?`|[`$*]", r"\1", text).replace("\\times", "x")
    sentence = re.split(r"(?<=[.?!])\s", " ".join(plain.replace("\\", "").split()), maxsplit=1)[0]
    return sentence if len(sentence) <= most else sentence[:most - 1].rstrip() + "…"


def questions(directory=CHAPTERS) -> list[dict]:
    """Each numbered chapter's questions in reading order: {"name", "title", "items": [(key,
    "exercise" or "checkpoint", text)], "jupyter": the keys of the labs among them, which trace a
    kernel with g++ and are checked in Jupyter or Colab only}; an exercise's key is its label, a
    checkpoint's its key."""
    from ..course import checkpoints

    made = checkpoints()
    out = []
    for path in sorted(pathlib.Path(directory).glob("[0-9]*.md")):
        text, glued = path.read_text(), _glued(path.stem, directory)
        found = [(m.start(), m.group(2), "exercise", _first_sentence(m.group(3), glued=glued))
                 for m in EXERCISE.finditer(text)]
        found += [(m.start(), m.group(1), "checkpoint", made[m.group(1)]().question) for m in CHECKPOINT.finditer(text)]
        labs = [m.group(2) for m in EXERCISE.finditer(text)
                if LAB.search(text[m.end():text.find("{solution-start}", m.end())])]
        if found:
            out.append({"name": path.stem, "title": _parts(text)[1],
                        "items": [item[1:] for item in sorted(found)], "jupyter": labs})
    return out


class Page:
    """The progress page's HTML: a list per chapter, each question linked, its state filled
    in by widgets.js."""

    def __init__(self, chapters: list[dict]):
        self.chapters = chapters

    def _repr_html_(self) -> str:
        labs = sum(len(c["jupyter"]) for c in self.chapters)
        total = sum(len(c["items"]) for c in self.chapters)
        parts = ['<div class="gm-progress gm-widget"><p class="gm-total" aria-live="polite">'
                 'Your progress appears here once this page\'s script has run.</p>'
                 f'<p class="gm-jupyter-note">{labs} of the {total} are labs, marked <i>Jupyter only</i>: each traces '
                 'your kernel with g++, which runs in Jupyter or Colab and not in this browser, so they are checked '
                 'there (<code>gm.course.progress()</code> lists them) and never counted on this page.</p>']
        for c in self.chapters:
            parts.append(f'<p class="gm-chapter"><b>{html.escape(c["title"])}</b></p><ul>')
            for key, kind, text in c["items"]:
                lab = key in c["jupyter"]
                where = ' data-jupyter=""' if lab else ""
                state = "Jupyter only" if lab else "not yet"
                parts.append(f'<li data-page="{c["name"]}" data-key="{html.escape(key)}"{where}><span class="gm-state">'
                             f'{state}</span> &middot; {kind}: <a href="chapters/{c["name"]}.html#{html.escape(key)}">'
                             f'{html.escape(text)}</a></li>')
            parts.append("</ul>")
        parts.append('<p><button type="button" data-reset>Forget my progress in this browser</button></p></div>')
        return "".join(parts)


def page(directory=CHAPTERS) -> Page:
    """The "your progress" page's list (see the module's doc)."""
    return Page(questions(directory))
