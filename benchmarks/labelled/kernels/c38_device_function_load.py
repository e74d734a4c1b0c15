from numba import cuda, float32

TILE_WIDTH = 2


@cuda.jit(device=True)
def load_or_zero(A, r, c, n):
    if r < n and c < n:
        return A[r * n + c]
    return 0.0


@cuda.jit
def matrixMulKernel(M, N, P, Width):
    Mds = cuda.shared.array((TILE_WIDTH, TILE_WIDTH), float32)
    Nds = cuda.shared.array((TILE_WIDTH, TILE_WIDTH), float32)

    bx = cuda.blockIdx.x
    by = cuda.blockIdx.y
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y

    Row = by * TILE_WIDTH + ty
    Col = bx * TILE_WIDTH + tx

    Pvalue = 0.0
    for ph in range((Width + TILE_WIDTH - 1) // TILE_WIDTH):
        Mds[ty][tx] = load_or_zero(M, Row, ph * TILE_WIDTH + tx, Width)
        Nds[ty][tx] = load_or_zero(N, ph * TILE_WIDTH + ty, Col, Width)
        cuda.syncthreads()

        for k in range(TILE_WIDTH):
            Pvalue += Mds[ty][k] * Nds[k][tx]
        cuda.syncthreads()
    if Row < Width and Col < Width:
        P[Row * Width + Col] = Pvalue
