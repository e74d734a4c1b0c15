"""The Bokeh scene: every view of one replayed block as Bokeh figures.

Shared by the dashboard (``apps/dashboard.py``, a Bokeh server app through
Panel) and the offline HTML export. Two layers:

* :func:`frame_columns` is pure: it turns one :class:`~vizmm.replay.Frame`
  into the ``ColumnDataSource`` data of every glyph (``{source name: {column:
  list}}``). Names are stable; the HTML export stores these dicts per frame.
* :class:`Scene` builds the figures and sources once for a trace and
  :meth:`Scene.update` assigns the columns of a new frame (only the columns
  that changed travel to the browser).

Views (the ``views`` argument of :class:`Scene`):

``caption``
    the frame's title and what happens at this step;
``M``, ``N``, ``P``
    the matrices, laid out as in the book's Fig. 5.7 / 5.10 (N above P, M
    left of P), the block's current tiles outlined, elements being loaded in
    the colour of the loading thread, ghost cells where a tile overhangs the
    matrix (zero-filled, wrong element, outside the allocation);
``Mds``, ``Nds``
    the shared-memory tiles, each slot labelled with the element it holds
    (``M₀,₂``, ``0.0`` for a zero-fill), stale and empty slots greyed;
``threads``
    the T x T threads of the block coloured by state (loading, waiting at a
    barrier, computing, writing P, idle), with their own colour as a swatch;
``legend``
    what every colour means;
``source``
    the kernel's source with the executed line highlighted;
``counters``
    global loads so far against the naive kernel, CGMA, the followed
    thread's Pvalue after each phase;
``blocks``
    the grid of blocks, the replayed block highlighted (tap to choose);
``table``
    the book's Fig. 5.8 table for the block, the current cell highlighted.

Every colour comes from :mod:`vizmm.render.palette`. Coordinates: matrix and tile
grids put element (row, col) at ``x = col + 0.5``, ``y = row + 0.5`` with the
y axis pointing down; the text views (caption, source, counters, table) use
character columns for x and text lines for y.
"""

from __future__ import annotations

import dataclasses
import math
import textwrap
import weakref
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from functools import lru_cache, partial
from typing import TYPE_CHECKING, Any

import numpy as np
from bokeh.core.properties import value

from ..replay import CellState, Frame, SlotState, ThreadState
from ..replay.table import Table, block_table
from ..trace import Access, Trace, ceil_div
from ..trace.derived import kept, per_trace
from ..trace.notation import subscript as _sub  # M_{row,col}, written once
from . import palette as pal
from .bokeh_tools import add_hover
from .html_text import TextBox, text_view_html
from .policy import check_known_views, view_names
from .shared_steps import STEPS
from .text import format_value, render_text
from .tiles import tile_arrays

if TYPE_CHECKING:
    from bokeh.models.glyph import Glyph

__all__ = [
    "VIEWS",
    "PRESENTER_VIEWS",
    "PRESENTER_BOX",
    "SOURCE_NAMES",
    "SOURCE_ORDER",
    "HTML_VIEWS",
    "matrix_palette",
    "frame_columns",
    "slot_label",
    "thread_label",
    "add_glyph",
    "table_extent",
    "wrap_title",
    "Scene",
]

#: Every view a :class:`Scene` can show.
VIEWS = (
    "caption",
    "M",
    "N",
    "P",
    "Mds",
    "Nds",
    "threads",
    "legend",
    "source",
    "counters",
    "blocks",
    "table",
)

#: The views drawn as HTML (a Bokeh ``Div`` each, :mod:`vizmm.render.html_text`):
#: text and a few boxes, one model each instead of a plot's dozen.
HTML_VIEWS = ("caption", "legend", "source", "counters", "table")

#: The sources each view draws from (keys of :func:`frame_columns`).
SOURCE_NAMES = {
    "caption": ("caption",),
    "M": ("M", "M_outline", "M_finding"),
    "N": ("N", "N_outline", "N_finding"),
    "P": ("P", "P_outline", "P_pvalue", "P_finding"),
    "Mds": ("Mds", "Mds_bank", "Mds_finding"),
    "Nds": ("Nds", "Nds_bank", "Nds_finding"),
    "threads": ("threads", "warp_threads", "warps", "threads_finding"),
    "legend": (),
    "source": ("source",),
    "counters": ("counters", "bars"),
    "blocks": ("blocks",),
    "table": ("table",),
}

#: Every source name, in the order :func:`frame_columns` fills them.
SOURCE_ORDER = tuple(n for names in SOURCE_NAMES.values() for n in names)
ALL_SOURCES = frozenset(SOURCE_ORDER)
#: The sources a tap selects in (the grids with a ``TapTool``); every other
#: source of a scene shares one empty ``Selection``.
TAPPED_SOURCES = frozenset({"threads", "blocks"})

# The columns of every source, named once: the makers below fill them and a
# scene's sources start empty with them (see _columns_of).
_PAINT = ("fill", "line_color", "line_width", "text", "text_color")  # a coloured cell with text
_TEXT_LINES = ("x", "y", "text", "font_style", "color")  # one row per line of a text view
_BOX = ("x", "y", "w", "h")  # outlines of w x h boxes
_COLUMNS = {
    "caption": _TEXT_LINES,
    "matrix": ("x", "y", "row", "col", "name", "final", "text", "code"),
    "cells": ("x", "y"),  # outlined cells: the threads of the current warp
    "P_pvalue": ("x", "y", "name", "text", "thread", "code"),
    # what one glyph draws over a matrix's cells, in this order: the matrix's edge,
    # its ghost cells (tiles overhanging it: hatched, with text and a tooltip), the
    # current tile, the followed thread's elements, the transactions view's
    # segments and sectors of the warp (see _outline_columns)
    "outline": (*_BOX, "fill", "hatch", "line_color", "line_width", "line_dash")
    + ("text", "text_color", "name", "state", "loader"),
    "bank": ("x", "y", "fill", "text", "text_color", "line_color", "line_width", "bank", "note"),
    "warps": ("x", "y", "text", "fill", "text_color", "line_color", "line_width", "label"),
    "slots": ("x", "y", "ty", "tx", *_PAINT, "state", "element", "value", "loader"),
    "threads": ("x", "y", "sx", "sy", "ax", "ay", "ty", "tx", "ident", *_PAINT)
    + ("state", "word", "pvalue", "valid", "ahead_alpha"),
    "source": ("x", "y", "text", "bg", "bg_alpha", "marker", "font_style"),
    "counters": _TEXT_LINES,
    "bars": ("x", "y", "w", "fill", "label", "lx", "label_color"),
    "blocks": ("x", "y", "by", "bx", *_PAINT, "status"),
    "table": ("x", "y", "w", "h", "tx", "fill", "line_color", "text", "text_color")
    + ("font_style", "note"),
    # a finding of vizmm.check: outlines of what it marks (vizmm.replay.findings.Mark)
    "finding": ("x", "y", "line_color", "line_dash", "role", "note"),
}
#: What hovering over a row of each kind of source says: Bokeh's ``(label, field)``
#: tooltips, fields among the kind's columns; ``{name}`` is the figure's matrix.
_TOOLTIPS = {
    "matrix": (("element", "@name"), ("value", "@final"), ("state", "@code{state}")),
    "P": (("element", "@name"), ("P after the launch", "@final"), ("state", "@code{state}")),
    "P_pvalue": (("element", "@name"), ("Pvalue so far", "@text"), ("computed by", "@thread")),
    "ghost": (
        ("position", "@name (outside the matrix)"),
        ("what happened", "@state"),
        ("thread", "@loader"),
        ("slot holds", "@text"),
    ),
    "slots": (
        ("slot", "{name}[@ty][@tx]"),
        ("holds", "@element"),
        ("value", "@value"),
        ("state", "@state"),
        ("written by", "@loader"),
    ),
    "bank": (("bank", "@bank"), ("", "@note")),
    "threads": (
        ("thread", "(@ty, @tx)"),
        ("state", "@state"),
        ("Pvalue", "@pvalue"),
        ("valid P element", "@valid"),
    ),
    "warps": (("", "@label"),),
    "blocks": (("block", "(@by, @bx)"), ("", "@status")),
    "finding": (("finding", "@note"),),
}


def _hover(f, renderer, kind: str, name: str = "", **kwargs) -> None:
    """The tooltips of a source kind (``_TOOLTIPS``) for ``renderer`` of ``f``."""
    tips = [(label, field.replace("{name}", name)) for label, field in _TOOLTIPS[kind]]
    add_hover(f, renderer, tips, **kwargs)


#: The kind of columns of every source whose name is not itself a key of _COLUMNS.
_KIND = {
    **{m: "matrix" for m in ("M", "N", "P")},
    **{f"{m}_outline": "outline" for m in ("M", "N", "P")},
    "Mds": "slots",
    "Nds": "slots",
    "Mds_bank": "bank",
    "Nds_bank": "bank",
    "warp_threads": "cells",
    **{f"{v}_finding": "finding" for v in ("M", "N", "P", "Mds", "Nds", "threads")},
}


def _columns_of(kind: str, only: Sequence[str] | None = None) -> dict[str, list]:
    """Empty columns of a source kind (a key of ``_COLUMNS``), or of ``only`` of them."""
    return {c: [] for c in _COLUMNS[kind] if only is None or c in only}


def _add_row(cols: dict[str, list], **row) -> None:
    """Append one row to ``cols``: a value for every column, by name."""
    if row.keys() != cols.keys():
        raise KeyError(f"a row needs the columns {sorted(cols)}, got {sorted(row)}")
    for name, v in row.items():
        cols[name].append(v)


def _add_cell(cols: dict[str, list], r: int, c: int, **row) -> None:
    """Append the row of the grid cell (r, c): its centre ``x``, ``y`` and ``row``'s values."""
    _add_row(cols, x=c + 0.5, y=r + 0.5, **row)


def _text_lines(lines: Sequence[tuple[str, str, str]], first: float = 0.0) -> dict[str, list]:
    """Columns of a text view: one ``(text, font style, colour)`` per line, from line ``first``."""
    return {
        "x": [0.0] * len(lines),
        "y": [first + i + 0.5 for i in range(len(lines))],
        "text": [t for t, _, _ in lines],
        "font_style": [st for _, st, _ in lines],
        "color": [c for _, _, c in lines],
    }


CAPTION_CHARS = 120  # title and caption lines are wrapped at this many characters
#: The views of a presenter scene: what a class must see on a projector.
PRESENTER_VIEWS = ("caption", "M", "N", "P", "Mds", "Nds", "threads")
#: Pixels (width, height) a presenter scene fits in: a 1024 x 768 or 1280 x 720
#: projector less the page's one row of controls and its status line.
PRESENTER_BOX = (990, 610)
#: Width of a digit in the scene's sans-serif type (em): presenter mode sizes
#: a matrix's values so that its widest value fills its cell, no more.
DIGIT_EM = 0.64  # DejaVu Sans: 0.636
MIN_INDEX_PX = 8  # smallest type of a grid's index labels before indices are left out
TABLE_ROWS = 9  # the table shows every thread when T*T <= this, else a window
TABLE_PHASES = 3  # ... and at most this many phases around the current one
COUNTER_CHARS = 46
PHASES_PER_LINE = 3  # the counters list Pvalue after each phase, this many to a line
MONO = "'DejaVu Sans Mono', 'Menlo', 'Consolas', monospace"
SANS = f"'{pal.FONT_FAMILY}', 'Helvetica Neue', Arial, sans-serif"
_NAN_TEXT = "?"


# ------------------------------------------------------------------ labels
_fmt = format_value  # the one value formatter (vizmm.render.text)


def slot_label(state: int, src: Sequence[int], matrix: str) -> str:
    """What an Mds / Nds slot holds, in the book's notation (``M_{0,2}``, ``0.0``).

    Parameters
    ----------
    state : int
        :class:`~vizmm.replay.SlotState` code of the slot.
    src : (row, col)
        The element the slot holds (``Frame.mds_src[ty, tx]``); -1 where none.
    matrix : {'M', 'N'}

    Returns
    -------
    str
        ``M_{r,c}`` for a loaded, stale or wrong element, ``0.0`` for a
        zero-fill, ``?`` for a slot whose content is unknown (never written,
        or a skipped out-of-allocation load over an unknown value).
    """
    state = SlotState(int(state))
    r, c = int(src[0]), int(src[1])
    if state == SlotState.ZERO:
        return "0.0"
    if r >= 0:
        return _sub(matrix, r, c)
    return _NAN_TEXT


@lru_cache(maxsize=4096)
def thread_label(state: int, k: int | None = None, rank: int = -1) -> str:
    """A word for a thread's state (``load``, ``wait``, ``k=1``, ``wait #3`` ...).

    ``rank`` (the arrival rank at a barrier in recorded order, 0 first) is
    shown as ``#rank+1`` for waiting threads.
    """
    state = ThreadState(int(state))
    if state == ThreadState.COMPUTING and k is not None:
        return f"k={k}"
    if state in (ThreadState.WAITING_1, ThreadState.WAITING_2) and rank >= 0:
        return f"wait #{rank + 1}"
    return pal.THREAD_STATE_SHORT[state]


@lru_cache(maxsize=1 << 16)
def _uni(text: str) -> str:
    return render_text(text, "unicode")


_text_on = lru_cache(maxsize=1024)(pal.text_on)


@lru_cache(maxsize=1 << 16)
def _slot_label(state: int, r: int, c: int, matrix: str) -> str:
    return slot_label(state, (r, c), matrix)


# ---------------------------------------------------------- static lookups


