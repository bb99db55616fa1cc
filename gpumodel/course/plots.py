"""Figures drawn from the model (matplotlib). Each function returns a matplotlib figure and
says in its docstring which chapter draws it. `gpu` is a `GPU` or a preset name, `gpus` a
sequence of them."""

from __future__ import annotations

import io
import re
import textwrap

import matplotlib
import numpy as np
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle
from matplotlib.ticker import LogFormatter, LogLocator, NullFormatter

matplotlib.rcParams["svg.fonttype"] = "none"  # text stays text: small files, sharp at any width
matplotlib.rcParams["font.sans-serif"] = ["DejaVu Sans", "Verdana", "Arial", "Helvetica"]  # each text names them


def svg(fig) -> str:
    """A figure as SVG text (text stays text: legible at any width), the same text for the same
    figure (fixed ids, no date), without what a browser does not use: the XML prologue and the
    metadata, indentation, the ids no reference names, digits past a tenth of a point in the
    markup (a phone pixel is about 0.75 pt; the text is left alone)."""
    buf = io.StringIO()
    with matplotlib.rc_context({"svg.hashsalt": "gpumodel"}):
        fig.savefig(buf, format="svg", metadata={"Date": None})
    text = re.sub(r"(?s)\A.*?(?=<svg )|<metadata>.*?</metadata>\n?", "", buf.getvalue())
    text = re.sub(r"\n\s+", "\n", text)
    text = re.sub(r' id="(?:figure|axes|patch|line2d|text|xtick|ytick|matplotlib\.axis|legend)_\d+"', "", text)
    return re.sub(r"<[^>]*>", lambda tag: re.sub(r"(\.\d)\d+", r"\1", tag.group()), text)


try:  # in Jupyter and on the site, figures are SVG, so they read on a phone as on a desktop
    from IPython import get_ipython
    from matplotlib_inline.backend_inline import set_matplotlib_formats

    set_matplotlib_formats("svg")
    if get_ipython() is not None:  # shown as `svg` writes them
        get_ipython().display_formatter.formatters["image/svg+xml"].for_type(Figure, svg)
except ImportError:  # matplotlib outside IPython
    pass

from .. import _check, kernel_info, presets
from ..hardware import LEVELS, LINE_BYTES, SECTOR_BYTES, SMEM_BANKS, WARP
from ..model import BOUNDS, predict
from ..tiles import is_legal
from ..units import LEVEL_NAMES, fmt_bandwidth, fmt_bytes, fmt_capacity, fmt_flops, fmt_time, superscript
from ..workloads import catalogue, gemm, kernel_gemm, seed_kernels, strided_read

def _figure(nrows: int = 1, ncols: int = 1, *, figsize, **kwargs):
    """A figure with constrained layout and its axes (`Figure.subplots(nrows, ncols, **kwargs)`),
    kept out of pyplot: Jupyter draws it once, when the cell shows it, where a pyplot figure is
    also redrawn at the end of the cell."""
    fig = Figure(figsize=figsize, layout="constrained")
    return fig, fig.subplots(nrows, ncols, **kwargs)


SMALL = 9
"""The smallest text a figure shows (pt): 11 CSS px or more on a phone, 12 as drawn (WIDTH)."""
WIDTH = 3.7
"""The widest a figure is drawn (inches): 266 pt, 355 CSS px, so that in the 342 CSS px text column
of a 390 px phone, where it is scaled to the column, SMALL-pt text shows at 11.6 CSS px (at 4.6 in
it showed at 9.3 px); where the column has room the site shows it 4/3 as large (473 px), SMALL pt
then the prose's 16 px. Panels that would not fit side by side are stacked, and a title or a
legend that would not fit the width takes more lines."""


TITLE_CHARS = 40
"""The most characters a line of a 10-pt title holds across WIDTH (about 0.55 em a character)."""


def hierarchy_figure(gpus=("V100", "A100-40GB", "H100-SXM")):
    """Bandwidth (TB/s) and capacity (bytes) of the four levels for each named preset, on
    log scales, one above the other. The appendix "GPU presets" and chapter 1."""
    gpus = [presets.gpu(g) for g in gpus]
    fig, (ax_bw, ax_cap) = _figure(2, 1, figsize=(WIDTH, 6.2))
    x = np.arange(len(LEVELS))
    width = 0.8 / len(gpus)
    for i, g in enumerate(gpus):
        offset = (i - (len(gpus) - 1) / 2) * width
        ax_bw.bar(x + offset, [g.bandwidth(lv) / 1e12 for lv in LEVELS], width, label=g.name)
        ax_cap.bar(x + offset, [g.capacity(lv) for lv in LEVELS], width, label=g.name)
    for ax in (ax_bw, ax_cap):
        _log(ax.yaxis)
        _levels_ticks(ax, x)
        ax.grid(axis="y", which="major", alpha=0.3)
    ax_bw.set_ylabel("bandwidth (TB/s, log)")
    ax_bw.set_title("Faster toward the arithmetic", fontsize=10)
    ax_cap.yaxis.set_major_formatter(lambda v, _: fmt_bytes(v, digits=1))
    ax_cap.set_ylabel("capacity, whole GPU (log)")
    ax_cap.set_title("Bigger away from it", fontsize=10)
    ax_cap.legend(loc="upper left", fontsize=SMALL)
    return fig


def preset_levels(gpu="A100-40GB"):
    """One preset's four levels: bandwidth and capacity, labelled with their values, on log
    axes fixed across every preset so that frames can be compared. The appendix's player."""
    g = presets.gpu(gpu)
    everyone = [presets.gpu(n) for n in presets.preset_names()]
    fig, (ax_bw, ax_cap) = _figure(2, 1, figsize=(WIDTH, 5.4))
    labels = np.arange(len(LEVELS))
    bandwidth = [g.bandwidth(lv) for lv in LEVELS]
    capacity = [g.capacity(lv) for lv in LEVELS]
    bars = ax_bw.bar(labels, [b / 1e12 for b in bandwidth], color="tab:blue")
    ax_bw.bar_label(bars, [fmt_bandwidth(b) for b in bandwidth], fontsize=SMALL)
    bars = ax_cap.bar(labels, capacity, color="tab:orange")
    ax_cap.bar_label(bars, [fmt_capacity(c) for c in capacity], fontsize=SMALL)
    lows = [min(x.bandwidth(lv) for x in everyone) / 1e12 for lv in LEVELS]
    highs = [max(x.bandwidth(lv) for x in everyone) / 1e12 for lv in LEVELS]
    ax_bw.set_ylim(min(lows) / 2, max(highs) * 3)
    caps = [x.capacity(lv) for x in everyone for lv in LEVELS]
    ax_cap.set_ylim(min(caps) / 2, max(caps) * 4)
    for ax in (ax_bw, ax_cap):
        _log(ax.yaxis)
        _levels_ticks(ax, labels)
    ax_cap.yaxis.set_major_formatter(lambda v, _: fmt_bytes(v, digits=1))
    ax_bw.set_ylabel("bandwidth (TB/s)")
    ax_cap.set_ylabel("capacity, whole GPU")
    fig.suptitle(f"{g.name}: the four levels", fontsize=10)
    return fig


PART_LABELS = {"compute": "ALUs", "sfu": "SFUs", **LEVEL_NAMES}


