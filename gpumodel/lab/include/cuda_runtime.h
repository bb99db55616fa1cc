// The kernel lab's stand-in for CUDA's cuda_runtime.h, which nvcc includes before every source
// (cuda_emu.h includes this one): cuda_emu.h declares what device code uses; here the host API a
// kernel file's own host code calls. A whole program (gm.lab.run_program) links the lab's
// program_runtime.cpp, which defines them on the CPU. When one kernel is traced by name the lab
// never runs the host code, and the linker drops host functions nothing calls (--gc-sections), so
// host code compiles and links; device code that calls one of these fails to link, naming it.
#pragma once
#include <tuple>
#include <type_traits>
#include <utility>
#include <cstddef>
#include <cstring>
#include <algorithm>
#include <functional>
// The include guards of CUDA's own cuda_runtime.h and driver_types.h, which helpers such as
// cuda-samples' helper_cuda.h test before defining their error checks; the runtime's version.
#define __CUDA_RUNTIME_H__
#define __DRIVER_TYPES_H__
#define CUDART_VERSION 12040

enum cudaError_t { cudaSuccess = 0, cudaErrorInvalidValue = 1, cudaErrorMemoryAllocation = 2,
                   cudaErrorInvalidConfiguration = 9, cudaErrorInvalidDevicePointer = 17, cudaErrorNoDevice = 100,
                   cudaErrorInvalidDevice = 101, cudaErrorNotReady = 600, cudaErrorIllegalAddress = 700,
                   cudaErrorAssert = 710, cudaErrorLaunchFailure = 719, cudaErrorCooperativeLaunchTooLarge = 720,
                   cudaErrorInvalidDeviceFunction = 98, cudaErrorNotSupported = 801,
                   cudaErrorStreamCaptureUnsupported = 900 };
typedef cudaError_t cudaError;
enum cudaMemcpyKind { cudaMemcpyHostToHost, cudaMemcpyHostToDevice, cudaMemcpyDeviceToHost, cudaMemcpyDeviceToDevice,
                      cudaMemcpyDefault };
enum cudaFuncAttribute { cudaFuncAttributeMaxDynamicSharedMemorySize = 8, cudaFuncAttributePreferredSharedMemoryCarveout = 9 };
enum cudaDeviceAttr { cudaDevAttrMaxThreadsPerBlock = 1, cudaDevAttrMaxSharedMemoryPerBlock = 8, cudaDevAttrClockRate = 13,
                      cudaDevAttrGpuOverlap = 15, cudaDevAttrMultiProcessorCount = 16, cudaDevAttrIntegrated = 18,
                      cudaDevAttrCanMapHostMemory = 19, cudaDevAttrComputeMode = 20, cudaDevAttrConcurrentKernels = 31,
                      cudaDevAttrL2CacheSize = 38, cudaDevAttrComputeCapabilityMajor = 75, cudaDevAttrComputeCapabilityMinor = 76,
                      cudaDevAttrManagedMemory = 83, cudaDevAttrPageableMemoryAccess = 88, cudaDevAttrCooperativeLaunch = 95,
                      cudaDevAttrMaxSharedMemoryPerBlockOptin = 97, cudaDevAttrMemoryPoolsSupported = 115 };
enum cudaComputeMode { cudaComputeModeDefault = 0, cudaComputeModeExclusive = 1, cudaComputeModeProhibited = 2,
                       cudaComputeModeExclusiveProcess = 3 };
#define cudaStreamDefault 0x00
#define cudaStreamNonBlocking 0x01
typedef struct CUstream_st* cudaStream_t;
typedef struct CUevent_st* cudaEvent_t;
struct cudaDeviceProp {
    char name[256];
    size_t totalGlobalMem, sharedMemPerBlock, sharedMemPerMultiprocessor, sharedMemPerBlockOptin, totalConstMem;
    int regsPerBlock, regsPerMultiprocessor, warpSize, maxThreadsPerBlock, maxThreadsDim[3], maxGridSize[3],
        multiProcessorCount, maxThreadsPerMultiProcessor, maxBlocksPerMultiProcessor, major, minor, l2CacheSize,
        persistingL2CacheMaxSize, clockRate, memoryClockRate, memoryBusWidth, concurrentKernels, asyncEngineCount,
        canMapHostMemory, unifiedAddressing, managedMemory, cooperativeLaunch, integrated, accessPolicyMaxWindowSize,
        deviceOverlap, pageableMemoryAccess;
};

