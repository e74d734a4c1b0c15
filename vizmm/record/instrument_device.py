"""Device functions the instrumenter's rewritten kernels call: each does one access and logs it.

:mod:`vizmm.record.instrument` rewrites a kernel's source so that every load
and store of a global array argument or a shared array, every
``cuda.syncthreads()`` and the kernel's end go through the functions here.
Each one performs the access (unless it is out of bounds: then it is logged
and *not* performed, and a load returns zero) and appends one event to the
thread's slots of the access log:

``ev`` (int32, flat ``(cap, NF, threads)``, field-major: see :data:`LINE_SHIFT`)
    Per event, the fields of :data:`FIELDS` (some packed, some left to the host).
``vals`` (float64, flat ``(cap, 2, threads)``)
    The value loaded or stored, then the kernel's accumulator (the variable
    it stores into P) at that moment.
``cnt`` (int32, ``(threads,)``)
    Events per thread; counted past ``cap`` (a count launch has ``cap`` 0).

A thread logs when its block is recorded in detail (``t >= 0``); every
thread counts its in-bounds global reads in the per-array ``reads`` counters
(one atomic add per load; empty arrays count nothing). Nothing here depends
on timing except the barrier tickets (the block's logical clock), so a GPU
run and a simulator run of one launch fill the same bytes.

Imported only by the rewritten kernels (through the instrumenter): it binds
``cuda`` to this process's target (:mod:`vizmm_kernels._target`).
"""

import inspect
import textwrap

import numpy as np

from vizmm_kernels import _target
from vizmm_kernels._hw import clock64, device, globaltimer, smid
from vizmm_kernels._target import cuda

from ..trace.access_log import (  # noqa: F401 - the log's codes, where the writers take them
    ARR,
    ARR_SHIFT,
    ARRIVE,
    COL,
    END,
    EPOCH,
    FIELDS,
    FLAG,
    FLAG_SHIFT,
    IDX,
    LINE,
    LINE_SHIFT,
    LOAD,
    MAX_ARRAYS,
    MAX_LINE,
    MOVE,
    MOVE_ADD,
    MOVE_SET,
    NF,
    NO_INDEX,
    OK,
    OP,
    OUT_OF_BOUNDS,
    RELEASE,
    ROW,
    SIM_ROW,
    SOURCE_OUT_OF_BOUNDS,
    SRC_ARR,
    SRC_COL,
    SRC_IDX,
    SRC_ROW,
    STORE,
    TAG,
    TAG_ARRAYS,
    TAG_COMPUTED,
    TAG_NEVER,
    TAG_ZERO,
    TERM,
    TICK,
)

# Per-block info (as the hand-instrumented kernels: kernels/codes.py BLK_*).
_BLK_SMID, _BLK_T0, _BLK_T1, _BLK_CLK0, _BLK_CLK1, _BLK_SEQ = range(6)


#: What every logging helper's docstring ends with: the parameters :data:`_LOG` names.
_LOG_PARAMS = """
    ev : device array of int32, flat (cap, NF, threads); in the simulator a list
        The event log, field-major (see :data:`LINE_SHIFT`); the simulator's rows are
        :data:`SIM_ROW`.
    vals : device array of float64, flat (cap, 2, threads)
        Per event, the value loaded or stored and the accumulator (the simulator's rows
        hold them: unused there).
    cnt : device array of int32, (threads,); in the simulator a list of int
        Events per thread, counted past ``cap``; its length is the log's thread count.
    cap : int
        Events per thread the log has room for (0: a count launch).
    t : int
        The thread's row of the log (``slot * threads + tid``); -1 when its block is not
        recorded in detail: nothing is logged.
    ep : int
        The ``cuda.syncthreads()`` the thread has passed (its epoch).
    acc : float
        The kernel's accumulator (Pvalue) now, logged beside the value.
"""


def _logs(fn):
    """Give a logging helper's docstring the parameters every one of them ends with."""
    # cleandoc: Python 3.13 strips a docstring's indentation when it compiles it
    fn.__doc__ = inspect.cleandoc(fn.__doc__) + "\n" + textwrap.dedent(_LOG_PARAMS)
    return fn


