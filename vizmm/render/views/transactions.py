"""The memory-transactions view's row: one cell per warp under the thread grid.

Each warp's cost at this step (sectors, segments or the n-way bank conflict)
against the ideal, the current warp outlined. A part of the threads view
(``host="threads"``): shown with it, on frames of ``Replay(transactions=True)``.
The banks of Mds and Nds and the current warp's threads are drawn on those
grids (:mod:`vizmm.render.views.tiles`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ...replay import Frame
from .. import palette as pal
from ..columns import (
    FrameContext,
    _columns_of,
)
from . import Later, ViewSpec, register

if TYPE_CHECKING:
    from ..scene_parts import GridPlace

__all__ = ["WARPS_KIND", "WARPS_HOVER", "WARPS", "TRANSACTIONS"]


def _warp_columns(frame: Frame, th: pal.Palette) -> dict[str, list]:
    """One cell per warp under the thread grid: its cost at this step against the ideal."""
    o = frame.transactions
    if o is None:
        return _columns_of("warps")
    n = o.n_warps
    unit = o.warp_unit
    text, fill = [], []
    for cost, ideal in zip(o.warp_cost, o.warp_ideal, strict=True):
        if not cost:
            text.append("·")
            fill.append(th.BACKGROUND)
        else:
            text.append(f"{cost}×" if unit == "-way" else str(cost))
            fill.append(th.GRID_LINE if cost <= ideal else th.TILE_OUTLINE)
    return {
        "x": [w + 0.5 for w in range(n)],
        "y": [0.5] * n,
        "text": text,
        "fill": fill,
        "text_color": [th.text_on(f) for f in fill],
        "line_color": [th.FOCUS if w == o.warp else th.MUTED for w in range(n)],
        "line_width": [3.0 if w == o.warp else 1.0 for w in range(n)],
        "label": list(o.warp_labels),
    }


class _WarpRow:
    """The per-warp row of one scene: a spacer keeping its place, then its plot.

    Until a frame first carries the transactions view its place is kept by
    a spacer of its size (most pages never show it); :meth:`make`, drawn as
    a part of :data:`TRANSACTIONS` (``Scene.draw_parts``), puts the row's
    plot in the spacer's place. The scene keeps it in ``scene.state["warps"]``.

    Attributes
    ----------
    space : bokeh.models.Spacer
        The row's place in the scene's layout, until it is drawn.
    fig : bokeh.models.Plot or None
        The row's plot (named ``vizmm-warps``), None until it is drawn.
    title : str
        Its heading, written only while the row has cells (:func:`_update_warps`).
    """

    def __init__(self, scene, threads: GridPlace):
        from bokeh.models import Spacer

        from ..scene_parts import wrap_title

        s = scene.sizes
        self.scene = scene
        self.width = threads.width
        self.nw = scene.trace.launch.warps_per_block
        self.cell = max(14, (threads.width - 30) / self.nw)
        # The row is as wide as the thread grid: a narrow grid (TILE_WIDTH 2 or 4)
        # gets its title on more lines, not cut at the grid's edge.
        self.title = wrap_title("per warp (memory transactions)", threads.width - 8, s.font + 1)
        lines = 1 + self.title.count("\n")
        self.height = int(min(self.cell, 40)) + lines * (s.font + 5) + s.font + 11
        # Its place is always kept (empty until a frame carries the transactions
        # view): showing and hiding it would lay out the page again, hidden tables
        # included. Its heading is written only while the row has cells.
        self.space = Spacer(width=threads.width, height=self.height)
        self.fig: Any = None

    def make(self) -> None:
        """The row's plot and cells, in the spacer's place."""
        from bokeh.models import Range1d

        from ..scene_parts import _cells, _centred_text, _hover

        scene, s = self.scene, self.scene.sizes
        f = scene._fig(
            self.width,
            self.height,
            Range1d(start=0, end=self.nw),
            Range1d(start=1, end=0),
            title=self.title,
        )
        f.title.text = ""  # (written by _update_warps while the row has cells)
        f.name = "vizmm-warps"
        add = scene._adder(f)
        src = scene.sources["warps"]
        r = _cells(add, src, 0.96, 0.9)
        _centred_text(add, src, f"{max(8, min(s.font, int(self.cell * 0.4)))}px")
        _hover(f, r, "warps")
        self.fig = f
        scene.replace(self.space, f)


def _draw_warps(scene, threads: GridPlace):
    """The per-warp transactions row's place under the thread grid (a spacer until it is drawn).

    Only on the full page: presenter and fitted scenes keep their sizes (None).
    """
    if scene.presenter or scene.fitted:
        return None
    row = scene.state["warps"] = _WarpRow(scene, threads)
    scene._later_part(TRANSACTIONS.name, None, row.make)
    return row.space


def _update_warps(scene, frame: Frame) -> None:
    """No heading over an empty row: the row's title only on frames with the transactions view."""
    row = scene.state.get("warps")
    if row is None or row.fig is None:
        return
    title = row.title if frame.transactions is not None else ""
    if row.fig.title.text != title:
        row.fig.title.text = title


