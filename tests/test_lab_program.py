"""gm.lab.run_program: a whole CUDA C program, its main and its launches, run on the CPU
(our own programs, written in the style of cuda-samples' and llm.c's dev/cuda mains)."""

import shutil

import numpy as np
import pytest

from gpumodel.lab import LabError, run_program
from gpumodel.presets import gpu as preset

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="the lab needs g++")

VADD = r"""
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

__constant__ float weights[2];

__global__ void axpby(const float* a, const float* b, float* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = weights[0] * a[i] + weights[1] * b[i];
}

int main(int argc, char** argv) {
    int n = argc > 1 ? atoi(argv[1]) : 1000;
    size_t bytes = n * sizeof(float);
    float *ha = (float*)malloc(bytes), *hb = (float*)malloc(bytes), *hc = (float*)malloc(bytes);
    for (int i = 0; i < n; ++i) { ha[i] = i; hb[i] = 2 * i; }
    const float w[2] = {1.0f, 0.5f};
    cudaMemcpyToSymbol(weights, w, sizeof w);
    float *da, *db, *dc;
    cudaMalloc(&da, bytes);
    cudaMalloc(&db, bytes);
    cudaMalloc(&dc, bytes);
    cudaMemcpy(da, ha, bytes, cudaMemcpyHostToDevice);
    cudaMemcpy(db, hb, bytes, cudaMemcpyHostToDevice);
    cudaEvent_t start, stop;
    cudaEventCreate(&start);
    cudaEventCreate(&stop);
    cudaEventRecord(start);
    axpby<<<(n + 255) / 256, 256>>>(da, db, dc, n);
    cudaEventRecord(stop);
    cudaEventSynchronize(stop);
    if (cudaGetLastError() != cudaSuccess) return 2;
    cudaMemcpy(hc, dc, bytes, cudaMemcpyDeviceToHost);
    for (int i = 0; i < n; ++i)
        if (hc[i] != 2.0f * i) { printf("FAIL at %d: %f\n", i, hc[i]); return 1; }
    axpby<<<1, 2048>>>(da, db, dc, n);
    printf("after a block of 2048: %s\n", cudaGetErrorName(cudaGetLastError()));
    cudaFree(da); cudaFree(db); cudaFree(dc);
    printf("PASS %d\n", n);
    return 0;
}
"""


def line_of(source: str, text: str) -> int:
    """The 1-based line of `source` that holds `text`."""
    return next(i for i, line in enumerate(source.splitlines(), 1) if text in line)


def test_a_whole_program_runs_its_main_its_launches_and_its_own_check():
    program = run_program(VADD, argv=("1000",))
    launched, refused = line_of(VADD, "axpby<<<(n"), line_of(VADD, "axpby<<<1, 2048")
    assert program.returncode == 0 and "PASS 1000" in program.output
    assert "after a block of 2048: cudaErrorInvalidConfiguration" in program.output
    assert len(program.launches) == 1 and program.lines == [launched] and program.timed
    only = program.launches[0]
    assert only.kernel == "axpby" and only.grid == (4, 1, 1) and only.blocks_traced == 4
    # two loads and one store of 1000 floats: 125 sectors each, exactly; __constant__ reads are no global traffic
    assert only.bytes["hbm"] == 3 * 4000 and len(only.sites) == 3
    assert [(k, line) for k, line, *_ in program.refused] == [("axpby", refused)]
    text = program.report()
    assert "1 launch traced" in text and f"refused at line {refused}" in text and "not a GPU's" in text


def test_a_launch_larger_than_the_sample_runs_every_block_so_the_programs_check_passes():
    program = run_program(VADD, argv=("100000",), max_threads=1024)
    assert program.returncode == 0 and "PASS 100000" in program.output
    only = program.launches[0]
    assert only.blocks == 391 and only.blocks_traced == 4 and only.sampled


def test_the_programs_exit_status_is_its_result_not_an_error():
    failing = VADD.replace("c[i] = weights[0]", "c[i] = 1.0f + weights[0]")
    program = run_program(failing, argv=("300",))
    assert program.returncode == 1 and "FAIL at 0" in program.output


OVERRUN = r"""
__global__ void fill(float* x, int n) { x[blockIdx.x * blockDim.x + threadIdx.x] = 1.0f; }
int main() {
    float* x;
    cudaMalloc(&x, 100 * sizeof(float));
    fill<<<1, 128>>>(x, 100);
    return 0;
}
"""


def test_an_access_past_an_array_names_the_line_that_allocated_it_and_the_launch():
    with pytest.raises(LabError, match=r"fill \(launched at line 6\) writes out of bounds at line 2: .* byte 400 of "
                                       r"the array cudaMalloc'd at line 5, which holds bytes 0 to 399"):
        run_program(OVERRUN)


def test_a_crash_in_host_code_names_its_line():
    source = "int main() {\n    float* p = nullptr;\n    p[3] = 1.0f;\n    return 0;\n}\n"
    with pytest.raises(LabError, match=r"crashed \(SIGSEGV\) in its host code at line 3"):
        run_program(source)


def test_a_call_into_cublas_or_another_file_is_named_at_link():
    source = ("#include <cublas_v2.h>\nfloat gold(int);\nint main() {\n    cublasHandle_t h;\n    cublasCreate(&h);\n"
              "    float one = 1;\n    cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, 1, 1, 1, &one, 0, 1, 0, 1, &one, 0, 1);\n"
              "    return gold(1) > 0;\n}\n")
    with pytest.raises(LabError) as err:
        run_program(source)
    assert "cublasSgemm (cuBLAS), which the lab does not run" in str(err.value)
    assert "cublasCreate" not in str(err.value)  # a handle is set up on the CPU: it holds nothing
    assert "gold" in str(err.value) and "builds a program from one file" in str(err.value)


def test_cublas_handles_are_set_up_and_destroyed():
    source = ("#include <cublasLt.h>\n#include <cstdio>\nint main() {\n    cublasHandle_t h;\n    cublasLtHandle_t lt;\n"
              "    int ok = cublasCreate(&h) == CUBLAS_STATUS_SUCCESS && cublasLtCreate(&lt) == CUBLAS_STATUS_SUCCESS &&\n"
              "             cublasSetMathMode(h, CUBLAS_TF32_TENSOR_OP_MATH) == CUBLAS_STATUS_SUCCESS;\n"
              "    cublasDestroy(h);\n    cublasLtDestroy(lt);\n    printf(\"%d\\n\", ok);\n}\n")
    assert run_program(source).output.strip() == "1"


def test_a_file_path_puts_its_folder_on_the_include_path(tmp_path):
    (tmp_path / "twice.cuh").write_text("__device__ int twice(int v) { return 2 * v; }\n")
    (tmp_path / "main.cu").write_text(
        '#include <cstdio>\n#include "twice.cuh"\n__global__ void k(int* y) { y[threadIdx.x] = twice(threadIdx.x); }\n'
        "int main() {\n    int* d; int h[32];\n    cudaMalloc(&d, sizeof h);\n    k<<<1, 32>>>(d);\n"
        '    cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost);\n    printf("%d\\n", h[31]);\n    return 0;\n}\n')
    program = run_program(tmp_path / "main.cu")
    assert program.output.strip() == "62" and program.launches[0].bytes["hbm"] == 128


