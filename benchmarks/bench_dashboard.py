"""How fast the dashboard answers a step, on the server and in the browser.

Run from the repository root::

    .venv/bin/python benchmarks/bench_dashboard.py            # both parts
    .venv/bin/python benchmarks/bench_dashboard.py --no-browser

1. Server side, per preset: the time of one step (a → key): the state's new
   frame, the Bokeh scene's new columns and the document patch the server
   would send (``PATCH-DOC`` built and serialized), median and 95th percentile.
2. In headless Chromium (``/usr/bin/chromium``) against ``panel serve``: from
   the ``keydown`` event to the page's status element showing the new step,
   and to two animation frames later (the new picture painted).

Targets: < 50 ms server side and < 150 ms key to update for the 48 x 48
preset (TILE_WIDTH 16, 256 threads per block).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "tests"))
os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")

from served import ARGS, CHROMIUM, LATENCY_JS, serve  # noqa: E402 - the browser tests' helper

PRESETS = ("fig5-8", "medium")


def _stats(ms: list[float]) -> str:
    ms = sorted(ms)
    p95 = ms[min(len(ms) - 1, int(round(0.95 * (len(ms) - 1))))]
    return f"median {statistics.median(ms):6.1f} ms   p95 {p95:6.1f} ms   (n={len(ms)})"


def server_side(key: str, steps: int = 60) -> list[float]:
    """Milliseconds per step of the dashboard for preset ``key``, patch serialized."""
    from bokeh.document import Document
    from bokeh.protocol import Protocol

    from vizmm_apps.dashboard import Dashboard

    d = Dashboard(served=False)
    d.trace_select.value = key
    d.state.follow(0, 1)
    doc = Document()
    doc.add_root(d.__panel__().get_root(doc))
    events = []
    doc.callbacks.on_change(events.append)
    protocol = Protocol()
    out = []
    s = d.state
    s.first()
    events.clear()
    for _ in range(min(steps, s.n_steps - 1)):
        t0 = time.perf_counter()
        s.next()
        msg = protocol.create("PATCH-DOC", list(events))
        _ = msg.content_json, [b for b in msg.buffers]
        out.append(1000 * (time.perf_counter() - t0))
        events.clear()
    return out


def browser_side(keys: int = 25) -> dict[str, tuple[list[float], list[float]]]:
    """Key-to-update and key-to-paint milliseconds per preset in headless Chromium."""
    from playwright.sync_api import sync_playwright

    results = {}
    with tempfile.TemporaryDirectory() as logdir, serve("dashboard", logdir) as url:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
            for key in PRESETS:
                page = browser.new_page(viewport={"width": 1600, "height": 1000})
                page.goto(f"{url}?trace={key}&ty=0&tx=1")
                page.wait_for_selector("#vizmm-status[data-ready='true']", timeout=60000)
                page.wait_for_timeout(1000)
                page.evaluate(LATENCY_JS)
                count = int(page.eval_on_selector("#vizmm-status", "el => el.dataset.count"))
                for i in range(1, min(keys, count - 1) + 1):
                    page.keyboard.press("ArrowRight")
                    page.wait_for_selector(f"#vizmm-status[data-step='{i}']", timeout=15000)
                    page.wait_for_timeout(150)
                results[key] = (page.evaluate("window.__update"), page.evaluate("window.__paint"))
                page.close()
            browser.close()
    return results


def build_parser() -> argparse.ArgumentParser:
    """Command line of the benchmark."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--no-browser", action="store_true", help="server side only")
    return p


def main(argv=None) -> int:
    """Run the benchmark and print the numbers; returns the exit status."""
    args = build_parser().parse_args(argv)
    print("server side: one step (frame + scene columns + PATCH-DOC serialized)")
    for key in PRESETS:
        print(f"  {key:8s} {_stats(server_side(key))}")
    if args.no_browser:
        return 0
    if not os.path.exists(CHROMIUM):
        print(f"browser: skipped ({CHROMIUM} missing)")
        return 0
    print("browser (headless Chromium, panel serve on localhost): key press to ...")
    for key, (update, paint) in browser_side().items():
        print(f"  {key:8s} page updated {_stats(update)}")
        print(f"  {'':8s} painted      {_stats(paint)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
