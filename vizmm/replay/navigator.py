"""Where a page is in a trace: block, followed thread, step, granularity and order.

Every view of a block replay (the dashboard, the notebook's view, the side by
side page, the quiz, the class mode, the command line) answers the same
questions when the person moves: is this block recorded per thread (or which
block to show instead), is this thread in the tile, which step of the new
replay is the same moment as the step shown (when the granularity or the order
changes), and where does a step past either end stop. :func:`place` answers
them once, from a wanted :class:`Position`, and returns a :class:`Place`: the
replay, the position it actually shows and, where the wish could not be kept,
a :class:`Note` saying why in the page's words.

Nothing here draws or holds widgets; it is pure NumPy-side bookkeeping over
:class:`~vizmm.replay.block.Replay`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sized

from ..trace import Trace, not_recorded_message
from .block import GRANULARITIES, NAIVE_REFUSAL, ORDERS, Replay, Step, Sub

__all__ = [
    "NO_DETAIL",
    "Note",
    "Place",
    "Position",
    "clamp",
    "default_block",
    "focus_in",
    "past_the_end",
    "place",
    "substep_moment",
]

#: What a page says of a trace with no block recorded per thread.
NO_DETAIL = (
    "This trace holds no block recorded per thread (aggregated only); there is nothing to "
    "replay thread by thread."
)


@dataclasses.dataclass(frozen=True)
class Note:
    """Something a page should say after a move: the text, and how loudly.

    Attributes
    ----------
    text : str
        One or two sentences, in the book's terms.
    kind : {'danger', 'warning', 'info'}
        ``danger``: nothing can be replayed; ``warning``: the wish was
        changed (another block shown).
    """

    text: str
    kind: str = "warning"


@dataclasses.dataclass(frozen=True)
class Position:
    """A place in a trace's block replay, as a person asked for it.

    Attributes
    ----------
    block : (by, bx)
        ``(blockIdx.y, blockIdx.x)`` of the replayed block.
    focus : (ty, tx) or None
        The followed thread (``(threadIdx.y, threadIdx.x)``), or None.
    step : int
        Step of the replay, 0-based (0 is the block's start).
    granularity : {'substep', 'phase'}
    order : {'lockstep', 'recorded'}
    """

    block: tuple[int, int] = (0, 0)
    focus: tuple[int, int] | None = None
    step: int = 0
    granularity: str = "substep"
    order: str = "lockstep"

    def __post_init__(self):
        if self.granularity not in GRANULARITIES:
            raise ValueError(
                f"granularity must be one of {GRANULARITIES}, got {self.granularity!r}"
            )
        if self.order not in ORDERS:
            raise ValueError(f"order must be one of {ORDERS}, got {self.order!r}")


@dataclasses.dataclass(frozen=True)
class Place:
    """What :func:`place` found: the replay to show, where in it, and what to say.

    Attributes
    ----------
    replay : Replay or None
        None when the trace cannot be replayed thread by thread (the naive
        kernel, an aggregated-only trace): :attr:`note` says why.
    position : Position
        The position shown: the block, thread and step actually used (the
        step clamped to ``0 .. len(replay) - 1``).
    note : Note or None
        Why the position differs from the one asked for (or why there is no
        replay); None when the wish was kept.
    """

    replay: Replay | None
    position: Position
    note: Note | None = None

    @property
    def count(self) -> int:
        """Steps of the replay (1 when there is none)."""
        return len(self.replay) if self.replay is not None else 1


def default_block(trace: Trace) -> tuple[int, int]:
    """The block a trace opens on: its first block recorded per thread.

    Parameters
    ----------
    trace : Trace
        Any trace.

    Raises
    ------
    ValueError
        When the trace holds no block recorded per thread.
    """
    if not len(trace.detail_blocks):
        raise ValueError(NO_DETAIL)
    by, bx = trace.detail_blocks[0]
    return int(by), int(bx)


def focus_in(trace: Trace, focus) -> tuple[int, int] | None:
    """``focus = (ty, tx)`` when it is a thread of the trace's tiles, else None.

    A block has TILE_WIDTH x TILE_WIDTH threads; ``-1`` or any value outside
    ``0 .. TILE_WIDTH - 1`` means no thread is followed.

    Parameters
    ----------
    trace : Trace
        Any trace.
    focus : tuple of (int, int) or None
        (ty, tx) as a page or a URL gave it.
    """
    if focus is None:
        return None
    T = trace.tile_width
    ty, tx = int(focus[0]), int(focus[1])
    return (ty, tx) if 0 <= ty < T and 0 <= tx < T else None


def clamp(step: int, replay: Replay | Sized | None) -> int:
    """``step`` held inside ``0 .. len(replay) - 1`` (0 when there is no replay).

    ``replay`` is a :class:`~vizmm.replay.block.Replay`, or anything with a
    length in steps (the side-by-side page's
    :class:`~vizmm.replay.lockstep.Lockstep`).

    Parameters
    ----------
    step : int
        A step number, 0-based.
    replay : Replay, sized or None
        A replay, or anything with a length in steps.
    """
    if replay is None:
        return 0
    return max(0, min(int(step), len(replay) - 1))


def past_the_end(step: int, count: int) -> str:
    """What a page says when asked for a step past the replay's last one.

    Pages number steps from 1 (``step + 1``), as the URL does.

    Parameters
    ----------
    step : int
        The step asked for, 0-based.
    count : int
        How many steps the replay has.
    """
    asked = str(int(step) + 1)
    asked = asked if len(asked) <= 12 else asked[:12] + "…"  # a URL may carry thousands
    return f"Step {asked} is past the last step of this replay ({count}); showing step {count}."


def place(
    trace: Trace,
    wanted: Position,
    previous: Place | None = None,
    *,
    same_moment: bool = False,
    new_trace: bool = False,
    transactions: bool = False,
) -> Place:
    """The replay and position a page shows when a person asks for ``wanted``.

    Parameters
    ----------
    trace : Trace
    wanted : Position
        What was asked for (from a control, a key, the URL or code).
    previous : Place, optional
        What the page showed before: its block is kept when the block asked
        for has no replay, and its moment when ``same_moment``.
    same_moment : bool
        The granularity or the order changed and the step did not:
        ``wanted.step`` is a step of ``previous``'s replay, and the new
        replay shows its step at the same moment (:meth:`Replay.index_at`),
        not the same step number.
    new_trace : bool
        ``trace`` replaces the previous one: a block without a replay falls
        back to the trace's first detailed block, silently unless it lies
        outside the grid.
    transactions : bool
        Build the replay with the memory-transactions view (the caller checks
        that the trace affords it).

    Returns
    -------
    Place
        The replay (None for the naive kernel or a trace with no detailed
        block), the position shown (block, thread and step corrected) and a
        note where the wish could not be kept.
    """
    if trace.kernel == "naive":
        refusal = Note(NAIVE_REFUSAL[0].upper() + NAIVE_REFUSAL[1:] + ".", "danger")
        return Place(None, dataclasses.replace(wanted, step=0), refusal)
    if not len(trace.detail_blocks):
        return Place(None, dataclasses.replace(wanted, step=0), Note(NO_DETAIL, "warning"))
    block = (int(wanted.block[0]), int(wanted.block[1]))
    note: Note | None = None
    old = previous.replay if previous is not None else None
    if old is not None and old.trace is not trace:
        old = None
    if not trace.has_block(block):
        fallback = old.block if old is not None and not new_trace else default_block(trace)
        gy, gx = trace.grid
        if not (0 <= block[0] < gy and 0 <= block[1] < gx):
            note = Note(
                f"Block ({block[0]},{block[1]}) is outside this trace's {gy} x {gx} grid "
                f"(by 0..{gy - 1}, bx 0..{gx - 1}); showing block "
                f"({fallback[0]},{fallback[1]})."
            )
        elif not new_trace:
            why = not_recorded_message(trace, block)
            note = Note(
                f"{why[0].upper()}{why[1:]}; still showing block ({fallback[0]},{fallback[1]})."
            )
        block = fallback
    focus = focus_in(trace, wanted.focus)
    replay = Replay(
        trace, block, wanted.granularity, wanted.order, focus, transactions=transactions
    )
    step = wanted.step
    if same_moment and old is not None and old.block == replay.block:
        step = replay.index_at(old.steps[clamp(wanted.step, old)])
    elif step >= len(replay) and note is None:
        note = Note(past_the_end(step, len(replay)), "info")
    shown = Position(block, focus, clamp(step, replay), wanted.granularity, wanted.order)
    return Place(replay, shown, note)


def substep_moment(trace: Trace, block: tuple[int, int], step: Step) -> int:
    """The step of the block's sub-step, lockstep replay at the moment of ``step``.

    What the quiz asks about: its questions are numbered by that replay's
    steps, whatever granularity and order the page shows. ``step`` is a step
    of a replay of ``block`` at any granularity and order
    (:meth:`Replay.index_at`); a whole phase (phase granularity) is taken
    from its first sub-step (loading M), since the question is about the
    phase shown, not the one after it.

    Parameters
    ----------
    trace : Trace
    block : (by, bx)
        A block recorded per thread.
    step : Step
        The step shown (``frame.step``).

    Returns
    -------
    int
        A step number of ``Replay(trace, block)`` (0-based).
    """
    replay = Replay(trace, block)
    if step.sub == Sub.PHASE and step.phase is not None:
        return replay.index_of(step.phase, Sub.LOAD_M)
    return replay.index_at(step)
