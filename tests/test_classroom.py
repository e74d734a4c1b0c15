"""Class sessions in process: an instructor's dashboard and students' dashboards.

Pages are :class:`vizmm_apps.dashboard.Dashboard` objects without a server; a
student page's timer is called by hand (``poll``). The answers' oracle is the
book (Fig. 5.8) and the questions' own public prompt; the counts are the
picks the test made.
"""

import csv
import hashlib
import io
import json
import os
import stat
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

pytest.importorskip("panel")

from vizmm.serve import classes as S  # noqa: E402
from vizmm_apps import classroom as C  # noqa: E402
from vizmm_apps import dashboard as D  # noqa: E402
from vizmm_apps import quiz as Q  # noqa: E402


@pytest.fixture(autouse=True)
def memory_store(monkeypatch):
    monkeypatch.setattr(S, "_store", S.MemoryStore())


def page(code, key="", seat=""):
    d = D.Dashboard(served=False, addons=[Q.question_mode])
    d.classroom = C.Classroom(d, code, key, seat, served=False)
    return d


def test_students_follow_the_instructor_and_explore_alone():
    teacher = page("new")
    code = teacher.classroom.code
    assert teacher.classroom.role == "instructor" and len(code) == 6
    assert f'data-class="{code}"' in teacher._status_html()
    a, b = page(code), page(code)
    assert a.classroom.role == b.classroom.role == "student"
    teacher.state.choose_source("fig5-11")
    teacher.state.select_block(1, 1)
    teacher.state.go(5)
    for s in (a, b):
        s.classroom.poll()
        assert (s.state.source, s.state.by, s.state.bx, s.state.step) == ("fig5-11", 1, 1, 5)
    # b explores alone: it stops following; a keeps following
    b.state.go(9)
    assert b.classroom.following is False
    teacher.state.go(7)
    a.classroom.poll()
    b.classroom.poll()
    assert a.state.step == 7 and b.state.step == 9
    b.classroom.follow.value = True  # snap back
    assert b.state.step == 7 and b.classroom.following


def test_a_question_answered_counted_revealed_and_exported():
    teacher = page("new")
    code = teacher.classroom.code
    a, b = page(code), page(code)
    teacher.classroom.ask_next()
    q = teacher.questions.question
    assert q is not None and teacher.questions.observer
    # Fig. 5.8, phase 0: thread (0,0) copies M_{0,0}
    assert q.kind == "copy_m" and "thread (0,0)" in q.prompt
    for s in (a, b):
        s.classroom.poll()
        assert s.questions.question is not None and s.questions.question.prompt == q.prompt
        assert s.state.step == q.view_step
        assert "Fig. 5.8" not in s.questions.result.object  # nothing of the explanation yet
    a.questions._pick_cell("M", 0, 0)  # what a tap on M_{0,0} does
    a.questions.submit()
    b.questions._pick_cell("M", 1, 0)
    b.questions.submit()
    assert not a.questions.revealed  # waits for the instructor
    teacher.classroom.poll()
    st = teacher.classroom.status()
    assert st["answered"] == 2
    assert sorted(st["answers"]) == [["M_{0,0}", 1], ["M_{1,0}", 1]]
    assert "students" in st and "answers" not in a.classroom.status()
    teacher.classroom.reveal()
    for s, right in ((a, True), (b, False)):
        s.classroom.poll()
        assert s.questions.revealed and s.questions.correct is right
        assert s.state.step == q.reveal_step
    rows = list(csv.DictReader(io.StringIO(C.results_csv(S.store().get(code)))))
    assert {(r["answer"], r["correct"], r["seats"]) for r in rows} == {
        ("M_{0,0}", "yes", "1"),
        ("M_{1,0}", "no", "1"),
    }
    assert all(r["question"] == "1" and r["kind"] == "copy_m" for r in rows)
    # the next question: a copy of N (Fig. 5.8, phase 0)
    teacher.classroom.ask_next()
    a.classroom.poll()
    assert a.questions.question.kind == "copy_n" and not a.questions.revealed


def test_a_reload_rejoins_the_seat():
    teacher = page("new")
    code = teacher.classroom.code
    a = page(code)
    teacher.classroom.ask_next()
    a.classroom.poll()
    a.questions._pick_cell("M", 0, 0)
    a.questions.submit()
    again = page(code, seat=a.classroom.seat)  # the same URL, reloaded
    assert again.questions.question is not None
    assert again.questions.picks == {("M", 0, 0)} and again.questions.submitted
    teacher.classroom.poll()
    assert teacher.classroom.status()["answered"] == 1
    assert len(S.store().get(code)["seats"]) == 1


