"""Follow the instructor: class sessions of the dashboard.

* ``/dashboard?class=new`` makes a class; the page (the instructor's) states
  its code in ``#vizmm-status`` (``data-class``) and shows it with the
  student link, and its URL becomes ``?class=CODE&teach=KEY`` (a reload, or
  that link, is the instructor again; keep it to yourself). The key is shown
  to that page only: the class store keeps its SHA-256, never the key.
* ``/dashboard?class=CODE`` is a student's page: it shows the instructor's
  trace, block and step as the instructor moves (it polls the class four
  times a second), lets the student explore alone ("Follow the instructor"
  turns off by itself) and snap back, and answers the instructor's current
  question. Its URL gets ``&seat=...``: a reload is the same seat (its answer
  is kept and counted once).
* The instructor asks the quiz's questions one by one, sees how many seats
  are here and answered and the distribution of the answers (no names: seats
  are random keys), reveals, and downloads the results as CSV.

Seats. Only a live page holds a seat: a student's page takes its seat once
the browser has loaded it (``pn.state.onload``, the session's websocket
connected), not when its HTML is requested, so plain GETs of the URL take
none. The page keeps the seat while its session has a connection (it
checks on every poll and stamps the seat every ``SEAT_TIMEOUT_S / 3``
seconds) and gives it back when the connection goes or the session ends
(``pn.state.on_session_destroyed``); a seat not stamped for
``SEAT_TIMEOUT_S`` (a process that died) is dropped from the store by the
next page that takes or stamps a seat. A class holds at most
:func:`max_seats` seats (``MAX_SEATS``, or ``VIZMM_CLASS_MAX_SEATS``): a
page that finds it full says so ("This class is full (N students): ask your
instructor.") and does not join. A reload (the same ``seat=``) takes over
its seat. A page that closes leaves, but the answers it already sent stay
counted: the distributions and the CSV report the answers given, the
"students here" count the pages open now.

The questions and answers live on the server, in the class store
(:mod:`vizmm.serve.classes`): a student's page gets the prompt, then at the
reveal the answer. Every process of a server shares it (an SQLite file by
default, a Redis server with ``VIZMM_CLASS_STORE=redis://...``): a page may
be served by any process of ``vizmm serve --num-procs N``, and a change made
in one process reaches the pages of the others at their next poll. A
class lasts until its instructor's page has been closed for two hours
(:data:`vizmm.serve.classes.CLASS_IDLE_S`), across server restarts.
"""

from __future__ import annotations

import contextlib
import csv
import dataclasses
import io
import logging
import os
import secrets
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

import panel as pn

from vizmm.render.text import render_text
from vizmm.replay.questions import Question, answer_label, quiz
from vizmm.serve.catalogue import CATALOGUE
from vizmm.serve.classes import (
    INSTRUCTOR_TIMEOUT_S,
    ClassStore,
    StoreUnavailable,
    key_matches,
    store,
)
from vizmm.serve.listeners import CLASS_PAGES
from vizmm_apps.parts import on_press

if TYPE_CHECKING:
    from panel.io.callbacks import PeriodicCallback

__all__ = [
    "Classroom",
    "class_session",
    "max_seats",
    "distribution",
    "results_csv",
    "Attendance",
    "full_message",
]

log = logging.getLogger(__name__)
# panel serve logs Bokeh's own records at its --log-level (info by default) and
# every other logger's at warning: the class's records (a class made, a page
# live, in which server process) follow Bokeh's level.
log.setLevel(logging.getLogger("bokeh").getEffectiveLevel())

MAX_SEATS = 500  # live seats per class (VIZMM_CLASS_MAX_SEATS overrides it)
MAX_SEATS_ENV = "VIZMM_CLASS_MAX_SEATS"
SEAT_TIMEOUT_S = 6.0  # a seat not stamped for this long is not counted, and is dropped
POLL_MS = 250  # students' pages look for the instructor's moves this often
VIEW_KEYS = ("source", "by", "bx", "granularity", "order", "step")


