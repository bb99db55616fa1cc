"""The package as learners get it, not as it sits in this checkout: the wheel holds every file
the package reads; in a fresh Colab-like virtual environment outside the checkout
(tests/colab-constraints.txt) every notebook runs with 0 errors, its own install cell
installing the wheel without changing a package Colab pins, every glued number comes out as
its prose shows it, no checker says "Right.", and chapter 3 runs with no CUDA compiler on the
PATH. The environment repo2docker builds from binder/requirements.txt (BinderHub, a class's
JupyterHub) installs gpumodel from the clone, its install cell installs nothing, and it runs
the notebooks' packages at the versions this checkout runs them (the book build, the
JupyterLab test and the widget tests ran there); where a version differs, every notebook is
run there too. The widget tests also run on Colab's ipywidgets 7.7 (the checkout has 8).

This is the one place the learners' notebooks are executed, by nbmake (`pytest --nbmake`, as
CONTRIBUTING runs one notebook), once each, inside the environment: the site's build executes
every chapter, this module every notebook. nbmake's report of each run goes to
`_build/nbmake-<environment>.log`, which `make test` prints at its end (tests/conftest.py).
Each environment installs from the package index with uv (its cache serves repeated installs);
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
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("installed")]
COLAB = ROOT / "tests" / "colab-constraints.txt"
PROBE = "import json, gpumodel; print(json.dumps([gpumodel.__file__, gpumodel.book.chapter.GLUED]))"
"""The cell appended to each notebook run: where gpumodel came from and what it glued."""
LOGS = ROOT / "_build"
"""Where nbmake's report of each environment's runs is written (`_build/nbmake-<name>.log`)."""
ENV_PACKAGES = ("numpy", "matplotlib", "ipython", "ipykernel", "ipywidgets", "nbclient")
"""What the notebooks run on: where the Binder environment has these at this checkout's
versions, the runs made here (the book, JupyterLab, the widget tests) stand for it."""


def _env(home: pathlib.Path) -> dict:
    """The environment of a learner's machine: none of this checkout on the path."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "GPUMODEL_BUILD", "VIRTUAL_ENV")}
    return env | {"PYTHONNOUSERSITE": "1", "JUPYTER_DATA_DIR": str(home / "jupyter"), "MPLBACKEND": "Agg"}


def _run(args, cwd, env, **kwargs):
    done = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, **kwargs)
    assert done.returncode == 0, f"{' '.join(map(str, args))} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout


def _venv(where: pathlib.Path, env: dict, *install, cwd=None) -> pathlib.Path:
    """A fresh virtual environment at `where` (outside the checkout, with pip for the
    notebooks' install cells) with `install` in it, installed by uv from the same index and
    pins as pip, compiled to bytecode as pip compiles it (a kernel would otherwise compile its
    imports at every start: the environment sets PYTHONDONTWRITEBYTECODE); its python."""
    _run([sys.executable, "-m", "venv", str(where)], cwd=where.parent, env=env)
    python = where / "bin" / "python"
    if install:
        uv = pathlib.Path(sys.executable).with_name("uv")
        _run([uv, "pip", "install", "-q", "--compile-bytecode", "--python", python, *install], cwd=cwd or where.parent, env=env)
    return python


def _freeze(python, env) -> dict:
    """name -> version of what is installed (names normalised as pip compares them)."""
    out = _run([python, "-m", "pip", "list", "--format", "json"], cwd=python.parent, env=env)
    return {p["name"].lower().replace("_", "-"): p["version"] for p in json.loads(out)}


def _pins() -> dict:
    """The constraints file's name -> version."""
    lines = [line.split("#")[0].strip() for line in COLAB.read_text().splitlines()]
    return {name.lower().replace("_", "-"): version for name, version in (x.split("==") for x in lines if x)}


def _run_notebooks(python, paths, env, name: str) -> dict:
    """Run `paths` with nbmake in `python`'s environment, each once (a copy with `PROBE`
    appended, its outputs written back: --overwrite): {notebook: the executed notebook}.
    nbmake's report goes to `LOGS`/nbmake-`name`.log; a failing notebook is left to the tests
    that read its outputs, which name the error."""
    paths = sorted(paths)
    out = paths[0].parent / "executed"
    out.mkdir(exist_ok=True)
    for path in paths:
        nb = nbformat.read(path, as_version=4)
        nb.cells.append(nbformat.v4.new_code_cell(PROBE))
        nbformat.write(nb, out / path.name)
    done = subprocess.run([python, "-m", "pytest", "--nbmake", "--overwrite", "--nbmake-timeout=300", "-v",
                           "-p", "no:cacheprovider", *(p.name for p in paths)], cwd=out, env=env, capture_output=True,
                          text=True)
    LOGS.mkdir(exist_ok=True)
    (LOGS / f"nbmake-{name}.log").write_text(f"nbmake in the {name} environment ({python}):\n{done.stdout}{done.stderr}")
    return {p.stem: nbformat.read(out / p.name, as_version=4) for p in paths}


def _errors(nb, prefix: str) -> list:
    """The errors of an executed notebook, and a gpumodel imported from anywhere but `prefix`."""
    errors = [f"{o['ename']}: {o['evalue']}\n" + "\n".join(o.get("traceback", [])[-3:])
              for c in nb.cells for o in c.get("outputs", []) if o.get("output_type") == "error"]
    probe = [o for o in nb.cells[-1].get("outputs", []) if o.get("name") == "stdout"]
    if not probe:
        return errors + ["the probe printed nothing"]
    where, _ = json.loads(probe[0]["text"])
    return errors + ([] if where.startswith(str(prefix)) else [f"gpumodel imported from {where}"])


