"""The barrier lab's happens-before analysis over shared memory (PMPP 4th ed., Section 5.4).

The tiled kernels (Fig. 5.9, Fig. 5.13) have two ``__syncthreads()`` per
phase ``ph``. Barrier 1, after the loads, orders a read-after-write (true)
dependence: every thread must have written its ``Mds[ty][tx]`` and
``Nds[ty][tx]`` before any thread reads the tile. Barrier 2, after the k
loop, orders a write-after-read (false) dependence: every thread must have
finished reading the tile before any thread overwrites it with the next one.

Per thread the kernel runs, phase after phase::

    W(ph): write Mds[ty][tx], Nds[ty][tx]     (line "Mds[ty, tx] = ...")
    barrier 1                                  (if kept)
    R(ph, k), k = 0..T-1: read Mds[ty][k], Nds[k][tx]   (line "Pvalue += ...")
    barrier 2                                  (if kept)

A ``__syncthreads()`` orders everything before it in every thread of the
block before everything after it, so an access's *epoch* is the number of
barriers the thread passed before it. Two accesses to one slot by different
threads, at least one a write, are unordered -- a hazard -- exactly when
they share an epoch. The hazard is a read-after-write (``"RAW"``) when the
book's kernel does the write first (the write's phase is not after the
read's: the read may see the old element or the new one) and a
write-after-read (``"WAR"``) when the book's kernel does the read first (the
write of a later phase may clobber the slot before the read). Each slot is
written by one thread only, so there are no write-after-write hazards.

This is a property of the program and the barriers kept, not of one run:
the analysis lists the same hazards for every schedule, including a run
that happened to read every right element ("passed by luck"). What one run
actually did comes from the recorded reads (``Trace.shared_reads``: the tag
of the element each thread found in the slot): :func:`wrong_reads` lists the
reads that returned another element than the book's kernel reads, and
:func:`wrong_p` the P elements that came out different.
"""

from __future__ import annotations

import dataclasses
import re

import numpy as np

from ..trace.kernels import BARRIER_KERNELS

__all__ = [
    "AHEAD_DTYPE",
    "HAZARD_DTYPE",
    "WRONG_READ_DTYPE",
    "TAG_ZERO_FILL",
    "TAG_NEVER_WRITTEN",
    "TAG_NOT_RECORDED",
    "HAZARD_ROW_DTYPE",
    "BarrierReport",
    "HazardList",
    "analyse",
    "barriers_kept",
    "book_p",
    "book_reads",
    "epochs",
    "expected_tags",
    "found_phases",
    "hazards",
    "ran_ahead",
    "wrong_read_mask",
    "wrong_reads",
    "wrong_p",
    "describe_tag",
    "tag_value",
]

# Tags of the shared slots (the same values as vizmm_kernels.codes; this
# module does not import the kernels).
TAG_ZERO_FILL = -1  #: the slot holds the boundary check's 0.0 (Fig. 5.13)
TAG_NEVER_WRITTEN = -2  #: no thread of the block had written the slot yet
TAG_NOT_RECORDED = -3  #: the read was not recorded

ARRAYS = ("Mds", "Nds")

#: One row per hazard (a structured dtype; fields named as in the book).
HAZARD_DTYPE = np.dtype(
    [
        ("kind", "U3"),  # 'RAW' or 'WAR'
        ("block", np.int32, (2,)),  # (by, bx)
        ("phase", np.int32),  # the reader's phase ph
        ("write_phase", np.int32),  # the phase of the conflicting write
        ("array", "U3"),  # 'Mds' or 'Nds'
        ("slot", np.int32, (2,)),  # (row, col) of the shared slot
        ("writer", np.int32, (2,)),  # (ty, tx) of the writing thread
        ("reader", np.int32, (2,)),  # (ty, tx) of the reading thread
        ("k", np.int32),  # the reader's k
        ("write_line", np.int32),  # 1-based line of meta['source'] (-1: not found)
        ("read_line", np.int32),  # 1-based line of meta['source'] (-1: not found)
        ("wrong", np.bool_),  # this read returned a wrong element in this run
    ]
)

#: One row per recorded read that returned another element than the book's kernel reads.
WRONG_READ_DTYPE = np.dtype(
    [
        ("block", np.int32, (2,)),
        ("phase", np.int32),
        ("thread", np.int32, (2,)),  # (ty, tx) of the reader
        ("k", np.int32),
        ("array", "U3"),
        ("slot", np.int32, (2,)),
        ("tag", np.int32),  # what it read: linear index into M / N, or a TAG_* sentinel
        ("expected", np.int32),  # what the book's kernel reads there
        ("value", np.float32),  # the value it read
    ]
)


