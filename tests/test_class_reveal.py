"""Class mode tells students what it counted (issue 32, item 15).

After *Send* a student's picks are locked; the reveal grades what was sent
(the answer the instructor's count and the CSV hold); a student who sent
nothing is told "No answer sent."; students are told when the instructor's
page closes. In process (pages without a server, timers called by hand) and
in Chromium. The oracle: Fig. 5.8, phase 0, thread (0,0) copies M_{0,0}.
"""

import csv
import io
import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

pytest.importorskip("panel")

from served import CHROMIUM, SHOTS, TO_SCREEN, read_status, wait_drawn  # noqa: E402

from vizmm.serve import classes as S  # noqa: E402
from vizmm_apps import classroom as C  # noqa: E402
from vizmm_apps import dashboard as D  # noqa: E402
from vizmm_apps import quiz as Q  # noqa: E402


@pytest.fixture
def memory_store(monkeypatch):
    monkeypatch.setattr(S, "_store", S.MemoryStore())


def page(code, key="", seat=""):
    d = D.Dashboard(served=False, addons=[Q.question_mode])
    d.classroom = C.Classroom(d, code, key, seat, served=False)
    return d


def asked(n_students=2):
    teacher = page("new")
    code = teacher.classroom.code
    students = [page(code) for _ in range(n_students)]
    teacher.classroom.ask_next()
    for s in students:
        s.classroom.poll()
    assert "thread (0,0)" in students[0].questions.question.prompt
    return teacher, code, students


def test_picks_are_locked_after_send_and_the_reveal_grades_what_was_sent(memory_store):
    teacher, code, (a, b) = asked()
    a.questions._pick_cell("M", 1, 0)  # wrong: thread (0,0) copies M_{0,0}
    a.questions.submit()
    # after Send: a tap, a choice or a second Send changes nothing
    a.questions._pick_cell("M", 1, 0)  # would unpick
    a.questions._pick_cell("M", 0, 0)  # would pick the right one
    a.questions.submit()
    assert a.questions.picks == {("M", 1, 0)}
    assert a.questions.submit_button.disabled and a.questions.submit_button.label == "Sent"
    assert a.questions.choices.disabled
    assert "can no longer change" in a.questions.picked.object
    b.questions._pick_cell("M", 0, 0)
    b.questions.submit()
    teacher.classroom.poll()
    assert sorted(teacher.classroom.status()["answers"]) == [["M_{0,0}", 1], ["M_{1,0}", 1]]
    # even picks changed behind the page's back are not what is graded
    a.questions.picks = {("M", 0, 0)}
    teacher.classroom.reveal()
    for s in (a, b):
        s.classroom.poll()
    assert a.questions.correct is False and "Not quite" in a.questions.result.object
    assert a.questions.picks == {("M", 1, 0)}  # the sent answer is the one marked
    assert b.questions.correct is True and "Right" in b.questions.result.object
    rows = list(csv.DictReader(io.StringIO(C.results_csv(S.store().get(code)))))
    assert {(r["answer"], r["correct"]) for r in rows} == {("M_{1,0}", "no"), ("M_{0,0}", "yes")}


def test_a_student_who_sent_nothing_is_told_so(memory_store):
    teacher, code, (a, b) = asked()
    a.questions._pick_cell("M", 0, 0)  # the right cell, picked but never sent
    b.questions._pick_cell("M", 0, 0)
    b.questions.submit()
    teacher.classroom.reveal()
    a.classroom.poll()
    assert a.questions.correct is None
    assert "No answer sent." in a.questions.result.object
    assert "Not quite" not in a.questions.result.object and "Right" not in a.questions.result.object
    assert a.questions.status()["sent"] is None


def test_a_reload_after_send_keeps_the_answer_locked(memory_store):
    teacher, code, (a,) = asked(1)
    a.questions._pick_cell("M", 0, 0)
    a.questions.submit()
    again = page(code, seat=a.classroom.seat)
    again.questions._pick_cell("M", 1, 1)
    assert again.questions.picks == {("M", 0, 0)} and again.questions.sent == {("M", 0, 0)}
    teacher.classroom.reveal()
    again.classroom.poll()
    assert again.questions.correct is True


def test_students_are_told_when_the_instructor_page_closes(memory_store, monkeypatch):
    teacher, code, (a,) = asked(1)
    teacher.classroom._loaded()
    a.classroom.poll()
    assert a.classroom.status()["instructor"] == "here" and not a.classroom.notice.visible
    # the instructor's browser goes: its page is no longer live
    monkeypatch.setattr(teacher.classroom, "_live", lambda: False)
    teacher.classroom.poll()
    a.classroom.poll()
    assert a.classroom.status()["instructor"] == "gone" and a.classroom.notice.visible
    assert "instructor's page has closed" in a.classroom.notice.object
    # it comes back (the connection again): the students are told so too
    monkeypatch.setattr(teacher.classroom, "_live", lambda: True)
    teacher.classroom.poll()
    a.classroom.poll()
    assert a.classroom.status()["instructor"] == "here" and not a.classroom.notice.visible


