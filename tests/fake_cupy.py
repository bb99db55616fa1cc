"""A CPU stand-in for the parts of CuPy that `gpumodel.cuda.runtime` and `gpumodel.cuda.validate`
use, as strict as CuPy (tests/test_runtime.py checks its surface against the installed CuPy):

- no name CuPy lacks, and no NumPy fallback: a missing name is an AttributeError;
- device arrays are copies of host arrays; implicit conversion to NumPy and mixing host
  arrays into device arithmetic are TypeErrors, as in CuPy;
- `RawKernel` launches take tuples, check the launch limits of the device's compute
  capability, and take scalar arguments only as NumPy scalars of the parameter's exact C
  type (CuPy passes a Python int as a 64-bit and a float as a double: wrong on a GPU);
- launches are asynchronous: they run (on the CPU emulator) at the next synchronisation,
  and an event has a time only once the stream ran past it;
- a kernel can be made to fault (`_fake.fault`), which makes every later CUDA call fail
  (a sticky error), as an illegal address does;
- type promotion follows CuPy 14 (NEP 50) or CuPy 13 (a NumPy scalar does not widen an
  array of its kind).

It checks our code's logic on the GPU path, not CuPy and not a GPU. Test hooks live on the
module's private `_fake` (a `Control`)."""

from __future__ import annotations

import math
import time
import types

import numpy as np

from gpumodel.lab.reader import element_type, parameters
from gpumodel.lab.runner import Emulator
from gpumodel import presets
from gpumodel.cuda import compiler

DEVICES = {  # what cudaDeviceGetAttribute reports (clocks in kHz, bus in bits), and the arch of the recorded NVRTC report
    "H100": ("NVIDIA H100 80GB HBM3 (CPU stand-in)", (9, 0), "sm_90", {
        "MultiProcessorCount": 132, "ClockRate": 1980000, "MemoryClockRate": 2619000,
        "GlobalMemoryBusWidth": 5120, "L2CacheSize": 50 * 2**20,
        "MaxSharedMemoryPerMultiprocessor": 233472, "MaxRegistersPerMultiprocessor": 65536}),
    "T4": ("Tesla T4 (CPU stand-in)", (7, 5), "sm_80", {  # no sm_75 report is recorded: sm_80's registers
        "MultiProcessorCount": 40, "ClockRate": 1590000, "MemoryClockRate": 5001000,
        "GlobalMemoryBusWidth": 256, "L2CacheSize": 4 * 2**20,
        "MaxSharedMemoryPerMultiprocessor": 65536, "MaxRegistersPerMultiprocessor": 65536}),
}
STATIC_SMEM_LIMIT = 48 * 1024
"""Static shared memory per block: larger needs dynamic shared memory and an opt-in."""
GRID_LIMITS, BLOCK_LIMITS = (2**31 - 1, 65535, 65535), (1024, 1024, 64)
LAB_REGISTERS = 32
"""Registers per thread the stand-in gives a kernel with no recorded compiler report."""


class CUDARuntimeError(RuntimeError):
    pass


class CUDADriverError(RuntimeError):
    pass


class Control:
    """Test hooks: the queue of work not yet run, counters, faults."""

    def __init__(self, emulator, device: str, promotion: int):
        self.emulator, self.device, self.promotion = emulator, device, promotion
        self.attributes = dict(DEVICES[device][3])  # what Device().attributes reports
        self.pending: list = []  # callables the stream has not run yet
        self.capture: list | None = None  # a stream capture in progress
        self.sticky: str | None = None
        self.faults: set = set()  # kernel names whose next launch faults
        self.lookups = 0  # RawModule.get_function calls
        self.launches = 0  # kernels run
        self.synchronizations = 0

    def check(self):
        """Raise the sticky error, if one happened."""
        if self.sticky:
            raise CUDARuntimeError(self.sticky)

    def fault(self, kernel: str):
        self.faults.add(kernel)

    def enqueue(self, work):
        self.check()
        (self.capture if self.capture is not None else self.pending).append(work)

    def drain(self):
        """Run everything queued (a synchronisation)."""
        self.check()
        if self.capture is not None:
            raise CUDARuntimeError("cudaErrorStreamCaptureUnsupported: operation not permitted when stream is capturing")
        self.synchronizations += 1
        while self.pending:
            work = self.pending.pop(0)
            try:
                work()
            except CUDARuntimeError as err:
                self.pending.clear()
                self.sticky = str(err)
                raise


