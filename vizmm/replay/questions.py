"""Predict, then reveal: questions generated from a trace, answered by clicking in the views.

A :class:`Question` is asked at one step of a block's replay (``view_step``:
the views show the state *before* the answer) and revealed at a later step
(``reveal_step``: the views show the answer). The student answers by picking
cells of the views:

* ``("M", row, col)`` / ``("N", row, col)``: an element of M or N;
* ``("Mds", ty, tx)`` / ``("Nds", ty, tx)``: a slot of shared memory;
* ``("threads", ty, tx)``: a thread of the block;
* ``("choice", i)``: option ``i`` of :attr:`Question.choices` (counts).

Kinds of question (PMPP 4th ed., Section 5.3-5.5):

``copy_m`` / ``copy_n``
    Which M (N) element does thread (ty, tx) copy into Mds[ty][tx]
    (Nds[ty][tx]) in phase ph (Fig. 5.8, columns 2 and 3 / 5 and 6)?
``zero_fill``
    Which Mds and Nds slots are zero-filled in this phase (Fig. 5.13, lines
    21 and 24)?
``wrong_element``
    The unchecked kernel (Fig. 5.9) indexes an element outside a row of M
    (N): which element does it actually read (Fig. 5.11/5.12: M_{0,3} is
    M_{1,0} in the linearized layout)?
``barrier_wait``
    In the recorded order, which threads are still waiting at barrier 1
    when the last thread arrives and the barrier releases?
``hazard``
    Barrier lab, a kernel without barrier 1: which threads read a wrong
    element of Mds or Nds at this k (read-after-write, Section 5.4)? From
    ``vizmm.hazards(trace)`` and the recorded reads.
``loads``
    How many global loads has this block made after phase ph, with the
    tiled kernel and with the naive kernel (Fig. 3.11)?

The answers live in :class:`Question` only; :meth:`Question.public` is what
a page may show before the reveal. NumPy only (the replay layer).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from ..analysis.hazards import hazards
from ..trace import Access, Trace
from ..trace.notation import subscript as _sub  # M_{row,col}, written once
from .block import Replay, Sub
from .view_roles import names as _view_names

__all__ = [
    "KINDS",
    "VIEWS",
    "Question",
    "Score",
    "block_questions",
    "quiz",
    "question_at",
    "pick_label",
    "answer_label",
    "score",
]

#: Kinds of question, in the order a quiz asks them within a phase.
KINDS = ("copy_m", "copy_n", "wrong_element", "zero_fill", "barrier_wait", "hazard", "loads")

#: Views a student clicks in (names of the Bokeh scene's figures: those whose role is
#: ``pickable``, :mod:`vizmm.replay.view_roles`), and "choice" (an option of a count).
VIEWS = (*_view_names(pickable=True), "choice")

#: Most threads a question asks the student to click one by one (a 4 x 4 block).
MAX_CLICKS = 16

#: Fewest and most questions in a quiz.
QUIZ_MIN, QUIZ_MAX = 5, 10


def pick_label(pick: Sequence) -> str:
    """A pick in the book's notation: ``M_{1,2}``, ``Mds[0][1]``, ``thread (1,0)``, ``option 2``.

    Parameters
    ----------
    pick : sequence
        ``(view, index, ...)``: a view name (``'M'``, ``'Mds'``, ``'threads'``,
        ``'choice'``, ...) and its indices.

    Raises
    ------
    ValueError
        For a pick of an unknown view.
    """
    view = pick[0]
    if view in ("M", "N"):
        return _sub(view, int(pick[1]), int(pick[2]))
    if view in ("Mds", "Nds"):
        return f"{view}[{int(pick[1])}][{int(pick[2])}]"
    if view == "threads":
        return f"thread ({int(pick[1])},{int(pick[2])})"
    if view == "choice":
        return f"option {int(pick[1]) + 1}"
    raise ValueError(f"unknown view {view!r} in a pick; views are {', '.join(VIEWS)}")


def _normal(pick: Sequence) -> tuple:
    view = str(pick[0])
    if view not in VIEWS:
        raise ValueError(f"unknown view {view!r} in a pick; views are {', '.join(VIEWS)}")
    n = 2 if view == "choice" else 3
    if len(pick) != n:
        raise ValueError(f"a pick of {view!r} has {n - 1} indices, got {tuple(pick)!r}")
    return (view, *(int(v) for v in pick[1:]))


@dataclasses.dataclass(frozen=True)
class Question:
    """One question about one block of a trace, with its answer (keep it on the server).

    Attributes
    ----------
    kind : str
        One of :data:`KINDS`.
    block : (by, bx)
    phase : int
        The phase ``ph`` asked about.
    granularity, order : str
        The replay the steps refer to (``"substep"``; ``"lockstep"``, or
        ``"recorded"`` for ``barrier_wait``).
    view_step : int
        Step shown while asking: the state before the answer.
    reveal_step : int
        Step shown at the reveal: the answer is drawn.
    prompt : str
        The question, in words.
    views : tuple of str
        Where the student clicks (see :data:`VIEWS`).
    choices : tuple of str
        Options of a ``"choice"`` question (empty otherwise).
    multiple : bool
        Whether the answer is a set of several picks (click all of them).
    answer : frozenset of tuple
        The correct picks (may be empty: "none"; then submit no pick).
    explanation : str
        Why, in the book's terms, shown at the reveal.
    thread : (ty, tx) or None
        The thread the question names (copies, wrong elements, the last
        arrival at the barrier).
    """

    kind: str
    block: tuple[int, int]
    phase: int
    granularity: str
    order: str
    view_step: int
    reveal_step: int
    prompt: str
    views: tuple[str, ...]
    choices: tuple[str, ...]
    multiple: bool
    answer: frozenset
    explanation: str
    thread: tuple[int, int] | None = None

    def check(self, picks: Iterable[Sequence]) -> bool:
        """Whether ``picks`` is exactly the answer (order and repeats do not matter).

        Parameters
        ----------
        picks : iterable of sequence
            The student's picks, each as :func:`pick_label` reads them.

        Raises
        ------
        ValueError
            For a pick of an unknown view or with the wrong number of indices.
        """
        return frozenset(_normal(p) for p in picks) == self.answer

    def public(self) -> dict:
        """What a page may hold before the reveal: no answer, no explanation.

        Returns
        -------
        dict
            ``kind``, ``block``, ``phase``, ``granularity``, ``order``,
            ``view_step``, ``prompt``, ``views``, ``choices``, ``multiple``.
        """
        return {
            "kind": self.kind,
            "block": list(self.block),
            "phase": self.phase,
            "granularity": self.granularity,
            "order": self.order,
            "view_step": self.view_step,
            "prompt": self.prompt,
            "views": list(self.views),
            "choices": list(self.choices),
            "multiple": self.multiple,
        }

    @property
    def answer_text(self) -> str:
        """The answer in words (``M_{1,2}``; ``none``; ``option 1: 8 tiled · 16 naive``)."""
        return answer_label(self, self.answer)


def answer_label(question: Question, picks: Iterable[Sequence]) -> str:
    """Picks of ``question`` in words, sorted (``none`` for no pick); options by their text.

    Parameters
    ----------
    question : Question
        The question the picks answer.
    picks : iterable of sequence
        The picks, each as :func:`pick_label` reads them.
    """
    picks = sorted(_normal(p) for p in picks)
    if not picks:
        return "none"
    words = []
    for p in picks:
        if p[0] == "choice" and 0 <= p[1] < len(question.choices):
            words.append(question.choices[p[1]])
        else:
            words.append(pick_label(p))
    return ", ".join(words)


@dataclasses.dataclass(frozen=True)
class Score:
    """The result of a quiz: ``correct`` of ``total``; ``answered`` were not skipped."""

    correct: int
    answered: int
    total: int

    @property
    def percent(self) -> float:
        """Share of correct answers, 0 to 100 (0 for an empty quiz)."""
        return 100.0 * self.correct / self.total if self.total else 0.0


def score(questions: Sequence[Question], answers: Mapping[int, Iterable[Sequence] | None]) -> Score:
    """Score ``answers`` (question index -> picks, None or missing: skipped).

    Parameters
    ----------
    questions : sequence of Question
        A quiz.
    answers : mapping of int to picks or None
        Question index to its picks; None or missing: skipped.
    """
    correct = answered = 0
    for i, q in enumerate(questions):
        a = answers.get(i)
        if a is None:
            continue
        answered += 1
        correct += bool(q.check(a))
    return Score(correct, answered, len(questions))


# ------------------------------------------------------------ generation
class _Block:
    """The records of one block, and the replays the steps refer to."""

    def __init__(self, trace: Trace, block: tuple[int, int]):
        self.trace = trace
        self.block = (int(block[0]), int(block[1]))
        self.lock = Replay(trace, self.block, "substep", "lockstep")
        self._recorded: Replay | None = None
        self.T = trace.tile_width
        self.slot = trace.slot(self.block)

    @property
    def recorded(self) -> Replay:
        if self._recorded is None:
            self._recorded = Replay(self.trace, self.block, "substep", "recorded")
        return self._recorded

    def before_loads(self, ph: int) -> int:
        """The step just before phase ``ph``'s M loads (start, or barrier 2 of ph - 1)."""
        return self.lock.index_of(ph, Sub.LOAD_M) - 1

    def records(self, ph: int):
        return self.trace.load_records(self.block, ph)

    def where(self) -> str:
        return f"block ({self.block[0]},{self.block[1]})"

    def load_steps(self, ph: int, which: str) -> tuple[int, int]:
        """Phase ``ph``'s steps before and after the loads of ``which`` (M or N) into slots."""
        if which == "M":
            return self.before_loads(ph), self.lock.index_of(ph, Sub.LOAD_M)
        return self.lock.index_of(ph, Sub.LOAD_M), self.lock.index_of(ph, Sub.LOAD_N)

    def question(
        self,
        kind: str,
        ph: int,
        steps: tuple[int, int],
        views: tuple[str, ...],
        answer: Iterable[tuple],
        prompt: str,
        explanation: str,
        *,
        order: str = "lockstep",
        choices: tuple[str, ...] = (),
        multiple: bool = False,
        thread: tuple[int, int] | None = None,
    ) -> Question:
        """A question about phase ``ph`` of this block; ``steps``: (view, reveal) sub-steps."""
        return Question(
            kind=kind,
            block=self.block,
            phase=ph,
            granularity="substep",
            order=order,
            view_step=steps[0],
            reveal_step=steps[1],
            prompt=prompt,
            views=views,
            choices=choices,
            multiple=multiple,
            answer=frozenset(answer),
            explanation=explanation,
            thread=thread,
        )


