"""The chapters' helpers (gpumodel.book.chapter): glue, claim, the Colab badge and the GPU
notice. Kept out of test_book.py, which `make mutation` leaves out (it builds the book), so
that the mutants of book/chapter.py meet these tests (issue 72)."""

import numpy as np
import pytest

import gpumodel as gm
from gpumodel.book import chapter, notebooks
from gpumodel.cuda import runtime


def test_glue_keeps_what_it_glued_and_echoes_nothing(monkeypatch):
    monkeypatch.setattr(gm.book.chapter, "GLUED", {})
    monkeypatch.setattr(gm.book.chapter, "VARIES", set())
    assert gm.book.chapter.glue("test_value", "2.07 ms") is None  # a glue cell's last line shows no stray value
    assert gm.book.chapter.GLUED["test_value"] == "2.07 ms" and "test_value" not in gm.book.chapter.VARIES
    gm.book.chapter.glue("test_value", "2.07 ms")  # a cell run again
    gm.book.chapter.glue("timed", "1.00 s", varies=True)
    gm.book.chapter.glue("timed", "1.10 s", varies=True)  # a timing run again
    assert gm.book.chapter.GLUED["timed"] == "1.10 s" and "timed" in gm.book.chapter.VARIES


def test_a_name_glued_twice_in_a_chapter_with_other_text_is_refused(monkeypatch):
    monkeypatch.setattr(gm.book.chapter, "GLUED", {"ring_share": "1.75"})
    monkeypatch.setitem(gm.book.chapter.CHAPTER, "name", "10_parallel")
    with pytest.raises(ValueError, match=r"'ring_share' is glued already in 10_parallel as '1.75'"):
        gm.book.chapter.glue("ring_share", "82%")
    assert gm.book.chapter.GLUED["ring_share"] == "1.75"


def test_glue_displays_what_myst_nbs_glue_displays(monkeypatch):
    """On the site's build `glue` shows exactly the output myst-nb's own glue shows (its
    {glue:md} role reads that output)."""
    import IPython.display
    from myst_nb import glue as myst_glue
    from myst_nb.ext import glue as myst_glue_module

    shown = []
    monkeypatch.setattr(IPython.display, "display", lambda *args, **kwargs: shown.append((args, kwargs)))
    monkeypatch.setattr(myst_glue_module, "ipy_display", lambda *args, **kwargs: shown.append((args, kwargs)))
    monkeypatch.setenv("GPUMODEL_BUILD", "book")
    gm.book.chapter.glue("cap", "**108** SMs")
    myst_glue("cap", IPython.display.Markdown("**108** SMs"), display=False)
    assert len(shown) == 2 and shown[0] == shown[1]


def test_glue_refuses_numbers():
    with pytest.raises(TypeError, match=r"^text must be a str \(format numbers with gm.fmt_\*\), got float$"):
        gm.book.chapter.glue("x", 2.07e-3)


def test_a_claim_that_holds_passes_and_one_that_fails_names_chapter_and_sentence(monkeypatch):
    monkeypatch.setitem(gm.book.chapter.CHAPTER, "name", "03_tiling")
    assert gm.book.chapter.claim(True, "the formula agrees") is None
    assert gm.book.chapter.claim(np.float64(3) > 2, "three is more than two") is None  # NumPy's bool
    with pytest.raises(gm.book.chapter.ClaimError, match=r'03_tiling: the sentence "the formula agrees" no longer'):
        gm.book.chapter.claim(False, "the formula agrees")
    with pytest.raises(gm.book.chapter.ClaimError, match="three is less than two"):  # most claims are NumPy's
        gm.book.chapter.claim(np.float64(3) < 2, "three is less than two")
    with pytest.raises(TypeError, match="holds must be a bool"):
        gm.book.chapter.claim([1], "a list is no verdict")
    with pytest.raises(TypeError, match="sentence must be"):
        gm.book.chapter.claim(True, " ")


def test_a_name_glued_as_fixed_text_is_refused_other_text_even_marked_varies(monkeypatch):
    """Only a name glued as varying may take other text again; either way the first stays."""
    monkeypatch.setattr(chapter, "GLUED", {})
    monkeypatch.setattr(chapter, "VARIES", set())
    monkeypatch.setitem(chapter.CHAPTER, "name", "03_tiling")
    chapter.glue("fixed", "30.0 ms")
    with pytest.raises(ValueError) as err:
        chapter.glue("fixed", "31.0 ms", varies=True)
    assert str(err.value) == ("name 'fixed' is glued already in 03_tiling as '30.0 ms'; a second glue of it as "
                              "'31.0 ms' would change every sentence that shows it: choose another name")
    chapter.glue("timed", "1.00 s", varies=True)
    with pytest.raises(ValueError, match="'timed' is glued already"):
        chapter.glue("timed", "1.10 s")  # no longer said to vary
    assert chapter.GLUED == {"fixed": "30.0 ms", "timed": "1.00 s"} and chapter.VARIES == {"timed"}
    chapter.glue("timed", "1.00 s")  # the same text, now fixed: it no longer varies
    assert chapter.VARIES == set()


