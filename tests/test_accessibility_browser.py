"""Every page by keyboard and screen reader, in both themes, in headless Chromium.

axe-core (bundled by ``axe-playwright-python``) checks each page: no serious
or critical violation in the light and the dark theme. The rest does what a
person did: reads the contrast of the dark theme's tab labels and of the
pressed buttons from the page's computed styles (WCAG 2's formula, written
out here), looks at the toggles off and on, moves a focused slider with the
arrow keys, steps with the keyboard alone, and reads each step's narration
from the ARIA live region, its words derived here from the book's indices
(Fig. 5.9: thread (ty, tx) of phase ``ph`` copies ``M[Row][ph*TILE_WIDTH +
tx]`` into ``Mds[ty][tx]``) and the trace's own M.
"""

from __future__ import annotations

import contextlib
import os
import re

import pytest
from served import CHROMIUM, SHOTS, open_menu, poll, read_status, serve, wait_drawn

pytestmark = pytest.mark.browser

if not os.path.exists(CHROMIUM):
    pytest.skip(f"{CHROMIUM} is missing (apt-get install chromium)", allow_module_level=True)
sync_api = pytest.importorskip("playwright.sync_api")
axe_sync = pytest.importorskip("axe_playwright_python.sync_playwright")

READY = "#vizmm-status[data-ready='true']"


# ------------------------------------------------------------------ helpers
def rgb(css: str) -> tuple[float, float, float, float]:
    """``'rgb(1, 2, 3)'`` / ``'rgba(1, 2, 3, 0.5)'`` as (r, g, b, alpha)."""
    parts = [float(v) for v in re.findall(r"[\d.]+", css)]
    return (*parts[:3], parts[3] if len(parts) > 3 else 1.0)


def luminance(c) -> float:
    """WCAG 2 relative luminance of an sRGB colour (0-255 channels)."""

    def lin(v):
        v /= 255
        return v / 12.92 if v <= 0.03928 else ((v + 0.055) / 1.055) ** 2.4

    r, g, b = (lin(v) for v in c[:3])
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast(a, b) -> float:
    """WCAG 2 contrast ratio of two colours."""
    la, lb = sorted((luminance(a), luminance(b)), reverse=True)
    return (la + 0.05) / (lb + 0.05)


#: The colours an element is seen in: its text colour, and the first opaque
#: background from it up through its shadow hosts.
SEEN = """(el) => {
  let node = el, bg = null;
  while (node) {
    if (node.nodeType === 1) {
      const c = getComputedStyle(node).backgroundColor;
      const a = c.match(/rgba\\(.*,\\s*([\\d.]+)\\)/);
      if (c !== 'transparent' && !(a && parseFloat(a[1]) === 0)) { bg = c; break; }
    }
    node = node.parentNode || (node.host ? node.host : null);
    if (node && node.nodeType === 11) node = node.host;
  }
  const cs = getComputedStyle(el);
  return {fg: cs.color, bg: bg || 'rgb(255, 255, 255)', classes: el.className,
          text: el.textContent.trim(), outline: cs.outlineStyle + ' ' + cs.outlineWidth,
          outlineColor: cs.outlineColor};
}"""

#: The element with the keyboard focus, through shadow roots.
FOCUSED = """() => { let a = document.activeElement;
  while (a && a.shadowRoot && a.shadowRoot.activeElement) a = a.shadowRoot.activeElement;
  return a; }"""


def seen(locator) -> dict:
    return locator.evaluate(SEEN)


def shot(pg, name: str, clip: dict | None = None) -> None:
    os.makedirs(SHOTS, exist_ok=True)
    pg.screenshot(path=os.path.join(SHOTS, f"{name}.png"), clip=clip)


def serious(pg) -> list[str]:
    """axe-core's serious and critical violations on the page, one line each."""
    results = axe_sync.Axe().run(pg)
    return [
        f"{v['id']} ({v['impact']}): {v['help']} at {[n['target'] for n in v['nodes'][:3]]}"
        for v in results.response["violations"]
        if v["impact"] in ("serious", "critical")
    ]


def landmarks(pg) -> dict:
    """What axe's landmark rules read, asked of the DOM directly (through shadow roots)."""
    return pg.evaluate(
        """() => {
      function* roots(r) { yield r; for (const n of r.querySelectorAll('*'))
        if (n.shadowRoot) yield* roots(n.shadowRoot); }
      let h1 = 0, unnamed = 0;
      for (const r of roots(document)) {
        h1 += r.querySelectorAll('h1').length;
        unnamed += r.querySelectorAll('[role="slider"]:not([aria-label])').length;
      }
      return {lang: document.documentElement.lang,
              main: document.querySelectorAll('main, [role="main"]').length, h1, unnamed};
    }"""
    )


