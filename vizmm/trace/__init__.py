"""The trace layer: the immutable model of a recording, its launch shape and its file.

* :mod:`.launch`: :class:`LaunchShape`, the one validated description of a
  launch (kernel, sizes, TILE_WIDTH, grid, phase count).
* :mod:`.model`: :class:`Trace` and the record codes (:class:`Access`,
  :class:`PWrite`).
* :mod:`.fileformat`: the versioned, pickle-free file (``to_bytes``,
  ``from_bytes``, ``load``, atomic writes).

NumPy only: traces are replayed anywhere, no numba.
"""

from .fileformat import (
    DEFAULT_MAX_BYTES,
    DEFAULT_MAX_FILE_BYTES,
    FORMAT,
    VERSION,
    TraceInfo,
    TraceOverLimitError,
    atomic_write,
    env_limit,
    from_bytes,
    load,
    read_info,
    read_trace_bytes,
    seeded_inputs,
)
from .kernels import BARRIER_KERNELS, KERNEL_SPECS, OCCUPANCY_KERNELS, KernelSpec
from .launch import (
    KERNELS,
    MAX_TILE_WIDTH,
    SQUARE_KERNELS,
    TILED_KERNELS,
    WARP_SIZE,
    LaunchError,
    LaunchShape,
    ceil_div,
)
from .model import (
    ARRAY_NAMES,
    BLOCK_FIELDS,
    MAX_STORED_SPREAD,
    WAIT_BINS,
    Access,
    BlockError,
    Deferred,
    LoadRecord,
    PWrite,
    Trace,
    TraceError,
    not_recorded_message,
)
from .units import format_blocks, human_bytes, human_duration

__all__ = [
    "ARRAY_NAMES",
    "BlockError",
    "DEFAULT_MAX_BYTES",
    "DEFAULT_MAX_FILE_BYTES",
    "Deferred",
    "TraceInfo",
    "TraceOverLimitError",
    "read_info",
    "read_trace_bytes",
    "BARRIER_KERNELS",
    "BLOCK_FIELDS",
    "FORMAT",
    "KERNELS",
    "KERNEL_SPECS",
    "KernelSpec",
    "OCCUPANCY_KERNELS",
    "MAX_STORED_SPREAD",
    "MAX_TILE_WIDTH",
    "SQUARE_KERNELS",
    "TILED_KERNELS",
    "VERSION",
    "WAIT_BINS",
    "WARP_SIZE",
    "Access",
    "LaunchError",
    "LaunchShape",
    "LoadRecord",
    "PWrite",
    "Trace",
    "TraceError",
    "atomic_write",
    "ceil_div",
    "env_limit",
    "format_blocks",
    "from_bytes",
    "human_bytes",
    "human_duration",
    "load",
    "not_recorded_message",
    "seeded_inputs",
]
