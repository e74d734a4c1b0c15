"""What the threads of a kernel of your own really did, read from its access log.

A kernel given to ``vizmm.check`` or ``vizmm.record(kernel=...)``
(:attr:`vizmm.trace.Trace.user_kernel`) may map its threads to P elements
otherwise than Fig. 5.9 (``Row = by*TILE_WIDTH + ty``, ``Col = bx*TILE_WIDTH
+ tx``), and a coarsened one accumulates several P elements per thread.
:func:`own_block` reads one recorded block's access log (the instrumenter's,
:mod:`vizmm.record.instrument`) as the book's terms: every product
``Mds[..] * Nds[..]`` a thread accumulated, traced through the tag of the
shared slot it read to the M and N elements it came from (Section 5.4), the
P element the accumulation was stored into, whether the read found what
the book's term of that element needs, and whether the slot was stored by
another thread in the same barrier epoch (no ``__syncthreads()`` between the
store and the read: a race, as :mod:`vizmm.analysis.check` reports it).

Terms are paired by the log's one pairing (:meth:`vizmm.trace.access_log.AccessLog.pairs`,
:mod:`vizmm.analysis.check`'s): within a phase ``ph`` (the thread's n-th
performed store into Mds), the i-th factor read from a slot holding an M
element with the i-th holding an N element. A term belongs to
the accumulator its line adds to (``p1 += Mds[ty][k] * Nds1[k][tx]``,
read from the kernel's source, ``meta['source']``) and so to the P element
that accumulator is stored into (``P[Row][Col + T] = p1``); a thread with
one accumulator's terms belongs to the one element those terms are of, else
to the element it stored (a kernel storing ``P[Col][Row]`` still computes
``P[Row][Col]``).

:func:`own_lab` gives the barrier lab's counts (hazards, wrong reads,
wrong P elements) of such a kernel from the same terms, in place of
:mod:`vizmm.analysis.hazards`'s, which assume Fig. 5.9's indexing.

NumPy and the standard library (``ast``) only.
"""

from __future__ import annotations

import ast
import dataclasses
from collections import defaultdict

import numpy as np

from ..trace import Trace
from ..trace import access_log as A
from ..trace.access_log import AccessLog, one_element
from ..trace.derived import per_trace
from ..trace.notation import subscript as _sub  # M_{row,col}, written once
from ..trace.units import format_value

__all__ = ["OwnBlock", "OwnLab", "OwnTerm", "own_block", "own_lab"]


@dataclasses.dataclass(frozen=True)
class OwnTerm:
    """One product a thread of a user's kernel added to one of its accumulators.

    Attributes
    ----------
    phase : int
        The book's ``ph``: the thread's stores into Mds so far, from 0.
    k : int
        The turn of the k loop inside the phase: the term's place among its
        accumulator's terms of the phase.
    tags : tuple of int
        ``(M, N)``: the linear index (``r * k + c``, ``r * l + c``) of the
        element each factor's slot held, or -1 (a zero-fill), -2 (a slot no
        thread had stored yet).
    value : float
        The product of the two values read (float32).
    element : tuple of int
        ``(Row, Col)`` of the P element the accumulation went into.
    book : tuple of int
        ``(M, N)`` linear indices of the book's term of that element at this
        phase and k (``M[Row][ph*T + k]``, ``N[ph*T + k][Col]``; -1 past the
        matrices, the boundary check's zero-fill).
    slots : tuple of tuple of int
        ``((r, c) of the Mds slot, (r, c) of the Nds slot)`` read.
    raced : tuple of bool
        Per factor: another thread of the block stored into that slot in the
        same barrier epoch as the read (no ``__syncthreads()`` between them).
    after_store : tuple of bool
        Per factor: the read found what such a store wrote (it came first).
    factors : tuple of float
        The two values read (float32, as recorded).
    writers : tuple of tuple
        Per factor: ``((ty, tx, write_phase, write_line), ...)``, the other
        threads that stored into the slot in the same barrier epoch as the
        read (a race; empty: none), with the phase ``ph`` of their store and
        its 1-based line of ``meta['source']``.
    lines : tuple of int
        The 1-based lines of ``meta['source']`` of the two reads.
    """

    phase: int
    k: int
    tags: tuple[int, int]
    value: float
    element: tuple[int, int]
    book: tuple[int, int]
    slots: tuple[tuple[int, int], tuple[int, int]]
    raced: tuple[bool, bool]
    after_store: tuple[bool, bool]
    factors: tuple[float, float] = (float("nan"), float("nan"))
    writers: tuple[tuple, tuple] = ((), ())
    lines: tuple[int, int] = (-1, -1)

    @property
    def wrong(self) -> tuple[bool, bool]:
        """Per factor: whether it is not the book's factor of the term's element."""
        return (self.tags[0] != self.book[0], self.tags[1] != self.book[1])


