"""The dashboard in headless Chromium: keys, clicks, bookmarks, uploads, console.

``panel serve apps/dashboard.py`` runs in a subprocess on a free port and
Playwright drives Debian's Chromium (``/usr/bin/chromium``; ``playwright
install`` is not needed). The page exposes what it shows in
``<div id="vizmm-status" data-...>``: the tests read the Mds / Nds labels and
thread states from there and compare them with the book's Fig. 5.8 / 5.12.

Screenshots of every preset go to ``test-output/screenshots/``.
Skipped when Chromium or Playwright is missing.
"""

import os

import pytest
from served import (
    CHROMIUM,
    SHOTS,
    TO_SCREEN,
    end_and_press,
    open_menu,
    poll,
    read_status,
    wait_drawn,
)

pytestmark = pytest.mark.browser

if not os.path.exists(CHROMIUM):
    pytest.skip(f"{CHROMIUM} is missing (apt-get install chromium)", allow_module_level=True)
sync_api = pytest.importorskip("playwright.sync_api")


# Where a figure's data point is on the screen (Bokeh's views know their scales).
@pytest.fixture
def server(dashboard_url):
    """The session's dashboard (tests/conftest.py)."""
    return dashboard_url


@pytest.fixture
def page(browser):
    pg = browser.new_page(viewport={"width": 1600, "height": 1000})
    errors = []
    pg.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    pg.on("pageerror", lambda e: errors.append(f"page error: {e}"))
    pg.errors = errors
    yield pg
    pg.close()
    assert errors == [], f"console errors: {errors}"


def status(pg) -> dict:
    return read_status(pg, "#vizmm-status")


def open_page(pg, url):
    pg.goto(url)
    pg.wait_for_selector("#vizmm-status[data-ready='true']", timeout=60000)
    wait_drawn(pg)  # let Bokeh draw


def wait_step(pg, step):
    pg.wait_for_selector(f"#vizmm-status[data-step='{step}']", timeout=15000)
    return status(pg)


def shot(pg, name):
    os.makedirs(SHOTS, exist_ok=True)
    wait_drawn(pg)
    pg.screenshot(path=os.path.join(SHOTS, f"{name}.png"), full_page=True)


def test_keys_step_through_fig_5_8(page, server):
    open_page(page, server)
    st = status(page)
    assert st["source"] == "fig5-8" and st["step"] == 0 and st["count"] == 18
    page.keyboard.press("ArrowRight")
    st = wait_step(page, 1)
    assert st["threads"] == [["loading"] * 2] * 2
    assert st["mds"] == [["M_{0,0}", "M_{0,1}"], ["M_{1,0}", "M_{1,1}"]]
    page.keyboard.press("ArrowRight")
    st = wait_step(page, 2)
    assert st["nds"] == [["N_{0,0}", "N_{0,1}"], ["N_{1,0}", "N_{1,1}"]]
    shot(page, "fig5-8-step02-keys")
    page.keyboard.press("ArrowRight")
    assert wait_step(page, 3)["threads"] == [["waiting_1"] * 2] * 2
    page.keyboard.press("End")
    st = wait_step(page, 17)
    assert st["threads"] == [["writing_p"] * 2] * 2 and st["loads"] == 16 and st["naive"] == 32
    page.keyboard.press("Home")
    wait_step(page, 0)
    page.keyboard.press("g")
    page.wait_for_selector("#vizmm-status[data-granularity='phase']", timeout=15000)
    assert status(page)["count"] == 4


def test_a_button_pressed_while_the_slider_change_is_on_its_way_still_steps(page, server):
    # The step slider moved (End) and "|◀" pressed in the same moment: Panel
    # holds the slider's change for 50 ms and runs the click meanwhile without
    # the document's lock. The click, which came last, must still reach the replay.
    open_page(page, server + "?trace=fig5-8&step=3")
    assert status(page)["step"] == 2
    slider = end_and_press(page, page.locator("button.bk-btn:text-is('|◀')"))
    # the click came last: the replay and the slider at the first step
    assert wait_step(page, 0)["count"] == 18
    poll(lambda: float(slider.get_attribute("aria-valuenow")) == 1)
    assert float(slider.get_attribute("aria-valuenow")) == 1
    # and the page is still live: "▶" steps to Fig. 5.8's first loads
    page.locator("button.bk-btn:text-is('▶')").click()
    assert wait_step(page, 1)["threads"] == [["loading"] * 2] * 2


