"""The learners' notebooks: `notebooks/<chapter>.ipynb`, generated from `chapters/<chapter>.md`
for Colab and the tests (`make notebooks`), and the links that open them."""

from __future__ import annotations

REPOSITORY = "https://github.com/YOUR-ACCOUNT/gpu-memory-hierarchy"
"""The course's repository; a fork changes it here and in _config.yml (a test holds them equal)."""
BRANCH = "main"


def colab_url(chapter: str) -> str:
    """Where Colab opens `notebooks/<chapter>.ipynb` (generated from `chapters/<chapter>.md`)."""
    path = REPOSITORY.removeprefix("https://github.com/")
    return f"https://colab.research.google.com/github/{path}/blob/{BRANCH}/notebooks/{chapter}.ipynb"


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
