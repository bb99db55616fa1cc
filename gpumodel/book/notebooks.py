"""The learners' notebooks: `notebooks/<chapter>.ipynb`, generated from `chapters/<chapter>.md`
(`make notebooks`) so that JupyterLab, Notebook 7, VS Code and Colab show what the site shows.

Every Markdown cell is plain Markdown and HTML: glued numbers appear as their values (the
chapter is executed once to compute them), citations as "(Author Year)" linked to the
reference list on the site (in a local clone's notebooks, which know no site, to each
reference's own address), `{doc}` and `{term}` links to the pages of the site and the term in
its glossary. A notebook that knows no site (a local clone's, the committed ones) ships the
glossary's entries of the terms it links, in a last cell its term links point to (`#term-...`),
links a chapter as its sibling notebook and names any other page by its file in the repository,
so that no link of it leads to a file that is not beside a downloaded or uploaded notebook
(a `../glossary.md`). Admonitions become
quoted blocks with a bold title (an aside of class `dropdown` a closed `<details>`), exercises headed blocks, and each solution (its prose and
its code) sits closed inside `<details>`, so Run All neither runs nor shows it. Cells hidden
on the site keep their code, collapsed (`jupyter.source_hidden` for JupyterLab, a `#@title`
line and `cellView: "form"` for Colab), so every cell still runs.

The notebooks committed in `notebooks/` are for a clone: their install cell installs the clone
they sit in. The Pages workflow generates them for the repository and commit it builds and
pushes them to the branch `BRANCH`, where the site's Colab links open them.
"""

from __future__ import annotations

import functools
import importlib.metadata
import json
import os
import pathlib
import re
import subprocess

from .. import presets
from ..presets import DATA

SETTING = "GPUMODEL_REPOSITORY"
"""The setting (an environment variable, "OWNER/NAME") that names the course's repository on
GitHub where neither GitHub Actions nor the checkout's git remote does (see `repository`)."""
BRANCH = "notebooks"
"""The branch the Pages workflow pushes the learners' notebooks to, generated for the repository
and commit it builds (`.github/workflows/pages.yml`): Colab opens notebooks from GitHub only."""
LOCAL_SPEC = "..[book]"
"""What a local build's install cell installs: the clone the notebook sits in (`notebooks/..`)."""
ROOT = DATA.parent.parent
VERSION = importlib.metadata.version("gpumodel")
"""The package's version (pyproject.toml's, as installed): the install cell installs it where an
older one is installed."""
REFERENCES = "references.html"
"""Where the site lists every reference."""
GLOSSARY = "glossary"
"""Where the site defines every term (`glossary.md`)."""
HIDDEN_TAGS = {"remove-cell", "remove-input", "hide-input", "hide-cell"}
HIDDEN_TITLE = "#@title Code the site hides (Colab: double-click this title; JupyterLab: click the dots to show it)"
"""The first line of a hidden cell: Colab collapses a cell to this title when its metadata
says `cellView: "form"` (it ignores `jupyter.source_hidden`, which JupyterLab honours)."""
FENCE = re.compile(r"^(?P<fence>`{3,}|:{3,})\{(?P<name>[\w:-]+)\}\s*(?P<arg>.*)$")
ROLE = re.compile(r"\{(?P<role>glue:md|glue:text|glue|cite:p|cite:t|cite|doc|numref|ref|math|term)\}`(?P<text>[^`]*)`")
SOLUTION_START = re.compile(r"^(`{3,})\{solution-start\}.*?\n\1[ \t]*$\n?", re.M | re.S)
SOLUTION_END = re.compile(r"^(`{3,})\{solution-end\}.*?\n\1[ \t]*$\n?", re.M | re.S)
ADMONITIONS = {"note", "tip", "warning", "important", "hint", "caution", "attention", "danger", "error", "seealso"}


