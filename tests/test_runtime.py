"""The GPU runtime: detection that falls back cleanly, a live GPU record built from device
attributes, the validation command, and recorded measurements."""

import json
import pathlib
import sys
import types

import pytest

import gpumodel as gm
from gpumodel.cuda import compiler, runtime, validate
from gpumodel.cuda import recorded_runs as measurements

sys.path.insert(0, str(pathlib.Path(__file__).parent))

# What an H100 SXM reports through cudaDeviceGetAttribute (clocks in kHz, bus in bits).
H100_ATTRIBUTES = {
    "MultiProcessorCount": 132, "ClockRate": 1980000, "MemoryClockRate": 2619000,
    "GlobalMemoryBusWidth": 5120, "L2CacheSize": 50 * 2**20,
    "MaxSharedMemoryPerMultiprocessor": 233472, "MaxRegistersPerMultiprocessor": 65536,
}


@pytest.fixture
def fresh_probe(monkeypatch):
    monkeypatch.setattr(runtime, "_status", None)


def fake_cupy(error):
    """A cupy module whose device calls raise `error`, as CuPy does without a driver."""
    def fail(*args, **kwargs):
        raise error

    cuda = types.SimpleNamespace(runtime=types.SimpleNamespace(getDeviceCount=fail))
    return types.SimpleNamespace(cuda=cuda, zeros=fail)


def test_cupy_without_a_driver_falls_back_to_the_log_not_the_page(monkeypatch, fresh_probe, capsys, caplog):
    class CUDARuntimeError(RuntimeError):
        pass

    monkeypatch.setitem(sys.modules, "cupy", fake_cupy(CUDARuntimeError("cudaErrorNoDevice: no CUDA-capable device is detected")))
    caplog.set_level("INFO", logger="gpumodel")
    assert runtime.have_gpu() is False
    assert capsys.readouterr().out == ""
    assert "CuPy is installed but no GPU answers (CUDARuntimeError: cudaErrorNoDevice)" in caplog.text
    notice = gm.book.chapter.gpu_notice().data
    assert notice.startswith("> **Running without a GPU**") and "CUDARuntimeError" not in notice


def test_no_cupy_falls_back(monkeypatch, fresh_probe):
    monkeypatch.setitem(sys.modules, "cupy", None)  # import cupy raises ImportError
    assert runtime.gpu_status() == (False, "CuPy is not installed")


def test_this_machine_answers_consistently():
    ok, why = runtime.gpu_status()
    assert isinstance(ok, bool) and why
    assert runtime.have_gpu() is ok


def test_live_record_from_h100_attributes():
    g = runtime.gpu_from_attributes("NVIDIA H100 80GB HBM3", (9, 0), H100_ATTRIBUTES, 85_000_000_000)
    assert g.peak_flops == 132 * 128 * 2 * 1.98e9
    assert g.bandwidth("hbm") == pytest.approx(3.352e12, rel=1e-3)
    assert g.capacity("l2") == 50 * 2**20
    assert g.clock.kind == "measured" and g.l2_bandwidth.kind == "estimate"
    assert "H100-SXM" in g.l2_bandwidth.note
    p = gm.predict(gm.gemm(4096, 4096, 4096, block=(128, 128), thread=(8, 8)), g)
    assert p.bound == "smem"


def test_live_record_without_a_clock_borrows_the_presets():
    attrs = {**H100_ATTRIBUTES, "ClockRate": 0}
    g = runtime.gpu_from_attributes("NVIDIA H200", (9, 0), attrs, 141_000_000_000)
    assert g.clock.value == gm.gpu("H200").clock.value
    assert "not reported by the device" in g.clock.note


def test_live_record_refuses_an_unknown_capability():
    with pytest.raises(ValueError, match="capability version must be one of"):
        runtime.gpu_from_attributes("X", (6, 1), H100_ATTRIBUTES, 1)


def _by_the_files(name, cc):
    """The preset and the reason `match_device` should give, read from the GPU files: the file
    listing the whole name, else the family of `cc`, else that of the newest capability below."""
    gpus = [gm.gpu(n) for n in gm.preset_names()]
    listed = [g.name for g in gpus if " ".join(name.lower().split()) in {d.lower() for d in g.devices}]
    if listed:
        return listed[0], "listed"
    families = {g.capability.version: g.name for g in gpus if g.family}
    if cc in families:
        return families[cc], f"stands for compute capability {cc[0]}.{cc[1]}"
    return families[max(v for v in families if v < cc)], "the newest capability below it"


