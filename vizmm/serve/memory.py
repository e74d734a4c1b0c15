"""A server process's memory between classes: release after pages close, frozen built pages.

When a class closes its tabs, the pages' Bokeh models are cycles: without a
collection and glibc's ``malloc_trim`` the server's resident memory does not
come back down. :func:`release_memory_soon` (called as each session ends)
runs one :func:`release_memory` for many, :data:`RELEASE_DELAY_S` seconds
after the first; when no page is left it also empties the drawing caches
(:data:`vizmm.serve.caches.CACHES`), whose entries were made among the
pages' objects.

Thirty open pages are millions of objects, and a full collection walking
them all held the event loop for 0.5-0.8 s. :func:`start_freezing` (called
by the server's set-up before it listens) makes every page built from then on
leave the collector's walks (:func:`freeze`, run when a session starts and
when a page has been drawn); :func:`release_memory` unfreezes, collects and
freezes what is left.

This module draws nothing and imports neither Panel nor Bokeh: the pages
(``vizmm_apps.parts``) hand it the hooks' arguments (a session's context,
which says how many sessions its app has left).
"""

from __future__ import annotations

import ctypes
import gc
import threading

from .caches import CACHES

__all__ = [
    "RELEASE_DELAY_S",
    "freeze",
    "freezing",
    "give_back_memory",
    "live_sessions",
    "release_memory",
    "release_memory_soon",
    "start_freezing",
]

#: Seconds to wait, after a session closes, for the other sessions closing at the same time.
RELEASE_DELAY_S = 2.0

_lock = threading.Lock()
_release_pending = False
_server_contexts: set = set()  # the apps (dashboard, large view) whose sessions closed
_freezing = False


def release_memory_soon(session_context) -> None:
    """After a session closes: one :func:`release_memory` for many, on the event loop.

    A full collection takes a tenth of a second or more on a busy server:
    when a class closes thirty tabs, one runs :data:`RELEASE_DELAY_S`
    seconds after the first, not thirty.

    Parameters
    ----------
    session_context : bokeh.server.contexts.BokehSessionContext
        The session that ended (Panel's ``on_session_destroyed`` passes it):
        its ``server_context`` says how many sessions of its app are left.
        Anything without one only asks for a release.
    """
    global _release_pending
    server_context = getattr(session_context, "server_context", None)
    with _lock:
        if server_context is not None:
            _server_contexts.add(server_context)
        if _release_pending:
            return
        _release_pending = True
    from tornado.ioloop import IOLoop

    IOLoop.current().call_later(RELEASE_DELAY_S, release_memory)


def live_sessions() -> int:
    """Sessions alive now in the apps that have had a session closed (0: none left).

    Returns
    -------
    int
        The sum over those apps' server contexts of their sessions.
    """
    return sum(len(context.sessions) for context in list(_server_contexts))


def give_back_memory() -> None:
    """Collect cycles, then hand the C heap's free pages back to the system.

    ``gc.collect`` and glibc's ``malloc_trim(0)`` (nothing more where the C
    library is not glibc). Python's own allocator returns a megabyte arena
    only once nothing in it is alive; ``malloc_trim`` returns what NumPy and
    larger Python objects freed.
    """
    gc.collect()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # not glibc
        pass


def release_memory() -> int:
    """Give closed pages' memory back; empty the drawing caches if no page is left.

    Unfreezes everything (the closed pages' objects may be among the frozen
    ones), collects, trims the C heap, and freezes what is left again where
    :func:`start_freezing` was called.

    Returns
    -------
    int
        The drawing-cache entries dropped (0 while a page is still open).
    """
    global _release_pending
    with _lock:
        _release_pending = False
    dropped = 0 if live_sessions() else CACHES.clear()
    gc.unfreeze()
    give_back_memory()
    if _freezing:
        gc.freeze()
    return dropped


def freeze(*_session_context) -> None:
    """Take every object alive now out of the collector's walks (``gc.freeze``).

    Parameters
    ----------
    *_session_context
        Whatever the hook calling it passes (ignored).
    """
    gc.freeze()


def start_freezing() -> bool:
    """From now on, freeze the pages as they are built (see the module's text).

    Returns
    -------
    bool
        True the first time (the caller then adds :func:`freeze` to its
        framework's session-created hook); False after.
    """
    global _freezing
    with _lock:
        first, _freezing = not _freezing, True
    return first


def freezing() -> bool:
    """Whether :func:`start_freezing` has been called in this process.

    Returns
    -------
    bool
    """
    return _freezing
