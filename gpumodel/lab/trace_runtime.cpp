// The kernel lab's traced run (see tracer.py). The learner's kernel is compiled by g++ with
// -fsanitize=thread, which makes the compiler call __tsan_readN / __tsan_writeN before every
// load and store it keeps; this file, compiled without that flag, defines those hooks (no
// libtsan), runs the blocks one after another (each CUDA thread a fiber, as in
// cuda_emu.h), and at the end of each block groups each warp's accesses per instruction
// (its address in the code and the how-many-th time this thread runs it) and counts sectors,
// requests and shared-memory wavefronts with the model's rules (gpumodel/simulate.py). Memory
// holds the accesses of one block between two barriers (counted at each __syncthreads, at most
// MAX_RECORDS), plus a set of the distinct sectors. A warp shuffle passes registers, not memory:
// the lanes meet at a barrier of their warp, and nothing is recorded.
//
// Usage: run SPEC STATS. SPEC lines: "kernel i" (which of the source's kernels), "grid x y z",
// "block x y z", "blocks b0 b1 ..." (linear ids to run), "shared_mem bytes" (the launch's dynamic
// shared memory), then one "arg P bytes path" (an array, read from and written back to path) or
// "arg V hex" (a scalar's bytes) per kernel parameter. STATS gets one line per access site.
#define GM_LAB_TRACE
#define GM_LAB_RUNTIME
#include "cuda_emu.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <unordered_map>
#include <unordered_set>

extern "C" void gm_body(int kernel, void** args);  // runs the source's kernel-th kernel (from tracer.py)
// The executable's writable statics: __shared__ arrays are statics (blocks run one at a time).
extern "C" char __data_start[], _end[], __executable_start[];

