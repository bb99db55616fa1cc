"""gpumodel.parallel's numbers held to its docstrings' formulas, recomputed here from decode's
parts (issue 72: `make mutation` found each term of one GPU's share, of an expert-parallel step
and the limits of head_splits and kv_transfer could change unnoticed)."""

import dataclasses
import math

import pytest

from gpumodel import collectives, decode, parallel
from gpumodel.model import predict
from gpumodel.presets import gpu as preset
from gpumodel.workloads import Workload

MODEL_48 = dataclasses.replace(decode.model("Llama-3-70B"), name="48 heads, 8 kv", heads=48)
"""48 query heads over 8 key-value heads: 3 GPUs split the query heads, not the kv heads."""


@pytest.mark.parametrize("name, gpus", [("Llama-3-70B", 1), ("Llama-3-70B", 2), ("Llama-3-70B", 16), (MODEL_48, 3)])
def test_one_gpus_share_is_a_1_over_n_of_weights_and_flops_and_its_kv_heads_cache(name, gpus):
    m, batch, context, weight, kv, maths = decode.model(name), 4, 1000, "fp8", "fp8", "fp8"
    whole = decode.step(m, batch, context, weight, kv, maths)
    cache = batch * (context + 1) * decode.kv_bytes_per_token(m, kv)
    heads = math.ceil(m.kv_heads / gpus) if gpus <= m.kv_heads else 1  # 3 of 8 kv heads over 3 GPUs
    mine = (float(whole.bytes["hbm"]) - cache) / gpus + cache * heads / m.kv_heads
    share, held = parallel._share(m, gpus, batch, context, weight, kv, maths)
    assert share.name == f"{whole.name}, one of {gpus} GPUs" and share.math == "fp8"
    assert float(share.flops) == pytest.approx(float(whole.flops) / gpus, rel=1e-12)
    assert {k: float(v) for k, v in share.bytes.items()} == pytest.approx(
        {"registers": 0.0, "smem": 0.0, "l2": mine, "hbm": mine}, rel=1e-12)
    assert held == pytest.approx(m.params * parallel.WEIGHT_BYTES[weight] / gpus + cache * heads / m.kv_heads, rel=1e-12)


def test_a_step_on_one_gpu_has_no_link_time_and_its_gpus_bound():
    s = parallel.step("Llama-3-8B", "H100-SXM", 1, 8, 1024, "NVLink 4")
    alone = predict(parallel._share(decode.model("Llama-3-8B"), 1, 8, 1024, "fp16", "fp16", "fp16")[0], "H100-SXM")
    assert s.link_time == 0.0 and s.collectives == 0 and s.gpu_bound == str(alone.bound) == "hbm"
    assert s.time == s.gpu_time == float(alone.time)


@pytest.mark.parametrize("gpu, link, gpus", [("B200", "NVL72", 2), ("B200", "NVL72", 8), ("H100-SXM", "InfiniBand NDR", 256)])
@pytest.mark.parametrize("tied", [False, True])
def test_an_expert_parallel_step_is_its_docstrings_formula(gpu, link, gpus, tied):
    """2 GPUs, 8, and one GPU for each of DeepSeek-V3's 256 routed experts; its table tied or not."""
    m = dataclasses.replace(decode.model("DeepSeek-V3"), tied=tied)
    batch, context, weight, kv = 64, 4096, "fp8", "fp16"
    s = parallel.expert_step(m, gpu, gpus, batch, context, link, weight, kv)
    mine = math.ceil(batch / gpus)
    cache = mine * (context + 1) * decode.kv_bytes_per_token(m, kv)
    rest = m.params - m.routed
    table = 0.0 if tied else m.embedding - mine * m.width
    experts_read = m.moe_layers * m.expert_params * float(decode.experts_touched(m.experts, m.active, batch)) / gpus
    hbm = (rest - table + experts_read) * parallel.WEIGHT_BYTES[weight] + cache
    expert = m.moe_layers * m.active * m.expert_params
    flops = 2 * (m.active_params - expert) * mine + 2 * expert * batch / gpus + mine * context * m.attention_flops
    share = Workload("x", flops=flops, bytes={"registers": 0.0, "smem": 0.0, "l2": hbm, "hbm": hbm}, math="fp16")
    alone = predict(share, gpu)
    joined = parallel.links.link(link)
    dispatch = mine * m.active * m.width * parallel.ACTIVATION_BYTES
    link_time = 2 * m.moe_layers * float(collectives.collective_time("all-to-all", gpus, dispatch, joined.bandwidth,
                                                                     joined.latency, joined.base))
    held = (rest + m.routed / gpus) * parallel.WEIGHT_BYTES[weight] + cache
    assert s.gpus == gpus and s.collectives == 2 * m.moe_layers and s.gpu_bound == str(alone.bound)
    assert s.gpu_time == pytest.approx(float(alone.time), rel=1e-12)
    assert s.link_time == pytest.approx(link_time, rel=1e-12) and s.time == pytest.approx(s.gpu_time + link_time, rel=1e-12)
    assert s.held == pytest.approx(held, rel=1e-12) and s.fits == (held <= preset(gpu).capacity("hbm"))


def test_a_dense_model_is_refused_naming_the_mixtures_of_experts():
    with pytest.raises(ValueError, match=r"^name must be a mixture of experts \(one of \['DeepSeek-V2', 'DeepSeek-V3'\]\), "
                                         r"got 'Llama-3-70B', a dense model$"):
        parallel.expert_step("Llama-3-70B", "B200", 8, 64, 4096, "NVL72")


