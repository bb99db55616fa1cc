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


US = 1e-6


def test_a_collective_is_priced_by_each_algorithm_as_nccls_tuner_prices_it_and_the_fastest_is_chosen():
    """NVLink 4, 8 GPUs (NCCL 2.30.7's tuner: ring LL 6.6 us + 0.6 us a step; NVLS 25 us at 0.85 of the link)."""
    small, large = 16384, 2**30
    ring = lambda m: 6.6 * US + 14 * 0.6 * US + 2 * 7 / 8 * m / 450e9
    nvls = lambda m: 25 * US + m / (0.85 * 450e9)
    assert gm.parallel.algorithms("NVLink 4") == ("ring", "in-switch")
    assert gm.parallel.collective("NVLink 4", "all-reduce", 8, small, "ring")[0] == pytest.approx(ring(small))
    assert gm.parallel.collective("NVLink 4", "all-reduce", 8, small, "in-switch")[0] == pytest.approx(nvls(small))
    assert gm.parallel.collective("NVLink 4", "all-reduce", 8, small) == (pytest.approx(ring(small)), "ring")
    assert gm.parallel.collective("NVLink 4", "all-reduce", 8, large) == (pytest.approx(nvls(large)), "in-switch")
    # without latency, a bound: each algorithm's bytes at the link's full rate
    assert gm.parallel.collective("NVLink 4", "all-reduce", 8, large, latency=False) == (pytest.approx(large / 450e9),
                                                                                      "in-switch")


def test_a_network_offers_the_tree_and_a_link_without_switches_that_add_refuses_the_in_switch_reduction():
    n, m = 64, 2**20
    tree = 6.8 * US + 2 * 6 * 5.0 * US + 2 * m / 50e9
    assert gm.parallel.algorithms("InfiniBand NDR") == ("ring", "tree", "hierarchical")
    assert gm.parallel.collective("InfiniBand NDR", "all-reduce", n, m, "tree")[0] == pytest.approx(tree)
    assert gm.parallel.algorithms("NVLink 3") == ("ring",) and gm.parallel.algorithms("NVL72", "all-gather") == ("ring",)
    with pytest.raises(ValueError, match=r"algorithm must be 'fastest' or one that all-reduce runs by over NVLink 3 \(ring\)"):
        gm.parallel.collective("NVLink 3", "all-reduce", 8, m, "in-switch")


def test_a_hierarchical_all_reduce_sends_a_gpus_share_over_the_network_and_reduces_within_the_node():
    """16 H100s in two nodes of 8 (NVLink 4 inside, 400 Gb/s InfiniBand a GPU): within the node
    each GPU sends 2 x 7/8 of the message at 450 GB/s, across it 2 x 1/2 of an eighth at 50 GB/s;
    the stages overlap, so the slower sets the bound; with latencies, 14 NVLink steps, 2 network
    steps and the ring's base. Only whole nodes run it."""
    m = 2.0**30
    within, across = gm.collectives.hierarchical_bytes(16, 8, m)
    assert (within, across) == (2 * 7 / 8 * m, m / 8)
    bound, ran = gm.parallel.collective("InfiniBand NDR", "all-reduce", 16, m, "hierarchical", latency=False)
    assert ran == "hierarchical" and bound == pytest.approx(max(within / 450e9, across / 50e9))
    priced, _ = gm.parallel.collective("InfiniBand NDR", "all-reduce", 16, m, "hierarchical")
    assert priced == pytest.approx(6.6 * US + 14 * 0.6 * US + 2 * 2.7 * US + bound)
    ring, _ = gm.parallel.collective("InfiniBand NDR", "all-reduce", 16, m, "ring", latency=False)
    assert ring == pytest.approx(2 * 15 / 16 * m / 50e9) and ring > 2 * bound  # 15 times the network bytes
    assert gm.parallel.collective("InfiniBand NDR", "all-reduce", 16, m)[1] == "hierarchical"
    assert gm.parallel.collective("InfiniBand NDR", "all-reduce", 12, m)[1] != "hierarchical"
    for gpus in (8, 12):
        with pytest.raises(ValueError, match=r"^gpus must fill two or more whole nodes of 8 GPUs"):
            gm.parallel.collective("InfiniBand NDR", "all-reduce", gpus, m, "hierarchical")
    with pytest.raises(ValueError, match=r"^gpus must be a multiple of per_node covering 2 nodes or more"):
        gm.collectives.hierarchical_bytes(12, 8, m)


