"""The kernel lab takes device code as CuPy's RawModule takes it: kernels of our own written in
the styles of public sources (a templated tile GEMM named by a name expression, a kernel file
with CUDA's includes and `__launch_bounds__((BM * BN) / (TM * TN), 1)`, a cooperative-groups
reduction in dynamic shared memory, atomics, integer and 64-bit shuffles, votes), each traced,
its arrays checked against NumPy and a count against a hand derivation."""

import numpy as np
import pytest

import gpumodel as gm
from gpumodel.lab import LabError, trace
from gpumodel.lab.reader import element_type, kernels, parameters
from gpumodel.lab.runner import Emulator
from test_lab import stand_in, starter_line  # noqa: F401  (stand_in: a fixture)

TILE_GEMM = r"""#pragma once
#include <cassert>
#include <cstdio>
#include <cublas_v2.h>
#include <cuda_runtime.h>

#define CEIL_DIV(M, N) (((M) + (N) - 1) / (N))

// A BM x BN tile of C per block, TM x TN results per thread, in columns tx + (BN / TN) j.
template <const int BM, const int BN, const int BK, const int TM, const int TN>
__global__ void __launch_bounds__((BM * BN) / (TM * TN), 1)
    tile_gemm(unsigned int M, unsigned int N, unsigned int K, /* sizes */ const float* __restrict__ A,
              const float* __restrict__ B, float* __restrict__ C) {
    __shared__ float As[BM * BK], Bs[BK * BN];
    const uint tx = threadIdx.x % (BN / TN), ty = threadIdx.x / (BN / TN);
    const uint row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    assert(blockDim.x == (BM * BN) / (TM * TN));
    float acc[TM * TN] = {0.0f};
    for (uint k0 = 0; k0 < K; k0 += BK) {
        for (uint e = threadIdx.x; e < BM * BK; e += blockDim.x) As[e] = A[(row0 + e / BK) * K + k0 + e % BK];
        for (uint e = threadIdx.x; e < BK * BN; e += blockDim.x) Bs[e] = B[(k0 + e / BN) * N + col0 + e % BN];
        __syncthreads();
#pragma unroll
        for (int k = 0; k < BK; ++k)
            for (int i = 0; i < TM; ++i)
                for (int j = 0; j < TN; ++j) acc[i * TN + j] += As[(ty * TM + i) * BK + k] * Bs[k * BN + tx + j * (BN / TN)];
        __syncthreads();
    }
    for (int i = 0; i < TM; ++i)
        for (int j = 0; j < TN; ++j) C[(row0 + ty * TM + i) * N + col0 + tx + j * (BN / TN)] = acc[i * TN + j];
}
"""


def test_a_templated_tile_gemm_runs_by_its_name_expression_from_a_kernel_file():
    m = n = 64
    k = 16
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((m, k), dtype=np.float32), rng.standard_normal((k, n), dtype=np.float32)
    c = np.zeros((m, n), np.float32)
    t = trace(TILE_GEMM, "tile_gemm<32, 32, 8, 4, 4>", (2, 2), 64, [m, n, k, a, b, c])
    np.testing.assert_allclose(c, a @ b, rtol=1e-5, atol=1e-5)
    # C's stores: 4 blocks x 2 warps x TM * TN = 16 instructions = 128 requests. In one, a warp's
    # 32 threads are 4 rows (ty) of 8 neighbouring columns (tx): 8 floats = 32 B = 1 sector per
    # row, 4 sectors per request, the ideal; 512 in all, each of C's 64 * 64 * 4 B / 32 B once.
    (store,) = [s for s in t.sites if s.space == "global" and s.write]
    assert store.line == starter_line(TILE_GEMM, "C[(row0") and (store.instructions, store.sectors) == (128, 512)
    assert store.ideal_sectors == 512
    with pytest.raises(ValueError, match=r"tile_gemm is a template \(template <BM, BN, BK, TM, TN>\): name an "
                                         r"instantiation"):
        trace(TILE_GEMM, "tile_gemm", (2, 2), 64, [m, n, k, a, b, c])


