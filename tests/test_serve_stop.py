"""Stopping ``vizmm serve --num-procs 2`` stops every process it started.

``panel serve --num-procs N`` forks N workers that share the port. The
oracle is the operating system: after SIGTERM to the ``vizmm serve`` process
(what ``kill PID`` and a service manager send), no live process is left in
the server's process group and nothing answers on the port. A server
started in the background by a script (SIGINT ignored) stops on SIGINT too:
its Panel child does not inherit the ignored signal (``/proc/PID/status``).
"""

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request

import pytest
from served import ROOT, free_port

pytestmark = pytest.mark.slow


def _group(pgid: int) -> list[int]:
    """Live (not zombie) processes of process group ``pgid``, from /proc."""
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()  # after "pid (comm) "
        state, pgrp = fields[0], int(fields[2])
        if pgrp == pgid and state != "Z":
            out.append(int(entry))
    return out


def _answers(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(1)
        return s.connect_ex(("127.0.0.1", port)) == 0


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_to_vizmm_serve_stops_every_worker(tmp_path, signum):
    port = free_port()
    exe = os.path.join(os.path.dirname(sys.executable), "vizmm")
    log = open(tmp_path / "serve.log", "w+")
    proc = subprocess.Popen(
        [exe, "serve", "--port", str(port), "--num-procs", "2"],
        cwd=ROOT,
        stdout=log,
        stderr=subprocess.STDOUT,
        env=dict(os.environ, NUMBA_ENABLE_CUDASIM="1"),
    )
    try:
        deadline = time.time() + 240
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/dashboard", timeout=60):
                    break
            except OSError:
                if proc.poll() is not None or time.time() > deadline:
                    log.seek(0)
                    pytest.fail(f"vizmm serve did not start:\n{log.read()[-3000:]}")
                time.sleep(0.5)
        # the server runs in a process group of its own: the panel process and its 2 workers
        server = [p for p in os.listdir("/proc") if p.isdigit()]
        children = [int(p) for p in server if _ppid(int(p)) == proc.pid]
        assert len(children) == 1, children
        pgid = os.getpgid(children[0])
        workers = _group(pgid)
        assert len(workers) >= 3, workers  # panel's parent and two workers
        proc.send_signal(signum)
        assert proc.wait(60) == 0
        deadline = time.time() + 15
        while _group(pgid) and time.time() < deadline:
            time.sleep(0.2)
        assert _group(pgid) == [], "server processes left running"
        assert not _answers(port)
    finally:
        if proc.poll() is None:
            proc.kill()
        log.close()


def _ppid(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
    except OSError:
        return -1
    return int(stat[stat.rindex(")") + 2 :].split()[1])


def _signal_mask(pid: int, field: str) -> int:
    """A signal mask of ``/proc/PID/status`` (``SigIgn``, ``SigCgt``) as an int."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1], 16)
    raise AssertionError(f"no {field} for process {pid}")


def _bit(signum: int) -> int:
    return 1 << (signum - 1)


def test_sigint_stops_vizmm_serve_started_in_the_background_by_a_script(tmp_path):
    # A non-interactive shell starts `cmd &` with SIGINT ignored; the server it
    # starts must still stop on SIGINT (the issue: it ignored it for good).
    port = free_port()
    exe = os.path.join(os.path.dirname(sys.executable), "vizmm")
    log = tmp_path / "serve.log"
    script = f'"{exe}" serve --port {port} >"{log}" 2>&1 & echo $!; wait $!'
    shell = subprocess.Popen(
        ["bash", "-c", script],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
        env=dict(os.environ, NUMBA_ENABLE_CUDASIM="1"),
    )
    serve = int(shell.stdout.readline())
    try:
        deadline = time.time() + 240
        while not _answers(port):
            if shell.poll() is not None or time.time() > deadline:
                pytest.fail(f"vizmm serve did not start:\n{log.read_text()[-3000:]}")
            time.sleep(0.5)
        children = [int(p) for p in os.listdir("/proc") if p.isdigit() and _ppid(int(p)) == serve]
        assert len(children) == 1, children
        (panel,) = children
        # vizmm serve handles SIGINT although it was started with it ignored, and
        # its Panel child was started with SIGINT at its default: Python's handler.
        assert _signal_mask(serve, "SigCgt") & _bit(signal.SIGINT)
        assert not _signal_mask(panel, "SigIgn") & _bit(signal.SIGINT)
        assert _signal_mask(panel, "SigCgt") & _bit(signal.SIGINT)
        pgid = os.getpgid(panel)
        os.kill(serve, signal.SIGINT)
        assert shell.wait(60) == 0, log.read_text()[-3000:]
        deadline = time.time() + 15
        while _group(pgid) and time.time() < deadline:
            time.sleep(0.2)
        assert _group(pgid) == [], "server processes left running"
        assert not _answers(port)
    finally:
        if shell.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(serve, signal.SIGKILL)
            shell.kill()
        shell.stdout.close()
