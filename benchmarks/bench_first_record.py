"""A first recording in a fresh process: the simulator in that process, or a worker.

Run from the repository root::

    .venv/bin/python benchmarks/bench_first_record.py              # width 16, TILE_WIDTH 4
    .venv/bin/python benchmarks/bench_first_record.py --runs 7 --width 32 --tile-width 8

Times ``python -c "import vizmm; vizmm.record(width=W, tile_width=T)"`` in a
fresh process, start to exit, in turns with the same command run with
``NUMBA_ENABLE_CUDASIM=1`` set beforehand (the process is the simulator's
from its start: no worker can be needed). Prints the median of each and
their ratio: 1.0 when the first recording of a process runs in that
process, more when it goes to a worker (a second Python, numba imported
again: 1.35 on a shared 2-core machine, 2.05 s against 1.52 s). Also
prints where the fresh process recorded: ``here`` or in a ``worker``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

CODE = """
import vizmm
from vizmm.record import recorder
used = []
run = recorder._record_in_subprocess
recorder._record_in_subprocess = lambda *a, **k: used.append(1) or run(*a, **k)
vizmm.record(width={w}, tile_width={t}, quiet=True)
print("worker" if used else "here")
"""


def _time(code: str, env: dict) -> tuple[float, str]:
    t0 = time.perf_counter()
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    ).stdout.strip()
    return time.perf_counter() - t0, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--width", type=int, default=16)
    ap.add_argument("--tile-width", type=int, default=4)
    a = ap.parse_args()
    code = CODE.format(w=a.width, t=a.tile_width)
    plain = dict(os.environ)
    plain.pop("NUMBA_ENABLE_CUDASIM", None)
    preset = dict(plain, NUMBA_ENABLE_CUDASIM="1")
    times: dict[str, list[float]] = {"fresh": [], "NUMBA_ENABLE_CUDASIM=1": []}
    where = set()
    for _ in range(a.runs):
        s, w = _time(code, plain)
        times["fresh"].append(s)
        where.add(w)
        times["NUMBA_ENABLE_CUDASIM=1"].append(_time(code, preset)[0])
    med = {k: statistics.median(v) for k, v in times.items()}
    print(f"vizmm.record(width={a.width}, tile_width={a.tile_width}), fresh process, {a.runs} runs")
    for k, v in times.items():
        print(f"  {k:<24} median {med[k]:.2f} s  ({', '.join(f'{x:.2f}' for x in v)})")
    print(f"  recorded in: {', '.join(sorted(where))}")
    print(f"  ratio fresh / preset: {med['fresh'] / med['NUMBA_ENABLE_CUDASIM=1']:.2f}")


if __name__ == "__main__":
    main()
