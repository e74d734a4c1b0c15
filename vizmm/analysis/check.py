"""What went wrong in a tiled kernel, in the book's terms, from the instrumenter's access log.

PMPP 4th ed., Section 5.4 (Fig. 5.9) and Section 5.5 (Fig. 5.13): a thread
computes ``P[Row][Col]`` as the sum over ``k`` of ``M[Row][k] * N[k][Col]``,
phase ``ph`` after phase, reading its factors from the tiles ``Mds`` and
``Nds`` that the block copied from global memory. The instrumenter
(``vizmm.record.instrument``) logs every load and store of each thread with
the *tag* of each shared slot: the global element last copied into it. So
every product a thread accumulated is traced, through the shared slot it
was read from, back to the M and N elements it came from, and so to the
thread that stored them.

:func:`findings` reads a trace's access log (NumPy and the standard library
only) and lists, ordered by when they happened (the first is the one to
fix):

``wrong term`` (error)
    A product whose factors are not ``M[Row][k]`` and ``N[k][Col]`` of the
    P element the thread stores, a term never accumulated, or one counted
    twice. Terms are paired in the order the thread read them: the i-th
    factor read from M (or from a slot holding an M element) with the i-th
    read from N. A product with a zero-filled factor (the boundary check's
    ``else``) adds nothing and is not a term.
``wrong P`` (error)
    A P element different from ``M @ N`` (exact on the seeded integer
    inputs), with the thread that stored it, or a P element never stored.
``race`` (error)
    Two accesses of one shared address by different threads of a block, at
    least one a store, in the same barrier epoch (no ``cuda.syncthreads()``
    between them): a property of the program, the same for every schedule,
    as compute-sanitizer racecheck's potential hazards. One finding per
    block, address and epoch, labelled by the order this run took:
    ``read-after-write`` when the read found what the store wrote,
    ``write-after-read`` when it found an older element,
    ``write-after-write`` for two stores.
``out of bounds`` (error)
    A global or shared access outside its array (logged and not performed),
    or a global access whose (row, col) lies outside its matrix though its
    flat index lies inside (Fig. 5.11's row wrap: another element is read).
``uncoalesced`` (warning)
    A warp's global request touching more 32-byte sectors than the same
    number of elements would if each row of threads (one ``ty``) read
    consecutive elements.
``bank conflict`` (warning)
    A warp's shared request needing more than one pass
    (:func:`vizmm.analysis.transactions.bank_wavefronts`).
``more global reads than tiling needs`` (information)
    An element of M (N) read more often than the ``ceil(l / TILE_WIDTH)``
    (``ceil(j / TILE_WIDTH)``) times tiling needs: ``Width / TILE_WIDTH``,
    the book's reduction of global traffic by TILE_WIDTH.

A finding's ``phase`` is the book's ``ph``: how many tiles of M the thread
had stored into Mds (None where the kernel has no Mds, or for a warning of
a whole launch); ``k`` the turn of the k loop inside that phase.
"""

from __future__ import annotations

import dataclasses
import html
from collections import defaultdict
from collections.abc import Mapping

import numpy as np

from ..trace import Trace
from ..trace import access_log as A  # the log, its codes and views: every reader's
from ..trace.access_log import AccessLog, one_element
from .finding_kinds import ERROR, INFO, WARNING, finding_kind, kind_names
from .finding_kinds import rank as kind_rank
from .transactions import bank_wavefronts

__all__ = [
    "ERROR",
    "INFO",
    "WARNING",
    "CheckReport",
    "Finding",
    "counted",
    "findings",
]


def counted(n: int, one: str, several: str | None = None) -> str:
    """``n`` and the noun in its number: ``counted(1, "error")`` is ``"1 error"``.

    Parameters
    ----------
    n : int
        How many.
    one : str
        The noun for one (a kind's name takes the kind's own nouns,
        :class:`vizmm.analysis.finding_kinds.FindingKind`).
    several : str, optional
        The noun for zero or more than one; ``one + "s"`` by default.

    Returns
    -------
    str
        ``"1 wrong term"``, ``"61 wrong terms"``, ``"0 errors"``.
    """
    if several is None and one in kind_names():
        return finding_kind(one).counted(n)
    return f"{n:,} {one if n == 1 else several or one + 's'}"


SECTOR_BYTES, ELEMENT_BYTES, WARP = 32, 4, 32


@dataclasses.dataclass(frozen=True)
class Finding:
    """One thing the kernel did wrong (or wastefully), in the book's terms.

    Attributes
    ----------
    kind : str
        A registered kind's name (:func:`vizmm.analysis.finding_kinds.kind_names`).
    block : tuple of int or None
        ``(by, bx)`` of the block where it happened.
    thread : tuple of int or None
        ``(ty, tx)``: the thread that computed the wrong term, stored the
        wrong P element, made the out-of-bounds access, or stored into the
        raced slot.
    phase : int or None
        The book's phase ``ph`` (the thread's tile loads so far, from 0).
    k : int or None
        The turn of the k loop inside the phase (``wrong term``).
    message : str
        One sentence in the book's terms.
    expected, got : object
        ``wrong term``: ``((r, c) of M, (r, c) of N)`` needed and multiplied
        (None for a missing or doubled term's other side); ``wrong P``: the
        values of ``M @ N`` and of P (None: never stored); ``more global
        reads``: the reads per element tiling needs and the most made.
    severity : {'error', 'warning', 'information'}
    other : tuple of int or None
        The other thread ``(ty, tx)``: of a race, or the thread that stored
        the slot a wrong factor was read from.
    address : str or None
        The shared element (``"Nds[0][1]"``) of a race or a wrong factor.
    label : str or None
        A race's ``read-after-write`` / ``write-after-read`` /
        ``write-after-write``.
    lines : tuple of int
        The kernel source's lines involved (1-based, ``trace.meta['source']``).
    epoch : int or None
        ``cuda.syncthreads()`` the thread had passed.
    marks : mapping
        What to mark in the replay: ``{'M': ((r, c), ...), 'N': ..., 'P': ...,
        'Mds': ((r, c), ...), 'Nds': ..., 'threads': ((ty, tx), ...)}``.
    when : tuple
        The order key (block in grid order, epoch, event, kind, ty, tx).
    """

    kind: str
    block: tuple | None
    thread: tuple | None
    phase: int | None
    k: int | None
    message: str
    expected: object = None
    got: object = None
    severity: str = ERROR
    other: tuple | None = None
    address: str | None = None
    label: str | None = None
    lines: tuple = ()
    epoch: int | None = None
    marks: Mapping = dataclasses.field(default_factory=dict)
    when: tuple = ()

    def __str__(self) -> str:
        return f"{self.kind}: {self.message}"


