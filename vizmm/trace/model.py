"""The trace model: what one launch of an instrumented kernel recorded.

A :class:`Trace` is immutable and validated when it is made. It holds the
inputs M and N, the result P, the launch configuration and the records of
the book's tiled kernels (PMPP 4th ed., Section 5.3-5.5): per block, phase and
thread, which M element went into ``Mds[ty][tx]`` and which N element into
``Nds[ty][tx]`` (or the zero-fill), each ``__syncthreads`` arrival and release,
Pvalue after each phase and the P write.

The file format lives in :mod:`vizmm.trace.fileformat`.

This module imports NumPy only: traces are replayed anywhere, no numba.
"""

from __future__ import annotations

import dataclasses
import enum
import math
import os
import threading
from collections.abc import Mapping
from typing import Any

import numpy as np

from .access_log import FIELDS
from .launch import KERNELS, LaunchShape
from .units import format_blocks

__all__ = [
    "BlockError",
    "Deferred",
    "array_specs",
    "check_meta",
    "describe",
    "naive_reads",
    "Access",
    "PWrite",
    "Trace",
    "TraceError",
    "LoadRecord",
    "LOG_FIELDS",
    "not_recorded_message",
    "KERNELS",
    "ARRAY_NAMES",
    "BLOCK_FIELDS",
    "WAIT_BINS",
]

# Barrier waits are summarised in log2 bins of cycles: bin b holds waits w with
# 2**(b-1) <= w < 2**b (bin 0: w == 0); the last bin holds everything larger.
WAIT_BINS = 32

# Full per-(block, phase) barrier spreads are kept when there are at most this
# many (block, phase) pairs; larger traces keep the summaries only.
MAX_STORED_SPREAD = 1 << 20


class TraceError(ValueError):
    """A trace (in memory or on disk) is not valid; the message says what is wrong."""


class BlockError(KeyError):
    """A block that is outside the grid or was not recorded per thread.

    A ``KeyError`` (blocks are looked up like keys) whose message reads as
    a sentence, not as a quoted key.
    """

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "no such block"


class Access(enum.IntEnum):
    """What a thread's load into ``Mds[ty][tx]`` / ``Nds[ty][tx]`` was (codes of ``ld``)."""

    NOT_RECORDED = 0  #: sentinel: nothing was recorded in this slot
    LOADED = 1  #: the element (row, col) was read from global memory
    ZERO_FILL = 2  #: the boundary check failed; 0.0 was stored (Fig. 5.13, lines 21/24)
    WRONG_ELEMENT = 3  #: (row, col) is outside the matrix; the row wrap read another element
    OUT_OF_ALLOCATION = 4  #: the linear index is past the array: recorded, not performed


class PWrite(enum.IntEnum):
    """What became of a thread's P store (codes of ``p_write``)."""

    NOT_RECORDED = 0  #: sentinel
    WRITTEN = 1  #: P[Row][Col] = Pvalue
    SKIPPED = 2  #: the boundary check skipped the store (no valid P element)
    WRONG_ELEMENT = 3  #: (Row, Col) is outside P but the linear index overwrote another element
    OUT_OF_ALLOCATION = 4  #: past the end of P: recorded, not performed


@dataclasses.dataclass(frozen=True)
class LoadRecord:
    """One thread's load into a shared-memory slot.

    Attributes
    ----------
    kind : Access
    row, col : int
        The (row, col) the kernel's index expression named (may lie outside
        the matrix for zero-fill, wrong-element and out-of-allocation loads).
    actual : tuple of int or None
        The element whose value went into the slot: ``(row, col)`` for
        ``LOADED``, the wrapped element for ``WRONG_ELEMENT``, ``None`` for
        ``ZERO_FILL`` (the slot holds 0.0) and ``OUT_OF_ALLOCATION`` (the slot
        keeps whatever it held).
    """

    kind: Access
    row: int
    col: int
    actual: tuple[int, int] | None


class Deferred:
    """An array made when first used: M and N from their seed, P from ``M @ N``.

    A :class:`Trace` built with a ``Deferred`` field checks its dtype and shape
    at once and calls ``compute()`` (once, under a lock) the first time the
    field is read; the reader of a file checks the result's checksum then.

    Parameters
    ----------
    dtype : numpy.dtype
    shape : tuple of int
    compute : callable
        ``compute() -> ndarray`` of that dtype and shape.
    """

    def __init__(self, dtype, shape, compute):
        self.dtype, self.shape, self._compute = np.dtype(dtype), tuple(shape), compute
        self._value: np.ndarray | None = None
        self._lock = threading.Lock()

    def value(self) -> np.ndarray:
        """The array (computed on the first call; read-only)."""
        with self._lock:
            if self._value is None:
                out = self._compute()
                if out.dtype != self.dtype or out.shape != self.shape:
                    raise TraceError(
                        f"a rebuilt array is {out.dtype} {out.shape}, not {self.dtype} {self.shape}"
                    )
                out.setflags(write=False)
                self._value, self._compute = out, None
            return self._value

    @property
    def ready(self) -> bool:
        """Whether the array has been made."""
        return self._value is not None


