"""The site's formulas, typeset by KaTeX when the site is built.

sphinxcontrib-katex runs the KaTeX it ships in node during the build (its prerendering), so each
page carries finished formulas: KaTeX's HTML, set in KaTeX's fonts, with MathML beside it for
screen readers. No page loads a script for them. The stylesheet and the fonts are KaTeX's own,
served by the site (`_vendor/katex/`) and trimmed with the theme's (`trim`). A formula KaTeX
cannot typeset fails the build, naming it (`typeset`). The learners' notebooks keep their TeX:
Jupyter and Colab typeset it themselves.

A displayed formula is written once, in KaTeX's display form. On a phone `_static/course.css`
lets it break as KaTeX breaks an inline formula, after a relation or an operator where the line is
full: KaTeX draws the same TeX inline in \\displaystyle with the very same HTML, so one copy
serves both widths (`one_copy`). A formula whose inline form KaTeX drew otherwise would be
written twice, its inline form shown on a phone. A displayed formula still wider than its column
scrolls in its own box, which takes keyboard focus.
"""

from __future__ import annotations

import os
import pathlib
import socket
import subprocess
import time

from docutils import nodes
from sphinx.locale import _
from sphinx.util.math import get_node_equation_number
from sphinxcontrib.katex import KaTeXError, KaTeXServer, render_latex

NAME = "katex"
"""The math renderer's name, as `_config.yml`'s `html_math_renderer` gives it."""
VENDORED = pathlib.Path(__file__).parents[2] / "_vendor" / "katex"
"""KaTeX's stylesheet and fonts (`_vendor/VENDORED.txt`), copied into the site's `_static/`."""
STYLESHEET = "katex.min.css"


STARTUP_SECONDS = 60.0
"""How long KaTeX's server in node may take to come up (sphinxcontrib-katex allows 5 s)."""


class PatientServer(KaTeXServer):
    """sphinxcontrib-katex's server, connected to once it listens. Its own start connects as
    soon as the socket's file appears, which node makes a moment before it listens: on a loaded
    machine a build was refused there (ConnectionRefusedError). This one tries again until
    `STARTUP_SECONDS` have passed."""

    @classmethod
    def start_server_process(cls, rundir, timeout):
        path = rundir / "katex.sock"
        process = subprocess.Popen(cls.build_command(socket=path), stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd=rundir)
        deadline = time.monotonic() + max(timeout, STARTUP_SECONDS)
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        while True:
            try:
                sock.connect(str(path))
                return process, sock
            except (FileNotFoundError, ConnectionRefusedError):
                if time.monotonic() > deadline or process.poll() is not None:
                    process.kill()
                    sock.close()
                    raise cls.timeout_error(STARTUP_SECONDS) from None
                time.sleep(0.01)


def typeset(tex: str, display: bool = False) -> str:
    """KaTeX's HTML for one TeX formula (its display form where `display`). ValueError naming
    the formula where KaTeX cannot typeset it (an unknown macro, a brace left open)."""
    if not isinstance(tex, str):
        raise TypeError(f"tex must be a str of TeX, not {type(tex).__name__}")
    if KaTeXServer.katex_server is None and os.name == "posix":  # elsewhere KaTeX uses a network socket and waits
        KaTeXServer.katex_server = PatientServer.start()
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
    has a label: written once where its display form serves a phone too (`one_copy`), else its
    wide form and its narrow one (see the module's doc)."""
    self.body.append(self.starttag(node, "div", CLASS="math notranslate nohighlight", tabindex="0"))
    if node["number"]:
        self.body.append(f'<span class="eqno">({get_node_equation_number(self, node)})')
        self.add_permalink_ref(node, _("Link to this equation"))
        self.body.append("</span>")
    wide, narrow = typeset(node.astext(), display=True), typeset(r"\displaystyle " + node.astext())
    if one_copy(wide, narrow):
        self.body.append(f"{wide}</div>\n")
    else:
        self.body.append(f'<div class="formula-wide">{wide}</div><div class="formula-narrow">{narrow}</div></div>\n')
    raise nodes.SkipNode


HTML_START = '<span class="katex-html"'
"""Where KaTeX's drawing of a formula begins, after its MathML for screen readers."""


def one_copy(wide: str, narrow: str) -> bool:
    """Whether a displayed formula's display form `wide` can also be its phone's form: KaTeX drew
    the inline form `narrow` (the same TeX in \\displaystyle) with the same HTML, the display
    form only wrapping it in one more span (`katex-display`), so that the stylesheet need only let
    it break on a phone. Their MathML differs as a display formula's does from an inline one in
    display style, and is not compared."""
    return (wide.startswith('<span class="katex-display">')
            and wide[wide.index(HTML_START):] == narrow[narrow.index(HTML_START):] + "</span>")


def add_static(app, config) -> None:
    """Serve KaTeX's stylesheet and fonts from the site, and load the stylesheet on every page."""
    config.html_static_path.append(str(VENDORED))
    app.add_css_file(STYLESHEET)


def setup(app):
    app.add_html_math_renderer(NAME, (visit_math, None), (visit_displaymath, None))
    app.connect("config-inited", add_static)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
