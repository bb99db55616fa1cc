// The kernel lab's runtime for a whole program (gm.lab.run_program; built by builder.py, run by
// runner.py): the learner's file keeps its own main(), and CUDA's host API runs on the CPU.
// cudaMalloc'd arrays are the traced run's arrays (guard zones either side, named by the line that
// allocated them), cudaMemcpy and cudaMemset are memcpy and memset, a launch (reader.for_program
// rewrites `k<<<...>>>(args)`) runs every block of its grid before it returns, an evenly spaced
// sample of them traced as trace_runtime.cpp traces one launch, each traced launch's counts
// written to STATS as they are. Events read the CPU's clock: their times are the lab's, not a GPU's.
//
// The environment names the files: GM_LAB_SPEC, whose lines are "max_threads N" (the most CUDA
// threads traced per launch), "max_launches N" (the launches traced; later ones run untraced),
// "max_repeats N" (where given, the runs of one launch, the same kernel, configuration and arguments;
// later ones are not run),
// "gap ARRAY FROM TO" (as trace_runtime.cpp's), "prop FIELD VALUE" (cudaGetDeviceProperties' fields
// as the GPU's data file gives them; "name" takes the rest of the line); and GM_LAB_STATS, which gets per traced launch
// "launch KERNEL LINE GX GY GZ BX BY BZ SHARED_MEM TRACED_BLOCKS", one "array I BYTES SITE FREED" per
// cudaMalloc so far, the launch's rows as trace_runtime.cpp writes them and "end"; "refused KERNEL LINE GX GY GZ BX BY BZ
// SHARED_MEM" for a launch CUDA would refuse (it returns cudaErrorInvalidConfiguration through
// cudaGetLastError and runs nothing); "nomemory BYTES SITE" for a cudaMalloc past the lab's memory;
// at exit "untraced N", "repeated N" (launches not run again), "capped N" (launches past max_repeats)
// and "events N" (the events recorded).
// A fault is its "fault" line, as trace_runtime.cpp writes it, after the "launch" line of the launch it
// stopped.
#define GM_LAB_PROGRAM
#include "trace_runtime.cpp"

#include <cassert>
#include <cerrno>
#include <chrono>
#include <cstdarg>
#include <map>
#include <set>
#include <string_view>
#include "cublasLt.h"
#include <cmath>

struct CUevent_st {
    std::chrono::steady_clock::time_point at;
    bool captured = false;  // recorded on a capturing stream: a stream that waits on it joins the capture
};
// A graph's node: what it runs. A graph's nodes, in the order added; an instantiated graph's, copied.
struct CUgraphNode_st { std::function<void()> run; };
struct CUgraph_st { std::vector<std::unique_ptr<CUgraphNode_st>> nodes; };
struct CUgraphExec_st { std::vector<std::function<void()>> runs; };
struct CUstream_st {};

