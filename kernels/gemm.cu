// C = A B for row-major A (M x K), B (K x N), C (M x N), FP32 (chapters 1 and 3).
// Every kernel handles sizes that are not multiples of its tiles: loads past an edge read
// zero, stores past an edge are skipped.

// Naive: one thread per element of C; every operand comes from global memory (via L2).
extern "C" __global__ void gemm_naive(const float* __restrict__ A, const float* __restrict__ B,
                                      float* __restrict__ C, int M, int N, int K) {
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= M || col >= N) return;
    float acc = 0.0f;
    for (int k = 0; k < K; ++k) acc += A[row * K + k] * B[k * N + col];
    C[row * N + col] = acc;
}

// Tiled: a block of (BM/TM) x (BN/TN) threads computes a BM x BN tile of C. For each step
// of BK along K it stages a BM x BK tile of A and a BK x BN tile of B in shared memory;
// each thread then keeps TM x TN results in registers and reads TM + TN operands from
// shared memory per k.
//
// Thread (ty, tx) owns rows ty + (BM/TM) i and columns tx + (BN/TN) j of the block's tile.
// In a warp, threads with the same ty read the same word of As (a broadcast) and
// neighbouring tx read neighbouring words of Bs, so the operand reads are conflict-free;
// consecutive threads store consecutive words of both tiles, so the stores are too.
template <int BM, int BN, int BK, int TM, int TN>
__device__ __forceinline__ void gemm_tiled(const float* __restrict__ A, const float* __restrict__ B,
                                           float* __restrict__ C, int M, int N, int K,
                                           int block_row, int block_col) {
    constexpr int ROWS = BM / TM, COLS = BN / TN, THREADS = ROWS * COLS;
    __shared__ float As[BM][BK];
    __shared__ float Bs[BK][BN];
    const int tx = threadIdx.x, ty = threadIdx.y, tid = ty * COLS + tx;
    const int row0 = block_row * BM, col0 = block_col * BN;
    float acc[TM][TN];
    for (int i = 0; i < TM; ++i)
        for (int j = 0; j < TN; ++j) acc[i][j] = 0.0f;
    float a_frag[TM], b_frag[TN];

    for (int k0 = 0; k0 < K; k0 += BK) {
        for (int e = tid; e < BM * BK; e += THREADS) {  // A tile: consecutive threads walk k
            int m = e / BK, k = e % BK;
            int gr = row0 + m, gk = k0 + k;
            As[m][k] = (gr < M && gk < K) ? A[gr * K + gk] : 0.0f;
        }
        for (int e = tid; e < BK * BN; e += THREADS) {  // B tile: consecutive threads walk n
            int k = e / BN, n = e % BN;
            int gk = k0 + k, gc = col0 + n;
            Bs[k][n] = (gk < K && gc < N) ? B[gk * N + gc] : 0.0f;
        }
        __syncthreads();
        for (int k = 0; k < BK; ++k) {
            for (int i = 0; i < TM; ++i) a_frag[i] = As[ty + ROWS * i][k];
            for (int j = 0; j < TN; ++j) b_frag[j] = Bs[k][tx + COLS * j];
            for (int i = 0; i < TM; ++i)
                for (int j = 0; j < TN; ++j) acc[i][j] += a_frag[i] * b_frag[j];
        }
        __syncthreads();
    }
    for (int i = 0; i < TM; ++i) {
        int r = row0 + ty + ROWS * i;
        for (int j = 0; j < TN; ++j) {
            int c = col0 + tx + COLS * j;
            if (r < M && c < N) C[r * N + c] = acc[i][j];
        }
    }
}

// 16 x 16 tiles, one result per thread: 256 threads, block (16, 16).
extern "C" __global__ void gemm_smem16(const float* __restrict__ A, const float* __restrict__ B,
                                       float* __restrict__ C, int M, int N, int K) {
    gemm_tiled<16, 16, 16, 1, 1>(A, B, C, M, N, K, blockIdx.y, blockIdx.x);
}

// 128 x 128 tiles, BK = 8, 8 x 8 results per thread: 256 threads, block (16, 16).
extern "C" __global__ void __launch_bounds__(256) gemm_reg128(const float* __restrict__ A,
        const float* __restrict__ B, float* __restrict__ C, int M, int N, int K) {
    gemm_tiled<128, 128, 8, 8, 8>(A, B, C, M, N, K, blockIdx.y, blockIdx.x);
}

// Deliberately oversized: 16 x 16 results per thread need 256 accumulators, more than the
// 255 registers a thread may have, so the compiler spills to local memory (in HBM).
// 64 threads, block (8, 8).
extern "C" __global__ void __launch_bounds__(64) gemm_spill(const float* __restrict__ A,
        const float* __restrict__ B, float* __restrict__ C, int M, int N, int K) {
    gemm_tiled<128, 128, 8, 16, 16>(A, B, C, M, N, K, blockIdx.y, blockIdx.x);
}

// The 128 x 128 / 8 x 8 kernel on a one-dimensional grid, with the order in which blocks
// take tiles of C chosen at launch (chapter 4): group = 0 is row-major (a wave sweeps a few
// rows of C across all its columns); group > 0 walks `group` rows at a time, column by
// column, so a wave covers a squarer patch and shares more panels of A and B in L2.
extern "C" __global__ void __launch_bounds__(256) gemm_reg128_raster(const float* __restrict__ A,
        const float* __restrict__ B, float* __restrict__ C, int M, int N, int K, int group) {
    const int cols = (N + 127) / 128, rows = (M + 127) / 128, pid = blockIdx.x;
    int row = pid / cols, col = pid % cols;
    if (group > 0) {
        const int first = (pid / (group * cols)) * group;
        const int height = min(rows - first, group);
        const int inside = pid % (group * cols);
        row = first + inside % height;
        col = inside / height;
    }
    gemm_tiled<128, 128, 8, 8, 8>(A, B, C, M, N, K, row, col);
}
