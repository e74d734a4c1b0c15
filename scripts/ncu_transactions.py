"""Nsight Compute against vizmm: memory transactions of the tiles, counted both ways.

Run on a machine with an NVIDIA GPU and Nsight Compute (``ncu``):

    python scripts/ncu_transactions.py OUTDIR

1. ``ncu`` profiles the *plain* kernels (as printed, no records) for each
   launch of :data:`LAUNCHES`: global-load requests and sectors, shared-load
   and shared-store instructions, wavefronts and bank conflicts;
2. the same launches are recorded with the *instrumented* kernels on the GPU
   and ``vizmm.analysis.transactions.memory_transactions`` counts the same
   quantities from the records;
3. the SASS of each plain kernel is read (``nvdisasm`` through numba) for the
   widths of its shared loads.

Writes ``ncu_transactions.json`` (device, date, versions, both counts per
launch) and ``ncu_raw.csv`` to OUTDIR and prints a table. ``python
scripts/ncu_transactions.py --launch`` is what ``ncu`` runs: it launches each
plain kernel once and checks P.
"""

from __future__ import annotations

import csv
import datetime
import io
import json
import os
import re
import shutil
import subprocess
import sys

os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "0")

# (kernel, Width, TILE_WIDTH): square launches, every block recorded per thread.
LAUNCHES = [
    ("tiled", 64, 32),
    ("tiled", 64, 16),
    ("tiled", 64, 8),
    ("boundary", 64, 32),
    ("boundary", 50, 16),
    ("uncoalesced", 64, 32),
    ("uncoalesced", 64, 16),
    ("uncoalesced", 50, 16),
    ("conflict", 64, 32),
    ("conflict", 64, 16),
    ("conflict", 64, 8),
    ("padded", 64, 32),
    ("padded", 64, 16),
    ("padded", 50, 16),
]

METRICS = {
    "global_ld_requests": "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
    "global_ld_sectors": "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
    "global_ld_instructions": "smsp__inst_executed_op_global_ld.sum",
    "shared_ld_requests": "smsp__inst_executed_op_shared_ld.sum",
    "shared_ld_wavefronts": "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
    "shared_ld_bank_conflicts": "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
    "shared_st_requests": "smsp__inst_executed_op_shared_st.sum",
    "shared_st_wavefronts": "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum",
    "shared_st_bank_conflicts": "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
}


def log(*a):
    """Print at once (the output is read while the run goes on)."""
    print(*a, flush=True)


def inputs(W):
    """M and N (W x W, float32 integers 0..9, seeded by W): every sum is exact."""
    import numpy as np

    rng = np.random.default_rng(W)
    M = rng.integers(0, 10, (W, W)).astype(np.float32)
    N = rng.integers(0, 10, (W, W)).astype(np.float32)
    return M, N


def launch_all():
    """Launch each plain kernel once (what ``ncu`` profiles) and check P."""
    import importlib

    import numpy as np
    from numba import cuda

    import vizmm_kernels as K

    sass = {}
    for kernel, W, T in LAUNCHES:
        kern = importlib.import_module(f"vizmm_kernels.{kernel}").make_plain(T)
        M, N = inputs(W)
        dM, dN = cuda.to_device(M.ravel()), cuda.to_device(N.ravel())
        dP = cuda.device_array(W * W, np.float32)
        (gx, gy), block = K.grid_dims(W, W, T)
        kern[(gx, gy), block](dM, dN, dP, np.int32(W))
        cuda.synchronize()
        ok = bool(np.array_equal(dP.copy_to_host().reshape(W, W), M.astype(np.float64) @ N))
        try:
            text = next(iter(kern.inspect_sass().values()))
            ops = sorted(set(re.findall(r"\b(LDS(?:\.\w+)*|STS(?:\.\w+)*|LDG(?:\.\w+)*)", text)))
            counts = {op: len(re.findall(rf"\b{re.escape(op)}\b(?!\.)", text)) for op in ops}
        except Exception as exc:  # nvdisasm missing: say so, the counts still stand
            counts = {"error": f"{type(exc).__name__}: {exc}"[:200]}
        sass[f"{kernel}/{W}/{T}"] = {"p_exact": ok, "sass_memory_ops": counts}
        log(f"launched {kernel} W={W} T={T}: P exact {ok}")
    print("LAUNCH-RESULTS " + json.dumps(sass), flush=True)


def available_metrics(ncu):
    """The metric base names this ``ncu`` knows on this GPU (empty when it cannot say)."""
    try:
        out = subprocess.run([ncu, "--query-metrics"], capture_output=True, text=True, timeout=120)
        return set(re.findall(r"^(\w+)", out.stdout, re.M))
    except Exception:
        return set()


def _profile(ncu, names, outdir):
    cmd = [
        ncu, "--csv", "--print-units", "base", "--kernel-name", "regex:matrixMulKernel",
        "--metrics", ",".join(names.values()), sys.executable, __file__, "--launch",
    ]  # fmt: skip
    log("running:", " ".join(cmd[:8]), "...")
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    with open(os.path.join(outdir, "ncu_raw.csv"), "w") as f:
        f.write(proc.stdout)
    log(proc.stderr[-1500:])
    return proc


