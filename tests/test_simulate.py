"""The simulations do the work: their results equal the references and the bytes they
count equal the workload formulas, byte for byte, also for sizes that are not tile
multiples."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import gpumodel as gm
from gpumodel import simulate as sim

rng = np.random.default_rng(2026)


def assert_counts_equal(run, workload, levels=gm.LEVELS):
    for level in levels:
        assert run.bytes[level] == workload.bytes[level], level


@pytest.mark.parametrize(
    "m, n, k, block, thread",
    [
        (128, 128, 64, (64, 64, 8), (8, 8)),      # multiples of every tile
        (64, 96, 32, (16, 16, 16), (1, 1)),       # chapter 1's 16 x 16 kernel
        (256, 128, 16, (128, 128, 8), (8, 8)),    # chapter 1's 128 x 128 / 8 x 8 kernel
        (130, 100, 70, (64, 32, 16), (4, 4)),     # partial tiles in m, n and k
        (33, 17, 9, (16, 16, 8), (2, 4)),
    ],
)
@pytest.mark.parametrize("dtype", ["fp32", "fp16"])
def test_tiled_gemm_counts_equal_the_formula(m, n, k, block, thread, dtype):
    a, b = rng.standard_normal((m, k)), rng.standard_normal((k, n))
    run = sim.tiled_gemm(a, b, block, thread, dtype)
    np.testing.assert_allclose(run.result, a @ b, rtol=1e-12, atol=1e-12)
    assert_counts_equal(run, gm.gemm(m, n, k, block=block, thread=thread, dtype=dtype))


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 70), st.integers(1, 70), st.integers(1, 40),
       st.sampled_from([8, 16, 32]), st.sampled_from([8, 16, 32]), st.sampled_from([1, 4, 8]),
       st.sampled_from([1, 2, 4]), st.sampled_from([1, 2, 8]))
def test_tiled_gemm_any_size(m, n, k, bm, bn, bk, tm, tn):
    """Any matrix size, with power-of-two tiles no larger than the matrices (for other tile
    shapes, where a warp can straddle rows unevenly, the wavefront formula is not exact)."""
    bm, bn, bk = (min(b, 1 << (size.bit_length() - 1)) for b, size in ((bm, m), (bn, n), (bk, k)))
    tm, tn = (t if b % t == 0 else 1 for t, b in ((tm, bm), (tn, bn)))
    a, b = rng.standard_normal((m, k)), rng.standard_normal((k, n))
    run = sim.tiled_gemm(a, b, (bm, bn, bk), (tm, tn))
    np.testing.assert_allclose(run.result, a @ b, rtol=1e-12, atol=1e-12)
    assert_counts_equal(run, gm.gemm(m, n, k, block=(bm, bn, bk), thread=(tm, tn)))


@pytest.mark.parametrize("m, n, k", [(32, 32, 32), (37, 5, 11)])
def test_naive_gemm_counts_equal_the_formula(m, n, k):
    a, b = rng.standard_normal((m, k)), rng.standard_normal((k, n))
    run = sim.naive_gemm(a, b)
    np.testing.assert_allclose(run.result, a @ b, rtol=1e-12, atol=1e-12)
    assert_counts_equal(run, gm.gemm_requests(m, n, k))


@pytest.mark.parametrize("n", [32, 64, 70, 5])
@pytest.mark.parametrize("padded", [False, True])
def test_transpose_counts_equal_the_formula(n, padded):
    x = rng.standard_normal((n, n))
    run = sim.transpose(x, padded)
    assert np.array_equal(run.result, x.T)
    assert_counts_equal(run, gm.transpose(n, padded))


def test_bank_conflicts():
    column = sim.warp_addresses((32, 32), pad=0, direction="column")
    assert sim.bank_conflicts(column) == 32
    assert sim.bank_conflicts(sim.warp_addresses((32, 33), pad=0, direction="column")) == 1
    assert sim.bank_conflicts(sim.warp_addresses((32, 32), pad=1, direction="column")) == 1
    assert sim.bank_conflicts(sim.warp_addresses((32, 32), pad=0, direction="row")) == 1
    assert sim.bank_conflicts(np.full(32, 7)) == 1  # broadcast
    assert sim.bank_conflicts(np.arange(32) * 2) == 2  # stride 2: two words per bank
    assert sim.bank_conflicts(np.arange(32) // 2 * 32) == 16  # pairs share a word


@pytest.mark.parametrize(
    "bad, message",
    [(np.arange(0), "1 to 128"), (np.arange(129), "1 to 128"), (np.arange(32) - 1, "non-negative"),
     (np.arange(32) * 0.5, "integer")],
)
def test_bank_conflicts_bad_input(bad, message):
    with pytest.raises(ValueError, match=message):
        sim.bank_conflicts(bad)


def test_warp_addresses_bad_input():
    with pytest.raises(ValueError, match="whole warp"):
        sim.warp_addresses((16, 16))
    with pytest.raises(ValueError, match="direction must be one of"):
        sim.warp_addresses(direction="diagonal")
    with pytest.raises(ValueError, match="pad must be"):
        sim.warp_addresses(pad=-1)


def reference_attention(q, k, v):
    """Softmax attention in float64, written out here independently of `simulate`."""
    scores = np.einsum("bhid,bhjd->bhij", q, k) / np.sqrt(q.shape[-1])
    weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
    weights /= weights.sum(axis=-1, keepdims=True)
    return np.einsum("bhij,bhjd->bhid", weights, v)


def large_logits(shape, seed):
    """q, k, v whose logits reach 1e4, computed exactly: integer entries up to 50, and
    d = 16 so that 1/sqrt(d) = 0.25 is exact. A naive softmax overflows on these."""
    gen = np.random.default_rng(seed)
    q, k = (gen.integers(-50, 51, shape).astype(np.float64) for _ in range(2))
    q[..., 0, :], k[..., 0, :] = 50.0, 50.0  # one logit of exactly 16 * 2500 / 4 = 1e4
    return q, k, gen.standard_normal(shape)


@pytest.mark.parametrize("shape, block", [((1, 2, 128, 32), (64, 32)), ((2, 1, 100, 16), (32, 24)), ((1, 1, 7, 8), (4, 3))])
@pytest.mark.parametrize("large", [False, True])
def test_attention_results_and_hbm_bytes(shape, block, large):
    b, h, n, d = shape
    gen = np.random.default_rng(n)
    if large:
        shape = (b, h, n, 16)
        q, k, v = large_logits(shape, n)
        assert np.abs(q @ k.swapaxes(-1, -2)).max() / 4 == 1e4
    else:
        q, k, v = (gen.standard_normal(shape) for _ in range(3))
    d = shape[-1]
    want = reference_attention(q, k, v)
    standard, flash = sim.standard_attention(q, k, v), sim.flash_attention(q, k, v, block)
    for run in (standard, flash):
        assert np.all(np.isfinite(run.result))
        np.testing.assert_allclose(run.result, want, rtol=1e-12, atol=1e-12)
    assert standard.bytes["hbm"] == gm.attention(b, h, n, d, "fp16", "standard").bytes["hbm"]
    assert flash.bytes["hbm"] == gm.attention(b, h, n, d, "fp16", "flash", block=block).bytes["hbm"]


def test_large_logits_overflow_a_naive_softmax_but_not_the_simulations():
    q = np.full((1, 1, 4, 2), 100.0)
    k = np.full((1, 1, 4, 2), 100.0)  # logits of 1e4 / sqrt(2), about 7071
    v = np.random.default_rng(7).standard_normal((1, 1, 4, 2))  # its own: the shared rng's draw depends on test order
    with np.errstate(over="ignore", invalid="ignore"):
        naive = np.exp(q @ k.swapaxes(-1, -2))
        assert not np.all(np.isfinite(naive / naive.sum(-1, keepdims=True)))
    flash = sim.flash_attention(q, k, v, (2, 2))
    np.testing.assert_allclose(flash.result, np.broadcast_to(v.mean(axis=2, keepdims=True), v.shape), rtol=1e-12, atol=1e-14)


def test_flash_never_holds_the_score_matrix():
    """Its largest intermediate is a Br x Bc tile, not N x N: the bytes it moves grow as
    N^2 d / Br, the standard path's as N^2."""
    shape = (1, 1, 256, 16)
    q, k, v = (rng.standard_normal(shape) for _ in range(3))
    flash = sim.flash_attention(q, k, v, (64, 64))
    standard = sim.standard_attention(q, k, v)
    assert "S written" in standard.parts and "S written" not in flash.parts
    assert flash.bytes["hbm"] < standard.bytes["hbm"]


