"""The kernel lab on a shared machine (`gpumodel.lab.builder`'s cache, `gpumodel.lab.limits`): input answered as CUDA and CuPy
would, before anything is compiled; a cache folder another user could have written to
refused, a cached file that is not what was built never run or linked; g++ and the traced run
stopped by their time, memory and output limits, each message naming the limit."""

import math
import os
import pathlib
import shutil
import stat
import subprocess
import sys
import time

import numpy as np
import pytest

from gpumodel.lab import LabError, builder, limits, runner, trace
from gpumodel.lab.runner import Emulator

SOURCE = r"""
__global__ void k(const float* x, float* y, int n, unsigned m, float a, bool flag, double d) {
    int i = threadIdx.x;
    if (i < n && flag) y[i] = a * x[i] + (float)d + m;
}
"""


def good():
    """Valid arguments of SOURCE's k: (grid, block, args)."""
    return 1, 32, [np.arange(32, dtype=np.float32), np.zeros(32, np.float32), 32, 1, 2.0, True, 0.5]


@pytest.fixture(scope="module")
def warm():
    """k built once (in the user's cache), so a refusal's time is the check's own."""
    grid, block, args = good()
    trace(SOURCE, "k", grid, block, args)
    np.testing.assert_array_equal(args[1], 2 * args[0] + 1.5)


def with_arg(position, value):
    grid, block, args = good()
    args[position] = value
    return {"args": args}


READ_ONLY = np.zeros(32, np.float32)
READ_ONLY.flags.writeable = False

