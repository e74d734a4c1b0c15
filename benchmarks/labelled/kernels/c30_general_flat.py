from numba import cuda, float32

TILE_WIDTH = 2


@cuda.jit
def matmul_general_flat(M, N, P, j, k, l):
    Mds = cuda.shared.array((TILE_WIDTH, TILE_WIDTH), float32)
    Nds = cuda.shared.array((TILE_WIDTH, TILE_WIDTH), float32)
    bx = cuda.blockIdx.x
    by = cuda.blockIdx.y
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    Row = by * TILE_WIDTH + ty
    Col = bx * TILE_WIDTH + tx
    Pvalue = 0.0
    for ph in range((k + TILE_WIDTH - 1) // TILE_WIDTH):
        if Row < j and ph * TILE_WIDTH + tx < k:
            Mds[ty][tx] = M[Row * k + ph * TILE_WIDTH + tx]
        else:
            Mds[ty][tx] = 0.0
        if ph * TILE_WIDTH + ty < k and Col < l:
            Nds[ty][tx] = N[(ph * TILE_WIDTH + ty) * l + Col]
        else:
            Nds[ty][tx] = 0.0
        cuda.syncthreads()
        for i in range(TILE_WIDTH):
            Pvalue += Mds[ty][i] * Nds[i][tx]
        cuda.syncthreads()
    if Row < j and Col < l:
        P[Row * l + Col] = Pvalue
