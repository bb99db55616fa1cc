"""`python -m gpumodel.validate --out DIR`: run every kernel at the chapters' sizes on this
machine's GPU, check each result against CuPy, time it, and compare it with the model's
prediction on the live device's `GPU` record. Writes one JSON record (GPU, driver, CUDA and
CuPy versions, date, command, one row per kernel) and a readable table to DIR. Without a
GPU it says so in one line and exits with status 2.
"""

from __future__ import annotations

import argparse
import datetime
import json
import pathlib
import re
import sys

from . import kernel_plans as plans
from .cpu_timing import working_sets
from .gpu_runtime import Runner, device_info, gpu_status, gpu_sweep, live_gpu
from .kernel_info import GEMM_LADDER, TRANSPOSES
from .model import predict
from .units import fmt_bandwidth, fmt_time

NO_GPU_STATUS = 2


SIZES = {  # vector, matrix, transpose, sequence length, heads, largest sweep working set
    "full": (2**28, 4096, 8192, 4096, 16, 2**31),
    "quick": (2**20, 512, 1024, 512, 2, 2**26),
    "tiny": (4096, 136, 70, 100, 1, 2**16),
}
"""The chapters' sizes ("full"), a quick smoke test on a GPU, and sizes small enough for the
CPU stand-in the tests use ("tiny")."""


def chapter_plans(size: str = "full"):
    """The plans the chapters discuss, at the chapters' sizes or smaller ones (see SIZES)."""
    if size not in SIZES:
        raise ValueError(f"size must be one of {tuple(SIZES)}, got {size!r}")
    n_vec, n_mat, n_t, n_seq, heads, _ = SIZES[size]
    yield plans.plan_vector_add(n_vec)
    yield plans.plan_chain(n_vec // 4, fused=False)
    yield plans.plan_chain(n_vec // 4, fused=True)
    for stride in (1, 2, 4, 8, 32):
        yield plans.plan_strided(n_vec // 16, stride)
    for kernel in (*GEMM_LADDER, "gemm_spill"):
        yield plans.plan_gemm(kernel, n_mat, n_mat, n_mat)
    for group in (0, 8):
        yield plans.plan_gemm_raster(n_mat, n_mat, n_mat, group)
    for kernel in TRANSPOSES:
        yield plans.plan_transpose(kernel, n_t)
    yield plans.plan_attention("standard", heads, n_seq, plans.FLASH_D)
    yield plans.plan_attention("flash", heads, n_seq, plans.FLASH_D)
    yield plans.plan_sweep(n_vec // 4, passes=4)


def validate(size: str = "full", repeats: int = 10) -> dict:
    """Run, check and time every chapter plan at `size`; return the record (see the
    module doc)."""
    runner = Runner()
    cp = runner.cp
    device = live_gpu()
    copy_src = cp.ones(SIZES[size][0], cp.float32)
    copy_dst = cp.empty_like(copy_src)
    copy_bandwidth = 2 * copy_src.nbytes / runner.time(lambda: cp.copyto(copy_dst, copy_src), repeats)
    rows = []
    for plan in chapter_plans(size):
        bufs = runner.buffers(plan)
        err = runner.check(plan, bufs)
        seconds = runner.time(lambda: runner.launch(plan, bufs), repeats)
        row = {"kernel": plan.kernel, "file": plan.file, "sizes": plan.sizes, "measured_s": seconds,
               "max_abs_error": err}
        if plan.workload is not None:
            p = predict(plan.workload, device)
            row.update(predicted_s=float(p.time), bound=str(p.bound),
                       error_pct=100 * (seconds - float(p.time)) / float(p.time))
        if plan.file == "gemm.cu":
            a, b = bufs["A"], bufs["B"]
            c = cp.empty_like(bufs["C"])
            row["cublas_s"] = runner.time(lambda: cp.matmul(a, b, out=c), repeats)
            row["pct_of_cublas"] = 100 * row["cublas_s"] / seconds
        if plan.kernel == "vector_add":
            row["pct_of_copy_bandwidth"] = 100 * float(plan.workload.bytes["hbm"]) / seconds / copy_bandwidth
        rows.append(row)
        del bufs
        cp.get_default_memory_pool().free_all_blocks()
    largest = SIZES[size][-1]
    sizes, bandwidth = gpu_sweep(working_sets(min(2**20, largest // 4), largest))
    return {
        "gpu": device_info(),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "command": "python -m gpumodel.validate " + " ".join(sys.argv[1:]),
        "copy_bandwidth_Bps": copy_bandwidth,
        "live_gpu": {name: {"value": f.value, "kind": f.kind, "note": f.note}
                     for name, f in device.facts().items()},
        "kernels": rows,
        "sweep": {"sizes_bytes": sizes.tolist(), "bandwidth_Bps": bandwidth.tolist()},
    }


def table(record: dict) -> str:
    """A readable table of a record."""
    lines = [f"{record['gpu']['name']}, driver {record['gpu']['driver_version']}, "
             f"CUDA runtime {record['gpu']['cuda_runtime_version']}, CuPy {record['gpu']['cupy_version']}, "
             f"{record['date']}", f"copy bandwidth: {fmt_bandwidth(record['copy_bandwidth_Bps'])}", "",
             f"{'kernel':<24} {'measured':>10} {'predicted':>10} {'bound':>9} {'error':>8} {'cuBLAS':>7}"]
    for r in record["kernels"]:
        pred = fmt_time(r["predicted_s"]) if "predicted_s" in r else "-"
        err = f"{r['error_pct']:+.0f}%" if "error_pct" in r else "-"
        cub = f"{r['pct_of_cublas']:.0f}%" if "pct_of_cublas" in r else "-"
        name = r["kernel"] + "".join(f" {k}={v}" for k, v in r["sizes"].items() if k in ("stride", "group"))
        lines.append(f"{name:<24} {fmt_time(r['measured_s']):>10} {pred:>10} {r.get('bound', '-'):>9} {err:>8} {cub:>7}")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m gpumodel.validate", description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, type=pathlib.Path, help="folder for the JSON record and table")
    parser.add_argument("--quick", action="store_true", help="small sizes: a smoke test, not a measurement")
    parser.add_argument("--repeats", type=int, default=10, help="timed runs per kernel (median reported)")
    args = parser.parse_args(argv)
    ok, why = gpu_status()
    if not ok:
        print(f"No GPU: {why}. Nothing to validate.")
        return NO_GPU_STATUS
    record = validate("quick" if args.quick else "full", args.repeats)
    args.out.mkdir(parents=True, exist_ok=True)
    stem = re.sub(r"[^A-Za-z0-9]+", "-", record["gpu"]["name"]).strip("-") + "-" + record["date"][:10]
    (args.out / f"{stem}.json").write_text(json.dumps(record, indent=1) + "\n")
    (args.out / f"{stem}.txt").write_text(table(record) + "\n")
    print(table(record))
    return 0


if __name__ == "__main__":
    sys.exit(main())
