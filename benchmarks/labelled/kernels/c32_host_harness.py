import os

from numba import cuda, float32

TILE_WIDTH = 2


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

    # Loop over the M and N tiles required to compute the P element
    Pvalue = 0.0
    for ph in range(Width // TILE_WIDTH):
        # Collaborative loading of M and N tiles into shared memory
        Mds[ty][tx] = M[Row * Width + ph * TILE_WIDTH + tx]
        Nds[ty][tx] = N[(ph * TILE_WIDTH + ty) * Width + Col]
        cuda.syncthreads()

        for k in range(TILE_WIDTH):
            Pvalue += Mds[ty][k] * Nds[k][tx]
        cuda.syncthreads()
    P[Row * Width + Col] = Pvalue


if __name__ == "__main__":
    import numpy as np

    Width = int(os.environ.get("WIDTH", "4"))
    M = np.random.randint(0, 10, (Width, Width)).astype(np.float32)
    N = np.random.randint(0, 10, (Width, Width)).astype(np.float32)
    P = np.zeros((Width, Width), np.float32)
    blocks = (Width + TILE_WIDTH - 1) // TILE_WIDTH
    matrixMulKernel[(blocks, blocks), (TILE_WIDTH, TILE_WIDTH)](M.ravel(), N.ravel(), P.ravel(), Width)
    print("max error", abs(P - M @ N).max())