#: One row per wrong read, saying which thread ran ahead of which (see :func:`ran_ahead`).
AHEAD_DTYPE = np.dtype(
    [
        ("kind", "U3"),  # 'RAW': the reader ran ahead; 'WAR': the writer ran ahead
        ("block", np.int32, (2,)),  # (by, bx)
        ("phase", np.int32),  # the reader's phase ph
        ("k", np.int32),  # the reader's k
        ("array", "U3"),  # 'Mds' or 'Nds'
        ("slot", np.int32, (2,)),  # (row, col) of the shared slot
        ("reader", np.int32, (2,)),  # (ty, tx) of the reading thread
        ("writer", np.int32, (2,)),  # (ty, tx) of the thread that stores into the slot
        ("ahead", np.int32, (2,)),  # (ty, tx) of the thread that ran ahead
        ("behind", np.int32, (2,)),  # (ty, tx) of the other one
        ("tag", np.int32),  # what the read found (linear index or TAG_*)
        ("found_phase", np.int32),  # the phase whose store it found; -1: never written
        ("expected", np.int32),  # what the book's kernel finds there
        ("expected_phase", np.int32),  # the phase whose store the book's kernel finds; -1: none
    ]
)


def barriers_kept(trace) -> tuple[bool, bool]:
    """``(barrier 1 kept, barrier 2 kept)`` of a trace (old traces keep both).

    Parameters
    ----------
    trace : Trace
        Any trace; meta ``drop_barrier`` lists the barriers removed (1, 2).
    """
    drop = tuple(trace.meta.get("drop_barrier", ()) or ())
    return 1 not in drop, 2 not in drop


def epochs(n_phases: int, kept: tuple[bool, bool]) -> tuple[np.ndarray, np.ndarray]:
    """Epoch of each phase's writes and of its reads: barriers passed before them.

    Returns two int arrays of shape ``(n_phases,)``: ``W(ph)`` comes after
    ``ph * (b1 + b2)`` barriers, ``R(ph, k)`` after ``ph * (b1 + b2) + b1``
    (``b1``, ``b2`` are 1 where the barrier is kept).

    Parameters
    ----------
    n_phases : int
        The number of phases, ``ceil(Width / TILE_WIDTH)``.
    kept : tuple of (bool, bool)
        Barrier 1 (after the loads) and barrier 2 (after the k loop) kept, as
        :func:`barriers_kept` gives them.
    """
    b1, b2 = (int(bool(b)) for b in kept)
    ph = np.arange(n_phases)
    return ph * (b1 + b2), ph * (b1 + b2) + b1


def _lines(source: str) -> dict:
    out = {}
    pats = {
        "Mds": r"Mds\[ty, tx\] = M\[",
        "Nds": r"Nds\[ty, tx\] = N\[",
        "Mds0": r"Mds\[ty, tx\] = float32\(0\)",
        "Nds0": r"Nds\[ty, tx\] = float32\(0\)",
        "read": r"Pvalue \+=",
    }
    for i, line in enumerate(source.splitlines()):
        for key, pat in pats.items():
            if key not in out and re.search(pat, line):
                out[key] = i + 1
    return out


def _written(trace) -> np.ndarray:
    """Bool ``(nd, nph, 2, T, T)``: thread (ty, tx) stored into its slot of array a in phase ph."""
    kinds = trace.loads[..., [0, 3]]  # (nd, nph, T, T, 2): M kind, N kind
    # NOT_RECORDED (0) and OUT_OF_ALLOCATION (4) store nothing.
    done = (kinds != 0) & (kinds != 4)
    return np.moveaxis(done, -1, 2)


def _write_tags(trace) -> np.ndarray:
    """Int ``(nd, nph, 2, T, T)``: the tag each thread stored into its slot (where written)."""
    _, k, l = trace.shape
    ld = trace.loads.astype(np.int64)
    out = np.empty(ld.shape[:-1] + (2,), np.int64)
    for a, (kc, rc, cc, ncols) in enumerate(((0, 1, 2, k), (3, 4, 5, l))):
        kind = ld[..., kc]
        lin = ld[..., rc] * ncols + ld[..., cc]
        out[..., a] = np.where(kind == 2, TAG_ZERO_FILL, lin)
    return np.moveaxis(out, -1, 2)


