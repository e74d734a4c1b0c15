"""The vizmm dashboard: step through the tiled kernel of PMPP ch. 5, thread by thread.

Serve it with::

    panel serve apps/dashboard.py            # http://localhost:5006/dashboard

It opens on the book's Fig. 5.7/5.8 example (4 x 4 matrices, TILE_WIDTH 2).
Pick another example, record any shape in vizmm's simulator, or load a
trace file; then step with the buttons or the keys (← → space Home End, ``g``
for phases / sub-steps). The URL keeps the trace, block, followed thread,
step, granularity and order, so a bookmark brings the same slide back.

The app is thin: :class:`DashboardState` (a ``param.Parameterized``, in
:mod:`vizmm_apps.dashboard_state`) holds every choice and the current
:class:`~vizmm.replay.Frame`; the record form is
:mod:`vizmm_apps.record_form`'s, the upload box :mod:`vizmm_apps.upload`'s;
:class:`Dashboard` (a ``pn.viewable.Viewer``) builds the widgets and draws
frames with the shared Bokeh :class:`~vizmm.render.bokeh_scene.Scene`. More
tabs (views of a whole large launch, say) plug in through
:class:`Dashboard`'s ``views`` parameter (Panel's ``App(views=...)``
pattern) without touching the rest, and panels under the controls through its
``addons`` parameter; :func:`create_app` passes the large view, the
occupancy tab, the question mode and class sessions.

Heavy work (reading a trace, recording, decoding an upload) runs in a thread
off the server's event loop; traces come from the process's one
:data:`vizmm.serve.catalogue.CATALOGUE`, shared read-only by every session. A
recording the session no longer needs (another trace was asked for, or the
tab was closed) is cancelled.
"""

from __future__ import annotations

import functools
import html
import importlib.util
import io
import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import panel as pn
import param

from vizmm.record import RecordingCancelled
from vizmm.render.bokeh_scene import Scene
from vizmm.render.views import aspects_of
from vizmm.replay.narration import NARRATED_ASPECTS, narrate
from vizmm.serve import catalogue
from vizmm.serve.catalogue import CATALOGUE
from vizmm.trace import Trace
from vizmm_apps import (
    barrier_view,
    classroom,
    findings_view,
    large_view,
    occupancy_view,
    quiz,
)
from vizmm_apps.access import Narration, page_extension
from vizmm_apps.dashboard_state import KEYS, URL_PARAMS, DashboardState, in_page_words
from vizmm_apps.page_scripts import PageScripts
from vizmm_apps.parts import (
    TABLE_EXTENSIONS,
    Job,
    drop_long_url_values,
    on_page_closed,
    on_press,
    page_drawn,
    page_header,
    play,
    replace_timer,
    served_script,
)
from vizmm_apps.record_form import RecordForm
from vizmm_apps.upload import UploadBox

__all__ = ["DashboardState", "Dashboard", "RecordForm", "URL_PARAMS", "KEYS", "create_app"]

_KEY_NAMES = {"ArrowRight": "→", "ArrowLeft": "←", " ": "space", "Home": "Home", "End": "End"}


def _toggle_look(on: bool) -> dict:
    """A toggle's look: solid primary while on, outlined while off."""
    return {"color": "primary", "variant": "solid" if on else "outline"}


def _relabel(toggle, name: str) -> Callable:
    """A watcher giving ``toggle`` its look and a label saying its state ("✓ Presenter mode")."""

    def show(event) -> None:
        toggle.param.update(label=("✓ " if event.new else "") + name, **_toggle_look(event.new))

    return show


def _filled_when_opened(
    sections: dict[str, tuple[int, Callable[[], Any]]],
) -> tuple[pn.widgets.CheckButtonGroup, pn.Column]:
    """A row of toggle buttons and a column of the sections they open.

    Each section, a bold title over ``make()``, ``width`` pixels wide, is made
    when its button is first pressed; pressing the button again hides it (it
    stays made). Most visitors never open the record form, the upload or the
    export: a new session neither makes their widgets nor sends them until
    they are asked for, and its page holds the buttons alone (the dashboard
    adds the column when a section is first opened).

    Parameters
    ----------
    sections : dict
        Title (the button's label) -> ``(width, make)``, in the buttons' order.

    Returns
    -------
    tuple
        The buttons (a ``CheckButtonGroup``) and the column of the opened
        sections, in the buttons' order.
    """
    buttons = pn.widgets.CheckButtonGroup(
        options=list(sections),
        value=[],
        color="primary",
        variant="outline",
        # onto a second line where the window is narrower than the buttons
        stylesheets=[".bk-btn-group { flex-wrap: wrap; }"],
    )
    column = pn.Column()
    made: dict[str, pn.Column] = {}

    def opened(event) -> None:
        for title in event.new:
            if title not in made:
                width, make = sections[title]
                heading = pn.pane.HTML(
                    f"<h2 style='font-size: 1em; margin: 0'>{html.escape(title)}</h2>",
                    margin=(5, 10, 0, 10),
                )
                made[title] = pn.Column(heading, make(), width=width)
        with pn.io.hold():
            for title, section in made.items():
                section.visible = title in event.new
            shown = [made[t] for t in sections if t in made]
            if len(shown) > len(column.objects):  # a section made just now
                column.objects = shown

    buttons.param.watch(opened, "value")
    return buttons, column


