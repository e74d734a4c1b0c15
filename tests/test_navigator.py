"""The replay navigator: which block, thread and step a page shows when a person moves.

Oracles are hand derivations from the book's Fig. 5.8 launch (4 x 4 matrices,
TILE_WIDTH 2: a 2 x 2 grid of blocks, two phases) and the step structure of
Fig. 5.9's loop: per phase, load M, load N, barrier 1 (arrive, release), one
step per k (TILE_WIDTH of them), barrier 2 (arrive, release).
"""

import os

import pytest

import vizmm
from vizmm.replay import Sub
from vizmm.replay.navigator import Position, clamp, default_block, focus_in, place

DATA = os.path.join(os.path.dirname(vizmm.__file__), "data")


@pytest.fixture(scope="module")
def fig58():
    return vizmm.load(os.path.join(DATA, "fig5-8.vizmm"))


def test_steps_of_fig_5_8_and_the_clamp(fig58):
    p = place(fig58, Position(step=999))
    # start + 2 phases x (load M, load N, arrive 1, release 1, k=0, k=1, arrive 2, release 2)
    # + write P
    assert p.count == 1 + 2 * (4 + 2 + 2) + 1 == 18
    assert p.position.step == 17
    # pages number steps from 1: the 1000th step of 18 is past the end, and the page says so
    assert p.note.text == "Step 1000 is past the last step of this replay (18); showing step 18."
    assert place(fig58, Position(step=17)).note is None
    assert clamp(-5, p.replay) == 0 and clamp(3, None) == 0


def test_a_block_outside_the_grid_falls_back_and_says_so(fig58):
    p = place(fig58, Position(block=(5, 0)))
    assert p.position.block == (0, 0)
    assert p.note.kind == "warning"
    assert "outside this trace's 2 x 2 grid (by 0..1, bx 0..1)" in p.note.text


def test_a_block_not_recorded_keeps_the_block_shown(record_sim):
    # a window of one detailed block of a 3 x 3 grid (Fig. 5.13, Width 6, TILE_WIDTH 2)
    tr = record_sim(width=6, tile_width=2, kernel="boundary", window=[(1, 1), (2, 0)])
    first = place(tr, Position(block=(2, 0)))
    assert first.position.block == (2, 0) and first.note is None
    moved = place(tr, Position(block=(0, 2)), first)
    assert moved.position.block == (2, 0)
    assert "not recorded per thread" in moved.note.text and "(2,0)" in moved.note.text
    # a new trace opens on its first detailed block without a word
    fresh = place(tr, Position(block=(0, 2)), first, new_trace=True)
    assert fresh.position.block == default_block(tr) == (1, 1) and fresh.note is None


def test_a_thread_outside_the_tile_is_not_followed(fig58):
    assert focus_in(fig58, (1, 1)) == (1, 1)
    assert focus_in(fig58, (2, 0)) is None and focus_in(fig58, (-1, -1)) is None
    assert place(fig58, Position(focus=(0, 7))).position.focus is None


def test_switching_granularity_keeps_the_moment(fig58):
    sub = place(fig58, Position(step=0))
    # phase 1, k = 0 in sub-steps: start (0), phase 0 (1..8), phase 1 loads at 9, 10 ...
    k_step = sub.replay.index_of(1, Sub.K, 0)
    assert k_step == 1 + 8 + 4
    at_k = place(fig58, Position(step=k_step), sub)
    ph = place(fig58, Position(step=k_step, granularity="phase"), at_k, same_moment=True)
    # phase granularity: start (0), phase 0 (1), phase 1 (2), write P (3)
    assert ph.position.step == 2 and ph.replay.steps[2].phase == 1
    back = place(fig58, Position(step=2), ph, same_moment=True)
    # a whole phase maps to its end: phase 1's barrier 2 released, the step before write P
    assert back.position.step == 16


def test_the_naive_kernel_has_nothing_to_replay(record_sim):
    tr = record_sim(width=4, tile_width=2, kernel="naive")
    p = place(tr, Position())
    assert p.replay is None and p.note.kind == "danger" and "Fig. 3.11" in p.note.text


def test_bad_modes_are_refused():
    with pytest.raises(ValueError, match="granularity"):
        Position(granularity="warp")
    with pytest.raises(ValueError, match="order"):
        Position(order="random")


def test_a_question_is_asked_from_the_phase_shown(fig58):
    # Phase granularity: start, phase 0, phase 1, write P. A question at phase 1
    # is about phase 1 from its first sub-step: load M of phase 1 is step
    # 1 + 8 = 9 of the lockstep sub-step replay (1-based page step 10).
    from vizmm.replay import Replay
    from vizmm.replay.navigator import substep_moment

    phases = Replay(fig58, (0, 0), "phase")
    assert [s.sub for s in phases.steps] == [Sub.START, Sub.PHASE, Sub.PHASE, Sub.WRITE_P]
    assert substep_moment(fig58, (0, 0), phases.steps[2]) == 9
    assert substep_moment(fig58, (0, 0), phases.steps[1]) == 1
    assert substep_moment(fig58, (0, 0), phases.steps[3]) == 17
    # Recorded order: the same sub-step of the same phase and k.
    recorded = Replay(fig58, (0, 0), "substep", "recorded")
    k1 = next(i for i, s in enumerate(recorded.steps) if s.sub == Sub.K and s.k == 1)
    assert substep_moment(fig58, (0, 0), recorded.steps[k1]) == 6  # phase 0, k = 1


def test_a_whole_phase_maps_to_its_last_sub_step_without_barrier_2(record_sim):
    # Barrier lab, barrier 2 removed: a phase's sub-steps are load M, load N,
    # arrive 1, release 1, k = 0, k = 1 (no barrier 2). Phase 0 ends at k = 1:
    # step 1 + 5 = 6.
    from vizmm.replay import Replay

    lab = record_sim(width=4, tile_width=2, kernel="tiled", drop_barrier=2)
    phases = Replay(lab, (0, 0), "phase")
    subs = Replay(lab, (0, 0))
    end = subs.index_at(phases.steps[1])
    assert end == 6 and subs.steps[end].sub == Sub.K and subs.steps[end].k == 1
