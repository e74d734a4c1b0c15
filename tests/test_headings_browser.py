"""The scene's headings as a person reads them on the page (issue 32, item 10).

Chromium at 1280x720 on the dashboard's Fig. 5.8: at the load of M's first
tile the counters say "no product yet" (no "0.0x fewer", no "CGMA 0.00"),
the Pvalue heading names no thread until one is followed, the per-warp row
has no heading until *Memory transactions* is on; the *Large matrices* tab
on this small trace shows only its note, no "No trace." and no play button
that plays nothing. Text is read from what the browser draws: the counters'
lines from the page's elements, the per-warp row's heading from its plot.
"""

import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from served import CHROMIUM, read_status, wait_drawn  # noqa: E402

DOCS = os.path.join(ROOT, "docs")

#: The text lines of the counters view and the per-warp row's heading, as drawn.
DRAWN = """() => {
  const doc = Bokeh.documents[0];
  const out = {counters: null, warps: null};
  for (const m of doc._all_models.values()) {
    if (m.name === "vizmm-counters") {
      const view = Bokeh.index.find_one_by_id(m.id);
      if (!view || !(view.el.getBoundingClientRect().width > 0)) continue;
      const root = view.el.shadowRoot || view.el;
      out.counters = Array.from(root.querySelectorAll("span"), (s) => s.textContent);
    }
    if (m.name === "vizmm-warps") {
      const view = Bokeh.index.find_one_by_id(m.id);
      if (view && view.el.getBoundingClientRect().width > 0) out.warps = m.title.text;
    }
  }
  return out;
}"""


#: The page box of a named figure (CSS px from the page's top left), for a screenshot.
BOX = """(name) => {
  for (const m of Bokeh.documents[0]._all_models.values()) {
    if (m.name !== name) continue;
    const view = Bokeh.index.find_one_by_id(m.id);
    if (!view) continue;
    const r = view.el.getBoundingClientRect();
    if (!(r.width > 0)) continue;
    return {x: r.x + window.scrollX, y: r.y + window.scrollY, width: r.width, height: r.height};
  }
  return null;
}"""


@pytest.mark.browser
@pytest.mark.skipif(not os.path.exists(CHROMIUM), reason=f"{CHROMIUM} is missing")
def test_headings_say_what_stands_under_them(new_page, dashboard_url):
    url = dashboard_url
    errors: list[str] = []
    pg = new_page(viewport={"width": 1280, "height": 720})
    pg.on("pageerror", lambda e: errors.append(str(e)))
    pg.goto(url + "?trace=fig5-8&step=2")  # phase 0, load M: no product yet
    pg.wait_for_selector("#vizmm-status[data-ready='true']", timeout=90000)
    wait_drawn(pg)
    drawn = pg.evaluate(DRAWN)
    text = drawn["counters"]
    assert text and "CGMA: no product yet" in text, text
    assert not any("0.0x" in t or "CGMA 0.00" in t for t in text), text
    assert not any("thread (" in t for t in text), text  # none followed
    assert not drawn["warps"]  # transactions off: no heading over an empty row
    box = pg.evaluate(BOX, "vizmm-counters")
    pg.screenshot(path=os.path.join(DOCS, "headings-no-product-yet.png"), clip=box, full_page=True)

    pg.get_by_role("button", name="Memory transactions").first.click()
    pg.wait_for_function(
        "() => { for (const m of Bokeh.documents[0]._all_models.values())"
        " if (m.name === 'vizmm-warps' && m.title.text) return true; return false; }",
        timeout=30000,
    )
    assert "per warp" in pg.evaluate(DRAWN)["warps"].replace("\n", " ")
    pg.get_by_role("button", name="Memory transactions").first.click()
    pg.wait_for_function(  # off again (the URL says so once the server has it)
        "() => new URLSearchParams(location.search).get('transactions') === 'false'",
        timeout=30000,
    )

    pg.get_by_text("Large matrices", exact=True).first.click()
    pg.get_by_text("This view is for large launches").first.wait_for(timeout=30000)
    wait_drawn(pg)
    assert pg.get_by_text("This view is for large launches").first.is_visible()
    assert not pg.get_by_text("No large trace open").first.is_visible()
    assert not pg.get_by_text("No trace.").first.is_visible()
    assert not pg.get_by_role("button", name="▶ play").nth(1).is_visible()
    assert read_status(pg, "#vizmm-status")["ready"] is True
    pg.screenshot(path=os.path.join(DOCS, "large-tab-small-trace.png"))
    pg.close()
    assert errors == []
