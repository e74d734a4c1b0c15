"""The access log read as the book's matrix multiplication (NumPy only, after the launch).

:func:`matmul_fields` turns the general log of :mod:`.instrument` into the
per-thread fields of a :class:`~vizmm.trace.Trace`, the way PMPP ch. 5
reads a tiled kernel:

* the first global array argument is M, the second N, the last P; the
  shared array whose stores copy M elements plays Mds, the one copying N
  plays Nds (found from the stores' sources, whatever their names);
* a thread's phase ``ph`` starts at its ``ph``-th store into Mds (so a
  removed barrier changes nothing); a barrier arrival of a phase is the
  one after the loads (0) until the thread has read Mds / Nds in that
  phase, the one after the k loop (1) from then on;
* a load into Mds / Nds is ``LOADED`` when the code's (row, col) lies in
  the matrix, ``WRONG_ELEMENT`` when it lies outside but its flat index
  inside (Fig. 5.11's row wrap), ``OUT_OF_ALLOCATION`` when the global
  load was out of bounds (logged, not performed), ``ZERO_FILL`` when a
  constant was stored in the ``else`` of the boundary check (the (row,
  col) of the load it guards);
* Pvalue after phase ``ph`` is the accumulator at the thread's last event
  of that phase; the P store's kind from its (row, col) like the loads;
* a k-loop read (the barrier lab) is the tag the slot held: the flat index
  of the element copied there, -1 for the zero-fill, -2 never written.
"""

from __future__ import annotations

import numpy as np

from ..trace import access_log as D
from ..trace.access_log import AccessLog

__all__ = ["access_log", "matmul_fields", "roles"]

# The trace's codes (vizmm.trace.Access / PWrite, kernels/codes.py).
_NOT_RECORDED, _LOADED, _ZERO_FILL, _WRONG, _OOA = 0, 1, 2, 3, 4


def access_log(log, inst, launch, blocks) -> AccessLog:
    """The launch's log (:class:`RawLog`) as the trace's :class:`~vizmm.trace.access_log.AccessLog`.

    Parameters
    ----------
    log : RawLog
        :func:`vizmm.record.instrument.run`'s result.
    inst : Instrumented
        The arrays the log names (:attr:`Instrumented.arrays`).
    launch : LaunchShape
        Sizes (M j x k, N k x l) and TILE_WIDTH.
    blocks : list of (by, bx)
        The detailed blocks, in slot order.

    Returns
    -------
    AccessLog
    """
    return AccessLog(
        np.asarray(log.events, np.int32),
        np.asarray(log.values, np.float64),
        np.asarray(log.counts, np.int32),
        tuple(a.name for a in inst.arrays),
        tuple(a.space for a in inst.arrays),
        tuple((int(b[0]), int(b[1])) for b in np.asarray(blocks).reshape(-1, 2)),
        launch.tile_width,
        (launch.j, launch.k, launch.l),
        getattr(inst, "accumulator", None),
    )


def roles(log: AccessLog, global_arrays, copies=None) -> dict:
    """Which array ids play M, N, P, Mds and Nds; ``{'M': id, ...}`` (absent when none).

    Mds / Nds: the shared array with the most stores (performed or not)
    copying (or zero-filling for) an element of M / N, a tie to the larger
    id (:meth:`AccessLog.tile_for`); where the log has no such store (no
    block logged), the shared array the source copies M / N into
    (``copies``: shared array name -> global array names,
    :attr:`Instrumented.copies`).

    Parameters
    ----------
    log : AccessLog
        The launch's log (:func:`access_log`).
    global_arrays : sequence of str
        The kernel's global array parameters in order: the first plays M,
        the second N, the last P (none when fewer than three).
    copies : mapping of str to sequence of str, optional
        Per shared array, the global arrays its stores copy from.

    Returns
    -------
    dict of str to int
        Role (``'M'``, ``'N'``, ``'P'``, ``'Mds'``, ``'Nds'``) to array id.
    """
    ids = {name: i for i, name in enumerate(log.names)}
    out = {}
    if len(global_arrays) >= 3:
        out["M"], out["N"], out["P"] = (
            ids[global_arrays[0]],
            ids[global_arrays[1]],
            ids[global_arrays[-1]],
        )
    for role, src in (("Mds", out.get("M")), ("Nds", out.get("N"))):
        if src is None:
            continue
        tile = log.tile_for(src, performed=False, last=True)
        if tile is None and copies:
            tile = next(
                (ids[n] for n, sources in copies.items() if log.names[src] in sources and n in ids),
                None,
            )
        if tile is not None:
            out[role] = tile
    return out


