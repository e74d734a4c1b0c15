"""What the views' columns are made of: shared columns, labels, sizes of type, a frame's context.

The views (:mod:`vizmm.render.views`) work out their sources' columns from a
:class:`FrameContext` with these helpers; the Bokeh scene and the HTML
export draw them. Pure: no Bokeh, no Pillow.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from functools import lru_cache

import numpy as np

from ..replay import CellState, Frame, SlotState, ThreadState
from ..trace import Trace
from ..trace.notation import subscript as _sub  # M_{row,col}, written once
from . import palette as pal
from .text import format_value, render_text

__all__ = [
    "FrameContext",
    "FINDING_KIND",
    "P_WRITTEN",
    "THREAD_CODE",
    "matrix_palette",
    "slot_label",
    "thread_label",
]


@dataclasses.dataclass(frozen=True)
class FrameContext:
    """What a view's columns are worked out from: one frame and how it is drawn.

    Parameters
    ----------
    frame : Frame
        A frame of a :class:`~vizmm.replay.Replay` of ``trace``.
    trace : Trace
        The trace the frame replays.
    th : Palette
        The colours (:func:`vizmm.render.palette.palette`).
    caption_chars : int
        Characters per line of the caption.
    conceal : bool
        Leave the Fig. 5.8 table's future cells empty (quiz mode).
    """

    frame: Frame
    trace: Trace
    th: pal.Palette
    caption_chars: int
    conceal: bool


# Columns that several kinds share (each view names its kinds: vizmm.render.views).
_PAINT = ("fill", "line_color", "line_width", "text", "text_color")  # a coloured cell with text
_TEXT_LINES = ("x", "y", "text", "font_style", "color")  # one row per line of a text view
_BOX = ("x", "y", "w", "h")  # outlines of w x h boxes
#: Width of a digit in the scene's sans-serif type (em): presenter mode sizes
#: a matrix's values so that its widest value fills its cell, no more.
DIGIT_EM = 0.64  # DejaVu Sans: 0.636
CAPTION_CHARS = 120  # title and caption lines are wrapped at this many characters
TABLE_ROWS = 9  # the table shows every thread when T*T <= this, else a window
TABLE_PHASES = 3  # ... and at most this many phases around the current one
COUNTER_CHARS = 46
PHASES_PER_LINE = 3  # the counters list Pvalue after each phase, this many to a line
MONO = "'DejaVu Sans Mono', 'Menlo', 'Consolas', monospace"
SANS = f"'{pal.FONT_FAMILY}', 'Helvetica Neue', Arial, sans-serif"
_NAN_TEXT = "?"


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


def _columns_of(kind: str, only: Sequence[str] | None = None) -> dict[str, list]:
    """Empty columns of a source kind (a key of :func:`views.column_kinds`), or of ``only``."""
    from . import views

    return {c: [] for c in views.column_kinds()[kind] if only is None or c in only}


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


def _cells_at(mask: np.ndarray) -> dict[str, list]:
    """Centres of the cells where ``mask`` is true (outlined cells)."""
    rr, cc = np.nonzero(mask)
    return {"x": (cc + 0.5).tolist(), "y": (rr + 0.5).tolist()}


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


#: A finding of vizmm.check: outlines of what it marks (vizmm.replay.findings.Mark),
#: the kind of every ``<view>_finding`` source, and what hovering over one says.
FINDING_KIND = {"finding": ("x", "y", "line_color", "line_dash", "role", "note")}
FINDING_HOVER = {"finding": (("finding", "@note"),)}
