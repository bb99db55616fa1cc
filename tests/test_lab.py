"""The kernel lab's tracer: hand-made kernels whose counts are derived by hand (and by
`gm.simulate`'s rules), the course's kernels against their analytic workloads, and a learner's
kernel that does not compile, crashes, loops or writes out of bounds."""

import pathlib
import re
import time

import numpy as np
import pytest

import gpumodel as gm
from gpumodel.cuda import plans
from gpumodel.lab import LabError, trace
from gpumodel.lab import reporter
from gpumodel.lab.reporter import total_bytes, trace_plan

HAND = r"""
__global__ void copy(const float* x, float* y, int stride) {
    int t = threadIdx.x;
    y[t] = x[t * stride];
}
__global__ void banks(const float* x, float* y, int step) {
    __shared__ float s[1024];
    int t = threadIdx.x;
    for (int i = t; i < 1024; i += 32) s[i] = x[i];
    __syncthreads();
    y[t] = s[(t * step) % 1024];
}
__global__ void wide(const float4* x, float4* y) {
    __shared__ float4 s[32];
    int t = threadIdx.x;
    s[t] = x[t];
    __syncthreads();
    y[31 - t] = s[t];
}
__global__ void branch(const float* x, float* y) {
    int t = threadIdx.x;
    if (t % 2) y[t] = x[t];
    else y[t] = -1.0f;
}
__global__ void reverse(const float* x, float* y) {
    __shared__ float s[64];
    int t = threadIdx.x;
    s[t] = x[t];
    __syncthreads();
    y[t] = s[63 - t];
}
__global__ void guarded(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i];
}
"""


def starter_line(source: str, text: str) -> int:
    """The line of `source` (numbered from 1, as the learner sees it) that holds `text`."""
    (line,) = [i for i, row in enumerate(source.splitlines(), 1) if text in row]
    return line


def site(t, space, write):
    (s,) = [s for s in t.sites if s.space == space and s.write == write]
    return s


