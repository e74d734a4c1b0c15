"""Follow the instructor: class sessions of the dashboard.

* ``/dashboard?class=new`` makes a class; the page (the instructor's) states
  its code in ``#vizmm-status`` (``data-class``) and shows it with the
  student link, and its URL becomes ``?class=CODE&teach=KEY`` (a reload, or
  that link, is the instructor again; keep it to yourself).
* ``/dashboard?class=CODE`` is a student's page: it shows the instructor's
  trace, block and step as the instructor moves (it polls the class four
  times a second), lets the student explore alone ("Follow the instructor"
  turns off by itself) and snap back, and answers the instructor's current
  question. Its URL gets ``&seat=...``: a reload is the same seat (its answer
  is kept and counted once).
* The instructor asks the quiz's questions one by one, sees how many seats
  answered and the distribution of the answers (no names: seats are random
  keys), reveals, and downloads the results as CSV.

The questions and answers live on the server (in the class store): a
student's page gets the prompt, then at the reveal the answer. Nothing is
written to disk: a class ends with the server process. ``panel serve
--num-procs N`` runs N processes that do not share memory; set
``VIZMM_CLASS_DIR`` to a directory (a tmpfs such as ``/dev/shm/vizmm``) and
the processes share classes through small JSON files there, locked with
``fcntl`` (each process removes the classes it made when it stops).
Without it, every class lives in the process that made it.
"""

from __future__ import annotations

import abc
import atexit
import contextlib
import copy
import csv
import fcntl
import io
import json
import os
import secrets
import threading
import time
from collections.abc import Callable

import panel as pn

from vizmm.catalogue import CATALOGUE
from vizmm.render.text import render_text
from vizmm.replay.questions import Question, answer_label, quiz

__all__ = [
    "ClassStore",
    "MemoryStore",
    "FileStore",
    "store",
    "Classroom",
    "class_session",
    "new_code",
]

CODE_ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"  # no 0/O, 1/I
CODE_LENGTH = 6
MAX_CLASSES = 64  # per store; the oldest class goes first
MAX_SEATS = 500  # per class
SEAT_TIMEOUT_S = 6.0  # a seat not seen for this long is not counted as present
POLL_MS = 250  # students' pages look for the instructor's moves this often
VIEW_KEYS = ("source", "by", "bx", "granularity", "order", "step")


def new_code() -> str:
    """A random class code (6 characters of :data:`CODE_ALPHABET`)."""
    return "".join(secrets.choice(CODE_ALPHABET) for _ in range(CODE_LENGTH))


def _clean_code(code: str) -> str:
    code = (code or "").strip().upper()
    if len(code) != CODE_LENGTH or any(c not in CODE_ALPHABET for c in code):
        raise KeyError(
            f"{code[:12]!r} is not a class code (codes are {CODE_LENGTH} letters and digits)"
        )
    return code


def _new_class(view: dict) -> dict:
    return {
        "code": new_code(),
        "key": secrets.token_urlsafe(12),
        "created": time.time(),
        "version": 0,
        "view": dict(view),
        "question": None,  # {"source", "block", "index", "count"} of quiz(trace, block)
        "revealed": False,
        "answers": {},  # seat -> sorted picks (lists)
        "seats": {},  # seat -> last seen (time.time())
        "results": [],  # one row per revealed question (CSV)
    }


class ClassStore(abc.ABC):
    """Where classes live: :meth:`create`, :meth:`get` and :meth:`update` by code.

    Values are plain JSON-able dicts (see :func:`_new_class`); :meth:`get`
    returns a copy, :meth:`update` applies ``change(cls)`` under a lock and
    bumps ``version`` when ``change`` returns True.

    Raises
    ------
    KeyError
        For a malformed code or a class this server does not hold.
    """

    @abc.abstractmethod
    def create(self, view: dict) -> dict:
        """Make a class showing ``view``; returns it (with its code and key)."""

    @abc.abstractmethod
    def get(self, code: str) -> dict:
        """A copy of class ``code``."""

    @abc.abstractmethod
    def update(self, code: str, change: Callable[[dict], bool]) -> dict:
        """Apply ``change(cls)`` under the lock; returns the class after it."""


