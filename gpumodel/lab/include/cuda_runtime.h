// The kernel lab's stand-in for CUDA's cuda_runtime.h, which nvcc includes before every source
// (cuda_emu.h includes this one): cuda_emu.h declares what device code uses; here the host API a
// kernel file's own host code calls, declared only. The lab runs one kernel by name and never
// its host code, and the linker drops host functions nothing calls (--gc-sections), so host code
// compiles and links; device code that calls one of these fails to link, naming it.
#pragma once
#include <cstddef>
#include <cstring>
// The include guards of CUDA's own cuda_runtime.h and driver_types.h, which helpers such as
// cuda-samples' helper_cuda.h test before defining their error checks; the runtime's version.
#define __CUDA_RUNTIME_H__
#define __DRIVER_TYPES_H__
#define CUDART_VERSION 12040

enum cudaError_t { cudaSuccess = 0, cudaErrorInvalidValue = 1, cudaErrorMemoryAllocation = 2, cudaErrorNotSupported = 801 };
typedef cudaError_t cudaError;
enum cudaMemcpyKind { cudaMemcpyHostToHost, cudaMemcpyHostToDevice, cudaMemcpyDeviceToHost, cudaMemcpyDeviceToDevice,
                      cudaMemcpyDefault };
enum cudaFuncAttribute { cudaFuncAttributeMaxDynamicSharedMemorySize = 8, cudaFuncAttributePreferredSharedMemoryCarveout = 9 };
enum cudaDeviceAttr { cudaDevAttrMaxThreadsPerBlock = 1, cudaDevAttrMaxSharedMemoryPerBlock = 8, cudaDevAttrClockRate = 13,
                      cudaDevAttrMultiProcessorCount = 16, cudaDevAttrIntegrated = 18, cudaDevAttrComputeMode = 20,
                      cudaDevAttrComputeCapabilityMajor = 75, cudaDevAttrComputeCapabilityMinor = 76,
                      cudaDevAttrMaxSharedMemoryPerBlockOptin = 97 };
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
        persistingL2CacheMaxSize, clockRate, memoryClockRate, memoryBusWidth, concurrentKernels, asyncEngineCount;
};

cudaError_t cudaMalloc(void** ptr, size_t bytes);
template <class T> cudaError_t cudaMalloc(T** ptr, size_t bytes);
cudaError_t cudaMallocManaged(void** ptr, size_t bytes, unsigned flags = 1);
template <class T> cudaError_t cudaMallocManaged(T** ptr, size_t bytes, unsigned flags = 1);
cudaError_t cudaMallocHost(void** ptr, size_t bytes);
template <class T> cudaError_t cudaMallocHost(T** ptr, size_t bytes);
cudaError_t cudaFree(void* ptr);
cudaError_t cudaFreeHost(void* ptr);
cudaError_t cudaMemcpy(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind);
cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind, cudaStream_t stream = 0);
cudaError_t cudaMemset(void* ptr, int value, size_t bytes);
cudaError_t cudaMemsetAsync(void* ptr, int value, size_t bytes, cudaStream_t stream = 0);
template <class T> cudaError_t cudaMemcpyToSymbol(const T& symbol, const void* src, size_t bytes, size_t offset = 0,
                                                  cudaMemcpyKind kind = cudaMemcpyHostToDevice);
template <class T> cudaError_t cudaMemcpyFromSymbol(void* dst, const T& symbol, size_t bytes, size_t offset = 0,
                                                    cudaMemcpyKind kind = cudaMemcpyDeviceToHost);
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
template <class F> cudaError_t cudaFuncSetAttribute(F* func, cudaFuncAttribute attr, int value);
template <class F> cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int* blocks, F* func, int threads, size_t smem);
cudaError_t cudaStreamCreate(cudaStream_t* stream);
cudaError_t cudaStreamCreateWithFlags(cudaStream_t* stream, unsigned flags);
cudaError_t cudaStreamDestroy(cudaStream_t stream);
cudaError_t cudaStreamSynchronize(cudaStream_t stream);
cudaError_t cudaEventCreate(cudaEvent_t* event);
cudaError_t cudaEventDestroy(cudaEvent_t event);
cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream = 0);
cudaError_t cudaEventSynchronize(cudaEvent_t event);
cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end);