def max_seats() -> int:
    """How many live seats a class holds: ``VIZMM_CLASS_MAX_SEATS`` if set, else ``MAX_SEATS``.

    Returns
    -------
    int
        At least 1.

    Raises
    ------
    ValueError
        Where ``VIZMM_CLASS_MAX_SEATS`` is set to anything but a whole number >= 1.
    """
    raw = os.environ.get(MAX_SEATS_ENV, "").strip()
    if not raw:
        return MAX_SEATS
    try:
        n = int(raw)
    except ValueError:
        n = 0
    if n < 1:
        raise ValueError(f"{MAX_SEATS_ENV} must be a whole number >= 1, not {raw[:20]!r}")
    return n


# Pages of this process in each class (vizmm.serve.listeners.CLASS_PAGES): a change
# made here is pushed to them at once (next tick of each page's document); the
# timer still catches changes made by other processes (the class store).
def _listen(code: str, key: int, doc, callback: Callable[[], None]) -> None:
    from panel.io.state import set_curdoc

    def run():
        with set_curdoc(doc):
            callback()

    CLASS_PAGES.listen(code, key, lambda: doc.add_next_tick_callback(run))


def _unlisten(code: str, key: int) -> None:
    CLASS_PAGES.unlisten(code, key)


def _notify(code: str) -> None:
    """Run every page's ``callback`` of class ``code`` in its own document, soon."""
    CLASS_PAGES.wake(code)


def class_question(q: dict | None) -> Question | None:
    """The :class:`Question` a class's ``question`` entry names (made again on this server).

    Parameters
    ----------
    q : dict or None
        A class's ``question`` entry: ``{'source', 'block', 'index'}`` (catalogue
        key, (by, bx), number in the block's quiz); None or empty for no question.
    """
    if not q:
        return None
    trace = CATALOGUE.get(q["source"])
    return quiz(trace, tuple(q["block"]))[q["index"]]


def _label(question: Question, picks) -> str:
    return answer_label(question, [tuple(p) for p in picks])


def distribution(cls: dict, question: Question) -> list[tuple[str, int, bool]]:
    """Answers of a class to ``question``: ``(answer in words, seats, correct)``, most first.

    Parameters
    ----------
    cls : dict
        A class as the class store holds it (``answers``: seat to picks).
    question : Question
        The question the answers are to.
    """
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


@dataclasses.dataclass(frozen=True)
class Attendance:
    """Who is at a class at one time: the students' seats and the instructor's page.

    Parameters
    ----------
    cls : dict
        A class as the class store holds it.
    now : float
        The time (seconds since the epoch); ``time.time()`` by default.
    """

    cls: dict
    now: float = dataclasses.field(default_factory=time.time)

    @property
    def present(self) -> int:
        """How many seats were stamped within ``SEAT_TIMEOUT_S`` (the students here)."""
        return len(self.cls["seats"]) - len(self._stale())

    @property
    def instructor_gone(self) -> bool:
        """Whether the instructor's page is closed.

        Closed when the page noted so as it went (``instructor_left``), or
        when a page that was live has not stamped the class for
        :data:`vizmm.serve.classes.INSTRUCTOR_TIMEOUT_S` (its server process
        ended without a word). A class whose page has not loaded yet is not.
        """
        if self.cls.get("instructor_left"):
            return True
        seen = float(self.cls.get("instructor_seen") or 0.0)
        return seen > 0 and self.now - seen >= INSTRUCTOR_TIMEOUT_S

    def drop_stale(self) -> bool:
        """Drop the seats not stamped within ``SEAT_TIMEOUT_S``; whether any went."""
        stale = self._stale()
        for s in stale:
            del self.cls["seats"][s]
        return bool(stale)

    def _stale(self) -> list[str]:
        return [s for s, e in self.cls["seats"].items() if self.now - e["seen"] >= SEAT_TIMEOUT_S]


