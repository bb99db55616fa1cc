"""`make bench`: times the model and the chapters (a benchmark, not a test).

Prints a table of medians over repeats: a 10^5-configuration `predict` sweep (target: well
under 100 ms on one core), the kernel lab's traced run of the flash-attention kernel (accesses
per second and the run's peak memory; built once before timing) and the execution of each
chapter as a notebook.
Run as `python tests/benchmark.py [--repeats N]`.
"""

from __future__ import annotations

import argparse
import pathlib
import resource
import statistics
import time

import nbformat
import numpy as np
from nbclient import NotebookClient

import gpumodel as gm

ROOT = pathlib.Path(__file__).resolve().parent.parent


def median_time(fn, repeats: int) -> float:
    """Median wall time of `fn()` in seconds over `repeats` runs."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def sweep():
    """10^5 GEMM configurations (sizes x block tiles x thread tiles) in one predict call."""
    n = np.linspace(256, 16384, 2500).round()[:, None, None]
    block = np.array([16, 32, 64, 128, 256])[None, :, None]
    t_m = np.array([1, 2, 4, 8, 1, 2, 4, 8])[None, None, :]
    t_n = np.array([1, 1, 1, 1, 8, 8, 8, 8])[None, None, :]
    w = gm.gemm(n, n, n, block=(block, block), thread=(t_m, t_n))
    p = gm.predict(w, gm.gpu("A100-40GB"))
    assert p.time.size == 2500 * 5 * 8 == 10**5
    return p


def lab_trace() -> int:
    """Trace the flash-attention kernel at n = 256 (8.7 million accesses): the accesses traced."""
    from gpumodel.cuda import plans
    from gpumodel.lab.tracer import trace_plan

    traces = trace_plan(plans.plan_attention("flash", 1, 256))
    return sum(s.lanes for t in traces for s in t.sites)


def run_chapter(path: pathlib.Path):
    """Execute one chapter's notebook (`notebooks/`, as the tests and Colab run it)."""
    nb = nbformat.read(path, as_version=4)
    NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}).execute()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5, help="runs per item (median reported)")
    args = parser.parse_args()
    rows = [("predict, 10^5 GEMM configurations", median_time(sweep, max(args.repeats, 5)))]
    accesses = lab_trace()  # builds the traced executable
    seconds = median_time(lab_trace, args.repeats)
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024  # KiB on Linux
    rows.append((f"lab: trace flash attention, {accesses / seconds:,.0f} accesses/s, peak {peak:.0f} MiB", seconds))
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        rows.append((f"chapter {path.stem}", median_time(lambda: run_chapter(path), args.repeats)))
    width = max(len(r[0]) for r in rows)
    print(f"{'what':<{width}}  median")
    for what, seconds in rows:
        print(f"{what:<{width}}  {gm.fmt_time(seconds)}")


if __name__ == "__main__":
    main()
