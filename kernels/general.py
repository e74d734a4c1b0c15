"""The general tiled kernel: a ``j x k`` M times a ``k x l`` N gives a ``j x l`` P.

The exercise the book leaves at the end of Section 5.5 (PMPP 4th ed.): Fig. 5.13
with the three sizes kept apart. Same boundary checks: zero-fill of Mds/Nds
outside M and N, P stored only where ``Row < j`` and ``Col < l``.
"""

from ._target import cuda, float32


def make_plain(TILE_WIDTH):
    """The general ``j x k . k x l`` tiled kernel for one ``TILE_WIDTH``."""

    @cuda.jit
    def matrixMulKernel(M, N, P, j, k, l):
        Mds = cuda.shared.array((TILE_WIDTH, TILE_WIDTH), float32)
        Nds = cuda.shared.array((TILE_WIDTH, TILE_WIDTH), float32)

        bx = cuda.blockIdx.x
        by = cuda.blockIdx.y
        tx = cuda.threadIdx.x
        ty = cuda.threadIdx.y

        # Identify the row and column of the P element to work on
        Row = by * TILE_WIDTH + ty
        Col = bx * TILE_WIDTH + tx

        # Loop over the M and N tiles required to compute P element
        Pvalue = float32(0)
        for ph in range((k + TILE_WIDTH - 1) // TILE_WIDTH):
            # Collaborative loading of M and N tiles into shared memory
            if Row < j and (ph * TILE_WIDTH + tx) < k:
                Mds[ty, tx] = M[Row * k + ph * TILE_WIDTH + tx]
            else:
                Mds[ty, tx] = float32(0)
            if (ph * TILE_WIDTH + ty) < k and Col < l:
                Nds[ty, tx] = N[(ph * TILE_WIDTH + ty) * l + Col]
            else:
                Nds[ty, tx] = float32(0)
            cuda.syncthreads()

            for i in range(TILE_WIDTH):
                Pvalue += Mds[ty, i] * Nds[i, tx]
            cuda.syncthreads()
        if Row < j and Col < l:
            P[Row * l + Col] = Pvalue

    return matrixMulKernel