@dataclasses.dataclass(frozen=True)
class OwnBlock:
    """One block of a user's kernel as its threads really ran it.

    Attributes
    ----------
    terms : dict
        ``{(ty, tx): (OwnTerm, ...)}`` in the order the thread accumulated them.
    stores : dict
        ``{(ty, tx): ((Row, Col, value), ...)}``: the P elements the thread
        stored (in bounds, performed), in order, with the value stored.
    elements : dict
        ``{(ty, tx): ((Row, Col), ...)}``: the P elements whose terms the
        thread accumulated, one per accumulator, in the order of its first term.
    logged : dict
        ``{(ty, tx): (Row, Col) or None}``: the P element of the accumulator
        whose value the access log carries beside each event (the variable the
        kernel's last ``P[...] = name`` stores, :mod:`vizmm.record.instrument`),
        which the recorded "Pvalue after" of a phase is; None where that
        accumulator's element is not known (no such store, or none performed).
    """

    terms: dict
    stores: dict
    elements: dict
    logged: dict = dataclasses.field(default_factory=dict)

    def p_elements(self, T: int) -> np.ndarray:
        """``(T, T, 2)`` int: the P element each thread stored first, -1 where none.

        Parameters
        ----------
        T : int
            TILE_WIDTH.
        """
        out = np.full((T, T, 2), -1, np.int64)
        for (ty, tx), got in self.stores.items():
            if got:
                out[ty, tx] = got[0][:2]
        return out


def _lines(node: ast.stmt) -> range:
    """The 1-based lines a statement spans."""
    return range(node.lineno, (node.end_lineno or node.lineno) + 1)


def _accumulated(node: ast.AST) -> str | None:
    """The variable ``node`` accumulates into (``acc += ...``, ``acc = acc + ...``), or None."""
    if isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
        return node.target.id
    if not (isinstance(node, ast.Assign) and len(node.targets) == 1):
        return None
    target = node.targets[0]
    if isinstance(target, ast.Name) and any(
        isinstance(n, ast.Name) and n.id == target.id for n in ast.walk(node.value)
    ):
        return target.id
    return None


def _stored_into(node: ast.AST, p_name: str, names: set) -> str | None:
    """The one accumulator ``P[...] = expr`` stores (``node`` such a store), or None."""
    if not (isinstance(node, ast.Assign) and len(node.targets) == 1):
        return None
    target = node.targets[0]
    if not (
        isinstance(target, ast.Subscript)
        and isinstance(target.value, ast.Name)
        and target.value.id == p_name
    ):
        return None
    used = {n.id for n in ast.walk(node.value) if isinstance(n, ast.Name)} & names
    return next(iter(used)) if len(used) == 1 else None


def _accumulators(source: str, p_name: str) -> tuple[dict, dict]:
    """``({line: accumulator}, {line: accumulator stored})`` from a kernel's source.

    An accumulation is ``acc += ...`` or ``acc = acc + ...``; a store is
    ``P[...] = expr`` whose expression names exactly one accumulator. Lines
    are 1-based within ``source``, as the access log counts them.
    """
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return {}, {}
    adds: dict = {}
    for node in ast.walk(tree):
        target = _accumulated(node)
        if target is not None and isinstance(node, ast.stmt):
            adds.update(dict.fromkeys(_lines(node), target))
    names = set(adds.values())
    stores: dict = {}
    for node in ast.walk(tree):
        acc = _stored_into(node, p_name, names)
        if acc is not None and isinstance(node, ast.stmt):
            stores.update(dict.fromkeys(_lines(node), acc))
    return adds, stores


