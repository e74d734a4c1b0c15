"""Bokeh figures of a whole launch: the large views of :mod:`vizmm.replay.large`.

:class:`LargeScene` builds every figure and data source once for a trace;
:meth:`LargeScene.set_time`, :meth:`LargeScene.set_waits` and
:meth:`LargeScene.select` then assign new columns (whole columns of a few
kilobytes: a 128 x 128 grid of blocks is one small image, the Gantt chart's
16,384 bars change one int8 column), so a 4096 x 4096 launch scrubs in a few
milliseconds on the server.

Figures (keys of :attr:`LargeScene.figures`):

``grid``
    the grid of blocks as one image, each block coloured done / running /
    waiting at the scrubbed time; hover for block, SM, start, end, wave and
    barrier waits; blocks recorded per thread are outlined;
``gantt``
    one row per SM, one bar per block from its start to its end (the blocks
    resident together stacked in lanes), coloured like the grid, with a line
    at the scrubbed time;
``running``
    how many blocks run at once over time, the waves of blocks shaded;
``M``, ``N``, ``M_naive``, ``N_naive``
    global reads of every element of M and N at tile granularity, measured
    and for the naive kernel, on one logarithmic colour scale;
``waits`` and the ``slowest`` table
    the barrier-wait histogram of one phase (or all) per barrier, and the
    blocks that waited longest (click a row to select the block).

Every colour comes from :mod:`vizmm.render.palette`. Pure functions
(:func:`grid_state_columns`, :func:`gantt_columns`, :func:`wait_columns`,
:func:`slowest_columns`, ...) compute the data; the scene only assigns it.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from ..replay.large import (
    BARRIERS,
    BlockState,
    LargeModel,
    ReadMap,
    SlowBlocks,
    WaitDistribution,
    model,
    slowest_blocks,
    wait_bin_label,
    wait_distribution,
)
from ..trace import KERNEL_SPECS, WAIT_BINS, Trace
from . import palette as pal
from .bokeh_tools import add_hover, title_of

__all__ = [
    "LargeScene",
    "grid_static_columns",
    "grid_state_columns",
    "gantt_columns",
    "gantt_state",
    "running_columns",
    "wave_columns",
    "read_columns",
    "wait_columns",
    "slowest_columns",
    "time_scale",
    "SLOWEST_ROWS",
    "KERNEL_LABELS",
]

SANS = f"'{pal.FONT_FAMILY}', 'Helvetica Neue', Arial, sans-serif"
SLOWEST_ROWS = 12  # rows of the slowest-blocks table
GRID_LINES_UP_TO = 32  # block grids up to this many blocks a side get lines between blocks
#: How the read maps name each book kernel that has a label (``KernelSpec.label``); another
#: kernel by its name.
KERNEL_LABELS = {s.name: s.label for s in KERNEL_SPECS.values() if s.label is not None}
_STATES = tuple(BlockState)


def time_scale(m: LargeModel) -> tuple[float, str]:
    """Factor from the timeline's unit to the axis unit, and the axis label.

    Parameters
    ----------
    m : LargeModel
        The launch's models.
    """
    if m.timeline.has_clock:
        return 1e-3, "µs since the first block started (%globaltimer)"
    return 1.0, "completion order (blocks; the simulator has no clock)"


def _state_mapper(no_data: str | None = None):
    """Colours of :class:`BlockState` codes; ``no_data`` replaces NO_DATA's colour."""
    from bokeh.models import LinearColorMapper

    colors = [pal.BLOCK_STATE_COLORS[s] for s in _STATES]
    if no_data is not None:
        colors[BlockState.NO_DATA] = no_data
    return LinearColorMapper(palette=colors, low=-0.5, high=len(_STATES) - 0.5)


# ------------------------------------------------------------------ columns
def grid_static_columns(m: LargeModel) -> dict[str, list]:
    """Hover data of the block grid (each column one (gy, gx) array in a list).

    Columns: ``by``, ``bx``, ``sm`` (-1 unknown), ``start``, ``end``,
    ``dur`` (axis unit, NaN without data), ``wave`` (-1), ``w1``, ``w2``
    (largest arrival spread at barrier 1 / 2, cycles, -1 unknown), ``zf``
    (zero-filled slots over all phases), ``detail`` (1 where recorded per thread).

    Parameters
    ----------
    m : LargeModel
        The launch's models.
    """
    tl = m.timeline
    gy, gx = tl.grid
    k, _ = time_scale(m)
    by, bx = np.mgrid[0:gy, 0:gx]
    wave = m.waves.wave if m.waves is not None else np.full((gy, gx), -1, np.int32)
    detail = np.zeros((gy, gx), np.int8)
    db = m.trace.detail_blocks
    detail[db[:, 0], db[:, 1]] = 1
    return {
        "by": [by.astype(np.int32)],
        "bx": [bx.astype(np.int32)],
        "sm": [tl.sm.astype(np.int32)],
        "start": [tl.start * k],
        "end": [tl.end * k],
        "dur": [(tl.end - tl.start) * k],
        "wave": [wave.astype(np.int32)],
        "w1": [m.block_waits[..., 0]],
        "w2": [m.block_waits[..., 1]],
        "zf": [m.zero_fills],
        "detail": [detail],
    }


def grid_state_columns(m: LargeModel, t: float) -> dict[str, list]:
    """``{"state": [(gy, gx) int8 image]}``: each block's :class:`BlockState` at time ``t``.

    Parameters
    ----------
    m : LargeModel
        The launch's models.
    t : float
        A time in the timeline's unit.
    """
    return {"state": [m.timeline.state_at(t)]}


