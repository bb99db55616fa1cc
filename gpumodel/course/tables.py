"""Markdown tables for the chapters: the presets and their sources (appendix, chapter 1),
machine balance (chapter 2), the GEMM ladder, compiler reports and tile search (chapter 3),
predicted profiler metrics (chapter 4). Each returns Markdown: citations into
`references.bib` are roles while the book builds, "Author Year" linked text in Jupyter
(`citation`). Every function taking `gpu` accepts a `GPU` or a
preset name.
"""

from __future__ import annotations

import numpy as np

from .. import published, presets, simulate
from ..expected import gemm_launch
from ..cuda import recorded_runs
from ..hardware import LEVELS, Fact
from ..kernel_info import GEMM_LADDER, info, label, threads_per_block
from ..model import predict
from ..occupancy import occupancy
from ..presets import preset_names
from ..units import (
    LEVEL_NAMES,
    fmt_bandwidth,
    fmt_bound,
    fmt_bytes,
    fmt_capacity,
    fmt_flops,
    fmt_number,
    fmt_percent,
    fmt_time,
    powers,
)
from ..workloads import catalogue, gemm_requests, kernel_gemm

FACT_LABELS = {
    "sms": "SMs",
    "fp32_lanes_per_sm": "FP32 units per SM",
    "clock": "boost clock",
    "l2_bandwidth": "L2 bandwidth",
    "hbm_bandwidth": "HBM bandwidth",
    "register_file_per_sm": "register file per SM",
    "smem_per_sm": "shared memory per SM",
    "l2_capacity": "L2 capacity",
    "hbm_capacity": "HBM capacity",
    "tensor_tf32": "TF32 tensor peak",
    "tensor_fp16": "fp16 tensor peak",
    "tensor_bf16": "bf16 tensor peak",
    "tensor_fp8": "fp8 tensor peak",
    "tensor_fp4": "fp4 tensor peak",
    "tensor_clock": "tensor-core clock",
    "max_clock": "highest SM clock",
    "power": "power limit",
    "die_link": "die-to-die link",
    "latency_smem": "shared-memory latency",
    "latency_l2": "L2 hit latency",
    "latency_hbm": "HBM latency",
}


def markdown_table(header: list[str], rows: list[list[str]]) -> str:
    """A Markdown table from a header and rows of strings ('|' in cells is escaped)."""
    def line(cells):
        return "| " + " | ".join(str(c).replace("|", "\\|") for c in cells) + " |"

    return "\n".join([line(header), line(["---"] * len(header))] + [line(r) for r in rows])


def fmt_fact(fact: Fact) -> str:
    """A fact's value in the unit a reader expects (MHz, TB/s, KiB, cycles)."""
    v, unit = fact.value, fact.unit
    if unit == "Hz":
        return f"{v / 1e6:g} MHz"
    if unit == "B/s":
        return fmt_bandwidth(v)
    if unit == "FLOP/s":
        return fmt_flops(v)
    if unit == "B":
        return fmt_capacity(v)
    return f"{v:g} {unit}{'s' if unit in ('SM', 'lane', 'cycle') and v != 1 else ''}"


def citation(key: str, textual: bool = False) -> str:
    """A citation of the references.bib `key`: on the site, while the book builds, the role
    Sphinx resolves ({cite:t} `textual`ly, "Author (Year)", else {cite:p}); in Jupyter, where a
    table's Markdown is shown as it is, "Author Year" (in parentheses unless `textual`), linked
    to the reference's own address."""
    from .checks import building_book

    if building_book():
        return f"{{cite:{'t' if textual else 'p'}}}`{key}`"
    label, _, address = presets.bibliography()[key]
    text = f"[{label}]({address})" if address else label
    return text if textual else f"({text})"


def cite(fact: Fact) -> str:
    """A fact's source as a citation followed by where in the document it sits."""
    return citation(fact.source) + (f", {fact.where}" if fact.where else "")


LEVEL_ROLES = {
    "registers": ("one thread", "the values a thread is computing with; the compiler decides"),
    "smem": ("the threads of one block, on one SM", "tiles the program copies in on purpose"),
    "l2": ("every SM", "recently used lines of HBM; the hardware decides"),
    "hbm": ("every SM, and the host through copies", "everything: inputs, outputs, weights"),
}


