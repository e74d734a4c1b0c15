"""The barrier lab on a real GPU: record each variant, run racecheck on the same launches.

Usage (on a machine with an NVIDIA GPU, numba-cuda and compute-sanitizer)::

    python scripts/gpu_barrier_lab.py OUTDIR

For every case (kernel, Width, TILE_WIDTH, barriers removed) it

1. starts the *plain* kernel on the same inputs under ``compute-sanitizer
   --tool racecheck --racecheck-report hazard`` (this script, in its
   ``plain`` mode; all cases at once, each in its own process), the report
   going to ``OUTDIR/racecheck/*.txt``;
2. records the instrumented kernel on the GPU with ``vizmm.record`` and saves
   the trace (``OUTDIR/traces/*.vizmm``);
3. writes ``OUTDIR/barrier_lab_gpu.json``: per case, vizmm's hazards by kind
   and block, racecheck's (read from its report by
   :mod:`vizmm.analysis.racecheck`), the (block, array, slot) each names,
   the wrong reads and wrong P elements of the recording, and whether the
   recorded reads explain P.

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

from vizmm.analysis import racecheck

# (kernel, Width, TILE_WIDTH, window or None). Every case runs with barrier 1,
# barrier 2 and both removed, and with both kept (the control).
CASES = [
    ("tiled", 4, 2, None),  # Fig. 5.8's example: one warp per block
    ("boundary", 5, 2, None),  # Fig. 5.13 with zero-fills
    ("tiled", 32, 16, None),  # 4 blocks of 8 warps
    ("tiled", 64, 16, None),  # 16 blocks of 8 warps
    ("boundary", 100, 16, [(0, 0), (3, 5), (6, 6)]),  # larger: 49 blocks, three recorded
]
DROPS = [(1,), (2,), (1, 2), ()]
SEED = 5
RACECHECK = list(racecheck.COMMAND)
# A dry run of the script's logic without a GPU: VIZMM_LAB_BACKEND=simulator.
BACKEND = os.environ.get("VIZMM_LAB_BACKEND", "gpu")
START = time.perf_counter()


def drop_name(drop) -> str:
    """``(1, 2)`` -> ``'1,2'``; ``()`` -> ``'-'``."""
    return ",".join(map(str, drop)) or "-"


def case_name(kernel, width, T, drop) -> str:
    """File name of a case: ``gpu-barrier-tiled-64-t16-drop1`` (``-both``: none removed)."""
    tail = "drop" + drop_name(drop).replace(",", "") if drop else "both"
    return f"gpu-barrier-{kernel}-{width}-t{T}-{tail}"


def plain_main(kernel, width, T, drop, seed):
    """Launch the plain kernel once on vizmm's seeded inputs; print wrong P elements."""
    import vizmm_kernels as K
    from vizmm.trace import seeded_inputs
    from vizmm_kernels._target import cuda  # the compiler the kernels were built with

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


def start_racecheck(kernel, width, T, drop, out_txt):
    """Start racecheck on the plain launch in the background; its report goes to ``out_txt``."""
    if shutil.which("compute-sanitizer") is None:
        return None
    script = [sys.executable, os.path.abspath(__file__), "plain", kernel, str(width), str(T)]
    f = open(out_txt, "w")  # noqa: SIM115 - closed by finish_racecheck
    f.write(" ".join(RACECHECK) + " <plain launch>\n")
    f.flush()
    proc = subprocess.Popen(
        [*RACECHECK, *script, drop_name(drop), str(SEED)], stdout=f, stderr=subprocess.STDOUT
    )
    return proc, f, time.perf_counter()


def finish_racecheck(job, deadline):
    """Wait for a racecheck job until ``deadline`` (perf_counter s); ``(exit, seconds)``."""
    if job is None:
        return "no compute-sanitizer", 0.0
    proc, f, t0 = job
    try:
        code = proc.wait(timeout=max(1.0, deadline - time.perf_counter()))
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        code = "timeout (report cut short)"
    f.close()
    return code, round(time.perf_counter() - t0, 1)


def _viz_blocks(rows):
    out = {}
    for row in rows:
        out.setdefault(str(row["kind"]), {}).setdefault(f"{row['block'][0]},{row['block'][1]}", 0)
        out[str(row["kind"])][f"{row['block'][0]},{row['block'][1]}"] += 1
    return {k: dict(sorted(v.items())) for k, v in sorted(out.items())}


def _compare(rows, parsed, T, detailed):
    """Racecheck's (block, array, slot) against vizmm's, in the blocks vizmm analysed."""
    from vizmm.analysis import racecheck as rc

    viz = {}
    for row in rows:
        key = (tuple(int(v) for v in row["block"]), str(row["array"]), tuple(row["slot"]))
        viz.setdefault(key, set()).add(str(row["kind"]))
    rc_slots, unmapped, outside = {}, 0, 0
    for kind, block, address in parsed["addresses"]:
        where = rc.slot_of(address, T)
        if where is None:
            unmapped += 1
            continue
        key = (block, where[0], tuple(where[1]))
        if block not in detailed:
            outside += 1
            continue
        rc_slots.setdefault(key, set()).add(kind)
    missing = [k for k in rc_slots if k not in viz]
    return {
        "vizmm_slots": len(viz),
        "racecheck_slots": len(rc_slots),
        "racecheck_slots_not_in_vizmm": len(missing),
        "vizmm_slots_not_in_racecheck": len([k for k in viz if k not in rc_slots]),
        "racecheck_addresses_unmapped": unmapped,
        "racecheck_addresses_outside_recorded_blocks": outside,
    }