def test_a_header_s_extern_shared_array_is_the_launch_s_and_an_edited_header_is_built_again(tmp_path):
    """simpleTemplates' style: the dynamic shared memory is declared in a helper of an included header."""
    header = tmp_path / "smem.cuh"
    header.write_text("template <class T> struct Scratch {\n    __device__ T* get() { extern __shared__ T slots[]; "
                      "return slots; }\n};\n#define STEP 1\n")
    (tmp_path / "main.cu").write_text(
        '#include <cstdio>\n#include "smem.cuh"\n__global__ void reverse(float* y) {\n    float* s = Scratch<float>().get();\n'
        "    s[threadIdx.x] = threadIdx.x * STEP;\n    __syncthreads();\n    y[threadIdx.x] = s[blockDim.x - 1 - threadIdx.x];\n}\n"
        "int main() {\n    float* d; float h[64];\n    cudaMalloc(&d, sizeof h);\n    reverse<<<1, 64, sizeof h>>>(d);\n"
        '    cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost);\n    printf("%g %g\\n", h[0], h[63]);\n}\n')
    first = run_program(tmp_path / "main.cu")
    assert first.output.strip() == "63 0" and first.launches[0].bytes["hbm"] == 64 * 4
    header.write_text(header.read_text().replace("#define STEP 1", "#define STEP 2"))
    assert run_program(tmp_path / "main.cu").output.strip() == "126 0"  # not the build of the header before


def test_a_thread_group_holds_the_block_or_a_tile_as_simple_cooperative_groups_uses_it():
    source = r"""
#include <cooperative_groups.h>
#include <cstdio>
namespace cg = cooperative_groups;
__device__ int total(cg::thread_group g, int* scratch, int v) {
    for (int i = g.size() / 2; i > 0; i /= 2) {
        scratch[g.thread_rank()] = v;
        g.sync();
        if (g.thread_rank() < i) v += scratch[g.thread_rank() + i];
        g.sync();
    }
    return v;
}
__global__ void sums(int* out) {
    extern __shared__ int scratch[];
    cg::thread_block block = cg::this_thread_block();
    int whole = total(block, scratch, block.thread_rank());
    block.sync();
    cg::thread_group tile = cg::tiled_partition(block, 16);
    int offset = block.thread_rank() - tile.thread_rank();
    int part = total(tile, scratch + offset, tile.thread_rank());
    if (block.thread_rank() == 0) out[0] = whole;
    if (tile.thread_rank() == 0) out[1 + block.thread_rank() / 16] = part;
}
int main() {
    int* d; int h[5];
    cudaMalloc(&d, sizeof h);
    sums<<<1, 64, 64 * sizeof(int)>>>(d);
    cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost);
    printf("%d %d %d %d %d\n", h[0], h[1], h[2], h[3], h[4]);
}
"""
    done = run_program(source)
    assert done.output.strip() == "2016 120 120 120 120"  # 0 + ... + 63; 0 + ... + 15 in each tile
    assert not done.launches[0].races


def test_bad_arguments_are_refused_by_name():
    with pytest.raises(TypeError, match="argv must be a sequence of strs"):
        run_program(VADD, argv="1000")
    with pytest.raises(ValueError, match="source_or_path names no file"):
        run_program("/nowhere/program.cu")
    with pytest.raises(TypeError, match="source_or_path must be"):
        run_program(42)


VOTES = r"""
#include <cstdio>
__global__ void votes(bool* info) {
    int t = threadIdx.x;
    bool* mine = info + 2 * t;
    mine[0] = __any_sync(0xffffffff, t >= 48);
    if (__all_sync(0xffffffff, t >= 48)) mine[1] = true;
}
int main() {
    bool* d; bool h[192] = {};
    cudaMalloc(&d, sizeof h);
    cudaMemcpy(d, h, sizeof h, cudaMemcpyHostToDevice);
    votes<<<1, 96>>>(d);
    cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost);
    int wrong = 0;
    for (int t = 0; t < 96; ++t) wrong += h[2 * t] != (t >= 32) || h[2 * t + 1] != (t >= 64);
    printf("%d wrong\n", wrong);
    return wrong != 0;
}
"""


def test_a_vote_counts_the_lanes_that_met_though_some_return_before_others_read_it():
    """cuda-samples' simpleVoteIntrinsics found it: in the warp of threads 32 to 63, the lanes whose
    __all_sync is false return at once; the others must still see their votes."""
    program = run_program(VOTES)
    assert program.output.strip() == "0 wrong" and program.returncode == 0


def test_an_event_query_finds_the_work_done_and_the_occupancy_api_sizes_a_launch():
    """In the style of cuda-samples' asyncAPI and simpleOccupancy: a launch has finished when it
    returns, so the polling loop ends at once; the block size fills an SM by threads alone."""
    source = r"""
#include <cstdio>
__global__ void one(int* y, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = 1; }
int main() {
    int grid, block, n = 3000, *d, polls = 0;
    cudaOccupancyMaxPotentialBlockSize(&grid, &block, one, 0, 256);
    cudaMalloc(&d, n * sizeof(int));
    cudaEvent_t done;
    cudaEventCreate(&done);
    one<<<(n + block - 1) / block, block>>>(d, n);
    cudaEventRecord(done);
    while (cudaEventQuery(done) == cudaErrorNotReady) ++polls;
    printf("%d %d %d\n", block, grid, polls);
    return 0;
}
"""
    program = run_program(source, gpu="H100-SXM")
    block, grid, polls = map(int, program.output.split())
    sms = int(preset("H100-SXM").sms.value)  # its data file's
    assert (block, polls) == (256, 0) and grid == sms * 2048 // 256
    assert program.launches[0].grid == (12, 1, 1) and program.gpu == "H100-SXM"


REPEATS = r"""
#include <cstdio>
__constant__ float factor;
__global__ void scale(float* y, const float* x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = factor * x[i];
}
__global__ void bump(float* x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] += 1.0f;
}
__global__ void tally(int* count) { atomicAdd(count, 1); }
__global__ void hello(int n) { if (threadIdx.x == 0) printf("hello %d\n", n); }
int main() {
    const int n = 256;
    float h[n], *x, *y;
    for (int i = 0; i < n; ++i) h[i] = i;
    int *count, total = 0;
    cudaMalloc(&x, n * sizeof(float));
    cudaMalloc(&y, n * sizeof(float));
    cudaMalloc(&count, sizeof(int));
    cudaMemset(count, 0, sizeof(int));
    cudaMemcpy(x, h, sizeof h, cudaMemcpyHostToDevice);
    float two = 2, three = 3;
    cudaMemcpyToSymbol(factor, &two, sizeof two);
    for (int r = 0; r < 20; ++r) scale<<<n / 64, 64>>>(y, x, n);      // 19 of these need not run again
    cudaMemcpy(h, y, sizeof h, cudaMemcpyDeviceToHost);
    printf("%g ", h[5]);
    cudaMemcpyToSymbol(factor, &three, sizeof three);
    scale<<<n / 64, 64>>>(y, x, n);                                   // the constant changed: it runs
    cudaMemcpy(h, y, sizeof h, cudaMemcpyDeviceToHost);
    printf("%g ", h[5]);
    for (int r = 0; r < 5; ++r) bump<<<n / 64, 64>>>(x, n);           // reads what it writes: each runs
    cudaMemcpy(h, x, sizeof h, cudaMemcpyDeviceToHost);
    printf("%g ", h[5]);
    for (int r = 0; r < 3; ++r) tally<<<2, 32>>>(count);              // an atomic: each runs
    cudaMemcpy(&total, count, sizeof total, cudaMemcpyDeviceToHost);
    printf("%d\n", total);
    hello<<<1, 32>>>(7);
    hello<<<1, 32>>>(7);                                              // it prints: it runs
}
"""


