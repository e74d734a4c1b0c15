"""vizmm.check: planted mistakes found where a hand derivation puts them; correct kernels clean.

Every expectation is derived here from the planted line and Fig. 5.9's
indexing (Row = by*TILE_WIDTH + ty, Col = bx*TILE_WIDTH + tx, phase ph
loads M[Row][ph*T + tx] into Mds[ty][tx] and N[ph*T + ty][Col] into
Nds[ty][tx], the k loop reads Mds[ty][k] and Nds[k][tx]), and the P values
from NumPy's ``M @ N``; nothing is copied from check's own output.
Simulator sizes: 3 x 3 and 4 x 4, TILE_WIDTH 2.
"""

import check_kernels as ck
import numpy as np
import pytest

import vizmm
from vizmm.analysis import check as C

T = 2


def _check(kernel, width):
    return vizmm.check(kernel, width=width, tile_width=T, backend="simulator")


@pytest.mark.parametrize(
    "kernel, width",
    [
        ("book-tiled", 4),
        ("book-boundary", 3),
        (ck.other_names, 3),
        ("two-d", 3),
        (ck.grid_1d, 4),
        (ck.coarsened, 4),
    ],
    ids=["book-fig5.9", "book-fig5.13", "other-names", "2d-cuda-grid", "cuda-grid", "coarsened"],
)
def test_correct_kernels_have_no_findings(kernel, width):
    import vizmm_kernels as K

    if kernel == "book-tiled":
        kernel = K.get_kernel("tiled", T)
    elif kernel == "book-boundary":
        kernel = K.get_kernel("boundary", T)
    elif kernel == "two-d":
        import instrument_kernels

        kernel = instrument_kernels.tiled_2d
    report = _check(kernel, width)
    assert report.ok
    assert report.findings == []
    ref = report.trace.M.astype(np.float64) @ report.trace.N.astype(np.float64)
    np.testing.assert_array_equal(report.trace.P, ref)


def test_swapped_indices_in_the_m_tile_load():
    # Mds[ty][tx] = M[(ph*T + tx)*Width + Row]: Mds[ty][tx] holds M_{ph*T+tx, Row}.
    # Thread (ty, tx) at phase 0, k reads Mds[ty][k] = M_{k, ty} and needs M_{ty, k}:
    # right on the diagonal only. At k = 0 (the first turn) thread (0, x) is right,
    # thread (1, 0) is the first wrong one (threads in (ty, tx) order): it multiplied
    # M_{0,1} by N_{0,0}, needed M_{1,0}; Mds[1][0] was stored by thread (1, 0) itself.
    r = _check(ck.swapped_indices, 4)
    assert not r.ok
    f = r.findings[0]
    assert (f.kind, f.block, f.thread, f.phase, f.k) == ("wrong term", (0, 0), (1, 0), 0, 0)
    assert f.got == ((0, 1), (0, 0))
    assert f.expected == ((1, 0), (0, 0))
    assert f.address == "Mds[1][0]" and f.other == (1, 0)
    assert "M_{0,1}\u00b7N_{0,0}" in f.message and "needed M_{1,0}\u00b7N_{0,0}" in f.message


def test_a_wrong_term_names_the_shared_array_as_the_kernel_does():
    # The swap above in a kernel of a student's names (A, B, C; As, Bs; r, c; q):
    # the same first wrong term, said in the kernel's words: As[1][0], not Mds.
    r = _check(ck.swapped_student_names, 4)
    f = r.findings[0]
    assert (f.kind, f.block, f.thread, f.phase, f.k) == ("wrong term", (0, 0), (1, 0), 0, 0)
    assert f.address == "As[1][0]" and "As[1][0] held" in f.message
    assert not any("Mds" in g.message or "Nds" in g.message for g in r.findings)


def test_missing_barrier_is_a_race_on_the_first_slot():
    # No barrier between the tile stores and the k loop: thread (0, 0) stores
    # Mds[0][0] and thread (0, 1) reads it (k = 0) in the same epoch.
    r = _check(ck.missing_barrier, 4)
    f = r.findings[0]
    assert (f.kind, f.block, f.thread, f.phase) == ("race", (0, 0), (0, 0), 0)
    assert f.other == (0, 1) and f.address == "Mds[0][0]"
    assert f.label in ("read-after-write", "write-after-read")
    src = r.trace.meta["source"].splitlines()
    assert [src[n - 1].strip() for n in f.lines] == [
        "Mds[ty, tx] = M[Row * Width + ph * TILE_WIDTH + tx]",
        "Pvalue += Mds[ty, k] * Nds[k, tx]",
    ]
    # the race set: every slot of Mds and Nds in every phase and block
    races = {(f.block, f.address, f.epoch) for f in r.findings if f.kind == "race"}
    assert len(races) == 4 * 2 * (2 * 2) * 2  # blocks x tiles x slots x phases


