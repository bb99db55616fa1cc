"""What the compiler says about each kernel, no GPU needed: registers per thread, spill
stores and loads, static shared memory. Chapter 3 shows the report.

Compiles `kernels/*.cu` for a real architecture (sm_80, sm_90) with NVRTC from the
`nvidia-cuda-nvrtc-cu12` wheel and `--ptxas-options=-v`, or with `nvcc -Xptxas -v` where
NVRTC is missing and nvcc is on the PATH, and reads ptxas's report. `make reports` also
records the memory and FMA instructions of each kernel's SASS (`sass_counts`, NVRTC's cubin
disassembled by nvdisasm), from which chapter 3 and the model take how a kernel loads.
"""

from __future__ import annotations

import ctypes
import datetime
import functools
import glob
import hashlib
import importlib.util
import json
import os
import pathlib
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass

from ..presets import DATA, DataError

COMPILE_OPTIONS = ("-std=c++17",)
ARCHS = ("sm_80", "sm_90")
RECORD = DATA / "compiler_reports.json"
"""The committed report of every kernel (`make reports`), shown where no compiler is found."""


def kernel_dir() -> pathlib.Path:
    """The folder of `*.cu` sources: `gpumodel/kernels` in an installed package, else the
    repository's `kernels/` beside the package (a checkout or an editable install)."""
    here = DATA.parent
    for candidate in (here / "kernels", here.parent / "kernels"):
        if any(candidate.glob("*.cu")):
            return candidate
    raise FileNotFoundError(f"no kernels/*.cu next to {here}")


def kernel_source(file: str) -> str:
    """The CUDA source of `kernels/<file>`."""
    path = kernel_dir() / file
    if path.suffix != ".cu" or not path.exists():
        names = sorted(p.name for p in kernel_dir().glob("*.cu"))
        raise ValueError(f"file must be one of {names}, got {file!r}")
    return path.read_text()


def kernel_names(source: str) -> list[str]:
    """The `extern "C" __global__` entry points a source defines, in order."""
    return re.findall(r'extern\s+"C"\s+__global__\s+void\s+(?:__launch_bounds__\([^)]*\)\s+)?(\w+)\s*\(', source)


@dataclass(frozen=True)
class KernelReport:
    """ptxas's account of one kernel for one architecture (bytes, registers per thread)."""

    file: str
    kernel: str
    arch: str
    registers: int
    spill_stores: int
    spill_loads: int
    stack: int
    smem: int


def _nvrtc():
    """The NVRTC library from the nvidia-cuda-nvrtc wheel, or from the system; None if absent."""
    spec = importlib.util.find_spec("nvidia.cuda_nvrtc") if importlib.util.find_spec("nvidia") else None
    paths = []
    if spec and spec.submodule_search_locations:
        for loc in spec.submodule_search_locations:
            paths += sorted(glob.glob(os.path.join(loc, "lib", "libnvrtc.so*")))
    paths += ["libnvrtc.so"]
    for path in paths:
        if "alt" in os.path.basename(path) or "builtins" in os.path.basename(path):
            continue
        try:
            return ctypes.CDLL(path)
        except OSError:
            continue
    return None


def compiler() -> str | None:
    """Which compiler `report` will use: "nvrtc X.Y", "nvcc", or None when neither is here."""
    lib = _nvrtc()
    if lib is not None:
        major, minor = ctypes.c_int(), ctypes.c_int()
        lib.nvrtcVersion(ctypes.byref(major), ctypes.byref(minor))
        return f"nvrtc {major.value}.{minor.value}"
    if shutil.which("nvcc"):
        return "nvcc"
    return None