// An allocation is named by the line that asked for it (the return address of the call; the
// typed forms are inlined into their caller so that it is the caller's).
cudaError_t cudaMalloc(void** ptr, size_t bytes);
template <class T> [[gnu::always_inline]] inline cudaError_t cudaMalloc(T** ptr, size_t bytes) { return cudaMalloc(reinterpret_cast<void**>(ptr), bytes); }
cudaError_t cudaMallocManaged(void** ptr, size_t bytes, unsigned flags = 1);
template <class T> [[gnu::always_inline]] inline cudaError_t cudaMallocManaged(T** ptr, size_t bytes, unsigned flags = 1) {
    return cudaMallocManaged(reinterpret_cast<void**>(ptr), bytes, flags);
}
cudaError_t cudaMallocHost(void** ptr, size_t bytes);
template <class T> [[gnu::always_inline]] inline cudaError_t cudaMallocHost(T** ptr, size_t bytes) {
    return cudaMallocHost(reinterpret_cast<void**>(ptr), bytes);
}
cudaError_t cudaFree(void* ptr);
cudaError_t cudaFreeHost(void* ptr);
// Pinned and mapped host memory: on the CPU all memory is the host's, so a mapped array's device
// pointer is its host pointer; what is pinned or registered is an array a kernel may touch.
enum { cudaHostAllocDefault = 0, cudaHostAllocPortable = 1, cudaHostAllocMapped = 2, cudaHostAllocWriteCombined = 4 };
enum { cudaHostRegisterDefault = 0, cudaHostRegisterPortable = 1, cudaHostRegisterMapped = 2 };
enum { cudaDeviceScheduleAuto = 0, cudaDeviceScheduleSpin = 1, cudaDeviceScheduleYield = 2,
       cudaDeviceScheduleBlockingSync = 4, cudaDeviceBlockingSync = 4, cudaDeviceMapHost = 8 };
cudaError_t cudaHostAlloc(void** ptr, size_t bytes, unsigned flags);
template <class T> [[gnu::always_inline]] inline cudaError_t cudaHostAlloc(T** ptr, size_t bytes, unsigned flags) {
    return cudaHostAlloc(reinterpret_cast<void**>(ptr), bytes, flags);
}
cudaError_t cudaHostRegister(void* ptr, size_t bytes, unsigned flags);
cudaError_t cudaHostUnregister(void* ptr);
cudaError_t cudaHostGetDevicePointer(void** device, void* host, unsigned flags);
template <class T> cudaError_t cudaHostGetDevicePointer(T** device, void* host, unsigned flags) {
    return cudaHostGetDevicePointer(reinterpret_cast<void**>(device), host, flags);
}
cudaError_t cudaSetDeviceFlags(unsigned flags);
cudaError_t cudaMemcpy(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind);
cudaError_t cudaMemcpy2D(void* dst, size_t dst_pitch, const void* src, size_t src_pitch, size_t width, size_t height,
                         cudaMemcpyKind kind);
cudaError_t cudaMemcpy2DAsync(void* dst, size_t dst_pitch, const void* src, size_t src_pitch, size_t width,
                              size_t height, cudaMemcpyKind kind, cudaStream_t stream = 0);
cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind, cudaStream_t stream = 0);
cudaError_t cudaMemset(void* ptr, int value, size_t bytes);
cudaError_t cudaMemsetAsync(void* ptr, int value, size_t bytes, cudaStream_t stream = 0);
// A __constant__ or __device__ variable is a static here: copying to or from it is a cudaMemcpy.
template <class T> cudaError_t cudaMemcpyToSymbol(const T& symbol, const void* src, size_t bytes, size_t offset = 0,
                                                  cudaMemcpyKind kind = cudaMemcpyHostToDevice) {
    return cudaMemcpy(const_cast<char*>(reinterpret_cast<const char*>(&symbol)) + offset, src, bytes, kind);
}
template <class T> cudaError_t cudaMemcpyFromSymbol(void* dst, const T& symbol, size_t bytes, size_t offset = 0,
                                                    cudaMemcpyKind kind = cudaMemcpyDeviceToHost) {
    return cudaMemcpy(dst, reinterpret_cast<const char*>(&symbol) + offset, bytes, kind);
}
cudaError_t cudaDeviceSynchronize();
cudaError_t cudaDeviceReset();
cudaError_t cudaGetLastError();
cudaError_t cudaPeekAtLastError();
const char* cudaGetErrorString(cudaError_t error);
const char* cudaGetErrorName(cudaError_t error);
cudaError_t cudaSetDevice(int device);
cudaError_t cudaGetDevice(int* device);
cudaError_t cudaGetDeviceCount(int* count);
cudaError_t cudaGetDeviceProperties(cudaDeviceProp* prop, int device);
cudaError_t cudaDeviceGetAttribute(int* value, cudaDeviceAttr attr, int device);
// A kernel's attributes change nothing on the CPU; its occupancy the lab gives from the block's
// threads alone (2,048 threads and 32 blocks an SM; it does not know the kernel's registers).
template <class F> cudaError_t cudaFuncSetAttribute(F*, cudaFuncAttribute, int) { return cudaSuccess; }
// What the host asks of a kernel, and CUDA 12's extended launch: declared only (host code that
// calls them compiles; a whole program that calls them is told at link that the lab lacks them).
struct cudaFuncAttributes {
    size_t sharedSizeBytes, constSizeBytes, localSizeBytes;
    int maxThreadsPerBlock, numRegs, ptxVersion, binaryVersion, cacheModeCA, maxDynamicSharedSizeBytes,
        preferredShmemCarveout;
};
cudaError_t cudaFuncGetAttributes(cudaFuncAttributes* attributes, const void* kernel);
enum cudaLaunchAttributeID { cudaLaunchAttributeIgnore = 0, cudaLaunchAttributeCooperative = 2,
                             cudaLaunchAttributeProgrammaticStreamSerialization = 5,
                             cudaLaunchAttributeClusterDimension = 4 };
union cudaLaunchAttributeValue {
    char pad[64];
    int cooperative;
    int programmaticStreamSerializationAllowed;
    struct { unsigned x, y, z; } clusterDim;
};
struct cudaLaunchAttribute { cudaLaunchAttributeID id; cudaLaunchAttributeValue val; };
struct cudaLaunchConfig_t {
    dim3 gridDim, blockDim;
    size_t dynamicSmemBytes;
    cudaStream_t stream;
    cudaLaunchAttribute* attrs;
    unsigned numAttrs;
};
cudaError_t cudaLaunchKernelExC(const cudaLaunchConfig_t* config, const void* kernel, void** args);
template <class... P, class... A>
cudaError_t cudaLaunchKernelEx(const cudaLaunchConfig_t* config, void (*kernel)(P...), A&&... args) {
    void* pointers[] = {const_cast<void*>(static_cast<const void*>(&args))..., nullptr};
    return cudaLaunchKernelExC(config, reinterpret_cast<const void*>(kernel), pointers);
}
inline int emu_blocks_per_sm(int threads) { return threads > 0 ? std::min(32, 2048 / threads) : 0; }
template <class F> cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int* blocks, F*, int threads, size_t) {
    *blocks = emu_blocks_per_sm(threads);
    return cudaSuccess;
}
cudaError_t cudaGetDeviceProperties(cudaDeviceProp* prop, int device);
// The block size that fills an SM by threads alone: the largest allowed (1,024, or `limit`), and
// the grid that puts as many blocks on every SM.
template <class F> cudaError_t cudaOccupancyMaxPotentialBlockSize(int* grid, int* block, F, size_t = 0, int limit = 0) {
    cudaDeviceProp prop;
    cudaGetDeviceProperties(&prop, 0);
    *block = limit > 0 ? std::min(limit, 1024) : 1024;
    *grid = prop.multiProcessorCount * emu_blocks_per_sm(*block);
    return cudaSuccess;
}
// Stream-ordered allocation: the stream's work is done when a launch returns, so it is cudaMalloc's
// (the allocation named by its caller's line, as cudaMalloc's typed form is) and cudaFree's.
[[gnu::always_inline]] inline cudaError_t cudaMallocAsync(void** ptr, size_t bytes, cudaStream_t) { return cudaMalloc(ptr, bytes); }
template <class T> [[gnu::always_inline]] inline cudaError_t cudaMallocAsync(T** ptr, size_t bytes, cudaStream_t) {
    return cudaMalloc(reinterpret_cast<void**>(ptr), bytes);
}
inline cudaError_t cudaFreeAsync(void* ptr, cudaStream_t) { return cudaFree(ptr); }
typedef struct CUmemPoolHandle_st* cudaMemPool_t;
enum cudaMemPoolAttr { cudaMemPoolReuseFollowEventDependencies = 1, cudaMemPoolReuseAllowOpportunistic = 2,
                       cudaMemPoolReuseAllowInternalDependencies = 3, cudaMemPoolAttrReleaseThreshold = 4 };
