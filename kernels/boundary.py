"""The book's tiled kernel with boundary checks, Fig. 5.13 (PMPP 4th ed., Section 5.5).

Square ``Width x Width`` matrices of any ``Width``: a thread whose M or N
element lies outside the matrix stores 0.0 into its Mds / Nds slot (the
zero-fill), and only threads with a valid (Row, Col) store P.
"""

from numba import cuda, float32

from ._record import rec_block_end, rec_block_start, rec_load, rec_pvalue, rec_pwrite, rec_sync
from .codes import LOADED, M_KIND, N_KIND, ZERO_FILL


def make_plain(TILE_WIDTH):
    """Fig. 5.13 for one ``TILE_WIDTH``."""

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
            cuda.syncthreads()

            for k in range(TILE_WIDTH):
                Pvalue += Mds[ty, k] * Nds[k, tx]
            cuda.syncthreads()
        if Row < Width and Col < Width:
            P[Row * Width + Col] = Pvalue

    return matrixMulKernel


def make_instrumented(TILE_WIDTH):
    """Fig. 5.13 plus recording (see ``kernels.codes`` for the record arrays)."""

    @cuda.jit
    def matrixMulKernel(M, N, P, Width,
                        detail, ld, pv, bar, bclk, ticks, spread, pw, blk, seq, mcount, ncount, zf):
        Mds = cuda.shared.array((TILE_WIDTH, TILE_WIDTH), float32)
        Nds = cuda.shared.array((TILE_WIDTH, TILE_WIDTH), float32)

        bx = cuda.blockIdx.x
        by = cuda.blockIdx.y
        tx = cuda.threadIdx.x
        ty = cuda.threadIdx.y
        slot = detail[by, bx]
        rec_block_start(blk, by, bx, ty, tx)

        # Identify the row and column of the P element to work on
        Row = by * TILE_WIDTH + ty
        Col = bx * TILE_WIDTH + tx

        # Loop over the M and N tiles required to compute P element
        Pvalue = float32(0)
        for ph in range((Width + TILE_WIDTH - 1) // TILE_WIDTH):
            # Collaborative loading of M and N tiles into shared memory
            if Row < Width and (ph * TILE_WIDTH + tx) < Width:
                Mds[ty, tx] = M[Row * Width + ph * TILE_WIDTH + tx]
                rec_load(ld, mcount, zf, slot, by, bx, ph, ty, tx,
                         M_KIND, LOADED, Row, ph * TILE_WIDTH + tx, Width)
            else:
                Mds[ty, tx] = float32(0)
                rec_load(ld, mcount, zf, slot, by, bx, ph, ty, tx,
                         M_KIND, ZERO_FILL, Row, ph * TILE_WIDTH + tx, Width)
            if (ph * TILE_WIDTH + ty) < Width and Col < Width:
                Nds[ty, tx] = N[(ph * TILE_WIDTH + ty) * Width + Col]
                rec_load(ld, ncount, zf, slot, by, bx, ph, ty, tx,
                         N_KIND, LOADED, ph * TILE_WIDTH + ty, Col, Width)
            else:
                Nds[ty, tx] = float32(0)
                rec_load(ld, ncount, zf, slot, by, bx, ph, ty, tx,
                         N_KIND, ZERO_FILL, ph * TILE_WIDTH + ty, Col, Width)
            rec_sync(bar, bclk, spread, ticks, slot, by, bx, ph, 0, 0, ty, tx)
            cuda.syncthreads()
            rec_sync(bar, bclk, spread, ticks, slot, by, bx, ph, 0, 1, ty, tx)

            for k in range(TILE_WIDTH):
                Pvalue += Mds[ty, k] * Nds[k, tx]
            rec_pvalue(pv, slot, ph, ty, tx, Pvalue)
            rec_sync(bar, bclk, spread, ticks, slot, by, bx, ph, 1, 0, ty, tx)
            cuda.syncthreads()
            rec_sync(bar, bclk, spread, ticks, slot, by, bx, ph, 1, 1, ty, tx)
        if Row < Width and Col < Width:
            P[Row * Width + Col] = Pvalue
            rec_pwrite(pw, slot, ty, tx, LOADED)
        else:
            rec_pwrite(pw, slot, ty, tx, ZERO_FILL)
        rec_block_end(blk, seq, by, bx, ty, tx)

    return matrixMulKernel
