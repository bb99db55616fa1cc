"""Where the Triton lab (`gm.lab.trace_triton`) puts arrays and programs, counted by hand: each
array at a 256-byte boundary as cudaMalloc places it, an element across two sectors charged
both, fp32 `tl.dot` on the TF32 tensor cores, a 2-D grid's programs in launch order (x fastest),
and the wave model's `programs_per_sm` (issue 72: hand-made mutants of each survived the suite;
tests/lab_mutants.py holds them)."""

import os
import sys

import numpy as np
import pytest

pytest.importorskip("triton")  # a dependency of `make test` (requirements.txt): none of these skips there

import gpumodel as gm  # noqa: E402

sys.path.insert(0, os.path.dirname(__file__))
import triton_kernels as kernels  # noqa: E402  (Triton reads a kernel's source from its file)

from gpumodel.course.triton_matmul import grouped_matmul  # noqa: E402  (chapter 4's kernel)

MISALIGNED = '''import triton
import triton.language as tl


@triton.jit
def misaligned(x_ptr, out_ptr, AT: tl.constexpr):
    p = (x_ptr.to(tl.pointer_type(tl.uint8)) + AT).to(tl.pointer_type(tl.float32))
    tl.store(out_ptr, tl.load(p))
'''


def _site(traced, write: bool):
    (site,) = [s for s in traced.sites if s.write == write]
    return site


def test_each_array_starts_at_a_256_byte_boundary():
    """x holds 10 floats (40 B); y, after it, starts at byte 256 as cudaMalloc would place it, not
    at byte 40, so its 8 floats are one sector, not two; out at 512, one sector too."""
    x, y, out = np.arange(10, dtype=np.float32), np.ones(8, np.float32), np.zeros(8, np.float32)
    traced = gm.lab.trace_triton(kernels.add, (1,), [x, y, out, 8], BLOCK=8)
    np.testing.assert_array_equal(out, x[:8] + 1)
    loads = sorted(s.sectors for s in traced.sites if not s.write)
    assert loads == [1, 1] and _site(traced, True).sectors == 1
    assert traced.bytes["l2"] == 3 * 32  # x's first sector, y's and out's


@pytest.mark.parametrize("at, sectors", [(28, 1), (30, 2), (32, 1)])
def test_an_element_that_straddles_two_sectors_is_charged_both(at, sectors):
    """A float read from byte `at` of x (a pointer moved by bytes): bytes 30 to 33 lie in sectors
    0 and 1, bytes 28 to 31 and 32 to 35 in one each."""
    kernel = gm.lab.triton_kernel(MISALIGNED, "misaligned")
    x, out = np.zeros(16, np.float32), np.zeros(1, np.float32)
    traced = gm.lab.trace_triton(kernel, (1,), [x, out], AT=at)
    assert _site(traced, False).sectors == sectors


def test_an_fp32_dot_runs_on_the_tf32_tensor_cores():
    """Triton's default precision for fp32 inputs is TF32: the dots' flops are charged there."""
    m = n = 64
    k = 32
    rng = np.random.default_rng(4)
    a, b = rng.random((m, k), dtype=np.float32), rng.random((k, n), dtype=np.float32)
    c = np.zeros((m, n), np.float32)
    traced = gm.lab.trace_triton(grouped_matmul, (1,), [a, b, c, m, n, k], BM=64, BN=64, BK=32, GROUP=1)
    np.testing.assert_allclose(c, a @ b, rtol=1e-2)
    assert traced.math == "tf32" and traced.dot_flops == 2 * m * n * k
    work = traced.workload()
    assert work.math == "tf32" and float(work.bytes["registers"]) == 0.0


def test_a_2d_grids_programs_are_numbered_in_launch_order_x_fastest():
    """A 64 x 96 matrix transposed in 32 x 32 tiles over a (2, 3) grid: program 1 is (1, 0), whose
    load reads rows 32 to 63 and columns 0 to 31 of x: 4 sectors a row, a row 384 B (12 sectors)
    after the last; program 2 is (0, 1), columns 32 to 63 of rows 0 to 31."""
    m, n, b = 64, 96, 32
    x, y = np.arange(m * n, dtype=np.float32).reshape(m, n), np.zeros((n, m), np.float32)
    traced = gm.lab.trace_triton(kernels.transpose_tile, (m // b, n // b), [x, y, m, n], B=b)
    tile = lambda rows, first: sorted(12 * r + first + j for r in rows for j in range(4))  # noqa: E731
    assert list(traced.reads[1]) == tile(range(32, 64), 0)
    assert list(traced.reads[2]) == tile(range(0, 32), 4)


def test_programs_per_sm_sets_the_waves_size():
    """The grouped matmul's 128 programs on the T4 (40 SMs): at 4 programs an SM one wave holds
    them all and every tile is read from HBM once (A, B and C's 2 MB fit its 4 MB L2): the
    compulsory bytes; at 1 an SM, 4 waves re-read panels."""
    m, n, k = 512, 1024, 32
    a, b = np.ones((m, k), np.float16), np.ones((k, n), np.float16)
    c = np.zeros((m, n), np.float32)
    traced = gm.lab.trace_triton(grouped_matmul, (m // 64 * n // 64,), [a, b, c, m, n, k], BM=64, BN=64, BK=32,
                                 GROUP=1)
    assert traced.bytes_on("T4", programs_per_sm=4)["hbm"] == a.nbytes + b.nbytes + c.nbytes
    assert traced.bytes_on("T4")["hbm"] > a.nbytes + b.nbytes + c.nbytes


def test_a_wave_that_reads_more_than_l2_holds_rereads_what_it_could_not_keep():
    """Two programs of one wave each read the same 6.4 MB (200,000 sectors) on the T4 (4 MB of
    L2): the first read of each sector reaches HBM, and of the second reads the share L2 could
    not keep, 1 - 4 MB / 6.4 MB, does too; nothing written."""
    import dataclasses

    x, y, out = np.zeros(8, np.float32), np.zeros(8, np.float32), np.zeros(8, np.float32)
    traced = gm.lab.trace_triton(kernels.add, (1,), [x, y, out, 8], BLOCK=8)
    sectors = np.arange(200_000)
    big = dataclasses.replace(traced, reads=[sectors, sectors], written=0)
    l2 = float(gm.gpu("T4").capacity("l2"))
    kept = l2 / (200_000 * 32)
    assert big.bytes_on("T4")["hbm"] == pytest.approx(32 * (200_000 + (1 - kept) * 200_000), rel=1e-12)
    assert big.bytes_on("T4")["hbm"] > 32 * 200_000 * 1.3