def repository(environ=os.environ, checkout: pathlib.Path = ROOT) -> str | None:
    """The course's repository on GitHub (https://github.com/OWNER/NAME): the one being built on
    GitHub Actions (`GITHUB_REPOSITORY`), else `SETTING`, else the `checkout`'s git remote
    `origin` where it is on GitHub; None where none is known (the site then has no launch
    buttons and no clone line). ValueError where `SETTING` is no OWNER/NAME."""
    name = environ.get("GITHUB_REPOSITORY", "").strip() or environ.get(SETTING, "").strip()
    if name and not _OWNER_NAME.fullmatch(name):
        raise ValueError(f"{SETTING} must name a GitHub repository as OWNER/NAME, got {name!r}")
    name = name or _remote(checkout)
    return f"https://github.com/{name}" if name else None


_OWNER_NAME = re.compile(r"[\w.-]+/[\w.-]+")
_GITHUB_REMOTE = re.compile(r"(?:https://github\.com/|git@github\.com:|ssh://git@github\.com/)([\w.-]+/[\w.-]+?)(?:\.git)?/?")


def _remote(checkout: pathlib.Path) -> str:
    """OWNER/NAME of the git remote `origin` of `checkout` where it is on GitHub, else ""."""
    try:
        done = subprocess.run(["git", "-C", str(checkout), "config", "--get", "remote.origin.url"],
                              capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return ""
    found = _GITHUB_REMOTE.fullmatch(done.stdout.strip())
    return found[1] if found else ""


def published(environ=os.environ) -> bool:
    """True on GitHub Actions, where the notebooks are generated for the repository being built."""
    return bool(environ.get("GITHUB_REPOSITORY", "").strip())


def site_url(repo: str | None = None) -> str:
    """Where GitHub Pages publishes the site of `repo` (https://OWNER.github.io/NAME/)."""
    owner, name = (repo or repository()).removeprefix("https://github.com/").split("/")[:2]
    return f"https://{owner.lower()}.github.io/{name}/"


def colab_url(chapter: str, repo: str) -> str:
    """Where Colab opens the published `notebooks/<chapter>.ipynb` of `repo` (branch `BRANCH`)."""
    path = repo.removeprefix("https://github.com/")
    return f"https://colab.research.google.com/github/{path}/blob/{BRANCH}/notebooks/{chapter}.ipynb"


def install_spec(environ=os.environ) -> str:
    """What the install cell installs: on GitHub Actions the repository and commit being built
    (`GITHUB_SHA`), so Colab runs the code the site was built from; else `LOCAL_SPEC`."""
    if not published(environ):
        return LOCAL_SPEC
    sha = environ.get("GITHUB_SHA", "").strip()
    return f"gpumodel[book] @ git+{repository(environ)}" + (f"@{sha}" if sha else "")


def install_source(spec: str | None = None, version: str = VERSION) -> str:
    """The first cell of every notebook: install gpumodel (`spec`, a pip requirement) where
    it is not importable yet (Colab, a JupyterHub, a fresh kernel) or where the installed one
    is older than `version`, the one the notebook was made for; do nothing where it is that
    one or newer, or a checkout on the path (no installed version)."""
    return f"""#@title Install gpumodel {version}, the course's package, where it is missing or older (Colab, a fresh kernel)
import importlib.metadata
import importlib.util
import re
import subprocess
import sys

def _release(v):
    return [int(n) for n in re.findall(r"\\d+", v)[:3]]

try:
    _installed = importlib.metadata.version("gpumodel")
except importlib.metadata.PackageNotFoundError:
    _installed = None
if importlib.util.find_spec("gpumodel") is None or (_installed and _release(_installed) < _release({version!r})):
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", {(spec or install_spec())!r}], check=True)
    importlib.invalidate_caches()
    if "gpumodel" in sys.modules:
        print(f"gpumodel {{_installed}} was replaced by {version}: restart the kernel to use it.")"""


_bibliography = presets.bibliography


def _on_site(repo: str | None) -> bool:
    """True where the notebooks link to a site: one for `repo`, or for the repository being
    built on GitHub Actions. A local clone's notebooks know no site."""
    return bool(repo) or published()


def cite(keys: str, repo: str | None = None) -> str:
    """Citation keys ("a, b") as "(Author Year; Author Year)", each linked to the reference
    list on the site (see `_on_site`), or, for a local clone, to the reference's own address
    (not linked where references.bib gives none)."""
    def one(key):
        label, _, address = _bibliography()[key.strip()]
        address = site_url(repo) + REFERENCES if _on_site(repo) else address
        return f"[{label}]({address})" if address else label

    return "(" + "; ".join(one(k) for k in keys.split(",")) + ")"


def page_link(where: str, repo: str | None = None, anchor: str = "") -> str | None:
    """A page of the book (`where`: its path from the book's root, no suffix) on the site, where
    the notebooks know one (`_on_site`); None where they know none."""
    if _on_site(repo):
        return f"{site_url(repo)}{where}.html" + (f"#{anchor}" if anchor else "")
    return None


GLOSSARY_ID = "glossary"
"""The anchor of the glossary a notebook that knows no site ships (`glossary_cell`)."""


@functools.lru_cache(maxsize=None)
def glossary_entries(path: pathlib.Path = ROOT / "glossary.md") -> tuple:
    """The glossary's entries in its order: (its terms, its definition in MyST) each."""
    body = re.search(r"```\{glossary\}\n(?::\w+:[^\n]*\n)*\n(.*?)^```", pathlib.Path(path).read_text(), re.S | re.M)
    entries = []
    for entry in re.split(r"\n\s*\n(?=\S)", body.group(1).strip()):
        lines = entry.splitlines()
        names = tuple(line.strip() for line in lines if line.strip() and not line.startswith(" "))
        entries.append((names, " ".join(line.strip() for line in lines if line.startswith(" "))))
    return tuple(entries)


def glossary_term(term: str) -> str:
    """`term` as the glossary spells it (Sphinx finds a term whatever its case), or as given
    where the glossary has no such term."""
    term = " ".join(term.split())
    return next((name for names, _ in glossary_entries() for name in names if name.lower() == term.lower()), term)


def term_anchor(term: str) -> str:
    """Sphinx's anchor for a glossary term: "term-" and the term with every run of characters
    other than letters, digits, "." and "_" made one "-"."""
    return re.sub(r"-+$", "", re.sub(r"[^a-zA-Z0-9._]+", "-", f"term-{glossary_term(term)}"))


def glossary_link(term: str, repo: str | None = None) -> str:
    """The address of `term` in the site's glossary, or where the notebook knows no site, in the
    glossary it ships (`glossary_cell`)."""
    return page_link(GLOSSARY, repo, term_anchor(term)) or f"#{term_anchor(term)}"


class _Chapter:
    """What converting one chapter needs: its glued values, its figures' numbers, its exercises."""

    def __init__(self, path: pathlib.Path, glued: dict, varies=(), repo: str | None = None):
        self.path, self.glued, self.varies, self.repo = path, glued, set(varies), repo
        self.number = int(path.stem.split("_")[0])
        self.exercises = 0
        self.figures: dict = {}
        self.terms: dict = {}  # the glossary's terms its {term} links name, in their order (a set)

    def title(self, page: pathlib.Path) -> str:
        """The first heading of the page at `page` (a path without its ".md")."""
        text = page.with_name(f"{page.name}.md").read_text()
        return re.search(r"^# (.+)$", text, re.M).group(1)

    def role(self, match: re.Match) -> str:
        role, text = match["role"], match["text"]
        if role.startswith("glue"):
            if text in self.varies:
                return "*your run's value, printed above*"
            if text not in self.glued:
                raise ValueError(f"{self.path.name} shows {{glue}}`{text}`, which no cell glues")
            return self.markdown(self.glued[text])
        if role.startswith("cite"):
            return cite(text, self.repo)
        if role == "doc":
            label, target = re.fullmatch(r"(?:(.*?)\s*<)?([^<>]+)>?", text).groups()
            page = self.path.parent / target
            where = page.resolve().relative_to(ROOT.resolve()).as_posix()
            label = label or self.title(page)
            if _on_site(self.repo):
                return f"[{label}]({page_link(where, self.repo)})"
            if page.parent.resolve() == self.path.parent.resolve():  # a chapter: its notebook beside
                return f"[{label}]({page.name}.ipynb)"
            if where == GLOSSARY:  # the glossary the notebook ships
                return f"[{label}](#{GLOSSARY_ID})"
            return f"{label} `{where}.md`"  # the page's file in the repository, named
        if role == "term":
            label, target = re.fullmatch(r"(.*?)\s*(?:<([^<>]+)>)?", text).groups()
            self.terms[glossary_term(target or label)] = None
            return f"[{label}]({glossary_link(target or label, self.repo)})"
        if role == "numref":
            if text not in self.figures:
                raise ValueError(f"{self.path.name} refers to {text!r}, which is no figure of it")
            return f"Figure {self.figures[text]}"
        if role == "math":
            return f"${text}$"
        return text  # {ref}: the label's own text

    def markdown(self, text: str) -> str:
        """MyST Markdown as plain Markdown: roles resolved, directives as quotes and headings."""
        lines, out, i = text.splitlines(), [], 0
        while i < len(lines):
            m = FENCE.match(lines[i])
            if not m:
                out.append(ROLE.sub(self.role, lines[i]))
                i += 1
                continue
            end = next(j for j in range(i + 1, len(lines)) if lines[j].strip() == m["fence"])
            body = lines[i + 1:end]
            options = {}
            while body and body[0].startswith(":") and not body[0].startswith(m["fence"][:3]):
                key, _, value = body.pop(0)[1:].partition(":")
                options[key] = value.strip()
            out.append(self.directive(m["name"], m["arg"], options, "\n".join(body).strip("\n")))
            i = end + 1
        return "\n".join(out)

    def directive(self, name: str, arg: str, options: dict, body: str) -> str:
        if name == "include":
            return self.markdown((self.path.parent / arg.strip()).read_text())
        if name == "exercise":
            self.exercises += 1
            number = f"{self.number}.{self.exercises}" if self.number < 99 else f"{self.exercises}"
            return f"#### Exercise {number}\n\n{self.markdown(body)}"
        if name in ("admonition", "dropdown") or name in ADMONITIONS:
            title = arg.strip() or name.capitalize()
            if name == "dropdown" or "dropdown" in options.get("class", "").split():
                return f"<details><summary>{title}</summary>\n\n{self.markdown(body)}\n\n</details>"
            quoted = "\n".join(f"> {line}" if line else ">" for line in self.markdown(body).splitlines())
            return f"> **{title}**\n>\n{quoted}"
        raise ValueError(f"{self.path.name}: no plain-Markdown form for the {{{name}}} directive")


def glossary_cell(chapter: _Chapter) -> str | None:
    """The last cell of a notebook that knows no site: the glossary's entries of the terms its
    `{term}` links name, each under the anchor of each of its terms (as on the site), in the
    glossary's order; None where it links no term."""
    used = {name.lower() for name in chapter.terms}
    entries = [(names, text) for names, text in glossary_entries() if used & {n.lower() for n in names}]
    if not entries:
        return None
    lines = [f'<a id="{GLOSSARY_ID}"></a>', "", "## Glossary", "",
             "The terms this notebook links, as the course's glossary (`glossary.md`) defines them.", ""]
    for names, text in sorted(entries, key=lambda e: e[0][0].lower()):
        anchors = "".join(f'<a id="{term_anchor(n)}"></a>' for n in names)
        body = chapter.markdown(text.replace("{doc}`chapters/", "{doc}`"))  # the chapters beside its own
        lines += [f"{anchors}**{' / '.join(names)}**: {body}", ""]
    return "\n".join(lines).rstrip() + "\n"


def _hidden(cell) -> bool:
    return bool(HIDDEN_TAGS & set(cell.metadata.get("tags", [])))


def learner_notebook(path, glued: dict, varies=(), repo: str | None = None, spec: str | None = None):
    """The notebook of the MyST chapter at `path` as learners get it (see the module doc),
    with `glued` (name -> MyST text) the values its cells glue, `varies` the names whose
    value depends on the reader's machine, `repo` the repository its links name and `spec`
    what its install cell installs (both by default from the environment: see `install_spec`)."""
    import jupytext
    import nbformat

    path = pathlib.Path(path)
    chapter = _Chapter(path, glued, varies, repo)
    source = jupytext.read(path)
    for cell in source.cells:  # figures are numbered in order, so that {numref} can name them
        name = cell.metadata.get("mystnb", {}).get("figure", {}).get("name")
        if name:
            chapter.figures[name] = len(chapter.figures) + 1
    hidden = {"jupyter": {"source_hidden": True}, "cellView": "form"}
    cells = [nbformat.v4.new_code_cell(install_source(spec), metadata={"tags": ["hide-output"], **hidden})]
    solution = None  # the parts of the solution being collected
    for cell in source.cells:
        if cell.cell_type == "code":
            if solution is not None:
                solution.append(f"```python\n{cell.source}\n```")
                continue
            metadata = {"tags": cell.metadata.get("tags", [])} if cell.metadata.get("tags") else {}
            if _hidden(cell):
                metadata.update(hidden)
            cells.append(nbformat.v4.new_code_cell(f"{HIDDEN_TITLE}\n{cell.source}" if _hidden(cell) else cell.source,
                                                   metadata=metadata))
            figure = cell.metadata.get("mystnb", {}).get("figure", {})
            if figure.get("caption"):
                number = chapter.figures.get(figure.get("name"), "")
                cells.append(nbformat.v4.new_markdown_cell(f"*Figure {number}. {chapter.markdown(figure['caption'])}*"))
            continue
        text = cell.source
        while text:
            pattern = SOLUTION_START if solution is None else SOLUTION_END
            m = pattern.search(text)
            before, text = (text, "") if m is None else (text[:m.start()], text[m.end():])
            if solution is None:
                if before.strip():
                    cells.append(nbformat.v4.new_markdown_cell(chapter.markdown(before.strip("\n"))))
                if m:
                    solution = []
            else:
                if before.strip():
                    solution.append(chapter.markdown(before.strip("\n")))
                if m:
                    body = "\n\n".join(solution)
                    cells.append(nbformat.v4.new_markdown_cell(
                        f"<details><summary><b>Solution</b> (open it once you have tried)</summary>\n\n{body}\n\n</details>"))
                    solution = None
    if solution is not None:
        raise ValueError(f"{path.name}: a solution is never ended")
    shipped = None if _on_site(repo) else glossary_cell(chapter)
    if shipped:
        cells.append(nbformat.v4.new_markdown_cell(shipped))
    nb = nbformat.v4.new_notebook(cells=cells, metadata={
        "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
        "language_info": {"name": "python"},
        "gpumodel": {"generated_from": f"chapters/{path.name}", "glued": glued, "varies": sorted(varies)},
    })
    for i, cell in enumerate(nb.cells):
        cell.id = "colab-install" if i == 0 else f"cell-{i}"  # stable ids: regenerating changes nothing
    return nb


def glued_values(path) -> tuple[dict, list]:
    """Execute the MyST chapter at `path` (in its folder) and return what its cells glued
    (name -> MyST text) and the names whose value depends on the machine."""
    import jupytext
    import nbclient
    import nbformat

    path = pathlib.Path(path)
    nb = jupytext.read(path)
    nb.cells.append(nbformat.v4.new_code_cell(
        "import json as _json, gpumodel as _gm\n"
        "print(_json.dumps({'glued': _gm.book.chapter.GLUED, 'varies': sorted(_gm.book.chapter.VARIES)}))"))
    nbclient.NotebookClient(nb, timeout=300, resources={"metadata": {"path": str(path.parent)}}).execute()
    # The last line the cell printed: what an earlier cell's thread printed late may come first.
    printed = "".join(o.get("text", "") for o in nb.cells[-1].outputs if o.get("name") == "stdout")
    found = json.loads(printed.strip().splitlines()[-1])
    return found["glued"], found["varies"]


def write_notebooks(chapters="chapters", out="notebooks", repo: str | None = None, only=None) -> list:
    """Write `notebooks/<chapter>.ipynb` for every numbered chapter, or for those whose names
    (`09_decode`) are in `only` (each executed once for its glued values); return the paths."""
    import nbformat

    paths = _chapters(chapters, only)
    out = pathlib.Path(out)
    out.mkdir(exist_ok=True)
    written = []
    for path in paths:
        target = out / f"{path.stem}.ipynb"
        nbformat.write(learner_notebook(path, *glued_values(path), repo=repo), target)
        written.append(target)
    return written


def moved(chapters="chapters", out="notebooks", only=None) -> dict:
    """What a change to the data or the model moves, before the notebooks are regenerated: for
    each chapter (or those named in `only`), executed afresh, the glued values that differ from
    those its notebook in `out` holds (metadata "gpumodel"), as {chapter: {name: (was, now)}};
    values that vary with the machine left out, chapters that move nothing too. `make moved`."""
    import nbformat

    found = {}
    for path in _chapters(chapters, only):
        kept = nbformat.read(pathlib.Path(out) / f"{path.stem}.ipynb", as_version=4).metadata["gpumodel"]
        now, varies = glued_values(path)
        skip = set(varies) | set(kept["varies"])
        names = (set(now) | set(kept["glued"])) - skip
        diff = {n: (kept["glued"].get(n), now.get(n)) for n in sorted(names) if kept["glued"].get(n) != now.get(n)}
        if diff:
            found[path.stem] = diff
    return found


def _chapters(chapters, only) -> list:
    """The numbered chapters' paths in `chapters`, or those whose names are in `only`."""
    paths = sorted(pathlib.Path(chapters).glob("[0-9]*.md"))
    if only is None:
        return paths
    unknown = sorted(set(only) - {p.stem for p in paths})
    if unknown:
        raise ValueError(f"only must name chapters, one of {[p.stem for p in paths]}, got {unknown}")
    return [p for p in paths if p.stem in only]


def main(argv=None) -> None:
    """`python -m gpumodel.book.notebooks [CHAPTER ...]`: regenerate `notebooks/` (only the chapters
    named, when some are), for the repository and commit being built on GitHub Actions
    (`GITHUB_REPOSITORY`, `GITHUB_SHA`), else for a local clone."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m gpumodel.book.notebooks", description=main.__doc__)
    parser.add_argument("chapters", nargs="*", help="the chapters to redo (09_decode ...); all when none is named")
    parser.add_argument("--moved", action="store_true", help="write nothing; list the glued values that would change")
    args = parser.parse_args(argv)
    only = args.chapters or None
    if args.moved:
        found = moved(ROOT / "chapters", ROOT / "notebooks", only)
        for chapter, diff in found.items():
            print(f"{chapter}: {len(diff)} glued value(s) move")
            print(*(f"  {name}: {was!r} -> {now!r}" for name, (was, now) in diff.items()), sep="\n")
        print("nothing moves" if not found else "regenerate them with make notebooks")
        return
    print(f"notebooks for {repository() if published() else 'a local clone'}: installing {install_spec()!r}")
    print(*write_notebooks(ROOT / "chapters", ROOT / "notebooks", only=only), sep="\n")


if __name__ == "__main__":
    main()
