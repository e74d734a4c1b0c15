"""The book's Fig. 5.8 table for the replayed block, the current cell highlighted.

Drawn as HTML by the Bokeh scene and the HTML export only (the GIF and MP4
frames have no room for it); the terminal's table is :mod:`vizmm.render.text`.
"""

from __future__ import annotations

import weakref

from ...replay import Frame, SlotState, ThreadState
from ...replay.table import Table, block_table
from ...trace import Trace
from ...trace.derived import kept
from .. import palette as pal
from ..columns import (
    MONO,
    TABLE_PHASES,
    TABLE_ROWS,
    FrameContext,
    _add_row,
    _columns_of,
    _uni,
)
from . import ViewSpec, register

__all__ = ["TABLE_KIND", "table_extent"]


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


def _shown(frame: Frame, columns: list, nph: int, nrows: int, T: int):
    """The columns, rows shown and the number of rows left out.

    The columns of all phases, or of a window of TABLE_PHASES around the
    current one; all rows, or a window around the followed thread.
    """
    first = min(max(0, frame.table_cursor.phase - TABLE_PHASES + 2), max(0, nph - TABLE_PHASES))
    shown_ph = set(range(first, first + TABLE_PHASES))
    show = [n for n, c in enumerate(columns) if c.phase is None or c.phase in shown_ph]
    if nrows <= TABLE_ROWS:
        return show, list(range(nrows)), 0
    f = frame.focus[0] * T + frame.focus[1] if frame.focus is not None else 0
    start = min(max(0, f - 3), nrows - (TABLE_ROWS - 1))
    rows = list(range(start, start + TABLE_ROWS - 1))
    return show, rows, nrows - len(rows)


def _header(add, show: list[int], columns: list, widths, heads, xs, th: pal.Palette) -> None:
    """The table's two header lines: the group row, then the columns' short names."""
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


def _cell_look(cell, c, is_current: bool, past: bool, focused: bool, kind_fill, th):
    """A body cell's fill, text colour, outline and type: current, done, future, heading."""
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
    line = th.TILE_OUTLINE if is_current else (th.FOCUS if focused else th.GRID_LINE)
    style = "bold" if (focused or is_current) else "normal"
    return fill, color, line, style


def _table_columns(
    frame: Frame, trace: Trace, th: pal.Palette, conceal: bool = False
) -> dict[str, list]:
    block = (int(frame.block[0]), int(frame.block[1]))
    if frame.table is None:  # a frame made by hand: nothing to draw
        return _columns_of("table")
    table, keep, texts, heads, widths = _table_layout(trace, block, frame.table)
    T = trace.tile_width
    columns = [table.columns[i] for i in keep]
    show, rows, more = _shown(frame, columns, len(table.phases), len(table.rows), T)
    current, done = frame.table_cursor.current, frame.table_cursor.done
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
    _header(add, show, columns, widths, heads, xs, th)
    # body
    for y, r in enumerate(rows, start=2):
        row = table.rows[r]
        for n in show:
            cell, c = row[keep[n]], columns[n]
            is_current = current is not None and (c.phase, c.role) == current
            past = done(c.phase, c.role)
            fill, color, line, style = _cell_look(
                cell, c, is_current, past, r == focus_row, kind_fill, th
            )
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


def _draw_table(scene):
    width, lines = table_extent(scene.trace)
    box = scene._text_box(width, lines + 1, pad=0.2)
    return scene._text_view("table", box, font=MONO, size_px=scene.sizes.mono)


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
        The trace whose Fig. 5.8 tables are measured (any size, any kernel).

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


#: The table's columns: one box per cell of Fig. 5.8.
TABLE_KIND = {
    "table": ("x", "y", "w", "h", "tx", "fill", "line_color", "text", "text_color")
    + ("font_style", "note")
}


def _table(ctx: FrameContext, want: frozenset[str]) -> dict[str, dict[str, list]]:
    return {"table": _table_columns(ctx.frame, ctx.trace, ctx.th, ctx.conceal)}


register(
    ViewSpec(
        name="table",
        order=11,
        aspects=("table",),
        sources={"table": "table"},
        columns=_table,
        kinds=TABLE_KIND,
        html=True,
        draw_bokeh=_draw_table,
        place="bottom",
    )
)
