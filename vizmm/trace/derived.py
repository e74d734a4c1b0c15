"""What is worked out from a trace, kept on the trace itself: as long as the trace lives, no longer.

A cache keyed on a trace (``functools.lru_cache(maxsize=16)`` of a function
taking a :class:`~vizmm.trace.Trace`) holds the trace: a server whose
catalogue let a trace go (:mod:`vizmm.serve.catalogue` keeps a bounded number
of bytes) still held up to sixteen of them through each such cache. Here the
results are kept in the trace's own ``__dict__`` instead (as the trace keeps
its arrays once made), a few per function: when the catalogue drops the
trace, what was worked out from it goes with it.

:func:`per_trace` is the decorator, :func:`kept` its explicit form;
:func:`derived_count` says how many results a trace holds.
"""

from __future__ import annotations

import collections
import functools
import threading
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["per_trace", "kept", "derived_count"]

_F = TypeVar("_F", bound=Callable[..., Any])
_LOCK = threading.Lock()
_SLOT = "_derived"


def per_trace(maxsize: int = 8) -> Callable[[_F], _F]:
    """Keep ``func(trace, *args)`` on ``trace``: the last ``maxsize`` results of each function.

    Traces are immutable, so a result worked out once holds for as long as
    the trace lives; it is stored in the trace's ``__dict__`` (under
    ``_derived``, one least-recently-used table per function) and goes with
    the trace. The other arguments must be hashable. Two threads asking at
    once may both work it out; the first result stored is kept.

    Parameters
    ----------
    maxsize : int
        Results kept per trace for one function (at least 1): a function
        keyed on a block keeps its last ``maxsize`` blocks.

    Returns
    -------
    callable
        The decorator. The decorated function's first argument must be a
        :class:`~vizmm.trace.Trace` (any object with a ``__dict__``).

    Raises
    ------
    ValueError
        When ``maxsize`` is smaller than 1.
    """
    if not isinstance(maxsize, int) or maxsize < 1:
        raise ValueError(f"maxsize must be a whole number of at least 1, got {maxsize!r}")

    def decorate(func: _F) -> _F:
        name = f"{func.__module__}.{func.__qualname__}"

        @functools.wraps(func)
        def wrapper(trace, *args):
            return kept(trace, name, args, lambda: func(trace, *args), maxsize)

        return wrapper  # type: ignore[return-value]

    return decorate


def kept(trace, name: str, key, make: Callable[[], Any], maxsize: int = 8):
    """``make()``, kept on ``trace`` under ``(name, key)``: the explicit form of :func:`per_trace`.

    For a result made from something the key leaves out (a frame's table,
    made once per block): ``kept(trace, "layout", block, lambda: ...)``.

    Parameters
    ----------
    trace : vizmm.trace.Trace
        The trace the result was worked out from.
    name : str
        Which result (one table of ``maxsize`` entries per name).
    key : hashable
        Which entry of that table.
    make : callable
        Makes the result when it is not kept yet.
    maxsize : int
        Entries kept under ``name`` on this trace (the last used).

    Returns
    -------
    object
        The kept result, or ``make()``'s.
    """
    table = _table(trace, name)
    with _LOCK:
        if key in table:
            table.move_to_end(key)
            return table[key]
    value = make()
    with _LOCK:
        if key in table:  # another thread stored it first
            return table[key]
        table[key] = value
        while len(table) > maxsize:
            table.popitem(last=False)
    return value


def _table(trace, name: str) -> collections.OrderedDict:
    store = trace.__dict__.get(_SLOT)
    if store is None:
        with _LOCK:
            store = trace.__dict__.setdefault(_SLOT, {})
    table = store.get(name)
    if table is None:
        with _LOCK:
            table = store.setdefault(name, collections.OrderedDict())
    return table


def derived_count(trace) -> int:
    """Results kept on ``trace`` by :func:`per_trace` functions (all functions together).

    Parameters
    ----------
    trace : vizmm.trace.Trace
        Any trace.

    Returns
    -------
    int
        The number of results stored on it.
    """
    return sum(len(t) for t in trace.__dict__.get(_SLOT, {}).values())