def test_missing_boundary_check_reads_outside_m():
    # Width 3, T 2: in block (0, 0), phase 1, thread (0, 1) loads M[Row*3 + 2 + 1] with
    # (row, col) = (0, 3): column 3 is outside M's 3 columns; flat index 3 is M_{1,0}.
    r = _check(ck.missing_boundary_check, 3)
    f = r.findings[0]
    assert (f.kind, f.block, f.thread, f.phase) == ("out of bounds", (0, 0), (0, 1), 1)
    assert f.got == (0, 3)
    assert "M_{1,0}" in f.message
    # block (1, 0), thread (1, 0): Row 3, col 0: flat index 9, past M's 9 elements: not performed
    past = [g for g in r.findings if g.kind == "out of bounds" and g.got == (3, 0)]
    assert past and past[0].block == (1, 0) and past[0].thread == (1, 0)
    assert "not performed" in past[0].message
    # N's zero-fill makes the wrapped M elements add nothing: P is still right
    assert not [g for g in r.findings if g.kind in ("wrong P", "wrong term")]


def test_transposed_tile():
    # Nds[tx][ty] = N[(ph*T + ty)*Width + Col]: Nds[a][b] holds N_{ph*T+b, bx*T+a}.
    # Thread (ty, tx) reads Nds[k][tx] = N_{tx, k} at phase 0 and needs N_{k, tx}:
    # wrong for tx != k; at k = 0 the first is thread (0, 1): M_{0,0}.N_{1,0},
    # needed M_{0,0}.N_{0,1}; Nds[0][1] was stored by thread (ty, tx) = (1, 0).
    r = _check(ck.transposed_tile, 4)
    f = r.findings[0]
    assert (f.kind, f.block, f.thread, f.phase, f.k) == ("wrong term", (0, 0), (0, 1), 0, 0)
    assert f.got == ((0, 0), (1, 0)) and f.expected == ((0, 0), (0, 1))
    assert f.address == "Nds[0][1]" and f.other == (1, 0)


def test_off_by_one_phase_count_misses_the_last_phase():
    # range(Width // T - 1) at Width 4: phase 1 never runs, so thread (0, 0) of block
    # (0, 0) never accumulates M_{0,2}.N_{2,0} (phase 1, k = 0) nor M_{0,3}.N_{3,0}.
    r = _check(ck.one_phase_short, 4)
    f = r.findings[0]
    assert (f.kind, f.block, f.thread, f.phase, f.k) == ("wrong term", (0, 0), (0, 0), 1, 0)
    assert f.expected == ((0, 2), (2, 0)) and f.got is None
    assert "missing" in f.message
    wrong_p = [g for g in r.findings if g.kind == "wrong P"]
    M, N = r.trace.M.astype(np.float64), r.trace.N.astype(np.float64)
    half = M[:, :2] @ N[:2, :]  # what was computed: phase 0 only
    ref = M @ N
    assert len(wrong_p) == int((half != ref).sum())
    g = wrong_p[0]
    assert g.expected == ref[0, 0] and g.got == half[0, 0]


def test_p_stored_by_the_wrong_thread():
    # P[Col*Width + Row] = Pvalue: thread (0, 1) of block (0, 0) computes P_{0,1} and
    # stores it into P_{1,0}; the terms are right, the store is wrong.
    r = _check(ck.wrong_thread_stores, 4)
    ref = r.trace.M.astype(np.float64) @ r.trace.N.astype(np.float64)
    assert ref[1, 0] != ref[0, 1]  # the seeded inputs tell the two apart
    assert {f.kind for f in r.findings} == {"wrong P"}
    f = r.findings[0]
    assert (f.kind, f.block, f.thread, f.phase, f.k) == ("wrong P", (0, 0), (0, 1), None, None)
    assert f.expected == ref[1, 0] and f.got == ref[0, 1]
    assert "P_{1,0}" in f.message and "P_{0,1}" in f.message


def test_two_threads_storing_one_slot_race():
    r = _check(ck.racing_store, 4)
    f = r.findings[0]
    assert (f.kind, f.block, f.thread, f.other, f.address) == (
        "race",
        (0, 0),
        (0, 0),
        (0, 1),
        "Mds[0][0]",
    )
    assert f.label == "write-after-write"


def test_naive_kernel_reads_more_than_tiling_needs():
    import vizmm_kernels as K

    # Fig. 3.11 reads each M element once per column of P: Width = 4 times; tiling
    # with TILE_WIDTH 2 needs Width / TILE_WIDTH = 2.
    r = _check(K.get_kernel("naive", T), 4)
    assert r.ok
    info = [f for f in r.findings if f.kind == "more global reads than tiling needs"]
    assert [(f.expected, f.got) for f in info] == [(2, 4), (2, 4)]


def test_report_text_and_html():
    r = _check(ck.transposed_tile, 4)
    text = r.summary(first=2)
    assert text.count("\n") == 3 and "more: " in text and " wrong terms" in text
    assert "<table>" in r._repr_html_()