BAD = [
    # (what trace is given, the error, what its message must say)
    ({"grid": 2**40}, ValueError, r"grid's x must be from 1 to 2,147,483,647 \(CUDA's limit"),
    ({"grid": (1, 65536)}, ValueError, r"grid's y must be from 1 to 65,535 \(CUDA's limit"),
    ({"grid": (1, 1, 65536)}, ValueError, r"grid's z must be from 1 to 65,535"),
    ({"grid": 0}, ValueError, r"grid's x must be from 1"),
    ({"grid": (2, -1)}, ValueError, r"grid's y must be from 1"),
    ({"grid": 1.5}, TypeError, r"grid must be an int or a tuple of 1 to 3 ints"),
    ({"grid": "4"}, TypeError, r"grid must be an int"),
    ({"grid": True}, TypeError, r"grid must be an int"),
    ({"grid": (1, 2, 3, 4)}, TypeError, r"grid must be an int or a tuple of 1 to 3"),
    ({"grid": (2**31 - 1, 65535, 2)}, ValueError, r"grid must hold at most 4,294,967,295 blocks in a traced launch"),
    ({"block": (1, 1, 65)}, ValueError, r"block's z must be from 1 to 64 \(CUDA's limit"),
    ({"block": 2048}, ValueError, r"block's x must be from 1 to 1,024"),
    ({"block": (1, 1025)}, ValueError, r"block's y must be from 1 to 1,024"),
    ({"block": (64, 32)}, ValueError, r"block must hold at most 1024 threads \(CUDA's limit\), got \(64, 32, 1\)"),
    ({"block": None}, TypeError, r"block must be an int"),
    ({"timeout": None}, TypeError, r"timeout must be a number of seconds, got None"),
    ({"timeout": 0}, ValueError, r"timeout must be a finite number of seconds, at least 1 "),
    ({"timeout": -1}, ValueError, r"timeout must be a finite number of seconds, at least 1 "),
    ({"timeout": 1e-9}, ValueError, r"timeout must be .* at least 1 \(starting a traced run alone takes about a tenth"),
    ({"timeout": 0.999}, ValueError, r"timeout must be .* at least 1 .*got 0.999"),
    ({"timeout": math.inf}, ValueError, r"timeout must be a finite number of seconds"),
    ({"timeout": math.nan}, ValueError, r"timeout must be a finite number of seconds"),
    ({"timeout": "5"}, TypeError, r"timeout must be a number"),
    ({"timeout": True}, TypeError, r"timeout must be a number"),
    ({"max_threads": -1}, ValueError, r"max_threads must be at least 1"),
    ({"max_threads": 0}, ValueError, r"max_threads must be at least 1"),
    ({"max_threads": 1.5}, TypeError, r"max_threads must be an int"),
    ({"max_threads": True}, TypeError, r"max_threads must be an int"),
    ({"max_threads": "64"}, TypeError, r"max_threads must be an int"),
    (with_arg(2, "32"), TypeError, r"args: n is int, which takes an integer \(not a bool, str or float\), got '32'"),
    (with_arg(2, True), TypeError, r"args: n is int, which takes an integer .*got True"),
    (with_arg(2, 2.0), TypeError, r"args: n is int, which takes an integer"),
    (with_arg(2, None), TypeError, r"args: n is int, which takes an integer"),
    (with_arg(2, 2**40), ValueError, r"args: n is int, which holds integers from -2,147,483,648 to 2,147,483,647, "
                                     r"got 1,099,511,627,776"),
    (with_arg(2, -2**31 - 1), ValueError, r"args: n is int, which holds integers from -2,147,483,648"),
    (with_arg(3, -1), ValueError, r"args: m is unsigned, which holds integers from 0 to 4,294,967,295, got -1"),
    (with_arg(3, np.int64(2**32)), ValueError, r"args: m is unsigned, which holds integers from 0 to 4,294,967,295"),
    (with_arg(4, "2.0"), TypeError, r"args: a is float, which takes a real number \(not a bool or str\)"),
    (with_arg(4, False), TypeError, r"args: a is float, which takes a real number"),
    (with_arg(4, 1e39), ValueError, r"args: a is float, which holds numbers up to 3.40282e\+38 in magnitude"),
    (with_arg(4, 1j), TypeError, r"args: a is float, which takes a real number"),
    (with_arg(5, 1), TypeError, r"args: flag is bool, which takes True or False, got 1"),
    (with_arg(6, "0.5"), TypeError, r"args: d is double, which takes a real number"),
    (with_arg(1, READ_ONLY), ValueError, r"args: y \(float \*\) is an array the kernel may write, and the one given is "
                                         r"read-only"),
    ({"kernel": "k|x"}, ValueError, r"kernel must name a kernel defined in source \(k\).*got 'k\|x'"),
    ({"kernel": "("}, ValueError, r"kernel must name a kernel defined in source \(k\).*got '\('"),
    ({"kernel": "k.*"}, ValueError, r"kernel must name a kernel defined in source \(k\)"),
    ({"kernel": ""}, ValueError, r"kernel must name a kernel defined in source \(k\)"),
    ({"kernel": 5}, TypeError, r"kernel must name a kernel defined in source \(a str\), got 5"),
    ({"kernel": "k<x,2>"}, ValueError, r"kernel must be a C\+\+ name expression .*: x is declared neither in the source"),
    ({"kernel": "k<128,2>>"}, ValueError, r"kernel must be a C\+\+ name expression .*: a '>' closes nothing"),
    ({"kernel": "k<(128>"}, ValueError, r"kernel must be a C\+\+ name expression .*: a '\(' is never closed"),
    ({"kernel": "k<1,,2>"}, ValueError, r"kernel must be a C\+\+ name expression .*: an argument is empty"),
    (with_arg(0, np.ma.masked_array(np.arange(32, dtype=np.float32))), TypeError,
     r"args: x \(const float \*\) must be a plain C-contiguous NumPy array, got a masked array: pass its data \(x.filled"),
    (with_arg(1, np.zeros(32, ">f4")), TypeError, r"args: y .* got an array of >f4, which is not in this machine's byte order"),
    (with_arg(1, np.zeros(32, object)), TypeError, r"args: y .* got an array of \|O, which is Python objects"),
    ({"source": b"__global__ void k() {}"}, TypeError, r"source must be the kernel's CUDA C source \(a str\)"),
]


