"""Where a finding of ``vizmm.check`` is in the block replay: its step and what to mark.

A :class:`vizmm.analysis.check.Finding` names a block, a thread, a phase
``ph`` and a turn ``k`` of the k loop; the replay of that block (Fig. 5.8's
steps) shows it at one step: a wrong term at its k-loop step, a race or an
out-of-bounds tile load at the load of its tile (Mds: load M, Nds: load
N), a wrong P at the write of P. A finding is read by its attributes
(``kind``, ``block``, ``thread``, ``phase``, ``k``, ``marks``, ``got``,
``expected``, ``other``, ``message``).

What a renderer marks for a finding is worked out here, once, from the
finding's ``marks`` (:func:`finding_marks`): the wrong factor and the one the
book's kernel multiplies, the racing pair, the out-of-bounds element, each a
:class:`Mark` on M, N, P, Mds, Nds or the threads; :func:`with_finding`
puts them on a frame of the finding's block (:attr:`Frame.finding`), and
the Bokeh scene and the GIF frames draw them. :func:`trace_findings` lists a
trace's findings once and keeps them with the trace.
"""

from __future__ import annotations

import dataclasses
from typing import NamedTuple

from ..analysis.finding_kinds import FindingKind, finding_kind
from ..trace.derived import per_trace
from ..trace.notation import subscript as _sub  # M_{row,col}, written once
from .block import Frame, Replay, Sub
from .view_roles import names as _view_names

__all__ = [
    "FindingMarks",
    "Mark",
    "finding_marks",
    "finding_step",
    "finding_url",
    "trace_findings",
    "with_finding",
]

#: The views a mark may name, as the Bokeh scene and the GIF frames call them: those whose
#: role is ``markable`` (:mod:`vizmm.replay.view_roles`; a view spec's ``markable`` reads it).
MARK_VIEWS = _view_names(markable=True)
#: What a mark says: ``wrong`` (what the kernel used or did wrong), ``needed`` (what the
#: book's kernel uses there instead), ``used`` (a right factor of the wrong term),
#: ``other`` (the other thread: the racing one, or the one that stored the slot).
MARK_ROLES = ("wrong", "needed", "used", "other")


class Mark(NamedTuple):
    """One element, slot or thread a finding marks.

    Attributes
    ----------
    view : {'M', 'N', 'P', 'Mds', 'Nds', 'threads'}
    row, col : int
        The element ``(r, c)`` of M, N or P, the slot ``Mds[row][col]``, or the
        thread ``(ty, tx)``.
    role : {'wrong', 'needed', 'used', 'other'}
        See :data:`MARK_ROLES`.
    note : str
        What it is, in words (a hover).
    """

    view: str
    row: int
    col: int
    role: str
    note: str


@dataclasses.dataclass(frozen=True)
class FindingMarks:
    """What to mark for one finding in the replay of its block.

    Attributes
    ----------
    index : int
        The finding's number in :func:`trace_findings` (0-based).
    kind : str
        The finding's kind (``"wrong term"``, ``"race"``, ...).
    block : (by, bx)
    thread : (ty, tx) or None
    message : str
        The finding's sentence.
    marks : tuple of Mark
    table : (ty, tx, phase, k) or None
        The Fig. 5.8 table's Pvalue cell holding a wrong term (its thread and
        phase) and the term's ``k``; None for other kinds.
    """

    index: int
    kind: str
    block: tuple[int, int]
    thread: tuple[int, int] | None
    message: str
    marks: tuple[Mark, ...]
    table: tuple[int, int, int, int] | None = None

    def of(self, view: str) -> list[Mark]:
        """The marks on ``view`` (one of :data:`MARK_VIEWS`).

        Parameters
        ----------
        view : str
            One of :data:`MARK_VIEWS`.
        """
        return [m for m in self.marks if m.view == view]


@per_trace(maxsize=1)
def trace_findings(trace) -> tuple:
    """Every finding of ``trace`` (:func:`vizmm.analysis.check.findings`), worked out once.

    Kept with the trace (:func:`vizmm.trace.derived.per_trace`), so every page
    showing the trace shares one list.

    Parameters
    ----------
    trace : vizmm.trace.Trace

    Returns
    -------
    tuple of Finding
        Ordered by when they happened; empty for a trace without an access log
        (one not recorded through the instrumenter) or one whose kernel is not
        a matrix multiplication of three global arrays.
    """
    from ..analysis.check import findings

    if getattr(trace, "log_events", None) is None or not trace.log_events.size:
        return ()
    try:
        return tuple(findings(trace))
    except ValueError:
        return ()


