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

A kernel of your own (``vizmm.check``, ``vizmm.record(kernel=...)``) may map
threads to P elements and tile slots otherwise than Fig. 5.9 (thread
``(ty, tx)`` computing ``P[by*T + ty][bx*T + tx]`` and filling
``Mds[ty][tx]``): its table is read from the access log (:func:`own_kernel`).
A load names the slot the thread really stored into, a term is compared
with the book's term of the P element the thread really computed (its
terms' Row and Col when they are all of one element, else the element it
stored), and the P store names the element stored and the value, marked
where it differs from ``M @ N`` there.

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
from ..trace import access_log as A
from ..trace.access_log import AccessLog, one_element
from ..trace.derived import per_trace
from ..trace.notation import subscript as _sub  # M_{row,col}, written once
from ..trace.units import format_value
from .own import OwnBlock, own_block

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
    "own_kernel",
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

    def __init__(self, trace: Trace, slot: int, own: _OwnPlaces | None = None):
        _, k, l = trace.shape
        self.T = trace.tile_width
        self.ncols = (k, l)
        # each factor's text, made once per (operand, tag, slot): a block's table names
        # the same elements of M and N again and again (64 x 64: 327,680 factors)
        self._names: tuple[dict, dict] = ({}, {})
        self.tags = trace.shared_reads[slot]  # (nph, ty, tx, k, 2)
        self.values = trace.read_values[slot]
        # a kernel of the user's own: the terms its threads really accumulated, each
        # judged against the P element its accumulator was stored into (own_block)
        self.own = None
        if own is not None:
            try:
                self.own = own_block(trace, own.block).terms
            except ValueError:  # no M, N and P to read the log as: the recorded reads
                self.own = None
        if own is None:
            self.book = hz.book_reads(trace)[slot]
            wrong = hz.wrong_read_mask(trace)
            if wrong is None:
                raise ValueError("the trace holds no read records: there are no terms to tell")
            self.wrong = wrong[slot]
        else:
            # a kernel of the user's own: the book's terms of the element each thread
            # really computed (its stored P element), not of (by*T + ty, bx*T + tx)
            book = own.book(self.tags.shape[0], trace.shape, self.T)
            self.book = book
            self.wrong = (self.tags != hz.TAG_NOT_RECORDED) & (self.tags != book)

    def own_terms(self, ph: int, ty: int, tx: int) -> tuple[tuple[tuple[int, int], Term], ...]:
        """A user kernel's terms of phase ``ph``: ``((Row, Col) of its P element, Term)``."""
        assert self.own is not None
        out = []
        for t in self.own.get((ty, tx), ()):
            if t.phase != ph:
                continue
            used = [_factor(t.tags[a], m, self.ncols[a], t.slots[a]) for a, m in enumerate("MN")]
            known = [_factor(t.book[a], m, self.ncols[a], t.slots[a]) for a, m in enumerate("MN")]
            term = Term(t.k, "*".join(used), "*".join(known), any(t.wrong), t.value)
            out.append((t.element, term))
        return tuple(out)

    def _name(self, a: int, tag: int, slot: tuple[int, int]) -> str:
        """:func:`_factor` of operand ``a`` (0: M, 1: N), remembered."""
        names = self._names[a]
        key = tag if tag >= 0 else (tag, slot)  # an element's name: the same in every slot
        name = names.get(key)
        if name is None:
            name = names[key] = _factor(tag, "MN"[a], self.ncols[a], slot)
        return name

    def terms(self, ph: int, ty: int, tx: int) -> tuple[Term, ...]:
        if self.own is not None:
            return tuple(term for _el, term in self.own_terms(ph, ty, tx))
        # one thread's reads as Python numbers, converted once (not element by element)
        tags = self.tags[ph, ty, tx].tolist()  # (k, 2)
        book = self.book[ph, ty, tx].tolist()
        wrong = self.wrong[ph, ty, tx].any(axis=-1).tolist()
        products = (
            self.values[ph, ty, tx, :, 0].astype(np.float32)
            * self.values[ph, ty, tx, :, 1].astype(np.float32)
        ).tolist()
        out = []
        name = self._name
        for kk in range(self.T):
            (um, un), (bm, bn) = tags[kk], book[kk]
            m_slot, n_slot = (ty, kk), (kk, tx)
            used = f"{name(0, um, m_slot)}*{name(1, un, n_slot)}"
            known = f"{name(0, bm, m_slot)}*{name(1, bn, n_slot)}"
            out.append(Term(kk, used, known, wrong[kk], products[kk]))
        return tuple(out)

    def cell(self, ph: int, ty: int, tx: int, max_terms: int | None) -> Cell:
        if self.own is not None:
            owned = self.own_terms(ph, ty, tx)
            if len({el for el, _t in owned}) > 1:
                return self._coarse_cell(owned, ph, ty, tx, max_terms)
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

    def _coarse_cell(self, owned, ph: int, ty: int, tx: int, max_terms: int | None) -> Cell:
        """A thread accumulating several P elements (thread coarsening): one sum per element.

        ``P_{0,1} += M_{0,0}*N_{0,1} + ...; P_{0,3} += ...``, each term judged
        against the book's terms of the element its accumulator was stored into.
        """
        parts, notes = [], []
        for el in dict.fromkeys(e for e, _t in owned):
            mine = [t for e, t in owned if e == el]
            texts = [("✗ " if t.wrong else "") + t.text for t in mine]
            if max_terms is not None and len(texts) > max_terms:
                texts = [*texts[: max(1, max_terms - 1)], "...", texts[-1]]
            parts.append(f"{_sub('P', *el)} += " + " + ".join(texts))
            notes += [
                f"{_sub('P', *el)}, k={t.k}: computed {t.text} where the book's kernel "
                f"computes {t.book}"
                for t in mine
                if t.wrong
            ]
        note = "; ".join(notes)
        terms = tuple(t for _e, t in owned)
        kind = "wrong_term" if note else "pvalue"
        return Cell("; ".join(parts), kind, (ty, tx), ph, terms=terms, note=note)


