"""The large-matrix view: a whole launch of the tiled kernel, block by block.

Serve it on its own with::

    panel serve apps/large_view.py                    # the shipped GPU traces
    panel serve apps/large_view.py --args big.vizmm   # a trace file of yours

It opens on a trace recorded on an NVIDIA H200 in aggregated mode (every
block's SM, start and end time, global reads and barrier waits; a few blocks
per thread). Scrub or play the launch's time and watch the blocks go from
waiting to running to done, wave after wave over the SMs; compare the global
reads of M and N with the naive kernel's; see which blocks waited longest at
the barriers. Click a block: if it was recorded per thread, open its replay.
Or simulate a window of blocks of any size in vizmm's simulator (no GPU needed).

The app is thin: :class:`LargeViewState` (a ``param.Parameterized``) holds
every choice; :class:`LargeTraceView` (a ``pn.viewable.Viewer``) draws it with
:class:`~vizmm.render.large_bokeh.LargeScene`. The dashboard embeds
:class:`LargeTraceView` for aggregated traces and watches
:attr:`LargeTraceView.zoom_block` to open a block's per-thread replay.
"""

from __future__ import annotations

import html
import importlib.resources
import sys
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

import panel as pn
import param

import vizmm  # noqa: E402
from vizmm import render  # noqa: E402
from vizmm.cli import parse_window  # noqa: E402
from vizmm.record import RecordingCancelled, in_words  # noqa: E402
from vizmm.render.large_bokeh import LargeScene  # noqa: E402
from vizmm.replay import large  # noqa: E402
from vizmm.serve import catalogue  # noqa: E402
from vizmm.serve.catalogue import CATALOGUE, LARGE_PRESETS  # noqa: E402
from vizmm.trace import MAX_TILE_WIDTH, TILED_KERNELS, Trace, TraceError  # noqa: E402
from vizmm_apps import parts  # noqa: E402
from vizmm_apps.access import PageLandmarks, page_extension  # noqa: E402
from vizmm_apps.viewport import Viewport  # noqa: E402

__all__ = [
    "LARGE_PRESETS",
    "DashboardLargeTab",
    "replay_scene",
    "page_views",
    "is_large",
    "LargeViewState",
    "LargeTraceView",
    "WindowForm",
    "LargeApp",
    "load_large",
    "shipped_large",
    "create_app",
]

DEFAULT_LARGE = "gpu-4096-t32-tiled"
SCRUB_STEPS = 240  # the scrubber's steps from the first start to the last end


def shipped_large(key: str):
    """The package-data file of preset ``key`` (a Traversable), or None when absent.

    Parameters
    ----------
    key : str
        A key of :data:`vizmm.serve.catalogue.LARGE_PRESETS`.
    """
    if key not in LARGE_PRESETS:
        return None
    res = importlib.resources.files("vizmm") / "data" / f"{key}.vizmm"
    return res if res.is_file() else None


def load_large(key: str) -> Trace:
    """A large trace by preset key or ``file:`` key, from the process's one catalogue.

    Read once per process and shared read-only by every session and app
    (:data:`vizmm.serve.catalogue.CATALOGUE`); call it off the event loop the first
    time (reading the 4096 x 4096 trace takes about a second).

    Parameters
    ----------
    key : str
        A key of :data:`vizmm.serve.catalogue.LARGE_PRESETS` or a ``file:`` key.

    Raises
    ------
    FileNotFoundError
        When the preset's file is not installed.
    ValueError
        For a key that is neither a large preset nor a file given to the server.
    TraceError
        When the file is not a valid trace or cannot be read.
    """
    if key not in LARGE_PRESETS and not key.startswith("file:"):
        raise ValueError(f"unknown large trace {key[:80]!r}: pick one from the menu")
    trace = CATALOGUE.get(key, warm_up=False)  # the large views need neither M nor N
    if not catalogue.is_warm(trace):  # a block's replay will: make them meanwhile
        threading.Thread(target=catalogue.warm, args=(trace,), daemon=True).start()
    return trace


