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

# (Width, TILE_WIDTH, format, granularity, frame size or None for HTML, target seconds or None)
CASES = [
    (4, 2, "gif", "substep", (1280, 720), 5.0),
    (4, 2, "html", "substep", None, None),
    (4, 2, "mp4", "substep", (1920, 1080), None),
    (48, 16, "mp4", "phase", (1920, 1080), 30.0),
    (48, 16, "gif", "substep", (1280, 720), None),
]


def main() -> int:
    traces = {}
    failed = False
    print(f"{'export':36s} {'frames':>6s} {'time':>8s} {'size':>10s}  target")
    for width, T, fmt, granularity, size, target in CASES:
        step = "sub-step" if granularity == "substep" else granularity
        label = f"{width}x{width} T={T} {step} {fmt.upper()}" + (
            f" {size[0]}x{size[1]}" if size else ""
        )
        if (width, T) not in traces:
            t0 = time.perf_counter()
            traces[width, T] = vizmm.record(
                width=width, tile_width=T, backend="simulator", quiet=True
            )
            dt = time.perf_counter() - t0
            print(f"  (recorded {width}x{width}, T={T} in {dt:.1f} s, not counted)")
        trace = traces[width, T]
        n = len(Replay(trace, (0, 0), granularity))
        exp = dict(fmt=fmt, granularity=granularity, **({"size": size} if size else {}))
        t0 = time.perf_counter()
        data = export_bytes(trace, progress=False, **exp)
        dt = time.perf_counter() - t0
        ok = "" if target is None else ("ok" if dt < target else "SLOW") + f" (< {target:g} s)"
        failed |= ok.startswith("SLOW")
        print(f"{label:36s} {n:6d} {dt:7.2f}s {len(data) / 2**20:8.2f} MB  {ok}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
