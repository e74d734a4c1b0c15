"""The barrier lab in the Fig. 5.8 table and the threads that ran ahead.

Oracles:

* the book's kernel reads, at phase ``ph`` and ``k``, ``M[Row][ph*T + k]``
  and ``N[ph*T + k][Col]`` (Fig. 5.9 line 24 with the loads of lines 19-20);
  derived here from Row, Col, ph and k, not from the analysis;
* the values the recording says each thread read: their products, summed in
  the kernel's order in float32, are the P element it stored;
* NumPy's ``M @ N`` for which P elements came out wrong;
* the simulator's schedule worked out by hand: it runs a block's threads in
  turns, (0,0), (0,1), (1,0), (1,1), each until it waits at a barrier. Without
  barrier 1, thread (0,0) runs its k loop before the others have stored their
  elements; without barrier 2, it stores the next phase's elements before the
  others have read this phase's.
"""

import importlib.resources

import numpy as np
import pytest

import vizmm
from vizmm.analysis import hazards as hz
from vizmm.render.text import format_table
from vizmm.replay import Replay, Sub
from vizmm.replay.table import build_table

DATA = importlib.resources.files("vizmm") / "data"
LAB = ("lab-4x4-drop1", "lab-4x4-drop2", "lab-4x4-drop12")


def _load(name):
    return vizmm.load(str(DATA / f"{name}.vizmm"))


def _name(matrix, tag, ncols=4):
    r, c = divmod(int(tag), ncols)
    return f"{matrix}_{{{r},{c}}}"


@pytest.mark.parametrize("name", LAB)
def test_wrong_terms_are_the_reads_of_another_element(name):
    trace = _load(name)
    T, W = 2, 4
    for s, (by, bx) in enumerate(trace.detail_blocks.tolist()):
        table = build_table(trace, (by, bx))
        for ty in range(T):
            for tx in range(T):
                Row, Col = by * T + ty, bx * T + tx
                acc = np.float32(0)
                for ph in range(2):
                    cell = table.cell((ty, tx), f"Phase {ph}: Pvalue")
                    assert [t.k for t in cell.terms] == [0, 1]
                    for k, term in enumerate(cell.terms):
                        m_book = Row * W + ph * T + k  # M[Row][ph*T + k]
                        n_book = (ph * T + k) * W + Col  # N[ph*T + k][Col]
                        got_m, got_n = trace.shared_reads[s, ph, ty, tx, k]
                        wrong = got_m != m_book or got_n != n_book
                        assert term.wrong == wrong, (name, by, bx, ty, tx, ph, k)
                        assert term.book == f"{_name('M', m_book)}*{_name('N', n_book)}"
                        if got_m >= 0 and got_n >= 0:
                            assert term.text == f"{_name('M', got_m)}*{_name('N', got_n)}"
                        acc = np.float32(acc + np.float32(term.value))
                        if wrong:
                            assert f"✗ {term.text}" in cell.text
                            assert term.book in cell.note
                    assert cell.kind == (
                        "wrong_term" if any(t.wrong for t in cell.terms) else "pvalue"
                    )
                    after = table.cell((ty, tx), f"Phase {ph}: Pvalue after")
                    assert (after.kind == "wrong_value") == (cell.kind == "wrong_term")
                # The terms' recorded values add up to what the thread stored.
                assert acc == trace.P[Row, Col], (name, Row, Col)
                store = table.cell((ty, tx), "P → store")
                assert store.value == float(trace.P[Row, Col])
                assert store.text.endswith(f"= {int(trace.P[Row, Col])}")
                book = float((trace.M.astype(np.float64) @ trace.N)[Row, Col])
                assert store.wrong == (float(trace.P[Row, Col]) != book)
                if store.wrong:
                    assert f"stores {int(book)}" in store.note


def test_a_table_with_both_barriers_is_the_books():
    trace = _load("fig5-8")
    table = build_table(trace, (0, 0))
    cell = table.cell((0, 1), "Phase 0: Pvalue")
    assert cell.text == "Pvalue_{0,1} += Mds_{0,0}*Nds_{0,1} + Mds_{0,1}*Nds_{1,1}"
    assert not any(c.wrong or c.note for row in table.rows for c in row)


