"""``cuda`` where no CUDA compiler is installed: the kernels' source is kept, never compiled.

The kernels are read by whoever records them (their Python source, through
``py_func``); launching one here says that a compiler is needed. The numeric
types are NumPy's.
"""

import numpy as np

float32 = np.float32
int32 = np.int32

#: What a launch here says.
NO_COMPILER = (
    "no CUDA compiler is installed here (numba-cuda-mlir or numba-cuda): the kernel's "
    "source can be read but not launched"
)


class Kernel:
    """A ``@cuda.jit`` function kept as written: ``py_func`` is its Python function."""

    def __init__(self, fn, device=False):
        self.py_func = fn
        self.device = device
        self.__name__ = getattr(fn, "__name__", "kernel")
        self.__doc__ = getattr(fn, "__doc__", None)

    def __getitem__(self, config):
        raise RuntimeError(NO_COMPILER)

    def __call__(self, *args, **kwargs):
        raise RuntimeError(NO_COMPILER)


class _Cuda:
    """The names of ``numba.cuda`` the kernels use at import: ``jit`` only."""

    @staticmethod
    def jit(fn=None, device=False, **options):
        """``@cuda.jit`` or ``@cuda.jit(device=True, ...)``: the function kept, not compiled."""
        if fn is None or not callable(fn):
            return lambda f: Kernel(f, device)
        return Kernel(fn, device)

    def __getattr__(self, name):
        raise AttributeError(f"cuda.{name}: " + NO_COMPILER)


cuda = _Cuda()


def typeof(value):
    """No compiler: no numba type."""
    raise RuntimeError(NO_COMPILER)
