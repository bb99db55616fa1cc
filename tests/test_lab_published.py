"""The kernel lab on code as it is published (issue 74): our own kernels and programs written in
the styles of public sources the lab must take unchanged (a textbook's in-place reductions in
global memory, a program that prints its launch configuration, vLLM's csrc kernels in a namespace
beside torch-only host wrappers, ggml's params struct passed by value), each traced and its
result checked against NumPy or a hand derivation."""

import shutil

import numpy as np
import pytest

from gpumodel.lab import LabError, run_program, trace

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="the lab needs g++")


# 1. The race check covers global memory as it covers shared memory.

GLOBAL_REDUCE = r"""
// A textbook's in-place reduction in global memory: a tree with __syncthreads() down to 64
// values, then the last warp unrolled through a volatile pointer.
__global__ void unrolled(int* data, int* sums) {
    const unsigned t = threadIdx.x;
    int* own = data + blockIdx.x * blockDim.x;
    for (unsigned stride = blockDim.x / 2; stride > 32; stride >>= 1) {
        if (t < stride) own[t] += own[t + stride];
        __syncthreads();
    }
    if (t < 32) {
        volatile int* v = own;
        v[t] += v[t + 32];
        v[t] += v[t + 16];
        v[t] += v[t + 8];
        v[t] += v[t + 4];
        v[t] += v[t + 2];
        v[t] += v[t + 1];
    }
    if (t == 0) sums[blockIdx.x] = own[0];
}

// The same, each step's read and write apart with __syncwarp() between them.
__global__ void synced(int* data, int* sums) {
    const unsigned t = threadIdx.x;
    int* own = data + blockIdx.x * blockDim.x;
    for (unsigned stride = blockDim.x / 2; stride > 32; stride >>= 1) {
        if (t < stride) own[t] += own[t + stride];
        __syncthreads();
    }
    if (t < 32) {
        for (unsigned o = 32; o > 0; o >>= 1) {
            const int x = t < o ? own[t + o] : 0;
            __syncwarp();
            if (t < o) own[t] += x;
            __syncwarp();
        }
    }
    if (t == 0) sums[blockIdx.x] = own[0];
}

// The tree's barrier forgotten: warp 0 reads what warp 1 writes.
__global__ void no_barrier(int* data, int* sums) {
    const unsigned t = threadIdx.x;
    int* own = data + blockIdx.x * blockDim.x;
    if (t < 64) own[t] += own[t + 64];
    if (t == 0) sums[blockIdx.x] = own[0] + own[32];
}
"""


def _line(source: str, text: str) -> int:
    return next(i for i, line in enumerate(source.splitlines(), 1) if text in line)


def test_a_warp_synchronous_reduction_in_global_memory_is_named_as_a_race_at_its_lines():
    """The last warp unrolled through a volatile global pointer with no __syncwarp(): lane 0
    runs its six steps before lane 1 runs any (the lab's lanes take turns, as independent thread
    scheduling allows), so lane 0 reads v[1] at the last step, then lane 1 writes it at the
    first: a write-after-read on global memory between lanes of one warp, named at both lines,
    the fix a __syncwarp()."""
    data, sums = np.ones(4 * 128, np.int32), np.zeros(4, np.int32)
    t = trace(GLOBAL_REDUCE, "unrolled", 4, 128, [data, sums])
    assert t.races and all(r.space == "global" and r.one_warp for r in t.races)
    race = next(r for r in t.races if r.hazard == "write-after-read")
    first, last = _line(GLOBAL_REDUCE, "v[t] += v[t + 32]"), _line(GLOBAL_REDUCE, "v[t] += v[t + 1]")
    assert (race.first[0], race.second[0]) == (last, first) and race.threads[:2] == ((0, 0, 0), (1, 0, 0))
    assert race.message.startswith("write-after-read race on global memory: thread (0, 0, 0) reads at line "
                                   f"{last}")
    assert f"Missing: a __syncwarp() between line {first} and line {last}" in race.message
    assert "RACE write-after-read race on global memory" in t.report(gpus=["H100-SXM"])
    assert int(t.arrays[1][0]) != 128  # the lab's lane order gives a wrong sum, as a GPU may


def test_the_same_reduction_with_syncwarp_is_race_free_and_right():
    """Each step reads, waits at __syncwarp(), writes, waits: no race on global memory, and every
    block's sum is right. The tree above it (in place, a __syncthreads() a step) is race-free too."""
    rng = np.random.default_rng(7)
    data = rng.integers(-100, 100, 4 * 256).astype(np.int32)
    sums = np.zeros(4, np.int32)
    t = trace(GLOBAL_REDUCE, "synced", 4, 256, [data.copy(), sums])
    assert t.races == []
    assert t.arrays[1].tolist() == data.reshape(4, 256).sum(axis=1).tolist()


