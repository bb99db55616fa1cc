"""Figures drawn from the model (matplotlib). Each function returns a Figure and says in
its docstring which chapter draws it."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from .hardware import LEVELS
from .presets import gpu, preset_names
from .tables import LEVEL_LABELS
from .units import fmt_bandwidth, fmt_bytes, fmt_capacity


def hierarchy_figure(names=("V100", "A100-40GB", "H100-SXM")):
    """Bandwidth (TB/s) and capacity (bytes) of the four levels for each named preset, on
    log scales, side by side. The appendix "GPU presets" and chapter 1."""
    gpus = [gpu(n) for n in names]
    fig, (ax_bw, ax_cap) = plt.subplots(1, 2, figsize=(10, 4), layout="constrained")
    x = np.arange(len(LEVELS))
    width = 0.8 / len(gpus)
    for i, g in enumerate(gpus):
        offset = (i - (len(gpus) - 1) / 2) * width
        ax_bw.bar(x + offset, [g.bandwidth(lv) / 1e12 for lv in LEVELS], width, label=g.name)
        ax_cap.bar(x + offset, [g.capacity(lv) for lv in LEVELS], width, label=g.name)
    for ax in (ax_bw, ax_cap):
        ax.set_yscale("log")
        ax.set_xticks(x, [LEVEL_LABELS[lv] for lv in LEVELS])
        ax.grid(axis="y", which="major", alpha=0.3)
    ax_bw.set_ylabel("bandwidth (TB/s, log scale)")
    ax_bw.set_title("Faster toward the arithmetic")
    ax_cap.yaxis.set_major_formatter(lambda v, _: fmt_bytes(v, digits=1))
    ax_cap.set_ylabel("capacity, whole GPU (log scale)")
    ax_cap.set_title("Bigger away from it")
    ax_cap.legend(loc="upper left")
    return fig


def preset_levels(name: str = "A100-40GB"):
    """One preset's four levels: bandwidth and capacity, labelled with their values, on log
    axes fixed across every preset so that frames can be compared. The appendix's player."""
    g = gpu(name)
    everyone = [gpu(n) for n in preset_names()]
    fig, (ax_bw, ax_cap) = plt.subplots(1, 2, figsize=(9, 3.6), layout="constrained")
    labels = [LEVEL_LABELS[lv] for lv in LEVELS]
    bandwidth = [g.bandwidth(lv) for lv in LEVELS]
    capacity = [g.capacity(lv) for lv in LEVELS]
    bars = ax_bw.bar(labels, [b / 1e12 for b in bandwidth], color="tab:blue")
    ax_bw.bar_label(bars, [fmt_bandwidth(b) for b in bandwidth], fontsize=8)
    bars = ax_cap.bar(labels, capacity, color="tab:orange")
    ax_cap.bar_label(bars, [fmt_capacity(c) for c in capacity], fontsize=8)
    lows = [min(x.bandwidth(lv) for x in everyone) / 1e12 for lv in LEVELS]
    highs = [max(x.bandwidth(lv) for x in everyone) / 1e12 for lv in LEVELS]
    ax_bw.set_ylim(min(lows) / 2, max(highs) * 3)
    caps = [x.capacity(lv) for x in everyone for lv in LEVELS]
    ax_cap.set_ylim(min(caps) / 2, max(caps) * 4)
    for ax in (ax_bw, ax_cap):
        ax.set_yscale("log")
        ax.tick_params(axis="x", labelsize=8)
    ax_cap.yaxis.set_major_formatter(lambda v, _: fmt_bytes(v, digits=1))
    ax_bw.set_ylabel("bandwidth (TB/s)")
    ax_cap.set_ylabel("capacity, whole GPU")
    fig.suptitle(f"{name}: the four levels")
    return fig