def check_meta(meta: Mapping[str, Any]) -> LaunchShape:
    """Check a trace's metadata, every field that vizmm reads; return its launch.

    The required keys (``kernel``, ``tile_width``, ``j``, ``k``, ``l``,
    ``backend``, ``n_detail``, ``aggregated``) must be there with their
    types, and describe a valid launch; every optional key that vizmm reads
    (``figure``, ``source``, ``seed``, ``inputs``, ``versions``, ``created``,
    ``device_name``, ``sm_count``, ``compute_capability``, ``elapsed_s``,
    ``drop_barrier``, ``simulated_blocks``, ...) must, when present, have
    the type and range the recorder writes (``_OPTIONAL_META``), so that
    :meth:`Trace.summary`, ``vizmm info`` and the views never meet a value
    they cannot show. Keys vizmm does not know are kept and never read.

    Parameters
    ----------
    meta : mapping
        The trace's metadata.

    Returns
    -------
    LaunchShape

    Raises
    ------
    TraceError
        Naming the missing or wrong key and what it must be.
    """
    for key, typ in _REQUIRED_META.items():
        if key not in meta:
            raise TraceError(f"trace metadata lacks {key!r}")
        if typ is int and (isinstance(meta[key], bool) or not isinstance(meta[key], int)):
            raise TraceError(f"trace metadata {key!r} must be an integer, got {_shown(meta[key])}")
        if typ is not int and not isinstance(meta[key], typ):
            raise TraceError(
                f"trace metadata {key!r} must be {typ.__name__}, got {_shown(meta[key])}"
            )
    launch = LaunchShape.of(meta, error=TraceError)
    if not 0 <= meta["n_detail"] <= launch.n_blocks:
        raise TraceError(
            f"trace metadata n_detail must be 0..{launch.n_blocks} (blocks in the grid), "
            f"got {meta['n_detail']}"
        )
    if meta["backend"] not in BACKENDS:
        raise TraceError(
            f"trace metadata 'backend' must be one of {', '.join(BACKENDS)}, "
            f"got {_shown(meta['backend'])}"
        )
    for key, (check, what) in _OPTIONAL_META.items():
        if key in meta and not check(meta[key], launch):
            raise TraceError(f"trace metadata {key!r} must be {what}, got {_shown(meta[key])}")
    return launch


#: Where a trace was recorded (meta ``backend``).
BACKENDS = ("simulator", "gpu")
#: The longest text of a metadata field (characters), ``source`` excepted.
MAX_META_TEXT = 1000
#: The longest kernel source kept in the metadata (characters).
MAX_META_SOURCE = 2**16


def _shown(value) -> str:
    """``repr(value)``, cut to a few words (a message never echoes a whole field)."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _is_int(v) -> bool:
    return isinstance(v, (int, np.integer)) and not isinstance(v, bool)


def _text(limit: int):
    return lambda v, launch: isinstance(v, str) and len(v) <= limit


def _int_in(lo: int, hi: int | None = None):
    return lambda v, launch: _is_int(v) and lo <= v and (hi is None or v <= hi)


def _seconds(v, launch) -> bool:
    if v is None:  # the writer keeps a non-finite float as null
        return True
    if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)):
        return False
    try:
        v = float(v)  # what ``describe`` formats
    except OverflowError:
        return False
    return math.isfinite(v) and v >= 0


def _versions(v, launch) -> bool:
    return (
        isinstance(v, Mapping)
        and len(v) <= 64
        and all(
            isinstance(a, str) and isinstance(b, str) and len(a) <= 100 and len(b) <= 100
            for a, b in v.items()
        )
    )


def _capability(v, launch) -> bool:
    return isinstance(v, (list, tuple)) and len(v) == 2 and all(_int_in(0, 1000)(x, 0) for x in v)


def _barriers(v, launch) -> bool:
    return (
        isinstance(v, (list, tuple))
        and all(_is_int(b) and b in (1, 2) for b in v)
        and len(set(v)) == len(v)
    )


def _blocks(v, launch) -> bool:
    if isinstance(v, str):
        return v == "all"
    if not isinstance(v, (list, tuple)) or len(v) > launch.n_blocks:
        return False
    gy, gx = launch.grid
    seen = set()
    for b in v:
        if not (isinstance(b, (list, tuple)) and len(b) == 2 and all(_is_int(x) for x in b)):
            return False
        by, bx = int(b[0]), int(b[1])
        if not (0 <= by < gy and 0 <= bx < gx) or (by, bx) in seen:
            return False
        seen.add((by, bx))
    return True


def _flag(v, launch) -> bool:
    return isinstance(v, bool)


#: What compiled (or simulated) a recording (meta ``target``'s ``name``).
TARGETS = ("numba-cuda-mlir", "numba-cuda", "numba-cuda-simulator", "vizmm-simulator")


def _target(v, launch) -> bool:
    return (
        isinstance(v, Mapping)
        and set(v) == {"name", "version"}
        and v["name"] in TARGETS
        and isinstance(v["version"], str)
        and 0 < len(v["version"]) <= 100
    )


#: The access log's event fields, in order: its schema's (:data:`.access_log.FIELDS`).
LOG_FIELDS = FIELDS
#: The most events a thread may log in a trace (a file's log is sized from this).
MAX_LOG_EVENTS = 1 << 24


def _access_log(v, launch) -> bool:
    """``{'threads', 'cap', 'fields', 'arrays'}`` (and ``'accumulator'``): the log's layout."""
    keys = {"threads", "cap", "fields", "arrays"}
    if not (isinstance(v, Mapping) and set(v) in (keys, keys | {"accumulator"})):
        return False
    arrays = v["arrays"]
    acc = v.get("accumulator")
    return (
        (acc is None or _text(100)(acc, launch))
        and _int_in(1, 1024)(v["threads"], launch)
        and _int_in(0, MAX_LOG_EVENTS)(v["cap"], launch)
        and isinstance(v["fields"], (list, tuple))
        and tuple(v["fields"]) == LOG_FIELDS
        and isinstance(arrays, (list, tuple))
        and len(arrays) <= 64
        and all(
            isinstance(a, Mapping)
            and set(a) == {"name", "space"}
            and _text(100)(a["name"], launch)
            and a["space"] in ("global", "shared")
            for a in arrays
        )
    )


