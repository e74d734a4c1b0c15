"""The findings of ``vizmm check`` in the dashboard: a list beside the block replay.

:class:`FindingsPanel` lists the findings of the trace shown
(:func:`vizmm.replay.findings.trace_findings`: every wrong term, wrong P,
race, out-of-bounds access and warning of :func:`vizmm.analysis.check.findings`,
ordered by when they happened), filtered by kind; clicking a row goes to
the finding's block, step and thread (through
:mod:`vizmm.replay.navigator`) and selects it, so the scene marks it on M,
N, P, Mds, Nds, the threads and the Fig. 5.8 table (the frame carries the
marks: :func:`vizmm.replay.findings.with_finding`). A trace with no access
log, or one whose findings are empty, shows nothing here.

A view only: the findings are worked out once per trace and kept with it;
for a large access log they are worked out off the server's event loop and
the list is filled when they are ready.
"""

from __future__ import annotations

import threading

import panel as pn

from vizmm.analysis.check import counted
from vizmm.analysis.finding_kinds import kinds
from vizmm.replay.findings import finding_step, trace_findings
from vizmm.replay.navigator import Position, place
from vizmm_apps.parts import to_page

__all__ = ["BACKGROUND_EVENTS", "PAGE_ROWS", "FindingsPanel", "page_notes", "row_label"]

PAGE_ROWS = 200  # rows of the list sent to the page at a time
#: Access logs with more events (log slots x threads x events) are checked in a thread.
BACKGROUND_EVENTS = 200_000
_ALL = "all"


def page_notes(found) -> str:
    """What the list means by the kinds it holds: each kind's ``page_note``, once, in kind order.

    Parameters
    ----------
    found : sequence of Finding
        The findings listed (:func:`vizmm.analysis.check.findings`).

    Returns
    -------
    str
        Markdown: each note of a kind some finding is of, after a blank line;
        empty when none of their kinds has a note.
    """
    held = {f.kind for f in found}
    return "".join(f"\n\n{k.page_note}" for k in kinds() if k.page_note and k.name in held)


def row_label(i: int, finding) -> str:
    """Row ``i`` (0-based) of the list in words: ``'1. [error] wrong term: block (0,0), …'``.

    Parameters
    ----------
    i : int
        The finding's number in the trace's list.
    finding : Finding
        A finding of :func:`vizmm.analysis.check.findings`.

    Returns
    -------
    str
    """
    return f"{i + 1}. [{finding.severity}] {finding.kind}: {finding.message}"


def _has_log(trace) -> bool:
    events = getattr(trace, "log_events", None)
    return events is not None and bool(events.size)


