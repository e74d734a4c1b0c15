"""The first screen is the replay (issue "The first screen and the first five minutes", item 1).

At a projector's 1280 x 720, a small laptop's 1366 x 768 and 1920 x 1080,
``/dashboard`` scrolls neither sideways nor, for the replay, down: every grid
of the scene (the blocks, M, N, P, Mds, Nds, the threads) and the kernel
listing's last line lie inside the window. The grids' extents come from the
book's figures, not from the page: Fig. 5.7/5.8 is 4 x 4 matrices with
TILE_WIDTH 2 (a 2 x 2 grid of blocks), Fig. 5.11 is 3 x 3 matrices with
TILE_WIDTH 2; the listing's last line is the kernel's store into P, the last
line of Fig. 5.9 (``P[Row*Width + Col] = Pvalue``). Each size's screenshot is
written to ``docs/first-screen-<w>x<h>.png``.
"""

import os

import pytest
from served import CHROMIUM, ROOT, SHOTS, TO_SCREEN, wait_drawn

pytestmark = pytest.mark.browser

if not os.path.exists(CHROMIUM):
    pytest.skip(f"{CHROMIUM} is missing (apt-get install chromium)", allow_module_level=True)
pytest.importorskip("playwright.sync_api")

DOCS = os.path.join(ROOT, "docs")
SIZES = [(1280, 720), (1366, 768), (1920, 1080)]
#: Fig. 5.8 and Fig. 5.11: each grid's (rows, columns) of cells as the book draws it.
GRIDS = {
    "fig5-8": {"M": (4, 4), "N": (4, 4), "P": (4, 4), "Mds": (2, 2), "Nds": (2, 2),
               "threads": (2, 2), "blocks": (2, 2)},
    "fig5-11": {"M": (3, 3), "N": (3, 3), "P": (3, 3), "Mds": (2, 2), "Nds": (2, 2),
                "threads": (2, 2), "blocks": (2, 2)},
    # the barrier lab (Fig. 5.9 with barrier 1 removed): 4 x 4, TILE_WIDTH 2
    "lab-4x4-drop1": {"M": (4, 4), "N": (4, 4), "P": (4, 4), "Mds": (2, 2), "Nds": (2, 2),
                      "threads": (2, 2), "blocks": (2, 2)},
}  # fmt: skip

#: The kernel listing as drawn: the box of its text view and of its last non-empty line.
LISTING = """() => {
  for (const m of Bokeh.documents[0].all_models) {
    if (m.name !== "vizmm-source") continue;
    const view = Bokeh.index.find_one_by_id(m.id);
    if (!view) continue;
    const root = view.el.shadowRoot || view.el;
    const lines = [...root.querySelectorAll("span.t[data-row]")]
      .filter((s) => !s.classList.contains("m") && s.textContent.trim() !== "");
    const last = lines[lines.length - 1];
    const box = (el) => { const r = el.getBoundingClientRect();
                          return [r.left, r.top, r.right, r.bottom]; };
    return {view: box(view.el), last: box(last), text: last.textContent};
  }
  return null;
}"""

PAGE = """() => ({scroll_width: document.documentElement.scrollWidth,
               inner_width: window.innerWidth, inner_height: window.innerHeight})"""


@pytest.fixture
def dashboard(dashboard_url):
    """The session's dashboard (tests/conftest.py)."""
    return dashboard_url


def _open(browser, url, width, height):
    pg = browser.new_page(viewport={"width": width, "height": height})
    errors = []
    pg.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    pg.on("pageerror", lambda e: errors.append(f"page error: {e}"))
    pg.errors = errors
    pg.goto(url)
    pg.wait_for_selector("#vizmm-status[data-ready='true']", timeout=120000)
    pg.wait_for_function(LISTING, timeout=30000)
    wait_drawn(pg)  # let Bokeh draw
    return pg


def _inside(box, width, height) -> bool:
    left, top, right, bottom = box
    return left >= 0 and top >= 0 and right <= width and bottom <= height


