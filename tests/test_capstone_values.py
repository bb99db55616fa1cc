"""The capstone's references and scoring rules (`gpumodel.course.capstone`) pinned to values
derived by hand: each task's inputs and NumPy result against an independent computation (the
softmax's overflow offset on every other row, layernorm's epsilon), its FLOPs, the timed budget's
levels, the ratios and the words for a budget of 0, the L2 budget exercise at its size limits
and its words, the levels over budget listed most over first, the score's table and worst line
of the softmax starter by hand, the budget table's header and default GPU, each refusal's
parameter name, over_budget at the learner's own launch, and the lab editor of a task."""

import functools

import numpy as np
import pytest

import gpumodel as gm
from gpumodel.course import capstone as cap
from gpumodel.workloads import Workload


def rows64():
    """The row-wise tasks' input before any offset: seed 0, 64 x 256 standard normal FP32."""
    return np.random.default_rng(0).standard_normal((64, 256)).astype(np.float32)


def test_the_softmax_input_carries_the_overflow_offset_on_every_other_row_and_the_reference_ignores_it():
    """Rows 0, 2, ... are the normal rows plus 100 (exp(100) = 2.7e43 overflows FP32), rows 1, 3,
    ... as they are; a row's softmax is unchanged by a constant, so the reference is the softmax
    of the rows without the offset (computed here in float64, shifted by the row's maximum)."""
    (x, y, rows, cols), out, want = cap.TASKS["softmax"].make()
    base = rows64()
    assert cap.SOFTMAX_OFFSET == 100.0 and (rows, cols, out) == (64, 256, 1) and not y.any()
    np.testing.assert_array_equal(x[1::2], base[1::2])
    np.testing.assert_allclose(x[::2] - 100.0, base[::2], atol=1e-5)
    assert x.dtype == np.float32 and x[0].max() > np.log(np.finfo(np.float32).max)  # exp overflows FP32 unshifted
    e = np.exp(base.astype(np.float64) - base.max(axis=1, keepdims=True))
    np.testing.assert_allclose(want, e / e.sum(axis=1, keepdims=True), rtol=1e-4)
    np.testing.assert_allclose(want.sum(axis=1), 1.0, rtol=1e-12)


def test_the_layernorm_reference_adds_epsilon_to_the_variance():
    """y = (x - mean) / sqrt(var + 1e-5) per row, in float64; without the epsilon a row of
    variance near 1 is off by about 5e-6 relative, far above the 1e-12 asked here."""
    (x, y, rows, cols, eps), out, want = cap.TASKS["layernorm"].make()
    assert (eps, cap.EPS, rows, cols, out) == (1e-5, 1e-5, 64, 256, 1) and not y.any()
    np.testing.assert_array_equal(x, rows64())
    x64 = x.astype(np.float64)
    mean, var = x64.mean(axis=1, keepdims=True), x64.var(axis=1, keepdims=True)
    np.testing.assert_allclose(want, (x64 - mean) / np.sqrt(var + 1e-5), rtol=1e-12)
    assert not np.allclose(want, (x64 - mean) / np.sqrt(var), rtol=1e-7, atol=0)


def test_the_gemm_and_attention_references_by_hand():
    """GEMM: C = A B in float64 of two seed-0 64 x 64 matrices, C the third argument. Attention:
    O = softmax(Q K^T / 4) V (scale 1 / sqrt(16)) over 64 queries, O the fourth argument."""
    (a, b, c, m, n, k), out, want = cap.TASKS["gemm"].make()
    assert (m, n, k, out, a.shape, c.dtype) == (64, 64, 64, 2, (64, 64), np.float32) and not c.any()
    np.testing.assert_allclose(want, a.astype(np.float64) @ b.astype(np.float64), rtol=1e-12)
    (q, kk, v, o, seq, scale), out, want = cap.TASKS["attention"].make()
    assert (seq, scale, out, q.shape) == (64, 0.25, 3, (64, 16)) and not o.any()
    s = q.astype(np.float64) @ kk.T.astype(np.float64) / 4
    p = np.exp(s - s.max(axis=1, keepdims=True))
    np.testing.assert_allclose(want, (p / p.sum(axis=1, keepdims=True)) @ v, rtol=1e-6)


