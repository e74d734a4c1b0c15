"""Presenter mode on a projector, the keys that toggle it, and the dark theme.

The presenter view must show the current step's caption, M, N, P, Mds, Nds and
threads without scrolling at 1280 x 720 and 1024 x 768 (the page's own scroll
size, read in Chromium), toggle with ``p`` however fast it is pressed, and
follow a click on its button at once. Screenshots go to
``test-output/screenshots/presenter-*.png``.
"""

import os
import re
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from served import CHROMIUM, SHOTS, open_menu, read_status, wait_drawn  # noqa: E402

from vizmm.render.bokeh_scene import PRESENTER_BOX, PRESENTER_VIEWS, Scene  # noqa: E402
from vizmm.serve.catalogue import CATALOGUE  # noqa: E402
from vizmm_apps.keys import KeyboardShortcuts  # noqa: E402

PRESENTER_FIGURES = ["vizmm-" + v for v in PRESENTER_VIEWS]


def extent(model):
    """Pixels (width, height) a Bokeh layout of fixed-size figures takes."""
    from bokeh.models import Column, Row

    if isinstance(model, (Row, Column)):
        sizes = [extent(c) for c in model.children]
        gap = (model.spacing or 0) * (len(sizes) - 1)
        if isinstance(model, Row):
            return sum(w for w, _ in sizes) + gap, max(h for _, h in sizes)
        return max(w for w, _ in sizes), sum(h for _, h in sizes) + gap
    return model.width or 0, model.height or 0


# ------------------------------------------------------------ no browser
@pytest.mark.parametrize("key", ["fig5-8", "fig5-11", "general", "medium"])
def test_presenter_scene_fits_a_projector(key):
    tr = CATALOGUE.get(key)
    normal = Scene(tr)
    scene = Scene(tr, views=PRESENTER_VIEWS, presenter=True)
    w, h = extent(scene.layout)
    assert w <= PRESENTER_BOX[0] and h <= PRESENTER_BOX[1], (w, h)
    assert set(scene.figures) | set(scene.texts) == set(PRESENTER_VIEWS)
    # large type: the caption's letters are a third larger than the normal page's
    (big,) = {int(px) for px in re.findall(r"font-size:(\d+)px", scene.texts["caption"].text)}
    (small,) = {int(px) for px in re.findall(r"font-size:(\d+)px", normal.texts["caption"].text)}
    assert big >= 18 and big >= 1.3 * small


def test_keys_that_arrive_together_are_each_acted_on():
    # A busy server gets several presses in one update of the queue (Panel keeps
    # only the newest value of a property): every one of them must count.
    got = []
    keys = KeyboardShortcuts(on_key=got.append, keys=["p", "ArrowRight"])
    keys.queue = [[1, "p"], [2, "p"], [3, "x"], [4, "ArrowRight"], [5, "p"]]
    assert got == ["p", "p", "ArrowRight", "p"] and keys.pressed == 5
    keys.queue = [[2, "p"], [3, "x"], [4, "ArrowRight"], [5, "p"], [6, "p"]]  # one new
    assert got == ["p", "p", "ArrowRight", "p", "p"] and keys.pressed == 6
    keys.press("ArrowRight")
    assert got[-1] == "ArrowRight" and keys.pressed == 7


# ------------------------------------------------------------ in Chromium
needs_chromium = pytest.mark.skipif(
    not os.path.exists(CHROMIUM), reason=f"{CHROMIUM} is missing (apt-get install chromium)"
)


@pytest.fixture
def server(dashboard_url):
    """The session's dashboard (tests/conftest.py)."""
    return dashboard_url


def new_page(browser, width, height):
    pg = browser.new_page(viewport={"width": width, "height": height})
    pg.errors = []
    pg.on("console", lambda m: pg.errors.append(m.text) if m.type == "error" else None)
    pg.on("pageerror", lambda e: pg.errors.append(f"page error: {e}"))
    return pg


def status(pg) -> dict:
    return read_status(pg, "#vizmm-status")


def open_page(pg, url):
    pg.goto(url)
    pg.wait_for_selector("#vizmm-status[data-ready='true']", timeout=90000)


