"""The book's Fig. 5.8 table, built from a recorded trace, for any block.

PMPP 4th ed., Fig. 5.8 ("Execution phases of a tiled matrix multiplication")
has one row per thread of block_{0,0} and, for every phase, three columns:
the M element the thread copies into ``Mds``, the N element it copies into
``Nds``, and the terms it adds to its private ``Pvalue``::

    thread_{0,1} | M_{0,1} → Mds_{0,1} | N_{0,1} → Nds_{0,1} |
                 | Pvalue_{0,1} += Mds_{0,0}*Nds_{0,1} + Mds_{0,1}*Nds_{1,1} | ...

:func:`build_table` makes the same table for any recorded block of a
:class:`~vizmm.trace.Trace`, from what the threads really did, so that it also
shows what the book describes in words for Figs. 5.11 and 5.12: the zero-fill
of the boundary-checked kernel (Fig. 5.13, ``0.0 → Mds_{1,1}``), the wrong
element that the unchecked kernel (Fig. 5.9) reads past the end of a row
(``M_{0,3}=M_{1,0} → Mds_{0,1}``), and loads past the end of the allocation
(``N_{3,0} ↛ Nds_{1,0}``, recorded and not performed). Optional columns add
each thread's Pvalue after the phase and its final P store.

For a barrier-lab recording (a trace with the k loop's reads recorded,
Section 5.4 with a ``__syncthreads()`` removed) the Pvalue cells list the
terms each thread really computed, element by element (``M_{0,0}*N_{0,1}``,
:class:`Term`), and mark those computed from a wrong element (``✗``, kind
``wrong_term``, the book's term in :attr:`Cell.note`); the Pvalue after a
phase that used a wrong term and a P store that came out wrong are marked
too (kind ``wrong_value``), and the P store says the value stored. Which
reads were wrong comes from :mod:`vizmm.analysis.hazards`.

The result is a neutral structure (:class:`Table` of :class:`Cell`) that
terminals (:func:`format_table`), the dashboard and the exporters all draw in
their own way. Cell texts use the book's subscript notation ``X_{a,b}``;
:func:`render_text` turns it into Unicode subscripts, ASCII or HTML.

This module imports NumPy only (through the trace): no numba, no Bokeh.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable

import numpy as np

from ..analysis import hazards as hz
from ..trace import Access, PWrite, Trace
from ..trace.derived import per_trace
from ..trace.units import format_value

__all__ = [
    "CELL_KINDS",
    "PHASE_ROLES",
    "Cell",
    "Column",
    "Term",
    "Table",
    "TableCursor",
    "block_table",
    "build_table",
    "frame_table",
]

#: Every value :attr:`Cell.kind` can take.
#:
#: ``thread``
#:     the row's label, ``thread_{ty,tx}``;
#: ``loaded``, ``zero_fill``, ``wrong_element``, ``out_of_allocation``, ``not_recorded``
#:     a load into ``Mds`` / ``Nds`` (the :class:`~vizmm.trace.Access` names, lower case);
#: ``pvalue``
#:     the terms a thread adds to its Pvalue in one phase (Fig. 5.8's 4th and 7th columns);
#: ``value``
#:     the thread's Pvalue after the phase (a number), or ``not_recorded``;
#: ``written``, ``skipped``, ``wrong_element``, ``out_of_allocation``
#:     the thread's final store into P (the :class:`~vizmm.trace.PWrite` names);
#: ``wrong_term``
#:     barrier lab: a Pvalue cell with a term computed from a wrong element;
#: ``wrong_value``
#:     barrier lab: a Pvalue after a phase that used a wrong term, or a P
#:     store whose value differs from the book's kernel.
CELL_KINDS = (
    "thread",
    "loaded",
    "zero_fill",
    "wrong_element",
    "out_of_allocation",
    "not_recorded",
    "pvalue",
    "value",
    "written",
    "skipped",
    "wrong_term",
    "wrong_value",
)

#: Column roles, in the order a phase's columns appear.
PHASE_ROLES = ("m_load", "n_load", "pvalue", "value")

ARROW = "→"  # a load performed (the book draws it as a downward arrow)
NO_ARROW = "↛"  # a load recorded but not performed (past the end of the allocation)


@dataclasses.dataclass(frozen=True)
class Term:
    """One term ``Mds[ty][k] * Nds[k][tx]`` a thread added to its Pvalue (barrier lab).

    Attributes
    ----------
    k : int
        The k of the inner loop (Fig. 5.9 line 24).
    text : str
        The term as computed, element by element (``"M_{0,1}*N_{1,0}"``);
        a factor is ``0.0`` for a zero-fill and ``Mds_{r,c}?`` for a slot
        not written yet.
    book : str
        The term the book's kernel computes there (``"M_{0,3}*N_{3,0}"``).
    wrong : bool
        Whether a factor came from another element than the book's kernel reads.
    value : float
        The product of the two values read (float32, as recorded).
    """

    k: int
    text: str
    book: str
    wrong: bool
    value: float


@dataclasses.dataclass(frozen=True)
class Cell:
    """One cell of the table.

    Attributes
    ----------
    text : str
        What the cell says, in the book's notation with ``X_{a,b}`` subscripts
        and Unicode arrows (see :func:`render_text` for other forms), e.g.
        ``"M_{0,3}=M_{1,0} → Mds_{0,1}"``.
    kind : str
        One of :data:`CELL_KINDS`: what happened, for colouring.
    thread : tuple of int or None
        ``(ty, tx)`` of the row's thread.
    phase : int or None
        The phase ``ph`` of the cell's column (None for the thread and P-store
        columns).
    value : float or None
        The number shown by a ``value`` cell (Pvalue after the phase) or a
        barrier-lab P store (the value stored); None elsewhere and where
        nothing was recorded.
    terms : tuple of Term
        Barrier lab: the terms of a Pvalue cell, one per ``k``; empty
        elsewhere.
    note : str
        Barrier lab: what went wrong in this cell, in words (a hover or a
        footnote): ``"k=1: computed M_{0,1}*N_{1,0} where the book's kernel
        computes M_{0,3}*N_{3,0}"``; empty where nothing did.
    """

    text: str
    kind: str
    thread: tuple[int, int] | None = None
    phase: int | None = None
    value: float | None = None
    terms: tuple[Term, ...] = ()
    note: str = ""

    @property
    def wrong(self) -> bool:
        """Whether the barrier lab marks this cell (kind ``wrong_term`` or ``wrong_value``)."""
        return self.kind in ("wrong_term", "wrong_value")


@dataclasses.dataclass(frozen=True)
class Column:
    """One column of the table.

    Attributes
    ----------
    name : str
        Self-contained header, e.g. ``"Phase 1: M → Mds"`` (what :attr:`Table.header` lists).
    group : str
        The heading the column shares with its neighbours (``"Phase 1"``, or
        ``""`` for the thread and P-store columns), the upper row of a
        two-row header as in Fig. 5.8.
    short : str
        The lower row of a two-row header, e.g. ``"M → Mds"``.
    role : str
        One of ``thread``, ``m_load``, ``n_load``, ``pvalue``, ``value``, ``p_write``.
    phase : int or None
        ``ph`` of the column, None for the thread and P-store columns.
    """

    name: str
    group: str
    short: str
    role: str
    phase: int | None = None


@dataclasses.dataclass(frozen=True)
class Table:
    """The Fig. 5.8 table of one block: one row per thread, columns per phase.

    Attributes
    ----------
    title : str
        One line saying which block, kernel, shapes and tile width.
    block : tuple of int
        ``(by, bx)``.
    phases : tuple of int
        The phases shown, in order.
    columns : tuple of Column
        The columns, left to right.
    rows : tuple of tuple of Cell
        One row per thread, ``(ty, tx)`` in row-major order as in the book
        (thread_{0,0}, thread_{0,1}, thread_{1,0}, ...); each row has one cell
        per column.
    """

    title: str
    block: tuple[int, int]
    phases: tuple[int, ...]
    columns: tuple[Column, ...]
    rows: tuple[tuple[Cell, ...], ...]

    @property
    def header(self) -> list[str]:
        """Column names, left to right (:attr:`Column.name`)."""
        return [c.name for c in self.columns]

    @property
    def threads(self) -> list[tuple[int, int] | None]:
        """``(ty, tx)`` of each row (None for a row of no one thread)."""
        return [row[0].thread for row in self.rows]

    def groups(self) -> list[tuple[str, int]]:
        """Runs of adjacent columns sharing a :attr:`Column.group`: ``[(label, span), ...]``."""
        out: list[tuple[str, int]] = []
        for c in self.columns:
            if out and out[-1][0] == c.group and c.group:
                out[-1] = (c.group, out[-1][1] + 1)
            else:
                out.append((c.group, 1))
        return out

    def cell(self, thread: tuple[int, int], column: str) -> Cell:
        """The cell of thread ``(ty, tx)`` in the column named ``column``.

        Parameters
        ----------
        thread : tuple of (int, int)
            (ty, tx).
        column : str
            A column's name (:attr:`Column.name`).

        Raises
        ------
        KeyError
            When no such thread or column is in the table.
        """
        names = self.header
        if column not in names:
            raise KeyError(f"no column {column!r}; columns: {', '.join(names)}")
        for row in self.rows:
            if row[0].thread == tuple(thread):
                return row[names.index(column)]
        raise KeyError(f"no thread {tuple(thread)} in the table")


@dataclasses.dataclass(frozen=True)
class TableCursor:
    """How far a replay step has filled the Fig. 5.8 table of its block.

    A :class:`~vizmm.replay.Frame` carries one; renderers read :attr:`current`,
    :meth:`done` and :attr:`phase` instead of working it out from the step.

    Attributes
    ----------
    phase : int
        The phase the step is in (0 before the first phase, the last phase
        at the P store): tables too wide for every phase show a window
        around it.
    current : (phase, role) or None
        The cell being filled at this step (``phase`` None for the P-store
        column); None when no cell is (start, barrier 1).
    last : str or None
        The last role of :data:`PHASE_ROLES` done in :attr:`phase`; None at
        the start and at the P store (see :attr:`at`).
    at : {'start', 'phase', 'end'}
        Before the first phase (nothing done), inside a phase, or at the P
        store (everything done).
    """

    phase: int
    current: tuple[int | None, str] | None
    last: str | None
    at: str = "phase"

    def done(self, phase: int | None, role: str) -> bool:
        """Whether the cell of ``role`` in ``phase`` has been filled by this step.

        The thread column is done from the first phase on; the P-store
        column only at the P store.

        Parameters
        ----------
        phase : int or None
            A phase ``ph``; None for the P-store column.
        role : str
            A column role (:data:`PHASE_ROLES`, ``'thread'`` or ``'p_write'``).
        """
        if self.at == "start":
            return False
        if self.at == "end":
            return True
        if role == "thread":
            return True
        if role == "p_write" or phase is None:
            return False
        if phase != self.phase:
            return phase < self.phase
        return PHASE_ROLES.index(role) <= PHASE_ROLES.index(self.last)


# --------------------------------------------------------------------- build
def _sub(name: str, a: int, b: int) -> str:
    return f"{name}_{{{a},{b}}}"


def _load_cell(
    kind: Access, matrix: str, row: int, col: int, ncols: int, ty: int, tx: int, ph: int
) -> Cell:
    """The cell of one load ``matrix[row, col] → {matrix}ds[ty, tx]``."""
    dest = _sub(f"{matrix}ds", ty, tx)
    src = _sub(matrix, row, col)
    if kind == Access.LOADED:
        text = f"{src} {ARROW} {dest}"
    elif kind == Access.ZERO_FILL:
        text = f"0.0 {ARROW} {dest}"
    elif kind == Access.WRONG_ELEMENT:
        real = divmod(row * ncols + col, ncols)
        text = f"{src}={_sub(matrix, *real)} {ARROW} {dest}"
    elif kind == Access.OUT_OF_ALLOCATION:
        text = f"{src} {NO_ARROW} {dest} (out of allocation)"
    else:
        text = "not recorded"
    return Cell(text, kind.name.lower(), (ty, tx), ph)


def _pvalue_terms(ty: int, tx: int, T: int, max_terms: int | None) -> str:
    """``Pvalue_{ty,tx} += Mds_{ty,0}*Nds_{0,tx} + ...`` (Fig. 5.9 line 24 for one phase)."""
    terms = [f"{_sub('Mds', ty, k)}*{_sub('Nds', k, tx)}" for k in range(T)]
    if max_terms is not None and len(terms) > max_terms:
        head = max(1, max_terms - 1)
        terms = [*terms[:head], "...", terms[-1]]
    return f"{_sub('Pvalue', ty, tx)} += " + " + ".join(terms)


def _factor(tag: int, matrix: str, ncols: int, slot: tuple[int, int]) -> str:
    """A factor of a term in the book's notation: the element, ``0.0`` or ``Mds_{r,c}?``."""
    if tag >= 0:
        return _sub(matrix, *divmod(tag, ncols))
    if tag == hz.TAG_ZERO_FILL:
        return "0.0"
    return _sub(f"{matrix}ds", *slot) + "?"


