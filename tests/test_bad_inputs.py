"""Every public function, driven with generated bad input (issue 17): one argument at a time
is replaced by a value that is wrong for its kind, and the call must raise a ValueError or
TypeError whose message names that parameter; never another exception, a warning or a NaN.
A learner's answer is the exception: a bad one gets a sentence (a falsy Feedback), not an
error. `SIGNATURES` lists every public callable with valid arguments and each parameter's
kind; a test fails when a public callable or a parameter is missing from it."""

import importlib
import inspect
import math
import re
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import gpumodel as gm

from gpumodel import tensor_cores as tc
from gpumodel.hardware import KINDS, LEVELS, MATH
from gpumodel import course
from gpumodel.course.widgets import GPUS, WidgetExercise

A100 = gm.gpu("A100-40GB")
PRESETS = set(gm.preset_names())

# Bad values by kind; each is wrong for every parameter of its kind.
NOT_NUMBERS = [None, True, False, np.bool_(True), "4096", b"4", np.array(["4096"]), np.datetime64("2020-01-01"),
               [], {}, {0: 8}, 1j, object(), [4, None], np.array([]), np.array([True])]
NON_FINITE = [float("nan"), float("inf"), -float("inf"), np.float32("nan"), np.array([4.0, np.nan])]


def _not_a_size(x) -> bool:
    return not (math.isfinite(x) and float(x).is_integer() and 1 <= x <= 2**53)


SIZE = st.one_of(st.sampled_from(NOT_NUMBERS + NON_FINITE + [np.array([4, 0]), np.array([4.5])]),
                 st.integers(max_value=0), st.integers(min_value=2**53 + 1),
                 st.floats().filter(_not_a_size))
"""Not a size: not a number, not finite, not whole, not positive, or past 2**53."""
COUNT = st.one_of(st.sampled_from(NOT_NUMBERS + NON_FINITE), st.integers(max_value=-1),
                  st.floats(allow_nan=False, allow_infinity=False).filter(lambda x: x < 0 or not x.is_integer()))
AMOUNT = st.one_of(st.sampled_from(NOT_NUMBERS + NON_FINITE), st.floats(max_value=-1e-300))
REAL = st.sampled_from(NOT_NUMBERS + NON_FINITE + [np.array([1.0, 2.0]), "1.0"])
POSITIVE = st.one_of(REAL, st.floats(max_value=0), st.integers(max_value=0))
MHZ = st.one_of(POSITIVE, st.floats(min_value=0, max_value=99.99), st.floats(min_value=5000.01))
"""Not a clock in MHz a GPU runs at (PLAUSIBLE: 100 to 5000)."""
NOT_NEGATIVE = st.one_of(REAL, st.floats(max_value=-1e-300))
FLAG = st.sampled_from([0, 1, 1.0, "True", "", None, [True], np.array([True, False])])
NOT_STRINGS = [None, 1, 2.5, True, [], ["fp16"], {"hbm": 1}, b"fp16", np.array(["fp16", "fp32"])]
ANSWER = st.sampled_from([True, False, np.bool_(False), [1.0], (2, 3), {1: 2}, {1.0}, float("nan"), float("inf"),
                          np.array([1.0, 2.0]), np.array([3.0]), "", "three", "3 furlongs", "nan", object()])
"""Not one finite real number (typed text in the question's unit, such as "3 ms", is one); None is valid (not answered yet)."""
ARRAY = st.sampled_from(NOT_NUMBERS + NON_FINITE + [np.full((4, 4), np.nan), np.full((4, 4), -np.inf),
                                                     np.full((1, 1, 4, 4), np.inf), "abc"])
ADDRESSES = st.sampled_from([None, "x", [], [0] * 129, np.full(32, 0.5), np.full(32, -1), np.full(32, np.nan),
                             np.arange(256).reshape(2, 128), [True] * 32, {}])
"""Not the word addresses of one warp access (1 to 128 non-negative integers)."""


def choice(accepted):
    """Not one of the strings `accepted`."""
    return st.one_of(st.text(max_size=8).filter(lambda s: s not in accepted), st.sampled_from(NOT_STRINGS))


def integer(least, most):
    """Not an integer from `least` to `most`."""
    return st.one_of(st.integers(max_value=least - 1), st.integers(min_value=most + 1),
                     st.floats(), st.sampled_from(NOT_NUMBERS + [np.float64(1.0)]))


def outside(menu):
    """Not one of `menu` (a widget control's options): another string or number, a number for a
    string, a string for a number, a bool, a list."""
    menu = list(menu)
    wrong = NOT_NUMBERS + NON_FINITE + [[menu[0]], (menu[0],)]
    if all(isinstance(v, str) for v in menu):
        return st.one_of(st.text(max_size=12).filter(lambda s: s not in menu), st.sampled_from(wrong + [1, 2.5]))
    wrong += [str(menu[0]), np.array(menu[:2])]
    return st.one_of(st.integers().filter(lambda v: v not in menu), st.floats().filter(lambda v: v not in menu),
                     st.sampled_from(wrong))


def tile(valid):
    """Not a tile like `valid` (a tuple of sizes): a wrong length, not a sequence, or one bad size."""
    n = len(valid)
    wrong = [(), (8,), (8, 8, 8, 8), {0: 8, 1: 8}, np.array(8), np.array([[8] * n]), "8" * n, 8, None, True]
    wrong = [w for w in wrong if not (isinstance(w, tuple) and len(w) == n)]
    one_bad = st.tuples(st.integers(0, n - 1), SIZE).map(lambda ib: valid[:ib[0]] + (ib[1],) + valid[ib[0] + 1:])
    return st.one_of(st.sampled_from(wrong), one_bad)


GPU = st.one_of(choice(PRESETS), st.sampled_from([40, ("A100-40GB",)]))
WORKLOAD = st.sampled_from(["gemm", None, 5, {}, gm.vector_add, (gm.vector_add(4),)])
BYTES = st.one_of(st.sampled_from([None, [], {}, {"hbm": 1.0}, "hbm", {lv: 0.0 for lv in LEVELS[:-1]}]),
                  AMOUNT.map(lambda v: {**{lv: 1.0 for lv in LEVELS}, "hbm": v}))
RULES = st.sampled_from([None, {}, {"kind": "text"}, [], "number", gm.course.checks.number_rules])
UNIT_TABLES = st.sampled_from([[], "ms", {"ms": 0}, {"ms": "1"}, {1: 1.0}, {"ms": float("nan")}, {"ms": True}])
ROWS = st.sampled_from([None, 5, "x", [5], [(1.0,)], [(1.0, 2)], [("1", "hint")], [(float("nan"), "hint")], [(True, "hint")]])
HINTS = st.sampled_from([None, [], "b", {1: "hint"}, {None: "hint"}, {"a100": "the answer is no hint"}])

CHAPTER = st.one_of(st.integers().filter(lambda v: v not in gm.published.CHAPTERS), st.floats(),
                    st.sampled_from([v for v in NOT_NUMBERS if v is not None] + [np.float64(1.0)]))  # None: every chapter
ATTENTION_RUN = {"kind": "attention", "batch": 2, "heads": 4, "seq": 256, "head_dim": 64, "attention": "flash",
                 "passes": "forward"}
RUNS = st.sampled_from([None, {}, [], "attention", {**ATTENTION_RUN, "kind": "gemm"}, {**ATTENTION_RUN, "seq": -256},
                        {**ATTENTION_RUN, "seq": 2.5}, {**ATTENTION_RUN, "heads": True}, {**ATTENTION_RUN, "passes": "backward"},
                        {**ATTENTION_RUN, "colour": 1}, {k: v for k, v in ATTENTION_RUN.items() if k != "batch"}])
"""Not an attention run's table: not a table, another kind, a key missing or unknown, a field of the wrong kind."""
RECORD = gm.published.comparisons()[0].record
WHATS = {r.what for r in gm.published.records()}
RUNNING = st.sampled_from(NOT_NUMBERS + [np.full((2, 1), np.nan), np.full((2, 1), np.inf), np.zeros((3, 1)), "abc"])
"""Not a running statistic of shape (2, 1) or (2, 3): not numbers, NaN, +inf, a wrong shape."""
FP32_GEMM = next(r for r in gm.published.records() if r.run["kind"] == "gemm" and "block" in r.run
                 and r.run.get("dtype", "fp32") == "fp32")
"""A record of a tiled FP32 GEMM: its launch is known (`record_launch`)."""
RECORDS = st.sampled_from([None, "boehm2022sgemm", 5, {}, [RECORD], (RECORD,), RECORD.run, vars(RECORD)])
"""Not a published Record: its source, its run, its fields as a table, a list of it."""
LAUNCHES = st.sampled_from([None, "gemm", 5, {}, [], {"threads": 256, "blocks": 4}, (256, 4), gm.expected.gemm_launch])
"""Not a Launch (None is one for a parameter that may be None: filtered there)."""
SHARES = st.sampled_from([[], "sm", {"sm": 0}, {"sm": -0.5}, {"sm": 1.5}, {"sm": float("nan")}, {"sm": True},
                          {"sm": "0.5"}, {1: 0.5}, {"colour": 0.5}, {None: 0.5}])
"""Not a table of share class to share in (0, 1]."""
FRACTION = st.one_of(REAL, st.floats(max_value=0), st.floats(min_value=1.0001))
"""Not a share in (0, 1]."""
PROBABILITY = st.one_of(AMOUNT, st.floats(min_value=1.0001, allow_nan=False, allow_infinity=False))
"""Not a probability in [0, 1]."""
EXERCISE = WidgetExercise("test", {"x": [1]}, lambda x: "", gm.course.checks.number_rules(3.0, "ms"), "Time:")

A, B = np.ones((16, 8)), np.ones((8, 16))
Q = np.ones((1, 1, 16, 8))
NOTHING = {lv: 0.0 for lv in LEVELS}

TEXT = "free text, printed as given"
"""The kind of a parameter that takes any value: names, units, notes, explanations."""
NOT_TEXT = st.sampled_from([s for s in NOT_STRINGS if not isinstance(s, str)])
"""Not text: a parameter a learner reads as words (a unit, a hint, a prompt) refuses these."""