def expected_tags(trace) -> np.ndarray:
    """What each slot holds when the book's kernel (both barriers) reads it.

    Returns int64 ``(nd, nph, 2, T, T)``: per detailed block, phase, array
    (0 Mds, 1 Nds) and slot, the tag written in this phase, or the one kept
    from an earlier phase where this phase stored nothing (an
    out-of-allocation load of Fig. 5.9), or ``TAG_NEVER_WRITTEN``.

    Parameters
    ----------
    trace : Trace
        A barrier-lab trace (meta ``reads_recorded``).
    """
    written = _written(trace)
    tags = _write_tags(trace)
    out = np.empty(tags.shape, np.int64)
    prev = np.full(tags.shape[:1] + tags.shape[2:], TAG_NEVER_WRITTEN, np.int64)
    for ph in range(tags.shape[1]):
        prev = np.where(written[:, ph], tags[:, ph], prev)
        out[:, ph] = prev
    return out


def book_reads(trace) -> np.ndarray:
    """What every k-loop read of the book's kernel finds: int64 ``(nd, nph, T, T, T, 2)``.

    Indexed like ``Trace.shared_reads`` (block slot, phase, ty, tx, k, array):
    the tag of the element in ``Mds[ty][k]`` / ``Nds[k][tx]`` with both
    barriers (:func:`expected_tags`).

    Parameters
    ----------
    trace : Trace
        A barrier-lab trace (meta ``reads_recorded``).
    """
    exp = expected_tags(trace)  # (nd, nph, 2, T, T)
    m = exp[:, :, 0]  # Mds[ty][k]: (nd, nph, ty, k)
    n = exp[:, :, 1]  # Nds[k][tx]: (nd, nph, k, tx)
    T = trace.tile_width
    out = np.empty(exp.shape[:2] + (T, T, T, 2), np.int64)
    out[..., 0] = m[:, :, :, None, :]  # broadcast over tx
    out[..., 1] = np.moveaxis(n, 2, 3)[:, :, None, :, :]  # (nd, nph, 1, tx, k)
    return out


def _book_only(trace, what: str) -> None:
    """Refuse a kernel of the user's own: Fig. 5.9's indexing is not its indexing.

    Raises
    ------
    ValueError
        When ``trace`` records a kernel of the user's own (meta ``user_kernel``).
    """
    name = getattr(trace, "user_kernel", None)
    if name is not None:
        raise ValueError(
            f"{what} judges reads by the book's kernels' indexing (Fig. 5.9, Fig. 5.13), "
            f"and this trace records your own kernel {name!r}: its races and wrong terms "
            "come from its access log (vizmm.check(kernel).findings, or "
            "vizmm.replay.own.own_lab(trace))"
        )


def hazards(trace) -> np.ndarray:
    """Every RAW and WAR hazard on Mds / Nds in the detailed blocks of ``trace``.

    Parameters
    ----------
    trace : vizmm.trace.Trace
        A recording of 'tiled' (Fig. 5.9) or 'boundary' (Fig. 5.13); other
        kernels use no shared memory and have no hazards. Barriers kept or
        removed are read from ``meta['drop_barrier']`` (absent: both kept).

    Returns
    -------
    ndarray of HAZARD_DTYPE, (n,)
        One row per (write, read) pair of different threads on one slot in
        one epoch, sorted by block, reader phase, array, reader, k. ``wrong``
        is True where the recorded read returned another element than the
        book's kernel reads (always False without read records). Empty with
        both barriers kept.

    Raises
    ------
    ValueError
        For a kernel of the user's own (``Trace.user_kernel``): its hazards
        are read from its access log (:func:`vizmm.replay.own.own_lab`).
    """
    _book_only(trace, "vizmm.hazards")
    if trace.kernel not in BARRIER_KERNELS or trace.n_phases == 0:
        return np.zeros(0, HAZARD_DTYPE)
    kept = barriers_kept(trace)
    ew, er = epochs(trace.n_phases, kept)
    written = _written(trace)  # (nd, nph, 2, T, T)
    T = trace.tile_width
    nd, nph = written.shape[:2]
    lines = _lines(trace.meta.get("source", ""))
    wrong_mask = _wrong_mask(trace)  # (nd, nph, ty, tx, k, 2) or None
    zero_kind = np.moveaxis(trace.loads[..., [0, 3]], -1, 2) == 2  # (nd, nph, 2, T, T)
    ty, tx, kk = np.meshgrid(np.arange(T), np.arange(T), np.arange(T), indexing="ij")
    chunks = []
    for a, name in enumerate(ARRAYS):
        # The slot thread (ty, tx) reads at k, and who writes it.
        srow, scol = (ty, kk) if a == 0 else (kk, tx)
        other = (srow != ty) | (scol != tx)  # writer (srow, scol) is not the reader
        for pr in range(nph):
            for pw in np.nonzero(ew == er[pr])[0]:
                w = written[:, pw, a][:, srow, scol] & other  # (nd, ty, tx, k)
                s, rty, rtx, rk = np.nonzero(w)
                if not len(s):
                    continue
                rows = np.zeros(len(s), HAZARD_DTYPE)
                rows["kind"] = "RAW" if pw <= pr else "WAR"
                rows["block"] = trace.detail_blocks[s]
                rows["phase"] = pr
                rows["write_phase"] = pw
                rows["array"] = name
                slot = np.stack([srow[rty, rtx, rk], scol[rty, rtx, rk]], axis=1)
                rows["slot"] = slot
                rows["writer"] = slot
                rows["reader"] = np.stack([rty, rtx], axis=1)
                rows["k"] = rk
                zero = zero_kind[s, pw, a, slot[:, 0], slot[:, 1]]
                rows["write_line"] = np.where(zero, lines.get(f"{name}0", -1), lines.get(name, -1))
                rows["read_line"] = lines.get("read", -1)
                if wrong_mask is not None:
                    rows["wrong"] = wrong_mask[s, pr, rty, rtx, rk, a]
                chunks.append((s, pr, a, rty, rtx, rk, pw, rows))
    if not chunks:
        return np.zeros(0, HAZARD_DTYPE)
    rows = np.concatenate([c[-1] for c in chunks])
    key = [np.concatenate([np.broadcast_to(c[i], c[0].shape) for c in chunks]) for i in range(7)]
    order = np.lexsort(tuple(reversed(key)))
    return rows[order]


