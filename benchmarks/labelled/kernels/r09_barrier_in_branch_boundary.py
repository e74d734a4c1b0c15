from numba import cuda, float32

TILE_WIDTH = 2


@cuda.jit
def tiled_boundary_2d(M, N, P, Width):
    Mds = cuda.shared.array((TILE_WIDTH, TILE_WIDTH), float32)
    Nds = cuda.shared.array((TILE_WIDTH, TILE_WIDTH), float32)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    Row = cuda.blockIdx.y * TILE_WIDTH + ty
    Col = cuda.blockIdx.x * TILE_WIDTH + tx
    Pvalue = 0.0
    for ph in range((Width + TILE_WIDTH - 1) // TILE_WIDTH):
        if Row < Width and ph * TILE_WIDTH + tx < Width:
            Mds[ty, tx] = M[Row, ph * TILE_WIDTH + tx]
        else:
            Mds[ty, tx] = 0.0
        if ph * TILE_WIDTH + ty < Width and Col < Width:
            Nds[ty, tx] = N[ph * TILE_WIDTH + ty, Col]
        else:
            Nds[ty, tx] = 0.0
        if Row < Width and Col < Width:
            cuda.syncthreads()
        for k in range(TILE_WIDTH):
            Pvalue += Mds[ty, k] * Nds[k, tx]
        cuda.syncthreads()
    if Row < Width and Col < Width:
        P[Row, Col] = Pvalue