SIGNATURES = {
    # key -> (callable, {parameter: (valid value, kind of bad value)})
    "workloads.Workload": (gm.Workload, {"name": ("w", TEXT), "flops": (1.0, AMOUNT), "bytes": (NOTHING, BYTES),
                                         "math": ("fp32", choice(MATH)), "note": ("", TEXT), "special": (0, AMOUNT)}),
    "workloads.vector_add": (gm.vector_add, {"n": (64, SIZE)}),
    "workloads.elementwise_chain": (gm.elementwise_chain, {"n": (64, SIZE), "ops": (3, SIZE), "fused": (False, FLAG),
                                                           "dtype": ("fp32", choice(("fp32", "fp16", "bf16")))}),
    "workloads.gemm": (gm.gemm, {"m": (64, SIZE), "n": (64, SIZE), "k": (64, SIZE), "block": ((16, 16), tile((16, 16)).filter(lambda b: b is not None)),
                                 "thread": ((2, 2), tile((2, 2))), "dtype": ("fp32", choice(("fp32", "fp16", "bf16"))),
                                 "l2_reuse": (True, FLAG), "layout": ("strided", choice(gm.workloads.LAYOUTS))}),
    "workloads.operand_wavefronts": (gm.workloads.operand_wavefronts, {"block": ((128, 128, 8), tile((128, 128, 8))),
                                                                       "thread": ((8, 8), tile((8, 8))),
                                                                       "layout": ("warp_tiled", choice(gm.workloads.LAYOUTS))}),
    "workloads.operand_load_instructions": (gm.workloads.operand_load_instructions,
                                            {"thread": ((8, 8), tile((8, 8))), "layout": ("strided", choice(gm.workloads.LAYOUTS))}),
    "workloads.kernel_gemm": (gm.workloads.kernel_gemm, {"kernel": ("gemm_smem16", choice(["gemm_smem16", "gemm_reg128"])),
                                                         "m": (64, SIZE), "n": (64, SIZE), "k": (64, SIZE),
                                                         "dtype": ("fp32", choice(("fp32", "fp16", "bf16")))}),
    "workloads.gemm_requests": (gm.gemm_requests, {"m": (64, SIZE), "n": (64, SIZE), "k": (64, SIZE),
                                                   "dtype": ("fp32", choice(("fp32", "fp16", "bf16")))}),
    "workloads.gemm_ideal": (gm.gemm_ideal, {"m": (64, SIZE), "n": (64, SIZE), "k": (64, SIZE),
                                             "dtype": ("fp16", choice(("fp32", "fp16", "bf16")))}),
    "workloads.attention": (gm.attention, {"batch": (2, SIZE), "heads": (4, SIZE), "seq": (256, SIZE), "head_dim": (64, SIZE),
                                           "dtype": ("fp16", choice(("fp32", "fp16", "bf16"))),
                                           "kind": ("flash", choice(("standard", "flash", "flash1"))),
                                           "block": ((128, 64), tile((128, 64))), "l2_reuse": (False, FLAG)}),
    "workloads.attention_backward": (gm.attention_backward, {
        "batch": (2, SIZE), "heads": (4, SIZE), "seq": (256, SIZE), "head_dim": (64, SIZE),
        "dtype": ("fp16", choice(("fp32", "fp16", "bf16"))), "kind": ("flash", choice(("standard", "flash"))),
        "block": ((128, 128), tile((128, 128))), "l2_reuse": (False, FLAG)}),
    "workloads.attention_memory": (gm.attention_memory, {
        "batch": (2, SIZE), "heads": (4, SIZE), "seq": (256, SIZE), "head_dim": (64, SIZE),
        "dtype": ("fp16", choice(("fp32", "fp16", "bf16"))), "kind": ("standard", choice(("standard", "flash")))}),
    "workloads.score_matrix_bytes": (gm.score_matrix_bytes, {"batch": (2, SIZE), "heads": (4, SIZE), "seq": (256, SIZE),
                                                             "dtype": ("fp16", choice(("fp32", "fp16", "bf16")))}),
    "workloads.transpose": (gm.transpose, {"n": (64, SIZE), "padded": (True, FLAG)}),
    "workloads.warp_sectors": (gm.warp_sectors, {"stride": (2, SIZE), "elem_bytes": (4, SIZE)}),
    "workloads.strided_read": (gm.strided_read, {"n": (1024, SIZE), "stride": (2, SIZE)}),
    "workloads.flash_block": (gm.flash_block, {"sram_bytes": (100_000, SIZE), "head_dim": (64, SIZE),
                                               "dtype": ("fp16", choice(("fp32", "fp16", "bf16")))}),
    "model.predict": (gm.predict, {"workload": (gm.vector_add(64), WORKLOAD), "gpu": ("A100-40GB", GPU)}),
    "simulate.naive_gemm": (gm.simulate.naive_gemm, {"a": (A, ARRAY), "b": (B, ARRAY),
                                                     "dtype": ("fp32", choice(("fp32", "fp16", "bf16")))}),
    "simulate.tiled_gemm": (gm.simulate.tiled_gemm, {"a": (A, ARRAY), "b": (B, ARRAY), "block": ((8, 8, 4), tile((8, 8, 4))),
                                                     "thread": ((2, 2), tile((2, 2))),
                                                     "dtype": ("fp32", choice(("fp32", "fp16", "bf16"))),
                                                     "layout": ("strided", choice(gm.workloads.LAYOUTS))}),
    "simulate.operand_loads": (gm.simulate.operand_loads, {"block": ((64, 64, 8), tile((64, 64, 8))),
                                                           "thread": ((4, 4), tile((4, 4))),
                                                           "layout": ("warp_tiled", choice(gm.workloads.LAYOUTS))}),
    "simulate.counted_operand_wavefronts": (gm.simulate.counted_operand_wavefronts, {
        "block": ((64, 64, 8), tile((64, 64, 8))), "thread": ((4, 4), tile((4, 4))),
        "layout": ("warp_tiled", choice(gm.workloads.LAYOUTS))}),
    "simulate.bank_conflicts": (gm.simulate.bank_conflicts, {"addresses": (np.arange(32), ADDRESSES)}),
    "simulate.wavefronts": (gm.simulate.wavefronts, {"addresses": (np.arange(32), ADDRESSES)}),
    "simulate.warp_addresses": (gm.simulate.warp_addresses, {"shape": ((32, 32), tile((32, 32))),
                                                             "pad": (1, integer(0, 2**20)),
                                                             "direction": ("column", choice(("row", "column"))),
                                                             "index": (3, integer(0, 31))}),
    "simulate.ring_allreduce": (gm.simulate.ring_allreduce, {"x": (np.ones((4, 8)), ARRAY)}),
    **{f"collectives.{f.__name__}": (f, {"collective": ("all-reduce", choice(gm.collectives.COLLECTIVES)),
                                         "gpus": (8, SIZE), "algorithm": ("ring", choice(gm.collectives.ALGORITHMS))}
                                     | ({} if f is gm.collectives.steps else {"message": (2.0**20, AMOUNT)}))
       for f in (gm.collectives.bytes_sent, gm.collectives.steps)},
    "collectives.collective_time": (gm.collectives.collective_time, {
        "collective": ("all-reduce", choice(gm.collectives.COLLECTIVES)), "gpus": (8, SIZE), "message": (2.0**20, AMOUNT),
        "bandwidth": (450e9, st.one_of(AMOUNT, st.sampled_from([0, 0.0]))), "latency": (3e-6, AMOUNT),
        "base": (6e-6, AMOUNT), "algorithm": ("ring", choice(gm.collectives.ALGORITHMS))}),
    "collectives.hierarchical_bytes": (gm.collectives.hierarchical_bytes, {"gpus": (16, SIZE), "per_node": (8, SIZE),
                                                                          "message": (2.0**20, AMOUNT)}),
    "collectives.hierarchical_time": (gm.collectives.hierarchical_time, {
        "gpus": (16, SIZE), "per_node": (8, SIZE), "message": (2.0**20, AMOUNT),
        "node_bandwidth": (450e9, st.one_of(AMOUNT, st.sampled_from([0, 0.0]))),
        "network_bandwidth": (50e9, st.one_of(AMOUNT, st.sampled_from([0, 0.0]))),
        "node_latency": (6e-7, AMOUNT), "network_latency": (2.7e-6, AMOUNT), "base": (6.6e-6, AMOUNT)}),
    "collectives.bus_bandwidth": (gm.collectives.bus_bandwidth, {
        "collective": ("all-reduce", choice(gm.collectives.COLLECTIVES)), "gpus": (8, SIZE), "message": (2.0**20, AMOUNT),
        "seconds": (1e-3, st.one_of(AMOUNT, st.sampled_from([0, 0.0])))}),
    "simulate.transpose": (gm.simulate.transpose, {"x": (np.ones((40, 40)), ARRAY), "padded": (True, FLAG)}),
    "simulate.standard_attention": (gm.simulate.standard_attention, {
        "q": (Q, ARRAY), "k": (Q, ARRAY), "v": (Q, ARRAY), "dtype": ("fp16", choice(("fp32", "fp16", "bf16")))}),
    "simulate.online_softmax_step": (gm.simulate.online_softmax_step, {
        "m": (np.full((2, 1), -np.inf), RUNNING), "l": (np.zeros((2, 1)), RUNNING), "acc": (np.zeros((2, 3)), RUNNING),
        "scores": (np.ones((2, 4)), ARRAY), "values": (np.ones((4, 3)), ARRAY)}),
    "simulate.online_softmax": (gm.simulate.online_softmax, {"x": (np.ones((3, 7)), ARRAY), "block": (3, SIZE)}),
    "simulate.flash_attention": (gm.simulate.flash_attention, {
        "q": (Q, ARRAY), "k": (Q, ARRAY), "v": (Q, ARRAY), "block": ((8, 4), tile((8, 4))),
        "dtype": ("fp16", choice(("fp32", "fp16", "bf16")))}),
    "simulate.sectors_touched": (gm.simulate.sectors_touched, {"byte_addresses": (np.arange(32) * 4, ADDRESSES)}),
    "simulate.strided_read": (gm.simulate.strided_read, {"x": (np.ones(100), ARRAY), "stride": (3, SIZE)}),
    "occupancy.limits": (gm.occupancy.limits, {"gpu": ("A100-40GB", GPU)}),
    "occupancy.occupancy": (gm.occupancy.occupancy, {"gpu": ("A100-40GB", GPU), "threads": (256, SIZE),
                                                     "registers": (32, SIZE), "smem": (4096, COUNT)}),
    "waves.block_coordinates": (gm.waves.block_coordinates, {"rows": (6, SIZE), "cols": (5, SIZE),
                                                             "order": ("grouped", choice(("row", "grouped"))),
                                                             "group": (4, SIZE)}),
    "waves.gemm_hbm": (gm.waves.gemm_hbm, {
        "m": (1024, SIZE), "n": (1024, SIZE), "k": (512, SIZE), "block": ((128, 128), tile((128, 128))),
        "dtype": ("fp16", choice(("fp32", "fp16", "bf16"))), "gpu": ("A100-40GB", GPU), "blocks_per_sm": (2, SIZE),
        "order": ("grouped", choice(("row", "grouped"))), "group": (4, SIZE),
        "l2_bytes": (2**20, SIZE.filter(lambda v: v is not None)), "drift_k": (64, SIZE.filter(lambda v: v is not None))}),
    "waves.warm_read_time": (gm.waves.warm_read_time, {"gpu": ("A100-40GB", GPU), "nbytes": (2**21, SIZE),
                                                       "chunk": (2**19, SIZE.filter(lambda v: v is not None)),
                                                       "threads": (1024, SIZE.filter(lambda v: v is not None)),
                                                       "cache": ("best", choice(("best", "recent")))}),
    "waves.l1_hits": (gm.waves.l1_hits, {"gpu": ("A100-40GB", GPU), "nbytes": (2**21, SIZE), "chunk": (2**19, SIZE),
                                         "threads": (1024, SIZE)}),
    "waves.l1_share": (gm.waves.l1_share, {"gpu": ("A100-40GB", GPU), "nbytes": (2**21, SIZE), "chunk": (2**19, SIZE),
                                           "threads": (1024, SIZE)}),
    "tiles.registers_estimate": (gm.tiles.registers_estimate, {"t_m": (8, SIZE), "t_n": (8, SIZE)}),
    "tiles.smem_bytes": (gm.tiles.smem_bytes, {"b_m": (128, SIZE), "b_n": (128, SIZE), "bk": (8, SIZE)}),
    "tiles.is_legal": (gm.tiles.is_legal, {"gpu": ("A100-40GB", GPU), "b_m": (128, SIZE), "b_n": (128, SIZE),
                                           "t_m": (8, SIZE), "t_n": (8, SIZE)}),
    "tiles.search": (gm.tiles.search, {"gpu": ("A100-40GB", GPU), "m": (512, SIZE), "n": (512, SIZE), "k": (512, SIZE)}),
    "hardware.Fact": (gm.Fact, {"value": (1.0, POSITIVE), "unit": ("B", TEXT), "kind": ("spec", choice(KINDS)),
                                "source": ("nvidia_cuda_guide", TEXT), "where": ("", TEXT), "note": ("", TEXT)}),
    "GPU.peak": (A100.peak, {"math": ("fp16", choice(MATH))}),
    "GPU.running": (gm.gpu("H100-SXM").running, {"math": ("fp16", choice(MATH))}),
    "GPU.at_clock": (gm.gpu("H100-SXM").at_clock, {"mhz": (1500, MHZ)}),
    "GPU.ridge": (gm.gpu("H100-SXM").ridge, {"level": ("smem", choice(LEVELS)), "math": ("fp16", choice(MATH))}),
    "GPU.bandwidth": (A100.bandwidth, {"level": ("l2", choice(LEVELS))}),
    "GPU.capacity": (A100.capacity, {"level": ("l2", choice(LEVELS))}),
    "GPU.in_flight": (A100.in_flight, {"level": ("hbm", choice(tuple(A100.latency)))}),
    "presets.capability": (gm.presets.capability, {"version": ("8.0", st.one_of(
        choice([c.name for c in gm.presets.capabilities().values()]),
        st.sampled_from([(8, 1), (8,), [8, 0], (True, 0), ("x", "y")])))}),
    "presets.gpu": (gm.gpu, {"gpu": ("A100-40GB", GPU)}),
    "presets.match_device": (gm.presets.match_device, {"device_name": ("NVIDIA H200", st.sampled_from(NOT_STRINGS)),
                                                       "version": ("9.0", st.sampled_from(["9.9", "6.1", (9,), 9.0, None,
                                                                                          "nine"]))}),
    "kernel_info.label": (gm.label, {"kernel": ("gemm_naive", choice(gm.kernel_info.KERNELS))}),
    **{f"units.{f.__name__}": (f, {name: (1.5e-3, REAL), "digits": (3, integer(1, 17))}) for f, name in (
        (gm.fmt_time, "seconds"), (gm.fmt_bytes, "nbytes"), (gm.fmt_bandwidth, "bytes_per_second"),
        (gm.fmt_flops, "flops_per_second"), (gm.fmt_count, "flops"), (gm.fmt_number, "x"),
        (gm.fmt_intensity, "flops_per_byte"), (gm.fmt_percent, "fraction"))},
    "units.fmt_list": (gm.fmt_list, {"words": (["T4", "L4"], st.sampled_from(["T4", [], [""], [4], None, 4]))}),
    "units.fmt_capacity": (gm.fmt_capacity, {"nbytes": (40 * 2**20, REAL)}),
    "units.fmt_exact": (gm.units.fmt_exact, {"x": (5.369e8, REAL)}),
    "units.superscript": (gm.units.superscript, {"power": (18, st.sampled_from([None, "1", 1.5, True, 10**7, -10**7]))}),
    "units.powers": (gm.units.powers, {"text": ("8192^3", st.sampled_from(NOT_STRINGS))}),
    "units.fmt_bound": (gm.fmt_bound, {"bound": ("hbm", choice(gm.BOUNDS))}),
    "course.checks.number_rules": (gm.course.checks.number_rules, {"expected": (3.0, REAL), "unit": ("ms", NOT_TEXT), "rtol": (0.02, NOT_NEGATIVE),
                                                 "explain": ("", NOT_TEXT), "hint": ("", NOT_TEXT), "doubled": ("", NOT_TEXT),
                                                 "mistakes": (((6.0, "doubled"),), ROWS), "ranges": (((0, 1, "a fraction"),), ROWS),
                                                 "units": ({"s": 1e3}, UNIT_TABLES), "whole": (False, FLAG)}),
    "course.checks.choice_rules": (gm.course.checks.choice_rules, {"answer": ("A100", st.sampled_from(NOT_STRINGS)),
                                                 "wrong": ({"H100": "faster"}, HINTS), "explain": ("", TEXT)}),
    "course.checks.verdict": (gm.course.checks.verdict, {"rules": (gm.course.checks.number_rules(3.0, "ms"), RULES), "answer": (3.0, ANSWER)}),
    "course.checks.units_as": (gm.course.checks.units_as, {"unit": ("ms", choice(tuple(gm.course.checks.TIMES))),
                                                            "table": (gm.course.checks.TIMES, UNIT_TABLES)}),
    "course.checks.read_number": (gm.course.checks.read_number, {"text": ("8e6", TEXT),
                                                                  "units": ({"ms": 1.0}, UNIT_TABLES)}),
    "course.checks.check_number": (gm.course.checks.check_number, {"answer": (3.0, ANSWER), "expected": (3.0, REAL), "unit": ("ms", TEXT),
                                                 "rtol": (0.02, NOT_NEGATIVE), "explain": ("", TEXT), "hint": ("", TEXT),
                                                 "key": ("", TEXT)}),
    "course.programming_model.check_blocks": (gm.course.programming_model.check_blocks, {
        "n": (1000, SIZE), "threads": (256, SIZE), "answer": (4, ANSWER)}),
    "course.programming_model.warp_load_sectors": (gm.course.programming_model.warp_load_sectors, {
        "elem_bytes": (4, SIZE), "stride": (2, SIZE)}),
    "course.programming_model.check_sectors": (gm.course.programming_model.check_sectors, {
        "elem_bytes": (4, SIZE), "stride": (2, SIZE), "answer": (8, ANSWER)}),
    "course.hierarchy.check_bound": (gm.course.hierarchy.check_bound, {"kernel": ("gemm_reg128", choice(gm.seed_kernels())),
                                               "gpu": ("A100-40GB", GPU), "answer": ("compute", ANSWER)}),
    "course.hierarchy.check_fmas_per_load": (gm.course.hierarchy.check_fmas_per_load, {"gpu": ("A100-40GB", GPU), "answer": (14, ANSWER)}),
    "course.intensity.check_fusion_limit": (gm.course.intensity.check_fusion_limit, {"gpu": ("A100-40GB", GPU),
                                                             "dtype": ("fp32", choice(("fp32", "fp16", "bf16"))),
                                                             "answer": (3.0, ANSWER)}),
    "course.tiling.check_operand_tile": (gm.course.tiling.check_operand_tile, {"gpu": ("A100-40GB", GPU), "answer": (8, ANSWER)}),
    "course.roofline_levels.check_l2_tile": (gm.course.roofline_levels.check_l2_tile, {"gpu": ("A100-40GB", GPU), "size": (8192, SIZE), "answer": (128, ANSWER)}),
    "course.flashattention.check_attention_limit": (gm.course.flashattention.check_attention_limit, {"head_dim": (64, SIZE),
                                                                   "dtype": ("fp16", choice(("fp32", "fp16", "bf16"))),
                                                                   "answer": (16, ANSWER)}),
    "course.appendix_presets.check_hbm_bytes_per_clock": (gm.course.appendix_presets.check_hbm_bytes_per_clock, {"gpu": ("A100-40GB", GPU), "answer": (10, ANSWER)}),
    "course.tiling.check_padding": (gm.course.tiling.check_padding, {"rows": (32, SIZE), "cols": (32, SIZE), "answer": (1, ANSWER)}),
    "course.tiling.check_occupancy": (gm.course.tiling.check_occupancy, {"gpu": ("A100-40GB", GPU), "threads": (256, SIZE),
                                                       "registers": (32, SIZE), "smem": (0, COUNT), "answer": (64, ANSWER)}),
    "course.flashattention.check_flash_block": (gm.course.flashattention.check_flash_block, {"sram_bytes": (100_000, SIZE), "head_dim": (64, SIZE),
                                                           "dtype": ("fp16", choice(("fp32", "fp16", "bf16"))),
                                                           "answer": (64, ANSWER)}),
    "course.model_vs_measurements.check_bound_fraction": (gm.course.model_vs_measurements.check_bound_fraction, {"gpu": (RECORD.gpu, GPU),
                                                                 "what": (RECORD.what, choice(WHATS)),
                                                                 "answer": (0.5, ANSWER)}),
    "tensor_cores.mma_tile": (tc.mma_tile, {"m": (64, SIZE), "n": (128, SIZE), "k": (16, SIZE),
                                            "dtype": ("fp16", choice(("fp32", "fp16", "bf16"))),
                                            "a_in_registers": (True, FLAG)}),
    "tensor_cores.operand_intensity": (tc.operand_intensity, {"m": (64, SIZE), "n": (128, SIZE), "k": (16, SIZE),
                                                              "dtype": ("fp16", choice(("fp32", "fp16", "bf16"))),
                                                              "a_in_registers": (False, FLAG)}),
    "tensor_cores.swizzled_addresses": (tc.swizzled_addresses, {"shape": ((32, 32), tile((32, 32))),
                                                                "direction": ("row", choice(("row", "column"))),
                                                                "index": (5, integer(0, 31))}),
    "tensor_cores.ldmatrix_addresses": (tc.ldmatrix_addresses, {"row_bytes": (128, SIZE), "chunk": (2, integer(0, 7)),
                                                                "swizzled": (True, FLAG)}),
    "tensor_cores.cluster_gemm": (tc.cluster_gemm, {"m": (1024, SIZE), "n": (1024, SIZE), "k": (1024, SIZE),
                                                    "block": ((128, 256), tile((128, 256))),
                                                    "thread": ((64, 256), tile((64, 256))),
                                                    "cluster": ((2, 1), tile((2, 1))),
                                                    "dtype": ("fp16", choice(("fp32", "fp16", "bf16")))}),
    "tensor_cores.pipeline": (tc.pipeline, {"gpu": ("A100-40GB", GPU), "block": ((128, 128), tile((128, 128))),
                                            "bk": (64, SIZE), "dtype": ("fp16", choice(("fp16", "bf16"))),
                                            "level": ("hbm", choice(tuple(A100.latency)))}),
    "tensor_cores.wave_quantisation": (tc.wave_quantisation, {"m": (4096, SIZE), "n": (4096, SIZE), "block": ((128, 256), tile((128, 256))),
                                      "gpu": ("A100-40GB", GPU), "blocks_per_sm": (2, SIZE)}),
    "tensor_cores.split_k_bytes": (tc.split_k_bytes, {"m": (4096, SIZE), "n": (4096, SIZE), "splits": (4, SIZE),
                                                      "partial_bytes": (4, SIZE)}),
    "tensor_cores.split_k_time": (tc.split_k_time, {"m": (4096, SIZE), "n": (4096, SIZE), "splits": (4, SIZE),
                                                    "gpu": ("H100-SXM", GPU), "math": ("fp16", choice(gm.hardware.MATH)),
                                                    "partial_bytes": (4, SIZE)}),
    "course.flashattention.tensor_over_sfu": (gm.course.flashattention.tensor_over_sfu,
                                              {"gpu": ("H100-SXM", GPU), "math": ("fp16", choice(gm.hardware.MATH))}),
    "course.hierarchy.smem_bytes_per_flop": (gm.course.hierarchy.smem_bytes_per_flop,
                                             {"kernel": ("gemm_smem16", choice(["gemm_smem16", "gemm_reg128"]))}),
    "tensor_cores.stream_k": (tc.stream_k, {"tiles": (200, SIZE), "k_steps": (64, SIZE), "sms": (132, SIZE)}),
    "course.tensor_cores.check_operand_n": (gm.course.tensor_cores.check_operand_n, {"gpu": ("H100-SXM", GPU), "answer": (64, ANSWER),
                                                          "m": (64, SIZE),
                                                          "dtype": ("fp16", choice(("fp32", "fp16", "bf16")))}),
    "course.tensor_cores.check_critical_batch": (gm.course.tensor_cores.check_critical_batch, {"gpu": ("A100-40GB", GPU), "width": (4096, SIZE),
                                                                    "weight": ("int8", choice(tc.WEIGHT_BYTES)),
                                                                    "answer": (100, ANSWER)}),
    "course.tensor_cores.check_last_wave": (gm.course.tensor_cores.check_last_wave, {"m": (4096, SIZE), "n": (4096, SIZE),
                                                          "block": ((128, 256), tile((128, 256))),
                                                          "gpu": ("A100-40GB", GPU), "answer": (0.5, ANSWER)}),
    "published.comparisons": (gm.published.comparisons, {"chapter": (3, CHAPTER), "rated": (False, FLAG)}),
    "occupancy.consumer_registers": (gm.occupancy.consumer_registers, {"gpu": ("H100-SXM", GPU),
                                                                       "producer_registers": (40, integer(24, 256)),
                                                                       "consumers": (2, integer(1, 8)),
                                                                       "producers": (1, integer(1, 8))}),
    "overhead.launch_cost": (gm.overhead.launch_cost, {"gpu": ("B200", GPU), "path": ("driver", choice(gm.overhead.PATHS))}),
    "overhead.sequence_time": (gm.overhead.sequence_time, {"kernel_times": ([1e-6, 2e-6], st.one_of(AMOUNT, st.just([1e-6, 1e308]))),
                                                           "launch": (3e-6, st.one_of(NOT_NEGATIVE, st.floats(min_value=1.01e150))),
                                                           "graph": (False, FLAG)}),
    "overhead.predict_sequence": (gm.overhead.predict_sequence, {
        "workloads": ([gm.vector_add(64)] * 3, st.sampled_from(["gemm", None, 5, {}, [], gm.vector_add(4), [None],
                                                                 (gm.vector_add, )])),
        "gpu": ("B200", GPU), "path": ("driver", choice(gm.overhead.PATHS)), "graph": (False, FLAG)}),
    "blackwell.accumulator_registers": (gm.blackwell.accumulator_registers, {"m": (128, SIZE), "n": (256, SIZE),
                                                                             "threads": (128, SIZE)}),
    "blackwell.tmem_columns": (gm.blackwell.tmem_columns, {"m": (128, SIZE), "n": (256, SIZE)}),
    **{f"blackwell.{f.__name__}": (f, {"m": (256, SIZE), "n": (256, SIZE), "k": (64, SIZE),
                                       "dtype": ("fp16", choice(("fp32", "fp16", "bf16")))})
       for f in (gm.blackwell.pair_tile, gm.blackwell.pair_intensity)},
    **{f"blackwell.{f.__name__}": (f, {"gpu": ("B200", GPU), "math": ("fp16", choice(MATH))})
       for f in (gm.blackwell.mma_per_clock, gm.blackwell.smem_ridge, gm.blackwell.tensor_per_exp)},
    "blackwell.exp_over_mma": (gm.blackwell.exp_over_mma, {"gpu": ("B200", GPU), "head_dim": (128, SIZE),
                                                           "math": ("fp16", choice(MATH))}),
    "blackwell.emulated_share": (gm.blackwell.emulated_share, {"gpu": ("B200", GPU),
                                                               "fma_per_exp": (8, st.one_of(REAL, st.floats(max_value=0.99)))}),
    "blackwell.tile_schedule": (gm.blackwell.tile_schedule, {"tiles": (400, SIZE.filter(lambda v: not (isinstance(v, int) and v > 2**24))),
                                                             "sms": (100, SIZE.filter(lambda v: not (isinstance(v, int) and v > 2**16))),
                                                             "late_sms": (20, integer(0, 100)), "delay": (4.0, NOT_NEGATIVE),
                                                             "dynamic": (True, FLAG)}),
    "low_precision.wgmma_k": (gm.low_precision.wgmma_k, {"dtype": ("fp8", choice(gm.low_precision.ELEMENT_BYTES))}),
    "low_precision.promotion_flops": (gm.low_precision.promotion_flops, {"k": (4096, SIZE), "interval": (128, SIZE)}),
    "low_precision.bytes_per_element": (gm.low_precision.bytes_per_element, {"fmt": ("nvfp4", choice(gm.low_precision.FORMATS))}),
    "low_precision.block_scaled_bytes": (gm.low_precision.block_scaled_bytes, {"elements": (100, SIZE),
                                                                               "fmt": ("mxfp8", choice(gm.low_precision.FORMATS))}),
    "low_precision.dequant_ops_per_flop": (gm.low_precision.dequant_ops_per_flop, {"batch": (8, SIZE),
                                                                                   "ops_per_weight": (4, NOT_NEGATIVE)}),
    "low_precision.swap_ab_use": (gm.low_precision.swap_ab_use, {"batch": (16, SIZE), "swapped": (True, FLAG)}),
    "course.blackwell_low_precision.check_launch_bound": (gm.course.blackwell_low_precision.check_launch_bound, {
        "kernels": (100, integer(1, 10**6)), "kernel_time": (1e-6, NOT_NEGATIVE), "answer": (301, ANSWER), "gpu": ("B200", GPU)}),
    "course.blackwell_low_precision.check_pair_intensity": (gm.course.blackwell_low_precision.check_pair_intensity, {
        "answer": (128, ANSWER), "m": (256, SIZE), "n": (256, SIZE)}),
    "course.blackwell_low_precision.check_consumer_registers": (gm.course.blackwell_low_precision.check_consumer_registers, {
        "answer": (232, ANSWER), "producer_registers": (40, integer(24, 256)), "gpu": ("H100-SXM", GPU)}),
    "course.blackwell_low_precision.check_nvfp4_bytes": (gm.course.blackwell_low_precision.check_nvfp4_bytes, {
        "answer": (0.5625, ANSWER)}),
    "course.blackwell_low_precision.check_held_clock": (gm.course.blackwell_low_precision.check_held_clock, {
        "answer": (1.36, ANSWER), "mhz": (1500, MHZ), "n": (8192, SIZE), "gpu": ("H100-SXM", GPU)}),
    "published.violations": (gm.published.violations, {"chapter": (3, CHAPTER)}),
    "published.attention_flops": (gm.published.attention_flops, {"run": (ATTENTION_RUN, RUNS)}),
    "published.workloads": (gm.published.workloads, {"run": (ATTENTION_RUN, RUNS),
                                                      "gpu": ("A100-40GB", GPU.filter(lambda v: v is not None))}),
    "published.compare": (gm.published.compare, {"record": (FP32_GEMM, RECORDS), "rated": (False, FLAG)}),
    **{f"published.{f.__name__}": (f, {"record": (FP32_GEMM, RECORDS)})
       for f in (gm.published.half, gm.published.record_launch, gm.published.measured_time)},
    "published.record_expect": (gm.published.record_expect, {"record": (FP32_GEMM, RECORDS), "share": (True, FLAG),
                                                             "table": ({"sm": 0.5}, SHARES)}),
    "published.measured_over_expected": (gm.published.measured_over_expected, {
        "which": ("judge", choice(("estimate", "judge"))), "model": ("expected", choice(("expected", "bound")))}),
    **{key: (f, {"work": (gm.gemm(256, 256, 256, block=(64, 64, 8), thread=(4, 4)), WORKLOAD), "gpu": ("A100-40GB", GPU),
                 "launch": (gm.expected.gemm_launch(256, 256, 256, (64, 64, 8), (4, 4)), LAUNCHES.filter(lambda v: v is not None)),
                 "flops": (0.0, AMOUNT), **extra})
       for key, f, extra in (("published.expect", gm.expect, {}),
                             ("expected.expect", gm.expected.expect, {"shares": ({"sm": 0.5, "tensor": 0.5}, SHARES),
                                                                      "dequantise": (0.0, AMOUNT)}))},
    "expected.l1_latency": (gm.expected.l1_latency, {"gpu": ("H100-SXM", GPU)}),
    "expected.read_time": (gm.expected.read_time, {"gpu": ("A100-40GB", GPU), "nbytes": (2**21, SIZE),
                                                   "chunk": (2**19, SIZE.filter(lambda v: v is not None)),
                                                   "threads": (1024, SIZE.filter(lambda v: v is not None))}),
    "expected.served": (gm.expected.served, {name: (1e-6, POSITIVE) for name in ("population", "think", "service")}),
    "expected.lane_issue_rate": (gm.expected.lane_issue_rate, {"gpu": ("H100-SXM", GPU)}),
    "expected.dequantise_time": (gm.expected.dequantise_time, {"weights": (1e9, AMOUNT), "weight": ("int4", choice(tc.WEIGHT_BYTES)),
                                                               "gpu": ("H100-SXM", GPU)}),
    "expected.latency_time": (gm.expected.latency_time, {
        "work": (gm.gemm(256, 256, 256, block=(64, 64, 8), thread=(4, 4)), WORKLOAD), "gpu": ("A100-40GB", GPU),
        "launch": (gm.expected.gemm_launch(256, 256, 256, (64, 64, 8), (4, 4)), LAUNCHES.filter(lambda v: v is not None)),
        "warps_per_sm": (8.0, POSITIVE)}),
    "published.accuracy": (gm.published.accuracy, {"which": ("judge", choice(("estimate", "judge")))}),
    "published.share_for": (gm.published.share_for, {"kind": ("gemm", choice(tuple(gm.published.CLASS_NAMES))),
                                                     "cls": ("sm", choice(gm.expected.CLASSES)),
                                                     "table": ({"read.hbm": 0.9}, SHARES),
                                                     "gpu": ("RTX-A6000", GPU.filter(lambda v: v is not None))}),
    "expected.sm_family": (gm.expected.sm_family, {"gpu": ("RTX-A6000", GPU.filter(lambda v: v is not None))}),
    "expected.kernel_notes": (gm.expected.kernel_notes, {"source": ("boehm2022sgemm", choice(gm.presets.bib_keys())),
                                                         "what": ("kernel 1, naive (uncoalesced)", st.sampled_from(NOT_STRINGS))}),
    "expected.Launch": (gm.expected.Launch, {"threads": (256, SIZE), "blocks": (64, SIZE),
                                             "registers": (32, st.one_of(SIZE, st.sampled_from([256, 300]))),
                                             "smem": (4096, COUNT), **{name: (8.0, NOT_NEGATIVE) for name in (
                                                 "rounds", "tags", "lsu", "instructions", "load_bytes")},
                                             "mma_share": (0.5, FRACTION), "timed": (False, FLAG)}),
    "expected.latency": (gm.expected.latency, {"gpu": ("B200", GPU), "level": ("l2", choice(gm.presets.TABLES["latency"][0]))}),
    "expected.gemm_launch": (gm.expected.gemm_launch, {
        "m": (256, SIZE), "n": (256, SIZE), "k": (256, SIZE), "block": ((64, 64, 8), tile((64, 64, 8)).filter(lambda b: b is not None)),
        "thread": ((4, 4), tile((4, 4))), "layout": ("warp_tiled", choice(gm.workloads.LAYOUTS)),
        "coalesced": (True, FLAG), "registers": (64, st.one_of(SIZE, st.sampled_from([256, 300])).filter(lambda v: v is not None))}),
    "parallel.pipeline_bubble": (gm.parallel.pipeline_bubble, {"stages": (4, SIZE), "microbatches": (8, SIZE)}),
    "parallel.kv_transfer": (gm.parallel.kv_transfer, {
        "name": ("Llama-3-70B", choice(tuple(gm.decode.MODELS))), "tokens": (4096, SIZE),
        "link": ("InfiniBand NDR", choice(tuple(gm.links.links()))), "gpus": (8, SIZE),
        "kv": ("fp16", choice(tuple(gm.decode.KV_FORMATS)))}),
    "expected.library_tile": (gm.expected.library_tile, {
        "m": (64, SIZE), "n": (2112, SIZE), "k": (7168, SIZE), "gpu": ("H100-SXM", GPU),
        "dtype": ("fp8", choice(tuple(gm._check.DTYPE_BYTES)))}),
    "published.gemm_shape": (gm.published.gemm_shape, {"run": ({"kind": "gemm", "shape": [64, 2112, 7168]}, RUNS)}),
    "expected.share_class": (gm.expected.share_class, {"limiter": ("waves", choice(gm.BOUNDS + gm.expected.LIMITERS + ("overhead",))),
                                                       "math_": ("fp16", choice(MATH))}),
    "WidgetExercise.check": (EXERCISE.check, {"answer": ("3.0", ANSWER)}),
    # The widget exercises' constructors: a value outside the menu the explorer offers is refused.
    "course.hierarchy.littles_law": (course.hierarchy.littles_law, {
        "gpu": ("A100-40GB", outside([g for g in GPUS if "hbm" in gm.gpu(g).latency])),
        "width": ("float4 (16 B)", outside(course.hierarchy.LOAD_BYTES)),
        "loads": (2, outside(course.hierarchy.LITTLE_LOADS))}),
    "course.intensity.stride_sectors": (course.intensity.stride_sectors, {
        "elem_bytes": (2, outside(course.intensity.ELEM_BYTES))}),
    "course.intensity.fused_chain": (course.intensity.fused_chain, {
        "gpu": ("H100-SXM", outside(GPUS)), "dtype": ("fp16", outside(course.intensity.CHAIN_DTYPES))}),
    "course.tiling.thread_tile": (course.tiling.thread_tile, {
        "gpu": ("A100-40GB", outside(GPUS)), "block": (128, outside(course.tiling.TILE_BLOCKS))}),
    "course.tiling.occupancy_limit": (course.tiling.occupancy_limit, {
        "gpu": ("H100-SXM", outside(course.tiling.OCC_GPUS)), "threads": (256, outside(course.tiling.OCC_THREADS)),
        "smem_kib": (32, outside(course.tiling.OCC_SMEM_KIB)), "warps": (32, integer(1, 64))}),
    "course.roofline_levels.block_group": (course.roofline_levels.block_group, {
        "gpu": ("H100-SXM", outside(course.roofline_levels.GROUP_GPUS)), "size": (8192, integer(1024, 32768))}),
    "course.blackwell_low_precision.launch_bound": (course.blackwell_low_precision.launch_bound, {
        "gpu": ("B200", outside(course.blackwell_low_precision.LAUNCH_GPUS))}),
    "course.blackwell_low_precision.tile_ridge": (course.blackwell_low_precision.tile_ridge, {
        "gpu": ("B200", outside(course.blackwell_low_precision.RIDGE_GPUS)),
        "tile": ("m128 (tcgen05, 1 CTA)", outside(course.blackwell_low_precision.TILES))}),
    "course.roofline_levels.l2_overflow": (course.roofline_levels.l2_overflow, {"gpu": ("L4", outside(GPUS))}),
    "course.flashattention.attention_fit": (course.flashattention.attention_fit, {
        "gpu": ("L4", outside(GPUS)), "heads": (32, SIZE), "head_dim": (128, SIZE)}),
    "course.flashattention.flash_speedup": (course.flashattention.flash_speedup, {
        "gpu": ("H100-SXM", outside(GPUS)), "seq": (16384, outside(course.flashattention.SEQS)),
        "head_dim": (64, outside(course.flashattention.SPEEDUP_HEAD_DIMS))}),
    "course.tensor_cores.decode_batch": (course.tensor_cores.decode_batch, {
        "gpu": ("H100-SXM", outside(course.tensor_cores.DECODE_GPUS)),
        "weight": ("int8", outside(course.tensor_cores.WEIGHTS)), "width": (8192, SIZE)}),
    "course.tensor_cores.wave_tail": (course.tensor_cores.wave_tail, {
        "gpu": ("H100-SXM", outside(course.tensor_cores.WAVE_GPUS)),
        "block": (128, outside(course.tensor_cores.WAVE_BLOCKS))}),
    "simulate.paged_decode_attention": (gm.simulate.paged_decode_attention, {
        "q": (np.ones((4, 8)), ARRAY), "k": (np.ones((40, 2, 8)), ARRAY), "v": (np.ones((40, 2, 8)), ARRAY),
        "page_tokens": (16, SIZE), "splits": (2, SIZE), "kv": ("fp16", choice(tuple(gm.decode.KV_FORMATS))),
        "seed": (0, COUNT)}),
    "decode.Model": (gm.decode.Model, {"name": ("m", st.sampled_from([" ", *NOT_STRINGS])), "layers": (32, SIZE), "heads": (32, SIZE), "kv_heads": (8, SIZE),
                                       "head_dim": (128, SIZE), "params": (8e9, POSITIVE), "latent": (0, COUNT),
                                       "rope": (0, COUNT), "source": ("", NOT_TEXT), "hidden": (0, COUNT),
                                       "vocab": (0, COUNT), "tied": (False, FLAG), "moe_layers": (0, COUNT),
                                       "experts": (0, COUNT), "active": (0, COUNT), "expert_params": (0.0, NOT_NEGATIVE)}),
    "decode.experts_touched": (gm.decode.experts_touched, {"experts": (160, SIZE), "active": (6, SIZE), "batch": (64, SIZE)}),
    "decode.weights_read": (gm.decode.weights_read, {"name": ("DeepSeek-V2", choice(tuple(gm.decode.MODELS))),
                                                     "batch": (64, SIZE)}),
    "decode.prefix_cache_bytes": (gm.decode.prefix_cache_bytes, {
        "name": ("Llama-3-8B", choice(tuple(gm.decode.MODELS))), "batch": (8, SIZE), "context": (1024, COUNT),
        "prefix": (512, COUNT), "kv": ("fp16", choice(tuple(gm.decode.KV_FORMATS))), "shared": (True, FLAG)}),
    "decode.model": (gm.decode.model, {"name": ("Llama-3-8B", choice(tuple(gm.decode.MODELS)))}),
    "decode.row_bytes": (gm.decode.row_bytes, {"elements": (128, SIZE), "kv": ("int4", choice(tuple(gm.decode.KV_FORMATS)))}),
    "decode.kv_bytes_per_token": (gm.decode.kv_bytes_per_token, {"name": ("DeepSeek-V2", choice(tuple(gm.decode.MODELS))),
                                                                 "kv": ("nvfp4", choice(tuple(gm.decode.KV_FORMATS)))}),
    **{f"decode.{f.__name__}": (f, {"name": ("Llama-3-8B", choice(tuple(gm.decode.MODELS))), "batch": (8, SIZE),
                                    "context": (1024, COUNT), "weight": ("int8", choice(tc.WEIGHT_BYTES)),
                                    "kv": ("fp8", choice(tuple(gm.decode.KV_FORMATS))), "math": ("fp16", choice(MATH)),
                                    **({"queries": (2, SIZE), "group": (32, COUNT), "scale_bytes": (4.0, AMOUNT)}
                                       if f is gm.decode.step else {"gpu": ("H100-SXM", GPU)})})
       for f in (gm.decode.step, gm.decode.step_time, gm.decode.tokens_per_second)},
    "decode.expected_tokens": (gm.decode.expected_tokens, {"drafted": (2, COUNT), "acceptance": (0.8, PROBABILITY)}),
    "decode.chunked_step": (gm.decode.chunked_step, {
        "name": ("Llama-3-8B", choice(tuple(gm.decode.MODELS))), "batch": (8, COUNT), "context": (1024, COUNT),
        "chunk": (256, COUNT), "prefix": (0, COUNT), "weight": ("fp16", choice(tc.WEIGHT_BYTES)),
        "kv": ("fp16", choice(tuple(gm.decode.KV_FORMATS))), "math": ("fp16", choice(MATH))}),
    "decode.free_chunk": (gm.decode.free_chunk, {
        "name": ("Llama-3-8B", choice(tuple(gm.decode.MODELS))), "gpu": ("H100-SXM", GPU),
        "batch": (8, integer(1, 2**20)), "context": (1024, integer(0, 2**24)), "weight": ("fp16", choice(tc.WEIGHT_BYTES)),
        "kv": ("fp16", choice(tuple(gm.decode.KV_FORMATS))), "math": ("fp16", choice(MATH))}),
    "decode.weight_bytes": (gm.decode.weight_bytes, {"weights": (1e9, AMOUNT), "weight": ("int4", choice(tc.WEIGHT_BYTES)),
                                                     "group": (32, COUNT), "scale_bytes": (4.0, AMOUNT)}),
    "decode.quantised_step": (gm.decode.quantised_step, {
        "name": ("Llama-2-7B", choice(tuple(gm.decode.MODELS))), "gpu": ("A100-80GB", GPU), "batch": (1, SIZE),
        "context": (128, COUNT), "weight": ("int4", choice(tc.WEIGHT_BYTES)), "group": (32, COUNT),
        "scale_bytes": (4.0, AMOUNT), "kv": ("fp16", choice(tuple(gm.decode.KV_FORMATS)))}),
    "decode.mma_fill": (gm.decode.mma_fill, {"name": ("Llama-3-8B", choice(tuple(gm.decode.MODELS))),
                                             "queries": (2, SIZE)}),
    "decode.lm_head": (gm.decode.lm_head, {"name": ("Llama-3-8B", choice(tuple(gm.decode.MODELS))), "batch": (8, SIZE),
                                           "weight": ("fp8", choice(tc.WEIGHT_BYTES))}),
    "decode.speculative_speedup": (gm.decode.speculative_speedup, {
        "name": ("Llama-3-8B", choice(tuple(gm.decode.MODELS))), "gpu": ("H100-SXM", GPU), "batch": (8, SIZE),
        "context": (1024, COUNT), "drafted": (2, COUNT), "acceptance": (0.8, PROBABILITY),
        "weight": ("fp8", choice(tc.WEIGHT_BYTES)), "kv": ("fp16", choice(tuple(gm.decode.KV_FORMATS))),
        "math": ("fp16", choice(MATH))}),
    "decode.gemm_intensity": (gm.decode.gemm_intensity, {"batch": (8, SIZE), "width": (4096, SIZE),
                                                         "weight": ("int8", choice(tc.WEIGHT_BYTES)),
                                                         "act_bytes": (2, POSITIVE)}),
    "decode.gemm_critical_batch": (gm.decode.gemm_critical_batch, {"gpu": ("A100-40GB", GPU), "width": (4096, SIZE),
                                                                   "weight": ("int4", choice(tc.WEIGHT_BYTES)),
                                                                   "math": ("fp16", choice(MATH)),
                                                                   "act_bytes": (2, POSITIVE), "largest": (4096, SIZE)}),
    "decode.critical_batch": (gm.decode.critical_batch, {
        "name": ("Llama-3-8B", choice(tuple(gm.decode.MODELS))), "gpu": ("H100-SXM", GPU), "context": (1024, COUNT),
        "weight": ("fp16", choice(tc.WEIGHT_BYTES)), "kv": ("fp16", choice(tuple(gm.decode.KV_FORMATS))),
        "math": ("fp16", choice(MATH)), "largest": (4096, SIZE)}),
    "decode.max_batch": (gm.decode.max_batch, {
        "name": ("Llama-2-7B", choice(tuple(gm.decode.MODELS))), "gpu": ("H100-SXM", GPU), "context": (4096, COUNT),
        "weight": ("fp16", choice(tc.WEIGHT_BYTES)), "kv": ("fp16", choice(tuple(gm.decode.KV_FORMATS)))}),
    "decode.paged_kv": (gm.decode.paged_kv, {"context": (1000, SIZE), "page_tokens": (16, SIZE), "row_bytes": (256, SIZE),
                                             "index_bytes": (4, SIZE)}),
    "decode.split_kv": (gm.decode.split_kv, {
        "gpu": ("H100-SXM", GPU), "batch": (1, SIZE), "heads": (32, SIZE), "kv_heads": (8, SIZE), "head_dim": (128, SIZE),
        "context": (4096, SIZE), "splits": (4, SIZE), "page_tokens": (16, SIZE),
        "kv": ("fp16", choice(tuple(gm.decode.KV_FORMATS)))}),
    "decode.wave_splits": (gm.decode.wave_splits, {"gpu": ("H100-SXM", GPU), "batch": (1, SIZE), "kv_heads": (8, SIZE),
                                                   "chunks": (128, SIZE), "slots_per_sm": (1, SIZE)}),
    "course.parallel.cp_ring": (course.parallel.cp_ring, {"gpus": (8, SIZE), "name": ("Llama-3-70B", choice(tuple(gm.decode.MODELS)))}),
    "course.parallel.cp_collectives": (course.parallel.cp_collectives, {"name": ("Llama-3-70B", choice(tuple(gm.decode.MODELS)))}),
    "course.parallel.cp_served": (course.parallel.cp_served, {"batch": (30, SIZE), "prompt": (2000, SIZE),
                                                              "output": (400, SIZE)}),
    "course.parallel.cp_request": (course.parallel.cp_request, {"output": (200, SIZE), "prompt": (500, SIZE), "gpus": (2, SIZE),
                                                                "name": ("Llama-3-70B", choice(tuple(gm.decode.MODELS))),
                                                                "gpu": ("H100-SXM", GPU)}),
    **{f"course.parallel.{f.__name__}": (f, {"name": ("Llama-3-70B", choice(tuple(gm.decode.MODELS))), "gpu": ("B200", GPU),
                                             "link": ("NVLink 5", choice(tuple(gm.links.links()))), "batch": (1, SIZE),
                                             "context": (4096, COUNT)} | ({"answer": (8.0, ANSWER)} if f is
                                                                           course.parallel.check_best_gpus else {}))
       for f in (course.parallel.best_gpus, course.parallel.check_best_gpus)},
    "links.link": (gm.links.link, {"link": ("NVLink 4", choice(tuple(gm.links.links())))}),
    "links.links_of": (gm.links.links_of, {"gpu": ("H100-SXM", GPU)}),
    "decode.served_chunk": (gm.decode.served_chunk, {"batch": (25, SIZE), "prompt": (5000, SIZE), "output": (500, SIZE)}),
    "published.run_step": (gm.published.run_step, {
        "run": ({"kind": "parallel", "model": "Llama-3-70B", "gpus": 2, "link": "NVLink 4", "batch": 5, "context": 5000,
                 "output": 500}, st.sampled_from([None, {}, {"kind": "decode"}, 3])),
        "gpu": ("H100-SXM", GPU), "latency": (True, FLAG)}),
    "parallel.prefill": (gm.parallel.prefill, {
        "name": ("Llama-3-70B", choice(tuple(gm.decode.MODELS))), "gpu": ("H100-SXM", GPU), "gpus": (2, SIZE),
        "batch": (1, SIZE), "prompt": (500, SIZE), "link": ("NVLink 4", choice(tuple(gm.links.links()))),
        "weight": ("fp8", choice(tuple(gm.tensor_cores.WEIGHT_BYTES))), "kv": ("fp8", choice(tuple(gm.decode.KV_FORMATS))),
        "math": ("fp8", choice(MATH)), "algorithm": ("ring", choice(gm.collectives.ALGORITHMS + ("fastest",))),
        "latency": (True, FLAG)}),
    "parallel.request": (gm.parallel.request, {
        "name": ("Llama-3-8B", choice(tuple(gm.decode.MODELS))), "gpu": ("H200", GPU), "gpus": (1, SIZE),
        "batch": (8, SIZE), "prompt": (32, SIZE), "output": (128, SIZE), "link": ("NVLink 4", choice(tuple(gm.links.links()))),
        "weight": ("fp16", choice(tuple(gm.tensor_cores.WEIGHT_BYTES))), "kv": ("fp16", choice(tuple(gm.decode.KV_FORMATS))),
        "math": ("fp16", choice(MATH)), "algorithm": ("fastest", choice(gm.collectives.ALGORITHMS + ("fastest",))),
        "latency": (True, FLAG)}),
    "parallel.step": (gm.parallel.step, {
        "name": ("Llama-3-70B", choice(tuple(gm.decode.MODELS))), "gpu": ("H100-SXM", GPU), "gpus": (8, SIZE),
        "batch": (1, SIZE), "context": (4096, COUNT), "link": ("NVLink 4", choice(tuple(gm.links.links()))),
        "weight": ("fp16", choice(tuple(gm.tensor_cores.WEIGHT_BYTES))), "kv": ("fp16", choice(tuple(gm.decode.KV_FORMATS))),
        "math": ("fp16", choice(MATH)), "algorithm": ("ring", choice(gm.collectives.ALGORITHMS + ("fastest",))),
        "latency": (True, FLAG), "overlap": (False, FLAG), "chunk": (0, COUNT)}),
    "parallel.head_splits": (gm.parallel.head_splits, {"name": ("Llama-3-70B", choice(tuple(gm.decode.MODELS))),
                                                       "most": (72, SIZE)}),
    "parallel.algorithms": (gm.parallel.algorithms, {"link": ("NVLink 4", choice(tuple(gm.links.links()))),
                                                     "collective_name": ("all-reduce", choice(gm.collectives.COLLECTIVES))}),
    "parallel.collective": (gm.parallel.collective, {
        "link": ("NVLink 4", choice(tuple(gm.links.links()))), "collective_name": ("all-reduce", choice(gm.collectives.COLLECTIVES)),
        "gpus": (8, SIZE), "message": (16384, NOT_NEGATIVE), "algorithm": ("fastest", choice(("ring", "in-switch", "fastest"))),
        "latency": (True, FLAG)}),
    "course.parallel.switch_over": (gm.course.parallel.switch_over, {"link": ("NVL72", choice(tuple(gm.links.links()))),
                                                                     "message": (16384.0, NOT_NEGATIVE)}),
    "parallel.expert_step": (gm.parallel.expert_step, {
        "name": ("DeepSeek-V2", choice(("DeepSeek-V2",))), "gpu": ("H100-SXM", GPU), "gpus": (8, SIZE),
        "batch": (1, SIZE), "context": (4096, COUNT), "link": ("NVLink 4", choice(tuple(gm.links.links()))),
        "weight": ("fp8", choice(tuple(gm.tensor_cores.WEIGHT_BYTES))), "kv": ("fp16", choice(tuple(gm.decode.KV_FORMATS))),
        "math": ("fp16", choice(MATH)), "latency": (True, FLAG)}),
    "course.decode.cp_bytes": (course.decode.cp_bytes, {"name": ("Llama-2-7B", choice(tuple(gm.decode.MODELS))),
                                                        "context": (1024, SIZE)}),
    "course.decode.cp_gqa": (course.decode.cp_gqa, {"heads": (64, SIZE), "kv_heads": (8, SIZE)}),
    "course.decode.cp_critical": (course.decode.cp_critical, {"name": ("Llama-3-8B", choice(tuple(gm.decode.MODELS))),
                                                              "gpu": ("H100-SXM", GPU)}),
    "course.decode.cp_paged": (course.decode.cp_paged, {"context": (1000, SIZE), "page_tokens": (16, SIZE), "row": (256, SIZE)}),
    "course.decode.cp_split": (course.decode.cp_split, {"gpu": ("H100-SXM", GPU), "batch": (1, SIZE), "kv_heads": (8, SIZE)}),
    "course.decode.cp_quant": (course.decode.cp_quant, {"elements": (128, SIZE)}),
    "course.decode.cp_weights": (course.decode.cp_weights, {"group": (64, SIZE), "scale_bytes": (2, SIZE)}),
    "course.decode.trace_int4_gemv": (course.decode.trace_int4_gemv, {"rows": (64, SIZE), "width": (2048, SIZE)}),
    "course.decode.check_kv_bytes": (course.decode.check_kv_bytes, {
        "layers": (32, SIZE), "kv_heads": (8, SIZE), "head_dim": (128, SIZE),
        "kv": ("int4", choice(tuple(gm.decode.KV_FORMATS))), "answer": (131072 * 1.0, ANSWER)}),
    "course.decode.check_long_context": (course.decode.check_long_context, {
        "name": ("Llama-2-7B", choice(tuple(gm.decode.MODELS))), "gpu": ("H100-SXM", GPU), "answer": (256, ANSWER)}),
    "course.decode.throughput": (course.decode.throughput, {
        "question_gpu": ("B200", outside(course.decode.GPUS)), "question_batch": (8, outside(course.decode.BATCHES)),
        "question_context": (16384, outside(course.decode.CONTEXTS))}),
    "course.parallel.steps": (course.parallel.steps, {
        "question_batch": (1, outside(course.parallel.BATCHES)), "question_context": (4096, outside(course.parallel.CONTEXTS))}),
    "course.parallel.drafts": (course.parallel.drafts, {
        "question_batch": (64, outside(course.parallel.DRAFT_BATCHES)),
        "question_acceptance": (0.7, outside(course.parallel.ACCEPTANCES))}),
    "course.capstone.budget": (course.capstone.budget, {"task": ("softmax", choice(tuple(course.capstone.TASKS)))}),
    "course.capstone.check_gemm_l2_budget": (course.capstone.check_gemm_l2_budget, {
        "answer": (8650752, ANSWER), "size": (256, integer(16, 2**14))}),
    "course.capstone.editor": (course.capstone.editor, {"task": ("gemm", choice(tuple(course.capstone.TASKS)))}),
    "course.capstone.budget_time": (course.capstone.budget_time, {
        "task": ("gemm", choice(tuple(course.capstone.TASKS))), "gpu": ("H100-SXM", GPU)}),
    "course.capstone.budget_table": (course.capstone.budget_table, {"gpu": ("A100-40GB", GPU)}),
    "course.appendix_presets.highest_ridge": (course.appendix_presets.highest_ridge, {
        "math": ("fp16", outside(course.appendix_presets.RIDGE_MATH))}),
    # The checkpoints' constructors: a question built from a number no question can ask is refused (issue 39).
    "course.intensity.cp_balance": (course.intensity.cp_balance, {"gpu": ("H100-SXM", GPU)}),
    "course.intensity.cp_roofline": (course.intensity.cp_roofline, {"gpu": ("H100-SXM", GPU), "intensity": (4.0, POSITIVE)}),
    "course.intensity.cp_sectors": (course.intensity.cp_sectors, {
        "stride": (2, integer(1, 2**16)), "elem": (4, outside(course.intensity.ELEM_BYTES))}),
    "course.tiling.cp_tile_intensity": (course.tiling.cp_tile_intensity, {
        "b": (64, integer(1, 2**14)), "dtype": ("fp16", choice(("fp32", "fp16", "bf16")))}),
    "course.tiling.cp_banks": (course.tiling.cp_banks, {"stride": (2, integer(1, 2**16))}),
    "course.tiling.cp_register_blocks": (course.tiling.cp_register_blocks, {
        "gpu": ("A100-40GB", GPU), "threads": (256, SIZE), "registers": (128, SIZE)}),
    "course.roofline_levels.cp_l2_ridge": (course.roofline_levels.cp_l2_ridge, {"gpu": ("H100-SXM", GPU)}),
    "course.roofline_levels.cp_working_set": (course.roofline_levels.cp_working_set, {"n": (2**22, integer(1, 2**40))}),
    "course.roofline_levels.cp_triton_wave": (course.roofline_levels.cp_triton_wave, {"group": (8, integer(2, 8))}),
    "course.roofline_levels.first_wave_tiles": (course.roofline_levels.first_wave_tiles, {"group": (1, integer(1, 8))}),
    "course.flashattention.cp_scores": (course.flashattention.cp_scores, {
        "seq": (16384, integer(1, 2**24)), "dtype": ("fp16", choice(("fp32", "fp16", "bf16")))}),
    "course.flashattention.lab_qkv": (course.flashattention.lab_qkv, {
        "n": (64, integer(1, 2**16)), "d": (16, integer(2, 1024)), "seed": (0, integer(0, 2**32))}),
    "course.tensor_cores.cp_decode": (course.tensor_cores.cp_decode, {"width": (8192, SIZE)}),
    "course.tensor_cores.cp_waves": (course.tensor_cores.cp_waves, {"tiles": (300, integer(1, 2**31)), "gpu": ("H100-SXM", GPU)}),
}

