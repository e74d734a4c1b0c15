"""Follow the instructor in headless Chromium: one instructor page, two student pages.

The instructor steps; the students' pages follow within a second (timed from
the key press to the students' ``#vizmm-status`` showing the step). The
instructor asks a question; the students answer by clicking in M; the
instructor's page counts the answers; the reveal reaches the students; a
student's reload rejoins the class in the same seat. Screenshots go to
``test-output/screenshots/`` (the README's picture is made from them).
"""

import os
import time

import pytest
from served import CHROMIUM, SHOTS, TO_SCREEN, read_status, wait_drawn

pytestmark = pytest.mark.browser

if not os.path.exists(CHROMIUM):
    pytest.skip(f"{CHROMIUM} is missing (apt-get install chromium)", allow_module_level=True)
sync_api = pytest.importorskip("playwright.sync_api")


@pytest.fixture
def server(dashboard_url):
    """The session's dashboard, its class store in a folder of the test run's (conftest.py)."""
    return dashboard_url


def status(pg) -> dict:
    return read_status(pg, "#vizmm-status")


def shot(pg, name):
    os.makedirs(SHOTS, exist_ok=True)
    wait_drawn(pg)
    pg.screenshot(path=os.path.join(SHOTS, f"{name}.png"), full_page=True)


def wait_attr(pg, key, value, timeout=15000):
    pg.wait_for_selector(f"#vizmm-status[data-{key}='{value}']", timeout=timeout)


def open_page(browser, url, errors):
    pg = browser.new_page(viewport={"width": 1600, "height": 1000})
    pg.on("pageerror", lambda e: errors.append(str(e)))
    pg.goto(url)
    pg.wait_for_selector("#vizmm-status[data-ready='true']", timeout=60000)
    return pg


def test_students_follow_answer_and_rejoin(browser, server):
    errors = []
    teacher = open_page(browser, server + "?class=new", errors)
    code = status(teacher)["class"]
    assert len(code) == 6 and status(teacher)["role"] == "instructor"
    assert code in teacher.locator("#vizmm-class-code").inner_text()
    teacher.wait_for_function("(c) => window.location.search.includes('teach=')", arg=code)
    students = [open_page(browser, f"{server}?class={code}", errors) for _ in range(2)]
    for s in students:
        st = status(s)
        assert st["class"] == code and st["role"] == "student" and st["following"] is True
    wait_attr(teacher, "students", "2")

    # the instructor steps: both students follow within a second of the instructor's
    # page showing the step (and the key press to the students' pages is printed)
    lags, keys = [], []
    for step in (1, 2, 3):
        t0 = time.monotonic()
        teacher.keyboard.press("ArrowRight")
        wait_attr(teacher, "step", str(step))
        t1 = time.monotonic()
        for s in students:
            wait_attr(s, "step", str(step), timeout=5000)
        t2 = time.monotonic()
        lags.append(t2 - t1)
        keys.append(t2 - t0)
    print(
        f"students followed {', '.join(f'{x:.2f}' for x in lags)} s after the instructor's "
        f"page ({', '.join(f'{x:.2f}' for x in keys)} s after the key)"
    )
    assert max(lags) < 1.0, lags

    # a student explores alone, the instructor moves on, the student snaps back
    students[1].keyboard.press("ArrowRight")
    wait_attr(students[1], "following", "false")
    teacher.keyboard.press("ArrowRight")
    wait_attr(students[0], "step", "4", timeout=5000)
    assert status(students[1])["step"] == 4  # its own step (3 + 1), not the class's move
    students[1].get_by_role("button", name="Follow the instructor").click()
    wait_attr(students[1], "following", "true")
    wait_attr(students[1], "step", "4")

    # a question: Fig. 5.8, phase 0, which M element does thread (0,0) copy
    teacher.get_by_role("button", name="Ask the class").click()
    for s in students:
        wait_attr(s, "question", "asking")
        assert status(s)["step"] == 0
        # the status may say so a frame before the question's box is drawn
        s.locator("#vizmm-question").filter(has_text="Question").wait_for(timeout=10000)
        assert "thread (0,0)" in s.locator("#vizmm-question").inner_text()
    for s, (row, col) in zip(students, [(0, 0), (1, 0)], strict=True):
        wait_drawn(s)  # the question's plot laid out before it is clicked
        x, y = s.evaluate(TO_SCREEN, ["vizmm-M", col + 0.5, row + 0.5])
        s.mouse.click(x, y)
        wait_attr(s, "picks", f'["M_{{{row},{col}}}"]')
        s.get_by_role("button", name="Send").click()
    wait_attr(teacher, "answered", "2")
    answers = sorted(status(teacher)["answers"])
    assert answers == [["M_{0,0}", 1], ["M_{1,0}", 1]]
    shot(teacher, "class-instructor-counts")
    shot(students[0], "class-student-asking")

    # a reload rejoins: same class, same seat, the answer kept and counted once
    seat_url = students[0].url
    assert "seat=" in seat_url
    students[0].reload()
    students[0].wait_for_selector("#vizmm-status[data-ready='true']", timeout=60000)
    wait_attr(students[0], "class", code)
    wait_attr(students[0], "picks", '["M_{0,0}"]')
    # counted once: a sleep about time, two of the instructor's polls for a second count
    teacher.wait_for_timeout(1000)
    assert status(teacher)["answered"] == 2

    teacher.get_by_role("button", name="Reveal").click()
    for s, right in zip(students, ["true", "false"], strict=True):
        wait_attr(s, "question", "revealed")
        wait_attr(s, "correct", right)
    assert status(students[0])["mds"][0][0] == "M_{0,0}"  # the reveal step shows the load
    shot(students[1], "class-student-revealed")
    shot(teacher, "class-instructor-revealed")
    for pg in [teacher, *students]:
        pg.close()
    assert errors == []