def lab_main(outdir, deadline_s=320.0):
    """Record every case on the GPU, racecheck it, write the JSON summary (see the module doc)."""
    import vizmm
    from vizmm.analysis import hazards as hz
    from vizmm.analysis import racecheck as rc

    os.makedirs(os.path.join(outdir, "traces"), exist_ok=True)
    os.makedirs(os.path.join(outdir, "racecheck"), exist_ok=True)
    versions = _tool_versions()
    cases = [(*c, d) for c in CASES for d in DROPS]
    jobs = {}
    for kernel, width, T, _window, drop in cases:
        name = case_name(kernel, width, T, drop)
        txt = os.path.join(outdir, "racecheck", name + ".txt")
        jobs[name] = start_racecheck(kernel, width, T, drop, txt)
    results = []
    for kernel, width, T, window, drop in cases:
        name = case_name(kernel, width, T, drop)
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
        ref = trace.M.astype(np.float64) @ trace.N.astype(np.float64)
        results.append(
            {
                "trace": name,
                "kernel": kernel,
                "width": width,
                "tile_width": T,
                "drop_barrier": list(drop),
                "window": window,
                "seed": SEED,
                "record_s": rec_s,
                "wrong_p": int((trace.P != ref).sum()),
                "wrong_p_recorded_blocks": int(rep.wrong_p.sum()),
                "wrong_reads": len(rep.wrong_reads),
                "reads": int(trace.shared_reads.size),
                "reads_explain_p": _explained(trace),
                "vizmm_hazards": _viz_blocks(rep.hazards),
                "_rows": rep.hazards,
                "_detailed": {tuple(b) for b in trace.detail_blocks.tolist()},
            }
        )
        print(name, "recorded", flush=True)
    for res in results:
        name = res["trace"]
        code, secs = finish_racecheck(jobs[name], START + deadline_s)
        txt = os.path.join(outdir, "racecheck", name + ".txt")
        parsed = rc.parse("")
        if os.path.exists(txt):
            with open(txt, errors="replace") as f:
                parsed = rc.parse(f)
        rows, detailed = res.pop("_rows"), res.pop("_detailed")
        res.update(
            {
                "racecheck_exit": code,
                "racecheck_s": secs,
                "racecheck_summary": parsed["summary"],
                "racecheck_reports": sum(sum(v.values()) for v in parsed["counts"].values()),
                "racecheck_warp_level": parsed["warp_level"],
                "racecheck_hazards": rc.summary_counts(parsed),
                "slots": _compare(rows, parsed, res["tile_width"], detailed),
                "racecheck_first": [{**h, "block": list(h["block"])} for h in parsed["first"][:4]],
            }
        )
        print(
            json.dumps(
                {
                    k: res[k]
                    for k in (
                        "trace",
                        "wrong_p",
                        "wrong_reads",
                        "racecheck_exit",
                        "racecheck_summary",
                        "slots",
                    )
                }
            ),
            flush=True,
        )
    _write(outdir, results, versions)


def _explained(trace) -> str:
    """How many stored P elements equal the sum of the recorded products (GPU: FMA rounding)."""
    T = trace.tile_width
    j, _, l = trace.shape
    prod = trace.read_values[..., 0].astype(np.float64) * trace.read_values[..., 1]
    sums = prod.sum(axis=(1, 4))  # (nd, ty, tx)
    ok = checked = 0
    for s, (by, bx) in enumerate(trace.detail_blocks.tolist()):
        for ty in range(T):
            for tx in range(T):
                r, c = by * T + ty, bx * T + tx
                if r < j and c < l and trace.p_write[s, ty, tx] == 1:
                    checked += 1
                    ok += bool(np.isclose(sums[s, ty, tx], trace.P[r, c], rtol=1e-6, atol=1e-3))
    return f"{ok}/{checked}"


def _tool_versions():
    out = {}
    for key, cmd in (
        ("compute-sanitizer", ["compute-sanitizer", "--version"]),
        ("driver", ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"]),
    ):
        try:
            lines = subprocess.run(cmd, capture_output=True, text=True).stdout.strip().splitlines()
            out[key] = lines[-1] if lines else None
        except OSError:
            out[key] = None
    return out


def _write(outdir, results, versions):
    from vizmm_kernels._target import cuda

    dev = cuda.get_current_device()
    name = getattr(dev, "name", BACKEND)
    doc = {
        "what": "vizmm barrier lab on a GPU: recordings and compute-sanitizer racecheck",
        "device": name.decode() if isinstance(name, bytes) else str(name),
        "compute_capability": list(getattr(dev, "compute_capability", ())),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "racecheck_command": " ".join(RACECHECK),
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