def _nvrtc_compile(lib, source: str, name: str, arch: str, options=()) -> tuple[str, bytes]:
    """(ptxas's log, the cubin) of `source` compiled by NVRTC for `arch` with `options` added;
    RuntimeError with the log when it fails."""
    prog = ctypes.c_void_p()
    if lib.nvrtcCreateProgram(ctypes.byref(prog), source.encode(), name.encode(), 0, None, None):
        raise RuntimeError(f"NVRTC could not create a program for {name}")
    try:
        opts = [f"-arch={arch}".encode()] + [o.encode() for o in (*options, *COMPILE_OPTIONS)]
        status = lib.nvrtcCompileProgram(prog, len(opts), (ctypes.c_char_p * len(opts))(*opts))
        size = ctypes.c_size_t()
        lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
        log = ctypes.create_string_buffer(size.value)
        lib.nvrtcGetProgramLog(prog, log)
        text = log.value.decode(errors="replace")
        if status:
            raise RuntimeError(f"NVRTC failed to compile {name} for {arch}:\n{text}")
        lib.nvrtcGetCUBINSize(prog, ctypes.byref(size))
        cubin = ctypes.create_string_buffer(size.value)
        lib.nvrtcGetCUBIN(prog, cubin)
        return text, cubin.raw
    finally:
        lib.nvrtcDestroyProgram(ctypes.byref(prog))


def _log_nvcc(source: str, name: str, arch: str) -> str:
    with tempfile.TemporaryDirectory() as tmp:
        src = pathlib.Path(tmp) / name
        src.write_text(source)
        cmd = ["nvcc", "-cubin", f"-arch={arch}", "-Xptxas", "-v", *COMPILE_OPTIONS, "-o", os.devnull, str(src)]
        done = subprocess.run(cmd, capture_output=True, text=True)
        if done.returncode:
            raise RuntimeError(f"nvcc failed to compile {name} for {arch}:\n{done.stderr}")
        return done.stdout + done.stderr


def parse_ptxas(log: str, file: str, arch: str) -> list[KernelReport]:
    """One KernelReport per entry function in a `ptxas -v` log."""
    reports = []
    for block in re.split(r"(?=ptxas info\s+: Compiling entry function)", log)[1:]:
        name = re.search(r"entry function '(\w+)'", block).group(1)
        frame = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", block)
        regs = re.search(r"Used (\d+) registers", block)
        smem = re.search(r"(\d+) bytes smem", block)
        reports.append(
            KernelReport(
                file=file,
                kernel=name,
                arch=arch,
                registers=int(regs.group(1)),
                stack=int(frame.group(1)) if frame else 0,
                spill_stores=int(frame.group(2)) if frame else 0,
                spill_loads=int(frame.group(3)) if frame else 0,
                smem=int(smem.group(1)) if smem else 0,
            )
        )
    return reports


def report(archs=ARCHS, files=None) -> list[KernelReport]:
    """Compile `files` of `kernels/` (every `*.cu` by default) for each architecture in
    `archs` and return ptxas's report of every kernel, in source order. Each file and
    architecture is compiled once per process. Raises RuntimeError when no compiler is here."""
    for arch in archs:
        if not re.fullmatch(r"sm_\d{2,3}a?", str(arch)):
            raise ValueError(f"archs must name real architectures like 'sm_80', got {arch!r}")
    if compiler() is None:
        raise RuntimeError("no CUDA compiler here: install nvidia-cuda-nvrtc-cu12 (requirements.txt) or nvcc")
    names = sorted(p.name for p in kernel_dir().glob("*.cu")) if files is None else list(files)
    return [r for name in names for arch in archs for r in _compiled(name, arch, kernel_source(name))]


@functools.cache
def _compiled(file: str, arch: str, source: str) -> tuple:
    """ptxas's reports for one source and architecture, in source order (cached)."""
    lib = _nvrtc()
    log = _nvrtc_compile(lib, source, file, arch, ("--ptxas-options=-v",))[0] if lib else _log_nvcc(source, file, arch)
    order = {name: i for i, name in enumerate(kernel_names(source))}
    return tuple(sorted(parse_ptxas(log, file, arch), key=lambda r: order.get(r.kernel, len(order))))


SASS_OPS = ("LDG", "STG", "LDS", "STS", "FFMA")
"""The SASS instructions a compiler record counts (`sass_counts`), with every width and
modifier each takes (LDS, LDS.64, LDS.128; LDG.E.CONSTANT ...): global and shared loads and
stores, and FP32 multiply-adds."""


