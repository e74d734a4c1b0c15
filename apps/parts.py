"""Pieces the apps share: a page's header, a recording form's inputs, timers, the play button."""

from __future__ import annotations

import threading
import urllib.parse
from collections.abc import Callable

import panel as pn
from packaging.version import Version

__all__ = [
    "MAX_URL_VALUE_CHARS",
    "TABLE_EXTENSIONS",
    "clear_drawing_caches",
    "drop_long_url_values",
    "freeze_built_pages",
    "give_back_memory",
    "launch_inputs",
    "page_drawn",
    "page_header",
    "play",
    "release_memory_soon",
    "replace_timer",
    "served_script",
]


def served_script(module_name: str) -> bool:
    """Whether the module of this name is a script ``panel serve`` runs for a new page.

    What ``pn.state.served`` answers, without its ``inspect.stack()``: Panel
    runs a served script as a module named ``bokeh_app_<hex>``, and that is
    what ``pn.state.served`` checks of its caller. Reading the whole call
    stack (and, through ``linecache``, the source of every file on it) for
    each new page costs the server CPU, and leaves those source lines in
    memory among the page's objects, where they keep the page's memory from
    being given back once it closes.

    Parameters
    ----------
    module_name : str
        The script's ``__name__``.
    """
    return module_name.startswith("bokeh_app_")


#: The Panel extensions a page names so that BokehJS can draw a Bokeh ``DataTable``
#: made after the page loaded (the large view's table of slowest blocks, built
#: once its trace is read): from Panel 1.10 a page gets BokehJS's tables bundle
#: only if its first document holds a table or the page names ``bokeh-tables``
#: (else "could not resolve type 'DataTable'"); Panel 1.9 always sends the bundle
#: and knows no such extension. Pass them to ``pn.extension`` with the page's own.
TABLE_EXTENSIONS: tuple[str, ...] = (
    ("bokeh-tables",) if Version(pn.__version__).release[:2] >= (1, 10) else ()
)

#: The longest value of a URL parameter a page reads (characters); the longest
#: meaningful one, a recording's key, is under 80.
MAX_URL_VALUE_CHARS = 200


def drop_long_url_values(location, limit: int = MAX_URL_VALUE_CHARS) -> list[str]:
    """Take over-long values out of a page's URL before anything converts them.

    Panel turns a parameter of digits into an ``int`` while it syncs the URL,
    and Python refuses more than 4,300 digits with a ``ValueError`` that
    blanks the page. Call this before ``location.sync``: every parameter
    whose name or value is longer than ``limit`` characters is removed from
    ``location.search`` (the rest is kept, in order), and named for the
    page's "Ignored in the URL" line.

    Parameters
    ----------
    location : panel.io.location.Location
        The session's ``pn.state.location``.
    limit : int
        The most characters a name or a value may have.

    Returns
    -------
    list of str
        ``"NAME=FIRST CHARACTERS… (over LIMIT characters)"`` for each value removed.
    """
    search = location.search or ""
    pairs = urllib.parse.parse_qsl(search.lstrip("?"), keep_blank_values=True)
    keep, dropped = [], []
    for name, value in pairs:
        if len(name) > limit or len(value) > limit:
            dropped.append(f"{name[:20]}={value[:12]}… (over {limit} characters)")
        else:
            keep.append((name, value))
    if dropped:
        location.search = "?" + urllib.parse.urlencode(keep) if keep else ""
    return dropped


def page_drawn(served: bool) -> threading.Event:
    """An event set once this session's browser has drawn its first document.

    Call it while the page is built. Panel's ``onload`` (BokehJS's
    ``document_ready``) sets it; outside a served session it is set at once.
    Work finished in a thread waits for it before it changes the page: models
    that arrive while the browser still lays out the first document can break
    BokehJS (its tables, its layout).

    Parameters
    ----------
    served : bool
        Whether the page is built in a Bokeh server session.

    Returns
    -------
    threading.Event
    """
    drawn = threading.Event()
    if served and pn.state.curdoc is not None:
        pn.state.onload(drawn.set)
        if _freezing_built_pages:
            pn.state.onload(_freeze)
    else:
        drawn.set()
    return drawn