@per_trace(maxsize=3)
def _static_grid(trace: Trace, name: str) -> dict[str, list]:
    """Columns of a matrix grid that never change for a trace (positions, names, values).

    Kept on the trace (:func:`vizmm.trace.derived.per_trace`), M, N and P.
    """
    j, k, l = trace.shape
    rows, cols = {"M": (j, k), "N": (k, l), "P": (j, l)}[name]
    r, c = np.divmod(np.arange(rows * cols), cols)
    value = {"M": trace.M, "N": trace.N, "P": trace.P}[name].ravel()
    final = [_fmt(v) for v in value.tolist()]
    return {
        "x": (c + 0.5).tolist(),
        "y": (r + 0.5).tolist(),
        "row": r.tolist(),
        "col": c.tolist(),
        "name": [_uni(_sub(name, a, b)) for a, b in zip(r.tolist(), c.tolist(), strict=True)],
        "final": final,
        "text": final if name != "P" else [""] * len(final),
    }


# ------------------------------------------------------------------ frames
def frame_columns(
    frame: Frame,
    trace: Trace,
    sources: Iterable[str] | None = None,
    theme: str | pal.Palette = "light",
    caption_chars: int = CAPTION_CHARS,
    conceal: bool = False,
) -> dict[str, dict[str, list]]:
    """The data of every glyph of the scene for one frame (pure).

    Parameters
    ----------
    frame : Frame
        A frame of a :class:`~vizmm.replay.Replay` of ``trace``.
    trace : Trace
        The trace the frame replays (for the matrices' values, the kernel
        source and the Fig. 5.8 table).
    sources : iterable of str, optional
        Compute only these sources (a scene with fewer views needs fewer;
        the matrices of a 4096 x 4096 trace are costly). All by default.
    theme : {'light', 'dark'} or Palette
        The colours (:func:`vizmm.render.palette.palette`).
    caption_chars : int
        Characters per line of the caption (a presenter scene's are fewer).
    conceal : bool
        Leave the text of the Fig. 5.8 table's future cells out (a question
        asked at this step must not find its answer in the page's data).

    Returns
    -------
    dict of str to dict of str to list
        ``{source name: {column: list}}``; the names are the values of
        :data:`SOURCE_NAMES` (``"M"``, ``"M_outline"``, ``"P_pvalue"``, ...,
        ``"Mds"``, ``"threads"``, ``"table"``, ...). Every list of one source
        has the same length; plain Python lists of str, int and float, ready
        for JSON. Matrix cells hold an integer ``code`` (see
        :func:`matrix_palette`).
    """
    want = ALL_SOURCES if sources is None else frozenset(sources)
    th = pal.palette(theme)
    out: dict[str, dict[str, list]] = {}
    makers: dict[str, Callable[[], dict]] = {
        "caption": lambda: _caption_columns(frame, th, caption_chars),
        "P_pvalue": lambda: _pvalue_columns(frame, trace),
        "Mds": lambda: _shared_columns(frame, "M", th),
        "Nds": lambda: _shared_columns(frame, "N", th),
        "threads": lambda: _thread_columns(frame, th),
        "source": lambda: _source_columns(frame, trace, th),
        "blocks": lambda: _block_columns(frame, trace, th),
        "table": lambda: _table_columns(frame, trace, th, conceal),
    }
    for name in ("M", "N", "P"):
        makers[name] = partial(_matrix_columns, frame, trace, name)
        makers[f"{name}_outline"] = partial(_outline_columns, frame, trace, name, th)
    makers["Mds_bank"] = lambda: _bank_columns(frame, "M", th)
    makers["Nds_bank"] = lambda: _bank_columns(frame, "N", th)
    makers["warp_threads"] = lambda: _warp_thread_columns(frame)
    for view in ("M", "N", "P", "Mds", "Nds", "threads"):
        makers[f"{view}_finding"] = partial(_finding_columns, frame, view, th)
    makers["warps"] = lambda: _warp_columns(frame, th)
    for name in SOURCE_ORDER:
        if name in want and name in makers:
            out[name] = makers[name]()
    if want & {"counters", "bars"}:
        counters, bars = _counter_columns(frame, trace, th)
        for name, cols in (("counters", counters), ("bars", bars)):
            if name in want:
                out[name] = cols
    unknown = want - ALL_SOURCES
    if unknown:
        raise ValueError(f"unknown source(s) {', '.join(sorted(unknown))}")
    return out


def _caption_columns(frame: Frame, th: pal.Palette, chars: int = CAPTION_CHARS) -> dict[str, list]:
    title = f"Step {frame.index + 1} of {frame.count} · {frame.title}"
    lines = [(line, "bold", th.TEXT) for line in textwrap.wrap(title, chars)[:2]]
    caption = textwrap.wrap(frame.caption, chars, break_on_hyphens=False)
    for line in caption[: 4 - len(lines)]:
        lines.append((line, "normal", th.TEXT))
    while len(lines) < 4:
        lines.append(("", "normal", th.TEXT))
    return _text_lines(lines)


# Matrix cells carry one small integer, ``code``: a CellState (0..5), P_WRITTEN
# (6) for a P element this block has stored, or THREAD_CODE + t while thread t
# loads the element. The scene maps codes to colours and hover words in the
# browser, so a step of a 48 x 48 matrix sends a few KB, not a few hundred.
P_WRITTEN = len(CellState)
THREAD_CODE = P_WRITTEN + 1


def matrix_palette(
    n_threads: int, theme: str | pal.Palette = "light"
) -> tuple[list[str], list[str], list[str]]:
    """Fill colours, text colours and hover words of every matrix cell ``code``.

    Parameters
    ----------
    n_threads : int
        Threads per block (T * T).
    theme : {'light', 'dark'} or Palette

    Returns
    -------
    fills, texts, words : list of str
        Indexed by ``code`` (see :func:`frame_columns`).
    """
    th = pal.palette(theme)
    fills = (
        [th.CELL_COLORS[c] for c in CellState]
        + [th.P_WRITTEN_COLOR]
        + list(th.thread_colors(n_threads))
    )
    texts = [th.text_on(c) for c in fills]
    words = (
        [th.CELL_LABELS[c] for c in CellState]
        + ["written by this block"]
        + ["being loaded by its thread" for _ in range(n_threads)]
    )
    return fills, texts, words


def _matrix_columns(frame: Frame, trace: Trace, name: str) -> dict[str, list]:
    static = _static_grid(trace, name)
    state = {"M": frame.m_state, "N": frame.n_state, "P": frame.p_state}[name].ravel()
    code = state.astype(np.int32)
    if name in ("M", "N"):
        who = (frame.m_thread if name == "M" else frame.n_thread).ravel()
        loading = who >= 0
        code[loading] = THREAD_CODE + who[loading]
    else:
        code[state == CellState.DONE] = P_WRITTEN
    return {**static, "code": code.tolist()}


def _cells_at(mask: np.ndarray) -> dict[str, list]:
    """Centres of the cells where ``mask`` is true (outlined cells)."""
    rr, cc = np.nonzero(mask)
    return {"x": (cc + 0.5).tolist(), "y": (rr + 0.5).tolist()}


def _pvalue_columns(frame: Frame, trace: Trace) -> dict[str, list]:
    """The block's P elements with the Pvalue their threads hold so far."""
    j, _, l = trace.shape
    T = trace.tile_width
    row0, col0 = frame.tiles["P"]
    cols = _columns_of("P_pvalue")
    names = _static_grid(trace, "P")["name"]
    pstate, p_wrong, pvalue, p_book = frame.p_state, frame.p_wrong, frame.pvalue, frame.p_book
    done = int(CellState.DONE)  # looked up once, not for every element
    # the element each thread stores, as the frame says (a user kernel's recorded store)
    at = frame.p_element
    if at is None:
        at = np.stack(np.meshgrid(row0 + np.arange(T), col0 + np.arange(T), indexing="ij"), axis=-1)
    for ty in range(T):
        for tx in range(T):
            r, c = (int(v) for v in at[ty, tx])
            if not (0 <= r < j and 0 <= c < l):
                continue
            wrong = p_wrong is not None and bool(p_wrong[r, c])
            state = int(pstate[r, c])
            _add_cell(
                cols,
                r,
                c,
                name=names[r * l + c],
                # barrier lab: the wrong value, and under it the book's kernel's
                text=f"✗ {_fmt(pvalue[ty, tx])}\n✓ {_fmt(p_book[ty, tx])}"
                if wrong and p_book is not None
                else ("✗ " if wrong else "") + _fmt(pvalue[ty, tx]),
                thread=f"thread ({ty},{tx})",
                code=P_WRITTEN if state == done else state,
            )
    return cols


def _ghosts(frame: Frame, T: int, name: str, th: pal.Palette) -> list[tuple]:
    """The ghost cells of a matrix: ``(row, col, fill, line, text, state, thread)`` each.

    Elements of the block's tiles that lie outside the matrix (M, N) and
    threads whose P element does (P).
    """
    if name == "P":  # (row, col, thread): a thread whose P element lies outside P
        fill = th.THREAD_STATE_COLORS[ThreadState.IDLE]
        return [
            (r, c, fill, th.MUTED, "", "outside P: this thread has no P element", t)
            for r, c, t in frame.p_ghosts
        ]
    n = T * T
    ghosts = []
    for r, c, code, t, now, element in frame.ghosts.get(name, []):
        if code == Access.ZERO_FILL:
            text = "0.0"
        elif code == Access.WRONG_ELEMENT:
            text = "=" + _uni(_sub(name, *element))
        elif code == Access.OUT_OF_ALLOCATION:
            text = "✗"
        else:
            text = ""
        line = th.thread_color(t, n) if now else th.MUTED
        fill = th.GHOST_COLORS[int(code)]
        ghosts.append((r, c, fill, line, text, th.GHOST_LABELS[int(code)], t))
    return ghosts


def _outline_columns(frame: Frame, trace: Trace, name: str, th: pal.Palette) -> dict[str, list]:
    """What one glyph draws over a matrix's cells, in the order it is painted.

    The matrix's edge (so ghost cells read as outside it); its ghost cells
    (dashed, hatched, filled by what happened there; the only rows with a
    ``name`` and a tooltip); the current tile; the followed thread's elements;
    in M and N, the transactions view's segments (dashed) and sectors of the
    current warp.
    """
    T = trace.tile_width
    cols = _columns_of("outline")

    # hatch " ": none (BokehJS warns of a null pattern)
    def add(x, y, w, h, color, width, dash="solid", fill=None, hatch=" ", text="", **cell):
        _add_row(
            cols,
            x=x,
            y=y,
            w=w,
            h=h,
            fill=fill,
            hatch=hatch,
            line_color=color,
            line_width=width,
            line_dash=dash,
            text=text,
            text_color=cell.get("text_color"),
            name=cell.get("name", ""),
            state=cell.get("state", ""),
            loader=cell.get("loader", ""),
        )

    height, width = {"M": trace.shape[:2], "N": trace.shape[1:], "P": trace.shape[::2]}[name]
    add(width / 2, height / 2, float(width), float(height), th.TEXT, 1.5)
    for r, c, fill, line, text, state, t in _ghosts(frame, T, name, th):
        add(
            c + 0.5,
            r + 0.5,
            1.0,
            1.0,
            line,
            1.5,
            "dashed",
            fill=fill,
            hatch="/",
            text=text,
            text_color=th.text_on(fill),
            name=_uni(_sub(name, r, c)),
            state=state,
            loader=f"thread ({t // T},{t % T})",
        )
    corner = frame.tiles.get(name)
    if corner is not None:
        r0, c0 = corner
        add(c0 + T / 2, r0 + T / 2, float(T), float(T), th.TILE_OUTLINE, 3.0)
    focus = {"M": frame.m_focus, "N": frame.n_focus, "P": frame.p_focus}[name]
    for r, c in zip(*(a.tolist() for a in np.nonzero(focus)), strict=True):
        add(c + 0.5, r + 0.5, 1.0, 1.0, th.FOCUS, 3.0)
    o = frame.transactions
    if name != "P" and o is not None:
        for what, color, line_width, dash in (
            ("segments", th.READ, 4.0, "dashed"),
            ("sectors", th.TEXT, 2.0, "solid"),
        ):
            for r, c0, c1 in getattr(o, f"{name.lower()}_{what}"):
                add((c0 + c1) / 2, r + 0.5, float(c1 - c0), 1.0, color, line_width, dash)
    return cols


def _finding_columns(frame: Frame, view: str, th: pal.Palette) -> dict[str, list]:
    """The outlines a selected finding of ``vizmm.check`` puts on ``view`` (:attr:`Frame.finding`).

    What went wrong (``wrong``) solid in the finding's colour, what the
    book's kernel uses there (``needed``) dashed in its own, a right factor
    of a wrong term (``used``) dotted, the other thread (``other``) dashed.
    """
    cols = _columns_of("finding")
    marks = frame.finding
    if marks is None:
        return cols
    look = {
        "wrong": (th.FINDING, "solid"),
        "needed": (th.NEEDED, "dashed"),
        "used": (th.FINDING, "dotted"),
        "other": (th.FINDING, "dashed"),
    }
    for m in marks.of(view):
        color, dash = look.get(m.role, (th.FINDING, "solid"))
        _add_cell(cols, m.row, m.col, line_color=color, line_dash=dash, role=m.role, note=m.note)
    return cols