# ------------------------------------------------------------------ state
class LargeViewState(param.Parameterized):
    """What the large view shows: the trace, the time, the phase and barrier, the block.

    Set the parameters (from widgets, clicks or a test) and read
    :meth:`status`. Nothing here knows about widgets.
    """

    trace = param.ClassSelector(class_=Trace, default=None, allow_None=True, precedence=-1)
    time = param.Number(
        default=0.0,
        bounds=(0, None),
        doc="Scrubbed time: ns since the first block started, or completed "
        "blocks for traces without a clock.",
    )
    playing = param.Boolean(default=False)
    speed = param.Number(default=12.0, bounds=(1.0, 60.0), doc="Scrubber steps per second.")
    all_phases = param.Boolean(
        default=True, label="all phases", doc="Barrier waits of all phases together."
    )
    phase = param.Integer(default=0, bounds=(0, None), doc="Phase of the barrier waits.")
    barrier: param.Selector[str] = param.Selector(
        default=0, objects={"barrier 1 (after the loads)": 0, "barrier 2 (after the k loop)": 1}
    )
    block = param.Tuple(
        default=None, length=2, allow_None=True, doc="The selected block (by, bx), or None."
    )
    message = param.String(default="", precedence=-1)
    message_kind: param.Selector[str] = param.Selector(
        default="warning", objects=["danger", "warning", "info"], precedence=-1
    )

    @property
    def model(self) -> large.LargeModel | None:
        """The :class:`~vizmm.replay.large.LargeModel` of :attr:`trace` (cached), or None."""
        return None if self.trace is None else large.model(self.trace)

    @property
    def step_size(self) -> float:
        """One scrubber step (timeline unit)."""
        m = self.model
        if m is None:
            return 1.0
        if not m.timeline.has_clock:
            return 1.0
        return max(m.timeline.duration / SCRUB_STEPS, 1.0)

    @param.depends("trace", watch=True)
    def _on_trace(self) -> None:
        self.param.update(time=0.0, playing=False, phase=0, block=None, message="")

    def go(self, t: float) -> None:
        """Scrub to time ``t`` (clamped to the launch).

        Parameters
        ----------
        t : float
            Nanoseconds since the first block started, or completed blocks for a
            trace without a clock.
        """
        m = self.model
        end = m.timeline.duration if m is not None else 0.0
        self.time = float(min(max(t, 0.0), end))

    def forward(self) -> bool:
        """One scrubber step on; returns False (and stops playing) at the end."""
        m = self.model
        if m is None or self.time >= m.timeline.duration:
            self.playing = False
            return False
        self.go(self.time + self.step_size)
        return True

    def toggle_play(self) -> None:
        """Play or pause; playing from the end starts again at time 0. Without a trace: nothing."""
        m = self.model
        if m is None:  # nothing to play
            self.playing = False
            return
        if not self.playing and m is not None and self.time >= m.timeline.duration:
            self.time = 0.0
        self.playing = not self.playing

    def tick(self) -> None:
        """One step of playing (called by the play timer)."""
        if self.playing:
            self.forward()

    def select_block(self, by: int, bx: int) -> None:
        """Select block (by, bx); says so when it was not recorded per thread.

        Parameters
        ----------
        by, bx : int
            blockIdx.y and blockIdx.x of a block of the grid.
        """
        tr = self.trace
        if tr is None:
            return
        block = (int(by), int(bx))
        msg = large.not_recorded_message(tr, block)
        if msg and "outside" in msg:
            self.param.update(message=msg, message_kind="danger")
            return
        self.param.update(block=block, message=msg, message_kind="warning")

    def status(self) -> dict:
        """What the page shows, as plain data (tests read it; the page puts it in the DOM).

        Returns
        -------
        dict
            ``ready``; with a trace: ``time`` (timeline unit), ``label``,
            ``clock``, ``counts`` (state name -> blocks), ``block``,
            ``detailed`` (whether the selected block has a per-thread
            replay), ``phase`` (None for all), ``barrier``, ``message``.
        """
        m = self.model
        if m is None:
            return {"ready": False, "message": self.message}
        counts = m.timeline.counts_at(self.time)
        return {
            "ready": True,
            "time": self.time,
            "label": m.timeline.label(self.time),
            "clock": m.timeline.clock,
            "counts": {s.name.lower(): n for s, n in counts.items()},
            "block": None if self.block is None else list(self.block),
            "detailed": bool(self.block is not None and m.trace.has_block(self.block)),
            "phase": None if self.all_phases else self.phase,
            "barrier": self.barrier,
            "message": self.message,
        }

    def block_html(self) -> str:
        """A few lines about the selected block (HTML)."""
        m, b = self.model, self.block
        if m is None:
            return ""
        if b is None:
            return (
                "Click a block in the grid, a bar of the Gantt chart or a row of the "
                "slowest blocks. Blocks outlined in blue were recorded per thread: "
                f"{large.format_blocks(m.trace.detail_blocks.tolist())}."
            )
        tl = m.timeline
        by, bx = b
        said = [f"<b>Block ({by}, {bx})</b>"]
        if tl.has_data[by, bx]:
            if tl.has_clock:
                s, e = tl.start[by, bx] / 1000, tl.end[by, bx] / 1000
                said.append(f"SM {int(tl.sm[by, bx])}")
                said.append(f"ran {s:,.3f}–{e:,.3f} µs ({e - s:,.1f} µs)")
                if m.waves is not None:
                    said.append(f"wave {int(m.waves.wave[by, bx])} of {len(m.waves.start)}")
            else:
                said.append(f"completed {int(tl.start[by, bx]) + 1}ᵗʰ of {tl.n_blocks}")
        else:
            said.append("not simulated: no data")
        bw = m.trace.block_wait
        if bw.shape[:2] == tl.grid and bw[by, bx, 0, 0] >= 0:
            w = bw[by, bx]
            said.append(
                f"longest wait {int(w[0, 0]):,} cycles at barrier 1 (phase "
                f"{int(w[0, 2])}), {int(w[1, 0]):,} at barrier 2 (phase {int(w[1, 2])})"
            )
        zf = int(m.zero_fills[by, bx])
        if zf:
            said.append(f"{zf:,} zero-filled Mds/Nds slots")
        said.append("recorded per thread ✓" if m.trace.has_block(b) else "not recorded per thread")
        return " · ".join(said)


# ------------------------------------------------------------- replay pane