#: The parameters every form of the log's writers shares.
_LOG_FN_PARAMS = """
    Parameters
    ----------
    ev : device array of int32, flat (cap, NF, threads); in the simulator a list
        The event log, field-major (see :data:`LINE_SHIFT`'s comment); the simulator's rows
        are :data:`SIM_ROW`.
    vals : device array of float64, flat (cap, 2, threads)
        Per event, the value loaded or stored and the accumulator (the simulator's rows
        hold them: unused there).
    cnt : device array of int32, (threads,); in the simulator a list of int
        Events per thread, counted past ``cap``; its length is the log's thread count.
    cap : int
        Events per thread the log has room for (0: a count launch).
    t : int
        The thread's row of the log (``slot * threads + tid``); -1 when its block is not
        recorded in detail: nothing is logged.
    op : int
        :data:`LOAD`, :data:`STORE`, :data:`ARRIVE`, :data:`RELEASE` or :data:`END`.
    flag : int
        :data:`OK`, :data:`OUT_OF_BOUNDS` (not performed) or :data:`SOURCE_OUT_OF_BOUNDS`
        (store skipped).
    arr : int
        The array's id; -1 for a barrier and the end.
    idx : int
        The flat index the code named.
    row, col : int
        The code's (row, col): a 2-D subscript's, or ``(a, b)`` of a 1-D index ``a*W + b``;
        :data:`NO_INDEX` when not known.
    tag : int
        A shared store's or load's slot tag, written or found (``src_idx * TAG_ARRAYS +
        src_arr``, or a ``TAG_*``).
    sa, si : int
        The source global element's array id and flat index (-1: none).
    sr, sc : int
        The source element's (row, col); :data:`NO_INDEX` when not known.
    ep : int
        The ``cuda.syncthreads()`` the thread has passed (its epoch).
    tk : int
        A barrier's ticket of the block's clock; -1 for the end.
    ln : int
        The line of the kernel's source the access is on.
    v : float
        The value loaded or stored.
    a : float
        The kernel's accumulator (Pvalue) now.
"""


def _log_doc(fn):
    """Give a writer of the log the entries of the one list of parameters it takes."""
    names = fn.__code__.co_varnames[: fn.__code__.co_argcount]
    head, _, body = _LOG_FN_PARAMS.partition("----------\n")
    entries, cur = {}, None
    for line in body.splitlines():
        if line.startswith("    ") and not line.startswith("        "):
            cur = line.strip().split(" :")[0]
            entries[cur] = [line]
        elif cur is not None:
            entries[cur].append(line)
    keep = [e for key, e in entries.items() if set(key.split(", ")) <= set(names)]
    text = head + "----------\n" + "\n".join(line for e in keep for line in e) + "\n"
    fn.__doc__ = inspect.cleandoc(fn.__doc__) + "\n" + textwrap.dedent(text)
    return fn


if _target.NAME == _target.SIMULATOR:
    # The simulator's forms: one tuple appended to a list per event (``ev`` is a
    # list there, :data:`SIM_ROW`), a tenth of the cost of writing the fields into
    # the arrays one Python call at a time; :func:`vizmm.record.instrument.run`
    # lays the rows out as a GPU's log after the launch. They also give the
    # fields the GPU's forms leave out, with the values decode() gives them.

    @device
    @_log_doc
    def log_g(ev, vals, cnt, cap, t, op, flag, arr, idx, row, col, ep, ln, v, a):
        """Append a global array's access to thread ``t``'s log (nothing when ``t < 0``)."""
        if t >= 0:
            n = cnt[t]
            if n < cap:
                w = op + flag * 8 + (arr + 1) * 32 + ln * 8192
                ev.append((t, n, w, idx, row, col, -4, -1, -1, -1, -1, ep, -1, v, a))
            cnt[t] = n + 1

    @device
    @_log_doc
    def log_s(
        ev, vals, cnt, cap, t, op, flag, arr, idx, row, col, tag, sa, si, sr, sc, ep, ln, v, a
    ):
        """Append a shared array's access to thread ``t``'s log (nothing when ``t < 0``)."""
        if t >= 0:
            n = cnt[t]
            if n < cap:
                w = op + flag * 8 + (arr + 1) * 32 + ln * 8192
                ev.append((t, n, w, idx, row, col, tag, sa, si, sr, sc, ep, -1, v, a))
            cnt[t] = n + 1

    @device
    @_log_doc
    def log_b(ev, vals, cnt, cap, t, op, ep, tk, ln, a):
        """Append a barrier's arrival or release, or the end, to thread ``t``'s log."""
        if t >= 0:
            n = cnt[t]
            if n < cap:
                ev.append((t, n, op + ln * 8192, -1, -1, -1, -4, -1, -1, -1, -1, ep, tk, 0.0, a))
            cnt[t] = n + 1

    @device
    def sync(ticks, slot, ln, ev, vals, cnt, cap, t, ep, acc):
        """A ``cuda.syncthreads()`` in the simulator: arrival, barrier and release, logged.

        One call where a GPU's rewritten kernel takes a ticket, calls :func:`arrive`,
        waits, takes a ticket again and calls :func:`release`: the simulator spends
        its time per Python call, and a thread is its warp's only active lane there.
        A ticket is the next value of the detail block's counter (``next`` of an
        ``itertools.count`` is one step under the interpreter's lock: no other
        lock is taken). The simulator has no ``%clock64``: no clock is written.

        Parameters
        ----------
        ticks : list of itertools.count
            The barrier clock of each detail block.
        slot : int
            The thread's detail block (its index in ``ticks``); read when ``t >= 0``.
        ln : int
            The line of the kernel's source the barrier is on.
        ev : list
            The event log's rows (:data:`SIM_ROW`).
        vals : ndarray
            Unused in the simulator (the rows hold the values).
        cnt : list of int
            Events per thread, counted past ``cap``.
        cap : int
            Events per thread the log has room for (0: a count launch).
        t : int
            The thread's row of the log; -1 when its block is not recorded in detail.
        ep : int
            The barriers the thread has passed (its epoch) before this one.
        acc : float
            The kernel's accumulator (Pvalue) now.

        Returns
        -------
        int
            The epoch after the barrier, ``ep + 1``.
        """
        if t >= 0:
            log_b(ev, vals, cnt, cap, t, 3, ep, next(ticks[slot]), ln, acc)
        cuda.syncthreads()
        if t >= 0:
            log_b(ev, vals, cnt, cap, t, 4, ep + 1, next(ticks[slot]), ln, acc)
        return ep + 1

    @device
    def count_read(reads, i):
        """Count a read of element ``i``: the simulator appends ``i`` (counted after the launch).

        An atomic add in the simulator takes a lock that every thread shares; a
        list's ``append`` is one step under the interpreter's lock.

        Parameters
        ----------
        reads : list of int
            The array's reads so far, one flat index per read.
        i : int
            The flat index read (in bounds).
        """
        reads.append(i)

