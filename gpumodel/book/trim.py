"""What the built site's pages load, cut to what they use: run after every build by the Sphinx
hook (`site.py`), on the site Sphinx has just written, so a rebuild trims again.

- The stylesheets keep only the rules that can match: a selector naming a class that no page
  and no script of the site spells is dropped (Bootstrap's utilities, Font Awesome's 1900
  icon rules, sphinx-design's components: three quarters of the theme's CSS).
- Font Awesome's fonts keep only the icons those rules draw: each font is subset to them and
  written as a WOFF (fontTools, which matplotlib brings; WOFF2 would need brotli), under a name
  that carries its content's hash, and the full fonts are not shipped.
- The stylesheets' source maps, which map the untrimmed files, are not shipped.
- A highlighted listing keeps a token's <span> only where its class draws the token unlike
  the listing's own text: Pygments wraps names, punctuation and spaces too, which the theme's
  light and dark styles colour as plain text, so they are only elements for the browser to
  style and lay out (chapter 3: 2,075 of its 6,543 elements, a third of its first style pass).
  `unwrap_plain_tokens` does this apart from `trim`, once pydata-sphinx-theme has written its
  pygments.css (`site.bundle_sheets`): run before, it reads Sphinx's own styles and keeps every span.
- A page other than the search page does not load the search index and Sphinx's search
  scripts, which pydata-sphinx-theme puts on every page for a search-as-you-type the site does
  not turn on (its search box sends the reader to the search page).

Why not PurgeCSS: tried on the built site (PurgeCSS 6.0.0, 2026-12-05), it dropped the theme's
dark mode (`html[data-theme=dark] ...`: the mode is set by a script from the reader's stored
choice, a word its extractor never sees in a page) and the keyboard focus rings
(`:focus-visible`). Told to keep those, it left 110.8 kB of the theme's 396.7 kB stylesheet,
where this module leaves 105.3 kB and keeps both (`tests/test_browser.py`).
"""

from __future__ import annotations

import hashlib
import pathlib
import re

WORD = re.compile(r"[A-Za-z_][\w-]*")
FUNCTIONAL = re.compile(r":(?:not|is|where|has|matches|-webkit-any|-moz-any)\(")
"""Pseudo-classes whose argument need not match for the selector to match."""
GROUPING = ("@media", "@supports", "@layer", "@container", "@document")
"""At-rules that hold style rules, trimmed inside."""


def _skip_string(css: str, i: int) -> int:
    """The index after the string that starts at css[i]."""
    quote, i = css[i], i + 1
    while i < len(css) and css[i] != quote:
        i += 2 if css[i] == "\\" else 1
    return i + 1


def _end(css: str, i: int, stops: str) -> int:
    """The index of the first of `stops` at css[i:] outside strings, comments, () and [];
    with "}" in stops, a brace block is skipped whole."""
    depth = 0
    while i < len(css):
        c = css[i]
        if c in "\"'":
            i = _skip_string(css, i)
            continue
        if css.startswith("/*", i):
            i = css.find("*/", i + 2) + 2 if css.find("*/", i + 2) >= 0 else len(css)
            continue
        if depth == 0 and c in stops:
            return i
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        i += 1
    return i


def rules(css: str) -> list:
    """The top-level statements of a stylesheet: (prelude, body) for a block, (statement, None)
    for an at-rule that ends with ";", (comment, None) for a /*! licence */ comment."""
    out, i = [], 0
    while i < len(css):
        if css[i].isspace():
            i += 1
            continue
        if css.startswith("/*", i):
            end = css.find("*/", i + 2)
            end = len(css) if end < 0 else end + 2
            if css.startswith("/*!", i):
                out.append((css[i:end], None))
            i = end
            continue
        stop = _end(css, i, "{;}")
        if stop >= len(css) or css[stop] != "{":
            if css[i:stop].strip():
                out.append((css[i:stop + 1].strip(), None))
            i = stop + 1
            continue
        close = _end(css, stop + 1, "}")
        out.append((css[i:stop].strip(), css[stop + 1:close]))
        i = close + 1
    return out