namespace {

cudaError_t captured(cudaStream_t stream, std::function<void()> run);  // below, with the graphs

struct Program {
    FILE* stats = nullptr;
    unsigned max_threads = 1 << 16, max_launches = 100, traced = 0, untraced = 0, events = 0, repeated = 0;
    unsigned max_repeats = 0, capped = 0;  // 0: every run
    unsigned cooperative = 0;  // cooperative launches run (untraced)
    cudaDeviceProp prop{};
    cudaError_t last_error = cudaSuccess;
    cudaError_t lost = cudaSuccess;  // a device-side assert's cudaErrorAssert: every call's from then on
};
Program program;

// A launch need not run again when its kernel, configuration and arguments are those of one that
// ran, and nothing it read or wrote has been written since: what it writes is in memory already (a
// benchmark's loop of the same launch). Each array has a version, raised by every write to it (a
// cudaMemcpy or cudaMemset, a launch that wrote it); the program's own statics have one together.
// A launch that wrote what it read, printed, touched memory that is no array of cudaMalloc's (the
// host's, a managed array, a __device__ variable written) or ran out of bounds is never one of these.
struct Ran { std::vector<std::pair<size_t, uint64_t>> arrays; bool statics = false; uint64_t statics_version = 0; };
std::map<std::string, Ran> ran;  // the launch's identity -> what it touched, at the versions it left
// With max_repeats, a launch's runs are counted since the host last wrote (cudaMemcpy, cudaMemset)
// an array it touched: a check that resets its output before each launch runs every one; a
// benchmark's loop, which writes only what the launch itself writes, is capped. A launch that
// touched an array the host writes directly (managed, mapped) is never capped.
struct Runs { unsigned count = 0; std::vector<std::pair<size_t, uint64_t>> host; };
std::map<std::string, Runs> runs;  // the launch's identity -> its runs, and the host's writes it saw
std::vector<uint64_t> host_versions;  // per array: raised by each host write to it
std::vector<uint64_t> versions;  // per array
std::vector<bool> managed;       // per array: the host writes it without the runtime's calls
uint64_t statics_version = 0;
bool printed = false;  // by a CUDA thread of the launch running

void host_wrote(const void* dst, size_t bytes) {  // the host wrote [dst, dst + bytes)
    const auto a = (uintptr_t)dst;
    bool array = false;
    for (size_t i = 0; i < arrays.size(); ++i) {
        const auto lo = (uintptr_t)arrays[i].base;
        if (a < lo + arrays[i].bytes && a + bytes > lo) {
            ++versions[i];
            ++host_versions[i];
            array = true;
        }
    }
    if (!array) ++statics_version;  // a __constant__ or __device__ variable (or the host's own memory)
}

// A launch is not run again either where its kernel, configuration and arguments are those of one
// that ran on the same contents of every array it touched (a benchmark's loop that clears its output
// with cudaMemset before each launch; a check run again): what it wrote then is copied in. Contents
// are compared by their hash, computed again only for an array written since. A launch is
// remembered at its second run (its first names the arrays it touches), and again after it ran on other contents, where it touched nothing
// but cudaMalloc's arrays (as `ran` requires, though it may write what it read), while the copies
// stay within MEMO_BYTES. The kernels run on one CPU thread, so the same contents give the same result.
// An array is known here by where it lies and its size: one freed and allocated again in its place
// (llm.c's scratch, cudaMalloc'd and freed around each launch) is the same array to a launch.
using Span = std::pair<uintptr_t, size_t>;
struct Memo {
    std::vector<std::pair<Span, uint64_t>> before;  // each array it touched: its contents' hash as it began
    std::vector<std::pair<Span, std::string>> after;  // each array it wrote: its bytes as it ended
};
std::map<std::string, Memo> memos;
std::map<std::string, std::vector<Span>> touches;  // identity -> the arrays its last run touched
size_t memo_bytes = 0;
constexpr size_t MEMO_BYTES = size_t(1) << 28;
std::vector<std::pair<uint64_t, uint64_t>> hashes;  // per array: (its version + 1, its contents' hash); 0: none yet

uint64_t contents(size_t i) {  // array i's contents' hash
    hashes.resize(arrays.size());
    auto& [version, hash] = hashes[i];
    if (version != versions[i] + 1) {
        hash = std::hash<std::string_view>{}(std::string_view(arrays[i].base, arrays[i].bytes));
        version = versions[i] + 1;
    }
    return hash;
}

long live(Span span) {  // the array not freed that lies at `span`, or -1
    for (size_t i = arrays.size(); i-- > 0;)
        if (!arrays[i].freed && (uintptr_t)arrays[i].base == span.first && arrays[i].bytes == span.second) return (long)i;
    return -1;
}

std::vector<std::pair<Span, uint64_t>> hashed(const std::vector<Span>& which) {
    std::vector<std::pair<Span, uint64_t>> h;
    for (Span span : which) {
        const long i = live(span);
        h.push_back({span, i < 0 ? 0 : contents(i)});
    }
    return h;
}

bool replayed(const std::string& identity) {  // the launch's result copied in, where it is known
    const auto found = memos.find(identity);
    if (found == memos.end()) return false;
    for (auto [span, hash] : found->second.before) {
        const long i = live(span);
        if (i < 0 || contents(i) != hash) {  // other contents: run, and remembered anew at its next run
            for (auto& [at, bytes] : found->second.after) memo_bytes -= bytes.size();
            memos.erase(found);
            return false;
        }
    }
    for (auto& [span, bytes] : found->second.after) {
        const long i = live(span);
        std::memcpy(arrays[i].base, bytes.data(), bytes.size());
        ++versions[i];
    }
    return true;
}

bool unchanged(const Ran& r) {
    for (auto [i, version] : r.arrays)
        if (arrays[i].freed || versions[i] != version) return false;
    return !r.statics || r.statics_version == statics_version;
}

void at_exit() {
    std::fprintf(program.stats, "untraced %u\nrepeated %u\ncapped %u\nevents %u\ncooperative %u\n", program.untraced,
                 program.repeated, program.capped, program.events, program.cooperative);
    std::fflush(program.stats);
}

// Before the learner's main: the spec read, the stats file opened, faults caught.
__attribute__((constructor)) void start() {
    const char* spec_path = std::getenv("GM_LAB_SPEC");
    const char* stats_path = std::getenv("GM_LAB_STATS");
    if (!spec_path || !stats_path) {
        std::fprintf(stderr, "a program the kernel lab built runs through gm.lab.run_program\n");
        std::_Exit(2);
    }
    stats_fd = open(stats_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (stats_fd < 0) {
        std::perror(stats_path);
        std::_Exit(2);
    }
    program.stats = fdopen(stats_fd, "w");
    std::setvbuf(stdout, nullptr, _IONBF, 0);  // what it printed before a fault is kept
    catch_stack_overflow();
    cudaDeviceProp& p = program.prop;
    std::ifstream spec(spec_path);
    std::string line;
    const auto base = (uintptr_t)__executable_start;
    while (std::getline(spec, line)) {
        std::istringstream in(line);
        std::string key, field;
        in >> key;
        if (key == "max_threads") in >> program.max_threads;
        else if (key == "max_launches") in >> program.max_launches;
        else if (key == "max_repeats") in >> program.max_repeats;
        else if (key == "static") {
            uintptr_t from, bytes;
            in >> from >> bytes;
            device_statics.push_back({base + from, base + from + bytes});
            device_vars.push_back({base + from, base + from + bytes});
        }
        else if (key == "shared") {
            uintptr_t at, bytes;
            in >> at >> bytes;
            emu_shared_arrays.push_back({reinterpret_cast<char*>(base + at), bytes});
        }
        else if (key == "gap") {
            Gap g;
            in >> g.array >> g.from >> g.to;
            shared_gaps.push_back({base + g.array, base + g.from, base + g.to});
        } else if (key == "prop") {
            in >> field;
            if (field == "name") {
                std::getline(in >> std::ws, field);
                std::snprintf(p.name, sizeof p.name, "%s", field.c_str());
            }
            else if (field == "major") in >> p.major;
            else if (field == "minor") in >> p.minor;
            else if (field == "sms") in >> p.multiProcessorCount;
            else if (field == "l2") in >> p.l2CacheSize;
            else if (field == "memory") in >> p.totalGlobalMem;
            else if (field == "clock_khz") in >> p.clockRate;
            else if (field == "memory_clock_khz") in >> p.memoryClockRate;
            else if (field == "bus_bits") in >> p.memoryBusWidth;
            else if (field == "smem_per_block_optin") in >> p.sharedMemPerBlockOptin;
            else if (field == "smem_per_sm") in >> p.sharedMemPerMultiprocessor;
            else if (field == "threads_per_sm") in >> p.maxThreadsPerMultiProcessor;
            else if (field == "blocks_per_sm") in >> p.maxBlocksPerMultiProcessor;
            else if (field == "registers_per_sm") in >> p.regsPerMultiprocessor;
        }
    }
    p.sharedMemPerBlock = 48 * 1024;  // CUDA's static limit; more is opted into (sharedMemPerBlockOptin)
    p.totalConstMem = 64 * 1024;
    p.regsPerBlock = 64 * 1024;
    p.warpSize = 32;
    p.maxThreadsPerBlock = 1024;
    p.maxThreadsDim[0] = p.maxThreadsDim[1] = 1024;
    p.maxThreadsDim[2] = 64;
    p.maxGridSize[0] = 0x7fffffff;
    p.maxGridSize[1] = p.maxGridSize[2] = 65535;
    p.concurrentKernels = p.canMapHostMemory = p.unifiedAddressing = p.managedMemory = p.cooperativeLaunch = 1;
    p.deviceOverlap = 1;
    p.pageableMemoryAccess = 0;  // a kernel reads the host's memory only where it is mapped (cudaHostAlloc, cudaHostRegister)
    std::atexit(at_exit);
}

// What the host had written of the arrays the launch just run touched (runs[identity].host); an
// array the host writes directly gets a version no later launch matches.
void note_host(const std::string& identity) {
    if (identity.empty()) return;
    auto& host = runs[identity].host;
    host.clear();
    for (size_t i = 0; i < arrays.size(); ++i)
        if (touched.read[i] || touched.written[i]) host.push_back({i, managed[i] ? ~host_versions[i] : host_versions[i]});
}

bool refused(dim3 grid, dim3 block, size_t shared_mem) {  // what CUDA refuses to launch
    const uint64_t threads = (uint64_t)block.x * block.y * block.z;
    return !grid.x || !grid.y || !grid.z || !threads || threads > 1024 || block.z > 64 || grid.y > 65535 ||
           grid.z > 65535 || shared_mem > EMU_DYNAMIC_SHARED_MAX ||
           (uint64_t)grid.x * grid.y * grid.z > 0xffffffffull;  // the lab numbers a block in 32 bits
}

// The memory of freed arrays allocate() made, by size, for the next allocation of that size, as CUDA's
// allocator hands freed memory out again (a scratch array cudaMalloc'd and freed around each launch
// lands where the last one was); memory the host registered stays the host's.
std::map<const char*, size_t> made;  // an array's base -> its memory's size, for the arrays allocate() made
std::multimap<size_t, char*> spare;

cudaError_t allocate(void** ptr, size_t bytes, uintptr_t site) {  // a device array, 256-byte aligned, guarded
    if (program.lost) return program.lost;
    if (!ptr) return cudaErrorInvalidValue;
    const size_t padded = (bytes + 2 * GUARD + 255) / 256 * 256;
    const auto reused = spare.find(padded);
    char* mem = reused != spare.end() ? reused->second : static_cast<char*>(std::aligned_alloc(256, padded));
    if (reused != spare.end()) spare.erase(reused);
    if (!mem) {  // past the lab's memory for a program: said beside the program's own message
        std::fprintf(program.stats, "nomemory %zu %lx\n", bytes, (unsigned long)(site - 1 - (uintptr_t)__executable_start));
        std::fflush(program.stats);
        return program.last_error = cudaErrorMemoryAllocation;
    }
    std::memset(mem, 0, padded);
    arrays.push_back({mem + GUARD, bytes, "", site - 1 - (uintptr_t)__executable_start});
    made[mem + GUARD] = padded;
    versions.push_back(0);
    host_versions.push_back(0);
    managed.push_back(false);
    *ptr = mem + GUARD;
    return cudaSuccess;
}

// Run every block of the launch, traced or not; what it touched versioned, and kept as `ran` where
// running it again could change nothing.
void run_launch(const std::function<void()>& body, dim3 grid, dim3 block, const std::string& identity,
                const std::vector<bool>& chosen, bool cooperative) {
    const auto known = identity.empty() || memos.count(identity) ? touches.end() : touches.find(identity);
    const auto before = known != touches.end() ? hashed(known->second) : std::vector<std::pair<Span, uint64_t>>{};
    touched = {std::vector<uint8_t>(arrays.size()), std::vector<uint8_t>(arrays.size())};
    printed = false;
    touching = true;
    if (cooperative) run_cooperative(body, grid, block);
    for (unsigned b = 0; b < chosen.size() && !program.lost && !cooperative; ++b)
        (chosen[b] ? run_block : run_untraced_block)(body, grid, block, b);
    touching = false;
    Ran r{{}, touched.statics_read, statics_version};
    bool again = !identity.empty() && !touched.other && !printed && !oob.count;
    for (size_t i = 0; i < arrays.size(); ++i) {
        if (touched.written[i]) ++versions[i];
        if (touched.written[i] || touched.read[i]) r.arrays.push_back({i, versions[i]});
        again = again && !(touched.written[i] && touched.read[i]) && !((touched.written[i] || touched.read[i]) && managed[i]);
    }
    if (touched.other) ++statics_version;
    if (again) ran[identity] = r;
    else ran.erase(identity);
    std::vector<size_t> mine;
    std::vector<Span> these;
    bool plain = !identity.empty() && !touched.other && !touched.statics_read && !printed && !oob.count && !program.lost;
    for (size_t i = 0; i < arrays.size(); ++i)
        if (touched.written[i] || touched.read[i]) {
            mine.push_back(i);
            these.push_back({(uintptr_t)arrays[i].base, arrays[i].bytes});
            plain = plain && !managed[i];
        }
    if (!plain) return (void)touches.erase(identity);
    if (known != touches.end() && known->second == these) {
        Memo memo{before, {}};
        size_t bytes = 0;
        for (size_t i : mine)
            if (touched.written[i]) bytes += arrays[i].bytes;
        try {
            if (memo_bytes + bytes <= MEMO_BYTES) {
                for (size_t i : mine)
                    if (touched.written[i])
                        memo.after.push_back({{(uintptr_t)arrays[i].base, arrays[i].bytes},
                                              std::string(arrays[i].base, arrays[i].bytes)});
                memos[identity] = std::move(memo);
                memo_bytes += bytes;
            }
        } catch (const std::bad_alloc&) {}  // past the program's memory: this launch runs each time
    }
    touches[identity] = these;
}

}  // namespace

// What a kernel prints with, as the program's build links it (builder.py: g++ turns some printf
// calls into puts or putchar).
extern "C" int __real_puts(const char* text);
extern "C" int __real_putchar(int c);
extern "C" int __wrap_printf(const char* format, ...) {
    printed = printed || touching;
    va_list args;
    va_start(args, format);
    const int n = std::vprintf(format, args);
    va_end(args);
    return n;
}
extern "C" int __wrap_puts(const char* text) {
    printed = printed || touching;
    return __real_puts(text);
}
extern "C" int __wrap_putchar(int c) {
    printed = printed || touching;
    return __real_putchar(c);
}

// A failed assert (<assert.h> calls glibc's __assert_fail, defined here instead). In a kernel, as
// CUDA has it: the thread prints its file, line, function, block and thread and stops, the launch
// runs no further block, and every call of the runtime from then on returns cudaErrorAssert (the
// context is lost, "device-side assert triggered"). In host code, glibc's message and an abort.
extern "C" void __assert_fail(const char* assertion, const char* file, unsigned line, const char* function) noexcept {
    if (!emu_run) {
        std::fprintf(stderr, "%s: %s:%u: %s: Assertion `%s' failed.\n", program_invocation_short_name, file, line, function,
                     assertion);
        std::abort();
    }
    std::printf("%s:%u: %s: block: [%u,%u,%u], thread: [%u,%u,%u] Assertion `%s` failed.\n", file, line, function,
                blockIdx.x, blockIdx.y, blockIdx.z, threadIdx.x, threadIdx.y, threadIdx.z, assertion);
    program.lost = cudaErrorAssert;
    if (block_logs) settle(emu_run->current, true);
    emu_thread_exit();
}

void emu_launch_config::launch(const char* kernel, unsigned line, void (*call)(void*), void* context,
                               const void* params, size_t bytes) const {
    const std::function<void()> body = [=] { call(context); };
    FILE* out = program.stats;
    if (program.lost) return;
    if (refused(grid, block, shared_mem)) {
        std::fprintf(out, "refused %s %u %u %u %u %u %u %u %zu\n", kernel, line, grid.x, grid.y, grid.z, block.x,
                     block.y, block.z, shared_mem);
        std::fflush(out);
        program.last_error = cudaErrorInvalidConfiguration;
        return;
    }
    std::string identity;
    if (params) {
        const unsigned shape[7] = {grid.x, grid.y, grid.z, block.x, block.y, block.z, (unsigned)shared_mem};
        identity = std::string(kernel) + '\0' + std::string((const char*)shape, sizeof shape) +
                   std::string((const char*)params, bytes);
        const auto found = ran.find(identity);
        if ((found != ran.end() && unchanged(found->second)) || replayed(identity)) {
            ++program.repeated;
            return;
        }
        Runs& r = runs[identity];
        for (auto [i, version] : r.host)
            if (host_versions[i] != version) r.count = 0;  // the host wrote what it touches: a new run
        if (program.max_repeats && r.count >= program.max_repeats) {
            ++program.capped;
            return;
        }
        ++r.count;
    }
    gridDim = grid;
    blockDim = block;
    emu_dynamic_shared_bytes = shared_mem;
    const unsigned threads = block.x * block.y * block.z, blocks = grid.x * grid.y * grid.z;
    if (cooperative || program.traced >= program.max_launches) {
        ++(cooperative ? program.cooperative : program.untraced);
        run_launch(body, grid, block, identity, std::vector<bool>(blocks, false), cooperative);
        note_host(identity);
        return;
    }
    ++program.traced;
    // An evenly spaced sample of the blocks, as runner.run_traced chooses one for a kernel traced alone.
    const unsigned sample = std::max(1u, std::min(blocks, program.max_threads / threads));
    std::vector<bool> chosen(blocks, sample == blocks);
    for (unsigned i = 0; i < sample && sample < blocks; ++i)
        chosen[sample == 1 ? 0 : (unsigned)std::nearbyint((double)i * (blocks - 1) / (sample - 1))] = true;
    const auto traced = (unsigned)std::count(chosen.begin(), chosen.end(), true);
    std::fprintf(out, "launch %s %u %u %u %u %u %u %u %zu %u\n", kernel, line, grid.x, grid.y, grid.z, block.x, block.y,
                 block.z, shared_mem, traced);
    std::fflush(out);  // a fault in this launch follows its line
    reset_counts();
    run_launch(body, grid, block, identity, chosen, false);
    note_host(identity);
    for (size_t i = 0; i < arrays.size(); ++i)
        std::fprintf(out, "array %zu %zu %lx %d\n", i, arrays[i].bytes, (unsigned long)arrays[i].site, (int)arrays[i].freed);
    write_stats(out);
    std::fprintf(out, "end\n");
    std::fflush(out);
}

cudaError_t cudaMalloc(void** ptr, size_t bytes) { return allocate(ptr, bytes, (uintptr_t)__builtin_return_address(0)); }
cudaError_t cudaMallocManaged(void** ptr, size_t bytes, unsigned) {
    const cudaError_t e = allocate(ptr, bytes, (uintptr_t)__builtin_return_address(0));
    if (e == cudaSuccess) managed.back() = true;
    return e;
}
// Pinned host memory is a lab array the host writes without the runtime's calls (as a managed one):
// a kernel may read it through a mapped pointer, which on the CPU is the same address.
cudaError_t cudaMallocHost(void** ptr, size_t bytes) {
    const cudaError_t e = allocate(ptr, bytes, (uintptr_t)__builtin_return_address(0));
    if (e == cudaSuccess) managed.back() = true;
    return e;
}
cudaError_t cudaFree(void* ptr) {
    if (!ptr) return cudaSuccess;
    for (auto& a : arrays)
        if (a.base == ptr && !a.freed) {
            a.freed = true;  // kept, so that a later access names it, until an allocation of its size takes its memory
            const auto mine = made.find(a.base);
            if (mine != made.end()) spare.insert({mine->second, a.base - GUARD});
            return cudaSuccess;
        }
    return program.last_error = cudaErrorInvalidDevicePointer;
}
cudaError_t cudaHostAlloc(void** ptr, size_t bytes, unsigned) {
    const cudaError_t e = allocate(ptr, bytes, (uintptr_t)__builtin_return_address(0));
    if (e == cudaSuccess) managed.back() = true;
    return e;
}
cudaError_t cudaFreeHost(void* ptr) { return cudaFree(ptr); }
// A registered range of the host's memory becomes an array (no guard zones: the memory is the
// program's), named by the line that registered it; unregistered, it is freed as the lab counts.
cudaError_t cudaHostRegister(void* ptr, size_t bytes, unsigned) {
    if (!ptr || !bytes) return program.last_error = cudaErrorInvalidValue;
    arrays.push_back({static_cast<char*>(ptr), bytes, "", (uintptr_t)__builtin_return_address(0) - 1 - (uintptr_t)__executable_start});
    versions.push_back(0);
    host_versions.push_back(0);
    managed.push_back(true);
    return cudaSuccess;
}
cudaError_t cudaHostUnregister(void* ptr) { return cudaFree(ptr); }
cudaError_t cudaHostGetDevicePointer(void** device, void* host, unsigned) {
    *device = host;
    return cudaSuccess;
}
cudaError_t cudaSetDeviceFlags(unsigned) { return cudaSuccess; }
cudaError_t cudaMemcpy(void* dst, const void* src, size_t bytes, cudaMemcpyKind) {
    if (program.lost) return program.lost;
    std::memmove(dst, src, bytes);
    host_wrote(dst, bytes);
    return cudaSuccess;
}
cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind, cudaStream_t stream) {
    if (emu_capturing(stream)) return captured(stream, [=] { cudaMemcpy(dst, src, bytes, kind); });
    return cudaMemcpy(dst, src, bytes, kind);
}
cudaError_t cudaMemcpy2D(void* dst, size_t dst_pitch, const void* src, size_t src_pitch, size_t width, size_t height,
                         cudaMemcpyKind kind) {  // `height` rows of `width` bytes, each pitch apart
    if (width > dst_pitch || width > src_pitch) return program.last_error = cudaErrorInvalidValue;
    for (size_t row = 0; row < height; ++row)
        cudaMemcpy(static_cast<char*>(dst) + row * dst_pitch, static_cast<const char*>(src) + row * src_pitch, width, kind);
    return cudaSuccess;
}
cudaError_t cudaMemcpy2DAsync(void* dst, size_t dst_pitch, const void* src, size_t src_pitch, size_t width,
                              size_t height, cudaMemcpyKind kind, cudaStream_t) {
    return cudaMemcpy2D(dst, dst_pitch, src, src_pitch, width, height, kind);
}
cudaError_t cudaMemset(void* ptr, int value, size_t bytes) {
    std::memset(ptr, value, bytes);
    host_wrote(ptr, bytes);
    return cudaSuccess;
}
cudaError_t cudaMemsetAsync(void* ptr, int value, size_t bytes, cudaStream_t stream) {
    if (emu_capturing(stream)) return captured(stream, [=] { cudaMemset(ptr, value, bytes); });
    return cudaMemset(ptr, value, bytes);
}
cudaError_t cudaDeviceSynchronize() { return program.lost ? program.lost : program.last_error; }  // every launch has finished already
cudaError_t cudaDeviceReset() { return cudaSuccess; }
cudaError_t cudaGetLastError() {
    if (program.lost) return program.lost;
    const cudaError_t e = program.last_error;
    program.last_error = cudaSuccess;
    return e;
}
cudaError_t cudaPeekAtLastError() { return program.lost ? program.lost : program.last_error; }
const char* cudaGetErrorName(cudaError_t error) {
    switch (error) {
        case cudaSuccess: return "cudaSuccess";
        case cudaErrorInvalidValue: return "cudaErrorInvalidValue";
        case cudaErrorMemoryAllocation: return "cudaErrorMemoryAllocation";
        case cudaErrorInvalidConfiguration: return "cudaErrorInvalidConfiguration";
        case cudaErrorInvalidDevicePointer: return "cudaErrorInvalidDevicePointer";
        case cudaErrorNotReady: return "cudaErrorNotReady";
        case cudaErrorAssert: return "cudaErrorAssert";
        case cudaErrorCooperativeLaunchTooLarge: return "cudaErrorCooperativeLaunchTooLarge";
        default: return "cudaErrorNotSupported";
    }
}
const char* cudaGetErrorString(cudaError_t error) {
    switch (error) {
        case cudaSuccess: return "no error";
        case cudaErrorInvalidValue: return "invalid argument";
        case cudaErrorMemoryAllocation: return "out of memory";
        case cudaErrorInvalidConfiguration: return "invalid configuration argument";
        case cudaErrorInvalidDevicePointer: return "invalid device pointer";
        case cudaErrorNotReady: return "device not ready";
        case cudaErrorAssert: return "device-side assert triggered";
        case cudaErrorCooperativeLaunchTooLarge: return "too many blocks in cooperative launch";
        default: return "operation not supported";
    }
}
cudaError_t cudaSetDevice(int device) { return device == 0 ? cudaSuccess : cudaErrorInvalidValue; }
cudaError_t cudaGetDevice(int* device) {
    *device = 0;
    return cudaSuccess;
}
cudaError_t cudaGetDeviceCount(int* count) {
    *count = 1;
    return cudaSuccess;
}
cudaError_t cudaGetDeviceProperties(cudaDeviceProp* prop, int device) {
    if (device != 0) return cudaErrorInvalidValue;
    *prop = program.prop;
    return cudaSuccess;
}
cudaError_t cudaDeviceGetAttribute(int* value, cudaDeviceAttr attr, int device) {
    const cudaDeviceProp& p = program.prop;
    switch (attr) {
        case cudaDevAttrMaxThreadsPerBlock: *value = p.maxThreadsPerBlock; break;
        case cudaDevAttrMaxSharedMemoryPerBlock: *value = (int)p.sharedMemPerBlock; break;
        case cudaDevAttrClockRate: *value = p.clockRate; break;
        case cudaDevAttrMultiProcessorCount: *value = p.multiProcessorCount; break;
        case cudaDevAttrIntegrated: *value = 0; break;
        case cudaDevAttrComputeMode: *value = cudaComputeModeDefault; break;
        case cudaDevAttrComputeCapabilityMajor: *value = p.major; break;
        case cudaDevAttrComputeCapabilityMinor: *value = p.minor; break;
        case cudaDevAttrMaxSharedMemoryPerBlockOptin: *value = (int)p.sharedMemPerBlockOptin; break;
        case cudaDevAttrGpuOverlap: case cudaDevAttrCanMapHostMemory: case cudaDevAttrConcurrentKernels:
        case cudaDevAttrManagedMemory: case cudaDevAttrCooperativeLaunch: case cudaDevAttrMemoryPoolsSupported:
            *value = 1;
            break;
        case cudaDevAttrPageableMemoryAccess: *value = p.pageableMemoryAccess; break;
        case cudaDevAttrL2CacheSize: *value = p.l2CacheSize; break;
        default: return cudaErrorInvalidValue;
    }
    return device == 0 ? cudaSuccess : cudaErrorInvalidValue;
}
cudaError_t cudaStreamCreate(cudaStream_t* stream) {
    *stream = new CUstream_st;
    return cudaSuccess;
}
cudaError_t cudaStreamCreateWithFlags(cudaStream_t* stream, unsigned) { return cudaStreamCreate(stream); }
cudaError_t cudaStreamDestroy(cudaStream_t stream) {
    delete stream;
    return cudaSuccess;
}
cudaError_t cudaStreamSynchronize(cudaStream_t) { return cudaDeviceSynchronize(); }
cudaError_t cudaEventCreate(cudaEvent_t* event) {
    *event = new CUevent_st;
    return cudaSuccess;
}
cudaError_t cudaEventCreateWithFlags(cudaEvent_t* event, unsigned) { return cudaEventCreate(event); }
cudaError_t cudaEventDestroy(cudaEvent_t event) {
    delete event;
    return cudaSuccess;
}
cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream) {
    event->captured = emu_capturing(stream);
    event->at = std::chrono::steady_clock::now();
    ++program.events;
    return cudaSuccess;
}
cudaError_t cudaEventSynchronize(cudaEvent_t) { return program.lost; }
cudaError_t cudaEventQuery(cudaEvent_t) { return cudaSuccess; }  // every launch has finished when it returns
cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end) {
    *ms = std::chrono::duration<float, std::milli>(end->at - start->at).count();
    return cudaSuccess;
}

