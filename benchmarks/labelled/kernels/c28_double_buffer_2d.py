from numba import cuda, float32

TILE_WIDTH = 2


@cuda.jit
def double_buffered_2d(M, N, P, Width):
    # Two tiles stacked in one 2-D array: rows cur*TILE_WIDTH .. cur*TILE_WIDTH + TILE_WIDTH - 1.
    Mds = cuda.shared.array((2 * TILE_WIDTH, TILE_WIDTH), float32)
    Nds = cuda.shared.array((2 * TILE_WIDTH, TILE_WIDTH), float32)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    Row = cuda.blockIdx.y * TILE_WIDTH + ty
    Col = cuda.blockIdx.x * TILE_WIDTH + tx
    nph = Width // TILE_WIDTH
    Mds[ty, tx] = M[Row, tx]
    Nds[ty, tx] = N[ty, Col]
    cuda.syncthreads()
    Pvalue = 0.0
    for ph in range(nph):
        cur = (ph % 2) * TILE_WIDTH
        nxt = TILE_WIDTH - cur
        if ph + 1 < nph:
            Mds[nxt + ty, tx] = M[Row, (ph + 1) * TILE_WIDTH + tx]
            Nds[nxt + ty, tx] = N[(ph + 1) * TILE_WIDTH + ty, Col]
        for k in range(TILE_WIDTH):
            Pvalue += Mds[cur + ty, k] * Nds[cur + k, tx]
        cuda.syncthreads()
    P[Row, Col] = Pvalue
