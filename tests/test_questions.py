"""Predict-then-reveal questions: their answers against the book and hand-computed loads.

Oracles: the Fig. 5.8 table transcribed from the book, the sentences of
Section 5.5 about Fig. 5.11 and 5.12, the index formulas of Fig. 5.9 / 5.13
evaluated here with NumPy, and the trace's raw barrier tickets.
"""

import json
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from vizmm.replay import Replay, SlotState, Sub  # noqa: E402
from vizmm.replay.questions import (  # noqa: E402
    KINDS,
    Question,
    answer_label,
    block_questions,
    pick_label,
    question_at,
    quiz,
    score,
)
from vizmm.serve.catalogue import CATALOGUE, PRESETS  # noqa: E402


@pytest.fixture(scope="module")
def tr():
    return {key: CATALOGUE.get(key) for key in ("fig5-8", "fig5-11", "fig5-9-3x3", "general")}


# Fig. 5.8 of the book, block_{0,0}: thread (ty, tx) -> phase -> (M element, N element)
FIG_5_8 = {
    (0, 0): [((0, 0), (0, 0)), ((0, 2), (2, 0))],
    (0, 1): [((0, 1), (0, 1)), ((0, 3), (2, 1))],
    (1, 0): [((1, 0), (1, 0)), ((1, 2), (3, 0))],
    (1, 1): [((1, 1), (1, 1)), ((1, 3), (3, 1))],
}


@pytest.mark.parametrize("thread", list(FIG_5_8))
def test_copies_are_the_fig_5_8_table(tr, thread):
    qs = block_questions(tr["fig5-8"], (0, 0), kinds=["copy_m", "copy_n"], thread=thread)
    assert [(q.kind, q.phase) for q in qs] == [
        ("copy_m", 0),
        ("copy_n", 0),
        ("copy_m", 1),
        ("copy_n", 1),
    ]
    for q in qs:
        m, n = FIG_5_8[thread][q.phase]
        want = ("M", *m) if q.kind == "copy_m" else ("N", *n)
        assert q.answer == {want}
        assert q.check([want]) and not q.check([]) and not q.check([want, ("M", 3, 3)])
        assert q.thread == thread and f"({thread[0]},{thread[1]})" in q.prompt
        assert pick_label(want) in q.explanation


def test_copies_follow_the_index_formulas_in_every_block(tr):
    # Fig. 5.9: Mds[ty][tx] = M[Row][ph*T + tx], Nds[ty][tx] = N[ph*T + ty][Col]
    t = tr["general"]
    T = t.tile_width
    j, k, l = t.shape
    gy, gx = t.grid
    checked = 0
    for by in range(gy):
        for bx in range(gx):
            for ty in range(T):
                for tx in range(T):
                    for q in block_questions(t, (by, bx), ["copy_m", "copy_n"], (ty, tx)):
                        ph = q.phase
                        if q.kind == "copy_m":
                            want = ("M", by * T + ty, ph * T + tx)
                            assert want[1] < j and want[2] < k
                        else:
                            want = ("N", ph * T + ty, bx * T + tx)
                            assert want[1] < k and want[2] < l
                        assert q.answer == {want}
                        checked += 1
    # every in-bounds element of every tile is asked about once: sum over blocks
    # and phases of the elements inside M and N
    rows = np.arange(gy * T)[:, None]
    m_in = sum(
        int(((rows < j) & (ph * T + np.arange(T)[None, :] < k)).sum()) * gx
        for ph in range(t.n_phases)
    )
    cols = np.arange(gx * T)[None, :]
    n_in = sum(
        int(((ph * T + np.arange(T)[:, None] < k) & (cols < l)).sum()) * gy
        for ph in range(t.n_phases)
    )
    assert checked == m_in + n_in


def test_zero_fill_is_fig_5_11_and_5_12(tr):
    t = tr["fig5-11"]
    # Fig. 5.11, block_{0,0} phase 1: M_{0,3}, M_{1,3} (threads (0,1), (1,1)) and
    # N_{3,0}, N_{3,1} (threads (1,0), (1,1)) do not exist
    (q,) = [q for q in block_questions(t, (0, 0), ["zero_fill"]) if q.phase == 1]
    assert q.answer == {("Mds", 0, 1), ("Mds", 1, 1), ("Nds", 1, 0), ("Nds", 1, 1)}
    assert q.multiple and set(q.views) == {"Mds", "Nds"}
    # Fig. 5.12, block_{1,1} phase 0: M_{3,0}, M_{3,1} (threads (1,0), (1,1)) and
    # N_{0,3}, N_{1,3} (threads (0,1), (1,1))
    (q,) = [q for q in block_questions(t, (1, 1), ["zero_fill"]) if q.phase == 0]
    assert q.answer == {("Mds", 1, 0), ("Mds", 1, 1), ("Nds", 0, 1), ("Nds", 1, 1)}
    assert "M_{3,0}" in q.explanation and "N_{1,3}" in q.explanation
    # phase 0 of block_{0,0} (Fig. 5.7's first phase) has nothing to fill: answer "none"
    (q,) = [q for q in block_questions(t, (0, 0), ["zero_fill"]) if q.phase == 0]
    assert q.answer == frozenset() and q.check([]) and q.answer_text == "none"
    # the unchecked kernel fills nothing: no such question
    assert block_questions(tr["fig5-9-3x3"], (1, 1), ["zero_fill"]) == []


