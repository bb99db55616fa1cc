"""The GPU side: find a GPU through CuPy, compile `kernels/*.cu` with NVRTC, run and time
the launch plans of `gpumodel.launches`, and describe the live device as a `GPU` record
so the model can be held against the measurement. Chapters 1 to 5.

CuPy is imported lazily and only here. CuPy installed without a driver (a laptop, a CPU
Colab runtime) is the common case: `gpu_status()` then says why, once, and the chapters
take the CPU path.
"""

from __future__ import annotations

import logging
import statistics

import numpy as np

from . import presets
from .compiler import COMPILE_OPTIONS, kernel_source
from .hardware import GPU, Fact

FAMILY = {(7, 0): "V100", (7, 5): "T4", (8, 0): "A100-40GB", (8, 6): "RTX-A6000", (8, 9): "L4",
          (9, 0): "H100-SXM", (10, 0): "B200", (12, 0): "RTX-4090"}
"""The preset to borrow unpublished figures from when the device's name matches none."""
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


def _probe() -> tuple[bool, str]:
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
        code = str(err).split(":")[0]  # "cudaErrorInsufficientDriver: CUDA driver version is ..."
        return False, f"CuPy is installed but no GPU answers ({type(err).__name__}: {code})"
    name = props["name"]
    return True, name.decode() if isinstance(name, bytes) else str(name)


def have_gpu() -> bool:
    """True when a GPU answers. Why not, when none does, goes to the log (logger
    "gpumodel"), not to the reader: the chapters say it once (`gm.chapter.gpu_notice`)."""
    ok, why = gpu_status()
    if not ok:
        log.info("no GPU: %s", why)
    return ok


def closest_preset(device_name: str, capability: tuple[int, int]) -> str:
    """The preset a device is, by its name ("NVIDIA H100 80GB HBM3" -> "H100-SXM"), else
    the preset of its architecture."""
    name = device_name.upper().replace(" ", "").replace("-", "")
    rules = [("H200", "H200"), ("H100PCIE", "H100-PCIe"), ("H100", "H100-SXM"), ("B200", "B200"),
             ("A10080GB", "A100-80GB"), ("A100SXM480GB", "A100-80GB"), ("A100", "A100-40GB"),
             ("V100", "V100"), ("T4", "T4"), ("L4", "L4"), ("RTX4090", "RTX-4090"), ("A6000", "RTX-A6000")]
    for key, preset in rules:
        if key in name:
            return preset
    return FAMILY.get(tuple(capability), "A100-40GB")


def gpu_from_attributes(device_name: str, capability, attributes: dict, memory_bytes: int) -> GPU:
    """A `GPU` record of a live device from its CUDA attributes (`cupy.cuda.Device().attributes`:
    clocks in kHz, bus width in bits). Figures the device cannot report (L2 bandwidth,
    tensor peaks, latencies) come from the closest preset and say so."""
    cap = presets.capability(tuple(int(c) for c in capability))
    base = presets.gpu(closest_preset(device_name, cap.version))
    where = f"cudaDeviceGetAttribute on {device_name}"

    def read(value, unit, note=""):
        return Fact(float(value), unit, "measured", SOURCE, where, note)

    def borrowed(fact):
        return Fact(fact.value, fact.unit, "estimate", fact.source, fact.where,
                    f"not reported by the device; {base.name}'s figure")

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


def live_gpu() -> GPU:
    """The GPU this process runs on, as a `GPU` record (see `gpu_from_attributes`)."""
    import cupy

    info = device_info()
    _, total = cupy.cuda.runtime.memGetInfo()
    return gpu_from_attributes(info["name"], info["compute_capability"], cupy.cuda.Device().attributes, total)


