"""The first five minutes: started beside a clone, progress on long work, one process.

``vizmm serve`` started in the folder that holds a clone named ``vizmm``
(git's default name) serves the installed pages; a missing data file is
named in one line with exit code 2. A recording tells its progress, and a
simulator recording in a fresh process runs in that process.
"""

import importlib.resources
import os
import signal
import subprocess
import sys
import time
import types
import urllib.request

import instrument_kernels as IK
import numpy as np
import pytest
from served import free_port

import vizmm
import vizmm.export
import vizmm.replay
from vizmm.cli import main
from vizmm.record import recorder
from vizmm.serve import command


def _clone(parent):
    """A folder laid out as a clone of vizmm's repository (no ``__init__.py`` at its top)."""
    top = parent / "vizmm"
    (top / "vizmm").mkdir(parents=True)
    (top / "vizmm" / "__init__.py").write_text('"""A clone\'s package, never imported."""\n')
    (top / "pyproject.toml").write_text('[project]\nname = "vizmm"\n')
    return top


@pytest.mark.slow
def test_serve_started_beside_a_clone_serves_the_installed_pages(tmp_path):
    _clone(tmp_path)
    port = free_port()
    exe = os.path.join(os.path.dirname(sys.executable), "vizmm")
    log = open(tmp_path / "serve.log", "w+")
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1")
    env.pop("PYTHONPATH", None)
    proc = subprocess.Popen(
        [exe, "serve", "--port", str(port)],
        cwd=tmp_path,
        stdout=log,
        stderr=subprocess.STDOUT,
        env=env,
    )
    try:
        deadline = time.time() + 240
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/dashboard", timeout=60) as r:
                    assert r.status == 200
                    break
            except OSError:
                if proc.poll() is not None or time.time() > deadline:
                    log.seek(0)
                    pytest.fail(f"vizmm serve did not start (exit {proc.poll()}):\n{log.read()}")
                time.sleep(0.5)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(60) == 0
        log.seek(0)
        assert "ERROR" not in log.read()
    finally:
        if proc.poll() is None:
            proc.kill()
        log.close()


