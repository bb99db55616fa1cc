"""`python -m gpumodel.cuda.gpu_check --out DIR` (`make gpu-check`): the first minutes on a GPU.

Prints the environment, compiles every kernel and prints the driver's registers, local and
shared memory beside NVRTC's report, runs the GPU tests, times vector add at 2^10, 2^20 and
2^24 elements (a time that stays flat exposes a host floor), then `validate --size quick`
and `--size full` (NVML clock and power sampled into the record). Each step runs in its own
process under its own time limit, and is skipped, with the reason, when less than that is
left of the budget. It installs nothing and writes nothing into the checkout: one archive
in DIR (the steps' logs, the validation records, a summary) to commit unchanged.
"""

from __future__ import annotations

import argparse
import datetime
import importlib.metadata
import json
import os
import pathlib
import subprocess
import sys
import tarfile
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]
STEPS = {  # name -> seconds it may take
    "environment": 30, "compile": 60, "tests": 120, "vector_add": 30, "validate_quick": 90, "validate_full": 210,
}
"""Each step's time limit (s): 540 in all, the default budget (9 minutes)."""


def step_environment(args) -> None:
    """Driver, CUDA, CuPy, cuBLAS, compute type, clocks; every CuPy package installed."""
    from .runtime import NvmlSampler, environment, gpu_status

    print("GPU:", gpu_status())
    for key, value in environment().items():
        print(f"{key}: {value}")
    packages = sorted(d.metadata["Name"] for d in importlib.metadata.distributions()
                      if (d.metadata["Name"] or "").lower().startswith("cupy"))
    print("CuPy packages:", ", ".join(packages), "(MORE THAN ONE: uninstall all but one)" if len(packages) > 1 else "")
    with NvmlSampler() as nvml:
        pass
    print("NVML now:", nvml.median() or "not answering")


def step_compile(args) -> None:
    """Every kernel compiled through CuPy; the driver's view beside NVRTC's report."""
    from . import compiler
    from .runtime import Runner, device_info, kernel_attributes

    runner = Runner()
    major, minor = device_info()["compute_capability"]
    arch = f"sm_{major}{minor}"
    try:
        nvrtc = {(r.file, r.kernel): r for r in compiler.report(archs=(arch,))}
        where = f"NVRTC now, {arch}"
    except Exception as err:  # no NVRTC for the report: the recorded one  # noqa: BLE001
        nvrtc = {(r.file, r.kernel): r for r in compiler.recorded()["reports"] if r.arch == arch}
        where = f"recorded, {arch} ({type(err).__name__})"
    print(f"{'kernel':<24} {'regs':>5} {'local B':>8} {'smem B':>7} | NVRTC ({where}): regs, spill stores, smem")
    for path in sorted(compiler.kernel_dir().glob("*.cu")):
        for name in compiler.kernel_names(path.read_text()):
            a = kernel_attributes(runner, path.name, name)
            r = nvrtc.get((path.name, name))
            theirs = f"{r.registers:>5} {r.spill_stores:>5} {r.smem:>7}" if r else "    -"
            print(f"{name:<24} {a['registers']:>5} {a['local_bytes']:>8} {a['smem_bytes']:>7} | {theirs}")


def step_vector_add(args) -> None:
    """Vector add timed at 2^e elements for each e of `args.vector_exponents`."""
    from .runtime import Runner
    from .plans import plan_vector_add
    from ..units import fmt_bandwidth, fmt_time

    runner, times = Runner(), []
    for e in args.vector_exponents:
        plan = plan_vector_add(2**e)
        bufs = runner.buffers(plan)
        t = runner.time_plan(plan, bufs, repeats=5)
        times.append(t.median_s)
        print(f"2^{e:<3} {fmt_time(t.median_s):>10} {fmt_bandwidth(12 * 2**e / t.median_s):>12}  ({t.launches} launches a sample)")
        bufs.clear()
    if len(times) > 1 and times[1] < 2 * times[0]:
        print(f"FLAT: 2^{args.vector_exponents[1]} takes {times[1] / times[0]:.1f} x 2^{args.vector_exponents[0]}'s time: "
              "a host floor, not the GPU, sets the short times")


