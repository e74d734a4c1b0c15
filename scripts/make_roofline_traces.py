"""Record the small traces whose global-read counts place each kernel on the roofline.

Run from the repository root::

    .venv/bin/python scripts/make_roofline_traces.py

Records, in Numba's CUDA simulator, one whole launch of every kernel and
TILE_WIDTH that ``benchmarks/gpu_speed.py`` times (naive, tiled 8/16/32,
boundary 16/32, dynamic 16/32) on matrices a few tiles wide, and writes each
to ``vizmm/data/roofline-<kernel>-t<T>.vizmm``. The roofline
(:mod:`vizmm.analysis.roofline`) reads the global reads of M and N from
these traces: FLOP per byte read is then what the kernel really read, not a
formula (for Widths that are whole tiles it is ``TILE_WIDTH / 4`` OP/B, and
``0.25`` for the naive kernel, as Section 5.4 says).
"""

from __future__ import annotations

import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")

import vizmm  # noqa: E402
from vizmm.analysis.roofline import ROOFLINE_TRACES  # noqa: E402

DATA = os.path.join(ROOT, "vizmm", "data")


def main() -> int:
    """Record every roofline trace; returns the exit status."""
    for (kernel, T), (width, name) in ROOFLINE_TRACES.items():
        t0 = time.perf_counter()
        trace = vizmm.record(
            width=width, tile_width=T, kernel=kernel, backend="simulator", seed=1, quiet=True
        )
        path = trace.save(os.path.join(DATA, name))
        print(f"{name:28s} {os.path.getsize(path):8d} bytes  {time.perf_counter() - t0:5.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
