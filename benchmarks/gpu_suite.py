"""Everything vizmm claims about a real GPU, checked and timed in one run.

Run on a machine with an NVIDIA GPU (``NUMBA_ENABLE_CUDASIM`` unset or 0):

    python benchmarks/gpu_suite.py OUTDIR [--quick]

1. correctness: P of every kernel against CuPy's (cuBLAS) product, exact on
   small-integer inputs, for large and odd shapes;
2. the book's claim: with tiling each M and N element is read
   Width / TILE_WIDTH times (aggregated recording at 4096);
3. GPU and simulator load records byte for byte: whole small launches, and
   the detailed window of a large GPU run re-simulated;
4. timings (CUDA events, median): plain tiled kernel against the aggregated
   instrumented kernel (Width 1024 and 4096) and against the full-detail
   instrumented kernel (Width 1024 and 2048, the largest whose full records
   fit on the card);
5. recordings of the traces shipped with vizmm (saved to OUTDIR).

Prints a short table last and writes ``gpu_suite.json`` to OUTDIR.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time

os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "0")

import numpy as np  # noqa: E402
import vizmm_kernels as K  # noqa: E402
from numba import cuda  # noqa: E402

import vizmm  # noqa: E402
from vizmm.trace import ceil_div  # noqa: E402

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


def _event_time(fn, reps):
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


def _record_arrays(kernel, W, T, detail_all, aggregated):
    """Device copies of the record arrays ``vizmm.record`` would pass (flat)."""
    from vizmm.record.launcher import allocate_records

    g = ceil_div(W, T)
    blocks = [(by, bx) for by in range(g) for bx in range(g)] if detail_all else [(0, 0)]
    rec, _ = allocate_records(W, W, W, T, kernel, blocks, aggregated)
    return [cuda.to_device(a) for a in rec.values()]


def time_kernels(quick):
    out = []
    rng = np.random.default_rng(0)
    plan = [(1024, 16), (1024, 32), (2048, 32), (4096, 16), (4096, 32)]
    if quick:
        plan = [(1024, 16), (4096, 32)]
    for W, T in plan:
        M = cuda.to_device(rng.integers(0, 10, W * W).astype(np.float32))
        N = cuda.to_device(rng.integers(0, 10, W * W).astype(np.float32))
        P = cuda.device_array(W * W, np.float32)
        grid, block = K.grid_dims(W, W, T)
        plain = K.get_kernel("tiled", T)
        inst = K.get_kernel("tiled", T, instrumented=True)
        reps = 20 if W <= 2048 else 10
        row = {"W": W, "T": T}
        row["plain_ms"], _ = _event_time(lambda: plain[grid, block](M, N, P, W), reps)
        agg = _record_arrays("tiled", W, T, detail_all=False, aggregated=True)
        row["aggregated_ms"], _ = _event_time(lambda: inst[grid, block](M, N, P, W, *agg), reps)
        full_bytes = (W * W) * ceil_div(W, T) * (24 + 4 + 16 + 32)
        if full_bytes < 30e9:
            full = _record_arrays("tiled", W, T, detail_all=True, aggregated=False)
            row["full_ms"], _ = _event_time(
                lambda: inst[grid, block](M, N, P, W, *full), max(3, reps // 4)
            )
        else:
            row["full_ms"] = None
            row["full_note"] = f"full records would take {full_bytes / 1e9:.0f} GB"
        row["aggregated_ratio"] = row["aggregated_ms"] / row["plain_ms"]
        row["full_ratio"] = row["full_ms"] / row["plain_ms"] if row["full_ms"] else None
        flops = 2.0 * W**3
        row["plain_tflops"] = flops / (row["plain_ms"] * 1e-3) / 1e12
        out.append(row)
        log(
            f"timing W={W} T={T}: plain {row['plain_ms']:.3f} ms "
            f"({row['plain_tflops']:.2f} TFLOP/s), aggregated {row['aggregated_ms']:.3f} ms "
            f"(x{row['aggregated_ratio']:.2f}), full "
            + (
                f"{row['full_ms']:.3f} ms (x{row['full_ratio']:.2f})"
                if row["full_ms"]
                else row.get("full_note", "")
            )
        )
    RESULTS["timing"] = out


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
    outdir = argv[0] if argv else "."
    quick = "--quick" in argv
    dev = cuda.get_current_device()
    RESULTS["device"] = {
        "name": str(dev.name),
        "sm_count": dev.MULTIPROCESSOR_COUNT,
        "cc": list(dev.compute_capability),
    }
    import numba

    RESULTS["versions"] = {"numpy": np.__version__, "numba": numba.__version__}
    log("device", RESULTS["device"], RESULTS["versions"])
    steps = [a for a in argv[1:] if not a.startswith("--")] or [
        "correct",
        "claim",
        "identical",
        "timing",
        "shipped",
    ]
    for step in steps:
        t0 = time.perf_counter()
        {
            "correct": lambda: check_correctness(quick),
            "claim": check_book_claim,
            "identical": check_identical,
            "timing": lambda: time_kernels(quick),
            "shipped": lambda: record_shipped(outdir),
        }[step]()
        log(f"-- {step} took {time.perf_counter() - t0:.1f} s")
        with open(os.path.join(outdir, "gpu_suite.json"), "w") as f:
            json.dump(RESULTS, f, indent=1, default=str)
    log("\nW     T   plain ms  TFLOP/s  aggregated x  full x")
    for r in RESULTS.get("timing", []):
        log(
            f"{r['W']:<5} {r['T']:<3} {r['plain_ms']:8.3f} {r['plain_tflops']:8.2f} "
            f"{r['aggregated_ratio']:12.2f}  "
            + (f"{r['full_ratio']:.2f}" if r["full_ratio"] else "n/a")
        )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