def test_glue_outside_the_books_build_displays_nothing(monkeypatch):
    import IPython.display

    shown = []
    monkeypatch.setattr(IPython.display, "display", lambda *args, **kwargs: shown.append((args, kwargs)))
    monkeypatch.delenv("GPUMODEL_BUILD", raising=False)
    monkeypatch.setattr(chapter, "GLUED", {})
    chapter.glue("cap", "**108** SMs")
    assert shown == [] and chapter.GLUED == {"cap": "**108** SMs"}
    monkeypatch.setenv("GPUMODEL_BUILD", "book")
    chapter.glue("cap", "**108** SMs")
    assert shown == [((dict(chapter.glued_output("cap", "**108** SMs")[0]),),
                      {"raw": True, "metadata": chapter.glued_output("cap", "**108** SMs")[1]})]


def test_glued_output_is_myst_nbs_bundle_under_the_papermill_prefix():
    assert chapter.glued_output("cap", "**108** SMs") == (
        {"application/papermill.record/text/plain": "<IPython.core.display.Markdown object>",
         "application/papermill.record/text/markdown": "**108** SMs"},
        {"scrapbook": {"name": "cap", "mime_prefix": "application/papermill.record/"}})


@pytest.mark.parametrize("sentence", [None, "", " \n", 3])
def test_a_claim_needs_its_sentence(sentence):
    with pytest.raises(TypeError, match=r"^sentence must be the prose's words as a non-empty str, got "):
        chapter.claim(True, sentence)


@pytest.mark.parametrize("holds", [1, 0, None, "yes", np.array([True])])
def test_a_claims_verdict_must_be_a_bool(holds):
    with pytest.raises(TypeError, match=rf"^holds must be a bool \(the computation's verdict\), got {type(holds).__name__}$"):
        chapter.claim(holds, "a sentence")


def test_a_failed_claim_names_the_chapter_and_quotes_the_sentence(monkeypatch):
    monkeypatch.setitem(chapter.CHAPTER, "name", "05_flashattention")
    with pytest.raises(chapter.ClaimError) as err:
        chapter.claim(np.bool_(False), "flash reads less")
    assert str(err.value) == ('05_flashattention: the sentence "flash reads less" no longer holds for what the '
                              "cells compute")
    assert isinstance(err.value, AssertionError)


def test_the_colab_badge_starts_the_chapters_names_afresh(monkeypatch):
    monkeypatch.setattr(chapter, "GLUED", {"old": "1"})
    monkeypatch.setattr(chapter, "VARIES", {"old"})
    monkeypatch.setitem(chapter.CHAPTER, "name", "this chapter")
    monkeypatch.delenv("GPUMODEL_BUILD", raising=False)
    assert chapter.colab_badge("03_tiling") is None  # in a notebook: nothing shown
    assert chapter.CHAPTER["name"] == "03_tiling" and chapter.GLUED == {} and chapter.VARIES == set()


def test_the_colab_badge_on_the_site(monkeypatch):
    monkeypatch.setenv("GPUMODEL_BUILD", "book")
    download = '<a href="../03_tiling.ipynb" download>download it as a notebook</a>'
    monkeypatch.setattr(notebooks, "repository", lambda *a, **k: None)
    assert chapter.colab_badge("03_tiling").data == f"Run this chapter yourself: {download}."
    repo = "https://github.com/some-fork/gpu-course"
    monkeypatch.setattr(notebooks, "repository", lambda *a, **k: repo)
    assert chapter.colab_badge("03_tiling").data == (
        f"[Open this chapter in Colab]({notebooks.colab_url('03_tiling', repo)}) (the first cell installs `gpumodel` "
        f"there) or {download}.")


@pytest.mark.parametrize("gpu", [True, False])
@pytest.mark.parametrize("book", [True, False])
def test_the_gpu_notice_says_what_runs_here(monkeypatch, gpu, book):
    monkeypatch.setattr(runtime, "have_gpu", lambda: gpu)
    monkeypatch.setattr(runtime, "gpu_status", lambda: (gpu, "NVIDIA A100-SXM4-40GB" if gpu else "no driver"))
    if book:
        monkeypatch.setenv("GPUMODEL_BUILD", "book")
    else:
        monkeypatch.delenv("GPUMODEL_BUILD", raising=False)
    title, text = (("Running on a GPU", "NVIDIA A100-SXM4-40GB answered: the kernels below run on it and are "
                    "compared with the model.") if gpu else
                   ("Running without a GPU", "No GPU answered here, so this chapter shows the CPU path: the model, "
                    "simulations that count every byte, measurements of this CPU, and runs recorded on real GPUs."))
    assert chapter.gpu_notice().data == (f":::{{admonition}} {title}\n:class: note\n\n{text}\n:::" if book
                                         else f"> **{title}**\n>\n> {text}")
