"""Small Bokeh helpers shared by the block scene, the large-matrix figures and the roofline."""

from __future__ import annotations

__all__ = ["add_hover"]


def add_hover(fig, renderers, tooltips: list, **kwargs) -> None:
    """Add hover tooltips to ``fig`` for one renderer or a list of them.

    Parameters
    ----------
    fig : bokeh.models.Plot
        A figure or any plot.
    renderers : GlyphRenderer, list of GlyphRenderer or 'auto'
        What the tooltips answer for (``'auto'``: every renderer of ``fig``).
    tooltips : list of (str, str)
        ``[(label, field), ...]`` as :class:`bokeh.models.HoverTool` takes them.
    **kwargs
        Further :class:`~bokeh.models.HoverTool` properties (``formatters``, ...).
    """
    from bokeh.models import HoverTool

    if renderers != "auto":
        renderers = list(renderers) if isinstance(renderers, (list, tuple)) else [renderers]
    fig.add_tools(HoverTool(renderers=renderers, tooltips=tooltips, **kwargs))
