"""The tiled kernel with dynamically sized shared memory, Fig. 5.14 (PMPP 4th ed., Section 5.6).

Fig. 5.13 (boundary checks) with its two fixed ``__shared__`` arrays replaced
by one ``extern __shared__ float Mds_Nds[]`` whose size in bytes is set at
launch. In Numba a zero-sized shared array is the ``extern`` array and the
byte count is the launch's fourth configuration parameter::

    size = shared_bytes(TILE_WIDTH)                  # 2 * TILE_WIDTH**2 * 4 bytes
    kernel[grid, block, 0, size](M, N, P, Width, size // 2, size // 2)

``Mds`` and ``Nds`` are two sections of that array, indexed
``ty*TILE_WIDTH + tx`` as the book says. As in the figure (line 01,
``#define TILE_WIDTH 16``) ``TILE_WIDTH`` stays a compile-time constant of
each compiled kernel; Numba compiles when it is first asked for, so the host
can pick ``TILE_WIDTH`` at run time from the device's properties and size the
shared memory to match, with no rebuild of the program (the book's complaint
about Fig. 5.9).

:func:`make_plain_any_width` goes one step further: ``TILE_WIDTH`` is a kernel
argument, so one compiled kernel serves every width. Its inner ``k`` loop can
then not be unrolled nor its shared-memory offsets folded into the
instructions; ``benchmarks/gpu_speed.py`` measures what that costs.

Two slips of the printed figure are not copied: ``extern __shared__ char
float Mds_Nds[]`` names two types (``float`` is meant), and ``Mds_Nds +
Mds_sz`` advances by ``Mds_sz`` *floats* while the text passes ``Mds_sz`` in
*bytes* (``size/2 = 1024`` would put ``Nds`` 4096 bytes into a 2048-byte
array). Here ``Mds_sz`` and ``Nds_sz`` are bytes, as the text says, and the
section boundary is ``Mds_sz // 4`` floats.
"""

import functools

from ._target import cuda, float32

FLOAT_BYTES = 4  # sizeof(float)


def shared_bytes(TILE_WIDTH):
    """Bytes of dynamic shared memory a block needs: Mds and Nds, ``2 * TILE_WIDTH**2 * 4``."""
    return 2 * TILE_WIDTH * TILE_WIDTH * FLOAT_BYTES


def launch_args(Width, TILE_WIDTH):
    """The scalars after (M, N, P): ``Width, Mds_sz, Nds_sz`` (section sizes in bytes)."""
    half = shared_bytes(TILE_WIDTH) // 2
    return (Width, half, half)


def choose_tile_width(props):
    """Fig. 5.14's host code: the TILE_WIDTH to launch with, from the device's properties.

    The book leaves ``calculate_appropriate_SM_usage(devProp.sharedMemPerBlock, ...)``
    as an exercise. This answer: of the widths whose block fits the device
    (``TILE_WIDTH**2`` threads, :func:`shared_bytes` within the shared memory a
    block may use), the one that keeps the most threads resident on an SM
    (limited by its thread slots, block slots and shared memory, with the
    per-block reservation), and the largest of those (larger tiles read
    global memory fewer times).

    Parameters
    ----------
    props : mapping
        CUDA device attributes (``CU_DEVICE_ATTRIBUTE_`` names without the
        prefix): ``MAX_THREADS_PER_BLOCK``, ``MAX_SHARED_MEMORY_PER_BLOCK``,
        ``MAX_THREADS_PER_MULTIPROCESSOR``, ``MAX_BLOCKS_PER_MULTIPROCESSOR``,
        ``MAX_SHARED_MEMORY_PER_MULTIPROCESSOR`` and optionally
        ``RESERVED_SHARED_MEMORY_PER_BLOCK`` (bytes).

    Returns
    -------
    int
        TILE_WIDTH, 1 to 32.
    """
    reserved = props.get("RESERVED_SHARED_MEMORY_PER_BLOCK", 0)
    best_threads, best = -1, 1
    for T in range(1, 33):
        threads, smem = T * T, shared_bytes(T)
        if threads > props["MAX_THREADS_PER_BLOCK"] or smem > props["MAX_SHARED_MEMORY_PER_BLOCK"]:
            continue
        blocks = min(
            props["MAX_THREADS_PER_MULTIPROCESSOR"] // threads,
            props["MAX_BLOCKS_PER_MULTIPROCESSOR"],
            props["MAX_SHARED_MEMORY_PER_MULTIPROCESSOR"] // (smem + reserved),
        )
        if blocks * threads >= best_threads:
            best_threads, best = blocks * threads, T
    return best