def busy_bars(predictions: dict):
    """How busy each part is (time / kernel time) for each named prediction: one panel of
    bars per kernel, stacked, the bound at 100 %. Chapter 1."""
    parts = list(BOUNDS)
    fig, axes = _figure(len(predictions), 1, figsize=(WIDTH, 0.5 + 1.5 * len(predictions)), sharex=True, squeeze=False)
    for ax, (name, p) in zip(axes[:, 0], predictions.items()):
        values = [100 * float(p.busy[part]) for part in parts]
        ax.barh([PART_LABELS[part] for part in parts], values,
                color=["tab:red" if p.bound == part else "tab:blue" for part in parts])
        ax.invert_yaxis()
        ax.tick_params(axis="y", labelsize=SMALL)
        ax.set_xlim(0, 105)
        ax.set_title(f"{name}\n{p.gpu.name}, {fmt_time(p.time)}\nbound: {PART_LABELS[str(p.bound)]}", fontsize=SMALL)
    axes[-1, 0].set_xlabel("busy (% of kernel time)")
    return fig


def pipes(kernel: str = "vector_add", gpu="A100-40GB", step: int = 0, steps: int = 12):
    """The pipes: one per level, thickness to scale with its bandwidth, packets moving at
    the rate the kernel actually uses it (busy fraction); the bound's pipe in red. `step`
    of `steps` is the animation's time. Chapter 1."""
    w = seed_kernels()[kernel]
    g = presets.gpu(gpu)
    p = predict(w, g)
    widest = g.bandwidth("registers")
    fig, ax = _figure(figsize=(WIDTH, 3.4))
    y = 0.0
    for level in LEVELS:
        thick = 0.9 * g.bandwidth(level) / widest
        busy = float(p.busy[level])
        color = "tab:red" if p.bound == level else "tab:blue"
        ax.add_patch(Rectangle((0, y - thick / 2), 10, max(thick, 0.004), color=color, alpha=0.25, lw=0))
        shift = (step / steps) * 2 * busy  # a fully busy pipe moves its packets two gaps per loop
        xs = (np.arange(10) + 0.5 + shift) % 10
        if busy > 0:
            ax.scatter(xs, np.full(10, y), s=12 + 60 * thick, color=color, zorder=3)
        ax.text(-0.2, y, f"{LEVEL_NAMES[level]}\n{fmt_bandwidth(g.bandwidth(level))}", ha="right", va="center", fontsize=SMALL)
        ax.text(10.2, y, f"{100 * busy:.0f}%\nbusy", ha="left", va="center", fontsize=SMALL, color=color)
        y -= 1.0
    compute = float(p.busy["compute"])
    ax.text(5, 0.75, f"ALUs {100 * compute:.0f}% busy" + ("  (bound)" if p.bound == "compute" else ""),
            ha="center", fontsize=SMALL, color="tab:red" if p.bound == "compute" else "black")
    ax.set_xlim(-3.9, 12.4)
    ax.set_ylim(y + 0.5, 1.0)
    ax.axis("off")
    ax.set_title(f"{kernel_info.label(kernel)} on the {g.name}:\n{fmt_time(p.time)}, bound by "
                 f"{PART_LABELS[str(p.bound)]}", fontsize=10)
    return fig


class PlainLogFormatter(LogFormatter):
    """LogFormatter's tick labels without its e-notation: 1e-02 -> 0.01 and 3e+04 -> 30000,
    and past them powers as a reader writes them: 1e+12 -> 10¹², 2e+06 -> 2 × 10⁶."""

    E_NOTATION = re.compile(r"^([\d.]+)e([-+\u2212])0*(\d+)$")

    def __call__(self, x, pos=None):
        label = super().__call__(x, pos)
        found = self.E_NOTATION.match(label)
        if not found:
            return label
        if 1e-3 <= x < 1e5:
            return f"{x:g}"
        power = "10" + superscript(int(found[3]) * (1 if found[2] == "+" else -1))
        return power if found[1] == "1" else f"{found[1]} × {power}"


def _log(axis, base: float = 10) -> None:
    """Make `axis` (ax.xaxis or ax.yaxis) logarithmic, its ticks labelled as plain numbers
    (60, not 6x10^1) and, past them, powers (10¹², never 1e+12): text that reads on a phone."""
    (axis.axes.set_xscale if axis is axis.axes.xaxis else axis.axes.set_yscale)("log", base=base)
    axis.set_major_formatter(PlainLogFormatter(base))
    axis.set_minor_formatter(PlainLogFormatter(base, labelOnlyBase=False))


def _legend_below(ax) -> None:
    """`ax`'s legend under its figure, outside every panel (no line hides behind it), in two
    columns where its labels are short enough to fit them, else in one, the figure made taller
    by the lines that adds, so that its panels keep their height."""
    handles, labels = ax.get_legend_handles_labels()
    # a column holds its line (about 3 SMALL wide with its padding) and its label (about 0.6 SMALL a character)
    ncols = 2 if 3 * SMALL + 0.6 * SMALL * max(map(len, labels)) <= WIDTH * 72 / 2 else 1
    if ncols == 1:  # a legend's line is about 1.5 SMALL tall (pt; 72 to the inch)
        ax.figure.set_figheight(ax.figure.get_figheight() + len(labels) // 2 * 1.5 * SMALL / 72)
    ax.figure.legend(handles, labels, loc="outside lower center", ncols=ncols, fontsize=SMALL)


def _levels_ticks(ax, x) -> None:
    """The four levels' names under `x`, a word a line: they fit a narrow panel."""
    ax.set_xticks(x, [LEVEL_NAMES[lv].replace(" ", "\n") for lv in LEVELS], fontsize=SMALL)


def _log_axes(ax, xlabel: str, ylabel: str, title: str = "", legend: str = "inside") -> None:
    """Powers of two along x, log y, labels, an optional title and the legend: "inside" the
    axes, "below" the figure (`_legend_below`) or "none"."""
    _log(ax.xaxis, base=2)
    _log(ax.yaxis)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title, fontsize=10)
    if legend == "inside":
        ax.legend(fontsize=SMALL)
    elif legend == "below":
        _legend_below(ax)


def _working_set_axes(ax, ylabel: str) -> None:
    """Log axes of bandwidth against working set, sizes in binary units."""
    _log_axes(ax, "working set", ylabel)
    ax.xaxis.set_major_locator(LogLocator(base=2**5))  # a label every 32x: they fit a phone
    ax.xaxis.set_major_formatter(lambda v, _: fmt_capacity(v))
    ax.xaxis.set_minor_formatter(NullFormatter())


def sweep(curves: list, marks: dict | None = None, capacities: dict | None = None):
    """Bandwidth against working set, log-log. `curves`: (label, sizes in bytes, bandwidth
    in bytes/s) each; `marks`: label -> bandwidth drawn as a horizontal line (a preset's
    figures); `capacities`: label -> bytes drawn as a vertical line (a cache's size).
    Chapter 1's "measure yours"."""
    fig, ax = _figure(figsize=(WIDTH, 3.6))
    for label, sizes, bandwidth in curves:
        ax.plot(sizes, np.asarray(bandwidth) / 1e9, marker="o", ms=3, label=label)
    for i, (label, value) in enumerate((marks or {}).items()):
        ax.axhline(value / 1e9, ls="--", lw=1, color=f"C{i + 3}", label=f"{label}: {fmt_bandwidth(value)}")
    for label, value in (capacities or {}).items():
        ax.axvline(value, ls=":", lw=1, color="grey")
        ax.annotate(f"{label} {fmt_capacity(value)}", (value, 0.02), xycoords=("data", "axes fraction"),
                    rotation=90, fontsize=SMALL, color="grey", ha="right", va="bottom")
    _working_set_axes(ax, "bandwidth (GB/s)")
    return fig