class MemoryStore(ClassStore):
    """Classes in this process's memory (one ``panel serve`` process)."""

    def __init__(self):
        self._lock = threading.RLock()
        self._classes: dict[str, dict] = {}

    def create(self, view: dict) -> dict:
        """Make a class showing ``view``; returns it (with its code and key)."""
        with self._lock:
            cls = _new_class(view)
            while cls["code"] in self._classes:
                cls["code"] = new_code()
            self._classes[cls["code"]] = cls
            while len(self._classes) > MAX_CLASSES:
                del self._classes[next(iter(self._classes))]
            return copy.deepcopy(cls)

    def get(self, code: str) -> dict:
        """A copy of class ``code``."""
        code = _clean_code(code)
        with self._lock:
            if code not in self._classes:
                raise KeyError(f"no class {code} on this server (classes end when it stops)")
            return copy.deepcopy(self._classes[code])

    def update(self, code: str, change: Callable[[dict], bool]) -> dict:
        """Apply ``change(cls)`` under the lock; returns the class after it."""
        code = _clean_code(code)
        with self._lock:
            if code not in self._classes:
                raise KeyError(f"no class {code} on this server (classes end when it stops)")
            cls = self._classes[code]
            if change(cls):
                cls["version"] += 1
            return copy.deepcopy(cls)


