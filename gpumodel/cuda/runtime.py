"""The GPU side: find a GPU through CuPy, compile `kernels/*.cu` with NVRTC, run and time
the launch plans of `gpumodel.launches`, and describe the live device as a `GPU` record
so the model can be held against the measurement. Chapters 1 to 5.

CuPy is imported lazily and only here. CuPy installed without a driver (a laptop, a CPU
Colab runtime) is the common case: `gpu_status()` then says why, once, and the chapters
take the CPU path.
"""

from __future__ import annotations

import ctypes
import logging
import math
import os
import statistics
import sys
from dataclasses import dataclass

import numpy as np

from .. import presets
from ..hardware import GPU, Fact
from .compiler import COMPILE_OPTIONS, kernel_source

SOURCE = "cuda_runtime_api"
"""Facts read from the device cite the CUDA Runtime API (cudaDeviceGetAttribute)."""

_status: tuple | None = None
log = logging.getLogger("gpumodel")


def gpu_status() -> tuple[bool, str]:
    """(True, device name) when CuPy imports and a CUDA device answers; otherwise (False,
    why not). Checked once per process."""
    global _status
    if _status is None:
        _status = _probe()
    return _status


CUDA_DRIVER = {"nt": "nvcuda.dll"}.get(os.name, "libcuda.so.1")
"""The CUDA driver's library, which CuPy loads to reach a device (no wheel brings it: the driver does)."""


def _driver_loads() -> bool:
    """Whether the CUDA driver's library (`CUDA_DRIVER`) loads in this process: where it does
    not, no device can answer, and the probe need not import CuPy, which takes 1 to 3 s of a
    chapter's run on a CPU machine."""
    try:
        ctypes.CDLL(CUDA_DRIVER)
    except OSError:
        return False
    return True


def _probe() -> tuple[bool, str]:
    if "cupy" not in sys.modules and not _driver_loads():  # CuPy, or a stand-in, already imported is asked
        return False, f"no CUDA driver here ({CUDA_DRIVER} does not load), so no GPU can answer"
    try:
        import cupy
    except ImportError:
        return False, "CuPy is not installed"
    except Exception as err:  # a broken CUDA install can fail at import  # noqa: BLE001
        return False, f"CuPy failed to import ({type(err).__name__}: {err})"
    try:
        if cupy.cuda.runtime.getDeviceCount() < 1:
            return False, "CuPy found no CUDA device"
        props = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)
        cupy.zeros(1).sum().item()  # a device that answers
    except Exception as err:  # CUDARuntimeError, CUDADriverError, ...  # noqa: BLE001
        return False, f"CuPy is installed but no GPU answers ({_why(err)})"
    name = props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])
    try:  # the references and the chapters' cuBLAS comparisons need it
        ones = cupy.ones((2, 2), cupy.float32)
        (ones @ ones).sum().item()
    except Exception as err:  # ImportError when libcublas is missing  # noqa: BLE001
        return False, f"{name} answers, but cuBLAS does not ({_why(err)}): pip install nvidia-cublas-cu12"
    try:  # NVRTC 12.2 and later need the CUDA runtime headers, which CuPy does not bring
        cupy.RawModule(code=kernel_source("elementwise.cu"), options=COMPILE_OPTIONS).get_function("relu")
    except Exception as err:  # CompileException  # noqa: BLE001
        return False, f"{name} answers, but CuPy cannot compile a kernel ({_why(err)}): pip install nvidia-cuda-runtime-cu12"
    return True, name


def _why(err: Exception) -> str:
    """An exception in a few words: its type and the message's first clause."""
    return f"{type(err).__name__}: {str(err).split(':')[0]}"


def have_gpu() -> bool:
    """True when a GPU answers. Why not, when none does, goes to the log (logger
    "gpumodel"), not to the reader: the chapters say it once (`gm.book.chapter.gpu_notice`)."""
    ok, why = gpu_status()
    if not ok:
        log.info("no GPU: %s", why)
    return ok