def _thread_pick(threads: list, ph: int, salt: int, want=None) -> tuple[int, int] | None:
    if want is not None:
        return tuple(want) if tuple(want) in threads else None
    if not threads:
        return None
    return threads[(ph * 3 + salt) % len(threads)]


def _copy(b: _Block, ph: int, which: str, salt: int, want=None) -> Question | None:
    T = b.T
    base = 0 if which == "M" else 1
    recs = b.records(ph)
    ok = sorted(t for t, r in recs.items() if r[base].kind == Access.LOADED)
    t = _thread_pick(ok, ph, salt, want)
    if t is None:
        return None
    ty, tx = t
    rec = recs[t][base]
    by, bx = b.block
    if which == "M":
        how = (
            f"Row = by*TILE_WIDTH + ty = {by}*{T} + {ty} = {rec.row} and the column is "
            f"ph*TILE_WIDTH + tx = {ph}*{T} + {tx} = {rec.col}"
        )
        line = "Mds[ty][tx] = M[Row*Width + ph*TILE_WIDTH + tx]"
    else:
        how = (
            f"the row is ph*TILE_WIDTH + ty = {ph}*{T} + {ty} = {rec.row} and "
            f"Col = bx*TILE_WIDTH + tx = {bx}*{T} + {tx} = {rec.col}"
        )
        line = "Nds[ty][tx] = N[(ph*TILE_WIDTH + ty)*Width + Col]"
    name = _sub(which, rec.row, rec.col)
    prompt = (
        f"Phase {ph}, {b.where()}: which {which} element does thread ({ty},{tx}) copy "
        f"into {which}ds[{ty}][{tx}]? Click it in {which}."
    )
    why = (
        f"{line}: {how}, so thread ({ty},{tx}) copies {name} into {which}ds[{ty}][{tx}] (Fig. 5.8)."
    )
    answer = {(which, rec.row, rec.col)}
    steps = b.load_steps(ph, which)
    return b.question(f"copy_{which.lower()}", ph, steps, (which,), answer, prompt, why, thread=t)