def _store_phase(trace) -> np.ndarray:
    """Int ``(nd, nph, 2, T, T)``: the last phase ``<= ph`` storing into each slot (-1: none)."""
    written = _written(trace)
    out = np.empty(written.shape, np.int64)
    prev = np.full(written.shape[:1] + written.shape[2:], -1, np.int64)
    for ph in range(written.shape[1]):
        prev = np.where(written[:, ph], ph, prev)
        out[:, ph] = prev
    return out


def _per_read(slots: np.ndarray) -> np.ndarray:
    """Gather a per-slot array ``(nd, P, 2, T, T)`` onto the k-loop reads: ``(nd, P, T, T, T, 2)``.

    Thread (ty, tx) reads ``Mds[ty][k]`` and ``Nds[k][tx]`` (Fig. 5.9 line 24).
    """
    T = slots.shape[-1]
    ty, tx, kk = np.meshgrid(np.arange(T), np.arange(T), np.arange(T), indexing="ij")
    return np.stack([slots[:, :, 0][:, :, ty, kk], slots[:, :, 1][:, :, kk, tx]], axis=-1)


def found_phases(trace) -> np.ndarray | None:
    """The phase whose store each recorded k-loop read found in its slot.

    Reads carry no time, but the tag a thread found tells whose store it
    saw: the slot's store of an earlier phase (or none: the slot had not been
    written yet) means the reader ran ahead of the slot's writer; a store of a
    later phase means the writer ran ahead into the next phase and overwrote
    the slot before the read (Section 5.4: barrier 1 orders the first,
    barrier 2 the second).

    Parameters
    ----------
    trace : vizmm.trace.Trace
        A barrier-lab recording of 'tiled' (Fig. 5.9) or 'boundary' (Fig. 5.13).

    Returns
    -------
    ndarray of int64, (nd, nph, T, T, T, 2), or None
        Indexed like ``Trace.shared_reads`` (block slot, phase, ty, tx, k,
        array): the phase of the slot's store whose tag the read found; -1
        where it found ``TAG_NEVER_WRITTEN``; -2 where no store of the block
        matches (not recorded). A tag stored in several phases (the
        zero-fill's 0.0) is given the phase nearest the read's, the earlier
        one on a tie. None when the trace holds no read records.
    """
    reads = getattr(trace, "shared_reads", None)
    if reads is None or reads.size == 0:
        return None
    reads = reads.astype(np.int64)
    stored = _per_read(_written(trace))  # (nd, nph_w, T, T, T, 2)
    tags = _per_read(_write_tags(trace))
    nph = reads.shape[1]
    pr = np.arange(nph)[None, :, None, None, None, None]
    best = np.full(reads.shape, np.iinfo(np.int64).max, np.int64)
    found = np.full(reads.shape, -2, np.int64)
    for pw in range(nph):
        match = stored[:, pw : pw + 1] & (tags[:, pw : pw + 1] == reads)
        cost = 2 * np.abs(pw - pr) + (pw > pr)
        better = match & (cost < best)
        best = np.where(better, cost, best)
        found = np.where(better, pw, found)
    found[reads == TAG_NEVER_WRITTEN] = -1
    return found