class FindingsPanel(pn.viewable.Viewer):
    """The findings of the trace shown: counts, a kind filter and a list; a click goes there.

    Hidden for a trace without findings (no access log, or a clean kernel).

    Parameters
    ----------
    state : vizmm_apps.dashboard.DashboardState
        The dashboard's state: its ``trace`` is listed; a click sets ``by``,
        ``bx``, ``ty``, ``tx``, ``step`` and ``finding``.
    served : bool
        Whether the page runs in a Bokeh server session (large access logs
        are then checked in a thread).
    """

    def __init__(self, state, served: bool = False, **params):
        super().__init__(**params)
        self.state = state
        self._served = served
        self.summary = pn.pane.Markdown("", margin=(0, 10), sizing_mode="stretch_width")
        self.kind = pn.widgets.Select(label="kind", options={"every kind": _ALL}, width=260)
        # a plain <select> list box, as the barrier lab's hazard list (a click picks a row)
        self.table = pn.widgets.MultiSelect(
            options={}, value=[], size=10, width=900, css_classes=["vizmm-findings"]
        )
        self.kind.param.watch(self._refresh, "value")
        self.table.param.watch(self._on_select, "value")
        # The heading, summary, filter and list join the page when it is first
        # shown: most traces have no findings, and a new session then builds
        # and sends none of them.
        self._parts = [
            pn.pane.Markdown("#### Findings (vizmm check)", margin=(0, 10)),
            self.summary,
            self.kind,
            self.table,
        ]
        self.layout = pn.Column(
            sizing_mode="stretch_width", visible=False, css_classes=["vizmm-findings-panel"]
        )
        self._found: tuple = ()
        self._shown: list[int] = []  # finding numbers of the rows of the list
        self._of = None  # the trace the list is of
        self._ready = False  # the findings of self._of are worked out
        self._picking = False
        state.param.watch(self._on_trace, ["trace"])
        state.param.watch(self._on_url, ["url_finding"])
        state.param.watch(self._mark_selected, ["finding"])
        self._on_trace()

    # ------------------------------------------------------------ data
    def _on_trace(self, *events) -> None:
        trace = self.state.trace
        self._of, self._found, self._ready = trace, (), False
        if trace is None:
            self._show()
            return
        if not _has_log(trace):
            self._ready = True
            self._show()
            return
        doc = pn.state.curdoc if self._served else None
        if doc is None or trace.log_events.size <= BACKGROUND_EVENTS:
            self._found, self._ready = trace_findings(trace), True
            self._show()
            return
        self._reveal(True)
        self.summary.object = "Checking the access log of this trace for findings …"
        self.table.options = {}

        def work() -> None:
            found = trace_findings(trace)  # kept with the trace: computed once

            def ready() -> None:
                if self._of is trace:
                    self._found, self._ready = found, True
                    self._show()

            to_page(doc, ready)

        threading.Thread(target=work, name="vizmm-findings", daemon=True).start()

    def _reveal(self, shown: bool) -> None:
        """Show or hide the panel (its parts join the page when first shown)."""
        if shown and not self.layout.objects:
            self.layout.objects = list(self._parts)
        self.layout.visible = shown

    def _show(self) -> None:
        found = self._found
        self._reveal(bool(found))
        if not found:
            self.table.options = {}
            self._take_wanted()
            return
        counts: dict[str, int] = {}
        for f in found:
            counts[f.kind] = counts.get(f.kind, 0) + 1
        options = {"every kind": _ALL}
        options.update({f"{k} ({n})": k for k, n in counts.items()})
        keep = self.kind.value if self.kind.value in options.values() else _ALL
        self.kind.options = options
        self.kind.value = keep
        self._refresh()
        self._take_wanted()

    def _refresh(self, *events) -> None:
        found = self._found
        kind = self.kind.value
        rows = [i for i, f in enumerate(found) if kind in (_ALL, f.kind)]
        self._shown = rows[:PAGE_ROWS]
        errors = sum(f.severity == "error" for f in found)
        counts = ", ".join(label for label, k in self.kind.options.items() if k != _ALL)
        more = f" (the first {PAGE_ROWS} shown)" if len(rows) > PAGE_ROWS else ""
        self.summary.object = (
            f"**{counted(len(found), 'finding')}**, {counted(errors, 'error')}: {counts}. "
            f"Ordered by when they happened: the first is the one to fix. Click a row to go "
            f"to its block, step and thread; the scene marks it (solid: what went wrong, "
            f"dashed green: what the book's kernel uses there).{more}" + page_notes(found)
        )
        self.table.options = {row_label(i, found[i]): n for n, i in enumerate(self._shown)}
        self._mark_selected()

    def _mark_selected(self, *events) -> None:
        """Select the row of the state's finding (none when it is not listed)."""
        f = self.state.finding
        rows = [n for n, i in enumerate(self._shown) if i == f]
        if self.table.value != rows:
            self._picking = True
            try:
                self.table.value = rows
            finally:
                self._picking = False

    # ------------------------------------------------------------ the URL
    def _on_url(self, *events) -> None:
        if self.state.wanted_finding >= 0:
            self._take_wanted()

    def _take_wanted(self) -> None:
        """Select the finding the URL asked for, once this trace's findings are known."""
        s = self.state
        index = s.wanted_finding
        if index < 0 or s.trace is None or self._of is not s.trace or not self._ready:
            return
        s.wanted_finding = -1
        if index >= len(self._found):
            has = (
                f"this trace has {len(self._found):,} (1 to {len(self._found):,})"
                if self._found
                else "this trace has no findings of vizmm check"
            )
            s.ignored_in_url([f"finding={index + 1} ({has})"])
            return
        self.go(index)

    # ------------------------------------------------------------ a click
    def _on_select(self, event) -> None:
        picked = event.new or []
        if self._picking or len(picked) != 1 or not 0 <= picked[0] < len(self._shown):
            return
        self.go(self._shown[picked[0]])

    def go(self, index: int) -> None:
        """Show finding ``index`` (0-based, of the trace's list): its block, step and thread.

        Parameters
        ----------
        index : int
            A finding's number in :func:`vizmm.replay.findings.trace_findings`.
            The page and its URL (``finding=N``) number them from 1: ``N - 1``.

        Raises
        ------
        IndexError
            When the trace has no finding ``index``.
        """
        s = self.state
        trace = s.trace
        if trace is None or not 0 <= index < len(self._found):
            raise IndexError(f"there is no finding {index + 1} (this trace has {len(self._found)})")
        f = self._found[index]
        block = tuple(f.block) if f.block is not None else (s.by, s.bx)
        focus = tuple(f.thread) if f.thread is not None else None
        wanted = Position(block, focus, 0, s.granularity, s.order)
        placed = place(trace, wanted)
        if placed.replay is None:
            return
        step = finding_step(placed.replay, f)
        ty, tx = placed.position.focus or (-1, -1)
        by, bx = placed.position.block
        s.param.update(by=by, bx=bx, ty=ty, tx=tx, step=step, finding=index, playing=False)
        s.show(f"Finding {index + 1}: {f.message}", "info")

    def __panel__(self):
        return self.layout