def test_text_table_lists_the_wrong_terms_in_words():
    trace = _load("lab-4x4-drop1")
    table = build_table(trace, (0, 0))
    text = format_table(table, unicode=False)
    notes = [line for line in text.splitlines() if line.startswith("x thread")]
    wrong = [c for row in table.rows for c in row if c.kind == "wrong_term"]
    stores = [c for row in table.rows for c in row if c.wrong and c.phase is None]
    assert len(notes) == len(wrong) + len(stores) > 0
    # thread (0,0) in phase 1 read phase 0's M_{0,1} where the book's kernel reads M_{0,3}
    assert "x thread[0,0], phase 1: k=1: computed M[0,1]*N[1,0] where the book's kernel " in text
    assert "computes M[0,3]*N[3,0]" in text


def test_scene_fills_the_wrong_terms_with_the_wrong_colour():
    from vizmm.render import palette as pal
    from vizmm.render.bokeh_scene import frame_columns
    from vizmm.render.text import render_text

    trace = _load("lab-4x4-drop1")
    r = Replay(trace, (0, 0))
    cols = frame_columns(r.frame(len(r) - 1), trace, sources=["table"])["table"]
    table = build_table(trace, (0, 0))
    wrong = [c for row in table.rows for c in row if c.wrong]
    filled = [n for n, f in zip(cols["note"], cols["fill"], strict=True) if f == pal.LIGHT.WRONG]
    # Every marked cell is filled with the lab's wrong colour, its note (the book's term) in
    # the hover; nothing else is.
    assert sorted(filled) == sorted(render_text(c.note, "unicode") for c in wrong)
    assert any("where the book's kernel computes M₀,₃*N₃,₀" in n for n in filled)


# ------------------------------------------------------------- ran ahead
def _ahead_by_hand(drop):
    """Block (0,0), threads in turns (0,0), (0,1), (1,0), (1,1), each to its next barrier.

    Rows (kind, phase, k, array, reader, ahead, found phase): worked out on paper.
    """
    if drop == (1,):
        # Phase 0: (0,0) loads, then reads Mds[0][1] and Nds[1][0] at k = 1 before (0,1) and
        # (1,0) have run: not written yet. (0,1) reads Nds[1][1] before (1,1) ran; (1,0)
        # reads Mds[1][1] before (1,1) ran. Phase 1 (after barrier 2): the same reads find
        # phase 0's elements. The reader ran ahead each time.
        out = set()
        for ph, found in ((0, -1), (1, 0)):
            out |= {
                ("RAW", ph, 1, "Mds", (0, 0), (0, 0), found),
                ("RAW", ph, 1, "Nds", (0, 0), (0, 0), found),
                ("RAW", ph, 1, "Nds", (0, 1), (0, 1), found),
                ("RAW", ph, 1, "Mds", (1, 0), (1, 0), found),
            }
        return out
    # drop == (2,): after barrier 1 of phase 0, (0,0) runs its k loop and stores phase 1's
    # M_{0,2} and N_{2,0}; (0,1) then reads Mds[0][0] at k = 0 and finds phase 1's element;
    # (0,1) stores phase 1's elements; (1,0) reads Nds[0][0] at k = 0: phase 1's; (1,0)
    # stores; (1,1) reads Mds[1][0] and Nds[0][1] at k = 0: phase 1's. The writer ran ahead.
    return {
        ("WAR", 0, 0, "Mds", (0, 1), (0, 0), 1),
        ("WAR", 0, 0, "Nds", (1, 0), (0, 0), 1),
        ("WAR", 0, 0, "Mds", (1, 1), (1, 0), 1),
        ("WAR", 0, 0, "Nds", (1, 1), (0, 1), 1),
    }


@pytest.mark.parametrize("name, drop", [("lab-4x4-drop1", (1,)), ("lab-4x4-drop2", (2,))])
def test_who_ran_ahead_matches_the_schedule_worked_out_by_hand(name, drop):
    trace = _load(name)
    rows = hz.ran_ahead(trace)
    mine = rows[(rows["block"][:, 0] == 0) & (rows["block"][:, 1] == 0)]
    got = {
        (
            str(r["kind"]),
            int(r["phase"]),
            int(r["k"]),
            str(r["array"]),
            tuple(int(v) for v in r["reader"]),
            tuple(int(v) for v in r["ahead"]),
            int(r["found_phase"]),
        )
        for r in mine
    }
    assert got == _ahead_by_hand(drop)
    # The writer of Mds[r][c] / Nds[r][c] is thread (r, c); the other thread is behind.
    for r in mine:
        assert tuple(r["writer"]) == tuple(r["slot"])
        pair = {tuple(r["ahead"]), tuple(r["behind"])}
        assert pair == {tuple(r["reader"]), tuple(r["writer"])}


