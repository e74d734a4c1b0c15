"""Seats of a class held by live pages only, a full class, and a private class store.

One ``panel serve`` of the dashboard with its class store, an SQLite file
in ``VIZMM_CLASS_DIR`` (a folder vizmm makes), and a cap of two seats
(``VIZMM_CLASS_MAX_SEATS=2``). An instructor's page in headless Chromium
makes a class; a script then requests the student URL many times over plain
HTTP (each request builds a page on the server, none loads it): the
database has no seat and the instructor's page counts 0. Real student pages
then join (the count says 1, then 2), a third is told the class is full,
a page that closes frees its seat. The database and its journal are 0600 in
a 0700 folder and hold the hash of the instructor's key, not the key;
nothing a student's page receives holds either; the key still makes a page
the instructor's and a wrong key (or the hash itself) does not.
"""

import contextlib
import hashlib
import json
import os
import sqlite3
import stat
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import parse_qs, urlsplit

import pytest
from served import CHROMIUM, read_status, serve

pytestmark = [pytest.mark.browser, pytest.mark.long]

if not os.path.exists(CHROMIUM):
    pytest.skip(f"{CHROMIUM} is missing (apt-get install chromium)", allow_module_level=True)
sync_api = pytest.importorskip("playwright.sync_api")

CAP = 2
GETS = 6  # plain requests of the student URL, three times the cap


@pytest.fixture(scope="module")
def class_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("classes") / "store"  # not there yet: vizmm makes it


@pytest.fixture(scope="module")
def server(tmp_path_factory, class_dir):
    env = {"VIZMM_CLASS_DIR": str(class_dir), "VIZMM_CLASS_MAX_SEATS": str(CAP)}
    with serve("dashboard", tmp_path_factory.mktemp("serve"), env=env) as url:
        yield url


def status(pg) -> dict:
    return read_status(pg, "#vizmm-status")


def wait_attr(pg, key, value, timeout=15000):
    pg.wait_for_selector(f"#vizmm-status[data-{key}='{value}']", timeout=timeout)


def open_page(browser, url, errors, received=None):
    """A page at ``url``, loaded; ``received`` gets every websocket frame the server sends it."""
    pg = browser.new_page(viewport={"width": 1400, "height": 900})
    pg.on("pageerror", lambda e: errors.append(str(e)))
    if received is not None:
        pg.on("websocket", lambda ws: ws.on("framereceived", lambda m: received.append(m)))
    response = pg.goto(url)
    if received is not None:
        received.append(response.text())
    pg.wait_for_selector("#vizmm-status[data-ready='true']", timeout=60000)
    return pg


def database(class_dir):
    return os.path.join(class_dir, "classes.db")


def seats(class_dir, code) -> dict:
    """The seats of class ``code``, read from the database as another process would."""
    with contextlib.closing(sqlite3.connect(database(class_dir))) as db:
        rows = db.execute("SELECT seat, page, seen FROM seats WHERE code = ?", (code,))
        return {seat: {"page": page, "seen": seen} for seat, page, seen in rows}


def test_only_live_pages_hold_seats_up_to_the_cap(browser, server, class_dir):
    errors = []
    teacher = open_page(browser, server + "?class=new", errors)
    code = status(teacher)["class"]
    teacher.wait_for_function("() => window.location.search.includes('teach=')")
    key = parse_qs(urlsplit(teacher.url).query)["teach"][0]
    wait_attr(teacher, "students", "0")

    # a script requests the student URL: every request builds a page, none takes a seat
    def get(i):
        with urllib.request.urlopen(f"{server}?class={code}&seat=bot{i}", timeout=120) as r:
            return r.status, r.read().decode("utf-8", "replace")

    t0 = time.monotonic()
    with ThreadPoolExecutor(4) as pool:
        answers = list(pool.map(get, range(GETS)))
    took = time.monotonic() - t0
    assert all(rc == 200 and "bokeh" in body.lower() for rc, body in answers)
    assert all(key not in body for _, body in answers)
    teacher.wait_for_timeout(1500)  # a sleep about time: two of the instructor's polls
    assert seats(class_dir, code) == {}
    assert status(teacher)["students"] == 0
    print(f"{GETS} plain GETs in {took:.1f} s: 0 seats")

    # real students: the first two join, the third is told the class is full
    received = []
    a = open_page(browser, f"{server}?class={code}", errors, received)
    wait_attr(a, "seat", "held")
    wait_attr(teacher, "students", "1")
    b = open_page(browser, f"{server}?class={code}", errors, received)
    wait_attr(b, "seat", "held")
    wait_attr(teacher, "students", "2")
    c = open_page(browser, f"{server}?class={code}", errors, received)
    wait_attr(c, "seat", "full")
    assert status(c)["role"] == "student"
    full = c.locator("#vizmm-class-full").inner_text()
    assert "This class is full (2 students): ask your instructor." in full
    assert len(seats(class_dir, code)) == 2
    teacher.wait_for_timeout(1000)  # a sleep about time: a third student would show by now
    assert status(teacher)["students"] == 2

    # a page that closes frees its seat
    t0 = time.monotonic()
    a.close()
    wait_attr(teacher, "students", "1", timeout=10000)
    print(f"a closed page left the instructor's count in {time.monotonic() - t0:.1f} s")
    assert len(seats(class_dir, code)) == 1
    # the student turned away reloads: there is room now
    c.reload()
    c.wait_for_selector("#vizmm-status[data-ready='true']", timeout=60000)
    wait_attr(c, "seat", "held")
    wait_attr(teacher, "students", "2")

    # the database: 0600 in a 0700 folder, the key's hash and not the key
    assert stat.S_IMODE(os.stat(class_dir).st_mode) == 0o700
    names = sorted(os.listdir(class_dir))
    assert names == ["classes.db", "classes.db-shm", "classes.db-wal"]
    raw = b""
    for name in names:
        assert stat.S_IMODE(os.stat(os.path.join(class_dir, name)).st_mode) == 0o600, name
        with open(os.path.join(class_dir, name), "rb") as f:
            raw += f.read()
    digest = hashlib.sha256(key.encode()).hexdigest()
    assert key.encode() not in raw
    with contextlib.closing(sqlite3.connect(database(class_dir))) as db:
        row = db.execute("SELECT key_hash FROM classes WHERE code = ?", (code,)).fetchone()
    assert row == (digest,)
    # nothing a student's page received (its HTML, every websocket frame) holds either
    assert received
    for message in received:
        message = message if isinstance(message, str) else message.decode("utf-8", "replace")
        assert key not in message and digest not in message
    for pg in (b, c):
        assert key not in json.dumps(status(pg)) and digest not in json.dumps(status(pg))

    # the key still makes the instructor; a wrong key and the hash itself do not
    b.close()
    wait_attr(teacher, "students", "1", timeout=10000)
    again = open_page(browser, teacher.url, errors)
    assert status(again)["role"] == "instructor" and status(again)["class"] == code
    for wrong in ("wrong", digest):
        pg = open_page(browser, f"{server}?class={code}&teach={wrong}", errors)
        assert status(pg)["role"] == "student"
        pg.close()
    for pg in (teacher, again, c):
        pg.close()
    assert errors == []
