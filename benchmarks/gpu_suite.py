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
   compiles for one target): the plain tiled kernel against the aggregated
   instrumented kernel (Width 1024 and 4096) and against the full-detail
   instrumented kernel (Width 1024 and 2048, the largest whose full records
   fit on the card); at Width 4096 also what the aggregated recording's
   parts cost (the read counters alone, the barrier clocks alone, neither,
   the probes of ``benchmarks/sync_variants.py``) and a 40-register cap;
5. recordings of the traces shipped with vizmm (saved to OUTDIR);
6. the instrumenter (``vizmm.record.instrument``): step ``instrumented``
   records kernels of four styles (the book's Fig. 5.9 and 5.13, the
   general kernel, Fig. 5.14's dynamic shared memory, and the test kernels
   of ``tests/instrument_kernels.py``: 2-D arrays with ``cuda.grid``, a
   coarsened kernel) on the GPU and in the simulator and compares their
   access logs byte for byte (barrier tickets, which are timing, apart);
   the timing step also times the plain Fig. 5.9 kernel through the
   instrumenter, aggregated (one detailed block; every block counts its
   global reads, one atomic per load, and records its SM and times) and in
   full where the log fits (``inst_aggregated`` / ``inst_full`` ratios).

Only the instrumenter's parts: ``python benchmarks/gpu_suite.py OUTDIR instrumented timing``.

Prints a short table last and writes ``gpu_suite.json`` to OUTDIR. The
targets compared are those that can compile here (numba-cuda needs NumPy
< 2.5); ``--targets numba-cuda-mlir,numba-cuda`` names them.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
import types

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
    """The instrumenter's access logs, GPU against simulator, for kernels of four styles."""
    from vizmm.record import instrument_device as D

    here = os.path.dirname(os.path.abspath(__file__))
    styles = os.path.join(here, "..", "tests", "instrument_kernels.py")
    cases = [
        dict(width=4, tile_width=2, kernel="tiled"),
        dict(width=3, tile_width=2, kernel="tiled", drop_barrier=None),
        dict(width=5, tile_width=2, kernel="boundary", reads=True),
        dict(j=37, k=29, l=45, tile_width=8, kernel="general"),
        dict(width=64, tile_width=16, kernel="dynamic"),
        dict(width=5, tile_width=2, kernel=f"{styles}:tiled_2d"),
        dict(width=6, tile_width=2, kernel=f"{styles}:column_major_n"),
    ]
    out = []
    for case in cases:
        g = vizmm.record(backend="gpu", quiet=True, instrumenter=True, **case)
        s = vizmm.record(backend="simulator", quiet=True, instrumenter=True, **case)
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
            {"case": {k: str(v) for k, v in case.items()}, "identical": ok, "fields": fields}
        )
        log(f"instrumented identical {case}: {ok} {'' if ok else fields}")
    RESULTS["identical_instrumented"] = out


