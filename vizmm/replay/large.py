"""Large matrices: what a whole launch did, from a trace's per-block records (NumPy only).

The book's argument for tiling (PMPP 4th ed., Sections 5.3-5.4) is about large
matrices: a 4096 x 4096 product runs 16,384 blocks of 32 x 32 threads, and
tiling cuts the global-memory reads of M and N TILE_WIDTH-fold. Per-thread
records of such a launch would take hundreds of gigabytes, so vizmm records
large launches in *aggregated mode* (``vizmm.record(..., window=[...])``):
every block keeps its SM, its start and end time, how many times it read
each element of M and N, its zero-fills and its barrier waits; only the
window's blocks are recorded per thread.

This module turns those per-block arrays into the models of the large views,
as plain NumPy arrays in the units of the recording:

* :func:`timeline`: when each block ran, in ``%globaltimer`` nanoseconds since
  the first block started (or, for the simulator, which has no clock, in the
  order blocks completed), and :meth:`Timeline.state_at` which blocks are done,
  running or still waiting at any time;
* :func:`gantt`: one row per SM, each block a bar from its start to its end,
  the blocks resident on one SM at once stacked in lanes;
* :func:`waves`: how the blocks fill the GPU in waves of ``SMs x resident
  blocks per SM``;
* :func:`read_counts`: heatmaps of the global reads of every element of M and
  N, measured and for the naive kernel (Fig. 3.11), at tile granularity for
  any size, and the measured reduction factor;
* :func:`wait_distribution` and :func:`slowest_blocks`: per phase and barrier,
  how long the first warp of a block waited at ``__syncthreads()`` for the
  last one (``%clock64`` cycles).

No colours, no Bokeh, no numba: the renderers in :mod:`vizmm.render` draw
these models (:mod:`vizmm.render.large_bokeh`).
"""

from __future__ import annotations

import dataclasses
import enum

import numpy as np

from ..trace import (
    BLOCK_FIELDS,
    WAIT_BINS,
    Trace,
    ceil_div,
    format_blocks,
    not_recorded_message,
)
from ..trace.derived import per_trace

__all__ = [
    "BlockState",
    "BARRIERS",
    "Timeline",
    "Gantt",
    "Waves",
    "ReadMap",
    "ReadCounts",
    "WaitDistribution",
    "SlowBlocks",
    "LargeModel",
    "timeline",
    "gantt",
    "waves",
    "read_counts",
    "naive_read_maps",
    "wait_distribution",
    "wait_bin_edges",
    "wait_bin_label",
    "slowest_blocks",
    "block_waits",
    "simulated_mask",
    "simulated_blocks",
    "format_blocks",
    "not_recorded_message",
    "describe",
    "model",
    "MAX_CELLS",
]

#: Largest side of a read-count heatmap (cells); larger matrices are averaged
#: over several whole tiles per cell.
MAX_CELLS = 256

#: The two barriers of Fig. 5.9, by the index the trace uses (0 and 1).
BARRIERS = ("barrier 1 (after the loads, line 21)", "barrier 2 (after the k loop, line 26)")

_SMID, _T0, _T1, _CLOCK0, _CLOCK1, _SEQ = (
    BLOCK_FIELDS.index(f) for f in ("smid", "t0_ns", "t1_ns", "clock0", "clock1", "seq")
)


class BlockState(enum.IntEnum):
    """What a block is doing at one moment of the launch (codes of :meth:`Timeline.state_at`)."""

    WAITING = 0  #: not started yet (waiting for a free SM)
    RUNNING = 1  #: resident on an SM
    DONE = 2  #: finished
    NO_DATA = 3  #: nothing recorded: a block the simulator did not run (windowed trace)


# ------------------------------------------------------------------ blocks
def simulated_mask(trace: Trace) -> np.ndarray:
    """Which blocks ran, so that their per-block arrays hold data.

    A GPU launch runs every block. The simulator runs every block too unless
    the recording named a window (meta ``simulated_blocks``): then only the
    window's blocks ran, and every per-block array (times, read counts,
    zero-fills) covers those blocks only.

    Parameters
    ----------
    trace : Trace
        Any trace.

    Returns
    -------
    ndarray of bool, (gy, gx)
    """
    gy, gx = trace.grid
    mask = np.ones((gy, gx), bool)
    if trace.backend != "simulator":
        return mask
    sim = trace.meta.get("simulated_blocks")
    if isinstance(sim, (list, tuple)):
        mask[:] = False
        for b in sim:
            by, bx = int(b[0]), int(b[1])
            if 0 <= by < gy and 0 <= bx < gx:
                mask[by, bx] = True
    return mask


def simulated_blocks(trace: Trace) -> list[tuple[int, int]] | None:
    """The blocks a windowed simulator run simulated, or None when every block ran.

    Parameters
    ----------
    trace : Trace
        Any trace.
    """
    mask = simulated_mask(trace)
    if mask.all():
        return None
    return [(int(a), int(b)) for a, b in zip(*np.nonzero(mask), strict=True)]


