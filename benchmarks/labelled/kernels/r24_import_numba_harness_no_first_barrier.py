import os

import numba
from numba import cuda

TILE_WIDTH = 2


@numba.cuda.jit
def tiled_2d(M, N, P, Width):
    Mds = cuda.shared.array((TILE_WIDTH, TILE_WIDTH), numba.float32)
    Nds = cuda.shared.array((TILE_WIDTH, TILE_WIDTH), numba.float32)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    Row = cuda.blockIdx.y * TILE_WIDTH + ty
    Col = cuda.blockIdx.x * TILE_WIDTH + tx
    Pvalue = 0.0
    for ph in range(Width // TILE_WIDTH):
        Mds[ty, tx] = M[Row, ph * TILE_WIDTH + tx]
        Nds[ty, tx] = N[ph * TILE_WIDTH + ty, Col]
        for k in range(TILE_WIDTH):
            Pvalue += Mds[ty, k] * Nds[k, tx]
        cuda.syncthreads()
    P[Row, Col] = Pvalue


if __name__ == "__main__":
    import numpy as np

    Width = int(os.environ.get("WIDTH", "4"))
    M = np.random.randint(0, 10, (Width, Width)).astype(np.float32)
    N = np.random.randint(0, 10, (Width, Width)).astype(np.float32)
    P = np.zeros((Width, Width), np.float32)
    blocks = (Width + TILE_WIDTH - 1) // TILE_WIDTH
    tiled_2d[(blocks, blocks), (TILE_WIDTH, TILE_WIDTH)](M, N, P, Width)
    print("max error", abs(P - M @ N).max())
