"""Submodules loaded on first use (`gm.course.plots`), so `import gpumodel` loads neither
matplotlib, ipywidgets nor CuPy."""

from __future__ import annotations

import importlib
import pathlib


def submodules(package: str, init_file: str):
    """A module `__getattr__` for `package` that imports its submodules and subpackages (the
    `.py` files and folders beside `init_file`) when first asked for."""
    folder = pathlib.Path(init_file).parent
    names = {p.stem for p in folder.glob("*.py") if not p.stem.startswith("_")}
    names |= {p.name for p in folder.iterdir() if (p / "__init__.py").exists()}

    def __getattr__(name: str):
        if name in names:
            return importlib.import_module(f".{name}", package)
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    return __getattr__
