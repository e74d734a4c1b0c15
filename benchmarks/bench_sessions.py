"""What a new visitor costs the server: CPU per session, arrivals at once, memory after.

Run from the repository root::

    .venv/bin/python benchmarks/bench_sessions.py                 # this tree
    .venv/bin/python benchmarks/bench_sessions.py --ref c33c8b0   # before and after
    .venv/bin/python benchmarks/bench_sessions.py --app large_view --pages 1 --waves 2

Serves the dashboard with ``vizmm serve`` on a free port and opens sessions
as a page does, without a browser (so that browsers do not share the cores
with the server): a websocket to the app, its document pulled, then the
event BokehJS sends once it has drawn it, and the page's content received
(the apps build it then). Waves of ``--pages`` sessions arrive at once,
each on a preset (round robin); they are closed and the server is given
``--settle`` seconds to let them go.

Prints, per wave: the server's CPU time (user + system) per session, the
time until every document of the wave was received, the server's resident
memory before the first wave, at the wave's peak and after its sessions went.
With ``--ref REV`` the server of commit REV (its tree exported with
``git archive``) runs beside this tree's: both are up at once and take their
waves in turn, the order swapped every wave, so that a shared machine's
drifting load falls on both; each server's median over its waves closes its
lines.

Targets (issue "A server a whole class can share"): ten arrivals at once all
ready within 4 s; memory back within 10% of its start after the pages close;
a second session of the large view ready within 3 s, with at most 80 MB more.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from urllib.parse import urlencode

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from load_test import PRESETS, ROOT, cpu_s, export_tree, free_port, rss_mib, tree_of  # noqa: E402


async def _read(ws) -> tuple[dict, str]:
    """One message of Bokeh's protocol: its header and content (buffers read and dropped)."""
    header = json.loads(await ws.read_message())
    await ws.read_message()  # metadata
    content = await ws.read_message()
    for _ in range(header.get("num_buffers", 0)):
        await ws.read_message()
        await ws.read_message()
    return header, content


async def _send(ws, msgtype: str, content: dict) -> None:
    for frame in ({"msgid": uuid.uuid4().hex, "msgtype": msgtype}, {}, content):
        await ws.write_message(json.dumps(frame))


#: What BokehJS sends once it has rendered a document; Panel then runs the
#: page's ``onload`` callbacks (the dashboard is built then: ``defer_load``).
DOCUMENT_READY = {
    "events": [
        {
            "kind": "MessageSent",
            "msg_type": "bokeh_event",
            "msg_data": {"type": "event", "name": "document_ready", "values": {"type": "map"}},
        }
    ]
}


async def open_page(url: str, arguments: dict, marker: str = "vizmm-status"):
    """A session as a page opens one: connect, pull the document, say it is rendered,
    and wait for the page's content (a document or patch that holds ``marker``); the socket.
    """
    from bokeh.util.token import generate_jwt_token, generate_session_id
    from tornado.websocket import websocket_connect

    token = generate_jwt_token(generate_session_id())
    ws = await websocket_connect(
        f"{url}?{urlencode(arguments)}",
        subprotocols=["bokeh", token],
        max_message_size=200 * 2**20,
    )
    while (await _read(ws))[0]["msgtype"] != "ACK":
        pass
    await _send(ws, "PULL-DOC-REQ", {})
    while True:
        header, content = await _read(ws)
        if header["msgtype"] == "PULL-DOC-REPLY":
            break
    if marker not in content:  # built when the page says it is ready
        await _send(ws, "PATCH-DOC", DOCUMENT_READY)
        while True:
            header, content = await _read(ws)
            if header["msgtype"] == "PATCH-DOC" and marker in content:
                break
    return ws