def _term_marks(finding, marks: dict, thread) -> tuple[list[Mark], tuple | None]:
    """A term's marks (drawn ``'term'``): its factors, the book's, their slots; its table cell."""
    out: list[Mark] = []
    got = finding.got or (None, None)
    want = finding.expected or (None, None)
    for side, view in ((0, "M"), (1, "N")):
        g, w = got[side], want[side]
        if g is not None:
            out.extend(_factor_marks(view, g, w, marks.get(f"{view}ds", ())))
        if w is not None and (g is None or tuple(g) != tuple(w)):
            note = f"{_sub(view, *w)}: the factor the book's kernel multiplies here"
            out.append(Mark(view, int(w[0]), int(w[1]), "needed", note))
    if finding.got is None:
        for r, c in marks.get("P", ()):
            out.append(Mark("P", int(r), int(c), "wrong", f"{_sub('P', r, c)}: a term missing"))
        return out, None
    if thread is not None and finding.phase is not None:
        return out, (thread[0], thread[1], int(finding.phase), int(finding.k or 0))
    return out, None


def _factor_marks(view: str, g, w, slots) -> list[Mark]:
    """The factor ``g`` of M or N a term multiplied (``used`` when it is ``w``) and its slots."""
    role = "used" if w is not None and tuple(g) == tuple(w) else "wrong"
    words = "multiplied" + ("" if role == "used" else ", not the book's factor")
    out = [Mark(view, int(g[0]), int(g[1]), role, f"{_sub(view, *g)}: {words}")]
    for r, c in slots:
        note = f"{view}ds[{r}][{c}] held {_sub(view, *g)}, read for this term"
        out.append(Mark(f"{view}ds", int(r), int(c), role, note))
    return out


def _element_marks(finding, marks: dict, thread) -> tuple[list[Mark], tuple | None]:
    """A finding's marked elements and slots (drawn ``'elements'``), each what went wrong."""
    out: list[Mark] = []
    for view in ("M", "N", "P", "Mds", "Nds"):
        for r, c in marks.get(view, ()):
            name = f"{view}[{r}][{c}]" if view.endswith("ds") else _sub(view, r, c)
            out.append(Mark(view, int(r), int(c), "wrong", f"{name}: {finding.kind}"))
    return out, None


#: How each drawing of :data:`vizmm.analysis.finding_kinds.DRAWINGS` marks a finding:
#: ``(marks, table cell)`` from the finding, its ``marks`` and its thread.
_DRAW = {"term": _term_marks, "elements": _element_marks}


def _thread_marks(finding, marks: dict, thread, kind: FindingKind) -> list[Mark]:
    """The threads a finding marks: its own (``wrong``), the others (``other``) in words."""
    other = getattr(finding, "other", None)
    out: list[Mark] = []
    seen: set = set()
    for ty, tx in marks.get("threads", ()) or ((thread,) if thread else ()):
        who = (int(ty), int(tx))
        if who in seen:
            continue
        seen.add(who)
        if who == thread:
            out.append(Mark("threads", *who, "wrong", f"thread ({who[0]},{who[1]}): the finding's"))
            continue
        why = kind.other_thread or (
            "stored the slot the wrong factor was read from"
            if other is not None and tuple(other) == who
            else "involved"
        )
        out.append(Mark("threads", *who, "other", f"thread ({who[0]},{who[1]}): {why}"))
    return out


