"""Probes of the barrier records (``rec_sync``), timed by ``gpu_suite.py``.

Imported by a timing worker after it chose its target (``vizmm_kernels._target``):
each function has ``rec_sync``'s signature and is swapped into a copy of the
instrumented tiled kernel. Both record less than the shipped function, to
say where its time goes in aggregated mode:

* ``clock_only``: each warp's lane 0 reads ``%clock64`` and folds it
  nowhere (what the clock reads cost without the atomics);
* ``one_atomic``: only thread 0 of a block folds its clock into ``spread``
  (what one global atomic min or max per warp costs against one per block).

Measured and dropped (H100, 2026-11): folding the warps' clocks with
shared-memory atomics and storing the block's values after the barrier
(1.95x -> 2.28x the plain kernel at Width 4096, TILE_WIDTH 32, numba-cuda;
numba-cuda-mlir's code for it faulted), a reduction of the warps' clocks
with shuffles in warp 0 (2.15x), one ticket atomic per warp instead of per
thread in detailed blocks (full recording 10.1x -> 10.7x), and
``opaque`` record indices that free the registers the compiler's strength
reduction kept (no change).
"""

from vizmm_kernels._hw import clock64, device
from vizmm_kernels._target import cuda


@device
def clock_only(bar, bclk, spread, ticks, slot, bid, nph, ph, tk, which, when):
    aggregated = spread.shape[0] > 0
    lane0 = tk % 32 == 0
    if slot >= 0 or (aggregated and lane0):
        clk = clock64()
        if slot >= 0:
            tick = cuda.atomic.add(ticks, slot, 1)
            nt = cuda.blockDim.x * cuda.blockDim.y
            i = ((slot * nph + ph) * 4 + which * 2 + when) * nt + tk
            bar[i] = tick
            bclk[i] = clk


@device
def one_atomic(bar, bclk, spread, ticks, slot, bid, nph, ph, tk, which, when):
    aggregated = spread.shape[0] > 0
    if slot >= 0 or (aggregated and tk == 0):
        clk = clock64()
        if slot >= 0:
            tick = cuda.atomic.add(ticks, slot, 1)
            nt = cuda.blockDim.x * cuda.blockDim.y
            i = ((slot * nph + ph) * 4 + which * 2 + when) * nt + tk
            bar[i] = tick
            bclk[i] = clk
        if aggregated and tk == 0:
            j = ((bid * nph + ph) * 2 + which) * 3
            if when == 0:
                cuda.atomic.min(spread, j, clk)
                cuda.atomic.max(spread, j + 1, clk)
            else:
                cuda.atomic.max(spread, j + 2, clk)


#: name -> (function, the mode it is timed in)
VARIANTS = {
    "clock_only": (clock_only, "aggregated"),
    "one_atomic": (one_atomic, "aggregated"),
}
