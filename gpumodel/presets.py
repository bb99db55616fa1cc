"""Preset GPUs, each figure with its source. Introduced in chapter 1; the appendix
"GPU presets" prints them all.

Sources are keys of `references.bib` followed by where the figure sits in that document.
Tensor peaks are dense (no 2:4 sparsity) with FP32 accumulation. Clocks are boost clocks.
"""

from __future__ import annotations

import difflib

from .hardware import GPU, estimate, measured, spec

KB, MB, GB = 1024, 1024**2, 1e9
"""Capacities on chip are binary (a 40 MB L2 is 40 x 2^20 bytes); HBM capacities are
decimal GB, as datasheets state them."""
MHZ, TFLOPS, GBPS = 1e6, 1e12, 1e9

GUIDE = "nvidia_cuda_guide, Technical Specifications per Compute Capability"
A100_WP_L2 = "nvidia2020a100, Section 4.6.3 (L2 cache)"
ERNST = "ernst_gpubenches, gpu-l2-cache"
DEWING = "dewing_ai_kernels, latency/README"


def _register_file():
    """64 K 32-bit registers per SM on every architecture here (compute capability 7.0-10.0)."""
    return spec(256 * KB, "B", GUIDE)


def _per_clock(tb_per_s, clock_mhz):
    """A measured L2 bandwidth (TB/s) as bytes per clock at the preset's boost clock."""
    return round(tb_per_s * 1e12 / (clock_mhz * MHZ))


def _v100():
    src = "nvidia2017v100, Table 1"
    return GPU(
        name="V100",
        sms=spec(80, "SM", src),
        fp32_lanes_per_sm=spec(64, "lane", src),
        clock=spec(1530 * MHZ, "Hz", src, "V100 SXM2 boost clock"),
        l2_bytes_per_clock=spec(
            2048, "B/clk", A100_WP_L2,
            "quoted beside the A100's; Jia et al. (2018) sustain 2155 GB/s, 69% of it",
        ),
        hbm_bandwidth=spec(900 * GBPS, "B/s", src),
        register_file_per_sm=_register_file(),
        smem_per_sm=spec(96 * KB, "B", GUIDE),
        l2_capacity=spec(6 * MB, "B", src),
        hbm_capacity=spec(16 * GB, "B", src, "also sold with 32 GB"),
        tensor={"fp16": spec(125 * TFLOPS, "FLOP/s", src)},
        latency={
            "smem": measured(19, "cycle", "jia2018volta, Section 3", "pointer chase"),
            "l2": measured(193, "cycle", "jia2018volta, Section 3", "pointer chase, L2 hit"),
            "hbm": measured(375, "cycle", "jia2018volta, Section 3", "pointer chase, L2 miss, TLB hit"),
        },
    )


def _t4():
    src = "nvidia2018turing, Appendix A"
    return GPU(
        name="T4",
        sms=spec(40, "SM", src),
        fp32_lanes_per_sm=spec(64, "lane", src),
        clock=spec(1590 * MHZ, "Hz", "nvidia2019t4ds"),
        l2_bytes_per_clock=estimate(
            1024, "B/clk", "nvidia2020a100, Section 4.6.3",
            "neither published nor found measured; assumed half the V100's 2048 B/clk "
            "(the T4's L2 and memory interface are both narrower); treat T4 L2 times as rough",
        ),
        hbm_bandwidth=spec(320 * GBPS, "B/s", "nvidia2019t4ds", "GDDR6, not HBM"),
        register_file_per_sm=_register_file(),
        smem_per_sm=spec(64 * KB, "B", GUIDE),
        l2_capacity=spec(4 * MB, "B", src),
        hbm_capacity=spec(16 * GB, "B", "nvidia2019t4ds"),
        tensor={"fp16": spec(65 * TFLOPS, "FLOP/s", "nvidia2019t4ds", "mixed precision (FP16/FP32)")},
    )


