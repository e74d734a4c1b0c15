"""The scene's headings stand over what they name (issue 32, item 10).

Checked against the book's counts worked out by hand for Fig. 5.8 (4 x 4,
TILE_WIDTH 2, block (0,0): 4 threads): the first step loads M's tile (4
reads) before any product; the naive kernel (Fig. 3.11) reads 2 per term
per thread, so once both tiles of phase 0 are in (8 reads, 2 terms a
thread) it would have made 2 * 4 * 2 = 16 reads: 2.0x fewer.
"""

import numpy as np
import pytest

from vizmm.render.bokeh_scene import Scene, frame_columns
from vizmm.render.pillow import FrameRenderer
from vizmm.replay import Replay
from vizmm.serve.catalogue import CATALOGUE


def _counters(frame, tr):
    cols = frame_columns(frame, tr)
    return cols["counters"], cols["bars"]


def _first(rep, pred):
    return next(i for i in range(len(rep)) if pred(rep.frame(i)))


def test_no_ratio_nor_cgma_before_any_product():
    tr = CATALOGUE.get("fig5-8")
    rep = Replay(tr, (0, 0))
    i = _first(rep, lambda f: f.loads_so_far == 4)  # M's tile of phase 0 loaded, not N's
    text = _counters(rep.frame(i), tr)[0]["text"]
    assert "  -> no product yet (TILE_WIDTH = 2)" in text
    assert "CGMA: no product yet" in text
    assert not any("0.0x" in t or "CGMA 0.00" in t for t in text)
    # both tiles of phase 0 in: 8 reads against the naive kernel's 16
    i = _first(rep, lambda f: f.loads_so_far == 8)
    text = _counters(rep.frame(i), tr)[0]["text"]
    assert "  -> 2.0x fewer (TILE_WIDTH = 2)" in text
    # CGMA: 2 FLOPs per term, 2 terms for each of 4 threads, over 8 reads = 2.0 FLOP/load
    assert "CGMA 0.50 OP/B (2.00 FLOP/load)" in text


def test_the_bars_sit_under_the_loads_heading_and_pvalue_under_its_own():
    tr = CATALOGUE.get("fig5-8")
    for focus in (None, (1, 0)):
        frame = Replay(tr, (0, 0), focus=focus).frame(10)
        counters, bars = _counters(frame, tr)
        y = dict(zip(counters["text"], counters["y"], strict=True))
        loads = y["Global loads of M, N (this block)"]
        ratio = next(v for t, v in y.items() if t.startswith("  -> "))
        cgma = next(v for t, v in y.items() if t.startswith("CGMA"))
        pvalue = next(v for t, v in y.items() if t.startswith("Pvalue"))
        # the two bars: right under the loads' lines, above CGMA and the Pvalue heading
        assert all(loads < ratio < b < cgma < pvalue for b in bars["y"]), (y, bars["y"])
        # no text line drawn where a bar is
        assert not set(np.floor(bars["y"])) & set(np.floor(counters["y"]))


def test_pvalue_names_a_thread_only_when_one_is_followed():
    tr = CATALOGUE.get("fig5-8")
    last = len(Replay(tr, (0, 0))) - 1
    text = _counters(Replay(tr, (0, 0)).frame(last), tr)[0]["text"]
    assert not any("thread (" in t for t in text)
    assert "Pvalue after each phase" in text
    frame = Replay(tr, (0, 0), focus=(1, 0)).frame(last)
    text = _counters(frame, tr)[0]["text"]
    assert "Pvalue of followed thread (1,0) after" in text
    # thread (1,0) of block (0,0) computes P[1][0]: its Pvalue after phase 1 is P's value
    assert any(t.endswith(f"ph 1: {tr.P[1, 0]:g}") or f"ph 1: {tr.P[1, 0]:g}" in t for t in text)


def test_the_warp_row_has_a_heading_only_with_transactions_on():
    tr = CATALOGUE.get("fig5-8")
    scene = Scene(tr)
    scene.update(Replay(tr, (0, 0)).frame(1))
    # no row yet: a spacer keeps its place, no heading over it
    assert scene.layout.select_one({"name": "vizmm-warps"}) is None
    under = next(
        c
        for c in scene.layout.references()
        if getattr(c, "children", None) and scene.figures["threads"] in c.children
    )
    assert [type(c).__name__ for c in under.children[:2]] == ["Plot", "Spacer"]
    scene.update(Replay(tr, (0, 0), transactions=True).frame(1))
    row = scene.layout.select_one({"name": "vizmm-warps"})
    assert under.children[1] is row  # in the spacer's place
    assert "per warp" in row.title.text
    scene.update(Replay(tr, (0, 0)).frame(2))
    assert row.title.text == ""


@pytest.mark.parametrize("step, expected", [("before", "no product yet"), ("after", "CGMA 0.50")])
def test_exported_frames_say_the_same(step, expected, monkeypatch):
    # the GIF/MP4 header line: what the dashboard's counters say
    tr = CATALOGUE.get("fig5-8")
    rep = Replay(tr, (0, 0))
    i = _first(rep, lambda f: f.loads_so_far == (4 if step == "before" else 8))
    said = []
    import vizmm.render.pillow as P

    real = P._draw_text
    monkeypatch.setattr(
        P, "_draw_text", lambda d, xy, t, *a, **k: said.append(t) or real(d, xy, t, *a, **k)
    )
    FrameRenderer(tr).render(rep.frame(i))
    line = next(t for t in said if t.startswith("global loads"))
    assert expected in line
    assert "CGMA 0.00" not in line
