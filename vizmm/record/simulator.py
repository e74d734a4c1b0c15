"""The simulator's specifics: driving Numba's CUDA simulator block by block.

Numba's simulator runs one block at a time with one Python thread per CUDA
thread. vizmm drives it itself, one ``BlockManager`` per block, so that it
can report progress by block and simulate only a window of blocks (blocks of
these kernels are independent, so their records are exact).

Gotcha: the simulator keeps one ``cuda.shared.array`` per kernel function and
hands it to the next block uninitialised, so shared memory is carried between
blocks; a kernel that reads a slot before writing it (a removed barrier) may
see the previous block's values.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable

import numpy as np

__all__ = ["SIM_SWITCH_INTERVAL", "simulate"]

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
):
    """Run ``kern`` in Numba's simulator one block at a time, reporting progress.

    ``dynamic_shared`` is the launch's dynamic shared memory (bytes; Fig. 5.14).

    Mirrors what the simulator's own launch does (one ``BlockManager`` per
    block) but lets vizmm choose the blocks and count them. Falls back to a
    plain launch of the whole grid when the simulator's internals differ.
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
        with simk._push_kernel_context(fake_module), simk.swapped_cuda_module(kern.fn, fake_module):
            for i, (by, bx) in enumerate(order):
                bm = bm_cls(kern.fn, (gx, gy, 1), (*block, 1), False)
                bm.run((bx, by, 0), *fake_args)
                update(i + 1, len(order))
    finally:
        sys.setswitchinterval(old_interval)
