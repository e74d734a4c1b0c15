"""Device functions shared by the instrumented kernels: they only write records.

Every function here writes into arrays sized by the host before the launch,
one slot per (detailed block, phase, thread); nothing is appended, so a GPU run
and a simulator run of the same launch fill the same slots with the same
values (except clocks and arrival order, which are timing).
"""

from numba import cuda

from ._hw import clock64, device, globaltimer, smid
from .codes import (
    BLK_CLK0,
    BLK_CLK1,
    BLK_SEQ,
    BLK_SMID,
    BLK_T0,
    BLK_T1,
    LOADED,
    OUT_OF_ALLOCATION,
    WRONG_ELEMENT,
    ZERO_FILL,
)


@device
def classify_unchecked(row, col, nrows, ncols):
    """What an unchecked load of ``A[row*ncols + col]`` really touches.

    Returns ``LOADED`` when (row, col) is inside the ``nrows x ncols`` matrix,
    ``WRONG_ELEMENT`` when it is outside but its linearized index still lies
    in the allocation (the row wrap of Fig. 5.11), else ``OUT_OF_ALLOCATION``.
    """
    if row < nrows and col < ncols:
        return LOADED
    if row * ncols + col < nrows * ncols:
        return WRONG_ELEMENT
    return OUT_OF_ALLOCATION


@device
def rec_load(ld, counts, zf, slot, by, bx, ph, ty, tx, base, kind, row, col, ncols):
    """Record one tile load: the code's (row, col) and what the access was.

    Global reads (``LOADED`` and ``WRONG_ELEMENT``) also bump the per-element
    read counter ``counts`` at the linearized index actually read; a
    zero-fill bumps the block's ``zf[by, bx, ph, base // 3]`` (M: 0, N: 1).
    """
    if kind == LOADED or kind == WRONG_ELEMENT:
        cuda.atomic.add(counts, row * ncols + col, 1)
    elif kind == ZERO_FILL:
        cuda.atomic.add(zf, (by, bx, ph, base // 3), 1)
    if slot >= 0:
        ld[slot, ph, ty, tx, base] = kind
        ld[slot, ph, ty, tx, base + 1] = row
        ld[slot, ph, ty, tx, base + 2] = col


@device
def rec_pvalue(pv, slot, ph, ty, tx, value):
    """Record a thread's Pvalue after phase ``ph``."""
    if slot >= 0:
        pv[slot, ph, ty, tx] = value


@device
def rec_pwrite(pw, slot, ty, tx, kind):
    """Record what became of the thread's P store (a code of ``codes``)."""
    if slot >= 0:
        pw[slot, ty, tx] = kind



@device
def rec_sync(bar, bclk, spread, ticks, slot, by, bx, ph, which, when, ty, tx):
    """Record one thread's arrival at (``when=0``) or release from (``when=1``) a barrier.

    For a block recorded in detail (``slot >= 0``) the thread takes a ticket
    from the block's logical clock ``ticks[slot]`` (an atomic counter, so the
    tickets give the order in which the threads passed this point) and stores
    it with its ``%clock64`` in ``bar`` / ``bclk[slot, ph, which, when, ty, tx]``.
    When ``spread`` is not empty (aggregated mode), lane 0 of each warp folds
    its clock into ``spread[by, bx, ph, which, 2*when : 2*when+2]`` (min, max).
    """
    clk = clock64()
    if slot >= 0:
        tick = cuda.atomic.add(ticks, slot, 1)
        bar[slot, ph, which, when, ty, tx] = tick
        bclk[slot, ph, which, when, ty, tx] = clk
    if spread.shape[0] > 0:
        if (ty * cuda.blockDim.x + tx) % 32 == 0:
            cuda.atomic.min(spread, (by, bx, ph, which, 2 * when), clk)
            cuda.atomic.max(spread, (by, bx, ph, which, 2 * when + 1), clk)


@device
def rec_block_start(blk, by, bx, ty, tx):
    """Thread (0, 0) records the block's SM, ``%globaltimer`` (ns) and ``%clock64`` at start."""
    if ty == 0 and tx == 0:
        blk[by, bx, BLK_SMID] = smid()
        blk[by, bx, BLK_T0] = globaltimer()
        blk[by, bx, BLK_CLK0] = clock64()


@device
def rec_block_end(blk, seq, by, bx, ty, tx):
    """Thread (0, 0) records the block's end time and its completion order ``seq``."""
    if ty == 0 and tx == 0:
        blk[by, bx, BLK_CLK1] = clock64()
        blk[by, bx, BLK_T1] = globaltimer()
        blk[by, bx, BLK_SEQ] = cuda.atomic.add(seq, 0, 1)