# Optional metadata vizmm reads: key -> (check(value, launch), what it must be).
_OPTIONAL_META = {
    "figure": (_text(MAX_META_TEXT), f"text of at most {MAX_META_TEXT} characters"),
    # the name of a kernel of the user's own (vizmm.check, record(kernel=...)); absent: a
    # book kernel (every file written before the key was)
    "user_kernel": (
        lambda v, launch: isinstance(v, str) and 0 < len(v) <= 100,
        "the kernel's name (text of 1 to 100 characters)",
    ),
    "source": (_text(MAX_META_SOURCE), f"text of at most {MAX_META_SOURCE} characters"),
    # where "source" starts in its file: a logged line n is the file's n + this - 1
    "source_first_line": (_int_in(1, 10**7), "an integer from 1 to 10,000,000"),
    "seed": (_int_in(0), "an integer >= 0"),
    "inputs": (lambda v, launch: v in ("seeded", "given"), "'seeded' or 'given'"),
    "tile_width_from": (_text(MAX_META_TEXT), f"text of at most {MAX_META_TEXT} characters"),
    "versions": (_versions, "a mapping of at most 64 names to version strings"),
    "target": (
        _target,
        f"{{'name': one of {', '.join(TARGETS)}, 'version': a version string}}",
    ),
    "created": (_text(100), "a date (ISO 8601 text)"),
    "device_name": (_text(MAX_META_TEXT), f"text of at most {MAX_META_TEXT} characters"),
    "sm_count": (_int_in(1, 2**16), f"an integer from 1 to {2**16} (SMs)"),
    "compute_capability": (_capability, "a [major, minor] pair of integers"),
    "elapsed_s": (_seconds, "a finite number of seconds >= 0"),
    "spread_stored": (_flag, "true or false"),
    "reads_recorded": (_flag, "true or false"),
    "drop_barrier": (_barriers, "a list of the barriers removed, 1 and/or 2, each once"),
    "sim_schedule": (_text(MAX_META_TEXT), f"text of at most {MAX_META_TEXT} characters"),
    # vizmm's simulator: barriers that opened with some threads of a block not arrived
    "barrier_notes": (
        lambda v, launch: (
            isinstance(v, (list, tuple))
            and len(v) <= 20
            and all(_text(MAX_META_TEXT)(x, launch) for x in v)
        ),
        f"a list of at most 20 lines of at most {MAX_META_TEXT} characters",
    ),
    "simulated_blocks": (
        _blocks,
        "'all' or a list of distinct [by, bx] blocks inside the grid",
    ),
    "access_log": (
        _access_log,
        "{'threads': 1..1024, 'cap': events per thread, 'fields': the log's field names, "
        "'arrays': [{'name', 'space': 'global' or 'shared'}, ...]}",
    ),
}


def array_specs(meta: Mapping[str, Any]) -> dict[str, tuple[np.dtype, tuple[int, ...]]]:
    """Every array's (dtype, shape) implied by a trace's metadata (from sizes alone).

    Parameters
    ----------
    meta : mapping
        A trace's metadata (kernel, sizes, TILE_WIDTH, recording mode).
    """
    return _array_specs(meta)


# name -> (dtype, shape builder given the trace's dims)
def _array_specs(meta: Mapping[str, Any]) -> dict[str, tuple[np.dtype, tuple[int, ...]]]:
    launch = LaunchShape.of(meta, error=TraceError)
    j, k, l, T = launch.j, launch.k, launch.l, launch.tile_width
    (gy, gx), nph = launch.grid, launch.n_phases
    nd = meta["n_detail"]
    nsp = gy if meta.get("spread_stored", meta["aggregated"]) else 0
    nagg = 1 if meta["aggregated"] else 0
    reads = (nd, nph, T, T, T, 2) if meta.get("reads_recorded") else (0, 0, 0, 0, 0, 2)
    log = meta.get("access_log")
    nt, cap, nl = (log["threads"], log["cap"], nd) if isinstance(log, Mapping) else (0, 0, 0)
    return {
        "M": (np.dtype(np.float32), (j, k)),
        "N": (np.dtype(np.float32), (k, l)),
        "P": (np.dtype(np.float32), (j, l)),
        "detail_blocks": (np.dtype(np.int32), (nd, 2)),
        "loads": (np.dtype(np.int32), (nd, nph, T, T, 6)),
        "pvalue": (np.dtype(np.float32), (nd, nph, T, T)),
        "barrier_tick": (np.dtype(np.int32), (nd, nph, 2, 2, T, T)),
        "barrier_clock": (np.dtype(np.int64), (nd, nph, 2, 2, T, T)),
        "p_write": (np.dtype(np.int8), (nd, T, T)),
        "block_info": (np.dtype(np.int64), (gy, gx, 6)),
        "m_reads": (np.dtype(np.int32), (j, k)),
        "n_reads": (np.dtype(np.int32), (k, l)),
        "barrier_spread": (np.dtype(np.int32), (nsp, gx if nsp else 0, nph, 2, 2)),
        "zero_fills": (np.dtype(np.int32), (gy, gx, nph, 2)),
        "wait_hist": (np.dtype(np.int32), (nph if nagg else 0, 2, WAIT_BINS)),
        "block_wait": (np.dtype(np.int32), (gy * nagg, gx * nagg, 2, 3)),
        "shared_reads": (np.dtype(np.int32), reads),
        "read_values": (np.dtype(np.float32), reads),
        "log_events": (np.dtype(np.int32), (nl, nt, cap, len(LOG_FIELDS))),
        "log_values": (np.dtype(np.float64), (nl, nt, cap, 2)),
        "log_counts": (np.dtype(np.int32), (nl, nt)),
    }


