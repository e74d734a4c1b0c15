"""vizmm: see the tiled matrix-multiplication kernel of PMPP chapter 5 run.

Record what every thread of the book's kernels did (``record``), keep it in
a versioned file (``Trace.save`` / ``load``), replay it phase by phase
(``vizmm.replay``), draw it in the dashboard or export it.

Importing vizmm does not import numba; only :func:`record` does. The
occupancy and transactions names are imported when first used, so that a
command such as ``vizmm info`` starts with the trace layer and NumPy alone.
:func:`occupancy` is :func:`vizmm.analysis.occupancy.occupancy` given the
recording layer's live GPU (``live=vizmm.record.device.LIVE_GPU``): its
``device='live'`` and a book kernel's compiled registers.
"""

from __future__ import annotations

import functools
import importlib
from typing import TYPE_CHECKING

from ._version import __version__
from .analysis.hazards import hazards
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
    from .analysis.occupancy import Device, Occupancy, OccupancyError, occupancy
    from .analysis.transactions import (
        MemoryTransactions,
        TransactionsError,
        memory_transactions,
    )
    from .checker import CheckReport, Finding, check


def _live_occupancy():
    """``vizmm.occupancy``: the analysis's function, given the recording layer's live GPU."""
    from .analysis import occupancy as occ
    from .record.device import LIVE_GPU

    @functools.wraps(occ.occupancy)
    def occupancy(*args, **kwargs):
        kwargs.setdefault("live", LIVE_GPU)
        return occ.occupancy(*args, **kwargs)

    return occupancy


#: Names imported when first used (``vizmm.Device`` ...): module -> names.
_LAZY = {
    ".checker": ("check", "CheckReport", "Finding"),
    ".analysis.occupancy": ("Device", "Occupancy", "OccupancyError"),
    ".analysis.transactions": ("MemoryTransactions", "TransactionsError", "memory_transactions"),
}
_LAZY_NAMES = {name: module for module, names in _LAZY.items() for name in names}


def __getattr__(name: str):
    if name == "occupancy":
        globals()[name] = value = _live_occupancy()
        return value
    module = _LAZY_NAMES.get(name)
    if module is None:
        raise AttributeError(f"module 'vizmm' has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_LAZY_NAMES) | {"occupancy"})


__all__ = [
    "__version__",
    "Access",
    "BACKENDS",
    "CheckReport",
    "Finding",
    "check",
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
    "hazards",
    "load",
    "occupancy",
    "record",
    "MemoryTransactions",
    "TransactionsError",
    "memory_transactions",
]