def _block_log(trace: Trace, block: tuple[int, int]) -> AccessLog:
    """The access log of one recorded block (its T x T threads)."""
    slot = trace.slot((int(block[0]), int(block[1])))
    log = AccessLog.from_trace(trace)
    if log is None:
        raise ValueError("this trace has no access log: it records no kernel of your own")
    log.matmul()  # a kernel without M, N and P is refused here
    T = trace.tile_width
    return log.block(slot, T * T)


def _stores_by_epoch(log: AccessLog, phase: np.ndarray) -> dict:
    """``{(array, idx, epoch): {thread: (tags stored, (phase, line) of its first store)}}``.

    The block's performed shared stores, per element and barrier epoch.
    """
    ev = log.events[0]
    out: dict = {}
    for key, acc in log.shared_accesses(0).items():
        for t, n in acc:
            if ev[t, n, A.OP] != A.STORE:
                continue
            tags, first = out.setdefault(key, {}).get(t, (set(), None))
            tags.add(int(ev[t, n, A.TAG]))
            out[key][t] = (tags, first or (int(phase[0, t, n]), int(ev[t, n, A.LINE])))
    return out


def _read(log: AccessLog, stored: dict, t: int, n: int, element: int) -> tuple:
    """A factor thread ``t`` read at event ``n``, as a tuple.

    ``(element, value, slot, raced, after store, line, writers)``; the
    writers are the other threads that stored the slot in the read's epoch.
    """
    T = log.tile_width
    e = log.events[0, t, n]
    key = (int(e[A.ARR]), int(e[A.IDX]), int(e[A.EPOCH]))
    others = {u: x for u, x in stored.get(key, {}).items() if u != t}
    raced = bool(others)
    after = raced and any(int(e[A.TAG]) in tags for tags, _first in others.values())
    writers = tuple((*divmod(u, T), *others[u][1]) for u in sorted(others))
    value = float(log.values[0, t, n, 0])
    return (element, value, log.element(e, T), raced, after, int(e[A.LINE]), writers)


def _p_stored(log: AccessLog, t: int, l: int) -> list:
    """Thread ``t``'s performed P stores: ``(Row, Col, value, line)`` each, in order."""
    ev = log.events[0, t]
    return [
        (*log.element(ev[n], l), float(log.values[0, t, n, 0]), int(ev[n, A.LINE]))
        for n in np.flatnonzero(log.p_stores()[0, t]).tolist()
    ]


def _elements(accs: list, real: list, store_lines: dict, tags: list, k: int, l: int) -> dict:
    """``{accumulator: (Row, Col)}``: the P element each accumulator of a thread went into.

    The element of the store its source names, else (none named) the stores
    in order; one accumulator whose terms (``tags``) are every term of one
    element, once each, is that element's.
    """
    element: dict = {}
    for order, acc in enumerate(accs):
        stored = [x for x in real if store_lines.get(x[3]) == acc]
        if stored:
            element[acc] = stored[0][:2]
        elif len(accs) == len(real):  # not named in the source: the stores in order
            element[acc] = real[order][:2]
    if len(accs) != 1:
        return element
    whole = one_element([(a, b) for a, b in tags if a >= 0 and b >= 0], k, l)
    if whole is not None:
        element[accs[0]] = whole
    return element