def test_parameters_are_read_through_templates_comments_and_default_arguments():
    source = r"""
namespace ops {
template <typename T, int BLOCK = 128>
__global__ void __launch_bounds__(BLOCK) scale(const T* __restrict__ x,  // input, (n)
                                               T* y, /* out, (n) */ size_t n, T factor = T(2)) {}
}
extern "C" __global__ void plain(float2* v, const unsigned int count, int64_t offsets[], void* any) {}
"""
    assert kernels(source) == ["scale", "plain"]
    assert parameters(source, "ops::scale<double>") == [("const double * __restrict__", "x"), ("double *", "y"), ("size_t", "n"),
                                                         ("double", "factor")]
    assert parameters(source, "plain") == [("float2 *", "v"), ("const unsigned int", "count"),
                                           ("int64_t *", "offsets"), ("void *", "any")]
    assert [element_type(t) for t, _ in parameters(source, "plain")] == [np.float32, np.uint32, np.int64, None]
    assert element_type("half*") == np.float16 and element_type("unsigned long long") == np.uint64
    with pytest.raises(ValueError, match="leaves out T"):
        parameters(source, "scale<>")


SCALARS_AND_VECTORS = r"""
#include <cuda_fp16.h>
__global__ void mix(int64_t n, double a, const float2* x, double* y, const half* h, unsigned char* arch) {
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * (x[i].x + x[i].y) + __half2float(h[i]);
    if (i == 0) { arch[0] = __CUDA_ARCH__ / 100; arch[1] = min(warpSize, 40u); }  // min(int, unsigned), as CUDA has it
}
"""


def test_every_scalar_type_and_pointers_to_vectors_and_halves_pass_and_arch_is_the_callers():
    n = 100
    x = np.arange(2 * n, dtype=np.float32)
    h, y, arch = np.linspace(0, 1, n).astype(np.float16), np.zeros(n), np.zeros(2, np.uint8)
    t = trace(SCALARS_AND_VECTORS, "mix", 4, 32, [n, 0.5, x, y, h, arch], arch="sm_90")
    np.testing.assert_allclose(y, 0.5 * (x[0::2] + x[1::2]) + h.astype(np.float64))
    assert list(arch) == [9, 32]
    # The float2 loads: 100 threads read 100 float2 (800 B) in 4 warps: 8 B x 32 lanes = 256 B =
    # 8 sectors per full warp (at least 16 four-byte accesses g++ may split them into: counted
    # per access, 3 warps x 8 + 1 x 1 = 25 sectors either way for the .x and the .y).
    loads = [s for s in t.sites if s.space == "global" and not s.write and s.line == 4 and s.size in (4, 8)]
    assert sum(s.sectors for s in loads if s.size == 8) in (0, 25) and all(s.sectors == 25 for s in loads if s.size == 4)
    trace(SCALARS_AND_VECTORS, "mix", 4, 32, [n, 0.5, x, y, h, arch])
    assert list(arch) == [8, 32]  # sm_80 unless the caller names another
    with pytest.raises(TypeError, match=r"h \(const half \*\) must be a C-contiguous NumPy array of float16"):
        trace(SCALARS_AND_VECTORS, "mix", 4, 32, [n, 0.5, x, y, h.astype(np.float32), arch])


CG_REDUCE = r"""
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
namespace cg = cooperative_groups;

// Each block's sum and its largest warp sum, the warps' sums staged in dynamic shared memory.
template <typename T>
__global__ void block_sum(const T* x, T* out, int n) {
    extern __shared__ __align__(sizeof(T)) unsigned char staged[];
    T* partial = reinterpret_cast<T*>(staged);
    cg::thread_block block = cg::this_thread_block();
    cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
    const int i = blockIdx.x * block.size() + block.thread_rank();
    T v = cg::reduce(warp, i < n ? x[i] : T(0), cg::plus<T>());
    if (warp.thread_rank() == 0) partial[warp.meta_group_rank()] = v;
    block.sync();
    if (warp.meta_group_rank() == 0) {
        const T mine = warp.thread_rank() < warp.meta_group_size() ? partial[warp.thread_rank()] : T(0);
        const T total = cg::reduce(warp, mine, cg::plus<T>()), largest = cg::reduce(warp, mine, cg::greater<T>());
        if (warp.thread_rank() == 0) { out[2 * blockIdx.x] = total; out[2 * blockIdx.x + 1] = largest; }
    }
}
"""