// Stream capture: the graph being built and the streams whose work it records (the one that began
// it, and each that waited on an event one of them recorded).
namespace {
struct Capture {
    cudaGraph_t graph = nullptr;
    std::set<cudaStream_t> streams;
};
Capture capture;
std::map<const void*, emu_pointer_kernel>& pointer_kernels() {  // filled as the program starts: a function's static
    static std::map<const void*, emu_pointer_kernel> kernels;
    return kernels;
}
cudaGraphNode_t add_node(cudaGraph_t graph, std::function<void()> run) {
    graph->nodes.push_back(std::make_unique<CUgraphNode_st>(CUgraphNode_st{std::move(run)}));
    return graph->nodes.back().get();
}
cudaError_t captured(cudaStream_t, std::function<void()> run) {  // issued to a capturing stream: recorded
    add_node(capture.graph, std::move(run));
    return cudaSuccess;
}
std::function<void()> owned(emu_work* work) {  // a node that runs `work`, shared by the graph's copies
    std::shared_ptr<emu_work> shared(work);
    return [shared] { shared->run(); };
}
// A node's launch of `kernel` (registered by its address) with the arguments `args` point at, copied now.
cudaError_t bind(const void* kernel, dim3 grid, dim3 block, size_t shared_mem, void** args, unsigned line,
                 emu_work** work, bool cooperative = false) {
    const auto found = pointer_kernels().find(kernel);
    if (found == pointer_kernels().end()) {
        std::fprintf(stderr, "the kernel lab knows no kernel at the address this launch (line %u) names: only a "
                     "kernel of the program's own file that is no template is launched by its address\n", line);
        return program.last_error = cudaErrorInvalidDeviceFunction;
    }
    emu_launch_config config(grid, block, shared_mem);
    config.cooperative = cooperative;
    *work = found->second.bind(args, config, found->second.name, line);
    return cudaSuccess;
}
}  // namespace

