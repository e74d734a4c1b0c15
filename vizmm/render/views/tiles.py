"""The block's shared memory, Mds and Nds, and its T x T threads.

Drawn by the Bokeh scene on its tiles plot (Mds and Nds side by side, the
threads under them) and by the Pillow renderer; kept for large traces. The
banks of each slot and the current warp's threads are the transactions view's
parts of these grids; the per-warp row is a view of its own
(:mod:`vizmm.render.views.transactions`).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from ...replay import Frame, SlotState, ThreadState
from .. import palette as pal
from ..columns import (
    _NAN_TEXT,
    FINDING_HOVER,
    FINDING_KIND,
    FrameContext,
    _add_row,
    _cells_at,
    _columns_of,
    _fmt,
    _grid_positions,
    _slot_label,
    _sub,
    _text_on,
    _uni,
    thread_label,
)
from ..text import format_value
from ..tiles import tile_arrays
from . import GridSpec, ViewSpec, below, beside, parts, register
from .transactions import TRANSACTIONS

if TYPE_CHECKING:
    from ..pillow import _Panel
    from ..scene_parts import GridPlace

__all__ = ["TILE_KINDS", "TILE_HOVER", "TILES_PLOT"]


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


#: The columns of the shared-memory and thread grids' sources.
TILE_KINDS = {
    "slots": ("x", "y", "ty", "tx", "fill", "line_color", "line_width", "text", "text_color")
    + ("state", "element", "value", "loader"),
    "bank": ("x", "y", "fill", "text", "text_color", "line_color", "line_width", "bank", "note"),
    "threads": ("x", "y", "sx", "sy", "ax", "ay", "ty", "tx", "ident", "fill", "line_color")
    + ("line_width", "text", "text_color", "state", "word", "pvalue", "valid", "ahead_alpha"),
    "cells": ("x", "y"),  # outlined cells: the threads of the current warp
}
#: What hovering over a slot, a bank and a thread says.
TILE_HOVER = {
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
}


def _shared_box(name: str):
    """``box(scene)`` of shared tile ``name``'s grid (a :attr:`GridSpec.box`)."""

    def box(scene) -> GridPlace:
        T = scene.trace.tile_width
        return scene._grid_box(name, T, T, scene.sizes.scell, f"{name} (shared)")

    return box


def _draw_shared(name: str):
    """``draw(scene, f, box)`` of shared tile ``name``'s grid (a :attr:`GridSpec.draw`)."""

    def draw(scene, f, box: GridPlace):
        return _draw_slots(scene, f, name)

    return draw


def _draw_slots(scene, f, name: str):
    """Shared tile ``name`` (Mds, Nds) on plot ``f``: its cells' renderer; its banks drawn later."""
    from ..scene_parts import _cells, _centred_text, _hover

    s = scene.sizes
    src = scene.sources[name]
    add = scene._adder(f, grid=name)
    r = _cells(add, src, 1)
    if s.shared_text:
        size = f"{max(10, min(s.font + 3, int(s.scell * 0.22)))}px"
        _centred_text(add, src, size, text_line_height=1.15)
    _hover(f, r, "slots", name)

    def banks() -> None:
        # Transactions view, at a step of the k loop: the bank of each slot's
        # word (a band across the slot's foot), the current warp's conflicts.
        src = scene.sources[f"{name}_bank"]
        bank = _cells(add, src, 0.92, 0.22)
        if s.scell >= 24:
            _centred_text(add, src, f"{max(8, min(s.font - 2, int(s.scell * 0.17)))}px")
        _hover(f, bank, "bank")

    scene._later_part(TRANSACTIONS.name, f, banks)
    scene._finding_glyph(f, name)
    return r


def _threads_box(scene) -> GridPlace:
    """The thread grid's box (a :attr:`GridSpec.box`): T x T cells."""
    T = scene.trace.tile_width
    return scene._grid_box("threads", T, T, scene.sizes.scell, "threads (ty, tx)")


