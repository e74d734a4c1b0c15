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
from ..trace.access_log import (  # the log's codes: one definition for writer and reader
    LOAD,
    MOVE,
    MOVE_ADD,
    NO_INDEX,
    OK,
    OUT_OF_BOUNDS,
    STORE,
    TAG_ARRAYS,
    TAG_COMPUTED,
    TAG_NEVER,
    TAG_ZERO,
    TERM,
)
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
    """The trace's access log with the array roles of the book's matmul."""

    def __init__(self, trace):
        meta = trace.meta
        log = meta.get("access_log")
        if not isinstance(log, Mapping) or trace.log_events is None or not trace.log_events.size:
            raise ValueError(
                "this trace has no access log: check a kernel recorded through the "
                "instrumenter (vizmm.check, or vizmm.record(kernel=...))"
            )
        f = {name: i for i, name in enumerate(log["fields"])}
        self.F = f
        self.trace = trace
        self.arrays = [a["name"] for a in log["arrays"]]
        self.space = [a["space"] for a in log["arrays"]]
        self.shape = [a.get("shape") for a in log["arrays"]]
        glob = [i for i, s in enumerate(self.space) if s == "global"]
        if len(glob) < 3:
            raise ValueError(
                "a matrix multiplication kernel takes M, N and P (three global arrays); "
                f"this one has {len(glob)}"
            )
        self.M, self.N, self.P = glob[0], glob[1], glob[-1]
        self.j, self.k, self.l = int(meta["j"]), int(meta["k"]), int(meta["l"])
        self.T = int(meta["tile_width"])
        self.dims = {self.M: (self.j, self.k), self.N: (self.k, self.l), self.P: (self.j, self.l)}
        self.ev, self.vals, self.cnt = trace.log_events, trace.log_values, trace.log_counts
        self.blocks = [tuple(int(x) for x in b) for b in trace.detail_blocks]
        self.gx = -(-self.l // self.T)
        self.source = str(meta.get("source", "")).splitlines()
        # the log counts lines within the kernel's source; a message names the file's line
        self.first_line = int(meta.get("source_first_line", 1))
        # roles of the shared arrays: the source array most of their stores copy
        self.role: dict = {}
        for i, s in enumerate(self.space):
            if s != "shared":
                continue
            votes: dict = defaultdict(int)
            for s_ in range(self.ev.shape[0]):
                e = self._valid(s_)
                e = e[(e[:, f["op"]] == STORE) & (e[:, f["arr"]] == i)]
                for src in e[:, f["src_arr"]]:
                    if src in (self.M, self.N):
                        votes[int(src)] += 1
            if votes:
                self.role[i] = max(votes, key=lambda a: (votes[a], -a))
        mds = [i for i, r in self.role.items() if r == self.M]
        self.mds = mds[0] if mds else None

    def _valid(self, s: int) -> np.ndarray:
        nt = self.ev.shape[1]
        rows = [self.ev[s, t, : self.cnt[s, t]] for t in range(nt)]
        return np.concatenate(rows) if rows else self.ev[s, 0, :0]

    def thread(self, t: int) -> tuple:
        return tuple(int(x) for x in divmod(t, self.T))

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
        f, a = self.F, int(e[self.F["arr"]])
        name = self.arrays[a]
        r, c = int(e[f["row"]]), int(e[f["col"]])
        if r != NO_INDEX and c != NO_INDEX and r >= 0 and c >= 0:
            return f"{name}[{r}][{c}]"
        return f"{name}[{int(e[f['idx']])}]"

    def slot_rc(self, e) -> tuple:
        r, c = int(e[self.F["row"]]), int(e[self.F["col"]])
        if r != NO_INDEX and c != NO_INDEX:
            return (r, c)
        return divmod(int(e[self.F["idx"]]), self.T)

    def tag_words(self, tag: int) -> str:
        if tag == TAG_ZERO:
            return "0 (a zero-fill)"
        if tag == TAG_NEVER:
            return "nothing yet (no thread of the block had stored it)"
        if tag == TAG_COMPUTED:
            return "a computed value"
        arr, idx = tag % TAG_ARRAYS, tag // TAG_ARRAYS
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
    f = L.F
    out = []
    for s in range(L.ev.shape[0]):
        groups: dict = defaultdict(list)
        phase_of: dict = {}
        for t in range(L.ev.shape[1]):
            ph = -1
            for n, e in enumerate(L.ev[s, t, : L.cnt[s, t]]):
                op, a = int(e[f["op"]]), int(e[f["arr"]])
                if op == STORE and a == L.mds:
                    ph += 1
                if op not in (LOAD, STORE) or a < 0 or L.space[a] != "shared":
                    continue
                if int(e[f["flag"]]) != OK:
                    continue
                key = (a, int(e[f["idx"]]), int(e[f["epoch"]]))
                groups[key].append((n, t, op, e))
                phase_of[(t, n)] = ph
        for (a, _idx, epoch), acc in groups.items():
            stores = [x for x in acc if x[2] == STORE]
            if not stores or len({x[1] for x in acc}) < 2:
                continue
            acc.sort(key=lambda x: (x[0], x[1]))
            first = stores[0] if stores else acc[0]
            others = [x for x in acc if x[1] != first[1]]
            other = next((x for x in others if x[2] == LOAD), others[0])
            # the store racing with the other thread's access
            st, o = first, other
            if o[2] == LOAD:
                seen = int(o[3][f["tag"]]) == int(st[3][f["tag"]])
                label = "read-after-write" if seen else "write-after-read"
            else:
                label = "write-after-write"
            addr = L.address(st[3])
            by, bx = L.blocks[s]
            tst, tot = L.thread(st[1]), L.thread(o[1])
            lst, lot = int(st[3][f["line"]]), int(o[3][f["line"]])
            held = L.tag_words(int(st[3][f["tag"]]))
            if o[2] == LOAD:
                what = (
                    f"thread ({tot[0]},{tot[1]}) read it (line {L.at(lot)}) and found "
                    f"{L.tag_words(int(o[3][f['tag']]))}"
                )
            else:
                what = f"thread ({tot[0]},{tot[1]}) stored it too (line {L.at(lot)})"
            ph = phase_of.get((st[1], st[0]), -1)
            msg = (
                f"{label} race on {addr} in block ({by},{bx}), phase {max(ph, 0)}: thread "
                f"({tst[0]},{tst[1]}) stored {held} (line {L.at(lst)}: {L.line(lst)}) and {what} "
                f"with no cuda.syncthreads() between them"
            )
            role = L.role.get(a)
            tile = "Mds" if role == L.M else "Nds" if role == L.N else L.arrays[a]
            marks = {tile: (L.slot_rc(st[3]),), "threads": (tst, tot)}
            out.append(
                Finding(
                    "race",
                    (by, bx),
                    tst,
                    max(ph, 0) if L.mds is not None else None,
                    None,
                    msg,
                    severity=finding_kind("race").severity,
                    other=tot,
                    address=addr,
                    label=label,
                    lines=tuple(sorted({lst, lot})),
                    epoch=epoch,
                    marks=marks,
                    when=(L.rank(s), epoch, min(st[0], o[0]), kind_rank("race"), *tst),
                )
            )
    return out


# ---------------------------------------------------------- out of bounds
def _out_of_bounds_threads(L: _Log) -> list:
    """The (slot, thread) pairs with an access outside its array, in slot then thread order.

    NumPy over the whole log first, so that only those threads are walked event by
    event (a correct kernel has none: a 64 x 64 check took 2 s walking them all).
    """
    f = L.F
    ev = L.ev
    if ev.size == 0:
        return []
    op, a, flag = ev[..., f["op"]], ev[..., f["arr"]], ev[..., f["flag"]]
    r, c = ev[..., f["row"]], ev[..., f["col"]]
    access = (np.arange(ev.shape[2]) < L.cnt[..., None]) & ((op == LOAD) | (op == STORE)) & (a >= 0)
    found = access & (flag == OUT_OF_BOUNDS)
    have_rc = (r != NO_INDEX) & (c != NO_INDEX)
    for arr, (nr, nc) in L.dims.items():
        inside = (r >= 0) & (r < nr) & (c >= 0) & (c < nc)
        found |= access & (a == arr) & (flag == OK) & have_rc & ~inside
    return [tuple(int(x) for x in st) for st in np.argwhere(found.any(axis=2))]


def _out_of_bounds(L: _Log) -> list:
    f = L.F
    out = []
    for s, t in _out_of_bounds_threads(L):
        by, bx = L.blocks[s]
        ph = -1
        E = L.ev[s, t, : L.cnt[s, t]]
        for n, e in enumerate(E):
            op, a, flag = int(e[f["op"]]), int(e[f["arr"]]), int(e[f["flag"]])
            if op == STORE and a == L.mds:
                ph += 1
            if op not in (LOAD, STORE) or a < 0:
                continue
            # a tile load's global half belongs to the phase of the store it feeds
            feeds = n + 1 < len(E) and int(E[n + 1][f["op"]]) == STORE and op == LOAD
            here = ph + 1 if feeds and int(E[n + 1][f["arr"]]) == L.mds else ph
            r, c, idx = int(e[f["row"]]), int(e[f["col"]]), int(e[f["idx"]])
            name, verb = L.arrays[a], "load" if op == LOAD else "store"
            ln = int(e[f["line"]])
            have_rc = r != NO_INDEX and c != NO_INDEX
            at = f"(row, col) = ({r}, {c}), flat index {idx}" if have_rc else f"index {idx}"
            marks: dict = {"threads": (L.thread(t),)}
            if flag == OUT_OF_BOUNDS:
                size = ""
                if a in L.dims:
                    nr, nc = L.dims[a]
                    size = f" ({nr} x {nc} = {nr * nc} elements)"
                msg = (
                    f"{verb} of {name} at {at} is outside {name}{size} (line {L.at(ln)}: "
                    f"{L.line(ln)}); it was not performed"
                    + (" (the load gave 0)" if op == LOAD else "")
                )
            elif flag == OK and a in L.dims and have_rc:
                nr, nc = L.dims[a]
                if 0 <= r < nr and 0 <= c < nc:
                    continue
                msg = (
                    f"{verb} of {name} at {at}: ({r}, {c}) is outside {name}'s {nr} x {nc} "
                    f"elements, and the flat index is {_el(name, idx, nc)} (line {L.at(ln)}: "
                    f"{L.line(ln)}): the row wraps, as in Fig. 5.11"
                )
                marks[name] = (_rc(idx, nc),)
            else:
                continue
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
                    lines=(ln,),
                    epoch=int(e[f["epoch"]]),
                    marks=marks,
                    when=(L.rank(s), int(e[f["epoch"]]), n, kind_rank("out of bounds"), *th),
                )
            )
    return out


