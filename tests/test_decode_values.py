"""The decode step's rules (`gpumodel.decode`) pinned to values derived by hand and tested at
their boundaries: a model's shape checks (heads a multiple of kv_heads, a mixture of experts all
set or none, params above the table and the experts), its derived sizes, the batches whose caches
fit (each sequence's context and its new token's row), the critical batch's search limit,
pages, split-KV and FlashAttention's split rule just below and at its 0.8 threshold; each refusal's
message (the parameter's own name, its own ceiling, both names of a comparison, word for word); the
critical batch at 2 and 3, its search stopped at largest, a model clearing the ridge by under one
FLOP a sequence in each cache and weight format; the split rule at exactly 0.85 of the best, its
default of 128 chunks, its caps of 128 splits and one split per slot."""

import math
import re

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


# --- Names and ceilings in the messages, boundaries of the critical batch and the split rule ---

BIG = 2**60  # past every ceiling and past 2**53, the default one: the message names the right ceiling

MILLION, CONTEXT = f"{dc.MOST_BATCH:,}", f"{dc.MOST_CONTEXT:,}"  # 1,048,576 (also MOST_WIDTH) and 16,777,216
assert dc.MOST_WIDTH == dc.MOST_BATCH


@pytest.mark.parametrize("call, message", [
    (lambda: dc.row_bytes(0), "elements must be positive"),
    (lambda: dc.row_bytes(8, "int3"), "kv must be one of"),
    (lambda: dc.experts_touched(0, 1, 1), "experts must be positive"),
    (lambda: dc.experts_touched(BIG, 1, 1), f"experts must be at most {MILLION},"),
    (lambda: dc.experts_touched(8, 0, 1), "active must be positive"),
    (lambda: dc.experts_touched(8, BIG, 1), f"active must be at most {MILLION},"),
    (lambda: dc.experts_touched(8, 2, 0), "batch must be positive"),
    (lambda: dc.experts_touched(8, 2, BIG), f"batch must be at most {MILLION},"),
    (lambda: dc.weights_read("Llama-3-8B", 0), "batch must be positive"),
    (lambda: dc.weights_read("Llama-3-8B", BIG), f"batch must be at most {MILLION},"),
    (lambda: dc.step("Llama-3-8B", BIG, 1), f"batch must be at most {MILLION},"),
    (lambda: dc.step("Llama-3-8B", 1, 1, weight="fp5"), "weight must be one of"),
    (lambda: dc.tokens_per_second("Llama-3-8B", "H100-SXM", 0, 1), "batch must be positive"),
    (lambda: dc.tokens_per_second("Llama-3-8B", "H100-SXM", BIG, 1), f"batch must be at most {MILLION},"),
    (lambda: dc.critical_batch("Llama-3-8B", "H100-SXM", -1), "context must be a whole number >= 0"),
    (lambda: dc.critical_batch("Llama-3-8B", "H100-SXM", BIG), f"context must be at most {CONTEXT},"),
    (lambda: dc.critical_batch("Llama-3-8B", "H100-SXM", 0, largest=0), "largest must be positive"),
    (lambda: dc.critical_batch("Llama-3-8B", "H100-SXM", 0, largest=BIG), f"largest must be at most {MILLION},"),
    (lambda: dc.critical_batch("Llama-3-8B", "H100-SXM", 0, weight="fp5"), "weight must be one of"),
    (lambda: dc.max_batch("Llama-3-8B", "H100-SXM", 0, weight="fp5"), "weight must be one of"),
    (lambda: dc.prefix_cache_bytes("Llama-3-8B", 0, 10, 1), "batch must be positive"),
    (lambda: dc.prefix_cache_bytes("Llama-3-8B", BIG, 10, 1), f"batch must be at most {MILLION},"),
    (lambda: dc.prefix_cache_bytes("Llama-3-8B", 1, -1, 0), "context must be a whole number >= 0"),
    (lambda: dc.prefix_cache_bytes("Llama-3-8B", 1, BIG, 0), f"context must be at most {CONTEXT},"),
    (lambda: dc.prefix_cache_bytes("Llama-3-8B", 1, 10, -1), "prefix must be a whole number >= 0"),
    (lambda: dc.prefix_cache_bytes("Llama-3-8B", 1, 10, BIG), f"prefix must be at most {CONTEXT},"),
    (lambda: dc.paged_kv(0, 16, 256), "context must be positive"),
    (lambda: dc.paged_kv(BIG, 16, 256), f"context must be at most {CONTEXT},"),
    (lambda: dc.paged_kv(100, BIG, 256), f"page_tokens must be at most {CONTEXT},"),
    (lambda: dc.paged_kv(100, 16, 0), "row_bytes must be positive"),
    (lambda: dc.paged_kv(100, 16, 256, index_bytes=0), "index_bytes must be positive"),
    (lambda: dc.split_kv("H100-SXM", 0, 8, 8, 64, 64, 1), "batch must be positive"),
    (lambda: dc.split_kv("H100-SXM", BIG, 8, 8, 64, 64, 1), f"batch must be at most {MILLION},"),
    (lambda: dc.split_kv("H100-SXM", 1, 0, 8, 64, 64, 1), "heads must be positive"),
    (lambda: dc.split_kv("H100-SXM", 1, BIG, 8, 64, 64, 1), f"heads must be at most {MILLION},"),
    (lambda: dc.split_kv("H100-SXM", 1, 8, 0, 64, 64, 1), "kv_heads must be positive"),
    (lambda: dc.split_kv("H100-SXM", 1, 8, BIG, 64, 64, 1), f"kv_heads must be at most {MILLION},"),
    (lambda: dc.split_kv("H100-SXM", 1, 8, 8, 0, 64, 1), "head_dim must be positive"),
    (lambda: dc.split_kv("H100-SXM", 1, 8, 8, BIG, 64, 1), f"head_dim must be at most {MILLION},"),
    (lambda: dc.split_kv("H100-SXM", 1, 8, 8, 64, 64, 0), "splits must be positive"),
    (lambda: dc.wave_splits("H100-SXM", 0, 8), "batch must be positive"),
    (lambda: dc.wave_splits("H100-SXM", BIG, 8), f"batch must be at most {MILLION},"),
    (lambda: dc.wave_splits("H100-SXM", 1, 0), "kv_heads must be positive"),
    (lambda: dc.wave_splits("H100-SXM", 1, BIG), f"kv_heads must be at most {MILLION},"),
    (lambda: dc.wave_splits("H100-SXM", 1, 8, chunks=0), "chunks must be positive"),
    (lambda: dc.wave_splits("H100-SXM", 1, 8, slots_per_sm=0), "slots_per_sm must be positive"),
    (lambda: dc.Model("m", 4, 8, 8, 64, 1e9, tied=1), "tied must be True or False, got 1$"),
])
def test_each_refusal_names_its_parameter_and_its_own_ceiling(call, message):
    """The message starts with the parameter's own name (not another's, not upper case); a value
    past the ceiling names the function's ceiling (2**60 is also past 2**53, the default one)."""
    with pytest.raises(ValueError, match="^" + message):
        call()


