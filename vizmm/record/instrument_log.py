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

__all__ = ["matmul_fields", "roles"]

# The trace's codes (vizmm.trace.Access / PWrite, kernels/codes.py).
_NOT_RECORDED, _LOADED, _ZERO_FILL, _WRONG, _OOA = 0, 1, 2, 3, 4


def roles(events: np.ndarray, counts: np.ndarray, arrays, global_arrays, copies=None) -> dict:
    """Which array ids play M, N, P, Mds and Nds; ``{'M': id, ...}`` (absent when none).

    Mds / Nds: the shared array most of whose stores copy (or zero-fill for)
    an element of M / N; where the log has no such store (no block logged),
    the shared array the source copies M / N into (``copies``: shared
    array name -> global array names, :attr:`Instrumented.copies`).

    Parameters
    ----------
    events : ndarray of int32, (nd, threads, cap, NF)
        The log's events (:attr:`RawLog.events`): per detail block, thread
        and event, the fields :data:`~.instrument_device.FIELDS`.
    counts : ndarray of int32, (nd, threads)
        Events per thread; only the first ``counts`` of a thread are read.
    arrays : sequence of ArrayInfo
        The arrays the log names, by id (:attr:`Instrumented.arrays`).
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
    ids = {a.name: i for i, a in enumerate(arrays)}
    out = {}
    if len(global_arrays) >= 3:
        out["M"], out["N"], out["P"] = (
            ids[global_arrays[0]],
            ids[global_arrays[1]],
            ids[global_arrays[-1]],
        )
    cap = events.shape[2]
    valid = np.arange(cap)[None, None, :] < counts[..., None]
    ev = events[valid]
    stores = ev[(ev[:, D.OP] == D.STORE)]
    for role, src in (("Mds", out.get("M")), ("Nds", out.get("N"))):
        if src is None:
            continue
        mine = stores[stores[:, D.SRC_ARR] == src]
        shared = [i for i, a in enumerate(arrays) if a.space == "shared"]
        best = [(int((mine[:, D.ARR] == i).sum()), i) for i in shared]
        best = [b for b in best if b[0] > 0]
        if best:
            out[role] = max(best)[1]
        elif copies:
            src_name = arrays[src].name
            for name, sources in copies.items():
                if src_name in sources and name in ids:
                    out[role] = ids[name]
                    break
    return out


def _kinds(row, col, nrows, ncols, flag, tag, src_idx):
    """Access codes of loads into Mds / Nds (arrays of one shape; see the module docstring)."""
    inside = (row >= 0) & (row < nrows) & (col >= 0) & (col < ncols)
    in_alloc = (src_idx >= 0) & (src_idx < nrows * ncols)
    out = np.where(inside | (row == D.NO_INDEX), _LOADED, np.where(in_alloc, _WRONG, _OOA))
    out = np.where(tag == D.TAG_ZERO, _ZERO_FILL, out)
    return np.where(flag == D.SOURCE_OUT_OF_BOUNDS, _OOA, out).astype(np.int32)


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
    j, k, l, T = launch.j, launch.k, launch.l, launch.tile_width
    (gy, gx), nph = launch.grid, launch.n_phases
    nd = len(blocks)
    ev, vals, counts = log.events, log.values, log.counts
    role = roles(ev, counts, inst.arrays, inst.global_arrays, getattr(inst, "copies", None))
    m_id, n_id, p_id = role.get("M"), role.get("N"), role.get("P")
    mds, nds = role.get("Mds", -9), role.get("Nds", -9)
    loads = np.zeros((nd, nph, T, T, 6), np.int32)
    pvalue = np.full((nd, nph, T, T), np.nan, np.float32)
    ticks = np.full((nd, nph, 2, 2, T, T), -1, np.int32)
    clocks = np.full((nd, nph, 2, 2, T, T), -1, np.int64)
    p_write = np.full((nd, T, T), 2, np.int8)  # SKIPPED: no store of P
    zero_fills = np.zeros((gy, gx, nph, 2), np.int32)
    rshape = (nd, nph, T, T, T, 2) if reads else (0, 0, 0, 0, 0, 2)
    shared_reads = np.full(rshape, -3, np.int32)
    read_values = np.full(rshape, np.nan, np.float32)
    cap = ev.shape[2]
    valid = np.arange(cap)[None, None, :] < counts[:, : T * T, None]
    ev, vals, valid = ev[:, : T * T], vals[:, : T * T], valid[:, : T * T]
    op, arr, flag = ev[..., D.OP], ev[..., D.ARR], ev[..., D.FLAG]
    s_ix, t_ix, _ = np.indices(op.shape)
    ty_ix, tx_ix = np.divmod(t_ix, T)
    blk = np.asarray(blocks, np.int64).reshape(-1, 2)
    # phases: a thread's n-th store into Mds (into Nds) is phase n of that array
    store = valid & (op == D.STORE)
    for field, sid, _src in ((0, mds, m_id), (1, nds, n_id)):
        mine = store & (arr == sid)
        ph = np.cumsum(mine, axis=2) - 1
        sel = mine & (ph < nph)
        if not sel.any():
            continue
        e = ev[sel]
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
        row, col = np.where(bad, 0, row), np.where(bad, 0, col)
        at = (s_ix[sel], ph[sel], ty_ix[sel], tx_ix[sel])
        loads[(*at, 3 * field)] = kind
        loads[(*at, 3 * field + 1)] = row
        loads[(*at, 3 * field + 2)] = col
        zf = kind == _ZERO_FILL
        if getattr(log, "zero_fills", None) is None:
            np.add.at(zero_fills, (blk[at[0][zf], 0], blk[at[0][zf], 1], at[1][zf], field), 1)
    counted = getattr(log, "zero_fills", None)
    if counted is not None:
        for field, sid in ((0, mds), (1, nds)):
            n = min(nph, counted.shape[2])
            if sid >= 0 and n:
                zero_fills[:, :, :n, field] = counted[:, :, :n, sid]
    # every other event belongs to the phase of the thread's latest Mds store
    phase = np.cumsum(store & (arr == mds), axis=2) - 1
    in_phase = valid & (phase >= 0) & (phase < nph)
    shared_load = valid & (op == D.LOAD) & ((arr == mds) | (arr == nds))
    # k-loop reads so far in the phase: reads before the event minus those before the phase
    before = np.cumsum(shared_load, axis=2) - shared_load
    start = np.where(store & (arr == mds), before, 0)
    start = np.maximum.accumulate(start, axis=2)
    read_seen = (before - start) > 0
    bar = in_phase & ((op == D.ARRIVE) | (op == D.RELEASE))
    if bar.any():
        lines = ev[..., D.LINE][bar]
        seen = read_seen[bar]
        # which barrier of the phase: the source's answer for its line, else whether the
        # thread had read Mds / Nds in the phase before it
        which = seen.astype(np.int64)
        for line, after in inst.after_reads.items():
            which[lines == line] = int(after)
        where = (s_ix[bar], phase[bar], which, op[bar] - D.ARRIVE, ty_ix[bar], tx_ix[bar])
        ticks[where] = ev[..., D.TICK][bar]
        clk = getattr(log, "clocks", None)
        if clk is not None and clk.shape[2]:
            # arrival at epoch e is clock 2e; the release (epoch counted) is 2e - 1
            slot = 2 * ev[..., D.EPOCH][bar].astype(np.int64) - (op[bar] == D.RELEASE)
            ok = (slot >= 0) & (slot < clk.shape[2])
            got = clk[:, : T * T][s_ix[bar], t_ix[bar], np.clip(slot, 0, clk.shape[2] - 1)]
            clocks[where] = np.where(ok, got, -1)
    # Pvalue after a phase: the accumulator at the thread's last event of the phase
    nxt = np.concatenate([phase[..., 1:], np.full(phase.shape[:2] + (1,), -9)], axis=2)
    nxt_valid = np.concatenate([valid[..., 1:], np.zeros(valid.shape[:2] + (1,), bool)], axis=2)
    last = in_phase & ((nxt != phase) | ~nxt_valid)
    pvalue[s_ix[last], phase[last], ty_ix[last], tx_ix[last]] = vals[..., 1][last]
    if reads:
        for field, sid in ((0, mds), (1, nds)):
            mine = shared_load & (arr == sid) & in_phase
            kk = np.cumsum(mine, axis=2) - 1
            kk = kk - np.maximum.accumulate(
                np.where(store & (arr == mds), np.cumsum(mine, axis=2), 0), axis=2
            )
            sel = mine & (kk >= 0) & (kk < T)
            tag = ev[..., D.TAG][sel].astype(np.int64)
            read_at = (s_ix[sel], phase[sel], ty_ix[sel], tx_ix[sel], kk[sel], field)
            shared_reads[read_at] = np.where(tag >= 0, tag // D.TAG_ARRAYS, np.maximum(tag, -3))
            read_values[read_at] = vals[..., 0][sel]
    if p_id is not None:
        pst = valid & (op == D.STORE) & (arr == p_id)
        row, col = ev[..., D.ROW][pst].astype(np.int64), ev[..., D.COL][pst].astype(np.int64)
        inside = (row == D.NO_INDEX) | ((row >= 0) & (row < j) & (col >= 0) & (col < l))
        kind = np.where(flag[pst] == D.OUT_OF_BOUNDS, _OOA, np.where(inside, 1, _WRONG))
        p_write[s_ix[pst], ty_ix[pst], tx_ix[pst]] = kind
    out = dict(
        loads=loads,
        pvalue=pvalue,
        barrier_tick=ticks,
        p_write=p_write,
        zero_fills=zero_fills,
        barrier_clock=clocks,
    )
    if reads:
        out["shared_reads"] = shared_reads
        out["read_values"] = read_values
    return out