@pytest.mark.parametrize("name, dtype", [("block_sum<float>", np.float32), ("block_sum<int>", np.int32)])
def test_a_cooperative_groups_reduction_in_dynamic_shared_memory(name, dtype):
    n, threads, blocks = 1000, 256, 4
    x = (np.arange(n) % 7 + 1).astype(dtype)
    out = np.zeros(2 * blocks, dtype)
    t = trace(CG_REDUCE, name, blocks, threads, [x, out, n], shared_mem=8 * 4)
    padded = np.concatenate([x, np.zeros(blocks * threads - n, dtype)]).reshape(blocks, 8, 32).sum(axis=2)
    np.testing.assert_array_equal(out[0::2], padded.sum(axis=1))
    np.testing.assert_array_equal(out[1::2], padded.max(axis=1))
    # The extern __shared__ array is shared memory: per block, 8 stores of one lane each (lane 0 of
    # each warp) and one load of 8 lanes (warp 0), 8 words in 8 banks: 1 wavefront each. 4 blocks:
    # 32 store wavefronts, 4 load wavefronts, (32 + 4) x 128 B.
    shared = {s.write: s for s in t.sites if s.space == "shared"}
    assert (shared[True].instructions, shared[True].wavefronts) == (32, 32)
    assert (shared[False].instructions, shared[False].wavefronts, shared[False].lanes) == (4, 4, 32)
    assert t.bytes["smem"] == 36 * 128


def test_dynamic_shared_memory_past_shared_mem_is_out_of_bounds():
    x, out = np.ones(256, np.float32), np.zeros(2, np.float32)
    with pytest.raises(LabError, match="writes out of bounds at line 15"):
        trace(CG_REDUCE, "block_sum<float>", 1, 256, [x, out, 256], shared_mem=16)  # 4 of the 8 warps' sums


ATOMICS = r"""
__global__ void histogram(const int* keys, unsigned int* counts, float* total, int* range, int n) {
    __shared__ unsigned int bins[8];
    if (threadIdx.x < 8) bins[threadIdx.x] = 0;
    __syncthreads();
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    const int key = i < n ? keys[i] : 0;
    if (i < n) {
        atomicAdd(&bins[key % 8], 1u);
        atomicAdd(total, (float)key);
        atomicMin(&range[0], key);
        atomicMax(&range[1], key);
        atomicSub(&counts[8], 1u);
        atomicCAS(&range[2], 0, i + 1);
        atomicExch(&range[3], 7);
    }
    __syncthreads();
    if (threadIdx.x < 8) atomicAdd(&counts[threadIdx.x], bins[threadIdx.x]);
}
"""


def test_atomics_on_global_and_shared_memory_are_one_access_each():
    n = 256
    keys = np.random.default_rng(1).integers(0, 1000, n).astype(np.int32)
    counts, total, extent = np.zeros(9, np.uint32), np.zeros(1, np.float32), np.array([10**6, -1, 0, 0], np.int32)
    t = trace(ATOMICS, "histogram", 4, 64, [keys, counts, total, extent, n])
    np.testing.assert_array_equal(counts[:8], np.bincount(keys % 8, minlength=8))
    assert counts[8] == 2**32 - n and total[0] == keys.sum()
    assert (extent[0], extent[1], extent[3]) == (keys.min(), keys.max(), 7) and 1 <= extent[2] <= n
    by_line = {line: [s for s in t.sites if s.line == line] for line in range(9, 20)}
    # One access per atomic, of its width: atomicAdd(total, ...): 4 blocks x 2 warps = 8 requests,
    # each 32 lanes at one address: 1 sector. The shared histogram's: 8 requests, 32 lanes on 8
    # words, one per bank: 1 wavefront. The last one: lanes 0-7 of warp 0 of each block, 8
    # neighbouring words (32 B, aligned): 4 requests of 1 sector.
    (add,) = by_line[starter_line(ATOMICS, "atomicAdd(total")]
    assert (add.space, add.size, add.instructions, add.sectors) == ("global", 4, 8, 8)
    (shared,) = by_line[starter_line(ATOMICS, "atomicAdd(&bins")]
    assert (shared.space, shared.instructions, shared.wavefronts) == ("shared", 8, 8)
    (last,) = [s for s in by_line[starter_line(ATOMICS, "atomicAdd(&counts")] if s.write]  # beside bins' load
    assert (last.space, last.instructions, last.lanes, last.sectors) == ("global", 4, 32, 4)


VOTES = r"""
__global__ void votes(const int* x, int* got, long long* wide, double* down, unsigned* warp) {
    const int t = threadIdx.x, lane = t % warpSize;
    const int v = __ldcs(&x[t]);
    got[t] = __shfl_sync(0xffffffff, v, 0);
    wide[t] = __shfl_xor_sync(0xffffffff, (long long)v << 20, 1);
    down[t] = __shfl_down_sync(0xffffffff, v + 0.25, 1);
    const unsigned odd = __ballot_sync(0xffffffff, v % 2), any = __any_sync(0xffffffff, v > 16777216),
                   all = __all_sync(0xffffffff, v > 0), sum = __reduce_add_sync(0xffffffff, (unsigned)v),
                   active = __activemask();
    __syncwarp();
    if (lane == 0) {
        unsigned* mine = warp + t / warpSize * 5;
        __stcs(&mine[0], odd); __stcs(&mine[1], any); __stcs(&mine[2], all); __stcs(&mine[3], sum); __stcs(&mine[4], active);
    }
}
"""


