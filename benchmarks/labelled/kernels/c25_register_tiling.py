from numba import cuda, float32

TILE_WIDTH = 2


@cuda.jit
def register_tiled(M, N, P, Width):
    # 2x2 register tiling: a thread of an even (by, bx) block computes the four elements
    # P[Row + a*TILE_WIDTH][Col + b*TILE_WIDTH]; each factor is read once into a
    # register and used twice. The other blocks of the grid have nothing to do.
    Mds0 = cuda.shared.array((TILE_WIDTH, TILE_WIDTH), float32)
    Mds1 = cuda.shared.array((TILE_WIDTH, TILE_WIDTH), float32)
    Nds0 = cuda.shared.array((TILE_WIDTH, TILE_WIDTH), float32)
    Nds1 = cuda.shared.array((TILE_WIDTH, TILE_WIDTH), float32)
    if cuda.blockIdx.x % 2 == 1 or cuda.blockIdx.y % 2 == 1:
        return
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    Row = cuda.blockIdx.y * TILE_WIDTH + ty
    Col = cuda.blockIdx.x * TILE_WIDTH + tx
    c00 = 0.0
    c01 = 0.0
    c10 = 0.0
    c11 = 0.0
    for ph in range(Width // TILE_WIDTH):
        Mds0[ty, tx] = M[Row, ph * TILE_WIDTH + tx]
        Mds1[ty, tx] = M[Row + TILE_WIDTH, ph * TILE_WIDTH + tx]
        Nds0[ty, tx] = N[ph * TILE_WIDTH + ty, Col]
        Nds1[ty, tx] = N[ph * TILE_WIDTH + ty, Col + TILE_WIDTH]
        cuda.syncthreads()
        for k in range(TILE_WIDTH):
            a0 = Mds0[ty, k]
            a1 = Mds1[ty, k]
            b0 = Nds0[k, tx]
            b1 = Nds1[k, tx]
            c00 += a0 * b0
            c01 += a0 * b1
            c10 += a1 * b0
            c11 += a1 * b1
        cuda.syncthreads()
    P[Row, Col] = c00
    P[Row, Col + TILE_WIDTH] = c01
    P[Row + TILE_WIDTH, Col] = c10
    P[Row + TILE_WIDTH, Col + TILE_WIDTH] = c11