def test_a_race_on_global_memory_between_warps_asks_for_a_syncthreads():
    """Thread 0 reads own[32] for the block's sum, which thread 32 (warp 1) adds to in the same
    phase: the lab runs thread 0 to its end first, so a write-after-read between two warps on
    global memory, the fix a __syncthreads()."""
    t = trace(GLOBAL_REDUCE, "no_barrier", 1, 128, [np.ones(128, np.int32), np.zeros(1, np.int32)])
    (race,) = t.races
    assert race.space == "global" and not race.one_warp and race.hazard == "write-after-read"
    read, add = _line(GLOBAL_REDUCE, "own[0] + own[32]"), _line(GLOBAL_REDUCE, "own[t] += own[t + 64]")
    assert (race.first[0], race.second[0], race.threads) == (read, add, ((0, 0, 0), (32, 0, 0)))
    assert f"Missing: a __syncthreads() between line {add} and line {read}" in race.message


def test_reads_of_an_array_other_threads_write_after_a_barrier_are_no_race():
    """Rule: the global check keeps shared memory's rules: a read after the barrier that follows
    the write (each thread reads its neighbour's word), an atomic on one word from every thread,
    and many threads reading one word are no races; nor is an uninitialised global read."""
    source = r"""__global__ void k(float* x, float* y, unsigned* count) {
    const unsigned t = threadIdx.x;
    x[t] = 2.0f * x[t];
    __syncthreads();
    y[t] = x[(t + 1) % blockDim.x] + x[0];
    atomicAdd(count, 1u);
}"""
    x, y, count = np.arange(64, dtype=np.float32), np.zeros(64, np.float32), np.zeros(1, np.uint32)
    t = trace(source, "k", 1, 64, [x, y, count])
    assert t.races == []
    assert t.arrays[1].tolist() == (2 * np.roll(np.arange(64), -1)).tolist() and int(t.arrays[2][0]) == 64


GLOBAL_REDUCE_PROGRAM = r"""
#include <cstdio>
#include <cuda_runtime.h>

__global__ void last_warp(int* g, int* out) {
    const unsigned t = threadIdx.x;
    int* own = g + blockIdx.x * blockDim.x;
    if (t < 32) {
        volatile int* v = own;
        v[t] += v[t + 32];
        v[t] += v[t + 16];
        v[t] += v[t + 8];
    }
    if (t == 0) out[blockIdx.x] = own[0] + own[1] + own[2] + own[3] + own[4] + own[5] + own[6] + own[7];
}

int main() {
    const int blocks = 8, n = 64 * blocks;
    int h[n], sums[blocks], *d, *o;
    for (int i = 0; i < n; ++i) h[i] = 1;
    cudaMalloc(&d, sizeof h);
    cudaMalloc(&o, sizeof sums);
    cudaMemcpy(d, h, sizeof h, cudaMemcpyHostToDevice);
    last_warp<<<blocks, 64>>>(d, o);
    cudaMemcpy(sums, o, sizeof sums, cudaMemcpyDeviceToHost);
    int total = 0;
    for (int b = 0; b < blocks; ++b) total += sums[b];
    printf("total %d (want %d)\n", total, n);
    return 0;
}
"""


def test_a_whole_programs_race_on_a_cudamalloc_array_is_written_under_its_launch():
    """A whole program's arrays are cudaMalloc'd: the same race is found on them, and the
    program's report writes it under the launch (the sums it printed are the lab's order's)."""
    p = run_program(GLOBAL_REDUCE_PROGRAM)
    (t,) = p.launches
    assert t.races and all(r.space == "global" and r.one_warp for r in t.races)
    report = p.report()
    assert "; RACES\n     RACE " in report and "race on global memory" in report
    assert f"line {_line(GLOBAL_REDUCE_PROGRAM, 'v[t] += v[t + 32]')}" in report


# 2. A printf, a string or a comment that holds `<<<` and `>>>` is never a launch.

