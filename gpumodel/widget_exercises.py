"""The widget exercises, by chapter: each asks a question the reader answers by exploring
the model (one control per parameter), then typing the answer. Every answer is computed
here from the model and the presets, never typed; `gpumodel.widgets.WidgetExercise` turns
each into ipywidgets in Jupyter and a precomputed explorer on the site.

A chapter shows one with `gm.widget_exercises.<name>().show()`; `ALL` lists them.
"""

from __future__ import annotations

import math

from . import presets
from .exercises import choice_rules, number_rules
from .kernel_info import label
from .model import BOUNDS, predict
from .plots import PART_LABELS
from .tiles import is_legal
from .units import fmt_bytes, fmt_capacity, fmt_intensity, fmt_number, fmt_percent, fmt_time
from .waves import gemm_hbm, warm_read_time
from .widgets import WidgetExercise, bars
from .workloads import attention, attention_memory, elementwise_chain, gemm, seed_kernels, warp_sectors

GPUS = ("V100", "T4", "A100-40GB", "RTX-4090", "L4", "H100-SXM", "H200", "B200")
"""The GPUs the explorers offer: one or two of each generation."""


def _power(n: int) -> str:
    """A power of two as a menu names it: `8,388,608 (2^23)`."""
    return f"{n:,} (2^{int(math.log2(n))})"


def prediction_view(workload, gpu, title: str) -> str:
    """The model's answer as bars: the time each part needs, the bound's bar red."""
    p = predict(workload, gpu)
    times = {part: float(t) for part, t in p.times.items()}
    rows = [(PART_LABELS[part], times[part], fmt_time(times[part]) if times[part] else "0", part == p.bound)
            for part in BOUNDS]
    return bars(f"{title} on the {p.gpu.name}: <b>{fmt_time(p.time)}</b>, bound by "
                f"<b>{PART_LABELS[str(p.bound)]}</b>", rows)


# Chapter 1

def seed_bounds() -> WidgetExercise:
    """Chapter 1: on how many of the explorer's GPUs is the 128 x 128 tiled GEMM compute-bound?"""
    kernels = seed_kernels()
    count = sum(predict(kernels["gemm_reg128"], g).bound == "compute" for g in GPUS)
    return WidgetExercise(
        "seed-bounds", {"kernel": list(kernels), "gpu": list(GPUS)},
        lambda kernel, gpu: prediction_view(kernels[kernel], gpu, label(kernel)),
        number_rules(count, "GPUs", 0, explain="The others run out of shared-memory bandwidth first: their SMs do "
                     "more FP32 work per clock than 32 banks can feed at this tile.",
                     hint="Pick the 128 x 128 GEMM and step through every GPU; count the red ALU bars."),
        "GPUs", labels={"kernel": label})


LITTLE_WARPS = (1, 2, 4, 6, 8, 12, 16, 24, 32, 48, 64)
LOAD_BYTES = {"float (4 B)": 4, "float2 (8 B)": 8, "float4 (16 B)": 16}


def littles_law(gpu: str = "A100-40GB", width: str = "float4 (16 B)", loads: int = 2) -> WidgetExercise:
    """Chapter 1: the fewest resident warps per SM (of LITTLE_WARPS) that keep `gpu`'s HBM
    busy when each thread has `loads` loads of `width` in flight (Little's law)."""
    def in_flight(gpu, warps, width, loads):
        g = presets.gpu(gpu)
        if warps * 32 > g.capability.max_threads_per_sm:
            raise ValueError(f"the {g.name} keeps at most {g.capability.max_threads_per_sm // 32} warps per SM")
        return warps * 32 * LOAD_BYTES[width] * loads, g.in_flight("hbm") / g.sms.value

    def view(gpu, warps, width, loads):
        have, need = in_flight(gpu, warps, width, loads)
        share = min(1.0, have / need)
        return bars(f"HBM of the {gpu}: at most <b>{fmt_percent(share, 3)}</b> of its bandwidth "
                    "(bytes in flight over bandwidth x latency)",
                    [("in flight per SM", have, fmt_bytes(have), share < 1),
                     ("needed per SM", need, fmt_bytes(need), False)])

    have = {w: in_flight(gpu, w, width, loads)[0] for w in LITTLE_WARPS}
    need = in_flight(gpu, 1, width, loads)[1]
    fewest = min(w for w in LITTLE_WARPS if have[w] >= need)
    with_latency = [g for g in GPUS if "hbm" in presets.gpu(g).latency]
    return WidgetExercise(
        "littles-law", {"gpu": with_latency, "warps": list(LITTLE_WARPS), "width": list(LOAD_BYTES),
                        "loads": [1, 2, 4]},
        view,
        number_rules(fewest, "warps", 0, explain=f"{fewest} warps x 32 threads x {loads} x {LOAD_BYTES[width]} B = "
                     f"{fmt_bytes(have[fewest])} in flight, against the {fmt_bytes(need)} that bandwidth x latency "
                     "asks of each SM.",
                     hint="Set the GPU, load width and loads first; then raise the warps until the bars match."),
        "warps per SM", labels={"warps": lambda w: f"{w} warps", "loads": lambda n: f"{n} in flight"})