def published_staircase(comparisons: list):
    """Published read bandwidths against working set (the "read" records among
    `comparisons`, from `gpumodel.published`), each GPU's points beside the model's
    staircase for it: L2 bandwidth while the data fits in L2 (more where L1 can serve part
    of a read of chunks, as gpu-l2-cache's: the runs' `chunk` and `threads`, sizes then whole
    numbers of chunks), a slope down to HBM after. Chapter 1."""
    from ..waves import warm_read_time

    reads = [c for c in comparisons if c.record.run["kind"] == "read"]
    if not reads:
        raise ValueError("comparisons must hold at least one read record")
    fig, ax = _figure(figsize=(WIDTH, 3.6))
    for i, gpu in enumerate(dict.fromkeys(c.record.gpu for c in reads)):
        mine = sorted((c for c in reads if c.record.gpu == gpu), key=lambda c: c.record.run["bytes"])
        sizes = np.array([c.record.run["bytes"] for c in mine], dtype=float)
        ax.plot(sizes, [c.measured / 1e9 for c in mine], "o", color=f"C{i}", ms=5, label=f"{gpu}, published")
        runs = {(c.record.run.get("chunk"), c.record.run.get("threads")) for c in mine}
        chunk, threads = runs.pop() if len(runs) == 1 else (None, None)
        grid = np.round(np.geomspace(sizes.min() / 2, sizes.max() * 2, 200))
        if chunk is not None:
            grid = np.unique(np.maximum(np.round(grid / chunk), 1)) * chunk
        ax.plot(grid, grid / warm_read_time(gpu, grid, chunk, threads) / 1e9, "--", color=f"C{i}", lw=1,
                label=f"{gpu}, model")
    _working_set_axes(ax, "read bandwidth (GB/s)")
    return fig


def roofline(gpus=("A100-40GB",), points=(), math: str = "fp32", level: str = "hbm"):
    """The roofline of each GPU against one level: attainable FLOP/s =
    min(peak, intensity x bandwidth), log-log, the ridge marked. `points` are (label,
    intensity in FLOP/B), drawn on the first GPU's roof. Chapter 2."""
    fig, ax = _figure(figsize=(WIDTH, 3.6))
    x = np.logspace(-2, 3, 200)
    gpus = [presets.gpu(g).running(math) for g in gpus]
    for i, g in enumerate(gpus):
        peak, bw = g.peak(math), g.bandwidth(level)
        ax.plot(x, np.minimum(peak, x * bw) / 1e12, color=f"C{i}", label=f"{g.name}: ridge {peak / bw:.3g} FLOP/B")
        ax.plot([peak / bw], [peak / 1e12], "o", color=f"C{i}", ms=4)
    if points:
        g = gpus[0]
        peak, bw = g.peak(math), g.bandwidth(level)
        for label, intensity in points:
            ax.plot([intensity], [min(peak, intensity * bw) / 1e12], "s", color="black", ms=5)
            left = intensity > 30  # labels on the right half of the axis go to the point's left
            ax.annotate(label, (intensity, min(peak, intensity * bw) / 1e12), textcoords="offset points",
                        xytext=(-6 if left else 6, -12), ha="right" if left else "left", fontsize=SMALL)
    _log(ax.xaxis)
    _log(ax.yaxis)
    ax.set_xlabel(f"arithmetic intensity at {LEVEL_NAMES[level]} (FLOP/B)")
    ax.set_ylabel(f"attainable {math} TFLOP/s")
    _legend_below(ax)
    return fig


def coalescing(strides=range(1, 33), gpu="A100-40GB", measured: dict | None = None):
    """Useful bandwidth of a strided fp32 read against the stride: the sector model's
    prediction on `gpu` (and, if given, `measured`: stride -> useful bytes/s). Chapter 2."""
    strides = np.asarray(list(strides))
    g = presets.gpu(gpu)
    useful = 8.0  # bytes per element: one read, one write
    moved = np.asarray([float(strided_read(1 << 20, s).bytes["hbm"]) / (1 << 20) for s in strides])
    fig, ax = _figure(figsize=(WIDTH, 3.6))
    ax.plot(strides, g.bandwidth("hbm") * useful / moved / 1e9, marker="o", ms=3, label=f"model, {g.name}")
    for name, points in (measured or {}).items():
        ax.plot(list(points), np.asarray(list(points.values())) / 1e9, "s", label=name)
    ax.set_xlabel("stride (elements)")
    ax.set_ylabel("useful bandwidth (GB/s)")
    ax.set_ylim(bottom=0)
    ax.legend(fontsize=SMALL)
    return fig


def lab_sites(trace):
    """Sectors (global) or wavefronts (shared) per request of each load and store in a traced
    kernel (`gm.lab.trace`), beside the ideal, by source line (and column, where two accesses of
    one kind share a line). Chapter 2's lab."""
    sites = sorted(trace.sites, key=lambda s: (s.line, s.space, s.write, s.column))
    kinds = [(s.line, s.kind) for s in sites]
    got = [s.cost[1] / s.instructions for s in sites]
    ideal = [s.cost[2] / s.instructions for s in sites]
    y = np.arange(len(sites))
    fig, ax = _figure(figsize=(WIDTH, 1.5 + 0.36 * len(sites)))
    ax.barh(y + 0.2, got, 0.4, label="traced")
    ax.barh(y - 0.2, ideal, 0.4, color="grey", label="ideal")
    ax.set_yticks(y, [f"{s.where if kinds.count((s.line, s.kind)) > 1 else f'line {s.line}'}:\n{s.kind}" for s in sites],
                  fontsize=SMALL)
    ax.invert_yaxis()
    ax.set_xlabel("per warp request: sectors (global)\nor wavefronts (shared)", fontsize=SMALL)
    ax.set_title(f"{trace.kernel}: each access,\ntraced on the CPU", fontsize=10)
    fig.legend(fontsize=SMALL, ncols=2, loc="outside lower center")  # under the figure, never over the bars
    return fig


def tile_traffic(gpus=("A100-40GB", "H100-SXM"), n: int = 4096, tiles=(8, 16, 32, 64, 128, 256)):
    """Bytes per level and the time each level needs against the block tile b (b x b
    tiles, 8 x 8 per thread where they fit) for an n^3 FP32 GEMM. Chapter 3."""
    b = np.asarray(tiles, dtype=float)
    t = np.minimum(8, b)
    w = gemm(n, n, n, block=(b, b), thread=(t, t))
    fig, (ax_b, ax_t) = _figure(2, 1, figsize=(WIDTH, 7), sharex=True)
    for i, level in enumerate(("smem", "l2", "hbm")):
        ax_b.plot(b, w.bytes[level], marker="o", ms=3, color=f"C{i}", label=LEVEL_NAMES[level])
    ax_b.plot(b, 2 * n**3 * 4 / b, ls=":", color="grey", label="2n³s / b, so I = b/s")
    for j, g in enumerate(presets.gpu(g) for g in gpus):
        p = predict(w, g)
        for i, level in enumerate(("smem", "l2")):
            ax_t.plot(b, p.level_times[level] * 1e3, marker="o", ms=3, color=f"C{i}",
                      ls="-" if j == 0 else "--", label=f"{LEVEL_NAMES[level]}, {g.name}")
        ax_t.axhline(float(p.compute_time[0]) * 1e3, color="black", ls="-" if j == 0 else "--", lw=1, label=f"compute, {g.name}")
    _log_axes(ax_b, "", "bytes moved")  # the panels share the x axis below
    _log_axes(ax_t, "block tile b (b x b)", "time the level needs (ms)", legend="below")
    return fig


PART_FLOOR_MS = 1e-2
"""Where the axis of each part's time starts (ms): a part with no work is drawn as a sliver."""


