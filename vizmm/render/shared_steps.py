"""What a scene assigns for a step, worked out once per process and shared by every page.

A class steps through the same preset together: thirty pages go from step 4
to step 5 of one replay within a second of each other, and each page's
:meth:`~vizmm.render.bokeh_scene.Scene.update` would work out the same
columns (``frame_columns``), compare them with the same previous ones and
turn the same changed ones into arrays. Here the first page to take a step
keeps what it assigned, and every later page that takes the same step (same
trace, same frames before and after, same scene settings) assigns the same
arrays again, read-only, without working anything out.

A step is known by what the page showed before it and what it shows after:
each a scene's *signature* (its sources, palette, caption width and whether
the Fig. 5.8 table's future cells are left out) and a frame's
:attr:`~vizmm.replay.Frame.key`. What is kept is bounded in bytes
(:data:`MAX_BYTES`); the steps used longest ago are dropped first, and a
trace's steps are dropped when the trace is no longer held by anyone.
"""

from __future__ import annotations

import collections
import sys
import threading
import weakref
from typing import Any

import numpy as np

__all__ = ["MAX_BYTES", "SharedSteps", "STEPS"]

#: Bytes of assigned columns kept for every scene of the process (the arrays'
#: own bytes, and an estimate for the few columns that stay lists).
MAX_BYTES = 24 * 2**20

#: One step's assignments: ``(source name, whole, columns)`` for each source
#: that changes; ``whole`` is True where the source's data is replaced whole
#: (its length or its columns changed), False where ``columns`` are the
#: changed ones only, None for a text view's HTML (``{"html": str}``).
Assignments = tuple[tuple[str, bool | None, dict[str, Any]], ...]


def _nbytes(value: Any) -> int:
    if isinstance(value, np.ndarray):
        return value.nbytes
    if isinstance(value, str):
        return sys.getsizeof(value)
    return sys.getsizeof(value) + sum(sys.getsizeof(v) for v in value)


def frozen(assignments: list[tuple[str, bool | None, dict[str, Any]]]) -> tuple[Assignments, int]:
    """``assignments`` made safe to share: arrays read-only, lists as tuples' copies.

    Returns the shared form and its size in bytes (:func:`_nbytes`).

    Parameters
    ----------
    assignments : list of (str, bool or None, dict)
        ``(source name, whole, columns)`` as :meth:`vizmm.render.bokeh_scene.Scene.update`
        makes them.
    """
    out, size = [], 0
    for name, whole, columns in assignments:
        kept = {}
        for column, value in columns.items():
            if isinstance(value, np.ndarray):
                value.flags.writeable = False
            elif not isinstance(value, str):  # (a string is immutable)
                value = list(value)  # each page gets its own list (see SharedSteps.get)
            kept[column] = value
            size += _nbytes(value)
        out.append((name, whole, kept))
    return tuple(out), size


class SharedSteps:
    """Assignments of the steps taken so far, per trace, at most ``max_bytes`` in all.

    Parameters
    ----------
    max_bytes : int
        Bytes kept in all (default :data:`MAX_BYTES`); a step bigger than
        that is not kept.

    Notes
    -----
    Thread-safe. Keys hold the trace weakly: a trace no one holds any more
    takes its steps with it (dropped at the next call).
    """

    def __init__(self, max_bytes: int = MAX_BYTES):
        self.max_bytes = int(max_bytes)
        self._lock = threading.Lock()
        self._steps: collections.OrderedDict[tuple, tuple[Assignments, int]] = (
            collections.OrderedDict()
        )
        self._tokens: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        # Tokens of traces gone since: their steps are dropped at the next call.
        # (A trace may be collected while this thread holds the lock: its
        # finalizer only notes the token, it never waits for the lock.)
        self._gone: list[object] = []
        self._bytes = 0
        self.hits = 0
        self.misses = 0

    @property
    def bytes(self) -> int:
        """Bytes kept now (:data:`MAX_BYTES` at most)."""
        with self._lock:
            self._drop_gone()
            return self._bytes

    def _token(self, trace) -> object:
        token = self._tokens.get(trace)
        if token is None:
            token = self._tokens[trace] = object()
            weakref.finalize(trace, self._gone.append, token)
        return token

    def _drop_gone(self) -> None:
        """Drop the steps of traces gone (the lock held)."""
        while self._gone:
            token = self._gone.pop()
            for key in [k for k in self._steps if k[0] is token]:
                self._bytes -= self._steps.pop(key)[1]

    def get(self, trace, before: tuple | None, after: tuple) -> Assignments | None:
        """The assignments of the step from ``before`` to ``after`` of ``trace``, or None.

        Lists (the few columns that are not arrays) are copied for the
        caller, arrays are shared read-only.

        Parameters
        ----------
        trace : Trace
            The trace the scenes show.
        before : tuple or None
            ``(signature, frame key)`` of the step shown before; None for a
            scene that shows no frame yet.
        after : tuple
            ``(signature, frame key)`` of the step to show.
        """
        with self._lock:
            self._drop_gone()
            token = self._tokens.get(trace)
            entry = None if token is None else self._steps.get((token, before, after))
            if entry is None:
                self.misses += 1
                return None
            self._steps.move_to_end((token, before, after))
            self.hits += 1
        return tuple(
            (
                name,
                whole,
                {c: v if isinstance(v, (np.ndarray, str)) else list(v) for c, v in cols.items()},
            )
            for name, whole, cols in entry[0]
        )

    def put(self, trace, before: tuple | None, after: tuple, assignments) -> None:
        """Keep the assignments of a step (see :meth:`get`); the oldest go over ``max_bytes``.

        Parameters
        ----------
        trace : Trace
            The trace the scenes show.
        before, after : tuple or None
            As :meth:`get` takes them.
        assignments : list of (str, bool or None, dict)
            What the step assigned (:func:`frozen` makes the shared form).
        """
        shared, size = frozen(assignments)
        if size > self.max_bytes:
            return
        with self._lock:
            self._drop_gone()
            key = (self._token(trace), before, after)
            old = self._steps.pop(key, None)
            if old is not None:
                self._bytes -= old[1]
            self._steps[key] = (shared, size)
            self._bytes += size
            while self._bytes > self.max_bytes:
                self._bytes -= self._steps.popitem(last=False)[1][1]

    def clear(self) -> None:
        """Forget every step (and the counts of hits and misses)."""
        with self._lock:
            self._steps.clear()
            self._gone.clear()
            self._bytes = self.hits = self.misses = 0

    def __len__(self) -> int:
        with self._lock:
            self._drop_gone()
            return len(self._steps)


#: The steps every scene of this process shares.
STEPS = SharedSteps()
