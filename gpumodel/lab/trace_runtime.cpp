// The kernel lab's traced run (see reporter.py; built by builder.py, run by runner.py). The learner's kernel is compiled by g++ with
// -fsanitize=thread, which makes the compiler call __tsan_readN / __tsan_writeN before every
// load and store it keeps; this file, compiled without that flag, defines those hooks (no
// libtsan), runs the blocks one after another (each CUDA thread a fiber, as in
// cuda_emu.h), and at the end of each block groups each warp's accesses per instruction
// (its address in the code and the how-many-th time this thread runs it) and counts sectors,
// requests and shared-memory wavefronts with the model's rules (gpumodel/simulate.py). Memory
// holds the accesses of one block between two barriers (at most MAX_RECORDS; each warp's counted
// as soon as all its lanes have returned or wait at __syncthreads, the rest at the barrier), plus the distinct sectors (per sector: how many of the traced blocks touch it,
// one or more). A warp shuffle passes registers, not memory: the lanes meet at a barrier of their
// warp, and nothing is recorded.
//
// Races and uninitialised reads, as compute-sanitizer's racecheck and initcheck: per shared word
// and phase (between two barriers) the last writer and the last readers (the last, the last of
// another thread, the last of another warp); an access that conflicts with one of them (another thread, at least one a write, not
// the same warp instruction, no __syncwarp or shuffle of their warp between) is a hazard, named
// in the order the fibers ran them. A read of a word the block has not written yet, and that no
// other thread writes before the barrier, is an uninitialised read. A word of an argument array
// (global memory) is checked by the same rules within the block (a __syncthreads orders the
// block's global accesses too), the first MAX_GLOBAL_WORDS words a phase touches; never for an
// uninitialised read (the host wrote it), nor between blocks (they run one after another).
//
// Usage: run SPEC STATS. SPEC lines: "kernel i" (which of the source's kernels), "grid x y z",
// "block x y z", "blocks b0 b1 ..." (linear ids to trace, ascending: every block runs), "shared_mem bytes" (the launch's dynamic
// shared memory), "gap ARRAY FROM TO" per stretch past the end of a __shared__ array that holds none
// of the kernel's statics (offsets in the executable: where the array starts, the stretch), then one "arg P bytes path" (an array, read from and written back to path) or
// "arg V hex" (a scalar's bytes) or "arg N" (a NULL pointer) per kernel parameter. STATS gets one line per access site; or,
// where the kernel faults in a way the runtime can name, one "fault" line and exit status 3:
// "fault signal SIGNAL PC THREAD BLOCK ADDRESS" (a crash in a kernel's thread: the faulting instruction),
// "fault barrier WAITED THREADS SITE BLOCK" (a __syncthreads() that some threads of the block
// returned without reaching, cuda_emu.h's emu_gate), "fault memory THREAD|- BLOCK" (an allocation failed:
// std::bad_alloc, in the kernel or the lab's own), "fault stack BYTES THREAD BLOCK" (a thread ran
// past its fiber's stack into the guard page below it), "fault argument I GIVEN WANT" (the I-th argument's
// bytes by value are not its parameter's sizeof: a struct of another layout); numbers in hex, threads and blocks as
// linear ids, sites as code offsets. A barrier that opened with threads at two calls (cuda_emu.h's
// emu_barrier_sites) is one "barriers SITE OTHER WAITED THREADS BLOCK" line of STATS each.
#define GM_LAB_TRACE
#define GM_LAB_RUNTIME
#include "cuda_emu.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

extern "C" void gm_body(int kernel, void** args);  // runs the source's kernel-th kernel (builder.py writes it; not in a whole program)
extern "C" long gm_value_bytes(int kernel, int i);  // the bytes its i-th parameter takes by value; -1 for a pointer
// The executable's writable statics: __shared__ arrays are statics (blocks run one at a time).
extern "C" char __data_start[], _end[], __executable_start[];