def test_each_tasks_flops():
    """softmax 5 and layernorm 6 a element of 64 x 256; the GEMM 2 x 64^3; attention 4 n^2 d =
    4 x 64^2 x 16 (QK^T and PV)."""
    assert {n: cap.TASKS[n].flops for n in cap.TASKS} == {"softmax": 5 * 64 * 256, "layernorm": 6 * 64 * 256,
                                                          "gemm": 2 * 64**3, "attention": 4 * 64**2 * 16}


def test_the_budget_is_timed_with_l1_on_the_data_path_and_registers_from_the_flops():
    """The GEMM budget: shared memory plus L1 sectors on the model's smem level, 6 B a flop in
    registers, HBM and L2 as budgeted; its time is that workload's bound."""
    b = cap.budget("gemm")
    w = cap._timed("x", 1000.0, b)
    assert float(w.bytes["smem"]) == b["smem"] + b["l1"] and float(w.bytes["registers"]) == 6000
    assert (float(w.bytes["l2"]), float(w.bytes["hbm"]), float(w.flops)) == (b["l2"], b["hbm"], 1000.0)
    mine = Workload("gemm", 2 * 64**3, {"registers": 6 * 2 * 64**3, "smem": b["smem"] + b["l1"], "l2": b["l2"],
                                        "hbm": b["hbm"]})
    assert cap.budget_time("gemm", "A100-40GB") == float(gm.predict(mine, "A100-40GB").time)


def test_the_ratio_words_for_a_budget_and_for_none():
    assert cap._ratio(3.0, 2.0) == "1.50x" and cap._ratio(0.0, 0.0) == "none, as budgeted"
    assert cap._ratio(1.0, 0.0) == "over a budget of 0"


def test_over_budget_is_traced_over_budget_0_where_both_are_0_and_inf_where_only_the_budget_is():
    """The softmax starter (one thread per row): HBM at its budget, L2 4.5x, L1 16x, no shared
    memory. A softmax staging its row in shared memory: inf at shared memory (a budget of 0)."""
    assert cap.over_budget("softmax", cap.SOFTMAX_STARTER) == {"hbm": 1.0, "l2": 4.5, "l1": 16.0, "smem": 0.0}
    staged = cap.SOFTMAX_STARTER.replace("float m = -INFINITY, sum = 0.0f;",
                                         "__shared__ volatile float s[32]; s[threadIdx.x] = 0.0f; float m = -INFINITY, sum = s[threadIdx.x];")
    assert cap.over_budget("softmax", staged)["smem"] == np.inf


def test_the_levels_over_budget_are_named_most_over_first():
    """The softmax starter is 16x over at L1 and 4.5x at L2: L1 first."""
    message = cap.score("softmax", cap.SOFTMAX_STARTER).message
    assert message.startswith("Correct, but over the budget at L1 (sectors requested): 16.00x; L2: 4.50x.\n\n- Worst line")


