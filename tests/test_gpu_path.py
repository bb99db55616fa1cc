"""The GPU path against a stand-in as strict as CuPy (tests/fake_cupy.py): the stand-in's own
strictness, then one test per defect a line-by-line read against CuPy 13 and 14 found
(issue 25), each of which the lenient stand-in let through."""

import json
import os
import pathlib
import sys
import types

import numpy as np
import pytest

from gpumodel.cuda import compiler, plans, runtime, validate

sys.path.insert(0, str(pathlib.Path(__file__).parent))
import fake_cupy  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parent.parent


@pytest.fixture
def strict(monkeypatch, tmp_path):
    """CuPy 14 replaced by the strict stand-in on an H100, and a GPU that answers."""
    cupy = fake_cupy.make(tmp_path)
    monkeypatch.setitem(sys.modules, "cupy", cupy)
    monkeypatch.setattr(runtime, "_status", (True, "CPU stand-in"))
    monkeypatch.delitem(sys.modules, "pynvml", raising=False)
    monkeypatch.setitem(sys.modules, "pynvml", None)  # no NVML unless a test brings one
    return cupy


# The stand-in is as strict as CuPy, and no larger.

def _public(obj) -> set:
    return {n for n in (vars(obj) if isinstance(obj, (types.SimpleNamespace, types.ModuleType)) else dir(obj))
            if not n.startswith("_")}


def test_the_stand_in_offers_nothing_cupy_lacks(tmp_path):
    cupy = pytest.importorskip("cupy", reason="CuPy is not installed (macOS)")
    fake = fake_cupy.make(tmp_path)
    pairs = [(fake, cupy), (fake.cuda, cupy.cuda), (fake.cuda.runtime, cupy.cuda.runtime),
             (fake.cuda.driver, cupy.cuda.driver)]
    pairs += [(getattr(fake, n), getattr(cupy, n)) for n in ("ndarray", "RawModule")]
    pairs += [(getattr(fake.cuda, n), getattr(cupy.cuda, n)) for n in ("Event", "Stream", "Graph", "Device", "MemoryPool")]
    kernel = fake.RawModule(code=compiler.kernel_source("elementwise.cu")).get_function("vector_add")
    pairs += [(kernel, cupy.RawKernel), (fake.cuda.Device(), cupy.cuda.Device), (fake.zeros(2), cupy.ndarray)]
    for ours, theirs in pairs:
        extra = _public(ours) - set(dir(theirs))
        assert not extra, f"{ours!r} offers {sorted(extra)}, which CuPy's {theirs!r} lacks"


def test_no_numpy_fallback_and_arrays_are_copies(strict):
    with pytest.raises(AttributeError):
        strict.frombuffer  # noqa: B018 (NumPy has it; this stand-in does not)
    host = np.ones(4, np.float32)
    device = strict.asarray(host)
    host[:] = 7
    assert device.get().tolist() == [1, 1, 1, 1]
    with pytest.raises(TypeError, match="Implicit conversion"):
        np.asarray(device)
    with pytest.raises(TypeError, match="Unsupported type"):
        device + host


def _vector_add(cupy, n=64):
    kernel = cupy.RawModule(code=compiler.kernel_source("elementwise.cu")).get_function("vector_add")
    a, b, c = (cupy.asarray(np.full(n, v, np.float32)) for v in (1, 2, 0))
    return kernel, a, b, c


def test_a_python_scalar_argument_is_refused(strict):
    kernel, a, b, c = _vector_add(strict)
    for wrong in (64, np.int64(64), 64.0):
        with pytest.raises(TypeError, match="n is int, passed"):
            kernel((1,), (64,), (a, b, c, wrong))
    with pytest.raises(TypeError, match="tuples"):
        kernel([1], [64], (a, b, c, np.int32(64)))
    kernel((1,), (64,), (a, b, c, np.int32(64)))
    assert c.get().tolist() == [3] * 64


@pytest.mark.parametrize("grid, block, error", [
    ((1,), (2048,), "INVALID_VALUE"), ((1, 70000), (32,), "INVALID_VALUE"), ((1,), (32, 32, 2), "INVALID_VALUE"),
])
def test_a_launch_over_a_limit_is_refused(strict, grid, block, error):
    kernel, a, b, c = _vector_add(strict)
    with pytest.raises(fake_cupy.CUDADriverError, match=error):
        kernel(grid, block, (a, b, c, np.int32(64)))


