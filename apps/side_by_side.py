"""Two replays side by side, in lockstep, with their counters next to each other.

``vizmm serve`` serves it at ``/side_by_side`` (http://localhost:5006/side_by_side),
and the dashboard links to it. Each pane is titled by what sets it apart.

Pairs (``?pair=``): ``tile-width`` (TILE_WIDTH 2 against 4 on the book's 4 x 4
example, both with Fig. 5.9's kernel), ``boundary`` (the boundary-checked
kernel of Fig. 5.13 against the unchecked one of Fig. 5.9 on 3 x 3),
``barrier`` (Fig. 5.9's kernel with and without its first ``__syncthreads()``:
the barrier lab, recorded in the simulator's turns), ``naive`` (the tiled
kernel against the naive kernel of Fig. 3.11: the naive kernel has no tiles to
draw, so its side shows its global loads at the same moment); with the memory-
transactions view on both sides, ``coalescing`` (the book's loads against the
uncoalesced kernel's), ``bank-conflict`` (``Nds[k][tx]`` against
``Nds[tx][k]``) and ``padding`` (the conflict against its fix). Step with the
buttons or the keys (← → Home End); both sides stay at the same phase and sub-
step where both have one (:class:`vizmm.replay.Lockstep`). ``?theme=dark`` for
dim rooms.

The app only holds choices: the joint timeline is the replay layer's, the
pictures are the dashboard's :class:`~vizmm.render.bokeh_scene.Scene`.
"""

from __future__ import annotations

import dataclasses
import html
import json
import threading
from typing import TYPE_CHECKING

import panel as pn
import param

from vizmm.render.bokeh_scene import PRESENTER_VIEWS, Scene  # noqa: E402
from vizmm.replay import ASPECT_FIELDS, Lockstep, Replay  # noqa: E402
from vizmm.replay.navigator import clamp  # noqa: E402
from vizmm.serve.catalogue import CATALOGUE  # noqa: E402
from vizmm_apps.access import PageLandmarks, page_extension  # noqa: E402
from vizmm_apps.keys import KeyboardShortcuts  # noqa: E402
from vizmm_apps.parts import (  # noqa: E402
    drop_long_url_values,
    on_press,
    page_drawn,
    page_header,
    served_script,
    to_page,
)
from vizmm_apps.url_params import link_one_based  # noqa: E402
from vizmm_apps.viewport import Viewport  # noqa: E402

__all__ = [
    "PAIRS",
    "Pair",
    "SideBySideState",
    "SideBySide",
    "STATUS_FIELDS",
    "STATUS_ASPECTS",
    "create_app",
]

#: The views each side shows: presenter mode's (what a class must see).
SIDE_VIEWS = PRESENTER_VIEWS
#: The fields of a frame :meth:`SideBySideState.status` reads (each side's loads so far),
#: and the aspects holding them: the status's frames are made of only those.
STATUS_FIELDS = frozenset({"loads_so_far", "naive_loads_so_far"})
STATUS_ASPECTS: tuple[str, ...] = tuple(
    a for a, fields in ASPECT_FIELDS.items() if STATUS_FIELDS.intersection(fields)
)
#: Pixels each side fits in (two of them fit a 1600-pixel-wide page) until the
#: browser says its window's size; then each side is fitted to half the window.
SIDE_BOX = (770, 600)
#: What the page's header, note, status line, pane titles, gap and margins take
#: of the window (pixels, width and height), and the smallest side it draws.
SIDE_CHROME = (60, 200)
SIDE_MIN = (400, 320)


@dataclasses.dataclass(frozen=True)
class Pair:
    """Two traces to compare (catalogue keys; right None: the naive kernel).

    ``titles``: what each pane is titled, by what sets it apart (the one
    difference the note speaks of).
    """

    label: str
    left: str
    right: str | None
    note: str
    titles: tuple[str, str]
    transactions: bool = False  # both sides draw the memory-transactions view