PRINTS_ITS_LAUNCH = r"""
#include <cstdio>
#include <cuda_runtime.h>

// Launched below as twice<<<blocks, threads>>>(d, n), once.
__global__ void twice(float* x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= 2.0f;
}

/* twice<<<1, 1>>>(d, n) would run one thread */
int main() {
    const int n = 1000, threads = 128, blocks = (n + threads - 1) / threads;
    float h[n], *d;
    for (int i = 0; i < n; ++i) h[i] = i;
    cudaMalloc(&d, sizeof h);
    cudaMemcpy(d, h, sizeof h, cudaMemcpyHostToDevice);
    twice<<<blocks, threads>>>(d, n);
    cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost);
    printf("twice elapsed %f sec x[%d] = %.0f <<<grid %d block "
           "%d>>>\n", 0.0, n - 1, h[n - 1], blocks, threads);
    printf("as twice<<<%d, %d>>>(d, n)\n", blocks, threads);
    const char* shape = "<<<'>>>";
    printf("%s %c\n", shape, '<');
    return 0;
}
"""


def test_a_whole_files_printf_holding_a_launchs_brackets_is_no_launch():
    """gm.lab.trace of the whole file: the two printfs (one whose `<<<` and `>>>` lie in two
    string literals on two lines, one that reads as `k<<<...>>>(...)`), the string, the comments:
    none is taken for a launch, so the file compiles and its kernel runs."""
    x = np.arange(1000, dtype=np.float32)
    t = trace(PRINTS_ITS_LAUNCH, "twice", 8, 128, [x, 1000])
    assert t.arrays[0].tolist() == (2 * np.arange(1000)).tolist()


def test_a_whole_programs_printf_holding_a_launch_prints_it_and_runs_the_one_launch():
    """run_program: only the real launch runs (one, with its 8 blocks); each printf prints as written."""
    p = run_program(PRINTS_ITS_LAUNCH)
    assert [(t.kernel, t.grid, t.block) for t in p.launches] == [("twice", (8, 1, 1), (128, 1, 1))]
    assert p.output.splitlines() == ["twice elapsed 0.000000 sec x[999] = 1998 <<<grid 8 block 128>>>",
                                     "as twice<<<8, 128>>>(d, n)", "<<<'>>> <"]


# 3. Kernels in namespaces, and launches through function pointers, under the kernel's own name.

IN_NAMESPACES = r"""
#include <cstdio>
#include <cuda_runtime.h>

namespace paged {
struct Doubled { __device__ static int of(int v) { return 2 * v; } };

// vLLM's csrc style: non-template kernels inside the project's namespace.
__global__ void copy_rows(const int* __restrict__ rows, const int* __restrict__ src, int* __restrict__ dst,
                          int width) {
  const int to = rows[2 * blockIdx.x], from = rows[2 * blockIdx.x + 1];
  for (int i = threadIdx.x; i < width; i += blockDim.x) dst[to * width + i] = src[from * width + i];
}

namespace detail {
__global__ void add(int* x, int v) { x[blockIdx.x * blockDim.x + threadIdx.x] += v; }
template <class Op> __global__ void add_op(int* x, int v) { x[threadIdx.x] += Op::of(v); }
}  // namespace detail

void add_from_inside(int* x, int v) { detail::add<<<1, 32>>>(x, v); }
}  // namespace paged

typedef void (*step_fn)(int*, int);
void through(void (*kernel)(int*, int), int* x, int v) { kernel<<<1, 32>>>(x, v); }

int main() {
  int h[32], *d;
  for (int i = 0; i < 32; ++i) h[i] = i;
  cudaMalloc(&d, sizeof h);
  cudaMemcpy(d, h, sizeof h, cudaMemcpyHostToDevice);
  paged::add_from_inside(d, 1);
  auto step = paged::detail::add;
  step<<<1, 32>>>(d, 2);
  through(paged::detail::add, d, 4);
  step_fn again = &paged::detail::add;
  again<<<1, 32>>>(d, 8);
  cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost);
  printf("%d %d\n", h[0], h[31]);
  return 0;
}
"""


@pytest.mark.parametrize("name", ["copy_rows", "paged::copy_rows"])
def test_a_kernel_in_a_namespace_is_traced_by_its_name_with_or_without_the_namespace(name):
    """Every non-template kernel of the file is built (the nested namespace's `add` too, called with
    its namespaces): `copy_rows` copies row 3 of src to row 0 of dst and row 1 to row 2."""
    rows = np.array([0, 3, 2, 1], np.int32)
    src, dst = np.arange(4 * 40, dtype=np.int32), np.zeros(3 * 40, np.int32)
    t = trace(IN_NAMESPACES, name, 2, 32, [rows, src, dst, 40])
    assert t.kernel == name and t.report().startswith(f"{name}<<<")
    want = np.zeros((3, 40), np.int32)
    want[0], want[2] = src.reshape(4, 40)[3], src.reshape(4, 40)[1]
    assert t.arrays[2].tolist() == want.ravel().tolist()


