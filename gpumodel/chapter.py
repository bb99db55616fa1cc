"""The chapters' helpers: numbers are computed, then glued into the prose; the Colab badge.

In a Jupyter Book build, `glue("name", text)` makes `text` available to the prose as
{glue:md}`name`; in plain Jupyter or Colab the prose shows the reference, and `GLUED` holds
the values.
"""

from __future__ import annotations

from . import notebooks

GLUED: dict = {}
"""Everything glued in this kernel, by name: in Jupyter or Colab, where the prose shows
{glue:md}`name` rather than the value, `gm.chapter.GLUED["name"]` has it."""


def glue(name: str, text: str) -> str:
    """Publish `text` (a str, MyST allowed) under `name` for {glue:md}`name`; return it."""
    if not isinstance(text, str):
        raise ValueError(f"text must be a str (format numbers with gm.fmt_*), got {type(text).__name__}")
    GLUED[name] = text
    try:
        from IPython.display import Markdown
        from myst_nb import glue as myst_glue
    except ImportError:
        return text
    myst_glue(name, Markdown(text), display=False)
    return text


def colab_badge(chapter: str):
    """A Markdown link that opens the chapter's notebook in Colab."""
    from IPython.display import Markdown

    return Markdown(f"[Open this chapter in Colab]({notebooks.colab_url(chapter)}) (the first cell installs `gpumodel` there)")
