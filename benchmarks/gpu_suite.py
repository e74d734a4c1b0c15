"""Everything vizmm claims about a real GPU, checked and timed in one run.

Run on a machine with an NVIDIA GPU (``NUMBA_ENABLE_CUDASIM`` unset or 0):

    python benchmarks/gpu_suite.py OUTDIR [--quick]

1. correctness: P of every kernel against CuPy's (cuBLAS) product, exact on
   small-integer inputs, for large and odd shapes;
2. the book's claim: with tiling each M and N element is read
   Width / TILE_WIDTH times (aggregated recording at 4096);
3. GPU and simulator load records byte for byte: whole small launches, and
   the detailed window of a large GPU run re-simulated;
4. timings (CUDA events, median), for each GPU target side by side
   (numba-cuda-mlir and numba-cuda, each in its own process: a process
   compiles for one target): the plain tiled kernel against its recording
   through the instrumenter, as ``vizmm.record`` runs it: aggregated (the
   lean variant over the whole grid, then the full variant over one detail
   block; Width 1024 to 4096) and full (every block logged, where the log
   fits on the card);
5. recordings of the traces shipped with vizmm (saved to OUTDIR);
6. the instrumenter (``vizmm.record.instrument``): step ``instrumented``
   records kernels of four styles (the book's Fig. 5.9 and 5.13, the
   general kernel, Fig. 5.14's dynamic shared memory, and the test kernels
   of ``tests/instrument_kernels.py``: 2-D arrays with ``cuda.grid``, a
   coarsened kernel) on the GPU and in the simulator and compares their
   access logs byte for byte (barrier tickets, which are timing, apart),
   aggregated recordings too (a window: GPU zero-fills of every block).

Only the instrumenter's parts: ``python benchmarks/gpu_suite.py OUTDIR instrumented timing``;
``VIZMM_GPU_WIDTHS=1024,2048`` in the environment times only those widths.

Prints a short table last and writes ``gpu_suite.json`` to OUTDIR. The
targets compared are those that can compile here (numba-cuda needs NumPy
< 2.5); ``--targets numba-cuda-mlir,numba-cuda`` names them.
"""

from __future__ import annotations

import itertools
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np

import vizmm
from vizmm.record import resolve_backend, targets
from vizmm.trace import ceil_div

RESULTS: dict = {}
LOAD_FIELDS = ("loads", "p_write", "m_reads", "n_reads", "detail_blocks", "pvalue", "zero_fills")


def log(*a):
    print(*a, flush=True)


def cupy_product(M, N):
    import cupy as cp

    return cp.asnumpy(cp.asarray(M) @ cp.asarray(N))


def check_correctness(quick):
    cases = [
        ("boundary", 1024, 1024, 1024, 16),
        ("tiled", 1024, 1024, 1024, 32),
        ("general", 1000, 777, 513, 16),
        ("general", 1, 1, 1, 1),
        ("general", 33, 17, 65, 8),
        ("boundary", 1000, 1000, 1000, 32),
        ("naive", 512, 512, 512, 16),
    ]
    out = []
    for kernel, j, k, l, T in cases:
        gy, gx = ceil_div(j, T), ceil_div(l, T)
        window = [(0, 0), (gy - 1, gx - 1)] if gy * gx > 4 else None
        t = vizmm.record(
            j,
            k,
            l,
            tile_width=T,
            kernel=kernel,
            backend="gpu",
            window=window,
            seed=j + k + l,
            quiet=True,
        )
        ref = cupy_product(t.M, t.N)
        ok = bool(np.array_equal(t.P, ref))
        out.append(
            {
                "kernel": kernel,
                "shape": [j, k, l],
                "T": T,
                "P_equals_cupy": ok,
                "device": t.meta.get("device_name"),
            }
        )
        log(f"correctness {kernel:8s} {j}x{k}x{l} T={T}: P == CuPy {ok}")
    RESULTS["correctness"] = out


