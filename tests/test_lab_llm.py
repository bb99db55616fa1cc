"""The kernel lab on the kernels of today's language models, as their authors write them (our own
kernels in the styles of llm.c, vLLM and llama.cpp; issue 52): bf16 and fp8 with the CUDA
headers' conversions, arrays from NumPy through ml_dtypes; a file's own header through "-I" and a
precision chosen with "-D"; typedef'd parameter types; NULL pointers and default arguments; a
function template argument; a file with its host code and main(), traced by kernel name. Each
asserts the result against NumPy and the counts derived by hand."""

import ml_dtypes
import numpy as np
import pytest

from gpumodel.lab import LabError, trace

BF16, E4M3, E5M2 = ml_dtypes.bfloat16, ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2

PACKED = r"""
#include <cuda_bf16.h>
// 8 bf16 in one 128-bit load, as llm.c's Packed128 packs them
struct alignas(16) Pack8 {
    __nv_bfloat16 v[8];
};
__global__ void residual(__nv_bfloat16* out, const __nv_bfloat16* a, const __nv_bfloat16* b, int n) {
    int i = (blockIdx.x * blockDim.x + threadIdx.x) * 8;
    if (i >= n) return;
    Pack8 x = *reinterpret_cast<const Pack8*>(a + i);
    Pack8 y = *reinterpret_cast<const Pack8*>(b + i);
    Pack8 r;
    for (int k = 0; k < 8; k++) r.v[k] = __float2bfloat16((float)x.v[k] + (float)y.v[k]);
    *reinterpret_cast<Pack8*>(out + i) = r;
}
"""


def test_bf16_packed_eight_to_a_128_bit_load_adds_as_float_and_rounds_to_nearest_even():
    n = 2048
    rng = np.random.default_rng(1)
    a, b = (rng.standard_normal(n).astype(BF16) for _ in range(2))
    out = np.zeros(n, BF16)
    t = trace(PACKED, "residual", 2, 128, [out, a, b, n])
    want = (a.astype(np.float32) + b.astype(np.float32)).astype(BF16)  # float's sum, rounded once to bf16
    np.testing.assert_array_equal(out.view(np.uint16), want.view(np.uint16))
    # 256 threads each load 16 B of a and of b: 8 warps x 2 loads, each warp 512 B = 16 sectors.
    loads = t.counts()["global loads"]
    assert (loads["requests"], loads["sectors"], loads["ideal"]) == (16, 256, 256)
    assert {s.size for s in t.sites if s.space == "global"} == {16}


FP8 = r"""
#include <cuda_fp8.h>
__global__ void round_trip(const float* x, float* e4m3, float* e5m2, unsigned char* bits, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    __nv_fp8_e4m3 a(x[i]);
    __nv_fp8_e5m2 b(x[i]);
    e4m3[i] = (float)a;
    e5m2[i] = (float)b;
    bits[i] = a.__x;
}
"""


def test_fp8_rounds_to_nearest_even_as_ml_dtypes_and_saturates_as_cudas_constructors():
    rng = np.random.default_rng(2)
    x = np.concatenate([rng.standard_normal(200) * 30, [0.0, -0.0, 2.0**-9, 2.0**-10, 17.0, 448.0, 1e-9]]).astype(np.float32)
    n = x.size
    e4, e5, bits = np.zeros(n, np.float32), np.zeros(n, np.float32), np.zeros(n, np.uint8)
    trace(FP8, "round_trip", 1, 256, [x, e4, e5, bits, n])
    np.testing.assert_array_equal(e4, x.astype(E4M3).astype(np.float32))  # all within e4m3's range
    np.testing.assert_array_equal(e5, x.astype(E5M2).astype(np.float32))
    np.testing.assert_array_equal(bits, x.astype(E4M3).view(np.uint8))
    big = np.array([500.0, -1e6, 57344.0, 1e9], np.float32)  # past the largest: __NV_SATFINITE
    e4, e5, bits = np.zeros(4, np.float32), np.zeros(4, np.float32), np.zeros(4, np.uint8)
    trace(FP8, "round_trip", 1, 32, [big, e4, e5, bits, 4])
    assert e4.tolist() == [448.0, -448.0, 448.0, 448.0] and e5.tolist() == [512.0, -57344.0, 57344.0, 57344.0]


