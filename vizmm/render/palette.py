"""One palette for every renderer: the dashboard, the HTML export and the GIF/MP4 frames.

Colours are ``#rrggbb`` strings (Bokeh and Pillow both take them). Threads are
coloured by their index ``t = ty * TILE_WIDTH + tx``; states by the codes of
:mod:`vizmm.replay`.
"""

from __future__ import annotations

import colorsys
from functools import lru_cache

from ..replay import CellState, SlotState, ThreadState
from ..replay.large import BlockState

__all__ = [
    "thread_color",
    "thread_colors",
    "SLOT_COLORS",
    "THREAD_STATE_COLORS",
    "CELL_COLORS",
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
]

BACKGROUND = "#ffffff"
TEXT = "#1f2328"
MUTED = "#8c959f"
GRID_LINE = "#d0d7de"
TILE_OUTLINE = "#cf222e"  # current tile of M, N, P
FOCUS = "#0969da"  # the followed thread's elements
READ = "#f0b400"  # slots / elements read at this k
FONT_FAMILY = "DejaVu Sans"


def _hsl(h: float, s: float, l: float) -> str:
    r, g, b = colorsys.hls_to_rgb(h % 1.0, l, s)
    return f"#{round(r * 255):02x}{round(g * 255):02x}{round(b * 255):02x}"


def thread_color(t: int, n: int) -> str:
    """Colour of thread ``t`` (0 <= t < n, ``t = ty * TILE_WIDTH + tx``) in a block of n threads.

    Hues step by the golden ratio so neighbouring threads differ; lightness
    alternates in three bands so that 256 or 1024 threads stay tellable apart.
    """
    if not 0 <= t < n:
        raise ValueError(f"thread index must be 0..{n - 1}, got {t}")
    return thread_colors(n)[t]


@lru_cache(maxsize=64)
def thread_colors(n: int) -> tuple[str, ...]:
    """Colours of all ``n`` threads of a block (see :func:`thread_color`)."""
    golden = 0.618033988749895
    return tuple(_hsl(0.07 + t * golden, 0.62, (0.62, 0.52, 0.72)[t % 3]) for t in range(n))


SLOT_COLORS = {
    SlotState.EMPTY: "#f6f8fa",
    SlotState.STALE: "#d8dee4",
    SlotState.LOADED: "#a5d6a7",
    SlotState.ZERO: "#fff1c2",
    SlotState.WRONG: "#ff8182",
    SlotState.SKIPPED: "#8250df",
}

THREAD_STATE_COLORS = {
    ThreadState.READY: "#eaeef2",
    ThreadState.LOADING: "#54aeff",
    ThreadState.WAITING_1: "#fd8c73",
    ThreadState.RELEASED: "#4ac26b",
    ThreadState.COMPUTING: "#ffd33d",
    ThreadState.WAITING_2: "#e16f24",
    ThreadState.WRITING_P: "#2da44e",
    ThreadState.IDLE: "#afb8c1",
    ThreadState.DONE: "#b6e3ff",
}

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

CELL_COLORS = {
    CellState.NONE: "#ffffff",
    CellState.DONE: "#d0d7de",
    CellState.TILE: "#ddf4ff",
    CellState.LOADING: "#54aeff",  # overridden by the loading thread's colour
    CellState.READING: READ,
    CellState.COMPUTING: "#fff8c5",
}

# Ghost cells (tile slots outside a matrix), by replay Access code
GHOST_COLORS = {
    0: "#f6f8fa",  # not yet loaded in this phase
    1: "#a5d6a7",
    2: "#fff1c2",  # zero-fill
    3: "#ff8182",  # wrong element
    4: "#8250df",  # outside the allocation
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


def text_on(color: str) -> str:
    """A readable text colour (:data:`TEXT` or white) on a ``'#rrggbb'`` fill."""
    r, g, b = hex_to_rgb(color)
    luminance = (0.299 * r + 0.587 * g + 0.114 * b) / 255
    return TEXT if luminance > 0.55 else "#ffffff"


def hex_to_rgb(color: str) -> tuple[int, int, int]:
    """``'#rrggbb'`` to an (r, g, b) tuple of 0..255 ints."""
    c = color.lstrip("#")
    return int(c[0:2], 16), int(c[2:4], 16), int(c[4:6], 16)


# ------------------------------------------------------------ large views
# Blocks of a whole launch at one moment (vizmm.large.BlockState).
BLOCK_STATE_COLORS = {
    BlockState.WAITING: "#d0d7de",
    BlockState.RUNNING: "#fb8f44",
    BlockState.DONE: "#2da44e",
    BlockState.NO_DATA: "#ffffff",
}

BLOCK_STATE_LABELS = {
    BlockState.WAITING: "not started yet",
    BlockState.RUNNING: "running",
    BlockState.DONE: "done",
    BlockState.NO_DATA: "not simulated (no data)",
}

# Barrier 1 (after the loads) and barrier 2 (after the k loop): the colours of
# threads waiting at them in the block replay.
BARRIER_COLORS = (
    THREAD_STATE_COLORS[ThreadState.WAITING_1],
    THREAD_STATE_COLORS[ThreadState.WAITING_2],
)

# Alternate shading of the waves of blocks behind the running-blocks curve.
WAVE_BANDS = ("#f6f8fa", "#eaeef2")

# Cells with no reads at all (blocks that did not run) in the read-count heatmaps.
NO_READS = "#f6f8fa"

# Few reads (light) to many (dark): the read-count heatmaps.
_READS_ANCHORS = ("#fff7d1", "#fed976", "#fd8d3c", "#e8452c", "#b10026", "#4a0012")


def sequential(anchors: tuple[str, ...], n: int) -> tuple[str, ...]:
    """``n`` colours evenly interpolated (in RGB) through ``anchors``, light to dark."""
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


READS_RAMP = sequential(_READS_ANCHORS, 256)
