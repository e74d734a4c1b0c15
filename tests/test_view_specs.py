"""The views' registry (vizmm/render/views/): every list of views comes from it, as it was.

The lists below are the ones each renderer spelled out before the views were
plug-ins (bokeh_scene, pillow, export, policy, the quiz): the registry must
give them back, in the same order, for the dashboard, the exports and the
size policy to show what they showed.
"""

import pytest

from vizmm.render import views

EVERY = (
    "caption",
    "M",
    "N",
    "P",
    "Mds",
    "Nds",
    "threads",
    "legend",
    "source",
    "counters",
    "blocks",
    "table",
)


def test_the_lists_of_views_are_derived_as_they_were_written():
    from vizmm.export import HTML_ONLY_VIEWS
    from vizmm.render import bokeh_scene, pillow, policy

    assert bokeh_scene.VIEWS == EVERY
    assert bokeh_scene.HTML_VIEWS == ("caption", "legend", "source", "counters", "table")
    assert bokeh_scene.PRESENTER_VIEWS == ("caption", "M", "N", "P", "Mds", "Nds", "threads")
    assert pillow.VIEWS == EVERY[:10]
    assert HTML_ONLY_VIEWS == ("blocks", "table")
    light = ("caption", "Mds", "Nds", "threads", "legend", "source", "counters")
    assert policy.LIGHT_VIEWS == light
    assert views.names(pickable=True) == ("M", "N", "Mds", "Nds", "threads")
    assert bokeh_scene.SOURCE_NAMES["threads"] == (
        "threads",
        "warp_threads",
        "warps",  # the per-warp row, a part of the threads view
        "threads_finding",
    )
    assert bokeh_scene.SOURCE_NAMES["P"] == ("P", "P_outline", "P_pvalue", "P_finding")


def test_the_per_warp_row_is_a_view_of_its_own_hosted_by_the_threads():
    spec = views.get("warps")
    assert spec.host == "threads" and spec.aspects == ("transactions",)
    assert spec.draw_bokeh is not None and spec.draw_pillow is not None
    assert "warps" not in views.names()  # not chosen on its own
    assert "warps" in [s.name for s in views.all_views(hosted=True)]


def test_frame_columns_asks_only_the_views_of_the_sources_wanted(record_sim):
    from vizmm.render.bokeh_scene import frame_columns
    from vizmm.replay import Replay

    trace = record_sim(width=4, tile_width=2, kernel="tiled")
    replay = Replay(trace, transactions=True)
    cols = frame_columns(replay.frame(0), trace, ["warps"])
    assert list(cols) == ["warps"]
    # one cell per warp: a 2 x 2 block is one warp of 4 threads
    assert cols["warps"]["x"] == [0.5]


def test_the_registry_refuses_what_would_make_the_lists_disagree():
    with pytest.raises(ValueError, match="registered already"):
        views.register(views.ViewSpec(name="M", order=99, aspects=()))
    with pytest.raises(ValueError, match="column kind 'matrix'"):
        views.register(views.ViewSpec(name="other", order=99, aspects=(), kinds={"matrix": ("x",)}))
    with pytest.raises(ValueError, match="unknown aspect"):
        views.ViewSpec(name="other", order=99, aspects=("everything",))
    with pytest.raises(KeyError, match="no view 'nothing'"):
        views.get("nothing")


