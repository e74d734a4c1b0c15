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

from ...replay import Frame, SlotState
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
from ..tiles import tile_arrays
from . import ViewSpec, register

if TYPE_CHECKING:
    from ..scene_parts import GridPlace

__all__ = ["TILE_KINDS", "TILE_HOVER"]


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


def _draw_shared(scene, name, f) -> GridPlace:
    from ..scene_parts import _cells, _centred_text, _hover

    T, s = scene.trace.tile_width, scene.sizes
    g = scene._grid_fig(f, scene._grid_box(name, T, T, s.scell, f"{name} (shared)"))
    src = scene.sources[name]
    add = scene._adder(f, grid=name)
    r = _cells(add, src, 1)
    if s.shared_text:
        size = f"{max(10, min(s.font + 3, int(s.scell * 0.22)))}px"
        _centred_text(add, src, size, text_line_height=1.15)
    scene._main[name] = r
    _hover(f, r, "slots", name)

    def banks() -> None:
        # Transactions view, at a step of the k loop: the bank of each slot's
        # word (a band across the slot's foot), the current warp's conflicts.
        src = scene.sources[f"{name}_bank"]
        bank = _cells(add, src, 0.92, 0.22)
        if s.scell >= 24:
            _centred_text(add, src, f"{max(8, min(s.font - 2, int(s.scell * 0.17)))}px")
        _hover(f, bank, "bank")

    scene._later_part("transactions", f, banks)
    scene._finding_glyph(f, name)
    return g


def _draw_threads(scene, f) -> GridPlace:
    from bokeh.models import TapTool

    from ..scene_parts import _cells, _centred_text, _hover

    T, s = scene.trace.tile_width, scene.sizes
    g = scene._grid_fig(f, scene._grid_box("threads", T, T, s.scell, "threads (ty, tx)"))
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
    scene._main["threads"] = r
    _hover(f, r, "threads")
    scene._finding_glyph(f, "threads")
    f.add_tools(TapTool(renderers=[r]))

    def warp() -> None:  # the current warp's threads, outlined (transactions view)
        add(
            "Rect",
            scene.sources["warp_threads"],
            x="x",
            y="y",
            width=1.0,
            height=1.0,
            fill_alpha=0,
            line_color=scene.palette.FOCUS,
            line_width=2,
            line_dash="dashed",
            name="vizmm-warp-threads",
        )

    scene._later_part("transactions", f, warp)
    return g


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


def _tile_spec(name: str, order: int, aspects: tuple[str, ...], sources: dict) -> ViewSpec:
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
        markable=True,
        pickable=True,
    )


for _order, _name in ((4, "Mds"), (5, "Nds")):
    register(
        _tile_spec(
            _name,
            _order,
            ("slots", "transactions", "findings"),
            {_name: "slots", f"{_name}_bank": "bank"},
        )
    )
register(
    _tile_spec(
        "threads",
        6,
        ("threads", "transactions", "findings"),
        {"threads": "threads", "warp_threads": "cells"},
    )
)
