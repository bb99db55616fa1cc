"""Sphinx hooks for the course's site; `_config.yml` loads this module as an extension.

Jupyter Book 1.x always loads sphinx-thebe, whose inline configuration script landed twice
on every page, so every page threw "Identifier 'THEBE_JS_URL' has already been declared".
The site launches no live kernels (its explorers are precomputed players), so thebe is
never configured and its scripts are never added.

pydata-sphinx-theme loads Font Awesome's JavaScript (1.5 MB, every icon there is) on every
page only to swap its icons for SVGs; its stylesheet already draws the same icons from the
web fonts, which a browser fetches only for the icons a page shows. So the built pages do
not load the script, and it is not shipped.

The formulas are typeset by KaTeX at build time (`formulas`): no page loads a script for them.

Citations and the reference list use one label per source, the course's "Author Year" with a
letter where two would be alike (`presets.bibliography`), through a pybtex label style
registered here as `course` (`_config.yml`: `bibtex_default_style` and the `label` reference
style), so "[Boehm 2022]" in the text is "[Boehm 2022]" in the list on the References page.

Each page has a meta description, its first paragraph (`describe`). The course's scripts are
deferred (`_config.yml`), and so are the toolchain's (`defer_scripts`): each runs its work when
the page has been read, so none needs to hold up the first paint, which on a phone on a slow
network it did by a second and more (Lighthouse). `documentation_options.js` alone stays in
place, a few hundred bytes that the page's inline scripts use as they are read; the search
page keeps its scripts in place (`defer_scripts`).

After the build, each page is mended (`mend`): a folded cell's bar is named by what it shows,
not "Toggle hidden content"; one viewport tag is left of the three the layouts write; each figure
links to its own image, which phone.js opens enlarged; the sidebar's title and search sit in a
landmark. Then `trim` cuts the theme's stylesheets, icon fonts and search scripts to what the
pages use and takes plain tokens' spans out of the listings, `bundle` makes each page's
stylesheets one file, and the reference list loses a list role its entries do not fit
(`drop_citation_list_role`).

The repository button and the launch buttons follow the course's repository
(`notebooks.repository`: `GITHUB_REPOSITORY` on GitHub Actions, else the setting
`GPUMODEL_REPOSITORY`, else the checkout's git remote on GitHub), so a fork's site links to the
fork with no edit; where none is known the site has neither. The JupyterHub button appears
where `JUPYTERHUB_URL` names a hub (the Pages workflow reads it from the repository variable of
that name). BinderHub and JupyterHub open the chapter's notebook (`notebooks/<chapter>.ipynb`),
not its MyST source; on a page that is no chapter, the folder of notebooks.
"""

from __future__ import annotations

import html
import os
import pathlib
import re

import pybtex.plugin
from docutils import nodes
from pybtex.style.formatting.alpha import Style as AlphaStyle
from pybtex.style.labels import BaseLabelStyle

from .. import presets
from . import bundle, notebooks, trim

THEBE_EVENTS = ("env-before-read-docs", "doctree-resolved")
"""The events at which sphinx-thebe adds its scripts to pages."""


FONTAWESOME = "_static/scripts/fontawesome.js"
"""The theme's Font Awesome script, relative to the site's root."""


def drop_fontawesome(out: pathlib.Path) -> None:
    """Take Font Awesome's script out of every built page and out of the site."""
    tag = re.compile(r'<script[^>]*src="[^"]*' + re.escape(FONTAWESOME) + r'[^"]*"[^>]*></script>\s*')
    for page in out.rglob("*.html"):
        html = page.read_text(encoding="utf-8")
        if FONTAWESOME in html:
            page.write_text(tag.sub("", html), encoding="utf-8")
    for path in out.glob(FONTAWESOME + "*"):
        path.unlink()


CITATION_LIST = '<div role="list" class="citation-list">'
"""Docutils' reference list: a list whose entries are docutils' doc-biblioentry, with backlinks
beside them, which ARIA does not allow in a list (axe: aria-required-children)."""


def drop_citation_list_role(out: pathlib.Path) -> None:
    """Write the reference list of every built page as a plain division (its entries keep their
    doc-biblioentry role)."""
    for page in out.rglob("*.html"):
        html = page.read_text(encoding="utf-8")
        if CITATION_LIST in html:
            page.write_text(html.replace(CITATION_LIST, '<div class="citation-list">'), encoding="utf-8")


