"""Helpers for the chapters' prose: numbers are computed, then glued into the text.

In a Jupyter Book build, `glue("name", text)` makes `text` available to the prose as
{glue:md}`name`; in plain Jupyter or Colab (no myst-nb) it only returns `text`.
"""

from __future__ import annotations


def glue(name: str, text: str) -> str:
    """Publish `text` (a str, MyST allowed) under `name` for {glue:md}`name`; return it."""
    if not isinstance(text, str):
        raise ValueError(f"text must be a str (format numbers with gm.fmt_*), got {type(text).__name__}")
    try:
        from IPython.display import Markdown
        from myst_nb import glue as myst_glue
    except ImportError:
        return text
    myst_glue(name, Markdown(text), display=False)
    return text


def markdown_table(header: list[str], rows: list[list[str]]) -> str:
    """A Markdown table from a header and rows of strings ('|' in cells is escaped)."""
    def line(cells):
        return "| " + " | ".join(str(c).replace("|", "\\|") for c in cells) + " |"

    return "\n".join([line(header), line(["---"] * len(header))] + [line(r) for r in rows])