def test_the_instructor_key_and_bad_codes():
    teacher = page("new")
    code, key = teacher.classroom.code, teacher.classroom.key
    assert page(code, key=key).classroom.role == "instructor"
    assert page(code, key="guess").classroom.role == "student"
    bad = page("nope!")
    assert "not a class code" in bad.classroom.error and bad.state.message
    gone = page("ABCDEF")
    assert "no class ABCDEF" in gone.classroom.error


def seats(code):
    return S.store().get(code)["seats"]


def test_a_page_that_leaves_frees_its_seat_and_its_answer_stays():
    teacher = page("new")
    code = teacher.classroom.code
    a, b = page(code), page(code)
    assert a.classroom.seat_state == b.classroom.seat_state == "held"
    assert a.classroom.status()["seat"] == "held"
    teacher.classroom.poll()
    assert teacher.classroom.status()["students"] == 2
    teacher.classroom.ask_next()
    a.classroom.poll()
    a.questions._pick_cell("M", 0, 0)
    a.questions.submit()
    a.classroom._stop()  # what the end of its session does (pn.state.on_session_destroyed)
    assert set(seats(code)) == {b.classroom.seat}
    teacher.classroom.poll()
    st = teacher.classroom.status()
    assert st["students"] == 1 and st["answered"] == 1  # its answer is still counted
    teacher.classroom.reveal()
    rows = list(csv.DictReader(io.StringIO(C.results_csv(S.store().get(code)))))
    assert [(r["answer"], r["seats"]) for r in rows] == [("M_{0,0}", "1")]


def test_a_full_class_turns_a_new_page_away(monkeypatch):
    monkeypatch.setenv("VIZMM_CLASS_MAX_SEATS", "2")
    teacher = page("new")
    code = teacher.classroom.code
    a, b, c = page(code), page(code), page(code)
    assert [p.classroom.seat_state for p in (a, b, c)] == ["held", "held", "full"]
    assert c.classroom.status()["seat"] == "full" and c.classroom.following is False
    message = "This class is full (2 students): ask your instructor."
    assert message in c.classroom.title.object and c.state.message == message
    assert set(seats(code)) == {a.classroom.seat, b.classroom.seat}
    teacher.classroom.poll()
    assert teacher.classroom.status()["students"] == 2
    assert "the class is full" in teacher.classroom.counts.object
    # the page turned away follows nothing and answers nothing
    teacher.classroom.ask_next()
    c.classroom.poll()
    assert c.questions.question is None and c.questions.on_submit is None
    # a reload of a seated page is its own seat again, full or not
    again = page(code, seat=a.classroom.seat)
    assert again.classroom.seat_state == "held" and len(seats(code)) == 2
    # a seat given back makes room
    b.classroom._stop()
    assert page(code).classroom.seat_state == "held"


def test_a_reload_keeps_the_seat_when_the_old_page_goes():
    teacher = page("new")
    code = teacher.classroom.code
    a = page(code)
    again = page(code, seat=a.classroom.seat)  # the reload's page loads before the old one ends
    a.classroom._keep_seat()  # the old page's stamp does not take the seat back
    a.classroom._stop()
    assert list(seats(code)) == [a.classroom.seat]
    assert seats(code)[a.classroom.seat]["page"] == again.classroom._page
    teacher.classroom.poll()
    assert teacher.classroom.status()["students"] == 1


def test_stale_seats_are_dropped_and_do_not_fill_the_class(monkeypatch):
    monkeypatch.setenv("VIZMM_CLASS_MAX_SEATS", "1")
    teacher = page("new")
    code = teacher.classroom.code
    gone = page(code)  # its process died: nobody gives the seat back

    def age(cls):
        cls["seats"][gone.classroom.seat]["seen"] -= C.SEAT_TIMEOUT_S + 1
        return True

    S.store().update(code, age, bump=False)
    teacher.classroom.poll()
    assert teacher.classroom.status()["students"] == 0  # not counted
    late = page(code)
    assert late.classroom.seat_state == "held"
    assert list(seats(code)) == [late.classroom.seat]  # and dropped from the store


