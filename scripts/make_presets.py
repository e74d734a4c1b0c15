"""Record the dashboard's presets in Numba's CUDA simulator and ship them as package data.

Run from the repository root::

    .venv/bin/python scripts/make_presets.py            # all presets
    .venv/bin/python scripts/make_presets.py medium     # one

Each small preset of ``vizmm/serve/catalogue.py`` is written to ``vizmm/data/<key>.vizmm``
(pickle-free, compressed; the 48 x 48 one is about 100 KB). The dashboard
reads these files instead of recording at start-up; when a file is missing or
of an older trace format it records the preset itself.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")

import vizmm  # noqa: E402
from vizmm.serve.catalogue import PRESETS as ALL_PRESETS  # noqa: E402

# Presets recorded on a GPU ship as they came back from it (benchmarks/gpu_suite.py,
# scripts/gpu_barrier_lab.py); the others are recorded here in the simulator.
PRESETS = {key: p for key, p in ALL_PRESETS.items() if p.spec.backend != "gpu"}

DATA = os.path.join(ROOT, "vizmm", "data")


def build_parser() -> argparse.ArgumentParser:
    """The command line: preset keys (all by default)."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument(
        "keys",
        nargs="*",
        choices=[[], *PRESETS],
        metavar="KEY",
        help=f"presets to record (default: all of {', '.join(PRESETS)})",
    )
    return p


def main(argv=None) -> int:
    """Record the presets; returns the exit status."""
    args = build_parser().parse_args(argv)
    os.makedirs(DATA, exist_ok=True)
    for key in args.keys or list(PRESETS):
        spec = PRESETS[key].spec
        t0 = time.perf_counter()
        trace = vizmm.record(**{**spec.record_kwargs(), "backend": "simulator"}, quiet=True)
        path = trace.save(os.path.join(DATA, f"{key}.vizmm"))
        print(
            f"{key:12s} {os.path.getsize(path):8d} bytes  {time.perf_counter() - t0:5.1f} s  {path}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
