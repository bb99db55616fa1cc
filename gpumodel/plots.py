"""Figures drawn from the model (matplotlib). Each function returns a Figure and says in
its docstring which chapter draws it."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from .hardware import LEVELS
from .presets import gpu
from .tables import LEVEL_LABELS
from .units import fmt_bytes


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