def _keys_help() -> pn.pane.Markdown:
    """The 'Keys and clicks' section's table of keys and what clicks do."""
    keys_md = "\n".join(f"| `{_KEY_NAMES.get(k, k)}` | {v} |" for k, v in KEYS.items())
    return pn.pane.Markdown(
        "| key | does |\n|---|---|\n" + keys_md + "\n\nClick a **thread** to follow it "
        "(its loads and reads are outlined in blue), click a **block** to replay it. "
        "Hover any cell for its indices and value. The URL keeps this slide: bookmark "
        "it.",
        width=380,
    )


class _MadeOnFirstUse(dict):
    """A dict whose missing values are made by ``make(key)`` (then kept)."""

    def __init__(self, make: Callable[[str], object]):
        super().__init__()
        self._make = make

    def __missing__(self, key: str):
        value = self[key] = self._make(key)
        return value


def _what(key: str) -> str:
    """A trace key in words, for progress messages."""
    try:
        what = catalogue.parse_key(key)
    except ValueError:
        return key
    if isinstance(what, catalogue.RecordSpec):
        return what.describe()
    return catalogue.label_of(key)


# The dashboard's link to two replays side by side (``vizmm serve`` serves
# ``/side_by_side`` beside ``/dashboard``): a relative address, as the pages
# share one server. Made once per page (a model belongs to one document).
def side_by_side_link() -> pn.pane.HTML:
    """The link to ``/side_by_side`` shown in the dashboard's header."""
    return pn.pane.HTML(
        '<a id="vizmm-side-by-side-link" href="side_by_side" style="font-size:15px">'
        "Side by side: two replays in lockstep</a>",
        margin=(10, 10, 0, 10),
    )


#: Presenter mode: what the controls and margins take of the window (pixels,
#: width and height) and the smallest scene it draws.
PRESENTER_CHROME = (30, 130)
PRESENTER_MIN = (600, 400)
#: The normal page: what the controls, the question row, the status line, the
#: caption (two lines), the tabs and the margins take of the window (pixels,
#: width and height), and the smallest first screen its scene is fitted to.
PAGE_CHROME = (40, 260)
PAGE_MIN = (900, 360)