def _draw_threads(scene, f, box: GridPlace):
    """The T x T threads on plot ``f`` (a :attr:`GridSpec.draw`): its cells' renderer."""
    from bokeh.models import TapTool

    from ..scene_parts import _cells, _centred_text, _hover, _outlines

    s = scene.sizes
    src = scene.sources["threads"]
    add = scene._adder(f, selectable=True, grid="threads")
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
            line_color=scene.palette.TEXT,
            line_width=0.5,
            nonselection_fill_alpha=1.0,
        )
    if s.shared_text:
        size = f"{max(10, min(s.font + 2, int(s.scell * 0.2)))}px"
        _centred_text(add, src, size, text_line_height=1.15)
    # Barrier lab: a right-pointing triangle on a thread that ran ahead of another
    # (only a recording of the shared reads has such threads: the replay's notes).
    if scene.trace.shared_reads.size:
        add(
            "Scatter",
            src,
            x="ax",
            y="ay",
            marker="triangle",
            angle=-math.pi / 2,
            size=max(9, int(s.scell * 0.22)),
            fill_color=scene.palette.AHEAD,
            line_color=scene.palette.TEXT,
            line_width=1.0,
            fill_alpha="ahead_alpha",
            line_alpha="ahead_alpha",
            nonselection_fill_alpha="ahead_alpha",
            nonselection_line_alpha="ahead_alpha",
            name="vizmm-ahead",
        )
    _hover(f, r, "threads")
    scene._finding_glyph(f, "threads")
    f.add_tools(TapTool(renderers=[r]))

    def warp() -> None:  # the current warp's threads, outlined (transactions view)
        _outlines(
            add,
            scene.sources["warp_threads"],
            1.0,
            line_color=scene.palette.FOCUS,
            line_width=2,
            line_dash="dashed",
            name="vizmm-warp-threads",
        )

    # over the finding's outlines (a rank of its own)
    scene._later_part(TRANSACTIONS.name, f, warp, rank=3)
    return r


# ------------------------------------------------ Pillow (GIF and MP4 frames)
def _pillow_shared(renderer, img, draw, frame: Frame, p: _Panel):
    from ..pillow_text import _draw_text, _ink_on, _rgb

    which = p.name[0]  # 'M' or 'N'
    st, src, val, now, read, focus, loader, wrong = tile_arrays(
        frame, which, "state", "src", "value", "now", "read", "focus", "loader", "wrong"
    )
    T = renderer.T
    colors = np.empty((T, T, 3), np.uint8)
    for ty in range(T):
        for tx in range(T):
            t = ty * T + tx if loader is None else int(loader[ty, tx])
            colors[ty, tx] = _pillow_slot_rgb(renderer, st[ty, tx], now[ty, tx], t)
    renderer._paint_cells(img, p, colors)
    renderer._tile_frame(draw, p, T)
    # labels: the element held (M_{0,2}) or 0.0; its value underneath
    big = renderer._max_index()
    one, two = renderer._cell_fonts(p, lambda fs: renderer._sub_w(which, f"{big},{big}", fs))
    if one is not None:
        fs = two if two is not None else one
        for ty in range(T):
            for tx in range(T):
                x0, y0, x1, y1 = p.cell_box(ty, tx)
                cx = (x0 + x1) / 2
                s = SlotState(int(st[ty, tx]))
                ink = _ink_on(tuple(int(v) for v in colors[ty, tx]))
                if s == SlotState.STALE:
                    ink = _rgb(renderer.pal.MUTED)
                cy = y0 + p.cell * (0.34 if two is not None else 0.5)
                if s == SlotState.ZERO:
                    _draw_text(draw, (cx, (y0 + y1) / 2), "0.0", fs, ink, "mm")
                    continue
                if src[ty, tx, 0] >= 0:
                    renderer._sub_text(
                        draw, cx, cy, which, f"{src[ty, tx, 0]},{src[ty, tx, 1]}", fs, ink
                    )
                else:
                    _draw_text(draw, (cx, cy), "?", fs, ink, "mm")
                if two is not None and src[ty, tx, 0] >= 0:
                    renderer._value_text(draw, cx, y0 + p.cell * 0.72, val[ty, tx], two, ink)
    tw = max(2, min(round(p.cell * 0.09), round(renderer.fs_body * 0.35)))
    rr, cc = np.nonzero(read)
    if len(rr):  # the column / row read at this k, outlined as one band
        renderer._outline(
            draw,
            p,
            int(rr.min()),
            int(cc.min()),
            int(rr.max() - rr.min() + 1),
            int(cc.max() - cc.min() + 1),
            _rgb(renderer.pal.READ),
            tw + 1,
        )
    for r, c in zip(*np.nonzero(focus), strict=True):
        renderer._outline(draw, p, int(r), int(c), 1, 1, _rgb(renderer.pal.FOCUS), tw)
    if wrong is not None:  # barrier lab: a read of this slot found the wrong element
        bad = _rgb(renderer.pal.SLOT_COLORS[SlotState.WRONG])
        for r, c in zip(*np.nonzero(wrong), strict=True):
            renderer._outline(draw, p, int(r), int(c), 1, 1, bad, tw + 1)
    _pillow_banks(renderer, draw, frame, p, which, tw)
    renderer._draw_heading(draw, p)