def level_table(gpu) -> str:
    """Chapter 1's table of one GPU: each level's sharers, contents, capacity, bandwidth
    and measured latency (with its source)."""
    g = presets.gpu(gpu)
    rows = []
    for lv in LEVELS:
        lat = g.latency.get(lv)
        if lv == "registers":
            latency = "none extra: operands are read as part of the instruction"
        else:
            latency = f"{lat.value:g} cycles ({cite(lat)})" if lat else "not measured"
        who, what = LEVEL_ROLES[lv]
        rows.append([LEVEL_NAMES[lv], who, what, fmt_capacity(g.capacity(lv)), fmt_bandwidth(g.bandwidth(lv)), latency])
    return markdown_table(["level", "shared by", "holds", "capacity (whole GPU)", "bandwidth", "latency"], rows)


def preset_table(gpus=None) -> str:
    """One row per GPU (every preset by default): SMs, clock, peaks (dense; a dash where the
    GPU has no such tensor math) and the four derived bandwidths."""
    narrow = ("fp16", "fp8", "fp4")
    header = ["GPU", "SMs", "clock", "FP32 peak"] + [f"{m} tensor" for m in narrow] + [LEVEL_NAMES[lv] for lv in LEVELS]
    rows = []
    for g in _gpus(gpus):
        rows.append(
            [g.name, f"{g.sms.value:g}", fmt_fact(g.clock), fmt_flops(g.peak_flops)]
            + [fmt_flops(g.peak(m)) if m in g.tensor else "\u2014" for m in narrow]
            + [fmt_bandwidth(g.bandwidth(lv)) for lv in LEVELS]
        )
    return markdown_table(header, rows)


def capacity_table(gpus=None) -> str:
    """One row per GPU (every preset by default): the capacity of each level, whole GPU, and
    the kind of its device memory."""
    header = ["GPU"] + [LEVEL_NAMES[lv] for lv in LEVELS] + ["device memory"]
    rows = [[g.name] + [fmt_capacity(g.capacity(lv)) for lv in LEVELS] + [g.memory] for g in _gpus(gpus)]
    return markdown_table(header, rows)


def sources_table(gpu) -> str:
    """Every sourced fact of one GPU: value, kind, source and note."""
    rows = [[FACT_LABELS[name], fmt_fact(fact), fact.kind, cite(fact), fact.note]
            for name, fact in presets.gpu(gpu).facts().items()]
    return markdown_table(["figure", "value", "kind", "source", "note"], rows)


def balance_table(gpus=None) -> str:
    """Chapter 2: each GPU's machine balance (its ridge point against HBM) for FP32 and
    fp16 tensor math, in FLOP per byte (every preset by default)."""
    rows = []
    for g in _gpus(gpus):
        rows.append([g.name, fmt_flops(g.peak_flops), fmt_flops(g.peak("fp16")), fmt_bandwidth(g.bandwidth("hbm")),
                     fmt_number(g.ridge("hbm")), fmt_number(g.ridge("hbm", "fp16"))])
    return markdown_table(["GPU", "FP32 peak", "fp16 tensor peak", "HBM", "FP32 balance (FLOP/B)",
                           "fp16 tensor balance (FLOP/B)"], rows)


def compiler_table(reports, gpus=("A100-40GB", "H100-SXM")) -> str:
    """Chapter 3: what ptxas says of each CUDA function (registers, spills, static shared
    memory), with the occupancy it allows on each GPU whose architecture it was built for
    (resident warps per SM and the limiter)."""
    arch_of = {f"sm_{g.capability.version[0]}{g.capability.version[1]}": g for g in _gpus(gpus)}
    rows = []
    for r in reports:
        g = arch_of.get(r.arch)
        occ = ""
        if g:
            o = occupancy(g, threads_per_block(r.kernel), r.registers, r.smem)
            occ = f"{o.warps:g} warps ({o.limiter})"
        rows.append([r.kernel, r.arch, str(r.registers), f"{r.spill_stores} / {r.spill_loads}",
                     fmt_capacity(r.smem) if r.smem else "0", occ])
    header = ["kernel", "target", "registers", "spill stores / loads (B)", "shared memory",
              f"resident per SM ({', '.join(g.name for g in _gpus(gpus))})"]
    return markdown_table(header, rows)


