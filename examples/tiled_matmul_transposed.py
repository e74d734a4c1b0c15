"""A wrong submission: Fig. 5.9 as a student writes it from the C, N's tile stored transposed.

``Nds[tx][ty] = N[...]`` where the book has ``Nds[ty][tx]``: thread (ty, tx)
stores N's element of row ``ph*TILE_WIDTH + ty`` into the slot the k loop
reads as row ``tx``. ``vizmm check`` names the first product it spoils and
the thread that stored the slot it came from.
"""

from numba import cuda, float32

TILE_WIDTH = 2


@cuda.jit
def matmul(M, N, P, Width):
    """P = M·N, one thread per P element, tile by tile (Fig. 5.9), but for one line."""
    Mds = cuda.shared.array((TILE_WIDTH, TILE_WIDTH), float32)
    Nds = cuda.shared.array((TILE_WIDTH, TILE_WIDTH), float32)
    bx = cuda.blockIdx.x
    by = cuda.blockIdx.y
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    Row = by * TILE_WIDTH + ty
    Col = bx * TILE_WIDTH + tx
    Pvalue = float32(0)
    for ph in range(Width // TILE_WIDTH):
        Mds[ty][tx] = M[Row * Width + ph * TILE_WIDTH + tx]
        Nds[tx][ty] = N[(ph * TILE_WIDTH + ty) * Width + Col]
        cuda.syncthreads()
        for k in range(TILE_WIDTH):
            Pvalue += Mds[ty][k] * Nds[k][tx]
        cuda.syncthreads()
    P[Row * Width + Col] = Pvalue