def test_a_launch_the_same_as_one_before_with_nothing_it_touched_changed_is_not_run_again():
    done = run_program(REPEATS)
    lines = done.output.splitlines()
    assert lines[0] == "10 15 10 192"  # 2 x 5; 3 x 5; 5 + 5 bumps; 3 launches of 64 threads counting
    assert lines[1:] == ["hello 7", "hello 7"]
    assert done.repeated == 19
    assert len(done.launches) + done.untraced == 20 + 1 + 5 + 3 + 2 - 19
    assert "19 not run again" in done.report()


def test_the_program_is_run_under_its_own_name(tmp_path):
    (tmp_path / "stats.cu").write_text('#include <cstdio>\nint main(int argc, char** argv) { printf("%s %s\\n", argv[0], argv[1]); }\n')
    assert run_program(tmp_path / "stats.cu", argv=("7",)).output.strip() == "./stats 7"
    assert run_program((tmp_path / "stats.cu").read_text()).output.startswith("./program ")


def test_a_host_launcher_named_as_its_kernel_runs_it_as_llm_c_does():
    source = ("#include <cstdio>\n__global__ void twice(float* y, int n) { int i = threadIdx.x; if (i < n) y[i] = 2 * i; }\n"
              "void twice(float* y, int n, int block) { twice<<<1, block>>>(y, n); }\n"
              "int main() {\n    float* d; float h[32];\n    cudaMalloc(&d, sizeof h);\n"
              "    for (int r = 0; r < 3; ++r) twice(d, 32, 32);\n"
              '    cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost);\n    printf("%g\\n", h[31]);\n}\n')
    done = run_program(source)
    assert done.output.strip() == "62" and len(done.launches) == 1 and done.repeated == 2  # the kernel, by its types


def test_a_cudamalloc_past_the_labs_memory_is_said_beside_the_programs_own_check():
    source = ('#include <cstdio>\nint main() {\n    float* d;\n    cudaError_t e = cudaMalloc(&d, 1ull << 40);\n'
              '    printf("%s\\n", cudaGetErrorString(e));\n    return e != cudaSuccess;\n}\n')
    done = run_program(source)
    assert done.returncode == 1 and done.output.strip() == "out of memory"
    assert done.unallocated == [(1 << 40, 4)]
    assert "cudaMalloc of 1.10 TB at line 4 failed (cudaErrorMemoryAllocation)" in done.report()
    assert "pass run_program(..., memory=BYTES)" in done.report()


def test_a_program_given_more_memory_allocates_what_the_default_refuses():
    """llm.c's dev/cuda mains hold GPT-2's logits (B*T*V floats) and their host copies: more than
    the default; `memory` raises the bound, never past the machine's."""
    source = ('#include <cstdio>\nint main() {\n    char* d;\n    cudaError_t e = cudaMalloc(&d, 1200000000);\n'
              '    printf("%s\\n", cudaGetErrorString(e));\n    return e != cudaSuccess;\n}\n')
    assert run_program(source, memory=1.0e9).unallocated == [(1200000000, 4)]
    assert run_program(source, memory=2.0e9).output.strip() == "no error"
    with pytest.raises(ValueError, match=r"memory \(bytes, at most the machine's\) must be a finite number >= 1e\+09"):
        run_program(source, memory=1e20)


def test_cudamemcpy2d_copies_rows_between_pitches():
    source = ('#include <cstdio>\nint main() {\n    float h[3][4], back[3][2], *d;\n'
              '    for (int i = 0; i < 12; ++i) h[i / 4][i % 4] = i;\n    cudaMalloc(&d, 6 * sizeof(float));\n'
              '    cudaMemcpy2D(d, 2 * sizeof(float), h, 4 * sizeof(float), 2 * sizeof(float), 3, cudaMemcpyHostToDevice);\n'
              '    cudaMemcpy(back, d, sizeof back, cudaMemcpyDeviceToHost);\n'
              '    printf("%g %g %g %g %g %g\\n", back[0][0], back[0][1], back[1][0], back[1][1], back[2][0], back[2][1]);\n'
              '    printf("%d\\n", (int)cudaMemcpy2D(d, 4, h, 16, 8, 1, cudaMemcpyHostToDevice));\n}\n')
    assert run_program(source).output.split("\n")[:2] == ["0 1 4 5 8 9", "1"]  # the first two of each row; too wide a row


BENCHMARKED = r"""
#include <cstdio>
#include <type_traits>
template <int Block, bool Twice>
__global__ void bump(float* x, int n, std::bool_constant<Twice>) {  // unnamed, as llm.c's matmul_backward_bias
    extern float __shared__ staged[];  // the type before __shared__, as cuda-samples' threadFenceReduction
    int i = blockIdx.x * Block + threadIdx.x;
    staged[threadIdx.x] = i < n ? x[i] : 0.0f;
    __syncthreads();
    if (i < n) x[i] = staged[threadIdx.x] + (Twice ? 2.0f : 1.0f);
}
int main(int argc, char** argv) {
    int n = 1000, loops = argc > 1 ? atoi(argv[1]) : 50;
    float* d;
    cudaMalloc(&d, n * sizeof(float));
    cudaMemset(d, 0, n * sizeof(float));
    for (int r = 0; r < loops; ++r)  // a benchmark's loop of an in-place kernel
        bump<128, true><<<(n + 127) / 128, 128, 128 * sizeof(float)>>>(d, n, std::bool_constant<true>{});
    float h[1000];
    cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost);
    printf("%g %g\n", h[0], h[n - 1]);
    return 0;
}
"""


def test_an_in_place_kernel_in_a_benchmark_loop_runs_every_time_unless_repeats_caps_it():
    """Every run counts by default (50 loops add 100); with repeats=3 the lab runs the launch 3
    times, counts the other 47 and says that memory is as its last run left it. The kernel's name
    keeps its template arguments' space, its unnamed parameter is passed and its `extern float
    __shared__` array is the launch's dynamic shared memory."""
    every = run_program(BENCHMARKED)
    assert every.output.split() == ["100", "100"] and every.capped == 0
    assert every.launches[0].kernel == "bump<128, true>"
    capped = run_program(BENCHMARKED, repeats=3)
    assert capped.output.split() == ["6", "6"] and capped.capped == 47 and len(capped.launches) == 3
    assert "47 not run because the same launch (kernel, configuration and arguments) had run 3 times" in capped.report()
    with pytest.raises(ValueError, match=r"repeats \(None: every run\) must be an integer from 1"):
        run_program(BENCHMARKED, repeats=0)