else:

    @device
    @_log_doc
    def log_g(ev, vals, cnt, cap, t, op, flag, arr, idx, row, col, ep, ln, v, a):
        """Append a global array's access to thread ``t``'s log (nothing when ``t < 0``)."""
        if t >= 0:
            n = cnt[t]
            if n < cap:
                T = cnt.shape[0]
                b = n * 14 * T + t
                ev[b] = op + flag * 8 + (arr + 1) * 32 + ln * 8192
                ev[b + 3 * T] = idx
                ev[b + 4 * T] = row
                ev[b + 5 * T] = col
                ev[b + 11 * T] = ep
                w = n * 2 * T + t
                vals[w] = v
                vals[w + T] = a
            cnt[t] = n + 1

    @device
    @_log_doc
    def log_s(
        ev, vals, cnt, cap, t, op, flag, arr, idx, row, col, tag, sa, si, sr, sc, ep, ln, v, a
    ):
        """Append a shared array's access to thread ``t``'s log (nothing when ``t < 0``)."""
        if t >= 0:
            n = cnt[t]
            if n < cap:
                T = cnt.shape[0]
                b = n * 14 * T + t
                ev[b] = op + flag * 8 + (arr + 1) * 32 + ln * 8192
                ev[b + 3 * T] = idx
                ev[b + 4 * T] = row
                ev[b + 5 * T] = col
                ev[b + 6 * T] = tag
                ev[b + 7 * T] = sa
                ev[b + 8 * T] = si
                ev[b + 9 * T] = sr
                ev[b + 10 * T] = sc
                ev[b + 11 * T] = ep
                w = n * 2 * T + t
                vals[w] = v
                vals[w + T] = a
            cnt[t] = n + 1

    @device
    @_log_doc
    def log_b(ev, vals, cnt, cap, t, op, ep, tk, ln, a):
        """Append a barrier's arrival or release, or the end, to thread ``t``'s log."""
        if t >= 0:
            n = cnt[t]
            if n < cap:
                T = cnt.shape[0]
                b = n * 14 * T + t
                ev[b] = op + ln * 8192
                ev[b + 11 * T] = ep
                ev[b + 12 * T] = tk
                vals[n * 2 * T + T + t] = a
            cnt[t] = n + 1

    @device
    def count_read(reads, i):
        """Count a read of element ``i`` of a global array (one atomic add).

        Parameters
        ----------
        reads : device array of int32
            The array's per-element read counters (flat); empty: not counted.
        i : int
            The flat index read (in bounds).
        """
        if reads.shape[0] > 0:
            cuda.atomic.add(reads, i, 1)


@device
@_logs
def g_load(A, i, row, col, aid, ln, reads, zero, ev, vals, cnt, cap, t, ep, acc):
    """``A[i]`` of a 1-D global array, logged; zero (not read) when ``i`` is out of bounds.

    Parameters
    ----------
    A : device array, 1-D
        A global array argument (M, N or P given flat).
    i : int
        The flat index the code named (may be out of bounds).
    row, col : int
        The code's (row, col) of a 1-D index ``row*W + col``; :data:`NO_INDEX` when not known.
    aid : int
        The array's id (its index in the instrumenter's table).
    ln : int
        The line of the kernel's source the access is on.
    reads : device array of int32
        Per-element read counters of the array (flat); empty: not counted.
    zero : scalar
        The array's zero (its dtype), returned out of bounds.
    """
    if i >= 0 and i < A.shape[0]:
        v = A[i]
        count_read(reads, i)
        log_g(ev, vals, cnt, cap, t, 1, 0, aid, i, row, col, ep, ln, v, acc)
        return v
    log_g(ev, vals, cnt, cap, t, 1, 1, aid, i, row, col, ep, ln, 0.0, acc)
    return zero


