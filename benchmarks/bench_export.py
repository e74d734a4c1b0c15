"""Time and size of the exports (recording time is shown apart and not counted).

    .venv/bin/python benchmarks/bench_export.py

Targets on a 2-core machine: a 4x4 sub-step GIF in < 5 s, a 48x48 TILE_WIDTH 16
phase MP4 at 1920x1080 in < 30 s. The HTML export of the 4x4 sub-step replay
must stay under 5 MB.
"""

import os
import sys
import time

os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")

import vizmm  # noqa: E402
from vizmm.export import export_bytes  # noqa: E402
from vizmm.replay import Replay  # noqa: E402

CASES = [
    # (label, record kwargs, export kwargs, target seconds)
    (
        "4x4 T=2 sub-step GIF 1280x720",
        dict(width=4, tile_width=2),
        dict(fmt="gif", granularity="substep", size=(1280, 720)),
        5.0,
    ),
    (
        "4x4 T=2 sub-step HTML",
        dict(width=4, tile_width=2),
        dict(fmt="html", granularity="substep"),
        None,
    ),
    (
        "4x4 T=2 sub-step MP4 1920x1080",
        dict(width=4, tile_width=2),
        dict(fmt="mp4", granularity="substep", size=(1920, 1080)),
        None,
    ),
    (
        "48x48 T=16 phase MP4 1920x1080",
        dict(width=48, tile_width=16),
        dict(fmt="mp4", granularity="phase", size=(1920, 1080)),
        30.0,
    ),
    (
        "48x48 T=16 sub-step GIF 1280x720",
        dict(width=48, tile_width=16),
        dict(fmt="gif", granularity="substep", size=(1280, 720)),
        None,
    ),
]


def main() -> int:
    traces = {}
    failed = False
    print(f"{'export':36s} {'frames':>6s} {'time':>8s} {'size':>10s}  target")
    for label, rec, exp, target in CASES:
        key = tuple(sorted(rec.items()))
        if key not in traces:
            t0 = time.perf_counter()
            traces[key] = vizmm.record(backend="simulator", quiet=True, **rec)
            print(f"  (recorded {rec} in {time.perf_counter() - t0:.1f} s, not counted)")
        trace = traces[key]
        n = len(Replay(trace, (0, 0), exp["granularity"]))
        t0 = time.perf_counter()
        data = export_bytes(trace, progress=False, **exp)
        dt = time.perf_counter() - t0
        ok = "" if target is None else ("ok" if dt < target else "SLOW") + f" (< {target:g} s)"
        failed |= ok.startswith("SLOW")
        print(f"{label:36s} {n:6d} {dt:7.2f}s {len(data) / 2**20:8.2f} MB  {ok}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
