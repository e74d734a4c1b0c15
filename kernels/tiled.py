"""The book's tiled kernel, Fig. 5.9 (PMPP 4th ed., Section 5.4).

Square ``Width x Width`` matrices, linearized row-major as in the book, one
thread per P element, ``TILE_WIDTH x TILE_WIDTH`` threads per block.

The phase loop's bound. Fig. 5.9 prints ``ph < Width/TILE_WIDTH`` and assumes
``Width`` is a multiple of ``TILE_WIDTH``. Both kernels here (plain and
instrumented: the instrumented one is exactly the plain one plus records, a
test says so) write the bound as ``ceil(Width / TILE_WIDTH)``,
``(Width + TILE_WIDTH - 1) // TILE_WIDTH``: the form Section 5.5 gives for
arbitrary widths. Under Fig. 5.9's assumption the two are the same number,
so every launch of the book's figure runs exactly as printed; on any other
``Width`` the kernel runs the extra phase with Fig. 5.9's unchecked loads,
which is exactly the situation the book's Fig. 5.11 / 5.12 discussion walks
through. A
load whose (row, col) is outside the matrix but whose linearized index is
inside the allocation really reads that other element (``WRONG_ELEMENT``,
e.g. M_{0,3} reads M_{1,0}); one past the end of the allocation is recorded
as ``OUT_OF_ALLOCATION`` and not performed, and the thread keeps running.
"""

from ._hw import instrumented_kernel
from ._record import (
    classify_unchecked,
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
from .codes import M_KIND, N_KIND, OUT_OF_ALLOCATION, READ_M, READ_N


def make_plain(TILE_WIDTH, BARRIER_1=True, BARRIER_2=True):
    """Fig. 5.9 for one ``TILE_WIDTH`` (a compile-time constant, as the book's ``#define``).

    ``BARRIER_1`` / ``BARRIER_2`` keep (True, the book's kernel) or remove
    (False, the barrier lab) the ``__syncthreads()`` after the loads and the
    one after the k loop; they are compile-time constants too, so a removed
    barrier is not in the compiled kernel at all.
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
            Mds[ty, tx] = M[Row * Width + ph * TILE_WIDTH + tx]
            Nds[ty, tx] = N[(ph * TILE_WIDTH + ty) * Width + Col]
            if BARRIER_1:
                cuda.syncthreads()

            for k in range(TILE_WIDTH):
                Pvalue += Mds[ty, k] * Nds[k, tx]
            if BARRIER_2:
                cuda.syncthreads()
        P[Row * Width + Col] = Pvalue

    return matrixMulKernel


def make_instrumented(TILE_WIDTH, BARRIER_1=True, BARRIER_2=True, READS=False):
    """Fig. 5.9 plus recording (see ``kernels.codes`` for the record arrays).

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
            mkind = classify_unchecked(Row, ph * TILE_WIDTH + tx, Width, Width)
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
                mkind,
                Row,
                ph * TILE_WIDTH + tx,
                Width,
            )
            if mkind != OUT_OF_ALLOCATION:
                Mds[ty, tx] = M[Row * Width + ph * TILE_WIDTH + tx]
                rec_tag(READS, Mtag, ty, tx, Row * Width + ph * TILE_WIDTH + tx)
            nkind = classify_unchecked(ph * TILE_WIDTH + ty, Col, Width, Width)
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
                nkind,
                ph * TILE_WIDTH + ty,
                Col,
                Width,
            )
            if nkind != OUT_OF_ALLOCATION:
                Nds[ty, tx] = N[(ph * TILE_WIDTH + ty) * Width + Col]
                rec_tag(READS, Ntag, ty, tx, (ph * TILE_WIDTH + ty) * Width + Col)
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
        pkind = classify_unchecked(Row, Col, Width, Width)
        rec_pwrite(pw, slot, tk, pkind)
        if pkind != OUT_OF_ALLOCATION:
            P[Row * Width + Col] = Pvalue
        rec_block_end(blk, seq, bid, tk)

    return matrixMulKernel