def test_two_nodes_all_reduce_records_sit_below_their_hierarchical_bound_and_far_above_a_rings():
    """The A3 Mega rows (16 H100s, two nodes) reach 71 % and 80 % of the hierarchical bound;
    priced as a ring through all 16 GPUs they would beat it several times over."""
    rows = [c for c in gm.published.comparisons(chapter=10) if c.record.run.get("gpus") == 16]
    assert len(rows) == 2 and all(0.5 < c.fraction < 1 for c in rows)
    for c in rows:
        run = c.record.run
        ring, _ = gm.parallel.collective(run["link"], "all-reduce", 16, run["message"], "ring", latency=False)
        assert c.measured > 4 * float(gm.collectives.bus_bandwidth("all-reduce", 16, run["message"], ring))


@pytest.mark.parametrize("gpus", [3, 5, 72])
def test_tensor_parallelism_over_a_count_that_does_not_divide_the_heads_is_refused(gpus):
    """Llama-3-70B's 64 query heads split over 1, 2, 4, ... 64 GPUs; each GPU computes whole heads."""
    assert gm.parallel.head_splits("Llama-3-70B", 72) == (1, 2, 4, 8, 16, 32, 64)
    assert gm.parallel.head_splits("Llama-3-8B", 8) == (1, 2, 4, 8)
    with pytest.raises(ValueError, match=r"^gpus must divide Llama-3-70B's 64 query heads, so that each GPU computes "
                                         r"whole heads \(1, 2, 4, 8, 16, 32, 64 over NVL72\), got " + str(gpus)):
        gm.parallel.step("Llama-3-70B", "B200", gpus, 1, 4096, "NVL72")


def test_a_tensor_parallel_step_runs_its_all_reduces_by_the_fastest_algorithm():
    m = gm.decode.MODELS["Llama-3-70B"]
    for gpus, ran in ((8, "ring"), (64, "in-switch")):
        s = gm.parallel.step(m.name, "B200", gpus, 1, 4096, "NVL72")
        per_layer, algorithm = gm.parallel.collective("NVL72", "all-reduce", gpus, m.width * 2)
        logits, _ = gm.parallel.collective("NVL72", "all-gather", gpus, m.vocab * 2)
        assert s.algorithm == algorithm == ran and s.link_time == pytest.approx(2 * m.layers * per_layer + logits)
        ring = gm.parallel.step(m.name, "B200", gpus, 1, 4096, "NVL72", algorithm="ring")
        assert s.time <= ring.time and (s.time < ring.time) == (ran != "ring")
    assert gm.parallel.step(m.name, "B200", 1, 1, 4096, "NVL72").algorithm == ""


BROKEN_LINKS = {
    "half the in-switch pair": (lambda t: t.replace("in_switch_latency = { value = 25", "# gone = { value = 25", 1),
                                "must state both of ['in_switch_bandwidth', 'in_switch_latency'] or neither"),
    "an unknown join": (lambda t: t.replace('between = "gpus"', 'between = "racks"', 1), "between must be one of"),
    "a faster in-switch rate": (lambda t: t.replace("value = 382.5", "value = 500", 1),
                                "in_switch_bandwidth must be at most the link's bandwidth"),
}


@pytest.mark.parametrize("name", BROKEN_LINKS)
def test_a_malformed_links_file_is_refused_naming_the_entry(name, monkeypatch, tmp_path):
    edit, message = BROKEN_LINKS[name]
    (tmp_path / "links.toml").write_text(edit((gm.presets.DATA / "links.toml").read_text()))
    monkeypatch.setattr(gm.links, "DATA", tmp_path)
    gm.links.links.cache_clear()
    try:
        with pytest.raises(gm.presets.DataError, match=r"links.toml link \d+.*" + message.replace("[", r"\[").replace("(", r"\(")):
            gm.links.links()
    finally:
        monkeypatch.undo()
        gm.links.links.cache_clear()


