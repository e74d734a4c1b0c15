"""The memory-transactions view's row: one cell per warp under the thread grid.

Each warp's cost at this step (sectors, segments or the n-way bank conflict)
against the ideal, the current warp outlined. A part of the threads view
(``host="threads"``): shown with it, on frames of ``Replay(transactions=True)``.
The banks of Mds and Nds and the current warp's threads are drawn on those
grids (:mod:`vizmm.render.views.tiles`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ...replay import Frame
from .. import palette as pal
from ..columns import (
    FrameContext,
    _columns_of,
)
from . import ViewSpec, register

if TYPE_CHECKING:
    from ..scene_parts import GridPlace

__all__ = ["WARPS_KIND", "WARPS_HOVER", "WARPS"]


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


def _draw_warps(scene, threads: GridPlace):
    """The per-warp transactions row under the thread grid (shown with the view on).

    Until a frame first carries the transactions view its place is kept by
    a spacer of its size (most pages never show it); the row's plot then
    takes the spacer's place (:meth:`_draw_part`) in the column that holds
    it (:attr:`_warps_parent`, set by :meth:`_build`).
    """
    from bokeh.models import Range1d, Spacer

    from ..scene_parts import _cells, _centred_text, _hover, wrap_title

    s = scene.sizes
    nw = scene.trace.launch.warps_per_block
    cell = max(14, (threads.width - 30) / nw)
    # The row is as wide as the thread grid: a narrow grid (TILE_WIDTH 2 or 4)
    # gets its title on more lines, not cut at the grid's edge.
    title = wrap_title("per warp (memory transactions)", threads.width - 8, s.font + 1)
    height = int(min(cell, 40)) + (1 + title.count("\n")) * (s.font + 5) + s.font + 11
    # Its place is always kept (empty until a frame carries the transactions
    # view): showing and hiding it would lay out the page again, hidden tables
    # included. Its heading is written only while the row has cells (see update).
    space = Spacer(width=threads.width, height=height)

    def make() -> None:
        f = scene._fig(
            threads.width,
            height,
            Range1d(start=0, end=nw),
            Range1d(start=1, end=0),
            title=title,
        )
        f.title.text = ""  # (written by update while the row has cells)
        add = scene._adder(f)

        def cells() -> None:
            src = scene.sources["warps"]
            r = _cells(add, src, 0.96, 0.9)
            _centred_text(add, src, f"{max(8, min(s.font, int(cell * 0.4)))}px")
            _hover(f, r, "warps")

        scene._later_part("transactions", f, cells)
        f.name = "vizmm-warps"
        scene._warps_fig = f
        parent = scene._warps_parent
        parent.children = [f if c is space else c for c in parent.children]

    scene._warps_make = make
    scene._warps_title = title
    return space


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
        draw_pillow=_draw_pillow,
    )
)
