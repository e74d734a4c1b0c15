"""The book's tiled kernel with boundary checks, Fig. 5.13 (PMPP 4th ed., Section 5.5).

Square ``Width x Width`` matrices of any ``Width``: a thread whose M or N
element lies outside the matrix stores 0.0 into its Mds / Nds slot (the
zero-fill), and only threads with a valid (Row, Col) store P.
"""

from ._hw import instrumented_kernel
from ._record import (
    rec_block_end,
    rec_block_start,
    rec_load,
    rec_pvalue,
    rec_pwrite,
    rec_read,
    rec_sync,
    rec_tag,
    rec_tags_init,
)
from ._target import cuda, float32, int32
from .codes import LOADED, M_KIND, N_KIND, READ_M, READ_N, TAG_ZERO_FILL, ZERO_FILL


def make_plain(TILE_WIDTH, BARRIER_1=True, BARRIER_2=True):
    """Fig. 5.13 for one ``TILE_WIDTH``.

    ``BARRIER_1`` / ``BARRIER_2``: keep (True, the book) or remove (False, the
    barrier lab) the ``__syncthreads()`` after the loads / after the k loop
    (compile-time constants, as in ``tiled.make_plain``).
    """

    @cuda.jit
    def matrixMulKernel(M, N, P, Width):
        Mds = cuda.shared.array((TILE_WIDTH, TILE_WIDTH), float32)
        Nds = cuda.shared.array((TILE_WIDTH, TILE_WIDTH), float32)

        bx = cuda.blockIdx.x
        by = cuda.blockIdx.y
        tx = cuda.threadIdx.x
        ty = cuda.threadIdx.y

        # Identify the row and column of the P element to work on
        Row = by * TILE_WIDTH + ty
        Col = bx * TILE_WIDTH + tx

        # Loop over the M and N tiles required to compute P element
        Pvalue = float32(0)
        for ph in range((Width + TILE_WIDTH - 1) // TILE_WIDTH):
            # Collaborative loading of M and N tiles into shared memory
            if Row < Width and (ph * TILE_WIDTH + tx) < Width:
                Mds[ty, tx] = M[Row * Width + ph * TILE_WIDTH + tx]
            else:
                Mds[ty, tx] = float32(0)
            if (ph * TILE_WIDTH + ty) < Width and Col < Width:
                Nds[ty, tx] = N[(ph * TILE_WIDTH + ty) * Width + Col]
            else:
                Nds[ty, tx] = float32(0)
            if BARRIER_1:
                cuda.syncthreads()

            for k in range(TILE_WIDTH):
                Pvalue += Mds[ty, k] * Nds[k, tx]
            if BARRIER_2:
                cuda.syncthreads()
        if Row < Width and Col < Width:
            P[Row * Width + Col] = Pvalue

    return matrixMulKernel


def make_instrumented(TILE_WIDTH, BARRIER_1=True, BARRIER_2=True, READS=False):
    """Fig. 5.13 plus recording (see ``kernels.codes`` for the record arrays).

    ``READS`` (compile-time, the barrier lab) also records every k-loop read:
    a tag beside each Mds / Nds slot, written with the value, tells which
    element the reader found (``rd`` / ``rv``). Without it the k loop is the
    book's line and the tags are a 1 x 1 placeholder never touched.
    """
    TAGS = (TILE_WIDTH, TILE_WIDTH) if READS else (1, 1)

    @instrumented_kernel
    def matrixMulKernel(
        M,
        N,
        P,
        Width,
        detail,
        ld,
        pv,
        bar,
        bclk,
        ticks,
        spread,
        pw,
        blk,
        seq,
        mcount,
        ncount,
        zf,
        rd,
        rv,
    ):
        Mds = cuda.shared.array((TILE_WIDTH, TILE_WIDTH), float32)
        Nds = cuda.shared.array((TILE_WIDTH, TILE_WIDTH), float32)
        Mtag = cuda.shared.array(TAGS, int32)
        Ntag = cuda.shared.array(TAGS, int32)

        bx = cuda.blockIdx.x
        by = cuda.blockIdx.y
        tx = cuda.threadIdx.x
        ty = cuda.threadIdx.y
        slot = detail[by, bx]  # this block's row in the detailed records, or -1
        bid = by * cuda.gridDim.x + bx
        tk = ty * TILE_WIDTH + tx
        nph = (Width + TILE_WIDTH - 1) // TILE_WIDTH
        rec_block_start(blk, bid, tk)
        if READS:
            rec_tags_init(Mtag, Ntag, ty, tx)

        # Identify the row and column of the P element to work on
        Row = by * TILE_WIDTH + ty
        Col = bx * TILE_WIDTH + tx

        # Loop over the M and N tiles required to compute P element
        Pvalue = float32(0)
        for ph in range((Width + TILE_WIDTH - 1) // TILE_WIDTH):
            # Collaborative loading of M and N tiles into shared memory
            if Row < Width and (ph * TILE_WIDTH + tx) < Width:
                Mds[ty, tx] = M[Row * Width + ph * TILE_WIDTH + tx]
                rec_tag(READS, Mtag, ty, tx, Row * Width + ph * TILE_WIDTH + tx)
                rec_load(
                    ld,
                    mcount,
                    zf,
                    slot,
                    bid,
                    nph,
                    ph,
                    tk,
                    M_KIND,
                    LOADED,
                    Row,
                    ph * TILE_WIDTH + tx,
                    Width,
                )
            else:
                Mds[ty, tx] = float32(0)
                rec_tag(READS, Mtag, ty, tx, TAG_ZERO_FILL)
                rec_load(
                    ld,
                    mcount,
                    zf,
                    slot,
                    bid,
                    nph,
                    ph,
                    tk,
                    M_KIND,
                    ZERO_FILL,
                    Row,
                    ph * TILE_WIDTH + tx,
                    Width,
                )
            if (ph * TILE_WIDTH + ty) < Width and Col < Width:
                Nds[ty, tx] = N[(ph * TILE_WIDTH + ty) * Width + Col]
                rec_tag(READS, Ntag, ty, tx, (ph * TILE_WIDTH + ty) * Width + Col)
                rec_load(
                    ld,
                    ncount,
                    zf,
                    slot,
                    bid,
                    nph,
                    ph,
                    tk,
                    N_KIND,
                    LOADED,
                    ph * TILE_WIDTH + ty,
                    Col,
                    Width,
                )
            else:
                Nds[ty, tx] = float32(0)
                rec_tag(READS, Ntag, ty, tx, TAG_ZERO_FILL)
                rec_load(
                    ld,
                    ncount,
                    zf,
                    slot,
                    bid,
                    nph,
                    ph,
                    tk,
                    N_KIND,
                    ZERO_FILL,
                    ph * TILE_WIDTH + ty,
                    Col,
                    Width,
                )
            if BARRIER_1:
                rec_sync(bar, bclk, spread, ticks, slot, bid, nph, ph, tk, 0, 0)
                cuda.syncthreads()
                rec_sync(bar, bclk, spread, ticks, slot, bid, nph, ph, tk, 0, 1)

            for k in range(TILE_WIDTH):
                if READS:
                    Pvalue += rec_read(
                        rd, rv, slot, nph, ph, tk, k, READ_M, Mds, Mtag, ty, k
                    ) * rec_read(rd, rv, slot, nph, ph, tk, k, READ_N, Nds, Ntag, k, tx)
                else:
                    Pvalue += Mds[ty, k] * Nds[k, tx]
            rec_pvalue(pv, slot, nph, ph, tk, Pvalue)
            if BARRIER_2:
                rec_sync(bar, bclk, spread, ticks, slot, bid, nph, ph, tk, 1, 0)
                cuda.syncthreads()
                rec_sync(bar, bclk, spread, ticks, slot, bid, nph, ph, tk, 1, 1)
        if Row < Width and Col < Width:
            P[Row * Width + Col] = Pvalue
            rec_pwrite(pw, slot, tk, LOADED)
        else:
            rec_pwrite(pw, slot, tk, ZERO_FILL)
        rec_block_end(blk, seq, bid, tk)

    return matrixMulKernel
