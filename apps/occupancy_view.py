"""The "Occupancy & speed" tab: Section 5.6's occupancy and Section 5.4's GFLOPS argument, live.

A TILE_WIDTH slider, a kernel and a device menu (the book's A100, the H100
and H200 as measured) drive :func:`vizmm.analysis.occupancy.occupancy`: shared
memory per block and per thread, registers, blocks per SM allowed by each
resource, what limits them and the occupancy. Beside it: the CGMA of the
trace on screen (its global reads against the naive kernel's, in OP/B and
FLOP per load), the measured roofline with every timed kernel at the
intensity its recorded trace read, the book's A100 example, and the measured
GFLOP/s against size.

Serve it alone with ``panel serve apps/occupancy_view.py``; the dashboard
adds it as a tab (:func:`install`). The view only holds choices: the numbers
come from :mod:`vizmm.analysis`, the figures from :mod:`vizmm.render.roofline_bokeh`.
"""

from __future__ import annotations

import html
import json

import panel as pn
import param

from vizmm.analysis import occupancy as occ  # noqa: E402
from vizmm.analysis import roofline as rl  # noqa: E402
from vizmm.render.roofline_bokeh import RooflineView, speed_figure  # noqa: E402
from vizmm_apps.access import PageLandmarks, opened_theme, page_extension  # noqa: E402
from vizmm_apps.parts import page_header, served_script  # noqa: E402

TAB = "Occupancy & speed"


def _measured(device: str) -> str:
    """The measured device shown for a menu choice (the A100 has no measurement here)."""
    return device if device in occ.SPEED_FILES else "H200"