def wait_presenter(pg, on: bool):
    pg.wait_for_selector(f"#vizmm-status[data-presenter='{str(on).lower()}']", timeout=60000)


def shot(pg, name):
    os.makedirs(SHOTS, exist_ok=True)
    pg.screenshot(path=os.path.join(SHOTS, f"{name}.png"))


FIGURE_BOXES = """(names) => {
  const doc = Bokeh.documents[0];
  const out = {};
  for (const name of names) {
    const views = [];
    for (const model of doc._all_models.values())
      if (model.name === name) {
        const view = Bokeh.index.find_one_by_id(model.id);
        if (view) views.push(view.el.getBoundingClientRect());
      }
    // the shown one (a hidden scene's figures have no size)
    const r = views.find((b) => b.width > 0 && b.height > 0);
    out[name] = r ? [r.left, r.top, r.right, r.bottom] : null;
  }
  return out;
}"""

SCROLL = """() => {
  const s = document.scrollingElement;
  return [s.scrollWidth, s.scrollHeight, innerWidth, innerHeight];
}"""


def assert_fits(pg):
    sw, sh, iw, ih = pg.evaluate(SCROLL)
    assert sw <= iw and sh <= ih, f"page scrolls: {sw}x{sh} in a {iw}x{ih} window"
    boxes = pg.evaluate(FIGURE_BOXES, PRESENTER_FIGURES)
    for name, box in boxes.items():
        assert box is not None, f"{name} is not shown"
        left, top, right, bottom = box
        assert 0 <= left < right <= iw and 0 <= top < bottom <= ih, (name, box)


@pytest.mark.browser
@needs_chromium
@pytest.mark.parametrize("size", [(1280, 720), (1024, 768)], ids=["1280x720", "1024x768"])
def test_presenter_view_fits_the_projector(browser, server, size):
    pg = new_page(browser, *size)
    try:
        # Fig. 5.11: phase 1 of block (0,0), loading N (ghost cells, zero-fills)
        open_page(pg, server + "?trace=fig5-11&step=11&presenter=true")
        wait_presenter(pg, True)
        pg.wait_for_function(
            "() => Bokeh.documents.length && document.scrollingElement.scrollWidth <= innerWidth",
            timeout=30000,
        )
        wait_drawn(pg)
        assert_fits(pg)
        assert status(pg)["step"] == 10
        shot(pg, f"presenter-{size[0]}x{size[1]}")
        pg.keyboard.press("ArrowRight")  # the keys still step
        pg.wait_for_selector("#vizmm-status[data-step='11']", timeout=30000)
        assert_fits(pg)
        assert pg.errors == []
    finally:
        pg.close()


def press_and_settle(pg, key: str, times: int) -> None:
    """Press ``key`` ``times`` times in a row, then → once and wait for its step.

    Keys are acted on in order, so when the → has moved the replay every
    ``key`` before it has been handled.
    """
    before = status(pg)["step"]
    for _ in range(times):
        pg.keyboard.press(key)
    pg.keyboard.press("ArrowRight")
    pg.wait_for_selector(f"#vizmm-status[data-step='{before + 1}']", timeout=90000)


@pytest.mark.browser
@needs_chromium
def test_p_pressed_several_times_in_a_row_toggles_each_time(browser, server):
    pg = new_page(browser, 1280, 720)
    try:
        open_page(pg, server + "?trace=fig5-8")
        assert status(pg)["presenter"] is False
        on = False
        for times in (3, 2):  # a burst of an odd count toggles, of an even one comes back
            press_and_settle(pg, "p", times)
            on ^= times % 2 == 1
            assert status(pg)["presenter"] is on, f"after {times} presses"
        assert on is True
        wait_presenter(pg, True)
        pg.wait_for_function(
            "() => document.scrollingElement.scrollWidth <= innerWidth", timeout=30000
        )
        assert_fits(pg)
        assert pg.errors == []
    finally:
        pg.close()


