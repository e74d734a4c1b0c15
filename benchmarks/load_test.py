"""A class at once: N headless Chromium pages on one served dashboard, stepping through presets.

Run from the repository root::

    .venv/bin/python benchmarks/load_test.py --pages 10 --steps 20
    .venv/bin/python benchmarks/load_test.py --pages 10 --num-procs 2
    .venv/bin/python benchmarks/load_test.py --pages 5 --url 'dashboard?trace=gpu-4096-t32-tiled'
    .venv/bin/python benchmarks/load_test.py --pages 30 --ref c33c8b0   # before and after
    .venv/bin/python benchmarks/load_test.py --pages 30 --nice-browsers
    .venv/bin/python benchmarks/load_test.py --pages 30 --clients protocol   # the server alone

Starts ``vizmm serve`` (the shipped traces read before it listens) on a free
port with ``--liveness``, opens N pages in one Chromium at once, each on a
preset (round robin), then presses → ``--steps`` times in every page at once.
With ``--ref REV`` it does all of it twice, first with the server of commit
REV (its tree exported with ``git archive``), then with this tree's, and
prints the figures side by side.

Prints:

* page-ready times (navigation start to the status element saying ready):
  p50, p95, max;
* key press to update (``keydown`` to the status element showing the new
  step, measured in the page): p50, p95 over every step of every page;
* the server's memory (resident, all its processes) before the pages,
  the peak while they run, and after they close (``--settle`` seconds later:
  ``vizmm serve`` lets a closed page's session go after a minute);
* the server's CPU time (user + system, all its processes) per new session
  and per step, from its /proc counters;
* who used the cores while the pages arrived and while they stepped: the
  machine's busy CPU time (/proc/stat) split into the server's and the rest's
  (the browsers, this script and any other program);
* its event-loop lag: the latency of Panel's ``/liveness`` endpoint, polled
  every 100 ms during the run (a request waits for the loop);
* the machine's load average, since the browsers share the cores;
* how fast this machine runs Python just before the pages come (a fixed
  loop's milliseconds): a shared machine's speed changes from hour to hour.

The browsers share the server's cores, which a class's do not (each student
has a machine). With ``--nice-browsers`` they run at the lowest CPU priority
(nice 19): the server gets a core whenever it has work, and the figures
show what the server makes of a class, less what its own share of two busy
cores costs it. The browsers still take every cycle the server leaves.

With ``--clients protocol`` there is no browser: each page is a
:class:`protocol_page.ProtocolPage`, which makes the requests a Chromium page
makes (the page, its scripts and style sheets, the websocket) and sends the
messages it sends (the document's pull, the plots' sizes, the location, the
browser's facts, ``document_ready``, each key press as the keyboard model's
``queue``), and times the server's answers: a page is ready when the server
has answered ``document_ready`` and the document's status says ready, and a
key press is shown when the patch whose status has the next step arrives.
The pages' own work is then a few percent of the cores, so the figures are
the server's alone, as a class on its own machines would see them, less the
browsers' drawing. The waves, the steps and every figure printed are the
same as with browsers; every page presses its next key as soon as the last
one is shown (no pause to look), so thirty pages keep the server busy.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests"))

from protocol_page import ProtocolPage, configure_http  # noqa: E402 - beside this file
from served import ARGS, CHROMIUM, LATENCY_JS, free_port  # noqa: E402 - the browser tests' helper

PRESETS = ("fig5-8", "fig5-11", "fig5-9-3x3", "general", "medium")


def tree_of(pid: int) -> list[int]:
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


def machine_cpu() -> tuple[float, float]:
    """Seconds of CPU the machine's cores spent busy, and in all, since boot (/proc/stat)."""
    with open("/proc/stat") as f:
        ticks = [int(x) for x in f.readline().split()[1:9]]
    user, nice, system, idle, iowait, irq, softirq, steal = ticks
    busy = user + nice + system + irq + softirq + steal
    hz = os.sysconf("SC_CLK_TCK")
    return busy / hz, (busy + idle + iowait) / hz


