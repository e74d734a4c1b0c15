"""Tiled kernels in other styles than the book's, for the instrumenter's tests.

Each is a correct matrix multiplication; the tests derive by hand, from each
kernel's index expressions, which global element every thread loads.
"""

from vizmm_kernels._target import cuda, float32

T = 2  # the tile width of these kernels (a module constant, as a student writes it)


@cuda.jit
def tiled_2d(A, B, C, n):
    """Fig. 5.9 with 2-D arrays, other names and cuda.grid(2)."""
    As = cuda.shared.array((T, T), float32)
    Bs = cuda.shared.array((T, T), float32)
    col, row = cuda.grid(2)
    i = cuda.threadIdx.y
    j = cuda.threadIdx.x
    acc = float32(0)
    for t in range((n + T - 1) // T):
        if row < n and t * T + j < n:
            As[i, j] = A[row, t * T + j]
        else:
            As[i, j] = 0.0
        if t * T + i < n and col < n:
            Bs[i, j] = B[t * T + i, col]
        else:
            Bs[i, j] = 0.0
        cuda.syncthreads()
        for q in range(T):
            acc += As[i, q] * Bs[q, j]
        cuda.syncthreads()
    if row < n and col < n:
        C[row, col] = acc


@cuda.jit
def coarsened(M, N, P, Width):
    """Each thread computes two P elements, Col and Col + T (thread coarsening)."""
    Mds = cuda.shared.array((T, T), float32)
    Nds0 = cuda.shared.array((T, T), float32)
    Nds1 = cuda.shared.array((T, T), float32)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    Row = cuda.blockIdx.y * T + ty
    Col = cuda.blockIdx.x * 2 * T + tx
    p0 = float32(0)
    p1 = float32(0)
    for ph in range(Width // T):
        Mds[ty, tx] = M[Row * Width + ph * T + tx]
        Nds0[ty, tx] = N[(ph * T + ty) * Width + Col]
        Nds1[ty, tx] = N[(ph * T + ty) * Width + Col + T]
        cuda.syncthreads()
        for k in range(T):
            p0 += Mds[ty, k] * Nds0[k, tx]
            p1 += Mds[ty, k] * Nds1[k, tx]
        cuda.syncthreads()
    P[Row * Width + Col] = p0
    P[Row * Width + Col + T] = p1


@cuda.jit
def column_major_n(M, Nt, P, Width):
    """N given column-major (Nt[c * Width + r] is N[r][c]); the tile load reads down it."""
    Mds = cuda.shared.array((T, T), float32)
    Nds = cuda.shared.array((T, T), float32)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    Row = cuda.blockIdx.y * T + ty
    Col = cuda.blockIdx.x * T + tx
    Pvalue = float32(0)
    for ph in range(Width // T):
        Mds[ty, tx] = M[Row * Width + ph * T + tx]
        Nds[ty, tx] = Nt[Col * Width + ph * T + ty]
        cuda.syncthreads()
        for k in range(T):
            Pvalue += Mds[ty, k] * Nds[k, tx]
        cuda.syncthreads()
    P[Row * Width + Col] = Pvalue


@cuda.jit
def past_the_end(M, N, P, Width):
    """The naive kernel reading one element past each row's end: M[Row*Width + Width]."""
    Row = cuda.blockIdx.y * cuda.blockDim.y + cuda.threadIdx.y
    Col = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    P[Row * Width + Col] = M[Row * Width + Width] + N[Col]


@cuda.jit
def while_loop(M, N, P, Width):
    """A loop whose trip count depends on the thread: bounded only by a count launch."""
    Row = cuda.blockIdx.y * cuda.blockDim.y + cuda.threadIdx.y
    Col = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    s = float32(0)
    k = 0
    while k <= Col:
        s += M[Row * Width + k]
        k += 1
    P[Row * Width + Col] = s


def not_a_kernel(M, N, P, Width):
    """A plain Python function (no @cuda.jit)."""
    P[0] = M[0] * N[0]
