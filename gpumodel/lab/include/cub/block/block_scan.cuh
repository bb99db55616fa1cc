// The kernel lab's stand-in for CUB's block/block_scan.cuh: all of CUB's block and warp primitives are in cub.cuh.
#pragma once
#include "../cub.cuh"