def _pillow_banks(renderer, draw, frame: Frame, p: _Panel, which: str, tw: int):
    """Transactions view at a step of the k loop: each slot's bank, the warp's conflicts."""
    from ..pillow_text import _draw_text, _ink_on, _rgb, _text_w

    o = frame.transactions
    bank, conflict, read = (
        (None,) * 3 if o is None else tile_arrays(o, which, "bank", "conflict", "read")
    )
    if bank is None or conflict is None or read is None:
        return
    colors = [_rgb(c) for c in renderer.pal.thread_colors(32)]
    band = max(3, round(p.cell * 0.22))
    fs = max(7, min(renderer.fs_small, round(band * 0.8)))
    show = band >= 9 and _text_w("b31", fs) < p.cell * 0.9
    for r in range(renderer.T):
        for c in range(renderer.T):
            x0, y0, x1, y1 = p.cell_box(r, c)
            b = int(bank[r, c])
            box = (x0 + 1, y1 - band, x1 - 1, y1 - 1)
            draw.rectangle(box, fill=colors[b])
            if show:
                _draw_text(
                    draw, ((x0 + x1) / 2, y1 - band / 2), f"b{b}", fs, _ink_on(colors[b]), "mm"
                )
            if conflict[r, c]:
                renderer._outline(draw, p, r, c, 1, 1, _rgb(renderer.pal.TILE_OUTLINE), tw + 1)
            elif read[r, c]:
                renderer._outline(draw, p, r, c, 1, 1, _rgb(renderer.pal.TEXT), max(1, tw - 1))


def _pillow_slot_rgb(renderer, state, now, t):
    from ..pillow_text import _rgb

    s = SlotState(int(state))
    if now and s == SlotState.LOADED:
        return renderer.thread_colors[t]
    return _rgb(renderer.pal.SLOT_COLORS[s])