def test_a_program_stopped_in_a_loop_of_one_launch_is_told_of_repeats():
    line = line_of(BENCHMARKED, "bump<128, true><<<")
    with pytest.raises(LabError, match=rf"ran past the time limit of 4 s.*Its launch of bump<128, true> at line {line} "
                                       r"ran \d+ times or more.*repeats=3"):
        run_program(BENCHMARKED, argv=("100000000",), timeout=4)


ROUNDED = r"""
#include <cstdio>
__global__ void bounds(const float* x, float* out, int n) {  // an interval library's style: each result bracketed
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float a = x[2 * i], b = x[2 * i + 1];
    float* o = out + 10 * i;
    o[0] = __fadd_rd(a, b); o[1] = __fadd_ru(a, b); o[2] = __fmul_rd(a, b); o[3] = __fmul_ru(a, b);
    o[4] = __fdiv_rd(a, b); o[5] = __fdiv_ru(a, b); o[6] = __fsqrt_rd(fabsf(a)); o[7] = __fsqrt_ru(fabsf(a));
    o[8] = __fsub_rz(a, b); o[9] = __fadd_rn(a, b);
}
int main() {
    const int n = 64;
    float hx[2 * n], hout[10 * n], *x, *out;
    unsigned s = 12345;
    for (int i = 0; i < 2 * n; ++i) { s = s * 1664525u + 1013904223u; hx[i] = ((int)(s >> 8) - (1 << 23)) / 1021.0f; }
    cudaMalloc(&x, sizeof hx);
    cudaMallocAsync(&out, sizeof hout, 0);  // stream-ordered, as cuda-samples' streamOrderedAllocation
    cudaMemcpy(x, hx, sizeof hx, cudaMemcpyHostToDevice);
    bounds<<<1, n>>>(x, out, n);
    cudaMemcpy(hout, out, sizeof hout, cudaMemcpyDeviceToHost);
    cudaFreeAsync(out, 0);
    for (int i = 0; i < 2 * n; ++i) printf("%a ", hx[i]);
    printf("\n");
    for (int i = 0; i < 10 * n; ++i) printf("%a ", hout[i]);
    printf("\n");
    return 0;
}
"""


