"""The dashboard, driven through its parameters (no browser, no server).

Oracles are typed from the book (PMPP 4th ed.): Fig. 5.8 (4 x 4, TILE_WIDTH 2,
block_{0,0}), Fig. 5.11 (3 x 3, phase 1 of block_{0,0}), Fig. 5.12 (3 x 3,
phase 0 of block_{1,1}) and the text around them; not copied from output.
Threads are ``thread_{ty,tx}`` as in Fig. 5.8 (thread_{0,1} loads M_{0,1}).

Steps of a block at sub-step granularity, lockstep (T = 2, two phases)::

    0 start | phase 0: 1 load M, 2 load N, 3 barrier 1, 4 released, 5 k=0, 6 k=1,
    7 barrier 2, 8 released | phase 1: 9 .. 16 | 17 write P
"""

import json
import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

import vizmm  # noqa: E402
from vizmm.render.bokeh_scene import SOURCE_NAMES, Scene, frame_columns  # noqa: E402
from vizmm.render.html_text import visible_lines  # noqa: E402
from vizmm.replay import Replay  # noqa: E402
from vizmm.serve.catalogue import CATALOGUE  # noqa: E402
from vizmm_apps.dashboard import Dashboard, DashboardState  # noqa: E402

LOAD_M0, LOAD_N0, BAR1, REL1, K0, K1, BAR2, REL2 = range(1, 9)
LOAD_M1, LOAD_N1 = 9, 10
WRITE_P = 17


@pytest.fixture
def dash():
    return Dashboard(served=False)


def at(d: Dashboard, step: int) -> dict:
    """Step with the → key from the first step to ``step``, as a presenter would."""
    d.state.handle_key("Home")
    for _ in range(step):
        d.state.handle_key("ArrowRight")
    st = d.state.status()
    assert st["step"] == step
    return st


def open_trace(d: Dashboard, key: str, block=None) -> None:
    d.trace_select.value = key
    if block is not None:
        d.state.select_block(*block)
    assert d.state.status()["ready"], d.state.message


# ------------------------------------------------------------------ Fig. 5.8
def test_opens_on_fig_5_8(dash):
    st = dash.state.status()
    assert st["ready"] and st["source"] == "fig5-8"
    assert st["step"] == 0 and st["count"] == 18 and st["block"] == [0, 0]
    assert dash.state.trace.shape == (4, 4, 4) and dash.state.trace.tile_width == 2
    assert st["threads"] == [["ready"] * 2] * 2
    assert st["mds"] == [["?", "?"], ["?", "?"]]  # uninitialised shared memory


def test_fig_5_8_phase_0(dash):
    st = at(dash, LOAD_M0)
    assert st["threads"] == [["loading"] * 2] * 2
    assert st["mds"] == [["M_{0,0}", "M_{0,1}"], ["M_{1,0}", "M_{1,1}"]]
    assert st["nds"] == [["?", "?"], ["?", "?"]]
    st = at(dash, LOAD_N0)
    assert st["nds"] == [["N_{0,0}", "N_{0,1}"], ["N_{1,0}", "N_{1,1}"]]
    assert at(dash, BAR1)["threads"] == [["waiting_1"] * 2] * 2
    assert at(dash, REL1)["threads"] == [["released"] * 2] * 2
    assert at(dash, K0)["threads"] == [["computing"] * 2] * 2
    assert at(dash, BAR2)["threads"] == [["waiting_2"] * 2] * 2


def test_fig_5_8_phase_1_and_stale_tiles(dash):
    st = at(dash, LOAD_M1)
    assert st["mds"] == [["M_{0,2}", "M_{0,3}"], ["M_{1,2}", "M_{1,3}"]]
    # Nds still holds phase 0's elements until line 20 of Fig. 5.9 overwrites them
    assert st["nds"] == [["N_{0,0}", "N_{0,1}"], ["N_{1,0}", "N_{1,1}"]]
    assert st["nds_state"] == [["stale"] * 2] * 2
    st = at(dash, LOAD_N1)
    assert st["nds"] == [["N_{2,0}", "N_{2,1}"], ["N_{3,0}", "N_{3,1}"]]
    assert at(dash, WRITE_P)["threads"] == [["writing_p"] * 2] * 2