def make_plain(TILE_WIDTH):
    """Fig. 5.14 for one ``TILE_WIDTH`` (a compile-time constant, line 01's ``#define``)."""

    @cuda.jit
    def matrixMulKernel(M, N, P, Width, Mds_sz, Nds_sz):
        # extern __shared__ float Mds_Nds[];  (bytes: the launch's 4th parameter)
        Mds_Nds = cuda.shared.array(0, float32)
        Mds = Mds_Nds[: Mds_sz // 4]
        Nds = Mds_Nds[Mds_sz // 4 : (Mds_sz + Nds_sz) // 4]

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
                Mds[ty * TILE_WIDTH + tx] = M[Row * Width + ph * TILE_WIDTH + tx]
            else:
                Mds[ty * TILE_WIDTH + tx] = float32(0)
            if (ph * TILE_WIDTH + ty) < Width and Col < Width:
                Nds[ty * TILE_WIDTH + tx] = N[(ph * TILE_WIDTH + ty) * Width + Col]
            else:
                Nds[ty * TILE_WIDTH + tx] = float32(0)
            cuda.syncthreads()

            for k in range(TILE_WIDTH):
                Pvalue += Mds[ty * TILE_WIDTH + k] * Nds[k * TILE_WIDTH + tx]
            cuda.syncthreads()
        if Row < Width and Col < Width:
            P[Row * Width + Col] = Pvalue

    return matrixMulKernel


@functools.cache
def make_plain_any_width():
    """Fig. 5.14 with ``TILE_WIDTH`` as an argument: one compiled kernel for every width.

    Launch as ``kernel[grid, (T, T), 0, shared_bytes(T)](M, N, P, Width, T, Mds_sz, Nds_sz)``.
    """

    @cuda.jit
    def matrixMulKernel(M, N, P, Width, TILE_WIDTH, Mds_sz, Nds_sz):
        Mds_Nds = cuda.shared.array(0, float32)
        Mds = Mds_Nds[: Mds_sz // 4]
        Nds = Mds_Nds[Mds_sz // 4 : (Mds_sz + Nds_sz) // 4]
        bx = cuda.blockIdx.x
        by = cuda.blockIdx.y
        tx = cuda.threadIdx.x
        ty = cuda.threadIdx.y
        Row = by * TILE_WIDTH + ty
        Col = bx * TILE_WIDTH + tx
        Pvalue = float32(0)
        for ph in range((Width + TILE_WIDTH - 1) // TILE_WIDTH):
            if Row < Width and (ph * TILE_WIDTH + tx) < Width:
                Mds[ty * TILE_WIDTH + tx] = M[Row * Width + ph * TILE_WIDTH + tx]
            else:
                Mds[ty * TILE_WIDTH + tx] = float32(0)
            if (ph * TILE_WIDTH + ty) < Width and Col < Width:
                Nds[ty * TILE_WIDTH + tx] = N[(ph * TILE_WIDTH + ty) * Width + Col]
            else:
                Nds[ty * TILE_WIDTH + tx] = float32(0)
            cuda.syncthreads()
            for k in range(TILE_WIDTH):
                Pvalue += Mds[ty * TILE_WIDTH + k] * Nds[k * TILE_WIDTH + tx]
            cuda.syncthreads()
        if Row < Width and Col < Width:
            P[Row * Width + Col] = Pvalue

    return matrixMulKernel