@pytest.mark.parametrize("call, message", [
    (lambda: dc.experts_touched(6, 8, 4), "active must not exceed experts: got active=8, experts=6"),
    (lambda: dc.prefix_cache_bytes("Llama-3-8B", 4, 10, 11), "prefix must not exceed context: got prefix=11, context=10"),
    (lambda: dc.prefix_cache_bytes("Llama-3-8B", 4, 10, 2, shared=1), "shared must be True or False, got 1"),
    (lambda: dc.split_kv("H100-SXM", 2, 8, 2, 64, 64, 5),
     "splits must not exceed the pages (context / page_tokens, rounded up): got splits=5, "
     "the pages (context / page_tokens, rounded up)=4"),
    (lambda: dc.step("Llama-3-8B", [1, 2], [1, 2, 3]), "batch and context must broadcast: shapes (2,) and (3,)"),
    (lambda: dc.prefix_cache_bytes("Llama-3-8B", [1, 2], [5, 6, 7], 0),
     "batch and context must broadcast: shapes (2,) and (3,)"),
    (lambda: dc.prefix_cache_bytes("Llama-3-8B", 1, [5, 6, 7], [1, 2]),
     "context and prefix must broadcast: shapes (3,) and (2,)"),
    (lambda: dc.prefix_cache_bytes("Llama-3-8B", [1, 2], 5, [1, 2, 3]),
     "batch and prefix must broadcast: shapes (2,) and (3,)"),
    (lambda: dc.Model("m", 4, 8, 8, 64, 1e9, experts=8),
     "experts, active, moe_layers and expert_params must be all set (a mixture of experts) or all 0, "
     "got 8, 0, 0, 0.0"),
    (lambda: dc.Model("m", 4, 8, 8, 64, 1e9, experts=8, active=9, moe_layers=4, expert_params=1e6),
     "active must not exceed experts: got active=9, experts=8"),
    (lambda: dc.Model("m", 4, 8, 8, 64, 1e9, experts=8, active=8, moe_layers=5, expert_params=1e6),
     "moe_layers must not exceed layers: got moe_layers=5, layers=4"),
    # 4 layers x 8 experts x 1e6 = 3.2e7 routed + 1,000 x 512 = 512,000 table = 32,512,000.
    (lambda: dc.Model("m", 4, 8, 8, 64, 3.2e7, vocab=1000, experts=8, active=8, moe_layers=4, expert_params=1e6),
     "params must exceed the embedding table and the routed experts (3.2512e+07 weights), got 32000000.0"),
])
def test_each_refusal_reads_whole(call, message):
    """The whole message, word for word: both names of a comparison, the shapes that do not
    broadcast (the first two that clash), the sum a model's weights must exceed."""
    with pytest.raises(ValueError, match="^" + re.escape(message) + "$"):
        call()


