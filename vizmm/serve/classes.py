"""The class store: where the classes of class mode live, shared by every server process.

A class (``/dashboard?class=new``) is a plain JSON-able dict made by
:func:`new_class`: its code, the SHA-256 of its instructor's key (never the
key), a ``version`` that pages follow, the view the instructor shows, the
question asked and its answers, the seats of the students' live pages and
the results of the questions revealed. A :class:`ClassStore` keeps classes
by code: :meth:`~ClassStore.create`, :meth:`~ClassStore.get` and
:meth:`~ClassStore.update` (``change(cls)`` applied atomically).

Which store a process uses is :func:`store`, chosen by
``VIZMM_CLASS_STORE`` (:func:`open_store`):

* unset: :class:`SQLiteStore`, one SQLite file (WAL mode) shared by every
  process of the host with no setup: ``classes.db`` in ``VIZMM_CLASS_DIR``
  where that is set, else in a private folder of the server's user
  (:func:`default_folder`: ``$XDG_RUNTIME_DIR/vizmm``, else
  ``<temp>/vizmm-<uid>``). ``vizmm serve --num-procs N`` shares its classes
  between its N processes so.
* ``sqlite:///path/to/file.db`` or a bare path: that SQLite file.
* ``redis://host:port/db`` (also ``rediss://``, ``unix:///path.sock?db=0``):
  :class:`RedisStore`, for servers on several hosts (the ``redis`` package:
  ``pip install 'vizmm[class-redis]'``).
* ``memory``: :class:`MemoryStore`, this process only (tests).

What persists: a class is kept, across server restarts too, until its
instructor's page has not been live for :data:`CLASS_IDLE_S` (two hours; a
class whose page never loaded counts from its creation). Then it ends in
every store: :meth:`~ClassStore.get` no longer finds it (Redis expires its
key; SQLite and memory remove it at the next :meth:`~ClassStore.create`).
A store holds at most :data:`MAX_CLASSES` classes; a new one makes room
only by removing a class whose instructor's page has not been live for
:data:`INSTRUCTOR_TIMEOUT_S` (:func:`classes_to_remove`), never a class
being taught. A server that starts again therefore needs no clean-up: the
classes of its last run are taken up again by their instructors' pages
(the ``teach=`` URL) or go by themselves.
"""

from __future__ import annotations

import abc
import contextlib
import copy
import hashlib
import hmac
import json
import logging
import math
import os
import random
import secrets
import sqlite3
import stat
import tempfile
import threading
import time
import weakref
from collections.abc import Callable, Iterator, Mapping
from urllib.parse import urlsplit, urlunsplit

__all__ = [
    "CLASS_IDLE_S",
    "INSTRUCTOR_TIMEOUT_S",
    "MAX_CLASSES",
    "STORE_ENV",
    "DIR_ENV",
    "ClassStore",
    "MemoryStore",
    "SQLiteStore",
    "RedisStore",
    "StoreUnavailable",
    "store",
    "open_store",
    "default_folder",
    "new_code",
    "new_class",
    "key_hash",
    "key_matches",
    "classes_to_remove",
]

log = logging.getLogger(__name__)

CODE_ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"  # no 0/O, 1/I
CODE_LENGTH = 6
MAX_CLASSES = 64  # per store; the oldest class without a live instructor goes first
INSTRUCTOR_TIMEOUT_S = 60.0  # a class whose instructor's page was not live for this long may go
CLASS_IDLE_S = 2 * 3600.0  # a class whose instructor's page was not live for this long ends
STORE_ENV = "VIZMM_CLASS_STORE"
DIR_ENV = "VIZMM_CLASS_DIR"
DB_NAME = "classes.db"
BUSY_TIMEOUT_S = 10.0  # how long an SQLite change waits for another process's change
REDIS_PREFIX = "vizmm:class:"  # + code: the class, JSON
REDIS_INDEX = "vizmm:classes"  # sorted set of the codes (score: created)
REDIS_TRIES = 200  # optimistic transactions retried on a conflict before giving up


class StoreUnavailable(OSError):
    """The class store could not be reached, or stayed busy too long (try again)."""