def gpu_from_attributes(device_name: str, capability, attributes: dict, memory_bytes: int) -> GPU:
    """A `GPU` record of a live device from its CUDA attributes (`cupy.cuda.Device().attributes`:
    clocks in kHz, bus width in bits). Figures the device cannot report (L2 bandwidth,
    tensor peaks, latencies) come from the preset it stands for (`gpumodel.presets.match_device`)
    and say which and why."""
    cap = presets.capability(tuple(int(c) for c in capability))
    chosen, how = presets.match_device(device_name, cap.version)
    base = presets.gpu(chosen)
    where = f"cudaDeviceGetAttribute on {device_name}"

    def read(value, unit, note=""):
        return Fact(float(value), unit, "measured", SOURCE, where, note)

    def borrowed(fact):
        return Fact(fact.value, fact.unit, "estimate", fact.source, fact.where,
                    f"not reported by the device; {base.name}'s figure ({how})")

    clock_khz = attributes.get("ClockRate", 0)
    clock = read(clock_khz * 1e3, "Hz", "maximum clock the device reports") if clock_khz else borrowed(base.clock)
    mem_khz, bus_bits = attributes.get("MemoryClockRate", 0), attributes.get("GlobalMemoryBusWidth", 0)
    hbm = (read(2 * mem_khz * 1e3 * bus_bits / 8, "B/s", "2 x memory clock x bus width (double data rate)")
           if mem_khz and bus_bits else borrowed(base.hbm_bandwidth))
    l2 = base.l2_bandwidth
    if l2.unit != "B/clk":  # per clock, so that it scales with the live clock
        l2 = Fact(base.l2_bytes_per_clock, "B/clk", "derived", l2.source, l2.where, f"{base.name}'s, per clock")
    return GPU(
        name=f"{device_name} (live)",
        capability=cap,
        sms=read(attributes["MultiProcessorCount"], "SM"),
        clock=clock,
        l2_bandwidth=borrowed(l2),
        hbm_bandwidth=hbm,
        l2_capacity=read(attributes["L2CacheSize"], "B"),
        hbm_capacity=read(memory_bytes, "B"),
        memory=base.memory,
        tensor={k: borrowed(v) for k, v in base.tensor.items()},
        latency=dict(base.latency),
    )


def device_info() -> dict:
    """Name, compute capability, driver and CUDA runtime versions, CuPy version."""
    import cupy

    dev = cupy.cuda.Device()
    props = cupy.cuda.runtime.getDeviceProperties(dev.id)
    name = props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])
    return {
        "name": name,
        "compute_capability": [int(props["major"]), int(props["minor"])],
        "driver_version": cupy.cuda.runtime.driverGetVersion(),
        "cuda_runtime_version": cupy.cuda.runtime.runtimeGetVersion(),
        "cupy_version": cupy.__version__,
    }


def live_gpu(clock_hz: float | None = None) -> GPU:
    """The GPU this process runs on, as a `GPU` record (see `gpu_from_attributes`); at
    `clock_hz` (an SM clock observed under load, see `NvmlSampler`) instead of the maximum
    the device reports, when given."""
    import dataclasses

    import cupy

    info = device_info()
    _, total = cupy.cuda.runtime.memGetInfo()
    g = gpu_from_attributes(info["name"], info["compute_capability"], cupy.cuda.Device().attributes, total)
    if clock_hz:
        g = dataclasses.replace(g, clock=Fact(float(clock_hz), "Hz", "measured", SOURCE, "NVML, nvmlDeviceGetClockInfo",
                                                "SM clock observed under load"))
    return g


