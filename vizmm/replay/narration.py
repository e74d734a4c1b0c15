"""Each step of a block replay in one or two plain sentences (what a screen reader says).

:func:`narrate` turns a :class:`~vizmm.replay.Frame` into text: where the
block is (phase ``ph``, sub-step) and what happens there, for the followed
thread when one is followed ("Phase 1, load M: thread (0,1) copies M₀,₃
(value 3) into Mds[0][1]."), else for every thread (the frame's caption).
The dashboard shows it in an ARIA live region, which also serves as the
captions on a projector; the notebook and exports can show the same text.

NumPy only, like the rest of :mod:`vizmm.replay`; nothing here is drawn.
"""

from __future__ import annotations

import re

from vizmm.trace.units import format_value

from .block import Frame, SlotState, Sub

__all__ = ["narrate", "subscript", "NARRATED_ASPECTS"]

#: The aspects of a frame :func:`narrate` reads (``Replay.frame(i, aspects=...)``):
#: the caption, and for a followed thread its slots of Mds and Nds and its Pvalue.
NARRATED_ASPECTS = frozenset({"caption", "slots", "threads"})

_SUBSCRIPT = str.maketrans("0123456789-", "₀₁₂₃₄₅₆₇₈₉₋")

#: The caption's own opening ("Phase 0: ", "k = 1: "), said once by :func:`narrate`.
_LEAD = re.compile(r"^(Phase \d+|k = \d+): ")


def subscript(matrix: str, row: int, col: int) -> str:
    """An element in the book's notation with Unicode subscripts: ``M₀,₃``.

    Parameters
    ----------
    matrix : str
        ``'M'``, ``'N'`` or ``'P'``.
    row, col : int
        The element's row and column (0-based, as the book counts).
    """
    return f"{matrix}{str(int(row)).translate(_SUBSCRIPT)},{str(int(col)).translate(_SUBSCRIPT)}"


def _where(frame: Frame) -> str:
    """Phase and sub-step: ``'Phase 1, load M'``, ``'Phase 0, k = 1'``, ``'Start'``."""
    st = frame.step
    if st.sub is Sub.START:
        return "Start"
    if st.sub is Sub.WRITE_P:
        return "Store of P"
    if st.sub is Sub.PHASE:
        return f"Phase {st.phase}"
    what = f"k = {st.k}" if st.sub is Sub.K else st.sub.value
    return f"Phase {st.phase}, {what}"


def _slot_of(loader, ty: int, tx: int) -> tuple[int, int]:
    """The Mds / Nds slot thread (ty, tx) fills (its own, or the loader map's)."""
    if loader is None:
        return ty, tx
    t = ty * loader.shape[1] + tx
    found = (loader == t).nonzero()
    if len(found[0]) == 0:
        return ty, tx
    return int(found[0][0]), int(found[1][0])


def _held(state, src, value, matrix: str) -> str:
    """What a slot holds, in words (``'M₀,₃ (value 3)'``, ``'an unknown value'``)."""
    state = SlotState(int(state))
    if state == SlotState.ZERO:
        return f"0.0 (the element is outside {matrix})"
    r, c = int(src[0]), int(src[1])
    if r < 0:
        return "an unknown value"
    name = subscript(matrix, r, c)
    return f"{name} (value {format_value(value)})" if value == value else name


def _load(frame: Frame, ty: int, tx: int, matrix: str) -> str:
    """``'copies M₀,₃ (value 3) into Mds[0][1]'`` for the followed thread."""
    arr = "Mds" if matrix == "M" else "Nds"
    loader = frame.mds_loader if matrix == "M" else frame.nds_loader
    y, x = _slot_of(loader, ty, tx)
    state = (frame.mds_state if matrix == "M" else frame.nds_state)[y, x]
    src = (frame.mds_src if matrix == "M" else frame.nds_src)[y, x]
    value = float((frame.mds_value if matrix == "M" else frame.nds_value)[y, x])
    if SlotState(int(state)) == SlotState.SKIPPED:
        return f"loads nothing into {arr}[{y}][{x}] (its element is outside the allocation)"
    if SlotState(int(state)) == SlotState.ZERO:
        return f"writes 0.0 into {arr}[{y}][{x}] (its element is outside {matrix})"
    return f"copies {_held(state, src, value, matrix)} into {arr}[{y}][{x}]"