def _bank_columns(frame: Frame, matrix: str, th: pal.Palette) -> dict[str, list]:
    """The bank of every Mds / Nds slot at a step of the k loop; the current warp's conflicts."""
    o = frame.transactions
    bank, read, conflict = (
        (None,) * 3 if o is None else tile_arrays(o, matrix, "bank", "read", "conflict")
    )
    if bank is None or read is None or conflict is None:
        return _columns_of("bank")
    T = bank.shape[0]
    pos = _grid_positions(T)
    colors = th.thread_colors(32)
    banks = bank.ravel().tolist()
    reads = read.ravel().tolist()
    conflicts = conflict.ravel().tolist()
    return {
        "x": pos["x"],
        "y": [y + 0.36 for y in pos["y"]],
        "fill": [colors[b] for b in banks],
        "text": [f"b{b}" for b in banks],
        "text_color": [th.text_on(colors[b]) for b in banks],
        "line_color": [
            th.TILE_OUTLINE if c else (th.TEXT if r else colors[b])
            for c, r, b in zip(conflicts, reads, banks, strict=True)
        ],
        "line_width": [3.0 if c else 1.5 for c in conflicts],
        "bank": banks,
        "note": [
            "bank conflict: this warp asks the bank for several words"
            if c
            else ("read by this warp" if r else "")
            for c, r in zip(conflicts, reads, strict=True)
        ],
    }


def _warp_thread_columns(frame: Frame) -> dict[str, list]:
    """The threads of the current warp (outlined in the thread grid)."""
    o = frame.transactions
    return _columns_of("cells") if o is None else _cells_at(o.warp_threads)


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


@lru_cache(maxsize=32)
def _grid_positions(T: int) -> dict[str, list]:
    ty, tx = np.divmod(np.arange(T * T), T)
    return {
        "x": (tx + 0.5).tolist(),
        "y": (ty + 0.5).tolist(),
        "ty": ty.tolist(),
        "tx": tx.tolist(),
        "sx": (tx + 0.16).tolist(),
        "sy": (ty + 0.16).tolist(),
        "ax": (tx + 0.8).tolist(),  # the barrier lab's "ran ahead" mark: top right
        "ay": (ty + 0.2).tolist(),
        "loader": [f"thread ({a},{b})" for a, b in zip(ty.tolist(), tx.tolist(), strict=True)],
    }


_SHOW_VALUE = (SlotState.LOADED, SlotState.WRONG, SlotState.STALE)