class NvmlSampler:
    """The SM clock (Hz) and board power (W) of CuPy's device, read through NVML
    (`nvidia-ml-py`) every `period_s` seconds in a background thread while the `with` block
    runs (a timed loop): `median()` is {"sm_clock_hz", "power_w", "nvml_samples"}, empty
    where NVML is not installed or does not answer. The device is found by its PCI bus id,
    as NVML's index need not be CUDA's (CUDA_VISIBLE_DEVICES). Under a long load a GPU can
    run well below the maximum clock it reports (a T4 at 70 W sustains about 1.1 to 1.3 GHz
    of 1.59)."""

    def __init__(self, period_s: float = 0.01):
        import threading

        self.period_s, self.samples, self._stop = period_s, [], threading.Event()

    def __enter__(self):
        import threading

        import cupy

        try:
            import pynvml

            pynvml.nvmlInit()
            self._nvml = pynvml
            self._handle = pynvml.nvmlDeviceGetHandleByPciBusId(cupy.cuda.Device().pci_bus_id)
        except Exception as err:  # ImportError, NVMLError  # noqa: BLE001
            log.info("no SM clock from NVML: %s", _why(err))
            self._nvml = None
            return self
        self._read()  # one sample as the loop starts, however short it is
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def _read(self):
        nvml, h = self._nvml, self._handle
        self.samples.append((1e6 * nvml.nvmlDeviceGetClockInfo(h, nvml.NVML_CLOCK_SM), nvml.nvmlDeviceGetPowerUsage(h) / 1e3))

    def _run(self):
        while not self._stop.wait(self.period_s):
            self._read()

    def __exit__(self, *exc):
        if self._nvml is not None:
            self._stop.set()
            self._thread.join()
            self._nvml.nvmlShutdown()
        return False

    def median(self) -> dict:
        if not self.samples:
            return {}
        clocks, watts = zip(*self.samples)
        return {"sm_clock_hz": statistics.median(clocks), "power_w": statistics.median(watts), "nvml_samples": len(self.samples)}


def environment() -> dict:
    """What a measurement depends on: the device (`device_info`), cuBLAS's version, the
    compute type CuPy's FP32 matmuls use (CUPY_TF32=1 makes them TF32, several times
    faster, so a record says which: CuPy's rule, any positive integer), and the maximum SM clock the device reports."""
    import os

    import cupy

    info = device_info()
    try:
        from cupy_backends.cuda.libs import cublas

        info["cublas_version"] = cublas.getVersion(cupy.cuda.device.get_cublas_handle())
    except Exception as err:  # noqa: BLE001
        info["cublas_version"] = f"unavailable ({_why(err)})"
    info["matmul_compute_type"] = "tf32" if int(os.environ.get("CUPY_TF32", "0")) > 0 else "fp32"
    info["max_sm_clock_hz"] = 1e3 * cupy.cuda.Device().attributes.get("ClockRate", 0)
    return info


def kernel_attributes(runner, file: str, function: str) -> dict:
    """What the driver says of a compiled kernel (cuFuncGetAttribute, through CuPy's
    `RawKernel`): registers per thread, local memory per thread (spills, bytes), static
    shared memory per block (bytes), and the most threads a block may have."""
    f = runner.function(file, function)
    return {"registers": int(f.num_regs), "local_bytes": int(f.local_size_bytes), "smem_bytes": int(f.shared_size_bytes),
            "max_threads_per_block": int(f.max_threads_per_block)}


