"""The recorded runs reproduce the book's figures (PMPP 4th ed., Figs. 5.8, 5.11, 5.12).

The oracles are the book itself: Fig. 5.8's table typed in below, and the
statements of Section 5.5's text about Figs. 5.11 and 5.12 (which threads
touch which nonexistent elements, and what the linearized layout makes of
them). Nothing here is copied from the code's output.

Thread names: the book writes thread_{a,b} with a = threadIdx.y (ty) and
b = threadIdx.x (tx), as Fig. 5.8 shows (thread_{0,1} loads M_{0,1} into
Mds_{0,1}, i.e. ``Mds[ty][tx]`` with ty=0, tx=1). Elements are M_{row,col}.
"""

import re

import numpy as np
import pytest

from vizmm import Access, PWrite
from vizmm.render.text import format_table, render_text
from vizmm.replay.table import build_table

# Fig. 5.8, "Execution phases of a tiled matrix multiplication" (4 x 4 matrices
# of Fig. 5.7, TILE_WIDTH 2, block_{0,0}), typed in row by row: thread, then
# for phase 0 and phase 1: the M load, the N load, the Pvalue terms.
FIG_5_8 = [
    [
        "thread_{0,0}",
        "M_{0,0} ↓ Mds_{0,0}",
        "N_{0,0} ↓ Nds_{0,0}",
        "PValue_{0,0} += Mds_{0,0} * Nds_{0,0} + Mds_{0,1} * Nds_{1,0}",
        "M_{0,2} ↓ Mds_{0,0}",
        "N_{2,0} ↓ Nds_{0,0}",
        "PValue_{0,0} += Mds_{0,0} * Nds_{0,0} + Mds_{0,1} * Nds_{1,0}",
    ],
    [
        "thread_{0,1}",
        "M_{0,1} ↓ Mds_{0,1}",
        "N_{0,1} ↓ Nds_{0,1}",
        "PValue_{0,1} += Mds_{0,0} * Nds_{0,1} + Mds_{0,1} * Nds_{1,1}",
        "M_{0,3} ↓ Mds_{0,1}",
        "N_{2,1} ↓ Nds_{0,1}",
        "PValue_{0,1} += Mds_{0,0} * Nds_{0,1} + Mds_{0,1} * Nds_{1,1}",
    ],
    [
        "thread_{1,0}",
        "M_{1,0} ↓ Mds_{1,0}",
        "N_{1,0} ↓ Nds_{1,0}",
        "PValue_{1,0} += Mds_{1,0} * Nds_{0,0} + Mds_{1,1} * Nds_{1,0}",
        "M_{1,2} ↓ Mds_{1,0}",
        "N_{3,0} ↓ Nds_{1,0}",
        "PValue_{1,0} += Mds_{1,0} * Nds_{0,0} + Mds_{1,1} * Nds_{1,0}",
    ],
    [
        "thread_{1,1}",
        "M_{1,1} ↓ Mds_{1,1}",
        "N_{1,1} ↓ Nds_{1,1}",
        "PValue_{1,1} += Mds_{1,0} * Nds_{0,1} + Mds_{1,1} * Nds_{1,1}",
        "M_{1,3} ↓ Mds_{1,1}",
        "N_{3,1} ↓ Nds_{1,1}",
        "PValue_{1,1} += Mds_{1,0} * Nds_{0,1} + Mds_{1,1} * Nds_{1,1}",
    ],
]

BOOK_ROWS = FIG_5_8
SUB = re.compile(r"(\w+)_\{(\d+),(\d+)\}")


def _pairs(text):
    """[(name, a, b), ...] of every X_{a,b} in a book cell, in order."""
    return [(n, int(a), int(b)) for n, a, b in SUB.findall(text)]


def _norm(text):
    """The book's cell with our notation: no spaces, → for the book's ↓, Pvalue as in Fig. 5.9."""
    return re.sub(r"\s+", "", text).replace("↓", "→").replace("PValue", "Pvalue")


# ------------------------------------------------------------------ Fig. 5.8
@pytest.fixture(scope="module")
def fig58(record_sim):
    return record_sim(width=4, tile_width=2, kernel="tiled")