def test_launches_are_asynchronous_and_events_need_a_synchronize(strict):
    kernel, a, b, c = _vector_add(strict)
    start, end = strict.cuda.Event(), strict.cuda.Event()
    start.record()
    kernel((1,), (64,), (a, b, c, np.int32(64)))
    end.record()
    assert strict._fake.launches == 0  # queued, not run
    with pytest.raises(fake_cupy.CUDARuntimeError, match="NotReady"):
        strict.cuda.get_elapsed_time(start, end)
    end.synchronize()
    assert strict._fake.launches == 1 and strict.cuda.get_elapsed_time(start, end) > 0


def test_a_fault_is_sticky(strict):
    kernel, a, b, c = _vector_add(strict)
    strict._fake.fault("vector_add")
    kernel((1,), (64,), (a, b, c, np.int32(64)))
    with pytest.raises(fake_cupy.CUDARuntimeError, match="IllegalAddress"):
        strict.cuda.Device().synchronize()
    with pytest.raises(fake_cupy.CUDARuntimeError, match="IllegalAddress"):
        strict.get_default_memory_pool().free_all_blocks()


@pytest.mark.parametrize("promotion, dtype", [(13, np.float32), (14, np.float64)])
def test_promotion_follows_cupy_13_or_14(tmp_path, promotion, dtype):
    cupy = fake_cupy.make(tmp_path, promotion=promotion)
    assert (cupy.ones(3, cupy.float32) / np.sqrt(np.float64(4))).dtype == dtype


# The defects, each caught by the strict stand-in.

@pytest.mark.slow
def test_defect_1_validate_keeps_every_row_with_the_drivers_attributes(strict, tmp_path):
    """Every row kept on the strict stand-in, each kernel's registers, local and shared
    memory read from `RawKernel` (the NVRTC report's, in the stand-in)."""
    record = validate.validate("tiny", repeats=1, out=tmp_path / "r.json", say=lambda line: None)
    assert record["failures"] == [] and len(record["kernels"]) == len(list(validate.chapter_plans("tiny")))
    nvrtc = {(r.file, r.kernel): r for r in compiler.recorded()["reports"] if r.arch == "sm_90"}
    reg128 = next(r for r in record["kernels"] if r["kernel"] == "gemm_reg128")["driver"]["gemm_reg128"]
    want = nvrtc[("gemm.cu", "gemm_reg128")]
    assert (reg128["registers"], reg128["local_bytes"], reg128["smem_bytes"]) == (want.registers, want.stack, want.smem)
    assert reg128["nvrtc_registers"] == want.registers


@pytest.mark.slow
def test_defect_1_a_failed_diagnostic_keeps_the_measurement(strict, monkeypatch):
    def broken(*args, **kwargs):
        raise AttributeError("no such attribute")

    monkeypatch.setattr(runtime, "kernel_attributes", broken)
    monkeypatch.setattr(validate, "kernel_attributes", broken)
    record = validate.validate("tiny", repeats=1, say=lambda line: None)
    assert record["failures"] == [] and record["kernels"]
    assert all("AttributeError" in row["driver_error"] and row["measured_s"] > 0 for row in record["kernels"])


def test_defect_2_one_compiled_function_per_kernel(strict):
    runner = runtime.Runner()
    plan = plans.plan_chain(4096, fused=False)
    bufs = runner.buffers(plan)
    for _ in range(3):
        runner.launch(plan, bufs)
    runner.time_plan(plan, bufs, repeats=2)
    assert strict._fake.lookups == len(plan.steps)


def test_defect_2_short_kernels_are_timed_in_a_graph_over_copies_beyond_the_l2(strict, monkeypatch):
    """Many launches to a sample go into one CUDA graph (no host launch gaps), and cycle
    over copies of the buffers that together are twice the L2 or more, so that each launch
    reads its inputs from HBM as the model says."""
    monkeypatch.setattr(runtime, "launches_per_sample", lambda one_launch_s: 16)  # as for a microsecond kernel
    strict._fake.attributes["L2CacheSize"] = 64 * 1024  # so that a few copies of a small plan are twice the L2
    runner = runtime.Runner()
    plan = plans.plan_vector_add(1024)
    seen = []
    launch = strict._fake.emulator.launch
    monkeypatch.setattr(strict._fake.emulator, "launch", lambda code, name, grid, block, args, *shared_mem: (
        seen.append(args[0].ctypes.data), launch(code, name, grid, block, args, *shared_mem))[-1])
    captured = []
    begin = strict.cuda.Stream.begin_capture
    monkeypatch.setattr(strict.cuda.Stream, "begin_capture", lambda self, mode=None: (captured.append(1), begin(self, mode))[-1])
    timing = runner.time_plan(plan, runner.buffers(plan), repeats=1, warmup=0)
    assert timing.launches == 16 and captured == [1]
    per_copy = 3 * 4 * 1024
    l2 = strict.cuda.Device().attributes["L2CacheSize"]
    assert len(set(seen)) * per_copy >= 2 * l2


