"""Triton kernels in the lab: a `@triton.jit` kernel run by Triton's own interpreter on the CPU
(`TRITON_INTERPRET`'s), every program's loads and stores recorded, and the same `Trace` the
CUDA lab returns (`gm.lab.trace_triton`). Chapter 4's Triton lab.

What it counts, and why (ARCHITECTURE.md, "The kernel lab"): Triton's compiler, not the
kernel's author, decides which thread loads which element of a block and what is staged in
shared memory. So a program's `tl.load` or `tl.store` of a block is charged the distinct 32-byte
sectors its unmasked addresses touch, as a coalesced layout reaches them (a compiled layout can
only touch as many or more); an element that straddles two sectors costs both; masked-off lanes
cost nothing. Its requests are warp instructions of 16-byte vectors (a warp moves at most 512 B
an instruction), at least one. `l2` is each sector once per program (what leaves L1 if it keeps
what a program loads), `hbm` each distinct sector of the launch once, as in the CUDA lab;
`Trace.bytes_on(gpu)` also runs the wave model of chapter 4 on the recorded sectors: the
programs in launch order (`program_id(0)` fastest) in waves of one per SM, HBM supplying each
sector a wave reads once while the wave's distinct sectors fit the GPU's L2 (a share
L2 / working set of the reuse otherwise), nothing kept from one wave to the next, every
sector written once. A `tl.dot` is charged 2MNK flops on the tensor cores of its inputs'
precision (fp32 inputs: TF32, Triton's default). An atomic (`tl.atomic_add`, `tl.atomic_cas`
...) is charged as a store of the sectors it touches: it is done at L2, its sector written
there. Nothing else is counted: the shared memory a
dot's operands cross is the compiler's, left out; the L1/shared-memory data path carries the
global requests, as for a CUDA kernel.

Arrays are NumPy arrays (read and written in place) or PyTorch CPU tensors. Triton is an
optional dependency (`pip install 'gpumodel[triton]'`); nothing else of the package needs it.
"""

from __future__ import annotations

import contextlib
import hashlib
import inspect
import linecache
import math
import sys
import traceback
from dataclasses import dataclass, field

import numpy as np

from .. import _check
from ..hardware import REGISTER_BYTES_PER_FLOP, SECTOR_BYTES
from ..model import predict
from ..presets import gpu as preset, preset_names
from ..published import expect
from ..workloads import Workload
from . import triton_adapter as adapter
from .limits import LabError
from .reporter import Site, Trace

INSTALL = "pip install 'gpumodel[triton]' (Triton; Colab has it already)"
VECTOR_BYTES = 16
"""The widest load a thread issues (ld.global.v4.b32): a warp instruction moves at most 32 x 16 B."""
ALIGN = 256
"""Where each array starts, as cudaMalloc places it (256-byte aligned), so that sectors fall as on a GPU."""
MAX_PROGRAMS = 1 << 16
"""The most programs a trace runs: the interpreter takes about a millisecond or more per program."""
DOT_MATH = {"fp16": "fp16", "bf16": "bf16", "fp32": "tf32", "fp8e4nv": "fp8", "fp8e5": "fp8"}
"""The tensor-core precision of a `tl.dot` by its inputs' Triton type."""


@dataclass
class _Access:
    """One program's `tl.load` or `tl.store` of a block."""

    program: int  # its place in launch order
    line: int
    called_at: int
    write: bool
    size: int  # bytes per element
    lanes: int  # elements of the block
    sectors: np.ndarray  # distinct sector numbers its active lanes touch, in the arrays' GPU-like addresses
    active: int