namespace {

constexpr int WARP = 32, BANKS = 32, SECTOR = 32, WAVEFRONT = 128;
constexpr uintptr_t GUARD = 1 << 16;  // bytes of padding either side of each array

struct Access {
    uintptr_t pc, addr;
    uint32_t k;  // this thread runs pc for the k-th time: (pc, k) is one warp instruction
    uint8_t size;
    bool write;
    int16_t array;  // which argument array; -1 for shared memory
};
constexpr size_t MAX_RECORDS = 1 << 23;  // accesses held at once, in one block between two barriers
struct Log {
    std::vector<Access> accesses;  // since the last barrier
    // Times this thread has run each access site: a kernel has few, so a list, searched from the last one
    // found (the sites of a loop's body come round in order), costs less than a hash per access.
    std::vector<std::pair<uintptr_t, uint32_t>> runs;
    size_t last_run = 0;
    uint32_t next_run(uintptr_t site) {  // this run's number at `site`, counted
        for (size_t k = 0; k < runs.size(); ++k) {
            const size_t i = (last_run + k) % runs.size();
            if (runs[i].first == site) return last_run = i, runs[i].second++;
        }
        last_run = runs.size();
        runs.push_back({site, 1});
        return 0;
    }
    uint64_t local = 0;
    uintptr_t stack_lo = 0, stack_hi = 0;
    size_t cap = MAX_RECORDS;
    bool overflow = false;
};
struct Array { char* base; size_t bytes; std::string path; uintptr_t site = 0; bool freed = false; };  // site, freed: a program's cudaMalloc, cudaFree
struct Site {  // totals over every warp instruction issued from one access in the code
    int space = 0; bool write = false; uint32_t size = 0;
    uint64_t instructions = 0, lanes = 0, divergent = 0, sectors = 0, ideal_sectors = 0,
             wavefronts = 0, ideal_wavefronts = 0, bytes = 0;
};
// `array`: which argument array; -1 none; -2 the launch's dynamic shared memory; -3 - k past a __shared__ array (the k-th gap).
struct OutOfBounds { uint64_t count = 0; uintptr_t pc = 0, addr = 0; bool write = false; int array = -1;
                     long offset = 0; unsigned thread[3] = {}, block[3] = {}; };

// Faults the runtime names (see the top of the file): written to STATS with async-signal-safe calls
// only (the stack fault is reported from a signal handler), then the process ends.
int stats_fd = -1;
struct FaultLine {
    char text[160];
    size_t n = 0;
    FaultLine& operator<<(const char* s) { while (*s && n < sizeof text - 1) text[n++] = *s++; return *this; }
    FaultLine& operator<<(uint64_t v) {  // in hex
        char digits[17];
        int i = 16;
        digits[i] = 0;
        do digits[--i] = "0123456789abcdef"[v % 16]; while (v /= 16);
        return *this << digits + i;
    }
};
[[noreturn]] void fault(FaultLine& line) {
    line << "\n";
    if (write(stats_fd, line.text, line.n) < 0) _exit(4);
    _exit(3);
}
unsigned current_block = 0;  // the linear id of the block running
struct BarrierSites { uintptr_t site, other; unsigned waited, threads, block; };  // see emu_barrier_sites
constexpr size_t MAX_BARRIER_SITES = 16;  // distinct pairs of calls kept, each with the first of its openings
std::vector<BarrierSites> barrier_sites;

std::vector<Array> arrays;
struct Gap { uintptr_t array, from, to; };  // [from, to) lies past the end of the __shared__ array at `array`
std::vector<Gap> shared_gaps;
Log* my_log = nullptr;  // the running CUDA thread's
OutOfBounds oob;

// Race detection (see the top of the file).
struct Touch { uint32_t thread = UINT32_MAX; uintptr_t pc = 0; uint32_t k = 0, warp_sync = 0; };
struct Word { Touch writer, readers[3]; };  // this phase's last writer; last reader, last of another thread, of another warp
enum Hazard { RAW, WAR, WAW, UNINIT };
struct HazardKey {
    int hazard; uintptr_t first, second;
    bool operator==(const HazardKey& o) const { return hazard == o.hazard && first == o.first && second == o.second; }
};
struct HazardHash {
    size_t operator()(const HazardKey& h) const { return h.first * 1000003u ^ h.second * 31u ^ h.hazard; }
};
struct Found { uint64_t count = 0; uint32_t first_thread, second_thread; unsigned block; uintptr_t offset;
               bool across_warps = false;  // one of its hazards between threads of two warps
               bool global = false; };     // on an argument array's word, not shared memory's
constexpr size_t MAX_HAZARDS = 64;  // distinct (hazard, site, site) kept; each counted
std::unordered_map<uintptr_t, Word> phase_words;        // shared or global word (or byte) -> this phase's touches
constexpr size_t MAX_GLOBAL_WORDS = 1 << 20;            // global words a phase checks (memory stays bounded)
size_t global_words = 0;                                // of phase_words, this phase's global ones
std::unordered_map<uintptr_t, Touch> unwritten_reads;   // this phase's first read of each word not yet written
std::unordered_set<uintptr_t> written;                  // words this block has written
std::unordered_map<HazardKey, Found, HazardHash> hazards;
extern "C" char __bss_start[];

bool in(uintptr_t a, const void* v, size_t n) { return a >= (uintptr_t)v && a < (uintptr_t)v + n; }

// The __constant__ and __managed__ variables (cuda_emu.h puts them in sections of their own): the linker's bounds.
extern "C" char __start_gm_constant[] __attribute__((weak)), __stop_gm_constant[] __attribute__((weak));
extern "C" char __start_gm_managed[] __attribute__((weak)), __stop_gm_managed[] __attribute__((weak));
bool is_managed(uintptr_t a) { return a >= (uintptr_t)__start_gm_managed && a < (uintptr_t)__stop_gm_managed; }

// The learner's __device__ variables (the runner's "device" rows, a program's "static" ones):
// global memory, not shared, though cuda_emu.h makes them statics beside the __shared__ arrays.
std::vector<std::pair<uintptr_t, uintptr_t>> device_vars;  // [from, to)
constexpr int16_t DEVICE_VARIABLE = -2;  // Access::array of an access to one
bool in_device_var(uintptr_t a) {
    if (a >= (uintptr_t)__start_gm_constant && a < (uintptr_t)__stop_gm_constant) return false;  // __constant__
    for (auto [from, to] : device_vars)
        if (a >= from && a < to) return true;
    return false;
}

bool is_shared(uintptr_t a) {  // a static of the kernel's, not one of the emulator's, or the launch's extern __shared__
    return (a >= (uintptr_t)__data_start && a < (uintptr_t)_end && !in(a, &blockDim, sizeof blockDim) &&
            !in(a, &gridDim, sizeof gridDim) && !(a >= (uintptr_t)__start_gm_constant && a < (uintptr_t)__stop_gm_constant) &&
            !is_managed(a) && !in_device_var(a)) ||
           in(a, emu_dynamic_shared(), emu_dynamic_shared_bytes);
}

void found(Hazard h, const Touch& first, const Touch& second, uintptr_t word, bool global = false) {
    auto it = hazards.find({h, first.pc, second.pc});
    if (it == hazards.end()) {
        if (hazards.size() >= MAX_HAZARDS) return;
        it = hazards.emplace(HazardKey{h, first.pc, second.pc},
                             Found{0, first.thread, second.thread, current_block,
                                   global ? word : word - (uintptr_t)__bss_start, false, global}).first;
    }
    ++it->second.count;
    it->second.across_warps |= first.thread / WARP != second.thread / WARP;
}

// Whether `earlier` and `now` may run in either order on a GPU: other threads, and neither the
// same warp instruction nor a warp-level sync (__syncwarp, a shuffle) of their warp between them.
bool unordered(const Touch& earlier, const Touch& now) {
    if (earlier.thread == UINT32_MAX || earlier.thread == now.thread) return false;
    if (earlier.thread / WARP != now.thread / WARP) return true;
    return earlier.warp_sync == now.warp_sync && !(earlier.pc == now.pc && earlier.k == now.k);
}

// An atomic is no race (the hardware orders atomics); it initialises what it touches. `base`: the
// argument array's first byte for a global word (its offset is reported), 0 for shared memory.
void check_race(uintptr_t a, uint32_t size, bool write, bool atomic, const Touch& now, uintptr_t base = 0) {
    const bool global = base != 0;
    if (!global && a < (uintptr_t)__bss_start) return;  // an initialised static: not __shared__
    const uint32_t unit = size < 4 ? 1 : 4;  // bytes apart are not a race; a float's bytes are one word
    for (uintptr_t w = a / unit; w <= (a + size - 1) / unit; ++w) {
        const uintptr_t key = w * unit;
        if (atomic) {
            if (!global) written.insert(key);
            continue;
        }
        auto at = phase_words.find(key);
        if (at == phase_words.end()) {
            if (global && global_words >= MAX_GLOBAL_WORDS) continue;  // past the bound: unchecked
            global_words += global;
            at = phase_words.emplace(key, Word{}).first;
        }
        Word& word = at->second;
        const uintptr_t offset = global ? key - base : key;
        if (write) {
            if (unordered(word.writer, now)) found(WAW, word.writer, now, offset, global);
            else for (const Touch& r : word.readers)
                if (unordered(r, now)) { found(WAR, r, now, offset, global); break; }
            word.writer = now;
            for (Touch& r : word.readers) r = Touch{};
            if (global) continue;
            written.insert(key);
            auto unread = unwritten_reads.find(key);
            if (unread != unwritten_reads.end() && unread->second.thread != now.thread) unwritten_reads.erase(unread);
        } else {
            if (unordered(word.writer, now)) found(RAW, word.writer, now, offset, global);
            Touch& last = word.readers[0];
            if (last.thread != UINT32_MAX && last.thread / WARP != now.thread / WARP) word.readers[2] = last;
            if (last.thread != now.thread) word.readers[1] = last;
            last = now;
            if (!global && !written.count(key)) unwritten_reads.emplace(key, now);
        }
    }
}

void end_phase_races() {  // at a barrier: what was read unwritten stays so; touches start afresh
    std::vector<std::pair<uintptr_t, Touch>> reads(unwritten_reads.begin(), unwritten_reads.end());
    std::sort(reads.begin(), reads.end(), [](auto& a, auto& b) { return std::tie(a.second.thread, a.first) <
                                                                        std::tie(b.second.thread, b.first); });
    for (auto& [key, read] : reads) found(UNINIT, read, read, key);  // the first thread's named
    unwritten_reads.clear();
    phase_words.clear();
    global_words = 0;
}

void out_of_bounds(uintptr_t at, uintptr_t a, bool write, int array, long offset) {  // the first one kept, all counted
    if (oob.count++ == 0) oob = {1, at, a, write, array, offset, {threadIdx.x, threadIdx.y, threadIdx.z},
                                 {blockIdx.x, blockIdx.y, blockIdx.z}};
}

#ifdef GM_LAB_PROGRAM
// What one launch of a whole program touched, traced or not: program_runtime.cpp tells from it
// whether running the same launch again could change anything. An atomic reads and writes.
struct Touched { std::vector<uint8_t> read, written; bool statics_read = false, other = false; };
Touched touched;
bool touching = false;  // during a launch: the host's own code is instrumented too
std::vector<std::pair<uintptr_t, uintptr_t>> device_statics;  // [from, to): the program's __device__ variables and globals
void touch(uintptr_t a, uint32_t size, bool write, bool atomic) {
    if (!touching || in(a, emu_dynamic_shared(), EMU_DYNAMIC_SHARED_MAX) || in(a, &threadIdx, sizeof threadIdx) ||
        in(a, &blockIdx, sizeof blockIdx))
        return;
    if (is_managed(a)) {  // the host may have written it
        touched.other = true;
        return;
    }
    for (auto [from, to] : device_statics)
        if (a < to && a + size > from) {
            (write || atomic ? touched.other : touched.statics_read) = true;
            return;
        }
    if (a >= (uintptr_t)__data_start && a < (uintptr_t)_end) return;  // a __shared__ array, blockDim, gridDim
    const auto stack = (uintptr_t)emu_run->fibers[emu_run->current].stack;
    if (a >= stack && a < stack + EMU_STACK) return;  // the thread's local memory
    static size_t last = 0;  // the array the last access was in: the next is most often in it too
    const auto inside = [&](size_t i) {
        const auto lo = (uintptr_t)arrays[i].base;
        return !arrays[i].freed && a >= lo && a + size <= lo + arrays[i].bytes;
    };
    for (size_t k = 0; k < arrays.size(); ++k) {
        const size_t i = k ? k - (k <= last) : last;  // `last` first, then the others in order
        if (inside(i)) {
            last = i;
            if (write || atomic) touched.written[i] = 1;
            if (!write || atomic) touched.read[i] = 1;
            return;
        }
    }
    touched.other = true;  // the host's memory, an array's guard zone: not an array the lab versions
}
#endif

void record(void* p, uint32_t size, bool write, void* pc, bool atomic = false) {
    Log* log = my_log;
#ifdef GM_LAB_PROGRAM
    touch(reinterpret_cast<uintptr_t>(p), size, write, atomic);
#endif
    if (!log) return;  // not a CUDA thread (static constructors)
    const auto a = reinterpret_cast<uintptr_t>(p);
    const auto at = reinterpret_cast<uintptr_t>(pc) - 1;  // inside the call
    if (log->accesses.size() >= log->cap) {
        log->overflow = true;
        return;
    }
    if (is_shared(a)) {
        for (size_t i = 0; i < shared_gaps.size(); ++i)
            if (a < shared_gaps[i].to && a + size > shared_gaps[i].from) {
                out_of_bounds(at, a, write, -3 - (int)i, (long)(a - shared_gaps[i].array));
                return;
            }
        const uint32_t k = log->next_run(at);
        const unsigned t = emu_run->current;
        check_race(a, size, write, atomic, {t, at, k, (*emu_block_warps)[t / WARP].generation});
        log->accesses.push_back({at, a, k, (uint8_t)size, write, -1});
        return;
    }
    if (!device_vars.empty() && in_device_var(a)) {  // global memory, in no argument array
        const uint32_t k = log->next_run(at);
        const unsigned t = emu_run->current;
        check_race(a, size, write, atomic, {t, at, k, (*emu_block_warps)[t / WARP].generation}, device_vars[0].first);
        log->accesses.push_back({at, a, k, (uint8_t)size, write, DEVICE_VARIABLE});
        return;
    }
    for (size_t i = 0; i < arrays.size(); ++i) {
        const auto lo = (uintptr_t)arrays[i].base;
        if (arrays[i].freed || a + size <= lo - GUARD || a >= lo + arrays[i].bytes + GUARD) continue;
        if (a >= lo && a + size <= lo + arrays[i].bytes) {
            const uint32_t k = log->next_run(at);
            const unsigned t = emu_run->current;
            check_race(a, size, write, atomic, {t, at, k, (*emu_block_warps)[t / WARP].generation}, lo);
            log->accesses.push_back({at, a, k, (uint8_t)size, write, (int16_t)i});
            return;
        }
        out_of_bounds(at, a, write, (int)i, (long)(a - lo));
        return;
    }
    if (in(a, emu_dynamic_shared(), EMU_DYNAMIC_SHARED_MAX)) {  // past the launch's shared_mem bytes
        out_of_bounds(at, a, write, -2, (long)(a - (uintptr_t)emu_dynamic_shared()));
        return;
    }
    if (in(a, &threadIdx, sizeof threadIdx) || in(a, &blockIdx, sizeof blockIdx) ||
        (a >= (uintptr_t)__executable_start && a < (uintptr_t)_end))
        return;  // the emulator's own variables
    if (a >= log->stack_lo && a < log->stack_hi) { ++log->local; return; }
    out_of_bounds(at, a, write, -1, 0);
}

std::vector<Log>* block_logs = nullptr;
std::unordered_map<uintptr_t, Site> sites;
struct Sharing { unsigned block; bool several; int16_t array; };  // the last traced block to touch a sector; more than one?
std::unordered_map<uintptr_t, Sharing> distinct_sectors;  // over the run
std::unordered_set<uintptr_t> block_sectors;  // over this block's loads
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

// The bytes a warp access asks for, each once: lanes reading the same float (a broadcast) need it once.
uint64_t distinct_bytes(const std::vector<const Access*>& lanes) {
    std::vector<std::pair<uintptr_t, uintptr_t>> spans;  // [start, end) per lane, in address order
    for (auto* x : lanes) spans.push_back({x->addr, x->addr + x->size});
    std::sort(spans.begin(), spans.end());
    uint64_t bytes = 0;
    uintptr_t covered = 0;  // the end of the bytes counted so far
    for (auto [lo, hi] : spans) {
        lo = std::max(lo, covered);
        if (hi > lo) bytes += hi - lo;
        covered = std::max(covered, hi);
    }
    return bytes;
}

struct Issue {  // one warp instruction: an access site, run for the k-th time
    uintptr_t pc;
    uint32_t k;
    bool operator==(const Issue& o) const { return pc == o.pc && k == o.k; }
};
struct IssueHash { size_t operator()(const Issue& i) const { return std::hash<uintptr_t>()(i.pc * 1000003u + i.k); } };

// Rounds of global loads a thread waits on in one phase, from its accesses in program order: a
// load starts a round when none is open or when its site already ran in the open round (the
// next pass of a loop, whose math waits on this pass's loads); a load whose value the thread next
// stores to shared memory stages a tile and waits on nothing: a phase's staging loads are one
// round together (the copy's iterations are independent, however the loop is written). The
// trace cannot see registers, so a load it cannot tell apart joins the round open.
uint64_t phase_rounds(const std::vector<Access>& a) {
    uint64_t rounds = 0;
    bool staged = false, open = false;
    std::unordered_set<uintptr_t> in_round;
    for (size_t i = 0; i < a.size(); ++i) {
        if (a[i].write || is_shared(a[i].addr)) continue;
        if (i + 1 < a.size() && a[i + 1].write && is_shared(a[i + 1].addr)) {
            staged = true;
            continue;
        }
        if (!open || !in_round.insert(a[i].pc).second) {
            ++rounds;
            open = true;
            in_round = {a[i].pc};
        }
    }
    return rounds + staged;
}

uint64_t load_rounds = 0;  // over the warps: per warp and phase, its lanes' most rounds (phase_rounds)

void count_warp(const std::vector<Log*>& threads, uint32_t live) {
    uint64_t most = 0;
    for (auto* t : threads) most = std::max(most, phase_rounds(t->accesses));
    load_rounds += most;
    std::unordered_map<Issue, std::vector<const Access*>, IssueHash> issued;  // -> the lanes' accesses
    for (auto* t : threads)
        for (const Access& x : t->accesses) issued[{x.pc, x.k}].push_back(&x);
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
            s.ideal_sectors += (distinct_bytes(lanes) + SECTOR - 1) / SECTOR;
            for (auto sector : touched) {
                auto [it, fresh] = distinct_sectors.try_emplace(sector, Sharing{current_block, false, first.array});
                it->second.several = it->second.several || (!fresh && it->second.block != current_block);
                it->second.block = current_block;
            }
            for (auto sector : touched) l2_sectors += first.write || block_sectors.insert(sector).second;
        }
    }
}

