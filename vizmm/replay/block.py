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

import re
from collections.abc import Iterable
from functools import cached_property

import numpy as np

from ..analysis.transactions import memory_transactions
from ..trace import TILED_KERNELS, Trace, ceil_div
from . import states
from .frame import ASPECT_FIELDS, ASPECTS, AspectNotComputed, Frame, NotComputed
from .frame_aspects import frame_fields
from .frame_lab import SlotFound, block_lab
from .frame_memory import arrival_ranks, per_phase, phase_reads
from .own import OwnBlock, own_block
from .states import *  # noqa: F403  (re-exported: see __all__)
from .states import Step, Sub, slot_states_shown, thread_states_shown
from .table import own_kernel

__all__ = [
    "Frame",
    "Replay",
    "SlotFound",
    "ASPECTS",
    "ASPECT_FIELDS",
    "AspectNotComputed",
    "NotComputed",
    "GRANULARITIES",
    "ORDERS",
    "NAIVE_REFUSAL",
    "source_lines",
]
__all__ += states.__all__  # the steps and codes (Sub, Step, the states, what a legend lists)


GRANULARITIES = ("substep", "phase")
ORDERS = ("lockstep", "recorded")
MAX_ARRIVAL_GROUPS = 8  # arrival frames per barrier in recorded order
#: Why a trace of the naive kernel cannot be replayed (the one wording of it).
NAIVE_REFUSAL = (
    "the naive kernel (Fig. 3.11) has no tiles or phases to replay; record a tiled kernel "
    f"({', '.join(map(repr, TILED_KERNELS[:-1]))} or {TILED_KERNELS[-1]!r})"
)


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
    def _thread_valid(self) -> np.ndarray:
        """(T, T) bool: threads with a P element (a user kernel: one it computed or stored)."""
        own = self._own
        if own is None:
            return self._valid
        T = self.trace.tile_width
        return (self._p_element[..., 0] >= 0) | np.array(
            [[bool(own.elements.get((ty, tx))) for tx in range(T)] for ty in range(T)]
        )

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
    def _per_phase(self) -> list[dict]:
        """Per phase: slot states, sources and values of Mds and Nds after the loads."""
        return per_phase(self.trace, self.block, self.slot)

    @cached_property
    def _ranks(self) -> np.ndarray:
        """Arrival rank (0 first) of each thread at each barrier: (nph, 2, T, T)."""
        return arrival_ranks(self.trace, self.slot)

    @cached_property
    def _reads(self) -> np.ndarray:
        """Global reads of each phase's loads, of M and of N: (nph, 2)."""
        return phase_reads(self.trace, self.slot)

    @cached_property
    def _lines(self):
        return source_lines(self.trace.meta.get("source", ""))

    @property
    def struck_lines(self) -> tuple[int, ...]:
        """0-based lines of the kernel's source whose ``__syncthreads()`` was removed.

        The barrier lab's dropped barriers (``drop_barrier``), the same at
        every step (a frame's ``source`` aspect carries them too); empty for
        the book's kernel as written or a trace without its source.
        """
        return self._struck

    @cached_property
    def _struck(self) -> tuple:
        lines = self._lines
        out = []
        for b, key in ((1, Sub.ARRIVE_1), (2, Sub.ARRIVE_2)):
            if b in self.drop_barrier and key in lines:
                out.append(lines[key])
        return tuple(out)

    @cached_property
    def _mt(self):
        return memory_transactions(self.trace)

    @cached_property
    def _lab(self) -> dict | None:
        """The block's recorded reads and which of them were wrong (None without reads)."""
        return block_lab(self)

    # ----------------------------------------------------------------- frame
    def frame(self, index: int, aspects: Iterable[str] | None = None) -> Frame:
        """The :class:`Frame` of step ``index`` (0 to ``len(self) - 1``).

        Parameters
        ----------
        index : int
            A step number, 0 to ``len(self) - 1``.
        aspects : iterable of str, optional
            The aspects to make (keys of :data:`~vizmm.replay.frame.ASPECT_FIELDS`:
            ``caption``, ``slots``, ``threads``, ``matrices``, ``focus``,
            ``counters``, ``source``, ``table``, ``lab``, ``transactions``);
            None (the default): all of them. The fields of the others hold
            :class:`~vizmm.replay.frame.NotComputed` sentinels, which raise
            on use. Each aspect made is kept on the trace under the frame's
            key, so asking again (for it, or a frame with more aspects) is free.

        Raises
        ------
        IndexError
            When ``index`` is out of range.
        ValueError
            For an unknown aspect name.
        """
        n = len(self.steps)
        if not -n <= index < n:
            raise IndexError(f"step must be 0..{n - 1}, got {index}")
        index %= n
        key = (
            self.block,
            self.granularity,
            self.order,
            self.focus,
            self.transactions,
            self.warp,
            index,
        )
        return Frame(
            index=index,
            count=n,
            step=self.steps[index],
            granularity=self.granularity,
            order=self.order,
            thread_states=self.thread_states,
            slot_states=self.slot_states,
            block=self.block,
            focus=self.focus,
            drop_barrier=self.drop_barrier,
            key=key,
            **frame_fields(self, index, key, aspects),
        )

    def first_wrong_read(self) -> int | None:
        """Step number of the first k step at which a read returned a wrong element, or None."""
        lab = self._lab
        if lab is None:
            return None
        for i, s in enumerate(self.steps):
            if s.sub == Sub.K and lab["wrong"][s.phase, :, :, s.k].any():
                return i
        return None

    def frames(self, aspects: Iterable[str] | None = None):
        """Iterate over all frames in order (each with ``aspects``, as :meth:`frame`).

        Parameters
        ----------
        aspects : iterable of str, optional
            The aspects to make; None: all.
        """
        for i in range(len(self.steps)):
            yield self.frame(i, aspects)
