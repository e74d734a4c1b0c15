"""The scene's text views as HTML: caption, source, counters, Fig. 5.8 table, legend.

A text view is lines of characters and a few coloured boxes (the source's
current line, the counters' bars, the table's cells). Drawn as a Bokeh
``Div`` of this HTML rather than as a plot of text glyphs, a view is one
model instead of a dozen (plot, toolbar, ranges, renderers, sources,
glyphs), which a new page builds and sends in a fraction of the time; its
text is also real text, selectable and read by screen readers, and a table
cell's note is its ``title`` (the browser's tooltip).

Coordinates are those of the plot the view used to be, so each view keeps
its size and layout: x in character columns, y in text lines (down), mapped
to pixels by a :class:`TextBox`. Everything here is pure: columns (those of
:func:`vizmm.render.bokeh_scene.frame_columns`) in, a string out.
"""

from __future__ import annotations

import dataclasses
import html
from collections.abc import Mapping, Sequence

__all__ = ["TextBox", "text_view_html", "view_rows", "visible_lines"]


@dataclasses.dataclass(frozen=True)
class TextBox:
    """Where a text view's characters and lines fall, in CSS pixels.

    Parameters
    ----------
    width, height : int
        The view's size (CSS px).
    x0, x1 : float
        Character columns at the left and right inner edges.
    lines : float
        Text lines from the top inner edge to the bottom one.
    border : int
        Pixels between the view's edge and its inner edges.
    """

    width: int
    height: int
    x0: float
    x1: float
    lines: float
    border: int = 4

    def x(self, chars: float) -> float:
        """Pixels from the view's left edge of character column ``chars``.

        Parameters
        ----------
        chars : float
            Character column (may be fractional).
        """
        return self.border + (chars - self.x0) * (self.width - 2 * self.border) / (
            self.x1 - self.x0
        )

    def y(self, line: float) -> float:
        """Pixels from the view's top edge of line ``line`` (0: the top inner edge).

        Parameters
        ----------
        line : float
            Line, from the top inner edge (may be fractional).
        """
        return self.border + line * (self.height - 2 * self.border) / self.lines

    def dx(self, chars: float) -> float:
        """Pixels of ``chars`` character columns.

        Parameters
        ----------
        chars : float
            Character columns.
        """
        return chars * (self.width - 2 * self.border) / (self.x1 - self.x0)

    def dy(self, lines: float) -> float:
        """Pixels of ``lines`` text lines.

        Parameters
        ----------
        lines : float
            Text lines.
        """
        return lines * (self.height - 2 * self.border) / self.lines


def _px(v: float) -> str:
    return f"{v:.1f}".rstrip("0").rstrip(".") + "px"


def _style_of(font_style: str) -> str:
    out = ""
    if "bold" in font_style:
        out += "font-weight:bold;"
    if "italic" in font_style:
        out += "font-style:italic;"
    return out


def _text(
    box: TextBox,
    x: float,
    y: float,
    text: str,
    color: str,
    font_style: str = "normal",
    extra: str = "",
    row: int = -1,
    kind: str = "t",
) -> str:
    """A left-aligned text whose middle is at line ``y`` (a Bokeh ``Text`` of baseline middle).

    ``row``: the row of the columns it shows (``data-row``; -1: none); ``kind``:
    its class (``t``, or ``t m`` for the source's markers).
    """
    if not text:
        return ""
    at = f' data-row="{row}"' if row >= 0 else ""
    return (
        f'<span class="{kind}"{at} style="left:{_px(box.x(x))};top:{_px(box.y(y) - box.dy(1) / 2)};'
        f'color:{color};{_style_of(font_style)}{extra}">{html.escape(text)}</span>'
    )


def _rect(
    box: TextBox,
    x: float,
    y: float,
    w: float,
    h: float,
    fill: str,
    line: str | None = None,
    alpha: float = 1.0,
    title: str = "",
    border_px: int = 1,
    row: int = -1,
) -> str:
    """A box centred at (``x``, ``y``), ``w`` characters by ``h`` lines (a Bokeh ``Rect``).

    ``row``: the row of the columns it shows (``data-row``; -1: none).
    """
    if alpha <= 0:
        return ""
    style = (
        f"left:{_px(box.x(x - w / 2))};top:{_px(box.y(y - h / 2))};"
        f"width:{_px(box.dx(w))};height:{_px(box.dy(h))};background:{fill};"
    )
    if alpha < 1:
        style += f"opacity:{alpha:g};"
    if line:
        style += f"border:{border_px}px solid {line};"
    tip = f' title="{html.escape(title)}"' if title else ""
    at = f' data-row="{row}"' if row >= 0 else ""
    return f'<div class="r"{at} style="{style}"{tip}></div>'