def test_a_template_kernel_in_a_namespace_takes_its_namespaces_types_unqualified():
    for name in ("add_op<Doubled>", "paged::detail::add_op<paged::Doubled>"):
        assert trace(IN_NAMESPACES, name, 1, 32, [np.zeros(32, np.int32), 3]).arrays[0].tolist() == [6] * 32


def test_a_launch_through_a_function_pointer_is_reported_under_the_kernels_own_name():
    """Four launches of paged::detail::add: unqualified inside its namespace, through an `auto`
    variable, a `(*kernel)` parameter and a typedef'd pointer; each reported under the kernel's
    name with its namespaces (as Nsight names it), none under the pointer's; 0 + 1 + 2 + 4 + 8."""
    p = run_program(IN_NAMESPACES)
    assert [t.kernel for t in p.launches] == ["paged::detail::add"] * 4
    assert p.output.split() == ["15", "46"]
    assert "step<<<" not in p.report() and "kernel<<<" not in p.report()


# 4. A kernel file whose host wrappers need PyTorch: the wrappers left out and named, the kernels run.

TORCH_DISPATCH = r"""#pragma once
#include <torch/all.h>

#define LAB_DISPATCH_FLOATING_TYPES(TYPE, NAME, ...) \
  AT_DISPATCH_SWITCH(TYPE, NAME, AT_DISPATCH_CASE(at::ScalarType::Float, __VA_ARGS__))
"""

TORCH_CONVERT = r"""#pragma once
#include <torch/headeronly/util/Half.h>
#include <cuda_fp16.h>

namespace lab {
template <typename T> struct Convert { static constexpr bool exists = false; };
template <> struct Convert<float> {
  static constexpr bool exists = true;
  __device__ static float to_float(float x) { return x; }
};
template <> struct Convert<c10::Half> {
  static constexpr bool exists = true;
  __device__ static float to_float(__half x) { return __half2float(x); }
};
}  // namespace lab
"""

TORCH_KERNELS = r"""#include "convert.cuh"
#include "dispatch.h"

#include <torch/cuda.h>
#include <c10/cuda/CUDAGuard.h>
#include <ATen/cuda/CUDAContext.h>
#include <cub/cub.cuh>

namespace lab {

// vLLM's csrc style: a row per block, the block's sum of squares through CUB.
template <typename scalar_t>
__global__ void rms_norm_kernel(scalar_t* __restrict__ out, const scalar_t* __restrict__ input,
                                const scalar_t* __restrict__ weight, const float epsilon, const int hidden_size) {
  __shared__ float s_variance;
  float variance = 0.0f;
  for (int i = threadIdx.x; i < hidden_size; i += blockDim.x) {
    const float x = Convert<scalar_t>::to_float(input[blockIdx.x * hidden_size + i]);
    variance += x * x;
  }
  using BlockReduce = cub::BlockReduce<float, 256>;
  __shared__ typename BlockReduce::TempStorage store;
  variance = BlockReduce(store).Sum(variance, blockDim.x);
  if (threadIdx.x == 0) s_variance = rsqrtf(variance / hidden_size + epsilon);
  __syncthreads();
  for (int i = threadIdx.x; i < hidden_size; i += blockDim.x)
    out[blockIdx.x * hidden_size + i] = (scalar_t)(input[blockIdx.x * hidden_size + i] * s_variance) * weight[i];
}

__global__ void copy_blocks_kernel(const int64_t* __restrict__ mapping, float* __restrict__ cache, int block_size) {
  const int64_t src = mapping[2 * blockIdx.x], dst = mapping[2 * blockIdx.x + 1];
  for (int i = threadIdx.x; i < block_size; i += blockDim.x) cache[dst * block_size + i] = cache[src * block_size + i];
}

}  // namespace lab

void rms_norm(torch::Tensor& out, torch::Tensor& input, torch::Tensor& weight, double epsilon) {
  TORCH_CHECK(out.is_contiguous());
  int hidden_size = input.size(-1);
  int num_tokens = input.numel() / hidden_size;
  const at::cuda::OptionalCUDAGuard device_guard(device_of(input));
  const cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  LAB_DISPATCH_FLOATING_TYPES(input.scalar_type(), "rms_norm_kernel", [&] {
    lab::rms_norm_kernel<scalar_t><<<num_tokens, 256, 0, stream>>>(
        out.data_ptr<scalar_t>(), input.data_ptr<scalar_t>(), weight.data_ptr<scalar_t>(), epsilon, hidden_size);
  });
}

static inline int blocks_of(const torch::Tensor& mapping) { return mapping.size(0); }

void copy_blocks(torch::Tensor& cache, const torch::Tensor& mapping, int64_t block_size) {
  lab::copy_blocks_kernel<<<blocks_of(mapping), 128>>>(mapping.data_ptr<int64_t>(), cache.data_ptr<float>(),
                                                       block_size);
}

#define LAB_LAUNCH_COPY(CACHE, MAPPING, N) \
  lab::copy_blocks_kernel<<<N, 128, 0, at::cuda::getCurrentCUDAStream()>>>(MAPPING, CACHE, 16)

void copy_blocks_raw(float* cache, const int64_t* mapping, int n) { LAB_LAUNCH_COPY(cache, mapping, n); }

TORCH_LIBRARY_FRAGMENT(_lab, ops) {
  ops.def("rms_norm(Tensor! out, Tensor input, Tensor weight, float epsilon) -> ()");
  ops.impl("rms_norm", torch::kCUDA, &rms_norm);
}
"""


