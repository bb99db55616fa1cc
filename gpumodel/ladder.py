"""Chapter 3's GEMM ladder: for each kernel of `kernels/gemm.cu`, the model's workload, the
simulation's byte counts against the formula, the predictions, and the measurement on a
GPU (or the recorded ones). Chapter 3.
"""

from __future__ import annotations

import numpy as np

from . import measurements, simulate
from .book import markdown_table
from .hardware import LEVELS
from .model import predict
from .presets import gpu
from .tables import LEVEL_LABELS
from .units import fmt_bound, fmt_bytes, fmt_flops, fmt_percent, fmt_time
from .workloads import gemm

RUNGS = {
    "gemm_naive": {"block": None, "thread": (1, 1)},
    "gemm_smem16": {"block": (16, 16, 16), "thread": (1, 1)},
    "gemm_reg128": {"block": (128, 128, 8), "thread": (8, 8)},
}
"""The ladder's kernels and their tiles (block None: no shared memory)."""
LABELS = {"gemm_naive": "naive", "gemm_smem16": "16x16 tiles", "gemm_reg128": "128x128, 8x8/thread"}


def workload(kernel: str, m: int, n: int, k: int):
    """The model's workload for one rung."""
    if kernel not in RUNGS:
        raise ValueError(f"kernel must be one of {list(RUNGS)}, got {kernel!r}")
    return gemm(m, n, k, **RUNGS[kernel])


def count_check(kernel: str, m: int, n: int, k: int, seed: int = 0) -> str:
    """Run the simulation of one rung on random m x k and k x n matrices and tabulate its
    byte counts against the formula's, level by level (and its result against A @ B)."""
    rng = np.random.default_rng(seed)
    a, b = rng.standard_normal((m, k)), rng.standard_normal((k, n))
    tiles = RUNGS[kernel]
    run = simulate.naive_gemm(a, b) if tiles["block"] is None else simulate.tiled_gemm(a, b, tiles["block"], tiles["thread"])
    formula = workload(kernel, m, n, k)
    rows = [[LEVEL_LABELS[lv], f"{run.bytes[lv]:,.0f}", f"{float(formula.bytes[lv]):,.0f}",
             "yes" if run.bytes[lv] == formula.bytes[lv] else "NO"] for lv in LEVELS]
    rows.append(["C = A @ B?", "", "", "yes" if np.allclose(run.result, a @ b) else "NO"])
    return markdown_table([f"{m} x {n} x {k}", "simulation counted (B)", "formula (B)", "equal"], rows)


def prediction_table(kernel: str, presets=("A100-40GB", "H100-SXM"), size: int = 4096) -> str:
    """The model's time, bound and GFLOP/s for one rung at size^3 on each preset."""
    w = workload(kernel, size, size, size)
    rows = []
    for name in presets:
        p = predict(w, gpu(name))
        rows.append([name, fmt_time(p.time), fmt_bound(p.bound), fmt_flops(float(w.flops) / p.time),
                     fmt_percent(p.busy["compute"])] + [fmt_bytes(float(w.bytes[lv])) for lv in ("smem", "l2", "hbm")])
    return markdown_table(["GPU", "predicted", "bound", "rate", "ALUs busy", "shared memory", "L2", "HBM"], rows)


def measured(kernel: str, size: int = 4096) -> str:
    """On a GPU: run the rung at size^3, check it, time it against cuBLAS (`cupy.matmul`)
    and the model on the live device. Otherwise the recorded measurements, or the line that
    says there are none. Markdown."""
    from .launches import plan_gemm
    from .runtime import Runner, have_gpu, live_gpu

    if have_gpu(announce=False):
        runner, device = Runner(), live_gpu()
        plan = plan_gemm(kernel, size, size, size)
        bufs = runner.buffers(plan)
        runner.check(plan, bufs)
        seconds = runner.time(lambda: runner.launch(plan, bufs))
        c = runner.cp.empty_like(bufs["C"])
        cublas = runner.time(lambda: runner.cp.matmul(bufs["A"], bufs["B"], out=c))
        p = predict(plan.workload, device)
        rows = [[f"{device.name}, measured now", fmt_time(seconds), fmt_flops(float(plan.workload.flops) / seconds),
                 fmt_percent(cublas / seconds), fmt_time(p.time), f"{100 * (seconds - p.time) / p.time:+.0f}%"]]
    else:
        rows = [[f"{r['gpu']}, recorded {r['date'][:10]}", fmt_time(r["measured_s"]),
                 fmt_flops(2 * size**3 / r["measured_s"]),
                 fmt_percent(r["pct_of_cublas"] / 100) if "pct_of_cublas" in r else "-",
                 fmt_time(r["predicted_s"]) if "predicted_s" in r else "-",
                 f"{r['error_pct']:+.0f}%" if "error_pct" in r else "-"]
                for r in measurements.recorded(kernel) if r["sizes"] == {"m": size, "n": size, "k": size}]
        if not rows:
            return measurements.NONE_YET
    return markdown_table(["run", "time", "rate", "% of cuBLAS", "model", "model error"], rows)