@device
@_logs
def g_load2(A, r, c, aid, ln, reads, zero, ev, vals, cnt, cap, t, ep, acc):
    """``A[r, c]`` of a 2-D global array, logged with its flat index ``r * ncols + c``.

    Parameters
    ----------
    A : device array, 2-D
        A global array argument.
    r, c : int
        The row and column the code named (may be out of bounds).
    aid : int
        The array's id (its index in the instrumenter's table).
    ln : int
        The line of the kernel's source the access is on.
    reads : device array of int32
        Per-element read counters of the array (flat); empty: not counted.
    zero : scalar
        The array's zero (its dtype), returned out of bounds.
    """
    i = r * A.shape[1] + c
    if r >= 0 and r < A.shape[0] and c >= 0 and c < A.shape[1]:
        v = A[r, c]
        count_read(reads, i)
        log_g(ev, vals, cnt, cap, t, 1, 0, aid, i, r, c, ep, ln, v, acc)
        return v
    log_g(ev, vals, cnt, cap, t, 1, 1, aid, i, r, c, ep, ln, 0.0, acc)
    return zero


@device
def g_ok(A, i):
    """Whether flat index ``i`` lies inside the 1-D array ``A``.

    Parameters
    ----------
    A : device array, 1-D
        A global array argument (M, N or P given flat).
    i : int
        The flat index the code named (may be out of bounds).
    """
    return i >= 0 and i < A.shape[0]


@device
def g_ok2(A, r, c):
    """Whether ``(r, c)`` lies inside the 2-D array ``A``.

    Parameters
    ----------
    A : device array, 2-D
        A global array argument.
    r, c : int
        The row and column the code named (may be out of bounds).
    """
    return r >= 0 and r < A.shape[0] and c >= 0 and c < A.shape[1]


@device
@_logs
def g_store(A, i, v, row, col, aid, ln, ev, vals, cnt, cap, t, ep, acc):
    """``A[i] = v`` on a 1-D global array, logged; not performed out of bounds.

    Parameters
    ----------
    A : device array, 1-D
        A global array argument (M, N or P given flat).
    i : int
        The flat index the code named (may be out of bounds).
    v : scalar
        The value stored.
    row, col : int
        The code's (row, col) of a 1-D index ``row*W + col``; :data:`NO_INDEX` when not known.
    aid : int
        The array's id (its index in the instrumenter's table).
    ln : int
        The line of the kernel's source the access is on.
    """
    flag = 1  # out of bounds: not performed
    if i >= 0 and i < A.shape[0]:
        A[i] = v
        flag = 0
    log_g(ev, vals, cnt, cap, t, 2, flag, aid, i, row, col, ep, ln, v, acc)


@device
@_logs
def g_store2(A, r, c, v, aid, ln, ev, vals, cnt, cap, t, ep, acc):
    """``A[r, c] = v`` on a 2-D global array, logged; not performed out of bounds.

    Parameters
    ----------
    A : device array, 2-D
        A global array argument.
    r, c : int
        The row and column the code named (may be out of bounds).
    v : scalar
        The value stored.
    aid : int
        The array's id (its index in the instrumenter's table).
    ln : int
        The line of the kernel's source the access is on.
    """
    i = r * A.shape[1] + c
    flag = 1  # out of bounds: not performed
    if r >= 0 and r < A.shape[0] and c >= 0 and c < A.shape[1]:
        A[r, c] = v
        flag = 0
    log_g(ev, vals, cnt, cap, t, 2, flag, aid, i, r, c, ep, ln, v, acc)


@device
@_logs
def s_load(S, i, row, col, sh, off, aid, ln, ev, vals, cnt, cap, t, ep, acc):
    """``S[i]`` of a 1-D shared array (or a section of the extern array), logged with its tag.

    Parameters
    ----------
    S : shared array, 1-D
        A shared array (Mds, Nds) or a section of the dynamic one.
    i : int
        The flat index the code named (may be out of bounds).
    row, col : int
        The code's (row, col) of a 1-D index ``row*W + col``; :data:`NO_INDEX` when not known.
    sh : shared array of int32, 1-D
        The shadow of the shared array: the tag of each slot.
    off : int
        Where the array starts in its shadow (a section's offset into the dynamic array; else
        0).
    aid : int
        The array's id (its index in the instrumenter's table).
    ln : int
        The line of the kernel's source the access is on.
    """
    if i >= 0 and i < S.shape[0]:
        v = S[i]
        tag = sh[off + i]
        sa, si = tag, -1
        if tag >= 0:
            sa, si = tag % 8, tag // 8
        log_s(ev, vals, cnt, cap, t, 1, 0, aid, i, row, col, tag, sa, si, -1, -1, ep, ln, v, acc)
        return v
    log_s(ev, vals, cnt, cap, t, 1, 1, aid, i, row, col, -4, -1, -1, -1, -1, ep, ln, 0.0, acc)
    return S[0] * 0


