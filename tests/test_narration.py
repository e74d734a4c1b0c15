"""Each step in words (vizmm.replay.narration), against the book's indices and NumPy.

Fig. 5.9, block (by, bx), phase ``ph``: thread (ty, tx) copies
``M[Row][ph*TILE_WIDTH + tx]`` into ``Mds[ty][tx]`` and
``N[ph*TILE_WIDTH + ty][Col]`` into ``Nds[ty][tx]``; at ``k`` it reads
``Mds[ty][k]`` and ``Nds[k][tx]``; it stores ``P[Row][Col]``, the dot product
of row Row of M and column Col of N. The expected sentences are built here
from those formulas and the trace's M and N, not from the replay.
"""

import numpy as np
import pytest

from vizmm.replay import Replay, Sub
from vizmm.replay.narration import narrate, subscript

SUB = str.maketrans("0123456789", "₀₁₂₃₄₅₆₇₈₉")


def el(matrix: str, r: int, c: int) -> str:
    return f"{matrix}{str(r).translate(SUB)},{str(c).translate(SUB)}"


def num(v) -> str:
    v = float(v)
    return str(int(v)) if v == int(v) else f"{v:.4g}"


@pytest.fixture(scope="module")
def fig58(record_sim):
    return record_sim(j=4, k=4, l=4, tile_width=2, kernel="tiled", seed=0)


def test_subscript_is_the_books_notation():
    assert subscript("M", 0, 3) == "M₀,₃"
    assert subscript("P", 12, 10) == "P₁₂,₁₀"


@pytest.mark.parametrize("block", [(0, 0), (1, 0)])
@pytest.mark.parametrize("focus", [(0, 1), (1, 0)])
def test_a_followed_thread_is_narrated_at_every_step(fig58, block, focus):
    T, (by, bx), (ty, tx) = 2, block, focus
    M, N = fig58.M.astype(np.float64), fig58.N.astype(np.float64)
    Row, Col = by * T + ty, bx * T + tx
    replay = Replay(fig58, block, focus=focus)
    seen = set()
    for i in range(len(replay)):
        f = replay.frame(i)
        text = narrate(f)
        st = f.step
        assert text.startswith(f"Step {i + 1} of {len(replay)}. ")
        seen.add(st.sub)
        if st.sub is Sub.LOAD_M:
            c = st.phase * T + tx
            want = f"Phase {st.phase}, load M: thread ({ty},{tx}) copies {el('M', Row, c)} "
            want += f"(value {num(M[Row, c])}) into Mds[{ty}][{tx}]."
            assert text.endswith(want), text
        elif st.sub is Sub.LOAD_N:
            r = st.phase * T + ty
            want = f"Phase {st.phase}, load N: thread ({ty},{tx}) copies {el('N', r, Col)} "
            want += f"(value {num(N[r, Col])}) into Nds[{ty}][{tx}]."
            assert text.endswith(want), text
        elif st.sub is Sub.K:
            c = st.phase * T + st.k
            partial = M[Row, : c + 1] @ N[: c + 1, Col]
            assert f"Phase {st.phase}, k = {st.k}: thread ({ty},{tx}) reads " in text
            assert f"Mds[{ty}][{st.k}], {el('M', Row, c)} (value {num(M[Row, c])})" in text
            assert f"Nds[{st.k}][{tx}], {el('N', c, Col)} (value {num(N[c, Col])})" in text
            assert text.endswith(f"Pvalue is now {num(partial)}."), text
        elif st.sub is Sub.WRITE_P:
            want = f"stores Pvalue {num(M[Row] @ N[:, Col])} into {el('P', Row, Col)}."
            assert text.endswith(want), text
    assert {Sub.START, Sub.LOAD_M, Sub.LOAD_N, Sub.K, Sub.WRITE_P} <= seen


def test_without_a_followed_thread_every_thread_is_narrated(fig58):
    replay = Replay(fig58, (0, 0))
    texts = [narrate(replay.frame(i)) for i in range(len(replay))]
    assert texts[0].startswith("Step 1 of 18. Start: ")
    loads = [t for t in texts if ", load M: " in t]
    assert len(loads) == 2  # one per phase (4 / TILE_WIDTH 2)
    assert all("each thread (ty, tx) copies one M element into Mds[ty][tx]" in t for t in loads)
    assert "thread (0,0)" not in " ".join(texts)  # no thread is named when none is followed


def test_a_zero_filled_load_is_said(record_sim):
    # 3 x 3 with TILE_WIDTH 2 (Fig. 5.13's boundary kernel): phase 1's M tile overhangs M
    t = record_sim(j=3, k=3, l=3, tile_width=2, kernel="boundary", seed=0)
    replay = Replay(t, (0, 0), focus=(0, 1))
    loads = [narrate(replay.frame(i)) for i in range(len(replay))]
    loads = [s for s in loads if ", load M: " in s]
    # phase 1, tx = 1: column 1*2 + 1 = 3 is outside M's 3 columns
    assert loads[1].endswith(
        "Phase 1, load M: thread (0,1) writes 0.0 into Mds[0][1] (its element is outside M)."
    ), loads[1]
