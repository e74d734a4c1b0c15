"""vizmm's own simulator: a block's threads as NumPy lanes, the access log as a GPU writes it.

A kernel the front end read (:mod:`.frontend`) and the instrumenter rewrote
(:mod:`.instrument`, its simulator form) is compiled by :mod:`.simt_compile`
into a generator over a *group* of a block's threads: every variable a NumPy
array with one lane per thread, every statement under an active mask, every
``cuda.syncthreads()`` a ``yield``. The helpers here are the lane-wise forms
of :mod:`.instrument_device`'s: each access is checked, performed for the
active lanes and written into the same packed log a GPU's rewritten kernel
fills (:func:`vizmm.trace.access_log.unpack` reads both). No numba is imported.

The schedule (which thread runs when between barriers)
--------------------------------------------------------
A race-free kernel gives the same log whatever the schedule. A racing one
does not: what a read finds depends on which writes came before it.

``threads`` (the default)
    Each thread runs alone until its next ``cuda.syncthreads()`` or its end,
    in ``threadIdx`` order (``tx`` fastest); when every thread that has not
    ended has arrived, the barrier opens and the next round starts in the
    same order. What Numba's simulator did in turns (the barrier lab's
    stories and the shipped traces were recorded so): a barrier means what
    it means on a GPU, and between barriers the schedule is the extreme one
    where a thread finishes its work before the next starts.
``warps``
    Each warp (32 consecutive threads) runs to its next barrier with its
    lanes in lockstep, statement by statement, in warp order: closer to a
    GPU, where a warp's lanes run together and warps interleave; a race
    between lanes of one warp shows the values lockstep gives them.

How it runs fast: each block first runs as one group of all its threads in
lockstep. That is the schedule's result exactly when no two threads touch
one shared (or written global) element between two barriers where one of
them writes it, and every thread that has not ended reaches each barrier:
then no order of the threads can change what any thread reads. The
simulator watches for both; when either happens, the block is put back as
it was and run again in the schedule's groups (one thread each, or one warp
each). So a correct kernel runs at array speed and a racing one gives the
schedule's answer.

A barrier some threads skip (a ``cuda.syncthreads()`` under ``if ty == 0``)
never hangs: as PTX's ``bar.sync`` counts arrivals, not lines, the barrier
opens when every thread that has not ended has arrived at one; each such
barrier is reported in :attr:`Launch.notes`.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import numpy as np

from ..trace import access_log as D
from .admission import RecordingCancelled

__all__ = ["F64", "Launch", "SCHEDULES", "launch", "namespace"]

#: The schedules a recording may ask for (see the module docstring).
SCHEDULES = ("threads", "warps")
#: Python ``float`` literals in a kernel: float64, as Numba types them.
F64 = np.float64
WARP = 32
_T = D.NF


class _Fallback(Exception):
    """The lockstep run of a block is not the schedule's: run it again in the schedule's groups."""


class LocalArray:
    """A ``cuda.local.array``: one private array per lane, ``(lanes, *shape)``."""

    __slots__ = ("a",)

    def __init__(self, a: np.ndarray):
        self.a = a

    def _load(self, idx, m):
        idx = idx if isinstance(idx, tuple) else (idx,)
        lanes = np.arange(self.a.shape[0])
        if not any(isinstance(i, np.ndarray) for i in idx):
            return self.a[(slice(None), *idx)]
        out = np.zeros(self.a.shape[0], self.a.dtype)
        out[m] = self.a[(lanes[m], *(_pick(i, m) for i in idx))]
        return out

    def _store(self, idx, v, m):
        idx = idx if isinstance(idx, tuple) else (idx,)
        lanes = np.arange(self.a.shape[0])
        self.a[(lanes[m], *(_pick(i, m) for i in idx))] = _pick(v, m)


def _pick(x, sel):
    """``x`` for the selected lanes (a lane array), or ``x`` itself (one value for all)."""
    return x[sel] if isinstance(x, np.ndarray) and x.ndim else x


def _lanes(x, n: int) -> np.ndarray:
    return x if isinstance(x, np.ndarray) and x.ndim else np.full(n, x)


class _Dim:
    __slots__ = ("x", "y", "z")

    def __init__(self, x, y, z):
        self.x, self.y, self.z = x, y, z


class _Tracker:
    """Per element of one array: who wrote and read it in which interval between barriers."""

    __slots__ = ("w_iv", "w_tid", "r_iv", "r_tid")

    def __init__(self, n: int):
        self.w_iv = np.full(n, -1, np.int64)
        self.w_tid = np.zeros(n, np.int64)
        self.r_iv = np.full(n, -1, np.int64)
        self.r_tid = np.zeros(n, np.int64)


class Launch:
    """What one launch of a kernel in vizmm's simulator holds across its blocks.

    Attributes
    ----------
    notes : list of str
        Barriers some threads of a block did not reach (one line each).
    lockstep_blocks, schedule_blocks : int
        Blocks run in lockstep (no race seen) and run again in the schedule's
        groups.
    """

    def __init__(self, kern, args, rec, grid, block, dynamic_shared, schedule):
        self.kern = kern
        self.args = args
        self.grid = tuple(grid) + (1,) * (3 - len(grid))
        self.block = tuple(block) + (1,) * (3 - len(block))
        self.nthreads = int(np.prod(self.block))
        self.schedule = schedule
        self.shared: dict[str, np.ndarray] = {}
        self.dyn = np.zeros(max(int(dynamic_shared), 0), np.uint8)
        cnt = rec["_cnt"]
        self.ev, self.vals, self.cnt, self.cap = rec["_ev"], rec["_vals"], cnt, int(rec["_cap"])
        self.tt = int(cnt.shape[0]) if rec["_detail"].max() >= 0 else 0
        self.rec = rec
        self.written = {id(a) for p, a in zip(kern.params, args, strict=False) if p in kern.written}
        #: the arrays whose plain loads and stores the race watch sees: shared and written ones
        self.watched = set(self.written)
        self.keep: list = []
        self.trackers: dict[int, _Tracker] = {}
        self.iv = 0
        self.tick = 0
        self.track = False
        self.notes: list[str] = []
        self.lockstep_blocks = 0
        self.schedule_blocks = 0

    # ------------------------------------------------------------ the log
    def _write(self, m, t, word, idx, row, col, tag, sa, si, sr, sc, ep, tk, v, a):
        """Append one event for each active lane whose thread is logged (``t >= 0``)."""
        if not isinstance(t, np.ndarray) or self.tt == 0:
            return
        sel = m & (t >= 0)
        if not sel.any():
            return
        tt = t[sel]
        n = self.cnt[tt]
        self.cnt[tt] = n + 1
        if self.cap <= 0:
            return
        ok = n < self.cap
        if not ok.all():
            sel = np.flatnonzero(sel)[ok]
            tt, n = tt[ok], n[ok]
        # thread by thread: field f of thread t's n-th event at (t * cap + n) * NF + f
        # (access_log.unpack reads it in place; a GPU's log is field-major instead)
        pos = (tt.astype(np.int64) * self.cap + n) * _T
        ev = self.ev
        ev[pos] = _pick(word, sel)
        for f, x in (
            (D.IDX, idx),
            (D.ROW, row),
            (D.COL, col),
            (D.TAG, tag),
            (D.SRC_ARR, sa),
            (D.SRC_IDX, si),
            (D.SRC_ROW, sr),
            (D.SRC_COL, sc),
            (D.EPOCH, ep),
            (D.TICK, tk),
        ):
            ev[pos + f] = _pick(x, sel)
        vp = (tt.astype(np.int64) * self.cap + n) * 2
        self.vals[vp] = _pick(v, sel)
        self.vals[vp + 1] = _pick(a, sel)

    # ---------------------------------------------------------- watching
    def _tracker(self, A: np.ndarray) -> _Tracker | None:
        """The race watch's record of ``A`` (None while the block is not watched)."""
        if not self.track:
            return None
        key = id(A)
        tr = self.trackers.get(key)
        if tr is None or tr.w_iv.shape[0] != A.size:
            tr = self.trackers[key] = _Tracker(A.size)
        return tr

    def _saw_read(self, A, flat, tid):
        """Lanes ``tid`` read elements ``flat`` of ``A``: a race if another thread wrote one."""
        tr = self._tracker(A)
        if tr is None or flat.size == 0:
            return
        iv = self.iv
        w = tr.w_iv[flat] == iv
        if w.any() and (tr.w_tid[flat][w] != tid[w]).any():
            raise _Fallback
        other = (tr.r_iv[flat] == iv) & (tr.r_tid[flat] != tid)
        tr.r_iv[flat] = iv
        tr.r_tid[flat] = tid
        multi = other | (tr.r_tid[flat] != tid)
        if multi.any():
            tr.r_tid[flat[multi]] = -2

    def _saw_write(self, A, flat, tid, atomic=False):
        """Lanes ``tid`` wrote elements ``flat`` of ``A``: a race if another thread touched one."""
        tr = self._tracker(A)
        if tr is None or flat.size == 0:
            return
        iv = self.iv
        # another thread wrote or read it since the last barrier (an atomic's lanes of
        # one call are taken in lane order, as the schedule takes them)
        w = (tr.w_iv[flat] == iv) & (tr.w_tid[flat] != tid)
        if w.any() or ((tr.r_iv[flat] == iv) & (tr.r_tid[flat] != tid)).any():
            raise _Fallback
        tr.w_tid[flat] = tid
        if not atomic and (tr.w_tid[flat] != tid).any():
            raise _Fallback  # two threads store one element in one statement
        tr.w_iv[flat] = iv

    # ------------------------------------------------------------ blocks
    def run(self, order: list, update, cancel) -> None:
        """Run the blocks one after another, reporting each.

        Parameters
        ----------
        order : list of (by, bx)
            The blocks, in the order they run.
        update : callable
            ``update(done, total)`` after each block.
        cancel : threading.Event or None
            Checked before each block.

        Raises
        ------
        RecordingCancelled
            When ``cancel`` is set.
        """
        for i, (by, bx) in enumerate(order):
            if cancel is not None and cancel.is_set():
                raise RecordingCancelled(
                    f"the recording was cancelled after {i} of {len(order)} blocks"
                )
            self._run_block(by, bx)
            update(i + 1, len(order))

    def _snapshot(self):
        keep = [
            (a, a.copy()) for a in self.args if isinstance(a, np.ndarray) and id(a) in self.written
        ]
        keep += [(a, a.copy()) for a in self.shared.values()]
        keep.append((self.dyn, self.dyn.copy()))
        for k in ("_zf", "_blk", "_seq"):
            keep.append((self.rec[k], self.rec[k].copy()))
        keep.append((self.cnt, self.cnt.copy()))
        reads = {k: len(v) for k, v in self.rec.items() if k.startswith("_reads_")}
        return keep, reads, self.tick, set(self.shared)

    def _restore(self, snap) -> None:
        keep, reads, tick, sites = snap
        for a, copy in keep:
            a[...] = copy
        for site in set(self.shared) - sites:  # made by the run put back: made afresh
            del self.shared[site]
        for k, n in reads.items():
            del self.rec[k][n:]
        self.tick = tick

    def _run_block(self, by: int, bx: int) -> None:
        """Run one block: in lockstep, or again in the schedule's groups when that is not it."""
        for view in self.keep:  # the last block's sections of shared arrays
            self.watched.discard(id(view))
        self.keep.clear()
        tids = np.arange(self.nthreads, dtype=np.int64)
        self.tick = 0
        snap = self._snapshot()
        self.track = True
        try:
            self._groups(by, bx, [tids], lockstep=True)
            self.lockstep_blocks += 1
            return
        except _Fallback:
            self._restore(snap)
        finally:
            self.track = False
        size = 1 if self.schedule == "threads" else WARP
        groups = [tids[i : i + size] for i in range(0, self.nthreads, size)]
        self._groups(by, bx, groups, lockstep=False)
        self.schedule_blocks += 1

    def _groups(self, by, bx, groups, lockstep: bool) -> None:
        self.iv += 1
        lanes = [Lanes(self, g, bx, by) for g in groups]
        running = [(x, self.kern.fn(x, *self.args)) for x in lanes]
        while running:
            waiting = []
            lines = set()
            for x, gen in running:
                try:
                    got = next(gen)
                except StopIteration:
                    continue
                if lockstep and not np.array_equal(got, ~x.exited):
                    raise _Fallback  # some threads did not come to this barrier
                x.arrived = got
                lines.add(x.line)
                waiting.append((x, gen))
            if waiting and not lockstep:
                arrived = sum(int(x.arrived.sum()) for x, _ in waiting)
                ended = sum(int(x.exited.sum()) for x in lanes)
                if arrived + ended < self.nthreads or len(lines) > 1 or (ended and arrived):
                    self.notes.append(
                        f"block (by={by}, bx={bx}): the barrier on line(s) "
                        f"{', '.join(map(str, sorted(lines)))} opened with {arrived} of "
                        f"{self.nthreads} threads arrived ({ended} had ended)"
                    )
            self.iv += 1
            running = waiting