bool overflow = false;

// Per warp of the running block: its lanes that have returned, and those that have returned or
// wait at the block's barrier. Once every lane of a warp is one or the other, the warp has made
// all its accesses of this phase: they are counted then, so what is held between two barriers is
// a warp's records, not the block's (the cost of an access does not grow with the block).
std::vector<unsigned> returned, settled;

unsigned lanes_of(unsigned w) { return std::min<unsigned>(WARP, block_logs->size() - w * WARP); }

void count_warp_now(unsigned w) {
    std::vector<Log*> warp;
    for (unsigned t = w * WARP; t < w * WARP + lanes_of(w); ++t) warp.push_back(&(*block_logs)[t]);
    count_warp(warp, warp.size());
    for (auto* l : warp) l->accesses.clear();
}

void settle(unsigned t, bool done) {  // thread t has returned (done) or waits at __syncthreads()
    const unsigned w = t / WARP;
    returned[w] += done;
    if (++settled[w] == lanes_of(w)) count_warp_now(w);
}

void count_phase() {  // at a barrier (and the block's end): the warps not counted yet
    for (unsigned w = 0; w < settled.size(); ++w) {
        if (settled[w] < lanes_of(w)) count_warp_now(w);
        settled[w] = returned[w];
    }
    end_phase_races();
}

