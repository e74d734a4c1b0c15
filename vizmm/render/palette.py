"""One palette for every renderer: the dashboard, the HTML export and the GIF/MP4 frames.

Colours are ``#rrggbb`` strings (Bokeh and Pillow both take them). Threads are
coloured by their index ``t = ty * TILE_WIDTH + tx``; states by the codes of
:mod:`vizmm.replay`.

Colours that survive colour-blindness
-------------------------------------
Every pair of states a student must tell apart in one view (thread states,
Mds / Nds slot states, M / N / P cell states, the large view's block states,
the outlines) stays apart under simulated deuteranopia, protanopia and
tritanopia (Machado et al. 2009 at full severity, as colorspacious simulates
them): their CAM02-UCS distance is at least that of the closest pair of the
Okabe-Ito palette (Okabe & Ito 2002, the usual colour-blind-safe set) under
the same simulation, about 11. The colours come from Okabe-Ito and Paul
Tol's sets with lightness spread between them, so a pair that a deficiency
brings to one hue still differs in lightness (and prints in grey).
``tests/test_palette.py`` measures every pair.

Themes
------
:data:`LIGHT` (the default, for screens and print) and :data:`DARK` (for dim
rooms): a :class:`Palette` holds every colour of one theme under the names
this module exports (``BACKGROUND``, ``THREAD_STATE_COLORS`` ...). The
module-level names are :data:`LIGHT`'s. Renderers take ``theme="light"`` or
``"dark"`` and read their colours from :func:`palette`.
"""

from __future__ import annotations

import colorsys
import dataclasses
from collections.abc import Mapping
from functools import lru_cache
from types import MappingProxyType
from typing import Any

from ..replay import CellState, SlotState, ThreadState
from ..replay.large import BlockState
from ..trace.kernels import KERNEL_SPECS

__all__ = [
    "Palette",
    "LIGHT",
    "DARK",
    "THEMES",
    "palette",
    "thread_color",
    "thread_colors",
    "SLOT_COLORS",
    "THREAD_STATE_COLORS",
    "CELL_COLORS",
    "P_WRITTEN_COLOR",
    "GHOST_COLORS",
    "FOCUS",
    "READ",
    "TILE_OUTLINE",
    "BACKGROUND",
    "TEXT",
    "MUTED",
    "FONT_FAMILY",
    "hex_to_rgb",
    "THREAD_STATE_LABELS",
    "SLOT_LABELS",
    "GRID_LINE",
    "THREAD_STATE_SHORT",
    "CELL_LABELS",
    "GHOST_LABELS",
    "text_on",
    "BLOCK_STATE_COLORS",
    "BLOCK_STATE_LABELS",
    "BARRIER_COLORS",
    "READS_RAMP",
    "NO_READS",
    "WAVE_BANDS",
    "sequential",
    "KERNEL_COLORS",
    "SERIES_COLORS",
]

FONT_FAMILY = "DejaVu Sans"
INK = "#1f2328"  # text on light fills, in either theme
WHITE = "#ffffff"


def _hsl(h: float, s: float, l: float) -> str:
    r, g, b = colorsys.hls_to_rgb(h % 1.0, l, s)
    return f"#{round(r * 255):02x}{round(g * 255):02x}{round(b * 255):02x}"


def thread_color(t: int, n: int) -> str:
    """Colour of thread ``t`` (0 <= t < n, ``t = ty * TILE_WIDTH + tx``) in a block of n threads.

    Hues step by the golden ratio so neighbouring threads differ; lightness
    alternates in three bands so that 256 or 1024 threads stay tellable apart.
    The same in both themes.

    Parameters
    ----------
    t : int
        The thread's number, ``ty * TILE_WIDTH + tx``.
    n : int
        Threads in the block, ``TILE_WIDTH ** 2``.

    Raises
    ------
    ValueError
        If ``t`` is outside ``0 .. n - 1``.
    """
    if not 0 <= t < n:
        raise ValueError(f"thread index must be 0..{n - 1}, got {t}")
    return thread_colors(n)[t]