def test_a_bad_seat_cap_is_said(monkeypatch):
    teacher = page("new")
    monkeypatch.setenv("VIZMM_CLASS_MAX_SEATS", "lots")
    bad = page(teacher.classroom.code)
    assert "VIZMM_CLASS_MAX_SEATS must be a whole number" in bad.classroom.error
    assert bad.state.message


def test_the_sqlite_store_is_private_and_keeps_no_key(tmp_path, monkeypatch):
    old = os.umask(0)  # files and folder private whatever the umask
    try:
        folder = tmp_path / "classes"
        monkeypatch.setattr(S, "_store", S.SQLiteStore(str(folder / "classes.db")))
        teacher = page("new")
        code, key = teacher.classroom.code, teacher.classroom.key
        student = page(code)  # a seat: the database is written again
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(folder).st_mode) == 0o700
    names = sorted(os.listdir(folder))
    assert names == ["classes.db", "classes.db-shm", "classes.db-wal"]
    for name in names:
        assert stat.S_IMODE(os.stat(folder / name).st_mode) == 0o600, name
    raw = b"".join((folder / name).read_bytes() for name in names)
    assert key and key.encode() not in raw
    digest = hashlib.sha256(key.encode()).hexdigest()
    stored = S.store().get(code)
    assert "key" not in stored and stored["key_hash"] == digest
    assert list(stored["seats"]) == [student.classroom.seat]
    # the key still opens the instructor's page; a wrong key, the hash itself, none do not
    assert page(code, key=key).classroom.role == "instructor"
    for wrong in ("guess", stored["key_hash"], key[:-1], ""):
        assert page(code, key=wrong).classroom.role == "student"
    assert key not in json.dumps(student.classroom.status())
    assert stored["key_hash"] not in json.dumps(teacher.classroom.status())


def test_an_sqlite_store_counts_seats_and_answers(tmp_path, monkeypatch):
    monkeypatch.setattr(S, "_store", S.SQLiteStore(str(tmp_path / "classes.db")))
    teacher = page("new")
    a = page(teacher.classroom.code)
    teacher.classroom.ask_next()
    a.classroom.poll()
    a.questions._pick_cell("M", 0, 0)
    a.questions.submit()
    teacher.classroom.poll()
    st = teacher.classroom.status()
    assert st["students"] == 1 and st["answered"] == 1
    teacher.classroom.reveal()
    rows = list(csv.DictReader(io.StringIO(C.results_csv(S.store().get(teacher.classroom.code)))))
    assert [(r["answer"], r["correct"], r["seats"]) for r in rows] == [("M_{0,0}", "yes", "1")]


def test_a_store_the_page_cannot_open_is_said(tmp_path, monkeypatch):
    folder = tmp_path / "open"
    folder.mkdir()
    folder.chmod(0o777)
    monkeypatch.setattr(S, "_store", None)
    monkeypatch.setenv("VIZMM_CLASS_STORE", str(folder / "classes.db"))
    bad = page("new")
    assert "other users may write" in bad.classroom.error and bad.state.message
    monkeypatch.setenv("VIZMM_CLASS_STORE", "postgres://db/classes")
    assert "not a class store" in page("new").classroom.error


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
def test_requests_for_new_classes_never_remove_a_class_being_taught(kind, tmp_path, monkeypatch):
    """Plain GETs of ``?class=new`` (pages that never load) cannot empty a server's classes."""
    monkeypatch.setattr(S, "MAX_CLASSES", 4)
    if kind == "sqlite":
        monkeypatch.setattr(S, "_store", S.SQLiteStore(str(tmp_path / "classes.db")))
    teacher = page("new")  # a loaded instructor page (not served: loaded at once)
    code = teacher.classroom.code
    store = S.store()
    for _ in range(12):  # what a script's GETs of ?class=new make: classes no page loaded
        store.create({"source": "fig5-8", "by": 0, "bx": 0})
    assert store.get(code)["code"] == code  # the taught class is still there
    student = page(code)
    assert student.classroom.role == "student" and not student.classroom.error
    # a server full of taught classes refuses a new one, in words, and keeps them all
    taught = [page("new").classroom.code for _ in range(3)]
    with pytest.raises(KeyError, match="classes in session"):
        store.create({"source": "fig5-8", "by": 0, "bx": 0})
    for c in [code, *taught]:
        assert store.get(c)["code"] == c
    refused = page("new")
    assert refused.classroom.error and "classes in session" in refused.state.message