def test_shuffles_keep_every_bit_and_votes_see_the_warps_live_lanes():
    threads = 40  # warp 1 has 8 lanes
    x = np.arange(16_777_217, 16_777_217 + threads, dtype=np.int32)
    got, wide, down, warp = (np.zeros(threads, np.int32), np.zeros(threads, np.int64), np.zeros(threads),
                             np.zeros(10, np.uint32))
    t = trace(VOTES, "votes", 1, threads, [x, got, wide, down, warp])
    assert got[0] == 16_777_217 and list(got) == [16_777_217] * 32 + [16_777_217 + 32] * 8  # not through float
    np.testing.assert_array_equal(wide, x[np.arange(threads) ^ 1].astype(np.int64) << 20)
    lanes = np.arange(threads)
    below = np.where((lanes % 32 + 1 < 32) & (lanes + 1 < threads), lanes + 1, lanes)  # the last lane keeps its own
    np.testing.assert_array_equal(down, x[below] + 0.25)
    for w, live in ((0, 32), (1, 8)):
        mine = x[32 * w:32 * w + live]
        odd = sum(1 << i for i, v in enumerate(mine) if v % 2)
        assert list(warp[5 * w:5 * w + 5]) == [odd, 1, 1, mine.astype(np.uint32).sum(), (1 << live) - 1]
    # got[t]'s stores: warp 0, 32 lanes x 4 B = 4 sectors; warp 1, 8 lanes = 1 sector.
    (store,) = [s for s in t.sites if s.line == 5]
    assert (store.instructions, store.sectors) == (2, 5)


def test_the_emulator_and_the_stand_ins_gpu_take_name_expressions_and_shared_mem(tmp_path, stand_in):
    x, out = np.arange(512, dtype=np.float32), np.zeros(4, np.float32)
    Emulator(tmp_path).launch(CG_REDUCE, "block_sum<float>", (2,), (256,), [x, out, 512], shared_mem=32)
    np.testing.assert_array_equal(out[0::2], x.reshape(2, 256).sum(axis=1))
    done = gm.lab.run(CG_REDUCE, "block_sum<float>", 2, 256, [x, np.zeros(4, np.float32), 512], shared_mem=32,
                      repeats=1)
    assert done.measured.matches and done.measured.max_abs_error == 0


def test_something_unsupported_says_where_the_list_of_what_is_supported_stands():
    source = "#include <cuda_pipeline.h>\n__global__ void k(float* y) { y[0] = 1; }\n"
    with pytest.raises(LabError, match=r"cuda_pipeline.h[\s\S]*chapter 8 .*lists what the lab's CUDA stand-in supports"):
        trace(source, "k", 1, 32, [np.zeros(32, np.float32)])


WMMA = """#include <mma.h>
using namespace nvcuda;
__global__ void fill(float* y) { y[threadIdx.x] = 1.0f; }
__global__ void tile(const half* a, const half* b, float* c) {
    wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::col_major> fb;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
    wmma::fill_fragment(acc, 0.0f);
    wmma::load_matrix_sync(fa, a, 16);
    wmma::load_matrix_sync(fb, b, 16);
    wmma::mma_sync(acc, fa, fb, acc);
    wmma::store_matrix_sync(c, acc, 16, wmma::mem_row_major);
}
"""


def test_a_file_with_tensor_core_kernels_traces_its_others_and_a_wmma_call_is_named_as_not_emulated():
    assert trace(WMMA.replace("__global__ void tile", "template <int N> __global__ void tile"), "fill", 1, 32,
                 [np.zeros(32, np.float32)]).bytes["hbm"] == 128
    with pytest.raises(LabError) as err:
        trace(WMMA, "tile", 1, 32, [np.zeros(256, np.float16), np.zeros(256, np.float16), np.zeros(256, np.float32)])
    assert "kernel.cu:8" in str(err.value)  # the learner's line, not the stand-in's
    assert "wmma::fill_fragment is not emulated" in str(err.value) and "tensor cores" in str(err.value)


GRID = r"""
#include <cooperative_groups.h>
namespace cg = cooperative_groups;
__global__ void ranks(unsigned long long* y) {
    cg::grid_group grid = cg::this_grid();
    y[grid.thread_rank()] = grid.block_rank() * 1000 + grid.size();
}
__global__ void two_phases(float* y) {
    cg::grid_group grid = cg::this_grid();
    y[grid.thread_rank()] = 1.0f;
    grid.sync();
}
"""