def tile_table(result: dict, rows: int = 8) -> str:
    """Chapter 3: the first `rows` of a `gm.tiles.search` result."""
    out = []
    for i in range(min(rows, len(result["time"]))):
        r = {k: v[i] for k, v in result.items()}
        out.append([f"{r['block_m']:g} x {r['block_n']:g}", f"{r['thread_m']:g} x {r['thread_n']:g}",
                    f"{r['threads']:g}", f"{r['registers']:g}", fmt_capacity(r["smem"]), fmt_time(r["time"]),
                    fmt_bound(r["bound"]), f"{r['warps']:g}"])
    return markdown_table(["block tile", "thread tile", "threads", "registers (est.)", "shared memory",
                           "predicted", "bound", "warps/SM"], out)


def profiler_table(gpu="A100-40GB") -> str:
    """Chapter 4: what Nsight Compute should report for each kernel of `gm.catalogue()`,
    as the model predicts it: DRAM and L2 bytes, shared-memory wavefronts, and the
    Speed-of-Light style utilisations (each part's busy fraction)."""
    g = presets.gpu(gpu)
    rows = []
    for kernel, w in catalogue().items():
        p = predict(w, g)
        rows.append([label(kernel), fmt_time(p.time), fmt_bound(p.bound), fmt_bytes(float(w.bytes["hbm"])),
                     fmt_bytes(float(w.bytes["l2"])), f"{float(w.bytes['smem']) / 128:,.0f}",
                     fmt_percent(p.busy["hbm"]), fmt_percent(p.busy["compute"])])
    header = ["kernel", "time", "bound", "DRAM bytes (dram__bytes.sum)", "L2 traffic (lts__t_bytes.sum)",
              "shared-memory wavefronts", "DRAM, % of peak", "math, % of peak"]
    return markdown_table(header, rows)


def _counted_workload(kernel: str, m: int, n: int, k: int):
    """What the simulation of `kernel` counts: every request for the naive kernel (the
    simulation has no cache), the model's bytes for the tiled ones."""
    return gemm_requests(m, n, k) if info(kernel).block is None else kernel_gemm(kernel, m, n, k)


def count_table(kernel: str, m: int, n: int, k: int, seed: int = 0) -> str:
    """Chapter 3: run the simulation of GEMM `kernel` on random m x k and k x n matrices and
    tabulate its byte counts against the formula's, level by level (and its result against
    A @ B). For the naive kernel both count every request (`gemm_requests`)."""
    rng = np.random.default_rng(seed)
    a, b = rng.standard_normal((m, k)), rng.standard_normal((k, n))
    block, thread = info(kernel).block, info(kernel).thread
    run = simulate.naive_gemm(a, b) if block is None else simulate.tiled_gemm(a, b, block, thread, layout=info(kernel).layout)
    formula = _counted_workload(kernel, m, n, k)
    names = {**LEVEL_NAMES, "smem": "shared memory (its own arrays)"}  # the L1 path's requests are L2's row here
    rows = [[names[lv], f"{run.bytes[lv]:,.0f}", f"{float(formula.bytes[lv]):,.0f}",
             "yes" if run.bytes[lv] == formula.bytes[lv] else "NO"] for lv in LEVELS]
    rows.append(["C = A @ B?", "", "", "yes" if np.allclose(run.result, a @ b) else "NO"])
    return markdown_table([f"{m} x {n} x {k}", "simulation counted (B)", "formula (B)", "equal"], rows)


L1_PATH = "L1/shared-memory path"
"""The model's `smem` level as a table names it where global requests cross it too: L1 and
shared memory are one SRAM per SM with one return path (chapter 3)."""