def test_fp8_arrays_pass_as_ml_dtypes_arrays_and_a_float_array_is_refused_by_name():
    source = ("#include <cuda_fp8.h>\n__global__ void up(const __nv_fp8_e4m3* q, float* y) "
              "{ y[threadIdx.x] = (float)q[threadIdx.x] * 2.0f; }\n")
    q = np.linspace(-4, 4, 32).astype(E4M3)
    y = np.zeros(32, np.float32)
    t = trace(source, "up", 1, 32, [q, y])
    np.testing.assert_array_equal(y, q.astype(np.float32) * 2)
    (load,) = [s for s in t.sites if not s.write]
    assert (load.size, load.sectors) == (1, 1)  # 32 bytes: one sector
    with pytest.raises(TypeError, match=r"args: q \(const __nv_fp8_e4m3 \*\) must be a C-contiguous NumPy array of "
                                        r"float8_e4m3fn, got ndarray of float32"):
        trace(source, "up", 1, 32, [np.zeros(32, np.float32), y])


HEADER = r"""
#pragma once
#if defined(ENABLE_BF16)
#include <cuda_bf16.h>
typedef __nv_bfloat16 floatX;
#else
typedef float floatX;
#endif
__device__ inline float to_float(floatX v) { return (float)v; }
"""

SCALE = r"""
#include "precision.h"
__global__ void scale(floatX* out, const floatX* inp, float s, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = (floatX)(to_float(inp[i]) * s);
}
"""


@pytest.mark.parametrize("options, dtype", [((), np.float32), (("-DENABLE_BF16",), BF16)])
def test_a_files_own_header_and_a_precision_chosen_by_a_define_set_the_parameter_types(tmp_path, options, dtype):
    (tmp_path / "precision.h").write_text(HEADER)
    x = np.linspace(-1, 1, 64).astype(dtype)
    out = np.zeros_like(x)
    t = trace(SCALE, "scale", 2, 32, [out, x, 3.0, 64], options=(f"-I{tmp_path}", *options))
    np.testing.assert_array_equal(out, (x.astype(np.float32) * 3).astype(dtype))
    assert t.counts()["global loads"]["sectors"] == 64 * np.dtype(dtype).itemsize // 32


def test_without_its_include_folder_the_header_is_named_as_missing():
    with pytest.raises(LabError, match="precision.h is not a header the lab has"):
        trace(SCALE, "scale", 1, 32, [np.zeros(32, np.float32), np.zeros(32, np.float32), 1.0, 32])


@pytest.mark.parametrize("options, words", [
    ("-I.", "options must be a tuple of compiler options"),
    (("-O3",), r"options may hold \"-I<folder>\" and \"-D<name>\[=value\]\".*got '-O3'"),
    (("-I/no/such/folder",), r"options: '-I/no/such/folder' names no folder"),
    (("-D1X",), "options may hold"),
    ((5,), "options may hold"),
])
def test_options_are_refused_by_name(options, words):
    with pytest.raises((TypeError, ValueError), match=words):
        trace(SCALE, "scale", 1, 32, [np.zeros(32, np.float32)] * 2 + [1.0, 32], options=options)


RMS_NORM = r"""
// llama.cpp's style: an optional weight (NULL: none) and an epsilon with a default
__global__ void rms_norm(const float* x, float* dst, const int ncols, const float* mul = NULL, const float eps = 1e-6f) {
    const int row = blockIdx.x;
    float sum = 0.0f;
    for (int col = threadIdx.x; col < ncols; col += blockDim.x) sum += x[row * ncols + col] * x[row * ncols + col];
    for (int offset = 16; offset > 0; offset >>= 1) sum += __shfl_xor_sync(0xffffffff, sum, offset, 32);
    const float scale = rsqrtf(sum / ncols + eps);
    for (int col = threadIdx.x; col < ncols; col += blockDim.x)
        dst[row * ncols + col] = scale * x[row * ncols + col] * (mul ? mul[col] : 1.0f);
}
"""