def test_the_directed_rounding_intrinsics_bracket_the_exact_result_by_one_float():
    """_rd is the largest float at or below the exact sum, product, quotient or root, _ru the
    smallest at or above, _rz the one of them nearer zero (checked in exact rationals), as
    cuda-samples' interval arithmetic relies on."""
    import fractions
    import math

    import numpy as np

    program = run_program(ROUNDED)
    inputs, outputs = ([float.fromhex(v) for v in row.split()] for row in program.output.splitlines())
    up = lambda v: float(np.nextafter(np.float32(v), np.float32(np.inf)))
    F = fractions.Fraction
    inexact = 0
    for i in range(len(inputs) // 2):
        a, b = inputs[2 * i], inputs[2 * i + 1]
        o = outputs[10 * i:10 * i + 10]
        for (low, high), exact in zip([o[0:2], o[2:4], o[4:6]], [F(a) + F(b), F(a) * F(b), F(a) / F(b)]):
            assert F(low) <= exact <= F(high) and (high == low == exact or up(low) == high)
            inexact += high != low
        root = math.sqrt(abs(a))  # double: exact enough to place a float's root between neighbours
        assert o[6] <= root <= o[7] and (o[6] == o[7] or up(o[6]) == o[7]) and F(o[6]) ** 2 <= F(abs(a)) <= F(o[7]) ** 2
        assert abs(F(o[8])) <= abs(F(a) - F(b)) < abs(F(o[8])) + F(abs(up(abs(o[8])) - abs(o[8])))
        assert o[9] == float(np.float32(a) + np.float32(b))
    assert inexact > 50  # the inputs exercise rounding, not only exact results


ZERO_COPY = r"""
#include <cstdio>
#include <cstdlib>
__global__ void add(const float* a, const float* b, float* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}
int main() {
    const int n = 1000;
    cudaDeviceProp prop;
    cudaGetDeviceProperties(&prop, 0);
    if (!prop.canMapHostMemory) return 3;
    cudaSetDeviceFlags(cudaDeviceMapHost);
    float *a, *b, *c, *da, *db, *dc;
    cudaHostAlloc(&a, n * sizeof(float), cudaHostAllocMapped);  // pinned and mapped, as simpleZeroCopy
    cudaHostAlloc(&b, n * sizeof(float), cudaHostAllocMapped);
    c = (float*)malloc(n * sizeof(float));
    cudaHostRegister(c, n * sizeof(float), cudaHostRegisterMapped);  // the host's own memory, registered
    for (int i = 0; i < n; ++i) { a[i] = i; b[i] = 2 * i; }
    cudaHostGetDevicePointer(&da, a, 0);
    cudaHostGetDevicePointer(&db, b, 0);
    cudaHostGetDevicePointer(&dc, c, 0);
    add<<<(n + 255) / 256, 256>>>(da, db, dc, n);
    cudaDeviceSynchronize();
    int wrong = 0;
    for (int i = 0; i < n; ++i) wrong += c[i] != 3.0f * i;
    cudaHostUnregister(c);
    cudaFreeHost(a);
    cudaFreeHost(b);
    free(c);
    printf("%d wrong\n", wrong);
    return wrong != 0;
}
"""


def test_mapped_and_registered_host_memory_is_an_array_a_kernel_reads_and_writes():
    """cuda-samples' simpleZeroCopy: a kernel adds arrays the host allocated pinned and mapped
    (cudaHostAlloc) into one it registered (cudaHostRegister); each is an array of the trace."""
    program = run_program(ZERO_COPY)
    assert program.output.strip() == "0 wrong" and program.returncode == 0
    assert program.launches[0].bytes["hbm"] > 0 and not program.launches[0].races


def test_system_wide_atomics_from_a_kernel_and_the_host_meet_in_mapped_memory():
    """cuda-samples' systemWideAtomics: the kernel's *_system atomics and the host's __sync_*
    builtins on one mapped array; and cudaEventCreateWithFlags, as its streams sample calls it."""
    source = r"""
#include <cstdio>
__global__ void count(int* x) { atomicAdd_system(&x[0], 1); atomicMax_system(&x[1], (int)threadIdx.x); }
int main() {
    int* x;
    cudaHostAlloc(&x, 2 * sizeof(int), cudaHostAllocMapped);
    x[0] = x[1] = 0;
    cudaEvent_t done;
    cudaEventCreateWithFlags(&done, cudaEventDisableTiming);
    count<<<2, 64>>>(x);
    cudaEventRecord(done);
    cudaEventSynchronize(done);
    __sync_fetch_and_add(&x[0], 10);
    int old = __sync_val_compare_and_swap(&x[1], 63, 100);
    printf("%d %d %d\n", x[0], x[1], old);
    return 0;
}
"""
    assert run_program(source).output.split() == ["138", "100", "63"]


def test_repeats_caps_a_benchmark_loop_but_never_a_check_that_resets_its_output_first():
    """llm.c's dev/cuda mains check each launch after a cudaMemset of its output, then time the
    same launch in a loop: with repeats=1 every check still sees its launch's result (run, the host
    having written what it touches, or copied in from a run on the same contents), and only the
    loop's repeats are counted instead."""
    source = r"""
#include <cstdio>
__global__ void bump(float* x, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] += 1.0f; }
int main() {
    const int n = 256;
    float *d, h[n], *flush;
    cudaMalloc(&d, sizeof h);
    cudaMalloc(&flush, 1024);
    int passed = 0;
    for (int check = 0; check < 4; ++check) {
        cudaMemset(d, 0, sizeof h);
        bump<<<1, n>>>(d, n);
        cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost);
        passed += h[0] == 1.0f && h[n - 1] == 1.0f;
    }
    for (int r = 0; r < 20; ++r) {  // the benchmark, an L2 flush between repeats as llm.c's
        cudaMemset(flush, 0, 1024);
        bump<<<1, n>>>(d, n);
    }
    printf("%d\n", passed);
    return 0;
}
"""
    program = run_program(source, repeats=1)
    # Checks 1 and 2 run; 3 and 4 start from the contents 2 started from, so its result is copied in.
    # The loop's first launch starts from the 1s the last check left: it runs, the other 19 are capped.
    assert program.output.strip() == "4" and (program.repeated, program.capped) == (2, 19)
    assert run_program(source).output.strip() == "4"


ASSERTS = r"""
#include <cassert>
#include <cstdio>
#include <cuda_runtime.h>

#define CHECK(call) do { cudaError_t e = (call); if (e != cudaSuccess) \
    printf("error %s at %s:%d\n", cudaGetErrorName(e), __FILE__, __LINE__); } while (0)

__global__ void bounded(int* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    assert(i < n);
    out[i] = i;
}

int main() {
    int* d;
    CHECK(cudaMalloc(&d, 96 * sizeof(int)));
    bounded<<<2, 32>>>(d, 64);
    CHECK(cudaDeviceSynchronize());
    printf("first launch ok\n");
    bounded<<<3, 32>>>(d, 70);
    cudaError_t e = cudaDeviceSynchronize();
    printf("after: %s, %s\n", cudaGetErrorName(e), cudaGetErrorString(e));
    bounded<<<1, 32>>>(d, 64);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpy(&e, d, sizeof(int), cudaMemcpyDeviceToHost));
    return e == cudaErrorAssert ? 0 : 1;
}
"""


def test_a_device_assert_stops_its_thread_and_loses_the_context_as_cuda_does(tmp_path):
    """A failed assert in a kernel prints CUDA's line (the file's own name, the function, block
    and thread), stops that thread and the launch's later blocks; every call after returns
    cudaErrorAssert, and later launches do not run."""
    path = tmp_path / "asserts.cu"
    path.write_text(ASSERTS)
    program = run_program(path)
    line = line_of(ASSERTS, "assert(i < n)")
    failed = [row for row in program.output.splitlines() if "Assertion" in row]
    # Block 2 holds threads 64..95 of the second launch; threads 70.. fail, block 1 and the rest of 2 do not.
    assert failed == [f"asserts.cu:{line}: void bounded(int*, int): block: [2,0,0], thread: [{t},0,0] "
                      f"Assertion `i < n` failed." for t in range(6, 32)]
    assert "first launch ok" in program.output
    assert "after: cudaErrorAssert, device-side assert triggered" in program.output
    check = line_of(ASSERTS, "CHECK(cudaGetLastError())")
    assert f"error cudaErrorAssert at asserts.cu:{check}" in program.output
    assert program.returncode == 0
    assert len(program.launches) == 2 and program.lines == [line_of(ASSERTS, "bounded<<<2"), line_of(ASSERTS, "bounded<<<3")]


READS = r"""
#include <cstdio>
__global__ void twice(float* v, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) v[i] *= 2.0f;
}
int main() {
    float h[4];
    FILE* in = fopen("./data/signal.txt", "r");
    if (!in) { printf("no input\n"); return 1; }
    for (int i = 0; i < 4; ++i) fscanf(in, "%f", &h[i]);
    fclose(in);
    float* d;
    cudaMalloc(&d, sizeof h);
    cudaMemcpy(d, h, sizeof h, cudaMemcpyHostToDevice);
    twice<<<1, 32>>>(d, 4);
    cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost);
    FILE* out = fopen("result.txt", "w");
    for (int i = 0; i < 4; ++i) fprintf(out, "%g\n", h[i]);
    fclose(out);
    printf("%g %g %g %g\n", h[0], h[1], h[2], h[3]);
}
"""


def test_a_program_reads_the_files_beside_it_and_what_it_writes_stays_private(tmp_path):
    """The program runs where it sees its folder's files (cuda-samples read ./data/), and a file it
    writes anew is written in its temporary folder, not beside the source."""
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "signal.txt").write_text("1 2.5 -3 4\n")
    (tmp_path / "reads.cu").write_text(READS)
    program = run_program(tmp_path / "reads.cu")
    assert program.output.strip() == "2 5 -6 8" and program.returncode == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data", "reads.cu"]
    assert run_program(READS).output.strip() == "no input"


OVERWRITES = r"""
#include <cstdio>
int main() {
    FILE* f = fopen("input.txt", "w");
    fprintf(f, "overwritten\n");
    fclose(f);
    FILE* g = fopen("data/more.txt", "a");
    fprintf(g, "appended\n");
    fclose(g);
    printf("wrote\n");
}
"""


def test_a_program_that_writes_its_inputs_changes_only_its_copies(tmp_path):
    (tmp_path / "input.txt").write_text("the learner's input\n")
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "more.txt").write_text("kept\n")
    (tmp_path / "overwrites.cu").write_text(OVERWRITES)
    assert run_program(tmp_path / "overwrites.cu").output.strip() == "wrote"
    assert (tmp_path / "input.txt").read_text() == "the learner's input\n"
    assert (tmp_path / "data" / "more.txt").read_text() == "kept\n"


def test_a_folder_too_large_to_copy_is_refused_with_what_to_do(tmp_path, monkeypatch):
    from gpumodel.lab import runner

    (tmp_path / "big.bin").write_bytes(b"x" * 2048)
    monkeypatch.setattr(runner, "INPUT_BYTES", 1024)
    with pytest.raises(LabError, match="put the program and its input files in a folder of their own"):
        runner.copy_inputs(tmp_path, tmp_path / "run", "program")


OPENMP = r"""
#include <cstdio>
#include <omp.h>
__global__ void fill(int* v, int value) { v[threadIdx.x] = value; }
int main() {
    int* d;
    cudaMalloc(&d, 32 * sizeof(int));
    omp_set_num_threads(4);
    int regions = 0;
#pragma omp parallel
    {
        fill<<<1, 32>>>(d, omp_get_thread_num() + 10 * omp_get_num_threads());
        regions++;
    }
    int h[32];
    cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost);
    printf("%d %d\n", regions, h[31]);
}
"""