def test_head_splits_stop_at_most_and_at_a_million_gpus():
    assert parallel.head_splits("Llama-3-70B", 7) == (1, 2, 4)
    assert parallel.head_splits("Llama-3-70B", 8) == (1, 2, 4, 8)
    with pytest.raises(ValueError, match="^most must be at most"):
        parallel.head_splits("Llama-3-70B", collectives.MOST_GPUS + 1)


def test_kv_transfer_refuses_more_tokens_than_a_context_or_gpus_than_a_collective():
    assert parallel.kv_transfer("Llama-3-70B", decode.MOST_CONTEXT, "NVLink 4", collectives.MOST_GPUS) > 0
    with pytest.raises(ValueError, match="^tokens must be at most"):
        parallel.kv_transfer("Llama-3-70B", decode.MOST_CONTEXT + 1, "NVLink 4")
    with pytest.raises(ValueError, match="^gpus must be at most"):
        parallel.kv_transfer("Llama-3-70B", 1000, "NVLink 4", collectives.MOST_GPUS + 1)


@pytest.mark.parametrize("kwargs, message", [
    ({"gpus": collectives.MOST_GPUS + 1, "link": "InfiniBand NDR", "gpu": "H100-SXM"}, "^gpus must be at most 1,048,576"),
    ({"batch": decode.MOST_BATCH + 1}, "^batch must be at most"),
    ({"context": decode.MOST_CONTEXT + 1}, "^context must be at most")])
def test_a_steps_sizes_are_refused_past_their_limits_by_name(kwargs, message):
    args = {"name": "Llama-3-70B", "gpu": "B200", "gpus": 8, "batch": 8, "context": 1024, "link": "NVLink 5", **kwargs}
    with pytest.raises(ValueError, match=message):
        parallel.step(**args)


def test_a_step_counts_its_collectives_and_says_how_many_gpus_and_whether_it_fits():
    """No cache yet (context 0) is a step; 2 GPUs run 2 all-reduces a layer and the logits'
    all-gather; 2 sequences are enough to overlap two micro-batches (1 is not)."""
    m = decode.model("Llama-3-70B")
    one = parallel.step(m, "B200", 1, 8, 0, "NVLink 5")
    two = parallel.step(m, "B200", 2, 8, 0, "NVLink 5")
    assert (one.gpus, one.collectives, two.gpus, two.collectives) == (1, 0, 2, 2 * m.layers + 1)
    assert one.fits is True and parallel.step(m, "H100-SXM", 1, 8, 0, "NVLink 4").fits is False  # 141 GB on 80
    assert parallel.step(m, "B200", 2, 2, 0, "NVLink 5", overlap=True).collectives == 2 * (2 * m.layers + 1)
    with pytest.raises(ValueError, match="^batch must be at least 2 to overlap two micro-batches, got 1$"):
        parallel.step(m, "B200", 2, 1, 0, "NVLink 5", overlap=True)


def test_a_model_that_fills_the_gpus_memory_to_the_byte_fits():
    """held == capacity fits (<=): a dense model's weights on one GPU plus one token's cache, and
    a mixture of experts' over 8 GPUs (the rest whole, 1/8 of the routed experts) in fp8."""
    capacity = float(preset("B200").capacity("hbm"))
    dense = decode.model("Llama-3-8B")
    cache = decode.kv_bytes_per_token(dense, "fp16")
    dense = dataclasses.replace(dense, params=int((capacity - cache) / 2))
    s = parallel.step(dense, "B200", 1, 1, 0, "NVLink 5")
    assert s.held == capacity and s.fits is True
    moe = decode.model("DeepSeek-V3")
    cache = decode.kv_bytes_per_token(moe, "fp16")
    assert moe.routed % 8 == 0
    moe = dataclasses.replace(moe, params=int(capacity - cache + moe.routed - moe.routed // 8))
    e = parallel.expert_step(moe, "B200", 8, 1, 0, "NVLink 5")
    assert e.held == capacity and e.fits is True


def test_an_algorithm_the_link_does_not_run_is_refused_naming_those_it_does():
    with pytest.raises(ValueError, match=r"^algorithm must be 'fastest' or one that all-reduce runs by over NVLink 4 "
                                         r"\(ring, in-switch\), got 'tree'$"):
        parallel.collective("NVLink 4", "all-reduce", 8, 2.0**20, "tree")


def test_a_collectives_message_may_be_any_bytes_from_0_and_its_gpus_at_most_a_million():
    assert parallel.collective("NVLink 4", "all-reduce", 8, 0.5, latency=False)[0] == pytest.approx(2 * 7 / 8 * 0.5 / 450e9, rel=0.5)
    assert parallel.collective("NVLink 4", "all-reduce", 8, 0.0, latency=False)[0] == 0.0
    with pytest.raises(ValueError, match=r"^message must be a finite number >= 0, got -1.0$"):
        parallel.collective("NVLink 4", "all-reduce", 8, -1.0)
    with pytest.raises(ValueError, match="^gpus must be at most 1,048,576"):
        parallel.collective("InfiniBand NDR", "all-reduce", collectives.MOST_GPUS + 1, 2.0**20, "hierarchical")
