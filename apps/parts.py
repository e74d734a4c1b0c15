"""Pieces the apps share: a page's header, a recording form's inputs, timers, the play button.

And :class:`PageScript`, the base of the pages' invisible scripts (keyboard
shortcuts, the theme, the window's size, the landmarks), whose scripts
combine: a class deriving from several is one component running them all.
"""

from __future__ import annotations

import textwrap
import threading
import urllib.parse
from collections.abc import Callable
from typing import Any, ClassVar

import panel as pn
from packaging.version import Version
from panel.custom import JSComponent

from vizmm.serve.memory import freeze, freezing, release_memory_soon, start_freezing

__all__ = [
    "Job",
    "MAX_URL_VALUE_CHARS",
    "PageScript",
    "TABLE_EXTENSIONS",
    "drop_long_url_values",
    "freeze_built_pages",
    "launch_inputs",
    "page_drawn",
    "page_header",
    "play",
    "on_page_closed",
    "on_press",
    "to_page",
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


class Job:
    """Work done off the page's event loop: its progress, its outcome, a way to stop it.

    ``work(job)`` runs in a thread (:meth:`start`) or here (:meth:`run`); it
    may say how far it is with :meth:`progress` and should stop soon after
    :attr:`cancel` is set. The page polls :attr:`finished` on a timer and then
    reads :attr:`result`, or :attr:`error` (the exception the work raised).

    Parameters
    ----------
    work : callable
        ``work(job) -> result``.
    name : str
        What the work is (a trace key, say), for the page and the thread.
    """

    def __init__(self, work: Callable[[Job], Any], name: str = "job"):
        self.work, self.name = work, name
        self.done = self.total = 0
        self.result: Any = None
        self.error: Exception | None = None
        self.finished = False
        self.cancel = threading.Event()

    def progress(self, done: int, total: int) -> None:
        """Say that ``done`` of ``total`` parts (blocks, say) are done; from any thread.

        Parameters
        ----------
        done, total : int
            Parts done and parts in all.
        """
        self.done, self.total = done, total

    @property
    def percent(self) -> int | None:
        """How far the work is, 0 to 100 (None until it has said)."""
        return int(100 * self.done / self.total) if self.total else None

    def run(self) -> None:
        """Do the work here; what it raises is kept as :attr:`error`."""
        try:
            self.result = self.work(self)
        except Exception as exc:  # noqa: BLE001 - the page says it in its words
            self.error = exc
        self.finished = True

    def start(self) -> None:
        """Do the work in a daemon thread named after it."""
        threading.Thread(target=self.run, name=f"vizmm-job-{self.name}"[:60], daemon=True).start()


def on_page_closed(*callbacks: Callable) -> None:
    """Call ``callbacks`` when this session's page closes, then release its memory.

    ``callback(session_context)`` each, then
    :func:`vizmm.serve.memory.release_memory_soon`; nothing outside a Bokeh
    server session.

    Parameters
    ----------
    *callbacks : callable
        What the page does as it closes (cancel its work, leave its class).
    """
    if pn.state.curdoc is None:
        return
    for callback in (*callbacks, release_memory_soon):
        pn.state.on_session_destroyed(callback)


def on_press(button: pn.widgets.Button, action: Callable[[], object], *, hold: bool = True) -> None:
    """Call ``action()`` when ``button`` is pressed, its changes reaching the page safely.

    Panel runs a button's click without the Bokeh document's lock when the
    click arrives while a widget's change still waits to be processed (a
    slider moved a moment before). A Bokeh model changed directly then (a
    scene's sources) raises in the server and the page never sees the step.
    So the action runs inside :func:`panel.io.hold` (Panel sends what it
    changed whether or not the lock is held), or, with ``hold=False``, on the
    next tick of the server's loop, under the lock (for changes that must
    reach the page one by one, e.g. a source replaced and then patched).
    Outside a served page it runs at once.

    Parameters
    ----------
    button : panel.widgets.Button
        The button.
    action : callable
        What a press does; called with no arguments, its result ignored.
    hold : bool, default True
        Send the action's changes as one held batch (True) or run it under the
        document's lock on the next tick (False).
    """

    def run() -> None:
        action()

    def pressed(event) -> None:
        if hold:
            with pn.io.hold():
                run()
        else:
            pn.state.execute(run, schedule=True)

    button.on_click(pressed)


def to_page(doc, callback: Callable[[], object]) -> bool:
    """From a worker thread: run ``callback`` on the page's next tick, unless it has closed.

    A page closed while its work ran has a destroyed document: Bokeh takes
    no callback for it (and the served script's module, its globals, is
    cleared). The work's result is then dropped, quietly, as
    :meth:`vizmm.serve.listeners.PageListeners.wake` drops a wake of a page
    closing at that moment. A worker of a served script binds this function
    (and every global it needs after waiting) before its thread starts.

    Parameters
    ----------
    doc : bokeh.document.Document
        The page's document (``pn.state.curdoc`` when the work began).
    callback : callable
        What the page does with the work's outcome; called with no arguments.

    Returns
    -------
    bool
        Whether the page will run ``callback`` (False: it has closed).
    """
    if doc.session_context is None:  # destroyed: the page has closed
        return False
    try:
        doc.add_next_tick_callback(callback)
    except Exception:  # noqa: BLE001 - its document being destroyed at this moment
        return False
    return True


def page_drawn(served: bool) -> threading.Event:
    """An event set once this session's browser has drawn its first document.

    Call it while the page is built. Panel's ``onload`` (BokehJS's
    ``document_ready``) sets it; outside a served session it is set at once.
    Work finished in a thread waits for it before it changes the page: models
    that arrive while the browser still lays out the first document can break
    BokehJS (its tables, its layout). A page closed before it was drawn sets
    it too, so that such work stops waiting and finds the page closed
    (:func:`to_page`) instead of holding its result for the wait's timeout.

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
        pn.state.on_session_destroyed(lambda context: drawn.set())
        if freezing():
            pn.state.onload(freeze)
    else:
        drawn.set()
    return drawn


def page_header(title: str, *widgets) -> pn.Row:
    """A page's header: its level-one heading ``vizmm · title`` and the widgets beside it.

    The heading is the page's ``<h1>`` (screen readers list pages by it),
    drawn at the size of the ``###`` it replaced.

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
    heading = pn.pane.Markdown(
        f"# vizmm · {title}",
        margin=(10, 10, 0, 10),
        stylesheets=["h1 { font-size: 1.17em; font-weight: bold; margin: 0.6em 0 0.4em; }"],
    )
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

    def call() -> None:  # what it returns (a tick's "still playing") is not Panel's
        callback()

    return pn.state.add_periodic_callback(call, period=period_ms)


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


def freeze_built_pages() -> None:
    """From now on, take the pages built so far out of the collector's walks, page by page.

    :func:`vizmm.serve.memory.freeze` runs when a new session starts, before
    its page is built, and again when a page has been drawn (Panel's
    ``onload``, :func:`page_drawn`); :func:`vizmm.serve.memory.release_memory`
    unfreezes, collects and freezes what is left when pages close. Why: see
    :mod:`vizmm.serve.memory`.

    Call it in a server process before it listens (a ``--setup`` script): it
    adds a session-created callback, which Panel refuses inside a session.
    """
    if start_freezing():
        pn.state.on_session_created(freeze)


def _module_of(scripts: list[str]) -> str:
    """The ESM module running each of ``scripts``' ``setup`` in turn, in an element hidden."""
    blocks = "".join(
        "{\n" + textwrap.indent(textwrap.dedent(js).strip(), "  ") + "\n  SETUPS.push(setup);\n}\n"
        for js in scripts
    )
    return (
        "const SETUPS = [];\n"
        + blocks
        + "export function render(props) {\n"
        + '  props.el.style.display = "none";\n'
        + "  for (const setup of SETUPS) setup(props);\n"
        + "}\n"
    )


class PageScript(JSComponent):
    """An invisible component running a script in the page; several combine into one.

    A subclass gives its script as ``_script``: JavaScript defining
    ``function setup({ model, el })``, called when the component is drawn
    (its element hidden) with the arguments of a ``JSComponent``'s
    ``render``. The class's ESM module (its ``_esm``, set when the class is
    made: a subclass gives none) is made of the ``_script`` of each class it
    derives from, its bases left to right, each in a block of its own (its
    names cannot clash with another's). A class deriving from
    several page scripts is therefore one component that runs each of them,
    with all their parameters, and that the page holds as one pair of Bokeh
    models instead of one pair per script.

    Parameters
    ----------
    **params
        The component's parameters; ``height``, ``width`` and ``margin`` are 0
        unless given.
    """

    #: JavaScript defining ``function setup({ model, el })`` (empty: none of its own).
    _script: ClassVar[str] = ""

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        scripts = [vars(c)["_script"] for c in cls.__mro__ if vars(c).get("_script")]
        if scripts:
            cls._esm = _module_of(scripts)

    def __init__(self, **params):
        params.setdefault("height", 0)
        params.setdefault("width", 0)
        params.setdefault("margin", 0)
        super().__init__(**params)
