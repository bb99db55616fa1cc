"""The decode step's rules (`gpumodel.decode`) pinned to values derived by hand and tested at
their boundaries: a model's shape checks (heads a multiple of kv_heads, a mixture of experts all
set or none, params above the table and the experts), its derived sizes, the batches whose caches
fit (each sequence's context and its new token's row), the critical batch's search limit,
pages, split-KV and FlashAttention's split rule just below and at its 0.8 threshold."""

import math

import pytest

import gpumodel as gm
from gpumodel import decode as dc


def test_heads_must_be_a_multiple_of_kv_heads():
    """12 query heads cannot share 8 key-value heads evenly; 16 can (groups of 2), and 8 (MHA)."""
    with pytest.raises(ValueError, match=r"heads must be a multiple of kv_heads \(8\), got 12"):
        dc.Model("m", 4, 12, 8, 64, 1e9)
    assert dc.Model("m", 4, 16, 8, 64, 1e9).group == 2 and dc.Model("m", 4, 8, 8, 64, 1e9).group == 1


@pytest.mark.parametrize("moe", [dict(experts=8), dict(moe_layers=2), dict(active=2), dict(expert_params=1e6),
                                 dict(experts=8, moe_layers=2, active=2)])
def test_a_mixture_of_experts_must_set_all_four_or_none(moe):
    with pytest.raises(ValueError, match="experts, active, moe_layers and expert_params must be all set"):
        dc.Model("m", 4, 8, 8, 64, 1e9, **moe)


def test_a_mixture_of_experts_at_its_limits():
    """active = experts and moe_layers = layers are allowed, one more is not; params must exceed
    the table and routed experts: 4 x 8 x 1e6 = 3.2e7 routed + 1,000 x 512 = 512,000 table."""
    ok = dict(experts=8, active=8, moe_layers=4, expert_params=1e6)
    m = dc.Model("m", 4, 8, 8, 64, 1e8, vocab=1000, **ok)
    assert m.routed == 3.2e7 and m.embedding == 512000 and m.width == 512
    with pytest.raises(ValueError, match="active"):
        dc.Model("m", 4, 8, 8, 64, 1e8, **{**ok, "active": 9})
    with pytest.raises(ValueError, match="moe_layers"):
        dc.Model("m", 4, 8, 8, 64, 1e8, **{**ok, "moe_layers": 5})
    with pytest.raises(ValueError, match="params must exceed"):
        dc.Model("m", 4, 8, 8, 64, 3.2e7 + 512000, vocab=1000, **ok)
    assert dc.Model("m", 4, 8, 8, 64, 3.2e7 + 512001, vocab=1000, **ok).params == 3.2e7 + 512001


def test_a_models_derived_sizes_by_hand():
    """GQA, 4 layers of 16 heads of 64 over 4 key-value heads, width 1,024 (hidden given: 2,048),
    vocabulary 1,000, 8 routed experts of 1e6 on 2 layers, 3 active. Rows a token adds: 4 x 2 x 4
    = 32 of 64 elements. Active weights: 1e9 - 2,048,000 (the table) - 2 x 5 x 1e6 (the experts not
    routed to) = 987,952,000. Attention: 4 h d L = 4 x 64 x 16 x 4 = 16,384 FLOP per token."""
    m = dc.Model("m", 4, 16, 4, 64, 1e9, hidden=2048, vocab=1000, moe_layers=2, experts=8, active=3,
                 expert_params=1e6)
    assert (m.attention, m.group, m.rows, m.row_elements, m.width) == ("gqa", 4, 32, 64, 2048)
    assert (m.embedding, m.routed, m.active_params, m.attention_flops) == (2048000, 1.6e7, 987952000, 16384)
    assert dc.Model("m", 4, 16, 4, 64, 1e9).width == 16 * 64


def test_mla_caches_one_latent_row_per_layer_and_scores_on_it():
    """MLA: one row per layer of latent + rope = 576 elements; per query head 2(2 x 512 + 64) =
    2,176 FLOP a token of context; all heads one group."""
    m = dc.Model("mla", 3, 8, 1, 128, 1e9, latent=512, rope=64)
    assert (m.attention, m.group, m.rows, m.row_elements) == ("mla", 8, 3, 576)
    assert m.attention_flops == 3 * 8 * 2176
    assert dc.kv_bytes_per_token(m) == 3 * 576 * 2