def _zero_fill(b: _Block, ph: int) -> Question | None:
    if b.trace.kernel == "tiled":
        return None  # the unchecked kernel has no zero-fill
    recs = b.records(ph)
    answer = set()
    for (ty, tx), (m, n) in recs.items():
        if m.kind == Access.ZERO_FILL:
            answer.add(("Mds", ty, tx))
        if n.kind == Access.ZERO_FILL:
            answer.add(("Nds", ty, tx))
    j, k, l = b.trace.shape
    if answer:
        why = []
        for view, ty, tx in sorted(answer):
            r = recs[(ty, tx)][0 if view == "Mds" else 1]
            which = "M" if view == "Mds" else "N"
            nrows, ncols = (j, k) if which == "M" else (k, l)
            why.append(f"{view}[{ty}][{tx}] would hold {_sub(which, r.row, r.col)}")
        expl = (
            "; ".join(why) + f": outside the {j}x{k} M / {k}x{l} N, so the boundary test "
            "fails and the thread stores 0.0 (Fig. 5.13, lines 21 and 24); a 0.0 adds "
            "nothing to Pvalue."
        )
    else:
        expl = (
            f"Every element of phase {ph}'s tiles lies inside M and N: no thread's boundary "
            "test fails, so no slot is zero-filled."
        )
    prompt = (
        f"Phase {ph}, {b.where()}: which Mds and Nds slots are zero-filled? Click all of "
        "them (none: submit without a click)."
    )
    steps = (b.before_loads(ph), b.lock.index_of(ph, Sub.LOAD_N))
    return b.question("zero_fill", ph, steps, ("Mds", "Nds"), answer, prompt, expl, multiple=True)


