"""What the labs answer where a kernel is wrong in ways the chapters teach: a softmax that does
not subtract the row's maximum (chapter 5) overflows on the labs' inputs, a variable-length
array that nvcc refuses is refused, the starters and solutions guard their indices (chapter 0),
and a missing barrier is answered with the race it leaves."""

import numpy as np
import pytest

from gpumodel.course import capstone as cap
from gpumodel.course import flashattention as flash
from test_capstone import chapter_solution as capstone_solution
from test_lab import chapter_solution


def test_the_labs_attention_inputs_overflow_a_softmax_without_its_maximum():
    q, k, v = flash.lab_qkv(flash.LAB_N, flash.LAB_D)
    scores = q.astype(np.float64) @ k.T / np.sqrt(flash.LAB_D)
    assert scores.max(axis=1).min() > flash.OVERFLOW_SCORE - 10  # every row near 100
    with np.errstate(over="ignore"):
        assert np.isinf(np.exp(scores.astype(np.float32))).any(axis=1).all()  # FP32's exp overflows in every row
    shifted = scores - scores.max(axis=1, keepdims=True)
    assert shifted.std() > 0.5  # the constant leaves the rows' spread: the softmax is not one-hot
    with pytest.raises(ValueError, match="n must be"):
        flash.lab_qkv(0, 16)


def test_chapter_5s_lab_marks_an_attention_without_a_running_maximum_wrong():
    solution = chapter_solution("05_flashattention", "ex-flash-lab-block-loop")
    assert flash.check_flash_kernel(solution)
    unstable = solution.replace("expf(m - m_new)", "1.0f").replace("expf(s[j] - m_new)", "expf(s[j])")
    assert unstable != solution
    wrong = flash.check_flash_kernel(unstable)
    assert not wrong and "O must be softmax(Q Kᵀ scale) V" in wrong.message


def test_the_capstone_marks_an_unshifted_softmax_and_attention_wrong():
    softmax, _ = capstone_solution("ex-capstone-softmax")
    unstable = softmax.replace("expf(v[j] - m)", "expf(v[j])")
    assert unstable != softmax
    wrong = cap.score("softmax", unstable, grid=cap.ROWS // 4, block=128)
    assert not wrong and "y must be softmax(x), row by row" in wrong.message
    args, _, _ = cap.TASKS["softmax"].make()
    assert args[0][::2].min() > cap.SOFTMAX_OFFSET - 10  # every other row near 100: exp overflows FP32
    attention, right = capstone_solution("ex-capstone-attention")
    assert right
    unstable = attention.replace("c = expf(m - m_new)", "c = 1.0f").replace("p = expf(s - m_new)", "p = expf(s)")
    assert unstable != attention
    wrong = cap.score("attention", unstable)
    assert not wrong and "O must be softmax(Q Kᵀ scale) V" in wrong.message


def test_a_variable_length_array_which_nvcc_refuses_does_not_compile():
    from gpumodel import lab

    source = r"""__global__ void copy(const float* x, float* y, int n) {
    float row[n];  // a length known only at run time
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) { row[0] = x[i]; y[i] = row[0]; }
}
"""
    x = np.arange(32, dtype=np.float32)
    with pytest.raises(lab.LabError, match=r"does not compile:[\s\S]*variable length array"):
        lab.trace(source, "copy", 1, 32, [x, np.zeros_like(x), 32])
    fixed = source.replace("float row[n];", "float row[32];")
    y = np.zeros_like(x)
    lab.trace(fixed, "copy", 1, 32, [x, y, 32])
    assert (y == x).all()


def guarded(source: str, kernel: str, block: int, args: list, blocks: int) -> None:
    """Trace `kernel` over one block more than `blocks`: a kernel that guards its index leaves
    the extra threads idle; one that does not runs out of bounds, and the lab says so."""
    from gpumodel import lab

    lab.trace(source, kernel, blocks + 1, block, args)


def test_the_starters_and_solutions_guard_their_indices_as_chapter_0_asks():
    from gpumodel.course import intensity

    n = intensity.LAB_GRID * intensity.LAB_BLOCK
    x = np.linspace(-1, 1, n, dtype=np.float32)
    fused = chapter_solution("02_intensity", "ex-intensity-lab-fuse")
    for source in (intensity.CHAIN_STARTER, fused):
        y = np.zeros_like(x)
        guarded(source, "chain", intensity.LAB_BLOCK, [x, np.zeros_like(x), y, 0.5, -0.25, n], intensity.LAB_GRID)
        np.testing.assert_allclose(y, np.maximum(x, 0) * 0.5 - 0.25, rtol=1e-6)
    q, k, v = flash.lab_qkv(flash.LAB_N, flash.LAB_D)
    for source in (flash.LAB_STARTER, chapter_solution("05_flashattention", "ex-flash-lab-block-loop")):
        args = [q, k, v, np.zeros_like(q), np.zeros((flash.LAB_N, flash.LAB_N), np.float32), flash.LAB_N, 0.25]
        guarded(source, "attention", flash.LAB_BLOCK, args, flash.LAB_N // flash.LAB_BLOCK)
    task = cap.TASKS["attention"]
    args, _, _ = task.make()
    guarded(task.starter, task.kernel, task.block[0], args, task.grid[0])
    from gpumodel import lab

    unguarded = intensity.CHAIN_STARTER.replace("    if (i >= n) return;  // a thread past the end has no element\n", "")
    assert unguarded != intensity.CHAIN_STARTER
    with pytest.raises(lab.LabError, match="out of bounds"):
        guarded(unguarded, "chain", intensity.LAB_BLOCK, [x, np.zeros_like(x), np.zeros_like(x), 0.5, -0.25, n],
                intensity.LAB_GRID)


def test_a_missing_barrier_is_answered_with_the_race_it_leaves():
    source, right = capstone_solution("ex-capstone-gemm")
    assert right
    lines = source.splitlines()
    store, use = (next(i + 1 for i, line in enumerate(lines) if text in line) for text in ("As[ty][tx] =", "acc +="))
    racy = source.replace("        __syncthreads();\n        for (int p", "        for (int p", 1)
    assert racy != source
    feedback = cap.score("gemm", racy)
    assert not feedback and "Not scored: the kernel's result depends on which thread runs first" in feedback.message
    assert "read-after-write race on shared memory" in feedback.message
    assert f"Missing: a __syncthreads() between line {store} and line {use - 1}." in feedback.message


def test_a_published_table_cites_as_text_in_jupyter_and_as_a_role_on_the_site(monkeypatch):
    import gpumodel as gm
    from gpumodel.course import tables

    comparisons = gm.published.comparisons(chapter=3)
    record = comparisons[0].record
    label, _, address = gm.presets.bibliography()[record.source]
    monkeypatch.delenv("GPUMODEL_BUILD", raising=False)
    jupyter = tables.published_table(comparisons)
    assert "{cite" not in jupyter and (f"[{label}]({address})" if address else label) in jupyter
    assert "{cite" not in tables.violations_table(gm.published.violations())
    monkeypatch.setenv("GPUMODEL_BUILD", "book")
    assert f"{{cite:t}}`{record.source}`" in tables.published_table(comparisons)
    assert tables.citation(record.source) == f"{{cite:p}}`{record.source}`"
