"""The GPU side: find a GPU through CuPy, compile `kernels/*.cu` with NVRTC, run and time
the launch plans of `gpumodel.launches`, and describe the live device as a `GPU` record
so the model can be held against the measurement. Chapters 1 to 5.

CuPy is imported lazily and only here. CuPy installed without a driver (a laptop, a CPU
Colab runtime) is the common case: `gpu_status()` then says why, once, and the chapters
take the CPU path.
"""

from __future__ import annotations

import statistics
from dataclasses import replace

import numpy as np

from .compiler import COMPILE_OPTIONS, kernel_source
from .hardware import GPU, estimate, measured, spec
from .presets import gpu

FP32_LANES = {(7, 0): 64, (7, 5): 64, (8, 0): 64, (8, 6): 128, (8, 7): 128, (8, 9): 128,
              (9, 0): 128, (10, 0): 128, (12, 0): 128}
"""FP32 lanes per SM by compute capability (CUDA Programming Guide, arithmetic throughput)."""
FAMILY = {(7, 0): "V100", (7, 5): "T4", (8, 0): "A100-40GB", (8, 6): "RTX-4090", (8, 9): "L4",
          (9, 0): "H100-SXM", (10, 0): "B200"}
"""The preset to borrow unpublished figures from when the device's name matches none."""

_status: tuple | None = None
_announced = False


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


def have_gpu(announce: bool = True) -> bool:
    """True when a GPU answers. Otherwise, if `announce`, print one line saying what runs
    instead (once per process)."""
    global _announced
    ok, why = gpu_status()
    if not ok and announce and not _announced:
        print(f"No GPU: {why}. Running the CPU path instead.")
        _announced = True
    return ok


def closest_preset(device_name: str, capability: tuple[int, int]) -> str:
    """The preset a device is, by its name ("NVIDIA H100 80GB HBM3" -> "H100-SXM"), else
    the preset of its architecture."""
    name = device_name.upper().replace(" ", "").replace("-", "")
    rules = [("H200", "H200"), ("H100PCIE", "H100-PCIe"), ("H100", "H100-SXM"), ("B200", "B200"),
             ("A10080GB", "A100-80GB"), ("A100SXM480GB", "A100-80GB"), ("A100", "A100-40GB"),
             ("V100", "V100"), ("T4", "T4"), ("L4", "L4"), ("RTX4090", "RTX-4090")]
    for key, preset in rules:
        if key in name:
            return preset
    return FAMILY.get(tuple(capability), "A100-40GB")


def gpu_from_attributes(device_name: str, capability, attributes: dict, memory_bytes: int) -> GPU:
    """A `GPU` record of a live device from its CUDA attributes (`cupy.cuda.Device().attributes`:
    clocks in kHz, bus width in bits). Figures the device cannot report (L2 bytes per clock,
    tensor peaks, latencies) come from the closest preset and say so."""
    capability = tuple(int(c) for c in capability)
    if capability not in FP32_LANES:
        raise ValueError(f"capability must be one of {sorted(FP32_LANES)}, got {capability}")
    base = gpu(closest_preset(device_name, capability))
    src = f"device, cudaDeviceGetAttribute on {device_name}"
    clock_khz = attributes.get("ClockRate", 0)
    clock = (measured(clock_khz * 1e3, "Hz", src, "maximum clock the device reports") if clock_khz
             else replace(base.clock, note=f"the device reports no clock; {base.name}'s"))
    mem_khz, bus_bits = attributes.get("MemoryClockRate", 0), attributes.get("GlobalMemoryBusWidth", 0)
    hbm = (measured(2 * mem_khz * 1e3 * bus_bits / 8, "B/s", src, "2 x memory clock x bus width (double data rate)")
           if mem_khz and bus_bits else replace(base.hbm_bandwidth, note=f"the device reports no memory clock; {base.name}'s"))
    borrowed = f"not reported by the device; {base.name}'s figure"
    return GPU(
        name=f"{device_name} (live)",
        sms=measured(attributes["MultiProcessorCount"], "SM", src),
        fp32_lanes_per_sm=spec(FP32_LANES[capability], "lane", "nvidia_cuda_guide, Arithmetic Instructions"),
        clock=clock,
        l2_bytes_per_clock=estimate(base.l2_bytes_per_clock.value, "B/clk", base.l2_bytes_per_clock.source, borrowed),
        hbm_bandwidth=hbm,
        register_file_per_sm=measured(attributes["MaxRegistersPerMultiprocessor"] * 4, "B", src),
        smem_per_sm=measured(attributes["MaxSharedMemoryPerMultiprocessor"], "B", src),
        l2_capacity=measured(attributes["L2CacheSize"], "B", src),
        hbm_capacity=measured(memory_bytes, "B", src),
        tensor={k: estimate(v.value, v.unit, v.source, borrowed) for k, v in base.tensor.items()},
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
