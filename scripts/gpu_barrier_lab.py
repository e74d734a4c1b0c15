"""The barrier lab on a real GPU: record each variant, run racecheck on the same launches.

Usage (on a machine with an NVIDIA GPU, numba-cuda and compute-sanitizer)::

    python scripts/gpu_barrier_lab.py OUTDIR

For every case (kernel, Width, TILE_WIDTH, barriers removed) it

1. records the instrumented kernel on the GPU with ``vizmm.record`` and saves
   the trace (``OUTDIR/traces/*.vizmm``);
2. runs the *plain* kernel on the same inputs under ``compute-sanitizer
   --tool racecheck`` (this script, in its ``plain`` mode) and keeps the
   report (``OUTDIR/racecheck/*.txt``);
3. writes ``OUTDIR/barrier_lab_gpu.json``: per case, vizmm's hazards by kind
   and block, racecheck's, the wrong reads and wrong P elements of the
   recording, and whether the recorded reads explain P.

``python scripts/gpu_barrier_lab.py plain KERNEL WIDTH T DROP SEED`` launches
the plain kernel once (``DROP``: ``-``, ``1``, ``2`` or ``1,2``).
"""

from __future__ import annotations

import datetime
import importlib.metadata
import json
import os
import platform
import shutil
import subprocess
import sys
import time

import numpy as np

# (kernel, Width, TILE_WIDTH, window or None). Every case runs with barrier 1,
# barrier 2 and both removed, and with both kept (the control).
CASES = [
    ("tiled", 4, 2, None),  # Fig. 5.8's example: one warp per block
    ("boundary", 5, 2, None),  # Fig. 5.13 with zero-fills
    ("tiled", 64, 16, None),  # 16 blocks of 8 warps
    ("boundary", 100, 16, [(0, 0), (3, 5), (6, 6)]),  # larger: 49 blocks, three recorded
]
DROPS = [(1,), (2,), (1, 2), ()]
SEED = 5
# A dry run of the script's logic without a GPU: VIZMM_LAB_BACKEND=simulator.
BACKEND = os.environ.get("VIZMM_LAB_BACKEND", "gpu")


def drop_name(drop) -> str:
    """``(1, 2)`` -> ``'1,2'``; ``()`` -> ``'-'``."""
    return ",".join(map(str, drop)) or "-"


def plain_main(kernel, width, T, drop, seed):
    """Launch the plain kernel once on vizmm's seeded inputs; print wrong P elements."""
    import vizmm_kernels as K
    from numba import cuda

    from vizmm.trace import seeded_inputs

    M, N = seeded_inputs(width, width, width, seed)
    kern = K.get_kernel(kernel, T, drop_barrier=drop)
    grid, block = K.grid_dims(width, width, T)
    dM, dN = cuda.to_device(M.ravel()), cuda.to_device(N.ravel())
    dP = cuda.to_device(np.zeros(width * width, np.float32))
    kern[grid, block](dM, dN, dP, width)
    cuda.synchronize()
    P = dP.copy_to_host().reshape(width, width)
    ref = M.astype(np.float64) @ N.astype(np.float64)
    print(f"plain {kernel} {width} T{T} drop {drop}: {int((P != ref).sum())} wrong P elements")


RACECHECK_OPTIONS = [
    ["--racecheck-report", "hazard", "--print-limit", "0"],
    ["--racecheck-report", "hazard"],
    [],
]