def test_the_grid_group_gives_its_ranks_and_its_sync_outside_a_cooperative_launch_is_named_at_its_line():
    """reductionMultiBlockCG's style: this_grid()'s ranks run as CUDA numbers them; a grid-wide
    sync in a launch that is not cooperative (a kernel traced alone is launched as <<<>>> is) is
    named where it is called, with where such a launch runs."""
    y = trace(GRID.replace("__global__ void two", "template <int N> __global__ void two"), "ranks", (2, 2), 32,
              [np.zeros(128, np.uint64)]).arrays[0]
    assert list(y) == [b * 1000 + 128 for b in range(4) for _ in range(32)]
    with pytest.raises(LabError) as err:
        trace(GRID, "two_phases", 2, 32, [np.zeros(64, np.float32)])
    assert f"at line {GRID.splitlines().index('    grid.sync();') + 1} (`grid.sync();`)" in str(err.value)
    assert "not cooperative" in str(err.value) and "cudaLaunchCooperativeKernel" in str(err.value)
    assert "run_program" in str(err.value)


WARP_SUMS = r"""
// A block's sum in the style of many public reductions: each warp's sum staged in a small
// __shared__ array, then the first warp sums those. `LANES` lanes read it back: all 32 reads past
// the array's 8 entries, `blockDim.x / 32` is the guard.
__global__ void block_total(const float* x, float* out) {
    __shared__ float warp_sums[8];
    __shared__ float spare[64];
    float v = x[blockIdx.x * blockDim.x + threadIdx.x];
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffff, v, o);
    spare[threadIdx.x % 64] = 0.0f;
    if (threadIdx.x % 32 == 0) warp_sums[threadIdx.x / 32] = v;
    __syncthreads();
    if (threadIdx.x < 32) {
        float s = threadIdx.x < LANES ? warp_sums[threadIdx.x] : 0.0f;
        for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffff, s, o);
        if (threadIdx.x == 0) out[blockIdx.x] = s + spare[0];
    }
}
"""


def test_a_read_past_a_shared_array_is_named_with_the_array_and_its_bytes():
    x, out = np.ones(512, np.float32), np.zeros(2, np.float32)
    trace("#define LANES (blockDim.x / 32)\n" + WARP_SUMS, "block_total", 2, 256, [x, out])
    np.testing.assert_array_equal(out, [256, 256])
    line = starter_line(WARP_SUMS, "threadIdx.x < LANES") + 1
    # Lanes 8 to 31 of warp 0 of each of the 2 blocks read warp_sums[8] to [31]: 48 reads past its 32 bytes.
    with pytest.raises(LabError, match=rf"reads out of bounds at line {line}: thread \(\d+, 0, 0\) of block \(0, 0, 0\) "
                       r"reads byte \d+ of the __shared__ array warp_sums, which holds bytes 0 to 31; 48 such"):
        trace("#define LANES 32\n" + WARP_SUMS, "block_total", 2, 256, [x, out])


DEVICE_STATICS = r"""
__device__ unsigned int blocks_done;  // a global of the module's, beside the __shared__ arrays
__device__ float block_max(float v) {
    static __shared__ float best[32];  // static or not, a __shared__ array is the block's
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffff, v, o));
    if (lane == 0) best[warp] = v;
    __syncthreads();
    v = lane < blockDim.x / 32 ? best[lane] : -INFINITY;
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffff, v, o));
    return v;
}
__global__ void maxima(const float* x, float* out, unsigned int* order) {
    __shared__ float tile[128];
    tile[threadIdx.x] = x[blockIdx.x * blockDim.x + threadIdx.x];
    __syncthreads();
    const float m = block_max(tile[blockDim.x - 1 - threadIdx.x]);
    if (threadIdx.x == 0) { out[blockIdx.x] = m; order[blockIdx.x] = atomicAdd(&blocks_done, 1u); }
}
"""


