"""The matrices M, N and P (Fig. 5.7 / 5.10): their cells, outlines and Pvalues so far.

Drawn by the Bokeh scene on its matrices plot (N above P, M left of P) and by
the Pillow renderer; a large trace leaves them out (they are drawn element by
element).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from ...replay import CellState, Frame, SlotState, ThreadState
from ...trace import Access, Trace
from ...trace.derived import per_trace
from .. import palette as pal
from ..columns import (
    DIGIT_EM,
    FINDING_HOVER,
    FINDING_KIND,
    P_WRITTEN,
    THREAD_CODE,
    FrameContext,
    _add_cell,
    _add_row,
    _columns_of,
    _fmt,
    _sub,
    _uni,
    matrix_palette,
)
from . import GridSpec, ViewSpec, register

if TYPE_CHECKING:
    from ..pillow import _Panel
    from ..scene_parts import GridPlace

__all__ = ["MATRIX_KINDS", "MATRIX_HOVER", "MATRICES_PLOT"]


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


#: The columns of a matrix's sources.
MATRIX_KINDS = {
    "matrix": ("x", "y", "row", "col", "name", "final", "text", "code"),
    "P_pvalue": ("x", "y", "name", "text", "thread", "code"),
    # what one glyph draws over a matrix's cells, in this order: the matrix's edge,
    # its ghost cells (tiles overhanging it: hatched, with text and a tooltip), the
    # current tile, the followed thread's elements, the transactions view's
    # segments and sectors of the warp (see _outline_columns)
    "outline": ("x", "y", "w", "h", "fill", "hatch", "line_color", "line_width", "line_dash")
    + ("text", "text_color", "name", "state", "loader"),
}
#: What hovering over a matrix's cells and ghost cells says.
MATRIX_HOVER = {
    "matrix": (("element", "@name"), ("value", "@final"), ("state", "@code{state}")),
    "P": (("element", "@name"), ("P after the launch", "@final"), ("state", "@code{state}")),
    "P_pvalue": (("element", "@name"), ("Pvalue so far", "@text"), ("computed by", "@thread")),
    "ghost": (
        ("position", "@name (outside the matrix)"),
        ("what happened", "@state"),
        ("thread", "@loader"),
        ("slot holds", "@text"),
    ),
}


def _value_chars(trace: Trace, name: str) -> int:
    """Characters of the widest value of matrix ``name`` ('M', 'N', 'P') as its cells show it."""
    a = {"M": trace.M, "N": trace.N, "P": trace.P}[name]
    finite = a[np.isfinite(a)]
    if not finite.size:
        return 1
    return max(1, len(_fmt(float(finite.min()))), len(_fmt(float(finite.max()))))


def _looks(scene) -> tuple[Any, Any, Any, Any]:
    """The models M, N and P share on a scene: colour maps, the hover's words, the ghosts' filter.

    Made once per scene (kept in ``scene.state``), with the first matrix drawn.
    """
    looks = scene.state.get(_LOOKS)
    if looks is not None:
        return looks
    from bokeh.models import CustomJS, CustomJSHover
    from bokeh.transform import linear_cmap

    T = scene.trace.tile_width
    fills, texts, words = matrix_palette(T * T, scene.palette)
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
    looks = scene.state[_LOOKS] = (fill_map, text_map, word, ghost_rows)
    return looks


#: Where a scene keeps the matrices' shared models (:func:`_looks`).
_LOOKS = "matrices' looks"


def _extent(trace: Trace, name: str) -> tuple[tuple[int, int], tuple[int, int]]:
    """Matrix ``name``'s cells drawn (tiles may overhang it), its shape: ``(rows, cols)`` each."""
    j, k, l = trace.shape
    jp, kp, lp = trace.launch.padded  # tiles may overhang the matrices
    ext = {"M": (jp, kp), "N": (kp, lp), "P": (jp, lp)}
    shape = {"M": (j, k), "N": (k, l), "P": (j, l)}
    return ext[name], shape[name]


