"""Runs a `gpumodel.cuda.plans.Plan` on the CPU: the kernel's own CUDA source, compiled by
g++ against `cuda_emu.h`, each CUDA thread a fiber taking turns with its block's others. It checks kernel logic where no GPU
answers (the tests, the fake CuPy) and measures nothing; the traced run (`tracer`) builds on it.
Chapter 2's lab."""

from __future__ import annotations

import ctypes
import hashlib
import pathlib
import re
import shutil
import subprocess

import numpy as np

from ..cuda import compiler

HERE = pathlib.Path(__file__).resolve().parent
CTYPES = {"int": ctypes.c_int, "float": ctypes.c_float}


def parameters(source: str, kernel: str) -> list[tuple[str, str]]:
    """(type, name) of each parameter of `kernel` in `source`."""
    match = re.search(rf"void\s+(?:__launch_bounds__\([^)]*\)\s+)?{kernel}\s*\(([^)]*)\)", source)
    if match is None:
        raise ValueError(f"source must define `void {kernel}(...)` with its parameters")
    params = []
    for part in match.group(1).split(","):
        words = part.replace("*", " * ").split()
        params.append((" ".join(words[:-1]), words[-1]))
    return params


def kernels(source: str) -> list:
    """The names of the `__global__` functions `source` defines (C or C++ linkage), in order."""
    return re.findall(r"__global__\s+void\s+(?:__launch_bounds__\([^)]*\)\s+)?(\w+)\s*\(", source)


def base_type(ctype: str) -> str:
    """A parameter's type without qualifiers or pointer: "const float* __restrict__" -> "float"."""
    for word in ("const", "volatile", "__restrict__", "*"):
        ctype = ctype.replace(word, "")
    return ctype.strip()


def wrapper(source: str) -> str:
    """The kernel source plus one `emu_<kernel>(grid, block, args...)` C entry point each."""
    lines = ['#include "cuda_emu.h"', source]
    for kernel in kernels(source):
        params = parameters(source, kernel)
        decl = ", ".join(f"{t} {n}" for t, n in params)
        names = ", ".join(n for _, n in params)
        lines.append(
            f'extern "C" void emu_{kernel}(unsigned gx, unsigned gy, unsigned gz, unsigned bx, '
            f"unsigned by, unsigned bz, {decl}) {{ emu_launch(dim3(gx, gy, gz), dim3(bx, by, bz), "
            f"[=] {{ {kernel}({names}); }}); }}"
        )
    return "\n".join(lines)


class Emulator:
    """Compiles each CUDA source once into a shared library in `build_dir`."""

    def __init__(self, build_dir: pathlib.Path):
        if not shutil.which("g++"):
            raise RuntimeError("the CPU emulator needs g++ (C++20)")
        self.build_dir = pathlib.Path(build_dir)
        self.libraries: dict = {}

    def compile(self, source: str):
        """The shared library built from `source` (cached by content)."""
        key = hashlib.sha1(source.encode()).hexdigest()[:16]
        if key not in self.libraries:
            cpp = self.build_dir / f"{key}.cpp"
            cpp.write_text(wrapper(source))
            lib = self.build_dir / f"{key}.so"
            if not lib.exists():  # built by an earlier process in the same folder
                subprocess.run(
                    ["g++", "-std=c++20", "-O1", "-shared", "-fPIC", "-pthread", f"-I{HERE}", str(cpp), "-o", str(lib)],
                    check=True, capture_output=True, text=True,
                )
            self.libraries[key] = ctypes.CDLL(str(lib))
        return self.libraries[key]

    def launch(self, source: str, kernel: str, grid, block, args) -> None:
        """Run `kernel` of `source` on a grid: `args` are NumPy arrays (passed as device
        pointers) and scalars, in the kernel's parameter order."""
        lib = self.compile(source)
        converted = []
        for (t, _), arg in zip(parameters(source, kernel), args):
            if "*" in t:
                converted.append(np.ascontiguousarray(arg).ctypes.data_as(ctypes.c_void_p))
            else:
                converted.append(CTYPES[base_type(t)](arg))
        grid, block = (tuple(grid) + (1, 1))[:3], (tuple(block) + (1, 1))[:3]
        getattr(lib, f"emu_{kernel}")(*map(ctypes.c_uint, grid + block), *converted)

    def run(self, plan) -> np.ndarray:
        """Execute every step of `plan` and return its result buffer."""
        source = compiler.kernel_source(plan.file)
        buffers = {name: np.ascontiguousarray(a, dtype=np.float32).copy() for name, a in plan.inputs.items()}
        buffers.update({name: np.zeros(shape, np.float32) for name, shape in plan.outputs.items()})
        for step in plan.steps:
            args = [buffers[a] if isinstance(a, str) else a for a in step.args]
            self.launch(source, step.kernel, step.grid, step.block, args)
        return buffers[plan.result]