namespace {

constexpr int WARP = 32, BANKS = 32, SECTOR = 32, WAVEFRONT = 128;
constexpr uintptr_t GUARD = 1 << 16;  // bytes of padding either side of each array

struct Access { uintptr_t pc, addr; uint32_t size; bool write; };
constexpr size_t MAX_RECORDS = 1 << 23;  // accesses held at once, in one block between two barriers
struct Log {
    std::vector<Access> accesses;  // since the last barrier
    std::unordered_map<uintptr_t, uint32_t> runs;  // times this thread has run each access site
    uint64_t local = 0;
    uintptr_t stack_lo = 0, stack_hi = 0;
    size_t cap = MAX_RECORDS;
    bool overflow = false;
};
struct Array { char* base; size_t bytes; std::string path; };
struct Site {  // totals over every warp instruction issued from one access in the code
    int space = 0; bool write = false; uint32_t size = 0;
    uint64_t instructions = 0, lanes = 0, divergent = 0, sectors = 0, ideal_sectors = 0,
             wavefronts = 0, ideal_wavefronts = 0, bytes = 0;
};
struct OutOfBounds { uint64_t count = 0; uintptr_t pc = 0, addr = 0; bool write = false; int array = -1;
                     long offset = 0; unsigned thread[3] = {}, block[3] = {}; };

std::vector<Array> arrays;
Log* my_log = nullptr;  // the running CUDA thread's
OutOfBounds oob;

bool in(uintptr_t a, const void* v, size_t n) { return a >= (uintptr_t)v && a < (uintptr_t)v + n; }

bool is_shared(uintptr_t a) {  // a static of the kernel's, not one of the emulator's, or the launch's extern __shared__
    return (a >= (uintptr_t)__data_start && a < (uintptr_t)_end && !in(a, &blockDim, sizeof blockDim) &&
            !in(a, &gridDim, sizeof gridDim)) || in(a, emu_dynamic_shared(), emu_dynamic_shared_bytes);
}

void record(void* p, uint32_t size, bool write, void* pc) {
    Log* log = my_log;
    if (!log) return;  // not a CUDA thread (static constructors)
    const auto a = reinterpret_cast<uintptr_t>(p);
    const auto at = reinterpret_cast<uintptr_t>(pc) - 1;  // inside the call
    if (log->accesses.size() >= log->cap) {
        log->overflow = true;
        return;
    }
    if (is_shared(a)) {
        log->accesses.push_back({at, a, size, write});
        return;
    }
    for (size_t i = 0; i < arrays.size(); ++i) {
        const auto lo = (uintptr_t)arrays[i].base;
        if (a + size <= lo - GUARD || a >= lo + arrays[i].bytes + GUARD) continue;
        if (a >= lo && a + size <= lo + arrays[i].bytes) {
            log->accesses.push_back({at, a, size, write});
            return;
        }
        if (oob.count++ == 0) oob = {1, at, a, write, (int)i, (long)(a - lo), {threadIdx.x, threadIdx.y, threadIdx.z},
                                     {blockIdx.x, blockIdx.y, blockIdx.z}};
        return;
    }
    if (in(a, &threadIdx, sizeof threadIdx) || in(a, &blockIdx, sizeof blockIdx) ||
        (a >= (uintptr_t)__executable_start && a < (uintptr_t)_end))
        return;  // the emulator's own variables
    if (a >= log->stack_lo && a < log->stack_hi) { ++log->local; return; }
    if (oob.count++ == 0) oob = {1, at, a, write, -1, 0, {threadIdx.x, threadIdx.y, threadIdx.z},
                                 {blockIdx.x, blockIdx.y, blockIdx.z}};
}

std::vector<Log>* block_logs = nullptr;
std::unordered_map<uintptr_t, Site> sites;
std::unordered_set<uintptr_t> distinct_sectors, block_sectors;  // over the run; over this block's loads
uint64_t l2_sectors = 0;  // what leaves L1: each sector a block loads once (L1 keeps it), every sector stored
uint64_t local_accesses = 0;

// Wavefronts of one shared-memory warp access, as gpumodel.simulate.wavefronts: word
// addresses per active lane (1, 2 or 4 words), the most distinct words in one bank, or the
// registers returned at 32 per wavefront (halved when lanes n and n^1, or n and n^2, match).
std::pair<uint64_t, uint64_t> wavefronts(const std::vector<const Access*>& lanes) {
    const uint32_t width = std::max<uint32_t>(1, lanes[0]->size / 4);
    std::vector<std::unordered_set<uintptr_t>> bank(BANKS);
    for (auto* x : lanes)
        for (uint32_t j = 0; j < width; ++j) bank[(x->addr / 4 + j) % BANKS].insert(x->addr / 4 + j);
    uint64_t worst = 0;
    for (auto& words : bank) worst = std::max<uint64_t>(worst, words.size());
    const size_t n = lanes.size();
    bool paired = false;
    for (size_t step : {1, 2}) {
        if (n % 2 || n % (2 * step)) continue;
        bool same = true;
        for (size_t i = 0; i < n && same; ++i) same = lanes[i]->addr / 4 == lanes[i ^ step]->addr / 4;
        paired = paired || same;
    }
    const uint64_t registers = n * width / (paired ? 2 : 1);
    const uint64_t ideal = (registers + WARP - 1) / WARP;
    return {std::max(worst, ideal), ideal};
}

struct Issue {  // one warp instruction: an access site, run for the k-th time
    uintptr_t pc;
    uint32_t k;
    bool operator==(const Issue& o) const { return pc == o.pc && k == o.k; }
};
struct IssueHash { size_t operator()(const Issue& i) const { return std::hash<uintptr_t>()(i.pc * 1000003u + i.k); } };

void count_warp(const std::vector<Log*>& threads, uint32_t live) {
    std::unordered_map<Issue, std::vector<const Access*>, IssueHash> issued;  // -> the lanes' accesses
    for (auto* t : threads)
        for (const Access& x : t->accesses) issued[{x.pc, t->runs[x.pc]++}].push_back(&x);
    for (auto& [issue, lanes] : issued) {
        Site& s = sites[issue.pc];
        const Access& first = *lanes[0];
        const bool shared = is_shared(first.addr);
        s.space = shared ? 1 : 0;
        s.write = first.write;
        s.size = first.size;
        s.instructions += 1;
        s.lanes += lanes.size();
        s.divergent += lanes.size() < live;
        s.bytes += lanes.size() * first.size;
        if (shared) {
            auto [w, ideal] = wavefronts(lanes);
            s.wavefronts += w;
            s.ideal_wavefronts += ideal;
        } else {
            std::vector<uintptr_t> touched;
            for (auto* x : lanes) {
                touched.push_back(x->addr / SECTOR);
                touched.push_back((x->addr + x->size - 1) / SECTOR);
            }
            std::sort(touched.begin(), touched.end());
            touched.erase(std::unique(touched.begin(), touched.end()), touched.end());
            s.sectors += touched.size();
            s.ideal_sectors += (lanes.size() * first.size + SECTOR - 1) / SECTOR;
            distinct_sectors.insert(touched.begin(), touched.end());
            for (auto sector : touched) l2_sectors += first.write || block_sectors.insert(sector).second;
        }
    }
}

bool overflow = false;

void count_phase() {  // the block's accesses since the last barrier, warp by warp
    std::vector<Log>& logs = *block_logs;
    const unsigned n = logs.size();
    for (unsigned w = 0; w * WARP < n; ++w) {
        std::vector<Log*> warp;
        for (unsigned t = w * WARP; t < std::min(n, (w + 1) * WARP); ++t) warp.push_back(&logs[t]);
        count_warp(warp, warp.size());
    }
    for (auto& l : logs) l.accesses.clear();
}

void take_turn(unsigned t) {  // before each turn of CUDA thread t: its log, and its stack's bounds
    Log& log = (*block_logs)[t];
    log.stack_lo = (uintptr_t)emu_run->fibers[t].stack;
    log.stack_hi = log.stack_lo + EMU_STACK;
    my_log = &log;
}

void run_block(int kernel, dim3 grid, dim3 block, unsigned linear, void** args) {
    const unsigned n = block.x * block.y * block.z;
    const unsigned bx = linear % grid.x, by = linear / grid.x % grid.y, bz = linear / (grid.x * grid.y);
    std::vector<Log> logs(n);
    for (auto& l : logs) l.cap = MAX_RECORDS / n;
    block_sectors.clear();
    block_logs = &logs;
    emu_run_block(block, {bx, by, bz}, [&](unsigned) { gm_body(kernel, args); }, count_phase, take_turn);
    my_log = nullptr;
    count_phase();
    for (auto& l : logs) {
        local_accesses += l.local;
        overflow = overflow || l.overflow;
    }
}

}  // namespace

