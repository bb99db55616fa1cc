"""Tables of presets for the appendix "GPU presets" (and chapter 1's side-by-side view).

Each returns MyST Markdown: citations are `{cite:p}` roles into `references.bib`.
"""

from __future__ import annotations

from .book import markdown_table
from .hardware import GPU, LEVELS, Figure
from .presets import gpu, preset_names
from .units import fmt_bandwidth, fmt_bound, fmt_bytes, fmt_capacity, fmt_flops, fmt_number

LEVEL_LABELS = {"registers": "registers", "smem": "shared memory", "l2": "L2", "hbm": "HBM"}
FIGURE_LABELS = {
    "sms": "SMs",
    "fp32_lanes_per_sm": "FP32 lanes per SM",
    "clock": "boost clock",
    "l2_bytes_per_clock": "L2 bytes per clock",
    "hbm_bandwidth": "HBM bandwidth",
    "register_file_per_sm": "register file per SM",
    "smem_per_sm": "shared memory per SM",
    "l2_capacity": "L2 capacity",
    "hbm_capacity": "HBM capacity",
    "tensor_fp16": "fp16 tensor peak",
    "tensor_bf16": "bf16 tensor peak",
    "latency_smem": "shared-memory latency",
    "latency_l2": "L2 hit latency",
    "latency_hbm": "HBM latency",
}


def fmt_figure(fig: Figure) -> str:
    """A figure's value in the unit a reader expects (MHz, TB/s, KiB, cycles)."""
    v = fig.value
    if fig.unit == "Hz":
        return f"{v / 1e6:g} MHz"
    if fig.unit == "B/s":
        return fmt_bandwidth(v)
    if fig.unit == "FLOP/s":
        return fmt_flops(v)
    if fig.unit == "B":
        return fmt_capacity(v)
    return f"{v:g} {fig.unit}{'s' if fig.unit in ('SM', 'lane', 'cycle') and v != 1 else ''}"


def cite(source: str) -> str:
    """A figure's source as a citation role followed by where in the document it sits."""
    key, _, where = source.partition(",")
    return f"{{cite:p}}`{key.strip()}`" + (f", {where.strip()}" if where.strip() else "")


LEVEL_ROLES = {
    "registers": ("one thread", "the values a thread is computing with; the compiler decides"),
    "smem": ("the threads of one block, on one SM", "tiles the program copies in on purpose"),
    "l2": ("every SM", "recently used lines of HBM; the hardware decides"),
    "hbm": ("every SM, and the host through copies", "everything: inputs, outputs, weights"),
}


def level_table(name: str) -> str:
    """Chapter 1's table of one preset: each level's sharers, contents, capacity, bandwidth
    and measured latency (with its source)."""
    g = gpu(name)
    rows = []
    for lv in LEVELS:
        lat = g.latency.get(lv)
        if lv == "registers":
            latency = "none extra: operands are read as part of the instruction"
        else:
            latency = f"{lat.value:g} cycles ({cite(lat.source)})" if lat else "not measured"
        who, what = LEVEL_ROLES[lv]
        rows.append([LEVEL_LABELS[lv], who, what, fmt_capacity(g.capacity(lv)), fmt_bandwidth(g.bandwidth(lv)), latency])
    return markdown_table(["level", "shared by", "holds", "capacity (whole GPU)", "bandwidth", "latency"], rows)


def preset_table(names=None) -> str:
    """One row per preset: SMs, clock, peaks and the four derived bandwidths."""
    names = preset_names() if names is None else names
    header = ["GPU", "SMs", "clock", "FP32 peak", "fp16 tensor"] + [LEVEL_LABELS[lv] for lv in LEVELS]
    rows = []
    for name in names:
        g: GPU = gpu(name)
        rows.append(
            [name, f"{g.sms.value:g}", fmt_figure(g.clock), fmt_flops(g.peak_flops), fmt_flops(g.peak("fp16"))]
            + [fmt_bandwidth(g.bandwidth(lv)) for lv in LEVELS]
        )
    return markdown_table(header, rows)


def capacity_table(names=None) -> str:
    """One row per preset: the capacity of each level, whole GPU."""
    names = preset_names() if names is None else names
    header = ["GPU"] + [LEVEL_LABELS[lv] for lv in LEVELS]
    rows = [[n] + [fmt_capacity(gpu(n).capacity(lv)) for lv in LEVELS] for n in names]
    return markdown_table(header, rows)