def test_static_shared_arrays_and_device_globals_are_no_out_of_bounds():
    x = np.random.default_rng(3).normal(size=384).astype(np.float32)
    out, order = np.zeros(3, np.float32), np.zeros(3, np.uint32)
    trace(DEVICE_STATICS, "maxima", 3, 128, [x, out, order])
    np.testing.assert_array_equal(out, x.reshape(3, 128).max(axis=1))
    assert sorted(order) == [0, 1, 2]  # the blocks run one after another, each counted once
    # A __shared__ array of a type whose constructor runs: g++ keeps a guard variable beside it,
    # which is the compiler's, not a stretch past the array's end.
    constructed = r"""
struct Acc { float v; int n; __device__ Acc() { v = 0.f; n = 0; } };
__global__ void k(const float* x, float* y) {
    __shared__ Acc a[32];
    __shared__ float b[32];
    a[threadIdx.x].v = x[threadIdx.x]; a[threadIdx.x].n = 1;
    b[threadIdx.x] = 2.f;
    __syncthreads();
    y[threadIdx.x] = a[31 - threadIdx.x].v * b[threadIdx.x] + a[threadIdx.x].n;
}"""
    y = np.zeros(32, np.float32)
    trace(constructed, "k", 1, 32, [x[:32], y])
    np.testing.assert_array_equal(y, x[:32][::-1] * 2 + 1)


HALF2_AND_ROUNDING = r"""
#include <cuda_fp16.h>
// y = a * x + b for pairs of halves, and one float per pair through the _rn intrinsics.
__global__ void axpb2(half2 a, float2 b, const half2* x, half2* y, float* s, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const half2 v = __hfma2(a, x[i], __float22half2_rn(b));
    y[i] = v;
    s[i] = __saturatef(__fmaf_rn(__low2float(v), 0.125f, __fmul_rn(__high2float(__hsub2(v, x[i])), 0.0625f)));
}
"""


def test_half2_arithmetic_rounding_intrinsics_and_vectors_by_value():
    n = 96
    x = np.linspace(-2, 2, 2 * n).astype(np.float16)
    y, s = np.zeros(2 * n, np.float16), np.zeros(n, np.float32)
    t = trace(HALF2_AND_ROUNDING, "axpb2", 2, 64, [(1.5, -0.5), (0.25, 2.0), x, y, s, n])
    a, b = np.array([1.5, -0.5], np.float32), np.array([0.25, 2.0], np.float32)
    want = (a * x.reshape(n, 2).astype(np.float32) + b).astype(np.float16)  # one rounding: __hfma2 is fused
    np.testing.assert_array_equal(y.reshape(n, 2), want)
    high = (want[:, 1] - x.reshape(n, 2)[:, 1]).astype(np.float16).astype(np.float32)
    np.testing.assert_allclose(s, np.clip(want[:, 0].astype(np.float32) * 0.125 + high * 0.0625, 0, 1), rtol=1e-6)
    # A half2 is one 4-byte access: x's 96 pairs (384 B) are 12 sectors, read once per line.
    (load,) = [site for site in t.sites if site.line == 7 and not site.write]
    assert (load.size, load.sectors) == (4, 12)
    with pytest.raises(TypeError, match=r"args: b is float2, which takes a tuple of its 2 components \(x, y\), got 0.25"):
        trace(HALF2_AND_ROUNDING, "axpb2", 2, 64, [(1.5, -0.5), 0.25, x, y, s, n])
    with pytest.raises(ValueError, match=r"args: a.y is half, which holds numbers up to 65504"):
        trace(HALF2_AND_ROUNDING, "axpb2", 2, 64, [(1.5, 1e6), (0.25, 2.0), x, y, s, n])


def test_a_file_with_its_host_code_traces_the_kernel_named_and_host_code_never_runs():
    host = ("#include <cublasLt.h>\nextern cudaDeviceProp deviceProp;\n"
            "__global__ void scale(float* x) { x[threadIdx.x] *= 2; }\nint main() {\n    float* d;\n"
            "    cudaMalloc(&d, 128);\n    scale<<<1, 32>>>(d);\n    printf(\"%d\", deviceProp.warpSize);\n}\n")
    x = np.ones(32, np.float32)
    assert trace(host, "scale", 1, 32, [x]).output == "" and np.array_equal(x, np.full(32, 2.0))
    wrong = host.replace("cudaMalloc(&d, 128)", "cudaMalloc(&d, 128, 3)")
    with pytest.raises(LabError, match=r"Line 4 is host code \(`int main\(\) \{`\): the lab compiles a file's host code "
                       r"against declarations"):
        trace(wrong, "scale", 1, 32, [np.ones(32, np.float32)])


def test_a_header_the_lab_lacks_is_named_as_such():
    extension = ("#include <cutlass/cutlass.h>\n__global__ void k(float* y) { y[0] = 1; }\n"
                 "void launch(float* y) { k<<<1, 32>>>(y); }\n")
    with pytest.raises(LabError, match=r"cutlass/cutlass.h is not a header the lab has: leave its #include out") as err:
        trace(extension, "k", 1, 32, [np.zeros(32, np.float32)])
    assert "host code" not in str(err.value)  # the header is the cause, not the launch at line 3
    # PyTorch's headers are left out with the host code written against them (tests/test_lab_published.py)
    torch = ("#include <torch/extension.h>\n__global__ void k(float* y) { y[0] = 1; }\n"
             "void launch(torch::Tensor& y) { k<<<1, 32>>>(y.data_ptr<float>()); }\n")
    assert trace(torch, "k", 1, 32, [np.zeros(32, np.float32)]).left_out == ["launch (line 3)"]