def run_ncu(outdir):
    """Profile :func:`launch_all` under ``ncu``; the metrics of each launch by its key."""
    ncu = shutil.which("ncu")
    if ncu is None:
        raise SystemExit("ncu (Nsight Compute) is not on PATH")
    names = dict(METRICS)
    proc = _profile(ncu, names, outdir)
    missing = []
    if proc.returncode != 0 or '"ID"' not in proc.stdout:
        log(proc.stdout[-3000:])
        known = available_metrics(ncu)
        names = {k: m for k, m in METRICS.items() if m.rsplit(".", 1)[0] in known}
        missing = sorted(set(METRICS) - set(names))
        log("retrying without", missing)
        proc = _profile(ncu, names, outdir)
    if proc.returncode != 0:
        log(proc.stdout[-3000:])
        raise SystemExit(f"ncu failed with code {proc.returncode}")
    launch = {}
    rows = []
    for line in proc.stdout.splitlines():
        if line.startswith("LAUNCH-RESULTS "):
            launch = json.loads(line[len("LAUNCH-RESULTS ") :])
        elif line.startswith('"'):
            rows.append(line)
    table = list(csv.DictReader(io.StringIO("\n".join(rows))))
    by_id: dict[int, dict] = {}
    inverse = {m: k for k, m in names.items()}
    for r in table:
        i = int(r["ID"])
        name = inverse.get(r["Metric Name"])
        if name is not None:
            by_id.setdefault(i, {})[name] = float(r["Metric Value"].replace(",", ""))
    ids = sorted(by_id)
    if len(ids) != len(LAUNCHES):
        raise SystemExit(f"expected {len(LAUNCHES)} profiled launches, ncu reported {len(ids)}")
    ncu_version = subprocess.run([ncu, "--version"], capture_output=True, text=True).stdout
    return (
        {f"{k}/{W}/{T}": by_id[i] for (k, W, T), i in zip(LAUNCHES, ids, strict=True)},
        launch,
        missing,
        ncu_version.strip().splitlines()[-1],
    )


def vizmm_counts(backend):
    """Record each launch with the instrumented kernels and count from the records."""
    import vizmm
    from vizmm.analysis.transactions import memory_transactions

    out = {}
    for kernel, W, T in LAUNCHES:
        M, N = inputs(W)
        trace = vizmm.record(M=M, N=N, tile_width=T, kernel=kernel, backend=backend, quiet=True)
        mt = memory_transactions(trace)
        out[f"{kernel}/{W}/{T}"] = mt.counters()
        log(f"vizmm {kernel} W={W} T={T}: {mt.sectors_per_request:.2f} sectors/request, "
            f"{mt.bank_conflicts_per_request:.2f} bank conflicts/request")  # fmt: skip
    return out


def main():
    """Profile, record, compare; write the JSON and print the table."""
    if "--launch" in sys.argv:
        launch_all()
        return
    outdir = sys.argv[1]
    os.makedirs(outdir, exist_ok=True)
    if "--vizmm-only" in sys.argv:  # no GPU: the records' side from the simulator
        print(json.dumps(vizmm_counts("simulator"), indent=1))
        return
    from numba import cuda

    import vizmm

    ncu, launch, missing, ncu_version = run_ncu(outdir)
    ours = vizmm_counts("gpu")
    dev = cuda.get_current_device()
    result = {
        "what": "Nsight Compute on the plain kernels vs vizmm's counts from the GPU records",
        "device": dev.name.decode() if isinstance(dev.name, bytes) else str(dev.name),
        "compute_capability": list(dev.compute_capability),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "versions": {
            "ncu": ncu_version,
            "numba": __import__("numba").__version__,
            "numba_cuda": __import__("importlib.metadata").metadata.version("numba-cuda"),
            "numpy": __import__("numpy").__version__,
            "vizmm": vizmm.__version__,
        },
        "metrics": METRICS,
        "metrics_missing": missing,
        "launches": [
            {
                "kernel": k,
                "width": W,
                "tile_width": T,
                "ncu": ncu[f"{k}/{W}/{T}"],
                "vizmm": ours[f"{k}/{W}/{T}"],
                **launch.get(f"{k}/{W}/{T}", {}),
            }
            for k, W, T in LAUNCHES
        ],  # fmt: skip
    }
    with open(os.path.join(outdir, "ncu_transactions.json"), "w") as f:
        json.dump(result, f, indent=1)
    keys = ("global_ld_requests", "global_ld_sectors", "shared_ld_requests",
            "shared_ld_bank_conflicts", "shared_st_bank_conflicts")  # fmt: skip
    log("launch               " + "  ".join(f"{k:>24}" for k in keys))
    for e in result["launches"]:
        cells = [
            f"{e['ncu'].get(k, float('nan')):>11.0f} / {e['vizmm'].get(k, 0):<10}" for k in keys
        ]
        log(f"{e['kernel']:>11} {e['width']:>3} T{e['tile_width']:<3}  " + "  ".join(cells))


if __name__ == "__main__":
    main()