def sources_table(name: str) -> str:
    """Every sourced figure of one preset: value, kind, source and note."""
    g = gpu(name)
    rows = [
        [FIGURE_LABELS[label], fmt_figure(fig), fig.kind, cite(fig.source), fig.note]
        for label, fig in g.figures().items()
    ]
    return markdown_table(["figure", "value", "kind", "source", "note"], rows)


def balance_table(names=None) -> str:
    """Chapter 2: each preset's machine balance (its ridge point against HBM) for FP32 and
    fp16 tensor math, in FLOP per byte."""
    names = preset_names() if names is None else names
    rows = []
    for n in names:
        g = gpu(n)
        hbm = g.bandwidth("hbm")
        rows.append([n, fmt_flops(g.peak_flops), fmt_flops(g.peak("fp16")), fmt_bandwidth(hbm),
                     fmt_number(g.peak_flops / hbm), fmt_number(g.peak("fp16") / hbm)])
    return markdown_table(["GPU", "FP32 peak", "fp16 tensor peak", "HBM", "FP32 balance (FLOP/B)",
                           "fp16 tensor balance (FLOP/B)"], rows)


def compiler_table(reports, presets=("A100-40GB", "H100-SXM")) -> str:
    """Chapter 3: what ptxas says of each kernel (registers, spills, static shared memory),
    with the occupancy it allows on each preset (resident warps per SM and the limiter)."""
    from .launches import KERNEL_THREADS
    from .occupancy import CAPABILITY, occupancy

    arch_of = {f"sm_{major}{minor}": name for name in presets for major, minor in [CAPABILITY[name]]}
    rows = []
    for r in reports:
        preset = arch_of.get(r.arch)
        occ = ""
        if preset and r.kernel in KERNEL_THREADS:
            o = occupancy(preset, KERNEL_THREADS[r.kernel], r.registers, r.smem)
            occ = f"{o.warps:g} warps ({o.limiter})"
        rows.append([r.kernel, r.arch, str(r.registers), f"{r.spill_stores} / {r.spill_loads}",
                     fmt_capacity(r.smem) if r.smem else "0", occ])
    header = ["kernel", "target", "registers", "spill stores / loads (B)", "shared memory",
              f"resident per SM ({', '.join(presets)})"]
    return markdown_table(header, rows)


def tile_table(result: dict, rows: int = 8) -> str:
    """Chapter 3: the first `rows` of a `gm.tiles.search` result."""
    from .units import fmt_time

    out = []
    for i in range(min(rows, len(result["time"]))):
        r = {k: v[i] for k, v in result.items()}
        out.append([f"{r['block_m']:g} x {r['block_n']:g}", f"{r['thread_m']:g} x {r['thread_n']:g}",
                    f"{r['threads']:g}", f"{r['registers']:g}", fmt_capacity(r["smem"]), fmt_time(r["time"]),
                    fmt_bound(r["bound"]), f"{r['warps']:g}"])
    return markdown_table(["block tile", "thread tile", "threads", "registers (est.)", "shared memory",
                           "predicted", "bound", "warps/SM"], out)


def profiler_table(preset: str = "A100-40GB") -> str:
    """Chapter 4: what Nsight Compute should report for each kernel of `gm.catalogue()`,
    as the model predicts it: DRAM and L2 bytes, shared-memory wavefronts, and the
    Speed-of-Light style utilisations (each part's busy fraction)."""
    from .model import predict
    from .units import fmt_percent, fmt_time
    from .workloads import catalogue

    g = gpu(preset)
    rows = []
    for name, w in catalogue().items():
        p = predict(w, g)
        rows.append([name, fmt_time(p.time), fmt_bound(p.bound), fmt_bytes(float(w.bytes["hbm"])), fmt_bytes(float(w.bytes["l2"])),
                     f"{float(w.bytes['smem']) / 128:,.0f}", fmt_percent(p.busy["hbm"]), fmt_percent(p.busy["compute"])])
    header = ["kernel", "time", "bound", "DRAM bytes (dram__bytes.sum)", "L2 traffic (lts__t_bytes.sum)",
              "shared-memory wavefronts", "DRAM, % of peak", "FP32, % of peak"]
    return markdown_table(header, rows)
