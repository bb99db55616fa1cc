"""What a learner's kernel prints (printf) in the kernel lab: kept as `Trace.output`, shown at
the end of the report and in the lab editor's verdict, and, when the run fails, the last lines
it printed before failing in the `LabError`; a flood still stops at the output limit."""

import re

import numpy as np
import pytest

import gpumodel as gm
from gpumodel.lab import LabError, trace
from gpumodel.lab.limits import OUTPUT_LIMIT
from gpumodel.lab.reporter import OUTPUT_LINES
from gpumodel.lab.runner import FAILED_OUTPUT_LINES, OUTPUT_WIDTH, printed

SAYS = r"""__global__ void says(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        printf("thread %d of block %d: x = %g\n", threadIdx.x, blockIdx.x, x[i]);
        y[i] = 2.0f * x[i];
    }
}
"""


def says(threads: int, blocks: int = 1):
    """Trace `SAYS` with every one of the first `threads` threads of each block printing."""
    n = threads * blocks
    x = np.arange(n, dtype=np.float32) + 0.5
    return trace(SAYS, "says", blocks, 64, [x, np.zeros(64 * blocks, np.float32), n]), x


def test_a_printf_from_thread_0_is_the_traces_output_and_ends_the_report():
    t, x = says(1)
    assert t.output == "thread 0 of block 0: x = 0.5\n"
    report = t.report(gpus=["A100-40GB"])
    tail = report.splitlines()[-2:]
    assert "the kernel printed" in tail[0] and tail[1] == "    thread 0 of block 0: x = 0.5"
    assert t.arrays[1][0] == 1.0  # the kernel still ran to the end


def test_a_kernel_silent_has_no_output_and_no_printed_section():
    t, _ = says(0)
    assert t.output == "" and "printed" not in t.report(gpus=["A100-40GB"])


def test_output_comes_in_the_labs_thread_order_and_the_report_shows_its_first_lines():
    t, _ = says(64, blocks=2)
    rows = t.output.splitlines()
    # Blocks one after another, in each thread 0 first: 128 lines, in order.
    assert rows == [f"thread {i % 64} of block {i // 64}: x = {i + 0.5:g}" for i in range(128)]
    report = t.report(gpus=["A100-40GB"]).splitlines()
    at = next(i for i, row in enumerate(report) if row.startswith("the kernel printed"))
    shown = report[at + 1:]
    assert shown[:OUTPUT_LINES] == ["    " + r for r in rows[:OUTPUT_LINES]]
    assert shown[OUTPUT_LINES:] == [f"    ... {128 - OUTPUT_LINES} more lines"]


def test_printed_keeps_the_last_lines_and_cuts_a_long_one():
    text = "\n".join(f"line {i}" for i in range(30)) + "\n" + "z" * (OUTPUT_WIDTH + 7)
    last = printed(text, 2, last=True).splitlines()  # of 31 lines
    assert last == ["    ... 29 more lines before these", "    line 29", "    " + "z" * OUTPUT_WIDTH + " ... (7 more characters)"]
    assert printed("a\nb\n", 5) == "    a\n    b"


def test_a_crash_after_a_printf_shows_the_printf_in_the_error():
    source = ('__global__ void k(float* y) {\n    printf("about to write through p, thread %d\\n", threadIdx.x);\n'
              "    float* p = nullptr;\n    p[threadIdx.x + (1 << 28)] = y[0];\n}")
    with pytest.raises(LabError, match=r"crashed \(SIGSEGV\) at line 4, column \d+") as err:
        trace(source, "k", 1, 32, [np.zeros(32, np.float32)])
    message = str(err.value)
    # Thread 0 prints, then crashes before thread 1 runs: its line survives the crash.
    assert message.endswith("What it printed before it failed (the lab's thread order, not a GPU's):\n\n"
                            "    about to write through p, thread 0")


def test_an_out_of_bounds_write_shows_the_last_lines_printed_before():
    source = ('__global__ void k(float* y) {\n    int i = threadIdx.x;\n    printf("i = %d\\n", i);\n'
              "    y[i] = 1.0f;\n}")
    with pytest.raises(LabError, match="writes out of bounds at line 4") as err:
        trace(source, "k", 1, 64, [np.zeros(32, np.float32)])
    lines = str(err.value).split("\n\n")[-1].splitlines()
    assert lines == [f"    ... {64 - FAILED_OUTPUT_LINES} more lines before these"] + \
        [f"    i = {i}" for i in range(64 - FAILED_OUTPUT_LINES, 64)]


def test_a_failure_without_printf_adds_nothing():
    source = "__global__ void k(float* y) { y[threadIdx.x] = 1.0f; }"
    with pytest.raises(LabError) as err:
        trace(source, "k", 1, 64, [np.zeros(32, np.float32)])
    assert "printed" not in str(err.value)