@lru_cache(maxsize=64)
def thread_colors(n: int) -> tuple[str, ...]:
    """Colours of all ``n`` threads of a block (see :func:`thread_color`)."""
    golden = 0.618033988749895
    return tuple(_hsl(0.07 + t * golden, 0.62, (0.62, 0.52, 0.72)[t % 3]) for t in range(n))


def hex_to_rgb(color: str) -> tuple[int, int, int]:
    """``'#rrggbb'`` to an (r, g, b) tuple of 0..255 ints.

    Parameters
    ----------
    color : str
        ``'#rrggbb'`` (the ``#`` may be left out).
    """
    c = color.lstrip("#")
    return int(c[0:2], 16), int(c[2:4], 16), int(c[4:6], 16)


def text_on(color: str) -> str:
    """A readable text colour (dark ink or white) on a ``'#rrggbb'`` fill (either theme).

    Parameters
    ----------
    color : str
        The fill, ``'#rrggbb'``.
    """
    r, g, b = hex_to_rgb(color)
    luminance = (0.299 * r + 0.587 * g + 0.114 * b) / 255
    return INK if luminance > 0.55 else WHITE


THREAD_STATE_LABELS = {
    ThreadState.READY: "ready",
    ThreadState.LOADING: "loading",
    ThreadState.WAITING_1: "waiting at barrier 1",
    ThreadState.RELEASED: "released",
    ThreadState.COMPUTING: "computing (k)",
    ThreadState.WAITING_2: "waiting at barrier 2",
    ThreadState.WRITING_P: "writing P",
    ThreadState.IDLE: "idle (no valid P)",
    ThreadState.DONE: "phase done",
}

# One word for a thread's cell when the block is drawn small (dashboard, frames)
THREAD_STATE_SHORT = {
    ThreadState.READY: "ready",
    ThreadState.LOADING: "load",
    ThreadState.WAITING_1: "wait",
    ThreadState.RELEASED: "go",
    ThreadState.COMPUTING: "k",
    ThreadState.WAITING_2: "wait",
    ThreadState.WRITING_P: "store",
    ThreadState.IDLE: "idle",
    ThreadState.DONE: "done",
}

SLOT_LABELS = {
    SlotState.EMPTY: "empty (uninitialised)",
    SlotState.STALE: "stale (previous phase)",
    SlotState.LOADED: "loaded this phase",
    SlotState.ZERO: "zero-filled",
    SlotState.WRONG: "wrong element (row wrap)",
    SlotState.SKIPPED: "load skipped (outside allocation)",
}

CELL_LABELS = {
    CellState.NONE: "not used by this block yet",
    CellState.DONE: "loaded in an earlier phase / P written",
    CellState.TILE: "in the current tile",
    CellState.LOADING: "being loaded (colour of the loading thread)",
    CellState.READING: "read at this k (its copy in Mds / Nds)",
    CellState.COMPUTING: "P element being accumulated",
}

GHOST_LABELS = {
    0: "outside the matrix (not loaded yet)",
    1: "loaded",
    2: "outside the matrix: zero-filled",
    3: "outside the matrix: wrong element read (row wrap)",
    4: "outside the allocation: not read",
}

BLOCK_STATE_LABELS = {
    BlockState.WAITING: "not started yet",
    BlockState.RUNNING: "running",
    BlockState.DONE: "done",
    BlockState.NO_DATA: "not simulated (no data)",
}


def sequential(anchors: tuple[str, ...], n: int) -> tuple[str, ...]:
    """``n`` colours evenly interpolated (in RGB) through ``anchors``, light to dark.

    Parameters
    ----------
    anchors : tuple of str
        ``'#rrggbb'`` colours, light to dark, at least one.
    n : int
        How many colours; fewer than 2 gives the first anchor alone.
    """
    if n < 2:
        return (anchors[0],)
    rgb = [hex_to_rgb(c) for c in anchors]
    out = []
    for i in range(n):
        pos = i * (len(rgb) - 1) / (n - 1)
        a = min(int(pos), len(rgb) - 2)
        f = pos - a
        c = [round(x + (y - x) * f) for x, y in zip(rgb[a], rgb[a + 1], strict=True)]
        out.append("#{:02x}{:02x}{:02x}".format(*c))
    return tuple(out)