EXCLUDED = {
    "presets.load_gpu": "reads a data file; its errors name the file and key (tests/test_presets.py, test_gpu_data.py)",
    "expected.trace_launch": "takes the Trace gm.lab.trace returned, not a typed value; tests/test_expect.py "
    "drives it and refuses its bad trace, flops and registers by name",
    **{name: "compiles and runs a learner's kernel (seconds a call); its sources that do not compile, crash, loop or "
       "compute wrong are tests/test_lab.py's" for name in (
        "course.checks.lab_run", "course.intensity.check_coalesced_kernel", "course.intensity.check_fused_chain",
        "course.tiling.check_conflict_free_transpose", "course.roofline_levels.check_thread_tile_gemm",
        "course.flashattention.check_flash_kernel", "course.decode.check_split_kernel", "course.capstone.score",
        "course.capstone.over_budget")},
    **{name: "runs a learner's Triton kernel in Triton's interpreter (seconds a call); its sources that do not run, "
       "name no kernel or compute wrong are tests/test_lab_triton.py's" for name in (
        "course.checks.lab_run_triton", "course.intensity.check_triton_softmax", "course.roofline_levels.check_triton_order",
        "course.flashattention.check_triton_flash")},
}
"""Public callables that take input but no learner's value, with the reason."""
EXCLUDED |= {
    "course.roofline_levels.triton_order": "its one parameter says whether to write the recorded result (python -m "
    "gpumodel.course.roofline_levels), checked as a flag; tests/test_lab_triton.py drives it with Triton and without",
    "course.checks.far_reason": "takes the Expectation gm.expect returned, not a typed value; chapter 4's claim and "
    "tests/test_lab.py's lab checkers read its sentence",
    "published.estimate_shares": "takes the loader's Record lists, not typed values; tests/test_expect.py drives it "
    "on the records and a synthetic one",
    "published.write_estimates": "writes the estimates' data file (python -m gpumodel.estimates); tests/test_expect.py "
    "holds what it writes to estimate_shares",
    "course.roofline_levels.fmas_per_shared_read": "takes the Trace gm.lab.trace returned, not a typed value; "
    "tests/test_lab.py drives it through chapter 4's lab checker",
    "course.checks.part_name": "names the bound a Prediction gave (fmt_bound's names), not a typed value; "
    "tests/test_capstone.py reads its words in a score",
    "course.checks.bound_and_expected": "takes the Trace gm.lab.trace returned and the bound predict gave it, not "
    "typed values; tests/test_lab.py holds chapter 4's lab checker's sentence to gm.expect",
    "course.checks.judge": "the step every checker ends with, given the checker's own rules and its checked answer; "
    "its rules and key are refused by name in tests/test_answers.py",
    "course.checks.record": "keeps the Feedback a checker returned, for gm.course.progress(); its key and feedback "
    "are refused by name in tests/test_answers.py",
    "course.roofline_levels.recorded_triton_order": "reads a data file, not typed values; tests/test_exercises.py "
    "edits copies of it",
    "course.checks.answer_box": "the site's HTML box for a question's rules, built by the course from its own "
    "values; the learner's answer goes through verdict, swept above",
    **{f"course.{name}": "a question's rules or a checkpoint, built by the chapter from its own values; the "
       "learner's answer goes through verdict, swept above" for name in (
           "hierarchy.bound_rules", "tiling.padding_rules")},
}
RESULTS = {"overhead.LaunchCost", "overhead.Sequence", "model.Prediction", "simulate.Run", "occupancy.Occupancy", "waves.WaveTraffic", "hardware.Capability",
           "hardware.GPU", "tensor_cores.Pipeline", "tensor_cores.WaveQuantisation", "course.checks.Feedback", "published.Record",
           "published.Comparison", "presets.DataError", "course.capstone.Task", "expected.Expectation",
           "decode.PagedKV", "decode.SplitKV", "links.Link", "parallel.ParallelStep", "parallel.Request"}
