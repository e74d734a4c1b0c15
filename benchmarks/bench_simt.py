"""vizmm's own simulator against Numba's, side by side in one run; and the large recording.

Run from the repository root::

    .venv/bin/python benchmarks/bench_simt.py                # the issue's targets
    .venv/bin/python benchmarks/bench_simt.py --repeats 5 --skip-large

Prints, each measured here and now, in fresh processes so that neither
simulator finds the other's work done:

1. Fig. 5.13 (``boundary``) at 64 x 64, TILE_WIDTH 16:
   * Numba's CUDA simulator running the *plain* kernel (no recording at all),
     at the interpreter's default switch interval (what a student gets from
     ``NUMBA_ENABLE_CUDASIM=1``);
   * ``vizmm.record(backend="simulator")``: vizmm's simulator recording every
     access of every block;
   * ``vizmm.record(backend="numba-sim")``: the same recording in Numba's.
   The ratio Numba plain / vizmm record (target >= 30).
2. 256 x 256, TILE_WIDTH 16, recorded in full (every block in detail) in
   vizmm's simulator: wall time and the process's peak memory (targets
   <= 20 s, <= 2 GiB).

The medians of ``--repeats`` runs; the processes' start-up is not timed (each
child times its own work).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

PLAIN = """
import os, time, sys
os.environ["NUMBA_ENABLE_CUDASIM"] = "1"
import numpy as np
import vizmm_kernels as K
W, T = {w}, {t}
rng = np.random.default_rng(0)
M = rng.integers(0, 10, W * W).astype(np.float32)
N = rng.integers(0, 10, W * W).astype(np.float32)
P = np.zeros(W * W, np.float32)
grid, block = K.grid_dims(W, W, T)
kern = K.get_kernel("boundary", T)
t0 = time.perf_counter()
kern[grid, block](M, N, P, W)
dt = time.perf_counter() - t0
assert (P.reshape(W, W) == M.reshape(W, W).astype(np.float64) @ N.reshape(W, W)).all()
print(dt)
"""

RECORD = """
import os, time, resource
{env}
import vizmm
W, T = {w}, {t}
vizmm.record(width=4, tile_width=2, kernel="boundary", backend="{backend}", quiet=True)
t0 = time.perf_counter()
tr = vizmm.record(width=W, tile_width=T, kernel="boundary", backend="{backend}", quiet=True,
                  window={window})
dt = time.perf_counter() - t0
assert (tr.P == tr.M.astype("float64") @ tr.N).all()
print(dt, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024, tr.meta["n_detail"])
"""


def _child(code: str, env: dict | None = None) -> list[str]:
    proc = subprocess.run(
        [sys.executable, "-P", "-c", code],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=3600,
    )
    if proc.returncode != 0:
        raise SystemExit(proc.stderr[-2000:])
    return proc.stdout.split()


def _record(w, t, backend, window="None"):
    env = (
        'os.environ["VIZMM_KERNELS_TARGET"] = "none"'
        if backend == "simulator"
        else 'os.environ["NUMBA_ENABLE_CUDASIM"] = "1"'
    )
    out = _child(RECORD.format(w=w, t=t, backend=backend, env=env, window=window))
    return float(out[0]), int(out[1]), int(out[2])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--width", type=int, default=64)
    ap.add_argument("--tile-width", type=int, default=16)
    ap.add_argument("--large", type=int, default=256)
    ap.add_argument("--skip-large", action="store_true")
    ap.add_argument("--json", help="also write the numbers here")
    args = ap.parse_args(argv)
    w, t, n = args.width, args.tile_width, args.repeats
    plain, own, numba = [], [], []
    for _ in range(n):  # in turns, so that a busy moment hits all three alike
        plain.append(float(_child(PLAIN.format(w=w, t=t))[0]))
        own.append(_record(w, t, "simulator")[0])
        numba.append(_record(w, t, "numba-sim")[0])
    p, o, b = (statistics.median(x) for x in (plain, own, numba))
    out = {
        "fig513": {"width": w, "tile_width": t, "numba_plain_s": p, "vizmm_record_s": o,
                   "numba_record_s": b, "speedup_vs_numba_plain": p / o,
                   "speedup_vs_numba_record": b / o},
    }  # fmt: skip
    print(f"Fig. 5.13, {w} x {w}, TILE_WIDTH {t} (medians of {n}):")
    print(f"  Numba's simulator, the plain kernel   {p:8.3f} s")
    print(f"  Numba's simulator, vizmm.record       {b:8.3f} s")
    print(f"  vizmm's simulator, vizmm.record       {o:8.3f} s")
    print(f"  ratio Numba plain / vizmm record      {p / o:8.1f}x   (target >= 30x)")
    print(f"  ratio Numba record / vizmm record     {b / o:8.1f}x")
    if not args.skip_large:
        big = args.large
        secs, peak, nd = _record(big, t, "simulator")
        out["large"] = {"width": big, "tile_width": t, "seconds": secs, "peak_bytes": peak,
                        "detail_blocks": nd}  # fmt: skip
        print(f"{big} x {big}, TILE_WIDTH {t}, every block in detail ({nd} blocks):")
        print(f"  vizmm's simulator                     {secs:8.2f} s   (target <= 20 s)")
        print(f"  peak memory of the process            {peak / 2**30:8.2f} GiB (target <= 2 GiB)")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(out, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
