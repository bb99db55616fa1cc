// Read a buffer `passes` times (chapter 1's bandwidth-versus-working-set sweep). Each
// thread sums the float4s it visits (a grid-stride loop) and writes its sum, so the reads
// cannot be optimised away. Warm data that fits in L2 is served from there.

extern "C" __global__ void sweep_read(const float4* __restrict__ x, float* __restrict__ out,
                                      int n4, int passes) {
    const int tid = blockIdx.x * blockDim.x + threadIdx.x;
    const int stride = gridDim.x * blockDim.x;
    float acc = 0.0f;
    for (int p = 0; p < passes; ++p)
        for (int i = tid; i < n4; i += stride) {
            float4 v = x[i];
            acc += (v.x + v.y) + (v.z + v.w);
        }
    out[tid] = acc;
}
