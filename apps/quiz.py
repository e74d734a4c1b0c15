"""Predict, then reveal: the dashboard's question mode.

A question (:mod:`vizmm.replay.questions`) pins the page at its ``view_step``
(the state before the answer: stepping, keys, block taps and the trace menu
cannot move it), blanks the Fig. 5.8 table's future cells, and asks. The
student answers by clicking in the views (Bokeh ``TapTool`` selections on the
M, N, Mds, Nds and thread figures; an option button for counts) and submits;
the reveal goes to ``reveal_step``, marks the right cells (✓) and the wrong
picks (✗) and says why.

The question, its answer and explanation stay in this Python object (the
server's session state); the page receives the prompt and the student's own
picks only, until the reveal.

:func:`question_mode` is the dashboard's add-on (``Dashboard(addons=[...])``);
:class:`QuestionMode` is also driven by a class session (apps/classroom.py):
``on_submit`` sends the answer to the instructor instead of revealing it.
"""

from __future__ import annotations

import html
import math
import weakref
from collections.abc import Callable
from functools import partial
from typing import Literal

import panel as pn

from vizmm.render import views as view_specs
from vizmm.render.bokeh_scene import add_glyph
from vizmm.render.text import render_text
from vizmm.replay.navigator import substep_moment
from vizmm.replay.questions import Question, answer_label, pick_label, question_at, quiz, score
from vizmm_apps.access import BusySignal
from vizmm_apps.parts import on_press

__all__ = ["QuestionMode", "question_mode", "PICK", "RIGHT", "WRONG"]

PICK = "#8250df"  # the student's picks before the reveal (dotted)
RIGHT = "#1a7f37"  # the answer, at the reveal (✓)
WRONG = "#cf222e"  # a wrong pick, at the reveal (✗)
_CLICK_VIEWS = view_specs.names(pickable=True)  # the views a question may ask to click


