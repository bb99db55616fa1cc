// A templated SGEMM in the style of public "2D blocktiling" kernels, written for the lab's
// benchmark (tests/benchmark.py): each block computes a BM x BN tile of C = A B (row-major,
// M x K times K x N) with (BM / TM) x (BN / TN) threads, each a TM x TN tile of results in
// registers. Per step of BK along K, every thread loads one float4 of A (stored transposed, so
// that a thread's TM values of one column are contiguous in shared memory) and one float4 of B,
// then accumulates the outer products of a column of As and a row of Bs.
template <int BM, int BN, int BK, int TM, int TN>
__global__ void __launch_bounds__((BM * BN) / (TM * TN))
    sgemm_2d(int M, int N, int K, const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C) {
    constexpr int THREADS = (BM * BN) / (TM * TN);
    static_assert(BM * BK == 4 * THREADS && BK * BN == 4 * THREADS, "one float4 of A and one of B per thread");
    __shared__ float As[BK * BM], Bs[BK * BN];
    const int tx = threadIdx.x % (BN / TN), ty = threadIdx.x / (BN / TN);
    A += blockIdx.y * BM * K;
    B += blockIdx.x * BN;
    C += blockIdx.y * BM * N + blockIdx.x * BN;
    const int a_row = threadIdx.x / (BK / 4), a_col = threadIdx.x % (BK / 4) * 4;
    const int b_row = threadIdx.x / (BN / 4), b_col = threadIdx.x % (BN / 4) * 4;
    float acc[TM][TN] = {};
    float a_reg[TM], b_reg[TN];
    for (int k0 = 0; k0 < K; k0 += BK) {
        const float4 a = *reinterpret_cast<const float4*>(&A[a_row * K + a_col]);
        As[(a_col + 0) * BM + a_row] = a.x;
        As[(a_col + 1) * BM + a_row] = a.y;
        As[(a_col + 2) * BM + a_row] = a.z;
        As[(a_col + 3) * BM + a_row] = a.w;
        *reinterpret_cast<float4*>(&Bs[b_row * BN + b_col]) = *reinterpret_cast<const float4*>(&B[b_row * N + b_col]);
        __syncthreads();
        A += BK;
        B += BK * N;
#pragma unroll
        for (int k = 0; k < BK; ++k) {
#pragma unroll
            for (int i = 0; i < TM; i += 4) {
                const float4 v = *reinterpret_cast<const float4*>(&As[k * BM + ty * TM + i]);
                a_reg[i] = v.x, a_reg[i + 1] = v.y, a_reg[i + 2] = v.z, a_reg[i + 3] = v.w;
            }
#pragma unroll
            for (int j = 0; j < TN; j += 4) {
                const float4 v = *reinterpret_cast<const float4*>(&Bs[k * BN + tx * TN + j]);
                b_reg[j] = v.x, b_reg[j + 1] = v.y, b_reg[j + 2] = v.z, b_reg[j + 3] = v.w;
            }
#pragma unroll
            for (int i = 0; i < TM; ++i)
#pragma unroll
                for (int j = 0; j < TN; ++j) acc[i][j] += a_reg[i] * b_reg[j];
        }
        __syncthreads();
    }
    for (int i = 0; i < TM; ++i)
        for (int j = 0; j < TN; j += 4)
            *reinterpret_cast<float4*>(&C[(ty * TM + i) * N + tx * TN + j]) =
                make_float4(acc[i][j], acc[i][j + 1], acc[i][j + 2], acc[i][j + 3]);
}