inline cudaError_t cudaDeviceGetDefaultMemPool(cudaMemPool_t* pool, int) { *pool = nullptr; return cudaSuccess; }
inline cudaError_t cudaMemPoolSetAttribute(cudaMemPool_t, cudaMemPoolAttr, void*) { return cudaSuccess; }
// L2 persistence and the device's limits: hints a GPU's caches and stacks take; the lab models neither
// on the CPU, so each is accepted and changes nothing.
enum cudaLimit { cudaLimitStackSize = 0, cudaLimitPrintfFifoSize = 1, cudaLimitMallocHeapSize = 2,
                 cudaLimitDevRuntimeSyncDepth = 3, cudaLimitDevRuntimePendingLaunchCount = 4,
                 cudaLimitMaxL2FetchGranularity = 5, cudaLimitPersistingL2CacheSize = 6 };
inline cudaError_t cudaDeviceSetLimit(cudaLimit, size_t) { return cudaSuccess; }
enum cudaAccessProperty { cudaAccessPropertyNormal = 0, cudaAccessPropertyStreaming = 1, cudaAccessPropertyPersisting = 2 };
struct cudaAccessPolicyWindow {
    void* base_ptr;
    size_t num_bytes;
    float hitRatio;
    cudaAccessProperty hitProp, missProp;
};
enum cudaStreamAttrID { cudaStreamAttributeAccessPolicyWindow = 1, cudaStreamAttributeSynchronizationPolicy = 3 };
union cudaStreamAttrValue { cudaAccessPolicyWindow accessPolicyWindow; int syncPolicy; };
inline cudaError_t cudaStreamSetAttribute(cudaStream_t, cudaStreamAttrID, const cudaStreamAttrValue*) { return cudaSuccess; }
inline cudaError_t cudaCtxResetPersistingL2Cache() { return cudaSuccess; }
cudaError_t cudaStreamCreate(cudaStream_t* stream);
cudaError_t cudaStreamCreateWithFlags(cudaStream_t* stream, unsigned flags);
cudaError_t cudaStreamDestroy(cudaStream_t stream);
cudaError_t cudaStreamSynchronize(cudaStream_t stream);
cudaError_t cudaEventCreate(cudaEvent_t* event);
enum { cudaEventDefault = 0, cudaEventBlockingSync = 1, cudaEventDisableTiming = 2, cudaEventInterprocess = 4 };
cudaError_t cudaEventCreateWithFlags(cudaEvent_t* event, unsigned flags);
cudaError_t cudaEventDestroy(cudaEvent_t event);
cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream = 0);
cudaError_t cudaEventSynchronize(cudaEvent_t event);
cudaError_t cudaEventQuery(cudaEvent_t event);
cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end);