# Chapter 2

STRIDES = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64)


def stride_sectors(elem_bytes: int = 2) -> WidgetExercise:
    """Chapter 2: the smallest stride (elements of `elem_bytes`) past which a warp's read
    touches no more sectors."""
    def view(stride, elem):
        sectors = float(warp_sectors(stride, elem))
        useful, moved = 32 * elem, 32 * sectors
        return bars(f"A warp reading every {stride}th {elem}-byte element: <b>{sectors:g} sectors</b>, "
                    f"{fmt_percent(useful / moved, 3)} of the bytes moved are used",
                    [("sectors", sectors, f"{sectors:g} of 32", sectors == 32), ("bytes used", useful, f"{useful} B", False),
                     ("bytes moved", moved, f"{moved:g} B", False)])

    smallest = next(s for s in STRIDES if all(warp_sectors(t, elem_bytes) == warp_sectors(s, elem_bytes)
                                              for t in STRIDES if t >= s))
    return WidgetExercise(
        "stride-sectors", {"stride": list(STRIDES), "elem": [1, 2, 4, 8]}, view,
        number_rules(smallest, "elements", 0, explain=f"{smallest} x {elem_bytes} B = 32 B: each thread now has a "
                     "sector of its own, and no stride can cost more than 32 sectors.",
                     hint="Set the element size, then walk the stride up until the sector count stops growing."),
        "stride (elements)", labels={"elem": lambda b: f"{b}-byte elements"})


CHAIN_OPS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512)


def fused_chain(gpu: str = "H100-SXM", dtype: str = "fp16") -> WidgetExercise:
    """Chapter 2: the shortest fused chain (ops, of CHAIN_OPS) of `dtype` elements that HBM
    no longer bounds on `gpu`."""
    def workload(ops, fused, dtype):
        return elementwise_chain(2**26, ops, fused == "fused", dtype)

    shortest = next(o for o in CHAIN_OPS if predict(workload(o, "fused", dtype), gpu).bound != "hbm")
    return WidgetExercise(
        "fused-chain", {"gpu": list(GPUS), "ops": list(CHAIN_OPS), "fused": ["unfused", "fused"],
                        "dtype": ["fp32", "fp16"]},
        lambda gpu, ops, fused, dtype: prediction_view(workload(ops, fused, dtype), gpu,
                                                       f"{ops} ops, {fused}, {dtype}, 2^26 elements"),
        number_rules(shortest, "ops", 0, explain=f"Fused, {shortest} one-flop ops on {dtype} elements make "
                     f"{shortest} flops per {2 * (2 if dtype != 'fp32' else 4)} bytes of HBM, past the point where "
                     "the ALUs (and the register traffic they need) take longer than the trip through HBM.",
                     hint="Fix the GPU, fused and the dtype; double the ops until the red bar leaves HBM."),
        "ops")


# Chapter 3

THREAD_TILES = (1, 2, 4, 8, 16)


def thread_tile(gpu: str = "A100-40GB", block: int = 128) -> WidgetExercise:
    """Chapter 3: the smallest square thread tile at which shared memory stops binding the
    4096^3 FP32 GEMM with `block` x `block` tiles on `gpu`."""
    def workload(block, thread):
        return gemm(4096, 4096, 4096, block=(block, block), thread=(thread, thread))

    def view(gpu, block, thread):
        if not is_legal(gpu, block, block, thread, thread):
            raise ValueError(f"{block} x {block} tiles with {thread} x {thread} per thread cannot launch on the "
                             f"{gpu}: {(block // thread) ** 2 if block % thread == 0 else 'no whole number of'} "
                             "threads per block, or too much shared memory, or too many registers")
        return prediction_view(workload(block, thread), gpu, f"{block} x {block} tiles, {thread} x {thread} per thread")

    smallest = next(t for t in THREAD_TILES if is_legal(gpu, block, block, t, t)
                    and predict(workload(block, t), gpu).bound != "smem")
    return WidgetExercise(
        "thread-tile", {"gpu": list(GPUS), "block": [16, 32, 64, 128], "thread": list(THREAD_TILES)},
        view,
        number_rules(smallest, "results per side", 0,
                     explain=f"At {smallest} x {smallest} each operand read from shared memory feeds {smallest} FMAs: "
                     "enough, on this GPU, for 32 banks to keep up with its FP32 lanes.",
                     hint="Hold the GPU and the block tile; raise the thread tile until the red bar leaves shared memory."),
        "thread tile side")