# ---------------------------------------------------------------- classes
def new_code() -> str:
    """A random class code (6 characters of :data:`CODE_ALPHABET`)."""
    return "".join(secrets.choice(CODE_ALPHABET) for _ in range(CODE_LENGTH))


def key_hash(key: str) -> str:
    """The SHA-256 (hex) of an instructor's key: what the store keeps instead of the key.

    Parameters
    ----------
    key : str
        A key as :func:`new_class` makes it, or as a URL gave it.

    Returns
    -------
    str
        64 hex digits.
    """
    # The key is 96 random bits (secrets.token_urlsafe(12)), not a password a
    # person chose: nobody can try 2**96 keys against a hash, fast or slow, so
    # one plain SHA-256 is enough. A salt or a slow KDF (scrypt, PBKDF2) helps
    # guessable secrets only. What the hash buys: whoever reads the store (the
    # database file, the Redis keys) cannot become the instructor.
    return hashlib.sha256(str(key).encode("utf-8")).hexdigest()


def key_matches(cls: dict, key: str) -> bool:
    """Whether ``key`` is the instructor's key of class ``cls`` (compared in constant time).

    Parameters
    ----------
    cls : dict
        A class of the store (it holds ``key_hash``).
    key : str
        The key offered (the ``teach`` URL parameter); empty never matches.

    Returns
    -------
    bool
    """
    stored = cls.get("key_hash")
    if not key or not isinstance(stored, str):
        return False
    return hmac.compare_digest(key_hash(key), stored)


def clean_code(code: str) -> str:
    """``code`` upper-cased, checked to be a class code.

    Parameters
    ----------
    code : str
        What a person typed or a URL held (any case).

    Raises
    ------
    KeyError
        For anything but :data:`CODE_LENGTH` characters of :data:`CODE_ALPHABET`.
    """
    code = (code or "").strip().upper()
    if len(code) != CODE_LENGTH or any(c not in CODE_ALPHABET for c in code):
        raise KeyError(
            f"{code[:12]!r} is not a class code (codes are {CODE_LENGTH} letters and digits)"
        )
    return code


def new_class(view: dict, now: float | None = None) -> tuple[dict, str]:
    """A new class showing ``view``, and its instructor's key (the class keeps the key's hash).

    Parameters
    ----------
    view : dict
        What the instructor's page shows (``source``, ``by``, ``bx``, ...).
    now : float, optional
        Its ``created`` time (``time.time()`` by default).

    Returns
    -------
    cls : dict
        The class.
    key : str
        The instructor's key, in clear.
    """
    key = secrets.token_urlsafe(12)
    cls = {
        "code": new_code(),
        "key_hash": key_hash(key),
        "created": time.time() if now is None else now,
        "version": 0,
        "view": dict(view),
        "question": None,  # {"source", "block", "index", "count"} of quiz(trace, block)
        "revealed": False,
        "answers": {},  # seat -> sorted picks (lists); kept when the seat leaves
        "seats": {},  # seat -> {"seen": time.time() of its last stamp, "page": its page}
        "instructor_seen": 0.0,  # time.time() the instructor's page was last live (0: never)
        "results": [],  # one row per revealed question (CSV)
    }
    return cls, key


def _number(value) -> float:
    return float(value) if isinstance(value, (int, float)) else 0.0


def last_live(cls: dict) -> float:
    """When the instructor's page of ``cls`` was last live (its creation, if never)."""
    return max(_number(cls.get("created")), _number(cls.get("instructor_seen")))


def expired(cls: dict, now: float) -> bool:
    """Whether ``cls`` has ended: its instructor away for :data:`CLASS_IDLE_S` or more.

    Parameters
    ----------
    cls : dict
        A class of the store.
    now : float
        The time, seconds since the epoch.
    """
    return now - last_live(cls) >= CLASS_IDLE_S


def _taught(cls: dict, now: float) -> bool:
    """Whether the instructor's page of ``cls`` was live within :data:`INSTRUCTOR_TIMEOUT_S`."""
    return now - _number(cls.get("instructor_seen")) < INSTRUCTOR_TIMEOUT_S