def _run(name: str, command: list, limit: float, folder: pathlib.Path) -> dict:
    """Run one step's command under `limit` seconds; its output to the screen and to folder/name.log."""
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    started = time.monotonic()
    try:
        done = subprocess.run(command, cwd=folder, env=env, capture_output=True, text=True, timeout=limit)
        status, output = ("ok" if done.returncode == 0 else f"exit {done.returncode}"), done.stdout + done.stderr
    except subprocess.TimeoutExpired as err:
        status = f"stopped at its {limit:.0f} s limit"
        output = "".join(x.decode() if isinstance(x, bytes) else x for x in (err.stdout, err.stderr) if x)
    (folder / f"{name}.log").write_text(output)
    print(output, end="" if output.endswith("\n") or not output else "\n")
    return {"step": name, "status": status, "seconds": round(time.monotonic() - started, 1), "limit_s": limit}


def _commands(args, folder: pathlib.Path) -> dict:
    me = [sys.executable, "-m", "gpumodel.cuda.gpu_check", "--step"]
    exps = [str(e) for e in args.vector_exponents]
    tests = [sys.executable, "-B", "-m", "pytest", str(ROOT / "tests" / "test_kernels.py"), "-m", "gpu", "-q",
             "-p", "no:cacheprovider", "--rootdir", str(ROOT)]
    out = {"environment": me + ["environment"], "compile": me + ["compile"], "tests": tests,
           "vector_add": me + ["vector_add", "--vector-exponents", *exps]}
    for size in args.validate_sizes:
        out[f"validate_{size}"] = [sys.executable, "-m", "gpumodel.cuda.validate", "--out", str(folder / f"validate-{size}"),
                                   "--size", size, "--repeats", "5"]
    return out


def check(args) -> pathlib.Path:
    """Run the steps within `args.budget_s` seconds; return the archive written in `args.out`."""
    out = args.out.resolve()
    if out == ROOT or ROOT in out.parents:
        raise ValueError(f"--out must be outside the checkout {ROOT} (this command writes nothing into it), got {out}")
    started = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp:
        folder = pathlib.Path(tmp) / f"gpu-check-{datetime.date.today().isoformat()}"
        folder.mkdir()
        commands, summary = _commands(args, folder), []
        limits = {name: STEPS.get(name, STEPS["validate_full"]) * args.limit_scale for name in commands}
        for name, command in commands.items():
            left = args.budget_s - (time.monotonic() - started)
            print(f"== {name} (limit {limits[name]:.0f} s, {left:.0f} s of the budget left)", flush=True)
            if name == "tests" and not (ROOT / "tests" / "test_kernels.py").exists():
                summary.append({"step": name, "status": "skipped: no tests/ here (an installed package)"})
            elif left < limits[name]:
                summary.append({"step": name, "status": f"skipped: {left:.0f} s left of the budget, the step may take {limits[name]:.0f} s"})
            else:
                summary.append(_run(name, command, limits[name], folder))
            print(f"-- {name}: {summary[-1]['status']}", flush=True)
        (folder / "summary.json").write_text(json.dumps({"command": " ".join(sys.argv), "steps": summary}, indent=1) + "\n")
        out.mkdir(parents=True, exist_ok=True)
        archive = out / f"{folder.name}.tar.gz"
        with tarfile.open(archive, "w:gz") as tar:
            tar.add(folder, arcname=folder.name)
    print(f"wrote {archive}: commit it unchanged")
    return archive


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m gpumodel.cuda.gpu_check", description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=pathlib.Path, default=pathlib.Path.home() / "gpu-check",
                        help="folder for the archive, outside the checkout (default ~/gpu-check)")
    parser.add_argument("--limit-scale", type=float, default=1.0,
                        help="multiplies every step's limit and the budget (1.6 on a T4: 15 minutes)")
    parser.add_argument("--budget-s", type=float, help="seconds for all the steps (default: the limits' sum)")
    parser.add_argument("--validate-sizes", nargs="*", default=["quick", "full"], choices=["quick", "full", "tiny"])
    parser.add_argument("--vector-exponents", nargs="*", type=int, default=[10, 20, 24])
    parser.add_argument("--step", choices=["environment", "compile", "vector_add"], help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.budget_s is None:
        args.budget_s = sum(STEPS.values()) * args.limit_scale
    if args.step:
        {"environment": step_environment, "compile": step_compile, "vector_add": step_vector_add}[args.step](args)
        return 0
    from .runtime import gpu_status

    ok, why = gpu_status()
    if not ok:
        print(f"No GPU: {why}. Nothing to check.")
        return 2
    check(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