OCC_THREADS = (64, 128, 256, 512, 1024)
OCC_REGISTERS = (32, 40, 48, 64, 80, 96, 128, 168, 255)
OCC_SMEM_KIB = (0, 16, 32, 48, 64, 100)


def occupancy_limit(gpu: str = "H100-SXM", threads: int = 256, smem_kib: int = 32, warps: int = 32) -> WidgetExercise:
    """Chapter 3: the most registers per thread (of OCC_REGISTERS) at which `threads`-thread
    blocks with `smem_kib` KiB of shared memory still keep `warps` warps on one SM of `gpu`."""
    from .occupancy import occupancy

    def view(gpu, threads, registers, smem_kib):
        o = occupancy(gpu, threads, registers, smem_kib * 1024)
        rows = [(f"{k} allow", v, f"{v:g} blocks", k == o.limiter) for k, v in o.per_resource.items()]
        return bars(f"{o.blocks:g} blocks of {threads} threads: <b>{o.warps:g} warps</b> resident, "
                    f"limited by {o.limiter}", rows)

    most = max(r for r in OCC_REGISTERS if occupancy(gpu, threads, r, smem_kib * 1024).warps >= warps)
    return WidgetExercise(
        "occupancy-limit", {"gpu": ["V100", "A100-40GB", "RTX-4090", "H100-SXM"], "threads": list(OCC_THREADS), "registers": list(OCC_REGISTERS),
                            "smem_kib": list(OCC_SMEM_KIB)},
        view,
        number_rules(most, "registers", 0, explain=f"At {most} registers a thread the register file still holds "
                     f"{warps} warps; one step more and the registers, not the shared memory, bind.",
                     hint="Fix the GPU, threads and shared memory; raise the registers until the warps fall."),
        "registers per thread", labels={"smem_kib": lambda k: f"{k} KiB"})


# Chapter 4

GROUPS = (1, 2, 4, 8, 16, 32, 64)

