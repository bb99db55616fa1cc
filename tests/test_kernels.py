"""The CUDA kernels: they compile for sm_80 and sm_90 with the register and spill counts the
course claims, they compute the right answer (on the CPU emulator everywhere, on the GPU
where one answers), and their launch plans match the model's workloads."""

import json
import pathlib
import subprocess
import sys
import zipfile

import numpy as np
import pytest

import gpumodel as gm
from gpumodel.cuda import compiler
from gpumodel.cuda import plans as launches
from gpumodel.lab.runner import Emulator

pytestmark = pytest.mark.xdist_group("kernels")  # one worker builds the module's fixtures once

HOT = {"vector_add", "relu_scale_bias", "strided_read", "sweep_read", "gemm_reg128_raster", "gemm_smem16", "gemm_reg128", "transpose_padded", "flash_attn_d64"}
ODD = [  # sizes that are not multiples of any tile
    lambda: launches.plan_vector_add(1000),
    lambda: launches.plan_chain(1000, fused=False),
    lambda: launches.plan_chain(1000, fused=True),
    lambda: launches.plan_gemm("gemm_naive", 37, 29, 13),
    lambda: launches.plan_gemm("gemm_smem16", 37, 29, 13),
    lambda: launches.plan_gemm("gemm_reg128", 200, 136, 40),
    lambda: launches.plan_gemm("gemm_spill", 130, 129, 9),
    lambda: launches.plan_transpose("transpose_naive", 70),
    lambda: launches.plan_transpose("transpose_smem", 70),
    lambda: launches.plan_transpose("transpose_padded", 70),
    lambda: launches.plan_attention("standard", 2, 40, 64),
    lambda: launches.plan_attention("flash", 2, 100, 64),
    lambda: launches.plan_sweep(1000, passes=3),
    lambda: launches.plan_strided(1000, 3),
    lambda: launches.plan_gemm_raster(300, 260, 24, group=0),
    lambda: launches.plan_gemm_raster(300, 260, 24, group=2),
]


@pytest.fixture(scope="module")
def reports():
    found = compiler.compiler()
    if found is None:
        pytest.skip("no CUDA compiler: install nvidia-cuda-nvrtc-cu12 (requirements.txt) or nvcc")
    return compiler.report(("sm_80", "sm_90"))


@pytest.mark.slow
def test_every_kernel_compiles_for_both_architectures(reports):
    for path in compiler.kernel_dir().glob("*.cu"):
        for arch in ("sm_80", "sm_90"):
            names = [r.kernel for r in reports if r.file == path.name and r.arch == arch]
            assert names == compiler.kernel_names(path.read_text()), (path.name, arch)


@pytest.mark.slow
def test_hot_kernels_do_not_spill_and_the_oversized_tile_does(reports):
    for r in reports:
        assert r.registers <= 255
        if r.kernel in HOT:
            assert (r.spill_stores, r.spill_loads) == (0, 0), r
    spill = [r for r in reports if r.kernel == "gemm_spill"]
    assert len(spill) == 2 and all(r.spill_stores > 0 and r.spill_loads > 0 for r in spill)


@pytest.mark.slow
def test_shared_memory_is_what_the_tiles_need(reports):
    smem = {(r.kernel, r.arch): r.smem for r in reports}
    for arch in ("sm_80", "sm_90"):
        assert smem[("gemm_reg128", arch)] == 4 * (128 * 8 + 8 * 128)
        assert smem[("transpose_smem", arch)] == 4 * 32 * 32
        assert smem[("transpose_padded", arch)] == 4 * 32 * 33
        assert smem[("flash_attn_d64", arch)] == 4 * 2 * 64 * 64


def test_parse_ptxas_reads_a_report():
    log = (
        "ptxas info    : Compiling entry function 'k' for 'sm_90'\n"
        "ptxas info    : Function properties for k\n"
        "ptxas         .     16 bytes stack frame, 8 bytes spill stores, 4 bytes spill loads\n"
        "ptxas info    : Used 40 registers, used 1 barriers, 2304 bytes smem, 384 bytes cmem[0]\n"
    )
    (r,) = compiler.parse_ptxas(log, "x.cu", "sm_90")
    assert (r.kernel, r.registers, r.spill_stores, r.spill_loads, r.stack, r.smem) == ("k", 40, 8, 4, 16, 2304)


def test_report_refuses_a_virtual_architecture():
    with pytest.raises(ValueError, match="archs must name real architectures"):
        compiler.report(("compute_80",))


@pytest.fixture(scope="module")
def emulator(tmp_path_factory):
    return Emulator(tmp_path_factory.mktemp("emulator"))


