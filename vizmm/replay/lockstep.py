"""Two replays in lockstep: the same phase and sub-step on both sides, where both have one.

Side-by-side views (TILE_WIDTH 2 against 4, the boundary kernel against the
unchecked one, with and without a barrier) step two :class:`~.block.Replay`
objects together. Each step of a replay is a *moment* of Fig. 5.9's loop:
``(phase, sub-step, k, share of threads arrived)``; the joint timeline holds
every moment of either replay in the loop's order, and at each one a replay
shows its latest step not after it. A moment only one side has (k = 2 of a
TILE_WIDTH 4 block, the second phase of a TILE_WIDTH 2 block that the
TILE_WIDTH 4 block does in one) leaves the other side where it was.
"""

from __future__ import annotations

import bisect

from .block import Replay, Step, Sub

__all__ = ["moment", "matching_step", "Lockstep"]

# Fig. 5.9's order within a phase; a whole phase (phase granularity) sits at its end.
_SUB_ORDER = {
    Sub.LOAD_M: 0,
    Sub.LOAD_N: 1,
    Sub.ARRIVE_1: 2,
    Sub.RELEASE_1: 3,
    Sub.K: 4,
    Sub.ARRIVE_2: 5,
    Sub.RELEASE_2: 6,
    Sub.PHASE: 7,
}


def moment(step: Step, tile_width: int) -> tuple:
    """Where ``step`` falls in Fig. 5.9's loop, as a key that sorts in the loop's order.

    Parameters
    ----------
    step : Step
        A step of a replay of a block of ``tile_width`` x ``tile_width`` threads.
    tile_width : int
        TILE_WIDTH of that replay (arrivals at a barrier count as a share of
        its ``tile_width ** 2`` threads).

    Returns
    -------
    tuple
        ``(0,)`` for the start, ``(2,)`` for the store of P, else
        ``(1, phase, sub-step rank, k or -1, share of threads arrived)``.
    """
    if step.sub == Sub.START:
        return (0,)
    if step.sub == Sub.WRITE_P:
        return (2,)
    arrived = 1.0 if step.arrived is None else step.arrived / tile_width**2
    k = -1 if step.k is None else step.k
    return (1, step.phase, _SUB_ORDER[step.sub], k, arrived)


def matching_step(step: Step, tile_width: int, replay: Replay) -> int:
    """The step of ``replay`` at the moment of ``step`` (its latest step not after it).

    ``step`` may come from a replay of another trace (another TILE_WIDTH,
    kernel or granularity). Returns a step number of ``replay`` (0 .. len - 1).

    Parameters
    ----------
    step : Step
        A step of a replay of another trace, or of this one.
    tile_width : int
        That replay's TILE_WIDTH.
    replay : Replay
        The replay whose step number is wanted.
    """
    keys = [moment(s, replay.trace.tile_width) for s in replay.steps]
    return max(0, bisect.bisect_right(keys, moment(step, tile_width)) - 1)


class Lockstep:
    """The joint timeline of two replays.

    Parameters
    ----------
    left, right : Replay
        Replays of blocks of any two tiled-kernel traces.

    Attributes
    ----------
    pairs : list of (int, int)
        For each joint step, the step number of ``left`` and of ``right``.
    moments : list of tuple
        The :func:`moment` of each joint step.

    Examples
    --------
    >>> both = Lockstep(Replay(t2), Replay(t4))            # doctest: +SKIP
    >>> i_left, i_right = both.pairs[5]                     # doctest: +SKIP
    """

    def __init__(self, left: Replay, right: Replay):
        self.left, self.right = left, right
        keys = []
        for r in (left, right):
            T = r.trace.tile_width
            keys.append([moment(s, T) for s in r.steps])
        self.moments = sorted(set(keys[0]) | set(keys[1]))
        self.pairs = [
            tuple(max(0, bisect.bisect_right(k, m) - 1) for k in keys) for m in self.moments
        ]

    def __len__(self) -> int:
        return len(self.pairs)

    def frames(self, index: int, aspects=None):
        """The (left, right) :class:`~.block.Frame` of joint step ``index``.

        Parameters
        ----------
        index : int
            A joint step, 0 to ``len(self) - 1``.
        aspects : iterable of str, optional
            The aspects to make of both frames (:meth:`~.block.Replay.frame`);
            None: all.

        Raises
        ------
        IndexError
            For an index outside ``0 .. len - 1``.
        """
        if not 0 <= index < len(self.pairs):
            raise IndexError(f"joint step {index} is outside 0..{len(self.pairs) - 1}")
        a, b = self.pairs[index]
        return self.left.frame(a, aspects), self.right.frame(b, aspects)

    def index_of(self, side: str, step: int) -> int:
        """The first joint step at which ``side`` ('left' or 'right') shows its step ``step``.

        Parameters
        ----------
        side : {'left', 'right'}
            Which replay.
        step : int
            A step number of that replay.
        """
        col = {"left": 0, "right": 1}[side]
        for i, pair in enumerate(self.pairs):
            if pair[col] == step:
                return i
        raise ValueError(f"the {side} replay has no step {step}")