@pytest.mark.browser
@needs_chromium
def test_presenter_button_is_applied_at_the_first_click(browser, server):
    pg = new_page(browser, 1280, 720)
    try:
        open_page(pg, server + "?trace=fig5-8&step=6")
        for on in (True, False, True):
            pg.get_by_role("button", name="Presenter mode").click()
            wait_presenter(pg, on)  # no second click, no other event needed
            pg.wait_for_function(
                "(on) => new URLSearchParams(location.search).get('presenter') === on",
                arg=str(on).lower(),
                timeout=30000,
            )
        pg.wait_for_function(
            "() => document.scrollingElement.scrollWidth <= innerWidth", timeout=30000
        )
        assert_fits(pg)
        assert pg.errors == []
    finally:
        pg.close()


@pytest.mark.browser
@needs_chromium
def test_dark_theme_from_the_url_and_from_its_button(browser, server):
    from vizmm.render import palette as pal

    dark = "rgb({}, {}, {})".format(*pal.hex_to_rgb(pal.DARK.BACKGROUND))
    pg = new_page(browser, 1280, 720)
    try:
        open_page(pg, server + "?trace=fig5-11&step=11&presenter=true&theme=dark")
        st = status(pg)
        assert st["theme"] == "dark" and st["presenter"] is True
        # the plot of Mds, Nds and the threads is drawn on the dark palette's background;
        # Panel's page is dark too
        bg = pg.evaluate(
            """() => { const doc = Bokeh.documents[0];
               for (const m of doc._all_models.values())
                 if (m.name === 'vizmm-tiles') return m.background_fill_color; }"""
        )
        assert bg == pal.DARK.BACKGROUND
        page_bg = pg.evaluate("() => getComputedStyle(document.body).backgroundColor")
        assert page_bg != "rgb(255, 255, 255)"
        wait_drawn(pg)
        shot(pg, "presenter-dark-1280x720")
        # the button opens the page again in the light theme, at the same step
        pg.get_by_role("button", name="Dark").click()
        pg.wait_for_function(
            "() => new URLSearchParams(location.search).get('theme') === 'light'", timeout=60000
        )
        open_page(pg, pg.url)  # (the reload has happened: wait for the new session)
        st = status(pg)
        assert st["theme"] == "light" and st["step"] == 10
        assert dark != pg.evaluate("() => getComputedStyle(document.body).backgroundColor")
        assert pg.errors == []
    finally:
        pg.close()


@pytest.mark.browser
@needs_chromium
def test_every_control_is_on_screen_at_1280x720_outside_presenter_mode(browser, server):
    """The controls wrap onto a second line at a projector's width instead of running off it.

    The oracle is Chromium's layout: each step button, slider, toggle and
    section of the controls lies within the 1280-pixel window, none covers
    another, and the buttons on the right end still act (a click on
    *Memory transactions* turns the view on).
    """
    pg = new_page(browser, 1280, 720)
    try:
        open_page(pg, server + "?trace=medium")
        open_menu(pg)  # the sections are behind "☰ More"
        names = ["|◀", "◀", "▶ play", "▶", "▶|", "☰ More", "Presenter mode", "Dark"]
        names.append("Memory transactions")
        boxes = [pg.get_by_role("button", name=n, exact=True).bounding_box() for n in names]
        for title in ("Record a trace", "Load a trace file", "Export", "Keys and clicks"):
            boxes.append(pg.get_by_text(title, exact=True).first.bounding_box())
        for name, box in zip(names + ["sections"] * 4, boxes, strict=True):
            assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 1280, name
        for i, a in enumerate(boxes):
            for b in boxes[i + 1 :]:
                apart = (
                    a["x"] + a["width"] <= b["x"] + 1
                    or b["x"] + b["width"] <= a["x"] + 1
                    or a["y"] + a["height"] <= b["y"] + 1
                    or b["y"] + b["height"] <= a["y"] + 1
                )
                assert apart, (a, b)
        shot(pg, "controls-1280x720")
        pg.get_by_role("button", name="Memory transactions", exact=True).click()
        pg.wait_for_function(
            "() => new URLSearchParams(location.search).get('transactions') === 'true'",
            timeout=30000,
        )
        assert pg.errors == []
    finally:
        pg.close()