@pytest.mark.parametrize("size, ok", [(16, True), (2**14, True), (8, False), (2**14 + 16, False), (24, False)])
def test_the_l2_budget_exercise_takes_whole_tiles_from_16_to_16384(size, ok):
    """At size n: (n / 16)^2 blocks, each a 16 x n strip of A and n x 16 of B, 4 B an element,
    and C once: 16: 1 x 2 x 16 x 16 x 4 + 1,024 = 3,072 B."""
    if not ok:
        with pytest.raises(ValueError, match="size"):
            cap.check_gemm_l2_budget(size, 1.0)
        return
    want = (size // 16) ** 2 * 2 * 16 * size * 4 + size * size * 4
    assert cap.check_gemm_l2_budget(size, want)
    assert not cap.check_gemm_l2_budget(size, want * 1.02)
    if size == 16:
        assert want == 3072


def test_the_gemm_inputs_are_seed_0_draws():
    """A then B: the first two 64 x 64 standard normal draws of default_rng(0), as FP32."""
    (a, b, *_), _, _ = cap.TASKS["gemm"].make()
    rng = np.random.default_rng(0)
    np.testing.assert_array_equal(a, rng.standard_normal((64, 64)).astype(np.float32))
    np.testing.assert_array_equal(b, rng.standard_normal((64, 64)).astype(np.float32))


def test_the_l2_budget_exercise_explains_and_hints_in_bytes():
    """Size 48: (48 / 16)^2 = 9 blocks, each a 16 x 48 strip of A and a 48 x 16 strip of B, 4 B an
    element: 9 x 2 x 16 x 48 x 4 = 55,296 B, and C once, 48 x 48 x 4 = 9,216: 64,512 B."""
    right = cap.check_gemm_l2_budget(48, 64512)
    assert right and right.message == ("64512 bytes: That is within 1% of 64,512 bytes. 9 blocks each read a 16 x "
                                       "48 strip of A and a 48 x 16 strip of B, 4 bytes an element, and C is written "
                                       "once.")
    low = cap.check_gemm_l2_budget(48, 1)
    assert not low and low.message == ("1 bytes: Too low. Count the blocks; each reads its rows of A and its columns "
                                       "of B in full, once. Add C.")
    with pytest.raises(ValueError, match=r"^size must be an integer from 16 to 16384, got 8$"):
        cap.check_gemm_l2_budget(8, 1)


def test_the_budget_table_and_time_default_to_the_h100_and_name_gpu():
    """The header: task, statement, the four levels by name, the time on the GPU; the H100-SXM
    when none is given."""
    table = cap.budget_table()
    assert table == cap.budget_table("H100-SXM")
    assert table.splitlines()[0] == ("| task | statement | HBM | L2 | L1 (sectors requested) | shared memory | "
                                     "time on the H100-SXM |")
    assert cap.budget_time("softmax") == cap.budget_time("softmax", "H100-SXM") != cap.budget_time("softmax", "T4")
    for call in (lambda: cap.budget_table("H300"), lambda: cap.budget_time("softmax", "H300")):
        with pytest.raises(ValueError, match="^gpu must be one of"):
            call()


def test_the_softmax_starters_score_by_hand():
    """One thread per row: a warp's 32 lanes read 32 rows 1 KiB apart, 32 sectors a request where
    4 (128 B) would do; 2 warps x 256 columns = 512 requests a pass, 28 x 32 B over each: 458,752 B
    = 459 kB over its ideal. In and out once: 2 x 64 x 256 x 4 = 131,072 B (131 kB) at HBM; L2
    4.5x and L1 16x that; no shared memory, none budgeted. The time is 1.60x the budget's: slower,
    so no "not slower" note."""
    message = cap.score("softmax", cap.SOFTMAX_STARTER).message
    assert ("Worst line: line 6, column 62 (global load 32-bit), `for (int j = 0; j < cols; ++j) sum += expf(x[r * "
            "cols + j] - m);`: 32.00 sectors per request, ideal 4.00, 459 kB over its ideal.") in message
    rows = [line for line in message.splitlines() if line.startswith("|")]
    assert rows == ["| level | traced | budget | traced / budget |", "| --- | --- | --- | --- |",
                    "| HBM | 131 kB | 131 kB | 1.00x |", "| L2 | 590 kB | 131 kB | 4.50x |",
                    "| L1 (sectors requested) | 2.10 MB | 131 kB | 16.00x |",
                    "| shared memory | 0 B | 0 B | none, as budgeted |"]
    assert "(1.60x)" in message and "Not slower" not in message


def test_over_budget_names_a_source_of_the_wrong_type_and_a_wrong_result_by_the_rule():
    with pytest.raises(TypeError, match="^source must be the kernel's CUDA C source as a str, got int$"):
        cap.over_budget("softmax", 42)
    with pytest.raises(ValueError, match=r"y must be softmax\(x\), row by row"):
        cap.over_budget("softmax", cap.SOFTMAX_STARTER.replace("expf(x[r * cols + j] - m) / sum",
                                                               "expf(x[r * cols + j] - m) * sum"))


def test_the_editor_holds_the_tasks_starter_launch_and_score():
    e = cap.editor("softmax")
    assert e.starter == cap.SOFTMAX_STARTER and e.launch == {"grid": (2,), "block": (32,)}
    assert isinstance(e.check, functools.partial) and e.check.func is cap.score and e.check.args == ("softmax",)
