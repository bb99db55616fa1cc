// Elementwise kernels: vector add (chapter 1) and the relu / scale / bias chain, as three
// kernels and as one fused kernel (chapter 2). One thread per element, bounds-checked.

extern "C" __global__ void vector_add(const float* __restrict__ a, const float* __restrict__ b,
                                      float* __restrict__ c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}

// Unfused: each op is its own kernel, so each reads and writes the whole array.
extern "C" __global__ void relu(const float* __restrict__ x, float* __restrict__ y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = fmaxf(x[i], 0.0f);
}

extern "C" __global__ void scale(const float* __restrict__ x, float* __restrict__ y, float s, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] * s;
}

extern "C" __global__ void add_bias(const float* __restrict__ x, float* __restrict__ y, float b, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] + b;
}

// Fused: one read of x, one write of y; the intermediates live in a register.
extern "C" __global__ void relu_scale_bias(const float* __restrict__ x, float* __restrict__ y,
                                           float s, float b, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = fmaxf(x[i], 0.0f) * s + b;
}

// Strided read (chapter 2): thread i copies x[i * stride] to y[i]. The writes are
// coalesced; the reads touch more 32-byte sectors as the stride grows, up to one per thread.
extern "C" __global__ void strided_read(const float* __restrict__ x, float* __restrict__ y, int n, int stride) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[(size_t)i * stride];
}
