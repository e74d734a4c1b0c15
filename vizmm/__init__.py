"""vizmm: see the tiled matrix-multiplication kernel of PMPP chapter 5 run.

Record what every thread of the book's kernels did (``record``), keep it in
a versioned file (``Trace.save`` / ``load``), replay it phase by phase
(``vizmm.replay``), draw it in the dashboard or export it.

Importing vizmm does not import numba; only :func:`record` does.
"""

from ._version import __version__
from .analysis.transactions import MemoryTransactions, TransactionsError, memory_transactions
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

__all__ = [
    "__version__",
    "Access",
    "BACKENDS",
    "Estimate",
    "LaunchShape",
    "GPUUnavailableError",
    "LoadRecord",
    "PWrite",
    "RecordError",
    "Trace",
    "TraceError",
    "TraceTooLargeError",
    "estimate",
    "gpu_available",
    "load",
    "record",
    "MemoryTransactions",
    "TransactionsError",
    "memory_transactions",
]
