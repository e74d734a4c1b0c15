"""How big a :class:`~vizmm.render.bokeh_scene.Scene` draws: cells, type, boxes.

``_Sizes`` is worked out once per scene from the trace, the views shown and
the room it has (the dashboard's page, presenter mode's projector, a fitted
window).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable

from ..trace import Trace
from .columns import CAPTION_CHARS, COUNTER_CHARS, DIGIT_EM  # noqa: F401 - DIGIT_EM, as it was
from .views.text import _source_lines

__all__ = ["PRESENTER_BOX", "DIGIT_EM", "MIN_INDEX_PX"]

#: Pixels (width, height) a presenter scene fits in: a 1024 x 768 or 1280 x 720
#: projector less the page's one row of controls and its status line.
PRESENTER_BOX = (990, 610)
MIN_INDEX_PX = 8  # smallest type of a grid's index labels before indices are left out


def _title_columns(cols: int, cell: float, title: str, font: int) -> int:
    """Empty columns a grid's box gets so that its title (bold, ``font + 1`` px) fits."""
    title_px = 40 + len(title) * 0.62 * (font + 1)
    return max(0, math.ceil((title_px - (cols * cell + 30)) / cell))


def _box_size(rows: int, cols: int, cell: float, title: str, font: int) -> tuple[int, int]:
    """(width, height) of a grid's box (:meth:`Scene._grid_box`), pixels."""
    extra = _title_columns(cols, cell, title, font)
    return int((cols + extra) * cell + 30), int(rows * cell + 30 + 2 * font)


