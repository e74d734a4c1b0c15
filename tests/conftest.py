"""Test set-up: Numba's CUDA simulator by default, real-GPU tests only where a GPU is usable.

``NUMBA_ENABLE_CUDASIM`` must be set before numba is first imported, so it is
set here, at import time: to ``1`` (the simulator) unless ``VIZMM_TEST_GPU=1``
asks for a run on a real GPU, where numba then drives the GPU in-process (and
vizmm runs simulator recordings in a subprocess).

Tests marked ``gpu`` are skipped unless a CUDA GPU is usable.
"""

import os
import sys

import pytest

GPU_RUN = os.environ.get("VIZMM_TEST_GPU") == "1"
if GPU_RUN:
    os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "0")
else:
    os.environ["NUMBA_ENABLE_CUDASIM"] = "1"

if "numba.cuda" in sys.modules:
    raise RuntimeError(
        "numba.cuda was imported before tests/conftest.py could choose the "
        "simulator; run the tests with NUMBA_ENABLE_CUDASIM set"
    )

_gpu_usable = None


def gpu_usable() -> bool:
    """Whether numba can use a CUDA GPU (probed once, in a subprocess when simulating)."""
    global _gpu_usable
    if _gpu_usable is None:
        import ctypes.util

        if ctypes.util.find_library("cuda") is None and not os.path.exists("/dev/nvidia0"):
            _gpu_usable = False
        else:
            from vizmm import gpu_available

            _gpu_usable = gpu_available()
    return _gpu_usable


def pytest_collection_modifyitems(config, items):
    gpu_items = [item for item in items if "gpu" in item.keywords]
    if gpu_items and not gpu_usable():
        skip = pytest.mark.skip(reason="needs a usable CUDA GPU (none found)")
        for item in gpu_items:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def record_sim():
    """``vizmm.record`` on the simulator, quiet, with results cached per arguments."""
    import vizmm

    cache = {}

    def run(**kwargs):
        key = tuple(sorted((k, repr(v)) for k, v in kwargs.items()))
        if key not in cache:
            cache[key] = vizmm.record(backend="simulator", quiet=True, **kwargs)
        return cache[key]

    return run


@pytest.fixture(scope="module")
def browser():
    """Debian's Chromium, headless, shared by one test module's pages (tests/served.py)."""
    from served import ARGS, CHROMIUM

    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield b
        b.close()