# stride 0: every lane reads x[0], a broadcast: its 4 distinct bytes need 1 sector, not 4.
@pytest.mark.parametrize("stride, sectors, ideal", [(1, 4, 4), (2, 8, 4), (8, 32, 4), (100, 32, 4), (0, 1, 1)])
def test_a_warps_read_touches_the_sectors_its_addresses_span(stride, sectors, ideal):
    x, y = np.arange(32 * max(stride, 1), dtype=np.float32), np.zeros(32, np.float32)
    t = trace(HAND, "copy", 1, 32, [x, y, stride])
    load = site(t, "global", False)
    assert (load.instructions, load.sectors, load.ideal_sectors) == (1, sectors, ideal)
    assert ideal == -(-len(set(np.arange(32) * stride)) * 4 // 32)  # distinct bytes / 32 B, rounded up
    assert sectors == gm.simulate.sectors_touched(np.arange(32) * stride * 4)
    np.testing.assert_array_equal(y, x[::stride] if stride else np.full(32, x[0]))
    assert load.line == 4 and t.bytes["l1"] == 32 * (sectors + 4)


@pytest.mark.parametrize("step, ways", [(1, 1), (2, 2), (32, 32), (0, 1)])  # 0: every lane reads s[0], a broadcast
def test_shared_loads_take_the_wavefronts_of_their_bank_conflicts(step, ways):
    x, y = np.arange(1024, dtype=np.float32), np.zeros(32, np.float32)
    t = trace(HAND, "banks", 1, 32, [x, y, step])
    load = site(t, "shared", False)
    assert (load.instructions, load.wavefronts, load.ideal_wavefronts) == (1, ways, 1)
    assert ways == gm.simulate.wavefronts(np.arange(32) * step % 1024)
    store = site(t, "shared", True)
    assert store.instructions == store.wavefronts == 32
    np.testing.assert_array_equal(y, x[np.arange(32) * step % 1024])


def test_128_bit_loads_take_four_wavefronts_and_sixteen_sectors():
    x, y = np.arange(128, dtype=np.float32), np.zeros(128, np.float32)
    t = trace(HAND, "wide", 1, 32, [x, y])
    words = np.arange(128).reshape(32, 4)
    assert site(t, "shared", False).wavefronts == gm.simulate.wavefronts(words) == 4
    assert site(t, "global", False).sectors == 16 and site(t, "global", False).size == 16
    np.testing.assert_array_equal(y.reshape(32, 4), x.reshape(32, 4)[::-1])


def test_a_divergent_branch_issues_each_side_with_half_the_lanes():
    x, y = np.arange(32, dtype=np.float32), np.zeros(32, np.float32)
    t = trace(HAND, "branch", 1, 32, [x, y])
    stores = [s for s in t.sites if s.space == "global" and s.write]
    assert len(stores) == 2 and all((s.instructions, s.lanes, s.divergent) == (1, 16, 1) for s in stores)
    assert site(t, "global", False).lanes == 16


def test_syncthreads_separates_the_phases():
    x, y = np.arange(64, dtype=np.float32), np.zeros(64, np.float32)
    t = trace(HAND, "reverse", 1, 64, [x, y])
    np.testing.assert_array_equal(y, x[::-1])
    assert site(t, "shared", True).instructions == 2 and site(t, "shared", False).wavefronts == 2


SHUFFLES = r"""
__global__ void shuffles(const float* x, float* total, float* moved) {
    int t = threadIdx.x;
    float v = x[t];
    for (int o = 16; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffff, v, o);
    total[t] = v;
    moved[t] = __shfl_down_sync(0xffffffff, x[t], 1) + __shfl_sync(0xffffffff, x[t], 3);
}
"""


def test_warp_shuffles_pass_registers_within_each_warp_and_touch_no_memory():
    x, total, moved = np.arange(64, dtype=np.float32), np.zeros(64, np.float32), np.zeros(64, np.float32)
    t = trace(SHUFFLES, "shuffles", 1, 64, [x, total, moved])
    warps = x.reshape(2, 32)
    np.testing.assert_array_equal(total.reshape(2, 32), np.repeat(warps.sum(axis=1, keepdims=True), 32, axis=1))
    down = np.concatenate([warps[:, 1:], warps[:, -1:]], axis=1)  # the last lane keeps its own value
    np.testing.assert_array_equal(moved.reshape(2, 32), down + warps[:, 3:4])
    assert t.bytes["smem"] == 0 and t.bytes["l2"] == 3 * x.nbytes  # x read once, two arrays written


def test_an_out_of_bounds_guard_keeps_the_last_warp_partial():
    x, y = np.arange(40, dtype=np.float32), np.zeros(40, np.float32)
    t = trace(HAND, "guarded", 2, 32, [x, y, 40])
    load = site(t, "global", False)
    assert (load.instructions, load.lanes, load.divergent, load.sectors) == (2, 40, 1, 4 + 1)
    np.testing.assert_array_equal(y, x)


def test_a_large_launch_is_sampled_and_scaled():
    n = 64 * 256
    x, y = np.ones(n, np.float32), np.zeros(n, np.float32)
    full = trace(HAND, "guarded", 64, 256, [x, y, n])
    y_part = np.zeros(n, np.float32)
    part = trace(HAND, "guarded", 64, 256, [x, y_part, n], max_threads=8 * 256)
    assert not full.sampled and part.sampled and (part.blocks_traced, part.scale) == (8, 8)
    assert part.bytes == full.bytes == {"smem": 0, "l1": 8 * n, "l2": 8 * n, "hbm": 8 * n, "hbm_no_reuse": 8 * n}
    assert "a sample: every block ran" in part.report()
    np.testing.assert_array_equal(y_part, x)  # every block's output, traced or not


def test_the_report_names_the_worst_line_and_the_models_time():
    x, y = np.arange(32 * 8, dtype=np.float32), np.zeros(32, np.float32)
    t = trace(HAND, "copy", 1, 32, [x, y, 8])
    assert t.hottest().line == 4 and not t.hottest().write
    text = t.report(gpus=["H100-SXM"])
    assert "worst: line 4" in text and "H100-SXM" in text and "bound by" in text
    work = t.workload(flops=0)
    assert work.bytes["l2"] == 32 * (32 + 4) and gm.predict(work, "T4").bound == "hbm"


# Course kernels at small sizes: the traced bytes equal the analytic workload exactly (the
# tolerance is 0) at sizes that fill whole warps and tiles.
EXACT = [
    (lambda: plans.plan_vector_add(1024), ("l2", "hbm")),
    (lambda: plans.plan_chain(1024, fused=False), ("l2", "hbm")),
    (lambda: plans.plan_chain(1024, fused=True), ("l2", "hbm")),
    (lambda: plans.plan_strided(1024, 4), ("l2", "hbm")),
    (lambda: plans.plan_gemm("gemm_naive", 64, 64, 32), ("l2", "hbm")),
    (lambda: plans.plan_gemm("gemm_smem16", 64, 64, 32), ("l2", "hbm")),  # smem: as written, below
    (lambda: plans.plan_gemm("gemm_reg128", 128, 128, 16), ("smem", "l2", "hbm")),
    (lambda: plans.plan_transpose("transpose_smem", 64), ("smem", "l2", "hbm")),
    (lambda: plans.plan_transpose("transpose_padded", 64), ("smem", "l2", "hbm")),
    (lambda: plans.plan_attention("standard", 1, 64), ("hbm",)),
]


@pytest.mark.parametrize("make, levels", EXACT, ids=lambda v: "" if callable(v) else "-".join(v))
def test_course_kernels_traced_equal_their_workloads(make, levels):
    plan = make()
    traces = trace_plan(plan)
    got = total_bytes(traces)
    for level in levels:
        assert got[level] == float(plan.workload.bytes[level]), (plan.label, level)
    assert not [race.message for t in traces for race in t.races]  # racecheck and initcheck clean


def _as_written(plan):
    """The workload of a plan's kernel as its source reads (4-byte shared loads: the lab traces
    the CUDA C, not the compiler's SASS); the plan's own where the two agree."""
    info = gm.kernel_info.info(plan.kernel)
    if info.layout == "strided":
        return plan.workload
    return gm.gemm(*(plan.sizes[d] for d in "mnk"), block=info.block, thread=info.thread)


def test_the_lab_traces_the_16x16_tiles_reads_as_written_which_the_compiler_widens():
    """The lab traces the source: `gemm_smem16`'s A row read one word a load. Its SASS reads
    it four words a load (LDS.128), which the model charges (`layout="strided_a128"`): the
    trace's shared-memory operand bytes exceed the model's by exactly A's reads, half a
    wavefront a warp per step of k (one against 2/4)."""
    plan = plans.plan_gemm("gemm_smem16", 64, 64, 32)
    (t,) = trace_plan(plan)
    traced = float(t.workload().bytes["smem"]) - t.l1_path_bytes
    assert traced == float(_as_written(plan).bytes["smem"])
    warp_steps = 64 * 64 / 32 * 32  # warps x steps of k
    assert traced - float(plan.workload.bytes["smem"]) == 128 * warp_steps * (1 - 2 / 4)


@pytest.mark.parametrize("make", [lambda: plans.plan_gemm("gemm_smem16", 64, 64, 32),
                                  lambda: plans.plan_gemm("gemm_reg128", 128, 128, 16),
                                  lambda: plans.plan_transpose("transpose_padded", 64)])
def test_the_traced_workload_adds_to_a_tiled_kernels_smem_only_the_l1_path_the_model_leaves_out(make):
    """A difference found, not a tolerance: the model's tiled formulas charge the shared-memory
    level with the tiles' wavefronts only, the traced workload also with the global loads and
    stores that cross the same data path (as the model charges the naive GEMM's). Each of these
    kernels' global requests is coalesced: one 128 B wavefront each."""
    plan = make()
    (t,) = trace_plan(plan)
    requests = sum(row["requests"] for name, row in t.counts().items() if name.startswith("global"))
    assert t.l1_path_bytes == 128 * requests > 0
    assert float(t.workload().bytes["smem"]) == float(_as_written(plan).bytes["smem"]) + t.l1_path_bytes


def test_the_naive_gemm_pays_one_l1_wavefront_per_global_request():
    """The naive GEMM has no shared memory; the model charges its loads and stores the L1 and
    shared-memory data path they share, one 128 B wavefront per warp request (chapter 3).
    The trace counts those requests."""
    plan = plans.plan_gemm("gemm_naive", 64, 64, 32)
    (t,) = trace_plan(plan)
    counts = t.counts()
    requests = sum(row["requests"] for name, row in counts.items() if name.startswith("global"))
    assert 128 * requests == float(plan.workload.bytes["smem"]) > 0
    assert float(t.workload().bytes["smem"]) == float(plan.workload.bytes["smem"])  # the traced workload charges them
    assert not any(row["requests"] for name, row in counts.items() if name.startswith("shared"))


@pytest.mark.parametrize("stride, per_request", [(1, 128), (2, 256), (8, 1024), (64, 1024)])
def test_a_global_request_takes_a_wavefront_or_its_sectors_on_the_l1_path(stride, per_request):
    x, y = np.zeros(32 * 64, np.float32), np.zeros(32, np.float32)
    t = trace(HAND, "copy", 1, 32, [x, y, stride])
    assert t.l1_path_bytes == per_request + 128  # the load, and the coalesced store
    assert float(t.workload().bytes["smem"]) == t.l1_path_bytes


def test_a_partial_last_warp_reads_only_its_live_lanes():
    """gm.strided_read counts a partial last warp as a whole one; the kernel's guard means
    its dead lanes load nothing, so the trace is lower by those lanes' sectors."""
    n, stride = 1000, 4
    got = total_bytes(trace_plan(plans.plan_strided(n, stride)))
    dead_sectors = 32 * stride * 4 // 32 - (n % 32) * stride * 4 // 32
    assert got["l2"] == float(gm.strided_read(n, stride).bytes["l2"]) - 32 * dead_sectors


def test_flash_attention_writes_o_a_row_per_thread():
    """The course's flash kernel reads Q and writes O one row per thread: 32 sectors per
    request where 4 would do. L2 sees every stored sector, so its L2 bytes exceed the model's
    (which assumes coalesced tiles); its HBM bytes lie between the compulsory traffic and the
    model's no-reuse count."""
    plan = plans.plan_attention("flash", 1, 128)
    (t,) = trace_plan(plan)
    o_store = site(t, "global", True)
    assert o_store.sectors == 32 * o_store.instructions
    model = plan.workload.bytes
    assert t.bytes["hbm"] <= float(model["hbm"]) <= t.bytes["hbm_no_reuse"]
    assert t.bytes["l2"] > float(model["l2"])


def test_a_kernel_that_does_not_compile_says_where():
    with pytest.raises(LabError, match=r"does not compile:[\s\S]*kernel.cu:3"):
        trace("__global__ void k(float* y) {\n  int t = threadIdx.x;\n  y[t] = undefined_name;\n}", "k", 1, 32,
              [np.zeros(32, np.float32)])


def test_a_crash_is_reported_and_python_goes_on():
    source = "__global__ void k(float* y) { float* p = nullptr; p[threadIdx.x + (1 << 28)] = y[0]; }"
    with pytest.raises(LabError, match=r"crashed \(SIGSEGV\) at line 1, column \d+ \(`__global__ void k"):
        trace(source, "k", 1, 32, [np.zeros(32, np.float32)])


def test_an_endless_loop_hits_the_time_limit():
    source = "__global__ void k(volatile float* y) { while (y[0] == 0.0f) {} }"
    with pytest.raises(LabError, match="time limit of 2 s"):
        trace(source, "k", 1, 32, [np.zeros(32, np.float32)], timeout=2)


def test_threads_waiting_at_different_barriers_are_a_deadlock_not_a_hang():
    """Lane 0 waits at __syncthreads() while lanes 1 to 31 wait at a shuffle: on a GPU a hang;
    here the round in which no thread moves is reported at once."""
    source = ("__global__ void k(float* x) {\n    float v = x[threadIdx.x];\n    if (threadIdx.x == 0) __syncthreads();\n"
              "    else v = __shfl_sync(0xffffffff, v, 1);\n    x[threadIdx.x] = v;\n}")
    with pytest.raises(LabError, match=r"k never finishes: a __syncthreads\(\) that not every thread.*\ndeadlock: the "
                                       r"threads of block \(0, 0, 0\) wait at different barriers"):
        trace(source, "k", 1, 32, [np.zeros(32, np.float32)], timeout=20)


def test_an_out_of_bounds_write_names_the_line_thread_and_array():
    source = "__global__ void k(const float* x, float* y) {\n    int i = threadIdx.x;\n    y[i] = x[i];\n}"
    with pytest.raises(LabError, match=r"writes out of bounds at line 3") as err:
        trace(source, "k", 1, 40, [np.zeros(40, np.float32), np.zeros(32, np.float32)])
    # Threads 32 to 39 each write past y; whichever the CPU ran first is named, with its byte.
    thread, byte = map(int, re.search(r"thread \((\d+), 0, 0\).*byte (\d+) of y", str(err.value)).groups())
    assert 32 <= thread < 40 and byte == 4 * thread and "8 such accesses" in str(err.value)


def test_trace_refuses_bad_input():
    x = np.zeros(32, np.float32)
    with pytest.raises(ValueError, match="args must hold one value per parameter"):
        trace(HAND, "copy", 1, 32, [x, x])
    with pytest.raises(TypeError, match="x .* must be a C-contiguous NumPy array of float32"):
        trace(HAND, "copy", 1, 32, [x.astype(np.float64), x, 1])
    with pytest.raises(ValueError, match="block must hold at most 1024 threads"):
        trace(HAND, "copy", 1, (64, 32), [x, x, 1])
    with pytest.raises(ValueError, match="kernel must name a kernel"):
        trace(HAND, "nothing", 1, 32, [x, x, 1])


def test_chapter_2s_lab_scores_the_starter_and_the_solution():
    from gpumodel.course import intensity

    starter = intensity.check_coalesced_kernel(intensity.LAB_STARTER)
    line = starter_line(intensity.LAB_STARTER, "2.0f * x[")
    assert not starter and f"sectors per load request where 4.00 would do (line {line})" in starter.message
    solution = intensity.LAB_STARTER.replace("y[t * per + k] = 2.0f * x[t * per + k]",
                                             "y[k * (n / per) + t] = 2.0f * x[k * (n / per) + t]")
    assert intensity.check_coalesced_kernel(solution)
    wrong = intensity.check_coalesced_kernel(solution.replace("2.0f", "3.0f"))
    assert not wrong and "y must be 2 x" in wrong.message
    assert "does not compile" in intensity.check_coalesced_kernel("__global__ void scale_by_two(").message


def test_memory_stays_bounded_a_phase_too_large_is_refused():
    source = """__global__ void k(const float* x, float* y) {
        float s = 0.0f;
        for (int j = 0; j < (1 << 19); ++j) s += x[j % 32];
        y[threadIdx.x] = s;
    }"""
    with pytest.raises(LabError, match="more than 8,388,608 accesses in one block between two __syncthreads"):
        trace(source, "k", 1, 32, [np.ones(32, np.float32), np.zeros(32, np.float32)])


def test_the_figure_has_a_pair_of_bars_per_access():
    x, y = np.arange(32 * 8, dtype=np.float32), np.zeros(32, np.float32)
    t = trace(HAND, "copy", 1, 32, [x, y, 8])
    fig = gm.course.plots.lab_sites(t)
    (ax,) = fig.axes
    widths = sorted(round(p.get_width(), 2) for p in ax.patches)
    assert widths == [4, 4, 4, 32] and [tick.get_text() for tick in ax.get_yticklabels()] == [
        "line 4:\nglobal load 32-bit", "line 4:\nglobal store 32-bit"]


def chapter_solution(chapter: str, label: str, **names) -> str:
    """The kernel source `solution` that the code cell in `label`'s solution dropdown of
    `chapter` defines (the cell's last line, the checker's call, left out)."""
    text = (pathlib.Path(__file__).parents[1] / "chapters" / f"{chapter}.md").read_text()
    start = text.index(f"````{{solution-start}} {label}")
    cell = text[start:text.index("````{solution-end}", start)].split("```{code-cell} ipython3\n")[1].split("\n```")[0]
    namespace = {"gm": gm, **names}
    exec(cell.rsplit("\n", 1)[0], namespace)
    return namespace["solution"]


def test_chapter_2s_fusion_lab_scores_the_starter_and_the_solution():
    from gpumodel.course import intensity

    starter = intensity.check_fused_chain(intensity.CHAIN_STARTER)
    assert not starter and "B through L2 where 4,096 B would do" in starter.message
    solution = chapter_solution("02_intensity", "ex-intensity-lab-fuse")
    assert intensity.check_fused_chain(solution)
    wrong = intensity.check_fused_chain(solution.replace("* s + b", "* s - b"))
    assert not wrong and "y must be relu(x) * s + b" in wrong.message


def test_chapter_3s_lab_wants_a_transpose_without_bank_conflicts():
    from gpumodel.course import tiling

    starter = tiling.check_conflict_free_transpose(tiling.LAB_STARTER)
    line = starter_line(tiling.LAB_STARTER, "= tile[threadIdx.x]")
    assert not starter and f"where 256 would do, 3,968 of them bank conflicts (worst: line {line})" in starter.message
    solution = chapter_solution("03_tiling", "ex-tiling-lab-banks", lab=tiling)
    assert solution != tiling.LAB_STARTER and tiling.check_conflict_free_transpose(solution)
    copy = solution.replace("tile[threadIdx.x][threadIdx.y + j]", "tile[threadIdx.y + j][threadIdx.x]")
    wrong = tiling.check_conflict_free_transpose(copy)  # conflict-free, but a copy
    assert not wrong and "out must be the transpose of in" in wrong.message
    assert "does not compile" in tiling.check_conflict_free_transpose("__global__ void transpose(").message


def test_chapter_4s_lab_wants_a_thread_tile_that_shared_memory_does_not_bind():
    from gpumodel.course import roofline_levels as lab

    m, n, k = lab.LAB_M, lab.LAB_N, lab.LAB_K
    a100 = gm.gpu(lab.LAB_GPU)
    # One result per thread: per warp, two conflict-free shared loads per step of k and two shared
    # stores per 16-wide tile; on the same L1 path, two global loads per tile and one store of C,
    # each a single 128 B wavefront (a warp spans two rows of 16 floats: four sectors).
    warps = m * n // 32
    wavefronts = 2 * k + 2 * k // 16 + 2 * k // 16 + 1
    smem, math = 128 * warps * wavefronts / a100.bandwidth("smem"), 2 * m * n * k / a100.peak("fp32")
    assert smem > math
    starter = lab.check_thread_tile_gemm(lab.LAB_STARTER)
    assert not starter and f"L1/shared-memory path needs {gm.fmt_time(smem)} where the FP32 math needs {gm.fmt_time(math)}: " \
        "shared memory binds" in starter.message
    assert f"feeds 0.5 FMAs (most wavefronts: line {starter_line(lab.LAB_STARTER, '+= As[')})" in starter.message
    solution = chapter_solution("04_roofline_levels", "ex-levels-lab-thread-tile", lab=lab)
    launch = dict(grid=(n // 64, m // 64), block=(8, 8))
    right = lab.check_thread_tile_gemm(solution, **launch)
    assert right and "feeds 4 FMAs" in right.message and "bound by compute" in right.message
    for verdict, source, how in ((starter, lab.LAB_STARTER, {}), (right, solution, launch)):  # the bound, then what to expect
        traced = trace(source, "gemm", how.get("grid", lab.LAB_GRID), how.get("block", lab.LAB_BLOCK),
                              [np.zeros((m, k), np.float32), np.zeros((k, n), np.float32), np.zeros((m, n), np.float32), m, n, k])
        e = gm.expect(traced, a100, flops=2 * m * n * k)
        assert e.time >= gm.predict(traced.workload(2 * m * n * k), a100).time
        assert f"\n- Expected (what a kernel like this gets): {gm.fmt_time(e.time)}, held by {e.limiter}: {e.reason}." \
            in verdict.message
    wrong = lab.check_thread_tile_gemm(solution.replace("a[i] * b[j]", "a[i] * b[i]"), **launch)
    assert not wrong and "C must be A B" in wrong.message and "path needs" not in wrong.message
    naive = lab.check_thread_tile_gemm("""__global__ void gemm(const float* A, const float* B, float* C, int M, int N, int K) {
        int row = blockIdx.y * blockDim.y + threadIdx.y, col = blockIdx.x * blockDim.x + threadIdx.x;
        float acc = 0.0f;
        for (int k = 0; k < K; ++k) acc += A[row * K + k] * B[k * N + col];
        C[row * N + col] = acc;
    }""")
    assert not naive and "No shared-memory access was traced" in naive.message


def test_chapter_4s_lab_says_when_the_expected_time_got_worse_than_the_starters():
    """The lab scores the bound; a kernel that meets it in one block (one SM) is told in one sentence
    that its expected time is longer than the starter's, and why."""
    from gpumodel.course import roofline_levels as lab

    m, n, k = lab.LAB_M, lab.LAB_N, lab.LAB_K
    args = [np.zeros((m, k), np.float32), np.zeros((k, n), np.float32), np.zeros((m, n), np.float32), m, n, k]
    solution = chapter_solution("04_roofline_levels", "ex-levels-lab-thread-tile", lab=lab)
    launch = dict(grid=(n // 64, m // 64), block=(8, 8))  # one 64 x 64 tile of C: one block
    mine = gm.expect(trace(solution, "gemm", launch["grid"], launch["block"], args), lab.LAB_GPU, flops=lab.LAB_FLOPS)
    theirs = gm.expect(trace(lab.LAB_STARTER, "gemm", lab.LAB_GRID, lab.LAB_BLOCK, args), lab.LAB_GPU,
                       flops=lab.LAB_FLOPS)
    assert mine.time > theirs.time
    right = lab.check_thread_tile_gemm(solution, **launch)
    assert right and (f" The lab scores the bound, and that is met, but the expected time got worse: "
                      f"{gm.fmt_time(mine.time)} against the starter's {gm.fmt_time(theirs.time)}, because its one "
                      f"block runs on one SM, where the starter's 16 ran on 16.") in right.message
    assert "got worse" not in lab.check_thread_tile_gemm(lab.LAB_STARTER).message  # the starter fails on the bound


def test_chapter_5s_lab_keeps_the_scores_out_of_hbm():
    from gpumodel.course import flashattention as flash

    starter = flash.check_flash_kernel(flash.LAB_STARTER)
    assert not starter and "32.8 kB from HBM where the compulsory 16.4 kB would do" in starter.message
    solution = chapter_solution("05_flashattention", "ex-flash-lab-block-loop")
    assert "S[" not in solution and flash.check_flash_kernel(solution)
    wrong = flash.check_flash_kernel(solution.replace("acc[k] / sum", "acc[k]"))
    assert not wrong and "O must be softmax(Q Kᵀ scale) V" in wrong.message
    short = flash.check_flash_kernel(solution.replace(", float* S, int n", ", int n"))
    assert not short and "args must hold one value per parameter" in short.message


def test_no_gxx_is_a_clear_message(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))  # an empty folder: no g++
    with pytest.raises(LabError, match=r"needs g\+\+ \(C\+\+20\) on the machine, and there is none here"):
        trace(HAND, "copy", 1, 32, [np.zeros(32, np.float32), np.zeros(32, np.float32), 1])


# The same kernel on a GPU (the strict CuPy stand-in), beside the model.

INPLACE = r"""
__global__ void twice(float* x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = 2.0f * x[i];
}
"""


@pytest.fixture
def stand_in(monkeypatch, tmp_path):
    import sys

    from gpumodel.cuda import runtime

    sys.path.insert(0, str(pathlib.Path(__file__).parent))
    import fake_cupy

    cupy = fake_cupy.make(tmp_path)
    monkeypatch.setitem(sys.modules, "cupy", cupy)
    monkeypatch.setitem(sys.modules, "pynvml", None)
    monkeypatch.setattr(runtime, "_status", (True, "CPU stand-in"))
    return cupy


def test_without_a_gpu_the_run_says_nothing_was_measured(monkeypatch):
    from gpumodel.cuda import runtime

    monkeypatch.setattr(runtime, "_status", (False, "CuPy is not installed"))
    x = np.arange(100, dtype=np.float32)
    done = gm.lab.run(INPLACE, "twice", 2, 64, [x, 100], flops=100)
    assert done.measured is None
    assert np.array_equal(x, 2 * np.arange(100))
    assert "No GPU answers here (CuPy is not installed)" in done.report(["A100-40GB"])
    assert "measured /" not in done.report(["A100-40GB"])


def test_on_a_gpu_the_kernel_runs_on_the_inputs_and_is_timed_beside_the_model(stand_in):
    from gpumodel.cuda.runtime import live_gpu

    x = np.arange(100, dtype=np.float32)
    done = gm.lab.run(INPLACE, "twice", 2, 64, [x, 100], flops=100, repeats=3)
    m = done.measured
    assert m.matches and m.max_abs_error == 0  # the GPU doubled the inputs, not the CPU's result
    assert np.array_equal(x, 2 * np.arange(100))
    assert m.timing.samples == 3 and m.timing.median_s > 0
    want = gm.predict(done.trace.workload(100), live_gpu())
    assert m.predicted_s == pytest.approx(float(want.time)) and m.bound == str(want.bound)
    text = done.report(["A100-40GB"])
    assert f"on {live_gpu().name}:" in text and "equal the CPU run's" in text
    assert f"measured / model = {m.timing.median_s / m.predicted_s:.2f}" in text


def test_a_sampled_trace_computes_every_block_and_is_compared_with_the_gpu(stand_in):
    x = np.arange(4096, dtype=np.float32)
    part = trace(INPLACE, "twice", 64, 64, [x.copy(), 4096], max_threads=256)
    assert part.sampled and part.blocks_traced == 4
    np.testing.assert_array_equal(part.arrays[0], 2 * x)  # the untraced blocks ran too
    sampled = gm.lab.measure._on_gpu(INPLACE, "twice", part, [x, 4096], 0.0, 1)
    assert sampled.max_abs_error == 0 and sampled.matches
    assert "equal the CPU run's" in gm.lab.LabRun(part, sampled, "").report(["A100-40GB"])


def test_a_fault_on_the_gpu_is_a_lab_error_that_says_restart(stand_in):
    stand_in._fake.faults.add("twice")
    with pytest.raises(LabError, match="twice failed on the GPU .*illegal.*restart"):
        gm.lab.run(INPLACE, "twice", 2, 64, [np.ones(100, np.float32), 100], repeats=1)


def test_the_stand_in_finds_a_cxx_kernel_only_by_its_name_expression(stand_in):
    with pytest.raises(RuntimeError, match="CUDA_ERROR_NOT_FOUND"):
        stand_in.RawModule(code=INPLACE).get_function("twice")
    assert stand_in.RawModule(code=INPLACE, name_expressions=["twice"]).get_function("twice").name == "twice"


@pytest.mark.slow
def test_the_build_folder_keeps_only_the_most_recently_used_executables(monkeypatch, tmp_path):
    from gpumodel.lab import builder

    monkeypatch.setenv("GPUMODEL_CACHE", str(tmp_path))
    monkeypatch.setattr(builder, "CACHE_KEEP", 2)
    sources = [INPLACE.replace("2.0f", f"{k}.0f") for k in (2, 3, 4)]
    first, second = builder.build(sources[0]), builder.build(sources[1])
    assert first.parent == tmp_path / "lab"
    time.sleep(0.01)
    assert builder.build(sources[0]) == first  # reused: now the most recent
    third = builder.build(sources[2])
    assert first.exists() and third.exists() and not second.exists()
    assert len(list(first.parent.glob("trace-*.sha256"))) == 2 and len(list(first.parent.glob("runtime-*"))) == 2


@pytest.mark.parametrize("bad, message", [({"flops": -1}, "flops"), ({"flops": "many"}, "flops"),
                                          ({"repeats": 0}, "repeats")])
def test_run_refuses_bad_input_before_tracing(bad, message):
    with pytest.raises((ValueError, TypeError), match=message):
        gm.lab.run(INPLACE, "twice", 1, 32, [np.ones(32, np.float32), 32], **bad)


def test_shuffles_run_alike_traced_and_on_the_stand_ins_gpu(stand_in):
    """The plain emulator behind the CuPy stand-in shares the traced build's shuffles (one
    definition in cuda_emu.h): the GPU run's arrays equal the traced run's."""
    x, total, moved = np.arange(64, dtype=np.float32), np.zeros(64, np.float32), np.zeros(64, np.float32)
    done = gm.lab.run(SHUFFLES, "shuffles", 1, 64, [x, total, moved], repeats=1)
    assert done.measured.matches and done.measured.max_abs_error == 0
    assert total[0] == x[:32].sum()


def test_the_lab_knows_the_common_intrinsics_and_the_upward_shuffle():
    source = r"""
__global__ void fast(const float* x, float* y) {
    int t = threadIdx.x;
    float v = __ldg(&x[t]);
    y[t] = __expf(__logf(v)) + __fdividef(v, 2.0f) * rsqrtf(v * v) + __shfl_up_sync(0xffffffff, v, 1);
}
"""
    x, y = np.arange(1, 33, dtype=np.float32), np.zeros(32, np.float32)
    t = trace(source, "fast", 1, 32, [x, y])
    up = np.concatenate([x[:1], x[:-1]])  # lane 0 keeps its own value
    np.testing.assert_allclose(y, x + 0.5 + up, rtol=1e-5)
    assert site(t, "global", False).line == 4 and site(t, "global", False).sectors == 4  # __ldg is a load


def test_a_link_error_keeps_its_reason():
    source = "float mystery(float);\n__global__ void k(float* y) { y[threadIdx.x] = mystery(1.0f); }\n"
    with pytest.raises(LabError, match="undefined reference to `mystery"):
        trace(source, "k", 1, 32, [np.zeros(32, np.float32)])


def test_elements_left_unwritten_get_a_hint_about_the_launch():
    half = r"""__global__ void scale_by_two(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    y[i] = 2.0f * x[i];
}"""
    feedback = gm.course.intensity.check_coalesced_kernel(half)  # 512 threads for 16,384 floats
    assert not feedback and "as if never written: do grid x block threads cover every element?" in feedback.message
    wrong = gm.course.intensity.check_coalesced_kernel(gm.course.intensity.LAB_STARTER.replace("= 2.0f", "= 3.0f"))
    assert not wrong and "never written" not in wrong.message


# Vector accesses: one access of their width, as the GPU's ld.global.v2/v4 (ARCHITECTURE.md, "The
# kernel lab"). CUDA's float2, int2, int4 and double2 in kernels of our own (the lab's header
# defines float4).
VECTORS = r"""
struct alignas(8) f2 { float x, y; };
struct alignas(8) i2 { int x, y; };
struct alignas(16) i4 { int x, y, z, w; };
struct alignas(16) d2 { double x, y; };
__global__ void float4_cast(const float* x, float* y) {
    int t = threadIdx.x;
    float4 v = *reinterpret_cast<const float4*>(x + 4 * t);
    v.x += 1.0f;
    *reinterpret_cast<float4*>(y + 4 * t) = v;
}
__global__ void float4_typed(const float4* x, float4* y) {
    int t = threadIdx.x;
    y[t] = x[t];
}
__global__ void float2_cast(const float* x, float* y) {
    int t = threadIdx.x;
    f2 v = reinterpret_cast<const f2*>(x)[t];
    v.y *= 2.0f;
    reinterpret_cast<f2*>(y)[t] = v;
}
__global__ void int2_cast(const int* x, int* y) {
    int t = threadIdx.x;
    i2 v = reinterpret_cast<const i2*>(x)[t];
    int first = v.x;
    v.x = v.y;
    v.y = first;
    reinterpret_cast<i2*>(y)[t] = v;
}
__global__ void int4_cast(const int* x, int* y) {
    int t = threadIdx.x;
    i4 v = reinterpret_cast<const i4*>(x)[t];
    y[t] = v.x + v.y + v.z + v.w;
}
__global__ void double2_cast(const double* x, double* y) {
    int t = threadIdx.x;
    d2 v = reinterpret_cast<const d2*>(x)[t];
    v.y = v.x * v.y;
    reinterpret_cast<d2*>(y)[t] = v;
}
__global__ void float4_built(const float* x, float4* y) {
    int t = threadIdx.x;
    y[t] = float4{x[t], 2.0f * x[t], 0.0f, 1.0f};
}
"""


@pytest.mark.parametrize("kernel, dtype, load, store", [
    ("float4_cast", np.float32, 16, 16), ("float4_typed", np.float32, 16, 16), ("float2_cast", np.float32, 8, 8),
    ("int2_cast", np.int32, 8, 8), ("int4_cast", np.int32, 16, 4), ("double2_cast", np.float64, 16, 16),
    ("float4_built", np.float32, 4, 16)])
def test_a_vector_access_is_one_access_of_its_width(kernel, dtype, load, store):
    """A warp of 32 lanes, each one vector of `load` bytes: ONE request of 32 x load / 32 sectors
    (not load / 4 requests of 4 bytes); the store likewise (int4_cast stores one int; float4_built
    loads one float and stores a float4 built of four values)."""
    x = np.arange(32 * load // np.dtype(dtype).itemsize, dtype=dtype)
    y = np.zeros(32 * store // np.dtype(dtype).itemsize, dtype)
    t = trace(VECTORS, kernel, 1, 32, [x, y])
    for write, width in ((False, load), (True, store)):
        s = site(t, "global", write)
        assert (s.size, s.instructions, s.lanes, s.sectors, s.ideal_sectors) == (width, 1, 32, width, width)
    assert t.bytes["l1"] == 32 * (load + store)
    lanes = x.reshape(32, -1)
    want = {"float4_cast": lambda: lanes + [1, 0, 0, 0], "float4_typed": lambda: lanes,
            "float2_cast": lambda: lanes * [1, 2], "int2_cast": lambda: lanes[:, ::-1],
            "int4_cast": lambda: lanes.sum(axis=1), "double2_cast": lambda: np.stack([lanes[:, 0], lanes[:, 0] * lanes[:, 1]], axis=1),
            "float4_built": lambda: np.stack([x, 2 * x, 0 * x, x ** 0], axis=1)}[kernel]()
    np.testing.assert_array_equal(y, want.ravel())


# An SGEMM-style tile (after the public ladders' "vectorised" kernel, written here): a block of 64
# threads computes a 32 x 32 tile of C, 4 x 4 per thread, K in steps of 8; each thread loads one
# float4 of A (stored transposed, four floats) and one of B (stored whole) per step, reads float4s
# of both tiles and stores its rows of C as float4s.
VTILE = r"""
__global__ void vtile(const float* A, const float* B, float* C, int N) {
    __shared__ float As[8 * 32];  // As[k][m]: A's tile transposed
    __shared__ float Bs[8 * 32];  // Bs[k][n]
    int t = threadIdx.x, tm = t / 8, tn = t % 8;
    const float* a = A + blockIdx.y * 32 * N;
    const float* b = B + blockIdx.x * 32;
    float acc[4][4] = {};
    for (int k0 = 0; k0 < N; k0 += 8) {
        float4 va = *reinterpret_cast<const float4*>(&a[(t / 2) * N + k0 + (t % 2) * 4]);
        As[((t % 2) * 4 + 0) * 32 + t / 2] = va.x;
        As[((t % 2) * 4 + 1) * 32 + t / 2] = va.y;
        As[((t % 2) * 4 + 2) * 32 + t / 2] = va.z;
        As[((t % 2) * 4 + 3) * 32 + t / 2] = va.w;
        *reinterpret_cast<float4*>(&Bs[(t / 8) * 32 + (t % 8) * 4]) =
            *reinterpret_cast<const float4*>(&b[(k0 + t / 8) * N + (t % 8) * 4]);
        __syncthreads();
        for (int k = 0; k < 8; ++k) {
            float4 x = *reinterpret_cast<const float4*>(&As[k * 32 + tm * 4]);
            float4 y = *reinterpret_cast<const float4*>(&Bs[k * 32 + tn * 4]);
            float xs[4] = {x.x, x.y, x.z, x.w}, ys[4] = {y.x, y.y, y.z, y.w};
            for (int i = 0; i < 4; ++i)
                for (int j = 0; j < 4; ++j) acc[i][j] += xs[i] * ys[j];
        }
        __syncthreads();
    }
    for (int i = 0; i < 4; ++i)
        *reinterpret_cast<float4*>(&C[(blockIdx.y * 32 + tm * 4 + i) * N + blockIdx.x * 32 + tn * 4]) =
            float4{acc[i][0], acc[i][1], acc[i][2], acc[i][3]};
}
"""


def test_a_float4_tile_gemm_counts_each_vector_once():
    """N = 64, a 2 x 2 grid of 64-thread blocks, 8 steps of K. Per warp (32 lanes) and step: the A
    load covers 16 rows x 32 B = 16 sectors, the B load 4 rows x 128 B = 16 sectors: per block
    2 warps x 8 steps x 32 = 512 sectors; C's stores 2 warps x 4 rows of float4 x 16 sectors =
    128. L1 = 4 blocks x 640 x 32 B (split into 32-bit loads it was 4x: 327,680 B). L2: each
    block loads its A strip (32 x 64 floats = 256 sectors) and B strip (256) once and stores 128
    sectors: 640 per block, the same 81,920 B (split: 131,072 B, each stored sector 4x). HBM:
    A, B and C once, 3 x 16 kB. Shared memory per warp and step: the four transposed A stores 2
    wavefronts each (lanes 2m and 2m+1 hit bank m in rows 4 apart), the B float4 store 4 (128
    words), then per k a float4 of A (16 distinct words, lanes paired: 2) and of B (32 words: 4):
    8 + 4 + 8 x 6 = 60, x 2 warps x 8 steps x 4 blocks = 3,840 wavefronts of 128 B."""
    n = 64
    rng = np.random.default_rng(6)
    a, b = rng.standard_normal((n, n), dtype=np.float32), rng.standard_normal((n, n), dtype=np.float32)
    c = np.zeros((n, n), np.float32)
    t = trace(VTILE, "vtile", (2, 2), 64, [a, b, c, n])
    np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4)
    loads = [s for s in t.sites if s.space == "global" and not s.write]
    assert sorted((s.size, s.instructions, s.sectors) for s in loads) == [(16, 64, 1024), (16, 64, 1024)]
    assert t.bytes == {"smem": 128 * 3840, "l1": 32 * 2560, "l2": 32 * 2560, "hbm": 3 * n * n * 4,
                       "hbm_no_reuse": 32 * 2560}
    assert not t.races


NAIVE_GEMM = r"""
__global__ void naive(const float* A, const float* B, float* C, int N) {
    int row = blockIdx.y * blockDim.y + threadIdx.y, col = blockIdx.x * blockDim.x + threadIdx.x;
    float acc = 0.0f;
    for (int k = 0; k < N; ++k) acc += A[row * N + k] * B[k * N + col];
    C[row * N + col] = acc;
}
"""


def test_a_sampled_launchs_hbm_is_the_launchs_footprint_not_the_samples_scaled():
    """N = 128, 16 x 16 threads a block, an 8 x 8 grid: 16 of 64 blocks traced (linear ids 0, 4,
    8, 13, 17, 21, 25, 29, 34, 38, 42, 46, 50, 55, 59, 63). Each row of blocks holds two traced
    blocks, so each strip of A is touched by several: counted once (A's 2,048 sectors); B's
    column strips 3 and 4 are touched by one traced block each, scaled 4x, and B is capped at its
    2,048 sectors; each block's C tile (32 sectors) is its own: 16 x 32 x 4 = 2,048. So 6,144
    sectors, 3 x 64 kB: the compulsory bytes (the sample's union scaled up, as before, was 3x)."""
    n = 128
    a, b = np.ones((n, n), np.float32), np.ones((n, n), np.float32)
    t = trace(NAIVE_GEMM, "naive", (8, 8), (16, 16), [a, b, np.zeros((n, n), np.float32), n], max_threads=16 * 256)
    assert (t.blocks_traced, t.scale) == (16, 4)
    assert t.footprint == [(2048, 0, 2048), (6 * 256, 2 * 256, 2048), (0, 16 * 32, 2048)]
    assert t.bytes["hbm"] == 3 * n * n * 4 == 196_608
    assert "hbm is an estimate from the sample's footprint" in t.report(gpus=["H100-SXM"])


TWO_ON_A_LINE = r"""
__global__ void pair(const float* x, float* y) {
    int t = threadIdx.x;
    y[t] = x[t] + x[t * 8];
}
"""


def test_two_accesses_on_one_line_are_two_sites_told_apart_by_column():
    """Line 4 loads x[t] (4 sectors, coalesced) and x[t * 8] (32 B apart: 32 sectors): two rows
    of the report, each with its column, and the worst names the strided one."""
    x, y = np.arange(256, dtype=np.float32), np.zeros(32, np.float32)
    t = trace(TWO_ON_A_LINE, "pair", 1, 32, [x, y])
    loads = sorted((s for s in t.sites if not s.write), key=lambda s: s.column)
    assert [(s.line, s.sectors) for s in loads] == [(4, 4), (4, 32)] and 0 < loads[0].column < loads[1].column
    row = TWO_ON_A_LINE.splitlines()[4 - 1]
    assert row.index("x[t]") < row.index("x[t * 8]") and loads[0].text == row.strip()
    text = t.report(gpus=["H100-SXM"])
    for s in loads:
        assert f"line 4, column {s.column}:" in text
    assert f"worst: line 4, column {loads[1].column} (global load 32-bit): {row.strip()}" in text
    np.testing.assert_array_equal(y, x[:32] + x[::8])


# Races and uninitialized reads (compute-sanitizer's racecheck and initcheck), in a softmax of
# our own: one block per row of 64, two warps; the block's max and then its sum pass through
# partial[0]. The racy twin leaves out the barrier that keeps warp 0 from overwriting
# partial[0] (the max) with its sum before warp 1 has read the max.
SOFTMAX = r"""
__global__ void softmax_rows(const float* x, float* y, int n) {
    __shared__ float partial[32];
    int row = blockIdx.x, t = threadIdx.x, lane = t % 32, warp = t / 32;
    float v = x[row * n + t];
    float m = v;
    for (int o = 16; o > 0; o /= 2) m = fmaxf(m, __shfl_xor_sync(0xffffffff, m, o));
    if (lane == 0) partial[warp] = m;
    __syncthreads();
    if (t == 0) {
        for (int w = 1; w < blockDim.x / 32; ++w) partial[0] = fmaxf(partial[0], partial[w]);
    }
    __syncthreads();
    float e = expf(v - partial[0]);
    float s = e;
    for (int o = 16; o > 0; o /= 2) s += __shfl_xor_sync(0xffffffff, s, o);
    __syncthreads();  // every warp has read the max
    if (lane == 0) partial[warp] = s;
    __syncthreads();
    if (t == 0) {
        for (int w = 1; w < blockDim.x / 32; ++w) partial[0] += partial[w];
    }
    __syncthreads();
    y[row * n + t] = e / partial[0];
}
"""
RACY_SOFTMAX = SOFTMAX.replace("    __syncthreads();  // every warp has read the max\n", "")


def test_a_missing_barrier_is_a_race_named_with_both_lines_threads_and_hazard():
    """The CPU runs the threads in turns, 0 to 63, each until it waits: every thread reads the max
    (line `expf`) and waits at its warp's first shuffle (the last to reach a barrier goes on in
    the same turn); in later turns warp 0's lanes shuffle (a warp-level sync: their own reads are
    ordered before their lane 0's write) and lane 0 writes its sum over partial[0], which threads
    of warp 1 have read in this phase: one write-after-read hazard per block, 4 in all. On a GPU warp 0 may as well get there first, and
    warp 1 read the sum as its max."""
    x, y = np.linspace(-3, 3, 4 * 64, dtype=np.float32).reshape(4, 64), np.zeros((4, 64), np.float32)
    t = trace(RACY_SOFTMAX, "softmax_rows", 4, 64, [x, y, 64])
    write, read = starter_line(RACY_SOFTMAX, "partial[warp] = s"), starter_line(RACY_SOFTMAX, "expf(v - partial[0])")
    (race,) = t.races
    assert race.hazard == "write-after-read" and (race.first[0], race.second[0]) == (read, write)
    assert race.threads[1] == (0, 0, 0) and 32 <= race.threads[0][0] < 64  # thread 0 after a thread of warp 1
    assert race.block == (0, 0, 0) and race.count == 4
    assert race.second[2] == "if (lane == 0) partial[warp] = s;" and race.first[2] == "float e = expf(v - partial[0]);"
    message = race.message
    assert f"between line {read} and line {write}" in message and "write-after-read race" in message
    assert "RACE write-after-read" in t.report(gpus=["H100-SXM"])
    # The fixed twin: clean, and right.
    fixed = trace(SOFTMAX, "softmax_rows", 4, 64, [x, y, 64])
    assert fixed.races == []
    e = np.exp(x - x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(y, e / e.sum(axis=1, keepdims=True), rtol=1e-5)


SHARED_HAZARDS = r"""
__global__ void one_word(float* y) {
    __shared__ float s[1];
    s[0] = threadIdx.x;
    __syncthreads();
    y[threadIdx.x] = s[0];
}
__global__ void unwritten(const float* x, float* y) {
    __shared__ float s[64];
    s[threadIdx.x] = x[threadIdx.x];
    __syncthreads();
    y[threadIdx.x] = s[threadIdx.x] + s[threadIdx.x % 32 + 32];
}
"""


def test_lanes_of_one_warp_instruction_do_not_race_other_warps_do():
    """All lanes store s[0] in one instruction: on a GPU one lane's value lands, no hazard
    (racecheck's rule); a second warp storing the same word before the barrier is a
    write-after-write race: thread 31's store, then thread 32's (warp 1's other lanes follow
    thread 32 in the same instruction: one hazard)."""
    y = np.zeros(64, np.float32)
    assert trace(SHARED_HAZARDS, "one_word", 1, 32, [y[:32].copy()]).races == []
    (race,) = trace(SHARED_HAZARDS, "one_word", 1, 64, [y]).races
    assert (race.hazard, race.first[0], race.second[0], race.count) == ("write-after-write", 4, 4, 1)
    assert race.threads == ((31, 0, 0), (32, 0, 0)) and "one pass of line 4 and the next" in race.message


def test_a_read_of_shared_memory_no_thread_wrote_is_an_uninitialized_read():
    """A block of 32 writes s[0..31] and reads s[t % 32 + 32]: 32 words read, never written; a
    block of 64 writes them all."""
    x, y = np.arange(32, dtype=np.float32), np.zeros(32, np.float32)
    t = trace(SHARED_HAZARDS, "unwritten", 1, 32, [x, y])
    (race,) = t.races
    assert (race.hazard, race.first[0], race.threads[0], race.count) == ("uninitialized read", 12, (0, 0, 0), 32)
    assert "INITCHECK uninitialized read of shared memory: thread (0, 0, 0)" in t.report(gpus=["H100-SXM"])
    assert trace(SHARED_HAZARDS, "unwritten", 1, 64, [np.arange(64, dtype=np.float32), np.zeros(64, np.float32)]) \
        .races == []


def test_a_checker_does_not_score_a_racy_kernel():
    from gpumodel.course.checks import lab_run

    x = np.linspace(-3, 3, 4 * 64, dtype=np.float32).reshape(4, 64)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    args = [x, np.zeros_like(x), 64]
    feedback = lab_run(RACY_SOFTMAX, "softmax_rows", 4, 64, args, 1, e / e.sum(axis=1, keepdims=True), "softmax")
    read, write = starter_line(RACY_SOFTMAX, "expf(v - partial[0])"), starter_line(RACY_SOFTMAX, "partial[warp] = s")
    assert not feedback and feedback.message.startswith("Not scored: the kernel's result depends on which thread")
    assert f"Missing: a __syncthreads() between line {read} and line {write}" in feedback.message


UNIFORM = r"""
__global__ void uniform(const float4* x, float4* y) {
    y[threadIdx.x] = x[0];
}
"""


def test_a_warp_uniform_float4_takes_two_wavefronts_on_the_l1_path_as_from_shared_memory():
    """One sector, but 32 lanes x 4 registers come back, two to a slot (`gm.simulate.wavefronts`
    of a warp-uniform LDS.128): 256 B; the coalesced float4 store, 16 sectors: 512 B."""
    x, y = np.arange(4, dtype=np.float32), np.zeros(128, np.float32)
    t = trace(UNIFORM, "uniform", 1, 32, [x, y])
    load = next(s for s in t.sites if not s.write)
    assert load.sectors == 1 and gm.simulate.wavefronts(np.zeros((32, 4), int)) == 2
    assert t.l1_path_bytes == 128 * 2 + 512
    np.testing.assert_array_equal(y, np.tile(x, 32))


def test_the_report_prints_the_bound_and_the_expected_time_per_gpu():
    x, y = np.zeros(32 * 64, np.float32), np.zeros(32, np.float32)
    t = trace(HAND, "copy", 1, 32, [x, y, 8])
    text = t.report(gpus=["A100-40GB", "H100-SXM"])
    for gpu in ("A100-40GB", "H100-SXM"):
        p, e = gm.predict(t.workload(), gpu), gm.expect(t, gpu)
        line = next(row for row in text.splitlines() if row.strip().startswith(gpu))
        assert f"{float(p.time) * 1e6:.2f} us at best, bound by {p.bound}" in line
        assert f"expected {e.time * 1e6:10.2f} us, held by {e.limiter}" in line and e.time > p.time



def test_a_report_says_why_the_expected_time_is_far_from_the_bound_only_where_it_is():
    x, y = np.zeros(32 * 64, np.float32), np.zeros(32, np.float32)
    t = trace(HAND, "copy", 1, 32, [x, y, 8])
    e = gm.expect(t, "H100-SXM")
    ratio = e.time / float(gm.predict(t.workload(), "H100-SXM").time)
    (line,) = [row for row in t.report(gpus=["H100-SXM"]).splitlines() if row.startswith("why so far apart")]
    assert ratio > 3 and f"{ratio:,.0f} times it" in line and e.reason in line
    assert reporter.far_apart((2.9, "H100-SXM", e)) == []


TWICE = """
__global__ void twice(const float* x, float* y) {
    float v = x[threadIdx.x] + x[threadIdx.x];
    y[threadIdx.x] = v;
    y[threadIdx.x] = 2 * v;
}
"""


def test_the_reports_legend_says_l2_counts_a_blocks_loads_once_and_every_store():
    x, y = np.ones(32, np.float32), np.zeros(32, np.float32)
    t = trace(TWICE, "twice", 1, 32, [x, y])
    assert t.bytes["l2"] == 128 + 2 * 128 and t.bytes["hbm"] == 2 * 128
    (legend,) = [row for row in t.report(gpus=["H100-SXM"]).splitlines() if row.startswith("bytes: ")]
    assert "l2: each sector a block loads once, every sector stored" in legend


INTRINSICS = r"""
__global__ void ops(const unsigned* a, const unsigned* b, const unsigned* s, unsigned* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    unsigned x = a[i], y = b[i], z = s[i];
    unsigned* o = out + 16 * i;
    o[0] = __brev(x); o[1] = __byte_perm(x, y, z); o[2] = __funnelshift_l(x, y, z); o[3] = __funnelshift_r(x, y, z);
    o[4] = __funnelshift_lc(x, y, z); o[5] = __funnelshift_rc(x, y, z); o[6] = __vadd2(x, y); o[7] = __vsubss4(x, y);
    o[8] = __vabsdiffu4(x, y); o[9] = __vaddus2(x, y); o[10] = __vabsdiffs2(x, y); o[11] = __sad((int)x, (int)y, z);
    o[12] = (unsigned)__hadd((int)x, (int)y); o[13] = __umul24(x, y); o[14] = __vavgu4(x, y); o[15] = __vmins4(x, y);
    __nanosleep(100);
}
"""


def _lanes(x, y, bits, signed, f):
    """A SIMD intrinsic by the CUDA Math API's words: lane by lane, each result wrapped to its lane."""
    out = 0
    for i in range(0, 32, bits):
        u, v = (x >> i) & ((1 << bits) - 1), (y >> i) & ((1 << bits) - 1)
        if signed:
            u, v = (w - (1 << bits) if w >> (bits - 1) else w for w in (u, v))
        out |= (f(u, v) & ((1 << bits) - 1)) << i
    return out


def _intrinsics(x, y, z):
    signed = lambda w: w - 2**32 if w >> 31 else w
    clamp = lambda v, lo, hi: max(lo, min(hi, v))
    both = (y << 32) | x
    return [int(f"{x:032b}"[::-1], 2),
            sum(((both >> 8 * ((z >> 4 * k) & 7)) & 0xFF) << 8 * k for k in range(4)),
            ((both << (z & 31)) >> 32) & 0xFFFFFFFF, (both >> (z & 31)) & 0xFFFFFFFF,
            ((both << min(z, 32)) >> 32) & 0xFFFFFFFF, (both >> min(z, 32)) & 0xFFFFFFFF,
            _lanes(x, y, 16, False, lambda u, v: u + v), _lanes(x, y, 8, True, lambda u, v: clamp(u - v, -128, 127)),
            _lanes(x, y, 8, False, lambda u, v: abs(u - v)), _lanes(x, y, 16, False, lambda u, v: clamp(u + v, 0, 65535)),
            _lanes(x, y, 16, True, lambda u, v: abs(u - v)),
            (z + abs(signed(x) - signed(y))) & 0xFFFFFFFF, ((signed(x) + signed(y)) >> 1) & 0xFFFFFFFF,
            ((x & 0xFFFFFF) * (y & 0xFFFFFF)) & 0xFFFFFFFF, _lanes(x, y, 8, False, lambda u, v: (u + v + 1) >> 1),
            _lanes(x, y, 8, True, min)]


def test_the_integer_and_simd_intrinsics_of_quantised_kernels_compute_as_cudas_math_api_says():
    """ggml's quantize_q8_1 needs __byte_perm and __vsubss4; others funnel shifts, __brev, the SIMD
    family: each against the Math API's definition, on random words and shifts past 32."""
    rng = np.random.default_rng(1)
    n = 256
    a, b = (rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32) for _ in range(2))
    s = rng.integers(0, 40, n).astype(np.uint32)
    s[:64] = rng.integers(0, 2**16, 64).astype(np.uint32)  # byte_perm's selectors
    out = np.zeros(16 * n, np.uint32)
    trace(INTRINSICS, "ops", 1, n, [a, b, s, out, n])
    want = np.array([_intrinsics(int(x), int(y), int(z)) for x, y, z in zip(a, b, s)], np.uint64).astype(np.uint32)
    np.testing.assert_array_equal(out.reshape(n, 16), want)