def test_simulations_refuse_bad_input():
    with pytest.raises(ValueError, match="a and b must be"):
        sim.tiled_gemm(np.ones((4, 3)), np.ones((4, 3)))
    with pytest.raises(ValueError, match="block must be"):
        sim.tiled_gemm(np.ones((4, 4)), np.ones((4, 4)), block=(4, 4))
    with pytest.raises(ValueError, match="thread must divide block"):
        sim.tiled_gemm(np.ones((8, 8)), np.ones((8, 8)), block=(8, 8, 8), thread=(3, 1))
    with pytest.raises(ValueError, match="x must be"):
        sim.transpose(np.ones((3, 4)))
    with pytest.raises(ValueError, match="q, k and v must be"):
        sim.flash_attention(np.ones((1, 1, 4, 2)), np.ones((1, 1, 4, 3)), np.ones((1, 1, 4, 2)))


@pytest.mark.parametrize("stride", [1, 2, 3, 4, 7, 8, 9, 16, 64])
@pytest.mark.parametrize("elem_bytes", [2, 4, 8])
def test_sector_formula_equals_the_count(stride, elem_bytes):
    addresses = np.arange(32) * stride * elem_bytes
    assert gm.warp_sectors(stride, elem_bytes) == sim.sectors_touched(addresses)


