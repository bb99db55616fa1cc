"""The course's kernels by id: one id per kernel, used everywhere (workloads, launch plans,
recorded runs, compiler reports, tables), with the label a reader sees looked up from it.

Each kernel names its source file in `kernels/`, its CUDA functions with the threads per
block each is launched with, and, for the tiled GEMMs, the block and thread tiles the model
counts with. Chapters 1 to 5.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Kernel:
    """A kernel the course runs: display `label`, source `file`, `functions` (CUDA function
    -> threads per block, (x, y)), and for a tiled GEMM its `block` tile (bM, bN, bK),
    `thread` tile (tM, tN: a warp's tile on the tensor cores) and `layout`, how its threads
    read their operands from shared memory as the compiler issues the loads
    (`gpumodel.workloads.LAYOUTS`; each kernel's SASS is in `data/compiler_reports.json`).
    A kernel with no `file` is one the course models but leaves to a library (the fp16 GEMM
    of chapters 4 and 6)."""

    label: str
    file: str
    functions: dict
    block: tuple | None = None
    thread: tuple = (1, 1)
    layout: str = "strided"


THREADS = (256, 1)
"""The elementwise kernels' block: 256 threads."""
TILE16 = (16, 16)

KERNELS = {
    "vector_add": Kernel("vector add", "elementwise.cu", {"vector_add": THREADS}),
    "chain_unfused": Kernel("relu, scale, bias: three kernels", "elementwise.cu",
                            {"relu": THREADS, "scale": THREADS, "add_bias": THREADS}),
    "chain_fused": Kernel("relu/scale/bias, fused", "elementwise.cu", {"relu_scale_bias": THREADS}),
    "strided_read": Kernel("strided read", "elementwise.cu", {"strided_read": THREADS}),
    "sweep_read": Kernel("working-set sweep", "sweep.cu", {"sweep_read": THREADS}),
    "gemm_naive": Kernel("naive GEMM", "gemm.cu", {"gemm_naive": TILE16}),
    "gemm_smem16": Kernel("GEMM, 16x16 tiles", "gemm.cu", {"gemm_smem16": TILE16}, (16, 16, 16),
                          layout="strided_a128"),  # A's row read four words at a time (LDS.128)
    "gemm_reg128": Kernel("GEMM, 128x128 / 8x8", "gemm.cu", {"gemm_reg128": TILE16}, (128, 128, 8), (8, 8)),
    "gemm_reg128_raster": Kernel("GEMM, 128x128 / 8x8, block order set at launch", "gemm.cu",
                                 {"gemm_reg128_raster": TILE16}, (128, 128, 8), (8, 8)),
    "gemm_fp16": Kernel("fp16 GEMM, 128x128 / 64x64 warp tiles (tensor cores)", "", {}, (128, 128, 32), (64, 64)),
    "gemm_spill": Kernel("GEMM, 128x128 / 16x16 (spills)", "gemm.cu", {"gemm_spill": (8, 8)}, (128, 128, 8), (16, 16)),
    "transpose_naive": Kernel("transpose, naive", "transpose.cu", {"transpose_naive": (32, 8)}),
    "transpose_smem": Kernel("transpose, plain", "transpose.cu", {"transpose_smem": (32, 8)}),
    "transpose_padded": Kernel("transpose, padded", "transpose.cu", {"transpose_padded": (32, 8)}),
    "attention_standard": Kernel("standard attention", "attention.cu",
                                 {"attn_scores": TILE16, "attn_softmax": THREADS, "attn_pv": TILE16}),
    "attention_flash": Kernel("FlashAttention forward", "attention.cu", {"flash_attn_d64": (64, 1)}),
}
GEMM_LADDER = ("gemm_naive", "gemm_smem16", "gemm_reg128")
"""Chapter 3's ladder of GEMM kernels, slowest first."""
TRANSPOSES = ("transpose_naive", "transpose_smem", "transpose_padded")


def label(kernel: str) -> str:
    """The label a reader sees for kernel id `kernel`."""
    return info(kernel).label


def info(kernel: str) -> Kernel:
    """The `Kernel` of id `kernel`."""
    if not isinstance(kernel, str) or kernel not in KERNELS:
        raise ValueError(f"kernel must be one of {list(KERNELS)}, got {kernel!r}")
    return KERNELS[kernel]


def threads_per_block(function: str) -> int:
    """Threads per block CUDA function `function` is launched with."""
    if not isinstance(function, str):
        raise ValueError(f"function must be the name of a CUDA function of kernels/*.cu, got {function!r}")
    for k in KERNELS.values():
        if function in k.functions:
            x, y = k.functions[function]
            return x * y
    raise ValueError(f"function must be a CUDA function of kernels/*.cu, got {function!r}")
