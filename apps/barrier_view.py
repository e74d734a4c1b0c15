"""The barrier lab in the dashboard: the hazard list beside the block replay.

:class:`HazardPanel` lists every hazard of the trace (from
``vizmm.analysis.hazards``), one row per reading thread, phase and ``k``
(:class:`~vizmm.analysis.hazards.HazardList`), a page at a time, filtered by
kind (RAW / WAR), block (the replayed one by default), phase and whether the
read went wrong in this run, with counts; clicking a row goes to that
block and step and follows that thread. For traces with both barriers it
says there is no hazard. The presets (``vizmm.serve.catalogue.LAB_PRESETS``) are
the 4 x 4, TILE_WIDTH 2 example of Fig. 5.8 with barrier 1, barrier 2 or both
removed, and races recorded on an NVIDIA H200.

A view only: what is a hazard and what was read wrong is computed by
``vizmm.analysis.hazards`` once per trace and shared by every session
(:func:`lab_findings`); the page receives one page of rows. The marks in
Mds, Nds, the threads, P and the Fig. 5.8 table are the frames'
(``vizmm.replay``), drawn by the scene.
"""

from __future__ import annotations

from typing import NamedTuple

import panel as pn
import param

from vizmm.analysis import hazards as hz
from vizmm.replay import Sub
from vizmm.replay.own import own_lab
from vizmm.replay.table import own_kernel
from vizmm.serve.catalogue import LAB_PRESETS
from vizmm.trace.derived import per_trace
from vizmm.trace.units import format_value
from vizmm_apps.parts import on_press

# LAB_PRESETS (key -> menu label) are defined with the other presets in vizmm.serve.catalogue.
__all__ = [
    "LAB_PRESETS",
    "PAGE_ROWS",
    "HazardPanel",
    "LabFindings",
    "lab_findings",
    "row_label",
    "wrong_words",
]
PAGE_ROWS = 200  # rows of the hazard list sent to the page at a time
_THIS_BLOCK = "this"  # the block filter's value for "the replayed block"
_ALL = "all"


class LabFindings(NamedTuple):
    """What the barrier lab found in one trace (read-only, shared by every session)."""

    hazards: hz.HazardList  # every hazard, one row per reading thread, phase and k
    wrong_reads: int  # recorded reads that returned a wrong element
    wrong_p: int  # P elements that came out wrong
    has_reads: bool  # whether the trace recorded the k loop's reads
    wrong: dict  # (by, bx, phase, k, ty, tx) -> what that thread found and should have, in words
    own: bool = False  # a kernel of the user's own: read from its access log (own_lab)


@per_trace(maxsize=1)
def lab_findings(trace) -> LabFindings:
    """The barrier lab's findings on ``trace``, computed once and kept with the trace.

    Parameters
    ----------
    trace : vizmm.trace.Trace

    Returns
    -------
    LabFindings
        ``(hazards, wrong_reads, wrong_p, has_reads)``: the
        :class:`~vizmm.analysis.hazards.HazardList`, the number of reads that
        returned a wrong element, of P elements that came out wrong, and
        whether the trace recorded the reads. For a kernel of the user's own
        (``Trace.user_kernel``), read from its access log
        (:func:`vizmm.replay.own.own_lab`: races by barrier epoch, reads
        judged against the P element each thread really computes), not
        from Fig. 5.9's indexing.

    Raises
    ------
    ValueError
        For a user kernel whose access log cannot be read as M, N and P.
    """
    if own_kernel(trace):
        lab = own_lab(trace)
        return LabFindings(
            hz.HazardList(lab.hazards),
            len(lab.wrong_reads),
            int(lab.wrong_p.sum()),
            True,
            lab.words,
            True,
        )
    report = hz.analyse(trace)
    return LabFindings(
        hz.HazardList(report.hazards),
        len(report.wrong_reads),
        int(report.wrong_p.sum()),
        report.has_reads,
        wrong_words(trace, report.wrong_reads),
    )


