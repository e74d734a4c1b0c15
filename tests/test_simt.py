"""vizmm's own simulator (vizmm.record.simt): lanes, masks, barriers, schedules, the same log.

Three oracles: Numba's CUDA simulator (the same rewritten kernel run one
Python thread per CUDA thread: the logs must be equal field for field but the
barrier tickets, which are timing); NumPy (P); and hand derivations of what a
racing read finds under each stated schedule.
"""

import importlib.util
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import vizmm
from vizmm.record import instrument as I
from vizmm.trace import access_log as D
from vizmm_kernels import KERNEL_NAMES

ROOT = Path(__file__).resolve().parents[1]
LABELLED = ROOT / "benchmarks" / "labelled"
numba_sim = pytest.mark.skipif(
    importlib.util.find_spec("numba") is None or importlib.util.find_spec("numba.cuda") is None,
    reason="Numba's CUDA simulator (numba-cuda) is not installed: nothing to compare with",
)
#: Trace fields both simulators must give the same.
FIELDS = (
    "P", "loads", "pvalue", "p_write", "m_reads", "n_reads", "zero_fills", "log_counts",
    "log_values", "shared_reads", "read_values", "block_info",
)  # fmt: skip


def _same_log(a, b):
    """Assert two traces (or raw logs) carry the same log, the barrier tickets apart."""
    ea, eb = np.array(a.log_events), np.array(b.log_events)
    assert ea.shape == eb.shape
    ea[..., D.TICK] = 0
    eb[..., D.TICK] = 0
    np.testing.assert_array_equal(ea, eb)
    for f in FIELDS:
        if getattr(a, f, None) is not None:
            np.testing.assert_array_equal(getattr(a, f), getattr(b, f), err_msg=f)


# ------------------------------------------------------- the same log as Numba's
BOOK_CASES = [
    (name, j, k, l, t, drop, reads)
    for name in KERNEL_NAMES
    for (j, k, l, t) in [(8, 8, 8, 4), (10, 7, 11, 3) if name == "general" else (7, 7, 7, 3)]
    for drop in ((), (1,), (2,))
    for reads in (False, True)
    if not (drop or reads) or name in ("tiled", "boundary")
]


@numba_sim
@pytest.mark.parametrize("name, j, k, l, t, drop, reads", BOOK_CASES)
def test_every_book_kernel_logs_as_in_numbas_simulator(name, j, k, l, t, drop, reads):
    kw = dict(tile_width=t, kernel=name, reads=reads, drop_barrier=drop or None, quiet=True)
    own = vizmm.record(j, k, l, backend="simulator", **kw)
    theirs = vizmm.record(j, k, l, backend="numba-sim", **kw)
    assert own.meta["target"]["name"] == "vizmm-simulator"
    assert theirs.meta["target"]["name"] == "numba-cuda-simulator"
    _same_log(own, theirs)
    if not drop and (j % t == 0 or name in ("naive", "boundary", "general")):
        # and P is NumPy's product (the seeded inputs are small integers); Fig. 5.9 and its
        # variants assume Width a multiple of TILE_WIDTH (Section 5.5)
        np.testing.assert_array_equal(own.P, own.M.astype(np.float64) @ own.N)


def _labels():
    return json.loads((LABELLED / "labels.json").read_text())["kernels"]


