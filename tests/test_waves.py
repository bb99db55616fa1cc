"""The wave model of L2 reuse: block orders enumerated by hand, bounds respected,
monotone in L2 capacity."""

import pytest

import gpumodel as gm
from gpumodel.waves import block_coordinates, gemm_hbm


def enumerate_order(rows, cols, order, group):
    """The launch order written as plain loops, independently of `block_coordinates`."""
    if order == "row":
        return [(r, c) for r in range(rows) for c in range(cols)]
    out = []
    for first in range(0, rows, group):
        height = min(group, rows - first)
        for c in range(cols):
            for r in range(first, first + height):
                out.append((r, c))
    return out


@pytest.mark.parametrize("rows, cols, order, group", [
    (5, 7, "row", 1), (5, 7, "grouped", 2), (6, 4, "grouped", 3), (7, 3, "grouped", 8), (1, 9, "grouped", 4),
])
def test_block_orders_match_plain_loops(rows, cols, order, group):
    r, c = block_coordinates(rows, cols, order, group)
    assert list(zip(r.tolist(), c.tolist())) == enumerate_order(rows, cols, order, group)


def distinct_panels_by_enumeration(rows, cols, order, group, wave):
    blocks = enumerate_order(rows, cols, order, group)
    waves = [blocks[i:i + wave] for i in range(0, len(blocks), wave)]
    return [(len({r for r, _ in w}), len({c for _, c in w})) for w in waves]


@pytest.mark.parametrize("order, group", [("row", 1), ("grouped", 2), ("grouped", 4)])
def test_hbm_bytes_from_enumerated_panels_when_l2_holds_them(order, group):
    """With L2 large enough, HBM supplies exactly the distinct panels of each wave."""
    m = n = 128 * 6
    k = 256
    t = gemm_hbm(m, n, k, block=(128, 128), dtype="fp16", gpu="V100", blocks_per_sm=1, order=order,
                 group=group, l2_bytes=2**40)
    # The V100 has 80 SMs: one wave holds the whole 6 x 6 grid. Check a smaller wave too.
    panels = distinct_panels_by_enumeration(6, 6, order, group, t.wave)
    want = sum(r * 128 * k * 2 + c * 128 * k * 2 for r, c in panels) + 2 * m * n
    assert t.hbm == want


def test_small_waves_by_enumeration():
    """A100 (108 SMs), 2 blocks per SM, 20 x 20 grid: 216-block waves, counted by hand."""
    k = 512
    for order, group in (("row", 1), ("grouped", 4)):
        t = gemm_hbm(20 * 128, 20 * 128, k, gpu="A100-40GB", blocks_per_sm=2, order=order, group=group,
                     l2_bytes=2**40)
        panels = distinct_panels_by_enumeration(20, 20, order, group, 216)
        assert t.waves == len(panels)
        assert t.hbm == sum((r + c) * 128 * k * 2 for r, c in panels) + 2 * (20 * 128) ** 2


@pytest.mark.parametrize("preset", ["A100-40GB", "H100-SXM", "B200"])
@pytest.mark.parametrize("order, group", [("row", 8), ("grouped", 8), ("grouped", 32)])
def test_bounds_and_monotone_in_l2(preset, order, group):
    last = None
    for mib in (1, 10, 40, 100, 1000, 10**6):
        t = gemm_hbm(8192, 8192, 8192, gpu=preset, blocks_per_sm=2, order=order, group=group, l2_bytes=mib * 2**20)
        assert t.compulsory <= t.hbm <= t.no_reuse
        if last is not None:
            assert t.hbm <= last
        last = t.hbm


def test_no_reuse_bound_is_the_paper_estimate():
    t = gemm_hbm(8192, 8192, 8192, gpu="A100-40GB")
    paper = gm.gemm(8192, 8192, 8192, block=(128, 128), dtype="fp16", l2_reuse=False)
    assert t.no_reuse == float(paper.bytes["hbm"])
    assert t.compulsory == float(gm.gemm(8192, 8192, 8192, block=(128, 128), dtype="fp16").bytes["hbm"])


def test_grouping_helps_and_drift_hurts():
    row = gemm_hbm(8192, 8192, 8192, gpu="A100-40GB", blocks_per_sm=2)
    grouped = gemm_hbm(8192, 8192, 8192, gpu="A100-40GB", blocks_per_sm=2, order="grouped", group=8)
    in_step = gemm_hbm(8192, 8192, 8192, gpu="A100-40GB", blocks_per_sm=2, order="grouped", group=8, drift_k=1024)
    assert in_step.hbm < grouped.hbm < row.hbm


