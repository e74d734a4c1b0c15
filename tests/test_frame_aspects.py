"""A frame made aspect by aspect: only what is asked for, kept under the frame's key.

The oracles are the book's (Fig. 5.9: thread (ty, tx) of block (by, bx) copies
``M[by*T + ty][ph*T + tx]`` into ``Mds[ty][tx]`` and ``N[ph*T + ty][bx*T + tx]``
into ``Nds[ty][tx]``; Pvalue after the last phase is P = M @ N, from NumPy)
and the dataclass's own field list; a field of an aspect not asked for must
fail on use, never pass for a value.
"""

import dataclasses
import gc
import weakref

import numpy as np
import pytest

import vizmm
from vizmm.replay import Replay, Sub
from vizmm.replay import frame_aspects as fa
from vizmm.replay.frame import (
    ASPECT_FIELDS,
    ASPECTS,
    BASE_FIELDS,
    AspectNotComputed,
    Frame,
    NotComputed,
)

T, BLOCK = 2, (0, 1)
LIGHT = {"caption", "slots", "threads", "counters"}  # the lightest page's aspects


@pytest.fixture
def trace(record_sim):
    M = np.arange(16, dtype=np.float32).reshape(4, 4) / 4
    N = (np.arange(16, dtype=np.float32).reshape(4, 4) - 5) / 2
    return record_sim(M=M, N=N, tile_width=T, kernel="tiled")


def test_every_field_of_a_frame_is_in_exactly_one_aspect_or_the_base():
    fields = [f.name for f in dataclasses.fields(Frame)]
    grouped = list(BASE_FIELDS) + [f for names in ASPECT_FIELDS.values() for f in names]
    assert sorted(grouped) == sorted(fields)  # none twice, none left out
    assert len(fields) == 66
    assert ASPECTS == tuple(ASPECT_FIELDS) and set(fa.MAKERS) == set(ASPECTS)


def test_the_lightest_page_gets_the_books_values_and_nothing_else(trace):
    replay = Replay(trace, BLOCK)
    by, bx = BLOCK
    ph = 1
    i = replay.index_of(ph, Sub.LOAD_N)
    frame = replay.frame(i, LIGHT)
    assert frame.aspects == frozenset(LIGHT)
    rows, cols = by * T + np.arange(T), bx * T + np.arange(T)
    # Fig. 5.9: Mds[ty][tx] = M[Row][ph*T + tx], Nds[ty][tx] = N[ph*T + ty][Col]
    assert np.array_equal(frame.mds_value, trace.M[np.ix_(rows, ph * T + np.arange(T))])
    assert np.array_equal(frame.nds_value, trace.N[np.ix_(ph * T + np.arange(T), cols)])
    assert frame.nds_now.all() and not frame.mds_now.any()  # this step loads N
    # Global reads so far: two tiles of T*T per phase, the same for the naive kernel
    # times T (Section 5.1): 2 phases loaded = 16 reads, each thread's 4 terms fed.
    assert frame.loads_so_far == 2 * 2 * T * T and frame.terms_loaded == 2 * T
    assert frame.naive_loads_so_far == 2 * T * T * frame.terms_loaded
    assert frame.cgma == T
    assert frame.caption.startswith("Phase 1: each thread copies one N element")
    last = replay.frame(len(replay) - 1, {"threads"})
    P = trace.M.astype(np.float64) @ trace.N.astype(np.float64)
    assert np.allclose(last.pvalue, P[np.ix_(rows, cols)], rtol=1e-6)
    # The whole frame holds the same values.
    whole = replay.frame(i)
    assert whole.aspects == frozenset(ASPECTS)
    for name in LIGHT:
        for field in ASPECT_FIELDS[name]:
            a, b = getattr(frame, field), getattr(whole, field)
            assert (
                np.array_equal(a, b, a.dtype.kind == "f") if isinstance(a, np.ndarray) else a == b
            )


@pytest.mark.parametrize(
    "use",
    [
        lambda f: bool(f.m_state),
        lambda f: f.m_state.sum(),
        lambda f: np.asarray(f.m_state),
        lambda f: f.m_state[0, 0],
        lambda f: f.m_state == 1,
        lambda f: len(f.ghosts),
        lambda f: list(f.ghosts),
        lambda f: f"{f.source_line}",
        lambda f: f.source_line + 1,
        lambda f: f.table,  # table_of not made
        lambda f: f.transactions.warp,
        lambda f: f.thread_terms.get((0, 0)),
        lambda f: f.p_wrong.any(),
    ],
)
def test_a_field_not_asked_for_fails_on_use(trace, use):
    frame = Replay(trace, BLOCK).frame(3, {"caption"})
    with pytest.raises(AspectNotComputed, match=r"Frame\.\w+ was not computed.*aspect '\w+'"):
        use(frame)