"""Records the package returns (and its error class), not built from a learner's values."""
MODULES = ("workloads", "model", "expected", "simulate", "occupancy", "waves", "tiles", "hardware", "presets", "units", "tensor_cores",
           "overhead", "blackwell", "low_precision", "decode", "collectives", "links", "parallel",
           "published", "kernel_info", "course.checks", *(f"course.{chapter}" for chapter in gm.course.CHAPTERS))


def public_callables() -> dict:
    """Every public callable of the core and exercise modules, of gm.__all__ and of GPU,
    by key ("module.name" or "Class.method"), with its parameters."""
    found = {}
    for module in MODULES:
        mod = importlib.import_module(f"gpumodel.{module}")
        names = vars(mod) if module != "kernel_info" else {"label": mod.label}  # kernel_info: only what gm exports
        for name, obj in names.items():
            mutant = "__mutmut" in name  # mutmut's copies of a function or method, under `make mutation`
            if not name.startswith("_") and not mutant and callable(obj) and getattr(obj, "__module__", None) == mod.__name__:
                found[f"{module}.{name}"] = obj
    for name in gm.__all__:
        obj = getattr(gm, name)
        if callable(obj):
            assert f"{obj.__module__.removeprefix('gpumodel.')}.{name}" in found, name
    for name, obj in vars(gm.GPU).items():
        if not name.startswith("_") and "__mutmut" not in name and inspect.isfunction(obj):
            found[f"GPU.{name}"] = obj
    found["WidgetExercise.check"] = WidgetExercise.check
    return found


