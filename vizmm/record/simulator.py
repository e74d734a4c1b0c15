"""The simulator's specifics: driving Numba's CUDA simulator block by block.

Numba's simulator runs one block at a time with one Python thread per CUDA
thread. vizmm drives it itself, one ``BlockManager`` per block, so that it
can report progress by block and simulate only a window of blocks (blocks of
these kernels are independent, so their records are exact).

Gotcha: the simulator keeps one ``cuda.shared.array`` per kernel function and
hands it to the next block uninitialised, so shared memory is carried between
blocks; a kernel that reads a slot before writing it (a removed barrier) may
see the previous block's values.

How the simulator schedules the threads of a block (numba-cuda's
``BlockManager``): each CUDA thread is a Python thread, started one after
the other in ``np.ndindex(blockDim)`` order; the interpreter switches
between them every ``sys.getswitchinterval()`` seconds or when one waits; a
``__syncthreads()`` parks a thread until a polling loop sees every live
thread parked. Between barriers, which thread runs is decided by the
interpreter's timing: a kernel without a barrier reads different stale slots
on every run (measured: six runs of the 4 x 4 TILE_WIDTH 2 kernel without
barrier 1 gave six different sets of reads).

The barrier lab therefore runs a block "in turns" (:func:`run_block_in_turns`):
the threads take turns in ``threadIdx`` order (``tx`` fastest, the order of
warp lanes), each running alone until its next ``__syncthreads()`` or its
end; when every thread has had its turn the barrier opens and the next round
begins in the same order. A barrier still means what it means on a GPU (no
thread passes it before all have arrived); between barriers the schedule is
the extreme one where a thread finishes all its work before the next one
starts. Same kernel, same inputs: same reads, same P, every run. Shared
memory then starts zeroed (:func:`safe_shared` with ``zero``) instead of holding
whatever bytes ``np.empty`` found.
"""

from __future__ import annotations

import functools
import sys
import threading
from collections.abc import Iterable

import numpy as np

from .admission import RecordingCancelled

__all__ = [
    "SIM_SWITCH_INTERVAL",
    "run_block_in_turns",
    "safe_shared",
    "simulate",
]

SIM_SWITCH_INTERVAL = 1e-3  # seconds; the interpreter's default is 5e-3


def simulate(
    kern,
    grid,
    block,
    args,
    rec,
    blocks: Iterable[tuple[int, int]] | None,
    update,
    dynamic_shared: int = 0,
    turns: bool = False,
    cancel=None,
):
    """Run ``kern`` in Numba's simulator one block at a time, reporting progress.

    Mirrors what the simulator's own launch does (one ``BlockManager`` per
    block) but lets vizmm choose the blocks and count them. Falls back to a
    plain launch of the whole grid when the simulator's internals differ.
    With ``turns`` the threads of a block take turns between barriers and
    shared memory starts zeroed (see the module docstring): a run is the
    same every time, races included.

    Parameters
    ----------
    kern : numba kernel
        The instrumented kernel, compiled for the simulator.
    grid : tuple of (int, int)
        ``(gx, gy)``, as a CUDA launch gives gridDim (x first).
    block : tuple of (int, int)
        ``(TILE_WIDTH, TILE_WIDTH)``, blockDim.
    args : sequence
        The kernel's arguments (M, N, P, sizes).
    rec : dict of str to ndarray
        The record arrays, passed after ``args``.
    blocks : iterable of (int, int) or None
        The blocks (by, bx) to run, in order; None for every block, row by row.
    update : callable
        ``update(done, total)`` after each block.
    dynamic_shared : int
        The launch's dynamic shared memory (bytes; Fig. 5.14).
    turns : bool
        Threads take turns between barriers and shared memory starts zeroed.
    cancel : threading.Event, optional
        Set it to stop before the next block.

    Raises
    ------
    RecordingCancelled
        When ``cancel`` is set: checked before each block.
    """
    gx, gy = grid
    all_args = [*args, *rec.values()]
    order = [(by, bx) for by in range(gy) for bx in range(gx)] if blocks is None else list(blocks)
    old_interval = sys.getswitchinterval()
    # The simulator's block manager busy-polls its threads; short GIL slices
    # let threads reach each barrier sooner (measured in benchmarks/).
    sys.setswitchinterval(SIM_SWITCH_INTERVAL)
    try:
        try:
            from numba.cuda.simulator import kernel as simk
            from numba.cuda.simulator.cudadrv.devicearray import (
                FakeCUDAArray,
                FakeWithinKernelCUDAArray,
            )

            fake_module = simk.FakeCUDAModule((gx, gy, 1), (*block, 1), dynamic_shared)
            bm_cls = simk.BlockManager
        except (ImportError, AttributeError, TypeError):
            kern[grid, block, 0, dynamic_shared](*all_args)
            update(len(order), len(order))
            return
        # M, N and P go in as the simulator's device arrays, as in its own
        # launch. The record arrays go in as plain NumPy arrays: the recording
        # only stores scalars and takes atomics on them, which the simulator
        # does the same on both, and it skips two Python wrappers per store.
        fake_args = [
            FakeWithinKernelCUDAArray(FakeCUDAArray(a)) if isinstance(a, np.ndarray) else a
            for a in args
        ] + list(rec.values())
        fake_module._shared = safe_shared(dynamic_shared, zero=turns)
        with simk._push_kernel_context(fake_module), simk.swapped_cuda_module(kern.fn, fake_module):
            for i, (by, bx) in enumerate(order):
                if cancel is not None and cancel.is_set():
                    raise RecordingCancelled(
                        f"the recording was cancelled after {i} of {len(order)} blocks"
                    )
                if turns:
                    run_block_in_turns(kern.fn, (gx, gy, 1), (*block, 1), (bx, by, 0), fake_args)
                else:
                    bm = bm_cls(kern.fn, (gx, gy, 1), (*block, 1), False)
                    bm.run((bx, by, 0), *fake_args)
                update(i + 1, len(order))
    finally:
        sys.setswitchinterval(old_interval)


