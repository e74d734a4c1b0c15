"""The barrier lab in the replay, the frames, the exports and the dashboard's model.

Oracles: the step list of Fig. 5.9's loop counted by hand without the
removed barrier; the hazard rows of a 2 x 2 block enumerated by hand; the
simulator's "in turns" schedule (a preset shipped as a file is what a fresh
recording gives); the recorded reads themselves (the hover text names the
element the trace says was read).
"""

import importlib.resources

import numpy as np
import pytest

import vizmm
from vizmm.analysis import hazards as hz
from vizmm.replay import Replay, Sub

DATA = importlib.resources.files("vizmm") / "data"


def _load(name):
    return vizmm.load(str(DATA / f"{name}.vizmm"))


@pytest.mark.parametrize(
    "name, drop", [("lab-4x4-drop1", (1,)), ("lab-4x4-drop2", (2,)), ("lab-4x4-drop12", (1, 2))]
)
def test_shipped_presets_are_what_the_simulator_records(name, drop):
    shipped = _load(name)
    fresh = vizmm.record(
        width=4,
        tile_width=2,
        kernel="tiled",
        drop_barrier=drop,
        seed=0,
        backend="simulator",
        quiet=True,
    )
    assert shipped.meta["drop_barrier"] == list(drop)
    np.testing.assert_array_equal(shipped.shared_reads, fresh.shared_reads)
    np.testing.assert_array_equal(shipped.P, fresh.P)


@pytest.mark.parametrize("drop, per_phase", [((1,), 2 + 2 + 2), ((2,), 2 + 2 + 2), ((1, 2), 4)])
def test_steps_skip_the_removed_barrier(drop, per_phase):
    trace = _load({(1,): "lab-4x4-drop1", (2,): "lab-4x4-drop2", (1, 2): "lab-4x4-drop12"}[drop])
    r = Replay(trace, (0, 0))
    # start, per phase: load M, load N, [barrier 1, released], k = 0, 1, [barrier 2, released],
    # then the P store. Two phases.
    assert len(r) == 1 + 2 * per_phase + 1
    subs = {s.sub for s in r.steps}
    assert (Sub.ARRIVE_1 in subs) == (1 not in drop)
    assert (Sub.ARRIVE_2 in subs) == (2 not in drop)


def test_first_wrong_read_is_marked_with_the_element_read():
    trace = _load("lab-4x4-drop1")
    r = Replay(trace, (0, 0))
    i = r.first_wrong_read()
    f = r.frame(i)
    assert f.step.sub == Sub.K
    ph, k = f.step.phase, f.step.k
    tags = trace.shared_reads[0, ph, :, :, k]  # (ty, tx, 2) what each thread found
    wrong = hz.wrong_read_mask(trace)[0, ph, :, :, k]
    np.testing.assert_array_equal(f.thread_wrong, wrong.any(axis=-1))
    for (ty, tx), note in f.wrong_notes.items():
        for a, name in enumerate(("Mds", "Nds")):
            if wrong[ty, tx, a]:
                assert hz.describe_tag(int(tags[ty, tx, a]), name, 4).split(" (")[0] in note
        assert "where the book's kernel reads" in note
    # Mds[ty][k] / Nds[k][tx]: the slots read wrongly lie in column k / row k.
    assert not f.mds_wrong[:, [c for c in range(2) if c != k]].any()
    assert not f.nds_wrong[[r_ for r_ in range(2) if r_ != k], :].any()
    assert f.struck_lines == (20,)  # line 21 of the source: the first __syncthreads()
    # Steps before the first wrong read mark nothing.
    for j in range(i):
        g = r.frame(j)
        assert not g.thread_wrong.any()


def test_pvalue_is_the_sum_of_what_was_really_read():
    trace = _load("lab-4x4-drop12")
    r = Replay(trace, (0, 0))
    last = r.frame(len(r) - 1)
    np.testing.assert_array_equal(last.pvalue, trace.P[:2, :2])
    np.testing.assert_array_equal(last.p_wrong, trace.P != trace.M @ trace.N)


def test_hazard_list_of_a_two_by_two_block():
    trace = _load("lab-4x4-drop1")
    lst = hz.HazardList(hz.hazards(trace))
    index = lst.select(block=(0, 0))
    rows = lst.rows[index]
    # By hand: thread (ty, tx) reads Mds[ty][k] (another thread's when k != tx) and
    # Nds[k][tx] (another's when k != ty); a row per thread, phase and such k.
    want = {
        (ph, k, ty, tx)
        for ph in range(2)
        for ty in range(2)
        for tx in range(2)
        for k in range(2)
        if k != tx or k != ty
    }
    got = [(int(r["phase"]), int(r["k"]), *(int(v) for v in r["reader"])) for r in rows]
    assert set(got) == want and len(got) == len(want) and set(rows["kind"]) == {"RAW"}
    assert got == sorted(got)  # step order: phase, k, then the reader
    # thread (0,0) at k = 1 reads Mds[0][1] (written by (0,1)) and Nds[1][0] (by (1,0))
    i = index[got.index((0, 1, 0, 0))]
    assert lst.describe(i) == ("Mds[0][1], Nds[1][0]", "(0,1), (1,0)")
    marked = {g for g, r in zip(got, rows, strict=True) if r["wrong"]}
    mask = hz.wrong_read_mask(trace)[0].any(axis=-1)  # (nph, ty, tx, k)
    assert marked == {(ph, k, ty, tx) for ph, ty, tx, k in zip(*np.nonzero(mask), strict=True)}
    # Every hazard is in one row: the rows' counts add up to the analysis' rows.
    assert lst.counts(lst.select()) == {"RAW": len(hz.hazards(trace)), "WAR": 0}


