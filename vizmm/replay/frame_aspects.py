"""How a frame is made, aspect by aspect.

:data:`MAKERS` gives, for each aspect of :data:`~vizmm.replay.frame.ASPECT_FIELDS`,
the function that makes its fields for one step (``maker(replay, at)`` returns
a dict of those fields; ``at.need(name)`` gives another aspect, made once per
frame). :func:`frame_fields` makes them all.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple

from . import frame_lab, frame_memory, frame_words
from .frame import ASPECTS
from .frame_memory import Progress, progress
from .states import Step

if TYPE_CHECKING:
    from .block import Replay

__all__ = ["MAKERS", "At", "frame_fields"]


class _Maker(NamedTuple):
    make: Callable[[Replay, At], dict]


#: The function that makes each aspect's fields for one step.
MAKERS: dict[str, _Maker] = {
    "caption": _Maker(frame_words.caption),
    "slots": _Maker(frame_memory.slots),
    "threads": _Maker(frame_memory.threads),
    "matrices": _Maker(frame_memory.matrices),
    "focus": _Maker(frame_memory.focus),
    "counters": _Maker(frame_memory.counters),
    "source": _Maker(frame_words.source),
    "table": _Maker(frame_words.table),
    "lab": _Maker(frame_lab.lab_marks),
    "transactions": _Maker(frame_memory.transactions),
}


class At:
    """One step of one replay while its frame is made.

    Parameters
    ----------
    replay : Replay
        The block replay.
    index : int
        The step number (0 to ``len(replay) - 1``).

    Attributes
    ----------
    step : Step
        ``replay.steps[index]``.
    progress : Progress
        How far the block has got at the step.
    """

    def __init__(self, replay: Replay, index: int):
        self.replay = replay
        self.index = index
        self.step: Step = replay.steps[index]
        self.progress: Progress = progress(
            self.step, replay.trace.n_phases, replay.trace.tile_width
        )
        self._made: dict[str, dict] = {}

    def need(self, aspect: str) -> dict:
        """The fields of ``aspect`` at this step, made once per frame.

        Parameters
        ----------
        aspect : str
            A key of :data:`MAKERS`.
        """
        made = self._made.get(aspect)
        if made is None:
            made = self._made[aspect] = MAKERS[aspect].make(self.replay, self)
        return made


def frame_fields(replay: Replay, index: int) -> dict[str, Any]:
    """The fields of the frame of step ``index`` outside :data:`~vizmm.replay.frame.BASE_FIELDS`.

    Parameters
    ----------
    replay : Replay
        The block replay.
    index : int
        A step number, 0 to ``len(replay) - 1``.
    """
    at = At(replay, index)
    out: dict[str, Any] = {}
    for aspect in ASPECTS:
        out.update(at.need(aspect))
    return out