class _LabTerms:
    """The terms one block's threads really computed (from the recorded reads)."""

    def __init__(self, trace: Trace, slot: int):
        _, k, l = trace.shape
        self.T = trace.tile_width
        self.ncols = (k, l)
        self.tags = trace.shared_reads[slot]  # (nph, ty, tx, k, 2)
        self.values = trace.read_values[slot]
        self.book = hz.book_reads(trace)[slot]
        wrong = hz.wrong_read_mask(trace)
        if wrong is None:
            raise ValueError("the trace holds no read records: there are no terms to tell")
        self.wrong = wrong[slot]

    def terms(self, ph: int, ty: int, tx: int) -> tuple[Term, ...]:
        # one thread's reads as Python numbers, converted once (not element by element)
        tags = self.tags[ph, ty, tx].tolist()  # (k, 2)
        book = self.book[ph, ty, tx].tolist()
        wrong = self.wrong[ph, ty, tx].any(axis=-1).tolist()
        products = (
            self.values[ph, ty, tx, :, 0].astype(np.float32)
            * self.values[ph, ty, tx, :, 1].astype(np.float32)
        ).tolist()
        out = []
        for kk in range(self.T):
            slots = ((ty, kk), (kk, tx))
            used = [_factor(tags[kk][a], m, self.ncols[a], slots[a]) for a, m in enumerate("MN")]
            known = [_factor(book[kk][a], m, self.ncols[a], slots[a]) for a, m in enumerate("MN")]
            out.append(Term(kk, "*".join(used), "*".join(known), wrong[kk], products[kk]))
        return tuple(out)

    def cell(self, ph: int, ty: int, tx: int, max_terms: int | None) -> Cell:
        terms = self.terms(ph, ty, tx)
        texts = [("✗ " if t.wrong else "") + t.text for t in terms]
        if max_terms is not None and len(texts) > max_terms:
            # Shortened: the wrong terms stay in sight, the first and last terms too.
            keep = {0, len(texts) - 1} | {t.k for t in terms if t.wrong}
            keep |= set(range(max(1, max_terms - len(keep))))
            shown, last = [], -1
            for i in sorted(keep):
                if i > last + 1:
                    shown.append("...")
                shown.append(texts[i])
                last = i
            texts = shown
        note = "; ".join(
            f"k={t.k}: computed {t.text} where the book's kernel computes {t.book}"
            for t in terms
            if t.wrong
        )
        text = f"{_sub('Pvalue', ty, tx)} += " + " + ".join(texts)
        kind = "wrong_term" if note else "pvalue"
        return Cell(text, kind, (ty, tx), ph, terms=terms, note=note)