def test_wrong_element_is_the_books_row_wrap(tr):
    t = tr["fig5-9-3x3"]
    # Section 5.5: "Although thread_{0,1} is attempting to access M_{0,3}, it will end
    # up getting M_{1,0}" (block_{0,0}, phase 1)
    (q,) = block_questions(t, (0, 0), ["wrong_element"], thread=(0, 1))
    assert q.phase == 1 and "M_{0,3}" in q.prompt and q.answer == {("M", 1, 0)}
    (q,) = block_questions(t, (0, 0), ["wrong_element"], thread=(1, 1))
    assert q.answer == {("M", 2, 0)}  # M_{1,3}: linear 1*3 + 3 = 6 = M_{2,0}
    # Fig. 5.12, block_{1,1} phase 0: N_{0,3}, N_{1,3} wrap to the next rows' first element;
    # M_{3,0}, M_{3,1} are past the end of M (out of the allocation): no element to click
    got = {q.thread: q for q in block_questions(t, (1, 1), ["wrong_element"], thread=(0, 1))}
    assert got[(0, 1)].answer == {("N", 1, 0)} and "N_{0,3}" in got[(0, 1)].prompt
    (q,) = block_questions(t, (1, 1), ["wrong_element"], thread=(1, 1))
    assert q.answer == {("N", 2, 0)} and q.views == ("N",)
    assert block_questions(t, (1, 1), ["wrong_element"], thread=(1, 0)) == []
    # the checked kernel reads no wrong element
    assert block_questions(tr["fig5-11"], (0, 0), ["wrong_element"]) == []


def _hand_loads(t, block, ph):
    """Global loads of block up to phase ph, from the index formulas (Fig. 5.9 / 5.13)."""
    j, k, l = t.shape
    T = t.tile_width
    by, bx = block
    ty, tx = np.meshgrid(np.arange(T), np.arange(T), indexing="ij")
    total = 0
    for p in range(ph + 1):
        mr, mc = by * T + ty, p * T + tx
        nr, nc = p * T + ty, bx * T + tx
        if t.kernel == "tiled":  # no checks: every load whose linear index is allocated
            total += int((mr * k + mc < j * k).sum()) + int((nr * l + nc < k * l).sum())
        else:
            total += int(((mr < j) & (mc < k)).sum()) + int(((nr < k) & (nc < l)).sum())
    valid = int(((by * T + ty < j) & (bx * T + tx < l)).sum())
    naive = 2 * valid * min(k, (ph + 1) * T)
    return total, naive


def test_loads_are_the_book_counts(tr):
    # Fig. 5.8: each phase loads 4 M and 4 N elements; the naive kernel reads 2 per
    # term per thread: 16 after phase 0 (2 terms), 32 after phase 1 (4 terms)
    qs = block_questions(tr["fig5-8"], (0, 0), ["loads"])
    assert [q.answer_text for q in qs] == ["8 tiled · 16 naive", "16 tiled · 32 naive"]
    for q in qs:
        assert len(q.choices) == 4 and len(set(q.choices)) == 4 and q.views == ("choice",)


@pytest.mark.parametrize("key", ["fig5-8", "fig5-11", "fig5-9-3x3", "general"])
def test_loads_agree_with_hand_derived_counts(tr, key):
    t = tr[key]
    gy, gx = t.grid
    for by in range(gy):
        for bx in range(gx):
            for q in block_questions(t, (by, bx), ["loads"]):
                tiled, naive = _hand_loads(t, (by, bx), q.phase)
                assert q.answer_text == f"{tiled} tiled · {naive} naive", (by, bx, q.phase)
                # and the replay's counter shows it at the reveal step
                f = Replay(t, (by, bx)).frame(q.reveal_step)
                assert (f.loads_so_far, f.naive_loads_so_far) == (tiled, naive)


def test_barrier_wait_names_the_last_ticket(tr):
    t = tr["fig5-11"]
    for block in [(0, 0), (1, 1)]:
        for q in block_questions(t, block, ["barrier_wait"]):
            tickets = t.barrier_tick[t.slot(block), q.phase, 0, 0]  # arrivals at barrier 1
            last = tuple(int(v) for v in np.unravel_index(np.argmax(tickets), tickets.shape))
            assert q.thread == last and q.order == "recorded"
            others = {("threads", y, x) for y in range(2) for x in range(2)} - {("threads", *last)}
            assert q.answer == others
            assert not q.check(others | {("threads", *last)})