void __syncthreads() { emu_block_gate->arrive_and_wait(); }

#define GM_HOOKS(N)                                                                                    \
    extern "C" void __tsan_read##N(void* p) { record(p, N, false, __builtin_return_address(0)); }      \
    extern "C" void __tsan_write##N(void* p) { record(p, N, true, __builtin_return_address(0)); }      \
    extern "C" void __tsan_unaligned_read##N(void* p) { record(p, N, false, __builtin_return_address(0)); } \
    extern "C" void __tsan_unaligned_write##N(void* p) { record(p, N, true, __builtin_return_address(0)); }
GM_HOOKS(1)
GM_HOOKS(2)
GM_HOOKS(4)
GM_HOOKS(8)
GM_HOOKS(16)
// An aggregate copy (a float4 assigned whole): one access per 16 bytes, as 128-bit loads.
#define GM_RANGE(NAME, WRITE)                                                                           \
    extern "C" void NAME(void* p, unsigned long n) {                                                    \
        for (unsigned long at = 0; at < n; at += 16)                                                    \
            record((char*)p + at, std::min(16ul, n - at), WRITE, __builtin_return_address(0));          \
    }
GM_RANGE(__tsan_read_range, false)
GM_RANGE(__tsan_write_range, true)
// An atomic (cuda_emu.h's emu_atomic): its load recorded as its one access, a store of its width; its store not again.
#define GM_ATOMIC_HOOKS(BITS)                                                                          \
    extern "C" uint##BITS##_t __tsan_atomic##BITS##_load(const volatile uint##BITS##_t* p, int) {       \
        record((void*)p, BITS / 8, true, __builtin_return_address(0));                                 \
        return *p;                                                                                     \
    }                                                                                                  \
    extern "C" void __tsan_atomic##BITS##_store(volatile uint##BITS##_t* p, uint##BITS##_t v, int) { *p = v; }
