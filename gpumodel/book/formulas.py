"""The site's formulas, typeset by KaTeX when the site is built.

sphinxcontrib-katex runs the KaTeX it ships in node during the build (its prerendering), so each
page carries finished formulas: KaTeX's HTML, set in KaTeX's fonts, with MathML beside it for
screen readers. No page loads a script for them. The stylesheet and the fonts are KaTeX's own,
served by the site (`_vendor/katex/`) and trimmed with the theme's (`trim`). A formula KaTeX
cannot typeset fails the build, naming it (`typeset`). The learners' notebooks keep their TeX:
Jupyter and Colab typeset it themselves.

A displayed formula is written twice: in KaTeX's display form, and for a phone the same TeX set
inline in \\displaystyle, which KaTeX breaks after a relation or an operator where the line is
full. `_static/course.css` shows one or the other by the page's width. A displayed formula still
wider than its column scrolls in its own box, which takes keyboard focus.
"""

from __future__ import annotations

import pathlib

from docutils import nodes
from sphinx.locale import _
from sphinx.util.math import get_node_equation_number
from sphinxcontrib.katex import KaTeXError, render_latex

NAME = "katex"
"""The math renderer's name, as `_config.yml`'s `html_math_renderer` gives it."""
VENDORED = pathlib.Path(__file__).parents[2] / "_vendor" / "katex"
"""KaTeX's stylesheet and fonts (`_vendor/VENDORED.txt`), copied into the site's `_static/`."""
STYLESHEET = "katex.min.css"


def typeset(tex: str, display: bool = False) -> str:
    """KaTeX's HTML for one TeX formula (its display form where `display`). ValueError naming
    the formula where KaTeX cannot typeset it (an unknown macro, a brace left open)."""
    if not isinstance(tex, str):
        raise TypeError(f"tex must be a str of TeX, not {type(tex).__name__}")
    try:
        return render_latex(tex.strip(), {"displayMode": display, "throwOnError": True})
    except KaTeXError as err:
        raise ValueError(f"the formula {tex!r} cannot be typeset by KaTeX: {err}") from None


def visit_math(self, node: nodes.math) -> None:
    """An inline formula, in a span of the class sphinx.ext.mathjax gives it."""
    self.body.append(self.starttag(node, "span", "", CLASS="math notranslate nohighlight"))
    self.body.append(typeset(node.astext()) + "</span>")
    raise nodes.SkipNode


def visit_displaymath(self, node: nodes.math_block) -> None:
    """A displayed formula (one per block: the book writes no environments), numbered where it
    has a label: its wide form and its narrow one (see the module's doc)."""
    self.body.append(self.starttag(node, "div", CLASS="math notranslate nohighlight", tabindex="0"))
    if node["number"]:
        self.body.append(f'<span class="eqno">({get_node_equation_number(self, node)})')
        self.add_permalink_ref(node, _("Link to this equation"))
        self.body.append("</span>")
    wide, narrow = typeset(node.astext(), display=True), typeset(r"\displaystyle " + node.astext())
    self.body.append(f'<div class="formula-wide">{wide}</div><div class="formula-narrow">{narrow}</div></div>\n')
    raise nodes.SkipNode


def add_static(app, config) -> None:
    """Serve KaTeX's stylesheet and fonts from the site, and load the stylesheet on every page."""
    config.html_static_path.append(str(VENDORED))
    app.add_css_file(STYLESHEET)


def setup(app):
    app.add_html_math_renderer(NAME, (visit_math, None), (visit_displaymath, None))
    app.connect("config-inited", add_static)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
