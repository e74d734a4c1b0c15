"""The lean variant's records in two buffers: what its launch takes after the kernel's own.

An aggregated GPU recording launches the lean variant over the whole grid.
Its records (every block's info, the zero-fills, a read counter per global
array, the runs of :mod:`.instrument_runs`) were ten arrays, each an
argument Numba prepares on the host at every launch. They are now two
buffers, one of int64 and one of int32; the variant's prologue takes its
named views by slicing them (:func:`prologue`), from sizes it knows there
(its grid, its arrays' sizes), and the host lays them out by the same
table (:func:`slots`), so the layout is written once.

``_r64``: a header (the run arrays' count ``k``, then per run array the
offsets of its ``_mult_X`` in ``_r32``, its ``_code_X`` in ``_r64`` and its
``_reads_X`` in ``_r32``, and its size: ``1 + 4 k`` elements), ``_blk``
(6 per block), ``_code_X`` per run array. ``_r32``: ``_seq`` (1), ``_zf``
(blocks × phases × arrays), ``_reads_X`` per global array, ``_mult_X`` per
run array. The runs' ``_mult_X`` and ``_code_X`` come last in each buffer,
so that after their expansion (:func:`expand_lean_runs`) only the prefixes
before them are copied back. On an H100 the host's enqueue of the lean
launch and its expansion went from a median of 0.18 ms to 0.16 ms: most of
a launch's host cost is Numba's whatever the arguments (README, *The lean
launch's records in two buffers*).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import TYPE_CHECKING

import numpy as np

from .instrument_ast import InstrumentError

if TYPE_CHECKING:
    from .instrument import Instrumented

#: The two buffers' argument names and dtypes.
BUFFERS = {"_r64": np.int64, "_r32": np.int32}
#: A size in a slot: ``("blocks", k)`` k per block of the grid, ``("zero_fills",)``
#: blocks × phases × arrays, ``("array", X)`` global array X's elements, ``("one",)``.
_Size = tuple


@dataclasses.dataclass(frozen=True)
class Slot:
    """One named record in a buffer: ``name``, its ``buffer`` (``_r64`` or ``_r32``), its size."""

    name: str
    buffer: str
    size: _Size


def slots(global_arrays, run_arrays) -> tuple[Slot, ...]:
    """The lean variant's records, in each buffer's order (the header before ``_r64``'s).

    Parameters
    ----------
    global_arrays : sequence of str
        The kernel's global arrays (a read counter each).
    run_arrays : sequence of str
        Those whose reads are counted as runs (``_mult_X``, ``_code_X``).

    Returns
    -------
    tuple of Slot
    """
    return (
        Slot("_blk", "_r64", ("blocks", 6)),
        *(Slot(f"_code_{g}", "_r64", ("array", g)) for g in run_arrays),
        Slot("_seq", "_r32", ("one",)),
        Slot("_zf", "_r32", ("zero_fills",)),
        *(Slot(f"_reads_{g}", "_r32", ("array", g)) for g in global_arrays),
        *(Slot(f"_mult_{g}", "_r32", ("array", g)) for g in run_arrays),
    )


def header_size(run_arrays) -> int:
    """Elements of ``_r64``'s header: the run arrays' count, then four per run array.

    Parameters
    ----------
    run_arrays : sequence of str
        The arrays whose reads are counted as runs.

    Returns
    -------
    int
        ``1 + 4 * len(run_arrays)``.
    """
    return 1 + 4 * len(run_arrays)


def _expression(size: _Size) -> str:
    """A slot's size as the lean variant's prologue computes it."""
    kind = size[0]
    if kind == "blocks":
        return f"_lnb * {int(size[1])}"
    if kind == "zero_fills":
        return "_lnb * _zph * _NARR"
    if kind == "array":
        return f"{size[1]}.size"
    return "1"


def prologue(global_arrays, run_arrays) -> str:
    """The lean variant's statements that take its records' views from the two buffers.

    Parameters
    ----------
    global_arrays, run_arrays : sequence of str
        As :func:`slots` takes them.

    Returns
    -------
    str
        Python statements (the rewritten kernel's), binding ``_blk``,
        ``_seq``, ``_zf``, ``_reads_X``, ``_mult_X`` and ``_code_X``.
    """
    lines = [
        "_lnb = cuda.gridDim.x * cuda.gridDim.y",
        f"_lo64 = {header_size(run_arrays)}",
        "_lo32 = 0",
    ]
    for s in slots(global_arrays, run_arrays):
        at, n = f"_lo{s.buffer[2:]}", _expression(s.size)
        lines += [f"{s.name} = {s.buffer}[{at}:{at} + {n}]", f"{at} += {n}"]
    return "\n".join(lines) + "\n"


@dataclasses.dataclass(frozen=True)
class LeanLayout:
    """Where each of a lean launch's records lies in its two buffers (host sizes).

    Attributes
    ----------
    where : dict of str to (str, int, int)
        Per record name, its buffer and ``[start, stop)`` (elements).
    sizes : dict of str to int
        Each buffer's elements.
    kept : dict of str to int
        Each buffer's prefix copied back after the expansion (the runs dropped).
    runs : tuple of (str, int, int, int, int)
        Per run array: its name, the offsets of ``_mult_X``, ``_code_X`` and
        ``_reads_X``, and its size (elements), as the header holds them.
    phases : int
        The ``_zph`` argument: the shared stores per thread counted in ``_zf``.
    """

    where: dict
    sizes: dict
    kept: dict
    runs: tuple
    phases: int

    def records(self) -> dict:
        """The launch's arguments after the kernel's own: ``_r64``, ``_r32``, ``_zph`` (host).

        ``_blk`` is -1 (not read) and the header filled; everything else is 0.
        """
        r64 = np.zeros(self.sizes["_r64"], BUFFERS["_r64"])
        r32 = np.zeros(self.sizes["_r32"], BUFFERS["_r32"])
        r64[0] = len(self.runs)
        for j, (_g, om, oc, orr, n) in enumerate(self.runs):
            r64[1 + 4 * j : 5 + 4 * j] = (om, oc, orr, n)
        _, a, b = self.where["_blk"]
        r64[a:b] = -1
        return {"_r64": r64, "_r32": r32, "_zph": np.int32(self.phases)}

    def views(self, rec: Mapping) -> dict:
        """Each record by name, a view of ``rec``'s buffers (host or device arrays).

        Parameters
        ----------
        rec : mapping
            The launch's ``_r64`` and ``_r32`` (whole, or the prefixes
            :func:`expand_lean_runs` left).

        Returns
        -------
        dict of str to array
            ``_blk``, ``_seq``, ``_zf``, ``_reads_X`` and, while the buffers
            still hold them, ``_mult_X`` and ``_code_X``: records past a
            buffer's length are left out.
        """
        out = {}
        for name, (buf, a, b) in self.where.items():
            if b <= rec[buf].shape[0]:
                out[name] = rec[buf][a:b]
        return out

    @property
    def largest_run_array(self) -> int:
        """The largest run array's size (elements): the expansion's launch width."""
        return max((r[-1] for r in self.runs), default=0)


def lean_layout(inst: Instrumented, grid, arrays: Mapping, phases: int) -> LeanLayout:
    """The layout of the lean launch's records for ``grid`` over ``arrays``.

    Parameters
    ----------
    inst : Instrumented
        The kernel (its ``global_arrays``, ``lean_runs`` and ``arrays``).
    grid : (int, int)
        The launch's grid, ``(gx, gy)``.
    arrays : mapping of str to ndarray
        The global arrays by name (their sizes).
    phases : int
        Shared stores per thread counted for the zero-fills.

    Returns
    -------
    LeanLayout

    Raises
    ------
    InstrumentError
        When a buffer would hold 2**31 elements or more (the prologue's
        int32 arithmetic).
    """
    gx, gy = grid
    nb = int(gx) * int(gy)

    def value(size: _Size) -> int:
        kind = size[0]
        if kind == "blocks":
            return nb * int(size[1])
        if kind == "zero_fills":
            return nb * int(phases) * len(inst.arrays)
        if kind == "array":
            return int(np.size(arrays[size[1]]))
        return 1

    at = {"_r64": header_size(inst.lean_runs), "_r32": 0}
    where = {}
    for s in slots(inst.global_arrays, inst.lean_runs):
        n = value(s.size)
        where[s.name] = (s.buffer, at[s.buffer], at[s.buffer] + n)
        at[s.buffer] += n
    if max(at.values()) >= 2**31:
        raise InstrumentError(
            f"the lean variant's records would take {max(at.values())} elements in one buffer; "
            "at most 2**31 - 1 are allowed: record a smaller launch"
        )
    runs = tuple(
        (g, where[f"_mult_{g}"][1], where[f"_code_{g}"][1], where[f"_reads_{g}"][1],
         where[f"_mult_{g}"][2] - where[f"_mult_{g}"][1])
        for g in inst.lean_runs
    )  # fmt: skip
    # the runs lie last in each buffer: what is copied back ends where they start
    kept = dict(at)
    for name, (buf, start, _stop) in where.items():
        if name.startswith(("_mult_", "_code_")):
            kept[buf] = min(kept[buf], start)
    return LeanLayout(where=where, sizes=at, kept=kept, runs=runs, phases=int(phases))


def expand_lean_runs(layout: LeanLayout, rec: dict, stream=0, keep: bool = False) -> None:
    """After the lean variant: its runs added into the read counters, in one launch.

    Parameters
    ----------
    layout : LeanLayout
        The launch's layout (:func:`lean_layout`).
    rec : dict
        The lean launch's arguments after the kernel's own (device arrays, or
        host arrays in Numba's simulator): ``_r64``, ``_r32``, ``_zph``.
    stream : stream or 0
        Where the lean variant ran; the expansion follows it there.
    keep : bool
        Keep the runs in ``rec`` (a benchmark launching again); by default
        ``rec``'s buffers become their prefixes before the runs, so that
        nothing copies the runs back.
    """
    from . import instrument_device_runs as helpers

    n = layout.largest_run_array
    if n:
        grid = ((n + 255) // 256, len(layout.runs))
        helpers.expand_runs()[grid, 256, stream](rec["_r32"], rec["_r64"])
    if not keep:
        for buf in BUFFERS:
            rec[buf] = rec[buf][: layout.kept[buf]]