def test_an_openmp_program_runs_its_parallel_region_once_on_one_thread():
    """cuda-samples' cudaOpenMP style: the lab's omp.h answers for one host thread, and the
    region (its pragma ignored) runs once."""
    assert run_program(OPENMP).output.split() == ["1", "10"]


GRAPHS = r"""
#include <cstdio>
#include <cstring>
#include <cuda_runtime.h>

__global__ void scale(float* v, float by, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) v[i] *= by;
}
__global__ void total(const float* v, double* sum, int n) {
    if (threadIdx.x == 0) for (int i = 0; i < n; ++i) *sum += v[i];
}
struct Seen { double* sum; int calls; };
void CUDART_CB report(void* data) {
    Seen* seen = (Seen*)data;
    seen->calls++;
    printf("sum %g\n", *seen->sum);
}

int main() {
    const int n = 100;
    float h[n];
    for (int i = 0; i < n; ++i) h[i] = i;
    float* v;
    double *sum, h_sum = 0;
    cudaMalloc(&v, sizeof h);
    cudaMalloc(&sum, sizeof(double));
    Seen seen = {&h_sum, 0};

    // Built by hand: copy in, clear the sum, scale, total, copy out, report.
    cudaGraph_t graph;
    cudaGraphCreate(&graph, 0);
    cudaGraphNode_t copy_in, clear, k1, k2, copy_out, host;
    cudaMemcpy3DParms in = {0};
    in.srcPtr = make_cudaPitchedPtr(h, sizeof h, n, 1);
    in.dstPtr = make_cudaPitchedPtr(v, sizeof h, n, 1);
    in.extent = make_cudaExtent(sizeof h, 1, 1);
    in.kind = cudaMemcpyHostToDevice;
    cudaGraphAddMemcpyNode(&copy_in, graph, NULL, 0, &in);
    cudaMemsetParams zero = {0};
    zero.dst = sum; zero.elementSize = 4; zero.width = 2; zero.height = 1;
    cudaGraphAddMemsetNode(&clear, graph, NULL, 0, &zero);
    float by = 2.0f;
    int count = n;
    void* scale_args[] = {&v, &by, &count};
    cudaKernelNodeParams kp = {0};
    kp.func = (void*)scale; kp.gridDim = dim3(4); kp.blockDim = dim3(32); kp.kernelParams = scale_args;
    cudaGraphAddKernelNode(&k1, graph, &copy_in, 1, &kp);
    by = 100.0f;  // the node copied its arguments when it was added
    void* total_args[] = {&v, &sum, &count};
    kp.func = (void*)total; kp.gridDim = dim3(1); kp.kernelParams = total_args;
    cudaGraphNode_t before[] = {k1, clear};
    cudaGraphAddKernelNode(&k2, graph, before, 2, &kp);
    cudaMemcpy3DParms out = {0};
    out.srcPtr = make_cudaPitchedPtr(sum, sizeof(double), 1, 1);
    out.dstPtr = make_cudaPitchedPtr(&h_sum, sizeof(double), 1, 1);
    out.extent = make_cudaExtent(sizeof(double), 1, 1);
    out.kind = cudaMemcpyDeviceToHost;
    cudaGraphAddMemcpyNode(&copy_out, graph, &k2, 1, &out);
    cudaHostNodeParams hp = {report, &seen};
    cudaGraphAddHostNode(&host, graph, &copy_out, 1, &hp);
    size_t nodes = 0;
    cudaGraphGetNodes(graph, NULL, &nodes);
    printf("nodes %zu\n", nodes);
    cudaGraphExec_t exec;
    cudaGraphInstantiate(&exec, graph, NULL, NULL, 0);
    for (int i = 0; i < 2; ++i) cudaGraphLaunch(exec, 0);

    // Captured from two streams, forked and joined through events.
    cudaStream_t s1, s2;
    cudaStreamCreate(&s1);
    cudaStreamCreate(&s2);
    cudaEvent_t fork, join;
    cudaEventCreate(&fork);
    cudaEventCreate(&join);
    cudaStreamBeginCapture(s1, cudaStreamCaptureModeGlobal);
    cudaMemcpyAsync(v, h, sizeof h, cudaMemcpyHostToDevice, s1);
    cudaEventRecord(fork, s1);
    cudaStreamWaitEvent(s2, fork, 0);
    cudaMemsetAsync(sum, 0, sizeof(double), s2);
    cudaEventRecord(join, s2);
    scale<<<4, 32, 0, s1>>>(v, 3.0f, n);
    cudaStreamWaitEvent(s1, join, 0);
    void* args[] = {&v, &sum, &count};
    cudaLaunchKernel((void*)total, dim3(1), dim3(32), args, 0, s1);
    cudaMemcpyAsync(&h_sum, sum, sizeof(double), cudaMemcpyDeviceToHost, s1);
    cudaLaunchHostFunc(s1, report, &seen);
    cudaGraph_t captured;
    cudaStreamEndCapture(s1, &captured);
    printf("ran while capturing: %d\n", seen.calls);
    cudaGraphGetNodes(captured, NULL, &nodes);
    printf("nodes %zu\n", nodes);
    cudaGraph_t clone;
    cudaGraphClone(&clone, captured);
    cudaGraphExec_t exec2;
    cudaGraphInstantiate(&exec2, clone, 0);
    cudaGraphLaunch(exec2, s1);
    cudaStreamSynchronize(s1);
    printf("calls %d\n", seen.calls);
    cudaGraphExecDestroy(exec);
    cudaGraphExecDestroy(exec2);
    cudaGraphDestroy(graph);
    cudaGraphDestroy(captured);
    cudaGraphDestroy(clone);
    return 0;
}
"""


def test_a_graph_built_by_hand_or_captured_from_streams_runs_its_nodes_in_order():
    """simpleCudaGraphs' style: a graph of copies, a set, kernels (named by their addresses, their
    arguments copied when added) and a host function, launched twice; then the same work captured
    from two streams forked and joined by events (nothing runs while capturing: the host function has run twice, not three times), cloned and launched."""
    program = run_program(GRAPHS)
    assert program.returncode == 0, program.output
    first, tripled = 2.0 * sum(range(100)), 3.0 * sum(range(100))
    assert program.output.split("\n")[:-1] == [
        "nodes 6", f"sum {first:g}", f"sum {first:g}", "ran while capturing: 2", "nodes 6", f"sum {tripled:g}", "calls 3"]
    line = line_of(GRAPHS, "cudaLaunchKernel((void*)total")
    assert program.lines[-1] == line and len(program.launches) == 6