def test_view_hides_and_reveal_shows_the_answer(tr):
    t = tr["fig5-11"]
    for q in block_questions(t, (1, 1)):
        r = Replay(t, q.block, q.granularity, q.order)
        before, after = r.frame(q.view_step), r.frame(q.reveal_step)
        assert q.view_step < q.reveal_step
        if q.kind == "zero_fill":
            assert r.steps[q.view_step].phase in (None, q.phase - 1)  # before the loads
            got = {("Mds", y, x) for y, x in np.argwhere(after.mds_state == SlotState.ZERO)}
            got |= {("Nds", y, x) for y, x in np.argwhere(after.nds_state == SlotState.ZERO)}
            assert got == set(q.answer)
        if q.kind in ("copy_m", "copy_n"):
            (pick,) = q.answer
            ty, tx = q.thread
            src = before.mds_src if q.kind == "copy_m" else before.nds_src
            now = after.mds_src if q.kind == "copy_m" else after.nds_src
            assert tuple(now[ty, tx]) == pick[1:] and tuple(src[ty, tx]) != pick[1:]
        if q.kind == "barrier_wait":
            assert r.steps[q.view_step].sub == Sub.LOAD_N


def test_public_part_holds_no_answer(tr):
    for key in tr:
        for q in block_questions(tr[key], (0, 0)):
            text = json.dumps(q.public())
            assert q.explanation not in text
            assert "answer" not in q.public() and "explanation" not in q.public()
            if q.kind in ("copy_m", "copy_n", "wrong_element"):
                assert answer_label(q, q.answer) not in text


def test_quiz_is_short_in_order_and_scored(tr):
    for key in tr:
        qs = quiz(tr[key], PRESETS[key].block)
        assert 5 <= len(qs) <= 10
        assert [q.phase for q in qs] == sorted(q.phase for q in qs)
        kinds = {q.kind for q in qs}
        assert {"copy_m", "copy_n", "barrier_wait", "loads"} <= kinds
    assert "zero_fill" in {q.kind for q in quiz(tr["fig5-11"])}
    assert "wrong_element" in {q.kind for q in quiz(tr["fig5-9-3x3"])}
    qs = quiz(tr["fig5-8"], n=5)
    assert len(qs) == 5
    answers = {0: list(qs[0].answer), 1: [("N", 3, 3)], 3: list(qs[3].answer)}
    s = score(qs, answers)
    assert (s.correct, s.answered, s.total) == (2, 3, 5) and s.percent == 40.0


def test_errors_in_plain_words(tr):
    with pytest.raises(ValueError, match="5 to 10 questions"):
        quiz(tr["fig5-8"], n=11)
    with pytest.raises(ValueError, match="unknown question kind"):
        block_questions(tr["fig5-8"], kinds=["guess"])
    with pytest.raises(KeyError, match="outside the 2 x 2 grid"):
        block_questions(tr["fig5-8"], (5, 0))
    q = block_questions(tr["fig5-8"], kinds=["copy_m"])[0]
    with pytest.raises(ValueError, match="unknown view"):
        q.check([("P", 0, 0)])
    with pytest.raises(ValueError, match="has 2 indices"):
        q.check([("M", 0)])
    assert set(KINDS) >= {q.kind for q in block_questions(tr["fig5-8"])}
    assert isinstance(q, Question)


def test_question_at_a_step(tr):
    t = tr["fig5-8"]
    q = question_at(t, (0, 0), 0)
    assert q.view_step == 0
    late = question_at(t, (0, 0), 9)
    assert late.view_step >= 9 and late.phase == 1
    assert question_at(t, (0, 0), 17) is None


def test_hazard_reads_are_the_recorded_wrong_reads():
    # The barrier lab's 4 x 4 kernel without barrier 1: the threads that read a wrong
    # element at k are those whose recorded tag is not the book's element (Fig. 5.9:
    # Mds[ty][k] holds M[Row][ph*T + k], Nds[k][tx] holds N[ph*T + k][Col]).
    from vizmm.serve.catalogue import CATALOGUE

    t = CATALOGUE.get("lab-4x4-drop1")
    T = t.tile_width
    j, k, l = t.shape
    asked = 0
    for block in [tuple(b) for b in t.detail_blocks.tolist()]:
        by, bx = block
        s = t.slot(block)
        for q in block_questions(t, block, ["hazard"]):
            kk = Replay(t, block).steps[q.reveal_step].k
            ph = q.phase
            wrong = set()
            for ty in range(T):
                for tx in range(T):
                    m_tag = (by * T + ty) * k + ph * T + kk
                    n_tag = (ph * T + kk) * l + bx * T + tx
                    got = t.shared_reads[s, ph, ty, tx, kk]
                    if got[0] != m_tag or got[1] != n_tag:
                        wrong.add(("threads", ty, tx))
            assert q.answer == wrong and wrong, (block, ph, kk)
            assert "barrier 1" in q.prompt and "read-after-write" in q.explanation
            asked += 1
    assert asked >= 2
    assert "hazard" in {q.kind for q in quiz(t)}
    # with both barriers kept there is nothing to ask
    assert block_questions(CATALOGUE.get("fig5-8"), (0, 0), ["hazard"]) == []