void count_phase_of(std::vector<Log>& logs) {  // the block's end: its last phase, its local accesses, an overflow
    count_phase();
    block_logs = nullptr;
    for (auto& l : logs) {
        local_accesses += l.local;
        overflow = overflow || l.overflow;
    }
}

void take_turn(unsigned t) {  // before each turn of CUDA thread t: its log, and its stack's bounds
    Log& log = (*block_logs)[t];
    log.stack_lo = (uintptr_t)emu_run->fibers[t].stack;
    log.stack_hi = log.stack_lo + EMU_STACK;
    my_log = &log;
}

[[noreturn]] void memory_fault(long thread) {
    FaultLine line;
    line << "fault memory ";
    if (thread < 0) line << "-";
    else line << (uint64_t)thread;
    fault(line << " " << (uint64_t)current_block);
}

// A fault in the guard page below the running fiber's stack is a stack overflow (g++'s
// -fstack-clash-protection makes a large local array touch it too); any other fault in a kernel's
// thread is named with the faulting instruction's offset in the executable, which the runner
// turns into the source's line ("fault signal SIGNAL PC THREAD BLOCK ADDRESS"); outside a kernel, in a
// whole program's host code, "fault host SIGNAL PC ADDRESS". Runs on its own stack (sigaltstack).
void on_fault(int signal, siginfo_t* info, void* context) {
    const auto a = reinterpret_cast<uintptr_t>(info->si_addr);
#if defined(__x86_64__)
    const auto pc = (uintptr_t)static_cast<ucontext_t*>(context)->uc_mcontext.gregs[REG_RIP];
#elif defined(__aarch64__)
    const auto pc = (uintptr_t)static_cast<ucontext_t*>(context)->uc_mcontext.pc;
#else
    const uintptr_t pc = 0;
#endif
    const uint64_t offset = pc - (uintptr_t)__executable_start;
    FaultLine line;
    if (!emu_run)  // a whole program's host code
        fault(line << "fault host " << (uint64_t)signal << " " << offset << " " << (uint64_t)a);
    const auto stack = reinterpret_cast<uintptr_t>(emu_run->fibers[emu_run->current].stack);
    if (a < stack && a + 4096 >= stack)
        fault(line << "fault stack " << (uint64_t)EMU_STACK << " " << (uint64_t)emu_run->current << " "
                   << (uint64_t)current_block);
    fault(line << "fault signal " << (uint64_t)signal << " " << offset << " " << (uint64_t)emu_run->current << " "
               << (uint64_t)current_block << " " << (uint64_t)a);
}

