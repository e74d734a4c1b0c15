"""The record layer: launch an instrumented kernel on a GPU or in Numba's CUDA simulator.

The only package of vizmm that imports numba, and only when a recording is
made: importing it does not import numba.

* :mod:`.admission`: :func:`estimate` and :func:`admit`, the one place that
  decides from sizes alone whether a recording may run (size, simulator
  time, a server's :class:`Budget`).
* :mod:`.recorder`: :func:`record`, the choice of backend.
* :mod:`.targets`: which compiler a backend gets (numba-cuda-mlir,
  numba-cuda, the simulator) and the combinations known to break.
* :mod:`.doctor`: ``vizmm doctor``'s report.
* :mod:`.launcher`: record arrays sized before the launch, the launch itself,
  the :class:`~vizmm.trace.Trace` it makes.
* :mod:`.simulator`: driving Numba's simulator block by block.
* :mod:`.worker`: the fresh process that records for another target
  (numba fixes GPU or simulator, the kernels their compiler, once per process).
"""

from . import admission as _admission
from . import recorder as _recorder
from .admission import *  # noqa: F403 - the record layer's API is its modules' __all__
from .recorder import *  # noqa: F403

__all__ = [*_admission.__all__, *_recorder.__all__]
