"""The memory aspects of a frame: Mds and Nds, the threads, M, N and P, the followed thread.

Each function here makes one aspect of :class:`~vizmm.replay.frame.Frame`
(its fields: :data:`~vizmm.replay.frame.ASPECT_FIELDS`) for one step of a
:class:`~vizmm.replay.block.Replay`, from what the replay worked out once per
block (:func:`per_phase`: each phase's loads, slot by slot; :func:`arrival_ranks`)
and how far the block has got at the step (:class:`Progress`).

Nothing is invented: a slot holds what the trace says was loaded, or is
unknown (NaN); Pvalue after a phase is the recorded one, inside a phase the
previous phase's plus the products of the recorded slot values.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from ..analysis.transactions import TransactionsOverlay, transactions_overlay
from ..trace import Access, PWrite, Trace
from .frame import aspect_maker
from .states import CellState, Ghost, SlotState, Step, Sub, ThreadState

if TYPE_CHECKING:
    from .block import Replay
    from .frame_aspects import At

__all__ = [
    "Progress",
    "progress",
    "per_phase",
    "arrival_ranks",
    "phase_reads",
    "slots",
    "threads",
    "matrices",
    "focus",
    "counters",
    "transactions",
]

_SLOT_OF_ACCESS = {
    Access.LOADED: SlotState.LOADED,
    Access.ZERO_FILL: SlotState.ZERO,
    Access.WRONG_ELEMENT: SlotState.WRONG,
    Access.OUT_OF_ALLOCATION: SlotState.SKIPPED,
    Access.NOT_RECORDED: SlotState.EMPTY,
}


class Progress(NamedTuple):
    """How far the block has got at one step (Fig. 5.9's loop).

    Attributes
    ----------
    cur : int or None
        The phase whose tiles are in shared memory or being loaded (the last
        one at the P store); None at the start.
    m_loaded, n_loaded : bool
        Whether the current phase's M / N tile is loaded at this step.
    terms_in_phase : int
        Terms each thread has added in the current phase (0..TILE_WIDTH).
    """

    cur: int | None
    m_loaded: bool
    n_loaded: bool
    terms_in_phase: int


def progress(step: Step, n_phases: int, T: int) -> Progress:
    """The :class:`Progress` of ``step`` in a block of ``n_phases`` phases, TILE_WIDTH ``T``.

    Parameters
    ----------
    step : Step
        A step of a replay.
    n_phases : int
        The trace's phases.
    T : int
        TILE_WIDTH.
    """
    sub = step.sub
    if sub == Sub.START:
        return Progress(None, False, False, 0)
    if sub == Sub.WRITE_P:
        return Progress(n_phases - 1, True, True, T)
    if sub == Sub.K:
        assert step.k is not None  # a k-loop step names its k
        terms = step.k + 1
    elif sub in (Sub.ARRIVE_2, Sub.RELEASE_2, Sub.PHASE):
        terms = T
    else:
        terms = 0
    return Progress(step.phase, True, sub != Sub.LOAD_M, terms)


def _loading_now(sub: Sub, name: str) -> bool:
    """Whether the step loads matrix ``name`` ('M' or 'N') into shared memory."""
    return (
        (sub == Sub.LOAD_M and name == "M")
        or (sub == Sub.LOAD_N and name == "N")
        or (sub == Sub.PHASE)
    )


def _loaders(r: np.ndarray, c: np.ndarray, kind: np.ndarray, T: int) -> np.ndarray:
    """Thread index ``ty*T + tx`` that fills each slot, from the recorded tile offsets.

    ``r``, ``c``: (T, T) offset of each thread's element in its tile. When the
    offsets are not a permutation of the slots (a record missing), each thread
    keeps its own slot (Fig. 5.9).
    """
    flat = (r * T + c).ravel()
    ok = (kind != Access.NOT_RECORDED).all() and ((r >= 0) & (r < T) & (c >= 0) & (c < T)).all()
    if not ok or len(np.unique(flat)) != T * T:
        return np.arange(T * T).reshape(T, T)
    loader = np.empty(T * T, np.int64)
    loader[flat] = np.arange(T * T)
    return loader.reshape(T, T)


def per_phase(trace: Trace, block: tuple[int, int], slot: int) -> list[dict]:
    """Per phase: slot states, sources and values of Mds and Nds after the loads.

    Parameters
    ----------
    trace : Trace
    block : (by, bx)
        A block recorded per thread.
    slot : int
        Its slot in the trace's per-thread records (``trace.slot(block)``).

    Returns
    -------
    list of dict
        One ``{"M": ..., "N": ...}`` per phase, each a tuple ``(state, src,
        val, kind, row, col, loader)`` of (T, T) arrays indexed by slot.
    """
    tr = trace
    _, k, l = tr.shape
    T = tr.tile_width
    rec = tr.loads[slot]  # (nph, T, T, 6)
    out = []
    for ph in range(tr.n_phases):
        entry = {}
        for name, base, mat, ncols in (("M", 0, tr.M, k), ("N", 3, tr.N, l)):
            kind = rec[ph, :, :, base]
            row = rec[ph, :, :, base + 1]
            col = rec[ph, :, :, base + 2]
            state = np.zeros((T, T), np.int8)
            src = np.full((T, T, 2), -1, np.int32)
            val = np.full((T, T), np.nan, np.float32)
            for acc, sst in _SLOT_OF_ACCESS.items():
                state[kind == acc] = sst
            lin = row.astype(np.int64) * ncols + col
            read = (kind == Access.LOADED) | (kind == Access.WRONG_ELEMENT)
            ar, ac = np.divmod(np.where(read, lin, 0), ncols)
            src[..., 0] = np.where(read, ar, -1)
            src[..., 1] = np.where(read, ac, -1)
            val[read] = mat[ar[read], ac[read]]
            val[kind == Access.ZERO_FILL] = 0.0
            # Records are per thread; a slot is where the element belongs in
            # the tile (Mds[r][c] holds M[by*T + r][ph*T + c]). Fig. 5.9's
            # thread (ty, tx) fills slot (ty, tx); the uncoalesced kernel's
            # fills (tx, ty).
            origin = (block[0] * T, ph * T) if name == "M" else (ph * T, block[1] * T)
            loader = _loaders(row - origin[0], col - origin[1], kind, T)
            by_slot = np.unravel_index(loader, (T, T))
            by_slots = tuple(a[by_slot] for a in (state, src, val, kind, row, col))
            entry[name] = (*by_slots, loader.astype(np.int16))
        out.append(entry)
    return out


def arrival_ranks(trace: Trace, slot: int) -> np.ndarray:
    """Arrival rank (0 first) of each thread at each barrier: int32 (nph, 2, T, T).

    By ``%clock64`` cycles where the trace has them for every thread, else by
    the block's logical clock; -1 for a barrier with a thread not recorded.

    Parameters
    ----------
    trace : Trace
    slot : int
        The block's slot in the per-thread records.
    """
    tr = trace
    T = tr.tile_width
    ticks = tr.barrier_tick[slot][:, :, 0].astype(np.int64)  # (nph, 2, T, T)
    clocks = tr.barrier_clock[slot][:, :, 0]
    use_clock = tr.has_clocks and (clocks >= 0).all()
    ranks = np.full(ticks.shape, -1, np.int32)
    for ph in range(ticks.shape[0]):
        for b in range(2):
            t = ticks[ph, b].ravel()
            if (t < 0).any():
                continue
            key = np.lexsort((t, clocks[ph, b].ravel())) if use_clock else np.argsort(t)
            rk = np.empty(T * T, np.int32)
            rk[key] = np.arange(T * T)
            ranks[ph, b] = rk.reshape(T, T)
    return ranks


def phase_reads(trace: Trace, slot: int) -> np.ndarray:
    """Global reads of each phase's loads: int64 (nph, 2), of M and of N.

    A load reads global memory when the trace says it loaded an element
    (``LOADED``, or ``WRONG_ELEMENT``: the row wrap of the unchecked kernel);
    a zero-fill or a load past the allocation reads nothing.

    Parameters
    ----------
    trace : Trace
    slot : int
        The block's slot in the per-thread records.
    """
    kind = trace.loads[slot][..., [0, 3]]  # (nph, T, T, 2)
    read = (kind == int(Access.LOADED)) | (kind == int(Access.WRONG_ELEMENT))
    return read.sum(axis=(1, 2), dtype=np.int64)


# ------------------------------------------------------------------ slots
def _slot(phases: list, name: str, cur: int | None, loaded: bool, sub: Sub, T: int) -> tuple:
    """``(state, src, value, now)`` of Mds (``name`` 'M') or Nds ('N') at one step."""
    state = np.zeros((T, T), np.int8)
    src = np.full((T, T, 2), -1, np.int32)
    val = np.full((T, T), np.nan, np.float32)
    now = np.zeros((T, T), bool)
    if cur is None:
        return state, src, val, now
    if loaded:
        state, src, val = (a.copy() for a in phases[cur][name][:3])
        skipped = state == SlotState.SKIPPED
        if cur > 0:  # a skipped load leaves the previous phase's element
            pstate, psrc, _ = phases[cur - 1][name][:3]
            src[skipped] = np.where(
                (pstate[skipped] == SlotState.LOADED)[:, None]
                | (pstate[skipped] == SlotState.WRONG)[:, None],
                psrc[skipped],
                -1,
            )
        now[:] = _loading_now(sub, name)
    elif cur > 0:
        state, src, val = (a.copy() for a in phases[cur - 1][name][:3])
        state[:] = SlotState.STALE
    return state, src, val, now


@aspect_maker
def slots(r: Replay, at: At) -> dict:
    """The ``slots`` aspect: Mds and Nds (state, source, value, written, read, loader)."""
    T = r.trace.tile_width
    step = at.step
    cur, m_loaded, n_loaded, _ = at.progress
    out: dict = {}
    for name, pre, loaded in (("M", "mds", m_loaded), ("N", "nds", n_loaded)):
        state, src, val, now = _slot(r._per_phase, name, cur, loaded, step.sub, T)
        out[f"{pre}_state"], out[f"{pre}_src"], out[f"{pre}_value"] = state, src, val
        out[f"{pre}_now"] = now
        out[f"{pre}_loader"] = (
            r._per_phase[cur][name][6].copy()
            if cur is not None
            else np.arange(T * T, dtype=np.int16).reshape(T, T)
        )
    mds_read = np.zeros((T, T), bool)
    nds_read = np.zeros((T, T), bool)
    if step.sub == Sub.K:
        mds_read[:, step.k] = True
        nds_read[step.k, :] = True
    out["mds_read"], out["nds_read"] = mds_read, nds_read
    return out


# ---------------------------------------------------------------- threads
def _thread_states(r: Replay, step: Step) -> tuple[np.ndarray, np.ndarray]:
    """``(rank, state)`` of each thread at ``step``: arrival ranks at a barrier, states."""
    T = r.trace.tile_width
    sub = step.sub
    rank = np.full((T, T), -1, np.int32)
    tstate = np.full((T, T), ThreadState.READY, np.int8)
    if sub in (Sub.LOAD_M, Sub.LOAD_N):
        tstate[:] = ThreadState.LOADING
    elif sub in (Sub.ARRIVE_1, Sub.ARRIVE_2):
        b = 0 if sub == Sub.ARRIVE_1 else 1
        rank = r._ranks[step.phase, b].copy()
        assert step.arrived is not None  # a barrier's step says how many arrived
        arrived = rank < step.arrived if (rank >= 0).all() else np.ones((T, T), bool)
        before = ThreadState.LOADING if b == 0 else ThreadState.COMPUTING
        wait = ThreadState.WAITING_1 if b == 0 else ThreadState.WAITING_2
        tstate[:] = np.where(arrived, wait, before)
    elif sub in (Sub.RELEASE_1, Sub.RELEASE_2):
        tstate[:] = ThreadState.RELEASED
    elif sub == Sub.K:
        tstate[:] = ThreadState.COMPUTING
    elif sub == Sub.PHASE:
        tstate[:] = ThreadState.DONE
    elif sub == Sub.WRITE_P:
        pw = r.trace.p_write[r.slot]
        tstate[:] = np.where(
            (pw == PWrite.WRITTEN) | (pw == PWrite.WRONG_ELEMENT),
            ThreadState.WRITING_P,
            ThreadState.IDLE,
        )
    return rank, tstate


def _pvalue(r: Replay, at: At) -> np.ndarray:
    """Each thread's Pvalue after the step: float32 (T, T), NaN where unknown.

    Recorded after each phase; inside a phase, the previous phase's value
    plus the products of the values the threads read (the barrier lab's
    records) or of the recorded slot values.
    """
    T = r.trace.tile_width
    cur, _, _, terms = at.progress
    pv_rec = r.trace.pvalue[r.slot]  # (nph, T, T)
    if cur is None:
        return np.zeros((T, T), np.float32)
    base = pv_rec[cur - 1] if cur > 0 else np.zeros((T, T), np.float32)
    if terms == T:
        return pv_rec[cur].copy()
    if terms == 0:
        return base.copy()
    acc = base.astype(np.float32).copy()
    if r._lab is not None:  # the values the threads really read
        rv = r._lab["values"][cur]  # (T, T, T(k), 2)
        for kk in range(terms):
            acc = (acc + rv[:, :, kk, 0] * rv[:, :, kk, 1]).astype(np.float32)
        return acc
    shared = at.need("slots")
    mv, nv = shared["mds_value"], shared["nds_value"]
    for kk in range(terms):
        acc = (acc + mv[:, kk][:, None] * nv[kk, :][None, :]).astype(np.float32)
    return acc


@aspect_maker
def threads(r: Replay, at: At) -> dict:
    """The ``threads`` aspect: each thread's state, rank, Pvalue, valid flag and P element."""
    T = r.trace.tile_width
    cur, _, _, terms = at.progress
    rank, tstate = _thread_states(r, at.step)
    finished = 0 if cur is None else cur + (1 if terms == T else 0)
    phase_pvalues = r.trace.pvalue[r.slot].copy()
    phase_pvalues[finished:] = np.nan
    return {
        "thread_state": tstate,
        "thread_valid": r._thread_valid.copy(),
        "thread_rank": rank,
        "pvalue": _pvalue(r, at),
        "phase_pvalues": phase_pvalues,
        "p_element": r._p_element.copy(),
    }


# --------------------------------------------------------------- matrices
def _ghosts(name: str, entry: tuple, shape: tuple, loaded: bool, now: bool) -> list[Ghost]:
    """The tile's positions outside matrix ``name`` (shape ``shape``) at one step."""
    _, src, _, kind, row, col, loader = entry
    out = []
    outside = (row >= shape[0]) | (col >= shape[1])
    for ty, tx in np.argwhere(outside):
        code = int(kind[ty, tx]) if loaded else int(Access.NOT_RECORDED)
        wrapped = code == Access.WRONG_ELEMENT
        out.append(
            Ghost(
                int(row[ty, tx]),
                int(col[ty, tx]),
                code,
                int(loader[ty, tx]),
                bool(loaded and now),
                (int(src[ty, tx, 0]), int(src[ty, tx, 1])) if wrapped else None,
            )
        )
    return out


def _mn_cells(r: Replay, at: At) -> dict:
    """``m_state``, ``n_state``, ``m_thread``, ``n_thread`` and ``ghosts`` at one step."""
    j, k, l, _ = r._dims
    cur, m_loaded, n_loaded, _ = at.progress
    sub = at.step.sub
    cells = {
        "M": (np.zeros((j, k), np.int8), np.full((j, k), -1, np.int16), (j, k), m_loaded),
        "N": (np.zeros((k, l), np.int8), np.full((k, l), -1, np.int16), (k, l), n_loaded),
    }
    ghosts: dict[str, list] = {"M": [], "N": []}
    last = cur if cur is not None else -1
    for p in range(last + 1):
        for name, (grid_state, grid_thread, shape, loaded) in cells.items():
            entry = r._per_phase[p][name]
            src, loader = entry[1], entry[6]
            read = src[..., 0] >= 0
            rr, cc = src[..., 0][read], src[..., 1][read]
            if p < last:
                grid_state[rr, cc] = np.maximum(grid_state[rr, cc], CellState.DONE)
                continue
            now = _loading_now(sub, name)
            if loaded:
                grid_state[rr, cc] = CellState.LOADING if now else CellState.TILE
                if now:
                    grid_thread[rr, cc] = loader[read]
            ghosts[name] = _ghosts(name, entry, shape, loaded, now)
    if sub == Sub.K:  # the elements whose copies column k of Mds and row k of Nds hold
        shared = at.need("slots")
        for r_, c_ in shared["mds_src"][:, at.step.k]:
            if r_ >= 0:
                cells["M"][0][r_, c_] = CellState.READING
        for r_, c_ in shared["nds_src"][at.step.k, :]:
            if r_ >= 0:
                cells["N"][0][r_, c_] = CellState.READING
    return {
        "m_state": cells["M"][0],
        "n_state": cells["N"][0],
        "m_thread": cells["M"][1],
        "n_thread": cells["N"][1],
        "ghosts": ghosts,
    }


def _p_cells(r: Replay, at: At) -> tuple[np.ndarray, list]:
    """``p_state`` and ``p_ghosts`` at one step (a user kernel: the elements it really wrote)."""
    j, _, l, T = r._dims
    by, bx = r.block
    Row0, Col0 = by * T, bx * T
    sub = at.step.sub
    p_state = np.zeros((j, l), np.int8)
    p_now = (
        CellState.DONE
        if sub == Sub.WRITE_P
        else CellState.COMPUTING
        if at.progress.cur is not None
        else CellState.TILE
    )
    own = r._own
    if own is not None:  # a user kernel: the elements its threads really computed and stored
        mark = own.stores if sub == Sub.WRITE_P else own.elements
        for got in mark.values():
            for x in got:
                if 0 <= x[0] < j and 0 <= x[1] < l:
                    p_state[x[0], x[1]] = p_now
        return p_state, []
    p_state[Row0 : min(j, Row0 + T), Col0 : min(l, Col0 + T)] = p_now
    p_ghosts = [
        (Row0 + ty, Col0 + tx, ty * T + tx)
        for ty in range(T)
        for tx in range(T)
        if not (Row0 + ty < j and Col0 + tx < l)
    ]
    return p_state, p_ghosts


@aspect_maker
def matrices(r: Replay, at: At) -> dict:
    """The ``matrices`` aspect: M, N and P cell states, loading threads, tiles and ghosts."""
    T = r.trace.tile_width
    Row0, Col0 = r.block[0] * T, r.block[1] * T
    cur = at.progress.cur
    out = _mn_cells(r, at)
    out["p_state"], out["p_ghosts"] = _p_cells(r, at)
    out["tiles"] = {
        "P": (Row0, Col0),
        "M": None if cur is None else (Row0, cur * T),
        "N": None if cur is None else (cur * T, Col0),
    }
    return out


# ------------------------------------------------------------------ focus
@aspect_maker
def focus(r: Replay, at: At) -> dict:
    """The ``focus`` aspect: what the followed thread loads, reads and writes at the step.

    All False when no thread is followed.
    """
    j, k, l, T = r._dims
    sub, kk = at.step.sub, at.step.k
    cur = at.progress.cur
    out = {
        "m_focus": np.zeros((j, k), bool),
        "n_focus": np.zeros((k, l), bool),
        "p_focus": np.zeros((j, l), bool),
        "mds_focus": np.zeros((T, T), bool),
        "nds_focus": np.zeros((T, T), bool),
    }
    if r.focus is None:
        return out
    fy, fx = r.focus
    pr, pc = (int(v) for v in r._p_element[fy, fx])
    if 0 <= pr < j and 0 <= pc < l:
        out["p_focus"][pr, pc] = True
    shared = at.need("slots")
    for name, pre, mat, load in (("M", "mds", "m", Sub.LOAD_M), ("N", "nds", "n", Sub.LOAD_N)):
        if sub in (load, Sub.PHASE) and cur is not None:
            # the slot the followed thread fills
            sy, sx = np.argwhere(r._per_phase[cur][name][6] == fy * T + fx)[0]
            out[f"{pre}_focus"][sy, sx] = True
            row, col = shared[f"{pre}_src"][sy, sx]
            if row >= 0:
                out[f"{mat}_focus"][row, col] = True
    if sub == Sub.K:
        out["mds_focus"][fy, kk] = True
        out["nds_focus"][kk, fx] = True
        for pre, mat, at_slot in (("mds", "m", (fy, kk)), ("nds", "n", (kk, fx))):
            row, col = shared[f"{pre}_src"][at_slot]
            if row >= 0:
                out[f"{mat}_focus"][row, col] = True
    return out


# --------------------------------------------------------------- counters
@aspect_maker
def counters(r: Replay, at: At) -> dict:
    """The ``counters`` aspect: global loads so far, the naive kernel's, terms done and loaded."""
    _, k, _, T = r._dims
    cur, m_loaded, n_loaded, terms = at.progress
    loads = 0
    if cur is not None:  # the phases before, and this one's tiles loaded so far
        reads = r._reads
        loads = (
            int(reads[:cur].sum()) + int(reads[cur, 0]) * m_loaded + int(reads[cur, 1]) * n_loaded
        )
    terms_loaded = 0 if cur is None else min(k, (cur + (1 if n_loaded else 0)) * T)
    valid = int(r._thread_valid.sum())
    return {
        "loads_so_far": loads,
        "naive_loads_so_far": 2 * valid * terms_loaded,
        "naive_loads_total": 2 * valid * k,
        "terms_done": 0 if cur is None else min(k, cur * T + terms),
        "terms_loaded": terms_loaded,
    }


# ----------------------------------------------------------- transactions
@aspect_maker
def transactions(r: Replay, at: At) -> dict:
    """The ``transactions`` aspect: the memory-transactions view of the step, or None.

    None unless the replay was made with ``transactions=True``.
    """
    overlay: TransactionsOverlay | None = None
    if r.transactions:
        T = r.trace.tile_width
        warp = r.warp if r.focus is None else (r.focus[0] * T + r.focus[1]) // 32
        step = at.step
        loads = {Sub.LOAD_M: ("M",), Sub.LOAD_N: ("N",), Sub.PHASE: ("M", "N")}.get(step.sub, ())
        k = step.k if step.sub == Sub.K else None
        overlay = transactions_overlay(
            r._mt, r.trace, r.block, at.progress.cur, loads=loads, k=k, warp=warp
        )
    return {"transactions": overlay}