# Arrays a trace file may lack (files written before they existed): empty then.
OPTIONAL_ARRAYS = ("shared_reads", "read_values", "log_events", "log_values", "log_counts")
#: The access log's arrays (recordings made through the instrumenter; empty otherwise).
LOG_ARRAYS = ("log_events", "log_values", "log_counts")


def _check_loads(loads: np.ndarray, launch: LaunchShape) -> None:
    """Refuse load records whose (row, col) the kernels cannot have written.

    Every record (``NOT_RECORDED`` ones too: the recorder leaves them 0, 0)
    names an element of the launch's tiles: ``0 <= row, col`` below the
    padded sizes. Its kind agrees with where that element lies (the
    kernels' ``classify_unchecked`` and boundary check): ``LOADED`` inside
    the matrix, ``ZERO_FILL`` outside it, ``WRONG_ELEMENT`` outside it with
    ``row * ncols + col`` inside the allocation, ``OUT_OF_ALLOCATION`` past
    the allocation. So a replay can index M and N with every record.
    """
    if not loads.size:
        return
    j, k, l = launch.shape
    pj, pk, pl = launch.padded
    for what, base, nrows, ncols, prow, pcol in (("M", 0, j, k, pj, pk), ("N", 3, k, l, pk, pl)):
        kind = loads[..., base]
        row = loads[..., base + 1].astype(np.int64)
        col = loads[..., base + 2].astype(np.int64)
        if np.min(row) < 0 or np.min(col) < 0 or np.max(row) >= prow or np.max(col) >= pcol:
            raise TraceError(
                f"loads holds an {what} element outside the {prow} x {pcol} tiles of the launch "
                f"({launch.label()})"
            )
        inside = (row < nrows) & (col < ncols)
        in_alloc = row * ncols + col < nrows * ncols
        bad = (
            ((kind == Access.LOADED) & ~inside)
            | ((kind == Access.ZERO_FILL) & inside)
            | ((kind == Access.WRONG_ELEMENT) & (inside | ~in_alloc))
            | ((kind == Access.OUT_OF_ALLOCATION) & in_alloc)
        )
        if bad.any():
            at = tuple(int(i) for i in np.argwhere(bad)[0])
            raise TraceError(
                f"loads records {what}[{int(row[at])}][{int(col[at])}] as "
                f"{Access(int(kind[at])).name}, which the {nrows} x {ncols} {what} does not "
                f"allow (detailed block {at[0]}, phase {at[1]}, thread {at[2:]})"
            )


ARRAY_NAMES = tuple(
    _array_specs(
        {
            "j": 1,
            "k": 1,
            "l": 1,
            "tile_width": 1,
            "kernel": "tiled",
            "n_detail": 0,
            "aggregated": False,
        }
    )
)

_REQUIRED_META = {
    "kernel": str,
    "tile_width": int,
    "j": int,
    "k": int,
    "l": int,
    "backend": str,
    "n_detail": int,
    "aggregated": bool,
}

# Fields of the last axis of ``block_info`` (same order as the kernels' codes).
BLOCK_FIELDS = ("smid", "t0_ns", "t1_ns", "clock0", "clock1", "seq")


def _check_spec(name: str, arr, dtype, shape) -> None:
    """Refuse an array (or a deferred one) whose dtype or shape is not the recording's."""
    if arr.dtype != dtype or arr.shape != shape:
        raise TraceError(
            f"{name} must be {dtype} of shape {shape}, got {arr.dtype} of shape {arr.shape}"
        )


