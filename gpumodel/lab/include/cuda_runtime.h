// The kernel lab's stand-in for CUDA's cuda_runtime.h: cuda_emu.h (included before the learner's
// source) declares what device code uses; here the few host types a kernel file may carry.
#pragma once
enum cudaError_t { cudaSuccess = 0 };
typedef struct CUstream_st* cudaStream_t;