def _pwrite_cell(kind: PWrite, row: int, col: int, l: int, ty: int, tx: int) -> Cell:
    pv = _sub("Pvalue", ty, tx)
    dest = _sub("P", row, col)
    if kind == PWrite.WRITTEN:
        text = f"{pv} {ARROW} {dest}"
    elif kind == PWrite.SKIPPED:
        text = f"no store ({dest} does not exist)"
    elif kind == PWrite.WRONG_ELEMENT:
        text = f"{pv} {ARROW} {dest}={_sub('P', *divmod(row * l + col, l))}"
    elif kind == PWrite.OUT_OF_ALLOCATION:
        text = f"{pv} {NO_ARROW} {dest} (out of allocation)"
    else:
        text = "not recorded"
    return Cell(text, kind.name.lower(), (ty, tx))


def _lab_pwrite(cell: Cell, trace: Trace, p_wrong, p_book, row: int, col: int) -> Cell:
    """A barrier-lab P store: the value stored, marked where it differs from the book's."""
    T = trace.tile_width
    stored = float(trace.P[row, col])
    text = f"{cell.text} = {format_value(stored)}"
    if not p_wrong[row, col]:
        return dataclasses.replace(cell, text=text, value=stored)
    book = format_value(float(p_book[row % T, col % T]))
    return dataclasses.replace(
        cell,
        text=f"✗ {text}",
        kind="wrong_value",
        value=stored,
        note=f"stored {format_value(stored)} where the book's kernel stores {book}",
    )