@dataclasses.dataclass(frozen=True, eq=False)
class Trace:
    """What one launch of an instrumented kernel recorded (immutable, validated).

    Shapes use ``j x k`` for M, ``k x l`` for N and ``j x l`` for P (``Width``
    for all three in the square kernels), ``T`` = TILE_WIDTH, the grid
    ``gy = ceil(j/T)`` by ``gx = ceil(l/T)`` blocks, ``nph = ceil(k/T)`` phases
    (0 for the naive kernel) and ``nd`` blocks recorded per thread.

    Attributes
    ----------
    meta : dict
        ``kernel`` ('naive', 'tiled' Fig. 5.9, 'boundary' Fig. 5.13,
        'general'), ``tile_width``, ``j``, ``k``, ``l``, ``backend``
        ('simulator' or 'gpu'), ``n_detail``, ``aggregated`` (bool), and
        optional ``device_name``, ``sm_count``, ``versions``, ``created``
        (ISO 8601, UTC), ``seed``, ``simulated_blocks``, ``elapsed_s``;
        every field vizmm reads is checked when the trace is made
        (:func:`check_meta`).
    M, N, P : ndarray of float32, (j, k), (k, l), (j, l)
        The inputs and the result P as the kernel stored it. Where the kernel
        stored no P element (a skipped or out-of-allocation store) P holds NaN.
    detail_blocks : ndarray of int32, (nd, 2)
        ``(by, bx)`` of each block recorded per thread, in slot order.
    loads : ndarray of int32, (nd, nph, T, T, 6)
        Per slot, phase ``ph``, ``ty``, ``tx``: M's (kind, row, col) then N's
        (kind, row, col); kinds are :class:`Access` codes (0 = not recorded).
    pvalue : ndarray of float32, (nd, nph, T, T)
        The thread's Pvalue after each phase; NaN where not recorded.
    barrier_tick : ndarray of int32, (nd, nph, 2, 2, T, T)
        ``[slot, ph, barrier, when, ty, tx]``: barrier 0 is the one after the
        loads (Fig. 5.9 line 21), 1 the one after the k loop (line 26); when
        0 = arrival, 1 = release. Value: the thread's ticket from the block's
        logical clock (an atomic counter: the order in which threads passed);
        -1 where not recorded.
    barrier_clock : ndarray of int64, (nd, nph, 2, 2, T, T)
        The same events in ``%clock64`` cycles of the block's SM; -1 when the
        backend has no clock (the simulator).
    p_write : ndarray of int8, (nd, T, T)
        :class:`PWrite` code of each thread's P store.
    block_info : ndarray of int64, (gy, gx, 6)
        Per block: SM id, start and end ``%globaltimer`` (ns), start and end
        ``%clock64`` (cycles), and the order in which blocks finished (0
        first). -1 where not read (the simulator has no SM, timer or clock).
    m_reads, n_reads : ndarray of int32, (j, k), (k, l)
        How many times each M / N element was read from global memory by the
        launch (wrong-element reads count for the element really read). A
        simulator recording of a window runs only the window's blocks: the
        counts, P and :meth:`summary` then cover those blocks only (meta
        ``simulated_blocks`` lists them; ``"all"`` otherwise).
    barrier_spread : ndarray of int32, (gy, gx, nph, 2, 2) or (0, 0, nph, 2, 2)
        Aggregated mode only (empty otherwise): per block, phase and barrier
        (0 after the loads, 1 after the k loop), ``[..., 0]`` the arrival
        spread of the block's warps (last minus first warp arrival: how long
        the first warp waited) and ``[..., 1]`` the release lag (last warp
        release minus last warp arrival), in ``%clock64`` cycles; -1 where
        not read (the simulator has no clock).
        Stored only when ``gy * gx * nph <= MAX_STORED_SPREAD`` (meta
        ``spread_stored``); larger traces keep ``wait_hist`` and ``block_wait``.
    wait_hist : ndarray of int32, (nph, 2, WAIT_BINS) or empty
        Aggregated mode: per phase and barrier, how many blocks had an arrival
        spread in each log2 bin of cycles (bin b: ``2**(b-1) <= w < 2**b``,
        bin 0: ``w == 0``); blocks without clocks are not counted.
    block_wait : ndarray of int32, (gy, gx, 2, 3) or empty
        Aggregated mode: per block and barrier, the largest arrival spread
        over the phases (cycles), the mean (cycles, rounded) and the phase of
        the largest; -1 without clocks. The slowest blocks are found here.
    zero_fills : ndarray of int32, (gy, gx, nph, 2)
        Per block and phase, how many Mds (``[..., 0]``) and Nds
        (``[..., 1]``) slots were zero-filled (Fig. 5.13, lines 21 and 24).
    shared_reads : ndarray of int32, (nd, nph, T, T, T, 2), or empty (0, 0, 0, 0, 0, 2)
        Barrier lab (meta ``reads_recorded``): ``[slot, ph, ty, tx, k, 0]``
        is the tag the thread found beside ``Mds[ty][k]`` in the k loop,
        ``[..., 1]`` beside ``Nds[k][tx]``: the linear index ``row * ncols +
        col`` of the M / N element the slot held, -1 for the zero-fill's 0.0,
        -2 for a slot no thread of the block had written yet, -3 where not
        recorded. Meta ``drop_barrier`` lists the barriers removed (1 after
        the loads, 2 after the k loop).
    read_values : ndarray of float32, same shape as ``shared_reads``
        The values those reads returned (what the thread multiplied).
    log_events : ndarray of int32, (nd, threads, cap, 14), or empty
        The instrumenter's access log (meta ``access_log`` says its layout;
        empty in recordings made otherwise): per detailed block, thread
        (``ty * T + tx``) and event, the fields :data:`LOG_FIELDS` (what the
        access was, which array and element, the code's (row, col), the
        shared slot's tag and the global element it traces to, the barrier
        epoch, the barrier ticket, the source line); see
        :mod:`vizmm.record.instrument_device`.
    log_values : ndarray of float64, (nd, threads, cap, 2), or empty
        Per event, the value loaded or stored and the accumulator (Pvalue).
    log_counts : ndarray of int32, (nd, threads), or empty
        Events each thread logged.

    launch : LaunchShape
        The launch (kernel, sizes, TILE_WIDTH, grid, phases), made from
        ``meta`` and validated once; read-only.

    Raises
    ------
    TraceError
        When any array's dtype or shape disagrees with the metadata, or a
        code or index is out of range.
    """

    meta: Mapping[str, Any]
    M: np.ndarray
    N: np.ndarray
    P: np.ndarray
    detail_blocks: np.ndarray
    loads: np.ndarray
    pvalue: np.ndarray
    barrier_tick: np.ndarray
    barrier_clock: np.ndarray
    p_write: np.ndarray
    block_info: np.ndarray
    m_reads: np.ndarray
    n_reads: np.ndarray
    barrier_spread: np.ndarray
    zero_fills: np.ndarray
    wait_hist: np.ndarray
    block_wait: np.ndarray
    # None when constructed means "not recorded": __post_init__ puts an empty array
    # there, so a made Trace always holds arrays.
    shared_reads: np.ndarray = None  # type: ignore[assignment]
    read_values: np.ndarray = None  # type: ignore[assignment]
    log_events: np.ndarray = None  # type: ignore[assignment]
    log_values: np.ndarray = None  # type: ignore[assignment]
    log_counts: np.ndarray = None  # type: ignore[assignment]

    def __post_init__(self):
        meta = dict(self.meta)
        self._fill_not_recorded(meta)
        object.__setattr__(self, "launch", check_meta(meta))
        object.__setattr__(self, "meta", _FrozenDict(meta))
        deferred: dict[str, Deferred] = {}
        object.__setattr__(self, "_deferred", deferred)
        for name, (dtype, shape) in _array_specs(meta).items():
            arr = self.__dict__[name]
            if isinstance(arr, Deferred) and name in ("M", "N", "P"):
                _check_spec(name, arr, dtype, shape)
                deferred[name] = arr
                del self.__dict__[name]  # made when first read (__getattr__)
                continue
            if not isinstance(arr, np.ndarray):
                raise TraceError(f"{name} must be a NumPy array, got {type(arr).__name__}")
            _check_spec(name, arr, dtype, shape)
            arr = np.ascontiguousarray(arr).copy() if arr.flags.writeable else arr
            arr.setflags(write=False)
            object.__setattr__(self, name, arr)
        self._check_blocks_and_codes()
        db = self.detail_blocks
        object.__setattr__(
            self, "_slot", {(int(b[0]), int(b[1])): i for i, b in enumerate(db.tolist())}
        )

    def _fill_not_recorded(self, meta: dict) -> None:
        """An empty array for each optional array given as None that was not recorded."""
        for name in OPTIONAL_ARRAYS:
            if name in LOG_ARRAYS:  # empty unless the instrumenter kept its log
                if getattr(self, name) is None and not isinstance(meta.get("access_log"), Mapping):
                    dtype, shape = _array_specs(meta)[name]
                    object.__setattr__(self, name, np.zeros(shape, dtype))
                continue
            if getattr(self, name) is None and not meta.get("reads_recorded"):
                empty = np.int32 if name == "shared_reads" else np.float32
                object.__setattr__(self, name, np.zeros((0, 0, 0, 0, 0, 2), empty))

    def _check_blocks_and_codes(self) -> None:
        """Refuse detail blocks outside the grid or listed twice, and codes out of range."""
        gy, gx = self.grid
        db = self.detail_blocks
        if len(db) and (db.min() < 0 or (db[:, 0] >= gy).any() or (db[:, 1] >= gx).any()):
            raise TraceError(f"detail_blocks holds a block outside the {gy} x {gx} grid")
        if len({tuple(b) for b in db.tolist()}) != len(db):
            raise TraceError("detail_blocks lists a block twice")
        kinds = self.loads[..., [0, 3]]
        if kinds.size and (kinds.min() < 0 or kinds.max() > max(Access)):
            raise TraceError("loads holds an unknown access code")
        if self.p_write.size and (self.p_write.min() < 0 or self.p_write.max() > max(PWrite)):
            raise TraceError("p_write holds an unknown code")
        _check_loads(self.loads, self.launch)
        if self.shared_reads.size and self.shared_reads.min() < -3:
            raise TraceError("shared_reads holds a tag below -3 (no such sentinel)")
        if self.log_counts.size and (
            self.log_counts.min() < 0 or self.log_counts.max() > self.log_events.shape[2]
        ):
            raise TraceError("log_counts holds a count outside 0..cap (events per thread)")

    def __getattr__(self, name: str):
        # Only called for attributes not found: the deferred M, N, P.
        deferred = self.__dict__.get("_deferred")
        if deferred is not None and name in deferred:
            arr = deferred[name].value()
            self.__dict__[name] = arr
            return arr
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def is_made(self, name: str) -> bool:
        """Whether the array ``name`` is in memory.

        False only for a deferred M, N or P (a trace read from a file makes
        M and N from their seed, and P as ``M @ N``, when first read).

        Parameters
        ----------
        name : str
            One of :data:`ARRAY_NAMES`.
        """
        return name in self.__dict__ or name not in self._deferred

    @property
    def nbytes(self) -> int:
        """Bytes of the trace's arrays; a deferred M, N or P counted as it will be, made."""
        total = 0
        for name in ARRAY_NAMES:
            a = self.__dict__.get(name)
            if a is None:
                d = self._deferred[name]
                total += d.dtype.itemsize * math.prod(d.shape)
            else:
                total += a.nbytes
        return total

    # ----------------------------------------------------------------- shape
    @property
    def kernel(self) -> str:
        """Kernel name: 'naive', 'tiled' (Fig. 5.9), 'boundary' (Fig. 5.13) or 'general'."""
        return self.meta["kernel"]

    @property
    def user_kernel(self) -> str | None:
        """The name of a kernel of the user's own, or None for a book kernel.

        ``meta['user_kernel']``, written by the instrumenter's recording of a
        kernel given to :func:`vizmm.check` or ``vizmm.record(kernel=...)``;
        a trace without the key (a book kernel, or a file written before the
        key was) is a book kernel's.
        """
        name = self.meta.get("user_kernel")
        return name if isinstance(name, str) and name else None

    @property
    def tile_width(self) -> int:
        """TILE_WIDTH (elements); blocks are TILE_WIDTH x TILE_WIDTH threads."""
        return self.meta["tile_width"]

    @property
    def shape(self) -> tuple[int, int, int]:
        """``(j, k, l)``: M is j x k, N is k x l, P is j x l (elements)."""
        return self.meta["j"], self.meta["k"], self.meta["l"]

    @property
    def grid(self) -> tuple[int, int]:
        """``(gy, gx)``: blocks along P's rows (blockIdx.y) and columns (blockIdx.x)."""
        return self.launch.grid

    @property
    def n_phases(self) -> int:
        """Phases per block, ``ceil(k / TILE_WIDTH)`` (0 for the naive kernel)."""
        return self.launch.n_phases

    @property
    def backend(self) -> str:
        """'simulator' or 'gpu'."""
        return self.meta["backend"]

    @property
    def has_clocks(self) -> bool:
        """True when ``%clock64`` / ``%globaltimer`` / ``%smid`` were read (GPU runs)."""
        return bool((self.block_info[..., 0] >= 0).any())

    @property
    def is_detailed(self) -> bool:
        """True when every block was recorded per thread."""
        gy, gx = self.grid
        return len(self.detail_blocks) == gy * gx

    def has_block(self, block: tuple[int, int]) -> bool:
        """True when ``block = (by, bx)`` was recorded per thread.

        Parameters
        ----------
        block : tuple of (int, int)
            (by, bx), blockIdx.y and blockIdx.x.
        """
        return tuple(block) in self._slot

    def slot(self, block: tuple[int, int]) -> int:
        """Index of ``block = (by, bx)`` in the per-thread arrays.

        Parameters
        ----------
        block : tuple of (int, int)
            (by, bx) of a block recorded per thread.

        Raises
        ------
        BlockError (a KeyError)
            When ``block`` is not a (by, bx) pair of integers, is outside the
            grid or was not recorded in detail.
        """
        gy, gx = self.grid
        try:
            by, bx = block
            key = (int(by), int(bx))
            if key != (by, bx):
                raise ValueError
        except (TypeError, ValueError):
            raise BlockError(
                f"block must be a (by, bx) pair of integers (blockIdx.y, blockIdx.x), got {block!r}"
            ) from None
        if key not in self._slot:
            raise BlockError(not_recorded_message(self, key))
        return self._slot[key]

    def _check_phase(self, phase: int) -> int:
        if not 0 <= phase < self.n_phases:
            raise IndexError(f"phase must be 0..{self.n_phases - 1}, got {phase}")
        return phase

    # --------------------------------------------------------------- records
    def _actual(self, kind: int, row: int, col: int, ncols: int) -> tuple[int, int] | None:
        if kind == Access.LOADED:
            return (row, col)
        if kind == Access.WRONG_ELEMENT:
            return divmod(row * ncols + col, ncols)
        return None

    def load_records(self, block: tuple[int, int], phase: int) -> dict:
        """Every thread's M and N load of one block and phase, with its kind.

        Parameters
        ----------
        block : tuple of (int, int)
            (by, bx) of a block recorded per thread.
        phase : int
            The phase ``ph``, 0 to ``n_phases - 1``.

        Returns
        -------
        dict
            ``{(ty, tx): (m, n)}`` with ``m`` and ``n`` :class:`LoadRecord`.
        """
        s, ph = self.slot(block), self._check_phase(phase)
        _, k, l = self.shape
        out = {}
        rec = self.loads[s, ph]
        for ty in range(self.tile_width):
            for tx in range(self.tile_width):
                mk, mr, mc, nk, nr, nc = (int(v) for v in rec[ty, tx])
                out[(ty, tx)] = (
                    LoadRecord(Access(mk), mr, mc, self._actual(mk, mr, mc, k)),
                    LoadRecord(Access(nk), nr, nc, self._actual(nk, nr, nc, l)),
                )
        return out

    def tile_loads(self, block: tuple[int, int], phase: int) -> dict:
        """Which element each thread put into ``Mds[ty][tx]`` and ``Nds[ty][tx]``.

        The book's Fig. 5.8 (columns 2-3 and 5-6) for one block and phase.

        Parameters
        ----------
        block : (by, bx)
        phase : int
            ``ph``, 0 to ``n_phases - 1``.

        Returns
        -------
        dict
            ``{(ty, tx): (m, n)}`` for every thread of the block; ``m`` and
            ``n`` are the ``(row, col)`` of the element that went into the
            slot, or ``None`` where the thread zero-filled it (or, for the
            unchecked kernel, skipped an out-of-allocation load: see
            :meth:`load_records` for the kind). A wrong-element load gives the
            element really read (M_{0,3} of a 3 x 3 M gives ``(1, 0)``).

        Raises
        ------
        KeyError
            When the block was not recorded per thread.
        IndexError
            When the phase is out of range.
        """
        return {t: (m.actual, n.actual) for t, (m, n) in self.load_records(block, phase).items()}

    def thread_pvalues(self, block: tuple[int, int], thread: tuple[int, int]) -> np.ndarray:
        """Pvalue of thread ``(ty, tx)`` of ``block`` after each phase (float32, (nph,)).

        Parameters
        ----------
        block : tuple of (int, int)
            (by, bx) of a block recorded per thread.
        thread : tuple of (int, int)
            (ty, tx), threadIdx.y and threadIdx.x.
        """
        ty, tx = thread
        return self.pvalue[self.slot(block), :, ty, tx].copy()

    def global_loads(self) -> int:
        """Global-memory reads of M and N elements by the launch (elements).

        For a simulator window (meta ``simulated_blocks`` a list) only the
        simulated blocks ran, so only their reads are counted.
        """
        return int(self.m_reads.sum()) + int(self.n_reads.sum())

    def computed_elements(self) -> int:
        """P elements the run computed: ``j * l``, or those of the simulated window's blocks.

        The simulator runs only the window of an aggregated recording; its
        read counts then cover those blocks alone, and so must what they are
        compared with.
        """
        j, _, l = self.shape
        blocks = self.meta.get("simulated_blocks")
        if not isinstance(blocks, list):
            return j * l
        T = self.tile_width
        b = np.asarray(blocks, np.int64).reshape(-1, 2)
        return int((np.clip(j - b[:, 0] * T, 0, T) * np.clip(l - b[:, 1] * T, 0, T)).sum())

    def naive_loads(self) -> int:
        """Reads the naive kernel (Fig. 3.11) makes for the same P elements: ``2 k`` each.

        ``2 * j * k * l`` for a whole launch; a simulated window counts its blocks only.
        """
        return 2 * self.shape[1] * self.computed_elements()

    def cgma(self) -> float:
        """Compute-to-global-memory-access ratio (Section 5.1), in FLOPs per element read.

        In FLOP per element read (1.0 for the naive kernel); :meth:`cgma_op_per_byte`
        gives the book's OP/B. A simulated window counts its own blocks' FLOPs.
        """
        return 2.0 * self.shape[1] * self.computed_elements() / max(1, self.global_loads())

    def cgma_op_per_byte(self) -> float:
        """CGMA in the book's unit, FLOP per byte read (OP/B): 0.25 naive, 4 with TILE_WIDTH 16."""
        return self.cgma() / 4.0

    def summary(self) -> str:
        """A few lines saying what the trace holds (used by ``vizmm info``)."""
        return describe(
            self.meta, self.launch, len(self.detail_blocks), self.global_loads(), self.has_clocks
        )

    # ------------------------------------------------------------------ file
    def arrays(self) -> dict[str, np.ndarray]:
        """All arrays of the trace by name (read-only views)."""
        return {name: getattr(self, name) for name in ARRAY_NAMES}

    def to_bytes(self) -> bytes:
        """The trace file's bytes (see :mod:`vizmm.trace.fileformat`)."""
        from .fileformat import to_bytes

        return to_bytes(self)

    def save(self, path: str | os.PathLike) -> str:
        """Write the trace to ``path`` atomically (temporary file, then rename).

        Returns the path written. Nothing is left at ``path`` if writing fails.

        Parameters
        ----------
        path : str or os.PathLike
            Where to write the ``.vizmm`` file.
        """
        from .fileformat import atomic_write

        return atomic_write(path, self.to_bytes())


