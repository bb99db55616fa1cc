"""Terms in order (issue 39): every word a lab report or a capstone budget prints is taught by
the chapter that shows it, or an earlier one, or linked to the glossary where it appears. The
report's words come from a report the lab writes here, not from a list typed beside it."""

from __future__ import annotations

import re

import numpy as np
import pytest

import gpumodel as gm
from gpumodel.course import capstone as cap
from test_glossary import CHAPTERS, TERM_ROLE, TERMS, prose

REPORT_WORDS = {  # a word the report prints -> the glossary term it is, or None: explained in prose as code
    "sectors": "sector", "wavefr.": "wavefront", "wavefronts": "wavefront", "requests": None, "divergent": None,
    "ideal": None, "l1": "L1", "hbm_no_reuse": None, "smem": None, "sfu": "SFU",
}
"""Every word of a report that is no plain English, and where a reader learns it."""
SHARED = r"""__global__ void k(const float* x, float* y, int n) {
    __shared__ float s[64];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    s[threadIdx.x] = x[i];
    __syncthreads();
    if (i < n) y[i] = s[63 - threadIdx.x];
}
"""


@pytest.fixture(scope="module")
def report() -> str:
    """Reports with every row (global and shared loads and stores, a divergent warp) and both
    kinds of bound: a small kernel's, and chapter 2's starter's, as the chapter prints it."""
    from gpumodel.course import intensity

    x = np.arange(128, dtype=np.float32)
    rows = gm.lab.trace(SHARED, "k", 2, 64, [x, np.zeros_like(x), 100]).report(gpus=["A100-40GB"])
    n = intensity.LAB_N
    x = np.arange(n, dtype=np.float32)
    starter = gm.lab.trace(intensity.LAB_STARTER, "scale_by_two", intensity.LAB_GRID, intensity.LAB_BLOCK,
                           [x, np.zeros_like(x), n]).report(n, gpus=["A100-40GB", "H100-SXM"])
    return rows + "\n" + starter


def first_taught(word: str) -> int | None:
    """The chapter whose prose first explains `word` as code (`word`), or None."""
    for path in CHAPTERS:
        if re.search(rf"`{re.escape(word)}`|\*{re.escape(word)}\*", prose(path, inline_code=True)):
            return int(path.stem.split("_")[0])
    return None


def shown(path) -> int | None:
    """Where in the chapter's source a lab report or the capstone's score is first printed, or None."""
    m = re.search(r"\.report\(|cap\.score\(|budget_table\(", path.read_text())
    return m.start() if m else None


def test_the_report_prints_the_words_the_table_knows(report):
    words = set(re.findall(r"[a-z_]+[a-z0-9_.]*", report.lower()))
    assert {"sectors", "wavefronts", "divergent", "hbm_no_reuse", "l1", "smem", "ideal", "requests"} <= words | {
        w.rstrip(".") for w in words}
    assert "sectors/wavefr." in report and "bound by" in report and "smem" in report
    # A report may be bound by any part the model times; each is a glossary term or explained as code.
    for bound in gm.BOUNDS:
        assert bound in REPORT_WORDS or bound.upper() in TERMS or bound in TERMS or bound == "compute", bound


@pytest.mark.parametrize("path", [p for p in CHAPTERS if shown(p) is not None], ids=lambda p: p.stem)
def test_a_report_uses_only_words_its_chapter_has_taught(path, report):
    number, at = int(path.stem.split("_")[0]), shown(path)
    text = path.read_text()
    section_end = text.find("\n## ", at)
    upto = text[:section_end if section_end > 0 else len(text)]
    linked = {m["target"] or m["text"] for m in TERM_ROLE.finditer(upto)}
    budget = " ".join(cap.LEVEL_NAMES.values()) if "cap.score(" in text else ""
    for word, term in REPORT_WORDS.items():
        if word not in (report + budget).lower() and word not in (report + budget):
            continue
        if term is not None:
            taught = TERMS.get(term, TERMS.get(f"{term} cache"))
            assert taught is not None, f"{term!r} is not in the glossary"
            assert taught <= number or term in linked or f"{term} cache" in linked, (
                f"{path.name} shows a report with {word!r} ({term}, taught in chapter {taught}) and links it nowhere "
                "before the section ends")
        else:
            first = first_taught(word)
            assert first is not None and first <= number, (
                f"{path.name} shows a report with {word!r}, which no chapter up to {number} explains")


def test_the_table_fails_for_a_word_no_chapter_explains(report):
    assert first_taught("hbm_no_reuse") == 2 and first_taught("smem") == 2
    assert first_taught("no_such_report_word") is None
    assert TERMS["L1"] == 0 and TERMS["lane"] == 0 and "FP32 lane" not in TERMS and TERMS["FP32 unit"] == 0
