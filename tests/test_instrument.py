"""The instrumenter (vizmm.record.instrument): any @cuda.jit kernel logs what it did.

Oracles: the traces recorded by the hand-instrumented kernels before the
instrumenter existed (``tests/fixtures/hand-instrumented``, copies of the
shipped presets) must come back equal, field by field, when the book's
plain kernels are recorded through the instrumenter; kernels written in
other styles (``instrument_kernels.py``) must log the loads their index
expressions name, derived here by hand.
"""

import ast
import pathlib

import instrument_kernels as IK
import numpy as np
import pytest

import vizmm
from vizmm.record import instrument as I
from vizmm.record import instrument_device as D
from vizmm.record.instrument_trace import launch as instrumented_launch
from vizmm.record.launcher import Job

FIXTURES = pathlib.Path(__file__).parent / "fixtures" / "hand-instrumented"
# Every field the replay reads. Barrier tickets are compared exactly where the
# simulator ran the block in turns (the same every run); elsewhere the order in
# which threads reached a barrier is the interpreter's timing, so only which
# arrivals were recorded is compared.
FIELDS = (
    "P",
    "loads",
    "pvalue",
    "p_write",
    "m_reads",
    "n_reads",
    "zero_fills",
    "shared_reads",
    "read_values",
    "barrier_tick",
)


def _job(trace):
    m = trace.meta
    blocks = [tuple(b) for b in trace.detail_blocks.tolist()]
    return Job(
        trace.launch,
        blocks,
        m["aggregated"],
        m.get("seed", 0),
        "simulator",
        m.get("inputs", "seeded"),
        tuple(m.get("drop_barrier", ())),
        bool(m.get("reads_recorded")),
    )


@pytest.mark.parametrize("path", sorted(FIXTURES.glob("*.vizmm")), ids=lambda p: p.stem)
def test_book_kernels_through_the_instrumenter_equal_the_hand_instrumented_traces(path):
    old = vizmm.load(path)
    new = instrumented_launch(_job(old), np.asarray(old.M), np.asarray(old.N))
    assert new.meta["recorder"] == "instrumenter"
    for name in FIELDS:
        a, b = np.asarray(getattr(old, name)), np.asarray(getattr(new, name))
        assert a.shape == b.shape, name
        if name == "barrier_tick" and old.meta.get("sim_schedule") != "turns":
            np.testing.assert_array_equal(a < 0, b < 0, err_msg=name)
            # each barrier's tickets are distinct within a block: an order exists
            nd = len(a)
            for s in range(nd):
                t = b[s][b[s] >= 0]
                assert len(np.unique(t)) == len(t)
        else:
            np.testing.assert_array_equal(a, b, err_msg=name)


def _events(log, s, tid):
    n = int(log.counts[s, tid])
    return log.events[s, tid, :n], log.values[s, tid, :n]


def _global_loads(inst, log, s, tid):
    ev, _ = _events(log, s, tid)
    names = [a.name for a in inst.arrays]
    sel = (ev[:, D.OP] == D.LOAD) & np.isin(
        ev[:, D.ARR], [inst.array_id(g) for g in inst.global_arrays]
    )
    return [(names[e[D.ARR]], int(e[D.ROW]), int(e[D.COL])) for e in ev[sel]]


def _inputs(n, seed=1):
    rng = np.random.default_rng(seed)
    M = rng.integers(0, 10, (n, n)).astype(np.float32)
    N = rng.integers(0, 10, (n, n)).astype(np.float32)
    return M, N