def run_racecheck(kernel, width, T, drop, seed, out_txt, timeout):
    """Racecheck the plain kernel's launch; the report goes to ``out_txt``, parsed from there."""
    from vizmm.analysis import racecheck as rc

    script = [
        sys.executable,
        os.path.abspath(__file__),
        "plain",
        kernel,
        str(width),
        str(T),
        drop_name(drop),
        str(seed),
    ]
    for opts in RACECHECK_OPTIONS:
        t0 = time.perf_counter()
        with open(out_txt, "w") as f:
            f.write(" ".join(["compute-sanitizer --tool racecheck", *opts]) + " <plain launch>\n")
            f.flush()
            try:
                if shutil.which("compute-sanitizer") is None:
                    return None, None, 0.0, "no compute-sanitizer"
                proc = subprocess.run(
                    ["compute-sanitizer", "--tool", "racecheck", *opts, *script],
                    stdout=f,
                    stderr=subprocess.STDOUT,
                    timeout=timeout,
                )
                code = proc.returncode
            except subprocess.TimeoutExpired:
                code = "timeout"
        with open(out_txt, errors="replace") as f:
            head = f.read(3000)
        if "nrecognized" in head or "nknown option" in head:
            continue
        with open(out_txt, errors="replace") as f:
            parsed = rc.parse(f)
        return parsed, opts, round(time.perf_counter() - t0, 2), code
    return None, None, 0.0, None


def lab_main(outdir, deadline_s=330.0):
    """Record every case on the GPU, racecheck it, write the JSON summary (see the module doc)."""
    import vizmm
    from vizmm.analysis import hazards as hz
    from vizmm.analysis import racecheck as rc

    os.makedirs(os.path.join(outdir, "traces"), exist_ok=True)
    os.makedirs(os.path.join(outdir, "racecheck"), exist_ok=True)
    versions = {}
    try:
        versions["compute-sanitizer"] = (
            subprocess.run(["compute-sanitizer", "--version"], capture_output=True, text=True)
            .stdout.strip()
            .splitlines()[-1]
        )
    except (OSError, IndexError):
        versions["compute-sanitizer"] = None
    try:
        versions["driver"] = subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
            capture_output=True,
            text=True,
        ).stdout.strip()
    except OSError:
        versions["driver"] = None
    results = []
    for kernel, width, T, window in CASES:
        for drop in DROPS:
            name = f"gpu-barrier-{kernel}-{width}-t{T}-drop{drop_name(drop).replace(',', '')}"
            if not drop:
                name = f"gpu-barrier-{kernel}-{width}-t{T}-both"
            t0 = time.perf_counter()
            trace = vizmm.record(
                width=width,
                tile_width=T,
                kernel=kernel,
                backend=BACKEND,
                drop_barrier=drop or None,
                seed=SEED,
                window=window,
                reads=True,
                quiet=True,
            )
            rec_s = round(time.perf_counter() - t0, 2)
            trace.save(os.path.join(outdir, "traces", name + ".vizmm"))
            rep = hz.analyse(trace)
            M, N = trace.M.astype(np.float64), trace.N.astype(np.float64)
            wrong_all = int((trace.P != (M @ N)).sum())
            # The recorded reads explain each stored P element of the detailed blocks.
            prod = trace.read_values[..., 0].astype(np.float64) * trace.read_values[..., 1]
            sums = prod.sum(axis=(1, 4))  # (nd, ty, tx)
            explained, checked = 0, 0
            for s, (by, bx) in enumerate(trace.detail_blocks.tolist()):
                for ty in range(T):
                    for tx in range(T):
                        r, c = by * T + ty, bx * T + tx
                        if r < width and c < width and trace.p_write[s, ty, tx] == 1:
                            checked += 1
                            p = float(trace.P[r, c])
                            ok = np.isclose(sums[s, ty, tx], p, rtol=1e-5, atol=1e-3) or (
                                np.isnan(p) and np.isnan(sums[s, ty, tx])
                            )
                            explained += bool(ok)
            left = deadline_s - (time.perf_counter() - START)
            parsed, opts, rc_s, rc_code = (None, None, 0.0, "skipped: out of time")
            if left > 20:
                parsed, opts, rc_s, rc_code = run_racecheck(
                    kernel,
                    width,
                    T,
                    drop,
                    SEED,
                    os.path.join(outdir, "racecheck", name + ".txt"),
                    timeout=min(90, left),
                )
            if parsed is None:
                parsed = rc.parse("")
            detailed = {tuple(b) for b in trace.detail_blocks.tolist()}
            rc_counts = rc.summary_counts(parsed)
            rc_detailed = {
                kind: {
                    b: n for b, n in per.items() if tuple(int(v) for v in b.split(",")) in detailed
                }
                for kind, per in rc_counts.items()
            }
            viz = {}
            for row in rep.hazards:
                b = f"{row['block'][0]},{row['block'][1]}"
                viz.setdefault(str(row["kind"]), {}).setdefault(b, 0)
                viz[str(row["kind"])][b] += 1
            res = {
                "trace": name,
                "kernel": kernel,
                "width": width,
                "tile_width": T,
                "drop_barrier": list(drop),
                "window": window,
                "seed": SEED,
                "record_s": rec_s,
                "wrong_p": wrong_all,
                "wrong_p_detailed": int(rep.wrong_p.sum()),
                "wrong_reads": len(rep.wrong_reads),
                "reads_explain_p": f"{explained}/{checked}",
                "vizmm_hazards": viz,
                "racecheck_options": opts,
                "racecheck_s": rc_s,
                "racecheck_exit": rc_code,
                "racecheck_summary": parsed["summary"],
                "racecheck_analysis_lines": parsed["analysis_lines"],
                "racecheck_hazards": rc_counts,
                "racecheck_hazards_in_detailed_blocks": rc_detailed,
                "racecheck_slots": _slots(parsed, T),
                "racecheck_first": [{**h, "block": list(h["block"])} for h in parsed["first"][:12]],
                "vizmm_slots": _viz_slots(rep.hazards),
            }
            results.append(res)
            _write(outdir, results, versions)
            print(
                json.dumps(
                    {
                        k: res[k]
                        for k in (
                            "trace",
                            "wrong_p",
                            "wrong_reads",
                            "reads_explain_p",
                            "racecheck_summary",
                        )
                    }
                ),
                flush=True,
            )
    _write(outdir, results, versions)


