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

from . import instrument_device as D

__all__ = ["matmul_fields", "roles"]

# The trace's codes (vizmm.trace.Access / PWrite, kernels/codes.py).
_NOT_RECORDED, _LOADED, _ZERO_FILL, _WRONG, _OOA = 0, 1, 2, 3, 4


def roles(events: np.ndarray, counts: np.ndarray, arrays, global_arrays) -> dict:
    """Which array ids play M, N, P, Mds and Nds; ``{'M': id, ...}`` (absent when none).

    Mds / Nds: the shared array most of whose stores copy (or zero-fill for)
    an element of M / N.
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
    return out


def _kind(row, col, nrows, ncols, flag, tag, src_idx):
    if flag == D.SOURCE_OUT_OF_BOUNDS:
        return _OOA
    if tag == D.TAG_ZERO:
        return _ZERO_FILL
    if row == D.NO_INDEX:
        return _LOADED
    inside = 0 <= row < nrows and 0 <= col < ncols
    if inside:
        return _LOADED
    return _WRONG if 0 <= src_idx < nrows * ncols else _OOA


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
        ``zero_fills`` (gy, gx, nph, 2) and, with ``reads``,
        ``shared_reads`` / ``read_values`` (nd, nph, T, T, T, 2): shapes and
        codes of :class:`vizmm.trace.Trace`.
    """
    j, k, l, T = launch.j, launch.k, launch.l, launch.tile_width
    (gy, gx), nph = launch.grid, launch.n_phases
    nd = len(blocks)
    ev, vals, counts = log.events, log.values, log.counts
    role = roles(ev, counts, inst.arrays, inst.global_arrays)
    m_id, n_id, p_id = role.get("M"), role.get("N"), role.get("P")
    mds, nds = role.get("Mds"), role.get("Nds")
    loads = np.zeros((nd, nph, T, T, 6), np.int32)
    pvalue = np.full((nd, nph, T, T), np.nan, np.float32)
    ticks = np.full((nd, nph, 2, 2, T, T), -1, np.int32)
    p_write = np.zeros((nd, T, T), np.int8)
    zero_fills = np.zeros((gy, gx, nph, 2), np.int32)
    rshape = (nd, nph, T, T, T, 2) if reads else (0, 0, 0, 0, 0, 2)
    shared_reads = np.full(rshape, -3, np.int32)
    read_values = np.full(rshape, np.nan, np.float32)
    dims = {m_id: (j, k), n_id: (k, l), p_id: (j, l)}
    for s, (by, bx) in enumerate(blocks):
        for tid in range(T * T):
            ty, tx = divmod(tid, T)
            n = int(counts[s, tid])
            e, v = ev[s, tid, :n], vals[s, tid, :n]
            ph = -1
            read_in_phase = False
            kread = [0, 0]
            p_kind = 2  # SKIPPED: no store of P
            for i in range(n):
                op, flag, arr = int(e[i, D.OP]), int(e[i, D.FLAG]), int(e[i, D.ARR])
                if op == D.STORE and arr in (mds, nds):
                    field = 0 if arr == mds else 1
                    if field == 0:
                        ph += 1
                        read_in_phase = False
                        kread = [0, 0]
                    if not 0 <= ph < nph:
                        continue
                    src = m_id if field == 0 else n_id
                    nrows, ncols = dims[src]
                    row, col = int(e[i, D.SRC_ROW]), int(e[i, D.SRC_COL])
                    sidx, tag = int(e[i, D.SRC_IDX]), int(e[i, D.TAG])
                    kind = _kind(row, col, nrows, ncols, flag, tag, sidx)
                    if row == D.NO_INDEX and sidx >= 0:
                        row, col = divmod(sidx, ncols)
                    loads[s, ph, ty, tx, 3 * field : 3 * field + 3] = (kind, row, col)
                    if kind == _ZERO_FILL:
                        zero_fills[by, bx, ph, field] += 1
                elif op == D.LOAD and arr in (mds, nds) and 0 <= ph < nph:
                    read_in_phase = True
                    field = 0 if arr == mds else 1
                    if reads and kread[field] < T:
                        tag = int(e[i, D.TAG])
                        shared_reads[s, ph, ty, tx, kread[field], field] = (
                            tag // D.TAG_ARRAYS if tag >= 0 else max(tag, -3)
                        )
                        read_values[s, ph, ty, tx, kread[field], field] = v[i, 0]
                    kread[field] += 1
                elif op in (D.ARRIVE, D.RELEASE) and 0 <= ph < nph:
                    which = 1 if read_in_phase else 0
                    ticks[s, ph, which, op - D.ARRIVE, ty, tx] = e[i, D.TICK]
                elif op == D.STORE and arr == p_id and p_id is not None:
                    row, col = int(e[i, D.ROW]), int(e[i, D.COL])
                    if flag == D.OUT_OF_BOUNDS:
                        p_kind = _OOA
                    elif row == D.NO_INDEX or (0 <= row < j and 0 <= col < l):
                        p_kind = 1
                    else:
                        p_kind = _WRONG
                if 0 <= ph < nph:
                    pvalue[s, ph, ty, tx] = v[i, 1]
            p_write[s, ty, tx] = p_kind
    out = dict(
        loads=loads,
        pvalue=pvalue,
        barrier_tick=ticks,
        p_write=p_write,
        zero_fills=zero_fills,
    )
    if reads:
        out["shared_reads"] = shared_reads
        out["read_values"] = read_values
    return out