def test_critical_batch_refuses_a_bad_cache_format_before_the_units():
    """A bad cache format and bad units at once: the check names the cache format's value first
    (the step checks kv before it builds the workload that checks math)."""
    with pytest.raises(ValueError, match=r"^kv must be one of .*, got 'int3'$"):
        dc.critical_batch("Llama-3-8B", "H100-SXM", 0, kv="int3", math="fp7")


def tiny_mla(params):
    """1 layer, 1,024 query heads of 1 on one latent row of 8 + 8 (RoPE): a = 1,024 x 2 (2 x 8 + 8)
    = 49,152 FLOP per token of context, k = 16 x 2 = 32 B a token; width 1,024: e = 2,048 B."""
    return dc.Model("m", 1, 1024, 1, 1, params, latent=8, rope=8)


def test_critical_batch_two_and_three_by_hand():
    """At context 64 a sequence adds 2P + 64 x 49,152 = 2P + 3,145,728 FLOP and 2,048 + 65 x 32 =
    4,128 B; with P s_w = 2P bytes of weights, B* = ceil(2 R P / (2P + 3,145,728 - 4,128 R)), R the
    H100's fp16 ridge (295.34): P = 5,000 gives 2,953,433 / 1,936,551 = 1.53 -> 2; P = 8,000
    gives 4,725,493 / 1,942,551 = 2.43 -> 3, which a search stopped at largest = 2 does not reach."""
    r = gm.gpu("H100-SXM").running("fp16").ridge("hbm", "fp16")
    for p, found in ((5000.0, 2), (8000.0, 3)):
        assert math.ceil(2 * r * p / (2 * p + 3145728 - 4128 * r)) == found
        assert dc.critical_batch(tiny_mla(p), "H100-SXM", 64) == found
    assert dc.critical_batch(tiny_mla(8000.0), "H100-SXM", 64, largest=3) == 3
    assert dc.critical_batch(tiny_mla(8000.0), "H100-SXM", 64, largest=2) is None


def test_critical_batch_of_int4_weights_an_fp32_cache_on_fp8_units():
    """Llama-2-7B at context 0: P = 6.7e9 - 131,072,000 = 6,568,928,000 weights multiplied, 0.5 B
    each (int4); e = 4,096 x 0.5 = 2,048 B of table row and k = 32 x 2 x 32 x 128 x 4 = 1,048,576 B
    (fp32) a sequence; R = 1,978.9e12 / 3.35e12 = 590.72 (fp8). B* = ceil(R P 0.5 / (2P - R (2,048 +
    1,048,576))) = ceil(155.001) = 156."""
    r = 1978.9e12 / 3.35e12
    assert r == pytest.approx(gm.gpu("H100-SXM").running("fp8").ridge("hbm", "fp8"), rel=1e-12)
    p = 6.7e9 - 131072000
    assert math.ceil(r * p * 0.5 / (2 * p - r * (2048 + 1048576))) == 156
    assert dc.critical_batch("Llama-2-7B", "H100-SXM", 0, weight="int4", kv="fp32", math="fp8") == 156


