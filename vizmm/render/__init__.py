"""Renderers: draw the neutral frames of :mod:`vizmm.replay`.

* :mod:`vizmm.render.bokeh_scene`: the Bokeh scene shared by the dashboard
  (``apps/dashboard.py``) and the offline HTML export. :func:`frame_columns`
  turns one frame into the data of every glyph, :class:`Scene` builds the
  figures once and :meth:`Scene.update` assigns new data.
* :mod:`vizmm.render.pillow`: the same views as Pillow images (GIF / MP4).
* :mod:`vizmm.render.large_bokeh`: the large-matrix figures.
* :mod:`vizmm.render.text`: the Fig. 5.8 table as text; the one value formatter.
* :mod:`vizmm.render.palette`: every colour, by state.
* :mod:`vizmm.render.policy`: which views a trace's size affords (one size policy).

Importing this package imports neither Bokeh nor Pillow; the names below are
loaded from :mod:`vizmm.render.bokeh_scene` on first use.
"""

from __future__ import annotations

import importlib

__all__ = [
    "Scene",
    "frame_columns",
    "slot_label",
    "thread_label",
    "SCENE_VIEWS",
    "is_large",
    "affordable_views",
    "LARGE_ELEMENTS",
    "LIGHT_VIEWS",
    "view_names",
    "check_known_views",
]

from .policy import (
    LARGE_ELEMENTS,
    LIGHT_VIEWS,
    affordable_views,
    check_known_views,
    is_large,
    view_names,
)

_LAZY = {
    "Scene": "Scene",
    "frame_columns": "frame_columns",
    "slot_label": "slot_label",
    "thread_label": "thread_label",
    "SCENE_VIEWS": "VIEWS",
}


def __getattr__(name: str):
    """Load the Bokeh scene's public names lazily (PEP 562)."""
    if name in _LAZY:
        module = importlib.import_module(".bokeh_scene", __name__)
        return getattr(module, _LAZY[name])
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
