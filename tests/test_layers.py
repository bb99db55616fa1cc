"""The folders are the layers, and imports go one way: core (`gpumodel/*.py`) <- `cuda/` <- `lab/`
<- `course/` <- `book/`. The core imports only NumPy (and the standard library); nothing but
`cuda/` reaches CuPy; nothing below `course/` reaches matplotlib, ipywidgets or IPython.
Function-level imports count too. A module's layer is its folder. No two modules import each
other, directly or through others (an import cycle), inside a layer or across."""

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
    "lab": {"numpy", "ml_dtypes", "triton"},  # triton: only when a Triton kernel is traced
    "course": {"numpy", "matplotlib", "matplotlib_inline", "ipywidgets", "IPython", "triton"},  # triton: chapter 4's kernel
    "book": {"numpy", "IPython", "myst_nb", "jupytext", "nbformat", "nbclient", "fontTools",
             "sphinx", "docutils", "sphinxcontrib", "pybtex"},  # the last four: the Sphinx extensions (book/formulas, book/site)
}
MODULES = sorted(p.relative_to(PACKAGE).with_suffix("").as_posix() for p in PACKAGE.rglob("*.py"))


def layer(module: str) -> str:
    """The layer of a module named by its path inside the package ("course/plots", "model")."""
    first = module.split("/")[0]
    return first if first in LAYERS else "core"


def _imports(module: str, source: str | None = None) -> set:
    """(kind, name) of everything `module` imports (its file, or `source` in its place):
    ("own", "cuda/runtime") or ("other", "numpy")."""
    found = set()
    package = module.split("/")[:-1]
    source = (PACKAGE / f"{module}.py").read_text() if source is None else source
    for node in ast.walk(ast.parse(source)):
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


def _own_modules(module: str, source: str | None = None) -> set:
    """The package's modules `module` imports: a name imported from a module is that module
    (`from .checks import Feedback` and `from . import checks` both import "course/checks"),
    one from a package that package's `__init__`."""
    found = set()
    for kind, name in _imports(module, source):
        if kind == "own":
            parent = name.rpartition("/")[0]
            found.add(name if name in MODULES else parent if parent in MODULES else f"{parent}/__init__".lstrip("/"))
    return found


def _cycle(graph: dict) -> list:
    """One import cycle of `graph` (module -> the modules it imports), as [a, b, ..., a]; [] if none."""
    done, path = set(), []

    def visit(module):
        if module in path:
            return path[path.index(module):] + [module]
        if module in done:
            return []
        path.append(module)
        for imported in sorted(graph.get(module, ())):
            if found := visit(imported):
                return found
        path.pop()
        done.add(module)
        return []

    return next(filter(None, map(visit, sorted(graph))), [])


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


def test_no_import_cycle():
    cycle = _cycle({module: _own_modules(module) for module in MODULES})
    assert not cycle, f"an import cycle: {' -> '.join(cycle)}"


def test_the_checker_sees_an_import_cycle():
    checks = "from .. import _check\n\ndef box():\n    from .widgets import answer_box\n"
    widgets = "from . import checks\nfrom .plots import PART_LABELS\n"
    graph = {"course/checks": _own_modules("course/checks", checks), "course/widgets": _own_modules("course/widgets", widgets)}
    assert graph == {"course/checks": {"_check", "course/widgets"}, "course/widgets": {"course/checks", "course/plots"}}
    assert _cycle(graph) == ["course/checks", "course/widgets", "course/checks"]
    assert _cycle({**graph, "course/widgets": {"course/plots"}}) == []
    assert _own_modules("course/tiling", "from ..lab import trace\nfrom .. import presets\n") == {"lab/__init__", "presets"}


def test_the_core_imports_without_plotting_widgets_or_cupy():
    import subprocess

    code = ("import sys, gpumodel as gm; gm.predict(gm.vector_add(4), 'T4'); gm.occupancy; gm.tiles; gm.waves; "
            "gm.tensor_cores; gm.published; "
            "bad = {'matplotlib', 'ipywidgets', 'cupy', 'IPython'} & set(sys.modules); assert not bad, bad")
    subprocess.run([sys.executable, "-c", code], check=True)


LAB_ROOMS = ("lab/dwarf", "lab/limits", "lab/reader", "lab/builder", "lab/runner", "lab/reporter", "lab/measure",
             "lab/triton_adapter", "lab/triton_trace")
"""The kernel lab's rooms in the order a source passes through them (ARCHITECTURE.md, "The
kernel lab"): a room imports only those before it (`dwarf` and `limits` underneath all); a Triton
kernel comes in last, by its own door (Triton's interpreter reached through `triton_adapter`
alone), to the reporter's `Trace`."""
LAB_DOORS = {"lab/__init__", "lab/__main__"}
"""The lab's entry points, not rooms: the package and `python -m gpumodel.lab`, which prepares it."""


def test_the_labs_rooms_are_every_lab_module():
    assert set(LAB_ROOMS) | LAB_DOORS == {m for m in MODULES if layer(m) == "lab"}


@pytest.mark.parametrize("room", LAB_ROOMS)
def test_the_lab_passes_a_source_one_way_through_its_rooms(room):
    earlier = set(LAB_ROOMS[:LAB_ROOMS.index(room)])
    for imported in _own_modules(room):
        if layer(imported) == "lab":
            assert imported in earlier, f"{room} imports {imported}, a later room of the lab"
