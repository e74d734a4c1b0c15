"""Large view: how fast a 4096 x 4096 launch loads, builds and scrubs on the server.

Measures, for a large trace (default: the shipped ``gpu-4096-t32-tiled.vizmm``):

* the trace file's size and the time to load it (``vizmm.load``: P is rebuilt
  from M @ N and every array is checked against its checksum);
* the models (:func:`vizmm.replay.large.model`) and the Bokeh figures
  (:class:`~vizmm.render.large_bokeh.LargeScene`), built once per trace;
* one timeline step, as the server does it: :meth:`LargeScene.set_time`
  (the block grid's state image, the Gantt chart's state column, the time
  lines, the title), then the ``PATCH-DOC`` message that carries the changes
  to the browser, serialised with its binary buffers;
* the same step through the app (``LargeViewState.time`` -> watchers ->
  scene and status pane), without a browser.

Target: a timeline step in under 100 ms on the server.

Usage: ``python benchmarks/bench_large.py [TRACE.vizmm] [STEPS]``
"""

import os
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import vizmm  # noqa: E402
from vizmm.replay import large  # noqa: E402

DEFAULT = os.path.join(ROOT, "vizmm", "data", "gpu-4096-t32-tiled.vizmm")


def _size(msg) -> int:
    """Bytes of a Bokeh protocol message: its JSON content and binary buffers."""
    return len(msg.content_json) + sum(len(b.to_bytes()) for b in msg.buffers)


def main(argv):
    path = argv[1] if len(argv) > 1 else DEFAULT
    steps = int(argv[2]) if len(argv) > 2 else 120
    if not os.path.exists(path):
        print(f"{path} is missing: give a trace file")
        return 1
    size = os.path.getsize(path)
    t0 = time.perf_counter()
    trace = vizmm.load(path)
    load_s = time.perf_counter() - t0
    j, k, l = trace.shape
    gy, gx = trace.grid
    print(
        f"trace     {os.path.basename(path)}: {size / 2**20:.1f} MB on disk, "
        f"{sum(a.nbytes for a in trace.arrays().values()) / 2**20:.0f} MB in memory"
    )
    print(
        f"          {trace.kernel} {j}x{k}x{l} T={trace.tile_width}: {gy}x{gx} = "
        f"{gy * gx} blocks, {len(trace.detail_blocks)} recorded per thread"
    )
    print(f"load      {load_s:.2f} s")

    t0 = time.perf_counter()
    m = large.LargeModel.of(trace)
    print(f"models    {time.perf_counter() - t0:.3f} s (timeline, Gantt, waves, read maps)")

    from bokeh.document import Document
    from bokeh.protocol import Protocol

    from vizmm.render.large_bokeh import LargeScene

    t0 = time.perf_counter()
    scene = LargeScene(m)
    doc = Document()
    doc.add_root(scene.layout)
    build_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    full = Protocol().create("PULL-DOC-REPLY", "bench", doc)
    first = _size(full)
    print(
        f"figures   {build_s:.3f} s to build, {time.perf_counter() - t0:.3f} s and "
        f"{first / 2**20:.1f} MB to send the first time"
    )

    events = []
    doc.callbacks.on_change(events.append)
    proto = Protocol()
    took, sent = [], []
    for t in m.timeline.scrub_times(steps):
        events.clear()
        t0 = time.perf_counter()
        scene.set_time(t)
        msg = proto.create("PATCH-DOC", events)
        payload = _size(msg)
        took.append(time.perf_counter() - t0)
        sent.append(payload)
    med = statistics.median(took)
    print(
        f"step      median {med * 1000:.1f} ms, max {max(took) * 1000:.1f} ms over "
        f"{steps} steps; {statistics.median(sent) / 1024:.0f} KB per step to the browser "
        f"(target < 100 ms: {'ok' if med < 0.1 else 'MISSED'})"
    )

    from vizmm_apps.large_view import LargeTraceView

    view = LargeTraceView(trace, served=False)
    s = view.state
    app = []
    for t in m.timeline.scrub_times(steps):
        t0 = time.perf_counter()
        s.time = float(t)
        app.append(time.perf_counter() - t0)
    print(f"app step  median {statistics.median(app) * 1000:.1f} ms (state -> scene, status)")
    return 0 if med < 0.1 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