def _params(obj) -> set:
    """Named parameters (`**options` forwarded to another swept function are not counted)."""
    return {name for name, p in inspect.signature(obj).parameters.items()
            if name != "self" and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)}


def test_every_public_callable_is_driven_or_excluded_for_a_reason():
    for key, obj in public_callables().items():
        if key in RESULTS or key in EXCLUDED or not _params(obj):
            continue  # a record, excluded above, or nothing to check (seed_kernels, GPU.facts, ...)
        assert key in SIGNATURES, f"{key} is public: add it to SIGNATURES (or to EXCLUDED, with a reason)"
        assert set(SIGNATURES[key][1]) == _params(obj), f"{key}: every parameter needs a valid value and a kind"
    assert not set(SIGNATURES) - set(public_callables()), "SIGNATURES names a callable that is gone"


def _nan_free(result) -> bool:
    """No NaN anywhere in a result (numbers, arrays, dicts, dataclasses, tuples)."""
    if hasattr(result, "__dataclass_fields__"):
        return all(_nan_free(getattr(result, f)) for f in result.__dataclass_fields__ if f not in ("gpu", "workload"))
    if isinstance(result, dict):
        return all(_nan_free(v) for v in result.values())
    if isinstance(result, (tuple, list)):
        return all(_nan_free(v) for v in result)
    a = np.asarray(result)
    return a.dtype.kind not in "fc" or not np.isnan(a).any()