def _kinds(row, col, nrows, ncols, flag, tag, src_idx):
    """Access codes of loads into Mds / Nds (arrays of one shape; see the module docstring)."""
    inside = (row >= 0) & (row < nrows) & (col >= 0) & (col < ncols)
    in_alloc = (src_idx >= 0) & (src_idx < nrows * ncols)
    out = np.where(inside | (row == D.NO_INDEX), _LOADED, np.where(in_alloc, _WRONG, _OOA))
    out = np.where(tag == D.TAG_ZERO, _ZERO_FILL, out)
    return np.where(flag == D.SOURCE_OUT_OF_BOUNDS, _OOA, out).astype(np.int32)


def _tile_load(e: np.ndarray, field: int, launch) -> tuple:
    """``(kind, row, col)`` of the tile loads ``e`` (events, (n, NF)) into Mds (0) or Nds (1)."""
    j, k, l = launch.j, launch.k, launch.l
    nrows, ncols = (j, k) if field == 0 else (k, l)
    row, col = e[:, D.SRC_ROW].astype(np.int64), e[:, D.SRC_COL].astype(np.int64)
    sidx = e[:, D.SRC_IDX].astype(np.int64)
    kind = _kinds(row, col, nrows, ncols, e[:, D.FLAG], e[:, D.TAG], sidx)
    wrap = (row == D.NO_INDEX) & (sidx >= 0)
    row = np.where(wrap, sidx // ncols, row)
    col = np.where(wrap, sidx % ncols, col)
    # what the book's table cannot say (a zero stored into another thread's slot, a zero
    # fill of an element that exists, a slot filled from elsewhere) is left NOT_RECORDED
    # there: the access log keeps it, and vizmm.check names it
    prow, pcol = (launch.padded[0], launch.padded[1]) if field == 0 else launch.padded[1:]
    inside = (row >= 0) & (row < nrows) & (col >= 0) & (col < ncols)
    in_alloc = row * ncols + col < nrows * ncols
    bad = (
        (row < 0)
        | (col < 0)
        | (row >= prow)
        | (col >= pcol)
        | ((kind == _LOADED) & ~inside)
        | ((kind == _ZERO_FILL) & inside)
        | ((kind == _WRONG) & (inside | ~in_alloc))
        | ((kind == _OOA) & in_alloc)
    )
    kind = np.where(bad, 0, kind).astype(np.int32)
    return kind, np.where(bad, 0, row), np.where(bad, 0, col)


def _loads(A: AccessLog, tiles: tuple, raw, launch, blocks, fields: dict) -> None:
    """``loads`` and ``zero_fills`` into ``fields``: each thread's n-th store into a tile."""
    T, nph = launch.tile_width, launch.n_phases
    (gy, gx), nd = launch.grid, len(blocks)
    loads = np.zeros((nd, nph, T, T, 6), np.int32)
    zero_fills = np.zeros((gy, gx, nph, 2), np.int32)
    blk = np.asarray(blocks, np.int64).reshape(-1, 2)
    counted = getattr(raw, "zero_fills", None)
    for field, sid in enumerate(tiles):
        ph = A.phases_of(sid, performed=False)
        sel = A.stores(performed=False) & (A.events[..., D.ARR] == sid) & (ph < nph)
        if not sel.any():
            continue
        s_ix, t_ix, _ = np.nonzero(sel)
        kind, row, col = _tile_load(A.events[sel], field, launch)
        at = (s_ix, ph[sel], t_ix // T, t_ix % T)
        loads[(*at, 3 * field)] = kind
        loads[(*at, 3 * field + 1)] = row
        loads[(*at, 3 * field + 2)] = col
        zf = kind == _ZERO_FILL
        if counted is None:
            np.add.at(zero_fills, (blk[at[0][zf], 0], blk[at[0][zf], 1], at[1][zf], field), 1)
    if counted is not None:
        for field, sid in enumerate(tiles):
            n = min(nph, counted.shape[2])
            if sid is not None and n:
                zero_fills[:, :, :n, field] = counted[:, :, :n, sid]
    fields["loads"], fields["zero_fills"] = loads, zero_fills


def _barriers(A: AccessLog, mds, nds, raw, inst, launch, fields: dict) -> None:
    """``barrier_tick`` and ``barrier_clock`` into ``fields``: each arrival and release."""
    T, nph, nd = launch.tile_width, launch.n_phases, A.events.shape[0]
    ticks = np.full((nd, nph, 2, 2, T, T), -1, np.int32)
    clocks = np.full((nd, nph, 2, 2, T, T), -1, np.int64)
    fields["barrier_tick"], fields["barrier_clock"] = ticks, clocks
    ev, op, arr = A.events, A.events[..., D.OP], A.events[..., D.ARR]
    # every other event belongs to the phase of the thread's latest Mds store
    phase = A.phases_of(mds, performed=False)
    mds_store = A.stores(performed=False) & (arr == (-9 if mds is None else mds))
    shared_load = A.valid & (op == D.LOAD) & _either(arr, mds, nds)
    # k-loop reads so far in the phase: reads before the event minus those before the phase
    before = np.cumsum(shared_load, axis=2) - shared_load
    start = np.maximum.accumulate(np.where(mds_store, before, 0), axis=2)
    bar = A.valid & (phase >= 0) & (phase < nph) & ((op == D.ARRIVE) | (op == D.RELEASE))
    if not bar.any():
        return
    s_ix, t_ix, _ = np.nonzero(bar)
    lines = ev[..., D.LINE][bar]
    # which barrier of the phase: the source's answer for its line, else whether the
    # thread had read Mds / Nds in the phase before it
    which = ((before - start) > 0)[bar].astype(np.int64)
    for line, after in inst.after_reads.items():
        which[lines == line] = int(after)
    where = (s_ix, phase[bar], which, op[bar] - D.ARRIVE, t_ix // T, t_ix % T)
    ticks[where] = ev[..., D.TICK][bar]
    clk = getattr(raw, "clocks", None)
    if clk is not None and clk.shape[2]:
        # arrival at epoch e is clock 2e; the release (epoch counted) is 2e - 1
        slot = 2 * ev[..., D.EPOCH][bar].astype(np.int64) - (op[bar] == D.RELEASE)
        ok = (slot >= 0) & (slot < clk.shape[2])
        got = clk[:, : T * T][s_ix, t_ix, np.clip(slot, 0, clk.shape[2] - 1)]
        clocks[where] = np.where(ok, got, -1)


def _either(arr: np.ndarray, a, b) -> np.ndarray:
    """``arr == a | arr == b`` (a or b None: no array)."""
    return (arr == (-9 if a is None else a)) | (arr == (-9 if b is None else b))


def _pvalue(A: AccessLog, mds, launch, fields: dict) -> None:
    """``pvalue`` into ``fields``: the accumulator at the thread's last event of each phase."""
    T, nph, nd = launch.tile_width, launch.n_phases, A.events.shape[0]
    pvalue = np.full((nd, nph, T, T), np.nan, np.float32)
    phase, valid = A.phases_of(mds, performed=False), A.valid
    in_phase = valid & (phase >= 0) & (phase < nph)
    nxt = np.concatenate([phase[..., 1:], np.full(phase.shape[:2] + (1,), -9)], axis=2)
    nxt_valid = np.concatenate([valid[..., 1:], np.zeros(valid.shape[:2] + (1,), bool)], axis=2)
    last = in_phase & ((nxt != phase) | ~nxt_valid)
    s_ix, t_ix, _ = np.nonzero(last)
    pvalue[s_ix, phase[last], t_ix // T, t_ix % T] = A.values[..., 1][last]
    fields["pvalue"] = pvalue


def _shared_reads(A: AccessLog, mds, nds, launch, fields: dict) -> None:
    """``shared_reads`` and ``read_values`` into ``fields``: the tags the k loop read."""
    T, nph, nd = launch.tile_width, launch.n_phases, A.events.shape[0]
    shared_reads = np.full((nd, nph, T, T, T, 2), -3, np.int32)
    read_values = np.full((nd, nph, T, T, T, 2), np.nan, np.float32)
    fields["shared_reads"], fields["read_values"] = shared_reads, read_values
    ev, op, arr = A.events, A.events[..., D.OP], A.events[..., D.ARR]
    phase = A.phases_of(mds, performed=False)
    in_phase = A.valid & (phase >= 0) & (phase < nph)
    mds_store = A.stores(performed=False) & (arr == (-9 if mds is None else mds))
    for field, sid in enumerate((mds, nds)):
        mine = A.valid & (op == D.LOAD) & _either(arr, mds, nds) & _either(arr, sid, None)
        mine &= in_phase
        kk = np.cumsum(mine, axis=2) - 1
        kk = kk - np.maximum.accumulate(np.where(mds_store, np.cumsum(mine, axis=2), 0), axis=2)
        sel = mine & (kk >= 0) & (kk < T)
        s_ix, t_ix, _ = np.nonzero(sel)
        tag = ev[..., D.TAG][sel].astype(np.int64)
        read_at = (s_ix, phase[sel], t_ix // T, t_ix % T, kk[sel], field)
        shared_reads[read_at] = np.where(tag >= 0, tag // D.TAG_ARRAYS, np.maximum(tag, -3))
        read_values[read_at] = A.values[..., 0][sel]


def _p_write(A: AccessLog, p_id, launch, fields: dict) -> None:
    """``p_write`` into ``fields``: the kind of each thread's store into P."""
    T, nd = launch.tile_width, A.events.shape[0]
    p_write = np.full((nd, T, T), 2, np.int8)  # SKIPPED: no store of P
    fields["p_write"] = p_write
    if p_id is None:
        return
    ev = A.events
    pst = A.stores(performed=False) & (ev[..., D.ARR] == p_id)
    s_ix, t_ix, _ = np.nonzero(pst)
    row, col = ev[..., D.ROW][pst].astype(np.int64), ev[..., D.COL][pst].astype(np.int64)
    j, l = launch.j, launch.l
    inside = (row == D.NO_INDEX) | ((row >= 0) & (row < j) & (col >= 0) & (col < l))
    flag = ev[..., D.FLAG][pst]
    kind = np.where(flag == D.OUT_OF_BOUNDS, _OOA, np.where(inside, 1, _WRONG))
    p_write[s_ix, t_ix // T, t_ix % T] = kind


def matmul_fields(log, inst, launch, blocks, reads: bool = False) -> dict:
    """The Trace's per-thread fields from an access log of a matrix multiplication kernel.

    Parameters
    ----------
    log : RawLog
        :func:`vizmm.record.instrument.run`'s result (blocks of T x T threads).
    inst : Instrumented
    launch : LaunchShape
        Sizes (M j x k, N k x l) and TILE_WIDTH.
    blocks : list of (by, bx)
        The detailed blocks, in slot order.
    reads : bool
        Also fill the barrier lab's k-loop reads.

    Returns
    -------
    dict
        ``loads`` (nd, nph, T, T, 6), ``pvalue`` (nd, nph, T, T),
        ``barrier_tick`` (nd, nph, 2, 2, T, T), ``p_write`` (nd, T, T),
        ``zero_fills`` (gy, gx, nph, 2: from the log's per-block counters when
        it has them, so every block's, else from the logged blocks),
        ``barrier_clock`` (nd, nph, 2, 2, T, T: ``%clock64`` at each arrival
        and release, -1 where not read) and, with ``reads``,
        ``shared_reads`` / ``read_values`` (nd, nph, T, T, T, 2): shapes and
        codes of :class:`vizmm.trace.Trace`.
    """
    T = launch.tile_width
    full = access_log(log, inst, launch, blocks)
    role = roles(full, inst.global_arrays, getattr(inst, "copies", None))
    A = full.head(T * T)  # the block's T x T threads
    mds, nds = role.get("Mds"), role.get("Nds")
    fields: dict = {}
    _loads(A, (mds, nds), log, launch, blocks, fields)
    _pvalue(A, mds, launch, fields)
    _barriers(A, mds, nds, log, inst, launch, fields)
    _p_write(A, role.get("P"), launch, fields)
    if reads:
        _shared_reads(A, mds, nds, launch, fields)
    return fields
