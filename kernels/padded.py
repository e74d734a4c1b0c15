"""Contrast kernel: the padding fix, ``Nds`` with ``TILE_WIDTH + 1`` columns.

The :mod:`.conflict` kernel (N tile stored transposed, read as
``Nds[tx][k]``) with one change: ``Nds`` is declared
``TILE_WIDTH x (TILE_WIDTH + 1)``. Word ``tx*(T + 1) + k`` of the padded
array lies in bank ``(tx*(T + 1) + k) mod 32``; with ``TILE_WIDTH`` 32 that
is ``(tx + k) mod 32``, a different bank for each of the 32 threads of a
warp, so the n-way conflict of :mod:`.conflict` is gone (and that of the
store ``Nds[tx][ty]`` too). The extra column is never read or written.
P is right for every ``Width`` (Fig. 5.13's boundary checks).
"""

from ._target import cuda, float32


def make_plain(TILE_WIDTH):
    """The padded (conflict-free) ``Nds[tx][k]`` tiled kernel for one ``TILE_WIDTH``."""
    PADDED_WIDTH = TILE_WIDTH + 1  # Nds's columns: one more than the tile (a constant)

    @cuda.jit
    def matrixMulKernel(M, N, P, Width):
        Mds = cuda.shared.array((TILE_WIDTH, TILE_WIDTH), float32)
        Nds = cuda.shared.array((TILE_WIDTH, PADDED_WIDTH), float32)

        bx = cuda.blockIdx.x
        by = cuda.blockIdx.y
        tx = cuda.threadIdx.x
        ty = cuda.threadIdx.y

        # Identify the row and column of the P element to work on
        Row = by * TILE_WIDTH + ty
        Col = bx * TILE_WIDTH + tx

        # Loop over the M and N tiles required to compute P element
        Pvalue = float32(0)
        for ph in range((Width + TILE_WIDTH - 1) // TILE_WIDTH):
            # Collaborative loading of M and N tiles into shared memory
            if Row < Width and (ph * TILE_WIDTH + tx) < Width:
                Mds[ty, tx] = M[Row * Width + ph * TILE_WIDTH + tx]
            else:
                Mds[ty, tx] = float32(0)
            # The N tile is stored transposed: Nds[tx][ty] = N[ph*TILE_WIDTH + ty][Col]
            if (ph * TILE_WIDTH + ty) < Width and Col < Width:
                Nds[tx, ty] = N[(ph * TILE_WIDTH + ty) * Width + Col]
            else:
                Nds[tx, ty] = float32(0)
            cuda.syncthreads()

            for k in range(TILE_WIDTH):
                Pvalue += Mds[ty, k] * Nds[tx, k]
            cuda.syncthreads()
        if Row < Width and Col < Width:
            P[Row * Width + Col] = Pvalue

    return matrixMulKernel