def tiny(params, tied=False):
    """1 layer, 1 head of 1: a = 4 FLOP and k = 2 rows x 1 element (4 B in fp16) a token of
    context; width 1: e = one weight of embedding row read a sequence (none when tied)."""
    return dc.Model("m", 1, 1, 1, 1, params, tied=tied)


@pytest.mark.parametrize("params, tied, weight, kv, per_sequence", [
    (886.5, False, "fp16", "fp16", 4 + 2),    # k = 4 B, e = 2 B: 2P - 6R = 1,773 - 1,772.06 = 0.94
    (591.0, True, "fp16", "fp16", 4),         # tied: no table row; 2P - 4R = 1,182 - 1,181.37 = 0.63
    (665.0, False, "int4", "fp16", 4 + 0.5),  # e = 0.5 B: 2P - 4.5R = 1,330 - 1,329.04 = 0.96
    (591.0, False, "fp16", "fp8", 2 + 2),     # k = 2 B: 2P - 4R = 0.63
])
def test_a_model_that_clears_the_ridge_by_under_one_flop_still_leaves_hbm(params, tied, weight, kv, per_sequence):
    """At context 0 a sequence adds 2P FLOP against k + e bytes; R = 295.34 (H100, fp16). When 2P
    exceeds R (k + e) by under 1 FLOP (not by a byte's worth, R), the intensity still rises past the
    ridge: B* = R P s_w / (2P - R (k + e)) is under 2**20 (at most 295.34 x 886.5 x 2 / 0.94 =
    557,069), so a batch is found, where the smallest batch leaves HBM's bound."""
    r = gm.gpu("H100-SXM").running("fp16").ridge("hbm", "fp16")
    margin = 2 * params - r * per_sequence
    assert 0 < margin < 1 and r * params * dc.WEIGHT_BYTES[weight] / margin < 2**20
    m = tiny(params, tied)
    found = dc.critical_batch(m, "H100-SXM", 0, weight=weight, kv=kv)
    bounds = gm.predict(dc.step(m, [found - 1, found], 0, weight=weight, kv=kv), "H100-SXM").bound
    assert list(bounds) == ["hbm", "compute"]


def test_max_batch_in_an_fp32_cache():
    """Llama-2-7B on the H100: 80e9 - 13.4e9 = 66.6e9 B of room; fp32 rows: 32 x 2 x 32 x 128 x 4 =
    1,048,576 B a token: at context 0, 66.6e9 / 1,048,576 = 63,514.7 -> 63,514."""
    assert dc.max_batch("Llama-2-7B", "H100-SXM", 0, kv="fp32") == 63514


def test_prefix_cache_bytes_in_an_fp32_cache():
    """Llama-3-8B, fp32: 32 x 2 x 8 x 128 x 4 = 262,144 B a token; 4 sequences of 10 sharing 6:
    6 + 4 x (4 + 1) = 26 rows."""
    assert dc.prefix_cache_bytes("Llama-3-8B", 4, 10, 6, kv="fp32") == 26 * 262144


def test_the_step_names_its_model_and_formats():
    w = dc.step("Llama-3-8B", 3, 10, weight="int4", kv="int4", math="fp8")
    assert w.name == "decode step (Llama-3-8B, int4 weights, int4 cache)"
    assert w.note == "the weights a step reads once per step, each cache once per sequence"


def test_step_time_and_tokens_per_second_pass_every_format_on():
    """Llama-3-8B, int4 weights (0.5 B), an fp32 cache (262,144 B a token), fp8 units (1,978.9
    TFLOP/s) on the H100 (3.35 TB/s). Batch 1, context 1,024, HBM-bound: ((8e9 - 524,288,000 +
    4,096) x 0.5 + 1,025 x 262,144) / 3.35e12 s. Batch 4,096, context 0, compute-bound: 2 x (8e9 -
    524,288,000) x 4,096 / 1,978.9e12 s."""
    f = dict(weight="int4", kv="fp32", math="fp8")
    slow = ((8e9 - 524288000 + 4096) * 0.5 + 1025 * 262144) / 3.35e12
    assert float(dc.step_time("Llama-3-8B", "H100-SXM", 1, 1024, **f)) == pytest.approx(slow, rel=1e-12)
    assert float(dc.tokens_per_second("Llama-3-8B", "H100-SXM", 1, 1024, **f)) == pytest.approx(1 / slow, rel=1e-12)
    busy = 2 * (8e9 - 524288000) * 4096 / 1978.9e12
    assert float(dc.step_time("Llama-3-8B", "H100-SXM", 4096, 0, **f)) == pytest.approx(busy, rel=1e-12)
    assert float(dc.tokens_per_second("Llama-3-8B", "H100-SXM", 4096, 0, **f)) == pytest.approx(4096 / busy, rel=1e-12)


