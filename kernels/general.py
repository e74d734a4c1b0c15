"""The general tiled kernel: a ``j x k`` M times a ``k x l`` N gives a ``j x l`` P.

The exercise the book leaves at the end of Section 5.5 (PMPP 4th ed.): Fig. 5.13
with the three sizes kept apart. Same boundary checks: zero-fill of Mds/Nds
outside M and N, P stored only where ``Row < j`` and ``Col < l``.
"""

from ._hw import instrumented_kernel
from ._record import rec_block_end, rec_block_start, rec_load, rec_pvalue, rec_pwrite, rec_sync
from ._target import cuda, float32
from .codes import LOADED, M_KIND, N_KIND, ZERO_FILL


def make_plain(TILE_WIDTH):
    """The general ``j x k . k x l`` tiled kernel for one ``TILE_WIDTH``."""

    @cuda.jit
    def matrixMulKernel(M, N, P, j, k, l):
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
        for ph in range((k + TILE_WIDTH - 1) // TILE_WIDTH):
            # Collaborative loading of M and N tiles into shared memory
            if Row < j and (ph * TILE_WIDTH + tx) < k:
                Mds[ty, tx] = M[Row * k + ph * TILE_WIDTH + tx]
            else:
                Mds[ty, tx] = float32(0)
            if (ph * TILE_WIDTH + ty) < k and Col < l:
                Nds[ty, tx] = N[(ph * TILE_WIDTH + ty) * l + Col]
            else:
                Nds[ty, tx] = float32(0)
            cuda.syncthreads()

            for i in range(TILE_WIDTH):
                Pvalue += Mds[ty, i] * Nds[i, tx]
            cuda.syncthreads()
        if Row < j and Col < l:
            P[Row * l + Col] = Pvalue

    return matrixMulKernel


def make_instrumented(TILE_WIDTH):
    """The general kernel plus recording (see ``kernels.codes`` for the record arrays)."""

    @instrumented_kernel
    def matrixMulKernel(
        M, N, P, j, k, l, detail, ld, pv, bar, bclk, ticks, spread, pw, blk, seq, mcount, ncount, zf
    ):
        Mds = cuda.shared.array((TILE_WIDTH, TILE_WIDTH), float32)
        Nds = cuda.shared.array((TILE_WIDTH, TILE_WIDTH), float32)

        bx = cuda.blockIdx.x
        by = cuda.blockIdx.y
        tx = cuda.threadIdx.x
        ty = cuda.threadIdx.y
        slot = detail[by, bx]  # this block's row in the detailed records, or -1
        bid = by * cuda.gridDim.x + bx
        tk = ty * TILE_WIDTH + tx
        nph = (k + TILE_WIDTH - 1) // TILE_WIDTH
        rec_block_start(blk, bid, tk)

        # Identify the row and column of the P element to work on
        Row = by * TILE_WIDTH + ty
        Col = bx * TILE_WIDTH + tx

        # Loop over the M and N tiles required to compute P element
        Pvalue = float32(0)
        for ph in range((k + TILE_WIDTH - 1) // TILE_WIDTH):
            # Collaborative loading of M and N tiles into shared memory
            if Row < j and (ph * TILE_WIDTH + tx) < k:
                Mds[ty, tx] = M[Row * k + ph * TILE_WIDTH + tx]
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
                    k,
                )
            else:
                Mds[ty, tx] = float32(0)
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
                    k,
                )
            if (ph * TILE_WIDTH + ty) < k and Col < l:
                Nds[ty, tx] = N[(ph * TILE_WIDTH + ty) * l + Col]
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
                    l,
                )
            else:
                Nds[ty, tx] = float32(0)
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
                    l,
                )
            rec_sync(bar, bclk, spread, ticks, slot, bid, nph, ph, tk, 0, 0)
            cuda.syncthreads()
            rec_sync(bar, bclk, spread, ticks, slot, bid, nph, ph, tk, 0, 1)

            for i in range(TILE_WIDTH):
                Pvalue += Mds[ty, i] * Nds[i, tx]
            rec_pvalue(pv, slot, nph, ph, tk, Pvalue)
            rec_sync(bar, bclk, spread, ticks, slot, bid, nph, ph, tk, 1, 0)
            cuda.syncthreads()
            rec_sync(bar, bclk, spread, ticks, slot, bid, nph, ph, tk, 1, 1)
        if Row < j and Col < l:
            P[Row * l + Col] = Pvalue
            rec_pwrite(pw, slot, tk, LOADED)
        else:
            rec_pwrite(pw, slot, tk, ZERO_FILL)
        rec_block_end(blk, seq, bid, tk)

    return matrixMulKernel
