"""`python -m gpumodel.lab`: prepare the kernel lab (`builder.prepare`) in this user's private
cache, so that the first trace compiles only the kernel; `make` runs it after installing."""

import time

from .builder import cache_folder, prepare

started = time.perf_counter()
built = prepare()
print(f"The kernel lab is prepared in {cache_folder()}: " + (f"built {', '.join(built)} in "
      f"{time.perf_counter() - started:.1f} s" if built else "nothing was missing"))
