"""One path through the book: each end-of-chapter exercise needs only a rule taught before it.
The table names, per exercise, the section whose rule it uses; the test checks that the section
exists and comes earlier in the book (the order of `_toc.yml`) than the exercise."""

from __future__ import annotations

import pathlib
import re

import pytest
import yaml

ROOT = pathlib.Path(__file__).resolve().parent.parent

RULE = {  # exercise label: (chapter, the heading of the section that teaches its rule)
    "ex-model-blocks": ("00_programming_model", "A first kernel, line by line"),
    "ex-model-float4": ("00_programming_model", "What a warp's load becomes"),
    "ex-model-stride": ("00_programming_model", "What a warp's load becomes"),
    "ex-hierarchy-bound": ("01_hierarchy", "One formula for a kernel's time"),
    "ex-hierarchy-fmas": ("01_hierarchy", "One formula for a kernel's time"),
    "ex-hierarchy-4090": ("01_hierarchy", "The same kernel on the H100"),
    "ex-hierarchy-explore-bounds": ("01_hierarchy", "One formula for a kernel's time"),
    "ex-hierarchy-explore-little": ("01_hierarchy", "Latency, and why a GPU keeps so many threads"),
    "ex-intensity-fusion-limit": ("02_intensity", "Fusion: counting trips"),
    "ex-intensity-explore-stride": ("02_intensity", "Coalescing: bytes requested versus sectors moved"),
    "ex-intensity-explore-fusion": ("02_intensity", "Fusion: counting trips"),
    "ex-tiling-operand-tile": ("03_tiling", "Rung 3: 128 x 128 tiles, 8 x 8 results per thread"),
    "ex-tiling-padding": ("03_tiling", "Bank conflicts"),
    "ex-tiling-occupancy": ("03_tiling", "Occupancy"),
    "ex-tiling-explore-thread": ("03_tiling", "Rung 3: 128 x 128 tiles, 8 x 8 results per thread"),
    "ex-tiling-explore-occupancy": ("03_tiling", "Occupancy"),
    "ex-levels-l2-tile": ("04_roofline_levels", "One roof per level"),
    "ex-levels-explore-group": ("04_roofline_levels", "An L2 model of waves"),
    "ex-levels-explore-overflow": ("04_roofline_levels", "Small benchmarks lie"),
    "ex-flash-limit": ("05_flashattention", "Standard attention, pass by pass"),
    "ex-flash-block": ("05_flashattention", "FlashAttention, counted"),
    "ex-flash-explore-fit": ("05_flashattention", "The score matrix in bytes"),
    "ex-flash-explore-speedup": ("05_flashattention", "FlashAttention, counted"),
    "ex-tc-operand-n": ("06_tensor_cores", "The shared-memory ridge, at the tensor clock"),
    "ex-intensity-decode": ("06_tensor_cores", "Batch one: a matrix-vector product"),
    "ex-tc-int4-batch": ("06_tensor_cores", "Narrower numbers"),
    "ex-tc-last-wave": ("06_tensor_cores", "Waves and tails"),
    "ex-tensor-explore-decode": ("06_tensor_cores", "Narrower numbers"),
    "ex-tensor-explore-waves": ("06_tensor_cores", "Waves and tails"),
    "ex-measured-stream": ("98_model_vs_measurements", "Every comparison"),
    "ex-presets-hbm-per-clock": ("99_appendix_presets", "How a preset becomes four bandwidths"),
    "ex-presets-explore-ridge": ("02_intensity", "The roofline"),
    "ex-bw-explore-launch": ("07_blackwell_low_precision", "The third regime: overhead"),
    "ex-bw-explore-tile": ("07_blackwell_low_precision", "Blackwell: the accumulator leaves the registers"),
    "ex-intensity-lab-coalesce": ("02_intensity", "Coalescing: bytes requested versus sectors moved"),
    "ex-intensity-lab-fuse": ("02_intensity", "Fusion: counting trips"),
    "ex-intensity-lab-triton-softmax": ("02_intensity", "Fusion: counting trips"),
    "ex-levels-lab-triton-order": ("04_roofline_levels", "The same order in Triton"),
    "ex-flash-lab-triton": ("05_flashattention", "The online softmax"),
    "ex-tiling-lab-banks": ("03_tiling", "Bank conflicts"),
    "ex-levels-lab-thread-tile": ("04_roofline_levels", "One roof per level"),
    "ex-flash-lab-block-loop": ("05_flashattention", "The online softmax"),
    "ex-capstone-budget": ("08_capstone", "The tasks and their budgets"),
    "ex-capstone-softmax": ("08_capstone", "Warp shuffles: a reduction without shared memory"),
    "ex-capstone-layernorm": ("08_capstone", "Warp shuffles: a reduction without shared memory"),
    "ex-capstone-gemm": ("03_tiling", "Rung 2: 16 x 16 tiles in shared memory"),
    "ex-capstone-attention": ("05_flashattention", "The online softmax"),
    "ex-decode-lab-split": ("09_decode", "Split-KV"),
    "ex-decode-kv-bytes": ("09_decode", "A quantised cache"),
    "ex-decode-long-context": ("09_decode", "The critical batch, with the cache"),
    "ex-parallel-best-gpus": ("10_parallel", "A decode step over several GPUs"),
    "ex-parallel-explore-steps": ("10_parallel", "A decode step over several GPUs"),
    "ex-parallel-explore-drafts": ("10_parallel", "More than one token a step"),
    "ex-decode-explore-throughput": ("09_decode", "Fewer key-value heads: GQA and MLA"),
}


def book_order() -> list[str]:
    """The chapters' names in the order of `_toc.yml`."""
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    files = [c["file"] for part in toc["parts"] for c in part["chapters"]]
    return [f.removeprefix("chapters/") for f in files if f.startswith("chapters/")]


def positions() -> tuple[dict, dict]:
    """(exercise label -> (chapter index, line), (chapter, heading) -> (chapter index, line))."""
    exercises, sections = {}, {}
    for index, name in enumerate(book_order()):
        lines = (ROOT / "chapters" / f"{name}.md").read_text().splitlines()
        for line_no, line in enumerate(lines):
            if m := re.fullmatch(r"#{2,4} (.+)", line):
                sections[name, m.group(1)] = (index, line_no)
            if m := re.fullmatch(r":label: (ex-\S+)", line):
                exercises[m.group(1)] = (index, line_no)
    return exercises, sections


EXERCISES, SECTIONS = positions()


def test_every_exercise_names_the_section_of_its_rule():
    assert set(EXERCISES) == set(RULE), "add each new exercise to RULE (and drop a removed one)"


@pytest.mark.parametrize("label", sorted(RULE))
def test_an_exercises_rule_is_taught_before_it(label):
    where = RULE[label]
    assert where in SECTIONS, f"{label}: no section {where[1]!r} in {where[0]}"
    assert SECTIONS[where] < EXERCISES[label], f"{label} comes before the section that teaches its rule, {where}"


@pytest.mark.parametrize("name", [n for n in book_order() if int(n.split("_")[0]) < 98])
def test_each_chapter_ends_with_what_to_read_next(name):
    """The last section of a chapter is "What to read next", citing its sources from references.bib."""
    text = (ROOT / "chapters" / f"{name}.md").read_text()
    last = re.split(r"^## ", text, flags=re.M)[-1]
    assert last.startswith("What to read next\n"), f"{name} ends with {last.splitlines()[0]!r}"
    assert re.search(r"\{cite:[pt]\}`", last), f"{name}: what to read next cites no source"
