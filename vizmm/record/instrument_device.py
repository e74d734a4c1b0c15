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


#: Every parameter the device functions share, described once: a function's docstring
#: describes only the parameters it names otherwise; :func:`_documented` adds these.
_PARAMETERS = """
A : device array, 1-D or 2-D
    A global array argument (M, N or P; given flat when 1-D).
S : shared array, 1-D or 2-D
    A shared array (Mds, Nds) or, 1-D, a section of the dynamic one.
i : int
    The flat index the code named (may be out of bounds).
r, c : int
    The row and column the code named (may be out of bounds).
v : scalar
    The value loaded or stored.
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
sh : shared array of int32, 1-D
    The shadow of the shared array: the tag of each slot.
off : int
    Where the array starts in its shadow (a section's offset into the dynamic array; else
    0).
ok : bool
    The guard: false when the global element a shared store copies is out of bounds (the
    store is skipped).
tag : int
    The slot's tag: what a store gives it (``src_idx * TAG_ARRAYS + src_arr`` of the
    element copied, :data:`TAG_ZERO` or :data:`TAG_COMPUTED`), or what a load found.
sa, si : int
    The source global element's array id and flat index (-1: none).
sr, sc : int
    The source element's (row, col); :data:`NO_INDEX` when not known.
aid : int
    The array's id (its index in the instrumenter's table).
gid : int
    The global array's id.
tk : int
    The thread's ticket of the block's logical clock (``_tick``), taken just before a
    barrier; -1 for the end.
ln : int
    The line of the kernel's source the access, barrier or end is on.
clk : device array of int64, flat (nbar, threads)
    ``%clock64`` at each barrier arrival and release of the logged threads.
nbar : int
    Clock entries per thread (arrivals and releases bounded).
reads : device array of int32
    The array's per-element read counters (flat); empty: not counted (the full variant).
zero : scalar
    The array's zero (its dtype), returned out of bounds.
m : int
    :func:`warp_mask`'s answer.
blk : device array of int64, flat (blocks, 6)
    Per block, its SM, ``%globaltimer`` start and end (ns), ``%clock64`` start and end and
    completion order.
seq : device array of int32, (1,)
    The completion counter.
bid : int
    The block, ``by * gridDim.x + bx``.
tid : int
    The thread within the block, ``(tz * blockDim.y + ty) * blockDim.x + tx``.
ep : int
    The ``cuda.syncthreads()`` the thread has passed (its epoch).
acc : float
    The kernel's accumulator (Pvalue) now, logged beside the value.
a : float
    The kernel's accumulator (Pvalue) now.
"""


def _entries(lines):
    """``{name: its lines}`` of a numpydoc list of parameters (``"r, c"`` is one entry)."""
    entries, cur = {}, None
    for line in lines:
        if line and not line.startswith(" "):
            cur = line.split(" :")[0]
            entries[cur] = [line]
        elif cur is not None and line:
            entries[cur].append(line)
    return entries


_SHARED = _entries(_PARAMETERS.strip("\n").splitlines())


def _documented(fn):
    """Give a device function the Parameters section of its signature, in its order.

    Parameters its docstring describes keep their words; every other one takes
    its entry of :data:`_PARAMETERS`. The docstring's other sections (Returns)
    follow.
    """
    lines = [*inspect.cleandoc(fn.__doc__).splitlines(), ""]
    dashes = [n for n in range(1, len(lines)) if lines[n] and lines[n] == "-" * len(lines[n - 1])]
    bounds = [*(n - 1 for n in dashes), len(lines)]
    sections = {lines[a]: lines[a + 2 : b] for a, b in zip(bounds, bounds[1:], strict=False)}
    own = _entries(sections.pop("Parameters", []))
    entries = []
    for name in fn.__code__.co_varnames[: fn.__code__.co_argcount]:
        key = next((k for k in [*own, *_SHARED] if name in k.split(", ")), None)
        if key is None:
            raise TypeError(f"{fn.__name__}: parameter {name!r} is described nowhere")
        entry = own[key] if key in own else _SHARED[key]
        if entry not in entries:
            entries.append(entry)
    text = [*lines[: bounds[0]], "Parameters", "----------", *sum(entries, []), ""]
    for head, body in sections.items():
        text += [head, "-" * len(head), *body]
    fn.__doc__ = "\n".join(text).rstrip() + "\n"
    return fn


