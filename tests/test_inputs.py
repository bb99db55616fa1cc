"""Bad input is a ValueError naming the parameter; valid odd sizes are accepted."""

import numpy as np
import pytest

import gpumodel as gm

A100 = gm.gpu("A100-40GB")


@pytest.mark.parametrize("bad", [0, -1, 2.5, float("nan"), float("inf"), "10", None, [], [4, 0]])
def test_bad_sizes(bad):
    with pytest.raises(ValueError, match=r"^n "):
        gm.vector_add(bad)


@pytest.mark.parametrize(
    "call, param",
    [
        (lambda: gm.gemm(0, 64, 64), "m"),
        (lambda: gm.gemm(64, -3, 64), "n"),
        (lambda: gm.gemm(64, 64, 1.5), "k"),
        (lambda: gm.gemm(64, 64, 64, block=(128, 16)), r"block\[0\] must not exceed m"),
        (lambda: gm.gemm(64, 64, 64, block=(16, 128)), r"block\[1\] must not exceed n"),
        (lambda: gm.gemm(64, 64, 8, block=(16, 16, 16)), r"block\[2\] must not exceed k"),
        (lambda: gm.gemm(64, 64, 64, block=(16, 16), thread=(3, 1)), r"thread\[0\] must divide block\[0\]"),
        (lambda: gm.gemm(64, 64, 64, block=(16, 16), thread=(0, 1)), r"thread\[0\]"),
        (lambda: gm.gemm(64, 64, 64, block=16), "block must be"),
        (lambda: gm.gemm(64, 64, 64, thread=(2, 2)), "thread must be"),
        (lambda: gm.gemm(64, 64, 64, dtype="fp8"), "dtype must be one of"),
        (lambda: gm.gemm(64, 64, 64, l2_reuse="yes"), "l2_reuse must be"),
        (lambda: gm.elementwise_chain(64, ops=0), "ops"),
        (lambda: gm.elementwise_chain(64, dtype="float32"), "dtype must be one of"),
        (lambda: gm.attention(1, 1, 64, 64, kind="sparse"), "kind must be one of"),
        (lambda: gm.attention(1, 1, 64, 64, kind="flash", block=(128, 64)), r"block\[0\] must not exceed seq"),
        (lambda: gm.attention(1, 0, 64, 64), "heads"),
        (lambda: gm.transpose(float("inf")), "n must be finite"),
        (lambda: gm.transpose(64, padded=1), "padded must be"),
        (lambda: gm.predict("gemm", A100), "workload must be"),
        (lambda: gm.predict(gm.vector_add(4), 40), "gpu must be"),
        (lambda: gm.predict(gm.vector_add(4), "A100"), "gpu must be one of"),
        (lambda: A100.bandwidth("l1"), "level must be one of"),
        (lambda: A100.peak("fp8"), "math must be one of"),
    ],
)
def test_bad_input_names_the_parameter(call, param):
    with pytest.raises((ValueError, TypeError), match=param):
        call()


@pytest.mark.parametrize("query, closest", [("a100", "A100-40GB"), ("H100", "H100-SXM"), ("RTX4090", "RTX-4090"), ("T-4", "T4")])
def test_unknown_preset_names_the_closest(query, closest):
    with pytest.raises(ValueError, match=f"closest: '{closest}'") as err:
        gm.gpu(query)
    assert "gpu must be one of" in str(err.value)


def test_tile_larger_than_some_matrices_in_a_sweep():
    with pytest.raises(ValueError, match=r"block\[0\] must not exceed m: got block\[0\]=128, m=array"):
        gm.gemm(np.array([64, 256]), 256, 256, block=(128, 128))


def test_sizes_that_are_not_tile_multiples_are_valid():
    p = gm.predict(gm.gemm(1000, 1000, 1000, block=(128, 128), thread=(8, 8)), A100)
    assert np.isfinite(p.time) and p.time > 0
