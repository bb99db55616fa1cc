"""Chapter `07_blackwell_low_precision` (Overhead, Blackwell and low precision): its
checkpoints' checkers and its widget exercises.

A checker takes the learner's answer and returns `Feedback`; a widget exercise (`WIDGET_EXERCISES`)
is an explorer of the model with an answer box."""

from __future__ import annotations

from .. import _check, presets
from ..blackwell import pair_intensity
from ..low_precision import bytes_per_element
from ..model import predict
from ..hardware import WARP
from ..occupancy import SETMAXNREG, limits, occupancy
from ..overhead import PATHS, launch_cost, launch_costs, sequence_time
from ..tensor_cores import operand_intensity
from ..units import fmt_intensity, fmt_time
from ..workloads import gemm_ideal, vector_add
from .checks import Feedback, check_number, number_rules
from .widgets import Checkpoint, WidgetExercise, asked, bars, upto


def check_launch_bound(kernels: int, kernel_time: float, answer, gpu: str = "B200") -> Feedback:
    """Chapter 7: the time, in microseconds, of `kernels` kernels of `kernel_time` seconds
    each launched one by one on `gpu` by the CUDA driver (`sequence_time`)."""
    kernels = _check.integer("kernels", kernels, 1, 10**6)
    kernel_time = _check.real("kernel_time", kernel_time, least=0)
    launch = launch_cost(gpu).seconds
    expected = sequence_time([kernel_time] * kernels, launch).time * 1e6
    total, launches = kernels * kernel_time * 1e6, kernels * launch * 1e6
    if kernel_time < launch:
        why = (f"Each kernel is shorter than a launch ({fmt_time(launch)}), so the GPU waits on the host: "
               "N launches, then the last kernel.")
    else:
        why = (f"Each kernel outlasts a launch ({fmt_time(launch)}), so the launches hide behind the work: "
               "one launch, then the kernels back to back.")
    return check_number(answer, expected, "us", rtol=0.01, explain=why,
                        hint="Which is longer, a kernel or a launch? The longer one sets the pace; add what the "
                        "other contributes once, at the start or the end.",
                        mistakes=((total + launches, "Launches are asynchronous: the host queues the next while "
                                   "the GPU runs the last, so the two do not add up kernel by kernel."),))