void catch_stack_overflow() {
    static char alternate[1 << 16];
    stack_t stack = {};
    stack.ss_sp = alternate;
    stack.ss_size = sizeof alternate;
    sigaltstack(&stack, nullptr);
    struct sigaction action = {};
    action.sa_sigaction = on_fault;
    action.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESETHAND;  // reset: a fault it leaves recurs, now fatal
    sigaction(SIGSEGV, &action, nullptr);
    sigaction(SIGBUS, &action, nullptr);
}

emu_index block_index(dim3 grid, unsigned linear) {
    return {linear % grid.x, linear / grid.x % grid.y, linear / (grid.x * grid.y)};
}

// Run block `linear` of a launch of `grid` x `block`, each thread calling `body`, every access counted.
void run_block(const std::function<void()>& body, dim3 grid, dim3 block, unsigned linear) {
    const unsigned n = block.x * block.y * block.z;
    std::vector<Log> logs(n);
    for (auto& l : logs) l.cap = MAX_RECORDS / n;
    block_sectors.clear();
    written.clear();
    current_block = linear;
    block_logs = &logs;
    returned.assign((n + WARP - 1) / WARP, 0);
    settled = returned;
    const auto thread = [&](unsigned t) {
        try {
            body();
            settle(t, true);
        } catch (const std::bad_alloc&) {  // in the kernel (new), or in the records its accesses make
            memory_fault(t);
        }
    };
    emu_run_block(block, block_index(grid, linear), thread, count_phase, take_turn);
    my_log = nullptr;
    count_phase_of(logs);
    block_logs = nullptr;  // a block run untraced next has none
}