def _a100(name, hbm_bandwidth, hbm_capacity, hbm_source):
    src = "nvidia2020a100, Table 3"
    luo = "luo2024hopper, Table IV"
    return GPU(
        name=name,
        sms=spec(108, "SM", src),
        fp32_lanes_per_sm=spec(64, "lane", src),
        clock=spec(1410 * MHZ, "Hz", src),
        l2_bytes_per_clock=spec(
            5120, "B/clk", A100_WP_L2,
            "a streaming microbenchmark sustains about 5.4 TB/s, 75% of it (ernst_gpubenches)",
        ),
        hbm_bandwidth=spec(hbm_bandwidth, "B/s", hbm_source),
        register_file_per_sm=_register_file(),
        smem_per_sm=spec(164 * KB, "B", "nvidia2020a100, Table 4"),
        l2_capacity=spec(40 * MB, "B", src),
        hbm_capacity=spec(hbm_capacity, "B", hbm_source),
        tensor={
            "fp16": spec(312 * TFLOPS, "FLOP/s", "nvidia2020a100, Table 1"),
            "bf16": spec(312 * TFLOPS, "FLOP/s", "nvidia2020a100, Table 1"),
        },
        latency={
            "smem": measured(29, "cycle", luo, "A100 PCIe, pointer chase"),
            "l2": measured(262, "cycle", luo, "A100 PCIe, pointer chase, L2 hit"),
            "hbm": measured(466, "cycle", luo, "A100 PCIe, pointer chase"),
        },
    )


def _ada(name, sms, clock_mhz, dram, l2, l2_per_clock, tensor_tflops, src, notes, latency=None):
    tensor_note, l2_note = notes
    return GPU(
        name=name,
        sms=spec(sms, "SM", src),
        fp32_lanes_per_sm=spec(128, "lane", "nvidia2022ada, Ada SM"),
        clock=spec(clock_mhz * MHZ, "Hz", src),
        l2_bytes_per_clock=estimate(l2_per_clock, "B/clk", ERNST, l2_note),
        hbm_bandwidth=spec(dram * GBPS, "B/s", src, "GDDR, not HBM"),
        register_file_per_sm=_register_file(),
        smem_per_sm=spec(100 * KB, "B", GUIDE),
        l2_capacity=spec(l2 * MB, "B", src),
        hbm_capacity=spec(24 * GB, "B", src),
        tensor={
            "fp16": spec(tensor_tflops * TFLOPS, "FLOP/s", src, tensor_note),
            "bf16": spec(tensor_tflops * TFLOPS, "FLOP/s", src, tensor_note),
        },
        latency=latency or {},
    )


L40_L2 = _per_clock(5.2, 2490)
"""The L40 (the RTX 4090's AD102 die, 142 SMs, 2490 MHz) sustains about 5.2 TB/s of L2."""


def _hopper(name, sms, clock_mhz, hbm_tbps, hbm_gb, tensor_tflops, src, l2, latency):
    return GPU(
        name=name,
        sms=spec(sms, "SM", src),
        fp32_lanes_per_sm=spec(128, "lane", "nvidia2022h100, Table 3"),
        clock=spec(clock_mhz * MHZ, "Hz", src, "boost clock; the datasheet's FP32 peak implies it"),
        l2_bytes_per_clock=l2,
        hbm_bandwidth=spec(hbm_tbps * 1e12, "B/s", src),
        register_file_per_sm=_register_file(),
        smem_per_sm=spec(228 * KB, "B", "nvidia2022h100, Table 3"),
        l2_capacity=spec(50 * MB, "B", "nvidia2022h100, Table 3"),
        hbm_capacity=spec(hbm_gb * GB, "B", src),
        tensor={
            "fp16": spec(tensor_tflops * TFLOPS, "FLOP/s", src, "dense: half the datasheet's figure with sparsity"),
            "bf16": spec(tensor_tflops * TFLOPS, "FLOP/s", src, "dense: half the datasheet's figure with sparsity"),
        },
        latency=latency,
    )


H200_L2 = _per_clock(9.9, 1980)
"""The H200 (GH100, 132 SMs) sustains about 9.9 TB/s of L2 for 5-44 MB footprints."""


def _h100_sxm():
    return _hopper(
        "H100-SXM", 132, 1980, 3.35, 80, 989.4, "nvidia2023h100ds, SXM column",
        estimate(H200_L2, "B/clk", ERNST, "not published or measured; the H200's measured figure "
                 "(same GH100 die, SMs and clock), 9.9 TB/s at 1980 MHz"),
        {"l2": measured(291, "cycle", DEWING, "pointer chase, clocks not locked"),
         "hbm": measured(700, "cycle", DEWING, "pointer chase, clocks not locked")},
    )


def _h100_pcie():
    return _hopper(
        "H100-PCIe", 114, 1755, 2.0, 80, 756.5, "nvidia2023h100ds, PCIe column",
        measured(_per_clock(6.9, 1755), "B/clk", ERNST,
                 "about 6.9 TB/s for 6-33 MB footprints, divided by the 1755 MHz boost clock"),
        {"smem": measured(29, "cycle", "luo2024hopper, Table IV", "H800 PCIe (same die), pointer chase"),
         "l2": measured(263, "cycle", "luo2024hopper, Table IV", "H800 PCIe, pointer chase, L2 hit"),
         "hbm": measured(479, "cycle", "luo2024hopper, Table IV", "H800 PCIe, pointer chase")},
    )


