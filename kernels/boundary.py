"""The book's tiled kernel with boundary checks, Fig. 5.13 (PMPP 4th ed., Section 5.5).

Square ``Width x Width`` matrices of any ``Width``: a thread whose M or N
element lies outside the matrix stores 0.0 into its Mds / Nds slot (the
zero-fill), and only threads with a valid (Row, Col) store P.
"""

from ._target import cuda, float32


def make_plain(TILE_WIDTH, BARRIER_1=True, BARRIER_2=True):
    """Fig. 5.13 for one ``TILE_WIDTH``.

    ``BARRIER_1`` / ``BARRIER_2``: keep (True, the book) or remove (False, the
    barrier lab) the ``__syncthreads()`` after the loads / after the k loop
    (compile-time constants, as in ``tiled.make_plain``).
    """

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

        # Loop over the M and N tiles required to compute P element
        Pvalue = float32(0)
        for ph in range((Width + TILE_WIDTH - 1) // TILE_WIDTH):
            # Collaborative loading of M and N tiles into shared memory
            if Row < Width and (ph * TILE_WIDTH + tx) < Width:
                Mds[ty, tx] = M[Row * Width + ph * TILE_WIDTH + tx]
            else:
                Mds[ty, tx] = float32(0)
            if (ph * TILE_WIDTH + ty) < Width and Col < Width:
                Nds[ty, tx] = N[(ph * TILE_WIDTH + ty) * Width + Col]
            else:
                Nds[ty, tx] = float32(0)
            if BARRIER_1:
                cuda.syncthreads()

            for k in range(TILE_WIDTH):
                Pvalue += Mds[ty, k] * Nds[k, tx]
            if BARRIER_2:
                cuda.syncthreads()
        if Row < Width and Col < Width:
            P[Row * Width + Col] = Pvalue

    return matrixMulKernel
