"""Imports go one way: core <- GPU side <- rendering. The core imports only NumPy (and the
standard library); nothing but the GPU side reaches CuPy; nothing but rendering reaches
matplotlib, ipywidgets or IPython. Function-level imports count too."""

import ast
import pathlib
import sys

import pytest

PACKAGE = pathlib.Path(__file__).resolve().parent.parent / "gpumodel"
LAYERS = {
    # module -> (layer, rank): a module may import modules of a lower rank, or of its own
    # rank and layer; never a higher one.
    "_check": ("core", 0), "units": ("core", 0), "kernel_info": ("core", 0), "hardware": ("core", 0),
    "presets": ("core", 1), "workloads": ("core", 2),
    "model": ("core", 3), "simulate": ("core", 3), "occupancy": ("core", 3),
    "waves": ("core", 4), "tiles": ("core", 4), "published": ("core", 5),
    "compiler": ("gpu", 5), "kernel_plans": ("gpu", 5), "cpu_timing": ("gpu", 5), "recorded_runs": ("gpu", 5),
    "literature": ("gpu", 5), "gpu_runtime": ("gpu", 6), "validate": ("gpu", 7), "gpu_check": ("gpu", 8),
    "notebooks": ("rendering", 8), "chapter": ("rendering", 9), "tables": ("rendering", 9),
    "plots": ("rendering", 9), "widgets": ("rendering", 9), "site": ("rendering", 9), "exercises": ("rendering", 9),
    "widget_exercises": ("rendering", 10), "tensor_cores": ("rendering", 9),
}
THIRD_PARTY = {
    "core": {"numpy", "tomli"},
    "gpu": {"numpy", "cupy", "cupy_backends", "pynvml"},
    "rendering": {"numpy", "matplotlib", "matplotlib_inline", "ipywidgets", "IPython", "myst_nb", "jupytext",
                  "nbformat", "nbclient"},
}


def _imports(path: pathlib.Path) -> set:
    """(kind, name) of everything a module imports: ("own", "model") or ("other", "numpy")."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:  # from . import x / from .x import y
                names = [node.module] if node.module else [a.name for a in node.names]
                found |= {("own", n.split(".")[0]) for n in names}
            else:
                found.add(("other", node.module.split(".")[0]))
        elif isinstance(node, ast.Import):
            found |= {("other", a.name.split(".")[0]) for a in node.names}
    return found


def test_every_module_has_a_layer():
    modules = {p.stem for p in PACKAGE.glob("*.py")} - {"__init__"}
    assert modules == set(LAYERS)


@pytest.mark.parametrize("module", sorted(LAYERS))
def test_imports_go_one_way(module):
    layer, rank = LAYERS[module]
    for kind, name in _imports(PACKAGE / f"{module}.py"):
        if kind == "own":
            their_layer, their_rank = LAYERS[name]
            assert their_rank < rank or (their_rank == rank and their_layer == layer), \
                f"{module} ({layer}) imports {name} ({their_layer}), a higher layer"
        elif name not in sys.stdlib_module_names:
            assert name in THIRD_PARTY[layer], f"{module} ({layer}) imports {name}"


def test_the_core_imports_without_plotting_widgets_or_cupy():
    import subprocess

    code = ("import sys, gpumodel as gm; gm.predict(gm.vector_add(4), 'T4'); gm.occupancy; gm.tiles; gm.waves; "
            "bad = {'matplotlib', 'ipywidgets', 'cupy', 'IPython'} & set(sys.modules); assert not bad, bad")
    subprocess.run([sys.executable, "-c", code], check=True)