def test_a_null_pointer_and_default_arguments_are_applied_as_cpp_applies_them():
    x = np.random.default_rng(3).standard_normal((4, 96)).astype(np.float32)
    rms = np.sqrt((x.astype(np.float64) ** 2).mean(1, keepdims=True) + 1e-6)
    plain, weighted, explicit = (np.zeros_like(x) for _ in range(3))
    t = trace(RMS_NORM, "rms_norm", 4, 32, [x, plain, 96])  # mul = NULL, eps = 1e-6f
    np.testing.assert_allclose(plain, x / rms, rtol=2e-6)
    w = np.linspace(0.5, 1.5, 96).astype(np.float32)
    tw = trace(RMS_NORM, "rms_norm", 4, 32, [x, weighted, 96, w])
    np.testing.assert_allclose(weighted, x / rms * w, rtol=2e-6)
    trace(RMS_NORM, "rms_norm", 4, 32, [x, explicit, 96, None, 0.25])
    np.testing.assert_allclose(explicit, x / np.sqrt((x.astype(np.float64) ** 2).mean(1, keepdims=True) + 0.25), rtol=2e-6)
    # line 10 loads x only where mul is NULL; x and mul[col] where it is given (4 rows x 3 passes each)
    assert [s.instructions for s in t.sites if s.line == 10 and not s.write] == [12]
    assert [s.instructions for s in tw.sites if s.line == 10 and not s.write] == [12, 12]
    with pytest.raises(ValueError, match=r"args must hold one value per parameter \(x, dst, ncols, mul, eps\) "
                                         r"\(the last 2 have defaults\), got 2"):
        trace(RMS_NORM, "rms_norm", 4, 32, [x, plain])


def test_a_default_the_lab_cannot_evaluate_is_named():
    source = "template <typename T> __global__ void k(T* y, T f = T(2)) { y[threadIdx.x] = f; }\n"
    with pytest.raises(ValueError, match=r"args: f \(float\) has the default T\(2\), which the lab does not evaluate"):
        trace(source, "k<float>", 1, 32, [np.zeros(32, np.float32)])


ACTIVATION = r"""
template <typename T> __device__ __forceinline__ T half_of(const T& x) { return x * (T)0.5; }
template <typename scalar_t, scalar_t (*ACT_FN)(const scalar_t&)>
__global__ void activation_kernel(scalar_t* __restrict__ out, const scalar_t* __restrict__ input, const int d) {
    const int64_t token = blockIdx.x;
    for (int64_t i = threadIdx.x; i < d; i += blockDim.x) out[token * d + i] = ACT_FN(input[token * d + i]);
}
"""


def test_a_function_template_argument_binds_to_its_own_parameter():
    x = np.arange(128, dtype=np.float32)
    out = np.zeros_like(x)
    trace(ACTIVATION, "activation_kernel<float, half_of<float>>", 2, 32, [out, x, 64])
    np.testing.assert_array_equal(out, x / 2)


PARTIAL_SCAN = r"""
// cuda-samples' shfl_scan style: only the first 8 lanes shuffle (mask 0xff, width 8) while the
// others go on to the barrier, which is legal CUDA
__global__ void scan8(int* out) {
    __shared__ int s[64];
    int v = threadIdx.x;
    if (threadIdx.x < 8) {
        for (int d = 1; d < 8; d *= 2) {
            int n = __shfl_up_sync(0xff, v, d, 8);
            if (threadIdx.x >= d) v += n;
        }
    }
    s[threadIdx.x] = v;
    __syncthreads();
    out[threadIdx.x] = s[63 - threadIdx.x];
}
"""


def test_a_partial_mask_shuffle_beside_a_barrier_is_no_deadlock():
    out = np.zeros(64, np.int32)
    trace(PARTIAL_SCAN, "scan8", 1, 64, [out])
    want = np.arange(64)
    want[:8] = np.cumsum(np.arange(8))  # an inclusive scan of 0..7
    np.testing.assert_array_equal(out, want[::-1])


