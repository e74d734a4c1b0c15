"""vizmm check's findings in the replay: the list, the marks, the table, the GIF, the notebook.

The trace is a checked recording of ``check_kernels.transposed_tile`` (4 x 4,
TILE_WIDTH 2, simulator): it stores N's tile transposed, ``Nds[tx][ty] = N[(ph*T +
ty)*Width + Col]``, so ``Nds[a][b]`` holds ``N_{ph*T+b, bx*T+a}``. Derived by hand
(as tests/test_check.py does): thread (ty, tx) reads ``Nds[k][tx] = N_{tx,k}`` at
phase 0 and needs ``N_{k,tx}``; at k = 0 the first wrong one is thread (0, 1) of
block (0, 0): it multiplied ``M_{0,0}·N_{1,0}`` where the book's kernel multiplies
``M_{0,0}·N_{0,1}``, read from ``Nds[0][1]``, which thread (1, 0) stored. Its step
in Fig. 5.8's replay is k = 0 of phase 0: load M, load N, barrier 1 (arrivals,
release), k = 0, the sixth step (5, 0-based).

The browser test serves the trace with ``vizmm serve --traces FILE``, clicks the
first finding at 1280 x 720 and reads the scene's marks and the Fig. 5.8 table from
the Bokeh document; it writes docs/check-finding-replay.png.
"""

import os

import check_kernels as ck
import numpy as np
import pytest

import vizmm
from vizmm.render import palette as pal
from vizmm.render.html_text import view_rows

T = 2
FIRST = {"block": (0, 0), "thread": (0, 1), "other": (1, 0), "step": 5}


@pytest.fixture(scope="module")
def checked(tmp_path_factory):
    report = vizmm.check(ck.transposed_tile, width=4, tile_width=T, backend="simulator")
    path = tmp_path_factory.mktemp("checked") / "transposed.vizmm"
    report.trace.save(str(path))
    return report, str(path)


def _first_marks(report):
    from vizmm.replay.findings import finding_marks

    return finding_marks(report.findings[0], 0)


def test_marks_of_the_first_wrong_term(checked):
    report, _ = checked
    m = _first_marks(report)
    assert m.block == FIRST["block"] and m.thread == FIRST["thread"]
    got = {(x.view, x.row, x.col, x.role) for x in m.marks}
    assert got == {
        ("M", 0, 0, "used"),  # M_{0,0}: the right factor
        ("Mds", 0, 0, "used"),  # Mds[ty][k] = Mds[0][0]
        ("N", 1, 0, "wrong"),  # N_{1,0} multiplied
        ("Nds", 0, 1, "wrong"),  # Nds[k][tx] = Nds[0][1], which held N_{1,0}
        ("N", 0, 1, "needed"),  # N_{k,Col} = N_{0,1}
        ("threads", 0, 1, "wrong"),
        ("threads", 1, 0, "other"),  # stored Nds[0][1]
    }
    assert m.table == (0, 1, 0, 0)  # thread (0,1)'s Pvalue cell of phase 0, k = 0


def test_findings_kept_with_the_trace(checked):
    from vizmm.replay.findings import trace_findings
    from vizmm.trace.derived import derived_count

    report, _ = checked
    trace = report.trace
    before = derived_count(trace)
    first = trace_findings(trace)
    assert trace_findings(trace) is first  # worked out once
    assert derived_count(trace) == before + 1
    assert [f.message for f in first] == [f.message for f in report.findings]


def test_dashboard_list_click_marks_scene_and_table(checked):
    from vizmm.serve.catalogue import CATALOGUE
    from vizmm_apps.dashboard import Dashboard, DashboardState

    report, path = checked
    (key,) = CATALOGUE.give([path])
    state = DashboardState(source=key)
    dash = Dashboard(state=state, served=False)
    panel = dash.findings
    assert panel.layout.visible
    assert len(panel.table.options) == len(report.findings)
    panel.table.value = [0]  # a click on the first row
    assert (state.by, state.bx) == FIRST["block"]
    assert (state.ty, state.tx) == FIRST["thread"]
    assert state.step == FIRST["step"] and state.finding == 0
    frame = state.frame
    assert frame.step.phase == 0 and frame.step.k == 0
    src = dash._scene.sources
    light = pal.LIGHT
    nds = src["Nds_finding"].data
    assert list(zip(nds["y"], nds["x"], strict=True)) == [(0.5, 1.5)]  # Nds[0][1]
    assert list(nds["line_color"]) == [light.FINDING]
    n = src["N_finding"].data
    cells = zip(n["y"], n["x"], n["line_color"], strict=True)
    assert {(y - 0.5, x - 0.5, c) for y, x, c in cells} == {
        (1, 0, light.FINDING),
        (0, 1, light.NEEDED),
    }
    th = src["threads_finding"].data
    assert {(y - 0.5, x - 0.5) for y, x in zip(th["y"], th["x"], strict=True)} == {(0, 1), (1, 0)}
    # the Fig. 5.8 table: thread (0,1)'s phase-0 Pvalue cell outlined, its wrong term first
    tab = view_rows(dash._scene.texts["table"].text)  # the table's cells as drawn
    marked = [t for t, c in zip(tab["text"], tab["line_color"], strict=True) if c == light.FINDING]
    assert len(marked) == 1 and marked[0].startswith("✗ M₀,₀*N₁,₀")
    # another block: no marks; another trace: the finding is let go
    state.by = 1
    assert state.frame.finding is None and len(dash._scene.sources["Nds_finding"].data["x"]) == 0