@pytest.mark.parametrize("make", ODD, ids=lambda f: "")
def test_kernels_are_correct_on_the_cpu_emulator(emulator, make):
    plan = make()
    got = emulator.run(plan)
    want = plan.reference(np, plan.inputs)
    np.testing.assert_allclose(got, want, rtol=plan.rtol, atol=plan.atol, err_msg=plan.label)


@pytest.mark.gpu
@pytest.mark.parametrize("make", ODD, ids=lambda f: "")
def test_kernels_are_correct_on_the_gpu(make):
    from gpumodel.cuda.runtime import Runner

    plan = make()
    runner = Runner()
    error = runner.check(plan, runner.buffers(plan))  # raises AssertionError outside the plan's tolerance
    assert np.isfinite(error)


def test_plans_carry_the_models_workloads():
    plan = launches.plan_gemm("gemm_reg128", 4096, 4096, 4096)
    model = gm.gemm(4096, 4096, 4096, block=(128, 128, 8), thread=(8, 8))
    for level in gm.LEVELS:
        assert plan.workload.bytes[level] == model.bytes[level]
    (step,) = plan.steps
    assert step.grid == (32, 32) and step.block == (16, 16)
    flash = launches.plan_attention("flash", 1, 256)
    assert flash.workload.bytes["hbm"] == gm.attention(1, 1, 256, 64, "fp32", "flash", block=(64, 64)).bytes["hbm"]
    assert launches.plan_transpose("transpose_naive", 64).workload is None


def test_plans_refuse_bad_input():
    with pytest.raises(ValueError, match="kernel must be one of"):
        launches.plan_gemm("gemm_fast", 64, 64, 64)
    with pytest.raises(ValueError, match="d must be 64"):
        launches.plan_attention("flash", 1, 128, 32)
    with pytest.raises(ValueError, match="n must be positive"):
        launches.plan_vector_add(0)