def finding_marks(finding, index: int = 0) -> FindingMarks | None:
    """The marks of ``finding`` in its block's replay (None: a finding of no block).

    How a finding is marked is its kind's (:attr:`FindingKind.drawn
    <vizmm.analysis.finding_kinds.FindingKind>`). A term (``'term'``: a
    wrong term) marks the factors multiplied (``wrong`` where a factor is
    not the book's, ``used`` where it is), the factors the book's kernel
    multiplies there (``needed``), the slots of Mds and Nds they were read
    from, and the Fig. 5.8 table's cell of that term; a missing term marks
    its factors as ``needed`` and its P element. Elements (``'elements'``: a
    race, an out-of-bounds access, a wrong P, ...) mark each element or slot
    the finding names. Every kind marks its thread (``wrong``) and the other
    threads it names (``other``: the other thread of a race, the one that
    stored the slot a wrong factor was read from).

    Parameters
    ----------
    finding : Finding
        A finding of :func:`vizmm.analysis.check.findings`.
    index : int
        Its number in the trace's list (:func:`trace_findings`).

    Returns
    -------
    FindingMarks or None
    """
    if finding.block is None:
        return None
    kind = finding_kind(finding.kind)
    marks = dict(getattr(finding, "marks", {}) or {})
    thread = None if finding.thread is None else (int(finding.thread[0]), int(finding.thread[1]))
    out, table = _DRAW[kind.drawn](finding, marks, thread)
    out += _thread_marks(finding, marks, thread, kind)
    block = tuple(int(v) for v in finding.block)
    return FindingMarks(
        index, finding.kind, (block[0], block[1]), thread, finding.message, tuple(out), table
    )


def with_finding(frame: Frame, marks: FindingMarks | None) -> Frame:
    """``frame`` with ``marks`` on it (:attr:`Frame.finding`) when it shows the finding's block.

    Parameters
    ----------
    frame : Frame
        A frame of any block's replay.
    marks : FindingMarks or None
        The selected finding's marks (:func:`finding_marks`); None: none.

    Returns
    -------
    Frame
        ``frame`` itself when there is nothing to mark on its block; else a
        copy whose :attr:`Frame.key` names the finding too (renderers share
        work between frames of equal keys).
    """
    if marks is None or tuple(frame.block) != marks.block:
        return frame
    key = (*frame.key, ("finding", marks.index)) if frame.key else ()
    return dataclasses.replace(frame, finding=marks, key=key)


def finding_step(replay: Replay, finding) -> int:
    """The step number (0-based) of ``replay`` at which ``finding`` shows.

    Parameters
    ----------
    replay : Replay
        A replay of the finding's block (any granularity or order).
    finding : Finding
        A finding of :func:`vizmm.check` (``kind``, ``phase``, ``k``, ``marks``).

    Returns
    -------
    int
        0 (the start) for a finding of the whole launch or one without a phase.
    """
    last = len(replay.steps) - 1
    step, ph = finding_kind(finding.kind).step, finding.phase
    if step == "P written" or (step == "k loop" and finding.got is None):
        return last  # P written (a missing term shows in what was stored)
    if ph is None or ph >= replay.trace.n_phases:
        return 0
    try:
        return replay.index_of(ph, *_substep(replay, finding, step))
    except ValueError:
        return 0


def _substep(replay: Replay, finding, step: str) -> tuple[Sub, int | None]:
    """The substep and ``k`` of ``replay`` where a finding whose kind goes to ``step`` shows."""
    marks = getattr(finding, "marks", {}) or {}
    if replay.granularity == "phase":
        return Sub.PHASE, None
    if step == "k loop":
        return Sub.K, min(int(finding.k or 0), replay.trace.tile_width - 1)
    if "Nds" in marks and "Mds" not in marks or "N" in marks and "M" not in marks:
        return Sub.LOAD_N, None
    return Sub.LOAD_M, None


def finding_url(trace_name: str, replay: Replay, finding, port: int = 5006, index: int = 0) -> str:
    """The dashboard's address showing ``finding`` in a trace given to ``vizmm serve --traces``.

    Parameters
    ----------
    trace_name : str
        The file's name as the server offers it (``file:<name>``).
    replay : Replay
        A replay of the finding's block at substep granularity.
    finding : Finding
    port : int
        The server's port (``vizmm serve``'s default 5006).
    index : int
        The finding's number in :func:`trace_findings` (0-based); the URL's
        ``finding`` is ``index + 1``, as the page's Findings list numbers it.

    Returns
    -------
    str
        ``http://localhost:PORT/dashboard?trace=file:NAME&by=..&bx=..&ty=..&tx=..&step=N
        &finding=I`` (the step and the finding 1-based, as the page numbers them): the
        page selects the finding in its list and shows its block, step and thread.
    """
    from urllib.parse import quote

    by, bx = finding.block or (0, 0)
    ty, tx = finding.thread or (-1, -1)
    step = finding_step(replay, finding) + 1
    return (
        f"http://localhost:{port}/dashboard?trace={quote('file:' + trace_name)}"
        f"&by={by}&bx={bx}&ty={ty}&tx={tx}&step={step}&finding={int(index) + 1}"
    )
