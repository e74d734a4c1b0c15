"""The barrier lab in the dashboard: its presets and the hazard list beside the block replay.

* :func:`install` adds the presets: the 4 x 4, TILE_WIDTH 2 example of
  Fig. 5.8 with barrier 1, barrier 2 or both removed (simulator recordings,
  the threads of a block in turns: every run the same), and three races
  recorded on an NVIDIA H200 (``vizmm/data/gpu-barrier-*.vizmm``).
* :class:`HazardPanel` lists the hazards of the replayed block (from
  ``vizmm.analysis.hazards``), one row per reading thread, phase and ``k``;
  clicking a row goes to that step and follows that thread. For traces with
  both barriers it says there is no hazard.

A view only: what is a hazard and what was read wrong is computed by
``vizmm.analysis.hazards``; the marks in Mds, Nds, the threads and P are the
frames' (``vizmm.replay``), drawn by the scene.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import panel as pn
import param

from vizmm.analysis import hazards as hz
from vizmm.catalogue import LAB_PRESETS
from vizmm.replay import Sub

# LAB_PRESETS (key -> menu label) are defined with the other presets in vizmm.catalogue.
__all__ = ["LAB_PRESETS", "HazardPanel", "hazard_rows"]
MAX_ROWS = 400  # rows of the hazard list (the block's first ones, in step order)


def hazard_rows(trace, block) -> pd.DataFrame:
    """The block's hazards, one row per reading thread, phase and k (a table for people).

    Columns: ``kind`` ('RAW' / 'WAR'), ``phase``, ``k``, ``thread`` ('(ty,tx)'),
    ``reads`` (the slots read, e.g. 'Mds[0][1]'), ``writers`` (the other
    threads writing them in the same epoch), ``wrong`` ('✗' where this run's
    read found the wrong element), and hidden ``ty``, ``tx``.
    """
    rows = hz.hazards(trace)
    cols = ["kind", "phase", "k", "thread", "reads", "writers", "wrong", "ty", "tx"]
    if len(rows) == 0:
        return pd.DataFrame(columns=cols)
    sel = (rows["block"][:, 0] == block[0]) & (rows["block"][:, 1] == block[1])
    rows = rows[sel]
    groups: dict = {}
    for r in rows:
        key = (
            str(r["kind"]),
            int(r["phase"]),
            int(r["k"]),
            int(r["reader"][0]),
            int(r["reader"][1]),
        )
        g = groups.setdefault(key, {"reads": set(), "writers": set(), "wrong": False})
        g["reads"].add(f"{r['array']}[{r['slot'][0]}][{r['slot'][1]}]")
        g["writers"].add(f"({r['writer'][0]},{r['writer'][1]})")
        g["wrong"] |= bool(r["wrong"])
    out = []
    for (kind, ph, k, ty, tx), g in sorted(groups.items(), key=lambda kv: kv[0][1:] + kv[0][:1]):
        out.append(
            {
                "kind": kind,
                "phase": ph,
                "k": k,
                "thread": f"({ty},{tx})",
                "reads": ", ".join(sorted(g["reads"])),
                "writers": ", ".join(sorted(g["writers"])),
                "wrong": "✗" if g["wrong"] else "",
                "ty": ty,
                "tx": tx,
            }
        )
    return pd.DataFrame(out[:MAX_ROWS], columns=cols)


class HazardPanel(pn.viewable.Viewer):
    """Counts and the hazard list of the replayed block; a click goes to the hazard.

    Parameters
    ----------
    state : apps.dashboard.DashboardState
    """

    block = param.Tuple(default=(-1, -1), precedence=-1)

    def __init__(self, state, **params):
        super().__init__(**params)
        self.state = state
        self.summary = pn.pane.Markdown("", margin=(0, 10), sizing_mode="stretch_width")
        # One line per row in a list box (a plain <select>; a click picks a row).
        self.table = pn.widgets.Select(
            options={}, size=12, width=760, css_classes=["vizmm-hazards"]
        )
        self._rows = hazard_rows_empty()
        self.table.param.watch(self._on_select, "value")
        self.layout = pn.Column(
            pn.pane.Markdown("#### Barrier lab: hazards of this block", margin=(0, 10)),
            self.summary,
            self.table,
            sizing_mode="stretch_width",
        )
        state.param.watch(self._refresh, ["trace", "by", "bx"])
        self._refresh()

    def _refresh(self, *events) -> None:
        trace = self.state.trace
        lab = trace is not None and (trace.meta.get("drop_barrier") or trace.shared_reads.size)
        if not lab:  # (a hidden table fails to draw in Bokeh: the panel stays, says why)
            self.summary.object = (
                "Both `__syncthreads()` kept: no hazard. Choose a *Barrier lab* trace, or "
                "record with a barrier removed, to see what goes wrong without them."
            )
            self._show(hazard_rows_empty())
            return
        block = (self.state.by, self.state.bx)
        if not trace.has_block(block):
            self._show(hazard_rows_empty())
            return
        report = hz.analyse(trace)
        kinds = {k: int((report.hazards["kind"] == k).sum()) for k in ("RAW", "WAR")}
        removed = {
            (1,): "barrier 1 (after the loads)",
            (2,): "barrier 2 (after the k loop)",
            (1, 2): "both barriers",
        }.get(tuple(trace.meta.get("drop_barrier", ())), "none")
        text = (
            f"Removed: **{removed}**. Hazards in the recorded blocks: **{kinds['RAW']} "
            f"read-after-write**, **{kinds['WAR']} write-after-read**."
        )
        if report.has_reads:
            text += (
                f" This run: **{len(report.wrong_reads)} reads** found the wrong element, "
                f"**{int(report.wrong_p.sum())} P elements** came out wrong (marked ✗)."
            )
        df = hazard_rows(trace, block)
        if len(df) == MAX_ROWS:
            text += f" The list shows this block's first {MAX_ROWS} rows."
        text += " Click a row to go to that step and follow the reading thread."
        self.summary.object = text
        self._show(df)

    def _show(self, df: pd.DataFrame) -> None:
        self._rows = df
        self.table.options = {row_label(r): i for i, r in enumerate(df.itertuples())}
        self.table.value = None

    def _on_select(self, event) -> None:
        i = event.new
        df = self._rows
        if i is None or not 0 <= i < len(df):
            return
        row = df.iloc[i]
        replay = self.state.replay
        if replay is None:
            return
        try:
            step = replay.index_of(int(row["phase"]), Sub.K, int(row["k"]))
        except ValueError:  # phase granularity: the phase's step
            step = replay.index_of(int(row["phase"]), Sub.PHASE)
        self.state.param.update(ty=int(row["ty"]), tx=int(row["tx"]), step=step)

    def __panel__(self):
        return self.layout


def row_label(r) -> str:
    """One hazard row in words: ``'RAW · phase 0 · k 1 · thread (0,0) reads Mds[0][1] ...'``."""
    return (
        f"{r.kind} · phase {r.phase} · k {r.k} · thread {r.thread} reads {r.reads} "
        f"written by {r.writers}" + (" · ✗ read the wrong element" if r.wrong else "")
    )


def hazard_rows_empty() -> pd.DataFrame:
    """An empty hazard table (the columns of :func:`hazard_rows`)."""
    return pd.DataFrame(
        {
            c: np.array([], dtype=object)
            for c in ["kind", "phase", "k", "thread", "reads", "writers", "wrong", "ty", "tx"]
        }
    )
