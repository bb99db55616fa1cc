"""`make bench`: times the model, every public function and the chapters (a benchmark, not a test).

Prints, first, each chapter's readability (words per sentence, the share over 40 words, the
longest: `tests/prose.py`) beside its limits; then the slowest accepted call of every public
function (target: under a second on one core, CPU time): each callable of the bad-input sweep (`test_bad_inputs.SIGNATURES`) with its
valid arguments, with each size pushed from 2^10 to 2^53 (one at a time and all together), its
arrays scaled up together, the edge calls the issue-26 probe found slow, every widget exercise
built for every value its menus offer and rendered for every state; then the slowest per module.
Then a table of medians over repeats: a 10^5-configuration `predict` sweep (target: well under
100 ms on one core), the kernel lab's traced run of the flash-attention kernel (accesses per
second and the run's peak memory; built once before timing) and the execution of each chapter
as a notebook, kernel start included; each beside its target (`TARGETS`), OVER where it misses.
Then the kernel lab's speed in CPU seconds (the traced process and the tracer together): accesses
per CPU-second at 64- and 1024-thread blocks (the cost of an access must not grow with the block:
within `BLOCK_RATIO`), waits at __syncthreads() per CPU-second, and every trace the course and the capstone make (each chapter lab's
starter and solution, each capstone task's starter and solution, the course kernels at the
tests' sizes) and a templated 2D-blocktiling SGEMM at 256^3 (tests/lab_kernels/), each against
the 10 s target.
With `--site DIR` (a built book, `_build/html`), only each page's longest main-thread task as
it loads at 390 px in headless Chromium, its first formula brought into view (median of the
repeats, target `TASK_MS`).
Run as `python tests/benchmark.py [--repeats N] [--calls-only | --lab-only | --site DIR] [--largest P]`;
`tests/test_benchmark_sweep.py` runs the same sweep with sizes up to 2^12.
"""

from __future__ import annotations

import argparse
import collections
import functools
import http.server
import inspect
import itertools
import json
import pathlib
import re
import resource
import signal
import statistics
import threading
import os
import sys
import time
import warnings

import nbformat
import numpy as np
from nbclient import NotebookClient

import conftest
import gpumodel as gm
import prose
import test_browser as tb

ROOT = pathlib.Path(__file__).resolve().parent.parent


def median_time(fn, repeats: int) -> float:
    """Median wall time of `fn()` in seconds over `repeats` runs."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def sweep():
    """10^5 GEMM configurations (sizes x block tiles x thread tiles) in one predict call."""
    n = np.linspace(256, 16384, 2500).round()[:, None, None]
    block = np.array([16, 32, 64, 128, 256])[None, :, None]
    t_m = np.array([1, 2, 4, 8, 1, 2, 4, 8])[None, None, :]
    t_n = np.array([1, 1, 1, 1, 8, 8, 8, 8])[None, None, :]
    w = gm.gemm(n, n, n, block=(block, block), thread=(t_m, t_n))
    p = gm.predict(w, gm.gpu("A100-40GB"))
    assert p.time.size == 2500 * 5 * 8 == 10**5
    return p


def lab_trace() -> int:
    """Trace the flash-attention kernel at n = 256 (8.7 million accesses): the accesses traced."""
    from gpumodel.cuda import plans
    from gpumodel.lab.reporter import trace_plan

    traces = trace_plan(plans.plan_attention("flash", 1, 256))
    return sum(s.lanes for t in traces for s in t.sites)


def cpu_seconds(call) -> float:
    """CPU seconds `call()` takes, its child processes' included (the traced run, g++, addr2line)."""
    def children():
        usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        return usage.ru_utime + usage.ru_stime
    start, start_children = time.process_time(), children()
    call()
    return time.process_time() - start + children() - start_children


BLOCK_LOADS = r"""__global__ void loads(const float* x, float* y, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    float s = 0.0f;
    for (int r = 0; r < 64; ++r) s += x[(r * gridDim.x * blockDim.x + i) % n];
    y[i] = s;
}"""
"""Each thread 64 coalesced float loads and one store, over 2^16 threads in all."""
BLOCK_RATIO = 1.5
"""Accesses per CPU-second at 64-thread blocks over those at 1024-thread blocks: at most this."""