class _BlockReplay(pn.viewable.Viewer):
    """The per-thread replay of one detailed block, embedded when the view stands alone.

    Large traces show the shared-memory tiles, the threads and the source (and
    the counters when there are few phases): drawing 4096 x 4096 matrices
    element by element is what the large views avoid.
    """

    step = param.Integer(default=0, bounds=(0, None))

    def __init__(self, trace: Trace, block: tuple[int, int], **params):
        super().__init__(**params)
        from vizmm.replay import Replay

        self.trace, self.block = trace, block
        self.replay = Replay(trace, block, "phase")
        self.scene = _make_scene(trace)
        self.slider = pn.widgets.IntSlider(
            label="phase step",
            start=0,
            end=max(1, len(self.replay) - 1),
            value=0,
            sizing_mode="stretch_width",
        )
        self.slider.param.watch(lambda e: setattr(self, "step", e.new), "value")
        self.granularity = pn.widgets.RadioButtonGroup(
            options=["phase", "substep"], value="phase", width=180
        )
        self.granularity.param.watch(self._on_granularity, "value")
        self.pane = pn.pane.Bokeh(self.scene.layout if self.scene else None)
        self.step = self.slider.value = min(1, len(self.replay) - 1)  # after the first phase
        self._draw()

    def _on_granularity(self, event) -> None:
        from vizmm.replay import Replay

        self.replay = Replay(self.trace, self.block, event.new)
        self.slider.label = f"{event.new} step"
        self.slider.end = max(1, len(self.replay) - 1)
        self.step = min(self.step, len(self.replay) - 1)
        self._draw()

    @param.depends("step", watch=True)
    def _draw(self) -> None:
        if self.scene is not None:
            step = min(self.step, len(self.replay) - 1)
            with pn.io.hold():  # Bokeh sources changed directly (apps/ARCHITECTURE.md)
                self.scene.update(self.replay.frame(step, aspects=self.scene.aspects))

    def __panel__(self):
        return pn.Column(
            pn.Row(self.granularity, self.slider, sizing_mode="stretch_width"), self.pane
        )


def _make_scene(trace: Trace):
    try:
        return replay_scene(trace)
    except ImportError:  # pragma: no cover - the scene ships with vizmm
        return None


is_large = render.is_large


def replay_scene(
    trace: Trace,
    presenter: bool = False,
    theme: str = "light",
    fit: tuple[int, int] | None = None,
    page: tuple[int, int] | None = None,
    caption: bool = True,
):
    """The per-thread :class:`~vizmm.render.bokeh_scene.Scene` a trace can afford.

    Small traces get every view. Large ones (more than 40,000 elements of M,
    N and P) get the caption, Mds, Nds, the threads, the legend and the source
    (and the counters with up to 16 phases): drawing 4096 x 4096 matrices
    element by element is what the large views avoid. A presenter scene shows
    :data:`~vizmm.render.bokeh_scene.PRESENTER_VIEWS` (of those), sized to fit a
    projector; ``theme`` is ``'light'`` or ``'dark'``; ``fit`` (width, height):
    the pixels the scene fills (presenter mode: the browser window's, less
    the controls), else the default sizes.

    Parameters
    ----------
    trace : Trace
        Any trace with detailed blocks.
    presenter : bool
        Large fonts for a projector.
    theme : {'light', 'dark'}
        The colours.
    fit : tuple of (int, int), optional
        (width, height) in pixels the scene fills (presenter mode); else the default sizes.
    page : tuple of (int, int), optional
        (width, height) in pixels of the window's first screen that the full
        scene's grids and listing fit in (``Scene``'s ``page``); else the
        default sizes.
    caption : bool
        Whether the scene draws the step's caption (a page that shows it
        itself, as the dashboard's narration does, leaves it out).
    """
    from vizmm.render import bokeh_scene

    views = page_views(trace, presenter=presenter, caption=caption)
    return bokeh_scene.Scene(
        trace, views=views, presenter=presenter, theme=theme, fit=fit, page=page
    )


def page_views(trace: Trace, presenter: bool = False, caption: bool = True) -> tuple[str, ...]:
    """The views :func:`replay_scene` shows of ``trace`` (what its frames must be made for).

    Parameters
    ----------
    trace : Trace
        Any trace with detailed blocks.
    presenter : bool
        Presenter mode's views (:data:`~vizmm.render.bokeh_scene.PRESENTER_VIEWS`),
        else every view (:data:`~vizmm.render.bokeh_scene.VIEWS`).
    caption : bool
        Whether the caption view is among them.

    Returns
    -------
    tuple of str
        Names of registered views (:mod:`vizmm.render.views`), in their
        order; for a large trace only those it can afford
        (:func:`vizmm.render.policy.affordable_views`).
    """
    from vizmm.render import bokeh_scene

    views: tuple[str, ...] = bokeh_scene.PRESENTER_VIEWS if presenter else bokeh_scene.VIEWS
    if is_large(trace):
        views = render.affordable_views(trace, views)
    if not caption:
        views = tuple(v for v in views if v != "caption")
    return views