def _glued(nb) -> dict:
    """What an executed notebook glued, as its probe printed it."""
    probe = [o for o in nb.cells[-1].get("outputs", []) if o.get("name") == "stdout"]
    return json.loads(probe[0]["text"])[1]


def _shown(output) -> str:
    """What a notebook front end shows of one output: a stream's text, else its richest text
    (the plain-text repr of a checker's Feedback also lists the messages it holds for answers)."""
    if "text" in output:
        return output["text"]
    data = output.get("data", {})
    return next((data[kind] for kind in ("text/markdown", "text/html", "text/plain") if kind in data), "")


def _no_cuda_compiler(folder: pathlib.Path) -> str:
    """A PATH with only what the kernel lab needs from this machine (g++ and binutils), so no
    nvcc is found; the Colab-like venv installs no NVRTC."""
    folder.mkdir()
    for tool in ("g++", "as", "ld", "addr2line", "nm"):
        (folder / tool).symlink_to(shutil.which(tool))
    return str(folder)


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
    """A fresh environment with what Colab's kernel ships (tests/colab-constraints.txt) and no
    CUDA compiler on the PATH; every notebook run there, its own install cell installing the
    wheel as it installs the commit on Colab. Returns (python, the versions before the install,
    after, the executed notebooks by name)."""
    home = tmp_path_factory.mktemp("colab")
    env = _env(home)
    python = _venv(home / "venv", env, "-r", str(COLAB), "nbmake")  # nbmake within Colab's pins
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
    env["PATH"] = f"{python.parent}:{_no_cuda_compiler(home / 'bin')}"
    executed = _run_notebooks(python, folder.glob("*.ipynb"), env, "colab")
    return python, before, _freeze(python, env), executed


def test_colab_like_environment_has_colabs_pins(colab):
    _, before, _, _ = colab
    pins = _pins()
    assert {name: before.get(name) for name in pins} == pins
    assert (before["ipython"], before["ipywidgets"]) == ("7.34.0", "7.7.1") and "gpumodel" not in before


def test_the_install_cell_changes_no_package_colab_pins(colab):
    _, before, after, _ = colab
    assert after.get("gpumodel") == "0.1.0", "the install cell installed the wheel"
    assert {name: after.get(name) for name in before} == before


@pytest.mark.parametrize("name", [p.stem for p in NOTEBOOKS])
def test_every_notebook_runs_on_colab_like_kernel(colab, name):
    python, _, _, executed = colab
    assert set(executed) == {p.stem for p in NOTEBOOKS}
    assert _errors(executed[name], python.parent.parent) == []


@pytest.mark.parametrize("name", [p.stem for p in NOTEBOOKS])
def test_run_all_reproduces_the_numbers_and_shows_no_solution(colab, name):
    """Run All on a generated notebook: every value it glues (but those that vary by machine)
    comes out as the notebook's prose shows it (a solution's glue cells are shown, not run), and
    no checker says "Right."."""
    nb = colab[3][name]
    meta = nbformat.read(ROOT / "notebooks" / f"{name}.ipynb", as_version=4).metadata["gpumodel"]
    glued = {k: v for k, v in _glued(nb).items() if k not in meta["varies"]}
    assert glued and glued == {k: meta["glued"].get(k) for k in glued}
    shown = "\n".join(_shown(o) for c in nb.cells[:-1] for o in c.get("outputs", []))
    assert "Right." not in shown
    exercises = "".join(c.source for c in nb.cells[1:] if c.cell_type == "code")  # after the install cell
    if "= None" in exercises:  # an exercise left to answer
        assert "No answer yet" in shown


def test_chapter_3_runs_with_no_compiler(colab):
    """Chapter 3 on a machine with neither NVRTC nor nvcc shows the recorded report; its lab
    needs only g++."""
    text = json.dumps([c.get("outputs", []) for c in colab[3]["03_tiling"].cells])
    assert "No CUDA compiler here: this is the report recorded on" in text
    assert "gemm_spill" in text


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
    with the kernel and nbclient repo2docker's base environment provides (and nbmake, which runs
    them here): gpumodel comes from
    the clone, its install cell installs nothing, and the notebooks' packages are this
    checkout's versions (else every notebook of the clone is run there)."""
    home = tmp_path_factory.mktemp("binder")
    env = _env(home)
    python = _venv(home / "venv", env, "-r", "binder/requirements.txt", "ipykernel", "nbclient", "nbmake", cwd=checkout)
    installed = _freeze(python, env)
    assert installed["gpumodel"] == "0.1.0" and "nbgitpuller" in installed
    ours = _freeze(pathlib.Path(sys.executable), os.environ)
    differ = {name: (installed.get(name), ours.get(name)) for name in ENV_PACKAGES if installed.get(name) != ours.get(name)}
    if differ:  # not the packages the checkout's runs used: run the notebooks here
        paths = list((checkout / "notebooks").glob("*.ipynb"))
    else:  # the install cell, and the package found where repo2docker put it
        first = nbformat.read(NOTEBOOKS[0], as_version=4)
        probe = nbformat.v4.new_notebook(cells=[first.cells[0], nbformat.v4.new_code_cell(
            "import gpumodel as gm, gpumodel.cuda.compiler as c\nassert list(c.kernel_dir().glob('*.cu'))\n"
            "gm.course.checkpoint('cp-hierarchy-time')")])
        paths = [home / "probe.ipynb"]
        nbformat.write(probe, paths[0])
    executed = _run_notebooks(python, paths, env, "binder")
    assert {name: _errors(nb, home / "venv") for name, nb in executed.items()} == {p.stem: [] for p in paths}, differ
    assert _freeze(python, env) == installed, "the install cell installed nothing"