@pytest.mark.parametrize("gpus, heads", [(2, 4), (4, 2), (8, 1), (16, 1), (64, 1)])
def test_a_gpu_holds_kv_heads_over_n_and_one_head_past_them(gpus, heads):
    """Llama-3-70B's 8 key-value heads: 2 GPUs hold 4 each, 4 hold 2, 8 and more one (past 8, a
    head is copied): the cache a GPU holds is that many eighths of the whole."""
    m, b, c = gm.decode.MODELS["Llama-3-70B"], 4, 4096
    cache = b * (c + 1) * gm.decode.kv_bytes_per_token(m)
    p = gm.parallel.step("Llama-3-70B", "B200", gpus, b, c, "NVL72")
    assert p.held == pytest.approx(m.params * 2 / gpus + cache * heads / m.kv_heads)


def test_a_step_pays_two_all_reduces_a_layer_and_one_gather_and_is_held_by_the_link_when_they_outweigh_it():
    """161 collectives for Llama-3-70B's 80 layers; at batch 1 on 64 GPUs their latencies
    outweigh each GPU's sixty-fourth of the weights, so the step's bound is the link."""
    m = gm.decode.MODELS["Llama-3-70B"]
    p = gm.parallel.step("Llama-3-70B", "B200", 64, 1, 1024, "NVL72")
    assert p.collectives == 2 * m.layers + 1 == 161
    per_layer, _ = gm.parallel.collective("NVL72", "all-reduce", 64, m.width * 2)
    logits, _ = gm.parallel.collective("NVL72", "all-gather", 64, m.vocab * 2, "ring")
    assert p.link_time == pytest.approx(2 * m.layers * per_layer + logits)
    assert p.link_time > p.gpu_time and p.bound == "link" and p.time == pytest.approx(p.gpu_time + p.link_time)
    one = gm.parallel.step("Llama-3-70B", "B200", 2, 64, 1024, "NVLink 5")
    assert one.bound != "link" and one.bound == one.gpu_bound


def test_an_expert_step_with_a_batch_the_gpus_do_not_divide_runs_the_busiest_gpus_share():
    """Batch 10 over 8 GPUs: the busiest GPU runs attention for ceil(10/8) = 2 sequences, as
    batch 16 would; it sends its 2 tokens' vectors to their experts."""
    uneven = gm.parallel.expert_step("DeepSeek-V2", "H100-SXM", 8, 10, 4096, "NVLink 4")
    even = gm.parallel.expert_step("DeepSeek-V2", "H100-SXM", 8, 16, 4096, "NVLink 4")
    m = gm.decode.MODELS["DeepSeek-V2"]
    assert uneven.link_time == pytest.approx(even.link_time)  # the same 2 tokens' dispatch a GPU
    dispatch = 2 * m.active * m.width * 2
    lat = gm.links.link("NVLink 4")
    assert uneven.link_time == pytest.approx(2 * m.moe_layers * float(gm.collectives.collective_time(
        "all-to-all", 8, dispatch, lat.bandwidth, lat.latency, lat.base)))
    assert uneven.time < even.time  # fewer tokens touch fewer experts' flops and reads


def test_a_prompts_kv_cache_moves_at_the_links_bandwidth_each_gpu_sending_its_share():
    """Llama-3-70B: 80 layers x 2 x 8 key-value heads x 128 x 2 bytes = 320 KiB a token; a 4,096-token
    prompt's 1.34 GB over one 50 GB/s InfiniBand link takes 26.8 ms, over 8 such links 3.4 ms."""
    one = gm.parallel.kv_transfer("Llama-3-70B", 4096, "InfiniBand NDR")
    assert one == pytest.approx(80 * 2 * 8 * 128 * 2 * 4096 / 50e9)
    assert gm.parallel.kv_transfer("Llama-3-70B", 4096, "InfiniBand NDR", gpus=8) == pytest.approx(one / 8)
    assert gm.parallel.kv_transfer("Llama-3-70B", 4096, "NVLink 4") == pytest.approx(one * 50 / 450)
    assert gm.parallel.kv_transfer("Llama-3-70B", 4096, "NVLink 4", kv="fp8") == pytest.approx(one * 50 / 450 / 2)
    for bad in ({"tokens": 0}, {"gpus": 0}, {"link": "Ethernet"}):
        with pytest.raises(ValueError, match=next(iter(bad))):
            gm.parallel.kv_transfer(**{"name": "Llama-3-70B", "tokens": 4096, "link": "NVLink 4", **bad})


