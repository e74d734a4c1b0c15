"""The Bokeh scene: every view of one replayed block as Bokeh figures.

Shared by the dashboard (``apps/dashboard.py``, a Bokeh server app through
Panel) and the offline HTML export. Two layers:

* :func:`frame_columns` is pure: it turns one :class:`~vizmm.replay.Frame`
  into the ``ColumnDataSource`` data of every glyph (``{source name: {column:
  list}}``). Names are stable; the HTML export stores these dicts per frame.
* :class:`Scene` builds the figures and sources once for a trace and
  :meth:`Scene.update` assigns the columns of a new frame (only the columns
  that changed travel to the browser).

Views (the ``views`` argument of :class:`Scene`):

``caption``
    the frame's title and what happens at this step;
``M``, ``N``, ``P``
    the matrices, laid out as in the book's Fig. 5.7 / 5.10 (N above P, M
    left of P), the block's current tiles outlined, elements being loaded in
    the colour of the loading thread, ghost cells where a tile overhangs the
    matrix (zero-filled, wrong element, outside the allocation);
``Mds``, ``Nds``
    the shared-memory tiles, each slot labelled with the element it holds
    (``M₀,₂``, ``0.0`` for a zero-fill), stale and empty slots greyed;
``threads``
    the T x T threads of the block coloured by state (loading, waiting at a
    barrier, computing, writing P, idle), with their own colour as a swatch;
``legend``
    what every colour means;
``source``
    the kernel's source with the executed line highlighted;
``counters``
    global loads so far against the naive kernel, CGMA, the followed
    thread's Pvalue after each phase;
``blocks``
    the grid of blocks, the replayed block highlighted (tap to choose);
``table``
    the book's Fig. 5.8 table for the block, the current cell highlighted.

Every colour comes from :mod:`vizmm.render.palette`. Coordinates: matrix and tile
grids put element (row, col) at ``x = col + 0.5``, ``y = row + 0.5`` with the
y axis pointing down; the text views (caption, source, counters, table) use
character columns for x and text lines for y.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import partial
from typing import Any

from ..replay import Frame
from ..trace import Trace
from . import palette as pal
from . import views as view_specs
from .columns import (  # noqa: F401 - COUNTER_CHARS and _uni, as they were
    CAPTION_CHARS,
    COUNTER_CHARS,
    SANS,
    FrameContext,
    _finding_columns,
    _uni,
    matrix_palette,
    slot_label,
    thread_label,
)
from .glyphs import add_glyph
from .html_text import TextBox, text_view_html
from .policy import check_known_views, view_names
from .scene_parts import (
    GridPlace,
    _empty,
    _for_bokeh,
    _hover,
    _length,
    _outlines,
    _Sources,
    _text,
    wrap_title,
)
from .scene_sizes import MIN_INDEX_PX, PRESENTER_BOX, _Sizes, _title_columns
from .shared_steps import STEPS
from .views.table import table_extent

__all__ = [
    "VIEWS",
    "PRESENTER_VIEWS",
    "PRESENTER_BOX",
    "SOURCE_NAMES",
    "SOURCE_ORDER",
    "HTML_VIEWS",
    "matrix_palette",
    "frame_columns",
    "slot_label",
    "thread_label",
    "add_glyph",
    "table_extent",
    "wrap_title",
    "Scene",
]


# Every list of views, derived from the views' specs (vizmm.render.views).
#: Every view a :class:`Scene` can show.
VIEWS = view_specs.names()
#: The views drawn as HTML (a Bokeh ``Div`` each, :mod:`vizmm.render.html_text`):
#: text and a few boxes, one model each instead of a plot's dozen.
HTML_VIEWS = view_specs.names(html=True)
#: The views of a presenter scene: what a class must see on a projector.
PRESENTER_VIEWS = view_specs.names(presenter=True)
#: The sources each view draws from (keys of :func:`frame_columns`).
SOURCE_NAMES = view_specs.source_names()
#: Every source name, in the order :func:`frame_columns` fills them.
SOURCE_ORDER = tuple(n for names in SOURCE_NAMES.values() for n in names)
ALL_SOURCES = frozenset(SOURCE_ORDER)
#: The sources a tap selects in (the grids with a ``TapTool``: the views with
#: ``tap``, their sources named as they are); every other source of a scene
#: shares one empty ``Selection``.
TAPPED_SOURCES = frozenset(s.name for s in view_specs.all_views() if s.tap)


# ------------------------------------------------------------------ frames
def frame_columns(
    frame: Frame,
    trace: Trace,
    sources: Iterable[str] | None = None,
    theme: str | pal.Palette = "light",
    caption_chars: int = CAPTION_CHARS,
    conceal: bool = False,
) -> dict[str, dict[str, list]]:
    """The data of every glyph of the scene for one frame (pure).

    Parameters
    ----------
    frame : Frame
        A frame of a :class:`~vizmm.replay.Replay` of ``trace``.
    trace : Trace
        The trace the frame replays (for the matrices' values, the kernel
        source and the Fig. 5.8 table).
    sources : iterable of str, optional
        Compute only these sources (a scene with fewer views needs fewer;
        the matrices of a 4096 x 4096 trace are costly). All by default.
    theme : {'light', 'dark'} or Palette
        The colours (:func:`vizmm.render.palette.palette`).
    caption_chars : int
        Characters per line of the caption (a presenter scene's are fewer).
    conceal : bool
        Leave the text of the Fig. 5.8 table's future cells out (a question
        asked at this step must not find its answer in the page's data).

    Returns
    -------
    dict of str to dict of str to list
        ``{source name: {column: list}}``; the names are the values of
        :data:`SOURCE_NAMES` (``"M"``, ``"M_outline"``, ``"P_pvalue"``, ...,
        ``"Mds"``, ``"threads"``, ``"table"``, ...). Every list of one source
        has the same length; plain Python lists of str, int and float, ready
        for JSON. Matrix cells hold an integer ``code`` (see
        :func:`matrix_palette`).
    """
    want = ALL_SOURCES if sources is None else frozenset(sources)
    unknown = want - ALL_SOURCES
    if unknown:
        raise ValueError(f"unknown source(s) {', '.join(sorted(unknown))}")
    th = pal.palette(theme)
    ctx = FrameContext(frame, trace, th, caption_chars, conceal)
    made: dict[str, dict[str, list]] = {}
    for spec in view_specs.all_views(hosted=True):
        own = want.intersection(spec.sources)
        if own and spec.columns is not None:
            made.update(spec.columns(ctx, frozenset(own)))
        if spec.markable and f"{spec.name}_finding" in want:
            made[f"{spec.name}_finding"] = _finding_columns(frame, spec.name, th)
    return {name: made[name] for name in SOURCE_ORDER if name in made}


# ------------------------------------------------------------------- scene


class Scene:
    """Bokeh figures for one trace, built once; :meth:`update` draws a frame.

    Parameters
    ----------
    trace : Trace
        The recording whose blocks are replayed.
    views : iterable of str, optional
        Which of :data:`VIEWS` to show; all by default.
    presenter : bool
        Large type and cells as large as fit in :data:`PRESENTER_BOX` (use
        ``views=PRESENTER_VIEWS``: the caption, M, N, P, Mds, Nds and threads
        then fit a 1024 x 768 or 1280 x 720 projector without scrolling).
    theme : {'light', 'dark'} or Palette
        The colours (:func:`vizmm.render.palette.palette`); ``'dark'`` for dim rooms.
    caption_chars : int, optional
        Characters per caption line (narrower scenes, e.g. two side by side).
    fit : (width, height), optional
        Pixels the caption, matrices, Mds, Nds and threads must fit in (cells
        are sized to fill them), e.g. half a page for two scenes side by side.
    page : (width, height), optional
        Pixels the whole scene's first screen has (a browser window less the
        page's controls): the kernel listing, M, N, P, the blocks, Mds, Nds
        and the threads are sized to fit in it side by side (``_Sizes.page``);
        the legend, counters and table may lie below. Ignored with ``fit`` or
        ``presenter``.

    Attributes
    ----------
    sources : Mapping of str to ColumnDataSource
        One source per key of :func:`frame_columns` used by the plotted
        views, each made when first asked for: the sources of parts drawn
        later (a finding's outlines, the transactions view) are made with
        them. The text views (:data:`HTML_VIEWS`) have none.
    figures : dict of str to bokeh.models.Plot
        The plot each grid (``"M"``, ``"threads"``, ``"blocks"`` ...) is drawn
        on: bare plots, not ``bokeh.plotting.figure``. Grids share plots (M,
        N, P and the blocks one, ``vizmm-matrices``; Mds, Nds and the threads
        another, ``vizmm-tiles``), each grid in its own ranges: draw more on
        grid ``view`` with ``add_glyph(figures[view], ..., **ranges(view))``.
        Its cells' renderer is named ``vizmm-<view>``.
    grids : dict of str to GridPlace
        Each grid's box on its plot (pixels) and cell size.
    texts : dict of str to bokeh.models.Div
        The text views by name (those of :data:`HTML_VIEWS` shown): each a
        ``Div`` of :func:`vizmm.render.html_text.text_view_html`, named
        ``vizmm-<view>`` as the figures are.
    state : dict of str to object
        What a view's drawing keeps between frames, by view (the per-warp
        row's spacer and plot: its spec's ``update_bokeh`` reads it).
    layout : bokeh.models.LayoutDOM
        Every view, arranged (matrices left, shared memory and threads in
        the middle, source and counters right, the table below).

    Raises
    ------
    ValueError
        For an unknown view name or theme.
    """

    def __init__(
        self,
        trace: Trace,
        views: Iterable[str] | None = None,
        presenter: bool = False,
        theme: str | pal.Palette = "light",
        caption_chars: int | None = None,
        fit: tuple[int, int] | None = None,
        page: tuple[int, int] | None = None,
    ):
        from bokeh.models import (
            AllIndices,
            ColumnDataSource,
            LinearScale,
            Selection,
            UnionRenderers,
        )

        views = VIEWS if views is None else tuple(view_names(views))
        check_known_views(views, VIEWS)
        self.trace = trace
        self.views = views
        self.presenter = bool(presenter)
        self.palette = pal.palette(theme)
        self.theme = self.palette.name
        self.sizes = _Sizes.of(trace, self.presenter, views)
        if fit is not None:
            self.sizes = _Sizes._fit(trace, set(views), int(fit[0]), int(fit[1]), self.presenter)
        elif page is not None and not self.presenter:
            middle = self._page_widths()
            self.sizes = _Sizes.page(trace, set(views), int(page[0]), int(page[1]), middle)
        if caption_chars is not None:
            self.sizes = dataclasses.replace(self.sizes, caption_chars=int(caption_chars))
        names = [s for v in views if v not in HTML_VIEWS for s in SOURCE_NAMES[v]]
        # the text views' columns, worked out with the sources' and drawn as HTML
        self._html_sources = tuple(s for v in views if v in HTML_VIEWS for s in SOURCE_NAMES[v])
        self.texts: dict[str, Any] = {}
        # each text view's box and how its HTML is drawn (text_view_html's arguments)
        self._text_looks: dict[str, tuple[TextBox, dict[str, Any]]] = {}
        # one selection policy for all (it holds nothing), not one per source, and
        # one empty selection for every source no tap selects in (only the
        # threads' and the blocks' grids take taps: see _cells)
        self._policy = UnionRenderers()
        self._unselected = Selection()
        self.sources = _Sources(
            names, lambda name: ColumnDataSource(data=_empty(name), **self._source_props(name))
        )
        # What the plots can share, as they hold nothing of their own: one filter
        # for every renderer's view, one scale (BokehJS draws with a copy of it per
        # plot), the grids' ranges of equal extent (no tool moves them). Nothing is
        # shared between scenes.
        self._every = AllIndices()
        self._scale = LinearScale()
        self._shared_models: dict[tuple, object] = {}
        self._glyphs: dict[tuple, object] = {}  # glyphs of equal looks, drawn from many sources
        self.figures: dict[str, Any] = {}
        #: Cells fitted to a box (``fit``): the views that would change its sizes keep out.
        self.fitted = fit is not None
        self.state: dict[str, Any] = {}
        # each drawn view's update_bokeh, called by update
        self._updates: list[Callable[[Scene, Frame], None]] = []
        #: Each grid's box on its plot (``figures[view]``), by view.
        self.grids: dict[str, GridPlace] = {}
        self._main: dict[str, Any] = {}  # each grid's cells (named vizmm-<view>)
        # What the sources show: the columns last worked out here and the frame
        # they are of; the frame shown last and the settings it was shown with.
        self._last: dict[str, dict[str, list]] = {}
        self._last_of: Frame | None = None
        self._last_frame: Frame | None = None
        self._last_signature: tuple = ()
        #: Leave the Fig. 5.8 table's future cells blank (questions: see frame_columns).
        self.conceal = False
        # Parts drawn only for some frames (a selected finding, the transactions
        # view: views.later_parts), made when a frame first needs them: what they
        # add to a figure (``fig, make, rank``), and the figures' renderers in
        # drawing order.
        self._parts = view_specs.later_parts()
        self._later: dict[str, list[tuple[Any, Callable[[], None], int]]] = {
            p.name: [] for p in self._parts
        }
        self._rank: dict[str, int] = {}
        self.layout = self._build()
        for fig in self.figures.values():
            for r in fig.renderers:
                self._rank.setdefault(r.id, 0)
        for view, div in self.texts.items():
            div.name = f"vizmm-{view}"  # so pages and tests can find each view
        for view in self.grids:  # ... and each grid's cells
            self._main[view].name = f"vizmm-{view}"

    def _page_widths(self) -> int:
        """The widest ``page_width`` of the views (one beside the grids: the legend), or 0."""
        widths = [view_specs.get(v).page_width for v in self.views]
        return max((width(self) for width in widths if width is not None), default=0)

    # --------------------------------------------------------------- update
    @property
    def aspects(self) -> tuple[str, ...]:
        """What a frame must hold for :meth:`update` (``Replay.frame(i, aspects=...)``).

        The aspects of the scene's views and their hosted parts
        (:func:`vizmm.render.views.aspects_of`).
        """
        return view_specs.aspects_of(self.views)

    def update(self, frame: Frame) -> None:
        """Show ``frame``: assign the new columns of every source.

        Only columns whose values changed since the last update are sent
        (whole columns; a source whose length changes is replaced whole).
        A step that another scene of this process has already taken (the
        same trace, frames and settings: :mod:`vizmm.render.shared_steps`)
        assigns what that scene assigned, without working it out again.

        Parameters
        ----------
        frame : Frame
            A frame of a replay of the scene's trace.
        """
        self.draw_parts(*(p.name for p in self._parts if p.needed(frame)))
        made = self.sources.made()  # a part not drawn yet has no source to fill
        signature = (
            made,
            self.palette,
            self.sizes,  # the text views' HTML is drawn to size
            bool(self.conceal),
            tuple(sorted(self.texts)),  # the text views it has (the dashboard's: no caption)
        )
        # A step is shared from and to frames with keys (None before: nothing shown yet).
        last = self._last_frame
        shareable = bool(frame.key) and (last is None or bool(last.key))
        before = None if last is None else (self._last_signature, last.key)
        after = (signature, frame.key)
        shared = STEPS.get(self.trace, before, after) if shareable else None
        if shared is None:
            assignments = self._assignments(frame, signature)
            if shareable:
                STEPS.put(self.trace, before, after, assignments)
            shared = tuple(assignments)
        self._assign(shared)
        self._last_frame, self._last_signature = frame, signature
        for update in self._updates:  # what the views change besides their columns
            update(self, frame)

    def _assignments(self, frame: Frame, signature: tuple) -> list[tuple[str, bool | None, Any]]:
        """What showing ``frame`` assigns, after what is shown: ``(source, whole, columns)``.

        ``whole`` is True where the source is replaced (its length or columns
        changed), False where only the changed columns are; a text view's
        new HTML is ``(view, None, {"html": text})``.
        """
        made = signature[0]
        data = self._columns(frame, signature)
        old_data = self._last
        if self._last_frame is not None and self._last_of is not self._last_frame:
            # the last steps were shared: what is shown is this frame's columns
            old_data = self._columns(self._last_frame, self._last_signature)
        assignments: list[tuple[str, bool | None, Any]] = []
        for name in made:
            new, old = data[name], old_data.get(name)
            if old is None or _length(old) != _length(new) or old.keys() != new.keys():
                assignments.append((name, True, {c: _for_bokeh(v) for c, v in new.items()}))
                continue
            changed = {c: _for_bokeh(v) for c, v in new.items() if old[c] != v}
            if changed:
                assignments.append((name, False, changed))
        # a text view's HTML when its columns changed (one without columns never does)
        changed_views = [
            view
            for view in self._text_looks
            if any(old_data.get(n) != data[n] for n in SOURCE_NAMES[view])
        ]
        for view, text in self.text_html(data, changed_views).items():
            assignments.append((view, None, {"html": text}))
        self._last, self._last_of = data, frame
        return assignments

    def _assign(self, shared: Iterable[tuple[str, bool | None, Any]]) -> None:
        """Assign ``(source, whole, columns)`` (or a text view's HTML) to the page's models."""
        for name, whole, columns in shared:
            if whole is None:  # a text view: its HTML
                if self.texts[name].text != columns["html"]:
                    self.texts[name].text = columns["html"]
                continue
            source = self.sources[name]
            if whole:
                source.data = dict(columns)
            else:
                source.data.update(columns)

    def _later_part(
        self, part: str, fig, make: Callable[[], None], rank: int | None = None
    ) -> None:
        """Draw ``make()`` on ``fig`` once a frame needs ``part`` (see :meth:`draw_parts`).

        ``part`` is a name of :func:`vizmm.render.views.later_parts`; what
        ``make`` adds to ``fig`` is drawn over the parts of a lower rank (the
        part's, or ``rank``). ``fig`` None: ``make`` makes a plot of its own
        (the per-warp row), drawn in its order.
        """
        own = {p.name: p.rank for p in self._parts}[part]
        self._later[part].append((fig, make, own if rank is None else rank))

    def draw_parts(self, *parts: str) -> None:
        """Draw the glyphs of ``parts`` that only some frames need, once each.

        A new scene has no glyphs for a selected finding (``'finding'``: the
        outlines of ``vizmm check``'s marks) nor for the memory-transactions
        view (``'transactions'``: the banks of Mds and Nds, the warp's
        threads, the per-warp row's cells): most pages never show either,
        and together they are about 70 Bokeh models a new session would
        otherwise build and send. :meth:`update` draws them when a frame
        first carries a finding or the transactions view; call this for a
        scene whose frames are shown without :meth:`update` (an HTML export).
        Each figure keeps its drawing order: the cells, the banks, the
        finding's outlines, the warp's outline, then anything an add-on drew
        (the question marks).

        Parameters
        ----------
        *parts : str
            The parts to draw, names of :func:`vizmm.render.views.later_parts`
            (``'finding'``, ``'transactions'``); a part already drawn is left
            as it is.

        Raises
        ------
        ValueError
            For another part's name.
        """
        for part in parts:
            if part not in self._later:
                known = " or ".join(map(repr, self._later))
                raise ValueError(f"no part {part!r} to draw: {known}")
            self._draw_part(part)

    def _draw_part(self, part: str) -> None:
        while self._later[part]:  # (a make may hand over more of its part)
            todo, self._later[part] = self._later[part], []
            for fig, make, rank in todo:
                if fig is None:  # a plot of its own
                    make()
                    continue
                before = {r.id for r in fig.renderers}
                make()
                for r in fig.renderers:
                    if r.id not in before:
                        self._rank[r.id] = rank
                ordered = sorted(fig.renderers, key=lambda r: self._rank.get(r.id, 4))
                if ordered != list(fig.renderers):
                    fig.renderers = ordered

    def _columns(self, frame: Frame, signature: tuple) -> dict[str, dict[str, list]]:
        sources, palette, sizes, conceal, _views = signature
        sources = (*sources, *self._html_sources)
        return frame_columns(frame, self.trace, sources, palette, sizes.caption_chars, conceal)

    def text_html(
        self, columns: Mapping[str, Mapping[str, Sequence]], views: Iterable[str] | None = None
    ) -> dict[str, str]:
        """The HTML of the scene's text views that change with the frame (pure).

        Parameters
        ----------
        columns : mapping
            :func:`frame_columns` of a frame, with at least the sources of
            the scene's text views (``caption``, ``source``, ``counters``
            and ``bars``, ``table``; the legend never changes).
        views : iterable of str, optional
            Only these views (default: every text view shown but the legend).

        Returns
        -------
        dict of str to str
            ``{view: HTML}`` for each text view shown but the legend, as its
            ``Div`` in :attr:`texts` takes it (the HTML export steps through
            these).
        """
        want = None if views is None else set(views)
        return {
            view: text_view_html(view, columns, box, **looks)
            for view, (box, looks) in self._text_looks.items()
            if SOURCE_NAMES[view] and (want is None or view in want)
        }

    # ---------------------------------------------------------------- build
    def _build(self):
        """The scene's layout: the grids on their shared plots, the other views around them.

        Each view says where it goes (its spec, :mod:`vizmm.render.views`):
        a grid on a shared plot (``grids``: M, N and P and the blocks in the
        free corner above M, left of N, Fig. 5.10's layout, on one; Mds, Nds
        and the threads on another), each in a box of its own
        (:class:`GridPlace`), the plot in its grids' place; every other view
        drawn by its spec (``draw_bokeh``) in its place: a row above
        (``top``) or under (``bottom``) the grids, or a column beside them
        (``middle``: under the tiles, ``right``). A hosted part is drawn
        with its host, given the host's grid.
        """
        from bokeh.layouts import column, row

        v = set(self.views)
        placed: dict[str, list] = {p: [] for p in view_specs.PLACES}
        for plot, place in self._shared_plots(v):
            placed[place].append(plot)
        for spec in view_specs.all_views(hosted=True):
            model = self._draw_view(spec, v)
            if model is not None:
                placed[str(spec.place)].append(model)
        # a part of one view is placed as it is, not in a column of its own
        sides = [placed[p] for p in ("left", "middle", "right") if placed[p]]
        main = [p[0] if len(p) == 1 else column(*p, spacing=8) for p in sides]
        rows = list(placed["top"])
        if main:
            rows.append(row(*main, spacing=22) if len(main) > 1 else main[0])
        return column(*rows, *placed["bottom"], spacing=10)

    def _draw_view(self, spec: view_specs.ViewSpec, v: set[str]):
        """What ``spec.draw_bokeh`` draws for the scene's views ``v`` (None: nothing).

        A hosted part is drawn where its host is shown, given the host's grid.
        """
        if spec.draw_bokeh is None or spec.place is None:
            return None
        if spec.host is None:
            model = spec.draw_bokeh(self) if spec.name in v else None
        elif spec.host in self.grids:
            model = spec.draw_bokeh(self, self.grids[spec.host])
        else:
            model = None
        if model is not None and spec.update_bokeh is not None:
            self._updates.append(spec.update_bokeh)
        return model

    def _shared_plots(self, v: set[str]) -> list[tuple[Any, str]]:
        """The shared plots of views ``v``'s grids, each with its place, in the views' order."""
        plots: dict[str, list[tuple[str, view_specs.GridSpec]]] = {}
        for spec in view_specs.all_views():
            if spec.name in v:
                for grid in spec.grids:
                    plots.setdefault(grid.plot, []).append((spec.name, grid))
        out = []
        for name, grids in plots.items():
            plot = self._grid_plot(name, grids)
            if plot is not None:
                out.append((plot, next(g.place for n, g in grids if self.figures.get(n) is plot)))
        return out

    def _grid_plot(self, name: str, grids: Sequence[tuple[str, view_specs.GridSpec]]):
        """Plot ``name`` with the grids that go on it: ``(view, GridSpec)``, tried in order.

        A grid already drawn on another plot is left out; each other one goes
        where its ``at`` says, or not on this plot (None). Returns the plot,
        or None where no grid goes on it.

        Parameters
        ----------
        name : str
            The plot's name (``vizmm-matrices``), as pages and tests find it.
        grids : sequence of (str, GridSpec)

        Returns
        -------
        bokeh.models.Plot or None
        """
        grids = [(view, g) for view, g in grids if view not in self.grids]
        boxes = {view: g.box(self) for view, g in grids}
        placed: dict[str, GridPlace] = {}
        for view, g in grids:
            at = g.at(self, boxes, placed)
            if at is not None:
                box = placed[view] = boxes[view]
                box.x, box.y = int(at[0]), int(at[1])
        if not placed:
            return None
        plot = self._canvas(name)
        for view, g in grids:
            if view in placed:
                self._main[view] = g.draw(self, plot, self._grid_fig(plot, placed[view]))
        self._place(plot, [(box, box.x, box.y) for box in placed.values()])
        return plot

    def replace(self, old, new) -> None:
        """Put model ``new`` where ``old`` is in :attr:`layout` (a part drawn in a spacer's place).

        Parameters
        ----------
        old : bokeh.models.LayoutDOM
            A model of the layout (a ``Spacer`` keeping a part's place).
        new : bokeh.models.LayoutDOM

        Raises
        ------
        ValueError
            Where ``old`` is not in the layout.
        """
        todo = [self.layout]
        while todo:
            box = todo.pop()
            children = list(getattr(box, "children", None) or ())
            if any(c is old for c in children):
                box.children = [new if c is old else c for c in children]
                return
            todo.extend(children)
        raise ValueError("the model to replace is not in the scene's layout")

    def _fig(self, width, height, x_range, y_range, title=None, tools="", **kw):
        """A plot of the scene's look (no toolbar, grid, axes or outline); ``kw`` overrides.

        A bare :class:`~bokeh.models.Plot` with exactly the parts drawn: what
        ``figure()`` adds (axes, grids, their tickers) costs a new session
        time to build and to send even where it is hidden.
        """
        from bokeh.models import Plot, Toolbar
        from bokeh.models.annotations import Title

        if title is not None:  # its look given at once, not property by property
            if title:
                title = Title(
                    text=title,
                    text_font=SANS,
                    text_font_size=f"{self.sizes.font + 1}px",
                    text_color=self.palette.TEXT,
                )
            else:
                title = Title(text=title)
        toolbar = kw.pop("toolbar", None)
        return Plot(
            **{
                "width": int(width),
                "height": int(height),
                "x_range": x_range,
                "y_range": y_range,
                "x_scale": self._scale,
                "y_scale": self._scale,
                "toolbar": Toolbar() if toolbar is None else toolbar,
                "toolbar_location": None,
                "title": title,
                "min_border": 4,
                "outline_line_color": None,
                "background_fill_color": self.palette.BACKGROUND,
                "border_fill_color": self.palette.BACKGROUND,
                **kw,
            }
        )

    def _source_props(self, name: str = "") -> dict[str, Any]:
        """A new source's selection policy and selection (its own for a tapped grid)."""
        props: dict[str, Any] = {"selection_policy": self._policy}
        if name not in TAPPED_SOURCES:
            props["selected"] = self._unselected
        return props

    def _one(self, kind, **props):
        """One model of ``kind`` (a class) with ``props`` per scene (ranges, tickers)."""
        key = (
            kind.__name__,
            *((k, tuple(v) if isinstance(v, list) else v) for k, v in props.items()),
        )
        model = self._shared_models.get(key)
        if model is None:
            model = self._shared_models[key] = kind(**props)
        return model

    def _adder(self, f, selectable: bool = False, grid: str | None = None):
        """``add(kind, source, **props)``: a renderer on ``f`` (:func:`add_glyph`).

        ``selectable`` for the grids a tap selects in (threads, blocks);
        ``grid`` draws in that grid's ranges (:meth:`ranges`).
        """
        ranges = {} if grid is None else self.ranges(grid)
        return partial(
            add_glyph, f, every=self._every, selectable=selectable, shared=self._glyphs, **ranges
        )

    def ranges(self, view: str) -> dict[str, str]:
        """The renderer properties that draw on grid ``view`` in its units (one per cell).

        Parameters
        ----------
        view : str
            A grid of the scene (a key of :attr:`grids`).

        Returns
        -------
        dict of str to str
            ``x_range_name`` and ``y_range_name``, for :func:`add_glyph` on
            ``figures[view]``.
        """
        return {"x_range_name": view, "y_range_name": view}

    def to_cells(self, view: str, px: float, py: float) -> tuple[float, float]:
        """Grid ``view``'s (x, y) units at pixels (``px``, ``py``) of its plot (a tap's ``x, y``).

        Parameters
        ----------
        view : str
            A grid of the scene (a key of :attr:`grids`).
        px, py : float
            Pixels from the plot's top-left corner (its default ranges).

        Returns
        -------
        (float, float)
            Columns and rows from the grid's top-left cell corner: cell
            (r, c) covers ``c <= x < c + 1``, ``r <= y < r + 1``.
        """
        return self.grids[view].to_cells(px, py)

    def _canvas(self, name: str):
        """An empty plot for several grids, sized and given their ranges by :meth:`_place`."""
        from bokeh.models import Range1d

        f = self._fig(1, 1, Range1d(start=0, end=1), Range1d(start=1, end=0), min_border=0)
        f.name = name
        return f

    def _grid_box(self, name, rows, cols, cell, title, labelled=None) -> GridPlace:
        """The box of a rows x cols grid of square cells, wide enough for its title.

        ``labelled`` = (rows, cols) with index labels (default: all); cells
        beyond it (a tile overhanging a matrix) get no index. The box has
        room for the title and the labels above the cells and the labels
        left of them (:meth:`_label`), 4 pixels around.
        """
        s = self.sizes
        extra = _title_columns(cols, cell, title, s.font)
        g = GridPlace(
            name=name,
            rows=rows,
            cols=cols + extra,
            cell=cell,
            title=title,
            labelled=tuple(labelled or (rows, cols)),
            width=int((cols + extra) * cell + 30),
            height=int(rows * cell + 30 + 2 * s.font),
            left=18,
            top=int(20 + 2 * s.font),
        )
        self._label(g)
        return g

    def _grid_fig(self, canvas, g: GridPlace) -> GridPlace:
        """Grid ``g`` (:meth:`_grid_box`) drawn on ``canvas``: ``figures[g.name]`` is the canvas."""
        self.grids[g.name] = g
        self.figures[g.name] = canvas
        return g

    def _label(self, g: GridPlace) -> None:
        """Give grid ``g`` its title, index labels and (a large one) ticks.

        Up to 16 cells every index is labelled: the labels' type shrinks to the
        cell (down to :data:`MIN_INDEX_PX`) rather than leaving indices out;
        only cells too small for that type label every second (or further)
        one. Past 16 the lines between tiles are labelled (0, T, 2T ...) with a
        tick each, and the box grows to hold the last label's half past the
        grid's edge.
        """
        s, th = self.sizes, self.palette
        T = self.trace.tile_width
        cell = g.cell
        labels: dict[str, list] = {
            k: [] for k in ("x", "y", "text", "size", "color", "align", "baseline", "style")
        }
        ticks: dict[str, list] = {"x0": [], "y0": [], "x1": [], "y1": []}
        index: dict[str, dict[float, tuple[str, int]]] = {"above": {}, "left": {}}

        def label(x, y, text, size, color, align, baseline, style="normal"):
            for k, v in zip(labels, (x, y, text, size, color, align, baseline, style), strict=True):
                labels[k].append(v)

        label(g.left, 4, g.title, f"{s.font + 1}px", th.TEXT, "left", "top", "bold")
        rows, cols = g.labelled
        for side, n in (("above", cols), ("left", rows)):
            px = max(9, s.font - 3)
            if n <= 16:
                # a label is about 0.62 em a digit wide, 1.15 em high (left side)
                digits = len(str(max(0, n - 1)))
                room = (cell - 2) / (0.62 * digits) if side == "above" else cell / 1.15
                px = int(max(MIN_INDEX_PX, min(px, room)))
                need = 0.62 * digits * px + 2 if side == "above" else 1.15 * px
                every = max(1, math.ceil(need / max(cell, 1)))
                at = [(i + 0.5, str(i)) for i in range(0, n, every)]
                out = 3
            else:
                at = [(t, str(t)) for t in range(0, n + 1, T)]
                out = 9  # past a 6-pixel tick
                # the last label (n) sits on the grid's far edge: room for its half
                half = math.ceil(0.31 * len(str(n)) * px if side == "above" else 0.6 * px) + 2
                if side == "above":
                    g.width = max(g.width, int(g.left + g.cols * cell + half))
                else:
                    g.height = max(g.height, int(g.top + g.rows * cell + half))
            for t, text in at:
                index[side][t] = (text, px)
                if side == "above":
                    x, y = g.left + t * cell, float(g.top)
                    label(x, y - out, text, f"{px}px", th.MUTED, "center", "bottom")
                    tick = (x, y, x, y - 6)
                else:
                    x, y = float(g.left), g.top + t * cell
                    label(x - out + 1, y, text, f"{px}px", th.MUTED, "right", "middle")
                    tick = (x, y, x - 6, y)
                if n > 16:
                    for k, v in zip(ticks, tick, strict=True):
                        ticks[k].append(v)
        g.labels, g.ticks, g.index = labels, ticks, index

    def _place(self, canvas, boxes: Sequence[tuple[GridPlace, int, int]]) -> None:
        """Put grids at (x, y) pixels of ``canvas``: its size, their ranges, titles and labels."""
        from bokeh.models import ColumnDataSource, Range1d

        width = max(x + g.width for g, x, y in boxes)
        height = max(y + g.height for g, x, y in boxes)
        canvas.width, canvas.height = int(width), int(height)
        canvas.x_range = Range1d(start=0, end=width)
        canvas.y_range = Range1d(start=height, end=0)
        xr, yr = {}, {}
        labels: dict[str, list] = {}
        ticks: dict[str, list] = {}
        for g, x, y in boxes:
            g.x, g.y = int(x), int(y)
            # the plot's pixels in the grid's units: the cells' corner at (0, 0)
            x0, y0 = -(g.x + g.left) / g.cell, -(g.y + g.top) / g.cell
            # (grids in one column or row of equal cells share a range: N and P, M and P)
            xr[g.name] = self._one(Range1d, start=x0, end=x0 + width / g.cell)
            yr[g.name] = self._one(Range1d, start=y0 + height / g.cell, end=y0)
            # the grid's labels and ticks, from its box's pixels to the plot's
            for cols, mine in ((labels, g.labels), (ticks, g.ticks)):
                for k, v in mine.items():
                    shift = g.x if k in ("x", "x0", "x1") else g.y if k in ("y", "y0", "y1") else 0
                    cols.setdefault(k, []).extend([u + shift for u in v] if shift else v)
        canvas.extra_x_ranges, canvas.extra_y_ranges = xr, yr
        add = self._adder(canvas)
        if ticks.get("x0"):
            add(
                "Segment",
                ColumnDataSource(data=ticks, **self._source_props()),
                x0="x0",
                y0="y0",
                x1="x1",
                y1="y1",
                line_color=self.palette.MUTED,
                line_width=1,
            )
        # each label's colour, alignment, type size and style from its row
        labels_source = ColumnDataSource(data=labels, **self._source_props())
        _text(add, labels_source, "size", "color", "align", "baseline", text_font_style="style")

    def index_labels(self, view: str) -> dict[str, dict[float, tuple[str, int]]]:
        """The index labels of grid ``view``: where each is, its text and type size.

        Parameters
        ----------
        view : str
            The name of one of the scene's grids (M, N, P, Mds, Nds, threads, blocks).

        Returns
        -------
        dict
            ``{"above": {x: (text, px)}, "left": {y: (text, px)}}``: ``x``
            (``y``) in the grid's units, ``i + 0.5`` for the index ``i`` of
            a cell, ``t`` for a line between tiles; ``px`` the type's size in
            pixels.
        """
        return {side: dict(at) for side, at in self.grids[view].index.items()}

    def _finding_glyph(self, f, view: str) -> None:
        """Outlines of the selected finding over ``view``'s cells (``{view}_finding``).

        Drawn once a frame first carries a finding (:meth:`draw_parts`).
        """
        self._later_part(view_specs.FINDING.name, f, partial(self._draw_finding, f, view))

    def _draw_finding(self, f, view: str) -> None:
        r = _outlines(
            self._adder(f, grid=view),
            self.sources[f"{view}_finding"],
            0.9,
            line_color="line_color",
            line_dash="line_dash",
            line_width=view_specs.get(view).finding_width,
            name=f"vizmm-{view}-finding",
        )
        _hover(f, r, "finding")

    def _text_view(self, view: str, box: TextBox, columns=None, **looks):
        """The ``Div`` of text view ``view``, of ``box``'s size, showing ``columns``.

        Without ``columns`` it starts empty (:meth:`text_html` draws a frame's).
        """
        from bokeh.models.widgets import Div

        looks.setdefault("background", self.palette.BACKGROUND)
        self._text_looks[view] = (box, looks)
        if columns is None:
            columns = {name: _empty(name) for name in SOURCE_NAMES[view]}
        div = Div(
            text=text_view_html(view, columns, box, **looks),
            width=box.width,
            height=box.height,
            margin=0,
            disable_math=True,
            styles={"background": self.palette.BACKGROUND},
        )
        self.texts[view] = div
        return div

    def _text_box(self, width_chars: float, lines: float, pad: float = 0.5) -> TextBox:
        """The box of ``lines`` monospace lines of ``width_chars`` characters."""
        s = self.sizes
        return TextBox(
            width=int(width_chars * s.char + 12),
            height=int(lines * s.line + 8),
            x0=-pad,
            x1=width_chars + pad,
            lines=lines,
        )