PAIRS = {
    "tile-width": Pair(
        "TILE_WIDTH 2 against 4 · 4×4 (Fig. 5.7)",
        "fig5-8",
        "rec:tiled:4x4x4:T4:s0:simulator",
        "The same kernel (Fig. 5.9's tiled kernel) on the same inputs; only TILE_WIDTH "
        "changes. Twice the tile width: half the phases, each with twice the k steps; "
        "global loads halve again.",
        ("TILE_WIDTH 2 (Fig. 5.9's kernel)", "TILE_WIDTH 4 (the same kernel)"),
    ),
    "boundary": Pair(
        "Boundary checks (Fig. 5.13) against none (Fig. 5.9) · 3×3",
        "fig5-11",
        "fig5-9-3x3",
        "Where the checked kernel zero-fills, the unchecked one reads a wrong element "
        "(row wrap) or past the end of N.",
        ("With boundary checks (Fig. 5.13)", "Without boundary checks (Fig. 5.9)"),
    ),
    "barrier": Pair(
        "With barrier 1 against without it · 4×4, TILE_WIDTH 2 (barrier lab)",
        "rec:tiled:4x4x4:T2:s0:simulator",
        "rec:tiled:4x4x4:T2:s0:simulator:d1",
        "Without the first __syncthreads() (right) the threads go from loading straight to "
        "the k loop and may read Mds / Nds before the others have written them "
        "(read-after-write); the left waits at the barrier while the right does not.",
        (
            "Both barriers: none removed (Fig. 5.9)",
            "Lacks barrier 1: no __syncthreads() after the loads",
        ),
    ),
    "naive": Pair(
        "Tiled (Fig. 5.9) against naive (Fig. 3.11) · 4×4",
        "fig5-8",
        None,
        "The naive kernel has no tiles: every thread reads its row of M and column of N "
        "from global memory, k elements of each.",
        ("Tiled (Fig. 5.9)", "Naive (Fig. 3.11): no tiles, its loads in the counters"),
    ),
    "coalescing": Pair(
        "Memory: the book's loads against the roles swapped (uncoalesced) · 32×32, T=16",
        "coalesced",
        "uncoalesced",
        "At each load, warp 0's sectors are outlined: two 64-byte runs of a row (4 sectors) "
        "on the left, one sector in each of 16 rows on the right.",
        ("The book's loads (coalesced)", "Roles swapped (uncoalesced)"),
        transactions=True,
    ),
    "bank-conflict": Pair(
        "Memory: Nds[k][tx] against Nds[tx][k] (8-way bank conflict) · 32×32, T=16",
        "coalesced",
        "conflict",
        "At each k, every Nds slot shows its bank: warp 0 reads 16 banks on the left, "
        "8 words in each of 2 banks on the right (conflicts in red).",
        ("Nds[k][tx]: no bank conflict", "Nds[tx][k]: 8-way bank conflict"),
        transactions=True,
    ),
    "padding": Pair(
        "Memory: the bank conflict against the padding fix (TILE_WIDTH + 1 columns)",
        "conflict",
        "padded",
        "One more column in Nds moves each thread's word to its own bank: the 8-way "
        "conflict is gone.",
        ("Nds[tx][k]: 8-way bank conflict", "Padded (TILE_WIDTH + 1 columns): no conflict"),
        transactions=True,
    ),
}

_KEYS = ["ArrowRight", "ArrowLeft", "Home", "End"]


