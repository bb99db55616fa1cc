"""The CUDA side: compiles, launches and times `kernels/*.cu` with CuPy (imported lazily,
only here), and reads the runs recorded on real GPUs.

Add here: how a kernel is launched and checked (`plans`), timing and the live device
(`runtime`), the compiler's report (`compiler`), `validate` (`python -m gpumodel.cuda.validate`),
recorded runs (`recorded_runs`, data in `gpumodel/data/measurements/`).
"""

from .._lazy import submodules

__getattr__ = submodules(__name__, __file__)