@dataclasses.dataclass(frozen=True)
class CheckReport:
    """What :func:`vizmm.check` found.

    A notebook shows it as a table (:meth:`_repr_html_`);
    ``vizmm_apps.notebook.CheckView(report)`` shows the table above the
    replay at the first finding, marked (vizmm imports no page itself:
    the layers of ``tests/test_layers.py``).

    Attributes
    ----------
    ok : bool
        True when no finding is an error (warnings and information allowed).
    trace : Trace
        The recording checked (its access log included).
    findings : list of Finding
        Ordered by when they happened; the first is the one to fix.
    """

    ok: bool
    trace: Trace
    findings: list

    @property
    def errors(self) -> list:
        """The findings that are errors."""
        return [f for f in self.findings if f.severity == ERROR]

    def counts(self) -> dict:
        """Findings per kind, in the registry's order (kinds found only).

        The order is :func:`vizmm.analysis.finding_kinds.kind_names`'.
        """
        out: dict = {}
        for kind in kind_names():
            n = sum(f.kind == kind for f in self.findings)
            if n:
                out[kind] = n
        return out

    def summary(self, first: int = 3) -> str:
        """The first findings in full and counts of the rest (text, several lines).

        Parameters
        ----------
        first : int
            How many findings to give in full.

        Returns
        -------
        str
        """
        meta = self.trace.meta
        head = (
            f"{meta.get('figure', meta.get('kernel'))}: M {meta['j']}x{meta['k']}, "
            f"N {meta['k']}x{meta['l']}, TILE_WIDTH {meta['tile_width']}"
        )
        if not self.findings:
            return f"{head}: no findings (every term, P element and shared access as the book's)"
        lines = [
            f"{head}: {counted(len(self.findings), 'finding')}, "
            f"{counted(len(self.errors), 'error')}"
        ]
        for i, f in enumerate(self.findings[:first], 1):
            lines.append(f"{i}. [{f.severity}] {f.kind}: {f.message}")
        rest = self.findings[first:]
        if rest:
            left: dict = defaultdict(int)
            for f in rest:
                left[f.kind] += 1
            lines.append(
                f"and {len(rest):,} more: "
                + ", ".join(counted(n, kind) for kind, n in left.items() if n)
                + "."
            )
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.summary()

    def _repr_html_(self) -> str:
        """The report as an HTML table (a notebook shows it)."""
        s = html.escape(self.summary(first=0).splitlines()[0])
        rows = "".join(
            "<tr>"
            + "".join(
                f"<td>{html.escape(str(v))}</td>"
                for v in (
                    i,
                    f.kind,
                    f.severity,
                    "" if f.block is None else f"({f.block[0]}, {f.block[1]})",
                    "" if f.thread is None else f"({f.thread[0]}, {f.thread[1]})",
                    "" if f.phase is None else f.phase,
                    "" if f.k is None else f.k,
                    f.message,
                )
            )
            + "</tr>"
            for i, f in enumerate(self.findings, 1)
        )
        head = "".join(
            f"<th>{h}</th>"
            for h in ("#", "kind", "severity", "block", "thread", "phase", "k", "what")
        )
        table = f"<table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>"
        return f"<div class='vizmm-check'><p>{s}</p>{table if self.findings else ''}</div>"


# ------------------------------------------------------------------ helpers
def _el(name: str, flat: int, ncols: int) -> str:
    r, c = divmod(int(flat), ncols)
    return f"{name}_{{{r},{c}}}"


def _rc(flat: int, ncols: int) -> tuple:
    return tuple(int(x) for x in divmod(int(flat), ncols))