@device
@_logs
def s_load2(S, r, c, sh, off, aid, ln, ev, vals, cnt, cap, t, ep, acc):
    """``S[r, c]`` of a 2-D shared array, logged with the tag of its slot.

    Parameters
    ----------
    S : shared array, 2-D
        A shared array (Mds, Nds).
    r, c : int
        The row and column the code named (may be out of bounds).
    sh : shared array of int32, 1-D
        The shadow of the shared array: the tag of each slot.
    off : int
        Where the array starts in its shadow (a section's offset into the dynamic array; else
        0).
    aid : int
        The array's id (its index in the instrumenter's table).
    ln : int
        The line of the kernel's source the access is on.
    """
    i = r * S.shape[1] + c
    if r >= 0 and r < S.shape[0] and c >= 0 and c < S.shape[1]:
        v = S[r, c]
        tag = sh[off + i]
        sa, si = tag, -1
        if tag >= 0:
            sa, si = tag % 8, tag // 8
        log_s(ev, vals, cnt, cap, t, 1, 0, aid, i, r, c, tag, sa, si, -1, -1, ep, ln, v, acc)
        return v
    log_s(ev, vals, cnt, cap, t, 1, 1, aid, i, r, c, -4, -1, -1, -1, -1, ep, ln, 0.0, acc)
    return S[0, 0] * 0


@device
@_logs
def s_store(
    S, i, v, row, col, sh, off, ok, tag, sa, si, sr, sc, aid, ln, ev, vals, cnt, cap, t, ep, acc
):
    """``S[i] = v`` on a 1-D shared array and its slot's tag; not done when ``ok`` is false.

    Parameters
    ----------
    S : shared array, 1-D
        A shared array (Mds, Nds) or a section of the dynamic one.
    i : int
        The flat index the code named (may be out of bounds).
    v : scalar
        The value stored.
    row, col : int
        The code's (row, col) of a 1-D index ``row*W + col``; :data:`NO_INDEX` when not known.
    sh : shared array of int32, 1-D
        The shadow of the shared array: the tag of each slot.
    off : int
        Where the array starts in its shadow (a section's offset into the dynamic array; else
        0).
    ok : bool
        The guard: false when the global element it copies is out of bounds (the store is
        skipped).
    tag : int
        The tag the slot gets: ``src_idx * TAG_ARRAYS + src_arr`` of the element copied, or
        :data:`TAG_ZERO` / :data:`TAG_COMPUTED`.
    sa, si : int
        The source global element's array id and flat index (-1: none).
    sr, sc : int
        The source element's (row, col); :data:`NO_INDEX` when not known.
    aid : int
        The array's id (its index in the instrumenter's table).
    ln : int
        The line of the kernel's source the access is on.
    """
    flag = 1  # out of bounds: not performed
    if i >= 0 and i < S.shape[0]:
        flag = 2  # in bounds, but its guard says no
        if ok:
            S[i] = v
            sh[off + i] = tag
            flag = 0
    log_s(ev, vals, cnt, cap, t, 2, flag, aid, i, row, col, tag, sa, si, sr, sc, ep, ln, v, acc)


@device
@_logs
def s_store2(S, r, c, v, sh, off, ok, tag, sa, si, sr, sc, aid, ln, ev, vals, cnt, cap, t, ep, acc):
    """``S[r, c] = v`` on a 2-D shared array and its slot's tag (see :func:`s_store`).

    Parameters
    ----------
    S : shared array, 2-D
        A shared array (Mds, Nds).
    r, c : int
        The row and column the code named (may be out of bounds).
    v : scalar
        The value stored.
    sh : shared array of int32, 1-D
        The shadow of the shared array: the tag of each slot.
    off : int
        Where the array starts in its shadow (a section's offset into the dynamic array; else
        0).
    ok : bool
        The guard: false when the global element it copies is out of bounds (the store is
        skipped).
    tag : int
        The tag the slot gets: ``src_idx * TAG_ARRAYS + src_arr`` of the element copied, or
        :data:`TAG_ZERO` / :data:`TAG_COMPUTED`.
    sa, si : int
        The source global element's array id and flat index (-1: none).
    sr, sc : int
        The source element's (row, col); :data:`NO_INDEX` when not known.
    aid : int
        The array's id (its index in the instrumenter's table).
    ln : int
        The line of the kernel's source the access is on.
    """
    i = r * S.shape[1] + c
    flag = 1  # out of bounds: not performed
    if r >= 0 and r < S.shape[0] and c >= 0 and c < S.shape[1]:
        flag = 2  # in bounds, but its guard says no
        if ok:
            S[r, c] = v
            sh[off + i] = tag
            flag = 0
    log_s(ev, vals, cnt, cap, t, 2, flag, aid, i, r, c, tag, sa, si, sr, sc, ep, ln, v, acc)