class SideBySideState(param.Parameterized):
    """The pair shown and the joint step; :attr:`lockstep` once both traces are loaded."""

    pair: param.Selector[str] = param.Selector(default="tile-width", objects=list(PAIRS))
    step = param.Integer(default=0, bounds=(0, None), doc="Joint step (both sides), 0-based.")
    url_step = param.Integer(
        default=1, bounds=(1, None), doc="The URL's step: 1-based, as the page numbers it."
    )
    theme: param.Selector[str] = param.Selector(default="light", objects=["light", "dark"])
    lockstep = param.ClassSelector(class_=Lockstep, default=None, allow_None=True, precedence=-1)
    message = param.String(default="", precedence=-1)

    def __init__(self, **params) -> None:
        super().__init__(**params)
        link_one_based(self, "step", "url_step")  # the page's "Step N" is N

    def load(self) -> None:
        """Load the pair's traces (recording any not yet cached) and build the lockstep."""
        pair = PAIRS[self.pair]
        try:
            tx = pair.transactions
            left = Replay(CATALOGUE.get(pair.left), transactions=tx)
            right = Replay(CATALOGUE.get(pair.right), transactions=tx) if pair.right else left
        except Exception as exc:  # noqa: BLE001 - shown on the page
            self.param.update(lockstep=None, message=f"Could not load the pair: {exc}")
            return
        both = Lockstep(left, right)
        self.param.update(lockstep=both, step=clamp(self.step, both), message="")

    def go(self, step: int) -> None:
        """Go to joint step ``step`` (clamped).

        Parameters
        ----------
        step : int
            A joint step of the two replays (0-based).
        """
        if self.lockstep is not None:
            self.step = clamp(step, self.lockstep)

    def handle_key(self, key: str) -> None:
        """← → Home End, as in the dashboard.

        Parameters
        ----------
        key : str
            A ``KeyboardEvent.key`` value: ``'ArrowRight'``, ``'ArrowLeft'``, ``'Home'``, ``'End'``.
        """
        n = len(self.lockstep) if self.lockstep is not None else 1
        target = {
            "ArrowRight": self.step + 1,
            "ArrowLeft": self.step - 1,
            "Home": 0,
            "End": n - 1,
        }.get(key)
        if target is not None:
            self.go(target)

    def status(self) -> dict:
        """What the page shows, as plain data (the page puts it in ``#vizmm-pair-status``)."""
        both = self.lockstep
        if both is None:
            return {"ready": False, "pair": self.pair, "message": self.message}
        fl, fr = both.frames(self.step, aspects=STATUS_ASPECTS)
        naive = PAIRS[self.pair].right is None

        def side(frame, replay, is_naive=False):
            s = frame.step
            if is_naive:  # no tiles, no phases: the reads for the terms the left has fed
                return {
                    "kernel": "naive",
                    "tile_width": None,
                    "step": frame.index,
                    "phase": None,
                    "sub": "the same terms of Pvalue as the left",
                    "k": None,
                    "loads": int(frame.naive_loads_so_far),
                }
            return {
                "kernel": replay.trace.kernel,
                "tile_width": replay.trace.tile_width,
                "step": frame.index,
                "phase": s.phase,
                "sub": s.sub.value,
                "k": s.k,
                "loads": int(frame.loads_so_far),
            }

        titles = PAIRS[self.pair].titles
        return {
            "ready": True,
            "pair": self.pair,
            "titles": list(titles),
            "step": self.step,
            "count": len(both),
            "left": side(fl, both.left),
            "right": side(fr, both.right, naive),
            "message": self.message,
        }