#: What a student's page says while the instructor's page is closed.
INSTRUCTOR_GONE = (
    "The instructor's page has closed. Your answers stay counted; explore on your own, "
    "and this page follows the instructor again when their page is back."
)


def full_message(cap: int) -> str:
    """What a student's page says when its class has no seat left.

    Parameters
    ----------
    cap : int
        The class's number of seats.
    """
    return f"This class is full ({cap} students): ask your instructor."


class Classroom:
    """One page's part in a class: the instructor's controls or a student's following.

    Parameters
    ----------
    dashboard : vizmm_apps.dashboard.Dashboard
        Its ``questions`` (:class:`vizmm_apps.quiz.QuestionMode`) asks and reveals.
    code : str
        ``"new"`` to make a class (instructor), or a class code.
    key : str, optional
        The instructor's key of class ``code`` (the ``teach`` URL parameter).
    seat : str, optional
        A student's seat (the ``seat`` URL parameter), to rejoin after a reload.
    served : bool
        Whether timers and the URL are available (a Bokeh server session).
        A served student's page takes its seat once the browser has loaded
        it (``pn.state.onload``); one that is not served takes it at once.

    Attributes
    ----------
    seat_state : str
        A student's seat: ``"joining"`` (the page is not live yet),
        ``"held"``, ``"away"`` (its connection went; taken again if it comes
        back) or ``"full"`` (the class had no room: the page did not join).
    """

    def __init__(self, dashboard, code: str, key: str = "", seat: str = "", served: bool = True):
        self.dash, self.state, self.qm = dashboard, dashboard.state, dashboard.questions
        self.served = served
        self.store: ClassStore | None = None
        self.error = ""
        self.role = "student"
        self.code = ""
        self.key = ""  # the instructor's page only: its key, for its own URL
        self.seat = seat if seat and len(seat) <= 40 else secrets.token_urlsafe(6)
        self.seat_state = "joining"
        self.cap = MAX_SEATS
        # this page's claim on its seat: a reload (a new page, the same seat) takes the
        # seat over, and the old page's leaving then does not free it
        self._page = secrets.token_hex(8)
        self._doc = pn.state.curdoc if served else None
        self._stopped = False
        self.following = True
        self._syncing = False
        self._version = -1
        self._asked: tuple | None = None  # the class question this page shows
        self._revealed = False
        self._cb: PeriodicCallback | None = None
        self._last_seen = 0.0
        self._taught_at = 0.0  # when the instructor's page last stamped the class
        self._left = False  # the instructor's page noted in the class that it closed
        self._is_loaded = False  # a browser has loaded this page (pn.state.onload)
        self._build()
        try:
            self.cap = max_seats()
            self.store = store()
            if code.lower() == "new":
                cls = self.store.create(self._view())
                self.role, self.code, self.key = "instructor", cls["code"], cls["key"]
                log.info(
                    "class %s: made in server process %d (%r)", self.code, os.getpid(), self.store
                )
            else:
                cls = self.store.get(code)
                self.code = cls["code"]
                if key_matches(cls, key):
                    self.role, self.key = "instructor", key
        except (KeyError, OSError, ValueError, ImportError) as exc:
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
        self._fill()
        self.poll()  # the page shows the class's step and question from the start
        if not served:
            self._loaded()
            return
        with contextlib.suppress(Exception):
            pn.state.on_session_destroyed(lambda ctx: self._stop())
        # Nothing more until a browser has loaded the page: a request for the HTML
        # alone (a script, a link preview) builds a session that takes no seat and
        # runs no timer, and ends unused.
        pn.state.onload(self._loaded)

    def _loaded(self) -> None:
        """The page is live: a student takes the seat; the page follows the class."""
        if self._stopped:
            return
        self._is_loaded = True
        try:
            if self.role == "student" and not self._claim(take_over=True):
                return  # the class is full
        except KeyError:
            self._ended()
            return
        except StoreUnavailable as exc:
            log.warning("class %s: %s", self.code, exc)
            self.seat_state = "away"  # the next poll takes the seat
        log.info(
            "class %s: %s page live in server process %d",
            self.code,
            "a student's" if self.role == "student" else "the instructor's",
            os.getpid(),
        )
        if self.served:
            self._cb = pn.state.add_periodic_callback(
                self.poll, period=POLL_MS if self.role == "student" else 500
            )
            if self._doc is not None:
                _listen(self.code, id(self), self._doc, self.poll)
        self.poll()
        self._set_url()  # the page's URL is reachable once it has loaded

    def _opened(self) -> ClassStore:
        """The class store, which the page opened as it started."""
        if self.store is None:
            raise RuntimeError("the class page has no store: it did not start")
        return self.store

    # ------------------------------------------------------------ widgets
    def _build(self) -> None:
        self.title = pn.pane.HTML("", sizing_mode="stretch_width", margin=(4, 10))
        # a student's page: says so while the instructor's page is closed
        self.notice = pn.pane.Alert(
            INSTRUCTOR_GONE, alert_type="warning", visible=False, margin=(0, 10)
        )
        self.follow = pn.widgets.Toggle(label="Follow the instructor", value=True, width=190)
        self.follow.param.watch(self._on_follow, "value")
        self.ask_button = pn.widgets.Button(label="Ask the class", color="primary", width=150)
        on_press(self.ask_button, self.ask_next)
        self.reveal_button = pn.widgets.Button(label="Reveal", color="success", width=110)
        on_press(self.reveal_button, self.reveal)
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
            self.notice,
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
        q: dict[str, str] = {"class": self.code}
        if self.role == "instructor":
            q["teach"] = self.key
        else:
            q["seat"] = self.seat
        with contextlib.suppress(Exception):
            loc.update_query(**q)  # type: ignore[arg-type]  # Panel 1.9 types each value as a Mapping

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

        if self._opened().update(self.code, change)["version"] != self._version:
            _notify(self.code)

    def _instructor_moved(self, *events) -> None:
        self._publish_view()

    def ask_next(self) -> None:
        """Ask the class the next question of the quiz on the instructor's block."""
        s = self.state
        if s.trace is None:
            return
        cls = self._opened().get(self.code)
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

        self._opened().update(self.code, change)
        _notify(self.code)
        self.poll()
        self._publish_view()

    def reveal(self) -> None:
        """Reveal the current question to every page of the class, and keep its results."""
        cls = self._opened().get(self.code)
        q = cls["question"]
        question = class_question(q)
        if question is None or cls["revealed"]:
            return

        def change(cls):
            if cls["revealed"] or cls["question"] != q:
                return False
            # counted here, in the change: an answer sent just before is in it
            dist = distribution(cls, question)
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

        self._opened().update(self.code, change)
        _notify(self.code)
        self.poll()
        self._publish_view()

    def _csv(self):
        try:
            return io.BytesIO(results_csv(self._opened().get(self.code)).encode("utf-8"))
        except KeyError:
            return None

    # ----------------------------------------------------------- student
    def _claim(self, take_over: bool = False) -> bool:
        """Take or stamp this page's seat, dropping stale seats; False where the class is full.

        ``take_over``: a page that has just loaded takes its seat from another
        page of the same seat (the page before a reload); a stamp does not.
        """
        seat, page, cap, now = self.seat, self._page, self.cap, time.time()
        full: list[bool] = []

        def change(cls):
            full.clear()  # a store may call change again (a conflict): decide afresh
            dropped = Attendance(cls, now).drop_stale()
            mine = cls["seats"].get(seat)
            if mine is None and len(cls["seats"]) >= cap:
                full.append(True)
                return dropped
            if mine is not None and mine["page"] != page and not take_over:
                return dropped  # a newer page of this seat holds it
            cls["seats"][seat] = {"seen": now, "page": page}
            return True

        self._opened().update(self.code, change, bump=False)  # presence: pages follow nothing
        self._last_seen = now
        if full:
            self._full()
            return False
        if self.seat_state != "held":
            self.seat_state = "held"
            self.dash.refresh_status()
        return True

    def _release(self) -> None:
        """Give the seat back (its answers stay counted), unless a newer page of it holds it."""
        if self.seat_state != "held":
            return
        self.seat_state = "away"
        seat, page = self.seat, self._page

        def change(cls):
            mine = cls["seats"].get(seat)
            if mine is None or mine["page"] != page:
                return False
            del cls["seats"][seat]
            return True

        with contextlib.suppress(KeyError, OSError):
            self._opened().update(self.code, change, bump=False)

    def _live(self) -> bool:
        """Whether this page's session still has its browser's connection."""
        doc = self._doc
        if not self.served or doc is None:
            return True
        session = getattr(getattr(doc, "session_context", None), "session", None)
        if session is None:
            return True  # cannot tell: the seat times out if the process is gone
        if getattr(session, "destroyed", False):
            return False
        return getattr(session, "connection_count", 1) > 0

    def _keep_seat(self) -> None:
        """Every poll of a student's page: stamp the seat while live, give it back when not."""
        if self.seat_state not in ("held", "away"):
            return
        if not self._live():
            self._release()
        elif self.seat_state == "away" or time.time() - self._last_seen > SEAT_TIMEOUT_S / 3:
            self._claim()

    def _keep_class(self) -> None:
        """Every poll of the instructor's page: stamp the class as taught while the page is live.

        A class whose instructor's page has not been live for
        :data:`INSTRUCTOR_TIMEOUT_S` may make room for a new one; a class
        whose page never loaded (a plain request) goes first.
        """
        now = time.time()
        if not self._is_loaded:
            return
        if not self._live():  # the page closed: the students are told at their next poll
            self._leave_class()
            return
        if now - self._taught_at < 10.0 and not self._left:
            return
        self._taught_at, back, page = now, self._left, self._page
        self._left = False

        def change(cls):
            cls["instructor_seen"] = now
            cls["instructor_page"] = page
            cls.pop("instructor_left", None)
            return True

        self._opened().update(self.code, change, bump=back)

    def _leave_class(self) -> None:
        """The instructor's page closed: note it in the class (unless a newer page teaches)."""
        if self.role != "instructor" or self._left or self.store is None:
            return
        self._left = True
        now, page = time.time(), self._page

        def change(cls):
            if cls.get("instructor_page", page) != page:
                return False  # a reload of the instructor's page teaches now
            cls["instructor_left"] = now
            return True

        with contextlib.suppress(KeyError, OSError, StoreUnavailable):
            self._opened().update(self.code, change)
        _notify(self.code)

    def _full(self) -> None:
        """The class has no room: say so, and leave the class (the page stays a dashboard)."""
        self.seat_state = "full"
        self.following = False
        message = full_message(self.cap)
        self.title.object = (
            f'<div id="vizmm-class-full" style="font-size:1.1em">Class <b>{self.code}</b> · '
            f"{_esc(message)}</div>"
        )
        self.follow.visible = False
        self.qm.on_submit = None
        if self.qm.question is not None:
            self.qm.close()
        self._stop()
        self.state.show(message, "warning")
        self.dash.refresh_status()

    def _send(self, question: Question, picks: set) -> None:
        with contextlib.suppress(KeyError):
            self._keep_seat()
        if self.seat_state != "held":
            return
        seat, entry = self.seat, sorted([list(p) for p in picks])

        def change(cls):
            if cls["revealed"] or seat not in cls["seats"]:
                return False
            cls["answers"][seat] = entry
            return True

        self._opened().update(self.code, change)
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
        """The page leaves the class (its session ends, the class ended, or it is full)."""
        self._stopped = True
        if self.role == "instructor" and self._is_loaded:
            self._leave_class()
        self._release()
        _unlisten(self.code, id(self))
        if self._cb is not None:
            with contextlib.suppress(Exception):
                self._cb.stop()
            self._cb = None

    # -------------------------------------------------------------- sync
    def poll(self) -> None:
        """Bring this page up to date with the class (timer callback)."""
        if self.seat_state == "full":
            return
        try:
            if self.role == "student":
                self._keep_seat()
                if self.seat_state == "full":
                    return
            cls = self._opened().get(self.code)
            if self.role == "instructor":
                self._keep_class()
        except KeyError:
            self._ended()
            return
        except StoreUnavailable as exc:  # busy or unreachable: the next poll tries again
            log.warning("class %s: %s", self.code, exc)
            return
        if self.role == "instructor":
            self._show_counts(cls)
        else:
            self._show_instructor(cls)
        if cls["version"] == self._version:
            return
        self._version = cls["version"]
        self._sync_question(cls)
        if self.role == "student" and self.following and self.qm.question is None:
            self._apply_view(cls["view"])
        elif self.role == "student" and self.qm.revealed and self.following:
            self._apply_view(cls["view"])
        self.dash.refresh_status()

    def _show_instructor(self, cls: dict) -> None:
        """A student's page: say whether the instructor's page is open (:class:`Attendance`)."""
        gone = Attendance(cls).instructor_gone
        if self.notice.visible != gone:
            self.notice.visible = gone
            self.dash.refresh_status()

    def _ended(self) -> None:
        self._stop()
        self.state.show(f"Class {self.code} has ended.", "warning")

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
                    self.qm.sent = set(self.qm.picks)
                    self.qm.submitted = True
                    self.qm.refresh()
        if cls["revealed"] and not self._revealed:
            self._revealed = True
            self.qm.reveal()

    def _show_counts(self, cls: dict) -> None:
        here = Attendance(cls).present
        full = f" (the class is full: {self.cap} seats)" if here >= self.cap else ""
        question = class_question(cls["question"])
        if question is None:
            text = f"<b>{here}</b> student(s) here{full} · no question asked yet"
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
                f"<b>{here}</b> student(s) here{full} · question {cls['question']['index'] + 1} "
                f"of {cls['question']['count']} ({state}) · <b id='vizmm-answered'>{answered}"
                f"</b> answered<table style='margin-top:4px'>{rows}</table>"
            )
        if self.counts.object != text:
            self.counts.object = text
        self._counts = {"students": here, "answered": answered, "answers": dist}
        self.reveal_button.disabled = question is None or cls["revealed"]
        self.dash.refresh_status()

    # ------------------------------------------------------------ status
    def status(self) -> dict:
        """``data-*`` of ``#vizmm-status`` for a class page.

        ``class``, ``role`` ('instructor' or 'student'), ``following``; a
        student's page also ``seat`` (:attr:`seat_state`); the instructor's
        page also ``students`` (seats present), ``answered`` (answers to the
        open question, of the seats here or gone) and ``answers`` (the
        distribution: ``[answer in words, seats]``, no names). Never the
        instructor's key nor its hash.
        """
        out = {"class": self.code, "role": self.role, "following": self.following}
        if self.role == "student":
            out["seat"] = self.seat_state
            out["instructor"] = "gone" if self.notice.visible else "here"
        else:
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
    first = v[0]
    return first.decode("utf-8", "replace") if isinstance(first, bytes) else str(first)


def class_session(dash):
    """The dashboard's add-on: a page opened with ``?class=...`` takes its part in the class.

    Pass it in ``Dashboard(addons=[question_mode, class_session])``, after
    :func:`vizmm_apps.quiz.question_mode` (a class asks the page's questions).

    Parameters
    ----------
    dash : vizmm_apps.dashboard.Dashboard
        A served page with a question mode (``dash.questions``).

    Returns
    -------
    pn.Column or None
        The class's controls (``dash.classroom``), or None where the page is
        not served, has no ``?class=`` or no question mode.
    """
    code = _arg("class") if dash.served else ""
    if not code or getattr(dash, "questions", None) is None:
        return None
    dash.classroom = Classroom(dash, code[:16], _arg("teach")[:40], _arg("seat")[:40])
    return dash.classroom.panel