def test_lanes_that_returned_do_not_hold_back_a_later_shuffle_of_the_others():
    source = r"""__global__ void half_warp(float* y) {
    if (threadIdx.x >= 16) return;
    float v = threadIdx.x;
    for (int o = 8; o > 0; o /= 2) v += __shfl_xor_sync(0xffff, v, o);
    y[threadIdx.x] = v;
}"""
    y = np.zeros(32, np.float32)
    trace(source, "half_warp", 1, 32, [y])
    assert y[:16].tolist() == [120.0] * 16 and not y[16:].any()


def test_a_full_mask_shuffle_half_the_warp_never_reaches_is_still_a_deadlock():
    source = r"""__global__ void bad(float* y) {
    float v = threadIdx.x;
    if (threadIdx.x < 16) v = __shfl_xor_sync(0xffffffff, v, 1);
    __syncthreads();
    y[threadIdx.x] = v;
}"""
    with pytest.raises(LabError, match="never finishes"):
        trace(source, "bad", 1, 32, [np.zeros(32, np.float32)])


CUB_RMS_NORM = r"""
#include <cub/cub.cuh>
// vLLM's style: CUB's BlockReduce sized for 1024 threads, launched with fewer
template <typename scalar_t>
__global__ void rms_norm_kernel(scalar_t* __restrict__ out, const scalar_t* __restrict__ input,
                                const scalar_t* __restrict__ weight, const float epsilon, const int hidden_size) {
    __shared__ float s_variance;
    float variance = 0.0f;
    for (int idx = threadIdx.x; idx < hidden_size; idx += blockDim.x) {
        const float x = (float)input[blockIdx.x * hidden_size + idx];
        variance += x * x;
    }
    using BlockReduce = cub::BlockReduce<float, 1024>;
    __shared__ typename BlockReduce::TempStorage reduceStore;
    variance = BlockReduce(reduceStore).Reduce(variance, cub::Sum{}, blockDim.x);
    if (threadIdx.x == 0) s_variance = rsqrtf(variance / hidden_size + epsilon);
    __syncthreads();
    for (int idx = threadIdx.x; idx < hidden_size; idx += blockDim.x)
        out[blockIdx.x * hidden_size + idx] = (scalar_t)((float)input[blockIdx.x * hidden_size + idx] * s_variance) * weight[idx];
}
"""