def _nvdisasm() -> str:
    """The path of nvdisasm: on the PATH, or from the `nvidia-cuda-nvdisasm` wheel."""
    found = shutil.which("nvdisasm")
    if found:
        return found
    if importlib.util.find_spec("nvidia"):
        for loc in importlib.util.find_spec("nvidia").submodule_search_locations or []:
            for path in sorted(glob.glob(os.path.join(loc, "*", "bin", "nvdisasm"))):
                return path
    raise RuntimeError("make reports needs nvdisasm to count each kernel's SASS: install the nvidia-cuda-nvdisasm "
                       "wheel (pip install nvidia-cuda-nvdisasm) or put the CUDA toolkit's bin on the PATH")


def sass_counts(file: str, arch: str) -> dict:
    """{kernel: {instruction: count}} of `kernels/<file>` compiled for `arch`: each SASS_OPS
    instruction as the disassembly writes it (with its width and modifiers), counted over the
    kernel's whole code, loop bodies once."""
    with tempfile.TemporaryDirectory() as tmp:
        cubin = pathlib.Path(tmp) / "kernel.cubin"
        lib = _nvrtc()
        if lib is None:
            raise RuntimeError("no NVRTC here: install nvidia-cuda-nvrtc-cu12 (requirements.txt)")
        cubin.write_bytes(_nvrtc_compile(lib, kernel_source(file), file, arch)[1])
        done = subprocess.run([_nvdisasm(), "-c", str(cubin)], capture_output=True, text=True)
    if done.returncode:
        raise RuntimeError(f"nvdisasm failed on {file} for {arch}:\n{done.stderr}")
    counts, kernel = {}, None
    for line in done.stdout.splitlines():
        head = re.match(r"\s*\.text\.(\w+):", line)
        if head:
            kernel = counts.setdefault(head.group(1), {})
            continue
        op = re.search(r"/\*[0-9a-f]{4}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)", line)
        if kernel is not None and op and op.group(1).split(".")[0] in SASS_OPS:
            kernel[op.group(1)] = kernel.get(op.group(1), 0) + 1
    order = {name: i for i, name in enumerate(kernel_names(kernel_source(file)))}
    return {k: dict(sorted(counts[k].items())) for k in sorted(counts, key=lambda k: order.get(k, len(order)))}


def instructions(kernel: str, arch: str = ARCHS[0]) -> dict:
    """The recorded SASS_OPS counts of CUDA function `kernel` for `arch` (`make reports`)."""
    sass = recorded()["sass"]
    if not isinstance(arch, str) or arch not in sass:
        raise ValueError(f"arch must be one of the recorded architectures {sorted(sass)}, got {arch!r}")
    if not isinstance(kernel, str) or kernel not in sass[arch]:
        raise ValueError(f"kernel must be a CUDA function of kernels/*.cu, got {kernel!r}")
    return dict(sass[arch][kernel])


def source_hash(file: str) -> str:
    """The SHA-256 of `kernels/<file>`, as a compiler record names the source it compiled."""
    return hashlib.sha256(kernel_source(file).encode()).hexdigest()


def write_record(path=RECORD) -> dict:
    """Compile every kernel for ARCHS and write the report with its compiler, architectures,
    date and the hash of each source to `path` (`make reports`); return the record."""
    files = sorted(p.name for p in kernel_dir().glob("*.cu"))
    record = {"compiler": compiler(), "archs": list(ARCHS), "options": list(COMPILE_OPTIONS),
              "date": datetime.date.today().isoformat(), "command": "make reports",
              "sources": {f: source_hash(f) for f in files}, "reports": [r.__dict__ for r in report()],
              "sass": {arch: {k: c for f in files for k, c in sass_counts(f, arch).items()} for arch in ARCHS}}
    pathlib.Path(path).write_text(json.dumps(record, indent=1) + "\n")
    return record


RECORD_SCHEMA = {"compiler": str, "archs": list, "options": list, "date": str, "command": str, "sources": dict,
                 "reports": list, "sass": dict}
"""The keys of a compiler record (`write_record`) and the JSON type of each; its reports hold
KernelReport's fields, strings and whole numbers >= 0; `sass` maps each architecture to each
kernel's SASS_OPS counts (`sass_counts`)."""