@pytest.fixture
def torch_style(tmp_path):
    """The kernel file's folder, with its two headers (each includes PyTorch's)."""
    (tmp_path / "convert.cuh").write_text(TORCH_CONVERT)
    (tmp_path / "dispatch.h").write_text(TORCH_DISPATCH)
    return (f"-I{tmp_path}",)


def test_a_kernel_file_with_torch_wrappers_traces_its_kernels_and_names_what_it_left_out(torch_style):
    """rms_norm_kernel<float> as NumPy computes it (x / sqrt(mean(x^2) + eps) * w, a row per block),
    copy_blocks_kernel by its bare name; the report names the four wrappers (one written against
    PyTorch only through the file's launch macro), the inline helper, the TORCH_LIBRARY block and
    the class specialised for c10::Half, each at its line, and nothing else."""
    rng = np.random.default_rng(3)
    x, w = rng.standard_normal((4, 300)).astype(np.float32), rng.standard_normal(300).astype(np.float32)
    out = np.zeros_like(x)
    t = trace(TORCH_KERNELS, "rms_norm_kernel<float>", 4, 256, [out, x, w, 1e-6, 300], options=torch_style)
    want = x / np.sqrt((x.astype(np.float64) ** 2).mean(axis=1, keepdims=True) + 1e-6) * w
    np.testing.assert_allclose(t.arrays[0], want, rtol=1e-5, atol=1e-5)
    line = {name: _line(TORCH_KERNELS, text) for name, text in (
        ("rms_norm", "void rms_norm("), ("blocks_of", "int blocks_of("), ("copy_blocks", "void copy_blocks("),
        ("copy_blocks_raw", "void copy_blocks_raw("), ("TORCH_LIBRARY_FRAGMENT", "TORCH_LIBRARY_FRAGMENT"))}
    assert t.left_out == [f"{name} (line {n})" for name, n in line.items()] + [
        f"Convert<c10::Half> (convert.cuh, line {_line(TORCH_CONVERT, 'Convert<c10::Half>')})"]
    report = t.report(gpus=["H100-SXM"])
    assert report.splitlines()[1].startswith("left out of the build, as code written against PyTorch")
    assert f"rms_norm (line {line['rms_norm']})" in report
    cache, mapping = np.arange(6 * 16, dtype=np.float32), np.array([0, 5, 2, 3], np.int64)
    trace(TORCH_KERNELS, "copy_blocks_kernel", 2, 128, [mapping, cache, 16], options=torch_style)
    want = np.arange(6 * 16, dtype=np.float32).reshape(6, 16)
    want[5], want[3] = want[0], want[2]
    assert cache.reshape(6, 16).tolist() == want.tolist()


def test_a_kernel_that_needs_torch_itself_says_what_the_lab_left_out():
    """A kernel whose own code names c10::Half is kept (the lab leaves out no kernel), so g++
    refuses it; the message says the lab left out PyTorch and what, and what such an error means."""
    source = TORCH_KERNELS.replace('#include "convert.cuh"\n#include "dispatch.h"\n', "").replace(
        "  __shared__ float s_variance;", "  __shared__ c10::Half s_variance;")
    with pytest.raises(LabError) as err:
        trace(source, "copy_blocks_kernel", 1, 128, [np.zeros(2, np.int64), np.zeros(16, np.float32), 16])
    message = str(err.value)
    assert "error: ‘c10’ does not name a type" in message and "is host code" not in message  # the wrappers are out
    assert "The lab left out the file's PyTorch headers and the code written against them: rms_norm (line" in message
    assert "an error above that names torch::, at:: or c10:: is in code it kept" in message