def _instrumented_time(cuda, W, T, M, N, P, reps, full):
    """Times (ms) of the plain Fig. 5.9 kernel through the instrumenter: aggregated, full."""
    import vizmm_kernels as K
    from vizmm.record import instrument as I
    from vizmm.record.instrument_trace import book_kernel

    inst = book_kernel("tiled", T, shared_loads=False)
    grid, block = K.grid_dims(W, W, T)
    g = ceil_div(W, T)
    cap = inst.bound({"Width": W}, (T, T, 1), (g, g, 1))
    host = {"M": np.zeros(W * W, np.float32), "N": np.zeros(W * W, np.float32)}
    host["P"] = host["N"]
    out = {}
    for mode in ("aggregated", "full") if full else ("aggregated",):
        blocks = [(by, bx) for by in range(g) for bx in range(g)] if mode == "full" else [(0, 0)]
        need = I.log_bytes(cap, len(blocks) * T * T)
        if need > 30e9:
            out[f"inst_{mode}_note"] = f"the log would take {need / 1e9:.0f} GB"
            continue
        rec = I._records(inst, grid, block, blocks, cap, host, mode == "aggregated")
        d = [cuda.to_device(v) if isinstance(v, np.ndarray) else v for v in rec.values()]
        kern = inst.kernel
        out[f"inst_{mode}_ms"], _ = _event_time(
            cuda,
            lambda d=d: kern[grid, block](M, N, P, W, *d),
            reps if mode == "aggregated" else max(3, reps // 4),
        )
        d = None
    return out


def _event_time(cuda, fn, reps):
    start, stop = cuda.event(), cuda.event()
    fn()
    cuda.synchronize()
    times = []
    for _ in range(reps):
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        times.append(cuda.event_elapsed_time(start, stop))
    return statistics.median(times), times


def _record_arrays(cuda, kernel, W, T, detail_all, aggregated, drop=()):
    """Device copies of the record arrays ``vizmm.record`` would pass (flat), by name.

    ``drop`` names arrays passed empty instead ('mcount', 'ncount': no read
    counters; 'spread': no barrier clocks), to time what each part costs.
    """
    from vizmm.record.launcher import allocate_records

    g = ceil_div(W, T)
    blocks = [(by, bx) for by in range(g) for bx in range(g)] if detail_all else [(0, 0)]
    rec, _ = allocate_records(W, W, W, T, kernel, blocks, aggregated)
    return [cuda.to_device(a[:0] if name in drop else a) for name, a in rec.items()]


def _variants(cuda, T):
    """The instrumented kernel's variants, by name: (kernel, mode it is timed in).

    ``cap40``: the shipped kernel under a 40-register cap instead of 32; the
    others swap ``rec_sync`` for one of ``benchmarks/sync_variants.py``.
    """
    import sync_variants

    import vizmm_kernels as K
    from vizmm_kernels import tiled

    def rebuilt(fn, **globs):
        g = dict(fn.__globals__, **globs)
        return types.FunctionType(fn.__code__, g, fn.__name__, fn.__defaults__, fn.__closure__)

    shipped = K.get_kernel("tiled", T, instrumented=True)
    out = {"cap40": (cuda.jit(max_registers=40)(shipped.py_func), "aggregated")}
    for name, (fn, mode) in sync_variants.VARIANTS.items():
        out[name] = (rebuilt(tiled.make_instrumented, rec_sync=fn)(T), mode)
    return out


def _spread_valid(cuda, kern, grid, block, M, N, P, W, T):
    """Of one aggregated launch's (block, phase, barrier): the fraction with a valid clock span,
    and the median arrival spread (cycles), from the kernel's ``spread`` as the launcher reduces it.
    """
    from vizmm.record.launcher import _reduce_spread
    from vizmm_kernels import codes

    arrays = _record_arrays(cuda, "tiled", W, T, False, True)
    kern[grid, block](M, N, P, W, *arrays)
    cuda.synchronize()
    spread = arrays[6].copy_to_host().reshape(-1, 3)  # the flat spread array (kernel order)
    arrival = _reduce_spread(spread, codes)[..., 0]
    ok = arrival >= 0
    return float(ok.mean()), float(np.median(arrival[ok])) if ok.any() else None


def timing_worker(target, out_path, quick):
    """Time one target's kernels in this process (started by :func:`time_kernels`)."""
    bound = targets.bind_here(target)
    import vizmm_kernels as K

    cuda = bound.cuda
    dev = cuda.get_current_device()
    name = dev.name.decode() if isinstance(dev.name, bytes) else dev.name
    out = {"target": bound.NAME, "version": bound.VERSION, "device": name, "rows": []}
    rng = np.random.default_rng(0)
    plan = [(1024, 16), (1024, 32), (2048, 32), (4096, 16), (4096, 32)]
    if quick:
        plan = [(1024, 16), (1024, 32), (4096, 16), (4096, 32)]
    for W, T in plan:
        Mh = rng.integers(0, 10, W * W).astype(np.float32)
        Nh = rng.integers(0, 10, W * W).astype(np.float32)
        M, N = cuda.to_device(Mh), cuda.to_device(Nh)
        P = cuda.device_array(W * W, np.float32)
        grid, block = K.grid_dims(W, W, T)
        plain = K.get_kernel("tiled", T)
        inst = K.get_kernel("tiled", T, instrumented=True)
        reps = 20 if W <= 2048 else 10
        row = {"W": W, "T": T}
        row["plain_ms"], _ = _event_time(cuda, lambda: plain[grid, block](M, N, P, W), reps)
        P_plain = P.copy_to_host()
        agg = _record_arrays(cuda, "tiled", W, T, detail_all=False, aggregated=True)
        row["aggregated_ms"], _ = _event_time(
            cuda, lambda: inst[grid, block](M, N, P, W, *agg), reps
        )
        row["aggregated_P_equals_plain"] = bool(P.copy_to_host().tobytes() == P_plain.tobytes())
        variants = _variants(cuda, T) if (W == 4096 or (W == 1024 and T == 32)) else {}
        if W == 4096:
            probes = {
                "no_counters": ("mcount", "ncount"),
                "no_clocks": ("spread",),
                "neither": ("mcount", "ncount", "spread"),
            }
            for label, drop in probes.items():
                arrays = _record_arrays(cuda, "tiled", W, T, False, True, drop)
                row[f"{label}_ms"], _ = _event_time(
                    cuda, lambda a=arrays: inst[grid, block](M, N, P, W, *a), reps
                )
            row["spread_valid"], row["spread_median"] = _spread_valid(
                cuda, inst, grid, block, M, N, P, W, T
            )
            for label, (kern, mode) in variants.items():
                if mode == "full":
                    continue
                arrays = _record_arrays(cuda, "tiled", W, T, False, True)
                try:
                    row[f"{label}_ms"], _ = _event_time(
                        cuda, lambda k=kern, a=arrays: k[grid, block](M, N, P, W, *a), reps
                    )
                except Exception as exc:  # noqa: BLE001 - a variant this compiler refuses
                    row[f"{label}_error"] = f"{type(exc).__name__}: {str(exc)[:300]}"
        try:
            row.update(_instrumented_time(cuda, W, T, M, N, P, reps, full=W <= 2048))
        except Exception as exc:  # noqa: BLE001 - reported, the other timings go on
            row["inst_error"] = f"{type(exc).__name__}: {str(exc)[:300]}"
        full_bytes = (W * W) * ceil_div(W, T) * (24 + 4 + 16 + 32)
        if full_bytes < 30e9:
            full = _record_arrays(cuda, "tiled", W, T, detail_all=True, aggregated=False)
            row["full_ms"], _ = _event_time(
                cuda, lambda: inst[grid, block](M, N, P, W, *full), max(3, reps // 4)
            )
            for label, (kern, mode) in variants.items():
                if mode in ("full", "both"):
                    try:
                        row[f"full_{label}_ms"], _ = _event_time(
                            cuda,
                            lambda k=kern: k[grid, block](M, N, P, W, *full),
                            max(3, reps // 4),
                        )
                    except Exception as exc:  # noqa: BLE001 - a variant this compiler refuses
                        row[f"full_{label}_error"] = f"{type(exc).__name__}: {str(exc)[:300]}"
            full = None  # free the device copies before the next size
        else:
            row["full_ms"] = None
            row["full_note"] = f"full records would take {full_bytes / 1e9:.0f} GB"
        for key in list(row):
            if key.endswith("_ms") and key != "plain_ms" and row[key]:
                row[key.removesuffix("_ms") + "_ratio"] = row[key] / row["plain_ms"]
        row["plain_tflops"] = 2.0 * W**3 / (row["plain_ms"] * 1e-3) / 1e12
        out["rows"].append(row)
        log(
            f"{bound.NAME} W={W} T={T}: plain {row['plain_ms']:.3f} ms, aggregated "
            f"x{row['aggregated_ratio']:.2f}"
            + (f", full x{row['full_ratio']:.2f}" if row.get("full_ratio") else "")
        )
    with open(out_path, "w", encoding="utf-8") as f:
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
    """The targets: aggregated <= 1.2x at 4096/32, full <= 8x at 1024, plain within 5%."""
    checks = []
    plain = {}
    for target, res in out.items():
        for r in res.get("rows", []):
            if (r["W"], r["T"]) == (4096, 32):
                plain[target] = r["plain_ms"]
                checks.append(
                    {
                        "target": target,
                        "check": "aggregated <= 1.2x plain at Width 4096, TILE_WIDTH 32",
                        "value": round(r["aggregated_ratio"], 3),
                        "ok": r["aggregated_ratio"] <= 1.2,
                    }
                )
            if r["W"] == 1024 and r.get("full_ratio"):
                checks.append(
                    {
                        "target": target,
                        "check": f"full <= 8x plain at Width 1024, TILE_WIDTH {r['T']}",
                        "value": round(r["full_ratio"], 3),
                        "ok": r["full_ratio"] <= 8,
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
        "target             W     T   plain ms  TFLOP/s  aggregated x  full x  instr. agg x  full x"
    )
    for target, res in timing.get("targets", {}).items():
        for r in res.get("rows", []):
            log(
                f"{target:<18} {r['W']:<5} {r['T']:<3} {r['plain_ms']:8.3f} "
                f"{r['plain_tflops']:8.2f} {r['aggregated_ratio']:12.2f}  "
                + (f"{r['full_ratio']:6.2f}" if r.get("full_ratio") else "   n/a")
                + (
                    f"  {r['inst_aggregated_ratio']:12.2f}"
                    if r.get("inst_aggregated_ratio")
                    else ""
                )
                + (f"  {r['inst_full_ratio']:6.2f}" if r.get("inst_full_ratio") else "")
            )
            if any(k.startswith("full_") and k.endswith("_ratio") for k in r) or r["W"] == 4096:
                parts = ", ".join(
                    f"{k.removesuffix('_ratio')} x{r[k]:.2f}"
                    for k in sorted(r)
                    if k.endswith("_ratio") and k not in ("aggregated_ratio", "full_ratio")
                )
                log(f"{'':<18} {'':<9} variants: {parts}")
                spans = ", ".join(
                    f"{k[:-12].rstrip('_') or 'shipped'}: valid {r[k]:.3f}, "  # -12: spread_valid
                    f"median {r[k.replace('valid', 'median')]}"
                    for k in sorted(r)
                    if k.endswith("spread_valid")
                )
                if spans:
                    log(f"{'':<18} {'':<9} arrival spreads: {spans}")
    for t, why in timing.get("not_run", {}).items():
        log(f"{t}: not timed ({why})")
    for c in timing.get("checks", []):
        log(f"{'ok ' if c['ok'] else 'MISS'} {c['target']}: {c['check']}: {c['value']}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
