"""The notebooks readers open (Colab, and nbmake here) match the MyST chapters, install
gpumodel on Colab, and follow the chapter conventions of CONTRIBUTING.md."""

import json
import pathlib
import re
import subprocess
import sys

import nbformat
import pytest
import yaml

from gpumodel import notebooks as book

ROOT = pathlib.Path(__file__).resolve().parent.parent
CHAPTERS = sorted((ROOT / "chapters").glob("[0-9]*.md"))


def cells(nb):
    return [(c.cell_type, c.source, c.metadata.get("tags", [])) for c in nb.cells]


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
def test_notebooks_are_in_sync_with_the_chapters(chapter):
    committed = ROOT / "notebooks" / f"{chapter.stem}.ipynb"
    assert committed.exists(), f"run `make notebooks`: {committed.name} is missing"
    stored = nbformat.read(committed, as_version=4)
    assert cells(stored) == cells(book.chapter_notebook(chapter)), f"run `make notebooks`: {committed.name} is out of date"
    assert all(not c.get("outputs") for c in stored.cells if c.cell_type == "code"), "notebooks ship without outputs"


def test_no_stray_notebooks():
    assert {p.stem for p in (ROOT / "notebooks").glob("*.ipynb")} == {p.stem for p in CHAPTERS}


def test_the_install_cell_installs_from_the_repository_in_config():
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    assert config["repository"]["url"] == book.REPOSITORY
    assert f"gpumodel @ git+{book.REPOSITORY}" in book.INSTALL_SOURCE
    assert book.colab_url("99_appendix_presets").endswith("/blob/main/notebooks/99_appendix_presets.ipynb")


def test_the_install_cell_runs_off_colab_and_does_nothing():
    done = subprocess.run([sys.executable, "-c", book.INSTALL_SOURCE], capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout == "" and done.stderr == ""


def test_a_git_install_gives_an_importable_package_with_its_kernels(tmp_path):
    """What the Colab cell does, with this checkout standing in for the repository."""
    subprocess.run(["git", "clone", "-q", str(ROOT), str(tmp_path / "repo")], check=True)
    target = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(target),
                    f"gpumodel @ git+file://{tmp_path / 'repo'}"], check=True, capture_output=True)
    probe = ("import gpumodel as gm, gpumodel.compiler as c; "
             "print(gm.predict(gm.vector_add(2**28), gm.gpu('A100-40GB')).bound, len(list(c.kernel_dir().glob('*.cu'))), c.kernel_dir())")
    done = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, env={"PYTHONPATH": str(target), "PATH": "/usr/bin:/bin"},
                          capture_output=True, text=True, check=True)
    bound, count, where = done.stdout.split()
    assert bound == "hbm" and int(count) == len(list((tmp_path / "repo" / "kernels").glob("*.cu")))
    assert where.startswith(str(target))


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
def test_chapter_conventions(chapter):
    text = chapter.read_text()
    front = yaml.safe_load(text.split("---")[1])
    assert 0 < front["mystnb"]["execution_timeout"] <= 300, "a per-chapter timeout in the front matter"
    assert len(re.findall(r"^import gpumodel as gm$", text, re.M)) == 1, "one visible import"
    assert "colab_badge(" in text, "a Colab link"
    runs_kernels = "gm.gpu_runtime" in text or "kernel_plans" in text
    assert ("```{include} _gpu_optional.md" in text) == runs_kernels, "the GPU-optional admonition where kernels run"
    for block in re.findall(r"```\{code-cell\} ipython3\n:tags: \[([^\]]*)\]\n\n(.*?)```", text, re.S):
        tags, source = block
        if "hide-input" in tags:
            assert "gm.plots." in source or "Markdown(" in source, f"hide-input on a cell that does more than draw: {source[:80]}"
    labels = re.findall(r"```\{exercise\}\n:label: (\S+)", text)
    for label in labels:
        assert f"{{solution-start}} {label}\n:class: dropdown" in text, f"exercise {label} needs a dropdown solution"


def test_the_pages_workflow_is_valid():
    flow = yaml.safe_load((ROOT / ".github" / "workflows" / "pages.yml").read_text())
    steps = [s.get("run", "") for s in flow["jobs"]["build"]["steps"]]
    assert any("make book" in s for s in steps)
    assert flow["jobs"]["deploy"]["needs"] == "build"
    assert json.dumps(flow["permissions"]) == json.dumps({"contents": "read", "pages": "write", "id-token": "write"})


def test_chapter_3_runs_with_no_compiler(tmp_path):
    """Chapter 3 on a machine with neither NVRTC nor nvcc: it shows the recorded report."""
    import nbclient
    import nbformat

    nb = nbformat.read(ROOT / "notebooks" / "03_tiling.ipynb", as_version=4)
    hide = nbformat.v4.new_code_cell("import os, gpumodel.compiler as c\nc._nvrtc = lambda: None\nos.environ['PATH'] = '/nonexistent'")
    nb.cells.insert(1, hide)
    nbclient.NotebookClient(nb, timeout=300, resources={"metadata": {"path": str(ROOT / "chapters")}}).execute()
    text = json.dumps([c.get("outputs", []) for c in nb.cells])
    assert "No CUDA compiler here: this is the report recorded on" in text
    assert "gemm_spill" in text
