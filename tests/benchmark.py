"""`make bench`: times the model, every public function and the chapters (a benchmark, not a test).

Prints, first, the slowest accepted call of every public function (target: under a second on
one core, CPU time): each callable of the bad-input sweep (`test_bad_inputs.SIGNATURES`) with its
valid arguments, with each size pushed from 2^10 to 2^53 (one at a time and all together), its
arrays scaled up together, the edge calls the issue-26 probe found slow, every widget exercise
built for every value its menus offer and rendered for every state; then the slowest per module.
Then a table of medians over repeats: a 10^5-configuration `predict` sweep (target: well under
100 ms on one core), the kernel lab's traced run of the flash-attention kernel (accesses per
second and the run's peak memory; built once before timing) and the execution of each chapter
as a notebook, kernel start included; each beside its target (`TARGETS`), OVER where it misses.
Run as `python tests/benchmark.py [--repeats N] [--calls-only] [--largest P]`;
`tests/test_benchmark_sweep.py` runs the same sweep with sizes up to 2^12.
"""

from __future__ import annotations

import argparse
import collections
import inspect
import itertools
import pathlib
import resource
import signal
import statistics
import time
import warnings

import nbformat
import numpy as np
from nbclient import NotebookClient

import gpumodel as gm

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
    from gpumodel.lab.tracer import trace_plan

    traces = trace_plan(plans.plan_attention("flash", 1, 256))
    return sum(s.lanes for t in traces for s in t.sites)


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
    "tensor_cores.critical_batch": [("largest=2^24", lambda: gm.tensor_cores.critical_batch("A100-40GB", 4096, "int4",
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


TARGETS = {"predict": 0.1, "trace": 10.0, "chapter": 8.0}
"""Seconds each timed item should take here: the sweep well under 100 ms; a lab trace of a
course-sized kernel under 10 s; each learners' notebook under 8 s, its kernel's start included."""


def run_chapter(path: pathlib.Path):
    """Execute one chapter's notebook (`notebooks/`, as the tests and Colab run it)."""
    nb = nbformat.read(path, as_version=4)
    NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}).execute()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5, help="runs per item (median reported)")
    parser.add_argument("--calls-only", action="store_true", help="only the slowest accepted call of each function")
    parser.add_argument("--largest", type=int, default=LARGEST, choices=range(1, LARGEST + 1), metavar="P",
                        help=f"push sizes up to 2^P only (default {LARGEST}; below it, no edge calls)")
    args = parser.parse_args()
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

if __name__ == "__main__":
    main()
