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
// "gap ARRAY FROM TO" (as trace_runtime.cpp's), "prop FIELD VALUE" (cudaGetDeviceProperties' fields
// as the GPU's data file gives them; "name" takes the rest of the line); and GM_LAB_STATS, which gets per traced launch
// "launch KERNEL LINE GX GY GZ BX BY BZ SHARED_MEM TRACED_BLOCKS", one "array I BYTES SITE FREED" per
// cudaMalloc so far, the launch's rows as trace_runtime.cpp writes them and "end"; "refused KERNEL LINE GX GY GZ BX BY BZ
// SHARED_MEM" for a launch CUDA would refuse (it returns cudaErrorInvalidConfiguration through
// cudaGetLastError and runs nothing); at exit "untraced N" and "events N" (the events recorded).
// A fault is its "fault" line, as trace_runtime.cpp writes it, after the "launch" line of the launch it
// stopped.
#define GM_LAB_PROGRAM
#include "trace_runtime.cpp"

#include <chrono>
#include <cmath>

struct CUevent_st { std::chrono::steady_clock::time_point at; };
struct CUstream_st {};

namespace {

struct Program {
    FILE* stats = nullptr;
    unsigned max_threads = 1 << 16, max_launches = 100, traced = 0, untraced = 0, events = 0;
    cudaDeviceProp prop{};
    cudaError_t last_error = cudaSuccess;
};
Program program;

void at_exit() {
    std::fprintf(program.stats, "untraced %u\nevents %u\n", program.untraced, program.events);
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
    p.concurrentKernels = 1;
    std::atexit(at_exit);
}

bool refused(dim3 grid, dim3 block, size_t shared_mem) {  // what CUDA refuses to launch
    const uint64_t threads = (uint64_t)block.x * block.y * block.z;
    return !grid.x || !grid.y || !grid.z || !threads || threads > 1024 || block.z > 64 || grid.y > 65535 ||
           grid.z > 65535 || shared_mem > EMU_DYNAMIC_SHARED_MAX ||
           (uint64_t)grid.x * grid.y * grid.z > 0xffffffffull;  // the lab numbers a block in 32 bits
}

cudaError_t allocate(void** ptr, size_t bytes, uintptr_t site) {  // a device array, 256-byte aligned, guarded
    if (!ptr) return cudaErrorInvalidValue;
    const size_t padded = (bytes + 2 * GUARD + 255) / 256 * 256;
    char* mem = static_cast<char*>(std::aligned_alloc(256, padded));
    if (!mem) return program.last_error = cudaErrorMemoryAllocation;
    std::memset(mem, 0, padded);
    arrays.push_back({mem + GUARD, bytes, "", site - 1 - (uintptr_t)__executable_start});
    *ptr = mem + GUARD;
    return cudaSuccess;
}

}  // namespace

void emu_launch_config::launch(const char* kernel, unsigned line, void (*call)(void*), void* context) const {
    const std::function<void()> body = [=] { call(context); };
    FILE* out = program.stats;
    if (refused(grid, block, shared_mem)) {
        std::fprintf(out, "refused %s %u %u %u %u %u %u %u %zu\n", kernel, line, grid.x, grid.y, grid.z, block.x,
                     block.y, block.z, shared_mem);
        std::fflush(out);
        program.last_error = cudaErrorInvalidConfiguration;
        return;
    }
    gridDim = grid;
    blockDim = block;
    emu_dynamic_shared_bytes = shared_mem;
    const unsigned threads = block.x * block.y * block.z, blocks = grid.x * grid.y * grid.z;
    if (program.traced >= program.max_launches) {
        ++program.untraced;
        for (unsigned b = 0; b < blocks; ++b) run_untraced_block(body, grid, block, b);
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
    for (unsigned b = 0; b < blocks; ++b)
        (chosen[b] ? run_block : run_untraced_block)(body, grid, block, b);
    for (size_t i = 0; i < arrays.size(); ++i)
        std::fprintf(out, "array %zu %zu %lx %d\n", i, arrays[i].bytes, (unsigned long)arrays[i].site, (int)arrays[i].freed);
    write_stats(out);
    std::fprintf(out, "end\n");
    std::fflush(out);
}

cudaError_t cudaMalloc(void** ptr, size_t bytes) { return allocate(ptr, bytes, (uintptr_t)__builtin_return_address(0)); }
cudaError_t cudaMallocManaged(void** ptr, size_t bytes, unsigned) {
    return allocate(ptr, bytes, (uintptr_t)__builtin_return_address(0));
}
cudaError_t cudaMallocHost(void** ptr, size_t bytes) {
    *ptr = std::aligned_alloc(256, (bytes + 255) / 256 * 256);
    return *ptr ? cudaSuccess : cudaErrorMemoryAllocation;
}
cudaError_t cudaFree(void* ptr) {
    if (!ptr) return cudaSuccess;
    for (auto& a : arrays)
        if (a.base == ptr && !a.freed) {
            a.freed = true;  // kept, so that a later access names it; its memory goes back at exit
            return cudaSuccess;
        }
    return program.last_error = cudaErrorInvalidDevicePointer;
}
cudaError_t cudaFreeHost(void* ptr) {
    std::free(ptr);
    return cudaSuccess;
}
cudaError_t cudaMemcpy(void* dst, const void* src, size_t bytes, cudaMemcpyKind) {
    std::memmove(dst, src, bytes);
    return cudaSuccess;
}
cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind, cudaStream_t) {
    return cudaMemcpy(dst, src, bytes, kind);
}
cudaError_t cudaMemset(void* ptr, int value, size_t bytes) {
    std::memset(ptr, value, bytes);
    return cudaSuccess;
}
cudaError_t cudaMemsetAsync(void* ptr, int value, size_t bytes, cudaStream_t) { return cudaMemset(ptr, value, bytes); }
cudaError_t cudaDeviceSynchronize() { return program.last_error; }  // every launch has finished already
cudaError_t cudaDeviceReset() { return cudaSuccess; }
cudaError_t cudaGetLastError() {
    const cudaError_t e = program.last_error;
    program.last_error = cudaSuccess;
    return e;
}
cudaError_t cudaPeekAtLastError() { return program.last_error; }
const char* cudaGetErrorName(cudaError_t error) {
    switch (error) {
        case cudaSuccess: return "cudaSuccess";
        case cudaErrorInvalidValue: return "cudaErrorInvalidValue";
        case cudaErrorMemoryAllocation: return "cudaErrorMemoryAllocation";
        case cudaErrorInvalidConfiguration: return "cudaErrorInvalidConfiguration";
        case cudaErrorInvalidDevicePointer: return "cudaErrorInvalidDevicePointer";
        case cudaErrorNotReady: return "cudaErrorNotReady";
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
cudaError_t cudaStreamSynchronize(cudaStream_t) { return program.last_error; }
cudaError_t cudaEventCreate(cudaEvent_t* event) {
    *event = new CUevent_st;
    return cudaSuccess;
}
cudaError_t cudaEventDestroy(cudaEvent_t event) {
    delete event;
    return cudaSuccess;
}
cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t) {
    event->at = std::chrono::steady_clock::now();
    ++program.events;
    return cudaSuccess;
}
cudaError_t cudaEventSynchronize(cudaEvent_t) { return cudaSuccess; }
cudaError_t cudaEventQuery(cudaEvent_t) { return cudaSuccess; }  // every launch has finished when it returns
cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end) {
    *ms = std::chrono::duration<float, std::milli>(end->at - start->at).count();
    return cudaSuccess;
}
