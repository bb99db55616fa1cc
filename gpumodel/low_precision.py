"""Low precision in practice, as bytes and flops, in the small formulas of chapter 7.

They are:

- wgmma's K step holds 32 bytes of each row, so k = 16 for fp16 and 32 for fp8 (`wgmma_k`);
- Hopper's fp8 wgmma accumulates with limited precision, so DeepSeek-V3 promotes its partial
  sums to FP32 on the CUDA cores every 128 elements of K (`promotion_flops`);
- block-scaled formats carry a scale per block: MXFP8 one byte per 32 elements, NVFP4 one
  byte per 16 (`bytes_per_element`, `block_scaled_bytes`);
- narrow weights are widened in registers before the MMA (`dequant_ops_per_flop`);
- a decode batch below wgmma's M = 64 wastes rows unless A and B swap (`swap_ab_use`).

Sources: the PTX ISA (wgmma shapes), the DeepSeek-V3 report (section 3.3.2), the OCP MX
specification and NVIDIA's NVFP4 note. NumPy only.
"""

from __future__ import annotations

import numpy as np

from . import _check

WGMMA_K_BYTES = 32
"""Bytes of each operand row one wgmma consumes along K (PTX ISA: k16 for fp16, k32 for fp8)."""
WGMMA_M = 64
"""Rows of A (and of the result) in one Hopper wgmma."""
WGMMA_N_STEP = 8
"""wgmma's N is a multiple of 8, from 8 to 256."""
PROMOTION_INTERVAL = 128
"""Elements of K between promotions of an fp8 GEMM's partial sums to FP32 (DeepSeek-V3, N_C)."""
FORMATS = {
    # name: (bytes per element, elements per block sharing a scale, bytes per scale)
    "fp16": (2.0, None, 0), "fp8": (1.0, None, 0),
    "mxfp8": (1.0, 32, 1), "mxfp4": (0.5, 32, 1), "nvfp4": (0.5, 16, 1),
}
"""Storage formats: MX formats share one E8M0 byte per 32 elements (OCP MX v1.0); NVFP4 one
E4M3 byte per 16 (NVIDIA). Per-tensor scales are left out (a few bytes per tensor)."""
ELEMENT_BYTES = {"fp16": 2, "bf16": 2, "fp8": 1}


def wgmma_k(dtype: str):
    """K of one Hopper wgmma for `dtype` inputs: 32 bytes of each row, so 16 fp16 or bf16
    elements, 32 fp8. Chapter 7."""
    return WGMMA_K_BYTES // ELEMENT_BYTES[_check.choice("dtype", dtype, ELEMENT_BYTES)]


def promotion_flops(k, interval: int = PROMOTION_INTERVAL):
    """(tensor FLOPs, CUDA-core FLOPs) per output element of an fp8 GEMM of depth `k` whose
    partial sums are promoted to FP32 every `interval` elements: 2k on the tensor cores; one
    multiply by the block's scale and one add into the FP32 sum per promotion on the CUDA
    cores, 2 ceil(k / interval). Chapter 7."""
    k = _check.size("k", k)
    interval = _check.size("interval", interval)
    return _check.as_output(2.0 * k), _check.as_output(2.0 * np.ceil(k / interval))


def bytes_per_element(fmt: str) -> float:
    """Bytes one element of `fmt` costs, its share of its block's scale included. Chapter 7."""
    size, block, scale = FORMATS[_check.choice("fmt", fmt, FORMATS)]
    return size + (scale / block if block else 0.0)


def block_scaled_bytes(elements, fmt: str):
    """Bytes of `elements` values in `fmt`: the values and one scale per (started) block.
    Chapter 7."""
    n = _check.size("elements", elements)
    size, block, scale = FORMATS[_check.choice("fmt", fmt, FORMATS)]
    scales = np.ceil(n / block) * scale if block else 0
    return _check.as_output(n * size + scales)


def dequant_ops_per_flop(batch, ops_per_weight):
    """Instructions on the CUDA cores per tensor-core FLOP when each weight is widened
    (unpacked, converted, scaled) with `ops_per_weight` instructions and then used by
    `batch` rows: the weight feeds 2 x batch FLOPs. Chapter 7."""
    b = _check.size("batch", batch)
    ops = _check.real("ops_per_weight", ops_per_weight, least=0)
    return _check.as_output(ops / (2.0 * b))


def swap_ab_use(batch, swapped: bool = False):
    """The fraction of a Hopper wgmma's work that is useful when a decode step multiplies
    `batch` rows of activations by the weights: as M (64 rows per wgmma) batch / 64 rounded
    up to whole wgmmas; swapped (weights as A, activations as B, computing the transpose),
    the batch is N, padded to a multiple of 8. Chapter 7."""
    b = _check.size("batch", batch)
    _check.flag("swapped", swapped)
    step = WGMMA_N_STEP if swapped else WGMMA_M
    return _check.as_output(b / (np.ceil(b / step) * step))
