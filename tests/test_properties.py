"""Invariants of the model, over random workloads and every preset (hypothesis)."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import gpumodel as gm

TENSOR_GPUS = [n for n in gm.preset_names() if "fp16" in gm.gpu(n).tensor]
pow2 = st.sampled_from([1, 2, 4, 8, 16, 32, 64, 128, 256])
size = st.integers(min_value=1, max_value=4096)


@st.composite
def workloads(draw):
    """A random workload of any kind, with valid parameters."""
    kind = draw(st.sampled_from(["vector_add", "chain", "naive", "tiled", "attention", "transpose"]))
    if kind == "vector_add":
        return gm.vector_add(draw(st.integers(1, 2**30)))
    if kind == "chain":
        return gm.elementwise_chain(draw(st.integers(1, 2**28)), draw(st.integers(1, 8)),
                                    draw(st.booleans()), draw(st.sampled_from(["fp32", "fp16", "bf16"])))
    if kind == "naive":
        return gm.gemm(draw(size), draw(size), draw(size))
    if kind == "tiled":
        block = (draw(pow2), draw(pow2))
        thread = (draw(st.sampled_from([t for t in (1, 2, 4, 8) if block[0] % t == 0])),
                  draw(st.sampled_from([t for t in (1, 2, 4, 8) if block[1] % t == 0])))
        m, n, k = draw(st.integers(block[0], 4096)), draw(st.integers(block[1], 4096)), draw(size)
        return gm.gemm(m, n, k, block=block, thread=thread, dtype=draw(st.sampled_from(["fp32", "fp16"])))
    if kind == "attention":
        seq = draw(st.integers(128, 8192))
        return gm.attention(draw(st.integers(1, 8)), draw(st.integers(1, 32)), seq,
                            draw(st.sampled_from([64, 128])), "fp16",
                            draw(st.sampled_from(["standard", "flash"])), block=(64, 64))
    return gm.transpose(draw(size), draw(st.booleans()))


@settings(max_examples=300, deadline=None)
@given(workloads(), st.sampled_from(TENSOR_GPUS))
def test_time_is_the_slowest_part_and_busy_fractions_are_fractions(w, name):
    p = gm.predict(w, gm.gpu(name))
    assert p.time >= p.compute_time
    for lv in gm.LEVELS:
        assert p.time >= p.level_times[lv]
    for part in gm.BOUNDS:
        assert 0 <= p.busy[part] <= 1
    assert np.isclose(p.busy[p.bound], 1.0, rtol=1e-9)
    assert p.time in [p.compute_time, *p.level_times.values()]
    # Ties go to compute, then to the faster level: nothing earlier in BOUNDS is as slow.
    for part in gm.BOUNDS[: gm.BOUNDS.index(p.bound)]:
        assert p.busy[part] < 1 - 1e-9


@settings(max_examples=200, deadline=None)
@given(size, size, size, pow2, pow2, st.sampled_from([1, 2, 4]), st.sampled_from([1, 2, 4]))
def test_bigger_block_tiles_never_add_l2_or_tile_traffic(m, n, k, bm, bn, grow_m, grow_n):
    bm, bn = min(bm, m), min(bn, n)
    big_m, big_n = min(bm * grow_m, m), min(bn * grow_n, n)
    small = gm.gemm(m, n, k, block=(bm, bn))
    big = gm.gemm(m, n, k, block=(big_m, big_n))
    # Traffic is measured on whole tiles, so compare tiles that divide the matrix.
    if m % big_m == 0 and n % big_n == 0 and m % bm == 0 and n % bn == 0:
        assert big.bytes["l2"] <= small.bytes["l2"]
        tiles = lambda w, tm, tn: w.bytes["smem"] - 4 * k * (m * n / (tm * tn)) * (tm + tn)  # noqa: E731
        assert tiles(big, 1, 1) <= tiles(small, 1, 1)


@settings(max_examples=200, deadline=None)
@given(st.sampled_from([64, 128, 256]), st.sampled_from([64, 128, 256]), size,
       st.sampled_from([1, 2, 4, 8]), st.sampled_from([1, 2, 4, 8]), st.sampled_from([1, 2]), st.sampled_from([1, 2]))
def test_more_results_per_thread_never_add_operand_traffic(bm, bn, k, tm, tn, grow_m, grow_n):
    m, n = 2 * bm, 3 * bn
    few = gm.gemm(m, n, k, block=(bm, bn), thread=(tm, tn))
    more = gm.gemm(m, n, k, block=(bm, bn), thread=(tm * grow_m, tn * grow_n))
    assert more.bytes["smem"] <= few.bytes["smem"]
    assert more.bytes["l2"] == few.bytes["l2"]


@settings(max_examples=50, deadline=None)
@given(st.lists(st.integers(16, 4096), min_size=1, max_size=20), st.sampled_from(gm.preset_names()))
def test_arrays_give_the_scalar_answers_element_by_element(ns, name):
    g = gm.gpu(name)
    ns = np.array(ns)
    k = 1024
    swept = gm.predict(gm.gemm(ns, ns, k, block=(16, 16), thread=(2, 2)), g)
    for i, n in enumerate(ns):
        one = gm.predict(gm.gemm(int(n), int(n), k, block=(16, 16), thread=(2, 2)), g)
        assert swept.time[i] == one.time
        assert swept.bound[i] == one.bound
        for lv in gm.LEVELS:
            assert swept.level_times[lv][i] == one.level_times[lv]
            assert swept.intensity[lv][i] == one.intensity[lv]


def test_tiles_broadcast_too():
    """A sweep over block and thread tiles (chapter 3's best-tile search) is one call."""
    bm = np.array([32, 64, 128])[:, None]
    tm = np.array([1, 2, 4, 8])[None, :]
    p = gm.predict(gm.gemm(4096, 4096, 4096, block=(bm, bm), thread=(tm, tm)), gm.gpu("A100-40GB"))
    assert p.time.shape == (3, 4)
    one = gm.predict(gm.gemm(4096, 4096, 4096, block=(64, 64), thread=(4, 4)), gm.gpu("A100-40GB"))
    assert p.time[1, 2] == one.time
