"""The grid of blocks: the replayed block highlighted, a tap replays another.

Drawn by the Bokeh scene only (in the free corner of the matrices' plot, under
the threads or beside the source), not in GIF and MP4 frames.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from ...replay import Frame
from ...trace import Trace
from .. import palette as pal
from ..columns import FrameContext, _add_cell, _columns_of
from . import GridSpec, ViewSpec, below, register
from .matrices import MATRICES_PLOT
from .tiles import TILES_PLOT

if TYPE_CHECKING:
    from ..scene_parts import GridPlace

__all__ = ["BLOCKS_KIND", "BLOCKS_HOVER"]


def _block_columns(frame: Frame, trace: Trace, th: pal.Palette) -> dict[str, list]:
    gy, gx = trace.grid
    cols = _columns_of("blocks")
    for by in range(gy):
        for bx in range(gx):
            chosen = (by, bx) == tuple(frame.block)
            detailed = trace.has_block((by, bx))
            fill = th.TILE_OUTLINE if chosen else (th.BACKGROUND if detailed else th.GRID_LINE)
            if chosen:
                status = "replayed now"
            elif detailed:
                status = "recorded per thread: tap to replay"
            else:
                status = "not recorded per thread (aggregated only)"
            _add_cell(
                cols,
                by,
                bx,
                by=by,
                bx=bx,
                fill=fill,
                line_color=th.TEXT if chosen else th.MUTED,
                line_width=2.0 if chosen else 1.0,
                text=f"{by},{bx}",
                text_color=th.text_on(fill),
                status=status,
            )
    return cols


#: The grid of blocks' columns, and what hovering over a block says.
BLOCKS_KIND = {
    "blocks": ("x", "y", "by", "bx", "fill", "line_color", "line_width", "text", "text_color")
    + ("status",)
}
BLOCKS_HOVER = {"blocks": (("block", "(@by, @bx)"), ("", "@status"))}


def _blocks_box(scene) -> GridPlace:
    """The block grid's box (:meth:`_grid_box`), its cells at most 44 pixels."""
    gy, gx = scene.trace.grid
    cell = int(max(10, min(44 * (1.3 if scene.presenter else 1), 200 // max(gy, gx))))
    if scene.sizes.blocks_cell:
        cell = scene.sizes.blocks_cell
    return scene._grid_box("blocks", gy, gx, cell, "blocks (by, bx)")


def _draw_blocks(scene, f, box: GridPlace):
    """The block grid ``box`` drawn on ``f`` (a :attr:`GridSpec.draw`): its cells' renderer."""
    from bokeh.models import TapTool

    from ..scene_parts import _cells, _centred_text, _hover

    s = scene.sizes
    cell = box.cell
    src = scene.sources["blocks"]
    add = scene._adder(f, selectable=True, grid="blocks")
    r = _cells(add, src, 0.92, tappable=True)
    if cell >= 34:
        _centred_text(add, src, f"{max(9, min(s.font, cell // 3))}px")
    _hover(f, r, "blocks")
    f.add_tools(TapTool(renderers=[r]))
    return r


def _in_corner(scene, boxes: Mapping[str, GridPlace], placed) -> tuple[int, int] | None:
    """The matrices' free corner, above M and left of N, where the grid fits in it (Fig. 5.10)."""
    m, n, b = boxes.get("M"), boxes.get("N"), boxes["blocks"]
    if m is None or n is None or b.width > m.width or b.height > n.height:
        return None
    return 0, 0


def _under_tiles(scene, boxes: Mapping[str, GridPlace], placed) -> tuple[int, int] | None:
    """Under the threads, on a page fitted to a window whose matrices' corner is too small."""
    if not (placed and scene.sizes.blocks_below):
        return None
    return below(placed)


def _own_plot(scene):
    """The block grid on a plot of its own (right of the source), where no shared plot took it."""
    if "blocks" in scene.grids:
        return None
    own = GridSpec(OWN_PLOT, "right", _blocks_box, lambda *_: (0, 0), _draw_blocks)
    return scene._grid_plot(OWN_PLOT, [("blocks", own)])


#: The block grid's plot where it is on neither shared plot.
OWN_PLOT = "vizmm-blocks-plot"


def _blocks(ctx: FrameContext, want: frozenset[str]) -> dict[str, dict[str, list]]:
    return {"blocks": _block_columns(ctx.frame, ctx.trace, ctx.th)}


register(
    ViewSpec(
        name="blocks",
        order=10,
        aspects=(),
        sources={"blocks": "blocks"},
        columns=_blocks,
        kinds=BLOCKS_KIND,
        hover=BLOCKS_HOVER,
        grids=(
            GridSpec(MATRICES_PLOT, "left", _blocks_box, _in_corner, _draw_blocks),
            GridSpec(TILES_PLOT, "middle", _blocks_box, _under_tiles, _draw_blocks),
        ),
        tap=True,
        draw_bokeh=_own_plot,
        place="right",
    )
)
