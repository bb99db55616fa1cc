"""The course as a reader meets it: each chapter's exercises in one file named after the
chapter (`chapters/01_hierarchy.md` -> `hierarchy`), the checking machinery they share
(`checks`), and the figures (`plots`), tables (`tables`) and explorers (`widgets`) the chapters
show.

Add here: an exercise, a checker or a widget exercise in its chapter's file (listed in that
file's `WIDGET_EXERCISES`); a figure in `plots`; a table in `tables`.
"""

from .._lazy import submodules

__getattr__ = submodules(__name__, __file__)

CHAPTERS = ("programming_model", "hierarchy", "intensity", "tiling", "roofline_levels", "flashattention", "tensor_cores",
            "blackwell_low_precision", "model_vs_measurements", "appendix_presets")
"""The chapters' exercise modules, in reading order."""


def widget_exercises() -> tuple:
    """Every chapter's widget exercises (their constructors), in chapter order."""
    import importlib

    return tuple(make for name in CHAPTERS for make in importlib.import_module(f".{name}", __name__).WIDGET_EXERCISES)
