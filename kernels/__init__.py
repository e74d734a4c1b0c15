"""Numba CUDA kernels of PMPP chapter 5's matrix multiplication, as the book prints them.

Installed as ``vizmm_kernels`` (the folder is ``kernels/``) so that the
unrelated ``kernels`` distribution on the package index can never shadow it.
This package knows nothing of vizmm: vizmm records these plain kernels by
rewriting their source (its instrumenter); :mod:`.codes` holds the numbers
of the records it makes, :mod:`._hw` the hardware registers it reads.

The same source runs on an NVIDIA GPU, compiled by numba-cuda-mlir or by
numba-cuda, and in Numba's CUDA simulator; :mod:`._target` chooses once per
process (``NUMBA_ENABLE_CUDASIM=1``: the simulator; else
``VIZMM_KERNELS_TARGET``, by default numba-cuda-mlir when installed), before
the kernels are first imported.

===============  =========================================  ==========================
name             what                                       dims after (M, N, P)
===============  =========================================  ==========================
``naive``        Fig. 3.11: one thread per P element        ``Width``
``tiled``        Fig. 5.9: shared-memory tiles, no checks   ``Width``
``boundary``     Fig. 5.13: tiles with boundary checks      ``Width``
``general``      Section 5.5 exercise: ``j x k . k x l``    ``j, k, l``
``uncoalesced``  Fig. 5.13, thread roles swapped in loads   ``Width``
``conflict``     Fig. 5.13, N tile transposed, Nds[tx][k]   ``Width``
``padded``       conflict, Nds with TILE_WIDTH + 1 columns  ``Width``
``dynamic``      Fig. 5.14: Fig. 5.13 with one dynamically  ``Width, Mds_sz, Nds_sz``
                 sized shared array (4th launch parameter)
===============  =========================================  ==========================

``uncoalesced``, ``conflict`` and ``padded`` are contrast kernels for the
memory rules of the chapter's slides (coalescing, bank conflicts); see
``vizmm.analysis.transactions``.
"""

import functools
import importlib

# %clock64, %globaltimer, %smid defined now, before any kernel compiles: numba-cuda-mlir
# 0.6 could not type an intrinsic made after its first compile in a process.
from . import _hw  # noqa: F401

KERNEL_NAMES = (
    "naive",
    "tiled",
    "boundary",
    "general",
    "uncoalesced",
    "conflict",
    "padded",
    "dynamic",
)
FIGURES = {
    "naive": "Fig. 3.11",
    "tiled": "Fig. 5.9",
    "boundary": "Fig. 5.13",
    "general": "Section 5.5 (j x k . k x l exercise)",
    "uncoalesced": "Fig. 5.13, thread roles swapped in the loads",
    "conflict": "Fig. 5.13, Nds read as Nds[tx][k]",
    "padded": "Fig. 5.13, Nds[tx][k], Nds padded to TILE_WIDTH + 1 columns",
    "dynamic": "Fig. 5.14",
}
# Kernels with the two __syncthreads() of Section 5.4 (the barrier lab can remove them).
BARRIER_KERNELS = ("tiled", "boundary")
MAX_TILE_WIDTH = 32  # 32 x 32 = 1024 threads, the CUDA block limit


def check_tile_width(tile_width):
    """Return ``tile_width`` as an int, or raise ``ValueError`` unless 1 <= it <= 32."""
    if (
        isinstance(tile_width, bool)
        or not isinstance(tile_width, int)
        or not (1 <= tile_width <= MAX_TILE_WIDTH)
    ):
        raise ValueError(
            f"TILE_WIDTH must be an integer from 1 to {MAX_TILE_WIDTH} "
            "(a block of TILE_WIDTH x TILE_WIDTH threads may hold at most 1024); "
            f"got {tile_width!r}"
        )
    return tile_width


def check_kernel_name(name):
    """Return ``name``, or raise ``ValueError`` naming the kernels that exist."""
    if name not in KERNEL_NAMES:
        raise ValueError(f"unknown kernel {name!r}; choose one of {', '.join(KERNEL_NAMES)}")
    return name