def _call(key, **changed):
    f, params = SIGNATURES[key]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return f(**{**{p: valid for p, (valid, _) in params.items()}, **changed})


@pytest.mark.parametrize("key", sorted(SIGNATURES))
def test_valid_arguments_run_cleanly(key):
    result = _call(key)
    assert _nan_free(result)
    if isinstance(result, gm.course.checks.Feedback):
        assert result.message


def _names(message: str, param: str) -> bool:
    """Whether the message's subject (before "must") names `param` as a word of its own."""
    subject = message.split(" must ")[0]
    return re.search(rf"(?<![\w.]){re.escape(param)}(?![\w(])", subject) is not None


CASES = sorted((key, p) for key, (_, params) in SIGNATURES.items() for p, (_, kind) in params.items() if kind is not TEXT)


@pytest.mark.parametrize("key, param", CASES, ids=[f"{k}:{p}" for k, p in CASES])
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_bad_input_is_refused_naming_the_parameter(key, param, data):
    bad = data.draw(SIGNATURES[key][1][param][1], label=param)
    if SIGNATURES[key][1][param][1] is ANSWER:  # a learner's bad answer gets a sentence, not an error
        feedback = _call(key, answer=bad)
        assert isinstance(feedback, gm.course.checks.Feedback) and not feedback and feedback.message.endswith(".")
        return
    with pytest.raises((ValueError, TypeError)) as err:
        _call(key, **{param: bad})
    assert _names(str(err.value), param), f"{key}({param}={bad!r}): {err.value}"


EXERCISES = {make.__name__: make() for make in gm.course.widget_exercises()}
CONTROLS = sorted((name, control) for name, ex in EXERCISES.items() for control in ex.controls)


def _first_state(exercise) -> dict:
    return {name: options[0] for name, options in exercise.controls.items()}


@pytest.mark.parametrize("name, control", CONTROLS, ids=[f"{n}:{c}" for n, c in CONTROLS])
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_render_refuses_a_value_outside_a_controls_menu_naming_the_control(name, control, data):
    exercise = EXERCISES[name]
    bad = data.draw(outside(exercise.controls[control]), label=control)
    with pytest.raises(ValueError) as err:
        exercise.render(**{**_first_state(exercise), control: bad})
    assert _names(str(err.value), control) and str(exercise.controls[control]) in str(err.value)


@pytest.mark.parametrize("name", sorted(EXERCISES))
def test_render_refuses_a_missing_or_unknown_control(name):
    exercise = EXERCISES[name]
    state = _first_state(exercise)
    for values in ({**state, "colour": "red"}, dict(list(state.items())[1:])):
        with pytest.raises(ValueError, match="^values must name each control"):
            exercise.render(**values)