def check_pair_intensity(answer, m: int = 256, n: int = 256) -> Feedback:
    """Chapter 7: the FLOP per shared-memory byte each thread block of a paired (2-CTA) fp16
    MMA of m x n reads."""
    expected = float(pair_intensity(m, n, 64))
    return check_number(answer, expected, "FLOP/B", rtol=0.01,
                        explain=f"Each block computes {m // 2} x {n} of the result from {m // 2} rows of A and "
                        f"{n // 2} columns of B: the pair shares B, so each SM reads half of it.",
                        hint="Per block: the flops are 2 (m/2) n k; the bytes are 2 bytes times (m/2) k of A plus "
                        "k (n/2) of B. k cancels.",
                        mistakes=((float(operand_intensity(m // 2, n, 16)), "That is one block reading all of B: "
                                   "in the pair each block holds half the columns of B."),))


def _register_pool(gpu, warpgroups: int) -> int:
    """The registers a block of `warpgroups` warpgroups holds when launched with the most
    registers per thread (a multiple of 8) at which one block fits an SM of `gpu`: setmaxnreg
    moves registers within this pool, the block's own (PTX ISA)."""
    threads = warpgroups * 4 * WARP
    step = SETMAXNREG[2]
    most = limits(gpu).max_registers_per_thread
    uniform = max(r for r in range(step, most + 1, step) if occupancy(gpu, threads=threads, registers=r).blocks >= 1)
    return uniform * threads


def _consumers_share(gpu, producer_registers: int, consumers: int = 2) -> int:
    """Registers per thread each of `consumers` warpgroups may take once one producer
    warpgroup has lowered itself to `producer_registers`: what is left of the block's pool,
    over the consumers' threads, rounded down to a multiple of 8 (CUTLASS's formula)."""
    warpgroup, (_, most, step) = 4 * WARP, SETMAXNREG
    pool = _register_pool(gpu, consumers + 1)
    return min(most, (pool - warpgroup * producer_registers) // (consumers * warpgroup) // step * step)


def check_consumer_registers(answer, producer_registers: int = 40, gpu: str = "H100-SXM") -> Feedback:
    """Chapter 7: the registers per thread each of two consumer warpgroups may take with
    setmaxnreg once one producer warpgroup has lowered itself to `producer_registers`, in a
    block of three warpgroups launched with as many registers as fit (the block's pool)."""
    return _check_consumers(answer, producer_registers, 2, gpu)


def _check_consumers(answer, producer_registers: int, consumers: int, gpu: str) -> Feedback:
    """`check_consumer_registers` for a block of one producer and `consumers` consumer
    warpgroups (the checkpoint asks for one consumer, where setmaxnreg's ceiling binds)."""
    producer_registers = _check.integer("producer_registers", producer_registers, SETMAXNREG[0], SETMAXNREG[1])
    if producer_registers % SETMAXNREG[2]:
        raise ValueError(f"producer_registers must be a multiple of {SETMAXNREG[2]}, got {producer_registers!r}")
    expected = _consumers_share(gpu, producer_registers, consumers)
    if expected < SETMAXNREG[0]:
        raise ValueError(f"producer_registers leaves the consumers fewer than {SETMAXNREG[0]} registers each, "
                         f"got {producer_registers!r}")
    warpgroup, (_, most, step) = 4 * WARP, SETMAXNREG
    pool, threads = _register_pool(gpu, consumers + 1), consumers * warpgroup
    share = (pool - warpgroup * producer_registers) // threads // step * step
    whole_file = (limits(gpu).registers_per_sm // warpgroup - producer_registers) // consumers // step * step
    they = "the consumer's" if consumers == 1 else f"the {consumers} consumers'"
    explain = (f"The block holds {pool:,} registers; the producer keeps {warpgroup} x {producer_registers}, and "
               f"{they} {threads} threads share the rest, in steps of {step}.")
    if share > most:
        explain += f" That would be {share} a thread, but setmaxnreg gives a warpgroup at most {most}."
    slips = [(whole_file, "setmaxnreg moves registers within the block's own pool, not the SM's whole register "
              "file.")]
    if share > most:
        slips.append((share, "That is what the pool leaves, but setmaxnreg has a ceiling: a warpgroup may hold "
                      "no more than the top of its range."))
    return check_number(answer, expected, "registers", rtol=0, explain=explain,
                        hint=f"Find the block's pool (its launch count times its threads), take the producer's "
                        f"{warpgroup} threads' registers from it, divide by {they} {threads} threads, round down "
                        f"to a multiple of {step}, and mind setmaxnreg's range.",
                        mistakes=tuple((v, why) for v, why in slips if v != expected))


NVFP4_SHAPE = (4096, 14336)
"""The weight matrix of the NVFP4 checkpoint (a Llama-3-8B MLP projection)."""


MXFP6 = (6, 32)
"""MXFP6 (OCP MX): 6-bit values, one 8-bit scale per 32 of them, the checkpoint's format (the
chapter works MXFP8, MXFP4 and NVFP4)."""


def _check_mx_bytes(answer, value_bits: int = MXFP6[0], block: int = MXFP6[1]) -> Feedback:
    """The MiB a 4096 x 14336 weight matrix costs in a block-scaled format of `value_bits`-bit
    values with one 1-byte scale per `block` of them, its scales included (the checkpoint)."""
    rows, cols = NVFP4_SHAPE
    per_element = value_bits / 8 + 1 / block
    expected = rows * cols * per_element / 2**20
    return check_number(answer, expected, "MiB", rtol=0.001,
                        explain=f"Each weight costs {value_bits}/8 of a byte for its value and 1/{block} of a byte "
                        "for its share of the block's scale.",
                        hint="Find what one weight costs, its value's bits over 8 plus its share of a scale, then "
                        "multiply by the number of weights; a MiB is 1,048,576 bytes.",
                        mistakes=((rows * cols * value_bits / 8 / 2**20, "That leaves out the block scales: one "
                                   f"byte per {block} values."),
                                  (rows * cols * (value_bits / 8 + 1 / 16) / 2**20, "That is one scale per 16 "
                                   f"values, NVFP4's block, not this format's {block}."),
                                  (rows * cols * (1 + 1 / block) / 2**20, "That stores each value in a whole "
                                   f"byte; {value_bits} bits are {value_bits}/8 of one.")))


def check_nvfp4_bytes(answer) -> Feedback:
    """Chapter 7: the MiB a 4096 x 14336 weight matrix costs in NVFP4, its block scales
    included."""
    rows, cols = NVFP4_SHAPE
    expected = rows * cols * bytes_per_element("nvfp4") / 2**20
    return check_number(answer, expected, "MiB", rtol=0.001,
                        explain="Each weight costs half a byte for its value and a sixteenth of a byte for its "
                        "share of the block's FP8 scale.",
                        hint="Find what one NVFP4 weight costs, scale included, then multiply by the number of "
                        "weights; a MiB is 1,048,576 bytes.",
                        mistakes=((rows * cols / 2 / 2**20, "That leaves out the block scales: one FP8 byte per "
                                   "16 values."),
                                  (rows * cols * bytes_per_element("mxfp4") / 2**20, "That is one scale per 32 "
                                   "values, MXFP4's block, not NVFP4's.")))


def check_held_clock(answer, mhz: float = 1500, n: int = 8192, gpu: str = "H100-SXM") -> Feedback:
    """Chapter 7: the model's time, in milliseconds, of an n^3 fp16 GEMM on `gpu` held at
    `mhz` MHz under load (`GPU.at_clock`)."""
    g = presets.gpu(gpu)
    n = _check.one("n", n)
    work = gemm_ideal(n, n, n, "fp16")
    expected = float(predict(work, g.at_clock(mhz)).time) * 1e3
    at_top = float(predict(work, g.bound()).time) * 1e3
    return check_number(answer, expected, "ms", rtol=0.01,
                        explain="The GEMM is compute-bound, so its time is its flops over the tensor peak, and "
                        "the peak scales with the clock: FLOP per clock per SM x SMs x the held clock.",
                        hint="Count the GEMM's flops, then divide by the tensor cores' rate at the held clock: "
                        "their FLOP per clock per SM, times the SMs, times the clock.",
                        mistakes=((at_top, "That is the time at the highest clock the part reaches, the bound's "
                                   "clock, not the clock it holds."),))


VECTOR_SIZES = (2**10, 2**14, 2**18, 2**20, 2**22, 2**24)


LAUNCH_KERNELS = (10, 100, 1000)
"""How many vector adds the launch explorer offers to launch one by one (the answer holds at each)."""
LAUNCH_GPUS = tuple(sorted({cost.gpu for cost in launch_costs()}))
"""The GPUs with a published launch cost (`gpumodel/data/launch.toml`)."""
RIDGE_GPUS = ("H100-SXM", "B200")
"""The GPUs the tile explorer compares."""


def launch_bound(gpu: str = "B200") -> WidgetExercise:
    """Chapter 7: the smallest vector add (of VECTOR_SIZES, fp32) that outlasts a launch by
    torch.compile's per-kernel path on `gpu` (the exercise's what-if: the chapter works the
    driver's), so that back-to-back launches keep the GPU busy. The explorer offers every
    launch path."""
    gpu = _check.member("gpu", gpu, LAUNCH_GPUS)
    launches = {path: launch_cost(gpu, path).seconds for path in PATHS}
    host = " (launched from a GB200's Grace CPU)" if gpu == "B200" else ""

    def view(elements, kernels, path):
        launch = launches[path]
        kernel = float(predict(vector_add(elements), gpu).time)
        s = sequence_time([kernel] * kernels, launch)
        graph = sequence_time([kernel] * kernels, launch, graph=True).time
        return bars(f"{kernels} vector adds of {elements:,} floats on the {gpu}{host}, one {path} launch each "
                    f"({fmt_time(launch)}): <b>{fmt_time(s.time)}</b>, bound by <b>{s.bound}</b>, "
                    f"the GPU idle {s.idle:.0%} of it",
                    [("one kernel", kernel, fmt_time(kernel), kernel < launch),
                     ("one launch", launch, fmt_time(launch), False),
                     ("sequence", s.time, fmt_time(s.time), s.bound == "overhead"),
                     ("as a graph", graph, fmt_time(graph), False)])

    path = "inductor"
    smallest = next(n for n in VECTOR_SIZES if float(predict(vector_add(n), gpu).time) >= launches[path])
    return WidgetExercise(
        "launch-bound", {"elements": list(VECTOR_SIZES), "kernels": list(LAUNCH_KERNELS), "path": list(PATHS)}, view,
        number_rules(smallest, "elements", 0, explain="From there on each kernel takes longer on the GPU than "
                     "torch.compile's path takes to launch the next, so the launches hide behind the work.",
                     hint="Choose the inductor path; raise the size until the kernel's bar is at least as long as "
                     "the launch's."),
        "elements", asks=asked(elements=upto(VECTOR_SIZES, smallest), kernels=list(LAUNCH_KERNELS), path=path))


TILES = {"m64 (wgmma or tcgen05)": (64, False), "m128 (tcgen05, 1 CTA)": (128, False), "m256 (tcgen05, 2 CTAs)": (256, True)}
TILE_NS = (32, 64, 96, 128, 192, 256)


def tile_ridge(gpu: str = "B200", tile: str = "m128 (tcgen05, 1 CTA)") -> WidgetExercise:
    """Chapter 7: the smallest N (of TILE_NS) at which an fp16 MMA tile of `tile` reads few
    enough shared-memory bytes per FLOP to keep `gpu`'s tensor cores busy."""
    _check.member("gpu", gpu, RIDGE_GPUS)
    _check.member("tile", tile, list(TILES))

    def intensity(tile, n):
        m, pair = TILES[tile]
        return float(pair_intensity(m, n, 64) if pair else operand_intensity(m, n, 16))

    def view(gpu, tile, n):
        ridge = presets.gpu(gpu).ridge("smem", "fp16")
        value = intensity(tile, n)
        side = "below" if value < ridge else "at or past"
        return bars(f"{tile}, N = {n} on the {gpu}: <b>{fmt_intensity(value)}</b> against each SM's shared memory, "
                    f"<b>{side}</b> the ridge",
                    [("tile", value, fmt_intensity(value), value < ridge),
                     ("smem ridge", ridge, fmt_intensity(ridge), False)])

    ridge = presets.gpu(gpu).ridge("smem", "fp16")
    smallest = next((n for n in TILE_NS if intensity(tile, n) >= ridge), None)
    if smallest is None:
        raise ValueError(f"gpu and tile must give a tile that reaches the {gpu}'s shared-memory ridge "
                         f"({fmt_intensity(ridge)}) at some N of {TILE_NS}, got {gpu!r} and {tile!r}")
    return WidgetExercise(
        "tile-ridge", {"gpu": list(RIDGE_GPUS), "tile": list(TILES), "n": list(TILE_NS)}, view,
        number_rules(smallest, "columns", 0, explain="A wider tile reuses each row of A across more columns; on "
                     f"the B200 the ridge is {presets.gpu('B200').ridge('smem', 'fp16') / presets.gpu('H100-SXM').ridge('smem', 'fp16'):.2g} "
                     "times the H100's, so a tile's FLOPs per byte it reads from shared memory must be that many "
                     "times as high.",
                     hint="Fix the GPU and the tile; raise N until the tile's bar reaches the ridge."),
        "N", asks=asked(gpu=gpu, tile=tile, n=upto(TILE_NS, smallest)))


WIDGET_EXERCISES = (launch_bound, tile_ridge)
"""This chapter's widget exercises, in the order it shows them."""


def _checkpoint(key: str, question: str, unanswered: Feedback, prompt: str) -> Checkpoint:
    """A checkpoint asking `question`, judged by the rules its checker gives an unanswered call."""
    return Checkpoint(key, question, unanswered.rules, prompt)


CHECKPOINTS = {
    "cp-bw-launches": lambda: _checkpoint(
        "cp-bw-launches", "Now each of the 100 kernels takes 5 µs on the B200, and each is launched by the CUDA "
        "driver at the launch cost given above. How long does the sequence take?",
        check_launch_bound(100, 5e-6, None), "time"),
    "cp-bw-pair": lambda: _checkpoint(
        "cp-bw-pair", "A paired (2-CTA) fp16 MMA of 256 x 128: each block of the pair holds 128 rows of A and 64 "
        "columns of B. How many FLOP does each block do per byte it reads from shared memory?",
        check_pair_intensity(None, 256, 128), "intensity"),
    "cp-bw-registers": lambda: _checkpoint(
        "cp-bw-registers", "A block of two warpgroups on the H100 SXM, one producer and one consumer, is launched "
        f"with as many registers per thread as fit one block in the SM's {limits('H100-SXM').registers_per_sm:,} (a "
        "multiple of 8, and at most what a launch may give a thread). The producer lowers itself to 40. How many registers per thread can the consumer "
        "take?",
        _check_consumers(None, 40, 1, "H100-SXM"), "registers"),
    "cp-bw-nvfp4": lambda: _checkpoint(
        "cp-bw-nvfp4", "A 4096 x 14336 weight matrix (one of Llama-3-8B's MLP projections) is stored in MXFP6: "
        "6-bit values, with one 8-bit scale per 32 of them, as in MXFP8. How many MiB does it take, its scales "
        "included?",
        _check_mx_bytes(None), "size"),
    "cp-bw-held-clock": lambda: _checkpoint(
        "cp-bw-held-clock", "Now a B200 holds 1500 MHz through the same 8192³ fp16 GEMM. Its tensor cores' FLOP "
        "per clock per SM and its SMs are in the Blackwell section. What is the model's time?",
        check_held_clock(None, 1500, gpu="B200"), "time"),
}
"""This chapter's checkpoints, in the order it shows them (the checkers above judge them)."""

RELIES_ON = {
    "cp-bw-launches": ("launch_driver",),
    "cp-bw-pair": ("i_pair",),
    "cp-bw-registers": ("max_regs", "nreg_hi", "nreg_step"),
    "cp-bw-nvfp4": ("bpe_mxfp8", "mx_block"),
    "cp-bw-held-clock": ("b200_mma_clk", "b200_sms"),
    "ex-bw-explore-launch": ("launch_inductor", "vadd_bytes", "b200_hbm"),
    "ex-bw-explore-tile": ("b200_ridge", "i_m64_worked", "formulas:Feeding the tensor cores"),
}
"""What each checkpoint and exercise needs from the page above it (tests/test_checkpoints.py)."""