class Runner:
    """Compiles each kernel file once (CuPy NVRTC) and runs or times launch plans."""

    def __init__(self):
        import cupy

        self.cp = cupy
        self.modules: dict = {}

    def function(self, file: str, kernel: str):
        if file not in self.modules:
            self.modules[file] = self.cp.RawModule(code=kernel_source(file), options=COMPILE_OPTIONS)
        return self.modules[file].get_function(kernel)

    def buffers(self, plan) -> dict:
        cp = self.cp
        out = {name: cp.asarray(a) for name, a in plan.inputs.items()}
        out.update({name: cp.zeros(shape, cp.float32) for name, shape in plan.outputs.items()})
        return out

    def launch(self, plan, buffers: dict) -> None:
        for step in plan.steps:
            args = tuple(buffers[a] if isinstance(a, str) else a for a in step.args)
            self.function(plan.file, step.kernel)(tuple(step.grid), tuple(step.block), args)

    def check(self, plan, buffers: dict) -> float:
        """Run `plan` once; return the largest error against its CuPy reference (raises
        AssertionError when outside the plan's tolerance)."""
        self.launch(plan, buffers)
        inputs = {name: buffers[name] for name in plan.inputs}
        want = plan.reference(self.cp, inputs)
        got = buffers[plan.result].astype(self.cp.float64)
        err = float(self.cp.abs(got - want).max())
        ok = bool(self.cp.allclose(got, want, rtol=plan.rtol, atol=plan.atol))
        assert ok, f"{plan.name}: result differs from the reference by up to {err:.3g}"
        return err

    def time(self, launch, repeats: int = 10, warmup: int = 2, flush: bool = True) -> float:
        """Median seconds of `launch()` over `repeats` runs, timed with CUDA events after
        `warmup` runs, with L2 flushed (a buffer twice its size rewritten) before each
        unless `flush` is False (to measure data that stays in L2)."""
        cp = self.cp
        l2 = cp.cuda.Device().attributes["L2CacheSize"]
        scratch = cp.empty(2 * l2 // 4 + 1, cp.float32)
        for _ in range(warmup):
            launch()
        times = []
        start, end = cp.cuda.Event(), cp.cuda.Event()
        for _ in range(repeats):
            if flush:
                scratch.fill(1.0)
            start.record()
            launch()
            end.record()
            end.synchronize()
            times.append(cp.cuda.get_elapsed_time(start, end) / 1e3)
        return statistics.median(times)


def l2_persistence_calls() -> dict | None:
    """Chapter 4: which CUDA runtime calls behind an L2 persisting access window CuPy
    exposes (no GPU needed): {"deviceSetLimit": bool, "streamSetAttribute": bool}, or None
    where CuPy does not import."""
    try:
        import cupy.cuda.runtime as rt
    except Exception:  # noqa: BLE001  (no CuPy, or a broken CUDA install)
        return None
    return {name: hasattr(rt, name) for name in ("deviceSetLimit", "streamSetAttribute")}


def gpu_sweep(sizes=None, passes: int = 20) -> tuple[np.ndarray, np.ndarray]:
    """Read bandwidth of this GPU against working set: `kernels/sweep.cu` reads a buffer of
    each size `passes` times (warm: data that fits stays in L2). Returns (sizes in bytes,
    bandwidth in bytes/s). Needs a GPU (see `have_gpu`)."""
    from .cpu_timing import working_sets
    from .kernel_plans import plan_sweep

    sizes = working_sets(1024**2, 2 * 1024**3) if sizes is None else np.asarray(sizes, dtype=np.int64)
    runner = Runner()
    bandwidth = []
    for size in sizes:
        plan = plan_sweep(int(size) // 4, passes)
        bufs = runner.buffers(plan)
        seconds = runner.time(lambda: runner.launch(plan, bufs), repeats=5, flush=False)
        bandwidth.append(plan.sizes["bytes_read"] / seconds)
        del bufs
    return sizes, np.asarray(bandwidth, dtype=float)


def time_gemm(kernel: str, size: int = 4096) -> dict:
    """Run GEMM `kernel` (an id of `kernel_info.GEMM_LADDER` or "gemm_spill") at size^3 on
    this GPU, check it, and time it and cuBLAS (`cupy.matmul`); with the model's prediction
    on the live device. Seconds. Chapter 3. Needs a GPU."""
    from .kernel_plans import plan_gemm
    from .model import predict

    runner, device = Runner(), live_gpu()
    plan = plan_gemm(kernel, size, size, size)
    bufs = runner.buffers(plan)
    runner.check(plan, bufs)
    seconds = runner.time(lambda: runner.launch(plan, bufs))
    c = runner.cp.empty_like(bufs["C"])
    cublas = runner.time(lambda: runner.cp.matmul(bufs["A"], bufs["B"], out=c))
    return {"gpu": device.name, "kernel": kernel, "sizes": plan.sizes, "measured_s": seconds, "cublas_s": cublas,
            "predicted_s": float(predict(plan.workload, device).time), "flops": float(plan.workload.flops)}


def gemm_runs(kernel: str, size: int = 4096) -> list:
    """GEMM `kernel` at size^3 measured now (see `time_gemm`) where a GPU answers, else the
    runs recorded at that size (`recorded_runs.rows`). Chapter 3."""
    from . import recorded_runs

    if have_gpu():
        return [time_gemm(kernel, size)]
    return [r for r in recorded_runs.rows(kernel) if r["sizes"] == {"m": size, "n": size, "k": size}]