def python_speed_ms() -> float:
    """Milliseconds this machine takes now for a fixed piece of pure Python (best of five).

    The server's work is pure Python; on a shared machine its speed changes
    from hour to hour (by half, between runs of this test an hour apart).
    Figures of runs made at different times compare only with this beside them.
    """
    best = float("inf")
    for _ in range(5):
        t0 = time.perf_counter()
        d = {}
        for i in range(300_000):
            d[i % 1000] = d.get(i % 1000, 0) + i
        best = min(best, time.perf_counter() - t0)
    return 1000 * best


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
    """Polls /liveness every 100 ms; its latency is the server's event-loop lag.

    A poll that gets no answer within 30 s counts as the time it waited (a
    lower bound of that stall), so the longest stalls are not left out.
    """

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
            except TimeoutError:
                self.ms.append(1000 * (time.perf_counter() - t0))
            except OSError as error:  # no answer in time, or the server is gone
                if "timed out" in str(error):
                    self.ms.append(1000 * (time.perf_counter() - t0))
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


async def one_protocol_page(base, path, steps, results):
    page = ProtocolPage(base, path)
    results["ready"].append(await page.open())
    results["ready_event"].set() if len(results["ready"]) == results["n"] else None
    await results["ready_event"].wait()
    for _ in range(steps):
        try:
            results["step_ms"].append(await page.press())
        except TimeoutError:  # counted as a missed step, as in a browser page
            results["missed"] += 1
    return page


async def waves(start_page, n, steps, procs, results):
    """The two waves of ``n`` pages, whatever the client; fills ``results``.

    ``start_page(i, steps)`` opens page ``i``, presses → ``steps`` times once
    every page of its wave is ready, and returns what ``close()`` (awaited)
    closes. The first wave arrives at once and only opens; the second
    steps, its CPU measured from when every page of it is ready.
    """
    results["n"] = n
    results["ready_event"] = asyncio.Event()
    cpu0, machine0 = cpu_s(procs()), machine_cpu()
    t0 = time.perf_counter()
    pages = await asyncio.gather(*(start_page(i, 0) for i in range(n)))
    results["sessions_wall"] = time.perf_counter() - t0
    results["cpu_sessions"] = cpu_s(procs()) - cpu0
    results["machine_sessions"] = [b - a for a, b in zip(machine0, machine_cpu(), strict=True)]
    for page in pages:
        await page.close()
    # now the steps: fresh pages (already ready), all pressing at once
    results["ready_first"] = list(results["ready"])
    results["ready"], results["ready_event"] = [], asyncio.Event()
    tasks = [asyncio.create_task(start_page(i, steps)) for i in range(n)]
    await results["ready_event"].wait()
    cpu1, machine1 = cpu_s(procs()), machine_cpu()
    pages = await asyncio.gather(*tasks)
    results["cpu_steps"] = cpu_s(procs()) - cpu1
    results["machine_steps"] = [b - a for a, b in zip(machine1, machine_cpu(), strict=True)]
    for page in pages:
        await page.close()


async def drive_protocol(base, path_of, n, steps, procs, results):
    """:func:`waves` with :class:`ProtocolPage` pages: no browser."""
    configure_http(n)
    await waves(
        lambda i, s: one_protocol_page(base, path_of(i), s, results), n, steps, procs, results
    )


async def drive(url_of, n, steps, procs, results):
    """:func:`waves` with Chromium pages, each in its own browser context."""
    from playwright.async_api import async_playwright

    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        await waves(lambda i, s: one_page(browser, url_of(i), s, results), n, steps, procs, results)
        await browser.close()