class Runner:
    """Compiles each kernel file once (CuPy NVRTC) and runs or times launch plans."""

    def __init__(self):
        import cupy

        self.cp = cupy
        self.modules: dict = {}
        self.kernels: dict = {}

    def function(self, file: str, kernel: str):
        """The compiled `kernel` of `file`, looked up once (a driver call) and kept."""
        if file not in self.modules:
            self.modules[file] = self.cp.RawModule(code=kernel_source(file), options=COMPILE_OPTIONS)
        if (file, kernel) not in self.kernels:
            self.kernels[file, kernel] = self.modules[file].get_function(kernel)
        return self.kernels[file, kernel]

    def buffers(self, plan) -> dict:
        cp = self.cp
        out = {name: cp.asarray(a) for name, a in plan.inputs.items()}
        out.update({name: cp.zeros(shape, cp.float32) for name, shape in plan.outputs.items()})
        return out

    def launch(self, plan, buffers: dict) -> None:
        for step in plan.steps:
            args = tuple(buffers[a] if isinstance(a, str) else a for a in step.args)
            self.function(plan.file, step.kernel)(tuple(step.grid), tuple(step.block), args)

    def check(self, plan, buffers: dict, chunk: int = 2**24) -> float:
        """Run `plan` once; return the largest error against its CuPy reference (raises
        AssertionError when outside the plan's tolerance). The result is compared in slices
        of `chunk` elements, so no float64 copy of a large result is held at once."""
        self.launch(plan, buffers)
        inputs = {name: buffers[name] for name in plan.inputs}
        want = plan.reference(self.cp, inputs).ravel()
        got = buffers[plan.result].ravel()
        err, ok = 0.0, True
        for start in range(0, got.size, chunk):
            g, w = got[start:start + chunk].astype(self.cp.float64), want[start:start + chunk]
            err = max(err, float(self.cp.abs(g - w).max()))
            ok = ok and bool(self.cp.allclose(g, w, rtol=plan.rtol, atol=plan.atol))
        assert ok, f"{plan.label}: result differs from the reference by up to {err:.3g}"
        return err

    def time(self, launch, repeats: int = 10, warmup: int = 2, flush: bool = True, batch=None) -> "Timing":
        """Seconds per `launch()`, over `repeats` samples after `warmup` runs. A sample is
        enough back-to-back launches between one pair of CUDA events for at least
        `MIN_SAMPLE_S` of GPU work, so that launch gaps do not count; `batch(launches)`, where
        given, returns one function that makes those launches (a CUDA graph, see `time_plan`).
        Before each sample (unless `flush` is False, to measure data that stays in L2) a read
        of twice the L2 evicts what the last sample left there, without dirtying it."""
        cp = self.cp
        for _ in range(warmup):
            launch()
        start, end = cp.cuda.Event(), cp.cuda.Event()

        def sample(run, launches: int) -> float:
            if flush:
                self._flush()
            start.record()
            run()
            end.record()
            end.synchronize()
            return cp.cuda.get_elapsed_time(start, end) / 1e3 / launches

        launches = launches_per_sample(sample(launch, 1))

        def many():
            for _ in range(launches):
                launch()

        run = batch(launches) if batch is not None and launches > 1 else many
        times = sorted(sample(run, launches) for _ in range(repeats))
        return Timing(statistics.median(times), times[0], times[-1], launches, repeats)

    def time_plan(self, plan, buffers: dict, repeats: int = 10, warmup: int = 2) -> "Timing":
        """Seconds per run of `plan` (see `time`). Short runs are batched in one CUDA graph
        (one host launch a sample, so host launch gaps do not count), cycling over copies of
        the buffers that together hold twice the L2 or more, so that each run reads its
        inputs from HBM, as after a flush, and not from the L2 the last run left them in."""
        cp = self.cp
        nbytes = sum(b.nbytes for b in buffers.values())
        l2 = cp.cuda.Device().attributes["L2CacheSize"]
        copies = [buffers]

        def batch(launches: int):
            copies.extend({n: b.copy() for n, b in buffers.items()}
                          for _ in range(min(launches, -(-2 * l2 // nbytes)) - 1))
            stream = cp.cuda.Stream(non_blocking=True)
            with stream:
                stream.begin_capture()
                for i in range(launches):
                    self.launch(plan, copies[i % len(copies)])
                graph = stream.end_capture()
            return graph.launch  # on the current stream, where the timing events are recorded

        try:
            return self.time(lambda: self.launch(plan, buffers), repeats, warmup, batch=batch)
        finally:
            copies.clear()

    def launch_costs(self, kernels: int = 1000, repeats: int = 5) -> dict:
        """Seconds per kernel, on the host's clock, of `kernels` launches of a one-block
        kernel (relu on 32 floats) from Python, one at a time (`"stream"`) and replayed as one
        captured CUDA graph (`"graph"`): the median of `repeats` runs, each from the first
        launch to the end of the last kernel. Chapter 7 (the overhead regime)."""
        import time

        cp = self.cp
        relu = self.function("elementwise.cu", "relu")
        x, y = cp.ones(32, cp.float32), cp.zeros(32, cp.float32)
        args = (x, y, np.int32(32))

        def one_by_one():
            for _ in range(kernels):
                relu((1,), (32,), args)

        stream = cp.cuda.Stream(non_blocking=True)
        with stream:
            stream.begin_capture()
            one_by_one()
            graph = stream.end_capture()

        def seconds(run) -> float:
            run()  # warm-up
            cp.cuda.Device().synchronize()
            times = []
            for _ in range(repeats):
                start = time.perf_counter()
                run()
                cp.cuda.Device().synchronize()
                times.append((time.perf_counter() - start) / kernels)
            return statistics.median(times)

        return {"stream": seconds(one_by_one), "graph": seconds(graph.launch), "kernels": kernels}

    def _flush(self) -> None:
        """Read (never write) a buffer twice the L2's size."""
        if not hasattr(self, "_scratch"):
            l2 = self.cp.cuda.Device().attributes["L2CacheSize"]
            self._scratch = self.cp.ones(2 * l2 // 4 + 1, self.cp.float32)
        self._scratch.sum()


MIN_SAMPLE_S = 100e-6
"""The least GPU work one timed sample holds (seconds): launch gaps of a few microseconds
are then a few percent at most."""


def launches_per_sample(one_launch_s: float) -> int:
    """Back-to-back launches per timed sample for a kernel that takes `one_launch_s`."""
    return max(1, math.ceil(MIN_SAMPLE_S / max(one_launch_s, 1e-9) - 1e-9))


@dataclass(frozen=True)
class Timing:
    """Seconds per launch: the median over `samples` samples, the fastest and slowest, and
    the `launches` timed back to back in each sample."""

    median_s: float
    min_s: float
    max_s: float
    launches: int
    samples: int


def l2_persistence_calls() -> dict | None:
    """Chapter 4: which CUDA runtime calls behind an L2 persisting access window CuPy
    exposes (no GPU needed): {"deviceSetLimit": bool, "streamSetAttribute": bool}, or None
    where CuPy does not import."""
    try:
        import cupy.cuda.runtime as rt
    except Exception:  # noqa: BLE001  (no CuPy, or a broken CUDA install)
        return None
    return {name: hasattr(rt, name) for name in ("deviceSetLimit", "streamSetAttribute")}


SWEEP_BYTES_PER_LAUNCH = 256 * 1024**2
"""Bytes one sweep launch reads (a small buffer is read many times over), so that each
launch's own start and tail are a small part of it."""


def sweep_sizes(largest: int) -> np.ndarray:
    """The sweep's working sets in bytes, two per doubling up to `largest` (about 8 x the
    L2: far enough past it to see HBM), from 1 MiB or less."""
    from .cpu_timing import working_sets

    largest = int(largest)
    return working_sets(min(1024**2, largest // 8), largest)


def sweep_passes(nbytes: int, per_launch: int = SWEEP_BYTES_PER_LAUNCH) -> int:
    """How many times one launch reads a buffer of `nbytes`: enough to read `per_launch`."""
    return max(1, -(-int(per_launch) // int(nbytes)))


def gpu_sweep(sizes=None, budget_s: float = 30.0, repeats: int = 5,
              per_launch: int = SWEEP_BYTES_PER_LAUNCH) -> tuple[np.ndarray, np.ndarray]:
    """Read bandwidth of this GPU against working set: `kernels/sweep.cu` reads a buffer of
    each size (default: `sweep_sizes` up to 8 x the L2) `sweep_passes` times a launch, warm
    (data that fits stays in L2). Stops after the size that passes `budget_s` seconds of
    wall time. Returns (sizes in bytes, bandwidth in bytes/s) of the sizes measured. Needs
    a GPU."""
    import time

    from .plans import plan_sweep

    runner = Runner()
    l2 = runner.cp.cuda.Device().attributes["L2CacheSize"]
    sizes = sweep_sizes(8 * l2) if sizes is None else np.asarray(sizes, dtype=np.int64)
    started, bandwidth = time.perf_counter(), []
    for size in sizes:
        plan = plan_sweep(int(size) // 4, sweep_passes(size, per_launch))
        bufs = runner.buffers(plan)
        seconds = runner.time(lambda: runner.launch(plan, bufs), repeats=repeats, flush=False).median_s
        bandwidth.append(plan.sizes["bytes_read"] / seconds)
        bufs.clear()  # free this size's buffer before the next is allocated
        if time.perf_counter() - started > budget_s:
            log.info("sweep stopped at %d bytes: its %g s budget is spent", size, budget_s)
            break
    return sizes[:len(bandwidth)], np.asarray(bandwidth, dtype=float)


def run_plan(runner: Runner, plan, device: GPU, repeats: int = 10) -> dict:
    """Check `plan` against its reference and time it on this GPU, with the model's
    prediction on `device` and what the kernel achieved (FLOP/s, and HBM bytes/s by the
    model's count). GEMMs are also timed through cuBLAS (`cupy.matmul`), standard attention
    through cuBLAS and a CuPy softmax. Seconds. One row of a validation record; the buffers
    are freed after."""
    from ..model import predict

    bufs = runner.buffers(plan)
    try:
        err = runner.check(plan, bufs)
        t = runner.time_plan(plan, bufs, repeats)
        row = {"kernel": plan.kernel, "file": plan.file, "sizes": plan.sizes, "measured_s": t.median_s,
               "spread_s": [t.min_s, t.max_s], "launches_per_sample": t.launches, "max_abs_error": err}
        if plan.workload is not None:
            p = predict(plan.workload, device)
            row.update(predicted_s=float(p.time), bound=str(p.bound),
                       error_pct=100 * (t.median_s - float(p.time)) / float(p.time),
                       achieved_flops=float(plan.workload.flops) / t.median_s,
                       achieved_hbm_Bps=float(plan.workload.bytes["hbm"]) / t.median_s)
        library = _library_baseline(runner.cp, plan, bufs)
        if library is not None:
            row["cublas_s"] = runner.time(library, repeats).median_s
            row["pct_of_cublas"] = 100 * row["cublas_s"] / t.median_s
        return row
    finally:
        bufs.clear()
        runner.cp.get_default_memory_pool().free_all_blocks()


def _library_baseline(cp, plan, bufs):
    """The same work through cuBLAS, as a function to time, where the plan has one."""
    from .plans import attention_reference

    if plan.file == "gemm.cu":
        c = cp.empty_like(bufs["C"])
        return lambda: cp.matmul(bufs["A"], bufs["B"], out=c)
    if plan.kernel == "attention_standard":
        inputs = {name: bufs[name] for name in "QKV"}
        return lambda: attention_reference(cp, inputs, "float32")
    return None


def runs(plans) -> list:
    """Each plan checked and timed now (`run_plan`, with the GPU's name) where a GPU answers,
    else the runs recorded for its kernel at its sizes (`recorded_runs.rows`). Chapters 3 to 5."""
    from . import recorded_runs

    plans = list(plans)
    if have_gpu():
        runner, device = Runner(), live_gpu()
        return [{**run_plan(runner, plan, device), "gpu": device.name} for plan in plans]
    return [r for plan in plans for r in recorded_runs.rows(plan.kernel) if r["sizes"] == plan.sizes]


def gemm_runs(kernel: str, size: int = 4096) -> list:
    """GEMM `kernel` at size^3: measured now where a GPU answers, else recorded (see `runs`).
    Chapter 3."""
    from .plans import plan_gemm

    return runs([plan_gemm(kernel, size, size, size)])