def block_group(gpu: str = "H100-SXM", size: int = 8192) -> WidgetExercise:
    """Chapter 4: the group size (of GROUPS) that minimises the HBM traffic of an fp16
    size^3 GEMM with 128 x 128 tiles, two blocks per SM, blocks drifting over all of K."""
    def traffic(gpu, group, drift):
        return gemm_hbm(size, size, size, gpu=gpu, blocks_per_sm=2, order="grouped", group=group,
                        drift_k=size if drift == "all of K" else size // 8)

    def view(gpu, group, drift):
        t = traffic(gpu, group, drift)
        return bars(f"fp16 {size}^3 GEMM on the {gpu}, groups of {group} block rows: <b>{fmt_bytes(t.hbm)}</b> "
                    f"through HBM, {t.rows_per_wave:.1f} rows x {t.cols_per_wave:.1f} columns of tiles per wave",
                    [("this order", t.hbm, fmt_bytes(t.hbm), True), ("compulsory", t.compulsory, fmt_bytes(t.compulsory),
                                                                     False),
                     ("no reuse", t.no_reuse, fmt_bytes(t.no_reuse), False)])

    moved = {g: traffic(gpu, g, "all of K").hbm for g in GROUPS}
    best = min(moved, key=moved.get)
    return WidgetExercise(
        "block-group", {"gpu": ["A100-40GB", "H100-SXM"], "group": list(GROUPS), "drift": ["all of K", "1/8 of K"]},
        view,
        number_rules(best, "block rows", 0, explain="Groups of that many rows make a wave's tiles the squarest "
                     "patch: the fewest distinct panels of A and B per wave, so the most reuse L2 can keep.",
                     hint="Hold the GPU and the drift; step through the groups and watch the red bar."),
        "group size")


L2_SIZES = tuple(2**p for p in range(18, 27))


def l2_overflow(gpu: str = "L4") -> WidgetExercise:
    """Chapter 4: the smallest vector add (fp32 elements, a power of two) whose three
    arrays no longer fit in `gpu`'s L2."""
    def view(gpu, n):
        g, nbytes = presets.gpu(gpu), 12 * n
        fits = nbytes <= g.capacity("l2")
        rate = nbytes / float(warm_read_time(g, nbytes))
        return bars(f"Vector add of {n:,} floats on the {gpu}: {fmt_bytes(nbytes)} "
                    f"{'fit' if fits else '<b>do not fit</b>'} in L2; a repeat run reads at {fmt_bytes(rate)}/s",
                    [("working set", nbytes, fmt_bytes(nbytes), not fits),
                     ("L2", g.capacity("l2"), fmt_capacity(g.capacity("l2")), False)])

    first = next(n for n in L2_SIZES if 12 * n > presets.gpu(gpu).capacity("l2"))
    return WidgetExercise(
        "l2-overflow", {"gpu": list(GPUS), "n": list(L2_SIZES)}, view,
        number_rules(first, "elements", 0, explain=f"{first:,} floats in each of three arrays is {fmt_bytes(12 * first)}, "
                     "more than the L2 holds: from here a benchmark's second run reads HBM.",
                     hint="Pick the GPU and walk the length up; type it as a plain number of elements."),
        "elements", labels={"n": _power})


# Chapter 5

SEQS = tuple(2**p for p in range(10, 18))


def attention_fit(gpu: str = "L4", heads: int = 32, head_dim: int = 128) -> WidgetExercise:
    """Chapter 5: the smallest power-of-two sequence length at which standard attention's
    forward pass (batch 1, fp16) no longer fits in `gpu`'s memory."""
    def view(gpu, seq, kind):
        g = presets.gpu(gpu)
        need = float(attention_memory(1, heads, seq, head_dim, "fp16", kind))
        fits = need <= g.capacity("hbm")
        return bars(f"{kind.capitalize()} attention, N = {seq:,}, {heads} heads, d = {head_dim}: "
                    f"{fmt_bytes(need)} {'fits' if fits else '<b>does not fit</b>'} in the {gpu}'s memory",
                    [("needed", need, fmt_bytes(need), not fits),
                     ("HBM", g.capacity("hbm"), fmt_capacity(g.capacity("hbm")), False)])

    capacity = presets.gpu(gpu).capacity("hbm")
    first = next(n for n in SEQS if attention_memory(1, heads, n, head_dim, "fp16") > capacity)
    return WidgetExercise(
        "attention-fit", {"gpu": list(GPUS), "seq": list(SEQS), "kind": ["standard", "flash"]}, view,
        number_rules(first, "tokens", 0, explain="The N x N scores and probabilities grow with N^2; FlashAttention "
                     "never writes them, and at that length still needs "
                     f"{fmt_bytes(float(attention_memory(1, heads, first, head_dim, 'fp16', 'flash')))}.",
                     hint="Pick the GPU and standard attention, then double N until the red bar passes HBM."),
        "sequence length", labels={"seq": _power})


def flash_speedup(gpu: str = "H100-SXM", seq: int = 16384, head_dim: int = 64) -> WidgetExercise:
    """Chapter 5: how many times faster flash attention is than standard in the model, on
    `gpu` at `seq` tokens and `head_dim` (batch 1, 32 heads, fp16)."""
    def workload(seq, head_dim, kind):
        return attention(1, 32, seq, head_dim, "fp16", kind)

    ratio = float(predict(workload(seq, head_dim, "standard"), gpu).time / predict(workload(seq, head_dim, "flash"),
                                                                                   gpu).time)
    return WidgetExercise(
        "flash-speedup", {"gpu": list(GPUS), "seq": list(SEQS), "head_dim": [64, 128, 256],
                          "kind": ["standard", "flash"]},
        lambda gpu, seq, head_dim, kind: prediction_view(workload(seq, head_dim, kind), gpu,
                                                         f"{kind.capitalize()} attention, N = {seq:,}, d = {head_dim}"),
        number_rules(ratio, "times", 0.02, explain="Both are HBM-bound; flash reads K and V once per query block "
                     "instead of writing and reading the N x N matrices, and its advantage shrinks as d grows.",
                     hint="Read both times at the same GPU, N and d, and divide."),
        "times faster", labels={"seq": _power})


# Chapter 6

DECODE_BATCHES = (1, 8, 32, 64, 128, 192, 256, 320, 384, 512, 1024)
WEIGHTS = ("fp16", "int8", "int4")


def decode_batch(gpu: str = "H100-SXM", weight: str = "int8", width: int = 8192) -> WidgetExercise:
    """Chapter 6: the smallest batch (of DECODE_BATCHES) at which the HBM intensity of a
    decode step's weight GEMM with `weight` weights reaches `gpu`'s HBM ridge (the tensor
    cores' fp16 peak over HBM bandwidth)."""
    from .tensor_cores import decode_intensity

    def view(gpu, weight, batch):
        g = presets.gpu(gpu)
        intensity, ridge = float(decode_intensity(batch, width, weight)), g.ridge("hbm", "fp16")
        side = "below" if intensity < ridge else "at or past"
        return bars(f"Decode GEMM, batch {batch}, {weight} weights, width {width:,} on the {gpu}: "
                    f"<b>{fmt_intensity(intensity)}</b> per HBM byte, <b>{side}</b> the HBM ridge",
                    [("intensity", intensity, fmt_intensity(intensity), intensity < ridge),
                     ("HBM ridge", ridge, fmt_intensity(ridge), False)])

    g = presets.gpu(gpu)
    smallest = next(b for b in DECODE_BATCHES
                    if decode_intensity(b, width, weight) >= g.ridge("hbm", "fp16"))
    return WidgetExercise(
        "decode-batch", {"gpu": ["A100-40GB", "H100-SXM", "H200", "L4"], "weight": list(WEIGHTS),
                         "batch": list(DECODE_BATCHES)},
        view,
        number_rules(smallest, "sequences", 0, explain="Each weight is read once per step whatever the batch, so "
                     "narrower weights cut the bytes and the batch the tensor cores need shrinks with them.",
                     hint="Fix the GPU and the weights; raise the batch until the intensity bar passes the ridge."),
        "batch")


WAVE_SIZES = (2048, 3072, 4096, 5120, 6144, 7168, 8192)


def wave_tail(gpu: str = "H100-SXM", block: int = 128) -> WidgetExercise:
    """Chapter 6: the square output size (of WAVE_SIZES) whose `block` x `block` tiles fill
    the most of their last wave on `gpu` (one block per SM)."""
    from .tensor_cores import waves

    def view(gpu, size, block):
        w = waves(size, size, (block, block), gpu)
        return bars(f"{size:,} x {size:,} output in {block} x {block} tiles on the {gpu}: {w.tiles:,} tiles, "
                    f"{w.waves} waves, the last <b>{fmt_percent(w.last, 3)}</b> full",
                    [("last wave", w.last, fmt_percent(w.last, 3), w.last < 0.5),
                     ("all waves", w.efficiency, fmt_percent(w.efficiency, 3), False)])

    best = max(WAVE_SIZES, key=lambda n: waves(n, n, (block, block), gpu).last)
    return WidgetExercise(
        "wave-tail", {"gpu": ["A100-40GB", "H100-SXM", "B200"], "size": list(WAVE_SIZES), "block": [128, 256]},
        view,
        number_rules(best, "elements per side", 0, explain="Its tile count is just under a multiple of the SMs, so "
                     "the last wave keeps almost every SM busy; the others leave part of the GPU idle at the end.",
                     hint="Hold the GPU and the tile; compare the last wave's bar across sizes."),
        "size")


# Appendix

def highest_ridge(math: str = "fp16") -> WidgetExercise:
    """Appendix: which preset has the highest `math` ridge point against HBM (peak over HBM
    bandwidth, FLOP/B)?"""
    names = presets.preset_names()

    def ridge(gpu, math, level="hbm"):
        g = presets.gpu(gpu)
        return g.ridge(level, math)

    def view(gpu, math):
        rows = [(f"{PART_LABELS[lv]} ridge", ridge(gpu, math, lv), fmt_intensity(ridge(gpu, math, lv)), lv == "hbm")
                for lv in ("registers", "smem", "l2", "hbm")]
        return bars(f"The {gpu}, {math} math: a kernel needs <b>{fmt_intensity(ridge(gpu, math))}</b> per HBM byte "
                    "to be compute-bound", rows)

    best = max(names, key=lambda g: ridge(g, math))
    return WidgetExercise(
        "highest-ridge", {"gpu": names, "math": ["fp32", "fp16"]}, view,
        choice_rules(best, {g: f"The {g}'s {math} HBM ridge is {fmt_number(ridge(g, math))} FLOP/B; another preset's "
                            "is higher." for g in names if g != best},
                     explain=f"{fmt_number(ridge(best, math))} FLOP/B: the most {math} math per byte of its memory, so "
                     "the hardest GPU of the presets to keep busy from HBM."),
        "preset name")


ALL = (seed_bounds, littles_law, stride_sectors, fused_chain, thread_tile, occupancy_limit, block_group, l2_overflow,
       attention_fit, flash_speedup, decode_batch, wave_tail, highest_ridge)
"""Every widget exercise, in chapter order."""