def own_kernel(trace: Trace) -> bool:
    """Whether ``trace`` records a kernel of the user's own (``vizmm.record(kernel=...)``).

    Its threads may map to P elements and tile slots otherwise than the
    book's ``Row = by*TILE_WIDTH + ty``, ``Col = bx*TILE_WIDTH + tx``; its
    access log says what they really did.

    Parameters
    ----------
    trace : Trace
        Any recording.

    Returns
    -------
    bool
        True for a kernel recorded through the instrumenter from the user's
        code (meta ``user_kernel``, :attr:`~vizmm.trace.Trace.user_kernel`)
        with its access log kept; False for a book kernel (no such key).
    """
    log = getattr(trace, "log_events", None)
    return (
        trace.user_kernel is not None
        and log is not None
        and bool(log.size)
        and isinstance(trace.meta.get("access_log"), dict)
    )


class _OwnPlaces:
    """Where the threads of one block of a user's kernel really stored (from its access log).

    ``slots[ph, ty, tx, a]``: the ``(r, c)`` of the Mds (a = 0) / Nds (a = 1)
    slot the thread stored in phase ``ph`` (its n-th store into that array), or
    ``(-1, -1)``; ``p[ty, tx]``: the P element it stored first, or ``(-1, -1)``,
    with the value stored in ``p_value``; ``computes[ty, tx]``: the P element
    whose terms it accumulated (all of them and no others: Row and Col read
    from the terms), else the one it stored, else the book's
    ``(by*T + ty, bx*T + tx)``.
    """

    def __init__(self, trace: Trace, slot: int):
        T, nph = trace.tile_width, trace.n_phases
        self.slots = np.full((nph, T, T, 2, 2), -1, np.int64)
        self.p = np.full((T, T, 2), -1, np.int64)
        self.p_value = np.full((T, T), np.nan, np.float64)
        by, bx = (int(v) for v in trace.detail_blocks[slot])
        self.block = (by, bx)
        self._trace = trace
        self._own: OwnBlock | None = None
        self._own_read = False
        self.computes = np.stack(
            np.meshgrid(by * T + np.arange(T), bx * T + np.arange(T), indexing="ij"), axis=-1
        )
        log = AccessLog.from_trace(trace)
        if log is None:
            return
        try:
            m_id, n_id, _p = log.matmul()
        except ValueError:  # no M, N and P to read the log as
            return
        log = log.block(slot, T * T)
        for a, source in ((0, m_id), (1, n_id)):
            self._tile_stores(log, a, source, nph)
        self._p_stores(log, trace.shape[2])
        if trace.shared_reads.size:
            self._computed(trace.shared_reads[slot], trace.shape)

    def _tile_stores(self, log: AccessLog, a: int, source: int, nph: int) -> None:
        """``slots[..., a]``: the slot of the tile copying ``source`` each thread stored per phase.

        The tile is the shared array with the most performed stores copying
        ``source``; a thread's phase there is its n-th store into it.
        """
        T = log.tile_width
        tile = log.tile_for(source, performed=True)
        if tile is None:
            return
        ev = log.events[0]
        mine = log.stores(performed=True)[0] & (ev[..., A.ARR] == tile)
        ph = np.cumsum(mine, axis=1) - 1
        ts, es = np.nonzero(mine & (ph < nph))  # each store's thread and event
        r, c, idx = (ev[ts, es, f].astype(np.int64) for f in (A.ROW, A.COL, A.IDX))
        flat = (r == A.NO_INDEX) | (c == A.NO_INDEX)
        r = np.where(flat, idx // T, r)
        c = np.where(flat, idx % T, c)
        self.slots[ph[ts, es], ts // T, ts % T, a] = np.stack([r, c], axis=-1)

    def _p_stores(self, log: AccessLog, l: int) -> None:
        """``p``, ``p_value`` and ``computes``: each thread's first performed store into P."""
        T = log.tile_width
        ps = log.p_stores()[0]
        for t in range(ps.shape[0]):
            hits = np.flatnonzero(ps[t])
            if not len(hits):
                continue
            r, c = log.element(log.events[0, t, hits[0]], l)
            self.p[t // T, t % T] = (r, c)
            self.p_value[t // T, t % T] = float(log.values[0, t, hits[0], 0])
            self.computes[t // T, t % T] = (r, c)

    def _computed(self, reads: np.ndarray, shape: tuple[int, int, int]) -> None:
        """``computes``: the element whose every term a thread's k-loop reads are, if one."""
        _j, k, l = shape
        for ty in range(reads.shape[1]):
            for tx in range(reads.shape[2]):
                tags = reads[:, ty, tx].reshape(-1, 2)  # (nph * T, 2): M and N tags
                real = tags[(tags[:, 0] >= 0) & (tags[:, 1] >= 0)]
                whole = one_element([(int(m), int(n)) for m, n in real], k, l)
                if whole is not None:
                    self.computes[ty, tx] = whole

    def _block(self):
        """:func:`own_block` of this block, worked out once (None: not a matmul's log)."""
        if not self._own_read:
            self._own_read = True
            try:
                self._own = own_block(self._trace, self.block)
            except ValueError:  # no M, N and P to read the log as
                self._own = None
        return self._own

    def elements(self, ty: int, tx: int) -> tuple:
        """The P elements whose terms thread (ty, tx) accumulated, one per accumulator."""
        got = self._block()
        return () if got is None else got.elements.get((ty, tx), ())

    def logged(self, ty: int, tx: int) -> tuple[int, int] | None:
        """The P element of the accumulator the access log carries (None: not known)."""
        got = self._block()
        return None if got is None else got.logged.get((ty, tx))

    def book(self, nph: int, shape: tuple[int, int, int], T: int) -> np.ndarray:
        """The book's terms of the elements the threads compute: tags ``(nph, T, T, T, 2)``.

        At ``(ph, ty, tx, kk)``: ``M_{Row,q}`` and ``N_{q,Col}`` of the thread's
        ``(Row, Col)`` (:attr:`computes`) with ``q = ph*T + kk``, as linear
        indices; a zero-fill (-1) past the matrices (Fig. 5.13's boundary check).
        """
        j, k, l = shape
        q = (np.arange(nph)[:, None] * T + np.arange(T)[None, :])[:, None, None, :]
        r = self.computes[..., 0][None, :, :, None]
        c = self.computes[..., 1][None, :, :, None]
        m = np.where((r < j) & (q < k), r * k + q, hz.TAG_ZERO_FILL)
        n = np.where((q < k) & (c < l), q * l + c, hz.TAG_ZERO_FILL)
        return np.stack(np.broadcast_arrays(m, n), axis=-1).astype(np.int64)


def _coarse_after(own: _OwnPlaces, v: float, ty: int, tx: int, p: int) -> Cell:
    """The "Pvalue after" cell of a thread with several accumulators (a coarsened kernel).

    The access log carries one accumulator's value (the variable the
    kernel's last ``P[...] = name`` stores); the cell shows it under that
    accumulator's P element only and says that the others were not logged,
    or, where that element is not known, that the log cannot tell.
    """
    els = own.elements(ty, tx)
    logged = own.logged(ty, tx)
    if math.isnan(v) or logged is None or logged not in els:
        names = ", ".join(_sub("P", *e) for e in els)
        return Cell(
            f"not logged ({len(els)} sums: {names})",
            "not_recorded",
            (ty, tx),
            p,
            note="the access log carries one accumulator of this thread, and which one "
            "is not known here",
        )
    others = ", ".join(_sub("P", *e) for e in els if e != logged)
    return Cell(
        f"{_sub('P', *logged)}: {format_value(v)}; {others}: not logged",
        "value",
        (ty, tx),
        p,
        v,
        note=f"the access log carries the sum of {_sub('P', *logged)} only",
    )


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


def _own_pwrite(trace: Trace, own: _OwnPlaces, kind: PWrite, ty: int, tx: int) -> Cell:
    """A user kernel's P store: the element the thread really stored and the value.

    Marked (kind ``wrong_value``) where the value differs from ``M @ N`` at
    that element (exact on vizmm.check's small integers; relative 1e-6 as
    vizmm.analysis.check).
    """
    j, _, l = trace.shape
    r, c = (int(v) for v in own.p[ty, tx])
    if r < 0:
        rr, cc = (int(v) for v in own.computes[ty, tx])
        if kind == PWrite.SKIPPED and rr < j and cc < l:
            return Cell("no store", "skipped", (ty, tx))
        return _pwrite_cell(kind, rr, cc, l, ty, tx)
    cell = _pwrite_cell(kind, r, c, l, ty, tx)
    v = float(own.p_value[ty, tx])
    text = f"{cell.text} = {format_value(v)}"
    if not (0 <= r < j and 0 <= c < l):
        return dataclasses.replace(cell, text=text, value=v)
    want = float(np.asarray(trace.M, np.float64)[r] @ np.asarray(trace.N, np.float64)[:, c])
    if math.isclose(v, want, rel_tol=1e-6, abs_tol=0.0):
        return dataclasses.replace(cell, text=text, value=v)
    return dataclasses.replace(
        cell,
        text=f"✗ {text}",
        kind="wrong_value",
        value=v,
        note=f"stored {format_value(v)} into {_sub('P', r, c)}, where M·N gives "
        f"{format_value(want)}",
    )


def _more_stores(trace: Trace, own: _OwnPlaces, cell: Cell, ty: int, tx: int) -> Cell:
    """A coarsened thread's later P stores after its first: ``; → P_{0,3} = 74``.

    Each marked (``✗``, kind ``wrong_value``) where the value differs from
    ``M @ N`` at that element, as :func:`_own_pwrite` marks the first.
    """
    got = own._block()
    if got is None:
        return cell
    stores = got.stores.get((ty, tx), ())
    if len(stores) < 2:
        return cell
    ref = np.asarray(trace.M, np.float64) @ np.asarray(trace.N, np.float64)
    texts, notes, wrong = [cell.text], [cell.note] if cell.note else [], cell.wrong
    for r, c, v in stores[1:]:
        text = f"{ARROW} {_sub('P', r, c)} = {format_value(v)}"
        if not math.isclose(v, float(ref[r, c]), rel_tol=1e-6, abs_tol=0.0):
            wrong = True
            text = f"✗ {text}"
            notes.append(
                f"stored {format_value(v)} into {_sub('P', r, c)}, where M·N gives "
                f"{format_value(float(ref[r, c]))}"
            )
        texts.append(text)
    kind = "wrong_value" if wrong else cell.kind
    return dataclasses.replace(cell, text="; ".join(texts), kind=kind, note="; ".join(notes))


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
    phases = _phases(trace, phases)
    own = _OwnPlaces(trace, slot) if own_kernel(trace) else None
    lab = _LabTerms(trace, slot, own) if trace.shared_reads.size else None
    book_lab = lab is not None and own is None
    shown = _Shown(
        trace, slot, (by, bx), phases, values, max_terms, own, lab,
        hz.wrong_p(trace) if book_lab else None,
        hz.book_p(trace)[slot] if book_lab else None,
    )  # fmt: skip
    rows = []
    for ty in range(T):
        for tx in range(T):
            row = [Cell(_sub("thread", ty, tx), "thread", (ty, tx))]
            for p in phases:
                row += _phase_cells(shown, p, ty, tx)
            if p_write:
                row.append(_p_store_cell(shown, ty, tx))
            rows.append(tuple(row))
    title = (
        f"block_{{{by},{bx}}} of the {trace.kernel} kernel ({trace.meta.get('figure', '')}), "
        f"M {j}x{k} . N {k}x{l}, TILE_WIDTH {T}"
    )
    return Table(title, (by, bx), phases, _columns(phases, values, p_write), tuple(rows))


def _phases(trace: Trace, phases: Iterable[int] | None) -> tuple[int, ...]:
    """The phases a table shows, checked (all by default)."""
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
    return phases


def _columns(phases: tuple[int, ...], values: bool, p_write: bool) -> tuple[Column, ...]:
    """Fig. 5.8's columns: the thread, per phase the loads, Pvalue (and after), the P store."""
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
    return tuple(columns)


@dataclasses.dataclass(frozen=True)
class _Shown:
    """What the cells of one block's table are made from (:func:`build_table`)."""

    trace: Trace
    slot: int
    block: tuple[int, int]
    phases: tuple[int, ...]
    values: bool
    max_terms: int | None
    own: _OwnPlaces | None
    lab: _LabTerms | None
    p_wrong: np.ndarray | None
    p_book: np.ndarray | None


def _phase_cells(shown: _Shown, p: int, ty: int, tx: int) -> list[Cell]:
    """Thread (ty, tx)'s cells of phase ``p``: the M and N loads, Pvalue, Pvalue after."""
    trace, own, lab = shown.trace, shown.own, shown.lab
    _j, k, l = trace.shape
    mk, mr, mc, nk, nr, nc = (int(v) for v in trace.loads[shown.slot][p, ty, tx])
    m_slot = n_slot = (ty, tx)  # the book's: thread (ty, tx) fills slot (ty, tx)
    if own is not None:
        got = own.slots[p, ty, tx].tolist()
        m_slot = tuple(got[0]) if got[0][0] >= 0 else m_slot
        n_slot = tuple(got[1]) if got[1][0] >= 0 else n_slot
    cells = [
        dataclasses.replace(_load_cell(Access(mk), "M", mr, mc, k, *m_slot, p), thread=(ty, tx)),
        dataclasses.replace(_load_cell(Access(nk), "N", nr, nc, l, *n_slot, p), thread=(ty, tx)),
    ]
    if lab is None:
        T = trace.tile_width
        cells.append(Cell(_pvalue_terms(ty, tx, T, shown.max_terms), "pvalue", (ty, tx), p))
    else:
        cells.append(lab.cell(p, ty, tx, shown.max_terms))
    v = float(trace.pvalue[shown.slot][p, ty, tx])
    if shown.values and own is not None and len(own.elements(ty, tx)) > 1:
        cells.append(_coarse_after(own, v, ty, tx, p))
    elif shown.values:
        kind, note = ("not_recorded" if math.isnan(v) else "value"), ""
        if lab is not None and cells[-1].note:
            kind, note = "wrong_value", f"after terms of a wrong element: {cells[-1].note}"
        text = ("✗ " if note else "") + format_value(v, missing="not recorded")
        cells.append(Cell(text, kind, (ty, tx), p, None if math.isnan(v) else v, note=note))
    return cells


def _p_store_cell(shown: _Shown, ty: int, tx: int) -> Cell:
    """Thread (ty, tx)'s store into P: where it stored (a user's kernel: really) and the value."""
    trace, own = shown.trace, shown.own
    kind = PWrite(int(trace.p_write[shown.slot][ty, tx]))
    if own is not None:
        return _more_stores(trace, own, _own_pwrite(trace, own, kind, ty, tx), ty, tx)
    T, l = trace.tile_width, trace.shape[2]
    row, col = shown.block[0] * T + ty, shown.block[1] * T + tx
    cell = _pwrite_cell(kind, row, col, l, ty, tx)
    if shown.lab is not None and cell.kind == "written":
        cell = _lab_pwrite(cell, trace, shown.p_wrong, shown.p_book, row, col)
    return cell


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
        Fresh: two calls give two equal tables.

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
        A recording; the tables kept go when it goes.
    block : (by, bx)
        A block recorded per thread (else ``KeyError``, as :func:`block_table`).

    Returns
    -------
    Table
        The one object every call for this block gets while it is kept.
    """
    return block_table(trace, block)
