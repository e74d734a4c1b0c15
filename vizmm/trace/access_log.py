"""The access log's model: its fields, ops, flags, tags and how one word packs them.

One definition for every layer: the instrumenter's writers (the device
functions of :mod:`vizmm.record.instrument_device` on a GPU or in Numba's
simulator, :mod:`vizmm.record.simt` in vizmm's) write these, and
:func:`vizmm.record.instrument.decode`, :mod:`vizmm.analysis.check` and
:mod:`vizmm.replay.own` read them. A trace keeps the decoded log
(``log_events`` of :data:`FIELDS`, ``log_values``, ``log_counts``); its
``meta["access_log"]`` names the fields and the arrays. NumPy only.
"""

__all__ = [
    "ARR", "ARRIVE", "ARR_SHIFT", "COL", "END", "EPOCH", "FIELDS", "FLAG", "FLAG_SHIFT", "IDX",
    "LINE", "LINE_SHIFT", "LOAD", "MAX_ARRAYS", "MAX_LINE", "MOVE", "MOVE_ADD", "MOVE_SET", "NF",
    "NO_INDEX", "OK", "OP", "OUT_OF_BOUNDS", "RELEASE", "ROW", "SIM_ROW", "SOURCE_OUT_OF_BOUNDS",
    "SRC_ARR", "SRC_COL", "SRC_IDX", "SRC_ROW", "STORE", "TAG", "TAG_ARRAYS", "TAG_COMPUTED",
    "TAG_NEVER", "TAG_ZERO", "TERM", "TICK",
]  # fmt: skip

#: Event fields (last axis of ``ev``).
FIELDS = (
    "op",  # LOAD, STORE, ARRIVE, RELEASE, END
    "flag",  # OK, OUT_OF_BOUNDS (not performed), SOURCE_OUT_OF_BOUNDS (store skipped)
    "arr",  # the array's id (the instrumenter's table), -1 for barriers and the end
    "idx",  # the flat element index the code named (may be out of bounds)
    "row",  # the code's (row, col): a 2-D subscript, or a*W + b of a 1-D one; NO_INDEX if none
    "col",
    "tag",  # shared stores/loads: the slot's provenance tag written/found (TAG_*, or src)
    "src_arr",  # the global element the value came from (copy, zero-fill guard, slot's tag)
    "src_idx",
    "src_row",
    "src_col",
    "epoch",  # cuda.syncthreads() the thread had passed
    "tick",  # barriers: the block's logical clock (arrival/release order); -1 otherwise
    "line",  # the kernel source's line
)
NF = len(FIELDS)
(OP, FLAG, ARR, IDX, ROW, COL, TAG, SRC_ARR, SRC_IDX, SRC_ROW, SRC_COL, EPOCH, TICK, LINE) = range(
    NF
)
LOAD, STORE, ARRIVE, RELEASE, END = 1, 2, 3, 4, 5
OK, OUT_OF_BOUNDS, SOURCE_OUT_OF_BOUNDS = 0, 1, 2
NO_INDEX = -(2**31)
#: A slot's tag: ``src_idx * TAG_ARRAYS + src_arr`` of the global element copied into it, or:
TAG_ZERO = -1  # a constant was stored (the boundary check's zero-fill)
TAG_NEVER = -2  # no thread of the block has written the slot
TAG_COMPUTED = -4  # a computed value (not a plain copy of one global element)
TAG_ARRAYS = 8

#: How the rewritten kernels lay the log out in device memory. Field ``f`` of
#: thread ``t``'s ``n``-th event is ``ev[(n * NF + f) * T + t]`` and its two
#: values ``vals[(n * 2 + k) * T + t]`` (``T`` logged threads): the threads of a
#: warp write one event's field side by side, in whole sectors. The op, flag,
#: array and line share the first word (``op | flag << 3 | (arr + 1) << 5 |
#: line << 13``); the fields an access of its kind always gives the same value
#: (a global access's tag and source, a barrier's index) are not written.
#: :func:`vizmm.record.instrument.decode` makes the ``(threads, cap, NF)`` log of
#: :data:`FIELDS` from it, the same from a GPU as from the simulator.
LINE_SHIFT, ARR_SHIFT, FLAG_SHIFT = 13, 5, 3
#: The largest array id and source line one packed word holds.
MAX_ARRAYS, MAX_LINE = 254, (1 << (31 - LINE_SHIFT)) - 1
#: In the simulator the log is a list of rows, one per event, in the order the
#: threads logged them: the thread's row of the log, its event number, the packed
#: word, then the fields from ``idx`` to ``tick`` of :data:`FIELDS`, the value and
#: the accumulator. :func:`vizmm.record.instrument.run` lays them out as above.
SIM_ROW = ("t", "n", "word", *FIELDS[IDX : TICK + 1], "value", "acc")


#: Ops of the events a user kernel's recording adds for :func:`vizmm.check`: a product
#: accumulated (its two factors' tags), and an accumulator's value moved (kept, reset or
#: added into another accumulator or an array element).
TERM, MOVE = 6, 7
#: A MOVE's flag: the destination takes the source's terms, or adds them to its own.
MOVE_SET, MOVE_ADD = 0, 1
