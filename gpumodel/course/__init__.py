"""The course as a reader meets it: each chapter's exercises in one file named after the
chapter (`chapters/01_hierarchy.md` -> `hierarchy`), the checking machinery they share
(`checks`), and the figures (`plots`), tables (`tables`) and explorers (`widgets`) the chapters
show.

Add here: an exercise, a checker, a checkpoint or a widget exercise in its chapter's file
(listed in that file's `CHECKPOINTS` or `WIDGET_EXERCISES`); a figure in `plots`; a table in
`tables`. `checkpoint(key)` shows a checkpoint; `progress()` lists this session's checks.
"""

from .._lazy import submodules

__getattr__ = submodules(__name__, __file__)

CHAPTERS = ("programming_model", "hierarchy", "intensity", "tiling", "roofline_levels", "flashattention", "tensor_cores",
            "blackwell_low_precision", "capstone", "decode", "parallel", "model_vs_measurements", "appendix_presets")
"""The chapters' exercise modules, in reading order."""


def widget_exercises() -> tuple:
    """Every chapter's widget exercises (their constructors), in chapter order."""
    import importlib

    return tuple(make for name in CHAPTERS for make in importlib.import_module(f".{name}", __name__).WIDGET_EXERCISES)


def checkpoints() -> dict:
    """Every chapter's checkpoints: key -> constructor, in chapter order."""
    import importlib

    return {key: make for name in CHAPTERS
            for key, make in getattr(importlib.import_module(f".{name}", __name__), "CHECKPOINTS", {}).items()}


def checkpoint(key: str):
    """Show the checkpoint `key` ("cp-hierarchy-time"): an answer box on the site, ipywidgets in
    Jupyter. Chapter 1."""
    found = checkpoints()
    if key not in found:
        raise ValueError(f"key must name a checkpoint, one of {sorted(found)}, got {key!r}")
    return found[key]().show()


def progress():
    """This session's checks (`checks.progress`): what was answered, and whether right. Chapter 1."""
    from .checks import progress as session

    return session()
