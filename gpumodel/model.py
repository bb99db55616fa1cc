"""The time model: `T = max(F/P, S/R, max over levels of B_l / W_l)`. Chapter 1 introduces
it; every chapter uses it. F/P is the arithmetic, S/R the special-function units (the
exponentials of a softmax, chapter 5), B_l/W_l each level.

Each part works in parallel and they overlap perfectly, so the slowest one sets the time (a
lower bound: with no overlap at all, the time would be their sum); the others are busy for
a fraction of it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import presets
from ._check import as_output as _out
from .hardware import GPU, LEVELS
from .workloads import Workload

BOUNDS = ("compute", "sfu") + LEVELS
"""What can bind a kernel, in tie-break order: the arithmetic first, then the special-function
units, then the faster level."""
TIE_RTOL = 1e-9
"""Times within this relative tolerance of the maximum count as a tie."""


@dataclass(frozen=True)
class Prediction:
    """What the model says of a workload on a GPU. Times in seconds, intensities and ridge
    points in FLOP/byte. Scalars for a single configuration, arrays for a sweep.

    - `time`: the predicted kernel time; `bound`: "compute", "sfu" or the level that sets it
    - `compute_time`: F/P; `sfu_time`: special-function results over their rate;
      `level_times[level]`: B_l / W_l; `times[part]`: any of them by its name in BOUNDS
    - `busy[level or "compute"]`: that part's time over `time`, in [0, 1]
    - `intensity[level]`: F / B_l (inf where the level moves no bytes)
    - `ridge[level]`: P / W_l, the intensity above which the level stops binding
    - `gpu`: the GPU at the clock the workload's math runs at (`GPU.running`)
    """

    workload: Workload
    gpu: GPU
    time: np.ndarray
    bound: np.ndarray
    compute_time: np.ndarray
    sfu_time: np.ndarray
    level_times: dict
    busy: dict
    intensity: dict
    ridge: dict

    @property
    def times(self) -> dict:
        """The time each part of BOUNDS needs, by name, in seconds."""
        return {"compute": self.compute_time, "sfu": self.sfu_time, **self.level_times}

    @property
    def no_overlap_time(self) -> np.ndarray:
        """The time if no part overlapped another: the sum of the parts' times, an estimate
        (not a bound) for a kernel whose parts take turns. A byte streaming through several
        levels is charged at each, so a pipelined kernel can beat it. `time` is the bound."""
        return sum(self.times.values())


def predict(workload: Workload, gpu) -> Prediction:
    """Predict `workload`'s time on `gpu`, a `GPU` or a preset name (see `Prediction`).
    Broadcasts over the workload's arrays; ties go to compute, then to the faster level."""
    if not isinstance(workload, Workload):
        raise TypeError(f"workload must be a Workload (from gm.gemm, gm.vector_add, ...), got {type(workload).__name__}")
    gpu = presets.gpu(gpu).running(workload.math)  # tensor math at the clock its peak is rated at
    peak = gpu.peak(workload.math)
    flops = workload.flops
    compute_time = flops / peak
    sfu_time = workload.special / gpu.special_rate
    level_times = {lv: workload.bytes[lv] / gpu.bandwidth(lv) for lv in LEVELS}
    times = np.stack([compute_time, sfu_time] + [level_times[lv] for lv in LEVELS])
    time = times.max(axis=0)
    # The first part within TIE_RTOL of the maximum, in BOUNDS order.
    index = np.argmax(times >= time * (1 - TIE_RTOL), axis=0)
    bound = np.asarray(BOUNDS)[index]
    busy = {name: np.divide(t, time, out=np.zeros_like(time), where=time > 0) for name, t in zip(BOUNDS, times)}
    intensity = {lv: _ratio(flops, workload.bytes[lv]) for lv in LEVELS}
    ridge = {lv: peak / gpu.bandwidth(lv) for lv in LEVELS}
    return Prediction(
        workload=workload,
        gpu=gpu,
        time=_out(time),
        bound=_out(bound),
        compute_time=_out(compute_time),
        sfu_time=_out(sfu_time),
        level_times={lv: _out(t) for lv, t in level_times.items()},
        busy={k: _out(v) for k, v in busy.items()},
        intensity={k: _out(v) for k, v in intensity.items()},
        ridge=ridge,
    )


def _ratio(flops, nbytes):
    """flops / nbytes, inf where no bytes move (without a division-by-zero warning)."""
    moved = nbytes > 0
    return np.where(moved, flops / np.where(moved, nbytes, 1), np.inf)


