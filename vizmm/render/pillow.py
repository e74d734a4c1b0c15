"""Draw a replay :class:`~vizmm.replay.Frame` as a Pillow image, without a browser.

The picture shows the same views as the dashboard:

* ``"M"``, ``"N"``, ``"P"``: the matrices, laid out as in the book's Fig. 5.7
  (N above P, M left of P). The block's current tiles are outlined; elements
  being loaded take the colour of the thread that loads them; elements read
  at the current ``k`` and the elements of P being accumulated have their
  own colours; tile positions that overhang a matrix are drawn as dashed
  "ghost" cells (zero-filled ones in the zero-fill colour).
* ``"Mds"``, ``"Nds"``: the shared-memory tiles, T x T slots labelled with
  the element they hold in the book's notation (``M_{0,2}`` drawn with a real
  subscript) or ``0.0`` where the thread zero-filled the slot.
* ``"threads"``: the T x T threads of the block, coloured by state, with a
  band of the thread's own colour, its ``(ty, tx)`` and its Pvalue.
* ``"legend"``: what every colour means.

A title line (kernel, shapes, TILE_WIDTH, block, phase and sub-step), the
caption, the kernel source line being executed and the load counters are
always drawn.

Every size (fonts, cells, lines) scales with the image size; text stays
legible at 1280 x 720 and 1920 x 1080. Cells get text only when they are
big enough for it (a 48 x 48 matrix is drawn as coloured cells).

Every colour comes from :mod:`vizmm.render.palette`, so GIF/MP4 frames and the
dashboard never differ.
"""

from __future__ import annotations

import dataclasses

import numpy as np
from PIL import Image, ImageDraw

from ..replay import CellState, Frame
from ..replay.block import slot_states_shown, thread_states_shown
from ..trace import Access, Trace
from . import palette as pal
from . import views as view_specs
from .pillow_text import (
    _draw_text,
    _ellipsize,
    _fit_size,
    _font,
    _rgb,
    _text_w,
    _wrap,
    font_path,
)
from .policy import check_known_views, view_names
from .text import format_value

__all__ = [
    "VIEWS",
    "DEFAULT_SIZE",
    "MIN_SIZE",
    "MAX_SIZE",
    "FrameRenderer",
    "check_size",
    "check_views",
    "font_path",
]

#: Every view the renderer can draw: the dashboard's (:data:`vizmm.render.bokeh_scene.VIEWS`)
#: except the grid of blocks and the Fig. 5.8 table, which only the dashboard and the HTML
#: export show. The title line is always drawn; 'caption', 'source' (the kernel line being
#: executed) and 'counters' (global loads, CGMA) are the lines under it.
VIEWS = view_specs.names(pillow=True)
_HEADER = view_specs.names(pillow=True, html=True)  # drawn as lines: the caption, source ...
DEFAULT_SIZE = (1280, 720)
MIN_SIZE = (320, 180)
MAX_SIZE = (7680, 4320)

_MATRICES = ("M", "N", "P")
_SHARED = ("Mds", "Nds", "threads")


# --------------------------------------------------------------------- checks
def check_size(size) -> tuple[int, int]:
    """Validate an image size.

    Parameters
    ----------
    size : (width, height)
        Pixels; integers from :data:`MIN_SIZE` to :data:`MAX_SIZE`.

    Returns
    -------
    (int, int)

    Raises
    ------
    ValueError
        When ``size`` is not two integers in range.
    """
    try:
        w, h = size
    except (TypeError, ValueError):
        raise ValueError(f"size must be (width, height) in pixels, got {size!r}") from None
    for v in (w, h):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
            raise ValueError(f"size must be two integers (pixels), got {size!r}")
    w, h = int(w), int(h)
    if not (MIN_SIZE[0] <= w <= MAX_SIZE[0] and MIN_SIZE[1] <= h <= MAX_SIZE[1]):
        raise ValueError(
            f"size must be from {MIN_SIZE[0]}x{MIN_SIZE[1]} to {MAX_SIZE[0]}x{MAX_SIZE[1]} "
            f"pixels, got {w}x{h}"
        )
    return w, h


def check_views(views) -> tuple[str, ...]:
    """Validate a choice of views.

    Parameters
    ----------
    views : iterable of str, str or None
        Names from :data:`VIEWS` (a comma-separated string is accepted);
        None means all of them.

    Returns
    -------
    tuple of str
        The chosen views in :data:`VIEWS` order, without duplicates.

    Raises
    ------
    ValueError
        For an unknown view name or an empty choice.
    """
    if views is None:
        return VIEWS
    views = view_names(views)
    check_known_views(views, VIEWS)
    chosen = tuple(v for v in VIEWS if v in views)
    if not [v for v in chosen if v not in _HEADER]:
        raise ValueError("choose at least one of the views M, N, P, Mds, Nds, threads")
    return chosen


