"""The replay layer: a trace turned into what every view draws (NumPy only).

* :mod:`.block`: the block replay, :class:`Replay` and its neutral
  :class:`Frame` (what each cell, slot and thread is doing at a step), the
  steps at phase or sub-step granularity in lockstep or recorded order; a
  frame made only of the aspects a page shows (:data:`ASPECTS`,
  ``Replay.frame(i, aspects=...)``, :mod:`.frame_aspects`).
* :mod:`.large`: launch-level models of large traces (block timeline, SM
  residency, waves, read counts, barrier waits).
* :mod:`.table`: the book's Fig. 5.8 table for any block.
* :mod:`.lockstep`: two replays stepped together (same phase and sub-step).
* :mod:`.navigator`: where a page is in a trace (block, thread, step,
  granularity, order) and what it shows when a person moves.

No colours, no Bokeh, no Pillow: renderers draw what these say.
"""

from .block import (
    ASPECT_FIELDS,
    ASPECTS,
    GRANULARITIES,
    NAIVE_REFUSAL,
    ORDERS,
    AspectNotComputed,
    CellState,
    Frame,
    Ghost,
    NotComputed,
    Replay,
    SlotState,
    Step,
    Sub,
    ThreadState,
    source_lines,
)
from .lockstep import Lockstep, matching_step, moment
from .navigator import Note, Place, Position, place

__all__ = [
    "ASPECT_FIELDS",
    "ASPECTS",
    "AspectNotComputed",
    "NotComputed",
    "GRANULARITIES",
    "NAIVE_REFUSAL",
    "ORDERS",
    "CellState",
    "Frame",
    "Ghost",
    "Replay",
    "SlotState",
    "Step",
    "Sub",
    "ThreadState",
    "source_lines",
    "Lockstep",
    "matching_step",
    "moment",
    "Note",
    "Place",
    "Position",
    "place",
]