# -------------------------------------------------------------------- view
class LargeTraceView(pn.viewable.Viewer):
    """The large views of one trace: time scrubber, blocks, SMs, reads, barrier waits.

    Parameters
    ----------
    trace : Trace, optional
        The trace to show (also settable later: ``view.state.trace = ...``).
    state : LargeViewState, optional
        A state to drive (a new one by default).
    embed_replay : bool
        Open a detailed block's per-thread replay inside this view (True, the
        standalone page); the dashboard sets False and watches
        :attr:`zoom_block` to switch its own per-thread views instead.
    served : bool, optional
        Whether it runs in a Bokeh server session (play timer); by default
        ``pn.state.served``.
    grid_px : int, optional
        The block grid's side, pixels (the standalone page fits it to the
        window's height); None: its natural size.

    Attributes
    ----------
    zoom_block : tuple of int or None
        Set to ``(by, bx)`` each time the user asks for the per-thread replay
        of a detailed block (an event: watch it).
    scene : LargeScene or None
        The figures of the current trace.
    """

    if TYPE_CHECKING:  # never None: __init__ makes one when none is given
        state: LargeViewState
    else:
        state = param.ClassSelector(class_=LargeViewState)
    embed_replay = param.Boolean(default=True)
    grid_px = param.Integer(default=None, allow_None=True, bounds=(100, None))
    zoom_block = param.Tuple(
        default=None,
        length=2,
        allow_None=True,
        doc="(by, bx) whose per-thread replay the user asked for.",
    )

    def __init__(
        self,
        trace: Trace | None = None,
        state: LargeViewState | None = None,
        served: bool | None = None,
        **params,
    ):
        super().__init__(state=state or LargeViewState(), **params)
        self._served = bool(pn.state.served) if served is None else served
        self.scene: LargeScene | None = None
        self._play_cb = None
        self._build_widgets()
        s = self.state
        s.param.watch(self._on_trace, ["trace"])
        s.param.watch(self._on_time, ["time"])
        s.param.watch(self._on_waits, ["phase", "all_phases", "barrier"])
        s.param.watch(self._on_block, ["block", "message", "message_kind"])
        s.param.watch(self._on_playing, ["playing", "speed"])
        self.param.watch(self._on_grid_px, ["grid_px"])
        if trace is not None:
            s.trace = trace
        else:
            self._on_trace()

    # ----------------------------------------------------------- widgets
    def _build_widgets(self) -> None:
        s = self.state
        self.header = pn.pane.HTML("", sizing_mode="stretch_width", margin=(0, 10))
        self.play_button = pn.widgets.Button(label="▶ play", width=90, margin=(12, 4, 5, 10))
        parts.on_press(self.play_button, s.toggle_play)
        self.time_slider = pn.widgets.FloatSlider(
            label="time",
            start=0,
            end=1,
            step=1,
            value=0,
            sizing_mode="stretch_width",
            min_width=300,
            margin=(5, 12),
        )
        self.time_slider.param.watch(self._on_slider, "value_throttled")
        self.speed = pn.widgets.FloatSlider.from_param(
            s.param.speed, label="steps / s", start=1, end=60, step=1, width=150
        )
        self.status_pane = pn.pane.HTML("", sizing_mode="stretch_width", margin=(0, 10))
        # (stretched: its Gantt chart fits the window's width, see LargeScene)
        self.timeline_pane = pn.pane.Bokeh(None, margin=(0, 10), sizing_mode="stretch_width")
        self.reads_pane = pn.pane.Bokeh(None, margin=(0, 10))
        self.waits_pane = pn.pane.Bokeh(None, margin=(0, 10))
        self.all_phases = pn.widgets.Checkbox.from_param(
            s.param.all_phases, width=110, margin=(18, 10, 5, 10)
        )
        self.phase = pn.widgets.IntSlider(
            label="phase", start=0, end=1, value=0, width=320, disabled=True
        )
        self.phase.param.watch(lambda e: setattr(s, "phase", e.new), "value")
        self.barrier = pn.widgets.RadioButtonGroup.from_param(
            s.param.barrier, width=420, margin=(12, 10, 5, 10)
        )
        self.block_pane = pn.pane.HTML("", sizing_mode="stretch_width", margin=(5, 10))
        self.zoom_button = pn.widgets.Button(
            label="Open the per-thread replay",
            color="primary",
            width=260,
            disabled=True,
            margin=(5, 10),
        )
        parts.on_press(self.zoom_button, self.zoom)
        self.alert = pn.pane.Alert(
            "", alert_type="warning", visible=False, sizing_mode="stretch_width", margin=(0, 10)
        )
        self.replay_area = pn.Column(sizing_mode="stretch_width")
        tabs = [
            ("Timeline: blocks and SMs", self.timeline_pane),
            ("Global reads: tiled vs naive", self.reads_pane),
            (
                "Barrier waits",
                pn.Column(pn.Row(self.all_phases, self.phase, self.barrier), self.waits_pane),
            ),
        ]
        if self.embed_replay:  # a fixed tab: adding tabs later re-renders the others
            tabs.append(("Per-thread replay", self.replay_area))
        self.tabs = pn.Tabs(*tabs, dynamic=False, sizing_mode="stretch_width")
        self.layout = pn.Column(
            self.header,
            pn.Row(self.play_button, self.time_slider, self.speed, sizing_mode="stretch_width"),
            self.status_pane,
            pn.Row(self.block_pane, self.zoom_button, sizing_mode="stretch_width"),
            self.alert,
            self.tabs,
            sizing_mode="stretch_width",
        )

    # ----------------------------------------------------------- actions
    def zoom(self) -> None:
        """Open the per-thread replay of the selected block (when recorded per thread)."""
        s = self.state
        b = s.block
        if b is None or s.trace is None:
            return
        msg = large.not_recorded_message(s.trace, b)
        if msg:
            s.param.update(message=msg, message_kind="warning")
            return
        if self.zoom_block == tuple(b):
            self.param.trigger("zoom_block")
        else:
            self.zoom_block = tuple(b)
        if self.embed_replay:
            self.replay_area[:] = [
                pn.pane.Markdown(
                    f"#### Block ({b[0]}, {b[1]}), thread by thread", margin=(5, 10, 0, 10)
                ),
                _BlockReplay(s.trace, tuple(b)),
            ]
            self.tabs.active = 3

    def _close_replay(self) -> None:
        s = self.state
        blocks = [] if s.trace is None else s.trace.detail_blocks.tolist()
        self.replay_area[:] = [
            pn.pane.Markdown(
                "Select a block recorded per thread (outlined in blue in the grid: "
                f"{large.format_blocks(blocks)}), then *Open the per-thread replay*.",
                margin=(10, 10),
            )
        ]

    # --------------------------------------------------------- callbacks
    def _on_trace(self, *events) -> None:
        # One hold for the whole change: the new figures and every change of their
        # sources then reach the browser in one message, in order. Without it the
        # panes' new figures went through Panel's deferred writes while the sources'
        # changes went straight out, so a browser could be sent a source's new data
        # before the figure that holds it ("reference pNNNN isn't known").
        with pn.io.hold():
            self._show_trace()

    def _show_trace(self) -> None:
        s = self.state
        tr, m = s.trace, s.model
        self._close_replay()
        # the play button, time slider and speed play a trace's launch: none, no play
        for widget in (self.play_button, self.time_slider, self.speed):
            widget.disabled = tr is None or m is None
        if tr is None or m is None:
            self.scene = None
            s.playing = False
            self.header.object = "<i>No large trace open: nothing to play.</i>"
            for pane in (self.timeline_pane, self.reads_pane, self.waits_pane):
                pane.object = None
            self._on_block()
            return
        self._make_scene(m)
        lines = [html.escape(x) for x in m.lines]
        note = html.escape(m.timeline.note)
        self.header.object = (
            f"<div style='font-size:1.05em'><b>{lines[0]}</b><br>"
            + "<br>".join(lines[1:])
            + f"<br><i>{note}</i></div>"
        )
        k = 1e-3 if m.timeline.has_clock else 1.0
        end = max(m.timeline.duration * k, 1e-9)
        self.time_slider.param.update(
            start=0.0,
            end=end,
            step=s.step_size * k,
            value=0.0,
            label="time (µs since the first block started)"
            if m.timeline.has_clock
            else "completed blocks (no clock: completion order)",
            format="0,0.000" if m.timeline.has_clock else "0",
        )
        nph = max(tr.n_phases, 1)
        self.phase.param.update(end=max(nph - 1, 1), value=0, disabled=True)
        has_waits = bool(tr.wait_hist.shape[0]) and bool(tr.wait_hist.sum())
        self.all_phases.disabled = self.barrier.disabled = not has_waits
        self._on_waits()
        self._on_time()
        self._on_block()

    def _make_scene(self, m: large.LargeModel) -> None:
        """The figures of model ``m``, the block grid ``grid_px`` a side, in the panes."""
        self.scene = LargeScene(m, grid_px=self.grid_px)
        self.scene.on_block(self.state.select_block)
        self.timeline_pane.object = self.scene.panels["timeline"]
        self.reads_pane.object = self.scene.panels["reads"]
        self.waits_pane.object = self.scene.panels["waits"]

    def _on_grid_px(self, *events) -> None:
        """The window changed: the same trace's figures again, at the same time and block."""
        m = self.state.model
        if self.scene is None or m is None:
            return
        with pn.io.hold():  # (one message: see _on_trace)
            self._make_scene(m)
            self._on_waits()
            self._on_time()
            self._on_block()

    def _on_slider(self, event) -> None:
        m = self.state.model
        if m is None:
            return
        k = 1e-3 if m.timeline.has_clock else 1.0
        self.state.go(event.new / k)

    def _on_time(self, *events) -> None:
        s, scene = self.state, self.scene
        if scene is None:
            return
        scene.set_time(s.time)
        m = s.model
        if m is None:
            return
        k = 1e-3 if m.timeline.has_clock else 1.0
        v = s.time * k
        if self.time_slider.value is None or abs(self.time_slider.value - v) > 1e-9:
            self.time_slider.value = v
        self.status_pane.object = self._status_html()

    def _on_waits(self, *events) -> None:
        s, scene = self.state, self.scene
        self.phase.disabled = s.all_phases or self.all_phases.disabled
        if scene is None or s.trace is None:
            return
        scene.set_waits(
            None if s.all_phases else min(s.phase, max(s.trace.n_phases - 1, 0)), s.barrier
        )

    def _on_block(self, *events) -> None:
        s = self.state
        if self.scene is not None:
            self.scene.select(s.block)
        self.block_pane.object = s.block_html()
        detailed = s.block is not None and s.trace is not None and s.trace.has_block(s.block)
        self.zoom_button.disabled = not detailed
        self.zoom_button.label = (
            "Open the per-thread replay"
            if s.block is None
            else f"Open the per-thread replay of ({s.block[0]}, {s.block[1]})"
        )
        self.alert.object = html.escape(s.message)
        self.alert.alert_type = s.message_kind
        self.alert.visible = bool(s.message)
        self.status_pane.object = self._status_html()

    def _on_playing(self, *events) -> None:
        s = self.state
        self._play_cb = parts.play(
            self.play_button, self._play_cb, s.tick, s.playing, s.speed, 16, self._served
        )

    def _status_html(self) -> str:
        import json

        st = self.state.status()
        attrs = " ".join(
            f'data-{k}="{html.escape(v if isinstance(v, str) else json.dumps(v), quote=True)}"'
            for k, v in st.items()
        )
        text = ""
        if st["ready"]:
            c = st["counts"]
            text = (
                f"<b>{html.escape(st['label'])}</b> · {c['running']:,} running · "
                f"{c['done']:,} done · {c['waiting']:,} not started"
                + (f" · {c['no_data']:,} not simulated" if c["no_data"] else "")
            )
        return f'<div id="vizmm-large-status" {attrs}>{text}</div>'

    def __panel__(self):
        return self.layout


