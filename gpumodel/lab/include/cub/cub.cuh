// The kernel lab's stand-in for CUB's block- and warp-wide primitives (cub/cub.cuh), written the
// way CUB's default algorithms work, so the lab traces them like any code: a warp reduces or
// scans with shuffles, warps pass their totals through the TempStorage in shared memory between
// two __syncthreads(). The interfaces are CUB's (BlockReduce, WarpReduce, BlockScan, BlockLoad,
// BlockStore; cub::Sum, Max, Min); the algorithm parameters are taken and the default algorithm
// used, except that BlockLoad and BlockStore move a warp-striped arrangement through shared memory
// for their *_TRANSPOSE algorithms, as CUB does. As CUB: a reduction's aggregate is valid in
// thread 0 (lane 0 of a logical warp); every thread of the block calls a block primitive.
#pragma once
#include <cuda_runtime.h>

namespace cub {
struct Sum { template <class T> __device__ T operator()(const T& a, const T& b) const { return a + b; } };
struct Max { template <class T> __device__ T operator()(const T& a, const T& b) const { return a < b ? b : a; } };
struct Min { template <class T> __device__ T operator()(const T& a, const T& b) const { return b < a ? b : a; } };
enum BlockReduceAlgorithm { BLOCK_REDUCE_RAKING_COMMUTATIVE_ONLY, BLOCK_REDUCE_RAKING, BLOCK_REDUCE_WARP_REDUCTIONS };
enum BlockScanAlgorithm { BLOCK_SCAN_RAKING, BLOCK_SCAN_RAKING_MEMOIZE, BLOCK_SCAN_WARP_SCANS };
enum BlockLoadAlgorithm { BLOCK_LOAD_DIRECT, BLOCK_LOAD_STRIPED, BLOCK_LOAD_VECTORIZE, BLOCK_LOAD_TRANSPOSE,
                          BLOCK_LOAD_WARP_TRANSPOSE, BLOCK_LOAD_WARP_TRANSPOSE_TIMESLICED };
enum BlockStoreAlgorithm { BLOCK_STORE_DIRECT, BLOCK_STORE_STRIPED, BLOCK_STORE_VECTORIZE, BLOCK_STORE_TRANSPOSE,
                           BLOCK_STORE_WARP_TRANSPOSE, BLOCK_STORE_WARP_TRANSPOSE_TIMESLICED };

__device__ inline int emu_cub_rank() { return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z); }
__device__ inline int emu_cub_threads() { return blockDim.x * blockDim.y * blockDim.z; }

// A reduction over the first `valid` lanes of each `width`-lane segment, by shuffles down; the
// segment's lane 0 holds it.
template <class T, class Op>
__device__ T emu_warp_reduce(T value, Op op, int width, int valid) {
    const int lane = emu_cub_rank() % width;
    for (int offset = 1; offset < width; offset *= 2) {
        const T other = __shfl_down_sync(0xffffffff, value, offset, width);
        if (lane + offset < valid && lane % (2 * offset) == 0) value = op(value, other);
    }
    return value;
}

template <class T, int LOGICAL_WARP_THREADS = 32, int ARCH = 0>
class WarpReduce {
  public:
    struct TempStorage {};
    __device__ explicit WarpReduce(TempStorage&) {}
    template <class Op> __device__ T Reduce(T input, Op op) { return emu_warp_reduce(input, op, LOGICAL_WARP_THREADS, LOGICAL_WARP_THREADS); }
    template <class Op> __device__ T Reduce(T input, Op op, int valid) { return emu_warp_reduce(input, op, LOGICAL_WARP_THREADS, valid); }
    __device__ T Sum(T input) { return Reduce(input, cub::Sum()); }
    __device__ T Sum(T input, int valid) { return Reduce(input, cub::Sum(), valid); }
};

template <class T, int BLOCK_DIM_X, int ALGORITHM = BLOCK_REDUCE_WARP_REDUCTIONS, int BLOCK_DIM_Y = 1, int BLOCK_DIM_Z = 1,
          int ARCH = 0>