// A host launch `k<<<grid, block, shared_mem, stream>>>(args)` as reader.for_gxx rewrites it in a
// whole program: where `k` names one function, its arguments converted to its parameters' types
// where the launch is written (as a call converts them, NULL and 0 included),
// `emu_launch_config(grid, block, shared_mem, stream).run("k", line, k, decltype(emu_params(k)){args})`;
// otherwise (a template whose arguments are deduced) `.run("k", line, [&]() EMU_UNTRACED { k(args); })`.
// Either runs every block of the launch on the CPU before it returns (a GPU's launch returns at
// once). What the threads run is not instrumented: its reads of the host's variables are the
// launch's arguments, not the kernel's accesses (g++ does not inline the kernel into it across
// that difference). The parameters' bytes tell one launch from another (program_runtime.cpp).
#define EMU_UNTRACED __attribute__((no_sanitize("thread")))
template <class F> EMU_UNTRACED void emu_call_body(void* body) { (*static_cast<F*>(body))(); }
template <class... P> std::tuple<P...> emu_params(void (*)(P...));  // the parameters' types; never called
template <class K, class T, size_t... I> EMU_UNTRACED void emu_apply(K k, T& params, std::index_sequence<I...>) {
    k(std::get<I>(params)...);
}
// A launch (or copy, set, host function) that a capturing stream records for its graph to run later.
struct emu_work {
    virtual void run() = 0;
    virtual ~emu_work() = default;
};
bool emu_capturing(cudaStream_t stream);  // a stream whose work a capture records (program_runtime.cpp)
void emu_capture(cudaStream_t stream, emu_work* work);  // the capture's graph takes `work`
void emu_capture_refused(const char* kernel, unsigned line);  // a launch whose arguments it cannot keep

struct emu_launch_config {
    dim3 grid, block;
    size_t shared_mem;
    cudaStream_t stream;
    bool cooperative = false;  // cudaLaunchCooperativeKernel's: its blocks may wait at the grid's barrier
    emu_launch_config(dim3 g, dim3 b, size_t s = 0, cudaStream_t st = 0) : grid(g), block(b), shared_mem(s), stream(st) {}
    // Every thread of the launch calls `call(body)` (program_runtime.cpp); no std::function, whose
    // code, instantiated here, would be instrumented. `params`: the bytes of its arguments (null
    // where they are not known).
    void launch(const char* kernel, unsigned line, void (*call)(void*), void* body, const void* params,
                size_t bytes) const;
    template <class F> void run(const char* kernel, unsigned line, F body) const {
        if (emu_capturing(stream)) return emu_capture_refused(kernel, line);
        launch(kernel, line, &emu_call_body<F>, &body, nullptr, 0);
    }
    template <class K, class... P> void run(const char* kernel, unsigned line, K k, std::tuple<P...> params) const;
};
// A captured launch: its configuration (on no stream: a graph's launch runs it), kernel and a copy of its arguments.
template <class K, class... P> struct emu_captured_launch : emu_work {
    emu_launch_config config;
    const char* kernel;
    unsigned line;
    K k;
    std::tuple<P...> params;
    emu_captured_launch(emu_launch_config c, const char* name, unsigned at, K f, std::tuple<P...> p)
        : config(c.grid, c.block, c.shared_mem), kernel(name), line(at), k(f), params(p) {
        config.cooperative = c.cooperative;
    }
    void run() override { config.run(kernel, line, k, params); }
};
template <class K, class... P>
void emu_launch_config::run(const char* kernel, unsigned line, K k, std::tuple<P...> params) const {
    if (emu_capturing(stream)) return emu_capture(stream, new emu_captured_launch<K, P...>(*this, kernel, line, k, params));
    auto body = [&]() EMU_UNTRACED { emu_apply(k, params, std::index_sequence_for<P...>{}); };
    launch(kernel, line, &emu_call_body<decltype(body)>, &body, &params, sizeof params);
}

