"""Side by side as a student finds it (issue 32, item 9): served by ``vizmm serve``,
linked from the dashboard, the TILE_WIDTH pair running one kernel at both widths,
each pane titled by what sets it apart, every index of a small grid labelled."""

import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from served import CHROMIUM, SHOTS, open_menu, read_status, wait_drawn  # noqa: E402

from vizmm.render.bokeh_scene import Scene  # noqa: E402
from vizmm.replay import Lockstep, Replay  # noqa: E402
from vizmm.serve.catalogue import CATALOGUE  # noqa: E402
from vizmm_apps.side_by_side import PAIRS, SIDE_BOX, SIDE_VIEWS  # noqa: E402


def test_tile_width_pair_runs_one_kernel_at_both_widths():
    pair = PAIRS["tile-width"]
    left, right = CATALOGUE.get(pair.left), CATALOGUE.get(pair.right)
    assert left.kernel == right.kernel == "tiled"  # Fig. 5.9's kernel on both sides
    assert (left.tile_width, right.tile_width) == (2, 4)
    assert left.shape == right.shape == (4, 4, 4)
    assert left.meta["seed"] == right.meta["seed"]  # the same inputs
    assert (left.M == right.M).all() and (left.N == right.N).all()


def test_every_pair_titles_its_panes_apart():
    for key, pair in PAIRS.items():
        assert len(set(pair.titles)) == 2, key
    left, right = PAIRS["barrier"].titles
    assert "barrier 1" in right.lower() and "lacks" in right.lower()
    assert "none removed" in left


def _labelled(scene, name: str) -> dict[str, list[float]]:
    """Where grid ``name``'s index labels are (its units), by side."""
    return {side: list(at) for side, at in scene.index_labels(name).items()}


@pytest.mark.parametrize("side", [SIDE_BOX, (600, 500)])  # (600, 500): a 1280 x 720 window's
@pytest.mark.parametrize("key", ["tile-width", "boundary", "barrier"])
def test_every_index_labelled_in_both_panes(key, side):
    pair = PAIRS[key]
    both = Lockstep(Replay(CATALOGUE.get(pair.left)), Replay(CATALOGUE.get(pair.right)))
    for replay in (both.left, both.right):
        scene = Scene(replay.trace, views=SIDE_VIEWS, page=side)  # as the page fits each side
        j, k, l = replay.trace.shape
        for name, (rows, cols) in {"M": (j, k), "N": (k, l), "P": (j, l)}.items():
            ticks = _labelled(scene, name)
            # one label at the middle of every cell of the matrix, on both sides
            assert ticks["above"] == [i + 0.5 for i in range(cols)], (key, name)
            assert ticks["left"] == [i + 0.5 for i in range(rows)], (key, name)


def both_drawn(pg) -> None:
    """Wait until both panes have their grids (M of each side) and the page has drawn them."""
    pg.wait_for_function(
        "() => window.Bokeh && Bokeh.documents.flatMap((d) => [...d.all_models])"
        ".filter((m) => m.name === 'vizmm-M' && m.data_source).length >= 2",
        timeout=60000,
    )
    wait_drawn(pg)


@pytest.mark.browser
@pytest.mark.skipif(not os.path.exists(CHROMIUM), reason=f"{CHROMIUM} is missing")
def test_vizmm_serve_serves_side_by_side_linked_from_the_dashboard(new_page, vizmm_served):
    _proc, base = vizmm_served
    pg = new_page(viewport={"width": 1600, "height": 1000})
    errors = []
    pg.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    pg.goto(base + "/dashboard")
    pg.wait_for_selector("#vizmm-status[data-ready='true']", timeout=120000)
    open_menu(pg)  # the link is behind "☰ More"
    link = pg.wait_for_selector("#vizmm-side-by-side-link", timeout=120000)
    link.click()  # as a student would: the dashboard's link
    pg.wait_for_url("**/side_by_side*", timeout=30000)
    pg.wait_for_selector("#vizmm-pair-status[data-ready='true']", timeout=120000)
    st = read_status(pg, "#vizmm-pair-status")
    assert st["pair"] == "tile-width"
    assert st["left"]["kernel"] == st["right"]["kernel"] == "tiled"
    assert (st["left"]["tile_width"], st["right"]["tile_width"]) == (2, 4)
    # the barrier pair: each pane says which barrier it lacks
    pg.goto(base + "/side_by_side?pair=barrier&step=5")
    pg.wait_for_selector("#vizmm-pair-status[data-ready='true']", timeout=120000)
    titles = pg.eval_on_selector_all(
        "h2.vizmm-pane-title", "els => els.map(e => [e.dataset.side, e.textContent])"
    )
    expected = zip(("left", "right"), PAIRS["barrier"].titles, strict=True)
    assert dict(titles) == dict(expected)
    os.makedirs(SHOTS, exist_ok=True)
    both_drawn(pg)  # the second pane draws a moment after the first
    pg.screenshot(path=os.path.join(SHOTS, "side-by-side-barrier.png"))
    pg.set_viewport_size({"width": 1280, "height": 720})
    pg.goto(base + "/side_by_side?pair=tile-width&step=7")
    pg.wait_for_selector("#vizmm-pair-status[data-ready='true']", timeout=120000)
    both_drawn(pg)
    pg.screenshot(path=os.path.join(SHOTS, "side-by-side-tile-width-1280.png"))
    assert errors == []
