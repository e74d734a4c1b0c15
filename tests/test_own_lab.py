"""The barrier lab's counts, the "Pvalue after" cells and a step's notes for a kernel of your own.

Expectations are derived by hand from each kernel's source
(tests/check_kernels.py) for 4 x 4 matrices with TILE_WIDTH 2 (a 2 x 2 grid
of 2 x 2 blocks, two phases), P values from NumPy; nothing is copied from
the code's own output.
"""

import check_kernels as ck
import numpy as np
import pytest

import vizmm
from vizmm.analysis import hazards as hz
from vizmm.replay import Replay, Sub
from vizmm.replay.own import own_lab
from vizmm.replay.table import build_table

T = 2


def _checked(kernel):
    return vizmm.check(kernel, width=4, tile_width=T, backend="simulator").trace


def _v(x) -> str:
    return f"{float(x):g}"


def test_transposed_tile_is_judged_against_its_own_elements():
    # Nds[tx][ty] = N[ph*2 + ty][Col], barriers kept: no two threads touch one slot in one
    # epoch, so no hazard. Row = by*2 + ty, Col = bx*2 + tx (the book's); at k the thread
    # reads Nds[k][tx], stored by thread (tx, k): N_{ph*2+tx, bx*2+k}, the term's factor
    # N_{ph*2+k, Col} only where k = tx. So per thread and phase one wrong N factor
    # (the k != tx), M factors all right: 4 threads x 2 phases x 4 blocks = 32.
    trace = _checked(ck.transposed_tile)
    lab = own_lab(trace)
    assert len(lab.hazards) == 0
    assert len(lab.wrong_reads) == 32 and (lab.wrong_reads["array"] == "Nds").all()
    assert (lab.wrong_reads["k"] != lab.wrong_reads["thread"][:, 1]).all()
    # P_{Row,Col} = sum over ph, k of M[Row][2ph+k] * N[2ph+tx][2bx+k] (tx = Col % 2)
    M, N = trace.M.astype(np.float64), trace.N.astype(np.float64)
    want = np.zeros((4, 4))
    for r in range(4):
        for c in range(4):
            tx, bx = c % 2, c // 2
            want[r, c] = sum(
                M[r, 2 * ph + k] * N[2 * ph + tx, 2 * bx + k] for ph in range(2) for k in range(2)
            )
    assert (lab.wrong_p == (want != M @ N)).all()
    # the book kernels' analysis refuses it, in words
    for f in (hz.hazards, hz.wrong_reads, hz.ran_ahead, hz.wrong_p, hz.analyse):
        with pytest.raises(ValueError, match="your own kernel 'transposed_tile'"):
            f(trace)


def test_missing_barrier_races_by_epoch():
    # No barrier between the stores and the k loop: W(ph) and R(ph, k) share epoch ph.
    # Thread (ty, tx) reads Mds[ty][k] (stored by thread (ty, k)) and Nds[k][tx] (stored by
    # thread (k, tx)): another thread's store where k != tx (Mds) and k != ty (Nds): 2
    # read-after-write per thread and phase, 2 x 4 x 2 = 16 per block; the barrier after
    # the k loop is kept, so no write-after-read.
    trace = _checked(ck.missing_barrier)
    h = own_lab(trace).hazards
    assert (h["kind"] == "RAW").sum() == 64 and (h["kind"] == "WAR").sum() == 0
    for by in range(2):
        for bx in range(2):
            mine = h[(h["block"][:, 0] == by) & (h["block"][:, 1] == bx)]
            assert len(mine) == 16
    assert (h["writer"] == h["slot"]).all()  # thread (r, c) stores slot (r, c)
    assert (h["writer"] != h["reader"]).any(axis=1).all()
    assert (h["write_phase"] == h["phase"]).all()
    mds = h[h["array"] == "Mds"]
    assert (mds["slot"][:, 0] == mds["reader"][:, 0]).all()
    assert (mds["slot"][:, 1] == mds["k"]).all()
    # the same pairs as the book's Fig. 5.9 with barrier 1 removed (vizmm.hazards)
    book = hz.hazards(
        vizmm.record(
            width=4, tile_width=T, kernel="tiled", drop_barrier=1, quiet=True, backend="simulator"
        )  # fmt: skip
    )

    def pairs(rows):
        return sorted(
            (*r["block"].tolist(), int(r["phase"]), str(r["array"]), *r["slot"].tolist())
            + (*r["reader"].tolist(), int(r["k"]), str(r["kind"]))
            for r in rows
        )

    assert pairs(h) == pairs(book)


