"""vizmm in a Jupyter notebook: one block's replay with a step slider, or the whole dashboard.

In a notebook started from the repository's root::

    import panel as pn; pn.extension()
    from vizmm_apps.notebook import ReplayView
    ReplayView("fig5-8")              # Fig. 5.7/5.8; or ReplayView(trace, block=(1, 1))

The last line's value is shown by Panel (a :class:`panel.viewable.Viewer`
renders itself through ``_repr_mimebundle_``). The whole page works the same
way: ``Dashboard(served=False)`` from :mod:`vizmm_apps.dashboard`. The views are the
dashboard's own :class:`~vizmm.render.bokeh_scene.Scene`.

``vizmm.check(...)`` returns a :class:`~vizmm.analysis.check.CheckReport`, which
a notebook shows as a table by itself; :class:`CheckView` shows the report and
the replay at its first finding, marked (vizmm itself never imports these
views)::

    from vizmm_apps.notebook import CheckView
    CheckView(vizmm.check("mykernel.py:matrixMulKernel", width=4, tile_width=2))
"""

from __future__ import annotations

import panel as pn
import param

from vizmm.render.bokeh_scene import VIEWS, Scene  # noqa: E402
from vizmm.replay import GRANULARITIES, ORDERS, Replay  # noqa: E402
from vizmm.replay.findings import (  # noqa: E402
    FindingMarks,
    finding_marks,
    finding_step,
    with_finding,
)
from vizmm.replay.navigator import clamp, default_block  # noqa: E402
from vizmm.serve.catalogue import CATALOGUE  # noqa: E402
from vizmm.trace import Trace  # noqa: E402

__all__ = ["CheckView", "ReplayView"]


class ReplayView(pn.viewable.Viewer):
    """One block's replay: a step slider above the dashboard's views.

    Parameters
    ----------
    trace : Trace or str
        A trace, or a trace key of :mod:`vizmm.serve.catalogue` (``"fig5-8"``,
        ``"fig5-11"``, ``"rec:tiled:5x5x5:T2:s0:simulator"`` ...).
    block : (by, bx)
        A block recorded per thread; default the trace's first one.
    granularity : {'substep', 'phase'}
    order : {'lockstep', 'recorded'}
    views : iterable of str, optional
        Which of :data:`vizmm.render.bokeh_scene.VIEWS` to show (default all).
    theme : {'light', 'dark'}
    step : int
        The step shown first (0-based).
    finding : FindingMarks, optional
        A finding of ``vizmm.check`` to mark on the frames of its block
        (:func:`vizmm.replay.findings.finding_marks`).
    focus : (ty, tx), optional
        The followed thread.

    Raises
    ------
    ValueError
        For an unknown trace key, view, granularity, order or theme, or a
        naive-kernel trace (it has no tiles to replay).
    KeyError
        For a block that was not recorded per thread.
    """

    step = param.Integer(default=0, bounds=(0, None), doc="The step shown (0-based).")

    def __init__(
        self,
        trace: Trace | str,
        block=None,
        granularity: str = "substep",
        order: str = "lockstep",
        views=None,
        theme: str = "light",
        step: int = 0,
        finding: FindingMarks | None = None,
        focus=None,
    ):
        if isinstance(trace, str):
            trace = CATALOGUE.get(trace)
        if granularity not in GRANULARITIES or order not in ORDERS:
            raise ValueError(
                f"granularity must be one of {GRANULARITIES} and order one of {ORDERS}, "
                f"got {granularity!r}, {order!r}"
            )
        if block is None and len(trace.detail_blocks):
            block = default_block(trace)
        self.finding = finding
        self.replay = Replay(trace, block or (0, 0), granularity, order, focus)
        self.scene = Scene(trace, views=VIEWS if views is None else views, theme=theme)
        n = len(self.replay)
        super().__init__(step=clamp(step, self.replay))
        self.slider = pn.widgets.IntSlider(
            label="step", start=1, end=max(2, n), value=self.step + 1, width=420
        )
        self.slider.param.watch(lambda e: setattr(self, "step", e.new - 1), "value")
        self.param.watch(self._draw, "step")
        self._draw()
        self._layout = pn.Column(self.slider, pn.pane.Bokeh(self.scene.layout))

    @property
    def frame(self):
        """The :class:`~vizmm.replay.Frame` shown (with the finding marked, if any).

        Made of only the aspects the scene's views need (``Scene.aspects``).
        """
        return with_finding(self.replay.frame(self.step, aspects=self.scene.aspects), self.finding)

    def _draw(self, *events) -> None:
        n = len(self.replay)
        if self.step >= n:
            self.step = n - 1
            return
        self.scene.update(self.frame)
        if hasattr(self, "slider"):
            self.slider.value = self.step + 1

    def __panel__(self):
        return self._layout


class CheckView(pn.viewable.Viewer):
    """What ``vizmm.check`` found, and the replay at the first finding, marked.

    The report's table (:meth:`CheckReport._repr_html_`) above a
    :class:`ReplayView` of the first finding's block, at the step where it
    shows, following its thread, with the finding marked on M, N, P, Mds,
    Nds, the threads and the Fig. 5.8 table. A clean report shows the table
    only.

    Parameters
    ----------
    report : vizmm.analysis.check.CheckReport
        What :func:`vizmm.check` returned.
    index : int
        Which finding to show in the replay (0-based; the first by default).
    theme : {'light', 'dark'}

    Raises
    ------
    IndexError
        When the report has findings and none numbered ``index``.
    """

    def __init__(self, report, index: int = 0, theme: str = "light"):
        super().__init__()
        self.report = report
        parts: list = [pn.pane.HTML(report, sizing_mode="stretch_width")]  # its _repr_html_
        self.replay: ReplayView | None = None
        found = [(i, f) for i, f in enumerate(report.findings) if f.block is not None]
        if report.findings and not 0 <= index < len(report.findings):
            raise IndexError(
                f"there is no finding {index} (the report has {len(report.findings)}, from 0)"
            )
        chosen = [(i, f) for i, f in found if i >= index][:1]
        if chosen and report.trace.kernel != "naive":
            i, f = chosen[0]
            marks = finding_marks(f, i)
            view = ReplayView(
                report.trace, block=tuple(f.block), theme=theme, finding=marks, focus=f.thread
            )
            view.step = finding_step(view.replay, f)
            self.replay = view
            parts += [pn.pane.Markdown(f"**Finding {i + 1}** in the replay: {f.message}"), view]
        self._layout = pn.Column(*parts)

    def __panel__(self):
        return self._layout
