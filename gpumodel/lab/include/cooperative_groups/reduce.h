// The kernel lab's cg::reduce: a tile's values combined by `op` across its lanes (a butterfly of
// shuffles: every lane gets the result; a multi-warp tile's warps then combine through shared
// memory), with CUDA's operators.
#pragma once
#include <cooperative_groups.h>
namespace cooperative_groups {
template <class T> struct plus { T operator()(T a, T b) const { return a + b; } };
template <class T> struct less { T operator()(T a, T b) const { return a < b ? a : b; } };  // the smaller
template <class T> struct greater { T operator()(T a, T b) const { return a < b ? b : a; } };  // the larger
template <class T> struct bit_and { T operator()(T a, T b) const { return a & b; } };
template <class T> struct bit_or { T operator()(T a, T b) const { return a | b; } };
template <class T> struct bit_xor { T operator()(T a, T b) const { return a ^ b; } };
template <unsigned N, class T, class Op>
T reduce(const thread_block_tile<N>& tile, T value, Op op) {
    if constexpr (N <= 32) {
        for (unsigned mask = N / 2; mask > 0; mask /= 2) value = op(value, tile.shfl_xor(value, mask));
        return value;
    } else {  // a multi-warp tile: each warp by shuffles, then its warps' results through shared memory
        __shared__ T warp_results[32];
        const thread_block_tile<32> warp;
        value = reduce(warp, value, op);
        const unsigned rank = thread_block::thread_rank();
        if (rank % 32 == 0) warp_results[rank / 32] = value;
        tile.sync();
        const unsigned first = rank / N * (N / 32);
        value = warp_results[first];
        for (unsigned w = 1; w < N / 32; ++w) value = op(value, warp_results[first + w]);
        tile.sync();  // every warp has read before the results are written again
        return value;
    }
}
// A coalesced group's values, combined by `op` in rank order (each rank's value shuffled to every lane).
template <class T, class Op>
T reduce(const coalesced_group& group, T value, Op op) {
    T result = group.shfl(value, 0);
    for (unsigned rank = 1; rank < group.size(); ++rank) result = op(result, group.shfl(value, rank));
    return result;
}
}  // namespace cooperative_groups
