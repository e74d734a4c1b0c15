"""Where a new dashboard page's CPU goes: each part of the page, built and sent on its own.

Run from the repository root::

    .venv/bin/python benchmarks/bench_page_parts.py            # fig5-8, 8 runs
    .venv/bin/python benchmarks/bench_page_parts.py --trace medium --runs 12

A served page costs the server its Panel objects (``create_app``), their
Bokeh models (``get_root``) and the document sent (``PULL-DOC-REPLY``). This
builds whole pages in this process as a session does and prints, median of
``--runs`` after two warm-ups:

1. the page: CPU (process time, ms) of ``create_app``, ``get_root`` and the
   reply, and its Bokeh models;
2. each part of the page's layout (the header, the controls, the loading
   cards, the add-ons, the status, the block replay's tab with its scene,
   the page's scripts) put in a document of its own: its models and the CPU
   of its ``get_root`` and reply, with its share of the parts' sum (a part
   alone pays a document's fixed cost, so the sum is a little above the page).

Fewer models is what makes a page cheaper: the parts' shares say where they
are. The ratios are of parts measured in one run, on one machine.
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


def _reply_s(doc) -> float:
    from bokeh.protocol import Protocol

    t0 = time.process_time()
    Protocol().create("PULL-DOC-REPLY", "bench", doc)
    return time.process_time() - t0


def page(trace: str):
    """(create_app s, get_root s, reply s, models, the page's layout, scene s) of one new page.

    The scene's time is of a second scene of the page's trace and frame, made
    after the page (as ``create_app`` made the page's own).
    """
    from bokeh.document import Document

    from vizmm_apps.dashboard import create_app
    from vizmm_apps.large_view import replay_scene

    t0 = time.process_time()
    d = create_app(served=False)
    if d.state.source != trace:
        d.trace_select.value = trace
    t1 = time.process_time()
    doc = Document()
    doc.add_root(d.__panel__().get_root(doc))
    t2 = time.process_time()
    reply = _reply_s(doc)
    t3 = time.process_time()
    replay_scene(d.state.trace).update(d.state.frame)
    scene = time.process_time() - t3
    return t1 - t0, t2 - t1, reply, len(doc.models), d.layout, scene


def parts(layout) -> list[tuple[str, float, float, int]]:
    """(name, get_root s, reply s, models) of each part of a page's layout, alone."""
    from bokeh.document import Document

    out = []
    for i, obj in enumerate(layout.objects):
        doc = Document()
        t0 = time.process_time()
        doc.add_root(obj.get_root(doc))
        root = time.process_time() - t0
        out.append((f"{i:2d} {type(obj).__name__}", root, _reply_s(doc), len(doc.models)))
    return out


def main(argv=None) -> int:
    """Build the pages and print the table; returns the exit status."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trace", default="fig5-8", help="the preset a page opens")
    ap.add_argument("--runs", type=int, default=8)
    args = ap.parse_args(argv)
    for _ in range(2):
        page(args.trace)
    pages = [page(args.trace) for _ in range(args.runs)]
    med = [statistics.median(p[i] for p in pages) for i in range(3)]
    print(
        f"page of {args.trace}: {pages[0][3]} Bokeh models; CPU create_app "
        f"{1e3 * med[0]:.0f} ms, get_root {1e3 * med[1]:.0f} ms, reply {1e3 * med[2]:.0f} ms, "
        f"total {1e3 * sum(med):.0f} ms (median of {args.runs}); a scene of it alone "
        f"{1e3 * statistics.median(p[5] for p in pages):.0f} ms (made in create_app: the tab "
        "below holding it only wraps its models)"
    )
    runs = collections.defaultdict(list)
    for p in pages:
        for name, root, reply, models in parts(p[4]):
            runs[(name, models)].append((root, reply))
    rows = [
        (name, models, statistics.median(r for r, _ in v), statistics.median(s for _, s in v))
        for (name, models), v in runs.items()
    ]
    whole = sum(r + s for _, _, r, s in rows)
    print(f"{'part':24s} {'models':>6s} {'get_root':>9s} {'reply':>7s} {'share':>6s}")
    for name, models, root, reply in rows:
        print(
            f"{name:24s} {models:6d} {1e3 * root:7.1f}ms {1e3 * reply:5.1f}ms "
            f"{100 * (root + reply) / whole:5.1f}%"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