class FileStore(ClassStore):
    """Classes shared by the processes of ``panel serve --num-procs N`` through a directory.

    One JSON file per class, replaced atomically, each change under an
    exclusive ``fcntl`` lock of the directory's lock file. A process removes
    the files of the classes it made when it exits.
    """

    def __init__(self, folder: str):
        self.folder = folder
        os.makedirs(folder, exist_ok=True)
        self._lockfile = os.path.join(folder, ".lock")
        self._mine: set[str] = set()
        atexit.register(self._cleanup)

    @contextlib.contextmanager
    def _locked(self):
        with open(self._lockfile, "a+") as f:
            fcntl.flock(f, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(f, fcntl.LOCK_UN)

    def _path(self, code: str) -> str:
        return os.path.join(self.folder, f"class-{code}.json")

    def _read(self, code: str) -> dict:
        try:
            with open(self._path(code), encoding="utf-8") as f:
                return json.load(f)
        except FileNotFoundError:
            raise KeyError(f"no class {code} on this server (classes end when it stops)") from None

    def _write(self, cls: dict) -> None:
        path = self._path(cls["code"])
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(cls, f)
        os.replace(tmp, path)

    def create(self, view: dict) -> dict:
        """Make a class showing ``view``; returns it (with its code and key)."""
        with self._locked():
            cls = _new_class(view)
            while os.path.exists(self._path(cls["code"])):
                cls["code"] = new_code()
            self._write(cls)
            self._mine.add(cls["code"])
            names = sorted(
                (os.path.getmtime(os.path.join(self.folder, n)), n)
                for n in os.listdir(self.folder)
                if n.startswith("class-") and n.endswith(".json")
            )
            for _, n in names[: max(0, len(names) - MAX_CLASSES)]:
                with contextlib.suppress(OSError):
                    os.remove(os.path.join(self.folder, n))
            return cls

    def get(self, code: str) -> dict:
        """A copy of class ``code``."""
        return self._read(_clean_code(code))

    def update(self, code: str, change: Callable[[dict], bool]) -> dict:
        """Apply ``change(cls)`` under the lock; returns the class after it."""
        code = _clean_code(code)
        with self._locked():
            cls = self._read(code)
            if change(cls):
                cls["version"] += 1
                self._write(cls)
            return cls

    def _cleanup(self) -> None:
        for code in self._mine:
            with contextlib.suppress(OSError):
                os.remove(self._path(code))


_store: ClassStore | None = None
_store_lock = threading.Lock()

# Pages of this process in each class: code -> {id: (document, callback)}. A change
# made here is pushed to them at once (next tick of each page's document); the
# timer still catches changes made by other processes (FileStore).
_pages: dict[str, dict[int, tuple]] = {}
_pages_lock = threading.Lock()


def _listen(code: str, key: int, doc, callback: Callable[[], None]) -> None:
    with _pages_lock:
        _pages.setdefault(code, {})[key] = (doc, callback)


def _unlisten(code: str, key: int) -> None:
    with _pages_lock:
        _pages.get(code, {}).pop(key, None)


def _notify(code: str) -> None:
    """Run every page's ``callback`` of class ``code`` in its own document, soon."""
    from panel.io.state import set_curdoc

    with _pages_lock:
        pages = list(_pages.get(code, {}).values())

    def run(doc, callback):
        with set_curdoc(doc):
            callback()

    for doc, callback in pages:
        with contextlib.suppress(Exception):  # a closing page
            doc.add_next_tick_callback(lambda doc=doc, cb=callback: run(doc, cb))


def store() -> ClassStore:
    """The process's class store: a :class:`FileStore` in ``VIZMM_CLASS_DIR``, else memory."""
    global _store
    with _store_lock:
        if _store is None:
            folder = os.environ.get("VIZMM_CLASS_DIR")
            _store = FileStore(folder) if folder else MemoryStore()
        return _store


def class_question(q: dict | None) -> Question | None:
    """The :class:`Question` a class's ``question`` entry names (made again on this server)."""
    if not q:
        return None
    trace = CATALOGUE.get(q["source"])
    return quiz(trace, tuple(q["block"]))[q["index"]]


def _label(question: Question, picks) -> str:
    return answer_label(question, [tuple(p) for p in picks])


def distribution(cls: dict, question: Question) -> list[tuple[str, int, bool]]:
    """Answers of a class to ``question``: ``(answer in words, seats, correct)``, most first."""
    counts: dict[str, list] = {}
    for picks in cls["answers"].values():
        label = _label(question, picks)
        entry = counts.setdefault(label, [0, question.check([tuple(p) for p in picks])])
        entry[0] += 1
    return sorted(((k, v[0], v[1]) for k, v in counts.items()), key=lambda t: (-t[1], t[0]))


def results_csv(cls: dict) -> str:
    """The class's results, one row per answer given to each revealed question (no names)."""
    out = io.StringIO()
    w = csv.writer(out)
    w.writerow(
        ["question", "kind", "trace", "block", "phase", "prompt", "answer", "correct", "seats"]
    )
    for row in cls["results"]:
        question = [
            row["number"],
            row["kind"],
            row["source"],
            f"({row['block'][0]},{row['block'][1]})",
            row["phase"],
            row["prompt"],
        ]
        answers = [(label, "yes" if ok else "no", n) for label, n, ok in row["distribution"]]
        for answer in answers or [("(no answer)", "", 0)]:
            w.writerow(question + list(answer))
    return out.getvalue()


class Classroom:
    """One page's part in a class: the instructor's controls or a student's following.

    Parameters
    ----------
    dashboard : apps.dashboard.Dashboard
        Its ``questions`` (:class:`apps.quiz.QuestionMode`) asks and reveals.
    code : str
        ``"new"`` to make a class (instructor), or a class code.
    key : str, optional
        The instructor's key of class ``code`` (the ``teach`` URL parameter).
    seat : str, optional
        A student's seat (the ``seat`` URL parameter), to rejoin after a reload.
    served : bool
        Whether timers and the URL are available (a Bokeh server session).
    """

    def __init__(self, dashboard, code: str, key: str = "", seat: str = "", served: bool = True):
        self.dash, self.state, self.qm = dashboard, dashboard.state, dashboard.questions
        self.served = served
        self.store = store()
        self.error = ""
        self.role = "student"
        self.code = ""
        self.key = ""
        self.seat = seat if seat and len(seat) <= 40 else secrets.token_urlsafe(6)
        self.following = True
        self._syncing = False
        self._version = -1
        self._asked: tuple | None = None  # the class question this page shows
        self._revealed = False
        self._cb = None
        self._last_seen = 0.0
        self._build()
        try:
            if code.lower() == "new":
                cls = self.store.create(self._view())
                self.role, self.code, self.key = "instructor", cls["code"], cls["key"]
            else:
                cls = self.store.get(code)
                self.code = cls["code"]
                if key and secrets.compare_digest(str(key), cls["key"]):
                    self.role, self.key = "instructor", key
        except KeyError as exc:
            self.error = str(exc).strip("'\"")
            self.state.show(f"Class: {self.error}", "warning")
            self.panel.visible = False
            return
        dashboard.status_extras.append(self.status)
        if self.role == "instructor":
            self.qm.observer = True
            self.state.param.watch(self._instructor_moved, list(VIEW_KEYS))
            self._publish_view()
        else:
            self.qm.on_submit = self._send
            self.state.param.watch(self._student_moved, list(VIEW_KEYS))
            self._seen()
        self._fill()
        self.poll()
        if served:
            self._cb = pn.state.add_periodic_callback(
                self.poll, period=POLL_MS if self.role == "student" else 500
            )
            with contextlib.suppress(Exception):
                pn.state.on_session_destroyed(lambda ctx: self._stop())
            if pn.state.curdoc is not None:
                _listen(self.code, id(self), pn.state.curdoc, self.poll)
            pn.state.onload(self._set_url)  # the page's URL is reachable once it has loaded

    # ------------------------------------------------------------ widgets
    def _build(self) -> None:
        self.title = pn.pane.HTML("", sizing_mode="stretch_width", margin=(4, 10))
        self.follow = pn.widgets.Toggle(label="Follow the instructor", value=True, width=190)
        self.follow.param.watch(self._on_follow, "value")
        self.ask_button = pn.widgets.Button(label="Ask the class", color="primary", width=150)
        self.ask_button.on_click(lambda e: self.ask_next())
        self.reveal_button = pn.widgets.Button(label="Reveal", color="success", width=110)
        self.reveal_button.on_click(lambda e: self.reveal())
        self.counts = pn.pane.HTML("", sizing_mode="stretch_width", margin=(0, 10))
        self.download = pn.widgets.FileDownload(
            callback=self._csv,
            filename="vizmm-class.csv",
            label="Results (CSV)",
            width=150,
            embed=False,
        )
        self.panel = pn.Column(
            self.title,
            pn.Row(self.follow, self.ask_button, self.reveal_button, self.download),
            self.counts,
            sizing_mode="stretch_width",
            styles={"border-left": "4px solid #0969da", "background": "#f6f8fa"},
        )

    def _fill(self) -> None:
        student = self.role == "student"
        self.follow.visible = student
        self.ask_button.visible = self.reveal_button.visible = not student
        self.download.visible = not student
        if student:
            self.title.object = (
                f'<div style="font-size:1.1em">Class <b>{self.code}</b> · you follow the '
                "instructor's step; explore on your own and switch “Follow the instructor” "
                "back on to snap back.</div>"
            )
        else:
            self.title.object = (
                f'<div style="font-size:1.25em">Class code <b id="vizmm-class-code" '
                f'style="font-size:1.4em;letter-spacing:0.1em">{self.code}</b> · students '
                f"open <code>/dashboard?class={self.code}</code></div>"
            )

    # --------------------------------------------------------------- URL
    def _set_url(self) -> None:
        loc = pn.state.location
        if loc is None:
            return
        q = {"class": self.code}
        if self.role == "instructor":
            q["teach"] = self.key
        else:
            q["seat"] = self.seat
        with contextlib.suppress(Exception):
            loc.update_query(**q)

    # -------------------------------------------------------- instructor
    def _view(self) -> dict:
        s = self.state
        return {k: getattr(s, k) for k in VIEW_KEYS}

    def _publish_view(self) -> None:
        view = self._view()

        def change(cls):
            if cls["view"] == view:
                return False
            cls["view"] = view
            return True

        if self.store.update(self.code, change)["version"] != self._version:
            _notify(self.code)

    def _instructor_moved(self, *events) -> None:
        self._publish_view()

    def ask_next(self) -> None:
        """Ask the class the next question of the quiz on the instructor's block."""
        s = self.state
        if s.trace is None:
            return
        cls = self.store.get(self.code)
        q = cls["question"]
        block = [s.by, s.bx]
        if q and q["source"] == s.source and q["block"] == block:
            index = q["index"] + 1
        else:
            index = 0
        try:
            count = len(quiz(s.trace, tuple(block)))
        except (ValueError, KeyError) as exc:
            s.show(f"No quiz for this trace: {exc}", "info")
            return
        if index >= count:
            s.show("That was the last question of this block's quiz.", "info")
            return
        entry = {"source": s.source, "block": block, "index": index, "count": count}

        def change(cls):
            cls["question"], cls["revealed"], cls["answers"] = entry, False, {}
            return True

        self.store.update(self.code, change)
        _notify(self.code)
        self.poll()
        self._publish_view()

    def reveal(self) -> None:
        """Reveal the current question to every page of the class, and keep its results."""
        cls = self.store.get(self.code)
        question = class_question(cls["question"])
        if question is None or cls["revealed"]:
            return
        dist = distribution(cls, question)

        def change(cls):
            if cls["revealed"]:
                return False
            cls["revealed"] = True
            cls["results"].append(
                {
                    "number": cls["question"]["index"] + 1,
                    "kind": question.kind,
                    "source": cls["question"]["source"],
                    "block": cls["question"]["block"],
                    "phase": question.phase,
                    "prompt": question.prompt,
                    "distribution": dist,
                }
            )
            return True

        self.store.update(self.code, change)
        _notify(self.code)
        self.poll()
        self._publish_view()

    def _csv(self):
        try:
            return io.BytesIO(results_csv(self.store.get(self.code)).encode("utf-8"))
        except KeyError:
            return None

    # ----------------------------------------------------------- student
    def _seen(self) -> None:
        seat, now = self.seat, time.time()
        self._last_seen = now

        def change(cls):
            if seat not in cls["seats"] and len(cls["seats"]) >= MAX_SEATS:
                return False
            cls["seats"][seat] = now
            return False  # presence is not a change the pages must follow

        self.store.update(self.code, change)

    def _send(self, question: Question, picks: set) -> None:
        seat, entry = self.seat, sorted([list(p) for p in picks])

        def change(cls):
            if cls["revealed"] or seat not in cls["seats"]:
                return False
            cls["answers"][seat] = entry
            return True

        self.store.update(self.code, change)
        _notify(self.code)

    def _student_moved(self, *events) -> None:
        if not self._syncing and self.following and self.qm.question is None:
            self.following = False
            self.follow.value = False

    def _on_follow(self, event) -> None:
        self.following = bool(event.new)
        if self.following:
            self._version = -1
            self.poll()
        self.dash.refresh_status()

    def _stop(self) -> None:
        _unlisten(self.code, id(self))
        if self._cb is not None:
            with contextlib.suppress(Exception):
                self._cb.stop()
            self._cb = None

    # -------------------------------------------------------------- sync
    def poll(self) -> None:
        """Bring this page up to date with the class (timer callback)."""
        try:
            if self.role == "student" and time.time() - self._last_seen > SEAT_TIMEOUT_S / 3:
                self._seen()
            cls = self.store.get(self.code)
        except KeyError:
            self._stop()
            self.state.show(f"Class {self.code} has ended.", "warning")
            return
        if self.role == "instructor":
            self._show_counts(cls)
        if cls["version"] == self._version:
            return
        self._version = cls["version"]
        self._sync_question(cls)
        if self.role == "student" and self.following and self.qm.question is None:
            self._apply_view(cls["view"])
        elif self.role == "student" and self.qm.revealed and self.following:
            self._apply_view(cls["view"])
        self.dash.refresh_status()

    def _apply_view(self, view: dict) -> None:
        s = self.state
        values = {k: v for k, v in view.items() if getattr(s, k) != v}
        if not values:
            return
        self._syncing = True
        try:
            if "source" in values:
                s.param.update(source=values.pop("source"))
            if values:
                s.param.update(**values)
        finally:
            self._syncing = False

    def _sync_question(self, cls: dict) -> None:
        q = cls["question"]
        ident = None if not q else (q["source"], tuple(q["block"]), q["index"])
        if ident is None:
            if self.qm.question is not None and self._asked is not None:
                self.qm.close()
            self._asked, self._revealed = None, False
            return
        if ident != self._asked:
            question = class_question(q)
            if self.state.source != q["source"]:
                self._syncing = True
                try:
                    self.state.param.update(source=q["source"])
                finally:
                    self._syncing = False
            self.qm.quiz, self.qm.index = [], -1
            self.qm.number = f"Question {q['index'] + 1} of {q['count']}"
            self.qm.ask(question)
            self._asked, self._revealed = ident, False
            if self.role == "student":
                mine = cls["answers"].get(self.seat)
                if mine is not None:  # a reload: the seat's answer is kept
                    self.qm.picks = {tuple(p) for p in mine}
                    self.qm.submitted = True
                    self.qm._show()
        if cls["revealed"] and not self._revealed:
            self._revealed = True
            self.qm.reveal()

    def _show_counts(self, cls: dict) -> None:
        now = time.time()
        present = sum(1 for t in cls["seats"].values() if now - t < SEAT_TIMEOUT_S)
        question = class_question(cls["question"])
        if question is None:
            text = f"<b>{present}</b> student(s) here · no question asked yet"
            answered = 0
            dist = []
        else:
            answered = len(cls["answers"])
            dist = distribution(cls, question)
            rows = "".join(
                f"<tr><td>{_esc(render_text(label, 'unicode'))}</td>"
                f"<td style='text-align:right'><b>{n}</b></td>"
                f"<td>{('✓' if ok else '✗') if cls['revealed'] else ''}</td></tr>"
                for label, n, ok in dist
            )
            state = "revealed" if cls["revealed"] else "open"
            text = (
                f"<b>{present}</b> student(s) here · question {cls['question']['index'] + 1} "
                f"of {cls['question']['count']} ({state}) · <b id='vizmm-answered'>{answered}"
                f"</b> answered<table style='margin-top:4px'>{rows}</table>"
            )
        if self.counts.object != text:
            self.counts.object = text
        self._counts = {"students": present, "answered": answered, "answers": dist}
        self.reveal_button.disabled = question is None or cls["revealed"]
        self.dash.refresh_status()

    # ------------------------------------------------------------ status
    def status(self) -> dict:
        """``data-*`` of ``#vizmm-status`` for a class page.

        ``class``, ``role`` ('instructor' or 'student'), ``following``; the
        instructor's page also ``students`` (seats present), ``answered`` and
        ``answers`` (the distribution: ``[answer in words, seats]``, no names).
        """
        out = {"class": self.code, "role": self.role, "following": self.following}
        if self.role == "instructor":
            counts = getattr(self, "_counts", {"students": 0, "answered": 0, "answers": []})
            out.update(
                students=counts["students"],
                answered=counts["answered"],
                answers=[[a, n] for a, n, _ in counts["answers"]],
            )
        return out


def _esc(text: str) -> str:
    import html

    return html.escape(text)


def _arg(name: str) -> str:
    args = pn.state.session_args or {}
    v = args.get(name)
    if not v:
        return ""
    v = v[0]
    return v.decode("utf-8", "replace") if isinstance(v, bytes) else str(v)


def class_session(dash):
    """The dashboard's add-on: a page opened with ``?class=...`` takes its part in the class.

    Pass it in ``Dashboard(addons=[question_mode, class_session])``, after
    :func:`apps.quiz.question_mode` (a class asks the page's questions).

    Parameters
    ----------
    dash : apps.dashboard.Dashboard
        A served page with a question mode (``dash.questions``).

    Returns
    -------
    pn.Column or None
        The class's controls (``dash.classroom``), or None where the page is
        not served, has no ``?class=`` or no question mode.
    """
    code = _arg("class") if dash._served else ""
    if not code or getattr(dash, "questions", None) is None:
        return None
    dash.classroom = Classroom(dash, code[:16], _arg("teach")[:40], _arg("seat")[:40])
    return dash.classroom.panel
