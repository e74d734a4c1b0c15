"""Correct, style 2: 2-D arrays, other names, cuda.grid(2)."""

from numba import cuda, float32

TILE_WIDTH = 2


@cuda.jit
def matmul(A, B, C, n):
    """C = A·B."""
    As = cuda.shared.array((TILE_WIDTH, TILE_WIDTH), float32)
    Bs = cuda.shared.array((TILE_WIDTH, TILE_WIDTH), float32)
    col, row = cuda.grid(2)
    i = cuda.threadIdx.y
    j = cuda.threadIdx.x
    acc = float32(0)
    for t in range((n + TILE_WIDTH - 1) // TILE_WIDTH):
        if row < n and t * TILE_WIDTH + j < n:
            As[i, j] = A[row, t * TILE_WIDTH + j]
        else:
            As[i, j] = 0.0
        if t * TILE_WIDTH + i < n and col < n:
            Bs[i, j] = B[t * TILE_WIDTH + i, col]
        else:
            Bs[i, j] = 0.0
        cuda.syncthreads()
        for q in range(TILE_WIDTH):
            acc += As[i, q] * Bs[q, j]
        cuda.syncthreads()
    if row < n and col < n:
        C[row, col] = acc
