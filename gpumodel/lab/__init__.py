"""The kernel lab: any CUDA C kernel run on the CPU, its every global and shared-memory access
traced and turned into the bytes, sectors and wavefronts of each level and the model's time.

Four rooms, the source passing through them one way (ARCHITECTURE.md, "The kernel lab"):
`reader` (declarations, templates, name expressions, arguments, the line table; `dwarf` reads
the columns), `builder` (g++ against `cuda_emu.h`, the private cache), `runner` (the run within
`limits`, its faults; the plain CPU `Emulator`), `reporter` (`gm.lab.trace`, the `Trace` a
learner reads). The same kernel on a GPU where one answers: `measure` (`gm.lab.run`). A Triton
kernel takes another way in, Triton's own interpreter (`triton_trace`, `gm.lab.trace_triton`),
to the same `Trace`.
"""

from .._lazy import submodules
from .builder import prepare
from .limits import LabError
from .measure import LabRun, run
from .reporter import Program, Race, Trace, run_program, trace
from .triton_trace import TritonTrace, tensor_descriptor, trace_triton, triton_kernel

__all__ = ["LabError", "LabRun", "Program", "Race", "Trace", "TritonTrace", "prepare", "run", "run_program", "tensor_descriptor", "trace", "trace_triton", "triton_kernel"]

__getattr__ = submodules(__name__, __file__)
