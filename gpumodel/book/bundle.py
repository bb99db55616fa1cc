"""A page's stylesheets as one file: run after `trim` by the Sphinx hook (`site.py`).

A chapter links twelve stylesheets (the theme's, Pygments', the extensions', KaTeX's, the
course's) and the theme's first imports a thirteenth, each a request that the first paint waits
for: on a phone on a slow network (Lighthouse's mobile run, gzip as GitHub Pages serves) chapter
3 painted first at 2.3 s, and at 1.3 s with one file. So each page's stylesheet links become one
link to a bundle of those sheets in their order, named by its content's hash (pages that link the
same sheets share one file): an `@import` written out in place, every relative `url()` rewritten
for the bundle's folder. The sheets themselves stay where they are.

A page's repeated inline `<style>` blocks are kept once: IPython's `Code` display writes Pygments'
styles beside every listing it shows (chapter 3: four copies of the same 5 kB).
"""

from __future__ import annotations

import hashlib
import os
import pathlib
import re

LINK = re.compile(r'<link (?=[^>]*\brel="stylesheet")[^>]*\bhref="([^":]+)"[^>]*>\n?')
"""A stylesheet link to a file of the site (an href with no scheme)."""
IMPORT = re.compile(r"""@import\s+(?:url\(\s*)?["']?([^"')\s;]+)["']?\s*\)?\s*;""")
URL = re.compile(r"""url\(\s*(["']?)([^"')]+)\1\s*\)""")
STYLE = re.compile(r"<style(?:\s[^>\\]*)?>.*?</style>\n?", re.S)
"""An inline style block (not one written inside a script's JSON, whose quotes are escaped)."""


def _local(ref: str) -> bool:
    """Whether a url() or @import names a file beside the sheet (not data:, a scheme, the root or a fragment)."""
    return not re.match(r"(?:[a-z][a-z0-9+.-]*:|/|#)", ref, re.I)


def sheet(path: pathlib.Path, folder: pathlib.Path) -> str:
    """The stylesheet at `path` as it reads from `folder`: its imports written out, its relative
    url()s rewritten, its @charset and source-map comment left out."""
    css = path.read_text(encoding="utf-8")

    def imported(match):
        ref = match[1]
        return sheet((path.parent / ref.split("?")[0]).resolve(), folder) if _local(ref) else match[0]

    def moved(match):
        quote, ref = match[1], match[2].strip()
        if not _local(ref):
            return match[0]
        name, rest = re.match(r"([^?#]*)(.*)", ref).groups()
        return f"url({quote}{os.path.relpath(path.parent / name, folder)}{rest}{quote})"

    css = re.sub(r"@charset[^;]*;|/\*# sourceMappingURL=[^*]*\*/", "", css)
    return IMPORT.sub(imported, URL.sub(moved, css))


def bundle(site: pathlib.Path) -> None:
    """Bundle every page's stylesheets and keep its repeated style blocks once (see the module doc)."""
    site = pathlib.Path(site)
    static = site / "_static"
    for page in site.rglob("*.html"):
        html = page.read_text(encoding="utf-8")
        head_end = html.find("</head>")
        links = [m for m in LINK.finditer(html, 0, max(head_end, 0)) if "media=" not in m[0]]
        if links:
            paths = [(page.parent / m[1].split("?")[0]).resolve() for m in links]
            css = "\n".join(sheet(p, static) for p in paths)
            name = f"bundle.{hashlib.sha256(css.encode()).hexdigest()[:10]}.css"
            (static / name).write_text(css, encoding="utf-8")
            one = f'<link rel="stylesheet" href="{os.path.relpath(static / name, page.parent)}" />\n'
            for m in reversed(links):
                html = html[:m.start()] + (one if m is links[0] else "") + html[m.end():]
        seen = set()

        def first(match):
            if match[0] in seen:
                return ""
            seen.add(match[0])
            return match[0]

        page.write_text(STYLE.sub(first, html), encoding="utf-8")
