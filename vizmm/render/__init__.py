"""Renderers: draw the neutral frames of :mod:`vizmm.replay`.

* :mod:`vizmm.render.bokeh_scene`: the Bokeh scene shared by the dashboard
  (``apps/dashboard.py``) and the offline HTML export. :func:`frame_columns`
  turns one frame into the data of every glyph, :class:`Scene` builds the
  figures once and :meth:`Scene.update` assigns new data.
* :mod:`vizmm.render.pillow`: the same views as Pillow images (GIF / MP4).

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
]

#: M, N and P elements (together) up to which the matrices are drawn element by element.
LARGE_ELEMENTS = 40_000

#: The per-thread views of a large trace: the block's shared memory and threads,
#: no element-by-element M, N, P (the large views show those at block granularity).
LIGHT_VIEWS = ("caption", "Mds", "Nds", "threads", "legend", "source", "counters")


def is_large(trace) -> bool:
    """True when drawing M, N and P element by element would be too slow or too small to read.

    That is when M, N and P hold more than :data:`LARGE_ELEMENTS` elements together.
    """
    j, k, l = trace.shape
    return j * k + k * l + j * l > LARGE_ELEMENTS


def affordable_views(trace, views: tuple[str, ...]) -> tuple[str, ...]:
    """Of ``views`` (a renderer's view names), those a trace of this size can afford.

    Small traces keep every view. Large ones keep :data:`LIGHT_VIEWS`, and
    drop the counters past 16 phases (they list Pvalue after every phase).
    The dashboard and every export use this, so they agree.
    """
    if not is_large(trace):
        return tuple(views)
    light = (
        LIGHT_VIEWS if trace.n_phases <= 16 else tuple(v for v in LIGHT_VIEWS if v != "counters")
    )
    return tuple(v for v in views if v in light)


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
