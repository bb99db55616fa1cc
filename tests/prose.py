"""How readable a chapter's main line is: its prose cut into sentences, and the limits each chapter
is held to (`tests/test_prose.py`; `make bench` prints the figures).

The main line is what a reader cannot skip: the paragraphs and list items of a chapter, and the
text of its exercises. Code, tables, formulas, headings and figures are not prose; asides are not
the main line (admonitions, dropdowns, margin notes, solutions). MyST is parsed with the parser
myst-parser itself uses (markdown-it-py); sentences are cut by pySBD, a rule-based sentence
boundary detector that knows "e.g.", "Fig. 6.1" and "1.5x". A glued number, an inline formula or
an inline listing counts as one word, a citation as none, a term or a link as its words.

Run `python tests/prose.py [chapters/NN_name.md ...]` for each chapter's figures and its longest
sentences.
"""

from __future__ import annotations

import dataclasses
import functools
import pathlib
import re
import statistics
import sys

from markdown_it import MarkdownIt
from mdit_py_plugins.colon_fence import colon_fence_plugin
from mdit_py_plugins.dollarmath import dollarmath_plugin
from mdit_py_plugins.front_matter import front_matter_plugin
from mdit_py_plugins.myst_role import myst_role_plugin

ROOT = pathlib.Path(__file__).resolve().parent.parent
CHAPTERS = sorted(p for p in (ROOT / "chapters").glob("[0-9][0-9]_*.md"))

MEAN_WORDS = 18
"""The most words a chapter's sentences may average."""
LONG = 40
"""A sentence over this many words is long ..."""
LONG_SHARE = 0.03
"""... and at most this share of a chapter's sentences may be."""
LONGEST = 60
"""No sentence may run past this many words."""

MAIN_LINE_DIRECTIVES = {"exercise"}
"""Directives whose text is read on the main line; every other one is an aside or not prose."""


@functools.cache
def _parser() -> MarkdownIt:
    return (MarkdownIt("commonmark").enable("table").use(front_matter_plugin).use(dollarmath_plugin)
            .use(colon_fence_plugin).use(myst_role_plugin))


@functools.cache
def _segmenter():
    import pysbd

    return pysbd.Segmenter(language="en", clean=False)


def _inline_text(token) -> str:
    """An inline token's words as a reader meets them (see the module's doc)."""
    out = []
    for child in token.children or ():
        if child.type == "text":
            out.append(child.content)
        elif child.type in ("softbreak", "hardbreak"):
            out.append(" ")
        elif child.type in ("code_inline", "math_inline"):
            out.append("X")
        elif child.type == "myst_role":
            name, text = child.meta["name"], child.content
            if name.startswith("cite"):
                continue
            if name in ("term", "doc", "ref"):
                label = re.fullmatch(r"(.*?)\s*(?:<[^<>]*>)?", text, re.S).group(1)
                out.append(label if label or name == "term" else "the page")
            elif name == "numref":
                out.append("Figure X")
            else:  # glue, math, and any role that shows a value
                out.append("X")
    return "".join(out)


def paragraphs(text: str) -> list[str]:
    """The main line's paragraphs and list items of MyST `text`, as plain text."""
    out, in_solution, before = [], False, None
    for token in _parser().parse(text):
        opened, before = before, token.type
        if token.type == "fence" and token.info.startswith("{"):
            name = token.info[1:].split("}", 1)[0]
            if name == "solution-start":
                in_solution = True
            elif name == "solution-end":
                in_solution = False
            elif name in MAIN_LINE_DIRECTIVES and not in_solution:
                body = "\n".join(line for line in token.content.splitlines() if not line.startswith(":"))
                out.extend(paragraphs(body))
        elif token.type == "inline" and opened == "paragraph_open" and not in_solution:  # not a heading's or a cell's
            out.append(_inline_text(token))
    return [" ".join(p.split()) for p in out if p.strip()]


def sentences(text: str) -> list[str]:
    """The main line of MyST `text` cut into sentences."""
    return [s.strip() for p in paragraphs(text) for s in _segmenter().segment(p) if s.strip()]


def words(sentence: str) -> int:
    """The words of a sentence: what spaces separate, less lone punctuation."""
    return sum(1 for w in sentence.split() if re.search(r"\w", w))


@dataclasses.dataclass(frozen=True)
class Readability:
    """One page's figures."""

    sentences: int
    mean: float
    long_share: float
    longest: int
    longest_sentences: tuple

    def faults(self) -> list[str]:
        """What this page breaks of the limits, in words."""
        out = []
        if self.mean > MEAN_WORDS:
            out.append(f"averages {self.mean:.1f} words a sentence (at most {MEAN_WORDS})")
        if self.long_share > LONG_SHARE:
            out.append(f"{self.long_share:.1%} of its sentences run over {LONG} words (at most {LONG_SHARE:.0%})")
        if self.longest > LONGEST:
            out.append(f"its longest sentence has {self.longest} words (at most {LONGEST}): "
                       f"{self.longest_sentences[0][1][:200]!r}")
        return out


def readability(path: pathlib.Path) -> Readability:
    """The figures of the chapter at `path`."""
    found = sentences(path.read_text())
    counts = [words(s) for s in found]
    ranked = tuple(sorted(zip(counts, found), key=lambda pair: -pair[0])[:5])
    return Readability(len(found), statistics.fmean(counts) if counts else 0.0,
                       sum(c > LONG for c in counts) / len(counts) if counts else 0.0,
                       max(counts, default=0), ranked)


def table(paths=CHAPTERS) -> str:
    """Each chapter's figures beside the limits, one line each."""
    lines = [f"{'chapter':28} {'sentences':>9} {'mean':>6} {'>' + str(LONG):>6} {'longest':>8}",
             f"{'(limits)':28} {'':>9} {MEAN_WORDS:>6} {LONG_SHARE:>6.0%} {LONGEST:>8}"]
    for path in paths:
        r = readability(path)
        flag = "  OVER" if r.faults() else ""
        lines.append(f"{path.stem:28} {r.sentences:>9} {r.mean:>6.1f} {r.long_share:>6.1%} {r.longest:>8}{flag}")
    return "\n".join(lines)


if __name__ == "__main__":
    chosen = [pathlib.Path(a).resolve() for a in sys.argv[1:]] or CHAPTERS
    print(table(chosen))
    for path in chosen if sys.argv[1:] else ():
        for count, sentence in readability(path).longest_sentences:
            print(f"\n{count} words: {sentence}")
