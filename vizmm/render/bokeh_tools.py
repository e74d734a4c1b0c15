"""Small Bokeh helpers shared by the block scene, the large-matrix figures and the roofline."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from bokeh.models import Plot
    from bokeh.models.annotations import Title

__all__ = ["add_hover", "title_of"]


def title_of(fig: Plot) -> Title:
    """The figure's title model, which Bokeh makes from the ``title`` text a figure is given.

    Parameters
    ----------
    fig : bokeh.models.Plot
        A figure or any plot made with a title.

    Returns
    -------
    bokeh.models.Title

    Raises
    ------
    TypeError
        For a plot made without a title.
    """
    from bokeh.models.annotations import Title

    title = fig.title
    if not isinstance(title, Title):
        raise TypeError(f"the plot {fig.name!r} has no title model (it was made without a title)")
    return title


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