class Lanes:
    """One group of a block's threads run together: what the generated code calls ``_qX``.

    Attributes
    ----------
    all, none : ndarray of bool, (lanes,)
        Every lane, no lane (masks).
    exited : ndarray of bool, (lanes,)
        Lanes whose thread has returned.
    cuda : object
        ``threadIdx`` (lane arrays), ``blockIdx``, ``blockDim``, ``gridDim``
        (numbers) as the kernel reads them.
    """

    def __init__(self, launch: Launch, tids: np.ndarray, bx: int, by: int):
        self.launch = launch
        self.tids = tids
        n = tids.shape[0]
        self.n = n
        self.all = np.ones(n, bool)
        self.none = np.zeros(n, bool)
        self.exited = np.zeros(n, bool)
        self.arrived = self.none
        self.line = 0
        bdx, bdy, bdz = launch.block
        self.cuda = self
        self.threadIdx = _Dim(tids % bdx, tids // bdx % bdy, tids // (bdx * bdy))
        self.blockIdx = _Dim(bx, by, 0)
        self.blockDim = _Dim(bdx, bdy, bdz)
        self.gridDim = _Dim(*launch.grid)

    # ------------------------------------------------- cuda, as read
    def grid(self, ndim):
        """``cuda.grid(ndim)``: each lane's absolute thread index (x; x, y; or x, y, z).

        Parameters
        ----------
        ndim : {1, 2, 3}
        """
        x = self.blockIdx.x * self.blockDim.x + self.threadIdx.x
        if ndim == 1:
            return x
        y = self.blockIdx.y * self.blockDim.y + self.threadIdx.y
        if ndim == 2:
            return x, y
        return x, y, self.blockIdx.z * self.blockDim.z + self.threadIdx.z

    def gridsize(self, ndim):
        """``cuda.gridsize(ndim)``: threads in the grid along x (and y, z).

        Parameters
        ----------
        ndim : {1, 2, 3}
        """
        sizes = (
            self.gridDim.x * self.blockDim.x,
            self.gridDim.y * self.blockDim.y,
            self.gridDim.z * self.blockDim.z,
        )
        return sizes[0] if ndim == 1 else sizes[:ndim]

    def laneid(self):
        """``cuda.laneid``: each thread's lane in its warp (0 to 31)."""
        return self.tids % WARP

    def warpsize(self):
        """``cuda.warpsize``: 32."""
        return WARP

    def shared(self, site, shape, dtype):
        """``cuda.shared.array``: the launch's array of that line (zeroed once, kept across blocks).

        Parameters
        ----------
        site : str
            The declaration's place in the rewritten kernel (one array per place).
        shape : int or tuple of int
            Elements; 0 for the extern array (the launch's dynamic bytes, Fig. 5.14).
        dtype : NumPy type
        """
        dt = np.dtype(dtype)
        shape = tuple(int(s) for s in shape) if isinstance(shape, tuple) else (int(shape),)
        if shape in ((0,), ()):  # the extern array (Fig. 5.14): the launch's dynamic bytes
            n = self.launch.dyn.size // dt.itemsize
            out = self.launch.dyn[: n * dt.itemsize].view(dt)
            self.launch.watched.add(id(out))
            self.launch.keep.append(out)
            return out
        got = self.launch.shared.get(site)
        if got is None:
            got = self.launch.shared[site] = np.zeros(shape, dt)
            self.launch.watched.add(id(got))
        return got

    def local(self, site, shape, dtype):
        """``cuda.local.array``: one zeroed array per lane.

        Parameters
        ----------
        site : str
            The declaration's place in the rewritten kernel.
        shape : int or tuple of int
            Elements per lane.
        dtype : NumPy type
        """
        shape = tuple(int(s) for s in shape) if isinstance(shape, tuple) else (int(shape),)
        return LocalArray(np.zeros((self.n, *shape), np.dtype(dtype)))

    # ------------------------------------------------------- barriers
    def arrive(self, m, ln, t, ep, acc):
        """Log the active lanes' arrival at the barrier on line ``ln``, tickets in lane order.

        Parameters
        ----------
        m : ndarray of bool, (lanes,)
            The lanes arriving.
        ln : int
            The barrier's line in the kernel's source.
        t : ndarray of int64 or int
            Each lane's row of the log (-1: not logged).
        ep : int or ndarray
            Barriers passed before this one.
        acc : float or ndarray
            The accumulator now.
        """
        self.line = ln
        self._ticket(m, D.ARRIVE, ln, t, ep, acc)

    def release(self, m, ln, t, ep, acc):
        """Log the active lanes' release from the barrier on line ``ln`` (epoch ``ep + 1``).

        Parameters
        ----------
        m, ln, t, ep, acc
            The lanes released, then as :meth:`arrive` (the barrier's line, each
            lane's row of the log, barriers passed before this one, the accumulator).
        """
        self._ticket(m, D.RELEASE, ln, t, ep + 1, acc)

    def _ticket(self, m, op, ln, t, ep, acc):
        k = int(m.sum())
        tk = np.zeros(self.n, np.int64)
        tk[m] = self.launch.tick + np.arange(k)
        self.launch.tick += k
        self.launch._write(m, t, op + ln * 8192, -1, -1, -1, -4, -1, -1, -1, -1, ep, tk, 0.0, acc)

    def exit(self, m):
        """The active lanes' threads end (a ``return`` or the kernel's last line).

        Parameters
        ----------
        m : ndarray of bool, (lanes,)
        """
        self.exited = self.exited | m


# ------------------------------------------------------------------ lane-wise forms
def _mset(m, new, old):
    """``new`` for the active lanes, ``old`` for the others."""
    if m.all():
        return new
    if not m.any():
        return old
    return np.where(m, new, old)


def _truth(c):
    if isinstance(c, np.ndarray):
        return c if c.dtype == np.bool_ else c != 0
    return bool(c)


def _lanewise(ufunc, scalar):
    """``scalar`` (Python's ``all``, ``min`` ...) of its operands, or ``ufunc`` lane by lane."""

    def op(*vs):
        if any(isinstance(v, np.ndarray) for v in vs):
            return functools.reduce(ufunc, vs)
        return scalar(vs)

    return op


_and = _lanewise(lambda a, b: _truth(a) & _truth(b), all)
_or = _lanewise(lambda a, b: _truth(a) | _truth(b), any)
_min = _lanewise(np.minimum, min)
_max = _lanewise(np.maximum, max)


def _and_lazy(m, a, rest):
    if not isinstance(a, np.ndarray):
        return rest(m) if a else a
    ta = _truth(a)
    mm = m & ta
    b = rest(mm) if mm.any() else False
    return ta & _truth(b)


def _or_lazy(m, a, rest):
    if not isinstance(a, np.ndarray):
        return a if a else rest(m)
    ta = _truth(a)
    mm = m & ~ta
    b = rest(mm) if mm.any() else False
    return ta | _truth(b)


def _ifexp(m, c, yes, no):
    if not isinstance(c, np.ndarray):
        return yes(m) if c else no(m)
    tc = _truth(c)
    a = yes(m & tc) if (m & tc).any() else 0
    b = no(m & ~tc) if (m & ~tc).any() else 0
    return np.where(tc, a, b)


def _where(c, a, b):
    if not isinstance(c, np.ndarray):
        return a if c else b
    return np.where(_truth(c), a, b)


def _not(x):
    return ~_truth(x) if isinstance(x, np.ndarray) else not x


def _andnot(ms, c):
    return ms & ~c if isinstance(c, np.ndarray) else ms & (not c)


def _go(v, b, s):
    """Whether a ``range(start, b, s)`` loop goes round again at ``v`` (lane by lane)."""
    if isinstance(s, np.ndarray):
        return np.where(s > 0, v < b, v > b)
    return v < b if s > 0 else v > b


def _int(x):
    if isinstance(x, np.ndarray):
        return np.trunc(x).astype(np.int64) if x.dtype.kind == "f" else x.astype(np.int64)
    return int(x)


def _float(x):
    return x.astype(np.float64) if isinstance(x, np.ndarray) else float(x)


def _bool(x):
    return _truth(x)


def _abs(x):
    return np.abs(x) if isinstance(x, np.ndarray) else abs(x)


def _round(x, nd=None):
    if isinstance(x, np.ndarray):
        return np.rint(x).astype(np.int64) if nd is None else np.round(x, nd)
    return round(x) if nd is None else round(x, nd)


def _len(x):
    return x.a.shape[1] if isinstance(x, LocalArray) else len(x)


def _fma(a, b, c):
    return a * b + c


def _selp(c, a, b):
    return _where(c, a, b)


def _popc(x):
    return np.bitwise_count(np.asarray(x, np.int64).astype(np.uint64)).astype(np.int64)


class _Math:
    """``math`` as a kernel calls it, lane-wise (NumPy's functions keep float32 float32)."""

    pi, e, tau, inf, nan = math.pi, math.e, math.tau, math.inf, math.nan

    def __init__(self):
        same = (
            "sqrt exp exp2 expm1 log log2 log10 log1p fabs fmod sin cos tan sinh cosh tanh "
            "isnan isinf isfinite copysign hypot degrees radians"
        )
        for k in same.split():  # NumPy's function of the same name
            setattr(self, k, getattr(np, k))
        renamed = {
            "pow": np.power,
            "asin": np.arcsin,
            "acos": np.arccos,
            "atan": np.arctan,
            "atan2": np.arctan2,
        }
        for k, f in renamed.items():
            setattr(self, k, f)
        for k, f in (("floor", np.floor), ("ceil", np.ceil), ("trunc", np.trunc)):
            setattr(self, k, _to_int(f, getattr(math, k)))
        for k in ("erf", "erfc", "gamma", "lgamma"):
            setattr(self, k, _each(getattr(math, k)))


def _to_int(f, scalar):
    def g(x):
        return f(x).astype(np.int64) if isinstance(x, np.ndarray) else scalar(x)

    return g


def _each(f):
    vf = np.vectorize(f, otypes=[np.float64])

    def g(x):
        return vf(x) if isinstance(x, np.ndarray) else f(x)

    return g


# ---------------------------------------------------------------- memory
def _sec(base, sl, X):
    """``base[a:b]``: a section of a shared array, watched for races as the array is."""
    out = base[sl]
    if id(base) in X.launch.watched:
        X.launch.watched.add(id(out))
        X.launch.keep.append(out)  # alive while watched: its id is not reused
    return out


def _flat(base, idx, m, X):
    """The flat (row-major) element each active lane names, or None when no lane's differs."""
    if isinstance(idx, tuple):
        if not any(isinstance(i, np.ndarray) for i in idx):
            return None
        flat: Any = 0
        for i, n in zip(idx, base.shape, strict=False):
            flat = flat * n + i
    elif isinstance(idx, np.ndarray):
        flat = idx
    else:
        return None
    return _lanes(flat, X.n)[m]


def _ld(base, idx, m, X):
    if type(base) is LocalArray:
        return base._load(idx, m)
    if isinstance(base, tuple):
        return base[idx]
    flat = _flat(base, idx, m, X)
    run = X.launch
    if flat is None:  # one element for every lane
        if run.track and id(base) in run.watched and m.any():
            one = np.ravel_multi_index(idx if isinstance(idx, tuple) else (idx,), base.shape)
            run._saw_read(base, np.full(int(m.sum()), one), X.tids[m])
        return base[idx]
    if run.track and id(base) in run.watched:
        run._saw_read(base, flat, X.tids[m])
    out = np.zeros(X.n, base.dtype)
    out[m] = base.reshape(-1)[flat]
    return out


def _st(base, idx, v, m, X):
    if type(base) is LocalArray:
        base._store(idx, v, m)
        return
    if not m.any():
        return
    flat = _flat(base, idx, m, X)
    run = X.launch
    if flat is None:  # one element: the last active lane's value stays, as in lane order
        if run.track and id(base) in run.watched:
            one = np.ravel_multi_index(idx if isinstance(idx, tuple) else (idx,), base.shape)
            run._saw_write(base, np.full(int(m.sum()), one), X.tids[m])
        base[idx] = v[m][-1] if isinstance(v, np.ndarray) and v.ndim else v
        return
    if run.track and id(base) in run.watched:
        run._saw_write(base, flat, X.tids[m])
    base.reshape(-1)[flat] = _pick(v, m)


_ATOMIC = {
    "add": lambda o, v: o + v,
    "sub": lambda o, v: o - v,
    "max": lambda o, v: max(o, v),
    "min": lambda o, v: min(o, v),
    "exch": lambda o, v: v,
    "and_": lambda o, v: o & v,
    "or_": lambda o, v: o | v,
    "xor": lambda o, v: o ^ v,
    "inc": lambda o, v: 0 if o >= v else o + 1,
    "dec": lambda o, v: v if (o == 0 or o > v) else o - 1,
}


def _atomic(op, A, idx, *rest):
    """``cuda.atomic.<op>(A, idx, v)`` for the active lanes, one after another in lane order."""
    *vals, m, X = rest
    if isinstance(A, LocalArray):
        raise ValueError("an atomic on a local array")
    idx = idx if isinstance(idx, tuple) else (idx,)
    old = np.zeros(X.n, A.dtype)
    lanes = np.flatnonzero(m)
    if lanes.size == 0:
        return old
    cols = [_lanes(i, X.n)[lanes].astype(np.int64) for i in idx]
    flat = (
        np.ravel_multi_index(tuple(cols), A.shape, mode="wrap") if A.ndim == len(cols) else cols[0]
    )
    X.launch._saw_write(A, flat, X.tids[lanes], atomic=True)
    vs = [_lanes(v, X.n) for v in vals]
    flat_a = A.reshape(-1)
    for j, k in enumerate(lanes):
        f = int(flat[j])
        o = flat_a[f]
        old[k] = o
        if op == "cas":
            if o == vs[0][k]:
                flat_a[f] = vs[1][k]
        else:
            flat_a[f] = _ATOMIC[op](o, vs[0][k])
    return old


# ------------------------------------------------------------ the log's helpers
def _word(op, flag, arr, ln):
    return op + flag * 8 + (arr + 1) * 32 + ln * 8192


def _log_g(ev, vals, cnt, cap, t, op, flag, arr, idx, row, col, ep, ln, v, a, m, X):
    X.launch._write(m, t, _word(op, flag, arr, ln), idx, row, col, -4, -1, -1, -1, -1, ep, -1, v, a)


def _log_s(
    ev, vals, cnt, cap, t, op, flag, arr, idx, row, col, tag, sa, si, sr, sc, ep, ln, v, a, m, X
):
    X.launch._write(
        m, t, _word(op, flag, arr, ln), idx, row, col, tag, sa, si, sr, sc, ep, -1, v, a
    )


def _log_b(ev, vals, cnt, cap, t, op, ep, tk, ln, a, m, X):
    X.launch._write(m, t, op + ln * 8192, -1, -1, -1, -4, -1, -1, -1, -1, ep, tk, 0.0, a)


def _inside(i, n):
    return (i >= 0) & (i < n)


def _g_ok(A, i, m, X):
    return _inside(i, A.shape[0])


def _g_ok2(A, r, c, m, X):
    return _inside(r, A.shape[0]) & _inside(c, A.shape[1])


def _flat2(A, r, c, m, X):
    return _where(_g_ok2(A, r, c, m, X), r * A.shape[1] + c, -1)


def _g_tag(A, i, gid, m, X):
    return _where(_inside(i, A.shape[0]), i * 8 + gid, -1)


def _g_tag2(A, r, c, gid, m, X):
    return _where(_g_ok2(A, r, c, m, X), (r * A.shape[1] + c) * 8 + gid, -1)


def _shadow(sh, off, flat, inb):
    """The tags of the slots ``flat`` where ``inb`` (``TAG_ZERO`` elsewhere)."""
    if not isinstance(flat, np.ndarray):
        return sh[off + flat] if inb else -1
    out = np.full(flat.shape[0], -1, np.int64)
    out[inb] = sh[off + flat[inb]]
    return out


def _s_tag(S, i, sh, off, m, X):
    return _shadow(sh, off, i, _inside(i, S.shape[0]))


def _s_tag2(S, r, c, sh, off, m, X):
    return _shadow(sh, off, r * S.shape[1] + c, _g_ok2(S, r, c, m, X))


def _gather(A, flat, inb, m, X, zero):
    """``A.flat[flat]`` for the active in-bounds lanes (``zero`` elsewhere) and those lanes."""
    flat = _lanes(flat, X.n)
    sel = m & _lanes(inb, X.n)
    out = np.full(X.n, zero, A.dtype)
    got = flat[sel]
    out[sel] = A.reshape(-1)[got]
    X.launch._saw_read(A, got, X.tids[sel])
    return out, sel, got


def _g_load(A, i, row, col, aid, ln, reads, zero, ev, vals, cnt, cap, t, ep, acc, m, X):
    inb = _inside(i, A.shape[0])
    v, sel, got = _gather(A, i, inb, m, X, zero)
    reads.append(got)
    _log_g(ev, vals, cnt, cap, t, 1, _where(inb, 0, 1), aid, i, row, col, ep, ln, v, acc, m, X)
    return v


def _g_load2(A, r, c, aid, ln, reads, zero, ev, vals, cnt, cap, t, ep, acc, m, X):
    inb = _g_ok2(A, r, c, m, X)
    i = r * A.shape[1] + c
    v, sel, got = _gather(A, i, inb, m, X, zero)
    reads.append(got)
    _log_g(ev, vals, cnt, cap, t, 1, _where(inb, 0, 1), aid, i, r, c, ep, ln, v, acc, m, X)
    return v


def _scatter(A, flat, v, sel, X):
    flat = _lanes(flat, X.n)[sel]
    X.launch._saw_write(A, flat, X.tids[sel])
    A.reshape(-1)[flat] = _pick(v, sel)


def _g_store(A, i, v, row, col, aid, ln, ev, vals, cnt, cap, t, ep, acc, m, X):
    inb = _inside(i, A.shape[0])
    _scatter(A, i, v, m & _lanes(inb, X.n), X)
    _log_g(ev, vals, cnt, cap, t, 2, _where(inb, 0, 1), aid, i, row, col, ep, ln, v, acc, m, X)


def _g_store2(A, r, c, v, aid, ln, ev, vals, cnt, cap, t, ep, acc, m, X):
    inb = _g_ok2(A, r, c, m, X)
    i = r * A.shape[1] + c
    _scatter(A, i, v, m & _lanes(inb, X.n), X)
    _log_g(ev, vals, cnt, cap, t, 2, _where(inb, 0, 1), aid, i, r, c, ep, ln, v, acc, m, X)


def _s_load_at(S, flat, inb, row, col, sh, off, aid, ln, t, ep, acc, m, X):
    v, sel, got = _gather(S, flat, inb, m, X, 0)
    tag = _shadow(sh, off, _lanes(flat, X.n), _lanes(inb, X.n) & m)
    tag = np.where(_lanes(inb, X.n), tag, -4)
    sa = np.where(tag >= 0, tag % 8, np.where(_lanes(inb, X.n), tag, -1))
    si = np.where(tag >= 0, tag // 8, -1)
    flag = _where(inb, 0, 1)
    X.launch._write(
        m, t, _word(1, flag, aid, ln), flat, row, col, tag, sa, si, -1, -1, ep, -1, v, acc
    )
    return v


def _s_load(S, i, row, col, sh, off, aid, ln, ev, vals, cnt, cap, t, ep, acc, m, X):
    return _s_load_at(S, i, _inside(i, S.shape[0]), row, col, sh, off, aid, ln, t, ep, acc, m, X)


def _s_load2(S, r, c, sh, off, aid, ln, ev, vals, cnt, cap, t, ep, acc, m, X):
    inb = _g_ok2(S, r, c, m, X)
    return _s_load_at(S, r * S.shape[1] + c, inb, r, c, sh, off, aid, ln, t, ep, acc, m, X)


def _s_store_at(
    S, flat, inb, v, row, col, sh, off, ok, tag, sa, si, sr, sc, aid, ln, t, ep, acc, m, X
):
    inb_l, ok_l = _lanes(inb, X.n), _lanes(_truth(ok), X.n)
    sel = m & inb_l & ok_l
    _scatter(S, flat, v, sel, X)
    if sel.any():
        sh[off + _lanes(flat, X.n)[sel]] = _pick(tag, sel)
    flag = np.where(inb_l, np.where(ok_l, 0, 2), 1)
    X.launch._write(
        m, t, _word(2, flag, aid, ln), flat, row, col, tag, sa, si, sr, sc, ep, -1, v, acc
    )


def _s_store(
    S,
    i,
    v,
    row,
    col,
    sh,
    off,
    ok,
    tag,
    sa,
    si,
    sr,
    sc,
    aid,
    ln,
    ev,
    vals,
    cnt,
    cap,
    t,
    ep,
    acc,
    m,
    X,
):
    inb = _inside(i, S.shape[0])
    _s_store_at(S, i, inb, v, row, col, sh, off, ok, tag, sa, si, sr, sc, aid, ln, t, ep, acc, m, X)


def _s_store2(
    S, r, c, v, sh, off, ok, tag, sa, si, sr, sc, aid, ln, ev, vals, cnt, cap, t, ep, acc, m, X
):
    inb = _g_ok2(S, r, c, m, X)
    flat = r * S.shape[1] + c
    _s_store_at(S, flat, inb, v, r, c, sh, off, ok, tag, sa, si, sr, sc, aid, ln, t, ep, acc, m, X)


def _zfill(zf, bid, n, zph, aid, narr, m, X):
    if zf.shape[0] == 0:
        return
    n = _lanes(n, X.n)
    sel = m & (n < zph)
    if sel.any():
        np.add.at(zf, (bid * zph + n[sel]) * narr + aid, 1)


def _block_start(blk, bid, tid, m, X):
    """No SM, timer nor clock in a simulator: the block's entries stay ``-1``."""


def _end(blk, seq, bid, tid, ln, ev, vals, cnt, cap, t, ep, acc, m, X):
    _log_b(ev, vals, cnt, cap, t, D.END, ep, -1, ln, acc, m, X)
    X.exit(m)
    if (m & (_lanes(tid, X.n) == 0)).any():
        blk[bid * 6 + 5] = seq[0]
        seq[0] += 1


_RUNTIME = {
    "_qmset": _mset,
    "_qtruth": _truth,
    "_qand": _and,
    "_qor": _or,
    "_qand_lazy": _and_lazy,
    "_qor_lazy": _or_lazy,
    "_qifexp": _ifexp,
    "_qwhere": _where,
    "_qnot": _not,
    "_qandnot": _andnot,
    "_qgo": _go,
    "_qint": _int,
    "_qfloat": _float,
    "_qbool": _bool,
    "_qabs": _abs,
    "_qmin": _min,
    "_qmax": _max,
    "_qround": _round,
    "_qlen": _len,
    "_qfma": _fma,
    "_qselp": _selp,
    "_qpopc": _popc,
    "_qld": _ld,
    "_qsec": _sec,
    "_qst": _st,
    "_qatomic": _atomic,
    "log_g": _log_g,
    "log_s": _log_s,
    "log_b": _log_b,
    "g_ok": _g_ok,
    "g_ok2": _g_ok2,
    "flat2": _flat2,
    "g_tag": _g_tag,
    "g_tag2": _g_tag2,
    "s_tag": _s_tag,
    "s_tag2": _s_tag2,
    "g_load": _g_load,
    "g_load2": _g_load2,
    "g_store": _g_store,
    "g_store2": _g_store2,
    "s_load": _s_load,
    "s_load2": _s_load2,
    "s_store": _s_store,
    "s_store2": _s_store2,
    "zfill": _zfill,
    "block_start": _block_start,
    "end": _end,
}

#: The numeric types a kernel names, as NumPy's.
TYPES = {
    "float32": np.float32,
    "float64": np.float64,
    "int32": np.int32,
    "int64": np.int64,
    "uint32": np.uint32,
    "uint64": np.uint64,
    "int16": np.int16,
    "int8": np.int8,
    "boolean": np.bool_,
}


def namespace(env: Mapping) -> dict:
    """The globals of a kernel compiled for vizmm's simulator.

    Parameters
    ----------
    env : mapping
        The kernel's constants (``TILE_WIDTH`` ...) and the names its file
        binds to numeric types, NumPy's (:func:`.instrument.instrument` maps a
        numba type to NumPy's of its name); anything else is left out, and
        ``math`` is the lane-wise one.

    Returns
    -------
    dict
        The constants, NumPy's types, ``math`` and the runtime's helpers.
    """
    out: dict = {}
    for k, v in env.items():
        if k.startswith("__"):
            continue
        if isinstance(v, (bool, int, float, np.integer, np.floating, tuple)) or v is None:
            out[k] = v
        elif isinstance(v, type) and issubclass(v, np.generic):
            out[k] = v
    for k, v in TYPES.items():
        out.setdefault(k, v)
    out["math"] = _Math()
    out["np"] = out["numpy"] = np
    out.update(_RUNTIME)
    return out


def launch(
    kern,
    args: list,
    rec: dict,
    grid,
    block,
    blocks: Iterable[tuple[int, int]] | None,
    update: Callable[[int, int], None],
    dynamic_shared: int = 0,
    cancel=None,
    schedule: str = "threads",
) -> Launch:
    """Run ``kern`` over the grid (or ``blocks``) in vizmm's simulator, filling ``rec``'s log.

    Parameters
    ----------
    kern : SimtKernel
        The rewritten kernel compiled by :func:`.simt_compile.compile_kernel`.
    args : list
        The kernel's own arguments in order (NumPy arrays are worked on in place).
    rec : dict
        The log's arguments by name, as :func:`.instrument._records` makes
        them for a GPU (packed ``_ev`` / ``_vals``, ``_cnt``), except that
        each ``_reads_<array>`` is a list that receives the flat indices read.
    grid : (gx, gy)
    block : (bx, by) or (bx, by, bz)
    blocks : iterable of (by, bx) or None
        The blocks to run, in order; None for every block, row by row.
    update : callable
        ``update(done, total)`` after each block.
    dynamic_shared : int
        Bytes of the extern shared array (Fig. 5.14).
    cancel : threading.Event, optional
        Checked before each block.
    schedule : {'threads', 'warps'}
        Who runs when between barriers (the module docstring).

    Returns
    -------
    Launch
        Its notes (barriers some threads skipped) and how many blocks ran in lockstep.

    Raises
    ------
    RecordingCancelled
        When ``cancel`` is set.
    ValueError
        For an unknown schedule.
    """
    if schedule not in SCHEDULES:
        raise ValueError(f"unknown schedule {schedule!r}; choose one of {', '.join(SCHEDULES)}")
    gx, gy = grid[:2]
    order = [(by, bx) for by in range(gy) for bx in range(gx)] if blocks is None else list(blocks)
    run = Launch(kern, args, rec, grid, block, dynamic_shared, schedule)
    with np.errstate(all="ignore"):
        run.run(order, update, cancel)
    return run
