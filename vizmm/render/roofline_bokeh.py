"""Bokeh figures of the book's GFLOPS argument: the roofline and measured speed against size.

:class:`RooflineView` draws a measured roofline (:func:`vizmm.analysis.roofline.measured_roofline`)
with each kernel's point, the book's A100 example beside it (Section 5.4:
1555 GB/s, 19,500 GFLOPS; 0.25 OP/B -> 389 and 4 OP/B -> 6220 GFLOPS) and
the intensity of the trace on screen as a marker on the roof;
:meth:`RooflineView.set_current` moves that marker. :func:`speed_figure`
draws measured GFLOP/s against the square size for every timed kernel and
cuBLAS. Both only draw what the analysis computed.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from bokeh.models import ColumnDataSource, FixedTicker
from bokeh.models.annotations import Label, Legend, LegendItem
from bokeh.plotting import figure

from ..analysis.roofline import Roofline
from . import palette as pal
from .bokeh_tools import add_hover, title_of

__all__ = ["RooflineView", "roof_columns", "point_columns", "speed_figure"]

X_RANGE = (0.1, 100.0)  # OP/B


#: What the roofline and the speed figure share: log-log axes, GFLOP/s up the side.
_LOG_LOG: dict[str, Any] = {"x_axis_type": "log", "y_axis_type": "log", "y_axis_label": "GFLOP/s"}


def _log_log(
    name: str, title: str, x_label: str, height: int, width: int, p: pal.Palette, **ranges
):
    """A log-log figure of GFLOP/s against ``x_label``, without a toolbar, in palette ``p``."""
    size: dict[str, Any] = {"height": height, "width": width, **ranges}
    f = figure(
        name=name, title=title, x_axis_label=x_label, toolbar_location=None, **_LOG_LOG, **size
    )
    title_of(f).text_font_size = "12pt"
    f.background_fill_color = f.border_fill_color = p.BACKGROUND
    f.outline_line_color = p.GRID_LINE
    title_of(f).text_color = p.TEXT
    for axis in f.axis:
        axis.axis_label_text_color = axis.major_label_text_color = p.TEXT
        axis.axis_line_color = axis.major_tick_line_color = axis.minor_tick_line_color = p.MUTED
    f.grid.grid_line_color = p.GRID_LINE
    return f


def _legend(items: list, p: pal.Palette) -> Legend:
    """The legend right of a figure, in palette ``p``."""
    legend = Legend(
        label_text_font_size="8pt",
        spacing=0,
        label_text_color=p.TEXT,
        background_fill_color=p.BACKGROUND,
        border_line_color=p.GRID_LINE,
    )
    legend.items = items  # set, not passed: Bokeh 3.10's stub leaves ``items`` out of __init__
    return legend


def _roof_marker(f, name: str, p: pal.Palette, **style):
    """An empty source (``x``, ``y``, ``label``) and its marker on the roof (``style``: glyph's)."""
    source = ColumnDataSource({"x": [], "y": [], "label": []})
    return source, f.scatter("x", "y", source=source, name=name, line_color=p.TEXT, **style)


def _color(kernel: str, p: pal.Palette = pal.LIGHT) -> str:
    """A kernel's colour; cuBLAS (black) drawn in the theme's text colour."""
    if kernel == "cublas":
        return p.TEXT
    return pal.KERNEL_COLORS.get(kernel, p.MUTED)


def roof_columns(roof: Roofline, n: int = 200) -> dict[str, np.ndarray]:
    """The roof ``min(peak, bandwidth x I)`` sampled over :data:`X_RANGE` (log-spaced).

    Parameters
    ----------
    roof : Roofline
        A device's roofline.
    n : int
        How many intensities are sampled.
    """
    x = np.geomspace(*X_RANGE, n)
    return {"x": x, "y": roof.attainable(x)}


def point_columns(roof: Roofline) -> dict[str, list]:
    """One row per kernel point: intensity, GFLOP/s, label, colour, roof and fraction of it.

    Parameters
    ----------
    roof : Roofline
        A device's roofline with its kernel points.
    """
    p = roof.points
    return {
        "x": [q.op_per_byte for q in p],
        "y": [q.gflops for q in p],
        "label": [q.label for q in p],
        "color": [_color(q.kernel) for q in p],
        "bound": [q.bound_gflops for q in p],
        "fraction": [q.fraction_of_bound for q in p],
        "width": [q.width or 0 for q in p],
    }


class RooflineView:
    """A log-log roofline: measured roof and points, the book's A100 example, the current trace.

    Parameters
    ----------
    roof : Roofline
        The measured device's roofline with its kernel points.
    book : Roofline, optional
        Drawn in grey beside it (the book's A100).
    height, width : int
        Pixels.
    theme : {'light', 'dark'}
        The palette (:func:`vizmm.render.palette.palette`).

    Attributes
    ----------
    figure : bokeh.plotting.figure
    current : ColumnDataSource
        ``x`` (OP/B), ``y`` (the roof there, GFLOP/s), ``label``: the trace on screen.
    """

    def __init__(
        self,
        roof: Roofline,
        book: Roofline | None = None,
        height=360,
        width=560,
        theme: str = "light",
    ):
        p = pal.palette(theme)
        top = max(roof.peak_gflops, roof.spec_peak_gflops or 0, book.peak_gflops if book else 0)
        f = _log_log(
            "roofline",
            f"Roofline: {roof.device} (measured) and the book's A100",
            "arithmetic intensity, CGMA (OP/B: FLOP per byte read)",
            height,
            width,
            p,
            x_range=X_RANGE,
            y_range=(50, top * 2),
        )
        items = []
        if book is not None:
            bl = f.line(
                "x",
                "y",
                source=ColumnDataSource(roof_columns(book)),
                color=p.MUTED,
                line_width=2,
                line_dash="dashed",
            )
            bp = f.scatter(
                "x",
                "y",
                source=ColumnDataSource(point_columns(book)),
                size=10,
                marker="square",
                color=p.MUTED,
            )
            for q in book.points:
                f.add_layout(
                    Label(
                        x=q.op_per_byte,
                        y=q.gflops,
                        text=f"{q.gflops:,.0f}",
                        text_color=p.MUTED,
                        text_font_size="9pt",
                        x_offset=6,
                        y_offset=-14,
                    )
                )
            items.append(
                LegendItem(label=f"{book.device}: 1555 GB/s, 19,500 GFLOPS", renderers=[bl, bp])
            )
        rl = f.line(
            "x", "y", source=ColumnDataSource(roof_columns(roof)), color=p.TEXT, line_width=2
        )
        items.append(
            LegendItem(
                label=f"{roof.device} measured: {roof.bandwidth_gb_s:,.0f} GB/s, "
                f"{roof.peak_gflops:,.0f} GFLOP/s (best FP32 measured)",
                renderers=[rl],
            )
        )
        if roof.spec_peak_gflops:
            sl = f.line(
                list(X_RANGE), [roof.spec_peak_gflops] * 2, color=p.TEXT, line_dash="dotted"
            )
            items.append(
                LegendItem(label=f"data-sheet peak {roof.spec_peak_gflops:,.0f}", renderers=[sl])
            )
        pts = ColumnDataSource(point_columns(roof))
        pr = f.scatter(
            "x", "y", source=pts, size=9, color="color", line_color=p.TEXT, name="points"
        )
        items.append(LegendItem(label="kernels, measured (GFLOP/s at Width 4096)", renderers=[pr]))
        marker = {"size": 16, "marker": "inverted_triangle", "fill_color": p.FOCUS}
        self.current, cr = _roof_marker(f, "current", p, **marker)
        items.append(LegendItem(label="this trace's CGMA on the roof", renderers=[cr]))
        marker = {"size": 14, "marker": "diamond", "fill_color": p.READ}
        self.chosen, chr_ = _roof_marker(f, "chosen", p, **marker)
        items.append(LegendItem(label="the TILE_WIDTH chosen, on the roof", renderers=[chr_]))
        tips = [
            ("kernel", "@label"),
            ("CGMA", "@x{0.00} OP/B"),
            ("measured", "@y{0,0} GFLOP/s"),
            ("roof", "@bound{0,0} GFLOP/s"),
            ("of roof", "@fraction{0%}"),
        ]
        add_hover(f, pr, tips)
        add_hover(f, [cr, chr_], [("", "@label")])
        f.add_layout(_legend(items, p), "right")
        self.figure = f
        self.roof = roof

    def _marker(self, op_per_byte: float | None, label: str) -> dict:
        if op_per_byte is None or not np.isfinite(op_per_byte) or op_per_byte <= 0:
            return {"x": [], "y": [], "label": []}
        y = float(self.roof.attainable(op_per_byte))
        return {"x": [op_per_byte], "y": [y], "label": [label]}

    def set_current(self, op_per_byte: float | None, label: str = "") -> None:
        """Put the trace on screen at ``op_per_byte`` on the measured roof (None: hide it).

        Parameters
        ----------
        op_per_byte : float or None
            The trace's intensity (OP/B); None hides the marker.
        label : str
            The marker's label.
        """
        self.current.data = self._marker(op_per_byte, label)

    def set_chosen(self, op_per_byte: float | None, label: str = "") -> None:
        """Put the chosen TILE_WIDTH's intensity on the measured roof (None: hide it).

        Parameters
        ----------
        op_per_byte : float or None
            The intensity (OP/B); None hides the marker.
        label : str
            The marker's label.
        """
        self.chosen.data = self._marker(op_per_byte, label)


def speed_figure(
    series: dict[str, list[tuple[int, float]]],
    device: str,
    height=360,
    width=560,
    theme: str = "light",
):
    """Measured GFLOP/s against the square size (log-log), one line per kernel and cuBLAS.

    Parameters
    ----------
    series : dict
        ``{'tiled T=16': [(Width, GFLOP/s), ...], 'cuBLAS': [...]}`` as
        :func:`vizmm.analysis.roofline.speed_series` returns.
    device : str
        For the title.
    height, width : int
        Pixels.
    theme : {'light', 'dark'}
        The palette (:func:`vizmm.render.palette.palette`).
    """
    p = pal.palette(theme)
    f = _log_log(
        "speed",
        f"Measured speed on the {device} (CUDA events, median)",
        "Width (square matrices)",
        height,
        width,
        p,
    )
    items = []
    dashes = {8: "dotted", 16: "solid", 32: "dashed"}
    for label, pts in series.items():
        kernel = "cublas" if label == "cuBLAS" else label.split(" ")[0]
        T = int(label.split("=")[1]) if "=" in label else 16
        src = ColumnDataSource(
            {"x": [p[0] for p in pts], "y": [p[1] for p in pts], "label": [label] * len(pts)}
        )
        line = f.line(
            "x",
            "y",
            source=src,
            color=_color(kernel, p),
            line_width=2,
            line_dash=dashes.get(T, "solid"),
        )
        dots = f.scatter("x", "y", source=src, color=_color(kernel, p), size=5)
        items.append(LegendItem(label=label, renderers=[line, dots]))
    add_hover(f, "auto", [("", "@label"), ("Width", "@x"), ("GFLOP/s", "@y{0,0}")])
    sizes = sorted({p[0] for pts in series.values() for p in pts})
    f.xaxis.ticker = FixedTicker(ticks=sizes)
    f.xaxis.major_label_orientation = 0.6
    f.add_layout(_legend(items, p), "right")
    return f