@dataclass
class TritonTrace(Trace):
    """`Trace` of a Triton kernel (`trace_triton`): sites by line of the Python source, with the
    dots' flops (`dot_flops`, on `math`) and what each program touched, for `bytes_on`."""

    dot_flops: float = 0.0
    math: str = "fp32"
    reads: list = field(default_factory=list)  # per program, the distinct sectors it reads
    written: int = 0  # distinct sectors written
    source: str = ""  # the kernel's file
    configuration: str = ""  # an autotuned kernel's: which of its configurations ran, and why that one

    def bytes_on(self, gpu, programs_per_sm: int = 1) -> dict:
        """`bytes` with `hbm` from the wave model on `gpu` (see the module doc): waves of
        `programs_per_sm` x SMs programs in launch order, the GPU's L2."""
        g = preset(gpu)
        wave = int(g.sms.value) * _check.one("programs_per_sm", programs_per_sm)
        l2 = float(g.capacity("l2"))
        hbm = 0.0
        for first in range(0, len(self.reads), wave):
            programs = self.reads[first:first + wave]
            every = sum(p.size for p in programs)
            distinct = np.unique(np.concatenate(programs)).size if every else 0
            kept = min(1.0, l2 / (distinct * SECTOR_BYTES)) if distinct else 1.0
            hbm += distinct + (1 - kept) * (every - distinct)
        return {**self.bytes, "hbm": SECTOR_BYTES * (hbm + self.written)}

    def workload(self, flops: float | None = None, gpu=None) -> Workload:
        """The traced bytes as a `Workload` (on `gpu`: its `bytes_on`), with the dots' flops on
        their tensor cores, or `flops` where given (on the dots' units where there are dots,
        else the FP32 units)."""
        flops = self.dot_flops if flops is None else float(_check.amount("flops", flops))
        b = self.bytes if gpu is None else self.bytes_on(gpu)
        registers = 0.0 if self.math != "fp32" else REGISTER_BYTES_PER_FLOP * flops
        return Workload(f"{self.kernel} (traced, Triton)", flops,
                        {"registers": registers, "smem": self.l1_path_bytes, "l2": b["l2"], "hbm": b["hbm"]},
                        math=self.math, note="bytes from Triton's interpreter on the CPU")

    def report(self, flops: float | None = None, gpus=None) -> str:
        """The CUDA lab's report of the same counts, then per GPU the wave model's HBM bytes and
        the bound and expected time on them."""
        lines = [f"{self.kernel}[{self.grid}] (Triton, {self.block[0] // 32} warps a program): {self.blocks} programs "
                 "traced in Triton's interpreter; each block access charged the distinct sectors of its unmasked "
                 "addresses, as a coalesced layout reaches them (the compiled layout can only touch as many or more)"]
        lines += [f"autotuned: {self.configuration}"] if self.configuration else []
        lines += self.counted()
        if self.dot_flops:
            lines.append(f"tl.dot: {self.dot_flops:,.0f} flops on the {self.math} tensor cores")
        lines.append("per GPU: HBM bytes in the wave model (programs in launch order, a wave per SM count, the GPU's "
                     "L2); the bound; the expected time")
        flops_used = self.dot_flops if flops is None else flops
        for gpu in gpus or preset_names():
            p, e = predict(self.workload(flops, gpu), gpu), expect(self, gpu, flops=flops_used)
            lines.append(f"  {gpu:14} hbm {self.bytes_on(gpu)['hbm']:12,.0f} B; {float(p.time) * 1e6:10.2f} us at "
                         f"best, bound by {p.bound}; expected {e.time * 1e6:10.2f} us, held by {e.limiter}")
        return "\n".join(lines)