# Few reads (light) to many (dark): the read-count heatmaps.
_READS_ANCHORS = ("#fff7d1", "#fed976", "#fd8d3c", "#e8452c", "#b10026", "#4a0012")


@dataclasses.dataclass(frozen=True, eq=False)
class Palette:
    """Every colour of one theme, under the names :mod:`vizmm.render.palette` exports.

    Renderers read ``palette(theme).BACKGROUND``, ``.THREAD_STATE_COLORS[state]``
    and so on; the labels, :meth:`text_on` and :meth:`thread_colors` are the
    same in every theme. Colours are ``'#rrggbb'`` strings.

    Attributes
    ----------
    name : str
        ``'light'`` or ``'dark'``.
    BACKGROUND, TEXT, MUTED, GRID_LINE : str
        Page and figure background, body text, secondary text, grid lines.
    TILE_OUTLINE, FOCUS, READ : str
        Outlines: the current tile of M, N, P; the followed thread's
        elements; the slots / elements read at this k.
    HEADER_FILL, CURRENT_FILL : str
        The Fig. 5.8 table's header cells and its current cell.
    THREAD_STATE_COLORS, SLOT_COLORS, CELL_COLORS, BLOCK_STATE_COLORS : Mapping
        Fill by :class:`~vizmm.replay.ThreadState`, :class:`~vizmm.replay.SlotState`,
        :class:`~vizmm.replay.CellState`, :class:`~vizmm.replay.large.BlockState`.
    P_WRITTEN_COLOR : str
        A P element this block has stored (the colour of "writing P").
    GHOST_COLORS : Mapping of int to str
        Tile slots outside a matrix, by :class:`~vizmm.trace.Access` code
        (the colours of the matching slot states).
    WAVE_BANDS : tuple of str
        Alternate shading of the waves of blocks (large view).
    NO_READS : str
        Cells with no reads in the read-count heatmaps.
    AHEAD : str
        Barrier lab: the mark of a thread that ran ahead of another (a
        right-pointing triangle, so that its shape tells it too).
    FINDING, NEEDED : str
        A finding of ``vizmm.check`` in the replay: the outline of what went
        wrong (the wrong factor, the racing pair, the out-of-bounds element,
        the thread) and, dashed, of what the book's kernel uses there.
    WRONG : str
        Barrier lab: what a read of a wrong element touched (slots, threads,
        the Fig. 5.8 table's terms, P); the colour of a wrong element.
    """

    name: str
    BACKGROUND: str
    TEXT: str
    MUTED: str
    GRID_LINE: str
    TILE_OUTLINE: str
    FOCUS: str
    READ: str
    HEADER_FILL: str
    CURRENT_FILL: str
    THREAD_STATE_COLORS: Mapping
    SLOT_COLORS: Mapping
    CELL_COLORS: Mapping
    BLOCK_STATE_COLORS: Mapping
    WAVE_BANDS: tuple[str, str]
    NO_READS: str
    AHEAD: str = "#cc79a7"  # Okabe-Ito reddish purple
    FINDING: str = "#aa3377"  # Paul Tol's wine: what a finding of vizmm.check marks
    NEEDED: str = "#009e73"  # Okabe-Ito bluish green: what the book's kernel uses there

    FONT_FAMILY = FONT_FAMILY
    THREAD_STATE_LABELS = MappingProxyType(THREAD_STATE_LABELS)
    THREAD_STATE_SHORT = MappingProxyType(THREAD_STATE_SHORT)
    SLOT_LABELS = MappingProxyType(SLOT_LABELS)
    CELL_LABELS = MappingProxyType(CELL_LABELS)
    GHOST_LABELS = MappingProxyType(GHOST_LABELS)
    BLOCK_STATE_LABELS = MappingProxyType(BLOCK_STATE_LABELS)
    READS_RAMP = sequential(_READS_ANCHORS, 256)
    text_on = staticmethod(text_on)
    hex_to_rgb = staticmethod(hex_to_rgb)
    thread_color = staticmethod(thread_color)
    thread_colors = staticmethod(thread_colors)

    @property
    def P_WRITTEN_COLOR(self) -> str:  # noqa: N802 - named as the module's constants
        """A P element this block has stored."""
        return self.THREAD_STATE_COLORS[ThreadState.WRITING_P]

    @property
    def WRONG(self) -> str:  # noqa: N802
        """Barrier lab: the colour of a wrong element (the slot state's)."""
        return self.SLOT_COLORS[SlotState.WRONG]

    @property
    def GHOST_COLORS(self) -> Mapping:  # noqa: N802
        """Tile slots outside a matrix, by Access code (0 not loaded yet .. 4 outside)."""
        s = self.SLOT_COLORS
        return MappingProxyType(
            {
                0: s[SlotState.EMPTY],
                1: s[SlotState.LOADED],
                2: s[SlotState.ZERO],
                3: s[SlotState.WRONG],
                4: s[SlotState.SKIPPED],
            }
        )

    @property
    def BARRIER_COLORS(self) -> tuple[str, str]:  # noqa: N802
        """Threads waiting at barrier 1 (after the loads) and barrier 2 (after the k loop)."""
        t = self.THREAD_STATE_COLORS
        return (t[ThreadState.WAITING_1], t[ThreadState.WAITING_2])