def test_url_carries_the_selected_finding(checked):
    from urllib.parse import quote

    from vizmm.serve.catalogue import CATALOGUE
    from vizmm_apps.dashboard import Dashboard, DashboardState

    report, path = checked
    (key,) = CATALOGUE.give([path])
    # finding=2 (1-based as the list): thread (1,1) of block (0,0) also reads Nds[0][1]
    # (N_{1,0}) at phase 0, k = 0 where it needs N_{0,1}: the same step as the first
    state = DashboardState()
    state.apply_query(f"trace={quote(key)}&finding=2")
    dash = Dashboard(state=state, served=False)
    assert state.finding == 1 and state.url_finding == 2
    assert (state.by, state.bx, state.ty, state.tx) == (0, 0, 1, 1)
    assert state.step == FIRST["step"]
    assert dash.findings.table.value == [1]  # its row selected
    assert state.frame.finding is not None and state.frame.finding.thread == (1, 1)
    assert "finding=2" in state.url_query() and "step=6" in state.url_query()
    # a click puts the finding into the URL
    dash.findings.table.value = [0]
    assert state.url_finding == 1 and "finding=1" in state.url_query()
    assert (state.ty, state.tx) == FIRST["thread"]
    # finding=0: none selected
    state.apply_query("finding=0")
    assert state.finding == -1 and dash.findings.table.value == []
    # a finding the trace does not have is named, and nothing else moves
    state.apply_query("finding=999")
    assert state.finding == -1
    assert f"finding=999 (this trace has {len(report.findings)}" in state.message


def test_gif_frame_draws_the_marks(checked):
    from vizmm.render.pillow import FrameRenderer
    from vizmm.replay import Replay
    from vizmm.replay.findings import with_finding

    report, _ = checked
    replay = Replay(report.trace, FIRST["block"], focus=FIRST["thread"])
    plain = replay.frame(FIRST["step"])
    marked = with_finding(plain, _first_marks(report))
    r = FrameRenderer(report.trace)
    finding = np.array(pal.hex_to_rgb(pal.LIGHT.FINDING), np.uint8)
    needed = np.array(pal.hex_to_rgb(pal.LIGHT.NEEDED), np.uint8)

    def count(img, rgb):
        return int((np.asarray(img) == rgb).all(axis=-1).sum())

    a, b = r.render(plain), r.render(marked)
    assert count(b, finding) > count(a, finding) + 100
    assert count(b, needed) > count(a, needed) + 20


def test_exports_carry_the_marks(checked):
    from vizmm.export import ExportError, export_bytes

    report, _ = checked
    f = report.findings[0]
    html = export_bytes(report.trace, "html", block=f.block, finding=f).decode()
    plain = export_bytes(report.trace, "html", block=f.block).decode()
    assert "Nds[0][1] held N_{1,0}, read for this term" in html
    assert "read for this term" not in plain
    with pytest.raises(ExportError, match="finding must be"):
        export_bytes(report.trace, "gif", block=f.block, finding="first")


def test_check_view_shows_report_and_first_finding(checked):
    from vizmm_apps.notebook import CheckView

    report, _ = checked
    view = CheckView(report)
    assert view.replay is not None
    assert view.replay.step == FIRST["step"]
    frame = view.replay.frame
    assert frame.finding is not None and frame.finding.thread == FIRST["thread"]
    assert frame.focus == FIRST["thread"]
    with pytest.raises(IndexError):
        CheckView(report, index=len(report.findings))


# ------------------------------------------------------------------ browser
CHROMIUM_OK = os.path.exists("/usr/bin/chromium")


def _source_js(key: str, columns: list[str], flag: str) -> str:
    """JS giving ``{column: [...]}`` of every data source with columns ``key`` and ``flag``."""
    cols = ", ".join(f'{c}: Array.from(get(d, "{c}"))' for c in columns)
    return f"""() => {{
  const get = (d, k) => (d instanceof Map ? d.get(k) : d[k]);
  const out = [];
  for (const m of Bokeh.documents[0].all_models) {{
    const d = m.data;
    const has = (k) => Array.isArray(get(d, k));
    if (d && has("{key}") && has("{flag}")) out.push({{{cols}}});
  }}
  return out;
}}"""


FINDING_SOURCES = _source_js("role", ["x", "y", "role", "line_color", "note"], "line_dash")


