"""The package as learners get it, not as it sits in this checkout: the wheel holds every file
the package reads; in fresh virtual environments outside the checkout every notebook runs
with 0 errors: in a Colab-like one (tests/colab-constraints.txt), where the notebook's own
install cell installs the wheel without changing a package Colab pins, and in the one
repo2docker builds from binder/requirements.txt (BinderHub, a class's JupyterHub). The
widget tests also run on Colab's ipywidgets 7.7 (the checkout's environment has 8).

Each environment installs from the package index (pip's cache serves repeated installs);
Docker is not available here, so repo2docker itself does not run: its requirements file does."""

import json
import os
import pathlib
import shutil
import subprocess
import sys
import zipfile

import nbformat
import pytest

from gpumodel.book import notebooks as book

ROOT = pathlib.Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
COLAB = ROOT / "tests" / "colab-constraints.txt"
RUN = """
import json, pathlib, sys
import nbclient, nbformat
errors = {}
for path in map(pathlib.Path, sys.argv[1:]):
    nb = nbformat.read(path, as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell("import gpumodel; print(gpumodel.__file__)"))
    nbclient.NotebookClient(nb, timeout=300, kernel_name="python3", allow_errors=True,
                            resources={"metadata": {"path": str(path.parent)}}).execute()
    errors[path.stem] = [f"{o['ename']}: {o['evalue']}" for c in nb.cells for o in c.get("outputs", [])
                         if o.get("output_type") == "error"]
    errors[path.stem] += [] if nb.cells[-1].outputs else ["the probe printed nothing"]
    where = nb.cells[-1].outputs[0].get("text", "") if nb.cells[-1].outputs else ""
    errors[path.stem] += [] if where.startswith(sys.prefix) else [f"gpumodel imported from {where.strip()}"]
print(json.dumps(errors))
"""
"""Run each notebook given, in this interpreter's kernel; print {notebook: [errors]} as JSON,
counting as an error a gpumodel imported from anywhere but this environment."""


def _env(home: pathlib.Path) -> dict:
    """The environment of a learner's machine: none of this checkout on the path."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "GPUMODEL_BUILD", "VIRTUAL_ENV")}
    return env | {"PYTHONNOUSERSITE": "1", "JUPYTER_DATA_DIR": str(home / "jupyter"), "MPLBACKEND": "Agg"}


def _run(args, cwd, env, **kwargs):
    done = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, **kwargs)
    assert done.returncode == 0, f"{' '.join(map(str, args))} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout


def _venv(where: pathlib.Path, env: dict, *install, cwd=None) -> pathlib.Path:
    """A fresh virtual environment at `where` (outside the checkout) with `install` in it; its python."""
    _run([sys.executable, "-m", "venv", str(where)], cwd=where.parent, env=env)
    python = where / "bin" / "python"
    if install:
        _run([python, "-m", "pip", "install", "-q", *install], cwd=cwd or where.parent, env=env)
    return python


def _freeze(python, env) -> dict:
    """name -> version of what is installed (names normalised as pip compares them)."""
    out = _run([python, "-m", "pip", "list", "--format", "json"], cwd=python.parent, env=env)
    return {p["name"].lower().replace("_", "-"): p["version"] for p in json.loads(out)}


def _pins() -> dict:
    """The constraints file's name -> version."""
    lines = [line.split("#")[0].strip() for line in COLAB.read_text().splitlines()]
    return {name.lower().replace("_", "-"): version for name, version in (x.split("==") for x in lines if x)}


def _run_notebooks(python, folder: pathlib.Path, env) -> dict:
    """Run every notebook in `folder` with `python`'s kernel: {notebook: [errors]}."""
    out = _run([python, "-c", RUN, *sorted(map(str, folder.glob("*.ipynb")))], cwd=folder, env=env)
    return json.loads(out.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def checkout(tmp_path_factory):
    """The files a clone has (tracked, and new ones not ignored), copied outside the checkout:
    nothing built here (build/, *.egg-info) leaks into what is tested."""
    out = tmp_path_factory.mktemp("clone")
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                            capture_output=True, text=True, check=True).stdout.split("\0")
    for name in filter(None, listed):
        if (ROOT / name).is_file():
            (out / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, out / name)
    return out


@pytest.fixture(scope="module")
def wheel(checkout, tmp_path_factory):
    """The wheel pip builds from a clone."""
    out = tmp_path_factory.mktemp("wheel")
    _run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(out), str(checkout)],
         cwd=out, env=_env(out))
    (path,) = out.glob("gpumodel-*.whl")
    return path


