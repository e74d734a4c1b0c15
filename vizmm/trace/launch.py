"""The launch shape: one frozen description of a kernel launch, validated once.

Every range check, grid and phase count of vizmm reads this object instead
of writing its own ceiling division (PMPP 4th ed., Section 5.4: the grid has
``ceil(Width / TILE_WIDTH)`` blocks per dimension and every thread runs
``ceil(k / TILE_WIDTH)`` phases; Section 5.5 for the general ``j x k . k x l``
form).

NumPy only; nothing here imports numba.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from .kernels import KERNEL_SPECS, SQUARE_KERNELS, TILED_KERNELS

__all__ = [
    "KERNELS",
    "SQUARE_KERNELS",
    "TILED_KERNELS",
    "MAX_TILE_WIDTH",
    "WARP_SIZE",
    "LaunchError",
    "LaunchShape",
    "ceil_div",
]

#: Kernel names, in the order menus list them (:data:`vizmm.trace.kernels.KERNEL_SPECS`);
#: equal to ``vizmm_kernels.KERNEL_NAMES`` (a test says so).
KERNELS = tuple(KERNEL_SPECS)
#: The largest TILE_WIDTH: 32 x 32 = 1024 threads, CUDA's limit per block.
MAX_TILE_WIDTH = 32


#: Threads per warp.
WARP_SIZE = 32


def ceil_div(a, b):
    """``ceil(a / b)`` for positive integers (or integer arrays), exactly, without floats.

    The book's ``ceil(Width / TILE_WIDTH)``; also warps per block, sectors per request.

    Parameters
    ----------
    a, b : int or ndarray of int
        Positive integers.
    """
    return -(-a // b)


class LaunchError(ValueError):
    """A launch description is not valid; the message says what is wrong and what is allowed."""


def _positive_int(name: str, value, error: type[Exception]) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise error(f"{name} must be a positive integer (elements), got {value!r}")
    return int(value)


def check_tile_width(tile_width, error: type[Exception] = LaunchError) -> int:
    """Return ``tile_width`` as an int, or raise ``error`` unless ``1 <= tile_width <= 32``.

    Parameters
    ----------
    tile_width : int
        What was given as TILE_WIDTH.
    error : type of Exception
        The exception to raise.

    Raises
    ------
    LaunchError (or ``error``)
        For a non-integer or a TILE_WIDTH outside 1..32.
    """
    if (
        isinstance(tile_width, bool)
        or not isinstance(tile_width, (int, np.integer))
        or not 1 <= tile_width <= MAX_TILE_WIDTH
    ):
        raise error(
            f"tile_width (TILE_WIDTH) must be an integer from 1 to {MAX_TILE_WIDTH}: a block "
            "has TILE_WIDTH x TILE_WIDTH threads and CUDA allows at most 1024; "
            f"got {tile_width!r}"
        )
    return int(tile_width)


@dataclasses.dataclass(frozen=True)
class LaunchShape:
    """One launch of a kernel: kernel, sizes and TILE_WIDTH, with its grid and phases.

    Made through :meth:`make`, which validates every field once; everything
    else reads :attr:`grid`, :attr:`n_phases` and :attr:`n_blocks` from here.

    Attributes
    ----------
    kernel : str
        One of :data:`KERNELS`: 'naive' (Fig. 3.11), 'tiled' (Fig. 5.9),
        'boundary' (Fig. 5.13), 'general' (Section 5.5's ``j x k . k x l``) or
        'dynamic' (Fig. 5.14: Fig. 5.13 with dynamically sized shared memory).
    j, k, l : int
        M is j x k, N is k x l, P is j x l (elements); ``j == k == l`` (the
        book's ``Width``) for the square kernels.
    tile_width : int
        TILE_WIDTH (elements), 1 to 32; a block is TILE_WIDTH x TILE_WIDTH threads.
    """

    kernel: str
    j: int
    k: int
    l: int  # noqa: E741 - the book's name
    tile_width: int

    @classmethod
    def make(
        cls, kernel, j, k, l, tile_width, *, error: type[Exception] = LaunchError
    ) -> LaunchShape:
        """Validate and build a launch shape from sizes alone (no allocation).

        Parameters
        ----------
        kernel : str
            A name from :data:`KERNELS`.
        j, k, l : int
            Positive sizes (elements).
        tile_width : int
            TILE_WIDTH, 1 to 32.
        error : exception class
            What to raise (callers pass their own ``ValueError`` subclass).

        Raises
        ------
        LaunchError (or ``error``)
            For an unknown kernel, a non-positive size, a TILE_WIDTH outside
            1..32, or non-square sizes for a square kernel.
        """
        if kernel not in KERNELS:
            raise error(f"unknown kernel {kernel!r}; choose one of {', '.join(KERNELS)}")
        j, k, l = (_positive_int(n, v, error) for n, v in (("j", j), ("k", k), ("l", l)))
        T = check_tile_width(tile_width, error)
        if kernel in SQUARE_KERNELS and not j == k == l:
            raise error(
                f"kernel {kernel!r} multiplies square Width x Width matrices, but the shapes are "
                f"M {j}x{k} and N {k}x{l}; use kernel='general' for j x k . k x l"
            )
        return cls(kernel, j, k, l, T)

    @classmethod
    def of(cls, meta, *, error: type[Exception] = LaunchError) -> LaunchShape:
        """The launch shape described by a trace's metadata (keys kernel, j, k, l, tile_width).

        Parameters
        ----------
        meta : mapping
            A trace's metadata.
        error : type of Exception
            The exception to raise for a launch that is not valid.
        """
        return cls.make(
            meta["kernel"], meta["j"], meta["k"], meta["l"], meta["tile_width"], error=error
        )

    @property
    def shape(self) -> tuple[int, int, int]:
        """``(j, k, l)`` (elements)."""
        return self.j, self.k, self.l

    @property
    def grid(self) -> tuple[int, int]:
        """``(gy, gx)`` = ``(ceil(j / TILE_WIDTH), ceil(l / TILE_WIDTH))`` blocks."""
        T = self.tile_width
        return ceil_div(self.j, T), ceil_div(self.l, T)

    @property
    def n_blocks(self) -> int:
        """Blocks in the grid, ``gy * gx``."""
        gy, gx = self.grid
        return gy * gx

    @property
    def n_phases(self) -> int:
        """Phases per block, ``ceil(k / TILE_WIDTH)``; 0 for the naive kernel (no tiles)."""
        return 0 if self.kernel == "naive" else ceil_div(self.k, self.tile_width)

    @property
    def threads_per_block(self) -> int:
        """``TILE_WIDTH ** 2`` threads."""
        return self.tile_width * self.tile_width

    @property
    def warps_per_block(self) -> int:
        """Warps of 32 threads per block, ``ceil(TILE_WIDTH ** 2 / 32)``."""
        return ceil_div(self.threads_per_block, WARP_SIZE)

    @property
    def padded(self) -> tuple[int, int, int]:
        """``(j, k, l)`` rounded up to whole tiles (the grid's extent, elements)."""
        T = self.tile_width
        return tuple(ceil_div(n, T) * T for n in self.shape)

    def label(self) -> str:
        """``'boundary 4x4x4, TILE_WIDTH 2'``: the launch for people."""
        return f"{self.kernel} {self.j}x{self.k}x{self.l}, TILE_WIDTH {self.tile_width}"