def _pillow_threads(renderer, img, draw, frame: Frame, p: _Panel):
    from ..pillow_text import _draw_text, _ink_on, _rgb, _text_w

    T = renderer.T
    lut = {s: _rgb(c) for s, c in renderer.pal.THREAD_STATE_COLORS.items()}
    colors = np.empty((T, T, 3), np.uint8)
    for ty in range(T):
        for tx in range(T):
            colors[ty, tx] = lut[ThreadState(int(frame.thread_state[ty, tx]))]
    renderer._paint_cells(img, p, colors)
    band = max(2, round(p.cell * 0.14)) if p.cell >= 24 else 0
    if band:
        for ty in range(T):
            for tx in range(T):
                x0, y0, x1, _ = p.cell_box(ty, tx)
                draw.rectangle(
                    (x0, y0, x1 - 1, y0 + band - 1), fill=renderer.thread_colors[ty * T + tx]
                )
    renderer._tile_frame(draw, p, T)
    one, two = renderer._cell_fonts(p, lambda fs: _text_w("Pv 9999.0", fs))
    if one is not None:
        for ty in range(T):
            for tx in range(T):
                x0, y0, x1, y1 = p.cell_box(ty, tx)
                cx = (x0 + x1) / 2
                ink = _ink_on(tuple(int(v) for v in colors[ty, tx]))
                inner = y0 + band
                h = y1 - inner
                rank = int(frame.thread_rank[ty, tx])
                if two is not None:
                    _draw_text(draw, (cx, inner + h * 0.3), f"({ty},{tx})", two, ink, "mm")
                    pv = "Pv " + format_value(float(frame.pvalue[ty, tx]))
                    if not frame.thread_valid[ty, tx]:
                        pv = "no P"
                    _draw_text(draw, (cx, inner + h * 0.72), pv, two, ink, "mm")
                else:
                    _draw_text(draw, (cx, inner + h / 2), f"{ty},{tx}", one, ink, "mm")
                if (
                    rank >= 0
                    and two is not None
                    and frame.step.arrived is not None
                    and (frame.step.arrived < T * T)
                ):
                    _draw_text(
                        draw, (x1 - 3, inner + 2), f"#{rank + 1}", max(8, two - 3), ink, "rt"
                    )
    if frame.focus is not None:
        fy, fx = frame.focus
        renderer._outline(
            draw, p, fy, fx, 1, 1, _rgb(renderer.pal.FOCUS), max(2, round(p.cell * 0.09))
        )
    if frame.thread_wrong is not None:  # barrier lab: read the wrong element here
        bad = _rgb(renderer.pal.SLOT_COLORS[SlotState.WRONG])
        for ty, tx in zip(*np.nonzero(frame.thread_wrong), strict=True):
            renderer._outline(draw, p, int(ty), int(tx), 1, 1, bad, max(3, round(p.cell * 0.1)))
    if frame.thread_ahead is not None:  # barrier lab: ran ahead of another thread
        for ty, tx in zip(*np.nonzero(frame.thread_ahead), strict=True):
            x0, y0, x1, _ = p.cell_box(int(ty), int(tx))
            renderer._ahead_mark(draw, x1 - p.cell * 0.2, y0 + p.cell * 0.2, p.cell * 0.22)
    for part in parts("threads"):  # the per-warp row, under the grid
        if part.draw_pillow is not None:
            part.draw_pillow(renderer, img, draw, frame, p)
    renderer._draw_heading(draw, p)


def _columns(ctx: FrameContext, want: frozenset[str]) -> dict[str, dict[str, list]]:
    """The columns of the tiles' sources in ``want``."""
    frame, th = ctx.frame, ctx.th
    makers = {
        "Mds": lambda: _shared_columns(frame, "M", th),
        "Mds_bank": lambda: _bank_columns(frame, "M", th),
        "Nds": lambda: _shared_columns(frame, "N", th),
        "Nds_bank": lambda: _bank_columns(frame, "N", th),
        "threads": lambda: _thread_columns(frame, th),
        "warp_threads": lambda: _warp_thread_columns(frame),
    }
    return {name: make() for name, make in makers.items() if name in want}


def _tile_spec(
    name: str,
    order: int,
    aspects: tuple[str, ...],
    sources: dict,
    draw_pillow,
    grid: GridSpec,
    tap: bool = False,
) -> ViewSpec:
    """The spec of one grid of the tiles plot (Mds, Nds, threads)."""
    return ViewSpec(
        name=name,
        order=order,
        aspects=aspects,
        sources=sources,
        columns=_columns,
        kinds={**TILE_KINDS, **FINDING_KIND},
        hover={**TILE_HOVER, **FINDING_HOVER},
        pillow=True,
        light=True,
        presenter=True,
        draw_pillow=draw_pillow,
        grids=(grid,),
        tap=tap,
        finding_width=4,
    )


#: The plot Mds, Nds and the threads share (and the blocks, where the matrices'
#: corner is too small for them): Mds and Nds side by side, the threads under them.
TILES_PLOT = "vizmm-tiles"


for _order, _name in ((4, "Mds"), (5, "Nds")):
    register(
        _tile_spec(
            _name,
            _order,
            ("slots", "focus", "transactions", "lab"),
            {_name: "slots", f"{_name}_bank": "bank"},
            _pillow_shared,
            GridSpec(
                TILES_PLOT,
                "middle",
                _shared_box(_name),
                lambda scene, boxes, placed: beside(placed),
                _draw_shared(_name),
            ),
        )
    )
register(
    _tile_spec(
        "threads",
        6,
        ("threads", "transactions", "lab"),
        {"threads": "threads", "warp_threads": "cells"},
        _pillow_threads,
        GridSpec(
            TILES_PLOT,
            "middle",
            _threads_box,
            lambda scene, boxes, placed: below(placed),
            _draw_threads,
        ),
        tap=True,
    )
)