def test_the_output_limit_still_stops_a_flood():
    source = ('__global__ void k(float* y) {\n    for (int i = 0; ; ++i)\n'
              '        printf("thread %d says %d again and again\\n", threadIdx.x, i);\n}\n')
    limit = re.escape(f"printed more than the lab's output limit of {gm.fmt_bytes(OUTPUT_LIMIT)}")
    with pytest.raises(LabError, match=limit) as err:
        trace(source, "k", 1, 32, [np.zeros(32, np.float32)], timeout=60)
    rows = str(err.value).split("\n\n")[-1].splitlines()
    assert len(rows) == FAILED_OUTPUT_LINES + 1 and re.fullmatch(r"    \.\.\. [\d,]+ more lines before these", rows[0])
    assert all(re.fullmatch(r"    thread 0 says \d+ again and again", r) for r in rows[1:-1])


def test_the_lab_editors_verdict_shows_what_the_kernel_printed_escaped(monkeypatch):
    from gpumodel.course import checks, intensity

    monkeypatch.setattr(checks, "SESSION", {})
    editor = gm.course.widgets.LabEditor(intensity.LAB_STARTER, intensity.check_coalesced_kernel)
    source = intensity.LAB_STARTER.replace("int per", 'if (t == 0) printf("<per> & `n` = %d\\n", n);\n    int per')
    feedback, _ = editor._judged(source)
    assert not feedback and "sectors per load request" in feedback.message
    assert feedback.message.endswith(f"Your kernel printed (on the CPU, in the lab's thread order, not a GPU's):\n\n"
                                     f"    <per> & `n` = {intensity.LAB_N}")
    page = gm.course.widgets.feedback_html(feedback)
    assert f"<pre style=\"overflow-x: auto\"><code>&lt;per&gt; &amp; `n` = {intensity.LAB_N}</code></pre>" in page
    failed, _ = editor._judged(source.replace("y[t * per + k]", "y[t * per + k + 1]"))
    assert "out of bounds" in failed.message and failed.message.count("<per>") == 1  # printed once, by the error
    assert "&lt;per&gt;" in gm.course.widgets.feedback_html(failed) and "<per>" not in gm.course.widgets.feedback_html(failed)


def test_a_kernel_that_only_prints_has_a_report():
    t = trace('__global__ void hello() { printf("hello from thread %d\\n", threadIdx.x); }', "hello", 1, 2, [])
    assert t.output == "hello from thread 0\nhello from thread 1\n" and not t.sites
    assert t.report(gpus=["A100-40GB"]).endswith("    hello from thread 0\n    hello from thread 1")


def test_a_compile_error_is_a_listing_and_the_lines_a_verdict_names_are_quoted(monkeypatch):
    """The editor shows no line numbers, so a verdict quotes the lines it names, numbered; g++'s
    errors are a listing, one a line, not a paragraph."""
    from gpumodel.course import checks, intensity

    monkeypatch.setattr(checks, "SESSION", {})
    editor = gm.course.widgets.LabEditor(intensity.LAB_STARTER, intensity.check_coalesced_kernel)
    source = intensity.LAB_STARTER.replace("int per", "int per = oops;\n    int per2")
    feedback, _ = editor._judged(source)
    line = next(i for i, row in enumerate(source.splitlines(), 1) if "oops" in row)
    assert feedback.message.endswith(f"The lines it names:\n\n    {line} | {source.splitlines()[line - 1]}")
    page = gm.course.widgets.feedback_html(feedback)
    listing = re.search(r"<pre[^>]*><code>(kernel\.cu: In function.*?)</code></pre>", page, re.S)
    assert listing and f"kernel.cu:{line}:" in listing.group(1) and listing.group(1).count("\n") >= 1
    assert gm.course.widgets.cited(checks.Feedback(False, "at line 99 and kernel.cu:0:1"), source).message == \
        "at line 99 and kernel.cu:0:1"  # no such lines: nothing quoted


def test_a_capstone_verdict_is_a_short_list_on_the_page():
    """A score's points are a list, one item each (worst line, bound, expected time, how well it is
    known), escaped with its code spans as code, between the head sentence and the table."""
    cap = gm.course.capstone
    feedback = cap.score("softmax", cap.SOFTMAX_STARTER)
    page = gm.course.widgets.feedback_html(feedback)
    items = re.search(r"</p><ul>(.*?)</ul><table>", page, re.S)
    assert items and items.group(1).count("<li>") == 5 and items.group(1).startswith("<li>Worst line: line 6")
    assert "<code>for (int j = 0; j &lt; cols; ++j)" in items.group(1) and "\n- " not in page and "<li>- " not in page
    assert max(len(item.split()) for item in items.group(1).split("<li>")) < 90
