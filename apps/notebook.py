"""vizmm in a Jupyter notebook: one block's replay with a step slider, or the whole dashboard.

In a notebook started from the repository's root::

    import panel as pn; pn.extension()
    from vizmm_apps.notebook import ReplayView
    ReplayView("fig5-8")              # Fig. 5.7/5.8; or ReplayView(trace, block=(1, 1))

The last line's value is shown by Panel (a :class:`panel.viewable.Viewer`
renders itself through ``_repr_mimebundle_``). The whole page works the same
way: ``Dashboard(served=False)`` from :mod:`vizmm_apps.dashboard`. The views are the
dashboard's own :class:`~vizmm.render.bokeh_scene.Scene`.
"""

from __future__ import annotations

import panel as pn
import param

from vizmm.render.bokeh_scene import VIEWS, Scene  # noqa: E402
from vizmm.replay import GRANULARITIES, ORDERS, Replay  # noqa: E402
from vizmm.replay.navigator import clamp, default_block  # noqa: E402
from vizmm.serve.catalogue import CATALOGUE  # noqa: E402
from vizmm.trace import Trace  # noqa: E402

__all__ = ["ReplayView"]


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
        self.replay = Replay(trace, block or (0, 0), granularity, order)
        self.scene = Scene(trace, views=VIEWS if views is None else views, theme=theme)
        n = len(self.replay)
        super().__init__(step=clamp(step, self.replay))
        self.slider = pn.widgets.IntSlider(
            name="step", start=1, end=max(2, n), value=self.step + 1, width=420
        )
        self.slider.param.watch(lambda e: setattr(self, "step", e.new - 1), "value")
        self.param.watch(self._draw, "step")
        self._draw()
        self._layout = pn.Column(self.slider, pn.pane.Bokeh(self.scene.layout))

    @property
    def frame(self):
        """The :class:`~vizmm.replay.Frame` shown."""
        return self.replay.frame(self.step)

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