def ran_ahead(trace) -> np.ndarray:
    """Who ran ahead of whom at every wrong read of this run (barrier lab, Section 5.4).

    A read that found the store of an earlier phase, or a slot not written
    yet, shows that the reader ran ahead of the slot's writer (``"RAW"``:
    barrier 1 would have held it back). A read that found the store of a
    later phase shows that the writer ran ahead into the next phase and
    overwrote the slot while the reader still needed it (``"WAR"``: barrier 2
    would have held the writer back). Computed from the recorded tags alone
    (:func:`found_phases`), not from any clock.

    Parameters
    ----------
    trace : vizmm.trace.Trace

    Returns
    -------
    ndarray of AHEAD_DTYPE, (n,)
        One row per wrong read (:func:`wrong_reads`) whose tag a store of
        the block explains, in the same order. ``writer`` is the thread that
        stores into the slot (thread (row, col) stores ``Mds[row][col]`` in
        Fig. 5.9 / 5.13); ``ahead`` is the reader for ``"RAW"`` and the
        writer for ``"WAR"``, ``behind`` the other. ``found_phase`` is -1
        for a slot not written yet; ``expected_phase`` the phase of the store
        the book's kernel reads (-1: none). Empty without read records.

    Raises
    ------
    ValueError
        For a kernel of the user's own: its barrier lab, who ran ahead included, is
        :func:`vizmm.replay.own.own_lab`'s.
    """
    _book_only(trace, "ran_ahead")
    mask = _wrong_mask(trace)
    found = found_phases(trace)
    if mask is None or found is None:
        return np.zeros(0, AHEAD_DTYPE)
    mask = mask & (found != -2)
    s, ph, rty, rtx, rk, a = np.nonzero(mask)
    fp = found[s, ph, rty, rtx, rk, a]
    rows = np.zeros(len(s), AHEAD_DTYPE)
    raw = fp < ph
    rows["kind"] = np.where(raw, "RAW", "WAR")
    rows["block"] = trace.detail_blocks[s]
    rows["phase"] = ph
    rows["k"] = rk
    rows["array"] = np.asarray(ARRAYS)[a]
    slot = np.where((a == 0)[:, None], np.stack([rty, rk], axis=1), np.stack([rk, rtx], axis=1))
    reader = np.stack([rty, rtx], axis=1)
    rows["slot"] = slot
    rows["reader"] = reader
    rows["writer"] = slot
    rows["ahead"] = np.where(raw[:, None], reader, slot)
    rows["behind"] = np.where(raw[:, None], slot, reader)
    rows["tag"] = trace.shared_reads[s, ph, rty, rtx, rk, a]
    rows["found_phase"] = fp
    rows["expected"] = book_reads(trace)[s, ph, rty, rtx, rk, a]
    rows["expected_phase"] = _per_read(_store_phase(trace))[s, ph, rty, rtx, rk, a]
    return rows


#: One row of :class:`HazardList`: the hazards of one reading thread at one phase and k.
HAZARD_ROW_DTYPE = np.dtype(
    [
        ("kind", "U3"),  # 'RAW' or 'WAR'
        ("block", np.int32, (2,)),  # (by, bx)
        ("phase", np.int32),  # the reader's phase ph
        ("k", np.int32),  # the reader's k
        ("reader", np.int32, (2,)),  # (ty, tx)
        ("count", np.int32),  # hazards in the row: (slot, writer) pairs
        ("wrong", np.bool_),  # a read of the row returned a wrong element in this run
    ]
)