# A barrier's ticket of the block's logical clock (``_tick``, one int32 in shared
# memory) is taken in the rewritten kernel itself (numba-cuda-mlir 0.6 writes
# PTX that ptxas rejects for an atomic on a shared array passed to a device
# function), one atomic per warp on a GPU:
#
#     _m = warp_mask()
#     _r = lane_rank(_m)
#     if _r == 0:
#         _tk = cuda.atomic.add(_tick, 0, lanes(_m))
#     _tk = from_leader(_m, _tk) + _r
#
# The warp's active threads take consecutive tickets in lane order: the tickets
# per-thread atomics of one warp would give, at one atomic instead of up to 32
# on one address. The mask is read once, before the leader's branch: read again
# after it, the threads may not have met yet (independent thread scheduling)
# and each part of the warp would name its own leader. The simulator's rewrite
# takes its tickets in :func:`sync` (a simulated thread is its warp's only
# lane) and never calls these.


@device
def warp_mask():
    """The warp's active threads, read once before the leader's branch.

    Returns
    -------
    int
        ``activemask()``: bit ``i`` for active lane ``i``.
    """
    return cuda.activemask()


@device
def lane_rank(m):
    """The thread's rank among the threads of ``m`` (0: the warp's leader).

    Parameters
    ----------
    m : int
        :func:`warp_mask`'s answer.

    Returns
    -------
    int
        Lanes of ``m`` below this one.
    """
    return cuda.popc(m & ((1 << cuda.laneid) - 1))


@device
def lanes(m):
    """How many tickets the warp's leader takes: the threads of ``m``.

    Parameters
    ----------
    m : int
        :func:`warp_mask`'s answer.

    Returns
    -------
    int
        Lanes in ``m``.
    """
    return cuda.popc(m)


@device
def from_leader(m, x):
    """The leader's (lowest lane of ``m``) value, shared with the threads of ``m``.

    ``shfl_sync`` waits for every thread of ``m``: the warp meets again here.

    Parameters
    ----------
    m : int
        :func:`warp_mask`'s answer.
    x : int
        The value the thread holds (the leader's old clock).

    Returns
    -------
    int
        The leader's ``x``.
    """
    return cuda.shfl_sync(m, x, cuda.ffs(m) - 1)


@device
@_logs
def arrive(tk, ln, clk, nbar, ev, vals, cnt, cap, t, ep, acc):
    """A thread arrives at a ``cuda.syncthreads()``: its ticket of the block's clock, logged.

    Its ``%clock64`` goes to ``clk[2 * ep * threads + t]`` (int64, beside the
    log: the log itself holds no timing but the ticket).

    Parameters
    ----------
    tk : int
        The thread's ticket of the block's logical clock (``_tick``), taken just before.
    ln : int
        The line of the kernel's source the access is on.
    clk : device array of int64, flat (nbar, threads)
        ``%clock64`` at each barrier arrival and release of the logged threads.
    nbar : int
        Clock entries per thread (arrivals and releases bounded).
    """
    if t >= 0:
        if 2 * ep < nbar:
            clk[2 * ep * cnt.shape[0] + t] = clock64()
        log_b(ev, vals, cnt, cap, t, 3, ep, tk, ln, acc)


@device
@_logs
def release(tk, ln, clk, nbar, ev, vals, cnt, cap, t, ep, acc):
    """A thread leaves a ``cuda.syncthreads()`` (``ep`` counts it); its clock at ``2*ep - 1``.

    Parameters
    ----------
    tk : int
        The thread's ticket of the block's logical clock (``_tick``), taken just before.
    ln : int
        The line of the kernel's source the access is on.
    clk : device array of int64, flat (nbar, threads)
        ``%clock64`` at each barrier arrival and release of the logged threads.
    nbar : int
        Clock entries per thread (arrivals and releases bounded).
    """
    if t >= 0:
        if 2 * ep - 1 < nbar:
            clk[(2 * ep - 1) * cnt.shape[0] + t] = clock64()
        log_b(ev, vals, cnt, cap, t, 4, ep, tk, ln, acc)


@device
def g_tag(A, i, gid):
    """The provenance tag of ``A[i]`` of a 1-D global array: ``i * TAG_ARRAYS + gid``.

    Parameters
    ----------
    A : device array, 1-D
        A global array argument.
    i : int
        The flat index the code named.
    gid : int
        The array's id.

    Returns
    -------
    int
        The tag; :data:`TAG_ZERO` out of bounds (the load gives zero).
    """
    if i >= 0 and i < A.shape[0]:
        return i * 8 + gid
    return -1


@device
def g_tag2(A, r, c, gid):
    """The provenance tag of ``A[r, c]`` of a 2-D global array (see :func:`g_tag`).

    Parameters
    ----------
    A : device array, 2-D
        A global array argument.
    r, c : int
        The row and column the code named.
    gid : int
        The array's id.

    Returns
    -------
    int
        ``(r * ncols + c) * TAG_ARRAYS + gid``; :data:`TAG_ZERO` out of bounds.
    """
    if r >= 0 and r < A.shape[0] and c >= 0 and c < A.shape[1]:
        return (r * A.shape[1] + c) * 8 + gid
    return -1