@pytest.fixture
def dashboard(dashboard_url):
    """The session's dashboard (tests/conftest.py)."""
    return dashboard_url


@contextlib.contextmanager
def _served(request, app: str, tmp_path):
    """The session's server of ``app`` where the session has one (conftest.py), else this test's."""
    if app in ("large_view", "side_by_side"):
        yield request.getfixturevalue(f"{app}_url")
    else:
        with serve(app, tmp_path, timeout=180) as url:
            yield url


#: What shows that a tab, made when first opened, is there.
TAB_SHOWN = {
    "Large matrices": "text=This view is for large launches",
    "Occupancy & speed": "#vizmm-occupancy",
}


def settle(pg) -> None:
    """Wait for what axe reads: the page drawn, every slider handle named.

    The page names new slider handles every 1.5 s (``apps/access.py``): this
    waits until none is left unnamed (at most 15 s), and the test asserts as before.
    """
    wait_drawn(pg)
    poll(lambda: landmarks(pg)["unnamed"] == 0, timeout=15)


def open_page(browser, url: str, width=1280, height=720):
    pg = browser.new_page(viewport={"width": width, "height": height})
    pg.errors = []
    pg.on("pageerror", lambda e: pg.errors.append(str(e)))
    pg.goto(url)
    return pg


# -------------------------------------------------------------------- axe
@pytest.mark.parametrize("theme", ["light", "dark"])
def test_dashboard_passes_axe_core_in_both_themes(browser, dashboard, theme):
    pg = open_page(browser, f"{dashboard}?trace=fig5-8&theme={theme}")
    try:
        pg.wait_for_selector(READY, timeout=120000)
        settle(pg)  # the slider handles are named after their titles
        found = landmarks(pg)
        assert found["lang"] == "en" and found["main"] == 1 and found["h1"] == 1, found
        assert found["unnamed"] == 0, found
        assert serious(pg) == []
        # the other tabs too, made when first opened
        for tab in ("Large matrices", "Occupancy & speed"):
            pg.get_by_text(tab, exact=True).click()
            pg.locator(TAB_SHOWN[tab]).first.wait_for(timeout=60000)
            settle(pg)
            assert serious(pg) == [], tab
        assert pg.errors == []
    finally:
        pg.close()


@pytest.mark.parametrize("app", ["large_view", "side_by_side", "occupancy_view"])
def test_other_pages_pass_axe_core_in_both_themes(browser, request, tmp_path, app):
    with _served(request, app, tmp_path) as url:
        for theme in ("light", "dark"):
            pg = open_page(browser, f"{url}?theme={theme}")
            try:
                pg.wait_for_selector("h1", timeout=120000)
                settle(pg)
                found = landmarks(pg)
                assert found["lang"] == "en" and found["main"] == 1, found
                assert found["h1"] == 1 and found["unnamed"] == 0, found
                assert serious(pg) == [], theme
                if app == "occupancy_view" and theme == "dark":
                    # the two charts are drawn on the dark palette, not white
                    from vizmm.render import palette as pal

                    fills = pg.evaluate(
                        """() => { const out = [];
                           for (const d of Bokeh.documents) for (const m of d._all_models.values())
                             if (m.name === 'roofline' || m.name === 'speed')
                               out.push(m.background_fill_color, m.border_fill_color);
                           return out; }"""
                    )
                    assert fills and set(fills) == {pal.DARK.BACKGROUND}
                    shot(pg, "a11y-occupancy-dark")
            finally:
                pg.close()