class HazardList:
    """Every hazard of a trace, one row per kind, reading thread, phase and k.

    The list a person reads: the rows of :func:`hazards` grouped by what a
    replay step shows (a block, a phase, a ``k``, a reading thread), in step
    order. Filters return row numbers, so that a view can show any slice of
    millions of hazards without copying them.

    Parameters
    ----------
    hazards : ndarray of HAZARD_DTYPE
        From :func:`hazards`.

    Attributes
    ----------
    rows : ndarray of HAZARD_ROW_DTYPE, (n,)
        Sorted by block (by, bx), phase, k, reader (ty, tx), kind.
    blocks : list of (by, bx)
        The blocks that have hazards, in order.
    """

    def __init__(self, hazards: np.ndarray):
        h = hazards
        kind = (h["kind"] == "WAR").astype(np.int8)
        order = np.lexsort(
            (
                kind,
                h["reader"][:, 1],
                h["reader"][:, 0],
                h["k"],
                h["phase"],
                h["block"][:, 1],
                h["block"][:, 0],
            )
        )
        h = h[order]
        key = np.column_stack([h["block"], h["phase"], h["k"], h["reader"], kind[order]]).astype(
            np.int64
        )
        new = np.ones(len(h), bool)
        new[1:] = (key[1:] != key[:-1]).any(axis=1)
        self._start = np.flatnonzero(new)
        rows = np.zeros(len(self._start), HAZARD_ROW_DTYPE)
        first = h[self._start]
        for name in ("kind", "block", "phase", "k", "reader"):
            rows[name] = first[name]
        rows["count"] = np.diff(np.append(self._start, len(h)))
        rows["wrong"] = np.logical_or.reduceat(h["wrong"], self._start) if len(h) else False
        self.rows = rows
        self.blocks = sorted({(int(a), int(b)) for a, b in rows["block"].tolist()})
        # What describe() names, kept small: array (0 Mds, 1 Nds), slot and writer.
        self._array = (h["array"] == "Nds").astype(np.int8)
        self._slot = h["slot"].astype(np.int16)
        self._writer = h["writer"].astype(np.int16)

    def __len__(self) -> int:
        return len(self.rows)

    def select(
        self,
        kind: str | None = None,
        block: tuple[int, int] | None = None,
        phase: int | None = None,
        wrong: bool = False,
    ) -> np.ndarray:
        """Row numbers (int64, ascending) of the rows that pass every filter given.

        Parameters
        ----------
        kind : {'RAW', 'WAR'}, optional
        block : (by, bx), optional
        phase : int, optional
            The reader's phase.
        wrong : bool
            Only rows with a read that returned a wrong element in this run.
        """
        r = self.rows
        keep = np.ones(len(r), bool)
        if kind is not None:
            keep &= r["kind"] == kind
        if block is not None:
            keep &= (r["block"][:, 0] == block[0]) & (r["block"][:, 1] == block[1])
        if phase is not None:
            keep &= r["phase"] == phase
        if wrong:
            keep &= r["wrong"]
        return np.flatnonzero(keep)

    def counts(self, index: np.ndarray | slice) -> dict:
        """``{'RAW': hazards, 'WAR': hazards}`` in the rows ``index`` ((slot, writer) pairs).

        Parameters
        ----------
        index : ndarray of int or slice
            Row numbers of :attr:`rows`, e.g. from :meth:`select`; ``slice(None)``
            for every row.
        """
        r = self.rows[index]
        return {k: int(r["count"][r["kind"] == k].sum()) for k in ("RAW", "WAR")}

    def describe(self, i: int) -> tuple[str, str]:
        """The slots row ``i`` reads and the threads writing them: ``('Mds[0][1]', '(0,1)')``.

        Parameters
        ----------
        i : int
            A row number of :attr:`rows`.
        """
        a, b = int(self._start[i]), int(self._start[i]) + int(self.rows["count"][i])
        reads = sorted(
            {
                f"{ARRAYS[int(x)]}[{r}][{c}]"
                for x, (r, c) in zip(self._array[a:b], self._slot[a:b].tolist(), strict=True)
            }
        )
        writers = sorted({f"({r},{c})" for r, c in self._writer[a:b].tolist()})
        return ", ".join(reads), ", ".join(writers)


def wrong_read_mask(trace) -> np.ndarray | None:
    """Bool ``(nd, nph, T, T, T, 2)``: recorded reads that found another element.

    Compared with :func:`book_reads`; None when the trace holds no read records.

    Parameters
    ----------
    trace : Trace
        Any trace; one without read records gives None.
    """
    return _wrong_mask(trace)


def _wrong_mask(trace) -> np.ndarray | None:
    reads = getattr(trace, "shared_reads", None)
    if reads is None or reads.size == 0:
        return None
    return (reads != TAG_NOT_RECORDED) & (reads != book_reads(trace))