def classes_to_remove(classes: list[dict], new: str, now: float) -> list[str]:
    """Codes of the classes to remove when class ``new`` is added to ``classes``.

    The classes that have ended (:func:`expired`), then as many more as it
    takes for at most :data:`MAX_CLASSES` to remain. Only classes whose
    instructor's page has not been live for :data:`INSTRUCTOR_TIMEOUT_S` may
    go (a class made by a request whose page never loaded, such as a plain
    GET of ``?class=new``, first), oldest first: a class being taught is
    never removed for a new one.

    Parameters
    ----------
    classes : list of dict
        Every class of the store, ``new`` included (``code``, ``created``
        and ``instructor_seen`` are read).
    new : str
        The code of the class being made.
    now : float
        ``time.time()``.

    Returns
    -------
    list of str

    Raises
    ------
    KeyError
        When the store holds :data:`MAX_CLASSES` classes in session: the new
        class ``new`` is then refused.
    """
    ended = [c["code"] for c in classes if c["code"] != new and expired(c, now)]
    live = [c for c in classes if c["code"] not in ended]
    over = len(live) - MAX_CLASSES
    if over <= 0:
        return ended
    stale = sorted(
        (c for c in live if c["code"] != new and not _taught(c, now)),
        key=lambda c: (_number(c.get("instructor_seen")) > 0, _number(c.get("created"))),
    )
    if len(stale) < over:
        raise KeyError(
            f"this server holds {MAX_CLASSES} classes in session; try again when one ends"
        )
    return ended + [c["code"] for c in stale[:over]]


def _created(cls: dict, key: str) -> dict:
    """What :meth:`ClassStore.create` returns: a copy of ``cls`` with its key in clear."""
    out = copy.deepcopy(cls)
    out["key"] = key
    return out


def _no_class(code: str, why: str) -> KeyError:
    return KeyError(f"no class {code} here ({why})")


_ENDS = f"a class ends {CLASS_IDLE_S / 3600:g} hours after its instructor's page closed"


# ----------------------------------------------------------------- stores
class ClassStore(abc.ABC):
    """Where classes live: :meth:`create`, :meth:`get` and :meth:`update` by code.

    Values are plain JSON-able dicts (:func:`new_class`); :meth:`get` returns
    a copy, :meth:`update` applies ``change(cls)`` atomically and keeps the
    class when ``change`` returns True (and then bumps ``version``, what
    pages follow, unless ``bump`` is False). A class holds the hash of its
    instructor's key (``key_hash``), never the key. A class that has ended
    (:func:`expired`) is not found.

    Raises
    ------
    KeyError
        For a malformed code or a class the store does not hold.
    StoreUnavailable
        (An ``OSError``) where the store cannot be reached or stays busy.
    """

    def create(self, view: dict) -> dict:
        """Make a class showing ``view``, removing classes as :func:`classes_to_remove` says.

        Parameters
        ----------
        view : dict
            What the instructor's page shows.

        Returns
        -------
        dict
            A copy of the class with the instructor's key in clear under
            ``key``: the only time the key is handed out (the store keeps
            its hash).

        Raises
        ------
        KeyError
            When :data:`MAX_CLASSES` classes are being taught.
        """
        return self._create(view)

    def get(self, code: str) -> dict:
        """A copy of class ``code``.

        Parameters
        ----------
        code : str
            A class code (:func:`clean_code`).

        Returns
        -------
        dict
        """
        return self._get(clean_code(code))

    def update(self, code: str, change: Callable[[dict], bool], bump: bool = True) -> dict:
        """Apply ``change(cls)`` atomically; returns the class after it.

        Parameters
        ----------
        code : str
        change : callable
            ``change(cls) -> bool``: changes ``cls`` in place, True where it
            did (False: nothing is written). It may be called more than once
            (a store that retries after a conflict hands it the class afresh),
            so what it decides must come from ``cls`` alone.
        bump : bool
            Whether a change bumps ``version`` (pages follow it). Presence
            (seats, the instructor's stamp) changes nothing pages show:
            ``bump=False``.

        Returns
        -------
        dict
        """
        return self._update(clean_code(code), change, bump)

    # Each store's own way, given a clean code (the public methods above say what).
    @abc.abstractmethod
    def _create(self, view: dict) -> dict: ...

    @abc.abstractmethod
    def _get(self, code: str) -> dict: ...

    @abc.abstractmethod
    def _update(self, code: str, change: Callable[[dict], bool], bump: bool) -> dict: ...

    @abc.abstractmethod
    def close(self) -> None:
        """Let go of what the store holds open (connections); a dropped store does too.

        The classes stay where they are (a file, a Redis server) for other
        processes; this store object is not used after it.
        """