# ---------------------------------------------------------------- timeline
@dataclasses.dataclass(frozen=True, eq=False)
class Timeline:
    """When every block ran.

    Attributes
    ----------
    clock : {'globaltimer', 'order'}
        ``'globaltimer'``: times are the GPU's ``%globaltimer`` (ns) read at
        each block's start and end. ``'order'``: the trace has no clock (the
        simulator), so blocks are laid out one after another in the order they
        completed (the simulator runs one block at a time): block number
        ``seq`` occupies ``[seq, seq + 1)``.
    unit : {'ns', 'blocks'}
        Unit of :attr:`start`, :attr:`end` and :attr:`duration`.
    start, end : ndarray of float64, (gy, gx)
        When each block started and ended (ns since the first block started,
        or completion rank); NaN for blocks without data.
    sm : ndarray of int32, (gy, gx)
        The SM (``%smid``) each block ran on; -1 where unknown (simulator).
    seq : ndarray of int64, (gy, gx)
        Completion order (0 first); -1 where unknown.
    has_data : ndarray of bool, (gy, gx)
        Blocks with a start and end (all blocks of a GPU run; the simulated
        blocks of a windowed simulator run).
    simulated : ndarray of bool, (gy, gx)
        Blocks that ran (see :func:`simulated_mask`).
    origin_ns : int
        ``%globaltimer`` (ns) of time 0, the first block's start; -1 for ``'order'``.
    duration : float
        End of the last block (``unit``); 0 when no block has data.
    sm_count : int or None
        SMs of the device (meta ``sm_count``), when known.
    note : str
        One or two sentences saying what the time axis is, for the page.
    """

    clock: str
    unit: str
    start: np.ndarray
    end: np.ndarray
    sm: np.ndarray
    seq: np.ndarray
    has_data: np.ndarray
    simulated: np.ndarray
    origin_ns: int
    duration: float
    sm_count: int | None
    note: str

    @property
    def grid(self) -> tuple[int, int]:
        """``(gy, gx)`` blocks."""
        return self.start.shape

    @property
    def n_blocks(self) -> int:
        """Blocks with data."""
        return int(self.has_data.sum())

    @property
    def has_clock(self) -> bool:
        """True when times are real (``%globaltimer``), False for completion order."""
        return self.clock == "globaltimer"

    def state_at(self, t: float) -> np.ndarray:
        """Every block's :class:`BlockState` at time ``t`` (in :attr:`unit`).

        A block is running from its start (inclusive) to its end (exclusive),
        waiting before and done after.

        Parameters
        ----------
        t : float
            A time in :attr:`unit`: ns since the first block started, or completed blocks.

        Returns
        -------
        ndarray of int8, (gy, gx)
        """
        out = np.full(self.grid, BlockState.WAITING, np.int8)
        with np.errstate(invalid="ignore"):
            out[self.start <= t] = BlockState.RUNNING
            out[self.end <= t] = BlockState.DONE
        out[~self.has_data] = BlockState.NO_DATA
        return out

    def counts_at(self, t: float) -> dict[BlockState, int]:
        """How many blocks are in each :class:`BlockState` at time ``t``.

        Parameters
        ----------
        t : float
            A time in :attr:`unit`.
        """
        counts = np.bincount(self.state_at(t).ravel(), minlength=len(BlockState))
        return {s: int(counts[s]) for s in BlockState}

    def scrub_times(self, n: int = 241) -> np.ndarray:
        """``n`` evenly spaced times from 0 to :attr:`duration` (float64, ``unit``).

        For the ``'order'`` clock the times are whole steps ``0 .. duration``
        (one per block) when there are at most ``n`` of them.

        Parameters
        ----------
        n : int
            How many times (2 at least are given).
        """
        if self.clock == "order" and self.duration + 1 <= n:
            return np.arange(int(self.duration) + 1, dtype=np.float64)
        return np.linspace(0.0, float(self.duration), max(2, int(n)))

    def running_curve(self) -> tuple[np.ndarray, np.ndarray]:
        """How many blocks run at once, as a step function of time.

        Returns
        -------
        times : ndarray of float64, (n,)
            Times (``unit``) at which the count changes, ascending.
        running : ndarray of int64, (n,)
            Blocks running from ``times[i]`` until ``times[i + 1]``.
        """
        s = self.start[self.has_data]
        e = self.end[self.has_data]
        if not len(s):
            return np.zeros(1), np.zeros(1, np.int64)
        times = np.concatenate([s, e])
        delta = np.concatenate([np.ones(len(s), np.int64), -np.ones(len(e), np.int64)])
        order = np.lexsort((delta, times))  # ends before starts at the same instant
        times, running = times[order], np.cumsum(delta[order])
        last = np.r_[times[1:] != times[:-1], True]  # keep the count after each instant
        return times[last], running[last]

    def label(self, t: float) -> str:
        """A moment for people: ``"at 12.345 µs"`` or ``"after 17 of 64 blocks completed"``.

        Parameters
        ----------
        t : float
            A time in :attr:`unit`.
        """
        if self.clock == "globaltimer":
            return f"at {t / 1000:,.3f} µs"
        done = int(np.count_nonzero(self.end[self.has_data] <= t))
        return f"after {done} of {self.n_blocks} blocks completed"


