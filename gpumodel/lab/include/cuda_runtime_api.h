// The kernel lab's stand-in for CUDA's cuda_runtime_api.h: the host API, as cuda_runtime.h declares it.
#pragma once
#include "cuda_runtime.h"
