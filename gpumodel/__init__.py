"""gpumodel: the analytic model of the GPU memory hierarchy behind the course.

`import gpumodel as gm`, then `gm.predict(gm.gemm(4096, 4096, 4096, block=(128, 128),
thread=(8, 8)), gm.gpu("A100-40GB"))`. Chapter 1 of the course defines the model.
"""

from . import simulate
from .hardware import GPU, LEVELS, Figure
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
    gemm,
    score_matrix_bytes,
    seed_kernels,
    strided_read,
    transpose,
    vector_add,
    warp_sectors,
)

_LAZY = ("book", "compiler", "exercises", "ladder", "launches", "measure", "measurements", "occupancy", "plots",
         "published", "runtime", "tables", "tiles", "waves", "widgets")
"""Submodules loaded on first use (`gm.plots`), so `import gpumodel` loads neither matplotlib,
ipywidgets nor CuPy."""


def __getattr__(name):
    if name in _LAZY:
        import importlib

        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module 'gpumodel' has no attribute {name!r}")


__all__ = [
    "BOUNDS", "Figure", "GPU", "LEVELS", "Prediction", "Workload",
    "attention", "attention_backward", "attention_memory", "catalogue", "elementwise_chain", "fmt_bandwidth", "fmt_bound", "fmt_bytes", "fmt_capacity", "fmt_count", "fmt_flops",
    "fmt_intensity", "fmt_number", "fmt_percent", "fmt_time", "gemm", "gpu", "predict", "preset_names",
    "score_matrix_bytes", "seed_kernels", "simulate", "strided_read", "transpose", "vector_add",
    "warp_sectors",
]
