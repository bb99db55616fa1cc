"""How each kernel in `kernels/` is launched, what it is checked against, and which
workload the model predicts it with. One plan per kernel (or chain of kernels) serves the
CuPy runtime on a GPU and the CPU emulator in the tests alike. Chapters 1, 2, 3 and 5.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Callable

import numpy as np

from .. import _check
from ..kernel_info import GEMM_LADDER, TRANSPOSES, info, label
from ..workloads import (
    TRANSPOSE_TILE,
    Workload,
    attention,
    elementwise_chain,
    kernel_gemm,
    strided_read,
    transpose,
    vector_add,
)

SCALE, BIAS = np.float32(0.5), np.float32(-0.25)
FLASH_D, FLASH_BLOCK = 64, (64, 64)
"""The flash kernel's head dimension and (query, key) block: `kernels/attention.cu` fixes both."""


@dataclass(frozen=True)
class Step:
    """One launch: `kernel` in the plan's file, its grid and block, and its arguments: the
    names of buffers (str) or scalars (np.int32, np.float32)."""

    kernel: str
    grid: tuple
    block: tuple
    args: tuple


@dataclass(frozen=True)
class Plan:
    """A kernel run: `draw()` makes its host `inputs` (float32), `outputs` to allocate (name -> shape), the
    `steps` to launch, the buffer holding the `result`, the `reference` (a function of the
    array module and the inputs: NumPy on the CPU, CuPy on a GPU, in float64), the
    tolerance, and the `workload` the model predicts it with (None if the model has no term
    for what limits it)."""

    kernel: str
    draw: Callable
    outputs: dict
    steps: list
    result: str
    reference: Callable
    workload: Workload | None
    rtol: float = 1e-5
    atol: float = 1e-5
    sizes: dict = field(default_factory=dict)

    @cached_property
    def inputs(self) -> dict:
        """The host inputs (float32 arrays by name), drawn on first use by `draw()`: a plan
        can be described, and its GPU time planned, without them."""
        return self.draw()

    @property
    def file(self) -> str:
        """The source file in `kernels/`."""
        return info(self.kernel).file

    @property
    def label(self) -> str:
        """The kernel's label and this plan's sizes, for a reader."""
        return f"{label(self.kernel)} ({', '.join(f'{k} {v}' for k, v in self.sizes.items())})"


def _step(kernel: str, function: str, grid: tuple, args: tuple) -> Step:
    """A launch of CUDA `function` of `kernel` with the block shape `kernel_info` gives it."""
    return Step(function, grid, info(kernel).functions[function], args)


def _threads(kernel: str, function: str) -> int:
    """The x extent of `function`'s block: elements per block of the 1-D kernels."""
    return info(kernel).functions[function][0]