# -------------------------------------------------------- terms and P
def _factor(L: _Log, e, nxt) -> tuple | None:
    """``(side, element or code, shared event or None)`` of a factor read, or None."""
    f = L.F
    op, a, flag = int(e[f["op"]]), int(e[f["arr"]]), int(e[f["flag"]])
    if op != LOAD or a < 0 or flag != OK:
        return None
    if L.space[a] == "global":
        if a not in (L.M, L.N):
            return None
        if (
            nxt is not None
            and int(nxt[f["op"]]) == STORE
            and L.space[int(nxt[f["arr"]])] == "shared"
            and int(nxt[f["src_arr"]]) == a
            and int(nxt[f["src_idx"]]) == int(e[f["idx"]])
        ):
            return None  # a tile load's global half
        return (a, int(e[f["idx"]]), None)
    tag = int(e[f["tag"]])
    if tag >= 0:
        side = tag % TAG_ARRAYS
        if side not in (L.M, L.N):
            return None
        return (side, tag // TAG_ARRAYS, e)
    role = L.role.get(a)
    if role is None:
        return None
    return (role, tag, e)  # a zero-fill, never written or computed: a code < 0


def _storer(L: _Log, s: int, e, before_epoch: int) -> tuple | None:
    """The thread that stored the tag a shared load found (the latest such store)."""
    f = L.F
    a, idx, tag = int(e[f["arr"]]), int(e[f["idx"]]), int(e[f["tag"]])
    best = None
    for t in range(L.ev.shape[1]):
        E = L.ev[s, t, : L.cnt[s, t]]
        sel = (
            (E[:, f["op"]] == STORE)
            & (E[:, f["arr"]] == a)
            & (E[:, f["idx"]] == idx)
            & (E[:, f["tag"]] == tag)
            & (E[:, f["flag"]] == OK)
            & (E[:, f["epoch"]] <= before_epoch)
        )
        for n in np.flatnonzero(sel):
            key = (int(E[n, f["epoch"]]), int(n))
            if best is None or key > best[0]:
                best = (key, t, int(E[n, f["line"]]))
    return None if best is None else (L.thread(best[1]), best[2])


def _terms_and_p(L: _Log) -> list:
    f = L.F
    out = []
    j, l, T = L.j, L.l, L.T
    Mv = np.asarray(L.trace.M, np.float64)
    Nv = np.asarray(L.trace.N, np.float64)
    ref = Mv @ Nv
    P = np.asarray(L.trace.P, np.float64)
    stored_by: dict = {}
    provenance = bool(np.isin(L.ev[..., f["op"]], (TERM, MOVE)).any())
    if provenance:  # terms by where each factor came from (the recording's TERM events)
        out += _judge_provenance(L)
    for s in range(L.ev.shape[0]):
        by, bx = L.blocks[s]
        for t in range(L.ev.shape[1]):
            E = L.ev[s, t, : L.cnt[s, t]]
            th = L.thread(t)
            ph = -1
            fm: list = []  # M factors: (element or code, event, ph, n, shared event)
            fn: list = []
            stores: list = []  # (P flat, n, value, line, epoch)
            last_epoch = 0
            for n, e in enumerate(E):
                op, a = int(e[f["op"]]), int(e[f["arr"]])
                last_epoch = int(e[f["epoch"]])
                if op == STORE and a == L.mds:
                    ph += 1
                if op == STORE and a == L.P and int(e[f["flag"]]) == OK:
                    stores.append(
                        (
                            int(e[f["idx"]]),
                            n,
                            float(L.vals[s, t, n, 0]),
                            int(e[f["line"]]),
                            last_epoch,
                        )  # fmt: skip
                    )
                    continue
                got = _factor(L, e, E[n + 1] if n + 1 < len(E) else None)
                if got is None:
                    continue
                side, el, sh = got
                (fm if side == L.M else fn).append((el, n, ph, sh, last_epoch))
            for p, n, v, ln, ep in stores:
                stored_by[p] = (s, t, n, v, ln, ep)
            if not stores or provenance:
                continue
            out += _judge_terms(L, s, t, th, fm, fn, stores)
    # P elements: wrong or never stored
    for p in range(j * l):
        r, c = divmod(p, l)
        want = ref[r, c]
        if p in stored_by:
            s, t, n, v, ln, ep = stored_by[p]
            got = P[r, c]
            if np.isclose(got, want, rtol=1e-6, atol=0.0):
                continue
            by, bx = L.blocks[s]
            th = L.thread(t)
            msg = (
                f"P_{{{r},{c}}} = {got:g} stored by thread ({th[0]},{th[1]}) of block "
                f"({by},{bx}) (line {L.at(ln)}: {L.line(ln)}); M\u00b7N gives {want:g}"
            )
            hit = np.argwhere(np.isclose(ref, got, rtol=1e-6, atol=0.0))
            mine = (by * T + th[0], bx * T + th[1])
            if (
                mine != (r, c)
                and mine[0] < j
                and mine[1] < l
                and np.isclose(ref[mine], got, rtol=1e-6, atol=0.0)
            ):
                msg += (
                    f": that is P_{{{mine[0]},{mine[1]}}}, the element thread "
                    f"({th[0]},{th[1]}) computes, stored into the wrong place"
                )
            elif len(hit) == 1 and tuple(hit[0]) != (r, c):
                msg += f" ({got:g} is P_{{{hit[0][0]},{hit[0][1]}}} of M\u00b7N)"
            out.append(
                Finding(
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
            )
        else:
            by, bx, ty, tx = r // T, c // T, r % T, c % T
            rank = by * L.gx + bx
            msg = (
                f"P_{{{r},{c}}} was never stored (the book's thread ({ty},{tx}) of block "
                f"({by},{bx}) stores it); M\u00b7N gives {want:g}"
            )
            out.append(
                Finding(
                    "wrong P",
                    (by, bx),
                    (ty, tx),
                    None,
                    None,
                    msg,
                    expected=float(want),
                    got=None,
                    marks={"P": ((r, c),), "threads": ((ty, tx),)},
                    when=(rank, 1 << 30, 1 << 30, kind_rank("wrong P"), ty, tx),
                )
            )
    return out


def _element(L: _Log, tag: int) -> tuple | None:
    """``(side, flat element)`` of a factor's tag: M or N, or None (computed, never written)."""
    if tag >= 0 and tag % TAG_ARRAYS in (L.M, L.N):
        return tag % TAG_ARRAYS, tag // TAG_ARRAYS
    return None


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
    f = L.F
    k, l = L.k, L.l
    dest: dict = defaultdict(list)  # (array, element) or (block, array, element) -> terms
    for s in range(L.ev.shape[0]):
        for t in range(L.ev.shape[1]):
            E = L.ev[s, t, : L.cnt[s, t]]
            local: dict = defaultdict(list)
            ph = -1
            turn: dict = defaultdict(int)
            for n, e in enumerate(E):
                op, a = int(e[f["op"]]), int(e[f["arr"]])
                if op == STORE and a == L.mds:
                    ph += 1
                if op not in (TERM, MOVE):
                    continue
                idx = int(e[f["idx"]])
                if a < 0:
                    key: tuple = ("local", idx)
                    box = local
                elif L.space[a] == "shared":
                    key, box = (s, a, idx), dest
                else:
                    key, box = (a, idx), dest
                if op == TERM:
                    kk = turn[(key, ph)]
                    turn[(key, ph)] += 1
                    rec = (int(e[f["tag"]]), int(e[f["src_idx"]]), s, t, n, ph, kk)
                    box[key].append(rec)
                    continue
                si = int(e[f["src_idx"]])
                sa = int(e[f["src_arr"]])
                if si == -2:  # a value of no known terms: the element is not judged by terms
                    box.pop(key, None)
                    continue
                if si < 0:
                    src: list = []
                elif sa < 0:
                    src = local[("local", si)]
                else:
                    src = dest[(s, sa, si) if L.space[sa] == "shared" else (sa, si)]
                if int(e[f["flag"]]) == MOVE_ADD:
                    box[key] = box[key] + list(src)
                else:
                    box[key] = list(src)
    out = []
    stored: dict = {}
    for s in range(L.ev.shape[0]):
        for t in range(L.ev.shape[1]):
            E = L.ev[s, t, : L.cnt[s, t]]
            sel = np.flatnonzero(
                (E[:, f["op"]] == STORE) & (E[:, f["arr"]] == L.P) & (E[:, f["flag"]] == OK)
            )
            for i in sel.tolist():
                stored[int(E[i, f["idx"]])] = (s, t, int(i))
    for (a, p), recs in sorted(((key, v) for key, v in dest.items() if len(key) == 2)):
        if a != L.P or not 0 <= p < L.j * l:
            continue
        r, c = divmod(p, l)
        if not recs:
            continue  # no product reached this element: its wrong P says so, once
        needed: dict = defaultdict(int)
        for q in range(k):
            needed[(r * k + q, q * l + c)] += 1
        left = dict(needed)
        wrong = []
        for rec in recs:
            x, y = _element(L, rec[0]), _element(L, rec[1])
            if rec[0] == TAG_ZERO or rec[1] == TAG_ZERO:
                continue  # adds nothing: the boundary check's zero-fill
            pair = {x[0]: x[1] for x in (x, y) if x is not None}
            key = (pair.get(L.M, -1), pair.get(L.N, -1))
            if left.get(key, 0) > 0:
                left[key] -= 1
                continue
            wrong.append((rec, key, key in needed))
        if wrong:
            # the terms of one other element, stored into the wrong place: wrong P says so
            have: dict = defaultdict(int)
            for rec in recs:
                x, y = _element(L, rec[0]), _element(L, rec[1])
                if rec[0] != TAG_ZERO and rec[1] != TAG_ZERO:
                    pair = {x[0]: x[1] for x in (x, y) if x is not None}
                    have[(pair.get(L.M, -1), pair.get(L.N, -1))] += 1
            rows = {mi // k for mi, _ in have if mi >= 0}
            cols = {ni % l for _, ni in have if ni >= 0}
            if len(rows) == 1 and len(cols) == 1:
                (r1,), (c1,) = rows, cols
                theirs = {(r1 * k + q, q * l + c1): 1 for q in range(k)}
                # moved there, not copied: the other element did not get them itself
                own = dest.get((L.P, r1 * l + c1), [])
                if dict(have) == theirs and (r1, c1) != (r, c) and not _has_terms(L, own, theirs):
                    continue
        for rec, key, doubled in wrong:
            out.append(_provenance_finding(L, rec, key, doubled, (r, c), left))
        for (mi, ni), v in sorted(left.items(), key=lambda x: x[0][0] % k):
            for _ in range(v):
                out.append(_missing_term(L, (r, c), mi, ni, stored.get(p)))
    return out


def _has_terms(L: _Log, recs, terms) -> bool:
    """Whether the TERM records ``recs`` hold every term of ``terms`` (M flat, N flat)."""
    got = set()
    for rec in recs:
        x, y = _element(L, rec[0]), _element(L, rec[1])
        pair = {x[0]: x[1] for x in (x, y) if x is not None}
        got.add((pair.get(L.M, -1), pair.get(L.N, -1)))
    return set(terms) <= got


def _provenance_finding(L: _Log, rec, key, doubled, rc, left) -> Finding:
    f = L.F
    k, l, T = L.k, L.l, L.T
    ta, tb, s, t, n, ph, kk = rec
    by, bx = L.blocks[s]
    th = L.thread(t)
    r0, c0 = rc
    ph_ = ph if ph >= 0 and L.mds is not None else None
    q = (ph_ * T + kk) if ph_ is not None else kk
    want: tuple | None = (r0 * k + q, q * l + c0) if 0 <= q < k else None
    if want is None or left.get(want, 0) <= 0:
        want = next((x for x, v in left.items() if v > 0), None)
    mi, ni = key
    mw = "?" if mi < 0 else _el("M", mi, k)
    nw = "?" if ni < 0 else _el("N", ni, l)
    where = f"phase {ph_}, k={kk}" if ph_ is not None else f"term {kk}"
    if doubled:
        msg = f"{where}: {mw}\u00b7{nw} counted a second time"
    else:
        need = (
            "" if want is None else f"; needed {_el('M', want[0], k)}\u00b7{_el('N', want[1], l)}"
        )
        msg = f"{where}: {mw}\u00b7{nw}{need} for P_{{{r0},{c0}}}"
    E = L.ev[s, t, : L.cnt[s, t]]
    marks: dict = {"threads": (th,), "P": (rc,)}
    why: list = []
    other = None
    addr = None
    ea, eb = _element(L, ta), _element(L, tb)
    for side, tag in (
        ("M", ta if ea is None or ea[0] == L.M else tb),
        ("N", tb if eb is None or eb[0] == L.N else ta),
    ):
        # the shared slot the factor was read from: the thread's latest load that found it
        found = np.flatnonzero(
            (E[:n, f["op"]] == LOAD) & (E[:n, f["tag"]] == tag) & (E[:n, f["flag"]] == OK)
        )
        loads = [int(x) for x in found if L.space[int(E[x, f["arr"]])] == "shared"]
        if not loads:
            continue
        sh = E[loads[-1]]
        tile = "Mds" if side == "M" else "Nds"
        marks[tile] = (*marks.get(tile, ()), L.slot_rc(sh))
        if want is not None and not doubled:
            ok_el = want[0] if side == "M" else want[1]
            got_el = mi if side == "M" else ni
            if ok_el == got_el:
                continue
        addr = L.address(sh)
        who = _storer(L, s, sh, int(sh[f["epoch"]]))
        held = L.tag_words(int(sh[f["tag"]]))
        if who is not None:
            other = who[0]
            why.append(f"{addr} held {held}, stored by thread ({who[0][0]},{who[0][1]})")
            marks["threads"] = (*marks["threads"], who[0])
        else:
            why.append(f"{addr} held {held}")
    if why:
        msg += "; " + "; ".join(why)
    M_rc = [] if mi < 0 else [_rc(mi, k)]
    N_rc = [] if ni < 0 else [_rc(ni, l)]
    if want is not None:
        marks["M"] = (*M_rc, _rc(want[0], k))
        marks["N"] = (*N_rc, _rc(want[1], l))
    else:
        marks["M"], marks["N"] = tuple(M_rc), tuple(N_rc)
    ep = int(E[n, f["epoch"]])
    return Finding(
        "wrong term",
        (by, bx),
        th,
        ph_,
        kk,
        f"block ({by},{bx}), thread ({th[0]},{th[1]}), {msg}",
        expected=None if want is None else (_rc(want[0], k), _rc(want[1], l)),
        got=(tuple(M_rc[0]) if M_rc else None, tuple(N_rc[0]) if N_rc else None),
        other=other,
        address=addr,
        lines=(int(E[n, f["line"]]),),
        epoch=ep,
        marks=marks,
        when=(L.rank(s), ep, n, kind_rank("wrong term"), *th),
    )


def _missing_term(L: _Log, rc, mi, ni, store) -> Finding:
    f = L.F
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
        ln, ep = int(e[f["line"]]), int(e[f["epoch"]])
        tail = f" before P was stored (line {L.at(ln)})"
        when: tuple = (L.rank(s), ep, n, kind_rank("wrong term"), *th)
        lines: tuple = (ln,)
    else:
        by, bx, th = r // T, c // T, (r % T, c % T)
        ep, tail, lines = None, "", ()
        when = (by * L.gx + bx, 1 << 30, 1 << 30, kind_rank("wrong term"), *th)
    return Finding(
        "wrong term",
        (by, bx),
        th,
        ph,
        kk,
        f"block ({by},{bx}), thread ({th[0]},{th[1]}), {where}: "
        f"{_el('M', mi, k)}\u00b7{_el('N', ni, l)} of P_{{{r},{c}}} was never "
        f"accumulated (term missing){tail}",
        expected=(_rc(mi, k), _rc(ni, l)),
        got=None,
        lines=lines,
        epoch=ep,
        marks={"M": (_rc(mi, k),), "N": (_rc(ni, l),), "P": ((r, c),), "threads": (th,)},
        when=when,
    )


def _judge_terms(L: _Log, s, t, th, fm, fn, stores) -> list:
    """Wrong, missing and doubled terms of one thread against the P elements it stored."""
    f = L.F
    k, l, T = L.k, L.l, L.T
    by, bx = L.blocks[s]
    elems = sorted({p for p, *_ in stores})
    needed: dict = defaultdict(int)
    for p in elems:
        r, c = divmod(p, l)
        for q in range(k):
            needed[(r * k + q, q * l + c)] += 1
    coarse = max(len(elems), 1)
    terms = []
    for i, (m, nn) in enumerate(zip(fm, fn, strict=False)):
        if m[0] == TAG_ZERO or nn[0] == TAG_ZERO:
            continue  # adds nothing: the boundary check's zero-fill
        terms.append((i, m, nn))
    have: dict = defaultdict(int)
    for _i, m, nn in terms:
        have[(m[0], nn[0])] += 1
    if have == needed:
        return []
    # the terms of one other element, stored into the wrong place: wrong P says so
    rows = {m[0] // k for _i, m, _n in terms if m[0] >= 0}
    cols = {nn[0] % l for _i, _m, nn in terms if nn[0] >= 0}
    if len(rows) == 1 and len(cols) == 1 and len(elems) == 1:
        (r,), (c,) = rows, cols
        theirs: dict = defaultdict(int)
        for q in range(k):
            theirs[(r * k + q, q * l + c)] += 1
        if have == theirs:
            return []
    out = []
    left = dict(needed)
    last_p = stores[-1]
    per_phase: dict = defaultdict(int)
    for _i, m, nn in terms:
        ph = m[2] if m[2] >= 0 else None
        turn = per_phase[ph]
        per_phase[ph] += 1
        kk = turn // coarse
        key = (m[0], nn[0])
        if left.get(key, 0) > 0:
            left[key] -= 1
            continue
        doubled = key in needed
        # the term the book's kernel multiplies at this phase and k
        q = (ph * T + kk) if ph is not None else kk
        r0, c0 = divmod(elems[0], l)
        want: tuple | None = (r0 * k + q, q * l + c0)
        if left.get(want, 0) <= 0:
            want = next((x for x, v in left.items() if v > 0), None)
        mw = "?" if m[0] < 0 else _el("M", m[0], k)
        nw = "?" if nn[0] < 0 else _el("N", nn[0], l)
        where = f"phase {ph}, k={kk}" if ph is not None else f"term {kk}"
        if doubled:
            msg = f"{where}: {mw}\u00b7{nw} counted a second time"
        else:
            need = (
                ""
                if want is None
                else f"; needed {_el('M', want[0], k)}\u00b7{_el('N', want[1], l)}"
            )
            msg = f"{where}: {mw}\u00b7{nw}{need}"
        why: list = []
        other: tuple | None = None
        addr: str | None = None
        marks: dict = {"threads": (th,)}
        M_rc = [] if m[0] < 0 else [_rc(m[0], k)]
        N_rc = [] if nn[0] < 0 else [_rc(nn[0], l)]
        for side, x, need_el in (
            ("M", m, None if want is None else want[0]),
            ("N", nn, None if want is None else want[1]),
        ):
            sh = x[3]
            if sh is None:
                continue
            tile = "Mds" if side == "M" else "Nds"
            rc = L.slot_rc(sh)
            marks[tile] = (*marks.get(tile, ()), rc)
            if need_el is not None and x[0] == need_el and not doubled:
                continue
            addr = L.address(sh)  # in the kernel's own names (marks: the views')
            tag = int(sh[f["tag"]])
            who = _storer(L, s, sh, int(sh[f["epoch"]]))
            held = L.tag_words(tag)
            if who is not None:
                other = who[0]
                why.append(f"{addr} held {held}, stored by thread ({who[0][0]},{who[0][1]})")
                marks["threads"] = (*marks["threads"], who[0])
            else:
                why.append(f"{addr} held {held}")
        if why:
            msg += "; " + "; ".join(why)
        if want is not None:
            marks["M"] = (*M_rc, _rc(want[0], k))
            marks["N"] = (*N_rc, _rc(want[1], l))
        else:
            marks["M"], marks["N"] = tuple(M_rc), tuple(N_rc)
        n_ev = max(m[1], nn[1])
        out.append(
            Finding(
                "wrong term",
                (by, bx),
                th,
                ph,
                kk,
                f"block ({by},{bx}), thread ({th[0]},{th[1]}), {msg}",
                expected=None if want is None else (_rc(want[0], k), _rc(want[1], l)),
                got=(tuple(M_rc[0]) if M_rc else None, tuple(N_rc[0]) if N_rc else None),
                other=other,
                address=addr,
                lines=tuple(
                    sorted({int(L.ev[s, t, m[1], f["line"]]), int(L.ev[s, t, nn[1], f["line"]])})
                ),
                epoch=max(m[4], nn[4]),
                marks=marks,
                when=(L.rank(s), max(m[4], nn[4]), n_ev, kind_rank("wrong term"), *th),
            )
        )
    # terms never accumulated
    for (mi, ni), v in sorted(left.items(), key=lambda x: x[0][0] % k):
        for _ in range(v):
            q = mi % k
            ph, kk = (q // T, q % T) if L.mds is not None else (None, q)
            where = f"phase {ph}, k={kk}" if ph is not None else f"k={q}"
            _p, n, _v, ln, ep = last_p
            r, c = mi // k, ni % l
            out.append(
                Finding(
                    "wrong term",
                    (by, bx),
                    th,
                    ph,
                    kk,
                    f"block ({by},{bx}), thread ({th[0]},{th[1]}), {where}: "
                    f"{_el('M', mi, k)}\u00b7{_el('N', ni, l)} of P_{{{r},{c}}} was never "
                    f"accumulated (term missing) before P was stored (line {L.at(ln)})",
                    expected=(_rc(mi, k), _rc(ni, l)),
                    got=None,
                    lines=(ln,),
                    epoch=ep,
                    marks={
                        "M": (_rc(mi, k),),
                        "N": (_rc(ni, l),),
                        "P": ((r, c),),
                        "threads": (th,),
                    },
                    when=(L.rank(s), ep, n, kind_rank("wrong term"), *th),
                )
            )
    return out


# ------------------------------------------------------------ transactions
def _transactions(L: _Log) -> list:
    """Uncoalesced global requests and shared bank conflicts, one finding per source line."""
    f = L.F
    first: dict = {}
    count: dict = defaultdict(int)
    nt = L.ev.shape[1]
    for s in range(L.ev.shape[0]):
        # instruction instances: (warp, line, occurrence) -> lanes' events
        req: dict = defaultdict(list)
        for t in range(nt):
            seen: dict = defaultdict(int)
            for n, e in enumerate(L.ev[s, t, : L.cnt[s, t]]):
                op, a, flag = int(e[f["op"]]), int(e[f["arr"]]), int(e[f["flag"]])
                if op not in (LOAD, STORE) or a < 0 or flag != OK:
                    continue
                key = (int(e[f["line"]]), op, a)
                req[(t // WARP, *key, seen[key])].append((t, n, int(e[f["idx"]]), e))
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
            first[(kind, ln)] = (s, by, bx, warp, t0, n0, int(e0[f["epoch"]]), detail, a, op)
    out = []
    for (kind, ln), (s, by, bx, warp, t0, n0, ep, detail, a, op) in first.items():
        n = count[(kind, ln)]
        verb = "load" if op == LOAD else "store"
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
