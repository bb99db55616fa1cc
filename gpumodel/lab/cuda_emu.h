// A CPU stand-in for the parts of CUDA the course's kernels use, so their logic can be
// tested without a GPU: every thread of a block is a fiber (its own stack, ucontext) and the
// block's fibers take turns on one OS thread, each running until it waits at __syncthreads()
// or at a warp shuffle, or returns; __shared__ arrays are statics (blocks run one after
// another); the lanes of a warp meet at a gate of their own to shuffle values (__shfl_*_sync,
// float). It cannot show warp-level timing, races the hardware would hide, or anything about
// speed. With GM_LAB_TRACE defined (the lab's traced build, gpumodel/lab/tracer.py), the launch
// and the barrier live in trace_runtime.cpp, which is compiled without the instrumentation.
#pragma once
#include <sys/mman.h>
#include <ucontext.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <vector>

struct dim3 {
    unsigned x, y, z;
    dim3(unsigned x_ = 1, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
};
struct emu_index { unsigned x, y, z; };
// A vector type is assigned whole (a memcpy of its width), so that a float4 built from four
// values and stored is one 128-bit store in the traced build, as on the GPU, not four. (The
// members' initialisers keep a __shared__ float4 array a constant-initialised static: without
// them, that assignment would make g++ guard its initialisation.)
struct float4 {
    float x = 0, y = 0, z = 0, w = 0;
    float4& operator=(const float4& o) { __builtin_memcpy(this, &o, sizeof o); return *this; }
};

inline thread_local emu_index threadIdx, blockIdx;  // the running fiber's, set at each of its turns
inline dim3 blockDim, gridDim;
inline thread_local int emu_lane = 0, emu_warp_id = 0;

#if !defined(GM_LAB_TRACE) || defined(GM_LAB_RUNTIME)
// One block's run: its fibers, whose turn it is, and whether anything moved in this round.
struct emu_fiber { ucontext_t context; char* stack = nullptr; bool done = false; };
struct emu_block_run {
    std::vector<emu_fiber> fibers;
    ucontext_t scheduler;
    unsigned current = 0;
    bool moved = false;  // a fiber arrived at a gate, a gate opened or a fiber returned
    const std::function<void(unsigned)>* body = nullptr;
};
inline emu_block_run* emu_run = nullptr;
constexpr size_t EMU_STACK = 1 << 18;  // bytes of stack per CUDA thread, below a guard page

inline void emu_yield() { swapcontext(&emu_run->fibers[emu_run->current].context, &emu_run->scheduler); }

// A barrier for `expected` fibers: the last to arrive opens it (running `on_open` first, as
// std::barrier's completion), and a fiber that returns no longer holds the others back.
struct emu_gate {
    unsigned expected = 0, arrived = 0, generation = 0;
    void (*on_open)() = nullptr;
    void open() {
        if (on_open) on_open();
        arrived = 0;
        ++generation;
        emu_run->moved = true;
    }
    void arrive_and_wait() {
        const unsigned generation_now = generation;
        emu_run->moved = true;
        if (++arrived == expected) return open();
        while (generation == generation_now) emu_yield();
    }
    void arrive_and_drop() {
        --expected;
        if (arrived && arrived == expected) open();
    }
};
inline emu_gate* emu_block_gate = nullptr;

// A block's warps, for shuffles: each lane publishes its value, the warp's lanes meet, each
// reads the lane it names, and they meet again before any publishes anew. A lane that has
// returned no longer holds its warp back (the launch drops it) and reads as 0.
struct emu_warp {
    emu_gate gate;
    float values[32] = {};
    int lanes = 32;
};
inline std::vector<emu_warp>* emu_block_warps = nullptr;

inline void emu_fiber_main() {
    const unsigned t = emu_run->current;
    (*emu_run->body)(t);
    (*emu_block_warps)[t / 32].gate.arrive_and_drop();  // nor its warp's shuffles
    emu_block_gate->arrive_and_drop();  // a finished thread no longer holds the block back
    emu_run->fibers[t].done = emu_run->moved = true;
}

// Run `body(t)` for t in [0, n), the threads of block `block` of a launch of `shape`, as fibers:
// in turns, thread 0 first, each until it waits or returns, until all have returned.
// `on_barrier` runs each time every live thread has reached __syncthreads (and at none else);
// `on_turn(t)` before each turn of thread t. A round in which no thread moves is a deadlock
// (threads waiting at different barriers): reported, and the process aborts.
inline void emu_run_block(dim3 shape, emu_index block, const std::function<void(unsigned)>& body,
                          void (*on_barrier)() = nullptr, void (*on_turn)(unsigned) = nullptr) {
    static std::vector<char*> stacks;  // one per thread, kept for the next block
    const unsigned n = shape.x * shape.y * shape.z;
    const size_t page = 4096;
    while (stacks.size() < n) {
        void* mem = mmap(nullptr, EMU_STACK + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                         -1, 0);
        if (mem == MAP_FAILED) { std::fprintf(stderr, "the emulator could not map a thread's stack\n"); std::abort(); }
        mprotect(mem, page, PROT_NONE);  // an overflowing stack faults here rather than corrupt its neighbour
        stacks.push_back(static_cast<char*>(mem) + page);
    }
    emu_block_run run;
    run.fibers.resize(n);
    run.body = &body;
    emu_gate gate;
    gate.expected = n;
    gate.on_open = on_barrier;
    std::vector<emu_warp> warps((n + 31) / 32);
    for (unsigned w = 0; w < warps.size(); ++w) warps[w].lanes = warps[w].gate.expected = std::min(32u, n - w * 32);
    emu_run = &run;
    emu_block_gate = &gate;
    emu_block_warps = &warps;
    for (unsigned t = 0; t < n; ++t) {
        emu_fiber& f = run.fibers[t];
        f.stack = stacks[t];
        getcontext(&f.context);
        f.context.uc_stack = {f.stack, 0, EMU_STACK};
        f.context.uc_link = &run.scheduler;
        makecontext(&f.context, emu_fiber_main, 0);
    }
    blockIdx = block;
    for (unsigned live = n; live;) {
        run.moved = false;
        for (unsigned t = 0; t < n; ++t) {
            if (run.fibers[t].done) continue;
            threadIdx = {t % shape.x, t / shape.x % shape.y, t / (shape.x * shape.y)};
            emu_lane = t % 32;
            emu_warp_id = t / 32;
            if (on_turn) on_turn(t);
            run.current = t;
            swapcontext(&run.scheduler, &run.fibers[t].context);
            live -= run.fibers[t].done;
        }
        if (!run.moved && live) {
            std::fprintf(stderr, "deadlock: the threads of block (%u, %u, %u) wait at different barriers or shuffles\n",
                         block.x, block.y, block.z);
            std::abort();
        }
    }
    emu_run = nullptr;
}
#endif

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
    const int lane = emu_lane, start = lane / width * width;
    w.values[lane] = value;
    w.gate.arrive_and_wait();
    const float got = from >= start && from < start + width && from < w.lanes ? w.values[from] : value;
    w.gate.arrive_and_wait();  // every lane has read before any publishes again
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
inline void __syncthreads() { emu_block_gate->arrive_and_wait(); }

inline void emu_launch(dim3 grid, dim3 block, const std::function<void()>& body) {
    gridDim = grid;
    blockDim = block;
    const std::function<void(unsigned)> thread = [&](unsigned) { body(); };
    for (unsigned bz = 0; bz < grid.z; ++bz)
        for (unsigned by = 0; by < grid.y; ++by)
            for (unsigned bx = 0; bx < grid.x; ++bx) emu_run_block(block, {bx, by, bz}, thread);
}
#endif
