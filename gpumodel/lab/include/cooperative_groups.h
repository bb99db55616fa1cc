// The kernel lab's cooperative groups: the grid (this_grid), the block (this_thread_block), its tiles
// (tiled_partition<N>, N a power of two up to 1024), thread_group, which holds either, and a warp's
// coalesced groups (coalesced_threads, binary_partition, labeled_partition), over cuda_emu.h's barrier, shuffles and
// votes. A tile of a warp or less meets with its own lanes; a tile of several warps (CUDA 12's
// multi-warp tiles, with their block_tile_memory) syncs with the block's barrier, so every tile
// of the block must sync together, as the programs that use them do. cg::reduce and its
// operators are in cooperative_groups/reduce.h, as in CUDA.
#pragma once
namespace cooperative_groups {

struct thread_block {
    static void sync() { __syncthreads(); }
    static unsigned thread_rank() { return emu_thread_rank(); }
    static unsigned size() { return blockDim.x * blockDim.y * blockDim.z; }
    static unsigned num_threads() { return size(); }
    static dim3 group_index() { return dim3(blockIdx.x, blockIdx.y, blockIdx.z); }
    static dim3 thread_index() { return dim3(threadIdx.x, threadIdx.y, threadIdx.z); }
    static dim3 group_dim() { return blockDim; }
    static dim3 dim_threads() { return blockDim; }
};
inline thread_block this_thread_block() { return {}; }
// The scratch a block's multi-warp tiles use (CUDA 12); the lab's tiles keep theirs themselves.
template <unsigned MaxBlockSize = 1024>
struct block_tile_memory {};
template <unsigned MaxBlockSize>
thread_block this_thread_block(block_tile_memory<MaxBlockSize>&) { return {}; }
inline void sync(const thread_block&) { __syncthreads(); }

template <unsigned N>
struct thread_block_tile {
    static_assert(N >= 1 && N <= 1024 && (N & (N - 1)) == 0, "a tile is a power of two of threads, at most 1024");
    static constexpr unsigned size() { return N; }
    static constexpr unsigned num_threads() { return N; }
    static unsigned thread_rank() { return thread_block::thread_rank() % N; }
    static unsigned meta_group_rank() { return thread_block::thread_rank() / N; }
    static unsigned meta_group_size() { return (thread_block::size() + N - 1) / N; }
    // The lanes of this tile in its warp: a tile meets alone, as CUDA's tiles may diverge.
    static unsigned emu_mask() { return N >= 32 ? ~0u : ((1u << N) - 1) << (thread_block::thread_rank() % 32 / N * N); }
    static void sync() {
        if constexpr (N > 32) __syncthreads();
        else __syncwarp(emu_mask());
    }
    // A tile's shuffles take any trivially copyable type (a uint4, a struct), as CUDA's do.
    template <class T> static T shfl(T value, int lane) { return emu_shuffled_any(value, EMU_SHFL_IDX, lane, N, emu_mask()); }
    template <class T> static T shfl_down(T value, unsigned delta) { return emu_shuffled_any(value, EMU_SHFL_DOWN, (int)delta, N, emu_mask()); }
    template <class T> static T shfl_up(T value, unsigned delta) { return emu_shuffled_any(value, EMU_SHFL_UP, (int)delta, N, emu_mask()); }
    template <class T> static T shfl_xor(T value, int lane_mask) { return emu_shuffled_any(value, EMU_SHFL_XOR, lane_mask, N, emu_mask()); }
    static unsigned emu_ranks(unsigned warp_mask) {  // bit r: the tile's rank r
        return warp_mask >> (thread_block::thread_rank() % 32 / N * N) & (N == 32 ? ~0u : (1u << N) - 1);
    }
    static unsigned ballot(int predicate) { return emu_ranks(__ballot_sync(emu_mask(), predicate)); }
    static bool any(int predicate) { return ballot(predicate) != 0; }
    static bool all(int predicate) { return ballot(predicate) == emu_ranks(__activemask()); }
};
template <unsigned N, class Parent>
thread_block_tile<N> tiled_partition(const Parent&) { return {}; }
template <unsigned N>
void sync(const thread_block_tile<N>& tile) { tile.sync(); }

// Any group, its kind known when it runs (CUDA's thread_group): the block, or a tile of `tile`
// threads (a power of two) as thread_block_tile<tile> is.
class thread_group {
    unsigned tile_ = 0;  // 0: the whole block
  public:
    thread_group(const thread_block&) {}
    template <unsigned N> thread_group(const thread_block_tile<N>&) : tile_(N) {}
    explicit thread_group(unsigned tile) : tile_(tile) {}
    unsigned size() const { return tile_ ? tile_ : thread_block::size(); }
    unsigned num_threads() const { return size(); }
    unsigned thread_rank() const { return tile_ ? thread_block::thread_rank() % tile_ : thread_block::thread_rank(); }
    void sync() const {
        if (!tile_ || tile_ > 32) __syncthreads();
        else __syncwarp(tile_ == 32 ? ~0u : ((1u << tile_) - 1) << (thread_block::thread_rank() % 32 / tile_ * tile_));
    }
};
// A tile whose size is known when it runs; tiles of a tile are tiles of the block, as their ranks run.
inline thread_group tiled_partition(const thread_group&, unsigned threads) {
    if (!threads || threads > 1024 || (threads & (threads - 1))) __trap();  // CUDA's rule: a power of two
    return thread_group(threads);
}
inline void sync(const thread_group& group) { group.sync(); }

// The lanes of one warp that run together (CUDA's coalesced_group): those that came to
// coalesced_threads() in step (cuda_emu.h's emu_coalesce), or a partition of a tile or of such a
// group (binary_partition, labeled_partition). Its ranks run in lane order.
class coalesced_group {
    unsigned mask_;  // its lanes in the warp
    static unsigned lane() { return thread_block::thread_rank() % 32; }
  public:
    explicit coalesced_group(unsigned lanes) : mask_(lanes) {}
    unsigned emu_mask() const { return mask_; }
    unsigned size() const { return __popc(mask_); }
    unsigned num_threads() const { return size(); }
    unsigned thread_rank() const { return __popc(mask_ & ((1u << lane()) - 1)); }
    static unsigned meta_group_rank() { return 0; }
    static unsigned meta_group_size() { return 1; }
    bool is_valid() const { return mask_ != 0; }
    void sync() const { __syncwarp(mask_); }
    unsigned lane_of(unsigned rank) const {  // the warp lane of this group's `rank`
        unsigned m = mask_;
        for (; rank && m; --rank) m &= m - 1;
        return m ? __ffs((int)m) - 1 : lane();
    }
    template <class T> T shfl(T value, unsigned rank) const {
        return emu_shuffled_any(value, EMU_SHFL_IDX, (int)lane_of(rank), 32, mask_);
    }
    template <class T> T shfl_down(T value, unsigned delta) const {  // past the last rank: its own
        const unsigned from = thread_rank() + delta;
        return emu_shuffled_any(value, EMU_SHFL_IDX, (int)(from < size() ? lane_of(from) : lane()), 32, mask_);
    }
    template <class T> T shfl_up(T value, unsigned delta) const {
        const unsigned rank = thread_rank();
        return emu_shuffled_any(value, EMU_SHFL_IDX, (int)(delta <= rank ? lane_of(rank - delta) : lane()), 32, mask_);
    }
    unsigned ballot(int predicate) const {  // bit r: rank r's vote
        const unsigned votes = __ballot_sync(mask_, predicate);
        unsigned ranks = 0, r = 0;
        for (unsigned l = 0; l < 32; ++l)
            if (mask_ >> l & 1u) ranks |= (votes >> l & 1u) << r++;
        return ranks;
    }
    bool any(int predicate) const { return ballot(predicate) != 0; }
    bool all(int predicate) const { return ballot(predicate) == (size() == 32 ? ~0u : (1u << size()) - 1); }
};
// Not inlined: its return address names the call, so that lanes at two calls form two groups.
__attribute__((noinline)) inline coalesced_group coalesced_threads() {
    return coalesced_group(emu_coalesce(__builtin_return_address(0)));
}
// The lanes of `parent` (a warp's tile or a coalesced group) whose `predicate` is this lane's.
template <class Parent>
coalesced_group binary_partition(const Parent& parent, bool predicate) {
    const unsigned lanes = parent.emu_mask(), votes = __ballot_sync(lanes, predicate);
    return coalesced_group(predicate ? votes : lanes & ~votes);
}
// The lanes of `parent` whose `label` is this lane's.
template <class Parent, class Label>
coalesced_group labeled_partition(const Parent& parent, Label label) {
    return coalesced_group(__match_any_sync(parent.emu_mask(), label));
}

// The grid (this_grid): its ranks and sizes, and its barrier (cuda_emu.h's emu_grid_sync), which only a
// cooperative launch's blocks may wait at.
struct grid_group {
    static bool is_valid() { return emu_cooperative_launch(); }
    static unsigned long long num_blocks() { return (unsigned long long)gridDim.x * gridDim.y * gridDim.z; }
    static unsigned long long block_rank() { return ((unsigned long long)blockIdx.z * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x; }
    static unsigned long long size() { return num_blocks() * thread_block::size(); }
    static unsigned long long num_threads() { return size(); }
    static unsigned long long thread_rank() { return block_rank() * thread_block::size() + thread_block::thread_rank(); }
    static dim3 dim_blocks() { return dim3(gridDim.x, gridDim.y, gridDim.z); }
    static dim3 block_index() { return dim3(blockIdx.x, blockIdx.y, blockIdx.z); }
    static void sync() { emu_grid_sync(); }
};
inline grid_group this_grid() { return {}; }
inline void sync(const grid_group&) { emu_grid_sync(); }

}  // namespace cooperative_groups