def test_glyph_defaults_are_worked_out_after_a_session_closed():
    """A server's current document may be a closed session's (its callbacks destroyed):
    the glyphs' defaults are worked out in a document of their own, not from it."""
    import subprocess
    import sys

    code = (
        "from bokeh.io import curdoc\n"
        "from vizmm.render import glyphs\n"
        "curdoc().callbacks.destroy()\n"  # what Document.destroy does to a closed session's
        "from bokeh.models.glyphs import Rect\n"
        "got = dict(glyphs._spec_defaults('Rect'))\n"
        "assert {'line_color', 'fill_alpha', 'line_width'} <= set(got), got\n"
        "for name, v in got.items():\n"  # Bokeh's own defaults, as a new Rect has them
        "    assert getattr(v, 'value', v) == getattr(Rect(), name), name\n"
        "print('ok')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr[-2000:]


def _view_literals(source: str) -> list[tuple[int, str]]:
    """The string constants of ``source`` equal to a registered view's name (hosted parts too)."""
    import ast

    named = {s.name for s in views.all_views(hosted=True)}
    return [
        (node.lineno, node.value)
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in named
    ]


def test_the_scene_names_no_view():
    # Each view's specifics (its grid's plot and place, its parts drawn later,
    # the per-warp row's spacer and heading) are in its spec: the scene and its
    # parts are written without any view's name.
    import inspect

    from vizmm.render import bokeh_scene, scene_parts

    assert sorted(_view_literals("place = {'threads': 1}; g = 'M'")) == [(1, "M"), (1, "threads")]
    for module in (bokeh_scene, scene_parts):
        assert _view_literals(inspect.getsource(module)) == [], module.__name__


def test_each_grid_goes_where_its_spec_places_it():
    from vizmm.render.bokeh_scene import TAPPED_SOURCES, Scene
    from vizmm.serve.catalogue import CATALOGUE

    assert TAPPED_SOURCES == {"threads", "blocks"}  # the grids with a TapTool
    tr = CATALOGUE.get("fig5-8")
    scene = Scene(tr)
    g = scene.grids
    # Fig. 5.10: N above P, M left of P; the blocks in the free corner above M, left of N
    assert (g["M"].x, g["M"].y) == (0, g["N"].height)
    assert (g["N"].x, g["N"].y) == (g["M"].width, 0)
    assert (g["P"].x, g["P"].y) == (g["M"].width, g["N"].height)
    assert (g["blocks"].x, g["blocks"].y) == (0, 0)
    assert g["blocks"].width <= g["M"].width and g["blocks"].height <= g["N"].height
    # Mds and Nds side by side, 10 pixels apart; the threads 8 pixels under them
    assert (g["Nds"].x, g["Nds"].y) == (g["Mds"].width + 10, 0)
    assert (g["threads"].x, g["threads"].y) == (0, max(g["Mds"].height, g["Nds"].height) + 8)
    for spec in views.all_views():
        if spec.name in g:
            assert scene.figures[spec.name].name in [p.plot for p in spec.grids], spec.name
    # without M and N the blocks have no corner: a plot of their own, right of the source
    alone = Scene(tr, views=["source", "blocks"])
    assert alone.figures["blocks"].name == "vizmm-blocks-plot"
    assert alone.layout.children[0].children[1] is alone.figures["blocks"]


def test_the_parts_drawn_later_are_the_specs():
    from vizmm.render.bokeh_scene import Scene
    from vizmm.serve.catalogue import CATALOGUE

    assert [(p.name, p.rank) for p in views.later_parts()] == [("finding", 2), ("transactions", 1)]
    assert views.get("warps").later is views.later_parts()[1]
    scene = Scene(CATALOGUE.get("fig5-8"))
    with pytest.raises(ValueError, match="'finding' or 'transactions'"):
        scene.draw_parts("everything")
    threads = scene.figures["threads"]
    scene.draw_parts("transactions", "finding")
    names = [r.name for r in threads.renderers]
    # over the cells the banks, then the finding's marks, then the warp's outline, last
    assert names.index("vizmm-threads") < names.index("vizmm-threads-finding")
    assert names[-1] == "vizmm-warp-threads"
    assert names.index("vizmm-Nds-finding") < names.index("vizmm-warp-threads")
    assert scene.state["warps"].fig is scene.layout.select_one({"name": "vizmm-warps"})
    # presenter and fitted scenes keep their sizes: no per-warp row
    assert "warps" not in Scene(CATALOGUE.get("fig5-8"), fit=(640, 700)).state