@device
def s_tag(S, i, sh, off):
    """The tag a 1-D shared slot holds (its shadow), :data:`TAG_ZERO` out of bounds.

    Parameters
    ----------
    S : shared array, 1-D
        A shared array.
    i : int
        The index the code named.
    sh : shared array of int32, 1-D
        The array's shadow.
    off : int
        Where the array starts in its shadow.

    Returns
    -------
    int
        The slot's tag.
    """
    if i >= 0 and i < S.shape[0]:
        return sh[off + i]
    return -1


@device
def s_tag2(S, r, c, sh, off):
    """The tag a 2-D shared slot holds (its shadow), :data:`TAG_ZERO` out of bounds.

    Parameters
    ----------
    S : shared array, 2-D
        A shared array.
    r, c : int
        The row and column the code named.
    sh : shared array of int32, 1-D
        The array's shadow.
    off : int
        Where the array starts in its shadow.

    Returns
    -------
    int
        The slot's tag.
    """
    if r >= 0 and r < S.shape[0] and c >= 0 and c < S.shape[1]:
        return sh[off + r * S.shape[1] + c]
    return -1


@device
def flat2(A, r, c):
    """The flat index ``r * ncols + c`` of a 2-D array's element, -1 outside the array.

    Parameters
    ----------
    A : array, 2-D
        The array.
    r, c : int
        The row and column.

    Returns
    -------
    int
        -1 where ``(r, c)`` lies outside ``A`` (a store there is not performed: no element
        takes its terms).
    """
    if r >= 0 and r < A.shape[0] and c >= 0 and c < A.shape[1]:
        return r * A.shape[1] + c
    return -1


@device
def zfill(zf, bid, n, zph, aid, narr):
    """Count a constant stored into shared array ``aid`` (a zero-fill) by the block ``bid``.

    ``n`` is how many stores into that array the thread made before this one
    (the phase, as :mod:`.instrument_log` reads it); ``zf`` is flat
    ``(blocks, zph, narr)``, empty when not counted. Every block counts,
    recorded in detail or not.

    Parameters
    ----------
    zf : ndarray of int32
        Flat ``(blocks, zph, narr)`` counters; empty when not counted.
    bid : int
        The block, ``by * gridDim.x + bx``.
    n : int
        Stores into that array the thread made before this one (the phase).
    zph : int
        Phases counted per block.
    aid : int
        The shared array's id.
    narr : int
        Arrays in the log's table.
    """
    if zf.shape[0] > 0 and n < zph:
        cuda.atomic.add(zf, (bid * zph + n) * narr + aid, 1)


# ------------------------------------------------------------ the lean variant
# Aggregated recording on a GPU runs the lean variant over the whole grid:
# counts only (the read counters, zero-fills, the blocks' SM and times), no
# log, no tags, no per-event branches. The detail blocks then run again in the
# full variant (a second launch over those blocks only).


if _target.NAME == _target.SIMULATOR:

    @device
    def inside(i, n):
        """Whether index ``i`` lies in ``[0, n)``.

        Parameters
        ----------
        i : int
            An index the code named (may be negative).
        n : int
            The extent.

        Returns
        -------
        bool
        """
        return i >= 0 and i < n

else:

    @device
    def inside(i, n):
        """Whether index ``i`` lies in ``[0, n)``: one unsigned compare (a negative ``i`` wraps).

        Two signed compares joined by ``and`` cost the lean variant 1.25x the plain
        kernel at Width 4096, TILE_WIDTH 32 on an H100 (numba-cuda-mlir), this 1.18x
        (``benchmarks/results/lean-unsigned-h100.json``).

        Parameters
        ----------
        i : int
            An index the code named (may be negative).
        n : int
            The extent.

        Returns
        -------
        bool
        """
        return np.uint64(i) < np.uint64(n)


@device
def lg_load(A, i, reads, zero):
    """``A[i]``, its read counted; out of bounds zero (element 0 is read then, not counted).

    Parameters
    ----------
    A : device array, 1-D
    i : int
        Flat index.
    reads : ndarray of int32
        Per-element read counters of ``A``.
    zero : scalar
        ``A``'s zero, returned out of bounds.
    """
    # Branch-free: the load and the count go out whatever ``ok`` (at a clamped index, the
    # count adding 0), so the compiler issues them early; with a branch around them the
    # lean variant took 1.39x the plain kernel at Width 4096, TILE_WIDTH 32 on an H100,
    # this way 1.25x (``benchmarks/results/lean-variants-h100.json``).
    ok = inside(i, A.shape[0])
    j = i if ok else 0
    v = A[j]
    cuda.atomic.add(reads, j, 1 if ok else 0)
    return v if ok else zero