HIDDEN_CELL = '<summary aria-label="Toggle hidden content">'
"""myst-nb's bar over a folded cell: named "Toggle hidden content" for a listener while it shows
"Show code cell source" (WCAG 2.5.3, label in name). Without the label its name is what it shows."""
VIEWPORT = re.compile(r'[ \t]*<meta name="viewport"[^>]*>\n?')
"""The viewport tag, which Sphinx's layout, docutils and pydata-sphinx-theme's layout each write."""
FIGURE = re.compile(r'(<figure\b[^>]*>\s*)(<img\b[^>]*?\bsrc="(?!data:)([^"]+)"[^>]*>)')
"""A figure's image (myst-nb's figures from a cell's output, the pages' own figures), with its address."""
SEARCH_FIELD = '<button class="btn search-button-field search-button__button pst-js-only" title="Search" aria-label="Search"'
"""The sidebar's search button, which shows "Search Ctrl+K" and was named "Search" (label in name);
its name is what it shows."""
SIDEBAR_START = '<div class="sidebar-primary-items__start sidebar-primary__section">'
"""The sidebar's first section: the course's title (its home link) and the search button, above the
chapters' navigation, in no landmark of the theme's (axe: region)."""


def mend(html: str) -> str:
    """One built page as a reader needs it: each figure a link to its own image (phone.js opens it
    enlarged); folded cells and the search field named by what they show; one viewport tag; the
    sidebar's title and search in a navigation landmark, "Course" (its chapters' list is "Main")."""
    html = FIGURE.sub(lambda m: f'{m[1]}<a class="gm-enlarge" href="{m[3]}" title="Enlarge the figure">{m[2]}</a>', html)
    html = html.replace(HIDDEN_CELL, "<summary>").replace(SEARCH_FIELD, SEARCH_FIELD.removesuffix(' aria-label="Search"'))
    seen = []
    html = VIEWPORT.sub(lambda m: "" if seen else seen.append(m) or m[0], html)
    return html.replace(SIDEBAR_START, SIDEBAR_START[:-1] + ' role="navigation" aria-label="Course">')


def mend_pages(out: pathlib.Path) -> None:
    """`mend` every built page."""
    for page in out.rglob("*.html"):
        html = page.read_text(encoding="utf-8")
        mended = mend(html)
        if mended != html:
            page.write_text(mended, encoding="utf-8")


def finish(app, exception) -> None:
    """The built site without Font Awesome's script, then trimmed (`trim`). The static files are
    copied afresh first: a build with no page out of date copies none, and trimming what an
    earlier build trimmed would keep its cuts."""
    if exception is not None or app.builder.format != "html":
        return
    if not hasattr(app.builder, "globalcontext"):  # no page written: the context the static templates need
        app.builder.prepare_writing(set())
    app.builder.copy_static_files()
    out = pathlib.Path(app.outdir)
    drop_fontawesome(out)
    drop_citation_list_role(out)
    mend_pages(out)
    trim.trim(out)


def bundle_sheets(app, exception) -> None:
    """Each page's listings without the spans of tokens drawn as their own text
    (`trim.unwrap_plain_tokens`), then its stylesheets as one file (`bundle`), once every other
    handler has written its sheets: pydata-sphinx-theme rewrites pygments.css with its light and
    dark styles after `finish` has copied Sphinx's."""
    if exception is None and app.builder.format == "html":
        trim.unwrap_plain_tokens(pathlib.Path(app.outdir))
        bundle.bundle(pathlib.Path(app.outdir))


CHAPTER_SOURCE = re.compile(r"chapters/(\w+)\.md")
OTHER_SOURCE = re.compile(r"tree/[\w/.-]*\.md\b")


def one_entry_per_script(app, config) -> None:
    """Jupyter Book adds every .js of `_static/` to `html_js_files` by name, beside the entries
    `_config.yml` gives with their attributes (`defer`): keep those alone, so that each script
    is loaded once, deferred."""
    named = {entry[0] for entry in config.html_js_files if isinstance(entry, (list, tuple))}
    config.html_js_files = [e for e in config.html_js_files if isinstance(e, (list, tuple)) or e not in named]


def configure(app, config) -> None:
    """Point the repository and launch buttons at the course's repository (`notebooks.repository`);
    where none is known, leave them out (see the module doc)."""
    theme = config.html_theme_options
    repo = notebooks.repository()
    if repo is None:
        theme.pop("repository_url", None)
        theme["use_repository_button"] = False
        theme["launch_buttons"] = {}
        return
    theme["repository_url"] = repo
    theme["use_repository_button"] = True
    hub = os.environ.get("JUPYTERHUB_URL", "").strip()
    if hub:
        theme.setdefault("launch_buttons", {})["jupyterhub_url"] = hub