def page_header(title: str, *widgets) -> pn.Row:
    """A page's header: ``### vizmm · title`` and the widgets beside it (the trace menu ...).

    Parameters
    ----------
    title : str
        What the page shows, after "vizmm · ".
    *widgets : Panel objects
        Shown right of the title, centred on it.

    Returns
    -------
    pn.Row
    """
    heading = pn.pane.Markdown(f"### vizmm · {title}", margin=(10, 10, 0, 10))
    return pn.Row(heading, *widgets, align="center")


def launch_inputs(form, parameters: list[str], widgets: dict, width: int):
    """The inputs of a recording form: kernel, sizes, TILE_WIDTH ... and k, l for 'general'.

    Parameters
    ----------
    form : param.Parameterized
        A form with parameters ``kernel``, ``k``, ``l`` and ``parameters``.
    parameters : list of str
        The parameters shown first; ``k`` and ``l`` follow, shown only for
        the general kernel (a square kernel's ``j`` gives all three sizes).
    widgets : dict
        Widget classes by parameter name (number inputs, radio buttons).
    width : int
        Width of both groups, pixels.

    Returns
    -------
    (pn.Param, pn.Param)
        The first inputs, and the ``k`` and ``l`` inputs.
    """
    general = pn.bind(lambda kernel: kernel == "general", form.param.kernel)
    first = pn.Param(
        form.param, parameters=parameters, widgets=widgets, show_name=False, width=width
    )
    sizes = pn.Param(
        form.param,
        parameters=["k", "l"],
        show_name=False,
        width=width,
        widgets={"k": pn.widgets.IntInput, "l": pn.widgets.IntInput},
        visible=general,
    )
    return first, sizes


def replace_timer(timer, callback: Callable[[], object] | None, period_ms: int = 200):
    """Stop ``timer`` (a periodic callback of the page, or None); start one if asked.

    Parameters
    ----------
    timer : panel.io.callbacks.PeriodicCallback or None
        The timer running now.
    callback : callable or None
        What the new timer calls every ``period_ms`` milliseconds; None
        starts none.
    period_ms : int, optional
        Milliseconds between calls.

    Returns
    -------
    panel.io.callbacks.PeriodicCallback or None
        The new timer, or None.
    """
    if timer is not None:
        timer.stop()
    if callback is None:
        return None
    return pn.state.add_periodic_callback(callback, period=period_ms)


def play(
    button,
    timer,
    tick: Callable[[], object],
    playing: bool,
    speed: float,
    shortest_ms: int,
    served: bool,
):
    """The play button's label and its timer, once playing starts, stops or changes speed.

    Parameters
    ----------
    button : pn.widgets.Button
        Labelled "⏸ pause" while playing, "▶ play" otherwise.
    timer : panel.io.callbacks.PeriodicCallback or None
        The play timer running now (stopped and replaced).
    tick : callable
        One step forward.
    playing : bool
        Whether to play.
    speed : float
        Steps per second.
    shortest_ms : int
        The shortest time between two steps, milliseconds.
    served : bool
        Whether the page runs in a server session (no timers without one).

    Returns
    -------
    panel.io.callbacks.PeriodicCallback or None
        The play timer now running.
    """
    button.label = "⏸ pause" if playing else "▶ play"
    if not served:
        return timer
    return replace_timer(timer, tick if playing else None, max(shortest_ms, int(1000 / speed)))


# Memory of closed sessions: one release for many (vizmm_apps.parts is imported once per
# process, unlike the app scripts that `panel serve` runs afresh for every session).
_release_pending = False
RELEASE_DELAY_S = 2.0  # seconds to wait for other sessions closing at the same time
_server_contexts: set = set()  # the apps (dashboard, large view) whose sessions closed

#: Modules whose ``functools`` caches hold what pages drew, shared by the pages
#: open at the time (labels, value texts, Fig. 5.8 tables, grids, colours): they
#: are filled again on demand, and dropped once no page is left.
DRAWING_CACHE_MODULES = ("vizmm.render.bokeh_scene", "vizmm.render.palette", "vizmm.trace.units")