// A thread of a block run untraced: `body`, a failed allocation in it reported.
std::function<void(unsigned)> untraced_thread(const std::function<void()>& body) {
    return [&body](unsigned) {
        try {
            body();
        } catch (const std::bad_alloc&) {
            memory_fault(emu_run->current);
        }
    };
}

// The same block run, nothing recorded (a whole program's blocks outside the traced sample).
void run_untraced_block(const std::function<void()>& body, dim3 grid, dim3 block, unsigned linear) {
    current_block = linear;
    emu_run_block(block, block_index(grid, linear), untraced_thread(body));
}

// A cooperative launch's blocks, nothing recorded: they take turns between the grid's barriers
// (cuda_emu.h's emu_run_grid), which the lab's counts, one block's at a time, cannot follow.
void run_cooperative(const std::function<void()>& body, dim3 grid, dim3 block) {
    emu_run_grid(grid.x * grid.y * grid.z, [grid](unsigned b) { return block_index(grid, b); }, block,
                 untraced_thread(body), [](unsigned b) { current_block = b; });
}

// Every count back to nothing: the next launch of a whole program starts afresh.
void reset_counts() {
    sites.clear();
    distinct_sectors.clear();
    hazards.clear();
    barrier_sites.clear();
    l2_sectors = local_accesses = load_rounds = 0;
    overflow = false;
    oob = {};
}

// The counts of the launch (or launches since `reset_counts`) as STATS rows (see the top of the file).
void write_stats(FILE* out) {
    const auto base = (uintptr_t)__executable_start;
    for (auto& [pc, s] : sites)
        std::fprintf(out, "site %lx %d %d %u %lu %lu %lu %lu %lu %lu %lu %lu\n", (unsigned long)(pc - base), s.space,
                     (int)s.write, s.size, s.instructions, s.lanes, s.divergent, s.sectors, s.ideal_sectors,
                     s.wavefronts, s.ideal_wavefronts, s.bytes);
    // Per array: its distinct sectors that several traced blocks touch, those one touches, and all it spans.
    // The __device__ variables together last, where any was touched.
    std::vector<std::pair<uint64_t, uint64_t>> footprint(arrays.size() + 1);
    for (auto& [sector, sharing] : distinct_sectors) {
        auto& f = footprint[sharing.array == DEVICE_VARIABLE ? arrays.size() : (size_t)sharing.array];
        ++(sharing.several ? f.first : f.second);
    }
    for (size_t i = 0; i < arrays.size(); ++i) {
        const auto lo = (uintptr_t)arrays[i].base;
        const uint64_t spans = arrays[i].bytes ? (lo + arrays[i].bytes - 1) / SECTOR - lo / SECTOR + 1 : 0;
        std::fprintf(out, "footprint %zu %lu %lu %lu\n", i, footprint[i].first, footprint[i].second, spans);
    }
    if (footprint.back().first + footprint.back().second) {
        uint64_t spans = 0;
        for (auto [from, to] : device_vars) spans += (to - 1) / SECTOR - from / SECTOR + 1;
        std::fprintf(out, "footprint %zu %lu %lu %lu\n", arrays.size(), footprint.back().first, footprint.back().second,
                     spans);
    }
    std::fprintf(out, "l2_sectors %lu\nlocal %lu\nrounds %lu\n", l2_sectors, local_accesses, load_rounds);
    for (auto& [key, f] : hazards)
        std::fprintf(out, "hazard %d %lx %lx %lu %u %u %u %lu %d %d\n", key.hazard, (unsigned long)(key.first - base),
                     (unsigned long)(key.second - base), f.count, f.first_thread, f.second_thread, f.block,
                     (unsigned long)f.offset, (int)f.across_warps, (int)f.global);
    for (auto& b : barrier_sites)
        std::fprintf(out, "barriers %lx %lx %u %u %u\n", (unsigned long)b.site, (unsigned long)b.other, b.waited, b.threads,
                     b.block);
    if (overflow) std::fprintf(out, "overflow %zu\n", MAX_RECORDS);
    if (oob.count)
        std::fprintf(out, "oob %lu %lx %d %d %ld %u %u %u %u %u %u\n", oob.count, (unsigned long)(oob.pc - base),
                     (int)oob.write, oob.array, oob.offset, oob.thread[0], oob.thread[1], oob.thread[2], oob.block[0],
                     oob.block[1], oob.block[2]);
}

}  // namespace

