"""The GPU runtime: detection that falls back cleanly, a live GPU record built from device
attributes, the validation command, and recorded measurements."""

import json
import pathlib
import sys
import types

import pytest

import gpumodel as gm
from gpumodel import compiler, gpu_runtime as runtime, recorded_runs as measurements, validate

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
    notice = gm.chapter.gpu_notice().data
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
    with pytest.raises(ValueError, match="capability must be one of"):
        runtime.gpu_from_attributes("X", (6, 1), H100_ATTRIBUTES, 1)


@pytest.mark.parametrize("name, cc, preset", [
    ("NVIDIA A100-SXM4-80GB", (8, 0), "A100-80GB"), ("NVIDIA A100-SXM4-40GB", (8, 0), "A100-40GB"),
    ("NVIDIA H100 PCIe", (9, 0), "H100-PCIe"), ("Tesla T4", (7, 5), "T4"), ("NVIDIA GeForce RTX 4090", (8, 9), "RTX-4090"),
    ("NVIDIA RTX 6000 Ada Generation", (8, 9), "L4"),
])
def test_closest_preset(name, cc, preset):
    assert runtime.closest_preset(name, cc) == preset


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
    assert validate.main(["--out", str(tmp_path), "--quick", "--repeats", "2"]) == 0
    (record,) = measurements.load(tmp_path)
    assert {row["kernel"] for row in record["kernels"]} >= {"vector_add", "gemm_reg128", "attention_flash"}


def test_recorded_measurements_load_and_none_are_made_up(tmp_path):
    assert measurements.rows("gemm_reg128", tmp_path) == []
    record = {"gpu": {"name": "Example GPU"}, "date": "2026-01-01T00:00:00+00:00", "command": "python -m gpumodel.validate --out x",
              "kernels": [{"kernel": "gemm_reg128", "measured_s": 0.001}]}
    (tmp_path / "a.json").write_text(json.dumps(record))
    (row,) = measurements.rows("gemm_reg128", tmp_path)
    assert row["gpu"] == "Example GPU" and row["command"].startswith("python -m gpumodel.validate")
    (tmp_path / "b.json").write_text("{}")
    with pytest.raises(ValueError, match="b.json is not a validation record"):
        measurements.load(tmp_path)


def test_shipped_measurements_are_real_records():
    for record in measurements.load():
        assert record["gpu"]["driver_version"] and record["command"].startswith("python -m gpumodel.validate")


def test_the_gpu_code_path_on_a_cpu_stand_in(monkeypatch, tmp_path):
    """`validate` end to end with CuPy replaced by tests/fake_cupy.py (NumPy arrays, kernels
    on the CPU emulator, an H100's attributes): every kernel runs through Runner.launch and
    Runner.check against its reference, is timed, compared with the model, and recorded."""
    import fake_cupy

    monkeypatch.setitem(sys.modules, "cupy", fake_cupy.make(tmp_path))
    monkeypatch.setattr(runtime, "_status", (True, "CPU stand-in"))
    record = validate.validate("tiny", repeats=1)
    names = [row["kernel"] for row in record["kernels"]]
    assert len(names) == len(list(validate.chapter_plans("tiny")))
    for row in record["kernels"]:
        assert row["measured_s"] > 0 and row["max_abs_error"] <= 1e-2, row
    assert {"pct_of_cublas", "predicted_s", "error_pct"} <= set(next(r for r in record["kernels"] if r["kernel"] == "gemm_reg128"))
    assert record["gpu"]["name"].startswith("NVIDIA H100") and record["live_gpu"]["sms"]["value"] == 132
    assert len(record["sweep"]["sizes_bytes"]) == len(record["sweep"]["bandwidth_Bps"]) > 0
    json.dumps(record)  # a record is plain JSON
    assert validate.table(record).count("\n") == len(names) + 3