def make(build_dir, device: str = "H100", promotion: int = 14):
    """A module object standing in for `cupy` on `device` ("H100" or "T4"), its kernels run by
    an Emulator in `build_dir`, with CuPy `promotion` rules (13 or 14)."""
    if promotion not in (13, 14):
        raise ValueError(f"promotion must be 13 or 14, got {promotion!r}")
    name, capability, arch, attributes = DEVICES[device]
    limits = presets.capability(capability)
    reports = {(r.file, r.kernel): r for r in compiler.recorded()["reports"] if r.arch == arch}
    control = Control(Emulator(build_dir), device, promotion)
    source_file = {compiler.kernel_source(p.name): p.name for p in compiler.kernel_dir().glob("*.cu")}

    def host(x):
        """The NumPy operand behind `x`: device arrays unwrapped; host arrays refused."""
        if isinstance(x, ndarray):
            control.drain()
            return x._a
        if isinstance(x, np.ndarray):
            raise TypeError(f"Unsupported type {type(x)}")
        if promotion == 13 and isinstance(x, np.generic):
            return x.item()  # CuPy 13: a scalar does not widen an array of its kind
        return x

    def wrap(result):
        return ndarray(np.asarray(result)) if isinstance(result, (np.ndarray, np.generic)) else result

    def op(fn):
        return lambda *args, **kwargs: wrap(fn(*map(host, args), **{k: host(v) for k, v in kwargs.items()}))

    class ndarray:
        """A device array: a private NumPy array that only device code and CuPy's methods touch."""

        def __init__(self, a):
            self._a = a

        shape = property(lambda self: self._a.shape)
        dtype = property(lambda self: self._a.dtype)
        size = property(lambda self: self._a.size)
        ndim = property(lambda self: self._a.ndim)
        nbytes = property(lambda self: self._a.nbytes)
        T = property(lambda self: wrap(host(self).T))

        def get(self):
            return host(self).copy()

        def item(self):
            return host(self).item()

        def __array__(self, *args, **kwargs):
            raise TypeError("Implicit conversion to a NumPy array is not allowed. Please use `.get()`")

        def __float__(self):
            return float(host(self))

        def __bool__(self):
            return bool(host(self))

        def __len__(self):
            return len(self._a)

        def __getitem__(self, key):
            return wrap(host(self)[key])

        def __setitem__(self, key, value):
            host(self)[key] = host(value)

    for method in ("astype", "ravel", "reshape", "swapaxes", "sum", "max", "min", "copy", "fill", "mean"):
        setattr(ndarray, method, (lambda m: lambda self, *a, **k: wrap(getattr(host(self), m)(*map(host, a), **k)))(method))
    for dunder in ("add", "radd", "sub", "rsub", "mul", "rmul", "truediv", "rtruediv", "matmul", "rmatmul", "neg",
                   "abs", "lt", "le", "gt", "ge", "eq", "ne", "pow"):
        setattr(ndarray, f"__{dunder}__", (lambda d: lambda self, *a: wrap(getattr(host(self), f"__{d}__")(*map(host, a))))(dunder))
    for dunder in ("iadd", "isub", "imul", "itruediv"):
        def inplace(self, other, d=dunder):
            getattr(host(self), f"__{d}__")(host(other))
            return self
        setattr(ndarray, f"__{dunder}__", inplace)

    def asarray(a, dtype=None):
        if isinstance(a, ndarray):
            return a if dtype is None else a.astype(dtype)
        control.check()
        return ndarray(np.array(a, dtype=dtype, copy=True))  # the host copy travels to the device

    def asnumpy(a):
        return a.get() if isinstance(a, ndarray) else np.asarray(a)

    def allocator(fn):
        def allocate(*args, **kwargs):
            control.check()
            return ndarray(fn(*args, **kwargs))
        return allocate

    def empty_like(a, dtype=None):
        return ndarray(np.empty_like(host(a), dtype=dtype))

    def matmul(a, b, out=None):
        result = np.matmul(host(a), host(b))
        if out is None:
            return ndarray(result)
        host(out)[...] = result
        return out

    def copyto(dst, src):
        np.copyto(host(dst), host(src))

    class RawKernel:
        """One compiled kernel, with the attributes the driver reports (cuFuncGetAttribute)."""

        def __init__(self, code, name, options=()):
            self.code, self.name, self.options = code, name, tuple(options)
            report = reports.get((source_file.get(code), name))
            if report is None:  # a kernel not in kernels/ (the lab's): no recorded report to read
                self.num_regs, self.local_size_bytes, self.shared_size_bytes = LAB_REGISTERS, 0, 0
            else:
                self.num_regs, self.local_size_bytes, self.shared_size_bytes = report.registers, report.stack, report.smem
            self.max_threads_per_block = limits.max_threads_per_block
            self._params = parameters(code, name)

        def __call__(self, grid, block, args, *, shared_mem=0):
            control.check()
            if not (isinstance(grid, tuple) and isinstance(block, tuple) and isinstance(args, tuple)):
                raise TypeError("grid, block and args must be tuples")
            grid3, block3 = (grid + (1, 1))[:3], (block + (1, 1))[:3]
            if (any(b > m for b, m in zip(block3, BLOCK_LIMITS)) or math.prod(block3) > self.max_threads_per_block
                    or any(g > m for g, m in zip(grid3, GRID_LIMITS)) or min(grid3 + block3) < 1):
                raise CUDADriverError(f"CUDA_ERROR_INVALID_VALUE: {self.name} grid {grid} block {block}")
            if (self.shared_size_bytes + shared_mem > STATIC_SMEM_LIMIT
                    or self.num_regs * math.prod(block3) > limits.registers_per_sm):
                raise CUDADriverError(f"CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES: {self.name}")
            if len(args) != len(self._params):
                raise TypeError(f"{self.name} takes {len(self._params)} arguments, got {len(args)}")
            for (ctype, pname), arg in zip(self._params, args):
                want = element_type(ctype)
                if "*" in ctype:
                    if not isinstance(arg, ndarray) or want not in (None, arg.dtype) or not arg._a.flags.c_contiguous:
                        raise TypeError(f"{self.name}: {pname} must be a contiguous {want} device array, got {type(arg)}")
                else:
                    if type(arg) is not want:
                        raise TypeError(f"{self.name}: {pname} is {ctype}, passed {type(arg).__name__} "
                                        f"(CuPy would pass it as {np.asarray(arg).dtype})")
            arrays = tuple(a._a if isinstance(a, ndarray) else a for a in args)

            def run():
                if self.name in control.faults:
                    control.faults.discard(self.name)
                    raise CUDARuntimeError("cudaErrorIllegalAddress: an illegal memory access was encountered")
                control.emulator.launch(self.code, self.name, grid, block, arrays, shared_mem)
                control.launches += 1

            control.enqueue(run)

    class RawModule:
        def __init__(self, code=None, *, options=(), name_expressions=None):
            self.code, self.options, self.names = code, tuple(options), tuple(name_expressions or ())
            control.emulator.compile(code)

        def get_function(self, name):
            control.check()
            if name not in compiler.kernel_names(self.code) and name not in self.names:
                raise CUDADriverError(f"CUDA_ERROR_NOT_FOUND: named symbol not found ({name} has C++ linkage: "
                                      "pass it in name_expressions)")
            control.lookups += 1
            return RawKernel(self.code, name, self.options)

    class Event:
        def __init__(self):
            self._t = None
            self._recorded = False

        def record(self, stream=None):
            self._t, self._recorded = None, True

            def stamp():
                self._t = time.perf_counter()
            control.enqueue(stamp)

        def synchronize(self):
            control.drain()

        @property
        def done(self):
            return self._t is not None

    def get_elapsed_time(start, end):
        control.check()
        if start._t is None or end._t is None:
            raise CUDARuntimeError("cudaErrorNotReady: device not ready")
        return 1e3 * (end._t - start._t)

    class Graph:
        def __init__(self, work):
            self._work = list(work)

        def upload(self, stream=None):
            control.check()

        def launch(self, stream=None):
            for work in self._work:
                control.enqueue(work)

    class Stream:
        def __init__(self, null=False, non_blocking=False, ptds=False, priority=0):
            self.is_non_blocking = non_blocking

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

        def begin_capture(self, mode=None):
            control.check()
            if not self.is_non_blocking:
                raise RuntimeError("cudaErrorStreamCaptureImplicit: capture on the legacy stream is not allowed")
            control.capture = []

        def end_capture(self):
            work, control.capture = control.capture, None
            return Graph(work)

        def is_capturing(self):
            return control.capture is not None

        def synchronize(self):
            control.drain()

    class Device:
        def __init__(self, device=None):
            self.id = 0
            self.attributes = dict(control.attributes)
            self.compute_capability = f"{capability[0]}{capability[1]}"
            self.pci_bus_id = "0000:3B:00.0"

        def synchronize(self):
            control.drain()

    class MemoryPool:
        def free_all_blocks(self, stream=None):
            control.check()

    pool = MemoryPool()
    runtime = types.SimpleNamespace(
        CUDARuntimeError=CUDARuntimeError,
        getDeviceCount=lambda: 1,
        getDeviceProperties=lambda i: {"name": name.encode(), "major": capability[0], "minor": capability[1]},
        driverGetVersion=lambda: 12040,
        runtimeGetVersion=lambda: 12040,
        memGetInfo=lambda: (14 * 10**9, 15 * 10**9) if device == "T4" else (80 * 10**9, 85 * 10**9),
        deviceSynchronize=control.drain,
    )
    driver = types.SimpleNamespace(CUDADriverError=CUDADriverError)
    cuda = types.SimpleNamespace(runtime=runtime, driver=driver, Device=Device, Event=Event, Stream=Stream, Graph=Graph,
                                 get_elapsed_time=get_elapsed_time, MemoryPool=MemoryPool)
    module = types.ModuleType("cupy", "CPU stand-in for CuPy (tests/fake_cupy.py)")
    module.__dict__.update(
        __version__="14.0.0-cpu-stand-in" if promotion == 14 else "13.6.0-cpu-stand-in", _fake=control,
        cuda=cuda, ndarray=ndarray, RawModule=RawModule, RawKernel=RawKernel,
        asarray=asarray, asnumpy=asnumpy, zeros=allocator(np.zeros), ones=allocator(np.ones), empty=allocator(np.empty),
        empty_like=empty_like, matmul=matmul, copyto=copyto, get_default_memory_pool=lambda: pool,
        abs=op(np.abs), exp=op(np.exp), maximum=op(np.maximum), sqrt=op(np.sqrt),
        allclose=lambda a, b, rtol=1e-5, atol=1e-8: ndarray(np.asarray(np.allclose(host(a), host(b), rtol=rtol, atol=atol))),
        float32=np.float32, float64=np.float64, int32=np.int32,
    )
    return module