@device
def lg_load2(A, r, c, reads, zero):
    """``A[r, c]``, counted at ``r * ncols + c``; out of bounds zero (``A[0, 0]`` read, uncounted).

    Parameters
    ----------
    A : device array, 2-D
    r, c : int
        Row and column.
    reads : ndarray of int32
        Per-element read counters of ``A`` (flat).
    zero : scalar
        ``A``'s zero, returned out of bounds.
    """
    ok = inside(r, A.shape[0]) & inside(c, A.shape[1])
    rr = r if ok else 0
    cc = c if ok else 0
    v = A[rr, cc]  # branch-free, as lg_load
    cuda.atomic.add(reads, rr * A.shape[1] + cc, 1 if ok else 0)
    return v if ok else zero


@device
def lg_store(A, i, v):
    """``A[i] = v``; not performed out of bounds.

    Parameters
    ----------
    A : device array, 1-D
    i : int
        Flat index.
    v : scalar
        The value stored.
    """
    if i >= 0 and i < A.shape[0]:
        A[i] = v


@device
def lg_store2(A, r, c, v):
    """``A[r, c] = v``; not performed out of bounds.

    Parameters
    ----------
    A : device array, 2-D
    r, c : int
        Row and column.
    v : scalar
        The value stored.
    """
    if r >= 0 and r < A.shape[0] and c >= 0 and c < A.shape[1]:
        A[r, c] = v


@device
def ls_store(S, i, v, ok):
    """``S[i] = v`` on a shared array when ``ok`` (its source was in bounds) and ``i`` is.

    Parameters
    ----------
    S : shared array, 1-D
    i : int
        Flat index.
    v : scalar
        The value stored.
    ok : bool
        Whether the global element it copies was in bounds.
    """
    if ok and i >= 0 and i < S.shape[0]:
        S[i] = v


@device
def ls_store2(S, r, c, v, ok):
    """``S[r, c] = v`` on a shared array when ``ok`` and ``(r, c)`` is in bounds.

    Parameters
    ----------
    S : shared array, 2-D
    r, c : int
        Row and column.
    v : scalar
        The value stored.
    ok : bool
        Whether the global element it copies was in bounds.
    """
    if ok and r >= 0 and r < S.shape[0] and c >= 0 and c < S.shape[1]:
        S[r, c] = v


@device
def ls_load(S, i):
    """``S[i]`` of a shared array; zero out of bounds.

    Parameters
    ----------
    S : shared array, 1-D
    i : int
        Flat index.
    """
    if i >= 0 and i < S.shape[0]:
        return S[i]
    return S[0] * 0


@device
def ls_load2(S, r, c):
    """``S[r, c]`` of a shared array; zero out of bounds.

    Parameters
    ----------
    S : shared array, 2-D
    r, c : int
        Row and column.
    """
    if r >= 0 and r < S.shape[0] and c >= 0 and c < S.shape[1]:
        return S[r, c]
    return S[0, 0] * 0


@device
def lend(blk, seq, bid, tid):
    """The thread ends; thread 0 closes the block's times (the lean variant's :func:`end`).

    Parameters
    ----------
    blk : ndarray of int64
        Flat ``(blocks, 6)`` block info.
    seq : ndarray of int32
        The completion counter (one element).
    bid : int
        The block, ``by * gridDim.x + bx``.
    tid : int
        The thread within the block.
    """
    if tid == 0:
        blk[bid * 6 + 4] = clock64()
        blk[bid * 6 + 2] = globaltimer()
        blk[bid * 6 + 5] = cuda.atomic.add(seq, 0, 1)


@device
def block_start(blk, bid, tid):
    """Thread 0 records the block's SM, ``%globaltimer`` (ns) and ``%clock64`` at its start.

    Parameters
    ----------
    blk : device array of int64, flat (blocks, 6)
        Per block, its SM, ``%globaltimer`` start and end (ns), ``%clock64`` start and end and
        completion order.
    bid : int
        The block, ``by * gridDim.x + bx``.
    tid : int
        The thread within the block, ``(tz * blockDim.y + ty) * blockDim.x + tx``.
    """
    if tid == 0:
        blk[bid * 6 + 0] = smid()
        blk[bid * 6 + 1] = globaltimer()
        blk[bid * 6 + 3] = clock64()


@device
@_logs
def end(blk, seq, bid, tid, ln, ev, vals, cnt, cap, t, ep, acc):
    """The thread ends (last line or ``return``), logged; thread 0 closes the block's times.

    Parameters
    ----------
    blk : device array of int64, flat (blocks, 6)
        Per block, its SM, ``%globaltimer`` start and end (ns), ``%clock64`` start and end and
        completion order.
    seq : device array of int32, (1,)
        The completion counter.
    bid : int
        The block, ``by * gridDim.x + bx``.
    tid : int
        The thread within the block, ``(tz * blockDim.y + ty) * blockDim.x + tx``.
    ln : int
        The line of the kernel's source the access is on.
    """
    log_b(ev, vals, cnt, cap, t, 5, ep, -1, ln, acc)
    if tid == 0:
        blk[bid * 6 + 4] = clock64()
        blk[bid * 6 + 2] = globaltimer()
        blk[bid * 6 + 5] = cuda.atomic.add(seq, 0, 1)
