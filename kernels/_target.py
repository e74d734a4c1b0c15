"""The compiler that builds the kernels: chosen once per process, when this module is imported.

Every kernel module takes ``cuda``, ``float32`` and ``int32`` from here
(``from ._target import cuda, float32``), so a kernel reads as the book prints
it (``@cuda.jit``, ``cuda.shared.array``, ``cuda.syncthreads()``) whichever
compiler builds it:

==========================  ===============================================================
:data:`NAME`                chosen when
==========================  ===============================================================
``numba-cuda-simulator``    ``NUMBA_ENABLE_CUDASIM=1`` (or numba was imported in that mode):
                            numba-cuda's CUDA simulator, no GPU needed
``numba-cuda-mlir``         ``VIZMM_KERNELS_TARGET=numba-cuda-mlir``, or the variable unset
                            (or ``auto``) and numba-cuda-mlir installed
``numba-cuda``              ``VIZMM_KERNELS_TARGET=numba-cuda``, or the variable unset and
                            numba-cuda-mlir not installed (the legacy compiler)
``none``                    ``VIZMM_KERNELS_TARGET=none``, or no compiler installed: the
                            kernels are kept as written (``py_func``), never compiled; a
                            recorder reads their source (:mod:`._nocuda`)
==========================  ===============================================================

The choice is made once, like numba's own ``NUMBA_ENABLE_CUDASIM``: a program
that wants another target runs it in a fresh process with the variables set.
"""

import importlib.metadata
import importlib.util
import os
import sys

#: The environment variable that picks the GPU compiler.
ENV = "VIZMM_KERNELS_TARGET"
MLIR = "numba-cuda-mlir"
LEGACY = "numba-cuda"
SIMULATOR = "numba-cuda-simulator"
NONE = "none"
#: Every target, in the order of preference for a GPU.
TARGETS = (MLIR, LEGACY, SIMULATOR, NONE)
#: The distribution that provides each target (its version is :data:`VERSION`).
DISTRIBUTIONS = {MLIR: "numba-cuda-mlir", LEGACY: "numba-cuda", SIMULATOR: "numba-cuda",
                 NONE: "numpy"}  # fmt: skip


def simulating(environ=None, modules=None) -> bool:
    """Whether numba's CUDA simulator is (or will be) this process's ``numba.cuda``.

    numba reads ``NUMBA_ENABLE_CUDASIM`` once, when it is first imported: once
    numba is imported its configuration is the answer, before that the
    environment is.
    """
    environ = os.environ if environ is None else environ
    modules = sys.modules if modules is None else modules
    config = modules.get("numba.core.config")
    if config is not None:
        return bool(config.ENABLE_CUDASIM)
    try:
        return int(environ.get("NUMBA_ENABLE_CUDASIM", "0") or 0) != 0
    except ValueError:
        return False


def choose(requested, mlir_installed, simulated, numba_installed=True):
    """The target for a request (the value of :data:`ENV`), pure.

    Parameters
    ----------
    requested : str or None
        ``numba-cuda-mlir``, ``numba-cuda``, ``none``, ``auto`` or None (unset).
    mlir_installed : bool
        Whether numba-cuda-mlir can be imported.
    simulated : bool
        Whether numba runs its simulator (:func:`simulating`).
    numba_installed : bool
        Whether numba-cuda (or numba) can be imported.

    Returns
    -------
    str
        One of :data:`TARGETS`.

    Raises
    ------
    ValueError
        For an unknown request, or numba-cuda-mlir asked for and not installed.
    """
    if requested == NONE:
        return NONE
    if simulated and numba_installed:
        return SIMULATOR
    if requested in (None, "", "auto"):
        return MLIR if mlir_installed else LEGACY if numba_installed else NONE
    if requested == MLIR and not mlir_installed:
        raise ValueError(
            f"{ENV}={MLIR} but numba-cuda-mlir is not installed: pip install 'vizmm[gpu]'"
        )
    if requested not in (MLIR, LEGACY):
        raise ValueError(f"{ENV} must be {MLIR}, {LEGACY} or auto, got {requested!r}")
    return requested


def _version(name):
    try:
        return importlib.metadata.version(DISTRIBUTIONS[name])
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


#: The target of this process (one of :data:`TARGETS`).
NAME = choose(
    os.environ.get(ENV),
    importlib.util.find_spec("numba_cuda_mlir") is not None,
    simulating(),
    importlib.util.find_spec("numba") is not None,
)
#: The version of the distribution that compiles (or simulates) the kernels.
VERSION = _version(NAME)

if NAME == MLIR:
    from numba_cuda_mlir import cuda
    from numba_cuda_mlir.cuda import float32, int32
    from numba_cuda_mlir.numba_cuda.typing.typeof import typeof
elif NAME == NONE:
    from ._nocuda import cuda, float32, int32, typeof
else:
    from numba import cuda, float32, int32, typeof

__all__ = [
    "ENV",
    "LEGACY",
    "MLIR",
    "NAME",
    "NONE",
    "SIMULATOR",
    "TARGETS",
    "VERSION",
    "choose",
    "cuda",
    "float32",
    "int32",
    "simulating",
    "typeof",
]