@pytest.mark.parametrize("bad, error, message", BAD, ids=[f"{next(iter(b))}={list(b.values())[0]!r}"[:40] for b, _, _ in BAD])
def test_each_bad_input_is_refused_naming_the_parameter_within_a_second(warm, bad, error, message):
    grid, block, args = good()
    call = {"source": SOURCE, "kernel": "k", "grid": grid, "block": block, "args": args, **bad}
    start = time.perf_counter()
    with pytest.raises(error, match=message):
        trace(call.pop("source"), call.pop("kernel"), call.pop("grid"), call.pop("block"), call.pop("args"), **call)
    assert time.perf_counter() - start < 1.0


def test_values_at_cudas_limits_and_a_read_only_input_are_accepted(warm):
    """The largest block CUDA allows along z (64) and a block of 1024 threads in all are
    traced; a read-only array passed to a const pointer is read and left as it was; integers
    at their type's ends pass unchanged."""
    grid, block, args = good()
    x = np.arange(32, dtype=np.float32)
    x.flags.writeable = False
    args[0], args[3] = x, np.uint32(2**32 - 1)
    trace(SOURCE, "k", grid, (1, 1, 64), args, max_threads=1, timeout=5.5)
    assert args[1][0] == np.float32(0.5 + float(2**32 - 1)) and not args[1][1:].any()  # threadIdx.x is 0 in all 64
    t = trace(SOURCE, "k", (3, 1, 1), (32, 32), good()[2], max_threads=1)
    assert (t.blocks, t.blocks_traced, t.block) == (3, 1, (32, 32, 1))  # max_threads under one block: one block


# The cache folder.

@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """A private cache that holds the runtime and k's traced executable, built once."""
    root = tmp_path_factory.mktemp("cache")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("GPUMODEL_CACHE", str(root))
        exe = builder.build(SOURCE)
    return root, exe.name


@pytest.fixture
def cache(built, tmp_path, monkeypatch):
    """A copy of `built`'s cache for one test: (its lab folder, k's executable in it)."""
    root = tmp_path / "cache"
    shutil.copytree(built[0], root)
    monkeypatch.setenv("GPUMODEL_CACHE", str(root))
    return root / "lab", root / "lab" / built[1]


def plant(path: pathlib.Path, marker: pathlib.Path, manifest: bool) -> None:
    """Put at `path` a program that creates `marker` when run, and (`manifest`) its hash in the
    entry's manifest, as someone who could write to the folder would."""
    path.write_text(f"#!/bin/sh\ntouch {marker}\n")
    path.chmod(0o755)
    if manifest:
        name = path.name.rsplit(".", 1)[0]
        (path.parent / f"{name}.sha256").write_text(f"sha256\n{builder._file_digest(path)}")


def run_k():
    grid, block, args = good()
    trace(SOURCE, "k", grid, block, args)
    return args[1]