def recorded(path=RECORD) -> dict:
    """The committed record (see `write_record`), its reports as `KernelReport`s; a DataError
    naming the file (and the report) when it does not hold what RECORD_SCHEMA says."""
    path = pathlib.Path(path)
    try:
        record = json.loads(path.read_text())
    except json.JSONDecodeError as err:
        raise DataError(f"{path.name}: not valid JSON ({err})") from None
    if not isinstance(record, dict) or set(record) != set(RECORD_SCHEMA):
        raise DataError(f"{path.name} must hold exactly the keys {sorted(RECORD_SCHEMA)}, got "
                        f"{sorted(record) if isinstance(record, dict) else type(record).__name__}")
    for key, kind in RECORD_SCHEMA.items():
        if not isinstance(record[key], kind):
            raise DataError(f"{path.name}.{key} must be a JSON {kind.__name__}, got {record[key]!r}")
    for file, digest in record["sources"].items():
        if not re.fullmatch(r"[0-9a-f]{64}", str(digest)):
            raise DataError(f"{path.name}.sources.{file} must be a SHA-256 in hex, got {digest!r}")
    for arch, kernels in record["sass"].items():
        for kernel, counts in (kernels.items() if isinstance(kernels, dict) else [(None, None)]):
            if not isinstance(counts, dict) or not all(
                    isinstance(op, str) and op.split(".")[0] in SASS_OPS and type(n) is int and n > 0
                    for op, n in counts.items()):
                raise DataError(f"{path.name}.sass.{arch}.{kernel} must map instructions of {SASS_OPS} to whole "
                                f"numbers > 0, got {counts!r}")
    return {**record, "reports": [_report(f"{path.name} report {i + 1}", r) for i, r in enumerate(record["reports"])]}


def _report(where: str, entry) -> KernelReport:
    """One report of a compiler record, checked against KernelReport's fields."""
    fields = {name: f.type for name, f in KernelReport.__dataclass_fields__.items()}
    if not isinstance(entry, dict) or set(entry) != set(fields):
        raise DataError(f"{where} must hold exactly the keys {sorted(fields)}, got {entry!r}")
    for name, kind in fields.items():
        value = entry[name]
        fine = isinstance(value, str) if kind == "str" else (type(value) is int and value >= 0)
        if not fine:
            wanted = "a string" if kind == "str" else "a whole number >= 0"
            raise DataError(f"{where}.{name} must be {wanted}, got {value!r}")
    return KernelReport(**entry)


def shown_report(files, archs=ARCHS) -> tuple[list, str]:
    """What a chapter shows of `files`, with a sentence saying where it comes from: the
    committed record where it was made by this compiler with these options from these exact
    sources (a compile here would print the same), a live compile where any of that differs,
    the record where no compiler is here. Chapter 3."""
    record, here = recorded(), compiler()
    rows = [r for r in record["reports"] if r.file in files and r.arch in archs]
    made_here = (record["compiler"] == here and record["options"] == list(COMPILE_OPTIONS)
                 and set(archs) <= set(record["archs"])
                 and all(record["sources"].get(f) == source_hash(f) for f in files))
    if made_here:
        return rows, (f"Compiled with {here} by `{record['command']}` on {record['date']}, from these "
                      f"exact sources; `gm.cuda.compiler.report(files)` compiles them again here.")
    if here is not None:
        return report(archs, files), f"Compiled just now with {here}."
    return rows, (f"No CUDA compiler here: this is the report recorded on {record['date']} with "
                  f"{record['compiler']} (`{record['command']}`).")


def function_source(file: str, name: str) -> str:
    """The definition of the function (or template) `name` in `kernels/<file>`, with the
    comment block and template line above it: what a chapter shows of a kernel."""
    lines = kernel_source(file).splitlines()
    start = next((i for i, line in enumerate(lines) if re.search(rf"\bvoid\b[^;]*\b{name}\s*\(", line)), None)
    if start is None:
        raise ValueError(f"name must be a function in {file}, got {name!r}")
    while start > 0 and lines[start - 1].lstrip().startswith(("//", "template")):
        start -= 1
    depth, opened = 0, False
    for end in range(start, len(lines)):
        depth += lines[end].count("{") - lines[end].count("}")
        opened = opened or "{" in lines[end]
        if opened and depth == 0:
            break
    return "\n".join(lines[start:end + 1])


if __name__ == "__main__":
    print(f"wrote {RECORD} with {len(write_record()['reports'])} kernel reports")