@pytest.mark.parametrize("promotion", [13, 14])
def test_defect_3_the_attention_baseline_stays_fp32(tmp_path, monkeypatch, promotion):
    cupy = fake_cupy.make(tmp_path, promotion=promotion)
    monkeypatch.setitem(sys.modules, "cupy", cupy)
    plan = plans.plan_attention("standard", 1, 16, 8)
    inputs = {name: cupy.asarray(a) for name, a in plan.inputs.items()}
    assert plans.attention_reference(cupy, inputs, "float32").dtype == np.float32


def test_defect_4_the_gpu_install_brings_the_cuda_runtime_headers():
    import tomllib

    requirements = (ROOT / "requirements.txt").read_text()
    extra = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]["gpu"]
    for declared in (requirements, " ".join(extra)):
        assert "nvidia-cuda-runtime-cu12" in declared


def test_defect_4_the_probe_says_when_no_kernel_compiles(strict, monkeypatch):
    class CompileException(Exception):
        pass

    def no_headers(*args, **kwargs):
        raise CompileException("catastrophic error: cannot open source file \"cuda_fp16.h\"")

    monkeypatch.setattr(runtime, "_status", None)
    monkeypatch.setattr(strict, "RawModule", no_headers)
    ok, why = runtime.gpu_status()
    assert not ok and "cannot compile a kernel (CompileException" in why and "nvidia-cuda-runtime-cu12" in why


def test_defect_5_a_sticky_error_stops_the_run_with_the_rows_kept(strict, tmp_path):
    strict._fake.fault("gemm_naive")
    out = tmp_path / "r.json"
    record = validate.validate("tiny", repeats=1, out=out, say=lambda line: None)
    kept = [row["kernel"] for row in record["kernels"]]
    assert kept[0] == "vector_add" and "gemm_naive" not in kept and "attention_flash" not in kept
    (failure,) = record["failures"]
    assert failure["kernel"] == "gemm_naive" and "IllegalAddress" in failure["error"]
    assert "IllegalAddress" in record["stopped"] and "sweep" not in record
    assert json.loads(out.read_text())["kernels"] == json.loads(json.dumps(record["kernels"]))


def fake_nvml(clock_mhz_by_bus: dict, calls: list):
    """A pynvml whose device 0 by index is another GPU than the one at CuPy's PCI bus id."""
    handles = {"index0": 900}
    return types.SimpleNamespace(
        NVML_CLOCK_SM=0, nvmlInit=lambda: None, nvmlShutdown=lambda: None,
        nvmlDeviceGetHandleByIndex=lambda i: "index0",
        nvmlDeviceGetHandleByPciBusId=lambda bus: bus,
        nvmlDeviceGetClockInfo=lambda h, kind: (calls.append(h), {**handles, **clock_mhz_by_bus}[h])[-1],
        nvmlDeviceGetPowerUsage=lambda h: 65000,  # mW
    )


@pytest.mark.slow
def test_defect_5_nvml_reads_cupys_device_during_the_timed_loop(strict, monkeypatch):
    calls = []
    monkeypatch.setitem(sys.modules, "pynvml", fake_nvml({"0000:3B:00.0": 1200}, calls))
    record = validate.validate("tiny", repeats=1, say=lambda line: None)
    row = record["kernels"][0]
    assert row["sm_clock_hz"] == 1.2e9 and row["power_w"] == 65.0 and row["nvml_samples"] >= 1
    assert "index0" not in calls


def test_defect_5_tf32_follows_cupys_rule(strict, monkeypatch):
    monkeypatch.setenv("CUPY_TF32", "2")
    assert runtime.environment()["matmul_compute_type"] == "tf32"
    monkeypatch.setenv("CUPY_TF32", "0")
    assert runtime.environment()["matmul_compute_type"] == "fp32"


def test_defect_5_validate_prints_no_planned_time_it_cannot_keep(strict, tmp_path, capsys, monkeypatch):
    """The model's kernel time was printed as the run's GPU time, 2 to 4 x short of it
    (references, cuBLAS and drawing inputs were not counted): it is not printed."""
    monkeypatch.setattr(validate, "chapter_plans", lambda size: iter([plans.plan_vector_add(4096)]))
    monkeypatch.setattr(validate, "gpu_sweep", lambda *a, **k: (np.array([]), np.array([])))
    validate.main(["--out", str(tmp_path), "--size", "tiny", "--repeats", "1"])
    assert "planned" not in capsys.readouterr().out