@pytest.mark.parametrize("n, stride", [(1000, 1), (1000, 3), (77, 8), (64, 33)])
def test_strided_read_counts_equal_the_formula(n, stride):
    x = np.arange(n * stride, dtype=np.float32)
    run = sim.strided_read(x, stride)
    assert np.array_equal(run.result, x[::stride][:n])
    assert_counts_equal(run, gm.strided_read(n, stride))


def test_online_softmax_equals_the_two_pass_softmax():
    x = np.random.default_rng(5).standard_normal((6, 23)) * 1e4
    two_pass = np.exp(x - x.max(axis=1, keepdims=True))
    two_pass /= two_pass.sum(axis=1, keepdims=True)
    for block in (1, 4, 23, 50):
        np.testing.assert_allclose(sim.online_softmax(x, block), two_pass, rtol=1e-12, atol=1e-300)
    with pytest.raises(ValueError, match="x must be a non-empty 2-D array"):
        sim.online_softmax(np.ones(3), 2)


def test_a_128_bit_warp_load_is_served_in_wavefronts_of_128_bytes():
    """The return path carries one 32-bit register per lane per wavefront (NVIDIA developer
    forum threads 77228 and 260900): counts derived by hand."""
    float4s = np.arange(32)[:, None] * 4 + np.arange(4)  # 32 threads, 16 consecutive bytes each: 512 B
    assert sim.bank_conflicts(float4s) == 4 and sim.wavefronts(float4s) == 4
    assert sim.wavefronts(float4s[:8]) == 1  # 8 threads' 128 B: every bank once, 32 registers
    # 4 distinct float4s repeated every 4 lanes (the forum's case): banks are fine, but no lane
    # pairs n, n^1 or n, n^2 agree, so 128 registers come back in 4 wavefronts, not 1.
    every_fourth = np.tile(float4s[:4], (8, 1))
    assert sim.bank_conflicts(every_fourth) == 1 and sim.wavefronts(every_fourth) == 4
    assert sim.wavefronts(np.repeat(float4s[:16], 2, axis=0)) == 2  # lanes n and n^1 agree
    lane = np.arange(32)
    assert sim.wavefronts(float4s[(lane & 1) | (lane >> 2 << 1)]) == 2  # lanes n and n^2 agree (16 float4s)
    assert sim.wavefronts(float4s[(lane & 3) | (lane >> 3 << 2)]) == 4  # n and n^4 only: not packed


