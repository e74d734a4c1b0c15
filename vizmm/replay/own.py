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

Terms are paired as :mod:`vizmm.analysis.check` pairs them: within a phase
``ph`` (the thread's n-th store into Mds), the i-th factor read from a slot
holding an M element with the i-th holding an N element. A term belongs to
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
from ..trace.derived import per_trace
from ..trace.notation import subscript as _sub  # M_{row,col}, written once
from ..trace.units import format_value

__all__ = ["OwnBlock", "OwnLab", "OwnTerm", "own_block", "own_lab"]

# The access log's codes (vizmm.trace.access_log: the writers' and every reader's).
_LOAD, _STORE, _OK, _NO_INDEX, _TAG_ARRAYS = A.LOAD, A.STORE, A.OK, A.NO_INDEX, A.TAG_ARRAYS
_TAG_ZERO, _TAG_NEVER = A.TAG_ZERO, A.TAG_NEVER


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
    names: set = set()
    for node in ast.walk(tree):
        target = None
        if isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
            target = node.target.id
        elif (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and any(
                isinstance(n, ast.Name) and n.id == node.targets[0].id for n in ast.walk(node.value)
            )
        ):
            target = node.targets[0].id
        if target is not None and isinstance(node, ast.stmt):
            names.add(target)
            for ln in range(node.lineno, (node.end_lineno or node.lineno) + 1):
                adds[ln] = target
    stores: dict = {}
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Subscript)
            and isinstance(node.targets[0].value, ast.Name)
            and node.targets[0].value.id == p_name
        ):
            used = {n.id for n in ast.walk(node.value) if isinstance(n, ast.Name)} & names
            if len(used) == 1:
                for ln in range(node.lineno, (node.end_lineno or node.lineno) + 1):
                    stores[ln] = next(iter(used))
    return adds, stores


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
    slot = trace.slot((int(block[0]), int(block[1])))
    log = trace.meta.get("access_log")
    if not isinstance(log, dict) or trace.log_events is None or not trace.log_events.size:
        raise ValueError("this trace has no access log: it records no kernel of your own")
    T = trace.tile_width
    j, k, l = trace.shape
    f = {name: i for i, name in enumerate(log["fields"])}
    space = [a["space"] for a in log["arrays"]]
    glob = [i for i, sp in enumerate(space) if sp == "global"]
    if len(glob) < 3:
        raise ValueError(
            "a matrix multiplication kernel takes M, N and P (three global arrays); "
            f"this one has {len(glob)}"
        )
    m_id, n_id, p_id = glob[0], glob[1], glob[-1]
    ev = trace.log_events[slot, : T * T].astype(np.int64)
    vals = trace.log_values[slot, : T * T]
    cnt = trace.log_counts[slot, : T * T]
    op, arr, flag = ev[..., f["op"]], ev[..., f["arr"]], ev[..., f["flag"]]
    valid = np.arange(ev.shape[1])[None, :] < cnt[:, None]
    shared = np.isin(arr, [i for i, sp in enumerate(space) if sp == "shared"])
    store = valid & (op == _STORE) & (flag == _OK)
    # roles of the shared arrays: the matrix most of their stores copy (Mds: M's)
    role: dict = {}
    src = ev[..., f["src_arr"]]
    for a in np.unique(arr[store & shared]).tolist():
        votes = {m: int((store & (arr == a) & (src == m)).sum()) for m in (m_id, n_id)}
        if max(votes.values()):
            role[a] = max(votes, key=lambda m: (votes[m], -m))
    mds = next((a for a, r in sorted(role.items()) if r == m_id), None)
    # each event's phase: the thread's stores into Mds so far, from 0
    phase_of = np.cumsum(store & (arr == (-99 if mds is None else mds)), axis=1) - 1
    # the block's shared stores by epoch: (array, index, epoch) -> {thread: {tags}}
    stored_at: dict = defaultdict(lambda: defaultdict(set))
    store_info: dict = {}  # (array, index, epoch, thread) -> (its phase, its line), first store
    for t, n in zip(*np.nonzero(store & shared), strict=True):
        e = ev[t, n]
        key = (int(e[f["arr"]]), int(e[f["idx"]]), int(e[f["epoch"]]))
        stored_at[key][int(t)].add(int(e[f["tag"]]))
        store_info.setdefault((*key, int(t)), (int(phase_of[t, n]), int(e[f["line"]])))
    source = str(trace.meta.get("source", ""))
    adds, store_lines = _accumulators(source, log["arrays"][p_id]["name"])
    logged_acc = log.get("accumulator")  # the instrumenter's (meta access_log)
    logged: dict = {}
    terms: dict = {}
    stores: dict = {}
    elements: dict = {}
    for t in range(T * T):
        th = divmod(t, T)
        E = ev[t, : cnt[t]]
        ph = -1
        factors: dict = defaultdict(lambda: ([], []))  # phase -> (M factors, N factors)
        mine: list = []
        for n, e in enumerate(E):
            o, a = int(e[f["op"]]), int(e[f["arr"]])
            if o == _STORE and a == mds and int(e[f["flag"]]) == _OK:
                ph += 1
            if o == _STORE and a == p_id and int(e[f["flag"]]) == _OK:
                r, c = int(e[f["row"]]), int(e[f["col"]])
                if r == _NO_INDEX or c == _NO_INDEX:
                    r, c = divmod(int(e[f["idx"]]), l)
                mine.append((r, c, float(vals[t, n, 0]), int(e[f["line"]])))
                continue
            if o != _LOAD or a < 0 or space[a] != "shared" or int(e[f["flag"]]) != _OK:
                continue
            tag = int(e[f["tag"]])
            side = (tag % _TAG_ARRAYS) if tag >= 0 else role.get(a)
            if side not in (m_id, n_id) or ph < 0:
                continue
            el = tag // _TAG_ARRAYS if tag >= 0 else tag
            r, c = int(e[f["row"]]), int(e[f["col"]])
            if r == _NO_INDEX or c == _NO_INDEX:
                r, c = divmod(int(e[f["idx"]]), T)
            others = {
                u: tags
                for u, tags in stored_at.get((a, int(e[f["idx"]]), int(e[f["epoch"]])), {}).items()
                if u != t
            }
            raced = bool(others)
            after = raced and any(tag in tags for tags in others.values())
            key = (a, int(e[f["idx"]]), int(e[f["epoch"]]))
            writers = tuple((*divmod(u, T), *store_info[(*key, u)]) for u in sorted(others))
            read = (el, float(vals[t, n, 0]), (r, c), raced, after, int(e[f["line"]]), writers)
            factors[ph][0 if side == m_id else 1].append(read)
        stores[th] = tuple((r, c, v) for r, c, v, _ in mine if 0 <= r < j and 0 <= c < l)
        # one accumulator per line's target; a line the source does not name is its own
        pairs = [
            (p, i, fm, fn)
            for p in sorted(factors)
            for i, (fm, fn) in enumerate(zip(*factors[p], strict=False))
        ]
        acc_of = [adds.get(fn[5], adds.get(fm[5], f"line {fn[5]}")) for _p, _i, fm, fn in pairs]
        accs = list(dict.fromkeys(acc_of))
        real = [x for x in mine if 0 <= x[0] < j and 0 <= x[1] < l]
        element: dict = {}
        for order, acc in enumerate(accs):
            stored = [x for x in real if store_lines.get(x[3]) == acc]
            if stored:
                element[acc] = stored[0][:2]
            elif len(accs) == len(real):  # not named in the source: the stores in order
                element[acc] = real[order][:2]
        if len(accs) == 1:
            # one accumulator: the one element its terms are all of, else the one stored
            tg = np.array([(fm[0], fn[0]) for _p, _i, fm, fn in pairs], np.int64).reshape(-1, 2)
            ok = tg[(tg[:, 0] >= 0) & (tg[:, 1] >= 0)]
            rows, cols = set((ok[:, 0] // k).tolist()), set((ok[:, 1] % l).tolist())
            if len(rows) == 1 and len(cols) == 1:
                (r,), (c,) = rows, cols
                whole = {(r * k + q, q * l + c) for q in range(k)}
                if {(int(a), int(b)) for a, b in ok} == whole and len(ok) == k:
                    element[accs[0]] = (r, c)
        book_el = (th[0] + int(block[0]) * T, th[1] + int(block[1]) * T)
        out = []
        turn: dict = defaultdict(int)  # (phase, accumulator) -> its terms so far
        for (p, _i, fm, fn), acc in zip(pairs, acc_of, strict=True):
            r, c = element.get(acc, real[0][:2] if real else book_el)
            kk = turn[(p, acc)]
            turn[(p, acc)] += 1
            q = p * T + kk
            book = (
                r * k + q if r < j and q < k else _TAG_ZERO,
                q * l + c if q < k and c < l else _TAG_ZERO,
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
        terms[th] = tuple(out)
        elements[th] = tuple(dict.fromkeys((int(x.element[0]), int(x.element[1])) for x in out))
        acc_el = element.get(logged_acc) if logged_acc is not None else None
        if acc_el is None and logged_acc is not None and accs == [logged_acc] and elements[th]:
            acc_el = elements[th][0]
        logged[th] = None if acc_el is None else (int(acc_el[0]), int(acc_el[1]))
    return OwnBlock(terms, stores, elements, logged)


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
    if tag == _TAG_ZERO:
        return "0.0 (zero-fill)"
    if tag < 0:
        return "a slot not stored yet"
    r, c = divmod(int(tag), ncols)
    return _sub(matrix, r, c)


def _value(flat: np.ndarray, tag: int) -> str:
    if tag == _TAG_ZERO:
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
