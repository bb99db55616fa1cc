// A CPU stand-in for the parts of CUDA the course's kernels use, so their logic can be
// tested without a GPU: every thread of a block is a real std::thread, __syncthreads() is a
// barrier, __shared__ arrays are statics (blocks run one after another), the lanes of a warp
// meet at a barrier of their own to shuffle values (__shfl_*_sync, float). It cannot show
// warp-level timing, races the hardware would hide, or anything about speed.
// With GM_LAB_TRACE defined (the lab's traced build, gpumodel/lab/tracer.py), the launch and
// the barrier live in trace_runtime.cpp, which is compiled without the instrumentation.
#pragma once
#include <algorithm>
#include <barrier>
#include <cmath>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

struct dim3 {
    unsigned x, y, z;
    dim3(unsigned x_ = 1, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
};
struct emu_index { unsigned x, y, z; };
struct float4 { float x, y, z, w; };

inline thread_local emu_index threadIdx, blockIdx;
inline dim3 blockDim, gridDim;
inline std::barrier<>* emu_block_barrier = nullptr;

// A block's warps, for shuffles: each lane publishes its value, the warp's lanes meet, each
// reads the lane it names, and they meet again before any publishes anew. A lane that has
// returned no longer holds its warp back (the launch drops it) and reads as 0.
struct emu_warp {
    std::unique_ptr<std::barrier<>> gate;
    float values[32] = {};
    int lanes = 32;
};
inline std::vector<emu_warp>* emu_block_warps = nullptr;
inline thread_local int emu_lane = 0, emu_warp_id = 0;

inline std::vector<emu_warp> emu_warps(unsigned threads) {
    std::vector<emu_warp> warps((threads + 31) / 32);
    for (unsigned w = 0; w < warps.size(); ++w) {
        warps[w].lanes = std::min<int>(32, threads - w * 32);
        warps[w].gate = std::make_unique<std::barrier<>>(warps[w].lanes);
    }
    return warps;
}

// The traced kernel only declares the shuffles: instantiated there, std::barrier's code would be
// instrumented, so trace_runtime.cpp (GM_LAB_RUNTIME, not instrumented) defines them once.
#if defined(GM_LAB_TRACE) && !defined(GM_LAB_RUNTIME)
float __shfl_sync(unsigned mask, float value, int lane, int width = 32);
float __shfl_xor_sync(unsigned mask, float value, int lane_mask, int width = 32);
float __shfl_down_sync(unsigned mask, float value, unsigned delta, int width = 32);
float __shfl_up_sync(unsigned mask, float value, unsigned delta, int width = 32);
#else
#ifdef GM_LAB_RUNTIME
#define EMU_SHUFFLE
#else
#define EMU_SHUFFLE inline
#endif
// Lane `from` (of this lane's `width`-lane segment) publishes `value` to this lane, or this lane
// keeps its own when `from` lies outside the segment or past the warp's last thread.
EMU_SHUFFLE float emu_shuffle(float value, int from, int width) {
    emu_warp& w = (*emu_block_warps)[emu_warp_id];
    const int start = emu_lane / width * width;
    w.values[emu_lane] = value;
    w.gate->arrive_and_wait();
    const float got = from >= start && from < start + width && from < w.lanes ? w.values[from] : value;
    w.gate->arrive_and_wait();  // every lane has read before any publishes again
    return got;
}
EMU_SHUFFLE float __shfl_sync(unsigned, float value, int lane, int width = 32) {
    return emu_shuffle(value, emu_lane / width * width + lane % width, width);
}
EMU_SHUFFLE float __shfl_xor_sync(unsigned, float value, int lane_mask, int width = 32) {
    return emu_shuffle(value, emu_lane ^ lane_mask, width);
}
EMU_SHUFFLE float __shfl_down_sync(unsigned, float value, unsigned delta, int width = 32) {
    return emu_shuffle(value, emu_lane + delta, width);
}
EMU_SHUFFLE float __shfl_up_sync(unsigned, float value, unsigned delta, int width = 32) {
    return emu_shuffle(value, emu_lane - (int)delta, width);
}
#endif

#define __global__
#define __device__
#define __forceinline__ inline
#define __shared__ static
#define __launch_bounds__(...)
using std::max;
using std::min;
// Fast-math intrinsics and the read-only load, as plain C++ (results may differ from the GPU's
// in the last bits).
inline float __expf(float x) { return expf(x); }
inline float __logf(float x) { return logf(x); }
inline float __fdividef(float a, float b) { return a / b; }
inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
template <typename T>
inline T __ldg(const T* p) { return *p; }

#ifdef GM_LAB_TRACE
void __syncthreads();
#else
inline void __syncthreads() { emu_block_barrier->arrive_and_wait(); }

inline void emu_launch(dim3 grid, dim3 block, const std::function<void()>& body) {
    gridDim = grid;
    blockDim = block;
    const unsigned n = block.x * block.y * block.z;
    for (unsigned bz = 0; bz < grid.z; ++bz)
        for (unsigned by = 0; by < grid.y; ++by)
            for (unsigned bx = 0; bx < grid.x; ++bx) {
                std::barrier<> barrier(n);
                emu_block_barrier = &barrier;
                std::vector<emu_warp> warps = emu_warps(n);
                emu_block_warps = &warps;
                std::vector<std::thread> threads;
                threads.reserve(n);
                for (unsigned tz = 0; tz < block.z; ++tz)
                    for (unsigned ty = 0; ty < block.y; ++ty)
                        for (unsigned tx = 0; tx < block.x; ++tx)
                            threads.emplace_back([&, tx, ty, tz, bx, by, bz] {
                                threadIdx = {tx, ty, tz};
                                blockIdx = {bx, by, bz};
                                const unsigned t = tx + block.x * (ty + block.y * tz);
                                emu_lane = t % 32;
                                emu_warp_id = t / 32;
                                body();
                                warps[emu_warp_id].gate->arrive_and_drop();  // nor its warp's shuffles
                                barrier.arrive_and_drop();  // a finished thread no longer holds the block back
                            });
                for (auto& t : threads) t.join();
            }
}
#endif
