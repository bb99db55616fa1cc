// A CPU stand-in for the parts of CUDA the course's kernels use, so their logic can be
// tested without a GPU: every thread of a block is a real std::thread, __syncthreads() is a
// barrier, __shared__ arrays are statics (blocks run one after another). It cannot show
// warp-level timing, races the hardware would hide, or anything about speed.
// With GM_LAB_TRACE defined (the lab's traced build, gpumodel/lab/tracer.py), the launch and
// the barrier live in trace_runtime.cpp, which is compiled without the instrumentation.
#pragma once
#include <algorithm>
#include <barrier>
#include <cmath>
#include <functional>
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

#define __global__
#define __device__
#define __forceinline__ inline
#define __shared__ static
#define __launch_bounds__(...)
using std::max;
using std::min;

#ifdef GM_LAB_TRACE
void __syncthreads();
// Warp shuffles (the traced build only): every lane of the warp names the lane whose value it
// reads, as on the GPU; a lane outside the warp's `width`-lane segment reads its own value.
float __shfl_sync(unsigned mask, float value, int lane, int width = 32);
float __shfl_xor_sync(unsigned mask, float value, int lane_mask, int width = 32);
float __shfl_down_sync(unsigned mask, float value, unsigned delta, int width = 32);
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
                std::vector<std::thread> threads;
                threads.reserve(n);
                for (unsigned tz = 0; tz < block.z; ++tz)
                    for (unsigned ty = 0; ty < block.y; ++ty)
                        for (unsigned tx = 0; tx < block.x; ++tx)
                            threads.emplace_back([&, tx, ty, tz, bx, by, bz] {
                                threadIdx = {tx, ty, tz};
                                blockIdx = {bx, by, bz};
                                body();
                                barrier.arrive_and_drop();  // a finished thread no longer holds the block back
                            });
                for (auto& t : threads) t.join();
            }
}
#endif