@functools.cache
def _shared_class():
    from numba.core import types
    from numba.cuda.simulator import kernelapi
    from numba.np import numpy_support

    class _SafeShared(kernelapi.FakeCUDAShared):
        """The simulator's shared memory, made once per line even when threads race to make it.

        The simulator's own ``array`` looks the line up and, when absent,
        makes and stores an array in two steps: two threads of the first block
        that reach the line together may each make one and then write and read
        different "shared" arrays (seen under load: 3 of 9 Pvalues of a
        10 x 7 x 11 TILE_WIDTH 3 launch wrong). Here the look-up and the
        making are one step under a lock. ``zero`` makes the arrays of zeros
        (the barrier lab's runs in turns) instead of ``np.empty``'s bytes.
        """

        def __init__(self, dynshared_size=0, zero=False):
            super().__init__(dynshared_size)
            self._zero = zero
            self._lock = threading.Lock()

        def array(self, shape, dtype, alignment=None):
            if shape == 0 or alignment is not None:
                # numba's own numba.cuda, which mypy reads, takes no alignment;
                # numba-cuda's simulator, which runs, does
                return super().array(shape, dtype, alignment)  # type: ignore[call-arg, unused-ignore]
            if isinstance(dtype, types.Type):
                dtype = numpy_support.as_dtype(dtype)
            frame = sys._getframe(1)
            caller = (frame.f_code.co_filename, frame.f_lineno)
            with self._lock:
                res = self._allocations.get(caller)
                if res is None:
                    res = (np.zeros if self._zero else np.empty)(shape, dtype)
                    self._allocations[caller] = res
            return res

    return _SafeShared


def safe_shared(dynshared_size=0, zero=False):
    """The simulator's ``cuda.shared``, each line's array made once under a lock (imports numba).

    Parameters
    ----------
    dynshared_size : int
        The launch's dynamic shared memory, bytes (Fig. 5.14).
    zero : bool
        Make the arrays of zeros (the barrier lab) instead of uninitialised
        (``np.empty``, as the simulator does).
    """
    return _shared_class()(dynshared_size, zero)


@functools.cache
def _turn_thread_class():
    from numba.cuda.simulator import kernel as simk

    class _TurnThread(simk.BlockThread):
        """A simulated CUDA thread that runs only while it holds the turn."""

        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.turn = threading.Event()
            self.paused = threading.Event()
            self.finished = False

        def run(self):
            self.turn.wait()
            self.turn.clear()
            try:
                super().run()
            finally:
                self.finished = True
                self.paused.set()

        def syncthreads(self):
            if self.abort:
                raise RuntimeError("abort flag set on syncthreads call")
            self.paused.set()
            self.turn.wait()
            self.turn.clear()
            if self.abort:
                raise RuntimeError("abort flag set on syncthreads clear")

    return _TurnThread


def run_block_in_turns(fn, grid_dim, block_dim, grid_point, args):
    """Run one block of the simulated kernel ``fn`` with its threads taking turns.

    Parameters
    ----------
    fn : callable
        The kernel's Python function (``dispatcher.fn``), run inside the
        simulator's kernel context (as :func:`simulate` sets it up).
    grid_dim, block_dim : (x, y, z)
    grid_point : (bx, by, bz)
    args : sequence
        The kernel's arguments.

    Raises
    ------
    Exception
        The first exception a thread raised (the simulator names its thread
        and block).
    """
    from numba.cuda.simulator import kernel as simk

    thread_cls = _turn_thread_class()
    manager = simk.BlockManager(fn, grid_dim, block_dim, False)
    bx, by, bz = block_dim
    order = [(x, y, z) for z in range(bz) for y in range(by) for x in range(bx)]
    threads = []
    for point in order:
        t = thread_cls(lambda: fn(*args), manager, grid_point, point, False)
        t.start()
        threads.append(t)
    live = threads
    try:
        while live:
            for t in live:
                t.paused.clear()
                t.turn.set()
                t.paused.wait()
                if t.exception:
                    raise t.exception[0].with_traceback(t.exception[1])
            live = [t for t in live if not t.finished]
    finally:
        for t in threads:
            if not t.finished:
                t.abort = True
                t.turn.set()
        for t in threads:
            t.join()