def release_memory_soon(session_context) -> None:
    """After a session closes: collect cycles and hand freed pages back, once for many.

    A closed session's Bokeh models are cycles; without a collection and
    glibc's ``malloc_trim``, the server's resident memory does not come back
    down. A full collection takes a tenth of a second or more on a busy
    server: when a class closes thirty tabs, one runs :data:`RELEASE_DELAY_S`
    seconds after the first, not thirty on the event loop.

    When no session of these apps is left, the drawing caches go too
    (:func:`clear_drawing_caches`): their entries were made while the pages
    were built, among the pages' own objects, and Python's allocator returns
    a megabyte of memory to the system only when nothing in it is alive, so a
    few cached labels would keep most of the closed pages' memory.

    Parameters
    ----------
    session_context : bokeh.server.contexts.BokehSessionContext
        Passed by ``pn.state.on_session_destroyed``: its server context says
        how many sessions of its app are left.
    """
    global _release_pending
    server_context = getattr(session_context, "server_context", None)
    if server_context is not None:
        _server_contexts.add(server_context)
    if _release_pending:
        return
    from tornado.ioloop import IOLoop

    _release_pending = True
    IOLoop.current().call_later(RELEASE_DELAY_S, _release_memory)


def live_sessions() -> int:
    """Sessions alive now in the apps that have had a session closed (0: none left)."""
    return sum(len(context.sessions) for context in _server_contexts)


def clear_drawing_caches() -> int:
    """Empty the drawing caches and the scenes' shared steps; the entries dropped.

    The ``functools`` caches of :data:`DRAWING_CACHE_MODULES`, and the steps
    the scenes share (:data:`vizmm.render.shared_steps.STEPS`). Only what a
    page would compute again (and does, when it next draws); the traces of
    :data:`vizmm.serve.catalogue.CATALOGUE` and the barrier lab's findings, read
    before the server listens, stay.
    """
    import sys

    from vizmm.render.shared_steps import STEPS

    dropped = len(STEPS)
    STEPS.clear()
    for name in DRAWING_CACHE_MODULES:
        module = sys.modules.get(name)
        for obj in vars(module).values() if module is not None else ():
            info = getattr(obj, "cache_info", None)
            if callable(info) and callable(getattr(obj, "cache_clear", None)):
                dropped += info().currsize
                obj.cache_clear()
    return dropped


def give_back_memory() -> None:
    """Collect cycles, then hand the C heap's free pages back to the system.

    ``gc.collect`` and glibc's ``malloc_trim(0)`` (nothing more where the C
    library is not glibc). Python's own allocator returns a megabyte arena
    only once nothing in it is alive; ``malloc_trim`` returns what NumPy and
    larger Python objects freed.
    """
    import ctypes
    import gc

    gc.collect()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # not glibc
        pass


def _release_memory() -> None:
    import gc

    global _release_pending
    _release_pending = False
    if not live_sessions():
        clear_drawing_caches()
    gc.unfreeze()  # the closed pages' objects may be among the frozen ones
    give_back_memory()
    if _freezing_built_pages:
        gc.freeze()


#: Whether pages' objects leave the collector's walks once built (see
#: :func:`freeze_built_pages`; ``vizmm serve`` sets it in ``apps/preload.py``).
_freezing_built_pages = False


def _freeze(*_session_context) -> None:
    import gc

    gc.freeze()


def freeze_built_pages() -> None:
    """From now on, take the pages built so far out of the collector's walks, page by page.

    Python's collector walks every object of the oldest generation in a full
    collection, and starts one whenever that generation has grown by a
    quarter. Thirty open dashboard pages are millions of objects: a full
    collection then held the event loop for 0.5-0.8 s, eight times while a
    class of thirty arrived and again while it stepped
    (``benchmarks/load_test.py --clients protocol``: the slowest key presses).
    Here ``gc.freeze()`` runs when a new session starts, before its page is
    built, and again when a page has been drawn (Panel's ``onload``): what
    exists then, every page built so far with it, is no longer walked, and a
    full collection walks only what came after.

    The pages' cycles are still collected: when sessions close, the release
    of their memory (:func:`release_memory_soon`) unfreezes everything,
    collects, and freezes what is left (the libraries and the pages still
    open). Cycles that were already garbage when they were frozen wait for
    that release too.

    Call it in a server process before it listens (a ``--setup`` script): it
    adds a session-created callback, which Panel refuses inside a session.
    """
    global _freezing_built_pages
    if not _freezing_built_pages:
        _freezing_built_pages = True
        pn.state.on_session_created(_freeze)