class BlockReduce {
    static constexpr int WARPS = (BLOCK_DIM_X * BLOCK_DIM_Y * BLOCK_DIM_Z + 31) / 32;
  public:
    struct TempStorage { T warp_totals[WARPS]; };
    __device__ explicit BlockReduce(TempStorage& storage) : s(storage) {}
    template <class Op> __device__ T Reduce(T input, Op op) { return Reduce(input, op, emu_cub_threads()); }
    template <class Op> __device__ T Reduce(T input, Op op, int valid) {
        const int rank = emu_cub_rank(), warp = rank / 32;
        const T total = emu_warp_reduce(input, op, 32, valid - warp * 32);
        if (rank % 32 == 0 && warp * 32 < valid) s.warp_totals[warp] = total;
        __syncthreads();
        T result = total;
        if (rank == 0)
            for (int w = 1; w * 32 < valid && w < WARPS; ++w) result = op(result, s.warp_totals[w]);
        return result;
    }
    template <int N, class Op> __device__ T Reduce(T (&items)[N], Op op) {
        T partial = items[0];
        for (int i = 1; i < N; ++i) partial = op(partial, items[i]);
        return Reduce(partial, op);
    }
    __device__ T Sum(T input) { return Reduce(input, cub::Sum()); }
    __device__ T Sum(T input, int valid) { return Reduce(input, cub::Sum(), valid); }
    template <int N> __device__ T Sum(T (&items)[N]) { return Reduce(items, cub::Sum()); }
  private:
    TempStorage& s;
};

template <class T, int BLOCK_DIM_X, int ALGORITHM = BLOCK_SCAN_RAKING, int BLOCK_DIM_Y = 1, int BLOCK_DIM_Z = 1,
          int ARCH = 0>
class BlockScan {
    static constexpr int WARPS = (BLOCK_DIM_X * BLOCK_DIM_Y * BLOCK_DIM_Z + 31) / 32;
  public:
    struct TempStorage { T warp_totals[WARPS]; };
    __device__ explicit BlockScan(TempStorage& storage) : s(storage) {}
    // Each thread's inclusive prefix by `op` (a warp's by shuffles up, then the warps before it);
    // `aggregate` the whole block's.
    template <class Op> __device__ void InclusiveScan(T input, T& output, Op op, T& aggregate) {
        const int rank = emu_cub_rank(), lane = rank % 32, warp = rank / 32, warps = (emu_cub_threads() + 31) / 32;
        T value = input;
        for (int offset = 1; offset < 32; offset *= 2) {
            const T other = __shfl_up_sync(0xffffffff, value, offset);
            if (lane >= offset) value = op(other, value);
        }
        if (lane == 31 || rank == emu_cub_threads() - 1) s.warp_totals[warp] = value;
        __syncthreads();
        T before = value;
        bool any = false;
        for (int w = 0; w < warp; ++w) { before = any ? op(before, s.warp_totals[w]) : s.warp_totals[w]; any = true; }
        output = any ? op(before, value) : value;
        aggregate = s.warp_totals[0];
        for (int w = 1; w < warps; ++w) aggregate = op(aggregate, s.warp_totals[w]);
        __syncthreads();
    }
    template <class Op> __device__ void InclusiveScan(T input, T& output, Op op) { T a; InclusiveScan(input, output, op, a); }
    __device__ void InclusiveSum(T input, T& output) { InclusiveScan(input, output, cub::Sum()); }
    __device__ void InclusiveSum(T input, T& output, T& aggregate) { InclusiveScan(input, output, cub::Sum(), aggregate); }
    // The exclusive prefix: `initial` for thread 0, else `initial` op the inclusive prefix of the
    // thread before (within the warp by a shuffle up; for a warp's lane 0, the warps before it).
    template <class Op> __device__ void ExclusiveScan(T input, T& output, T initial, Op op, T& aggregate) {
        T inclusive;
        InclusiveScan(input, inclusive, op, aggregate);
        const int rank = emu_cub_rank(), lane = rank % 32, warp = rank / 32;
        T previous = __shfl_up_sync(0xffffffff, inclusive, 1);
        if (lane == 0 && warp > 0) {
            previous = s.warp_totals[0];
            for (int w = 1; w < warp; ++w) previous = op(previous, s.warp_totals[w]);
        }
        output = rank == 0 ? initial : op(initial, previous);
        __syncthreads();
    }
    template <class Op> __device__ void ExclusiveScan(T input, T& output, T initial, Op op) { T a; ExclusiveScan(input, output, initial, op, a); }
    __device__ void ExclusiveSum(T input, T& output) { ExclusiveScan(input, output, T(0), cub::Sum()); }
    __device__ void ExclusiveSum(T input, T& output, T& aggregate) { ExclusiveScan(input, output, T(0), cub::Sum(), aggregate); }
  private:
    TempStorage& s;
};

template <class T, int BLOCK_DIM_X, int ITEMS_PER_THREAD, int ALGORITHM = BLOCK_LOAD_DIRECT, int BLOCK_DIM_Y = 1,
          int BLOCK_DIM_Z = 1, int ARCH = 0>