@pytest.mark.parametrize("width, expected", [(1, 1), (2, 1), (4, 2)])
def test_a_warp_uniform_load_returns_two_registers_per_lane_slot(width, expected):
    """Every lane reads the same address: LDS.32 and LDS.64 take one wavefront, LDS.128 two."""
    assert sim.wavefronts(np.tile(np.arange(width) + 8, (32, 1))) == expected


@pytest.mark.parametrize("bad", [np.arange(33), np.zeros((32, 3), int), np.zeros((2, 2, 2), int), np.arange(0)])
def test_wavefronts_bad_input(bad):
    with pytest.raises(ValueError, match="addresses must be one warp load"):
        sim.wavefronts(bad)


@pytest.mark.parametrize("block, thread, expected", [
    # strided: tM scalar A loads (broadcast within a row) + tN scalar B loads
    # strided_a128: A's words for 4 steps of k in one 128-bit load, lane pairs agree: 2 per 4 steps
    # warp_tiled: tM / 4 A loads shared by lane pairs (2 each) + tN / 4 B loads of 32 words (4 each)
    ((128, 128, 8), (8, 8), {"strided": 16, "strided_a128": 8 * 2 / 4 + 8, "warp_tiled": 2 * 2 + 2 * 4}),
    ((64, 64, 8), (4, 4), {"strided": 8, "strided_a128": 4 * 2 / 4 + 4, "warp_tiled": 1 * 2 + 1 * 4}),
    ((128, 64, 8), (8, 4), {"strided": 12, "strided_a128": 8 * 2 / 4 + 4, "warp_tiled": 2 * 2 + 1 * 4}),
    ((128, 128, 16), (8, 16), {"strided": 8 * 2 + 16,  # 4 rows 16 words apart: 2 ways
      "strided_a128": 8 * 2 / 4 + 16, "warp_tiled": 2 * 2 + 4 * 4}),
])
def test_operand_wavefronts_of_every_layout(block, thread, expected):
    """Wavefronts per warp per step of k, from the formula and from the address-level count
    over every warp's loads (divided by the warps and the steps a round of loads covers)."""
    warps = block[0] * block[1] // (thread[0] * thread[1]) // 32
    for layout in gm.workloads.LAYOUTS:
        assert gm.workloads.operand_wavefronts(block, thread, layout) == expected[layout]
        assert sim.counted_operand_wavefronts(block, thread, layout) == expected[layout] * warps


def test_strided_a128_rows_bk_words_apart_still_share_banks():
    """(64, 32, 16) with 4 x 4 threads: a warp spans 4 rows of As 16 words apart, two float4s
    per bank group: 2 ways, no more than the paired load's 2 wavefronts. With (32, 32, 32) and
    1 x 4 threads, 4 rows 32 words apart land on one bank group: 4 ways beat the pairing."""
    assert gm.workloads.operand_wavefronts((64, 32, 16), (4, 4), "strided_a128") == 4 * 2 / 4 + 4
    assert gm.workloads.operand_wavefronts((32, 32, 32), (1, 4), "strided_a128") == 1 * 4 / 4 + 4
    loads = sim.operand_loads((32, 32, 32), (1, 4), "strided_a128")
    assert sum(sim.wavefronts(a) for a in loads) / 4 == (1 * 4 / 4 + 4) * 8