bool emu_capturing(cudaStream_t stream) { return capture.graph && capture.streams.count(stream); }
void emu_capture(cudaStream_t, emu_work* work) { add_node(capture.graph, owned(work)); }
void emu_capture_refused(const char* kernel, unsigned line) {
    std::fprintf(stderr, "the kernel lab cannot capture the launch of %s at line %u in a graph (a template whose "
                 "arguments are deduced): launch it outside the capture\n", kernel, line);
    program.last_error = cudaErrorStreamCaptureUnsupported;
}
void emu_register(const void* kernel, emu_pointer_kernel how) { pointer_kernels()[kernel] = how; }
const char* emu_registered_name(const void* kernel) {
    const auto found = pointer_kernels().find(kernel);
    return found == pointer_kernels().end() ? nullptr : found->second.name;
}

cudaError_t cudaLaunchKernel(const void* kernel, dim3 grid, dim3 block, void** args, size_t shared_mem,
                             cudaStream_t stream, unsigned line) {
    return emu_launch_kernel(kernel, grid, block, args, shared_mem, stream, line, false);
}
// A cooperative launch: CUDA refuses one whose blocks could not all be resident on the GPU at once
// (cudaErrorCooperativeLaunchTooLarge; the lab's occupancy: cudaOccupancyMaxActiveBlocksPerMultiprocessor).
cudaError_t emu_launch_kernel(const void* kernel, dim3 grid, dim3 block, void** args, size_t shared_mem,
                              cudaStream_t stream, unsigned line, bool cooperative) {
    if (cooperative && (unsigned long long)grid.x * grid.y * grid.z >
                           (unsigned long long)program.prop.multiProcessorCount * emu_blocks_per_sm(block.x * block.y * block.z))
        return program.last_error = cudaErrorCooperativeLaunchTooLarge;
    emu_work* work = nullptr;
    if (const cudaError_t e = bind(kernel, grid, block, shared_mem, args, line, &work, cooperative)) return e;
    if (emu_capturing(stream)) return emu_capture(stream, work), cudaSuccess;
    work->run();
    delete work;
    return cudaSuccess;
}
cudaError_t cudaLaunchHostFunc(cudaStream_t stream, cudaHostFn_t fn, void* data) {
    if (emu_capturing(stream)) return captured(stream, [fn, data] { fn(data); });
    fn(data);
    return cudaSuccess;
}
cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned) {
    if (capture.graph && event->captured) capture.streams.insert(stream);
    return cudaSuccess;
}
cudaError_t cudaStreamBeginCapture(cudaStream_t stream, cudaStreamCaptureMode) {
    if (!stream || capture.graph) return program.last_error = cudaErrorStreamCaptureUnsupported;  // CUDA's rule; one at a time
    capture.graph = new CUgraph_st;
    capture.streams = {stream};
    return cudaSuccess;
}
cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t* graph) {
    if (!capture.graph || !capture.streams.count(stream)) return program.last_error = cudaErrorInvalidValue;
    *graph = capture.graph;
    capture = {};
    return cudaSuccess;
}
cudaError_t cudaStreamIsCapturing(cudaStream_t stream, cudaStreamCaptureStatus* status) {
    *status = emu_capturing(stream) ? cudaStreamCaptureStatusActive : cudaStreamCaptureStatusNone;
    return cudaSuccess;
}
cudaError_t cudaGraphCreate(cudaGraph_t* graph, unsigned) {
    *graph = new CUgraph_st;
    return cudaSuccess;
}
cudaError_t cudaGraphAddKernelNode(cudaGraphNode_t* node, cudaGraph_t graph, const cudaGraphNode_t*, size_t,
                                   const cudaKernelNodeParams* p, unsigned line) {
    emu_work* work = nullptr;
    if (const cudaError_t e = bind(p->func, p->gridDim, p->blockDim, p->sharedMemBytes, p->kernelParams, line, &work))
        return e;
    *node = add_node(graph, owned(work));
    return cudaSuccess;
}
cudaError_t cudaGraphAddMemcpyNode(cudaGraphNode_t* node, cudaGraph_t graph, const cudaGraphNode_t*, size_t,
                                   const cudaMemcpy3DParms* p) {
    if (p->srcArray || p->dstArray) return program.last_error = cudaErrorNotSupported;  // CUDA arrays (textures)
    const cudaMemcpy3DParms copy = *p;
    *node = add_node(graph, [copy] {  // row by row: each row `width` bytes, rows `pitch` apart, slices `ysize` rows apart
        const cudaExtent e = copy.extent;
        for (size_t z = 0; z < std::max<size_t>(e.depth, 1); ++z)
            for (size_t y = 0; y < std::max<size_t>(e.height, 1); ++y) {
                const auto at = [&](const cudaPitchedPtr& ptr, const cudaPos& pos) {
                    return (char*)ptr.ptr + ((pos.z + z) * ptr.ysize + pos.y + y) * ptr.pitch + pos.x;
                };
                cudaMemcpy(at(copy.dstPtr, copy.dstPos), at(copy.srcPtr, copy.srcPos), e.width, copy.kind);
            }
    });
    return cudaSuccess;
}
cudaError_t cudaGraphAddMemsetNode(cudaGraphNode_t* node, cudaGraph_t graph, const cudaGraphNode_t*, size_t,
                                   const cudaMemsetParams* p) {
    if (p->elementSize != 1 && p->elementSize != 2 && p->elementSize != 4) return program.last_error = cudaErrorInvalidValue;
    const cudaMemsetParams set = *p;
    *node = add_node(graph, [set] {  // `height` rows of `width` elements, `pitch` bytes apart
        for (size_t row = 0; row < std::max<size_t>(set.height, 1); ++row) {
            char* at = (char*)set.dst + row * set.pitch;
            for (size_t i = 0; i < set.width; ++i) std::memcpy(at + i * set.elementSize, &set.value, set.elementSize);
            host_wrote(at, set.width * set.elementSize);
        }
    });
    return cudaSuccess;
}
cudaError_t cudaGraphAddHostNode(cudaGraphNode_t* node, cudaGraph_t graph, const cudaGraphNode_t*, size_t,
                                 const cudaHostNodeParams* p) {
    const cudaHostNodeParams host = *p;
    *node = add_node(graph, [host] { host.fn(host.userData); });
    return cudaSuccess;
}
cudaError_t cudaGraphAddEmptyNode(cudaGraphNode_t* node, cudaGraph_t graph, const cudaGraphNode_t*, size_t) {
    *node = add_node(graph, [] {});
    return cudaSuccess;
}
cudaError_t cudaGraphGetNodes(cudaGraph_t graph, cudaGraphNode_t* nodes, size_t* count) {
    if (nodes)
        for (size_t i = 0; i < std::min(*count, graph->nodes.size()); ++i) nodes[i] = graph->nodes[i].get();
    else
        *count = graph->nodes.size();
    return cudaSuccess;
}
cudaError_t cudaGraphClone(cudaGraph_t* clone, cudaGraph_t graph) {
    *clone = new CUgraph_st;
    for (auto& node : graph->nodes) add_node(*clone, node->run);
    return cudaSuccess;
}
cudaError_t cudaGraphInstantiate(cudaGraphExec_t* exec, cudaGraph_t graph, unsigned long long) {
    *exec = new CUgraphExec_st;
    for (auto& node : graph->nodes) (*exec)->runs.push_back(node->run);
    return cudaSuccess;
}
cudaError_t cudaGraphInstantiate(cudaGraphExec_t* exec, cudaGraph_t graph, cudaGraphNode_t*, char*, size_t) {
    return cudaGraphInstantiate(exec, graph, 0ull);
}
cudaError_t cudaGraphInstantiateWithFlags(cudaGraphExec_t* exec, cudaGraph_t graph, unsigned long long flags) {
    return cudaGraphInstantiate(exec, graph, flags);
}
cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t stream) {
    if (emu_capturing(stream)) return program.last_error = cudaErrorStreamCaptureUnsupported;
    for (auto& run : exec->runs) run();
    return program.lost;
}
cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec) {
    delete exec;
    return cudaSuccess;
}
cudaError_t cudaGraphDestroy(cudaGraph_t graph) {
    delete graph;
    return cudaSuccess;
}

// cuBLAS's and cuBLASLt's handles: a program sets them up whether or not it multiplies with them
// (llm.c's dev/cuda programs all do). They hold nothing here; a multiply (cublasSgemm, cublasLtMatmul)
// stays undefined, and builder.py names it when the link fails.
struct cublasContext {};
struct cublasLtContext {};
cublasStatus_t cublasCreate(cublasHandle_t* handle) {
    *handle = new cublasContext;
    return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasDestroy(cublasHandle_t handle) {
    delete handle;
    return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasSetMathMode(cublasHandle_t, cublasMath_t) { return CUBLAS_STATUS_SUCCESS; }
cublasStatus_t cublasSetStream(cublasHandle_t, cudaStream_t) { return CUBLAS_STATUS_SUCCESS; }
cublasStatus_t cublasLtCreate(cublasLtHandle_t* handle) {
    *handle = new cublasLtContext;
    return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtDestroy(cublasLtHandle_t handle) {
    delete handle;
    return CUBLAS_STATUS_SUCCESS;
}
