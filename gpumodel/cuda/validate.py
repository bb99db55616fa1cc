"""`python -m gpumodel.cuda.validate --out DIR [--size quick]`: run every kernel at the chapters'
sizes (or the quick ones) on this machine's GPU, check each result against CuPy, time it,
and compare it with the model's prediction on the live device's `GPU` record. It first
prints the GPU time it plans (the model's), then each row as it finishes, and writes the
JSON record (environment: GPU, driver, CUDA, CuPy, cuBLAS, compute type, clocks; date,
command, one row per kernel with the driver's view of its registers, spills and occupancy;
the failures; the working-set sweep) after every row, and a readable table at the end. A
plan that fails is recorded and the others still run (exit status 1). Without a GPU it says
so in one line and exits with status 2.
"""

from __future__ import annotations

import argparse
import datetime
import json
import pathlib
import re
import sys

from .. import presets
from ..kernel_info import GEMM_LADDER, TRANSPOSES
from ..model import predict
from ..units import fmt_bandwidth, fmt_bytes, fmt_time
from ..waves import warm_read_time
from . import plans
from .runtime import (MIN_SAMPLE_S, SWEEP_BYTES_PER_LAUNCH, NvmlSampler, Runner, environment, gpu_status, gpu_sweep,
                      kernel_attributes, live_gpu, run_plan, sweep_passes, sweep_sizes)

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


def planned_seconds(size: str = "full", repeats: int = 10, gpu="H200") -> float:
    """The kernels' GPU time `validate` plans at `size`, by the model on `gpu` (compiling,
    drawing inputs, the float64 references and cuBLAS's share of the attention baseline come
    on top: a lower bound, never printed as the run's time): per plan, its predicted
    time (at least the launch-gap floor) for the check, two warm-ups, the first timed
    sample and `repeats` samples of MIN_SAMPLE_S or more, doubled where cuBLAS runs it too;
    and the sweep. A plan of nothing the model predicts counts as one sample."""
    seconds = 0.0
    for plan in chapter_plans(size):
        once = float(predict(plan.workload, gpu).time) if plan.workload is not None else MIN_SAMPLE_S
        launch = max(once, 5e-6)
        per_plan = 4 * launch + repeats * max(MIN_SAMPLE_S, launch)
        seconds += per_plan * (2 if plan.file == "gemm.cu" or plan.kernel == "attention_standard" else 1)
    g = presets.gpu(gpu)
    largest = min(8 * g.capacity("l2"), SIZES[size][-1])
    for nbytes in sweep_sizes(largest):
        read = sweep_passes(nbytes, min(SWEEP_BYTES_PER_LAUNCH, 4 * largest)) * nbytes
        seconds += 8 * max(MIN_SAMPLE_S, float(warm_read_time(g, read)))
    return seconds


def validate(size: str = "full", repeats: int = 10, out=None, say=print) -> dict:
    """Run, check and time every chapter plan at `size`; return the record (see the module
    doc). A plan that fails (a wrong result, out of memory, a launch error) is recorded with
    its error and the run goes on. Each row is said (`say`) as it finishes, and where `out`
    is a path the record is written there after every row."""
    runner = Runner()
    cp = runner.cp
    device = live_gpu()
    record = {"gpu": environment(), "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
              "command": "python -m gpumodel.cuda.validate " + " ".join(sys.argv[1:]), "size": size,
              "live_gpu": {name: {"value": f.value, "kind": f.kind, "note": f.note}
                           for name, f in device.facts().items()},
              "kernels": [], "failures": []}

    def save():
        if out is not None:
            pathlib.Path(out).write_text(json.dumps(record, indent=1) + "\n")

    record["copy_bandwidth_Bps"] = _copy_bandwidth(runner, SIZES[size][0], repeats)
    for plan in chapter_plans(size):
        try:
            with NvmlSampler() as nvml:
                row = run_plan(runner, plan, device, repeats)
            row.update(nvml.median())
            if "sm_clock_hz" in row and plan.workload is not None:
                row["predicted_at_clock_s"] = float(predict(plan.workload, live_gpu(row["sm_clock_hz"])).time)
            if plan.kernel == "vector_add":
                row["pct_of_copy_bandwidth"] = 100 * row["achieved_hbm_Bps"] / record["copy_bandwidth_Bps"]
        except Exception as err:  # a failed plan is recorded; the others still run  # noqa: BLE001
            failure = {"kernel": plan.kernel, "sizes": plan.sizes, "error": f"{type(err).__name__}: {err}"}
            record["failures"].append(failure)
            say(f"{plan.kernel:<24} FAILED: {failure['error']}")
            stopped = _sticky_error(cp)
            if stopped:  # every later CUDA call would fail the same way
                record["stopped"] = stopped
                say(f"stopped: the GPU is in an error state ({stopped}); the rows so far are kept")
            save()
            if stopped:
                return record
            continue
        try:  # a diagnostic: when it fails, the measurement stays
            row["driver"] = _driver_report(runner, plan)
        except Exception as err:  # noqa: BLE001
            row["driver_error"] = f"{type(err).__name__}: {err}"
        record["kernels"].append(row)
        say(row_line(row))
        save()
    largest = min(8 * cp.cuda.Device().attributes["L2CacheSize"], SIZES[size][-1])
    sizes, bandwidth = gpu_sweep(sweep_sizes(largest), budget_s=60.0,
                                 per_launch=min(SWEEP_BYTES_PER_LAUNCH, 4 * largest))
    record["sweep"] = {"sizes_bytes": sizes.tolist(), "bandwidth_Bps": bandwidth.tolist()}
    say(f"sweep: {len(sizes)} working sets, up to {fmt_bytes(float(sizes[-1]))}" if len(sizes) else "sweep: none")
    save()
    return record