def _ceil(a: int, b: int) -> int:
    return -(-a // b)


def _random(rng, *shape):
    """Standard normal float32 inputs, drawn in float32 (no float64 copy of a large array)."""
    return rng.standard_normal(shape, dtype=np.float32)


def plan_vector_add(n: int, rng=None) -> Plan:
    """c = a + b over n floats."""
    n = int(_check.size("n", n))
    rng = rng or np.random.default_rng(0)
    grid = (_ceil(n, _threads("vector_add", "vector_add")),)
    return Plan(
        "vector_add", lambda: {"a": _random(rng, n), "b": _random(rng, n)}, {"c": (n,)},
        [_step("vector_add", "vector_add", grid, ("a", "b", "c", np.int32(n)))],
        "c", lambda xp, i: i["a"].astype(xp.float64) + i["b"], vector_add(n), sizes={"n": n},
    )


def plan_chain(n: int, fused: bool, rng=None) -> Plan:
    """relu, then scale by 0.5, then add -0.25: three kernels, or one fused kernel."""
    n = int(_check.size("n", n))
    fused = _check.flag("fused", fused)
    rng = rng or np.random.default_rng(0)
    kernel = "chain_fused" if fused else "chain_unfused"
    grid, size = (_ceil(n, _threads(kernel, "relu_scale_bias" if fused else "relu")),), np.int32(n)
    if fused:
        steps = [_step(kernel, "relu_scale_bias", grid, ("x", "w", SCALE, BIAS, size))]
    else:
        steps = [
            _step(kernel, "relu", grid, ("x", "y", size)),
            _step(kernel, "scale", grid, ("y", "z", SCALE, size)),
            _step(kernel, "add_bias", grid, ("z", "w", BIAS, size)),
        ]
    def reference(xp, i):
        return xp.maximum(i["x"].astype(xp.float64), 0) * float(SCALE) + float(BIAS)

    outputs = {"w": (n,)} if fused else {"y": (n,), "z": (n,), "w": (n,)}
    return Plan(
        kernel, lambda: {"x": _random(rng, n)}, outputs,
        steps, "w", reference, elementwise_chain(n, 3, fused, "fp32"), sizes={"n": n},
    )


def plan_strided(n: int, stride: int, rng=None) -> Plan:
    """y[i] = x[i * stride] for n elements: chapter 2's coalescing experiment."""
    n, stride = int(_check.size("n", n)), int(_check.size("stride", stride))
    rng = rng or np.random.default_rng(0)
    grid = (_ceil(n, _threads("strided_read", "strided_read")),)
    step = _step("strided_read", "strided_read", grid, ("x", "y", np.int32(n), np.int32(stride)))
    return Plan("strided_read", lambda: {"x": _random(rng, n * stride)}, {"y": (n,)}, [step], "y",
                lambda xp, i: i["x"][::stride][:n].astype(xp.float64), strided_read(n, stride),
                rtol=0, atol=0, sizes={"n": n, "stride": stride})


def plan_gemm(kernel: str, m: int, n: int, k: int, rng=None) -> Plan:
    """C = A B with one of the GEMM kernels: gemm_naive, gemm_smem16, gemm_reg128, gemm_spill."""
    _check.choice("kernel", kernel, (*GEMM_LADDER, "gemm_spill"))
    m, n, k = (int(_check.size(name, v)) for name, v in (("m", m), ("n", n), ("k", k)))
    rng = rng or np.random.default_rng(0)
    args = ("A", "B", "C", np.int32(m), np.int32(n), np.int32(k))
    block, thread = info(kernel).block, info(kernel).thread
    if block is None:  # the naive kernel: one result per thread, a 16 x 16 patch of C per block
        block_x, block_y = info(kernel).functions[kernel]
        step = _step(kernel, kernel, (_ceil(n, block_x), _ceil(m, block_y)), args)
        workload = kernel_gemm(kernel, m, n, k)
    else:
        step = _step(kernel, kernel, (_ceil(n, block[1]), _ceil(m, block[0])), args)
        fits = block[0] <= m and block[1] <= n and block[2] <= k
        workload = kernel_gemm(kernel, m, n, k) if fits else None
    return Plan(
        kernel, lambda: {"A": _random(rng, m, k), "B": _random(rng, k, n)}, {"C": (m, n)}, [step], "C",
        lambda xp, i: i["A"].astype(xp.float64) @ i["B"].astype(xp.float64), workload, rtol=1e-4, atol=1e-4 * np.sqrt(k), sizes={"m": m, "n": n, "k": k},
    )


def plan_gemm_raster(m: int, n: int, k: int, group: int, rng=None) -> Plan:
    """C = A B with the 128 x 128 / 8 x 8 kernel, blocks taking tiles of C in row-major
    order (`group` = 0) or `group` rows at a time (chapter 4's rasterisation)."""
    m, n, k = (int(_check.size(name, v)) for name, v in (("m", m), ("n", n), ("k", k)))
    group = int(_check.size("group + 1", group + 1)) - 1
    plan = plan_gemm("gemm_reg128", m, n, k, rng)
    b_m, b_n, _ = info("gemm_reg128_raster").block
    blocks = _ceil(m, b_m) * _ceil(n, b_n)
    step = _step("gemm_reg128_raster", "gemm_reg128_raster", (blocks,), plan.steps[0].args + (np.int32(group),))
    return Plan("gemm_reg128_raster", plan.draw, plan.outputs, [step], plan.result, plan.reference, plan.workload,
                plan.rtol, plan.atol, {**plan.sizes, "group": group})


def plan_transpose(kernel: str, n: int, rng=None) -> Plan:
    """out = in^T for an n x n matrix: transpose_naive, transpose_smem or transpose_padded.
    The model has no term for the naive kernel's strided writes (coalescing, chapter 2)."""
    _check.choice("kernel", kernel, TRANSPOSES)
    n = int(_check.size("n", n))
    rng = rng or np.random.default_rng(0)
    step = _step(kernel, kernel, (_ceil(n, TRANSPOSE_TILE), _ceil(n, TRANSPOSE_TILE)), ("in", "out", np.int32(n)))
    workload = None if kernel == "transpose_naive" else transpose(n, padded=kernel == "transpose_padded")
    return Plan(kernel, lambda: {"in": _random(rng, n, n)}, {"out": (n, n)}, [step], "out",
                lambda xp, i: i["in"].T, workload, rtol=0, atol=0, sizes={"n": n})


def attention_reference(xp, i, dtype="float64"):
    """softmax(Q K^T / sqrt(d)) V per head, in `dtype`, with array module `xp`: the
    reference in float64; in float32 on a GPU, standard attention as a library runs it
    (batched matmuls in cuBLAS, the n x n matrices through HBM)."""
    q, k, v = (i[name].astype(dtype, copy=False) for name in "QKV")
    scale = np.dtype(dtype).type(1 / np.sqrt(q.shape[-1]))  # in `dtype`: a float64 scalar would widen FP32 under NEP 50 (CuPy 14)
    scores = (q @ k.swapaxes(-1, -2)) * scale
    weights = xp.exp(scores - scores.max(axis=-1, keepdims=True))
    return (weights / weights.sum(axis=-1, keepdims=True)) @ v


def plan_attention(kind: str, heads: int, n: int, d: int = FLASH_D, rng=None) -> Plan:
    """Attention forward in FP32 over `heads` heads of n x d: "standard" (scores, softmax,
    PV: three kernels, the n x n matrix in HBM) or "flash" (one kernel, d = 64 only)."""
    _check.choice("kind", kind, ("standard", "flash"))
    heads, n, d = (int(_check.size(name, v)) for name, v in (("heads", heads), ("n", n), ("d", d)))
    if kind == "flash" and d != FLASH_D:
        raise ValueError(f"d must be {FLASH_D} for the flash kernel, got {d}")
    rng = rng or np.random.default_rng(0)
    scale = np.float32(1 / np.sqrt(d))

    def inputs():
        return {name: _random(rng, heads, n, d) for name in "QKV"}

    if kind == "flash":
        kernel = "attention_flash"
        steps = [_step(kernel, "flash_attn_d64", (_ceil(n, FLASH_BLOCK[0]), heads), ("Q", "K", "V", "O", np.int32(n), scale))]
        outputs = {"O": (heads, n, d)}
        fits = FLASH_BLOCK[0] <= n and FLASH_BLOCK[1] <= n
        workload = attention(1, heads, n, d, "fp32", "flash", block=FLASH_BLOCK) if fits else None
    else:
        kernel = "attention_standard"
        tile_x, tile_y = info(kernel).functions["attn_scores"]
        steps = [
            _step(kernel, "attn_scores", (_ceil(n, tile_x), _ceil(n, tile_y), heads), ("Q", "K", "S", np.int32(n), np.int32(d), scale)),
            _step(kernel, "attn_softmax", (n, heads), ("S", "P", np.int32(n))),
            _step(kernel, "attn_pv", (_ceil(d, tile_x), _ceil(n, tile_y), heads), ("P", "V", "O", np.int32(n), np.int32(d))),
        ]
        outputs = {"S": (heads, n, n), "P": (heads, n, n), "O": (heads, n, d)}
        workload = attention(1, heads, n, d, "fp32", "standard")
    return Plan(kernel, inputs, outputs, steps, "O",
                attention_reference, workload, rtol=1e-4, atol=1e-5,
                sizes={"heads": heads, "n": n, "d": d})

SWEEP_BLOCKS = 1024


def plan_sweep(n: int, passes: int = 20, rng=None) -> Plan:
    """Read n floats (as n/4 float4s) `passes` times: chapter 1's working-set sweep. Each
    thread's sum of what it read is checked against NumPy."""
    n4 = int(_check.size("n", n)) // 4
    if n4 < 1:
        raise ValueError(f"n must be at least 4, got {n}")
    passes = int(_check.size("passes", passes))
    rng = rng or np.random.default_rng(0)
    per_block = _threads("sweep_read", "sweep_read")
    blocks = min(SWEEP_BLOCKS, _ceil(n4, per_block))
    threads = blocks * per_block

    def reference(xp, i):
        sums = i["x"].astype(xp.float64).reshape(-1, 4).sum(axis=1)
        padded = xp.zeros(_ceil(n4, threads) * threads)
        padded[:n4] = sums
        return passes * padded.reshape(-1, threads).sum(axis=0)

    step = _step("sweep_read", "sweep_read", (blocks,), ("x", "out", np.int32(n4), np.int32(passes)))
    return Plan("sweep_read", lambda: {"x": _random(rng, n4 * 4)}, {"out": (threads,)}, [step], "out", reference, None,
                rtol=1e-4, atol=1e-3 * passes, sizes={"n": 4 * n4, "passes": passes, "bytes_read": 16 * n4 * passes})