# In ggml's style (ggml-cuda/common.cuh, norm.cu): a vendor header of the file's own named as
# CUDA's (vendors/cuda.h, which includes <cuda.h>), a division by a constant through __umulhi
# (fastdiv), half2 accumulated with +=, make_half2, and parameters whose defaults are
# make_uint3(0, 0, 0), which a launcher leaves out; a launch in the header, which the lab rewrites
# (in a copy of the file's headers, where <cuda.h> must still be CUDA's).
GGML_VENDOR = "#pragma once\n#include <cuda_runtime.h>\n#include <cuda.h>\n#include <cuda_fp16.h>\n"
GGML_COMMON = r"""
#pragma once
#include "vendors/cuda.h"
static const char* cu_error(CUresult err) { const char* s; cuGetErrorString(err, &s); return s; }
static __device__ uint3 init_fastdiv(uint32_t d) {  // ggml's magic numbers for n / d
    uint32_t L = 0;
    while (L < 32 && (uint32_t{1} << L) < d) L++;
    uint32_t mp = (uint32_t)((uint64_t{1} << 32) * ((uint64_t{1} << L) - d) / d + 1);
    return make_uint3(mp, L, d);
}
static __device__ uint32_t fastdiv(uint32_t n, const uint3 f) { return (__umulhi(n, f.x) + n) >> f.y; }
static __device__ void mad(half2& acc, const half2 v, const half2 u) { acc += v * u; }
static void launch(void (*k)(float*), float* y) { k<<<1, 32>>>(y); }  // a launch: the lab rewrites this header
"""
GGML_KERNEL = r"""
#include "common.cuh"
template <int block_size>
static __global__ void rows_of(const half* x, float* out, const int ncols, const uint3 shape = make_uint3(0, 0, 0)) {
    const uint3 f = init_fastdiv(7);
    half2 acc = make_half2(0.0f, 0.0f);
    for (int c = threadIdx.x; c < ncols / 2; c += block_size)
        mad(acc, __halves2half2(x[2 * c], x[2 * c + 1]), __float2half2_rn(1.0f));
    out[threadIdx.x] = __low2float(acc) + __high2float(acc) + fastdiv(1000 + threadIdx.x, f) + shape.x;
}
"""