def _sticky_error(cp) -> str | None:
    """The error every CUDA call now raises (an illegal address poisons the context), or
    None where the GPU still answers (memory is freed then)."""
    try:
        cp.cuda.runtime.deviceSynchronize()
        cp.get_default_memory_pool().free_all_blocks()
        return None
    except Exception as err:  # noqa: BLE001
        return f"{type(err).__name__}: {err}"


def _copy_bandwidth(runner, n: int, repeats: int) -> float:
    """Device-to-device copy bandwidth (read + write) over two buffers of n floats, which
    are freed again: vector add's yardstick."""
    cp = runner.cp
    bufs = {"src": cp.ones(n, cp.float32), "dst": cp.empty(n, cp.float32)}
    seconds = runner.time(lambda: cp.copyto(bufs["dst"], bufs["src"]), repeats).median_s
    bufs.clear()
    cp.get_default_memory_pool().free_all_blocks()
    return 2 * 4 * n / seconds


def _driver_report(runner, plan) -> dict:
    """Each launched kernel's registers, local memory, shared memory and resident blocks
    from the driver (`kernel_attributes`), beside the recorded NVRTC report's registers."""
    from .compiler import recorded

    major, minor = runner.cp.cuda.runtime.getDeviceProperties(0)["major"], runner.cp.cuda.runtime.getDeviceProperties(0)["minor"]
    nvrtc = {(r.file, r.kernel): r.registers for r in recorded()["reports"] if r.arch == f"sm_{major}{minor}"}
    out = {}
    for step in {s.kernel: s for s in plan.steps}.values():
        attrs = kernel_attributes(runner, plan.file, step.kernel)
        out[step.kernel] = {**attrs, "nvrtc_registers": nvrtc.get((plan.file, step.kernel))}
    return out


def row_line(r: dict) -> str:
    """One row of the table, as it is printed when the row finishes."""
    pred = fmt_time(r["predicted_s"]) if "predicted_s" in r else "-"
    err = f"{r['error_pct']:+.0f}%" if "error_pct" in r else "-"
    cub = f"{r['pct_of_cublas']:.0f}%" if "pct_of_cublas" in r else "-"
    name = r["kernel"] + "".join(f" {k}={v}" for k, v in r["sizes"].items() if k in ("stride", "group"))
    return f"{name:<24} {fmt_time(r['measured_s']):>10} {pred:>10} {r.get('bound', '-'):>9} {err:>8} {cub:>7}"


HEADER = f"{'kernel':<24} {'measured':>10} {'predicted':>10} {'bound':>9} {'error':>8} {'cuBLAS':>7}"


def table(record: dict) -> str:
    """A readable table of a record."""
    env = record["gpu"]
    lines = [f"{env['name']}, driver {env['driver_version']}, CUDA runtime {env['cuda_runtime_version']}, "
             f"CuPy {env['cupy_version']}, {record['date']}",
             f"copy bandwidth: {fmt_bandwidth(record['copy_bandwidth_Bps'])}", "", HEADER]
    lines += [row_line(r) for r in record["kernels"]]
    lines += [f"{f['kernel']:<24} FAILED: {f['error']}" for f in record.get("failures", [])]
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m gpumodel.cuda.validate", description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, type=pathlib.Path, help="folder for the JSON record and table")
    parser.add_argument("--size", choices=list(SIZES), default="full",
                        help="full: the chapters' sizes; quick: a smoke test in minutes; tiny: for the CPU stand-in")
    parser.add_argument("--repeats", type=int, default=10, help="timed samples per kernel (median reported)")
    args = parser.parse_args(argv)
    ok, why = gpu_status()
    if not ok:
        print(f"No GPU: {why}. Nothing to validate.")
        return NO_GPU_STATUS
    env = environment()
    stem = re.sub(r"[^A-Za-z0-9]+", "-", env["name"]).strip("-") + "-" + datetime.date.today().isoformat()
    args.out.mkdir(parents=True, exist_ok=True)
    print(f"{env['name']}: every kernel at the {args.size} sizes, then the sweep. Writing {args.out / (stem + '.json')} as it goes.")
    print(HEADER)
    record = validate(args.size, args.repeats, out=args.out / f"{stem}.json")
    (args.out / f"{stem}.txt").write_text(table(record) + "\n")
    return 0 if not record["failures"] else 1


if __name__ == "__main__":
    sys.exit(main())
