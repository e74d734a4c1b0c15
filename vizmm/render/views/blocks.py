"""The grid of blocks: the replayed block highlighted, a tap replays another.

Drawn by the Bokeh scene only (in the free corner of the matrices' plot, under
the threads or beside the source), not in GIF and MP4 frames.
"""

from __future__ import annotations

from ...replay import Frame
from ...trace import Trace
from .. import palette as pal
from ..columns import (
    FrameContext,
    _add_cell,
    _columns_of,
)
from . import ViewSpec, register

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
    )
)
