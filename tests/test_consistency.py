"""Text, exercises and model agree (issue 28, item 5; issue 27, item 5): each case where a
chapter's sentence, an exercise or a figure once said something the model did not, held by
the computation the chapter glues from."""

import pathlib

import matplotlib
import pytest

import gpumodel as gm

matplotlib.use("Agg")
CHAPTERS = pathlib.Path(__file__).resolve().parent.parent / "chapters"


def chapter(name: str) -> str:
    return (CHAPTERS / f"{name}.md").read_text()


def test_rung_one_is_bound_by_the_model_itself():
    """The naive GEMM's bound is the model's (its loads through the L1/shared-memory path),
    not the best kernel's compute time, and the ladder figure labels what predict says."""
    a100 = gm.gpu("A100-40GB")
    naive, best = (gm.predict(gm.gemm(4096, 4096, 4096, block=gm.kernel_info.info(k).block,
                                      thread=gm.kernel_info.info(k).thread), a100) for k in ("gemm_naive", "gemm_reg128"))
    assert naive.bound == "smem" and naive.time > 3 * best.time and best.bound == "compute"
    assert naive.level_times["smem"] == pytest.approx(128 * 4096**2 / 32 * (2 * 4096 + 1) / a100.bandwidth("smem"))
    fig = gm.course.plots.ladder("A100-40GB")
    assert fig.axes[0].get_title().endswith(f"{gm.fmt_time(naive.time)}, bound: {gm.course.plots.PART_LABELS['smem']}")
    assert 'naive = gm.predict(rungs["gemm_naive"], "A100-40GB")' in chapter("03_tiling")
    assert "request estimate" not in chapter("03_tiling")


def test_exercise_1_1_solution_holds_on_the_t4():
    """On the T4 the 16 x 16 kernel's L2 needs longer than its arithmetic; the solution says so."""
    p = gm.predict(gm.seed_kernels()["gemm_smem16"], "T4")
    assert p.level_times["l2"] > p.compute_time and p.bound == "smem"
    text = chapter("01_hierarchy")
    assert "asked for far less" not in text and "{glue:md}`t4_l2_over_compute` times as long as the arithmetic" in text


@pytest.mark.parametrize("kernel, copies, operands", [("gemm_smem16", 4 * 2 / 16 / 2, 2 + 1), ("gemm_reg128", 4 * 2 / 128 / 2, 0.5)])
def test_chapter_1_bytes_per_flop_are_derived(kernel, copies, operands):
    """Chapter 1's bytes per flop: tile copies plus operand reads. The 16 x 16 kernel's B word
    is one 4-byte read per multiply-add (2 B/flop), its A words four to a 128-bit load that the
    data path serves in half the wavefronts (1 B/flop); the 8 x 8 thread tile reads 16 words
    for 64 multiply-adds."""
    w = gm.seed_kernels()[kernel]
    assert gm.course.hierarchy.smem_bytes_per_flop(kernel) == pytest.approx((copies, operands))
    assert sum(gm.course.hierarchy.smem_bytes_per_flop(kernel)) == pytest.approx(float(w.bytes["smem"] / w.flops))


def test_chapter_4_per_wave_figures_are_called_averages():
    traffic = gm.waves.gemm_hbm(8192, 8192, 8192, gpu="A100-40GB", blocks_per_sm=2)
    assert traffic.rows_per_wave != int(traffic.rows_per_wave)  # an average, not a count
    assert "on average\n{glue:md}`row_rows`" in chapter("04_roofline_levels")
    assert "on average {glue:md}`g8_rows`" in chapter("04_roofline_levels")


def test_one_h100_shared_memory_bandwidth_or_both_named():
    """Chapters 1 and 99 give the H100's shared memory at its FP32 boost clock, chapter 6 at the
    tensor clock; chapter 6 names both and says why."""
    h100 = gm.gpu("H100-SXM")
    assert h100.running("fp16").bandwidth("smem") < h100.bandwidth("smem")
    text = chapter("06_tensor_cores")
    assert 'glue("h100_smem_bw_boost", gm.fmt_bandwidth(h100.bandwidth("smem")))' in text
    assert "chapters 1 and 99 give {glue:md}`h100_smem_bw_boost`" in text


def test_the_sfu_ratio_is_at_one_clock():
    """Chapter 5's tensor:SFU ratio: both rates at the tensor clock, 256 on the H100."""
    assert round(gm.course.flashattention.tensor_over_sfu("H100-SXM")) == 256
    assert 'gm.course.flashattention.tensor_over_sfu(h100)' in chapter("05_flashattention")


def test_fa2_and_fa3_are_not_compared_as_like_for_like():
    """Chapter 6: FlashAttention-2's H100 records are forward+backward, FlashAttention-3's
    forward; the text says they measure different work instead of crediting the gap to the
    instructions alone."""
    runs = {c.record.what.split(",")[0]: c.record.run["passes"] for c in gm.published.comparisons(chapter=5)
            if c.record.gpu == "H100-SXM" and c.record.what.startswith("FlashAttention")}
    assert runs == {"FlashAttention-2": "forward+backward", "FlashAttention-3": "forward"}
    text = chapter("06_tensor_cores")
    assert "The byte count did not change between them" not in text and "Forward against forward needs" in text


def test_the_flash_explorer_assumes_what_the_chapter_text_does():
    """Exercise 5.4's explorer and chapter 5's text: L2 serves FlashAttention's re-reads of K and V."""
    text = chapter("05_flashattention")
    assert gm.course.flashattention.FLASH_L2_REUSE and text.count('"flash", l2_reuse=True') >= 2
    exercise = gm.course.flashattention.flash_speedup()
    flash = gm.predict(gm.attention(1, 32, 16384, 64, "fp16", "flash", l2_reuse=True), "H100-SXM")
    assert flash.bound == "compute" and "L2 serving" in exercise.rules["right"]
    assert exercise.check(float(gm.predict(gm.attention(1, 32, 16384, 64, "fp16", "standard"), "H100-SXM").time / flash.time))
