"""gm.decode against hand-derived cases, its simulation byte for byte, its bad inputs."""

from __future__ import annotations

import math

import numpy as np
import pytest

import gpumodel as gm
from gpumodel import decode as dc
from gpumodel import simulate as sim
from gpumodel import tensor_cores as tc


def test_dense_7b_bytes_per_token():
    # Llama-2-7B: 32 layers, 32 heads of d = 128, fp16. A token of context adds a key and a value
    # per head per layer: 2 x 32 x 32 x 128 x 2 B = 524,288 B (512 KiB), chapter 6's formula.
    assert dc.kv_bytes_per_token("Llama-2-7B") == 524288 == tc.kv_bytes_per_token(32, 32, 128)
    # At a context of 4096 a step of one sequence reads 6.7e9 x 2 B of weights plus 4096 cached
    # tokens and writes one: 13.4e9 + 4097 x 524,288 B.
    w = dc.step("Llama-2-7B", 1, 4096)
    assert float(w.bytes["hbm"]) == 6.7e9 * 2 + 4097 * 524288
    # 2 flops per weight, and 4 h d L = 4 x 32 x 128 x 32 per token of context.
    assert float(w.flops) == 2 * 6.7e9 + 4096 * 4 * 32 * 128 * 32


def test_gqa_with_8_groups_is_an_eighth():
    # Llama-3-8B: 32 query heads share 8 key-value heads: groups of 4. An 8-group GQA model's
    # cache is 8 / 32 of MHA's with the same heads; for 8 query heads per key-value head, 1/8.
    gqa = dc.Model("gqa", 32, 64, 8, 128, 1e9)
    mha = dc.Model("mha", 32, 64, 64, 128, 1e9)
    assert gqa.group == 8 and gqa.attention == "gqa" and mha.attention == "mha"
    assert dc.kv_bytes_per_token(gqa) * 8 == dc.kv_bytes_per_token(mha)
    assert dc.kv_bytes_per_token("Llama-3-8B") == 2 * 32 * 8 * 128 * 2 == 131072


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
    nbytes = 8.0e9 * 2 + 1025 * 131072
    assert float(dc.tokens_per_second("Llama-3-8B", gpu, 1, 1024)) == pytest.approx(g.bandwidth("hbm") / nbytes,
                                                                                     rel=1e-12)


@pytest.mark.parametrize("name", list(dc.MODELS))
@pytest.mark.parametrize("context", [0, 512, 4096])
def test_critical_batch_is_where_the_model_leaves_hbm(name, context):
    batches = np.arange(1, 4097)
    p = gm.predict(dc.step(name, batches, context), "H100-SXM")
    leaves = np.flatnonzero(p.bound != "hbm")
    found = dc.critical_batch(name, "H100-SXM", context)
    assert found == (int(batches[leaves[0]]) if len(leaves) else None)


def test_critical_batch_closed_form_and_the_long_context_limit():
    g = gm.gpu("H100-SXM").running("fp16")
    ridge = g.ridge("hbm", "fp16")
    m = dc.MODELS["Llama-2-7B"]
    k = dc.kv_bytes_per_token(m)
    # context 0 still writes the new token's row: B* = ceil(R P s_w / (2P - R k)).
    assert dc.critical_batch(m, g, 0) == math.ceil(ridge * m.params * 2 / (2 * m.params - ridge * k))
    assert dc.critical_batch(m, g, 0) >= math.ceil(ridge * 2 / 2)  # chapter 6's, without activations
    # The MHA model's per-sequence intensity (2P + c a) / ((c + 1) k) falls below the ridge at
    # some context: from there no batch leaves HBM's bound.
    assert dc.critical_batch(m, g, 4096) is None
    # MLA's shared latent serves 128 heads: its attention is ~2h FLOP per cached byte, near the ridge.
    assert dc.critical_batch("DeepSeek-V2", g, 4096) is not None


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
    # Batch 1 of Llama-3-8B: 8 key-value heads, 8 blocks on the H100's 132 SMs; 17 splits fill it.
    one = dc.split_kv("H100-SXM", 1, 32, 8, 128, 32768, 1)
    assert (one.blocks, one.waves) == (8, 1) and one.busy == pytest.approx(8 / 132)
    assert dc.splits_to_fill("H100-SXM", 1, 8) == 17
    full = dc.split_kv("H100-SXM", 1, 32, 8, 128, 32768, 17)
    assert full.blocks == 136 and full.waves == 2
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
    (lambda: sim.paged_decode_attention(np.ones((3, 4)), np.ones((5, 2, 4)), np.ones((5, 2, 4))), "q"),
])
def test_bad_inputs_are_refused_by_name(call, name):
    with pytest.raises(ValueError, match=name):
        call()