void __syncthreads() {
    if (block_logs) settle(emu_run->current, false);  // none in a block run untraced
    emu_block_gate->arrive_and_wait(__builtin_return_address(0));
}

void emu_barrier_fault(unsigned waited, unsigned threads, const void* site) {
    FaultLine line;
    fault(line << "fault barrier " << (uint64_t)waited << " " << (uint64_t)threads << " "
               << (uint64_t)((uintptr_t)site - 1 - (uintptr_t)__executable_start) << " " << (uint64_t)current_block);
}

void emu_grid_fault(const void* site, unsigned waited, unsigned blocks) {
    FaultLine line;
    fault(line << "fault grid " << (uint64_t)((uintptr_t)site - 1 - (uintptr_t)__executable_start) << " "
               << (uint64_t)waited << " " << (uint64_t)blocks);
}

void emu_barrier_sites(unsigned waited, unsigned threads, const void* site, const void* other) {
    const auto base = (uintptr_t)__executable_start;
    const BarrierSites pair{(uintptr_t)site - 1 - base, (uintptr_t)other - 1 - base, waited, threads, current_block};
    for (auto& seen : barrier_sites)
        if (seen.site == pair.site && seen.other == pair.other) return;
    if (barrier_sites.size() < MAX_BARRIER_SITES) barrier_sites.push_back(pair);
}

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
        record((void*)p, BITS / 8, true, __builtin_return_address(0), true);                           \
        return *p;                                                                                     \
    }                                                                                                  \
    extern "C" void __tsan_atomic##BITS##_store(volatile uint##BITS##_t* p, uint##BITS##_t v, int) { *p = v; }
// Read-modify-write atomics (a host's __sync_* and __atomic_* builtins, as cuda-samples'
// systemWideAtomics checks with): recorded as the load is, then done in place (one OS thread).
#define GM_ATOMIC_RMW(BITS, NAME, NEW)                                                                 \
    extern "C" uint##BITS##_t __tsan_atomic##BITS##_##NAME(volatile uint##BITS##_t* p, uint##BITS##_t v, int) { \
        record((void*)p, BITS / 8, true, __builtin_return_address(0), true);                           \
        const uint##BITS##_t old = *p;                                                                 \
        *p = NEW;                                                                                      \
        return old;                                                                                    \
    }
#define GM_ATOMIC_CAS(BITS)                                                                            \
    extern "C" uint##BITS##_t __tsan_atomic##BITS##_compare_exchange_val(volatile uint##BITS##_t* p,   \
                                                                        uint##BITS##_t expected,       \
                                                                        uint##BITS##_t v, int, int) {  \
        record((void*)p, BITS / 8, true, __builtin_return_address(0), true);                           \
        const uint##BITS##_t old = *p;                                                                 \
        if (old == expected) *p = v;                                                                   \
        return old;                                                                                    \
    }                                                                                                  \
    extern "C" int __tsan_atomic##BITS##_compare_exchange_strong(volatile uint##BITS##_t* p,           \
                                                                uint##BITS##_t* expected,              \
                                                                uint##BITS##_t v, int, int) {          \
        const uint##BITS##_t want = *expected, old = __tsan_atomic##BITS##_compare_exchange_val(p, want, v, 0, 0); \
        *expected = old;                                                                               \
        return old == want;                                                                            \
    }                                                                                                  \
    extern "C" int __tsan_atomic##BITS##_compare_exchange_weak(volatile uint##BITS##_t* p,             \
                                                              uint##BITS##_t* expected, uint##BITS##_t v, \
                                                              int, int) {                              \
        return __tsan_atomic##BITS##_compare_exchange_strong(p, expected, v, 0, 0);                    \
    }