def _pvalue(frame: Frame, ty: int, tx: int) -> str:
    v = float(frame.pvalue[ty, tx])
    return f"Pvalue is now {format_value(v)}" if v == v else "Pvalue is not recorded"


def _thread(frame: Frame, ty: int, tx: int) -> str:
    """What the followed thread (ty, tx) does at this step, one sentence."""
    st = frame.step
    who = f"thread ({ty},{tx})"
    if st.sub is Sub.START:
        return f"{who} starts with Pvalue = 0."
    if st.sub in (Sub.LOAD_M, Sub.LOAD_N):
        matrix = "M" if st.sub is Sub.LOAD_M else "N"
        return f"{who} {_load(frame, ty, tx, matrix)}."
    if st.sub in (Sub.ARRIVE_1, Sub.ARRIVE_2):
        number = 1 if st.sub is Sub.ARRIVE_1 else 2
        rank = int(frame.thread_rank[ty, tx])
        n = frame.thread_rank.size
        when = f", arrival {rank + 1} of {n}" if rank >= 0 and frame.order == "recorded" else ""
        return f"{who} waits at __syncthreads() #{number}{when}."
    if st.sub in (Sub.RELEASE_1, Sub.RELEASE_2):
        number = 1 if st.sub is Sub.RELEASE_1 else 2
        return f"barrier {number} releases {who} with the others."
    if st.sub is Sub.K and st.k is not None:  # a k-loop step names its k
        k = int(st.k)
        m = _held(frame.mds_state[ty, k], frame.mds_src[ty, k], float(frame.mds_value[ty, k]), "M")
        held_n = _held(
            frame.nds_state[k, tx], frame.nds_src[k, tx], float(frame.nds_value[k, tx]), "N"
        )
        return (
            f"{who} reads Mds[{ty}][{k}], {m}, and Nds[{k}][{tx}], {held_n}; "
            f"{_pvalue(frame, ty, tx)}."
        )
    if st.sub is Sub.PHASE:
        return (
            f"{who} {_load(frame, ty, tx, 'M')} and {_load(frame, ty, tx, 'N')}, "
            f"then runs the k loop; {_pvalue(frame, ty, tx)}."
        )
    # Sub.WRITE_P
    if not bool(frame.thread_valid[ty, tx]):
        return f"{who} has no P element (outside P) and stores nothing."
    if frame.p_element is not None:  # where the thread's store really went (a user kernel)
        row, col = (int(v) for v in frame.p_element[ty, tx])
    else:
        row, col = frame.tiles["P"][0] + ty, frame.tiles["P"][1] + tx
    v = float(frame.pvalue[ty, tx])
    return f"{who} stores Pvalue {format_value(v)} into {subscript('P', row, col)}."


def narrate(frame: Frame) -> str:
    """The step in words: its number, phase and sub-step, and what happens.

    Parameters
    ----------
    frame : Frame
        A frame of :meth:`vizmm.replay.Replay.frame`, with at least the
        aspects of :data:`NARRATED_ASPECTS`.

    Returns
    -------
    str
        ``"Step 10 of 18. Phase 1, load M: thread (0,1) copies M₀,₃ (value 3)
        into Mds[0][1]."`` when a thread is followed (``frame.focus``), else
        the frame's caption for every thread: ``"Step 10 of 18. Phase 1, load
        M: each thread (ty, tx) copies one M element into Mds[ty][tx] ..."``.
        Phases count from 0 as ``ph`` does in Fig. 5.9; steps from 1 as the
        page numbers them.
    """
    where = _where(frame)
    if frame.focus is not None:
        ty, tx = (int(v) for v in frame.focus)
        what = _thread(frame, ty, tx)
    else:
        what = _LEAD.sub("", frame.caption)
    what = what[:1].upper() + what[1:] if frame.step.sub is Sub.START else what
    return f"Step {frame.index + 1} of {frame.count}. {where}: {what}"