# `make gpu-check` end to end on the strict stand-in.

@pytest.mark.slow
def test_gpu_check_end_to_end_on_the_strict_stand_in(tmp_path):
    """Every Python process gpu_check starts gets the stand-in (a sitecustomize on its
    path): each step runs or is skipped with its reason, one archive is written outside
    the checkout, and nothing is written into it."""
    import subprocess
    import tarfile

    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(
        f"import sys\nsys.path.insert(0, {str(ROOT / 'tests')!r})\nimport fake_cupy\n"
        f"sys.modules['cupy'] = fake_cupy.make({str(tmp_path)!r}, device='T4')\n")
    env = {**os.environ, "PYTHONPATH": f"{site}{os.pathsep}{ROOT}"}
    before = subprocess.run(["git", "status", "--porcelain", "--ignored"], cwd=ROOT, capture_output=True, text=True).stdout
    out = tmp_path / "out"
    done = subprocess.run([sys.executable, "-m", "gpumodel.cuda.gpu_check", "--out", str(out), "--validate-sizes", "tiny", "tiny",
                           "--vector-exponents", "6", "8"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout + done.stderr
    (archive,) = out.iterdir()
    with tarfile.open(archive) as tar:
        names = {pathlib.PurePath(n).name for n in tar.getnames()}
        summary = json.load(tar.extractfile(next(m for m in tar.getmembers() if m.name.endswith("summary.json"))))
    steps = {s["step"]: s["status"] for s in summary["steps"]}
    assert set(steps) == {"environment", "compile", "tests", "vector_add", "validate_tiny"}
    assert all(status == "ok" for status in steps.values()), steps
    assert {"environment.log", "compile.log", "vector_add.log"} <= names and any(n.endswith(".json") and "Tesla" in n for n in names)
    assert "Tesla T4" in done.stdout and "gemm_reg128" in done.stdout
    after = subprocess.run(["git", "status", "--porcelain", "--ignored"], cwd=ROOT, capture_output=True, text=True).stdout
    assert after == before


def test_gpu_check_skips_a_step_without_the_time_for_it(tmp_path, monkeypatch, capsys):
    from gpumodel.cuda import gpu_check

    ran = []
    monkeypatch.setattr(gpu_check, "_run", lambda name, command, limit, folder: (
        ran.append(name), {"step": name, "status": "ok"})[-1])
    parsed = types.SimpleNamespace(out=tmp_path, budget_s=100.0, limit_scale=1.0, validate_sizes=["quick"], vector_exponents=[10])
    gpu_check.check(parsed)
    assert ran == ["environment", "compile", "vector_add", "validate_quick"]  # each fits in the 100 s left
    assert "skipped: 100 s left of the budget, the step may take 120 s" in capsys.readouterr().out
    with pytest.raises(ValueError, match="--out must be outside the checkout"):
        gpu_check.check(types.SimpleNamespace(**{**vars(parsed), "out": ROOT / "x"}))


@pytest.mark.parametrize("device", ["T4", "H100"])
def test_every_launch_at_the_chapters_sizes_fits_the_devices_limits(tmp_path, device):
    """Each launch of `validate --size full` (the chapters' sizes) passes the stand-in's
    launch checks on a T4 and an H100: block and grid limits, registers, static shared
    memory, scalar types. Queued, never run (the arrays are stand-ins of one element)."""
    cupy = fake_cupy.make(tmp_path, device=device)
    modules = {}
    for plan in validate.chapter_plans("full"):
        module = modules.setdefault(plan.file, cupy.RawModule(code=compiler.kernel_source(plan.file)))
        for step in plan.steps:
            args = tuple(cupy.zeros(1, cupy.float32) if isinstance(a, str) else a for a in step.args)
            module.get_function(step.kernel)(tuple(step.grid), tuple(step.block), args)
    assert len(cupy._fake.pending) == sum(len(p.steps) for p in validate.chapter_plans("full"))


def test_launch_costs_time_single_launches_and_a_graph(strict):
    """Chapter 7's measurement on the stand-in: one launch at a time and one graph, each a
    positive time per kernel."""
    costs = runtime.Runner().launch_costs(kernels=20, repeats=2)
    assert costs["kernels"] == 20 and costs["stream"] > 0 and costs["graph"] > 0