def accesses_per_cpu_second(threads: int) -> float:
    """Accesses the lab traces per CPU-second running BLOCK_LOADS in blocks of `threads` threads
    (2^16 threads, 65 accesses each; built before timing; the median of 3 runs)."""
    from gpumodel.lab import trace

    n = 64 * 2**16
    args = [np.ones(n, np.float32), np.zeros(2**16, np.float32), n]
    trace(BLOCK_LOADS, "loads", 2**16 // threads, threads, args)
    done = []
    seconds = statistics.median(cpu_seconds(lambda: done.append(trace(BLOCK_LOADS, "loads", 2**16 // threads, threads,
                                                                      args))) for _ in range(3))
    return sum(s.lanes for s in done[0].sites) / seconds


BLOCK_BARRIERS = r"""__global__ void passes(float* y) {
    __shared__ float s[1024];
    float v = threadIdx.x;
    for (int r = 0; r < 64; ++r) {
        s[threadIdx.x] = v;
        __syncthreads();
        v += s[(threadIdx.x + 1) % blockDim.x];
        __syncthreads();
    }
    y[blockIdx.x * blockDim.x + threadIdx.x] = v;
}"""
"""Each thread 128 waits at __syncthreads(), over 2^16 threads in blocks of 1024: what a launch of a
whole program spends on switching between its threads (each a fiber, cuda_emu.h)."""


def barrier_waits_per_cpu_second() -> float:
    """Waits at __syncthreads() the lab runs per CPU-second in BLOCK_BARRIERS (built before timing;
    the median of 3 runs)."""
    from gpumodel.lab import trace

    def run():
        trace(BLOCK_BARRIERS, "passes", 64, 1024, [np.zeros(2**16, np.float32)])
    run()
    return 128 * 2**16 / statistics.median(cpu_seconds(run) for _ in range(3))


SOLUTIONS = re.compile(r"````\{solution-start\} (ex-[\w-]+)\n.*?```\{code-cell\} ipython3\n(.*?)\n```", re.S)


def lab_traces() -> list:
    """(what, call) of every trace the course and the capstone make: each chapter lab's
    checker on its starter and on the chapter's solution (the solution cell run as the chapter
    runs it), each capstone task's score of its starter and of the chapter's solution, the
    course kernels' plans at the tests' sizes (`test_lab.EXACT`), flash attention at n = 256,
    and the templated SGEMM at 256^3."""
    from gpumodel.course import capstone, flashattention, intensity, roofline_levels, tiling
    from gpumodel.cuda import plans
    from gpumodel.lab import trace
    from gpumodel.lab.reporter import trace_plan
    from test_lab import EXACT

    calls = [("chapter 2 lab starter (coalesce)", lambda: intensity.check_coalesced_kernel(intensity.LAB_STARTER)),
             ("chapter 2 lab starter (fuse)", lambda: intensity.check_fused_chain(intensity.CHAIN_STARTER)),
             ("chapter 3 lab starter", lambda: tiling.check_conflict_free_transpose(tiling.LAB_STARTER)),
             ("chapter 4 lab starter", lambda: roofline_levels.check_thread_tile_gemm(roofline_levels.LAB_STARTER)),
             ("chapter 5 lab starter", lambda: flashattention.check_flash_kernel(flashattention.LAB_STARTER))]
    calls += [(f"capstone {name} starter", lambda name=name: capstone.score(name, capstone.TASKS[name].starter))
              for name in capstone.TASKS]
    labs = {"02_intensity": intensity, "03_tiling": tiling, "04_roofline_levels": roofline_levels,
            "05_flashattention": flashattention, "08_capstone": capstone}
    for chapter, module in labs.items():
        for label, cell in SOLUTIONS.findall((ROOT / "chapters" / f"{chapter}.md").read_text()):
            if "solution = " in cell:  # a kernel to trace
                calls.append((f"{label} solution", lambda cell=cell, module=module: exec(
                    cell, {"gm": gm, "np": np, "cap": capstone, "lab": module})))
    for make, _ in EXACT:
        plan = make()
        calls.append((f"course kernel {plan.label}", lambda plan=plan: trace_plan(plan)))
    flash = plans.plan_attention("flash", 1, 256)
    calls.append((f"course kernel {flash.label}", lambda: trace_plan(flash)))
    sgemm = (ROOT / "tests" / "lab_kernels" / "sgemm_2d_blocktiling.cu").read_text()
    n = 256
    a, b = np.ones((n, n), np.float32), np.ones((n, n), np.float32)
    calls.append(("templated SGEMM 128 x 128 tiles, 256^3", lambda: trace(
        sgemm, "sgemm_2d<128, 128, 8, 8, 8>", (n // 128, n // 128), 256, [n, n, n, a, b, np.zeros((n, n), np.float32)])))
    return calls


FIRST_TRACE = """
import time, numpy as np
started = time.perf_counter()
import gpumodel as gm
x = np.arange(1000, dtype=np.float32)
gm.lab.trace("__global__ void scale(float* x, float a, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; "
             "if (i < n) x[i] = a * x[i]; }", "scale", 4, 256, [x, np.float32(2), np.int32(1000)])
print(time.perf_counter() - started)
"""
FIRST_TRACE_TARGET = 5.0
"""Seconds to a learner's first trace in a fresh process (the import included), issue 74."""


def first_traces() -> list:
    """(what, wall seconds) of a first trace in a fresh process with an empty lab cache: cold,
    and after the preparation `make` runs (`python -m gpumodel.lab`, timed too)."""
    import subprocess
    import tempfile

    rows = []
    for prepared in (False, True):
        with tempfile.TemporaryDirectory() as cache:  # private (0700), emptied after
            env = {**os.environ, "GPUMODEL_CACHE": cache}
            if prepared:
                started = time.perf_counter()
                subprocess.run([sys.executable, "-m", "gpumodel.lab"], env=env, check=True, capture_output=True)
                rows.append(("the preparation (python -m gpumodel.lab)", time.perf_counter() - started))
            done = subprocess.run([sys.executable, "-c", FIRST_TRACE], env=env, check=True, capture_output=True, text=True)
            rows.append((f"first trace, fresh process, {'prepared' if prepared else 'empty'} cache",
                         float(done.stdout.split()[-1])))
    return rows


def report_lab():
    """Print the wall time of a first trace in a fresh process (cold, and prepared), the lab's accesses per CPU-second at 64- and 1024-thread blocks and its waits at a
    barrier per CPU-second, then each trace's
    CPU time (after a first call that builds it), slowest first."""
    for what, seconds in first_traces():
        target = "" if what.startswith("the preparation") else f" (target: {FIRST_TRACE_TARGET:g} s)"
        over = "  OVER" if target and "prepared" in what and seconds > FIRST_TRACE_TARGET else ""
        print(f"lab: {what}: {seconds:.1f} s{target}{over}")
    small, large = accesses_per_cpu_second(64), accesses_per_cpu_second(1024)
    ratio = small / large
    print(f"lab: {small:,.0f} accesses per CPU-second at 64-thread blocks, {large:,.0f} at 1024-thread blocks: "
          f"{ratio:.2f}x (target: within {BLOCK_RATIO}x){'  OVER' if ratio > BLOCK_RATIO else ''}")
    print(f"lab: {barrier_waits_per_cpu_second():,.0f} waits at __syncthreads() per CPU-second (1024-thread blocks)")
    rows = []
    for what, call in lab_traces():
        call()  # builds it
        rows.append((what, cpu_seconds(call)))
    width = max(len(what) for what, _ in rows)
    print(f"\n{'lab trace':<{width}}  {'CPU':>9}  {'target':>9}")
    for what, seconds in sorted(rows, key=lambda row: -row[1]):
        over = "  OVER" if seconds > TARGETS["trace"] else ""
        print(f"{what:<{width}}  {gm.fmt_time(seconds):>9}  {gm.fmt_time(TARGETS['trace']):>9}{over}")


LIMIT = 20.0
"""A call still running after this many seconds is stopped and reported as such."""
EXPONENTS = (10, 16, 20, 26, 32, 40, 53)
"""A size parameter is pushed to 2^p for each p here up to the sweep's largest exponent."""
LARGEST = 53
"""The full sweep's largest exponent: 2^53, the largest size the model accepts."""
SCALES = (2, 4, 8, 16, 32, 64)
MOST_ELEMENTS = 2**24
"""The largest array a probe builds (128 MiB of float64): larger ones are refused by shape anyway."""


class TooLong(Exception):
    """Raised in a call that ran past LIMIT."""


def _stop(signum, frame):
    raise TooLong


def cpu_time(call) -> float | None:
    """CPU seconds `call()` takes if it is accepted (None if it raises a ValueError or TypeError,
    as bad input must); inf if it runs past LIMIT."""
    signal.signal(signal.SIGALRM, _stop)
    signal.setitimer(signal.ITIMER_REAL, LIMIT)
    start = time.process_time()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            call()
    except (ValueError, TypeError):
        return None
    except TooLong:
        return float("inf")
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
    return time.process_time() - start


def _probes(function, params: dict, largest: int = LARGEST):
    """(description, call) pairs for one callable of the sweep: its valid call, each size
    parameter pushed up alone and all together (to 2^p for each p of EXPONENTS up to
    `largest`), and its arrays scaled up together (to at most 2^largest elements)."""
    from test_bad_inputs import SIZE

    valid = {p: v for p, (v, _) in params.items()}
    yield "valid arguments", lambda: function(**valid)
    sizes = [p for p, (_, kind) in params.items() if kind is SIZE]
    most = min(MOST_ELEMENTS, 2**largest)
    for value in (2**p for p in EXPONENTS if p <= largest):
        for p in sizes:
            yield f"{p}={value}", lambda p=p, value=value: function(**{**valid, p: value})
        if len(sizes) > 1:
            yield f"{', '.join(sizes)}={value}", lambda value=value: function(**{**valid, **dict.fromkeys(sizes, value)})
    arrays = [p for p, (v, _) in params.items() if isinstance(v, np.ndarray) and v.ndim >= 1]
    for scale in SCALES if arrays else ():
        shapes = {p: tuple(n * scale for n in valid[p].shape) for p in arrays}
        if max(np.prod(shape) for shape in shapes.values()) <= most:
            yield (f"{', '.join(arrays)} x{scale} per axis",
                   lambda shapes=shapes: function(**{**valid, **{p: np.ones(shape) for p, shape in shapes.items()}}))


EDGES = {
    # key of the sweep -> calls at the work limits (and those the issue-26 probe found slow)
    "simulate.naive_gemm": [("1 x 8192 @ 8192 x 1", lambda: gm.simulate.naive_gemm(np.ones((1, 8192)), np.ones((8192, 1)))),
                            ("1 x 2^20 @ 2^20 x 1", lambda: gm.simulate.naive_gemm(np.ones((1, 2**20)), np.ones((2**20, 1)))),
                            ("406 x 406 @ 406 x 406", lambda: gm.simulate.naive_gemm(np.ones((406, 406)), np.ones((406, 406))))],
    "simulate.tiled_gemm": [("256^3, 16 x 16 x 16 tiles", lambda: gm.simulate.tiled_gemm(
        np.ones((256, 256)), np.ones((256, 256)), (16, 16, 16), (1, 1))),
        ("128 x 4096 @ 4096 x 128, 128 x 128 x 8 tiles", lambda: gm.simulate.tiled_gemm(
            np.ones((128, 4096)), np.ones((4096, 128)), (128, 128, 8), (8, 8)))],
    "simulate.transpose": [("1024^2", lambda: gm.simulate.transpose(np.ones((1024, 1024))))],
    "simulate.flash_attention": [("seq 4096, 64 x 64 blocks", lambda: gm.simulate.flash_attention(
        *(np.ones((1, 1, 4096, 4)),) * 3, block=(64, 64)))],
    "simulate.strided_read": [("2^18 elements, stride 1", lambda: gm.simulate.strided_read(np.ones(2**18), 1))],
    "simulate.online_softmax": [("1 x 4096, block 1", lambda: gm.simulate.online_softmax(np.ones((1, 4096)), 1))],
    "waves.gemm_hbm": [("2^17 x 2^17, 128 x 128 tiles", lambda: gm.waves.gemm_hbm(2**17, 2**17, 128, block=(128, 128))),
                       ("2^17 x 2^17, grouped", lambda: gm.waves.gemm_hbm(2**17, 2**17, 128, order="grouped", group=3)),
                       ("2^17 x 2^17, 1 block per SM on the T4", lambda: gm.waves.gemm_hbm(
                           2**17, 2**17, 128, gpu="T4", blocks_per_sm=1)),
                       ("2^18 x 2^18 (refused)", lambda: gm.waves.gemm_hbm(2**18, 2**18, 128, block=(128, 128)))],
    "decode.gemm_critical_batch": [("largest=2^24", lambda: gm.decode.gemm_critical_batch("A100-40GB", 4096, "int4",
                                                                                           largest=2**24))],
    "tiles.search": [("2^20 x 2^20 x 2^20", lambda: gm.tiles.search("A100-40GB", 2**20, 2**20, 2**20))],
}


def _exercise_probes():
    """(key, description, call) for every widget exercise: built for every combination of the
    values its menus offer for the parameters named like a control, and rendered for every state."""
    for make in gm.course.widget_exercises():
        key = f"course.{make.__module__.split('.')[-1]}.{make.__name__}"
        controls = make().controls
        named = [p for p in inspect.signature(make).parameters if p in controls]
        for values in itertools.product(*(controls[p] for p in named)):
            args = dict(zip(named, values))
            yield key, ", ".join(f"{p}={v!r}" for p, v in args.items()) or "no arguments", lambda make=make, args=args: make(
                **args)
        exercise = make()
        for values in itertools.product(*controls.values()):
            state = dict(zip(controls, values))
            yield f"{key}.render", ", ".join(f"{p}={v!r}" for p, v in state.items()), lambda render=exercise.render, state=state: render(**state)


def probes(largest: int = LARGEST) -> list:
    """(key, description, call) of every call the sweep times, with sizes up to 2^largest: the
    bad-input sweep's callables (`_probes`), the EDGES (calls at the work limits, so only in
    the full sweep, largest = LARGEST) and every widget exercise (which takes no size)."""
    from test_bad_inputs import SIGNATURES

    calls = [(key, what, call) for key, (function, params) in SIGNATURES.items()
             for what, call in _probes(function, params, largest)]
    if largest >= LARGEST:
        calls += [(key, what, call) for key, edges in EDGES.items() for what, call in edges]
    return calls + list(_exercise_probes())


def slowest_calls(largest: int = LARGEST) -> dict:
    """key -> (CPU seconds, description, calls timed) of the slowest accepted call of each
    function, over `probes(largest)`. A call that raises anything but a ValueError or
    TypeError (a refusal) stops the sweep with an error naming the call."""
    slowest, timed = {}, collections.Counter()
    for key, what, call in probes(largest):
        try:
            seconds = cpu_time(call)
        except Exception as err:
            raise RuntimeError(f"{key}({what}) raised {type(err).__name__}: {err}") from err
        if seconds is None:
            continue
        timed[key] += 1
        if seconds > slowest.get(key, (-1.0,))[0]:
            slowest[key] = (seconds, what)
    return {key: (seconds, what, timed[key]) for key, (seconds, what) in slowest.items()}


def report_calls(largest: int = LARGEST):
    """Print the slowest accepted call of each function, then of each module (sizes up to 2^largest)."""
    slowest = slowest_calls(largest)
    width = max(map(len, slowest))
    print(f"{'function':<{width}}  {'calls':>5}  {'slowest':>9}  slowest accepted call")
    for key, (seconds, what, timed) in sorted(slowest.items()):
        print(f"{key:<{width}}  {timed:>5}  {_seconds(seconds):>9}  {what}")
    modules = {}
    for key, (seconds, what, _) in slowest.items():
        module = key.rsplit(".", 2)[0] if key.endswith(".render") else key.rsplit(".", 1)[0]
        if seconds > modules.get(module, (-1.0,))[0]:
            modules[module] = (seconds, f"{key}({what})")
    print(f"\n{'module':<26}  {'slowest':>9}  call")
    for module, (seconds, what) in sorted(modules.items()):
        print(f"{module:<26}  {_seconds(seconds):>9}  {what}")
    print(f"\n{sum(t for _, _, t in slowest.values())} accepted calls timed; the slowest took "
          f"{_seconds(max(s for s, _, _ in slowest.values()))} of CPU time")


def _seconds(seconds: float) -> str:
    return f"> {LIMIT:g} s" if seconds == float("inf") else gm.fmt_time(seconds)


TARGETS = {"predict": 0.1, "trace": 10.0, "chapter": 5.0}
"""Seconds each timed item should take here: the sweep well under 100 ms; a lab trace of a
course-sized kernel under 10 s; each learners' notebook under 5 s, its kernel's start included."""


TASK_MS = 200
"""The most main-thread time one task of a page may take while it loads on a phone (ms)."""


def longest_task_ms(browser, base: str, rel: str) -> float:
    """The most time (ms) the main thread spent running one task while `rel` loaded at 390 px, its
    first formula brought into view. The time is the thread's own (the trace's `tdur`), not the
    wall time the Long Tasks API reports, which another busy process stretches."""
    page, _, _ = tb.open_page(browser, f"{base}/{rel}", tb.PHONE, traced=True, wait_until="networkidle")
    page.wait_for_timeout(300)  # the players draw their first frames
    tb.read_math(page)
    page.wait_for_timeout(300)
    events = json.loads(browser.stop_tracing())["traceEvents"]
    page.close()
    main = {(e["pid"], e["tid"]) for e in events
            if e.get("name") == "thread_name" and e["args"].get("name") == "CrRendererMain"}
    tasks = [e["tdur"] / 1e3 for e in events
             if e.get("name") == "ThreadControllerImpl::RunTask" and (e["pid"], e.get("tid")) in main and "tdur" in e]
    if not tasks:
        raise RuntimeError("Chromium's trace holds no timed task of a page's main thread")
    return max(tasks)


def report_site(html: pathlib.Path, repeats: int):
    """Each page of the built book `html`: the median of its longest task over `repeats` loads."""
    from playwright.sync_api import sync_playwright

    handler = functools.partial(tb.QuietHandler, directory=str(html))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=conftest.CHROMIUM, args=conftest.ARGS)
        rows = [(rel, statistics.median(longest_task_ms(browser, base, rel) for _ in range(repeats)))
                for rel in tb.pages(html)]
        browser.close()
    server.shutdown()
    width = max(len(rel) for rel, _ in rows)
    print(f"{'page (390 px)':<{width}}  {'longest task':>12}  {'target':>7}")
    for rel, ms in rows:
        print(f"{rel:<{width}}  {ms:>9.0f} ms  {TASK_MS:>4} ms{'  OVER' if ms >= TASK_MS else ''}")


def run_chapter(path: pathlib.Path):
    """Execute one chapter's notebook (`notebooks/`, as the tests and Colab run it)."""
    nb = nbformat.read(path, as_version=4)
    NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}).execute()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5, help="runs per item (median reported)")
    parser.add_argument("--calls-only", action="store_true", help="only the slowest accepted call of each function")
    parser.add_argument("--lab-only", action="store_true", help="only the kernel lab's speed (accesses per CPU-second, "
                        "each trace's CPU time)")
    parser.add_argument("--site", type=pathlib.Path, metavar="DIR", help="only the built book DIR's pages' longest tasks")
    parser.add_argument("--largest", type=int, default=LARGEST, choices=range(1, LARGEST + 1), metavar="P",
                        help=f"push sizes up to 2^P only (default {LARGEST}; below it, no edge calls)")
    args = parser.parse_args()
    if args.site:
        return report_site(args.site.resolve(), args.repeats)
    if args.lab_only:
        return report_lab()
    print("Each chapter's main line (tests/prose.py), beside the limits of tests/test_prose.py:")
    print(prose.table())
    print()
    report_calls(args.largest)
    if args.calls_only:
        return
    print()
    rows = [("predict, 10^5 GEMM configurations", median_time(sweep, max(args.repeats, 5)), TARGETS["predict"])]
    accesses = lab_trace()  # builds the traced executable
    seconds = median_time(lab_trace, args.repeats)
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024  # KiB on Linux
    rows.append((f"lab: trace flash attention, {accesses / seconds:,.0f} accesses/s, peak {peak:.0f} MiB", seconds,
                 TARGETS["trace"]))
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        rows.append((f"chapter {path.stem}", median_time(lambda: run_chapter(path), args.repeats), TARGETS["chapter"]))
    width = max(len(r[0]) for r in rows)
    print(f"{'what':<{width}}  {'median':>9}  {'target':>9}")
    for what, seconds, target in rows:
        print(f"{what:<{width}}  {gm.fmt_time(seconds):>9}  {gm.fmt_time(target):>9}{'  OVER' if seconds > target else ''}")
    print()
    report_lab()

if __name__ == "__main__":
    main()
