"""The site's formulas as MathML, written into the pages when they are built.

Every browser the course is read in draws MathML Core itself (Chromium since 109, Firefox,
Safari), so a page needs no script to show its formulas: nothing to download (MathJax and its
fonts were 0.7 MB on every page with a formula), nothing to typeset while the reader scrolls.
`_config.yml` names this module as an extension and `html_math_renderer: mathml`; the TeX of
each formula is converted by latex2mathml (pure Python), and `tests/test_book.py` holds every
formula of the book to what it converts. The learners' notebooks keep their TeX: Jupyter and
Colab typeset it themselves.

A browser draws MathML with the math font the reader's system has, and some have none (a Linux
desktop draws sub- and superscripts with a text font and cannot stretch a bracket). So the site
brings one: after each build, `write_font` cuts Latin Modern Math (the TeX font, `_vendor/fonts/`)
to the characters the pages' formulas use, with its MATH table (the sizes and pieces of each
stretchy bracket), as a WOFF of about 0.1 MB that `_static/course.css` names for every `<math>`.
"""

from __future__ import annotations

import html
import pathlib
import re

from docutils import nodes
from latex2mathml.converter import convert
from sphinx.locale import _
from sphinx.util.math import get_node_equation_number

NAME = "mathml"
"""The math renderer's name, as `_config.yml`'s `html_math_renderer` gives it."""

_UNTRANSLATED = re.compile(r"\\[A-Za-z]+")
FONT = pathlib.Path(__file__).parents[2] / "_vendor" / "fonts" / "latinmodern-math.otf"
"""Latin Modern Math 1.959 (GUST e-foundry; GUST Font License, beside it)."""
FONT_OUT = "_static/math.woff"
"""Where the subset goes in the built site; `_static/course.css` loads it from there."""
_MATH = re.compile(r"<math\b.*?</math>", re.S)
_ITALIC = {**{ord(c): 0x1D434 + i for i, c in enumerate("ABCDEFGHIJKLMNOPQRSTUVWXYZ")},
           **{ord(c): 0x1D44E + i for i, c in enumerate("abcdefghijklmnopqrstuvwxyz")}, ord("h"): 0x210E}
"""Latin letters to the math italic ones a browser draws a one-letter <mi> with."""


def mathml(tex: str, display: bool = False) -> str:
    """The MathML of one TeX formula; ValueError naming the formula where a macro is left
    unconverted (latex2mathml passes an unknown one through as text)."""
    if not isinstance(tex, str):
        raise TypeError(f"tex must be a str of TeX, not {type(tex).__name__}")
    try:
        out = convert(tex.strip(), display="block" if display else "inline")
    except Exception as err:  # latex2mathml's own errors have no common base class
        raise ValueError(f"the formula {tex!r} cannot be converted to MathML: {err}") from err
    left = _UNTRANSLATED.findall(re.sub(r"<[^>]*>", "", out))
    if left:
        raise ValueError(f"the formula {tex!r} uses {', '.join(sorted(set(left)))}, which latex2mathml leaves as text")
    return out


def visit_math(self, node: nodes.math) -> None:
    """An inline formula: its MathML in a span of the class sphinx.ext.mathjax gives it."""
    self.body.append(self.starttag(node, "span", "", CLASS="math notranslate nohighlight"))
    self.body.append(mathml(node.astext()) + "</span>")
    raise nodes.SkipNode


def visit_displaymath(self, node: nodes.math_block) -> None:
    """A displayed formula (one per block: the book writes no environments), numbered where
    it has a label."""
    self.body.append(self.starttag(node, "div", CLASS="math notranslate nohighlight"))
    if node["number"]:
        self.body.append(f'<span class="eqno">({get_node_equation_number(self, node)})')
        self.add_permalink_ref(node, _("Link to this equation"))
        self.body.append("</span>")
    self.body.append(mathml(node.astext(), display=True) + "</div>\n")
    raise nodes.SkipNode


def used_characters(site: pathlib.Path) -> set:
    """Every character the formulas of the built `site`'s pages show, letters also in math italic."""
    chars = set()
    for page in site.rglob("*.html"):
        for formula in _MATH.findall(page.read_text(encoding="utf-8")):
            chars |= {ord(c) for c in html.unescape(re.sub(r"<[^>]*>", "", formula))}
    return chars | {_ITALIC[c] for c in chars if c in _ITALIC}


def write_font(site: pathlib.Path) -> int:
    """Write FONT cut to the characters of `site`'s formulas (and the glyphs its MATH table
    draws them with) to FONT_OUT as a WOFF; its size in bytes (0, and no file, with no formula)."""
    from fontTools import subset, ttLib

    chars = used_characters(site)
    if not chars:
        return 0
    font = ttLib.TTFont(FONT)
    cut = subset.Subsetter(subset.Options(flavor="woff", layout_features=["*"], drop_tables=["FFTM"]))
    cut.populate(unicodes=chars)
    cut.subset(font)
    out = site / FONT_OUT
    font.save(out)
    return out.stat().st_size


def setup(app):
    app.add_html_math_renderer(NAME, (visit_math, None), (visit_displaymath, None))
    return {"parallel_read_safe": True, "parallel_write_safe": True}
