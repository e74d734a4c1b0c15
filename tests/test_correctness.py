"""The kernels compute M @ N exactly, and the records obey the rules of the launch.

Inputs are small integers, so float32 sums are exact and P must equal NumPy's
product bit for bit. The record invariants are checked against oracles
derived from the book's index expressions and from counting, not against
the code's output.
"""

import numpy as np
import pytest

from vizmm import Access, PWrite

# (kernel, j, k, l, TILE_WIDTH). Square kernels take j = k = l; Fig. 5.9
# ('tiled') is only correct for multiples of TILE_WIDTH, Fig. 5.13
# ('boundary') and 'general' for any size; 'naive' (Fig. 3.11) for any size.
CASES = [
    ("naive", 1, 1, 1, 1),
    ("naive", 3, 3, 3, 2),
    ("naive", 5, 5, 5, 4),
    ("naive", 7, 7, 7, 3),
    ("tiled", 1, 1, 1, 1),
    ("tiled", 3, 3, 3, 1),
    ("tiled", 4, 4, 4, 2),
    ("tiled", 6, 6, 6, 3),
    ("tiled", 8, 8, 8, 4),
    ("tiled", 12, 12, 12, 4),
    ("boundary", 1, 1, 1, 2),
    ("boundary", 3, 3, 3, 2),
    ("boundary", 5, 5, 5, 3),
    ("boundary", 5, 5, 5, 4),
    ("boundary", 7, 7, 7, 4),
    ("boundary", 9, 9, 9, 2),
    ("boundary", 4, 4, 4, 1),
    ("general", 1, 1, 1, 1),
    ("general", 1, 1, 1, 4),
    ("general", 5, 1, 7, 2),  # k = 1
    ("general", 12, 3, 2, 4),  # tall
    ("general", 2, 3, 12, 3),  # wide
    ("general", 7, 5, 3, 2),
    ("general", 4, 9, 6, 4),
    ("general", 3, 10, 1, 3),  # one column
    ("general", 1, 12, 1, 4),  # a dot product
    ("general", 10, 7, 11, 3),
    ("general", 6, 6, 6, 1),
    # A few wide tiles (up to the 1024-thread limit of a block).
    ("tiled", 32, 32, 32, 16),
    ("boundary", 24, 24, 24, 32),
    ("general", 20, 33, 18, 16),
    ("general", 30, 17, 29, 4),
]


def _ids(case):
    kernel, j, k, l, T = case
    return f"{kernel}-{j}x{k}x{l}-T{T}"


def _inputs(j, k, l, seed):
    rng = np.random.default_rng(1000 + seed)
    M = rng.integers(-9, 10, size=(j, k)).astype(np.float32)
    N = rng.integers(-9, 10, size=(k, l)).astype(np.float32)
    return M, N


@pytest.fixture(scope="module")
def traces():
    import vizmm

    out = {}
    for i, (kernel, j, k, l, T) in enumerate(CASES):
        M, N = _inputs(j, k, l, i)
        out[(kernel, j, k, l, T)] = vizmm.record(
            M=M, N=N, tile_width=T, kernel=kernel, backend="simulator", quiet=True
        )
    return out