def triton_kernel(source: str, name: str):
    """The `@triton.jit` kernel `name` that the Python `source` defines (a lab editor's text:
    `source` imports triton and triton.language itself), its lines those of `source`. Triton
    reads a kernel's source through Python's line cache, where `source` is put under a name of
    its own (nothing is written to disk). LabError where Triton is not installed, `source` does
    not run (its line named) or defines no such kernel."""
    if not isinstance(source, str) or not isinstance(name, str) or not name.isidentifier():
        raise TypeError("source must be a Python source as a string and name the name of its @triton.jit kernel, got "
                        f"{type(source).__name__} and {name!r}")
    try:
        import triton  # noqa: F401
    except ImportError:
        raise LabError(f"Triton kernels need Triton, which is not installed: {INSTALL}.") from None
    file = f"<triton kernel {hashlib.sha256(source.encode()).hexdigest()[:16]}>"
    linecache.cache[file] = (len(source), None, source.splitlines(keepends=True), file)
    space = {"__name__": "gm_triton_lab"}
    try:
        exec(compile(source, file, "exec"), space)
    except Exception as error:  # the learner's Python: any error it raises is theirs to read
        line = next((f.lineno for f in reversed(traceback.extract_tb(error.__traceback__)) if f.filename == file),
                    getattr(error, "lineno", None))
        said = error.msg if isinstance(error, SyntaxError) else error
        raise LabError(f"the kernel's source does not run: {type(error).__name__}: {said}"
                       + (f" (line {line})" if line else "")) from None
    kernel = space.get(name)
    if kernel is None or not hasattr(kernel, "fn"):
        kernels = sorted(k for k, v in space.items() if hasattr(v, "fn") and callable(getattr(v, "fn")))
        raise LabError(f"the source defines no @triton.jit kernel named {name!r}" +
                       (f"; it defines {', '.join(kernels)}" if kernels else "; decorate it with @triton.jit"))
    return kernel


def _grid(grid, meta: dict) -> tuple:
    """`grid` (1 to 3 positive ints, or a function returning them of `meta`: the arguments by name and
    the meta-parameters, as Triton's launcher calls it) as (x, y, z)."""
    if callable(grid):
        grid = grid(meta)
    dims = (grid,) if isinstance(grid, (int, np.integer)) and not isinstance(grid, bool) else tuple(grid) \
        if isinstance(grid, (tuple, list)) else None
    if not dims or len(dims) > 3 or not all(isinstance(d, (int, np.integer)) and not isinstance(d, bool) and d > 0
                                            for d in dims):
        raise ValueError(f"grid must be 1 to 3 positive integers (or a function of the meta-parameters giving "
                         f"them), got {grid!r}")
    dims = tuple(int(d) for d in dims) + (1,) * (3 - len(dims))
    _check.work("grid", math.prod(dims), MAX_PROGRAMS, "programs")
    return dims