def test_fig_5_8_counters_show_the_tile_width_fold_reduction(dash):
    T = 2
    st = at(dash, REL2)  # phase 0 done: 4 M + 4 N elements loaded by the block
    assert st["loads"] == 8
    assert st["naive"] == 2 * 4 * 2  # 2 loads per term, 4 threads, 2 terms each
    st = at(dash, WRITE_P)
    assert st["loads"] == 16 and st["naive"] == 32
    assert st["naive"] / st["loads"] == T
    assert st["cgma"] == pytest.approx(2.0)  # 2 FLOPs x 4 threads x 4 terms / 16 loads


def test_followed_thread_pvalue_is_the_books_sum(dash):
    dash.state.follow(0, 1)
    M, N = dash.state.trace.M, dash.state.trace.N
    st = at(dash, REL2)
    assert st["thread"] == [0, 1]
    # Fig. 5.8 column 4: Pvalue_{0,1} += Mds_{0,0}*Nds_{0,1} + Mds_{0,1}*Nds_{1,1}
    assert st["pvalue"] == M[0, 0] * N[0, 1] + M[0, 1] * N[1, 1]
    st = at(dash, WRITE_P)
    assert st["pvalue"] == sum(M[0, k] * N[k, 1] for k in range(4))
    counters = visible_lines(dash._scene.texts["counters"].text)  # as the page shows them
    assert any("(0,1)" in line for line in counters)
    dash.state.follow(0, 1)  # clicking the followed thread again stops following
    assert dash.state.status()["thread"] is None


# ---------------------------------------------------------- Figs. 5.11, 5.12
def test_fig_5_11_phase_1_of_block_0_0(dash):
    open_trace(dash, "fig5-11")
    st = at(dash, LOAD_M1)
    # thread_{0,1} and thread_{1,1} would load M_{0,3}, M_{1,3}: zero-filled (Fig. 5.13)
    assert st["mds"] == [["M_{0,2}", "0.0"], ["M_{1,2}", "0.0"]]
    assert st["mds_state"] == [["loaded", "zero"], ["loaded", "zero"]]
    st = at(dash, LOAD_N1)
    # thread_{1,0} and thread_{1,1} would load N_{3,0}, N_{3,1}
    assert st["nds"] == [["N_{2,0}", "N_{2,1}"], ["0.0", "0.0"]]
    st = at(dash, WRITE_P)
    assert st["threads"] == [["writing_p"] * 2] * 2  # block_{0,0}: P_{0,0}..P_{1,1} exist
    assert st["loads"] == 8 + 4  # zero-fills read nothing from global memory


def test_fig_5_12_phase_0_of_block_1_1(dash):
    open_trace(dash, "fig5-11", block=(1, 1))
    st = at(dash, LOAD_N0)
    assert st["block"] == [1, 1]
    # thread_{1,0}, thread_{1,1} would load M_{3,0}, M_{3,1}; thread_{0,1},
    # thread_{1,1} would load N_{0,3}, N_{1,3}: none of them exists.
    assert st["mds"] == [["M_{2,0}", "M_{2,1}"], ["0.0", "0.0"]]
    assert st["nds"] == [["N_{0,2}", "0.0"], ["N_{1,2}", "0.0"]]
    # A thread without a valid P element still loads for the others (the book
    # names it thread_{1,0}; with Fig. 5.8's subscripts it is thread_{0,1},
    # Row 2, Col 3, which loads M_{2,1}).
    assert st["mds"][0][1] == "M_{2,1}"
    st = at(dash, WRITE_P)
    assert st["threads"] == [["writing_p", "idle"], ["idle", "idle"]]  # only P_{2,2}


