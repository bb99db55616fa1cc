"""The chapters' helpers: numbers are computed, then glued into the prose; a sentence that
compares or judges is asserted (`claim`); the Colab badge; the one line a chapter says when no
GPU answers.

In a Jupyter Book build, `glue("name", text)` makes `text` available to the prose as
{glue:md}`name`. The learners' notebooks (`gpumodel.book.notebooks`) show the same values in
place, taken from `GLUED` when they are generated.
"""

from __future__ import annotations

import numpy as np

from ..course.checks import building_book
from ..cuda import runtime
from . import notebooks

GLUED: dict = {}
"""Everything glued in this kernel, by name."""
VARIES: set = set()
"""The names glued whose value depends on the machine (a timing): the notebooks say where
the reader's own value is printed rather than show the build machine's."""


def glue(name: str, text: str, varies: bool = False) -> None:
    """Publish `text` (a str, MyST allowed) under `name` for {glue:md}`name`; `varies` marks
    a value that depends on the machine (see `VARIES`). A name already glued in this chapter
    with other text is refused (two cells would write one sentence's number), unless it varies."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a str (format numbers with gm.fmt_*), got {type(text).__name__}")
    if GLUED.get(name, text) != text and not (varies and name in VARIES):
        raise ValueError(f"name {name!r} is glued already in {CHAPTER['name']} as {GLUED[name]!r}; a second glue "
                         f"of it as {text!r} would change every sentence that shows it: choose another name")
    GLUED[name] = text
    (VARIES.add if varies else VARIES.discard)(name)
    if not building_book():  # only the site's build reads what is glued
        return
    from IPython.display import display

    bundle, metadata = glued_output(name, text)
    display(bundle, raw=True, metadata=metadata)


GLUE_PREFIX = "application/papermill.record/"
"""The prefix of the MIME types under which myst-nb finds a glued value that is not shown."""


class ClaimError(AssertionError):
    """A sentence of a chapter that its own computation no longer bears out."""


CHAPTER = {"name": "this chapter"}
"""The chapter this kernel runs (set by `colab_badge`, its first cell), for `claim`'s message."""


def claim(holds, sentence: str) -> None:
    """Assert what a sentence of the prose says: `holds` is the computation's verdict (a bool
    or a NumPy bool), `sentence` the words it checks, quoted as the reader reads them. Raises
    `ClaimError` naming the chapter and the sentence when it no longer holds, which fails the
    book's build (a change to the data or the model that makes the prose false)."""
    if not isinstance(sentence, str) or not sentence.strip():
        raise TypeError(f"sentence must be the prose's words as a non-empty str, got {sentence!r}")
    if not isinstance(holds, (bool, np.bool_)):
        raise TypeError(f"holds must be a bool (the computation's verdict), got {type(holds).__name__}")
    if not holds:
        raise ClaimError(f"{CHAPTER['name']}: the sentence \"{sentence}\" no longer holds for what the cells compute")


def glued_output(name: str, text: str) -> tuple[dict, dict]:
    """The output (MIME bundle, metadata) that myst-nb's `glue(name, Markdown(text),
    display=False)` displays and its {glue:md} role reads: written here, as importing
    myst_nb.ext.glue takes 1.5 s in every chapter's kernel (its nbformat loads jsonschema's
    format checkers)."""
    bundle = {"text/plain": "<IPython.core.display.Markdown object>", "text/markdown": text}
    return ({GLUE_PREFIX + mime: value for mime, value in bundle.items()},
            {"scrapbook": {"name": name, "mime_prefix": GLUE_PREFIX}})


def colab_badge(chapter: str):
    """On the site: a Markdown link that opens the chapter's published notebook in Colab (where
    the build knows its repository: `notebooks.repository`), and one to download it (the site
    serves `notebooks/*.ipynb` at its root). In a notebook (already open): None, which shows nothing."""
    from IPython.display import Markdown

    CHAPTER["name"] = chapter
    GLUED.clear()  # a chapter's names are its own: running it again from the top glues them afresh
    VARIES.clear()
    if not building_book():
        return None
    download = f'<a href="../{chapter}.ipynb" download>download it as a notebook</a>'
    repo = notebooks.repository()
    if repo is None:
        return Markdown(f"Run this chapter yourself: {download}.")
    colab = f"[Open this chapter in Colab]({notebooks.colab_url(chapter, repo)}) (the first cell installs `gpumodel` there)"
    return Markdown(f"{colab} or {download}.")


def gpu_notice():
    """The one line a chapter that runs kernels says about this machine: the GPU it runs
    on, or that it shows the CPU path and recorded data (why no GPU answered goes to the log)."""
    from IPython.display import Markdown

    if runtime.have_gpu():
        title, text = "Running on a GPU", (f"{runtime.gpu_status()[1]} answered: the kernels below run on it "
                                           "and are compared with the model.")
    else:
        title, text = "Running without a GPU", ("No GPU answered here, so this chapter shows the CPU path: the "
                                                "model, simulations that count every byte, measurements of this "
                                                "CPU, and runs recorded on real GPUs.")
    if building_book():
        return Markdown(f":::{{admonition}} {title}\n:class: note\n\n{text}\n:::")  # {note} takes no title
    return Markdown(f"> **{title}**\n>\n> {text}")