def own_block(trace: Trace, block: tuple[int, int]) -> OwnBlock:
    """What the threads of one recorded block of a user's kernel really did.

    Parameters
    ----------
    trace : Trace
        A recording of a kernel of the user's own with its access log
        (:func:`vizmm.replay.table.own_kernel`); kept with the trace, per block.
    block : (by, bx)
        A block recorded per thread.

    Returns
    -------
    OwnBlock

    Raises
    ------
    KeyError
        When the block was not recorded per thread.
    ValueError
        When the trace has no access log, or its kernel has fewer than three
        global arrays (M, N, P).
    """
    log = _block_log(trace, block)
    T = trace.tile_width
    j, k, l = trace.shape
    p_id = log.matmul()[2]
    # a phase starts at a performed store into Mds; factors: shared slots read (Section 5.4)
    side, element = log.factors(performed=True, global_loads=False)
    phase = log.phases(performed=True)
    stored = _stores_by_epoch(log, phase)
    adds, store_lines = _accumulators(str(trace.meta.get("source", "")), log.names[p_id])
    logged_acc = log.accumulator  # the instrumenter's (meta access_log)
    terms: dict = {}
    stores: dict = {}
    elements: dict = {}
    logged: dict = {}
    for t in range(T * T):
        th = divmod(t, T)
        mine = _p_stored(log, t, l)
        real = [x for x in mine if 0 <= x[0] < j and 0 <= x[1] < l]
        stores[th] = tuple(x[:3] for x in real)
        reads: list[tuple[int, tuple, tuple]] = [
            (
                p,
                _read(log, stored, t, mn, int(element[0, t, mn])),
                _read(log, stored, t, nn, int(element[0, t, nn])),
            )
            for p, mn, nn in log.pairs(0, t, side, phase)
        ]
        # one accumulator per line's target; a line the source does not name is its own
        acc_of = [adds.get(fn[5], adds.get(fm[5], f"line {fn[5]}")) for _p, fm, fn in reads]
        accs = list(dict.fromkeys(acc_of))
        tags = [(fm[0], fn[0]) for _p, fm, fn in reads]
        element_of = _elements(accs, real, store_lines, tags, k, l)
        book_el = (th[0] + int(block[0]) * T, th[1] + int(block[1]) * T)
        default = real[0][:2] if real else book_el
        terms[th] = _terms(reads, acc_of, element_of, default, trace.shape, T)
        elements[th] = tuple(dict.fromkeys(x.element for x in terms[th]))
        acc_el = element_of.get(logged_acc) if logged_acc is not None else None
        if acc_el is None and logged_acc is not None and accs == [logged_acc] and elements[th]:
            acc_el = elements[th][0]
        logged[th] = None if acc_el is None else (int(acc_el[0]), int(acc_el[1]))
    return OwnBlock(terms, stores, elements, logged)


def _terms(reads: list, acc_of: list, element_of: dict, default, shape, T: int) -> tuple:
    """A thread's terms (:class:`OwnTerm`), each judged against its accumulator's element."""
    j, k, l = shape
    out = []
    turn: dict = defaultdict(int)  # (phase, accumulator) -> its terms so far
    for (p, fm, fn), acc in zip(reads, acc_of, strict=True):
        r, c = element_of.get(acc, default)
        kk = turn[(p, acc)]
        turn[(p, acc)] += 1
        q = p * T + kk
        book = (
            r * k + q if r < j and q < k else A.TAG_ZERO,
            q * l + c if q < k and c < l else A.TAG_ZERO,
        )
        value = float(np.float32(fm[1]) * np.float32(fn[1]))
        out.append(
            OwnTerm(
                p,
                kk,
                (fm[0], fn[0]),
                value,
                (int(r), int(c)),
                book,
                (fm[2], fn[2]),
                (fm[3], fn[3]),
                (fm[4], fn[4]),
                (fm[1], fn[1]),
                (fm[6], fn[6]),
                (fm[5], fn[5]),
            )
        )
    return tuple(out)


@dataclasses.dataclass(frozen=True)
class OwnLab:
    """The barrier lab's counts for a kernel of the user's own, read from its access log.

    What :mod:`vizmm.analysis.hazards` computes for the book's kernels from
    Fig. 5.9's indexing (thread ``(ty, tx)`` stores ``Mds[ty][tx]``, reads
    ``Mds[ty][k]``, computes ``P[Row][Col]``), here from what the threads
    really did (:func:`own_block`): races by barrier epoch, as
    :mod:`vizmm.analysis.check` finds them, and reads judged against the P
    element each accumulator was stored into.

    Attributes
    ----------
    hazards : ndarray of vizmm.analysis.hazards.HAZARD_DTYPE, (n,)
        One row per (store, read) pair of different threads on one shared
        slot in one barrier epoch, the read being a factor of a term
        (section 5.4): ``RAW`` where the store's phase is not after the
        read's, ``WAR`` where it is. ``array`` is the slot's role (``Mds``:
        the shared array holding M's elements, ``Nds``: N's), ``k`` the
        term's turn among its accumulator's terms of the phase, ``wrong``
        whether that factor is not the one its element's term needs.
    wrong_reads : ndarray of vizmm.analysis.hazards.WRONG_READ_DTYPE, (n,)
        One row per factor that is not the book's factor of the element its
        term was accumulated into; ``expected`` is that factor.
    wrong_p : ndarray of bool, (j, l)
        P elements stored with a value other than ``M @ N`` (relative 1e-6).
    words : dict
        ``{(by, bx, phase, k, ty, tx): "for P_{0,2}: found N_{1,2} = 5 in
        Nds[0][1], its term needs N_{0,2} = 7"}``, a thread's wrong factors
        of one ``k`` joined by "; ".
    """

    hazards: np.ndarray
    wrong_reads: np.ndarray
    wrong_p: np.ndarray
    words: dict