def _part_times_ms(p) -> list[float]:
    """Each part's time of prediction `p` in ms, in BOUNDS order, a part with no work a sliver."""
    return [max(float(p.times[part]) * 1e3, PART_FLOOR_MS / 10) for part in BOUNDS]


def _part_times_axis(ax) -> None:
    """`ax`'s x axis: each part's time in ms, logarithmic from PART_FLOOR_MS."""
    _log(ax.xaxis)
    ax.set_xlim(left=PART_FLOOR_MS)
    ax.set_xlabel("time the part needs (ms)")


def ladder(gpu="A100-40GB", n: int = 4096):
    """The model's time of each part (ALUs and the four levels) for each rung of the GEMM
    ladder on one GPU, log scale, the bound marked (the naive rung's loads charged at the
    L1/shared-memory path, as `gemm` does). Chapter 3."""
    g = presets.gpu(gpu)
    preds = {kernel_info.label(k): predict(kernel_gemm(k, n, n, n), g)
             for k in kernel_info.GEMM_LADDER}
    fig, axes = _figure(len(preds), 1, figsize=(WIDTH, 0.6 + 1.3 * len(preds)), sharex=True, squeeze=False)
    for ax, (rung, p) in zip(axes[:, 0], preds.items()):
        ax.barh([PART_LABELS[part] for part in BOUNDS], _part_times_ms(p),
                color=["tab:red" if p.bound == part else "tab:blue" for part in BOUNDS])
        ax.invert_yaxis()
        ax.tick_params(axis="y", labelsize=SMALL)
        ax.set_title(f"{rung}\n{fmt_time(p.time)}, bound: {PART_LABELS[str(p.bound)]}", fontsize=SMALL)
    _part_times_axis(axes[-1, 0])
    fig.suptitle(f"{n}³ FP32 GEMM on the {g.name}:\nthe bound (red) of each rung", fontsize=10)
    return fig