def launch_notebooks(app, pagename, templatename, context, doctree) -> None:
    """Make each launch button open `notebooks/<chapter>.ipynb` rather than the MyST source, and
    on a page that is no chapter the folder of notebooks."""
    for group in context.get("header_buttons", []):
        if group.get("label") == "launch-buttons":
            for button in group["buttons"]:
                if "url" in button:
                    url = CHAPTER_SOURCE.sub(r"notebooks/\1.ipynb", button["url"])
                    button["url"] = OTHER_SOURCE.sub("tree/notebooks", url)


DESCRIPTION_CHARS = 160
"""The most characters of a page's description (what a search engine shows under its title)."""


def _ancestors(node):
    while node.parent is not None:
        node = node.parent
        yield node


UNDEFERRED = ("documentation_options.js",)
"""Scripts that the page's inline scripts use as they are read, so they load in place."""


def defer_scripts(app, pagename, templatename, context, doctree) -> None:
    """Every script loaded from a file is deferred but `UNDEFERRED` (see the module doc), on
    every page but the search page, whose template loads Sphinx's search scripts in place after
    these, and they need doctools.js run first."""
    if pagename == "search":
        return
    context["script_files"] = [
        js if not js.filename or js.filename.endswith(UNDEFERRED) or "defer" in js.attributes
        else type(js)(js.filename, priority=js.priority, **{**js.attributes, "defer": "defer"})
        for js in context["script_files"]]


def describe(app, pagename, templatename, context, doctree) -> None:
    """Give each page a meta description: its first paragraph of prose (none in a cell's output,
    a note or an admonition), as text, up to its first formula, cut at a word within
    `DESCRIPTION_CHARS`."""
    if doctree is None:
        return
    first = next((p for p in doctree.findall(nodes.paragraph)
                  if not any(isinstance(a, (nodes.Admonition, nodes.container)) for a in _ancestors(p))), None)
    if first is None:
        return
    words = []
    for child in first.children:
        if isinstance(child, nodes.math):  # TeX is no text: end at the last sentence before it
            before = "".join(words)
            words = [before.rsplit(". ", 1)[0] + "."] if ". " in before else words
            break
        words.append(child.astext())
    text = " ".join("".join(words).split())
    if len(text) > DESCRIPTION_CHARS:
        text = text[:DESCRIPTION_CHARS - 1].rsplit(" ", 1)[0] + "…"
    context["metatags"] = context.get("metatags", "") + f'\n<meta name="description" content="{html.escape(text)}" />'


class CourseLabels(BaseLabelStyle):
    """pybtex's labels for the reference list: the course's own (`presets.bibliography`)."""

    def format_labels(self, sorted_entries):
        labels = presets.bibliography()
        for entry in sorted_entries:
            yield labels[entry.key][0]


class CourseStyle(AlphaStyle):
    """pybtex's alpha style (entries sorted by author, year and title) with the course's labels."""

    default_label_style = CourseLabels


def setup(app):
    pybtex.plugin.register_plugin("pybtex.style.formatting", "course", CourseStyle, force=True)
    for event in THEBE_EVENTS:
        listeners = app.events.listeners.get(event, [])
        listeners[:] = [ls for ls in listeners if not ls.handler.__module__.startswith("sphinx_thebe")]
    app.connect("build-finished", finish)
    app.connect("build-finished", bundle_sheets, priority=900)  # after the theme rewrites pygments.css (500)
    app.connect("config-inited", configure)
    app.connect("config-inited", one_entry_per_script)
    app.connect("html-page-context", launch_notebooks, priority=502)  # after the theme adds them (501)
    app.connect("html-page-context", describe)
    app.connect("html-page-context", defer_scripts, priority=900)  # after every extension's scripts
    app.connect("env-get-outdated", every_page)
    return {"parallel_read_safe": True, "parallel_write_safe": True}


def every_page(app, env, added, changed, removed) -> list:
    """Every page is read and written again at every build, not only those whose source changed:
    the chapters execute the package's current code and data, and `finish` and `bundle_sheets`
    make the trimmed stylesheets, icon fonts and bundles afresh for all pages, so a page kept from
    an earlier build would link a font or a bundle that is gone."""
    return sorted(env.found_docs - set(added) - set(changed) - set(removed))