# ------------------------------------------------------------- dashboard
class Dashboard(pn.viewable.Viewer):
    """The page: controls, the Bokeh scene of the current frame, extra tabs.

    Parameters
    ----------
    state : DashboardState, optional
        A state to drive (a new one by default).
    served : bool, optional
        Whether it runs in a Bokeh server session (timers, threads for
        recordings, URL sync); by default ``pn.state.served``.
    """

    if TYPE_CHECKING:  # never None: __init__ makes one when none is given
        state: DashboardState
    else:
        state = param.ClassSelector(class_=DashboardState)
    views = param.List(
        default=[],
        doc="Extra tabs after 'Block replay': ``(title, factory)`` pairs, ``factory(state)`` "
        "returning a Panel object that reads (and may set) the shared DashboardState. An "
        "object with an ``on_zoom`` attribute gets a callable that brings 'Block replay' to "
        "the front.",
    )
    addons = param.List(
        default=[],
        doc="Panels under the controls (question mode, class sessions): ``factory(dashboard)`` "
        "returning a Panel object or None, called in order while the page is built; it may "
        "use ``scene_hooks``, ``tap_claims``, ``status_extras`` and ``state.pin``.",
    )

    def __init__(self, state: DashboardState | None = None, served: bool | None = None, **params):
        served = bool(pn.state.served) if served is None else served
        super().__init__(state=state or DashboardState(), **params)
        self._served = served
        # A result that arrives while the browser still lays out the first
        # document waits for the page (Bokeh's tables break otherwise); so
        # does the scene, sized to the window (_page_fit)
        self._drawn = page_drawn(served)
        # the export's format, button and note (made when first read: _export_parts)
        self._export_made: tuple | None = None
        self._scene: Scene | None = None
        # of the trace below, by mode: (presenter, theme, the presenter scene's fit)
        self._scenes: dict[tuple[bool, str, tuple | None], Scene] = {}
        self._scenes_of: Trace | None = None
        self._play_cb = None
        self._job: Job | None = None
        self._job_done: Callable[[Any], None] = lambda result: None
        self._job_cb = None
        #: ``hook(scene)`` for every new Bokeh scene, before it is shown (add-ons add glyphs).
        self.scene_hooks: list[Callable[[Scene], None]] = []
        #: ``claim(view, index) -> bool``: an add-on takes a tap on 'threads' or 'blocks'.
        self.tap_claims: list[Callable[[str, int], bool]] = []
        #: ``extra() -> dict``: more ``data-*`` attributes of ``#vizmm-status``.
        self.status_extras: list[Callable[[], dict]] = []
        if served:
            self.state.loader = self._load_in_background
        self._build_widgets()
        # frames of only what the page shows; a view switched on (presenter mode off)
        # has its aspects made before the scene is drawn
        self.state.shows = self._shown_aspects
        self.state.param.watch(lambda e: self.state.refresh_aspects(), ["presenter"])
        self.state.param.watch(self._draw, ["frame", "presenter", "theme"])
        self.state.param.watch(self._on_trace, ["trace"])
        self.state.param.watch(self._on_message, ["message", "message_kind", "busy", "progress"])
        self.state.param.watch(self._on_playing, ["playing", "speed"])
        self.state.param.watch(self._on_presenter, ["presenter"])
        self.state.param.watch(self._on_theme, ["theme"])
        self.state.param.watch(self._on_source_changed, ["source"])
        if served and pn.state.location is not None:
            too_long = drop_long_url_values(pn.state.location)
            pn.state.location.sync(self.state, URL_PARAMS, on_error=self.state.apply_values)
            if too_long:
                self.state.ignored_in_url(too_long)
        if served:
            on_page_closed(lambda ctx: self.cancel_jobs())
        self.state.start()
        self._on_trace()
        self._draw()
        self._on_message()
        self._on_presenter()
        if served:
            # Panel sizes a new page's rows from every child, hidden ones included
            # (see _on_presenter): set presenter mode's widths again once it is shown
            # and the normal scene is drawn once the window's size is known (_page_fit)
            pn.state.onload(self._on_loaded)

    # -------------------------------------------------------- extension
    def refresh_status(self) -> None:
        """Write ``#vizmm-status`` again (an add-on's attributes changed)."""
        self.status_pane.object = self._status_html()

    def show_replay(self) -> None:
        """Bring the block replay to the front (e.g. after a click in another tab)."""
        if isinstance(self.tabs, pn.Tabs):
            self.tabs.active = 0

    # ----------------------------------------------------------- widgets
    def _build_widgets(self) -> None:
        s = self.state
        self.trace_select = pn.widgets.Select(
            label="Example or trace", options=self._trace_options(), value=s.source, width=360
        )
        self.trace_select.param.watch(self._on_trace_select, "value")

        def button(name, action, tip, width=54):
            b = pn.widgets.Button(label=name, width=width, description=tip, margin=(5, 2))
            on_press(b, action)
            return b

        self.first_button = button("|◀", s.first, "first step (Home)")
        self.prev_button = button("◀", s.prev, "previous step (←)")
        self.play_button = button("▶ play", s.toggle_play, "play / pause (space)", 86)
        self.next_button = button("▶", s.next, "next step (→)")
        self.last_button = button("▶|", s.last, "last step (End)")
        self.slider = pn.widgets.IntSlider(
            label="step",
            start=1,
            end=max(2, s.n_steps),
            value=s.step + 1,
            width=200,
            margin=(5, 12),
        )
        self.slider.param.watch(lambda e: s.go(e.new - 1), "value")
        self.speed = pn.widgets.FloatSlider.from_param(
            s.param.speed, label="steps / s", start=0.5, end=10, step=0.5, width=140
        )
        # the pressed choice solid, the others outlined (both themes)
        self.granularity = pn.widgets.RadioButtonGroup.from_param(
            s.param.granularity, width=170, color="primary", variant="outline"
        )
        self.order = pn.widgets.RadioButtonGroup.from_param(
            s.param.order, width=170, color="primary", variant="outline"
        )
        # toggles: outlined while off, solid with a check mark while on
        self.presenter = pn.widgets.Toggle.from_param(
            s.param.presenter, label="Presenter mode", width=150, **_toggle_look(s.presenter)
        )
        self.theme = pn.widgets.Toggle(
            label="Dark", value=s.theme == "dark", width=80, **_toggle_look(s.theme == "dark")
        )
        self.theme.param.watch(lambda e: setattr(s, "theme", "dark" if e.new else "light"), "value")
        self.transactions = pn.widgets.Toggle.from_param(
            s.param.transactions, label="Memory transactions", width=180, **_toggle_look(False)
        )
        for toggle, name in (
            (self.presenter, "Presenter mode"),
            (self.transactions, "Memory transactions"),
            (self.theme, "Dark"),
        ):
            toggle.param.watch(_relabel(toggle, name), "value")
            toggle.param.trigger("value")
        self.unfollow = pn.widgets.Button(label="stop following", width=120, visible=False)

        on_press(self.unfollow, lambda: s.param.update(ty=-1, tx=-1))
        self.status_pane = pn.pane.HTML("", sizing_mode="stretch_width", height=22, margin=(0, 10))
        # each step in words, read out by screen readers; captions on a projector
        self.narration = Narration()
        # The alert, the progress bar, presenter mode's view and the button that
        # stops following a thread join the page when first shown (see
        # _join_when_shown): most pages never show them.
        self.alert = pn.pane.Alert(
            "", alert_type="danger", visible=False, sizing_mode="stretch_width"
        )
        self.progress = pn.indicators.Progress(
            value=-1, active=False, visible=False, width=300, bar_color="primary"
        )
        self._status_row = pn.Row(self.status_pane, sizing_mode="stretch_width")
        self.scene_pane = pn.pane.Bokeh(None, sizing_mode="fixed", margin=(0, 10))
        # presenter mode: the caption, M, N, P, Mds, Nds and threads, sized for a projector
        self.presenter_pane = pn.pane.Bokeh(None, sizing_mode="fixed", margin=(0, 10))
        # (its pane joins the page when presenter mode is first turned on)
        self.presenter_view = pn.Column(visible=False)
        # The page's invisible scripts, one component: the keys; the theme (Panel
        # draws its widgets in the theme the page was opened with, ?theme=: a
        # change of theme in a served page opens it again in the new one); the
        # window's size (presenter mode sizes its scene to the screen); the
        # landmarks. Each attribute names the part of it that code reads.
        self.page_scripts = PageScripts(on_key=s.handle_key, keys=list(KEYS) + ["G"], theme=s.theme)
        self.keys = self.page_theme = self.viewport = self.landmarks = self.page_scripts
        self.viewport.param.watch(self._on_viewport, ["inner_width", "inner_height"])

        # Loading: record form, upload, export, keys; a row of buttons, each opening
        # its section below, made when first opened (or the attribute first read)
        self.more, self.more_sections = _filled_when_opened(
            {
                "Record a trace": (380, lambda: self.record_form),
                "Load a trace file": (
                    380,
                    lambda: pn.Column(
                        "Load a trace file (.vizmm) saved by `vizmm record` or `Trace.save`:",
                        self.upload,
                    ),
                ),
                "Export": (
                    300,
                    lambda: pn.Column(self.export_format, self.export_button, self.export_note),
                ),
                "Keys and clicks": (420, _keys_help),
            }
        )
        self.header = page_header(
            "the tiled matrix multiplication of PMPP ch. 5", self.trace_select
        )
        # The rest, as a media player or a notebook keeps it: behind "More" (the
        # speed, the sections above, the side-by-side page), made part of the
        # page when first opened.
        self.menu_button = pn.widgets.Toggle(
            label="☰ More",
            value=False,
            width=100,
            **_toggle_look(False),
        )
        self.menu = pn.Column(
            pn.FlexBox(
                self.speed,
                self.more,
                side_by_side_link(),
                flex_wrap="wrap",
                align_items="center",
                sizing_mode="stretch_width",
            ),
            # (self.more_sections joins here when a section is first opened)
            visible=False,
            sizing_mode="stretch_width",
        )

        def toggle_menu(event) -> None:
            self.menu.visible = event.new and not s.presenter
            self.menu_button.param.update(**_toggle_look(event.new))

        self.menu_button.param.watch(toggle_menu, "value")
        # One bar: the title and the trace, then the transport, the step, the
        # granularity, the order, "More" and the view's toggles; it wraps onto a
        # second line where the window is narrower than it (1280 or 1366 pixels).
        self.controls = pn.FlexBox(
            self.header,
            self.first_button,
            self.prev_button,
            self.play_button,
            self.next_button,
            self.last_button,
            self.slider,
            self.granularity,
            self.order,
            # (self.unfollow joins here when first shown: _join_when_shown)
            self.menu_button,
            self.presenter,
            self.theme,
            self.transactions,
            flex_wrap="wrap",
            align_items="center",
            sizing_mode="stretch_width",
        )
        self.hazards = barrier_view.HazardPanel(self.state)
        # vizmm check's findings of the trace (hidden when it has none)
        self.findings = findings_view.FindingsPanel(self.state, served=self._served)
        tabs = [
            (
                "Block replay",
                pn.Column(self.scene_pane, self.findings, self.hazards, scroll=False),
            )
        ]
        # The other tabs are made when first shown (most visitors never open them):
        # a new session builds only what its first page shows.
        self._tab_slots = {title: pn.Column(sizing_mode="stretch_width") for title, _ in self.views}
        #: title -> what its factory made (made on first use: its tab shown, or asked for here)
        self.view_objects: dict[str, object] = _MadeOnFirstUse(self._make_view)
        tabs += list(self._tab_slots.items())
        #: The tabs' titles, in order (``tabs.active`` indexes them).
        self.tab_titles = [title for title, _ in tabs]
        self.tabs = pn.Tabs(*tabs, dynamic=True) if len(tabs) > 1 else tabs[0][1]
        if self._tab_slots:
            self.tabs.param.watch(self._on_tab, "active")
        addons = [a for a in (factory(self) for factory in self.addons) if a is not None]
        self.layout = pn.Column(
            self.controls,
            self.menu,
            *addons,
            self._status_row,
            self.narration,
            self.tabs,
            self.page_scripts,
            sizing_mode="stretch_width",
        )
        self.more.param.watch(
            lambda e: self._join_when_shown(self.menu, self.more_sections),
            "value",
        )

    def _make_view(self, title: str):
        """Make the view of tab ``title`` (once) and put it in its tab."""
        factory = dict(self.views)[title]
        view = factory(self.state)
        if hasattr(view, "on_zoom"):  # its zoom into a block brings "Block replay" forward
            view.on_zoom = lambda block: self.show_replay()
        self._tab_slots[title].objects = [view]
        return view

    def _on_tab(self, event) -> None:
        if not isinstance(self.tabs, pn.Tabs):
            return
        title = self.tab_titles[event.new]
        if title in self._tab_slots:
            self.view_objects[title]  # noqa: B018 - made when first shown

    def _trace_options(self) -> dict:
        options = {
            p.label: key
            for key, p in catalogue.PRESETS.items()
            if not p.large or CATALOGUE.installed(key)
        }
        options.update(CATALOGUE.given_keys())  # what the server was started with
        if self.state.source not in options.values():
            options[catalogue.label_of(self.state.source)] = self.state.source
        return options

    @property
    def served(self) -> bool:
        """Whether the page is served (a Bokeh server session), not built for a test or notebook."""
        return self._served

    @property
    def scene(self) -> Scene | None:
        """The Bokeh scene shown now (None until the first frame is drawn)."""
        return self._scene

    @property
    def scenes(self) -> list[Scene]:
        """Every scene the page holds: one per mode (presenter, theme) and the one shown."""
        out = list(self._scenes.values())
        if self._scene is not None and all(s is not self._scene for s in out):
            out.append(self._scene)
        return out

    # The loading sections' widgets, made when first read (their section opened).
    @functools.cached_property
    def record_form(self) -> RecordForm:
        """The 'Record a trace' form."""
        return RecordForm(on_record=self._record)

    @functools.cached_property
    def upload(self) -> UploadBox:
        """The 'Load a trace file' box."""
        box = UploadBox(width=330, margin=(5, 10))
        box.param.watch(self._on_upload, "value")

        def refused(event) -> None:
            if event.new:
                self.state.show(event.new)

        box.param.watch(refused, "refused")
        return box

    def _export_parts(self) -> tuple:
        if self._export_made is None:
            self._export_made = self._export_widgets()
            self._export_name()
        return self._export_made

    @property
    def export_format(self) -> pn.widgets.Select:
        """The export's format (``gif``, ``mp4``, ``html``)."""
        return self._export_parts()[0]

    @property
    def export_button(self) -> pn.widgets.FileDownload | pn.widgets.Button:
        """The export's download button (a disabled button without ``vizmm.export``)."""
        return self._export_parts()[1]

    @property
    def export_note(self) -> pn.pane.Markdown:
        """What the export gives (or why it is not available)."""
        return self._export_parts()[2]

    def _export_widgets(self):
        available = importlib.util.find_spec("vizmm.export") is not None
        formats = ["gif", "mp4", "html"]
        if available:
            try:
                from vizmm.export import EXPORT_FORMATS

                formats = list(EXPORT_FORMATS)
            except Exception:  # noqa: BLE001 - a broken exporter: say so below
                available = False
        fmt = pn.widgets.Select(
            label="format", options=formats, value=formats[0], width=120, disabled=not available
        )
        btn: pn.widgets.FileDownload | pn.widgets.Button
        if available:
            btn = pn.widgets.FileDownload(
                callback=self._export,
                filename="vizmm.gif",
                label="Export this block",
                color="success",
                width=200,
                embed=False,
            )
            note = pn.pane.Markdown(
                "The whole replay of the current block, at this granularity, order and speed.",
                width=260,
            )
            fmt.param.watch(lambda e: self._export_name(), "value")
        else:
            btn = pn.widgets.Button(label="Export this block", disabled=True, width=200)
            note = pn.pane.Markdown(
                "Export is not available in this installation (`vizmm.export` is missing).",
                width=260,
            )
        return fmt, btn, note

    # ---------------------------------------------------------- callbacks
    def _on_trace_select(self, event) -> None:
        if event.new != self.state.source:
            self.state.choose_source(event.new)

    def _on_source_changed(self, *events) -> None:
        options = self._trace_options()
        if options != self.trace_select.options:
            self.trace_select.options = options
        self.trace_select.value = self.state.source

    def _record(self, spec: catalogue.RecordSpec) -> None:
        self.state.choose_source(spec.key)

    def _on_upload(self, event) -> None:
        files = dict(event.new or {})
        if not files:
            return
        self.upload.value = {}  # the page keeps no copy; the catalogue keeps the trace
        name, data = next(iter(files.items()))
        if isinstance(data, str):
            data = data.encode("utf-8", "surrogateescape")

        def work(job):
            return CATALOGUE.register_upload(data, name)

        def done(key):
            self.state.choose_source(key)

        self._run_job(f"upload {name}", work, done, f"Reading {name} …")

    def _on_trace(self, *events) -> None:
        tr = self.state.trace
        if tr is not None:
            self._export_name()
            if not tr.is_detailed and isinstance(self.tabs, pn.Tabs) and len(self.tabs) > 1:
                # a launch recorded in aggregated mode opens on its large view
                if large_view.LARGE_TAB in self.tab_titles:
                    self.tabs.active = self.tab_titles.index(large_view.LARGE_TAB)

    def _on_message(self, *events) -> None:
        s = self.state
        self.alert.object = html.escape(s.message)
        self.alert.alert_type = s.message_kind
        self.alert.visible = bool(s.message)
        self.progress.visible = bool(s.busy)
        self.progress.value = s.progress if s.progress >= 0 else -1
        self.progress.active = bool(s.busy) and s.progress < 0
        self._join_when_shown(self.layout, self.alert, before=self._status_row)
        self._join_when_shown(self._status_row, self.progress)
        self.status_pane.object = self._status_html()

    def _on_presenter(self, *events) -> None:
        p = self.state.presenter
        self.more.visible = self.more_sections.visible = not p
        self.menu_button.visible = not p
        self.menu.visible = not p and self.menu_button.value
        self.header.visible = not p
        self.tabs.visible = not p
        if p and not self.presenter_view.objects:
            self.presenter_view.objects = [self.presenter_pane]
        self.presenter_view.visible = p
        self._join_when_shown(self.layout, self.presenter_view, after=self.tabs)
        # Panel gives the page the width of its widest child, hidden ones included
        # (the normal scene's 1300 pixels): in presenter mode, the window's width
        for box in (self.layout, self.controls):
            box.min_width = 320 if p else None
        for w in (self.slider, self.speed, self.granularity, self.order):
            w.visible = not p
        self.unfollow.visible = (
            not p and self.state.frame is not None and (self.state.frame.focus is not None)
        )
        self._join_when_shown(self.controls, self.unfollow, after=self.order)

    @staticmethod
    def _join_when_shown(box, part, before=None, after=None) -> None:
        """Put ``part`` into ``box`` once it is first visible; there it then stays.

        It goes just before ``before``, just after ``after``, or last.
        """
        if not part.visible or any(o is part for o in box.objects):
            return
        objects = list(box.objects)
        at = len(objects)
        for i, o in enumerate(objects):
            if o is before:
                at = i
            elif o is after:
                at = i + 1
        box.insert(at, part)

    def _resize(self) -> None:
        for box in (self.layout, self.controls):
            box.param.trigger("min_width")

    def _on_theme(self, *events) -> None:
        self.theme.value = self.state.theme == "dark"
        if self._served:
            self.page_theme.theme = self.state.theme

    def _on_playing(self, *events) -> None:
        s = self.state
        self._play_cb = play(
            self.play_button, self._play_cb, self._tick, s.playing, s.speed, 50, self._served
        )

    def _tick(self) -> None:
        with pn.io.hold():
            self.state.tick()

    def _draw(self, *events) -> None:
        # the scene's sources are Bokeh models changed here directly: held, so that
        # they reach the page also when Panel runs this without the document's lock
        with pn.io.hold():
            self._draw_now()

    def _draw_now(self) -> None:
        s = self.state
        frame = s.frame
        if frame is not None and s.trace is not None:
            # the controls at once (in the page's first document), the scene once it can be sized
            end = max(2, s.n_steps)
            if self.slider.end != end:
                self.slider.end = end
            self.slider.value = s.step + 1
        if frame is not None and s.trace is not None and not self._waits_for_window():
            scene = self._scene_for(s.presenter, s.theme)
            scene.update(frame)
            pane = self.presenter_pane if s.presenter else self.scene_pane
            if pane.object is not scene.layout:
                pane.object = scene.layout
            self._scene = scene
            self.unfollow.visible = frame.focus is not None and not s.presenter
            self._join_when_shown(self.controls, self.unfollow, after=self.order)
            self._export_name()
        self.narration.param.update(
            text=narrate(frame) if frame is not None and s.trace is not None else "",
            large=s.presenter,
        )
        self.status_pane.object = self._status_html()

    def _shown_aspects(self) -> tuple[str, ...]:
        """The aspects of a frame the scene of the mode shown needs, and the narration's."""
        s = self.state
        if s.trace is None:
            return tuple(NARRATED_ASPECTS)
        # the scene of _scene_for: the normal page says the caption in its narration
        views = large_view.page_views(s.trace, presenter=s.presenter, caption=s.presenter)
        return aspects_of(views, always=NARRATED_ASPECTS)

    def _presenter_fit(self) -> tuple[int, int] | None:
        """Pixels presenter mode's scene fills: the window less the controls (None: unknown)."""
        w, h = self.viewport.inner_width, self.viewport.inner_height
        if not (w and h):
            return None
        # in steps of 20 pixels, so that a window a few pixels off builds no new scene
        w = max(PRESENTER_MIN[0], (w - PRESENTER_CHROME[0]) // 20 * 20)
        h = max(PRESENTER_MIN[1], (h - PRESENTER_CHROME[1]) // 20 * 20)
        return (w, h)

    def _page_fit(self) -> tuple[int, int] | None:
        """Pixels of the window's first screen the normal scene fills (None: default sizes)."""
        w, h = self.viewport.inner_width, self.viewport.inner_height
        if not (self._served and w and h):
            return None
        # in steps of 20 pixels, so that a window a few pixels off builds no new scene
        w = max(PAGE_MIN[0], (w - PAGE_CHROME[0]) // 20 * 20)
        h = max(PAGE_MIN[1], (h - PAGE_CHROME[1]) // 20 * 20)
        return (w, h)

    def _waits_for_window(self) -> bool:
        """Whether the normal scene waits for the window's size (a served page not yet drawn)."""
        return (
            self._served
            and not self.state.presenter
            and not (
                self._drawn.is_set() and self.viewport.inner_width and self.viewport.inner_height
            )
        )

    def _on_viewport(self, *events) -> None:
        if self.state.trace is not None and self._drawn.is_set():
            self._draw()

    def _on_loaded(self) -> None:
        self._resize()
        if self.state.trace is not None:
            self._draw()

    def _scene_for(self, presenter: bool, theme: str) -> Scene:
        """The scene of the current trace for a mode, built once per trace and mode.

        Toggling presenter mode or the theme back and forth then swaps built
        scenes instead of building one each time (a second or more on a
        loaded server, during which the page seemed not to react).
        """
        trace = self.state.trace
        if trace is None:
            raise RuntimeError("no trace is open: there is no scene to draw")
        if self._scenes_of is not trace:
            self._scenes, self._scenes_of = {}, trace
        fit = self._presenter_fit() if presenter else self._page_fit()
        scene = self._scenes.get((presenter, theme, fit))
        if scene is None:
            if fit is not None:  # the window changed: a scene of another size goes
                for key in [k for k in self._scenes if k[0] == presenter and k[1] == theme]:
                    del self._scenes[key]
            # large traces: no element-by-element M, N, P (apps/large_view.py);
            # the normal page says the caption once, in its narration
            scene = large_view.replay_scene(
                trace,
                presenter=presenter,
                theme=theme,
                fit=fit if presenter else None,
                page=None if presenter else fit,
                caption=presenter,
            )
            for hook in self.scene_hooks:
                hook(scene)
            self._attach_taps(scene)
            self._scenes[(presenter, theme, fit)] = scene
        return scene

    def _attach_taps(self, scene: Scene) -> None:
        blocks = scene.sources.get("blocks")
        threads = scene.sources.get("threads")
        if blocks is not None:
            blocks.selected.on_change("indices", self._on_block_tap)
        if threads is not None:
            threads.selected.on_change("indices", self._on_thread_tap)

    def _on_block_tap(self, attr, old, new) -> None:
        self._tapped("blocks", ("by", "bx"), new, self.state.select_block)

    def _on_thread_tap(self, attr, old, new) -> None:
        self._tapped("threads", ("ty", "tx"), new, self.state.follow)

    def _tapped(self, view: str, columns: tuple[str, str], indices, action) -> None:
        """A tap on a grid of the scene: an add-on's claim, or ``action`` of the cell's indices."""
        if not indices or self._scene is None:
            return
        src = self._scene.sources[view]
        i = indices[0]
        if any(claim(view, i) for claim in self.tap_claims):
            src.selected.indices = []
            return
        a, b = (int(src.data[c][i]) for c in columns)
        with pn.io.hold():
            src.selected.indices = []
            action(a, b)

    def _status_html(self) -> str:
        frame = self.state.frame
        # over 8 x 8 threads the labels would make every step's message ~40 KB:
        # the page keeps the summary (tests read the small presets' labels)
        st = self.state.status(per_thread=frame is None or frame.thread_state.shape[0] <= 8)
        # ready once the scene is shown (a served page's waits for the window's size)
        st["ready"] = st["ready"] and not self._waits_for_window()
        for extra in self.status_extras:
            st.update(extra())
        attrs = " ".join(
            f'data-{k}="{html.escape(v if isinstance(v, str) else json.dumps(v), quote=True)}"'
            for k, v in st.items()
        )
        busy = self.state.busy
        if busy:
            text = f"<b>{html.escape(busy)}</b>"
        elif st["ready"]:
            who = (
                f" · following thread ({st['thread'][0]},{st['thread'][1]})"
                if st["thread"]
                else " · click a thread to follow it"
            )
            text = (
                f"<b>Step {st['step'] + 1} / {st['count']}</b> · block "
                f"({st['block'][0]},{st['block'][1]}){who}"
            )
        else:
            text = "No frame to show."
        return f'<div id="vizmm-status" {attrs}>{text}</div>'

    # ------------------------------------------------------ background
    def _load_in_background(self, key: str) -> None:
        """Record or read ``key`` off the event loop; a timer shows progress and the result."""

        def work(job):
            return CATALOGUE.get(key, progress=job.progress, cancel=job.cancel)

        def done(trace):
            self.state.set_trace(key, trace)

        self._run_job(key, work, done, f"Loading {_what(key)} …", threaded=True)

    def _run_job(self, key: str, work, done, busy: str, threaded: bool | None = None) -> None:
        """Run ``work(job)`` in a thread (served) or here; then ``done(result)`` on the loop.

        A job started before and not finished is cancelled: this session no
        longer waits for it (a recording stops before its next block).
        """
        if self._job is not None:
            self._job.cancel.set()
        job = Job(work, key)
        self.state.param.update(busy=busy, progress=-1)
        self._job, self._job_done = job, done
        if not (self._served if threaded is None else threaded):
            job.run()
            self._poll_job()
            return
        job.start()
        if self._job_cb is None:
            self._job_cb = replace_timer(None, self._poll_job, 200)

    def _poll_job(self) -> None:
        job, s = self._job, self.state
        if job is None:
            return
        if job.percent is not None:
            s.param.update(
                progress=job.percent,
                busy=f"Recording {_what(job.name)} in the simulator: "
                f"block {job.done} of {job.total}",
            )
        if not job.finished or not self._drawn.is_set():
            return
        self._job_cb = replace_timer(self._job_cb, None)
        self._job = None
        s.param.update(busy="", progress=-1)
        if isinstance(job.error, RecordingCancelled):
            return
        if job.error is not None:
            what = job.name
            if what.startswith("upload "):
                s.show(f"Could not load {what[7:]}: {in_page_words(job.error)}")
            elif what == s.source:
                s.show(f"Could not load {catalogue.label_of(what)}: {in_page_words(job.error)}")
            return
        with pn.io.hold():
            self._job_done(job.result)

    def cancel_jobs(self) -> None:
        """Cancel what this session waits for (called when its page is closed)."""
        if self._job is not None:
            self._job.cancel.set()
        if self._job_cb is not None:
            self._job_cb.stop()
            self._job_cb = None
        if self._play_cb is not None:
            self._play_cb.stop()
            self._play_cb = None

    # ------------------------------------------------------------ export
    def _export_name(self) -> None:
        if self._export_made is None:  # named when made
            return
        fmt, btn, _ = self._export_made
        if isinstance(btn, pn.widgets.FileDownload):
            s = self.state
            name = s.source.replace(":", "_")
            btn.filename = f"vizmm-{name}-block{s.by}{s.bx}-{s.granularity}.{fmt.value}"

    def _export_finding(self):
        """The selected finding's marks when it is of the block exported (None: none)."""
        s = self.state
        frame = s.frame
        return None if frame is None else frame.finding

    def _export(self):
        from vizmm.export import export_bytes

        s = self.state
        if s.trace is None:
            s.show("Export: no trace is open.")
            return io.BytesIO(b"vizmm: no trace is open\n")
        try:
            data = export_bytes(
                s.trace,
                self.export_format.value,
                block=(s.by, s.bx),
                granularity=s.granularity,
                order=s.order,
                fps=s.speed,
                finding=self._export_finding(),
            )
        except Exception as exc:  # noqa: BLE001 - shown on the page
            s.show(f"Export failed: {exc}")
            # never None (Panel cannot send it, and the page's button then fails):
            # the file the browser saves says what went wrong, as the page does
            return io.BytesIO(f"vizmm: export failed: {exc}\n".encode())
        return io.BytesIO(data)

    def __panel__(self):
        return self.layout


def create_app(served: bool | None = None) -> Dashboard:
    """A dashboard for one browser session (each session gets its own state).

    The process's shipped traces are read once, in the background, when the
    first session starts (``vizmm serve`` reads them before the server
    listens); every session then shares them.

    Parameters
    ----------
    served : bool, optional
        Whether this runs in a Bokeh server session; by default
        ``pn.state.served``, which reads the call stack (the served script
        passes it, so a new page asks once).

    Returns
    -------
    Dashboard
    """
    served = bool(pn.state.served) if served is None else served
    # the large view's DataTable (vizmm_apps.parts)
    page_extension(*TABLE_EXTENSIONS)
    if served:
        catalogue.preload_once()
    return Dashboard(
        served=served,
        views=[
            # large matrices: a launch recorded in aggregated mode
            (large_view.LARGE_TAB, large_view.DashboardLargeTab),
            # Section 5.6 and the GFLOPS argument: occupancy, CGMA, roofline, measured speed
            (occupancy_view.TAB, occupancy_view.OccupancyView),
        ],
        addons=[
            # predict, then reveal: questions answered by clicking in the views (apps/quiz.py)
            quiz.question_mode,
            # follow the instructor: /dashboard?class=new and ?class=CODE (apps/classroom.py)
            classroom.class_session,
        ],
    )


if served_script(__name__):
    create_app(served=True).servable(title="vizmm · tiled matrix multiplication")