def _wrong_element(b: _Block, ph: int, salt: int, want=None) -> list[Question]:
    recs = b.records(ph)
    out = []
    for which, base in (("M", 0), ("N", 1)):
        wrong = sorted(t for t, r in recs.items() if r[base].kind == Access.WRONG_ELEMENT)
        t = _thread_pick(wrong, ph, salt, want)
        if t is None:
            continue
        ty, tx = t
        rec = recs[t][base]
        j, k, l = b.trace.shape
        ncols = k if which == "M" else l
        ar, ac = rec.actual
        lin = rec.row * ncols + rec.col
        prompt = (
            f"Phase {ph}, {b.where()}, no boundary checks (Fig. 5.9): thread "
            f"({ty},{tx}) indexes {_sub(which, rec.row, rec.col)}, past the end of "
            f"a row of {which}. Which element does it actually read into "
            f"{which}ds[{ty}][{tx}]? Click it in {which}."
        )
        why = (
            f"{which} is stored row after row, {ncols} elements per row: "
            f"{_sub(which, rec.row, rec.col)} is at linear index {rec.row}*{ncols} + "
            f"{rec.col} = {lin}, which is {_sub(which, ar, ac)}. The kernel reads "
            "that element and the product it feeds corrupts Pvalue (Fig. 5.11, 5.12)."
        )
        steps = b.load_steps(ph, which)
        answer = {(which, ar, ac)}
        out.append(b.question("wrong_element", ph, steps, (which,), answer, prompt, why, thread=t))
    return out