def test_coarsened_has_no_wrong_read():
    # every term is the book's term of the element its accumulator is stored into, and
    # both barriers are kept: nothing to count
    lab = own_lab(_checked(ck.coarsened))
    assert len(lab.hazards) == 0 and len(lab.wrong_reads) == 0 and not lab.wrong_p.any()


def test_coarsened_pvalue_after_names_the_one_accumulator_logged():
    # The instrumenter logs the variable of the last P[...] = name: p1, stored into
    # P[Row][Col + 2]. In block (0, 0) thread (ty, tx) has p1 = sum over phases so far of
    # M_{ty,q}·N_{q,tx+2}; p0 (P_{ty,tx}) is not logged.
    trace = _checked(ck.coarsened)
    table = build_table(trace, (0, 0))
    M, N = trace.M.astype(np.float64), trace.N.astype(np.float64)
    for ty in range(T):
        for tx in range(T):
            for ph in range(2):
                p1 = M[ty, : 2 * ph + 2] @ N[: 2 * ph + 2, tx + 2]
                cell = table.cell((ty, tx), f"Phase {ph}: Pvalue after")
                assert cell.text == (f"P_{{{ty},{tx + 2}}}: {_v(p1)}; P_{{{ty},{tx}}}: not logged")
                assert cell.value == p1


def test_a_coarsened_threads_notes_name_every_term_of_its_k():
    # coarsened_wrong_second: p0 += Mds[ty][k]*Nds0[k][tx] into P_{Row,Col}, p1 +=
    # Mds[ty][k]*Nds0[k][tx] into P_{Row,Col+2}. Block (0, 0), phase 0, k: both terms are
    # M_{ty,k}·N_{k,tx}; p1's needs N_{k,tx+2}: every thread has one wrong term (its second).
    trace = _checked(ck.coarsened_wrong_second)
    replay = Replay(trace, (0, 0))
    N = trace.N
    for k in range(T):
        frame = replay.frame(replay.index_of(0, Sub.K, k))
        assert frame.thread_wrong.all()
        for ty in range(T):
            for tx in range(T):
                assert frame.thread_terms[(ty, tx)] == (
                    f"P_{{{ty},{tx}}} += M_{{{ty},{k}}}·N_{{{k},{tx}}}; "
                    f"P_{{{ty},{tx + 2}}} += M_{{{ty},{k}}}·N_{{{k},{tx}}}"
                )
                assert frame.wrong_notes[(ty, tx)] == (
                    f"for P_{{{ty},{tx + 2}}} read N_{{{k},{tx}}} = {_v(N[k, tx])} (phase 0) "
                    f"where its term needs N_{{{k},{tx + 2}}} = {_v(N[k, tx + 2])}"
                )


def test_hazard_panel_counts_a_user_kernel_from_its_log():
    pytest.importorskip("panel")
    from vizmm_apps.barrier_view import HazardPanel
    from vizmm_apps.dashboard import DashboardState

    s = DashboardState(source="fig5-8").start()
    panel = HazardPanel(s)
    s.trace = _checked(ck.transposed_tile)
    text = panel.summary.object
    assert "Your kernel `transposed_tile`" in text
    assert "**0 read-after-write**, **0 write-after-read**" in text
    assert "**32 reads** found an element that is not a term of the P element" in text
    assert "Findings" in text and "Removed" not in text
    s.trace = _checked(ck.missing_barrier)
    assert "**64 read-after-write**, **0 write-after-read**" in panel.summary.object