def test_a_missing_data_file_is_named_in_one_line_with_exit_2(tmp_path, monkeypatch, capsys):
    data = tmp_path / "data"
    data.mkdir()
    (data / "presets.json").write_text('{"presets": []}')  # device-presets.json is missing
    monkeypatch.setattr(command, "_data_folder", lambda: data)
    assert main(["serve", "--dry-run"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1
    assert err == (
        f"vizmm: error: vizmm's data file {data / 'device-presets.json'} is missing: "
        "reinstall vizmm ('pip install vizmm', or 'pip install -e .' in its repository)\n"
    )


def test_a_clone_imported_in_place_of_the_package_is_named(tmp_path, monkeypatch):
    # What Python imports as `vizmm` from a folder holding a clone: the clone's
    # folder, as a namespace package (no __file__), whose data/ does not exist.
    top = _clone(tmp_path)
    clone = types.ModuleType("vizmm")
    clone.__path__ = [str(top)]
    monkeypatch.setitem(sys.modules, "vizmm", clone)
    with pytest.raises(command.ServeError) as info:
        command.check_data_files(top / "data")
    assert str(info.value) == (
        f"vizmm's data file {top / 'data' / 'presets.json'} is missing: 'vizmm' was imported "
        f"from the folder {top}, not the installed package; start vizmm from another folder"
    )


# ------------------------------------------------------------ progress
def _blocks(width: int, tile_width: int) -> int:
    """The book's grid: ceil(Width / TILE_WIDTH) blocks a side (Fig. 5.9's launch)."""
    return (-(-width // tile_width)) ** 2


def test_a_book_kernels_recording_calls_progress_with_done_and_total():
    seen = []
    trace = vizmm.record(
        width=6,
        tile_width=2,
        kernel="tiled",
        backend="simulator",
        quiet=True,
        progress=lambda done, total: seen.append((done, total)),
    )
    n = _blocks(6, 2)
    assert seen == [(i, n) for i in range(1, n + 1)]
    assert len(trace.detail_blocks) == n
    seen.clear()
    vizmm.record(
        width=6,
        tile_width=2,
        backend="simulator",
        quiet=True,
        window=[(0, 0), (2, 1)],
        progress=lambda done, total: seen.append((done, total)),
    )
    assert seen == [(1, 2), (2, 2)]  # the simulator runs only the window's blocks


def test_a_students_kernel_function_calls_progress():
    seen = []
    vizmm.record(
        width=4,
        tile_width=2,
        kernel=IK.tiled_2d,
        backend="simulator",
        quiet=True,
        progress=lambda done, total: seen.append((done, total)),
    )
    assert seen == [(i, 4) for i in range(1, 5)]


STUDENT = """
from numba import cuda, float32

TILE_WIDTH = 2


@cuda.jit
def matmul(M, N, P, Width):
    Mds = cuda.shared.array((TILE_WIDTH, TILE_WIDTH), float32)
    Nds = cuda.shared.array((TILE_WIDTH, TILE_WIDTH), float32)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    Row = cuda.blockIdx.y * TILE_WIDTH + ty
    Col = cuda.blockIdx.x * TILE_WIDTH + tx
    print("a student's print, on the worker's stdout")
    Pvalue = float32(0)
    for ph in range(Width // TILE_WIDTH):
        Mds[ty, tx] = M[Row * Width + ph * TILE_WIDTH + tx]
        Nds[ty, tx] = N[(ph * TILE_WIDTH + ty) * Width + Col]
        cuda.syncthreads()
        for k in range(TILE_WIDTH):
            Pvalue += Mds[ty, k] * Nds[k, tx]
        cuda.syncthreads()
    P[Row * Width + Col] = Pvalue
"""


def test_a_students_kernel_file_recorded_in_a_worker_calls_progress_here(tmp_path):
    src = tmp_path / "student.py"
    src.write_text(STUDENT)
    seen = []
    trace = vizmm.record(
        width=6,
        tile_width=2,
        kernel=f"{src}:matmul",
        backend="simulator",
        quiet=True,
        progress=lambda done, total: seen.append((done, total)),
    )
    n = _blocks(6, 2)
    np.testing.assert_array_equal(trace.P, np.asarray(trace.M) @ np.asarray(trace.N))
    # the worker's counts arrive as they come (some may be read together): rising to n of n
    assert seen and seen[-1] == (n, n)
    assert all(total == n for _, total in seen)
    assert [done for done, _ in seen] == sorted({done for done, _ in seen})


NO_WORKER = (
    "import os, vizmm\n"
    "from vizmm.record import recorder\n"
    "def worker(*a, **k):\n"
    "    raise SystemExit('a worker was started')\n"
    "recorder._record_in_subprocess = worker\n"
)
API = (
    "seen = []\n"
    "t = vizmm.record(width=4, tile_width=2, kernel='tiled', backend='simulator', quiet=True,\n"
    "                 progress=lambda d, n: seen.append((d, n)))\n"
    "import sys\n"
    "print(t.backend, os.environ['VIZMM_KERNELS_TARGET'], 'numba' in sys.modules, *seen[-1])\n"
)
# Fig. 5.14's host code chooses TILE_WIDTH (32 for the A100 preset), said before recording
CLI_DYNAMIC = (
    "from vizmm.cli import main\n"
    "argv = ['record', '--kernel', 'dynamic', '--tile-width', 'device', '--width', '2',\n"
    "        '--backend', 'simulator', '-o', {out!r}]\n"
    "assert main(argv) == 0\n"
    "t = vizmm.load({out!r})\n"
    "import sys\n"
    "print(t.backend, os.environ['VIZMM_KERNELS_TARGET'], 'numba' in sys.modules, t.tile_width,\n"
    "      t.kernel)\n"
)


@pytest.mark.parametrize(
    "code, printed",
    [(API, "simulator none False 4 4"), (CLI_DYNAMIC, "simulator none False 32 dynamic")],
    ids=["api", "cli-dynamic"],
)
def test_a_fresh_process_records_in_the_simulator_itself(code, printed, tmp_path):
    # Nothing has imported numba: the process records in vizmm's simulator here, with
    # no worker, and never imports numba (its kernels are kept, not compiled).
    env = dict(os.environ)
    env.pop("NUMBA_ENABLE_CUDASIM", None)
    code = NO_WORKER + code.format(out=str(tmp_path / "t.vizmm"))
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1].split() == printed.split()


def _record(width, tile_width, tmp_path):
    out = tmp_path / "bar.vizmm"
    return ["record", "--width", str(width), "-t", str(tile_width), "-o", str(out)]


def _bar_drawn(argv, terminal: bool) -> str:
    """What ``vizmm ARGV`` writes to stderr, a terminal (a pseudo-terminal) or a pipe."""
    cmd = [os.path.join(os.path.dirname(sys.executable), "vizmm"), *argv]
    env = dict(os.environ)
    env.pop("NUMBA_ENABLE_CUDASIM", None)
    if not terminal:
        done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        return done.stderr
    import fcntl
    import pty
    import struct
    import termios

    leader, follower = pty.openpty()
    # a terminal of 30 rows and 100 columns (a new pseudo-terminal has none: no room for a bar)
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 100, 0, 0))
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=follower)
    os.close(follower)
    chunks = []
    try:
        while True:
            try:
                chunk = os.read(leader, 4096)
            except OSError:  # EIO: the other end closed (the command ended)
                break
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(leader)
        assert proc.wait(300) == 0, b"".join(chunks).decode(errors="replace")
    return b"".join(chunks).decode(errors="replace")


