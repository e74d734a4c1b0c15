"""Contrast kernel: Nds read as ``Nds[tx][k]``, an n-way shared-memory bank conflict.

Fig. 5.13 (PMPP 4th ed., Section 5.5: square ``Width x Width`` matrices,
boundary checks, so P is right for every ``Width``) with the N tile stored
*transposed*: thread ``(ty, tx)`` copies the same element as in Fig. 5.13,
``N[ph*T + ty][Col]``, into ``Nds[tx][ty]``, and the k loop reads
``Nds[tx][k]`` (which holds ``N[ph*T + k][Col]``), so every thread still
multiplies ``M[Row][ph*T + k]`` by ``N[ph*T + k][Col]``.

Shared memory has 32 banks of 4-byte words; ``Nds[tx][k]`` is word
``tx*T + k``, in bank ``(tx*T + k) mod 32``. With ``TILE_WIDTH`` 32 the 32
threads of a warp (one ``ty``, ``tx`` 0..31) read 32 different words of one
bank: a 32-way conflict, 31 replays per read (the slides' "single cycle if
no bank conflicts", broken on purpose). With ``TILE_WIDTH`` 16 a warp holds
two rows of threads that read the same 16 words (a broadcast), 8 of them in
bank ``k`` and 8 in bank ``k + 16``: 8-way. The store ``Nds[tx][ty]``
conflicts the same way. :mod:`.padded` is the fix.
"""

from ._target import cuda, float32


def make_plain(TILE_WIDTH):
    """The ``Nds[tx][k]`` (bank-conflict) tiled kernel for one ``TILE_WIDTH``."""

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
