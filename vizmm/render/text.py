"""Text rendering: the Fig. 5.8 table for terminals and pages, the book's subscript notation.

The one value formatter of every view is :func:`format_value` (re-exported
from :mod:`vizmm.trace.units`, where every layer can reach it).
"""

from __future__ import annotations

import html
import re
from collections.abc import Sequence

from ..replay.table import ARROW, NO_ARROW, Table
from ..trace.units import format_value, human_bytes

__all__ = ["format_table", "format_value", "human_bytes", "render_text"]


_SUBSCRIPT = str.maketrans("0123456789-+", "₀₁₂₃₄₅₆₇₈₉₋₊")
_SUB_RE = re.compile(r"_\{([^{}]*)\}")
_ASCII = {ARROW: "->", NO_ARROW: "-/->", "…": "...", "✗": "x"}


def render_text(text: str, style: str = "unicode") -> str:
    """Render a cell text written in the book's ``X_{a,b}`` notation.

    Parameters
    ----------
    text : str
        A :attr:`Cell.text` (or any string in that notation).
    style : {'tex', 'unicode', 'ascii', 'html'}
        ``tex`` returns the text unchanged (``M_{0,3}=M_{1,0} → Mds_{0,1}``);
        ``unicode`` writes subscripts as Unicode subscript digits
        (``M₀,₃=M₁,₀ → Mds₀,₁``); ``ascii`` uses brackets and ``->``
        (``M[0,3]=M[1,0] -> Mds[0,1]``); ``html`` escapes the text and uses
        ``<sub>`` (``M<sub>0,3</sub>=...``).

    Returns
    -------
    str

    Raises
    ------
    ValueError
        For an unknown style.
    """
    if style == "tex":
        return text
    if style == "unicode":
        return _SUB_RE.sub(lambda m: m.group(1).translate(_SUBSCRIPT), text)
    if style == "ascii":
        out = _SUB_RE.sub(lambda m: f"[{m.group(1)}]", text)
        for u, a in _ASCII.items():
            out = out.replace(u, a)
        return out
    if style == "html":
        parts, pos = [], 0
        for m in _SUB_RE.finditer(text):
            parts.append(html.escape(text[pos : m.start()]))
            parts.append(f"<sub>{html.escape(m.group(1))}</sub>")
            pos = m.end()
        parts.append(html.escape(text[pos:]))
        return "".join(parts)
    raise ValueError(f"unknown style {style!r}; choose one of tex, unicode, ascii, html")


_BOX = {
    True: dict(
        h="─", v="│", tl="┌", tm="┬", tr="┐", ml="├", mm="┼", mr="┤", bl="└", bm="┴", br="┘"
    ),
    False: dict(
        h="-", v="|", tl="+", tm="+", tr="+", ml="+", mm="+", mr="+", bl="+", bm="+", br="+"
    ),
}


def format_table(table: Table, unicode: bool = True, title: bool = True) -> str:
    """Draw ``table`` as text for a terminal, with a two-row header as in Fig. 5.8.

    Parameters
    ----------
    table : Table
        From :func:`build_table`.
    unicode : bool
        Box-drawing lines, arrows and subscript digits (``M₀,₁ → Mds₀,₁``);
        False gives pure ASCII (``M[0,1] -> Mds[0,1]``).
    title : bool
        Put :attr:`Table.title` on the first line.

    Returns
    -------
    str
        The lines of the table, joined by newlines (no trailing newline).
        A barrier-lab table (cells marked ``✗``) is followed by one line per
        marked Pvalue cell and P store saying what the thread computed and
        what the book's kernel computes (:attr:`Cell.note`).
    """
    style = "unicode" if unicode else "ascii"
    box = _BOX[unicode]
    cols = table.columns
    header_lo = [render_text(c.short, style) for c in cols]
    body = [[render_text(cell.text, style) for cell in row] for row in table.rows]
    widths = [max([len(header_lo[i])] + [len(r[i]) for r in body]) for i in range(len(cols))]

    # Widen columns so that each group label fits in the span it covers.
    groups = table.groups()
    i = 0
    for label, span in groups:
        inner = sum(widths[i : i + span]) + 3 * (span - 1)
        if len(label) > inner:
            widths[i + span - 1] += len(label) - inner
        i += span

    def bounds(spans: Sequence[int]) -> set[int]:
        """Indices of the columns that start a new span (a vertical line on their left)."""
        out, i = set(), 0
        for span in spans:
            out.add(i)
            i += span
        return out

    def line(
        left: str, right: str, above: Sequence[int] | None, below: Sequence[int] | None
    ) -> str:
        """A horizontal rule whose junctions join the vertical lines above and below it."""
        up = bounds(above) if above else set()
        down = bounds(below) if below else set()
        out = left
        for i, w in enumerate(widths):
            if i:
                a, b = i in up, i in down
                out += box["mm"] if a and b else box["bm"] if a else box["tm"] if b else box["h"]
            out += box["h"] * (w + 2)
        return out + right

    def text_row(cells: Sequence[str], spans: Sequence[int]) -> str:
        parts, i = [], 0
        for cell, span in zip(cells, spans, strict=True):
            w = sum(widths[i : i + span]) + 3 * (span - 1)
            parts.append(" " + cell.ljust(w) + " ")
            i += span
        return box["v"] + box["v"].join(parts) + box["v"]

    spans_g = [span for _, span in groups]
    ones = [1] * len(cols)
    out = []
    if title:
        out.append(render_text(table.title, style))
    if any(label for label, _ in groups):
        out.append(line(box["tl"], box["tr"], None, spans_g))
        out.append(text_row([label for label, _ in groups], spans_g))
        out.append(line(box["ml"], box["mr"], spans_g, ones))
    else:  # no phases (the naive kernel): a one-row header
        out.append(line(box["tl"], box["tr"], None, ones))
    out.append(text_row(header_lo, ones))
    out.append(line(box["ml"], box["mr"], ones, ones))
    out.extend(text_row(r, ones) for r in body)
    out.append(line(box["bl"], box["br"], ones, None))
    for row in table.rows:  # the barrier lab's wrong terms, in words
        for cell in row:
            wrong_term = (
                cell.note and cell.kind == "wrong_term" or (cell.wrong and cell.phase is None)
            )
            if wrong_term and cell.thread is not None:
                where = f"thread_{{{cell.thread[0]},{cell.thread[1]}}}, " + (
                    "P store" if cell.phase is None else f"phase {cell.phase}"
                )
                out.append(render_text(f"✗ {where}: {cell.note}", style))
    return "\n".join(out)
