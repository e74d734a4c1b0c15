"""The text views: the caption, the kernel's source, the counters and the legend.

Each is drawn as HTML in a Bokeh ``Div`` by the scene (:mod:`vizmm.render.html_text`);
the Pillow renderer writes the caption, source line and counters in its header
and draws the legend under the panels.
"""

from __future__ import annotations

import dataclasses
import math
import textwrap
from functools import lru_cache

from ...replay import CellState, Frame, SlotState, ThreadState
from ...trace import Trace, ceil_div
from .. import palette as pal
from ..columns import (
    CAPTION_CHARS,
    COUNTER_CHARS,
    MONO,
    PHASES_PER_LINE,
    SANS,
    FrameContext,
    _add_row,
    _columns_of,
    _fmt,
    _text_lines,
)
from ..html_text import TextBox
from . import ViewSpec, register

__all__ = ["struck_out", "TEXT_KINDS"]


def _caption_columns(frame: Frame, th: pal.Palette, chars: int = CAPTION_CHARS) -> dict[str, list]:
    title = f"Step {frame.index + 1} of {frame.count} · {frame.title}"
    lines = [(line, "bold", th.TEXT) for line in textwrap.wrap(title, chars)[:2]]
    caption = textwrap.wrap(frame.caption, chars, break_on_hyphens=False)
    for line in caption[: 4 - len(lines)]:
        lines.append((line, "normal", th.TEXT))
    while len(lines) < 4:
        lines.append(("", "normal", th.TEXT))
    return _text_lines(lines)


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


def _legend_entries(scene) -> list[tuple[str, str | None]]:
    """The legend's lines: (label, colour), None for a heading."""
    entries: list[tuple[str, str | None]] = [("Threads", None)]
    for st, label in scene.palette.THREAD_STATE_LABELS.items():
        if st in (ThreadState.READY, ThreadState.DONE):
            continue
        entries.append((label, scene.palette.THREAD_STATE_COLORS[st]))
    entries.append(("Mds / Nds slots", None))
    for slot in (
        SlotState.LOADED,
        SlotState.STALE,
        SlotState.ZERO,
        SlotState.WRONG,
        SlotState.SKIPPED,
        SlotState.EMPTY,
    ):
        entries.append((scene.palette.SLOT_LABELS[slot], scene.palette.SLOT_COLORS[slot]))
    entries.append(("M, N, P elements", None))
    entries.append(("being loaded: colour of its thread", scene.palette.thread_colors(4)[1]))
    for cell in (CellState.TILE, CellState.READING, CellState.DONE, CellState.COMPUTING):
        label = scene.palette.CELL_LABELS[cell]
        if cell == CellState.DONE:
            label = "loaded in an earlier phase"
        entries.append((label, scene.palette.CELL_COLORS[cell]))
    entries += [
        ("P element written", scene.palette.P_WRITTEN_COLOR),
        ("current tile (outline)", "outline"),
        ("followed thread (outline)", "focus"),
    ]
    if scene.trace.shared_reads.size:  # a barrier-lab recording: its marks
        entries += [
            ("Barrier lab", None),
            ("read a wrong element (✗, outline)", "wrong"),
            ("ran ahead of another thread (▶)", scene.palette.AHEAD),
        ]
    return entries


def _legend_box(scene) -> TextBox:
    """The legend's box: one column of its lines."""
    entries = _legend_entries(scene)
    width_chars = max(len(label) for label, _ in entries) + 5
    fs = max(10, scene.sizes.font - 2)
    return TextBox(
        width=int(width_chars * 0.55 * fs + 10),
        height=int(len(entries) * fs * 1.6 + 8),
        x0=0,
        x1=width_chars,
        lines=len(entries),
        border=2,
    )


def _legend_width(scene) -> int:
    """The legend's width, pixels, before it is drawn (a page fitted to a window keeps room)."""
    return _legend_box(scene).width