// A kernel named by its address (cudaLaunchKernel, a graph's kernel node): reader.for_gxx registers
// each of a program's kernels that is no template after its body, with how to copy its arguments
// from an array of pointers to them (CUDA's `void** args`) and to launch it with that copy.
struct emu_pointer_kernel {
    const char* name;
    emu_work* (*bind)(void** args, const emu_launch_config& config, const char* name, unsigned line);
};
void emu_register(const void* kernel, emu_pointer_kernel how);
template <class... P> struct emu_kernel_args {
    template <class K, size_t... I>
    static emu_work* bind(K k, void** args, const emu_launch_config& config, const char* name, unsigned line,
                          std::index_sequence<I...>) {
        return new emu_captured_launch<K, P...>(config, name, line, k, std::tuple<P...>(*static_cast<P*>(args[I])...));
    }
};
template <class... P> emu_kernel_args<P...> emu_args_of(void (*)(P...));  // never called
template <auto K> emu_work* emu_bind(void** args, const emu_launch_config& config, const char* name, unsigned line) {
    using Args = decltype(emu_args_of(K));
    return Args::bind(K, args, config, name, line, std::make_index_sequence<std::tuple_size_v<decltype(emu_params(K))>>{});
}
template <auto K> bool emu_register_kernel(const char* name) {
    emu_register(reinterpret_cast<const void*>(K), {name, &emu_bind<K>});
    return true;
}
// The name a launch through a function pointer (`f<<<grid, block>>>(args)`, `f` a variable) is
// reported under: the kernel's own where `f` holds a registered kernel's address, else as written.
const char* emu_registered_name(const void* kernel);  // null where none is registered there
template <class K> const char* emu_launched_name(K k, const char* written) {
    if constexpr (std::is_pointer_v<K> && std::is_function_v<std::remove_pointer_t<K>>) {
        const char* name = emu_registered_name(reinterpret_cast<const void*>(k));
        return name ? name : written;
    } else {
        return written;
    }
}
// The launch as CUDA's runtime API takes it, the line it is written at (a whole program's report names it).
cudaError_t cudaLaunchKernel(const void* kernel, dim3 grid, dim3 block, void** args, size_t shared_mem = 0,
                             cudaStream_t stream = 0, unsigned line = __builtin_LINE());
template <class T>
cudaError_t cudaLaunchKernel(T* kernel, dim3 grid, dim3 block, void** args, size_t shared_mem = 0, cudaStream_t stream = 0,
                             unsigned line = __builtin_LINE()) {
    return cudaLaunchKernel(reinterpret_cast<const void*>(kernel), grid, block, args, shared_mem, stream, line);
}
// A cooperative launch: its blocks may wait for each other at the grid's barrier (cg::this_grid().sync()).
cudaError_t emu_launch_kernel(const void* kernel, dim3 grid, dim3 block, void** args, size_t shared_mem,
                              cudaStream_t stream, unsigned line, bool cooperative);
template <class T>
cudaError_t cudaLaunchCooperativeKernel(T* kernel, dim3 grid, dim3 block, void** args, size_t shared_mem = 0,
                                        cudaStream_t stream = 0, unsigned line = __builtin_LINE()) {
    return emu_launch_kernel(reinterpret_cast<const void*>(kernel), grid, block, args, shared_mem, stream, line, true);
}