def test_the_wheel_ships_the_kernels(tmp_path):
    root = pathlib.Path(__file__).resolve().parent.parent
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path), str(root)],
                   check=True, capture_output=True)
    (wheel,) = tmp_path.glob("gpumodel-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    for source in root.glob("kernels/*.cu"):
        assert f"gpumodel/kernels/{source.name}" in names


def test_function_source_shows_whole_definitions():
    naive = compiler.function_source("gemm.cu", "gemm_naive")
    assert naive.startswith("// Naive") and naive.rstrip().endswith("}") and naive.count("{") == naive.count("}")
    tiled = compiler.function_source("gemm.cu", "gemm_tiled")
    assert "template <int BM" in tiled and "__syncthreads();" in tiled and tiled.count("{") == tiled.count("}")
    with pytest.raises(ValueError, match="name must be a function"):
        compiler.function_source("gemm.cu", "gemm_fast")


@pytest.mark.parametrize("kernel, sizes", [("gemm_naive", (9, 7, 5)), ("gemm_smem16", (40, 24, 20)), ("gemm_reg128", (256, 136, 24))])
def test_ladder_count_checks_agree(kernel, sizes):
    table = gm.course.tables.count_table(kernel, *sizes)
    assert "| NO" not in table and table.count("| yes |") == 5


def test_the_recorded_compiler_report_is_current():
    """The record chapter 3 shows where no compiler is found equals a live compile
    (`make reports` refreshes it)."""
    assert compiler.compiler() is not None, "requirements.txt installs NVRTC (nvidia-cuda-nvrtc-cu12)"
    record = compiler.recorded()
    assert record["archs"] == list(compiler.ARCHS) and record["options"] == list(compiler.COMPILE_OPTIONS)
    assert record["compiler"].startswith("nvrtc") and record["command"] == "make reports"
    files = sorted(p.name for p in compiler.kernel_dir().glob("*.cu"))
    assert record["sources"] == {f: compiler.source_hash(f) for f in files}, "a kernel changed: run make reports"
    assert compiler.report() == record["reports"], "the recorded compiler report is stale: run make reports"


def test_shown_report_reads_the_record_made_by_this_compiler_from_these_sources(monkeypatch):
    """Chapter 3 shows the record without compiling when the record was made here from these
    exact sources; a changed source is compiled live."""
    live = compiler.report(files=("transpose.cu",))
    monkeypatch.setattr(compiler, "report", lambda *a, **k: pytest.fail("compiled though the record is current"))
    rows, origin = compiler.shown_report(("gemm.cu", "transpose.cu"))
    assert {r.file for r in rows} == {"gemm.cu", "transpose.cu"} and "from these exact sources" in origin
    assert [r for r in rows if r.file == "transpose.cu"] == live
    monkeypatch.setattr(compiler, "source_hash", lambda file: "0" * 64)
    monkeypatch.setattr(compiler, "report", lambda archs, files: ["live"])
    assert compiler.shown_report(("gemm.cu",)) == (["live"], f"Compiled just now with {compiler.compiler()}.")


def test_shown_report_falls_back_to_the_record(monkeypatch):
    monkeypatch.setattr(compiler, "compiler", lambda: None)
    rows, origin = compiler.shown_report(("gemm.cu",))
    assert {r.file for r in rows} == {"gemm.cu"} and {r.arch for r in rows} == set(compiler.ARCHS)
    assert origin.startswith("No CUDA compiler here") and "make reports" in origin
    with pytest.raises(RuntimeError, match="no CUDA compiler here"):
        compiler.report()


@pytest.mark.parametrize("arch", compiler.ARCHS)
@pytest.mark.parametrize("kernel", [k for k in gm.kernel_info.KERNELS if k.startswith("gemm") and gm.kernel_info.info(k).file])
def test_each_gemm_kernels_layout_is_what_its_compiled_sass_issues(kernel, arch):
    """The model issues a tiled GEMM's operand reads as its `layout` says (`gemm_launch`), and
    charges the naive kernel two global loads per FMA: the recorded SASS of each kernel, for
    sm_80 and sm_90, issues exactly those shared (or global) loads per FFMA. gemm_smem16's A
    row is read four words at a time (LDS.128), its B column one word at a time."""
    info = gm.kernel_info.info(kernel)
    counts = compiler.instructions(next(iter(info.functions)), arch)
    loads = sum(n for op, n in counts.items() if op.split(".")[0] == ("LDG" if info.block is None else "LDS"))
    if info.block is None:
        assert loads / counts["FFMA"] == 2
    else:
        t_m, t_n = info.thread
        assert loads / counts["FFMA"] == gm.workloads.operand_load_instructions(info.thread, info.layout) / (t_m * t_n)
    assert ("LDS.128" in counts) == (info.layout != "strided")


def test_instructions_refuses_what_the_record_lacks():
    with pytest.raises(ValueError, match=r"^arch must be one of the recorded architectures"):
        compiler.instructions("gemm_naive", "sm_70")
    with pytest.raises(ValueError, match=r"^kernel must be a CUDA function of kernels/\*.cu, got 'matmul'"):
        compiler.instructions("matmul")


def _edited_record(tmp_path, edit) -> pathlib.Path:
    """A copy of the committed compiler record with `edit` applied to its parsed JSON."""
    record = json.loads(compiler.RECORD.read_text())
    edit(record)
    path = tmp_path / "compiler_reports.json"
    path.write_text(json.dumps(record))
    return path


@pytest.mark.parametrize("edit, message", [
    (lambda r: r.pop("reports"), r"compiler_reports.json must hold exactly the keys"),
    (lambda r: r.update(colour="green"), r"compiler_reports.json must hold exactly the keys"),
    (lambda r: r.update(reports={}), r"compiler_reports.json.reports must be a JSON list"),
    (lambda r: r["reports"][2].update(registers="31"), r"compiler_reports.json report 3.registers must be a whole number >= 0, got '31'"),
    (lambda r: r["reports"][0].update(registers=-31), r"compiler_reports.json report 1.registers must be a whole number >= 0, got -31"),
    (lambda r: r["reports"][0].update(smem=True), r"report 1.smem must be a whole number >= 0, got True"),
    (lambda r: r["reports"][1].update(extra=1), r"compiler_reports.json report 2 must hold exactly the keys"),
    (lambda r: r["reports"][1].pop("arch"), r"compiler_reports.json report 2 must hold exactly the keys"),
    (lambda r: r["reports"][1].update(kernel=7), r"report 2.kernel must be a string, got 7"),
    (lambda r: r["sources"].update({"gemm.cu": "abc"}), r"compiler_reports.json.sources.gemm.cu must be a SHA-256 in hex"),
    (lambda r: r["sass"]["sm_80"]["gemm_naive"].update(FFMA=0), r"sass.sm_80.gemm_naive must map instructions of"),
    (lambda r: r["sass"]["sm_80"]["gemm_naive"].update(HMMA=3), r"sass.sm_80.gemm_naive must map instructions of"),
    (lambda r: r["sass"].update(sm_90=[]), r"sass.sm_90.None must map instructions of"),
])
def test_a_bad_compiler_record_is_refused_naming_file_and_report(tmp_path, edit, message):
    """Issue 26: the record was not validated (a KeyError, a TypeError, registers "31" failing later)."""
    with pytest.raises(gm.presets.DataError, match=message):
        compiler.recorded(_edited_record(tmp_path, edit))


def test_a_truncated_compiler_record_names_the_file(tmp_path):
    path = tmp_path / "compiler_reports.json"
    path.write_text(compiler.RECORD.read_text()[:500])
    with pytest.raises(gm.presets.DataError, match="compiler_reports.json: not valid JSON"):
        compiler.recorded(path)