def wrong_words(trace, rows) -> dict:
    """What each wrong read found and what the book's kernel finds there, with both values.

    Parameters
    ----------
    trace : vizmm.trace.Trace
    rows : ndarray of vizmm.analysis.hazards.WRONG_READ_DTYPE

    Returns
    -------
    dict
        ``{(by, bx, phase, k, ty, tx): "found M_{0,2} = 5 in Mds[0][0], the book's
        kernel M_{0,0} = 8"}``; a thread's two reads of one ``k`` joined by "; ".
    """
    _, k_dim, l = trace.shape
    out: dict = {}
    for r in rows:
        array = str(r["array"])
        ncols = k_dim if array == "Mds" else l
        found = hz.describe_tag(int(r["tag"]), array, ncols)
        book = hz.describe_tag(int(r["expected"]), array, ncols)
        want = hz.tag_value(trace, int(r["expected"]), array)
        words = (
            f"found {found}{_equals(float(r['value']))} in {array}[{r['slot'][0]}][{r['slot'][1]}]"
            f", the book's kernel {book}{_equals(want)}"
        )
        key = (*(int(v) for v in r["block"]), int(r["phase"]), int(r["k"]))
        key += tuple(int(v) for v in r["thread"])
        out[key] = f"{out[key]}; {words}" if key in out else words
    return out


def _equals(v: float) -> str:
    return f" = {format_value(v)}" if v == v else ""


def _no_findings(trace) -> str:
    """Why the hazard list is empty, for the trace shown (None: none is)."""
    lab = (
        "Choose a *Barrier lab* trace, or record with a barrier removed, to see what goes "
        "wrong without them."
    )
    if trace is None:
        return "No trace is shown, so there is nothing to check. " + lab
    if trace.user_kernel is not None:
        return (
            f"Your kernel `{trace.user_kernel}`: this panel's counts apply to the book's "
            "kernels (Fig. 5.9's indexing) and are not shown for it. See the *Findings* "
            "list for its races and wrong terms (`vizmm.check`)."
        )
    if trace.meta.get("kernel") == "naive":
        return (
            "The simple kernel (Fig. 3.11) uses no shared memory and no `__syncthreads()`: "
            "no thread reads what another wrote, so there is no hazard. " + lab
        )
    return "Both `__syncthreads()` kept: no hazard. " + lab