def wrong_reads(trace) -> np.ndarray:
    """The recorded reads that returned another element than the book's kernel reads.

    Parameters
    ----------
    trace : Trace
        Any trace; one without read records gives an empty array.

    Returns
    -------
    ndarray of WRONG_READ_DTYPE, (n,)
        Sorted by block, phase, reader (ty, tx), k, array. ``tag`` is what the
        thread found beside the slot (the linear index of an M / N element,
        ``TAG_ZERO_FILL`` or ``TAG_NEVER_WRITTEN``), ``expected`` what the
        book's kernel finds there. Empty when the trace holds no read
        records (recorded without the barrier lab).

    Raises
    ------
    ValueError
        For a kernel of the user's own, whose reads Fig. 5.9's indexing cannot judge
        (:func:`vizmm.replay.own.own_lab` does).
    """
    _book_only(trace, "wrong_reads")
    mask = _wrong_mask(trace)
    if mask is None:
        return np.zeros(0, WRONG_READ_DTYPE)
    exp = book_reads(trace)
    s, ph, rty, rtx, rk, a = np.nonzero(mask)
    rows = np.zeros(len(s), WRONG_READ_DTYPE)
    rows["block"] = trace.detail_blocks[s]
    rows["phase"] = ph
    rows["thread"] = np.stack([rty, rtx], axis=1)
    rows["k"] = rk
    rows["array"] = np.asarray(ARRAYS)[a]
    rows["slot"] = np.where(
        (a == 0)[:, None], np.stack([rty, rk], axis=1), np.stack([rk, rtx], axis=1)
    )
    rows["tag"] = trace.shared_reads[s, ph, rty, rtx, rk, a]
    rows["expected"] = exp[s, ph, rty, rtx, rk, a]
    rows["value"] = trace.read_values[s, ph, rty, rtx, rk, a]
    return rows


def book_p(trace) -> np.ndarray:
    """P of the detailed blocks as the book's kernel computes it, in float32.

    Sums, in the kernel's order (phase, then k), the products of the values
    the book's kernel reads (from the expected tags: M / N elements, 0.0 for
    a zero-fill). Returns float32 ``(nd, T, T)``; NaN where a thread would
    read a never-written slot.

    Parameters
    ----------
    trace : Trace
        A trace with detailed blocks.
    """
    _, k, l = trace.shape
    exp = book_reads(trace)  # (nd, nph, ty, tx, k, 2)
    mflat = trace.M.ravel()
    nflat = trace.N.ravel()

    def values(tags, flat):
        v = np.where(tags >= 0, flat[np.clip(tags, 0, flat.size - 1)], np.float32(0))
        return np.where(tags == TAG_NEVER_WRITTEN, np.float32(np.nan), v).astype(np.float32)

    mv = values(exp[..., 0], mflat)
    nv = values(exp[..., 1], nflat)
    nd, nph, T = exp.shape[0], exp.shape[1], trace.tile_width
    acc = np.zeros((nd, T, T), np.float32)
    for ph in range(nph):
        for kk in range(T):
            acc = (acc + mv[:, ph, :, :, kk] * nv[:, ph, :, :, kk]).astype(np.float32)
    return acc


def wrong_p(trace) -> np.ndarray:
    """Bool ``(j, l)``: P elements of the detailed blocks that differ from the book's kernel.

    An element is wrong when the thread stored it and its value differs from
    :func:`book_p` (both NaN counts as equal). Elements outside the detailed
    blocks, and elements no thread stored, are False.

    Parameters
    ----------
    trace : Trace
        A trace with detailed blocks.

    Raises
    ------
    ValueError
        For a kernel of the user's own (:func:`vizmm.replay.own.own_lab`).
    """
    _book_only(trace, "wrong_p")
    j, _, l = trace.shape
    T = trace.tile_width
    out = np.zeros((j, l), bool)
    if trace.kernel not in BARRIER_KERNELS or trace.n_phases == 0:
        return out
    ref = book_p(trace)
    for s, (by, bx) in enumerate(trace.detail_blocks.tolist()):
        r0, c0 = by * T, bx * T
        r1, c1 = min(r0 + T, j), min(c0 + T, l)
        got = trace.P[r0:r1, c0:c1]
        want = ref[s, : r1 - r0, : c1 - c0]
        stored = trace.p_write[s, : r1 - r0, : c1 - c0] == 1
        same = (got == want) | (np.isnan(got) & np.isnan(want))
        out[r0:r1, c0:c1] = stored & ~same
    return out


