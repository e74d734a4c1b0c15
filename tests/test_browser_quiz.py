"""Predict, then reveal, in headless Chromium: a quiz answered by clicking in the views.

The page's Bokeh document is read in the browser (``Bokeh.documents[0]``)
before the reveal: the explanation and the answer's slot labels are not in
it. Screenshots go to ``test-output/screenshots/``.
"""

import os

import pytest
from playwright.sync_api import expect
from served import CHROMIUM, SHOTS, TO_SCREEN, end_and_press, poll, read_status, wait_drawn

pytestmark = pytest.mark.browser

if not os.path.exists(CHROMIUM):
    pytest.skip(f"{CHROMIUM} is missing (apt-get install chromium)", allow_module_level=True)
sync_api = pytest.importorskip("playwright.sync_api")

# Every property value of every model of the page's Bokeh document, as JSON text
# (what the server sent and the browser holds; other models referenced by id).
DOC_JSON = """() => {
  const out = [];
  const isModel = (v) => v !== null && typeof v === 'object' && 'properties' in v && 'id' in v;
  for (const m of Bokeh.documents[0].all_models) {
    for (const p of Object.values(m.properties)) {
      let value;
      try { value = p.get_value(); } catch (e) { continue; }
      let text;
      try {
        text = JSON.stringify(value, function (k, v) {
          if (k !== '' && isModel(v)) return v.id;
          if (v instanceof Map) return Object.fromEntries(v);
          if (typeof v === 'function') return undefined;
          return v;
        });
      } catch (e) { continue; }  // views' internals, not data
      if (text) out.push(text);
    }
  }
  return out.join('\\n');
}"""


@pytest.fixture
def server(dashboard_url):
    """The session's dashboard (tests/conftest.py)."""
    return dashboard_url


def status(pg) -> dict:
    return read_status(pg, "#vizmm-status")


def shot(pg, name):
    os.makedirs(SHOTS, exist_ok=True)
    wait_drawn(pg)
    pg.screenshot(path=os.path.join(SHOTS, f"{name}.png"), full_page=True)


def click_cell(pg, figure, row, col):
    # a sleep about time: as a person clicks, since two quick taps make a double tap
    pg.wait_for_timeout(600)
    wait_drawn(pg)
    x, y = pg.evaluate(TO_SCREEN, [figure, col + 0.5, row + 0.5])
    pg.mouse.click(x, y)


def wait_status(pg, key, value, timeout=15000):
    attr = "data-" + key.replace("_", "_")
    pg.wait_for_selector(f"#vizmm-status[{attr}='{value}']", timeout=timeout)


def test_a_quiz_answered_by_clicking(browser, server):
    pg = browser.new_page(viewport={"width": 1600, "height": 1100})
    errors = []
    pg.on("pageerror", lambda e: errors.append(str(e)))
    pg.goto(server + "?trace=fig5-11&by=1&bx=1")
    pg.wait_for_selector("#vizmm-status[data-ready='true']", timeout=60000)
    pg.get_by_role("button", name="Quiz on this block").click()
    wait_status(pg, "question", "asking")
    st = status(pg)
    assert st["question_kind"] == "copy_m" and st["step"] == 0 and st["quiz_index"] == 0
    # the status and the question's text can reach the page in two messages
    expect(pg.locator("#vizmm-question")).to_contain_text("?", timeout=15000)
    prompt = pg.locator("#vizmm-question").inner_text()
    # Fig. 5.12: block_{1,1}, phase 0; thread (0,0) copies M[Row = 2][0]
    assert "thread (0,0)" in prompt and "Mds[0][0]" in prompt
    # stepping is held while the question is open
    pg.keyboard.press("ArrowRight")
    pg.wait_for_timeout(500)  # a sleep about time: a step would have come back by now
    assert status(pg)["step"] == 0
    click_cell(pg, "vizmm-M", 0, 0)  # a wrong pick first, then the right one
    wait_status(pg, "picks", '["M_{0,0}"]')
    click_cell(pg, "vizmm-M", 2, 0)
    wait_status(pg, "picks", '["M_{2,0}"]')
    shot(pg, "quiz-fig5-12-asking")
    pg.get_by_role("button", name="Submit").click()
    wait_status(pg, "question", "revealed")
    st = status(pg)
    assert st["correct"] is True and st["step"] == 1
    assert st["mds"][0][0] == "M_{2,0}"  # the reveal step shows it loaded
    assert "Right" in pg.get_by_text("The answer:").first.inner_text()
    pg.get_by_role("button", name="Next question").click()
    wait_status(pg, "quiz_index", "1")
    # question 2: a copy of N; question 3: the zero-fills, clicked in Mds and Nds
    assert status(pg)["question_kind"] == "copy_n"
    pg.get_by_role("button", name="Skip").click()
    wait_status(pg, "question", "revealed")
    pg.get_by_role("button", name="Next question").click()
    wait_status(pg, "quiz_index", "2")
    assert status(pg)["question_kind"] == "zero_fill"
    pg.get_by_text("which Mds and Nds slots are zero-filled").first.wait_for(timeout=15000)
    page_json = pg.evaluate(DOC_JSON)
    # the page's data before the reveal: no explanation, no zero-filled slot shown
    assert "which Mds and Nds slots are zero-filled" in page_json  # the dump holds the page
    assert "boundary test fails" not in page_json
    assert status(pg)["mds_state"] == [["empty", "empty"], ["empty", "empty"]]
    # Fig. 5.12: M_{3,0}, M_{3,1} (Mds[1][0], Mds[1][1]), N_{0,3}, N_{1,3} (Nds[0][1], Nds[1][1])
    for i, (fig, row, col) in enumerate(
        [("Mds", 1, 0), ("Mds", 1, 1), ("Nds", 0, 1), ("Nds", 1, 1)]
    ):
        click_cell(pg, f"vizmm-{fig}", row, col)
        poll(lambda i=i: len(status(pg)["picks"] or []) > i, timeout=15)  # the pick arrived
    wait_status(pg, "picks", '["Mds[1][0]", "Mds[1][1]", "Nds[0][1]", "Nds[1][1]"]')
    shot(pg, "quiz-fig5-12-zero-fill-picks")
    pg.get_by_role("button", name="Submit").click()
    wait_status(pg, "question", "revealed")
    st = status(pg)
    assert st["correct"] is True
    assert st["mds_state"][1] == ["zero", "zero"] and st["nds_state"][0][1] == "zero"
    pg.get_by_text("boundary test fails").first.wait_for(timeout=15000)
    assert "boundary test fails" in pg.evaluate(DOC_JSON)  # revealed: now in the page
    shot(pg, "quiz-fig5-12-zero-fill-revealed")
    assert status(pg)["score"] == "2/8" or status(pg)["score"].startswith("2/")
    pg.close()
    assert errors == []


