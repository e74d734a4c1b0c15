"""Contrast kernel: the tiled kernel with the thread roles swapped in the tile loads.

Fig. 5.13 (PMPP 4th ed., Section 5.5: square ``Width x Width`` matrices,
boundary checks, so P is right for every ``Width``) with one change: in the
collaborative loads ``tx`` walks the *rows* of the M and N tiles and ``ty``
their columns, so thread ``(ty, tx)`` copies ``M[by*T + tx][ph*T + ty]`` into
``Mds[tx][ty]`` and ``N[ph*T + tx][bx*T + ty]`` into ``Nds[tx][ty]``. The
tiles hold the same elements as in Fig. 5.9 and the k loop is unchanged,
but the 32 threads of a warp (consecutive ``tx``) now read down a *column*
of M and of N: ``Width * 4`` bytes apart, one 32-byte sector each instead of
the one 128-byte segment of Fig. 5.9 (the slides' rule "coalesce global
memory accesses", broken on purpose). With ``TILE_WIDTH`` 32 the stores
``Mds[tx][ty]`` / ``Nds[tx][ty]`` also hit one bank (a 32-way conflict).
"""

from ._target import cuda, float32


def make_plain(TILE_WIDTH):
    """The column-walking (uncoalesced) tiled kernel for one ``TILE_WIDTH``."""

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
            # Loading with the thread roles swapped: tx walks the tile's rows,
            # so a warp reads down a column of M and of N (uncoalesced)
            if by * TILE_WIDTH + tx < Width and (ph * TILE_WIDTH + ty) < Width:
                Mds[tx, ty] = M[(by * TILE_WIDTH + tx) * Width + ph * TILE_WIDTH + ty]
            else:
                Mds[tx, ty] = float32(0)
            if (ph * TILE_WIDTH + tx) < Width and bx * TILE_WIDTH + ty < Width:
                Nds[tx, ty] = N[(ph * TILE_WIDTH + tx) * Width + bx * TILE_WIDTH + ty]
            else:
                Nds[tx, ty] = float32(0)
            cuda.syncthreads()

            for k in range(TILE_WIDTH):
                Pvalue += Mds[ty, k] * Nds[k, tx]
            cuda.syncthreads()
        if Row < Width and Col < Width:
            P[Row * Width + Col] = Pvalue

    return matrixMulKernel