def _shared_columns(frame: Frame, matrix: str, th: pal.Palette) -> dict[str, list]:
    state, src, value, now, read, focus, loader, wrong_arr = tile_arrays(
        frame, matrix, "state", "src", "value", "now", "read", "focus", "loader", "wrong"
    )
    T = state.shape[0]
    tcol = th.thread_colors(T * T)
    pos = _grid_positions(T)
    who = np.arange(T * T) if loader is None else loader.ravel()
    cols = _columns_of("slots")
    states = state.ravel().tolist()
    rows = src[..., 0].ravel().tolist()
    colsrc = src[..., 1].ravel().tolist()
    values = value.ravel().tolist()
    nows = now.ravel().tolist()
    reads = read.ravel().tolist()
    focuses = focus.ravel().tolist()
    wrongs = [False] * (T * T) if wrong_arr is None else wrong_arr.ravel().tolist()
    array = "Mds" if matrix == "M" else "Nds"
    found = frame.slot_found or {}
    for t, st in enumerate(states):
        label = _slot_label(st, rows[t], colsrc[t], matrix)
        raced = found.get((array, t // T, t % T)) if wrongs[t] else None
        fill = th.SLOT_COLORS[st]
        if nows[t] and st == SlotState.LOADED:
            fill = tcol[who[t]]  # the colour of the thread storing it, as in M / N
        if wrongs[t]:  # barrier lab: a read of this slot found the wrong element
            line, width = th.SLOT_COLORS[SlotState.WRONG], 5.0
        elif focuses[t]:
            line, width = th.FOCUS, 4.0
        elif reads[t]:
            line, width = th.READ, 4.0
        elif nows[t]:
            line, width = tcol[t], 3.0
        else:
            line, width = th.GRID_LINE, 1.0
        v = values[t]
        shown = _uni(label) if label != _NAN_TEXT else label
        if st == SlotState.SKIPPED:
            shown = f"✗ {shown}" if label != _NAN_TEXT else "✗"
        if st in _SHOW_VALUE and v == v:
            shown = f"{shown}\n{_fmt(v)}"
        why = " · read at this k while another thread's write raced with it"
        if raced is not None:  # what the racing read found here, not the slot's store
            label = _found_label(raced, matrix)
            shown = f"{_uni(label)}\n{_fmt(raced.value)}"
            ty, tx = raced.reader
            why = f" · thread ({ty},{tx}) {raced.words}"
            v = raced.value
        _add_row(
            cols,
            x=pos["x"][t],
            y=pos["y"][t],
            ty=pos["ty"][t],
            tx=pos["tx"][t],
            fill=fill,
            line_color=line,
            line_width=width,
            text=f"✗ {shown}" if wrongs[t] else shown,
            text_color=th.MUTED if st in (SlotState.STALE, SlotState.EMPTY) else _text_on(fill),
            state=th.SLOT_LABELS[st] + (why if wrongs[t] else ""),
            element=label,
            value=_fmt(v),
            loader=pos["loader"][who[t]],
        )
    return cols


def _value_chars(trace: Trace, name: str) -> int:
    """Characters of the widest value of matrix ``name`` ('M', 'N', 'P') as its cells show it."""
    a = {"M": trace.M, "N": trace.N, "P": trace.P}[name]
    finite = a[np.isfinite(a)]
    if not finite.size:
        return 1
    return max(1, len(_fmt(float(finite.min()))), len(_fmt(float(finite.max()))))


def _found_label(found, matrix: str) -> str:
    """The element a racing read found: ``'M_{0,2}'``, ``'0.0'`` (zero-fill), ``'?'``."""
    if found.element is not None:
        return _sub(matrix, *found.element)
    return "0.0" if found.tag == -1 else _NAN_TEXT  # TAG_ZERO_FILL, else not written


def _thread_columns(frame: Frame, th: pal.Palette) -> dict[str, list]:
    state = frame.thread_state
    T = state.shape[0]
    tcol = list(th.thread_colors(T * T))
    pos = _grid_positions(T)
    k = frame.step.k
    focus = -1 if frame.focus is None else frame.focus[0] * T + frame.focus[1]
    cols = _columns_of("threads")
    # Arrival ranks only while a barrier fills up in recorded order (as the GIF frames do)
    arriving = frame.step.arrived is not None and frame.step.arrived < T * T
    ranks = frame.thread_rank.ravel().tolist() if arriving else [-1] * (T * T)
    pvs = frame.pvalue.ravel().tolist()
    valid = frame.thread_valid.ravel().tolist()
    notes = frame.wrong_notes or {}
    ahead = frame.ahead_notes or {}
    said = frame.thread_terms or {}  # a user kernel: every term of the thread at this k
    for t, st in enumerate(state.ravel().tolist()):
        fill = th.THREAD_STATE_COLORS[st]
        word = thread_label(st, k, ranks[t])
        note = notes.get((t // T, t % T))
        ran = ahead.get((t // T, t % T))
        if note:  # barrier lab: this thread's read found the wrong element
            line, width = th.SLOT_COLORS[SlotState.WRONG], 5.0
            word = f"✗ {word}"
        else:
            line, width = (th.FOCUS, 4.0) if t == focus else (th.BACKGROUND, 1.5)
        _add_row(
            cols,
            **{c: pos[c][t] for c in ("x", "y", "sx", "sy", "ax", "ay", "ty", "tx")},
            ident=tcol[t],
            fill=fill,
            line_color=line,
            line_width=width,
            text=f"{pos['ty'][t]},{pos['tx'][t]}\n{word}",
            text_color=_text_on(fill),
            state=th.THREAD_STATE_LABELS[st]
            + (f" · {said[(t // T, t % T)]}" if (t // T, t % T) in said else "")
            + (f" · {note}" if note else "")
            + (f" · ▶ {ran}" if ran else ""),  # barrier lab: it ran ahead of another
            word=word,
            pvalue=_fmt(pvs[t]),
            valid="yes" if valid[t] else "no (idle at the end)",
            ahead_alpha=1.0 if ran else 0.0,
        )
    return cols


@lru_cache(maxsize=16)
def _source_lines(source: str) -> tuple[str, ...]:
    lines = source.rstrip("\n").splitlines() or ["(this trace does not hold the kernel source)"]
    width = len(str(len(lines)))
    return tuple(f"{i + 1:>{width}}  {line}" for i, line in enumerate(lines))


def _source_columns(frame: Frame, trace: Trace, th: pal.Palette) -> dict[str, list]:
    lines = _source_lines(trace.meta.get("source", "") or "")
    cur = frame.source_line
    struck = set(frame.struck_lines)
    return {
        "x": [0.0] * len(lines),
        "y": [i + 0.5 for i in range(len(lines))],
        "text": [struck_out(t) if i in struck else t for i, t in enumerate(lines)],
        "bg": [th.READ if i == cur else th.BACKGROUND for i in range(len(lines))],
        "bg_alpha": [0.45 if i == cur else 0.0 for i in range(len(lines))],
        "marker": ["▶" if i == cur else ("✗" if i in struck else "") for i in range(len(lines))],
        "font_style": [
            "bold" if i == cur else ("italic" if i in struck else "normal")
            for i in range(len(lines))
        ],
    }


def struck_out(line: str) -> str:
    """A source line drawn struck through (the barrier lab's removed ``__syncthreads()``).

    The line number stays readable; the code gets U+0336 (combining long
    stroke overlay) after each character, and "(removed)" at the end.

    Parameters
    ----------
    line : str
        A line of the kernel's source, as the source view shows it.
    """
    head, sep, code = line.partition("  ")
    body = "".join(ch + "\u0336" if not ch.isspace() else ch for ch in code)
    return f"{head}{sep}{body}   (removed)"


def _counter_columns(
    frame: Frame, trace: Trace, th: pal.Palette
) -> tuple[dict[str, list], dict[str, list]]:
    """The counters view's lines and its two bars, each under its own heading.

    The global loads' heading stands over their numbers and the tiled/naive
    bars; CGMA and the followed thread's Pvalue come below the bars. Before
    any product (no tile pair loaded yet: ``terms_loaded`` 0) there is no
    ratio nor CGMA to give, and the lines say so; with no thread followed,
    no thread is named.
    """
    T = trace.tile_width
    loads, naive = frame.loads_so_far, frame.naive_loads_so_far
    product = frame.terms_loaded > 0
    ratio = f"{naive / loads:.1f}x fewer" if product and loads else "no product yet"
    loads_lines: list[tuple[str, str, str]] = [
        ("Global loads of M, N (this block)", "bold", th.TEXT),
        (f"  tiled kernel so far   {loads:>7d}", "normal", th.TEXT),
        (f"  naive kernel, same    {naive:>7d}", "normal", th.MUTED),
        (f"  -> {ratio} (TILE_WIDTH = {T})", "normal", th.TEXT),
    ]
    # Two lines: as one (49 characters) it would not fit the view's COUNTER_CHARS.
    cgma = f"CGMA {frame.cgma / 4:.2f} OP/B ({frame.cgma:.2f} FLOP/load)"
    lines: list[tuple[str, str, str]] = [
        (cgma if product else "CGMA: no product yet", "bold", th.TEXT),
        ("  naive kernel         0.25 OP/B", "normal", th.MUTED),
    ]
    if frame.focus is not None:
        fy, fx = frame.focus
        pvs = []
        for ph in range(frame.phase_pvalues.shape[0]):
            v = float(frame.phase_pvalues[ph, fy, fx])
            pvs.append(f"ph {ph}: {'-' if math.isnan(v) else _fmt(v)}")
        lines.append((f"Pvalue of followed thread ({fy},{fx}) after", "bold", th.TEXT))
        for i in range(0, max(1, len(pvs)), PHASES_PER_LINE):
            lines.append(("  " + "   ".join(pvs[i : i + PHASES_PER_LINE]), "normal", th.TEXT))
    else:
        lines.append(("Pvalue after each phase", "bold", th.TEXT))
        lines.append(("  click a thread to follow its Pvalue", "normal", th.MUTED))
    # Bars (loads so far against the naive count, scaled to the block's naive
    # total) right under the loads' lines, then the rest.
    n_bars = 2
    counters = _text_lines(loads_lines)
    for name, col in _text_lines(lines, first=len(loads_lines) + n_bars).items():
        counters[name] += col
    total = max(1, frame.naive_loads_total)
    width = COUNTER_CHARS - 2
    bars = _columns_of("bars")
    for row, (count, color, label) in enumerate(
        ((loads, th.FOCUS, "tiled"), (naive, th.MUTED, "naive"))
    ):
        w = width * min(1.0, count / total)
        text = f"{label} {count}"
        inside = w > len(text) + 1.5
        _add_row(
            bars,
            x=1 + w / 2,
            y=len(loads_lines) + 0.5 + row,
            w=max(w, 0.01),
            fill=color,
            label=text,
            lx=1.4 if inside else 1.6 + w,
            label_color=th.text_on(color) if inside else th.TEXT,
        )
    o = frame.transactions
    if o is not None:  # under the Pvalue lines
        extra = [("Memory transactions (all recorded blocks)", "bold", th.TEXT)]
        extra += [(f"  {t}", "normal", th.TEXT) for t in o.totals]
        first = len(loads_lines) + n_bars + len(lines)
        for name, col in _text_lines(extra, first=first).items():
            counters[name] += col
    return counters, bars


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


# ------------------------------------------------------------------- table
def _table_kind_fill(th: pal.Palette) -> dict[str, str]:
    return {
        "zero_fill": th.SLOT_COLORS[SlotState.ZERO],
        "wrong_element": th.SLOT_COLORS[SlotState.WRONG],
        "out_of_allocation": th.SLOT_COLORS[SlotState.SKIPPED],
        "skipped": th.THREAD_STATE_COLORS[ThreadState.IDLE],
        "written": th.BACKGROUND,
        "wrong_term": th.WRONG,
        "wrong_value": th.WRONG,
    }


def _table_layout(trace: Trace, block: tuple[int, int], table: Table):
    """Columns kept, their widths (characters) and display texts for a block's table.

    ``table`` is the block's (a frame's :attr:`~vizmm.replay.Frame.table`);
    its layout is kept with the trace, a few blocks at a time.
    """
    return kept(trace, "bokeh_scene.table_layout", tuple(block), lambda: _layout(table, trace))


def _layout(table: Table, trace: Trace):
    T = trace.tile_width
    keep = [i for i, c in enumerate(table.columns) if not (c.role == "pvalue" and T > 2)]
    texts = []
    for row in table.rows:
        out = []
        for i in keep:
            cell, col = row[i], table.columns[i]
            text = cell.text
            if col.role == "pvalue" and " += " in text:
                text = text.split(" += ", 1)[1]
            text = text.replace(" (out of allocation)", " ✗")
            out.append(_uni(text))
        texts.append(out)
    heads = []
    for i in keep:
        c = table.columns[i]
        short = {
            "pvalue": "Pvalue +=",
            "value": "Pvalue",
            "p_write": "P store",
            "thread": "thread",
        }.get(c.role, c.short)
        heads.append(_uni(short))
    widths = []
    for n in range(len(keep)):
        w = max([len(heads[n])] + [len(r[n]) for r in texts])
        widths.append(w + 2)
    return table, keep, texts, heads, widths


def _table_columns(
    frame: Frame, trace: Trace, th: pal.Palette, conceal: bool = False
) -> dict[str, list]:
    block = (int(frame.block[0]), int(frame.block[1]))
    if frame.table is None:  # a frame made by hand: nothing to draw
        return _columns_of("table")
    table, keep, texts, heads, widths = _table_layout(trace, block, frame.table)
    T = trace.tile_width
    nrows = len(table.rows)
    columns = [table.columns[i] for i in keep]
    # Phases shown: all, or a window of TABLE_PHASES around the current phase.
    nph = len(table.phases)
    cursor = frame.table_cursor
    cur_ph = cursor.phase
    first = min(max(0, cur_ph - TABLE_PHASES + 2), max(0, nph - TABLE_PHASES))
    shown_ph = set(range(first, first + TABLE_PHASES))
    show = [n for n, c in enumerate(columns) if c.phase is None or c.phase in shown_ph]
    # Rows shown: all, or a window around the followed thread.
    if nrows <= TABLE_ROWS:
        rows = list(range(nrows))
        more = 0
    else:
        f = frame.focus[0] * T + frame.focus[1] if frame.focus is not None else 0
        start = min(max(0, f - 3), nrows - (TABLE_ROWS - 1))
        rows = list(range(start, start + TABLE_ROWS - 1))
        more = nrows - len(rows)
    current, done = cursor.current, cursor.done
    kind_fill = _table_kind_fill(th)
    focus_row = (frame.focus[0] * T + frame.focus[1]) if frame.focus is not None else -1
    # a wrong term of vizmm.check: its thread's Pvalue cell of its phase, outlined
    marked = frame.finding.table if frame.finding is not None else None
    marked_cell = None if marked is None else (marked[0] * T + marked[1], marked[2], "pvalue")

    cols = _columns_of("table")

    def add(x0, w, y, text, fill, color, style="normal", line=th.GRID_LINE, note=""):
        _add_row(
            cols,
            x=x0 + w / 2,
            y=y + 0.5,
            w=float(w),
            h=1.0,
            tx=x0 + 1.0,
            fill=fill,
            line_color=line,
            text=text,
            text_color=color,
            font_style=style,
            note=note or text,
        )

    # x positions of the shown columns
    xs, x = {}, 0.0
    for n in show:
        xs[n] = x
        x += widths[n]
    # header: group row, then short names
    group_done = set()
    for n in show:
        c = columns[n]
        if c.group and c.group not in group_done:
            group_done.add(c.group)
            span = [m for m in show if columns[m].group == c.group]
            w = sum(widths[m] for m in span)
            add(xs[n], w, 0, c.group, th.HEADER_FILL, th.TEXT, "bold")
        elif not c.group:
            add(xs[n], widths[n], 0, "", th.HEADER_FILL, th.TEXT)
        add(xs[n], widths[n], 1, heads[n], th.HEADER_FILL, th.TEXT, "bold")
    # body
    for y, r in enumerate(rows, start=2):
        row = table.rows[r]
        for n in show:
            i = keep[n]
            cell, c = row[i], columns[n]
            is_current = current is not None and (c.phase, c.role) == current
            past = done(c.phase, c.role)
            fill = kind_fill.get(cell.kind, th.BACKGROUND)
            if c.role == "thread":
                fill = th.HEADER_FILL
            if is_current:
                fill = th.CURRENT_FILL if fill == th.BACKGROUND else fill
            color = th.text_on(fill) if (past or is_current) else th.MUTED
            if not (past or is_current) and fill != th.BACKGROUND and c.role != "thread":
                fill = th.BACKGROUND  # future cells: plain, muted text
                color = th.MUTED
            if c.role == "thread":  # a row's heading: readable on its fill (WCAG AA) at every step
                color = th.text_on(fill)
            line = th.TILE_OUTLINE if is_current else (th.FOCUS if r == focus_row else th.GRID_LINE)
            style = "bold" if (r == focus_row or is_current) else "normal"
            text = texts[r][n]
            note = _uni(cell.note or cell.text)
            if conceal and not (past or is_current) and c.role != "thread":
                text = note = ""
            elif marked_cell == (r, c.phase, c.role) and frame.finding is not None:
                line, style = th.FINDING, "bold"
                note = f"finding: {frame.finding.message} · {note}"
            add(xs[n], widths[n], y, text, fill, color, style, line, note)
    if more:
        y = len(rows) + 2
        total = sum(widths[n] for n in show)
        add(
            0.0,
            total,
            y,
            f"… {more} more threads: click a thread to show its row",
            th.BACKGROUND,
            th.MUTED,
            "italic",
        )
    return cols


#: Each trace's table extent, for as long as the trace is alive (two numbers
#: each: unlike the drawing caches, not emptied when the last page closes).
_TABLE_EXTENTS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def table_extent(trace: Trace) -> tuple[float, int]:
    """Width and height the Fig. 5.8 table figure needs for any frame of ``trace``.

    The table of Fig. 5.8 (``vizmm.replay.table``) for a few sampled blocks
    (first, last, middle: the shortest and longest indices, the edges' odd
    loads), as drawn: at most ``TABLE_PHASES`` phases and ``TABLE_ROWS`` rows.
    Remembered per trace while the trace is alive: for a 16 x 16 tile this
    builds whole tables (up to a second), so the server works it out for the
    shipped traces before it listens (``apps/preload.py``).

    Parameters
    ----------
    trace : Trace
        Any trace.

    Returns
    -------
    width : float
        Characters (monospace) of the widest sampled table, 40.0 for a trace
        without phases or detail blocks.
    lines : int
        Text lines: table rows (capped) plus two for the header, 3 when empty.
    """
    try:
        return _TABLE_EXTENTS[trace]
    except KeyError:
        extent = _TABLE_EXTENTS[trace] = _measure_table(trace)
        return extent


def _measure_table(trace: Trace) -> tuple[float, int]:
    if trace.n_phases == 0 or not len(trace.detail_blocks):
        return 40.0, 3
    widest, rows = 0.0, 0
    blocks = trace.detail_blocks.tolist()
    # first and last blocks have the shortest and longest indices; edges the odd loads
    sample = {tuple(b) for b in (blocks[:2] + blocks[-2:] + blocks[len(blocks) // 2 :][:1])}
    for b in sorted(sample):
        # built afresh and let go: table_extent keeps only the sizes
        table, keep, texts, heads, widths = _layout(block_table(trace, (b[0], b[1])), trace)
        columns = [table.columns[i] for i in keep]
        fixed = sum(w for w, c in zip(widths, columns, strict=True) if c.phase is None)
        per: dict = {}
        for w, c in zip(widths, columns, strict=True):
            if c.phase is not None:
                per[c.phase] = per.get(c.phase, 0) + w
        phase_w = sorted(per.values(), reverse=True)[:TABLE_PHASES]
        widest = max(widest, fixed + sum(phase_w))
        rows = max(rows, min(len(table.rows), TABLE_ROWS))
    return widest, rows + 2


# ------------------------------------------------------------------- scene
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
    def of(cls, trace: Trace, presenter: bool, views: Iterable[str] = VIEWS) -> _Sizes:
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


#: The features of a glyph's visual properties (``line_color``, ``text_font_size`` ...).
_VISUAL_FEATURES = ("line", "fill", "hatch", "text", "global")
#: What ``figure``'s glyph methods give a visual trait set nowhere else: the first colour
#: of Bokeh's default cycle (Category10's blue), opaque, text and hatching in black.
_FIGURE_TRAITS = {"color": "#1f77b4", "alpha": 1.0}
_FIGURE_VISUALS = {"text_color": "black", "hatch_color": "black"}


def _glyph_visuals(
    cls: type[Glyph],
    props: dict[str, Any],
    *,
    prefix: str = "",
    defaults: dict[str, Any] | None = None,
    override: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Every visual property of glyph class ``cls``, as ``figure``'s glyph methods set it.

    A visual property (``line_color``; ``nonselection_fill_alpha`` with
    ``prefix``) is popped from ``props``; one not given takes, in turn, a
    trait alias (``color``, ``alpha``, ``nonselection_alpha``: for every
    feature, where the glyph has no property of that name, popped at the
    end), ``override`` by trait, ``defaults`` by name (the main glyph's, for
    a selection glyph), then :data:`_FIGURE_TRAITS` / :data:`_FIGURE_VISUALS`:
    the order in which ``figure``'s glyph methods look for a value.

    Parameters
    ----------
    cls : type of bokeh.models.glyph.Glyph
        A glyph class of :mod:`bokeh.models.glyphs`; its properties come from
        its public ``properties()``.
    props : dict of str to object
        The keyword arguments given; the visual ones are removed.
    prefix : str
        ``""`` for the glyph, ``"nonselection_"`` or ``"selection_"``.
    defaults : dict of str to object, optional
        Values by property name, used when ``props`` gives none.
    override : dict of str to object, optional
        Values by trait (``{"alpha": 0.1}``), before ``defaults``.

    Returns
    -------
    dict of str to object
        Property name (no prefix) to value.
    """
    names = set(cls.properties())
    defaults = {**_FIGURE_VISUALS, **(defaults or {})}
    override = override or {}
    out: dict[str, Any] = {}
    aliases = set()
    for name in names:
        feature, _, trait = name.partition("_")
        if feature not in _VISUAL_FEATURES or not trait:
            continue
        if prefix + name in props:
            out[name] = props.pop(prefix + name)
        elif trait not in names and prefix + trait in props:
            out[name] = props[prefix + trait]
        elif trait in override:
            out[name] = override[trait]
        elif name in defaults:
            out[name] = defaults[name]
        elif trait in _FIGURE_TRAITS:
            out[name] = _FIGURE_TRAITS[trait]
        if trait not in names:
            aliases.add(prefix + trait)
    for alias in aliases:
        props.pop(alias, None)
    return out


@lru_cache(maxsize=64)  # one entry per glyph class the scene draws
def _spec_defaults(kind: str) -> tuple[tuple[str, Any], ...]:
    """Every data-spec property of glyph class ``kind`` with its default, in a form Bokeh stores.

    A property left unset has its default worked out (and checked) anew each
    time Bokeh reads it, and Bokeh reads every data-spec property of a glyph
    on every walk of a document's models (a data spec may hold a transform, a
    model): a served page walks them four times (Panel's Bokeh pane, the
    document's roots added, its models recomputed, the document sent). A
    glyph given them reads each as a stored value. They are given as
    ``value(default)`` (a default that is already a ``value(...)``: as its
    plain value), since a property set to a value equal to its current one
    is not stored; Bokeh sends both forms as the same value, and the defaults
    are Bokeh's own, so what BokehJS draws is unchanged. A spec whose default
    names a column (``x``, ``y``, ``text``) is left out.
    """
    from bokeh.core.property.dataspec import DataSpec
    from bokeh.core.property.descriptors import UnsetValueError
    from bokeh.core.property.vectorization import Field, Value
    from bokeh.core.serialization import Serializer
    from bokeh.models import glyphs

    cls = getattr(glyphs, kind)
    made = cls()
    out = []
    for name in sorted(cls.properties()):
        if isinstance(cls.lookup(name).property, DataSpec):
            try:
                default = getattr(made, name)
            except UnsetValueError:  # a required spec without a default (none of ours)
                continue
            if isinstance(default, (Field, dict)):
                continue
            # the same spec in the other of its two forms: stored, as it is not equal
            given = default.value if isinstance(default, Value) else value(default)
            probe = cls(**{name: given})
            sent = Serializer().encode(probe)["attributes"].get(name)
            # kept only where Bokeh sends it as the default's value (a plain string
            # of a string spec would name a column)
            if sent == {"type": "value", "value": getattr(default, "value", default)}:
                out.append((name, given))
    return tuple(out)


def add_glyph(
    fig, kind: str, source=None, *, selectable: bool = False, every=None, shared=None, **props
):
    """Add one glyph renderer to ``fig`` as ``figure`` methods do, less what is never drawn.

    ``fig.rect(...)`` and its kin also make a muted and a non-selection copy
    of the glyph (drawn only when a renderer is muted or its source has a
    selection) and a filter for the renderer alone. Nothing here is muted,
    and only the grids that take taps ever have a selection: BokehJS makes
    those copies itself if they are ever needed (``"auto"``), and renderers
    share one ``AllIndices`` filter (it holds nothing). A page then holds
    fewer Bokeh models, and every new session builds and sends that much less.
    Each glyph is given every data-spec property, those not asked for at
    Bokeh's default value, so that Bokeh does not work those defaults out
    again on each walk of the page's models.

    Parameters
    ----------
    fig : bokeh.models.Plot
        The plot to draw on (a figure of a :class:`Scene`, or any plot).
    kind : str
        A glyph class of :mod:`bokeh.models.glyphs` (``"Rect"``, ``"Text"``,
        ``"Scatter"``).
    source : ColumnDataSource, optional
        The rows to draw; a new empty source (one glyph of scalar values) by default.
    selectable : bool
        Keep a non-selection glyph (and a selection glyph when ``selection_*``
        properties are given), as ``figure`` does, for sources a tap selects.
    every : AllIndices, optional
        The filter of the renderer's view; by default the one the plot's
        renderers already share (a new one for its first renderer).
    shared : dict, optional
        Glyphs to share: a renderer whose glyph has the kind and properties
        of one kept here draws with that one (a glyph holds no data: each
        renderer draws it from its own source), and a new glyph is kept.
        Renderers of one ``source`` (and ``every``) also share their view
        (a ``CDSView`` holds the rows of its renderers' source: the same for
        each). A scene passes one per scene, so that one page sends each look
        and each view once.
    **props
        The glyph's properties as ``figure`` methods take them (column names
        or values; ``line_*``, ``fill_*``, ``text_*``, ``hatch_*``, ``color``,
        ``alpha`` and their ``nonselection_`` / ``selection_`` forms), and
        the renderer's ``name``, ``x_range_name`` and ``y_range_name`` (the
        plot's extra ranges it draws in: :meth:`Scene.ranges`).

    Returns
    -------
    bokeh.models.GlyphRenderer
    """
    from bokeh.models import AllIndices, CDSView, ColumnDataSource, glyphs
    from bokeh.models.renderers import GlyphRenderer

    cls = getattr(glyphs, kind)
    name = props.pop("name", None)
    # the renderer's ranges (a grid's own, on a plot of several grids)
    ranges: dict[str, Any] = {
        k: props.pop(k) for k in ("x_range_name", "y_range_name") if k in props
    }
    visuals = _glyph_visuals(cls, props)
    nonselection = selection = None
    if selectable:  # as figure() makes them
        nonselection = _glyph_visuals(
            cls, props, prefix="nonselection_", defaults=visuals, override={"alpha": 0.1}
        )
        if any(k.startswith("selection_") for k in props):
            selection = _glyph_visuals(cls, props, prefix="selection_", defaults=visuals)
    for k in [k for k in props if k.startswith(("nonselection_", "selection_", "muted_"))]:
        del props[k]
    # every data spec given, as value(default) where it is at Bokeh's default (_spec_defaults)
    defaults = {k: v for k, v in _spec_defaults(kind) if k not in props}

    def stored(given: dict[str, Any]) -> dict[str, Any]:
        out = dict(defaults)
        for k, v in given.items():
            if k not in defaults:
                out[k] = v
                continue
            d = defaults[k]
            plain = v is None or isinstance(v, (str, int, float, list))
            if not plain or v != getattr(d, "value", d):  # not the default: as given
                out[k] = v
        return out

    visuals = stored(visuals)
    if nonselection is not None:
        nonselection = stored(nonselection)
    if selection is not None:
        selection = stored(selection)
    if every is None:
        every = (
            next((r.view.filter for r in fig.renderers if isinstance(r, GlyphRenderer)), None)
            or AllIndices()
        )
    glyph = view = None
    if shared is not None:
        key = (kind, *sorted((k, repr(v)) for k, v in {**props, **visuals}.items()))
        glyph = shared.get(key)
        if glyph is None:
            glyph = shared[key] = cls(**props, **visuals)
        if source is not None:
            view = shared.get(("CDSView", source.id, every.id))
            if view is None:
                view = shared[("CDSView", source.id, every.id)] = CDSView(filter=every)
    # Only what differs from a renderer's defaults is passed: each property given
    # is set (and later sent) on its own, and BokehJS makes the "auto" copies.
    extra: dict[str, Any] = dict(ranges) if name is None else {"name": name, **ranges}
    if nonselection is not None:
        extra["nonselection_glyph"] = cls(**props, **nonselection)
    if selection is not None:
        extra["selection_glyph"] = cls(**props, **selection)
    r = GlyphRenderer(
        data_source=ColumnDataSource() if source is None else source,
        glyph=cls(**props, **visuals) if glyph is None else glyph,
        view=CDSView(filter=every) if view is None else view,
        **extra,
    )
    fig.renderers.append(r)
    return r


class _Sources(Mapping):
    """A scene's sources by name, each made by ``make(name)`` when first asked for.

    Iterating gives every name; :meth:`made` the names of the sources made so far.
    """

    def __init__(self, names: Iterable[str], make: Callable[[str], Any]):
        self._names = tuple(names)
        self._make = make
        self._made: dict[str, Any] = {}

    def __getitem__(self, name: str):
        source = self._made.get(name)
        if source is None:
            if name not in self._names:
                raise KeyError(name)
            source = self._made[name] = self._make(name)
        return source

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)

    def made(self) -> tuple[str, ...]:
        """The names of the sources made so far, in the order of all names."""
        return tuple(n for n in self._names if n in self._made)


@dataclasses.dataclass
class GridPlace:
    """Where one grid of a scene is drawn: its box on the plot it shares with others.

    A scene draws its grids (M, N, P and the blocks on one plot; Mds, Nds
    and the threads on another) as the book's figures place them (Fig. 5.10:
    N above P, M left of P), each in a box of its own on one Bokeh plot: its
    title, its index labels above and left, then its cells. A grid's glyphs
    draw in its own ranges (``x_range_name``/``y_range_name`` = its name),
    one unit per cell, row 0 at the top, as if it had a plot of its own.

    Attributes
    ----------
    name : str
        The view (``"M"``, ``"Mds"``, ``"threads"``, ``"blocks"`` ...).
    rows, cols : int
        Cells drawn down and across (``cols`` may include empty columns that
        make room for a long title).
    cell : float
        A cell's side, pixels.
    title : str
        The heading over the grid.
    labelled : (int, int)
        Rows and columns given index labels (a tile overhanging a matrix
        has cells without an index).
    width, height : int
        The box, pixels: title, labels and cells.
    left, top : int
        The cells' top-left corner inside the box, pixels.
    x, y : int
        The box's top-left corner on its plot, pixels (set when placed).
    labels : dict of str to list
        The title and index labels, in box pixels: the columns of the plot's
        text glyph (``x``, ``y``, ``text``, ``size``, ``color``, ``align``,
        ``baseline``, ``style``).
    ticks : dict of str to list
        A large grid's ticks between tiles, in box pixels (``x0``, ``y0``,
        ``x1``, ``y1``); empty up to 16 cells a side.
    index : dict
        ``{"above": {x: (text, px)}, "left": {y: (text, px)}}``: where each
        index label is in the grid's units, its text and type size (pixels).
    """

    name: str
    rows: int
    cols: int
    cell: float
    title: str
    labelled: tuple[int, int]
    width: int
    height: int
    left: int
    top: int
    x: int = 0
    y: int = 0
    labels: dict[str, list] = dataclasses.field(default_factory=dict, repr=False)
    ticks: dict[str, list] = dataclasses.field(default_factory=dict, repr=False)
    index: dict[str, dict[float, tuple[str, int]]] = dataclasses.field(
        default_factory=dict, repr=False
    )

    def to_cells(self, px: float, py: float) -> tuple[float, float]:
        """The grid's (x, y) units (one per cell) at pixels (``px``, ``py``) of its plot.

        Parameters
        ----------
        px, py : float
            Pixels from the plot's top-left corner.

        Returns
        -------
        (float, float)
            Columns and rows from the top-left corner of the grid's cells.
        """
        return (px - self.x - self.left) / self.cell, (py - self.y - self.top) / self.cell


class Scene:
    """Bokeh figures for one trace, built once; :meth:`update` draws a frame.

    Parameters
    ----------
    trace : Trace
        The recording whose blocks are replayed.
    views : iterable of str, optional
        Which of :data:`VIEWS` to show; all by default.
    presenter : bool
        Large type and cells as large as fit in :data:`PRESENTER_BOX` (use
        ``views=PRESENTER_VIEWS``: the caption, M, N, P, Mds, Nds and threads
        then fit a 1024 x 768 or 1280 x 720 projector without scrolling).
    theme : {'light', 'dark'} or Palette
        The colours (:func:`vizmm.render.palette.palette`); ``'dark'`` for dim rooms.
    caption_chars : int, optional
        Characters per caption line (narrower scenes, e.g. two side by side).
    fit : (width, height), optional
        Pixels the caption, matrices, Mds, Nds and threads must fit in (cells
        are sized to fill them), e.g. half a page for two scenes side by side.
    page : (width, height), optional
        Pixels the whole scene's first screen has (a browser window less the
        page's controls): the kernel listing, M, N, P, the blocks, Mds, Nds
        and the threads are sized to fit in it side by side (``_Sizes.page``);
        the legend, counters and table may lie below. Ignored with ``fit`` or
        ``presenter``.

    Attributes
    ----------
    sources : Mapping of str to ColumnDataSource
        One source per key of :func:`frame_columns` used by the plotted
        views, each made when first asked for: the sources of parts drawn
        later (a finding's outlines, the transactions view) are made with
        them. The text views (:data:`HTML_VIEWS`) have none.
    figures : dict of str to bokeh.models.Plot
        The plot each grid (``"M"``, ``"threads"``, ``"blocks"`` ...) is drawn
        on: bare plots, not ``bokeh.plotting.figure``. Grids share plots (M,
        N, P and the blocks one, ``vizmm-matrices``; Mds, Nds and the threads
        another, ``vizmm-tiles``), each grid in its own ranges: draw more on
        grid ``view`` with ``add_glyph(figures[view], ..., **ranges(view))``.
        Its cells' renderer is named ``vizmm-<view>``.
    grids : dict of str to GridPlace
        Each grid's box on its plot (pixels) and cell size.
    texts : dict of str to bokeh.models.Div
        The text views by name (those of :data:`HTML_VIEWS` shown): each a
        ``Div`` of :func:`vizmm.render.html_text.text_view_html`, named
        ``vizmm-<view>`` as the figures are.
    layout : bokeh.models.LayoutDOM
        Every view, arranged (matrices left, shared memory and threads in
        the middle, source and counters right, the table below).

    Raises
    ------
    ValueError
        For an unknown view name or theme.
    """

    def __init__(
        self,
        trace: Trace,
        views: Iterable[str] | None = None,
        presenter: bool = False,
        theme: str | pal.Palette = "light",
        caption_chars: int | None = None,
        fit: tuple[int, int] | None = None,
        page: tuple[int, int] | None = None,
    ):
        from bokeh.models import (
            AllIndices,
            ColumnDataSource,
            LinearScale,
            Selection,
            UnionRenderers,
        )

        views = VIEWS if views is None else tuple(view_names(views))
        check_known_views(views, VIEWS)
        self.trace = trace
        self.views = views
        self.presenter = bool(presenter)
        self.palette = pal.palette(theme)
        self.theme = self.palette.name
        self.sizes = _Sizes.of(trace, self.presenter, views)
        if fit is not None:
            self.sizes = _Sizes._fit(trace, set(views), int(fit[0]), int(fit[1]), self.presenter)
        elif page is not None and not self.presenter:
            legend = self._legend_box().width if "legend" in views else 0
            self.sizes = _Sizes.page(trace, set(views), int(page[0]), int(page[1]), legend)
        if caption_chars is not None:
            self.sizes = dataclasses.replace(self.sizes, caption_chars=int(caption_chars))
        names = [s for v in views if v not in HTML_VIEWS for s in SOURCE_NAMES[v]]
        # the text views' columns, worked out with the sources' and drawn as HTML
        self._html_sources = tuple(s for v in views if v in HTML_VIEWS for s in SOURCE_NAMES[v])
        self.texts: dict[str, Any] = {}
        # each text view's box and how its HTML is drawn (text_view_html's arguments)
        self._text_looks: dict[str, tuple[TextBox, dict[str, Any]]] = {}
        # one selection policy for all (it holds nothing), not one per source, and
        # one empty selection for every source no tap selects in (only the
        # threads' and the blocks' grids take taps: see _cells)
        self._policy = UnionRenderers()
        self._unselected = Selection()
        self.sources = _Sources(
            names, lambda name: ColumnDataSource(data=_empty(name), **self._source_props(name))
        )
        # What the plots can share, as they hold nothing of their own: one filter
        # for every renderer's view, one scale (BokehJS draws with a copy of it per
        # plot), the grids' ranges of equal extent (no tool moves them). Nothing is
        # shared between scenes.
        self._every = AllIndices()
        self._scale = LinearScale()
        self._shared_models: dict[tuple, object] = {}
        self._glyphs: dict[tuple, object] = {}  # glyphs of equal looks, drawn from many sources
        self.figures: dict[str, Any] = {}
        # The per-warp row of the transactions view sits under the thread grid
        # of the full page; presenter and fitted scenes keep their sizes.
        self._warps_fig = None
        self._warps_make: Callable[[], None] | None = None
        self._warps_parent: Any = None  # the column the per-warp row's place is in
        self._warps_title = ""
        self._warp_row = not self.presenter and fit is None
        #: Each grid's box on its plot (``figures[view]``), by view.
        self.grids: dict[str, GridPlace] = {}
        self._main: dict[str, Any] = {}  # each grid's cells (named vizmm-<view>)
        # What the sources show: the columns last worked out here and the frame
        # they are of; the frame shown last and the settings it was shown with.
        self._last: dict[str, dict[str, list]] = {}
        self._last_of: Frame | None = None
        self._last_frame: Frame | None = None
        self._last_signature: tuple = ()
        #: Leave the Fig. 5.8 table's future cells blank (questions: see frame_columns).
        self.conceal = False
        # Parts drawn only for some frames (a selected finding, the transactions
        # view), made when a frame first needs them: what they add to a figure
        # (``fig, make``), and the figures' renderers in drawing order.
        self._later: dict[str, list[tuple[Any, Callable[[], None]]]] = {
            "finding": [],
            "transactions": [],
        }
        self._rank: dict[str, int] = {}
        self.layout = self._build()
        for fig in self.figures.values():
            for r in fig.renderers:
                self._rank.setdefault(r.id, 0)
        for view, div in self.texts.items():
            div.name = f"vizmm-{view}"  # so pages and tests can find each view
        for view in self.grids:  # ... and each grid's cells
            self._main[view].name = f"vizmm-{view}"

    # --------------------------------------------------------------- update
    def update(self, frame: Frame) -> None:
        """Show ``frame``: assign the new columns of every source.

        Only columns whose values changed since the last update are sent
        (whole columns; a source whose length changes is replaced whole).
        A step that another scene of this process has already taken (the
        same trace, frames and settings: :mod:`vizmm.render.shared_steps`)
        assigns what that scene assigned, without working it out again.

        Parameters
        ----------
        frame : Frame
            A frame of a replay of the scene's trace.
        """
        if frame.finding is not None:
            self.draw_parts("finding")
        if frame.transactions is not None:
            self.draw_parts("transactions")
        made = self.sources.made()  # a part not drawn yet has no source to fill
        signature = (
            made,
            self.palette,
            self.sizes,  # the text views' HTML is drawn to size
            bool(self.conceal),
            tuple(sorted(self.texts)),  # the text views it has (the dashboard's: no caption)
        )
        # A step is shared from and to frames with keys (None before: nothing shown yet).
        last = self._last_frame
        shareable = bool(frame.key) and (last is None or bool(last.key))
        before = None if last is None else (self._last_signature, last.key)
        after = (signature, frame.key)
        shared = STEPS.get(self.trace, before, after) if shareable else None
        if shared is None:
            data = self._columns(frame, signature)
            old_data = self._last
            if self._last_frame is not None and self._last_of is not self._last_frame:
                # the last steps were shared: what is shown is this frame's columns
                old_data = self._columns(self._last_frame, self._last_signature)
            # (source, whole, columns), or (text view, None, its HTML)
            assignments: list[tuple[str, bool | None, Any]] = []
            for name in made:
                new, old = data[name], old_data.get(name)
                if old is None or _length(old) != _length(new) or old.keys() != new.keys():
                    assignments.append((name, True, {c: _for_bokeh(v) for c, v in new.items()}))
                else:
                    changed = {c: _for_bokeh(v) for c, v in new.items() if old[c] != v}
                    if changed:
                        assignments.append((name, False, changed))
            # a text view's HTML when its columns changed (the legend never does)
            changed_views = [
                view
                for view in self._text_looks
                if view != "legend" and any(old_data.get(n) != data[n] for n in SOURCE_NAMES[view])
            ]
            for view, text in self.text_html(data, changed_views).items():
                assignments.append((view, None, {"html": text}))
            if shareable:
                STEPS.put(self.trace, before, after, assignments)
            self._last, self._last_of = data, frame
            shared = tuple(assignments)
        for name, whole, columns in shared:
            if whole is None:  # a text view: its HTML
                if self.texts[name].text != columns["html"]:
                    self.texts[name].text = columns["html"]
                continue
            source = self.sources[name]
            if whole:
                source.data = dict(columns)
            else:
                source.data.update(columns)
        self._last_frame, self._last_signature = frame, signature
        if self._warps_fig is not None:  # no heading over an empty row
            title = self._warps_title if frame.transactions is not None else ""
            if self._warps_fig.title.text != title:
                self._warps_fig.title.text = title

    def _later_part(self, part: str, fig, make: Callable[[], None]) -> None:
        """Draw ``make()`` on ``fig`` once a frame needs ``part`` (see :meth:`draw_parts`)."""
        self._later[part].append((fig, make))

    def draw_parts(self, *parts: str) -> None:
        """Draw the glyphs of ``parts`` that only some frames need, once each.

        A new scene has no glyphs for a selected finding (``'finding'``: the
        outlines of ``vizmm check``'s marks) nor for the memory-transactions
        view (``'transactions'``: the banks of Mds and Nds, the warp's
        threads, the per-warp row's cells): most pages never show either,
        and together they are about 70 Bokeh models a new session would
        otherwise build and send. :meth:`update` draws them when a frame
        first carries a finding or the transactions view; call this for a
        scene whose frames are shown without :meth:`update` (an HTML export).
        Each figure keeps its drawing order: the cells, the banks, the
        finding's outlines, the warp's outline, then anything an add-on drew
        (the question marks).

        Parameters
        ----------
        *parts : {'finding', 'transactions'}
            The parts to draw; a part already drawn is left as it is.

        Raises
        ------
        ValueError
            For another part's name.
        """
        for part in parts:
            if part not in self._later:
                raise ValueError(f"no part {part!r} to draw: 'finding' or 'transactions'")
            self._draw_part(part)

    def _draw_part(self, part: str) -> None:
        if part == "transactions" and self._warps_make is not None:
            make, self._warps_make = self._warps_make, None
            make()  # the per-warp row's plot, in its spacer's place, its cells to draw
        todo = self._later[part]
        if not todo:
            return
        self._later[part] = []
        rank = {"transactions": 1, "finding": 2}[part]
        for fig, make in todo:
            before = {r.id for r in fig.renderers}
            make()
            for r in fig.renderers:
                if r.id not in before:
                    # the warp's outline over the thread grid's finding marks
                    self._rank[r.id] = 3 if r.name == "vizmm-warp-threads" else rank
            ordered = sorted(fig.renderers, key=lambda r: self._rank.get(r.id, 4))
            if ordered != list(fig.renderers):
                fig.renderers = ordered

    def _columns(self, frame: Frame, signature: tuple) -> dict[str, dict[str, list]]:
        sources, palette, sizes, conceal, _views = signature
        sources = (*sources, *self._html_sources)
        return frame_columns(frame, self.trace, sources, palette, sizes.caption_chars, conceal)

    def text_html(
        self, columns: Mapping[str, Mapping[str, Sequence]], views: Iterable[str] | None = None
    ) -> dict[str, str]:
        """The HTML of the scene's text views that change with the frame (pure).

        Parameters
        ----------
        columns : mapping
            :func:`frame_columns` of a frame, with at least the sources of
            the scene's text views (``caption``, ``source``, ``counters``
            and ``bars``, ``table``; the legend never changes).
        views : iterable of str, optional
            Only these views (default: every text view shown but the legend).

        Returns
        -------
        dict of str to str
            ``{view: HTML}`` for each text view shown but the legend, as its
            ``Div`` in :attr:`texts` takes it (the HTML export steps through
            these).
        """
        want = None if views is None else set(views)
        return {
            view: text_view_html(view, columns, box, **looks)
            for view, (box, looks) in self._text_looks.items()
            if view != "legend" and (want is None or view in want)
        }

    # ---------------------------------------------------------------- build
    def _build(self):
        """The scene's layout: the grids on two plots, the text views around them.

        M, N and P (and the blocks, in the free corner above M, left of N:
        Fig. 5.10's layout) share one plot, Mds, Nds and the threads another:
        each grid in a box of its own (:class:`GridPlace`). A plot of its own
        per grid would cost a new page a plot, a title and a toolbar each.
        """
        from bokeh.layouts import column, row

        v = set(self.views)
        parts_left, parts_mid, parts_right = [], [], []
        if v & {"M", "N", "P"}:
            mats = self._canvas("vizmm-matrices")
            boxes = self._matrices(v, mats)
            m, n = boxes.get("M"), boxes.get("N")
            placed = []
            # N above P, M left of P; the corner above M left of N empty
            x1 = m.width if m is not None else 0
            y1 = n.height if n is not None else 0
            if n is not None:
                placed.append((n, x1, 0))
            if m is not None:
                placed.append((m, 0, y1))
            if "P" in boxes:
                placed.append((boxes["P"], x1, y1))
            if "blocks" in v and m is not None and n is not None:
                b = self._blocks_box()
                if b.width <= m.width and b.height <= n.height:
                    placed.append((self._blocks(mats, b), 0, 0))
            self._place(mats, placed)
            parts_left.append(mats)
        tiles_views = [name for name in ("Mds", "Nds", "threads") if name in v]
        if tiles_views:
            tiles = self._canvas("vizmm-tiles")
            placed, x, y = [], 0, 0
            for name in ("Mds", "Nds"):
                if name in v:
                    g = self._shared(name, tiles)
                    placed.append((g, x, 0))
                    x, y = x + g.width + 10, max(y, g.height + 8)
            if "threads" in v:
                threads = self._threads(tiles)
                placed.append((threads, 0, y))
                y += threads.height + 8
            if "blocks" in v and "blocks" not in self.grids and self.sizes.blocks_below:
                # a page fitted to a window: under the threads when the corner is too small
                placed.append((self._blocks(tiles, self._blocks_box()), 0, y))
            self._place(tiles, placed)
            parts_mid.append(tiles)
            if "threads" in v and self._warp_row:  # the per-warp row's place, under it
                parts_mid.append(self._warps(threads))
        if "legend" in v:
            parts_mid.append(self._legend())
        if "source" in v:
            parts_right.append(self._source())
        if "counters" in v:
            parts_right.append(self._counters())
        if "blocks" in v and "blocks" not in self.grids:
            own = self._canvas("vizmm-blocks-plot")
            self._place(own, [(self._blocks(own, self._blocks_box()), 0, 0)])
            parts_right.append(own)
        # a part of one view is placed as it is, not in a column of its own
        main = [
            p[0] if len(p) == 1 else column(*p, spacing=8)
            for p in (parts_left, parts_mid, parts_right)
            if p
        ]
        if len(parts_mid) > 1:
            self._warps_parent = main[bool(parts_left)]
        rows = []
        if "caption" in v:
            rows.append(self._caption())
        if main:
            rows.append(row(*main, spacing=22) if len(main) > 1 else main[0])
        if "table" in v:
            rows.append(self._table_fig())
        return column(*rows, spacing=10)

    def _fig(self, width, height, x_range, y_range, title=None, tools="", **kw):
        """A plot of the scene's look (no toolbar, grid, axes or outline); ``kw`` overrides.

        A bare :class:`~bokeh.models.Plot` with exactly the parts drawn: what
        ``figure()`` adds (axes, grids, their tickers) costs a new session
        time to build and to send even where it is hidden.
        """
        from bokeh.models import Plot, Toolbar
        from bokeh.models.annotations import Title

        if title is not None:  # its look given at once, not property by property
            if title:
                title = Title(
                    text=title,
                    text_font=SANS,
                    text_font_size=f"{self.sizes.font + 1}px",
                    text_color=self.palette.TEXT,
                )
            else:
                title = Title(text=title)
        toolbar = kw.pop("toolbar", None)
        return Plot(
            **{
                "width": int(width),
                "height": int(height),
                "x_range": x_range,
                "y_range": y_range,
                "x_scale": self._scale,
                "y_scale": self._scale,
                "toolbar": Toolbar() if toolbar is None else toolbar,
                "toolbar_location": None,
                "title": title,
                "min_border": 4,
                "outline_line_color": None,
                "background_fill_color": self.palette.BACKGROUND,
                "border_fill_color": self.palette.BACKGROUND,
                **kw,
            }
        )

    def _source_props(self, name: str = "") -> dict[str, Any]:
        """A new source's selection policy and selection (its own for a tapped grid)."""
        props: dict[str, Any] = {"selection_policy": self._policy}
        if name not in TAPPED_SOURCES:
            props["selected"] = self._unselected
        return props

    def _one(self, kind, **props):
        """One model of ``kind`` (a class) with ``props`` per scene (ranges, tickers)."""
        key = (
            kind.__name__,
            *((k, tuple(v) if isinstance(v, list) else v) for k, v in props.items()),
        )
        model = self._shared_models.get(key)
        if model is None:
            model = self._shared_models[key] = kind(**props)
        return model

    def _adder(self, f, selectable: bool = False, grid: str | None = None):
        """``add(kind, source, **props)``: a renderer on ``f`` (:func:`add_glyph`).

        ``selectable`` for the grids a tap selects in (threads, blocks);
        ``grid`` draws in that grid's ranges (:meth:`ranges`).
        """
        ranges = {} if grid is None else self.ranges(grid)
        return partial(
            add_glyph, f, every=self._every, selectable=selectable, shared=self._glyphs, **ranges
        )

    def ranges(self, view: str) -> dict[str, str]:
        """The renderer properties that draw on grid ``view`` in its units (one per cell).

        Parameters
        ----------
        view : str
            A grid of the scene (a key of :attr:`grids`).

        Returns
        -------
        dict of str to str
            ``x_range_name`` and ``y_range_name``, for :func:`add_glyph` on
            ``figures[view]``.
        """
        return {"x_range_name": view, "y_range_name": view}

    def to_cells(self, view: str, px: float, py: float) -> tuple[float, float]:
        """Grid ``view``'s (x, y) units at pixels (``px``, ``py``) of its plot (a tap's ``x, y``).

        Parameters
        ----------
        view : str
            A grid of the scene (a key of :attr:`grids`).
        px, py : float
            Pixels from the plot's top-left corner (its default ranges).

        Returns
        -------
        (float, float)
            Columns and rows from the grid's top-left cell corner: cell
            (r, c) covers ``c <= x < c + 1``, ``r <= y < r + 1``.
        """
        return self.grids[view].to_cells(px, py)

    def _canvas(self, name: str):
        """An empty plot for several grids, sized and given their ranges by :meth:`_place`."""
        from bokeh.models import Range1d

        f = self._fig(1, 1, Range1d(start=0, end=1), Range1d(start=1, end=0), min_border=0)
        f.name = name
        return f

    def _grid_box(self, name, rows, cols, cell, title, labelled=None) -> GridPlace:
        """The box of a rows x cols grid of square cells, wide enough for its title.

        ``labelled`` = (rows, cols) with index labels (default: all); cells
        beyond it (a tile overhanging a matrix) get no index. The box has
        room for the title and the labels above the cells and the labels
        left of them (:meth:`_label`), 4 pixels around.
        """
        s = self.sizes
        extra = _title_columns(cols, cell, title, s.font)
        g = GridPlace(
            name=name,
            rows=rows,
            cols=cols + extra,
            cell=cell,
            title=title,
            labelled=tuple(labelled or (rows, cols)),
            width=int((cols + extra) * cell + 30),
            height=int(rows * cell + 30 + 2 * s.font),
            left=18,
            top=int(20 + 2 * s.font),
        )
        self._label(g)
        return g

    def _grid_fig(self, canvas, g: GridPlace) -> GridPlace:
        """Grid ``g`` (:meth:`_grid_box`) drawn on ``canvas``: ``figures[g.name]`` is the canvas."""
        self.grids[g.name] = g
        self.figures[g.name] = canvas
        return g

    def _label(self, g: GridPlace) -> None:
        """Give grid ``g`` its title, index labels and (a large one) ticks.

        Up to 16 cells every index is labelled: the labels' type shrinks to the
        cell (down to :data:`MIN_INDEX_PX`) rather than leaving indices out;
        only cells too small for that type label every second (or further)
        one. Past 16 the lines between tiles are labelled (0, T, 2T ...) with a
        tick each, and the box grows to hold the last label's half past the
        grid's edge.
        """
        s, th = self.sizes, self.palette
        T = self.trace.tile_width
        cell = g.cell
        labels: dict[str, list] = {
            k: [] for k in ("x", "y", "text", "size", "color", "align", "baseline", "style")
        }
        ticks: dict[str, list] = {"x0": [], "y0": [], "x1": [], "y1": []}
        index: dict[str, dict[float, tuple[str, int]]] = {"above": {}, "left": {}}

        def label(x, y, text, size, color, align, baseline, style="normal"):
            for k, v in zip(labels, (x, y, text, size, color, align, baseline, style), strict=True):
                labels[k].append(v)

        label(g.left, 4, g.title, f"{s.font + 1}px", th.TEXT, "left", "top", "bold")
        rows, cols = g.labelled
        for side, n in (("above", cols), ("left", rows)):
            px = max(9, s.font - 3)
            if n <= 16:
                # a label is about 0.62 em a digit wide, 1.15 em high (left side)
                digits = len(str(max(0, n - 1)))
                room = (cell - 2) / (0.62 * digits) if side == "above" else cell / 1.15
                px = int(max(MIN_INDEX_PX, min(px, room)))
                need = 0.62 * digits * px + 2 if side == "above" else 1.15 * px
                every = max(1, math.ceil(need / max(cell, 1)))
                at = [(i + 0.5, str(i)) for i in range(0, n, every)]
                out = 3
            else:
                at = [(t, str(t)) for t in range(0, n + 1, T)]
                out = 9  # past a 6-pixel tick
                # the last label (n) sits on the grid's far edge: room for its half
                half = math.ceil(0.31 * len(str(n)) * px if side == "above" else 0.6 * px) + 2
                if side == "above":
                    g.width = max(g.width, int(g.left + g.cols * cell + half))
                else:
                    g.height = max(g.height, int(g.top + g.rows * cell + half))
            for t, text in at:
                index[side][t] = (text, px)
                if side == "above":
                    x, y = g.left + t * cell, float(g.top)
                    label(x, y - out, text, f"{px}px", th.MUTED, "center", "bottom")
                    tick = (x, y, x, y - 6)
                else:
                    x, y = float(g.left), g.top + t * cell
                    label(x - out + 1, y, text, f"{px}px", th.MUTED, "right", "middle")
                    tick = (x, y, x - 6, y)
                if n > 16:
                    for k, v in zip(ticks, tick, strict=True):
                        ticks[k].append(v)
        g.labels, g.ticks, g.index = labels, ticks, index

    def _place(self, canvas, boxes: Sequence[tuple[GridPlace, int, int]]) -> None:
        """Put grids at (x, y) pixels of ``canvas``: its size, their ranges, titles and labels."""
        from bokeh.models import ColumnDataSource, Range1d

        width = max(x + g.width for g, x, y in boxes)
        height = max(y + g.height for g, x, y in boxes)
        canvas.width, canvas.height = int(width), int(height)
        canvas.x_range = Range1d(start=0, end=width)
        canvas.y_range = Range1d(start=height, end=0)
        xr, yr = {}, {}
        labels: dict[str, list] = {}
        ticks: dict[str, list] = {}
        for g, x, y in boxes:
            g.x, g.y = int(x), int(y)
            # the plot's pixels in the grid's units: the cells' corner at (0, 0)
            x0, y0 = -(g.x + g.left) / g.cell, -(g.y + g.top) / g.cell
            # (grids in one column or row of equal cells share a range: N and P, M and P)
            xr[g.name] = self._one(Range1d, start=x0, end=x0 + width / g.cell)
            yr[g.name] = self._one(Range1d, start=y0 + height / g.cell, end=y0)
            # the grid's labels and ticks, from its box's pixels to the plot's
            for cols, mine in ((labels, g.labels), (ticks, g.ticks)):
                for k, v in mine.items():
                    shift = g.x if k in ("x", "x0", "x1") else g.y if k in ("y", "y0", "y1") else 0
                    cols.setdefault(k, []).extend([u + shift for u in v] if shift else v)
        canvas.extra_x_ranges, canvas.extra_y_ranges = xr, yr
        add = self._adder(canvas)
        if ticks.get("x0"):
            add(
                "Segment",
                ColumnDataSource(data=ticks, **self._source_props()),
                x0="x0",
                y0="y0",
                x1="x1",
                y1="y1",
                line_color=self.palette.MUTED,
                line_width=1,
            )
        add(
            "Text",
            ColumnDataSource(data=labels, **self._source_props()),
            x="x",
            y="y",
            text="text",
            text_color="color",
            text_align="align",
            text_baseline="baseline",
            text_font=value(SANS),
            text_font_size="size",
            text_font_style="style",
        )

    def index_labels(self, view: str) -> dict[str, dict[float, tuple[str, int]]]:
        """The index labels of grid ``view``: where each is, its text and type size.

        Parameters
        ----------
        view : str
            A grid of the scene (a key of :attr:`grids`).

        Returns
        -------
        dict
            ``{"above": {x: (text, px)}, "left": {y: (text, px)}}``: ``x``
            (``y``) in the grid's units, ``i + 0.5`` for the index ``i`` of
            a cell, ``t`` for a line between tiles; ``px`` the type's size in
            pixels.
        """
        return {side: dict(at) for side, at in self.grids[view].index.items()}

    def _matrices(self, v, f) -> dict[str, GridPlace]:
        """M, N and P on plot ``f``: their boxes (placed by :meth:`_build`)."""
        from bokeh.models import CustomJS, CustomJSHover
        from bokeh.transform import linear_cmap

        tr, s, th = self.trace, self.sizes, self.palette
        j, k, l = tr.shape
        T = tr.tile_width
        jp, kp, lp = tr.launch.padded  # tiles may overhang the matrices
        ext = {"M": (jp, kp), "N": (kp, lp), "P": (jp, lp)}
        shape = {"M": (j, k), "N": (k, l), "P": (j, l)}
        fills, texts, words = matrix_palette(T * T, th)
        fill_map = linear_cmap("code", fills, low=-0.5, high=len(fills) - 0.5)
        text_map = linear_cmap("code", texts, low=-0.5, high=len(texts) - 0.5)
        word = CustomJSHover(
            args={"words": words, "first": THREAD_CODE, "T": T},
            code="""
            const c = Math.round(value);
            if (c >= first) {
              const t = c - first;
              return "being loaded by thread (" + Math.floor(t / T) + "," + (t % T) + ")";
            }
            return words[c];
        """,
        )
        # the rows of an outline source with a tooltip: its ghost cells, the only
        # rows with a name (one filter for the three hover tools)
        ghost_rows = CustomJS(code="return cb_data.value !== ''")
        figs = {}
        for name in ("M", "N", "P"):
            if name not in v:
                continue
            rows, cols = ext[name]
            # ghost cells (hatched, with their text and tooltip) only where a tile
            # overhangs the matrix: a matrix of whole tiles has no glyph nor hover for them
            overhang = (rows, cols) != tuple(shape[name])
            box = self._grid_fig(
                f,
                self._grid_box(
                    name,
                    rows,
                    cols,
                    s.cell,
                    f"{name} ({shape[name][0]} × {shape[name][1]})",
                    labelled=shape[name],
                ),
            )
            src = self.sources[name]
            add = self._adder(f, grid=name)
            # outlines of small cells cost more to paint than they show
            r = add(
                "Rect",
                src,
                x="x",
                y="y",
                width=1,
                height=1,
                fill_color=fill_map,
                line_color=th.GRID_LINE if s.cell >= 10 else None,
                line_width=1,
            )
            # over the cells, one glyph, its rows painted in this order: the matrix's
            # edge (so ghost cells read as outside it), the ghost cells, the current
            # tile, the followed thread's elements, the warp's segments and sectors
            over = self.sources[f"{name}_outline"]
            g = add(
                "Rect",
                over,
                x="x",
                y="y",
                width="w",
                height="h",
                fill_color="fill",
                line_color="line_color",
                line_width="line_width",
                line_dash="line_dash",
                hatch_pattern="hatch",
                hatch_color=th.MUTED,
                hatch_alpha=0.35,
                hatch_scale=8,
            )
            pv = None
            if name == "P":  # Pvalue so far of the block's elements (hover; text if room)
                pv = add(
                    "Rect",
                    self.sources["P_pvalue"],
                    x="x",
                    y="y",
                    width=1,
                    height=1,
                    fill_alpha=0,
                    line_alpha=0,
                )
            if s.matrix_text:
                px = int(s.cell * 0.32)
                if self.presenter:  # a projector's values as large as their cells hold
                    chars = _value_chars(tr, name)
                    px = int(min((s.cell - 4) / (DIGIT_EM * chars), s.cell * 0.6))
                fs = f"{max(9, min(s.font + 2, px))}px"
                _centred_text(add, self.sources["P_pvalue"] if name == "P" else src, fs, text_map)
                if overhang:
                    _centred_text(add, over, fs)
            self._main[name] = r
            _hover(f, r, "P" if name == "P" else "matrix", formatters={"@code": word})
            if name == "P":
                _hover(f, pv, "P_pvalue")
            if overhang:
                _hover(f, g, "ghost", filters={"@name": ghost_rows})
            self._finding_glyph(f, name)
            figs[name] = box
        return figs

    def _finding_glyph(self, f, view: str) -> None:
        """Outlines of the selected finding over ``view``'s cells (``{view}_finding``).

        Drawn once a frame first carries a finding (:meth:`draw_parts`).
        """
        self._later_part("finding", f, partial(self._draw_finding, f, view))

    def _draw_finding(self, f, view: str) -> None:
        r = self._adder(f, grid=view)(
            "Rect",
            self.sources[f"{view}_finding"],
            x="x",
            y="y",
            width=0.9,
            height=0.9,
            fill_alpha=0,
            line_color="line_color",
            line_dash="line_dash",
            line_width=4 if view in ("Mds", "Nds", "threads") else 3,
            name=f"vizmm-{view}-finding",
        )
        _hover(f, r, "finding")

    def _shared(self, name, f) -> GridPlace:
        T, s = self.trace.tile_width, self.sizes
        g = self._grid_fig(f, self._grid_box(name, T, T, s.scell, f"{name} (shared)"))
        src = self.sources[name]
        add = self._adder(f, grid=name)
        r = _cells(add, src, 1)
        if s.shared_text:
            size = f"{max(10, min(s.font + 3, int(s.scell * 0.22)))}px"
            _centred_text(add, src, size, text_line_height=1.15)
        self._main[name] = r
        _hover(f, r, "slots", name)

        def banks() -> None:
            # Transactions view, at a step of the k loop: the bank of each slot's
            # word (a band across the slot's foot), the current warp's conflicts.
            src = self.sources[f"{name}_bank"]
            bank = _cells(add, src, 0.92, 0.22)
            if s.scell >= 24:
                _centred_text(add, src, f"{max(8, min(s.font - 2, int(s.scell * 0.17)))}px")
            _hover(f, bank, "bank")

        self._later_part("transactions", f, banks)
        self._finding_glyph(f, name)
        return g

    def _threads(self, f) -> GridPlace:
        from bokeh.models import TapTool

        T, s = self.trace.tile_width, self.sizes
        g = self._grid_fig(f, self._grid_box("threads", T, T, s.scell, "threads (ty, tx)"))
        src = self.sources["threads"]
        add = self._adder(f, selectable=True, grid="threads")
        r = _cells(add, src, 0.94, tappable=True)
        if s.scell >= 20:
            add(
                "Rect",
                src,
                x="sx",
                y="sy",
                width=0.2,
                height=0.2,
                fill_color="ident",
                line_color=self.palette.TEXT,
                line_width=0.5,
                nonselection_fill_alpha=1.0,
            )
        if s.shared_text:
            size = f"{max(10, min(s.font + 2, int(s.scell * 0.2)))}px"
            _centred_text(add, src, size, text_line_height=1.15)
        # Barrier lab: a right-pointing triangle on a thread that ran ahead of another
        # (only a recording of the shared reads has such threads: the replay's notes).
        if self.trace.shared_reads.size:
            add(
                "Scatter",
                src,
                x="ax",
                y="ay",
                marker="triangle",
                angle=-math.pi / 2,
                size=max(9, int(s.scell * 0.22)),
                fill_color=self.palette.AHEAD,
                line_color=self.palette.TEXT,
                line_width=1.0,
                fill_alpha="ahead_alpha",
                line_alpha="ahead_alpha",
                nonselection_fill_alpha="ahead_alpha",
                nonselection_line_alpha="ahead_alpha",
                name="vizmm-ahead",
            )
        self._main["threads"] = r
        _hover(f, r, "threads")
        self._finding_glyph(f, "threads")
        f.add_tools(TapTool(renderers=[r]))

        def warp() -> None:  # the current warp's threads, outlined (transactions view)
            add(
                "Rect",
                self.sources["warp_threads"],
                x="x",
                y="y",
                width=1.0,
                height=1.0,
                fill_alpha=0,
                line_color=self.palette.FOCUS,
                line_width=2,
                line_dash="dashed",
                name="vizmm-warp-threads",
            )

        self._later_part("transactions", f, warp)
        return g

    def _warps(self, threads: GridPlace):
        """The per-warp transactions row under the thread grid (shown with the view on).

        Until a frame first carries the transactions view its place is kept by
        a spacer of its size (most pages never show it); the row's plot then
        takes the spacer's place (:meth:`_draw_part`) in the column that holds
        it (:attr:`_warps_parent`, set by :meth:`_build`).
        """
        from bokeh.models import Range1d, Spacer

        s = self.sizes
        nw = self.trace.launch.warps_per_block
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
            f = self._fig(
                threads.width,
                height,
                Range1d(start=0, end=nw),
                Range1d(start=1, end=0),
                title=title,
            )
            f.title.text = ""  # (written by update while the row has cells)
            add = self._adder(f)

            def cells() -> None:
                src = self.sources["warps"]
                r = _cells(add, src, 0.96, 0.9)
                _centred_text(add, src, f"{max(8, min(s.font, int(cell * 0.4)))}px")
                _hover(f, r, "warps")

            self._later_part("transactions", f, cells)
            f.name = "vizmm-warps"
            self._warps_fig = f
            parent = self._warps_parent
            parent.children = [f if c is space else c for c in parent.children]

        self._warps_make = make
        self._warps_title = title
        return space

    def _text_view(self, view: str, box: TextBox, columns=None, **looks):
        """The ``Div`` of text view ``view``, of ``box``'s size, showing ``columns``.

        Without ``columns`` it starts empty (:meth:`text_html` draws a frame's).
        """
        from bokeh.models.widgets import Div

        looks.setdefault("background", self.palette.BACKGROUND)
        self._text_looks[view] = (box, looks)
        if columns is None:
            columns = {name: _empty(name) for name in SOURCE_NAMES[view]}
        div = Div(
            text=text_view_html(view, columns, box, **looks),
            width=box.width,
            height=box.height,
            margin=0,
            disable_math=True,
            styles={"background": self.palette.BACKGROUND},
        )
        self.texts[view] = div
        return div

    def _text_box(self, width_chars: float, lines: float, pad: float = 0.5) -> TextBox:
        """The box of ``lines`` monospace lines of ``width_chars`` characters."""
        s = self.sizes
        return TextBox(
            width=int(width_chars * s.char + 12),
            height=int(lines * s.line + 8),
            x0=-pad,
            x1=width_chars + pad,
            lines=lines,
        )

    def _legend_entries(self) -> list[tuple[str, str | None]]:
        """The legend's lines: (label, colour), None for a heading."""
        entries: list[tuple[str, str | None]] = [("Threads", None)]
        for st, label in self.palette.THREAD_STATE_LABELS.items():
            if st in (ThreadState.READY, ThreadState.DONE):
                continue
            entries.append((label, self.palette.THREAD_STATE_COLORS[st]))
        entries.append(("Mds / Nds slots", None))
        for slot in (
            SlotState.LOADED,
            SlotState.STALE,
            SlotState.ZERO,
            SlotState.WRONG,
            SlotState.SKIPPED,
            SlotState.EMPTY,
        ):
            entries.append((self.palette.SLOT_LABELS[slot], self.palette.SLOT_COLORS[slot]))
        entries.append(("M, N, P elements", None))
        entries.append(("being loaded: colour of its thread", self.palette.thread_colors(4)[1]))
        for cell in (CellState.TILE, CellState.READING, CellState.DONE, CellState.COMPUTING):
            label = self.palette.CELL_LABELS[cell]
            if cell == CellState.DONE:
                label = "loaded in an earlier phase"
            entries.append((label, self.palette.CELL_COLORS[cell]))
        entries += [
            ("P element written", self.palette.P_WRITTEN_COLOR),
            ("current tile (outline)", "outline"),
            ("followed thread (outline)", "focus"),
        ]
        if self.trace.shared_reads.size:  # a barrier-lab recording: its marks
            entries += [
                ("Barrier lab", None),
                ("read a wrong element (✗, outline)", "wrong"),
                ("ran ahead of another thread (▶)", self.palette.AHEAD),
            ]
        return entries

    def _legend_box(self) -> TextBox:
        """The legend's box: one column of its lines."""
        entries = self._legend_entries()
        width_chars = max(len(label) for label, _ in entries) + 5
        fs = max(10, self.sizes.font - 2)
        return TextBox(
            width=int(width_chars * 0.55 * fs + 10),
            height=int(len(entries) * fs * 1.6 + 8),
            x0=0,
            x1=width_chars,
            lines=len(entries),
            border=2,
        )

    def _legend(self):
        s = self.sizes
        entries = self._legend_entries()
        swatches: dict[str, list] = {"x": [], "y": [], "fill": [], "line": []}
        labels: dict[str, list] = {"x": [], "y": [], "text": [], "style": []}
        for r, (label, color) in enumerate(entries):  # one column: as narrow as Mds + Nds
            if color is None:
                labels["x"].append(0)
                labels["style"].append("bold")
            else:
                fill, line = color, self.palette.MUTED
                if color == "outline":
                    fill, line = self.palette.BACKGROUND, self.palette.TILE_OUTLINE
                elif color == "focus":
                    fill, line = self.palette.BACKGROUND, self.palette.FOCUS
                elif color == "wrong":
                    fill, line = self.palette.BACKGROUND, self.palette.WRONG
                swatches["x"].append(1.2)
                swatches["y"].append(r + 0.5)
                swatches["fill"].append(fill)
                swatches["line"].append(line)
                labels["x"].append(2.6)
                labels["style"].append("normal")
            labels["y"].append(r + 0.5)
            labels["text"].append(label)
        fs = max(10, s.font - 2)
        return self._text_view(
            "legend",
            self._legend_box(),
            {"swatches": swatches, "labels": labels},
            font=SANS,
            size_px=fs,
            text_color=self.palette.TEXT,
        )

    def _source(self):
        lines = _source_lines(self.trace.meta.get("source", "") or "")
        width = max(len(x) for x in lines) + 3
        box = dataclasses.replace(self._text_box(width + 2, len(lines)), x0=-2.2)
        return self._text_view(
            "source",
            box,
            font=MONO,
            size_px=self.sizes.mono,
            text_color=self.palette.TEXT,
            marker_color=self.palette.TILE_OUTLINE,
        )

    def _counters(self):
        s = self.sizes
        pvalue_lines = max(1, ceil_div(self.trace.n_phases, PHASES_PER_LINE))
        lines = 7 + pvalue_lines + 2 + 3  # + transactions
        box = self._text_box(COUNTER_CHARS, lines)
        return self._text_view(
            "counters", box, font=MONO, size_px=s.mono, small_px=max(9, s.mono - 1)
        )

    def _blocks_box(self) -> GridPlace:
        """The block grid's box (:meth:`_grid_box`), its cells at most 44 pixels."""
        gy, gx = self.trace.grid
        cell = int(max(10, min(44 * (1.3 if self.presenter else 1), 200 // max(gy, gx))))
        if self.sizes.blocks_cell:
            cell = self.sizes.blocks_cell
        return self._grid_box("blocks", gy, gx, cell, "blocks (by, bx)")

    def _blocks(self, f, box: GridPlace) -> GridPlace:
        """The block grid ``box`` drawn on ``f``."""
        from bokeh.models import TapTool

        s = self.sizes
        g = self._grid_fig(f, box)
        cell = g.cell
        src = self.sources["blocks"]
        add = self._adder(f, selectable=True, grid="blocks")
        r = _cells(add, src, 0.92, tappable=True)
        if cell >= 34:
            _centred_text(add, src, f"{max(9, min(s.font, cell // 3))}px")
        self._main["blocks"] = r
        _hover(f, r, "blocks")
        f.add_tools(TapTool(renderers=[r]))
        return g

    def _caption(self):
        s = self.sizes
        box = self._text_box(s.caption_chars, 4)
        # proportional font: about 0.6 em per character, bold included
        width = int(s.caption_chars * 0.6 * (s.font + 1) + 20)
        box = dataclasses.replace(box, width=width, x1=(width - 12) / (0.6 * (s.font + 1)))
        return self._text_view("caption", box, font=SANS, size_px=s.font + 1)

    def _table_fig(self):
        width, lines = table_extent(self.trace)
        box = self._text_box(width, lines + 1, pad=0.2)
        return self._text_view("table", box, font=MONO, size_px=self.sizes.mono)


def wrap_title(text: str, width: float, font_px: float) -> str:
    """``text`` broken into lines (joined by newlines) between words, each fitting ``width``.

    Widths are estimated, not measured: a bold sans-serif character is taken
    as 0.62 of the font size wide (Bokeh's titles draw in bold).

    Parameters
    ----------
    text : str
        Words separated by spaces.
    width : float
        Room for a line, pixels.
    font_px : float
        The title's font size, pixels.

    Returns
    -------
    str
        The same words in the same order, greedily filled into lines; a word
        longer than a line stays whole, on a line of its own.
    """
    per_line = max(1, int(width / (0.62 * font_px)))
    return "\n".join(textwrap.wrap(text, per_line, break_long_words=False, break_on_hyphens=False))


def _cells(add, source, width: float, height: float | None = None, tappable: bool = False):
    """One rectangle per row of ``source``, coloured by its ``fill`` and ``line_*`` columns.

    ``add`` is a plot's :meth:`Scene._adder`. ``tappable`` keeps the colours
    of cells a tap leaves unselected; a selected cell is drawn by BokehJS's
    ``"auto"`` selection copy of the glyph, which changes nothing of it (so
    no selection glyph of its own is made, kept and sent).
    """
    keep = {"nonselection_fill_alpha": 1.0, "nonselection_line_alpha": 1.0} if tappable else {}
    return add(
        "Rect",
        source,
        x="x",
        y="y",
        width=width,
        height=width if height is None else height,
        fill_color="fill",
        line_color="line_color",
        line_width="line_width",
        **keep,
    )


def _centred_text(add, source, size: str, text_color="text_color", **style):
    """The ``text`` column centred in each cell of a grid (matrices, slots, threads, blocks)."""
    return add(
        "Text",
        source,
        x="x",
        y="y",
        text="text",
        text_color=text_color,
        text_align="center",
        text_baseline="middle",
        text_font=value(SANS),
        text_font_size=size,
        **style,
    )


def _empty(name: str) -> dict[str, list]:
    """The empty columns of the source ``name`` (a scene starts with them)."""
    return _columns_of(_KIND.get(name, name))


_INT32 = np.iinfo(np.int32)


def _for_bokeh(column: list) -> list | np.ndarray:
    """A column as Bokeh handles it fastest; the page receives the same values.

    Bokeh encodes a list element by element in Python, and walks it element
    by element whenever it looks for models in a document (several times
    while a page is built). An array is one value to it: float64 and int32
    arrays are sent as binary buffers, an array of strings as its list. So a
    column of only ``float`` (or ``int`` and ``float``) becomes float64, one of
    only ``int`` int32 when it fits, one of only ``str`` a NumPy string
    array; booleans, ``None`` and mixed columns stay lists.
    """
    if not column:
        return column
    first = type(column[0])
    if first is str:
        if all(type(x) is str for x in column):
            return np.array(column, dtype=str)
        return column
    if first not in (int, float):
        return column
    array = np.asarray(column)
    if array.dtype == np.float64 and all(type(x) in (int, float) for x in column):
        return array
    if array.dtype == np.int64 and all(type(x) is int for x in column):
        if _INT32.min <= array.min() and array.max() <= _INT32.max:
            return array.astype(np.int32)
    return column


def _length(cols: dict[str, list]) -> int:
    for v in cols.values():
        return len(v)
    return 0
