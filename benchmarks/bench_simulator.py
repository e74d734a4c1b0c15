"""Simulator cost of recording: the instrumented kernel against the plain one, side by side.

Runs in Numba's CUDA simulator (``NUMBA_ENABLE_CUDASIM=1``), all in one process:

* plain kernel (Fig. 5.13), simulator's own launch, interpreter defaults;
* instrumented kernel, simulator's own launch, interpreter defaults
  (the cost of the recording itself);
* the plain kernel at vizmm's switch interval;
* ``vizmm.record`` (instrumented kernel, driven block by block with vizmm's
  switch interval), which is what users run.

Targets: the recording costs under 30% more than the plain kernel at the same
settings, and ``vizmm.record`` runs faster than a plain simulator launch at
the interpreter's default settings.

Usage: ``python benchmarks/bench_simulator.py [WIDTH] [TILE_WIDTH] [REPEATS]``
"""

import os
import statistics
import sys
import time

os.environ["NUMBA_ENABLE_CUDASIM"] = "1"

import numpy as np  # noqa: E402

import vizmm  # noqa: E402
import vizmm_kernels as K  # noqa: E402

rec_mod = sys.modules["vizmm.record.simulator"]


def timed(fn, repeats):
    out = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return statistics.median(out), out


def main(argv):
    W = int(argv[0]) if argv else 64
    T = int(argv[1]) if len(argv) > 1 else 16
    reps = int(argv[2]) if len(argv) > 2 else 3
    rng = np.random.default_rng(0)
    M = rng.integers(0, 10, W * W).astype(np.float32)
    N = rng.integers(0, 10, W * W).astype(np.float32)
    grid, block = K.grid_dims(W, W, T)
    plain = K.get_kernel("boundary", T)

    def run_plain():
        P = np.zeros(W * W, np.float32)
        plain[grid, block](M, N, P, W)

    def run_record():
        return vizmm.record(
            M=M.reshape(W, W),
            N=N.reshape(W, W),
            tile_width=T,
            kernel="boundary",
            backend="simulator",
            progress=False,
            quiet=True,
        )

    default_interval = sys.getswitchinterval()
    tuned = rec_mod.SIM_SWITCH_INTERVAL
    p, _ = timed(run_plain, reps)
    sys.setswitchinterval(tuned)
    p_tuned, _ = timed(run_plain, reps)
    sys.setswitchinterval(default_interval)
    rec_mod.SIM_SWITCH_INTERVAL = default_interval
    i_default, _ = timed(run_record, reps)  # at the default interval
    rec_mod.SIM_SWITCH_INTERVAL = tuned
    r, _ = timed(run_record, reps)
    print(f"simulator, Width {W}, TILE_WIDTH {T}, boundary kernel, median of {reps}")
    print(f"  plain kernel, default switch interval ({default_interval * 1e3:.1f} ms): {p:7.2f} s")
    print(
        f"  instrumented, default switch interval:          {i_default:7.2f} s  "
        f"ratio {i_default / p:.2f}"
    )
    print(f"  plain kernel, switch interval {tuned * 1e3:.2f} ms:          {p_tuned:7.2f} s")
    print(
        f"  vizmm.record (switch interval {tuned * 1e3:.2f} ms):       {r:7.2f} s  "
        f"ratio {r / p:.2f} to plain at default, {r / p_tuned:.2f} to plain at the same "
        "interval (the recording's own cost)"
    )
    est = vizmm.estimate(W, W, W, T).simulator_seconds
    print(f"  estimate shown before recording:                {est:7.2f} s")


if __name__ == "__main__":
    main(sys.argv[1:])