if _target.NAME == _target.SIMULATOR:
    # The simulator's forms: one tuple appended to a list per event (``ev`` is a
    # list there, :data:`SIM_ROW`), a tenth of the cost of writing the fields into
    # the arrays one Python call at a time; :func:`vizmm.record.instrument.run`
    # lays the rows out as a GPU's log after the launch. They also give the
    # fields the GPU's forms leave out, with the values decode() gives them.

    @device
    def _put_g(ev, vals, cnt, t, n, w, idx, row, col, ep, v, a):
        """Thread ``t``'s event ``n``, a global access whose first word is ``w``, as a row."""
        ev.append((t, n, w, idx, row, col, -4, -1, -1, -1, -1, ep, -1, v, a))

    @device
    def _put_s(ev, vals, cnt, t, n, w, idx, row, col, tag, sa, si, sr, sc, ep, v, a):
        """Thread ``t``'s event ``n``, a shared access with its tag and source, as a row."""
        ev.append((t, n, w, idx, row, col, tag, sa, si, sr, sc, ep, -1, v, a))

    @device
    def _put_b(ev, vals, cnt, t, n, w, ep, tk, a):
        """Thread ``t``'s event ``n``, a barrier's or the end's, as a row."""
        ev.append((t, n, w, -1, -1, -1, -4, -1, -1, -1, -1, ep, tk, 0.0, a))

    @device
    @_documented
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
    def _put_g(ev, vals, cnt, t, n, w, idx, row, col, ep, v, a):
        """Thread ``t``'s event ``n``, a global access: its fields (tag and source: the host's)."""
        T = cnt.shape[0]
        b = n * 14 * T + t
        ev[b] = w
        ev[b + 3 * T] = idx
        ev[b + 4 * T] = row
        ev[b + 5 * T] = col
        ev[b + 11 * T] = ep
        x = n * 2 * T + t
        vals[x] = v
        vals[x + T] = a

    @device
    def _put_s(ev, vals, cnt, t, n, w, idx, row, col, tag, sa, si, sr, sc, ep, v, a):
        """Thread ``t``'s event ``n``, a shared access: a global one's fields, tag and source."""
        _put_g(ev, vals, cnt, t, n, w, idx, row, col, ep, v, a)
        T = cnt.shape[0]
        b = n * 14 * T + t
        ev[b + 6 * T] = tag
        ev[b + 7 * T] = sa
        ev[b + 8 * T] = si
        ev[b + 9 * T] = sr
        ev[b + 10 * T] = sc

    @device
    def _put_b(ev, vals, cnt, t, n, w, ep, tk, a):
        """Thread ``t``'s event ``n``, a barrier's or the end's: its fields."""
        T = cnt.shape[0]
        b = n * 14 * T + t
        ev[b] = w
        ev[b + 11 * T] = ep
        ev[b + 12 * T] = tk
        vals[n * 2 * T + T + t] = a

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
@_documented
def log_g(ev, vals, cnt, cap, t, op, flag, arr, idx, row, col, ep, ln, v, a):
    """Log a global array's access as thread ``t``'s next event (nothing when ``t < 0``)."""
    if t >= 0:
        n = cnt[t]
        if n < cap:
            w = op + flag * 8 + (arr + 1) * 32 + ln * 8192
            _put_g(ev, vals, cnt, t, n, w, idx, row, col, ep, v, a)
        cnt[t] = n + 1


@device
@_documented
def log_s(ev, vals, cnt, cap, t, op, flag, arr, idx, row, col, tag, sa, si, sr, sc, ep, ln, v, a):
    """Log a shared array's access, the slot's tag and its source, as thread ``t``'s next event."""
    if t >= 0:
        n = cnt[t]
        if n < cap:
            w = op + flag * 8 + (arr + 1) * 32 + ln * 8192
            _put_s(ev, vals, cnt, t, n, w, idx, row, col, tag, sa, si, sr, sc, ep, v, a)
        cnt[t] = n + 1


@device
@_documented
def log_b(ev, vals, cnt, cap, t, op, ep, tk, ln, a):
    """Log a barrier's arrival or release, or the end, as thread ``t``'s next event."""
    if t >= 0:
        n = cnt[t]
        if n < cap:
            _put_b(ev, vals, cnt, t, n, op + ln * 8192, ep, tk, a)
        cnt[t] = n + 1


@device
def _loaded(ok, v, i, row, col, aid, ln, reads, zero, ev, vals, cnt, cap, t, ep, acc):
    """A global load counted and logged; ``v`` returned (or ``zero``).

    ``ok``: the element lay in the array, ``v`` was read from it. The other parameters are
    :func:`g_load`'s.
    """
    if ok:
        count_read(reads, i)
        log_g(ev, vals, cnt, cap, t, 1, 0, aid, i, row, col, ep, ln, v, acc)
        return v
    log_g(ev, vals, cnt, cap, t, 1, 1, aid, i, row, col, ep, ln, 0.0, acc)
    return zero


