"""A class at once: N headless Chromium pages on one served dashboard, stepping through presets.

Run from the repository root::

    .venv/bin/python benchmarks/load_test.py --pages 10 --steps 20
    .venv/bin/python benchmarks/load_test.py --pages 10 --num-procs 2
    .venv/bin/python benchmarks/load_test.py --pages 5 --url 'dashboard?trace=gpu-4096-t32-tiled'

Starts ``vizmm serve`` (the shipped traces read before it listens) on a free
port with ``--liveness``, opens N pages in one Chromium at once, each on a
preset (round robin), then presses → ``--steps`` times in every page at once.

Prints:

* page-ready times (navigation start to the status element saying ready):
  p50, p95, max;
* key press to update (``keydown`` to the status element showing the new
  step, measured in the page): p50, p95 over every step of every page;
* the server's memory (resident, all its processes) before the pages,
  the peak while they run, and after they close (sessions destroyed);
* the server's CPU time (user + system, all its processes) per new session
  and per step, from its /proc counters;
* its event-loop lag: the latency of Panel's ``/liveness`` endpoint, polled
  every 100 ms during the run (a request waits for the loop);
* the machine's load average, since the browsers share the cores.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import threading
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests"))

from served import ARGS, CHROMIUM, LATENCY_JS, free_port  # noqa: E402 - the browser tests' helper

PRESETS = ("fig5-8", "fig5-11", "fig5-9-3x3", "general", "medium")


def tree(pid: int) -> list[int]:
    """``pid`` and its descendants."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        try:
            with open(f"/proc/{p}/task/{p}/children") as f:
                todo += [int(c) for c in f.read().split()]
        except OSError:
            pass
    return out


def rss_mib(pids) -> float:
    total = 0
    for p in pids:
        try:
            with open(f"/proc/{p}/statm") as f:
                total += int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
        except OSError:
            pass
    return total / 2**20


def cpu_s(pids) -> float:
    total = 0
    for p in pids:
        try:
            with open(f"/proc/{p}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])
        except OSError:
            pass
    return total / os.sysconf("SC_CLK_TCK")


def pct(xs, q) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))] if xs else float("nan")


def summary(name, xs, unit="s", scale=1.0) -> str:
    if not xs:
        return f"{name}: none"
    xs = [x * scale for x in xs]
    return (
        f"{name}: p50 {statistics.median(xs):.3g} {unit}, p95 {pct(xs, 0.95):.3g} {unit}, "
        f"max {max(xs):.3g} {unit} (n={len(xs)})"
    )


class Lag(threading.Thread):
    """Polls /liveness every 100 ms; its latency is the server's event-loop lag."""

    def __init__(self, url):
        super().__init__(daemon=True)
        self.url, self.ms, self.stop = url, [], threading.Event()

    def run(self):
        while not self.stop.is_set():
            t0 = time.perf_counter()
            try:
                with urllib.request.urlopen(self.url, timeout=30) as r:
                    r.read()
                self.ms.append(1000 * (time.perf_counter() - t0))
            except OSError:
                pass
            time.sleep(0.1)


async def one_page(browser, url, steps, results):
    ctx = await browser.new_context(viewport={"width": 1400, "height": 900})
    page = await ctx.new_page()
    t0 = time.perf_counter()
    await page.goto(url, timeout=300_000)
    await page.wait_for_selector("#vizmm-status[data-ready='true']", timeout=300_000)
    results["ready"].append(time.perf_counter() - t0)
    results["ready_event"].set() if len(results["ready"]) == results["n"] else None
    await results["ready_event"].wait()
    await page.evaluate(LATENCY_JS)
    for i in range(steps):
        await page.keyboard.press("ArrowRight")
        try:
            await page.wait_for_selector(f"#vizmm-status[data-step='{i + 1}']", timeout=60_000)
        except Exception:  # noqa: BLE001 - a missed step is counted below
            results["missed"] += 1
    results["step_ms"] += await page.evaluate("() => window.__update")
    return ctx