def _h200():
    return _hopper(
        "H200", 132, 1980, 4.8, 141, 989.4, "nvidia2024h200ds",
        measured(H200_L2, "B/clk", ERNST,
                 "about 9.9 TB/s for 5-44 MB footprints, divided by the 1980 MHz boost clock"),
        {},
    )


def _b200():
    src = "nvidia2024hgxb200"
    cc = "chipsandcheese2025b200"
    return GPU(
        name="B200",
        sms=measured(148, "SM", cc, "two dies of 74 SMs, as the device reports"),
        fp32_lanes_per_sm=spec(128, "lane", "nvidia_cuda_guide, Arithmetic Instructions (10.0)"),
        clock=estimate(
            1980 * MHZ, "Hz", src,
            "NVIDIA publishes no B200 clock; 75 TFLOP/s FP32 / (148 SMs x 128 lanes x 2) = 1.98 GHz",
        ),
        l2_bytes_per_clock=estimate(
            2 * H200_L2, "B/clk", ERNST,
            "not published or measured; two dies, each taken to match the H200's measured L2",
        ),
        hbm_bandwidth=spec(7.7e12, "B/s", src, "HGX B200 table; other revisions say 8 TB/s"),
        register_file_per_sm=_register_file(),
        smem_per_sm=spec(228 * KB, "B", GUIDE),
        l2_capacity=measured(126 * MB, "B", cc, "as the device reports"),
        hbm_capacity=spec(180 * GB, "B", src, "HGX B200 table; other revisions say 192 GB"),
        tensor={
            "fp16": spec(2250 * TFLOPS, "FLOP/s", src, "dense: half the figure with sparsity"),
            "bf16": spec(2250 * TFLOPS, "FLOP/s", src, "dense: half the figure with sparsity"),
        },
        latency={
            "l2": measured(295, "cycle", DEWING, "pointer chase, clocks not locked"),
            "hbm": measured(860, "cycle", DEWING, "pointer chase, clocks not locked"),
        },
    )


_BUILDERS = {
    "V100": _v100,
    "T4": _t4,
    "A100-40GB": lambda: _a100("A100-40GB", 1555 * GBPS, 40 * GB, "nvidia2020a100, Table 3"),
    "A100-80GB": lambda: _a100("A100-80GB", 2039 * GBPS, 80 * GB, "nvidia2021a100ds, SXM column"),
    "L4": lambda: _ada(
        "L4", 58, 2040, 300, 48, L40_L2 // 2, 121, "nvidia2023l4ds",
        ("dense: half the datasheet's 242 TFLOP/s with sparsity",
         f"not published or measured; half the L40's measured {L40_L2} B/clk (AD104 has half "
         "AD102's memory controllers and L2 slices)"),
    ),
    "RTX-4090": lambda: _ada(
        "RTX-4090", 128, 2520, 1008, 72, L40_L2, 165.2, "nvidia2022ada, Appendix A (RTX 4090)",
        ("dense, FP32 accumulate; 330.3 with FP16 accumulate, twice that again with sparsity",
         f"not published; the L40's measured {L40_L2} B/clk (same AD102 die, 5.2 TB/s at 2490 MHz); "
         "the 4090 enables 72 of the die's 96 MB of L2, so it may be lower"),
        {"l2": measured(296, "cycle", DEWING, "pointer chase, clocks not locked"),
         "hbm": measured(636, "cycle", DEWING, "pointer chase, clocks not locked")},
    ),
    "H100-SXM": _h100_sxm,
    "H100-PCIe": _h100_pcie,
    "H200": _h200,
    "B200": _b200,
}
_CACHE: dict = {}


def preset_names() -> list[str]:
    """The names `gpu()` accepts."""
    return list(_BUILDERS)


def _closest(name) -> str:
    """The preset whose name contains `name` (case aside), else the most similar one."""
    query = str(name).lower()
    lower = {n.lower(): n for n in _BUILDERS}
    containing = [n for low, n in lower.items() if query and query in low]
    if containing:
        return containing[0]
    return lower[difflib.get_close_matches(query, lower, n=1, cutoff=0.0)[0]]


def gpu(name: str) -> GPU:
    """The preset GPU called `name` (see `preset_names()`). Chapter 1."""
    if name not in _BUILDERS:
        raise ValueError(
            f"name must be one of {preset_names()}; got {name!r} (closest: {_closest(name)!r})"
        )
    if name not in _CACHE:
        _CACHE[name] = _BUILDERS[name]()
    return _CACHE[name]