@pytest.fixture
def checked_served(checked, tmp_path):
    """``vizmm serve --traces`` the checked trace, a server for each test.

    Not one for the module: a page opened with ``&finding=2`` after another
    page of the same server chose a finding gets no ``step=`` in its URL.
    """
    from served import vizmm_serve

    with vizmm_serve(tmp_path, "--traces", checked[1]) as (_proc, base):
        yield base


@pytest.mark.browser
@pytest.mark.skipif(not CHROMIUM_OK, reason="/usr/bin/chromium is missing")
def test_served_checked_trace_click_first_finding(new_page, checked, checked_served):
    from served import ROOT, TEXT_VIEWS, read_status

    report, _path = checked
    base = checked_served
    pg = new_page(viewport={"width": 1280, "height": 720})
    errors: list[str] = []
    pg.on("pageerror", lambda e: errors.append(str(e)))
    pg.goto(f"{base}/dashboard?trace=file%3Atransposed.vizmm")
    pg.wait_for_selector(
        "#vizmm-status[data-source='file:transposed.vizmm'][data-ready='true']",
        timeout=60000,
    )
    listbox = pg.locator(".vizmm-findings select")
    options = listbox.locator("option")
    options.first.wait_for(state="attached", timeout=15000)
    assert options.count() == len(report.findings)
    assert options.first.inner_text().startswith("1. [error] wrong term: block (0,0)")
    listbox.select_option(index=0)
    pg.wait_for_selector("#vizmm-status[data-thread='[0, 1]']", timeout=15000)
    st = read_status(pg, "#vizmm-status")
    assert st["step"] == FIRST["step"] and st["phase"] == 0 and st["k"] == 0
    pg.wait_for_function(
        f"() => ({FINDING_SOURCES})().some(d => d.role.includes('needed'))",
        timeout=15000,
    )
    marks = {
        (round(y - 0.5), round(x - 0.5), role)
        for d in pg.evaluate(FINDING_SOURCES)
        for y, x, role in zip(d["y"], d["x"], d["role"], strict=True)
    }
    # M (0,0) used, N (1,0) wrong, N (0,1) needed, Mds[0][0], Nds[0][1], threads
    assert {(1, 0, "wrong"), (0, 1, "needed"), (0, 1, "wrong"), (1, 0, "other")} <= marks
    cells = pg.evaluate(TEXT_VIEWS, "vizmm-table")  # as the page draws them
    marked = [
        t
        for d in cells
        for t, c in zip(d["text"], d["line_color"], strict=True)
        if c == pal.LIGHT.FINDING
    ]
    assert marked and marked[0].startswith("✗ M₀,₀*N₁,₀")
    docs = os.path.join(ROOT, "docs")
    pg.screenshot(path=os.path.join(docs, "check-finding-replay.png"), full_page=True)
    assert errors == []


@pytest.mark.browser
@pytest.mark.skipif(not CHROMIUM_OK, reason="/usr/bin/chromium is missing")
def test_served_url_with_finding_selects_it(new_page, checked, checked_served):
    from served import read_status

    report, _path = checked
    base = checked_served
    pg = new_page(viewport={"width": 1280, "height": 720})
    errors: list[str] = []
    pg.on("pageerror", lambda e: errors.append(str(e)))
    # finding 2 (the list's numbering): thread (1,1) of block (0,0) reads Nds[0][1]
    # (N_{1,0}) at phase 0, k = 0 where it needs N_{0,1}: the first finding's step
    pg.goto(f"{base}/dashboard?trace=file%3Atransposed.vizmm&finding=2")
    pg.wait_for_selector(
        "#vizmm-status[data-source='file:transposed.vizmm'][data-ready='true']",
        timeout=60000,
    )
    pg.wait_for_selector("#vizmm-status[data-thread='[1, 1]']", timeout=15000)
    st = read_status(pg, "#vizmm-status")
    assert st["block"] == [0, 0] and st["step"] == FIRST["step"]
    assert st["phase"] == 0 and st["k"] == 0
    listbox = pg.locator(".vizmm-findings select")
    listbox.locator("option").first.wait_for(state="attached", timeout=15000)
    picked: list = []
    for _ in range(60):  # the row's selection arrives after the options
        picked = listbox.evaluate("s => Array.from(s.selectedOptions, o => o.text)")
        if picked:
            break
        pg.wait_for_timeout(250)
    assert len(picked) == 1
    assert picked[0].startswith("2. [error] wrong term: block (0,0), thread (1,1)")
    # the URL follows the page (replaceState) a moment after the selection arrives
    pg.wait_for_function("() => location.search.includes('step=6')", timeout=15000)
    assert "finding=2" in pg.url and "step=6" in pg.url
    # a click on the first row puts finding=1 into the URL
    listbox.select_option(index=0)
    pg.wait_for_function("() => location.search.includes('finding=1')", timeout=15000)
    pg.wait_for_selector("#vizmm-status[data-thread='[0, 1]']", timeout=15000)
    assert errors == []