@pytest.mark.parametrize("kernel", ["tiled", "boundary", "general"])
def test_fig_5_8_every_thread_loads_what_the_book_says(record_sim, kernel):
    trace = record_sim(width=4, tile_width=2, kernel=kernel)
    for row in BOOK_ROWS:
        ((_, ty, tx),) = _pairs(row[0])
        for ph in (0, 1):
            book_m, book_mds = _pairs(row[1 + 3 * ph])
            book_n, book_nds = _pairs(row[2 + 3 * ph])
            m, n = trace.load_records((0, 0), ph)[(ty, tx)]
            assert book_mds == ("Mds", ty, tx) and book_nds == ("Nds", ty, tx)
            assert (m.kind, "M", m.row, m.col) == (Access.LOADED, *book_m), (ty, tx, ph)
            assert (n.kind, "N", n.row, n.col) == (Access.LOADED, *book_n), (ty, tx, ph)
            assert trace.tile_loads((0, 0), ph)[(ty, tx)] == (book_m[1:], book_n[1:])


def test_fig_5_8_pvalue_after_each_phase(fig58):
    # After phase ph, Pvalue_{ty,tx} holds the dot product over the first
    # (ph+1)*TILE_WIDTH terms (the fourth and seventh columns of Fig. 5.8).
    M, N = fig58.M.astype(np.float64), fig58.N.astype(np.float64)
    for ph in (0, 1):
        for ty in (0, 1):
            for tx in (0, 1):
                expected = M[ty, : 2 * (ph + 1)] @ N[: 2 * (ph + 1), tx]
                assert fig58.thread_pvalues((0, 0), (ty, tx))[ph] == expected
    np.testing.assert_array_equal(fig58.P, M @ N)


def test_fig_5_8_table_text_matches_the_book(fig58):
    table = build_table(fig58, (0, 0), values=False, p_write=False)
    assert len(table.rows) == 4 and len(table.header) == 7
    assert table.threads == [(0, 0), (0, 1), (1, 0), (1, 1)]
    for ours, book in zip(table.rows, BOOK_ROWS, strict=True):
        assert [_norm(c.text) for c in ours] == [_norm(c) for c in book]
    kinds = {c.kind for row in table.rows for c in row[1:]}
    assert kinds == {"loaded", "pvalue"}
    text = format_table(table, unicode=False)
    for row in BOOK_ROWS:
        for cell in row[1:3]:  # e.g. M[0,0] -> Mds[0,0] appears on the thread's line
            assert render_text(_norm(cell).replace("→", " → "), "ascii") in text


# ----------------------------------------------------------------- Fig. 5.11
# 3 x 3 matrices, TILE_WIDTH 2, phase 1 of block_{0,0}. Text of Section 5.5:
# "thread_{0,1} and thread_{1,1} will attempt to load M elements that do not
# exist. Similarly, ... thread_{1,0} and thread_{1,1} will attempt to access N
# elements that do not exist."
FIG_5_11_M_MISSING = {(0, 1), (1, 1)}
FIG_5_11_N_MISSING = {(1, 0), (1, 1)}
THREADS_2X2 = {(0, 0), (0, 1), (1, 0), (1, 1)}


def _kinds(trace, block, ph):
    recs = trace.load_records(block, ph)
    return ({t: m.kind for t, (m, _) in recs.items()}, {t: n.kind for t, (_, n) in recs.items()})


def test_fig_5_11_boundary_kernel_zero_fills_exactly_the_nonexistent_elements(record_sim):
    trace = record_sim(width=3, tile_width=2, kernel="boundary")
    mk, nk = _kinds(trace, (0, 0), 1)
    assert {t for t, k in mk.items() if k == Access.ZERO_FILL} == FIG_5_11_M_MISSING
    assert {t for t, k in nk.items() if k == Access.ZERO_FILL} == FIG_5_11_N_MISSING
    loads = trace.tile_loads((0, 0), 1)
    # The elements that do exist: M_{0,2}, M_{1,2} (column 2 of M), N_{2,0}, N_{2,1}.
    assert loads[(0, 0)] == ((0, 2), (2, 0))
    assert loads[(1, 0)] == ((1, 2), None)
    assert loads[(0, 1)] == (None, (2, 1))
    assert loads[(1, 1)] == (None, None)
    # "thread_{0,1} of block 0,0 calculates a valid P element P_{0,1}"
    assert trace.p_write[trace.slot((0, 0)), 0, 1] == PWrite.WRITTEN
    # With the checks, the result is right (Section 5.5's point).
    np.testing.assert_array_equal(trace.P, trace.M.astype(np.float64) @ trace.N)
    table = build_table(trace, (0, 0), phases=[1])
    assert table.cell((0, 1), "Phase 1: M → Mds").text == "0.0 → Mds_{0,1}"
    assert table.cell((0, 1), "Phase 1: M → Mds").kind == "zero_fill"
    assert table.cell((1, 0), "Phase 1: N → Nds").text == "0.0 → Nds_{1,0}"


