"""Numbers the pages print, against independent oracles.

* A window trace's CGMA and summary compare its reads with what the naive
  kernel (Fig. 3.11) reads *for the same blocks*: the oracle is a simulator
  recording of the naive kernel over the same window, and the book's
  TILE_WIDTH-fold reduction (Section 5.4) for whole tiles.
* The "Fig. 5.7/5.8" preset replays the Fig. 5.9 kernel, as the book's
  Fig. 5.8 does.
"""

import pytest

import vizmm
from vizmm.serve.catalogue import CATALOGUE, PRESETS


@pytest.mark.parametrize(
    "width,tile,window",
    [
        (64, 16, [(0, 0)]),  # whole tiles: TILE_WIDTH-fold, CGMA 16
        (10, 4, [(2, 2), (0, 1)]),  # edge blocks hold fewer P elements
    ],
)
def test_window_cgma_compares_with_the_naive_kernel_on_the_same_blocks(width, tile, window):
    tiled = vizmm.record(
        width=width, tile_width=tile, kernel="boundary", backend="simulator", window=window,
        quiet=True,
    )  # fmt: skip
    naive = vizmm.record(
        width=width, tile_width=tile, kernel="naive", backend="simulator", window=window,
        quiet=True,
    )  # fmt: skip
    assert tiled.naive_loads() == naive.global_loads()
    assert tiled.cgma() == pytest.approx(naive.global_loads() / tiled.global_loads())
    assert f"naive kernel for the same blocks: {naive.global_loads()}" in tiled.summary()
    if width % tile == 0:
        assert tiled.cgma() == pytest.approx(tile)  # Section 5.4: TILE_WIDTH-fold
        assert f"CGMA {tile / 4:.2f} OP/B ({tile:.2f} FLOP per load)" in tiled.summary()


def test_whole_launch_cgma_is_tile_width():
    t = vizmm.record(width=8, tile_width=4, kernel="tiled", backend="simulator", quiet=True)
    assert t.naive_loads() == 2 * 8**3 and t.cgma() == pytest.approx(4)


def test_fig_5_8_preset_is_the_fig_5_9_kernel():
    p = PRESETS["fig5-8"]
    assert p.spec.kernel == "tiled" and (p.spec.j, p.spec.tile_width) == (4, 2)
    tr = CATALOGUE.get("fig5-8")
    assert tr.kernel == "tiled" and tr.meta["figure"] == "Fig. 5.9"
    assert "if Row < Width" not in tr.meta["source"]  # no boundary checks (Fig. 5.13 has them)