def test_a_new_cache_folder_is_made_private_where_the_user_keeps_caches(tmp_path, monkeypatch):
    monkeypatch.delenv("GPUMODEL_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert builder.cache_folder() == tmp_path / "xdg" / "gpumodel" / "lab"
    for folder in (tmp_path / "xdg", tmp_path / "xdg" / "gpumodel", tmp_path / "xdg" / "gpumodel" / "lab"):
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/path")  # XDG: a relative path is ignored
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert builder.cache_root() == tmp_path / "home" / ".cache" / "gpumodel" / "lab"
    monkeypatch.setenv("GPUMODEL_CACHE", str(tmp_path / "mine"))
    assert builder.cache_root() == tmp_path / "mine" / "lab"


def unsafe(lab: pathlib.Path, how: str, monkeypatch) -> str:
    """Make `lab` (holding a planted program) a folder another user could have written to;
    the words the refusal must say."""
    if how == "mode":
        lab.chmod(0o777)
        return "its mode is 0777: group or others may use it"
    if how == "group":
        lab.chmod(0o770)
        return "its mode is 0770"
    if how == "owner":
        if os.getuid() == 0:  # root can give the folder to someone else
            os.chown(lab, 4242, 4242)
            return "it is owned by uid 4242, not by you"
        monkeypatch.setattr(builder.os, "getuid", lambda: os.geteuid() + 1)  # as if another user had made it
        return "not by you"
    if how == "symlink":
        real = lab.with_name("elsewhere")
        lab.rename(real)
        lab.symlink_to(real)
        return "it is a symbolic link"
    if how == "parent":
        lab.parent.chmod(0o777)
        return "its parent .* lets others replace it"
    if how == "above":  # a world-writable XDG_CACHE_HOME, say: anyone may rename gpumodel/ out of it
        lab.parent.parent.chmod(0o777)
        return f"the folder {lab.parent.parent} \\(mode 0777\\) lets others replace it"
    raise AssertionError(how)


@pytest.mark.parametrize("how", ["mode", "group", "owner", "symlink", "parent", "above"])
def test_a_cache_folder_another_user_could_write_to_is_refused_and_nothing_in_it_runs(cache, tmp_path, how, monkeypatch):
    lab, exe = cache
    marker = tmp_path / "ran"
    plant(exe, marker, manifest=True)  # a consistent entry: only the folder's checks stop it
    words = unsafe(lab, how, monkeypatch)
    with pytest.raises(builder.UnsafeCache, match=f"refuses its cache folder {lab}: .*{words}.*GPUMODEL_CACHE"):
        run_k()
    assert not marker.exists()


def test_a_sticky_world_writable_parent_as_tmp_is_accepted(cache):
    lab, _ = cache
    lab.parent.chmod(0o1777)
    assert builder.private(lab) == lab


def test_a_cached_executable_whose_hash_differs_is_rebuilt_never_run(cache, tmp_path):
    lab, exe = cache
    marker = tmp_path / "ran"
    plant(exe, marker, manifest=False)  # the manifest still holds the hash of what was built
    y = run_k()
    assert not marker.exists() and np.array_equal(y, 2 * np.arange(32) + 1.5)
    assert not exe.exists()  # deleted; built again (its DWARF names this folder: another content, another name)
    manifest = exe.with_name(exe.name.rsplit(".", 1)[0] + ".sha256")
    content = manifest.read_text().split()[1]
    assert builder._file_digest(exe.with_name(exe.name.rsplit(".", 1)[0] + "." + content)) == content


def test_a_cached_runtime_object_whose_hash_differs_is_rebuilt_never_linked(cache, tmp_path, monkeypatch):
    """The planted object is the runtime itself plus a constructor that creates a marker: it
    would link and run. Rebuilding the runtime takes g++ 10 s here, so the rebuild copies the
    good object kept aside; what matters is that it is asked for and the planted one is not linked."""
    lab, _ = cache
    (runtime,) = [p for p in lab.glob("runtime-*.o") if not p.name.endswith(".sha256")]
    kept = tmp_path / "good.o"
    shutil.copy(runtime, kept)
    marker = tmp_path / "ran"
    (tmp_path / "marker.cpp").write_text(f'#include <cstdio>\n__attribute__((constructor)) static void planted() '
                                         f'{{ std::fopen("{marker}", "w"); }}\n')
    subprocess.run(["g++", "-fPIE", "-c", str(tmp_path / "marker.cpp"), "-o", str(tmp_path / "marker.o")], check=True)
    subprocess.run(["ld", "-r", str(kept), str(tmp_path / "marker.o"), "-o", str(runtime)], check=True)
    real, rebuilt = builder.gxx, []

    def compile(args, what):
        if what == "the lab's runtime":
            rebuilt.append(args)
            shutil.copy(kept, args[-1])
        else:
            real(args, what)
    monkeypatch.setattr(builder, "gxx", compile)
    grid, block, args = good()
    trace(SOURCE.replace("a * x[i]", "a * x[i] + 1.0f"), "k", grid, block, args)  # a new kernel: linked now
    assert rebuilt and not marker.exists() and np.array_equal(args[1], 2 * np.arange(32) + 2.5)
    assert builder._file_digest(runtime) == runtime.name.split(".")[1]  # the planted object is gone


def test_the_emulator_verifies_its_libraries_too(tmp_path):
    """A shared library the CPU emulator cached (built by another process), replaced by one
    whose constructor creates a marker, is built again before it is loaded; the folder is
    checked as the lab's cache is."""
    build, marker = tmp_path / "emu", tmp_path / "ran"
    build.mkdir(mode=0o700)
    args = "[x, y, 32, 1, 2.0, True, 0.5]"
    subprocess.run([sys.executable, "-c", "import numpy as np; from gpumodel.lab.runner import Emulator; "
                    "x, y = np.arange(32, dtype=np.float32), np.zeros(32, np.float32); "
                    f"Emulator({str(build)!r}).launch({SOURCE!r}, 'k', (1,), (32,), {args})"],
                   check=True, cwd=pathlib.Path(__file__).parents[1])
    (lib,) = build.glob("emulator-*.so")
    (tmp_path / "planted.cpp").write_text(f'#include <cstdio>\n__attribute__((constructor)) static void planted() '
                                          f'{{ std::fopen("{marker}", "w"); }}\n')
    subprocess.run(["g++", "-shared", "-fPIC", str(tmp_path / "planted.cpp"), "-o", str(lib)], check=True)
    x, y = np.arange(32, dtype=np.float32), np.zeros(32, np.float32)
    Emulator(build).launch(SOURCE, "k", (1,), (32,), [x, y, 32, 1, 2.0, True, 0.5])
    assert np.array_equal(y, 2 * x + 1.5) and not marker.exists()
    build.chmod(0o755)
    with pytest.raises(builder.UnsafeCache, match="its mode is 0755"):
        Emulator(build)


def test_a_failed_build_is_cached_and_fails_again_at_once_with_the_same_message(cache, monkeypatch):
    source = "__global__ void k(float* y) {\n    y[threadIdx.x] = undefined_name;\n}\n"
    with pytest.raises(LabError, match=r"kernel.cu:2:22: error: .undefined_name. was not declared") as first:
        trace(source, "k", 1, 32, [np.zeros(32, np.float32)])

    def never(*args, **kwargs):
        raise AssertionError("g++ ran again")
    monkeypatch.setattr(builder, "gxx", never)
    start = time.perf_counter()
    with pytest.raises(LabError) as again:
        trace(source, "k", 1, 32, [np.zeros(32, np.float32)])
    assert str(again.value) == str(first.value) and time.perf_counter() - start < 1.0


def test_a_link_that_fails_is_not_cached_and_a_runtime_of_another_version_survives(cache):
    """A link can fail for a reason outside the source (the runtime pruned by another process
    while linking: two checkouts on one account, or `tests/lab_mutants.py` run beside the tests),
    so its failure is not recorded; and building prunes runtimes only beyond RUNTIME_KEEP."""
    folder = builder.cache_folder()
    other = builder.cached(folder, "runtime-" + "0" * 64 + ".o", lambda out: out.write_bytes(b"another version"))
    source = "__device__ float f(float);\n__global__ void k(float* y) { y[threadIdx.x] = f(1.0f); }\n"
    for _ in range(2):  # the second time g++ runs again: nothing recorded
        with pytest.raises(LabError, match="undefined reference") as err:
            trace(source, "k", 1, 32, [np.zeros(32, np.float32)])
        assert not isinstance(err.value, builder.CompileError)
    assert not [m for m in folder.glob(f"trace-*.{builder.HASH}") if m.read_text().startswith("error")]
    assert other.exists() and builder.RUNTIME_KEEP > 1


def test_a_compile_error_inside_the_labs_header_points_at_the_learners_line():
    source = "__global__ void k(float* y) {\n    int t = threadIdx.x;\n    atomicAdd(y, \"x\");\n}\n"
    with pytest.raises(LabError, match=r"kernel.cu:3:\d+: error: .* \(inside cuda_emu.h\)") as err:
        trace(source, "k", 1, 32, [np.zeros(32, np.float32)])
    assert str(builder.HERE) not in str(err.value) and "/" not in str(err.value).split("Where it names")[0]


# The limits.

BOMB = "".join(f"#define A{i} A{i - 1} A{i - 1}\n" for i in range(2, 27))
BOMB = "#define A1 x x\n" + BOMB + "__global__ void k(float* y) { int x = 0; A26; }\n"
"""2^26 copies of `x` from 26 lines of macros."""


def test_a_compile_bomb_is_stopped_by_the_compilers_memory_limit(cache, monkeypatch):
    monkeypatch.setattr(builder, "COMPILE_MEMORY", 300 * 10**6)
    with pytest.raises(LabError, match=r"g\+\+ compiling the kernel ran out of the lab's memory limit of 300 MB"):
        builder.build(BOMB)


def test_a_compile_bomb_is_stopped_by_the_compilers_time_limit(cache, monkeypatch):
    monkeypatch.setattr(builder, "COMPILE_SECONDS", 1.0)
    start = time.perf_counter()
    with pytest.raises(LabError, match=r"g\+\+ compiling the kernel ran past the time limit of 1 s.*limits g\+\+ to 1 s"):
        builder.build(BOMB.replace("int x = 0", "int x = 1"))
    assert time.perf_counter() - start < 5


@pytest.mark.slow
def test_a_compile_bomb_is_stopped_under_the_default_limits():
    """Measured here: stopped by the 2 GB memory limit after about 10 s (before the 60 s one)."""
    with pytest.raises(LabError, match=r"g\+\+ compiling the kernel ran (out of the lab's memory limit of 2.00 GB|past "
                                       r"the time limit of 60 s)"):
        builder.build(BOMB.replace("int x = 0", "int x = 2"))


def test_an_allocation_past_the_memory_limit_fails_in_the_traced_run():
    """1 GB of malloc succeeds, 3 GB fails (returns NULL) under the 2 GB beyond the arrays."""
    source = ("#include <cstdlib>\n__global__ void k(float* y) {\n    if (threadIdx.x) return;\n"
              "    y[0] = malloc(1000000000ull) != nullptr;\n    y[1] = malloc(3000000000ull) != nullptr;\n}\n")
    y = np.zeros(32, np.float32)
    trace(source, "k", 1, 32, [y])
    assert y[:2].tolist() == [1.0, 0.0]


def test_a_kernel_that_allocates_and_touches_3_gb_is_stopped_naming_the_memory_limit():
    for alloc in ("char* p = (char*)malloc(3000000000ull)", "char* p = new char[3000000000ull]"):
        source = (f"#include <cstdlib>\n#include <cstring>\n__global__ void k(float* y) {{\n    {alloc};\n"
                  "    memset(p, 1, 3000000000ull);\n    y[threadIdx.x] = p[threadIdx.x];\n}\n")
        with pytest.raises(LabError, match=r"memory limit (is|of) 2.00 GB"):
            trace(source, "k", 1, 1, [np.zeros(1, np.float32)])


def test_the_memory_limit_leaves_room_for_the_arrays(monkeypatch):
    """The limit is `RUN_MEMORY` beyond the arrays' bytes: with 100 MB beyond them, a kernel on
    a 256 MB array runs."""
    monkeypatch.setattr(runner, "RUN_MEMORY", 100 * 10**6)
    x = np.zeros(64 * 2**20, np.float32)
    trace("__global__ void k(float* x) { x[blockIdx.x * 1048576 + threadIdx.x] = 1.0f; }", "k", 64, 32, [x])
    assert x.sum() == 64 * 32


def test_a_printf_flood_is_stopped_by_the_output_limit():
    source = ('#include <cstdio>\n__global__ void k(float* y) {\n    for (int i = 0; i < 100000000; ++i)\n'
              '        printf("thread %d says %d again and again\\n", threadIdx.x, i);\n}\n')
    start = time.perf_counter()
    with pytest.raises(LabError, match=r"k printed more than the lab's output limit of 1.00 MB and was stopped"):
        trace(source, "k", 1, 32, [np.zeros(32, np.float32)], timeout=60)
    assert time.perf_counter() - start < 10


def test_the_bounded_run_keeps_at_most_the_limit_and_kills_the_whole_group(tmp_path):
    done = limits.run(["sh", "-c", "yes flood & yes flood >&2; wait"], 20, 10**9, output=1000)
    assert done.stopped == "output" and len(done.stdout) <= 1000 and len(done.stderr) <= 1000
    done = limits.run(["sh", "-c", f"sleep 30; touch {tmp_path / 'late'}"], 0.5, 10**9)
    assert done.stopped == "time" and done.returncode == -9
    time.sleep(0.2)
    assert not (tmp_path / "late").exists()
    done = limits.run(["python3", "-c", "import resource; print(resource.getrlimit(resource.RLIMIT_AS)[0])"], 20,
                      512 * 2**20)
    assert done.returncode == 0 and int(done.stdout) == 512 * 2**20


def test_a_kernel_named_with_spaces_around_is_reported_by_its_name(warm):
    grid, block, args = good()
    assert trace(SOURCE, " k\n", grid, block, args).kernel == "k"


def test_a_crash_past_two_billion_threads_names_the_int_index_that_wraps():
    """A correct-looking kernel whose int index wraps past 2^31 - 1 threads (2^26 blocks of 64
    reach 2^32) writes far before its array; the lab traces a sample of such a grid first, and the
    crash says why."""
    source = r"""__global__ void k(float* x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = 1.0f;
}"""
    with pytest.raises(LabError, match=r"crashed \(SIGSEGV\) at line 3, column \d+ \(`if \(i < n\) x\[i\] = 1.0f;`\).*"
                                       r"an index that wrapped; the launch has 4,294,967,296 threads, more than an int "
                                       r"holds: .*compute it as size_t"):
        trace(source, "k", 2**26, 64, [np.zeros(64, np.float32), 64])
    wide = source.replace("int i = blockIdx.x", "size_t i = (size_t)blockIdx.x")
    with pytest.raises(LabError, match=r"Or a launch too large to run here: every one of its 4,294,967,296 threads runs"):
        trace(wide, "k", 2**26, 64, [np.zeros(64, np.float32), 64], timeout=2)  # every block runs: too many here
    assert trace(wide, "k", 2**12, 64, [np.zeros(64, np.float32), 64], max_threads=2**10).sampled


def _alive(pid: int) -> bool:
    """Whether `pid` still runs (a zombie, killed and not yet reaped by init, does not)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


@pytest.mark.parametrize("wait", ["exits at once", "runs past its limit"])
def test_a_child_that_leaves_the_process_group_does_not_outlive_the_run(wait):
    """setsid() puts a child in a session of its own, out of the group the limit kills."""
    rest = "exit 0" if wait == "exits at once" else "sleep 30"
    start = time.monotonic()
    done = limits.run(["/bin/sh", "-c", f"setsid sleep 60 >/dev/null 2>&1 < /dev/null & echo $!; {rest}"], 2.0, 10**9)
    pid = int(done.stdout.split()[0])
    assert time.monotonic() - start < 10 and done.stopped == (None if wait == "exits at once" else "time")
    for _ in range(50):  # SIGKILL is delivered at once; give the kernel a moment to mark it
        if not _alive(pid):
            break
        time.sleep(0.02)
    assert not _alive(pid)


def test_a_stray_holding_the_output_pipe_does_not_keep_the_run_waiting():
    start = time.monotonic()
    done = limits.run(["/bin/sh", "-c", "setsid sleep 60 & echo started"], 20.0, 10**9)
    assert done.stopped is None and done.stdout.strip() == "started" and time.monotonic() - start < 5