class MemoryStore(ClassStore):
    """Classes in this process's memory: one server process only (tests, ``memory``)."""

    def __init__(self):
        self._lock = threading.RLock()
        self._classes: dict[str, dict] = {}

    def __repr__(self) -> str:
        return "MemoryStore()"

    def close(self) -> None:
        """Nothing to close: the classes go with the object (:meth:`ClassStore.close`)."""

    def _create(self, view: dict) -> dict:
        with self._lock:
            cls, key = new_class(view)
            while cls["code"] in self._classes:
                cls["code"] = new_code()
            gone = classes_to_remove([*self._classes.values(), cls], cls["code"], time.time())
            for code in gone:
                del self._classes[code]
            self._classes[cls["code"]] = cls
            return _created(cls, key)

    def _held(self, code: str) -> dict:
        cls = self._classes.get(code)
        if cls is None or expired(cls, time.time()):
            raise _no_class(code, f"{_ENDS}, or when this server stops")
        return cls

    def _get(self, code: str) -> dict:
        with self._lock:
            return copy.deepcopy(self._held(code))

    def _update(self, code: str, change: Callable[[dict], bool], bump: bool) -> dict:
        # under the lock
        with self._lock:
            cls = copy.deepcopy(self._held(code))
            if change(cls):
                if bump:
                    cls["version"] += 1
                self._classes[code] = copy.deepcopy(cls)
            return cls


# ----------------------------------------------------------------- SQLite
def private_folder(folder: str) -> str:
    """``folder`` made 0700 where it does not exist, checked to be the server user's own.

    Parameters
    ----------
    folder : str

    Returns
    -------
    str
        Its absolute path.

    Raises
    ------
    PermissionError
        Where ``folder`` belongs to another user or other users may write
        to it (they could replace the database or its journal).
    NotADirectoryError
        Where it is not a folder.
    """
    folder = os.path.abspath(folder)
    os.makedirs(folder, mode=0o700, exist_ok=True)
    st = os.stat(folder)
    if not stat.S_ISDIR(st.st_mode):
        raise NotADirectoryError(f"class store folder {folder} is not a folder")
    hint = "give the class store a folder of the server's own (vizmm makes it, 0700)"
    if st.st_uid != os.geteuid():
        raise PermissionError(f"class store folder {folder} belongs to another user: {hint}")
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise PermissionError(f"other users may write to the class store folder {folder}: {hint}")
    if st.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
        log.warning(
            "other users may list the class store folder %s; chmod 700 it, or let vizmm make it",
            folder,
        )
    return folder


def default_folder(environ: Mapping[str, str] | None = None) -> str:
    """The folder of the SQLite class store when nothing says where it is.

    ``VIZMM_CLASS_DIR`` where set; else ``$XDG_RUNTIME_DIR/vizmm`` (the
    user's runtime folder, private and emptied at logout or reboot) where
    ``XDG_RUNTIME_DIR`` is a folder; else ``vizmm-<uid>`` in the system's
    temporary folder. :class:`SQLiteStore` makes it 0700 and refuses one
    that another user owns or may write to.

    Parameters
    ----------
    environ : dict, optional
        ``os.environ`` by default.

    Returns
    -------
    str
    """
    environ = os.environ if environ is None else environ
    if environ.get(DIR_ENV):
        return environ[DIR_ENV]
    runtime = environ.get("XDG_RUNTIME_DIR", "")
    if runtime and os.path.isabs(runtime) and os.path.isdir(runtime):
        return os.path.join(runtime, "vizmm")
    return os.path.join(tempfile.gettempdir(), f"vizmm-{os.geteuid()}")