def build_table(
    trace: Trace,
    block: tuple[int, int],
    *,
    phases: Iterable[int] | None = None,
    values: bool = True,
    p_write: bool = True,
    max_terms: int | None = None,
) -> Table:
    """Build the book's Fig. 5.8 table for one recorded block of ``trace``.

    Rows are the block's threads ``(ty, tx)`` in row-major order. For each
    phase ``ph`` the columns are, as in Fig. 5.8:

    * the M load: ``M_{r,c} → Mds_{ty,tx}`` with ``r = Row`` and
      ``c = ph*TILE_WIDTH + tx`` (Fig. 5.9 line 19), or ``0.0 → Mds_{ty,tx}``
      where the boundary check failed (Fig. 5.13 line 21), or
      ``M_{0,3}=M_{1,0} → Mds_{0,1}`` where the unchecked kernel read past
      the end of a row into the next one (Fig. 5.11), or
      ``N_{3,0} ↛ Nds_{1,0} (out of allocation)`` where the index lay past
      the end of the array (recorded, not performed);
    * the N load, likewise (``r = ph*TILE_WIDTH + ty``, ``c = Col``);
    * the Pvalue terms, ``Pvalue_{ty,tx} += Mds_{ty,0}*Nds_{0,tx} + ...``
      (Fig. 5.9 line 24 unrolled over ``k``);
    * with ``values``, the thread's Pvalue after the phase (recorded value).

    With ``p_write`` a last column shows the thread's store into P (or that
    the boundary check skipped it).

    Parameters
    ----------
    trace : Trace
        A recording (see :func:`vizmm.record`).
    block : (by, bx)
        A block recorded per thread (:meth:`Trace.has_block`).
    phases : iterable of int, optional
        The phases to show, in this order; all by default. The naive kernel
        (Fig. 3.11) has none: its table has the thread and P-store columns only.
    values : bool
        Add a column "Pvalue after the phase" to every phase.
    p_write : bool
        Add the final P-store column.
    max_terms : int, optional
        Shorten Pvalue sums of more than ``max_terms`` terms to the first
        ``max_terms - 1`` terms, ``...`` and the last term (for wide tiles).

    Returns
    -------
    Table

    Raises
    ------
    KeyError
        When ``block`` is outside the grid or was not recorded per thread.
    IndexError
        When a phase is out of range.
    ValueError
        When ``max_terms`` is smaller than 2.

    Examples
    --------
    Fig. 5.8 (4 x 4 matrices, TILE_WIDTH 2, block_{0,0}):

    >>> t = vizmm.record(width=4, tile_width=2, kernel="tiled")  # doctest: +SKIP
    >>> print(format_table(build_table(t, (0, 0), values=False, p_write=False)))  # doctest: +SKIP
    """
    if max_terms is not None and max_terms < 2:
        raise ValueError(f"max_terms must be at least 2, got {max_terms}")
    by, bx = (int(v) for v in block)
    slot = trace.slot((by, bx))
    T = trace.tile_width
    j, k, l = trace.shape
    if phases is None:
        phases = range(trace.n_phases)
    phases = tuple(int(p) for p in phases)
    for p in phases:
        if not 0 <= p < trace.n_phases:
            raise IndexError(
                f"phase {p} does not exist: this trace has phases 0..{trace.n_phases - 1}"
                if trace.n_phases
                else f"phase {p} does not exist: the {trace.kernel} kernel has no phases"
            )

    columns = [Column("thread", "", "thread", "thread")]
    for p in phases:
        g = f"Phase {p}"
        columns += [
            Column(f"{g}: M {ARROW} Mds", g, f"M {ARROW} Mds", "m_load", p),
            Column(f"{g}: N {ARROW} Nds", g, f"N {ARROW} Nds", "n_load", p),
            Column(f"{g}: Pvalue", g, "Pvalue", "pvalue", p),
        ]
        if values:
            columns.append(Column(f"{g}: Pvalue after", g, "after", "value", p))
    if p_write:
        columns.append(Column(f"P {ARROW} store", "", "P store", "p_write"))

    loads = trace.loads[slot]
    pvalue = trace.pvalue[slot]
    pw = trace.p_write[slot]
    lab = _LabTerms(trace, slot) if trace.shared_reads.size else None
    p_wrong = hz.wrong_p(trace) if lab is not None else None
    p_book = hz.book_p(trace)[slot] if lab is not None else None
    rows = []
    for ty in range(T):
        for tx in range(T):
            row = [Cell(_sub("thread", ty, tx), "thread", (ty, tx))]
            for p in phases:
                mk, mr, mc, nk, nr, nc = (int(v) for v in loads[p, ty, tx])
                row.append(_load_cell(Access(mk), "M", mr, mc, k, ty, tx, p))
                row.append(_load_cell(Access(nk), "N", nr, nc, l, ty, tx, p))
                if lab is None:
                    row.append(Cell(_pvalue_terms(ty, tx, T, max_terms), "pvalue", (ty, tx), p))
                else:
                    row.append(lab.cell(p, ty, tx, max_terms))
                if values:
                    v = float(pvalue[p, ty, tx])
                    kind, note = ("not_recorded" if math.isnan(v) else "value"), ""
                    if lab is not None and row[-1].note:
                        kind, note = (
                            "wrong_value",
                            f"after terms of a wrong element: {row[-1].note}",
                        )
                    row.append(
                        Cell(
                            ("✗ " if note else "") + format_value(v, missing="not recorded"),
                            kind,
                            (ty, tx),
                            p,
                            None if math.isnan(v) else v,
                            note=note,
                        )
                    )
            if p_write:
                cell = _pwrite_cell(PWrite(int(pw[ty, tx])), by * T + ty, bx * T + tx, l, ty, tx)
                if lab is not None and cell.kind == "written":
                    cell = _lab_pwrite(cell, trace, p_wrong, p_book, by * T + ty, bx * T + tx)
                row.append(cell)
            rows.append(tuple(row))

    title = (
        f"block_{{{by},{bx}}} of the {trace.kernel} kernel ({trace.meta.get('figure', '')}), "
        f"M {j}x{k} . N {k}x{l}, TILE_WIDTH {T}"
    )
    return Table(title, (by, bx), phases, tuple(columns), tuple(rows))