def test_a_file_in_ggmls_style_traces_with_its_vendor_headers_and_defaults(tmp_path):
    (tmp_path / "vendors").mkdir()
    (tmp_path / "vendors" / "cuda.h").write_text(GGML_VENDOR)
    (tmp_path / "common.cuh").write_text(GGML_COMMON)
    x = np.arange(64, dtype=np.float16)
    out = np.zeros(32, np.float32)
    trace(GGML_KERNEL, "rows_of<32>", 1, 32, [x, out, 64], options=(f"-I{tmp_path}",))
    pairs = x[0::2].astype(np.float32) + x[1::2].astype(np.float32)
    assert out.tolist() == (pairs + (1000 + np.arange(32)) // 7).tolist()  # fastdiv is n // 7; shape.x is 0


LAST_WARP = r"""
// The last warp of a tree reduction unrolled, as older samples wrote it: volatile shared memory and
// no __syncwarp(), counting on the warp's lanes running in lockstep.
__global__ void last_warp(const int* x, int* out) {
    __shared__ int s[64];
    const int t = threadIdx.x;
    s[t] = x[t];
    __syncthreads();
    volatile int* v = s;
    if (t < 32) v[t] += v[t + 32];
    if (t < 16) v[t] += v[t + 16];
    if (t < 8) v[t] += v[t + 8];
    if (t == 0) out[0] = v[0] + v[1] + v[2] + v[3] + v[4] + v[5] + v[6] + v[7];
}
"""


def test_a_race_between_lanes_of_one_warp_asks_for_a_syncwarp_and_one_between_warps_a_syncthreads():
    args = [np.ones(64, np.int32), np.zeros(1, np.int32)]
    races = [r for r in trace(LAST_WARP, "last_warp", 1, 64, args).races if r.hazard != "uninitialized read"]
    assert races and all(r.one_warp and max(t[0] for t in r.threads) < 32 for r in races)  # all in warp 0
    lines = sorted({races[0].first[0], races[0].second[0]})
    assert f"Missing: a __syncwarp() between line {lines[0]} and line {lines[1]}" in races[0].message
    assert "Independent Thread Scheduling" in races[0].message
    # Without the barrier, warp 0 reads what warp 1 wrote: that one takes a __syncthreads().
    racy = LAST_WARP.replace("    __syncthreads();\n", "")
    races = [r for r in trace(racy, "last_warp", 1, 64, args).races if r.hazard != "uninitialized read"]
    assert races and not any(r.one_warp for r in races)
    assert all("Missing: a __syncthreads()" in r.message for r in races)


SPECIAL_REGISTERS = r"""
// CUB's style: a warp's lane and the lanes below it read from PTX's special registers.
__device__ unsigned lane_id() { unsigned lane; asm volatile("mov.u32 %0, %%laneid;" : "=r"(lane)); return lane; }
__device__ unsigned lanes_below() { unsigned m; asm("mov.u32 %0, %%lanemask_lt;" : "=r"(m)); return m; }
__global__ void compact(const int* x, int* out, int* count, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    bool keep = i < n && x[i] > 0;
    unsigned votes = __ballot_sync(0xffffffff, keep);
    int base = 0;
    if (lane_id() == 0) base = atomicAdd(count, __popc(votes));
    base = __shfl_sync(0xffffffff, base, 0);
    if (keep) out[base + __popc(votes & lanes_below())] = x[i];
}
__global__ void who(unsigned* lanes, unsigned* warps, unsigned* masks) {
    unsigned t = threadIdx.y * blockDim.x + threadIdx.x, w, ge;
    asm("mov.u32 %0, %%warpid;" : "=r"(w));
    asm("mov.u32 %0, %%lanemask_ge;" : "=r"(ge));
    lanes[t] = lane_id();
    warps[t] = w;
    masks[t] = ge;
}
"""


def test_inline_ptx_that_reads_a_special_register_runs_as_the_register_reads():
    """A warp-aggregated compaction (one atomic per warp, each lane's slot from the lanes below it
    that keep): the positive values, each once; in a 16 x 4 block a thread's lane, warp and
    lanemask_ge are those of its linear index."""
    x = np.array([(-1) ** i * (i % 7) for i in range(200)], np.int32)
    out, count = np.zeros(200, np.int32), np.zeros(1, np.int32)
    traced = trace(SPECIAL_REGISTERS, "compact", 2, 128, [x, out, count, 200])
    keep = x[x > 0]
    assert int(traced.arrays[2][0]) == len(keep) and sorted(traced.arrays[1][:len(keep)]) == sorted(keep)
    lanes, warps, masks = (np.zeros(64, np.uint32) for _ in range(3))
    got = trace(SPECIAL_REGISTERS, "who", 1, (16, 4), [lanes, warps, masks]).arrays
    t = np.arange(64)
    assert list(got[0]) == list(t % 32) and list(got[1]) == list(t // 32)
    assert list(got[2]) == [(0xFFFFFFFF << (i % 32)) & 0xFFFFFFFF for i in t]


LAUNCHES = """__global__ void k(float* d, int n = 4) { d[0] = n; }
int main() {
    float* d;
    k<<<1,
        32>>>(d);
    k<<<1, 32>>>(d, 3);
    return 0;
}
"""


def test_a_launch_over_two_lines_is_run_and_one_short_of_arguments_runs_untraced():
    """A whole program's launches as the runtime runs them (reader._run_launches, no compiler
    needed): `<<<...>>>` split over two lines is still a launch, every line kept; one that
    leaves a default argument out runs untraced (its arguments are not its parameters'), one
    that passes them all is traced by its kernel's name and line."""
    from gpumodel.lab import reader

    out = reader._run_launches(LAUNCHES).splitlines()
    assert len(out) == len(LAUNCHES.splitlines())
    assert out[3:6] == ["    emu_launch_config(1,", '        32).run("k", 4, [&]() EMU_UNTRACED { k(d); });',
                        '    emu_launch_config(1, 32).run("k", 6, k, decltype(emu_params(k)){d, 3});']


def test_host_code_is_named_at_main_before_any_launch():
    from gpumodel.lab import reader

    said = reader.host_code(LAUNCHES)
    assert said.startswith("\nLine 2 is host code (`int main() {`): the lab compiles a file's host code")
    assert reader.host_code("__global__ void k(float* d) { d[0] = 1; }\n") == ""
    assert reader.host_code("void f();\nint  main (void) {\n    f();\n}\n").startswith("\nLine 2 is host code")
