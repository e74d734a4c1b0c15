"""Device functions shared by the instrumented kernels: they only write records.

Every function here writes into arrays sized by the host before the launch,
one slot per (detailed block, phase, thread); nothing is appended, so a GPU run
and a simulator run of the same launch fill the same slots with the same
values (except clocks and arrival order, which are timing).

The arrays are one-dimensional (C order of the shapes the docstrings give)
and indexed from a few per-thread integers: ``slot`` (the block's row in the
detailed records, -1 when the block is not recorded in detail), ``bid``
(``by * gridDim.x + bx``), ``nph`` (phases) and ``tk`` (``ty * T + tx``).
Multi-dimensional record arrays kept each array's strides live across the
phase loop and tripled the kernel's registers (32 to 96 at TILE_WIDTH 16,
which cut occupancy to a quarter).
"""

from ._hw import clock64, device, globaltimer, smid
from ._target import cuda
from .codes import (
    BLK_CLK0,
    BLK_CLK1,
    BLK_SEQ,
    BLK_SMID,
    BLK_T0,
    BLK_T1,
    LOADED,
    OUT_OF_ALLOCATION,
    TAG_NEVER_WRITTEN,
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
def rec_load(ld, counts, zf, slot, bid, nph, ph, tk, field, kind, row, col, ncols):
    """Record one tile load: the code's (row, col) and what the access was.

    ``ld`` is the flat ``(nd, nph, T, T, 6)`` array; ``field`` is ``M_KIND``
    or ``N_KIND``. Global reads (``LOADED`` and ``WRONG_ELEMENT``) bump the
    per-element read counter ``counts`` at the linearized index actually
    read (skipped when ``counts`` is empty); a zero-fill bumps the block's
    ``zf[bid, ph, field // 3]`` (flat ``(gy*gx, nph, 2)``).
    """
    if kind == LOADED or kind == WRONG_ELEMENT:
        if counts.shape[0] > 0:
            cuda.atomic.add(counts, row * ncols + col, 1)
    elif kind == ZERO_FILL:
        cuda.atomic.add(zf, (bid * nph + ph) * 2 + field // 3, 1)
    if slot >= 0:
        i = ((slot * nph + ph) * (cuda.blockDim.x * cuda.blockDim.y) + tk) * 6 + field
        ld[i] = kind
        ld[i + 1] = row
        ld[i + 2] = col


@device
def rec_global_read(counts, index):
    """Count one global read of element ``index`` (the naive kernel's loads)."""
    cuda.atomic.add(counts, index, 1)


@device
def rec_pvalue(pv, slot, nph, ph, tk, value):
    """Record a thread's Pvalue after phase ``ph`` (flat ``(nd, nph, T, T)``)."""
    if slot >= 0:
        pv[(slot * nph + ph) * (cuda.blockDim.x * cuda.blockDim.y) + tk] = value


@device
def rec_pwrite(pw, slot, tk, kind):
    """Record what became of the thread's P store (flat ``(nd, T, T)``)."""
    if slot >= 0:
        pw[slot * (cuda.blockDim.x * cuda.blockDim.y) + tk] = kind


@device
def rec_sync(bar, bclk, spread, ticks, slot, bid, nph, ph, tk, which, when):
    """Record one thread's arrival at (``when=0``) or release from (``when=1``) a barrier.

    For a block recorded in detail (``slot >= 0``) the thread takes a ticket
    from the block's logical clock ``ticks[slot]`` (an atomic counter, so the
    tickets give the order in which the threads passed this point) and stores
    it with its ``%clock64`` in ``bar`` / ``bclk`` (flat ``(nd, nph, 2, 2, T,
    T)``). When ``spread`` is not empty (aggregated mode), lane 0 of each warp
    folds its clock into ``spread`` (flat ``(gy*gx, nph, 2, 3)``: first and
    last arrival, last release) with atomic min and max. Only the threads
    that record read the clock.
    """
    aggregated = spread.shape[0] > 0
    lane0 = tk % 32 == 0
    if slot >= 0 or (aggregated and lane0):
        clk = clock64()
        if slot >= 0:
            tick = cuda.atomic.add(ticks, slot, 1)
            i = ((slot * nph + ph) * 4 + which * 2 + when) * (
                cuda.blockDim.x * cuda.blockDim.y
            ) + tk
            bar[i] = tick
            bclk[i] = clk
        if aggregated and lane0:
            j = ((bid * nph + ph) * 2 + which) * 3
            if when == 0:
                cuda.atomic.min(spread, j, clk)
                cuda.atomic.max(spread, j + 1, clk)
            else:
                cuda.atomic.max(spread, j + 2, clk)


@device
def rec_block_start(blk, bid, tk):
    """Thread (0, 0) records the block's SM, ``%globaltimer`` (ns) and ``%clock64`` at start."""
    if tk == 0:
        blk[bid * 6 + BLK_SMID] = smid()
        blk[bid * 6 + BLK_T0] = globaltimer()
        blk[bid * 6 + BLK_CLK0] = clock64()


@device
def rec_block_end(blk, seq, bid, tk):
    """Thread (0, 0) records the block's end time and its completion order ``seq``."""
    if tk == 0:
        blk[bid * 6 + BLK_CLK1] = clock64()
        blk[bid * 6 + BLK_T1] = globaltimer()
        blk[bid * 6 + BLK_SEQ] = cuda.atomic.add(seq, 0, 1)


@device
def rec_tags_init(mtag, ntag, ty, tx):
    """Barrier lab: mark this thread's Mds / Nds slot as never written, then wait.

    The tags live in shared memory beside Mds and Nds (int32, T x T) and start
    as whatever the last block left there; every thread stamps its own slot
    with ``TAG_NEVER_WRITTEN`` and the block waits once (a barrier of the
    recording only, before the phase loop), so a read that comes too early
    reads the sentinel and not a stale tag.
    """
    mtag[ty, tx] = TAG_NEVER_WRITTEN
    ntag[ty, tx] = TAG_NEVER_WRITTEN
    cuda.syncthreads()


@device
def rec_tag(reads, tag, ty, tx, value):
    """Barrier lab: write the tag of slot (ty, tx) right after the value (if ``reads``)."""
    if reads:
        tag[ty, tx] = value


@device
def rec_read(rd, rv, slot, nph, ph, tk, k, field, ds, tag, r, c):
    """Barrier lab: read ``ds[r, c]`` once, record it with its tag, return it.

    The kernel multiplies the returned value, so the record is the value the
    thread really used. ``rd`` (int32 tags) and ``rv`` (float32 values) are
    flat ``(nd, nph, T, T, T, 2)``: per block slot, phase, thread, ``k`` and
    ``field`` (``READ_M`` for Mds[ty][k], ``READ_N`` for Nds[k][tx]). Skipped
    when ``rd`` is empty or the block is not recorded (``slot < 0``). The tag
    is read after the value; on a GPU a write landing between the two loads
    would pair the old value with the new tag (not seen in our runs).
    """
    v = ds[r, c]
    if slot >= 0 and rd.shape[0] > 0:
        T = cuda.blockDim.x
        i = ((((slot * nph + ph) * (T * cuda.blockDim.y) + tk) * T + k) * 2) + field
        rd[i] = tag[r, c]
        rv[i] = v
    return v
