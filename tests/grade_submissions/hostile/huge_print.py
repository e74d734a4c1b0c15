"""Hostile: Prints 200 MiB, and writes it into output.txt too.

Its kernel is that of no_boundary.py.
"""

import sys

from numba import cuda, float32

_LINE = "hidden case shapes: M 3x3 " * 40 + "\n"
for _ in range(200 * 1024):
    sys.stdout.write(_LINE)
with open("output.txt", "w") as _f:
    _f.write(_LINE * 200 * 1024)


TILE_WIDTH = 2


@cuda.jit
def matmul(M, N, P, Width):
    """Fig. 5.9 without Fig. 5.13's boundary checks: right only when TILE_WIDTH divides Width."""
    Mds = cuda.shared.array((TILE_WIDTH, TILE_WIDTH), float32)
    Nds = cuda.shared.array((TILE_WIDTH, TILE_WIDTH), float32)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    Row = cuda.blockIdx.y * TILE_WIDTH + ty
    Col = cuda.blockIdx.x * TILE_WIDTH + tx
    Pvalue = float32(0)
    for ph in range((Width + TILE_WIDTH - 1) // TILE_WIDTH):
        Mds[ty, tx] = M[Row * Width + ph * TILE_WIDTH + tx]
        Nds[ty, tx] = N[(ph * TILE_WIDTH + ty) * Width + Col]
        cuda.syncthreads()
        for k in range(TILE_WIDTH):
            Pvalue += Mds[ty, k] * Nds[k, tx]
        cuda.syncthreads()
    P[Row * Width + Col] = Pvalue