def _barrier_wait(b: _Block, ph: int) -> Question | None:
    T = b.T
    if T * T > MAX_CLICKS:
        return None  # too many threads to click one by one
    ranks = b.recorded._ranks[ph, 0]
    if (ranks < 0).any():
        return None
    n = T * T
    ly, lx = (int(v) for v in np.argwhere(ranks == n - 1)[0])
    last = (ly, lx)
    answer = {("threads", ty, tx) for ty in range(T) for tx in range(T) if (ty, tx) != last}
    steps = b.recorded.steps
    arrivals = [i for i, s in enumerate(steps) if s.sub == Sub.ARRIVE_1 and s.phase == ph]
    partial = [i for i in arrivals if (steps[i].arrived or 0) < n]
    reveal = partial[-1] if partial else arrivals[-1]
    order = sorted((int(ranks[y, x]), (y, x)) for y in range(T) for x in range(T))
    first = ", ".join(f"({y},{x})" for _, (y, x) in order[: min(n, 6)])
    prompt = (
        f"Phase {ph}, {b.where()}, the order the trace recorded: thread "
        f"({last[0]},{last[1]}) is the last to arrive at barrier 1 (__syncthreads() "
        "after the loads). Which threads are still waiting at the barrier when it "
        "arrives? Click all of them."
    )
    why = (
        f"A barrier lets no thread go until every thread of the block has arrived: the "
        f"other {n - 1} threads (recorded order {first}{' …' if n > 6 else ''}) all wait "
        f"for thread ({last[0]},{last[1]}); then barrier 1 releases all {n} together, "
        "so no thread reads Mds/Nds before they are loaded (read-after-write)."
    )
    shown = (b.recorded.index_of(ph, Sub.LOAD_N), reveal)
    return b.question(
        "barrier_wait", ph, shown, ("threads",), answer, prompt, why,
        order="recorded", multiple=True, thread=last,
    )  # fmt: skip


def _hazard(b: _Block, ph: int) -> Question | None:
    tr = b.trace
    if 1 not in (tr.meta.get("drop_barrier") or []):
        return None
    rows = hazards(tr)
    if not len(rows):
        return None
    sel = rows[
        rows["wrong"]
        & (rows["kind"] == "RAW")
        & (rows["phase"] == ph)
        & (rows["block"][:, 0] == b.block[0])
        & (rows["block"][:, 1] == b.block[1])
    ]
    if not len(sel):
        return None
    ks, counts = np.unique(sel["k"], return_counts=True)
    k = int(ks[np.argmax(counts)])
    at = sel[sel["k"] == k]
    readers = sorted({(int(r[0]), int(r[1])) for r in at["reader"]})
    if len(readers) > MAX_CLICKS:
        return None
    why: list[str] = []
    for row in at:
        (rty, rtx), (wty, wtx) = row["reader"], row["writer"]
        sy, sx = row["slot"]
        text = (
            f"thread ({rty},{rtx}) read {row['array']}[{sy}][{sx}] before thread ({wty},{wtx}) "
            "had stored this phase's element there"
        )
        if text not in why:
            why.append(text)
    prompt = (
        f"Phase {ph}, {b.where()}: this kernel has no barrier 1 (no __syncthreads() "
        f"after the loads). At k = {k}, which threads read a wrong element of Mds or "
        "Nds in this run? Click them."
    )
    explanation = (
        "Without barrier 1 nothing makes every thread's loads happen before the other "
        "threads' reads (a read-after-write hazard, Section 5.4): "
        + "; ".join(why[:4])
        + (" …" if len(why) > 4 else "")
        + ". Those reads found another element (or the previous phase's), and "
        "Pvalue went wrong."
    )
    step = b.lock.index_of(ph, Sub.K, k)
    answer = {("threads", ty, tx) for ty, tx in readers}
    return b.question(
        "hazard", ph, (step - 1, step), ("threads",), answer, prompt, explanation, multiple=True
    )


