"""The book's simple kernel: one thread per P element, M and N read from global memory.

PMPP 4th ed., Fig. 3.11 (Section 3.4; Fig. 4.7 in older editions): every
thread reads a whole row of M and a whole column of N from global memory, so
each M and N element is read ``Width`` times, the baseline the tiled kernels
cut ``TILE_WIDTH``-fold (Section 5.4). Square ``Width x Width`` matrices,
linearized row-major; blocks of ``TILE_WIDTH x TILE_WIDTH`` threads.
"""

from ._hw import instrumented_kernel
from ._record import rec_block_end, rec_block_start, rec_global_read, rec_pwrite
from ._target import cuda, float32
from .codes import LOADED, ZERO_FILL


def make_plain(TILE_WIDTH):
    """The simple kernel (``TILE_WIDTH`` only sets the block shape at launch)."""

    @cuda.jit
    def matrixMulKernel(M, N, P, Width):
        Row = cuda.blockIdx.y * cuda.blockDim.y + cuda.threadIdx.y
        Col = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
        if Row < Width and Col < Width:
            Pvalue = float32(0)
            for k in range(Width):
                Pvalue += M[Row * Width + k] * N[k * Width + Col]
            P[Row * Width + Col] = Pvalue

    return matrixMulKernel


def make_instrumented(TILE_WIDTH):
    """The simple kernel plus recording: per-element global read counts and the P write."""

    @instrumented_kernel
    def matrixMulKernel(
        M, N, P, Width, detail, ld, pv, bar, bclk, ticks, spread, pw, blk, seq, mcount, ncount, zf
    ):
        slot = detail[cuda.blockIdx.y, cuda.blockIdx.x]  # the block's detailed row, or -1
        bid = cuda.blockIdx.y * cuda.gridDim.x + cuda.blockIdx.x
        tk = cuda.threadIdx.y * TILE_WIDTH + cuda.threadIdx.x
        rec_block_start(blk, bid, tk)
        Row = cuda.blockIdx.y * cuda.blockDim.y + cuda.threadIdx.y
        Col = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
        if Row < Width and Col < Width:
            Pvalue = float32(0)
            for k in range(Width):
                Pvalue += M[Row * Width + k] * N[k * Width + Col]
                rec_global_read(mcount, Row * Width + k)
                rec_global_read(ncount, k * Width + Col)
            P[Row * Width + Col] = Pvalue
            rec_pwrite(pw, slot, tk, LOADED)
        else:
            rec_pwrite(pw, slot, tk, ZERO_FILL)
        rec_block_end(blk, seq, bid, tk)

    return matrixMulKernel
