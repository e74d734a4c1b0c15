"""The kernel takes (M, N, P): Width is missing."""

from numba import cuda


@cuda.jit
def matmul(M, N, P):
    """Not the assignment's signature."""
    P[0] = M[0] * N[0]