# -------------------------------------------------------------- item 7, 8
@pytest.mark.parametrize("theme", ["light", "dark"])
def test_tab_labels_pressed_buttons_and_toggles_show_their_state(browser, dashboard, theme):
    pg = open_page(browser, f"{dashboard}?trace=fig5-8&theme={theme}")
    try:
        pg.wait_for_selector(READY, timeout=120000)
        wait_drawn(pg)
        # the selected tab's label, readable (AA: 4.5:1)
        tab = seen(pg.locator(".bk-tab.bk-active").first)
        assert tab["text"] == "Block replay"
        assert contrast(rgb(tab["fg"]), rgb(tab["bg"])) >= 4.5, tab
        # the pressed choice of substep|phase and lockstep|recorded stands out from the other
        for pressed, other in (("substep", "phase"), ("lockstep", "recorded")):
            on = seen(pg.locator(f"button.bk-btn:text-is('{pressed}')"))
            off = seen(pg.locator(f"button.bk-btn:text-is('{other}')"))
            assert "bk-active" in on["classes"] and "bk-active" not in off["classes"]
            for b in (on, off):
                assert contrast(rgb(b["fg"]), rgb(b["bg"])) >= 4.5, b
            # filled against not filled: the two backgrounds differ clearly
            assert contrast(rgb(on["bg"]), rgb(off["bg"])) >= 3, (on, off)
        # toggles: off looks like the unpressed choice, on like the pressed one, and says so
        for name in ("Presenter mode", "Memory transactions"):
            button = pg.get_by_role("button", name=name)
            off = seen(button)
            assert off["text"] == name and "bk-active" not in off["classes"]
            assert contrast(rgb(off["fg"]), rgb(off["bg"])) >= 4.5, off
            button.click()
            pg.wait_for_function(
                "(n) => new URLSearchParams(location.search).get(n) === 'true'",
                arg="presenter" if name == "Presenter mode" else "transactions",
                timeout=60000,
            )
            pg.get_by_role("button", name=f"✓ {name}").wait_for(timeout=30000)
            wait_drawn(pg)
            on = seen(pg.get_by_role("button", name=name))
            assert on["text"] == f"✓ {name}", on
            assert contrast(rgb(on["fg"]), rgb(on["bg"])) >= 4.5, on
            assert contrast(rgb(on["bg"]), rgb(off["bg"])) >= 3, (on, off)
            if name == "Memory transactions":
                shot(
                    pg, f"a11y-toggles-{theme}", clip={"x": 0, "y": 55, "width": 1280, "height": 90}
                )
            pg.get_by_role("button", name=name).click()
            pg.wait_for_function(
                "(n) => new URLSearchParams(location.search).get(n) === 'false'",
                arg="presenter" if name == "Presenter mode" else "transactions",
                timeout=60000,
            )
        assert pg.errors == []
    finally:
        pg.close()


# ---------------------------------------------------------------- item 11
def _focused_text(pg) -> str:
    """The text of the element that has the keyboard's focus, inside shadow roots too."""
    return pg.evaluate(
        """() => {
            let a = document.activeElement;
            while (a && a.shadowRoot && a.shadowRoot.activeElement) a = a.shadowRoot.activeElement;
            return a ? a.textContent.trim() : "";
        }"""
    )


def test_a_focused_slider_takes_the_arrow_keys_and_the_page_steps_by_keyboard(browser, dashboard):
    pg = open_page(browser, f"{dashboard}?trace=fig5-8&step=3")
    try:
        pg.wait_for_selector(READY, timeout=120000)
        wait_drawn(pg)
        step = lambda: read_status(pg, "#vizmm-status")["step"]  # noqa: E731
        assert step() == 2
        # the speed slider (behind "☰ More") focused: → and Home move it, the replay stays
        open_menu(pg)
        speed = pg.locator('[role="slider"][aria-label="steps / s"]')
        speed.focus()
        before = float(speed.get_attribute("aria-valuenow"))
        pg.keyboard.press("ArrowRight")
        poll(lambda: float(speed.get_attribute("aria-valuenow")) == before + 0.5, timeout=10)
        assert float(speed.get_attribute("aria-valuenow")) == before + 0.5
        pg.keyboard.press("Home")
        poll(lambda: float(speed.get_attribute("aria-valuenow")) == 0.5, timeout=10)
        assert float(speed.get_attribute("aria-valuenow")) == 0.5
        # the replay stays: a sleep about time, long enough for a step the keys wrongly
        # asked of the server to have come back
        pg.wait_for_timeout(800)
        assert step() == 2
        # the step slider focused: End moves it to the last step, and the replay follows it
        slider = pg.locator('[role="slider"][aria-label="step"]')
        slider.focus()
        pg.keyboard.press("End")
        pg.wait_for_selector("#vizmm-status[data-step='17']", timeout=30000)
        assert float(slider.get_attribute("aria-valuenow")) == 18
        wait_drawn(pg)  # the last step drawn before a button is focused
        # keyboard alone: Tab to the first-step button, a visible ring, Enter presses it
        pg.locator("button.bk-btn:text-is('|◀')").focus()
        ring = pg.evaluate_handle(FOCUSED).as_element()
        look = ring.evaluate(SEEN)
        assert look["text"] == "|◀" and look["outline"].startswith("solid"), look
        assert float(look["outline"].split()[1].rstrip("px")) >= 2
        assert contrast(rgb(look["outlineColor"]), rgb(look["bg"])) >= 3, look
        pg.keyboard.press("Enter")
        pg.wait_for_selector("#vizmm-status[data-step='0']", timeout=30000)
        # Tab on to "▶" (past "◀" and "▶ play"; how many stops depends on whether
        # the page has redrawn "◀" yet after the step change, so look, not count)
        for _ in range(8):
            if _focused_text(pg) == "▶":
                break
            pg.keyboard.press("Tab")
            pg.wait_for_timeout(150)
        assert _focused_text(pg) == "▶"
        pg.keyboard.press("Space")  # a focused button is pressed by space
        pg.wait_for_selector("#vizmm-status[data-step='1']", timeout=30000)
        assert pg.errors == []
    finally:
        pg.close()