def _page(
    box: TextBox, background: str, font: str, size_px: int, parts: Sequence[str], rows: int
) -> str:
    line_h = _px(box.dy(1))
    return (
        "<style>.v{position:relative;overflow:hidden}"
        ".t{position:absolute;white-space:pre;margin:0;line-height:var(--lh)}"
        ".r{position:absolute;box-sizing:border-box}</style>"
        f'<div class="v" data-rows="{rows}" style="width:{box.width}px;height:{box.height}px;'
        f"background:{background};font-family:{html.escape(font, quote=True)};"
        f'font-size:{size_px}px;--lh:{line_h}">' + "".join(parts) + "</div>"
    )


def text_view_html(
    view: str,
    columns: Mapping[str, Mapping[str, Sequence]],
    box: TextBox,
    *,
    background: str,
    font: str,
    size_px: int,
    text_color: str = "",
    marker_color: str = "",
    small_px: int = 0,
) -> str:
    """The HTML of one text view of a frame.

    Parameters
    ----------
    view : {'caption', 'source', 'counters', 'table', 'legend'}
        Which view: it says which columns are read.
    columns : mapping of str to mapping of str to sequence
        Sources' columns by name, as :func:`~vizmm.render.bokeh_scene.frame_columns`
        gives them: ``caption``; ``source``; ``counters`` and ``bars``;
        ``table``; the legend's ``swatches`` and ``labels``.
    box : TextBox
        The view's size and its characters' and lines' positions.
    background : str
        CSS colour behind the text.
    font : str
        CSS font family of the text.
    size_px : int
        Font size of the text (CSS px).
    text_color : str
        Colour of the source's and the legend's text (their columns carry none).
    marker_color : str
        Colour of the source's markers (▶ the executed line, ✗ a removed barrier).
    small_px : int
        Font size of the counters' bar labels (CSS px); 0: ``size_px - 1``.

    Returns
    -------
    str
        An HTML fragment (a ``<style>`` and one ``<div>`` of ``box``'s size)
        for a Bokeh ``Div``; every text is escaped. The view's ``<div>`` says
        how many rows its main columns have (``data-rows``); each text
        (``span.t``; the source's markers ``span.t.m``) and box (``div.r``)
        drawn from a row of them says which (``data-row``), so that a page's
        script or test reads the view back as columns.

    Raises
    ------
    ValueError
        For another view.
    """
    parts: list[str] = []
    main = {"legend": "labels", "counters": "counters"}.get(view, view)
    rows = len(columns[main]["y"]) if main in columns else 0
    if view in ("caption", "counters"):
        c = columns[view]
        for i, (x, y, t, st, col) in enumerate(
            zip(c["x"], c["y"], c["text"], c["font_style"], c["color"], strict=True)
        ):
            parts.append(_text(box, x, y, t, col, st, row=i))
        if view == "counters":
            b = columns["bars"]
            small = small_px or size_px - 1
            for x, y, w, fill, label, lx, lc in zip(
                b["x"],
                b["y"],
                b["w"],
                b["fill"],
                b["label"],
                b["lx"],
                b["label_color"],
                strict=True,
            ):
                parts.append(_rect(box, x, y, w, 0.7, fill))
                parts.append(_text(box, lx, y, label, lc, "bold", f"font-size:{small}px;"))
    elif view == "source":
        c = columns["source"]
        width = box.x1 - 2.5  # the listing's characters (see Scene's source view)
        for i, (y, t, bg, alpha, marker, st) in enumerate(
            zip(
                c["y"], c["text"], c["bg"], c["bg_alpha"], c["marker"], c["font_style"], strict=True
            )
        ):
            parts.append(
                _rect(box, width / 2 - 0.5, y, width + 1, 1.0, bg, alpha=float(alpha), row=i)
            )
            parts.append(_text(box, 0.0, y, t, text_color, st, row=i))
            parts.append(_text(box, -1.9, y, marker, marker_color, row=i, kind="t m"))
    elif view == "table":
        c = columns["table"]
        for i, (x, y, w, h, tx, fill, line, t, tc, st, note) in enumerate(
            zip(
                c["x"],
                c["y"],
                c["w"],
                c["h"],
                c["tx"],
                c["fill"],
                c["line_color"],
                c["text"],
                c["text_color"],
                c["font_style"],
                c["note"],
                strict=True,
            )
        ):
            parts.append(_rect(box, x, y, w, h, fill, line, title=note, row=i))
            parts.append(_text(box, tx, y, t, tc, st, row=i))
    elif view == "legend":
        s, lab = columns["swatches"], columns["labels"]
        for x, y, fill, line in zip(s["x"], s["y"], s["fill"], s["line"], strict=True):
            parts.append(_rect(box, x, y, 1.8, 0.7, fill, line, border_px=2))
        for x, y, t, st in zip(lab["x"], lab["y"], lab["text"], lab["style"], strict=True):
            parts.append(_text(box, x, y, t, text_color, st))
    else:
        raise ValueError(
            f"no text view {view!r}: 'caption', 'source', 'counters', 'table' or 'legend'"
        )
    return _page(box, background, font, size_px, parts, rows)


