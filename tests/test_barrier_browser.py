"""The barrier lab in the served dashboard, driven in headless Chromium as a person would.

Choose the preset without the load barrier from the trace menu, step to the
first wrong read and see it marked (the reading threads outlined, the hover
text in the book's words, the removed line struck out, the thread that ran
ahead marked, the Fig. 5.8 table's wrong term filled with the lab's colour);
click a row of the hazard list and land on that step with that thread
followed.
"""

import os

import pytest
from served import CHROMIUM, SHOTS, TEXT_VIEWS, read_status

pytestmark = pytest.mark.browser

if not os.path.exists(CHROMIUM):
    pytest.skip(f"{CHROMIUM} is missing (apt-get install chromium)", allow_module_level=True)
sync_api = pytest.importorskip("playwright.sync_api")


def _source_js(key: str, columns: list[str], flag: str | None = None) -> str:
    """JS giving ``{column: [...]}`` of the last data source with ``key`` (and ``flag``).

    The last one: the scene of the trace now shown.
    """
    cols = ", ".join(f'{c}: Array.from(get(d, "{c}"))' for c in columns)
    test = f'Array.isArray(get(d, "{key}"))' + (f' && get(d, "{flag}")' if flag else "")
    return f"""() => {{
  const get = (d, k) => (d instanceof Map ? d.get(k) : d[k]);
  let found = null;
  for (const m of Bokeh.documents[0].all_models) {{
    const d = m.data;
    if (d && {test}) found = {{{cols}}};
  }}
  return found;
}}"""


# The texts of the threads' glyphs and hover lines and their "ran ahead" marks, as the
# page holds them (the Fig. 5.8 table's cells and the source lines: served.TEXT_VIEWS,
# as the page draws them).
THREAD_DATA = _source_js("word", ["state", "word", "ahead_alpha"], "pvalue")


@pytest.fixture
def server(dashboard_url):
    """The session's dashboard (tests/conftest.py)."""
    return dashboard_url


def status(pg):
    return read_status(pg, "#vizmm-status")


def test_no_load_barrier_preset_marks_the_wrong_reads(browser, server):
    import vizmm
    from vizmm.analysis import hazards as hz

    pg = browser.new_page(viewport={"width": 1600, "height": 1200})
    errors = []
    pg.on("pageerror", lambda e: errors.append(str(e)))
    pg.goto(server)
    pg.wait_for_selector("#vizmm-status[data-ready='true']", timeout=60000)
    # The trace menu, as a person uses it.
    pg.locator("select").first.select_option(
        label="Barrier lab · 4×4, TILE_WIDTH 2, no barrier 1 (after the loads)"
    )
    pg.wait_for_selector(
        "#vizmm-status[data-source='lab-4x4-drop1'][data-ready='true']", timeout=60000
    )
    st = status(pg)
    assert st["struck"] == [21]  # Fig. 5.9's first __syncthreads(), line 21 of the source
    # The oracle: the first step whose k-loop reads the recorded trace says went wrong.
    import importlib.resources

    trace = vizmm.load(str(importlib.resources.files("vizmm") / "data" / "lab-4x4-drop1.vizmm"))
    wrong = hz.wrong_read_mask(trace)[0]  # block (0, 0): (nph, ty, tx, k, 2)
    ph, ty, tx, k, _a = (int(v[0]) for v in wrong.nonzero())
    # Step by step with the keys until the page shows the first wrong read.
    for _ in range(40):
        st = status(pg)
        if st.get("sub") == "k loop" and st["phase"] == ph and st["k"] == k:
            break
        before = st["step"]
        pg.keyboard.press("ArrowRight")
        pg.wait_for_selector(f"#vizmm-status[data-step='{before + 1}']", timeout=15000)
    else:
        pytest.fail("never reached the first wrong read")
    want = wrong[ph, :, :, k].any(axis=-1).astype(int).tolist()
    assert st["wrong"] == want and st["wrong"][ty][tx] == 1
    t = ty * 2 + tx
    # The drawing follows the status: wait until the threads' glyphs carry the hover text.
    pg.wait_for_function(
        f"() => {{ const d = ({THREAD_DATA})(); return d && d.state[{t}].includes('book'); }}",
        timeout=15000,
    )
    data = pg.evaluate(THREAD_DATA)
    assert "where the book's kernel reads" in data["state"][t]
    assert data["word"][t].startswith("✗")
    src = pg.evaluate(TEXT_VIEWS, "vizmm-source")[-1]["text"]
    assert "(removed)" in src[20] and "\u0336" in src[20]
    # Who ran ahead: the oracle is the recorded tags (a slot not written yet: the reader).
    ahead = [int(a) for a in data["ahead_alpha"]]
    found = hz.found_phases(trace)[0, ph, :, :, k]  # (ty, tx, 2)
    readers = (wrong[ph, :, :, k] & (found < ph)).any(axis=-1).ravel().astype(int).tolist()
    assert ahead == readers and ahead[t] == 1
    # The Fig. 5.8 table: this phase's Pvalue cell of the thread holds the wrong term, filled
    # with the lab's colour, the book's term in its hover.
    from vizmm.render import palette as pal

    cells = pg.evaluate(TEXT_VIEWS, "vizmm-table")[-1]
    marked = [n for n, f in zip(cells["note"], cells["fill"], strict=True) if f == pal.LIGHT.WRONG]
    assert any(
        n.startswith(f"k={k}: computed") and "where the book's kernel computes" in n for n in marked
    )
    assert any(text.count("✗") for text in cells["text"])
    os.makedirs(SHOTS, exist_ok=True)
    pg.screenshot(path=os.path.join(SHOTS, "barrier-lab-first-wrong-read.png"), full_page=True)

    # The hazard list: a row names the reader, phase and k; choosing it lands there.
    listbox = pg.locator(".vizmm-hazards select")
    options = listbox.locator("option")
    options.first.wait_for(state="attached", timeout=15000)
    n = options.count()
    assert n > 0
    label = options.nth(n - 1).inner_text()
    # 'RAW · phase 1 · k 1 · thread (1,0) reads Mds[1][1] written by (1,1)'
    parts = [p.strip() for p in label.split("·")]
    assert parts[0] == "RAW"
    phase, kk = int(parts[1].split()[1]), int(parts[2].split()[1])
    a, b = (int(v) for v in parts[3].split("(")[1].split(")")[0].split(","))
    listbox.select_option(index=n - 1)
    pg.wait_for_selector(f"#vizmm-status[data-thread='[{a}, {b}]']", timeout=15000)
    st = status(pg)
    assert st["sub"] == "k loop" and st["phase"] == phase and st["k"] == kk
    assert st["thread"] == [a, b]
    pg.screenshot(path=os.path.join(SHOTS, "barrier-lab-hazard-row.png"), full_page=True)
    assert errors == []
    pg.close()
