"""The scene's text views drawn as HTML (``vizmm.render.html_text``).

Oracles: the book's Fig. 5.8 counts worked out by hand (4 x 4, TILE_WIDTH 2,
block (0,0): once both tiles of phase 0 are in, 8 global loads against the
naive kernel's 16), the kernel's own source text, and pixel positions
derived by hand from a box's size.
"""

import html
import re

import pytest
from bokeh.document import Document

from vizmm.render.bokeh_scene import HTML_VIEWS, Scene
from vizmm.render.html_text import TextBox, text_view_html, visible_lines
from vizmm.replay import Replay
from vizmm.serve.catalogue import CATALOGUE


def test_a_box_maps_characters_and_lines_to_pixels():
    # 100 x 50 px, 4 px border: 92 px for columns -0.5 .. 22.5 (23 columns, 4 px
    # each) and 42 px for 3 lines (14 px each)
    box = TextBox(width=100, height=50, x0=-0.5, x1=22.5, lines=3)
    assert box.x(-0.5) == 4 and box.x(22.5) == 96 and box.x(0) == 6
    assert box.y(0) == 4 and box.y(3) == 46 and box.dy(1) == 14 and box.dx(2) == 8


def test_a_view_escapes_what_it_shows():
    # a student's kernel is untrusted: its source is shown as text, never as markup
    hostile = '<img src=x onerror="alert(1)"> & </div>'
    cols = {"x": [0.0], "y": [0.5], "text": [hostile], "font_style": ["bold"], "color": ["#000"]}
    box = TextBox(width=400, height=30, x0=-0.5, x1=40, lines=1)
    out = text_view_html("caption", {"caption": cols}, box, background="#fff", font="x", size_px=12)
    assert "<img" not in out and "</div> &" not in out
    assert html.escape(hostile) in out
    assert visible_lines(out) == [hostile]
    with pytest.raises(ValueError, match="no text view 'M'"):
        text_view_html("M", {}, box, background="#fff", font="x", size_px=12)


def test_each_text_view_is_one_model_of_the_page():
    tr = CATALOGUE.get("fig5-8")
    scene = Scene(tr)
    scene.update(Replay(tr, (0, 0)).frame(3))
    doc = Document()
    doc.add_root(scene.layout)
    names = {m.name for m in doc.models if m.name}
    assert set(scene.texts) == set(HTML_VIEWS)
    for view in HTML_VIEWS:
        assert f"vizmm-{view}" in names
        # nothing but the Div itself: no plot, source or glyph of its own
        assert scene.texts[view].references() == {scene.texts[view]}


def test_the_counters_and_source_say_what_the_step_did():
    tr = CATALOGUE.get("fig5-8")
    rep = Replay(tr, (0, 0))
    scene = Scene(tr)
    i = next(i for i in range(len(rep)) if rep.frame(i).loads_so_far == 8)
    frame = rep.frame(i)
    scene.update(frame)
    counters = visible_lines(scene.texts["counters"].text)
    # both tiles of phase 0 in: 8 loads, the naive kernel's 16 (worked out by hand)
    assert "  -> 2.0x fewer (TILE_WIDTH = 2)" in counters
    assert "tiled 8" in counters and "naive 16" in counters
    # the listing is the kernel's source, the executed line marked with ▶
    source = visible_lines(scene.texts["source"].text)
    kernel = tr.meta["source"].rstrip("\n").splitlines()
    assert len(source) == len(kernel)
    marked = [line for line in source if line.startswith("▶")]
    assert len(marked) == 1
    assert marked[0].endswith(kernel[frame.source_line].strip())
    # one highlighted line (the executed one), at that line's height
    (top,) = re.findall(
        r"top:([\d.]+)px;width:[\d.]+px;height:[\d.]+px;[^\"]*opacity:0.45",
        scene.texts["source"].text,
    )
    assert float(top) == pytest.approx(4 + frame.source_line * scene.sizes.line, abs=1)


def test_a_step_sends_only_the_text_views_that_changed():
    tr = CATALOGUE.get("fig5-8")
    rep = Replay(tr, (0, 0))
    scene = Scene(tr)
    scene.update(rep.frame(0))
    before = {v: d.text for v, d in scene.texts.items()}
    scene.update(rep.frame(0))  # the same frame again: nothing changes
    assert {v: d.text for v, d in scene.texts.items()} == before
    scene.update(rep.frame(1))
    after = {v: d.text for v, d in scene.texts.items()}
    assert after["caption"] != before["caption"]  # "Step 2 of ..."
    assert "Step 2 of" in visible_lines(after["caption"])[0]
    assert after["legend"] == before["legend"]  # the legend never changes


def test_the_table_reads_back_as_its_columns():
    # every cell of the Fig. 5.8 table keeps its text, note and colours in the page
    from vizmm.render.bokeh_scene import frame_columns
    from vizmm.render.html_text import view_rows

    tr = CATALOGUE.get("fig5-8")
    scene = Scene(tr)
    frame = Replay(tr, (0, 0)).frame(7)
    scene.update(frame)
    cols = frame_columns(frame, tr)["table"]
    got = view_rows(scene.texts["table"].text)
    assert got["text"] == list(cols["text"]) and got["note"] == list(cols["note"])
    assert got["fill"] == list(cols["fill"]) and got["line_color"] == list(cols["line_color"])
    # the source: the executed line's marker on its row, the other rows none
    src = view_rows(scene.texts["source"].text)
    assert src["marker"][frame.source_line] == "▶"
    assert sum(m != "" for m in src["marker"]) == 1
