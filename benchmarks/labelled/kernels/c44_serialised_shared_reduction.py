from numba import cuda, float32

TILE_WIDTH = 2


@cuda.jit
def row_reduction(M, N, P, Width):
    # thread (ty, tx) adds the term k = tx of every P element of row ty, one tx at a time
    Mds = cuda.shared.array((TILE_WIDTH, TILE_WIDTH), float32)
    Nds = cuda.shared.array((TILE_WIDTH, TILE_WIDTH), float32)
    Pds = cuda.shared.array((TILE_WIDTH, TILE_WIDTH), float32)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    Row = cuda.blockIdx.y * TILE_WIDTH + ty
    Col = cuda.blockIdx.x * TILE_WIDTH + tx
    Pds[ty, tx] = 0.0
    for ph in range(Width // TILE_WIDTH):
        Mds[ty, tx] = M[Row, ph * TILE_WIDTH + tx]
        Nds[ty, tx] = N[ph * TILE_WIDTH + ty, Col]
        cuda.syncthreads()
        for x in range(TILE_WIDTH):
            if tx == x:
                for c in range(TILE_WIDTH):
                    Pds[ty, c] += Mds[ty, tx] * Nds[tx, c]
            cuda.syncthreads()
    P[Row, Col] = Pds[ty, tx]