_SCHEMA = """
CREATE TABLE IF NOT EXISTS classes (
    code TEXT PRIMARY KEY,
    key_hash TEXT NOT NULL,
    version INTEGER NOT NULL,
    created REAL NOT NULL,
    instructor_seen REAL NOT NULL,
    data TEXT NOT NULL  -- JSON: view, question, revealed, answers, results
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS seats (
    code TEXT NOT NULL,
    seat TEXT NOT NULL,
    page TEXT NOT NULL,
    seen REAL NOT NULL,
    PRIMARY KEY (code, seat)
) WITHOUT ROWID;
"""
SCHEMA_VERSION = 1  # PRAGMA user_version of the file
_COLUMNS = ("code", "key_hash", "version", "created", "instructor_seen", "seats")
# One SELECT reads a class: its row and its seats (an object seat -> {seen, page}).
_SELECT = """
SELECT key_hash, version, created, instructor_seen, data,
       (SELECT json_group_object(seat, json_object('seen', seen, 'page', page))
          FROM seats WHERE seats.code = classes.code)
  FROM classes WHERE code = ?
"""
_ABANDONED: list = []  # connections inherited across a fork: never used, never closed


def _close_all(conns: list, lock: threading.Lock, pid: int) -> None:
    """Close the connections one :class:`SQLiteStore` opened in process ``pid``."""
    if os.getpid() != pid:  # a forked child: they belong to the parent
        return
    with lock:
        while conns:
            conns.pop().close()


