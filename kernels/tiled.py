"""The book's tiled kernel, Fig. 5.9 (PMPP 4th ed., Section 5.4).

Square ``Width x Width`` matrices, linearized row-major as in the book, one
thread per P element, ``TILE_WIDTH x TILE_WIDTH`` threads per block.

The phase loop's bound. Fig. 5.9 prints ``ph < Width/TILE_WIDTH`` and assumes
``Width`` is a multiple of ``TILE_WIDTH``. The kernel here writes the bound
as ``ceil(Width / TILE_WIDTH)``, ``(Width + TILE_WIDTH - 1) // TILE_WIDTH``:
the form Section 5.5 gives for arbitrary widths. Under Fig. 5.9's assumption
the two are the same number, so every launch of the book's figure runs
exactly as printed; on any other ``Width`` the kernel runs the extra phase
with Fig. 5.9's unchecked loads, which is exactly the situation the book's
Fig. 5.11 / 5.12 discussion walks through. A load whose (row, col) is
outside the matrix but whose linearized index is inside the allocation
really reads that other element (vizmm's recording reads it as
``WRONG_ELEMENT``, e.g. M_{0,3} reads M_{1,0}); one past the end of the
allocation is recorded as ``OUT_OF_ALLOCATION`` and not performed (the
instrumenter checks every access), and the thread keeps running.
"""

from ._target import cuda, float32


def make_plain(TILE_WIDTH, BARRIER_1=True, BARRIER_2=True):
    """Fig. 5.9 for one ``TILE_WIDTH`` (a compile-time constant, as the book's ``#define``).

    ``BARRIER_1`` / ``BARRIER_2`` keep (True, the book's kernel) or remove
    (False, the barrier lab) the ``__syncthreads()`` after the loads and the
    one after the k loop; they are compile-time constants too, so a removed
    barrier is not in the compiled kernel at all.
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
            Mds[ty, tx] = M[Row * Width + ph * TILE_WIDTH + tx]
            Nds[ty, tx] = N[(ph * TILE_WIDTH + ty) * Width + Col]
            if BARRIER_1:
                cuda.syncthreads()

            for k in range(TILE_WIDTH):
                Pvalue += Mds[ty, k] * Nds[k, tx]
            if BARRIER_2:
                cuda.syncthreads()
        P[Row * Width + Col] = Pvalue

    return matrixMulKernel