def test_warm_reads_pay_hbm_only_for_what_cannot_stay_in_l2():
    """A100 40 GB: L2 7.2192 TB/s, HBM 1.555 TB/s, 40 MiB. Just past the capacity the bound is
    still L2's; HBM takes over once (bytes - 40 MiB) / HBM exceeds bytes / L2, at
    40 MiB x 7.2192 / (7.2192 - 1.555) = 51.0 MiB by hand."""
    a100 = gm.gpu("A100-40GB")
    cap, l2, hbm = a100.capacity("l2"), a100.bandwidth("l2"), a100.bandwidth("hbm")
    for nbytes in (cap, cap + 4, cap * 6 // 5):
        assert gm.waves.warm_read_time("A100-40GB", nbytes) == nbytes / l2
    assert gm.waves.warm_read_time("A100-40GB", 2 * cap) == pytest.approx(cap / hbm)
    edge = cap * l2 / (l2 - hbm)
    assert edge / 2**20 == pytest.approx(51.0, abs=0.05)
    past = int(1.01 * edge)
    assert gm.waves.warm_read_time("A100-40GB", past) == (past - cap) / hbm


def test_l1_serves_at_most_what_an_sms_footprint_lets_it():
    """gpu-l2-cache's 512 kB chunks, 1,024-thread blocks (two per SM on 9.0), H200 (132 SMs,
    256 KB L1), by hand: 3 chunks, gcd(3, 132) = 3, so an SM meets one chunk: L1 holds
    256/512 of it and the two co-resident blocks share it, 0.5 either way. 5 chunks, gcd 1: an
    SM meets all 5 (2,560 kB), the blocks beside each other read different ones: 256/2560.
    30 chunks, gcd 6: 5 chunks, 2,560 kB again. A100 (108 SMs, 192 KB), 4 chunks, gcd 4:
    192/512 held, but the two co-resident blocks share the chunk: 0.5."""
    chunk, share = 512 * 1024, gm.waves.l1_share
    assert share("H200", 3 * chunk, chunk, 1024) == 0.5
    assert share("H200", 5 * chunk, chunk, 1024) == pytest.approx(256 / 2560)
    assert share("H200", 30 * chunk, chunk, 1024) == pytest.approx(256 / 2560)
    assert share("A100-80GB", 4 * chunk, chunk, 1024) == 0.5
    assert share("A100-80GB", 4 * chunk, chunk, 2048 // 8) == 1 - 1 / 8  # eight 256-thread blocks on one chunk
    assert share("H200", chunk // 4, chunk // 8, 1024) == 1  # 128 kB: the whole footprint fits
    h200 = gm.gpu("H200")
    nbytes = 3 * chunk
    assert gm.waves.warm_read_time(h200, nbytes, chunk, 1024) == nbytes / 2 / h200.bandwidth("l2")
    assert gm.waves.warm_read_time(h200, nbytes) == nbytes / h200.bandwidth("l2")
    tiny = gm.waves.warm_read_time(h200, chunk // 4, chunk // 8, 1024)  # all from L1: its data path binds
    assert tiny == chunk // 4 / h200.bandwidth("smem")


def test_recent_lines_serve_less_than_the_best_and_past_l2_every_byte_comes_from_hbm():
    """gpu-l2-cache's chunks again, through caches keeping the most recent lines. A100 (192 KB
    L1), 4 chunks: the SM's two blocks share one 512 kB chunk at independent places; a line
    hits if the block ahead read it less than 192 KB of the SM's traffic ago, the two blocks
    fetching twice the gap: 192/1024. H200, 3 chunks: 256/1024. H200, 5 chunks: one block per
    chunk, the line comes back a 2,560 kB footprint later: no hit. A footprint that fits: all."""
    chunk, hits, share = 512 * 1024, gm.waves.l1_hits, gm.waves.l1_share
    assert hits("A100-80GB", 4 * chunk, chunk, 1024) == pytest.approx(192 / 1024)
    assert hits("H200", 3 * chunk, chunk, 1024) == pytest.approx(256 / 1024)
    assert hits("H200", 5 * chunk, chunk, 1024) == 0
    assert hits("H200", chunk // 4, chunk // 8, 1024) == 1
    assert hits("A100-80GB", 4 * chunk, chunk, 256) == pytest.approx(1 - (1 - 192 / (8 * 512)) ** 7)  # 8 on one chunk
    for gpu in ("A100-80GB", "H100-PCIe", "H200", "V100"):
        for n in (1, 2, 3, 4, 5, 7, 30, 100):
            for threads in (256, 512, 1024):
                assert hits(gpu, n * chunk, chunk, threads) <= share(gpu, n * chunk, chunk, threads)
    h200 = gm.gpu("H200")
    nbytes = 3 * chunk
    assert gm.waves.warm_read_time(h200, nbytes, chunk, 1024, cache="recent") == pytest.approx(
        0.75 * nbytes / h200.bandwidth("l2"))
    past = 2 * h200.capacity("l2")
    assert gm.waves.warm_read_time(h200, past, cache="recent") == past / h200.bandwidth("hbm")
    assert gm.waves.warm_read_time(h200, past) == (past - h200.capacity("l2")) / h200.bandwidth("hbm")


def test_bad_input():
    with pytest.raises(ValueError, match="order must be one of"):
        block_coordinates(4, 4, "diagonal")
    with pytest.raises(ValueError, match="cache must be one of"):
        gm.waves.warm_read_time("H200", 2**21, cache="lru")
    with pytest.raises(ValueError, match="chunk and threads go together"):
        gm.waves.warm_read_time("H200", 2**21, chunk=2**19)
    with pytest.raises(ValueError, match="chunk must not exceed nbytes"):
        gm.waves.l1_share("H200", 2**19, 2**21, 1024)
    with pytest.raises(ValueError, match="threads must not exceed"):
        gm.waves.l1_share("H200", 2**21, 2**19, 2048)
    with pytest.raises(ValueError, match="group"):
        block_coordinates(4, 4, "grouped", 0)


def test_a_row_major_wave_spans_few_rows_and_every_column():
    """On the A100, 108 blocks of a 64 x 64 grid of tiles: row order covers all 64 columns
    and about 2.6 rows per wave on average; grouped order a squarer patch."""
    row = gm.waves.gemm_hbm(8192, 8192, 8192, gpu="A100-40GB", order="row")
    assert row.wave == 108 and row.waves == 38 and row.cols_per_wave == 64
    assert row.rows_per_wave == pytest.approx(99 / 38)  # 37 waves spanning 3 rows (some 2), the last 1
    grouped = gm.waves.gemm_hbm(8192, 8192, 8192, gpu="A100-40GB", order="grouped", group=8)
    assert grouped.cols_per_wave < row.cols_per_wave and grouped.rows_per_wave > row.rows_per_wave


def test_grouped_order_takes_eight_rows_at_a_time_by_default():
    """Column 0 of rows 0 to 7 first, then column 1 of the same rows."""
    r, c = block_coordinates(16, 4, "grouped")
    assert list(zip(r[:10].tolist(), c[:10].tolist())) == [(i, 0) for i in range(8)] + [(0, 1), (1, 1)]
    assert gemm_hbm(8192, 8192, 8192, order="grouped") == gemm_hbm(8192, 8192, 8192, order="grouped", group=8)


def test_the_largest_grid_the_wave_model_walks():
    r, c = block_coordinates(2**10, 2**10)  # MAX_BLOCKS = 2**20 tiles exactly
    assert r.size == 2**20 and (r[-1], c[-1]) == (2**10 - 1, 2**10 - 1)
    with pytest.raises(ValueError, match="rows x cols must be at most 1,048,576 blocks"):
        block_coordinates(2**10, 2**10 + 1)


def test_one_wave_between_no_l2_and_an_l2_holding_its_working_set():
    """1024^3 in fp16 with 128 x 128 tiles: an 8 x 8 grid, one wave on the A100's 108 SMs.
    Each panel is 2 B x 128 x 1024 = 256 KiB; the wave needs 8 + 8 distinct panels (4 MiB)
    out of 64 x 2 panel reads (32 MiB); C is 2 MiB."""
    panel, c_bytes = 2 * 128 * 1024, 2 * 1024 * 1024
    distinct, every = 16 * panel, 128 * panel
    whole = gemm_hbm(1024, 1024, 1024, l2_bytes=distinct)
    assert whole.hbm == whole.compulsory == distinct + c_bytes
    # Half the working set fits: half the reuse survives.
    half = gemm_hbm(1024, 1024, 1024, l2_bytes=distinct // 2)
    assert half.hbm == distinct + 0.5 * (every - distinct) + c_bytes
    # ... unless the blocks stay within half of K of each other: then the working set halves.
    assert gemm_hbm(1024, 1024, 1024, l2_bytes=distinct // 2, drift_k=512).hbm == distinct + c_bytes
    # A one-byte L2 keeps (almost) nothing: every panel read reaches HBM.
    assert gemm_hbm(1024, 1024, 1024, l2_bytes=1).hbm == pytest.approx(every + c_bytes, rel=1e-6)