class BlockLoad {
    static constexpr bool TRANSPOSE = ALGORITHM == BLOCK_LOAD_TRANSPOSE || ALGORITHM == BLOCK_LOAD_WARP_TRANSPOSE ||
                                      ALGORITHM == BLOCK_LOAD_WARP_TRANSPOSE_TIMESLICED;
  public:
    struct TempStorage { T items[TRANSPOSE ? BLOCK_DIM_X * BLOCK_DIM_Y * BLOCK_DIM_Z * ITEMS_PER_THREAD : 1]; };
    __device__ explicit BlockLoad(TempStorage& storage) : s(storage) {}
    // Thread r's items are [r * ITEMS_PER_THREAD, (r + 1) * ITEMS_PER_THREAD) of the block's tile
    // (a blocked arrangement); past `valid`, `fill`. Direct: each thread reads its own items;
    // transposed: the block reads striped (coalesced) and exchanges through shared memory.
    __device__ void Load(const T* tile, T (&items)[ITEMS_PER_THREAD], int valid, T fill) {
        const int rank = emu_cub_rank(), threads = emu_cub_threads();
        if constexpr (TRANSPOSE) {
            for (int i = 0; i < ITEMS_PER_THREAD; ++i) {
                const int at = i * threads + rank;
                s.items[at] = at < valid ? tile[at] : fill;
            }
            __syncthreads();
            for (int i = 0; i < ITEMS_PER_THREAD; ++i) items[i] = s.items[rank * ITEMS_PER_THREAD + i];
            __syncthreads();
        } else if constexpr (ALGORITHM == BLOCK_LOAD_STRIPED) {
            for (int i = 0; i < ITEMS_PER_THREAD; ++i) items[i] = i * threads + rank < valid ? tile[i * threads + rank] : fill;
        } else {
            for (int i = 0; i < ITEMS_PER_THREAD; ++i)
                items[i] = rank * ITEMS_PER_THREAD + i < valid ? tile[rank * ITEMS_PER_THREAD + i] : fill;
        }
    }
    __device__ void Load(const T* tile, T (&items)[ITEMS_PER_THREAD], int valid) { Load(tile, items, valid, T()); }
    __device__ void Load(const T* tile, T (&items)[ITEMS_PER_THREAD]) { Load(tile, items, ITEMS_PER_THREAD * emu_cub_threads(), T()); }
  private:
    TempStorage& s;
};

template <class T, int BLOCK_DIM_X, int ITEMS_PER_THREAD, int ALGORITHM = BLOCK_STORE_DIRECT, int BLOCK_DIM_Y = 1,
          int BLOCK_DIM_Z = 1, int ARCH = 0>
class BlockStore {
    static constexpr bool TRANSPOSE = ALGORITHM == BLOCK_STORE_TRANSPOSE || ALGORITHM == BLOCK_STORE_WARP_TRANSPOSE ||
                                      ALGORITHM == BLOCK_STORE_WARP_TRANSPOSE_TIMESLICED;
  public:
    struct TempStorage { T items[TRANSPOSE ? BLOCK_DIM_X * BLOCK_DIM_Y * BLOCK_DIM_Z * ITEMS_PER_THREAD : 1]; };
    __device__ explicit BlockStore(TempStorage& storage) : s(storage) {}
    // The blocked arrangement of BlockLoad written back, the first `valid` items only.
    __device__ void Store(T* tile, T (&items)[ITEMS_PER_THREAD], int valid) {
        const int rank = emu_cub_rank(), threads = emu_cub_threads();
        if constexpr (TRANSPOSE) {
            for (int i = 0; i < ITEMS_PER_THREAD; ++i) s.items[rank * ITEMS_PER_THREAD + i] = items[i];
            __syncthreads();
            for (int i = 0; i < ITEMS_PER_THREAD; ++i)
                if (i * threads + rank < valid) tile[i * threads + rank] = s.items[i * threads + rank];
            __syncthreads();
        } else if constexpr (ALGORITHM == BLOCK_STORE_STRIPED) {
            for (int i = 0; i < ITEMS_PER_THREAD; ++i) if (i * threads + rank < valid) tile[i * threads + rank] = items[i];
        } else {
            for (int i = 0; i < ITEMS_PER_THREAD; ++i)
                if (rank * ITEMS_PER_THREAD + i < valid) tile[rank * ITEMS_PER_THREAD + i] = items[i];
        }
    }
    __device__ void Store(T* tile, T (&items)[ITEMS_PER_THREAD]) { Store(tile, items, ITEMS_PER_THREAD * emu_cub_threads()); }
  private:
    TempStorage& s;
};
}  // namespace cub