def selectors(prelude: str) -> list[str]:
    """A selector list split at its top-level commas."""
    parts, i, start = [], 0, 0
    while True:
        i = _end(prelude, i, ",")
        parts.append(prelude[start:i].strip())
        if i >= len(prelude):
            return [p for p in parts if p]
        i = start = i + 1


def required_classes(selector: str) -> set[str]:
    """The classes an element must carry for `selector` to match: those outside :not(), :is(),
    :where() and :has(), whose arguments may match without them."""
    kept, i = [], 0
    for match in FUNCTIONAL.finditer(selector):
        if match.start() < i:
            continue
        kept.append(selector[i:match.start()])
        i = _end(selector, match.end(), ")") + 1
    kept.append(selector[i:])
    text = "".join(kept)
    text = re.sub(r"\[[^\]]*\]", "", text)  # attribute values are not classes
    return set(re.findall(r"\.(-?[A-Za-z_][\w-]*)", text))


def purge(css: str, known: set[str]) -> str:
    """`css` without the selectors that need a class outside `known`, nor rules left empty."""
    out = []
    for prelude, body in rules(css):
        if body is None:
            out.append(prelude)
        elif prelude.startswith(GROUPING):
            inner = purge(body, known)
            if inner.strip():
                out.append(f"{prelude}{{{inner}}}")
        elif prelude.startswith("@"):
            out.append(f"{prelude}{{{body}}}")
        else:
            keep = [s for s in selectors(prelude) if required_classes(s) <= known]
            if keep:
                out.append(f"{','.join(keep)}{{{body}}}")
    return "\n".join(out)


def known_words(site: pathlib.Path) -> set[str]:
    """Every word of every page and script of the site (the search index aside): the classes a
    page carries or a script may add."""
    words = set()
    for path in [*site.rglob("*.html"), *site.rglob("*.js")]:
        if path.name != "searchindex.js":
            words.update(WORD.findall(path.read_text(encoding="utf-8", errors="replace")))
    return words


FONT_FACE = re.compile(r"@font-face\{[^}]*\}")
FONT_URL = re.compile(r"url\(([^)]*?)\.woff2\)")
ICON = re.compile(r'(?:\bcontent|--[\w-]+)\s*:\s*"((?:[^"\\]|\\.)*)"')
"""A string an icon may draw: a `content:`, or a custom property's (pydata-sphinx-theme's
admonition icons are `--pst-icon-admonition-tip: "\\f0eb"`, drawn through `content: var(...)`)."""


def _css_chars(text: str) -> set[int]:
    """The characters of a CSS string's text, its escapes (\\f002) decoded."""
    chars, i = set(), 0
    while i < len(text):
        if text[i] == "\\":
            hexa = re.match(r"[0-9a-fA-F]{1,6}\s?", text[i + 1:])
            if hexa:
                chars.add(int(hexa.group().strip(), 16))
                i += 1 + len(hexa.group())
                continue
            i += 1
        chars.add(ord(text[i]))
        i += 1
    return chars


def icon_chars(css: str) -> set[int]:
    """The characters `css` may draw as icons: those of its ICON strings."""
    return set().union(*(_css_chars(s) for s in ICON.findall(css)))


