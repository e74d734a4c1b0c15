from numba import cuda, float32

TILE_WIDTH = 2


@cuda.jit
def tiled_2d(M, N, P, Width):
    Mds = cuda.shared.array(shape=(TILE_WIDTH, TILE_WIDTH), dtype=float32)
    Nds = cuda.shared.array(shape=(TILE_WIDTH, TILE_WIDTH), dtype=float32)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    Row = cuda.blockIdx.y * TILE_WIDTH + ty
    Col = cuda.blockIdx.x * TILE_WIDTH + tx
    Pvalue = 0.0
    for ph in range(Width // TILE_WIDTH):
        Mds[ty, tx] = M[Row, ph * TILE_WIDTH + tx]
        Nds[ty, tx] = N[ph * TILE_WIDTH + ty, Col]
        cuda.syncthreads()
        for k in range(TILE_WIDTH):
            Pvalue += Mds[ty, k] * Nds[k, tx]
        cuda.syncthreads()
    P[Row, Col] = Pvalue