# ------------------------------------------------------------- narration
def test_each_step_is_narrated_in_a_live_region(browser, dashboard):
    from vizmm.serve.catalogue import CATALOGUE

    M = CATALOGUE.get("fig5-8").M  # Fig. 5.8: 4 x 4, TILE_WIDTH 2
    T, ph, ty, tx = 2, 1, 0, 1
    Row, col = 0 * T + ty, ph * T + tx  # block (0, 0)
    sub = str.maketrans("0123456789", "₀₁₂₃₄₅₆₇₈₉")
    element = f"M{str(Row).translate(sub)},{str(col).translate(sub)}"
    pg = open_page(browser, f"{dashboard}?trace=fig5-8&ty={ty}&tx={tx}&step=9")
    try:
        pg.wait_for_selector(READY, timeout=120000)
        live = pg.locator("#vizmm-narration")
        assert live.get_attribute("role") == "status"
        assert live.get_attribute("aria-live") == "polite"
        assert live.text_content().startswith("Step 9 of 18. Phase 0, barrier 2 released")
        pg.locator("body").press("ArrowRight")  # to the load of M of phase 1
        pg.wait_for_selector("#vizmm-narration:has-text('Step 10 of 18')", timeout=30000)
        text = live.text_content()
        value = f"{M[Row, col]:g}"
        assert (
            text == f"Step 10 of 18. Phase {ph}, load M: thread ({ty},{tx}) copies "
            f"{element} (value {value}) into Mds[{ty}][{tx}]."
        ), text
        shot(pg, "a11y-narration", clip={"x": 0, "y": 230, "width": 1280, "height": 110})
        # the same region in presenter mode: the captions, larger
        pg.locator("body").press("p")
        pg.wait_for_selector("#vizmm-status[data-presenter='true']", timeout=60000)
        font = "el => parseFloat(getComputedStyle(el).fontSize)"
        poll(lambda: live.evaluate(font) >= 22, timeout=10)
        size = live.evaluate(font)
        assert size >= 22 and live.text_content() == text
        assert pg.errors == []
    finally:
        pg.close()


# ---------------------------------------------------------------- item 12
FIND = """function find(root, sel) {
  const el = root.querySelector(sel);
  if (el) return el;
  for (const n of root.querySelectorAll('*'))
    if (n.shadowRoot) { const f = find(n.shadowRoot, sel); if (f) return f; }
  return null;
}"""


def test_a_question_says_at_once_that_the_page_is_working(browser, dashboard):
    pg = open_page(browser, f"{dashboard}?trace=fig5-8&step=2")
    try:
        pg.wait_for_selector(READY, timeout=120000)
        wait_drawn(pg)
        # in the same turn of the browser as the click: before the server has heard of it
        said = pg.evaluate(
            "() => {"
            + FIND
            + """
            const button = [...(function* all(r) { for (const n of r.querySelectorAll('*')) {
                yield n; if (n.shadowRoot) yield* all(n.shadowRoot); } })(document)]
              .find(n => n.tagName === 'BUTTON' && n.textContent.trim() === 'Ask a question here');
            button.click();
            const busy = find(document, '#vizmm-busy');
            return [busy.style.display, busy.textContent, busy.getAttribute('role'),
                    document.documentElement.getAttribute('aria-busy')];
          }"""
        )
        assert said == ["", "⏳ Working out a question about this block …", "status", "true"]
        # the question is asked, and the page no longer says it is working
        pg.get_by_role("button", name="Submit").wait_for(timeout=60000)
        pg.wait_for_function(
            "() => {" + FIND + " return find(document, '#vizmm-busy').style.display === 'none'; }",
            timeout=30000,
        )
        assert pg.evaluate("() => document.documentElement.getAttribute('aria-busy')") is None
        assert pg.errors == []
    finally:
        pg.close()