def test_strided_rows_bk_words_apart_share_banks():
    """(64, 32, 16) with 4 x 4 threads: 8 threads per row, so a warp spans 4 rows of As,
    16 words apart: banks 0, 16, 0, 16, two words each. Each of the 4 A loads takes 2."""
    assert gm.workloads.operand_wavefronts((64, 32, 16), (4, 4)) == 4 * 2 + 4
    assert gm.workloads.operand_wavefronts((64, 32, 8), (4, 4)) == 4 + 4  # 8 words apart: banks 0, 8, 16, 24


def test_warp_tiled_counts_equal_the_formula_and_the_result_is_right():
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal((128, 40)), rng.standard_normal((40, 192))
    for layout in ("warp_tiled", "strided_a128"):
        run = sim.tiled_gemm(a, b, block=(64, 64, 8), thread=(4, 8), layout=layout)
        assert np.allclose(run.result, a @ b)
        assert_counts_equal(run, gm.gemm(128, 192, 40, block=(64, 64, 8), thread=(4, 8), layout=layout))


def test_the_layout_decides_whether_the_h100_starves():
    """The verdict chapters 1 and 3 draw: 4-byte strided loads leave the H100's shared memory
    the bound of the 128 x 128 / 8 x 8 kernel; the warp-tiled layout's 12 wavefronts (not 16) do not."""
    for layout, bound in (("strided", "smem"), ("warp_tiled", "compute")):
        w = gm.gemm(4096, 4096, 4096, block=(128, 128, 8), thread=(8, 8), layout=layout)
        assert gm.predict(w, "H100-SXM").bound == bound
        assert gm.predict(w, "A100-40GB").bound == "compute"


@pytest.mark.parametrize("kwargs, message", [
    (dict(thread=(2, 8)), r"thread\[0\] must be a multiple of 4"),
    (dict(block=(128, 32, 8)), r"8 x thread\[1\] must divide block\[1\]"),
    (dict(dtype="fp16", thread=(64, 64)), "layout must be 'strided' unless"),
    (dict(layout="swizzled"), "layout must be one of"),
])
def test_warp_tiled_layout_refuses_what_it_cannot_tile(kwargs, message):
    args = dict(block=(128, 128, 8), thread=(8, 8), layout="warp_tiled") | kwargs
    with pytest.raises(ValueError, match=message):
        gm.gemm(256, 256, 64, **args)


def test_online_softmax_of_moderate_scores():
    """Scores of order 1, where every exponential counts (at 1e4 the softmax is one-hot and
    hides a block that was skipped or a denominator applied the wrong way)."""
    x = np.random.default_rng(7).standard_normal((5, 11))
    two_pass = np.exp(x - x.max(axis=1, keepdims=True))
    two_pass /= two_pass.sum(axis=1, keepdims=True)
    for block in (1, 3, 11):
        np.testing.assert_allclose(sim.online_softmax(x, block), two_pass, rtol=1e-12)


def test_warp_addresses_in_a_padded_row_major_array():
    t = np.arange(32)
    assert sim.warp_addresses().tolist() == (32 * t).tolist()  # column 0 of a 32 x 32 array
    assert sim.warp_addresses((32, 32), pad=1, index=5).tolist() == (33 * t + 5).tolist()
    # A row access along a 64 x 32 array: row 40, one word per thread.
    assert sim.warp_addresses((64, 32), direction="row", index=40).tolist() == (40 * 32 + t).tolist()
    assert sim.warp_addresses(pad=2**20)[1] == 32 + 2**20  # the largest padding accepted
    with pytest.raises(ValueError, match=r"^index must be an integer from 0 to 31, got 32$"):
        sim.warp_addresses(index=32)
    with pytest.raises(ValueError, match=r"^pad must be an integer from 0 to 1048576, got 1048577"):
        sim.warp_addresses(pad=2**20 + 1)