# --------------------------------------------------------- simulate a window
class WindowForm(pn.viewable.Viewer):
    """Simulate a window of blocks of any size: estimate first, then record with progress.

    Only the window's blocks run in vizmm's simulator (blocks of these
    kernels are independent, so their records are exact); the others have
    no times or reads, and the page says so.
    """

    kernel: param.Selector[str] = param.Selector(
        default="boundary",
        objects=list(TILED_KERNELS),
        doc="'boundary' Fig. 5.13, 'tiled' Fig. 5.9, 'general' j x k . k x l",
    )
    j = param.Integer(default=1000, bounds=(1, 8192), label="rows of M (j) / Width")
    k = param.Integer(default=1000, bounds=(1, 8192), label="columns of M = rows of N (k)")
    l = param.Integer(default=1000, bounds=(1, 8192), label="columns of N (l)")  # noqa: E741
    tile_width = param.Integer(default=16, bounds=(1, MAX_TILE_WIDTH), label="TILE_WIDTH")
    window = param.String(default="0,0; 31,17", label="window blocks (by,bx; by,bx)")
    seed = param.Integer(default=2024, bounds=(0, 2**31 - 1), label="seed of the inputs")
    estimate = param.String(default="", precedence=-1)
    valid = param.Boolean(default=True, precedence=-1)
    busy = param.Boolean(default=False, precedence=-1)
    progress = param.Integer(default=0, precedence=-1)

    def __init__(
        self, on_trace: Callable[[Trace, str], None], served: bool | None = None, **params
    ):
        super().__init__(**params)
        self._on_trace = on_trace
        self._served = bool(pn.state.served) if served is None else served
        self._job: parts.Job | None = None
        self._poll = None
        self._button = pn.widgets.Button(label="Simulate the window", color="primary", width=200)
        parts.on_press(self._button, self.start)
        self._estimate_pane = pn.pane.Markdown("", width=360, styles={"font-size": "0.9em"})
        self._bar = pn.indicators.Progress(value=0, max=100, visible=False, width=340)
        self._update_estimate()

    def shape(self) -> tuple[int, int, int]:
        """``(j, k, l)``: square kernels use ``j`` for all three."""
        return (self.j, self.k, self.l) if self.kernel == "general" else (self.j,) * 3

    def blocks(self) -> list[tuple[int, int]]:
        """The window's blocks (raises ValueError for text that is not ``by,bx`` pairs)."""
        return parse_window(self.window)

    @param.depends("kernel", "j", "k", "l", "tile_width", "window", watch=True)
    def _update_estimate(self) -> None:
        j, k, l = self.shape()
        try:
            blocks = self.blocks()
            # the server's one admission (size, simulator time), arithmetic on sizes
            est = CATALOGUE.admit(j, k, l, self.tile_width, self.kernel, blocks, "simulator")
        except (ValueError, vizmm.RecordError) as exc:
            self.param.update(estimate=f"⚠ {in_words(exc, 'page')}", valid=False)
        else:
            text = (
                f"Estimate: {est.describe()}. Simulates {len(blocks)} of {est.blocks} blocks: "
                f"{large.format_blocks(blocks)}."
            )
            self.param.update(estimate=text, valid=True)
        self._button.disabled = not self.valid or self.busy
        self._estimate_pane.object = self.estimate

    def record_kwargs(self) -> dict:
        """Keyword arguments of :func:`vizmm.record` for this form."""
        spec = catalogue.RecordSpec(self.kernel, *self.shape(), self.tile_width, self.seed)
        return dict(spec.record_kwargs(), window=self.blocks(), quiet=True)

    def label(self) -> str:
        """A menu label for the simulated trace."""
        j, k, l = self.shape()
        shape = f"{j}×{j}" if j == k == l else f"{j}×{k}·{k}×{l}"
        return (
            f"Simulated window: {self.kernel} {shape} T={self.tile_width} · "
            f"{large.format_blocks(self.blocks(), 4)}"
        )

    def start(self) -> None:
        """Record the window in a thread (served) or right here (tests, notebooks)."""
        if not self.valid or self.busy:
            return
        kwargs, label = self.record_kwargs(), self.label()

        def work(job: parts.Job) -> Trace:
            return CATALOGUE.record(**kwargs, progress=job.progress, cancel=job.cancel)

        job = parts.Job(work, "window")
        self._job, self._job_label = job, label
        self.param.update(busy=True, progress=0)
        self._button.disabled = True
        self._bar.param.update(visible=True, value=0)
        if self._served:
            job.start()
            self._poll = parts.replace_timer(None, self.poll, 250)
            if pn.state.curdoc is not None:  # a closed page no longer waits for it
                pn.state.on_session_destroyed(lambda ctx: job.cancel.set())
        else:
            job.run()
            self.poll()

    def poll(self) -> None:
        """Show the recording's progress; hand the trace over when it is done."""
        job = self._job
        if job is None:
            return
        if job.percent is not None:
            self.progress = job.percent
            self._bar.value = self.progress
            self._estimate_pane.object = f"Simulating block {job.done} of {job.total} …"
        if not job.finished:
            return
        self._poll = parts.replace_timer(self._poll, None)
        self._job = None
        self.param.update(busy=False)
        self._bar.visible = False
        self._update_estimate()
        if isinstance(job.error, RecordingCancelled):
            return
        if job.error is not None:
            self._estimate_pane.object = f"⚠ The simulation failed: {job.error}"
            return
        self._on_trace(job.result, self._job_label)

    def __panel__(self):
        widgets, extra = parts.launch_inputs(
            self,
            ["kernel", "j", "tile_width", "window", "seed"],
            {
                "kernel": pn.widgets.RadioButtonGroup,
                "j": pn.widgets.IntInput,
                "seed": pn.widgets.IntInput,
            },
            360,
        )
        return pn.Column(widgets, extra, self._estimate_pane, self._button, self._bar, width=380)


