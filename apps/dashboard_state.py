"""The dashboard's state: every choice of a page, its URL, and moving through a replay.

:class:`DashboardState` (a ``param.Parameterized``) holds the trace, the
block, the followed thread, the step, the granularity and order, the theme
and presenter mode, and the current :class:`~vizmm.replay.Frame`; every
move goes through :func:`vizmm.replay.navigator.place`. The frame is made of
only the aspects the page needs: those its views need (``shows``, given by the
page) and those its status reads (:data:`STATUS_ASPECTS`). :data:`URL_PARAMS`
are the choices a bookmark keeps, :data:`KEYS` the keyboard's shortcuts.
It draws nothing: :class:`vizmm_apps.dashboard.Dashboard` shows it.
"""

from __future__ import annotations

import json
import types
import urllib.parse
from collections.abc import Callable, Iterable
from typing import ClassVar

import param

import vizmm
from vizmm import TransactionsError, memory_transactions
from vizmm.record import in_words
from vizmm.render.bokeh_scene import slot_label
from vizmm.replay import (
    ASPECT_FIELDS,
    ASPECTS,
    GRANULARITIES,
    ORDERS,
    Frame,
    Replay,
    SlotState,
    ThreadState,
)
from vizmm.replay.findings import finding_marks, trace_findings, with_finding
from vizmm.replay.navigator import Place, Position, clamp, past_the_end, place
from vizmm.serve import catalogue
from vizmm.serve.catalogue import CATALOGUE
from vizmm.trace import Trace
from vizmm_apps.parts import drop_long_url_values
from vizmm_apps.url_params import link_one_based

__all__ = [
    "DashboardState",
    "URL_PARAMS",
    "KEYS",
    "STATUS_FIELDS",
    "STATUS_ASPECTS",
    "in_page_words",
]

#: Parameters of :class:`DashboardState` kept in the URL, and their query names.
URL_PARAMS = {
    "source": "trace",
    "by": "by",
    "bx": "bx",
    "ty": "ty",
    "tx": "tx",
    "url_step": "step",  # 1-based, as the page numbers it
    "url_finding": "finding",  # 1-based, as the Findings list numbers them; 0: none
    "granularity": "granularity",
    "order": "order",
    "presenter": "presenter",
    "theme": "theme",
    "transactions": "transactions",
}

#: Keyboard shortcuts: key -> what it does (shown under 'Keys and clicks').
KEYS = {
    "ArrowRight": "next step",
    "ArrowLeft": "previous step",
    " ": "play / pause",
    "Home": "first step",
    "End": "last step",
    "g": "phases ↔ sub-steps",
    "o": "lockstep ↔ recorded order",
    "p": "presenter mode on / off",
}


#: The fields of a :class:`~vizmm.replay.Frame` that :meth:`DashboardState.status` reads:
#: the title, the T x T slot labels and states and thread states, the followed thread's
#: Pvalue, the counters and their CGMA (``Frame.cgma`` reads ``thread_valid``,
#: ``terms_loaded`` and ``loads_so_far``), the barrier lab's wrong reads. The struck
#: lines come from the replay (``Replay.struck_lines``); the transactions are said when
#: the frame holds them (the page shows a view of them).
STATUS_FIELDS = frozenset(
    {
        "title",
        "mds_state",
        "mds_src",
        "nds_state",
        "nds_src",
        "thread_state",
        "thread_valid",
        "pvalue",
        "loads_so_far",
        "naive_loads_so_far",
        "terms_loaded",
        "thread_wrong",
    }
)

#: The aspects of a frame the status reads (those holding :data:`STATUS_FIELDS`): every
#: frame of a page holds them, whichever views it shows.
STATUS_ASPECTS: tuple[str, ...] = tuple(
    a for a, fields in ASPECT_FIELDS.items() if STATUS_FIELDS.intersection(fields)
)