def test_the_wheel_holds_every_file_the_package_reads(checkout, wheel):
    """Every file of the package's source tree (its data: GPU records, published measurements,
    references, compiler reports) and every kernel is in the wheel, where the code looks."""
    names = set(zipfile.ZipFile(wheel).namelist())
    package = {f"gpumodel/{p.relative_to(checkout / 'gpumodel').as_posix()}" for p in (checkout / "gpumodel").rglob("*")
               if p.is_file() and p.suffix != ".pyc"}
    kernels = {f"gpumodel/kernels/{p.name}" for p in (checkout / "kernels").glob("*.cu")}
    data = {n for n in package if n.startswith("gpumodel/data/")}
    assert {"gpumodel/data/published", "gpumodel/data/gpus"} <= {n.rsplit("/", 1)[0] for n in data}
    assert kernels and data, "the checkout has data files and kernels"
    assert sorted(package - names) == [] and sorted(kernels - names) == []


@pytest.fixture(scope="module")
def colab(wheel, tmp_path_factory):
    """A fresh environment with what Colab's kernel ships (tests/colab-constraints.txt); every
    notebook run there, its own install cell installing the wheel as it installs the commit on
    Colab. Returns (python, the versions before the install, after, the errors per notebook)."""
    home = tmp_path_factory.mktemp("colab")
    env = _env(home)
    python = _venv(home / "venv", env, "-r", str(COLAB))
    before = _freeze(python, env)
    folder = home / "content"
    folder.mkdir()
    spec = f"gpumodel[book] @ {wheel.as_uri()}"
    for path in NOTEBOOKS:
        nb = nbformat.read(path, as_version=4)
        cell = nb.cells[0]
        assert cell.source == book.install_source(book.LOCAL_SPEC), f"{path.name}: the install cell comes first"
        cell.source = book.install_source(spec)  # the published cell, for this wheel rather than a commit
        nbformat.write(nb, folder / path.name)
    errors = _run_notebooks(python, folder, env)
    return python, before, _freeze(python, env), errors


def test_colab_like_environment_has_colabs_pins(colab):
    _, before, _, _ = colab
    pins = _pins()
    assert {name: before.get(name) for name in pins} == pins
    assert (before["ipython"], before["ipywidgets"]) == ("7.34.0", "7.7.1") and "gpumodel" not in before


def test_the_install_cell_changes_no_package_colab_pins(colab):
    _, before, after, _ = colab
    assert after.get("gpumodel") == "0.1.0", "the install cell installed the wheel"
    assert {name: after.get(name) for name in before} == before


def test_every_notebook_runs_on_colab_like_kernel(colab):
    _, _, _, errors = colab
    assert set(errors) == {p.stem for p in NOTEBOOKS}
    assert {name: found for name, found in errors.items() if found} == {}


def test_the_widget_tests_pass_on_ipywidgets_7(colab, tmp_path):
    """tests/test_widgets.py, with this project's pytest settings, against the installed
    package on Colab's ipywidgets 7.7.1 (the checkout's environment runs it on 8)."""
    python, before, _, _ = colab
    assert before["ipywidgets"].startswith("7.")
    (tmp_path / "tests").mkdir()
    shutil.copy2(ROOT / "pyproject.toml", tmp_path)
    for name in ("conftest.py", "test_widgets.py"):
        shutil.copy2(ROOT / "tests" / name, tmp_path / "tests")
    out = _run([python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_widgets.py"],
               cwd=tmp_path, env=_env(tmp_path))
    assert " passed" in out and " failed" not in out and " skipped" not in out


def test_every_notebook_runs_in_the_binder_environment(checkout, tmp_path_factory):
    """binder/requirements.txt installed as repo2docker installs it (from the clone's root),
    with the kernel and nbclient repo2docker's base environment provides; every notebook of
    the clone run there: the install cell finds gpumodel and installs nothing."""
    home = tmp_path_factory.mktemp("binder")
    env = _env(home)
    python = _venv(home / "venv", env, "-r", "binder/requirements.txt", "ipykernel", "nbclient", cwd=checkout)
    installed = _freeze(python, env)
    assert installed["gpumodel"] == "0.1.0" and "nbgitpuller" in installed
    errors = _run_notebooks(python, checkout / "notebooks", env)
    assert set(errors) == {p.stem for p in NOTEBOOKS}
    assert {name: found for name, found in errors.items() if found} == {}
    assert _freeze(python, env) == installed, "the install cell installed nothing"
