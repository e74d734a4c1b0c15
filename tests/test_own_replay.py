"""A kernel of your own replayed as it really ran: narration and the P stores of its frames.

The expectations are derived by hand from each kernel's source
(tests/check_kernels.py) for block (0, 1) of 4 x 4 matrices with TILE_WIDTH 2
(18 steps: start, per phase load M, load N, barrier 1, its release, k = 0
and 1, barrier 2, its release, then the P store); P values from NumPy's
``M @ N``.
"""

import check_kernels as ck
import numpy as np
import pytest

import vizmm
from vizmm.replay import Replay, Sub
from vizmm.replay.block import CellState
from vizmm.replay.narration import narrate, subscript

T, BLOCK = 2, (0, 1)


def _checked(kernel):
    return vizmm.check(kernel, width=4, tile_width=T, backend="simulator").trace


def test_a_wrong_term_is_not_said_to_be_a_removed_barrier():
    # transposed_tile: Nds[tx][ty] = N[ph*2 + ty][Col], barriers kept. At phase 0, k = 0
    # thread (ty, tx) reads Nds[0][tx], stored by thread (tx, 0): N_{tx,2}; the book's term
    # of its P element (ty, 2 + tx) needs N_{0,2+tx}: wrong where tx = 1, two threads.
    replay = Replay(_checked(ck.transposed_tile), BLOCK)
    i = replay.index_of(0, Sub.K, 0)
    assert i == 5 and replay.first_wrong_read() == 5
    frame = replay.frame(i)
    assert frame.thread_wrong.tolist() == [[False, True], [False, True]]
    assert narrate(frame) == (
        "Step 6 of 18. Phase 0, k = 0: Pvalue += Mds[ty][0] * Nds[0][tx], column 0 of Mds "
        "and row 0 of Nds, read from shared memory. 2 threads multiplied an element that "
        "is not a term of the P element they compute (a wrong term)."
    )
    # k = 1: thread (ty, tx) reads Nds[1][tx] = N_{tx,3}, needs N_{1,2+tx}: wrong where tx = 0
    frame = replay.frame(replay.index_of(0, Sub.K, 1))
    assert frame.thread_wrong.tolist() == [[True, False], [True, False]]
    assert frame.caption.endswith(
        "2 threads multiplied an element that is not a term of the P element they compute "
        "(a wrong term)."
    )


def test_a_missing_barrier_is_said_as_a_read_before_the_store():
    # missing_barrier: no cuda.syncthreads() between the tile loads and the k loop, so a
    # thread may read a slot another thread has not stored yet in this phase.
    replay = Replay(_checked(ck.missing_barrier), BLOCK)
    i = replay.first_wrong_read()
    assert i is not None
    frame = replay.frame(i)
    n = int(frame.thread_wrong.sum())
    said = f"{n} thread{'s' if n > 1 else ''} read a slot before it was stored"
    assert f"{said} (no barrier between the store and the read)." in frame.caption
    assert "removed" not in frame.caption and "Ran ahead" not in frame.caption


def test_the_book_barrier_lab_keeps_its_words(record_sim):
    trace = record_sim(width=4, tile_width=T, kernel="tiled", drop_barrier=1, reads=True)
    replay = Replay(trace, (0, 0))
    frame = replay.frame(replay.first_wrong_read())
    assert "the barrier that would have ordered the read and the write was removed." in (
        frame.caption
    )


@pytest.mark.parametrize(
    ("kernel", "element"),
    [
        # P[Col][Row] = Pvalue with Row = ty, Col = 2 + tx: thread (ty, tx) stores P_{2+tx,ty}
        (ck.wrong_thread_stores, lambda ty, tx: (2 + tx, ty)),
        # Row = by*2 + tx = tx, Col = bx*2 + ty = 2 + ty: thread (ty, tx) stores P_{tx,2+ty}
        (ck.threads_transposed, lambda ty, tx: (tx, 2 + ty)),
    ],
)
def test_frames_draw_the_p_element_each_thread_really_stored(kernel, element):
    trace = _checked(kernel)
    want = np.array([[element(ty, tx) for tx in range(T)] for ty in range(T)])
    replay = Replay(trace, BLOCK, focus=(0, 1))
    last = replay.frame(len(replay) - 1)
    assert last.step.sub is Sub.WRITE_P
    assert last.p_element.tolist() == want.tolist()
    done = {tuple(x) for x in np.argwhere(last.p_state == CellState.DONE).tolist()}
    assert done == {tuple(x) for x in want.reshape(-1, 2).tolist()}
    assert np.argwhere(last.p_focus).tolist() == [list(element(0, 1))]
    P = trace.M.astype(np.float64) @ trace.N.astype(np.float64)
    r, c = element(0, 1)
    value = P[0, 3] if kernel is ck.wrong_thread_stores else P[r, c]  # what it computed
    assert narrate(last) == (
        f"Step 18 of 18. Store of P: thread (0,1) stores Pvalue {value:g} into "
        f"{subscript('P', r, c)}."
    )