def test_fig_5_11_unchecked_kernel_reads_the_wrong_element_and_past_the_allocation(record_sim):
    trace = record_sim(width=3, tile_width=2, kernel="tiled")
    recs = trace.load_records((0, 0), 1)
    # "Although thread_{0,1} is attempting to access M_{0,3}, it will end up getting M_{1,0}."
    m01 = recs[(0, 1)][0]
    assert (m01.kind, m01.row, m01.col, m01.actual) == (Access.WRONG_ELEMENT, 0, 3, (1, 0))
    # thread_{1,1}'s M_{1,3}: the element after M_{1,2} in the linearized layout is M_{2,0}.
    m11 = recs[(1, 1)][0]
    assert (m11.kind, m11.row, m11.col, m11.actual) == (Access.WRONG_ELEMENT, 1, 3, (2, 0))
    # "N accesses by thread_{1,0} and thread_{1,1} ... are to memory locations outside
    # the allocated area for the array": N_{3,0} and N_{3,1}.
    for t, col in (((1, 0), 0), ((1, 1), 1)):
        n = recs[t][1]
        assert (n.kind, n.row, n.col, n.actual) == (Access.OUT_OF_ALLOCATION, 3, col, None)
    # The other loads of the phase are the existing elements.
    assert recs[(0, 0)][0].kind == recs[(1, 0)][0].kind == Access.LOADED
    assert recs[(0, 0)][1].kind == recs[(0, 1)][1].kind == Access.LOADED
    mk, nk = _kinds(trace, (0, 0), 1)
    assert {t for t, k in mk.items() if k != Access.LOADED} == FIG_5_11_M_MISSING
    assert {t for t, k in nk.items() if k != Access.LOADED} == FIG_5_11_N_MISSING
    assert Access.ZERO_FILL not in mk.values() and Access.ZERO_FILL not in nk.values()
    table = build_table(trace, (0, 0), phases=[1])
    cell = table.cell((0, 1), "Phase 1: M → Mds")
    assert (cell.text, cell.kind) == ("M_{0,3}=M_{1,0} → Mds_{0,1}", "wrong_element")
    cell = table.cell((1, 0), "Phase 1: N → Nds")
    assert cell.kind == "out_of_allocation" and cell.text.startswith("N_{3,0} ↛ Nds_{1,0}")


def test_unchecked_reads_follow_the_linearized_index(record_sim):
    # Fig. 5.9 line 19 reads M[Row*Width + ph*TILE_WIDTH + tx]: count, by hand,
    # which element each such index names in a 3 x 3 M (none past the end).
    W, T = 3, 2
    trace = record_sim(width=W, tile_width=T, kernel="tiled")
    m_expected = np.zeros(W * W, int)
    n_expected = np.zeros(W * W, int)
    for by in range(2):
        for bx in range(2):
            for ph in range(2):
                for ty in range(T):
                    for tx in range(T):
                        mi = (by * T + ty) * W + ph * T + tx
                        ni = (ph * T + ty) * W + bx * T + tx
                        if mi < W * W:
                            m_expected[mi] += 1
                        if ni < W * W:
                            n_expected[ni] += 1
    np.testing.assert_array_equal(trace.m_reads.ravel(), m_expected)
    np.testing.assert_array_equal(trace.n_reads.ravel(), n_expected)
    # M_{1,0} is read twice as a wrong element (by block_{0,0} and block_{0,1}).
    assert trace.m_reads[1, 0] == 2 + 2


