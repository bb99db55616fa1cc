// The kernel lab's stand-in for CUDA's cuda.h (the driver API): its result type and error names,
// declared only (host code is never run: see cuda_runtime.h).
#pragma once
#include "cuda_runtime.h"
enum cudaError_enum { CUDA_SUCCESS = 0, CUDA_ERROR_INVALID_VALUE = 1, CUDA_ERROR_NOT_SUPPORTED = 801 };
typedef cudaError_enum CUresult;
typedef int CUdevice;
CUresult cuGetErrorString(CUresult error, const char** text);
CUresult cuGetErrorName(CUresult error, const char** text);