@pytest.mark.slow
def test_record_shows_a_progress_bar_on_a_terminal_only(tmp_path):
    width, tile_width = 144, 16  # 81 blocks, estimated at over a second in the simulator
    est = vizmm.estimate(width, width, width, tile_width, "boundary")
    assert est.simulator_seconds > recorder.PROGRESS_AFTER_S
    n = _blocks(width, tile_width)
    args = [*_record(width, tile_width, tmp_path), "--backend", "simulator"]
    drawn = _bar_drawn(args, terminal=True)
    assert f"/{n} [" in drawn and "block" in drawn and "simulating" in drawn, drawn
    piped = _bar_drawn(args, terminal=False)
    assert f"/{n} [" not in piped and "simulating" not in piped, piped
    # a short one draws none, even on a terminal
    small = _bar_drawn([*_record(4, 2, tmp_path), "--backend", "simulator"], terminal=True)
    assert "simulating" not in small and "/4 [" not in small, small


@pytest.mark.slow
def test_export_shows_a_progress_bar_on_a_terminal_only(tmp_path):
    fig58 = str(importlib.resources.files("vizmm") / "data" / "fig5-8.vizmm")
    trace = vizmm.load(fig58)
    n = len(vizmm.replay.Replay(trace, (0, 0)))  # one frame per step of block (0, 0)
    assert n > vizmm.export.PROGRESS_AFTER_FRAMES
    args = ["export", fig58, "--size", "320x180", "-o", str(tmp_path / "f.gif")]
    drawn = _bar_drawn(args, terminal=True)
    assert f"/{n} [" in drawn and "frame" in drawn, drawn
    assert f"/{n} [" not in _bar_drawn(args, terminal=False)


@pytest.mark.slow
def test_grading_a_folder_shows_a_progress_bar_on_a_terminal_only(tmp_path):
    # two submissions x the example's cases: the bar counts cases, on a terminal only
    import tomllib

    here = os.path.dirname(os.path.abspath(__file__))
    example = os.path.join(here, "..", "examples")
    with open(os.path.join(example, "assignment.toml"), "rb") as f:
        n = 2 * len(tomllib.load(f)["case"])
    folder = tmp_path / "submissions"
    folder.mkdir()
    with open(os.path.join(example, "tiled_matmul_correct.py"), encoding="utf-8") as f:
        text = f.read()
    for name in ("a.py", "b.py"):
        (folder / name).write_text(text)
    csv = str(tmp_path / "class.csv")
    args = ["grade", os.path.join(example, "assignment.toml"), str(folder), "--csv", csv]
    drawn = _bar_drawn(args, terminal=True)
    assert f"/{n} [" in drawn and "grading" in drawn and "case" in drawn, drawn
    piped = _bar_drawn(args, terminal=False)
    assert f"/{n} [" not in piped and "grading" not in piped, piped
