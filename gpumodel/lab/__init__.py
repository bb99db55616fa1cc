"""The kernel lab: any CUDA C kernel run on the CPU, its every global and shared-memory access
traced and turned into the bytes, sectors and wavefronts of each level and the model's time.

Add here: the CPU emulator (`emulator`, header `cuda_emu.h`), the traced run (`tracer`:
`gm.lab.trace(source, kernel, grid, block, args)`, runtime `trace_runtime.cpp`), the report a
learner reads (`Trace.report`), and the same kernel on a GPU where one answers (`measure`:
`gm.lab.run`); `dwarf` reads the columns of the traced code.
"""

from .._lazy import submodules
from .measure import LabRun, run
from .tracer import LabError, Race, Trace, trace

__all__ = ["LabError", "LabRun", "Race", "Trace", "run", "trace"]

__getattr__ = submodules(__name__, __file__)
