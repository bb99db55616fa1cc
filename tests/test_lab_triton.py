"""Triton kernels in the lab (`gm.lab.trace_triton`): our own kernels in the style of Triton's
tutorials, each checked against NumPy first, then its sectors per block access against a count
by hand, the grouped matmul's HBM bytes against the wave model (`gm.waves.gemm_hbm`), and the
interpreter left as it was found. Triton is a dependency of `make test` (requirements.txt)."""

import os
import sys

import numpy as np
import pytest
import triton  # optional for learners; make test installs it (requirements.txt), and none of these skips

import gpumodel as gm
from gpumodel.lab import LabError

sys.path.insert(0, os.path.dirname(__file__))
import triton_kernels as kernels  # noqa: E402  (Triton reads a kernel's source from its file)

from gpumodel.course.triton_matmul import grouped_matmul  # noqa: E402  (chapter 4's kernel)


def by_line(traced):
    return {(s.line, s.write): s for s in traced.sites}


def line_of(fragment: str) -> int:
    rows = open(kernels.__file__).read().splitlines()
    return next(i for i, row in enumerate(rows, 1) if fragment in row)


def test_vector_add_with_a_masked_tail_by_hand():
    """1000 floats in blocks of 256: three full programs of 32 sectors (1 KiB) an access, the last
    232 floats, 928 B, 29 sectors; masked-off lanes cost nothing; 16-byte vectors, a warp
    instruction moves 512 B: 2 requests a full block, 2 the tail."""
    x, y, out = np.arange(1000, dtype=np.float32), np.full(1000, 2, np.float32), np.zeros(1000, np.float32)
    traced = gm.lab.trace_triton(kernels.add, (4,), [x, y, out, 1000], BLOCK=256)
    np.testing.assert_array_equal(out, x + 2)
    sites = by_line(traced)
    load = sites[line_of("x = tl.load(x_ptr"), False]
    assert (load.sectors, load.ideal_sectors, load.instructions, load.divergent, load.lanes) == (3 * 32 + 29, 125, 8, 1, 1000)
    store = sites[line_of("tl.store(out_ptr"), True]
    assert store.sectors == 125 and store.size == 4 and traced.blocks == 4 and traced.block == (128, 1, 1)
    assert traced.bytes["hbm"] == 3 * 1000 * 4 == traced.bytes["l2"] == traced.bytes["l1"]


def test_a_strided_column_load_costs_a_sector_an_element():
    """Each program sums a column of a 64 x 32 float matrix: its 64 elements lie 128 B apart, 64
    sectors where 8 would hold 256 B."""
    x, out = np.random.default_rng(0).random((64, 32), dtype=np.float32), np.zeros(32, np.float32)
    traced = gm.lab.trace_triton(kernels.column_sum, (32,), [x, out, 64, 32], BLOCK=64)
    np.testing.assert_allclose(out, x.sum(axis=0), rtol=1e-5)
    load = by_line(traced)[line_of("x = tl.load(x_ptr + offs * cols"), False]
    assert (load.sectors, load.ideal_sectors) == (32 * 64, 32 * 8)
    assert traced.hottest().line == load.line


def test_a_fused_softmax_with_a_masked_row():
    """64 rows of 100 floats in blocks of 128, 28 lanes of each masked off: a row's 400 B (12.5
    sectors' worth) touch 13 sectors whether the row starts on a sector's boundary (even rows) or
    half way into one (odd rows), the ideal either way."""
    x = np.random.default_rng(1).standard_normal((64, 100)).astype(np.float32)
    y = np.zeros_like(x)
    traced = gm.lab.trace_triton(kernels.softmax_rows, (64,), [x, y, 100], BLOCK=128)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(y, e / e.sum(axis=1, keepdims=True), rtol=1e-5)
    load = by_line(traced)[line_of("x = tl.load(x_ptr + row"), False]
    assert load.sectors == 64 * 13 and load.ideal_sectors == 64 * 13 and load.divergent == 64