# The state colours: Okabe-Ito orange #e69f00 and vermillion #d55e00, bluish
# green #009e73 and blue #0072b2; Paul Tol's indigo #332288, wine #aa3377,
# green #117733, light blue #77aadd, light cyan #99ddff, sand #eedd88, pale blue
# #bbccee; greys between. Dark: the neutral states become dark greys and the
# two darkest fills (released, skipped) lighter, so that nothing sinks into the
# background.
#
# Every colour of the two themes, one row each: (name, light, dark) for the
# figures' colours, (state, light, dark) for the fills of the states.
_THEME_COLORS = (
    ("BACKGROUND", "#ffffff", "#1b1f24"),
    ("TEXT", INK, "#e6edf3"),
    ("MUTED", "#6e7781", "#8b949e"),
    ("GRID_LINE", "#d0d7de", "#3d444d"),
    ("TILE_OUTLINE", "#cf222e", "#ff6a69"),
    ("FOCUS", "#0969da", "#f0f6fc"),
    ("READ", "#e69f00", "#e69f00"),
    ("HEADER_FILL", "#f6f8fa", "#2d333b"),
    ("CURRENT_FILL", "#fff8c5", "#5c5424"),
    ("NO_READS", "#f6f8fa", "#22272e"),
)
_STATE_COLORS = (
    (ThreadState.READY, "#e4e4e4", "#545d68"),
    (ThreadState.LOADING, "#77aadd", "#77aadd"),
    (ThreadState.WAITING_1, "#e69f00", "#e69f00"),
    (ThreadState.RELEASED, "#332288", "#6677dd"),
    (ThreadState.COMPUTING, "#eedd88", "#eedd88"),
    (ThreadState.WAITING_2, "#aa3377", "#dd5599"),
    (ThreadState.WRITING_P, "#117733", "#117733"),
    (ThreadState.IDLE, "#999999", "#adbac7"),
    (ThreadState.DONE, "#bbccee", "#373e47"),
    (SlotState.EMPTY, "#f6f8fa", "#22272e"),
    (SlotState.STALE, "#bbbbbb", "#768390"),
    (SlotState.LOADED, "#99ddff", "#99ddff"),
    (SlotState.ZERO, "#eedd88", "#eedd88"),
    (SlotState.WRONG, "#d55e00", "#d55e00"),
    (SlotState.SKIPPED, "#4b0082", "#8855cc"),
    (CellState.NONE, "#ffffff", "#1b1f24"),
    (CellState.DONE, "#bbbbbb", "#444c56"),
    (CellState.TILE, "#99ddff", "#99ddff"),
    (CellState.LOADING, "#77aadd", "#77aadd"),  # drawn in the loading thread's colour
    (CellState.READING, "#e69f00", "#e69f00"),
    (CellState.COMPUTING, "#eedd88", "#eedd88"),
    (BlockState.WAITING, "#bbbbbb", "#405060"),
    (BlockState.RUNNING, "#ee7733", "#ee7733"),
    (BlockState.DONE, "#0072b2", "#0077bb"),
    (BlockState.NO_DATA, "#ffffff", "#1b1f24"),
)
_WAVE_BANDS = (("#f6f8fa", "#eaeef2"), ("#22272e", "#2d333b"))
_STATE_FIELDS = {
    ThreadState: "THREAD_STATE_COLORS",
    SlotState: "SLOT_COLORS",
    CellState: "CELL_COLORS",
    BlockState: "BLOCK_STATE_COLORS",
}


