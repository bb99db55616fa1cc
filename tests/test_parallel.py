"""gm.parallel: a decode step over several GPUs, tensor-parallel (`step`) and expert-parallel
(`expert_step`), each against the one-GPU step and the collectives' counts derived by hand."""

import numpy as np
import pytest

import gpumodel as gm


def test_expert_parallelism_over_one_gpu_is_the_one_gpu_step():
    """With one GPU, an expert-parallel step reads what chapter 9's step reads and takes its time."""
    for batch in (1, 64):
        one = gm.parallel.expert_step("DeepSeek-V2", "H100-SXM", 1, batch, 4096, "NVLink 4")
        alone = gm.decode.step_time("DeepSeek-V2", "H100-SXM", batch, 4096, weight="fp8")
        assert one.time == pytest.approx(float(alone), rel=1e-12) and one.link_time == 0 and one.collectives == 0


def test_each_gpu_reads_its_share_of_the_touched_experts_and_all_of_the_rest():
    """8 GPUs at batch 64: the bytes one GPU reads, counted by hand from the model's shape."""
    m = gm.decode.MODELS["DeepSeek-V2"]
    n, batch, context = 8, 64, 4096
    s = gm.parallel.expert_step(m.name, "H100-SXM", n, batch, context, "NVLink 4", latency=False)
    mine = batch // n
    touched = m.experts * (1 - (1 - m.active / m.experts) ** batch)
    weights = (m.params - m.moe_layers * m.experts * m.expert_params) - (m.embedding - mine * m.width) \
        + m.moe_layers * m.expert_params * touched / n
    cache = mine * (context + 1) * gm.decode.kv_bytes_per_token(m)
    gpu = gm.gpu("H100-SXM")
    assert s.gpu_time == pytest.approx((weights * 1 + cache) / gpu.bandwidth("hbm"), rel=1e-9)
    # Two all-to-alls per MoE layer, each GPU sending (n - 1)/n of its tokens' routed copies.
    sent = (n - 1) / n * mine * m.active * m.width * 2
    assert s.collectives == 2 * m.moe_layers
    assert s.link_time == pytest.approx(2 * m.moe_layers * sent / gm.links.link("NVLink 4").bandwidth, rel=1e-12)
    assert s.held == pytest.approx((m.params - m.routed + m.routed / n) * 1 + cache, rel=1e-12)


def test_expert_parallelism_pays_as_the_batch_grows():
    """At batch 1 the copy of the dense part every GPU reads keeps 8 GPUs near one's time; at
    batch 64 the batch touches most experts and each GPU reads only its own."""
    def speedup(batch):
        one, eight = (gm.parallel.expert_step("DeepSeek-V2", "H100-SXM", n, batch, 4096, "NVLink 4") for n in (1, 8))
        return one.time / eight.time
    assert speedup(1) < 1.5 < 4 < speedup(64)


def test_expert_parallelism_refuses_a_dense_model_and_more_gpus_than_experts():
    with pytest.raises(ValueError, match="name must be a mixture of experts"):
        gm.parallel.expert_step("Llama-3-70B", "H100-SXM", 8, 1, 4096, "NVLink 4")
    with pytest.raises(ValueError, match="gpus must be at most 8"):
        gm.parallel.expert_step("DeepSeek-V2", "H100-SXM", 9, 1, 4096, "NVLink 4")
    with pytest.raises(ValueError, match="gpus must be at most 160"):
        gm.parallel.expert_step("DeepSeek-V2", "H100-SXM", 161, 1, 4096, "InfiniBand NDR")
