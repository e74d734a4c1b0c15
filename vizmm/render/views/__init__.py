"""The views of a replayed block, one spec each: what every renderer derives its lists from.

A view is one :class:`ViewSpec`, registered once (:func:`register`) by the
module of its family in this package (``matrices``, ``tiles``,
``transactions``, ``text``, ``blocks``, ``table``). The spec says what the
view needs of the replay (its aspects), the Bokeh sources it draws from and
their columns and tooltips, how its columns are worked out from a frame, how
the Bokeh scene and the Pillow renderer draw it where they do (a grid on one
of the scene's shared plots, :class:`GridSpec`; a part drawn only for the
frames that need it, :class:`Later`), and what it is
for the other lists (drawn as HTML, kept for large traces, shown to a class;
whether a finding marks it and a question asks to click it are its role in
the replay, :mod:`vizmm.replay.view_roles`). Every list of views is derived from here:
:data:`vizmm.render.bokeh_scene.VIEWS`, ``HTML_VIEWS``, ``PRESENTER_VIEWS``
and ``SOURCE_NAMES``, :data:`vizmm.render.pillow.VIEWS`,
:data:`vizmm.export.HTML_ONLY_VIEWS`, :data:`vizmm.render.policy.LIGHT_VIEWS`.

Like Lumen's ``View`` subclasses, found by their ``view_type``, and
triton-viz's visualizers, registered by the kind of record they draw, a view
is found by its name; unlike them, a spec is plain data and functions (no
class to subclass), and the registry holds no Bokeh or Pillow object: the
drawing functions import their library when they are called, so a GIF export
never imports Bokeh. Add a view: README, "Add a view".
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

from ...replay import ASPECTS as REPLAY_ASPECTS
from ...replay.view_roles import role as view_role

__all__ = [
    "aspects_of",
    "ASPECTS",
    "PLACES",
    "GridSpec",
    "Later",
    "FINDING",
    "ViewSpec",
    "register",
    "get",
    "all_views",
    "names",
    "parts",
    "source_names",
    "source_kind",
    "column_kinds",
    "tooltips",
    "later_parts",
    "beside",
    "below",
]

#: The aspects of a replayed frame a view may need: :data:`vizmm.replay.ASPECTS`, the
#: names ``Replay.frame(i, aspects=...)`` takes (a frame's finding is always there).
ASPECTS = REPLAY_ASPECTS

#: Where a scene puts a view's models: a row above the grids (``top``), the
#: column of the matrices (``left``), the column under the shared-memory plot
#: (``middle``), the column right of it (``right``), a row under all (``bottom``).
PLACES = ("top", "left", "middle", "right", "bottom")


@dataclasses.dataclass(frozen=True)
class GridSpec:
    """Where a view is drawn as a grid of cells on one of a scene's shared plots.

    A :class:`vizmm.render.bokeh_scene.Scene` draws the grids of its views
    on a few shared plots (a plot per grid would cost a new page a plot, a
    title and a toolbar each): every grid naming one ``plot`` is drawn on it,
    in the views' order, each in its box (:class:`vizmm.render.scene_parts.GridPlace`)
    at the pixels ``at`` gives.

    Parameters
    ----------
    plot : str
        The shared plot's name, as the Bokeh plot is named (``"vizmm-matrices"``:
        M, N, P and the blocks, Fig. 5.10's layout; ``"vizmm-tiles"``: Mds,
        Nds and the threads).
    place : str
        Where the scene puts the plot (one of :data:`PLACES`); the first grid
        placed on a plot says it.
    box : callable
        ``box(scene)``: the grid's box, sized, not placed
        (``scene._grid_box(...)``, a :class:`~vizmm.render.scene_parts.GridPlace`).
    at : callable
        ``at(scene, boxes, placed)``: the box's top-left corner on the plot,
        ``(x, y)`` pixels, or None where the grid does not go on this plot
        (then the view's next :class:`GridSpec` is tried). ``boxes``: the
        boxes of every grid that may go on the plot, by view; ``placed``:
        those placed so far, in order, their ``x`` and ``y`` set.
    draw : callable
        ``draw(scene, plot, box)``: the grid's glyphs on ``plot``, in its
        ranges (``scene._adder(plot, grid=name)``); returns its cells'
        renderer (named ``vizmm-<view>`` by the scene).
    """

    plot: str
    place: str
    box: Callable[..., Any]
    at: Callable[..., tuple[int, int] | None]
    draw: Callable[..., Any]

    def __post_init__(self) -> None:
        if self.place not in PLACES:
            raise ValueError(f"grid on {self.plot!r}: place {self.place!r} is not a scene's place")


def beside(placed: Mapping[str, Any], gap: int = 10) -> tuple[int, int]:
    """The corner right of every box placed so far, on its top row: ``(x, 0)``.

    A :attr:`GridSpec.at` for grids side by side (Mds and Nds).

    Parameters
    ----------
    placed : mapping of str to GridPlace
        The boxes placed so far on the plot (their ``x``, ``width``).
    gap : int
        Pixels between two boxes.

    Returns
    -------
    (int, int)
        ``(0, 0)`` for the first box.
    """
    return max((g.x + g.width + gap for g in placed.values()), default=0), 0


def below(placed: Mapping[str, Any], gap: int = 8) -> tuple[int, int]:
    """The corner under every box placed so far, at the left edge: ``(0, y)``.

    A :attr:`GridSpec.at` for a grid under others (the threads under Mds and Nds).

    Parameters
    ----------
    placed : mapping of str to GridPlace
        The boxes placed so far on the plot (their ``y``, ``height``).
    gap : int
        Pixels between two boxes.

    Returns
    -------
    (int, int)
        ``(0, 0)`` for the first box.
    """
    return 0, max((g.y + g.height + gap for g in placed.values()), default=0)


@dataclasses.dataclass(frozen=True)
class Later:
    """Glyphs a scene draws only once a frame first needs them (a part drawn later).

    Most pages never show a finding or the memory transactions: their
    glyphs (about 70 Bokeh models) are made when a frame first carries them
    (:meth:`vizmm.render.bokeh_scene.Scene.draw_parts`). A view's drawing
    hands the scene what such a part adds (``scene._later_part(name, plot,
    make)``).

    Parameters
    ----------
    name : str
        The part's name, as :meth:`~vizmm.render.bokeh_scene.Scene.draw_parts` takes it.
    rank : int
        Its glyphs' drawing order on a plot: over the cells (0) and over the
        parts of a lower rank; what an add-on draws later comes over all.
    needed : callable
        ``needed(frame)``: True where a :class:`vizmm.replay.Frame` shows the part.
    """

    name: str
    rank: int
    needed: Callable[[Any], bool]


#: A finding's outlines over the cells it marks (``<view>_finding``, the
#: markable views'), drawn once a frame first carries a finding.
FINDING = Later("finding", 2, lambda frame: frame.finding is not None)


@dataclasses.dataclass(frozen=True)
class ViewSpec:
    """One view: its name, what it needs, its sources and how each renderer draws it.

    Parameters
    ----------
    name : str
        The view's name, as pages, exports and the command line choose it
        (``"M"``, ``"threads"``, ``"table"``).
    order : int
        Its place in every list of views (the registry sorts by it).
    aspects : tuple of str
        What it needs of a frame, from :data:`ASPECTS`.
    sources : mapping of str to str
        Its Bokeh sources, in the order they are filled, each with the kind of
        its columns (a key of :func:`column_kinds`).
    columns : callable, optional
        ``columns(ctx, want)``: the columns of the sources ``want`` (a
        frozenset of its own source names) for the frame of ``ctx``
        (:class:`vizmm.render.columns.FrameContext`), ``{source: {column:
        list}}``. None for a view without sources (the legend).
    kinds : mapping of str to tuple of str
        The column kinds it defines: kind -> column names.
    hover : mapping of str to tuple
        What hovering over a row of each kind says: Bokeh's ``(label, field)``
        tooltips, fields among the kind's columns (``{name}``: the grid's matrix).
    html : bool
        Drawn as HTML (a Bokeh ``Div``, :mod:`vizmm.render.html_text`), not a plot.
    pillow : bool
        The Pillow renderer (GIF/MP4 frames) draws it.
    light : bool
        Kept for a large trace (:func:`vizmm.render.policy.affordable_views`).
    presenter : bool
        Shown in presenter mode (what a class must see on a projector).
    host : str, optional
        A part of another view: shown with that view, not chosen on its own
        (its sources are the host's too).
    draw_bokeh : callable, optional
        ``draw_bokeh(scene, *args)``: its Bokeh models on a
        :class:`vizmm.render.bokeh_scene.Scene`, placed by ``place`` (a text
        view's ``Div``; a hosted view's row, given its host's
        :class:`~vizmm.render.scene_parts.GridPlace`; the blocks' plot of
        their own where no shared plot took them); None: nothing to place.
    place : str, optional
        Where the scene puts what ``draw_bokeh`` returns (one of
        :data:`PLACES`): ``"top"`` (a row above the grids), ``"middle"``
        (under the shared-memory plot), ``"right"`` (the column right of
        it), ``"bottom"`` (a row under all).
    grids : tuple of GridSpec
        Where the view is a grid of cells on a shared plot of the scene, each
        tried in turn (the blocks: the matrices' free corner, else under the
        threads); the first that places it draws it, once.
    update_bokeh : callable, optional
        ``update_bokeh(scene, frame)``: what the view changes on its models
        at each frame besides its sources' columns (the per-warp row's
        heading), called by :meth:`~vizmm.render.bokeh_scene.Scene.update`
        for the views whose ``draw_bokeh`` drew something. What it keeps
        between frames is in ``scene.state[name]``.
    later : Later, optional
        A part of the scene this view draws only for some frames (the
        transactions view's: the banks, the warp's threads, the per-warp
        row); the views' drawings add to it by its name.
    tap : bool
        A tap picks a cell of its grid (the thread to follow, the block to
        replay): its source named as the view keeps a selection of its own.
    finding_width : float
        The width of a finding's outlines over its cells, pixels (markable views).
    page_width : callable, optional
        ``page_width(scene)``: its width in pixels before it is drawn, for a
        page fitted to a window (a view beside the grids' middle column).
    draw_pillow : callable, optional
        ``draw_pillow(renderer, img, draw, frame, panel)``: its Pillow drawing
        (GIF and MP4 frames) in its panel of a
        :class:`vizmm.render.pillow.FrameRenderer` (a hosted view: its host's).

    Notes
    -----
    Two flags are not the spec's to set: :attr:`markable` and
    :attr:`pickable` are read from the view's role in the replay
    (:mod:`vizmm.replay.view_roles`), where the marks and the picks are made
    (the replay imports nothing of this layer).
    """

    name: str
    order: int
    aspects: tuple[str, ...]
    sources: Mapping[str, str] = dataclasses.field(default_factory=dict)
    columns: Callable[..., dict[str, dict[str, list]]] | None = None
    kinds: Mapping[str, tuple[str, ...]] = dataclasses.field(default_factory=dict)
    hover: Mapping[str, tuple[tuple[str, str], ...]] = dataclasses.field(default_factory=dict)
    html: bool = False
    pillow: bool = False
    light: bool = False
    presenter: bool = False
    host: str | None = None
    draw_bokeh: Callable[..., Any] | None = None
    place: str | None = None
    draw_pillow: Callable[..., Any] | None = None
    grids: tuple[GridSpec, ...] = ()
    update_bokeh: Callable[..., None] | None = None
    later: Later | None = None
    tap: bool = False
    finding_width: float = 3
    page_width: Callable[..., int] | None = None

    @property
    def markable(self) -> bool:
        """A finding of ``vizmm check`` marks cells of it (a ``<name>_finding`` source).

        Its role in the replay says so (:func:`vizmm.replay.view_roles.role`).
        """
        return view_role(self.name).markable

    @property
    def pickable(self) -> bool:
        """A question may ask the student to click a cell of it (``apps/quiz.py``).

        Its role in the replay says so (:func:`vizmm.replay.view_roles.role`).
        """
        return view_role(self.name).pickable

    def __post_init__(self) -> None:
        unknown = [a for a in self.aspects if a not in ASPECTS]
        if unknown:
            raise ValueError(
                f"view {self.name!r}: unknown aspect(s) {', '.join(map(repr, unknown))}; "
                f"aspects are {', '.join(ASPECTS)}"
            )
        if self.place is not None and self.place not in PLACES:
            raise ValueError(f"view {self.name!r}: place {self.place!r} is not a scene's place")


_REGISTRY: dict[str, ViewSpec] = {}


def register(spec: ViewSpec) -> ViewSpec:
    """Add ``spec`` to the registry (once per name); return it.

    Parameters
    ----------
    spec : ViewSpec
        The view. Its column kinds must agree with those other views define.

    Returns
    -------
    ViewSpec
        ``spec``, so that a module can keep it under a name.

    Raises
    ------
    ValueError
        For a name already registered, or a column kind another view defines
        otherwise.
    """
    if spec.name in _REGISTRY:
        raise ValueError(f"a view named {spec.name!r} is registered already")
    for other in _REGISTRY.values():
        for kind, cols in spec.kinds.items():
            if other.kinds.get(kind, cols) != cols:
                raise ValueError(f"view {spec.name!r} defines column kind {kind!r} otherwise")
    _REGISTRY[spec.name] = spec
    _derived.clear()
    return spec


def get(name: str) -> ViewSpec:
    """The spec of view ``name``.

    Parameters
    ----------
    name : str
        A registered view's name.

    Returns
    -------
    ViewSpec

    Raises
    ------
    KeyError
        For a name not registered.
    """
    try:
        return _REGISTRY[name]
    except KeyError:
        raise KeyError(f"no view {name!r}; views are {', '.join(names())}") from None


def all_views(hosted: bool = False) -> tuple[ViewSpec, ...]:
    """Every registered view, in their stable order (``order``, then name).

    Parameters
    ----------
    hosted : bool
        Include the views that are parts of another (``host``).

    Returns
    -------
    tuple of ViewSpec
    """
    specs = sorted(_REGISTRY.values(), key=lambda s: (s.order, s.name))
    for s in specs:
        if s.host is not None and s.host not in _REGISTRY:
            raise ValueError(f"view {s.name!r}: its host {s.host!r} is not registered")
    return tuple(s for s in specs if hosted or s.host is None)


def parts(host: str) -> tuple[ViewSpec, ...]:
    """The views that are parts of view ``host`` (``host=...``), in order.

    Parameters
    ----------
    host : str
        A view's name (``"threads"``: the per-warp row is its part).

    Returns
    -------
    tuple of ViewSpec
    """
    return tuple(s for s in all_views(hosted=True) if s.host == host)


def names(**flags: bool) -> tuple[str, ...]:
    """The names of the views (not the hosted parts) whose flags are as given, in order.

    Parameters
    ----------
    **flags : bool
        Fields of :class:`ViewSpec` and the value they must have
        (``names(pillow=True)``, ``names(html=True, pillow=False)``).

    Returns
    -------
    tuple of str
    """
    return tuple(s.name for s in all_views() if all(getattr(s, k) == v for k, v in flags.items()))


def aspects_of(views, always=()) -> tuple[str, ...]:
    """The aspects of a frame that drawing ``views`` needs (their hosted parts' too).

    What a page or an export passes to ``Replay.frame(i, aspects=...)`` so
    that it makes only what it shows.

    Parameters
    ----------
    views : iterable of str
        Names of registered views.
    always : iterable of str
        Aspects the caller needs besides (the Pillow frame's title reads the
        caption, a page's narration its caption, slots and threads).

    Returns
    -------
    tuple of str
        In the order of :data:`ASPECTS`.

    Raises
    ------
    KeyError
        A name no view is registered under.
    """
    want = set(always)
    for name in views:
        spec = get(name)
        want.update(spec.aspects)
        for part in parts(name):
            want.update(part.aspects)
    return tuple(a for a in ASPECTS if a in want)


_derived: dict[str, Any] = {}


def source_names() -> dict[str, tuple[str, ...]]:
    """Each view's sources: its own, its hosted parts', then its finding's.

    Returns
    -------
    dict of str to tuple of str
        View name -> source names, in the order they are filled; every view
        (not the hosted parts), in order.
    """
    if "sources" not in _derived:
        out = {}
        for spec in all_views():
            found = (f"{spec.name}_finding",) if spec.markable else ()
            hosted = (n for p in parts(spec.name) for n in p.sources)
            out[spec.name] = (*spec.sources, *hosted, *found)
        _derived["sources"] = out
    return dict(_derived["sources"])


def source_kind(source: str) -> str:
    """The kind of columns of ``source`` (a key of :func:`column_kinds`).

    Parameters
    ----------
    source : str
        A source name of :func:`source_names`.

    Returns
    -------
    str
    """
    if "kinds_of" not in _derived:
        kinds: dict[str, str] = {}
        for spec in all_views(hosted=True):
            kinds.update(spec.sources)
            if spec.markable:
                kinds[f"{spec.name}_finding"] = "finding"
        _derived["kinds_of"] = kinds
    return _derived["kinds_of"][source]


def column_kinds() -> dict[str, tuple[str, ...]]:
    """Every kind of columns: kind -> column names (those the views define).

    Returns
    -------
    dict of str to tuple of str
    """
    out: dict[str, tuple[str, ...]] = {}
    for spec in all_views(hosted=True):
        out.update(spec.kinds)
    return out


def later_parts() -> tuple[Later, ...]:
    """The parts a scene draws only once a frame needs them: the finding's, then the views'.

    Returns
    -------
    tuple of Later
        :data:`FINDING`, then each view's :attr:`ViewSpec.later`, in the views' order.
    """
    own = (s.later for s in all_views(hosted=True) if s.later is not None)
    return (FINDING, *dict.fromkeys(own))


def tooltips() -> dict[str, tuple[tuple[str, str], ...]]:
    """Every kind's hover tooltips (kind -> ``(label, field)`` pairs), those the views define.

    Returns
    -------
    dict of str to tuple
    """
    out: dict[str, tuple[tuple[str, str], ...]] = {}
    for spec in all_views(hosted=True):
        out.update(spec.hover)
    return out


def _register_modules() -> None:
    """Import every module of this package: each registers the views of its family."""
    import importlib
    import pkgutil

    for info in sorted(pkgutil.iter_modules(__path__), key=lambda i: i.name):
        importlib.import_module(f"{__name__}.{info.name}")


_register_modules()