class _Element:
    """One text (``span``) or box (``div.r``) of a view's HTML: its attributes, style and text."""

    def __init__(self, tag: str, attrs: dict[str, str | None]) -> None:
        self.tag = tag
        self.classes = (attrs.get("class") or "").split()
        self.attrs = attrs
        self.style = dict(
            kv.split(":", 1) for kv in (attrs.get("style") or "").split(";") if ":" in kv
        )
        self.text = ""

    def px(self, name: str) -> float:
        """A style length in pixels (``"12.5px"``: 12.5; missing: 0)."""
        return float(self.style.get(name, "0px").removesuffix("px"))


def _elements(fragment: str) -> tuple[int, list[_Element]]:
    """The rows a view says it has (``data-rows``) and its texts and boxes, in order."""
    from html.parser import HTMLParser

    found: list[_Element] = []
    rows = [0]
    inside: list[_Element | None] = [None]

    class Parser(HTMLParser):
        def handle_starttag(self, tag, attrs):
            a = dict(attrs)
            classes = (a.get("class") or "").split()
            if "v" in classes:
                rows[0] = int(a.get("data-rows") or 0)
            elif (tag == "span" and "t" in classes) or "r" in classes:
                found.append(_Element(tag, a))
                inside[0] = found[-1] if tag == "span" else None

        def handle_endtag(self, tag):
            if tag == "span":
                inside[0] = None

        def handle_data(self, data):
            if inside[0] is not None:
                inside[0].text += data

    parser = Parser(convert_charrefs=True)
    parser.feed(fragment)
    parser.close()
    return rows[0], found


def visible_lines(fragment: str) -> list[str]:
    """The lines of text a view's HTML shows, top to bottom (a line's texts left to right).

    Parameters
    ----------
    fragment : str
        What :func:`text_view_html` returned.

    Returns
    -------
    list of str
        One string per line that has text, its pieces joined by two spaces
        (a table row: its cells' texts).
    """
    lines: dict[int, list[tuple[float, str]]] = {}
    for e in _elements(fragment)[1]:
        if e.tag == "span":
            lines.setdefault(round(e.px("top")), []).append((e.px("left"), e.text))
    return ["  ".join(t for _, t in sorted(row)) for _, row in sorted(lines.items())]


def view_rows(fragment: str) -> dict[str, list[str]]:
    """A view's rows read back from its HTML: each row's text, marker and box.

    Parameters
    ----------
    fragment : str
        One text view's HTML, as :func:`text_view_html` draws it.

    Returns
    -------
    dict of str to list of str
        ``text``, ``marker`` (the source's ▶ and ✗), ``note`` (a box's
        title), ``fill`` and ``line_color`` (a box's CSS colours), each one
        string per row of the view's main columns (``""`` where the row
        draws none), as the elements' ``data-row`` say.
    """
    n, found = _elements(fragment)
    out = {key: [""] * n for key in ("text", "marker", "note", "fill", "line_color")}
    for e in found:
        row = e.attrs.get("data-row")
        if row is None:
            continue
        i = int(row)
        if e.tag == "span":
            out["marker" if "m" in e.classes else "text"][i] = e.text
        else:
            out["fill"][i] = e.style.get("background", "")
            out["line_color"][i] = e.style.get("border", "").rpartition(" ")[2]
            out["note"][i] = e.attrs.get("title") or ""
    return out
