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
    assert not wrong and "O must be softmax(Q K^T scale) V" in wrong.message


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
    assert not wrong and "O must be softmax(Q K^T scale) V" in wrong.message
