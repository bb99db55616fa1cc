"""gpumodel: the analytic model of the GPU memory hierarchy behind the course.

`import gpumodel as gm`, then `gm.predict(gm.gemm(4096, 4096, 4096, block=(128, 128),
thread=(8, 8)), "A100-40GB")`. Chapter 1 of the course defines the model.

Layers, lowest first (a test holds every import to them):
- core, NumPy only: `hardware`, `presets` (the GPU data files), `kernel_info`, `workloads`,
  `model`, `simulate`, `occupancy`, `waves`, `tiles`, `units`, `published` (others' measurements);
- GPU side: `compiler`, `kernel_plans`, `gpu_runtime`, `cpu_timing`, `recorded_runs`,
  `literature`, `validate` (CuPy only inside, lazily);
- rendering: `tables`, `plots`, `exercises`, `widgets`, `widget_exercises`, `chapter`, `notebooks`.
"""

from . import simulate
from .hardware import GPU, LEVELS, Fact
from .kernel_info import label
from .model import BOUNDS, Prediction, predict
from .presets import gpu, preset_names
from .units import (
    fmt_bandwidth,
    fmt_bound,
    fmt_bytes,
    fmt_capacity,
    fmt_count,
    fmt_flops,
    fmt_intensity,
    fmt_number,
    fmt_percent,
    fmt_time,
)
from .workloads import (
    Workload,
    attention,
    attention_backward,
    attention_memory,
    catalogue,
    elementwise_chain,
    flash_block,
    gemm,
    gemm_ideal,
    gemm_requests,
    score_matrix_bytes,
    seed_kernels,
    strided_read,
    transpose,
    vector_add,
    warp_sectors,
)

_LAZY = ("chapter", "compiler", "cpu_timing", "exercises", "gpu_runtime", "kernel_info", "kernel_plans",
         "literature", "notebooks", "occupancy", "plots", "published", "recorded_runs", "tables", "tensor_cores", "tiles",
         "waves", "widget_exercises", "widgets")
"""Submodules loaded on first use (`gm.plots`), so `import gpumodel` loads neither matplotlib,
ipywidgets nor CuPy."""


def __getattr__(name):
    if name in _LAZY:
        import importlib

        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module 'gpumodel' has no attribute {name!r}")


__all__ = [
    "BOUNDS", "Fact", "GPU", "LEVELS", "Prediction", "Workload",
    "attention", "attention_backward", "attention_memory", "catalogue", "elementwise_chain", "flash_block",
    "fmt_bandwidth", "fmt_bound", "fmt_bytes", "fmt_capacity", "fmt_count", "fmt_flops",
    "fmt_intensity", "fmt_number", "fmt_percent", "fmt_time", "gemm", "gemm_ideal", "gemm_requests", "gpu", "label", "predict", "preset_names",
    "score_matrix_bytes", "seed_kernels", "simulate", "strided_read", "transpose", "vector_add",
    "warp_sectors",
]
