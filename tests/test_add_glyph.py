"""add_glyph draws what ``bokeh.plotting.figure``'s glyph methods draw.

The oracle is Bokeh's public API: the same keyword arguments given to
``figure().rect(...)`` (``text``, ``scatter`` ...) make a renderer whose glyph,
non-selection glyph and selection glyph have every property equal to those
add_glyph makes, the visual ones it fills in from ``color``, ``alpha`` and
Bokeh's defaults included.
"""

import pytest
from bokeh.models import ColumnDataSource, Plot
from bokeh.plotting import figure

from vizmm.render.bokeh_scene import add_glyph

COLUMNS = {"x": [0, 1], "y": [1, 0], "fill": ["red", "blue"], "t": ["a", "b"], "c": ["red", "red"]}

CASES = [
    ("Rect", "rect", dict(x="x", y="y", width=0.82, height=0.82, fill_color="fill")),
    ("Rect", "rect", dict(x="x", y="y", width=1, height=1, line_color=None, name="cells")),
    (
        "Rect",
        "rect",
        dict(
            x="x",
            y="y",
            width=1,
            height=1,
            color="c",
            alpha=0.5,
            nonselection_alpha=0.3,
            selection_line_color="black",
            selection_line_width=3,
        ),
    ),
    (
        "Rect",
        "rect",
        dict(x="x", y="y", width=1, height=1, fill_alpha=0, line_dash="dash", line_width=5),
    ),
    (
        "Text",
        "text",
        dict(x="x", y="y", text="t", text_color="c", text_font_size="22px", text_alpha=0.8),
    ),
    (
        "Scatter",
        "scatter",
        dict(
            x="x",
            y="y",
            marker="square",
            size=10,
            hatch_pattern="/",
            fill_alpha=0.2,
            nonselection_fill_color="gray",
            selection_color="green",
        ),
    ),
]


def _props(glyph):
    return glyph.properties_with_values(include_defaults=True)


@pytest.mark.parametrize("selectable", [True, False])
@pytest.mark.parametrize("kind, method, props", CASES)
def test_add_glyph_makes_the_glyphs_figure_makes(kind, method, props, selectable):
    source = ColumnDataSource(COLUMNS)
    want = getattr(figure(), method)(source=source, **props)
    got = add_glyph(Plot(), kind, source, selectable=selectable, **props)

    assert type(got.glyph) is type(want.glyph)
    assert _props(got.glyph) == _props(want.glyph)
    assert got.name == want.name
    if selectable:
        assert _props(got.nonselection_glyph) == _props(want.nonselection_glyph)
        if want.selection_glyph == "auto":
            assert got.selection_glyph == "auto"
        else:
            assert _props(got.selection_glyph) == _props(want.selection_glyph)
    else:  # BokehJS makes them if ever needed
        assert got.nonselection_glyph == "auto" and got.selection_glyph == "auto"
    assert got.muted_glyph == "auto"


def test_figure_defaults_are_not_the_glyph_classes():
    # What the comparison above is for: a Rect given no colour is drawn in the first
    # colour of Bokeh's cycle by figure (the Rect model alone would be black and gray),
    # and its non-selection copy at figure's alpha 0.1.
    r = add_glyph(
        Plot(), "Rect", ColumnDataSource(COLUMNS), x="x", y="y", width=1, height=1, selectable=True
    )
    assert r.glyph.line_color == r.glyph.fill_color == "#1f77b4"
    assert r.nonselection_glyph.fill_alpha == r.nonselection_glyph.line_alpha == 0.1


def test_scene_glyphs_store_every_data_spec():
    """Every data spec of a scene's glyphs is stored, so no walk of the page works it out.

    What Bokeh keeps as set (``properties_with_values(include_defaults=False)``)
    holds every data spec but those naming a column by default; their values
    are those of ``figure``'s glyphs (the test above, property by property).
    """
    from bokeh.core.property.dataspec import DataSpec
    from bokeh.models import GlyphRenderer

    from vizmm.render.bokeh_scene import Scene
    from vizmm.serve.catalogue import CATALOGUE

    scene = Scene(CATALOGUE.get("fig5-8"))
    glyphs = [
        g
        for fig in scene.figures.values()
        for r in fig.renderers
        if isinstance(r, GlyphRenderer)
        for g in (r.glyph, r.nonselection_glyph)
        if not isinstance(g, str)
    ]
    assert {type(g).__name__ for g in glyphs} == {"Rect", "Text"}
    for g in glyphs:
        cls = type(g)
        stored = g.properties_with_values(include_defaults=False)
        for name in cls.properties():
            if isinstance(cls.lookup(name).property, DataSpec) and name not in stored:
                assert hasattr(getattr(cls(), name), "field"), (cls.__name__, name)