def _loads(b: _Block, ph: int) -> Question:
    tr, T = b.trace, b.T
    rec = tr.loads[b.slot, : ph + 1]
    kinds = rec[..., [0, 3]]
    tiled = int(((kinds == Access.LOADED) | (kinds == Access.WRONG_ELEMENT)).sum())
    m_loads = int(np.isin(rec[..., 0], (Access.LOADED, Access.WRONG_ELEMENT)).sum())
    j, k, l = tr.shape
    by, bx = b.block
    valid = int(((by * T + np.arange(T)[:, None] < j) & (bx * T + np.arange(T)[None, :] < l)).sum())
    terms = min(k, (ph + 1) * T)
    naive = 2 * valid * terms
    # Distractors: the naive count and the tiled count swapped or per phase, and one tile.
    cands = [(tiled, naive), (naive, tiled), (tiled // (ph + 1), naive), (tiled, naive * T)]
    cands += [(2 * T * T, naive), (tiled, 2 * valid), (tiled + T * T, naive)]
    seen, options = set(), []
    for c in cands:
        if c not in seen and c[0] >= 0:
            seen.add(c)
            options.append(c)
        if len(options) == 4:
            break
    rot = (ph + by + bx) % len(options)
    options = options[rot:] + options[:rot]
    correct = options.index((tiled, naive))
    zero = 2 * T * T * (ph + 1) - tiled
    prompt = (
        f"{b.where()}: after phase {ph}, how many global loads of M and N has the block "
        "made with the tiled kernel, and how many would the naive kernel (Fig. 3.11) "
        "make for the same terms?"
    )
    why = (
        f"Tiled: each of phases 0..{ph} loads one M tile and one N tile, one element per "
        f"thread ({T}x{T} threads): {m_loads} M + {tiled - m_loads} N = {tiled} loads"
        + (f" ({zero} zero-filled slots read nothing)" if zero else "")
        + f". Naive: each of the {valid} threads with a P element reads one M and one N "
        f"element per term, {terms} terms so far: 2 x {valid} x {terms} = {naive}."
    )
    steps = (b.before_loads(ph), max(i for i, st in enumerate(b.lock.steps) if st.phase == ph))
    choices = tuple(f"{t} tiled · {n} naive" for t, n in options)
    answer = {("choice", correct)}
    return b.question("loads", ph, steps, ("choice",), answer, prompt, why, choices=choices)


def block_questions(
    trace: Trace,
    block: tuple[int, int] = (0, 0),
    kinds: Iterable[str] | None = None,
    thread: tuple[int, int] | None = None,
) -> list[Question]:
    """Every question of one block, phase by phase, in :data:`KINDS` order.

    Parameters
    ----------
    trace : Trace
        A trace of a tiled kernel ('tiled', 'boundary', 'general').
    block : (by, bx)
        A block recorded per thread.
    kinds : iterable of str, optional
        Only these kinds (default: all).
    thread : (ty, tx), optional
        Ask the copy and wrong-element questions about this thread (left out
        where its load is not of that kind); by default a thread per phase.

    Returns
    -------
    list of Question
        Kinds that do not apply are left out (no wrong element in a checked
        kernel, no zero-fill in the unchecked one, no ``barrier_wait`` without
        recorded arrivals).

    Raises
    ------
    ValueError
        For a naive-kernel trace or an unknown kind.
    KeyError
        When the block was not recorded per thread.
    """
    kinds = tuple(KINDS if kinds is None else kinds)
    bad = [k for k in kinds if k not in KINDS]
    if bad:
        raise ValueError(f"unknown question kind(s) {bad}; kinds are {', '.join(KINDS)}")
    if trace.kernel == "naive":
        raise ValueError("the naive kernel has no tiles or phases to ask about")
    b = _Block(trace, block)
    out: list[Question] = []
    for ph in range(trace.n_phases):
        for kind in KINDS:
            if kind not in kinds:
                continue
            qs: list[Question | None]
            if kind == "copy_m":
                qs = [_copy(b, ph, "M", 0, thread)]
            elif kind == "copy_n":
                qs = [_copy(b, ph, "N", 1, thread)]
            elif kind == "wrong_element":
                qs = [*_wrong_element(b, ph, 0, thread)]
            elif kind == "zero_fill":
                qs = [_zero_fill(b, ph)]
            elif kind == "barrier_wait":
                qs = [_barrier_wait(b, ph)]
            elif kind == "hazard":
                qs = [_hazard(b, ph)]
            else:
                qs = [_loads(b, ph)]
            out += [q for q in qs if q is not None]
    return out


def quiz(trace: Trace, block: tuple[int, int] = (0, 0), n: int = QUIZ_MAX) -> list[Question]:
    """A short quiz on one block: 5 to ``n`` questions (at most 10), in the replay's order.

    Every kind that applies is asked at least once (wrong elements and
    zero-fills where they happen, the barrier in phase 0, the loads after
    the first and the last phase); copies fill the rest, a phase at a time.

    Parameters
    ----------
    trace : Trace
        A trace of a tiled kernel.
    block : tuple of (int, int)
        (by, bx) of a block recorded per thread.
    n : int
        The most questions asked (never more than 10).

    Raises
    ------
    ValueError
        When ``n`` is outside 5..10, or for a naive-kernel trace.
    KeyError
        When the block was not recorded per thread.
    """
    if not QUIZ_MIN <= n <= QUIZ_MAX:
        raise ValueError(f"a quiz has {QUIZ_MIN} to {QUIZ_MAX} questions, got {n}")
    allq = block_questions(trace, block)
    nph = trace.n_phases
    must: list[Question] = []
    for q in allq:
        if q.kind == "barrier_wait" and q.phase == 0:
            must.append(q)
        elif q.kind == "loads" and q.phase in (0, nph - 1):
            must.append(q)
        elif q.kind in ("wrong_element", "zero_fill", "hazard") and q.answer:
            if not any(m.kind == q.kind and m.phase != q.phase for m in must):
                must.append(q)
        elif q.kind in ("copy_m", "copy_n") and q.phase == 0:
            must.append(q)
    rest = [q for q in allq if q not in must and q.kind in ("copy_m", "copy_n")]
    chosen = must[:n] + rest[: max(0, n - len(must))]
    if len(chosen) < QUIZ_MIN:  # a one-phase trace: add what is left
        chosen += [q for q in allq if q not in chosen][: QUIZ_MIN - len(chosen)]
    keep = {id(q) for q in chosen[:n]}
    return [q for q in allq if id(q) in keep]


def question_at(
    trace: Trace, block: tuple[int, int], step: int, order: str = "lockstep"
) -> Question | None:
    """The first question of the block asked at ``step`` or later (substep granularity).

    Only questions of the same ``order`` are considered (``barrier_wait`` is
    asked in recorded order). None when no question is left after ``step``.

    Parameters
    ----------
    trace : Trace
        The trace the questions are made from: a tiled kernel's, as for :func:`quiz`.
    block : tuple of (int, int)
        (by, bx) of the block asked about (recorded per thread).
    step : int
        A step number of the block's replay at substep granularity.
    order : {'lockstep', 'recorded'}
        The replay's order.
    """
    for q in sorted(block_questions(trace, block), key=lambda q: q.view_step):
        if q.order == order and q.view_step >= step:
            return q
    return None
