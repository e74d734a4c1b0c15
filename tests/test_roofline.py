"""CGMA from recorded traces and the roofline (Section 5.4), against the book and hand counts."""

import json
import os

import numpy as np
import pytest

import vizmm
from vizmm.analysis import roofline as rl

DATA = os.path.join(os.path.dirname(vizmm.__file__), "data")


def test_cgma_of_a_tile_width_16_trace_is_4_op_per_byte_and_naive_is_quarter():
    kw = dict(width=32, backend="simulator", quiet=True)
    tiled = rl.intensity(vizmm.record(tile_width=16, kernel="tiled", **kw))
    naive = rl.intensity(vizmm.record(tile_width=16, kernel="naive", **kw))
    # Section 5.4: 0.25 OP/B without tiling, 4 OP/B with 16 x 16 tiles.
    assert naive.op_per_byte == 0.25 and naive.flop_per_load == 1.0
    assert tiled.op_per_byte == 4.0 and tiled.flop_per_load == 16.0
    assert tiled.reduction == 16 and tiled.naive_op_per_byte == 0.25
    # 32 x 32 . 32 x 32: 2 * 32**3 FLOP; each element read 32 / 16 = 2 times.
    assert tiled.flop == 2 * 32**3 and tiled.global_reads == 2 * 32 * 32 * 2


def test_cgma_counts_only_real_reads_fig_5_11():
    # 3 x 3 with TILE_WIDTH 2 (boundary checks): every element of M is read by the 2
    # blocks of its row of blocks, of N by the 2 of its column: 18 + 18 reads, the
    # zero-fills read nothing. 2 * 3 FLOP per P element, 9 elements: 54 FLOP.
    t = vizmm.load(os.path.join(DATA, "fig5-11.vizmm"))
    ai = rl.intensity(t)
    assert (ai.flop, ai.global_reads, ai.naive_reads) == (54, 36, 54)
    assert ai.op_per_byte == 54 / 144


def test_a_simulated_window_counts_its_own_blocks():
    t = vizmm.record(
        width=6, tile_width=2, kernel="tiled", backend="simulator", window=[(0, 0)], quiet=True
    )
    ai = rl.intensity(t)
    # One 2 x 2 block: 4 P elements x 2 x 6 FLOP; it reads 2 x (2 x 6) elements.
    assert (ai.flop, ai.global_reads) == (48, 24)
    assert ai.op_per_byte == 0.5  # TILE_WIDTH / 4
    # The trace's own CGMA and naive count (vizmm info) cover the window too.
    assert t.cgma_op_per_byte() == 0.5 and t.naive_loads() == 48


@pytest.mark.parametrize("key", list(rl.ROOFLINE_TRACES))
def test_the_shipped_roofline_traces_are_whole_launches_at_the_books_intensity(key):
    kernel, T = key
    width, _ = rl.ROOFLINE_TRACES[key]
    t = rl.roofline_trace(kernel, T)
    assert (t.kernel, t.tile_width, t.shape) == (kernel, T, (width,) * 3)
    reads = width if kernel == "naive" else width // T
    assert (t.m_reads == reads).all() and (t.n_reads == reads).all()
    assert rl.intensity(t).op_per_byte == (0.25 if kernel == "naive" else T / 4)


def test_the_books_a100_example():
    b = rl.book_a100()
    naive, tiled = b.points
    assert naive.gflops == pytest.approx(389, abs=0.5)  # 1555 GB/s x 0.25 OP/B
    assert tiled.gflops == 6220  # 1555 GB/s x 4 OP/B
    assert round(tiled.gflops / b.peak_gflops, 2) == 0.32  # "only 32% of the peak"
    assert b.ridge_op_per_byte == pytest.approx(19500 / 1555)


@pytest.mark.parametrize("device", ["H200", "H100"])
def test_measured_roofline_places_each_kernel_at_its_recorded_intensity(device):
    with open(os.path.join(DATA, f"gpu-speed-{device.lower()}.json")) as f:
        data = json.load(f)
    bw = data["dram_bandwidth"]["gb_per_s"]
    # The highest FP32 rate measured: cuBLAS's SGEMM beat the FMA-bound kernel.
    blas = max(p["gflops"] for p in data["products"] if p["kernel"] == "cublas")
    assert blas > data["fp32_peak"]["gflops"]
    peak = blas
    r = rl.measured_roofline(device)
    assert (r.bandwidth_gb_s, r.peak_gflops) == (bw, peak)
    assert len(r.points) >= 6
    for p in r.points:
        row = [
            q
            for q in data["products"]
            if (q["kernel"], q["tile_width"], q["width"]) == (p.kernel, p.tile_width, 4096)
        ]
        assert p.gflops == row[0]["gflops"]
        assert p.op_per_byte == rl.intensity(rl.roofline_trace(p.kernel, p.tile_width)).op_per_byte
        assert p.bound_gflops == min(peak, bw * p.op_per_byte)
    by = {p.label: p for p in r.points}
    # The book's ordering: tiling beats the naive kernel several times over.
    assert by["tiled T=16"].gflops > 4 * by["naive T=16"].gflops
    assert np.allclose(r.attainable([0.25, 1e6]), [bw * 0.25, peak])


def test_speed_series_cublas_is_fastest_from_512_on():
    s = rl.speed_series("H200")
    assert {"naive T=16", "tiled T=8", "tiled T=16", "tiled T=32", "cuBLAS"} <= set(s)
    blas = dict(s["cuBLAS"])
    for label, pts in s.items():
        for w, g in pts:
            if label != "cuBLAS" and w >= 512:
                assert blas[w] > g, (label, w)


def test_roofline_view_puts_the_current_trace_on_the_roof():
    from vizmm.render.roofline_bokeh import RooflineView

    r = rl.measured_roofline("H200")
    v = RooflineView(r, rl.book_a100())
    v.set_current(4.0, "tiled T=16")
    assert v.current.data["x"] == [4.0]
    assert v.current.data["y"] == [min(r.peak_gflops, 4.0 * r.bandwidth_gb_s)]
    v.set_current(None)
    assert v.current.data["x"] == []