// Graphs: a graph holds its nodes in the order they were added (each after the nodes it depends
// on, so that order keeps every dependency), and a launch of it runs them one after another. While
// a stream captures (cudaStreamBeginCapture), what is issued to it, or to a stream that waited on an
// event it recorded, is added to its graph instead of run: launches, async copies and sets, host functions.
struct CUgraph_st;
struct CUgraphExec_st;
struct CUgraphNode_st;
typedef CUgraph_st* cudaGraph_t;
typedef CUgraphExec_st* cudaGraphExec_t;
typedef CUgraphNode_st* cudaGraphNode_t;
typedef void (*cudaHostFn_t)(void* data);
#define CUDART_CB
enum cudaStreamCaptureMode { cudaStreamCaptureModeGlobal, cudaStreamCaptureModeThreadLocal, cudaStreamCaptureModeRelaxed };
enum cudaStreamCaptureStatus { cudaStreamCaptureStatusNone, cudaStreamCaptureStatusActive, cudaStreamCaptureStatusInvalidated };
struct cudaArray;
typedef cudaArray* cudaArray_t;
struct cudaPos { size_t x, y, z; };
struct cudaExtent { size_t width, height, depth; };
struct cudaPitchedPtr { void* ptr; size_t pitch, xsize, ysize; };
inline cudaPos make_cudaPos(size_t x, size_t y, size_t z) { return {x, y, z}; }
inline cudaExtent make_cudaExtent(size_t width, size_t height, size_t depth) { return {width, height, depth}; }
inline cudaPitchedPtr make_cudaPitchedPtr(void* ptr, size_t pitch, size_t xsize, size_t ysize) {
    return {ptr, pitch, xsize, ysize};
}
struct cudaMemcpy3DParms {
    cudaArray_t srcArray;
    cudaPos srcPos;
    cudaPitchedPtr srcPtr;
    cudaArray_t dstArray;
    cudaPos dstPos;
    cudaPitchedPtr dstPtr;
    cudaExtent extent;
    cudaMemcpyKind kind;
};
struct cudaMemsetParams { void* dst; size_t pitch; unsigned value, elementSize; size_t width, height; };
struct cudaHostNodeParams { cudaHostFn_t fn; void* userData; };
struct cudaKernelNodeParams { void* func; dim3 gridDim, blockDim; unsigned sharedMemBytes; void** kernelParams; void** extra; };
cudaError_t cudaGraphCreate(cudaGraph_t* graph, unsigned flags);
cudaError_t cudaGraphAddKernelNode(cudaGraphNode_t* node, cudaGraph_t graph, const cudaGraphNode_t* dependencies, size_t count,
                                   const cudaKernelNodeParams* params, unsigned line = __builtin_LINE());
cudaError_t cudaGraphAddMemcpyNode(cudaGraphNode_t* node, cudaGraph_t graph, const cudaGraphNode_t* dependencies, size_t count,
                                   const cudaMemcpy3DParms* params);
cudaError_t cudaGraphAddMemsetNode(cudaGraphNode_t* node, cudaGraph_t graph, const cudaGraphNode_t* dependencies, size_t count,
                                   const cudaMemsetParams* params);
cudaError_t cudaGraphAddHostNode(cudaGraphNode_t* node, cudaGraph_t graph, const cudaGraphNode_t* dependencies, size_t count,
                                 const cudaHostNodeParams* params);
cudaError_t cudaGraphAddEmptyNode(cudaGraphNode_t* node, cudaGraph_t graph, const cudaGraphNode_t* dependencies, size_t count);
cudaError_t cudaGraphGetNodes(cudaGraph_t graph, cudaGraphNode_t* nodes, size_t* count);
cudaError_t cudaGraphClone(cudaGraph_t* clone, cudaGraph_t graph);
cudaError_t cudaGraphInstantiate(cudaGraphExec_t* exec, cudaGraph_t graph, unsigned long long flags = 0);
cudaError_t cudaGraphInstantiate(cudaGraphExec_t* exec, cudaGraph_t graph, cudaGraphNode_t* error_node, char* log,
                                 size_t log_bytes);
cudaError_t cudaGraphInstantiateWithFlags(cudaGraphExec_t* exec, cudaGraph_t graph, unsigned long long flags);
cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t stream);
cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec);
cudaError_t cudaGraphDestroy(cudaGraph_t graph);
cudaError_t cudaStreamBeginCapture(cudaStream_t stream, cudaStreamCaptureMode mode);
cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t* graph);
cudaError_t cudaStreamIsCapturing(cudaStream_t stream, cudaStreamCaptureStatus* status);
cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned flags = 0);
cudaError_t cudaLaunchHostFunc(cudaStream_t stream, cudaHostFn_t fn, void* data);