@dataclasses.dataclass(frozen=True)
class _Sizes:
    """Pixel sizes of a scene (normal or presenter)."""

    cell: int  # matrix cell
    scell: int  # Mds / Nds / thread cell
    font: int  # base text size
    mono: int  # source / table / counters
    char: float  # width of one monospace character
    line: int  # height of one text line
    matrix_text: bool
    shared_text: bool

    caption_chars: int = CAPTION_CHARS
    blocks_cell: int = 0  # the block grid's cell (0: its own rule, see Scene._blocks_box)
    blocks_below: bool = False  # the block grid under the threads, not above M

    @classmethod
    def of(cls, trace: Trace, presenter: bool, views: Iterable[str]) -> _Sizes:
        if presenter:
            return cls._fit(trace, set(views), *PRESENTER_BOX)
        T = trace.tile_width
        ext = max(trace.launch.padded)  # the tiles' extent, matrices rounded up to whole tiles
        cell = int(min(60, max(5, 290 // ext)))
        scell = int(min(78, max(12, 170 // T)))
        mono = 12
        return cls(
            cell=cell,
            scell=scell,
            font=13,
            mono=mono,
            char=0.61 * mono,
            line=int(round(mono * 1.55)),
            matrix_text=cell >= 24,
            shared_text=scell >= 36,
        )

    @classmethod
    def page(cls, trace: Trace, v: set[str], width: int, height: int, legend_px: int = 0) -> _Sizes:
        """The full page's sizes fitted to ``width`` x ``height`` pixels (a browser window's).

        The kernel listing keeps its type (12 px) where its lines fit the
        height, else smaller (down to 9 px), and smaller again where at its
        width the matrices' cells would be under 24 pixels; the matrices' and the shared
        tiles' cells then scale together from the page's default sizes
        (:meth:`of`, up to 60 and 90 pixels) to the largest that fit beside
        the listing and under the height: M, N, P, the blocks, Mds, Nds and
        the threads on one screen. The block grid goes under the threads
        where the corner above M is too small for it. The caption, if
        shown, takes its four lines off the height and wraps to the width.
        The legend, the counters and the table may lie below.
        """
        font = 13
        T = trace.tile_width
        jp, kp, lp = trace.launch.padded
        j, k, l = trace.shape
        gy, gx = trace.grid
        caption_chars = int((width - 20) / (0.6 * (font + 1)))
        if "caption" in v:  # its four lines above the rest (Scene._caption), 10 pixels apart
            height -= 4 * int(round(12 * 1.55)) + 8 + 10
        lines = _source_lines(trace.meta.get("source", "") or "") if "source" in v else ()
        mono = 12
        while lines and mono > 9 and len(lines) * int(round(mono * 1.55)) + 8 > height:
            mono -= 1

        def room_of(mono: int) -> float:
            """The width the grids have beside the listing and counters in ``mono`` px type."""
            char = 0.61 * mono
            right = 0.0
            if lines:
                right = (max(len(x) for x in lines) + 5) * char + 12
            if "counters" in v:
                right = max(right, COUNTER_CHARS * char + 12)
            columns = bool(v & {"M", "N", "P"}) + bool(v & {"Mds", "Nds", "threads"}) + bool(right)
            return width - right - 22 * max(0, columns - 1)

        ext = max(trace.launch.padded)
        shared = [name for name in ("Mds", "Nds") if name in v]

        def layout(f: float, room: float):
            cell = int(min(60, max(5, 290 * f / ext)))
            scell = int(min(90, max(12, 170 * f / T)))
            box = {
                name: _box_size(r, c, cell, f"{name} ({a} × {b})", font)
                for name, r, c, a, b in (
                    ("M", jp, kp, j, k),
                    ("N", kp, lp, k, l),
                    ("P", jp, lp, j, l),
                )
                if name in v
            }
            left_w = (box["M"][0] if "M" in box else 0) + max(
                (box[n][0] for n in ("N", "P") if n in box), default=0
            )
            left_h = (box["N"][1] if "N" in box else 0) + max(
                (box[n][1] for n in ("M", "P") if n in box), default=0
            )
            sw, sh = _box_size(T, T, scell, "Mds (shared)", font)
            tw, th = _box_size(T, T, scell, "threads (ty, tx)", font)
            mid_w = max(len(shared) * (sw + 10) - 10, tw if "threads" in v else 0, legend_px)
            mid_h = (sh + 8 if shared else 0) + (th if "threads" in v else 0)
            bcell = int(max(10, min(44, 200 // max(gy, gx), scell)))
            bw, bh = _box_size(gy, gx, bcell, "blocks (by, bx)", font)
            below = False
            if "blocks" in v:
                corner = "M" in box and "N" in box
                if not (corner and bw <= box["M"][0] and bh <= box["N"][1]):
                    below = True
                    mid_w, mid_h = max(mid_w, bw), mid_h + 8 + bh
            fits = left_w + mid_w <= room and max(left_h, mid_h) <= height
            return fits, cell, scell, bcell, below

        def largest(mono: int):
            """The largest scale that fits beside the listing in ``mono`` px type."""
            room, f = room_of(mono), 1.6
            got = layout(f, room)
            while not got[0] and f > 0.05:
                f -= 0.02
                got = layout(f, room)
            return got

        # A long listing (a kernel of one's own) takes smaller type before the
        # matrices' cells get too small for their values (24 px).
        chosen, type_px = largest(mono), mono
        for smaller in range(mono - 1, 8, -1):
            if chosen[0] and chosen[1] >= 24:
                break
            got = largest(smaller)
            if got[0] > chosen[0] or (got[0] == chosen[0] and got[1] > chosen[1]):
                chosen, type_px = got, smaller
        mono, char = type_px, 0.61 * type_px
        _, cell, scell, bcell, below = chosen
        return cls(
            cell=cell,
            scell=scell,
            font=font,
            mono=mono,
            char=char,
            line=int(round(mono * 1.55)),
            matrix_text=cell >= 24,
            shared_text=scell >= 36,
            blocks_cell=bcell,
            blocks_below=below,
            caption_chars=min(CAPTION_CHARS, caption_chars),
        )

    @classmethod
    def _fit(cls, trace: Trace, v: set[str], width: int, height: int, large: bool = True) -> _Sizes:
        """Cells as large as fit in ``width`` x ``height`` pixels; large type if ``large``."""
        font, mono = (18, 16) if large else (14, 13)
        line = int(round(mono * 1.55))
        T = trace.tile_width
        jp, kp, lp = trace.launch.padded  # tiles may overhang the matrices
        head = 30 + 2 * font  # a grid figure's title and axis labels
        grid_h = height - ((4 * line + 8 + 10) if "caption" in v else 0)
        # middle column: Mds and Nds side by side, the threads below
        shared = len(v & {"Mds", "Nds"})
        mid_rows = (shared > 0) + ("threads" in v)
        scell, mid_w = 0, 0
        if mid_rows:
            scell = int(min(90, (grid_h - mid_rows * head - 8 * (mid_rows - 1)) // (mid_rows * T)))
            mid_w = max(shared * (T * scell + 30) + 10 * max(0, shared - 1), T * scell + 40) + 22
        # matrices: N above P, M left of P (Fig. 5.10)
        ext_rows = {"M": jp, "N": kp, "P": jp}
        ext_cols = {"M": kp, "N": lp, "P": lp}
        rows = (ext_rows["N"] if "N" in v else 0) + (ext_rows["P"] if v & {"M", "P"} else 0)
        cols = (ext_cols["M"] if "M" in v else 0) + (ext_cols["P"] if v & {"N", "P"} else 0)
        cell = 60
        if rows:
            n_fig_rows = ("N" in v) + bool(v & {"M", "P"})
            n_fig_cols = ("M" in v) + bool(v & {"N", "P"})
            cell = int(
                min(
                    60,
                    (grid_h - n_fig_rows * head) / rows,
                    (width - mid_w - 30 * n_fig_cols) / cols,
                )
            )
        cell, scell = max(2, cell), max(6, scell)
        return cls(
            cell=cell,
            scell=scell,
            font=font,
            mono=mono,
            char=0.61 * mono,
            line=line,
            matrix_text=cell >= 24,
            shared_text=scell >= 36,
            caption_chars=int((width - 20) / (0.6 * (font + 1))),
        )
