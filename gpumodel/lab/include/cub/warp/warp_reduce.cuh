// The kernel lab's stand-in for CUB's warp/warp_reduce.cuh: all of CUB's block and warp primitives are in cub.cuh.
#pragma once
#include "../cub.cuh"
