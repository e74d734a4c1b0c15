"""The Fig. 5.8 table of a kernel of your own shows what its threads really did.

A user's kernel may map threads to P elements and tile slots otherwise than
Fig. 5.9 (``Row = by*T + ty``, ``Col = bx*T + tx``, thread (ty, tx) fills
``Mds[ty][tx]``). The expectations are derived by hand from each kernel's
source (tests/check_kernels.py) for block (0, 1) of 4 x 4 matrices with
TILE_WIDTH 2, and the P values from NumPy's ``M @ N``; nothing is copied from
the table's own output.
"""

import check_kernels as ck
import numpy as np

import vizmm
from vizmm.replay.table import build_table, own_kernel

T, BLOCK = 2, (0, 1)
THREADS = [(ty, tx) for ty in range(T) for tx in range(T)]


def _table(kernel):
    report = vizmm.check(kernel, width=4, tile_width=T, backend="simulator")
    return report, build_table(report.trace, BLOCK)


def _v(x: float) -> str:
    return f"{x:g}"


def test_threads_transposed_shows_the_elements_each_thread_computed():
    # Row = by*T + tx = tx, Col = bx*T + ty = 2 + ty; Mds[tx][ty] = M[Row][ph*T + ty],
    # Nds[tx][ty] = N[ph*T + tx][Col]; the k loop multiplies Mds[tx][k] (M_{Row, ph*T+k},
    # stored by thread (k, tx)) by Nds[k][ty] (N_{ph*T+k, Col}, stored by thread (ty, k)).
    report, table = _table(ck.threads_transposed)
    assert report.findings == []  # correct, with another mapping than the book's
    assert own_kernel(report.trace)
    P = report.trace.M.astype(np.float64) @ report.trace.N.astype(np.float64)
    for ty, tx in THREADS:
        row, col = tx, 2 + ty
        for ph in range(2):
            m = table.cell((ty, tx), f"Phase {ph}: M → Mds")
            n = table.cell((ty, tx), f"Phase {ph}: N → Nds")
            assert m.text == f"M_{{{row},{2 * ph + ty}}} → Mds_{{{tx},{ty}}}"
            assert n.text == f"N_{{{2 * ph + tx},{col}}} → Nds_{{{tx},{ty}}}"
            pv = table.cell((ty, tx), f"Phase {ph}: Pvalue")
            terms = [f"M_{{{row},{2 * ph + k}}}*N_{{{2 * ph + k},{col}}}" for k in range(T)]
            assert [t.text for t in pv.terms] == terms
            assert pv.kind == "pvalue" and not any(t.wrong for t in pv.terms)
            assert "✗" not in pv.text
        store = table.cell((ty, tx), "P → store")
        assert store.text == f"Pvalue_{{{ty},{tx}}} → P_{{{row},{col}}} = {_v(P[row, col])}"
        assert store.kind == "written" and store.value == P[row, col]


def test_wrong_thread_stores_marks_the_store_not_the_terms():
    # Row = ty, Col = 2 + tx as the book's, so the terms are the book's;
    # P[Col][Row] = Pvalue stores P_{Row,Col} of M·N at P_{Col,Row}.
    report, table = _table(ck.wrong_thread_stores)
    P = report.trace.M.astype(np.float64) @ report.trace.N.astype(np.float64)
    for ty, tx in THREADS:
        row, col = ty, 2 + tx
        for ph in range(2):
            pv = table.cell((ty, tx), f"Phase {ph}: Pvalue")
            terms = [f"M_{{{row},{2 * ph + k}}}*N_{{{2 * ph + k},{col}}}" for k in range(T)]
            assert [t.text for t in pv.terms] == terms and pv.kind == "pvalue"
        store = table.cell((ty, tx), "P → store")
        text = f"Pvalue_{{{ty},{tx}}} → P_{{{col},{row}}} = {_v(P[row, col])}"
        if P[row, col] != P[col, row]:
            assert store.text == "✗ " + text and store.kind == "wrong_value"
            assert store.note == (
                f"stored {_v(P[row, col])} into P_{{{col},{row}}}, where M·N gives "
                f"{_v(P[col, row])}"
            )
        else:  # a coincidence of the seeded integers: the value is right there
            assert store.text == text and store.kind == "written"


def test_transposed_tile_shows_the_slots_stored_and_the_wrong_terms():
    # Nds[tx][ty] = N[ph*T + ty][Col]: thread (ty, tx) fills Nds_{tx,ty}; Row = ty,
    # Col = 2 + tx as the book's, so the book's terms are M_{ty,q}·N_{q,2+tx}; the k loop
    # reads Nds[k][tx], which thread (tx, k) filled with N_{ph*T+tx, 2+k}.
    report, table = _table(ck.transposed_tile)
    for ty, tx in THREADS:
        for ph in range(2):
            n = table.cell((ty, tx), f"Phase {ph}: N → Nds")
            assert n.text == f"N_{{{2 * ph + ty},{2 + tx}}} → Nds_{{{tx},{ty}}}"
            pv = table.cell((ty, tx), f"Phase {ph}: Pvalue")
            got = [(t.text, t.wrong) for t in pv.terms]
            want = []
            for k in range(T):
                text = f"M_{{{ty},{2 * ph + k}}}*N_{{{2 * ph + tx},{2 + k}}}"
                want.append((text, (2 * ph + tx, 2 + k) != (2 * ph + k, 2 + tx)))
            assert got == want


def test_book_mapping_of_a_user_kernel_is_the_book_table():
    # a kernel that maps threads as Fig. 5.9 does: the same cells as the book's kernel
    report, table = _table(ck.grid_1d)
    book = build_table(vizmm.record(width=4, tile_width=T, kernel="tiled", reads=True,
                                    backend="simulator", quiet=True), BLOCK)  # fmt: skip
    for ty, tx in THREADS:
        for c in table.header[1:]:
            assert table.cell((ty, tx), c).text == book.cell((ty, tx), c).text, c