class OccupancyView(pn.viewable.Viewer):
    """Occupancy, CGMA, the roofline and measured speed for one TILE_WIDTH and device.

    Parameters
    ----------
    state : vizmm_apps.dashboard.DashboardState, optional
        The dashboard's state: its trace's kernel, TILE_WIDTH and read counts
        are shown, and the charts take its theme; without one, no trace is,
        and the charts take the theme the page was opened in.
    """

    device: param.Selector[str] = param.Selector(
        default="A100", objects=list(occ.DEVICES), doc="Device preset"
    )
    kernel: param.Selector[str] = param.Selector(default="tiled", objects=list(occ.KERNEL_NAMES))
    tile_width = param.Integer(default=16, bounds=(1, occ.MAX_TILE_WIDTH), label="TILE_WIDTH")

    def __init__(self, state=None, **params):
        super().__init__(**params)
        self.dash_state = state
        self._views: dict[tuple[str, str], RooflineView] = {}  # by device and theme
        self._speed: dict[tuple[str, str], object] = {}
        self.occ_pane = pn.pane.HTML("", width=560, margin=(5, 10))
        self.trace_pane = pn.pane.HTML("", width=560, margin=(5, 10))
        self.roof_pane = pn.pane.Bokeh(None)
        self.speed_pane = pn.pane.Bokeh(None)
        controls = pn.Param(
            self.param,
            parameters=["device", "kernel", "tile_width"],
            widgets={
                "tile_width": {"type": pn.widgets.IntSlider, "name": "TILE_WIDTH"},
                "device": {"type": pn.widgets.Select, "name": "device"},
            },
            show_name=False,
            width=560,
        )
        self.layout = pn.Row(
            pn.Column(controls, self.occ_pane, self.trace_pane, width=590),
            pn.Column(self.roof_pane, self.speed_pane),
        )
        self.param.watch(self._update, ["device", "kernel", "tile_width"])
        if state is not None:
            state.param.watch(self._on_trace, ["trace"])
            state.param.watch(self._update, ["theme"])
            self._on_trace()
        self._update()

    # ---------------------------------------------------------------- state
    def _trace(self):
        return getattr(self.dash_state, "trace", None) if self.dash_state is not None else None

    def _on_trace(self, *events) -> None:
        t = self._trace()
        if t is not None and t.kernel in occ.KERNEL_NAMES:
            self.param.update(kernel=t.kernel, tile_width=t.tile_width)
        self._update()

    def _theme(self) -> str:
        """The charts' theme: the dashboard's, or the page's when shown alone."""
        theme = getattr(self.dash_state, "theme", None)
        return theme if theme in ("light", "dark") else opened_theme()

    def _roof(self) -> RooflineView:
        key = (_measured(self.device), self._theme())
        dev, theme = key
        if key not in self._views:
            self._views[key] = RooflineView(
                rl.measured_roofline(dev), rl.book_a100(), height=400, width=860, theme=theme
            )
            self._speed[key] = speed_figure(
                rl.speed_series(dev), dev, height=340, width=860, theme=theme
            )
        return self._views[key]

    # ---------------------------------------------------------------- update
    def _update(self, *events) -> None:
        o = occ.occupancy(self.device, self.tile_width, self.kernel)
        view = self._roof()
        T = self.tile_width
        chosen = 0.25 if self.kernel == "naive" else T / 4
        view.set_chosen(chosen, f"{self.kernel}, TILE_WIDTH {T}: {chosen:g} OP/B with whole tiles")
        t = self._trace()
        ai = rl.intensity(t) if t is not None else None
        view.set_current(
            ai.op_per_byte if ai else None,
            f"this trace: {ai.op_per_byte:.2f} OP/B" if ai else "",
        )
        self.roof_pane.object = view.figure
        self.speed_pane.object = self._speed[(_measured(self.device), self._theme())]
        self.occ_pane.object = self._occupancy_html(o, chosen, view)
        self.trace_pane.object = self._trace_html(t, ai)

    def _occupancy_html(self, o: occ.Occupancy, chosen: float, view: RooflineView) -> str:
        d = o.device
        rows = "".join(
            f"<tr><td>{html.escape(k)}</td><td style='text-align:right'>"
            f"{'—' if v is None else v}</td>"
            f"<td>{'&#9664; limit' if k in o.limits else ''}</td></tr>"
            for k, v in o.blocks_by().items()
        )
        regs = (
            f"{o.registers_per_thread} ({html.escape(o.registers_source)})"
            if o.registers_per_thread is not None
            else "not known"
        )
        status = {
            "device": d.name,
            "kernel": o.kernel,
            "tile-width": o.tile_width,
            "blocks": o.blocks_per_sm,
            "threads": o.threads_per_sm,
            "occupancy": round(o.occupancy, 4),
            "limit": o.limit,
            "shared-per-block": o.shared_per_block,
            "shared-per-thread": o.shared_per_thread,
            "chosen-op-per-byte": chosen,
            "chosen-y": float(view.chosen.data["y"][0]) if view.chosen.data["y"] else None,
        }
        data = " ".join(f"data-{k}='{html.escape(json.dumps(v))}'" for k, v in status.items())
        measured = _measured(d.name)
        note = (
            ""
            if measured == d.name
            else f"<br><i>No speed was measured on an {d.name}: the roofline and speed "
            f"are the {measured}'s, with the book's A100 drawn beside them.</i>"
        )
        return (
            f"<div id='vizmm-occupancy' {data} style='font-size:13px'>"
            f"<b>{html.escape(d.name)}</b>, kernel <b>{html.escape(str(o.kernel))}</b>, "
            f"TILE_WIDTH <b>{o.tile_width}</b>: {o.threads_per_block} threads per block<br>"
            f"shared memory: <b>{o.shared_per_block:,} B</b> per block "
            f"(Mds + Nds), <b>{o.shared_per_thread:.1f} B</b> per thread; "
            f"{o.shared_budget_per_thread:.0f} B per thread keeps all "
            f"{d.max_threads_per_sm} thread slots ({d.shared_per_sm // 1024} KB / "
            f"{d.max_threads_per_sm}); allocated {o.shared_allocated_per_block:,} B with the "
            f"{d.reserved_shared_per_block} B reserved per block<br>"
            f"registers per thread: {regs}<br>"
            f"<table style='margin:4px 0'><tr><th>blocks per SM allowed by</th><th>blocks</th>"
            f"<th>limits?</th></tr>{rows}</table>"
            f"<b>{o.blocks_per_sm} blocks = {o.threads_per_sm} threads = {o.warps_per_sm} of "
            f"{d.max_warps_per_sm} warps per SM: occupancy {o.occupancy:.0%}</b>, limited by "
            f"{html.escape(' and '.join(o.limits))}<br>"
            f"CGMA with whole tiles: <b>{chosen:g} OP/B</b> ({4 * chosen:g} FLOP per load); "
            f"the roof there: {view.roof.attainable(chosen):,.0f} GFLOP/s on the "
            f"{view.roof.device}{note}</div>"
        )

    @staticmethod
    def _trace_html(t, ai) -> str:
        if t is None or ai is None:
            return "<i>No trace on screen.</i>"
        return (
            f"<div id='vizmm-trace-cgma' data-op-per-byte='{ai.op_per_byte}' "
            f"style='font-size:13px'><b>This trace</b> ({html.escape(t.kernel)}, "
            f"{t.shape[0]}x{t.shape[1]}x{t.shape[2]}, TILE_WIDTH {t.tile_width}): "
            f"{ai.global_reads:,} global reads of M and N; the naive kernel: "
            f"{ai.naive_reads:,} ({ai.reduction:.1f}x fewer). "
            f"CGMA <b>{ai.op_per_byte:.2f} OP/B</b> ({ai.flop_per_load:.2f} FLOP per load; "
            f"naive {ai.naive_op_per_byte:.2f} OP/B)</div>"
        )

    def __panel__(self):
        return self.layout


if served_script(__name__):
    page_extension()
    pn.Column(
        page_header("occupancy and speed (Sections 5.4 and 5.6)"), OccupancyView(), PageLandmarks()
    ).servable(title="vizmm · occupancy and speed")
