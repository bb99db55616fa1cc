"""GPU tests (marked `gpu`) skip, with the reason, when no GPU answers; nothing else skips."""

import pytest

from gpumodel import gpu_runtime as runtime


def pytest_collection_modifyitems(config, items):
    ok, why = runtime.gpu_status()
    if ok:
        return
    skip = pytest.mark.skip(reason=f"needs a GPU: {why}")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