def test_2d_indexing_other_names_and_cuda_grid():
    n, T = 3, IK.T
    M, N = _inputs(n)
    inst = I.instrument(IK.tiled_2d)
    blocks = [(by, bx) for by in range(2) for bx in range(2)]
    C = np.full((n, n), np.nan, np.float32)
    log = I.run(inst, dict(A=M, B=N, C=C, n=n), (2, 2), (T, T), blocks)
    np.testing.assert_array_equal(log.outputs["C"], M @ N)
    for s, (by, bx) in enumerate(blocks):
        for i in range(T):
            for j in range(T):
                row, col = by * T + i, bx * T + j
                # by hand: A[row, t*T + j] when inside, B[t*T + i, col] when inside
                want = []
                for t in range(2):
                    if row < n and t * T + j < n:
                        want.append(("A", row, t * T + j))
                    if t * T + i < n and col < n:
                        want.append(("B", t * T + i, col))
                assert _global_loads(inst, log, s, i * T + j) == want
    # the zero-fill's store names the element its check guarded
    ev, _ = _events(
        log, 3, 1 * T + 1
    )  # block (1, 1), thread (1, 1): row 3 is outside A, t = 0: A[3, 0*T + 1]
    zf = ev[(ev[:, D.OP] == D.STORE) & (ev[:, D.TAG] == D.TAG_ZERO)]
    assert (inst.arrays[zf[0, D.SRC_ARR]].name, zf[0, D.SRC_ROW], zf[0, D.SRC_COL]) == ("A", 3, 1)


