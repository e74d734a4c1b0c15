"""The class store (vizmm.serve.classes) shared by real processes: SQLite, and Redis.

One process makes a class; two other processes' students (threads, as the
pages of a server process are) take seats, stamp them and send answers
while the instructor's process asks and reveals. The oracle is what the
test sent: every seat once, every answer as last sent, every send counted
once (a counter each change adds one to: a lost or doubled update shows).
The Redis store runs against Debian's ``redis-server`` started here (the
tests skip, saying so, where it or the ``redis`` package is missing).
Also: the SQLite file's and folder's modes whatever the umask, the key never
in clear, eviction never removing a class being taught, classes that end,
and what reading and stamping cost in statements.
"""

import contextlib
import hashlib
import multiprocessing
import os
import shutil
import sqlite3
import stat
import subprocess
import sys
import tempfile
import threading
import time

import pytest

from vizmm.serve import classes as S

STUDENTS = 20  # per student process
PROCESSES = 2
QUESTIONS = 3
SEAT_STAMP_S = 0.05  # students stamp their seats this often (pages: every 2 s)
DEADLINE_S = 60  # a healthy run takes a few seconds: a lost update fails, not hangs


# ----------------------------------------------------------------- stores
@pytest.fixture(scope="module")
def redis_server(tmp_path_factory):
    """A private ``redis-server`` on a unix socket: its URL."""
    exe = shutil.which("redis-server")
    if exe is None:
        pytest.skip("redis-server is not installed (apt-get install redis-server)")
    try:
        import redis  # noqa: F401
    except ImportError:
        pytest.skip("the redis package is not installed (pip install 'vizmm[class-redis]')")
    folder = tempfile.mkdtemp(prefix="vizmm-redis-")  # a short path: sockets allow ~100 bytes
    sock = os.path.join(folder, "redis.sock")
    log = open(tmp_path_factory.mktemp("redis") / "redis.log", "w+")  # noqa: SIM115
    proc = subprocess.Popen(
        [exe, "--port", "0", "--unixsocket", sock, "--unixsocketperm", "700"]
        + ["--save", "", "--appendonly", "no", "--dir", folder],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.time() + 20
        while not os.path.exists(sock):
            if proc.poll() is not None or time.time() > deadline:
                log.seek(0)
                pytest.fail(f"redis-server did not start:\n{log.read()[-2000:]}")
            time.sleep(0.05)
        yield f"unix://{sock}?db=0"
    finally:
        proc.terminate()
        proc.wait(20)
        log.close()
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(params=["sqlite", "redis"])
def spec(request, tmp_path):
    """The ``VIZMM_CLASS_STORE`` of each shared store, empty."""
    if request.param == "sqlite":
        return f"sqlite://{tmp_path}/classes/classes.db"
    url = request.getfixturevalue("redis_server")
    S.open_store(url)._r.flushdb()
    return url


# ------------------------------------------------------- the processes
def take_seat(seat, page, cap):
    """A student's page taking its seat (what Classroom._claim does)."""

    def change(cls):
        if seat not in cls["seats"] and len(cls["seats"]) >= cap:
            return False
        cls["seats"][seat] = {"seen": time.time(), "page": page}
        cls["joined"] = cls.get("joined", 0) + 1
        return True

    return change


def stamp(seat, page):
    def change(cls):
        mine = cls["seats"].get(seat)
        if mine is None or mine["page"] != page:
            return False
        mine["seen"] = time.time()
        return True

    return change


def answer(seat, number, picks):
    def change(cls):
        q = cls["question"]
        if cls["revealed"] or q is None or q["index"] != number or seat not in cls["seats"]:
            return False
        cls["answers"][seat] = picks
        cls["sent"][str(number)] = cls["sent"].get(str(number), 0) + 1
        return True

    return change


def picks_of(seat: str, number: int, again: bool) -> list:
    """What student ``seat`` answers to question ``number`` (``again``: its second send)."""
    i = int(seat.rsplit("-", 1)[1])
    return [["M", (i + number + int(again)) % 4, number]]


def sends_again(seat: str, number: int) -> bool:
    """Whether the student changes its answer (sends twice)."""
    return int(seat.rsplit("-", 1)[1]) % 3 == number % 3


def student_process(spec, code, name, students, ready, out):
    """``students`` threads of one server process: seats, stamps and answers."""
    store = S.open_store(spec)
    errors = []

    def student(seat):
        try:
            page = os.urandom(4).hex()
            store.update(code, take_seat(seat, page, 10_000), bump=False)
            ready.put(seat)
            last_stamp, answered = 0.0, set()
            deadline = time.time() + DEADLINE_S
            while len(answered) < QUESTIONS:
                if time.time() > deadline:
                    raise TimeoutError(f"answered {sorted(answered)} of {QUESTIONS} questions")
                cls = store.get(code)  # the page's poll
                q = cls["question"]
                if time.time() - last_stamp > SEAT_STAMP_S:
                    store.update(code, stamp(seat, page), bump=False)
                    last_stamp = time.time()
                if q is not None and q["index"] not in answered and not cls["revealed"]:
                    n = q["index"]
                    store.update(code, answer(seat, n, picks_of(seat, n, False)))
                    if sends_again(seat, n):
                        store.update(code, answer(seat, n, picks_of(seat, n, True)))
                    answered.add(n)
                time.sleep(0.005)
        except BaseException as exc:  # noqa: BLE001
            errors.append(f"{seat}: {exc!r}")

    threads = [threading.Thread(target=student, args=(f"{name}-{i}",)) for i in range(students)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    out.put((name, os.getpid(), errors))


def instructor_process(spec, expected, codes, out):
    """Make the class, then ask and reveal :data:`QUESTIONS` questions once all answered."""
    store = S.open_store(spec)
    cls = store.create({"source": "fig5-8", "by": 0, "bx": 0, "step": 0})
    code = cls["code"]

    def init(c):
        c["sent"] = {}
        c["joined"] = 0
        return True

    store.update(code, init, bump=False)
    codes.put((code, cls["key"]))
    try:
        deadline = time.time() + DEADLINE_S
        while len(store.get(code)["seats"]) < expected:
            assert time.time() < deadline, "the students did not all take their seats"
            time.sleep(0.01)
        for n in range(QUESTIONS):

            def ask(c, n=n):
                c["question"] = {"source": "fig5-8", "block": [0, 0], "index": n, "count": 9}
                c["revealed"], c["answers"] = False, {}
                return True

            store.update(code, ask)
            while len(store.get(code)["answers"]) < expected:
                assert time.time() < deadline, f"question {n}: answers lost"
                time.sleep(0.01)
            # a student who sends twice may still be on its way: wait for the count
            want = expected + sum(sends_again(s, n) for s in store.get(code)["seats"])
            while store.get(code)["sent"].get(str(n), 0) < want:
                assert time.time() < deadline, f"question {n}: sends lost"
                time.sleep(0.01)

            def reveal(c, n=n):
                c["revealed"] = True
                c["results"].append({"index": n, "answers": dict(c["answers"])})
                return True

            store.update(code, reveal)

            def taught(c):
                c["instructor_seen"] = time.time()
                return True

            store.update(code, taught, bump=False)
        out.put(("instructor", os.getpid(), []))
    except BaseException as exc:  # noqa: BLE001
        out.put(("instructor", os.getpid(), [repr(exc)]))


@pytest.mark.slow  # processes of their own
def test_a_class_across_processes_counts_every_seat_and_answer_once(spec):
    ctx = multiprocessing.get_context("spawn")
    codes, ready, out = ctx.Queue(), ctx.Queue(), ctx.Queue()
    expected = STUDENTS * PROCESSES
    t0 = time.monotonic()
    teacher = ctx.Process(target=instructor_process, args=(spec, expected, codes, out))
    teacher.start()
    code, key = codes.get(timeout=60)
    names = [f"p{i}" for i in range(PROCESSES)]
    procs = [
        ctx.Process(target=student_process, args=(spec, code, name, STUDENTS, ready, out))
        for name in names
    ]
    for p in procs:
        p.start()
    try:
        reports = [out.get(timeout=DEADLINE_S + 30) for _ in range(PROCESSES + 1)]
    finally:
        for p in [teacher, *procs]:
            p.join(10)
            if p.is_alive():
                p.kill()
    took = time.monotonic() - t0
    assert [r for r in reports if r[2]] == []
    pids = {r[1] for r in reports}
    assert len(pids) == PROCESSES + 1 and os.getpid() not in pids  # real, separate processes

    cls = S.open_store(spec).get(code)
    seats = {f"{name}-{i}" for name in names for i in range(STUDENTS)}
    assert set(cls["seats"]) == seats  # every seat, once
    assert cls["joined"] == expected
    sends = sum(expected + sum(sends_again(s, n) for s in seats) for n in range(QUESTIONS))
    assert cls["version"] == 2 * QUESTIONS + sends  # asks, reveals, answers; not seats nor stamps
    assert [r["index"] for r in cls["results"]] == list(range(QUESTIONS))
    for n, row in enumerate(cls["results"]):
        # every answer as its student last sent it, and every send counted once
        assert row["answers"] == {s: picks_of(s, n, sends_again(s, n)) for s in seats}
        assert cls["sent"][str(n)] == expected + sum(sends_again(s, n) for s in seats)
    assert S.key_matches(cls, key) and key not in str(cls)
    kind = type(S.open_store(spec)).__name__
    print(
        f"{kind}: {expected} students, {PROCESSES} processes, {QUESTIONS} questions: {took:.1f} s"
    )


def test_a_forked_process_opens_its_own_connection(tmp_path):
    """``panel serve --num-procs`` forks: a store made before the fork works after it."""
    store = S.SQLiteStore(str(tmp_path / "classes.db"))
    code = store.create({"step": 0})["code"]
    ctx = multiprocessing.get_context("fork")
    done = ctx.Queue()

    def child():
        def move(c):
            c["view"]["step"] = 7
            return True

        store.update(code, move)
        done.put(os.getpid())

    p = ctx.Process(target=child)
    p.start()
    assert done.get(timeout=30) != os.getpid()
    p.join(30)
    assert p.exitcode == 0 and store.get(code)["view"]["step"] == 7


def test_close_closes_the_connection_of_every_thread(tmp_path):
    """A store's connections, the server's threads' too, are closed by close() (and not left
    for the garbage collector, which Python 3.13 warns about)."""
    store = S.SQLiteStore(str(tmp_path / "classes.db"))
    code = store.create({"step": 0})["code"]
    conns = []

    def reader():
        store.get(code)
        conns.append(store._conn())

    t = threading.Thread(target=reader)
    t.start()
    t.join(30)
    conns.append(store._conn())
    assert len(conns) == 2 and conns[0] is not conns[1]
    store.close()
    for conn in conns:
        with pytest.raises(sqlite3.ProgrammingError, match="closed"):
            conn.execute("SELECT 1")
    assert S.SQLiteStore(str(tmp_path / "classes.db")).get(code)["view"] == {"step": 0}


# ----------------------------------------------------- the SQLite file
def test_the_default_store_is_a_private_sqlite_file(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    old = os.umask(0)  # private whatever the umask
    try:
        store = S.open_store(environ={})  # no VIZMM_CLASS_STORE, VIZMM_CLASS_DIR, XDG_RUNTIME_DIR
        cls = store.create({"source": "fig5-8"})
        code, key = cls["code"], cls["key"]

        def sit(c):
            c["seats"]["s1"] = {"seen": time.time(), "page": "p"}
            c["answers"]["s1"] = [["M", 0, 0]]
            return True

        store.update(code, sit)
    finally:
        os.umask(old)
    folder = tmp_path / f"vizmm-{os.geteuid()}"
    assert isinstance(store, S.SQLiteStore) and store.path == str(folder / "classes.db")
    assert stat.S_IMODE(os.stat(folder).st_mode) == 0o700
    names = sorted(os.listdir(folder))
    assert names == ["classes.db", "classes.db-shm", "classes.db-wal"]
    for name in names:
        assert stat.S_IMODE(os.stat(folder / name).st_mode) == 0o600, name
    # the key is in no byte the store wrote; its hash is
    raw = b"".join((folder / name).read_bytes() for name in names)
    digest = hashlib.sha256(key.encode()).hexdigest()
    assert key.encode() not in raw and digest.encode() in raw
    with contextlib.closing(sqlite3.connect(folder / "classes.db")) as db:
        row = db.execute("SELECT key_hash, data FROM classes WHERE code = ?", (code,)).fetchone()
    assert row[0] == digest and key not in row[1]
    # a second process's store (the same defaults) sees the class
    got = S.open_store(environ={}).get(code)
    assert got["answers"] == {"s1": [["M", 0, 0]]} and "key" not in got


def test_where_the_sqlite_file_goes(tmp_path, monkeypatch):
    runtime = tmp_path / "run"
    runtime.mkdir(mode=0o700)
    assert S.default_folder({"XDG_RUNTIME_DIR": str(runtime)}) == str(runtime / "vizmm")
    env = {"XDG_RUNTIME_DIR": str(runtime), "VIZMM_CLASS_DIR": str(tmp_path / "mine")}
    assert S.default_folder(env) == str(tmp_path / "mine")
    assert S.open_store(environ=env).path == str(tmp_path / "mine" / "classes.db")
    given = tmp_path / "given" / "room.db"
    assert S.open_store(f"sqlite://{given}").path == str(given)
    assert S.open_store(str(given)).path == str(given)  # a bare path
    assert isinstance(S.open_store("memory"), S.MemoryStore)
    for bad in ("postgres://h/db", "sqlite://"):
        with pytest.raises(ValueError):
            S.open_store(bad)


def test_a_folder_or_file_of_others_is_refused(tmp_path):
    folder = tmp_path / "open"
    folder.mkdir()
    folder.chmod(0o777)
    with pytest.raises(PermissionError, match="other users may write"):
        S.SQLiteStore(str(folder / "classes.db"))
    mine = tmp_path / "mine"
    mine.mkdir(mode=0o700)
    (mine / "link.db").symlink_to(tmp_path / "elsewhere.db")
    with pytest.raises(PermissionError, match="not a regular file"):
        S.SQLiteStore(str(mine / "link.db"))
    loose = mine / "loose.db"
    loose.write_bytes(b"")
    loose.chmod(0o644)
    S.SQLiteStore(str(loose))
    assert stat.S_IMODE(os.stat(loose).st_mode) == 0o600  # made private
    junk = mine / "junk.db"
    junk.write_bytes(b"not a database " * 20)
    with pytest.raises(S.StoreUnavailable, match="not a database"):
        S.SQLiteStore(str(junk))
    if os.geteuid() == 0:  # root can give a folder to another user
        theirs = tmp_path / "theirs"
        theirs.mkdir(mode=0o700)
        os.chown(theirs, 65534, 65534)
        with pytest.raises(PermissionError, match="belongs to another user"):
            S.SQLiteStore(str(theirs / "classes.db"))


def test_reading_a_class_is_one_select_and_a_stamp_writes_one_row(tmp_path):
    store = S.SQLiteStore(str(tmp_path / "classes.db"))
    code = store.create({"step": 0})["code"]
    for i in range(100):
        store.update(code, take_seat(f"s-{i}", "p", 500), bump=False)
    statements = []
    store._conn().set_trace_callback(statements.append)
    cls = store.get(code)
    assert len(cls["seats"]) == 100
    assert [s.split()[0] for s in statements] == ["SELECT"]
    statements.clear()
    store.update(code, stamp("s-7", "p"), bump=False)
    words = [" ".join(s.split()[:3]) for s in statements]
    assert words == ["BEGIN IMMEDIATE", "SELECT key_hash, version,", "INSERT OR REPLACE", "COMMIT"]
    assert store.get(code)["seats"]["s-7"]["seen"] > cls["seats"]["s-7"]["seen"]
    store._conn().set_trace_callback(None)


# ------------------------------------------------ eviction, both stores
def make(spec):
    return S.open_store(spec)


def teach(store, code, when=None):
    def change(c):
        c["instructor_seen"] = time.time() if when is None else when
        return True

    store.update(code, change, bump=False)


def test_new_classes_never_remove_a_class_being_taught(spec, monkeypatch):
    monkeypatch.setattr(S, "MAX_CLASSES", 4)
    store = make(spec)
    code = store.create({"step": 0})["code"]
    teach(store, code)
    for _ in range(12):  # plain GETs of ?class=new: classes no page loaded
        store.create({"step": 0})
    assert store.get(code)["code"] == code
    taught = [store.create({"step": 0})["code"] for _ in range(3)]
    for c in taught:
        teach(store, c)
    with pytest.raises(KeyError, match="classes in session"):
        store.create({"step": 0})
    for c in [code, *taught]:
        assert store.get(c)["code"] == c
    # an instructor away for a minute: that class may make room
    teach(store, taught[0], time.time() - S.INSTRUCTOR_TIMEOUT_S - 1)
    store.create({"step": 0})
    with pytest.raises(KeyError, match=f"no class {taught[0]}"):
        store.get(taught[0])


@pytest.mark.slow  # waits out the time away
def test_a_class_ends_when_its_instructor_has_been_away(spec, monkeypatch):
    store = make(spec)
    if isinstance(store, S.RedisStore):  # a new class's key expires two hours on
        ttl = store._r.ttl(S.REDIS_PREFIX + store.create({"step": 0})["code"])
        assert S.CLASS_IDLE_S - 60 < ttl <= S.CLASS_IDLE_S + 1
    monkeypatch.setattr(S, "CLASS_IDLE_S", 1.5)  # two hours, made 1.5 s
    never = store.create({"step": 0})["code"]  # no page loaded it
    left = store.create({"step": 0})["code"]
    teach(store, left)  # taught once, then its page closed
    kept = store.create({"step": 0})["code"]
    until = time.time() + 2.0
    while time.time() < until:  # its page live: stamped every 10 s (here 0.25 s)
        teach(store, kept)
        time.sleep(0.25)
    for code in (never, left):
        with pytest.raises(KeyError, match=f"no class {code}"):
            store.get(code)
        with pytest.raises(KeyError, match=f"no class {code}"):
            store.update(code, lambda c: True)
    assert store.get(kept)["code"] == kept
    store.create({"step": 0})  # removes what ended
    if isinstance(store, S.SQLiteStore):
        with contextlib.closing(sqlite3.connect(store.path)) as db:
            rows = db.execute("SELECT code FROM classes").fetchall()
        assert {never, left}.isdisjoint(r[0] for r in rows) and (kept,) in rows
    else:  # Redis expired them itself
        assert store._r.exists(S.REDIS_PREFIX + never, S.REDIS_PREFIX + left) == 0
        assert 0 < store._r.ttl(S.REDIS_PREFIX + kept) <= 3
        assert {never, left}.isdisjoint(store._r.zrange(S.REDIS_INDEX, 0, -1))


def test_a_missing_redis_package_is_said(monkeypatch):
    monkeypatch.setitem(sys.modules, "redis", None)
    with pytest.raises(ImportError, match=r"vizmm\[class-redis\]"):
        S.open_store("redis://127.0.0.1:1/0")


def test_an_unreachable_redis_is_said_without_its_password():
    pytest.importorskip("redis")
    with pytest.raises(S.StoreUnavailable) as err:
        S.open_store("redis://user:secret@127.0.0.1:1/0")
    assert "secret" not in str(err.value) and "127.0.0.1:1" in str(err.value)