class QuestionMode:
    """The question mode of one dashboard (one browser session).

    (No ``pn.io.hold`` here: a held batch that both replaces a source whose
    length changed and patches it again leaves BokehJS with columns of
    different lengths.)

    Parameters
    ----------
    dashboard : vizmm_apps.dashboard.Dashboard

    Attributes
    ----------
    question : Question or None
        The open question (server-side only).
    picks : set of tuple
        The student's picks (see :mod:`vizmm.replay.questions`).
    revealed : bool
    on_submit : callable or None
        ``on_submit(question, picks)``; when set (a class session) a submit
        sends the answer and waits for the instructor's reveal.
    sent : set or None
        In a class session, the picks sent (``None``: nothing sent yet). Once
        sent the picks are locked, and the reveal grades what was sent.
    """

    def __init__(self, dashboard):
        self.dash = dashboard
        self.state = dashboard.state
        self.question: Question | None = None
        self._source = ""
        self.picks: set[tuple] = set()
        self.revealed = False
        self.correct: bool | None = None
        self.submitted = False
        self.sent: set[tuple] | None = None
        self.quiz: list[Question] = []
        self.index = -1
        self.answers: dict[int, list | None] = {}
        self.on_submit: Callable[[Question, set], None] | None = None
        #: The instructor's page of a class: shows the question and the answer, answers nothing.
        self.observer = False
        #: Label of the question's number (a class sets "Question 2 of 7").
        self.number = ""
        self.on_change: list[Callable[[], None]] = []
        self._asked = False  # a question was opened in this session
        self._marked: weakref.WeakSet = weakref.WeakSet()  # scenes given marks
        self._mark_sources: dict | None = None  # made with the first marks (see marks)
        self._build()
        dashboard.scene_hooks.append(self._on_scene)
        dashboard.tap_claims.append(self._claim)
        dashboard.status_extras.append(self.status)
        self.state.pin = self._pin
        self.state.param.watch(lambda *e: self.sync_buttons(), ["trace", "by", "bx"])
        self.state.param.watch(lambda *e: self.refresh(), ["presenter"])

    @property
    def marks(self) -> dict:
        """The source of the picks' marks on each clickable view (``ColumnDataSource``).

        Made when first needed (a question's picks or its answer to show): a
        page where no question is asked makes none of them.
        """
        if self._mark_sources is None:
            from bokeh.models import ColumnDataSource

            self._mark_sources = {
                v: ColumnDataSource(data={"x": [], "y": [], "color": [], "dash": [], "label": []})
                for v in _CLICK_VIEWS
            }
        return self._mark_sources

    # ------------------------------------------------------------ widgets
    def _build(self) -> None:
        self.ask_button = pn.widgets.Button(
            label="Ask a question here",
            description="A question about what comes next at this step",
            width=170,
        )
        on_press(self.ask_button, lambda: self._working(self.ask_here), hold=False)
        self.quiz_button = pn.widgets.Button(
            label="Quiz on this block", description="5-10 questions in order", width=150
        )
        on_press(self.quiz_button, lambda: self._working(self.start_quiz), hold=False)
        # a question on a big trace takes seconds: the page says so the moment it is asked
        self.busy = BusySignal(
            labels=["Ask a question here", "Quiz on this block"],
            message="Working out a question about this block …",
        )
        self.prompt = pn.pane.HTML("", sizing_mode="stretch_width", margin=(0, 10))
        self.picked = pn.pane.HTML("", sizing_mode="stretch_width", margin=(0, 10))
        self.choices = pn.widgets.RadioButtonGroup(options=[], visible=False, color="light")
        self.choices.param.watch(self._on_choice, "value")
        self.submit_button = pn.widgets.Button(label="Submit", color="primary", width=100)
        on_press(self.submit_button, self.submit, hold=False)
        self.skip_button = pn.widgets.Button(label="Skip", width=80)
        on_press(self.skip_button, self.skip, hold=False)
        self.next_button = pn.widgets.Button(label="Next question", width=130, visible=False)
        on_press(self.next_button, self.next, hold=False)
        self.close_button = pn.widgets.Button(label="Close", width=80, visible=False)
        on_press(self.close_button, self.close, hold=False)
        self.result = pn.pane.Alert(
            "", alert_type="info", visible=False, sizing_mode="stretch_width"
        )
        self.box = pn.Column(
            self.prompt,
            self.choices,
            self.picked,
            pn.Row(self.submit_button, self.skip_button, self.next_button, self.close_button),
            self.result,
            visible=False,
            sizing_mode="stretch_width",
            styles={"border-left": f"4px solid {PICK}", "background": "#fbf8ff"},
        )
        #: What starts a question (shown while none is open), in the heading's row.
        self.starters = (self.ask_button, self.quiz_button, self.busy)
        # The question box joins the page when it is first shown: most pages
        # never ask, and a new session then builds and sends none of its models.
        self.panel = pn.Column(
            pn.Row(
                pn.pane.Markdown("**Predict, then reveal**", margin=(12, 10, 0, 10)),
                *self.starters,
            ),
            sizing_mode="stretch_width",
        )

    def _place_box(self) -> None:
        """Put the question box into the page the first time it is shown, as it is then."""
        if self.box.visible and self.box not in self.panel.objects:
            self.panel.append(self.box)

    def sync_buttons(self) -> None:
        """Enable 'Ask a question here' and 'Quiz on this block' where the trace can be asked."""
        tr = self.state.trace
        ok = tr is not None and tr.kernel != "naive" and len(tr.detail_blocks) > 0
        self.ask_button.disabled = self.quiz_button.disabled = not ok

    # -------------------------------------------------------------- scene
    def _on_scene(self, scene) -> None:
        """A new scene: its views answer taps; hide what comes next while asking."""
        from bokeh.events import Tap

        scene.conceal = self.question is not None and not self.revealed
        for view, fig in self._clickable(scene):
            if view != "threads":  # threads already tap (to follow)
                fig.on_event(Tap, partial(self._on_tap_event, scene, view))
        if self._asked:
            self._add_marks(scene)

    @staticmethod
    def _clickable(scene):
        """``(view, figure)`` of the scene's views that answers are picked in."""
        from bokeh.models.glyphs import Rect

        for view in _CLICK_VIEWS:
            fig, src = scene.figures.get(view), scene.sources.get(view)
            if fig is None or src is None:
                continue
            rs = [r for r in fig.renderers if getattr(r, "data_source", None) is src]
            if any(isinstance(r.glyph, Rect) for r in rs):
                yield view, fig

    def _mark_scenes(self) -> None:
        """Give every scene of the page its marks (from the session's first question on)."""
        self._asked = True
        for scene in self.dash.scenes:
            self._add_marks(scene)

    def _add_marks(self, scene) -> None:
        """Draw the picks (and the answer) on the views, once per scene.

        Made when the session's first question opens, not with every page: a
        student who asks no question is sent none of these glyphs.
        """
        if scene in self._marked:
            return
        self._marked.add(scene)
        for view, fig in self._clickable(scene):
            add_glyph(
                fig,
                "Rect",
                self.marks[view],
                **scene.ranges(view),
                x="x",
                y="y",
                width=0.82,
                height=0.82,
                fill_alpha=0,
                line_color="color",
                line_dash="dash",
                line_width=5,
            )
            add_glyph(
                fig,
                "Text",
                self.marks[view],
                **scene.ranges(view),
                x="x",
                y="y",
                text="label",
                text_color="color",
                text_font_size="22px",
                text_font_style="bold",
                x_offset=-14,
                y_offset=-8,
                text_align="right",
            )

    def _on_tap_event(self, scene, view, event) -> None:
        """A tap on the plot of M, N, Mds or Nds: the cell of ``view`` under it, if any."""
        tr = self.state.trace
        if tr is None or event.x is None or event.y is None:
            return
        j, k, l = tr.shape
        T = tr.tile_width
        rows, cols = {"M": (j, k), "N": (k, l)}.get(view, (T, T))
        x, y = scene.to_cells(view, event.x, event.y)  # the plot's pixels, in the grid's cells
        a, b = math.floor(y), math.floor(x)
        if 0 <= a < rows and 0 <= b < cols:
            self._pick_cell(view, a, b)

    def _claim(self, view: str, i: int) -> bool:
        if self.question is None or self.revealed:
            return False
        if view == "threads" and self.dash.scene is not None:
            self._pick("threads", self.dash.scene.sources["threads"].data, i)
        return True  # while asking, taps answer (no following, no other block)

    def _pick(self, view: str, data, i: int) -> None:
        q = self.question
        if q is None or self.revealed or view not in q.views:
            return
        if view in ("M", "N"):
            self._pick_cell(view, int(data["row"][i]), int(data["col"][i]))
        else:
            self._pick_cell(view, int(data["ty"][i]), int(data["tx"][i]))

    def _locked(self) -> bool:
        """Whether the picks can no longer change: revealed, or sent to the class."""
        return self.revealed or (self.on_submit is not None and self.submitted)

    def _pick_cell(self, view: str, a: int, b: int) -> None:
        """Pick (or unpick) cell ``(a, b)`` of ``view``: (row, col) or (ty, tx)."""
        q = self.question
        if q is None or self._locked() or view not in q.views:
            return
        pick = (view, int(a), int(b))
        if q.multiple:
            self.picks ^= {pick}
        else:
            self.picks = set() if self.picks == {pick} else {pick}
        self.refresh()

    def _on_choice(self, event) -> None:
        q = self.question
        if q is None or self._locked() or event.new is None:
            return
        if event.new in q.choices:
            self.picks = {("choice", q.choices.index(event.new))}
            self.refresh()

    # -------------------------------------------------------- questions
    def _pin(self) -> dict | None:
        q = self.question
        if q is None or self.revealed:
            return None
        return {
            "source": self._source,
            "by": q.block[0],
            "bx": q.block[1],
            "granularity": q.granularity,
            "order": q.order,
            "step": q.view_step,
        }

    def _here(self) -> int:
        """The current moment as a step of the block's lockstep sub-step replay.

        A whole phase (phase granularity) is asked about from its first
        sub-step: the question is about the phase shown, not the next one.
        """
        s = self.state
        if s.granularity == "substep" and s.order == "lockstep" or s.frame is None:
            return s.step
        return substep_moment(s.trace, (s.by, s.bx), s.frame.step)

    def _working(self, action) -> None:
        """Run ``action`` (a button's work), then hide the page's "Working …"."""
        try:
            action()
        finally:
            self.busy.done_now()

    def ask_here(self) -> None:
        """Ask the first question of this block at the current step or after it."""
        s = self.state
        if s.trace is None:
            return
        self.quiz, self.index = [], -1
        q = question_at(s.trace, (s.by, s.bx), self._here())
        if q is None:
            q = question_at(s.trace, (s.by, s.bx), 0)
        if q is None:
            s.show("No question to ask about this block.", "info")
            return
        self.ask(q)

    def start_quiz(self) -> None:
        """A short quiz on the current block (5-10 questions, in the replay's order)."""
        s = self.state
        if s.trace is None:
            return
        try:
            self.quiz = quiz(s.trace, (s.by, s.bx))
        except (ValueError, KeyError) as exc:
            s.show(f"No quiz for this trace: {exc}", "info")
            return
        self.answers = {}
        self.index = 0
        self.ask(self.quiz[0])

    def ask(self, q: Question) -> None:
        """Open ``q``: pin the view at its step, hide what comes next, wait for picks.

        Parameters
        ----------
        q : Question
            A question of the block's quiz.
        """
        self.question, self.picks, self.revealed = q, set(), False
        self.correct, self.submitted, self.sent = None, False, None
        self._mark_scenes()
        self._source = self.state.source
        self._set_conceal(True)
        self.state.param.update(
            playing=False,
            by=q.block[0],
            bx=q.block[1],
            granularity=q.granularity,
            order=q.order,
            step=q.view_step,
        )
        self.choices.value = None
        self.choices.options = list(q.choices)
        self.choices.visible = bool(q.choices)
        self.refresh()

    def submit(self) -> None:
        """Hand in the picks: reveal now, or send them to the class (``on_submit``)."""
        q = self.question
        if q is None or self.revealed:
            return
        if self.on_submit is not None:
            if self.submitted:  # sent once: the class counts that answer
                return
            self.submitted, self.sent = True, set(self.picks)
            self.on_submit(q, set(self.sent))
            self.refresh()
            return
        self.reveal()

    def skip(self) -> None:
        """Reveal without an answer (it scores as skipped)."""
        if self.question is not None and not self.revealed:
            self.reveal(skipped=True)

    def reveal(self, skipped: bool = False) -> None:
        """Show the answer: go to the reveal step, say right or wrong and why.

        Parameters
        ----------
        skipped : bool
            The student skipped the question: no picks are graded.
        """
        q = self.question
        if q is None:
            return
        self.revealed = True
        if self.on_submit is not None:  # a class: grade what was sent, as the class counts it
            self.picks = set(self.sent or ())
            skipped = skipped or self.sent is None
        self.correct = None if skipped else q.check(self.picks)
        if 0 <= self.index < len(self.quiz):
            self.answers[self.index] = None if skipped else sorted(self.picks)
        self._set_conceal(False)
        self.state.param.update(
            by=q.block[0],
            bx=q.block[1],
            granularity=q.granularity,
            order=q.order,
            step=q.reveal_step,
        )
        self.refresh()

    def next(self) -> None:
        """The quiz's next question (or the score at the end)."""
        if self.quiz and self.index + 1 < len(self.quiz):
            self.index += 1
            self.ask(self.quiz[self.index])
        else:
            self.close()

    def close(self) -> None:
        """Leave question mode (the quiz's score stays shown)."""
        self.question, self.picks, self.revealed, self.correct = None, set(), False, None
        self._set_conceal(False)
        self.refresh()

    def _set_conceal(self, on: bool) -> None:
        for other in self.dash.scenes:  # every mode's scene
            other.conceal = on
        scene = self.dash.scene
        if scene is not None and self.state.frame is not None and scene.trace is self.state.trace:
            scene.update(self.state.frame)

    # ------------------------------------------------------------- views
    def _marks(self) -> dict[str, dict[str, list]]:
        out: dict[str, dict[str, list]] = {
            v: {"x": [], "y": [], "color": [], "dash": [], "label": []} for v in _CLICK_VIEWS
        }

        def add(pick, color, label):
            view = pick[0]
            if view not in out:
                return
            a, b = pick[1], pick[2]
            d = out[view]
            d["x"].append(b + 0.5)
            d["y"].append(a + 0.5)
            d["color"].append(color)
            d["dash"].append("solid")
            d["label"].append(label)

        q = self.question
        if q is None:
            return out
        if not self.revealed:
            for p in self.picks:
                add(p, PICK, "")
        else:
            for p in q.answer:
                add(p, RIGHT, "✓")
            for p in self.picks - q.answer:
                add(p, WRONG, "✗")
        return out

    def refresh(self) -> None:
        """Write the question box again from the question, the picks and the reveal."""
        try:
            self._show_now()
        finally:
            # the box goes to the page once its words are written, not empty before them
            self._place_box()

    def _show_now(self) -> None:
        q = self.question
        # presenter mode keeps the page to the projector: the panel only while asking
        self.panel.visible = not self.state.presenter or q is not None
        self._draw_marks()
        self.box.visible = q is not None
        in_class = self.observer or self.on_submit is not None
        for starter in self.starters:
            starter.visible = (q is None or self.revealed) and not in_class
        if q is None:
            self._show_no_question()
        else:
            self.prompt.object = self._prompt_html(q)
            self.picked.object = self._picks_html(q)
            self.choices.disabled = self._locked() or self.observer
            self._show_buttons(in_class)
            self._show_result(q)
        self.dash.refresh_status()
        self._notify()

    def _draw_marks(self) -> None:
        """The picks (and the answer, revealed) on the views' mark sources."""
        marks = self._marks()
        if self._mark_sources is None and not any(d["x"] for d in marks.values()):
            return  # nothing to mark yet, and no sources made to mark it on
        for view, data in marks.items():
            # never shrink a source (BokehJS then fails on the glyphs' cached colours):
            # pad with marks at NaN, which are not drawn
            n = max(len(data["x"]), len(self.marks[view].data["x"]), 8)
            pad = n - len(data["x"])
            data["x"] += [float("nan")] * pad
            data["y"] += [float("nan")] * pad
            data["color"] += [PICK] * pad
            data["dash"] += ["solid"] * pad
            data["label"] += [""] * pad
            self.marks[view].data = data

    def _show_no_question(self) -> None:
        """No question open: the quiz's score (if a quiz ran), no buttons."""
        self.prompt.object = self._score_html()
        self.box.visible = bool(self.quiz) and self.index >= 0
        self.picked.object = ""
        self.result.visible = False
        for b in (self.submit_button, self.skip_button, self.next_button, self.close_button):
            b.visible = False

    def _prompt_html(self, q: Question) -> str:
        """The question's prompt, numbered within its quiz (or the class's numbering)."""
        in_quiz = bool(self.quiz) and self.index >= 0
        number = f"Question {self.index + 1} of {len(self.quiz)} · " if in_quiz else ""
        if self.number and not in_quiz:
            number = f"{self.number} · "
        return (
            f'<div id="vizmm-question" style="font-size:1.15em"><b>{number}</b>'
            f"{html.escape(q.prompt)}</div>"
        )

    def _picks_html(self, q: Question) -> str:
        """The answer picked so far, whether it is sent, and where to click."""
        mine = (
            answer_label(q, self.picks)
            if self.picks
            else ("nothing yet" if not q.multiple else "none")
        )
        where = " or ".join(q.views) if q.views != ("choice",) else "the options above"
        if self.observer:
            mine, where = "(the students answer on their pages)", ""
        wait = (
            " · sent (it can no longer change), waiting for the reveal"
            if self.submitted and not self.revealed
            else ""
        )
        mine = html.escape(render_text(mine, "unicode"))
        click = "" if self._locked() or not where else f" · click in {html.escape(where)}"
        return f'<span id="vizmm-picks">Your answer: <b>{mine}</b>{wait}{click}</span>'

    def _show_buttons(self, in_class: bool) -> None:
        """Submit (or Send, in class), Skip, Next and Close as the question stands."""
        self.submit_button.visible = not self.revealed and not self.observer
        sent = self.on_submit is not None and self.submitted
        self.submit_button.disabled = sent
        self.submit_button.label = (
            ("Sent" if sent else "Send") if self.on_submit is not None else "Submit"
        )
        self.skip_button.visible = not self.revealed and not in_class
        more = bool(self.quiz) and self.index + 1 < len(self.quiz)
        self.next_button.visible = self.revealed and bool(self.quiz) and self.on_submit is None
        self.next_button.label = "Next question" if more else "Show the score"
        self.close_button.visible = self.revealed and self.on_submit is None

    def _show_result(self, q: Question) -> None:
        """Revealed: right, not quite, skipped (or, observing, just the answer); else hidden."""
        if not self.revealed:
            self.result.visible = False
            return
        kind: Literal["info", "secondary", "success", "danger"]
        if self.observer:
            head, kind = "Revealed.", "info"
        elif self.correct is None:
            head, kind = "Skipped." if not self.on_submit else "No answer sent.", "secondary"
        elif self.correct:
            head, kind = "✓ Right.", "success"
        else:
            head, kind = "✗ Not quite.", "danger"
        self.result.object = (  # a Markdown pane: the book's notation, '*' kept
            f"<b>{head}</b> The answer: <b>{_md(q.answer_text)}</b>. {_md(q.explanation)}"
        )
        self.result.alert_type = kind
        self.result.visible = True

    def _score_html(self) -> str:
        if not self.quiz:
            return ""
        s = score(self.quiz, self.answers)
        return (
            f'<div id="vizmm-score" style="font-size:1.15em"><b>Score: {s.correct} of '
            f"{s.total}</b> ({s.answered} answered).</div>"
        )

    def _notify(self) -> None:
        for cb in self.on_change:
            cb()

    def status(self) -> dict:
        """``data-*`` of ``#vizmm-status``: the question's public part and the picks, no answer.

        Returns
        -------
        dict
            ``question`` ("asking", "revealed" or ""), ``question_kind``,
            ``quiz_index``, ``quiz_count``, ``picks`` (labels), ``correct``
            (True / False after the reveal, else None), ``score`` ("c/t"),
            ``sent`` (in a class: the picks sent, as labels; None: nothing sent).
        """
        q = self.question
        s = score(self.quiz, self.answers) if self.quiz else None
        return {
            "question": "" if q is None else ("revealed" if self.revealed else "asking"),
            "question_kind": "" if q is None else q.kind,
            "quiz_index": self.index,
            "quiz_count": len(self.quiz),
            "picks": sorted(pick_label(p) for p in self.picks),
            "correct": self.correct if self.revealed else None,
            "score": "" if s is None else f"{s.correct}/{s.total}",
            "sent": None if self.sent is None else sorted(pick_label(p) for p in self.sent),
        }

    def __panel__(self):
        return self.panel