@pytest.mark.parametrize("name, drop", [("lab-4x4-drop1", (1,)), ("lab-4x4-drop2", (2,))])
def test_frames_mark_who_ran_ahead_at_the_read(name, drop):
    trace = _load(name)
    r = Replay(trace, (0, 0))
    by_step: dict = {}
    for _kind, ph, k, _a, _reader, ahead, _found in _ahead_by_hand(drop):
        by_step.setdefault((ph, k), set()).add(ahead)
    for f in r.frames():
        key = (f.step.phase, f.step.k) if f.step.sub == Sub.K else None
        want = by_step.get(key, set())
        got = {(int(a), int(b)) for a, b in zip(*np.nonzero(f.thread_ahead), strict=True)}
        assert got == want, f.step
        assert set(f.ahead_notes) == want
        if want:
            assert "Ran ahead (▶)" in f.caption
    if drop == (2,):
        f = r.frame(r.index_of(0, Sub.K, 0))
        assert f.ahead_notes[(0, 0)].startswith(
            "thread (0,0) had already loaded phase 1's M_{0,2} into Mds[0][0] while "
            "thread (0,1) still needed phase 0's M_{0,0}"
        )
    else:
        f = r.frame(r.index_of(1, Sub.K, 1))
        assert "found phase 0's M_{0,1}" in f.ahead_notes[(0, 0)]


def test_no_reads_no_marks():
    trace = _load("fig5-8")
    f = Replay(trace, (0, 0)).frame(5)
    assert f.thread_ahead is None and f.ahead_notes is None
    assert hz.found_phases(trace) is None and len(hz.ran_ahead(trace)) == 0


def test_scene_and_gif_frames_draw_the_ran_ahead_mark():
    from vizmm.render import palette as pal
    from vizmm.render.bokeh_scene import frame_columns
    from vizmm.render.pillow import FrameRenderer

    trace = _load("lab-4x4-drop2")
    r = Replay(trace, (0, 0))
    i = r.index_of(0, Sub.K, 0)
    f = r.frame(i)
    cols = frame_columns(f, trace, sources=["threads"])["threads"]
    assert cols["ahead_alpha"] == f.thread_ahead.ravel().astype(float).tolist()
    assert "▶ thread (0,0) had already loaded" in cols["state"][0]
    renderer = FrameRenderer(trace, size=(1280, 720))
    ahead = np.array(pal.hex_to_rgb(pal.LIGHT.AHEAD))

    def count(img):
        return int((np.asarray(img) == ahead).all(axis=-1).sum())

    # The legend's swatch is there in every frame; three threads add three marks.
    assert count(renderer.render(f)) > 2 * count(renderer.render(r.frame(0))) > 0


@pytest.mark.parametrize("name", LAB)
def test_a_phase_step_marks_what_its_k_steps_mark(name):
    trace = _load(name)
    sub = Replay(trace, (0, 0))
    whole = Replay(trace, (0, 0), granularity="phase")
    for ph in range(2):
        f = whole.frame(whole.index_of(ph, Sub.PHASE))
        ks = [sub.frame(sub.index_of(ph, Sub.K, k)) for k in range(2)]
        for field in ("thread_wrong", "mds_wrong", "nds_wrong", "thread_ahead"):
            want = np.logical_or(getattr(ks[0], field), getattr(ks[1], field))
            np.testing.assert_array_equal(getattr(f, field), want, err_msg=(name, ph, field))
        for field in ("wrong_notes", "ahead_notes"):
            merged: dict = {}
            for g in ks:
                for who, note in getattr(g, field).items():
                    merged[who] = f"{merged[who]}; {note}" if who in merged else note
            assert getattr(f, field) == merged


def test_html_export_carries_the_marks(tmp_path):
    from vizmm.export import export

    trace = _load("lab-4x4-drop2")
    path = export(trace, tmp_path / "race.html", block=(0, 0))
    with open(path, encoding="utf-8") as f:
        text = f.read()
    # The frames' data: the ran-ahead mark's hover and the table's book term.
    assert "thread (0,0) had already loaded phase 1" in text
    assert "kernel computes M" in text and "ahead_alpha" in text
