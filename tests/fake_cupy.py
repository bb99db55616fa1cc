"""A CPU stand-in for the parts of CuPy that `gpumodel.cuda.runtime` and `gpumodel.cuda.validate`
use, so that their GPU code paths run in the tests: arrays are NumPy arrays, RawModule
compiles the kernel source with the CPU emulator, events read the host clock, and the
device reports an H100's attributes. It checks our code's logic on the GPU path, not CuPy
and not a GPU."""

from __future__ import annotations

import time
import types

import numpy as np

from emulator import Emulator

H100 = {
    "MultiProcessorCount": 132, "ClockRate": 1980000, "MemoryClockRate": 2619000,
    "GlobalMemoryBusWidth": 5120, "L2CacheSize": 50 * 2**20,
    "MaxSharedMemoryPerMultiprocessor": 233472, "MaxRegistersPerMultiprocessor": 65536,
}


def make(build_dir):
    """A module object standing in for `cupy`, its kernels run by an Emulator in `build_dir`."""
    emulator = Emulator(build_dir)

    class RawModule:
        def __init__(self, code, options=()):
            self.code = code
            emulator.compile(code)

        def get_function(self, name):
            return Function(lambda grid, block, args: emulator.launch(self.code, name, grid, block, args))

    class Function:
        """A compiled kernel: callable, with a handle the stand-in driver answers for."""

        ptr = 0

        def __init__(self, run):
            self.run = run

        def __call__(self, grid, block, args):
            self.run(grid, block, args)

    class Event:
        def record(self):
            self.t = time.perf_counter()

        def synchronize(self):
            pass

    class Device:
        id = 0
        attributes = H100

    runtime = types.SimpleNamespace(
        getDeviceCount=lambda: 1,
        getDeviceProperties=lambda i: {"name": b"NVIDIA H100 80GB HBM3 (CPU stand-in)", "major": 9, "minor": 0},
        driverGetVersion=lambda: 0,
        runtimeGetVersion=lambda: 0,
        memGetInfo=lambda: (80 * 10**9, 85 * 10**9),
    )
    driver = types.SimpleNamespace(  # cuFuncGetAttribute and the occupancy API, with fixed answers
        CU_FUNC_ATTRIBUTE_NUM_REGS=4, CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES=3, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES=1,
        funcGetAttribute=lambda attribute, ptr: {4: 32, 3: 0, 1: 0}[attribute],
        occupancyMaxActiveBlocksPerMultiprocessor=lambda ptr, threads, smem: 2048 // threads,
    )
    cuda = types.SimpleNamespace(
        runtime=runtime, driver=driver, Device=Device, Event=Event,
        get_elapsed_time=lambda start, end: 1e3 * (end.t - start.t),
    )
    pool = types.SimpleNamespace(free_all_blocks=lambda: None)
    return StandIn(__version__="cpu-stand-in", cuda=cuda, RawModule=RawModule, asnumpy=np.asarray,
                   get_default_memory_pool=lambda: pool)


class StandIn(types.SimpleNamespace):
    """The stand-in module: its own attributes, then NumPy's (as CuPy mirrors NumPy)."""

    def __getattr__(self, name):
        return getattr(np, name)