def test_click_a_block_and_a_thread(page, server):
    open_page(page, server + "?trace=fig5-11")
    x, y = page.evaluate(TO_SCREEN, ["vizmm-blocks", 1.5, 1.5])
    page.mouse.click(x, y)
    page.wait_for_selector("#vizmm-status[data-block='[1, 1]']", timeout=15000)
    x, y = page.evaluate(TO_SCREEN, ["vizmm-threads", 1.5, 0.5])  # thread (ty 0, tx 1)
    page.mouse.click(x, y)
    page.wait_for_selector("#vizmm-status[data-thread='[0, 1]']", timeout=15000)
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowRight")
    st = wait_step(page, 2)
    # Fig. 5.12: phase 0 of block_{1,1}; M_{3,0}, M_{3,1}, N_{0,3}, N_{1,3} do not exist
    assert st["mds"] == [["M_{2,0}", "M_{2,1}"], ["0.0", "0.0"]]
    assert st["nds"] == [["N_{0,2}", "0.0"], ["N_{1,2}", "0.0"]]
    shot(page, "fig5-12-block11-thread01")


def test_hover_ghost_cells_only(page, server):
    """Fig. 5.12, phase 0 of block (1,1): a ghost cell's tooltip; none over a real cell.

    M's edge, ghost cells and tile outline are rows of one glyph; only the ghost
    cells (rows 3 of M's tile, past Width = 3) answer the hover with "outside the
    matrix". Over M_{2,0}, inside the tile and the edge, only the element's tooltip.
    """
    open_page(page, server + "?trace=fig5-11&by=1&bx=1&step=3")

    def shown():
        return [
            t.inner_text()
            for t in page.locator(".bk-tooltip-content").all()
            if t.is_visible() and t.inner_text().strip()
        ]

    def tooltips_at(x, y):
        page.mouse.move(*page.evaluate(TO_SCREEN, ["vizmm-M", x, y]))
        poll(shown, timeout=10)  # a cell of M has a tooltip: wait for it
        wait_drawn(page)
        texts = shown()
        page.mouse.move(1, 1)
        poll(lambda: not shown(), timeout=10)  # off the plot: wait until they have gone
        return " | ".join(texts)

    ghost = tooltips_at(0.5, 3.5)  # M_{3,0}, zero-filled for thread (1,0)
    assert "M₃,₀ (outside the matrix)" in ghost and "thread (1,0)" in ghost, ghost
    real = tooltips_at(0.5, 2.5)  # M_{2,0}
    assert "M₂,₀" in real and "outside the matrix" not in real, real


def test_bookmark_brings_back_the_same_slide(page, server, browser):
    open_page(page, server + "?trace=fig5-9-3x3")
    for _ in range(10):
        page.keyboard.press("ArrowRight")
    before = wait_step(page, 10)
    # one numbering: the URL says the step the page shows (1-based: the 11th of the replay)
    page.wait_for_function(
        "() => new URLSearchParams(location.search).get('step') === '11'", timeout=15000
    )
    shown = page.evaluate(
        """() => [...Bokeh.documents[0].all_models]
                 .filter(m => m.title === "step" && m.value !== undefined)
                 .map(m => m.value)"""
    )
    assert shown == [11], shown  # the step slider the page shows
    bookmark = page.url
    other = browser.new_page(viewport={"width": 1600, "height": 1000})
    try:
        open_page(other, bookmark)
        after = status(other)
    finally:
        other.close()
    assert after == before
    page.reload()
    page.wait_for_selector("#vizmm-status[data-ready='true']", timeout=60000)
    assert status(page)["step"] == 10


def test_corrupted_upload_shows_a_clear_message(page, server):
    open_page(page, server)
    open_menu(page)  # the loading sections are behind "☰ More"
    page.get_by_text("Load a trace file", exact=True).first.click()
    page.locator("input[type=file]").first.set_input_files(
        files=[
            {
                "name": "broken.vizmm",
                "mimeType": "application/octet-stream",
                "buffer": b"PK\x03\x04 this is not a trace",
            }
        ]
    )
    message = page.get_by_text("Could not load broken.vizmm")
    message.first.wait_for(timeout=15000)
    text = message.first.inner_text()
    assert "not a readable vizmm trace" in text or "not a vizmm trace" in text, text
    assert "Traceback" not in page.content()
    assert status(page)["ready"]  # the previous trace stays
    shot(page, "upload-error")


