"""The dashboard's "Occupancy & speed" tab in headless Chromium: its slider and device menu.

The tab says what it shows in ``<div id="vizmm-occupancy" data-...>``; the
roofline's markers are read from the page's Bokeh document. Expected values
are derived by hand from the device figures and the measured registers.
"""

import os

import pytest
from served import CHROMIUM, SHOTS, read_status, wait_drawn

pytestmark = pytest.mark.browser

if not os.path.exists(CHROMIUM):
    pytest.skip(f"{CHROMIUM} is missing (apt-get install chromium)", allow_module_level=True)
sync_api = pytest.importorskip("playwright.sync_api")

MARKER = """(name) => {
  const doc = Bokeh.documents[Bokeh.documents.length - 1];
  const r = doc.get_model_by_name(name);
  return Array.from(r.data_source.data.x);
}"""


@pytest.fixture(scope="module")
def page(browser, dashboard_url):
    pg = browser.new_page(viewport={"width": 1600, "height": 1100})
    errors = []
    pg.on("pageerror", lambda e: errors.append(str(e)))
    pg.goto(dashboard_url)
    pg.wait_for_selector("#vizmm-status[data-ready='true']", timeout=120000)
    pg.get_by_text("Occupancy & speed", exact=True).click()
    pg.wait_for_selector("#vizmm-occupancy", timeout=60000)
    wait_drawn(pg)
    yield pg
    pg.close()
    assert errors == []


def occupancy(pg) -> dict:
    """The tab's data-* attributes (the browser names data-tile-width ``tileWidth``)."""
    return read_status(pg, "#vizmm-occupancy")


def drag_slider(pg, fraction):
    """Drag the TILE_WIDTH slider's handle to ``fraction`` of its track (beyond 1: the end)."""
    handle = pg.locator(".noUi-handle").last  # the tab's slider is the page's last
    track = pg.locator(".noUi-base").last.bounding_box()
    box = handle.bounding_box()
    y = box["y"] + box["height"] / 2
    pg.mouse.move(box["x"] + box["width"] / 2, y)
    pg.mouse.down()
    pg.mouse.move(track["x"] + track["width"] * fraction, y, steps=8)
    pg.mouse.up()


def wait_for(pg, key, value):
    pg.wait_for_selector(f"#vizmm-occupancy[data-{key}='{value}']", timeout=20000)
    return occupancy(pg)


def test_slider_and_device_change_occupancy_and_the_roofline_point(page):
    pg = page
    st = occupancy(pg)
    # The tab opens on the trace on screen: Fig. 5.8's 4 x 4 with TILE_WIDTH 2 on the
    # book's A100. 4 threads a block take one warp; 32 block slots: 32 of 64 warps.
    assert (st["device"], st["tileWidth"]) == ("A100", 2)
    assert (st["blocks"], st["occupancy"], st["limit"]) == (32, 0.5, "blocks")
    assert st["sharedPerThread"] == 8.0
    assert pg.evaluate(MARKER, "chosen") == [0.5]  # 2 / 4 OP/B
    trace_x = pg.evaluate(MARKER, "current")
    assert trace_x == [pytest.approx(0.5)]  # the 4 x 4 trace read every element twice

    # Device menu: the H200 as measured.
    pg.locator("select").filter(has_text="H200").first.select_option("H200")
    st = wait_for(pg, "device", '"H200"')
    assert st["tileWidth"] == 2

    # The slider, dragged past its right end: TILE_WIDTH 32.
    drag_slider(pg, 1.1)
    st = wait_for(pg, "tile-width", 32)
    # The tab follows the trace on screen: the Fig. 5.8 preset runs Fig. 5.9 (tiled).
    # At TILE_WIDTH 32 its registers leave room for 2 blocks of 1024 threads: the
    # thread limit, 2048 of 2048, as the shipped 4096 x 4096 TILE_WIDTH 32 trace
    # measured on an H200 (2 blocks resident per SM, from %smid and %globaltimer).
    assert (st["blocks"], st["threads"], st["occupancy"], st["limit"]) == (
        2,
        2048,
        1.0,
        "threads",
    )
    assert st["sharedPerBlock"] == 2 * 32 * 32 * 4
    assert pg.evaluate(MARKER, "chosen") == [8.0]  # 32 / 4 OP/B: the point moved

    # One step left (30/31 of the track from 1 to 32): TILE_WIDTH 31 = 961 threads = 31
    # warps of 31 registers a thread (measured; 1024 a warp): 2 blocks = 62 of 64 warps.
    drag_slider(pg, 30 / 31)
    st = wait_for(pg, "tile-width", 31)
    assert (st["blocks"], st["threads"]) == (2, 2 * 961)
    assert st["occupancy"] == pytest.approx(62 / 64, abs=1e-4)
    assert pg.evaluate(MARKER, "chosen") == [31 / 4]
    os.makedirs(SHOTS, exist_ok=True)
    pg.screenshot(path=os.path.join(SHOTS, "occupancy-tab.png"), full_page=True)