@pytest.mark.parametrize("name, cc", [
    ("NVIDIA A100-SXM4-80GB", (8, 0)), ("NVIDIA A100-SXM4-40GB", (8, 0)), ("NVIDIA H100 PCIe", (9, 0)),
    ("Tesla  t4", (7, 5)), ("NVIDIA GeForce RTX 4090", (8, 9)),
    ("NVIDIA L40S", (8, 9)),  # an L4 only if no file lists it: never by a part of its name
    ("NVIDIA RTX 6000 Ada Generation", (8, 9)),
    ("NVIDIA GH200 480GB", (9, 0)),  # not an H200 by a part of its name
    ("NVIDIA GeForce RTX 5090", (12, 0)),
])
def test_a_device_is_matched_by_its_whole_name_else_its_family(name, cc):
    preset, how = _by_the_files(name, cc)
    chosen, said = gm.presets.match_device(name, cc)
    assert chosen == preset and how in said


def test_every_device_name_and_family_is_in_the_gpu_files():
    """Adding a GPU is adding one file: its `devices` and `family` are read from it, and two
    files may not claim one device or one capability's family."""
    gpus = [gm.gpu(n) for n in gm.preset_names()]
    for g in gpus:
        for device in g.devices:
            assert gm.presets.match_device(device, g.capability.version)[0] == g.name
    versions = {g.capability.version for g in gpus}
    assert {g.capability.version for g in gpus if g.family} == versions  # every capability has its family


def test_the_live_record_says_which_preset_it_borrowed_from_and_why():
    name = "NVIDIA RTX 6000 Ada Generation"
    family, how = _by_the_files(name, (8, 9))
    assert how != "listed", "pick a device no GPU file lists"
    g = runtime.gpu_from_attributes(name, (8, 9), H100_ATTRIBUTES, 48_000_000_000)
    assert f"{family}'s figure (no preset lists {name}; {family} {how})" in g.l2_bandwidth.note


def test_validate_without_a_gpu_says_so_and_exits_2(monkeypatch, fresh_probe, capsys, tmp_path):
    monkeypatch.setattr(runtime, "_status", (False, "CuPy is not installed"))
    monkeypatch.setattr(validate, "gpu_status", runtime.gpu_status)
    assert validate.main(["--out", str(tmp_path)]) == 2
    assert capsys.readouterr().out == "No GPU: CuPy is not installed. Nothing to validate.\n"
    assert list(tmp_path.iterdir()) == []


def test_chapter_plans_cover_every_kernel():
    names = {s.kernel for plan in validate.chapter_plans("quick") for s in plan.steps}
    for path in compiler.kernel_dir().glob("*.cu"):
        assert set(compiler.kernel_names(path.read_text())) <= names


@pytest.mark.gpu
def test_validate_quick_on_the_gpu(tmp_path):
    assert validate.main(["--out", str(tmp_path), "--size", "quick", "--repeats", "2"]) == 0
    (record,) = measurements.load(tmp_path)
    assert {row["kernel"] for row in record["kernels"]} >= {"vector_add", "gemm_reg128", "attention_flash"}


def test_recorded_measurements_load_and_none_are_made_up(tmp_path):
    assert measurements.rows("gemm_reg128", tmp_path) == []
    record = {"gpu": {"name": "Example GPU"}, "date": "2026-01-01T00:00:00+00:00", "command": "python -m gpumodel.cuda.validate --out x",
              "kernels": [{"kernel": "gemm_reg128", "measured_s": 0.001}]}
    (tmp_path / "a.json").write_text(json.dumps(record))
    (row,) = measurements.rows("gemm_reg128", tmp_path)
    assert row["gpu"] == "Example GPU" and row["command"].startswith("python -m gpumodel.cuda.validate")
    (tmp_path / "b.json").write_text("{}")
    with pytest.raises(ValueError, match="b.json is not a validation record"):
        measurements.load(tmp_path)


def test_shipped_measurements_are_real_records():
    for record in measurements.load():
        assert record["gpu"]["driver_version"] and record["command"].startswith("python -m gpumodel.cuda.validate")


@pytest.fixture
def stand_in(monkeypatch, tmp_path):
    """CuPy replaced by tests/fake_cupy.py (as strict as CuPy 14: kernels on the CPU
    emulator, an H100's attributes), and a GPU that answers."""
    import fake_cupy

    cupy = fake_cupy.make(tmp_path)
    monkeypatch.setitem(sys.modules, "cupy", cupy)
    monkeypatch.setattr(runtime, "_status", (True, "CPU stand-in"))
    return cupy