@pytest.mark.parametrize("trace", list(GRIDS))
@pytest.mark.parametrize(("width", "height"), SIZES)
def test_the_replay_is_the_first_screen(browser, dashboard, trace, width, height):
    pg = _open(browser, f"{dashboard}?trace={trace}", width, height)
    try:
        page = pg.evaluate(PAGE)
        assert page["inner_width"] == width and page["inner_height"] == height
        assert page["scroll_width"] <= width, page  # no sideways scroll
        for grid, (rows, cols) in GRIDS[trace].items():
            # the grid's cells, corner to corner, in its own units (one per cell)
            x0, y0 = pg.evaluate(TO_SCREEN, [f"vizmm-{grid}", 0, 0])
            x1, y1 = pg.evaluate(TO_SCREEN, [f"vizmm-{grid}", cols, rows])
            assert x1 - x0 > 5 * cols and y1 - y0 > 5 * rows, (grid, x0, y0, x1, y1)
            assert _inside((x0, y0, x1, y1), width, height), (grid, x0, y0, x1, y1)
        listing = pg.evaluate(LISTING)
        assert listing["text"].strip().endswith("P[Row * Width + Col] = Pvalue"), listing
        assert _inside(listing["last"], width, height), listing
        assert listing["view"][2] <= width, listing  # not cut at the right edge
        # the step's caption is said once: in the narration, not again in the scene
        assert pg.locator("#vizmm-narration").text_content().startswith("Step 1 of ")
        assert pg.evaluate(
            "() => [...Bokeh.documents[0].all_models].every(m => m.name !== 'vizmm-caption')"
        )
        if trace == "fig5-8":
            os.makedirs(DOCS, exist_ok=True)
            pg.screenshot(path=os.path.join(DOCS, f"first-screen-{width}x{height}.png"))
        assert pg.errors == []
    finally:
        pg.close()


def test_the_rest_is_behind_more(browser, dashboard):
    """The speed, the loading sections and the side-by-side link open from "☰ More"."""
    from served import open_menu

    pg = _open(browser, dashboard, 1280, 720)
    try:
        link = pg.locator("#vizmm-side-by-side-link")
        speed = pg.locator('[role="slider"][aria-label="steps / s"]')
        assert not link.is_visible() and not speed.is_visible()
        open_menu(pg)
        assert link.is_visible() and speed.is_visible()
        pg.get_by_text("Keys and clicks", exact=True).first.click()
        pg.get_by_text("phases ↔ sub-steps").first.wait_for(timeout=30000)
        # the keys still step the replay
        pg.locator("body").press("ArrowRight")
        pg.wait_for_selector("#vizmm-status[data-step='1']", timeout=30000)
        # closed again: hidden, the page still as wide as the window
        pg.get_by_role("button", name="☰ More", exact=True).click()
        link.wait_for(state="hidden", timeout=30000)
        assert pg.evaluate(PAGE)["scroll_width"] <= 1280
        assert pg.errors == []
    finally:
        pg.close()


#: Every grid's cells on the page (a side-by-side page has two of each name): its name,
#: and where its units 0 and 1 fall on the page, across and down (the scales are linear).
GRID_SCALES = """(names) => {
  const out = [];
  for (const doc of Bokeh.documents) for (const m of doc.all_models) {
    const name = (m.name || "").replace(/^vizmm-/, "");
    if (!m.name || !names.includes(name) || !m.data_source) continue;
    const view = Bokeh.index.find_one_by_id(m.id);
    if (!view || !view.plot_view) continue;
    const box = view.plot_view.canvas_view.el.getBoundingClientRect();
    const sx = view.coordinates.x_scale, sy = view.coordinates.y_scale;
    out.push([name, box.left + sx.compute(0), box.left + sx.compute(1),
              box.top + sy.compute(0), box.top + sy.compute(1)]);
  }
  return out;
}"""


@pytest.fixture
def side_by_side(side_by_side_url):
    """The session's side-by-side page (tests/conftest.py)."""
    return side_by_side_url


