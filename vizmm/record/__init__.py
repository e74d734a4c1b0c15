"""The record layer: launch an instrumented kernel on a GPU or in Numba's CUDA simulator.

The only package of vizmm that imports numba, and only when a recording is
made: importing it does not import numba.

* :mod:`.recorder`: :func:`record` and :func:`estimate`, the checks that
  admit a recording, the choice of backend.
* :mod:`.launcher`: record arrays sized before the launch, the launch itself,
  the :class:`~vizmm.trace.Trace` it makes.
* :mod:`.simulator`: driving Numba's simulator block by block.
* :mod:`.worker`: the fresh process that records for the other numba mode
  (numba fixes GPU or simulator once per process).
"""

from .recorder import (
    BACKENDS,
    DEFAULT_MAX_BYTES,
    Estimate,
    GPUUnavailableError,
    RecordError,
    TraceTooLargeError,
    estimate,
    gpu_available,
    record,
)

__all__ = [
    "BACKENDS",
    "DEFAULT_MAX_BYTES",
    "Estimate",
    "GPUUnavailableError",
    "RecordError",
    "TraceTooLargeError",
    "estimate",
    "gpu_available",
    "record",
]