def gantt_columns(m: LargeModel) -> dict[str, np.ndarray]:
    """The Gantt chart's bars, one per block with data, in :class:`~vizmm.replay.large.Gantt` order.

    Columns: ``left``, ``right`` (axis unit), ``bottom``, ``top`` (rows),
    ``by``, ``bx``, ``sm``, ``lane``, ``dur``, ``wave``, ``state`` (all
    waiting; see :func:`gantt_state`).

    Parameters
    ----------
    m : LargeModel
        The launch's models (:meth:`vizmm.replay.large.LargeModel.of`).
    """
    g = m.gantt
    k, _ = time_scale(m)
    bottom, top = g.bounds()
    wave = m.waves.wave[g.by, g.bx] if m.waves is not None else np.full(len(g), -1, np.int32)
    return {
        "left": g.start * k,
        "right": g.end * k,
        "bottom": bottom,
        "top": top,
        "by": g.by,
        "bx": g.bx,
        "sm": m.timeline.sm[g.by, g.bx] if len(g) else g.row,
        "lane": g.lane,
        "dur": (g.end - g.start) * k,
        "wave": wave.astype(np.int32),
        "state": np.zeros(len(g), np.int8),
    }


def gantt_state(m: LargeModel, t: float) -> np.ndarray:
    """:class:`BlockState` of each Gantt bar at time ``t`` (int8, bar order).

    Parameters
    ----------
    m : LargeModel
        The models of the launch whose Gantt chart is drawn.
    t : float
        The moment shown, in the unit of the timeline's axis.
    """
    g = m.gantt
    out = np.zeros(len(g), np.int8)
    out[g.start <= t] = BlockState.RUNNING
    out[g.end <= t] = BlockState.DONE
    return out


def running_columns(m: LargeModel) -> dict[str, np.ndarray]:
    """The running-blocks curve (``x`` axis unit, ``y`` blocks), a step function.

    Parameters
    ----------
    m : LargeModel
        The launch's models.
    """
    k, _ = time_scale(m)
    t, r = m.timeline.running_curve()
    if len(t) and t[0] > 0:
        t, r = np.r_[0.0, t], np.r_[0, r]
    return {"x": t * k, "y": r.astype(np.int64)}


def wave_columns(m: LargeModel) -> dict[str, list]:
    """Shaded bands, one per wave: from its first start to the next wave's first start.

    Parameters
    ----------
    m : LargeModel
        The launch's models.
    """
    w = m.waves
    if w is None:
        return {key: [] for key in ("left", "right", "top", "fill", "wave", "size", "start", "end")}
    k, _ = time_scale(m)
    n = len(w.start)
    right = np.r_[w.start[1:], w.end[-1]] if n else np.zeros(0)
    return {
        "left": (w.start * k).tolist(),
        "right": (right * k).tolist(),
        "top": [w.slots * 1.08] * n,
        "fill": [pal.WAVE_BANDS[i % 2] for i in range(n)],
        "wave": list(range(n)),
        "size": w.size.tolist(),
        "start": (w.start * k).tolist(),
        "end": (w.end * k).tolist(),
    }


def _uniform_text(rm: ReadMap) -> str:
    lo, hi = int(rm.low.min()), int(rm.high.max())
    if lo == hi:
        return f"{lo:,} reads per element"
    mean = rm.total / max(1, rm.shape[0] * rm.shape[1])
    return f"{lo:,}–{hi:,} reads/element, mean {mean:,.3g}"


def read_columns(rm: ReadMap) -> dict[str, list]:
    """Image and hover data of a read-count heatmap (each column one (h, w) array in a list).

    Columns: ``image`` (mean reads per element), ``low``, ``high``, ``r0``,
    ``r1``, ``c0``, ``c1`` (element rows and columns of the cell, inclusive).

    Parameters
    ----------
    rm : ReadMap
        A read-count heatmap of M or N (:class:`vizmm.replay.large.ReadCounts`).
    """
    re_, ce = rm.row_edges, rm.col_edges
    h, w = rm.mean.shape
    r0 = np.repeat(re_[:-1, None], w, axis=1)
    r1 = np.repeat(re_[1:, None] - 1, w, axis=1)
    c0 = np.repeat(ce[None, :-1], h, axis=0)
    c1 = np.repeat(ce[None, 1:] - 1, h, axis=0)
    return {
        "image": [rm.mean],
        "low": [rm.low],
        "high": [rm.high],
        "r0": [r0],
        "r1": [r1],
        "c0": [c0],
        "c1": [c1],
    }


def wait_columns(dist: WaitDistribution) -> dict[str, list]:
    """Bars of the wait histogram: two per bin (barrier 1 left, barrier 2 right).

    Columns: ``left``, ``right``, ``top`` (blocks), ``fill``, ``barrier``
    (label), ``cycles`` (bin range), ``blocks``.

    Parameters
    ----------
    dist : WaitDistribution
        A barrier-wait histogram (:func:`vizmm.replay.large.wait_distribution`).
    """
    cols: dict[str, list] = {
        key: [] for key in ("left", "right", "top", "fill", "barrier", "cycles", "blocks")
    }
    for b in range(2):
        for i in range(WAIT_BINS):
            c = int(dist.counts[b, i])
            cols["left"].append(i - 0.42 + 0.42 * b)
            cols["right"].append(i + 0.42 * b)
            cols["top"].append(c)
            cols["fill"].append(pal.BARRIER_COLORS[b])
            cols["barrier"].append(BARRIERS[b])
            cols["cycles"].append(wait_bin_label(i))
            cols["blocks"].append(c)
    return cols