def describe_tag(tag: int, array: str, ncols: int, phase: int | None = None) -> str:
    """A tag in the book's words: ``'M_{0,2}'``, ``'0.0 (zero-fill)'``, ``'never written'``.

    Parameters
    ----------
    tag : int
        A tag of ``shared_reads``: the linear index ``row * ncols + col`` of an M
        or N element, ``TAG_ZERO_FILL`` (-1), ``TAG_NEVER_WRITTEN`` (-2) or
        another negative value (not recorded).
    array : {'Mds', 'Nds'}
        The shared array the slot belongs to (M's elements go to Mds, N's to Nds).
    ncols : int
        Columns of that matrix (k for M, l for N).
    phase : int, optional
        The phase ``ph`` the element was loaded in, added to the words.
    """
    tag = int(tag)
    if tag == TAG_ZERO_FILL:
        return "0.0 (zero-fill)"
    if tag == TAG_NEVER_WRITTEN:
        return "a slot not written yet"
    if tag < 0:
        return "not recorded"
    row, col = divmod(tag, ncols)
    name = "M" if array == "Mds" else "N"
    return f"{name}_{{{row},{col}}}" + (f" (phase {phase})" if phase is not None else "")


def tag_value(trace, tag: int, array: str) -> float:
    """The value of the element a tag names: what a thread finds in the slot.

    Parameters
    ----------
    trace : Trace
    tag : int
        A shared slot's tag: the linear index of an M (``array='Mds'``) or N
        (``'Nds'``) element, or a ``TAG_*`` sentinel.
    array : {'Mds', 'Nds'}

    Returns
    -------
    float
        The element's value in M or N; 0.0 for ``TAG_ZERO_FILL`` (Fig.
        5.13's boundary check); NaN for a slot not written yet or a read
        not recorded (no value to name).

    Raises
    ------
    ValueError
        For an array other than 'Mds' and 'Nds'.
    """
    if array not in ARRAYS:
        raise ValueError(f"array must be 'Mds' or 'Nds', got {array!r}")
    tag = int(tag)
    if tag == TAG_ZERO_FILL:
        return 0.0
    flat = (trace.M if array == "Mds" else trace.N).ravel()
    if tag < 0 or tag >= flat.size:
        return float("nan")
    return float(flat[tag])


@dataclasses.dataclass(frozen=True)
class BarrierReport:
    """The barrier lab's findings on one trace.

    Attributes
    ----------
    kept : (bool, bool)
        Barrier 1 (after the loads) and barrier 2 (after the k loop) kept.
    hazards : ndarray of HAZARD_DTYPE
    wrong_reads : ndarray of WRONG_READ_DTYPE
    wrong_p : ndarray of bool, (j, l)
    has_reads : bool
        Whether the trace recorded the reads (else ``wrong_reads`` is empty).
    """

    kept: tuple[bool, bool]
    hazards: np.ndarray
    wrong_reads: np.ndarray
    wrong_p: np.ndarray
    has_reads: bool

    def counts(self) -> dict:
        """``{(kind, (by, bx)): number of hazards}``, plus ``('wrong reads', block)``."""
        out: dict = {}
        for row in self.hazards:
            key = (str(row["kind"]), tuple(int(v) for v in row["block"]))
            out[key] = out.get(key, 0) + 1
        for row in self.wrong_reads:
            key = ("wrong reads", tuple(int(v) for v in row["block"]))
            out[key] = out.get(key, 0) + 1
        return out

    def summary(self) -> str:
        """A few lines for people."""
        kinds = {k: int((self.hazards["kind"] == k).sum()) for k in ("RAW", "WAR")}
        lines = [
            "barriers: "
            + ", ".join(
                f"{i} {'kept' if k else 'removed'}" for i, k in enumerate(self.kept, start=1)
            ),
            f"hazards: {kinds['RAW']} read-after-write, {kinds['WAR']} write-after-read "
            f"(in {len({tuple(b) for b in self.hazards['block'].tolist()})} blocks)",
        ]
        if self.has_reads:
            lines.append(
                f"this run: {len(self.wrong_reads)} reads returned a wrong element, "
                f"{int(self.wrong_p.sum())} P elements came out wrong"
            )
        return "\n".join(lines)


def analyse(trace) -> BarrierReport:
    """Hazards, wrong reads and wrong P elements of ``trace`` (see the module docstring).

    Parameters
    ----------
    trace : Trace
        Any trace of a book kernel; the report's ``has_reads`` says whether it
        holds read records.

    Raises
    ------
    ValueError
        For a kernel of the user's own (:func:`vizmm.replay.own.own_lab`).
    """
    _book_only(trace, "the barrier lab's analysis")
    reads = getattr(trace, "shared_reads", None)
    return BarrierReport(
        kept=barriers_kept(trace),
        hazards=hazards(trace),
        wrong_reads=wrong_reads(trace),
        wrong_p=wrong_p(trace),
        has_reads=bool(reads is not None and reads.size > 0),
    )