def test_overlapping_two_micro_batches_takes_the_longer_of_their_computing_and_their_collectives():
    """Each half of the batch reads the weights again (the GPU's time nearly doubles at batch 8);
    the step takes max(both halves' GPU time, both halves' collectives), not their sum."""
    h100 = gm.gpu("H100-SXM")
    plain = gm.parallel.step("Llama-3-70B", h100, 8, 8, 4096, "NVLink 4")
    half = gm.parallel.step("Llama-3-70B", h100, 8, 4, 4096, "NVLink 4")
    over = gm.parallel.step("Llama-3-70B", h100, 8, 8, 4096, "NVLink 4", overlap=True)
    assert over.overlap and not plain.overlap
    assert over.gpu_time == pytest.approx(2 * half.gpu_time) and over.link_time == pytest.approx(2 * half.link_time)
    assert over.time == max(over.gpu_time, over.link_time) and plain.time == plain.gpu_time + plain.link_time
    assert over.collectives == 2 * plain.collectives
    odd = gm.parallel.step("Llama-3-70B", h100, 8, 5, 4096, "NVLink 4", overlap=True)
    parts = [gm.parallel.step("Llama-3-70B", h100, 8, b, 4096, "NVLink 4") for b in (3, 2)]
    assert odd.gpu_time == pytest.approx(sum(p.gpu_time for p in parts))
    with pytest.raises(ValueError, match="batch must be at least 2"):
        gm.parallel.step("Llama-3-70B", h100, 8, 1, 4096, "NVLink 4", overlap=True)


def test_a_pipelines_bubble_is_the_stages_but_one_over_the_micro_batches_and_stages_but_one():
    assert gm.parallel.pipeline_bubble(4, 1) == 0.75 and gm.parallel.pipeline_bubble(1, 7) == 0.0
    assert gm.parallel.pipeline_bubble(4, 8) == pytest.approx(3 / 11)
    np.testing.assert_allclose(gm.parallel.pipeline_bubble([2, 4, 8], 16), [1 / 17, 3 / 19, 7 / 23])
    for bad, name in (((0, 4), "stages"), ((4, 0), "microbatches"), ((2.5, 3), "stages")):
        with pytest.raises(ValueError, match=name):
            gm.parallel.pipeline_bubble(*bad)


def test_a_prefill_on_one_gpu_is_the_chunked_steps_bound_and_its_weights_are_read_once_for_the_batch():
    """One prompt on one GPU: `decode.chunked_step` with no decoding sequences, bounded as a
    workload; two prompts together cost twice the flops but read the weights once."""
    one = gm.parallel.prefill("Llama-3-8B", "H200", 1, 1, 512, "NVLink 4")
    work = gm.decode.chunked_step("Llama-3-8B", 0, 0, 512)
    assert one.time == pytest.approx(float(gm.predict(work, "H200").time)) and one.link_time == 0
    assert one.collectives == 0 and one.algorithm == ""
    short = gm.parallel.prefill("Llama-3-8B", "H200", 1, 1, 4, "NVLink 4")
    pair = gm.parallel.prefill("Llama-3-8B", "H200", 1, 2, 4, "NVLink 4")
    assert short.gpu_bound == "hbm" and pair.time < 1.01 * short.time  # few tokens: the weights' bytes, once
    assert one.gpu_bound == "compute"


def test_a_prefill_over_gpus_all_reduces_every_prompt_tokens_activations_twice_a_layer():
    m = gm.decode.model("Llama-3-70B")
    p = gm.parallel.prefill("Llama-3-70B", "H100-SXM", 2, 1, 500, "NVLink 4", weight="fp8", kv="fp8", math="fp8")
    per_layer, ran = gm.parallel.collective("NVLink 4", "all-reduce", 2, 500 * m.width * 2)
    logits, _ = gm.parallel.collective("NVLink 4", "all-gather", 2, m.vocab * 2, "ring")
    assert p.link_time == pytest.approx(2 * m.layers * per_layer + logits) and p.algorithm == ran
    assert p.collectives == 2 * m.layers + 1 and p.time == pytest.approx(p.gpu_time + p.link_time)
    bare = gm.parallel.prefill("Llama-3-70B", "H100-SXM", 2, 1, 500, "NVLink 4", weight="fp8", kv="fp8", math="fp8",
                               latency=False)
    assert bare.time < p.time


