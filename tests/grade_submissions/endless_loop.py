"""Never finishes: an endless loop in the kernel."""

from numba import cuda


@cuda.jit
def matmul(M, N, P, Width):
    """Spins for ever."""
    i = 0
    while i >= 0:
        i = i + 1
