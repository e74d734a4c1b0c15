from numba import cuda, float32

TILE_WIDTH = 2


@cuda.jit
def tiled_flat_shared(M, N, P, Width):
    Mds = cuda.shared.array(TILE_WIDTH * TILE_WIDTH, float32)
    Nds = cuda.shared.array(TILE_WIDTH * TILE_WIDTH, float32)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    Row = cuda.blockIdx.y * TILE_WIDTH + ty
    Col = cuda.blockIdx.x * TILE_WIDTH + tx
    Pvalue = 0.0
    for ph in range(Width // TILE_WIDTH):
        Mds[ty * Width + tx] = M[Row * Width + ph * TILE_WIDTH + tx]
        Nds[ty * TILE_WIDTH + tx] = N[(ph * TILE_WIDTH + ty) * Width + Col]
        cuda.syncthreads()
        for k in range(TILE_WIDTH):
            Pvalue += Mds[ty * Width + k] * Nds[k * TILE_WIDTH + tx]
        cuda.syncthreads()
    P[Row * Width + Col] = Pvalue