def export_tree(rev: str, dest: str) -> str:
    """The files of commit ``rev`` (``git archive``) in ``dest``; returns ``dest``.

    ``dest`` also gets ``vizmm_apps`` and ``vizmm_kernels``, links to its
    ``apps/`` and ``kernels/``: with ``dest`` first on the path, its server
    imports that commit's pages and kernels under their installed names, not
    the checkout's (the editable install maps them to this tree, after the path).
    """
    archive = subprocess.run(
        ["git", "-C", ROOT, "archive", "--format=tar", rev], capture_output=True, check=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", dest], input=archive, check=True)
    for name, folder in (("vizmm_apps", "apps"), ("vizmm_kernels", "kernels")):
        link = os.path.join(dest, name)
        if os.path.isdir(os.path.join(dest, folder)) and not os.path.exists(link):
            os.symlink(folder, link)
    return dest


def server_command(tree: str, port: int, procs: int) -> tuple[list[str], dict[str, str]]:
    """``vizmm serve``'s panel command as the tree at ``tree`` writes it (``--dry-run``).

    Returns the command and the environment variables ``vizmm serve`` sets
    for it (the ``NAME=value`` words it prints first; none in older trees).
    """
    code = (
        "import sys; sys.path.insert(0, sys.argv[1]); from vizmm.cli import main; "
        "sys.exit(main(sys.argv[2:]))"
    )
    args = ["serve", "--port", str(port), "--num-procs", str(procs), "--dry-run"]
    words = subprocess.run(
        [sys.executable, "-c", code, tree, *args],
        capture_output=True,
        text=True,
        check=True,
        cwd=tree,
    ).stdout.split()
    env = {}
    while words and "=" in words[0] and not words[0].startswith("-"):
        name, value = words.pop(0).split("=", 1)
        env[name] = value
    return words + ["--liveness"], env


def run(tree: str, args) -> dict:
    """The whole test against the server of the repository at ``tree``; its figures."""
    port = free_port()
    os.makedirs(os.path.join(ROOT, "test-output"), exist_ok=True)
    log = open(os.path.join(ROOT, "test-output", f"load-test-{port}.log"), "w")  # noqa: SIM115
    cmd, extra = server_command(tree, port, args.num_procs)
    path = os.pathsep.join(p for p in (tree, os.environ.get("PYTHONPATH")) if p)
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1", PYTHONPATH=path, **extra)
    server = subprocess.Popen(cmd, cwd=tree, stdout=log, stderr=subprocess.STDOUT, env=env)
    base = f"http://127.0.0.1:{port}"
    t0 = time.time()
    while True:
        try:
            with urllib.request.urlopen(f"{base}/liveness", timeout=5):
                break
        except OSError:
            if server.poll() is not None or time.time() - t0 > 300:
                raise RuntimeError(f"the server did not start; see {log.name}") from None
            time.sleep(0.5)

    def procs():
        return tree_of(server.pid)

    time.sleep(2)
    results = {"ready": [], "step_ms": [], "missed": 0, "load_before": os.getloadavg()[0]}
    results["speed_ms"] = python_speed_ms()
    mem_before = rss_mib(procs())
    peak = [mem_before]
    stop = threading.Event()

    def sample():
        while not stop.is_set():
            server = procs()
            peak.append(rss_mib(server))
            if args.nice_browsers:  # Chromium's processes, new ones too, at the lowest priority
                for pid in set(tree_of(os.getpid())) - set(server) - {os.getpid()}:
                    try:
                        os.setpriority(os.PRIO_PROCESS, pid, 19)
                    except OSError:  # gone already
                        pass
            time.sleep(0.5)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    lag = Lag(f"{base}/liveness")
    lag.start()

    def path_of(i):
        return args.url or f"dashboard?trace={PRESETS[i % len(PRESETS)]}"

    def url_of(i):
        return f"{base}/{path_of(i)}"

    try:
        if args.clients == "protocol":
            asyncio.run(drive_protocol(base, path_of, args.pages, args.steps, procs, results))
        else:
            asyncio.run(drive(url_of, args.pages, args.steps, procs, results))
        results["load_during"] = os.getloadavg()[0]
    finally:
        lag.stop.set()
    time.sleep(args.settle)  # pages closed: their sessions go, memory is handed back
    stop.set()
    results.update(
        mem_before=mem_before,
        mem_peak=max(peak),
        mem_after=rss_mib(procs()),
        lag_ms=lag.ms,
    )
    server.terminate()
    try:
        server.wait(10)
    except subprocess.TimeoutExpired:
        server.kill()
    return results


def share(server_s: float, machine: list[float]) -> str:
    """Who used the cores: the server's CPU seconds against the rest (the browsers)."""
    busy, total = machine
    return (
        f"{100 * busy / total:.0f}% of {total:.0f} core-s: server {server_s:.1f} s, "
        f"the rest (browsers, this script, any other program) {busy - server_s:.1f} s"
    )


def report(r: dict, args) -> list[tuple[str, str]]:
    """The figures of one run, as (what, value) lines."""
    n = args.pages
    grew = 100 * (r["mem_after"] - r["mem_before"]) / r["mem_before"]
    return [
        ("page ready, all arriving at once", summary("", r["ready_first"])),
        ("  all ready after", f"{r['sessions_wall']:.1f} s"),
        ("page ready, second wave", summary("", r["ready"])),
        ("key press to update", summary("", r["step_ms"], "ms")),
        ("  steps not shown within 60 s", str(r["missed"])),
        (
            "server memory",
            f"before {r['mem_before']:.0f} MiB, peak {r['mem_peak']:.0f}, after "
            f"{r['mem_after']:.0f} ({grew:+.1f}%)",
        ),
        ("server CPU per new session", f"{r['cpu_sessions'] / n:.3f} s"),
        (
            "server CPU per step",
            f"{r['cpu_steps'] / max(1, n * args.steps) * 1000:.1f} ms (second wave's pages too)",
        ),
        ("cores busy while pages arrived", share(r["cpu_sessions"], r["machine_sessions"])),
        ("cores busy while pages stepped", share(r["cpu_steps"], r["machine_steps"])),
        ("event-loop lag (/liveness)", summary("", r["lag_ms"], "ms")),
        ("load average", f"{r['load_before']:.1f} before, {r['load_during']:.1f} during"),
        ("this machine's Python, before", f"{r['speed_ms']:.0f} ms for a fixed loop"),
    ]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pages", type=int, default=10)
    ap.add_argument("--steps", type=int, default=15)
    ap.add_argument("--num-procs", type=int, default=1)
    ap.add_argument("--url", default=None, help="path and query of every page (default: presets)")
    ap.add_argument(
        "--settle", type=float, default=80.0, help="seconds to wait after closing the pages"
    )
    ap.add_argument("--ref", default=None, help="also run the server of this commit, first")
    ap.add_argument(
        "--ref-tree",
        default=None,
        help="also run the server of the tree in this folder, first (a commit already "
        "exported, e.g. on a machine without the repository's history)",
    )
    ap.add_argument(
        "--nice-browsers",
        action="store_true",
        help="run the browsers at the lowest CPU priority (nice 19), so that the server is "
        "served first, as if the pages were on the students' own machines",
    )
    ap.add_argument(
        "--clients",
        choices=("browser", "protocol"),
        default="browser",
        help="browser: Chromium pages; protocol: pages that make the same requests and send "
        "the same messages with no browser (benchmarks/protocol_page.py), to measure the "
        "server alone",
    )
    args = ap.parse_args(argv)
    if args.clients == "protocol" and args.nice_browsers:
        ap.error("--nice-browsers is for --clients browser: protocol pages run no browser")
    print(
        f"vizmm serve --num-procs {args.num_procs}; {args.pages} pages, {args.steps} steps each; "
        + ("Bokeh-protocol pages, no browser; " if args.clients == "protocol" else "")
        + ("browsers at nice 19; " if args.nice_browsers else "")
        + f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}"
    )
    runs = []
    if args.ref:
        with tempfile.TemporaryDirectory(prefix="vizmm-ref-") as ref:
            runs.append((args.ref, report(run(export_tree(args.ref, ref), args), args)))
    elif args.ref_tree:
        tree = os.path.abspath(args.ref_tree)
        runs.append((os.path.basename(tree), report(run(tree, args), args)))
    runs.append(("this tree", report(run(ROOT, args), args)))
    for i, (what, _) in enumerate(runs[0][1]):
        print(what)
        for name, lines in runs:
            print(f"    {name:>10s}: {lines[i][1].lstrip(': ')}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