# ---------------------------------------------------------------------- fonts


# ---------------------------------------------------------------- small helpers


@dataclasses.dataclass(frozen=True)
class _Panel:
    """Where one view sits: its grid's top-left corner, size in cells and cell size."""

    name: str
    x: int
    y: int
    rows: int
    cols: int
    cell: int
    heading: str
    ticks: bool = False
    head_below: bool = False

    @property
    def w(self) -> int:
        return self.cols * self.cell

    @property
    def h(self) -> int:
        return self.rows * self.cell

    def cell_box(self, r: int, c: int) -> tuple[int, int, int, int]:
        x0 = self.x + c * self.cell
        y0 = self.y + r * self.cell
        return x0, y0, x0 + self.cell, y0 + self.cell


# ---------------------------------------------------------------------- renderer
class FrameRenderer:
    """Draw the frames of one trace at one size (the layout is computed once).

    Parameters
    ----------
    trace : Trace
        The trace the frames come from (shapes, matrices, kernel source).
    size : (width, height), default (1280, 720)
        Image size in pixels; fonts, cells and lines scale with it.
    views : iterable of str, optional
        Views to draw, from :data:`VIEWS` (default: all).
    theme : {'light', 'dark'} or Palette
        The colours (:func:`vizmm.render.palette.palette`), as the dashboard's.
    transactions : bool
        Keep room under the thread grid for the per-warp row of the
        memory-transactions view (frames of ``Replay(transactions=True)``).

    The legend lists what the frames say their replay can show (their
    thread and slot states, the followed thread); the layout is made for a
    sub-step replay following no thread and made again when a frame says
    otherwise.

    Raises
    ------
    ValueError
        For a bad size, view name or theme.

    Examples
    --------
    >>> from vizmm.replay import Replay
    >>> r = FrameRenderer(trace, size=(1920, 1080))         # doctest: +SKIP
    >>> img = r.render(Replay(trace).frame(3))              # doctest: +SKIP
    """

    def __init__(
        self,
        trace: Trace,
        size=DEFAULT_SIZE,
        views=None,
        theme: str | pal.Palette = "light",
        transactions: bool = False,
    ):
        self.pal = pal.palette(theme)
        self.transactions = bool(transactions)
        self.trace = trace
        self.size = check_size(size)
        self.views = check_views(views)
        W, H = self.size
        j, k, l = trace.shape
        T = trace.tile_width
        self.T = T
        self.dims = {"M": (j, k), "N": (k, l), "P": (j, l)}
        jp, kp, lp = trace.launch.padded
        self.padded = {"M": (jp, kp), "N": (kp, lp), "P": (jp, lp)}
        self.source = trace.meta.get("source", "").splitlines()

        # Type scale: everything follows the image height (and width for text lines).
        u = min(H, W * 9 / 16)
        self.margin = max(6, round(u * 0.022))
        self.fs_title = max(10, round(u * 0.029))
        self.fs_body = max(9, round(u * 0.023))
        self.fs_small = max(8, round(u * 0.019))
        self.fs_head = max(9, round(u * 0.022))
        self.lw = max(1, round(u / 300))  # thin line width
        self.thread_colors = [_rgb(c) for c in self.pal.thread_colors(T * T)]

        m = self.margin
        y = m
        self.title_y = y
        y += round(self.fs_title * 1.35)
        self.caption_y = y
        self.caption_lines = 2 if "caption" in self.views else 0
        y += round(self.fs_body * 1.3) * self.caption_lines
        self.code_y = y
        if "source" in self.views or "counters" in self.views:
            y += round(self.fs_body * 1.35)
        self.header_bottom = y + round(m * 0.5)
        self._lay_out(
            (
                thread_states_shown(trace.launch, "substep"),
                slot_states_shown(trace.launch),
                None,
                bool(trace.shared_reads.size),
            )
        )

    def _lay_out(self, legend) -> None:
        """Place the legend for ``(thread states, slot states, focus[, lab])`` and the panels."""
        self._legend_key = legend
        W, H = self.size
        m = self.margin
        self.legend_entries = self._legend_entries(*legend) if "legend" in self.views else []
        legend_h = self._layout_legend(measure_only=True) if self.legend_entries else 0
        self.legend_y = H - m - legend_h
        top = self.header_bottom
        main = (m, top, W - 2 * m, self.legend_y - top - round(m * 0.6))
        self.panels = self._layout_main(*main)

    # --------------------------------------------------------------- layout
    def _head_h(self) -> int:
        return round(self.fs_head * 1.45)

    def _tick_size(self, cell: int) -> int:
        return self.fs_small

    def _tick_extent(self, cell: int) -> tuple[int, int]:
        """(left width, top height) reserved for row / column indices of a matrix."""
        fs = self._tick_size(cell)
        big = max(max(self.padded[n]) for n in _MATRICES)
        w = _text_w(str(big), fs) + fs * 0.5
        return round(w), round(fs * 1.3)

    def _matrix_block(self, cell: int, mode: str = "cross"):
        """Size (w, h) of the matrices' arrangement and each matrix's grid origin.

        ``mode`` 'cross' is Fig. 5.7's (N above P, M left of P); 'row' puts
        them side by side (bigger cells for big matrices).
        """
        mats = [n for n in _MATRICES if n in self.views]
        if not mats:
            return 0, 0, {}
        tw, th = self._tick_extent(cell)
        hh = self._head_h()
        gap = max(round(cell * 0.5), self.margin // 2)
        pos = {}
        if len(mats) == 3 and mode == "cross":
            # P shares M's row indices and N's column indices, so it has none
            # of its own and its heading goes below it; M's heading and
            # indices sit in the empty corner above M.
            jp, kp = self.padded["M"]
            lp = self.padded["N"][1]
            gap = max(gap, tw + self.fs_small)
            x_m = tw
            x_p = tw + kp * cell + gap
            y_n = hh + th
            y_p = y_n + kp * cell + gap
            pos = {"M": (x_m, y_p), "N": (x_p, y_n), "P": (x_p, y_p)}
            w = x_p + lp * cell
            h = y_p + jp * cell + hh
        else:  # side by side, tops aligned
            gap = max(gap, self.margin)
            x = 0
            h = 0
            for n in mats:
                r, c = self.padded[n]
                pos[n] = (x + tw, hh + th)
                x += tw + max(c * cell, round(_text_w(self._heading(n), self.fs_head, "bold")))
                x += gap
                h = max(h, hh + th + r * cell)
            w = x - gap
        return w, h, pos

    def _shared_block(self, cell: int, mode: str = "grid"):
        """Size (w, h) of Mds / Nds / threads and each grid's origin.

        ``mode``: 'grid' (Mds and Nds side by side, threads below), 'column'
        or 'row'.
        """
        T = self.T
        hh = self._head_h()
        gap = max(round(cell * 0.5), self.margin)
        names = [n for n in _SHARED if n in self.views]
        if not names:
            return 0, 0, {}
        pos = {}
        side = T * cell
        # a grid is as wide as its heading at least
        wide = {n: max(side, round(_text_w(self._heading(n), self.fs_head, "bold"))) for n in names}
        top = [n for n in ("Mds", "Nds") if n in names]
        if mode == "column":
            y = 0
            for n in names:
                pos[n] = (0, y + hh)
                y += hh + side + gap + (self._warp_row_h() if n == "threads" else 0)
            return max(wide.values()), y - gap, pos
        if mode == "row":
            x = 0
            for n in names:
                pos[n] = (x, hh)
                x += wide[n] + gap
            return x - gap, hh + side + (self._warp_row_h() if "threads" in names else 0), pos
        x = 0
        for n in top:
            pos[n] = (x, hh)
            x += wide[n] + gap
        w = max(x - gap, wide["threads"] if "threads" in names else 0)
        y = (hh + side + gap) if top else 0
        if "threads" in names:
            pos["threads"] = ((w - side) // 2, y + hh)
            y += hh + side + gap + self._warp_row_h()
        return w, y - gap, pos

    def _warp_row_h(self) -> int:
        """Height kept under the thread grid for the per-warp transactions row."""
        return round(self.fs_small * 2.4) if self.transactions else 0

    def _heading(self, name: str) -> str:
        j, k, l = self.trace.shape
        T = self.T
        return {
            "M": f"M  ({j}×{k})",
            "N": f"N  ({k}×{l})",
            "P": f"P  ({j}×{l})",
            "Mds": f"Mds  (shared, {T}×{T})",
            "Nds": f"Nds  (shared, {T}×{T})",
            "threads": "threads (ty, tx)",
        }[name]

    def _layout_main(self, x0: int, y0: int, W: int, H: int) -> dict[str, _Panel]:
        """Place the panels in the box (x0, y0, W, H), cells as big as fit.

        Tries the matrices as a cross or a row, the shared grids as a grid, a
        column or a row, beside or below the matrices, and keeps the
        arrangement whose smaller cell size is largest (the book's cross
        wins unless a row gives clearly bigger cells).
        """
        has_m = any(n in self.views for n in _MATRICES)
        has_s = any(n in self.views for n in _SHARED)
        kind, mmode, smode, cm, cs = self._best_arrangement(W, H, has_m, has_s)
        panels: dict[str, _Panel] = {}
        mw, mh, mpos = self._matrix_block(cm, mmode) if has_m else (0, 0, {})
        sw, sh, spos = self._shared_block(cs, smode) if has_s else (0, 0, {})
        ox_m, oy_m, ox_s, oy_s = self._origins(kind, x0, y0, W, H, (mw, mh), (sw, sh))
        self.arrangement = (kind, mmode, smode)
        for n, (px, py) in mpos.items():
            r, c = self.padded[n]
            cross = len(mpos) == 3 and n == "P" and mmode == "cross"
            panels[n] = _Panel(
                n,
                ox_m + px,
                oy_m + py,
                r,
                c,
                cm,
                self._heading(n),
                ticks=not cross,
                head_below=cross,
            )
        for n, (px, py) in spos.items():
            panels[n] = _Panel(n, ox_s + px, oy_s + py, self.T, self.T, cs, self._heading(n))
        return panels

    def _best_arrangement(self, W: int, H: int, has_m: bool, has_s: bool):
        """``(kind, matrices' mode, shared grids' mode, their cells)`` of the best arrangement.

        The one whose smaller cell size is largest, of every split of the box
        (the shared grids right of or below the matrices) and every mode.
        """
        splits = [("alone", 1.0)]
        if has_m and has_s:
            splits = [
                (kind, float(f)) for f in np.linspace(0.2, 0.7, 21) for kind in ("right", "below")
            ]
        best = None
        for kind, frac in splits:
            box_m, box_s = self._split(kind, frac, W, H)
            for mmode in ("cross", "row") if has_m else ("cross",):
                cm = (
                    self._max_cell(lambda c, m=mmode: self._matrix_block(c, m)[:2], box_m)
                    if has_m
                    else 0
                )
                for smode in ("grid", "column", "row") if has_s else ("grid",):
                    cs = (
                        self._max_cell(lambda c, m=smode: self._shared_block(c, m)[:2], box_s)
                        if has_s
                        else 0
                    )
                    score = self._score(mmode, cm, cs)
                    if best is None or score > best[0]:
                        best = (score, kind, mmode, smode, cm, cs)
        assert best is not None  # splits is never empty
        return best[1:]

    def _split(self, kind: str, frac: float, W: int, H: int):
        """The matrices' box and the shared grids' box of a split (``frac`` to the grids)."""
        if kind == "right":
            g: float = self.margin
            return (W * (1 - frac) - g, H), (W * frac - g, H)
        if kind == "below":
            g = self.margin / 2
            return (W, H * (1 - frac) - g), (W, H * frac - g)
        return (W, H), (W, H)

    def _score(self, mmode: str, cm: int, cs: int) -> tuple[float, int]:
        """How good cells of ``cm`` (matrices) and ``cs`` (shared grids) pixels are."""
        # the book's cross unless the row gives much bigger cells; when the
        # cells are too small for text either way, the bigger cells win
        weight = 1.0 if mmode == "cross" or cm < 2.2 * self.fs_small else 0.6
        # shared-memory slots carry the most text: keep them ~1.5x larger
        smallest = min(x for x in (cm * weight, cs / 1.5) if x) if (cm or cs) else 0
        return (smallest, cm + cs)

    def _origins(self, kind: str, x0: int, y0: int, W: int, H: int, m, s):
        """Top left corners of the matrices' block (size ``m``) and the shared grids' (``s``)."""
        (mw, mh), (sw, sh) = m, s
        if kind == "right":
            gx = max(self.margin * 2, (W - mw - sw) // 3)
            ox_m = x0 + max(0, (W - mw - sw - gx) // 2)
            return ox_m, y0 + (H - mh) // 2, ox_m + mw + gx, y0 + (H - sh) // 2
        if kind == "below":
            gy = max(self.margin, (H - mh - sh) // 3)
            oy_m = y0 + max(0, (H - mh - sh - gy) // 2)
            return x0 + (W - mw) // 2, oy_m, x0 + (W - sw) // 2, oy_m + mh + gy
        return x0 + (W - mw) // 2, y0 + (H - mh) // 2, x0 + (W - sw) // 2, y0 + (H - sh) // 2

    @staticmethod
    def _max_cell(measure, box) -> int:
        """Largest integer cell size whose arrangement fits in ``box`` (at least 1)."""
        bw, bh = box
        lo, hi = 1, 400
        if bw <= 0 or bh <= 0:
            return 1
        while lo < hi:
            mid = (lo + hi + 1) // 2
            w, h = measure(mid)
            if w <= bw and h <= bh:
                lo = mid
            else:
                hi = mid - 1
        return lo

    # --------------------------------------------------------------- legend
    def _legend_entries(
        self, thread_states, slot_states, focus, lab=False
    ) -> list[tuple[str, list[tuple[str, str, str]]]]:
        """Sections of (kind, colour, label); kind: 'fill', 'outline', 'threads', 'ghost', 'ahead'.

        ``lab``: the frames carry the barrier lab's marks (wrong reads, threads that ran ahead).
        """
        v = self.views
        sections = []
        if any(n in v for n in _MATRICES):
            # short words: a frame has no room for the dashboard's long legend
            cells = [
                ("outline", self.pal.TILE_OUTLINE, "current tile"),
                ("threads", "", "being loaded (thread colour)"),
                ("fill", self.pal.CELL_COLORS[CellState.TILE], "in Mds / Nds"),
                ("fill", self.pal.CELL_COLORS[CellState.READING], "read at this k"),
                ("fill", self.pal.CELL_COLORS[CellState.DONE], "loaded earlier"),
                ("fill", self.pal.CELL_COLORS[CellState.COMPUTING], "P being accumulated"),
                ("ghost", self.pal.GHOST_COLORS[Access.ZERO_FILL], "outside (as its slot)"),
            ]
            sections.append(("Matrices", cells))
        if "Mds" in v or "Nds" in v:
            slots = [("threads", "", "written now (by thread)")]
            slots += [
                ("fill", self.pal.SLOT_COLORS[s], self.pal.SLOT_LABELS[s]) for s in slot_states
            ]
            slots.append(("outline", self.pal.READ, "read at this k"))
            sections.append(("Mds / Nds", slots))
        if "threads" in v:
            sections.append(
                (
                    "Threads",
                    [
                        ("fill", self.pal.THREAD_STATE_COLORS[s], self.pal.THREAD_STATE_LABELS[s])
                        for s in thread_states
                    ],
                )
            )
        if lab and ("threads" in v or "Mds" in v or "Nds" in v):
            sections.append(
                (
                    "Barrier lab",
                    [
                        ("outline", self.pal.WRONG, "read a wrong element"),
                        ("ahead", self.pal.AHEAD, "ran ahead of another thread"),
                    ],
                )
            )
        if self.transactions:
            sections.append(
                (
                    "Memory",
                    [
                        ("outline", self.pal.TEXT, "sector (32 B) of the warp's load"),
                        ("outline", self.pal.READ, "segment (128 B)"),
                        ("threads", "", "bank of each slot (band)"),
                        ("outline", self.pal.TILE_OUTLINE, "bank conflict / worse than ideal"),
                    ],
                )
            )
        if focus is not None:
            fy, fx = focus
            sections.append(
                (
                    "Followed",
                    [("outline", self.pal.FOCUS, f"thread ({fy},{fx}): its loads and reads")],
                )
            )
        return sections

    def _layout_legend(self, draw: ImageDraw.ImageDraw | None = None, measure_only=False) -> int:
        """Flow the legend entries in rows (one section per row, wrapped); returns the height."""
        W, H = self.size
        m = self.margin
        fs = self.fs_small
        sw = round(fs * 1.1)  # swatch side
        row_h = round(fs * 1.55)
        x_end = W - m
        y = 0 if measure_only else self.legend_y
        head_w = max(_text_w(name + ":", fs, "bold") for name, _ in self.legend_entries)
        x_start = m + head_w + fs * 0.8
        for name, entries in self.legend_entries:
            if draw is not None:
                _draw_text(
                    draw, (m, y + row_h / 2), name + ":", fs, _rgb(self.pal.TEXT), "lm", "bold"
                )
            x = x_start
            for kind, color, label in entries:
                w = sw + fs * 0.4 + _text_w(label, fs) + fs * 1.3
                if x + w - fs * 1.3 > x_end and x > x_start:
                    x = x_start
                    y += row_h
                if draw is not None:
                    self._swatch(draw, kind, color, x, y + (row_h - sw) / 2, sw)
                    _draw_text(
                        draw,
                        (x + sw + fs * 0.4, y + row_h / 2),
                        label,
                        fs,
                        _rgb(self.pal.TEXT),
                        "lm",
                    )
                x += w
            y += row_h
        return y if measure_only else y - self.legend_y

    def _swatch(self, draw, kind, color, x, y, s):
        x, y, s = round(x), round(y), round(s)
        box = (x, y, x + s - 1, y + s - 1)
        if kind == "fill":
            draw.rectangle(box, fill=_rgb(color), outline=_rgb(self.pal.GRID_LINE), width=1)
        elif kind == "outline":
            draw.rectangle(
                box, fill=_rgb(self.pal.BACKGROUND), outline=_rgb(color), width=max(2, s // 5)
            )
        elif kind == "ghost":
            draw.rectangle(box, fill=_rgb(color))
            self._dashed_rect(draw, box, _rgb(self.pal.MUTED), max(1, s // 10), max(2, s // 5))
        elif kind == "ahead":
            self._ahead_mark(draw, x + s / 2, y + s / 2, s)
        elif kind == "threads":
            n = 4
            cols = (
                self.thread_colors[:n]
                if len(self.thread_colors) >= n
                else ([_rgb(c) for c in self.pal.thread_colors(n)])
            )
            for i, c in enumerate(cols):
                draw.rectangle((x + i * s // n, y, x + (i + 1) * s // n - 1, y + s - 1), fill=c)

    @staticmethod
    def _dashed_rect(draw, box, color, width, dash):
        x0, y0, x1, y1 = box
        for a, b, horizontal, fixed in (
            (x0, x1, True, y0),
            (x0, x1, True, y1),
            (y0, y1, False, x0),
            (y0, y1, False, x1),
        ):
            p = a
            while p < b:
                q = min(b, p + dash)
                if horizontal:
                    draw.line((p, fixed, q, fixed), fill=color, width=width)
                else:
                    draw.line((fixed, p, fixed, q), fill=color, width=width)
                p += 2 * dash

    # -------------------------------------------------------------- drawing
    def render(self, frame: Frame) -> Image.Image:
        """Draw one frame.

        Parameters
        ----------
        frame : Frame
            A frame of a :class:`~vizmm.replay.Replay` of this renderer's trace.

        Returns
        -------
        PIL.Image.Image
            RGB image of :attr:`size` pixels.
        """
        lab = frame.thread_ahead is not None
        legend = (frame.thread_states, frame.slot_states, frame.focus, lab)
        if legend != self._legend_key:
            self._lay_out(legend)
        W, H = self.size
        img = Image.new("RGB", (W, H), _rgb(self.pal.BACKGROUND))
        draw = ImageDraw.Draw(img)
        self._draw_header(draw, frame)
        for spec in view_specs.all_views():  # each view's panel, drawn by its spec
            if spec.name in self.panels and spec.draw_pillow is not None:
                spec.draw_pillow(self, img, draw, frame, self.panels[spec.name])
        if frame.finding is not None:
            self._draw_finding(draw, frame.finding)
        if self.legend_entries:
            self._layout_legend(draw)
        return img

    __call__ = render

    def _draw_finding(self, draw, marks) -> None:
        """A finding of ``vizmm.check`` (:attr:`Frame.finding`), as the Bokeh scene draws it.

        What went wrong solid in the finding's colour; what the book's kernel
        uses there dashed in its own; a right factor of the wrong term and
        the other thread dashed in the finding's colour.
        """
        for view in ("M", "N", "P", "Mds", "Nds", "threads"):
            p = self.panels.get(view)
            if p is None:
                continue
            width = max(3, round(p.cell * 0.12))
            for m in marks.of(view):
                if not (0 <= m.row < p.rows and 0 <= m.col < p.cols):
                    continue  # an access outside the array: no cell to mark
                color = _rgb(self.pal.NEEDED if m.role == "needed" else self.pal.FINDING)
                if m.role == "wrong":
                    self._outline(draw, p, m.row, m.col, 1, 1, color, width)
                    continue
                x0, y0 = p.x + m.col * p.cell, p.y + m.row * p.cell
                box = (x0 + 1, y0 + 1, x0 + p.cell - 2, y0 + p.cell - 2)
                self._dashed_rect(draw, box, color, width, max(3, p.cell // 5))

    def _draw_header(self, draw, frame: Frame):
        W, _ = self.size
        m = self.margin
        text = _rgb(self.pal.TEXT)
        muted = _rgb(self.pal.MUTED)
        right = f"step {frame.index + 1} / {frame.count}"
        rw = _text_w(right, self.fs_body)
        fs = _fit_size(frame.title, self.fs_title, W - 2 * m - rw - m, "bold")
        title = _ellipsize(frame.title, fs, W - 2 * m - rw - m, "bold")
        _draw_text(draw, (m, self.title_y), title, fs, text, "la", "bold")
        _draw_text(
            draw, (W - m, self.title_y + self.fs_title * 0.15), right, self.fs_body, muted, "ra"
        )
        # caption: wrapped in at most `caption_lines` lines (smaller type if needed)
        fs = self.fs_body
        lines: list[str] = []
        while self.caption_lines:
            lines = _wrap(frame.caption, fs, W - 2 * m)
            if len(lines) <= self.caption_lines or fs <= 8:
                break
            fs -= 1
        lh = round(self.fs_body * 1.3)
        for i, line in enumerate(lines[: self.caption_lines]):
            _draw_text(
                draw, (m, self.caption_y + i * lh), _ellipsize(line, fs, W - 2 * m), fs, text
            )
        # the kernel line being executed, and the counters
        cw = 0.0
        if "counters" in self.views:
            # the dashboard's counters in one line: no CGMA before any product
            counters = f"global loads {frame.loads_so_far} (naive kernel " + (
                f"{frame.naive_loads_so_far}) · CGMA {frame.cgma / 4:.2f} OP/B"
                if frame.terms_loaded > 0
                else f"{frame.naive_loads_so_far}) · no product yet"
            )
            if frame.transactions is not None:
                counters += " · " + " · ".join(frame.transactions.totals)
            cw = _text_w(counters, self.fs_small)
            _draw_text(
                draw,
                (W - m, self.code_y + self.fs_body * 0.1),
                counters,
                self.fs_small,
                muted,
                "ra",
            )
        at = frame.source_line
        if "source" in self.views and at is not None and 0 <= at < len(self.source):
            code = "▶ " + self.source[at].strip()
            if frame.struck_lines:  # barrier lab: say which __syncthreads() is gone
                code += (
                    "   (removed: "
                    + ", ".join(
                        f"line {i + 1} {self.source[i].strip()}"
                        for i in frame.struck_lines
                        if 0 <= i < len(self.source)
                    )
                    + ")"
                )
            avail = W - 2 * m - cw - m
            fs = _fit_size(code, self.fs_body, avail, "mono", min_size=max(8, self.fs_small - 2))
            _draw_text(
                draw,
                (m, self.code_y),
                _ellipsize(code, fs, avail, "mono"),
                fs,
                _rgb(self.pal.FOCUS),
                "la",
                "mono",
            )

    def _draw_heading(self, draw, p: _Panel, max_w: float | None = None):
        hh = self._head_h()
        tick_h = self._tick_extent(p.cell)[1] if p.ticks else 0
        if max_w is None:
            max_w = max(p.w, _text_w(p.heading, self.fs_head, "bold"))
        fs = _fit_size(p.heading, self.fs_head, max_w, "bold", min_size=8)
        text = _ellipsize(p.heading, fs, max_w, "bold")
        if p.head_below:
            _draw_text(
                draw, (p.x, p.y + p.h + hh * 0.2), text, fs, _rgb(self.pal.TEXT), "la", "bold"
            )
        else:
            _draw_text(
                draw, (p.x, p.y - tick_h - hh * 0.15), text, fs, _rgb(self.pal.TEXT), "ld", "bold"
            )

    def _paint_cells(self, img: Image.Image, p: _Panel, colors: np.ndarray):
        """Fill the panel's cells from an (rows, cols, 3) uint8 array in one paste."""
        big = np.repeat(np.repeat(colors, p.cell, axis=0), p.cell, axis=1)
        img.paste(Image.fromarray(np.ascontiguousarray(big), "RGB"), (p.x, p.y))

    def _grid_lines(self, draw, p: _Panel, rows: int, cols: int, color=None):
        if p.cell < 9:
            return
        color = color or _rgb(self.pal.GRID_LINE)
        for r in range(1, rows):
            y = p.y + r * p.cell
            draw.line((p.x, y, p.x + cols * p.cell - 1, y), fill=color, width=1)
        for c in range(1, cols):
            x = p.x + c * p.cell
            draw.line((x, p.y, x, p.y + rows * p.cell - 1), fill=color, width=1)

    def _tile_frame(self, draw, p: _Panel, T: int):
        """The T x T grid lines of a tile panel (Mds, Nds, threads) and its frame around it."""
        self._grid_lines(draw, p, T, T, color=_rgb(self.pal.MUTED))
        lw = self.lw
        draw.rectangle(
            (p.x - lw, p.y - lw, p.x + p.w - 1 + lw, p.y + p.h - 1 + lw),
            outline=_rgb(self.pal.TEXT),
            width=lw,
        )

    def _outline(self, draw, p: _Panel, r0, c0, nr, nc, color, width):
        x0 = p.x + c0 * p.cell
        y0 = p.y + r0 * p.cell
        x1 = x0 + nc * p.cell - 1
        y1 = y0 + nr * p.cell - 1
        h = width // 2
        draw.rectangle((x0 - h, y0 - h, x1 + h, y1 + h), outline=color, width=width)

    def _cell_fonts(self, p: _Panel, width_at) -> tuple[int | None, int | None]:
        """Font sizes for one-line and two-line cell text, None where the cell is too small.

        ``width_at(fs)`` is the width in pixels of the widest text at size ``fs``.
        """
        room = p.cell * 0.86
        one = min(self.fs_body, round(p.cell * 0.42))
        while one >= 9 and width_at(one) > room:
            one -= 1
        two = min(self.fs_body, round(p.cell * 0.3))
        while two >= 10 and width_at(two) > room:
            two -= 1
        return (one if one >= 9 else None), (two if two >= 10 else None)

    def _sub_w(self, base: str, sub: str, fs: int) -> float:
        return _text_w(base, fs) + _text_w(sub, max(6, round(fs * 0.7)))

    def _sub_text(self, draw, cx, cy, base, sub, fs, fill):
        """Draw ``base`` with a subscript ``sub`` (the book's ``M_{0,2}``) centred at (cx, cy)."""
        f = _font(fs)
        fsub = _font(max(6, round(fs * 0.7)))
        wb = f.getlength(base)
        ws = fsub.getlength(sub)
        x = cx - (wb + ws) / 2
        base_y = cy + fs * 0.33
        draw.text((x, base_y), base, font=f, fill=fill, anchor="ls")
        draw.text((x + wb, base_y + fs * 0.22), sub, font=fsub, fill=fill, anchor="ls")

    @staticmethod
    def _value_text(draw, cx, cy, value, fs, fill):
        """A cell's value centred at (cx, cy), a little smaller than the name above it."""
        _draw_text(draw, (cx, cy), format_value(float(value)), max(9, round(fs * 0.9)), fill, "mm")

    def _ticks(self, draw, p: _Panel, nr: int, nc: int):
        fs = self._tick_size(p.cell)
        f = _font(fs)
        muted = _rgb(self.pal.MUTED)
        widest = _text_w(str(max(p.rows, p.cols)), fs)
        step = 1 if widest + fs * 0.3 <= p.cell and p.cell >= fs * 1.1 else self.T
        while step < max(p.rows, p.cols) and (widest + fs * 0.5) > step * p.cell:
            step *= 2
        tw, th = self._tick_extent(p.cell)
        for c in range(0, p.cols, step):
            x = p.x + c * p.cell + (p.cell / 2 if step == 1 else 0)
            draw.text(
                (x, p.y - max(2, fs * 0.2)),
                str(c),
                font=f,
                fill=muted if c < nc else _rgb(self.pal.GRID_LINE),
                anchor="md" if step == 1 else "ld",
            )
        for r in range(0, p.rows, step):
            y = p.y + r * p.cell + (p.cell / 2 if step == 1 else 0)
            draw.text(
                (p.x - max(3, fs * 0.3), y),
                str(r),
                font=f,
                fill=muted if r < nr else _rgb(self.pal.GRID_LINE),
                anchor="rm" if step == 1 else "rt",
            )

    def _max_index(self) -> int:
        return max(max(d) for d in self.dims.values()) - 1

    def _ahead_mark(self, draw, cx: float, cy: float, size: float) -> None:
        """The barrier lab's "ran ahead" mark: a right-pointing triangle centred at (cx, cy)."""
        h = max(4.0, size) / 2
        draw.polygon(
            [(cx - h, cy - h), (cx + h, cy), (cx - h, cy + h)],
            fill=_rgb(self.pal.AHEAD),
            outline=_rgb(self.pal.TEXT),
        )