def gemm_levels(block: int = 128, thread: int = 8, gpu="A100-40GB", n: int = 4096):
    """Predicted time of each part for an n^3 FP32 GEMM with block x block tiles and
    thread x thread results per thread: chapter 3's tile explorer."""
    g = presets.gpu(gpu)
    if not is_legal(g, block, block, thread, thread):
        threads = (block // thread) ** 2 if block % thread == 0 else "a fractional number of"
        raise ValueError(f"{block}x{block} tiles with {thread}x{thread} per thread cannot launch on the {g.name}: "
                         f"{threads} threads per block (32 to {g.capability.max_threads_per_block} can), or "
                         "too much shared memory or too many registers")
    p = predict(gemm(n, n, n, block=(block, block), thread=(thread, thread)), g)
    fig, ax = _figure(figsize=(WIDTH, 3.0))
    colors = ["tab:red" if part == p.bound else "tab:blue" for part in BOUNDS]
    ax.barh([PART_LABELS[b] for b in BOUNDS][::-1], _part_times_ms(p)[::-1], color=colors[::-1])
    _part_times_axis(ax)
    ax.tick_params(axis="y", labelsize=SMALL)
    ax.set_title(f"{block}x{block} tiles, {thread}x{thread} per thread,\non the {g.name}: "
                 f"{fmt_time(p.time)}\nbound: {PART_LABELS[str(p.bound)]}", fontsize=10)
    return fig


def roofline_levels(kernel: str = "gemm_smem16", gpu="A100-40GB"):
    """A roofline per level for one kernel of `gm.catalogue()`: each level's roof
    (intensity x its bandwidth) under the compute ceiling, and the kernel at its intensity
    for that level. The point that sits lowest is the level that binds. Chapter 4."""
    w = catalogue()[kernel]
    p = predict(w, gpu)
    g = p.gpu  # at the clock the workload's math runs at
    peak = g.peak(w.math)
    fig, ax = _figure(figsize=(WIDTH, 3.6))
    x = np.logspace(-3, 4, 200)
    ax.axhline(peak / 1e12, color="black", lw=1.5, label=f"compute: {fmt_flops(peak)}")
    for i, level in enumerate(LEVELS):
        bw = g.bandwidth(level)
        ax.plot(x, np.minimum(peak, x * bw) / 1e12, color=f"C{i}", lw=1, label=f"{LEVEL_NAMES[level]}: {fmt_bandwidth(bw)}")
        intensity = float(p.intensity[level])
        if np.isfinite(intensity) and intensity > 0:
            y = min(peak, intensity * bw) / 1e12
            bound = p.bound == level
            ax.plot([intensity], [y], "o", color=f"C{i}", ms=9 if bound else 6, mec="black" if bound else f"C{i}")
    _log(ax.xaxis)
    _log(ax.yaxis)
    ax.set_xlim(1e-3, 1e4)
    ax.set_xticks([1e-3, 1e-1, 1e1, 1e3])
    ax.set_xlabel("arithmetic intensity at each level (FLOP/B)")
    ax.set_ylabel(f"attainable {w.math} TFLOP/s")
    ax.set_title(textwrap.fill(f"{kernel_info.label(kernel)} on the {g.name}:", TITLE_CHARS)  # a long name takes two lines
                 + f"\nbound by {PART_LABELS[str(p.bound)]}, {fmt_time(p.time)}",
                 fontsize=10)
    _legend_below(ax)
    return fig


def wave_traffic(gpu="A100-40GB", size: int = 8192, groups=(1, 2, 4, 8, 16, 32, 64), drift_fractions=(1, 1 / 8)):
    """Chapter 4: HBM bytes of an fp16 size^3 GEMM (128 x 128 tiles, two blocks per SM)
    under the wave model, against the group size of the block order, for blocks of a wave
    drifting over all of K or over a fraction of it; row-major order and the bounds as
    lines."""
    from ..waves import gemm_hbm

    fig, ax = _figure(figsize=(WIDTH, 3.6))
    for j, frac in enumerate(drift_fractions):
        drift = max(1, int(size * frac))
        grouped = [gemm_hbm(size, size, size, gpu=gpu, blocks_per_sm=2, order="grouped", group=gr, drift_k=drift).hbm
                   for gr in groups]
        row = gemm_hbm(size, size, size, gpu=gpu, blocks_per_sm=2, drift_k=drift)
        ax.plot(groups, np.asarray(grouped) / 1e9, marker="o", ms=3, color=f"C{j}", label=f"grouped, drift {frac:g} K")
        ax.axhline(row.hbm / 1e9, color=f"C{j}", ls="--", lw=1, label=f"row-major, drift {frac:g} K")
    ax.axhline(row.no_reuse / 1e9, color="black", ls=":", lw=1, label="every tile from HBM")
    ax.axhline(row.compulsory / 1e9, color="grey", ls=":", lw=1, label="each byte once")
    _log(ax.xaxis, base=2)
    _log(ax.yaxis)
    ax.set_xlabel("group size (rows of tiles per group)")
    ax.set_ylabel("HBM traffic (GB)")
    ax.set_title(f"fp16 {size}³ GEMM, 128 x 128 tiles,\non the {presets.gpu(gpu).name}", fontsize=10)
    _legend_below(ax)
    return fig


def warm_reads(gpus=("A100-40GB", "H100-SXM"), recorded=()):
    """Chapter 4's "small benchmarks lie": the effective bandwidth of reading a buffer a
    second time, from L2 while it fits and from HBM after, for each preset; `recorded`
    sweeps (label, sizes, bandwidth) drawn beside."""
    from ..waves import warm_read_time

    fig, ax = _figure(figsize=(WIDTH, 3.6))
    for i, g in enumerate(presets.gpu(g) for g in gpus):
        l2 = g.capacity("l2")
        sizes = np.array([2.0**20, l2, l2 + 1, 2.0**32])  # the step sits exactly at the capacity
        ax.plot(sizes, sizes / warm_read_time(g, sizes) / 1e9, color=f"C{i}", label=f"model, {g.name}")
        ax.axvline(l2, color=f"C{i}", ls=":", lw=1)
    for name, s, bw in recorded:
        ax.plot(s, np.asarray(bw) / 1e9, "s", ms=3, label=name)
    _working_set_axes(ax, "bandwidth of a second read (GB/s)")
    return fig


def attention_memory(gpus=("A100-40GB", "H100-SXM", "B200"), batch: int = 8, heads: int = 32, head_dim: int = 128,
                     dtype: str = "fp16"):
    """Chapter 5: HBM footprint of attention's forward pass against sequence length,
    standard (the N x N scores and probabilities stored) and flash, with each GPU's HBM
    capacity."""
    from ..workloads import attention_memory as footprint

    n = 2.0 ** np.arange(9, 18)
    fig, ax = _figure(figsize=(WIDTH, 3.6))
    for kind in ("standard", "flash"):
        ax.plot(n, footprint(batch, heads, n, head_dim, dtype, kind) / 1e9, marker="o", ms=3, label=kind)
    for i, g in enumerate(presets.gpu(g) for g in gpus):
        ax.axhline(g.capacity("hbm") / 1e9, color=f"C{i + 2}", ls=":", lw=1, label=f"{g.name} HBM")
    _log_axes(ax, "sequence length N", "bytes kept in HBM (GB)", f"batch {batch}, {heads} heads, d = {head_dim}, {dtype}")
    return fig


def flash_hbm(seq: int = 4096, head_dim: int = 64, dtype: str = "fp16", sram=(16, 32, 48, 64, 100, 164, 228)):
    """Chapter 5: HBM bytes of one head's flash forward pass against the SRAM each block may
    use (KiB), the query block being the largest power of two whose Q, K, V and S tiles fit;
    standard attention as a line. Falls as 1/M: the N^2 d^2 / M of Dao et al."""
    from ..workloads import attention, flash_block

    kib = np.asarray(sram, dtype=float)
    blocks = [flash_block(int(k * 1024), head_dim, dtype) for k in kib]
    flash = [float(attention(1, 1, seq, head_dim, dtype, "flash", block=(b, b)).bytes["hbm"]) for b in blocks]
    standard = float(attention(1, 1, seq, head_dim, dtype, "standard").bytes["hbm"])
    fig, ax = _figure(figsize=(WIDTH, 3.6))
    ax.plot(kib, np.asarray(flash) / 1e6, marker="o", ms=3, label="flash")
    for i, (k, b, f) in enumerate(zip(kib, blocks, flash)):
        if i == 0 or b != blocks[i - 1]:  # each block size named once, where it starts
            ax.annotate(f"Br = {b}", (k, f / 1e6), textcoords="offset points", xytext=(4, 4), fontsize=SMALL)
    ax.axhline(standard / 1e6, color="C1", ls="--", label="standard")
    _log_axes(ax, "SRAM per block (KiB)", "HBM traffic per head (MB)", f"N = {seq}, d = {head_dim}, {dtype}")
    return fig


def attention_by_length(gpu="A100-40GB", batch: int = 8, heads: int = 32, head_dim: int = 128,
                        dtype: str = "fp16", block=(128, 128)):
    """Chapter 5: predicted forward time of standard and flash attention against sequence
    length on one GPU, with the HBM bytes each moves."""
    from ..workloads import attention

    n = 2.0 ** np.arange(9, 16)
    g = presets.gpu(gpu)
    fig, (ax_b, ax_t) = _figure(2, 1, figsize=(WIDTH, 6.6), sharex=True)
    cases = {"standard": ("standard", False), "flash, K and V re-read from HBM": ("flash", False),
             "flash, K and V re-read from L2": ("flash", True)}
    for label, (kind, reuse) in cases.items():
        w = attention(batch, heads, n, head_dim, dtype, kind, block=block, l2_reuse=reuse)
        p = predict(w, g)
        ax_b.plot(n, w.bytes["hbm"] / 1e9, marker="o", ms=3, label=label)
        ax_t.plot(n, p.time * 1e3, marker="o", ms=3, label=label)
    ax_t.plot(n, predict(attention(batch, heads, n, head_dim, dtype, "flash", block=block), g).compute_time * 1e3,
              ls=":", color="black", lw=2, zorder=5, label="tensor math alone")
    _log_axes(ax_b, "", "HBM traffic (GB)", legend="none")  # the panels share the x axis and the legend below
    _log_axes(ax_t, "sequence length N", f"forward time on the {g.name} (ms)", legend="below")
    return fig


def _grid(ax, x0, y0, width, height, rows, cols, color="white", edge="grey", lw=0.5):
    """Draw a rows x cols grid of cells filling the rectangle (x0, y0, width, height)."""
    for r in range(rows):
        for c in range(cols):
            ax.add_patch(Rectangle((x0 + c * width / cols, y0 + (rows - 1 - r) * height / rows),
                                       width / cols, height / rows, facecolor=color, edgecolor=edge, lw=lw))


def tiled_gemm_diagram(blocks: int = 4, threads: int = 4):
    """Chapter 3's picture of a tiled GEMM: C cut into blocks x blocks tiles, one block's
    tile cut into threads x threads thread tiles, and the row panel of A and column panel of
    B that block reads, with the current k-slice of each darker."""
    fig, ax = _figure(figsize=(WIDTH, WIDTH * 8.8 / 7.1))  # the limits below, to scale
    size, gap = 4.0, 0.4
    a_x, c_y = 0.0, 0.0
    c_x, b_y = 1.6 + gap, size + gap
    cell = size / blocks
    _grid(ax, c_x, c_y, size, size, blocks, blocks)
    bi, bj = 1, 2  # the block drawn in detail
    bx, by = c_x + bj * cell, c_y + (blocks - 1 - bi) * cell
    ax.add_patch(Rectangle((bx, by), cell, cell, facecolor="tab:orange", alpha=0.35, edgecolor="tab:orange", lw=2))
    _grid(ax, bx, by, cell, cell, threads, threads, color="none", edge="tab:orange", lw=0.6)
    ax.add_patch(Rectangle((bx, by + cell - cell / threads), cell / threads, cell / threads, facecolor="tab:red", alpha=0.6))
    # A: M x K, the block's row panel; B: K x N, the block's column panel.
    ax.add_patch(Rectangle((a_x, c_y), 1.6, size, facecolor="white", edgecolor="grey"))
    ax.add_patch(Rectangle((a_x, by), 1.6, cell, facecolor="tab:blue", alpha=0.25, edgecolor="tab:blue"))
    ax.add_patch(Rectangle((a_x + 0.6, by), 0.3, cell, facecolor="tab:blue", alpha=0.7))
    ax.add_patch(Rectangle((c_x, b_y), size, 1.6, facecolor="white", edgecolor="grey"))
    ax.add_patch(Rectangle((bx, b_y), cell, 1.6, facecolor="tab:green", alpha=0.25, edgecolor="tab:green"))
    ax.add_patch(Rectangle((bx, b_y + 0.7), cell, 0.3, facecolor="tab:green", alpha=0.7))
    notes = [
        (a_x + 0.8, size + 0.15, "A (M x K):\nthe block's\nrow panel;\ndark slice\nbM x bK, in\nshared memory", "tab:blue"),
        (c_x + size / 2, b_y + 1.95, "B (K x N): the block's column panel;\ndark slice bK x bN", "tab:green"),
        (c_x + size / 2, c_y - 0.35, "C (M x N) in bM x bN block tiles; one\nblock (orange) holds its tile in registers,\n"
                                     "split into tM x tN thread tiles\n(red: one thread's)", "black"),
    ]
    for x, y, text, color in notes:
        ax.text(x, y, text, ha="center", va="top" if y < 0 else "bottom", fontsize=SMALL, color=color)
    ax.set_xlim(-0.6, c_x + size + 0.5)
    ax.set_ylim(-2.0, b_y + 2.4)
    ax.set_aspect("equal")
    ax.axis("off")
    return fig


def wave_map(rows: int = 16, cols: int = 16, wave: int = 40, group: int = 4):
    """Chapter 4's picture of waves: each tile of C coloured by the wave that computes it,
    row-major order beside grouped order, the first wave outlined, with the distinct row and
    column panels that wave needs."""
    from ..waves import block_coordinates

    fig, axes = _figure(1, 2, figsize=(WIDTH, 3.3))
    for ax, (order, title) in zip(axes, (("row", "row-major"), ("grouped", f"grouped by {group} rows"))):
        r, c = block_coordinates(rows, cols, order, group)
        waves = np.empty((rows, cols))
        waves[r, c] = np.arange(rows * cols) // wave
        ax.imshow(waves, cmap="tab20", interpolation="nearest")
        first = waves == 0
        for rr, cc in zip(*np.nonzero(first)):
            ax.add_patch(Rectangle((cc - 0.5, rr - 0.5), 1, 1, fill=False, hatch="//", edgecolor="black", lw=0))
        used_rows, used_cols = int(first.any(axis=1).sum()), int(first.any(axis=0).sum())
        ax.set_title(f"{title}:\nthe first wave ({wave} blocks)\nneeds {used_rows} row panels of A\n"
                     f"and {used_cols} column panels of B", fontsize=SMALL)
        ax.set_xticks([])
        ax.set_yticks([])
    return fig


def flash_diagram(blocks: int = 8):
    """Chapter 5's picture of FlashAttention's forward pass: a block of query rows, the key
    and value tile it is working on, and the one score tile that exists, in SRAM."""
    fig, ax = _figure(figsize=(WIDTH, WIDTH * 7.6 / 7.4))
    n, d = 4.0, 1.0
    cell = n / blocks
    qi, kj = 2, 5
    # Q (N x d) on the left, S (N x N) in the middle, V (N x d) and O (N x d) on the right.
    ax.add_patch(Rectangle((0, 0), d, n, facecolor="white", edgecolor="grey"))
    ax.add_patch(Rectangle((0, n - (qi + 1) * cell), d, cell, facecolor="tab:blue", alpha=0.6))
    ax.text(d / 2, n + 0.15, "Q", ha="center")
    s_x = d + 0.5
    _grid(ax, s_x, 0, n, n, blocks, blocks, color="white", edge="#dddddd")
    ax.add_patch(Rectangle((s_x, n - (qi + 1) * cell), (kj) * cell, cell, facecolor="tab:orange", alpha=0.2))
    ax.add_patch(Rectangle((s_x + kj * cell, n - (qi + 1) * cell), cell, cell, facecolor="tab:red", alpha=0.8))
    ax.text(s_x + n / 2, n + 0.15, "S = Q Kᵀ: never stored", ha="center", fontsize=SMALL)
    k_y = n + 0.55
    ax.add_patch(Rectangle((s_x, k_y), n, d, facecolor="white", edgecolor="grey"))
    ax.add_patch(Rectangle((s_x + kj * cell, k_y), cell, d, facecolor="tab:green", alpha=0.6))
    ax.text(s_x + n / 2, k_y + d + 0.1, "Kᵀ (and V): streamed tile by tile", ha="center", fontsize=SMALL)
    o_x = s_x + n + 0.5
    ax.add_patch(Rectangle((o_x, 0), d, n, facecolor="white", edgecolor="grey"))
    ax.add_patch(Rectangle((o_x, n - (qi + 1) * cell), d, cell, facecolor="tab:purple", alpha=0.6))
    ax.text(o_x + d / 2, n + 0.15, "O", ha="center")
    ax.text(s_x + n / 2, -0.3, "red: the one score tile in SRAM now; orange:\ntiles already folded into the running max m,\n"
            "sum l and output a of this query block (blue),\nwhich writes its rows of O (purple) once",
            ha="center", va="top", fontsize=SMALL)
    ax.set_xlim(-0.2, o_x + d + 0.2)
    ax.set_ylim(-1.9, k_y + d + 0.5)
    ax.set_aspect("equal")
    ax.axis("off")
    return fig


def _box(ax, x, y, width, height, text, color, fontsize=SMALL):
    """A labelled box for the block diagrams."""
    ax.add_patch(Rectangle((x, y), width, height, facecolor=color, alpha=0.3, edgecolor=color, lw=1.5))
    ax.text(x + width / 2, y + height / 2, text, ha="center", va="center", fontsize=fontsize)


def machine_map(gpu="A100-40GB", sms: int = 3):
    """Chapter 0's picture of the machine: at the top a grid of blocks and one block cut into
    warps of 32 threads; below, the GPU: `sms` of its SMs (each with its register file, shared
    memory and FP32 units), the L2 all SMs share, and HBM, labelled with `gpu`'s sizes."""
    g = presets.gpu(gpu)
    n_sms = int(g.sms.value)
    fig, ax = _figure(figsize=(WIDTH, 5.8))  # its 0.25-high rows of warps one SMALL line each
    # The program: a grid of 3 x 4 blocks, one of them as 8 warps of 32 threads.
    _grid(ax, 0, 5.4, 2.4, 1.8, 3, 4, color="#e8f0fa", edge="tab:blue")
    ax.add_patch(Rectangle((0.6, 6.6), 0.6, 0.6, facecolor="tab:blue", alpha=0.5))
    ax.text(1.2, 7.3, "grid of blocks\n(one kernel launch)", ha="center", va="bottom", fontsize=SMALL)
    _grid(ax, 3.2, 5.2, 2.9, 2.0, 8, 1, color="#fdebd3", edge="tab:orange")
    ax.text(4.65, 7.3, "one block:\nwarps of 32 threads", ha="center", va="bottom", fontsize=SMALL)
    for w in range(8):
        ax.text(4.65, 7.075 - w * 0.25, f"warp {w}: threads {32 * w}-{32 * w + 31}", ha="center", va="center", fontsize=SMALL)
    ax.annotate("", (3.15, 6.2), (1.25, 6.9), arrowprops={"arrowstyle": "->", "color": "tab:blue"})
    # The machine: SMs, L2, HBM.
    width = 6.1
    sm_w = width / sms
    for s in range(sms):
        x = s * sm_w + 0.05
        label = f"SM {s}" if s < sms - 1 else f"... SM {n_sms - 1}"
        ax.add_patch(Rectangle((x, 1.9), sm_w - 0.1, 2.4, facecolor="white", edgecolor="grey"))
        ax.text(x + (sm_w - 0.1) / 2, 4.1, label, ha="center", va="center", fontsize=SMALL)
        _box(ax, x + 0.08, 3.2, sm_w - 0.26, 0.7, f"registers\n{fmt_capacity(g.register_file_per_sm.value)}", "tab:red")
        _box(ax, x + 0.08, 2.5, sm_w - 0.26, 0.62, f"shared mem.\n{fmt_capacity(g.smem_per_sm.value)}", "tab:orange")
        _box(ax, x + 0.08, 2.0, sm_w - 0.26, 0.42, f"{g.fp32_lanes_per_sm.value:g} FP32 units", "tab:purple")
    _box(ax, 0, 1.0, width, 0.7, f"L2 cache, {fmt_capacity(g.capacity('l2'))}:\nshared by all {n_sms} SMs", "tab:green")
    _box(ax, 0, 0.0, width, 0.8, f"HBM, {fmt_capacity(g.capacity('hbm'))}:\nevery array a kernel reads or writes",
         "tab:blue")
    ax.annotate("", (sm_w / 2, 4.35), (0.9, 5.35), arrowprops={"arrowstyle": "->", "color": "black"})
    ax.text(1.05, 4.85, "each block runs on one SM", va="center", fontsize=SMALL)
    ax.set_title(f"The program (top) and the machine\nit runs on (below): the {g.name}", fontsize=10)
    ax.set_xlim(-0.05, width + 0.05)
    ax.set_ylim(-0.1, 8.2)
    ax.axis("off")
    return fig


def tensor_data_path(gpu="H100-SXM"):
    """Chapter 6's data path of a tensor-core GEMM, top to bottom: global memory (HBM, through
    L2), the copy engine (TMA on Hopper, `cp.async` before), shared memory, registers (and
    Blackwell's tensor memory), the tensor cores, with `gpu`'s bandwidth at each level (at its
    tensor clock) and the instruction that moves the data across each arrow."""
    g = presets.gpu(gpu).running("fp16")
    stages = [
        ("global (HBM)", f"{fmt_bandwidth(g.bandwidth('hbm'))}", "tab:blue"),
        ("L2", f"{fmt_bandwidth(g.bandwidth('l2'))}", "tab:green"),
        ("TMA\n(copy engine)", "one thread asks\nfor a whole tile", "tab:gray"),
        ("shared memory", f"{fmt_bandwidth(g.bandwidth('smem'))}", "tab:orange"),
        ("registers /\ntensor memory", "accumulators\n(A operand)", "tab:red"),
        ("tensor cores", f"{fmt_flops(g.peak('fp16'))} fp16", "tab:purple"),
    ]
    moves = ["", "", "cp.async.bulk (Ampere: cp.async)", "swizzled tile", "ldmatrix (Ampere)",
             "mma.sync (Ampere), wgmma (Hopper)"]
    height, step, x0, width = 0.62, 1.05, 0.9, 2.3
    fig, ax = _figure(figsize=(WIDTH, WIDTH * (len(stages) * step + 0.9) / 6.2))
    for i, (name, figure, color) in enumerate(stages):
        y = -i * step
        _box(ax, x0, y, width, height, name, color)
        ax.text(x0 + width + 0.15, y + height / 2, figure, va="center", fontsize=SMALL)
        if i:
            ax.annotate("", (x0 + width / 2, y + height), (x0 + width / 2, y + step), arrowprops={"arrowstyle": "->", "lw": 1.5})
            ax.text(x0 + width / 2 + 0.12, y + (height + step) / 2, moves[i], va="center", fontsize=SMALL)
    smem_y, tc_y = -3 * step + height / 2, -5 * step + height / 2
    ax.annotate("", (x0, tc_y), (x0, smem_y), arrowprops={"arrowstyle": "->", "ls": "--", "color": "tab:purple",
                                                      "connectionstyle": "arc3,rad=0.5"})
    ax.text(0, -5 * step - 0.2, "dashed: wgmma reads B (and A)\nstraight from shared memory", va="top", fontsize=SMALL,
            color="tab:purple")
    ax.set_title(f"How an operand reaches\nthe tensor cores, with the\n{g.name}'s rate at each step", fontsize=10)
    ax.set_xlim(-0.1, 6.1)
    ax.set_ylim(-5 * step - 0.9, height + 0.1)
    ax.axis("off")
    return fig


def warp_sectors(strides=(1, 8), elem_bytes: int = 4):
    """A warp's load drawn onto memory: lane i reads the `elem_bytes`-byte element i x stride,
    one panel per stride of `strides`; an arrow from each lane to the bytes it reads, the 32 B
    sectors it touches filled (those `gm.simulate.sectors_touched` counts), the 128 B lines
    outlined. Chapters 0 and 2."""
    from ..simulate import sectors_touched

    strides = [_check.integer("strides", s, 1, 64) for s in strides]
    if not strides:
        raise ValueError("strides must name at least one stride")
    elem = int(_check.member("elem_bytes", elem_bytes, (1, 2, 4, 8, 16)))
    fig, axes = _figure(len(strides), 1, figsize=(WIDTH, 0.2 + 1.45 * len(strides)), squeeze=False)
    for ax, stride in zip(axes[:, 0], strides):
        addr = np.arange(WARP) * stride * elem
        lines = -(-int(addr[-1] + elem) // LINE_BYTES)
        span = lines * LINE_BYTES
        lane_w = span / WARP
        touched = np.unique(addr // SECTOR_BYTES)  # what sectors_touched counts
        ax.add_patch(Rectangle((0, 1.55), span, 0.3, facecolor="#fdebd3", edgecolor="tab:orange", lw=0.6))
        ax.broken_barh([(t * SECTOR_BYTES, SECTOR_BYTES) for t in touched], (0.05, 0.45), facecolor="#c6dbef",
                       label="sectors touched")
        ax.broken_barh([(a, elem) for a in addr], (0.05, 0.45), facecolor="tab:blue", label="bytes read")
        _segments(ax, [((k * lane_w, 1.55), (k * lane_w, 1.85)) for k in range(1, WARP)], color="tab:orange", lw=0.4)
        _segments(ax, [(((k + 0.5) * lane_w, 1.55), (a + elem / 2, 0.5)) for k, a in enumerate(addr)],
                  color="tab:orange", lw=0.5)
        _segments(ax, [((x, 0.05), (x, 0.5)) for x in range(SECTOR_BYTES, span, SECTOR_BYTES)], color="grey", lw=0.4)
        for line in range(lines):
            ax.add_patch(Rectangle((line * LINE_BYTES, 0), LINE_BYTES, 0.55, fill=False, edgecolor="black", lw=1.2))
            if lines <= 8:
                ax.text((line + 0.5) * LINE_BYTES, -0.05, f"line {line}", ha="center", va="top", fontsize=SMALL)
        ax.text(0, 1.9, "lane 0", fontsize=SMALL, va="bottom")
        ax.text(span, 1.9, f"lane {WARP - 1}", fontsize=SMALL, va="bottom", ha="right")
        count = sectors_touched(addr)
        ax.set_title(f"stride {stride}: {count} sectors, {fmt_bytes(count * SECTOR_BYTES)} moved\n"
                     f"for {fmt_bytes(WARP * elem)} read, in {len(set((addr // LINE_BYTES).tolist()))} "
                     f"line{'s' if lines > 1 else ''} of {LINE_BYTES} B", fontsize=10)
        ax.set_xlim(-0.01 * span, 1.01 * span)
        ax.set_ylim(-0.45, 2.3)
        ax.axis("off")
    return fig


def _segments(ax, segments, **style) -> None:
    """Draw line `segments` ((x0, y0), (x1, y1)) each, as one path: a small SVG."""
    xs = [v for (x0, _), (x1, _) in segments for v in (x0, x1, np.nan)]
    ys = [v for (_, y0), (_, y1) in segments for v in (y0, y1, np.nan)]
    ax.plot(xs, ys, **style)


def bank_wavefronts(cases: dict | None = None):
    """Shared memory's 32 banks (columns) and the wavefronts (rows) a warp's 32-bit load takes,
    one panel per case of `cases` (title -> the 32 lanes' word addresses): each lane's word in
    its bank (word mod 32), the k-th distinct word of a bank in wavefront k, lanes reading one word
    sharing its cell (a broadcast); `gm.simulate.wavefronts` counts the rows, the colour is the
    lane. By default chapter 3's 32 x 32 float tile read along a row, down a column, and down a
    column with each row padded to 33 words. Chapter 3."""
    from ..simulate import warp_addresses, wavefronts

    if cases is None:
        cases = {"a row of the tile": warp_addresses((32, 32), 0, "row"),
                 "a column": warp_addresses((32, 32), 0, "column"),
                 "a column, rows padded\nto 33 words": warp_addresses((32, 32), 1, "column")}
    cases = {title: np.asarray(addr) for title, addr in cases.items()}
    if not cases or any(addr.shape != (WARP,) for addr in cases.values()):
        raise ValueError(f"cases must map a title to the {WARP} word addresses of one warp load")
    counts = {title: wavefronts(addr) for title, addr in cases.items()}
    fig, axes = _figure(len(cases), 1, figsize=(WIDTH, sum(0.75 + 0.07 * n for n in counts.values())), squeeze=False,
                        gridspec_kw={"height_ratios": [0.75 + 0.07 * n for n in counts.values()]})
    for ax, (title, addr) in zip(axes[:, 0], cases.items()):
        cells = np.full((counts[title], SMEM_BANKS), np.nan)  # the lane whose word the cell holds
        for bank in range(SMEM_BANKS):
            for row, word in enumerate(np.unique(addr[addr % SMEM_BANKS == bank])):
                cells[row, bank] = np.flatnonzero(addr == word)[0]
        ax.imshow(cells, cmap="viridis", vmin=0, vmax=WARP - 1, aspect="auto", interpolation="nearest",
                  extent=(0, SMEM_BANKS, cells.shape[0], 0))
        n = counts[title]
        ax.set_xlim(0, SMEM_BANKS)
        ax.set_ylim(n, 0)
        ax.set_xticks([0.5, 8.5, 16.5, 24.5, SMEM_BANKS - 0.5], ["0", "8", "16", "24", str(SMEM_BANKS - 1)], fontsize=SMALL)
        ax.set_yticks([0.5, n - 0.5] if n > 1 else [0.5], ["1", str(n)] if n > 1 else ["1"], fontsize=SMALL)
        ax.tick_params(length=2)
        ax.set_ylabel("wavefront", fontsize=SMALL)
        ax.set_title(f"{title}: {n} wavefront{'s' if n > 1 else ''}", fontsize=10)
    axes[-1, 0].set_xlabel(f"bank (colour: the lane, 0 dark to {WARP - 1} light)", fontsize=SMALL)
    return fig


def shuffle_tree(offsets=(16, 8, 4, 2, 1)):
    """A warp's sum by `v += __shfl_down_sync(0xffffffff, v, o)` for each o of `offsets`: in
    each round lane i adds lane i + o's value (a lane with no lane i + o adds its own). Rows are
    the 32 lanes, columns the rounds; a dot for each value that reaches lane 0's total, an arrow
    for each shuffle that carries one, lane 0's total checked to hold every lane once.
    Chapter 8."""
    offsets = [_check.integer("offsets", o, 1, WARP - 1) for o in offsets]
    held = np.eye(WARP, dtype=int)  # held[lane, source]: how often lane's value holds source's
    for o in offsets:
        src = np.arange(WARP) + o
        held = held + held[np.where(src < WARP, src, np.arange(WARP))]
    if not np.array_equal(held[0], np.ones(WARP, int)):
        raise ValueError(f"offsets {offsets} do not sum every lane into lane 0 once")
    needed = [{0}]  # lanes whose value after each round reaches lane 0, last round first
    for o in reversed(offsets):
        needed.append(needed[-1] | {lane + o for lane in needed[-1] if lane + o < WARP})
    needed = needed[::-1]
    fig, ax = _figure(figsize=(WIDTH, 5.6))
    shuffles = [(r, lane, o) for r, o in enumerate(offsets, start=1) for lane in sorted(needed[r]) if lane + o in needed[r - 1]
                and lane + o < WARP]
    _segments(ax, [((r - 1, lane), (r, lane)) for r in range(1, len(needed)) for lane in needed[r]], color="grey", lw=0.6)
    for r, lane, o in shuffles:
        ax.annotate("", (r - 0.04, lane), (r - 0.96, lane + o),
                    arrowprops={"arrowstyle": "->", "color": "tab:blue", "lw": 0.7, "shrinkA": 0, "shrinkB": 0})
    for r, lanes in enumerate(needed):
        ax.scatter([r] * len(lanes), sorted(lanes), s=10, color="tab:orange" if r else "black", zorder=3)
    ax.text(len(offsets) + 0.12, 0, f"sum of\nall {WARP}", va="center", fontsize=SMALL)
    ax.set_xticks(range(len(offsets) + 1), ["x[lane]", *(f"o = {o}" for o in offsets)], fontsize=SMALL)
    ax.xaxis.tick_top()
    ax.set_yticks(range(0, WARP, 2), [str(lane) for lane in range(0, WARP, 2)], fontsize=SMALL)
    ax.set_ylim(WARP - 0.5, -0.8)
    ax.set_xlim(-0.3, len(offsets) + 0.9)
    ax.set_ylabel("lane")
    for side in ("right", "bottom"):
        ax.spines[side].set_visible(False)
    ax.set_title(f"__shfl_down_sync: {len(offsets)} rounds,\n{len(shuffles)} additions into lane 0", fontsize=10)
    return fig


def budget_levels(traced, budget: dict, names: dict, title: str = ""):
    """A kernel's traced bytes (`traced`, a `gm.lab.Trace`) beside its `budget` (level -> bytes,
    as `gm.course.capstone.budget` gives it) at each level, named by `names` (level -> name):
    bars on a log scale, over budget in red, each with its ratio. Chapter 8."""
    BUDGET_LEVELS = list(budget)
    allowed = budget
    got = {lv: float(traced.bytes[lv]) for lv in BUDGET_LEVELS}
    fig, ax = _figure(figsize=(WIDTH, 0.9 + 0.62 * len(BUDGET_LEVELS)))
    y = np.arange(len(BUDGET_LEVELS))
    shown = [v for lv in BUDGET_LEVELS for v in (got[lv], allowed[lv]) if v > 0]
    floor = min(shown) / 4
    for i, lv in enumerate(BUDGET_LEVELS):
        for value, dy, colour, label in ((allowed[lv], -0.19, "grey", "budget"),
                                         (got[lv], 0.19, "tab:red" if got[lv] > allowed[lv] else "tab:blue", "traced")):
            if value > 0:
                ax.barh(i + dy, value - floor, 0.36, left=floor, color=colour, label=label if i == 0 else None)
        ratio = f"{got[lv] / allowed[lv]:.2f}x" if allowed[lv] else ("none, none budgeted" if got[lv] == 0 else "over 0")
        ax.text(max(got[lv], allowed[lv], floor) * 1.3, i, ratio, va="center", fontsize=SMALL)
    ax.set_yticks(y, [names[lv].replace(" (", "\n(") for lv in BUDGET_LEVELS], fontsize=SMALL)
    _log(ax.xaxis)
    ax.xaxis.set_major_formatter(lambda v, _: fmt_bytes(v, digits=1))
    ax.xaxis.set_minor_formatter(lambda v, _: "")
    ax.set_xlim(floor, max(shown) * 12)
    ax.set_ylim(len(BUDGET_LEVELS) - 0.5, -0.5)
    ax.set_xlabel("bytes (log scale)")
    ax.set_title(title or "traced against the budget", fontsize=10)
    ax.legend(fontsize=SMALL, ncols=2, loc="lower center", bbox_to_anchor=(0.5, 1.08))
    return fig