def subset_icon_fonts(css_path: pathlib.Path, css: str, chars: set[int]) -> str:
    """Subset every web font `css` declares in @font-face with a sibling .ttf (Font Awesome's)
    to `chars`; return `css` pointing at the subsets."""
    from fontTools import subset, ttLib

    def one(face):
        text = face.group()
        url = FONT_URL.search(text)
        if not url:
            return text
        woff2 = (css_path.parent / (url.group(1) + ".woff2")).resolve()
        ttf = woff2.with_suffix(".ttf")
        if not ttf.is_file():
            return text
        font = ttLib.TTFont(ttf)
        subsetter = subset.Subsetter(subset.Options(flavor="woff", layout_features=["*"]))
        subsetter.populate(unicodes=chars)
        subsetter.subset(font)
        font.flavor = "woff"
        for old in woff2.parent.glob(woff2.stem + ".*.woff"):
            old.unlink()
        tmp = woff2.with_suffix(".tmp.woff")
        font.save(tmp)
        digest = hashlib.sha256(tmp.read_bytes()).hexdigest()[:10]
        name = f"{woff2.stem}.{digest}.woff"
        tmp.replace(woff2.with_name(name))
        woff2.unlink()
        ttf.unlink()
        src = url.group(1).rsplit("/", 1)[0] + "/" + name
        return re.sub(r"src:[^;}]*", f'src:url({src}) format("woff")', text)

    return FONT_FACE.sub(one, css)


SEARCH_SCRIPTS = re.compile(r'\s*<script src="[^"]*(?:_static/searchtools\.js|_static/language_data\.js|searchindex\.js)"></script>')


def drop_search_scripts(site: pathlib.Path) -> None:
    """Take the search index and search scripts out of every page but the search page."""
    for page in site.rglob("*.html"):
        if page.name == "search.html" and page.parent == site:
            continue
        html = page.read_text(encoding="utf-8")
        trimmed = SEARCH_SCRIPTS.sub("", html)
        if trimmed != html:
            page.write_text(trimmed, encoding="utf-8")


PYGMENTS_RULE = re.compile(r'html\[data-theme="(\w+)"\] \.highlight(?: \.([\w-]+))? \{([^}]*)\}')
"""A rule of the theme's pygments.css: its mode (light, dark), token class (none for the
listing's own rule) and declarations."""
LISTING = re.compile(r'(<div class="highlight"><pre>)(.*?)(</pre>)', re.S)


def _declarations(body: str) -> dict:
    pairs = (d.split(":", 1) for d in body.split(";") if d.strip())
    return {k.strip(): v.strip().lower() for k, v in pairs}


def plain_token_classes(css: str) -> set[str]:
    """The token classes of `css` (a pygments.css) whose rule in every mode only sets the
    colour the listing's own text already has."""
    listing = {mode: _declarations(body).get("color") for mode, cls, body in PYGMENTS_RULE.findall(css) if not cls}
    styled = {}
    for mode, cls, body in PYGMENTS_RULE.findall(css):
        if cls:
            styled.setdefault(cls, set()).add(_declarations(body) != {"color": listing.get(mode)})
    return {cls for cls, differs in styled.items() if differs == {False}}


def unwrap_plain_tokens(site: pathlib.Path) -> None:
    """Take out of every listing of every page the spans of `plain_token_classes` (their text
    stays, so a listing reads and copies as before)."""
    classes = plain_token_classes((site / "_static/pygments.css").read_text(encoding="utf-8"))
    if not classes:
        return
    span = re.compile(r'<span class="(?:%s)">([^<]*)</span>' % "|".join(map(re.escape, sorted(classes))))
    for page in site.rglob("*.html"):
        html = page.read_text(encoding="utf-8")
        plain = LISTING.sub(lambda m: m[1] + span.sub(r"\1", m[2]) + m[3], html)
        if plain != html:
            page.write_text(plain, encoding="utf-8")


def trim(site: pathlib.Path) -> None:
    """Trim the built site in place (see the module doc)."""
    site = pathlib.Path(site)
    drop_search_scripts(site)
    known = known_words(site)
    sheets = {path: purge(path.read_text(encoding="utf-8"), known) for path in (site / "_static").rglob("*.css")}
    chars = set().union(*map(icon_chars, sheets.values()))  # a sheet may draw with another's font
    for path, css in sheets.items():
        if "@font-face" in css:
            css = subset_icon_fonts(path, css, chars)
        path.write_text(css + "\n", encoding="utf-8")
        path.with_name(path.name + ".map").unlink(missing_ok=True)  # it maps the untrimmed file