# 5. A struct passed by value (ggml's softmax params struct): a NumPy structured scalar or a ctypes.Structure.

PARAMS_BY_VALUE = r"""
#include <cstdint>

enum scale_mode { SCALE_NONE = 0, SCALE_BY_PARAM = 1 };

struct row_params {
    int64_t ncols;
    uint32_t n_head_log2;
    int64_t nrows;
    float scale;
    float bias;
};

// ggml's style: the shape and the scalars of an op in one struct, passed by value.
template <int block_size>
static __global__ void scaled_rows(const float * x, float * dst, const row_params p, const scale_mode mode) {
    const int64_t row = blockIdx.x;
    for (int64_t col = threadIdx.x; col < p.ncols; col += block_size) {
        const float s = mode == SCALE_BY_PARAM ? p.scale : 1.0f;
        dst[row * p.ncols + col] = x[row * p.ncols + col] * s + p.bias + (float) p.n_head_log2;
    }
}
"""

ROW_PARAMS = np.dtype([("ncols", np.int64), ("n_head_log2", np.uint32), ("nrows", np.int64), ("scale", np.float32),
                       ("bias", np.float32)], align=True)


def _row_params(ncols=48, n_head_log2=3, nrows=2, scale=0.5, bias=1.0, dtype=ROW_PARAMS):
    p = np.zeros((), dtype)
    p["ncols"], p["n_head_log2"], p["nrows"], p["scale"], p["bias"] = ncols, n_head_log2, nrows, scale, bias
    return p


@pytest.mark.parametrize("how", ["scalar", "array", "ctypes"])
def test_a_struct_passed_by_value_takes_a_structured_scalar_or_a_ctypes_structure(how):
    """The struct's 32 bytes (int64, uint32 and 4 bytes of padding, int64, two floats) as NumPy's
    aligned structured dtype lays them out, as a 0-d structured array, or as a ctypes.Structure;
    the enum as an int. dst = x * scale + bias + n_head_log2 on 2 rows of 48."""
    import ctypes

    class RowParams(ctypes.Structure):
        _fields_ = [("ncols", ctypes.c_int64), ("n_head_log2", ctypes.c_uint32), ("nrows", ctypes.c_int64),
                    ("scale", ctypes.c_float), ("bias", ctypes.c_float)]

    p = {"scalar": _row_params()[()], "array": _row_params(),
         "ctypes": RowParams(ncols=48, n_head_log2=3, nrows=2, scale=0.5, bias=1.0)}[how]
    x, dst = np.arange(96, dtype=np.float32), np.zeros(96, np.float32)
    trace(PARAMS_BY_VALUE, "scaled_rows<32>", 2, 32, [x, dst, p, 1])
    assert dst.tolist() == (np.arange(96) * 0.5 + 1.0 + 3).tolist()


def test_a_struct_of_another_layout_is_refused_naming_its_type_and_sizes():
    """Packed fields (no padding after n_head_log2: 28 bytes, not C's 32) are refused before the
    kernel runs, by the parameter's name and type; a dict (no C layout) names the struct type first."""
    packed = np.dtype([(name, ROW_PARAMS.fields[name][0]) for name in ROW_PARAMS.names])  # align=False
    args = [np.zeros(96, np.float32), np.zeros(96, np.float32)]
    with pytest.raises(TypeError, match=r"^args: p is const row_params, which takes 32 bytes \(its sizeof in C\+\+ "
                                        r"here\), got 28 in the fields ncols, n_head_log2, nrows, scale, bias"):
        trace(PARAMS_BY_VALUE, "scaled_rows<32>", 2, 32, [*args, _row_params(dtype=packed)[()], 1])
    with pytest.raises(TypeError, match=r"^args: p is row_params passed by value \(a struct, or an enum\), which takes "
                                        r"a NumPy structured scalar .* got dict: a dict's fields have no C layout"):
        trace(PARAMS_BY_VALUE, "scaled_rows<32>", 2, 32, [*args, {"ncols": 48}, 1])


def test_a_type_the_lab_cannot_pass_is_named_before_the_types_it_can():
    with pytest.raises(TypeError, match=r"^row_params \* is not a type the lab passes: it passes NumPy arrays"):
        trace("struct row_params { int n; };\n__global__ void k(row_params* p) { p->n = 1; }", "k", 1, 1,
              [np.zeros(1, np.int32)])