def test_unchecked_fig_5_9_kernel_wrong_elements_and_out_of_allocation(dash):
    open_trace(dash, "fig5-9-3x3")
    st = at(dash, LOAD_M1)
    # "Although thread_{0,1} is attempting to access M_{0,3}, it will end up getting M_{1,0}"
    assert st["mds"][0] == ["M_{0,2}", "M_{1,0}"]
    assert st["mds"][1] == ["M_{1,2}", "M_{2,0}"]  # M_{1,3}: linear index 6
    assert st["mds_state"] == [["loaded", "wrong"], ["loaded", "wrong"]]
    st = at(dash, LOAD_N1)
    # N_{3,0}, N_{3,1} lie past the end of N: recorded, not performed
    assert st["nds_state"] == [["loaded", "loaded"], ["skipped", "skipped"]]
    over = dash._scene.sources["M_outline"].data
    ghosts = {s for s, n in zip(over["state"], over["name"], strict=True) if n}
    assert ghosts == {"outside the matrix: wrong element read (row wrap)"}


def test_rectangular_general_kernel(dash):
    open_trace(dash, "general")
    tr = dash.state.trace
    assert tr.shape == (5, 3, 6) and tr.grid == (3, 3)
    dash.state.select_block(2, 2)  # bottom-right: Row 4..5, Col 4..5 of a 5 x 6 P
    st = at(dash, WRITE_P)
    assert st["threads"] == [["writing_p", "writing_p"], ["idle", "idle"]]


# ------------------------------------------------------------ granularity
def test_g_key_switches_granularity_at_the_same_moment(dash):
    at(dash, REL2)
    dash.state.handle_key("g")
    st = dash.state.status()
    assert st["granularity"] == "phase" and st["sub"] == "phase" and st["phase"] == 0
    assert st["count"] == 4  # start, phase 0, phase 1, write P
    dash.state.handle_key("ArrowRight")
    assert dash.state.status()["phase"] == 1
    dash.state.handle_key("g")
    st = dash.state.status()
    assert st["granularity"] == "substep" and st["step"] == 16  # end of phase 1


def test_recorded_order_unfolds_barrier_arrivals(dash):
    dash.state.order = "recorded"
    steps = dash.state.replay.steps
    first = next(i for i, s in enumerate(steps) if s.sub.value == "barrier 1")
    st = at(dash, first)
    flat = sum(st["threads"], [])
    assert flat.count("waiting_1") == 1 and flat.count("loading") == 3
    dash.state.handle_key("o")
    assert dash.state.status()["sub"] == "barrier 1"  # same moment, lockstep


def test_play_and_navigation(dash):
    s = dash.state
    s.toggle_play()
    assert s.playing and dash.play_button.label.startswith("⏸")
    for _ in range(30):
        s.tick()
    assert s.step == s.n_steps - 1 and not s.playing  # stops at the last step
    s.toggle_play()  # from the end: starts again
    assert s.step == 0 and s.playing
    s.handle_key(" ")
    assert not s.playing
    s.handle_key("End")
    assert s.step == 17
    s.handle_key("ArrowLeft")
    assert s.step == 16
    dash.slider.value = 3  # the slider counts from 1
    assert s.step == 2
    # the buttons, pressed as Panel presses them (their clicks counted)
    for button, step in (
        (dash.first_button, 0),
        (dash.next_button, 1),
        (dash.last_button, 17),
        (dash.prev_button, 16),
    ):
        button.clicks += 1
        assert s.step == step and dash.slider.value == step + 1
        assert f'data-step="{step}"' in dash.status_pane.object


# ------------------------------------------------------------------ clicks
def test_click_block_and_thread(dash):
    blocks = dash._scene.sources["blocks"]
    i = [(a, b) for a, b in zip(blocks.data["by"], blocks.data["bx"], strict=True)].index((1, 0))
    dash._on_block_tap("indices", [], [i])
    assert dash.state.status()["block"] == [1, 0]
    threads = dash._scene.sources["threads"]
    i = [(a, b) for a, b in zip(threads.data["ty"], threads.data["tx"], strict=True)].index((1, 1))
    dash._on_thread_tap("indices", [], [i])
    assert dash.state.status()["thread"] == [1, 1]
    assert blocks.selected.indices == [] and threads.selected.indices == []