def test_counts_read_as_english_for_one_and_several():
    from types import SimpleNamespace

    meta = {"figure": "user kernel k", "j": 4, "k": 4, "l": 4, "tile_width": 2}
    head = "user kernel k: M 4x4, N 4x4, TILE_WIDTH 2"

    def found(kind, severity="error"):
        return C.Finding(kind, (0, 0), (0, 0), 0, 0, "x", severity=severity)

    def report(*kinds):
        fs = [found(*k) if isinstance(k, tuple) else found(k) for k in kinds]
        return C.CheckReport(False, SimpleNamespace(meta=meta), fs)

    assert report("wrong term").summary() == f"{head}: 1 finding, 1 error\n1. [error] wrong term: x"
    text = report(
        "race",
        "wrong term",
        "wrong term",
        "wrong P",
        ("more global reads than tiling needs", "information"),
    ).summary(first=1)
    assert text.splitlines() == [
        f"{head}: 5 findings, 4 errors",
        "1. [error] race: x",
        "and 4 more: 2 wrong terms, 1 wrong P element, 1 matrix read more often than tiling needs.",
    ]
    text = report(
        "out of bounds",
        ("uncoalesced", "warning"),
        ("bank conflict", "warning"),
        ("bank conflict", "warning"),
        ("more global reads than tiling needs", "information"),
        ("more global reads than tiling needs", "information"),
        "out of bounds",
        "out of bounds",
        "race",
        "race",
        "wrong P",
        "wrong P",
    ).summary(first=0)
    assert text.splitlines() == [
        f"{head}: 12 findings, 7 errors",
        "and 12 more: 3 out-of-bounds accesses, 1 uncoalesced access, 2 bank conflicts, "
        "2 matrices read more often than tiling needs, 2 races, 2 wrong P elements.",
    ]
    assert "more more" not in text
    assert [C.counted(n, "more such request") for n in (1, 7)] == [
        "1 more such request",
        "7 more such requests",
    ]
    assert C.counted(0, "error") == "0 errors"


def test_bad_input_is_one_clear_error():
    with pytest.raises(vizmm.RecordError, match="integers >= 1"):
        vizmm.check(ck.grid_1d, 0, 4, 4, tile_width=T)
    with pytest.raises(vizmm.RecordError, match="over its"):
        vizmm.check(ck.grid_1d, width=512, tile_width=T)


def test_cli_check_exit_codes_and_trace(tmp_path, capsys):
    from pathlib import Path

    from vizmm.cli import main

    here = Path(__file__).resolve().parent / "check_kernels.py"
    out = tmp_path / "checked.vizmm"
    args = ["check", "--width", "4", "-t", "2", "-b", "simulator"]
    assert main([*args[:1], f"{here}:transposed_tile", *args[1:], "-o", str(out)]) == 1
    text = capsys.readouterr().out
    # the first finding in full (derived in test_transposed_tile), the rest counted
    assert "1. [error] wrong term: block (0,0), thread (0,1), phase 0, k=0" in text
    assert " wrong terms, " in text and " wrong P elements." in text
    # phase 0, k = 0 is step 6 of Fig. 5.8's replay: start, load M, load N, barrier 1
    # arrivals, its release, k = 0
    assert f"vizmm serve --traces {out}" in text
    assert "trace=file%3Achecked.vizmm&by=0&bx=0&ty=0&tx=1&step=6&finding=1\n" in text
    assert vizmm.load(out).log_events.size
    assert main(["check", f"{here}:grid_1d", *args[1:]]) == 0
    assert "no findings" in capsys.readouterr().out
    assert main(["check", "nothere.py:k", *args[1:]]) == 2
    assert main(["check", "tiled", *args[1:]]) == 2
    assert "FILE.py:NAME" in capsys.readouterr().err


@pytest.mark.gpu
def test_races_agree_with_racecheck(tmp_path):
    """On a GPU: check's (block, slot) race sets equal racecheck's (scripts/check_racecheck.py);
    with Fig. 5.9's second barrier removed, racecheck's set lies inside check's (the README's
    "Check your own kernel" says what racecheck leaves out)."""
    import shutil
    import subprocess
    import sys
    from pathlib import Path

    if shutil.which("compute-sanitizer") is None:
        pytest.skip("compute-sanitizer is not on PATH")
    script = Path(__file__).resolve().parents[1] / "scripts" / "check_racecheck.py"
    out = tmp_path / "check-racecheck.json"
    env = {k: v for k, v in __import__("os").environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    run = subprocess.run(
        [sys.executable, str(script), str(out)],
        capture_output=True,
        text=True,
        timeout=1800,
        env=env,
        check=False,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    import json

    cases = {c["case"]: c for c in json.loads(out.read_text())["cases"]}
    assert cases["book-both"]["check_slots"] == cases["book-both"]["racecheck_slots"] == 0
    assert all(c["agree"] for name, c in cases.items() if name != "book-drop2")
    assert cases["book-drop2"]["racecheck_within_check"]
    assert cases["book-drop2"]["racecheck_slots"] > 0
