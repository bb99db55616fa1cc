// out = in^T for an n x n row-major FP32 matrix (chapter 3). Blocks of 32 x 8 threads move
// 32 x 32 tiles; each thread handles 4 rows of its tile.

constexpr int TILE = 32, ROWS = 8;

// Naive: reads are coalesced, writes stride by n (each warp writes 32 different rows).
extern "C" __global__ void transpose_naive(const float* __restrict__ in, float* __restrict__ out, int n) {
    int x = blockIdx.x * TILE + threadIdx.x;
    for (int j = 0; j < TILE; j += ROWS) {
        int y = blockIdx.y * TILE + threadIdx.y + j;
        if (x < n && y < n) out[x * n + y] = in[y * n + x];
    }
}

// Through shared memory: both global accesses are coalesced. A warp writes a row of the
// tile, then reads a column of it. With PAD = 0 the column's 32 words are 32 floats apart,
// all in one bank: a 32-way conflict. PAD = 1 puts them in 32 different banks.
template <int PAD>
__device__ __forceinline__ void transpose_tiled(const float* __restrict__ in, float* __restrict__ out, int n) {
    __shared__ float tile[TILE][TILE + PAD];
    int x = blockIdx.x * TILE + threadIdx.x;
    for (int j = 0; j < TILE; j += ROWS) {
        int y = blockIdx.y * TILE + threadIdx.y + j;
        if (x < n && y < n) tile[threadIdx.y + j][threadIdx.x] = in[y * n + x];
    }
    __syncthreads();
    x = blockIdx.y * TILE + threadIdx.x;  // the output tile sits at the mirrored position
    for (int j = 0; j < TILE; j += ROWS) {
        int y = blockIdx.x * TILE + threadIdx.y + j;
        if (x < n && y < n) out[y * n + x] = tile[threadIdx.x][threadIdx.y + j];
    }
}

extern "C" __global__ void transpose_smem(const float* __restrict__ in, float* __restrict__ out, int n) {
    transpose_tiled<0>(in, out, n);
}

extern "C" __global__ void transpose_padded(const float* __restrict__ in, float* __restrict__ out, int n) {
    transpose_tiled<1>(in, out, n);
}