@device
@_documented
def g_load(A, i, row, col, aid, ln, reads, zero, ev, vals, cnt, cap, t, ep, acc):
    """``A[i]`` of a 1-D global array, logged; zero (not read) when ``i`` is out of bounds."""
    ok = i >= 0 and i < A.shape[0]
    v = A[i] if ok else zero
    return _loaded(ok, v, i, row, col, aid, ln, reads, zero, ev, vals, cnt, cap, t, ep, acc)


@device
@_documented
def g_load2(A, r, c, aid, ln, reads, zero, ev, vals, cnt, cap, t, ep, acc):
    """``A[r, c]`` of a 2-D global array, logged with its flat index ``r * ncols + c``."""
    ok = r >= 0 and r < A.shape[0] and c >= 0 and c < A.shape[1]
    v = A[r, c] if ok else zero
    i = r * A.shape[1] + c
    return _loaded(ok, v, i, r, c, aid, ln, reads, zero, ev, vals, cnt, cap, t, ep, acc)


@device
@_documented
def g_ok(A, i):
    """Whether flat index ``i`` lies inside the 1-D array ``A``."""
    return i >= 0 and i < A.shape[0]


@device
@_documented
def g_ok2(A, r, c):
    """Whether ``(r, c)`` lies inside the 2-D array ``A``."""
    return r >= 0 and r < A.shape[0] and c >= 0 and c < A.shape[1]


@device
def _stored(fits, ok):
    """A store's flag: :data:`OK`, :data:`OUT_OF_BOUNDS` or :data:`SOURCE_OUT_OF_BOUNDS`.

    Parameters
    ----------
    fits : bool
        Whether the element stored into lies in its array.
    ok : bool
        The store's guard (false: the global element it copies was out of bounds).
    """
    if not fits:
        return 1  # out of bounds: not performed
    if not ok:
        return 2  # in bounds, but its guard says no
    return 0


@device
@_documented
def g_store(A, i, v, row, col, aid, ln, ev, vals, cnt, cap, t, ep, acc):
    """``A[i] = v`` on a 1-D global array, logged; not performed out of bounds."""
    flag = _stored(i >= 0 and i < A.shape[0], True)
    if flag == 0:
        A[i] = v
    log_g(ev, vals, cnt, cap, t, 2, flag, aid, i, row, col, ep, ln, v, acc)


@device
@_documented
def g_store2(A, r, c, v, aid, ln, ev, vals, cnt, cap, t, ep, acc):
    """``A[r, c] = v`` on a 2-D global array, logged with its flat index; not performed outside."""
    flag = _stored(r >= 0 and r < A.shape[0] and c >= 0 and c < A.shape[1], True)
    if flag == 0:
        A[r, c] = v
    log_g(ev, vals, cnt, cap, t, 2, flag, aid, r * A.shape[1] + c, r, c, ep, ln, v, acc)


@device
def _s_loaded(ok, v, i, row, col, sh, off, aid, ln, ev, vals, cnt, cap, t, ep, acc):
    """A shared load logged with its slot's tag and the source that names; ``v`` returned.

    ``ok``: the slot lay in the array, ``v`` was read from it (else ``v`` is zero). The other
    parameters are :func:`s_load`'s.
    """
    if ok:
        tag = sh[off + i]
        sa, si = tag, -1
        if tag >= 0:
            sa, si = tag % 8, tag // 8
        log_s(ev, vals, cnt, cap, t, 1, 0, aid, i, row, col, tag, sa, si, -1, -1, ep, ln, v, acc)
    else:
        log_s(ev, vals, cnt, cap, t, 1, 1, aid, i, row, col, -4, -1, -1, -1, -1, ep, ln, 0.0, acc)
    return v


@device
@_documented
def s_load(S, i, row, col, sh, off, aid, ln, ev, vals, cnt, cap, t, ep, acc):
    """``S[i]`` of a 1-D shared array (or a section of the extern array), logged with its tag."""
    ok = i >= 0 and i < S.shape[0]
    v = S[i] if ok else S[0] * 0
    return _s_loaded(ok, v, i, row, col, sh, off, aid, ln, ev, vals, cnt, cap, t, ep, acc)