def timeline(trace: Trace) -> Timeline:
    """When every block of ``trace`` ran (see :class:`Timeline`).

    GPU traces use ``%globaltimer`` (ns); traces without clocks (the
    simulator) fall back to the completion order ``seq``, and say so in
    :attr:`Timeline.note`.

    Parameters
    ----------
    trace : Trace
        Any trace (its ``block_info``: SM, times and completion order per block).
    """
    info = trace.block_info
    gy, gx = trace.grid
    sim = simulated_mask(trace)
    t0, t1, seq = info[..., _T0], info[..., _T1], info[..., _SEQ]
    sm = info[..., _SMID].astype(np.int32)
    sm_count = trace.meta.get("sm_count")
    sm_count = int(sm_count) if isinstance(sm_count, int) and sm_count > 0 else None
    clocked = (t0 >= 0) & (t1 >= t0) & sim
    nan = np.full((gy, gx), np.nan)
    if clocked.any():
        origin = int(t0[clocked].min())
        start = np.where(clocked, (t0 - origin).astype(np.float64), np.nan)
        end = np.where(clocked, (t1 - origin).astype(np.float64), np.nan)
        duration = float(np.nanmax(end))
        device = trace.meta.get("device_name") or "the GPU"
        note = (
            f"Time is the %globaltimer of {device}, read by each block when it started "
            f"and when it finished, in µs since the first block started "
            f"({duration / 1000:.1f} µs for {int(clocked.sum())} blocks)."
        )
        return Timeline(
            "globaltimer",
            "ns",
            start,
            end,
            sm,
            seq.astype(np.int64),
            clocked,
            sim,
            origin,
            duration,
            sm_count,
            note,
        )
    has = (seq >= 0) & sim
    if has.any():
        rank = np.full((gy, gx), -1, np.int64)
        # completion ranks among the blocks with data, 0 .. n-1
        order = np.argsort(np.where(has, seq, np.iinfo(np.int64).max), axis=None, kind="stable")
        rank.ravel()[order[: int(has.sum())]] = np.arange(int(has.sum()))
        start = np.where(has, rank.astype(np.float64), nan)
        end = start + 1.0
    else:
        start, end = nan, nan.copy()
    n = int(has.sum())
    note = (
        "This trace has no clock (a simulator has no %globaltimer or SMs): "
        "the timeline shows the order in which blocks completed, one step per block "
        "(the simulator runs one block at a time), not real time."
    )
    if not sim.all():
        note += (
            f" Only {int(sim.sum())} of {gy * gx} blocks were simulated: "
            f"{format_blocks(simulated_blocks(trace) or [])}; the others have no data."
        )
    if not n:
        note = "This trace has no start or end times, and no completion order, for any block."
    return Timeline(
        "order",
        "blocks",
        start,
        end,
        sm,
        seq.astype(np.int64),
        has,
        sim,
        -1,
        float(n),
        sm_count,
        note,
    )


# ------------------------------------------------------------------- gantt
@dataclasses.dataclass(frozen=True, eq=False)
class Gantt:
    """One row per SM: which block ran there, from when to when.

    Blocks resident on one SM at the same time are stacked in *lanes*
    (a block takes the lowest lane free at its start), so bars never overlap.

    Attributes
    ----------
    by, bx : ndarray of int32, (n,)
        The block of each bar; bars are sorted by SM, then start.
    row : ndarray of int32, (n,)
        The SM of each bar (``%smid``); 0 for every bar of a trace without
        SMs (the simulator's one row).
    lane : ndarray of int32, (n,)
        Lane within the row, ``0 .. lanes - 1``.
    start, end : ndarray of float64, (n,)
        As in :class:`Timeline` (``unit``).
    lanes : int
        Most blocks resident on one SM at once (measured).
    rows : int
        Rows: the device's SM count when known, else the largest SM id + 1.
    unit : str
    index : ndarray of int64, (gy, gx)
        Bar of each block; -1 for blocks without data.
    """

    by: np.ndarray
    bx: np.ndarray
    row: np.ndarray
    lane: np.ndarray
    start: np.ndarray
    end: np.ndarray
    lanes: int
    rows: int
    unit: str
    index: np.ndarray

    def __len__(self) -> int:
        return len(self.by)

    def bounds(self, gap: float = 0.1) -> tuple[np.ndarray, np.ndarray]:
        """Bottom and top of each bar in row units (row ``r`` spans ``[r, r + 1)``).

        Parameters
        ----------
        gap : float
            The fraction of a row left empty below the lanes, 0 to 1.
        """
        h = (1.0 - gap) / self.lanes
        bottom = self.row + gap / 2 + self.lane * h
        return bottom, bottom + h * 0.92