class SQLiteStore(ClassStore):
    """Classes in one SQLite file, shared by every server process of the host.

    WAL mode (readers never wait for the writer), a busy timeout of
    :data:`BUSY_TIMEOUT_S`, one short ``BEGIN IMMEDIATE`` transaction per
    change. Two tables: ``classes`` (code, key_hash, version, created,
    instructor_seen, and the rest of the class as JSON) and ``seats`` (code,
    seat, page, seen), so that a student's page stamping its seat writes
    one row; :meth:`get` is one SELECT. Each process and thread opens its
    own connection. The folder is made 0700 and must be the server user's
    own (:func:`private_folder`); the file is made 0600 (SQLite gives its
    ``-wal`` and ``-shm`` files the same mode). The file must be on a local
    file system (WAL mode shares memory between the processes): servers on
    several hosts share a :class:`RedisStore` instead.

    Parameters
    ----------
    path : str
        The database file (made where it does not exist).

    Raises
    ------
    PermissionError
        For a folder another user owns or may write to, or a file of
        another user.
    StoreUnavailable
        Where the file is not a database SQLite can open, or one a newer
        vizmm made (``PRAGMA user_version``).
    """

    def __init__(self, path: str):
        folder = private_folder(os.path.dirname(os.path.abspath(path)))
        self.path = os.path.join(folder, os.path.basename(path))
        self._private_file()
        self._local = threading.local()
        self._lock, self._lock_pid = threading.Lock(), os.getpid()
        self._track()
        with self._errors():
            conn = self._conn()
            with self._transaction(conn):
                (version,) = conn.execute("PRAGMA user_version").fetchone()
                if version > SCHEMA_VERSION:
                    raise StoreUnavailable(
                        f"class store {self.path} was made by a newer vizmm (schema {version})"
                    )
                for statement in _SCHEMA.split(";"):
                    if statement.strip():
                        conn.execute(statement)
                conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")

    def __repr__(self) -> str:
        return f"SQLiteStore({self.path!r})"

    def _track(self) -> None:
        """Keep every connection this process opens, to close them all at :meth:`close`."""
        self._conns: list[sqlite3.Connection] = []
        self._conns_lock = threading.Lock()
        self._conns_pid = os.getpid()
        self._closer = weakref.finalize(
            self, _close_all, self._conns, self._conns_lock, self._conns_pid
        )

    def close(self) -> None:
        """Close every thread's connection to the file (:meth:`ClassStore.close`)."""
        self._local = threading.local()
        self._closer()

    def _private_file(self) -> None:
        try:
            fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        except FileExistsError:
            st = os.lstat(self.path)
            if not stat.S_ISREG(st.st_mode):
                raise PermissionError(f"class store {self.path} is not a regular file") from None
            if st.st_uid != os.geteuid():
                raise PermissionError(
                    f"class store {self.path} belongs to another user: give the server a "
                    "file of its own"
                ) from None
            if st.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
                log.warning("class store %s was readable by other users: made 0600", self.path)
                os.chmod(self.path, 0o600)
        else:
            os.fchmod(fd, 0o600)  # whatever the umask
            os.close(fd)

    def _conn(self) -> sqlite3.Connection:
        """The connection of this thread (a new one in a forked process)."""
        local = self._local
        conn = getattr(local, "conn", None)
        if conn is not None and local.pid == os.getpid():
            return conn
        if conn is not None:
            _ABANDONED.append(conn)  # SQLite: a connection must not cross a fork
        if self._conns_pid != os.getpid():  # a forked process: the parent's stay open
            _ABANDONED.extend(self._conns)
            self._track()
        # check_same_thread=False only so that close() may close every thread's
        # connection: each thread still uses only its own
        conn = sqlite3.connect(
            self.path, timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False
        )
        with self._conns_lock:
            self._conns.append(conn)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")  # WAL: no fsync per change, still atomic
        conn.execute(f"PRAGMA busy_timeout={int(BUSY_TIMEOUT_S * 1000)}")
        local.conn, local.pid = conn, os.getpid()
        return conn

    @contextlib.contextmanager
    def _errors(self) -> Iterator[None]:
        try:
            yield
        except sqlite3.Error as exc:
            raise StoreUnavailable(f"class store {self.path}: {exc}") from exc

    @contextlib.contextmanager
    def _transaction(self, conn: sqlite3.Connection) -> Iterator[None]:
        """One ``BEGIN IMMEDIATE`` transaction, one thread of this process at a time.

        The threads of a process queue on a lock of their own, woken as soon
        as it is free; only writers of other processes meet SQLite's busy
        handler, which sleeps 1 to 100 ms between its tries.
        """
        if self._lock_pid != os.getpid():  # a forked process: a lock of its own
            self._lock, self._lock_pid = threading.Lock(), os.getpid()
        with self._lock:
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")

    @staticmethod
    def _class(code: str, row) -> dict:
        """The class of one row of :data:`_SELECT`."""
        key, version, created, seen, data, seats = row
        cls = json.loads(data)
        columns = (code, key, version, created, seen, json.loads(seats) if seats else {})
        cls.update(zip(_COLUMNS, columns, strict=True))
        return cls

    def _read(self, conn: sqlite3.Connection, code: str) -> dict:
        # fetchall: the statement runs to its end, so no read transaction stays
        # open (an open one would keep this connection on an old snapshot)
        rows = conn.execute(_SELECT, (code,)).fetchall()
        if rows:
            cls = self._class(code, rows[0])
            if not expired(cls, time.time()):
                return cls
        raise _no_class(code, _ENDS)

    @staticmethod
    def _data(cls: dict) -> str:
        return json.dumps({k: v for k, v in cls.items() if k not in _COLUMNS}, sort_keys=True)

    def _create(self, view: dict) -> dict:
        cls, key = new_class(view)
        with self._errors():
            conn = self._conn()
            with self._transaction(conn):
                held = [
                    {"code": c, "created": created, "instructor_seen": seen}
                    for c, created, seen in conn.execute(
                        "SELECT code, created, instructor_seen FROM classes"
                    )
                ]
                codes = {c["code"] for c in held}
                while cls["code"] in codes:
                    cls["code"] = new_code()
                gone = [(c,) for c in classes_to_remove([*held, cls], cls["code"], time.time())]
                conn.executemany("DELETE FROM seats WHERE code = ?", gone)
                conn.executemany("DELETE FROM classes WHERE code = ?", gone)
                conn.execute(
                    "INSERT INTO classes VALUES (?, ?, ?, ?, ?, ?)",
                    (
                        cls["code"],
                        cls["key_hash"],
                        cls["version"],
                        cls["created"],
                        cls["instructor_seen"],
                        self._data(cls),
                    ),
                )
        return _created(cls, key)

    def _get(self, code: str) -> dict:
        # one SELECT
        with self._errors():
            return self._read(self._conn(), code)

    def _update(self, code: str, change: Callable[[dict], bool], bump: bool) -> dict:
        # One BEGIN IMMEDIATE transaction. Only what changed is written: the seats
        # added, changed or removed (one row each), and the class's row where
        # anything else changed.
        with self._errors():
            conn = self._conn()
            with self._transaction(conn):
                cls = self._read(conn, code)
                data, seen = self._data(cls), cls["instructor_seen"]
                seats = copy.deepcopy(cls["seats"])
                if not change(cls):
                    return cls
                if bump:
                    cls["version"] += 1
                new_data = self._data(cls)
                if bump or new_data != data or cls["instructor_seen"] != seen:
                    conn.execute(
                        "UPDATE classes SET version = ?, instructor_seen = ?, data = ? "
                        "WHERE code = ?",
                        (cls["version"], cls["instructor_seen"], new_data, code),
                    )
                now_seats = cls["seats"]
                conn.executemany(
                    "DELETE FROM seats WHERE code = ? AND seat = ?",
                    [(code, s) for s in seats if s not in now_seats],
                )
                conn.executemany(
                    "INSERT OR REPLACE INTO seats VALUES (?, ?, ?, ?)",
                    [
                        (code, s, e["page"], e["seen"])
                        for s, e in now_seats.items()
                        if seats.get(s) != e
                    ],
                )
        return cls