def check_drop_barrier(name, drop_barrier):
    """The barriers to remove as a sorted tuple: ``()``, ``(1,)``, ``(2,)`` or ``(1, 2)``.

    ``drop_barrier`` is ``None`` (keep both), 1 (the ``__syncthreads()`` after
    the loads), 2 (the one after the k loop) or a collection of them. Only
    the tiled kernels (:data:`BARRIER_KERNELS`) have barriers to remove.

    Raises
    ------
    ValueError
        For anything else, or a barrier removed from a kernel without one.
    """
    if drop_barrier is None:
        return ()
    items = [drop_barrier] if isinstance(drop_barrier, int) else drop_barrier
    try:
        items = list(items)
    except TypeError:
        items = [drop_barrier]
    if not all(isinstance(b, int) and not isinstance(b, bool) and b in (1, 2) for b in items):
        raise ValueError(
            "drop_barrier must be None (keep both __syncthreads), 1 (the one after the loads), "
            f"2 (the one after the k loop) or (1, 2); got {drop_barrier!r}"
        )
    out = tuple(sorted(set(items)))
    if out and name not in BARRIER_KERNELS:
        raise ValueError(
            f"kernel {name!r} has no __syncthreads() to remove; the barrier lab runs "
            f"{' and '.join(BARRIER_KERNELS)}"
        )
    return out


def get_kernel(name, tile_width, drop_barrier=None):
    """The ``cuda.jit`` kernel ``name`` compiled for one ``TILE_WIDTH``, as the book prints it.

    Parameters
    ----------
    name : {'naive', 'tiled', 'boundary', 'general', 'uncoalesced', 'conflict', 'padded', \
'dynamic'}
    tile_width : int
        TILE_WIDTH, 1 to 32; the block is TILE_WIDTH x TILE_WIDTH threads.
    drop_barrier : None, 1, 2 or (1, 2)
        Barrier lab ('tiled' and 'boundary' only): remove the
        ``__syncthreads()`` after the loads (1), after the k loop (2) or both.

    Raises
    ------
    ValueError
        For an unknown name, a TILE_WIDTH outside 1..32 or a bad ``drop_barrier``.
    """
    check_kernel_name(name)
    check_tile_width(tile_width)
    drop = check_drop_barrier(name, drop_barrier)
    return _get_kernel(name, tile_width, drop)


@functools.cache
def _get_kernel(name, tile_width, drop):
    module = importlib.import_module(f"{__name__}.{name}")
    if name not in BARRIER_KERNELS:
        return module.make_plain(tile_width)
    return module.make_plain(tile_width, BARRIER_1=1 not in drop, BARRIER_2=2 not in drop)


def launch_dims(name, j, k, l, tile_width=None):
    """The scalar arguments that follow (M, N, P) for kernel ``name``.

    The Fig. 5.14 kernel (``dynamic``) also takes the byte sizes of its Mds
    and Nds sections, so it needs ``tile_width``.
    """
    if name == "dynamic":
        from .dynamic import launch_args

        return launch_args(k, check_tile_width(tile_width))
    return (j, k, l) if name == "general" else (k,)


def dynamic_shared_bytes(name, tile_width):
    """Bytes of dynamic shared memory a launch of ``name`` needs (its 4th launch parameter).

    ``2 * TILE_WIDTH**2 * 4`` for the Fig. 5.14 kernel, 0 for the others
    (their shared arrays are sized at compile time).
    """
    if name == "dynamic":
        from .dynamic import shared_bytes

        return shared_bytes(check_tile_width(tile_width))
    return 0


def grid_dims(j, l, tile_width):
    """``(blocks, threads)`` launch configuration: x spans P's columns, y its rows."""
    gx = -(-l // tile_width)
    gy = -(-j // tile_width)
    return (gx, gy), (tile_width, tile_width)


def source_file(name):
    """Path of the Python file that holds kernel ``name`` (read as text by tools)."""
    import os

    check_kernel_name(name)
    return os.path.join(os.path.dirname(__file__), f"{name}.py")
