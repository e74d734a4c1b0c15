"""What the block-replay scene costs a new session: Bokeh models, build and serialization.

Run from the repository root::

    .venv/bin/python benchmarks/bench_scene.py             # this tree
    .venv/bin/python benchmarks/bench_scene.py --runs 15

For each case (a preset's full scene, its presenter scene), in this process:
the models of a Document holding the scene, the CPU time (process time) to
build the :class:`~vizmm.render.bokeh_scene.Scene` and show its first frame,
and the CPU time of ``Document.to_json()`` (what a new page is sent), median
of ``--runs`` runs after one warm-up, with Bokeh as it is and with the
server's speed-ups of it (``apps/bokeh_speedups.py``), side by side.
``--types`` also counts the models by type.
"""

from __future__ import annotations

import argparse
import collections
import os
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")

CASES = (
    ("fig5-8", False),
    ("fig5-8", True),
    ("medium", False),
)


def measure(key: str, presenter: bool):
    """(build seconds, to_json seconds, document) of one new scene of preset ``key``."""
    from bokeh.document import Document

    from vizmm.catalogue import CATALOGUE
    from vizmm.render.bokeh_scene import PRESENTER_VIEWS, Scene
    from vizmm.replay import Replay

    trace = CATALOGUE.get(key)
    frame = Replay(trace, (0, 0), focus=(0, 1)).frame(3)
    views = PRESENTER_VIEWS if presenter else None
    t0 = time.process_time()
    scene = Scene(trace, views=views, presenter=presenter)
    scene.update(frame)
    t1 = time.process_time()
    doc = Document()
    doc.add_root(scene.layout)
    t2 = time.process_time()
    doc.to_json()
    t3 = time.process_time()
    return t1 - t0, t3 - t2, doc


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=9, help="runs per case (median)")
    ap.add_argument("--types", action="store_true", help="count the models by type")
    args = ap.parse_args(argv)
    from apps import bokeh_speedups

    for key, presenter in CASES:
        figures = {}
        for mode in ("Bokeh", "sped up"):
            if mode == "sped up":
                bokeh_speedups.apply()
            else:
                bokeh_speedups.remove()
            measure(key, presenter)  # warm-up: imports, cached tables
            builds, sends = [], []
            for _ in range(args.runs):
                build, send, doc = measure(key, presenter)
                builds.append(build)
                sends.append(send)
            figures[mode] = statistics.median(builds), statistics.median(sends)
        models = list(doc.models)
        name = f"{key}{' presenter' if presenter else ''}"
        (b0, s0), (b1, s1) = figures["Bokeh"], figures["sped up"]
        print(
            f"{name:18s} models {len(models):4d}   build + first frame "
            f"{1000 * b0:6.1f} -> {1000 * b1:6.1f} ms ({b1 / b0:.2f}x)   to_json "
            f"{1000 * s0:6.1f} -> {1000 * s1:6.1f} ms ({s1 / s0:.2f}x)   "
            f"(Bokeh -> sped up, median of {args.runs})"
        )
        if args.types:
            counts = collections.Counter(type(m).__name__ for m in models)
            print("   ", ", ".join(f"{t} {n}" for t, n in counts.most_common()))


if __name__ == "__main__":
    main()
