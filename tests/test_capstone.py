"""Chapter 8's capstone: each task's budget is the model's count (derived here again from the
sizes, and from the workloads), each starter is correct but over its budget (the score names the
levels and the line), each solution of the chapter meets its budget, and bad input is refused."""

import math
import pathlib
import re

import numpy as np
import pytest

import gpumodel as gm
from gpumodel.course import capstone as cap
from gpumodel.lab import trace

ROOT = pathlib.Path(__file__).resolve().parents[1]
FLOAT = 4  # bytes


def test_row_wise_budgets_read_the_input_once_and_write_the_output_once():
    for name in ("softmax", "layernorm"):
        sizes = cap.TASKS[name].sizes
        once = 2.0 * FLOAT * sizes["rows"] * sizes["cols"]  # x read, y written
        assert cap.budget(name) == {"hbm": once, "l2": once, "l1": once, "smem": 0.0}
        args, out, _ = cap.TASKS[name].make()
        assert once == args[0].nbytes + args[out].nbytes


def test_the_gemm_budget_is_chapter_3s_tiled_gemm():
    n, b = cap.TASKS["gemm"].sizes["m"], gm.kernel_info.KERNELS[cap.GEMM_TILE].block[0]
    assert cap.TASKS["gemm"].sizes == {"m": n, "n": n, "k": n}
    blocks, warps = (n // b) ** 2, b * b // 32
    tiles = FLOAT * (n * n * (n // b) + n * n * (n // b))  # each block reads its rows of A and columns of B
    operands = 128 * 2 * warps * n * blocks  # per warp per step of k: a broadcast of A, a row of B, one wavefront each
    want = {"hbm": 3.0 * FLOAT * n * n, "l2": tiles + FLOAT * n * n, "l1": tiles + FLOAT * n * n,
            "smem": tiles + operands}
    assert cap.budget("gemm") == want
    w = gm.gemm(n, n, n, block=(b, b, b))
    assert want == {"hbm": w.bytes["hbm"], "l2": w.bytes["l2"], "l1": w.bytes["l2"], "smem": w.bytes["smem"]}


def test_the_attention_budget_is_flash_attentions_with_the_tasks_query_blocks():
    (n, d), br = cap.TASKS["attention"].sizes.values(), cap.TASKS["attention"].block[0]
    kv_reads = 2 * n * d * math.ceil(n / br)  # K and V, once per block of queries
    want = {"hbm": FLOAT * 4.0 * n * d, "l2": FLOAT * (2.0 * n * d + kv_reads), "l1": FLOAT * (2.0 * n * d + kv_reads),
            "smem": 2.0 * FLOAT * (n * d + kv_reads)}
    assert cap.budget("attention") == want
    w = gm.attention(1, 1, n, d, "fp32", "flash", block=(br, br), l2_reuse=True)
    assert want == {"hbm": w.bytes["hbm"], "l2": w.bytes["l2"], "l1": w.bytes["l2"], "smem": w.bytes["smem"]}


def test_the_budget_table_lists_every_task_with_its_budget_and_time():
    table = cap.budget_table("A100-40GB")
    assert table.count("\n") == len(cap.TASKS) + 1
    for name in cap.TASKS:
        assert f"`{name}`" in table and gm.fmt_bytes(cap.budget(name)["smem"]) in table
        assert gm.fmt_time(cap.budget_time(name, "A100-40GB")) in table


@pytest.mark.parametrize("name", list(cap.TASKS))
def test_each_starter_is_correct_but_over_budget_and_the_score_says_where(name):
    task = cap.TASKS[name]
    args, out, want = task.make()
    traced = trace(task.starter, task.kernel, task.grid, task.block, args)
    np.testing.assert_allclose(args[out], want, rtol=1e-4, atol=1e-5)
    allowed = cap.budget(name)
    over = [lv for lv in cap.LEVELS if traced.bytes[lv] > allowed[lv]]
    assert over and "hbm" not in over  # wasteful at L1 and L2; HBM sees each distinct sector once anyway
    feedback = cap.score(name, task.starter)
    assert not feedback and feedback.message.startswith("Correct, but over the budget at")
    head = feedback.message.split("Worst line")[0]
    assert all(cap.LEVEL_NAMES[lv] in head for lv in over) and "HBM" not in head
    worst = traced.hottest(("global",))
    assert f"Worst line: {worst.where} ({worst.kind}), `{worst.text}`" in feedback.message
    assert f"| {cap.LEVEL_NAMES['l1']} | {gm.fmt_bytes(traced.bytes['l1'])} |" in feedback.message
    times = re.search(r"your kernel (.+), the budget (.+) \(([\d.]+)x\)", feedback.message)
    assert times[2] == gm.fmt_time(cap.budget_time(name, "H100-SXM")) and float(times[3]) > 1  # the waste takes time
    bound, expected = gm.predict(traced.workload(task.flops), "H100-SXM"), gm.expect(traced, "H100-SXM", flops=task.flops)
    part = "the SM's L1/shared-memory data path" if bound.bound == "smem" else gm.fmt_bound(bound.bound)
    items = [line for line in feedback.message.splitlines() if line.startswith("- ")]  # a short list, one point an item
    assert items[0].startswith("- Worst line: ") and items[1].startswith("- In the model, on the H100-SXM")
    assert items[2].startswith(f"- Your kernel is bound by {part}")
    assert (items[3].startswith(f"- Expected (what a kernel like this gets): {gm.fmt_time(expected.time)}, held by "
                                f"{expected.limiter}: {expected.reason}.") and expected.time >= float(bound.time))
    assert ("That is" in items[3]) == (expected.time > 10 * expected.bound)  # the item far from its bound says why


def chapter_solution(label: str):
    """The solution dropdown of exercise `label` in chapter 8: the kernel source it defines, and
    the score its last line computes (with the launch the solution chooses)."""
    text = (ROOT / "chapters" / "08_capstone.md").read_text()
    start = text.index(f"````{{solution-start}} {label}")
    cell = text[start:text.index("````{solution-end}", start)].split("```{code-cell} ipython3\n")[1].split("\n```")[0]
    body, last = cell.rsplit("\n", 1)
    namespace = {"gm": gm, "cap": cap, "np": np}
    exec(body, namespace)
    return namespace["solution"], eval(last, namespace)


@pytest.mark.parametrize("name", list(cap.TASKS))
def test_each_chapter_solution_meets_its_budget(name):
    source, feedback = chapter_solution(f"ex-capstone-{name}")
    assert feedback and feedback.message.startswith("Correct, and within the budget at every level")
    assert "(1.00x)" in feedback.message  # the model's time: the budget's, exactly
    assert source != cap.TASKS[name].starter


def test_correctness_comes_before_bytes():
    source, _ = chapter_solution("ex-capstone-softmax")
    wrong = cap.score("softmax", source.replace("v[j] / sum", "v[j] * sum"), grid=cap.ROWS // 4, block=128)
    assert not wrong and "y must be softmax(x), row by row" in wrong.message
    short = cap.score("softmax", source)  # the starter's launch: one warp, too few for every row
    assert not short and "Correctness first" in short.message
    assert "does not compile" in cap.score("gemm", "__global__ void gemm(").message


def test_bad_input_is_refused_naming_the_parameter():
    with pytest.raises(ValueError, match=r"task must be one of \('softmax', 'layernorm', 'gemm', 'attention'\)"):
        cap.score("matmul", cap.TASKS["gemm"].starter)
    with pytest.raises(TypeError, match="source must be the kernel's CUDA C source as a str, got int"):
        cap.score("softmax", 42)
    with pytest.raises(ValueError, match="gpu must be one of"):
        cap.score("softmax", cap.TASKS["softmax"].starter, gpu="H300")
    with pytest.raises(ValueError, match="task must be one of"):
        cap.budget(None)


def test_the_budget_exercise_wants_each_tile_once_per_block_and_c_once():
    n, tile = 256, 16
    expected = (n // tile) ** 2 * 2 * tile * n * 4 + n * n * 4  # strips of A and B per block, then C
    assert cap.check_gemm_l2_budget(n, f"{expected:,}")
    forgot_c = cap.check_gemm_l2_budget(n, expected - n * n * 4)
    assert not forgot_c and f"{expected:,}" not in forgot_c.message and "Add C" in forgot_c.message
    with pytest.raises(ValueError, match="size must be a multiple of the tile, 16"):
        cap.check_gemm_l2_budget(100, expected)


COALESCED_GEMM = r"""__global__ void gemm(const float* A, const float* B, float* C, int m, int n, int k) {
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row >= m || col >= n) return;
    float acc = 0.0f;
    for (int p = 0; p < k; ++p) acc += A[row * k + p] * B[p * n + col];
    C[row * n + col] = acc;
}
"""

SHARED_ATTENTION = r"""#define D 16
__global__ void attention(const float* Q, const float* K, const float* V, float* O, int n, float scale) {
    __shared__ float Ks[64][D], Vs[64][D];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    for (int e = threadIdx.x; e < n * D; e += blockDim.x) { Ks[e / D][e % D] = K[e]; Vs[e / D][e % D] = V[e]; }
    __syncthreads();
    float q[D], m = -INFINITY, sum = 0.0f, acc[D] = {};
    for (int k = 0; k < D; ++k) q[k] = Q[i * D + k];
    for (int j = 0; j < n; ++j) {
        float dot = 0.0f;
        for (int k = 0; k < D; ++k) dot += q[k] * Ks[j][k];
        float s = dot * scale, mn = fmaxf(m, s), c = expf(m - mn), p = expf(s - mn);
        sum = sum * c + p;
        for (int k = 0; k < D; ++k) acc[k] = acc[k] * c + p * Vs[j][k];
        m = mn;
    }
    for (int k = 0; k < D; ++k) O[i * D + k] = acc[k] / sum;
}
"""


def test_bytes_over_budget_from_repeated_requests_name_the_lines_that_repeat_them():
    # Coalesced but untiled: each load at its ideal per request, A and B requested k / 16 times over.
    gemm = cap.score("gemm", COALESCED_GEMM).message
    assert "Where the L1 (sectors requested) bytes go: line 6, column" in gemm
    assert gemm.count("`for (int p = 0; p < k; ++p) acc += A[row * k + p] * B[p * n + col];`") == 2
    assert "C[row * n + col]" not in gemm.split("In the model")[0]  # the store, needed once, is not named
    # K and V staged once, then broadcast to every thread: 96 % of the shared bytes, not the stores.
    attention = cap.score("attention", SHARED_ATTENTION).message
    head = attention.split("In the model")[0]
    assert "Where the shared memory bytes go: line 11" in head and "line 14" in head
    assert "Ks[j][k]" in head and "Vs[j][k]" in head and "Ks[e / D]" not in head


def test_a_kernel_over_budget_but_not_slower_in_the_model_is_told_which_part_binds():
    source = chapter_solution("ex-capstone-softmax")[0]  # then x read again for its exponentials: L1 1.5x
    twice = source.replace("v[j] = expf(v[j] - m);", "v[j] = expf(x[r * COLS + j * 32 + lane] - m);")
    feedback = cap.score("softmax", twice, grid=cap.ROWS // 4, block=128)
    assert not feedback and "L1 (sectors requested): 1.50x" in feedback.message
    assert "(1.00x). Not slower in the model" in feedback.message and "both HBM" in feedback.message
    gemm = cap.score("gemm", COALESCED_GEMM).message
    assert "Not slower in the model" in gemm and "L1/shared-memory data path" in gemm
    assert "Not slower" not in cap.score("gemm", cap.TASKS["gemm"].starter).message  # 2.23x: slower, no excuse


def test_an_empty_kernel_name_is_refused_not_replaced_by_the_tasks():
    for bad in ("", "  ", 3):
        with pytest.raises(ValueError, match=r"kernel must be the kernel's name or name expression .*'gemm'"):
            cap.score("gemm", cap.TASKS["gemm"].starter, kernel=bad)


def test_chapter_5s_design_is_over_the_attention_budget_at_shared_memory_by_its_broadcasts():
    # One query row per lane: every K and V word is read by the 32 lanes at once, one 128-byte
    # wavefront for 4 bytes. Per block (one warp, 64 keys of 16 floats): 2 x 64 x 16 broadcast
    # reads of K and V, 2 blocks, 128 B each; plus the staging writes, 4 B per float written.
    ratios = cap.over_budget("attention", cap.flash_design_source())
    reads = 2 * (2 * cap.SEQ * cap.HEAD_DIM) * 128
    writes = 2 * (2 * cap.SEQ * cap.HEAD_DIM) * 4
    assert ratios["hbm"] == 1
    assert ratios["smem"] >= reads / cap.budget("attention")["smem"] > 10
    assert ratios["smem"] == pytest.approx((reads + writes) / cap.budget("attention")["smem"], rel=0.05)


def test_over_budget_refuses_a_kernel_that_is_not_right():
    with pytest.raises(ValueError, match="source must be a correct kernel for 'softmax'"):
        cap.over_budget("softmax", "__global__ void softmax(const float* x, float* y, int rows, int cols) {}")
    with pytest.raises(TypeError, match="source must be the kernel's CUDA C source"):
        cap.over_budget("softmax", None)