@pytest.mark.slow
def test_the_gpu_code_path_on_a_cpu_stand_in(stand_in, tmp_path):
    """`validate` end to end on the stand-in: every kernel runs through Runner.launch and
    Runner.check against its reference, is timed, compared with the model, and recorded,
    with the driver's view of each kernel; the record is written as it goes."""
    said = []
    out = tmp_path / "record.json"
    record = validate.validate("tiny", repeats=1, out=out, say=said.append)
    names = [row["kernel"] for row in record["kernels"]]
    assert record["failures"] == [] and len(names) == len(list(validate.chapter_plans("tiny")))
    for row in record["kernels"]:
        assert row["measured_s"] > 0 and row["max_abs_error"] <= 1e-2, row
        assert row["launches_per_sample"] >= 1 and row["spread_s"][0] <= row["measured_s"] <= row["spread_s"][1]
    reg128 = next(r for r in record["kernels"] if r["kernel"] == "gemm_reg128")
    assert {"pct_of_cublas", "predicted_s", "error_pct", "achieved_flops"} <= set(reg128)
    assert reg128["driver"]["gemm_reg128"]["registers"] == reg128["driver"]["gemm_reg128"]["nvrtc_registers"] > 0
    assert "cublas_s" in next(r for r in record["kernels"] if r["kernel"] == "attention_standard")
    assert record["gpu"]["name"].startswith("NVIDIA H100") and record["live_gpu"]["sms"]["value"] == 132
    assert record["gpu"]["matmul_compute_type"] == "fp32" and record["gpu"]["max_sm_clock_hz"] == 1.98e9
    assert len(record["sweep"]["sizes_bytes"]) == len(record["sweep"]["bandwidth_Bps"]) > 0
    assert json.loads(out.read_text()) == json.loads(json.dumps(record))  # written, plain JSON
    assert len(said) == len(names) + 1 and said[0].startswith("vector_add")  # a line per row, then the sweep
    assert validate.table(record).count("\n") == len(names) + 3


@pytest.mark.slow
def test_a_failing_plan_is_recorded_and_the_run_goes_on(stand_in, monkeypatch):
    """A wrong result, a launch error and running out of memory each become a recorded
    failure; the other plans still run."""
    real = runtime.Runner.launch

    def launch(self, plan, buffers):
        if plan.kernel == "gemm_naive":
            raise MemoryError("Out of memory allocating 4,294,967,296 bytes")
        if plan.kernel == "transpose_naive":
            raise RuntimeError("CUDA_ERROR_LAUNCH_FAILED")
        real(self, plan, buffers)
        if plan.kernel == "vector_add":
            buffers["c"][:] += 1  # a wrong result

    monkeypatch.setattr(runtime.Runner, "launch", launch)
    said = []
    record = validate.validate("tiny", repeats=1, say=said.append)
    failed = {f["kernel"]: f["error"] for f in record["failures"]}
    assert set(failed) == {"gemm_naive", "transpose_naive", "vector_add"}
    assert failed["gemm_naive"].startswith("MemoryError: Out of memory") and "differs from the reference" in failed["vector_add"]
    assert len(record["kernels"]) == len(list(validate.chapter_plans("tiny"))) - 3
    assert any("FAILED" in line for line in said) and "FAILED" in validate.table(record)


def test_the_probe_reports_a_gpu_without_cublas(monkeypatch, fresh_probe, stand_in):
    def no_cublas(*args, **kwargs):
        raise ImportError('Failure finding "libcublasLt.so.12": No such file')

    monkeypatch.setattr(runtime, "_status", None)
    monkeypatch.setattr(stand_in, "ones", no_cublas, raising=False)
    ok, why = runtime.gpu_status()
    assert not ok and "answers, but cuBLAS does not (ImportError" in why and "nvidia-cublas-cu12" in why
    assert not runtime.have_gpu()  # so the chapters take the CPU path


def test_the_timer_batches_short_launches(stand_in):
    """A 2 us kernel is timed 50 launches to a sample (100 us of work), a 1 ms one alone."""
    assert runtime.launches_per_sample(2e-6) == 50 and runtime.launches_per_sample(1e-3) == 1
    calls = []
    timing = runtime.Runner().time(lambda: calls.append(1), repeats=3, warmup=0, flush=False)
    assert timing.launches > 1  # appending to a list takes far less than 100 us
    assert len(calls) == 1 + 3 * timing.launches
    assert timing.min_s <= timing.median_s <= timing.max_s and timing.samples == 3


def test_validate_plans_its_gpu_time_from_its_sizes():
    quick, full = validate.planned_seconds("quick", 10, "H200"), validate.planned_seconds("full", 10, "H200")
    assert 0 < quick < full < 8 * 60  # the model's GPU time; compiling and drawing inputs come on top
    assert validate.planned_seconds("quick", 20, "H200") > quick
    assert validate.planned_seconds("full", 10, "T4") > full  # a slower GPU plans more


def test_cublas_comes_with_the_install():
    """requirements.txt installs cuBLAS beside CuPy, so a GPU finds it (no GPU is needed to
    load the library and read its version)."""
    pytest.importorskip("cupy", reason="CuPy is not installed (macOS)")  # its import finds the wheels' libraries
    from cupy_backends.cuda.libs import cublas
    assert cublas.getVersion(0) >= 12_000


