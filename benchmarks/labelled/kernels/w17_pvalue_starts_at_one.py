from numba import cuda, float32

TILE_WIDTH = 2


@cuda.jit
def matrixMulKernel(M, N, P, Width):
    Mds = cuda.shared.array((TILE_WIDTH, TILE_WIDTH), float32)
    Nds = cuda.shared.array((TILE_WIDTH, TILE_WIDTH), float32)

    bx = cuda.blockIdx.x
    by = cuda.blockIdx.y
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y

    # Identify the row and column of the P element to work on
    Row = by * TILE_WIDTH + ty
    Col = bx * TILE_WIDTH + tx

    # Loop over the M and N tiles required to compute the P element
    Pvalue = 1.0
    for ph in range(Width // TILE_WIDTH):
        # Collaborative loading of M and N tiles into shared memory
        Mds[ty][tx] = M[Row * Width + ph * TILE_WIDTH + tx]
        Nds[ty][tx] = N[(ph * TILE_WIDTH + ty) * Width + Col]
        cuda.syncthreads()

        for k in range(TILE_WIDTH):
            Pvalue += Mds[ty][k] * Nds[k][tx]
        cuda.syncthreads()
    P[Row * Width + Col] = Pvalue