class _Log:
    """The trace's access log (:class:`AccessLog`) and what check's words need of it.

    The views are the log's (``performed=False``: a phase starts at every
    store into Mds, performed or not); this adds the sizes, the source's
    lines and the kernel's names of slots and elements.
    """

    def __init__(self, trace):
        log = AccessLog.from_trace(trace)
        if log is None:
            raise ValueError(A.NO_LOG)
        meta = trace.meta
        self.A = log
        self.trace = trace
        self.arrays, self.space = list(log.names), list(log.spaces)
        self.M, self.N, self.P = log.matmul()
        self.j, self.k, self.l = log.shape
        self.T = log.tile_width
        self.dims = {self.M: (self.j, self.k), self.N: (self.k, self.l), self.P: (self.j, self.l)}
        self.ev, self.vals, self.cnt = log.events, log.values, log.counts
        self.blocks = list(log.blocks)
        self.gx = -(-self.l // self.T)
        self.source = str(meta.get("source", "")).splitlines()
        # the log counts lines within the kernel's source; a message names the file's line
        self.first_line = int(meta.get("source_first_line", 1))
        self.role = log.tiles(performed=False)
        self.mds = log.mds(performed=False)
        self.phase = log.phases(performed=False)

    def thread(self, t: int) -> tuple:
        return self.A.ty_tx(t)

    def rank(self, s: int) -> int:
        by, bx = self.blocks[s]
        return by * self.gx + bx

    def at(self, ln: int) -> int:
        """Line ``ln`` of the kernel's source as its file numbers it."""
        return int(ln) + self.first_line - 1

    def line(self, ln: int) -> str:
        ln = int(ln)
        return self.source[ln - 1].strip() if 0 < ln <= len(self.source) else ""

    def address(self, e) -> str:
        name = self.arrays[int(e[A.ARR])]
        r, c = int(e[A.ROW]), int(e[A.COL])
        if r != A.NO_INDEX and c != A.NO_INDEX and r >= 0 and c >= 0:
            return f"{name}[{r}][{c}]"
        return f"{name}[{int(e[A.IDX])}]"

    def slot_rc(self, e) -> tuple:
        return self.A.element(e, self.T)

    def tile(self, a: int) -> str:
        """The views' name of shared array ``a``: Mds, Nds, or the kernel's own."""
        role = self.role.get(a)
        return "Mds" if role == self.M else "Nds" if role == self.N else self.arrays[a]

    def tag_words(self, tag: int) -> str:
        if tag == A.TAG_ZERO:
            return "0 (a zero-fill)"
        if tag == A.TAG_NEVER:
            return "nothing yet (no thread of the block had stored it)"
        if tag == A.TAG_COMPUTED:
            return "a computed value"
        arr, idx = tag % A.TAG_ARRAYS, tag // A.TAG_ARRAYS
        if arr in self.dims:
            name = "M" if arr == self.M else "N" if arr == self.N else self.arrays[arr]
            return _el(name, idx, self.dims[arr][1])
        return f"element {idx} of {self.arrays[arr]}"


def findings(trace) -> list:
    """Every finding of a trace recorded through the instrumenter, ordered by when it happened.

    Parameters
    ----------
    trace : Trace
        A recording with an access log (``vizmm.record(kernel=..., reads=True)``
        or :func:`vizmm.check`): every detail block recorded, shared loads
        logged.

    Returns
    -------
    list of Finding
        Ordered by block (grid order), barrier epoch, the thread's event,
        kind and thread; see the module docstring for the kinds.

    Raises
    ------
    ValueError
        When the trace has no access log or the kernel has fewer than three
        global arrays (M, N, P).
    """
    L = _Log(trace)
    out: list = []
    out += _races(L)
    out += _out_of_bounds(L)
    out += _terms_and_p(L)
    out += _transactions(L)
    out += _reads(L)
    return sorted(out, key=lambda f: f.when)


# ------------------------------------------------------------------- races
def _races(L: _Log) -> list:
    """One finding per block, shared element and epoch two threads access, one storing.

    The accesses of each element per barrier epoch: :meth:`AccessLog.shared_accesses`.
    """
    out = []
    for s in range(L.ev.shape[0]):
        for key, acc in L.A.shared_accesses(s).items():
            found = _race(L, s, key, [(n, t, int(L.ev[s, t, n, A.OP])) for t, n in acc])
            if found is not None:
                out.append(found)
    return out


def _race(L: _Log, s: int, key: tuple, acc: list) -> Finding | None:
    """The race on one element in one epoch (``acc``: its (n, thread, op), thread-major)."""
    a, _idx, epoch = key
    stores = [x for x in acc if x[2] == A.STORE]
    if not stores or len({x[1] for x in acc}) < 2:
        return None
    # the first store (thread order) racing with another thread's access, a load first
    st = stores[0]
    others = sorted((x for x in acc if x[1] != st[1]), key=lambda x: (x[0], x[1]))
    o = next((x for x in others if x[2] == A.LOAD), others[0])
    est, eot = L.ev[s, st[1], st[0]], L.ev[s, o[1], o[0]]
    tst, tot = L.thread(st[1]), L.thread(o[1])
    lst, lot = int(est[A.LINE]), int(eot[A.LINE])
    if o[2] == A.LOAD:
        seen = int(eot[A.TAG]) == int(est[A.TAG])
        label = "read-after-write" if seen else "write-after-read"
        what = (
            f"thread ({tot[0]},{tot[1]}) read it (line {L.at(lot)}) and found "
            f"{L.tag_words(int(eot[A.TAG]))}"
        )
    else:
        label = "write-after-write"
        what = f"thread ({tot[0]},{tot[1]}) stored it too (line {L.at(lot)})"
    addr = L.address(est)
    by, bx = L.blocks[s]
    ph = max(int(L.phase[s, st[1], st[0]]), 0)
    msg = (
        f"{label} race on {addr} in block ({by},{bx}), phase {ph}: thread "
        f"({tst[0]},{tst[1]}) stored {L.tag_words(int(est[A.TAG]))} (line {L.at(lst)}: "
        f"{L.line(lst)}) and {what} with no cuda.syncthreads() between them"
    )
    return Finding(
        "race",
        (by, bx),
        tst,
        ph if L.mds is not None else None,
        None,
        msg,
        severity=finding_kind("race").severity,
        other=tot,
        address=addr,
        label=label,
        lines=tuple(sorted({lst, lot})),
        epoch=epoch,
        marks={L.tile(a): (L.slot_rc(est),), "threads": (tst, tot)},
        when=(L.rank(s), epoch, min(st[0], o[0]), kind_rank("race"), *tst),
    )


# ---------------------------------------------------------- out of bounds
def _out_of_bounds_threads(L: _Log) -> list:
    """The (slot, thread) pairs with an access outside its array, in slot then thread order.

    NumPy over the whole log first, so that only those threads are walked event by
    event (a correct kernel has none: a 64 x 64 check took 2 s walking them all).
    """
    ev = L.ev
    if ev.size == 0:
        return []
    op, a, flag = ev[..., A.OP], ev[..., A.ARR], ev[..., A.FLAG]
    r, c = ev[..., A.ROW], ev[..., A.COL]
    access = L.A.valid & ((op == A.LOAD) | (op == A.STORE)) & (a >= 0)
    found = access & (flag == A.OUT_OF_BOUNDS)
    have_rc = (r != A.NO_INDEX) & (c != A.NO_INDEX)
    for arr, (nr, nc) in L.dims.items():
        inside = (r >= 0) & (r < nr) & (c >= 0) & (c < nc)
        found |= access & (a == arr) & (flag == A.OK) & have_rc & ~inside
    return [tuple(int(x) for x in st) for st in np.argwhere(found.any(axis=2))]


def _out_of_bounds(L: _Log) -> list:
    out = []
    for s, t in _out_of_bounds_threads(L):
        E = L.A.thread(s, t)
        for n, e in enumerate(E):
            msg = _outside_words(L, e)
            if msg is None:
                continue
            op, a = int(e[A.OP]), int(e[A.ARR])
            # a tile load's global half belongs to the phase of the store it feeds
            ph = int(L.phase[s, t, n])
            feeds = n + 1 < len(E) and int(E[n + 1][A.OP]) == A.STORE and op == A.LOAD
            here = ph + 1 if feeds and int(E[n + 1][A.ARR]) == L.mds else ph
            r, c, idx = int(e[A.ROW]), int(e[A.COL]), int(e[A.IDX])
            have_rc = r != A.NO_INDEX and c != A.NO_INDEX
            marks: dict = {"threads": (L.thread(t),)}
            if int(e[A.FLAG]) == A.OK:
                marks[L.arrays[a]] = (_rc(idx, L.dims[a][1]),)
            by, bx = L.blocks[s]
            th = L.thread(t)
            out.append(
                Finding(
                    "out of bounds",
                    (by, bx),
                    th,
                    max(here, 0) if L.mds is not None else None,
                    None,
                    f"block ({by},{bx}), thread ({th[0]},{th[1]}): {msg}",
                    got=(r, c) if have_rc else idx,
                    lines=(int(e[A.LINE]),),
                    epoch=int(e[A.EPOCH]),
                    marks=marks,
                    when=(L.rank(s), int(e[A.EPOCH]), n, kind_rank("out of bounds"), *th),
                )
            )
    return out


def _outside_words(L: _Log, e) -> str | None:
    """What an access outside its array did (None: the access lies inside)."""
    op, a, flag = int(e[A.OP]), int(e[A.ARR]), int(e[A.FLAG])
    if op not in (A.LOAD, A.STORE) or a < 0:
        return None
    r, c, idx = int(e[A.ROW]), int(e[A.COL]), int(e[A.IDX])
    name, verb, ln = L.arrays[a], "load" if op == A.LOAD else "store", int(e[A.LINE])
    have_rc = r != A.NO_INDEX and c != A.NO_INDEX
    at = f"(row, col) = ({r}, {c}), flat index {idx}" if have_rc else f"index {idx}"
    if flag == A.OUT_OF_BOUNDS:
        size = ""
        if a in L.dims:
            nr, nc = L.dims[a]
            size = f" ({nr} x {nc} = {nr * nc} elements)"
        return (
            f"{verb} of {name} at {at} is outside {name}{size} (line {L.at(ln)}: "
            f"{L.line(ln)}); it was not performed" + (" (the load gave 0)" if op == A.LOAD else "")
        )
    if flag != A.OK or a not in L.dims or not have_rc:
        return None
    nr, nc = L.dims[a]
    if 0 <= r < nr and 0 <= c < nc:
        return None
    return (
        f"{verb} of {name} at {at}: ({r}, {c}) is outside {name}'s {nr} x {nc} "
        f"elements, and the flat index is {_el(name, idx, nc)} (line {L.at(ln)}: "
        f"{L.line(ln)}): the row wraps, as in Fig. 5.11"
    )


# -------------------------------------------------------- terms and P
def _storer(L: _Log, s: int, e) -> tuple | None:
    """``((ty, tx), line)`` of the store that left the tag a shared load found, or None."""
    got = L.A.last_store(s, e)
    if got is None:
        return None
    t, n = got
    return L.thread(t), int(L.ev[s, t, n, A.LINE])


def _terms_and_p(L: _Log) -> list:
    out = []
    provenance = bool(np.isin(L.ev[..., A.OP], (A.TERM, A.MOVE)).any())
    if provenance:  # terms by where each factor came from (the recording's TERM events)
        out += _judge_provenance(L)
    stored_by: dict = {}
    pst = L.A.p_stores()
    for s, t in L.A.threads():
        # the thread's P stores: (P flat, n, value, line, epoch)
        stores = [
            (int(e[A.IDX]), n, float(L.vals[s, t, n, 0]), int(e[A.LINE]), int(e[A.EPOCH]))
            for n in np.flatnonzero(pst[s, t]).tolist()
            for e in (L.ev[s, t, n],)
        ]
        for p, n, v, ln, ep in stores:
            stored_by[p] = (s, t, n, v, ln, ep)
        if stores and not provenance:
            out += _judge_terms(L, s, t, stores)
    ref = np.asarray(L.trace.M, np.float64) @ np.asarray(L.trace.N, np.float64)
    for p in range(L.j * L.l):
        out.append(_p_finding(L, p, stored_by.get(p), ref))
    return [f for f in out if f is not None]


def _p_finding(L: _Log, p: int, store, ref: np.ndarray) -> Finding | None:
    """A P element different from ``M @ N`` (``store``: who stored it) or never stored."""
    j, l, T = L.j, L.l, L.T
    r, c = divmod(p, l)
    want = ref[r, c]
    if store is None:
        by, bx, ty, tx = r // T, c // T, r % T, c % T
        return Finding(
            "wrong P",
            (by, bx),
            (ty, tx),
            None,
            None,
            f"P_{{{r},{c}}} was never stored (the book's thread ({ty},{tx}) of block "
            f"({by},{bx}) stores it); M\u00b7N gives {want:g}",
            expected=float(want),
            got=None,
            marks={"P": ((r, c),), "threads": ((ty, tx),)},
            when=(by * L.gx + bx, 1 << 30, 1 << 30, kind_rank("wrong P"), ty, tx),
        )
    s, t, n, _v, ln, ep = store
    got = np.asarray(L.trace.P, np.float64)[r, c]
    if np.isclose(got, want, rtol=1e-6, atol=0.0):
        return None
    by, bx = L.blocks[s]
    th = L.thread(t)
    msg = (
        f"P_{{{r},{c}}} = {got:g} stored by thread ({th[0]},{th[1]}) of block "
        f"({by},{bx}) (line {L.at(ln)}: {L.line(ln)}); M\u00b7N gives {want:g}"
    )
    hit = np.argwhere(np.isclose(ref, got, rtol=1e-6, atol=0.0))
    mine = (by * T + th[0], bx * T + th[1])
    close = mine[0] < j and mine[1] < l and np.isclose(ref[mine], got, rtol=1e-6, atol=0.0)
    if mine != (r, c) and close:
        msg += (
            f": that is P_{{{mine[0]},{mine[1]}}}, the element thread "
            f"({th[0]},{th[1]}) computes, stored into the wrong place"
        )
    elif len(hit) == 1 and tuple(hit[0]) != (r, c):
        msg += f" ({got:g} is P_{{{hit[0][0]},{hit[0][1]}}} of M\u00b7N)"
    return Finding(
        "wrong P",
        (by, bx),
        th,
        None,
        None,
        msg,
        expected=float(want),
        got=float(got),
        lines=(ln,),
        epoch=ep,
        marks={"P": ((r, c),), "threads": (th,)},
        when=(L.rank(s), ep, n, kind_rank("wrong P"), *th),
    )


def _element(L: _Log, tag: int) -> tuple | None:
    """``(side, flat element)`` of a factor's tag: M or N, or None (computed, never written)."""
    if tag >= 0 and tag % A.TAG_ARRAYS in (L.M, L.N):
        return tag % A.TAG_ARRAYS, tag // A.TAG_ARRAYS
    return None


def _pair_key(L: _Log, ta: int, tb: int) -> tuple:
    """``(M flat, N flat)`` of a TERM's two factor tags (-1 for a side not known)."""
    x, y = _element(L, ta), _element(L, tb)
    pair = {z[0]: z[1] for z in (x, y) if z is not None}
    return (pair.get(L.M, -1), pair.get(L.N, -1))


def _book_terms(elements, k: int, l: int) -> dict:
    """``{(M flat, N flat): count}``: the ``k`` terms of each P element (flat) given."""
    out: dict = defaultdict(int)
    for p in elements:
        r, c = divmod(p, l)
        for q in range(k):
            out[(r * k + q, q * l + c)] += 1
    return out


def _provenance_dest(L: _Log) -> dict:
    """Per destination, the TERM records it received: replay of every thread's TERM and MOVE.

    Keys ``(array, element)`` (global) or ``(slot, array, element)`` (shared);
    records ``(tag M, tag N, slot, thread, n, ph, turn)``.
    """
    dest: dict = defaultdict(list)
    for s, t in L.A.threads():
        local: dict = defaultdict(list)
        turn: dict = defaultdict(int)
        for n in np.flatnonzero(np.isin(L.A.thread(s, t)[:, A.OP], (A.TERM, A.MOVE))).tolist():
            e = L.ev[s, t, n]
            a, idx = int(e[A.ARR]), int(e[A.IDX])
            box = local if a < 0 else dest
            key: tuple = ("local", idx) if a < 0 else (a, idx)
            if a >= 0 and L.space[a] == "shared":
                key = (s, a, idx)
            if int(e[A.OP]) == A.TERM:
                ph = int(L.phase[s, t, n])
                box[key].append((int(e[A.TAG]), int(e[A.SRC_IDX]), s, t, n, ph, turn[(key, ph)]))
                turn[(key, ph)] += 1
            else:
                _move(L, s, e, key, box, local, dest)
    return dest


def _move(L: _Log, s: int, e, key: tuple, box: dict, local: dict, dest: dict) -> None:
    """A MOVE: ``key`` takes (or adds) the terms of its source; -2: no known terms."""
    si, sa = int(e[A.SRC_IDX]), int(e[A.SRC_ARR])
    if si == -2:  # a value of no known terms: the element is not judged by terms
        box.pop(key, None)
        return
    if si < 0:
        src: list = []
    elif sa < 0:
        src = local[("local", si)]
    else:
        src = dest[(s, sa, si) if L.space[sa] == "shared" else (sa, si)]
    box[key] = box[key] + list(src) if int(e[A.FLAG]) == A.MOVE_ADD else list(src)


def _judge_provenance(L: _Log) -> list:
    """Wrong, missing and doubled terms of every P element, by where its factors came from.

    The recording logged each product accumulated as a TERM event with its
    two factors' tags (the global elements their values were copied from,
    through registers, temporaries and shared slots), and each accumulator
    moved into another or into P as a MOVE event. Replaying those per thread
    (and adding atomics' contributions per element) gives the multiset of
    terms each P element received; it is compared with the ``k`` terms
    ``M[r][q] * N[q][c]`` of the book.
    """
    dest = _provenance_dest(L)
    stored: dict = {}
    pst = L.A.p_stores()
    for s, t in L.A.threads():
        for i in np.flatnonzero(pst[s, t]).tolist():
            stored[int(L.ev[s, t, i, A.IDX])] = (s, t, int(i))
    out = []
    for (a, p), recs in sorted(((key, v) for key, v in dest.items() if len(key) == 2)):
        if a == L.P and 0 <= p < L.j * L.l and recs:  # none: its wrong P says so, once
            out += _judge_element(L, p, recs, dest, stored.get(p))
    return out


def _judge_element(L: _Log, p: int, recs: list, dest: dict, store) -> list:
    """The wrong, doubled and missing terms of P element ``p`` (flat) among ``recs``."""
    k, l = L.k, L.l
    r, c = divmod(p, l)
    needed = _book_terms([p], k, l)
    left = dict(needed)
    got = []
    wrong = []
    for rec in recs:
        if rec[0] == A.TAG_ZERO or rec[1] == A.TAG_ZERO:
            continue  # adds nothing: the boundary check's zero-fill
        key = _pair_key(L, rec[0], rec[1])
        got.append(key)
        if left.get(key, 0) > 0:
            left[key] -= 1
            continue
        wrong.append((rec, key, key in needed))
    other = one_element(got, k, l) if wrong else None
    if other is not None and other != (r, c):
        # the terms of one other element, moved here (not copied): wrong P says so
        own = dest.get((L.P, other[0] * l + other[1]), [])
        if not set(got) <= {_pair_key(L, x[0], x[1]) for x in own}:
            return []
    out = [_provenance_finding(L, rec, key, doubled, (r, c), left) for rec, key, doubled in wrong]
    for (mi, ni), v in sorted(left.items(), key=lambda x: x[0][0] % k):
        out += [_missing_term(L, (r, c), mi, ni, store) for _ in range(v)]
    return out


def _want(left: dict, rc: tuple, q: int, k: int, l: int) -> tuple | None:
    """The book's term ``q`` of P_{rc} if still needed, else the first term still needed."""
    want = (rc[0] * k + q, q * l + rc[1]) if 0 <= q < k else None
    if want is None or left.get(want, 0) <= 0:
        want = next((x for x, v in left.items() if v > 0), None)
    return want


def _wrong_term(L: _Log, s: int, t: int, at: tuple, term: tuple, slots, element=None) -> Finding:
    """A finding of a wrong (or doubled) term.

    ``at``: ``(ph, k, n, lines, epoch)``; ``term``: ``((M flat, N flat) got,
    (M flat, N flat) wanted or None, doubled)``; ``slots``: the shared load
    each factor was read from (None: a global or unknown factor); ``element``:
    the P element judged, named in the words (provenance).
    """
    k, l = L.k, L.l
    ph, kk, n, lines, ep = at
    (mi, ni), want, doubled = term
    by, bx = L.blocks[s]
    th = L.thread(t)
    mw = "?" if mi < 0 else _el("M", mi, k)
    nw = "?" if ni < 0 else _el("N", ni, l)
    where = f"phase {ph}, k={kk}" if ph is not None else f"term {kk}"
    if doubled:
        msg = f"{where}: {mw}\u00b7{nw} counted a second time"
    else:
        need = (
            "" if want is None else f"; needed {_el('M', want[0], k)}\u00b7{_el('N', want[1], l)}"
        )
        of = "" if element is None else f" for P_{{{element[0]},{element[1]}}}"
        msg = f"{where}: {mw}\u00b7{nw}{need}{of}"
    marks: dict = {"threads": (th,)} if element is None else {"threads": (th,), "P": (element,)}
    why, other, addr = _why(L, s, slots, (mi, ni), None if doubled else want, marks)
    if why:
        msg += "; " + "; ".join(why)
    M_rc = [] if mi < 0 else [_rc(mi, k)]
    N_rc = [] if ni < 0 else [_rc(ni, l)]
    if want is not None:
        marks["M"] = (*M_rc, _rc(want[0], k))
        marks["N"] = (*N_rc, _rc(want[1], l))
    else:
        marks["M"], marks["N"] = tuple(M_rc), tuple(N_rc)
    got = (tuple(M_rc[0]) if M_rc else None, tuple(N_rc[0]) if N_rc else None)
    expected = None if want is None else (_rc(want[0], k), _rc(want[1], l))
    at = (ph, kk, (L.rank(s), ep, n, kind_rank("wrong term"), *th), lines, ep)
    return _term_finding(
        (by, bx), th, at, msg, marks, expected=expected, got=got, other=other, address=addr
    )


def _why(L: _Log, s: int, slots, got: tuple, want, marks: dict) -> tuple:
    """Per wrong factor read from a shared slot: what the slot held and who stored it.

    Marks each slot read (Mds, Nds) and the storing threads in ``marks``;
    a factor equal to the wanted one (``want``, None when doubled) is not
    explained. Returns ``(words, the last storing thread, the last address)``.
    """
    why: list = []
    other = addr = None
    for i, (tile, sh) in enumerate(zip(("Mds", "Nds"), slots, strict=True)):
        if sh is None:
            continue
        marks[tile] = (*marks.get(tile, ()), L.slot_rc(sh))
        if want is not None and got[i] == want[i]:
            continue
        addr = L.address(sh)  # in the kernel's own names (marks: the views')
        who = _storer(L, s, sh)
        held = L.tag_words(int(sh[A.TAG]))
        if who is None:
            why.append(f"{addr} held {held}")
            continue
        other = who[0]
        why.append(f"{addr} held {held}, stored by thread ({who[0][0]},{who[0][1]})")
        marks["threads"] = (*marks["threads"], who[0])
    return why, other, addr


def _provenance_finding(L: _Log, rec, key, doubled, rc, left) -> Finding:
    """A wrong or doubled TERM record ``rec`` of P_{rc}, its factors traced to their slots."""
    ta, tb, s, t, n, ph, kk = rec
    ph_ = ph if ph >= 0 and L.mds is not None else None
    q = (ph_ * L.T + kk) if ph_ is not None else kk
    want = _want(left, rc, q, L.k, L.l)
    E = L.A.thread(s, t)
    ea, eb = _element(L, ta), _element(L, tb)
    slots = []
    for tag in (ta if ea is None or ea[0] == L.M else tb, tb if eb is None or eb[0] == L.N else ta):
        # the shared slot the factor was read from: the thread's latest load that found it
        found = np.flatnonzero(
            (E[:n, A.OP] == A.LOAD) & (E[:n, A.TAG] == tag) & (E[:n, A.FLAG] == A.OK)
        )
        loads = [int(x) for x in found if L.space[int(E[x, A.ARR])] == "shared"]
        slots.append(E[loads[-1]] if loads else None)
    ep = int(E[n, A.EPOCH])
    at = (ph_, kk, n, (int(E[n, A.LINE]),), ep)
    return _wrong_term(L, s, t, at, (key, want, doubled), slots, element=rc)


def _missing_term(L: _Log, rc, mi, ni, store) -> Finding:
    k, l, T = L.k, L.l, L.T
    r, c = rc
    q = mi % k
    ph, kk = (q // T, q % T) if L.mds is not None else (None, q)
    where = f"phase {ph}, k={kk}" if ph is not None else f"k={q}"
    if store is not None:
        s, t, n = store
        by, bx = L.blocks[s]
        th = L.thread(t)
        e = L.ev[s, t, n]
        ln, ep = int(e[A.LINE]), int(e[A.EPOCH])
        tail = f" before P was stored (line {L.at(ln)})"
        when: tuple = (L.rank(s), ep, n, kind_rank("wrong term"), *th)
        lines: tuple = (ln,)
    else:
        by, bx, th = r // T, c // T, (r % T, c % T)
        ep, tail, lines = None, "", ()
        when = (by * L.gx + bx, 1 << 30, 1 << 30, kind_rank("wrong term"), *th)
    words = (
        f"{where}: {_el('M', mi, k)}\u00b7{_el('N', ni, l)} of P_{{{r},{c}}} was never "
        f"accumulated (term missing){tail}"
    )
    marks = {"M": (_rc(mi, k),), "N": (_rc(ni, l),), "P": ((r, c),), "threads": (th,)}
    at = (ph, kk, when, lines, ep)
    return _term_finding((by, bx), th, at, words, marks, expected=(_rc(mi, k), _rc(ni, l)))


def _term_finding(block: tuple, th: tuple, at: tuple, words: str, marks: dict, **more) -> Finding:
    """A ``wrong term`` finding of thread ``th``; ``at``: (ph, k, when, lines, epoch)."""
    ph, kk, when, lines, ep = at
    head = f"block ({block[0]},{block[1]}), thread ({th[0]},{th[1]}), "
    return Finding(
        "wrong term", block, th, ph, kk, head + words, lines=lines, epoch=ep, marks=marks,
        when=when, **more,
    )  # fmt: skip


def _judge_terms(L: _Log, s, t, stores) -> list:
    """Wrong, missing and doubled terms of one thread against the P elements it stored.

    The thread's factors (:meth:`AccessLog.factors`: shared slots holding M
    or N elements, and loads of M and N themselves) paired in the order it
    read them (:meth:`AccessLog.pairs`); a product with a zero-filled factor
    adds nothing and is not a term.
    """
    k, l, T = L.k, L.l, L.T
    side, element = L.A.factors(performed=False, global_loads=True)
    elems = sorted({p for p, *_ in stores})
    needed = _book_terms(elems, k, l)
    terms = [
        (mn, nn)
        for _ph, mn, nn in L.A.pairs(s, t, side)
        if element[s, t, mn] != A.TAG_ZERO and element[s, t, nn] != A.TAG_ZERO
    ]
    got = [(int(element[s, t, mn]), int(element[s, t, nn])) for mn, nn in terms]
    have: dict = defaultdict(int)
    for key in got:
        have[key] += 1
    if have == needed or (len(elems) == 1 and one_element(got, k, l) is not None):
        return []  # right, or the terms of one other element stored here: wrong P says so
    out = []
    left = dict(needed)
    per_phase: dict = defaultdict(int)
    for mn, nn in terms:
        key = (int(element[s, t, mn]), int(element[s, t, nn]))
        ph = int(L.phase[s, t, mn]) if L.phase[s, t, mn] >= 0 else None
        kk = per_phase[ph] // max(len(elems), 1)
        per_phase[ph] += 1
        if left.get(key, 0) > 0:
            left[key] -= 1
            continue
        # the term the book's kernel multiplies at this phase and k
        want = _want(left, divmod(elems[0], l), (ph * T + kk) if ph is not None else kk, k, l)
        em, en = L.ev[s, t, mn], L.ev[s, t, nn]
        shared = [None if L.space[int(x[A.ARR])] != "shared" else x for x in (em, en)]
        ep = max(int(em[A.EPOCH]), int(en[A.EPOCH]))
        at = (ph, kk, max(mn, nn), tuple(sorted({int(em[A.LINE]), int(en[A.LINE])})), ep)
        out.append(_wrong_term(L, s, t, at, (key, want, key in needed), shared))
    n_last = stores[-1][1]
    for (mi, ni), v in sorted(left.items(), key=lambda x: x[0][0] % k):
        out += [_missing_term(L, (mi // k, ni % l), mi, ni, (s, t, n_last)) for _ in range(v)]
    return out


# ------------------------------------------------------------ transactions
def _transactions(L: _Log) -> list:
    """Uncoalesced global requests and shared bank conflicts, one finding per source line."""
    first: dict = {}
    count: dict = defaultdict(int)
    nt = L.ev.shape[1]
    for s in range(L.ev.shape[0]):
        # instruction instances: (warp, line, occurrence) -> lanes' events
        req: dict = defaultdict(list)
        for t in range(nt):
            seen: dict = defaultdict(int)
            for n, e in enumerate(L.ev[s, t, : L.cnt[s, t]]):
                op, a, flag = int(e[A.OP]), int(e[A.ARR]), int(e[A.FLAG])
                if op not in (A.LOAD, A.STORE) or a < 0 or flag != A.OK:
                    continue
                key = (int(e[A.LINE]), op, a)
                req[(t // WARP, *key, seen[key])].append((t, n, int(e[A.IDX]), e))
                seen[key] += 1
        for (warp, ln, op, a, _occ), lanes in sorted(req.items(), key=lambda x: x[0]):
            if L.space[a] == "global":
                idx = np.array([x[2] for x in lanes])
                sectors = len(set((idx * ELEMENT_BYTES // SECTOR_BYTES).tolist()))
                rows: dict = defaultdict(list)
                for t, _n, i, _e in lanes:
                    rows[t // L.T].append(i)
                need: set = set()
                for ids in rows.values():
                    lo, cnt = min(ids), len(set(ids))
                    need.update(
                        range(
                            lo * ELEMENT_BYTES // SECTOR_BYTES,
                            (lo + cnt - 1) * ELEMENT_BYTES // SECTOR_BYTES + 1,
                        )  # fmt: skip
                    )
                if sectors <= len(need):
                    continue
                kind, detail = (
                    "uncoalesced",
                    f"{sectors} sectors of 32 bytes for {len(idx)} elements, where each row of "
                    f"threads reading consecutive elements would touch {len(need)}",
                )
            else:
                words = np.full(WARP, -1, np.int64)
                for t, _n, i, _e in lanes:
                    words[t % WARP] = i
                waves = int(bank_wavefronts(words[None, :])[0])
                if waves <= 1:
                    continue
                kind, detail = (
                    "bank conflict",
                    f"a {waves}-way bank conflict: {waves} passes instead of 1",
                )
            count[(kind, ln)] += 1
            if (kind, ln) in first:
                continue
            t0, n0, _i, e0 = lanes[0]
            by, bx = L.blocks[s]
            first[(kind, ln)] = (s, by, bx, warp, t0, n0, int(e0[A.EPOCH]), detail, a, op)
    out = []
    for (kind, ln), (s, by, bx, warp, t0, n0, ep, detail, a, op) in first.items():
        n = count[(kind, ln)]
        verb = "load" if op == A.LOAD else "store"
        msg = (
            f"line {L.at(ln)} ({L.line(ln)}), {verb} of {L.arrays[a]}: warp {warp} of block "
            f"({by},{bx}) made {detail}"
            + (f"; {counted(n - 1, 'more such request')}" if n > 1 else "")
        )
        out.append(
            Finding(
                kind,
                (by, bx),
                L.thread(t0),
                None,
                None,
                msg,
                severity=finding_kind(kind).severity,
                lines=(ln,),
                epoch=ep,
                when=(L.rank(s), ep, n0, kind_rank(kind), *L.thread(t0)),
            )
        )
    return out


def _reads(L: _Log) -> list:
    """Global reads per element against what tiling needs (Section 5.4's TILE_WIDTH reduction)."""
    tr = L.trace
    gy, gx = -(-L.j // L.T), -(-L.l // L.T)
    out = []
    for name, reads, need, other in (
        ("M", tr.m_reads, gx, "l"),
        ("N", tr.n_reads, gy, "j"),
    ):
        most = int(np.max(reads)) if reads.size else 0
        if most <= need:
            continue
        r, c = (int(x) for x in np.unravel_index(int(np.argmax(reads)), reads.shape))
        width = L.l if name == "M" else L.j
        out.append(
            Finding(
                "more global reads than tiling needs",
                None,
                None,
                None,
                None,
                f"elements of {name} were read from global memory up to {most} times "
                f"({name}_{{{r},{c}}}; {float(np.mean(reads)):.3g} on average); tiling with "
                f"TILE_WIDTH {L.T} needs {need} ({other} / TILE_WIDTH = {width} / {L.T}, "
                f"rounded up): each block reads a tile once into shared memory",
                expected=need,
                got=most,
                severity=finding_kind("more global reads than tiling needs").severity,
                marks={name: ((r, c),)},
                when=(1 << 30, 0, 0, kind_rank("more global reads than tiling needs")),
            )
        )
    return out
