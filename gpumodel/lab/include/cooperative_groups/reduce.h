// The kernel lab's cg::reduce: a tile's values combined by `op` across its lanes (a butterfly of
// shuffles: every lane gets the result), with CUDA's operators.
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
    for (unsigned mask = N / 2; mask > 0; mask /= 2) value = op(value, tile.shfl_xor(value, mask));
    return value;
}
}  // namespace cooperative_groups
