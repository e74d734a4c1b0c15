"""The access log's model: its fields, ops, flags, tags and how one word packs them.

One definition for every layer: the instrumenter's writers (the device
functions of :mod:`vizmm.record.instrument_device` on a GPU or in Numba's
simulator, :mod:`vizmm.record.simt` in vizmm's) write these, and the
recording (:mod:`vizmm.record.instrument_log`), :mod:`vizmm.analysis.check`,
:mod:`vizmm.replay.own` and :mod:`vizmm.replay.table` read them. A trace
keeps the decoded log (``log_events`` of :data:`FIELDS`, ``log_values``,
``log_counts``); its ``meta["access_log"]`` names the fields and the
arrays. NumPy only.

:func:`unpack` (and :func:`unpack_field_major`, a GPU's layout) is the one
decoder of the packed log; :class:`AccessLog` is the decoded log of a
trace (or one of its blocks) with the views its readers share: the events
of a thread in order, the roles of the book's matmul (M, N, P, Mds, Nds),
each event's phase ``ph``, the factors of the products and their pairing
into terms, the P stores, and the accesses of each shared element per
barrier epoch.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

__all__ = [
    "AccessLog", "NO_LOG", "one_element", "unpack", "unpack_field_major",
    "ARR", "ARRIVE", "ARR_SHIFT", "COL", "END", "EPOCH", "FIELDS", "FLAG", "FLAG_SHIFT", "IDX",
    "LINE", "LINE_SHIFT", "LOAD", "MAX_ARRAYS", "MAX_LINE", "MOVE", "MOVE_ADD", "MOVE_SET", "NF",
    "NO_INDEX", "OK", "OP", "OUT_OF_BOUNDS", "RELEASE", "ROW", "SIM_ROW", "SOURCE_OUT_OF_BOUNDS",
    "SRC_ARR", "SRC_COL", "SRC_IDX", "SRC_ROW", "STORE", "TAG", "TAG_ARRAYS", "TAG_COMPUTED",
    "TAG_NEVER", "TAG_ZERO", "TERM", "TICK",
]  # fmt: skip

#: Event fields (last axis of ``ev``).
FIELDS = (
    "op",  # LOAD, STORE, ARRIVE, RELEASE, END
    "flag",  # OK, OUT_OF_BOUNDS (not performed), SOURCE_OUT_OF_BOUNDS (store skipped)
    "arr",  # the array's id (the instrumenter's table), -1 for barriers and the end
    "idx",  # the flat element index the code named (may be out of bounds)
    "row",  # the code's (row, col): a 2-D subscript, or a*W + b of a 1-D one; NO_INDEX if none
    "col",
    "tag",  # shared stores/loads: the slot's provenance tag written/found (TAG_*, or src)
    "src_arr",  # the global element the value came from (copy, zero-fill guard, slot's tag)
    "src_idx",
    "src_row",
    "src_col",
    "epoch",  # cuda.syncthreads() the thread had passed
    "tick",  # barriers: the block's logical clock (arrival/release order); -1 otherwise
    "line",  # the kernel source's line
)
NF = len(FIELDS)
(OP, FLAG, ARR, IDX, ROW, COL, TAG, SRC_ARR, SRC_IDX, SRC_ROW, SRC_COL, EPOCH, TICK, LINE) = range(
    NF
)
LOAD, STORE, ARRIVE, RELEASE, END = 1, 2, 3, 4, 5
OK, OUT_OF_BOUNDS, SOURCE_OUT_OF_BOUNDS = 0, 1, 2
NO_INDEX = -(2**31)
#: A slot's tag: ``src_idx * TAG_ARRAYS + src_arr`` of the global element copied into it, or:
TAG_ZERO = -1  # a constant was stored (the boundary check's zero-fill)
TAG_NEVER = -2  # no thread of the block has written the slot
TAG_COMPUTED = -4  # a computed value (not a plain copy of one global element)
TAG_ARRAYS = 8

#: How the rewritten kernels lay the log out in device memory. Field ``f`` of
#: thread ``t``'s ``n``-th event is ``ev[(n * NF + f) * T + t]`` and its two
#: values ``vals[(n * 2 + k) * T + t]`` (``T`` logged threads): the threads of a
#: warp write one event's field side by side, in whole sectors. The op, flag,
#: array and line share the first word (``op | flag << 3 | (arr + 1) << 5 |
#: line << 13``); the fields an access of its kind always gives the same value
#: (a global access's tag and source, a barrier's index) are not written.
#: :func:`unpack_field_major` makes the ``(threads, cap, NF)`` log of
#: :data:`FIELDS` from it, the same from a GPU as from the simulator.
LINE_SHIFT, ARR_SHIFT, FLAG_SHIFT = 13, 5, 3
#: The largest array id and source line one packed word holds.
MAX_ARRAYS, MAX_LINE = 254, (1 << (31 - LINE_SHIFT)) - 1
#: In the simulator the log is a list of rows, one per event, in the order the
#: threads logged them: the thread's row of the log, its event number, the packed
#: word, then the fields from ``idx`` to ``tick`` of :data:`FIELDS`, the value and
#: the accumulator. :func:`vizmm.record.instrument.run` lays them out per thread
#: (:func:`unpack` reads that layout in place).
SIM_ROW = ("t", "n", "word", *FIELDS[IDX : TICK + 1], "value", "acc")


#: Ops of the events a user kernel's recording adds for :func:`vizmm.check`: a product
#: accumulated (its two factors' tags), and an accumulator's value moved (kept, reset or
#: added into another accumulator or an array element).
TERM, MOVE = 6, 7
#: A MOVE's flag: the destination takes the source's terms, or adds them to its own.
MOVE_SET, MOVE_ADD = 0, 1


# ------------------------------------------------------------------ the decoder
def unpack(
    events: np.ndarray, values: np.ndarray, counts: np.ndarray, spaces: Sequence[str]
) -> tuple[np.ndarray, np.ndarray]:
    """Unpack a log laid out per thread, in place: the one decoder of the packed word.

    The rewritten kernel packs an event's op, flag, array and line into one
    word (``op | flag << 3 | (arr + 1) << 5 | line << 13``, :data:`LINE_SHIFT`)
    and leaves out the fields its kind of access always gives the same value.
    This unpacks the word into :data:`OP`, :data:`FLAG`, :data:`ARR` and
    :data:`LINE`, fills those fields (``tick`` -1 but for barriers, a barrier's
    ``idx``/``row``/``col`` -1 and value 0.0, a global access's or a barrier's
    tag :data:`TAG_COMPUTED` and source -1, a TERM's or MOVE's (row, col) and
    source (row, col) :data:`NO_INDEX`) and zeroes the rows past each
    thread's count, whatever the card left there, so that a GPU's log and
    a simulator's read the same.

    Parameters
    ----------
    events : ndarray of int32, (threads, cap, NF)
        Per thread and event: the packed word in ``op``, the fields ``idx``
        to ``tick`` as written. Unpacked in place.
    values : ndarray of float64, (threads, cap, 2)
        The value loaded or stored and the accumulator; zeroed in place
        where not written.
    counts : ndarray of int32, (threads,)
        Events per thread, at most ``cap``.
    spaces : sequence of str
        Per array id, ``'global'`` or ``'shared'``.

    Returns
    -------
    events : ndarray of int32, (threads, cap, NF)
        ``events``, the fields of :data:`FIELDS`; zero past each thread's count.
    values : ndarray of float64, (threads, cap, 2)
        ``values``; 0.0 past each thread's count and for a barrier's value.
    """
    out, val, cap = events, values, events.shape[1]
    word = out[..., OP].copy()
    arr = ((word >> ARR_SHIFT) & 255) - 1
    out[..., OP] = word & 7
    out[..., FLAG] = (word >> FLAG_SHIFT) & 3
    out[..., ARR] = arr
    out[..., LINE] = word >> LINE_SHIFT
    is_global = np.array([s == "global" for s in spaces] + [False], bool)
    op = out[..., OP]
    noted = (op == TERM) | (op == MOVE)  # every field written by the kernel
    barrier = (arr < 0) & ~noted
    # (rows past a thread's count hold whatever the card had: looked up as no array)
    nbad = len(spaces)
    glob = ~barrier & ~noted & is_global[np.where(barrier | (arr < 0) | (arr >= nbad), nbad, arr)]
    out[..., TICK][~barrier] = -1
    out[..., ROW : COL + 1][noted] = NO_INDEX
    out[..., SRC_ROW : SRC_COL + 1][noted] = NO_INDEX
    out[..., TAG : SRC_COL + 1][glob | barrier] = (TAG_COMPUTED, -1, -1, -1, -1)
    out[..., IDX : COL + 1][barrier] = -1
    val[..., 0][barrier] = 0.0
    past = np.arange(cap)[None, :] >= np.asarray(counts)[:, None]
    out[past] = 0
    val[past] = 0.0
    return out, val


def unpack_field_major(
    ev: np.ndarray, vals: np.ndarray, counts: np.ndarray, cap: int, spaces: Sequence[str]
) -> tuple[np.ndarray, np.ndarray]:
    """A log as a GPU's kernel leaves it (field-major), transposed and :func:`unpack`-ed.

    Field ``f`` of thread ``t``'s ``n``-th event is ``ev[(n * NF + f) * threads + t]``
    and its two values ``vals[(n * 2 + k) * threads + t]``: a warp's threads
    write one field side by side, in whole sectors.

    Parameters
    ----------
    ev : ndarray of int32, flat, at least ``cap * NF * threads`` long
        The kernel's ``_ev``.
    vals : ndarray of float64, flat, at least ``cap * 2 * threads`` long
        The kernel's ``_vals``.
    counts : ndarray of int32, (threads,)
        Events per thread, at most ``cap``.
    cap : int
        Events per thread the log had room for.
    spaces : sequence of str
        Per array id, ``'global'`` or ``'shared'``.

    Returns
    -------
    events : ndarray of int32, (threads, cap, NF)
    values : ndarray of float64, (threads, cap, 2)
        As :func:`unpack` returns them (fresh arrays).
    """
    tt = len(counts)
    raw = np.asarray(ev)[: cap * NF * tt].reshape(cap, NF, tt).transpose(2, 0, 1)
    val = np.asarray(vals)[: cap * 2 * tt].reshape(cap, 2, tt).transpose(2, 0, 1)
    return unpack(np.ascontiguousarray(raw), np.ascontiguousarray(val), counts, spaces)


# ------------------------------------------------------------------ the model
#: Why a trace without an access log cannot be read as one.
NO_LOG = (
    "this trace has no access log: check a kernel recorded through the "
    "instrumenter (vizmm.check, or vizmm.record(kernel=...))"
)


@dataclasses.dataclass(frozen=True, eq=False)
class AccessLog:
    """The decoded access log of detail blocks, with the views its readers share.

    Validated once, when made. The views (``valid``, :meth:`tiles`,
    :meth:`phases`, :meth:`factors` ...) are worked out on first use and
    kept in the instance's ``__dict__``, so they go when it goes.

    Attributes
    ----------
    events : ndarray of int32, (nd, threads, cap, NF)
        Per detail block (slot), thread (``ty * bdx + tx``) and event, the
        fields :data:`FIELDS`; zero past the thread's count.
    values : ndarray of float64, (nd, threads, cap, 2)
        The value loaded or stored (0.0 for a barrier, a TERM's product) and
        the accumulator (:attr:`accumulator`) at that event.
    counts : ndarray of int32, (nd, threads)
        Events per thread (``0 <= counts <= cap``).
    names : tuple of str
        Per array id (:data:`ARR`), the kernel's name of the array.
    spaces : tuple of str
        Per array id, ``'global'`` or ``'shared'``.
    blocks : tuple of (int, int)
        ``(by, bx)`` of each slot, ``nd`` of them.
    tile_width : int
        TILE_WIDTH (threads of a block per row; thread ``t`` is ``divmod(t, T)``).
    shape : (int, int, int)
        ``(j, k, l)``: M is j x k, N k x l, P j x l.
    accumulator : str or None
        The variable whose value the log carries beside each event (None: none).

    Raises
    ------
    ValueError
        When an array has the wrong dtype or shape, a count lies outside
        ``0..cap``, the names and spaces disagree, a space is neither global
        nor shared, or ``blocks`` is not one ``(by, bx)`` per slot.
    """

    events: np.ndarray
    values: np.ndarray
    counts: np.ndarray
    names: tuple
    spaces: tuple
    blocks: tuple
    tile_width: int
    shape: tuple
    accumulator: str | None = None

    def __post_init__(self) -> None:
        ev, vals, cnt = self.events, self.values, self.counts
        if ev.dtype != np.int32 or ev.ndim != 4 or ev.shape[3] != NF:
            raise ValueError(f"access log events must be int32 (nd, threads, cap, {NF})")
        if vals.dtype != np.float64 or vals.shape != (*ev.shape[:3], 2):
            raise ValueError("access log values must be float64 (nd, threads, cap, 2)")
        if cnt.dtype != np.int32 or cnt.shape != ev.shape[:2]:
            raise ValueError("access log counts must be int32 (nd, threads)")
        if cnt.size and (cnt.min() < 0 or cnt.max() > ev.shape[2]):
            raise ValueError("access log counts must lie in 0..cap (events per thread)")
        if len(self.names) != len(self.spaces) or set(self.spaces) - {"global", "shared"}:
            raise ValueError("access log arrays: one name and one space (global, shared) each")
        if len(self.blocks) != ev.shape[0]:
            raise ValueError("access log blocks: one (by, bx) per detail block")

    # ------------------------------------------------------------ making
    @classmethod
    def from_trace(cls, trace: Any) -> AccessLog | None:
        """The access log a trace keeps (meta ``access_log``), or None when it has none.

        The arrays are the trace's own (``log_events``, ``log_values``,
        ``log_counts``: validated when the trace was), not copies.

        Parameters
        ----------
        trace : Trace
            Any recording; one made through the instrumenter keeps its log,
            a book kernel recorded before the instrumenter has none.

        Returns
        -------
        AccessLog or None
        """
        log = trace.meta.get("access_log")
        events = getattr(trace, "log_events", None)
        if not isinstance(log, Mapping) or events is None or not events.size:
            return None
        return cls(
            events,
            trace.log_values,
            trace.log_counts,
            tuple(a["name"] for a in log["arrays"]),
            tuple(a["space"] for a in log["arrays"]),
            tuple((int(b[0]), int(b[1])) for b in trace.detail_blocks),
            int(trace.meta["tile_width"]),
            (int(trace.meta["j"]), int(trace.meta["k"]), int(trace.meta["l"])),
            log.get("accumulator"),
        )

    def block(self, slot: int, threads: int | None = None) -> AccessLog:
        """The log of one detail block (a one-slot log), optionally its first threads only.

        Parameters
        ----------
        slot : int
            The block's slot (``trace.slot((by, bx))``).
        threads : int, optional
            Keep threads ``0 .. threads - 1`` only (a block's T x T).

        Returns
        -------
        AccessLog
            ``nd`` is 1.
        """
        t = slice(None, threads)
        return dataclasses.replace(
            self,
            events=self.events[slot : slot + 1, t],
            values=self.values[slot : slot + 1, t],
            counts=self.counts[slot : slot + 1, t],
            blocks=(self.blocks[slot],),
        )

    def head(self, threads: int) -> AccessLog:
        """The log of every block's first ``threads`` threads (a block's T x T).

        Parameters
        ----------
        threads : int
            Threads kept per block.

        Returns
        -------
        AccessLog
        """
        t = slice(None, threads)
        return dataclasses.replace(
            self, events=self.events[:, t], values=self.values[:, t], counts=self.counts[:, t]
        )

    # ------------------------------------------------------------ plain views
    def _kept(self, key: Any, make: Any) -> Any:
        memo = self.__dict__.setdefault("_memo", {})
        if key not in memo:
            memo[key] = make()
        return memo[key]

    @property
    def valid(self) -> np.ndarray:
        """``(nd, threads, cap)`` bool: the events each thread logged (``n < counts``)."""
        return self._kept("valid", lambda: np.arange(self.events.shape[2]) < self.counts[..., None])

    def field(self, f: int) -> np.ndarray:
        """``(nd, threads, cap)`` int32: field ``f`` (:data:`OP`, :data:`ARR` ...) of every event.

        Parameters
        ----------
        f : int
            The field's index in :data:`FIELDS`.
        """
        return self.events[..., f]

    def thread(self, s: int, t: int) -> np.ndarray:
        """``(counts[s, t], NF)`` int32: the events of thread ``t`` of slot ``s``, in order.

        Parameters
        ----------
        s, t : int
            Slot and thread (``ty * T + tx``).
        """
        return self.events[s, t, : self.counts[s, t]]

    def threads(self) -> list[tuple[int, int]]:
        """Every ``(slot, thread)``, slot by slot, threads in order."""
        return [(s, t) for s in range(self.events.shape[0]) for t in range(self.events.shape[1])]

    def ty_tx(self, t: int) -> tuple[int, int]:
        """``(ty, tx)`` of thread ``t`` (``divmod(t, TILE_WIDTH)``).

        Parameters
        ----------
        t : int
            The thread's index in its block's log.
        """
        return (int(t) // self.tile_width, int(t) % self.tile_width)

    def shared(self) -> list[int]:
        """The ids of the shared arrays, in order."""
        return [i for i, sp in enumerate(self.spaces) if sp == "shared"]

    # ------------------------------------------------------------ the book's roles
    def matmul(self) -> tuple[int, int, int]:
        """``(M, N, P)``: the ids of the first, second and last global arrays.

        Raises
        ------
        ValueError
            When the kernel has fewer than three global arrays.
        """
        glob = [i for i, sp in enumerate(self.spaces) if sp == "global"]
        if len(glob) < 3:
            raise ValueError(
                "a matrix multiplication kernel takes M, N and P (three global arrays); "
                f"this one has {len(glob)}"
            )
        return glob[0], glob[1], glob[-1]

    def stores(self, performed: bool) -> np.ndarray:
        """``(nd, threads, cap)`` bool: the logged stores (only those performed: ``flag`` OK).

        Parameters
        ----------
        performed : bool
            Leave out the stores not performed (out of bounds, or skipped).
        """

        def make() -> np.ndarray:
            out = self.valid & (self.events[..., OP] == STORE)
            return out & (self.events[..., FLAG] == OK) if performed else out

        return self._kept(("stores", performed), make)

    def copies(self, performed: bool) -> np.ndarray:
        """``(arrays, arrays)`` int: stores into shared array ``a`` copying array ``m``.

        Parameters
        ----------
        performed : bool
            Count only the stores performed.
        """

        def make() -> np.ndarray:
            n = len(self.spaces)
            st = self.stores(performed) & np.isin(self.events[..., ARR], self.shared())
            a, m = self.events[..., ARR][st], self.events[..., SRC_ARR][st]
            ok = (m >= 0) & (m < n)
            out = np.zeros((n, n), np.int64)
            np.add.at(out, (a[ok], m[ok]), 1)
            return out

        return self._kept(("copies", performed), make)

    def tiles(self, performed: bool) -> dict[int, int]:
        """``{shared id: M's or N's id}``: the matrix most of a shared array's stores copy.

        A tie goes to M (the smaller id); a shared array copying neither has no role.

        Parameters
        ----------
        performed : bool
            Count only the stores performed.

        Raises
        ------
        ValueError
            When the kernel has fewer than three global arrays.
        """
        m, n, _p = self.matmul()
        c = self.copies(performed)
        return {a: (m if c[a, m] >= c[a, n] else n) for a in self.shared() if c[a, m] or c[a, n]}

    def mds(self, performed: bool) -> int | None:
        """The id of Mds: the first shared array whose role is M's (None: none).

        Parameters
        ----------
        performed : bool
            Roles from the stores performed only.
        """
        m = self.matmul()[0]
        return next((a for a, r in sorted(self.tiles(performed).items()) if r == m), None)

    def tile_for(self, matrix: int, performed: bool, last: bool = False) -> int | None:
        """The shared array with the most stores copying ``matrix`` (None: none).

        Parameters
        ----------
        matrix : int
            The global array's id (M's or N's).
        performed : bool
            Count only the stores performed.
        last : bool
            A tie goes to the larger id (else to the smaller).
        """
        col = self.copies(performed)[:, matrix]
        if not col.any():
            return None
        best = np.flatnonzero(col == col.max())
        return int(best[-1] if last else best[0])

    def phases_of(self, array: int | None, performed: bool) -> np.ndarray:
        """``(nd, threads, cap)`` int: each event's count of the thread's stores into ``array``, -1.

        A store is the first event of its count: the n-th store into a tile
        starts the tile's phase n (-1 before the first, and everywhere when
        ``array`` is None).

        Parameters
        ----------
        array : int or None
            A shared array's id.
        performed : bool
            Count the stores performed only.
        """

        def make() -> np.ndarray:
            key = -99 if array is None else array
            return np.cumsum(self.stores(performed) & (self.events[..., ARR] == key), axis=2) - 1

        return self._kept(("phases_of", array, performed), make)

    def phases(self, performed: bool) -> np.ndarray:
        """``(nd, threads, cap)`` int: each event's phase ``ph``, -1 before the first.

        The book's ``ph`` is the thread's stores into Mds (:meth:`mds`) so
        far, from 0 (a store into Mds is the first event of its phase); -1
        everywhere when the kernel has no Mds.

        Parameters
        ----------
        performed : bool
            Count (and find Mds from) the stores performed only.
        """
        return self.phases_of(self.mds(performed), performed)

    # ------------------------------------------------------------ factors and terms
    def factors(self, performed: bool, global_loads: bool) -> tuple[np.ndarray, np.ndarray]:
        """Each event read as a factor of a product: its side (M's or N's id) and element.

        A factor is a performed load of a shared slot holding an element of M
        or N (its tag; ``element`` the element's flat index), or of a slot
        holding no such element (a zero-fill, never written, computed: its
        tag, < 0, on the side of the array's role, :meth:`tiles`); with
        ``global_loads``, also a load of M or N itself that is not a tile
        load's global half (the next event a shared store of that element).

        Parameters
        ----------
        performed : bool
            The roles of :meth:`tiles` from the stores performed only.
        global_loads : bool
            Also read loads of M and N themselves as factors.

        Returns
        -------
        side : ndarray of int64, (nd, threads, cap)
            M's or N's id, -1 where the event is no factor.
        element : ndarray of int64, (nd, threads, cap)
            The factor's flat element (or its tag < 0); 0 where no factor.
        """
        key = ("factors", performed, global_loads)
        return self._kept(key, lambda: self._factors(performed, global_loads))

    def _factors(self, performed: bool, global_loads: bool) -> tuple[np.ndarray, np.ndarray]:
        m, n, _p = self.matmul()
        ev = self.events
        op, a, tag = ev[..., OP], ev[..., ARR].astype(np.int64), ev[..., TAG].astype(np.int64)
        role = np.full(len(self.spaces) + 1, -1, np.int64)
        for arr, r in self.tiles(performed).items():
            role[arr] = r
        is_shared = np.array([sp == "shared" for sp in self.spaces] + [False], bool)
        safe = np.where((a < 0) | (a >= len(self.spaces)), len(self.spaces), a)
        load = self.valid & (op == LOAD) & (a >= 0) & (ev[..., FLAG] == OK)
        shared = load & is_shared[safe]
        side = np.full(op.shape, -1, np.int64)
        element = np.zeros(op.shape, np.int64)
        held = np.where(tag >= 0, tag % TAG_ARRAYS, role[safe])
        pick = shared & np.isin(held, (m, n))
        side[pick] = held[pick]
        element[pick] = np.where(tag >= 0, tag // TAG_ARRAYS, tag)[pick]
        if global_loads:
            nxt = np.concatenate([ev[:, :, 1:], np.zeros_like(ev[:, :, :1])], axis=2)
            nxt_a = nxt[..., ARR].astype(np.int64)
            half = (
                (nxt[..., OP] == STORE)
                & is_shared[np.where((nxt_a < 0) | (nxt_a >= len(self.spaces)), -1, nxt_a)]
                & (nxt[..., SRC_ARR] == a)
                & (nxt[..., SRC_IDX] == ev[..., IDX])
            )
            pick = load & ((a == m) | (a == n)) & ~half
            side[pick] = a[pick]
            element[pick] = ev[..., IDX][pick]
        return side, element

    def pairs(
        self, s: int, t: int, side: np.ndarray, phase: np.ndarray | None = None
    ) -> list[tuple[int, int, int]]:
        """The terms of thread ``t`` of slot ``s``: its factors paired into products.

        The i-th factor read from M's side with the i-th from N's, in the
        order the thread read them: over the whole thread, or (``phase``
        given) within each phase ``ph >= 0`` apart, phase by phase.

        Parameters
        ----------
        s, t : int
            Slot and thread.
        side : ndarray of int, (nd, threads, cap)
            Each event's factor side (:meth:`factors`).
        phase : ndarray of int, (nd, threads, cap), optional
            Each event's phase (:meth:`phases`): pair within phases.

        Returns
        -------
        list of (int, int, int)
            ``(ph, n of the M factor, n of the N factor)`` per term (``ph``
            -1 without ``phase``), in order.
        """
        m, n, _p = self.matmul()
        cnt = int(self.counts[s, t])
        sd = side[s, t, :cnt]
        if phase is None:
            groups = [(-1, np.ones(cnt, bool))]
        else:
            ph = phase[s, t, :cnt]
            groups = [(p, ph == p) for p in sorted(set(ph[sd >= 0].tolist())) if p >= 0]
        out = []
        for p, here in groups:
            ms = np.flatnonzero(here & (sd == m)).tolist()
            ns = np.flatnonzero(here & (sd == n)).tolist()
            out += [(p, a, b) for a, b in zip(ms, ns, strict=False)]
        return out

    # ------------------------------------------------------------ stores and accesses
    def p_stores(self) -> np.ndarray:
        """``(nd, threads, cap)`` bool: the performed stores into P."""
        return self.stores(True) & (self.events[..., ARR] == self.matmul()[2])

    def element(self, e: np.ndarray, ncols: int) -> tuple[int, int]:
        """``(row, col)`` of an event's element: the code's, else ``divmod(idx, ncols)``.

        Parameters
        ----------
        e : ndarray of int, (NF,)
            One event.
        ncols : int
            Columns of the array (TILE_WIDTH for a tile, l for P).
        """
        r, c = int(e[ROW]), int(e[COL])
        if r == NO_INDEX or c == NO_INDEX:
            return divmod(int(e[IDX]), ncols)
        return (r, c)

    def shared_accesses(self, s: int) -> dict[tuple[int, int, int], list[tuple[int, int]]]:
        """Slot ``s``'s performed loads and stores of shared memory, per element and epoch.

        Parameters
        ----------
        s : int
            The slot.

        Returns
        -------
        dict
            ``{(array, idx, epoch): [(thread, n), ...]}``, threads in order,
            each thread's events in order; keys in order of first access.
        """
        ev = self.events[s]
        ok = self.valid[s] & (ev[..., FLAG] == OK) & (ev[..., ARR] >= 0)
        ok &= (ev[..., OP] == LOAD) | (ev[..., OP] == STORE)
        ok &= np.isin(ev[..., ARR], self.shared())
        out: dict = defaultdict(list)
        for t, n in zip(*np.nonzero(ok), strict=True):
            e = ev[t, n]
            out[(int(e[ARR]), int(e[IDX]), int(e[EPOCH]))].append((int(t), int(n)))
        return dict(out)

    def last_store(self, s: int, e: np.ndarray) -> tuple[int, int] | None:
        """The store that left the tag a shared load ``e`` found: ``(thread, n)``, or None.

        The latest (by barrier epoch, then event) performed store of the
        same element and tag by any thread of slot ``s``, in the load's
        epoch or before.

        Parameters
        ----------
        s : int
            The slot.
        e : ndarray of int, (NF,)
            The load.
        """
        ev = self.events[s]
        sel = (
            self.valid[s]
            & (ev[..., OP] == STORE)
            & (ev[..., ARR] == e[ARR])
            & (ev[..., IDX] == e[IDX])
            & (ev[..., TAG] == e[TAG])
            & (ev[..., FLAG] == OK)
            & (ev[..., EPOCH] <= e[EPOCH])
        )
        best = None
        for t, n in zip(*np.nonzero(sel), strict=True):
            key = (int(ev[t, n, EPOCH]), int(n))
            if best is None or key > best[0]:
                best = (key, int(t), int(n))
        return None if best is None else (best[1], best[2])


def one_element(terms: Sequence[tuple[int, int]], k: int, l: int) -> tuple[int, int] | None:
    """The P element whose ``k`` terms ``terms`` are, each once and nothing else; or None.

    A term is ``(M flat, N flat)``: ``M[r][q] * N[q][c]`` is ``(r * k + q,
    q * l + c)``. A thread whose products are exactly the terms of one
    element computed that element, wherever it stored it.

    Parameters
    ----------
    terms : sequence of (int, int)
        The products, with repeats (a term counted twice is not once).
    k : int
        Columns of M (rows of N): the terms of an element.
    l : int
        Columns of N and P.

    Returns
    -------
    (int, int) or None
        ``(r, c)`` of that element; None when the terms are not all of one
        element, miss one, repeat one or hold another product.
    """
    rows = {mi // k for mi, _ in terms if mi >= 0}
    cols = {ni % l for _, ni in terms if ni >= 0}
    if len(rows) != 1 or len(cols) != 1:
        return None
    (r,), (c,) = rows, cols
    whole = {(r * k + q, q * l + c) for q in range(k)}
    return (r, c) if len(terms) == k and set(terms) == whole else None