# ----------------------------------------------------------------- Fig. 5.12
# Phase 0 of block_{1,1}, 3 x 3, TILE_WIDTH 2: "thread_{1,0} and thread_{1,1}
# attempt to access nonexistent M elements M_{3,0} and M_{3,1}, whereas
# thread_{0,1} and thread_{1,1} attempt to access N_{0,3} and N_{1,3}".
FIG_5_12_M = {(1, 0): (3, 0), (1, 1): (3, 1)}
FIG_5_12_N = {(0, 1): (0, 3), (1, 1): (1, 3)}


def test_fig_5_12_boundary_kernel(record_sim):
    trace = record_sim(width=3, tile_width=2, kernel="boundary")
    recs = trace.load_records((1, 1), 0)
    for t, (row, col) in FIG_5_12_M.items():
        m = recs[t][0]
        assert (m.kind, m.row, m.col) == (Access.ZERO_FILL, row, col)
    for t, (row, col) in FIG_5_12_N.items():
        n = recs[t][1]
        assert (n.kind, n.row, n.col) == (Access.ZERO_FILL, row, col)
    mk, nk = _kinds(trace, (1, 1), 0)
    assert {t for t, k in mk.items() if k == Access.ZERO_FILL} == set(FIG_5_12_M)
    assert {t for t, k in nk.items() if k == Access.ZERO_FILL} == set(FIG_5_12_N)
    # "thread_{1,0} in block_{1,1} does not calculate any valid P element. However,
    # it needs to load M_{2,1} during phase 0 for other threads in block_{1,1} to use."
    # With Fig. 5.8's (ty, tx) naming, M_{2,1} = M[Row][ph*T+tx] is loaded by the thread
    # with ty=0, tx=1 (threadIdx.x=1, threadIdx.y=0: the book's thread_{1,0} in this
    # sentence is written (x, y)); it computes P_{2,3}, which does not exist.
    m = recs[(0, 1)][0]
    assert (m.kind, m.row, m.col) == (Access.LOADED, 2, 1)
    slot = trace.slot((1, 1))
    assert trace.p_write[slot, 0, 1] == PWrite.SKIPPED
    # The same holds with (ty, tx) = (1, 0): no valid P element (P_{3,2}), yet it
    # loads the existing N_{1,2} for thread (0, 0), which computes P_{2,2}.
    n = recs[(1, 0)][1]
    assert (n.kind, n.row, n.col) == (Access.LOADED, 1, 2)
    assert trace.p_write[slot, 1, 0] == PWrite.SKIPPED
    # Only thread (0, 0) of block_{1,1} has a valid P element: P_{2,2}.
    assert {
        (ty, tx) for ty in (0, 1) for tx in (0, 1) if trace.p_write[slot, ty, tx] == PWrite.WRITTEN
    } == {(0, 0)}
    table = build_table(trace, (1, 1), phases=[0])
    assert table.cell((1, 0), "Phase 0: M → Mds").text == "0.0 → Mds_{1,0}"
    assert table.cell((0, 1), "Phase 0: M → Mds").text == "M_{2,1} → Mds_{0,1}"


def test_fig_5_12_unchecked_kernel(record_sim):
    trace = record_sim(width=3, tile_width=2, kernel="tiled")
    recs = trace.load_records((1, 1), 0)
    # M_{3,0} and M_{3,1}: past row 2, the last one, so past the end of the
    # 9-element allocation (linear indexes 9 and 10).
    for t, (row, col) in FIG_5_12_M.items():
        m = recs[t][0]
        assert (m.kind, m.row, m.col) == (Access.OUT_OF_ALLOCATION, row, col)
    # N_{0,3} and N_{1,3}: past the end of a row, so the row wrap reads N_{1,0}, N_{2,0}.
    for t, (row, col) in FIG_5_12_N.items():
        n = recs[t][1]
        assert (n.kind, n.row, n.col) == (Access.WRONG_ELEMENT, row, col)
        assert n.actual == (row + 1, 0)
    mk, nk = _kinds(trace, (1, 1), 0)
    assert {t for t, k in mk.items() if k != Access.LOADED} == set(FIG_5_12_M)
    assert {t for t, k in nk.items() if k != Access.LOADED} == set(FIG_5_12_N)
    assert trace.tile_loads((1, 1), 0)[(0, 1)][0] == (2, 1)  # M_{2,1}, as with the checks