# ---------------------------------------------------------------- the page
#: The standalone page above its block grid: header, window form, trace lines,
#: scrubber, status, block line and tabs (pixels); the grid's smallest and
#: natural side (pixels).
LARGE_CHROME = 310
LARGE_GRID_PX = (240, 470)
#: How long (s) a trace opened with the page waits, once the page is drawn, for the
#: browser to say its window's size before it is shown at the natural size.
SIZE_WAIT_S = 5.0


class LargeApp(pn.viewable.Viewer):
    """The standalone page: pick a shipped GPU trace (or a file), or simulate a window."""

    source: param.Selector[str] = param.Selector(default=None, objects=[], allow_None=True)

    def __init__(self, paths: list[str] | None = None, served: bool | None = None, **params):
        super().__init__(**params)
        self._served = bool(pn.state.served) if served is None else served
        self._drawn = parts.page_drawn(self._served)
        options = {
            label: key for key, label in LARGE_PRESETS.items() if shipped_large(key) is not None
        }
        given = set(CATALOGUE.give(paths)) if paths else set()
        for label, key in CATALOGUE.given_keys().items():
            options[label] = key
        self._simulated: dict[str, Trace] = {}
        self.param.source.objects = list(options.values())
        self.select = pn.widgets.Select(label="Trace", options=options, width=460)
        self.view = LargeTraceView(served=self._served)
        # the window's size: the block grid fits the first screen's height
        self.viewport = Viewport()
        self.viewport.param.watch(self._on_viewport, ["inner_height"])
        # set once the browser has said its window's height: a trace opened in a thread
        # is shown after it, so that its figures are made once, at the size they keep
        self._sized = threading.Event()
        self.form = WindowForm(on_trace=self._show_simulated, served=self._served)
        self.loading = pn.indicators.LoadingSpinner(value=False, width=30, height=30, visible=False)
        self.error = pn.pane.Alert("", alert_type="danger", visible=False)
        self.layout = pn.Column(
            parts.page_header(
                "large matrices: the whole launch, block by block", self.select, self.loading
            ),
            pn.Card(
                self.form,
                title="Simulate a window of blocks (any size)",
                collapsed=True,
                width=420,
                margin=(0, 10),
            ),
            self.error,
            self.view,
            self.viewport,
            sizing_mode="stretch_width",
        )
        first = next(iter(options.values()), None)
        if given:
            first = next(key for key in options.values() if key in given)
        elif DEFAULT_LARGE in options.values():
            first = DEFAULT_LARGE
        if first is not None:
            self.select.value = first
            self.open(first)
        else:
            self.error.param.update(
                object="No large trace is installed (vizmm/data) and none "
                "was given: simulate a window above, or serve with "
                "`--args trace.vizmm`.",
                visible=True,
            )
        self.select.param.watch(lambda e: self.open(e.new), "value")

    def open(self, key: str) -> None:
        """Show the trace of ``key`` (preset key, path, or a simulated window's label).

        Parameters
        ----------
        key : str
            A large preset's key, a path given to the server, or a simulated window's label.
        """
        if key in self._simulated:
            self.view.state.trace = self._simulated[key]
            return

        def done(trace=None, error=None):
            self.loading.param.update(value=False, visible=False)
            if error is not None:
                self.error.param.update(
                    object=html.escape(f"Could not open {key}: {error}"), visible=True
                )
                return
            self.error.visible = False
            self.view.state.trace = trace

        if not self._served:
            try:
                done(load_large(key))
            except (OSError, TraceError, ValueError) as exc:
                done(error=exc)
            return
        self.loading.param.update(value=True, visible=True)
        doc = pn.state.curdoc
        # bound now: a page closed meanwhile has its script's globals cleared (parts.to_page)
        load, size_wait, to_page = load_large, SIZE_WAIT_S, parts.to_page
        errors = (OSError, TraceError, ValueError)

        def work():
            try:
                trace, error = load(key), None
            except errors as exc:
                trace, error = None, exc
            self._drawn.wait(timeout=120)  # shown once the page is drawn (see parts.page_drawn)
            # and once the window's size is known: figures made before it would be made
            # again at once, while the browser still lays out the first ones
            self._sized.wait(timeout=size_wait)
            if doc is not None:
                to_page(doc, lambda: done(trace, error))
            else:  # pragma: no cover
                done(trace, error)

        threading.Thread(target=work, name="vizmm-large-load", daemon=True).start()

    def _on_viewport(self, *events) -> None:
        h = self.viewport.inner_height
        if self._served and h:
            # what the page shows above the grid, and the grid's axes and titles; in
            # steps of 20 pixels, so that a window a few pixels off builds no new figures
            side = (h - LARGE_CHROME) // 20 * 20 - 130
            self.view.grid_px = max(LARGE_GRID_PX[0], min(LARGE_GRID_PX[1], side))
            self._sized.set()

    def _show_simulated(self, trace: Trace, label: str) -> None:
        self._simulated[label] = trace
        options = dict(self.select.options)
        options[label] = label
        self.select.options = options
        self.select.value = label
        self.view.state.trace = trace

    def __panel__(self):
        return self.layout