def _theme(name: str, column: int) -> Palette:
    """The :class:`Palette` of column ``column`` (0 light, 1 dark) of the tables above."""
    fills: dict[str, dict] = {field: {} for field in _STATE_FIELDS.values()}
    for state, *colors in _STATE_COLORS:
        fills[_STATE_FIELDS[type(state)]][state] = colors[column]
    fields: dict[str, Any] = {key: colors[column] for key, *colors in _THEME_COLORS}
    fields.update({field: MappingProxyType(by_state) for field, by_state in fills.items()})
    return Palette(name=name, **fields, WAVE_BANDS=_WAVE_BANDS[column])


LIGHT = _theme("light", 0)
DARK = _theme("dark", 1)

#: The themes by name.
THEMES = MappingProxyType({"light": LIGHT, "dark": DARK})


def palette(theme: str | Palette = "light") -> Palette:
    """The :class:`Palette` of ``theme`` (``'light'`` or ``'dark'``; a Palette is returned as is).

    Parameters
    ----------
    theme : {'light', 'dark'} or Palette
        A theme's name, or a Palette.

    Raises
    ------
    ValueError
        For another name.
    """
    if isinstance(theme, Palette):
        return theme
    try:
        return THEMES[theme]
    except (KeyError, TypeError):
        raise ValueError(
            f"unknown theme {theme!r}; choose from {', '.join(map(repr, THEMES))}"
        ) from None


# The light theme's colours under the module's names (renderers that take a
# theme read them from palette(theme) instead).
BACKGROUND = LIGHT.BACKGROUND
TEXT = LIGHT.TEXT
MUTED = LIGHT.MUTED
GRID_LINE = LIGHT.GRID_LINE
TILE_OUTLINE = LIGHT.TILE_OUTLINE  # current tile of M, N, P
FOCUS = LIGHT.FOCUS  # the followed thread's elements
READ = LIGHT.READ  # slots / elements read at this k
SLOT_COLORS = LIGHT.SLOT_COLORS
THREAD_STATE_COLORS = LIGHT.THREAD_STATE_COLORS
CELL_COLORS = LIGHT.CELL_COLORS
P_WRITTEN_COLOR = LIGHT.P_WRITTEN_COLOR
GHOST_COLORS = LIGHT.GHOST_COLORS
BLOCK_STATE_COLORS = LIGHT.BLOCK_STATE_COLORS
BARRIER_COLORS = LIGHT.BARRIER_COLORS
WAVE_BANDS = LIGHT.WAVE_BANDS
NO_READS = LIGHT.NO_READS
READS_RAMP = Palette.READS_RAMP

#: Colours of the timed series that are no kernel of :data:`vizmm.trace.KERNEL_SPECS`:
#: the dynamic kernel at any size (``dynamic_any``), cuBLAS and the book's own numbers.
SERIES_COLORS = {
    "dynamic_any": "#e69f00",
    "cublas": "#000000",
    "book": "#8c959f",
}
#: One colour per timed kernel (roofline points and speed curves): Okabe-Ito hues, the same
#: in both themes; each book kernel's is its ``KernelSpec.color``, then :data:`SERIES_COLORS`.
KERNEL_COLORS = {
    **{s.name: s.color for s in KERNEL_SPECS.values() if s.color is not None},
    **SERIES_COLORS,
}