def test_dashboard_state_opens_the_lab_presets():
    pytest.importorskip("panel")
    from vizmm_apps import barrier_view
    from vizmm_apps.dashboard import DashboardState

    for key in barrier_view.LAB_PRESETS:
        s = DashboardState(source=key).start()
        st = s.status()
        assert st["ready"], (key, st["message"])
        assert st["struck"], key


def test_gif_export_of_a_race_has_no_removed_barrier_steps(tmp_path):
    from PIL import Image

    from vizmm.export import export

    trace = _load("lab-4x4-drop1")
    path = export(trace, tmp_path / "race.gif", block=(0, 0))
    with Image.open(path) as gif:
        # 1 + 2 phases x (load M, load N, k = 0, 1, barrier 2, released) + write P
        assert gif.n_frames == 1 + 2 * 6 + 1


def test_hazard_panel_reaches_every_hazard_a_page_at_a_time():
    pytest.importorskip("panel")
    from vizmm_apps.barrier_view import PAGE_ROWS, HazardPanel
    from vizmm_apps.dashboard import DashboardState

    key = "gpu-barrier-tiled-32-t16-drop12"
    trace = _load(key)
    want = hz.hazards(trace)
    s = DashboardState(source=key).start()
    panel = HazardPanel(s)
    # Every block, every kind: page through the whole list; each hazard is in one row.
    panel.block.value = "all"
    seen, pages = 0, 0
    while True:
        labels = list(panel.table.options)
        assert 0 < len(labels) <= PAGE_ROWS
        seen += sum(panel._findings().hazards.rows["count"][i] for i in panel._shown)
        pages += 1
        if panel.next_page.disabled:
            break
        panel._turn(1)
    assert seen == len(want) and pages > 1
    assert f"of {len(panel._index):,}" in panel.page_info.object
    # Filters: kind and phase and block; the counts are the analysis' rows that pass.
    panel.kind.value = "WAR"
    panel.phase.value = 0
    panel.block.value = "0,1"
    assert panel.page == 0
    sel = (
        (want["kind"] == "WAR")
        & (want["phase"] == 0)
        & (want["block"][:, 0] == 0)
        & (want["block"][:, 1] == 1)
    )
    assert f"0 RAW and {int(sel.sum()):,} WAR" in panel.summary.object and sel.any()
    label = next(iter(panel.table.options))
    assert label.startswith("WAR · block (0,1) · phase 0 · k ")
    # Clicking a row of another block than the replayed one goes there.
    assert (s.by, s.bx) == (0, 0)
    panel.table.value = [0]
    row = panel._findings().hazards.rows[panel._shown[0]]
    f = s.frame
    assert (s.by, s.bx) == (0, 1) and f.block == (0, 1)
    assert (f.step.sub, f.step.phase, f.step.k) == (Sub.K, 0, int(row["k"]))
    assert f.focus == tuple(int(v) for v in row["reader"])
    # Only the reads that went wrong in this run.
    panel.kind.value = "all"
    panel.phase.value = -1
    panel.block.value = "all"
    panel.wrong.value = True
    lst = panel._findings().hazards
    assert lst.rows["wrong"][panel._index].all()
    assert lst.rows["wrong"].sum() == len(panel._index) > 0


def test_drawing_the_hazard_list_picks_no_row():
    """A page drawn with the list already filled stays on its step (no row is clicked)."""
    pytest.importorskip("panel")
    from bokeh.document import Document

    from vizmm_apps.barrier_view import HazardPanel
    from vizmm_apps.dashboard import DashboardState

    s = DashboardState(source="lab-4x4-drop1").start()
    s.step = 6
    panel = HazardPanel(s)
    assert len(panel.table.options) > 0  # the list holds rows
    panel.__panel__().get_root(Document())  # as a page drawn after the trace was read
    assert (s.step, s.ty, s.tx) == (6, -1, -1)
    assert panel.table.value == []


def test_hazard_panel_says_why_its_list_is_empty(record_sim):
    """The naive kernel has no barrier to keep; no trace, nothing to check (Section 5.4)."""
    pytest.importorskip("panel")
    from vizmm_apps.barrier_view import HazardPanel
    from vizmm_apps.dashboard import DashboardState

    s = DashboardState(source="fig5-8").start()
    panel = HazardPanel(s)
    assert "Both `__syncthreads()` kept: no hazard" in panel.summary.object
    s.trace = record_sim(width=4, tile_width=2, kernel="naive")
    assert "Fig. 3.11" in panel.summary.object and "kept" not in panel.summary.object
    s.trace = None
    assert panel.summary.object.startswith("No trace is shown")
    assert "kept" not in panel.summary.object
