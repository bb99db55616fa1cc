// Attention forward, O = softmax(Q K^T / sqrt(d)) V, FP32 (chapter 5). Q, K, V and O are
// (heads, n, d) row-major; blockIdx selects the head, so a batch is folded into heads.

// The lowest finite float: a "minus infinity" whose exp() is 0 and that never makes a NaN.
// (A row with every key masked would then average V instead of giving NaN; these kernels
// mask nothing but the keys past the end, and every row has at least one real key.)
constexpr float NEG_INF = -3.402823466e+38f;

// ---- The standard path: three kernels, the n x n scores written to and read from HBM. ----

// C[h] = alpha * A[h] (M x K) times B[h] (K x N), or times B[h]^T if B[h] is N x K.
// 16 x 16 shared-memory tiles, one result per thread, block (16, 16), grid (N/16, M/16, heads).
template <bool TRANS_B>
__device__ __forceinline__ void bmm16(const float* __restrict__ A, const float* __restrict__ B,
                                      float* __restrict__ C, int M, int N, int K, float alpha) {
    __shared__ float As[16][16];
    __shared__ float Bs[16][17];  // padded: the transposed store below is conflict-free
    const size_t h = blockIdx.z;
    A += h * M * K;
    B += h * N * K;
    C += h * M * N;
    const int ty = threadIdx.y, tx = threadIdx.x;
    const int row = blockIdx.y * 16 + ty, col = blockIdx.x * 16 + tx;
    float acc = 0.0f;
    for (int k0 = 0; k0 < K; k0 += 16) {
        As[ty][tx] = (row < M && k0 + tx < K) ? A[(size_t)row * K + k0 + tx] : 0.0f;
        if (TRANS_B) {  // load B's rows along k (coalesced), store them as columns of Bs
            int n = blockIdx.x * 16 + ty, k = k0 + tx;
            Bs[tx][ty] = (n < N && k < K) ? B[(size_t)n * K + k] : 0.0f;
        } else {
            int k = k0 + ty;
            Bs[ty][tx] = (k < K && col < N) ? B[(size_t)k * N + col] : 0.0f;
        }
        __syncthreads();
        for (int k = 0; k < 16; ++k) acc += As[ty][k] * Bs[k][tx];
        __syncthreads();
    }
    if (row < M && col < N) C[(size_t)row * N + col] = alpha * acc;
}

// S = scale Q K^T: (heads, n, n).
extern "C" __global__ void attn_scores(const float* __restrict__ Q, const float* __restrict__ K,
                                       float* __restrict__ S, int n, int d, float scale) {
    bmm16<true>(Q, K, S, n, n, d, scale);
}

// P = softmax(S) along each row: one block of 256 threads per row, grid (n, heads).
extern "C" __global__ void attn_softmax(const float* __restrict__ S, float* __restrict__ P, int n) {
    __shared__ float red[256];
    const size_t offset = ((size_t)blockIdx.y * n + blockIdx.x) * n;
    const float* s = S + offset;
    float* p = P + offset;
    const int t = threadIdx.x;
    float m = NEG_INF;
    for (int j = t; j < n; j += blockDim.x) m = fmaxf(m, s[j]);
    red[t] = m;
    __syncthreads();
    for (int stride = blockDim.x / 2; stride > 0; stride /= 2) {
        if (t < stride) red[t] = fmaxf(red[t], red[t + stride]);
        __syncthreads();
    }
    m = red[0];
    __syncthreads();
    float sum = 0.0f;
    for (int j = t; j < n; j += blockDim.x) sum += expf(s[j] - m);
    red[t] = sum;
    __syncthreads();
    for (int stride = blockDim.x / 2; stride > 0; stride /= 2) {
        if (t < stride) red[t] += red[t + stride];
        __syncthreads();
    }
    const float inv = 1.0f / red[0];
    for (int j = t; j < n; j += blockDim.x) p[j] = expf(s[j] - m) * inv;
}

// O = P V: (heads, n, d).
extern "C" __global__ void attn_pv(const float* __restrict__ P, const float* __restrict__ V,
                                   float* __restrict__ O, int n, int d) {
    bmm16<false>(P, V, O, n, d, n, 1.0f);
}

// ---- FlashAttention forward: one kernel, the scores never leave the chip. ----
//
// Query blocks outer: a block of BR threads owns BR query rows, one row per thread, kept in
// registers with the row's output accumulator. It streams K and V through shared memory in
// tiles of BC rows; for every CH keys it updates the running maximum m and denominator l
// (online softmax) and rescales the accumulator once. K and V are read once per query
// block; Q is read once and O written once. Grid (ceil(n / BR), heads), block (BR).
template <int D, int BR, int BC, int CH>
__device__ __forceinline__ void flash_forward(const float* __restrict__ Q, const float* __restrict__ K,
                                              const float* __restrict__ V, float* __restrict__ O,
                                              int n, float scale) {
    __shared__ float Ks[BC][D];
    __shared__ float Vs[BC][D];
    const size_t base = (size_t)blockIdx.y * n * D;
    const int row = blockIdx.x * BR + threadIdx.x;
    float q[D], acc[D];
#pragma unroll
    for (int k = 0; k < D; ++k) {
        q[k] = row < n ? Q[base + (size_t)row * D + k] * scale : 0.0f;
        acc[k] = 0.0f;
    }
    float m = NEG_INF, l = 0.0f;
    for (int j0 = 0; j0 < n; j0 += BC) {
        for (int e = threadIdx.x; e < BC * D; e += BR) {  // consecutive threads walk a row
            int j = e / D, k = e % D;
            bool inside = j0 + j < n;
            Ks[j][k] = inside ? K[base + (size_t)(j0 + j) * D + k] : 0.0f;
            Vs[j][k] = inside ? V[base + (size_t)(j0 + j) * D + k] : 0.0f;
        }
        __syncthreads();
        const int cols = min(BC, n - j0);
        for (int c0 = 0; c0 < cols; c0 += CH) {
            float s[CH];
            float chunk_max = NEG_INF;
#pragma unroll
            for (int c = 0; c < CH; ++c) {
                float dot = 0.0f;
#pragma unroll
                for (int k = 0; k < D; ++k) dot += q[k] * Ks[c0 + c][k];  // a broadcast read
                s[c] = (c0 + c < cols) ? dot : NEG_INF;
                chunk_max = fmaxf(chunk_max, s[c]);
            }
            const float m_new = fmaxf(m, chunk_max);
            const float correction = expf(m - m_new);  // 0 on the first chunk
            l *= correction;
#pragma unroll
            for (int k = 0; k < D; ++k) acc[k] *= correction;
#pragma unroll
            for (int c = 0; c < CH; ++c) {
                const float p = expf(s[c] - m_new);  // 0 for keys past the end
                l += p;
#pragma unroll
                for (int k = 0; k < D; ++k) acc[k] += p * Vs[c0 + c][k];
            }
            m = m_new;
        }
        __syncthreads();
    }
    if (row < n) {
        const float inv = 1.0f / l;
#pragma unroll
        for (int k = 0; k < D; ++k) O[base + (size_t)row * D + k] = acc[k] * inv;
    }
}

// d = 64: 64 query rows per block, K and V tiles of 64 rows (32 KB of shared memory).
extern "C" __global__ void __launch_bounds__(64) flash_attn_d64(const float* __restrict__ Q,
        const float* __restrict__ K, const float* __restrict__ V, float* __restrict__ O,
        int n, float scale) {
    flash_forward<64, 64, 64, 16>(Q, K, V, O, n, scale);
}