def naive_reads(launch: LaunchShape, blocks=None) -> int:
    """Global reads of the naive kernel (Fig. 3.11) for the P elements of ``blocks`` (elements).

    Parameters
    ----------
    launch : LaunchShape
    blocks : sequence of (by, bx), or None / "all"
        The blocks whose P elements count (those of a simulated window);
        every block by default.

    Returns
    -------
    int
        ``2 * k`` reads per P element inside P (blocks at the edge hold fewer
        than TILE_WIDTH^2): ``2 * j * k * l`` for the whole grid.
    """
    j, k, l, T = launch.j, launch.k, launch.l, launch.tile_width
    if not isinstance(blocks, (list, tuple)):
        return 2 * j * k * l
    b = np.asarray(blocks, dtype=np.int64).reshape(-1, 2)
    rows = np.clip(j - b[:, 0] * T, 0, T)
    cols = np.clip(l - b[:, 1] * T, 0, T)
    return int(2 * k * int((rows * cols).sum()))


def describe(meta, launch: LaunchShape, n_detail: int, global_loads: int, has_clocks: bool) -> str:
    """The lines of ``vizmm info`` / :meth:`Trace.summary` from the metadata and two totals.

    Parameters
    ----------
    meta : mapping
        The trace's metadata.
    launch : LaunchShape
    n_detail : int
        Blocks recorded per thread.
    global_loads : int
        Global reads of M and N recorded (elements).
    has_clocks : bool
        Whether the trace holds GPU clocks.
    """
    j, k, l = launch.shape
    gy, gx = launch.grid
    T = launch.tile_width
    m = meta
    naive = naive_reads(launch, m.get("simulated_blocks"))
    window = isinstance(m.get("simulated_blocks"), list)
    lines = [
        f"kernel      {launch.kernel} (TILE_WIDTH {T})",
        f"shapes      M {j}x{k} . N {k}x{l} -> P {j}x{l}",
        f"grid        {gy} x {gx} blocks of {T} x {T} threads, {launch.n_phases} phases",
        f"backend     {m['backend']}"
        + (f" on {m['device_name']}" if m.get("device_name") else "")
        + (f" ({m['sm_count']} SMs)" if m.get("sm_count") else ""),
        *([f"compiler    {m['target']['name']} {m['target']['version']}"] if "target" in m else []),
        f"detail      {n_detail} of {gy * gx} blocks recorded per thread"
        + (" (aggregated mode)" if m["aggregated"] else ""),
        *(
            [
                f"simulated   only the {len(m['simulated_blocks'])} detailed blocks: counts, P "
                "and CGMA cover those blocks only"
            ]
            if window
            else []
        ),
        f"clocks      {'yes' if has_clocks else 'no (simulator)'}",
        f"loads       {global_loads} global reads of M and N "
        f"(naive kernel{' for the same blocks' if window else ''}: {naive}, "
        f"{naive / max(1, global_loads):.1f}x fewer), "
        f"CGMA {naive / max(1, global_loads) / 4:.2f} OP/B "
        f"({naive / max(1, global_loads):.2f} FLOP per load)",
    ]
    if m.get("created"):
        lines.append(f"created     {m['created']}")
    if m.get("elapsed_s") is not None:
        lines.append(f"recorded in {m['elapsed_s']:.2f} s")
    if m.get("versions"):
        lines.append("versions    " + ", ".join(f"{a} {b}" for a, b in m["versions"].items()))
    return "\n".join(lines)


def not_recorded_message(trace: Trace, block) -> str:
    """Why ``block = (by, bx)`` has no per-thread replay, in words; ``''`` when it has one.

    The one wording of "outside the grid" and "not recorded per thread"
    (every layer raises or shows this text).

    Parameters
    ----------
    trace : Trace
        Any trace.
    block : tuple of (int, int)
        (by, bx), anything a person or a URL gave.
    """
    by, bx = int(block[0]), int(block[1])
    gy, gx = trace.grid
    if not (0 <= by < gy and 0 <= bx < gx):
        return f"block ({by}, {bx}) is outside the {gy} x {gx} grid of blocks"
    if trace.has_block((by, bx)):
        return ""
    return (
        f"block ({by}, {bx}) was not recorded per thread; detailed blocks: "
        f"{format_blocks(trace.detail_blocks.tolist())}"
    )


class _FrozenDict(dict):
    """A dict that refuses changes (the trace's metadata)."""

    def _refuse(self, *args, **kwargs):
        raise TypeError("trace metadata is read-only")

    __setitem__ = __delitem__ = clear = pop = popitem = setdefault = update = _refuse