def test_a_request_is_its_prefill_then_a_step_per_later_token_at_the_mean_context():
    args = ("Llama-3-70B", "H100-SXM", 4, 8, 32)
    r = gm.parallel.request(*args, 128, "NVLink 4")
    first = gm.parallel.prefill(*args, "NVLink 4")
    mid = gm.parallel.step("Llama-3-70B", "H100-SXM", 4, 8, 32 + 64, "NVLink 4")
    assert r.steps == 127 and r.prefill.time == first.time and r.step.time == mid.time
    assert r.time == pytest.approx(first.time + 127 * mid.time) and r.bound == mid.bound == "hbm"
    assert r.bounds == "hbm"  # 256 prompt tokens at 4 x 3.35 TB/s: the weights' bytes bind the prefill too
    long = gm.parallel.request("Llama-3-70B", "H100-SXM", 4, 1, 5000, 128, "NVLink 4")
    assert long.prefill.bound == "compute" and long.bounds == "compute+hbm"
    alone = gm.parallel.request(*args, 1, "NVLink 4")
    assert alone.steps == 0 and alone.step is None and alone.time == first.time and alone.bound == first.bound
    assert alone.bounds == first.bound


@pytest.mark.parametrize("field, kwargs", [("prompt", {"prompt": 0}), ("output", {"output": 0}),
                                           ("gpus", {"gpus": 3})])
def test_a_request_refuses_an_empty_prompt_no_output_and_a_count_that_splits_heads(field, kwargs):
    args = {"name": "Llama-3-70B", "gpu": "H100-SXM", "gpus": 2, "batch": 1, "prompt": 16, "output": 4,
            "link": "NVLink 4", **kwargs}
    with pytest.raises(ValueError, match=field):
        gm.parallel.request(**args)


def test_a_served_batch_carries_its_neighbours_prompts_and_a_step_prefills_them_with_its_decode():
    """25 requests of 5,000-token prompts generating 500 tokens each: while one emits its 500, the
    other 24 are each replaced once, 24 x 5,000 / 500 = 240 prompt tokens a step; one request
    alone carries none. The chunk adds its flops and its activations to each all-reduce."""
    assert gm.decode.served_chunk(25, 5000, 500) == 240 and gm.decode.served_chunk(1, 5000, 500) == 0
    assert gm.decode.served_chunk(3, 10, 4) == 5  # 2 x 10 / 4, rounded down
    args = ("Llama-3-70B", "H100-SXM", 2, 25, 5000, "NVLink 4")
    plain, carried = gm.parallel.step(*args), gm.parallel.step(*args, chunk=240)
    m = gm.decode.model("Llama-3-70B")
    per_layer, _ = gm.parallel.collective("NVLink 4", "all-reduce", 2, (25 + 240) * m.width * 2)
    logits, _ = gm.parallel.collective("NVLink 4", "all-gather", 2, 25 * m.vocab * 2, "ring")
    assert carried.link_time == pytest.approx(2 * m.layers * per_layer + logits)
    assert carried.gpu_time > plain.gpu_time and carried.held == plain.held
    with pytest.raises(ValueError, match="chunk"):
        gm.parallel.step(*args, chunk=240, overlap=True)


def test_a_parallel_record_with_an_output_is_held_against_its_served_step():
    run = {"kind": "parallel", "model": "Llama-3-70B", "gpus": 2, "link": "NVLink 4", "batch": 25, "context": 5000,
           "output": 500, "weight": "fp8", "kv": "fp8", "math": "fp8"}
    got = gm.published.run_step(run, "H100-SXM", latency=False)
    want = gm.parallel.step("Llama-3-70B", "H100-SXM", 2, 25, 5000, "NVLink 4", "fp8", "fp8", "fp8", latency=False,
                            chunk=240)
    assert got == want
    with pytest.raises(ValueError, match="run"):
        gm.published.run_step({"kind": "decode"}, "H100-SXM")