class Server:
    """One ``vizmm serve`` of the repository at ``tree``, up and answering."""

    def __init__(self, tree: str, args):
        from load_test import server_command

        self.args = args
        port = free_port()
        cmd, extra = server_command(tree, port, args.num_procs)
        env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1", PYTHONPATH=tree, **extra)
        log_path = os.path.join(tempfile.gettempdir(), f"vizmm-sessions-{port}.log")
        self.log = open(log_path, "w")  # noqa: SIM115
        t0 = time.perf_counter()
        self.proc = subprocess.Popen(
            cmd, cwd=tree, stdout=self.log, stderr=subprocess.STDOUT, env=env
        )
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/liveness", timeout=5):
                    break
            except OSError:
                if self.proc.poll() is not None:
                    raise RuntimeError(f"the server did not start; see {log_path}") from None
                time.sleep(0.3)
        self.started = time.perf_counter() - t0
        self.url = f"ws://127.0.0.1:{port}/{args.app}/ws"
        time.sleep(1)
        self.before = rss_mib(self.pids())
        self.waves: list[tuple[float, float, float, float]] = []

    def pids(self) -> list[int]:
        return tree_of(self.proc.pid)

    async def wave(self) -> None:
        """``--pages`` sessions at once; then closed, and ``--settle`` seconds to go."""
        args = self.args

        def query(i):
            return {"trace": PRESETS[i % len(PRESETS)]} if args.app == "dashboard" else {}

        c0, t0 = cpu_s(self.pids()), time.perf_counter()
        # the dashboard's page is ready with its status; the large view's once its
        # trace is shown (its status then says data-ready="true", HTML-escaped in the pane)
        marker = "vizmm-status" if args.app == "dashboard" else "data-ready=&quot;true&quot;"
        pages = await asyncio.gather(
            *(open_page(self.url, query(i), marker) for i in range(args.pages))
        )
        wall, cpu, peak = time.perf_counter() - t0, cpu_s(self.pids()) - c0, rss_mib(self.pids())
        for ws in pages:
            ws.close()
        await asyncio.sleep(args.settle)
        self.waves.append((cpu / args.pages, wall, peak, rss_mib(self.pids())))

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(10)
        self.log.close()

    def lines(self) -> list[str]:
        """What to print of this server's waves."""
        pages = self.args.pages
        out = [f"server up after {self.started:.1f} s, {self.before:.0f} MiB"]
        for i, (cpu, wall, peak, after) in enumerate(self.waves):
            out.append(
                f"wave {i + 1}: {cpu:.2f} s CPU per session, all {pages} documents sent after "
                f"{wall:.1f} s; memory peak {peak:.0f} MiB, after {after:.0f} MiB "
                f"({100 * (after - self.before) / self.before:+.0f}%)"
            )
        out.append(
            f"median of {len(self.waves)} waves: "
            f"{statistics.median(w[0] for w in self.waves):.2f} s CPU per session, "
            f"all sent after {statistics.median(w[1] for w in self.waves):.1f} s"
        )
        return out


def run(trees: list[tuple[str, str]], args) -> list[tuple[str, Server]]:
    """Start a server per ``(name, tree)``; run the waves, alternating between servers.

    With two servers (``--ref``), both are up at once and take their waves in
    turn, the first server first in odd waves and second in even ones, so
    that the machine's load, which drifts on a shared machine, falls on both.
    """
    servers = []
    try:
        for name, tree in trees:
            servers.append((name, Server(tree, args)))

        async def waves():
            for i in range(args.waves):
                order = servers if i % 2 == 0 else servers[::-1]
                for _name, server in order:
                    await server.wave()

        asyncio.run(waves())
    finally:
        for _name, server in servers:
            server.stop()
    return servers


def main(argv=None) -> int:
    """Run the benchmark and print the numbers; returns the exit status."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pages", type=int, default=10, help="sessions arriving at once per wave")
    ap.add_argument("--waves", type=int, default=3)
    ap.add_argument("--settle", type=float, default=70.0, help="seconds after closing a wave")
    ap.add_argument("--num-procs", type=int, default=1, help="server processes")
    ap.add_argument("--ref", default=None, help="also run the server of this commit, first")
    ap.add_argument(
        "--app", choices=("dashboard", "large_view"), default="dashboard", help="the page opened"
    )
    args = ap.parse_args(argv)
    print(
        f"{args.app}: {args.waves} waves of {args.pages} sessions arriving at once, "
        f"{args.num_procs} server process(es); "
        f"{os.cpu_count()} cores, "
        f"load average {os.getloadavg()[0]:.1f}"
    )
    with tempfile.TemporaryDirectory(prefix="vizmm-ref-") as ref:
        trees = [(args.ref, export_tree(args.ref, ref))] if args.ref else []
        trees.append(("this tree", ROOT))
        servers = run(trees, args)
    for name, server in servers:
        print(f"{name}:")
        for line in server.lines():
            print(f"    {line}")
    print(f"load average after: {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
