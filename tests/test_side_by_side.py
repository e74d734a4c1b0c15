"""Two replays in lockstep (vizmm.replay.Lockstep) and the side-by-side page.

Oracle: the steps of Fig. 5.9's loop written out by hand. A 4 x 4 block with
TILE_WIDTH 2 runs two phases of (load M, load N, barrier 1, released, k = 0,
k = 1, barrier 2, released); with TILE_WIDTH 4 it runs one phase with k = 0..3.
Side by side, both show the same phase and sub-step where both have one; at
k = 2 and 3 the TILE_WIDTH 2 block waits at its k = 1, and during its second
phase the TILE_WIDTH 4 block waits at the end of its only phase.
"""

import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from served import CHROMIUM, SHOTS, read_status, wait_drawn  # noqa: E402

from vizmm.replay import Lockstep, Replay, Sub, matching_step  # noqa: E402

LOOP = ["load M", "load N", "barrier 1", "barrier 1 released"]
AFTER = ["barrier 2", "barrier 2 released"]


def by_hand(T: int, phases: int) -> list[tuple]:
    """(phase, sub-step, k) of every step of a block, in the book's order."""
    out = [(None, "start", None)]
    for ph in range(phases):
        out += [(ph, s, None) for s in LOOP]
        out += [(ph, "k loop", k) for k in range(T)]
        out += [(ph, s, None) for s in AFTER]
    return out + [(None, "write P", None)]


def where(frame):
    s = frame.step
    return (s.phase, s.sub.value, s.k)


@pytest.fixture(scope="module")
def t2(record_sim):
    return record_sim(width=4, tile_width=2, kernel="boundary")


@pytest.fixture(scope="module")
def t4(record_sim):
    return record_sim(width=4, tile_width=4, kernel="boundary")


def test_tile_width_2_against_4(t2, t4):
    both = Lockstep(Replay(t2), Replay(t4))
    left, right = by_hand(2, 2), by_hand(4, 1)
    assert [where(f) for f in Replay(t2).frames()] == left  # the oracle is the replay's order
    # the joint timeline: start, phase 0 with k = 0..3, phase 1 with k = 0..1, the store
    joint = [(None, "start", None)]
    joint += [(0, s, None) for s in LOOP] + [(0, "k loop", k) for k in range(4)]
    joint += [(0, s, None) for s in AFTER]
    joint += [(1, s, None) for s in LOOP] + [(1, "k loop", k) for k in range(2)]
    joint += [(1, s, None) for s in AFTER] + [(None, "write P", None)]
    assert len(both) == len(joint) == 20
    for i, moment in enumerate(joint):
        fl, fr = both.frames(i)
        l_at, r_at = where(fl), where(fr)
        if moment in left:
            assert l_at == moment
        if moment in right:
            assert r_at == moment
        if moment in left and moment in right:
            assert l_at == r_at  # lockstep: same phase and sub-step on both sides
    # where one side has no such moment it waits at its last step
    k2 = joint.index((0, "k loop", 2))
    assert where(both.frames(k2)[0]) == (0, "k loop", 1)
    ph1 = joint.index((1, "load M", None))
    assert where(both.frames(ph1)[1]) == (0, "barrier 2 released", None)
    assert both.pairs[-1] == (len(left) - 1, len(right) - 1)
    with pytest.raises(IndexError):
        both.frames(20)


def test_same_shapes_go_step_for_step(record_sim):
    checked = record_sim(width=3, tile_width=2, kernel="boundary")
    unchecked = record_sim(width=3, tile_width=2, kernel="tiled")
    both = Lockstep(Replay(checked), Replay(unchecked))
    n = len(Replay(checked))
    assert both.pairs == [(i, i) for i in range(n)]


def test_with_and_without_barrier_1(record_sim):
    # the barrier lab's kernel without its first __syncthreads() has no barrier-1 steps:
    # while the left waits at barrier 1 and is released, the right stays at "load N"
    kept = record_sim(width=4, tile_width=2, kernel="tiled")
    dropped = record_sim(width=4, tile_width=2, kernel="tiled", drop_barrier=(1,))
    both = Lockstep(Replay(kept), Replay(dropped))
    left = by_hand(2, 2)
    assert len(both) == len(left) == 18
    for i, moment in enumerate(left):
        fl, fr = both.frames(i)
        assert where(fl) == moment
        ph, sub, k = moment
        if sub in ("barrier 1", "barrier 1 released"):
            assert where(fr) == (ph, "load N", None)
        else:
            assert where(fr) == moment


