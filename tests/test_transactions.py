"""Memory transactions of the tiles, checked against addresses derived by hand.

Oracles: the book's index expressions (Fig. 5.9 lines 19-20, 24) and the
contrast kernels' own, turned into byte addresses and bank words here, in
plain Python loops, and counted by the rules of the hardware (32-byte sectors,
128-byte segments, 32 banks of 4-byte words, one word broadcast to any
number of lanes). The counts under test come from ``vizmm.analysis``.
"""

import os

import numpy as np
import pytest

from vizmm import Access, Trace
from vizmm.analysis.transactions import (
    LAYOUTS,
    TransactionsError,
    bank_wavefronts,
    memory_transactions,
    sector_spans,
    vector_wavefronts,
)


# ----------------------------------------------------------------- oracles
def oracle_global(addresses):
    """(sectors, segments) touched by one warp request: distinct byte address // 32, // 128."""
    return len({a // 32 for a in addresses}), len({a // 128 for a in addresses})


def oracle_way(words):
    """n of the n-way bank conflict: the most distinct words any bank is asked for."""
    per_bank = {}
    for w in words:
        per_bank.setdefault(w % 32, set()).add(w)
    return max(len(s) for s in per_bank.values())


def book_read_words(T, k, ty, tx):
    """Fig. 5.9 line 24: Mds[ty][k] and Nds[k][tx], row-major T x T arrays of floats."""
    return ty * T + k, k * T + tx


def conflict_read_words(T, k, ty, tx, pitch):
    """The contrast kernels' k loop: Mds[ty][k] and Nds[tx][k] (Nds has ``pitch`` columns)."""
    return ty * T + k, tx * pitch + k


def warps(T):
    """Threads (ty, tx) of each warp: thread index ty*T + tx, 32 to a warp."""
    threads = [(t // T, t % T) for t in range(T * T)]
    return [threads[i : i + 32] for i in range(0, T * T, 32)]


# ---------------------------------------------------------- synthetic trace
def synthetic_trace(kernel, width, T, m_elem, n_elem):
    """A fully detailed trace whose loads are given by index functions of (by, bx, ph, ty, tx).

    ``m_elem`` / ``n_elem`` return the (row, col) the thread loads; out-of-matrix
    elements are recorded as zero-fills (the boundary-checked kernels).
    """
    g = -(-width // T)
    nph = g
    loads = np.zeros((g * g, nph, T, T, 6), np.int32)
    blocks = []
    for by in range(g):
        for bx in range(g):
            s = len(blocks)
            blocks.append((by, bx))
            for ph in range(nph):
                for ty in range(T):
                    for tx in range(T):
                        for base, fn in ((0, m_elem), (3, n_elem)):
                            r, c = fn(by, bx, ph, ty, tx)
                            inside = r < width and c < width
                            kind = Access.LOADED if inside else Access.ZERO_FILL
                            loads[s, ph, ty, tx, base : base + 3] = (kind, r, c)
    nd = len(blocks)
    M = np.ones((width, width), np.float32)
    meta = dict(
        kernel=kernel,
        tile_width=T,
        j=width,
        k=width,
        l=width,
        backend="simulator",
        n_detail=nd,
        aggregated=False,
    )
    return Trace(
        meta=meta,
        M=M,
        N=M.copy(),
        P=M @ M,
        detail_blocks=np.array(blocks, np.int32).reshape(nd, 2),
        loads=loads,
        pvalue=np.zeros((nd, nph, T, T), np.float32),
        barrier_tick=np.full((nd, nph, 2, 2, T, T), -1, np.int32),
        barrier_clock=np.full((nd, nph, 2, 2, T, T), -1, np.int64),
        p_write=np.ones((nd, T, T), np.int8),
        block_info=np.full((g, g, 6), -1, np.int64),
        m_reads=np.zeros((width, width), np.int32),
        n_reads=np.zeros((width, width), np.int32),
        barrier_spread=np.zeros((0, 0, nph, 2, 2), np.int32),
        zero_fills=np.zeros((g, g, nph, 2), np.int32),
        wait_hist=np.zeros((0, 2, 32), np.int32),
        block_wait=np.zeros((0, 0, 2, 3), np.int32),
    )


def book_m(T):
    return lambda by, bx, ph, ty, tx: (by * T + ty, ph * T + tx)


def book_n(T):
    return lambda by, bx, ph, ty, tx: (ph * T + ty, bx * T + tx)


def swapped_m(T):
    return lambda by, bx, ph, ty, tx: (by * T + tx, ph * T + ty)


def swapped_n(T):
    return lambda by, bx, ph, ty, tx: (ph * T + tx, bx * T + ty)


# ------------------------------------------------------------ global loads
def _check_global_against_oracle(trace, mt, m_elem, n_elem, width):
    T = trace.tile_width
    for s, (by, bx) in enumerate(trace.detail_blocks.tolist()):
        for ph in range(trace.n_phases):
            for w, lanes in enumerate(warps(T)):
                for i, fn in enumerate((m_elem, n_elem)):
                    addrs = []
                    for ty, tx in lanes:
                        r, c = fn(by, bx, ph, ty, tx)
                        if r < width and c < width:
                            addrs.append(4 * (r * width + c))
                    sectors, segments = oracle_global(addrs) if addrs else (0, 0)
                    assert mt.global_sectors[s, ph, w, i] == sectors
                    assert mt.global_segments[s, ph, w, i] == segments
                    assert mt.global_requests[s, ph, w, i] == (1 if addrs else 0)
                    assert mt.global_bytes[s, ph, w, i] == 4 * len(addrs)


def test_book_kernel_one_segment_per_warp_request_at_tile_width_32():
    # A warp of a 32 x 32 block is one row ty; its lanes tx = 0..31 load
    # M[Row][ph*32 + tx]: 32 consecutive floats starting at byte
    # 4*(Row*64 + ph*32), a multiple of 128 -> one 128-byte segment, 4 sectors.
    T, width = 32, 64
    trace = synthetic_trace("tiled", width, T, book_m(T), book_n(T))
    mt = memory_transactions(trace)
    assert (mt.global_segments == 1).all()
    assert (mt.global_sectors == 4).all()
    assert (mt.global_sectors == mt.ideal_sectors).all()
    assert mt.sectors_per_request == 4.0
    assert mt.segments_per_request == 1.0
    _check_global_against_oracle(trace, mt, book_m(T), book_n(T), width)


def test_column_walking_loads_touch_32_segments_per_request():
    # Swapped roles: lanes tx = 0..31 of warp ty load M[by*32 + tx][ph*32 + ty],
    # 4*64 = 256 bytes apart: every lane in its own sector and segment.
    T, width = 32, 64
    trace = synthetic_trace("boundary", width, T, swapped_m(T), swapped_n(T))
    mt = memory_transactions(trace)
    assert (mt.global_segments == 32).all()
    assert (mt.global_sectors == 32).all()
    assert (mt.ideal_sectors == 4).all()
    assert mt.sectors_per_request == 32.0
    _check_global_against_oracle(trace, mt, swapped_m(T), swapped_n(T), width)


@pytest.mark.parametrize("T,width", [(16, 32), (8, 20), (3, 7), (5, 10)])
def test_global_counts_match_hand_derived_addresses(T, width):
    # Partial warps (T*T not a multiple of 32), warps spanning several rows,
    # rows not multiples of 8 floats and zero-filled edges.
    for m_elem, n_elem in ((book_m(T), book_n(T)), (swapped_m(T), swapped_n(T))):
        trace = synthetic_trace("boundary", width, T, m_elem, n_elem)
        _check_global_against_oracle(trace, memory_transactions(trace), m_elem, n_elem, width)


def test_tile_width_16_warp_reads_two_half_rows():
    # T = 16: a warp is rows ty, ty+1 of the block: two runs of 16 floats (64
    # bytes, each in its own 64-byte-aligned half segment): 4 sectors, 2 segments.
    T, width = 16, 64
    mt = memory_transactions(synthetic_trace("tiled", width, T, book_m(T), book_n(T)))
    assert (mt.global_sectors == 4).all() and (mt.global_segments == 2).all()


def test_recorded_book_kernel_t32_in_the_simulator(record_sim):
    trace = record_sim(width=32, tile_width=32, kernel="tiled")
    mt = memory_transactions(trace)
    assert mt.global_requests.sum() == 32 * 2  # 32 warps, one phase, M and N
    assert (mt.global_segments == 1).all() and mt.sectors_per_request == 4.0
    _check_global_against_oracle(trace, mt, book_m(32), book_n(32), 32)


# ------------------------------------------------------------ shared banks
@pytest.mark.parametrize("T", [32, 16, 8, 4, 3])
def test_book_reads_broadcast_mds_and_conflict_free_nds(T):
    mt = memory_transactions(synthetic_trace("tiled", T, T, book_m(T), book_n(T)))
    for k in range(T):
        for w, lanes in enumerate(warps(T)):
            m_words = [book_read_words(T, k, ty, tx)[0] for ty, tx in lanes]
            n_words = [book_read_words(T, k, ty, tx)[1] for ty, tx in lanes]
            if T == 32:  # one row of threads: Mds[ty][k] is one word for all 32 lanes
                assert len(set(m_words)) == 1
            assert list(mt.shared_read_words[k, w, : len(lanes), 0]) == m_words
            assert list(mt.shared_read_words[k, w, : len(lanes), 1]) == n_words
            assert mt.shared_read_wavefronts[k, w, 0] == oracle_way(m_words) == 1
            assert mt.shared_read_wavefronts[k, w, 1] == oracle_way(n_words) == 1
    assert mt.bank_conflicts_per_request == 0.0


@pytest.mark.parametrize("T,way", [(32, 32), (16, 8), (8, 2), (4, 1)])
def test_nds_tx_k_gives_the_hand_derived_n_way_conflict(T, way):
    # Nds[tx][k] is word tx*T + k. T = 32: a warp is one row ty, lanes tx 0..31
    # ask for words k, 32+k, ..., 992+k: all in bank k, 32 distinct -> 32-way.
    # T = 16: a warp is rows ty, ty+1 (same 16 words: broadcast); words tx*16 + k
    # fall in bank k (tx even) or k+16 (tx odd), 8 each -> 8-way. T = 8: 4 rows
    # of threads, words tx*8 + k in banks k, k+8, k+16, k+24, 2 each -> 2-way.
    lay = LAYOUTS["conflict"]
    rm, rn = lay.read_words(T)
    for k in range(T):
        for lanes in warps(T):
            n_words = [conflict_read_words(T, k, ty, tx, T)[1] for ty, tx in lanes]
            assert oracle_way(n_words) == way
            got = bank_wavefronts(np.array([rn[k, ty, tx] for ty, tx in lanes]))
            assert got == way
            m_words = [rm[k, ty, tx] for ty, tx in lanes]
            assert m_words == [conflict_read_words(T, k, ty, tx, T)[0] for ty, tx in lanes]


@pytest.mark.parametrize("T", [32, 16, 8, 4])
def test_padding_removes_the_conflict(T):
    lay = LAYOUTS["padded"]
    _, rn = lay.read_words(T)
    for k in range(T):
        for lanes in warps(T):
            words = [conflict_read_words(T, k, ty, tx, T + 1)[1] for ty, tx in lanes]
            assert [rn[k, ty, tx] for ty, tx in lanes] == words
            assert oracle_way(words) == 1
            assert bank_wavefronts(np.array(words)) == 1


def test_bank_wavefronts_broadcast_and_idle_lanes():
    assert bank_wavefronts(np.full(32, 5)) == 1  # one word for all: broadcast
    assert bank_wavefronts(np.array([0, 32, 0, 32] + [-1] * 28)) == 2  # 2 words, bank 0
    assert bank_wavefronts(np.full(32, -1)) == 0  # no lane accesses
    assert bank_wavefronts(np.arange(32) * 33) == 1  # stride 33: all banks


def test_layout_slot_words_place_the_logical_tile():
    # The conflict kernel stores N[ph*T + r][bx*T + c] (logical Nds[r][c]) at
    # physical Nds[c][r]: word c*T + r; the padded one at c*(T + 1) + r.
    T = 4
    _, nds = LAYOUTS["conflict"].slot_words(T)
    _, pad = LAYOUTS["padded"].slot_words(T)
    for r in range(T):
        for c in range(T):
            assert nds[r, c] == c * T + r
            assert pad[r, c] == c * (T + 1) + r
    # Thread (ty, tx) of the uncoalesced kernel fills logical Mds[tx][ty].
    ms, _ = LAYOUTS["uncoalesced"].store_slots(T)
    assert tuple(ms[1, 2]) == (2, 1)


def test_sector_spans_split_at_row_ends():
    # 5 x 6 matrix: sector 1 holds elements 8..15 = row 1 cols 2..5, row 2 cols 0..3.
    assert sector_spans([1], 8, 6, 30) == [(1, 2, 6), (2, 0, 4)]
    assert sector_spans([3], 8, 6, 30) == [(4, 0, 6)]  # 24..31, cut at the end (30)


# ----------------------------------------------------------------- errors
def test_naive_kernel_is_refused(record_sim):
    trace = record_sim(width=2, tile_width=1, kernel="naive")
    with pytest.raises(TransactionsError, match="naive kernel"):
        memory_transactions(trace)


def test_trace_without_per_thread_records_is_refused():
    T, width = 2, 4
    full = synthetic_trace("tiled", width, T, book_m(T), book_n(T))
    arrays = {
        name: getattr(full, name)
        for name in ("M", "N", "P", "block_info", "m_reads", "n_reads", "zero_fills")
    }
    nph = full.n_phases
    empty = Trace(
        meta=dict(full.meta, n_detail=0, aggregated=True),
        detail_blocks=np.zeros((0, 2), np.int32),
        loads=np.zeros((0, nph, T, T, 6), np.int32),
        pvalue=np.zeros((0, nph, T, T), np.float32),
        barrier_tick=np.zeros((0, nph, 2, 2, T, T), np.int32),
        barrier_clock=np.zeros((0, nph, 2, 2, T, T), np.int64),
        p_write=np.zeros((0, T, T), np.int8),
        barrier_spread=np.zeros((2, 2, nph, 2, 2), np.int32),
        wait_hist=np.zeros((nph, 2, 32), np.int32),
        block_wait=np.zeros((2, 2, 2, 3), np.int32),
        **arrays,
    )
    with pytest.raises(TransactionsError, match="no block recorded per thread"):
        memory_transactions(empty)


def test_not_a_trace_is_refused():
    with pytest.raises(TransactionsError, match="needs a vizmm Trace"):
        memory_transactions("fig58.vizmm")


# ------------------------------------------------------- contrast kernels
@pytest.mark.parametrize("name", ["uncoalesced", "conflict", "padded"])
@pytest.mark.parametrize("width,T", [(4, 2), (5, 2), (7, 4), (6, 3)])
def test_plain_contrast_kernels_compute_p(name, width, T):
    import importlib

    cuda = pytest.importorskip("numba.cuda")  # the plain kernel, launched by numba

    kern = importlib.import_module(f"vizmm_kernels.{name}").make_plain(T)
    rng = np.random.default_rng(width * 10 + T)
    M = rng.integers(-9, 10, size=(width, width)).astype(np.float32)
    N = rng.integers(-9, 10, size=(width, width)).astype(np.float32)
    P = np.full(width * width, np.nan, np.float32)
    g = -(-width // T)
    kern[(g, g), (T, T)](M.ravel(), N.ravel(), P, width)
    cuda.synchronize()
    np.testing.assert_array_equal(P.reshape(width, width), M.astype(np.float64) @ N)


def test_warp_detail_of_the_book_kernel_at_tile_width_32():
    from vizmm.analysis.transactions import warp_detail

    T, width = 32, 64
    trace = synthetic_trace("tiled", width, T, book_m(T), book_n(T))
    mt = memory_transactions(trace)
    # Block (1, 0), phase 1, warp 5 = thread row ty = 5: M row 32 + 5, cols 32..63.
    d = warp_detail(mt, trace, (1, 0), 1, 5, k=7)
    assert d.threads[5].all() and d.threads.sum() == 32
    assert sorted(map(tuple, d.m_elements.tolist())) == [(37, c) for c in range(32, 64)]
    assert d.m_sectors == [(37, c, c + 8) for c in range(32, 64, 8)]
    assert d.m_segments == [(37, 32, 64)]
    assert d.m_counts == {"requests": 1, "sectors": 4, "segments": 1, "ideal_sectors": 4,
                          "bytes": 128}  # fmt: skip
    # N: row ph*32 + 5 = 37, cols bx*32 .. = 0..31.
    assert d.n_segments == [(37, 0, 32)]
    # k = 7: the warp reads Mds[5][7] (one slot, broadcast) and Nds[7][0..31].
    assert np.argwhere(d.mds_read).tolist() == [[5, 7]]
    assert np.argwhere(d.nds_read).tolist() == [[7, c] for c in range(32)]
    assert not d.mds_conflict.any() and not d.nds_conflict.any()
    assert d.mds_way == d.nds_way == 1
    # Row-major T = 32 arrays: slot (r, c) is word 32r + c, in bank c.
    assert (d.nds_bank == np.arange(32)[None, :]).all()


# --------------------------------------------- recorded contrast kernels
@pytest.mark.parametrize("kernel", ["uncoalesced", "conflict", "padded"])
@pytest.mark.parametrize("width,T", [(5, 2), (4, 4), (7, 3)])
def test_recorded_contrast_kernels_compute_p(record_sim, kernel, width, T):
    trace = record_sim(width=width, tile_width=T, kernel=kernel, seed=width + T)
    np.testing.assert_array_equal(trace.P, trace.M.astype(np.float64) @ trace.N)
    assert trace.kernel == kernel and trace.is_detailed


def test_recorded_uncoalesced_kernel_walks_columns(record_sim):
    T = 32
    trace = record_sim(width=32, tile_width=T, kernel="uncoalesced")
    mt = memory_transactions(trace)
    # Rows of a 32 x 32 float matrix are 128 bytes apart: every lane of a
    # warp in its own segment.
    assert (mt.global_segments == 32).all() and mt.sectors_per_request == 32.0
    _check_global_against_oracle(trace, mt, swapped_m(T), swapped_n(T), 32)


@pytest.mark.parametrize("kernel,per_request,store_conflicts", [
    # Per phase and warp: T reads of Mds (0 conflicts) and T of Nds (31 each
    # at T = 32): (0 + 31) / 2 per request. Stores: Nds[tx][ty] is 32-way too
    # (31 conflicts per warp, 32 warps); the padded kernel has none.
    ("conflict", 15.5, 31 * 32),
    ("padded", 0.0, 0),
    ("tiled", 0.0, 0),
])  # fmt: skip
def test_recorded_bank_conflicts_per_request(record_sim, kernel, per_request, store_conflicts):
    trace = record_sim(width=32, tile_width=32, kernel=kernel)
    mt = memory_transactions(trace)
    assert mt.bank_conflicts_per_request == per_request
    c = mt.counters()
    assert c["shared_ld_requests"] == 32 * 32 * 2  # warps x k x (Mds, Nds)
    assert c["shared_st_bank_conflicts"] == store_conflicts
    assert mt.sectors_per_request == 4.0  # their loads are Fig. 5.9's


def test_replay_puts_uncoalesced_loads_in_their_tile_slots(record_sim):
    from vizmm.replay import Replay, Sub

    T = 2
    book = record_sim(width=4, tile_width=T, kernel="boundary")
    swap = record_sim(width=4, tile_width=T, kernel="uncoalesced")
    for block in ((0, 0), (1, 0)):
        rb, rs = Replay(book, block), Replay(swap, block)
        for ph in range(2):
            fb = rb.frame(rb.index_of(ph, Sub.LOAD_N))
            fs = rs.frame(rs.index_of(ph, Sub.LOAD_N))
            # Same tiles in Mds / Nds ...
            np.testing.assert_array_equal(fb.mds_src, fs.mds_src)
            np.testing.assert_array_equal(fb.nds_src, fs.nds_src)
            # ... filled by other threads: slot (r, c) by thread (c, r) = c*T + r.
            r, c = np.indices((T, T))
            np.testing.assert_array_equal(fs.nds_loader, c * T + r)
            np.testing.assert_array_equal(fb.nds_loader, r * T + c)
            # N element (ph*T + r, bx*T + c) is loaded by thread (c, r).
            bx = block[1]
            for rr in range(T):
                for cc in range(T):
                    assert fs.n_thread[ph * T + rr, bx * T + cc] == cc * T + rr


# ------------------------------------------ against Nsight Compute's counters
def _ncu_launches():
    import json
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "docs" / "ncu_transactions_h200.json"
    return json.loads(path.read_text())["launches"]


@pytest.mark.parametrize(
    "launch", _ncu_launches(), ids=lambda e: f"{e['kernel']}-{e['width']}-T{e['tile_width']}"
)
def test_counts_agree_with_nsight_compute_on_an_h200(launch):
    # Oracle: the GPU's own counters (Nsight Compute on the plain kernels, the
    # same launches; docs/ncu_transactions_h200.json). Every kernel here loads
    # the book's elements except the uncoalesced one (roles swapped).
    kernel, W, T = launch["kernel"], launch["width"], launch["tile_width"]
    fns = (swapped_m(T), swapped_n(T)) if kernel == "uncoalesced" else (book_m(T), book_n(T))
    trace = synthetic_trace(kernel, W, T, *fns)
    ncu = {k: int(v) for k, v in launch["ncu"].items()}
    source = memory_transactions(trace).counters()
    for key in ("global_ld_requests", "global_ld_sectors", "shared_st_requests",
                "shared_st_wavefronts", "shared_st_bank_conflicts"):  # fmt: skip
        assert source[key] == ncu[key], key
    # The k loop's loads as compiled (128-bit loads where the SASS has LDS.128).
    compiled = memory_transactions(trace, vector_loads=True).counters()
    for key in ("shared_ld_requests", "shared_ld_wavefronts", "shared_ld_bank_conflicts"):
        assert compiled[key] == ncu[key], key
    # The source's 32-bit reads: zero conflicts exactly where the GPU has none.
    assert (source["shared_ld_bank_conflicts"] == 0) == (ncu["shared_ld_bank_conflicts"] == 0)


def test_vector_wavefronts_of_hand_made_warps():
    # 32 lanes reading one 16-byte chunk: one wavefront per half-warp.
    wf, conf = vector_wavefronts(np.zeros(32, np.int64))
    assert (wf, conf) == (2, 0)
    # Lane i reads chunk i (words 4i..4i+3): 8 quarters' worth of banks, no conflict.
    wf, conf = vector_wavefronts(np.arange(32) * 4)
    assert (wf, conf) == (4, 0)
    # Lane i reads words 32i..: every lane in banks 0..3 -> 8 per quarter.
    wf, conf = vector_wavefronts(np.arange(32) * 32)
    assert (wf, conf) == (32, 28)


def test_the_api_is_vizmm_memory_transactions():
    import vizmm

    T = 4
    trace = synthetic_trace("tiled", 8, T, book_m(T), book_n(T))
    assert vizmm.memory_transactions is memory_transactions
    assert isinstance(vizmm.memory_transactions(trace), vizmm.MemoryTransactions)


# ------------------------------------------------------------------ views
def test_frames_carry_the_overlay_only_when_asked(record_sim):
    from vizmm.replay import Replay, Sub

    trace = record_sim(width=16, tile_width=8, kernel="conflict")
    plain = Replay(trace, (0, 1))
    assert plain.frame(plain.index_of(1, Sub.K, k=2)).transactions is None
    r = Replay(trace, (0, 1), transactions=True, warp=1)
    o = r.frame(r.index_of(1, Sub.K, k=2)).transactions
    # T = 8: warp 1 is threads (4, 0)..(7, 7). Nds[tx][2] is word 8tx + 2: banks
    # 2, 10, 18, 26, each asked for two words (tx and tx + 4) -> 2-way.
    assert o.warp == 1 and o.nds_way == 2 and o.mds_way == 1
    assert np.argwhere(o.nds_read).tolist() == [[2, c] for c in range(8)]
    assert o.nds_conflict[2].all() and not o.mds_conflict.any()
    assert o.warp_cost == [2, 2] and o.warp_ideal == [1, 1] and o.warp_unit == "-way"
    # At the loads: the warp's sectors on M (rows 4..7 of the tile: 8 floats = 32
    # bytes each, one sector per row), none on N yet.
    o = r.frame(r.index_of(1, Sub.LOAD_M)).transactions
    assert o.m_sectors == [(row, 8, 16) for row in range(4, 8)] and o.n_sectors == []
    # Following a thread picks its warp.
    f = Replay(trace, (0, 1), transactions=True, focus=(1, 3)).frame(5)
    assert f.transactions.warp == 0


def test_pillow_frame_paints_each_slot_with_its_bank(record_sim):
    from vizmm.render.palette import palette
    from vizmm.render.pillow import FrameRenderer
    from vizmm.replay import Replay, Sub

    T = 8
    trace = record_sim(width=16, tile_width=T, kernel="conflict")
    r = Replay(trace, (0, 0), transactions=True)
    renderer = FrameRenderer(trace, size=(1280, 720), transactions=True)
    img = renderer.render(r.frame(r.index_of(0, Sub.K, k=1)))
    colors = [palette("light").hex_to_rgb(c) for c in palette("light").thread_colors(32)]
    p = renderer.panels["Nds"]
    for rr in range(T):
        for cc in range(T):
            x0, _, x1, y1 = p.cell_box(rr, cc)
            # the band across the slot's foot: bank of physical word 8cc + rr
            band = max(3, round(p.cell * 0.22))
            px = img.getpixel((x0 + p.cell // 4, y1 - band + 1))
            assert px == colors[(8 * cc + rr) % 32], (rr, cc)
    off = FrameRenderer(trace, size=(1280, 720)).render(Replay(trace).frame(6))
    assert off.size == img.size


def test_dashboard_state_says_the_banks(record_sim):
    pytest.importorskip("panel")
    from vizmm_apps.dashboard import DashboardState

    st = DashboardState(source="padded").start()
    st.transactions = True
    st.go(8)  # phase 0, k = 3
    s = st.status()
    assert s["transactions"] is True and s["k"] == 3
    assert s["nds_bank"] == [[(17 * c + r) % 32 for c in range(16)] for r in range(16)]
    assert s["nds_way"] == 1
    st.transactions = False
    assert st.status()["transactions"] is False


def test_export_with_transactions_and_cli(tmp_path, record_sim, capsys):
    from vizmm.cli import main
    from vizmm.export import export

    trace = record_sim(width=8, tile_width=4, kernel="uncoalesced")
    path = trace.save(tmp_path / "u.vizmm")
    out = export(trace, tmp_path / "u.gif", transactions=True, size=(640, 360), progress=False)
    assert os.path.getsize(out) > 0
    assert main(["transactions", str(path), "--block", "0,1", "--phase", "1", "--k", "2"]) == 0
    text = capsys.readouterr().out
    # T = 4: one warp of 16 threads, which loads M[4 + tx][4 + ty] of an 8 x 8 M:
    # 4 rows (32 bytes apart) of 4 floats -> 4 sectors, all in one 128-byte
    # segment; the 64 bytes would fit in 2 sectors.
    assert "warp  0 (threads 0-15): M 4 sectors 1 segments (ideal 2)" in text
    assert "Mds 1-way, Nds 1-way" in text
    assert main(["transactions", str(path), "--block", "9,9"]) == 2


def test_side_by_side_pairs_show_the_contrast():
    pytest.importorskip("panel")
    from vizmm.replay import Sub
    from vizmm_apps.side_by_side import SideBySideState

    st = SideBySideState(pair="bank-conflict")
    st.load()
    both = st.lockstep
    i = next(
        n for n in range(len(both)) if both.frames(n)[0].step.sub == Sub.K
    )  # the first k of phase 0
    left, right = both.frames(i)
    assert left.step.k == right.step.k == 0
    # Warp 0 reads Nds[k][tx] (16 banks) on the left, Nds[tx][k] (8-way) on the right.
    assert left.transactions.nds_way == 1 and right.transactions.nds_way == 8
    st = SideBySideState(pair="coalescing")
    st.load()
    left, right = st.lockstep.frames(1)
    assert left.step.sub == right.step.sub == Sub.LOAD_M
    assert len(left.transactions.m_sectors) == 4 and len(right.transactions.m_sectors) == 16