def test_coarsened_kernel_two_p_elements_per_thread():
    W, T = 4, IK.T
    M, N = _inputs(W)
    inst = I.instrument(IK.coarsened)
    blocks = [(by, bx) for by in range(2) for bx in range(1)]
    P = np.full(W * W, np.nan, np.float32)
    log = I.run(inst, dict(M=M, N=N, P=P, Width=W), (1, 2), (T, T), blocks)
    np.testing.assert_array_equal(log.outputs["P"].reshape(W, W), M @ N)
    for s, (by, bx) in enumerate(blocks):
        for ty in range(T):
            for tx in range(T):
                Row, Col = by * T + ty, bx * 2 * T + tx
                want = []
                for ph in range(W // T):
                    want += [
                        ("M", Row, ph * T + tx),
                        ("N", ph * T + ty, Col),
                        ("N", ph * T + ty, Col + T),
                    ]
                assert _global_loads(inst, log, s, ty * T + tx) == want
        # every product term traced to its global elements: Mds slot (ty, k) held M[Row][ph*T+k]
        ev, vals = _events(log, s, 0)
        mds = inst.array_id("Mds")
        reads = ev[(ev[:, D.OP] == D.LOAD) & (ev[:, D.ARR] == mds)]
        got = [divmod(int(e[D.SRC_IDX]), W) for e in reads]
        want = [(by * T, ph * T + k) for ph in range(2) for k in range(T) for _ in range(2)]
        assert got == want


def test_column_major_n_logs_the_code_row_and_col():
    W, T = 4, IK.T
    M, N = _inputs(W)
    inst = I.instrument(IK.column_major_n)
    blocks = [(0, 0), (1, 1)]
    P = np.full(W * W, np.nan, np.float32)
    Nt = np.ascontiguousarray(N.T)
    log = I.run(inst, dict(M=M, Nt=Nt, P=P, Width=W), (2, 2), (T, T), blocks)
    for s, (by, bx) in enumerate(blocks):
        for ty in range(T):
            for tx in range(T):
                Row, Col = by * T + ty, bx * T + tx
                # Nt[Col * Width + ph*T + ty]: the code's (row, col) is (Col, ph*T + ty)
                want = []
                for ph in range(W // T):
                    want += [("M", Row, ph * T + tx), ("Nt", Col, ph * T + ty)]
                assert _global_loads(inst, log, s, ty * T + tx) == want
    out = log.outputs["P"].reshape(W, W)
    np.testing.assert_array_equal(out[:2, :2], (M @ N)[:2, :2])
    np.testing.assert_array_equal(out[2:, 2:], (M @ N)[2:, 2:])


def test_out_of_bounds_read_is_logged_not_performed_and_the_thread_goes_on():
    W = 2
    M, N = _inputs(W)
    inst = I.instrument(IK.past_the_end)
    P = np.full(W * W, np.nan, np.float32)
    log = I.run(inst, dict(M=M, N=N, P=P, Width=W), (1, 1), (2, 2), [(0, 0)])
    # thread (ty=1, tx=c): M[1*2 + 2] = M[4] is past the 4 elements of M: logged, read as 0
    for tx in range(2):
        ev, _ = _events(log, 0, 1 * 2 + tx)
        m = ev[(ev[:, D.OP] == D.LOAD) & (ev[:, D.ARR] == inst.array_id("M"))][0]
        assert (m[D.FLAG], m[D.IDX], m[D.ROW], m[D.COL]) == (D.OUT_OF_BOUNDS, 4, 1, 2)
        assert log.outputs["P"][2 + tx] == N.ravel()[tx]  # the thread went on and stored P
    # thread (0, c) read M[2] = M[1][0], a wrong element (row 0, col 2 of a 2-wide M)
    ev, _ = _events(log, 0, 0)
    m = ev[(ev[:, D.OP] == D.LOAD) & (ev[:, D.ARR] == inst.array_id("M"))][0]
    assert (m[D.FLAG], m[D.IDX], m[D.ROW], m[D.COL]) == (D.OK, 2, 0, 2)
    assert log.reads["M"].tolist() == [0, 0, 2, 0]


def test_unbounded_loop_is_sized_by_a_count_launch():
    W = 3
    M, N = _inputs(W)
    inst = I.instrument(IK.while_loop)
    assert inst.bound is None
    P = np.full(W * W, np.nan, np.float32)
    log = I.run(inst, dict(M=M, N=N, P=P, Width=W), (1, 1), (3, 3), [(0, 0)])
    # thread (ty, tx) reads M[ty][0..tx]: tx + 1 loads, a P store and the end
    for ty in range(3):
        for tx in range(3):
            assert log.counts[0, ty * 3 + tx] == tx + 1 + 2
    np.testing.assert_array_equal(log.outputs["P"].reshape(3, 3), np.cumsum(M, axis=1))


def test_static_bound_of_the_book_kernel():
    import vizmm_kernels as K

    inst = I.instrument(K.get_kernel("tiled", 2))
    # per phase: 2 global loads, 2 shared stores, 2 barriers (arrival and release
    # each), 2 x TILE_WIDTH shared loads; then the P store and the end
    assert inst.bound({"Width": 4}, (2, 2, 1), (2, 2, 1)) == 2 * (2 + 2 + 4 + 4) + 2


def test_rewrite_is_cached_and_quick():
    import vizmm_kernels as K

    a = I.instrument(K.get_kernel("boundary", 4))
    assert I.instrument(K.get_kernel("boundary", 4)) is a
    assert a.seconds < 2.0
    assert "s_store2(Mds, ty, tx" in a.code  # readable: the kernel's own names


@pytest.mark.parametrize(
    "kernel, words",
    [
        (IK.not_a_kernel, "not a CUDA kernel"),
        (42, "not a CUDA kernel"),
        ("def k(M, N, P, Width)\n    P[0] = 1\n", "syntax error"),
        ("nofile.py:kern", "does not exist"),
        ("kernel.txt", "FILE.py:NAME"),
    ],
)
def test_bad_kernels_get_one_clear_message(kernel, words):
    with pytest.raises(I.InstrumentError, match=words):
        I.instrument(kernel)


def test_file_kernel_syntax_error_and_missing_name(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("def k(M, N, P, Width):\n    P[0] = M[0] +\n")
    with pytest.raises(I.InstrumentError, match=r"bad.py, line 2: syntax error"):
        I.instrument(f"{bad}:k")
    good = tmp_path / "good.py"
    good.write_text("from numba import cuda\n\n@cuda.jit\ndef k(M, N, P, Width):\n    P[0] = 1\n")
    with pytest.raises(I.InstrumentError, match="no kernel named 'other'"):
        I.instrument(f"{good}:other")


def test_launch_too_large_is_refused_before_allocating():
    import vizmm_kernels as K

    inst = I.instrument(K.get_kernel("tiled", 2))
    M, N = _inputs(4)
    args = dict(M=M, N=N, P=np.zeros(16, np.float32), Width=4)
    with pytest.raises(I.InstrumentError, match="1 to 1024 threads per block"):
        I.run(inst, args, (1, 1), (64, 64), [(0, 0)])
    with pytest.raises(I.InstrumentError, match=r"access log would take \d+ bytes"):
        I.run(inst, args, (2, 2), (2, 2), [(0, 0)], max_bytes=1000)


USER_FILE = """
from numba import cuda, float32

TILE = 2


@cuda.jit
def mykernel(A, B, C, Width):
    As = cuda.shared.array((TILE, TILE), float32)
    Bs = cuda.shared.array((TILE, TILE), float32)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    r = cuda.blockIdx.y * TILE + ty
    c = cuda.blockIdx.x * TILE + tx
    s = float32(0)
    for p in range(Width // TILE):
        As[ty, tx] = A[r * Width + p * TILE + tx]
        Bs[ty, tx] = B[(p * TILE + ty) * Width + c]
        cuda.syncthreads()
        for q in range(TILE):
            s += As[ty, q] * Bs[q, tx]
        cuda.syncthreads()
    C[r * Width + c] = s
"""


def test_record_a_function_kernel_gives_the_book_fields():
    trace = vizmm.record(width=4, tile_width=2, kernel=IK.tiled_2d, backend="simulator", quiet=True)
    M, N = np.asarray(trace.M), np.asarray(trace.N)
    np.testing.assert_array_equal(trace.P, M @ N)
    assert trace.meta["figure"] == "user kernel tiled_2d"
    # Fig. 5.8 by hand: block (0, 0), phase 1, thread (ty, tx) loads M[ty][2 + tx], N[2 + ty][tx]
    for (ty, tx), (m, n) in trace.tile_loads((0, 0), 1).items():
        assert m == (ty, 2 + tx) and n == (2 + ty, tx)


@pytest.mark.slow  # a worker process
def test_cli_records_a_kernel_file_in_a_worker(tmp_path):
    import subprocess
    import sys

    src = tmp_path / "mine.py"
    src.write_text(USER_FILE)
    out = tmp_path / "mine.vizmm"
    cmd = [sys.executable, "-m", "vizmm", "record", "--kernel", f"{src}:mykernel"]
    args = ["--width", "4", "-t", "2", "--backend", "simulator", "-q", "-o", str(out)]
    done = subprocess.run(cmd + args, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    trace = vizmm.load(out)
    np.testing.assert_array_equal(trace.P, np.asarray(trace.M) @ np.asarray(trace.N))
    for (ty, tx), (m, n) in trace.tile_loads((1, 0), 0).items():
        assert m == (2 + ty, tx) and n == (ty, tx)
    bad = cmd[:-1] + [f"{src}:other"] + args
    done = subprocess.run(bad, capture_output=True, text=True, timeout=300)
    assert done.returncode == 2
    assert "has no kernel named 'other'; kernels there: mykernel" in done.stderr


def test_the_access_log_is_kept_in_the_trace_file_and_old_files_load(tmp_path):
    trace = vizmm.record(
        width=4,
        tile_width=2,
        kernel="tiled",
        backend="simulator",
        quiet=True,
        reads=True,
        drop_barrier=None,
    )
    path = trace.save(tmp_path / "t.vizmm")
    back = vizmm.load(path)
    layout = back.meta["access_log"]
    assert [a["name"] for a in layout["arrays"]] == ["M", "N", "P", "Mds", "Nds"]
    np.testing.assert_array_equal(back.log_events, trace.log_events)
    np.testing.assert_array_equal(back.log_counts, trace.log_counts)
    # Every product term of Fig. 5.9 traced to its global elements, by hand:
    # thread (ty, tx) of block (by, bx) reads, in phase ph at k, Mds[ty][k] holding
    # M[by*2 + ty][ph*2 + k] and Nds[k][tx] holding N[ph*2 + k][bx*2 + tx].
    ev = back.log_events
    for s, (by, bx) in enumerate(back.detail_blocks.tolist()):
        for tid in range(4):
            ty, tx = divmod(tid, 2)
            e = ev[s, tid, : back.log_counts[s, tid]]
            reads = e[(e[:, D.OP] == D.LOAD) & (e[:, D.ARR] >= 3)]
            got = [(int(r[D.ARR]), divmod(int(r[D.SRC_IDX]), 4)) for r in reads]
            want = []
            for ph in range(2):
                for k in range(2):
                    want += [(3, (by * 2 + ty, ph * 2 + k)), (4, (ph * 2 + k, bx * 2 + tx))]
            assert got == want
    old = vizmm.load(FIXTURES / "fig5-8.vizmm")
    assert old.log_events.size == 0 and "access_log" not in old.meta


def test_zero_fills_are_counted_for_every_block_not_only_the_logged_ones():
    """Fig. 5.13 at Width 5, TILE_WIDTH 2 (a 3 x 3 grid), one block logged: every
    block's zero-fills per phase, as derived from the boundary check by hand."""
    W, T = 5, 2
    rng = np.random.default_rng(3)
    M = rng.integers(0, 10, (W, W)).astype(np.float32)
    N = rng.integers(0, 10, (W, W)).astype(np.float32)
    launch = vizmm.trace.LaunchShape("boundary", W, W, W, T)
    job = Job(launch, [(0, 0)], False, 0, "simulator", "given")
    trace = instrumented_launch(job, M, N)
    want = np.zeros((3, 3, 3, 2), np.int32)
    for by, bx, ph, ty, tx in np.ndindex(3, 3, 3, T, T):
        Row, Col = by * T + ty, bx * T + tx
        want[by, bx, ph, 0] += not (Row < W and ph * T + tx < W)
        want[by, bx, ph, 1] += not (ph * T + ty < W and Col < W)
    np.testing.assert_array_equal(trace.zero_fills, want)
    assert trace.zero_fills[1:, 1:].sum() > 0  # blocks not logged count too


def test_decode_reads_the_field_major_log_a_gpu_leaves():
    """Two threads' events laid out as a GPU writes them (derived by hand from the
    layout in instrument_device): field-major, the first word packed, the fields
    an access's kind fixes left unwritten (here garbage), read back as rows of FIELDS."""
    tt, cap, nf = 2, 3, D.NF
    ev = np.full(cap * nf * tt, 77, np.int32)  # what the card left where nothing was written
    vals = np.full(cap * 2 * tt, 9.5)

    def put(t, n, f, x):
        ev[(n * nf + f) * tt + t] = x

    def val(t, n, k, x):
        vals[(n * 2 + k) * tt + t] = x

    # thread 0, event 0: M[5] (row 1, col 1) read on line 7, epoch 0: 3.0, Pvalue 0.0
    put(0, 0, 0, 1 + 0 * 8 + (0 + 1) * 32 + 7 * 8192)
    for f, x in ((3, 5), (4, 1), (5, 1), (11, 0)):
        put(0, 0, f, x)
    val(0, 0, 0, 3.0)
    val(0, 0, 1, 0.0)
    # thread 0, event 1: arrival at the barrier on line 9, ticket 4, Pvalue 1.5
    put(0, 1, 0, 3 + 9 * 8192)
    put(0, 1, 11, 0)
    put(0, 1, 12, 4)
    val(0, 1, 1, 1.5)
    # thread 1, event 0: a skipped store (flag 2) into Mds (id 1), slot 2 (row 0, col 2),
    # line 8, tag -1 (a zero-fill) guarding M[9] (row 1, col 2), epoch 1; Pvalue 2.0
    put(1, 0, 0, 2 + 2 * 8 + (1 + 1) * 32 + 8 * 8192)
    for f, x in ((3, 2), (4, 0), (5, 2), (6, -1), (7, 0), (8, 9), (9, 1), (10, 2), (11, 1)):
        put(1, 0, f, x)
    val(1, 0, 0, 0.0)
    val(1, 0, 1, 2.0)
    put(0, 2, 0, 255 * 32 + 1)  # past the count: a word naming no array the kernel has
    arrays = [I.ArrayInfo("M", "global", 1), I.ArrayInfo("Mds", "shared", 2)]
    events, values = I.decode(ev, vals, np.array([2, 1], np.int32), cap, arrays)
    assert events.shape == (2, 3, nf) and values.shape == (2, 3, 2)
    # FIELDS: op flag arr idx row col tag src_arr src_idx src_row src_col epoch tick line
    assert events[0, 0].tolist() == [1, 0, 0, 5, 1, 1, -4, -1, -1, -1, -1, 0, -1, 7]
    assert events[0, 1].tolist() == [3, 0, -1, -1, -1, -1, -4, -1, -1, -1, -1, 0, 4, 9]
    assert events[1, 0].tolist() == [2, 2, 1, 2, 0, 2, -1, 0, 9, 1, 2, 1, -1, 8]
    assert values[0, :2].tolist() == [[3.0, 0.0], [0.0, 1.5]]
    assert values[1, 0].tolist() == [0.0, 2.0]
    # past each thread's count: zeros, whatever the card left there
    assert not events[0, 2].any() and not events[1, 1:].any()
    assert not values[0, 2].any() and not values[1, 1:].any()


def test_too_many_arrays_or_lines_for_the_log_are_refused():
    many = "\n".join(f"    S{i} = cuda.shared.array(1, float32)" for i in range(D.MAX_ARRAYS + 1))
    src = f"def k(M, N, P, Width):\n{many}\n    P[0] = 1\n"
    with pytest.raises(I.InstrumentError, match=f"more than {D.MAX_ARRAYS} arrays"):
        I.instrument(src)
    long = "def k(M, N, P, Width):\n" + "\n" * D.MAX_LINE + "    P[0] = 1\n"
    with pytest.raises(I.InstrumentError, match=f"lines up to {D.MAX_LINE}"):
        I.instrument(long)


def test_a_barrier_before_the_extern_array_takes_the_global_clock():
    # numba-cuda-mlir lays an extern __shared__ array over static ones: a kernel with one
    # takes its barrier tickets from global memory, even where a barrier comes first
    src = (
        "def k(M, N, P, Width):\n"
        "    cuda.syncthreads()\n"
        "    S = cuda.shared.array(0, float32)\n"
        "    S[0] = M[0]\n"
        "    cuda.syncthreads()\n"
        "    P[0] = S[0]\n"
    )
    code = _gpu_code(src, dynamic_shared=16)
    assert "cuda.atomic.add(_ticks, _slot" in code and "(_tick, 0" not in code
    plain = src.replace("cuda.shared.array(0, float32)", "cuda.shared.array(4, float32)")
    code = _gpu_code(plain)
    assert "_tick = cuda.shared.array(1, int32)" in code and "_ticks, _slot" not in code


def _gpu_code(src, dynamic_shared=0):
    """The rewrite a GPU compiles (this process may be bound to the simulator)."""
    tree, _, ns, _ = I.kernel_source(src)
    ns = {"float32": np.float32, "int32": np.int32, **ns}
    rw = I._Rewriter(I._Remap().visit(tree), ns, dynamic_shared, True, simulated=False)
    return ast.unparse(rw.rewrite())


def test_the_simulator_passes_a_barrier_in_one_call_with_no_first_barrier():
    # a simulated thread is its warp's only lane: the barrier, its two tickets (from the
    # detail block's counter, made on the host) and its two events are one call, and the
    # kernel needs no barrier at its start to set a clock
    src = (
        "def k(M, N, P, Width):\n"
        "    S = cuda.shared.array(4, float32)\n"
        "    S[0] = M[0]\n"
        "    cuda.syncthreads()\n"
        "    P[0] = S[0]\n"
    )
    tree, _, ns, _ = I.kernel_source(src)
    ns = {"float32": np.float32, "int32": np.int32, **ns}
    rw = I._Rewriter(I._Remap().visit(tree), ns, 0, False, simulated=True)
    code = ast.unparse(rw.rewrite())
    assert "_ep = sync(_ticks, _slot, 4, _ev, _vals, _cnt, _cap, _t, _ep, " in code
    assert "cuda.syncthreads()" not in code and "_tick = " not in code
    assert "warp_mask" not in code and "atomic" not in code
    gpu = _gpu_code(src)  # the GPU's: its clock set behind a barrier, then the kernel's own
    assert gpu.count("cuda.syncthreads()") == 2 and "warp_mask" in gpu