def check_book_claim():
    out = []
    for W, T in ((4096, 16), (4096, 32)):
        t = vizmm.record(
            width=W, tile_width=T, kernel="tiled", backend="gpu", window=[(0, 0)], quiet=True
        )
        m_ok = bool((t.m_reads == W // T).all())
        n_ok = bool((t.n_reads == W // T).all())
        ref_ok = bool(np.array_equal(t.P, cupy_product(t.M, t.N)))
        out.append(
            {
                "W": W,
                "T": T,
                "m_reads_all_W_over_T": m_ok,
                "n_reads_all_W_over_T": n_ok,
                "reduction": t.naive_loads() / t.global_loads(),
                "P_equals_cupy": ref_ok,
                "blocks_with_sm": int((t.block_info[..., 0] >= 0).sum()),
                "blocks": int(np.prod(t.grid)),
            }
        )
        log(
            f"book claim W={W} T={T}: every M read {W // T}x {m_ok}, every N {n_ok}, "
            f"reduction {t.naive_loads() / t.global_loads():.1f}x, P==CuPy {ref_ok}"
        )
    RESULTS["book_claim"] = out


def _reads_past_the_end(case) -> bool:
    """Whether the case runs Fig. 5.9 (no bounds tests) on a Width not a multiple of TILE_WIDTH."""
    return case["kernel"] == "tiled" and case.get("width", 0) % case["tile_width"] != 0


def check_identical():
    """GPU records against the simulator's (run in a subprocess by vizmm.record)."""
    out = []
    cases = [
        dict(width=4, tile_width=2, kernel="boundary"),
        dict(width=3, tile_width=2, kernel="tiled"),
        dict(width=3, tile_width=2, kernel="boundary"),
        dict(j=37, k=29, l=45, tile_width=8, kernel="general"),
        dict(width=64, tile_width=16, kernel="boundary"),
        dict(width=1024, tile_width=16, kernel="boundary", window=[(0, 0), (31, 17), (63, 63)]),
        dict(width=1000, tile_width=32, kernel="tiled", window=[(0, 0), (31, 31)]),
    ]
    for case in cases:
        g = vizmm.record(backend="gpu", quiet=True, **case)
        t0 = time.perf_counter()
        s = vizmm.record(backend="simulator", quiet=True, **case)
        sim_s = time.perf_counter() - t0
        fields = {}
        for name in LOAD_FIELDS:
            a, b = getattr(g, name), getattr(s, name)
            if name in ("m_reads", "n_reads") and case.get("window"):
                continue  # the simulator ran only the window: counts cover fewer blocks
            if name == "pvalue" and _reads_past_the_end(case):
                continue  # Fig. 5.9 on a ragged Width adds what lies past M and N: undefined
            fields[name] = a.tobytes() == b.tobytes()
        p_same = True
        if not case.get("window"):
            p_same = g.P.tobytes() == s.P.tobytes() or case["kernel"] == "tiled"
        ok = all(fields.values()) and p_same
        out.append(
            {
                "case": {k: v for k, v in case.items()},
                "identical": ok,
                "fields": fields,
                "simulator_s": round(sim_s, 2),
            }
        )
        log(f"identical {case}: {ok} {'' if ok else fields} (simulator {sim_s:.1f} s)")
    RESULTS["identical"] = out


def check_identical_instrumented():
    """The instrumenter's access logs, each GPU target against the simulator, for seven styles."""
    from vizmm.record import instrument_device as D

    here = os.path.dirname(os.path.abspath(__file__))
    styles = os.path.relpath(os.path.join(here, "..", "tests", "instrument_kernels.py"))
    cases = [
        dict(width=4, tile_width=2, kernel="tiled"),
        dict(width=3, tile_width=2, kernel="tiled", drop_barrier=None),
        dict(width=5, tile_width=2, kernel="boundary", reads=True),
        dict(j=37, k=29, l=45, tile_width=8, kernel="general"),
        dict(width=64, tile_width=16, kernel="dynamic"),
        dict(width=5, tile_width=2, kernel=f"{styles}:tiled_2d"),
        dict(width=6, tile_width=2, kernel=f"{styles}:column_major_n"),
    ]
    software = targets.Software.here()
    backends = ["gpu"]  # numba-cuda-mlir where installed; and numba-cuda where it can compile
    if (
        resolve_backend("gpu").target != targets.LEGACY
        and targets.software_problem(targets.LEGACY, software) is None
    ):
        backends.append("gpu-legacy")
    out = []
    for backend, case in itertools.product(backends, cases):
        g = vizmm.record(backend=backend, quiet=True, **case)
        s = vizmm.record(backend="simulator", quiet=True, **case)
        ge, se = g.log_events.copy(), s.log_events.copy()
        ge[..., D.TICK] = se[..., D.TICK] = 0  # the order threads reached a barrier: timing
        fields = {
            "log_events": ge.tobytes() == se.tobytes(),
            "log_values": g.log_values.tobytes() == s.log_values.tobytes(),
            "log_counts": g.log_counts.tobytes() == s.log_counts.tobytes(),
        }
        for name in LOAD_FIELDS:
            fields[name] = getattr(g, name).tobytes() == getattr(s, name).tobytes()
        ok = all(fields.values())
        out.append(
            {
                "backend": backend,
                "case": {k: str(v) for k, v in case.items()},
                "identical": ok,
                "fields": fields,
            }
        )
        log(f"instrumented identical {backend} {case}: {ok} {'' if ok else fields}")
    # Aggregated on the GPU (the lean variant over the grid, the window again in full):
    # the window's log as the simulator's, every block's zero-fills and reads as a
    # recording with every block in detail, barrier clocks where the tickets are.
    windowed = (
        dict(width=7, tile_width=2, kernel="boundary", window=[(0, 0), (3, 3), (1, 2)]),
        dict(j=37, k=29, l=45, tile_width=8, kernel="general", window=[(4, 5)]),
    )
    for backend, case in itertools.product(backends, windowed):
        agg = vizmm.record(backend=backend, quiet=True, **case)
        sim = vizmm.record(backend="simulator", quiet=True, **case)
        every = vizmm.record(
            backend=backend, quiet=True, **{k: v for k, v in case.items() if k != "window"}
        )
        ge, se = agg.log_events.copy(), sim.log_events.copy()
        ge[..., D.TICK] = se[..., D.TICK] = 0
        ticks = agg.barrier_tick >= 0
        fields = {
            "log_events": ge.tobytes() == se.tobytes(),
            "log_values": agg.log_values.tobytes() == sim.log_values.tobytes(),
            "zero_fills_every_block": agg.zero_fills.tobytes() == every.zero_fills.tobytes(),
            "m_reads_every_block": agg.m_reads.tobytes() == every.m_reads.tobytes(),
            "P": agg.P.tobytes() == every.P.tobytes(),
            "barrier_clock_read": bool((agg.barrier_clock[ticks] > 0).all()),
        }
        ok = all(fields.values())
        out.append(
            {
                "backend": backend,
                "case": {k: str(v) for k, v in case.items()},
                "identical": ok,
                "fields": fields,
            }
        )
        log(f"instrumented aggregated {backend} {case}: {ok} {'' if ok else fields}")
    RESULTS["identical_instrumented"] = out


def _device_records(cuda, rec):
    """Device copies of a launch's record arrays; the large log arrays allocated there, unset."""
    out = []
    for k, v in rec.items():
        if k in ("_ev", "_vals", "_clk") and isinstance(v, np.ndarray) and v.nbytes > (1 << 28):
            out.append(cuda.device_array(v.shape, v.dtype))  # the log: counted, not read unset
        else:
            out.append(cuda.to_device(v) if isinstance(v, np.ndarray) else v)
    return out


def _resetter(cuda, names, records):
    """A function that puts a launch's records back as they were made, on the device.

    Every record but the log itself (``_ev``, ``_vals``, ``_clk``: written
    again where counted): a launch timed again and again starts from what
    ``vizmm.record`` hands it, its event counts at zero. Without it, a full
    variant launched a second time finds every thread's count at the cap
    and writes no event.
    """
    pairs = []
    for k, v in zip(names, records, strict=True):
        if hasattr(v, "copy_to_device") and k not in ("_ev", "_vals", "_clk"):
            first = cuda.device_array(v.shape, v.dtype)
            first.copy_to_device(v)
            pairs.append((v, first))

    def reset():
        for v, first in pairs:
            v.copy_to_device(first)

    return reset


def aggregated_records(cuda, W, T, kernel):
    """A book kernel's two instrumented variants and their device records for Width ``W``.

    What an aggregated recording launches, ready to launch again and again:
    the lean variant's records over the whole grid and the full variant's
    over one detail block, block (0, 0). Compiles both variants first, as
    ``vizmm.record`` does, with a recording of Width ``2 * T``.

    Returns
    -------
    types.SimpleNamespace
        ``inst`` (the :class:`~vizmm.record.instrument.Instrumented`), ``grid``,
        ``block``, ``g`` (blocks per side, also the phases), ``cap`` and
        ``nbar`` (events and barriers per thread), ``host`` (host arrays of
        the sizes), ``layout`` (the lean records' :class:`LeanLayout`),
        ``lean`` (the lean launch's arguments after the kernel's own, in
        order), ``lean_rec`` (the same by name), ``lean_named`` (each record
        by name, a view), ``detail`` (the detail block's), ``reset`` (puts
        every record back as made: before each timed launch).
    """
    import types

    import vizmm_kernels as K
    from vizmm.record import instrument as I
    from vizmm.record.instrument_trace import book_kernel

    vizmm.record(width=2 * T, tile_width=T, kernel=kernel, backend="gpu", quiet=True)
    inst = book_kernel(kernel, T, shared_loads=False)
    grid, block = K.grid_dims(W, W, T)
    g = ceil_div(W, T)
    scalars = {"Width": W}
    cap = inst.bound(scalars, (T, T, 1), (g, g, 1))
    nbar = inst.barrier_bound(scalars, (T, T, 1), (g, g, 1))
    host = {"M": np.zeros(W * W, np.float32), "N": np.zeros(W * W, np.float32)}
    host["P"] = host["N"]
    layout = I.lean_layout(inst, grid, host, g)
    lean_host = layout.records()
    lean = _device_records(cuda, lean_host)
    lean_rec = dict(zip(lean_host, lean, strict=True))
    detail_host = I._records(inst, grid, block, [(0, 0)], cap, host, True, nbar, g, True)
    detail = _device_records(cuda, detail_host)
    reset = _resetter(cuda, [*lean_host, *detail_host], [*lean, *detail])
    return types.SimpleNamespace(
        inst=inst,
        grid=grid,
        block=block,
        g=g,
        cap=cap,
        nbar=nbar,
        host=host,
        layout=layout,
        lean=lean,
        lean_rec=lean_rec,
        lean_named=layout.views(lean_rec),
        detail=detail,
        reset=reset,
    )


def _instrumented_time(cuda, W, T, M, N, P, reps, P_plain, kernel="tiled"):
    """Times (ms) of a book kernel (Fig. 5.9's by default) through the instrumenter, as recorded.

    Aggregated (one detail block): the lean variant over the whole grid and,
    beside it on a second stream, the full variant over the detail block alone
    (``lean_ms``, ``detail_ms`` each alone, ``aggregated_ms`` both). Full: the
    full variant over every block (shared loads not logged, as a recording
    without the barrier lab's reads), where the log fits. Before each timed
    launch (outside the time) the records are put back as a recording makes
    them: every count at zero, so that each launch writes its whole log.
    """
    from vizmm.record import instrument as I

    # a small recording first, as vizmm.record runs it (compiles both variants)
    vizmm.record(
        width=2 * T, tile_width=T, kernel=kernel, backend="gpu", quiet=True, window=[(0, 0)]
    )
    setup = aggregated_records(cuda, W, T, kernel)
    inst, grid, block, g, nph = setup.inst, setup.grid, setup.block, setup.g, setup.g
    cap, nbar, host, layout, reset = setup.cap, setup.nbar, setup.host, setup.layout, setup.reset
    lean, lean_rec, lean_named, detail = setup.lean, setup.lean_rec, setup.lean_named, setup.detail
    del setup  # the records are let go below, before the full variant's are made
    out = {}

    def lean_run(stream=0):  # the lean variant, then its runs added in (instrument_runs)
        lean_k[grid, block, stream](M, N, P, W, *lean)
        I.expand_lean_runs(layout, lean_rec, stream, keep=True)

    lean_k, full_k = inst.lean, inst.kernel
    try:
        lean_run()  # once from zero: every element of M and N read Width / TILE_WIDTH times
        cuda.synchronize()
        out["lean_counts_exact"] = all(
            bool((lean_named[f"_reads_{a}"].copy_to_host() == g).all()) for a in ("M", "N")
        )
        out["lean_ms"], _ = _event_time(cuda, lean_run, reps, "lean", reset)
        # the runs as a lean launch leaves them (a reset would leave none to expand)
        out["expand_ms"], _ = _event_time(
            cuda, lambda: I.expand_lean_runs(layout, lean_rec, keep=True), reps, "expand"
        )
    except Exception:  # noqa: BLE001 - reported, the full variant is timed still
        import traceback

        out["lean_error"] = traceback.format_exc()[-3000:]
        lean_k = None
    out["lean_P_equals_plain"] = bool(P.copy_to_host().tobytes() == P_plain.tobytes())
    out["detail_ms"], _ = _event_time(
        cuda, lambda: full_k[(1, 1), block](M, N, P, W, *detail), reps, "detail", reset
    )

    s_lean = cuda.stream()

    if lean_k is not None:
        with I.priority_stream(cuda) as s_detail:
            s_detail = s_detail or cuda.stream()

            def both():  # as vizmm.record runs them: lean launch, detail block, expansion
                lean_k[grid, block, s_lean](M, N, P, W, *lean)
                full_k[(1, 1), block, s_detail](M, N, P, W, *detail)
                I.expand_lean_runs(layout, lean_rec, s_lean, keep=True)

            out["aggregated_ms"], out["aggregated_times_ms"] = _event_time(
                cuda, both, reps, "aggregated", reset
            )
        out["aggregated_P_equals_plain"] = bool(P.copy_to_host().tobytes() == P_plain.tobytes())
    lean = detail = lean_named = lean_rec = reset = None
    blocks = [(by, bx) for by in range(g) for bx in range(g)]
    need = I.log_bytes(cap, len(blocks) * T * T) + nbar * len(blocks) * T * T * 8
    free = cuda.current_context().get_memory_info()[0]
    out["full_log_bytes"] = int(need)
    if need > 0.9 * free:
        out["full_note"] = f"the log would take {need / 1e9:.1f} GB ({free / 1e9:.1f} GB free)"
        return out
    full_host = I._records(inst, grid, block, blocks, cap, host, False, nbar, nph)
    full = _device_records(cuda, full_host)
    names = list(full_host)
    reset = _resetter(cuda, names, full)
    del full_host
    out["full_ms"], out["full_times_ms"] = _event_time(
        cuda, lambda: full_k[grid, block](M, N, P, W, *full), max(3, reps // 4), "full", reset
    )
    # what the log holds after a timed launch: every thread's events, none past the cap
    counts = full[names.index("_cnt")].copy_to_host()
    out["full_events"] = int(np.minimum(counts, cap).astype(np.int64).sum())
    full = None
    return out


#: Per timed name, the median host time (ms) its launches took to enqueue (the last row's).
HOST_MS: dict = {}


def _event_time(cuda, fn, reps, name=None, reset=None):
    """Median GPU time (ms) between events around ``fn``; its host time kept in HOST_MS[name].

    Where the host time is close to the GPU time, the launch is bound by the
    host's cost of enqueuing it (Numba's argument handling), not by the GPU.
    ``reset``, when given, runs before each launch, outside the time (the
    records put back as a recording makes them).
    """
    start, stop = cuda.event(), cuda.event()
    fn()
    cuda.synchronize()
    times, host = [], []
    for _ in range(reps):
        if reset is not None:
            reset()
            cuda.synchronize()
        start.record()
        t0 = time.perf_counter()
        fn()
        host.append((time.perf_counter() - t0) * 1e3)
        stop.record()
        stop.synchronize()
        times.append(cuda.event_elapsed_time(start, stop))
    if name:
        HOST_MS[name] = statistics.median(host)
    return statistics.median(times), times


def timing_worker(target, out_path, quick):
    """Time one target's kernels in this process (started by :func:`time_kernels`)."""
    bound = targets.bind_here(target)
    import vizmm_kernels as K

    cuda = bound.cuda
    dev = cuda.get_current_device()
    name = dev.name.decode() if isinstance(dev.name, bytes) else dev.name
    out = {"target": bound.NAME, "version": bound.VERSION, "device": name, "rows": []}
    rng = np.random.default_rng(0)
    plan = [(W, T) for W in (1024, 2048, 4096, 8192) for T in (16, 32)]
    if quick:
        plan = [(1024, 16), (1024, 32), (4096, 16), (4096, 32)]
    if os.environ.get("VIZMM_GPU_WIDTHS"):  # e.g. 1024,2048: only those widths
        plan = [(W, T) for W, T in plan if str(W) in os.environ["VIZMM_GPU_WIDTHS"].split(",")]
    # Fig. 5.9 at every shape; Fig. 5.13 (vizmm.record's default kernel) beside it
    plan = [(W, T, k) for k in ("tiled", "boundary") for W, T in plan]
    for W, T, kernel in plan:
        Mh = rng.integers(0, 10, W * W).astype(np.float32)
        Nh = rng.integers(0, 10, W * W).astype(np.float32)
        M, N = cuda.to_device(Mh), cuda.to_device(Nh)
        P = cuda.device_array(W * W, np.float32)
        grid, block = K.grid_dims(W, W, T)
        plain = K.get_kernel(kernel, T)
        reps = 50 if W <= 1024 else 20 if W <= 2048 else 10  # host time varies most at 1024
        row = {"W": W, "T": T, "kernel": kernel}
        HOST_MS.clear()
        row["plain_ms"], row["plain_times_ms"] = _event_time(
            cuda, lambda: plain[grid, block](M, N, P, W), reps, "plain"
        )
        P_plain = P.copy_to_host()
        try:
            row.update(_instrumented_time(cuda, W, T, M, N, P, reps, P_plain, kernel))
        except Exception as exc:  # noqa: BLE001 - reported, the other timings go on
            row["inst_error"] = f"{type(exc).__name__}: {str(exc)[:300]}"
        # host time to enqueue each (not a ratio: the keys end in _host)
        row.update({f"{k}_host": v for k, v in HOST_MS.items()})
        for key in list(row):
            if key.endswith("_ms") and key != "plain_ms" and isinstance(row[key], float):
                row[key.removesuffix("_ms") + "_ratio"] = row[key] / row["plain_ms"]
        row["plain_tflops"] = 2.0 * W**3 / (row["plain_ms"] * 1e-3) / 1e12
        out["rows"].append(row)
        log(
            f"{bound.NAME} {kernel} W={W} T={T}: plain {row['plain_ms']:.3f} ms, aggregated "
            f"x{row.get('aggregated_ratio', float('nan')):.2f}"
            + (f", full x{row['full_ratio']:.2f}" if row.get("full_ratio") else "")
        )
        with open(out_path, "w", encoding="utf-8") as f:  # each row kept as it comes
            json.dump(out, f, indent=1)
    return 0


def time_kernels(quick, names=None):
    """Each GPU target's timings, one process per target, side by side."""
    software = targets.Software.here()
    names = names or [
        t for t in (targets.MLIR, targets.LEGACY) if targets.software_problem(t, software) is None
    ]
    out = {}
    for target in names:
        path = os.path.join(RESULTS["_outdir"], f"timing-{target}.json")
        cmd = [sys.executable, __file__, "--timing-worker", target, path]
        env = dict(os.environ, **targets.environment(target))
        proc = subprocess.run(cmd + (["--quick"] if quick else []), env=env)
        if proc.returncode != 0 or not os.path.exists(path):
            out[target] = {"error": f"timing worker failed (exit code {proc.returncode})"}
            continue
        with open(path, encoding="utf-8") as f:
            out[target] = json.load(f)
    skipped = {
        t: targets.software_problem(t, software)
        for t in (targets.MLIR, targets.LEGACY)
        if t not in names
    }
    RESULTS["timing"] = {"targets": out, "not_run": skipped, "checks": _timing_checks(out)}


def _timing_checks(out):
    """The targets: aggregated <= 1.25x at every shape, full <= 3x at 1024, plain within 5%."""
    checks = []
    plain = {}
    for target, res in out.items():
        for r in res.get("rows", []):
            kernel = r.get("kernel", "tiled")
            if (r["W"], r["T"], kernel) == (4096, 32, "tiled"):
                plain[target] = r["plain_ms"]
            checks.append(
                {
                    "target": target,
                    "check": f"{kernel}: aggregated <= 1.25x plain at Width {r['W']}, "
                    f"TILE_WIDTH {r['T']}",
                    "value": round(r.get("aggregated_ratio", float("inf")), 3),
                    "ok": r.get("aggregated_ratio", float("inf")) <= 1.25,
                }
            )
            if r["W"] == 1024 and r.get("full_ratio"):
                checks.append(
                    {
                        "target": target,
                        "check": f"{kernel}: full <= 3x plain at Width 1024, TILE_WIDTH {r['T']}",
                        "value": round(r["full_ratio"], 3),
                        "ok": r["full_ratio"] <= 3,
                    }
                )
    if len(plain) == 2:
        a, b = plain.values()
        checks.append(
            {
                "target": " vs ".join(plain),
                "check": "plain tiled within 5% between targets at Width 4096, TILE_WIDTH 32",
                "value": round(max(a, b) / min(a, b) - 1, 4),
                "ok": max(a, b) / min(a, b) <= 1.05,
            }
        )
    return checks


def record_shipped(outdir):
    out = []
    # name, recording, window: corner, edges and interior blocks
    plan = [
        (
            "gpu-1000-t16-boundary.vizmm",
            dict(width=1000, tile_width=16, kernel="boundary"),
            lambda g: [(0, 0), (0, g - 1), (g - 1, 0), (g // 2, g // 2), (g - 1, g - 1)],
        ),
        (
            "gpu-4096-t32-tiled.vizmm",
            dict(width=4096, tile_width=32, kernel="tiled"),
            lambda g: [(0, 0), (g // 2, g // 2), (g - 1, g - 1)],
        ),
    ]
    for name, case, win in plan:
        g = ceil_div(case["width"], case["tile_width"])
        t0 = time.perf_counter()
        t = vizmm.record(backend="gpu", window=win(g), quiet=True, seed=2024, **case)
        rec_s = time.perf_counter() - t0
        path = os.path.join(outdir, name)
        t.save(path)
        size = os.path.getsize(path)
        out.append(
            {
                "file": name,
                "bytes": size,
                "record_s": round(rec_s, 2),
                "kernel_s": t.meta["elapsed_s"],
                "P_equals_cupy": bool(np.array_equal(t.P, cupy_product(t.M, t.N))),
            }
        )
        log(f"shipped {name}: {size / 1e6:.2f} MB, recorded in {rec_s:.2f} s")
    RESULTS["shipped"] = out


def main(argv):
    if argv and argv[0] == "--timing-worker":
        return timing_worker(argv[1], argv[2], "--quick" in argv)
    outdir = argv[0] if argv else "."
    quick = "--quick" in argv
    names = None
    if "--targets" in argv:
        names = argv[argv.index("--targets") + 1].split(",")
        argv = [a for a in argv if a not in ("--targets", ",".join(names))]
    RESULTS["_outdir"] = outdir
    driver = targets.driver_here()
    RESULTS["device"] = driver.as_dict()
    RESULTS["versions"] = targets.Software.here().as_dict()
    RESULTS["auto"] = resolve_backend("auto").reason
    log("device", RESULTS["device"]["devices"], RESULTS["versions"])
    steps = [a for a in argv[1:] if not a.startswith("--")] or [
        "correct",
        "claim",
        "identical",
        "instrumented",
        "timing",
        "shipped",
    ]
    for step in steps:
        t0 = time.perf_counter()
        {
            "correct": lambda: check_correctness(quick),
            "claim": check_book_claim,
            "identical": check_identical,
            "instrumented": check_identical_instrumented,
            "timing": lambda: time_kernels(quick, names),
            "shipped": lambda: record_shipped(outdir),
        }[step]()
        log(f"-- {step} took {time.perf_counter() - t0:.1f} s")
        with open(os.path.join(outdir, "gpu_suite.json"), "w") as f:
            json.dump(
                {k: v for k, v in RESULTS.items() if k != "_outdir"}, f, indent=1, default=str
            )
    timing = RESULTS.get("timing", {})
    card = ", ".join(d["name"] for d in RESULTS["device"]["devices"])
    log(f"\ncard: {card}")
    log(
        "target             kernel    W     T   plain ms  TFLOP/s  aggregated x (lean x, "
        "detail x)  full x"
    )
    for target, res in timing.get("targets", {}).items():
        for r in res.get("rows", []):
            log(
                f"{target:<18} {r.get('kernel', 'tiled'):<9} {r['W']:<5} {r['T']:<3} "
                f"{r['plain_ms']:8.3f} "
                f"{r['plain_tflops']:8.2f} {r.get('aggregated_ratio', float('nan')):12.2f} "
                f"({r.get('lean_ratio', float('nan')):.2f}, "
                f"{r.get('detail_ratio', float('nan')):.2f})"
                + (f"  {r['full_ratio']:6.2f}" if r.get("full_ratio") else "     n/a")
            )
    for t, why in timing.get("not_run", {}).items():
        log(f"{t}: not timed ({why})")
    for c in timing.get("checks", []):
        log(f"{'ok ' if c['ok'] else 'MISS'} {c['target']}: {c['check']}: {c['value']}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
