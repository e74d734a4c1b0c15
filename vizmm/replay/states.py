"""The steps of a block replay and the states of its cells, slots and threads (codes).

What a :class:`~vizmm.replay.block.Replay` steps through (:class:`Step`, of a
kind :class:`Sub`: a sub-step of Fig. 5.9's loop, or a whole phase) and the
codes a :class:`~vizmm.replay.frame.Frame` holds for each element of M, N and
P (:class:`CellState`), each slot of Mds and Nds (:class:`SlotState`) and each
thread (:class:`ThreadState`). Plain enums and tuples: no colours.
"""

from __future__ import annotations

import dataclasses
import enum
from typing import NamedTuple

from ..trace import LaunchShape

__all__ = [
    "Sub",
    "SlotState",
    "ThreadState",
    "CellState",
    "Step",
    "Ghost",
    "thread_states_shown",
    "slot_states_shown",
]


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