async def drive(url_of, n, steps, procs, results):
    from playwright.async_api import async_playwright

    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        results["n"] = n
        results["ready_event"] = asyncio.Event()
        cpu0 = cpu_s(procs())
        t0 = time.perf_counter()
        tasks = [asyncio.create_task(one_page(browser, url_of(i), 0, results)) for i in range(n)]
        ctxs = await asyncio.gather(*tasks)
        results["sessions_wall"] = time.perf_counter() - t0
        results["cpu_sessions"] = cpu_s(procs()) - cpu0
        for c in ctxs:
            await c.close()
        # now the steps: fresh pages (already ready), all pressing at once
        results["ready_first"] = list(results["ready"])
        results["ready"], results["ready_event"] = [], asyncio.Event()
        tasks = [
            asyncio.create_task(one_page(browser, url_of(i), steps, results)) for i in range(n)
        ]
        pages = []
        # CPU of the step phase: measured from when every page is ready
        await results["ready_event"].wait()
        cpu1 = cpu_s(procs())
        pages = await asyncio.gather(*tasks)
        results["cpu_steps"] = cpu_s(procs()) - cpu1
        for c in pages:
            await c.close()
        await browser.close()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pages", type=int, default=10)
    ap.add_argument("--steps", type=int, default=15)
    ap.add_argument("--num-procs", type=int, default=1)
    ap.add_argument("--url", default=None, help="path and query of every page (default: presets)")
    ap.add_argument("--settle", type=float, default=40.0, help="seconds to wait after closing")
    args = ap.parse_args(argv)

    port = free_port()
    os.makedirs(os.path.join(ROOT, "test-output"), exist_ok=True)
    log = open(os.path.join(ROOT, "test-output", f"load-test-{port}.log"), "w")  # noqa: SIM115
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1")
    vizmm = os.path.join(os.path.dirname(sys.executable), "vizmm")
    cmd = [vizmm, "serve", "--port", str(port), "--num-procs", str(args.num_procs), "--dry-run"]
    panel_cmd = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout.split()
    panel_cmd += [
        "--liveness",
        "--check-unused-sessions",
        "2000",
        "--unused-session-lifetime",
        "2000",
    ]
    server = subprocess.Popen(panel_cmd, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, env=env)
    base = f"http://127.0.0.1:{port}"
    t0 = time.time()
    while True:
        try:
            with urllib.request.urlopen(f"{base}/liveness", timeout=5):
                break
        except OSError:
            if server.poll() is not None or time.time() - t0 > 300:
                print("the server did not start; see", log.name)
                return 1
            time.sleep(0.5)

    def procs():
        return tree(server.pid)

    time.sleep(2)
    results = {"ready": [], "step_ms": [], "missed": 0}
    print(
        f"server: vizmm serve --num-procs {args.num_procs}; {args.pages} pages, "
        f"{args.steps} steps each; {os.cpu_count()} cores, load average "
        f"{os.getloadavg()[0]:.1f} before"
    )
    mem_before = rss_mib(procs())
    peak = [mem_before]
    stop = threading.Event()

    def sample():
        while not stop.is_set():
            peak.append(rss_mib(procs()))
            time.sleep(0.5)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    lag = Lag(f"{base}/liveness")
    lag.start()

    def url_of(i):
        path = args.url or f"dashboard?trace={PRESETS[i % len(PRESETS)]}"
        return f"{base}/{path}"

    try:
        asyncio.run(drive(url_of, args.pages, args.steps, procs, results))
        load_during = os.getloadavg()[0]
    finally:
        lag.stop.set()
    time.sleep(args.settle)  # sessions closed: destroyed within a few seconds
    stop.set()
    mem_after = rss_mib(procs())
    n = args.pages
    print(summary("page ready (all arriving at once)", results["ready_first"]))
    print(f"  all {n} ready after {results['sessions_wall']:.1f} s")
    print(summary("page ready (second wave, server warm)", results["ready"]))
    print(summary("key press to update", results["step_ms"], "ms"))
    print(f"  steps not shown within 60 s: {results['missed']}")
    print(
        f"server memory: before {mem_before:.0f} MiB, peak {max(peak):.0f} MiB, after "
        f"{mem_after:.0f} MiB ({100 * (mem_after - mem_before) / mem_before:+.1f}%)"
    )
    print(
        f"server CPU: {results['cpu_sessions'] / n:.3f} s per new session, "
        f"{results['cpu_steps'] / max(1, n * args.steps) * 1000:.1f} ms per step"
    )
    print(summary("event-loop lag (/liveness latency)", lag.ms, "ms"))
    print(f"load average during the run: {load_during:.1f} on {os.cpu_count()} cores")
    server.terminate()
    try:
        server.wait(10)
    except subprocess.TimeoutExpired:
        server.kill()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
