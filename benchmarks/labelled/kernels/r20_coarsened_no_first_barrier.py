from numba import cuda, float32

TILE_WIDTH = 2


@cuda.jit
def coarsened(M, N, P, Width):
    # Each thread of an even-bx block computes P[Row][Col] and P[Row][Col + TILE_WIDTH];
    # the odd-bx blocks of the one-thread-per-element grid have nothing left to do.
    Mds = cuda.shared.array((TILE_WIDTH, TILE_WIDTH), float32)
    Nds0 = cuda.shared.array((TILE_WIDTH, TILE_WIDTH), float32)
    Nds1 = cuda.shared.array((TILE_WIDTH, TILE_WIDTH), float32)
    if cuda.blockIdx.x % 2 == 1:
        return
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    Row = cuda.blockIdx.y * TILE_WIDTH + ty
    Col = cuda.blockIdx.x * TILE_WIDTH + tx
    p0 = float32(0)
    p1 = float32(0)
    for ph in range(Width // TILE_WIDTH):
        Mds[ty, tx] = M[Row, ph * TILE_WIDTH + tx]
        Nds0[ty, tx] = N[ph * TILE_WIDTH + ty, Col]
        Nds1[ty, tx] = N[ph * TILE_WIDTH + ty, Col + TILE_WIDTH]
        for k in range(TILE_WIDTH):
            m = Mds[ty, k]
            p0 += m * Nds0[k, tx]
            p1 += m * Nds1[k, tx]
        cuda.syncthreads()
    P[Row, Col] = p0
    P[Row, Col + TILE_WIDTH] = p1