CLEARED_LOOP = r"""
#include <cstdio>
__global__ void accumulate(const float* x, float* sum, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) atomicAdd(sum, x[i]);
}
int main() {
    const int n = 4096;
    float h[n], *x, *sum, got;
    for (int i = 0; i < n; ++i) h[i] = i % 7;
    cudaMalloc(&x, sizeof h);
    cudaMalloc(&sum, sizeof(float));
    cudaMemcpy(x, h, sizeof h, cudaMemcpyHostToDevice);
    for (int r = 0; r < 50; ++r) {  // llm.c's style: clear, launch, time
        cudaMemset(sum, 0, sizeof(float));
        accumulate<<<n / 256, 256>>>(x, sum, n);
    }
    cudaMemcpy(&got, sum, sizeof got, cudaMemcpyDeviceToHost);
    printf("%g\n", got);
    h[5] = 100;  // new contents: run again, not copied
    cudaMemcpy(x, h, sizeof h, cudaMemcpyHostToDevice);
    cudaMemset(sum, 0, sizeof(float));
    accumulate<<<n / 256, 256>>>(x, sum, n);
    cudaMemcpy(&got, sum, sizeof got, cudaMemcpyDeviceToHost);
    printf("%g\n", got);
    for (int r = 0; r < 3; ++r) accumulate<<<n / 256, 256>>>(x, sum, n);  // in place: each adds again
    cudaMemcpy(&got, sum, sizeof got, cudaMemcpyDeviceToHost);
    printf("%g\n", got);
}
"""


def test_a_launch_on_contents_it_ran_on_before_is_copied_in_not_run_again():
    """A benchmark's loop that clears its output before each launch: from the third run on, the
    result of the second (same kernel, configuration, arguments and contents) is copied in; new
    contents run again, and an in-place launch whose output it reads runs each time."""
    program = run_program(CLEARED_LOOP)
    base = sum(i % 7 for i in range(4096))
    assert program.output.split() == [f"{base:g}", f"{base + 95:g}", f"{4 * (base + 95):g}"]
    assert program.repeated == 48


def test_a_file_that_does_not_compile_is_named_in_g_plus_plus_messages_by_its_own_name(tmp_path):
    """g++ compiles the program as the lab's kernel.cu; its messages say the learner's file."""
    (tmp_path / "broken.cu").write_text("__global__ void k(float* x) { x[0] = undeclared; }\nint main() {}\n")
    with pytest.raises(LabError) as err:
        run_program(tmp_path / "broken.cu")
    assert "broken.cu:1:" in str(err.value) and "kernel.cu" not in str(err.value)


SCRATCH_LOOP = r"""
#include <cstdio>
__global__ void partial(const float* x, float* scratch, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) atomicAdd(&scratch[i % 4], x[i]);
    if (i < 4) atomicAdd(out, 0.0f);
}
__global__ void finish(const float* scratch, float* out) { if (threadIdx.x == 0) *out = scratch[0] + scratch[1] + scratch[2] + scratch[3]; }
void step(const float* x, float* out, int n) {  // llm.c's layernorm_backward2 style: scratch allocated around each launch
    float* scratch;
    cudaMalloc(&scratch, 4 * sizeof(float));
    cudaMemset(scratch, 0, 4 * sizeof(float));
    partial<<<n / 128, 128>>>(x, scratch, out, n);
    finish<<<1, 32>>>(scratch, out);
    cudaFree(scratch);
}
int main() {
    const int n = 1024;
    float h[n], *x, *out, got;
    for (int i = 0; i < n; ++i) h[i] = i % 5;
    cudaMalloc(&x, sizeof h);
    cudaMalloc(&out, sizeof(float));
    cudaMemcpy(x, h, sizeof h, cudaMemcpyHostToDevice);
    for (int r = 0; r < 20; ++r) step(x, out, n);
    cudaMemcpy(&got, out, sizeof got, cudaMemcpyDeviceToHost);
    printf("%g\n", got);
}
"""


def test_scratch_freed_and_allocated_again_in_its_place_is_the_same_array_to_a_launch():
    """llm.c's style: a scratch array cudaMalloc'd, cleared and freed around each launch lands where
    the last one was; the launch on the same contents is copied in, and the result is the sum."""
    program = run_program(SCRATCH_LOOP)
    assert program.output.strip() == f"{sum(i % 5 for i in range(1024)):g}"
    assert program.repeated >= 2 * 17  # both launches, from their third run on


COOPERATIVE = r"""
#include <cstdio>
#include <cooperative_groups.h>
namespace cg = cooperative_groups;

// reductionMultiBlockCG's style, in two grid-wide phases: each block's sum of its stride into
// partial[block]; the grid waits; the first thread adds the partials; the grid waits; every
// thread divides its stride by the total. `early` blocks return before the first wait.
__global__ void normalise(float* x, float* partial, int n, int early) {
    cg::grid_group grid = cg::this_grid();
    __shared__ float sums[128];
    if (blockIdx.x < early) return;
    float mine = 0.0f;
    for (unsigned long long i = grid.thread_rank(); i < n; i += grid.size()) mine += x[i];
    sums[threadIdx.x] = mine;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s /= 2) {
        if (threadIdx.x < s) sums[threadIdx.x] += sums[threadIdx.x + s];
        __syncthreads();
    }
    if (threadIdx.x == 0) partial[blockIdx.x] = sums[0];
    grid.sync();
    if (grid.thread_rank() == 0) {
        float total = 0.0f;
        for (int b = 0; b < gridDim.x; ++b) total += partial[b];
        partial[0] = total;
    }
    cg::sync(grid);
    for (unsigned long long i = grid.thread_rank(); i < n; i += grid.size()) x[i] /= partial[0];
}

int main(int argc, char** argv) {
    const int n = 5000, early = argc > 1 ? atoi(argv[1]) : 0;
    float *x, *partial;
    cudaMallocManaged(&x, n * sizeof(float));
    cudaMalloc(&partial, 4096 * sizeof(float));
    for (int i = 0; i < n; ++i) x[i] = 1 + i % 7;
    int per_sm = 0, sms = 0;
    cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, normalise, 128, 0);
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
    void* args[] = {&x, &partial, (void*)&n, (void*)&early};
    cudaError_t fits = cudaLaunchCooperativeKernel((void*)normalise, dim3(sms), dim3(128), args);
    cudaDeviceSynchronize();
    double sum = 0;
    for (int i = 0; i < n; ++i) sum += x[i];
    cudaError_t too_many = cudaLaunchCooperativeKernel((void*)normalise, dim3(sms * per_sm + 1), dim3(128), args);
    printf("%s %.5f %s\n", cudaGetErrorName(fits), sum, cudaGetErrorName(too_many));
}
"""


def test_a_cooperative_launch_waits_at_the_grids_barrier_and_a_block_that_skips_it_is_named():
    """Every block's partial is in place before the first thread adds them (a block's __shared__
    sums kept while the others run), so the normalised array sums to 1; a grid larger than the
    GPU holds at once is refused as CUDA refuses it; blocks that return before grid.sync() while
    the rest wait are a deadlock, named at the learner's line."""
    program = run_program(COOPERATIVE)
    status, total, refused = program.output.split()
    assert (status, refused) == ("cudaSuccess", "cudaErrorCooperativeLaunchTooLarge")
    assert float(total) == pytest.approx(1.0, abs=1e-4)
    assert program.cooperative == 1 and "1 cooperative launch run untraced" in program.report()
    with pytest.raises(LabError) as err:
        run_program(COOPERATIVE, argv=("3",))
    line = COOPERATIVE.splitlines().index("    grid.sync();") + 1
    assert f"at line {line} (`grid.sync();`)" in str(err.value) and "105 of its 108 blocks wait" in str(err.value)