def test_an_instructor_not_heard_from_counts_as_gone():
    now = 1_000_000.0
    cls = {"instructor_seen": 0.0}
    assert not C.Attendance(cls, now).instructor_gone  # never loaded yet: not gone
    cls["instructor_seen"] = now - 5
    assert not C.Attendance(cls, now).instructor_gone
    cls["instructor_seen"] = now - S.INSTRUCTOR_TIMEOUT_S
    assert C.Attendance(cls, now).instructor_gone  # its process ended without a word


def test_an_old_instructor_page_closing_after_a_reload_says_nothing(memory_store):
    teacher, code, (a,) = asked(1)
    teacher.classroom._loaded()
    teacher.classroom.poll()
    again = page(code, key=teacher.classroom.key)  # the instructor reloads
    again.classroom._loaded()
    again.classroom._taught_at = 0.0
    again.classroom.poll()
    teacher.classroom._stop()  # the old page's session ends later
    a.classroom.poll()
    assert a.classroom.status()["instructor"] == "here"


# ------------------------------------------------------------ in Chromium
def _wait(pg, key, value, timeout=15000):
    pg.wait_for_selector(f"#vizmm-status[data-{key}='{value}']", timeout=timeout)


@pytest.mark.browser
@pytest.mark.skipif(not os.path.exists(CHROMIUM), reason=f"{CHROMIUM} is missing")
def test_class_reveal_in_chromium(new_page, dashboard_url, tmp_path):
    url = dashboard_url  # its class store in a folder of the test run's
    errors = []

    def open_page(address):
        pg = new_page(viewport={"width": 1600, "height": 1000})
        pg.on("pageerror", lambda e: errors.append(str(e)))
        pg.goto(address)
        pg.wait_for_selector("#vizmm-status[data-ready='true']", timeout=60000)
        return pg

    teacher = open_page(url + "?class=new")
    code = read_status(teacher, "#vizmm-status")["class"]
    sender = open_page(f"{url}?class={code}")
    silent = open_page(f"{url}?class={code}")
    _wait(teacher, "students", "2")
    teacher.get_by_role("button", name="Ask the class").click()
    for s in (sender, silent):
        _wait(s, "question", "asking")

    def click_m(pg, row, col):
        wait_drawn(pg)  # the question's plot laid out before it is clicked
        x, y = pg.evaluate(TO_SCREEN, ["vizmm-M", col + 0.5, row + 0.5])
        pg.mouse.click(x, y)

    click_m(sender, 1, 0)  # M_{1,0}: wrong
    _wait(sender, "picks", '["M_{1,0}"]')
    sender.get_by_role("button", name="Send").click()
    _wait(sender, "sent", '["M_{1,0}"]')
    click_m(sender, 0, 0)  # after Send: the right cell, too late
    sender.wait_for_timeout(800)  # a sleep about time: a pick taken late would show by now
    assert read_status(sender, "#vizmm-status")["picks"] == ["M_{1,0}"]
    assert sender.get_by_role("button", name="Sent", exact=True).is_disabled()
    click_m(silent, 0, 0)  # picked, never sent
    _wait(silent, "picks", '["M_{0,0}"]')
    _wait(teacher, "answered", "1")
    teacher.get_by_role("button", name="Reveal").click()
    _wait(sender, "correct", "false")
    sender.get_by_text("✗ Not quite.").first.wait_for(timeout=10000)
    _wait(silent, "question", "revealed")
    silent.get_by_text("No answer sent.").first.wait_for(timeout=10000)
    assert silent.get_by_text("Not quite").count() == 0
    os.makedirs(SHOTS, exist_ok=True)
    silent.set_viewport_size({"width": 1280, "height": 720})
    wait_drawn(silent)
    silent.screenshot(path=os.path.join(SHOTS, "class-no-answer-sent-1280.png"))
    # the instructor's page closes: the students are told
    teacher.close()
    _wait(sender, "instructor", "gone", timeout=30000)
    sender.get_by_text("The instructor's page has closed.").first.wait_for(timeout=10000)
    sender.screenshot(path=os.path.join(SHOTS, "class-instructor-gone.png"))
    assert errors == []


def test_the_students_here_are_the_seats_stamped_lately():
    now = 1_000_000.0
    seats = {"a": {"seen": now - 1}, "b": {"seen": now - C.SEAT_TIMEOUT_S}, "c": {"seen": now}}
    cls = {"seats": seats}
    assert C.Attendance(cls, now).present == 2  # b's page went quiet SEAT_TIMEOUT_S ago
    assert C.Attendance(cls, now).drop_stale() and sorted(cls["seats"]) == ["a", "c"]
    assert not C.Attendance(cls, now).drop_stale()