def test_split_kv_pages_hold_16_tokens_by_default():
    """17 tokens are 2 pages of 16 (not 1 of 17): 2 splits are allowed."""
    assert dc.split_kv("H100-SXM", 1, 8, 8, 64, 17, 2).splits == 2


def test_wave_splits_does_not_split_at_exactly_80_percent():
    """V100, 80 SMs: 0.8 x 80 = 64 blocks already fill 80 % of them: no split. 63 are under it:
    1 to 4 splits fill 63S / 80 / ceil = 0.79, 0.79, 0.79, 0.79; 5 fill 315 / 320 = 0.98, the
    first past 0.85 of the best."""
    assert dc.wave_splits("V100", 64, 1) == 1 and dc.wave_splits("V100", 32, 2) == 1
    assert dc.wave_splits("V100", 63, 1) == 5


def test_wave_splits_takes_a_count_at_exactly_85_percent_of_the_best():
    """V100, 4 blocks a split, 2,048 chunks (every count up to 20 cuts them differently): S = 20
    fills 80 / 80 = 1, the best; S = 17 fills 68 / 80 = 0.85 = 0.85 x 1 exactly (S = 16: 0.8)."""
    assert dc.wave_splits("V100", 4, 1, chunks=2048) == 17


def test_wave_splits_cuts_128_chunks_by_default():
    """H100, one block a split, 128 chunks: from S = 65 to 127 each cuts them into ceil(128 / S) = 2
    runs, as S = 64 does, so only 64 and 128 count past 43; S = 128 fills 128 / 132 = 0.970, the
    best, and 0.85 of it needs S >= 108.8: 128."""
    assert dc.wave_splits("H100-SXM", 1, 1) == 128


def test_wave_splits_never_takes_more_than_128_splits():
    """H100 with two slots an SM: 264 slots, one block a split, 2**20 chunks (every count cuts
    them differently). Up to 128 splits S fills S / 264: the best is 128 / 264, and 0.85 of it
    needs S >= 108.8: 109 (not 225, the 0.85 of 264 splits' full wave)."""
    assert dc.wave_splits("H100-SXM", 1, 1, chunks=2**20, slots_per_sm=2) == 109


def test_wave_splits_never_takes_more_splits_than_slots():
    """T4, 40 SMs, 3 blocks a split, 53 chunks: the counts that cut them differently are 1 to 9,
    11, 14, 18, 27 and 53; up to 40 (the slots) they fill 3S / 40 / ceil: at most 27 / 40 for 1 to
    9, 33 / 40 = 0.825 at 11, 42 / 80, 54 / 80, 81 / 120 at 14, 18, 27. The best is 11's, and 11
    is the first at 0.85 of it. (53 splits, past the slots, would fill 159 / 160.)"""
    assert dc.wave_splits("T4", 3, 1, chunks=53) == 11


def test_the_critical_batch_keeps_predicts_tie_rule_where_the_ridge_is_reached_only_in_the_limit():
    """A model whose flops per byte tend to the H100's ridge to within predict's TIE_RTOL: a
    batch large enough is called compute-bound by predict (a tie goes to the first part), so
    critical_batch must find it rather than return None (found by a mutation run)."""
    m = dc.Model("m", 1, 204, 1, 1, 80000.0, latent=30, rope=37)
    b = dc.critical_batch(m, "H100-SXM", 2**24)
    assert b is not None and gm.predict(dc.step(m, b, 2**24), "H100-SXM").bound == "compute"
    assert gm.predict(dc.step(m, b - 1, 2**24), "H100-SXM").bound == "hbm"