def test_uploads_go_in_chunks_and_the_limit_is_checked_first(page, server, tmp_path):
    """A file of several chunks arrives whole; one over the limit is not sent at all.

    Both are chosen by path, as a file chooser gives them."""
    from vizmm.serve.catalogue import MAX_UPLOAD_BYTES

    open_page(page, server)
    open_menu(page)
    page.get_by_text("Load a trace file", exact=True).first.click()
    box = page.locator("input[type=file]").first
    junk = tmp_path / "three.vizmm"
    junk.write_bytes(b"not a trace " * 250_000)  # 3 MB: three chunks of 1 MB
    box.set_input_files(str(junk))
    message = page.get_by_text("Could not load three.vizmm")
    message.first.wait_for(timeout=30000)
    assert "not a vizmm trace" in message.first.inner_text()  # sent, read, refused
    big = tmp_path / "big.vizmm"
    with open(big, "wb") as f:  # a byte over the limit (a sparse file: nothing written)
        f.truncate(MAX_UPLOAD_BYTES + 1)
    box.set_input_files(str(big))
    refused = page.get_by_text("over this server's upload limit").first
    refused.wait_for(timeout=30000)
    assert "big.vizmm" in refused.inner_text()
    assert status(page)["ready"]  # the trace shown stays


def test_a_trace_chosen_as_a_file_chooser_gives_it_loads(page, server, tmp_path):
    """The README's recipe: save a trace, then *Load a trace file*, chosen by path.

    Chromium gives a file of an unknown extension (``.vizmm``) an empty MIME
    type, as a file chooser does (a file given as bytes would get
    ``application/octet-stream`` from Playwright instead); the upload must
    not depend on one.
    """
    import vizmm

    trace = vizmm.load(os.path.join(os.path.dirname(vizmm.__file__), "data", "fig5-11.vizmm"))
    path = trace.save(tmp_path / "mine.vizmm")
    open_page(page, server)
    open_menu(page)  # the loading sections are behind "☰ More"
    page.get_by_text("Load a trace file", exact=True).first.click()
    box = page.locator("input[type=file]").first
    box.set_input_files(str(path))
    assert box.evaluate("el => el.files[0].type") == ""  # what the server is sent with
    for _ in range(300):  # the upload is read off the server's event loop
        st = status(page)
        if str(st.get("source", "")).startswith("upload:") and st["ready"]:
            break
        page.wait_for_timeout(100)
    assert st["ready"] and st["source"].startswith("upload:"), st
    assert "Could not load" not in st["message"]
    assert "File is of invalid type" not in page.inner_text("body")
    shot(page, "upload-chosen-file")


PRESET_STEPS = {
    "fig5-8": [2, 5, 17],
    "fig5-11": [10, 17],
    "fig5-9-3x3": [9, 10],
    "general": [1, 17],
    "medium": [5, 67],
}


@pytest.mark.parametrize("key", list(PRESET_STEPS))
def test_preset_screenshots(page, server, key):
    for step in PRESET_STEPS[key]:
        open_page(page, f"{server}?trace={key}&step={step + 1}&ty=0&tx=1")  # 1-based
        st = status(page)
        assert st["source"] == key and st["step"] == step and st["thread"] == [0, 1]
        shot(page, f"{key}-step{step:02d}")


def test_presenter_mode(page, server):
    open_page(page, server + "?trace=fig5-11&step=11&presenter=true")
    assert status(page)["step"] == 10
    page.keyboard.press("ArrowRight")
    wait_step(page, 11)
    shot(page, "fig5-11-presenter")


def test_record_form_records_in_the_simulator(page, server):
    open_page(page, server)
    open_menu(page)
    page.get_by_text("Record a trace", exact=True).first.click()
    page.get_by_text("tiled", exact=True).first.click()  # Fig. 5.9, no boundary checks
    width = page.locator("input.bk-input").first
    width.fill("5")
    width.press("Enter")  # typing in a field must not step the replay
    page.get_by_text("Estimate: trace").first.wait_for(timeout=15000)
    assert status(page)["step"] == 0
    page.get_by_role("button", name="Record", exact=True).click()
    key = "rec:tiled:5x5x5:T2:s0:simulator"
    page.wait_for_function(
        """(key) => {
          function find(root) {
            const el = root.querySelector && root.querySelector('#vizmm-status');
            if (el) return el;
            for (const n of root.querySelectorAll('*'))
              if (n.shadowRoot) { const f = find(n.shadowRoot); if (f) return f; }
            return null;
          }
          const el = find(document);
          return el && el.dataset.source === key && el.dataset.busy === '' &&
                 el.dataset.ready === 'true';
        }""",
        arg=key,
        timeout=90000,
    )
    st = status(page)
    # three phases (the last one's tile overhangs the 5 x 5 matrices)
    assert st["count"] == 1 + 3 * 8 + 1 and "trace=rec%3Atiled" in page.url
    shot(page, "recorded-tiled-5x5")