def _matrix_box(name: str):
    """``box(scene)`` of matrix ``name``'s grid (a :attr:`GridSpec.box`)."""

    def box(scene) -> GridPlace:
        (rows, cols), shape = _extent(scene.trace, name)
        title = f"{name} ({shape[0]} × {shape[1]})"
        return scene._grid_box(name, rows, cols, scene.sizes.cell, title, labelled=shape)

    return box


def _matrix_at(name: str):
    """``at(scene, boxes, placed)`` of matrix ``name`` (a :attr:`GridSpec.at`).

    Fig. 5.10's places: N above P, M left of P, the corner above M left of N
    empty (the blocks' where they fit).
    """

    def at(scene, boxes: Mapping[str, GridPlace], placed) -> tuple[int, int]:
        m, n = boxes.get("M"), boxes.get("N")
        x1 = m.width if m is not None else 0
        y1 = n.height if n is not None else 0
        return {"M": (0, y1), "N": (x1, 0), "P": (x1, y1)}[name]

    return at


def _draw_matrix(name: str):
    """``draw(scene, f, box)`` of matrix ``name``'s grid (a :attr:`GridSpec.draw`)."""

    def draw(scene, f, box: GridPlace):
        return _draw_grid(scene, f, name)

    return draw


def _draw_grid(scene, f, name: str):
    """Matrix ``name`` ('M', 'N', 'P') on plot ``f``, in its grid's ranges: its cells' renderer."""
    from ..scene_parts import _centred_text, _hover, _outlines

    tr, s, th = scene.trace, scene.sizes, scene.palette
    fill_map, text_map, word, ghost_rows = _looks(scene)
    ext, shape = _extent(tr, name)
    # ghost cells (hatched, with their text and tooltip) only where a tile
    # overhangs the matrix: a matrix of whole tiles has no glyph nor hover for them
    overhang = ext != shape
    src = scene.sources[name]
    add = scene._adder(f, grid=name)
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
    over = scene.sources[f"{name}_outline"]
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
        pv = _outlines(add, scene.sources["P_pvalue"], 1, line_alpha=0)
    if s.matrix_text:
        px = int(s.cell * 0.32)
        if scene.presenter:  # a projector's values as large as their cells hold
            chars = _value_chars(tr, name)
            px = int(min((s.cell - 4) / (DIGIT_EM * chars), s.cell * 0.6))
        fs = f"{max(9, min(s.font + 2, px))}px"
        _centred_text(add, scene.sources["P_pvalue"] if name == "P" else src, fs, text_map)
        if overhang:
            _centred_text(add, over, fs)
    _hover(f, r, "P" if name == "P" else "matrix", formatters={"@code": word})
    if name == "P":
        _hover(f, pv, "P_pvalue")
    if overhang:
        _hover(f, g, "ghost", filters={"@name": ghost_rows})
    scene._finding_glyph(f, name)
    return r