def test_what_a_partial_frame_says_it_holds(trace):
    frame = Replay(trace, BLOCK).frame(5, ["slots", "counters"])
    assert frame.has("slots") and frame.has("counters") and not frame.has("threads")
    assert isinstance(frame.pvalue, NotComputed) and frame.pvalue.aspect == "threads"
    assert repr(frame.pvalue) == "NotComputed('pvalue', 'threads')"
    with pytest.raises(AspectNotComputed, match="threads"):
        _ = frame.cgma  # reads thread_valid
    # The base is always there: where the frame is and its key.
    assert frame.index == 5 and frame.block == BLOCK and frame.key[-1] == 5
    with pytest.raises(ValueError, match="unknown aspect"):
        frame.has("colours")


@pytest.mark.parametrize("bad", [{"slots", "colours"}, "slots", ["mds"]])
def test_unknown_aspects_are_refused_with_the_list(trace, bad):
    with pytest.raises(ValueError, match="caption, slots, threads"):
        Replay(trace, BLOCK).frame(0, bad)


def test_an_aspect_is_made_once_per_frame_key(trace, monkeypatch):
    made = []
    real = fa.MAKERS["slots"]

    def spy(replay, at):
        made.append(at.key)
        return real.make(replay, at)

    monkeypatch.setitem(fa.MAKERS, "slots", fa._Maker(spy, True))
    k = Replay(trace, BLOCK).index_of(0, Sub.K, 1)
    first = Replay(trace, BLOCK).frame(k, {"slots"})
    again = Replay(trace, BLOCK).frame(k, {"slots", "matrices"})  # another replay, same key
    assert len(made) == 1  # matrices at a k step needs the slots: kept, not made again
    assert again.mds_src is first.mds_src
    Replay(trace, BLOCK, focus=(1, 0)).frame(k, {"slots"})  # another key
    assert len(made) == 2
    # matrices needed the slots; they are kept but not put on a frame that did not ask
    assert isinstance(Replay(trace, BLOCK).frame(k, {"matrices"}).mds_src, NotComputed)


def test_kept_arrays_are_read_only(trace):
    frame = Replay(trace, BLOCK).frame(4)
    with pytest.raises(ValueError, match="read-only"):
        frame.mds_state[0, 0] = 0
    assert frame.mds_state.copy().flags.writeable


def test_the_store_keeps_at_most_its_bytes_and_goes_with_the_trace(trace, monkeypatch):
    made = []
    real = fa.MAKERS["counters"]

    def spy(replay, at):
        made.append(at.index)
        return real.make(replay, at)

    monkeypatch.setitem(fa.MAKERS, "counters", fa._Maker(spy, True))
    monkeypatch.setattr(fa, "KEPT_BYTES", 1)  # nothing fits: made every time
    replay = Replay(trace, BLOCK, "phase", "recorded")
    replay.frame(1, {"counters"})
    replay.frame(1, {"counters"})
    assert made == [1, 1]
    monkeypatch.setattr(fa, "KEPT_BYTES", 2**20)
    replay.frame(2, {"counters"})
    replay.frame(2, {"counters"})
    assert made == [1, 1, 2]
    # What is kept lives on the trace: it goes when the trace goes.
    t = vizmm.record(backend="simulator", quiet=True, width=2, tile_width=2, kernel="tiled")
    assert all(f.has("slots") for f in Replay(t).frames())
    gone = weakref.ref(t)
    del t
    gc.collect()
    assert gone() is None


@pytest.mark.parametrize("focus", [None, (1, 0)])
def test_narration_needs_only_its_aspects(trace, focus):
    from vizmm.replay.narration import NARRATED_ASPECTS, narrate

    replay = Replay(trace, BLOCK, focus=focus)
    for i in range(len(replay)):  # every sub-step kind, the P store included
        said = narrate(Replay(trace, BLOCK, focus=focus).frame(i, NARRATED_ASPECTS))
        assert said == narrate(replay.frame(i))
    last = narrate(replay.frame(len(replay) - 1, NARRATED_ASPECTS))
    if focus is not None:  # thread (1,0) of block (0,1) stores P_{1,2} = (M @ N)[1, 2]
        P = trace.M.astype(np.float64) @ trace.N.astype(np.float64)
        assert last.endswith("P₁,₂.") and f"{P[1, 2]:g}" in last


def test_side_by_side_frames_take_the_aspects_too(trace):
    from vizmm.replay import Lockstep

    left, right = Lockstep(Replay(trace, BLOCK), Replay(trace, (1, 1))).frames(5, {"caption"})
    assert left.aspects == right.aspects == frozenset({"caption"})
    assert left.caption == right.caption  # the same moment of two blocks of one kernel
