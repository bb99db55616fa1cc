"""Every preset's headline figures, transcribed here a second time from the datasheets and
whitepapers the data files cite, so that a slip in a data file or in the loader's units (an
L2 1,024 times too small, a clock doubled, a tensor peak in the wrong unit) fails a test."""

import dataclasses
import pathlib

import numpy as np
import pytest

import gpumodel as gm

# name: SMs, boost clock (MHz), L2 (MiB), memory (GB), memory bandwidth (GB/s), FP32 lanes per
# SM, dense fp16 tensor peak with FP32 accumulate (TFLOP/s). The H100 PCIe's memory bandwidth
# is gpu-benches' highest measurement (gpu-stream), above the datasheet's rounded 2 TB/s.
FIGURES = {
    "V100": (80, 1530, 6, 16, 900, 64, 125),
    "T4": (40, 1590, 4, 16, 320, 64, 65),
    "A100-40GB": (108, 1410, 40, 40, 1555, 64, 312),
    "A100-80GB": (108, 1410, 40, 80, 2039, 64, 312),
    "RTX-A6000": (84, 1800, 6, 48, 768, 128, 154.8),
    "RTX-4090": (128, 2520, 72, 24, 1008, 128, 165.2),
    "L4": (58, 2040, 48, 24, 300, 128, 121),
    "H100-SXM": (132, 1980, 50, 80, 3350, 128, 989.4),
    "H200": (132, 1980, 50, 141, 4800, 128, 989.4),
    "H100-PCIe": (114, 1755, 50, 80, 2018, 128, 756.5),
    "B200": (148, 1980, 126, 180, 7700, 128, 2250),
}


def test_every_transcribed_preset_exists_and_every_preset_derives_its_figures():
    """A new GPU file needs no edit here (its figures are checked by the loader and below); the
    presets transcribed here are checked a second time against their sources."""
    assert set(FIGURES) <= set(gm.preset_names())
    for g in map(gm.gpu, gm.preset_names()):
        clock, sms = g.clock.value, g.sms.value
        assert g.peak_flops == pytest.approx(sms * g.fp32_lanes_per_sm.value * 2 * clock)
        assert g.bandwidth("smem") == pytest.approx(sms * 32 * 4 * clock)
        assert g.capacity("l2") < g.capacity("hbm") and g.bandwidth("hbm") < g.bandwidth("l2")


@pytest.mark.parametrize("name", FIGURES)
def test_preset_figures(name):
    sms, mhz, l2_mib, hbm_gb, hbm_gbps, lanes, fp16_tflops = FIGURES[name]
    g = gm.gpu(name)
    assert g.sms.value == sms and g.clock.value == pytest.approx(mhz * 1e6)
    assert g.capacity("l2") == l2_mib * 2**20 and g.capacity("hbm") == pytest.approx(hbm_gb * 1e9)
    assert g.bandwidth("hbm") == pytest.approx(hbm_gbps * 1e9)
    assert g.fp32_lanes_per_sm.value == lanes
    assert g.peak_flops == pytest.approx(sms * lanes * 2 * mhz * 1e6)
    assert g.peak("fp16") == pytest.approx(fp16_tflops * 1e12)
    assert g.bandwidth("smem") == pytest.approx(sms * 32 * 4 * mhz * 1e6)


# name: dense tensor peaks beyond fp16 (TFLOP/s, half the datasheets' figures with sparsity),
# and the clock the tensor peaks are rated at where it is below the boost clock (MHz)
LOW_PRECISION = {
    "H100-SXM": ({"fp8": 1978.9}, 1830),
    "H100-PCIe": ({"fp8": 1513}, 1620),
    "H200": ({"fp8": 1978.9}, 1830),
    "L4": ({"fp8": 242.5}, None),
    "B200": ({"fp8": 4500, "fp4": 9000}, 1855.8),
}


@pytest.mark.parametrize("name", FIGURES)
def test_low_precision_peaks_and_tensor_clocks(name):
    peaks, mhz = LOW_PRECISION.get(name, ({}, None))
    g = gm.gpu(name)
    assert {m: g.peak(m) / 1e12 for m in ("fp8", "fp4") if m in g.tensor} == pytest.approx(peaks)
    assert (g.tensor_clock and g.tensor_clock.value) == (mhz and pytest.approx(mhz * 1e6))


