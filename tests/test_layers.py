"""The folders are the layers, and imports go one way: core (`gpumodel/*.py`) <- `cuda/` <- `lab/`
<- `course/` <- `book/`. The core imports only NumPy (and the standard library); nothing but
`cuda/` reaches CuPy; nothing below `course/` reaches matplotlib, ipywidgets or IPython.
Function-level imports count too. A module's layer is its folder."""

import ast
import pathlib
import sys

import pytest

PACKAGE = pathlib.Path(__file__).resolve().parent.parent / "gpumodel"
LAYERS = ("core", "cuda", "lab", "course", "book")
"""Lowest first: a module may import its own layer or a lower one."""
THIRD_PARTY = {
    "core": {"numpy", "tomli"},
    "cuda": {"numpy", "cupy", "cupy_backends", "pynvml"},
    "lab": {"numpy"},
    "course": {"numpy", "matplotlib", "matplotlib_inline", "ipywidgets", "IPython"},
    "book": {"numpy", "IPython", "myst_nb", "jupytext", "nbformat", "nbclient"},
}
MODULES = sorted(p.relative_to(PACKAGE).with_suffix("").as_posix() for p in PACKAGE.rglob("*.py"))


def layer(module: str) -> str:
    """The layer of a module named by its path inside the package ("course/plots", "model")."""
    first = module.split("/")[0]
    return first if first in LAYERS else "core"


def _imports(module: str) -> set:
    """(kind, name) of everything `module` imports: ("own", "cuda/runtime") or ("other", "numpy")."""
    found = set()
    package = module.split("/")[:-1]
    for node in ast.walk(ast.parse((PACKAGE / f"{module}.py").read_text())):
        if isinstance(node, ast.ImportFrom) and node.level:
            base = package[:len(package) - (node.level - 1)]
            parts = base + (node.module.split(".") if node.module else [])
            targets = [parts + [a.name] for a in node.names]  # a submodule, or a name in a module: same layer
            found |= {("own", "/".join(t) or "__init__") for t in targets}
        elif isinstance(node, ast.ImportFrom):
            found.add(("other", node.module.split(".")[0]))
        elif isinstance(node, ast.Import):
            found |= {("other", a.name.split(".")[0]) for a in node.names}
    return found


def test_every_folder_is_a_layer():
    folders = {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").exists()}
    assert folders == set(LAYERS) - {"core"}


@pytest.mark.parametrize("module", MODULES)
def test_imports_go_one_way(module):
    mine = LAYERS.index(layer(module))
    for kind, name in _imports(module):
        if kind == "own":
            theirs = layer(name)
            assert LAYERS.index(theirs) <= mine, f"{module} ({layer(module)}) imports {name} ({theirs}), a higher layer"
        elif name not in sys.stdlib_module_names:
            assert name in THIRD_PARTY[layer(module)], f"{module} ({layer(module)}) imports {name}"


def test_the_checker_sees_a_wrong_import():
    assert ("own", "cuda/runtime") in _imports("book/chapter")
    assert layer("book/chapter") == "book" and layer("cuda/runtime") == "cuda" and layer("model") == "core"


def test_the_core_imports_without_plotting_widgets_or_cupy():
    import subprocess

    code = ("import sys, gpumodel as gm; gm.predict(gm.vector_add(4), 'T4'); gm.occupancy; gm.tiles; gm.waves; "
            "gm.tensor_cores; gm.published; "
            "bad = {'matplotlib', 'ipywidgets', 'cupy', 'IPython'} & set(sys.modules); assert not bad, bad")
    subprocess.run([sys.executable, "-c", code], check=True)