# ------------------------------------------------------------ the dashboard
class DashboardLargeTab(pn.viewable.Viewer):
    """The dashboard's "Large matrices" tab: a :class:`LargeTraceView` of its trace.

    Shows the dashboard's current trace when it was recorded in aggregated
    mode (``not trace.is_detailed``), and says where to find one otherwise.
    Asking for a block's per-thread replay selects that block in the
    dashboard's state (its "Block replay" views follow) and calls
    :attr:`on_zoom` (the dashboard sets it to bring "Block replay" to the front).

    Parameters
    ----------
    state : vizmm_apps.dashboard.DashboardState
    """

    def __init__(self, state, **params):
        super().__init__(**params)
        self.dash_state = state
        self.on_zoom: Callable[[tuple[int, int]], None] | None = None
        self.view = LargeTraceView(embed_replay=False)
        labels = (
            ", ".join(
                f"*{label}*"
                for key, label in LARGE_PRESETS.items()
                if shipped_large(key) is not None
            )
            or "a large preset"
        )
        self.note = pn.pane.Markdown(
            "This view is for large launches recorded in aggregated mode: every block's SM, "
            "times, global reads and barrier waits, a few blocks per thread. Pick "
            f"{labels} in the menu, or load a file made with `vizmm record --window ...`. "
            "The trace shown now records every block per thread: see *Block replay*.",
            margin=(10, 10),
            width=760,
        )
        self.view.param.watch(self._on_zoom, ["zoom_block"])
        state.param.watch(self._on_trace, ["trace"])
        # The view's own layout is what is shown or hidden: a Viewer's `visible`
        # does not reach the layout it renders (the tab showed "No trace." and a
        # play button that played nothing under the note).
        self.view_layout = self.view.__panel__()
        self.layout = pn.Column(self.note, self.view_layout, sizing_mode="stretch_width")
        self._on_trace()

    def _on_trace(self, *events) -> None:
        tr = self.dash_state.trace
        aggregated = tr is not None and not tr.is_detailed
        self.note.visible = not aggregated
        self.view_layout.visible = aggregated
        if aggregated and self.view.state.trace is not tr:
            self.view.state.trace = tr

    def _on_zoom(self, event) -> None:
        if event.new is None:
            return
        by, bx = event.new
        self.dash_state.select_block(by, bx)
        if self.on_zoom is not None:
            self.on_zoom((by, bx))

    def __panel__(self):
        return self.layout


LARGE_TAB = "Large matrices"


def create_app(paths: list[str] | None = None, served: bool | None = None) -> LargeApp:
    """The standalone page for one browser session (traces shared by all sessions).

    Parameters
    ----------
    paths : list of str, optional
        Trace files to offer besides the presets (``vizmm serve --traces``).
    served : bool, optional
        Whether this runs in a Bokeh server session; by default ``pn.state.served``
        (which reads the call stack: the served script says so).
    """
    # the barrier waits' DataTable; focus ring and dark-theme contrast (vizmm_apps.access)
    page_extension(*parts.TABLE_EXTENSIONS)
    served = bool(pn.state.served) if served is None else served
    if served:
        catalogue.preload_once()
        parts.on_page_closed()
    app = LargeApp(paths=paths, served=served)
    app.layout.append(PageLandmarks())
    return app


if parts.served_script(__name__):  # served, not imported by the dashboard
    create_app([a for a in sys.argv[1:] if a.endswith(".vizmm")], served=True).servable(
        title="vizmm · large matrices"
    )