# ------------------------------------------------ Pillow (GIF and MP4 frames)
def _pillow_matrix(renderer, img, draw, frame: Frame, p: _Panel):
    from ..pillow_text import _rgb

    name = p.name
    T = renderer.T
    nr, nc = renderer.dims[name]
    state = {"M": frame.m_state, "N": frame.n_state, "P": frame.p_state}[name]
    loader = {"M": frame.m_thread, "N": frame.n_thread}.get(name)
    focus = {"M": frame.m_focus, "N": frame.n_focus, "P": frame.p_focus}[name]
    bg = np.array(_rgb(renderer.pal.BACKGROUND), np.uint8)
    colors = np.empty((p.rows, p.cols, 3), np.uint8)
    colors[:] = bg
    lut = np.array(
        [
            _rgb(renderer.pal.CELL_COLORS.get(CellState(s), renderer.pal.BACKGROUND))
            for s in range(max(CellState) + 1)
        ],
        np.uint8,
    )
    colors[:nr, :nc] = lut[state]
    if loader is not None:
        rr, cc = np.nonzero(loader >= 0)
        if len(rr):
            tc = np.array(renderer.thread_colors, np.uint8)
            colors[rr, cc] = tc[loader[rr, cc]]
    ghosts = frame.ghosts.get(name, [])
    for g in ghosts:
        if 0 <= g.row < p.rows and 0 <= g.col < p.cols:
            colors[g.row, g.col] = _rgb(
                renderer.pal.GHOST_COLORS.get(g.code, renderer.pal.BACKGROUND)
            )
    renderer._paint_cells(img, p, colors)
    from ..pillow import _Panel

    renderer._grid_lines(draw, _Panel(name, p.x, p.y, nr, nc, p.cell, ""), nr, nc)
    lw = renderer.lw
    # ghost cells: dashed outlines (the loading thread's colour when loaded now)
    for g in ghosts:
        if not (0 <= g.row < p.rows and 0 <= g.col < p.cols):
            continue
        box = p.cell_box(g.row, g.col)
        box = (box[0], box[1], box[2] - 1, box[3] - 1)
        if g.now and 0 <= g.thread < len(renderer.thread_colors):
            w = max(2, round(p.cell * 0.1))
            draw.rectangle(box, outline=renderer.thread_colors[g.thread], width=w)
        elif p.cell >= 6:
            renderer._dashed_rect(draw, box, _rgb(renderer.pal.MUTED), 1, max(2, p.cell // 8))
    # matrix border
    draw.rectangle(
        (p.x - lw, p.y - lw, p.x + nc * p.cell - 1 + lw, p.y + nr * p.cell - 1 + lw),
        outline=_rgb(renderer.pal.TEXT),
        width=lw,
    )
    # text in cells
    _pillow_matrix_text(renderer, draw, frame, p, state, ghosts)
    # focus, then the tile outline on top
    tw = max(2, min(round(p.cell * 0.1), round(renderer.fs_body * 0.3)))
    for r, c in zip(*np.nonzero(focus), strict=True):
        renderer._outline(draw, p, int(r), int(c), 1, 1, _rgb(renderer.pal.FOCUS), tw)
    if name == "P" and frame.p_wrong is not None:  # barrier lab: wrong P elements
        bad = _rgb(renderer.pal.SLOT_COLORS[SlotState.WRONG])
        for r, c in zip(*np.nonzero(frame.p_wrong), strict=True):
            renderer._outline(draw, p, int(r), int(c), 1, 1, bad, tw + 1)
    corner = frame.tiles.get(name)
    if corner is not None:
        renderer._outline(
            draw, p, corner[0], corner[1], T, T, _rgb(renderer.pal.TILE_OUTLINE), max(2, tw + 1)
        )
    o = frame.transactions
    if o is not None and name in ("M", "N"):  # the current warp's segments and sectors
        for r, c0, c1 in getattr(o, f"{name.lower()}_segments"):
            renderer._dashed_rect(
                draw,
                (p.x + c0 * p.cell, p.y + r * p.cell, p.x + c1 * p.cell - 1,
                 p.y + (r + 1) * p.cell - 1),
                _rgb(renderer.pal.READ),
                max(2, tw + 1),
                max(4, p.cell // 3),
            )  # fmt: skip
        for r, c0, c1 in getattr(o, f"{name.lower()}_sectors"):
            renderer._outline(draw, p, r, c0, 1, c1 - c0, _rgb(renderer.pal.TEXT), max(1, tw - 1))
    if p.ticks:
        renderer._ticks(draw, p, nr, nc)
    renderer._draw_heading(draw, p)


def _pillow_matrix_text(renderer, draw, frame: Frame, p: _Panel, state, ghosts):
    from ..pillow_text import _draw_text, _ink_on, _rgb, _text_w

    name = p.name
    nr, nc = renderer.dims[name]
    big = max(nr, nc) - 1
    one, two = renderer._cell_fonts(p, lambda fs: renderer._sub_w(name, f"{big},{big}", fs))
    if one is None:
        return
    values = {"M": renderer.trace.M, "N": renderer.trace.N, "P": renderer.trace.P}[name]
    for r in range(nr):
        for c in range(nc):
            x0, y0, x1, y1 = p.cell_box(r, c)
            cx = (x0 + x1) / 2
            ink = _ink_on(_pillow_cell_rgb(renderer, frame, name, state, r, c))
            show_value = name != "P" or state[r, c] == CellState.DONE
            if two is not None and show_value:
                renderer._sub_text(draw, cx, y0 + p.cell * 0.34, name, f"{r},{c}", two, ink)
                renderer._value_text(draw, cx, y0 + p.cell * 0.72, values[r, c], two, ink)
            else:
                renderer._sub_text(draw, cx, (y0 + y1) / 2, name, f"{r},{c}", one, ink)
    zs = renderer._cell_fonts(p, lambda fs: _text_w("0.0", fs))[0]
    if zs is None:
        return
    for g in ghosts:
        if g.code == Access.ZERO_FILL and 0 <= g.row < p.rows and 0 <= g.col < p.cols:
            x0, y0, x1, y1 = p.cell_box(g.row, g.col)
            _draw_text(
                draw, ((x0 + x1) / 2, (y0 + y1) / 2), "0.0", zs, _rgb(renderer.pal.TEXT), "mm"
            )


def _pillow_cell_rgb(renderer, frame: Frame, name: str, state, r: int, c: int):
    from ..pillow_text import _rgb

    loader = {"M": frame.m_thread, "N": frame.n_thread}.get(name)
    if loader is not None and loader[r, c] >= 0:
        return renderer.thread_colors[int(loader[r, c])]
    return _rgb(renderer.pal.CELL_COLORS.get(CellState(int(state[r, c])), renderer.pal.BACKGROUND))


def _columns(ctx: FrameContext, want: frozenset[str]) -> dict[str, dict[str, list]]:
    """The columns of the matrices' sources in ``want`` (``M``, ``M_outline``, ``P_pvalue``...)."""
    out: dict[str, dict[str, list]] = {}
    for name in ("M", "N", "P"):
        if name in want:
            out[name] = _matrix_columns(ctx.frame, ctx.trace, name)
        if f"{name}_outline" in want:
            out[f"{name}_outline"] = _outline_columns(ctx.frame, ctx.trace, name, ctx.th)
    if "P_pvalue" in want:
        out["P_pvalue"] = _pvalue_columns(ctx.frame, ctx.trace)
    return out


#: The plot M, N and P share (and the blocks, in its free corner where they fit).
MATRICES_PLOT = "vizmm-matrices"

#: What M and N read of a frame (the cells, the followed thread's row or column, the
#: tile loads' transactions); P also the threads' states and the barrier lab's marks.
_MATRIX_ASPECTS = {
    "M": ("matrices", "focus", "transactions"),
    "N": ("matrices", "focus", "transactions"),
    "P": ("matrices", "focus", "threads", "lab"),
}

for _order, _name in ((1, "M"), (2, "N"), (3, "P")):
    register(
        ViewSpec(
            name=_name,
            order=_order,
            aspects=_MATRIX_ASPECTS[_name],
            sources={
                _name: "matrix",
                f"{_name}_outline": "outline",
                **({"P_pvalue": "P_pvalue"} if _name == "P" else {}),
            },
            columns=_columns,
            kinds={**MATRIX_KINDS, **FINDING_KIND},
            hover={**MATRIX_HOVER, **FINDING_HOVER},
            pillow=True,
            presenter=True,
            draw_pillow=_pillow_matrix,
            grids=(
                GridSpec(
                    plot=MATRICES_PLOT,
                    place="left",
                    box=_matrix_box(_name),
                    at=_matrix_at(_name),
                    draw=_draw_matrix(_name),
                ),
            ),
        )
    )