def _md(text: str) -> str:
    """Text for a Markdown pane: subscripts as Unicode, HTML and Markdown marks escaped."""
    out = html.escape(render_text(text, "unicode"))
    for mark in ("\\", "*", "_", "`", "[", "]"):
        out = out.replace(mark, "\\" + mark)
    return out


def _undimmed(renderer) -> None:
    """Draw the renderer's unselected glyphs as its glyph (same alphas)."""
    glyph, other = renderer.glyph, renderer.nonselection_glyph
    if other is None or isinstance(other, str):
        return
    for attr in ("fill_alpha", "line_alpha", "text_alpha", "hatch_alpha"):
        if hasattr(glyph, attr) and hasattr(other, attr):
            setattr(other, attr, getattr(glyph, attr))


def question_mode(dash):
    """The dashboard's add-on: give ``dash`` a question mode (``dash.questions``).

    Pass it in ``Dashboard(addons=[question_mode])``.

    Parameters
    ----------
    dash : vizmm_apps.dashboard.Dashboard
        The page, while it builds its widgets.

    Returns
    -------
    pn.Column
        The question box, shown under the dashboard's controls.
    """
    dash.questions = QuestionMode(dash)
    dash.questions.sync_buttons()
    dash.questions.refresh()
    return dash.questions.panel
