"""Device properties for the recording: the live GPU's, the compiler's registers, the presets'.

The occupancy arithmetic is NumPy-only (:mod:`vizmm.analysis.occupancy`);
this module gives what only the compiler can tell: the attributes of the GPU
it drives (``cuda.get_current_device()``) and the registers per thread of a
kernel as the GPU target (numba-cuda-mlir, else numba-cuda: see
:mod:`.targets`) compiles it for that GPU. It imports the compiler only when
asked, and asks a fresh process when this one compiles for another target
(the simulator, say).
The presets' attributes (the book's A100, the measured H100 and H200) are
read from ``vizmm/data`` for the Fig. 5.14 kernel's choice of TILE_WIDTH in
the simulator.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import os
import subprocess
import sys

from . import targets
from .recorder import (
    GPUUnavailableError,
    RecordError,
    _bind_early,
    gpu_available,
    resolve_backend,
)

__all__ = [
    "LIVE",
    "LIVE_GPU",
    "LiveGPU",
    "PRESETS",
    "compiled_registers",
    "live_attributes",
    "preset_attributes",
    "tile_width_from_device",
]

#: Device presets (their attributes ship in ``vizmm/data``).
PRESETS = {
    "A100": "device-presets.json",
    "H100": "gpu-speed-h100.json",
    "H200": "gpu-speed-h200.json",
}
_DATA = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data")

#: The device name that means "the GPU numba drives here".
LIVE = "live"

#: CUDA device attributes read from the live GPU (``CU_DEVICE_ATTRIBUTE_`` names).
ATTRIBUTES = (
    "MULTIPROCESSOR_COUNT",
    "MAX_THREADS_PER_MULTIPROCESSOR",
    "MAX_BLOCKS_PER_MULTIPROCESSOR",
    "MAX_SHARED_MEMORY_PER_MULTIPROCESSOR",
    "MAX_SHARED_MEMORY_PER_BLOCK",
    "MAX_SHARED_MEMORY_PER_BLOCK_OPTIN",
    "RESERVED_SHARED_MEMORY_PER_BLOCK",
    "MAX_REGISTERS_PER_MULTIPROCESSOR",
    "MAX_REGISTERS_PER_BLOCK",
    "MAX_THREADS_PER_BLOCK",
    "WARP_SIZE",
    "CLOCK_RATE",
)


def _read_attributes() -> dict:
    """The attributes of the current GPU (this process must compile for a GPU)."""
    from vizmm_kernels._target import cuda

    dev = cuda.get_current_device()
    out = {
        "name": dev.name.decode() if isinstance(dev.name, bytes) else dev.name,
        "compute_capability": list(dev.compute_capability),
    }
    for a in ATTRIBUTES:
        try:
            out[a] = int(getattr(dev, a))
        except Exception:  # noqa: BLE001 - an attribute this driver does not know
            pass
    return out


@functools.cache
def live_attributes() -> dict:
    """CUDA attributes of the GPU numba drives here (read in a fresh process when simulating).

    Raises
    ------
    GPUUnavailableError
        When numba can use no CUDA GPU here.
    """
    if not gpu_available():
        raise GPUUnavailableError(
            "device='live' needs a CUDA GPU that numba can use, and there is none here; "
            f"use a preset: {', '.join(PRESETS)}"
        )
    target = resolve_backend("gpu").target
    if targets.can_run_here(target):
        targets.bind_here(target)
        return _read_attributes()
    code = (
        "import json; from vizmm.record.device import _read_attributes as r; print(json.dumps(r()))"
    )
    env = dict(os.environ, **targets.environment(target))
    proc = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )
    if proc.returncode != 0:
        raise GPUUnavailableError("could not read the GPU's attributes: " + proc.stderr[-500:])
    return json.loads(proc.stdout.strip().splitlines()[-1])


@functools.cache
def compiled_registers(kernel: str, tile_width: int, instrumented: bool = False) -> int | None:
    """Registers per thread of ``kernel`` as the GPU target compiles it for the live GPU.

    Returns None when this process cannot compile for a GPU (the simulator,
    or no GPU): callers then use the measured values.
    """
    if not gpu_available():
        return None
    target = resolve_backend("gpu").target
    if not targets.can_run_here(target):
        return None
    targets.bind_here(target)
    import numpy as np

    import vizmm_kernels as K
    from vizmm_kernels._target import typeof

    W = 2 * tile_width
    args = [np.zeros(W * W, np.float32) for _ in range(3)]
    args += list(K.launch_dims(kernel, W, W, W, tile_width))
    kern = K.get_kernel(kernel, tile_width)
    if instrumented:  # the instrumenter's full variant, as a recording compiles it
        from . import instrument as I
        from .instrument_trace import book_kernel

        inst = book_kernel(kernel, tile_width, shared_loads=False)
        grid, block = K.grid_dims(W, W, tile_width)
        host = dict(zip(inst.params, args, strict=True))
        rec = I._records(inst, grid, block, [(0, 0)], 1, host, False, 1, 1)
        args += list(rec.values())
        kern = inst.kernel
    sig = tuple(typeof(a) for a in args)
    compiled = kern.compile(sig)
    regs = getattr(compiled, "regs_per_thread", None)  # numba-cuda's compile result
    return int(kern.get_regs_per_thread(sig) if regs is None else regs)  # numba-cuda-mlir


@functools.cache
def preset_attributes(name: str) -> dict:
    """CUDA attributes of a device preset, with ``source`` (where they come from).

    Raises
    ------
    RecordError
        For an unknown preset.
    """
    if name not in PRESETS:
        raise RecordError(f"unknown device {name!r}; choose one of {', '.join(PRESETS)}")
    with open(os.path.join(_DATA, PRESETS[name]), encoding="utf-8") as f:
        data = json.load(f)
    if name in data:  # the presets file: the book's figures
        return dict(data[name]["device"], source=data[name]["source"])
    measured = f"measured on an {data['device']['name']}, {data['date'][:10]}"
    return dict(data["device"], source=measured)


def tile_width_from_device(backend: str, device: str) -> tuple[int, str]:
    """Fig. 5.14's host code: TILE_WIDTH from the device's properties, and which device.

    On the GPU (``backend='gpu'``, or 'auto' with a usable GPU) the real
    device's attributes; in the simulator the preset ``device``'s.

    Parameters
    ----------
    backend : {'auto', 'gpu', 'gpu-legacy', 'simulator'}
        Where the recording runs.
    device : str
        The preset device the simulator stands for (``'A100'``, ``'H100'``, ``'H200'``).
    """
    _bind_early(backend)  # importing the kernels binds the process: to the recording's target
    from vizmm_kernels.dynamic import choose_tile_width

    if backend in targets.GPU_BACKENDS or (backend == "auto" and gpu_available()):
        attrs, where = live_attributes(), "this machine's GPU"
    else:
        attrs = preset_attributes(device)
        where = f"the {device} preset ({attrs['source']})"
    T = choose_tile_width(attrs)
    return T, f"TILE_WIDTH {T} chosen from the properties of {attrs['name']}, {where}"


@dataclasses.dataclass(frozen=True)
class LiveGPU:
    """The GPU numba drives here, as the occupancy arithmetic asks for it.

    :func:`vizmm.analysis.occupancy.occupancy` imports no numba; its ``live``
    argument takes this (:data:`LIVE_GPU`), and :func:`vizmm.occupancy`
    passes it: ``device='live'`` reads :func:`live_attributes`, and a book
    kernel's registers come from :func:`compiled_registers`.
    """

    name: str = LIVE
    source: str = "live: cuda.get_current_device() on this machine"
    registers_source: str = "compiler: numba-cuda-mlir or numba-cuda, for this machine's GPU"

    def attributes(self) -> dict:
        """:func:`live_attributes` (raises GPUUnavailableError without a usable GPU)."""
        return live_attributes()

    def compiled_registers(self, kernel: str, tile_width: int, instrumented: bool) -> int | None:
        """:func:`compiled_registers` (None in the simulator or without a GPU).

        Parameters
        ----------
        kernel, tile_width, instrumented
            As :func:`vizmm.analysis.occupancy.measured_registers` takes them.
        """
        return compiled_registers(kernel, tile_width, instrumented)


#: The live GPU for :func:`vizmm.occupancy`.
LIVE_GPU = LiveGPU()