# ------------------------------------------------------------------ Redis
def _import_redis():
    try:
        import redis
    except ImportError as exc:
        raise ImportError(
            f"{STORE_ENV}=redis://... needs the redis package: pip install 'vizmm[class-redis]' "
            "(or pip install 'redis>=5')"
        ) from exc
    return redis


def _shown_url(url: str) -> str:
    """``url`` without its password, for messages."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    if parts.port:
        host += f":{parts.port}"
    user = f"{parts.username}:***@" if parts.username else "***@"
    return urlunsplit(parts._replace(netloc=user + host))


class RedisStore(ClassStore):
    """Classes in Redis, for servers on several hosts (``VIZMM_CLASS_STORE=redis://...``).

    One key per class (``vizmm:class:CODE``, the class as JSON), set to
    expire :data:`CLASS_IDLE_S` after its instructor's page was last live
    (every write sets the expiry again, so a class being taught stays),
    and a sorted set ``vizmm:classes`` of the codes. Each change is an
    optimistic transaction (``WATCH``, read, ``MULTI``/``EXEC``), tried
    again on a conflict: ``change`` may run more than once. The servers'
    clocks are taken to agree (NTP).

    Parameters
    ----------
    url : str
        ``redis://[[user]:password@]host[:port][/db]``, ``rediss://...`` or
        ``unix:///path/to/redis.sock?db=N``.

    Raises
    ------
    ImportError
        Without the ``redis`` package.
    StoreUnavailable
        Where the server does not answer.
    """

    def __init__(self, url: str):
        redis = _import_redis()
        self.url = _shown_url(url)
        self._exc = redis.exceptions
        self._r = redis.Redis.from_url(
            url, decode_responses=True, socket_timeout=10, socket_connect_timeout=10
        )
        with self._errors():
            self._r.ping()

    def __repr__(self) -> str:
        return f"RedisStore({self.url!r})"

    def close(self) -> None:
        """Close the connections to the Redis server (:meth:`ClassStore.close`)."""
        self._r.close()

    @contextlib.contextmanager
    def _errors(self) -> Iterator[None]:
        try:
            yield
        except self._exc.RedisError as exc:
            raise StoreUnavailable(f"class store {self.url}: {exc}") from exc

    @staticmethod
    def _key(code: str) -> str:
        return REDIS_PREFIX + code

    @staticmethod
    def _expiry(cls: dict) -> int:
        return math.ceil(last_live(cls) + CLASS_IDLE_S)

    def _load(self, code: str, raw: str | None) -> dict:
        if raw is not None:
            cls = json.loads(raw)
            if not expired(cls, time.time()):
                return cls
        raise _no_class(code, _ENDS)

    def _retry(self, tries: int) -> None:
        if tries + 1 >= REDIS_TRIES:
            raise StoreUnavailable(f"class store {self.url}: {REDIS_TRIES} conflicting changes")
        time.sleep(random.uniform(0, 0.002 * min(tries + 1, 10)))

    def _create(self, view: dict) -> dict:
        cls, key = new_class(view)
        with self._errors(), self._r.pipeline() as pipe:
            for tries in range(REDIS_TRIES):
                try:
                    pipe.watch(REDIS_INDEX)
                    codes = pipe.zrange(REDIS_INDEX, 0, -1)
                    keys = [self._key(c) for c in codes]
                    if keys:
                        pipe.watch(*keys)
                    raws = pipe.mget(keys) if keys else []
                    held = [json.loads(r) for r in raws if r is not None]
                    dead = [c for c, r in zip(codes, raws, strict=True) if r is None]
                    while cls["code"] in codes:
                        cls["code"] = new_code()
                    gone = classes_to_remove([*held, cls], cls["code"], time.time())
                    pipe.multi()
                    if dead or gone:
                        pipe.zrem(REDIS_INDEX, *dead, *gone)
                    if gone:
                        pipe.delete(*[self._key(c) for c in gone])
                    pipe.set(
                        self._key(cls["code"]), json.dumps(cls), exat=self._expiry(cls), nx=True
                    )
                    pipe.zadd(REDIS_INDEX, {cls["code"]: cls["created"]})
                    if pipe.execute()[-2]:
                        return _created(cls, key)
                    cls["code"] = new_code()  # a key without its index entry: another code
                except self._exc.WatchError:
                    self._retry(tries)
        raise StoreUnavailable(f"class store {self.url}: no free class code")

    def _get(self, code: str) -> dict:
        # one GET
        with self._errors():
            return self._load(code, self._r.get(self._key(code)))

    def _update(self, code: str, change: Callable[[dict], bool], bump: bool) -> dict:
        # an optimistic transaction, again on a conflict
        key = self._key(code)
        with self._errors(), self._r.pipeline() as pipe:
            for tries in range(REDIS_TRIES):
                try:
                    pipe.watch(key)
                    cls = self._load(code, pipe.get(key))
                    if not change(cls):
                        pipe.unwatch()
                        return cls
                    if bump:
                        cls["version"] += 1
                    pipe.multi()
                    pipe.set(key, json.dumps(cls), exat=self._expiry(cls))
                    pipe.execute()
                    return cls
                except self._exc.WatchError:
                    self._retry(tries)
        raise AssertionError("unreachable")  # pragma: no cover


# ------------------------------------------------------------- the store
def open_store(spec: str | None = None, environ: Mapping[str, str] | None = None) -> ClassStore:
    """The class store ``spec`` names (``VIZMM_CLASS_STORE`` by default).

    Parameters
    ----------
    spec : str, optional
        ``memory``; ``sqlite:///path/to/file.db`` or a bare path;
        ``redis://...``, ``rediss://...`` or ``unix://...``; empty: the
        SQLite file ``classes.db`` in :func:`default_folder`.
    environ : dict, optional
        Where ``VIZMM_CLASS_STORE``, ``VIZMM_CLASS_DIR`` and
        ``XDG_RUNTIME_DIR`` are read (``os.environ`` by default).

    Returns
    -------
    ClassStore

    Raises
    ------
    ValueError
        For a ``spec`` of another scheme.
    PermissionError, StoreUnavailable, ImportError
        As :class:`SQLiteStore` and :class:`RedisStore` say.
    """
    environ = os.environ if environ is None else environ
    spec = (environ.get(STORE_ENV, "") if spec is None else spec).strip()
    if spec == "memory":
        return MemoryStore()
    if spec.startswith(("redis://", "rediss://", "unix://")):
        return RedisStore(spec)
    if spec.startswith("sqlite://"):
        path = spec[len("sqlite://") :]
        if not path:
            raise ValueError(f"{STORE_ENV}={spec}: name the file (sqlite:///path/to/classes.db)")
        return SQLiteStore(path)
    if "://" in spec:
        raise ValueError(
            f"{STORE_ENV}: {spec.split('://')[0][:20]!r} is not a class store (memory, "
            "sqlite:///path/to/file.db, a path, or redis://host:port/db)"
        )
    return SQLiteStore(spec or os.path.join(default_folder(environ), DB_NAME))


_store: ClassStore | None = None
_store_lock = threading.Lock()


def store() -> ClassStore:
    """The class store of this process (:func:`open_store` once; again after a failure).

    Returns
    -------
    ClassStore
    """
    global _store
    with _store_lock:
        if _store is None:
            _store = open_store()
            log.info("class store: %r", _store)
        return _store