def test_a_tied_table_is_multiplied_and_read_whole():
    """Tied: the table is the LM head, all 1e9 weights active and read at any batch."""
    m = dc.Model("m", 2, 8, 8, 64, 1e9, vocab=1000, tied=True)
    assert m.active_params == 1e9 and float(dc.weights_read(m, 7)) == 1e9
    untied = dc.Model("m", 2, 8, 8, 64, 1e9, vocab=1000)
    assert untied.active_params == 1e9 - 512000 and float(dc.weights_read(untied, 7)) == 1e9 - 512000 + 7 * 512


def test_a_row_pays_one_scale_per_started_group():
    """int4: 0.5 B an element and 4 B per 32 elements started: 33 elements are 16.5 + 2 x 4 = 24.5 B;
    32 elements 16 + 4 = 20 B; fp32 4 B an element, no scale."""
    assert dc.row_bytes(33, "int4") == 24.5 and dc.row_bytes(32, "int4") == 20
    assert dc.row_bytes(33, "fp32") == 132 and dc.row_bytes(33) == 66


def test_max_batch_counts_each_sequences_context_and_its_new_tokens_row():
    """H100 SXM, 80 GB; Llama-2-7B in fp16 is 13.4 GB of weights, leaving 66.6 GB; a token's cache
    is 524,288 B. At context 0 each sequence still holds its new token's row: 66.6e9 / 524,288 =
    127,029.6 -> 127,029. At context 4,095: 4,096 rows, 2^31 B: 31.01 -> 31. int4 weights (3.35 GB)
    leave 76.65 GB: 146,198.5 -> 146,198 at context 0."""
    assert dc.max_batch("Llama-2-7B", "H100-SXM", 0) == 127029
    assert dc.max_batch("Llama-2-7B", "H100-SXM", 4095) == 31
    assert dc.max_batch("Llama-2-7B", "H100-SXM", 0, weight="int4") == 146198
    # A context where the new token's row decides: room / (c + 1) rows just under 1, room / c just over.
    k = dc.kv_bytes_per_token("Llama-2-7B")
    c = int(66.6e9 // k)  # 127,029 rows fit; a sequence of c tokens needs c + 1
    assert dc.max_batch("Llama-2-7B", "H100-SXM", c) == 0 and dc.max_batch("Llama-2-7B", "H100-SXM", c - 1) == 1
    # Weights larger than HBM: nothing fits (not a negative batch).
    assert dc.max_batch("Llama-2-70B", "A100-40GB", 0) == 0


def test_tokens_per_second_is_the_batch_over_the_step_time():
    """Batch 2, context 100: 2 / the step's bound."""
    t = float(dc.step_time("Llama-3-8B", "H100-SXM", 2, 100))
    assert float(dc.tokens_per_second("Llama-3-8B", "H100-SXM", 2, 100)) == pytest.approx(2 / t, rel=1e-12)


def test_the_step_counts_weights_at_their_format_and_each_sequences_rows():
    """Llama-3-8B, batch 3, context 10, int4 weights, int4 cache (80 B a row, 32 x 2 x 8 = 512
    rows a token): weights (8e9 - 128,000 x 4,096 + 3 x 4,096) x 0.5 B, cache 3 x 11 x 512 x 80 B. FLOPs: 2 x
    (8e9 - 524,288,000) x 3 + 3 x 10 x 4 x 128 x 32 x 32."""
    w = dc.step("Llama-3-8B", 3, 10, weight="int4", kv="int4", math="fp8")
    nbytes = (8e9 - 128000 * 4096 + 3 * 4096) * 0.5 + 3 * 11 * 512 * 80
    assert float(w.bytes["hbm"]) == float(w.bytes["l2"]) == pytest.approx(nbytes, rel=1e-12)
    assert float(w.flops) == pytest.approx(2 * (8e9 - 524288000) * 3 + 3 * 10 * 4 * 128 * 32 * 32, rel=1e-12)
    assert w.math == "fp8" and float(w.bytes["smem"]) == 0


def test_the_critical_batch_search_stops_at_largest():
    """Llama-2-7B at context 0 leaves HBM at some batch B* (299 on the H100): found with largest
    = B*, not found (None) with largest = B* - 1."""
    found = dc.critical_batch("Llama-2-7B", "H100-SXM", 0)
    p = gm.predict(dc.step("Llama-2-7B", [found - 1, found], 0), "H100-SXM")
    assert list(p.bound) == ["hbm", p.bound[1]] and p.bound[1] != "hbm"
    assert dc.critical_batch("Llama-2-7B", "H100-SXM", 0, largest=found) == found
    assert dc.critical_batch("Llama-2-7B", "H100-SXM", 0, largest=found - 1) is None


def test_a_model_never_hbm_bound_has_critical_batch_one():
    """A model of few weights and much attention per cached byte (1,024 heads on one latent row of
    16 values: 1,024 x 2 (2 x 8 + 8) = 49,152 FLOP per 32 B cached): compute-bound at batch 1."""
    m = dc.Model("m", 1, 1024, 1, 128, 2.0, latent=8, rope=8)
    assert not gm.predict(dc.step(m, 1, 4096), "H100-SXM").bound == "hbm"
    assert dc.critical_batch(m, "H100-SXM", 4096) == 1


def test_pages_of_whole_rows_and_the_index_bytes():
    """32 rows of 48 B in pages of 16: 2 pages of 768 B (24 sectors each), the last full; 8-byte
    indices: 16 B of table. 33 rows: 3 pages, the last of one row, 2 sectors (48 B)."""
    p = dc.paged_kv(32, 16, 48, index_bytes=8)
    assert (p.pages, p.stride, p.sectors, p.contiguous, p.table_bytes, p.allocated) == (2, 768, 48, 48, 16, 1536)
    assert p.read_bytes == 48 * 32 and p.wasted == 0
    q = dc.paged_kv(33, 16, 48)
    assert (q.pages, q.sectors, q.contiguous) == (3, 24 + 24 + 2, math.ceil(33 * 48 / 32))
    assert q.allocated == 3 * 768 and q.wasted == pytest.approx(1 - 33 * 48 / 2304)
    # A page of 10 rows of 10 B: 100 B, a stride of 128 (4 sectors).
    assert dc.paged_kv(10, 10, 10).stride == 128


def test_split_kv_writes_and_merges_partials_only_when_split():
    """Batch 2, 8 heads over 2 key-value heads of 64, 64 tokens in pages of 16 (fp16: 128 B a row,
    4 pages of 2 KiB, 64 sectors each), 4 splits: 16 blocks on 132 SMs, one wave; the cache read
    2 x 2 x 2 x 8 KiB; partials per query head and split 65 fp32 values written and read:
    2 x 64 rows x 65 x 4; the merge 64 x 130 flops and 64 exponentials. One split: none."""
    f = dc.split_kv("H100-SXM", 2, 8, 2, 64, 64, 4)
    assert (f.blocks, f.sms, f.waves) == (16, 132, 1) and f.busy == pytest.approx(16 / 132)
    assert f.kv_bytes == 2 * 2 * 2 * 8192
    assert (f.partial_bytes, f.merge_flops, f.merge_special) == (2 * 64 * 65 * 4, 64 * 130, 64)
    one = dc.split_kv("H100-SXM", 2, 8, 2, 64, 64, 1)
    assert (one.partial_bytes, one.merge_flops, one.merge_special, one.kv_bytes) == (0, 0, 0, f.kv_bytes)
    assert dc.split_kv("H100-SXM", 2, 8, 2, 64, 64, 4, page_tokens=16).splits == 4
    with pytest.raises(ValueError, match="splits"):
        dc.split_kv("H100-SXM", 2, 8, 2, 64, 64, 5)  # 4 pages: at most 4 splits


def test_wave_splits_does_not_split_from_80_percent_of_the_sms():
    """H100, 132 SMs: 0.8 x 132 = 105.6. 106 blocks: no split. 105 blocks fill 105 / 132 = 0.795
    of a wave at 1 to 4 splits (105 S / 132 over ceil of it), 5 splits 525 / 528 = 0.994: the
    best; 0.85 of it first reached at S = 5."""
    assert dc.wave_splits("H100-SXM", 106, 1) == 1
    assert dc.wave_splits("H100-SXM", 105, 1) == 5
    assert dc.wave_splits("H100-SXM", 1, 8, chunks=1) == 1  # one chunk: nothing to split


def test_experts_touched_at_its_limits():
    """All experts active: every one touched by one token. One expert of two, two tokens:
    2 (1 - 1/4) = 1.5."""
    assert dc.experts_touched(4, 4, 1) == 4
    assert dc.experts_touched(2, 1, 2) == 1.5
