"""Every accepted call answers within about a second on one core, and a call past the limits is
refused up front, before its inputs are copied (issue 26). CPU time of this process is measured,
not wall time, so that other work on a shared machine does not fail the test; the bound is
generous (a second) where the calls take a few hundredths."""

import time

import numpy as np
import pytest

import gpumodel as gm

SECOND = 1.0


def cpu_seconds(call) -> float:
    """The CPU time `call()` takes, whether it returns or raises a ValueError."""
    start = time.process_time()
    try:
        call()
    except ValueError:
        pass
    return time.process_time() - start


def test_a_long_k_loop_is_refused_by_its_steps_not_its_multiply_adds():
    """1 x 2^20 times 2^20 x 1 is 2^20 multiply-adds, under the work limit, but 2^20 steps of
    the Python loop over k: it ran 3.5 s (2^26: about 4 minutes)."""
    a, b = np.ones((1, 2**20)), np.ones((2**20, 1))
    with pytest.raises(ValueError, match="k \\(a's columns, one step each\\) must be at most 8,192 steps"):
        gm.simulate.naive_gemm(a, b)
    assert cpu_seconds(lambda: gm.simulate.naive_gemm(a, b)) < SECOND


def test_refusing_large_matrices_copies_nothing():
    """Two 4096^2 matrices were copied to float64 before the work check (up to 3.3 s)."""
    a = np.ones((4096, 4096), np.float32)
    with pytest.raises(ValueError, match="m x n x k must be at most"):
        gm.simulate.naive_gemm(a, a)
    for call in (lambda: gm.simulate.naive_gemm(a, a), lambda: gm.simulate.tiled_gemm(a, a),
                 lambda: gm.simulate.transpose(a), lambda: gm.simulate.online_softmax(a, 64)):
        assert cpu_seconds(call) < 0.1


@pytest.mark.parametrize("call", [
    lambda: gm.waves.gemm_hbm(2**17, 2**17, 128, block=(128, 128)),  # the largest grid (2^20 tiles)
    lambda: gm.waves.gemm_hbm(2**17, 2**17, 128, block=(128, 128), order="grouped", group=3),
    lambda: gm.waves.gemm_hbm(2**18, 2**18, 128, block=(128, 128)),  # refused: it ran 2.9-3.9 s
    lambda: gm.decode.gemm_critical_batch("A100-40GB", 4096, "int4", largest=2**24),  # it took up to 7 s
    lambda: gm.decode.gemm_critical_batch("H100-SXM", 2**40, "fp16", largest=2**53),
])
def test_the_calls_that_took_seconds_take_well_under_one(call):
    assert cpu_seconds(call) < SECOND


def test_a_sweep_of_more_than_a_million_configurations_is_refused_before_it_is_computed():
    m, n = np.arange(16, 1040.0)[:, None], np.arange(16, 1040.0)[None, :]
    assert gm.predict(gm.gemm(m, n, 4096, block=(16, 16)), "A100-40GB").time.shape == (1024, 1024)
    assert cpu_seconds(lambda: gm.predict(gm.gemm(m, n, 4096, block=(16, 16)), "A100-40GB")) < SECOND
    with pytest.raises(ValueError, match=r"^m, n, k, thread\[0\], thread\[1\] must broadcast to at most 1,048,576 "
                                         r"configurations, got shape \(1024, 1025\)"):
        gm.gemm(m, np.arange(16, 1041.0)[None, :], 4096, block=(16, 16))
    with pytest.raises(ValueError, match=r"^n must broadcast to at most 1,048,576 configurations, got shape \(1048577,\)"):
        gm.vector_add(np.ones(2**20 + 1))


def test_the_largest_grid_refused_names_the_limit():
    with pytest.raises(ValueError, match="rows x cols must be at most 1,048,576 blocks, got 4,194,304"):
        gm.waves.gemm_hbm(2**18, 2**18, 128, block=(128, 128))


def test_critical_batch_solved_equals_the_first_batch_that_reaches_the_ridge():
    """Solved for the batch instead of trying every one: the same answer as the search."""
    for gpu in ("A100-40GB", "H100-SXM", "L4"):
        for width, weight, math in ((4096, "int4", "fp16"), (8192, "fp16", "fp16"), (16384, "fp8", "fp8")):
            if math not in gm.gpu(gpu).tensor:
                continue
            batches = np.arange(1, 2**16 + 1)
            enough = gm.decode.gemm_intensity(batches, width, weight) >= gm.gpu(gpu).ridge("hbm", math)
            assert gm.decode.gemm_critical_batch(gpu, width, weight, math) == batches[enough.argmax()]