def _describe(tag: int, matrix: str, ncols: int) -> str:
    if tag == A.TAG_ZERO:
        return "0.0 (zero-fill)"
    if tag < 0:
        return "a slot not stored yet"
    r, c = divmod(int(tag), ncols)
    return _sub(matrix, r, c)


def _value(flat: np.ndarray, tag: int) -> str:
    if tag == A.TAG_ZERO:
        return " = 0"
    if 0 <= tag < flat.size:
        return f" = {format_value(float(flat[tag]))}"
    return ""


@per_trace(maxsize=1)
def own_lab(trace: Trace) -> OwnLab:
    """Hazards, wrong reads and wrong P elements of a user kernel's recorded blocks.

    Parameters
    ----------
    trace : Trace
        A recording of a kernel of the user's own with its access log
        (:func:`vizmm.replay.table.own_kernel`); kept with the trace.

    Returns
    -------
    OwnLab

    Raises
    ------
    ValueError
        When the trace has no access log, or its kernel has fewer than three
        global arrays (M, N, P).
    """
    from ..analysis.hazards import HAZARD_DTYPE, WRONG_READ_DTYPE

    j, k_dim, l = trace.shape
    ncols = (k_dim, l)
    flats = (np.asarray(trace.M).ravel(), np.asarray(trace.N).ravel())
    ref = np.asarray(trace.M, np.float64) @ np.asarray(trace.N, np.float64)
    haz: list = []
    bad: list = []
    words: dict = {}
    wrong_p = np.zeros((j, l), bool)
    for by, bx in trace.detail_blocks.tolist():
        own = own_block(trace, (int(by), int(bx)))
        for (ty, tx), terms in own.terms.items():
            for t in terms:
                for a, name in enumerate(("Mds", "Nds")):
                    wrong = bool(t.wrong[a])
                    for wy, wx, wph, wline in t.writers[a]:
                        haz.append(
                            (
                                "RAW" if wph <= t.phase else "WAR",
                                (by, bx),
                                t.phase,
                                wph,
                                name,
                                t.slots[a],
                                (wy, wx),
                                (ty, tx),
                                t.k,
                                wline,
                                t.lines[a],
                                wrong,
                            )
                        )
                    if not wrong:
                        continue
                    bad.append(
                        ((by, bx), t.phase, (ty, tx), t.k, name, t.slots[a])
                        + (t.tags[a], t.book[a], t.factors[a])
                    )
                    m = "MN"[a]
                    said = (
                        f"for {_sub('P', *t.element)}: found "
                        f"{_describe(t.tags[a], m, ncols[a])}{_value(flats[a], t.tags[a])} in "
                        f"{name}[{t.slots[a][0]}][{t.slots[a][1]}], its term needs "
                        f"{_describe(t.book[a], m, ncols[a])}{_value(flats[a], t.book[a])}"
                    )
                    key = (int(by), int(bx), t.phase, t.k, ty, tx)
                    words[key] = f"{words[key]}; {said}" if key in words else said
        for got in own.stores.values():
            for r, c, v in got:
                wrong_p[r, c] |= not np.isclose(v, ref[r, c], rtol=1e-6, atol=0.0)
    hazards = np.array(haz, HAZARD_DTYPE) if haz else np.zeros(0, HAZARD_DTYPE)
    wrong_reads = np.array(bad, WRONG_READ_DTYPE) if bad else np.zeros(0, WRONG_READ_DTYPE)
    return OwnLab(hazards, wrong_reads, wrong_p, words)