#: The transactions view's parts of the scene (the banks of Mds and Nds, the
#: current warp's threads, the per-warp row), drawn once a frame first carries it.
TRANSACTIONS = Later("transactions", 1, lambda frame: frame.transactions is not None)


def _draw_pillow(renderer, img, draw, frame: Frame, p) -> None:
    """The current warp's threads (dashed) and one cell per warp under the thread grid.

    The Pillow drawing of the row (:class:`vizmm.render.pillow.FrameRenderer`
    calls it with the threads' panel ``p``), on frames with the transactions view.
    """
    from ..pillow_text import _draw_text, _ink_on, _rgb, _text_w

    o = frame.transactions
    if o is None:
        return
    for r, c in zip(*np.nonzero(o.warp_threads), strict=True):
        x0, y0, x1, y1 = p.cell_box(int(r), int(c))
        renderer._dashed_rect(draw, (x0, y0, x1, y1), _rgb(renderer.pal.FOCUS), 2, 4)
    n = o.n_warps
    h = round(renderer.fs_small * 1.7)
    y0 = p.y + p.h + round(renderer.fs_small * 0.5)
    if not renderer.transactions or y0 + h > renderer.size[1] - 2:
        return  # no room kept under the grid (FrameRenderer(transactions=False))
    w = p.w / n
    fs = max(7, min(renderer.fs_small, round(h * 0.6)))
    for i, (cost, ideal) in enumerate(zip(o.warp_cost, o.warp_ideal, strict=True)):
        box = (round(p.x + i * w), y0, round(p.x + (i + 1) * w) - 2, y0 + h)
        bad = cost > ideal
        fill = _rgb(renderer.pal.TILE_OUTLINE if bad else renderer.pal.GRID_LINE)
        if not cost:
            fill = _rgb(renderer.pal.BACKGROUND)
        line = _rgb(renderer.pal.FOCUS if i == o.warp else renderer.pal.MUTED)
        draw.rectangle(box, fill=fill, outline=line, width=3 if i == o.warp else 1)
        text = "·" if not cost else (f"{cost}×" if o.warp_unit == "-way" else str(cost))
        if _text_w(text, fs) < w - 2:
            _draw_text(draw, ((box[0] + box[2]) / 2, y0 + h / 2), text, fs, _ink_on(fill), "mm")


#: The row's columns, and what hovering over a warp says.
WARPS_KIND = {
    "warps": ("x", "y", "text", "fill", "text_color", "line_color", "line_width", "label")
}
WARPS_HOVER = {"warps": (("", "@label"),)}


def _columns(ctx: FrameContext, want: frozenset[str]) -> dict[str, dict[str, list]]:
    return {"warps": _warp_columns(ctx.frame, ctx.th)}


#: The per-warp row's spec.
WARPS = register(
    ViewSpec(
        name="warps",
        order=6,
        aspects=("transactions",),
        sources={"warps": "warps"},
        columns=_columns,
        kinds=WARPS_KIND,
        hover=WARPS_HOVER,
        host="threads",
        draw_bokeh=_draw_warps,
        place="middle",
        update_bokeh=_update_warps,
        later=TRANSACTIONS,
        draw_pillow=_draw_pillow,
    )
)