def _raw(spec, j, k, l, t, engine):
    """A labelled kernel recorded as vizmm.check records it (provenance, every shared load)."""
    inst = I.instrument(I.load_kernel(spec), terms=True, first_arrays=3, engine=engine)
    M, N = vizmm.trace.seeded_inputs(j, k, l, 0)
    P = np.full((j, l), np.nan, np.float32)
    own = inst.params
    scalars = (k,) if len(own) == 4 else (j, k, l)
    args = dict(zip(own, (M, N, P, *scalars), strict=True))
    gx, gy = -(-l // t), -(-j // t)
    blocks = [(by, bx) for by in range(gy) for bx in range(gx)]
    return I.run(inst, args, (gx, gy), (t, t), blocks, turns=True)


@numba_sim
@pytest.mark.parametrize("label", _labels(), ids=lambda d: d["id"])
def test_every_labelled_kernel_logs_as_in_numbas_simulator(label):
    L = label["launch"]
    j = k = l = L.get("width", 0)
    if "j" in L:
        j, k, l = L["j"], L["k"], L["l"]
    spec = f"{LABELLED / label['file']}:{label['kernel']}"
    own = _raw(spec, j, k, l, L["tile_width"], "simt")
    theirs = _raw(spec, j, k, l, L["tile_width"], "process")
    for f in ("counts", "events", "values", "zero_fills", "block_info"):
        a, b = getattr(own, f), getattr(theirs, f)
        if f == "events":
            a, b = a.copy(), b.copy()
            a[..., D.TICK] = b[..., D.TICK] = 0
        np.testing.assert_array_equal(a, b, err_msg=f)
    for name in own.reads:
        np.testing.assert_array_equal(own.reads[name], theirs.reads[name])
    for name in own.outputs:
        np.testing.assert_array_equal(own.outputs[name], theirs.outputs[name])


# ------------------------------------------------- what a racing read finds
#: Each thread writes its slot and, with no barrier, reads its right-hand neighbour's.
NEIGHBOUR = """
from numba import cuda, float32

@cuda.jit
def neighbour(M, N, P, Width):
    S = cuda.shared.array(64, float32)
    tx = cuda.threadIdx.x
    S[tx] = M[tx]
    P[tx] = S[(tx + 1) % Width]
"""


def _neighbour(n, schedule):
    inst = I.instrument(NEIGHBOUR, engine="simt")
    M = np.arange(1, n + 1, dtype=np.float32)
    args = dict(M=M, N=np.zeros(1, np.float32), P=np.full(n, -1, np.float32), Width=n)
    raw = I.run(inst, args, (1, 1), (n, 1), [(0, 0)], schedule=schedule)
    return raw.outputs["P"]


def test_threads_schedule_each_thread_runs_alone_to_its_next_barrier():
    # Thread tx writes S[tx] = tx + 1, then reads S[tx + 1]: threads 0..n-2 run before
    # their neighbour has written (shared memory starts at zero); the last wraps round to
    # S[0], which thread 0 wrote in its turn.
    got = _neighbour(4, "threads")
    np.testing.assert_array_equal(got, [0, 0, 0, 1])


def test_warps_schedule_a_warps_lanes_run_in_lockstep_and_warps_in_turn():
    # Lockstep: every lane of the warp writes before any reads: each finds its neighbour's.
    np.testing.assert_array_equal(_neighbour(4, "warps"), [2, 3, 4, 1])
    # Two warps: lane 31 reads S[32], which warp 1 has not written yet (0); warp 1's
    # lanes find their neighbours', and lane 63 wraps round to S[0] = 1 (warp 0's).
    got = _neighbour(64, "warps")
    want = np.arange(2, 66, dtype=np.float32)
    want[31], want[63] = 0, 1
    np.testing.assert_array_equal(got, want)


def test_a_race_free_block_runs_in_lockstep_and_a_racing_one_in_the_schedule(monkeypatch):
    from vizmm.record import simt

    inst = I.instrument(NEIGHBOUR, engine="simt")
    seen = []
    real = simt.Launch._run_block

    def counted(self, by, bx):
        real(self, by, bx)
        seen.append((self.lockstep_blocks, self.schedule_blocks))

    M = np.arange(1, 5, dtype=np.float32)
    args = dict(M=M, N=np.zeros(1, np.float32), P=np.zeros(4, np.float32), Width=4)
    monkeypatch.setattr(simt.Launch, "_run_block", counted)
    I.run(inst, args, (1, 1), (4, 1), [(0, 0)])
    vizmm.record(width=8, tile_width=4, backend="simulator", quiet=True)
    assert seen[0] == (0, 1)  # the neighbour read: run again, thread by thread
    assert seen[-1] == (4, 0)  # Fig. 5.13, four blocks: lockstep throughout


# ------------------------------------------------------------- control flow
FLOW = """
from numba import cuda, float32

@cuda.jit
def flow(M, N, P, Width):
    tx = cuda.threadIdx.x
    acc = 0.0
    k = 0
    while k < tx:          # a trip count per thread
        if k == 5:
            break
        k += 1
        if k % 2 == 0:
            continue
        acc += M[k]
    for i in range(tx, Width, 3):   # a start per thread
        acc += N[i]
    if tx < Width and M[tx] > 2.0:  # the load only where tx < Width
        acc += 100.0
    if tx == Width - 1:
        P[tx] = -1.0
        return
    P[tx] = acc
"""


def test_divergent_loops_breaks_continues_and_returns_follow_each_thread():
    n = 8
    M = np.arange(n, dtype=np.float32)
    N = np.arange(10, 10 + n, dtype=np.float32)
    inst = I.instrument(FLOW, engine="simt")
    raw = I.run(inst, dict(M=M, N=N, P=np.zeros(n, np.float32), Width=n), (1, 1), (n, 1), [(0, 0)])
    want = []
    for tx in range(n):  # the kernel by hand, one thread at a time
        acc, k = 0.0, 0
        while k < tx:
            if k == 5:
                break
            k += 1
            if k % 2 == 0:
                continue
            acc += M[k]
        acc += sum(N[i] for i in range(tx, n, 3))
        if M[tx] > 2:
            acc += 100
        want.append(-1.0 if tx == n - 1 else acc)
    np.testing.assert_array_equal(raw.outputs["P"], np.float32(want))
    # every thread loads M[tx] once in the `if` (tx < Width always) plus its loop's loads
    loads = raw.events[0, :, :, D.OP] == D.LOAD
    m_loads = loads & (raw.events[0, :, :, D.ARR] == 0)
    for tx in range(n):
        odd = [k for k in range(1, min(tx, 5) + 1) if k % 2 == 1]
        assert m_loads[tx].sum() == len(odd) + 1, tx


SHORT = """
from numba import cuda, float32

@cuda.jit
def short(M, N, P, Width):
    tx = cuda.threadIdx.x
    v = 0.0
    if tx % 2 == 0 and M[tx] > 0.0:
        v = 1.0
    w = N[tx] if tx < 2 else 0.0
    P[tx] = v + w
"""


def test_and_and_conditional_expressions_load_only_for_the_lanes_that_evaluate_them():
    n = 4
    inst = I.instrument(SHORT, engine="simt")
    M = np.array([1, 1, 0, 1], np.float32)
    N = np.array([5, 6, 7, 8], np.float32)
    raw = I.run(inst, dict(M=M, N=N, P=np.zeros(n, np.float32), Width=n), (1, 1), (n, 1), [(0, 0)])
    np.testing.assert_array_equal(raw.outputs["P"], [6, 6, 0, 0])
    loads = raw.events[0, :, :, D.OP] == D.LOAD
    arr = raw.events[0, :, :, D.ARR]
    assert (loads & (arr == 0)).sum(axis=1).tolist() == [1, 0, 1, 0]  # M: even threads
    assert (loads & (arr == 1)).sum(axis=1).tolist() == [1, 1, 0, 0]  # N: tx < 2


LOCAL_ATOMIC = """
from numba import cuda, float32, int32

@cuda.jit
def local_atomic(M, N, P, Width):
    tx = cuda.threadIdx.x
    a = cuda.local.array(3, float32)
    for i in range(3):
        a[i] = M[tx] * (i + 1)
    cuda.atomic.add(P, 0, a[0] + a[1] + a[2])
    acc = float32(0)
    acc += float32(0.1)
    P[tx + 1] = acc
"""


def test_local_arrays_are_per_thread_atomics_add_up_and_float32_stays_float32():
    n = 4
    inst = I.instrument(LOCAL_ATOMIC, engine="simt")
    M = np.array([1, 2, 3, 4], np.float32)
    P = np.zeros(n + 1, np.float32)
    raw = I.run(inst, dict(M=M, N=np.zeros(1, np.float32), P=P, Width=n), (1, 1), (n, 1),
                [(0, 0)])  # fmt: skip
    assert raw.outputs["P"][0] == 6 * M.sum()  # each thread adds M[tx] * (1 + 2 + 3)
    # float32(0) + float32(0.1): float32 arithmetic, as on a GPU (0.1 is not 0.1 in float32)
    assert (raw.outputs["P"][1:] == np.float32(0.1)).all()


# ------------------------------------------------------ a barrier some skip
SKIPPED = """
from numba import cuda, float32

@cuda.jit
def skipped(M, N, P, Width):
    S = cuda.shared.array(4, float32)
    tx = cuda.threadIdx.x
    S[tx] = M[tx]
    if tx == 0:
        cuda.syncthreads()
    P[tx] = S[(tx + 1) % 4]
"""


def test_a_barrier_some_threads_skip_opens_when_the_rest_have_ended_never_hangs():
    inst = I.instrument(SKIPPED, engine="simt")
    M = np.array([1, 2, 3, 4], np.float32)
    raw = I.run(inst, dict(M=M, N=M, P=np.zeros(4, np.float32), Width=4), (1, 1), (4, 1),
                [(0, 0)])  # fmt: skip
    # thread 0 waits at the barrier; threads 1..3 run in turn past the `if`, read their
    # neighbour (thread 1 finds S[2] not yet written: 0) and end; then thread 0 goes on.
    np.testing.assert_array_equal(raw.outputs["P"], [2, 0, 0, 1])
    assert len(raw.notes) == 1 and "1 of 4 threads arrived (3 had ended)" in raw.notes[0]


# ------------------------------------------------------------ without numba
@pytest.mark.slow  # a fresh Python
def test_recording_check_and_the_book_kernels_need_no_numba(tmp_path):
    # A process where numba cannot be imported at all: vizmm's simulator records the
    # book's kernels and checks a student's file.
    code = textwrap.dedent(
        """
        import sys
        for name in ("numba", "numba.cuda", "numba.core", "numba_cuda", "numba_cuda_mlir"):
            sys.modules[name] = None  # as if not installed: importing it fails, no spec
        import os
        os.environ.pop("NUMBA_ENABLE_CUDASIM", None)
        os.environ.pop("VIZMM_KERNELS_TARGET", None)
        import vizmm
        t = vizmm.record(width=8, tile_width=4, kernel="boundary", backend="auto", quiet=True)
        assert (t.P == t.M.astype("float64") @ t.N).all()
        r = vizmm.check(sys.argv[1], width=4, tile_width=2)
        print(t.meta["target"]["name"], r.ok, "race" in {f.kind for f in r.findings},
              any(sys.modules.get(m) is not None for m in sys.modules if m.startswith("numba")))
        """
    )
    spec = f"{LABELLED / 'kernels' / 'r01_fig59_no_first_barrier.py'}:matrixMulKernel"
    proc = subprocess.run(
        [sys.executable, "-c", code, spec],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"},
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split() == ["vizmm-simulator", "False", "True", "False"]


DEVICE = """
from numba import cuda

@cuda.jit(device=True)
def f(x):
    a = x
    for i in range(3):
        a += i
        if a > 5:
            return a
    return a

@cuda.jit
def k(M, N, P, Width):
    tx = cuda.threadIdx.x
    P[tx] = f(M[tx])
"""


def test_a_device_function_kept_apart_returns_per_lane():
    # f returns inside its loop, so the front end keeps it as a function: vizmm's
    # simulator runs it lane-wise (x + 0 + 1 + 2, stopping once over 5)
    inst = I.instrument(DEVICE, engine="simt")
    M = np.array([0, 2, 4, 9], np.float32)
    raw = I.run(inst, dict(M=M, N=M, P=np.zeros(4, np.float32), Width=4), (1, 1), (4, 1), [(0, 0)])
    want = []
    for x in M:
        a = x
        for i in range(3):
            a += i
            if a > 5:
                break
        want.append(a)
    np.testing.assert_array_equal(raw.outputs["P"], want)