@pytest.mark.parametrize("call, message", [
    (lambda: sim.naive_gemm(np.ones((0, 2)), np.ones((2, 2))), "^a and b must be non-empty matrices"),
    (lambda: sim.naive_gemm(np.ones(2), np.ones((2, 2))), "a and b must be non-empty matrices"),
    (lambda: sim.tiled_gemm(np.ones((32, 8)), np.ones((8, 8)), (16, 16, 8), (1, 1)), r"^block\[1\] must not exceed n"),
    (lambda: sim.tiled_gemm(np.ones((32, 4)), np.ones((4, 32)), (16, 16, 8), (1, 1)), r"^block\[2\] must not exceed k"),
    (lambda: sim.standard_attention(np.ones((1, 1, 4, 4)), np.ones((1, 1, 4, 4)), np.ones((1, 1, 4, 2))),
     "q, k and v must be non-empty arrays of one shape"),
    (lambda: sim.sectors_touched(-np.arange(32)), "byte_addresses must be 32 non-negative integers"),
    (lambda: sim.sectors_touched(np.arange(32.0)), "byte_addresses must be 32 non-negative integers"),
    (lambda: sim.sectors_touched(np.arange(16)), "byte_addresses must be 32 non-negative integers"),
    (lambda: sim.strided_read(np.ones((4, 4)), 1), "x must be a 1-D array of at least stride=1 elements"),
    (lambda: sim.strided_read(np.ones(3), 4), "x must be a 1-D array of at least stride=4 elements"),
])
def test_the_simulations_refuse_what_they_cannot_run(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_the_smallest_inputs_run():
    assert sim.transpose(np.array([[7.0]])).result.tolist() == [[7.0]]
    assert sim.strided_read(np.arange(4.0), 4).result.tolist() == [0.0]
    one = np.ones((1, 1, 1, 1))
    assert sim.standard_attention(one, one, one).result.tolist() == [[[[1.0]]]]


def test_a_strided_read_returns_fp32():
    assert sim.strided_read(np.arange(64), 2).result.dtype == np.float32


def test_transpose_is_unpadded_unless_asked():
    x = np.arange(64.0 * 64).reshape(64, 64)
    assert sim.transpose(x).bytes["smem"] == sim.transpose(x, padded=False).bytes["smem"] \
        > sim.transpose(x, padded=True).bytes["smem"]


def test_attention_counts_its_parts_by_name():
    q = rng.standard_normal((1, 2, 64, 16))
    std = sim.standard_attention(q, q, q)
    assert list(std.parts) == ["Q, K read", "S written", "S read", "P written", "P, V read", "O written"]
    assert set(std.bytes) == {"l2", "hbm"}
    flash = sim.flash_attention(q, q, q, block=(32, 16))
    assert set(flash.parts) >= {"Q read", "K, V read", "O written"} and set(flash.bytes) == {"l2", "hbm"}


@pytest.mark.parametrize("call, message", [
    (lambda: sim.naive_gemm(np.ones((2, 2)), np.full((2, 2), np.nan)), "^b must be finite"),
    (lambda: sim.standard_attention(*_one_bad(0)), "^q must be finite"),
    (lambda: sim.standard_attention(*_one_bad(1)), "^k must be finite"),
    (lambda: sim.standard_attention(*_one_bad(2)), "^v must be finite"),
    (lambda: sim.tiled_gemm(np.ones((32, 32)), np.ones((32, 32)), (0, 16, 8), (1, 1)), r"^block\[0\] must be positive"),
    (lambda: sim.tiled_gemm(np.ones((32, 32)), np.ones((32, 32)), (16, 16, 8), (8,)), "^thread must be a pair"),
    (lambda: sim.warp_addresses(shape=(32,)), "^shape must be a pair"),
    (lambda: sim.warp_addresses((64, 32), direction="column", index=40), r"^index must be an integer from 0 to 31, got 40$"),
    (lambda: sim.transpose(np.ones((4, 4)), padded=1), "^padded must be True or False"),
    (lambda: sim.online_softmax(np.ones((2, 2)), 0), "^block must be positive"),
    (lambda: sim.flash_attention(*_one_bad(None), block=5), "^block must be a pair"),
    (lambda: sim.strided_read(np.ones(64), 0), "^stride must be positive"),
])
def test_the_simulations_name_what_is_wrong(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def _one_bad(which):
    """q, k, v of one shape, the one at `which` holding an infinity."""
    qkv = [np.ones((1, 1, 4, 4)) for _ in range(3)]
    if which is not None:
        qkv[which][0, 0, 1, 2] = np.inf
    return qkv


def test_a_column_access_walks_down_the_rows():
    """In a 32 x 64 array, column 40: thread t reads word t x 64 + 40."""
    assert sim.warp_addresses((32, 64), index=40).tolist() == (64 * np.arange(32) + 40).tolist()


def test_the_softmax_of_one_score_is_one():
    assert sim.online_softmax(np.array([[3.0]]), 1).tolist() == [[1.0]]


def test_tiled_gemm_refuses_work_past_its_limits_exactly():
    """2**13 steps of k per tile, 2**26 padded multiply-adds: just past each limit is refused
    with the limit named; the tile counts are ceilings (3 columns in tiles of 2 are 2 tiles)."""
    with pytest.raises(ValueError, match=r"^the tiles' steps along k must be at most 8,192 steps, got 8,193$"):
        sim.tiled_gemm(np.ones((1, 8193)), np.ones((8193, 1)), block=(1, 1, 1), thread=(1, 1))
    with pytest.raises(ValueError, match=r"^the tiles' steps along k must be at most 8,192 steps, got 8,194$"):
        sim.tiled_gemm(np.ones((1, 4097)), np.ones((4097, 3)), block=(1, 2, 1), thread=(1, 1))
    with pytest.raises(ValueError, match=r"^the padded m x n x k must be at most 67,108,864 multiply-adds, got 134,217,728$"):
        sim.tiled_gemm(np.ones((8192, 128)), np.ones((128, 128)), block=(8192, 128, 128), thread=(1, 1))
    run = sim.tiled_gemm(np.ones((3, 5)), np.ones((5, 3)), block=(2, 2, 2), thread=(1, 1))
    assert np.array_equal(run.result, np.full((3, 3), 5.0))
    # 4 B x (a 2 x 2 tile of A and one of B) per step, 3 steps of k (k padded to 6), for each of 4 tiles of C
    assert run.parts["tiles written"] == 4 * (2 * 2 + 2 * 2) * 3 * 4


def test_transpose_refuses_more_warp_steps_than_its_limit():
    """Two warp steps per row of each 32 x 32 tile: 192 x 192 is 6 x 6 tiles, 2,304 steps."""
    with pytest.raises(ValueError, match=r"^x's warp steps \(2 per row of each 32 x 32 tile\) must be at most 2,048 steps, got 2,304$"):
        sim.transpose(np.ones((192, 192)))
    assert sim.transpose(np.ones((160, 160))).result.shape == (160, 160)  # 5 x 5 tiles: 1,600 steps


def test_a_128_bit_load_is_served_by_quarter_warps_that_share_no_fetch():
    """Nsight Compute's counts on compute capability 8.6 and 9.0 (NVIDIA developer forum
    thread 373160): lanes t and t + 16 reading the same 16 bytes, 32 bytes apart from lane to
    lane, take 8 wavefronts (two per quarter-warp, no broadcast between quarter-warps); each
    half-warp reading one address takes 2."""
    lane = np.arange(32)
    strided = (lane % 16)[:, None] * 8 + np.arange(4)
    assert sim.bank_conflicts(strided) == 4 and sim.wavefronts(strided) == 8
    halves = (lane // 16)[:, None] * 8 + np.arange(4)
    assert sim.wavefronts(halves) == 2
