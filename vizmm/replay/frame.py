"""The frame: what a block is doing at one step, grouped into aspects a page may ask for.

:class:`Frame` is what every renderer draws (codes and arrays, no colours).
Its fields fall into aspects (:data:`ASPECT_FIELDS`), each made by one
function of the replay (:mod:`vizmm.replay.frame_aspects`), so that a page
makes only what it shows: ``Replay.frame(i, aspects={"caption", "slots"})``.
A field whose aspect was not asked for holds a :class:`NotComputed`
sentinel, which raises :class:`AspectNotComputed` on any use.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING, NoReturn, TypeVar

if TYPE_CHECKING:
    import numpy as np

    from ..analysis.transactions import TransactionsOverlay
    from .findings import FindingMarks
    from .states import SlotState, Step, ThreadState
    from .table import Table, TableCursor

__all__ = [
    "Frame",
    "ASPECTS",
    "ASPECT_FIELDS",
    "BASE_FIELDS",
    "AspectNotComputed",
    "NotComputed",
    "aspect_maker",
]

#: Fields every frame holds, whatever aspects were asked for (``finding`` is
#: None until :func:`vizmm.replay.findings.with_finding` sets it).
BASE_FIELDS: tuple[str, ...] = (
    "index",
    "count",
    "step",
    "granularity",
    "order",
    "thread_states",
    "slot_states",
    "block",
    "focus",
    "drop_barrier",
    "finding",
    "key",
)

#: Each aspect of a frame and the fields it fills (see :class:`Frame`).
ASPECT_FIELDS: dict[str, tuple[str, ...]] = {
    "caption": ("title", "caption"),
    "slots": (
        "mds_state",
        "nds_state",
        "mds_src",
        "nds_src",
        "mds_value",
        "nds_value",
        "mds_now",
        "nds_now",
        "mds_read",
        "nds_read",
        "mds_loader",
        "nds_loader",
    ),
    "threads": (
        "thread_state",
        "thread_valid",
        "thread_rank",
        "pvalue",
        "phase_pvalues",
        "p_element",
    ),
    "matrices": (
        "m_state",
        "n_state",
        "p_state",
        "m_thread",
        "n_thread",
        "tiles",
        "ghosts",
        "p_ghosts",
    ),
    "focus": ("m_focus", "n_focus", "p_focus", "mds_focus", "nds_focus"),
    "counters": (
        "loads_so_far",
        "naive_loads_so_far",
        "naive_loads_total",
        "terms_done",
        "terms_loaded",
    ),
    "source": ("source_line", "struck_lines"),
    "table": ("table_focus", "table_cursor", "table_of"),
    "lab": (
        "mds_wrong",
        "nds_wrong",
        "thread_wrong",
        "wrong_notes",
        "slot_found",
        "p_wrong",
        "p_book",
        "thread_ahead",
        "ahead_notes",
        "thread_terms",
    ),
    "transactions": ("transactions",),
}

#: The aspect names, in the order a whole frame makes them.
ASPECTS: tuple[str, ...] = tuple(ASPECT_FIELDS)

#: What every aspect's maker takes, documented once (:func:`aspect_maker`).
_MAKER_PARAMETERS = """

    Parameters
    ----------
    r : Replay
        The block replay.
    at : At
        The step whose fields are made.
    """

_Make = TypeVar("_Make", bound=Callable[..., dict])


def aspect_maker(make: _Make) -> _Make:
    """Mark ``make`` as the maker of an aspect: ``make(r, at)`` gives the aspect's fields.

    Every maker (:data:`vizmm.replay.frame_aspects.MAKERS`) takes the block
    replay and the step being made (:class:`vizmm.replay.frame_aspects.At`)
    and returns a dict of its aspect's fields; its docstring says what it
    makes, and this adds the Parameters section they all share.

    Parameters
    ----------
    make : callable
        The maker.

    Returns
    -------
    callable
        ``make`` itself.
    """
    make.__doc__ = (make.__doc__ or "").rstrip() + _MAKER_PARAMETERS
    return make


class AspectNotComputed(RuntimeError):
    """A field of a frame was used whose aspect the frame was not made with."""


class NotComputed:
    """What a field of a :class:`Frame` holds when its aspect was not asked for.

    Any use but ``is``, ``isinstance`` and ``repr`` raises
    :class:`AspectNotComputed`, naming the field and the aspect to ask for.

    Parameters
    ----------
    field : str
        The field of :class:`Frame`.
    aspect : str
        Its aspect (a key of :data:`ASPECT_FIELDS`).
    """

    __slots__ = ("field", "aspect")

    def __init__(self, field: str, aspect: str):
        object.__setattr__(self, "field", field)
        object.__setattr__(self, "aspect", aspect)

    def _fail(self, *_args, **_kwargs) -> NoReturn:
        raise AspectNotComputed(
            f"Frame.{self.field} was not computed: make the frame with its aspect "
            f"{self.aspect!r} (Replay.frame(i, aspects={{..., {self.aspect!r}}}))"
        )

    def __getattr__(self, name: str) -> NoReturn:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)  # Python's own protocols (copy, pickle) look them up
        self._fail()

    def __repr__(self) -> str:
        return f"NotComputed({self.field!r}, {self.aspect!r})"

    def __reduce__(self):
        return (NotComputed, (self.field, self.aspect))

    __hash__ = object.__hash__
    __bool__ = __len__ = __iter__ = __contains__ = __getitem__ = __call__ = _fail
    __str__ = __format__ = __int__ = __float__ = __index__ = __array__ = _fail
    __eq__ = __ne__ = __lt__ = __le__ = __gt__ = __ge__ = _fail
    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = _fail
    __truediv__ = __rtruediv__ = __and__ = __rand__ = __or__ = __ror__ = __neg__ = _fail


@dataclasses.dataclass(frozen=True, eq=False)
class Frame:
    """What the block is doing at one step (neutral: codes and arrays, no colours).

    ``T`` is TILE_WIDTH, M is j x k, N is k x l, P is j x l. Thread index
    ``t = ty * T + tx`` identifies a thread wherever a frame names one (the
    palette colours threads by it).

    A frame is made of aspects (:data:`ASPECT_FIELDS`: ``caption``, ``slots``,
    ``threads``, ``matrices``, ``focus``, ``counters``, ``source``, ``table``,
    ``lab``, ``transactions``), each a group of the fields below; the fields
    of :data:`BASE_FIELDS` are always there. ``Replay.frame(i, aspects=...)``
    makes only the aspects asked for: every field of the others holds a
    :class:`NotComputed` sentinel, which raises :class:`AspectNotComputed` on
    any use (truth, length, iteration, indexing, arithmetic, comparison,
    formatting, an attribute, ``numpy.asarray``), so that a view drawn
    without its aspect fails at once instead of drawing stale data.
    :meth:`has` says whether an aspect was made.

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

    def has(self, aspect: str) -> bool:
        """Whether this frame holds ``aspect`` (a key of :data:`ASPECT_FIELDS`).

        Parameters
        ----------
        aspect : str
            An aspect name.

        Raises
        ------
        ValueError
            For a name that is not an aspect.
        """
        fields = ASPECT_FIELDS.get(aspect)
        if fields is None:
            raise ValueError(f"unknown aspect {aspect!r}; the aspects are {', '.join(ASPECTS)}")
        return not any(isinstance(getattr(self, f), NotComputed) for f in fields)

    @property
    def aspects(self) -> frozenset[str]:
        """The aspects this frame holds (all of :data:`ASPECTS` for ``Replay.frame(i)``)."""
        return frozenset(a for a in ASPECTS if self.has(a))
