from numba import cuda, float32

TILE_WIDTH = 2


@cuda.jit
def transposed_threads(M, N, P, Width):
    Mds = cuda.shared.array((TILE_WIDTH, TILE_WIDTH), float32)
    Nds = cuda.shared.array((TILE_WIDTH, TILE_WIDTH), float32)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    # thread (ty, tx) works on P[by*T + tx][bx*T + ty]: x walks the rows
    Row = cuda.blockIdx.y * TILE_WIDTH + tx
    Col = cuda.blockIdx.x * TILE_WIDTH + ty
    Pvalue = 0.0
    for ph in range(Width // TILE_WIDTH):
        Mds[tx, ty] = M[Row, ph * TILE_WIDTH + ty]
        Nds[tx, ty] = N[ph * TILE_WIDTH + tx, Col]
        cuda.syncthreads()
        for k in range(TILE_WIDTH):
            Pvalue += Mds[tx, k] * Nds[k, ty]
        cuda.syncthreads()
    P[Row, Col] = Pvalue