#define GM_ATOMICS(BITS)                                                                               \
    GM_ATOMIC_HOOKS(BITS)                                                                              \
    GM_ATOMIC_RMW(BITS, exchange, v)                                                                   \
    GM_ATOMIC_RMW(BITS, fetch_add, old + v)                                                            \
    GM_ATOMIC_RMW(BITS, fetch_sub, old - v)                                                            \
    GM_ATOMIC_RMW(BITS, fetch_and, old & v)                                                            \
    GM_ATOMIC_RMW(BITS, fetch_or, old | v)                                                             \
    GM_ATOMIC_RMW(BITS, fetch_xor, old ^ v)                                                            \
    GM_ATOMIC_RMW(BITS, fetch_nand, ~(old & v))                                                        \
    GM_ATOMIC_CAS(BITS)
GM_ATOMICS(8)
GM_ATOMICS(16)
GM_ATOMICS(32)
GM_ATOMICS(64)
extern "C" void __tsan_func_entry(void*) {}
extern "C" void __tsan_func_exit() {}
extern "C" void __tsan_init() {}
extern "C" void __tsan_vptr_update(void**, void*) {}
extern "C" void __tsan_vptr_read(void**) {}

#ifndef GM_LAB_PROGRAM  // a whole program has its own main (program_runtime.cpp)
int run(char** argv);

int main(int argc, char** argv) {
    if (argc != 3) {
        std::fprintf(stderr, "usage: %s SPEC STATS\n", argv[0]);
        return 2;
    }
    stats_fd = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (stats_fd < 0) {
        std::perror(argv[2]);
        return 2;
    }
    // The learner's printf goes to stdout (runner.py keeps it as Trace.output): unbuffered, so a
    // kernel that crashes or faults after printing has still printed (glibc writes each call whole).
    std::setvbuf(stdout, nullptr, _IONBF, 0);
    catch_stack_overflow();
    try {
        return run(argv);
    } catch (const std::bad_alloc&) {  // the lab's own, outside any CUDA thread (the arrays, the counts)
        memory_fault(-1);
    }
}

int run(char** argv) {
    std::ifstream spec(argv[1]);
    dim3 grid, block;
    int kernel = 0;
    std::vector<unsigned> blocks;
    std::vector<void*> args;
    std::vector<long> given;  // each argument's bytes by value; -1 for a pointer
    std::vector<std::unique_ptr<__int128[]>> scalars;  // each scalar argument's bytes, 16-byte aligned
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
        else if (key == "device") {
            uintptr_t from, bytes;
            in >> from >> bytes;
            device_vars.push_back({(uintptr_t)__executable_start + from, (uintptr_t)__executable_start + from + bytes});
        }
        else if (key == "gap") {
            Gap g;
            in >> g.array >> g.from >> g.to;
            const auto base = (uintptr_t)__executable_start;
            shared_gaps.push_back({base + g.array, base + g.from, base + g.to});
        }
        else if (key == "arg") {
            std::string kind;
            in >> kind;
            if (kind == "P") {
                Array a;
                in >> a.bytes >> a.path;
                const size_t padded = (a.bytes + 2 * GUARD + 255) / 256 * 256;  // 256-byte aligned, as cudaMalloc
                char* mem = static_cast<char*>(std::aligned_alloc(256, padded));
                if (!mem) throw std::bad_alloc();
                std::memset(mem, 0, padded);
                a.base = mem + GUARD;
                std::ifstream(a.path, std::ios::binary).read(a.base, a.bytes);
                arrays.push_back(a);
                args.push_back(a.base);
                given.push_back(-1);
            } else if (kind == "N") {  // a NULL pointer
                args.push_back(nullptr);
                given.push_back(-1);
            } else {  // V: a scalar's (or a struct's) bytes in hex
                std::string hex;
                in >> hex;
                scalars.emplace_back(new __int128[hex.size() / 32 + 1]());
                auto* bytes = reinterpret_cast<unsigned char*>(scalars.back().get());
                for (size_t i = 0; i + 1 < hex.size(); i += 2) bytes[i / 2] = std::stoul(hex.substr(i, 2), nullptr, 16);
                args.push_back(bytes);
                given.push_back((long)(hex.size() / 2));
            }
        }
    }
    for (size_t i = 0; i < given.size(); ++i) {  // a struct by value of another size than the parameter's type
        const long want = gm_value_bytes(kernel, (int)i);
        if (given[i] >= 0 && want >= 0 && given[i] != want) {
            FaultLine fault_line;
            fault(fault_line << "fault argument " << (uint64_t)i << " " << (uint64_t)given[i] << " " << (uint64_t)want);
        }
    }
    gridDim = grid;
    blockDim = block;
    const std::function<void()> body = [&] { gm_body(kernel, args.data()); };
    // Every block runs, so the arrays hold the whole result: the sample first, traced, then the rest
    // untraced (a grid's blocks run in any order on a GPU too); not where the sample went out of
    // bounds: the run is a fault, reported as such, and its arrays are not the result.
    for (unsigned b : blocks) run_block(body, grid, block, b);
    const unsigned long long total = oob.count ? 0 : (unsigned long long)grid.x * grid.y * grid.z;
    size_t next = 0;
    for (unsigned long long b = 0; b < total; ++b) {
        if (next < blocks.size() && blocks[next] == b) { ++next; continue; }
        run_untraced_block(body, grid, block, (unsigned)b);
    }
    for (auto& a : arrays) std::ofstream(a.path, std::ios::binary).write(a.base, a.bytes);
    FILE* out = fdopen(stats_fd, "w");
    write_stats(out);
    std::fclose(out);
    return 0;
}
#endif
