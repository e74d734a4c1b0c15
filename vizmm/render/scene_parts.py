"""The parts a :class:`~vizmm.render.bokeh_scene.Scene` is built of: grid boxes, sources, cells.

``GridPlace`` (a grid's box on the plot it shares), the scene's lazily made
sources, the cells and centred text every grid draws, hover tooltips by kind
(:func:`vizmm.render.views.tooltips`), and the columns as Bokeh takes them.
"""

from __future__ import annotations

import dataclasses
import textwrap
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

import numpy as np
from bokeh.core.properties import value

from . import views
from .bokeh_tools import add_hover
from .columns import SANS, _columns_of

__all__ = ["GridPlace", "wrap_title"]


def _hover(f, renderer, kind: str, name: str = "", **kwargs) -> None:
    """The tooltips of a source kind (:func:`views.tooltips`) for ``renderer`` of ``f``."""
    tips = [(label, field.replace("{name}", name)) for label, field in views.tooltips()[kind]]
    add_hover(f, renderer, tips, **kwargs)


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


def _outlines(add, source, size: float, **line):
    """An unfilled square of ``size`` cells at each row's ``x``, ``y`` of ``source``.

    ``add`` is a plot's :meth:`Scene._adder`; ``line``, how its outline is
    drawn (``line_*`` values or columns; ``line_alpha=0``: not at all, a
    target for hovering) and the renderer's ``name``.
    """
    return add("Rect", source, x="x", y="y", width=size, height=size, fill_alpha=0, **line)


def _text(add, source, size: str, text_color: str, align: str, baseline: str, **style):
    """The ``text`` column of ``source`` at its ``x``, ``y``, in the scene's sans-serif type.

    ``size``, ``text_color``, ``align`` and ``baseline`` are values or column
    names (``"10px"``, ``"size"``); ``style``, other ``text_*`` properties.
    """
    return add(
        "Text",
        source,
        x="x",
        y="y",
        text="text",
        text_color=text_color,
        text_align=align,
        text_baseline=baseline,
        text_font=value(SANS),
        text_font_size=size,
        **style,
    )


def _centred_text(add, source, size: str, text_color="text_color", **style):
    """The ``text`` column centred in each cell of a grid (matrices, slots, threads, blocks)."""
    return _text(add, source, size, text_color, "center", "middle", **style)


def _empty(name: str) -> dict[str, list]:
    """The empty columns of the source ``name`` (a scene starts with them)."""
    return _columns_of(views.source_kind(name))


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
