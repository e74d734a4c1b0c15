"""What the block-replay scene costs a new session: Bokeh models, build and serialization.

Run from the repository root::

    .venv/bin/python benchmarks/bench_scene.py             # this tree
    .venv/bin/python benchmarks/bench_scene.py --runs 15

For each case (a preset's full scene, its presenter scene), in this process:
the models of a Document holding the scene, the CPU time (process time) to
build the :class:`~vizmm.render.bokeh_scene.Scene` and show its first frame,
and the CPU time of ``Document.to_json()`` (what a new page is sent), median
of ``--runs`` runs after one warm-up. Then the same for the messages of a
key press on an open page: the ``PATCH-DOC`` a step makes, and the keyboard
patch the page sends.
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

    from vizmm.render.bokeh_scene import PRESENTER_VIEWS, Scene
    from vizmm.replay import Replay
    from vizmm.serve.catalogue import CATALOGUE

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


def measure_messages(key: str, runs: int) -> tuple[float, float]:
    """Median CPU seconds of one key press's ``PATCH-DOC`` made, and one page's patch applied.

    The press's events are those a step of preset ``key`` makes on a page
    whose every model has been sent; the page's patch is a keyboard
    ``queue`` change, as a key press sends it.
    """
    from bokeh.document import Document
    from bokeh.protocol.messages.patch_doc import patch_doc

    from vizmm_apps.dashboard import Dashboard, DashboardState

    doc = Document()
    dash = Dashboard(state=DashboardState(source=key), served=False)
    doc.add_root(dash.__panel__().get_root(doc))
    doc.to_json()
    doc.models.flush_synced()
    events = []
    doc.on_change(lambda event: events.append(event))
    dash.keys.press("ArrowRight")
    keys = next(m for m in doc.models if type(m).__name__.startswith("PageScripts"))
    patch = {
        "events": [{"kind": "ModelChanged", "model": {"id": keys.id}, "attr": "queue", "new": []}]
    }
    makes, applies = [], []
    for _ in range(runs):
        t0 = time.process_time()
        patch_doc.create(events)
        t1 = time.process_time()
        doc.apply_json_patch(patch)
        t2 = time.process_time()
        makes.append(t1 - t0)
        applies.append(t2 - t1)
    return statistics.median(makes), statistics.median(applies)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=9, help="runs per case (median)")
    ap.add_argument("--types", action="store_true", help="count the models by type")
    args = ap.parse_args(argv)
    for key, presenter in CASES:
        measure(key, presenter)  # warm-up: imports, cached tables
        builds, sends = [], []
        for _ in range(args.runs):
            build, send, doc = measure(key, presenter)
            builds.append(build)
            sends.append(send)
        models = list(doc.models)
        name = f"{key}{' presenter' if presenter else ''}"
        print(
            f"{name:18s} models {len(models):4d}   build + first frame "
            f"{1000 * statistics.median(builds):6.1f} ms   to_json "
            f"{1000 * statistics.median(sends):6.1f} ms   (median of {args.runs})"
        )
        if args.types:
            counts = collections.Counter(type(m).__name__ for m in models)
            print("   ", ", ".join(f"{t} {n}" for t, n in counts.most_common()))
    measure_messages("fig5-8", 3)  # warm-up
    make, apply = measure_messages("fig5-8", 20 * args.runs)
    print(
        f"{'messages fig5-8':18s} a step's PATCH-DOC made {1000 * make:5.2f} ms   "
        f"a page's patch applied {1000 * apply:5.2f} ms   (median of {20 * args.runs})"
    )


if __name__ == "__main__":
    main()