def _draw_legend(scene):
    s = scene.sizes
    entries = _legend_entries(scene)
    swatches: dict[str, list] = {"x": [], "y": [], "fill": [], "line": []}
    labels: dict[str, list] = {"x": [], "y": [], "text": [], "style": []}
    for r, (label, color) in enumerate(entries):  # one column: as narrow as Mds + Nds
        if color is None:
            labels["x"].append(0)
            labels["style"].append("bold")
        else:
            fill, line = color, scene.palette.MUTED
            if color == "outline":
                fill, line = scene.palette.BACKGROUND, scene.palette.TILE_OUTLINE
            elif color == "focus":
                fill, line = scene.palette.BACKGROUND, scene.palette.FOCUS
            elif color == "wrong":
                fill, line = scene.palette.BACKGROUND, scene.palette.WRONG
            swatches["x"].append(1.2)
            swatches["y"].append(r + 0.5)
            swatches["fill"].append(fill)
            swatches["line"].append(line)
            labels["x"].append(2.6)
            labels["style"].append("normal")
        labels["y"].append(r + 0.5)
        labels["text"].append(label)
    fs = max(10, s.font - 2)
    return scene._text_view(
        "legend",
        _legend_box(scene),
        {"swatches": swatches, "labels": labels},
        font=SANS,
        size_px=fs,
        text_color=scene.palette.TEXT,
    )


def _draw_source(scene):
    lines = _source_lines(scene.trace.meta.get("source", "") or "")
    width = max(len(x) for x in lines) + 3
    box = dataclasses.replace(scene._text_box(width + 2, len(lines)), x0=-2.2)
    return scene._text_view(
        "source",
        box,
        font=MONO,
        size_px=scene.sizes.mono,
        text_color=scene.palette.TEXT,
        marker_color=scene.palette.TILE_OUTLINE,
    )


def _draw_counters(scene):
    s = scene.sizes
    pvalue_lines = max(1, ceil_div(scene.trace.n_phases, PHASES_PER_LINE))
    lines = 7 + pvalue_lines + 2 + 3  # + transactions
    box = scene._text_box(COUNTER_CHARS, lines)
    return scene._text_view("counters", box, font=MONO, size_px=s.mono, small_px=max(9, s.mono - 1))


def _draw_caption(scene):
    s = scene.sizes
    box = scene._text_box(s.caption_chars, 4)
    # proportional font: about 0.6 em per character, bold included
    width = int(s.caption_chars * 0.6 * (s.font + 1) + 20)
    box = dataclasses.replace(box, width=width, x1=(width - 12) / (0.6 * (s.font + 1)))
    return scene._text_view("caption", box, font=SANS, size_px=s.font + 1)


#: The columns of the text views' sources: one row per line (caption, counters),
#: the source's lines with their marks, the counters' bars.
TEXT_KINDS = {
    "caption": ("x", "y", "text", "font_style", "color"),
    "source": ("x", "y", "text", "bg", "bg_alpha", "marker", "font_style"),
    "counters": ("x", "y", "text", "font_style", "color"),
    "bars": ("x", "y", "w", "fill", "label", "lx", "label_color"),
}


def _caption(ctx: FrameContext, want: frozenset[str]) -> dict[str, dict[str, list]]:
    return {"caption": _caption_columns(ctx.frame, ctx.th, ctx.caption_chars)}


def _source(ctx: FrameContext, want: frozenset[str]) -> dict[str, dict[str, list]]:
    return {"source": _source_columns(ctx.frame, ctx.trace, ctx.th)}


def _counters(ctx: FrameContext, want: frozenset[str]) -> dict[str, dict[str, list]]:
    counters, bars = _counter_columns(ctx.frame, ctx.trace, ctx.th)
    return {k: v for k, v in (("counters", counters), ("bars", bars)) if k in want}


def _text_spec(
    name: str,
    order: int,
    aspects: tuple[str, ...],
    draw_bokeh,
    place: str,
    sources: tuple[str, ...] = (),
    columns=None,
    presenter: bool = False,
    page_width=None,
) -> ViewSpec:
    """The spec of a text view: HTML on a page, drawn by Pillow, kept for a large trace.

    ``sources`` are of :data:`TEXT_KINDS`, each named as its kind.
    """
    return ViewSpec(
        name=name,
        order=order,
        aspects=aspects,
        sources={kind: kind for kind in sources},
        columns=columns,
        kinds={kind: TEXT_KINDS[kind] for kind in sources},
        presenter=presenter,
        page_width=page_width,
        draw_bokeh=draw_bokeh,
        place=place,
        html=True,
        pillow=True,
        light=True,
    )


register(
    _text_spec(
        "caption", 0, ("caption",), _draw_caption, "top", ("caption",), _caption, presenter=True
    )
)
register(_text_spec("legend", 7, (), _draw_legend, "middle", page_width=_legend_width))
register(_text_spec("source", 8, ("source",), _draw_source, "right", ("source",), _source))
register(
    _text_spec(
        "counters",
        9,
        ("counters", "threads", "transactions"),
        _draw_counters,
        "right",
        ("counters", "bars"),
        _counters,
    )
)