GM_ATOMIC_HOOKS(8)
GM_ATOMIC_HOOKS(16)
GM_ATOMIC_HOOKS(32)
GM_ATOMIC_HOOKS(64)
extern "C" void __tsan_func_entry(void*) {}
extern "C" void __tsan_func_exit() {}
extern "C" void __tsan_init() {}
extern "C" void __tsan_vptr_update(void**, void*) {}
extern "C" void __tsan_vptr_read(void**) {}

int main(int argc, char** argv) {
    if (argc != 3) {
        std::fprintf(stderr, "usage: %s SPEC STATS\n", argv[0]);
        return 2;
    }
    std::ifstream spec(argv[1]);
    dim3 grid, block;
    int kernel = 0;
    std::vector<unsigned> blocks;
    std::vector<void*> args;
    std::vector<std::unique_ptr<uint64_t[]>> scalars;  // each scalar argument's bytes, 8-byte aligned
    std::string line;
    while (std::getline(spec, line)) {
        std::istringstream in(line);
        std::string key;
        in >> key;
        if (key == "kernel") in >> kernel;
        else if (key == "grid") in >> grid.x >> grid.y >> grid.z;
        else if (key == "block") in >> block.x >> block.y >> block.z;
        else if (key == "blocks") for (unsigned b; in >> b;) blocks.push_back(b);
        else if (key == "shared_mem") in >> emu_dynamic_shared_bytes;
        else if (key == "arg") {
            std::string kind;
            in >> kind;
            if (kind == "P") {
                Array a;
                in >> a.bytes >> a.path;
                const size_t padded = (a.bytes + 2 * GUARD + 255) / 256 * 256;  // 256-byte aligned, as cudaMalloc
                char* mem = static_cast<char*>(std::aligned_alloc(256, padded));
                std::memset(mem, 0, padded);
                a.base = mem + GUARD;
                std::ifstream(a.path, std::ios::binary).read(a.base, a.bytes);
                arrays.push_back(a);
                args.push_back(a.base);
            } else {  // V: a scalar's bytes in hex
                std::string hex;
                in >> hex;
                scalars.emplace_back(new uint64_t[hex.size() / 16 + 1]());
                auto* bytes = reinterpret_cast<unsigned char*>(scalars.back().get());
                for (size_t i = 0; i + 1 < hex.size(); i += 2) bytes[i / 2] = std::stoul(hex.substr(i, 2), nullptr, 16);
                args.push_back(bytes);
            }
        }
    }
    gridDim = grid;
    blockDim = block;
    for (unsigned b : blocks) run_block(kernel, grid, block, b, args.data());
    for (auto& a : arrays) std::ofstream(a.path, std::ios::binary).write(a.base, a.bytes);
    FILE* out = std::fopen(argv[2], "w");
    const auto base = (uintptr_t)__executable_start;
    for (auto& [pc, s] : sites)
        std::fprintf(out, "site %lx %d %d %u %lu %lu %lu %lu %lu %lu %lu %lu\n", (unsigned long)(pc - base), s.space,
                     (int)s.write, s.size, s.instructions, s.lanes, s.divergent, s.sectors, s.ideal_sectors,
                     s.wavefronts, s.ideal_wavefronts, s.bytes);
    std::fprintf(out, "distinct_sectors %zu\nl2_sectors %lu\nlocal %lu\n", distinct_sectors.size(), l2_sectors,
                 local_accesses);
    if (overflow) std::fprintf(out, "overflow %zu\n", MAX_RECORDS);
    if (oob.count)
        std::fprintf(out, "oob %lu %lx %d %d %ld %u %u %u %u %u %u\n", oob.count, (unsigned long)(oob.pc - base),
                     (int)oob.write, oob.array, oob.offset, oob.thread[0], oob.thread[1], oob.thread[2], oob.block[0],
                     oob.block[1], oob.block[2]);
    std::fclose(out);
    return 0;
}
