"""The words of a frame and where it is in the source and the Fig. 5.8 table.

Three aspects of :class:`~vizmm.replay.frame.Frame` (see
:data:`~vizmm.replay.frame.ASPECT_FIELDS`): ``caption`` (the title line and
what happens at the step, in words, with what the barrier lab or a user
kernel's reads add), ``source`` (the line executed, the lines struck out)
and ``table`` (the cell of the Fig. 5.8 table the step fills, how far it is
filled, the table itself on first use).
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

import numpy as np

from ..analysis.transactions import LAYOUTS
from .frame import aspect_maker
from .frame_lab import own_caption
from .states import Step, Sub
from .table import TableCursor, frame_table

if TYPE_CHECKING:
    from .block import Replay
    from .frame_aspects import At

__all__ = ["caption", "source", "table"]


@aspect_maker
def caption(r: Replay, at: At) -> dict:
    """The ``caption`` aspect: ``title`` and ``caption`` of the step.

    A user kernel's caption adds what its wrong reads were
    (:func:`~vizmm.replay.frame_lab.own_caption`); the barrier lab's adds how
    many threads read a wrong element and who ran ahead (the ``lab`` aspect).
    """
    step = at.step
    words = _book_caption(r, step)
    if r._own is not None:
        words += own_caption(r, step)
    else:
        lab = at.need("lab")
        wrong = lab["thread_wrong"]
        if wrong is not None and wrong.any():
            n_bad = int(wrong.sum())
            words += (
                f" {n_bad} thread{'s' if n_bad > 1 else ''} read a wrong element: the barrier "
                "that would have ordered the read and the write was removed."
            )
            ahead = [
                f"({ty},{tx})" for ty, tx in zip(*np.nonzero(lab["thread_ahead"]), strict=True)
            ]
            words += f" Ran ahead (▶): thread{'s' if len(ahead) > 1 else ''} {', '.join(ahead)}."
    return {"title": _title(r, step), "caption": words}


@aspect_maker
def source(r: Replay, at: At) -> dict:
    """The ``source`` aspect: ``source_line`` (executed at the step) and ``struck_lines``."""
    return {"source_line": r._lines.get(at.step.sub), "struck_lines": r._struck}


@aspect_maker
def table(r: Replay, at: At) -> dict:
    """The ``table`` aspect: ``table_focus``, ``table_cursor`` and ``table_of`` (Fig. 5.8).

    ``table_of`` makes the block's table on first use (kept on the trace,
    :func:`~vizmm.replay.table.frame_table`).
    """
    return {
        "table_focus": _table_focus(at.step),
        "table_cursor": _table_cursor(at.step, r.trace.n_phases),
        "table_of": functools.partial(frame_table, r.trace, r.block),
    }


def _title(r: Replay, step: Step) -> str:
    tr = r.trace
    j, k, l = tr.shape
    shape = f"{j}x{k}" if (j == k == l) else f"M {j}x{k} · N {k}x{l}"
    where = f"block ({r.block[0]},{r.block[1]})"
    if step.sub == Sub.START:
        what = "start"
    elif step.sub == Sub.WRITE_P:
        what = "write P"
    elif step.sub == Sub.K:
        what = f"phase {step.phase} · k = {step.k}"
    elif step.sub == Sub.PHASE:
        what = f"phase {step.phase}"
    else:
        what = f"phase {step.phase} · {step.sub.value}"
    return (
        f"{tr.kernel} ({tr.meta.get('figure', '')}) · {shape} · TILE_WIDTH "
        f"{tr.tile_width} · {where} · {what}"
    )


def _book_caption(r: Replay, step: Step) -> str:
    T = r.trace.tile_width
    n = T * T
    s = step.sub
    if s == Sub.START:
        return (
            "Every thread starts with Pvalue = 0; Mds and Nds hold whatever shared "
            "memory held (uninitialised)."
        )
    lay = LAYOUTS.get(r.trace.kernel)
    m_slot = "Mds[tx][ty]" if lay is not None and lay.m_store_transposed else "Mds[ty][tx]"
    n_slot = (
        "Nds[tx][ty]"
        if lay is not None and (lay.n_store_transposed or lay.nds_transposed)
        else "Nds[ty][tx]"
    )
    if s == Sub.LOAD_M:
        return (
            f"Phase {step.phase}: each thread (ty, tx) copies one M element into "
            f"{m_slot} (or 0.0 where the element is outside M)."
            + (" Roles swapped: a warp walks down columns of M." if "tx][ty" in m_slot else "")
        )
    if s == Sub.LOAD_N:
        return (
            f"Phase {step.phase}: each thread copies one N element into {n_slot} "
            "(or 0.0 where the element is outside N)."
            + (
                " The tile is stored transposed; Nds is drawn in the book's layout."
                if lay is not None and lay.nds_transposed
                else ""
            )
        )
    if s in (Sub.ARRIVE_1, Sub.ARRIVE_2):
        which = 1 if s == Sub.ARRIVE_1 else 2
        why = (
            "no thread may read the tiles before all are loaded (read-after-write)"
            if which == 1
            else "no thread may overwrite the tiles while others still read them (write-after-read)"
        )
        if step.arrived is not None and step.arrived < n:
            return (
                f"__syncthreads() #{which}: {step.arrived} of {n} threads have "
                f"arrived and wait for {n - step.arrived} more: {why}."
            )
        return f"__syncthreads() #{which}: all {n} threads have arrived: {why}."
    if s in (Sub.RELEASE_1, Sub.RELEASE_2):
        which = 1 if s == Sub.RELEASE_1 else 2
        assert step.phase is not None  # a barrier's step names its phase
        nxt = (
            "the k loop"
            if which == 1
            else ("the next phase" if step.phase + 1 < r.trace.n_phases else "the P store")
        )
        return f"Barrier {which} releases all {n} threads together; they go on to {nxt}."
    if s == Sub.K:
        kk = step.k
        return (
            f"k = {kk}: Pvalue += Mds[ty][{kk}] * Nds[{kk}][tx], column {kk} of Mds "
            f"and row {kk} of Nds, read from shared memory."
        )
    if s == Sub.PHASE:
        return (
            f"Phase {step.phase}: the block loads one tile of M and one of N, waits, "
            f"and every thread adds {T} products to its Pvalue."
        )
    return (
        "Threads with a valid (Row, Col) store Pvalue into P; the others have no P "
        "element and store nothing."
    )


def _table_cursor(step: Step, n_phases: int) -> TableCursor:
    sub = step.sub
    if sub == Sub.START:
        return TableCursor(0, None, None, "start")
    if sub == Sub.WRITE_P:
        return TableCursor(n_phases - 1, (None, "p_write"), None, "end")
    focus = _table_focus(step)
    barrier_1 = sub in (Sub.ARRIVE_1, Sub.RELEASE_1)
    if focus is not None:
        role = {"M": "m_load", "N": "n_load", "P": "pvalue"}[focus[1]]
    else:
        role = "n_load" if barrier_1 else "pvalue"
    if sub in (Sub.PHASE, Sub.ARRIVE_2, Sub.RELEASE_2):
        last = "value"
    else:
        last = "n_load" if barrier_1 else role
    assert step.phase is not None  # every step between START and WRITE_P has a phase
    return TableCursor(step.phase, (step.phase, role) if focus is not None else None, last, "phase")


def _table_focus(step: Step):
    if step.sub in (Sub.LOAD_M,):
        return (step.phase, "M")
    if step.sub in (Sub.LOAD_N,):
        return (step.phase, "N")
    if step.sub in (Sub.K, Sub.PHASE, Sub.ARRIVE_2, Sub.RELEASE_2):
        return (step.phase, "P")
    return None
