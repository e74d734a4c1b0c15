"""The book's simple kernel: one thread per P element, M and N read from global memory.

PMPP 4th ed., Fig. 3.11 (Section 3.4; Fig. 4.7 in older editions): every
thread reads a whole row of M and a whole column of N from global memory, so
each M and N element is read ``Width`` times, the baseline the tiled kernels
cut ``TILE_WIDTH``-fold (Section 5.4). Square ``Width x Width`` matrices,
linearized row-major; blocks of ``TILE_WIDTH x TILE_WIDTH`` threads.
"""

from ._target import cuda, float32


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
