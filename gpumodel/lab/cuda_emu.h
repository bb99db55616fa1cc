// A CPU stand-in for the parts of CUDA the course's kernels use, so their logic can be
// tested without a GPU: every thread of a block is a fiber (its own stack) and the
// block's fibers take turns on one OS thread, each running until it waits at __syncthreads()
// or at a warp shuffle, or returns; __shared__ arrays are statics (blocks run one after
// another), `extern __shared__` ones point at one buffer of the launch's shared_mem bytes
// (reader.py rewrites their declaration); the lanes of a warp meet at a gate of their own to
// shuffle values of any 8-, 16-, 32- or 64-bit type, vote and sync; an atomic is a plain
// read-modify-write (one OS thread). It cannot show warp-level timing, races the hardware would
// hide, or anything about speed. With GM_LAB_TRACE defined (the lab's traced build, gpumodel/lab/builder.py), the launch
// and the barrier live in trace_runtime.cpp, which is compiled without the instrumentation.
#pragma once
#include <sys/mman.h>
#include <ucontext.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <memory>
#include <type_traits>
#include <utility>
#include <vector>

struct dim3 {
    unsigned x, y, z;
    dim3(unsigned x_ = 1, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
};
struct emu_index { unsigned x, y, z; };
constexpr int warpSize = 32;

// CUDA's vector types (float2, int4, double2, uchar4 ...), aligned as CUDA aligns them, and
// make_*. A vector is assigned whole (a memcpy of its width), so that one built from its values
// and stored is one access of its width in the traced build, as on the GPU, not one per member.
// (The members' initialisers keep a __shared__ array of them a constant-initialised static:
// without them, that assignment would make g++ guard its initialisation.)
#define EMU_VECTOR(T, NAME, ALIGN, ...)                                                              \
    struct alignas(ALIGN) NAME {                                                                     \
        T __VA_ARGS__;                                                                               \
        NAME& operator=(const NAME& o) { __builtin_memcpy(this, &o, sizeof o); return *this; }       \
    };
#define EMU_VECTORS(T, NAME)                                                                         \
    EMU_VECTOR(T, NAME##1, sizeof(T), x = 0)                                                         \
    EMU_VECTOR(T, NAME##2, std::min<size_t>(16, 2 * sizeof(T)), x = 0, y = 0)                        \
    EMU_VECTOR(T, NAME##3, sizeof(T), x = 0, y = 0, z = 0)                                           \
    EMU_VECTOR(T, NAME##4, std::min<size_t>(16, 4 * sizeof(T)), x = 0, y = 0, z = 0, w = 0)          \
    inline NAME##1 make_##NAME##1(T x) { return {x}; }                                               \
    inline NAME##2 make_##NAME##2(T x, T y) { return {x, y}; }                                       \
    inline NAME##3 make_##NAME##3(T x, T y, T z) { return {x, y, z}; }                               \
    inline NAME##4 make_##NAME##4(T x, T y, T z, T w) { return {x, y, z, w}; }
EMU_VECTORS(signed char, char)
EMU_VECTORS(unsigned char, uchar)
EMU_VECTORS(short, short)
EMU_VECTORS(unsigned short, ushort)
EMU_VECTORS(int, int)
EMU_VECTORS(unsigned, uint)
EMU_VECTORS(long, long)
EMU_VECTORS(unsigned long, ulong)
EMU_VECTORS(long long, longlong)
EMU_VECTORS(unsigned long long, ulonglong)
EMU_VECTORS(float, float)
EMU_VECTORS(double, double)
#undef EMU_VECTORS
#undef EMU_VECTOR

inline thread_local emu_index threadIdx, blockIdx;  // the running fiber's, set at each of its turns
// Each at a 64 KiB stretch of its own, as a __shared__ array is: never in the stretch past an array's end,
// where a kernel's read out of bounds would look like a read of blockDim.
alignas(65536) inline dim3 blockDim;
alignas(65536) inline dim3 gridDim;
inline thread_local int emu_lane = 0, emu_warp_id = 0;
inline size_t emu_dynamic_shared_bytes = 0;  // this launch's shared_mem
char* emu_dynamic_shared();  // the launch's dynamic shared memory, defined below

#if !defined(GM_LAB_TRACE) || defined(GM_LAB_RUNTIME)
// One block's run: its fibers, whose turn it is, and whether anything moved in this round.
//
// A fiber's switch on x86-64 saves only the registers a call must keep (rbx, rbp, r12-r15; no fiber
// changes the floating-point control words) on its own stack and changes the stack pointer: about a hundred times cheaper than
// swapcontext, which also asks the kernel for the signal mask (a system call) at every switch, and
// which a block of 1024 threads barrier after barrier spends most of a launch on. Elsewhere, ucontext.
#if defined(__x86_64__)
struct emu_context { void* sp = nullptr; };
extern "C" void emu_switch(void** save, void* to);  // defined once below, weak: this header is in several files
asm(R"(
    .text
    .weak emu_switch
    .type emu_switch, @function
emu_switch:
    pushq %rbp
    pushq %rbx
    pushq %r12
    pushq %r13
    pushq %r14
    pushq %r15
    movq %rsp, (%rdi)
    movq %rsi, %rsp
    popq %r15
    popq %r14
    popq %r13
    popq %r12
    popq %rbx
    popq %rbp
    ret
    .size emu_switch, .-emu_switch
)");
inline void emu_context_switch(emu_context& from, emu_context& to) { emu_switch(&from.sp, to.sp); }
// A fiber that will start in `entry` (which never returns) on the `size` bytes of stack at `stack`:
// the frame emu_switch pops, its return address `entry`, above it a null return address for
// `entry` itself, the stack aligned as at a call.
inline void emu_context_start(emu_context& c, char* stack, size_t size, void (*entry)()) {
    auto* top = reinterpret_cast<uint64_t*>(reinterpret_cast<uintptr_t>(stack + size) & ~uintptr_t(15));
    uint64_t* frame = top - 8;
    for (int r = 0; r < 6; ++r) frame[r] = 0;  // r15, r14, r13, r12, rbx, rbp
    frame[6] = reinterpret_cast<uint64_t>(entry);
    frame[7] = 0;
    c.sp = frame;
}
inline char* emu_context_sp(const emu_context& c) { return static_cast<char*>(c.sp); }
#else
struct emu_context { ucontext_t uc; };
inline void emu_context_switch(emu_context& from, emu_context& to) { swapcontext(&from.uc, &to.uc); }
inline void emu_context_start(emu_context& c, char* stack, size_t size, void (*entry)()) {
    getcontext(&c.uc);
    c.uc.uc_stack = {stack, 0, size};
    c.uc.uc_link = nullptr;
    makecontext(&c.uc, entry, 0);
}
inline char* emu_context_sp(const emu_context&) { return nullptr; }  // not known here: a fiber's whole stack is kept
#endif
struct emu_fiber { emu_context context; char* stack = nullptr; unsigned slot = 0; bool done = false; };
struct emu_block_run {
    std::vector<emu_fiber> fibers;
    emu_context scheduler;
    unsigned current = 0, round = 0;  // whose turn it is; the scheduler's rounds so far
    bool moved = false;  // a fiber arrived at a gate, a gate opened or a fiber returned
    unsigned at_grid = 0;  // fibers waiting at the grid's barrier
    const std::function<void(unsigned)>* body = nullptr;
};
inline emu_block_run* emu_run = nullptr;
constexpr size_t EMU_STACK = 1 << 18;  // bytes of stack per CUDA thread, below a guard page

inline void emu_yield() { emu_context_switch(emu_run->fibers[emu_run->current].context, emu_run->scheduler); }

// A barrier that not every thread of the block reaches: `waited` of the block's `threads` waited
// at the __syncthreads() that returns to `site`, the others returned without reaching it. The
// traced runtime (trace_runtime.cpp) reports it to the runner; here, on stderr. Either way the
// process ends. `emu_barrier_sites`: a barrier opened with `waited` threads at the call that
// returns to `site`, the others at `other`, a call elsewhere in the code. That is two barriers
// only where the two calls are two places in the source, not one the compiler copied (it does,
// into each path that reaches it), so the traced runtime records the pair for the runner to
// compare their lines; here, without lines, nothing is checked.
#ifdef GM_LAB_RUNTIME
[[noreturn]] void emu_barrier_fault(unsigned waited, unsigned threads, const void* site);
void emu_barrier_sites(unsigned waited, unsigned threads, const void* site, const void* other);
#else
[[noreturn]] inline void emu_barrier_fault(unsigned waited, unsigned threads, const void*) {
    std::fprintf(stderr, "barrier not reached by every thread of the block: %u of %u threads waited at a __syncthreads(), "
                 "the others returned\n", waited, threads);
    std::abort();
}
inline void emu_barrier_sites(unsigned, unsigned, const void*, const void*) {}
#endif
// A grid barrier that cannot open, at the grid.sync() that returns to `site`: `waited` of the
// launch's `blocks` wait there and the others returned; `blocks` 0: a launch that is not cooperative.
#ifdef GM_LAB_RUNTIME
[[noreturn]] void emu_grid_fault(const void* site, unsigned waited, unsigned blocks);
#else
[[noreturn]] inline void emu_grid_fault(const void*, unsigned waited, unsigned blocks) {
    if (blocks) std::fprintf(stderr, "deadlock: %u of the grid's %u blocks wait at grid.sync(), the others returned\n", waited, blocks);
    else std::fprintf(stderr, "grid.sync() in a launch that is not cooperative (cudaLaunchCooperativeKernel)\n");
    std::abort();
}
#endif

// A barrier for `expected` fibers: the last to arrive opens it (running `on_open` first, as
// std::barrier's completion), and a fiber that returns no longer holds the others back. The
// block's barrier (`whole`, its thread count) must also open with every thread of the block at
// one __syncthreads() of the source: "__syncthreads() is allowed in conditional code but only if
// the conditional evaluates identically across the entire thread block, otherwise the code
// execution is likely to hang or produce unintended side effects" (CUDA C++ Programming Guide,
// Synchronization Functions; references.bib: nvidia_cuda_guide). So a barrier that opens after
// some threads returned without reaching it (`if (i >= n) return;` before a __syncthreads(),
// where the guard takes some threads of a block but not all) is a fault (emu_barrier_fault), not
// the wait the fibers would otherwise make of it, and so are threads at two __syncthreads() of
// the source (emu_barrier_sites). Threads that return after the block's last barrier are no
// fault. A warp's gate (whole = 0) lets lanes drop.
struct emu_gate {
    unsigned expected = 0, arrived = 0, generation = 0;
    void (*on_open)() = nullptr;
    unsigned whole = 0;
    const void *site = nullptr, *other = nullptr;  // where this generation's first arrival waits; another site, if any
    unsigned at_site = 0;  // arrivals at `site`
    void open() {
        if (whole && expected < whole) emu_barrier_fault(arrived, whole, site);
        if (whole && other) emu_barrier_sites(at_site, whole, site, other);
        if (on_open) on_open();
        arrived = 0;
        ++generation;
        emu_run->moved = true;
    }
    void arrive_and_wait(const void* at = nullptr) {
        const unsigned generation_now = generation;
        emu_run->moved = true;
        if (!arrived) site = at, other = nullptr, at_site = 0;
        if (at == site) ++at_site;
        else if (!other) other = at;
        if (++arrived == expected) return open();
        while (generation == generation_now) emu_yield();
    }
    void arrive_and_drop() {
        --expected;
        if (arrived && arrived == expected) open();
    }
};
inline emu_gate* emu_block_gate = nullptr;

// A block's warps, for shuffles: each lane publishes its value, the lanes of the call's mask
// meet, each reads the lane it names, and they meet again before any publishes anew. Only the
// mask's lanes meet: eight lanes may shuffle with mask 0xff while the others wait at a
// __syncthreads() (legal CUDA). A lane that has returned no longer holds its warp back (the
// launch drops it) and reads as 0.
struct emu_warp {
    uint64_t values[32] = {};  // each lane's published bits
    int lanes = 32;
    unsigned live = 0;  // the lanes that have not returned
    unsigned arrived = 0;  // the lanes waiting at a meeting
    unsigned wanted[32] = {};  // the lanes each waiting lane meets with (its mask, itself included)
    unsigned left[32] = {};  // per lane, the meetings it has left
    unsigned generation = 0;  // meetings opened, of any lanes: the race checker's warp-level syncs
    // Per lane, at coalesced_threads(): where it waits (null: nowhere), the round it came, and its group once formed.
    const void* coalescing[32] = {};
    unsigned since[32] = {}, coalesced[32] = {};
    void open_ready() {
        for (unsigned waiting = arrived; waiting; waiting &= waiting - 1) {  // each lane waiting at a meeting
            const int lane = std::countr_zero(waiting);
            const unsigned need = wanted[lane] & live;
            if ((arrived >> lane & 1u) && (arrived & need) == need) {
                for (int l = 0; l < lanes; ++l) left[l] += need >> l & 1u;
                arrived &= ~need;
                ++generation;
                emu_run->moved = true;
            }
        }
    }
    void meet(unsigned mask) {
        const int lane = emu_lane;
        const unsigned here = left[lane];
        wanted[lane] = mask | 1u << lane;
        arrived |= 1u << lane;
        emu_run->moved = true;
        open_ready();
        while (left[lane] == here) emu_yield();
    }
    void drop(int lane) {
        live &= ~(1u << lane);
        open_ready();
    }
};
inline std::vector<emu_warp>* emu_block_warps = nullptr;

// The running thread ends (its kernel returned, or a device-side assert stopped it): it no longer
// holds its warp's shuffles or the block's barrier back, and the scheduler never resumes it.
[[noreturn]] inline void emu_thread_exit() {
    const unsigned t = emu_run->current;
    (*emu_block_warps)[t / 32].drop(t % 32);
    emu_block_gate->arrive_and_drop();
    emu_run->fibers[t].done = emu_run->moved = true;
    emu_yield();
    std::abort();
}

[[noreturn]] inline void emu_fiber_main() {
    (*emu_run->body)(emu_run->current);
    emu_thread_exit();
}


// The grid's barrier (cg::this_grid().sync()): only a cooperative launch's blocks may wait for each other
// ("grid.sync() ... requires the kernel to be launched via cudaLaunchCooperativeKernel", CUDA C++
// Programming Guide, Cooperative Groups, Grid Synchronization; references.bib: nvidia_cuda_guide).
// Its blocks run as any launch's do, one after another, until every live thread of a block waits at
// the grid's barrier: the block is put aside (its threads' stacks and its shared memory kept) and the
// next one runs; when every block waits, the barrier opens and each is brought back in turn.
inline bool emu_cooperative = false;  // the running launch is cooperative
inline unsigned emu_grid_generation = 0;  // grid barriers opened in this launch
inline const void* emu_grid_site = nullptr;  // where the grid's barrier was last waited at
// The __shared__ arrays a block put aside keeps, (where, bytes) each; the launch's dynamic shared
// memory is kept besides. A whole program's runtime lists them (program_runtime.cpp).
inline std::vector<std::pair<char*, size_t>> emu_shared_arrays;
// The index after `at` in a block of `shape`, x fastest.
inline emu_index emu_next(emu_index at, dim3 shape) {
    if (++at.x < shape.x) return at;
    if (++at.y < shape.y) return {0, at.y, at.z};
    return {0, 0, at.z + 1};
}

// Stacks are mapped as threads first need them and kept for the next block. A thread takes one at its
// first turn, the one its predecessor left if that returned without waiting: a kernel without
// barriers runs its threads one after another on one stack, which stays in the cache. Every block
// takes the same stacks; one put aside at a grid barrier copies out the part its threads use.
inline std::vector<char*> emu_stacks;

// One block's threads, `body(t)` for t in [0, n), as fibers: `resume` runs them in turns, thread 0
// first, each until it waits or returns, until all have returned (false) or every live thread waits
// at the grid's barrier (true). `on_barrier` runs each time every live thread has reached
// __syncthreads (and at none else); `on_turn(t)` before each turn of thread t. A round in which no
// thread moves is a deadlock (threads waiting at different barriers): reported, and the process aborts.
struct emu_block_exec {
    dim3 shape;
    emu_index block;
    unsigned n, live;
    emu_block_run run;
    emu_gate gate;
    std::vector<emu_warp> warps;
    void (*on_turn)(unsigned);
    std::vector<unsigned> free_stacks;  // this block's stacks no thread holds, the one freed last at the back
    unsigned taken = 0;  // emu_stacks[0, taken) are this block's
    std::vector<std::string> kept;  // while put aside: per thread, its stack from its stack pointer up
    std::string kept_shared;  // and its shared memory

    emu_block_exec(dim3 shape_, emu_index block_, const std::function<void(unsigned)>& body, void (*on_barrier)(),
                   void (*turn)(unsigned))
        : shape(shape_), block(block_), n(shape_.x * shape_.y * shape_.z), live(n), warps((n + 31) / 32), on_turn(turn) {
        run.fibers.resize(n);
        run.body = &body;
        gate.expected = gate.whole = n;
        gate.on_open = on_barrier;
        for (unsigned w = 0; w < warps.size(); ++w) {
            warps[w].lanes = std::min(32u, n - w * 32);
            warps[w].live = warps[w].lanes == 32 ? ~0u : (1u << warps[w].lanes) - 1;
        }
    }
    unsigned take_stack() {
        if (!free_stacks.empty()) {
            const unsigned slot = free_stacks.back();
            free_stacks.pop_back();
            return slot;
        }
        if (taken == emu_stacks.size()) {
            const size_t page = 4096;
            void* mem = mmap(nullptr, EMU_STACK + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                             -1, 0);
            if (mem == MAP_FAILED) { std::fprintf(stderr, "the emulator could not map a thread's stack\n"); std::abort(); }
            mprotect(mem, page, PROT_NONE);  // an overflowing stack faults here rather than corrupt its neighbour
            emu_stacks.push_back(static_cast<char*>(mem) + page);
        }
        return taken++;
    }
    // The top of thread t's stack: each a cache line further down than the last (64 apart), since tops
    // a page-multiple apart would all fall in one set of the L1 cache and evict each other at every switch.
    char* top(unsigned t) const { return run.fibers[t].stack + EMU_STACK - run.fibers[t].slot % 64 * 64; }
    bool resume() {
        emu_run = &run;
        emu_block_gate = &gate;
        emu_block_warps = &warps;
        blockIdx = block;
        while (live) {
            run.moved = false;
            ++run.round;
            emu_index at{0, 0, 0};  // thread t's index in the block
            for (unsigned t = 0; t < n; ++t, at = emu_next(at, shape)) {
                emu_fiber& f = run.fibers[t];
                if (f.done) continue;
                if (!f.stack) {
                    f.slot = take_stack();
                    f.stack = emu_stacks[f.slot];
                    emu_context_start(f.context, f.stack, top(t) - f.stack, emu_fiber_main);
                }
                threadIdx = at;
                emu_lane = t % 32;
                emu_warp_id = t / 32;
                if (on_turn) on_turn(t);
                run.current = t;
                emu_context_switch(run.scheduler, f.context);
                if (f.done) {
                    --live;
                    free_stacks.push_back(f.slot);
                }
            }
            if (!run.moved && live) {
                if (run.at_grid == live) break;
                std::fprintf(stderr, "deadlock: the threads of block (%u, %u, %u) wait at different barriers or shuffles\n",
                             block.x, block.y, block.z);
                std::abort();
            }
        }
        emu_run = nullptr;
        return live;
    }
    // Copy out what another block's run would overwrite: the live threads' stacks, the shared memory.
    void put_aside() {
        kept.assign(n, {});
        for (unsigned t = 0; t < n; ++t)
            if (run.fibers[t].stack && !run.fibers[t].done) {
                char* sp = emu_context_sp(run.fibers[t].context);
                if (!sp) sp = run.fibers[t].stack;
                kept[t].assign(sp, top(t));
            }
        kept_shared.clear();
        for (auto [at, bytes] : emu_shared_arrays) kept_shared.append(at, bytes);
        kept_shared.append(emu_dynamic_shared(), emu_dynamic_shared_bytes);
    }
    void bring_back() {
        for (unsigned t = 0; t < n; ++t)
            if (!kept[t].empty()) std::copy(kept[t].begin(), kept[t].end(), top(t) - kept[t].size());
        size_t from = 0;
        for (auto [at, bytes] : emu_shared_arrays) from += kept_shared.copy(at, bytes, from);
        kept_shared.copy(emu_dynamic_shared(), emu_dynamic_shared_bytes, from);
        kept.clear();
        kept_shared.clear();
        run.at_grid = 0;
    }
};

// A block of a launch that is not cooperative, run to its end.
inline void emu_run_block(dim3 shape, emu_index block, const std::function<void(unsigned)>& body,
                          void (*on_barrier)() = nullptr, void (*on_turn)(unsigned) = nullptr) {
    emu_block_exec(shape, block, body, on_barrier, on_turn).resume();
}

// A cooperative launch's `blocks` (block_index(b) the index of the b-th), each block of `shape`, its
// threads running `body`, `on_block(b)` before each turn of block b.
template <class Index>
void emu_run_grid(unsigned blocks, Index block_index, dim3 shape, const std::function<void(unsigned)>& body,
                  void (*on_block)(unsigned)) {
    emu_cooperative = true;
    emu_grid_generation = 0;
    std::vector<std::pair<unsigned, std::unique_ptr<emu_block_exec>>> waiting, next;
    unsigned running = blocks;  // blocks that have not returned
    for (unsigned b = 0; b < blocks; ++b) {
        auto e = std::make_unique<emu_block_exec>(shape, block_index(b), body, nullptr, nullptr);
        if (on_block) on_block(b);
        if (e->resume()) {
            e->put_aside();
            waiting.emplace_back(b, std::move(e));
        }
    }
    while (!waiting.empty()) {
        if (waiting.size() < running) emu_grid_fault(emu_grid_site, waiting.size(), running);
        running = waiting.size();
        ++emu_grid_generation;
        for (auto& [b, e] : waiting) {
            e->bring_back();
            if (on_block) on_block(b);
            if (e->resume()) {
                e->put_aside();
                next.emplace_back(b, std::move(e));
            }
        }
        waiting.swap(next);
        next.clear();
    }
    emu_cooperative = false;
}
#endif

constexpr size_t EMU_DYNAMIC_SHARED_MAX = 227 * 1024;  // the most a launch may ask for (reader.MAX_DYNAMIC_SHARED)

// The traced kernel only declares the warp's gates and the dynamic shared memory: instantiated
// there, their code would be instrumented, so trace_runtime.cpp (GM_LAB_RUNTIME, not
// instrumented) defines them once.
// A barrier of libcu++'s (cuda::barrier, <cuda/barrier>) for other than every thread of the block:
// `pending` arrivals before its phase completes, `expected` at the start of each; in the kernel's memory.
struct emu_phase_barrier { unsigned expected = 0, pending = 0, phase = 0; };
enum emu_shuffle_kind { EMU_SHFL_IDX, EMU_SHFL_XOR, EMU_SHFL_DOWN, EMU_SHFL_UP };
#if defined(GM_LAB_TRACE) && !defined(GM_LAB_RUNTIME)
uint64_t emu_shuffle(uint64_t bits, emu_shuffle_kind kind, int lane, int width, unsigned mask);
unsigned emu_ballot(bool predicate, unsigned mask);
unsigned emu_activemask();
unsigned emu_match_any(uint64_t bits, unsigned mask);
unsigned emu_coalesce(const void* site);
void emu_syncwarp(unsigned mask);
char* emu_dynamic_shared();
void emu_grid_sync();
bool emu_cooperative_launch();
unsigned emu_barrier_arrive(emu_phase_barrier* b, unsigned count);
void emu_barrier_wait(const emu_phase_barrier* b, unsigned phase);
#else
#ifdef GM_LAB_RUNTIME
#define EMU_RUNTIME
#else
#define EMU_RUNTIME inline
#endif
// The lane that `kind` and `lane` (a lane, a lane mask or a delta) name publishes `bits` to this
// lane, or this lane keeps its own when that lies outside this lane's `width`-lane segment or past
// the warp's last thread.
EMU_RUNTIME uint64_t emu_shuffle(uint64_t bits, emu_shuffle_kind kind, int lane_or_delta, int width, unsigned mask) {
    emu_warp& w = (*emu_block_warps)[emu_warp_id];
    const int lane = emu_lane, start = lane / width * width;
    const int from = kind == EMU_SHFL_IDX ? start + lane_or_delta % width
                     : kind == EMU_SHFL_XOR ? lane ^ lane_or_delta
                     : kind == EMU_SHFL_DOWN ? lane + lane_or_delta : lane - lane_or_delta;
    w.values[lane] = bits;
    w.meet(mask);
    const uint64_t got = from >= start && from < start + width && from < w.lanes ? w.values[from] : bits;
    w.meet(mask);  // every lane has read before any publishes again
    return got;
}
// The lanes of this warp that have not returned (the lab runs a warp's lanes in step: no divergence).
EMU_RUNTIME unsigned emu_activemask() {
    unsigned mask = 0;
    for (int lane = 0; lane < (*emu_block_warps)[emu_warp_id].lanes; ++lane)
        mask |= unsigned(!emu_run->fibers[emu_warp_id * 32 + lane].done) << lane;
    return mask;
}
// Bit l set where live lane l's `predicate` holds: the lanes live when they met (read before the
// second meeting, after which a lane may return before another has read the votes).
EMU_RUNTIME unsigned emu_ballot(bool predicate, unsigned mask) {
    emu_warp& w = (*emu_block_warps)[emu_warp_id];
    w.values[emu_lane] = predicate;
    w.meet(mask);
    unsigned votes = 0;
    for (int lane = 0; lane < w.lanes; ++lane) votes |= unsigned(w.values[lane] != 0) << lane;
    const unsigned live = emu_activemask();
    w.meet(mask);
    return votes & mask & live;
}
// The lanes of `mask` (live when they met) whose `bits` equal this lane's: __match_any_sync.
EMU_RUNTIME unsigned emu_match_any(uint64_t bits, unsigned mask) {
    emu_warp& w = (*emu_block_warps)[emu_warp_id];
    w.values[emu_lane] = bits;
    w.meet(mask);
    unsigned same = 0;
    for (int lane = 0; lane < w.lanes; ++lane) same |= unsigned(w.values[lane] == bits) << lane;
    const unsigned live = emu_activemask();
    w.meet(mask);
    return same & mask & live;
}
// coalesced_threads() called at `site`: the lanes of this warp that come to it together. A lane waits
// one round of the scheduler (every other lane of the warp has had its turn: those that run in step
// with it have come too, the others wait elsewhere or have returned), then the first of them to
// run again forms the group of every lane at `site`. Lanes that diverged and came later form their
// own, as a GPU since Volta may also have them do (CUDA C++ Programming Guide, Independent Thread Scheduling).
EMU_RUNTIME unsigned emu_coalesce(const void* site) {
    emu_warp& w = (*emu_block_warps)[emu_warp_id];
    const int lane = emu_lane;
    w.coalescing[lane] = site;
    w.since[lane] = emu_run->round;
    w.coalesced[lane] = 0;
    emu_run->moved = true;
    while (!w.coalesced[lane]) {
        if (emu_run->round != w.since[lane]) {
            unsigned group = 0;
            for (int l = 0; l < w.lanes; ++l) group |= unsigned(w.coalescing[l] == site) << l;
            for (int l = 0; l < w.lanes; ++l)
                if (group >> l & 1u) w.coalesced[l] = group, w.coalescing[l] = nullptr;
            emu_run->moved = true;
        } else {
            emu_yield();
        }
    }
    return w.coalesced[lane];
}
EMU_RUNTIME void emu_syncwarp(unsigned mask) { (*emu_block_warps)[emu_warp_id].meet(mask); }
EMU_RUNTIME bool emu_cooperative_launch() { return emu_cooperative; }
// Arrive `count` times at `b`: the phase arrived at; the last arrival completes it.
EMU_RUNTIME unsigned emu_barrier_arrive(emu_phase_barrier* b, unsigned count) {
    const unsigned phase = b->phase;
    emu_run->moved = true;
    if ((b->pending -= std::min(count, b->pending)) == 0) {
        ++b->phase;
        b->pending = b->expected;
    }
    return phase;
}
EMU_RUNTIME void emu_barrier_wait(const emu_phase_barrier* b, unsigned phase) {
    while (b->phase == phase) emu_yield();
}
EMU_RUNTIME __attribute__((noinline)) void emu_grid_sync() {
    if (!emu_cooperative) emu_grid_fault(__builtin_return_address(0), 0, 0);
    emu_grid_site = __builtin_return_address(0);
    const unsigned generation_now = emu_grid_generation;
    emu_block_gate->arrive_and_wait(__builtin_return_address(0));  // the grid's barrier is also the block's
    ++emu_run->at_grid;
    emu_run->moved = true;
    while (emu_grid_generation == generation_now) emu_yield();
}
// The launch's dynamic shared memory: mapped once at one address (an `extern __shared__` array
// declared at namespace scope points there too), outside the executable's statics, so an access
// past the launch's shared_mem bytes is none of the kernel's memory.
EMU_RUNTIME char* emu_dynamic_shared() {
    static char* const buffer = static_cast<char*>(
        mmap(nullptr, EMU_DYNAMIC_SHARED_MAX, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0));
    return buffer;
}
#endif

#define EMU_INLINE inline __attribute__((always_inline))  // inlined: a traced access stays on the kernel's line
template <size_t N>
using emu_bits = std::conditional_t<N == 1, uint8_t, std::conditional_t<N == 2, uint16_t,
                                                                        std::conditional_t<N == 4, uint32_t, uint64_t>>>;

// Shuffles of any 8-, 16-, 32- or 64-bit type, its bits passed unchanged.
template <class T>
EMU_INLINE T emu_shuffled(T value, emu_shuffle_kind kind, int lane, int width, unsigned mask) {
    static_assert(std::is_trivially_copyable_v<T> && (sizeof(T) == 1 || sizeof(T) == 2 || sizeof(T) == 4 || sizeof(T) == 8),
                  "a shuffle moves an 8-, 16-, 32- or 64-bit value");
    using Bits = emu_bits<sizeof(T)>;
    return std::bit_cast<T>(static_cast<Bits>(emu_shuffle(std::bit_cast<Bits>(value), kind, lane, width, mask)));
}
// Shuffles of any trivially copyable type whose size is a whole number of 32-bit words, a word at
// a time (cooperative groups' tiles take such types; the __shfl_*_sync intrinsics do not).
template <class T>
EMU_INLINE T emu_shuffled_any(T value, emu_shuffle_kind kind, int lane, int width, unsigned mask) {
    if constexpr (sizeof(T) == 1 || sizeof(T) == 2 || sizeof(T) == 4 || sizeof(T) == 8) {
        return emu_shuffled(value, kind, lane, width, mask);
    } else {
        static_assert(sizeof(T) % 4 == 0, "a tile shuffles whole 32-bit words");
        std::array<uint32_t, sizeof(T) / 4> words;
        __builtin_memcpy(&words, &value, sizeof(T));  // a vector type copies its bytes, as the GPU's registers hold them
        for (auto& word : words) word = (uint32_t)emu_shuffle(word, kind, lane, width, mask);
        __builtin_memcpy(&value, &words, sizeof(T));
        return value;
    }
}
template <class T>
EMU_INLINE T __shfl_sync(unsigned mask, T value, int lane, int width = 32) {
    return emu_shuffled(value, EMU_SHFL_IDX, lane, width, mask);
}
template <class T>
EMU_INLINE T __shfl_xor_sync(unsigned mask, T value, int lane_mask, int width = 32) {
    return emu_shuffled(value, EMU_SHFL_XOR, lane_mask, width, mask);
}
template <class T>
EMU_INLINE T __shfl_down_sync(unsigned mask, T value, unsigned delta, int width = 32) {
    return emu_shuffled(value, EMU_SHFL_DOWN, (int)delta, width, mask);
}
template <class T>
EMU_INLINE T __shfl_up_sync(unsigned mask, T value, unsigned delta, int width = 32) {
    return emu_shuffled(value, EMU_SHFL_UP, (int)delta, width, mask);
}
// Votes: a lane of `mask` that has returned votes no.
inline unsigned __activemask() { return emu_activemask(); }
// PTX's special registers as inline assembly reads them, `asm("mov.u32 %0, %%laneid;" : "=r"(lane))`
// (reader.py rewrites such a statement into a call of these; PTX ISA, "Special Registers"):
// the thread's lane, its warp in the block, and the masks of the lanes below, at or above it
// (from the thread's index in the block, which the traced build reads as none of the kernel's memory).
inline unsigned emu_thread_rank() { return (threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x; }
inline unsigned emu_sreg_laneid() { return emu_thread_rank() % 32; }
inline unsigned emu_sreg_warpid() { return emu_thread_rank() / 32; }
inline unsigned emu_sreg_lanemask_eq() { return 1u << emu_sreg_laneid(); }
inline unsigned emu_sreg_lanemask_lt() { return emu_sreg_lanemask_eq() - 1; }
inline unsigned emu_sreg_lanemask_le() { return emu_sreg_lanemask_lt() | emu_sreg_lanemask_eq(); }
inline unsigned emu_sreg_lanemask_gt() { return ~emu_sreg_lanemask_le(); }
inline unsigned emu_sreg_lanemask_ge() { return ~emu_sreg_lanemask_lt(); }
inline unsigned __ballot_sync(unsigned mask, int predicate) { return emu_ballot(predicate, mask); }
inline int __any_sync(unsigned mask, int predicate) { return __ballot_sync(mask, predicate) != 0; }
// All: no lane of the meeting votes against (the live mask read after it would miss lanes that have since returned).
inline int __all_sync(unsigned mask, int predicate) { return __ballot_sync(mask, !predicate) == 0; }
inline void __syncwarp(unsigned mask = 0xffffffff) { emu_syncwarp(mask); }
template <class T>
EMU_INLINE unsigned __match_any_sync(unsigned mask, T value) {
    static_assert(std::is_integral_v<T> || std::is_floating_point_v<T>, "__match_any_sync compares a 32- or 64-bit value");
    return emu_match_any(std::bit_cast<emu_bits<sizeof(T)>>(value), mask);
}
// __reduce_*_sync: the values of the lanes of `mask` that have not returned, read lane by lane.
template <class T, class Op>
EMU_INLINE T emu_reduce(unsigned mask, T value, Op op) {
    const unsigned lanes = mask & emu_activemask();
    T result = 0;
    for (int lane = 0, first = 1; lane < 32; ++lane) {
        const T got = __shfl_sync(mask, value, lane);
        if (lanes >> lane & 1) result = first ? got : op(result, got), first = 0;
    }
    return result;
}
#define EMU_REDUCE(NAME, T, EXPR) \
    inline T __reduce_##NAME##_sync(unsigned mask, T v) { return emu_reduce(mask, v, [](T a, T b) { return EXPR; }); }
EMU_REDUCE(add, unsigned, a + b)
EMU_REDUCE(add, int, a + b)
EMU_REDUCE(min, unsigned, std::min(a, b))
EMU_REDUCE(min, int, std::min(a, b))
EMU_REDUCE(max, unsigned, std::max(a, b))
EMU_REDUCE(max, int, std::max(a, b))
EMU_REDUCE(and, unsigned, a & b)
EMU_REDUCE(or, unsigned, a | b)
EMU_REDUCE(xor, unsigned, a ^ b)
#undef EMU_REDUCE

// Atomics. The fibers take turns on one OS thread, so an atomic is a plain read-modify-write;
// its load and store are __atomic builtins, which -fsanitize=thread turns into
// __tsan_atomicN_load/_store: trace_runtime.cpp records the load as the atomic's one access of
// its width (global or shared, by its address) and the store as none.
template <class T, class Update>
EMU_INLINE T emu_atomic(T* address, Update update) {
    using Bits = emu_bits<sizeof(T)>;
    Bits* word = reinterpret_cast<Bits*>(address);
    const T old = std::bit_cast<T>(__atomic_load_n(word, __ATOMIC_RELAXED));
    __atomic_store_n(word, std::bit_cast<Bits>(static_cast<T>(update(old))), __ATOMIC_RELAXED);
    return old;
}
#define EMU_ATOMIC(NAME, EXPR) \
    template <class T, class V> \
    EMU_INLINE T NAME(T* address, V value) { return emu_atomic(address, [=](T old) { return EXPR; }); }
EMU_ATOMIC(atomicAdd, old + value)
EMU_ATOMIC(atomicSub, old - value)
EMU_ATOMIC(atomicExch, value)
EMU_ATOMIC(atomicMin, std::min<T>(old, value))
EMU_ATOMIC(atomicMax, std::max<T>(old, value))
EMU_ATOMIC(atomicAnd, old & value)
EMU_ATOMIC(atomicOr, old | value)
EMU_ATOMIC(atomicXor, old ^ value)
EMU_ATOMIC(atomicInc, old >= (T)value ? 0 : old + 1)
EMU_ATOMIC(atomicDec, old == 0 || old > (T)value ? (T)value : old - 1)
template <class T, class C, class V>
EMU_INLINE T atomicCAS(T* address, C compare, V value) {
    return emu_atomic(address, [=](T old) { return old == (T)compare ? (T)value : old; });
}
// The scoped atomics (atomicAdd_block, atomicAdd_system): one CPU runs every thread of every
// block, so each scope is the plain atomic's.
#define EMU_SCOPED(NAME) \
    template <class T, class... V> EMU_INLINE T NAME##_block(T* a, V... v) { return NAME(a, v...); } \
    template <class T, class... V> EMU_INLINE T NAME##_system(T* a, V... v) { return NAME(a, v...); }
EMU_SCOPED(atomicAdd) EMU_SCOPED(atomicSub) EMU_SCOPED(atomicExch) EMU_SCOPED(atomicMin) EMU_SCOPED(atomicMax)
EMU_SCOPED(atomicAnd) EMU_SCOPED(atomicOr) EMU_SCOPED(atomicXor) EMU_SCOPED(atomicInc) EMU_SCOPED(atomicDec)
EMU_SCOPED(atomicCAS)
#undef EMU_SCOPED
#undef EMU_ATOMIC
inline void __threadfence() {}
inline void __threadfence_block() {}

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __noinline__ __attribute__((noinline))
#define __align__(n) alignas(n)
// Each __shared__ array starts a 64 KiB stretch of its own (static shared memory is at most 48 KiB),
// so an access past its end lands in the gap before the next static, where the traced run names it
// (the gaps take address space only: .bss is not in the file).
#define __shared__ static __attribute__((aligned(65536)))
#define __launch_bounds__(...)
#define __grid_constant__
// __constant__ and __managed__ variables are statics in sections of their own, which the traced
// run tells apart from shared memory (reader.for_gxx drops a `const` beside __constant__, which
// would make a read-only section of it), and a whole program's run from each other (the host
// writes a __managed__ variable without the runtime's calls).
#define __constant__ __attribute__((section("gm_constant")))
#define __managed__ __attribute__((section("gm_managed")))
// CUDA's min and max take two arithmetic types, as its overloads do (min(int, unsigned) is unsigned).
template <class A, class B>
constexpr std::common_type_t<A, B> min(A a, B b) { return b < a ? b : a; }
template <class A, class B>
constexpr std::common_type_t<A, B> max(A a, B b) { return a < b ? b : a; }
// Fast-math intrinsics, bit casts and the cache-hinted loads and stores, as plain C++ (results
// may differ from the GPU's in the last bits).
inline float __expf(float x) { return expf(x); }
inline float __logf(float x) { return logf(x); }
inline float __sinf(float x) { return sinf(x); }
inline float __cosf(float x) { return cosf(x); }
inline float __powf(float x, float y) { return powf(x, y); }
inline float __fdividef(float a, float b) { return a / b; }
inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
// The rounding-mode intrinsics (_rn to nearest, _rz toward zero, _ru up, _rd down), exact: C++'s
// result, rounded to nearest, moved one step where the exact error of the operation (TwoSum for a
// sum, an fma for a product, a quotient's remainder or a root's) says the true value lies past it.
// A result that overflows is infinite in every mode (a GPU's _rz and _rd give the largest float).
enum emu_rounding { EMU_RN, EMU_RZ, EMU_RU, EMU_RD };
template <class T> T emu_rounded(T r, T error, emu_rounding mode) {  // error: the sign of (exact - r)
    if (mode == EMU_RN || error == 0 || !std::isfinite(r)) return r;
    const bool down = error < 0 && (mode == EMU_RD || (mode == EMU_RZ && r > 0));
    const bool up = error > 0 && (mode == EMU_RU || (mode == EMU_RZ && r < 0));
    return down ? std::nextafter(r, -INFINITY) : up ? std::nextafter(r, INFINITY) : r;
}
template <class T> T emu_add(T a, T b, emu_rounding m) {
    const T r = a + b, bb = r - a;
    return emu_rounded(r, (a - (r - bb)) + (b - bb), m);
}
template <class T> T emu_mul(T a, T b, emu_rounding m) { const T r = a * b; return emu_rounded(r, std::fma(a, b, -r), m); }
template <class T> T emu_div(T a, T b, emu_rounding m) {
    const T r = a / b, rest = std::fma(-r, b, a);
    return emu_rounded(r, b < 0 ? -rest : rest, m);
}
template <class T> T emu_sqrt(T a, emu_rounding m) { const T r = std::sqrt(a); return emu_rounded(r, std::fma(-r, r, a), m); }
#define EMU_ROUNDING(S, M) \
    inline float __fadd_##S(float a, float b) { return emu_add(a, b, M); } \
    inline float __fsub_##S(float a, float b) { return emu_add(a, -b, M); } \
    inline float __fmul_##S(float a, float b) { return emu_mul(a, b, M); } \
    inline float __fdiv_##S(float a, float b) { return emu_div(a, b, M); } \
    inline float __frcp_##S(float x) { return emu_div(1.0f, x, M); } \
    inline float __fsqrt_##S(float x) { return emu_sqrt(x, M); } \
    inline double __dadd_##S(double a, double b) { return emu_add(a, b, M); } \
    inline double __dsub_##S(double a, double b) { return emu_add(a, -b, M); } \
    inline double __dmul_##S(double a, double b) { return emu_mul(a, b, M); } \
    inline double __ddiv_##S(double a, double b) { return emu_div(a, b, M); } \
    inline double __drcp_##S(double x) { return emu_div(1.0, x, M); } \
    inline double __dsqrt_##S(double x) { return emu_sqrt(x, M); }
EMU_ROUNDING(rn, EMU_RN) EMU_ROUNDING(rz, EMU_RZ) EMU_ROUNDING(ru, EMU_RU) EMU_ROUNDING(rd, EMU_RD)
#undef EMU_ROUNDING
inline float __fmaf_rn(float a, float b, float c) { return fmaf(a, b, c); }
inline double __fma_rn(double a, double b, double c) { return fma(a, b, c); }
inline float __saturatef(float x) { return !(x > 0.0f) ? 0.0f : x > 1.0f ? 1.0f : x; }  // NaN to +0, as PTX .sat
inline int __float_as_int(float x) { return std::bit_cast<int>(x); }
inline unsigned __float_as_uint(float x) { return std::bit_cast<unsigned>(x); }
inline float __int_as_float(int x) { return std::bit_cast<float>(x); }
inline float __uint_as_float(unsigned x) { return std::bit_cast<float>(x); }
inline long long __double_as_longlong(double x) { return std::bit_cast<long long>(x); }
inline double __longlong_as_double(long long x) { return std::bit_cast<double>(x); }
inline int __popc(unsigned x) { return std::popcount(x); }
// The high 32 or 64 bits of a product (what a division by a constant becomes: ggml's fastdiv).
inline unsigned __umulhi(unsigned a, unsigned b) { return (unsigned)(((unsigned long long)a * b) >> 32); }
inline int __mulhi(int a, int b) { return (int)(((long long)a * b) >> 32); }
inline unsigned long long __umul64hi(unsigned long long a, unsigned long long b) {
    return (unsigned long long)(((unsigned __int128)a * b) >> 64);
}
inline int __popcll(unsigned long long x) { return std::popcount(x); }
inline int __clz(int x) { return std::countl_zero((unsigned)x); }
inline int __ffs(int x) { return x ? std::countr_zero((unsigned)x) + 1 : 0; }
#define EMU_LOAD(NAME) template <class T> EMU_INLINE T NAME(const T* p) { return *p; }
#define EMU_STORE(NAME) template <class T> EMU_INLINE void NAME(T* p, T value) { *p = value; }
EMU_LOAD(__ldg) EMU_LOAD(__ldca) EMU_LOAD(__ldcg) EMU_LOAD(__ldcs) EMU_LOAD(__ldlu) EMU_LOAD(__ldcv)
EMU_STORE(__stwb) EMU_STORE(__stcg) EMU_STORE(__stcs) EMU_STORE(__stwt)
#undef EMU_LOAD
#undef EMU_STORE

// The launch's entry: `kernel` called with the arguments in `a` as a CUDA launch passes them (a
// pointer's value; a scalar's address).
template <class P>
__attribute__((no_sanitize("thread"))) P emu_argument(void* a) {
    if constexpr (std::is_pointer_v<P>) return static_cast<P>(a);
    else return *static_cast<std::remove_cv_t<P>*>(a);
}
template <class... P, size_t... I>
__attribute__((no_sanitize("thread"))) void emu_call(void (*kernel)(P...), void** a, std::index_sequence<I...>) {
    kernel(emu_argument<P>(a[I])...);
}
template <class... P>
__attribute__((no_sanitize("thread"))) void emu_call(void (*kernel)(P...), void** a) {
    emu_call(kernel, a, std::index_sequence_for<P...>());
}
// The bytes `kernel`'s i-th parameter takes by value (a struct's sizeof); -1 for a pointer or past the last:
// the traced run checks the bytes it was given against it.
template <class... P> long emu_value_bytes(void (*)(P...), int i) {
    const long bytes[] = {(std::is_pointer_v<P> ? -1L : (long)sizeof(P))..., -1L};
    return i >= 0 && i < (int)sizeof...(P) ? bytes[i] : -1L;
}

#ifdef GM_LAB_TRACE
void __syncthreads();
#else
// Not inlined: its return address names the call site.
__attribute__((noinline)) inline void __syncthreads() { emu_block_gate->arrive_and_wait(__builtin_return_address(0)); }

inline void emu_launch(dim3 grid, dim3 block, size_t shared_mem, const std::function<void()>& body) {
    gridDim = grid;
    blockDim = block;
    emu_dynamic_shared_bytes = shared_mem;
    const std::function<void(unsigned)> thread = [&](unsigned) { body(); };
    for (unsigned bz = 0; bz < grid.z; ++bz)
        for (unsigned by = 0; by < grid.y; ++by)
            for (unsigned bx = 0; bx < grid.x; ++bx) emu_run_block(block, {bx, by, bz}, thread);
}
#endif

// __trap() ends the kernel with an error, as a GPU's trap instruction; __dp4a, the four-way
// dot product of 8-bit integers packed in 32-bit words, added to `c` (signed: each byte sign-extended).
[[noreturn]] inline void __trap() { std::fprintf(stderr, "__trap() called\n"); std::abort(); }
inline int __dp4a(int a, int b, int c) {
    for (int i = 0; i < 4; ++i) c += (int8_t)(a >> 8 * i) * (int8_t)(b >> 8 * i);
    return c;
}
inline unsigned __dp4a(unsigned a, unsigned b, unsigned c) {
    for (int i = 0; i < 4; ++i) c += (uint8_t)(a >> 8 * i) * (uint8_t)(b >> 8 * i);
    return c;
}

// The integer intrinsics of CUDA's math API that quantised kernels use (ggml's, vLLM's), as the
// CUDA Math API documents them: bit reversal, the byte permute, funnel shifts, sums of absolute
// differences, halving adds, 24-bit multiplies, and the SIMD intrinsics that treat a 32-bit word
// as two 16-bit or four 8-bit lanes (wrapping, signed-saturating "ss", unsigned-saturating "us").
inline unsigned __brev(unsigned x) {
    unsigned r = 0;
    for (int i = 0; i < 32; ++i) r |= ((x >> i) & 1u) << (31 - i);
    return r;
}
inline unsigned long long __brevll(unsigned long long x) {
    return ((unsigned long long)__brev((unsigned)x) << 32) | __brev((unsigned)(x >> 32));
}
inline int __clzll(long long x) { return std::countl_zero((unsigned long long)x); }
inline int __ffsll(long long x) { return x ? std::countr_zero((unsigned long long)x) + 1 : 0; }
// Byte n of the result is the byte of {y, x} (x bytes 0-3, y bytes 4-7) that selector nibble n names.
inline unsigned __byte_perm(unsigned x, unsigned y, unsigned s) {
    const unsigned long long both = ((unsigned long long)y << 32) | x;
    unsigned r = 0;
    for (int n = 0; n < 4; ++n) r |= (unsigned)((both >> 8 * ((s >> 4 * n) & 7u)) & 0xffu) << 8 * n;
    return r;
}
inline unsigned __funnelshift_l(unsigned lo, unsigned hi, unsigned shift) {
    return (unsigned)(((((unsigned long long)hi << 32) | lo) << (shift & 31u)) >> 32);
}
inline unsigned __funnelshift_lc(unsigned lo, unsigned hi, unsigned shift) {
    const unsigned n = shift < 32u ? shift : 32u;
    return (unsigned)(((((unsigned long long)hi << 32) | lo) << n) >> 32);
}
inline unsigned __funnelshift_r(unsigned lo, unsigned hi, unsigned shift) {
    return (unsigned)((((unsigned long long)hi << 32) | lo) >> (shift & 31u));
}
inline unsigned __funnelshift_rc(unsigned lo, unsigned hi, unsigned shift) {
    const unsigned n = shift < 32u ? shift : 32u;
    return (unsigned)((((unsigned long long)hi << 32) | lo) >> n);
}
inline void __nanosleep(unsigned) {}  // a hint to the scheduler: the lab's threads take turns anyway
inline unsigned __sad(int x, int y, unsigned z) { return z + (unsigned)(x > y ? (long long)x - y : (long long)y - x); }
inline unsigned __usad(unsigned x, unsigned y, unsigned z) { return z + (x > y ? x - y : y - x); }
inline int __hadd(int x, int y) { return (int)(((long long)x + y) >> 1); }
inline int __rhadd(int x, int y) { return (int)(((long long)x + y + 1) >> 1); }
inline unsigned __uhadd(unsigned x, unsigned y) { return (unsigned)(((unsigned long long)x + y) >> 1); }
inline unsigned __urhadd(unsigned x, unsigned y) { return (unsigned)(((unsigned long long)x + y + 1) >> 1); }
inline int __mul24(int x, int y) { return (int)((long long)((x << 8) >> 8) * ((y << 8) >> 8)); }
inline unsigned __umul24(unsigned x, unsigned y) { return (x & 0xffffffu) * (y & 0xffffffu); }
// One lane at a time: `f` gets the two lanes as signed or unsigned values and returns the lane's result.
template <int BITS, bool SIGNED, class F>
inline unsigned emu_lanes(unsigned a, unsigned b, F f) {
    constexpr unsigned mask = (1u << BITS) - 1;
    unsigned r = 0;
    for (int i = 0; i < 32; i += BITS) {
        long long x = (a >> i) & mask, y = (b >> i) & mask;
        if constexpr (SIGNED) {
            x = (long long)(int)((unsigned)x << (32 - BITS)) >> (32 - BITS);
            y = (long long)(int)((unsigned)y << (32 - BITS)) >> (32 - BITS);
        }
        r |= ((unsigned)f(x, y) & mask) << i;
    }
    return r;
}
template <int BITS> constexpr long long emu_smax = (1ll << (BITS - 1)) - 1;  // a lane's signed and unsigned ranges
template <int BITS> constexpr long long emu_smin = -(1ll << (BITS - 1));
template <int BITS> constexpr long long emu_umax = (1ll << BITS) - 1;
inline long long emu_clamp(long long v, long long lo, long long hi) { return v < lo ? lo : v > hi ? hi : v; }
#define EMU_SIMD(NAME, BITS, SIGNED, EXPR) \
    inline unsigned NAME(unsigned a, unsigned b) { \
        return emu_lanes<BITS, SIGNED>(a, b, [](long long x, long long y) { return (long long)(EXPR); }); \
    }
EMU_SIMD(__vadd2, 16, false, x + y) EMU_SIMD(__vadd4, 8, false, x + y)
EMU_SIMD(__vsub2, 16, false, x - y) EMU_SIMD(__vsub4, 8, false, x - y)
EMU_SIMD(__vaddss2, 16, true, emu_clamp(x + y, emu_smin<16>, emu_smax<16>))
EMU_SIMD(__vaddss4, 8, true, emu_clamp(x + y, emu_smin<8>, emu_smax<8>))
EMU_SIMD(__vsubss2, 16, true, emu_clamp(x - y, emu_smin<16>, emu_smax<16>))
EMU_SIMD(__vsubss4, 8, true, emu_clamp(x - y, emu_smin<8>, emu_smax<8>))
EMU_SIMD(__vaddus2, 16, false, emu_clamp(x + y, 0, emu_umax<16>))
EMU_SIMD(__vaddus4, 8, false, emu_clamp(x + y, 0, emu_umax<8>))
EMU_SIMD(__vsubus2, 16, false, emu_clamp(x - y, 0, emu_umax<16>))
EMU_SIMD(__vsubus4, 8, false, emu_clamp(x - y, 0, emu_umax<8>))
EMU_SIMD(__vabsdiffu2, 16, false, x > y ? x - y : y - x) EMU_SIMD(__vabsdiffu4, 8, false, x > y ? x - y : y - x)
EMU_SIMD(__vabsdiffs2, 16, true, x > y ? x - y : y - x) EMU_SIMD(__vabsdiffs4, 8, true, x > y ? x - y : y - x)
EMU_SIMD(__vavgu2, 16, false, (x + y + 1) >> 1) EMU_SIMD(__vavgu4, 8, false, (x + y + 1) >> 1)
EMU_SIMD(__vmaxu4, 8, false, x > y ? x : y) EMU_SIMD(__vminu4, 8, false, x < y ? x : y)
EMU_SIMD(__vmaxs4, 8, true, x > y ? x : y) EMU_SIMD(__vmins4, 8, true, x < y ? x : y)
#undef EMU_SIMD
// (CUDA has no __vabsdiff4: sources that use it define their own, often with inline PTX.)

// CUDA's math library declares these for device code in the global namespace, as C's math.h
// does (libstdc++'s <cmath> keeps them in std).
using std::isfinite;
using std::isinf;
using std::isnan;
using std::signbit;

// What nvcc makes visible in every source without an include: the runtime's host API (declared
// only, see include/cuda_runtime.h) and, through it, the C string functions (memcpy in device code).
#include "cuda_runtime.h"
