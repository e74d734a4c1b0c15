"""Glyph renderers as ``figure``'s methods make them, less what is never drawn.

:func:`add_glyph` is shared by the block scene and the quiz's marks: no muted
or non-selection copies where nothing is muted or selected, one filter for a
plot's renderers, glyphs of equal looks shared, every data spec given (so that
Bokeh does not work its defaults out on every walk of a page's models).
Bokeh's public API only.
"""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING, Any

from bokeh.core.properties import field, value

if TYPE_CHECKING:
    from bokeh.models.glyph import Glyph

__all__ = ["add_glyph"]

#: The classes of a data spec's two forms: a column's name and a value.
_FIELD = type(field("x"))
_VALUE = type(value(0))
#: The features of a glyph's visual properties (``line_color``, ``text_font_size`` ...).
_VISUAL_FEATURES = ("line", "fill", "hatch", "text", "global")


#: What ``figure``'s glyph methods give a visual trait set nowhere else: the first colour
#: of Bokeh's default cycle (Category10's blue), opaque, text and hatching in black.
_FIGURE_TRAITS = {"color": "#1f77b4", "alpha": 1.0}


_FIGURE_VISUALS = {"text_color": "black", "hatch_color": "black"}


def _glyph_visuals(
    cls: type[Glyph],
    props: dict[str, Any],
    *,
    prefix: str = "",
    defaults: dict[str, Any] | None = None,
    override: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Every visual property of glyph class ``cls``, as ``figure``'s glyph methods set it.

    A visual property (``line_color``; ``nonselection_fill_alpha`` with
    ``prefix``) is popped from ``props``; one not given takes, in turn, a
    trait alias (``color``, ``alpha``, ``nonselection_alpha``: for every
    feature, where the glyph has no property of that name, popped at the
    end), ``override`` by trait, ``defaults`` by name (the main glyph's, for
    a selection glyph), then :data:`_FIGURE_TRAITS` / :data:`_FIGURE_VISUALS`:
    the order in which ``figure``'s glyph methods look for a value.

    Parameters
    ----------
    cls : type of bokeh.models.glyph.Glyph
        A glyph class of :mod:`bokeh.models.glyphs`; its properties come from
        its public ``properties()``.
    props : dict of str to object
        The keyword arguments given; the visual ones are removed.
    prefix : str
        ``""`` for the glyph, ``"nonselection_"`` or ``"selection_"``.
    defaults : dict of str to object, optional
        Values by property name, used when ``props`` gives none.
    override : dict of str to object, optional
        Values by trait (``{"alpha": 0.1}``), before ``defaults``.

    Returns
    -------
    dict of str to object
        Property name (no prefix) to value.
    """
    names = set(cls.properties())
    defaults = {**_FIGURE_VISUALS, **(defaults or {})}
    override = override or {}
    out: dict[str, Any] = {}
    aliases = set()
    for name in names:
        feature, _, trait = name.partition("_")
        if feature not in _VISUAL_FEATURES or not trait:
            continue
        if prefix + name in props:
            out[name] = props.pop(prefix + name)
        elif trait not in names and prefix + trait in props:
            out[name] = props[prefix + trait]
        elif trait in override:
            out[name] = override[trait]
        elif name in defaults:
            out[name] = defaults[name]
        elif trait in _FIGURE_TRAITS:
            out[name] = _FIGURE_TRAITS[trait]
        if trait not in names:
            aliases.add(prefix + trait)
    for alias in aliases:
        props.pop(alias, None)
    return out


@lru_cache(maxsize=64)  # one entry per glyph class the scene draws
def _spec_defaults(kind: str) -> tuple[tuple[str, Any], ...]:
    """Every data-spec property of glyph class ``kind`` with its default, in a form Bokeh stores.

    A property left unset has its default worked out (and checked) anew each
    time Bokeh reads it, and Bokeh reads every data-spec property of a glyph
    on every walk of a document's models (a data spec may hold a transform, a
    model): a served page walks them four times (Panel's Bokeh pane, the
    document's roots added, its models recomputed, the document sent). A
    glyph given them reads each as a stored value. They are given as
    ``value(default)`` (a default that is already a ``value(...)``: as its
    plain value), since a property set to a value equal to its current one
    is not stored; Bokeh sends both forms as the same value, and the defaults
    are Bokeh's own, so what BokehJS draws is unchanged. A spec whose default
    names a column (``x``, ``y``, ``text``) is left out.

    Bokeh's public API only: the class's ``dataspecs()``, its defaults read
    from a new glyph, ``value`` and ``field`` of :mod:`bokeh.core.properties`,
    and what :func:`bokeh.embed.json_item` sends for a glyph given them all (in a
    :class:`bokeh.document.Document` of its own).
    """
    from bokeh.document import Document
    from bokeh.embed import json_item
    from bokeh.models import glyphs

    cls = getattr(glyphs, kind)
    made = cls()
    defaults: dict[str, Any] = {}
    given: dict[str, Any] = {}
    for name in sorted(cls.dataspecs()):
        try:
            default = defaults[name] = getattr(made, name)
        except ValueError:  # a required spec without a default (none of ours)
            continue
        if isinstance(default, (_FIELD, dict)):
            continue
        # the same spec in the other of its two forms: stored, as it is not equal
        given[name] = default.value if isinstance(default, _VALUE) else value(default)
    # in a document of its own: json_item would otherwise make one from curdoc(), which
    # in a server is the session's (and that of a session being destroyed has no callbacks)
    probe = cls(**given)
    Document().add_root(probe)
    sent = json_item(probe)["doc"]["roots"][0].get("attributes", {})
    # kept only where Bokeh sends it as the default's value (a plain string of a
    # string spec would name a column)
    return tuple(
        (name, v)
        for name, v in given.items()
        if sent.get(name)
        == {"type": "value", "value": getattr(defaults[name], "value", defaults[name])}
    )


def add_glyph(
    fig, kind: str, source=None, *, selectable: bool = False, every=None, shared=None, **props
):
    """Add one glyph renderer to ``fig`` as ``figure`` methods do, less what is never drawn.

    ``fig.rect(...)`` and its kin also make a muted and a non-selection copy
    of the glyph (drawn only when a renderer is muted or its source has a
    selection) and a filter for the renderer alone. Nothing here is muted,
    and only the grids that take taps ever have a selection: BokehJS makes
    those copies itself if they are ever needed (``"auto"``), and renderers
    share one ``AllIndices`` filter (it holds nothing). A page then holds
    fewer Bokeh models, and every new session builds and sends that much less.
    Each glyph is given every data-spec property, those not asked for at
    Bokeh's default value, so that Bokeh does not work those defaults out
    again on each walk of the page's models.

    Parameters
    ----------
    fig : bokeh.models.Plot
        The plot to draw on (a figure of a :class:`Scene`, or any plot).
    kind : str
        A glyph class of :mod:`bokeh.models.glyphs` (``"Rect"``, ``"Text"``,
        ``"Scatter"``).
    source : ColumnDataSource, optional
        The rows to draw; a new empty source (one glyph of scalar values) by default.
    selectable : bool
        Keep a non-selection glyph (and a selection glyph when ``selection_*``
        properties are given), as ``figure`` does, for sources a tap selects.
    every : AllIndices, optional
        The filter of the renderer's view; by default the one the plot's
        renderers already share (a new one for its first renderer).
    shared : dict, optional
        Glyphs to share: a renderer whose glyph has the kind and properties
        of one kept here draws with that one (a glyph holds no data: each
        renderer draws it from its own source), and a new glyph is kept.
        Renderers of one ``source`` (and ``every``) also share their view
        (a ``CDSView`` holds the rows of its renderers' source: the same for
        each). A scene passes one per scene, so that one page sends each look
        and each view once.
    **props
        The glyph's properties as ``figure`` methods take them (column names
        or values; ``line_*``, ``fill_*``, ``text_*``, ``hatch_*``, ``color``,
        ``alpha`` and their ``nonselection_`` / ``selection_`` forms), and
        the renderer's ``name``, ``x_range_name`` and ``y_range_name`` (the
        plot's extra ranges it draws in: :meth:`Scene.ranges`).

    Returns
    -------
    bokeh.models.GlyphRenderer
    """
    from bokeh.models import AllIndices, CDSView, ColumnDataSource, glyphs
    from bokeh.models.renderers import GlyphRenderer

    cls = getattr(glyphs, kind)
    name = props.pop("name", None)
    # the renderer's ranges (a grid's own, on a plot of several grids)
    ranges: dict[str, Any] = {
        k: props.pop(k) for k in ("x_range_name", "y_range_name") if k in props
    }
    visuals, nonselection, selection = _looks(cls, kind, props, selectable)
    if every is None:
        every = (
            next((r.view.filter for r in fig.renderers if isinstance(r, GlyphRenderer)), None)
            or AllIndices()
        )
    glyph = view = None
    if shared is not None:
        glyph, view = _shared_glyph(shared, cls, kind, props, visuals, source, every)
    # Only what differs from a renderer's defaults is passed: each property given
    # is set (and later sent) on its own, and BokehJS makes the "auto" copies.
    extra: dict[str, Any] = dict(ranges) if name is None else {"name": name, **ranges}
    if nonselection is not None:
        extra["nonselection_glyph"] = cls(**props, **nonselection)
    if selection is not None:
        extra["selection_glyph"] = cls(**props, **selection)
    r = GlyphRenderer(
        data_source=ColumnDataSource() if source is None else source,
        glyph=cls(**props, **visuals) if glyph is None else glyph,
        view=CDSView(filter=every) if view is None else view,
        **extra,
    )
    fig.renderers.append(r)
    return r


def _looks(
    cls: type[Glyph], kind: str, props: dict[str, Any], selectable: bool
) -> tuple[dict[str, Any], dict[str, Any] | None, dict[str, Any] | None]:
    """The glyph's visuals, and its non-selection and selection glyphs' (None: not made).

    The visual properties are popped from ``props``; every data spec not
    given is there at Bokeh's default, in the form Bokeh stores
    (:func:`_spec_defaults`).
    """
    visuals = _glyph_visuals(cls, props)
    nonselection = selection = None
    if selectable:  # as figure() makes them
        nonselection = _glyph_visuals(
            cls, props, prefix="nonselection_", defaults=visuals, override={"alpha": 0.1}
        )
        if any(k.startswith("selection_") for k in props):
            selection = _glyph_visuals(cls, props, prefix="selection_", defaults=visuals)
    for k in [k for k in props if k.startswith(("nonselection_", "selection_", "muted_"))]:
        del props[k]
    # every data spec given, as value(default) where it is at Bokeh's default (_spec_defaults)
    defaults = {k: v for k, v in _spec_defaults(kind) if k not in props}

    def stored(given: dict[str, Any]) -> dict[str, Any]:
        out = dict(defaults)
        for k, v in given.items():
            if k not in defaults:
                out[k] = v
                continue
            d = defaults[k]
            plain = v is None or isinstance(v, (str, int, float, list))
            if not plain or v != getattr(d, "value", d):  # not the default: as given
                out[k] = v
        return out

    return (
        stored(visuals),
        None if nonselection is None else stored(nonselection),
        None if selection is None else stored(selection),
    )


def _shared_glyph(shared: dict, cls, kind: str, props: dict, visuals: dict, source, every):
    """The glyph of these looks kept in ``shared`` (made and kept if new), and a view.

    The view of ``source`` and ``every`` is kept there too (None without a source).
    """
    from bokeh.models import CDSView

    key = (kind, *sorted((k, repr(v)) for k, v in {**props, **visuals}.items()))
    glyph = shared.get(key)
    if glyph is None:
        glyph = shared[key] = cls(**props, **visuals)
    view = None
    if source is not None:
        view = shared.get(("CDSView", source.id, every.id))
        if view is None:
            view = shared[("CDSView", source.id, every.id)] = CDSView(filter=every)
    return glyph, view