def prediction_table(kernel: str, gpus=("A100-40GB", "H100-SXM"), size: int = 4096) -> str:
    """Chapter 3: the model's time, bound and FLOP/s for GEMM `kernel` at size^3 on each GPU;
    the `smem` level is the L1/shared-memory path (`L1_PATH`), which the naive kernel's global
    requests cross too."""
    w = kernel_gemm(kernel, size, size, size)
    rows = []
    for g in _gpus(gpus):
        p = predict(w, g)
        bound = L1_PATH if p.bound == "smem" else fmt_bound(p.bound)
        rows.append([g.name, fmt_time(p.time), bound, fmt_flops(float(w.flops) / p.time),
                     fmt_percent(p.busy["compute"])] + [fmt_bytes(float(w.bytes[lv])) for lv in ("smem", "l2", "hbm")])
    return markdown_table(["GPU", "predicted", "bound", "rate", "ALUs busy", L1_PATH, "L2", "HBM"], rows)


def runs_table(runs: list) -> str:
    """Chapters 3 to 5: kernel runs (from `cuda.runtime.runs`: measured now, or recorded)
    against the model and, where it ran the same work, cuBLAS; or, where there are none, the
    sentence that says what one would add. The rate is what the kernel achieved: flops per second, or HBM bytes per
    second (by the model's count) for a kernel without flops."""
    if not runs:
        return recorded_runs.NONE_YET + "\n"
    rows = []
    for r in runs:
        when = f"recorded {r['date'][:10]}" if "date" in r else "measured now"
        rate = "-"
        if r.get("achieved_flops"):
            rate = fmt_flops(r["achieved_flops"])
        elif "achieved_hbm_Bps" in r:
            rate = fmt_bandwidth(r["achieved_hbm_Bps"])
        rows.append([f"{label(r['kernel'])}, {r['gpu']}, {when}", fmt_time(r["measured_s"]), rate,
                     fmt_percent(r["cublas_s"] / r["measured_s"]) if "cublas_s" in r else "-",
                     fmt_time(r["predicted_s"]) if "predicted_s" in r else "no model",
                     f"{r['error_pct']:+.0f}%" if "error_pct" in r else "-"])
    return markdown_table(["run", "time", "rate", "% of cuBLAS", "model", "model error"], rows)


def _measure(quantity: str, value: float) -> str:
    """A compared quantity in human units: seconds, bytes/s or cycles."""
    return {"time": fmt_time, "bandwidth": fmt_bandwidth}.get(quantity, lambda v: f"{v:g} cycles")(value)


def published_table(comparisons: list) -> str:
    """Published measurements against the model (`gpumodel.published.comparisons`): what
    ran where, the measured value, the model's bound (and what sets it), the fraction of the
    bound reached, and the source with figure, table or file. Chapters 1 to 5, 7 and the
    appendix; a latency row compares the preset's latency (another source) instead."""
    rows = []
    for c in comparisons:
        r = c.record
        reached = fmt_percent(c.fraction) if c.quantity != "latency" else f"preset {fmt_percent(c.fraction)}"
        bound = " + ".join(fmt_bound(b) for b in c.bound.split("+"))
        rows.append([r.gpu, powers(r.what), _measure(c.quantity, c.measured), f"{_measure(c.quantity, c.model)} ({bound})",
                     reached, f"{citation(r.source, textual=True)}, {r.where}"])
    return markdown_table(["GPU", "run", "measured", "model (bound)", "of the bound", "source"], rows)


def violations_table(comparisons: list) -> str:
    """Published measurements faster than the model's bound (`gpumodel.published.violations`),
    each with its analysis."""
    return markdown_table(["GPU", "run", "of the bound", "why the measurement beats the model", "source"],
                          [[c.record.gpu, powers(c.record.what), fmt_percent(c.fraction), c.record.violation,
                            f"{citation(c.record.source, textual=True)}, {c.record.where}"] for c in comparisons])