# ------------------------------------------------------------------ state
def _transactions_status(f) -> dict:
    """What the page says of the transactions view (tests read the banks from here)."""
    o = f.transactions if f.has("transactions") else None
    if o is None:
        return {"transactions": False}
    out = {"transactions": True, "warp": o.warp, "totals": list(o.totals)}
    if o.nds_bank is not None:
        out.update(
            mds_bank=o.mds_bank.tolist(),
            nds_bank=o.nds_bank.tolist(),
            mds_way=o.mds_way,
            nds_way=o.nds_way,
            nds_conflicts=int(o.nds_conflict.sum()),
        )
    return out


class DashboardState(param.Parameterized):
    """Everything the user chose, and the frame it leads to.

    Set the parameters (from widgets, keys, the URL or a test) and read
    :attr:`frame` / :meth:`status`. Nothing here knows about widgets.
    """

    source = param.String(default=catalogue.DEFAULT, doc="Trace key (see vizmm.serve.catalogue).")
    by = param.Integer(default=0, bounds=(0, None), doc="blockIdx.y of the replayed block.")
    bx = param.Integer(default=0, bounds=(0, None), doc="blockIdx.x of the replayed block.")
    ty = param.Integer(default=-1, bounds=(-1, None), doc="Followed thread's ty (-1: none).")
    tx = param.Integer(default=-1, bounds=(-1, None), doc="Followed thread's tx (-1: none).")
    step = param.Integer(default=0, bounds=(0, None), doc="Step of the replay (0-based).")
    url_step = param.Integer(
        default=1,
        bounds=(1, None),
        precedence=-1,
        doc="The step as the page, its URL and the README number it: step + 1 (1-based).",
    )
    granularity: param.Selector[str] = param.Selector(
        default="substep", objects=list(GRANULARITIES)
    )
    order: param.Selector[str] = param.Selector(default="lockstep", objects=list(ORDERS))
    presenter = param.Boolean(default=False, doc="Large fonts, controls tucked away.")
    theme: param.Selector[str] = param.Selector(
        default="light", objects=["light", "dark"], doc="Colours: light, or dark for dim rooms."
    )
    transactions = param.Boolean(
        default=False,
        doc="Memory transactions: the current warp's sectors on M and N, the banks of Mds and "
        "Nds at each k with its conflicts, a row per warp, the totals.",
    )
    playing = param.Boolean(default=False)
    speed = param.Number(default=2.0, bounds=(0.25, 20.0), doc="Steps per second when playing.")

    trace = param.ClassSelector(class_=Trace, default=None, allow_None=True, precedence=-1)
    frame = param.Parameter(default=None, precedence=-1, doc="The current Frame (or None).")
    n_steps = param.Integer(default=1, precedence=-1)
    message = param.String(default="", precedence=-1, doc="What went wrong, for the page.")
    message_kind: param.Selector[str] = param.Selector(
        default="danger", objects=["danger", "warning", "info"], precedence=-1
    )
    busy = param.String(default="", precedence=-1, doc="What is being loaded or recorded.")
    progress = param.Integer(default=-1, precedence=-1, doc="Percent done, -1 unknown.")
    finding = param.Integer(
        default=-1,
        bounds=(-1, None),
        precedence=-1,
        doc="The selected finding of vizmm check (vizmm.replay.findings.trace_findings), "
        "marked on its block's frames; -1: none.",
    )

    url_finding = param.Integer(
        default=0,
        bounds=(0, None),
        precedence=-1,
        doc="The selected finding as the Findings list and the URL number it: finding + 1 "
        "(0: none). A URL's finding=N selects finding N once the trace's findings are "
        "listed and goes to its block, step and thread.",
    )

    _WATCHED: ClassVar[list[str]] = [
        "trace",
        "by",
        "bx",
        "ty",
        "tx",
        "granularity",
        "order",
        "step",
        "transactions",
        "finding",
    ]

    def __init__(self, loader: Callable[[str], None] | None = None, **params):
        self.replay: Replay | None = None
        #: ``pin() -> dict or None``: values of source, by, bx, granularity, order and step
        #: the view must keep (a question is open: apps/quiz.py); None lets it move.
        self.pin: Callable[[], dict | None] | None = None
        #: ``shows() -> iterable of str``: the aspects of a frame the page's views and other
        #: parts need now (``vizmm.render.views.aspects_of``), besides the status's
        #: (:data:`STATUS_ASPECTS`); None: whole frames. A page whose ``shows()`` grows
        #: calls :meth:`refresh_aspects`.
        self.shows: Callable[[], Iterable[str]] | None = None
        #: ``loader(key)``: reads trace ``key`` and sets it (None: :meth:`load_now`, here and
        #: now; a served dashboard gives one that reads it in a thread).
        self.loader = loader
        self._guard = False
        self._started = False
        self._trace_key: str | None = None
        self._place: Place | None = None  # where the page is (vizmm.replay.navigator)
        super().__init__(**params)
        self.param.watch(self._changed, self._WATCHED)
        self.param.watch(self._on_source, ["source"])
        link_one_based(self, "step", "url_step")
        #: A finding asked for by the URL (0-based; -1: none), selected by the Findings
        #: list once it has the trace's findings (vizmm_apps.findings_view).
        self.wanted_finding = -1
        link_one_based(self, "finding", "url_finding", self._url_finding)

    def _url_finding(self, wanted: int) -> None:
        """A finding asked for by the URL (0-based) waits in :attr:`wanted_finding`."""
        self.wanted_finding = wanted
        if wanted == -1:
            self.finding = -1

    # ----------------------------------------------------------- loading
    def start(self) -> DashboardState:
        """Load the trace of :attr:`source` (call once the URL has been applied)."""
        self._started = True
        self._load(self.source)
        return self

    def _on_source(self, *events) -> None:
        pinned = self.pin() if self.pin is not None else None
        if pinned and "source" in pinned and self.source != pinned["source"]:
            self._set_quietly(source=pinned["source"])
            return
        if self._started:
            self._load(self.source)

    def _load(self, key: str) -> None:
        trace = CATALOGUE.cached(key)
        if trace is not None:
            self.set_trace(key, trace)
            return
        try:
            catalogue.parse_key(key)
        except ValueError as exc:
            self._fail(str(exc))
            return
        (self.loader or self.load_now)(key)

    def load_now(self, key: str, progress: Callable[[int, int], None] | None = None) -> None:
        """Load or record ``key`` in this thread, then show it (errors go to :attr:`message`).

        Parameters
        ----------
        key : str
            A catalogue key (a shipped trace, a recording's key or an uploaded file's).
        progress : callable, optional
            ``progress(done, total)`` while a recording runs (blocks done of all).
        """
        try:
            trace = CATALOGUE.get(key, progress=progress)
        except (ValueError, KeyError, OSError, vizmm.RecordError, vizmm.GPUUnavailableError) as exc:
            self._fail(in_page_words(exc))
            return
        self.set_trace(key, trace)

    def _fail(self, message: str) -> None:
        """A trace could not be opened: name the trace still shown again, and say why."""
        if self._trace_key is not None and self.source != self._trace_key:
            self.source = self._trace_key
        self.show(message)

    def set_trace(self, key: str, trace: Trace) -> None:
        """Show ``trace`` if it is still the one asked for (``key`` is :attr:`source`).

        Parameters
        ----------
        key : str
            The catalogue key ``trace`` was loaded for.
        trace : Trace
            The loaded trace.
        """
        if key != self.source:
            return  # the user asked for something else meanwhile
        if self.message and self.message_kind == "danger":
            self.message = ""
        self._trace_key = key
        self.trace = trace

    def show(self, message: str, kind: str = "danger") -> None:
        """Put a message on the page (``kind``: danger, warning or info).

        Parameters
        ----------
        message : str
            The words shown (plain text).
        kind : {'danger', 'warning', 'info'}
            How the message is coloured.
        """
        self.param.update(message=message, message_kind=kind)

    def choose_source(self, key: str) -> None:
        """Open another trace at its first step (what the trace menu does).

        Parameters
        ----------
        key : str
            A catalogue key, as the trace menu holds them.
        """
        block = (0, 0)
        what = None
        try:
            what = catalogue.parse_key(key)
        except ValueError:
            pass
        if isinstance(what, catalogue.Preset):
            block = what.block
        self.param.update(
            source=key, by=block[0], bx=block[1], ty=-1, tx=-1, step=0, playing=False, message=""
        )

    # ----------------------------------------------------------- replay
    def _changed(self, *events) -> None:
        if self._guard:
            return
        names = {e.name for e in events}
        pinned = self.pin() if self.pin is not None else None
        if pinned:
            moved = {
                k: v
                for k, v in pinned.items()
                if k in self._WATCHED and k != "trace" and getattr(self, k) != v
            }
            if moved:
                self._set_quietly(**moved)
                names |= set(moved) | {"step"}
        if names <= {"step", "finding"}:
            self._show_step()
            return
        self._rebuild(names)

    def _set_quietly(self, **values) -> None:
        values = {k: v for k, v in values.items() if getattr(self, k) != v}
        if not values:
            return
        self._guard = True
        try:
            self.param.update(**values)
        finally:
            self._guard = False

    def _rebuild(self, names: set[str]) -> None:
        trace = self.trace
        if trace is None:
            self.replay, self.frame, self._place = None, None, None
            return
        if "trace" in names and "finding" not in names:
            self._set_quietly(finding=-1)  # a finding of the trace shown before
        transactions = self.transactions and trace.kernel != "naive"
        if transactions and len(trace.detail_blocks):
            try:
                memory_transactions(trace)
            except TransactionsError as exc:
                self.show(f"No memory transactions for this trace: {exc}", "warning")
                transactions = False
        wanted = Position(
            (self.by, self.bx), (self.ty, self.tx), self.step, self.granularity, self.order
        )
        placed = place(
            trace,
            wanted,
            self._place,
            same_moment=bool("step" not in names and names & {"granularity", "order"}),
            new_trace="trace" in names,
            transactions=transactions,
        )
        self._place = placed
        if placed.note is not None:
            self.show(placed.note.text, placed.note.kind)
        if placed.replay is None:
            self.replay, self.frame = None, None
            return
        shown = placed.position
        focus = shown.focus or (-1, -1)
        self.replay = placed.replay
        self._set_quietly(
            by=shown.block[0],
            bx=shown.block[1],
            ty=focus[0],
            tx=focus[1],
            step=shown.step,
            n_steps=len(placed.replay),
        )
        if self.message_kind == "danger":
            self.message = ""
        self.frame = self._made(shown.step)

    def _show_step(self) -> None:
        if self.replay is None:
            return
        n = len(self.replay)
        if self.step >= n:
            self.show(past_the_end(self.step, n), "info")
            self._set_quietly(step=n - 1)
        self.frame = self._made(self.step)

    def frame_aspects(self) -> tuple[str, ...]:
        """The aspects the page's frames are made of: what it shows, and what its status reads.

        Returns
        -------
        tuple of str
            Names of :data:`vizmm.replay.ASPECTS`, in their order: those of
            ``shows()`` and :data:`STATUS_ASPECTS`; all of them while
            :attr:`shows` is None.
        """
        if self.shows is None:
            return ASPECTS
        want = set(self.shows()).union(STATUS_ASPECTS)
        return tuple(a for a in ASPECTS if a in want)

    def refresh_aspects(self) -> None:
        """Make the frame shown again if it lacks an aspect the page needs now.

        What a page calls when a view is switched on (presenter mode off):
        the frame is made again with the new view's aspects (those made
        already are kept on the trace and cost nothing).
        """
        f = self.frame
        if self.replay is None or f is None:
            return
        if not set(self.frame_aspects()) <= set(f.aspects):
            self.frame = self._made(self.step)

    def _made(self, step: int) -> Frame:
        """The frame of ``step`` of :attr:`replay`, of :meth:`frame_aspects`, finding marked."""
        if self.replay is None:
            raise RuntimeError("no replay: there is no frame to make")
        return self._framed(self.replay.frame(step, aspects=self.frame_aspects()))

    def _framed(self, frame: Frame) -> Frame:
        """``frame`` with the selected finding marked on it (its block's frames only)."""
        if self.finding < 0 or self.trace is None:
            return frame
        found = trace_findings(self.trace)  # worked out already: the list was shown
        if self.finding >= len(found):
            return frame
        return with_finding(frame, finding_marks(found[self.finding], self.finding))

    # ------------------------------------------------------- navigation
    def go(self, step: int) -> None:
        """Go to ``step`` (clamped to the replay).

        Parameters
        ----------
        step : int
            A step number of the replay (0-based).
        """
        if self.replay is not None:
            self.step = clamp(step, self.replay)

    def next(self) -> bool:
        """One step forward; returns False (and stops playing) at the last step."""
        if self.replay is None or self.step >= len(self.replay) - 1:
            self.playing = False
            return False
        self.step += 1
        return True

    def prev(self) -> None:
        """One step back."""
        self.go(self.step - 1)

    def first(self) -> None:
        """The first step."""
        self.go(0)

    def last(self) -> None:
        """The last step."""
        self.go(self.n_steps - 1)

    def toggle_play(self) -> None:
        """Play or pause; playing from the last step starts again at the first."""
        if not self.playing and self.replay is not None and self.step >= len(self.replay) - 1:
            self.step = 0
        self.playing = not self.playing

    def tick(self) -> None:
        """One step of playing (called by the play timer)."""
        if self.playing:
            self.next()

    def toggle_granularity(self) -> None:
        """Switch between phases and sub-steps, staying at the same moment."""
        self.granularity = "phase" if self.granularity == "substep" else "substep"

    def toggle_order(self) -> None:
        """Switch between lockstep and recorded order."""
        self.order = "recorded" if self.order == "lockstep" else "lockstep"

    def follow(self, ty: int, tx: int) -> None:
        """Follow thread (ty, tx); following it again stops following.

        Parameters
        ----------
        ty, tx : int
            threadIdx.y and threadIdx.x of a thread of the block shown.
        """
        if (self.ty, self.tx) == (ty, tx):
            self.param.update(ty=-1, tx=-1)
        else:
            self.param.update(ty=int(ty), tx=int(tx))

    def select_block(self, by: int, bx: int) -> None:
        """Replay block (by, bx) (a block not recorded per thread gives a message).

        Parameters
        ----------
        by, bx : int
            blockIdx.y and blockIdx.x of a block of the grid.
        """
        if self.message_kind != "danger":
            self.message = ""
        self.param.update(by=int(by), bx=int(bx))

    def handle_key(self, key: str) -> None:
        """Do what key ``key`` (a ``KeyboardEvent.key``) stands for (see :data:`KEYS`).

        Parameters
        ----------
        key : str
            A ``KeyboardEvent.key`` value, e.g. ``'ArrowRight'`` or ``' '``.
        """
        action = {
            "ArrowRight": self.next,
            "ArrowLeft": self.prev,
            " ": self.toggle_play,
            "Home": self.first,
            "End": self.last,
            "g": self.toggle_granularity,
            "G": self.toggle_granularity,
            "o": self.toggle_order,
            "p": lambda: setattr(self, "presenter", not self.presenter),
        }.get(key)
        if action is not None:
            if key not in (" ",):
                self.playing = False if key in ("Home", "End", "ArrowLeft") else self.playing
            action()

    # ------------------------------------------------------------ views
    def status(self, per_thread: bool = True) -> dict:
        """What the page shows, as plain data (tests read it; the page puts it in the DOM).

        Parameters
        ----------
        per_thread : bool
            False: leave out the T x T lists (``mds``, ``nds``, ``mds_state``,
            ``nds_state``, ``threads``), which the page does not put in its
            DOM for blocks of more than 8 x 8 threads.

        Returns
        -------
        dict
            ``ready``; and when a frame is shown: ``source``, ``step``,
            ``count``, ``sub``, ``phase``, ``k``, ``block``, ``thread``,
            ``granularity``, ``order``, ``mds`` / ``nds`` (T x T labels in
            the book's notation, ``M_{0,2}``, ``0.0``, ``?``), ``mds_state``
            / ``nds_state`` (:class:`~vizmm.replay.SlotState` names), ``threads``
            (T x T :class:`~vizmm.replay.ThreadState` names in lower case),
            ``loads``, ``naive``, ``cgma``, ``pvalue`` (followed thread's,
            or None), ``wrong`` (barrier lab: T x T, 1 where the thread's
            read at this step found the wrong element; None without read
            records), ``struck`` (1-based source lines of the removed
            ``__syncthreads()``), ``title``, ``message``; ``transactions``
            and its banks when the frame holds them. It reads only the
            aspects of :data:`STATUS_ASPECTS` (and ``transactions``).
        """
        f = self.frame
        if f is None or self._trace_key != self.source:  # nothing, or the previous trace
            return {
                "ready": False,
                "source": self.source,
                "message": self.message,
                "busy": self.busy,
            }
        T = f.thread_state.shape[0]
        thread = None if f.focus is None else list(f.focus)
        return {
            "ready": True,
            "source": self.source,
            "step": f.index,
            "count": f.count,
            "sub": f.step.sub.value,
            "phase": f.step.phase,
            "k": f.step.k,
            "block": list(f.block),
            "thread": thread,
            "granularity": self.granularity,
            "order": self.order,
            **(self._per_thread_status(f, T) if per_thread else {}),
            **_transactions_status(f),
            "loads": int(f.loads_so_far),
            "naive": int(f.naive_loads_so_far),
            "cgma": round(float(f.cgma), 4),
            "pvalue": None if f.focus is None else _num(f.pvalue[f.focus]),
            # barrier lab: threads whose read at this step found the wrong element
            "wrong": None if f.thread_wrong is None else f.thread_wrong.astype(int).tolist(),
            "struck": [i + 1 for i in self._struck()],
            "title": f.title,
            "presenter": self.presenter,
            "theme": self.theme,
            "message": self.message,
            "busy": self.busy,
        }

    def _struck(self) -> tuple[int, ...]:
        """0-based source lines of the removed ``__syncthreads()`` (none without a replay)."""
        return () if self.replay is None else self.replay.struck_lines

    @staticmethod
    def _per_thread_status(f, T: int) -> dict:
        """The T x T lists of :meth:`status` (slot labels and states, thread states)."""
        return {
            "mds": [
                [slot_label(f.mds_state[y, x], f.mds_src[y, x], "M") for x in range(T)]
                for y in range(T)
            ],
            "nds": [
                [slot_label(f.nds_state[y, x], f.nds_src[y, x], "N") for x in range(T)]
                for y in range(T)
            ],
            "mds_state": [[SlotState(int(v)).name.lower() for v in r] for r in f.mds_state],
            "nds_state": [[SlotState(int(v)).name.lower() for v in r] for r in f.nds_state],
            "threads": [
                [ThreadState(int(f.thread_state[y, x])).name.lower() for x in range(T)]
                for y in range(T)
            ],
        }

    def url_query(self) -> str:
        """The URL query that restores this state (what ``location.sync`` writes)."""
        q = {}
        for p, name in URL_PARAMS.items():
            v = self.param[p].serialize(getattr(self, p))
            q[name] = v if isinstance(v, str) else json.dumps(v)
        return urllib.parse.urlencode(q)

    def apply_query(self, query: str) -> None:
        """Apply a URL query (``?trace=...&step=...``) exactly as ``location.sync`` does.

        Parameters
        ----------
        query : str
            The query part of a URL, with or without the leading ``?``.
        """
        from panel.util import parse_query

        loc = types.SimpleNamespace(search="?" + query.lstrip("?"))
        too_long = drop_long_url_values(loc)
        parsed = parse_query(loc.search or "?")
        values = {}
        for p, name in URL_PARAMS.items():
            if name in parsed:
                v = parsed[name]
                try:
                    v = self.param[p].deserialize(v)
                except Exception:  # noqa: BLE001 - location.sync keeps the raw value too
                    pass
                values[p] = v
        try:
            self.param.update(**values)
        except Exception:  # noqa: BLE001 - location.sync then calls on_error
            self.apply_values(values)
        if too_long:
            self.ignored_in_url(too_long)

    def ignored_in_url(self, items: list[str]) -> None:
        """Name parameters of the URL that were not applied (with any named already).

        Parameters
        ----------
        items : list of str
            The URL parameters left out, as :func:`vizmm_apps.parts.drop_long_url_values`
            names them.
        """
        prefix = "Ignored in the URL: "
        if self.message.startswith(prefix):
            items = [self.message[len(prefix) :].rstrip("."), *items]
        self.show(prefix + "; ".join(items) + ".", "warning")

    def apply_values(self, values: dict) -> None:
        """Set the valid values of a URL and name the others on the page (``on_error``).

        The URL parser reads ``-1`` as a float; integral floats are taken as
        integers. A value that is not allowed (``?step=abc``, ``?by=-3``,
        ``?granularity=zzz``) is left out and the page says which and what is
        allowed; the rest of the URL still applies.

        Parameters
        ----------
        values : dict
            URL parameter name to parsed value, as Panel's ``location.sync`` passes them.
        """
        clean, bad = {}, []
        for k, v in values.items():
            if k not in URL_PARAMS:
                continue
            p = self.param[k]
            if isinstance(p, param.Integer) and isinstance(v, float) and v.is_integer():
                v = int(v)
            if isinstance(p, param.Integer) and isinstance(v, str):
                try:
                    v = int(v)
                except ValueError:
                    pass
            if isinstance(p, param.String) and not isinstance(v, str):
                v = str(v)
            clean[k] = v
        for k, v in clean.items():
            try:
                self.param.update(**{k: v})
            except Exception:  # noqa: BLE001 - named on the page below
                bad.append(f"{URL_PARAMS[k]}={_short(v)} ({_allowed(self.param[k])})")
        if bad:
            self.show("Ignored in the URL: " + "; ".join(bad) + ".", "warning")


def _short(v) -> str:
    text = str(v)
    return text if len(text) <= 40 else text[:37] + "..."


def _allowed(p) -> str:
    """What a URL parameter accepts, in words."""
    if isinstance(p, param.Selector):
        return "one of " + ", ".join(map(str, p.objects))
    if isinstance(p, param.Boolean):
        return "true or false"
    if isinstance(p, param.Integer):
        lo = (p.bounds or (None, None))[0]
        return f"a whole number >= {lo}" if lo is not None else "a whole number"
    return "text"


def _num(v) -> float | None:
    v = float(v)
    return None if v != v else v


def in_page_words(exc: BaseException) -> str:
    """Why ``exc`` happened, in one line of the page's words (no quotes around a key's message).

    Parameters
    ----------
    exc : BaseException
        What a load, a recording or an upload raised.
    """
    msg = in_words(exc, "page")  # a refused recording's advice in the page's words
    if isinstance(exc, KeyError) and len(msg) > 1 and msg[0] == msg[-1] == "'":
        msg = msg[1:-1]
    return msg