def test_matching_step_across_granularity_and_order(t2, t4):
    sub = Replay(t2)
    rec = Replay(t4, order="recorded")
    # barrier 1 of phase 0 with every thread arrived, in recorded order: its last arrival step
    i = sub.index_of(0, Sub.ARRIVE_1)
    j = matching_step(sub.steps[i], 2, rec)
    assert rec.steps[j].sub == Sub.ARRIVE_1 and rec.steps[j].arrived == 16
    assert rec.steps[j + 1].sub == Sub.RELEASE_1
    phases = Replay(t2, granularity="phase")
    # k = 0 of phase 1 lies inside phase 1: the phase replay is still at phase 0's end
    j = matching_step(sub.steps[sub.index_of(1, Sub.K, k=0)], 2, phases)
    assert phases.steps[j].sub == Sub.PHASE and phases.steps[j].phase == 0


# ------------------------------------------------------------ in Chromium
@pytest.mark.browser
@pytest.mark.skipif(not os.path.exists(CHROMIUM), reason=f"{CHROMIUM} is missing")
def test_side_by_side_page_steps_both_in_lockstep(new_page, side_by_side_url):
    url = side_by_side_url
    pg = new_page(viewport={"width": 1600, "height": 1000})
    errors = []
    pg.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    pg.goto(url + "?pair=tile-width")
    pg.wait_for_selector("#vizmm-pair-status[data-ready='true']", timeout=120000)
    st = read_status(pg, "#vizmm-pair-status")
    assert st["count"] == 20 and st["left"]["tile_width"] == 2
    assert st["right"]["tile_width"] == 4
    seen = []
    for step in range(1, 10):
        pg.keyboard.press("ArrowRight")
        pg.wait_for_selector(f"#vizmm-pair-status[data-step='{step}']", timeout=30000)
        st = read_status(pg, "#vizmm-pair-status")
        seen.append(tuple((s["phase"], s["sub"], s["k"]) for s in (st["left"], st["right"])))
    # one numbering: nine presses show "Step 10", and the URL says step=10
    assert "Step 10 / 20" in pg.locator("#vizmm-pair-status").inner_text()
    pg.wait_for_function("() => location.search.includes('step=10')", timeout=10000)
    # load M .. released together, k = 0 and 1 together, then the left waits at k = 1
    assert seen[0] == ((0, "load M", None),) * 2
    assert seen[3] == ((0, "barrier 1 released", None),) * 2
    assert seen[5] == ((0, "k loop", 1),) * 2
    assert seen[6] == ((0, "k loop", 1), (0, "k loop", 2))
    assert seen[7] == ((0, "k loop", 1), (0, "k loop", 3))
    assert seen[8] == ((0, "barrier 2", None),) * 2
    # the counters side by side: TILE_WIDTH 4 loads a 4 x 4 tile at once
    assert st["left"]["loads"] == 8 and st["right"]["loads"] == 32
    os.makedirs(SHOTS, exist_ok=True)
    wait_drawn(pg)
    pg.screenshot(path=os.path.join(SHOTS, "side-by-side-tile-width.png"))
    # another pair from the menu: the unchecked kernel beside the checked one
    pg.goto(url + "?pair=boundary&step=11")  # the URL counts from 1, as the page
    pg.wait_for_selector("#vizmm-pair-status[data-ready='true']", timeout=120000)
    st = read_status(pg, "#vizmm-pair-status")
    assert st["step"] == 10 and st["left"]["step"] == st["right"]["step"] == 10
    assert st["left"]["kernel"] == "boundary" and st["right"]["kernel"] == "tiled"
    wait_drawn(pg)
    pg.screenshot(path=os.path.join(SHOTS, "side-by-side-boundary.png"))
    # with and without barrier 1 (the barrier lab): at barrier 1 the right is past it
    pg.goto(url + "?pair=barrier&step=4")
    pg.wait_for_selector("#vizmm-pair-status[data-ready='true']", timeout=120000)
    st = read_status(pg, "#vizmm-pair-status")
    assert (st["left"]["sub"], st["right"]["sub"]) == ("barrier 1", "load N")
    assert errors == []
