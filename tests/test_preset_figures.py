"""Every preset's headline figures, transcribed here a second time from the datasheets and
whitepapers the data files cite, so that a slip in a data file or in the loader's units (an
L2 1,024 times too small, a clock doubled, a tensor peak in the wrong unit) fails a test."""

import pytest

import gpumodel as gm

# name: SMs, boost clock (MHz), L2 (MiB), memory (GB), memory bandwidth (GB/s), FP32 lanes per
# SM, dense fp16 tensor peak with FP32 accumulate (TFLOP/s)
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
    "H100-PCIe": (114, 1755, 50, 80, 2000, 128, 756.5),
    "B200": (148, 1980, 126, 180, 7700, 128, 2250),
}


def test_every_preset_has_its_figures_here():
    assert set(FIGURES) == set(gm.preset_names())


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