@pytest.mark.parametrize(
    "granularity, order, step",
    [
        # Fig. 5.8 (4 x 4, TILE_WIDTH 2): 18 sub-steps; 4 steps at phase granularity
        # (start, phase 0, phase 1, write P). Page steps count from 1.
        ("substep", "lockstep", 10),
        ("substep", "recorded", 10),
        ("phase", "lockstep", 3),
        ("phase", "recorded", 3),
    ],
)
def test_ask_a_question_here_in_every_granularity_and_order(
    browser, server, granularity, order, step
):
    """The button asks a question about the moment shown, whatever the replay's mode."""
    pg = browser.new_page(viewport={"width": 1280, "height": 720})
    errors = []
    pg.on("pageerror", lambda e: errors.append(str(e)))
    pg.goto(f"{server}?trace=fig5-8&granularity={granularity}&order={order}&step={step}")
    pg.wait_for_selector("#vizmm-status[data-ready='true']", timeout=60000)
    st = status(pg)
    assert (st["granularity"], st["order"], st["step"]) == (granularity, order, step - 1)
    shown = st["phase"]
    pg.get_by_role("button", name="Ask a question here").click()
    wait_status(pg, "question", "asking")
    # the status and the question's text can reach the page in two messages
    # a question, in the book's terms (the box may be drawn again meanwhile: wait on both)
    expect(pg.locator("#vizmm-question")).to_contain_text("?", timeout=15000)
    expect(pg.locator("#vizmm-question")).to_contain_text("thread", timeout=15000)
    st = status(pg)
    assert st["question_kind"] and st["quiz_count"] == 0  # one question, not a quiz
    assert st["phase"] is not None and st["phase"] >= shown  # this moment or after, never before
    shot(pg, f"ask-here-{granularity}-{order}")
    assert errors == []
    pg.close()


def test_a_quiz_asked_the_moment_the_slider_moved_opens(browser, server):
    # The step slider moved (End) and "Quiz on this block" pressed in one
    # script: the click comes while the slider's change waits out Panel's
    # debounce, the case Panel runs without the document's lock
    # (parts.on_press). The quiz opens at its first question all the same.
    pg = browser.new_page(viewport={"width": 1600, "height": 1100})
    errors = []
    pg.on("pageerror", lambda e: errors.append(str(e)))
    try:
        pg.goto(server + "?trace=fig5-11&by=1&bx=1&step=3")
        pg.wait_for_selector("#vizmm-status[data-ready='true']", timeout=60000)
        wait_drawn(pg)
        end_and_press(pg, pg.get_by_role("button", name="Quiz on this block"))
        wait_status(pg, "question", "asking")
        st = status(pg)
        # Fig. 5.12's block_{1,1}: the quiz starts at phase 0, thread (0,0) copying M
        assert st["question_kind"] == "copy_m" and st["step"] == 0 and st["quiz_index"] == 0
        expect(pg.locator("#vizmm-question")).to_contain_text("Mds[0][0]", timeout=15000)
        assert errors == []
    finally:
        pg.close()