def test_a_2d_block_and_a_dot():
    """A 64 x 32 fp16 tile of A: 64 rows of 64 B, 2 sectors each; the dots' flops are 2MNK on the
    fp16 tensor cores; C is the product."""
    m, n, k = 128, 128, 64
    rng = np.random.default_rng(2)
    a, b = rng.random((m, k)).astype(np.float16), rng.random((k, n)).astype(np.float16)
    c = np.zeros((m, n), np.float32)
    traced = gm.lab.trace_triton(grouped_matmul, (4,), [a, b, c, m, n, k], BM=64, BN=64, BK=32, GROUP=2)
    np.testing.assert_allclose(c, a.astype(np.float32) @ b.astype(np.float32), rtol=1e-3)
    rows = open(gm.course.triton_matmul.__file__).read().splitlines()
    tile = by_line(traced)[next(i for i, row in enumerate(rows, 1) if "a = tl.load(a_ptr" in row), False]
    assert tile.sectors == 4 * 2 * 64 * 2 and tile.ideal_sectors == tile.sectors  # 4 programs x 2 steps
    assert traced.dot_flops == 2 * m * n * k and traced.math == "fp16"
    work = traced.workload()
    assert work.math == "fp16" and float(work.flops) == 2 * m * n * k


@pytest.mark.parametrize("gpu", ["T4", "A100-40GB"])
def test_the_grouped_matmuls_hbm_bytes_are_the_wave_models(gpu):
    """512 x 1024 x 32 in 64 x 64 tiles, 128 programs: for every group size the recorded sectors
    give, wave by wave, the HBM bytes `gm.waves.gemm_hbm` computes for grouped order (its C in
    fp16, ours in fp32). On the T4 (40 SMs) grouping 8 rows reads fewer panels than 1."""
    m, n, k = 512, 1024, 32
    a, b = np.ones((m, k), np.float16), np.ones((k, n), np.float16)
    got = {}
    for group in (1, 2, 4, 8):
        c = np.zeros((m, n), np.float32)
        traced = gm.lab.trace_triton(grouped_matmul, (m // 64 * n // 64,), [a, b, c, m, n, k], BM=64, BN=64, BK=32,
                                     GROUP=group)
        model = gm.waves.gemm_hbm(m, n, k, block=(64, 64), dtype="fp16", gpu=gpu, order="grouped", group=group)
        got[group] = traced.bytes_on(gpu)["hbm"]
        assert got[group] == model.hbm - 2 * m * n + 4 * m * n
    if gpu == "T4":
        assert got[8] < got[4] < got[1]


def test_an_access_in_a_helper_is_named_at_its_line_and_the_kernels():
    x, y = np.arange(300, dtype=np.float32), np.zeros(300, np.float32)
    traced = gm.lab.trace_triton(kernels.copy_through_helper, (2,), [x, y, 300], BLOCK=256)
    np.testing.assert_array_equal(y, x)
    load = next(s for s in traced.sites if not s.write)
    assert load.line == line_of("return tl.load(ptr + offs") and load.called_at == line_of("_load_block(x_ptr, offs, n)")
    assert load.where.endswith(f"(called at line {load.called_at})")


def test_the_report_says_what_it_counts_and_every_gpu_gets_a_bound():
    x, y, out = np.ones(512, np.float32), np.ones(512, np.float32), np.zeros(512, np.float32)
    traced = gm.lab.trace_triton(kernels.add, (2,), [x, y, out, 512], BLOCK=256)
    text = traced.report(gpus=["A100-40GB", "H100-SXM"])
    assert "as a coalesced layout reaches them" in text and "can only touch as many or more" in text
    assert text.count(" us at best, bound by hbm") == 2 and "hbm" in text
    e = gm.expect(traced, "H100-SXM")
    assert e.time >= float(gm.predict(traced.workload(), "H100-SXM").time)


def test_bad_input_is_refused_by_name_and_the_interpreter_is_left_as_found():
    from triton.runtime import interpreter

    before = (interpreter.InterpreterBuilder.create_masked_load, os.environ.get("TRITON_INTERPRET"))
    x = np.ones(256, np.float32)
    with pytest.raises(TypeError, match="kernel must be a @triton.jit function"):
        gm.lab.trace_triton(print, (1,), [x])
    with pytest.raises(ValueError, match="grid must be 1 to 3 positive integers"):
        gm.lab.trace_triton(kernels.add, (0,), [x, x, x, 256], BLOCK=256)
    with pytest.raises(ValueError, match="must be contiguous"):
        gm.lab.trace_triton(kernels.add, (1,), [x[::2], x, x, 128], BLOCK=128)
    with pytest.raises(LabError, match=f"line {line_of('tl.load(x_ptr + offs + 1000)')}: a load outside every array"):
        gm.lab.trace_triton(kernels.past_the_end, (1,), [x, np.zeros(256, np.float32)], BLOCK=256)
    assert (interpreter.InterpreterBuilder.create_masked_load, os.environ.get("TRITON_INTERPRET")) == before
    assert type(kernels.add).__name__ == "JITFunction" and type(triton.language.max).__name__ == "JITFunction"


def test_without_triton_the_lab_says_how_to_install_it(monkeypatch):
    """trace_triton, and a chapter's Triton lab in its editor, say how to install Triton."""
    from gpumodel.course import intensity

    monkeypatch.setitem(sys.modules, "triton", None)
    with pytest.raises(LabError, match=r"pip install 'gpumodel\[triton\]'"):
        gm.lab.trace_triton(kernels.add, (1,), [np.ones(4, np.float32)] * 3 + [4], BLOCK=4)
    verdict = intensity.check_triton_softmax(intensity.TRITON_SOFTMAX_STARTER)
    assert not verdict and "pip install 'gpumodel[triton]'" in verdict.message


def test_chapter_4s_triton_lab_is_traced_here_and_its_record_is_current(monkeypatch):
    """The lab traces the grouped matmul at each group size, equal to the wave model, fewer HBM
    bytes for 8 than for 1; the recorded result a reader without Triton sees is the same, and
    says how to install Triton."""
    rl = gm.course.roofline_levels
    live = rl.triton_order()
    assert live["how"].startswith("traced now") and list(live["bytes"]) == [str(g) for g in rl.TRITON_GROUPS]
    assert all(row["traced"] == row["model"] for row in live["bytes"].values())
    assert live["bytes"]["8"]["traced"] < live["bytes"]["1"]["traced"]
    monkeypatch.setitem(sys.modules, "gpumodel.course.triton_matmul", None)  # as where Triton is not installed
    monkeypatch.delattr(gm.course, "triton_matmul", raising=False)
    recorded = rl.triton_order()
    assert recorded["bytes"] == live["bytes"] and "pip install 'gpumodel[triton]'" in recorded["how"]
    assert rl.triton_source().startswith("@triton.jit\ndef grouped_matmul(")


def test_the_first_wave_of_the_triton_lab_reads_the_tiles_counted_by_hand():
    """8 x 16 tiles of C, 40 programs a wave on the T4. Row order (group 1): programs 0-39 take
    rows 0-2 across all 16 columns, 3 + 16 = 19 tiles. Group 2 (32 programs a group): 0-31 take
    rows 0-1 and all 16 columns, 32-39 rows 2-3 and columns 0-3: 4 + 16 = 20, one more than row
    order. Group 4: rows 0-3 and columns 0-9: 14. Group 8: rows 0-7 and columns 0-4: 13."""
    rl = gm.course.roofline_levels
    assert [rl.first_wave_tiles(g) for g in (1, 2, 4, 8)] == [19, 20, 14, 13]
    asked = rl.cp_triton_wave(8)
    assert gm.course.checks.verdict(asked.rules, "13")
    wrong = gm.course.checks.verdict(asked.rules, "19")
    assert not wrong and "row order" in wrong.message


def test_a_kernel_from_a_source_string_runs_with_its_own_lines_and_its_errors_named():
    """An editor's text is a kernel: its sites at the text's lines; a source that does not run,
    or names no such kernel, is a LabError that says which line or what it defines instead."""
    from gpumodel.course import intensity

    kernel = gm.lab.triton_kernel(intensity.TRITON_SOFTMAX_STARTER, "softmax")
    x = np.ones((2, 8), np.float32)
    traced = gm.lab.trace_triton(kernel, (2,), [x, np.zeros_like(x), np.zeros_like(x), 8], BLOCK=8)
    rows = intensity.TRITON_SOFTMAX_STARTER.splitlines()
    assert {s.line for s in traced.sites} == {i for i, row in enumerate(rows, 1) if "tl.load" in row or "tl.store" in row}
    with pytest.raises(LabError, match=r"SyntaxError: .*\(line 2\)"):
        gm.lab.triton_kernel("import triton\ndef softmax(:\n", "softmax")
    with pytest.raises(LabError, match="ZeroDivisionError: division by zero \\(line 2\\)"):
        gm.lab.triton_kernel("import triton\nx = 1 / 0\n", "softmax")
    with pytest.raises(LabError, match="no @triton.jit kernel named 'soft'; it defines softmax"):
        gm.lab.triton_kernel(intensity.TRITON_SOFTMAX_STARTER, "soft")
    with pytest.raises(TypeError, match="name the name of its @triton.jit kernel"):
        gm.lab.triton_kernel(intensity.TRITON_SOFTMAX_STARTER, "not a name")


def chapter_solution(chapter: str, label: str) -> str:
    from test_lab import chapter_solution as solution_of

    return solution_of(chapter, label)


def test_chapter_2s_triton_softmax_lab_scores_the_starter_and_the_solution():
    """The starter's exponentials pass through global memory (x, e and y through L2: 1.5 times
    the compulsory, e's load served with its store); the chapter's solution keeps them in the
    program's registers; a wrong softmax is caught before its bytes."""
    from gpumodel.course import intensity

    rows, cols = intensity.SOFTMAX_ROWS, intensity.SOFTMAX_COLS
    starter = intensity.check_triton_softmax(intensity.TRITON_SOFTMAX_STARTER)
    assert not starter and f"{3 * 4 * rows * cols:,} B through L2 where {2 * 4 * rows * cols:,} B would do" in starter.message
    solution = chapter_solution("02_intensity", "ex-intensity-lab-triton-softmax")
    assert intensity.check_triton_softmax(solution)
    wrong = intensity.check_triton_softmax(solution.replace("e / tl.sum", "e * tl.sum"))
    assert not wrong and "each row of y must be softmax(x)" in wrong.message


def test_chapter_4s_triton_order_lab_wants_the_fewest_hbm_bytes_of_any_group():
    """Row order reads what the wave model says of group 1; the chapter's grouped order at the
    group the model finds best reads exactly that best, and at group 4 more."""
    from gpumodel.course import roofline_levels as rl

    m, n, k = rl.TRITON_SHAPE
    model = {g: gm.waves.gemm_hbm(m, n, k, block=(64, 64), dtype="fp16", gpu="T4", order="grouped", group=g).hbm - 2 * m * n
             for g in range(1, 9)}
    best = min(model, key=model.get)
    assert rl.fewest_hbm_bytes() == (best, model[best])
    starter = rl.check_triton_order(rl.TRITON_ORDER_STARTER, GROUP=best)
    assert not starter and f"{gm.fmt_bytes(model[1])} of A and B from HBM on the T4, where the best grouped order reads " \
        f"{gm.fmt_bytes(model[best])}" in starter.message
    solution = chapter_solution("04_roofline_levels", "ex-levels-lab-triton-order")
    assert rl.check_triton_order(solution, GROUP=best)
    assert not rl.check_triton_order(solution, GROUP=4)
    wrong = rl.check_triton_order(solution.replace("pn = (pid % per_group) // height", "pn = 0"), GROUP=best)
    assert not wrong and "C must be A B" in wrong.message


def test_chapter_5s_triton_attention_lab_wants_the_scores_out_of_global_memory():
    """The starter stores its 64 x 64 FP32 scores and reads them back: twice the compulsory Q, K,
    V and O; the chapter's online softmax moves the compulsory bytes only; without the running
    maximum the lab's large scores overflow, and the NaN is named, not warned about."""
    import warnings

    from gpumodel.course import flashattention as fa

    compulsory = 4 * 4 * fa.LAB_N * fa.LAB_D
    starter = fa.check_triton_flash(fa.TRITON_LAB_STARTER)
    assert not starter and f"{gm.fmt_bytes(compulsory + 4 * fa.LAB_N ** 2)} from HBM where the compulsory " \
        f"{gm.fmt_bytes(compulsory)} would do" in starter.message
    solution = chapter_solution("05_flashattention", "ex-flash-lab-triton")
    assert fa.check_triton_flash(solution)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        wrong = fa.check_triton_flash(solution.replace("tl.exp(s - m_new[:, None])", "tl.exp(s)"))
    assert not wrong and "O must be softmax(Q Kᵀ scale) V" in wrong.message and "nan" in wrong.message


def test_a_layernorm_in_chunks_by_hand():
    """16 rows of 300 floats in chunks of 128 (the last 44 wide), three passes over x: a row
    starts 1,200 B after the last, so odd rows start half way into a sector and their two full
    chunks straddle one sector more each; each chunk's sectors counted by hand from its byte range."""
    rows, cols, block = 16, 300, 128
    rng = np.random.default_rng(3)
    x, w, b = rng.random((rows, cols), dtype=np.float32), rng.random(cols, dtype=np.float32), rng.random(cols, dtype=np.float32)
    y = np.zeros_like(x)
    traced = gm.lab.trace_triton(kernels.layernorm_rows, (rows,), [x, w, b, y, cols, 1e-5], BLOCK=block)
    want = (x - x.mean(axis=1, keepdims=True)) / np.sqrt(x.var(axis=1, keepdims=True) + 1e-5) * w + b
    np.testing.assert_allclose(y, want, rtol=1e-4, atol=1e-5)

    def sectors(lo, hi):  # the 32-byte sectors the bytes [lo, hi) touch
        return (hi - 1) // 32 - lo // 32 + 1

    chunks = [(c, min(c + block, cols)) for c in range(0, cols, block)]
    per_pass = sum(sectors(4 * (r * cols + lo), 4 * (r * cols + hi)) for r in range(rows) for lo, hi in chunks)
    assert per_pass == rows * 38 + rows // 2 * 2  # an even row's chunks 16 + 16 + 6 sectors; an odd row's first two 17
    loads = [s for s in traced.sites if not s.write and s.line in {line_of("total += tl.load"), line_of("x = tl.load(start"),
                                                                   line_of("        x = tl.load(start + offs, mask=keep")}]
    assert sorted(s.sectors for s in loads) == [per_pass] * 3
    store = by_line(traced)[line_of("(x - mean) * rstd * w + b"), True]
    assert store.sectors == per_pass and store.lanes == rows * cols


def test_a_transposed_load_costs_the_sectors_of_its_tile():
    """A 64 x 96 matrix transposed in 32 x 32 tiles: a program's transposed load reads 32 rows of
    128 B, 4 sectors each, as a straight load of the same tile would (a coalesced layout reaches
    the same sectors; the compiler's layout could only touch more), and its store as many."""
    m, n, b = 64, 96, 32
    x, y = np.arange(m * n, dtype=np.float32).reshape(m, n), np.zeros((n, m), np.float32)
    traced = gm.lab.trace_triton(kernels.transpose_tile, (m // b, n // b), [x, y, m, n], B=b)
    np.testing.assert_array_equal(y, x.T)
    load = by_line(traced)[line_of("tile = tl.load("), False]
    store = by_line(traced)[line_of("tl.store(y_ptr + c[:, None] * M"), True]
    programs = (m // b) * (n // b)
    assert load.sectors == store.sectors == programs * b * (b * 4 // 32) == load.ideal_sectors


def test_atomics_are_charged_as_stores_of_their_sectors_and_a_failure_names_its_line():
    """A histogram of 1,000 values in 8 bins: each program's atomic_add touches the one sector of
    the 8 counts; a lock taken with atomic_cas and given back with atomic_xchg is two accesses a
    program; a kernel that fails in the interpreter is named at its line."""
    x = (np.arange(1000) % 8).astype(np.int32)
    counts = np.zeros(8, np.int32)
    traced = gm.lab.trace_triton(kernels.histogram, (4,), [x, counts, 1000], BLOCK=256)
    np.testing.assert_array_equal(counts, np.bincount(x, minlength=8))
    add = by_line(traced)[line_of("tl.atomic_add(counts_ptr"), True]
    assert add.sectors == 4 and add.size == 4
    lock, out = np.zeros(1, np.int32), np.zeros(3, np.float32)
    spun = gm.lab.trace_triton(kernels.spin_once, (3,), [lock, out])
    assert list(out) == [1.0] * 3 and lock[0] == 0
    assert by_line(spun)[line_of("while tl.atomic_cas(lock_ptr"), True].sectors == 3
    assert by_line(spun)[line_of("tl.atomic_xchg(lock_ptr"), True].sectors == 3
    with pytest.raises(LabError, match=f"failed in Triton's interpreter at line {line_of('BLOCK // 0')}"):
        gm.lab.trace_triton(kernels.divides_by_zero_index, (1,), [np.zeros(8, np.float32), np.zeros(8, np.float32)], BLOCK=8)


def test_an_endless_kernel_is_stopped_at_its_time_limit_naming_its_line():
    import time

    import triton_kernels

    x = np.zeros(16, np.float32)
    start = time.monotonic()
    with pytest.raises(LabError, match=r"ran past the time limit of 1 s in Triton's interpreter, at line \d+") as err:
        gm.lab.trace_triton(kernels.spin, (1,), [x], BLOCK=16, timeout=1)
    assert time.monotonic() - start < 30
    line = int(err.value.args[0].split("at line ")[1].split(":")[0])
    source = open(triton_kernels.__file__).read().splitlines()
    assert source[line - 1].strip() in ("while tl.sum(x, axis=0) >= 0:", "x = x + 1.0")
    assert len(gm.lab.trace_triton(kernels.add, (1,), [x, x, np.zeros_like(x), 16], BLOCK=16, timeout=5).sites) == 3
    time.sleep(1.2)  # a stop withdrawn with its run: nothing is raised here later


@pytest.mark.parametrize("alpha", [2.5, np.float32(2.5), np.float64(2.5), np.float16(2.5)])
def test_a_float_argument_reaches_the_kernel_as_a_scalar_of_its_type(alpha):
    """Triton's launcher passes a Python float as an fp32 scalar, which has `.to`; its interpreter
    handed the kernel a bare float ("'float' object has no attribute 'to'")."""
    x = np.arange(40, dtype=np.float32)
    y = np.zeros_like(x)
    gm.lab.trace_triton(kernels.scaled, (1,), [x, y, 40, alpha], BLOCK=64)
    np.testing.assert_array_equal(y, 2.5 * x)


def test_an_autotuned_kernel_runs_the_configuration_asked_for():
    """Choosing among configurations takes a GPU's timings: the lab runs the first, or `config`."""
    x = np.arange(64, dtype=np.float32)
    grid = lambda meta: (-(-64 // meta["BLOCK"]),)
    for config, (programs, warps) in enumerate([(2, 1), (1, 2)]):
        y = np.zeros_like(x)
        t = gm.lab.trace_triton(kernels.tuned_copy, grid, [x, y, 64], config=config)
        np.testing.assert_array_equal(y, x)
        assert t.blocks == programs and t.block == (32 * warps, 1, 1)
    with pytest.raises(ValueError, match="config must be the number of one of the kernel's 2 configurations"):
        gm.lab.trace_triton(kernels.tuned_copy, grid, [x, y, 64], config=2)
    with pytest.raises(ValueError, match="config must be 0 for a kernel that is not autotuned"):
        gm.lab.trace_triton(kernels.add, (1,), [x, x, y, 64], BLOCK=64, config=1)


def test_a_descriptor_made_in_the_kernel_is_charged_the_sectors_of_its_tiles():
    """tl.make_tensor_descriptor, which replaced block pointers: a 40 x 48 float matrix in 16 x 32
    tiles, six programs, the tiles past its edges cut off; a row is 192 B, six sectors, so each
    pass over the matrix touches 240 sectors, the ideal."""
    x = np.arange(40 * 48, dtype=np.float32).reshape(40, 48)
    y = np.zeros_like(x)
    traced = gm.lab.trace_triton(kernels.doubled_tiles, (3, 2), [x, y, 40, 48], BM=16, BN=32)
    np.testing.assert_array_equal(y, 2 * x)
    load, store = by_line(traced)[line_of("dst.store(at, src.load(at)"), False], by_line(traced)[line_of("dst.store(at"), True]
    assert (load.sectors, load.ideal_sectors, load.lanes, load.divergent) == (240, 240, 40 * 48, 4)
    assert store.sectors == 240 and traced.bytes["hbm"] == 2 * 40 * 48 * 4


def test_flash_attention_over_host_descriptors_autotuned_with_a_pre_hook():
    """The current fused-attention tutorial's form: host descriptors made with a dummy [1, 1] tile,
    an autotuner whose configuration's pre_hook sets the tiles. Two heads of 64 x 16 fp16: a row
    is 32 B, one sector; each of the 4 programs reads its 32 query rows and all 64 key and 64
    value rows of its head and writes 32 output rows (160 + 32 sectors), each distinct sector of
    Q, K, V and O once from HBM (4 x 128); 4 N^2 D flops a head on the fp16 tensor cores."""
    rng = np.random.default_rng(0)
    heads, seq, d = 2, 64, 16
    q, k, v = (rng.standard_normal((heads * seq, d)).astype(np.float16) for _ in range(3))
    o = np.zeros_like(q)
    descs = [gm.lab.tensor_descriptor(a, [1, 1]) for a in (q, k, v, o)]
    traced = gm.lab.trace_triton(kernels.attention_by_descriptors, lambda m: (seq // m["BM"], heads),
                                 [*descs, 0.25, seq, d])
    for h in range(heads):
        rows = slice(h * seq, (h + 1) * seq)
        s = q[rows].astype(np.float32) @ k[rows].astype(np.float32).T * 0.25
        p = np.exp(s - s.max(axis=1, keepdims=True))
        np.testing.assert_allclose(o[rows].astype(np.float32), (p / p.sum(axis=1, keepdims=True)) @ v[rows].astype(np.float32),
                                   atol=2e-3)
    assert descs[0].block_shape == [32, 16] and descs[1].block_shape == [16, 16]  # the pre_hook ran
    sectors = {line: s.sectors for (line, _), s in by_line(traced).items()}
    assert sectors == {line_of("q = q_desc.load"): 4 * 32, line_of("k = k_desc.load"): 4 * 64,
                       line_of("v_desc.load([head_row"): 4 * 64, line_of("o_desc.store"): 4 * 32}
    assert traced.bytes["l2"] == 4 * 192 * 32 and traced.bytes["hbm"] == 4 * 128 * 32
    assert (traced.dot_flops, traced.math, traced.blocks) == (heads * 4 * seq * seq * d, "fp16", 4)
    assert "configuration 0 of 2 (BM=32, BN=16, num_warps=4), the first" in traced.report(gpus=["A100-40GB"])


def test_heuristics_are_computed_after_the_autotuners_choice():
    """@triton.heuristics under @triton.autotune: EVEN is worked out from the chosen BLOCK and the
    arguments, as Triton's launcher does; a value the learner passes wins."""
    x = np.arange(100, dtype=np.float32)
    for n, config, expected in ((100, 0, x - 1), (96, 1, np.r_[x[:96] + 1, np.zeros(4, np.float32)])):
        y = np.zeros_like(x)
        traced = gm.lab.trace_triton(kernels.even_copy, lambda m: (-(-n // m["BLOCK"]),), [x, y, n], config=config)
        np.testing.assert_array_equal(y, expected)
        assert traced.configuration.startswith(f"configuration {config} of 2")
    y = np.zeros_like(x)
    gm.lab.trace_triton(kernels.even_copy, (2,), [x, y, 100], EVEN=False)  # 100 % 64 != 0 either way
    np.testing.assert_array_equal(y, x - 1)


def test_tensor_descriptor_refuses_what_a_gpu_would_by_name():
    x = np.zeros((8, 12), np.float32)  # rows of 48 B: 16-byte aligned
    assert gm.lab.tensor_descriptor(x, [8, 4]).strides == [12, 1]
    with pytest.raises(ValueError, match="block_shape must be 2 powers of two"):
        gm.lab.tensor_descriptor(x, [8, 3])
    with pytest.raises(ValueError, match="16-byte aligned"):
        gm.lab.tensor_descriptor(np.zeros((8, 5), np.float32), [8, 4])
    with pytest.raises(ValueError, match="padding 'nan' needs a floating-point array"):
        gm.lab.tensor_descriptor(np.zeros((8, 4), np.int32), [8, 4], padding="nan")
    with pytest.raises(TypeError, match="array must be a NumPy array"):
        gm.lab.tensor_descriptor([1.0, 2.0], [2])


def _pin(text: str) -> tuple:
    import re

    low, high = re.search(r"triton>=(\d+)\.(\d+),<(\d+)\.(\d+)", text).group(1, 2), None
    high = re.search(r"triton>=\d+\.\d+,<(\d+)\.(\d+)", text).group(1, 2)
    return tuple(map(int, low)), (int(high[0]), int(high[1]) - 1)


def test_the_triton_the_lab_supports_is_named_in_one_place_and_pinned_to_it():
    """A Triton upgrade is a one-file change: gpumodel/lab/triton_adapter.py names the versions whose
    interpreter it hooks, requirements.txt and pyproject.toml pin that range, and the installed
    Triton is in it."""
    from gpumodel.lab import triton_adapter as adapter

    root = os.path.dirname(os.path.dirname(__file__))
    for name in ("requirements.txt", "pyproject.toml"):
        pinned = _pin(open(os.path.join(root, name)).read())
        assert pinned == adapter.SUPPORTED, (
            f"{name} pins Triton {pinned[0]} to {pinned[1]}, but gpumodel/lab/triton_adapter.py's SUPPORTED says "
            f"{adapter.SUPPORTED}: check the interpreter hooks there against the new Triton, then change both")
    assert adapter.supported(), (f"Triton {triton.__version__} is installed, outside gpumodel/lab/triton_adapter.py's "
                                 f"SUPPORTED {adapter.SUPPORTED}: check its hooks against this Triton and widen the range")
    assert adapter.unsupported_note() == ""


def test_an_interpreter_without_a_hook_the_lab_needs_is_named(monkeypatch):
    from gpumodel.lab import triton_adapter as adapter

    monkeypatch.setattr(adapter, "RECORDED", adapter.RECORDED + ("create_masked_gather",))
    monkeypatch.setattr(adapter, "version", lambda: (4, 0))
    x = np.ones(64, np.float32)
    with pytest.raises(LabError, match=r"no create_masked_gather, which the lab records through \(Triton .* installed; "
                                       r"the lab knows the interpreter of Triton 3\.4 to 3\.9"):
        gm.lab.trace_triton(kernels.add, (1,), [x, x, x, 64], BLOCK=64)


def test_arrays_reached_through_a_table_of_addresses_are_counted_once_passed_as_reached():
    """Triton's grouped GEMM loads each matrix's address from a table: those arrays are no
    argument, so the lab is told them (`reached`); without it the load is named, with the fix.
    A 40-float and a 24-float array: 5 and 3 sectors, the table's 16 B and lengths' 8 B one each."""
    parts = [np.arange(40, dtype=np.float32), np.arange(24, dtype=np.float32) * 2]
    table = np.array([p.ctypes.data for p in parts], np.int64)
    lengths, out = np.array([40, 24], np.int32), np.zeros(2, np.float32)
    with pytest.raises(LabError, match=r"line \d+: a load outside every array passed .* reached=\[\.\.\.\]"):
        gm.lab.trace_triton(kernels.summed_by_table, (2,), [table, lengths, out], BLOCK=64)
    traced = gm.lab.trace_triton(kernels.summed_by_table, (2,), [table, lengths, out], BLOCK=64, reached=parts)
    np.testing.assert_array_equal(out, [p.sum() for p in parts])
    load = by_line(traced)[line_of("x = tl.load(base + offs"), False]
    assert (load.sectors, load.lanes) == (5 + 3, 64)
    assert traced.bytes["hbm"] == 32 * (5 + 3 + 1 + 1 + 1)
    with pytest.raises(TypeError, match="reached must be a list of the NumPy arrays"):
        gm.lab.trace_triton(kernels.summed_by_table, (2,), [table, lengths, out], BLOCK=64, reached=[table.tolist()])


def test_an_autotuners_early_config_prune_and_the_launchers_call_form_are_kept():
    """Triton's launcher calls an autotuner's early_config_prune (the arguments by name, the
    launch's keywords) before choosing, calls a grid function with the arguments by name as well
    as the meta-parameters, and takes any argument by keyword: rows of 32 floats keep only the
    32-float tile (the first configuration, 64 floats, would store past the array), each row 128
    B, four sectors read and four written; the output array passed by keyword is counted."""
    x = np.arange(4 * 32, dtype=np.float32).reshape(4, 32)
    y = np.zeros_like(x)
    grid = lambda args: (args["rows"],)
    traced = gm.lab.trace_triton(kernels.doubled_rows, grid, [x], y_ptr=y, rows=4, n=32)
    np.testing.assert_array_equal(y, 2 * x)
    assert traced.configuration.startswith("configuration 0 of the 1 its early_config_prune keeps of 2 (BLOCK=32, "
                                           "num_warps=1), the first")
    assert (traced.blocks, traced.block, traced.bytes["hbm"]) == (4, (32, 1, 1), 2 * 4 * 32 * 4)
    with pytest.raises(ValueError, match="one of the kernel's 1 configurations its early_config_prune keeps of 2, 0 to 0"):
        gm.lab.trace_triton(kernels.doubled_rows, grid, [x], y_ptr=y, rows=4, n=32, config=1)
    wide, out = np.ones((2, 64), np.float32), np.zeros((2, 64), np.float32)
    traced = gm.lab.trace_triton(kernels.doubled_rows, (2,), [wide, out, 2], n=64, config=1)
    assert traced.configuration.startswith("configuration 1 of 2 (BLOCK=32") and (out[:, :32] == 2).all()
    with pytest.raises(LabError, match="early_config_prune failed: KeyError: 'n'"):  # as on a GPU: n by position
        gm.lab.trace_triton(kernels.doubled_rows, (4,), [x, y, 4, 32])
    v, w = np.arange(40, dtype=np.float32), np.zeros(40, np.float32)
    gm.lab.trace_triton(kernels.scaled, (1,), [v, w, 40], alpha=2.5, BLOCK=64)  # a float by keyword: a scalar
    np.testing.assert_array_equal(w, 2.5 * v)


def test_a_persistent_softmax_striding_over_rows_by_hand():
    """Four programs over six rows of 48 floats (192 B, six whole sectors a row) in blocks of 64,
    arguments passed by position as the tutorial does: programs 0 and 1 take two rows, 2 and 3
    one; each row read once and written once, 2 x 6 x 6 sectors, at L2 and HBM alike."""
    x = np.random.default_rng(0).standard_normal((6, 48)).astype(np.float32)
    y = np.zeros_like(x)
    traced = gm.lab.trace_triton(kernels.softmax_persistent, (4, 1, 1), [y, x, 48, 48, 6, 48, 64, 2], num_warps=8)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(y, e / e.sum(axis=1, keepdims=True), rtol=1e-6)
    load = by_line(traced)[line_of("row = tl.load(x_ptr + r * x_stride"), False]
    assert (load.sectors, load.lanes, load.divergent, load.instructions) == (36, 6 * 48, 6, 6)
    assert traced.bytes["hbm"] == traced.bytes["l2"] == 2 * 6 * 48 * 4 and traced.block == (256, 1, 1)