def slowest_columns(slow: SlowBlocks) -> dict[str, list]:
    """Rows of the slowest-blocks table.

    Plain lists: ``block``, ``by``, ``bx``, ``sm``, ``spread``, ``worst``,
    ``mean``, ``detail``.

    Parameters
    ----------
    slow : SlowBlocks
        The slowest blocks (:func:`vizmm.replay.large.slowest_blocks`).
    """
    return {
        "block": [f"({a}, {b})" for a, b in zip(slow.by.tolist(), slow.bx.tolist(), strict=True)],
        "by": slow.by.tolist(),
        "bx": slow.bx.tolist(),
        "sm": [s if s >= 0 else "–" for s in slow.sm.tolist()],
        "spread": slow.spread.tolist(),
        "worst": slow.worst_phase.tolist(),
        "mean": slow.mean.tolist(),
        "detail": ["yes: open it" if d else "–" for d in slow.detailed.tolist()],
    }


# -------------------------------------------------------------------- scene
class LargeScene:
    """Bokeh figures of a large trace, built once; set the time, phase and block.

    Parameters
    ----------
    trace : Trace or LargeModel
        The trace (its model is built, or taken from the cache of
        :func:`vizmm.replay.large.model`), or a ready model.
    presenter : bool
        Larger fonts for a projector.
    grid_px : int, optional
        The side of the block grid's cells, pixels (a page fits it to the
        window); by default 470 (560 for a projector).

    Attributes
    ----------
    model : LargeModel
    sources : dict of str to ColumnDataSource
    figures : dict of str to bokeh.models.LayoutDOM
        ``grid``, ``gantt``, ``running``, ``M``, ``N``, ``M_naive``,
        ``N_naive``, ``waits``, ``slowest`` (a DataTable).
    panels : dict of str to bokeh.models.LayoutDOM
        ``timeline`` (grid, Gantt, running blocks), ``reads`` (the four
        heatmaps and the colour bar), ``waits`` (histogram and table).
    layout : bokeh.models.LayoutDOM
        The three panels in one column.
    time : float
        The scrubbed time (timeline unit).
    """

    def __init__(
        self, trace: Trace | LargeModel, presenter: bool = False, grid_px: int | None = None
    ):
        from bokeh.layouts import column

        self.model = trace if isinstance(trace, LargeModel) else model(trace)
        self.trace = self.model.trace
        self.presenter = bool(presenter)
        self._grid_px = grid_px
        self._font = 15 if presenter else 13
        self.sources: dict = {}
        self.figures: dict = {}
        self.time = 0.0
        self.phase: int | None = None
        self.barrier = 0
        self.block: tuple[int, int] | None = None
        self._block_callbacks: list[Callable[[int, int], None]] = []
        self.panels = {
            "timeline": self._timeline_panel(),
            "reads": self._reads_panel(),
            "waits": self._waits_panel(),
        }
        self.layout = column(*self.panels.values(), spacing=16)
        self.set_time(0.0)
        self.set_waits(None, 0)

    # ---------------------------------------------------------------- updates
    def set_time(self, t: float) -> None:
        """Show the launch at time ``t`` (timeline unit: ns, or blocks without a clock).

        Parameters
        ----------
        t : float
            A time in the timeline's unit: ns since the first block started, or
            completed blocks without a clock.
        """
        m = self.model
        self.time = float(t)
        self.sources["grid"].data.update(grid_state_columns(m, t))
        self.sources["gantt"].data.update(state=gantt_state(m, t))
        k, _ = time_scale(m)
        for span in self._now:
            span.location = t * k
        counts = m.timeline.counts_at(t)
        parts = [
            f"{counts[BlockState.RUNNING]:,} running",
            f"{counts[BlockState.DONE]:,} done",
            f"{counts[BlockState.WAITING]:,} waiting",
        ]
        if counts[BlockState.NO_DATA]:
            parts.append(f"{counts[BlockState.NO_DATA]:,} not simulated")
        self.figures["grid"].title.text = f"Blocks {m.timeline.label(t)}"
        self._grid_sub.text = " · ".join(parts)

    def set_waits(self, phase: int | None, barrier: int | None = None) -> None:
        """Show the wait histogram of ``phase`` and the slowest blocks at ``barrier``.

        Parameters
        ----------
        phase : int or None
            A phase ``ph``; None shows all phases together.
        barrier : {0, 1}, optional
            Barrier 1 (after the loads) is 0, barrier 2 (after the k loop) is 1;
            None keeps the barrier shown.
        """
        if barrier is not None:
            self.barrier = int(barrier)
        self.phase = phase
        dist = wait_distribution(self.trace, phase)
        self.sources["waits"].data = wait_columns(dist)
        n = int(dist.counts[0].sum())
        where = "all phases" if phase is None else f"phase {phase} of {dist.n_phases}"
        self.figures["waits"].title.text = f"Barrier waits · {where}"
        if dist.available:
            med = [dist.median_bin(b) for b in (0, 1)]
            meds = ", ".join(
                f"{wait_bin_label(x)} at barrier {b + 1}"
                for b, x in enumerate(med)
                if x is not None
            )
            what = "blocks" if phase is not None else "blocks × phases"
            sub = f"{n:,} {what} · median {meds} (cycles)"
        else:
            sub = "no waits recorded"
        self._waits_sub.text = sub
        self.figures["waits"].yaxis.axis_label = (
            "blocks" if phase is not None else "blocks × phases"
        )
        self._waits_note.text = dist.note
        slow = slowest_blocks(self.trace, self.barrier, SLOWEST_ROWS, phase)
        self.sources["slowest"].data = slowest_columns(slow)
        self._slowest_note.text = (
            f"<b>Slowest blocks</b> at {BARRIERS[self.barrier]}: "
            f"{slow.note}. Click a row to select the block."
        )

    def select(self, block: tuple[int, int] | None) -> None:
        """Outline ``block`` (by, bx) in the grid and the Gantt chart; None clears.

        Parameters
        ----------
        block : tuple of (int, int) or None
            (by, bx) of a block of the grid; None clears the outline.
        """
        m = self.model
        self.block = None if block is None else (int(block[0]), int(block[1]))
        grid: dict[str, list[float]] = {"x": [], "y": []}
        bar: dict[str, list[float]] = {"left": [], "right": [], "bottom": [], "top": []}
        if self.block is not None:
            by, bx = self.block
            gy, gx = m.timeline.grid
            if 0 <= by < gy and 0 <= bx < gx:
                grid = {"x": [bx + 0.5], "y": [by + 0.5]}
                i = int(m.gantt.index[by, bx])
                if i >= 0:
                    g = self.sources["gantt"].data
                    bar = {key: [float(g[key][i])] for key in bar}
        self.sources["grid_sel"].data = grid
        self.sources["gantt_sel"].data = bar

    def on_block(self, callback: Callable[[int, int], None]) -> None:
        """Call ``callback(by, bx)`` when a block is clicked (grid, Gantt bar or table row).

        Needs a Bokeh server (Panel): the clicks arrive as Python events.

        Parameters
        ----------
        callback : callable
            ``callback(by, bx)``, called on Panel's event loop.
        """
        self._block_callbacks.append(callback)
        if len(self._block_callbacks) > 1:
            return
        from bokeh.events import Tap

        self.figures["grid"].on_event(Tap, self._on_grid_tap)
        self.figures["gantt"].on_event(Tap, self._on_gantt_tap)
        self.sources["slowest"].selected.on_change("indices", self._on_table_select)

    def block_at(self, x: float, y: float) -> tuple[int, int] | None:
        """The block under grid coordinates ``(x, y)`` (x = bx + fraction).

        Parameters
        ----------
        x, y : float
            Grid coordinates: ``x`` is bx plus a fraction, ``y`` by plus a fraction.
        """
        gy, gx = self.model.timeline.grid
        by, bx = math.floor(y), math.floor(x)
        return (by, bx) if 0 <= by < gy and 0 <= bx < gx else None

    def bar_at(self, x: float, y: float) -> tuple[int, int] | None:
        """The block whose Gantt bar covers ``(x, y)`` (axis units), if any.

        Parameters
        ----------
        x, y : float
            The Gantt chart's axis units: time (its scale, :func:`time_scale`) and row.
        """
        g = self.sources["gantt"].data
        hit = np.flatnonzero(
            (g["left"] <= x) & (x <= g["right"]) & (g["bottom"] <= y) & (y <= g["top"])
        )
        if not len(hit):
            return None
        i = int(hit[0])
        return int(g["by"][i]), int(g["bx"][i])

    def _emit(self, block) -> None:
        if block is None:
            return
        for cb in self._block_callbacks:
            cb(*block)

    def _on_grid_tap(self, event) -> None:
        self._emit(self.block_at(event.x, event.y))

    def _on_gantt_tap(self, event) -> None:
        self._emit(self.bar_at(event.x, event.y))

    def _on_table_select(self, attr, old, new) -> None:
        if not new:
            return
        data = self.sources["slowest"].data
        i = new[0]
        self._emit((int(data["by"][i]), int(data["bx"][i])))

    # ----------------------------------------------------------------- build
    def _fig(self, width, height, x_range=None, y_range=None, title="", tools="", **kw):
        from bokeh.plotting import figure

        ranges = {
            name: r for name, r in (("x_range", x_range), ("y_range", y_range)) if r is not None
        }
        f = figure(
            width=int(width),
            height=int(height),
            **ranges,
            tools=tools,
            toolbar_location="right" if tools else None,
            title=title,
            min_border=6,
            outline_line_color=None,
            background_fill_color=pal.BACKGROUND,
            border_fill_color=pal.BACKGROUND,
            **kw,
        )
        if tools:
            f.toolbar.autohide = True
        head = title_of(f)
        head.text_font = SANS
        head.text_font_size = f"{self._font + 1}px"
        head.text_color = pal.TEXT
        head.text_font_style = "bold"
        for axis in (f.xaxis, f.yaxis):
            axis.axis_label_text_font = SANS
            axis.axis_label_text_font_size = f"{self._font - 1}px"
            axis.axis_label_text_font_style = "normal"
            axis.axis_label_text_color = pal.TEXT
            axis.major_label_text_font_size = f"{self._font - 2}px"
            axis.major_label_text_color = pal.MUTED
            axis.axis_line_color = pal.GRID_LINE
            axis.major_tick_line_color = pal.GRID_LINE
            axis.minor_tick_line_color = None
        return f

    def _map_fig(self, width, height, rows, cols, **kw):
        """A figure of a rows x cols map (row 0 on top, x axis above) to pan and zoom."""
        from bokeh.models import Range1d

        f = self._fig(
            width,
            height,
            Range1d(start=0, end=cols),
            Range1d(start=rows, end=0),
            tools="pan,wheel_zoom,reset",
            x_axis_location="above",
            **kw,
        )
        f.grid.visible = False
        return f

    def _legend(self, f, items, location="below", columns=None):
        from bokeh.models import ColumnDataSource
        from bokeh.models.annotations import Legend, LegendItem

        entries = []
        for label, color, kind in items:
            # one invisible point: a legend draws its swatch from the first item's visuals
            src = ColumnDataSource({"x": [math.nan], "y": [math.nan]})
            if kind == "hatch":
                r = f.rect(
                    "x",
                    "y",
                    1,
                    1,
                    source=src,
                    fill_color=color,
                    line_color=pal.MUTED,
                    hatch_pattern="/",
                    hatch_color=pal.MUTED,
                    hatch_alpha=0.45,
                    hatch_scale=6,
                )
            elif kind == "outline":
                r = f.rect(
                    "x", "y", 1, 1, source=src, fill_alpha=0, line_color=color, line_width=2.5
                )
            else:
                r = f.rect("x", "y", 1, 1, source=src, fill_color=color, line_color=pal.MUTED)
            entries.append(LegendItem(label=label, renderers=[r]))
        legend = Legend(
            orientation="horizontal",
            location="center",
            label_text_font=SANS,
            label_text_font_size=f"{self._font - 1}px",
            label_text_color=pal.TEXT,
            border_line_color=None,
            background_fill_alpha=0,
            padding=2,  # type: ignore[arg-type]  # Bokeh 3.9's stub nests Property in padding's type
            spacing=10,
            margin=2,
            glyph_width=16,
            glyph_height=16,
        )
        legend.items = entries  # set after: Bokeh 3.10's stub leaves ``items`` out of __init__
        if columns:
            legend.ncols = columns
        f.add_layout(legend, location)
        return legend

    def _block_grid(self):
        """The grid of blocks: each block's state at the time shown, one image, its hover."""
        from bokeh.models import ColumnDataSource, FixedTicker

        m = self.model
        tl = m.timeline
        gy, gx = tl.grid
        fs = self._font
        side = self._grid_px or (470 if not self.presenter else 560)
        cell = max(2.0, min(90.0, side / max(gy, gx)))
        f = self._map_fig(max(gx * cell, 330) + 70, gy * cell + 130, gy, gx, match_aspect=True)
        f.xaxis.axis_label = "blockIdx.x"
        f.yaxis.axis_label = "blockIdx.y"
        if max(gy, gx) <= 16:
            for axis, n in ((f.xaxis, gx), (f.yaxis, gy)):
                axis.ticker = FixedTicker(ticks=[i + 0.5 for i in range(n)])
                axis.major_label_overrides = {i + 0.5: str(i) for i in range(n)}
        src = ColumnDataSource({**grid_static_columns(m), "state": [tl.state_at(0.0)]})
        self.sources["grid"] = src
        hatch = not tl.simulated.all()
        if hatch:  # blocks that did not run: hatched, seen through the image
            f.rect(
                gx / 2,
                gy / 2,
                gx,
                gy,
                fill_color=pal.BLOCK_STATE_COLORS[BlockState.NO_DATA],
                line_color=None,
                hatch_pattern="/",
                hatch_color=pal.MUTED,
                hatch_alpha=0.45,
                hatch_scale=8,
            )
        img = f.image(
            image="state",
            x=0,
            y=0,
            dw=gx,
            dh=gy,
            source=src,
            color_mapper=_state_mapper("rgba(0, 0, 0, 0)" if hatch else None),
        )
        if max(gy, gx) <= GRID_LINES_UP_TO:
            f.grid.visible = True
            f.grid.ticker = FixedTicker(ticks=list(range(max(gy, gx) + 1)))
            f.grid.grid_line_color = pal.BACKGROUND
            f.grid.grid_line_width = 2
            f.grid.level = "overlay"
        f.rect(gx / 2, gy / 2, gx, gy, fill_alpha=0, line_color=pal.MUTED, line_width=1)
        self._block_hover(f, img)
        detail = self.trace.detail_blocks
        dsrc = ColumnDataSource(
            {
                "x": (detail[:, 1] + 0.5).tolist(),
                "y": (detail[:, 0] + 0.5).tolist(),
                "block": [f"({a}, {b})" for a, b in detail.tolist()],
            }
        )
        size = max(0.9, 11.0 / cell)  # at least 11 pixels, so the corners show
        f.rect("x", "y", size, size, source=dsrc, fill_alpha=0, line_color=pal.FOCUS, line_width=2)
        self.sources["grid_sel"] = ColumnDataSource({"x": [], "y": []})
        f.rect(
            "x",
            "y",
            max(1.0, 15.0 / cell),
            max(1.0, 15.0 / cell),
            source=self.sources["grid_sel"],
            fill_alpha=0,
            line_color=pal.TILE_OUTLINE,
            line_width=3,
        )
        self._block_legend(f, hatch)
        f.name = "vizmm-block-grid"
        self._grid_sub = _subtitle("", fs)
        f.add_layout(self._grid_sub, "above")
        self.figures["grid"] = f

        return f

    def _block_hover(self, f, img) -> None:
        """What hovering over a block of the grid says: its times, SM, waits, zero-fills."""
        from bokeh.models import CustomJSHover

        m = self.model
        tl = m.timeline
        unit = "µs" if tl.has_clock else ""
        hover_time = (
            [
                ("start", f"@start{{0,0.000}} {unit}"),
                ("end", f"@end{{0,0.000}} {unit}"),
                ("ran for", f"@dur{{0,0.000}} {unit}"),
                ("SM", "@sm"),
                ("wave", "@wave"),
            ]
            if tl.has_clock
            else [("completed", "@start{0} (order)")]
        )
        waits = (
            [
                ("waited at barrier 1", "@w1 cycles (most, over the phases)"),
                ("waited at barrier 2", "@w2 cycles"),
            ]
            if (m.block_waits >= 0).any()
            else []
        )
        per_thread = CustomJSHover(
            code="return value ? 'yes: select it, then open its replay' : 'no'"
        )
        add_hover(
            f,
            img,
            [
                ("block", "(@by, @bx)"),
                *hover_time,
                *waits,
                ("zero-filled slots", "@zf"),
                ("recorded per thread", "@detail{custom}"),
            ],
            formatters={"@detail": per_thread},
        )

    def _block_legend(self, f, hatch: bool) -> None:
        """The grid's legend: the blocks' states (not run: hatched), the outlines."""
        items = [
            (
                pal.BLOCK_STATE_LABELS[s],
                pal.BLOCK_STATE_COLORS[s],
                "hatch" if s == BlockState.NO_DATA else "fill",
            )
            for s in _STATES
            if s != BlockState.NO_DATA or hatch
        ]
        items += [
            ("recorded per thread", pal.FOCUS, "outline"),
            ("selected", pal.TILE_OUTLINE, "outline"),
        ]
        self._legend(f, items, columns=3)

    def _timeline_panel(self):
        from bokeh.layouts import column, row
        from bokeh.models import ColumnDataSource, Range1d
        from bokeh.models.annotations import Label, Span

        m = self.model
        tl = m.timeline
        gy, gx = tl.grid
        k, xlabel = time_scale(m)
        fs = self._font
        unit = "µs" if tl.has_clock else ""

        # --- the grid of blocks, one image
        f = self._block_grid()

        # --- the Gantt chart: one row per SM
        g = m.gantt
        gw = 760 if not self.presenter else 900
        row_px = 4.0 if g.rows > 40 else max(4.0, 300 / g.rows)
        x_end = max(tl.duration * k, 1e-9)
        x_range = Range1d(
            start=-0.01 * x_end, end=x_end * 1.01, bounds=(-0.02 * x_end, x_end * 1.05)
        )
        gf = self._fig(
            gw,
            g.rows * row_px + 90,
            x_range,
            Range1d(start=g.rows, end=0),
            tools="xpan,xwheel_zoom,reset",
        )
        gf.grid.visible = False
        gf.xaxis.axis_label = xlabel
        gf.yaxis.axis_label = "SM (%smid)" if tl.has_clock else ""
        if not tl.has_clock:
            gf.yaxis.visible = False
        gsrc = ColumnDataSource(gantt_columns(m))
        self.sources["gantt"] = gsrc
        q = gf.quad(
            left="left",
            right="right",
            bottom="bottom",
            top="top",
            source=gsrc,
            fill_color={"field": "state", "transform": _state_mapper()},
            line_color=None,
        )
        tips = (
            [
                ("block", "(@by, @bx)"),
                ("SM", "@sm (lane @lane)"),
                ("start", f"@left{{0,0.000}} {unit}"),
                ("end", f"@right{{0,0.000}} {unit}"),
                ("ran for", f"@dur{{0,0.000}} {unit}"),
                ("wave", "@wave"),
            ]
            if tl.has_clock
            else [("block", "(@by, @bx)"), ("completed", "@left{0}")]
        )
        add_hover(gf, q, tips)
        self.sources["gantt_sel"] = ColumnDataSource(
            {"left": [], "right": [], "bottom": [], "top": []}
        )
        gf.quad(
            left="left",
            right="right",
            bottom="bottom",
            top="top",
            source=self.sources["gantt_sel"],
            fill_alpha=0,
            line_color=pal.TILE_OUTLINE,
            line_width=2.5,
        )
        now = Span(
            location=0, dimension="height", line_color=pal.TEXT, line_width=1.5, line_dash="dashed"
        )
        gf.add_layout(now)
        w = m.waves
        if w is not None:
            gf.title.text = (
                f"Blocks on the {g.rows} SMs of {self.trace.meta.get('device_name') or 'the GPU'}"
            )
            sub = w.describe()
        else:
            gf.title.text = "Blocks in the order they completed"
            sub = "the simulator runs one block at a time, on no real SM"
        gf.add_layout(_subtitle(sub, fs), "above")
        gf.name = "vizmm-sm-gantt"
        self.figures["gantt"] = gf

        # --- running blocks over time, waves shaded
        rf = self._fig(gw, 200, x_range, None, tools="")
        rf.xaxis.axis_label = xlabel
        rf.yaxis.axis_label = "blocks running"
        rf.xgrid.visible = False
        rf.ygrid.grid_line_color = pal.GRID_LINE
        wsrc = ColumnDataSource(wave_columns(m))
        self.sources["waves"] = wsrc
        bands = _bars(rf, wsrc)
        rsrc = ColumnDataSource(running_columns(m))
        self.sources["running"] = rsrc
        rf.step(
            "x",
            "y",
            source=rsrc,
            mode="after",
            line_color=pal.BLOCK_STATE_COLORS[BlockState.RUNNING],
            line_width=2,
        )
        if w is not None:
            add_hover(
                rf,
                bands,
                [
                    ("wave", "@wave"),
                    ("blocks", "@size"),
                    ("from", f"@start{{0,0.000}} {unit}"),
                    ("to", f"@end{{0,0.000}} {unit}"),
                ],
            )
            cap = Span(
                location=w.slots,
                dimension="width",
                line_color=pal.MUTED,
                line_dash="dotted",
                line_width=1.5,
            )
            rf.add_layout(cap)
            rf.add_layout(
                Label(
                    x=x_end * 0.01,
                    y=w.slots,
                    text=(f"{w.slots} = {w.sms} SMs × {w.resident} resident blocks"),
                    text_font_size=f"{fs - 2}px",
                    text_color=pal.MUTED,
                    y_offset=3,
                    text_font=SANS,
                )
            )
            rf.title.text = (
                f"Blocks running at once: {w.n_waves:.2f} waves of up to {w.slots} blocks (shaded)"
            )
            rf.y_range = Range1d(start=0, end=w.slots * 1.12)
        else:
            rf.title.text = "Blocks running at once (the simulator runs one at a time)"
            rf.y_range = Range1d(start=0, end=1.5)
        now2 = Span(
            location=0, dimension="height", line_color=pal.TEXT, line_width=1.5, line_dash="dashed"
        )
        rf.add_layout(now2)
        self._now = (now, now2)
        self.figures["running"] = rf
        # the Gantt chart and the running blocks take the window's width left of the
        # grid (their natural width at most), so a 1280-pixel window needs no sideways scroll
        for fig in (gf, rf):
            fig.sizing_mode, fig.min_width, fig.max_width = "stretch_width", 360, gw
        return row(
            f,
            column(gf, rf, spacing=4, sizing_mode="stretch_width"),
            spacing=16,
            sizing_mode="stretch_width",
        )

    def _reads_panel(self):
        from bokeh.layouts import column, row
        from bokeh.models import (
            ColumnDataSource,
            LogColorMapper,
            LogTicker,
            NumeralTickFormatter,
            Range1d,
        )
        from bokeh.models.annotations import ColorBar
        from bokeh.models.widgets import Div

        rc = self.model.reads
        fs = self._font
        top = max(2.0, float(max(x.high.max() for x in (rc.m, rc.n, rc.m_naive, rc.n_naive))))
        # low 0.5: a single read still gets a visible colour; no read at all is NO_READS
        mapper = LogColorMapper(
            palette=list(pal.READS_RAMP), low=0.5, high=top * 1.02, low_color=pal.NO_READS
        )
        side = 300 if not self.presenter else 360
        j, k, l = self.trace.shape
        figs = {}
        kname = KERNEL_LABELS
        for name, rm in (
            ("M", rc.m),
            ("N", rc.n),
            ("M_naive", rc.m_naive),
            ("N_naive", rc.n_naive),
        ):
            rows, cols = rm.shape
            scale = side / max(rows, cols)
            f = self._map_fig(max(cols * scale, 300) + 60, rows * scale + 80, rows, cols)
            cell_r = int(rm.row_edges[1] - rm.row_edges[0]) if len(rm.row_edges) > 1 else 1
            cell_c = int(rm.col_edges[1] - rm.col_edges[0]) if len(rm.col_edges) > 1 else 1
            h, w = rm.mean.shape
            src = ColumnDataSource(read_columns(rm))
            self.sources[f"reads_{name}"] = src
            r = f.image(
                image="image",
                x=0,
                y=0,
                dw=w * cell_c,
                dh=h * cell_r,
                source=src,
                color_mapper=mapper,
            )
            f.rect(cols / 2, rows / 2, cols, rows, fill_alpha=0, line_color=pal.TEXT, line_width=1)
            add_hover(
                f,
                r,
                [
                    ("rows", "@r0 – @r1"),
                    ("columns", "@c0 – @c1"),
                    ("reads per element", "@image{0,0.[0]} (fewest @low, most @high)"),
                ],
            )
            matrix = name[0]
            naive = name.endswith("naive")
            what = kname["naive"] if naive else kname.get(self.trace.kernel, self.trace.kernel)
            f.title.text = f"{matrix} · {what}"
            f.add_layout(
                _subtitle(
                    _uniform_text(rm) + ("" if naive else f" · {rc.reduction:.1f}× fewer"), fs
                ),
                "above",
            )
            f.xaxis.axis_label = f"column of {matrix}"
            f.yaxis.axis_label = f"row of {matrix}"
            for axis in (f.xaxis, f.yaxis):
                axis.formatter = NumeralTickFormatter(format="0")
            figs[name] = f
        self.figures.update(figs)
        bar = ColorBar(
            color_mapper=mapper,
            ticker=LogTicker(),
            width=14,
            title="reads per element",
            title_text_font_size=f"{fs - 1}px",
            major_label_text_font_size=f"{fs - 2}px",
            label_standoff=6,
            title_text_font_style="normal",
            padding=4,
        )
        cb_fig = self._fig(110, side + 80, Range1d(start=0, end=1), Range1d(start=0, end=1))
        cb_fig.axis.visible = False
        cb_fig.grid.visible = False
        cb_fig.add_layout(bar, "left")
        cb_fig.rect("x", "y", 0, 0, source=ColumnDataSource({"x": [], "y": []}))
        grid = column(
            row(figs["M"], figs["M_naive"], spacing=12),
            row(figs["N"], figs["N_naive"], spacing=12),
            spacing=8,
        )
        factor = f"{rc.reduction:.1f}×" if math.isfinite(rc.reduction) else "–"
        head = Div(
            text=(
                f"<div style='font-family:{SANS};font-size:{fs + 2}px;color:{pal.TEXT}'>"
                f"<b>Global reads of M and N: {rc.measured:,} by the "
                f"{kname.get(self.trace.kernel, self.trace.kernel)} against {rc.naive:,} by the "
                f"naive kernel: {factor} fewer</b> (TILE_WIDTH {rc.tile_width}).<br>"
                f"<span style='font-size:{fs}px;color:{pal.TEXT}'>Each cell is "
                f"{_cell_words(rc.m)}; its colour is the mean reads per element. "
                f"{rc.note}</span></div>"
            ),
            width=2 * side + 260,
        )
        return column(head, row(grid, cb_fig), spacing=6)

    def _waits_panel(self):
        from bokeh.layouts import column, row
        from bokeh.models import ColumnDataSource, FixedTicker, NumeralTickFormatter, Range1d
        from bokeh.models.widgets import DataTable, Div, TableColumn

        fs = self._font
        hist = self.trace.wait_hist
        total = hist.sum(axis=(0, 1)) if hist.shape[0] else np.zeros(WAIT_BINS)
        used = np.flatnonzero(total)
        lo = int(np.min(used)) - 1 if len(used) else 0
        hi = int(np.max(used)) + 1 if len(used) else 16
        lo, hi = max(lo, -1), min(hi, WAIT_BINS)
        f = self._fig(700, 330, Range1d(start=lo - 0.6, end=hi + 0.6), None, tools="")
        f.xgrid.visible = False
        f.ygrid.grid_line_color = pal.GRID_LINE
        src = ColumnDataSource(wait_columns(wait_distribution(self.trace, None)))
        self.sources["waits"] = src
        bars = _bars(f, src)
        add_hover(
            f,
            bars,
            [
                ("", "@barrier"),
                ("arrival spread", "@cycles cycles"),
                ("blocks", "@blocks"),
            ],
        )
        ticks = list(range(max(lo, 0), hi + 1))
        f.xaxis.ticker = FixedTicker(ticks=ticks)
        f.xaxis.major_label_overrides = {i: _short_bin(i) for i in ticks}
        f.xaxis.axis_label = "arrival spread (%clock64 cycles; log2 bins, from this many)"
        f.yaxis.axis_label = "blocks × phases"
        f.yaxis.formatter = NumeralTickFormatter(format="0,0")
        self._waits_sub = _subtitle("", fs)
        f.add_layout(self._waits_sub, "above")
        self._legend(f, [(BARRIERS[b], pal.BARRIER_COLORS[b], "fill") for b in (0, 1)], columns=1)
        self.figures["waits"] = f
        self._waits_note = Div(
            text="", width=700, styles={"font-size": f"{fs - 1}px", "color": pal.TEXT}
        )
        tsrc = ColumnDataSource(slowest_columns(slowest_blocks(self.trace, 0, 0)))
        self.sources["slowest"] = tsrc
        columns = [
            TableColumn(field="block", title="block (by, bx)", width=95),
            TableColumn(field="sm", title="SM", width=40),
            TableColumn(field="spread", title="spread (cycles)", width=95),
            TableColumn(field="worst", title="in phase", width=60),
            TableColumn(field="mean", title="mean (cycles)", width=90),
            TableColumn(field="detail", title="per thread", width=90),
        ]
        table = DataTable(
            source=tsrc,
            columns=columns,
            width=500,
            height=330,
            index_position=None,
            sortable=False,
            selectable=True,
        )
        self.figures["slowest"] = table
        self._slowest_note = Div(
            text="", width=500, styles={"font-size": f"{fs - 1}px", "color": pal.TEXT}
        )
        if not len(used):  # no clocks (simulator) or no summaries: say so, draw nothing
            f.visible = table.visible = self._slowest_note.visible = False
        return row(column(f, self._waits_note), column(self._slowest_note, table), spacing=20)


def _bars(f, source):
    """Bars from 0 up to ``top`` between ``left`` and ``right``, filled by ``fill`` (columns)."""
    return f.quad(
        left="left",
        right="right",
        bottom=0,
        top="top",
        source=source,
        fill_color="fill",
        line_color=None,
    )


def _subtitle(text: str, fs: int):
    from bokeh.models.annotations import Title

    return Title(
        text=text,
        text_font_size=f"{fs - 1}px",
        text_font_style="normal",
        text_color=pal.TEXT,
        text_font=SANS,
    )


def _short_bin(b: int) -> str:
    """Lower edge of bin ``b`` in cycles, short: 0, 1, 2, 4, … 512, 1k, 2k, … 1M."""
    if b <= 0:
        return "0"
    v = 2 ** (b - 1)
    for div, suffix in ((2**20, "M"), (2**10, "k")):
        if v >= div:
            return f"{v // div}{suffix}"
    return str(v)


def _cell_words(rm: ReadMap) -> str:
    pr, pc = rm.tiles_per_cell
    if (pr, pc) == (1, 1):
        return "one tile (TILE_WIDTH × TILE_WIDTH elements)"
    return f"{pr} × {pc} tiles"