class _NumpyPointer:
    """A NumPy array as the interpreter takes a pointer argument (the parts of a tensor it uses:
    its address, type, and a storage that is already on the host, so nothing is copied)."""

    def __init__(self, array: np.ndarray):
        self.array, self.dtype = array, array.dtype

    def data_ptr(self) -> int:
        return self.array.ctypes.data

    def untyped_storage(self):
        return self

    def cpu(self):
        return self

    def new_empty(self, *_args, **_kw):
        return self

    def set_(self, *_args):
        return self

    def storage_offset(self) -> int:
        return 0

    def size(self):
        return self.array.shape

    def stride(self):
        return tuple(s // self.array.itemsize for s in self.array.strides)

    def copy_(self, _other):
        return self


def _arrays(args) -> list:
    """(argument, first byte, end byte, bytes per element) of each array among `args`, a host
    tensor descriptor's by its base; an array passed twice counted once."""
    out, seen = [], set()
    for a in args:
        if adapter.is_descriptor(a):
            a = a.base.array if isinstance(a.base, _NumpyPointer) else a.base
        if isinstance(a, np.ndarray):
            if not a.flags.c_contiguous:
                raise ValueError("args: a NumPy array must be contiguous (np.ascontiguousarray)")
            row = (a, a.ctypes.data, a.ctypes.data + a.nbytes, a.itemsize)
        elif hasattr(a, "data_ptr") and hasattr(a, "untyped_storage"):
            if getattr(a, "device", None) is not None and str(a.device) != "cpu":
                raise ValueError(f"args: a tensor must be on the CPU for the lab, got one on {a.device}")
            s = a.untyped_storage()
            row = (a, s.data_ptr(), s.data_ptr() + s.nbytes(), a.element_size())
        else:
            continue
        if row[1:3] not in seen:
            seen.add(row[1:3])
            out.append(row)
    return out


def tensor_descriptor(array, block_shape, padding: str = "zero"):
    """A host tensor descriptor (Triton's `TensorDescriptor`, which replaced block pointers) over
    the NumPy `array`, for a kernel that takes one (`desc.load([i, j])`): its shape and strides
    the array's, a tile of `block_shape` elements, the parts past the array's edge read as
    `padding` ("zero", or "nan" for a floating-point array). What `TensorDescriptor.from_tensor`
    makes of a PyTorch tensor; chapter 4's Triton lab. The array must be C-contiguous, its rows
    16-byte aligned as the GPU's tensor memory accelerator needs."""
    if not isinstance(array, np.ndarray) or array.ndim == 0 or array.ndim > 5:
        raise TypeError(f"array must be a NumPy array of 1 to 5 dimensions, got "
                        f"{type(array).__name__ if not isinstance(array, np.ndarray) else f'{array.ndim} dimensions'}")
    if not array.flags.c_contiguous or array.size == 0:
        raise ValueError("array must be a non-empty C-contiguous NumPy array (np.ascontiguousarray)")
    if isinstance(block_shape, (int, np.integer)):
        block_shape = (block_shape,)
    if not isinstance(block_shape, (tuple, list)) or len(block_shape) != array.ndim or not all(
            isinstance(b, (int, np.integer)) and not isinstance(b, bool) and b > 0 and b & (b - 1) == 0 for b in block_shape):
        raise ValueError(f"block_shape must be {array.ndim} powers of two, one a dimension of the array, got {block_shape!r}")
    if padding not in ("zero", "nan"):
        raise ValueError(f"padding must be 'zero' or 'nan', got {padding!r}")
    if padding == "nan" and array.dtype.kind != "f":
        raise ValueError(f"padding 'nan' needs a floating-point array, got {array.dtype}")
    strides = [s // array.itemsize for s in array.strides]
    if array.ctypes.data % 16 or any(s * array.itemsize % 16 for s in strides[:-1]):
        raise ValueError(f"array: a tensor descriptor needs a 16-byte aligned start and rows (strides of "
                         f"{[s * array.itemsize for s in strides]} bytes)")
    try:
        import triton  # noqa: F401
    except ImportError:
        raise LabError(f"Triton kernels need Triton, which is not installed: {INSTALL}.") from None
    desc = adapter.make_descriptor(_NumpyPointer(array), array.shape, strides, block_shape, "zero")
    desc.padding = padding  # checked above: Triton's own check asks a PyTorch dtype whether it is floating-point
    return desc


TRITON_SECONDS = 60.0
"""The default time limit of a Triton kernel in the interpreter (s): the course's run in a few."""


class _TimeLimit(BaseException):
    """Raised in the running kernel when its time is up: a BaseException, so that neither the
    kernel nor the interpreter catches it as an error of the kernel's."""


@contextlib.contextmanager
def _time_limit(seconds: float, code_file: str):
    """Stop the calling thread's Python code after `seconds` (a timer thread raises `_TimeLimit`
    in it, as `PyThreadState_SetAsyncExc` does: any thread, no signal); yields a dict where the
    line of `code_file` it was running is noted. A stop still pending when the block ends is
    withdrawn."""
    import ctypes
    import threading

    target, where, lock, done = threading.get_ident(), {}, threading.Lock(), []

    def stop():
        with lock:
            if done:
                return
            frame = sys._current_frames().get(target)
            while frame is not None and frame.f_code.co_filename != code_file:
                frame = frame.f_back
            where["line"] = frame.f_lineno if frame is not None else 0
            ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(target), ctypes.py_object(_TimeLimit))

    timer = threading.Timer(seconds, stop)
    timer.daemon = True
    timer.start()
    try:
        yield where
    finally:
        with lock:
            done.append(True)
            timer.cancel()
            ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(target), None)  # none pending past here


FLOAT_SCALARS = {float: (np.float32, "fp32"), np.float16: (np.float16, "fp16"), np.float32: (np.float32, "fp32"),
                 np.float64: (np.float64, "fp64")}
"""A floating-point argument's NumPy type and Triton type, as Triton's launcher passes it (a
Python float as an fp32 scalar); its interpreter would otherwise hand the kernel a bare float."""


