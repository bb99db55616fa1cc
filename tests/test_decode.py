"""gm.decode against hand-derived cases, its simulation byte for byte, its bad inputs."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

import gpumodel as gm
from gpumodel import decode as dc
from gpumodel import simulate as sim


def test_dense_7b_bytes_per_token():
    # Llama-2-7B: 32 layers, 32 heads of d = 128, fp16. A token of context adds a key and a value
    # per head per layer: 2 x 32 x 32 x 128 x 2 B = 524,288 B (512 KiB), chapter 6's formula.
    assert dc.kv_bytes_per_token("Llama-2-7B") == 524288 == 32 * 2 * 32 * 128 * 2
    # At a context of 4096 a step of one sequence reads the weights but the 32,000 x 4,096 input
    # table, of which it reads one row (4,096 weights), at 2 B each, plus 4096 cached tokens, and
    # writes one: (6.7e9 - 131,072,000 + 4,096) x 2 + 4097 x 524,288 B.
    w = dc.step("Llama-2-7B", 1, 4096)
    assert float(w.bytes["hbm"]) == pytest.approx((6.7e9 - 131072000 + 4096) * 2 + 4097 * 524288, rel=1e-12)
    # 2 flops per weight multiplied (the table is looked up, not multiplied), and 4 h d L =
    # 4 x 32 x 128 x 32 per token of context.
    assert float(w.flops) == pytest.approx(2 * (6.7e9 - 131072000) + 4096 * 4 * 32 * 128 * 32, rel=1e-12)


def test_gqa_with_8_groups_is_an_eighth():
    # Llama-3-8B: 32 query heads share 8 key-value heads: groups of 4. An 8-group GQA model's
    # cache is 8 / 32 of MHA's with the same heads; for 8 query heads per key-value head, 1/8.
    gqa = dc.Model("gqa", 32, 64, 8, 128, 1e9)
    mha = dc.Model("mha", 32, 64, 64, 128, 1e9)
    assert gqa.group == 8 and gqa.attention == "gqa" and mha.attention == "mha"
    assert dc.kv_bytes_per_token(gqa) * 8 == dc.kv_bytes_per_token(mha)
    assert dc.kv_bytes_per_token("Llama-3-8B") == 2 * 32 * 8 * 128 * 2 == 131072
    assert dc.kv_bytes_per_token("Llama-3-8B", "fp32") == 32 * 2 * 8 * 128 * 4  # 4 bytes an element


def test_mla_latent_size():
    # DeepSeek-V2 caches per layer the latent c (d_c = 512) and the RoPE key (d_h^R = 64): 576
    # fp16 values = 1152 B a layer, 60 layers = 69,120 B per token, shared by all 128 heads.
    m = dc.MODELS["DeepSeek-V2"]
    assert m.attention == "mla" and m.rows == 60 and m.row_elements == 576
    assert dc.kv_bytes_per_token(m) == 60 * 576 * 2 == 69120
    # Against MHA on the same 128 heads of 128: 2 x 128 x 128 = 32768 values a layer, 57x more.
    assert 2 * 128 * 128 / 576 == pytest.approx(56.9, abs=0.05)


def test_quantised_cache_counts_its_scales():
    # int4 with an fp16 scale and zero point per 32 elements: a 128-element row is 64 B of
    # values and 4 groups x 4 B = 80 B; fp8 is 128 B; nvfp4 64 B + 8 scales of 1 B = 72 B.
    assert dc.row_bytes(128, "int4") == 80
    assert dc.row_bytes(128, "fp8") == 128
    assert dc.row_bytes(128, "nvfp4") == 72
    assert dc.row_bytes(100, "int4") == 50 + 4 * 4  # a started group pays a whole scale
    assert dc.kv_bytes_per_token("Llama-3-8B", "int4") == 32 * 2 * 8 * 80


@pytest.mark.parametrize("gpu", ["H100-SXM", "B200"])
def test_tokens_per_second_at_batch_one_is_bytes_over_bandwidth(gpu):
    g = gm.gpu(gpu).running("fp16")
    nbytes = (8.0e9 - 128000 * 4096 + 4096) * 2 + 1025 * 131072  # Llama 3's 128,000-token table: one row read
    assert float(dc.tokens_per_second("Llama-3-8B", gpu, 1, 1024)) == pytest.approx(g.bandwidth("hbm") / nbytes,
                                                                                     rel=1e-12)


@pytest.mark.parametrize("name", list(dc.MODELS))
@pytest.mark.parametrize("context", [0, 512, 4096])
def test_critical_batch_is_where_the_model_leaves_hbm(name, context):
    batches = np.arange(1, 8193)  # DeepSeek-V2 reads nearly all its experts from a few hundred on: thousands
    p = gm.predict(dc.step(name, batches, context), "H100-SXM")
    leaves = np.flatnonzero(p.bound != "hbm")
    found = dc.critical_batch(name, "H100-SXM", context)
    assert found == (int(batches[leaves[0]]) if len(leaves) else None)


def test_critical_batch_closed_form_and_the_long_context_limit():
    g = gm.gpu("H100-SXM").running("fp16")
    ridge = g.ridge("hbm", "fp16")
    m = dc.MODELS["Llama-2-7B"]
    k = dc.kv_bytes_per_token(m)
    # context 0 still writes the new token's row and reads one embedding row (e = 4096 x 2 B) per
    # sequence: B* = ceil(R P s_w / (2P - R (e + k))), P the weights but the input table.
    p = 6.7e9 - 32000 * 4096
    assert dc.critical_batch(m, g, 0) == math.ceil(ridge * p * 2 / (2 * p - ridge * (4096 * 2 + k)))
    assert dc.critical_batch(m, g, 0) >= math.ceil(ridge * 2 / 2)  # chapter 6's, without activations
    # The MHA model's per-sequence intensity (2P + c a) / ((c + 1) k) falls below the ridge at
    # some context: from there no batch leaves HBM's bound.
    assert dc.critical_batch(m, g, 4096) is None
    # MLA's shared latent serves 128 heads as key and value: 2h(2 d_c + d_R) / ((d_c + d_R) 2) =
    # 128 x 2176 / 1152 = 241.8 FLOP per cached byte, near the ridge, so some batch leaves HBM.
    ds = dc.MODELS["DeepSeek-V2"]
    assert ds.attention_flops / dc.kv_bytes_per_token(ds) == pytest.approx(60 * 128 * 2 * (2 * 512 + 64) / (60 * 576 * 2))
    assert dc.critical_batch(ds, g, 4096) is not None


@pytest.mark.parametrize("width", [4096, 8192])
def test_fp16_gemm_critical_batch_agrees_with_the_model(width):
    batches = np.arange(1, 2049)
    p = gm.predict(gm.gemm(batches, width, width, block=(1, 1), dtype="fp16"), "H100-SXM")
    assert dc.gemm_critical_batch("H100-SXM", width) == int(batches[np.argmax(p.intensity["hbm"] >= p.ridge["hbm"])])
    assert np.allclose(dc.gemm_intensity(batches, width), p.intensity["hbm"])


def test_narrower_weights_lower_the_gemm_critical_batch():
    crit = {w: dc.gemm_critical_batch("H100-SXM", 8192, w) for w in ("fp16", "int8", "int4")}
    assert 250 < crit["fp16"] < 400 and crit["fp16"] > crit["int8"] > crit["int4"]
    assert dc.gemm_intensity(1, 8192, "int4") == pytest.approx(4 * dc.gemm_intensity(1, 8192, "fp16"), rel=0.01)
    with pytest.raises(ValueError, match="weight must be one of"):
        dc.gemm_intensity(1, 8192, "int2")
    with pytest.raises(ValueError, match="width must be large enough"):
        dc.gemm_critical_batch("H100-SXM", 64)


@pytest.mark.parametrize("width", [4096, 8192, 16384])
def test_fp8_math_halves_the_gemm_bytes_and_doubles_the_peak(width):
    batches = np.arange(1, 1025)
    assert np.allclose(dc.gemm_intensity(batches, width, "fp8", act_bytes=1), 2 * dc.gemm_intensity(batches, width))
    h100 = gm.gpu("H100-SXM")
    assert h100.ridge("hbm", "fp8") == pytest.approx(2 * h100.ridge("hbm", "fp16"), rel=1e-4)
    assert dc.gemm_critical_batch(h100, width, "fp8", math="fp8", act_bytes=1) == dc.gemm_critical_batch(h100, width)
    assert dc.gemm_critical_batch(h100, width, "fp8") < dc.gemm_critical_batch(h100, width)  # widened to fp16: fewer bytes only
    with pytest.raises(ValueError, match="A100-40GB has no fp8"):
        dc.gemm_critical_batch("A100-40GB", width, "fp8", math="fp8", act_bytes=1)


def test_max_batch_fits_in_hbm():
    g = gm.gpu("H100-SXM")
    b = dc.max_batch("Llama-2-7B", g, 4096)
    k = dc.kv_bytes_per_token("Llama-2-7B") * 4097
    assert 6.7e9 * 2 + b * k <= g.capacity("hbm") < 6.7e9 * 2 + (b + 1) * k


def test_paged_kv_sectors():
    # 1000 tokens of 256-byte rows in pages of 16: 63 pages, the last with 8 rows; each full
    # page is 4096 B = 128 sectors, the last 64; the same rows end to end: 8000 sectors.
    p = dc.paged_kv(1000, 16, 256)
    assert (p.pages, p.stride, p.sectors, p.contiguous) == (63, 4096, 62 * 128 + 64, 8000)
    assert p.table_bytes == 63 * 4 and p.allocated == 63 * 4096
    assert p.wasted == pytest.approx(1 - 256000 / (63 * 4096))
    # Rows of 72 B (nvfp4, d = 128) in pages of 1 token: each page is 3 sectors (96 B) for 72 B.
    q = dc.paged_kv(64, 1, 72)
    assert (q.sectors, q.contiguous) == (64 * 3, math.ceil(64 * 72 / 32))


@pytest.mark.parametrize("splits", [1, 2, 5])
@pytest.mark.parametrize("page_tokens,kv", [(16, "fp16"), (1, "nvfp4"), (5, "int4")])
def test_simulation_equals_the_formulas_byte_for_byte(splits, page_tokens, kv):
    rng = np.random.default_rng(3)
    heads, kv_heads, d, context = 8, 2, 64, 97
    q = rng.standard_normal((heads, d))
    k, v = rng.standard_normal((2, context, kv_heads, d))
    run = sim.paged_decode_attention(q, k, v, page_tokens, splits, kv)
    # The answer: softmax(q k^T / sqrt d) v, each query head with its group's key-value head.
    kk, vv = np.repeat(k, heads // kv_heads, axis=1), np.repeat(v, heads // kv_heads, axis=1)
    s = np.einsum("hd,nhd->hn", q, kk) / np.sqrt(d)
    p = np.exp(s - s.max(axis=1, keepdims=True))
    assert np.allclose(run.result, np.einsum("hn,nhd->hd", p / p.sum(axis=1, keepdims=True), vv), rtol=1e-12)
    f = dc.split_kv("H100-SXM", 1, heads, kv_heads, d, context, splits, page_tokens, kv)
    layout = dc.paged_kv(context, page_tokens, int(dc.row_bytes(d, kv)))
    assert run.parts["K read"] + run.parts["V read"] == f.kv_bytes == 2 * kv_heads * layout.read_bytes
    assert run.parts.get("partials written", 0) + run.parts.get("partials read", 0) == f.partial_bytes
    assert run.parts["page table read"] == kv_heads * layout.table_bytes
    assert f.blocks == kv_heads * splits


def test_split_kv_parallelism():
    # Batch 1 of Llama-3-8B: 8 key-value heads, 8 blocks on the H100's 132 SMs. 17 splits give
    # every SM a block, but 136 blocks run in 2 waves, 136 / 264 = 52 % busy.
    one = dc.split_kv("H100-SXM", 1, 32, 8, 128, 32768, 1)
    assert (one.blocks, one.waves) == (8, 1) and one.busy == pytest.approx(8 / 132)
    full = dc.split_kv("H100-SXM", 1, 32, 8, 128, 32768, 17)
    assert full.blocks == 136 and full.waves == 2 and full.busy == pytest.approx(136 / 264)
    # 17 splits x 32 query heads x (128 + 1) fp32 values, written and read: 2 x 17 x 32 x 129 x 4.
    assert full.partial_bytes == 2 * 17 * 32 * 129 * 4
    assert full.merge_share < 0.01


@pytest.mark.parametrize("call, name", [
    (lambda: dc.kv_bytes_per_token("GPT-5"), "^name must"),  # the parameter, not "model"
    (lambda: dc.kv_bytes_per_token("Llama-2-7B", "int3"), "kv"),
    (lambda: dc.step("Llama-2-7B", 0, 10), "batch"),
    (lambda: dc.step("Llama-2-7B", 1, -1), "context"),
    (lambda: dc.step("Llama-2-7B", 1, 10, weight="fp4"), "weight"),
    (lambda: dc.critical_batch("Llama-2-7B", "H100-SXM", 1.5), "context"),
    (lambda: dc.paged_kv(100, 0, 256), "page_tokens"),
    (lambda: dc.paged_kv(100, 16, 0), "row_bytes"),
    (lambda: dc.split_kv("H100-SXM", 1, 30, 8, 128, 1024, 1), "heads"),
    (lambda: dc.split_kv("H100-SXM", 1, 32, 8, 128, 64, 5), "splits"),
    (lambda: dc.split_kv("H100-XYZ", 1, 32, 8, 128, 64, 1), "gpu"),
    (lambda: dc.experts_touched(6, 8, 4), "active"),
    (lambda: dc.experts_touched(160, 6, 0), "batch"),
    (lambda: dc.weights_read("Llama-3-8B", 0), "batch"),
    (lambda: dc.prefix_cache_bytes("Llama-3-8B", 4, 10, 11), "prefix"),
    (lambda: dc.prefix_cache_bytes("Llama-3-8B", 4, 10, 2, shared=1), "shared"),
    (lambda: dc.wave_splits("H100-SXM", 1, 8, chunks=0), "chunks"),
    (lambda: dc.Model("moe", 4, 8, 8, 64, 1e9, moe_layers=4, experts=8), "experts, active"),
    (lambda: dc.Model("moe", 4, 8, 8, 64, 1e9, moe_layers=4, experts=8, active=9, expert_params=1e6), "active"),
    (lambda: dc.Model("dense", 4, 8, 8, 64, 1e6, vocab=10000), "params"),
    (lambda: sim.paged_decode_attention(np.ones((3, 4)), np.ones((5, 2, 4)), np.ones((5, 2, 4))), "q"),
])
def test_bad_inputs_are_refused_by_name(call, name):
    with pytest.raises(ValueError, match=name):
        call()


@pytest.mark.parametrize("gpu, batch, kv_heads, splits", [
    # 8 blocks a split on 132 SMs: S splits fill 8S / 132 of a wave up to S = 16; 33 splits are two
    # full waves (efficiency 1), so the rule takes the fewest S with 8S / 132 >= 0.85: S = 15
    # (120 / 132 = 0.909; 14 gives 112 / 132 = 0.848).
    ("H100-SXM", 1, 8, 15),
    # 32 blocks a split: 4 splits are 128 / 132 = 0.97 of one wave, 3 only 96 / 132 = 0.73.
    ("H100-SXM", 4, 8, 4),
    # 128 blocks unsplit already fill 0.8 x 132 = 105.6 SMs: no split.
    ("H100-SXM", 16, 8, 1),
    # FlashAttention's own example: 48 blocks on 108 SMs, 2 splits 96 / 108 = 0.89, 3 only 0.67.
    ("A100-40GB", 48, 1, 2),
])
def test_wave_splits_follows_flashattentions_rule(gpu, batch, kv_heads, splits):
    assert dc.wave_splits(gpu, batch, kv_heads, chunks=2048) == splits


def test_wave_splits_skips_a_count_that_cuts_no_finer():
    # 8 blocks a split, 132 SMs, but only 10 chunks of keys: at most 10 splits; of those, every
    # count cuts 10 chunks differently but 6 to 9 (ceil(10 / S) = 2 from S = 5 to 9), which are
    # skipped. The best eligible is S = 10 (80 / 132 = 0.606); 0.85 of it is 0.515, first reached
    # at S = 10 (S = 5 gives 40 / 132 = 0.303).
    assert dc.wave_splits("H100-SXM", 1, 8, chunks=10) == 10
    # Two blocks per SM double the slots: 8 blocks a split on 264 slots; 33 splits fill one wave.
    assert dc.wave_splits("H100-SXM", 1, 8, chunks=2048, slots_per_sm=2) == 29  # 232 / 264 = 0.879


def test_experts_touched_by_hand():
    # One token touches its k experts; two touch E(1 - (1 - k/E)^2): 160 x (1 - (154/160)^2) = 11.775.
    assert dc.experts_touched(160, 6, 1) == pytest.approx(6)
    assert dc.experts_touched(160, 6, 2) == pytest.approx(160 * (1 - (154 / 160) ** 2)) == pytest.approx(11.775)
    # Every token routed to every expert touches them all at once.
    assert dc.experts_touched(8, 8, 1) == 8
    # At 463 tokens an expert is missed with probability (154/160)^463, about 2.06e-8.
    assert 160 - dc.experts_touched(160, 6, 463) == pytest.approx(160 * (154 / 160) ** 463) and \
        (154 / 160) ** 463 == pytest.approx(2.06e-8, rel=0.01)


def test_deepseek_v2_reads_the_experts_its_batch_touches():
    m = dc.MODELS["DeepSeek-V2"]
    expert = 3 * 5120 * 1536  # gate, up and down matrices of width 5120 and intermediate 1536
    table = 100000 * 5120
    # One token: all but the input table (one row read) and the 154 routed experts per MoE layer
    # it is not sent to; the paper's 21 B activated.
    one = 236e9 - table + 5120 - 59 * 154 * expert
    assert float(dc.weights_read(m, 1)) == pytest.approx(one, rel=1e-12)
    assert m.active_params == pytest.approx(one - 5120) and m.active_params == pytest.approx(21e9, rel=0.01)
    # A large batch touches every expert: all 236 B but the table.
    assert float(dc.weights_read(m, 10**6)) == pytest.approx(236e9 - table + 10**6 * 5120)
    # 472 GB of fp16 weights fit on no single GPU here.
    assert all(dc.max_batch(m, g, 0) == 0 for g in ("H100-SXM", "H200", "B200"))
    # Counting the activated weights alone leaves HBM near 460 at 4096 tokens; with the experts a
    # batch touches it takes thousands.
    activated = dataclasses.replace(m, params=m.active_params + table, moe_layers=0, experts=0, active=0,
                                    expert_params=0.0)
    assert dc.critical_batch(activated, "H100-SXM", 4096) < 500 < 5 * 500 < dc.critical_batch(m, "H100-SXM", 4096)


def test_a_tied_table_is_read_once_as_the_lm_head():
    tied = dataclasses.replace(dc.MODELS["Llama-3-8B"], tied=True)
    assert float(dc.weights_read(tied, 1)) == float(dc.weights_read(tied, 64)) == 8.0e9
    assert tied.active_params == 8.0e9


def test_prefix_cache_bytes_by_hand():
    k = 131072  # Llama-3-8B, fp16
    # 4 sequences of 10 tokens sharing 6: the 6 once, then 4 x (4 own + 1 new) rows: 26 rows.
    assert dc.prefix_cache_bytes("Llama-3-8B", 4, 10, 6) == 26 * k
    # Without a kernel that reads it once, each sequence reads its 11 rows: 44, the step's cache.
    assert dc.prefix_cache_bytes("Llama-3-8B", 4, 10, 6, shared=False) == 44 * k == \
        dc.prefix_cache_bytes("Llama-3-8B", 4, 10, 0)
    step = dc.step("Llama-3-8B", 4, 10)
    assert float(step.bytes["hbm"]) == pytest.approx(2 * float(dc.weights_read("Llama-3-8B", 4)) + 44 * k)


def test_a_speculative_step_yields_the_expected_tokens_of_leviathan_et_al():
    """(1 - a^(k+1)) / (1 - a) tokens a step: 1 with nothing drafted, k + 1 when every draft is
    accepted, 1 + a for one draft; and the series summed term by term."""
    assert float(dc.expected_tokens(0, 0.7)) == pytest.approx(1.0)
    assert float(dc.expected_tokens(3, 1.0)) == 4.0
    assert float(dc.expected_tokens(1, 0.85)) == pytest.approx(1.85)
    a, k = 0.6, 5
    assert float(dc.expected_tokens(k, a)) == pytest.approx(sum(a ** i for i in range(k + 1)))
    with pytest.raises(ValueError, match="acceptance"):
        dc.expected_tokens(1, 1.5)


def test_checking_drafts_costs_a_dense_model_little_and_a_mixture_of_experts_its_extra_experts():
    """A step of k + 1 queries reads each sequence's cache once and the weights its tokens touch:
    a dense model's step barely grows at batch 1, while DeepSeek-V3's second token reads 8 more
    experts a layer; at a large batch both gain nearly the expected tokens."""
    one, two = (dc.step("DeepSeek-V3", 1, 4096, weight="fp8", queries=q) for q in (1, 2))
    m = dc.model("DeepSeek-V3")
    extra = m.moe_layers * m.expert_params * (float(dc.experts_touched(256, 8, 2)) - 8) + m.width  # + an embedding row
    cache = dc.kv_bytes_per_token(m)
    assert float(two.bytes["hbm"]) - float(one.bytes["hbm"]) == pytest.approx(extra + cache, rel=1e-9)
    dense = float(dc.speculative_speedup("Llama-3-70B", "H200", 1, 4096, 1, 0.85, weight="fp8"))
    moe = float(dc.speculative_speedup("DeepSeek-V3", "H200", 1, 4096, 1, 0.85, weight="fp8"))
    assert moe < 1.3 < 1.8 < dense <= 1.85
    assert 1.8 < float(dc.speculative_speedup("DeepSeek-V3", "H200", 256, 4096, 1, 0.85, weight="fp8")) <= 1.85


def test_the_lm_head_and_its_logits_by_hand():
    """Llama-3-8B's head is 128,000 x 4,096 weights, 2 bytes each in fp16 and 1 in fp8; its
    logits 128,000 FP32 values per sequence, written and read once; the head is part of what a
    step reads, so its share of a step of one sequence at 4,096 tokens is four times Llama-2-7B's
    (whose vocabulary is a quarter as large, at the same width)."""
    head = gm.decode.lm_head("Llama-3-8B", 3)
    assert head["weights"] == 128_000 * 4096 * 2 and head["logits"] == 3 * 128_000 * 4 * 2
    assert gm.decode.lm_head("Llama-3-8B", 1, weight="fp8")["weights"] == 128_000 * 4096
    assert list(gm.decode.lm_head("Llama-2-7B", np.array([1, 2]))["logits"]) == [256_000, 512_000]
    shares = [gm.decode.lm_head(n, 1)["weights"] / float(gm.decode.step(n, 1, 4096).bytes["hbm"])
              for n in ("Llama-2-7B", "Llama-3-8B")]
    assert 3.5 < shares[1] / shares[0] < 4.5


def test_quantised_weights_cost_their_scales_and_their_unpacking_by_hand():
    """int4 in groups of 32 with a 4-byte scale and zero point: 0.5 + 4/32 = 0.625 B a weight;
    Marlin's groups of 128 with a 2-byte scale 0.515625 B, 3.88 times fewer than fp16's 2 (its
    README's 3.87). A step reads the scales of every weight it reads, and the unpacking takes
    weights x instructions / (SMs x issue x 32 lanes x clock): hidden under the read when
    overlapped, added to it when not."""
    assert float(dc.weight_bytes(1000, "int4", 32, 4)) == 625.0
    assert float(dc.weight_bytes(128, "int4", 128, 2)) == 66.0 and float(dc.weight_bytes(7, "int8")) == 7.0
    assert list(dc.weight_bytes(64, "int4", np.array([32, 64]), 4)) == [40.0, 36.0]
    with pytest.raises(ValueError, match="group"):
        dc.weight_bytes(64, "int4", 0, 4)
    read = float(dc.weights_read("Llama-2-7B", 1))
    plain, scaled = (float(dc.step("Llama-2-7B", 1, 100, "int4", **k).bytes["hbm"]) for k in ({}, {"group": 32, "scale_bytes": 4}))
    assert scaled - plain == pytest.approx(read * 4 / 32)
    a100 = gm.gpu("A100-80GB")
    q = dc.quantised_step("Llama-2-7B", a100, 1, 100, "int4", 32, 4)
    assert q["scaled"] == pytest.approx(scaled / a100.bandwidth("hbm"))
    lanes = a100.sms.value * gm.expected.facts()["issue_per_sm"].value * 32 * a100.clock.value
    assert q["dequantise"] == pytest.approx(read * 3 / lanes)  # 3 instructions a weight (expect.toml)
    assert q["overlapped"] == q["scaled"] and q["in_turn"] == pytest.approx(q["scaled"] + q["dequantise"])
    assert dc.quantised_step("Llama-2-7B", a100, 1, 100, "bf16", 32, 0)["dequantise"] == 0.0


def test_the_int4_gemv_reads_its_packed_weights_and_scales_once():
    """The course's int4 GEMV, traced: right against NumPy, and its HBM bytes the packed
    weights, their scales and the vector and output once, as weight_bytes counts them."""
    t = gm.course.decode.trace_int4_gemv(rows=8, width=512)
    assert t.bytes["hbm"] == float(dc.weight_bytes(8 * 512, "int4", 32, 4)) + 4 * (512 + 8) == 8 * 512 * 0.625 + 2080


def test_a_groups_queries_fill_an_mmas_rows_by_hand():
    """16 rows an MMA: Llama-2-7B's one head per key-value head fills 1 of them, Llama-3-8B's group
    of 4 fills 4, two queries a head 8; Llama-3-70B's 8 with two queries all 16; MLA's 128 heads
    more than one MMA (at most all of its rows)."""
    fill = gm.decode.mma_fill
    assert (fill("Llama-2-7B"), fill("Llama-3-8B"), fill("Llama-3-8B", 2)) == (1 / 16, 4 / 16, 8 / 16)
    assert fill("Llama-3-70B", 2) == 1.0 and fill("DeepSeek-V3") == 1.0
    assert list(fill("Llama-3-8B", np.array([1, 3, 5]))) == [0.25, 0.75, 1.0]


def test_a_prefill_chunk_shares_the_steps_read_of_the_weights():
    """chunked_step with no chunk is step; a chunk of n tokens on a cached prefix of p adds its
    (p + n) cache rows and, while HBM binds, nothing else; its flops by hand: 2 per active weight
    per token, a decoding token's attention over its context, a chunk token's over the prefix and
    the chunk up to it; free_chunk is the last chunk the step takes along HBM-bound."""
    dc = gm.decode
    m, k = dc.model("Llama-3-8B"), dc.kv_bytes_per_token("Llama-3-8B")
    plain, mixed = dc.step(m, 8, 4096), dc.chunked_step(m, 8, 4096, 256, prefix=1024)
    assert float(dc.chunked_step(m, 8, 4096, 0).bytes["hbm"]) == float(plain.bytes["hbm"])
    extra = 2 * (float(dc.weights_read(m, 8 + 256)) - float(dc.weights_read(m, 8)))  # the chunk's embedding rows
    assert float(mixed.bytes["hbm"]) == pytest.approx(float(plain.bytes["hbm"]) + (1024 + 256) * k + extra)
    a = m.attention_flops
    assert mixed.flops == pytest.approx(2 * m.active_params * 264 + (8 * 4096 + 256 * (1024 + 257 / 2)) * a)
    n = dc.free_chunk(m, "H100-SXM", 32, 4096)
    bound = [gm.predict(dc.chunked_step(m, 32, 4096, c), "H100-SXM").bound for c in (n, n + 1)]
    assert bound == ["hbm", "compute"]
    with pytest.raises(ValueError, match="batch and chunk must not both be 0"):
        dc.chunked_step(m, 0, 4096, 0)
