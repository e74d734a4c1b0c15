"""vizmm: see the tiled matrix-multiplication kernel of PMPP chapter 5 run.

Record what every thread of the book's kernels did (``record``), keep it in
a versioned file (``Trace.save`` / ``load``), replay it phase by phase
(``vizmm.replay``), draw it in the dashboard or export it.

Importing vizmm does not import numba; only :func:`record` does. The
occupancy and transactions names are imported when first used, so that a
command such as ``vizmm info`` starts with the trace layer and NumPy alone.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from ._version import __version__
from .analysis import hazards as _hazards  # noqa: F401 - registers Trace.hazards()
from .record import (
    BACKENDS,
    Estimate,
    GPUUnavailableError,
    RecordError,
    TraceTooLargeError,
    estimate,
    gpu_available,
    record,
)
from .trace import Access, LaunchShape, LoadRecord, PWrite, Trace, TraceError, load

if TYPE_CHECKING:
    from .analysis.occupancy import Device, Occupancy, OccupancyError
    from .analysis.transactions import (
        MemoryTransactions,
        TransactionsError,
        memory_transactions,
    )


def occupancy(
    device: str | Device,
    tile_width: int | None = None,
    kernel: str = "tiled",
    threads_per_block: int | None = None,
    shared_per_block: int | None = None,
    registers_per_thread: int | None = None,
    *,
    instrumented: bool = False,
) -> Occupancy:
    """Blocks per SM, what limits them and the occupancy of a kernel on a device (Section 5.6).

    The arithmetic is :func:`vizmm.analysis.occupancy.occupancy` (see it for
    the rules followed and every field of the result). This adds the live
    GPU: ``device='live'`` is the GPU numba drives here, and a book kernel's
    registers per thread come from numba-cuda's compiled kernel when this
    process drives a GPU (``registers_source`` starts ``compiler:``), else
    from the values measured on an H200 and shipped with vizmm
    (``measured:``).

    Parameters
    ----------
    device : {'A100', 'H100', 'H200', 'live'} or Device
        The book's A100, an H100 or H200 as measured, or the live GPU.
    tile_width : int, optional
        TILE_WIDTH (1 to 32) of ``kernel``.
    kernel : {'tiled', 'naive', 'boundary', 'general', 'dynamic'}
    threads_per_block, shared_per_block : int, optional
        Raw resources of a kernel of your own (threads; bytes), instead of a
        kernel and TILE_WIDTH.
    registers_per_thread : int, optional
    instrumented : bool
        The recording kernel's registers.

    Returns
    -------
    Occupancy

    Raises
    ------
    OccupancyError
        For an unknown device or kernel, a TILE_WIDTH outside 1..32, both or
        neither of a TILE_WIDTH and raw resources, or resources out of range.
    GPUUnavailableError
        For ``device='live'`` without a usable GPU.
    """
    from .analysis import occupancy as occ
    from .record import device as live

    source = None
    if device == live.LIVE:
        device = occ.Device.from_attributes(
            live.live_attributes(), source="live: cuda.get_current_device() on this machine"
        )
    if registers_per_thread is None and tile_width is not None and kernel in occ.KERNEL_NAMES:
        occ.kernel_resources(kernel, tile_width)  # checks both before compiling anything
        regs = live.compiled_registers(kernel, tile_width, instrumented)
        if regs is not None:
            registers_per_thread = regs
            source = "compiler: numba-cuda, for this machine's GPU"
    return occ.occupancy(
        device,
        tile_width,
        kernel,
        threads_per_block,
        shared_per_block,
        registers_per_thread,
        instrumented=instrumented,
        registers_source=source,
    )


#: Names imported when first used (``vizmm.Device`` ...): module -> names.
_LAZY = {
    ".analysis.occupancy": ("Device", "Occupancy", "OccupancyError"),
    ".analysis.transactions": ("MemoryTransactions", "TransactionsError", "memory_transactions"),
}
_LAZY_NAMES = {name: module for module, names in _LAZY.items() for name in names}


def __getattr__(name: str):
    module = _LAZY_NAMES.get(name)
    if module is None:
        raise AttributeError(f"module 'vizmm' has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_LAZY_NAMES))


__all__ = [
    "__version__",
    "Access",
    "BACKENDS",
    "Device",
    "Estimate",
    "LaunchShape",
    "GPUUnavailableError",
    "LoadRecord",
    "Occupancy",
    "OccupancyError",
    "PWrite",
    "RecordError",
    "Trace",
    "TraceError",
    "TraceTooLargeError",
    "estimate",
    "gpu_available",
    "load",
    "occupancy",
    "record",
    "MemoryTransactions",
    "TransactionsError",
    "memory_transactions",
]