def _ceil(a, b):
    return -(-a // b)


@pytest.mark.parametrize("case", CASES, ids=_ids)
def test_p_equals_numpy_product(traces, case):
    kernel, j, k, l, T = case
    trace = traces[case]
    M, N = _inputs(j, k, l, CASES.index(case))
    np.testing.assert_array_equal(trace.M, M)
    np.testing.assert_array_equal(trace.N, N)
    assert trace.P.dtype == np.float32 and trace.P.shape == (j, l)
    np.testing.assert_array_equal(trace.P, M.astype(np.float64) @ N.astype(np.float64))
    assert trace.backend == "simulator" and trace.is_detailed
    assert trace.grid == (_ceil(j, T), _ceil(l, T))


@pytest.mark.parametrize("case", CASES, ids=_ids)
def test_global_read_counts(traces, case):
    # A tiled kernel loads M element (r, c) once per block of P's block row,
    # that is once per block column: gx = ceil(l/T) times; N element (r, c)
    # once per block row: gy = ceil(j/T) times. The naive kernel reads M's
    # row r once for each of the l elements of P's row r, N's column once for
    # each of the j elements of P's column.
    kernel, j, k, l, T = case
    trace = traces[case]
    gy, gx = _ceil(j, T), _ceil(l, T)
    if kernel == "naive":
        m_times, n_times = l, j
    else:
        m_times, n_times = gx, gy
    np.testing.assert_array_equal(trace.m_reads, np.full((j, k), m_times))
    np.testing.assert_array_equal(trace.n_reads, np.full((k, l), n_times))
    assert trace.global_loads() == j * k * m_times + k * l * n_times


@pytest.mark.parametrize("case", [c for c in CASES if c[0] != "naive"], ids=_ids)
def test_load_records(traces, case):
    kernel, j, k, l, T = case
    trace = traces[case]
    nph = _ceil(k, T)
    assert trace.n_phases == nph
    kinds = trace.loads[..., [0, 3]]
    assert (kinds != Access.NOT_RECORDED).all()
    for s, (by, bx) in enumerate(trace.detail_blocks.tolist()):
        for ph in range(nph):
            for ty in range(T):
                for tx in range(T):
                    mk, mr, mc, nk, nr, nc = trace.loads[s, ph, ty, tx].tolist()
                    # Fig. 5.13 lines 19-24: M[Row][ph*T+tx], N[ph*T+ty][Col], zero-filled
                    # where the index is outside the matrix.
                    row, col = by * T + ty, bx * T + tx
                    assert (mr, mc) == (row, ph * T + tx)
                    assert (nr, nc) == (ph * T + ty, col)
                    m_inside = row < j and ph * T + tx < k
                    n_inside = ph * T + ty < k and col < l
                    assert mk == (Access.LOADED if m_inside else Access.ZERO_FILL)
                    assert nk == (Access.LOADED if n_inside else Access.ZERO_FILL)
            # Per block and phase: how many Mds / Nds slots were zero-filled.
            m_out = sum(by * T + ty >= j or ph * T + tx >= k for ty in range(T) for tx in range(T))
            n_out = sum(ph * T + ty >= k or bx * T + tx >= l for ty in range(T) for tx in range(T))
            assert trace.zero_fills[by, bx, ph].tolist() == [m_out, n_out]


@pytest.mark.parametrize("case", CASES, ids=_ids)
def test_p_writes(traces, case):
    kernel, j, k, l, T = case
    trace = traces[case]
    for s, (by, bx) in enumerate(trace.detail_blocks.tolist()):
        for ty in range(T):
            for tx in range(T):
                valid = by * T + ty < j and bx * T + tx < l
                assert trace.p_write[s, ty, tx] == (PWrite.WRITTEN if valid else PWrite.SKIPPED)


@pytest.mark.parametrize("case", [c for c in CASES if c[0] != "naive"], ids=_ids)
def test_pvalue_after_each_phase(traces, case):
    # After phase ph a thread's Pvalue is its dot product over the first
    # (ph+1)*T terms of the zero-padded matrices; threads outside P hold 0.
    kernel, j, k, l, T = case
    trace = traces[case]
    gy, gx, nph = _ceil(j, T), _ceil(l, T), _ceil(k, T)
    Mp = np.zeros((gy * T, nph * T))
    Np = np.zeros((nph * T, gx * T))
    Mp[:j, :k] = trace.M
    Np[:k, :l] = trace.N
    for s, (by, bx) in enumerate(trace.detail_blocks.tolist()):
        rows = slice(by * T, by * T + T)
        cols = slice(bx * T, bx * T + T)
        for ph in range(nph):
            upto = (ph + 1) * T
            expected = Mp[rows, :upto] @ Np[:upto, cols]
            np.testing.assert_array_equal(trace.pvalue[s, ph], expected)


@pytest.mark.parametrize("case", [c for c in CASES if c[0] != "naive"], ids=_ids)
def test_barriers(traces, case):
    kernel, j, k, l, T = case
    trace = traces[case]
    nph = _ceil(k, T)
    ticks = trace.barrier_tick  # [slot, ph, barrier, when, ty, tx]
    for s in range(len(trace.detail_blocks)):
        # Every thread took one ticket at each of the 4 events of each phase,
        # from one counter per block: the tickets are 0 .. 4*nph*T*T - 1, once each.
        assert sorted(ticks[s].ravel().tolist()) == list(range(4 * nph * T * T))
        for ph in range(nph):
            for which in (0, 1):
                arrive, release = ticks[s, ph, which, 0], ticks[s, ph, which, 1]
                # No thread leaves __syncthreads before the last one has arrived.
                assert arrive.max() < release.min(), (s, ph, which)
        # Each thread passes its own events in program order.
        seq = ticks[s].reshape(nph * 4, T * T)
        assert (np.diff(seq, axis=0) > 0).all()
    # The simulator has no clock.
    assert (trace.barrier_clock == -1).all()


def test_window_records_only_the_window(record_sim):
    trace = record_sim(j=9, k=5, l=7, tile_width=2, kernel="general", window=[(4, 3), (0, 1)])
    assert trace.detail_blocks.tolist() == [[4, 3], [0, 1]]
    assert not trace.is_detailed
    assert trace.has_block((4, 3)) and not trace.has_block((0, 0))
    with pytest.raises(KeyError):
        trace.load_records((0, 0), 0)
    # The window's blocks compute their part of P exactly.
    expected = trace.M.astype(np.float64) @ trace.N
    np.testing.assert_array_equal(trace.P[8:9, 6:7], expected[8:9, 6:7])
    np.testing.assert_array_equal(trace.P[0:2, 2:4], expected[0:2, 2:4])
    # Block (4, 3) is the corner: only thread (0, 0) has a P element, P_{8,6}.
    s = trace.slot((4, 3))
    assert trace.p_write[s].tolist() == [
        [PWrite.WRITTEN, PWrite.SKIPPED],
        [PWrite.SKIPPED, PWrite.SKIPPED],
    ]
