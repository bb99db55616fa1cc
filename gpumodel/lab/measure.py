"""The learner's kernel traced on the CPU and, where a GPU answers, compiled by CuPy, checked
against the traced run and timed beside the model's prediction for that GPU: `gm.lab.run`.

Without a GPU the report says so and gives the model's times only: nothing is measured. The
GPU's result is compared with the CPU's (the same kernel, the same inputs), which catches a
race or a missing `__syncthreads()` that one schedule hides; the chapters' checkers compare the
CPU's result with NumPy.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import _check
from ..cuda.runtime import Timing
from ..units import fmt_time
from .limits import LabError
from .reader import ARCH, launched, qualified
from .reporter import Trace, trace


@dataclass(frozen=True)
class Measured:
    """The kernel on a GPU: its `timing` (seconds per launch), the model's `predicted_s` and
    `bound` on that GPU from the traced bytes, and the largest difference from the CPU run's
    arrays (`max_abs_error`: every block runs on the CPU, a sample of them traced)."""

    gpu: str
    timing: Timing
    predicted_s: float
    bound: str
    max_abs_error: float
    matches: bool


@dataclass(frozen=True)
class LabRun:
    """`gm.lab.run`'s result: the `trace`, and `measured` on a GPU (None without one, `why`
    says why not)."""

    trace: Trace
    measured: Measured | None
    why: str
    flops: float = 0.0

    def report(self, gpus=None) -> str:
        """The trace's report (`Trace.report`), then what the GPU measured beside the model."""
        out = [self.trace.report(self.flops, gpus)]
        m = self.measured
        if m is None:
            out.append(f"No GPU answers here ({self.why}): the times above are the model's, nothing was measured.")
            return "\n".join(out)
        t = m.timing
        out.append(f"on {m.gpu}: {fmt_time(t.median_s)} measured (median of {t.samples} samples, "
                   f"{fmt_time(t.min_s)} to {fmt_time(t.max_s)}), the model {fmt_time(m.predicted_s)} "
                   f"({m.bound} bound): measured / model = {t.median_s / m.predicted_s:.2f}")
        if m.matches:
            out.append(f"The GPU's arrays equal the CPU run's (largest difference {m.max_abs_error:.3g}).")
        else:
            out.append(f"The GPU's arrays differ from the CPU run's by up to {m.max_abs_error:.3g}: threads that "
                       "race, or a __syncthreads() missing between writing shared memory and reading it?")
        return "\n".join(out)


def run(source: str, kernel: str, grid, block, args, *, shared_mem: int = 0, arch: str = ARCH, flops: float = 0.0,
        timeout: float = 30.0, repeats: int = 10) -> LabRun:
    """Trace `kernel` (a name or a C++ name expression) of the CUDA C `source` on the CPU
    (`gm.lab.trace`, with `shared_mem` bytes of dynamic shared memory, for `arch`: the arrays in
    `args` hold its result after), and where a GPU answers also compile it with CuPy, launch it
    on copies of the inputs, compare its arrays with the CPU's and time it (`repeats` samples),
    beside the model's time for that GPU. `flops` (FP32) is what the caller counts. Chapter 2's lab."""
    from ..cuda.runtime import gpu_status

    flops, repeats = float(_check.amount("flops", flops)), _check.one("repeats", repeats)
    inputs = [np.array(a) if isinstance(a, np.ndarray) else a for a in args]
    traced = trace(source, kernel, grid, block, args, shared_mem=shared_mem, arch=arch, timeout=timeout)
    ok, why = gpu_status()
    if not ok:
        return LabRun(traced, None, why, flops)
    return LabRun(traced, _on_gpu(source, kernel, traced, inputs, flops, repeats, shared_mem), "", flops)


def _on_gpu(source: str, kernel: str, traced: Trace, inputs: list, flops: float, repeats: int,
            shared_mem: int = 0) -> Measured:
    from ..cuda.compiler import COMPILE_OPTIONS
    from ..cuda.runtime import Runner, live_gpu
    from ..model import predict

    runner = Runner()
    cp = runner.cp
    try:
        named = qualified(source, kernel)  # NVRTC names a kernel in a namespace with it: "vllm::append_kernel"
        module = cp.RawModule(code=source, options=COMPILE_OPTIONS, name_expressions=[named])
        function = module.get_function(named)  # found by its C++ name, as the learner need not write extern "C"
    except Exception as err:  # CuPy's CompileException, or the driver's error  # noqa: BLE001
        raise LabError(f"CuPy (NVRTC) does not compile {kernel}, though g++ did:\n{err}") from None
    # A scalar as its parameter's exact C type: CuPy passes a Python int as 64 bits, a float as a double.
    args = tuple(cp.asarray(v) if isinstance(v, np.ndarray) else v for v in launched(source, kernel, inputs)[1])
    grid, block = tuple(traced.grid), tuple(traced.block)
    try:
        function(grid, block, args, shared_mem=shared_mem)
        got = [a.get() for a in args if not isinstance(a, np.generic)]
        timing = runner.time(lambda: function(grid, block, args, shared_mem=shared_mem), repeats)
    except Exception as err:  # CUDARuntimeError, CUDADriverError  # noqa: BLE001
        raise LabError(f"{kernel} failed on the GPU ({err}). A CUDA error is sticky: restart the notebook's "
                       "kernel before the next GPU run.") from None
    error = max((float(np.abs(g.astype(np.float64) - c).max(initial=0.0)) for g, c in zip(got, traced.arrays)),
                default=0.0)
    matches = all(np.allclose(g, c, rtol=1e-4, atol=1e-5) for g, c in zip(got, traced.arrays))
    device = live_gpu()
    p = predict(traced.workload(flops), device)
    return Measured(device.name, timing, float(p.time), str(p.bound), error, matches)
