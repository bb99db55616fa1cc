"""Every checkpoint and exercise is answerable from its own page: each declares, in its chapter's
exercise module (`RELIES_ON`), the glued numbers, glossary terms and formula-sheet entries its
answer needs, and each stands above it on the page: a glued number shown, a term linked, the
formula sheet linked from the question."""

from __future__ import annotations

import importlib
import pathlib
import re

import pytest

import gpumodel as gm
from gpumodel import course

ROOT = pathlib.Path(__file__).resolve().parent.parent
CHAPTERS = {name: next((ROOT / "chapters").glob(f"[0-9][0-9]_{name}.md"))
            for name in course.CHAPTERS if any((ROOT / "chapters").glob(f"[0-9][0-9]_{name}.md"))}
EXERCISE = re.compile(r"^(`{3,})\{exercise\}[^\n]*\n:label: (?P<label>[\w-]+)\n(?P<body>.*?)^\1$", re.S | re.M)
CHECKPOINT = re.compile(r"gm\.course\.checkpoint\(\"(?P<key>[\w-]+)\"\)")
FORMULA_SHEET = re.compile(r"\{doc\}`[^`]*formulas>?`|\]\([^)]*formulas(?:\.md|\.html)?(?:#[\w-]*)?\)")


def places(text: str) -> dict:
    """Each checkpoint key and exercise label of a chapter -> (where it starts, its own text)."""
    found = {m["key"]: (m.start(), "") for m in CHECKPOINT.finditer(text)}
    found.update({m["label"]: (m.start(), m["body"]) for m in EXERCISE.finditer(text)})
    return found


def missing(text: str, place: int, own: str, needs) -> list[str]:
    """What of `needs` does not stand above `place` in the chapter `text` (see the module's doc)."""
    above, out = text[:place], []
    for need in needs:
        kind, _, name = need.rpartition(":")
        if kind == "term":
            ok = re.search(rf"\{{term\}}`(?:{re.escape(name)}|[^`<]*<{re.escape(name)}>)`", above)
        elif kind == "formulas":
            ok = FORMULA_SHEET.search(own) and re.search(rf"^## {re.escape(name)}$", _sheet(), re.M)
        elif kind == "":
            ok = re.search(rf"\{{glue(?::md)?\}}`{re.escape(name)}`", above)
        else:
            raise AssertionError(f"{need!r}: a need is a glued name, 'term:<term>' or 'formulas:<section>'")
        if not ok:
            out.append(need)
    return out


def _sheet() -> str:
    return (ROOT / "formulas.md").read_text()


@pytest.mark.parametrize("name", list(CHAPTERS))
def test_every_checkpoint_and_exercise_finds_what_it_needs_above_it(name):
    text = CHAPTERS[name].read_text()
    module = importlib.import_module(f"gpumodel.course.{name}")
    declared = getattr(module, "RELIES_ON", {})
    shown = places(text)
    assert set(declared) == set(shown), (f"{CHAPTERS[name].name}: RELIES_ON must name each checkpoint and exercise; "
                                          f"undeclared {sorted(set(shown) - set(declared))}, "
                                          f"not on the page {sorted(set(declared) - set(shown))}")
    faults = {key: lost for key, (place, own) in shown.items() if (lost := missing(text, place, own, declared[key]))}
    assert not faults, f"{CHAPTERS[name].name}: not above the question: {faults}"


def test_a_need_that_is_not_above_the_question_is_named():
    text = ("Shown: {glue:md}`a`; {term}`warps <warp>`.\n\n```{exercise}\n:label: ex-x\n\n"
            "See the {doc}`formula sheet <../formulas>`.\n```\n{glue:md}`b`")
    (place, own), = places(text).values()
    assert missing(text, place, own, ("a", "term:warp", "formulas:Tiling")) == []
    assert missing(text, place, own, ("b", "term:SM", "formulas:No such section")) == ["b", "term:SM",
                                                                                      "formulas:No such section"]
    assert missing(text, place, "", ("formulas:Tiling",)) == ["formulas:Tiling"]


def test_every_checkpoint_in_the_package_is_shown_on_a_page():
    shown = {key for path in CHAPTERS.values() for key in CHECKPOINT.findall(path.read_text())}
    assert set(gm.course.checkpoints()) == shown
