"""The instrumenter's costs, side by side in one process (Numba's CUDA simulator).

* instrumenting each book kernel (source to a compiled simulator kernel:
  parse, rewrite, exec, ``cuda.jit``), uncached; target <= 2 s;
* Width x Width, TILE_WIDTH T, Fig. 5.13 (boundary): the plain kernel at
  vizmm's switch interval, and ``vizmm.record`` (the plain kernel through
  the instrumenter), without and with the k-loop reads logged (the barrier
  lab's ``reads=True``); target: recording <= 1.2x plain.

Usage: ``python benchmarks/bench_instrument.py [WIDTH] [TILE_WIDTH] [REPEATS]``
"""

import os
import statistics
import sys
import time

os.environ["NUMBA_ENABLE_CUDASIM"] = "1"

import numpy as np  # noqa: E402

import vizmm  # noqa: E402
import vizmm_kernels as K  # noqa: E402
from vizmm.record import instrument as I  # noqa: E402
from vizmm.record.simulator import SIM_SWITCH_INTERVAL  # noqa: E402


def interleaved(fns, repeats):
    """Median wall and CPU seconds of each of ``fns``, run in turn ``repeats`` times.

    CPU: this process's user + system time, every thread's (the simulator runs
    one Python thread per CUDA thread); less moved than the wall clock by other
    programs on a shared machine.
    """
    wall = [[] for _ in fns]
    cpu = [[] for _ in fns]
    for _ in range(repeats):
        for w, c, fn in zip(wall, cpu, fns, strict=True):
            t0, c0 = time.perf_counter(), time.process_time()
            fn()
            w.append(time.perf_counter() - t0)
            c.append(time.process_time() - c0)
    return [statistics.median(t) for t in wall], [statistics.median(t) for t in cpu]


def main(argv):
    W = int(argv[0]) if argv else 64
    T = int(argv[1]) if len(argv) > 1 else 16
    reps = int(argv[2]) if len(argv) > 2 else 3
    print("instrumenting (uncached), seconds:")
    for name in K.KERNEL_NAMES:
        plain = K.get_kernel(name, T)
        I._CACHE.clear()
        t0 = time.perf_counter()
        I.instrument(plain, dynamic_shared=K.dynamic_shared_bytes(name, T))
        print(f"  {name:12s} {time.perf_counter() - t0:6.3f}")
    rng = np.random.default_rng(0)
    M = rng.integers(0, 10, (W, W)).astype(np.float32)
    N = rng.integers(0, 10, (W, W)).astype(np.float32)
    grid, block = K.grid_dims(W, W, T)
    plain = K.get_kernel("boundary", T)

    def run_plain():
        old = sys.getswitchinterval()
        sys.setswitchinterval(SIM_SWITCH_INTERVAL)
        try:
            plain[grid, block](M.ravel(), N.ravel(), np.zeros(W * W, np.float32), W)
        finally:
            sys.setswitchinterval(old)

    def run_record(reads):
        return lambda: vizmm.record(
            M=M,
            N=N,
            tile_width=T,
            kernel="boundary",
            backend="simulator",
            progress=False,
            quiet=True,
            reads=reads,
        )

    # interleaved, so that a change in the machine's load falls on all three alike
    (p, r, i), (pc, rc, ic) = interleaved([run_plain, run_record(False), run_record(True)], reps)
    print(f"simulator, Width {W}, TILE_WIDTH {T}, boundary kernel, median of {reps}, interleaved")
    print(f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at the end")
    print(f"  {'':42s} {'wall':>8s} {'ratio':>6s} {'CPU':>8s} {'ratio':>6s}")
    interval = f"plain kernel (switch interval {SIM_SWITCH_INTERVAL * 1e3:.1f} ms)"
    print(f"  {interval:42s} {p:7.2f}s {'':6s} {pc:7.2f}s")
    for label, w, c in (("vizmm.record", r, rc), ("vizmm.record(reads=True)", i, ic)):
        print(f"  {label:42s} {w:7.2f}s {w / p:6.2f} {c:7.2f}s {c / pc:6.2f}")


if __name__ == "__main__":
    main(sys.argv[1:])