def _float_scalar(value, constexpr: bool):
    """`value` as the kernel sees it: a floating-point scalar as a Triton scalar tensor of its
    type (`FLOAT_SCALARS`), so `alpha.to(tl.float32)` works as on a GPU; a NumPy array as a
    pointer (`_NumpyPointer`); anything else, and a `tl.constexpr` parameter's value, as it is."""
    if isinstance(value, np.ndarray):
        return _NumpyPointer(value)
    kind = FLOAT_SCALARS.get(type(value))
    if kind is None or constexpr:
        return value
    return adapter.scalar(value, *kind)


def _constexprs(fn, count: int) -> list:
    """Whether each of the first `count` parameters of the kernel's function is a `tl.constexpr`."""
    import inspect

    params = list(inspect.signature(fn).parameters.values())[:count]
    return [p.annotation is not inspect.Parameter.empty and "constexpr" in str(p.annotation) for p in params] + \
        [False] * (count - len(params))


def trace_triton(kernel, grid, args, *, num_warps: int | None = None, timeout: float = TRITON_SECONDS,
                 config: int = 0, reached=(), **meta) -> TritonTrace:
    """Run the `@triton.jit` `kernel` over `grid` (as `kernel[grid](*args, **meta)`: 1 to 3
    program counts, or a function of the arguments by name and the meta-parameters, as Triton's
    launcher calls it) in Triton's interpreter on the CPU,
    with `args` (NumPy arrays, written in place, or PyTorch CPU tensors; host tensor
    descriptors, `tensor_descriptor`; numbers) and the meta-parameters `meta` (BLOCK_SIZE=..., and any
    argument passed by keyword, as Triton's launcher takes it). Records every program's loads, stores and dots and
    returns the `Trace` the CUDA lab returns (see the module doc for what it counts), its
    programs `num_warps` x 32 threads each (Triton's default: 4 warps). An `@triton.autotune`
    kernel, whose choice needs a GPU's timings, runs its configuration number `config` (the
    first by default) of those its `early_config_prune` keeps, called as Triton's autotuner
    calls it (`args` by name, `meta`): its meta-parameters and warps, under any `meta` and `num_warps` given,
    its `pre_hook` run first, and `trace.configuration` says which ran; an `@triton.heuristics`
    kernel's values are computed from the arguments as Triton's launcher does. `reached`: the
    NumPy arrays the kernel reaches only through addresses it loads (a grouped GEMM's table of
    pointers, `x.ctypes.data` each), so that their accesses are counted. Checks nothing of the result: a checker does. Raises LabError where Triton is not
    installed, the kernel fails in the interpreter, or it runs past `timeout` seconds, naming
    its line."""
    try:
        import triton  # noqa: F401
    except ImportError:
        raise LabError(f"Triton kernels need Triton, which is not installed: {INSTALL}.") from None
    fn, layers = adapter.decorators(kernel)
    if not isinstance(args, (list, tuple)):
        raise TypeError(f"args must be a list or tuple of the kernel's arguments, got {type(args).__name__}")
    names = list(inspect.signature(fn).parameters)
    named = dict(zip(names, args))
    if config != 0 and not any(kind == "autotune" for kind, _ in layers):
        raise ValueError(f"config must be 0 for a kernel that is not autotuned, got {config!r}")
    given, hooks, chosen = dict(meta), [], ""
    for kind, part in layers:  # outermost first, as Triton's launcher applies them
        if kind == "autotune":
            configs, prune = part
            kept = ""
            if prune is not None:  # as Triton's autotuner calls it: the arguments by name, the launch's keywords
                try:
                    every, configs = len(configs), list(prune(configs, named, **meta))
                except Exception as err:  # the learner's function: its error is theirs to read
                    raise LabError(f"the autotuner's early_config_prune failed: {type(err).__name__}: {err} (Triton "
                                   "calls it with the configurations, the arguments passed in args by name, and the "
                                   "launch's keywords)") from None
                if not configs:
                    raise LabError("the autotuner's early_config_prune kept none of its configurations")
                kept = f" its early_config_prune keeps of {every}" if len(configs) < every else ""
            if isinstance(config, bool) or not isinstance(config, int) or not 0 <= config < len(configs):
                raise ValueError(f"config must be the number of one of the kernel's {len(configs)} configurations"
                                 f"{kept}, 0 to {len(configs) - 1}, got {config!r}")
            kwargs, warps, hook = adapter.config_parts(configs[config])
            meta = {**meta, **{k: v for k, v in kwargs.items() if k not in given}}
            num_warps = warps if num_warps is None else num_warps
            hooks += [hook] if hook is not None else []
            chosen = (f"configuration {config} of {f'the {len(configs)}{kept}' if kept else len(configs)} ("
                      + ", ".join(f"{k}={v}" for k, v in kwargs.items()) + f", num_warps={warps})"
                      + (", the first: choosing among them takes a GPU's timings, so the lab runs the first unless "
                         "config= names another" if config == 0 else ", as config= asked"))
        else:
            for key, rule in part.items():
                if key not in given:
                    meta[key] = rule({**named, **meta})
    num_warps = _check.one("num_warps", 4 if num_warps is None else num_warps)
    timeout = _check.real("timeout", timeout, least=0.01)
    dims = _grid(grid, {**named, **meta})
    for hook in hooks:  # a configuration's pre_hook (one that sets its descriptors' block shapes) sees what it would
        hook({**named, **meta})
    if not isinstance(reached, (list, tuple)) or not all(isinstance(a, np.ndarray) for a in reached):
        raise TypeError("reached must be a list of the NumPy arrays the kernel reaches through addresses it loads")
    arrays = _arrays([*args, *meta.values(), *reached])  # an array passed by keyword too
    place, start = [], 0  # each array's address on the GPU-like layout: ALIGN-aligned, one after another
    for _, first, end, _ in arrays:
        place.append((first, end, start))
        start += -(-(end - first) // ALIGN) * ALIGN
    code_file = fn.__code__.co_filename
    accesses, dots = [], []

    def program_of(builder) -> int:
        x, y, z = adapter.grid_index(builder)
        return x + dims[0] * (y + dims[1] * z)

    def lines():
        """(line, called_at) of the access in the user's source: the innermost frame in the
        kernel's own file, and the kernel's line that called it where that is another function."""
        frame, inner, outer = sys._getframe(2), 0, 0
        while frame is not None:
            if frame.f_code.co_filename == code_file:
                inner = inner or frame.f_lineno
                if frame.f_code.co_name == fn.__name__:
                    outer = frame.f_lineno
                    break
            frame = frame.f_back
        return inner, (outer if outer and outer != inner else 0)

    def record_access(builder, ptrs, mask, write, size=None):
        addresses = np.asarray(ptrs.data).astype(np.int64).ravel()
        size = size or adapter.element_bytes(ptrs)
        on = np.broadcast_to(np.asarray(mask.data, bool), np.asarray(ptrs.data).shape).ravel()
        live = addresses[on]
        gpu_like = np.full(live.shape, -1, np.int64)
        for first, end, at in place:
            inside = (live >= first) & (live < end)
            gpu_like[inside] = live[inside] - first + at
        if (gpu_like < 0).any():
            raise LabError(f"line {lines()[0]}: a {'store' if write else 'load'} outside every array passed "
                           f"(address {int(live[gpu_like < 0][0]):#x}): is its mask right? (an array the kernel reaches "
                           "through an address it loads, as from a table of pointers, is passed in reached=[...])")
        sectors = np.unique(np.concatenate([gpu_like // SECTOR_BYTES, (gpu_like + size - 1) // SECTOR_BYTES]))
        accesses.append(_Access(program_of(builder), *lines(), write, size, addresses.size, sectors, int(on.sum())))

    def record_dot(a, b):
        shape_a, shape_b = np.asarray(a.data).shape, np.asarray(b.data).shape
        kind = str(a.dtype)
        dots.append((2.0 * math.prod(shape_a[:-1]) * shape_b[-1] * shape_a[-1], DOT_MATH.get(kind, "fp32")))

    constexprs = _constexprs(fn, max(len(args), len(names)))
    wrapped = [_float_scalar(a, constexpr) for a, constexpr in zip(args, constexprs)]
    by_name = dict(zip(names, constexprs))  # an argument passed by keyword as Triton's launcher passes it
    meta = {k: _float_scalar(v, by_name.get(k, True)) for k, v in meta.items()}
    with adapter.recording(fn, record_access, record_dot) as run:
        try:
            with _time_limit(timeout, code_file) as where:
                run(fn, dims, wrapped, meta)
        except _TimeLimit:
            line = where.get("line", 0)
            raise LabError(f"the kernel ran past the time limit of {timeout:g} s in Triton's interpreter"
                           + (f", at line {line}" if line else "") + ": an endless loop, or a grid too large for "
                           "the interpreter (pass timeout= for a longer run)") from None
        except LabError:
            raise
        except Exception as err:  # the interpreter wraps the kernel's own error
            cause = err.__cause__ or err
            frames = traceback.extract_tb(cause.__traceback__) + traceback.extract_tb(err.__traceback__)
            line = next((f.lineno for f in reversed(frames) if f.filename == code_file), 0)
            raise LabError(f"the kernel failed in Triton's interpreter" + (f" at line {line}" if line else "")
                           + f": {type(cause).__name__}: {cause}{adapter.unsupported_note()}") from None
    traced = _build(fn, dims, num_warps, accesses, dots, code_file)
    traced.configuration = chosen
    return traced


def _build(fn, dims, num_warps: int, accesses: list, dots: list, code_file: str) -> TritonTrace:
    """The `TritonTrace` of the recorded `accesses` and `dots`."""
    try:
        with open(code_file, encoding="utf-8") as f:
            source = f.read()
    except OSError:
        source = ""
    rows = source.splitlines()
    groups = {}
    for a in accesses:
        groups.setdefault((a.line, a.called_at, a.write, a.size), []).append(a)
    sites = []
    for (line, called_at, write, size), group in sorted(groups.items()):
        sites.append(Site(line, "global", write, size,
                          instructions=sum(max(1, -(-a.active * size // (32 * VECTOR_BYTES))) for a in group),
                          lanes=sum(a.active for a in group), divergent=sum(a.active < a.lanes for a in group),
                          sectors=sum(a.sectors.size for a in group),
                          ideal_sectors=sum(-(-a.active * size // SECTOR_BYTES) for a in group),
                          wavefronts=0, ideal_wavefronts=0,
                          text=rows[line - 1].strip() if 0 < line <= len(rows) else "", called_at=called_at))
    programs = math.prod(dims)
    reads, touched, rounds = [[] for _ in range(programs)], [[] for _ in range(programs)], [0] * programs
    open_round = [set() for _ in range(programs)]
    for a in accesses:
        touched[a.program].append(a.sectors)
        if not a.write:
            reads[a.program].append(a.sectors)
            key = (a.line, a.called_at)
            if key in open_round[a.program] or not rounds[a.program]:
                rounds[a.program] += 1
                open_round[a.program] = set()
            open_round[a.program].add(key)
    distinct = lambda parts: np.unique(np.concatenate(parts)) if parts else np.zeros(0, np.int64)
    reads = [distinct(p) for p in reads]
    l2 = sum(distinct(p).size for p in touched)
    launch = distinct([a.sectors for a in accesses])
    written = distinct([a.sectors for a in accesses if a.write]).size
    maths = {m for _, m in dots}
    if len(maths) > 1:
        raise LabError(f"the kernel's tl.dot calls mix precisions ({sorted(maths)}): the lab charges one")
    return TritonTrace(fn.__name__, dims, (32 * num_warps, 1, 1), sites, [(launch.size, 0, launch.size)], l2, 0,
                       programs, programs, rounds=num_warps * sum(rounds), dot_flops=sum(f for f, _ in dots),
                       math=maths.pop() if maths else "fp32", reads=reads, written=written, source=code_file)
