"""Correct, style 3: 1-D shared arrays indexed ty * TILE_WIDTH + tx, the checks kept in names."""

from numba import cuda, float32

TILE_WIDTH = 2


@cuda.jit
def matmul(M, N, P, Width):
    """P = M·N."""
    Mds = cuda.shared.array(TILE_WIDTH * TILE_WIDTH, float32)
    Nds = cuda.shared.array(TILE_WIDTH * TILE_WIDTH, float32)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    Row = cuda.blockIdx.y * TILE_WIDTH + ty
    Col = cuda.blockIdx.x * TILE_WIDTH + tx
    total = float32(0)
    phases = (Width + TILE_WIDTH - 1) // TILE_WIDTH
    for ph in range(phases):
        mcol = ph * TILE_WIDTH + tx
        nrow = ph * TILE_WIDTH + ty
        if Row < Width and mcol < Width:
            Mds[ty * TILE_WIDTH + tx] = M[Row * Width + mcol]
        else:
            Mds[ty * TILE_WIDTH + tx] = 0.0
        if nrow < Width and Col < Width:
            Nds[ty * TILE_WIDTH + tx] = N[nrow * Width + Col]
        else:
            Nds[ty * TILE_WIDTH + tx] = 0.0
        cuda.syncthreads()
        for k in range(TILE_WIDTH):
            total += Mds[ty * TILE_WIDTH + k] * Nds[k * TILE_WIDTH + tx]
        cuda.syncthreads()
    if Row < Width and Col < Width:
        P[Row * Width + Col] = total
