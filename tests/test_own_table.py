"""The Fig. 5.8 table of a kernel of your own shows what its threads really did.

A user's kernel may map threads to P elements and tile slots otherwise than
Fig. 5.9 (``Row = by*T + ty``, ``Col = bx*T + tx``, thread (ty, tx) fills
``Mds[ty][tx]``). The expectations are derived by hand from each kernel's
source (tests/check_kernels.py) for block (0, 1) of 4 x 4 matrices with
TILE_WIDTH 2, and the P values from NumPy's ``M @ N``; nothing is copied from
the table's own output.
"""

import dataclasses

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


def test_coarsened_terms_are_judged_against_the_element_each_accumulator_stored():
    # tests/check_kernels.py's coarsened: block (0, 0) (even bx) has Row = ty, Col = tx;
    # p0 += Mds[ty][k]*Nds0[k][tx] is stored into P[Row][Col], p1 += Mds[ty][k]*Nds1[k][tx]
    # into P[Row][Col + 2], Nds1 holding N[ph*2 + ty][Col + 2]. So in phase ph the thread
    # adds M_{ty,2ph+k}*N_{2ph+k,tx} to P_{ty,tx} and M_{ty,2ph+k}*N_{2ph+k,tx+2} to
    # P_{ty,tx+2}: every term is the book's term of its own element; check finds nothing.
    report = vizmm.check(ck.coarsened, width=4, tile_width=T, backend="simulator")
    assert report.findings == []
    table = build_table(report.trace, (0, 0))
    P = report.trace.M.astype(np.float64) @ report.trace.N.astype(np.float64)
    for ty, tx in THREADS:
        for ph in range(2):
            pv = table.cell((ty, tx), f"Phase {ph}: Pvalue")
            sums = [
                f"P_{{{ty},{c}}} += "
                + " + ".join(f"M_{{{ty},{2 * ph + k}}}*N_{{{2 * ph + k},{c}}}" for k in range(T))
                for c in (tx, tx + 2)
            ]
            assert pv.text == "; ".join(sums)
            assert pv.kind == "pvalue" and not any(t.wrong for t in pv.terms)
            assert len(pv.terms) == 2 * T
        store = table.cell((ty, tx), "P → store")
        assert store.text == (
            f"Pvalue_{{{ty},{tx}}} → P_{{{ty},{tx}}} = {_v(P[ty, tx])}; "
            f"→ P_{{{ty},{tx + 2}}} = {_v(P[ty, tx + 2])}"
        )
        assert store.kind == "written"


def test_user_kernel_is_named_in_the_trace_and_absent_for_a_book_kernel(tmp_path):
    from vizmm.record.instrument import python_function

    report = vizmm.check(ck.grid_1d, width=4, tile_width=T, backend="simulator")
    assert report.trace.meta["user_kernel"] == "grid_1d" == report.trace.user_kernel
    path = tmp_path / "own.vizmm"
    report.trace.save(str(path))
    assert vizmm.load(str(path)).user_kernel == "grid_1d"
    book = vizmm.record(width=4, tile_width=T, kernel="tiled", backend="simulator", quiet=True)
    assert "user_kernel" not in book.meta and book.user_kernel is None
    assert not own_kernel(book)
    # an old file of a user kernel (no key): read as a book kernel's
    meta = {key: v for key, v in report.trace.meta.items() if key != "user_kernel"}
    assert not own_kernel(dataclasses.replace(report.trace, meta=meta))
    # the function behind a kernel object (what grading reads a submission's signature from)
    fn = python_function(ck.grid_1d)
    assert fn is not None and fn.__name__ == "grid_1d"
    assert python_function(fn) is fn and python_function(42) is None
