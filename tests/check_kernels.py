"""Kernels for vizmm.check's tests: correct ones in five styles and ones with a planted mistake.

Every kernel here takes ``(M, N, P, Width)``, flat row-major (or 2-D)
arrays, one thread per P element in blocks of TILE_WIDTH x TILE_WIDTH
threads (TILE_WIDTH = 2, a module constant as a student writes it). The
planted mistakes are one line each, against Fig. 5.9 / Fig. 5.13; the test
derives by hand where each one first shows.
"""

from vizmm_kernels._target import cuda, float32

TILE_WIDTH = 2
T = TILE_WIDTH


# ----------------------------------------------------------- correct styles
@cuda.jit
def other_names(A, B, C, n):
    """Fig. 5.13 with a student's names (As, Bs, acc, t, q)."""
    As = cuda.shared.array((T, T), float32)
    Bs = cuda.shared.array((T, T), float32)
    c = cuda.threadIdx.x
    r = cuda.threadIdx.y
    row = cuda.blockIdx.y * T + r
    col = cuda.blockIdx.x * T + c
    acc = float32(0)
    for t in range((n + T - 1) // T):
        if row < n and t * T + c < n:
            As[r, c] = A[row * n + t * T + c]
        else:
            As[r, c] = float32(0)
        if t * T + r < n and col < n:
            Bs[r, c] = B[(t * T + r) * n + col]
        else:
            Bs[r, c] = float32(0)
        cuda.syncthreads()
        for q in range(T):
            acc += As[r, q] * Bs[q, c]
        cuda.syncthreads()
    if row < n and col < n:
        C[row * n + col] = acc


@cuda.jit
def grid_1d(M, N, P, Width):
    """Fig. 5.9 with Row and Col from cuda.grid(2)."""
    Mds = cuda.shared.array((TILE_WIDTH, TILE_WIDTH), float32)
    Nds = cuda.shared.array((TILE_WIDTH, TILE_WIDTH), float32)
    Col, Row = cuda.grid(2)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    Pvalue = float32(0)
    for ph in range(Width // TILE_WIDTH):
        Mds[ty, tx] = M[Row * Width + ph * TILE_WIDTH + tx]
        Nds[ty, tx] = N[(ph * TILE_WIDTH + ty) * Width + Col]
        cuda.syncthreads()
        for k in range(TILE_WIDTH):
            Pvalue += Mds[ty, k] * Nds[k, tx]
        cuda.syncthreads()
    P[Row * Width + Col] = Pvalue


@cuda.jit
def coarsened(M, N, P, Width):
    """Thread coarsening: a block of the even columns computes its tile and the next one.

    Each thread of an even-``bx`` block computes two P elements, Col and
    Col + TILE_WIDTH, reusing its Mds tile for both; odd-``bx`` blocks have
    nothing left to do (the launch is the one-thread-per-element grid).
    """
    Mds = cuda.shared.array((TILE_WIDTH, TILE_WIDTH), float32)
    Nds0 = cuda.shared.array((TILE_WIDTH, TILE_WIDTH), float32)
    Nds1 = cuda.shared.array((TILE_WIDTH, TILE_WIDTH), float32)
    if cuda.blockIdx.x % 2 == 1:
        return
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    Row = cuda.blockIdx.y * TILE_WIDTH + ty
    Col = cuda.blockIdx.x * TILE_WIDTH + tx
    p0 = float32(0)
    p1 = float32(0)
    for ph in range(Width // TILE_WIDTH):
        Mds[ty, tx] = M[Row * Width + ph * TILE_WIDTH + tx]
        Nds0[ty, tx] = N[(ph * TILE_WIDTH + ty) * Width + Col]
        Nds1[ty, tx] = N[(ph * TILE_WIDTH + ty) * Width + Col + TILE_WIDTH]
        cuda.syncthreads()
        for k in range(TILE_WIDTH):
            p0 += Mds[ty, k] * Nds0[k, tx]
            p1 += Mds[ty, k] * Nds1[k, tx]
        cuda.syncthreads()
    P[Row * Width + Col] = p0
    P[Row * Width + Col + TILE_WIDTH] = p1


# ----------------------------------------------------------- planted mistakes
@cuda.jit
def swapped_indices(M, N, P, Width):
    """Fig. 5.9 with Row and the column swapped in M's tile load (M[col][Row])."""
    Mds = cuda.shared.array((TILE_WIDTH, TILE_WIDTH), float32)
    Nds = cuda.shared.array((TILE_WIDTH, TILE_WIDTH), float32)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    Row = cuda.blockIdx.y * TILE_WIDTH + ty
    Col = cuda.blockIdx.x * TILE_WIDTH + tx
    Pvalue = float32(0)
    for ph in range(Width // TILE_WIDTH):
        Mds[ty, tx] = M[(ph * TILE_WIDTH + tx) * Width + Row]
        Nds[ty, tx] = N[(ph * TILE_WIDTH + ty) * Width + Col]
        cuda.syncthreads()
        for k in range(TILE_WIDTH):
            Pvalue += Mds[ty, k] * Nds[k, tx]
        cuda.syncthreads()
    P[Row * Width + Col] = Pvalue


@cuda.jit
def swapped_student_names(A, B, C, n):
    """other_names with the swap of swapped_indices in its A tile load (A[c][row])."""
    As = cuda.shared.array((T, T), float32)
    Bs = cuda.shared.array((T, T), float32)
    c = cuda.threadIdx.x
    r = cuda.threadIdx.y
    row = cuda.blockIdx.y * T + r
    col = cuda.blockIdx.x * T + c
    acc = float32(0)
    for t in range(n // T):
        As[r, c] = A[(t * T + c) * n + row]
        Bs[r, c] = B[(t * T + r) * n + col]
        cuda.syncthreads()
        for q in range(T):
            acc += As[r, q] * Bs[q, c]
        cuda.syncthreads()
    C[row * n + col] = acc


@cuda.jit
def missing_barrier(M, N, P, Width):
    """Fig. 5.9 without the cuda.syncthreads() after the tile loads."""
    Mds = cuda.shared.array((TILE_WIDTH, TILE_WIDTH), float32)
    Nds = cuda.shared.array((TILE_WIDTH, TILE_WIDTH), float32)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    Row = cuda.blockIdx.y * TILE_WIDTH + ty
    Col = cuda.blockIdx.x * TILE_WIDTH + tx
    Pvalue = float32(0)
    for ph in range(Width // TILE_WIDTH):
        Mds[ty, tx] = M[Row * Width + ph * TILE_WIDTH + tx]
        Nds[ty, tx] = N[(ph * TILE_WIDTH + ty) * Width + Col]
        for k in range(TILE_WIDTH):
            Pvalue += Mds[ty, k] * Nds[k, tx]
        cuda.syncthreads()
    P[Row * Width + Col] = Pvalue


@cuda.jit
def missing_boundary_check(M, N, P, Width):
    """Fig. 5.13 with the check on M's tile load left out (N's kept)."""
    Mds = cuda.shared.array((TILE_WIDTH, TILE_WIDTH), float32)
    Nds = cuda.shared.array((TILE_WIDTH, TILE_WIDTH), float32)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    Row = cuda.blockIdx.y * TILE_WIDTH + ty
    Col = cuda.blockIdx.x * TILE_WIDTH + tx
    Pvalue = float32(0)
    for ph in range((Width + TILE_WIDTH - 1) // TILE_WIDTH):
        Mds[ty, tx] = M[Row * Width + ph * TILE_WIDTH + tx]
        if (ph * TILE_WIDTH + ty) < Width and Col < Width:
            Nds[ty, tx] = N[(ph * TILE_WIDTH + ty) * Width + Col]
        else:
            Nds[ty, tx] = float32(0)
        cuda.syncthreads()
        for k in range(TILE_WIDTH):
            Pvalue += Mds[ty, k] * Nds[k, tx]
        cuda.syncthreads()
    if Row < Width and Col < Width:
        P[Row * Width + Col] = Pvalue


@cuda.jit
def transposed_tile(M, N, P, Width):
    """Fig. 5.9 storing N's tile transposed (Nds[tx][ty] instead of Nds[ty][tx])."""
    Mds = cuda.shared.array((TILE_WIDTH, TILE_WIDTH), float32)
    Nds = cuda.shared.array((TILE_WIDTH, TILE_WIDTH), float32)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    Row = cuda.blockIdx.y * TILE_WIDTH + ty
    Col = cuda.blockIdx.x * TILE_WIDTH + tx
    Pvalue = float32(0)
    for ph in range(Width // TILE_WIDTH):
        Mds[ty, tx] = M[Row * Width + ph * TILE_WIDTH + tx]
        Nds[tx, ty] = N[(ph * TILE_WIDTH + ty) * Width + Col]
        cuda.syncthreads()
        for k in range(TILE_WIDTH):
            Pvalue += Mds[ty, k] * Nds[k, tx]
        cuda.syncthreads()
    P[Row * Width + Col] = Pvalue


@cuda.jit
def one_phase_short(M, N, P, Width):
    """Fig. 5.9 with an off-by-one phase count (Width / TILE_WIDTH - 1 phases)."""
    Mds = cuda.shared.array((TILE_WIDTH, TILE_WIDTH), float32)
    Nds = cuda.shared.array((TILE_WIDTH, TILE_WIDTH), float32)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    Row = cuda.blockIdx.y * TILE_WIDTH + ty
    Col = cuda.blockIdx.x * TILE_WIDTH + tx
    Pvalue = float32(0)
    for ph in range(Width // TILE_WIDTH - 1):
        Mds[ty, tx] = M[Row * Width + ph * TILE_WIDTH + tx]
        Nds[ty, tx] = N[(ph * TILE_WIDTH + ty) * Width + Col]
        cuda.syncthreads()
        for k in range(TILE_WIDTH):
            Pvalue += Mds[ty, k] * Nds[k, tx]
        cuda.syncthreads()
    P[Row * Width + Col] = Pvalue


@cuda.jit
def wrong_thread_stores(M, N, P, Width):
    """Fig. 5.9 storing Pvalue into P[Col][Row]: each thread's result lands at its mirror."""
    Mds = cuda.shared.array((TILE_WIDTH, TILE_WIDTH), float32)
    Nds = cuda.shared.array((TILE_WIDTH, TILE_WIDTH), float32)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    Row = cuda.blockIdx.y * TILE_WIDTH + ty
    Col = cuda.blockIdx.x * TILE_WIDTH + tx
    Pvalue = float32(0)
    for ph in range(Width // TILE_WIDTH):
        Mds[ty, tx] = M[Row * Width + ph * TILE_WIDTH + tx]
        Nds[ty, tx] = N[(ph * TILE_WIDTH + ty) * Width + Col]
        cuda.syncthreads()
        for k in range(TILE_WIDTH):
            Pvalue += Mds[ty, k] * Nds[k, tx]
        cuda.syncthreads()
    P[Col * Width + Row] = Pvalue


@cuda.jit
def racing_store(M, N, P, Width):
    """Every thread of a tile row stores its M element into the same slot Mds[ty][0]."""
    Mds = cuda.shared.array((TILE_WIDTH, TILE_WIDTH), float32)
    Nds = cuda.shared.array((TILE_WIDTH, TILE_WIDTH), float32)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    Row = cuda.blockIdx.y * TILE_WIDTH + ty
    Col = cuda.blockIdx.x * TILE_WIDTH + tx
    Pvalue = float32(0)
    for ph in range(Width // TILE_WIDTH):
        Mds[ty, 0] = M[Row * Width + ph * TILE_WIDTH + tx]
        Nds[ty, tx] = N[(ph * TILE_WIDTH + ty) * Width + Col]
        cuda.syncthreads()
        for k in range(TILE_WIDTH):
            Pvalue += Mds[ty, k] * Nds[k, tx]
        cuda.syncthreads()
    P[Row * Width + Col] = Pvalue


@cuda.jit
def threads_transposed(M, N, P, Width):
    """Fig. 5.9 with tx and ty trading roles: thread (ty, tx) computes P[by*T + tx][bx*T + ty].

    Correct (every P element right), with another mapping of threads to P
    elements than the book's: Row = by*T + tx, Col = bx*T + ty.
    """
    Mds = cuda.shared.array((TILE_WIDTH, TILE_WIDTH), float32)
    Nds = cuda.shared.array((TILE_WIDTH, TILE_WIDTH), float32)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    Row = cuda.blockIdx.y * TILE_WIDTH + tx
    Col = cuda.blockIdx.x * TILE_WIDTH + ty
    Pvalue = float32(0)
    for ph in range(Width // TILE_WIDTH):
        Mds[tx, ty] = M[Row * Width + ph * TILE_WIDTH + ty]
        Nds[tx, ty] = N[(ph * TILE_WIDTH + tx) * Width + Col]
        cuda.syncthreads()
        for k in range(TILE_WIDTH):
            Pvalue += Mds[tx, k] * Nds[k, ty]
        cuda.syncthreads()
    P[Row * Width + Col] = Pvalue


@cuda.jit
def coarsened_wrong_second(M, N, P, Width):
    """The coarsened kernel with its second sum reading the first tile of N (Nds0, not Nds1).

    p1 is stored into P[Row][Col + TILE_WIDTH] but adds Mds[ty][k] * Nds0[k][tx]:
    every term of p1 has the N factor of column Col instead of Col + TILE_WIDTH.
    """
    Mds = cuda.shared.array((TILE_WIDTH, TILE_WIDTH), float32)
    Nds0 = cuda.shared.array((TILE_WIDTH, TILE_WIDTH), float32)
    Nds1 = cuda.shared.array((TILE_WIDTH, TILE_WIDTH), float32)
    if cuda.blockIdx.x % 2 == 1:
        return
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    Row = cuda.blockIdx.y * TILE_WIDTH + ty
    Col = cuda.blockIdx.x * TILE_WIDTH + tx
    p0 = float32(0)
    p1 = float32(0)
    for ph in range(Width // TILE_WIDTH):
        Mds[ty, tx] = M[Row * Width + ph * TILE_WIDTH + tx]
        Nds0[ty, tx] = N[(ph * TILE_WIDTH + ty) * Width + Col]
        Nds1[ty, tx] = N[(ph * TILE_WIDTH + ty) * Width + Col + TILE_WIDTH]
        cuda.syncthreads()
        for k in range(TILE_WIDTH):
            p0 += Mds[ty, k] * Nds0[k, tx]
            p1 += Mds[ty, k] * Nds0[k, tx]
        cuda.syncthreads()
    P[Row * Width + Col] = p0
    P[Row * Width + Col + TILE_WIDTH] = p1
