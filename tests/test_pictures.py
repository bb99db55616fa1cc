"""The pictures of the mechanics (gpumodel.course.plots) draw what the model and the trace count:
the sectors of a warp's load, the banks and wavefronts of a shared-memory load, the shuffle
tree, a capstone kernel's bytes against its budget, and a lab trace's sites beside the verdict."""

import re

import matplotlib
import numpy as np
import pytest
from matplotlib.collections import PolyCollection
from matplotlib.text import Annotation

import gpumodel as gm

P = gm.course.plots
WARP = gm.hardware.WARP


def _collection(ax, label):
    (found,) = [c for c in ax.collections if isinstance(c, PolyCollection) and c.get_label() == label]
    return found


@pytest.mark.parametrize("stride, elem", [(1, 4), (2, 4), (3, 4), (8, 4), (32, 4), (1, 2), (5, 8), (1, 16)])
def test_the_sectors_figure_fills_exactly_the_sectors_the_simulation_counts(stride, elem):
    fig = P.warp_sectors((stride,), elem)
    (ax,) = fig.axes
    addresses = np.arange(WARP) * stride * elem
    touched = _collection(ax, "sectors touched").get_paths()
    starts = sorted({round(p.vertices[:, 0].min()) for p in touched})
    assert len(touched) == gm.simulate.sectors_touched(addresses)
    assert starts == sorted(set((addresses // gm.hardware.SECTOR_BYTES * gm.hardware.SECTOR_BYTES).tolist()))
    read = _collection(ax, "bytes read").get_paths()
    assert sorted(round(p.vertices[:, 0].min()) for p in read) == addresses.tolist()
    n = gm.simulate.sectors_touched(addresses)
    assert ax.get_title().startswith(f"stride {stride}: {n} sectors, {gm.fmt_bytes(n * 32)} moved")
    lines = {int(a) // gm.hardware.LINE_BYTES for a in addresses}
    assert f"in {len(lines)} line" in ax.get_title()


def test_the_sectors_figure_has_a_panel_per_stride_and_refuses_bad_ones():
    assert len(P.warp_sectors((1, 2, 8)).axes) == 3
    for bad in [(0,), (65,), (1.5,), ()]:
        with pytest.raises(ValueError, match="stride"):
            P.warp_sectors(bad)
    with pytest.raises(ValueError, match="elem_bytes"):
        P.warp_sectors((1,), 3)


def test_the_banks_figure_puts_each_word_in_its_bank_and_counts_wavefronts_as_the_simulation_does():
    rng = np.random.default_rng(0)
    cases = {"row": gm.simulate.warp_addresses((32, 32), 0, "row"),
             "column": gm.simulate.warp_addresses((32, 32), 0, "column"),
             "padded": gm.simulate.warp_addresses((32, 32), 1, "column"),
             "stride 2": 2 * np.arange(WARP),
             "broadcast": np.zeros(WARP, int),
             "random": rng.integers(0, 256, WARP)}
    fig = P.bank_wavefronts(cases)
    assert len(fig.axes) == len(cases)
    for ax, (title, addr) in zip(fig.axes, cases.items()):
        (image,) = ax.images
        cells = np.ma.filled(image.get_array().astype(float), np.nan)
        assert cells.shape == (gm.simulate.wavefronts(addr), 32), title
        for bank in range(32):
            words = np.unique(addr[addr % 32 == bank])
            column = cells[:, bank]
            assert np.isfinite(column).sum() == len(words), (title, bank)
            for row, word in enumerate(words):  # each cell holds a lane that reads its word
                assert addr[int(column[row])] == word
        assert ax.get_title() == f"{title}: {gm.simulate.wavefronts(addr)} wavefront" + ("s" if cells.shape[0] > 1 else "")
    default = P.bank_wavefronts()
    assert [ax.images[0].get_array().shape[0] for ax in default.axes] == [1, 32, 1]
    with pytest.raises(ValueError, match="32 word addresses"):
        P.bank_wavefronts({"short": np.arange(16)})


def test_the_shuffle_tree_carries_every_lane_to_lane_0_once():
    fig = P.shuffle_tree()
    (ax,) = fig.axes
    arrows = [t for t in ax.texts if isinstance(t, Annotation)]
    # lane i takes lane i + o for i < o in each round: 16 + 8 + 4 + 2 + 1 arrows, one per lane but lane 0
    assert len(arrows) == WARP - 1
    sources = sorted(round(a.xyann[1]) for a in arrows)  # where each arrow starts: the lane it carries
    assert sources == list(range(1, WARP))
    assert f"{WARP - 1} additions into lane 0" in ax.get_title()
    with pytest.raises(ValueError, match="do not sum every lane"):
        P.shuffle_tree((16, 8, 4, 2))
    with pytest.raises(ValueError, match="do not sum every lane"):
        P.shuffle_tree((16, 16, 8, 4, 2, 1))


@pytest.fixture(scope="module")
def softmax_trace():
    t = gm.course.capstone.TASKS["softmax"]
    args, _, _ = t.make()
    return gm.lab.trace(t.starter, t.kernel, t.grid, t.block, args)


def test_the_budget_figure_draws_the_traced_bytes_and_the_budget_of_each_level(softmax_trace):
    cap = gm.course.capstone
    fig = P.budget_levels(softmax_trace, cap.budget("softmax"), cap.LEVEL_NAMES, "softmax")
    (ax,) = fig.axes
    budget = cap.budget("softmax")
    floor = ax.get_xlim()[0]
    bars = {(round(p.get_y() + p.get_height() / 2, 2)): p for p in ax.patches}
    red = 0
    for i, level in enumerate(cap.LEVELS):
        traced, allowed = softmax_trace.bytes[level], budget[level]
        for y, value in ((i + 0.19, traced), (i - 0.19, allowed)):
            if value > 0:
                assert bars[round(y, 2)].get_x() + bars[round(y, 2)].get_width() == pytest.approx(value)
            else:
                assert round(y, 2) not in bars
        red += traced > allowed
    assert sum(matplotlib.colors.same_color(p.get_facecolor(), "tab:red") for p in ax.patches) == red > 0
    ratios = [t.get_text() for t in ax.texts]
    assert ratios == [f"{softmax_trace.bytes[lv] / budget[lv]:.2f}x" if budget[lv] else "none, none budgeted"
                      for lv in cap.LEVELS]
    assert [t.get_text() for t in ax.get_yticklabels()] == [cap.LEVEL_NAMES[lv].replace(" (", "\n(") for lv in cap.LEVELS]
    assert floor > 0


def test_the_lab_editor_draws_the_sites_of_its_trace_beside_the_verdict(monkeypatch, softmax_trace):
    from gpumodel.course import intensity

    monkeypatch.setenv("GPUMODEL_BUILD", "book")
    editor = gm.course.widgets.LabEditor(intensity.LAB_STARTER, intensity.check_coalesced_kernel)
    page = editor._repr_html_()
    (figure,) = re.findall(r'<div class="gm-lab-sites".*?</svg>', page, re.S)
    assert 'style="max-width: 100%; height: auto"' in figure
    # one traced and one ideal bar per load and store of the starter
    x = np.arange(intensity.LAB_N, dtype=np.float32)
    traced = gm.lab.trace(intensity.LAB_STARTER, "scale_by_two", intensity.LAB_GRID, intensity.LAB_BLOCK,
                          [x, np.zeros_like(x), intensity.LAB_N])
    assert figure.count("line ") >= len(traced.sites) > 0
    assert gm.course.widgets.sites_html(None) == ""
    broken = gm.course.widgets.LabEditor("__global__ void scale_by_two(", intensity.check_coalesced_kernel)
    assert "gm-lab-sites" not in broken._repr_html_()  # nothing traced, nothing drawn


def test_the_sites_figure_reads_on_a_phone(softmax_trace):
    fig = P.lab_sites(softmax_trace)
    sizes = [t.get_fontsize() for t in fig.findobj(matplotlib.text.Text) if t.get_visible() and t.get_text().strip()]
    assert fig.get_figwidth() <= P.WIDTH and min(sizes) >= P.SMALL
