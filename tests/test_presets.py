"""Every preset loads, every figure has a source and a kind, every derived figure follows
its formula."""

import re

import pytest

import gpumodel as gm
from gpumodel.hardware import BANK_BYTES, KINDS, SMEM_BANKS

REQUIRED = ["V100", "T4", "A100-40GB", "A100-80GB", "L4", "RTX-4090", "H100-SXM", "H100-PCIe", "H200", "B200"]


def test_the_required_presets_exist():
    assert set(REQUIRED) <= set(gm.preset_names())


@pytest.mark.parametrize("name", gm.preset_names())
def test_every_figure_is_sourced(name):
    g = gm.gpu(name)
    assert g.name == name
    for label, fig in g.facts().items():
        assert fig.kind in KINDS, label
        assert fig.source.strip(), label
        assert fig.value > 0, label
        if fig.kind == "estimate":
            assert fig.note, f"{name}.{label} is an estimate without a note saying how"
    assert "fp16" in g.tensor


@pytest.mark.parametrize("name", gm.preset_names())
def test_derived_figures_follow_their_formulas(name):
    g = gm.gpu(name)
    sms, clock = g.sms.value, g.clock.value
    peak = sms * g.fp32_lanes_per_sm.value * 2 * clock
    assert g.peak_flops == peak
    assert g.peak("fp32") == peak
    assert g.bandwidth("registers") == 6 * peak
    assert g.bandwidth("smem") == sms * SMEM_BANKS * BANK_BYTES * clock
    assert g.bandwidth("l2") == g.l2_bytes_per_clock * clock
    assert g.bandwidth("hbm") == g.hbm_bandwidth.value
    assert g.capacity("registers") == g.register_file_per_sm.value * sms
    assert g.capacity("smem") == g.smem_per_sm.value * sms
    # The hierarchy: each level faster and smaller than the one below it.
    bw = [g.bandwidth(lv) for lv in gm.LEVELS]
    assert bw == sorted(bw, reverse=True)
    assert g.capacity("l2") < g.capacity("hbm")


def test_only_a100_and_v100_l2_rates_are_published():
    for name in gm.preset_names():
        kind = gm.gpu(name).l2_bandwidth.kind
        assert (kind == "spec") == name.startswith(("A100", "V100")), name


@pytest.mark.parametrize(
    "name, fp32_tflops",
    [("V100", 15.7), ("T4", 8.1), ("A100-40GB", 19.5), ("L4", 30.3), ("RTX-4090", 82.6),
     ("H100-SXM", 67), ("H100-PCIe", 51), ("H200", 67)],
)
def test_derived_fp32_peak_matches_the_datasheet(name, fp32_tflops):
    assert gm.gpu(name).peak_flops / 1e12 == pytest.approx(fp32_tflops, rel=0.01)


def test_presets_are_cached_and_frozen():
    g = gm.gpu("A100-40GB")
    assert gm.gpu("A100-40GB") is g
    with pytest.raises(AttributeError):
        g.name = "other"


def test_tensor_math_runs_at_the_clock_its_peak_is_rated_at():
    h100, a100 = gm.gpu("H100-SXM"), gm.gpu("A100-40GB")
    # 4096 dense fp16 FLOP per clock per SM against 32 banks x 4 B: 32 FLOP/B whatever the clock.
    assert h100.ridge("smem", "fp16") == pytest.approx(4096 / (SMEM_BANKS * BANK_BYTES), rel=1e-3)
    assert h100.running("fp16").clock.value == 1.83e9 and h100.running("fp32") is h100
    assert h100.ridge("smem") == h100.peak_flops / h100.bandwidth("smem")  # FP32 at the boost clock
    assert h100.ridge("hbm", "fp16") == h100.peak("fp16") / h100.bandwidth("hbm")  # HBM has its own clock
    assert a100.running("fp16") is a100  # rated at its boost clock
    w = gm.gemm(8192, 8192, 8192, block=(128, 128), thread=(64, 64), dtype="fp16")
    p = gm.predict(w, h100)
    assert p.level_times["smem"] == pytest.approx(float(w.bytes["smem"]) / (132 * 128 * 1.83e9))
    assert p.ridge["smem"] == h100.ridge("smem", "fp16")
    with pytest.raises(ValueError, match="A100-40GB has no fp8 tensor-core peak"):
        a100.ridge("hbm", "fp8")


@pytest.mark.parametrize("args, message", [
    ((1.0, "B", "guess", "nvidia2020a100"), r"^kind must be one of \('spec', 'measured', 'estimate', 'derived'\), got 'guess'$"),
    ((1.0, "B", "spec", ""), "^source must name where the fact comes from$"),
    ((0.0, "B", "spec", "nvidia2020a100"), "^value must be positive, got 0.0$"),
    ((-2.0, "B", "spec", "nvidia2020a100"), "^value must be positive, got -2.0$"),
])
def test_a_fact_is_sourced_and_positive(args, message):
    with pytest.raises(ValueError, match=message):
        gm.hardware.Fact(*args)


def test_a_fact_below_one_is_still_a_fact():
    assert gm.hardware.Fact(0.5, "s", "measured", "nvidia2020a100").value == 0.5


def test_per_capability_facts_say_where_the_guide_states_them():
    a100 = gm.gpu("A100-40GB")
    lanes, regs = a100.fp32_lanes_per_sm, a100.register_file_per_sm
    assert (lanes.value, lanes.unit, lanes.kind, lanes.source) == (64.0, "lane", "spec", "nvidia_cuda_guide")
    assert lanes.where == "Arithmetic Instructions (compute capability 8.0)"
    assert (regs.value, regs.unit) == (4 * 65536, "B")
    assert regs.where == "Technical Specifications per Compute Capability (compute capability 8.0)"


def test_the_default_peak_is_fp32():
    a100 = gm.gpu("A100-40GB")
    assert a100.peak() == a100.peak_flops == 108 * 64 * 2 * 1.41e9


def test_missing_tensor_peaks_and_latencies_say_what_there_is():
    import dataclasses

    v100 = gm.gpu("V100")
    with pytest.raises(ValueError, match=r"^V100 has no bf16 tensor-core peak; it has \['fp16'\]$"):
        v100.peak("bf16")
    bare = dataclasses.replace(v100, tensor={}, latency={})
    with pytest.raises(ValueError, match="^V100 has no fp16 tensor-core peak; it has none$"):
        bare.peak("fp16")
    with pytest.raises(ValueError, match=r"^level must be one of \[\]: the V100 has no measured 'hbm' latency$"):
        bare.in_flight("hbm")


def test_every_reference_has_a_label_of_its_own_in_author_year_form():
    """Labels are "Surname Year", "A and B Year" or "A et al. Year" (BibTeX's "and others"
    included), an organisation's name whole; a letter after the year tells apart one author's
    sources of one year, in the order of their titles."""
    labels = {key: label for key, (label, _, _) in gm.presets.bibliography().items()}
    assert len(set(labels.values())) == len(labels) > 50
    assert [v for v in labels.values() if "others" in v or "(" in v or not re.search(r" \d{4}[a-z]?$", v)] == []
    nvidia = sorted((t.lower(), labels[k]) for k, (label, t, _) in gm.presets.bibliography().items()
                    if label.startswith("NVIDIA Corporation 2025"))
    assert [label[-1] for _, label in nvidia] == list("abcdefghijklmnopqrstuvwxyz")[:len(nvidia)] and len(nvidia) > 2