@pytest.mark.parametrize(("width", "height"), SIZES)
def test_side_by_side_fits_the_window(browser, side_by_side, width, height):
    """Fig. 5.7's 4 x 4 product at TILE_WIDTH 2 (left) and 4 (right), both on the first screen."""
    pg = browser.new_page(viewport={"width": width, "height": height})
    errors = []
    pg.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    names = ["M", "N", "P", "Mds", "Nds", "threads"]
    try:
        pg.goto(f"{side_by_side}?pair=tile-width")
        pg.wait_for_selector("#vizmm-pair-status[data-ready='true']", timeout=120000)
        # both panes drawn: two grids of each name
        pg.wait_for_function(
            f"(names) => ({GRID_SCALES})(names).length === 2 * names.length",
            arg=names,
            timeout=30000,
        )
        wait_drawn(pg)
        assert pg.evaluate(PAGE)["scroll_width"] <= width
        grids = sorted(pg.evaluate(GRID_SCALES, names), key=lambda g: (g[0], g[1]))
        for i, (name, x0, x1, y0, y1) in enumerate(grids):
            side = i % 2  # of each name, the left pane's first
            # Fig. 5.7: M, N and P are 4 x 4; the tiles TILE_WIDTH x TILE_WIDTH, 2 left, 4 right
            n = 4 if name in ("M", "N", "P") else (2, 4)[side]
            box = (x0, y0, x0 + n * (x1 - x0), y0 + n * (y1 - y0))
            assert x1 - x0 > 5 and y1 - y0 > 5, (name, side, box)
            assert _inside(box, width, height), (name, side, box)
        os.makedirs(SHOTS, exist_ok=True)
        pg.screenshot(path=os.path.join(SHOTS, f"side-by-side-{width}x{height}.png"))
        assert errors == []
    finally:
        pg.close()


@pytest.fixture
def large_view(large_view_url):
    """The session's large view (tests/conftest.py)."""
    return large_view_url


#: The page box (left, top, right, bottom) of the Bokeh model named so, or null.
BOX_OF = """(name) => { for (const d of Bokeh.documents) for (const m of d.all_models)
  if (m.name === name) { const v = Bokeh.index.find_one_by_id(m.id);
    if (!v) continue; const r = v.el.getBoundingClientRect();
    return [r.left, r.top, r.right, r.bottom]; }
  return null; }"""


@pytest.mark.parametrize(("width", "height"), SIZES)
def test_large_view_fits_the_window(browser, large_view, width, height):
    """The whole launch: the grid of blocks on the first screen, the Gantt chart of the SMs
    beside it, nothing past the window's right edge."""
    pg = browser.new_page(viewport={"width": width, "height": height})
    errors = []
    pg.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    try:
        pg.goto(large_view)
        pg.wait_for_selector("#vizmm-large-status[data-ready='true']", timeout=120000)
        # the grid fitted to the window's height (its figures are made again once the
        # browser has said its size)
        pg.wait_for_function(
            f"([h, name]) => {{ const b = ({BOX_OF})(name); return b !== null && b[3] <= h; }}",
            arg=[height, "vizmm-block-grid"],
            timeout=60000,
        )
        pg.wait_for_function(f"() => ({BOX_OF})('vizmm-sm-gantt') !== null", timeout=60000)
        wait_drawn(pg)
        assert pg.evaluate(PAGE)["scroll_width"] <= width
        grid = pg.evaluate(BOX_OF, "vizmm-block-grid")
        assert _inside(grid, width, height) and grid[2] - grid[0] > 200, grid
        left, _, right, _ = pg.evaluate(BOX_OF, "vizmm-sm-gantt")
        assert grid[2] <= left < right <= width, (grid, left, right)
        os.makedirs(SHOTS, exist_ok=True)
        pg.screenshot(path=os.path.join(SHOTS, f"large-view-{width}x{height}.png"))
        assert errors == []
    finally:
        pg.close()