def reasons_by_gpu(comparisons: list) -> str:
    """Published measurements much slower than the model's bound, each with its reason, as one
    closed section per GPU (a phone shows a few lines, the rest a tap away) holding a list that
    reflows at any width: Markdown with HTML <details>. Chapter 98."""
    groups = {}
    for c in comparisons:
        groups.setdefault(c.record.gpu, []).append(c)
    return "\n\n".join(
        f"<details><summary>{gpu}: {len(group)} {'run' if len(group) == 1 else 'runs'}</summary>\n\n"
        + "\n".join(f"- **{powers(c.record.what)}**, {fmt_percent(c.fraction)} of the bound. {c.record.reason}"
                     for c in group)
        + "\n\n</details>" for gpu, group in groups.items()) + "\n"


def _gpus(gpus) -> list:
    """GPU records for `gpus` (records or preset names; every preset when None)."""
    return [presets.gpu(g) for g in (preset_names() if gpus is None else gpus)]


LIMITER_NAMES = {"latency": "latency", "occupancy": "occupancy", "uncoalesced": "uncoalesced requests",
                 "issue": "instruction issue", "waves": "the grid's last wave"}
"""What holds an expected time (`gpumodel.expected.LIMITERS`) as prose names it."""


def fmt_limiter(limiter: str) -> str:
    """What holds an expected time, named: a limiter of `LIMITER_NAMES` or a part of the bound."""
    return LIMITER_NAMES.get(limiter) or fmt_bound(limiter)


def ladder_expectations(gpu, size: int = 4096) -> dict:
    """Chapter 3: each rung of the GEMM ladder at size^3 on `gpu`, its `gm.expect` with the
    launch `gm.gemm` shapes (`gemm_launch`): the bound and the expected time, by kernel id."""
    out = {}
    for k in GEMM_LADDER:
        out[k] = published.expect(kernel_gemm(k, size, size, size), gpu,
                                  gemm_launch(size, size, size, info(k).block, info(k).thread, info(k).layout))
    return out


def expected_ladder_table(gpus=("A100-40GB", "H100-SXM"), size: int = 4096) -> str:
    """Chapter 3: per rung and GPU, the bound (no kernel beats it; the part that sets it) and the
    expected time (what a kernel like this gets; what holds it there)."""
    rows = []
    for g in _gpus(gpus):
        for k, e in ladder_expectations(g, size).items():
            rows.append([label(k), g.name, fmt_time(e.bound), fmt_bound(e.bound_part), fmt_time(e.time),
                         fmt_limiter(e.limiter), f"{e.time / e.bound:.1f}x"])
    return markdown_table(["kernel", "GPU", "bound", "set by", "expected", "held by", "expected / bound"], rows)


HALVES = {"estimate": "estimates the shares", "judge": "judged"}
"""What each half of the published records does for the expected time (`published.half`)."""


def expected_table(comparisons: list) -> str:
    """Published measurements (`gpumodel.published.comparisons`) beside both answers of the
    model: the bound and what sets it, the expected time and what holds it, measured over
    expected, and the record's half (whether it estimated the shares or is judged). Chapters 5
    and 98."""
    rows = []
    for c in comparisons:
        e = c.expected
        if e is None:
            continue
        measured = published.measured_time(c.record)
        rows.append([c.record.gpu, powers(c.record.what), fmt_time(measured), f"{fmt_time(e.bound)} ({fmt_bound(e.bound_part)})",
                     f"{fmt_time(e.time)} ({fmt_limiter(e.limiter)})", f"{measured / e.time:.2f}",
                     HALVES[published.half(c.record)]])
    return markdown_table(["GPU", "run", "measured", "bound (set by)", "expected (held by)", "measured / expected",
                           "half"], rows)


def model_over_measured_table() -> str:
    """Chapter 98: measured over bound and measured over expected on the published records,
    each half apart (latency records left out): how many, the quartiles and the median."""
    rows = []
    for model, name in (("bound", "bound (`gm.predict`)"), ("expected", "expected (`gm.expect`)")):
        for which in HALVES:
            ratios = published.measured_over_expected(which, model)
            q1, median, q3 = np.percentile(ratios, [25, 50, 75])
            rows.append([name, HALVES[which], f"{len(ratios)}", f"{q1:.2f}", f"{median:.2f}", f"{q3:.2f}"])
    return markdown_table(["measured over", "records", "how many", "first quartile", "median", "third quartile"], rows)