def _lanes(start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """Greedy interval partitioning of bars sorted by start: lowest free lane each."""
    lane = np.zeros(len(start), np.int32)
    free_at: list[float] = []
    for i, (s, e) in enumerate(zip(start.tolist(), end.tolist(), strict=True)):
        for k, f in enumerate(free_at):
            if f <= s:
                free_at[k] = e
                lane[i] = k
                break
        else:
            lane[i] = len(free_at)
            free_at.append(e)
    return lane


def gantt(tl: Timeline) -> Gantt:
    """Bars of every block with data, by SM (see :class:`Gantt`).

    Parameters
    ----------
    tl : Timeline
        The launch's timeline (:func:`timeline`).
    """
    gy, gx = tl.grid
    has = tl.has_data
    by, bx = (a.astype(np.int32) for a in np.nonzero(has))
    row = np.where(tl.sm[has] >= 0, tl.sm[has], 0).astype(np.int32)
    start, end = tl.start[has], tl.end[has]
    order = np.lexsort((end, start, row))
    by, bx, row, start, end = by[order], bx[order], row[order], start[order], end[order]
    lane = np.zeros(len(by), np.int32)
    if len(row):
        cuts = np.flatnonzero(np.diff(row)) + 1
        for a, b in zip(np.r_[0, cuts], np.r_[cuts, len(row)], strict=True):
            lane[a:b] = _lanes(start[a:b], end[a:b])
    index = np.full((gy, gx), -1, np.int64)
    index[by, bx] = np.arange(len(by))
    rows = int(np.max(row)) + 1 if len(row) else 1
    if tl.sm_count and (tl.sm >= 0).any():
        rows = max(rows, tl.sm_count)
    return Gantt(
        by,
        bx,
        row,
        lane,
        start,
        end,
        int(np.max(lane)) + 1 if len(lane) else 1,
        rows,
        tl.unit,
        index,
    )


@dataclasses.dataclass(frozen=True, eq=False)
class Waves:
    """How the blocks fill the GPU: waves of ``SMs x resident blocks per SM``.

    The hardware starts a new block on an SM as soon as one of its resident
    blocks finishes; with ``slots = sms * resident`` blocks running at once,
    the launch takes ``blocks / slots`` waves. Block ``i`` in start order
    belongs to wave ``i // slots``.

    Attributes
    ----------
    resident : int
        Most blocks resident on one SM at once (measured).
    sms : int
        SMs that ran at least one block.
    slots : int
        ``sms * resident``: blocks that can run at once.
    n_blocks : int
    n_waves : float
        ``n_blocks / slots`` (the last wave is partly empty when not whole).
    wave : ndarray of int32, (gy, gx)
        Wave of each block; -1 without data.
    start, end : ndarray of float64, (nw,)
        First start and last end of each wave (``unit``).
    size : ndarray of int64, (nw,)
        Blocks in each wave.
    """

    resident: int
    sms: int
    slots: int
    n_blocks: int
    n_waves: float
    wave: np.ndarray
    start: np.ndarray
    end: np.ndarray
    size: np.ndarray

    def describe(self) -> str:
        """One sentence: blocks, SMs, resident blocks per SM and waves."""
        return (
            f"{self.n_blocks} blocks on {self.sms} SMs, up to {self.resident} resident "
            f"per SM ({self.slots} at once): {self.n_waves:.2f} waves"
        )


def waves(tl: Timeline, g: Gantt | None = None) -> Waves | None:
    """The waves of a launch with clocks and SMs; None for the simulator (no SMs).

    Parameters
    ----------
    tl : Timeline
        The launch's timeline (:func:`timeline`).
    g : Gantt, optional
        Its Gantt chart, made from ``tl`` when not given.
    """
    if not tl.has_clock or not (tl.sm[tl.has_data] >= 0).all() or not tl.n_blocks:
        return None
    g = gantt(tl) if g is None else g
    sms = len(np.unique(g.row))
    slots = sms * g.lanes
    order = np.lexsort((g.end, g.start))
    w = np.empty(len(g), np.int64)
    w[order] = np.arange(len(g)) // slots
    nw = int(np.max(w)) + 1
    wave = np.full(tl.grid, -1, np.int32)
    wave[g.by, g.bx] = w
    start = np.full(nw, np.inf)
    end = np.full(nw, -np.inf)
    np.minimum.at(start, w, g.start)
    np.maximum.at(end, w, g.end)
    return Waves(
        g.lanes,
        sms,
        slots,
        len(g),
        len(g) / slots,
        wave,
        start,
        end,
        np.bincount(w, minlength=nw).astype(np.int64),
    )


# ------------------------------------------------------------------- reads
@dataclasses.dataclass(frozen=True, eq=False)
class ReadMap:
    """Global-memory reads of every element of M or N, at tile granularity.

    The matrix is cut into cells of whole tiles (``TILE_WIDTH`` elements a
    side, several tiles per cell when a side has more than ``max_cells``
    tiles); each cell holds the mean, fewest and most reads of its elements.

    Attributes
    ----------
    matrix : {'M', 'N'}
    kernel : str
        The kernel the counts are of: the trace's (measured), or ``'naive'``
        (Fig. 3.11, computed).
    mean : ndarray of float64, (h, w)
        Mean reads per element of each cell (reads).
    low, high : ndarray of int64, (h, w)
        Fewest and most reads of one element of the cell.
    row_edges, col_edges : ndarray of int64, (h + 1,), (w + 1,)
        Element rows and columns bounding the cells (cell ``(i, c)`` covers
        rows ``row_edges[i] .. row_edges[i + 1] - 1``).
    shape : (rows, cols)
        The matrix's shape (elements).
    tiles_per_cell : (int, int)
        Tiles per cell along rows and columns.
    total : int
        Reads of all elements of the matrix.
    """

    matrix: str
    kernel: str
    mean: np.ndarray
    low: np.ndarray
    high: np.ndarray
    row_edges: np.ndarray
    col_edges: np.ndarray
    shape: tuple[int, int]
    tiles_per_cell: tuple[int, int]
    total: int


@dataclasses.dataclass(frozen=True, eq=False)
class ReadCounts:
    """Measured and naive global reads of M and N, and the reduction factor.

    Attributes
    ----------
    m, n : ReadMap
        Measured reads (the trace's ``m_reads`` / ``n_reads``).
    m_naive, n_naive : ReadMap
        What the naive kernel (Fig. 3.11) reads for the same P elements: each
        M element once per P column (``l`` times), each N element once per P
        row (``j`` times), counting only the blocks that ran.
    measured, naive : int
        Reads of M and N together (elements).
    reduction : float
        ``naive / measured``: TILE_WIDTH for the tiled kernel on multiples of it.
    tile_width : int
    complete : bool
        True when every block ran (the counts are the whole launch's).
    counted_blocks : int
        Blocks whose reads the counts hold.
    note : str
        What the counts cover, for the page.
    """

    m: ReadMap
    n: ReadMap
    m_naive: ReadMap
    n_naive: ReadMap
    measured: int
    naive: int
    reduction: float
    tile_width: int
    complete: bool
    counted_blocks: int
    note: str


def _edges(n: int, T: int, max_cells: int) -> tuple[np.ndarray, int]:
    tiles = ceil_div(n, T)
    per = max(1, ceil_div(tiles, max_cells))
    return np.r_[np.arange(0, n, T * per), n].astype(np.int64), per


def _cells(a: np.ndarray, re_: np.ndarray, ce: np.ndarray):
    """Sum, min and max of ``a`` over the cells bounded by ``re_`` x ``ce``."""
    a64 = a.astype(np.int64)
    # along the rows first (contiguous, fast), then down the much smaller result
    total = np.add.reduceat(np.add.reduceat(a64, ce[:-1], axis=1), re_[:-1], axis=0)
    low = np.minimum.reduceat(np.minimum.reduceat(a, ce[:-1], axis=1), re_[:-1], axis=0)
    high = np.maximum.reduceat(np.maximum.reduceat(a, ce[:-1], axis=1), re_[:-1], axis=0)
    size = np.diff(re_)[:, None] * np.diff(ce)[None, :]
    return total / size, low.astype(np.int64), high.astype(np.int64)


def _read_map(counts: np.ndarray, matrix: str, kernel: str, T: int, max_cells: int) -> ReadMap:
    rows, cols = counts.shape
    re_, pr = _edges(rows, T, max_cells)
    ce, pc = _edges(cols, T, max_cells)
    mean, low, high = _cells(counts, re_, ce)
    return ReadMap(
        matrix,
        kernel,
        mean,
        low,
        high,
        re_,
        ce,
        (rows, cols),
        (pr, pc),
        int(counts.sum(dtype=np.int64)),
    )


def _line_map(
    per_line: np.ndarray, other: int, along_rows: bool, matrix: str, T: int, max_cells: int
) -> ReadMap:
    """A ReadMap of a matrix whose counts depend only on the row (or only the column)."""
    n = len(per_line)
    e, p = _edges(n, T, max_cells)
    oe, op = _edges(other, T, max_cells)
    v = per_line.astype(np.int64)
    mean1 = np.add.reduceat(v, e[:-1]) / np.diff(e)
    low1 = np.minimum.reduceat(v, e[:-1])
    high1 = np.maximum.reduceat(v, e[:-1])
    ones = np.ones(len(oe) - 1, np.int64)  # low and high stay counts
    if along_rows:
        mean, low, high = (np.outer(x, ones) for x in (mean1, low1, high1))
        re_, ce, shape, per = e, oe, (n, other), (p, op)
    else:
        mean, low, high = (np.outer(ones, x) for x in (mean1, low1, high1))
        re_, ce, shape, per = oe, e, (other, n), (op, p)
    return ReadMap(
        matrix,
        "naive",
        mean,
        low,
        high,
        re_,
        ce,
        shape,
        per,
        int(v.sum()) * other,
    )


def naive_read_maps(trace: Trace, max_cells: int = MAX_CELLS) -> tuple[ReadMap, ReadMap]:
    """What the naive kernel (Fig. 3.11) reads for the P elements of the blocks that ran.

    Each valid P element ``(row, col)`` reads row ``row`` of M and column
    ``col`` of N once per term: M element ``(r, c)`` is read once for every
    valid P column of the blocks that ran in block row ``r // TILE_WIDTH``
    (``l`` times when every block ran), N element ``(r, c)`` once for every
    valid P row in block column ``c // TILE_WIDTH`` (``j`` times).

    Parameters
    ----------
    trace : Trace
        A tiled kernel's trace (its launch and the blocks that ran).
    max_cells : int
        Largest side of a heatmap (cells); larger matrices are averaged over
        several whole tiles per cell.

    Returns
    -------
    (ReadMap, ReadMap)
        For M and N, ``kernel='naive'``.
    """
    j, k, l = trace.shape
    T = trace.tile_width
    gy, gx = trace.grid
    ran = simulated_mask(trace)
    cols_in = np.minimum(T, l - T * np.arange(gx))  # valid P columns per block column
    rows_in = np.minimum(T, j - T * np.arange(gy))
    per_brow = (ran * cols_in[None, :]).sum(axis=1)  # (gy,)
    per_bcol = (ran * rows_in[:, None]).sum(axis=0)  # (gx,)
    m_rows = np.repeat(per_brow, T)[:j]  # reads of each element of M row r
    n_cols = np.repeat(per_bcol, T)[:l]
    return (
        _line_map(m_rows, k, True, "M", T, max_cells),
        _line_map(n_cols, k, False, "N", T, max_cells),
    )


def read_counts(trace: Trace, max_cells: int = MAX_CELLS) -> ReadCounts:
    """Heatmaps of the global reads of M and N, measured and naive (see :class:`ReadCounts`).

    Parameters
    ----------
    trace : Trace
    max_cells : int
        Largest side of a heatmap (cells); cells are whole tiles, averaged.
    """
    T = trace.tile_width
    m = _read_map(trace.m_reads, "M", trace.kernel, T, max_cells)
    n = _read_map(trace.n_reads, "N", trace.kernel, T, max_cells)
    mn, nn = naive_read_maps(trace, max_cells)
    measured, naive = m.total + n.total, mn.total + nn.total
    ran = simulated_mask(trace)
    complete = bool(ran.all())
    counted = int(ran.sum())
    if complete:
        note = (
            f"Reads of every element by the whole launch ({ran.size} blocks), counted "
            f"on the {trace.backend}."
        )
    else:
        note = (
            f"Only {counted} of {ran.size} blocks were simulated "
            f"({format_blocks(simulated_blocks(trace) or [])}): the counts, and the naive "
            f"kernel's for comparison, cover those blocks only."
        )
    return ReadCounts(
        m,
        n,
        mn,
        nn,
        measured,
        naive,
        naive / measured if measured else float("nan"),
        T,
        complete,
        counted,
        note,
    )


# ------------------------------------------------------------------- waits
def wait_bin_edges() -> tuple[np.ndarray, np.ndarray]:
    """Cycle range of each bin of ``trace.wait_hist``: ``[lo, hi)``.

    Bin 0 holds waits of 0 cycles, bin ``b`` waits ``2**(b-1) <= w < 2**b``,
    the last bin everything from ``2**(WAIT_BINS-2)`` up (``hi`` = inf).

    Returns
    -------
    lo, hi : ndarray of float64, (WAIT_BINS,)
    """
    b = np.arange(WAIT_BINS)
    lo = np.where(b == 0, 0.0, 2.0 ** (b - 1))
    hi = 2.0**b
    hi[-1] = np.inf
    return lo, hi


def wait_bin_label(b: int) -> str:
    """Cycles of bin ``b`` for people: ``"0"``, ``"2–3"``, ``"1024–2047"``, ``"≥ 2^30"``.

    Parameters
    ----------
    b : int
        A bin of the wait histograms, 0 to ``WAIT_BINS - 1``.
    """
    if b == 0:
        return "0"
    if b == WAIT_BINS - 1:
        return f"≥ 2^{b - 1}"
    lo, hi = 2 ** (b - 1), 2**b - 1
    return str(lo) if lo == hi else f"{lo}–{hi}"


@dataclasses.dataclass(frozen=True, eq=False)
class WaitDistribution:
    """How long blocks waited at each barrier: a histogram over blocks.

    The wait of a block at a barrier is its *arrival spread*: the last warp's
    arrival minus the first warp's (``%clock64`` cycles of the block's SM),
    i.e. how long the first warp waited for the last.

    Attributes
    ----------
    phase : int or None
        The phase, or None for all phases together (each block counted once
        per phase).
    counts : ndarray of int64, (2, WAIT_BINS)
        Blocks per log2 bin of cycles, for barrier 1 (after the loads) and
        barrier 2 (after the k loop); see :func:`wait_bin_edges`.
    lo, hi : ndarray of float64, (WAIT_BINS,)
        Cycle range of each bin.
    n_phases : int
    available : bool
        False when the trace has no clocks (simulator) or no summaries
        (recorded without a window): then counts are all 0.
    note : str
    """

    phase: int | None
    counts: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    n_phases: int
    available: bool
    note: str

    def median_bin(self, barrier: int) -> int | None:
        """Bin holding the median wait at ``barrier`` (0 or 1); None without data.

        Parameters
        ----------
        barrier : {0, 1}
            Barrier 1 (after the loads) is 0, barrier 2 (after the k loop) is 1.
        """
        c = self.counts[barrier]
        total = int(c.sum())
        if not total:
            return None
        return int(np.searchsorted(np.cumsum(c), (total + 1) / 2))


def wait_distribution(trace: Trace, phase: int | None = None) -> WaitDistribution:
    """The barrier-wait histogram of one phase, or of all phases (``phase=None``).

    Parameters
    ----------
    trace : Trace
        Any trace (its ``wait_hist``; empty without clocks).
    phase : int, optional
        A phase ``ph``, 0 to ``n_phases - 1``; None for all phases.

    Raises
    ------
    IndexError
        When ``phase`` is outside ``0 .. n_phases - 1``.
    """
    nph = trace.n_phases
    lo, hi = wait_bin_edges()
    if phase is not None and not 0 <= phase < max(nph, 1):
        raise IndexError(f"phase must be 0..{nph - 1}, got {phase}")
    hist = trace.wait_hist
    available = bool(hist.shape[0]) and bool(hist.sum())
    if not hist.shape[0]:
        counts = np.zeros((2, WAIT_BINS), np.int64)
        note = (
            "This trace was recorded with every block in detail: it keeps no barrier-wait "
            "summaries (record with a window for them)."
        )
    else:
        sel = hist.sum(axis=0) if phase is None else hist[phase]
        counts = sel.astype(np.int64)
        note = (
            "Arrival spread per block: the last warp's arrival at the barrier minus the "
            "first warp's, in %clock64 cycles (how long the first warp waited)."
            + (
                " Measured on the blocks recorded in detail (the window) only: the other "
                "blocks ran without clocks."
                if trace.meta.get("spread_from") == "detail blocks"
                else ""
            )
            if available
            else "No barrier clocks in this trace (a simulator has no %clock64): no waits to show."
        )
    return WaitDistribution(phase, counts, lo, hi, nph, available, note)


def block_waits(trace: Trace) -> np.ndarray:
    """Each block's largest arrival spread over the phases, per barrier (cycles).

    Parameters
    ----------
    trace : Trace
        Any trace, recorded on a GPU or in the simulator.

    Returns
    -------
    ndarray of int64, (gy, gx, 2)
        -1 where unknown (no clocks, or a trace without summaries).
    """
    gy, gx = trace.grid
    if trace.block_wait.shape[:2] != (gy, gx):
        return np.full((gy, gx, 2), -1, np.int64)
    return trace.block_wait[..., 0].astype(np.int64)


@dataclasses.dataclass(frozen=True, eq=False)
class SlowBlocks:
    """The blocks that waited longest at one barrier, slowest first.

    Attributes
    ----------
    barrier : int
        0: barrier 1 (after the loads), 1: barrier 2 (after the k loop).
    phase : int or None
        The phase ranked, or None: ranked by the largest spread over all phases.
    by, bx, sm : ndarray of int32, (n,)
    spread : ndarray of int64, (n,)
        Arrival spread (cycles): in ``phase``, or the largest over the phases.
    mean : ndarray of int64, (n,)
        Mean spread over the phases (cycles).
    worst_phase : ndarray of int32, (n,)
        Phase of the largest spread.
    detailed : ndarray of bool, (n,)
        Whether the block was recorded per thread (its replay can be opened).
    note : str
        What was ranked.
    """

    barrier: int
    phase: int | None
    by: np.ndarray
    bx: np.ndarray
    sm: np.ndarray
    spread: np.ndarray
    mean: np.ndarray
    worst_phase: np.ndarray
    detailed: np.ndarray
    note: str

    def __len__(self) -> int:
        return len(self.by)


def slowest_blocks(
    trace: Trace, barrier: int = 0, n: int = 10, phase: int | None = None
) -> SlowBlocks:
    """The ``n`` blocks with the largest arrival spread at ``barrier`` (see :class:`SlowBlocks`).

    With ``phase`` given, blocks are ranked by their spread in that phase
    when the trace stores per-phase spreads (meta ``spread_stored``);
    otherwise by their largest spread over all phases (``trace.block_wait``),
    and :attr:`SlowBlocks.note` says so.

    Parameters
    ----------
    trace : Trace
        Any trace (its ``block_wait`` or ``barrier_spread``).
    barrier : {0, 1}
        Barrier 1 (after the loads) is 0, barrier 2 (after the k loop) is 1.
    n : int
        How many blocks.
    phase : int, optional
        A phase ``ph`` to rank by; None for the largest spread over all phases.

    Raises
    ------
    ValueError
        When ``barrier`` is not 0 or 1.
    """
    if barrier not in (0, 1):
        raise ValueError(
            f"barrier must be 0 (after the loads) or 1 (after the k loop), got {barrier}"
        )
    gy, gx = trace.grid
    bw = trace.block_wait
    has_summary = bw.shape[:2] == (gy, gx)
    stored = trace.barrier_spread.shape[:2] == (gy, gx) and trace.barrier_spread.size
    if phase is not None and stored:
        key = trace.barrier_spread[:, :, phase, barrier, 0].astype(np.int64)
        note = f"ranked by the arrival spread at {BARRIERS[barrier]} in phase {phase}"
    elif has_summary:
        key = bw[..., barrier, 0].astype(np.int64)
        note = f"ranked by the largest arrival spread at {BARRIERS[barrier]} over all phases"
        if phase is not None:
            note += " (this trace keeps no per-phase spreads for so many blocks)"
    else:
        key = np.full((gy, gx), -1, np.int64)
        note = "no barrier waits in this trace"
    flat = key.ravel()
    valid = np.flatnonzero(flat >= 0)
    take = valid[np.argsort(-flat[valid], kind="stable")[:n]]
    by, bx = np.divmod(take, gx)
    info = trace.block_info
    mean = bw[by, bx, barrier, 1] if has_summary else np.full(len(take), -1)
    worst = bw[by, bx, barrier, 2] if has_summary else np.full(len(take), -1)
    detailed = np.array(
        [trace.has_block((a, b)) for a, b in zip(by.tolist(), bx.tolist(), strict=True)], bool
    )
    return SlowBlocks(
        barrier,
        phase,
        by.astype(np.int32),
        bx.astype(np.int32),
        info[by, bx, _SMID].astype(np.int32),
        flat[take].astype(np.int64),
        np.asarray(mean, np.int64),
        np.asarray(worst, np.int32),
        detailed,
        note,
    )


# ------------------------------------------------------------------- model
#: Each simulator's name in words (a trace's ``meta["target"]["name"]``).
_SIMULATORS = {
    "vizmm-simulator": "vizmm's simulator",
    "numba-cuda-simulator": "Numba's CUDA simulator",
}


def describe(trace: Trace) -> list[str]:
    """Lines saying what a large trace holds: kernel, sizes, device, date, blocks.

    Parameters
    ----------
    trace : Trace
        A large trace (aggregated recording).
    """
    j, k, l = trace.shape
    gy, gx = trace.grid
    T = trace.tile_width
    m = trace.meta
    shape = f"{j}×{j}" if j == k == l else f"M {j}×{k} · N {k}×{l}"
    where = (
        f"{m.get('device_name', 'a GPU')}"
        + (f" ({m['sm_count']} SMs)" if m.get("sm_count") else "")
        if trace.backend == "gpu"
        else _SIMULATORS.get(str((m.get("target") or {}).get("name")), "a simulator")
    )
    lines = [
        f"{trace.kernel} kernel ({m.get('figure', '')}) · {shape} · TILE_WIDTH {T} · "
        f"{gy}×{gx} = {gy * gx} blocks of {T}×{T} threads · {trace.n_phases} phases",
        f"recorded on {where}" + (f" on {m['created']}" if m.get("created") else ""),
        f"{len(trace.detail_blocks)} block(s) recorded per thread: "
        f"{format_blocks(trace.detail_blocks.tolist())}",
    ]
    sim = simulated_blocks(trace)
    if sim is not None:
        lines.append(
            f"simulated blocks ({len(sim)} of {gy * gx}): {format_blocks(sim)}; "
            "the other blocks did not run, so they have no times or reads"
        )
    return [line.replace(" ()", "") for line in lines]


@dataclasses.dataclass(frozen=True, eq=False)
class LargeModel:
    """Everything the large views draw, for one trace.

    Attributes
    ----------
    trace : Trace
    timeline : Timeline
    gantt : Gantt
    waves : Waves or None
        None without clocks and SMs (the simulator).
    reads : ReadCounts
    block_waits : ndarray of int64, (gy, gx, 2)
        See :func:`block_waits`.
    zero_fills : ndarray of int64, (gy, gx)
        Zero-filled Mds and Nds slots of each block over all phases.
    lines : list of str
        :func:`describe`.
    """

    trace: Trace
    timeline: Timeline
    gantt: Gantt
    waves: Waves | None
    reads: ReadCounts
    block_waits: np.ndarray
    zero_fills: np.ndarray
    lines: list[str]

    @classmethod
    def of(cls, trace: Trace, max_cells: int = MAX_CELLS) -> LargeModel:
        """Build every model of ``trace`` (about half a second at 4096 x 4096).

        Parameters
        ----------
        trace : Trace
            Any trace.
        max_cells : int
            Largest side of a read-count heatmap (cells), as :func:`naive_read_maps`.
        """
        tl = timeline(trace)
        g = gantt(tl)
        return cls(
            trace,
            tl,
            g,
            waves(tl, g),
            read_counts(trace, max_cells),
            block_waits(trace),
            trace.zero_fills.sum(axis=(2, 3), dtype=np.int64),
            describe(trace),
        )


@per_trace(maxsize=1)
def model(trace: Trace) -> LargeModel:
    """:meth:`LargeModel.of`, kept with the trace (traces are immutable).

    Parameters
    ----------
    trace : Trace
        A trace, of any size.

    Returns
    -------
    LargeModel
        Worked out once, and let go with the trace
        (:func:`vizmm.trace.derived.per_trace`).
    """
    return LargeModel.of(trace)
