"""The glossary (`glossary.md`) and the chapters' `{term}` links: every term defined once, with the
chapter that teaches it; no chapter uses a term of a later chapter without linking it first."""

from __future__ import annotations

import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
CHAPTERS = sorted((ROOT / "chapters").glob("[0-9]*.md"))
TERM_ROLE = re.compile(r"\{term\}`(?P<text>[^`<]*?)\s*(?:<(?P<target>[^`>]+)>)?`")


def glossary() -> dict:
    """Every term (each alias of an entry) -> the number of the first chapter its entry names."""
    body = re.search(r"```\{glossary\}\n(?::\w+:[^\n]*\n)*\n(.*?)^```", (ROOT / "glossary.md").read_text(), re.S | re.M)
    terms = {}
    for entry in re.split(r"\n\n(?=\S)", body.group(1).strip()):
        lines = entry.splitlines()
        names = [line.strip() for line in lines if line and not line.startswith(" ")]
        definition = " ".join(line.strip() for line in lines if line.startswith("  "))
        chapter = int(re.search(r"\{doc\}`chapters/(\d+)_", definition).group(1))
        for name in names:
            assert name not in terms, f"{name!r} is defined twice"
            terms[name] = chapter
    return terms


def prose(path: pathlib.Path, inline_code: bool = False) -> str:
    """A chapter's prose: no front matter, code cells, code (inline code where `inline_code`), math,
    labels, or roles other than {term}."""
    text = re.sub(r"\A---\n.*?\n---\n", "", path.read_text(), flags=re.S)
    text = re.sub(r"^(`{3,})\{code-cell\}.*?^\1$", "", text, flags=re.S | re.M)
    text = re.sub(r"^(`{3,})[\w+]+\n.*?^\1$", "", text, flags=re.S | re.M)  # code blocks in a language
    text = re.sub(r"^(`{3,}|:{3,}).*$", "", text, flags=re.M)  # directives' fences (their bodies are prose)
    text = re.sub(r"\$\$.*?\$\$|\$[^$\n]+\$", "", text, flags=re.S)
    text = re.sub(r"\{(?!term\})[\w:-]+\}`[^`]*`", "", text)
    if not inline_code:  # a term role's closing backtick opens no inline code
        text = re.sub(r"(\{term\}`[^`]*`)|`[^`\n]*`", lambda m: m[1] or "", text)
    return re.sub(r"^:\w+:.*$", "", text, flags=re.M)


def pattern(term: str) -> re.Pattern:
    """A term as prose writes it: a whole word, plural allowed; case matters where the term has capitals."""
    flags = 0 if any(c.isupper() for c in term) else re.I
    words = r"\s+".join(map(re.escape, term.split()))
    return re.compile(rf"(?<![\w-]){words}(?:s|es)?(?![\w-])", flags)


TERMS = glossary()


def test_each_term_is_used_in_the_chapter_said_to_teach_it():
    for term, chapter in TERMS.items():
        path = next(p for p in CHAPTERS if p.stem.startswith(f"{chapter:02d}_"))
        assert pattern(term).search(prose(path, inline_code=True)), f"{term!r} is said to be taught in {path.name}, which never uses it"
    assert len({t for t in TERMS}) >= 50


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_every_term_link_resolves(path):
    for m in TERM_ROLE.finditer(path.read_text()):
        target = m["target"] or m["text"]
        assert target in TERMS, f"{path.name}: {{term}} {target!r} is not in the glossary"


def unlinked_first_uses(text: str) -> list:
    """(term, match) for each glossary term whose first use in the prose `text` comes before any
    link to it. Longer terms are matched first ("thread block" is not "block")."""
    links = {}
    for m in TERM_ROLE.finditer(text):
        links.setdefault(m["target"] or m["text"], m.start())
    text = TERM_ROLE.sub(lambda m: " " * len(m[0]), text)
    found = []
    for term in sorted(TERMS, key=len, reverse=True):
        first = pattern(term).search(text)
        text = pattern(term).sub(lambda m: " " * len(m[0]), text)
        if first and not (term in links and links[term] < first.start()):
            found.append((term, first))
    return found


def _shown(term: str, first) -> str:
    return f"{term!r}: ...{first.string[max(0, first.start() - 40):first.end() + 20]!r}"


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_no_term_is_used_before_its_chapter_without_a_link(path):
    """A term taught in a later chapter is linked to the glossary where this chapter first uses it."""
    number = int(path.stem.split("_")[0])
    unlinked = [f"{_shown(term, first)} (chapter {TERMS[term]})" for term, first in unlinked_first_uses(prose(path))
                if TERMS[term] > number]
    assert not unlinked, f"{path.name} uses, before linking: {', '.join(unlinked)}"


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_every_term_is_linked_at_its_first_use_in_a_chapter(path):
    """Wherever a reader starts, the first use of a glossary term on a page links to it (headings aside)."""
    unlinked = [_shown(term, first) for term, first in unlinked_first_uses(re.sub(r"^#.*$", "", prose(path), flags=re.M))]
    assert not unlinked, f"{path.name} uses, before linking: {', '.join(unlinked)}"


def test_a_term_link_in_a_notebook_opens_the_term_in_the_sites_glossary():
    """The learners' notebooks link `{term}` roles to the anchor Sphinx gives the term."""
    from sphinx.util.nodes import _make_id

    from gpumodel.book import notebooks

    chapter = notebooks._Chapter(ROOT / "chapters" / "01_hierarchy.md", {}, repo="https://github.com/a/b")
    text = chapter.markdown("the {term}`tensor cores <tensor core>` and {term}`occupancy`; see {doc}`../glossary`")
    assert text == ("the [tensor cores](https://a.github.io/b/glossary.html#term-tensor-core) and "
                    "[occupancy](https://a.github.io/b/glossary.html#term-occupancy); "
                    "see [Glossary](https://a.github.io/b/glossary.html)")
    for term in TERMS:
        assert notebooks.glossary_link(term, "https://github.com/a/b").endswith("#" + _make_id(f"term-{term}")), term