# Dense tensor FLOP per clock per SM is a power of two on every part (fp16 and bf16; fp8 twice
# that, fp4 four times): a peak that is not, at the clock the file rates it at, is rated at a
# clock the file does not name.
INPUT_WIDTH = {"tf32": 0.5, "fp16": 1, "bf16": 1, "fp8": 2, "fp4": 4}


@pytest.mark.parametrize("name", gm.preset_names())  # every GPU file: a rule, not a transcription
def test_tensor_peaks_at_the_clock_the_file_names(name):
    g = gm.gpu(name)
    clock = (g.tensor_clock or g.clock).value
    for math, fact in g.tensor.items():
        per_clock = fact.value / (g.sms.value * clock * INPUT_WIDTH[math])
        assert per_clock == pytest.approx(2 ** round(np.log2(per_clock)), rel=5e-3), (math, per_clock)


# name: the highest SM clock a source shows the part reaching, where above its boost (MHz)
MAX_CLOCK = {"RTX-A6000": 2100, "RTX-4090": 3105}


@pytest.mark.parametrize("name", gm.preset_names())
def test_bound_runs_everything_at_the_highest_clock(name):
    g = gm.gpu(name)
    top = (g.max_clock or g.clock).value  # the highest clock the file names
    if name in FIGURES:  # a transcribed preset: its highest clock checked a second time
        assert top == pytest.approx(MAX_CLOCK.get(name, FIGURES[name][1]) * 1e6)
    b = g.bound()
    assert b.clock.value == pytest.approx(top) and b.tensor_clock is None and b.running("fp16" if b.tensor else "fp32") is b
    assert b.peak_flops == pytest.approx(g.peak_flops * top / g.clock.value)
    assert b.bandwidth("l2") == pytest.approx(g.bandwidth("l2") * top / g.clock.value)
    assert b.bandwidth("hbm") == g.bandwidth("hbm")
    for math in g.tensor:  # rated at tensor_clock (or the boost), bounded at the top clock
        assert b.peak(math) == pytest.approx(g.peak(math) * top / (g.tensor_clock or g.clock).value)
        assert b.peak(math) >= g.peak(math)


@pytest.mark.parametrize("mhz", [1008, 1027, 1032])
def test_a_peak_held_at_its_rated_clock_is_the_rated_peak_exactly(mhz):
    """(2e15 x 1,027 MHz) / 1,027 MHz rounds to an ulp below 2e15: the bound must not."""
    g = gm.gpu("H100-SXM")
    rated = dataclasses.replace(g.clock, value=mhz * 1e6)
    peaks = {m: dataclasses.replace(f, value=v) for (m, f), v in zip(g.tensor.items(), (2e15, 989.4e12, 1979e12, 312e12))}
    part = dataclasses.replace(g, clock=rated, max_clock=None, tensor_clock=None, tensor=peaks)
    for math in part.tensor:
        assert part.bound().peak(math) == part.peak(math) == part.at_clock(mhz).peak(math)


def test_seed_gpus_bound_at_their_rated_clocks():
    for name in ("A100-40GB", "H100-SXM"):  # the seed figures: their boost is their highest clock
        assert gm.gpu(name).bound().peak_flops == gm.gpu(name).peak_flops


@pytest.mark.parametrize("name", gm.preset_names())
def test_one_clock_per_ratio(name):
    """Tensor math against the SFUs, shared memory and the L2: both sides at the clock the
    tensor peak is rated at (an L2 stated in B/s scales with the SM clock like the rest)."""
    g = gm.gpu(name)
    for math in g.tensor:
        r, clock = g.running(math), (g.tensor_clock or g.clock).value
        per_clock = g.peak(math) / clock
        assert g.peak(math) / r.special_rate == pytest.approx(per_clock / (g.sms.value * g.capability.special_functions_per_sm))
        assert g.ridge("l2", math) == pytest.approx(per_clock / g.l2_bytes_per_clock)
        assert g.ridge("smem", math) == pytest.approx(per_clock / (g.sms.value * 128))


def test_h100_tensor_over_sfu_is_256_at_one_clock():
    """Chapter 5's ratio: 4096 fp16 flops per clock per SM over 16 SFU results, at one clock."""
    assert gm.course.flashattention.tensor_over_sfu("H100-SXM") == pytest.approx(256, rel=1e-4)
    chapter = (pathlib.Path(__file__).resolve().parent.parent / "chapters/05_flashattention.md").read_text()
    assert 'glue("tensor_over_sfu", f"{gm.course.flashattention.tensor_over_sfu(' in chapter
    assert round(gm.gpu("B200").ridge("smem", "fp16")) == 64