def test_scene_shows_the_status(dash):
    st = at(dash, LOAD_N1)
    scene = dash._scene
    assert list(scene.sources["Mds"].data["element"]) == sum(st["mds"], [])
    assert list(scene.sources["Nds"].data["element"]) == sum(st["nds"], [])
    assert 'id="vizmm-status"' in dash.status_pane.object
    assert 'data-step="10"' in dash.status_pane.object


# -------------------------------------------------------------------- URL
def test_url_round_trip():
    a = Dashboard(served=False)
    a.trace_select.value = "fig5-11"
    a.state.param.update(by=1, bx=1, ty=0, tx=1, step=7, granularity="substep", order="recorded")
    query = a.state.url_query()
    b = DashboardState()
    b.apply_query(query)
    b.start()
    assert b.status() == a.state.status()


def test_url_with_bad_values_is_tolerated():
    s = DashboardState()
    s.apply_query("trace=fig5-8&step=oops&by=9&ty=-1&granularity=nonsense")
    s.start()
    st = s.status()
    assert st["ready"] and st["block"] == [0, 0] and st["granularity"] == "substep"
    s = DashboardState()
    s.apply_query("trace=no-such-trace")
    s.start()
    assert not s.status()["ready"] and "unknown trace" in s.message


# ----------------------------------------------------------------- uploads
def test_corrupted_upload_shows_a_message(dash):
    good = CATALOGUE.get("fig5-8").to_bytes()
    for data in (b"this is not a trace", good[: len(good) // 2]):
        dash.upload.value = {"broken.vizmm": data}
        assert dash.alert.visible and dash.alert.alert_type == "danger"
        assert "broken.vizmm" in dash.alert.object
        assert "Traceback" not in dash.alert.object
    assert dash.state.status()["ready"]  # the previous trace stays on screen


def test_upload_of_a_partial_trace(dash):
    tr = vizmm.record(
        width=4, tile_width=2, kernel="boundary", backend="simulator", window=[(0, 1)], quiet=True
    )
    assert not tr.is_detailed
    dash.upload.value = {"window.vizmm": tr.to_bytes()}
    st = dash.state.status()
    assert st["ready"] and st["source"].startswith("upload:") and st["block"] == [0, 1]
    dash.state.select_block(1, 1)
    st = dash.state.status()
    assert st["block"] == [0, 1]
    assert "not recorded per thread" in dash.state.message and dash.alert.visible


def test_naive_trace_is_explained(dash):
    tr = vizmm.record(width=4, tile_width=2, kernel="naive", backend="simulator", quiet=True)
    dash.upload.value = {"naive.vizmm": tr.to_bytes()}
    assert not dash.state.status()["ready"]
    assert "naive kernel" in dash.alert.object


# ---------------------------------------------------------------- recording
def test_record_form_estimates_and_records(dash):
    form = dash.record_form
    form.param.update(kernel="general", j=3, k=5, l=2, tile_width=2)
    assert "Estimate" in form.estimate and "simulator" in form.estimate and form.valid
    form.param.update(kernel="general", j=4096, k=4096, l=4096, tile_width=32)
    assert not form.valid and dash.record_form._button.disabled
    form.param.update(j=3, k=5, l=2, tile_width=2)
    form.record()
    st = dash.state.status()
    assert st["ready"] and st["source"] == "rec:general:3x5x2:T2:s0:simulator"
    assert dash.state.trace.shape == (3, 5, 2)
    assert st["count"] == 1 + 3 * 8 + 1  # three phases


def test_keyboard_component_drives_the_state(dash):
    dash.keys.press("ArrowRight")
    dash.keys.press("ArrowRight")
    dash.keys.press("x")  # not a shortcut: ignored
    assert dash.state.step == 2 and dash.keys.pressed == 3


def test_presenter_mode_shows_the_step_in_large_type(dash):
    normal = dash._scene
    dash.state.handle_key("p")
    assert dash.state.presenter and not dash.more.visible and not dash.tabs.visible
    scene = dash._scene
    assert scene.presenter and dash.presenter_view.visible
    views = {**scene.figures, **scene.texts}
    shown = {name for name, fig in views.items() if fig.visible}
    assert shown == {"caption", "M", "N", "P", "Mds", "Nds", "threads"}
    assert scene.sizes.font > normal.sizes.font
    assert not (dash.slider.visible or dash.speed.visible or dash.granularity.visible)
    # back and forth: the scenes are built once, then swapped
    dash.state.handle_key("p")
    assert dash._scene is normal and not dash.presenter_view.visible and dash.tabs.visible
    dash.state.handle_key("p")
    assert dash._scene is scene


def test_dark_theme_from_the_url_and_the_control(dash):
    from vizmm.render import palette as pal

    dash.state.apply_query("trace=fig5-8&theme=dark")
    assert dash.state.theme == "dark" and dash.theme.value
    assert dash._scene.palette is pal.DARK
    assert dash._scene.figures["M"].background_fill_color == pal.DARK.BACKGROUND
    assert "theme=dark" in dash.state.url_query() and dash.state.status()["theme"] == "dark"
    dash.theme.value = False
    assert dash.state.theme == "light" and dash._scene.palette is pal.LIGHT


def test_extra_views_become_tabs():
    import panel as pn

    d = Dashboard(served=False, views=[("Another view", lambda state: pn.pane.Markdown("x"))])
    assert isinstance(d.tabs, pn.Tabs) and len(d.tabs) == 2
    assert d.tab_titles[-1] == "Another view"
    d.tabs.active = 1
    d.show_replay()
    assert d.tabs.active == 0
    assert not isinstance(Dashboard(served=False).tabs, pn.Tabs)  # no views: no tabs


# ------------------------------------------------------------------- scene
@pytest.mark.parametrize("key", ["fig5-8", "fig5-9-3x3", "general", "medium"])
def test_frame_columns_are_json_ready(key):
    tr = CATALOGUE.get(key)
    rep = Replay(tr, (0, 0), focus=(0, 1))
    scene = Scene(tr)
    for i in (0, 2, len(rep) // 2, len(rep) - 1):
        cols = frame_columns(rep.frame(i), tr)
        assert set(cols) == {n for names in SOURCE_NAMES.values() for n in names}
        for name, data in cols.items():
            assert len({len(v) for v in data.values()}) == 1, name
        json.dumps(cols, allow_nan=False)
        scene.update(rep.frame(i))
        for name, src in scene.sources.items():
            # numbers go to Bokeh as arrays (sent as binary), with the same values
            sent = {c: v.tolist() if hasattr(v, "tolist") else v for c, v in src.data.items()}
            assert sent == cols[name]


def test_scene_views_subset():
    tr = CATALOGUE.get("fig5-8")
    scene = Scene(tr, views=["M", "Mds", "threads"])
    assert set(scene.sources) == {
        "M", "M_outline",  # edge, ghost cells, tile, followed thread, transactions view
        "Mds", "Mds_bank",
        "threads", "warp_threads", "warps",
        "M_finding", "Mds_finding", "threads_finding",  # a finding of vizmm check
    }  # fmt: skip
    with pytest.raises(ValueError, match="unknown view"):
        Scene(tr, views=["nope"])


def test_matrix_outlines_one_glyph_in_painting_order():
    """The edge, the tile, the followed thread's element, then segments and sectors: one glyph."""
    from vizmm.render import palette as pal

    th = pal.LIGHT
    tr = CATALOGUE.get("fig5-8")
    scene = Scene(tr, views=["M", "P"])
    # Fig. 5.8, block (1,0), thread (0,1), phase 0, load M: Row = 1*2 + 0 = 2 and
    # Col = 0*2 + 1 = 1, so it loads M[2][1] of the tile at rows 2..3, columns 0..1
    scene.update(Replay(tr, (1, 0), focus=(0, 1)).frame(1))
    for m in ("M", "P"):
        d = scene.sources[f"{m}_outline"].data
        assert list(zip(d["x"], d["y"], d["w"], d["h"], strict=True)) == [
            (2.0, 2.0, 4.0, 4.0),  # the matrix's edge (4 x 4: no ghost cells)
            (1.0, 3.0, 2.0, 2.0),  # the current tile
            (1.5, 2.5, 1.0, 1.0),  # the followed thread's element (its P element in P)
        ]
        assert list(d["line_color"]) == [th.TEXT, th.TILE_OUTLINE, th.FOCUS]
        assert list(d["line_dash"]) == ["solid"] * 3 and list(d["name"]) == [""] * 3
    renderers = [
        r for r in scene.figures["M"].renderers if r.data_source is scene.sources["M_outline"]
    ]
    # one rectangle glyph; no text glyph nor hover for ghost cells, as 4 x 4 has none
    assert [type(r.glyph).__name__ for r in renderers] == ["Rect"]
    assert renderers[0].glyph.line_dash == "line_dash"  # a column
    hovered = [r for t in scene.figures["M"].tools for r in getattr(t, "renderers", [])]
    assert renderers[0] not in hovered
    # Thread roles swapped (TILE_WIDTH 16): warp 0 (ty 0..1, tx 0..15) reads M[tx][ty],
    # 16 rows of 2 elements, each row one 128-byte segment (32 floats) and one 32-byte
    # sector (8 floats): segments (dashed) are painted first, the sectors over them.
    tr = CATALOGUE.get("uncoalesced")
    scene = Scene(tr, views=["M"])
    scene.update(Replay(tr, (0, 0), focus=(0, 1), transactions=True).frame(1))
    d = {c: list(v) for c, v in scene.sources["M_outline"].data.items()}  # numbers: arrays
    assert len(d["x"]) == 1 + 1 + 1 + 16 + 16
    assert (d["x"][1], d["w"][1], d["line_color"][1]) == (8.0, 16.0, th.TILE_OUTLINE)
    segments, sectors = slice(3, 19), slice(19, 35)
    assert d["y"][segments] == d["y"][sectors] == [r + 0.5 for r in range(16)]
    assert set(d["w"][segments]) == {32.0} and set(d["line_dash"][segments]) == {"dashed"}
    assert set(d["w"][sectors]) == {8.0} and set(d["line_dash"][sectors]) == {"solid"}
    assert set(d["line_color"][segments]) == {th.READ}
    assert set(d["line_color"][sectors]) == {th.TEXT}


def test_matrix_edge_and_ghost_cells_share_the_outline_glyph():
    """Fig. 5.12, phase 0 of block (1,1): the edge, the ghost cells, then the tile; one glyph.

    The rows are derived from the book's indexing (Row = by*T + ty, Col = bx*T + tx;
    thread (ty, tx) loads M[Row][ph*T + tx] and N[ph*T + ty][Col]); a ghost cell is
    an element of that with an index past Width = 3. Only ghost rows have a name,
    and the hover of the glyph answers only for rows with a name.
    """
    from bokeh.models import CustomJS, HoverTool

    from vizmm.render import palette as pal

    th = pal.LIGHT
    tr = CATALOGUE.get("fig5-11")
    T, width, by, bx, ph = 2, 3, 1, 1, 0
    scene = Scene(tr, views=["M", "N", "P"])
    scene.update(Replay(tr, (by, bx)).frame(LOAD_N0))
    threads = [(ty, tx) for ty in range(T) for tx in range(T)]
    elements = {
        "M": {(by * T + ty, ph * T + tx): (ty, tx) for ty, tx in threads},
        "N": {(ph * T + ty, bx * T + tx): (ty, tx) for ty, tx in threads},
        "P": {(by * T + ty, bx * T + tx): (ty, tx) for ty, tx in threads},
    }
    sub = str.maketrans("0123456789,", "₀₁₂₃₄₅₆₇₈₉,")
    for m, at_ in elements.items():
        d = scene.sources[f"{m}_outline"].data
        rows = list(zip(d["x"], d["y"], d["w"], d["h"], strict=True))
        ghosts = {
            (c + 0.5, r + 0.5): (f"{m}{r},{c}".translate(sub), f"thread ({ty},{tx})")
            for (r, c), (ty, tx) in at_.items()
            if r >= width or c >= width
        }
        assert len(ghosts) == (3 if m == "P" else 2)
        n = len(ghosts)
        assert rows[0] == (1.5, 1.5, 3.0, 3.0) and d["line_color"][0] == th.TEXT  # the edge
        r0, c0 = min(at_)
        assert rows[1 + n] == (c0 + 1.0, r0 + 1.0, 2.0, 2.0)  # the tile, over the ghosts
        assert len(rows) == 2 + n
        got = {(d["x"][i], d["y"][i]): (d["name"][i], d["loader"][i]) for i in range(1, 1 + n)}
        assert got == ghosts
        assert set(d["hatch"][1 : 1 + n]) == {"/"} and set(d["line_dash"][1 : 1 + n]) == {"dashed"}
        # M and N: zero-filled ("0.0"); P: threads without a P element
        assert set(d["text"][1 : 1 + n]) == ({""} if m == "P" else {"0.0"})
        assert [d["name"][i] for i in (0, 1 + n)] == ["", ""]
        assert d["hatch"][0] == " " and d["fill"][0] is None and d["text"][0] == ""
        # one rectangle glyph and one text glyph draw the source; one hover answers for it
        fig = scene.figures[m]
        drawn = [r for r in fig.renderers if r.data_source is scene.sources[f"{m}_outline"]]
        assert [type(r.glyph).__name__ for r in drawn] == ["Rect", "Text"]
        hovers = [t for t in fig.tools if isinstance(t, HoverTool) and drawn[0] in t.renderers]
        assert len(hovers) == 1 and list(hovers[0].filters) == ["@name"]
        assert isinstance(hovers[0].filters["@name"], CustomJS)


@pytest.mark.parametrize("key", ["fig5-8", "lab-4x4-drop1"])
def test_every_hover_names_columns_of_its_source(key):
    """A tooltip's @field that its source lacks shows '???' in the browser."""
    import re

    from bokeh.models import HoverTool

    tr = CATALOGUE.get(key)
    scene = Scene(tr)
    scene.update(Replay(tr, (0, 0), transactions=True).frame(3))
    checked = set()
    for view, fig in scene.figures.items():
        for tool in fig.tools:
            if not isinstance(tool, HoverTool):
                continue
            assert tool.renderers, view  # every hover says which glyphs it answers for
            for r in tool.renderers:
                for label, field in tool.tooltips:
                    for col in re.findall(r"@(\w+)", field):
                        assert col in r.data_source.data, (view, label, col)
                        checked.add((view, col))
    # matrices, Mds, Nds, threads and blocks all have hovers
    assert {v for v, _ in checked} >= {"M", "N", "P", "Mds", "Nds", "threads", "blocks"}
    # the table's cells say themselves whole when hovered (their title): on Fig. 5.8,
    # thread (0,0)'s Pvalue of phase 0 in the book's words
    titles = re.findall(r'title="([^"]*)"', scene.texts["table"].text)
    assert len(titles) > 10
    if key == "fig5-8":
        assert any("Mds₀,₀*Nds₀,₀ + Mds₀,₁*Nds₁,₀" in t for t in titles), titles


def test_export_button_gives_the_file(dash):
    import panel as pn

    if not isinstance(dash.export_button, pn.widgets.FileDownload):
        pytest.skip("vizmm.export is not available")
    dash.export_format.value = "html"
    dash.state.select_block(1, 0)
    assert dash.export_button.filename == "vizmm-fig5-8-block10-substep.html"
    data = dash._export().getvalue()
    assert data.lstrip().lower().startswith(b"<!doctype html")
    assert b"vizmm-frames" in data


def test_background_recording_reports_progress(dash, monkeypatch):
    import time

    import panel as pn

    class Timer:
        stopped = False

        def stop(self):
            self.stopped = True

    timer = Timer()
    monkeypatch.setattr(pn.state, "add_periodic_callback", lambda cb, period: timer)
    dash.state.loader = dash._load_in_background
    key = "rec:tiled:5x5x5:T2:s3:simulator"
    dash.state.choose_source(key)
    assert dash.state.busy.startswith("Loading tiled") and dash.progress.visible
    assert "Loading tiled" in dash.status_pane.object
    deadline = time.time() + 60
    while not dash._job.finished and time.time() < deadline:
        time.sleep(0.05)
    dash._poll_job()
    st = dash.state.status()
    assert timer.stopped and st["ready"] and st["source"] == key and st["busy"] == ""
    assert dash.state.trace.meta["seed"] == 3 and not dash.progress.visible


def test_a_trace_that_fails_to_open_leaves_the_menu_on_the_trace_shown(dash):
    shown = dash.state.source
    before = dash.state.trace
    # Parses as a recording, but asks for a GPU this machine does not have.
    dash.state.choose_source("rec:boundary:4x4x4:T2:s0:gpu")
    assert dash.state.trace is before
    assert dash.state.source == shown
    assert "simulator" in dash.state.message


def test_closed_pages_drop_the_drawing_caches_when_none_is_left():
    # The drawing caches are filled among a page's own objects; once no page is
    # left they go with the pages (vizmm.serve.memory.release_memory), not before.
    from vizmm.render import bokeh_scene
    from vizmm.render.shared_steps import STEPS
    from vizmm.serve import memory
    from vizmm.serve.caches import CACHES

    dash = Dashboard(served=False)
    dash.__panel__()
    dash.keys.press("ArrowRight")
    assert bokeh_scene._uni.cache_info().currsize > 0 and len(STEPS) > 0

    class Live:  # an app's server context with one session left
        sessions = [object()]

    live = Live()
    memory._server_contexts.add(live)
    try:
        memory.release_memory()
        assert bokeh_scene._uni.cache_info().currsize > 0  # a page is still open
        assert len(STEPS) > 0
    finally:
        memory._server_contexts.discard(live)
    memory.release_memory()
    assert bokeh_scene._uni.cache_info().currsize == 0 and len(STEPS) == 0
    assert CACHES.clear() == 0 and CACHES.entries() == 0


def test_wrap_title_breaks_between_words_to_fit():
    from vizmm.render.bokeh_scene import wrap_title

    text = "per warp (memory transactions)"
    assert wrap_title(text, 400, 13) == text  # 30 characters of about 8 px fit in 400
    # 150 px hold int(150 / (0.62 * 13)) = 18 characters a line
    assert wrap_title(text, 150, 13) == "per warp (memory\ntransactions)"
    assert wrap_title(text, 60, 13) == "per\nwarp\n(memory\ntransactions)"  # a long word whole


def test_the_warp_row_title_fits_a_narrow_thread_grid():
    # The row is as wide as the thread grid; its one-line title, 30 bold
    # characters of about 0.62 x 14 px (260 px), is wider than these grids.
    from vizmm.render.bokeh_scene import Scene

    for key in ("fig5-8", "medium"):
        tr = CATALOGUE.get(key)
        scene = Scene(tr)
        scene.update(Replay(tr, (0, 0), transactions=True).frame(1))  # the heading shows
        f = scene.layout.select_one({"name": "vizmm-warps"})
        lines = f.title.text.split("\n")
        assert len(lines) > 1 and " ".join(lines) == "per warp (memory transactions)"
        font = int(f.title.text_font_size.removesuffix("px"))
        assert all(len(line) * 0.62 * font <= f.width - 8 for line in lines), (key, lines)
        cell = min(40, max(14, (f.width - 30) / tr.launch.warps_per_block))
        assert f.height >= cell + (len(lines) + 1) * font  # the lines, the cells, their numbers


@pytest.mark.parametrize("key", ["fig5-8", "fig5-11", "general", "medium", "conflict"])
def test_every_counter_line_fits_its_view(key):
    # The counters view is COUNTER_CHARS characters wide; a longer line is cut
    # at its right edge (the CGMA line was, at 49 bold characters).
    from vizmm.render.bokeh_scene import COUNTER_CHARS

    tr = CATALOGUE.get(key)
    rep = Replay(tr, (0, 0), focus=(0, 1))
    for i in (0, len(rep) // 2, len(rep) - 1):
        lines = frame_columns(rep.frame(i), tr)["counters"]["text"]
        assert any(line.startswith("CGMA") for line in lines)
        too_long = [line for line in lines if len(line) > COUNTER_CHARS]
        assert too_long == [], (key, i)
