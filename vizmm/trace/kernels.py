"""The book's kernels that vizmm records, each registered once with what vizmm knows of it.

One :class:`KernelSpec` per module of ``vizmm_kernels`` (the folder
``kernels/``), in the order menus list them. Every list of kernels in vizmm
is derived from :data:`KERNEL_SPECS`: the launch's names
(:data:`vizmm.trace.KERNELS`), the kernels with tiles and phases
(:data:`TILED_KERNELS`), those of square matrices (:data:`SQUARE_KERNELS`),
those the barrier lab removes a ``__syncthreads()`` from
(:data:`BARRIER_KERNELS`) and those Section 5.6's occupancy arithmetic
knows the registers of (:data:`OCCUPANCY_KERNELS`). Where lists have
different members, it is one of these properties.

``vizmm_kernels`` knows nothing of vizmm and keeps its own ``KERNEL_NAMES``,
``FIGURES`` and ``BARRIER_KERNELS``; ``tests/test_kernel_registry.py`` holds
them equal to this registry, and every kernel module to a registered kernel.

NumPy-free and numba-free: the standard library only.
"""

from __future__ import annotations

import dataclasses
import types
from collections.abc import Mapping

__all__ = [
    "BARRIER_KERNELS",
    "KERNEL_SPECS",
    "OCCUPANCY_KERNELS",
    "SQUARE_KERNELS",
    "TILED_KERNELS",
    "KernelSpec",
]


@dataclasses.dataclass(frozen=True)
class KernelSpec:
    """What vizmm knows of one book kernel.

    Attributes
    ----------
    name : str
        The kernel's name (its module in ``vizmm_kernels``).
    figure : str
        The book's figure or section it is (``"Fig. 5.9"``), as a trace's
        ``meta['figure']`` names it.
    tiled : bool
        Its blocks copy tiles of M and N into Mds and Nds, phase ``ph`` after
        phase (every kernel but the naive one of Fig. 3.11): the block replay
        shows it, and each block holds ``2 * TILE_WIDTH**2`` floats of shared
        memory (Section 5.6; the padded kernel a column more of Nds).
    square : bool
        It multiplies square ``Width x Width`` matrices (the book's figures);
        False: ``j x k . k x l``.
    barriers : bool
        It has Section 5.4's two ``__syncthreads()`` that the barrier lab may
        remove, and its k loop reads Fig. 5.9's ``Mds[ty][k]`` and
        ``Nds[k][tx]`` (what ``reads=True`` records and the hazards follow).
    occupancy : bool
        Section 5.6's occupancy arithmetic knows its registers per thread
        (measured on an H200, ``vizmm/data/gpu-speed-h200.json``).
    label : str or None
        How a page names it in a sentence or a plot's title (``"tiled
        kernel (Fig. 5.9)"``: "... by the tiled kernel (Fig. 5.9)"); None:
        its :attr:`name`.
    color : str or None
        Its colour (``"#rrggbb"``) where plots tell kernels apart (the
        roofline's points, the speed curves): an Okabe-Ito hue, the same in
        both themes (:data:`vizmm.render.palette.KERNEL_COLORS`); None: the
        theme's muted colour.
    """

    name: str
    figure: str
    tiled: bool = True
    square: bool = True
    barriers: bool = False
    occupancy: bool = False
    label: str | None = None
    color: str | None = None


_SPECS = (
    KernelSpec(
        "naive",
        "Fig. 3.11",
        tiled=False,
        occupancy=True,
        label="naive kernel (Fig. 3.11)",
        color="#d55e00",
    ),
    KernelSpec(
        "tiled",
        "Fig. 5.9",
        barriers=True,
        occupancy=True,
        label="tiled kernel (Fig. 5.9)",
        color="#0072b2",
    ),
    KernelSpec(
        "boundary",
        "Fig. 5.13",
        barriers=True,
        occupancy=True,
        label="tiled kernel (Fig. 5.13)",
        color="#009e73",
    ),
    KernelSpec(
        "general",
        "Section 5.5 (j x k . k x l exercise)",
        square=False,
        occupancy=True,
        label="general tiled kernel",
    ),
    KernelSpec("uncoalesced", "Fig. 5.13, thread roles swapped in the loads"),
    KernelSpec("conflict", "Fig. 5.13, Nds read as Nds[tx][k]"),
    KernelSpec("padded", "Fig. 5.13, Nds[tx][k], Nds padded to TILE_WIDTH + 1 columns"),
    KernelSpec(
        "dynamic",
        "Fig. 5.14",
        occupancy=True,
        label="tiled kernel (Fig. 5.14)",
        color="#cc79a7",
    ),
)

#: Every book kernel by name, in the order menus list them.
KERNEL_SPECS: Mapping[str, KernelSpec] = types.MappingProxyType({s.name: s for s in _SPECS})
#: Kernels with tiles and phases (:attr:`KernelSpec.tiled`).
TILED_KERNELS = tuple(s.name for s in _SPECS if s.tiled)
#: Kernels that multiply square ``Width x Width`` matrices (:attr:`KernelSpec.square`).
SQUARE_KERNELS = tuple(s.name for s in _SPECS if s.square)
#: Kernels whose ``__syncthreads()`` the barrier lab removes (:attr:`KernelSpec.barriers`).
BARRIER_KERNELS = tuple(s.name for s in _SPECS if s.barriers)
#: Kernels Section 5.6's occupancy arithmetic takes (:attr:`KernelSpec.occupancy`).
OCCUPANCY_KERNELS = tuple(s.name for s in _SPECS if s.occupancy)
