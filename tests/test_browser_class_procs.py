"""One class across ``vizmm serve --num-procs 2``, with nothing set: the SQLite store.

The issue: without ``VIZMM_CLASS_DIR``, ``--num-procs 2`` split the class
(3 of 6 students were told "no class ... on this server"). Here the server
runs with neither ``VIZMM_CLASS_DIR`` nor ``VIZMM_CLASS_STORE`` set (its
``XDG_RUNTIME_DIR`` a private folder of the test, so that the default store
lands there). An instructor's page in headless Chromium makes a class; six
students' pages, asked for at once so that both processes serve some
(the server's log says which process each page is live in), all join it
(a class made by a request whose page went live in the other process stays
empty); all six answer a question and the instructor's page counts each answer
once; the reveal reaches all six. The database is 0600 in a 0700 folder.
"""

import contextlib
import json
import os
import re
import sqlite3
import stat
import time

import pytest
from served import CHROMIUM, TO_SCREEN, read_status, vizmm_serve, wait_drawn
from test_browser_class import wait_attr

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.long]

if not os.path.exists(CHROMIUM):
    pytest.skip(f"{CHROMIUM} is missing (apt-get install chromium)", allow_module_level=True)
sync_api = pytest.importorskip("playwright.sync_api")

STUDENTS = 6


def status(pg) -> dict:
    return read_status(pg, "#vizmm-status")


def pick(pg, row: int, tries: int = 5) -> None:
    """Click ``M_{row,0}`` until the page has it picked (a loaded machine may drop a click
    made before the plot is laid out; a click on the picked cell would take it back)."""
    want = [f"M_{{{row},0}}"]
    for _ in range(tries):
        if status(pg)["picks"] == want:
            return
        if not status(pg)["picks"]:
            wait_drawn(pg)  # the plot laid out before it is clicked
            x, y = pg.evaluate(TO_SCREEN, ["vizmm-M", 0.5, row + 0.5])
            pg.mouse.click(x, y)
        try:
            wait_attr(pg, "picks", json.dumps(want), timeout=10_000)
            return
        except sync_api.TimeoutError:
            continue
    assert status(pg)["picks"] == want


def test_a_class_spans_the_processes_of_vizmm_serve(browser, tmp_path):
    runtime = tmp_path / "run"
    runtime.mkdir(mode=0o700)
    env = {"VIZMM_CLASS_DIR": None, "VIZMM_CLASS_STORE": None, "XDG_RUNTIME_DIR": str(runtime)}
    with vizmm_serve(str(tmp_path), "--num-procs", "2", env=env) as (_, base):
        url = f"{base}/dashboard"
        errors = []

        def new_page():
            pg = browser.new_page(viewport={"width": 1600, "height": 1000})
            pg.on("pageerror", lambda e: errors.append(str(e)))
            return pg

        teacher = new_page()
        teacher.goto(url + "?class=new")
        teacher.wait_for_selector("#vizmm-status[data-ready='true']", timeout=120_000)
        code = status(teacher)["class"]
        assert status(teacher)["role"] == "instructor"

        # six students asked for at once (each navigation started before any is waited on)
        t0 = time.monotonic()
        students = [new_page() for _ in range(STUDENTS)]
        for s in students:
            s.evaluate(
                "u => setTimeout(() => { window.location.href = u; }, 0)", url + f"?class={code}"
            )
        for s in students:
            s.wait_for_selector("#vizmm-status[data-ready='true']", timeout=180_000)
            wait_attr(s, "seat", "held", timeout=60_000)
            st = status(s)
            assert st["class"] == code and st["role"] == "student"
        wait_attr(teacher, "students", str(STUDENTS), timeout=60_000)
        joined = time.monotonic() - t0

        # every student answers: M_{0,0} or M_{1,0}, alternately
        teacher.get_by_role("button", name="Ask the class").click()
        for s in students:
            wait_attr(s, "question", "asking", timeout=60_000)
        for i, s in enumerate(students):
            pick(s, i % 2)
            s.get_by_role("button", name="Send").click()
        wait_attr(teacher, "answered", str(STUDENTS), timeout=60_000)
        half = STUDENTS // 2
        assert sorted(status(teacher)["answers"]) == [["M_{0,0}", half], ["M_{1,0}", half]]
        teacher.get_by_role("button", name="Reveal").click()
        for i, s in enumerate(students):
            wait_attr(s, "question", "revealed", timeout=60_000)
            wait_attr(s, "correct", "true" if i % 2 == 0 else "false")
        db_path = runtime / "vizmm" / "classes.db"
        # every seat in the one class, while open
        with contextlib.closing(sqlite3.connect(db_path)) as db:
            seats = db.execute("SELECT code, COUNT(*) FROM seats GROUP BY code").fetchall()
        assert seats == [(code, STUDENTS)]
        for pg in [teacher, *students]:
            pg.close()
        # a closed page's seat is given back by its server process when its websocket
        # closes: wait for that (a loaded machine takes a while) before the server stops
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            with contextlib.closing(sqlite3.connect(db_path)) as db:
                if db.execute("SELECT COUNT(*) FROM seats").fetchone() == (0,):
                    break
            time.sleep(0.5)
    assert errors == []

    # the pages were live in both processes (the server's log says where)
    with open(tmp_path / "serve.log", encoding="utf-8") as f:
        log = f.read()
    where = re.findall(
        rf"class {code}: (a student's|the instructor's) page live in server process (\d+)", log
    )
    pids = {pid for who, pid in where if who == "a student's"}
    print(
        f"{STUDENTS} students joined in {joined:.1f} s; "
        f"pages live in processes {sorted({pid for _, pid in where})}"
    )
    assert len([w for w in where if w[0] == "a student's"]) == STUDENTS
    assert len(pids) == 2, where

    # the default store: $XDG_RUNTIME_DIR/vizmm/classes.db, 0600 in a 0700 folder
    folder = runtime / "vizmm"
    assert stat.S_IMODE(os.stat(folder).st_mode) == 0o700
    for name in os.listdir(folder):
        assert stat.S_IMODE(os.stat(folder / name).st_mode) == 0o600, name
    with contextlib.closing(sqlite3.connect(folder / "classes.db")) as db:
        rows = db.execute("SELECT code, instructor_seen, data FROM classes").fetchall()
        left = db.execute("SELECT COUNT(*) FROM seats").fetchone()
    classes = {c: (seen, data) for c, seen, data in rows}
    assert classes[code][0] > 0 and '"revealed": true' in classes[code][1]
    assert left == (0,)  # the pages closed: their seats given back
    # A page's HTML request may be served by the other process, which builds the
    # page there too (Bokeh: a session is made where its websocket lands): an
    # instructor's ?class=new may so leave a class no page loaded, the first to
    # make room for a new class.
    assert all(seen == 0 for c, (seen, _) in classes.items() if c != code)
