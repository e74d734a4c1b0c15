"""Replay: turn a trace into neutral frames, one per step of one block.

A :class:`Frame` says what every cell of M, N and P, every slot of Mds and
Nds and every thread of the block is doing at one step, in codes and plain
NumPy arrays: no colours, no Bokeh, no Pillow. Every renderer (the dashboard's
Bokeh scene, the GIF/MP4 frames, the HTML export) draws frames, so they all
show the same picture.

Steps follow Fig. 5.9 / 5.13 of PMPP (4th ed.):

* ``granularity="substep"``: start, then per phase ``ph``: load M
  (line 19/20), load N (line 20/23), arrival at barrier 1 (line 21/25) and its
  release, each ``k`` of the inner loop (line 24/28), arrival at barrier 2
  (line 26/30) and its release; finally the P store (line 28/33).
* ``granularity="phase"``: start, one step per phase (tiles loaded and
  consumed), the P store.

Two orders: ``"lockstep"`` (the book's view: all threads move together) and
``"recorded"``: barrier arrivals unfold in the order the trace recorded them
(the block's logical clock, or ``%clock64`` cycles when the trace has them),
so one sees who waited for whom.

Nothing is invented: Mds/Nds contents are the elements the trace says were
loaded; Pvalue after a phase is the recorded value; Pvalue inside a phase is
the recorded value of the previous phase plus the products of the recorded
slot values (NaN where a slot's content is unknown: out-of-allocation loads
leave stale data the trace cannot know).
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import re
from collections import defaultdict
from collections.abc import Callable
from functools import cached_property
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from ..analysis import hazards as hz
from ..analysis.transactions import (
    LAYOUTS,
    TransactionsOverlay,
    memory_transactions,
    transactions_overlay,
)
from ..trace import TILED_KERNELS, Access, LaunchShape, PWrite, Trace, ceil_div
from ..trace.units import format_value
from .own import OwnBlock, own_block
from .table import Table, TableCursor, frame_table, own_kernel

if TYPE_CHECKING:
    from .findings import FindingMarks

__all__ = [
    "Sub",
    "SlotState",
    "ThreadState",
    "CellState",
    "Step",
    "Ghost",
    "Frame",
    "Replay",
    "SlotFound",
    "GRANULARITIES",
    "ORDERS",
    "NAIVE_REFUSAL",
    "source_lines",
    "thread_states_shown",
    "slot_states_shown",
]

GRANULARITIES = ("substep", "phase")
ORDERS = ("lockstep", "recorded")
MAX_ARRIVAL_GROUPS = 8  # arrival frames per barrier in recorded order
#: Why a trace of the naive kernel cannot be replayed (the one wording of it).
NAIVE_REFUSAL = (
    "the naive kernel (Fig. 3.11) has no tiles or phases to replay; record a tiled kernel "
    f"({', '.join(map(repr, TILED_KERNELS[:-1]))} or {TILED_KERNELS[-1]!r})"
)


class Sub(str, enum.Enum):
    """Kind of step (a sub-step of Fig. 5.9's loop, or a whole phase)."""

    START = "start"
    LOAD_M = "load M"
    LOAD_N = "load N"
    ARRIVE_1 = "barrier 1"
    RELEASE_1 = "barrier 1 released"
    K = "k loop"
    ARRIVE_2 = "barrier 2"
    RELEASE_2 = "barrier 2 released"
    PHASE = "phase"
    WRITE_P = "write P"


class SlotState(enum.IntEnum):
    """State of one Mds / Nds slot (codes of ``Frame.mds_state``)."""

    EMPTY = 0  #: never written in this block (uninitialised shared memory)
    STALE = 1  #: holds the previous phase's element, not yet overwritten
    LOADED = 2  #: holds an element of M / N loaded in this phase
    ZERO = 3  #: zero-filled in this phase (boundary check failed)
    WRONG = 4  #: holds a wrong element (row wrap of the unchecked kernel)
    SKIPPED = 5  #: the load was out of the allocation: nothing written, content unknown


class ThreadState(enum.IntEnum):
    """State of one thread of the block (codes of ``Frame.thread_state``)."""

    READY = 0  #: before the first phase
    LOADING = 1  #: copying its M and N elements into Mds / Nds
    WAITING_1 = 2  #: arrived at barrier 1 (after the loads), waiting
    RELEASED = 3  #: just released from a barrier
    COMPUTING = 4  #: in the k loop
    WAITING_2 = 5  #: arrived at barrier 2 (after the k loop), waiting
    WRITING_P = 6  #: storing Pvalue to P
    IDLE = 7  #: no valid P element: its store is skipped
    DONE = 8  #: finished a phase (phase granularity)


class CellState(enum.IntEnum):
    """State of one element of M, N or P (codes of ``Frame.m_state`` etc.)."""

    NONE = 0  #: not touched by this block so far
    DONE = 1  #: loaded by this block in an earlier phase (M, N) / written (P)
    TILE = 2  #: part of the current phase's tile
    LOADING = 3  #: being loaded this step (``m_thread`` says by whom)
    READING = 4  #: its copy in Mds / Nds is read at this k
    COMPUTING = 5  #: P element of this block, being accumulated


@dataclasses.dataclass(frozen=True)
class Step:
    """One step of the replay: kind, phase, k, and threads arrived (recorded order)."""

    sub: Sub
    phase: int | None = None
    k: int | None = None
    arrived: int | None = None


class Ghost(NamedTuple):
    """A tile position outside its matrix (the tile overhangs M or N), at one step.

    Attributes
    ----------
    row, col : int
        The position the kernel's index named (outside the matrix).
    code : int
        :class:`~vizmm.trace.Access` code of the load there (``NOT_RECORDED``
        before the load of this phase).
    thread : int
        Index ``ty * T + tx`` of the thread whose load it is.
    now : bool
        Whether the thread loads it at this step.
    element : (row, col) or None
        The element really read (the row wrap of a ``WRONG_ELEMENT`` load);
        None for other codes.
    """

    row: int
    col: int
    code: int
    thread: int
    now: bool
    element: tuple[int, int] | None


def thread_states_shown(launch: LaunchShape, granularity: str) -> tuple[ThreadState, ...]:
    """The :class:`ThreadState` codes a replay's frames can show, in legend order.

    Phases show ready, done and the P store; sub-steps every state of
    Fig. 5.9's loop. Idle threads (no valid P element) appear when the
    matrices are not whole tiles (``j`` or ``l`` not a multiple of TILE_WIDTH).

    Parameters
    ----------
    launch : LaunchShape
        The launch (kernel, sizes, TILE_WIDTH).
    granularity : {'substep', 'phase'}
        The replay's granularity.
    """
    if granularity == "phase":
        states = [ThreadState.READY, ThreadState.DONE, ThreadState.WRITING_P]
    else:
        states = [
            ThreadState.READY,
            ThreadState.LOADING,
            ThreadState.WAITING_1,
            ThreadState.RELEASED,
            ThreadState.COMPUTING,
            ThreadState.WAITING_2,
            ThreadState.WRITING_P,
        ]
    jp, _, lp = launch.padded
    if (jp, lp) != (launch.j, launch.l):
        states.append(ThreadState.IDLE)
    return tuple(states)


def slot_states_shown(launch: LaunchShape) -> tuple[SlotState, ...]:
    """The :class:`SlotState` codes a kernel's Mds / Nds slots can take, in legend order.

    Only the unchecked kernel (Fig. 5.9, 'tiled') reads wrong elements and
    skips loads past the allocation.

    Parameters
    ----------
    launch : LaunchShape
        The launch (kernel, sizes, TILE_WIDTH).
    """
    states = [SlotState.LOADED, SlotState.ZERO, SlotState.STALE, SlotState.EMPTY]
    if launch.kernel == "tiled":
        states += [SlotState.WRONG, SlotState.SKIPPED]
    return tuple(states)


@dataclasses.dataclass(frozen=True, eq=False)
class Frame:
    """What the block is doing at one step (neutral: codes and arrays, no colours).

    ``T`` is TILE_WIDTH, M is j x k, N is k x l, P is j x l. Thread index
    ``t = ty * T + tx`` identifies a thread wherever a frame names one (the
    palette colours threads by it).

    Attributes
    ----------
    index, count : int
        This step's number and the number of steps.
    step : Step
    granularity : {'substep', 'phase'}
    order : {'lockstep', 'recorded'}
        Of the replay the frame belongs to.
    thread_states : tuple of ThreadState
        Every state this replay's threads can show (:func:`thread_states_shown`:
        what a legend lists).
    slot_states : tuple of SlotState
        Every state this kernel's Mds / Nds slots can take (:func:`slot_states_shown`).
    block : (by, bx)
    title : str
        Kernel, shapes, TILE_WIDTH, block, phase and sub-step, in one line.
    caption : str
        What happens at this step, in words.
    mds_state, nds_state : ndarray of int8, (T, T)
        :class:`SlotState` of each slot.
    mds_src, nds_src : ndarray of int32, (T, T, 2)
        (row, col) of the element the slot holds; -1 where none (empty,
        zero-filled, skipped).
    mds_value, nds_value : ndarray of float32, (T, T)
        The value the slot holds; NaN where unknown.
    mds_now, nds_now : ndarray of bool, (T, T)
        Slots written at this step.
    mds_read, nds_read : ndarray of bool, (T, T)
        Slots read at this step (column k of Mds, row k of Nds).
    thread_state : ndarray of int8, (T, T)
        :class:`ThreadState` of each thread.
    thread_valid : ndarray of bool, (T, T)
        Whether the thread has a valid P element (``Row < j and Col < l``).
    thread_rank : ndarray of int32, (T, T)
        At a barrier step: the thread's arrival rank (0 first); -1 otherwise.
    pvalue : ndarray of float32, (T, T)
        Each thread's Pvalue after this step (NaN where unknown).
    m_state, n_state, p_state : ndarray of int8, (j, k), (k, l), (j, l)
        :class:`CellState` of each element.
    m_thread, n_thread : ndarray of int16, (j, k), (k, l)
        Thread index loading the element at this step; -1 elsewhere.
    tiles : dict
        ``{"M": (row0, col0), "N": (row0, col0), "P": (row0, col0)}``: top-left
        corner of the current T x T tile of each matrix (may overhang the
        matrix; None before the first phase for M and N).
    ghosts : dict
        ``{"M": [...], "N": [...]}``: tile slots outside the matrix, each a
        :class:`Ghost`.
    p_ghosts : list of (row, col, thread index)
        Positions of the block's P tile outside P: threads with no P element.
    focus : (ty, tx) or None
        The followed thread.
    m_focus, n_focus, p_focus : ndarray of bool
        Elements the followed thread loads or reads at this step (P: its element).
    mds_focus, nds_focus : ndarray of bool, (T, T)
        Slots the followed thread writes or reads at this step.
    loads_so_far : int
        Global reads of M and N by this block up to this step (from the trace).
    naive_loads_so_far : int
        Reads the naive kernel (Fig. 3.11) makes for the same work: 2 per
        term per valid thread, for every term the tiles loaded so far feed
        (``terms_loaded``). After the loads of phase ``ph`` this is
        ``TILE_WIDTH`` times ``loads_so_far`` for a full block.
    naive_loads_total : int
        Reads the naive kernel makes for the block's whole work: 2 per term
        per valid thread, ``k`` terms.
    terms_done : int
        Multiply-add terms each thread has accumulated (0..k).
    terms_loaded : int
        Terms the tiles loaded so far feed (0..k): ``(ph + 1) * TILE_WIDTH``
        once both tiles of phase ``ph`` are in shared memory.
    source_line : int or None
        0-based line of ``trace.meta["source"]`` executed at this step.
    table_focus : (phase, column) or None
        Cell of the Fig. 5.8 table: column 'M', 'N' or 'P' of a phase.
    table_cursor : TableCursor
        How far the step has filled the block's Fig. 5.8 table.
    phase_pvalues : ndarray of float32, (nph, T, T)
        Each thread's recorded Pvalue after every phase the block has
        finished at this step (its k loop done); NaN for phases not finished
        yet.
    mds_loader, nds_loader : ndarray of int16, (T, T), or None
        Thread index ``ty*T + tx`` of the thread that fills each slot in the
        current phase: the slot's own index in Fig. 5.9 (thread (ty, tx) fills
        ``Mds[ty][tx]``); the transposed index for the uncoalesced kernel, whose
        thread (ty, tx) fills ``Mds[tx][ty]``. None: the slot's own index.
    mds_wrong, nds_wrong : ndarray of bool, (T, T), or None
        Barrier lab: slots from which a read at this step (at phase
        granularity: in this phase) returned another element than the book's
        kernel reads (None: the trace holds no reads).
    thread_wrong : ndarray of bool, (T, T), or None
        Barrier lab: threads whose read at this step returned a wrong element.
    wrong_notes : dict or None
        ``{(ty, tx): "read M_{0,2} = 5 (phase 1) where the book's kernel reads
        M_{0,0} = 8"}`` for those threads: what it found and what the book's
        kernel finds, with their values (both reads, joined by "; ").
    slot_found : dict or None
        Barrier lab: what a racing read found in each slot of ``mds_wrong`` /
        ``nds_wrong``, ``{("Mds" or "Nds", row, col): SlotFound}`` (the
        followed thread's read where it is one of them, else the first
        reader's), so that the picture of Mds / Nds shows what that thread
        actually found there, not the store the slot received.
    p_wrong : ndarray of bool, (j, l), or None
        Barrier lab, at the P store: elements that came out wrong.
    p_book : ndarray of float32, (T, T), or None
        Barrier lab, at the P store: each thread's Pvalue as the book's kernel
        computes it (:func:`vizmm.analysis.hazards.book_p`), beside the wrong
        one; NaN where the book's kernel would read a slot never written.
    thread_ahead : ndarray of bool, (T, T), or None
        Barrier lab: threads that ran ahead of another at this step, as the
        wrong reads of this ``k`` (at phase granularity: of the phase) show
        (:func:`vizmm.analysis.hazards.ran_ahead`): a reader that found an
        earlier phase's element or a slot not written yet (barrier 1
        removed), or a writer whose next phase's element a reader found
        (barrier 2 removed). None: the trace holds no reads.
    ahead_notes : dict or None
        ``{(ty, tx): "thread (0,1) had already loaded phase 1's M_{0,3} into
        Mds[0][1] while thread (0,0) still needed phase 0's M_{0,1}"}`` for
        those threads (several joined by "; ").
    thread_terms : dict or None
        A kernel of the user's own with recorded reads, at a k step: every
        term each thread added at this ``k``, one per accumulator, with the
        P element it went into (a coarsened thread has several):
        ``{(ty, tx): "P_{0,0} += M_{0,0}·N_{0,0}; P_{0,2} += M_{0,0}·N_{0,2}"}``
        (:func:`vizmm.replay.own.own_block`). None otherwise.
    drop_barrier : tuple of int
        The ``__syncthreads()`` this recording removed (1 after the loads, 2
        after the k loop; ``meta["drop_barrier"]``, the name
        :func:`vizmm.record` and the record form use); empty: both kept.
    struck_lines : tuple of int
        0-based lines of ``trace.meta["source"]`` whose ``__syncthreads()``
        this recording removed (``meta["drop_barrier"]``).
    transactions : TransactionsOverlay or None
        The memory-transactions view of this step (``Replay(transactions=True)``).
    finding : vizmm.replay.findings.FindingMarks or None
        A finding of ``vizmm.check`` to mark on M, N, P, Mds, Nds, the threads
        and the Fig. 5.8 table (:func:`vizmm.replay.findings.with_finding`);
        None: none is selected, or it is of another block.
    key : tuple
        What tells this frame from every other frame of its trace: the
        replay's ``(block, granularity, order, focus, transactions, warp)``
        and ``index``. Two frames of one trace with equal keys hold equal
        values, so what a renderer makes of one it may show for the other
        (:class:`vizmm.render.bokeh_scene.Scene` shares its columns between
        pages). Empty for a frame not made by :meth:`Replay.frame`; a frame
        made from another with other values (``dataclasses.replace``) must
        be given ``key=()`` or a key of its own.
    table_of : callable or None
        Gives :attr:`table` (the block's Fig. 5.8 table) when first asked.
    p_element : ndarray of int64, (T, T, 2), or None
        ``(Row, Col)`` of the P element each thread stores: the book's
        ``(by*T + ty, bx*T + tx)`` (which may lie outside P: see
        :attr:`p_ghosts`), or for a kernel of the user's own the element its
        store really went to (its first; -1 where it stored none), from the
        access log (:func:`vizmm.replay.own.own_block`). None: the book's.
    """

    index: int
    count: int
    step: Step
    granularity: str
    order: str
    thread_states: tuple[ThreadState, ...]
    slot_states: tuple[SlotState, ...]
    block: tuple[int, int]
    title: str
    caption: str
    mds_state: np.ndarray
    nds_state: np.ndarray
    mds_src: np.ndarray
    nds_src: np.ndarray
    mds_value: np.ndarray
    nds_value: np.ndarray
    mds_now: np.ndarray
    nds_now: np.ndarray
    mds_read: np.ndarray
    nds_read: np.ndarray
    thread_state: np.ndarray
    thread_valid: np.ndarray
    thread_rank: np.ndarray
    pvalue: np.ndarray
    m_state: np.ndarray
    n_state: np.ndarray
    p_state: np.ndarray
    m_thread: np.ndarray
    n_thread: np.ndarray
    tiles: dict
    ghosts: dict
    p_ghosts: list
    focus: tuple[int, int] | None
    m_focus: np.ndarray
    n_focus: np.ndarray
    p_focus: np.ndarray
    mds_focus: np.ndarray
    nds_focus: np.ndarray
    loads_so_far: int
    naive_loads_so_far: int
    naive_loads_total: int
    terms_done: int
    terms_loaded: int
    source_line: int | None
    table_focus: tuple[int, str] | None
    table_cursor: TableCursor
    phase_pvalues: np.ndarray
    mds_loader: np.ndarray | None = None
    nds_loader: np.ndarray | None = None
    mds_wrong: np.ndarray | None = None
    nds_wrong: np.ndarray | None = None
    thread_wrong: np.ndarray | None = None
    wrong_notes: dict | None = None
    slot_found: dict | None = None
    p_wrong: np.ndarray | None = None
    p_book: np.ndarray | None = None
    thread_ahead: np.ndarray | None = None
    ahead_notes: dict | None = None
    thread_terms: dict | None = None
    struck_lines: tuple = ()
    drop_barrier: tuple = ()
    transactions: TransactionsOverlay | None = None
    finding: FindingMarks | None = None
    key: tuple = ()
    table_of: Callable[[], Table] | None = dataclasses.field(default=None, repr=False)
    p_element: np.ndarray | None = None

    @property
    def table(self) -> Table | None:
        """The Fig. 5.8 table of this frame's block: the cells a renderer draws.

        Its cells are the same at every step of the block (what each thread
        loads and adds, :func:`~vizmm.replay.table.frame_table`);
        :attr:`table_cursor` says how far this step has filled them. Worked
        out on first use and kept with the trace, so a frame drawn without
        its table (a GIF) costs nothing. None for a frame made without one.
        """
        return None if self.table_of is None else self.table_of()

    @property
    def cgma(self) -> float:
        """CGMA of the loads so far: FLOPs they feed (2 per term) per global read (Section 5.1).

        The naive kernel's CGMA is 1.0; a full tile of TILE_WIDTH gives TILE_WIDTH.
        0.0 before any load.
        """
        valid = int(self.thread_valid.sum())
        return 2.0 * valid * self.terms_loaded / self.loads_so_far if self.loads_so_far else 0.0


_SLOT_OF_ACCESS = {
    Access.LOADED: SlotState.LOADED,
    Access.ZERO_FILL: SlotState.ZERO,
    Access.WRONG_ELEMENT: SlotState.WRONG,
    Access.OUT_OF_ALLOCATION: SlotState.SKIPPED,
    Access.NOT_RECORDED: SlotState.EMPTY,
}

_LINE_PATTERNS = {
    "phase": r"for ph in",
    # Fig. 5.9 / 5.13 index Mds[ty, tx] (the contrast kernels Mds[tx, ty]); Fig. 5.14's
    # sections Mds[ty * TILE_WIDTH + tx].
    Sub.LOAD_M: r"Mds\[(t[xy], t[xy]|ty \* TILE_WIDTH \+ tx)\] = M\[",
    Sub.LOAD_N: r"Nds\[(t[xy], t[xy]|ty \* TILE_WIDTH \+ tx)\] = N\[",
    "sync": r"cuda\.syncthreads\(\)",
    Sub.K: r"Pvalue \+=",
    Sub.WRITE_P: r"P\[.*\] = Pvalue",
    "zero_m": r"Mds\[(t[xy], t[xy]|ty \* TILE_WIDTH \+ tx)\] = float32\(0\)",
    "zero_n": r"Nds\[(t[xy], t[xy]|ty \* TILE_WIDTH \+ tx)\] = float32\(0\)",
}


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


def source_lines(source: str) -> dict:
    """Where the steps of Fig. 5.9 / 5.13 sit in a kernel's source (0-based lines).

    Returns a dict with keys of :class:`Sub` (and 'phase', 'sync1', 'sync2',
    'zero_m', 'zero_n'); a key is missing when its line is absent (the naive
    kernel has no loads into shared memory).

    Parameters
    ----------
    source : str
        A kernel's source, as the replay shows it.
    """
    lines = source.splitlines()
    out: dict = {}
    syncs = []
    for i, line in enumerate(lines):
        for key, pat in _LINE_PATTERNS.items():
            if re.search(pat, line):
                if key == "sync":
                    syncs.append(i)
                else:
                    out.setdefault(key, i)
    if len(syncs) >= 2:
        out[Sub.ARRIVE_1] = out[Sub.RELEASE_1] = syncs[0]
        out[Sub.ARRIVE_2] = out[Sub.RELEASE_2] = syncs[1]
    if "phase" in out:
        out[Sub.PHASE] = out["phase"]
    return out


class Replay:
    """The steps of one block of a trace, each turned into a :class:`Frame` on demand.

    Parameters
    ----------
    trace : Trace
    block : (by, bx)
        A block recorded per thread (``trace.has_block``).
    granularity : {'substep', 'phase'}
    order : {'lockstep', 'recorded'}
        Recorded order unfolds barrier arrivals as the trace recorded them
        (``%clock64`` cycles when the trace has them, else the logical clock).
    focus : (ty, tx), optional
        A thread to follow: its loads and k-loop reads are marked in frames.
    transactions : bool
        Frames carry the memory-transactions view
        (:class:`~vizmm.analysis.transactions.TransactionsOverlay`): the
        current warp's sectors and segments, the banks at each ``k``, a row per
        warp and the totals. Off by default.
    warp : int
        The current warp of that view when no thread is followed (a followed
        thread's warp otherwise).

    Raises
    ------
    ValueError
        For an unknown granularity or order, a naive-kernel trace (it has no
        tiles to replay), a focus thread outside the block, or a warp outside
        ``0 .. ceil(T*T / 32) - 1``.
    KeyError
        When the block was not recorded per thread.
    """

    def __init__(
        self,
        trace: Trace,
        block=(0, 0),
        granularity: str = "substep",
        order: str = "lockstep",
        focus: tuple[int, int] | None = None,
        transactions: bool = False,
        warp: int = 0,
    ):
        if granularity not in GRANULARITIES:
            raise ValueError(f"granularity must be one of {GRANULARITIES}, got {granularity!r}")
        if order not in ORDERS:
            raise ValueError(f"order must be one of {ORDERS}, got {order!r}")
        if trace.kernel == "naive":
            raise ValueError(NAIVE_REFUSAL)
        T = trace.tile_width
        if focus is not None:
            focus = (int(focus[0]), int(focus[1]))
            if not (0 <= focus[0] < T and 0 <= focus[1] < T):
                raise ValueError(f"focus thread {focus} is outside the {T} x {T} block")
        self.trace = trace
        self.block = (int(block[0]), int(block[1]))
        self.slot = trace.slot(self.block)
        self.granularity = granularity
        self.order = order
        self.focus = focus
        self.drop_barrier = tuple(trace.meta.get("drop_barrier", ()) or ())
        self.transactions = bool(transactions)
        nw = trace.launch.warps_per_block
        if isinstance(warp, bool) or not isinstance(warp, (int, np.integer)) or not 0 <= warp < nw:
            raise ValueError(
                f"warp must be an integer from 0 to {nw - 1} (32 threads each), got {warp!r}"
            )
        self.warp = int(warp)
        self.steps = self._build_steps()
        self.thread_states = thread_states_shown(trace.launch, granularity)
        self.slot_states = slot_states_shown(trace.launch)

    # ------------------------------------------------------------ structure
    def __len__(self) -> int:
        return len(self.steps)

    def _arrival_counts(self) -> list[int]:
        n = self.trace.launch.threads_per_block
        g = min(n, MAX_ARRIVAL_GROUPS)
        return sorted({ceil_div(n * (i + 1), g) for i in range(g)})

    def _build_steps(self) -> list[Step]:
        T = self.trace.tile_width
        steps = [Step(Sub.START)]
        for ph in range(self.trace.n_phases):
            if self.granularity == "phase":
                steps.append(Step(Sub.PHASE, ph))
                continue
            steps += [Step(Sub.LOAD_M, ph), Step(Sub.LOAD_N, ph)]
            if 1 not in self.drop_barrier:  # the barrier lab may have removed it
                steps += self._barrier_steps(Sub.ARRIVE_1, ph)
                steps.append(Step(Sub.RELEASE_1, ph))
            steps += [Step(Sub.K, ph, k) for k in range(T)]
            if 2 not in self.drop_barrier:
                steps += self._barrier_steps(Sub.ARRIVE_2, ph)
                steps.append(Step(Sub.RELEASE_2, ph))
        steps.append(Step(Sub.WRITE_P))
        return steps

    def _barrier_steps(self, sub: Sub, ph: int) -> list[Step]:
        if self.order == "lockstep":
            return [Step(sub, ph, arrived=self.trace.tile_width**2)]
        return [Step(sub, ph, arrived=n) for n in self._arrival_counts()]

    def index_of(self, phase: int, sub: Sub | str = Sub.LOAD_M, k: int | None = None) -> int:
        """The step number of the first step of ``sub`` in ``phase`` (and ``k``).

        Parameters
        ----------
        phase : int
            The phase ``ph``, 0 to ``n_phases - 1``.
        sub : Sub or str
            The part of the phase (a :class:`Sub` or its value, e.g. ``'load M'``).
        k : int, optional
            The step of the k loop, for ``Sub.K``.

        Raises
        ------
        ValueError
            When no such step exists at this granularity.
        """
        sub = Sub(sub)
        for i, s in enumerate(self.steps):
            if s.sub == sub and s.phase == phase and (k is None or s.k == k):
                return i
        raise ValueError(
            f"no step {sub.value!r} of phase {phase} at {self.granularity} granularity"
        )

    def index_at(self, step: Step) -> int:
        """The step number of this replay at the same moment as ``step``.

        ``step`` comes from a replay of the same block at another
        granularity or order: a whole phase maps to the end of its
        sub-steps (barrier 2 released), a sub-step to its phase, a barrier
        arrival to the arrival step with the nearest number of threads arrived.

        Parameters
        ----------
        step : Step
            A step of a replay of the same block, at any granularity and order.
        """
        steps = self.steps
        if step.sub == Sub.START:
            return 0
        if step.sub == Sub.WRITE_P:
            return len(steps) - 1
        if self.granularity == "phase":
            for i, s in enumerate(steps):
                if s.sub == Sub.PHASE and s.phase == step.phase:
                    return i
            return 0
        if step.sub == Sub.PHASE:  # a whole phase: its end in sub-steps (its last step,
            # barrier 2's release unless the barrier lab removed it)
            return max(i for i, s in enumerate(steps) if s.phase == step.phase)
        best, best_i = None, 0
        for i, s in enumerate(steps):
            if s.sub == step.sub and s.phase == step.phase and s.k == step.k:
                d = abs((s.arrived or 0) - (step.arrived or 0))
                if best is None or d < best:
                    best, best_i = d, i
        return best_i

    # ------------------------------------------------------------ precompute
    @cached_property
    def _dims(self):
        j, k, l = self.trace.shape
        return j, k, l, self.trace.tile_width

    @cached_property
    def _valid(self) -> np.ndarray:
        j, _, l, T = self._dims
        by, bx = self.block
        rows = by * T + np.arange(T)[:, None]
        cols = bx * T + np.arange(T)[None, :]
        return (rows < j) & (cols < l)

    @cached_property
    def _own(self) -> OwnBlock | None:
        """A user kernel's block as its threads really ran it (None: a book kernel)."""
        if not own_kernel(self.trace):
            return None
        try:
            return own_block(self.trace, self.block)
        except ValueError:  # no M, N and P to read the log as
            return None

    @cached_property
    def _p_element(self) -> np.ndarray:
        """(T, T, 2): the P element each thread stores (see :attr:`Frame.p_element`)."""
        _, _, _, T = self._dims
        if self._own is not None:
            return self._own.p_elements(T)
        by, bx = self.block
        return np.stack(
            np.meshgrid(by * T + np.arange(T), bx * T + np.arange(T), indexing="ij"), axis=-1
        ).astype(np.int64)

    @cached_property
    def _per_phase(self):
        """Per phase: slot states, sources and values of Mds and Nds after the loads."""
        tr = self.trace
        j, k, l, T = self._dims
        rec = tr.loads[self.slot]  # (nph, T, T, 6)
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
                origin = (self.block[0] * T, ph * T) if name == "M" else (ph * T, self.block[1] * T)
                loader = _loaders(row - origin[0], col - origin[1], kind, T)
                by_slot = np.unravel_index(loader, (T, T))
                state, src, val, kind, row, col = (
                    a[by_slot] for a in (state, src, val, kind, row, col)
                )
                entry[name] = (state, src, val, kind, row, col, loader.astype(np.int16))
            out.append(entry)
        return out

    @cached_property
    def _ranks(self):
        """Arrival rank (0 first) of each thread at each barrier: (nph, 2, T, T)."""
        tr = self.trace
        T = tr.tile_width
        ticks = tr.barrier_tick[self.slot][:, :, 0].astype(np.int64)  # (nph, 2, T, T)
        clocks = tr.barrier_clock[self.slot][:, :, 0]
        use_clock = tr.has_clocks and (clocks >= 0).all()
        ranks = np.full(ticks.shape, -1, np.int32)
        for ph in range(ticks.shape[0]):
            for b in range(2):
                t = ticks[ph, b].ravel()
                if (t < 0).any():
                    continue
                key = np.lexsort((t, clocks[ph, b].ravel())) if use_clock else np.argsort(t)
                r = np.empty(T * T, np.int32)
                r[key] = np.arange(T * T)
                ranks[ph, b] = r.reshape(T, T)
        return ranks

    @cached_property
    def _lines(self):
        return source_lines(self.trace.meta.get("source", ""))

    # ----------------------------------------------------------------- frame
    def frame(self, index: int) -> Frame:
        """The :class:`Frame` of step ``index`` (0 to ``len(self) - 1``).

        Parameters
        ----------
        index : int
            A step number, 0 to ``len(self) - 1``.

        Raises
        ------
        IndexError
            When ``index`` is out of range.
        """
        n = len(self.steps)
        if not -n <= index < n:
            raise IndexError(f"step must be 0..{n - 1}, got {index}")
        index %= n
        step = self.steps[index]
        tr = self.trace
        j, k, l, T = self._dims
        by, bx = self.block
        Row0, Col0 = by * T, bx * T
        valid = self._valid
        nph = tr.n_phases
        sub, ph = step.sub, step.phase

        # How far the block has got: phases whose loads happened, and whether
        # the current phase's M / N loads are done at this step.
        if sub == Sub.START:
            cur, m_loaded, n_loaded, terms_in_phase = None, False, False, 0
        elif sub == Sub.WRITE_P:
            cur, m_loaded, n_loaded, terms_in_phase = nph - 1, True, True, T
        else:
            cur = ph
            m_loaded = True
            n_loaded = sub != Sub.LOAD_M
            if sub == Sub.K:
                assert step.k is not None  # a k-loop step names its k
                terms_in_phase = step.k + 1
            elif sub in (Sub.ARRIVE_2, Sub.RELEASE_2, Sub.PHASE):
                terms_in_phase = T
            else:
                terms_in_phase = 0

        # Shared memory
        slots = {}
        loaders = {
            name: (
                self._per_phase[cur][name][6].copy()
                if cur is not None
                else np.arange(T * T, dtype=np.int16).reshape(T, T)
            )
            for name in ("M", "N")
        }
        for name, loaded in (("M", m_loaded), ("N", n_loaded)):
            state = np.zeros((T, T), np.int8)
            src = np.full((T, T, 2), -1, np.int32)
            val = np.full((T, T), np.nan, np.float32)
            now = np.zeros((T, T), bool)
            if cur is not None:
                if loaded:
                    state, src, val = (a.copy() for a in self._per_phase[cur][name][:3])
                    skipped = state == SlotState.SKIPPED
                    if cur > 0:  # a skipped load leaves the previous phase's element
                        pstate, psrc, pval = self._per_phase[cur - 1][name][:3]
                        src[skipped] = np.where(
                            (pstate[skipped] == SlotState.LOADED)[:, None]
                            | (pstate[skipped] == SlotState.WRONG)[:, None],
                            psrc[skipped],
                            -1,
                        )
                    now[:] = (
                        (sub == Sub.LOAD_M and name == "M")
                        or (sub == Sub.LOAD_N and name == "N")
                        or sub == Sub.PHASE
                    )
                elif cur > 0:
                    state, src, val = (a.copy() for a in self._per_phase[cur - 1][name][:3])
                    state[:] = SlotState.STALE
            slots[name] = (state, src, val, now)

        # Reads of the k loop
        mds_read = np.zeros((T, T), bool)
        nds_read = np.zeros((T, T), bool)
        if sub == Sub.K:
            mds_read[:, step.k] = True
            nds_read[step.k, :] = True

        # Pvalue: recorded after each phase; inside a phase, the previous
        # phase's value plus the products of the recorded slot values.
        pv_rec = tr.pvalue[self.slot]  # (nph, T, T)
        if cur is None:
            pvalue = np.zeros((T, T), np.float32)
        else:
            base = pv_rec[cur - 1] if cur > 0 else np.zeros((T, T), np.float32)
            if terms_in_phase == T:
                pvalue = pv_rec[cur].copy()
            elif terms_in_phase == 0:
                pvalue = base.copy()
            elif self._lab is not None:  # the values the threads really read
                rv = self._lab["values"][cur]  # (T, T, T(k), 2)
                acc = base.astype(np.float32).copy()
                for kk in range(terms_in_phase):
                    acc = (acc + rv[:, :, kk, 0] * rv[:, :, kk, 1]).astype(np.float32)
                pvalue = acc
            else:
                mv, nv = slots["M"][2], slots["N"][2]
                acc = base.astype(np.float32).copy()
                for kk in range(terms_in_phase):
                    acc = (acc + mv[:, kk][:, None] * nv[kk, :][None, :]).astype(np.float32)
                pvalue = acc
        done_phases_terms = 0 if cur is None else min(k, cur * T + terms_in_phase)
        finished = 0 if cur is None else cur + (1 if terms_in_phase == T else 0)
        phase_pvalues = pv_rec.copy()
        phase_pvalues[finished:] = np.nan

        # Threads
        rank = np.full((T, T), -1, np.int32)
        tstate = np.full((T, T), ThreadState.READY, np.int8)
        if sub in (Sub.LOAD_M, Sub.LOAD_N):
            tstate[:] = ThreadState.LOADING
        elif sub in (Sub.ARRIVE_1, Sub.ARRIVE_2):
            b = 0 if sub == Sub.ARRIVE_1 else 1
            rank = self._ranks[ph, b].copy()
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
            pw = tr.p_write[self.slot]
            tstate[:] = np.where(
                (pw == PWrite.WRITTEN) | (pw == PWrite.WRONG_ELEMENT),
                ThreadState.WRITING_P,
                ThreadState.IDLE,
            )

        # Matrices
        m_state = np.zeros((j, k), np.int8)
        n_state = np.zeros((k, l), np.int8)
        p_state = np.zeros((j, l), np.int8)
        m_thread = np.full((j, k), -1, np.int16)
        n_thread = np.full((k, l), -1, np.int16)
        ghosts: dict[str, list] = {"M": [], "N": []}
        last = cur if cur is not None else -1
        for p in range(last + 1):
            for name, grid_state, grid_thread in (
                ("M", m_state, m_thread),
                ("N", n_state, n_thread),
            ):
                st, src, val, kind, row, col, loader = self._per_phase[p][name]
                read = src[..., 0] >= 0
                rr, cc = src[..., 0][read], src[..., 1][read]
                if p < last:
                    grid_state[rr, cc] = np.maximum(grid_state[rr, cc], CellState.DONE)
                    continue
                loaded = m_loaded if name == "M" else n_loaded
                loading_now = (
                    (sub == Sub.LOAD_M and name == "M")
                    or (sub == Sub.LOAD_N and name == "N")
                    or sub == Sub.PHASE
                )
                if loaded:
                    grid_state[rr, cc] = CellState.LOADING if loading_now else CellState.TILE
                    if loading_now:
                        grid_thread[rr, cc] = loader[read]
                # ghost slots: the tile's positions outside the matrix
                nrows, ncols = (j, k) if name == "M" else (k, l)
                outside = (row >= nrows) | (col >= ncols)
                for ty, tx in np.argwhere(outside):
                    code = int(kind[ty, tx]) if loaded else int(Access.NOT_RECORDED)
                    wrapped = code == Access.WRONG_ELEMENT
                    ghosts[name].append(
                        Ghost(
                            int(row[ty, tx]),
                            int(col[ty, tx]),
                            code,
                            int(loader[ty, tx]),
                            bool(loaded and loading_now),
                            (int(src[ty, tx, 0]), int(src[ty, tx, 1])) if wrapped else None,
                        )
                    )
        if sub == Sub.K:
            for ty in range(T):
                r, c = slots["M"][1][ty, step.k]
                if r >= 0:
                    m_state[r, c] = CellState.READING
            for tx in range(T):
                r, c = slots["N"][1][step.k, tx]
                if r >= 0:
                    n_state[r, c] = CellState.READING
        own = self._own
        if own is None:
            prow = slice(Row0, min(j, Row0 + T))
            pcol = slice(Col0, min(l, Col0 + T))
            p_state[prow, pcol] = (
                CellState.DONE
                if sub == Sub.WRITE_P
                else CellState.COMPUTING
                if cur is not None
                else CellState.TILE
            )
            p_ghosts = [
                (Row0 + ty, Col0 + tx, ty * T + tx)
                for ty in range(T)
                for tx in range(T)
                if not (Row0 + ty < j and Col0 + tx < l)
            ]
        else:  # a user kernel: the elements its threads really computed and stored
            mark = own.stores if sub == Sub.WRITE_P else own.elements
            p_now = (
                CellState.DONE
                if sub == Sub.WRITE_P
                else CellState.COMPUTING
                if cur is not None
                else CellState.TILE
            )
            for got in mark.values():
                for x in got:
                    if 0 <= x[0] < j and 0 <= x[1] < l:
                        p_state[x[0], x[1]] = p_now
            p_ghosts = []
            valid = (self._p_element[..., 0] >= 0) | np.array(
                [[bool(own.elements.get((ty, tx))) for tx in range(T)] for ty in range(T)]
            )
        tiles = {
            "P": (Row0, Col0),
            "M": None if cur is None else (Row0, cur * T),
            "N": None if cur is None else (cur * T, Col0),
        }

        # Followed thread
        m_focus = np.zeros((j, k), bool)
        n_focus = np.zeros((k, l), bool)
        p_focus = np.zeros((j, l), bool)
        mds_focus = np.zeros((T, T), bool)
        nds_focus = np.zeros((T, T), bool)
        if self.focus is not None:
            fy, fx = self.focus
            pr, pc = (int(v) for v in self._p_element[fy, fx])
            if 0 <= pr < j and 0 <= pc < l:
                p_focus[pr, pc] = True
            for name, subs, sfocus, mfocus in (
                ("M", (Sub.LOAD_M, Sub.PHASE), mds_focus, m_focus),
                ("N", (Sub.LOAD_N, Sub.PHASE), nds_focus, n_focus),
            ):
                if sub in subs and cur is not None:
                    # the slot the followed thread fills
                    sy, sx = np.argwhere(self._per_phase[cur][name][6] == fy * T + fx)[0]
                    sfocus[sy, sx] = True
                    r, c = slots[name][1][sy, sx]
                    if r >= 0:
                        mfocus[r, c] = True
            if sub == Sub.K:
                mds_focus[fy, step.k] = True
                nds_focus[step.k, fx] = True
                r, c = slots["M"][1][fy, step.k]
                if r >= 0:
                    m_focus[r, c] = True
                r, c = slots["N"][1][step.k, fx]
                if r >= 0:
                    n_focus[r, c] = True

        # Counters
        loads_so_far = 0
        rec = tr.loads[self.slot]
        for p in range(last + 1):
            for base, loaded in ((0, m_loaded), (3, n_loaded)):
                if p < last or loaded:
                    kk = rec[p, :, :, base]
                    read = (kk == Access.LOADED) | (kk == Access.WRONG_ELEMENT)
                    loads_so_far += int(read.sum())
        if cur is None:
            terms_loaded = 0
        else:
            terms_loaded = min(k, (cur + (1 if n_loaded else 0)) * T)
        naive = 2 * int(valid.sum()) * terms_loaded

        line = self._lines.get(sub)
        lab = self._lab_marks(step)
        caption = self._caption(step, rank)
        if own is not None:
            caption += self._own_caption(step)
        elif lab["thread_wrong"] is not None and lab["thread_wrong"].any():
            n_bad = int(lab["thread_wrong"].sum())
            caption += (
                f" {n_bad} thread{'s' if n_bad > 1 else ''} read a wrong element: the barrier "
                "that would have ordered the read and the write was removed."
            )
            ahead = [
                f"({ty},{tx})" for ty, tx in zip(*np.nonzero(lab["thread_ahead"]), strict=True)
            ]
            caption += f" Ran ahead (▶): thread{'s' if len(ahead) > 1 else ''} {', '.join(ahead)}."
        return Frame(
            index=index,
            count=n,
            step=step,
            granularity=self.granularity,
            order=self.order,
            thread_states=self.thread_states,
            slot_states=self.slot_states,
            block=self.block,
            title=self._title(step),
            caption=caption,
            mds_state=slots["M"][0],
            nds_state=slots["N"][0],
            mds_src=slots["M"][1],
            nds_src=slots["N"][1],
            mds_value=slots["M"][2],
            nds_value=slots["N"][2],
            mds_now=slots["M"][3],
            nds_now=slots["N"][3],
            mds_read=mds_read,
            nds_read=nds_read,
            thread_state=tstate,
            thread_valid=valid.copy(),
            thread_rank=rank,
            pvalue=pvalue,
            m_state=m_state,
            n_state=n_state,
            p_state=p_state,
            m_thread=m_thread,
            n_thread=n_thread,
            tiles=tiles,
            ghosts=ghosts,
            p_ghosts=p_ghosts,
            focus=self.focus,
            m_focus=m_focus,
            n_focus=n_focus,
            p_focus=p_focus,
            mds_focus=mds_focus,
            nds_focus=nds_focus,
            loads_so_far=loads_so_far,
            naive_loads_so_far=naive,
            naive_loads_total=2 * int(valid.sum()) * k,
            terms_done=done_phases_terms,
            terms_loaded=terms_loaded,
            source_line=line,
            table_focus=self._table_focus(step),
            table_cursor=self._table_cursor(step),
            table_of=functools.partial(frame_table, self.trace, self.block),
            phase_pvalues=phase_pvalues,
            p_element=self._p_element.copy(),
            mds_loader=loaders["M"],
            nds_loader=loaders["N"],
            **lab,
            transactions=self._overlay(step, cur),
            key=(
                self.block,
                self.granularity,
                self.order,
                self.focus,
                self.transactions,
                self.warp,
                index,
            ),
        )

    @cached_property
    def _mt(self):
        return memory_transactions(self.trace)

    def _overlay(self, step: Step, cur: int | None) -> TransactionsOverlay | None:
        if not self.transactions:
            return None
        T = self.trace.tile_width
        warp = self.warp if self.focus is None else (self.focus[0] * T + self.focus[1]) // 32
        loads = {Sub.LOAD_M: ("M",), Sub.LOAD_N: ("N",), Sub.PHASE: ("M", "N")}.get(step.sub, ())
        k = step.k if step.sub == Sub.K else None
        return transactions_overlay(
            self._mt, self.trace, self.block, cur, loads=loads, k=k, warp=warp
        )

    # ----------------------------------------------------------- barrier lab
    @cached_property
    def _lab(self) -> dict | None:
        """The block's recorded reads and which of them were wrong (None without reads)."""
        tr = self.trace
        if self._own is not None and tr.shared_reads.size:
            return self._own_lab(self._own)
        if own_kernel(tr):  # a user kernel not read as M, N and P: no book's judgement
            return None
        mask = hz.wrong_read_mask(tr)
        if mask is None:  # no read records
            return None
        wrong = mask[self.slot]  # (nph, T, T, T, 2)
        return {
            "tags": tr.shared_reads[self.slot],
            "values": tr.read_values[self.slot],
            "expected": hz.book_reads(tr)[self.slot],
            "wrong": wrong,
            "p_wrong": hz.wrong_p(tr),
            "p_book": hz.book_p(tr)[self.slot],
            "ahead": _ahead_by_step(hz.ran_ahead(tr), self.block, tr.shape),
        }

    def _own_lab(self, own: OwnBlock) -> dict:
        """:attr:`_lab` of a user kernel: its reads judged against its own P elements.

        A factor is wrong where it is not the book's factor of the element its
        accumulator was stored into (:class:`vizmm.replay.own.OwnTerm`), not
        where it differs from Fig. 5.9's thread ``(ty, tx)``; which barrier
        is missing is not assumed (no "ran ahead" marks). ``raced`` /
        ``after_store``: the read's slot was stored by another thread in the
        same barrier epoch (and the read found that store's element).
        """
        tr = self.trace
        j, _k, l, T = self._dims
        shape = (tr.n_phases, T, T, T, 2)
        tags = np.full(shape, hz.TAG_NOT_RECORDED, np.int64)
        expected = np.full(shape, hz.TAG_NOT_RECORDED, np.int64)
        values = np.full(shape, np.nan, np.float32)
        wrong = np.zeros(shape, bool)
        raced = np.zeros(shape, bool)
        after = np.zeros(shape, bool)
        at_k: dict = defaultdict(list)  # (phase, ty, tx, k) -> every term there
        for (ty, tx), terms in own.terms.items():
            for t in terms:
                if not (0 <= t.phase < tr.n_phases and 0 <= t.k < T):
                    continue
                at = (t.phase, ty, tx, t.k)
                at_k[at].append(t)
                if tags[at][0] == hz.TAG_NOT_RECORDED:  # a coarsened thread's first term
                    tags[at], expected[at] = t.tags, t.book
                    values[at] = t.factors
                wrong[at] |= t.wrong
                raced[at] |= np.array(t.raced) & np.array(t.wrong)
                after[at] |= np.array(t.after_store) & np.array(t.wrong)
        ref = np.asarray(tr.M, np.float64) @ np.asarray(tr.N, np.float64)
        p_wrong = np.zeros((j, l), bool)
        for got in own.stores.values():
            for r, c, v in got:
                p_wrong[r, c] |= not np.isclose(v, ref[r, c], rtol=1e-6, atol=0.0)
        pe = self._p_element
        ok = (pe[..., 0] >= 0) & (pe[..., 0] < j) & (pe[..., 1] >= 0) & (pe[..., 1] < l)
        p_book = np.where(
            ok, ref[np.clip(pe[..., 0], 0, j - 1), np.clip(pe[..., 1], 0, l - 1)], np.nan
        )
        return {
            "tags": tags,
            "values": values,
            "expected": expected,
            "wrong": wrong,
            "raced": raced,
            "after": after,
            "p_wrong": p_wrong,
            "p_book": p_book.astype(np.float32),
            "ahead": {},
            "terms": dict(at_k),
        }

    def _own_caption(self, step: Step) -> str:
        """What a user kernel's wrong reads at this step were, in the book's terms.

        Per thread with a wrong factor (a term not of the P element its
        accumulator was stored into): read a slot before another thread
        stored into it, or after another thread overwrote it, with no
        ``__syncthreads()`` between the store and the read (a race); else a
        wrong term (the kernel stores or reads its tiles at other places).
        """
        lab = self._lab
        if lab is None:
            return ""
        T = self.trace.tile_width
        ks = [step.k] if step.sub == Sub.K else range(T) if step.sub == Sub.PHASE else []
        if not ks or "raced" not in lab:
            return ""
        ph = step.phase
        wrong = lab["wrong"][ph][:, :, list(ks)]  # (ty, tx, k, 2)
        raced = lab["raced"][ph][:, :, list(ks)]
        after = lab["after"][ph][:, :, list(ks)]
        before_store = (raced & ~after).any(axis=(2, 3))
        overwritten = after.any(axis=(2, 3))
        other = (wrong & ~raced).any(axis=(2, 3))

        def threads(n: int) -> str:
            return f"{n} thread{'s' if n > 1 else ''}"

        out = []
        if before_store.any():
            out.append(
                f"{threads(int(before_store.sum()))} read a slot before it was stored (no "
                "barrier between the store and the read)."
            )
        if overwritten.any():
            out.append(
                f"{threads(int(overwritten.sum()))} read a slot after another thread "
                "overwrote it (no barrier between the store and the read)."
            )
        if other.any():
            out.append(
                f"{threads(int(other.sum()))} multiplied an element that is not a term of "
                f"the P element {'they compute' if other.sum() > 1 else 'it computes'} "
                "(a wrong term)."
            )
        return "".join(" " + x for x in out)

    @cached_property
    def _struck(self) -> tuple:
        lines = self._lines
        out = []
        for b, key in ((1, Sub.ARRIVE_1), (2, Sub.ARRIVE_2)):
            if b in self.drop_barrier and key in lines:
                out.append(lines[key])
        return tuple(out)

    def _lab_marks(self, step: Step) -> dict:
        """The barrier lab's fields of a frame (see :class:`Frame`)."""
        out: dict[str, Any] = {
            "struck_lines": self._struck,
            "drop_barrier": self.drop_barrier,
            "mds_wrong": None,
            "nds_wrong": None,
            "thread_wrong": None,
            "wrong_notes": None,
            "slot_found": None,
            "p_wrong": None,
            "p_book": None,
            "thread_ahead": None,
            "ahead_notes": None,
            "thread_terms": None,
        }
        lab = self._lab
        if lab is None:
            return out
        T = self.trace.tile_width
        j, k_dim, l = self.trace.shape
        mds_wrong = np.zeros((T, T), bool)
        nds_wrong = np.zeros((T, T), bool)
        thread_wrong = np.zeros((T, T), bool)
        notes: dict = {}
        thread_ahead = np.zeros((T, T), bool)
        ahead_notes: dict = {}
        found: dict = {}
        # The reads of this k, or of every k of the phase at phase granularity.
        ks = [step.k] if step.sub == Sub.K else range(T) if step.sub == Sub.PHASE else []
        own_terms = lab.get("terms")
        terms_said: dict = {}
        for k in ks:
            ph = step.phase
            w = lab["wrong"][ph, :, :, k]  # (ty, tx, 2)
            thread_wrong |= w.any(axis=-1)
            mds_wrong[:, k] |= w[:, :, 0].any(axis=1)
            nds_wrong[k, :] |= w[:, :, 1].any(axis=0)
            if own_terms is not None:  # a user kernel: every term of this k, each judged
                self._own_marks(own_terms, ph, k, notes, found, terms_said)
                continue
            for ty, tx in zip(*np.nonzero(w.any(axis=-1)), strict=True):
                for a, (name, ncols) in enumerate((("Mds", k_dim), ("Nds", l))):
                    if w[ty, tx, a]:
                        got = int(lab["tags"][ph, ty, tx, k, a])
                        want = int(lab["expected"][ph, ty, tx, k, a])
                        here = _slot_found(
                            (int(ty), int(tx)),
                            name,
                            ncols,
                            T,
                            got,
                            lab["values"][ph, ty, tx, k, a],
                            want,
                            hz.tag_value(self.trace, want, name),
                        )
                        _add_note(notes, here.reader, here.words)
                        slot = (name, int(ty), k) if a == 0 else (name, k, int(tx))
                        if slot not in found or here.reader == self.focus:
                            found[slot] = here
            for who, note in lab["ahead"].get((ph, k), ()):
                thread_ahead[who] = True
                _add_note(ahead_notes, who, note)
        out.update(
            mds_wrong=mds_wrong,
            nds_wrong=nds_wrong,
            thread_wrong=thread_wrong,
            wrong_notes=notes,
            slot_found=found,
            thread_ahead=thread_ahead,
            ahead_notes=ahead_notes,
            thread_terms=terms_said if own_terms is not None and step.sub == Sub.K else None,
        )
        if step.sub == Sub.WRITE_P:
            out["p_wrong"] = lab["p_wrong"].copy()
            out["p_book"] = lab["p_book"]
        return out

    def _own_marks(self, terms: dict, ph, k, notes, found, said) -> None:
        """A user kernel's notes at one k: every term of each thread there, not the first.

        A coarsened thread adds one term per accumulator at each ``k``; each
        wrong factor of each gets its note (which P element it was for, what
        the read found, what that element's term needs) and its slot's
        :class:`SlotFound`; ``said`` gets every term in the book's words.
        """
        T = self.trace.tile_width
        _, k_dim, l = self.trace.shape
        for ty in range(T):
            for tx in range(T):
                for t in terms.get((ph, ty, tx, k), ()):
                    el = f"P_{{{t.element[0]},{t.element[1]}}}"
                    used = "·".join(
                        hz.describe_tag(t.tags[a], name, (k_dim, l)[a])
                        for a, name in enumerate(("Mds", "Nds"))
                    )
                    _add_note(said, (ty, tx), f"{el} += {used}")
                    for a, name in enumerate(("Mds", "Nds")):
                        if not t.wrong[a]:
                            continue
                        want = int(t.book[a])
                        here = _slot_found(
                            (ty, tx),
                            name,
                            (k_dim, l)[a],
                            T,
                            int(t.tags[a]),
                            t.factors[a],
                            want,
                            hz.tag_value(self.trace, want, name),
                            element=t.element,
                        )
                        _add_note(notes, (ty, tx), here.words)
                        slot = (name, int(t.slots[a][0]), int(t.slots[a][1]))
                        if slot not in found or here.reader == self.focus:
                            found[slot] = here

    def first_wrong_read(self) -> int | None:
        """Step number of the first k step at which a read returned a wrong element, or None."""
        lab = self._lab
        if lab is None:
            return None
        for i, s in enumerate(self.steps):
            if s.sub == Sub.K and lab["wrong"][s.phase, :, :, s.k].any():
                return i
        return None

    def frames(self):
        """Iterate over all frames in order."""
        for i in range(len(self.steps)):
            yield self.frame(i)

    # ---------------------------------------------------------------- words
    def _title(self, step: Step) -> str:
        tr = self.trace
        j, k, l = tr.shape
        shape = f"{j}x{k}" if (j == k == l) else f"M {j}x{k} · N {k}x{l}"
        where = f"block ({self.block[0]},{self.block[1]})"
        if step.sub == Sub.START:
            what = "start"
        elif step.sub == Sub.WRITE_P:
            what = "write P"
        elif step.sub == Sub.K:
            what = f"phase {step.phase} · k = {step.k}"
        elif step.sub == Sub.PHASE:
            what = f"phase {step.phase}"
        else:
            what = f"phase {step.phase} · {step.sub.value}"
        return (
            f"{tr.kernel} ({tr.meta.get('figure', '')}) · {shape} · TILE_WIDTH "
            f"{tr.tile_width} · {where} · {what}"
        )

    def _caption(self, step: Step, rank: np.ndarray) -> str:
        T = self.trace.tile_width
        n = T * T
        s = step.sub
        if s == Sub.START:
            return (
                "Every thread starts with Pvalue = 0; Mds and Nds hold whatever shared "
                "memory held (uninitialised)."
            )
        lay = LAYOUTS.get(self.trace.kernel)
        m_slot = "Mds[tx][ty]" if lay is not None and lay.m_store_transposed else "Mds[ty][tx]"
        n_slot = (
            "Nds[tx][ty]"
            if lay is not None and (lay.n_store_transposed or lay.nds_transposed)
            else "Nds[ty][tx]"
        )
        if s == Sub.LOAD_M:
            return (
                f"Phase {step.phase}: each thread (ty, tx) copies one M element into "
                f"{m_slot} (or 0.0 where the element is outside M)."
                + (" Roles swapped: a warp walks down columns of M." if "tx][ty" in m_slot else "")
            )
        if s == Sub.LOAD_N:
            return (
                f"Phase {step.phase}: each thread copies one N element into {n_slot} "
                "(or 0.0 where the element is outside N)."
                + (
                    " The tile is stored transposed; Nds is drawn in the book's layout."
                    if lay is not None and lay.nds_transposed
                    else ""
                )
            )
        if s in (Sub.ARRIVE_1, Sub.ARRIVE_2):
            which = 1 if s == Sub.ARRIVE_1 else 2
            why = (
                "no thread may read the tiles before all are loaded (read-after-write)"
                if which == 1
                else "no thread may overwrite the tiles while others still read them "
                "(write-after-read)"
            )
            if step.arrived is not None and step.arrived < n:
                return (
                    f"__syncthreads() #{which}: {step.arrived} of {n} threads have "
                    f"arrived and wait for {n - step.arrived} more: {why}."
                )
            return f"__syncthreads() #{which}: all {n} threads have arrived: {why}."
        if s in (Sub.RELEASE_1, Sub.RELEASE_2):
            which = 1 if s == Sub.RELEASE_1 else 2
            assert step.phase is not None  # a barrier's step names its phase
            nxt = (
                "the k loop"
                if which == 1
                else ("the next phase" if step.phase + 1 < self.trace.n_phases else "the P store")
            )
            return f"Barrier {which} releases all {n} threads together; they go on to {nxt}."
        if s == Sub.K:
            kk = step.k
            return (
                f"k = {kk}: Pvalue += Mds[ty][{kk}] * Nds[{kk}][tx], column {kk} of Mds "
                f"and row {kk} of Nds, read from shared memory."
            )
        if s == Sub.PHASE:
            return (
                f"Phase {step.phase}: the block loads one tile of M and one of N, waits, "
                f"and every thread adds {T} products to its Pvalue."
            )
        return (
            "Threads with a valid (Row, Col) store Pvalue into P; the others have no P "
            "element and store nothing."
        )

    def _table_cursor(self, step: Step) -> TableCursor:
        sub = step.sub
        if sub == Sub.START:
            return TableCursor(0, None, None, "start")
        if sub == Sub.WRITE_P:
            return TableCursor(self.trace.n_phases - 1, (None, "p_write"), None, "end")
        focus = self._table_focus(step)
        barrier_1 = sub in (Sub.ARRIVE_1, Sub.RELEASE_1)
        if focus is not None:
            role = {"M": "m_load", "N": "n_load", "P": "pvalue"}[focus[1]]
        else:
            role = "n_load" if barrier_1 else "pvalue"
        if sub in (Sub.PHASE, Sub.ARRIVE_2, Sub.RELEASE_2):
            last = "value"
        else:
            last = "n_load" if barrier_1 else role
        assert step.phase is not None  # every step between START and WRITE_P has a phase
        return TableCursor(
            step.phase, (step.phase, role) if focus is not None else None, last, "phase"
        )

    def _table_focus(self, step: Step):
        if step.sub in (Sub.LOAD_M,):
            return (step.phase, "M")
        if step.sub in (Sub.LOAD_N,):
            return (step.phase, "N")
        if step.sub in (Sub.K, Sub.PHASE, Sub.ARRIVE_2, Sub.RELEASE_2):
            return (step.phase, "P")
        return None


class SlotFound(NamedTuple):
    """What one racing read found in a shared slot (barrier lab, Section 5.4).

    Attributes
    ----------
    reader : (ty, tx)
        The reading thread.
    tag : int
        What it found: the linear index of an M / N element, or a ``TAG_*``
        of :mod:`vizmm.analysis.hazards` (zero-fill, never written).
    element : (row, col) or None
        The element of M (Mds) or N (Nds) the tag names; None for a sentinel.
    value : float
        The value the thread read (recorded).
    expected : int
        The tag the book's kernel finds there.
    expected_value : float
        That element's value (NaN: none, a slot never written).
    words : str
        ``"read M_{0,2} = 5 (phase 1) where the book's kernel reads M_{0,0} = 8"``.
    """

    reader: tuple[int, int]
    tag: int
    element: tuple[int, int] | None
    value: float
    expected: int
    expected_value: float
    words: str


def _slot_found(reader, array: str, ncols: int, T: int, got, value, want, want_value, element=None):
    """The :class:`SlotFound` of a racing read (``array`` 'Mds' or 'Nds').

    With ``element`` (a user kernel's term's P element) the words name it and
    its term instead of the book's kernel.
    """
    seen = hz.describe_tag(got, array, ncols)
    book = hz.describe_tag(want, array, ncols)
    phase = _tag_phase(got, 0 if array == "Mds" else 1, ncols, T)
    when = f" (phase {phase})" if phase is not None else ""
    held = _equals(value) if got >= -1 else f" (it held {format_value(value)})"
    words = f"read {seen}{held}{when} where the book's kernel reads {book}{_equals(want_value)}"
    if element is not None:
        words = (
            f"for P_{{{element[0]},{element[1]}}} read {seen}{held}{when} where its term "
            f"needs {book}{_equals(want_value)}"
        )
    element = divmod(int(got), ncols) if got >= 0 else None
    return SlotFound(reader, int(got), element, float(value), int(want), want_value, words)


def _equals(v: float) -> str:
    """`` = 5`` for a value, nothing for NaN (no value to name)."""
    return f" = {format_value(v)}" if v == v else ""


def _add_note(notes: dict, who: tuple[int, int], note: str) -> None:
    """Add ``note`` to a thread's notes (several joined by "; ")."""
    notes[who] = f"{notes[who]}; {note}" if who in notes else note


def _ahead_by_step(rows: np.ndarray, block: tuple[int, int], shape) -> dict:
    """``{(phase, k): [((ty, tx), note), ...]}``: who ran ahead at each k step of ``block``.

    ``rows`` are :func:`vizmm.analysis.hazards.ran_ahead`'s; the notes say it
    in the book's words (see :attr:`Frame.ahead_notes`).
    """
    _, k_dim, l = shape
    out: dict = {}
    sel = (rows["block"][:, 0] == block[0]) & (rows["block"][:, 1] == block[1])
    for r in rows[sel]:
        array = str(r["array"])
        ncols = k_dim if array == "Mds" else l
        slot = f"{array}[{r['slot'][0]}][{r['slot'][1]}]"
        reader = f"thread ({r['reader'][0]},{r['reader'][1]})"
        writer = f"thread ({r['writer'][0]},{r['writer'][1]})"
        ph, fp, ep = int(r["phase"]), int(r["found_phase"]), int(r["expected_phase"])
        want = hz.describe_tag(int(r["expected"]), array, ncols)
        got = hz.describe_tag(int(r["tag"]), array, ncols)
        if str(r["kind"]) == "RAW":
            seen = "a slot not written yet" if fp < 0 else f"phase {fp}'s {got}"
            note = (
                f"{reader} ran ahead: it read {slot} in phase {ph} before {writer} had stored "
                f"phase {ep}'s {want} there, and found {seen}"
            )
        else:
            note = (
                f"{writer} had already loaded phase {fp}'s {got} into {slot} while {reader} "
                f"still needed phase {ep}'s {want}"
            )
        who = (int(r["ahead"][0]), int(r["ahead"][1]))
        out.setdefault((ph, int(r["k"])), []).append((who, note))
    return out


def _tag_phase(tag: int, array: int, ncols: int, T: int) -> int | None:
    """The phase whose tile holds the element of ``tag`` (M: its column, N: its row)."""
    if tag < 0:
        return None
    row, col = divmod(tag, ncols)
    return (col if array == 0 else row) // T
