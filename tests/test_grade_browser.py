"""A feedback page of vizmm grade, opened offline in Chromium: its replay opens at the
first finding's step and steps back and forth."""

from pathlib import Path

import pytest

from vizmm.grade import grade, load_assignment
from vizmm.grade.report import feedback_html

pytestmark = pytest.mark.browser
SUBS = Path(__file__).resolve().parent / "grade_submissions"


def test_feedback_page_replay_steps_offline(tmp_path, browser):
    p = tmp_path / "a.toml"
    p.write_text(
        '[assignment]\nkernel = "matmul"\nfeedback = "pictures"\n[points]\nexact_p = 1\n'
        "[[case]]\nwidth = 4\ntile_width = 2\n"
    )
    g = grade(
        load_assignment(p), SUBS / "swapped_index.py", workdir=str(tmp_path / "w"), engine="record"
    )
    page_path = tmp_path / "feedback.html"
    page_path.write_text(feedback_html(g))
    ctx = browser.new_context(viewport={"width": 1280, "height": 720}, offline=True)
    requests = []
    ctx.on("request", lambda r: requests.append(r.url))
    page = ctx.new_page()
    page.goto(page_path.as_uri())
    assert "fail" in page.locator("section.case h2").inner_text()
    assert "wrong P" in page.locator("section.case").inner_text()
    frame = page.frame_locator("iframe.replay")
    body = frame.locator("body[data-vizmm-ready='1']")
    body.wait_for(timeout=60_000)
    n = int(frame.locator("body").evaluate("() => window.vizmm.n"))
    # A wrong P element is shown at the P store: the replay's last step.
    assert frame.locator("body").get_attribute("data-vizmm-step") == str(n - 1)
    frame.get_by_role("button", name="◀ step").click()
    frame.locator(f"body[data-vizmm-step='{n - 2}']").wait_for(timeout=10_000)
    frame.get_by_role("button", name="|◀ first").click()
    frame.locator("body[data-vizmm-step='0']").wait_for(timeout=10_000)
    frame.get_by_role("button", name="step ▶").click()
    frame.locator("body[data-vizmm-step='1']").wait_for(timeout=10_000)
    assert all(u.startswith(("file:", "about:", "data:")) for u in requests)
    ctx.close()