def _slots(parsed, T):
    """Racecheck's hazards as ``{kind: number of distinct (block, shared byte offset)}``."""
    out = {}
    for kind, _block, _addr in parsed["addresses"]:
        out[kind] = out.get(kind, 0) + 1
    return out


def _viz_slots(rows):
    """The hazards vizmm finds, as ``{kind: number of distinct (block, array, slot)}``."""
    seen = {}
    for row in rows:
        key = (tuple(row["block"]), str(row["array"]), tuple(row["slot"]))
        seen.setdefault(str(row["kind"]), set()).add(key)
    return {kind: len(v) for kind, v in sorted(seen.items())}


def _write(outdir, results, versions):
    from numba import cuda

    dev = cuda.get_current_device()
    name = getattr(dev, "name", BACKEND)
    doc = {
        "what": "vizmm barrier lab on a GPU: recordings and compute-sanitizer racecheck",
        "device": name.decode() if isinstance(name, bytes) else str(name),
        "compute_capability": list(getattr(dev, "compute_capability", ())),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "versions": {
            **versions,
            **{d: importlib.metadata.version(d) for d in ("numpy", "numba", "numba-cuda")},
            "platform": platform.platform(),
            "python": sys.version.split()[0],
        },
        "cases": results,
    }
    with open(os.path.join(outdir, "barrier_lab_gpu.json"), "w") as f:
        json.dump(doc, f, indent=1)


START = time.perf_counter()


if __name__ == "__main__":
    if sys.argv[1] == "plain":
        kernel, width, T, drop, seed = sys.argv[2:7]
        plain_main(
            kernel,
            int(width),
            int(T),
            () if drop == "-" else tuple(int(v) for v in drop.split(",")),
            int(seed),
        )
    else:
        lab_main(sys.argv[1])
