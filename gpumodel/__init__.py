"""gpumodel: the analytic model of the GPU memory hierarchy behind the course.

`import gpumodel as gm`, then `gm.predict(gm.gemm(4096, 4096, 4096, block=(128, 128),
thread=(8, 8)), "A100-40GB")`. Chapter 1 of the course defines the model.

The folders are the layers, lowest first (a test holds every import to them):
- `gpumodel/*.py`, the core, NumPy only: the hardware as data (`hardware`, `presets`), the
  workloads, the model, the simulations that count bytes, occupancy, tiles, waves,
  tensor-core formulas, units, others' measurements (`published`);
- `gpumodel/cuda/`: compiles, launches and times the kernels (CuPy, lazily); recorded runs;
- `gpumodel/lab/`: the kernel lab, any kernel traced on the CPU (the emulator, g++);
- `gpumodel/course/`: each chapter's exercises, plots, tables, widgets;
- `gpumodel/book/`: the chapters' glue, the learners' notebooks, the site's Sphinx hook.
"""

from . import simulate
from ._lazy import submodules
from .expected import Expectation
from .published import expect
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
    fmt_list,
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

__getattr__ = submodules(__name__, __file__)
"""Submodules and subpackages (`gm.occupancy`, `gm.course`, `gm.cuda`, `gm.lab`, `gm.book`) load on first use."""


__all__ = [
    "BOUNDS", "Expectation", "Fact", "GPU", "LEVELS", "Prediction", "Workload",
    "attention", "attention_backward", "attention_memory", "catalogue", "elementwise_chain", "expect", "flash_block",
    "fmt_bandwidth", "fmt_bound", "fmt_bytes", "fmt_capacity", "fmt_count", "fmt_flops",
    "fmt_intensity", "fmt_list", "fmt_number", "fmt_percent", "fmt_time", "gemm", "gemm_ideal", "gemm_requests", "gpu", "label", "predict", "preset_names",
    "score_matrix_bytes", "seed_kernels", "simulate", "strided_read", "transpose", "vector_add",
    "warp_sectors",
]