ASYNC_COPY = r"""
#include <cstdio>
#include <cuda/barrier>
#include <cuda/pipeline>
#include <cooperative_groups.h>
namespace cg = cooperative_groups;

// globalToShmemAsyncCopy's styles: a tile staged by memcpy_async and summed by the block, once
// through a barrier of the whole block, once through each thread's own pipeline (two stages in
// turn), once through a pipeline the block shares, its last warp the producer.
__global__ void by_barrier(const float4* x, float* out) {
    __shared__ cuda::barrier<cuda::thread_scope_block> bar;
    __shared__ alignas(16) float4 tile[64];
    if (threadIdx.x == 0) init(&bar, blockDim.x);
    __syncthreads();
    cuda::memcpy_async(&tile[threadIdx.x], &x[blockIdx.x * 64 + threadIdx.x], cuda::aligned_size_t<16>(16), bar);
    bar.arrive_and_wait();
    float4 v = tile[(threadIdx.x + 1) % 64];
    out[blockIdx.x * 64 + threadIdx.x] = v.x + v.y + v.z + v.w;
}

__global__ void by_pipeline(const float* x, float* out, int steps) {
    __shared__ float stage[2][64];
    cuda::pipeline<cuda::thread_scope_thread> pipe = cuda::make_pipeline();
    float total = 0;
    pipe.producer_acquire();
    cuda::memcpy_async(&stage[0][threadIdx.x], &x[threadIdx.x], sizeof(float), pipe);
    pipe.producer_commit();
    for (int s = 0; s < steps; ++s) {
        pipe.producer_acquire();
        if (s + 1 < steps) cuda::memcpy_async(&stage[(s + 1) % 2][threadIdx.x], &x[(s + 1) * 64 + threadIdx.x], sizeof(float), pipe);
        pipe.producer_commit();
        pipe.consumer_wait();
        total += stage[s % 2][threadIdx.x];
        pipe.consumer_release();
    }
    out[threadIdx.x] = total;
}

__global__ void by_shared_pipeline(const float* x, float* out, int steps) {
    __shared__ float stage[2][64];
    __shared__ cuda::pipeline_shared_state<cuda::thread_scope_block, 2> state;
    auto block = cg::this_thread_block();
    const bool producer = threadIdx.x >= 64;
    auto pipe = cuda::make_pipeline(block, &state, producer ? cuda::pipeline_role::producer : cuda::pipeline_role::consumer);
    float total = 0;
    for (int s = 0; s < steps; ++s) {
        if (producer) {
            pipe.producer_acquire();
            for (int i = threadIdx.x - 64; i < 64; i += 32) cuda::memcpy_async(&stage[s % 2][i], &x[s * 64 + i], sizeof(float), pipe);
            pipe.producer_commit();
        } else {
            pipe.consumer_wait();
            total += stage[s % 2][threadIdx.x];
            pipe.consumer_release();
        }
    }
    if (!producer) out[threadIdx.x] = total;
}

int main() {
    const int steps = 9;
    float *x, *out;
    cudaMallocManaged(&x, 64 * steps * sizeof(float));
    cudaMallocManaged(&out, 64 * steps * sizeof(float));
    for (int i = 0; i < 64 * steps; ++i) x[i] = i % 13;
    by_barrier<<<2, 64>>>((const float4*)x, out);
    cudaDeviceSynchronize();
    double barrier_sum = 0;
    for (int i = 0; i < 128; ++i) barrier_sum += out[i];
    by_pipeline<<<1, 64>>>(x, out, steps);
    cudaDeviceSynchronize();
    double own = 0;
    for (int i = 0; i < 64; ++i) own += out[i];
    by_shared_pipeline<<<1, 96>>>(x, out, steps);
    cudaDeviceSynchronize();
    double shared = 0;
    for (int i = 0; i < 64; ++i) shared += out[i];
    printf("%g %g %g\n", barrier_sum, own, shared);
}
"""


def test_memcpy_async_through_a_barrier_a_threads_pipeline_and_a_shared_pipeline_stages_every_tile():
    """Each staging gives the sums NumPy gives; the barrier's copy is one 16-byte access a thread
    (cp.async's widest), as the kernel asked with cuda::aligned_size_t<16>."""
    x = np.arange(64 * 9) % 13
    program = run_program(ASYNC_COPY)
    assert [float(v) for v in program.output.split()] == [x[:512].sum(), x.sum(), x.sum()]
    barrier = program.launches[0]
    loads = [s for s in barrier.sites if s.space == "global" and not s.write]
    assert {s.size for s in loads} == {16} and barrier.bytes["l1"] >= 2 * 64 * 16


MANY_LAUNCHES = r"""
#include <cstdio>
__global__ void add(int* total, int i) { if (threadIdx.x == 0) atomicAdd(total, i); }
int main() {
    int* d; int h = 0;
    cudaMalloc(&d, sizeof h);
    cudaMemcpy(d, &h, sizeof h, cudaMemcpyHostToDevice);
    for (int i = 1; i <= 105; ++i) add<<<1, 32>>>(d, i);
    cudaMemcpy(&h, d, sizeof h, cudaMemcpyDeviceToHost);
    printf("%d\n", h);
}
"""


def test_launches_past_the_hundredth_run_untraced():
    """105 launches, each with other arguments (none is a repeat): the first 100 traced, the
    other 5 run untraced, and every one counted in what the program prints."""
    done = run_program(MANY_LAUNCHES)
    assert done.output.strip() == str(105 * 106 // 2)
    assert len(done.launches) == 100 and done.untraced == 5 and done.repeated == 0
    assert ", 5 more run untraced" in done.report()


PAST_SHARED = r"""
__global__ void shift(float* y) {
    extern __shared__ float s[];
    s[threadIdx.x + 1] = threadIdx.x;
    __syncthreads();
    y[threadIdx.x] = s[threadIdx.x];
}
int main() {
    float* d;
    cudaMalloc(&d, 64 * sizeof(float));
    shift<<<1, 64, 64 * sizeof(float)>>>(d);
}
"""


def test_a_programs_launch_past_its_dynamic_shared_memory_names_what_the_launch_asked_for():
    """<<<grid, block, shared_mem>>>'s third: the bytes the fault names are the launch's own."""
    with pytest.raises(LabError, match=r"shift \(launched at line 11\) writes out of bounds at line 4: .*byte 256 of the "
                                       r"launch's dynamic shared memory \(extern __shared__\), which holds the "
                                       r"shared_mem=256 bytes the launch asked for"):
        run_program(PAST_SHARED)


SPIN = r"""
__global__ void spin(int* flag) { while (*flag == 0) { } }
int main() {
    int* d;
    cudaMalloc(&d, sizeof(int));
    cudaMemset(d, 0, sizeof(int));
    spin<<<1, 32>>>(d);
}
"""


def test_a_program_stopped_at_its_limit_in_a_launch_names_the_launch():
    with pytest.raises(LabError, match=r"^the program ran past the time limit of 2 s, in its launch of spin at line 7: "
                                       r"an endless loop"):
        run_program(SPIN, timeout=2)
