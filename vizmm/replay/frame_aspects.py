"""How a frame is made, aspect by aspect, each kept under the frame's key.

:data:`MAKERS` gives, for each aspect of :data:`~vizmm.replay.frame.ASPECT_FIELDS`,
the function that makes its fields for one step (``maker(replay, at)`` returns
a dict of those fields; ``at.need(name)`` gives another aspect, made once).
:func:`frame_fields` makes the aspects a caller asks for and fills the other
fields with :class:`~vizmm.replay.frame.NotComputed` sentinels.

What is made is kept on the trace (:func:`vizmm.trace.derived.kept`: it goes
with the trace) under ``(frame key, aspect)``, the key of
:attr:`Frame.key <vizmm.replay.frame.Frame.key>` (block, granularity, order,
followed thread, transactions, warp, step), in one least-recently-used store
of at most :data:`KEPT_BYTES` bytes per trace: asking again for an aspect of
a frame, from this replay or another of the same block and settings, costs
nothing. Its arrays are made read-only, so that a caller cannot change what
another is given.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from ..trace.derived import kept
from . import frame_lab, frame_memory, frame_words
from .frame import ASPECT_FIELDS, ASPECTS, NotComputed
from .frame_memory import Progress, progress
from .states import Step

if TYPE_CHECKING:
    from .block import Replay

__all__ = ["MAKERS", "KEPT_BYTES", "At", "aspect_names", "frame_fields"]

#: Bytes of made aspects kept per trace (the least recently used go first).
KEPT_BYTES = 8 * 2**20


class _Maker(NamedTuple):
    make: Callable[[Replay, At], dict]
    kept: bool  # worth keeping (the cheap ones, and the table's maker of the table, are not)


#: The function that makes each aspect's fields for one step.
MAKERS: dict[str, _Maker] = {
    "caption": _Maker(frame_words.caption, True),
    "slots": _Maker(frame_memory.slots, True),
    "threads": _Maker(frame_memory.threads, True),
    "matrices": _Maker(frame_memory.matrices, True),
    "focus": _Maker(frame_memory.focus, True),
    "counters": _Maker(frame_memory.counters, True),
    "source": _Maker(frame_words.source, False),
    "table": _Maker(frame_words.table, False),  # table_of holds the trace
    "lab": _Maker(frame_lab.lab_marks, True),
    "transactions": _Maker(frame_memory.transactions, True),
}


class At:
    """One step of one replay while its frame is made.

    Parameters
    ----------
    replay : Replay
        The block replay.
    index : int
        The step number (0 to ``len(replay) - 1``).
    key : tuple
        The frame's key (:attr:`Frame.key <vizmm.replay.frame.Frame.key>`).

    Attributes
    ----------
    step : Step
        ``replay.steps[index]``.
    progress : Progress
        How far the block has got at the step.
    """

    def __init__(self, replay: Replay, index: int, key: tuple):
        self.replay = replay
        self.index = index
        self.key = key
        self.step: Step = replay.steps[index]
        self.progress: Progress = progress(
            self.step, replay.trace.n_phases, replay.trace.tile_width
        )
        self._store = _store(replay.trace)
        self._kept = self._store.frame(key)  # this frame's kept aspects (shared)
        self._made: dict[str, dict] = {}  # and the ones not kept

    def need(self, aspect: str) -> dict:
        """The fields of ``aspect`` at this step: kept, or made now (and kept).

        Parameters
        ----------
        aspect : str
            A key of :data:`MAKERS`.
        """
        maker = MAKERS[aspect]
        made = (self._kept if maker.kept else self._made).get(aspect)
        if made is None:
            made = maker.make(self.replay, self)
            if maker.kept:
                self._store.keep(self.key, self._kept, aspect, made)
            else:
                self._made[aspect] = made
        return made


def aspect_names(aspects: Iterable[str] | None) -> tuple[str, ...]:
    """The aspects to make, checked: all of them for None.

    Parameters
    ----------
    aspects : iterable of str, or None
        Aspect names (keys of :data:`~vizmm.replay.frame.ASPECT_FIELDS`).

    Raises
    ------
    ValueError
        For a name that is not an aspect, or a single string (a name is not a set of names).
    """
    if aspects is None:
        return ASPECTS
    if isinstance(aspects, str):
        raise ValueError(
            f"aspects must be a set of aspect names ({', '.join(ASPECTS)}), "
            f"not the string {aspects!r}"
        )
    wanted = set(aspects)
    unknown = sorted(wanted - set(ASPECTS))
    if unknown:
        raise ValueError(
            f"unknown aspect{'s' if len(unknown) > 1 else ''} {', '.join(map(repr, unknown))}; "
            f"the aspects are {', '.join(ASPECTS)}"
        )
    return tuple(a for a in ASPECTS if a in wanted)


def frame_fields(
    replay: Replay, index: int, key: tuple, aspects: Iterable[str] | None = None
) -> dict[str, Any]:
    """The fields of the frame of step ``index`` outside :data:`~vizmm.replay.frame.BASE_FIELDS`.

    The aspects asked for are made (or taken from the store); every field of
    the others is a :class:`~vizmm.replay.frame.NotComputed`.

    Parameters
    ----------
    replay : Replay
        The block replay.
    index : int
        A step number, 0 to ``len(replay) - 1``.
    key : tuple
        The frame's key.
    aspects : iterable of str, or None
        The aspects to make; None: all.

    Raises
    ------
    ValueError
        For an unknown aspect name.
    """
    names = aspect_names(aspects)
    at = At(replay, index, key)
    out: dict[str, Any] = {}
    for aspect, fields in ASPECT_FIELDS.items():
        if aspect in names:
            out.update(at.need(aspect))
        else:
            out.update({f: _MISSING[f] for f in fields})
    return out


_MISSING = {f: NotComputed(f, a) for a, fields in ASPECT_FIELDS.items() for f in fields}


class _Store:
    """Made aspects of one trace's frames by frame key, the last used first, at most KEPT_BYTES."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._frames: OrderedDict[tuple, dict[str, dict]] = OrderedDict()
        self._sizes: dict[tuple, int] = {}
        self._bytes = 0

    def frame(self, key: tuple) -> dict[str, dict]:
        """The aspects kept for the frame ``key`` (``{aspect: fields}``, empty at first)."""
        with self._lock:
            kept = self._frames.get(key)
            if kept is None:
                kept = self._frames[key] = {}
                self._sizes[key] = 0
            else:
                self._frames.move_to_end(key)
            return kept

    def keep(self, key: tuple, kept: dict, aspect: str, made: dict) -> None:
        """Keep ``made`` (its arrays made read-only) as ``aspect`` of frame ``key``."""
        size = 64 * len(made)
        for v in made.values():
            if type(v) is np.ndarray:
                v.setflags(write=False)
                size += v.nbytes
        kept[aspect] = made  # this frame's own dict: used to its end even if let go below
        with self._lock:
            if key not in self._sizes:  # let go while it was made
                return
            self._sizes[key] += size
            self._bytes += size
            while self._bytes > KEPT_BYTES and self._frames:
                gone, _ = self._frames.popitem(last=False)
                self._bytes -= self._sizes.pop(gone)


def _store(trace) -> _Store:
    """The store of made aspects kept on ``trace``."""
    return kept(trace, "vizmm.replay.frame_aspects.store", (), _Store, maxsize=1)