@device
@_documented
def s_load2(S, r, c, sh, off, aid, ln, ev, vals, cnt, cap, t, ep, acc):
    """``S[r, c]`` of a 2-D shared array, logged with the tag of its slot."""
    ok = r >= 0 and r < S.shape[0] and c >= 0 and c < S.shape[1]
    v = S[r, c] if ok else S[0, 0] * 0
    i = r * S.shape[1] + c
    return _s_loaded(ok, v, i, r, c, sh, off, aid, ln, ev, vals, cnt, cap, t, ep, acc)


@device
@_documented
def s_store(
    S, i, v, row, col, sh, off, ok, tag, sa, si, sr, sc, aid, ln, ev, vals, cnt, cap, t, ep, acc
):
    """``S[i] = v`` on a 1-D shared array and its slot's tag; not done when ``ok`` is false."""
    flag = _stored(i >= 0 and i < S.shape[0], ok)
    if flag == 0:
        S[i] = v
        sh[off + i] = tag
    log_s(ev, vals, cnt, cap, t, 2, flag, aid, i, row, col, tag, sa, si, sr, sc, ep, ln, v, acc)


@device
@_documented
def s_store2(S, r, c, v, sh, off, ok, tag, sa, si, sr, sc, aid, ln, ev, vals, cnt, cap, t, ep, acc):
    """``S[r, c] = v`` on a 2-D shared array and its slot's tag (see :func:`s_store`)."""
    i = r * S.shape[1] + c
    flag = _stored(r >= 0 and r < S.shape[0] and c >= 0 and c < S.shape[1], ok)
    if flag == 0:
        S[r, c] = v
        sh[off + i] = tag
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
@_documented
def lane_rank(m):
    """The thread's rank among the threads of ``m`` (0: the warp's leader).

    Returns
    -------
    int
        Lanes of ``m`` below this one.
    """
    return cuda.popc(m & ((1 << cuda.laneid) - 1))


@device
@_documented
def lanes(m):
    """How many tickets the warp's leader takes: the threads of ``m``.

    Returns
    -------
    int
        Lanes in ``m``.
    """
    return cuda.popc(m)


@device
@_documented
def from_leader(m, x):
    """The leader's (lowest lane of ``m``) value, shared with the threads of ``m``.

    ``shfl_sync`` waits for every thread of ``m``: the warp meets again here.

    Parameters
    ----------
    x : int
        The value the thread holds (the leader's old clock).

    Returns
    -------
    int
        The leader's ``x``.
    """
    return cuda.shfl_sync(m, x, cuda.ffs(m) - 1)


@device
def _at_barrier(op, k, tk, ln, clk, nbar, ev, vals, cnt, cap, t, ep, acc):
    """A logged thread's ``%clock64`` at clock entry ``k`` (when bounded) and its ``op``, logged.

    ``k`` is ``2 * ep`` at an arrival, ``2 * ep - 1`` at a release; the other parameters are
    :func:`arrive`'s.
    """
    if t >= 0:
        if k < nbar:
            clk[k * cnt.shape[0] + t] = clock64()
        log_b(ev, vals, cnt, cap, t, op, ep, tk, ln, acc)


@device
@_documented
def arrive(tk, ln, clk, nbar, ev, vals, cnt, cap, t, ep, acc):
    """A thread arrives at a ``cuda.syncthreads()``: its ticket of the block's clock, logged.

    Its ``%clock64`` goes to ``clk[2 * ep * threads + t]`` (int64, beside the
    log: the log itself holds no timing but the ticket).
    """
    _at_barrier(3, 2 * ep, tk, ln, clk, nbar, ev, vals, cnt, cap, t, ep, acc)


@device
@_documented
def release(tk, ln, clk, nbar, ev, vals, cnt, cap, t, ep, acc):
    """A thread leaves a ``cuda.syncthreads()`` (``ep`` counts it); its clock at ``2*ep - 1``."""
    _at_barrier(4, 2 * ep - 1, tk, ln, clk, nbar, ev, vals, cnt, cap, t, ep, acc)


@device
@_documented
def g_tag(A, i, gid):
    """The provenance tag of ``A[i]`` of a 1-D global array: ``i * TAG_ARRAYS + gid``.

    Returns
    -------
    int
        The tag; :data:`TAG_ZERO` out of bounds (the load gives zero).
    """
    if i >= 0 and i < A.shape[0]:
        return i * 8 + gid
    return -1


@device
@_documented
def g_tag2(A, r, c, gid):
    """The provenance tag of ``A[r, c]`` of a 2-D global array (see :func:`g_tag`).

    Returns
    -------
    int
        ``(r * ncols + c) * TAG_ARRAYS + gid``; :data:`TAG_ZERO` out of bounds.
    """
    if r >= 0 and r < A.shape[0] and c >= 0 and c < A.shape[1]:
        return (r * A.shape[1] + c) * 8 + gid
    return -1


