"""Helpers for the chapters' prose: numbers are computed, then glued into the text.

In a Jupyter Book build, `glue("name", text)` makes `text` available to the prose as
{glue:md}`name`; in plain Jupyter or Colab the prose shows the reference, and `GLUED` holds
the values.
"""

from __future__ import annotations

REPOSITORY = "https://github.com/YOUR-ACCOUNT/gpu-memory-hierarchy"
"""The course's repository; a fork changes it here and in _config.yml (a test holds them equal)."""
BRANCH = "main"


GLUED: dict = {}
"""Everything glued in this kernel, by name: in Jupyter or Colab, where the prose shows
{glue:md}`name` rather than the value, `gm.book.GLUED["name"]` has it."""


def glue(name: str, text: str) -> str:
    """Publish `text` (a str, MyST allowed) under `name` for {glue:md}`name`; return it."""
    if not isinstance(text, str):
        raise ValueError(f"text must be a str (format numbers with gm.fmt_*), got {type(text).__name__}")
    GLUED[name] = text
    try:
        from IPython.display import Markdown
        from myst_nb import glue as myst_glue
    except ImportError:
        return text
    myst_glue(name, Markdown(text), display=False)
    return text


def markdown_table(header: list[str], rows: list[list[str]]) -> str:
    """A Markdown table from a header and rows of strings ('|' in cells is escaped)."""
    def line(cells):
        return "| " + " | ".join(str(c).replace("|", "\\|") for c in cells) + " |"

    return "\n".join([line(header), line(["---"] * len(header))] + [line(r) for r in rows])


def colab_url(chapter: str) -> str:
    """Where Colab opens `notebooks/<chapter>.ipynb` (generated from `chapters/<chapter>.md`)."""
    path = REPOSITORY.removeprefix("https://github.com/")
    return f"https://colab.research.google.com/github/{path}/blob/{BRANCH}/notebooks/{chapter}.ipynb"


def colab_badge(chapter: str):
    """A Markdown link that opens the chapter's notebook in Colab."""
    from IPython.display import Markdown

    return Markdown(f"[Open this chapter in Colab]({colab_url(chapter)}) (the first cell installs `gpumodel` there)")


INSTALL_SOURCE = f"""# Colab only: install gpumodel, with its CUDA kernels, from the course's repository.
import sys

if "google.colab" in sys.modules:
    import subprocess

    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "gpumodel @ git+{REPOSITORY}"], check=True)"""


def chapter_notebook(path):
    """The notebook Colab and the tests open for the MyST chapter at `path`: the chapter as
    jupytext reads it, with the Colab install cell (hidden) first and no outputs."""
    import jupytext
    import nbformat

    nb = jupytext.read(path)
    install = nbformat.v4.new_code_cell(INSTALL_SOURCE, metadata={"tags": ["hide-output"], "cellView": "form"})
    install.id = "colab-install"
    nb.cells.insert(0, install)
    for i, cell in enumerate(nb.cells[1:], 1):
        cell.id = f"cell-{i}"  # stable ids, so regenerating changes nothing
    return nb


def write_notebooks(chapters="chapters", out="notebooks") -> list:
    """Write `notebooks/<chapter>.ipynb` for every numbered chapter; return the paths."""
    import pathlib

    import nbformat

    out = pathlib.Path(out)
    out.mkdir(exist_ok=True)
    written = []
    for path in sorted(pathlib.Path(chapters).glob("[0-9]*.md")):
        target = out / f"{path.stem}.ipynb"
        nbformat.write(chapter_notebook(path), target)
        written.append(target)
    return written
