"""Measurements on the reader's machine: shapes, units and bad input (never timings)."""

import matplotlib
import numpy as np
import pytest

import gpumodel as gm

matplotlib.use("Agg")


def test_working_sets_double_per_octave():
    sizes = gm.cuda.cpu_timing.working_sets(32 * 1024, 1024**2, per_octave=1)
    assert list(sizes) == [32 * 1024 * 2**i for i in range(6)]
    with pytest.raises(ValueError, match="smallest must not exceed largest"):
        gm.cuda.cpu_timing.working_sets(2**20, 2**10)


def test_cpu_sweep_returns_a_bandwidth_per_size():
    sizes, bandwidth = gm.cuda.cpu_timing.cpu_sweep([64 * 1024, 1024**2], target=0.002)
    assert list(sizes) == [64 * 1024, 1024**2]
    assert bandwidth.shape == (2,) and np.all(np.isfinite(bandwidth)) and np.all(bandwidth > 0)


def test_cpu_caches_are_sizes_in_bytes():
    for name, size in gm.cuda.cpu_timing.cpu_caches().items():
        assert name.startswith("L") and size >= 1024


def test_seconds_per_call_is_positive():
    assert gm.cuda.cpu_timing.seconds_per_call(lambda: sum(range(100)), target=0.001) > 0


def test_little_law():
    a100 = gm.gpu("A100-40GB")
    assert a100.in_flight("hbm") == pytest.approx(1.555e12 * 466 / 1.41e9)
    with pytest.raises(ValueError, match="no measured 'registers' latency"):
        a100.in_flight("registers")


def test_level_table_cites_latencies(monkeypatch):
    monkeypatch.setenv("GPUMODEL_BUILD", "book")  # roles on the site
    table = gm.course.tables.level_table("A100-40GB")
    assert "466 cycles ({cite:p}`luo2024hopper`, Table IV)" in table
    monkeypatch.delenv("GPUMODEL_BUILD")  # in Jupyter: the reference as linked text
    assert "{cite" not in gm.course.tables.level_table("A100-40GB") and "Luo" in gm.course.tables.level_table("A100-40GB")
    assert len(table.splitlines()) == 2 + 4


def test_chapter_one_figures_draw():
    fig = gm.course.plots.pipes("gemm_smem16", "A100-40GB", step=2, steps=6)
    assert "bound by shared memory" in fig.axes[0].get_title()
    preds = {k: gm.predict(w, gm.gpu("A100-40GB")) for k, w in gm.seed_kernels().items()}
    fig = gm.course.plots.busy_bars(preds)
    assert len(fig.axes) == 3 and all(len(ax.patches) == len(gm.BOUNDS) for ax in fig.axes)
    for ax, p in zip(fig.axes, preds.values()):  # the bound's bar, red, is full
        (red,) = [b for b in ax.patches if matplotlib.colors.same_color(b.get_facecolor(), "tab:red")]
        labels = [t.get_text() for t in ax.get_yticklabels()]
        assert red.get_width() == pytest.approx(100)
        assert labels[ax.patches.index(red)] == gm.course.plots.PART_LABELS[str(p.bound)]
    fig = gm.course.plots.sweep([("x", [1024, 2048], [1e10, 2e10])], {"L2": 5e10}, {"L2": 1536})
    assert fig.axes[0].get_xscale() == "log"


def test_diagrams_draw_what_they_say():
    import re

    fig = gm.course.plots.wave_map(16, 16, wave=40, group=4)
    titles = [ax.get_title() for ax in fig.axes[:2]]
    counts = [tuple(map(int, re.findall(r"needs (\d+) row panels of A\s+and (\d+) column", t)[0])) for t in titles]
    for order, (rows, cols) in zip(("row", "grouped"), counts):
        r, c = gm.waves.block_coordinates(16, 16, order, 4)
        assert (len(set(r[:40])), len(set(c[:40]))) == (rows, cols)
    assert counts[1][0] + counts[1][1] < counts[0][0] + counts[0][1]
    assert len(gm.course.plots.tiled_gemm_diagram(4, 4).axes[0].patches) > 16
    assert len(gm.course.plots.flash_diagram(8).axes[0].patches) > 64


@pytest.mark.parametrize("gpu", ["A100-40GB", "H100-SXM", "T4"])
def test_the_machine_and_the_data_path_show_the_gpus_own_figures(gpu):
    """Chapter 0's machine map labels each SM with the GPU's register file and shared memory and
    names its SM count; chapter 6's data path labels each level with the GPU's rate at the tensor clock."""
    g = gm.gpu(gpu)
    texts = " ".join(t.get_text() for t in gm.course.plots.machine_map(gpu).axes[0].texts)
    assert f"SM {int(g.sms.value) - 1}" in texts and f"all {int(g.sms.value)} SMs" in texts
    assert gm.fmt_capacity(g.register_file_per_sm.value) in texts and gm.fmt_capacity(g.smem_per_sm.value) in texts
    texts = " ".join(t.get_text() for t in gm.course.plots.tensor_data_path(gpu).axes[0].texts)
    tensor = g.running("fp16")
    for level in ("hbm", "l2", "smem"):
        assert gm.fmt_bandwidth(tensor.bandwidth(level)) in texts, level
    assert gm.fmt_flops(tensor.peak("fp16")) in texts