class SideBySide(pn.viewable.Viewer):
    """The page: a pair menu, one row of controls, the two scenes and their counters."""

    if TYPE_CHECKING:  # never None: __init__ makes one when none is given
        state: SideBySideState
    else:
        state = param.ClassSelector(class_=SideBySideState)

    def __init__(self, state: SideBySideState | None = None, served: bool | None = None, **params):
        served = bool(pn.state.served) if served is None else served
        super().__init__(state=state or SideBySideState(), **params)
        s = self.state
        self._served = served
        self._scenes: tuple[Scene, Scene | None] | None = None
        self._scenes_fit: tuple[int, int] | None = None  # the side's pixels they were fitted to
        # the window's size: each side fits half of it (_side_fit)
        self.viewport = Viewport()
        self.viewport.param.watch(self._on_viewport, ["inner_width", "inner_height"])
        self._drawn = page_drawn(served)
        self.pair_select = pn.widgets.Select(
            name="Compare", options={p.label: k for k, p in PAIRS.items()}, value=s.pair, width=420
        )
        self.pair_select.param.watch(lambda e: setattr(s, "pair", e.new), "value")

        def button(label, action):
            b = pn.widgets.Button(label=label, width=54, margin=(5, 2))
            on_press(b, action)
            return b

        self.buttons = pn.Row(
            button("|◀", lambda: s.handle_key("Home")),
            button("◀", lambda: s.handle_key("ArrowLeft")),
            button("▶", lambda: s.handle_key("ArrowRight")),
            button("▶|", lambda: s.handle_key("End")),
        )
        self.note = pn.pane.Markdown("", margin=(0, 10))
        self.status_pane = pn.pane.HTML("", height=22, sizing_mode="stretch_width")
        self.counters = pn.pane.HTML("", margin=(0, 10))
        self.left_pane = pn.pane.Bokeh(None, sizing_mode="fixed")
        self.right_pane = pn.pane.Bokeh(None, sizing_mode="fixed")
        # each pane titled by what sets it apart (which barrier it lacks ...)
        self.left_title = pn.pane.HTML("", margin=(0, 10))
        self.right_title = pn.pane.HTML("", margin=(0, 10))
        self.keys = KeyboardShortcuts(on_key=s.handle_key, keys=_KEYS)
        # the two replays first, fitted to the window; their counters under them
        self.layout = pn.Column(
            page_header("side by side", self.pair_select, self.buttons),
            self.note,
            self.status_pane,
            pn.Row(
                pn.Column(self.left_title, self.left_pane),
                pn.Column(self.right_title, self.right_pane),
                styles={"gap": "20px"},
            ),
            self.counters,
            self.keys,
            self.viewport,
            PageLandmarks(),
        )
        if served and pn.state.location is not None:  # before the watchers: ?step= stays
            drop_long_url_values(pn.state.location)
            pn.state.location.sync(s, {"pair": "pair", "url_step": "step", "theme": "theme"})
        s.param.watch(self._on_pair, ["pair"])
        s.param.watch(self._on_lockstep, ["lockstep"])
        s.param.watch(self._draw, ["step"])
        self._on_pair()

    # ---------------------------------------------------------- loading
    def _on_pair(self, *events) -> None:
        s = self.state
        self.pair_select.value = s.pair
        self.note.object = PAIRS[s.pair].note
        panes = (self.left_title, self.right_title)
        for pane, side, title in zip(panes, ("left", "right"), PAIRS[s.pair].titles, strict=True):
            pane.object = (
                f'<h2 class="vizmm-pane-title" data-side="{side}" style="font-size:18px;'
                f'margin:4px 0">{html.escape(title)}</h2>'
            )
        if events:
            s.step = 0
        if not self._served:
            s.load()
            return
        # recording a pair's trace can take seconds: off the event loop
        doc = pn.state.curdoc
        self.status_pane.object = '<div id="vizmm-pair-status" data-ready="false">Loading…</div>'

        # bound now: a page closed meanwhile has its script's globals cleared (parts.to_page)
        make, hand_over = SideBySideState, to_page

        def work():
            both_state = make(pair=s.pair, step=s.step)
            both_state.load()
            self._drawn.wait(timeout=120)  # shown once the page is drawn (see page_drawn)

            def apply():
                s.param.update(lockstep=both_state.lockstep, message=both_state.message)

            if doc is not None:
                hand_over(doc, apply)

        threading.Thread(target=work, name="vizmm-side-by-side", daemon=True).start()

    def _on_lockstep(self, *events) -> None:
        s, both = self.state, self.state.lockstep
        if both is None:
            self._scenes = None
            self.left_pane.object = self.right_pane.object = None
            self._draw()
            return
        s.step = min(s.step, len(both) - 1)
        if self._served and not self._window_known():
            # the scenes are built once the window's size is known (_on_viewport)
            self._scenes = self._scenes_fit = None
            self._draw()
            return
        fit = self._side_fit()
        left = Scene(both.left.trace, views=SIDE_VIEWS, theme=s.theme, page=fit)
        right = None
        if PAIRS[s.pair].right is not None:
            right = Scene(both.right.trace, views=SIDE_VIEWS, theme=s.theme, page=fit)
        self._scenes, self._scenes_fit = (left, right), fit
        self._draw()
        self.left_pane.object = left.layout
        self.right_pane.object = right.layout if right is not None else None
        self.right_pane.visible = right is not None

    def _window_known(self) -> bool:
        return bool(self.viewport.inner_width and self.viewport.inner_height)

    def _side_fit(self) -> tuple[int, int]:
        """Pixels each side fills: half the window less the page's parts (SIDE_BOX till known)."""
        if not (self._served and self._window_known()):
            return SIDE_BOX
        w = (self.viewport.inner_width - SIDE_CHROME[0]) // 2
        h = self.viewport.inner_height - SIDE_CHROME[1]
        # in steps of 20 pixels, so that a window a few pixels off builds no new scenes
        return (max(SIDE_MIN[0], w // 20 * 20), max(SIDE_MIN[1], h // 20 * 20))

    def _on_viewport(self, *events) -> None:
        if self.state.lockstep is not None and self._side_fit() != self._scenes_fit:
            self._on_lockstep()

    # ---------------------------------------------------------- drawing
    def _draw(self, *events) -> None:
        # the scenes' sources are Bokeh models changed directly: held, as the
        # dashboard's (parts.on_press says when Panel runs this without the lock)
        with pn.io.hold():
            self._draw_now()

    def _draw_now(self) -> None:
        s = self.state
        st = s.status()
        # ready once the scenes are fitted to the window (a served page's)
        st["ready"] = st["ready"] and (not self._served or self._scenes_fit == self._side_fit())
        if st["ready"] and self._scenes is not None and s.lockstep is not None:
            left, right = self._scenes
            # each side's frame made of what its scene shows (both show SIDE_VIEWS)
            shown = set(left.aspects).union(right.aspects if right is not None else ())
            fl, fr = s.lockstep.frames(s.step, aspects=shown)
            left.update(fl)
            if right is not None:
                right.update(fr)
        self.counters.object = _counters_html(st)
        attrs = " ".join(
            f'data-{k}="{html.escape(v if isinstance(v, str) else json.dumps(v), quote=True)}"'
            for k, v in st.items()
        )
        text = (
            f"<b>Step {st['step'] + 1} / {st['count']}</b> · both sides at the same phase and "
            "sub-step where both have one"
            if st["ready"]
            else html.escape(st.get("message") or "Loading…")
        )
        self.status_pane.object = f'<div id="vizmm-pair-status" {attrs}>{text}</div>'

    def __panel__(self):
        return self.layout


def _counters_html(st: dict) -> str:
    """The two sides' counters in one table."""
    if not st.get("ready"):
        return ""

    def where(side):
        if side["phase"] is None:
            return side["sub"]
        k = f", k = {side['k']}" if side["k"] is not None else ""
        return f"phase {side['phase']} · {side['sub']}{k}"

    rows = [
        ("kernel", *(s["kernel"] for s in (st["left"], st["right"]))),
        ("TILE_WIDTH", *(s["tile_width"] or "-" for s in (st["left"], st["right"]))),
        ("now", *(where(s) for s in (st["left"], st["right"]))),
        ("global loads of M, N so far", *(s["loads"] for s in (st["left"], st["right"]))),
    ]
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in row) + "</tr>" for row in rows
    )
    return (
        "<table style='font-size:16px;border-collapse:collapse' cellpadding='4'>"
        "<tr><th></th><th>left</th><th>right</th></tr>" + body + "</table>"
    )


def create_app(served: bool | None = None) -> SideBySide:
    """A side-by-side page for one browser session.

    Parameters
    ----------
    served : bool, optional
        Whether this runs in a Bokeh server session; by default ``pn.state.served``
        (which reads the call stack: the served script says so).
    """
    page_extension()
    return SideBySide(served=served)


if served_script(__name__):
    create_app(served=True).servable(title="vizmm · side by side")
