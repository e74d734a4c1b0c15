"""Presenter mode uses the screen (issue 32, item 14): the scene is sized to the
browser window, the values the class reads are 18 px and up at 1280x720 and
1024x768 on the book's example (on the rectangular preset P's three-digit
values are under it, as the README says: UNDER_18), every index of the
rectangular preset is labelled, and the last axis label of a 48 x 48 launch
has room.

Font sizes are read from the page (the Bokeh models the browser draws), at
the viewport sizes a projector gives.
"""

import math
import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from served import CHROMIUM, SHOTS, read_status  # noqa: E402

from vizmm.render.bokeh_scene import PRESENTER_VIEWS, Scene  # noqa: E402
from vizmm.serve.catalogue import CATALOGUE  # noqa: E402


def test_rectangular_preset_labels_every_index():
    tr = CATALOGUE.get("general")  # M 5 x 3, N 3 x 6
    j, k, l = tr.shape
    for fit in [(1240, 580), (980, 620)]:  # 1280x720, 1024x768 less the controls
        sc = Scene(tr, views=PRESENTER_VIEWS, presenter=True, fit=fit)
        for name, (rows, cols) in {"M": (j, k), "N": (k, l), "P": (j, l)}.items():
            labels = sc.index_labels(name)
            assert set(labels["above"]) >= {i + 0.5 for i in range(cols)}, name
            assert set(labels["left"]) >= {i + 0.5 for i in range(rows)}, name


def test_the_last_label_of_48_by_48_has_room():
    tr = CATALOGUE.get("medium")  # 48 x 48, TILE_WIDTH 16: labels at 0, 16, 32, 48
    sc = Scene(tr, views=PRESENTER_VIEWS, presenter=True, fit=(1240, 580))
    for name in ("M", "N", "P"):
        g = sc.grids[name]
        text, px = sc.index_labels(name)["above"][48]
        assert text == "48"
        # "48" centred on the grid's right edge: half its width (0.64 em a digit) past it
        past = g.width - (g.left + 48 * g.cell)
        assert past >= math.ceil(0.64 * 2 * px / 2), name


FONTS = """(name) => {
  // the type sizes of what is written on the named grid (its values), and its cells' size
  const doc = Bokeh.documents[0];
  for (const m of doc._all_models.values()) {
    if (m.name !== name) continue;
    const view = Bokeh.index.find_one_by_id(m.id);
    if (!view) continue;
    const plot = view.plot_view;
    if (!(plot.el.getBoundingClientRect().width > 0)) continue;  // the hidden normal scene
    const sizes = [];
    for (const r of plot.model.renderers) {
      if (r.x_range_name !== m.x_range_name) continue;  // another grid's
      const s = r.glyph && r.glyph.text_font_size;
      if (s === undefined || s === null) continue;
      const v = typeof s === "string" ? s : s.value;
      if (typeof v === "string" && v.endsWith("px")) sizes.push(parseFloat(v));
    }
    const sx = view.coordinates.x_scale;
    return {sizes, width: sx.compute(1) - sx.compute(0)};
  }
  return null;
}"""


#: The least size of a matrix's values where the README says it is under 18 px:
#: the rectangular preset's P (three-digit values). Worked out by hand: the
#: window less the controls (30 x 130 px, in 20 px steps) leaves 580 (620) px
#: of height; less the caption (4 lines of 25 px and 18 px) and two grid
#: heads (30 px and two 18 px lines each) that is 330 (370) px for N's and P's
#: 4 + 6 padded rows: cells of 33 (37) px, and three digits of 0.64 em in 33 - 4
#: (37 - 4) px are 15 (17) px.
UNDER_18 = {("general", (1280, 720), "P"): 15, ("general", (1024, 768), "P"): 17}


@pytest.mark.browser
@pytest.mark.skipif(not os.path.exists(CHROMIUM), reason=f"{CHROMIUM} is missing")
def test_presenter_values_are_18px_and_the_scene_follows_the_window(new_page, dashboard_url):
    url = dashboard_url
    errors = []
    widths = {}
    for key in ("fig5-8", "general"):
        for w, h in [(1280, 720), (1024, 768)]:
            pg = new_page(viewport={"width": w, "height": h})
            pg.on("pageerror", lambda e: errors.append(str(e)))
            pg.goto(url + f"?trace={key}&step=12&presenter=true")
            pg.wait_for_selector("#vizmm-status[data-ready='true']", timeout=90000)
            pg.wait_for_selector("#vizmm-status[data-presenter='true']", timeout=60000)
            pg.wait_for_timeout(1500)  # the scene built for this window
            for name in ("M", "N", "P"):
                got = pg.evaluate(FONTS, f"vizmm-{name}")
                assert got is not None and got["sizes"], name
                least = UNDER_18.get((key, (w, h), name), 18)
                assert min(got["sizes"]) >= least, (key, w, h, name, got["sizes"])
            widths[(key, w, h)] = pg.evaluate(FONTS, "vizmm-P")["width"]
            assert read_status(pg, "#vizmm-status")["presenter"] is True
            os.makedirs(SHOTS, exist_ok=True)
            pg.screenshot(path=os.path.join(SHOTS, f"presenter-screen-{key}-{w}x{h}.png"))
            pg.close()
    # 1024x768 is taller: its height-bound scene (P's cells) larger than at 1280x720
    for key in ("fig5-8", "general"):
        assert widths[(key, 1024, 768)] > widths[(key, 1280, 720)], widths
    assert errors == []