# 6. A header's compile error names the include chain; a header reached by two names is one header.

DEEP = r"""#pragma once
template <class T> __device__ T pack(T x) { return __not_an_intrinsic(x, 0x3210); }
"""
MIDDLE = '#pragma once\n#include "deep.cuh"\n'
USES_DEEP = r"""#include "middle.cuh"

__global__ void packed(int* x) {
    x[threadIdx.x] = pack(x[threadIdx.x]);
}

void launch(int* x) { packed<<<1, 32>>>(x); }
"""


def test_an_error_in_a_header_names_the_include_chain_and_the_kernel_line_that_reached_it(tmp_path):
    """The error is deep.cuh's, named at its own line, included from the source's line 1 through
    middle.cuh's line 2, and reached by the kernel's line 4 (the template's instantiation); the
    hint about host code is left out, the file's host code being no part of it."""
    (tmp_path / "deep.cuh").write_text(DEEP)
    (tmp_path / "middle.cuh").write_text(MIDDLE)
    with pytest.raises(LabError) as err:
        trace(USES_DEEP, "packed", 1, 32, [np.zeros(32, np.int32)], options=(f"-I{tmp_path}",))
    message = str(err.value)
    assert ("deep.cuh:2:70: error: ‘__not_an_intrinsic’ was not declared in this scope (included from kernel.cu:1 "
            "through middle.cuh:2; reached from kernel.cu:4:") in message
    assert "is host code" not in message


SHARED_COMMON = r"""#pragma once
struct pair_sum { float a, b; };
template <class K> void launch_on(K kernel, float* x) { kernel<<<1, 32>>>(x); }  // a launch: the lab rewrites it
"""
KERNELS_HEADER = '#pragma once\n#include "common.cuh"\n__device__ inline float twice(float v) { return 2.0f * v; }\n'
TWO_NAMES = r"""#include "ops/common.cuh"
#include "kernels.cuh"

__global__ void doubled(float* x) {
    pair_sum s{x[threadIdx.x], 0.0f};
    x[threadIdx.x] = twice(s.a + s.b);
}
"""


def test_a_header_reached_by_two_include_names_is_one_header(tmp_path):
    """src/ops/common.cuh is "ops/common.cuh" from -Isrc and "common.cuh" from -Isrc/ops (as
    ggml's files include it): its one rewritten copy, its #pragma once kept, so pair_sum is
    defined once."""
    (tmp_path / "ops").mkdir()
    (tmp_path / "ops" / "common.cuh").write_text(SHARED_COMMON)
    (tmp_path / "ops" / "kernels.cuh").write_text(KERNELS_HEADER)
    x = np.arange(32, dtype=np.float32)
    trace(TWO_NAMES, "doubled", 1, 32, [x], options=(f"-I{tmp_path}", f"-I{tmp_path / 'ops'}"))
    assert x.tolist() == (2 * np.arange(32)).tolist()


NOT_INLINED = r"""#pragma once
template <typename T> static __device__ __noinline__ T block_sum(T v, T* shared_vals) {
    shared_vals[threadIdx.x] = v;
    __syncthreads();
    T s = 0;
    for (int i = 0; i < 32; ++i) s += shared_vals[i];
    return s;
}
"""


def test_an_access_in_a_headers_function_the_compiler_did_not_inline_is_named_at_the_headers_line(tmp_path):
    """ggml's block_reduce (common.cuh) style: the shared loads and stores are in no line of the
    source, and are named at the header's lines, not at "line 0"."""
    (tmp_path / "reduce.cuh").write_text(NOT_INLINED)
    source = ('#include "reduce.cuh"\n__global__ void total(const float* x, float* out) {\n'
              '    __shared__ float vals[32];\n    out[threadIdx.x] = block_sum(x[threadIdx.x], vals);\n}\n')
    x, out = np.arange(32, dtype=np.float32), np.zeros(32, np.float32)
    t = trace(source, "total", 1, 32, [x, out], options=(f"-I{tmp_path}",))
    assert out.tolist() == [float(np.arange(32).sum())] * 32
    shared = sorted((s.where, s.write) for s in t.sites if s.space == "shared")
    assert shared == [("reduce.cuh:3", True), ("reduce.cuh:6", False)]
    assert "  reduce.cuh:3:" in t.report(gpus=["H100-SXM"]) and "line 0" not in t.report(gpus=["H100-SXM"])