@pytest.mark.parametrize("threads", [96, 256])
def test_cubs_block_reduce_sized_for_1024_threads_reduces_a_smaller_block_without_a_race(threads):
    x = np.random.default_rng(4).standard_normal((3, 200)).astype(np.float32)
    w = np.linspace(0.5, 1.5, 200).astype(np.float32)
    out = np.zeros_like(x)
    t = trace(CUB_RMS_NORM, "rms_norm_kernel<float>", 3, threads, [out, x, w, 1e-6, 200])
    np.testing.assert_allclose(out, x / np.sqrt((x.astype(np.float64) ** 2).mean(1, keepdims=True) + 1e-6) * w, rtol=1e-5)
    assert t.races == []
    # the warp totals pass through shared memory: each warp's lane 0 writes one, thread 0 reads the others
    stores = t.counts()["shared stores"]["requests"] / 3
    assert stores == -(-threads // 32) + 1  # + s_variance


CUB_SCAN = r"""
#include <cub/block/block_scan.cuh>
#include <cub/block/block_load.cuh>
#include <cub/block/block_store.cuh>
#include <cub/warp/warp_reduce.cuh>
__global__ void scan(int* data, int* inclusive, int* exclusive, int* total, int* halves) {
    using Load = cub::BlockLoad<int, 128, 4, cub::BLOCK_LOAD_WARP_TRANSPOSE>;
    using Store = cub::BlockStore<int, 128, 4, cub::BLOCK_STORE_WARP_TRANSPOSE>;
    using Scan = cub::BlockScan<int, 128>;
    using Half = cub::WarpReduce<int, 16>;
    __shared__ union { typename Load::TempStorage load; typename Store::TempStorage store; typename Scan::TempStorage scan; } tmp;
    __shared__ typename Half::TempStorage half_storage[8];
    int items[4];
    Load(tmp.load).Load(data, items);
    __syncthreads();
    const int sum = items[0] + items[1] + items[2] + items[3];
    int inc, exc, all;
    Scan(tmp.scan).InclusiveSum(sum, inc, all);
    Scan(tmp.scan).ExclusiveSum(sum, exc);
    inclusive[threadIdx.x] = inc;
    exclusive[threadIdx.x] = exc;
    if (threadIdx.x == 0) total[0] = all;
    const int h = Half(half_storage[threadIdx.x / 16]).Sum(threadIdx.x);
    if (threadIdx.x % 16 == 0) halves[threadIdx.x / 16] = h;
    __syncthreads();
    for (int k = 0; k < 4; ++k) items[k] *= 2;
    Store(tmp.store).Store(data, items);
}
"""


def test_cubs_block_scan_load_store_and_warp_reduce_give_cubs_results_with_coalesced_loads():
    data = np.arange(512, dtype=np.int32)
    original = data.copy()
    inclusive, exclusive, total, halves = (np.zeros(n, np.int32) for n in (128, 128, 1, 8))
    t = trace(CUB_SCAN, "scan", 1, 128, [data, inclusive, exclusive, total, halves])
    sums = original.reshape(128, 4).sum(1)  # thread r holds items 4r .. 4r + 3 (blocked)
    np.testing.assert_array_equal(inclusive, np.cumsum(sums))
    np.testing.assert_array_equal(exclusive, np.cumsum(sums) - sums)
    assert total[0] == sums.sum() and halves.tolist() == np.arange(128).reshape(8, 16).sum(1).tolist()
    np.testing.assert_array_equal(data, 2 * original)
    # warp-transposed: 4 warps x 4 striped loads, each warp's 32 ints one 128-byte line (4 sectors)
    loads = t.counts()["global loads"]
    assert (loads["requests"], loads["sectors"], loads["ideal"]) == (16, 64, 64) and t.races == []


def test_a_crash_names_the_line_the_thread_and_the_address():
    """leimao's gemm_v06 wrote past a local array (a real upstream bug the lab once reported as a
    bare SIGSEGV); here a local array indexed far past its end, and a NULL pointer read."""
    local = r"""__global__ void k(float* y, int n) {
    float tile[4];
    for (int i = 0; i < n; i++) tile[i * 100000] = i;
    y[threadIdx.x] = tile[1];
}"""
    with pytest.raises(LabError, match=r"k crashed \(SIGSEGV\) at line 3, column \d+ \(`for \(int i = 0; i < n; i\+\+\) "
                                       r"tile\[i \* 100000\] = i;`\): thread \(0, 0, 0\) of block \(0, 0, 0\) touched "
                                       r"address 0x[0-9a-f]+, .*an index past the end of a local array"):
        trace(local, "k", 1, 32, [np.zeros(32, np.float32), 4])
    null = "__global__ void k(float* y, const float* p) {\n    y[threadIdx.x] = p[threadIdx.x];\n}\n"
    with pytest.raises(LabError, match=r"at line 2, column \d+ .*touched address 0x0, .*set to NULL"):
        trace(null, "k", 1, 32, [np.zeros(32, np.float32), None])


WHOLE_FILE = r"""
#include <cuda_runtime.h>
#include <cooperative_groups.h>
namespace cg = cooperative_groups;
// cuda-samples' helper_cuda.h style: error checks defined only where CUDA's runtime header was seen
#ifdef __CUDA_RUNTIME_H__
#define checkCudaErrors(call) check((call), #call)
inline void check(cudaError_t e, const char* what) { if (e != cudaSuccess) printf("%s: %s\n", what, cudaGetErrorName(e)); }
#endif
#ifdef ENABLE_CUDNN
__global__ void needs_cudnn(float* x) { cudnn_only(x); }  // left out by the preprocessor: never dispatched
#endif
struct Quad { unsigned a, b, c, d; };
__global__ void rotate(unsigned* out, int n) {
    cg::thread_block_tile<8> tile = cg::tiled_partition<8>(cg::this_thread_block());
    Quad q{threadIdx.x, 2 * threadIdx.x, 3 * threadIdx.x, 4u * (unsigned)__dp4a(0x01010101, 0x02020202, 0)};
    Quad r = tile.shfl(q, (tile.thread_rank() + 1) % 8);  // a 16-byte struct, a word at a time
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = r.a + r.b + r.c + r.d;
}
// llm.c's style: a host launcher with the kernel's own name (legal overloading)
void rotate(unsigned* out, int n, int block) {
    rotate<<<(n + block - 1) / block, block>>>(out, n);
    checkCudaErrors(cudaGetLastError());
}
int main() {
    unsigned* d;
    checkCudaErrors(cudaMalloc(&d, 64 * sizeof(unsigned)));
    rotate(d, 64, 32);
}
"""


def test_a_whole_file_with_guarded_helpers_an_overloaded_launcher_and_a_disabled_kernel_traces_its_kernel():
    out = np.zeros(64, np.uint32)
    trace(WHOLE_FILE, "rotate", 2, 32, [out, 64])
    lane = np.arange(64) % 32
    source_lane = lane // 8 * 8 + (lane % 8 + 1) % 8
    np.testing.assert_array_equal(out, 6 * source_lane + 4 * 8)  # a + b + c = 6 lane; __dp4a: 4 x (1 x 2) = 8


@pytest.mark.slow  # builds a precompiled header of its own (about 7 s)
def test_the_first_trace_of_an_installed_version_says_it_is_preparing_the_lab(tmp_path, monkeypatch, capsys):
    from gpumodel.lab import builder

    monkeypatch.setenv("GPUMODEL_CACHE", str(tmp_path / "fresh"))  # a cache no trace has filled
    source = "__global__ void k(float* y) { y[threadIdx.x] = 1.0f; }\n"
    trace(source, "k", 1, 32, [np.zeros(32, np.float32)])
    assert builder.PREPARING in capsys.readouterr().out
    trace(source, "k", 1, 32, [np.zeros(32, np.float32)])
    assert builder.PREPARING not in capsys.readouterr().out  # built once


@pytest.mark.slow  # builds the runtimes and a precompiled header of its own (about 15 s)
def test_a_prepared_lab_compiles_only_the_kernel_and_one_preparing_in_the_background_is_waited_for(tmp_path, monkeypatch,
                                                                                                    capsys):
    """gm.lab.prepare (make's `python -m gpumodel.lab`): once it has run, a first trace compiles the
    kernel and links it, nothing else (0.9 s where it took 12 s, 30 s on a busy machine); started in
    the background, a trace that comes first waits for each part and builds none twice."""
    import gpumodel as gm
    from gpumodel.lab import builder

    ran = []
    gxx = builder.gxx
    monkeypatch.setattr(builder, "gxx", lambda args, what: (ran.append(what), gxx(args, what))[1])
    source = "__global__ void k(float* y) { y[threadIdx.x] = 2.0f; }\n"
    monkeypatch.setenv("GPUMODEL_CACHE", str(tmp_path / "background"))
    assert gm.lab.prepare(wait=False) == list(builder.PREPARED)
    assert "Preparing the kernel lab in the background" in capsys.readouterr().out
    y = np.zeros(32, np.float32)
    trace(source, "k", 1, 32, [y])
    np.testing.assert_array_equal(y, 2)
    assert gm.lab.prepare() in ([], ["program_runtime"])  # waits for what is still building (a trace needs no program's)
    assert gm.lab.prepare() == []
    assert sorted(ran) == sorted(["the lab's runtime", "the lab's runtime", "the lab's header", "the kernel",
                                  "the traced kernel"]), ran  # each part once
    ran.clear()
    monkeypatch.setenv("GPUMODEL_CACHE", str(tmp_path / "prepared"))
    assert gm.lab.prepare() == list(builder.PREPARED)
    ran.clear()
    capsys.readouterr()
    trace(source.replace("2.0f", "3.0f"), "k", 1, 32, [y])
    assert ran == ["the kernel", "the traced kernel"] and builder.PREPARING not in capsys.readouterr().out
    with pytest.raises(TypeError, match="wait must be True or False"):
        gm.lab.prepare(wait="no")


def test_an_access_in_a_helper_names_the_helpers_line_and_each_call_site():
    """llm.c's ld_vec style: three loads through one helper are three sites, told apart by the
    line that called the helper (once reported as one site at the helper's line)."""
    source = r"""
__device__ inline float4 ld_vec(const float* p) { return *reinterpret_cast<const float4*>(p); }
__global__ void add3(float* out, const float* a, const float* b, const float* c) {
    int i = (blockIdx.x * blockDim.x + threadIdx.x) * 4;
    float4 x = ld_vec(a + i);
    float4 y = ld_vec(b + i);
    float4 z = ld_vec(c + i);
    out[i] = x.x + y.x + z.x;
}
"""
    ones = np.ones(512, np.float32)
    t = trace(source, "add3", 1, 128, [np.zeros(512, np.float32), ones, ones, ones])
    loads = sorted((s.line, s.called_at, s.instructions, s.sectors) for s in t.sites if not s.write)
    assert loads == [(2, 5, 4, 64), (2, 6, 4, 64), (2, 7, 4, 64)]  # 4 warps x 512 B each: 16 sectors a request
    assert "line 2, column" in t.report(gpus=["H100-SXM"]) and "(called at line 6)" in t.report(gpus=["H100-SXM"])


def test_a_barrier_missing_at_the_end_of_a_loop_body_is_named_there():
    source = r"""__global__ void tiles(const float* a, float* out, int n) {
    __shared__ float tile[64];
    float acc = 0.0f;
    for (int t = 0; t < n; t += 64) {
        tile[threadIdx.x] = a[t + threadIdx.x];
        __syncthreads();
        acc += tile[(threadIdx.x + 1) % 64];
    }
    out[threadIdx.x] = acc;
}"""
    t = trace(source, "tiles", 1, 64, [np.arange(256, dtype=np.float32), np.zeros(64, np.float32), 256])
    assert t.races and all("Missing: a __syncthreads() after line 7, at the end of the loop's body" in r.message
                           for r in t.races)


def test_a_cascade_of_compiler_errors_shows_the_first_five_and_counts_the_rest():
    source = "__global__ void k(float* y) {\n" + "".join(f"    undefined_{i}();\n" for i in range(12)) + "}\n"
    with pytest.raises(LabError) as err:
        trace(source, "k", 1, 32, [np.zeros(32, np.float32)])
    text = str(err.value)
    assert text.count("error:") == 5 and "kernel.cu:2:5: error: 'undefined_0' was not declared" in text.replace("‘", "'").replace("’", "'")
    assert "... and 7 more errors: the first often causes others" in text


MULTI_WARP = r"""
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
namespace cg = cooperative_groups;
// cuda-samples' reduction style: CUDA 12's multi-warp tiles of 64 threads with their scratch
template <int BLOCK, int TILE>
__global__ void tile_sums(const int* in, int* out) {
    __shared__ cg::block_tile_memory<BLOCK> scratch;
    cg::thread_block cta = cg::this_thread_block(scratch);
    auto tile = cg::tiled_partition<TILE>(cta);
    const int v = cg::reduce(tile, in[blockIdx.x * BLOCK + threadIdx.x], cg::plus<int>());
    if (tile.thread_rank() == 0) out[blockIdx.x * (BLOCK / TILE) + tile.meta_group_rank()] = v;
}
"""


@pytest.mark.parametrize("tile", [16, 64, 256])
def test_a_multi_warp_tile_reduces_across_its_warps(tile):
    data = np.arange(512, dtype=np.int32)
    out = np.zeros(512 // tile, np.int32)
    t = trace(MULTI_WARP, f"tile_sums<256, {tile}>", 2, 256, [data, out])
    np.testing.assert_array_equal(out, data.reshape(-1, tile).sum(1))
    assert t.races == []


def test_libcuxx_functional_objects_work_with_cub_as_vllm_writes_them():
    """vLLM's layernorm style: `cuda::std::plus<>` from <cuda/std/functional> as BlockReduce's operator."""
    source = CUB_RMS_NORM.replace("#include <cub/cub.cuh>", "#include <cub/cub.cuh>\n#include <cuda/std/functional>").replace(
        "cub::Sum{}", "cuda::std::plus<>{}")
    x = np.random.default_rng(5).standard_normal((2, 96)).astype(np.float32)
    w = np.ones(96, np.float32)
    out = np.zeros_like(x)
    trace(source, "rms_norm_kernel<float>", 2, 64, [out, x, w, 1e-6, 96])
    np.testing.assert_allclose(out, x / np.sqrt((x.astype(np.float64) ** 2).mean(1, keepdims=True) + 1e-6), rtol=1e-5)


COALESCED = r"""
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
namespace cg = cooperative_groups;
// cuda-samples' warpAggregatedAtomicsCG style: one atomic per group of lanes that come together
__device__ int aggregated_increment(int* counter, int* groups) {
    cg::coalesced_group active = cg::coalesced_threads();
    int first = 0;
    if (active.thread_rank() == 0) {
        first = atomicAdd(counter, active.size());
        atomicAdd(groups, 1);
    }
    return active.shfl(first, 0) + active.thread_rank();
}
__global__ void keep_positive(const int* src, int* dst, int* counter, int* groups, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n && src[i] > 0) dst[aggregated_increment(counter, groups)] = src[i];
}
// binaryPartitionCG's style: a warp split by parity, each part summed by cg::reduce
__global__ void parity_sums(const int* v, int* sums, int* parts, int n) {
    auto warp = cg::tiled_partition<32>(cg::this_thread_block());
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int x = i < n ? v[i] : 0;
    auto part = cg::binary_partition(warp, x & 1);
    int s = cg::reduce(part, x, cg::plus<int>());
    if (part.thread_rank() == 0) {
        atomicAdd(&sums[x & 1], s);
        atomicAdd(&parts[x & 1], 1);
    }
}
// labeled_partition: the lanes with one label count themselves once
__global__ void bucket_counts(const int* v, int* counts, unsigned* ballots, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        cg::coalesced_group active = cg::coalesced_threads();
        auto same = cg::labeled_partition(active, v[i] & 3);
        if (same.thread_rank() == 0) atomicAdd(&counts[v[i] & 3], same.size());
        const unsigned even = active.ballot(v[i] % 2 == 0);
        if (active.thread_rank() == 0) ballots[i / 32] = even;
    }
}
"""


def test_coalesced_groups_gather_the_lanes_that_come_together_as_warp_aggregated_atomics_need():
    """coalesced_threads() groups the lanes of a warp that reach it in step (one group per warp,
    so one atomic per warp), binary_partition and labeled_partition split a group by a vote or a
    label, and cg::reduce sums a part; each result against NumPy."""
    rng = np.random.default_rng(3)
    src = rng.integers(-5, 6, 200).astype(np.int32)
    dst, counter, groups = np.zeros(200, np.int32), np.zeros(1, np.int32), np.zeros(1, np.int32)
    trace(COALESCED, "keep_positive", 2, 128, [src, dst, counter, groups, 200])
    kept = src[src > 0]
    assert counter[0] == len(kept) and sorted(dst[:len(kept)]) == sorted(kept)
    warps_with_any = sum(bool((src[w * 32:w * 32 + 32] > 0).any()) for w in range(7))
    assert groups[0] == warps_with_any  # every lane of a warp that passes the test comes in step
    sums, parts = np.zeros(2, np.int32), np.zeros(2, np.int32)
    trace(COALESCED, "parity_sums", 2, 128, [src, sums, parts, 200])
    padded = np.concatenate([src, np.zeros(56, np.int32)])
    assert list(sums) == [padded[padded % 2 == 0].sum(), padded[padded % 2 == 1].sum()]
    warps = padded.reshape(8, 32) % 2
    assert list(parts) == [int((warps == 0).any(1).sum()), int((warps == 1).any(1).sum())]
    counts, ballots = np.zeros(4, np.int32), np.zeros(7, np.uint32)
    trace(COALESCED, "bucket_counts", 2, 128, [src, counts, ballots, 200])
    assert list(counts) == [int(((src & 3) == b).sum()) for b in range(4)]
    expected = [sum(1 << lane for lane, x in enumerate(src[w * 32:w * 32 + 32]) if x % 2 == 0) for w in range(7)]
    assert list(ballots) == expected