def block_table(trace: Trace, block: tuple[int, int]) -> Table:
    """The Fig. 5.8 table of one block as a replay's frames carry it, built afresh.

    Every phase, the Pvalue after each phase and the P store
    (:func:`build_table` with ``values=True, p_write=True``); Pvalue sums
    shortened to 3 terms for TILE_WIDTH over 2. :func:`frame_table` keeps it.

    Parameters
    ----------
    trace : Trace
        A recording.
    block : (by, bx)
        A block recorded per thread.

    Returns
    -------
    Table

    Raises
    ------
    KeyError
        When ``block`` was not recorded per thread.
    """
    max_terms = None if trace.tile_width <= 2 else 3
    by, bx = (int(v) for v in block)
    return build_table(trace, (by, bx), values=True, p_write=True, max_terms=max_terms)


@per_trace(maxsize=8)
def frame_table(trace: Trace, block: tuple[int, int]) -> Table:
    """The Fig. 5.8 table a replay's frames carry (:attr:`vizmm.replay.Frame.table`).

    :func:`block_table`, built once per block and kept with the trace (its
    last 8 blocks), so every page replaying a block shares one table.

    Parameters
    ----------
    trace : Trace
        A recording.
    block : (by, bx)
        A block recorded per thread.

    Returns
    -------
    Table

    Raises
    ------
    KeyError
        When ``block`` was not recorded per thread.
    """
    return block_table(trace, block)