SFINAE_KERNELS = r"""
#include <type_traits>
// vLLM's layernorm style: two kernels of one name told apart by their return types (SFINAE).
template <typename T, int width>
__global__ std::enable_if_t<(width > 0) && std::is_same_v<T, float>> scaled(T* x, const int n) {
  for (int i = threadIdx.x * width; i < n; i += blockDim.x * width)
    for (int j = 0; j < width; ++j) x[i + j] *= 2.0f;
}
template <typename T, int width>
__global__ std::enable_if_t<(width == 0) || !std::is_same_v<T, float>> scaled(T* x, const int n) {
  for (int i = threadIdx.x; i < n; i += blockDim.x) x[i] *= 3.0f;
}
"""


@pytest.mark.parametrize("width, factor", [(4, 2.0), (0, 3.0)])
def test_a_kernel_whose_return_type_is_a_template_is_found_and_its_overload_chosen(width, factor):
    x = np.ones(256, np.float32)
    trace(SFINAE_KERNELS, f"scaled<float, {width}>", 1, 32, [x, 256])
    assert x.tolist() == [factor] * 256


def test_a_shuffle_without_a_mask_is_named_as_cuda_8s_with_its_sync_form():
    """Professional CUDA C's reduceIntegerShfl.cu (2014) calls __shfl_xor(v, lane), which CUDA 9
    replaced: refused as nvcc refuses it for sm_70 and newer, with the form to write."""
    source = "__global__ void k(int* x) { x[threadIdx.x] += __shfl_xor(x[threadIdx.x], 1); }"
    with pytest.raises(LabError, match=r"__shfl_xor: the warp functions without a mask, which CUDA 9 replaced with "
                                       r"their _sync forms .* write __shfl_xor_sync\(0xffffffff, v, lane_mask\)"):
        trace(source, "k", 1, 32, [np.zeros(32, np.int32)])


WARP_STEPS = r"""#pragma once
static __device__ __noinline__ void fold(volatile float* v, unsigned t) {
    v[t] += v[t + 16];
    v[t] += v[t + 8];
}
"""


def test_a_race_in_a_headers_function_the_compiler_did_not_inline_is_named_at_the_headers_lines(tmp_path):
    """Two warp-synchronous steps in a header's __noinline__ device function (ggml's common.cuh
    style), no __syncwarp() between them: the race is named at the header's lines, never
    "line 0"."""
    (tmp_path / "warp.cuh").write_text(WARP_STEPS)
    source = '#include "warp.cuh"\n__global__ void k(float* x) {\n    fold(x, threadIdx.x);\n}\n'
    t = trace(source, "k", 1, 16, [np.ones(64, np.float32)], options=(f"-I{tmp_path}",))
    race = next(r for r in t.races if r.hazard == "write-after-read")
    assert race.space == "global" and race.places == ("warp.cuh:4", "warp.cuh:3")
    assert race.message.startswith("write-after-read race on global memory: thread (0, 0, 0) reads at warp.cuh:4 (")
    assert "Missing: a __syncwarp() between warp.cuh:4 and warp.cuh:3" in race.message
    assert "line 0" not in race.message and "line 0" not in t.report(gpus=["H100-SXM"])


DEVICE_VARIABLES = r"""
__device__ float table[64];
__device__ int hits;
__global__ void fill(float* out) {
    table[threadIdx.x] = 2.0f * threadIdx.x;
    atomicAdd(&hits, 1);
    out[threadIdx.x] = table[threadIdx.x] + 1.0f;
}
"""


def test_device_variables_are_global_memory_not_shared():
    """A __device__ array and counter are global memory: their accesses are charged sectors, not
    wavefronts, and reach HBM (table 8 sectors, hits 1, out 8), while shared memory moves nothing."""
    out = np.zeros(64, np.float32)
    t = trace(DEVICE_VARIABLES, "fill", 1, 64, [out])
    assert out.tolist() == (2.0 * np.arange(64) + 1).tolist()
    by = {(s.line, s.write, s.space): (s.sectors, s.wavefronts) for s in t.sites}
    line = lambda text: _line(DEVICE_VARIABLES, text)
    assert by == {(line("table[threadIdx.x] = 2.0f"), True, "global"): (8, 0),
                  (line("atomicAdd(&hits"), True, "global"): (2, 0),  # one sector a warp's instruction, two warps
                  (line("out[threadIdx.x] ="), False, "global"): (8, 0),
                  (line("out[threadIdx.x] ="), True, "global"): (8, 0)}
    assert t.bytes["smem"] == 0 and t.bytes["hbm"] == (8 + 1 + 8) * 32 and not t.races
