from numba import cuda, float32

TILE_WIDTH = 2


@cuda.jit
def double_buffered(M, N, P, Width):
    # Two tiles of M and of N: phase ph computes from buffer ph % 2 while the
    # tiles of phase ph + 1 are loaded into the other buffer.
    Mds = cuda.shared.array((2, TILE_WIDTH, TILE_WIDTH), float32)
    Nds = cuda.shared.array((2, TILE_WIDTH, TILE_WIDTH), float32)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    Row = cuda.blockIdx.y * TILE_WIDTH + ty
    Col = cuda.blockIdx.x * TILE_WIDTH + tx
    nph = Width // TILE_WIDTH
    Mds[0, ty, tx] = M[Row, tx]
    Nds[0, ty, tx] = N[ty, Col]
    cuda.syncthreads()
    Pvalue = 0.0
    for ph in range(nph):
        cur = ph % 2
        nxt = 1 - cur
        if ph + 1 < nph:
            Mds[nxt, ty, tx] = M[Row, (ph + 1) * TILE_WIDTH + tx]
            Nds[nxt, ty, tx] = N[(ph + 1) * TILE_WIDTH + ty, Col]
        cuda.syncthreads()
        for k in range(TILE_WIDTH):
            Pvalue += Mds[cur, ty, k] * Nds[cur, k, tx]
    P[Row, Col] = Pvalue