class HazardPanel(pn.viewable.Viewer):
    """Counts, filters and one page of the hazard list; a click goes to the hazard.

    The filters and the list are made when the first trace with hazards is
    shown (a page that never shows one does not build or send them); until
    then the panel says how to get one.

    Parameters
    ----------
    state : vizmm_apps.dashboard.DashboardState
    """

    page = param.Integer(default=0, bounds=(0, None), precedence=-1)

    def __init__(self, state, **params):
        super().__init__(**params)
        self.state = state
        self.summary = pn.pane.Markdown("", margin=(0, 10), sizing_mode="stretch_width")
        self.layout = pn.Column(
            pn.pane.Markdown("#### Barrier lab: hazards", margin=(0, 10)),
            self.summary,
            sizing_mode="stretch_width",
        )
        self._index = None  # row numbers of the HazardList that pass the filters
        self._shown = []  # the rows of this page
        self._controls = False  # the filters and the list: made for the first lab trace
        state.param.watch(self._on_trace, ["trace"])
        state.param.watch(self._on_block, ["by", "bx"])
        self._on_trace()

    def _make_controls(self) -> None:
        """The filters, the page buttons and the list (a trace with hazards is shown)."""
        self.kind = pn.widgets.Select(
            label="kind",
            options={"RAW and WAR": _ALL, "RAW (barrier 1)": "RAW", "WAR (barrier 2)": "WAR"},
            value=_ALL,
            width=150,
        )
        self.block = pn.widgets.Select(
            label="block", options={"replayed block": _THIS_BLOCK}, value=_THIS_BLOCK, width=150
        )
        self.phase = pn.widgets.Select(label="phase", options={"every phase": -1}, width=120)
        self.wrong = pn.widgets.Checkbox(
            label="only reads that went wrong in this run", value=False, width=280
        )
        self.prev_page = pn.widgets.Button(label="◀ rows", width=80)
        self.next_page = pn.widgets.Button(label="rows ▶", width=80)
        self.page_info = pn.pane.Markdown("", margin=(0, 10))
        # One line per row in a list box (a plain <select>; a click picks a row). A
        # MultiSelect may have no row picked: a Select picks its first option itself
        # (when its options change, or when it is drawn), which is no visitor's click.
        self.table = pn.widgets.MultiSelect(
            options={}, value=[], size=12, width=760, css_classes=["vizmm-hazards"]
        )
        self.table.param.watch(self._on_select, "value")
        for w in (self.kind, self.block, self.phase, self.wrong):
            w.param.watch(self._on_filter, "value")
        on_press(self.prev_page, lambda: self._turn(-1))
        on_press(self.next_page, lambda: self._turn(1))
        self.layout.extend(
            [
                pn.Row(
                    self.kind, self.block, self.phase, pn.Column(pn.Spacer(height=18), self.wrong)
                ),
                pn.Row(self.prev_page, self.next_page, self.page_info),
                self.table,
            ]
        )
        self._controls = True

    # ------------------------------------------------------------ data
    def _findings(self) -> LabFindings | None:
        trace = self.state.trace
        if trace is None or not (trace.meta.get("drop_barrier") or trace.shared_reads.size):
            return None
        try:
            return lab_findings(trace)
        except ValueError:  # a user kernel not read as M, N and P: _no_findings says so
            return None

    def _on_trace(self, *events) -> None:
        found = self._findings()
        if found is not None and not self._controls:
            self._make_controls()
        if not self._controls:  # no lab trace shown yet: the summary says why
            self._refresh()
            return
        blocks = {"replayed block": _THIS_BLOCK, "every block": _ALL}
        phases = {"every phase": -1}
        if found is not None:
            blocks.update({f"block ({a},{b})": f"{a},{b}" for a, b in found.hazards.blocks})
            phases.update({f"phase {p}": p for p in range(self.state.trace.n_phases)})
        self._quiet(block=(blocks, _THIS_BLOCK), phase=(phases, -1))
        self._refresh()

    def _on_block(self, *events) -> None:
        if self._controls and self.block.value == _THIS_BLOCK:
            self._refresh()

    def _quiet(self, **choices) -> None:
        """Set the filters' options and values without refreshing once per widget."""
        self._busy = True
        try:
            for name, (options, value) in choices.items():
                widget = getattr(self, name)
                widget.options = options
                widget.value = value
        finally:
            self._busy = False

    def _on_filter(self, *events) -> None:
        if not getattr(self, "_busy", False):
            self.page = 0
            self._refresh()

    def _turn(self, by: int) -> None:
        n = 0 if self._index is None else len(self._index)
        last = max(0, (n - 1) // PAGE_ROWS)
        page = max(0, min(last, self.page + by))
        if page != self.page:
            self.page = page
            self._show_page()

    def _filters(self) -> dict:
        block = self.block.value
        if block == _THIS_BLOCK:
            block = (self.state.by, self.state.bx)
        elif block == _ALL:
            block = None
        else:
            block = tuple(int(v) for v in block.split(","))
        return {
            "kind": None if self.kind.value == _ALL else self.kind.value,
            "block": block,
            "phase": None if self.phase.value in (-1, None) else int(self.phase.value),
            "wrong": bool(self.wrong.value),
        }

    def _refresh(self) -> None:
        found = self._findings()
        if found is None:  # (a hidden table fails to draw in Bokeh: the panel stays, says why)
            self.summary.object = _no_findings(self.state.trace)
            self._index = None
            if self._controls:
                self._show_page()
            return
        trace = self.state.trace
        lst = found.hazards
        total = lst.counts(slice(None))
        if found.own:
            self.summary.object = _own_summary(trace, found, total)
            self._index = lst.select(**self._filters())
            self._show_page()
            return
        removed = {
            (1,): "barrier 1 (after the loads)",
            (2,): "barrier 2 (after the k loop)",
            (1, 2): "both barriers",
        }.get(tuple(trace.meta.get("drop_barrier", ())), "none")
        text = (
            f"Removed: **{removed}**. Hazards in the recorded blocks: **{total['RAW']:,} "
            f"read-after-write**, **{total['WAR']:,} write-after-read**."
        )
        if found.has_reads:
            text += (
                f" This run: **{found.wrong_reads:,} reads** found the wrong element, "
                f"**{found.wrong_p:,} P elements** came out wrong (marked ✗)."
            )
        self._index = lst.select(**self._filters())
        shown = lst.counts(self._index)
        text += (
            f" The list below: **{len(self._index):,} rows** of {shown['RAW']:,} RAW and "
            f"{shown['WAR']:,} WAR hazards (a row: one reading thread at one phase and k). "
            "Click a row to go to that step and block and follow the reading thread."
        )
        self.summary.object = text
        self._show_page()

    def _show_page(self) -> None:
        index = self._index
        n = 0 if index is None else len(index)
        last = max(0, (n - 1) // PAGE_ROWS)
        if self.page > last:
            self.page = last
        a = self.page * PAGE_ROWS
        rows = [] if index is None else index[a : a + PAGE_ROWS].tolist()
        self._shown = rows
        found = None if index is None else self._findings()
        every_block = self.block.value != _THIS_BLOCK
        self.table.options = (
            {}
            if found is None
            else {
                row_label(found.hazards, i, every_block, found.wrong): n for n, i in enumerate(rows)
            }
        )
        self.table.value = []
        self.page_info.object = f"rows {a + 1:,}–{a + len(rows):,} of {n:,}" if n else "no rows"
        self.prev_page.disabled = self.page == 0
        self.next_page.disabled = self.page >= last

    def _on_select(self, event) -> None:
        picked = event.new or []
        if len(picked) != 1:  # none (new rows) or several (a shift-click): stay
            return
        n = picked[0]
        found = self._findings()
        if not 0 <= n < len(self._shown) or self.state.replay is None or found is None:
            return
        row = found.hazards.rows[self._shown[n]]
        replay = self.state.replay
        phase, k = int(row["phase"]), int(row["k"])
        try:
            step = replay.index_of(phase, Sub.K, k)
        except ValueError:  # phase granularity: the phase's step
            step = replay.index_of(phase, Sub.PHASE)
        (by, bx), (ty, tx) = (tuple(int(v) for v in row[f]) for f in ("block", "reader"))
        self.state.param.update(by=by, bx=bx, ty=ty, tx=tx, step=step)

    def __panel__(self):
        return self.layout


def _own_summary(trace, found: LabFindings, total: dict) -> str:
    """The summary of a user kernel's hazards, read from its access log."""
    return (
        f"Your kernel `{trace.user_kernel}`, read from its access log as `vizmm.check` reads "
        f"it: **{total['RAW']:,} read-after-write**, **{total['WAR']:,} write-after-read** "
        "(a read of a slot another thread stored in the same barrier epoch, with no "
        f"`__syncthreads()` between them). This run: **{found.wrong_reads:,} reads** found "
        "an element that is not a term of the P element the thread computes, "
        f"**{found.wrong_p:,} P elements** came out wrong (marked ✗). The *Findings* list "
        "says each in full. Click a row to go to that step and block and follow the "
        "reading thread."
    )


def row_label(
    hazards: hz.HazardList, i: int, block: bool = False, found: dict | None = None
) -> str:
    """Row ``i`` in words: ``'RAW · phase 0 · k 1 · thread (0,0) reads Mds[0][1] ...'``.

    Parameters
    ----------
    hazards : HazardList
        The hazards grouped per reading thread, phase and k.
    i : int
        A row number of ``hazards.rows``.
    block : bool
        Start with the row's block (a list of several blocks).
    found : dict, optional
        :attr:`LabFindings.wrong` (:func:`wrong_words`); a row whose read went
        wrong then says what the thread found and what the book's kernel finds
        there, with both values.
    """
    r = hazards.rows[i]
    reads, writers = hazards.describe(i)
    where = f"block ({r['block'][0]},{r['block'][1]}) · " if block else ""
    wrong = ""
    if r["wrong"]:
        key = (*(int(v) for v in r["block"]), int(r["phase"]), int(r["k"]))
        words = (found or {}).get(key + tuple(int(v) for v in r["reader"]))
        wrong = f" · ✗ {words}" if words else " · ✗ read the wrong element"
    return (
        f"{r['kind']} · {where}phase {r['phase']} · k {r['k']} · thread "
        f"({r['reader'][0]},{r['reader'][1]}) reads {reads} written by {writers}{wrong}"
    )