@device
@_documented
def s_tag(S, i, sh, off):
    """The tag a 1-D shared slot holds (its shadow), :data:`TAG_ZERO` out of bounds.

    Returns
    -------
    int
        ``sh[off + i]``.
    """
    if i >= 0 and i < S.shape[0]:
        return sh[off + i]
    return -1


@device
@_documented
def s_tag2(S, r, c, sh, off):
    """The tag a 2-D shared slot holds (its shadow), :data:`TAG_ZERO` out of bounds.

    Returns
    -------
    int
        ``sh[off + r * ncols + c]``, the slot's tag.
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
@_documented
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
            An index the code named; a negative one wraps to an unsigned one past any extent.
        n : int
            The extent, an array's (non-negative).

        Returns
        -------
        bool
        """
        return np.uint64(i) < np.uint64(n)


@device
@_documented
def lg_load(A, i, reads, zero):
    """``A[i]``, its read counted; out of bounds zero (element 0 is read then, not counted)."""
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
@_documented
def lg_load2(A, r, c, reads, zero):
    """``A[r, c]``, counted at ``r * ncols + c``; outside, zero (``A[0, 0]`` read, uncounted)."""
    ok = inside(r, A.shape[0]) & inside(c, A.shape[1])
    rr = r if ok else 0
    cc = c if ok else 0
    v = A[rr, cc]  # branch-free, as lg_load
    cuda.atomic.add(reads, rr * A.shape[1] + cc, 1 if ok else 0)
    return v if ok else zero


@device
@_documented
def lg_store(A, i, v):
    """``A[i] = v``; not performed out of bounds."""
    if inside(i, A.shape[0]):
        A[i] = v


@device
@_documented
def lg_store2(A, r, c, v):
    """``A[r, c] = v``; not performed out of bounds."""
    if inside(r, A.shape[0]) & inside(c, A.shape[1]):
        A[r, c] = v


@device
@_documented
def ls_store(S, i, v, ok):
    """``S[i] = v`` on a shared array when ``ok`` (its source was in bounds) and ``i`` is."""
    if ok & inside(i, S.shape[0]):
        S[i] = v


@device
@_documented
def ls_store2(S, r, c, v, ok):
    """``S[r, c] = v`` on a shared array when ``ok`` and ``(r, c)`` is in bounds."""
    if ok & inside(r, S.shape[0]) & inside(c, S.shape[1]):
        S[r, c] = v


@device
@_documented
def ls_load(S, i):
    """``S[i]`` of a shared array; zero out of bounds."""
    if inside(i, S.shape[0]):
        return S[i]
    return S[0] * 0


@device
@_documented
def ls_load2(S, r, c):
    """``S[r, c]`` of a shared array; zero out of bounds."""
    if inside(r, S.shape[0]) & inside(c, S.shape[1]):
        return S[r, c]
    return S[0, 0] * 0


@device
@_documented
def lg_ok(A, i):
    """Whether flat index ``i`` lies inside the 1-D array ``A`` (the lean :func:`g_ok`)."""
    return inside(i, A.shape[0])


@device
@_documented
def lg_ok2(A, r, c):
    """Whether ``(r, c)`` lies inside the 2-D array ``A`` (the lean variant's :func:`g_ok2`)."""
    return inside(r, A.shape[0]) & inside(c, A.shape[1])


@device
@_documented
def lend(blk, seq, bid, tid):
    """The thread ends; thread 0 closes the block's times (the lean variant's :func:`end`)."""
    if tid == 0:
        blk[bid * 6 + 4] = clock64()
        blk[bid * 6 + 2] = globaltimer()
        blk[bid * 6 + 5] = cuda.atomic.add(seq, 0, 1)


@device
@_documented
def block_start(blk, bid, tid):
    """Thread 0 records the block's SM, ``%globaltimer`` (ns) and ``%clock64`` at its start."""
    if tid == 0:
        blk[bid * 6 + 0] = smid()
        blk[bid * 6 + 1] = globaltimer()
        blk[bid * 6 + 3] = clock64()


@device
@_documented
def end(blk, seq, bid, tid, ln, ev, vals, cnt, cap, t, ep, acc):
    """The thread ends (last line or ``return``), logged; thread 0 closes the block's times."""
    log_b(ev, vals, cnt, cap, t, 5, ep, -1, ln, acc)
    lend(blk, seq, bid, tid)
