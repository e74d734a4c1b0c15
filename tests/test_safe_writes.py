"""Writes never destroy what is at the destination, and SIGTERM is handled like SIGINT.

``-o`` onto a FIFO, a character device or a symbolic link writes through it
(the FIFO stays a FIFO, ``/dev/null`` stays a device, the link stays a link);
a socket or a block device is refused; temporary files are named for their
writer's pid and removed by a later write once that process is dead (the
answer to SIGKILL); SIGTERM during ``vizmm record`` or ``vizmm export``
unwinds like Ctrl-C (exit 143, ``vizmm: terminated``) and leaves no
temporary file, no scratch folder, no partial output and no child process.

``/dev/null`` and ``/dev/full`` are written only with ``os.replace``,
``os.rename`` and ``os.unlink`` refusing anything under ``/dev`` (the tests
run as root: a bug must fail a test, never replace the machine's
``/dev/null``), and after the FIFO tests, which take the same code path.
"""

import errno
import os
import select
import signal
import socket
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import vizmm
from vizmm.cli import main
from vizmm.trace import atomic_write, from_bytes
from vizmm.trace import destination as dst

TINY = ["--width", "4", "--tile-width", "2", "--kernel", "tiled", "--backend", "simulator"]


@pytest.fixture(scope="module")
def tiled(record_sim):
    return record_sim(width=4, tile_width=2, kernel="tiled")


def _env(tmp_path):
    """The simulator, and a private system temp folder (TMPDIR) to look into afterwards."""
    systmp = tmp_path / "systmp"
    systmp.mkdir(exist_ok=True)
    return dict(os.environ, NUMBA_ENABLE_CUDASIM="1", TMPDIR=str(systmp)), systmp


def _vizmm(*args):
    return [sys.executable, "-m", "vizmm.cli", *args]


def _children(pid):
    """The pids of every descendant of ``pid`` (read from /proc)."""
    parents = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                parents.setdefault(int(fields[1]), []).append(int(name))
            except (OSError, IndexError, ValueError):
                continue
    out, todo = [], [pid]
    while todo:
        for child in parents.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def _running(pid):
    """Whether ``pid`` exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


class _StderrReader:
    """Collect a process's stderr in a thread; wait until some text shows up."""

    def __init__(self, stream):
        self.text = ""
        self._stream = stream
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self):
        for chunk in iter(lambda: os.read(self._stream.fileno(), 4096), b""):
            self.text += chunk.decode(errors="replace")

    def wait_for(self, text, timeout):
        end = time.monotonic() + timeout
        while text not in self.text:
            assert time.monotonic() < end, f"no {text!r} within {timeout} s: {self.text[-500:]}"
            time.sleep(0.02)

    def rest(self):
        self._thread.join(timeout=10)
        self._stream.close()
        return self.text


@pytest.fixture
def no_replacing_dev(monkeypatch):
    """Fail the test on any rename onto /dev or any removal of a non-regular file."""
    real_replace, real_rename, real_unlink = os.replace, os.rename, os.unlink

    def renaming(real):
        def call(src, dst, *args, **kwargs):
            path = os.path.abspath(os.fsdecode(dst))
            assert not path.startswith("/dev/"), f"renamed {src} onto {path}"
            return real(src, dst, *args, **kwargs)

        return call

    def unlink(path, *args, **kwargs):
        mode = os.lstat(path).st_mode
        assert stat.S_ISREG(mode) or stat.S_ISLNK(mode), f"removed the non-file {path}"
        return real_unlink(path, *args, **kwargs)

    monkeypatch.setattr(os, "replace", renaming(real_replace))
    monkeypatch.setattr(os, "rename", renaming(real_rename))
    monkeypatch.setattr(os, "unlink", unlink)
    monkeypatch.setattr(os, "remove", unlink)


# ------------------------------------------------------------------ FIFO
@pytest.mark.timeout(60)
def test_record_into_a_fifo_with_a_reader(tmp_path, tiled):
    fifo = tmp_path / "trace.fifo"
    os.mkfifo(fifo)
    env, _ = _env(tmp_path)
    # the reader is open before the writer starts (as 'cat FIFO > copy' would be)
    rfd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    proc = subprocess.Popen(
        _vizmm("record", *TINY, "-q", "-o", str(fifo)),
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    chunks = []
    try:
        while True:
            select.select([rfd], [], [], 1.0)
            try:
                b = os.read(rfd, 1 << 16)
            except BlockingIOError:
                continue
            if b:
                chunks.append(b)
            elif chunks or proc.poll() is not None:
                break  # the writer closed it
            else:
                time.sleep(0.01)  # no writer yet
    finally:
        os.close(rfd)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err.decode()
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    back = from_bytes(b"".join(chunks))
    assert back.launch == tiled.launch
    for name in ("M", "N", "P", "loads", "pvalue"):
        assert (getattr(back, name) == getattr(tiled, name)).all(), name
    assert sorted(os.listdir(tmp_path)) == ["systmp", "trace.fifo"]


@pytest.mark.timeout(60)
def test_record_into_a_fifo_nothing_reads_is_refused_at_once(tmp_path):
    fifo = tmp_path / "trace.fifo"
    os.mkfifo(fifo)
    env, _ = _env(tmp_path)
    done = subprocess.run(
        _vizmm("record", *TINY, "-q", "-o", str(fifo)), env=env, capture_output=True, timeout=50
    )
    assert done.returncode == 2
    err = done.stderr.decode()
    assert err.count("\n") == 1 and err.startswith("vizmm: error: cannot write")
    assert f"nothing is reading the FIFO {fifo}" in err
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert sorted(os.listdir(tmp_path)) == ["systmp", "trace.fifo"]


def test_fifo_reader_gone_midway_is_an_error_not_a_hang(tmp_path):
    fifo = tmp_path / "f"
    os.mkfifo(fifo)
    rfd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    data = b"x" * (4 << 20)  # more than a pipe holds: the writer blocks, then the reader goes

    def close_soon():
        time.sleep(0.3)
        os.close(rfd)

    closer = threading.Thread(target=close_soon)
    closer.start()
    with pytest.raises(BrokenPipeError, match="closed it after") as info:
        atomic_write(fifo, data)
    closer.join()
    assert info.value.filename == str(fifo)  # the CLI tells it from its own stdout's EPIPE
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


# -------------------------------------------------------------- symlinks
def test_record_onto_a_symlink_writes_its_target(tmp_path, capsys):
    (tmp_path / "data").mkdir()
    (tmp_path / "links").mkdir()
    target = tmp_path / "data" / "fig58.vizmm"
    target.write_bytes(b"an older trace")
    link = tmp_path / "links" / "current.vizmm"
    link.symlink_to(os.path.join("..", "data", "fig58.vizmm"))  # relative, as people make them
    before = os.readlink(link)
    assert main(["record", *TINY, "-q", "-o", str(link)]) == 0
    assert os.path.islink(link) and os.readlink(link) == before
    assert vizmm.load(target).launch.tile_width == 2
    assert os.listdir(tmp_path / "data") == ["fig58.vizmm"]
    assert os.listdir(tmp_path / "links") == ["current.vizmm"]
    assert stat.S_IMODE(os.stat(target).st_mode) == 0o666 & ~_umask()


def _umask():
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def test_dangling_symlink_creates_its_target_or_says_why_not(tmp_path, tiled):
    link = tmp_path / "new.vizmm"
    link.symlink_to("made.vizmm")
    assert tiled.save(link) == str(link)
    assert os.path.islink(link) and vizmm.load(tmp_path / "made.vizmm").launch == tiled.launch
    lost = tmp_path / "lost.vizmm"
    lost.symlink_to(tmp_path / "no-such-folder" / "t.vizmm")
    with pytest.raises(FileNotFoundError, match="symbolic link to .*no-such-folder.* does not"):
        tiled.save(lost)
    assert os.path.islink(lost)
    assert sorted(os.listdir(tmp_path)) == ["lost.vizmm", "made.vizmm", "new.vizmm"]


def test_symlink_loop_and_link_to_a_folder_are_refused(tmp_path, tiled):
    loop = tmp_path / "loop.vizmm"
    loop.symlink_to("loop.vizmm")
    with pytest.raises(OSError, match="loop of symbolic links"):
        tiled.save(loop)
    (tmp_path / "folder").mkdir()
    (tmp_path / "to-folder").symlink_to("folder")
    with pytest.raises(IsADirectoryError, match="it is a folder"):
        tiled.save(tmp_path / "to-folder")
    assert sorted(os.listdir(tmp_path)) == ["folder", "loop.vizmm", "to-folder"]
    assert os.listdir(tmp_path / "folder") == []


# ---------------------------------------------- sockets and block devices
def test_socket_is_refused_never_replaced(tmp_path, tiled, capsys):
    path = tmp_path / "s.vizmm"
    sock = socket.socket(socket.AF_UNIX)
    try:
        sock.bind(str(path))
        with pytest.raises(OSError, match="it is a socket, not a file"):
            tiled.save(path)
        assert main(["record", *TINY, "-q", "-o", str(path)]) == 2
        err = capsys.readouterr().err
        assert (
            err == f"vizmm: error: cannot write {path}: it is a socket, not a file; vizmm "
            "writes files, FIFOs and character devices and never replaces anything else\n"
        )
        assert stat.S_ISSOCK(os.lstat(path).st_mode)
    finally:
        sock.close()
    assert os.listdir(tmp_path) == ["s.vizmm"]


def test_block_device_is_refused_never_opened(tmp_path, tiled, monkeypatch):
    # a file that os.lstat reports as a block device: the decision alone is tested,
    # no disk of this machine is ever at risk
    path = tmp_path / "disk"
    path.write_bytes(b"not to be touched")
    real_lstat, real_open = os.lstat, os.open

    def lstat(p, *args, **kwargs):
        st = real_lstat(p, *args, **kwargs)
        if os.fspath(p) == str(path):
            fields = list(st)
            fields[0] = stat.S_IFBLK | 0o660
            return os.stat_result(fields)
        return st

    def never_open(p, *args, **kwargs):
        assert os.fspath(p) != str(path), "opened the block device"
        return real_open(p, *args, **kwargs)

    monkeypatch.setattr(os, "lstat", lstat)
    monkeypatch.setattr(os, "open", never_open)
    with pytest.raises(OSError, match=r"it is a block device \(a disk or a partition\)"):
        atomic_write(path, b"trace")
    monkeypatch.undo()
    assert path.read_bytes() == b"not to be touched"
    assert os.listdir(tmp_path) == ["disk"]


# ---------------------------------------------------- character devices
def test_record_onto_dev_null_writes_through(no_replacing_dev, capsys):
    assert stat.S_ISCHR(os.lstat("/dev/null").st_mode)
    assert dst.inspect("/dev/null").kind == "character device"
    before = set(os.listdir("/dev"))
    assert main(["record", *TINY, "-o", "/dev/null"]) == 0
    out = capsys.readouterr().out
    assert "wrote /dev/null (" in out
    assert stat.S_ISCHR(os.lstat("/dev/null").st_mode)
    assert os.stat("/dev/null").st_rdev == os.makedev(1, 3)
    assert not [n for n in set(os.listdir("/dev")) - before if n.startswith(".vizmm")]


def test_dev_full_says_no_space(no_replacing_dev, capsys):
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full here")
    assert main(["record", *TINY, "-q", "-o", "/dev/full"]) == 2
    err = capsys.readouterr().err
    assert err == "vizmm: error: cannot write /dev/full: no space left on the device /dev/full\n"
    assert stat.S_ISCHR(os.lstat("/dev/full").st_mode)


def test_replace_refuses_a_destination_that_changed_while_writing(tmp_path, tiled, monkeypatch):
    path = tmp_path / "t.vizmm"
    real_mkstemp = dst.tempfile.mkstemp

    def mkstemp_then_fifo(*args, **kwargs):  # a FIFO appears while the data is written
        made = real_mkstemp(*args, **kwargs)
        os.mkfifo(path)
        return made

    monkeypatch.setattr(dst.tempfile, "mkstemp", mkstemp_then_fifo)
    with pytest.raises(FileExistsError, match="became a fifo while vizmm wrote it"):
        tiled.save(path)
    assert stat.S_ISFIFO(os.lstat(path).st_mode)
    assert os.listdir(tmp_path) == ["t.vizmm"]


# ------------------------------------------------------ dead writers' leftovers
def _dead_pid():
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    assert not dst.pid_alive(proc.pid)
    return proc.pid


def test_leftovers_of_dead_writers_are_removed_live_ones_kept(tmp_path, tiled):
    dead = _dead_pid()
    stale = tmp_path / f".vizmm-{dead}-x.tmp"
    stale.write_bytes(b"a complete trace whose rename never came")
    stale_dir = tmp_path / f".vizmm-{dead}-mp4-y.tmp"
    stale_dir.mkdir()
    (stale_dir / "export.mp4").write_bytes(b"half a video")
    live = tmp_path / f".vizmm-{os.getpid()}-x.tmp"  # this process: alive
    live.write_bytes(b"being written")
    unnamed = tmp_path / ".vizmm-abcd1234.tmp"  # no pid in the name: not ours to judge
    unnamed.write_bytes(b"?")
    tiled.save(tmp_path / "t.vizmm")
    assert sorted(os.listdir(tmp_path)) == sorted([live.name, unnamed.name, "t.vizmm"])


def test_pid_alive(monkeypatch):
    assert dst.pid_alive(os.getpid())
    assert not dst.pid_alive(_dead_pid())
    assert dst.pid_alive(0) and dst.pid_alive(-1)  # process groups are never "dead"

    def denied(pid, sig):
        raise PermissionError(errno.EPERM, "Operation not permitted")

    monkeypatch.setattr(os, "kill", denied)
    assert dst.pid_alive(12345)  # another user's process is alive


def test_temporary_names_carry_the_pid(tmp_path, tiled, monkeypatch):
    seen = []
    real = dst.tempfile.mkstemp

    def spy(*args, **kwargs):
        fd, name = real(*args, **kwargs)
        seen.append(os.path.basename(name))
        return fd, name

    monkeypatch.setattr(dst.tempfile, "mkstemp", spy)
    tiled.save(tmp_path / "t.vizmm")
    assert len(seen) == 1 and seen[0].startswith(f".vizmm-{os.getpid()}-")
    assert seen[0].endswith(".tmp") and dst._LEFTOVER.match(seen[0])


# ------------------------------------------------------------------ SIGTERM
#: What shows a recording under way in each simulator: Numba's runs a block's 16 x 16
#: threads as the process's threads; vizmm's allocates the access log (a 256 x 256 launch:
#: hundreds of MiB) before its first block.
_BUSY = {
    "numba-sim": (["--width", "64"], lambda pid: _threads(pid) >= 16 * 16),
    "simulator": (["--width", "256"], lambda pid: _rss(pid) > 256 << 20),
}


@pytest.mark.slow  # a recording process, signalled
@pytest.mark.timeout(60)
@pytest.mark.parametrize("backend", ["simulator", "numba-sim"])
def test_sigterm_during_record(tmp_path, backend):
    if backend == "numba-sim":
        pytest.importorskip("numba.cuda")
    env, systmp = _env(tmp_path)
    out = tmp_path / "big.vizmm"
    size, busy = _BUSY[backend]
    proc = subprocess.Popen(
        _vizmm(
            "record", *size, "--tile-width", "16", "--kernel", "tiled", "--backend", backend,
            "-o", str(out),
        ),
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )  # fmt: skip
    err = _StderrReader(proc.stderr)
    try:
        end = time.monotonic() + 40
        while not busy(proc.pid):
            assert proc.poll() is None and time.monotonic() < end, err.rest()[-500:]
            time.sleep(0.02)
        children = _children(proc.pid)
        proc.send_signal(signal.SIGTERM)
        t0 = time.monotonic()
        proc.wait(timeout=30)
        stop_s = time.monotonic() - t0
    finally:
        if proc.poll() is None:
            proc.kill()
    text = err.rest()
    assert proc.returncode == 143, text[-500:]
    assert text.rstrip("\n").endswith("vizmm: terminated")
    assert "Traceback" not in text
    assert os.listdir(tmp_path) == ["systmp"]  # no trace, no temporary file
    assert os.listdir(systmp) == []
    assert not [c for c in children if _running(c)]
    assert stop_s < 20


#: A user's kernel file records in a worker process (vizmm/record/worker.py) whichever
#: simulator runs it; Numba's also does when numba here is bound to the GPU.
_WORKER = {
    "numba-sim": ["--width", "64", "--tile-width", "16", "--kernel", "tiled"],
    "simulator": [
        "--width", "128", "--tile-width", "2", "--kernel",
        str(Path(__file__).resolve().parents[1] / "benchmarks" / "labelled" / "kernels"
            / "c05_fig513_2d_w5.py") + ":tiled_boundary_2d",
    ],
}  # fmt: skip


@pytest.mark.slow  # a worker process, signalled
@pytest.mark.timeout(90)
@pytest.mark.parametrize("backend", ["simulator", "numba-sim"])
def test_sigterm_stops_the_recording_worker_process(tmp_path, backend):
    env, systmp = _env(tmp_path)
    if backend == "numba-sim":
        pytest.importorskip("numba.cuda")
        env["NUMBA_ENABLE_CUDASIM"] = "0"  # numba in GPU mode here: the simulator's worker
        script = "import sys, numba.cuda; from vizmm.cli import main; sys.exit(main(sys.argv[1:]))"
    else:
        script = "import sys; from vizmm.cli import main; sys.exit(main(sys.argv[1:]))"
    out = tmp_path / "big.vizmm"
    proc = subprocess.Popen(
        [sys.executable, "-c", script, "record", *_WORKER[backend], "--backend", backend,
         "-o", str(out)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )  # fmt: skip
    err = _StderrReader(proc.stderr)
    try:
        end = time.monotonic() + 60
        while not [
            c
            for c in _children(proc.pid)
            if "vizmm.record.worker" in _cmdline(c)
            and (backend == "numba-sim" or _rss(c) > 64 << 20)
        ]:
            assert proc.poll() is None, err.rest()[-500:]
            assert time.monotonic() < end, "no worker process started"
            time.sleep(0.05)
        assert os.listdir(systmp)  # the worker's input and output folder
        if backend == "numba-sim":
            time.sleep(1.0)  # let it work
        children = _children(proc.pid)
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    text = err.rest()
    assert proc.returncode == 143, text[-500:]
    assert text.rstrip("\n").endswith("vizmm: terminated")
    assert children and not [c for c in children if _running(c)]
    assert os.listdir(tmp_path) == ["systmp"]
    assert os.listdir(systmp) == []


def _rss(pid):
    """Resident memory of process ``pid`` in bytes (0 once it is gone)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


def _threads(pid):
    """How many threads process ``pid`` runs now (0 once it is gone)."""
    try:
        return len(os.listdir(f"/proc/{pid}/task"))
    except OSError:
        return 0


def _cmdline(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


@pytest.mark.slow  # an export process, signalled
@pytest.mark.timeout(90)
def test_sigterm_during_mp4_export(tmp_path, record_sim):
    env, systmp = _env(tmp_path)
    trace_file = tmp_path / "t.vizmm"
    record_sim(width=8, tile_width=2, kernel="tiled").save(trace_file)  # 34 frames: a few s
    out = tmp_path / "out" / "fig58.mp4"
    out.parent.mkdir()
    dead = _dead_pid()  # a dead exporter's scratch folder, removed by this export
    (out.parent / f".vizmm-{dead}-mp4-old.tmp").mkdir()
    proc = subprocess.Popen(
        _vizmm("export", str(trace_file), "-o", str(out), "--size", "1920x1080", "--fps", "50"),
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    err = _StderrReader(proc.stderr)
    try:
        # ffmpeg writes into the hidden scratch folder beside the destination
        end = time.monotonic() + 60
        scratch = []
        while not scratch:
            assert proc.poll() is None, err.rest()[-500:]
            assert time.monotonic() < end, "the export made no scratch folder beside -o"
            scratch = [
                os.path.join(out.parent, n)
                for n in os.listdir(out.parent)
                if n.startswith(f".vizmm-{proc.pid}-mp4-")
                and os.path.exists(os.path.join(out.parent, n, "export.mp4"))
            ]
            time.sleep(0.02)
        assert os.listdir(systmp) == []  # nothing in the system temp folder
        assert not os.path.exists(out.parent / f".vizmm-{dead}-mp4-old.tmp")
        children = _children(proc.pid)
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=40)
    finally:
        if proc.poll() is None:
            proc.kill()
    text = err.rest()
    assert proc.returncode == 143, text[-500:]
    assert text.rstrip("\n").endswith("vizmm: terminated")
    assert os.listdir(out.parent) == []  # no scratch folder, no partial MP4
    assert os.listdir(systmp) == []
    assert children and not [c for c in children if _running(c)]  # ffmpeg too


def test_mp4_export_scratch_folder_is_beside_the_destination(tmp_path, tiled, monkeypatch):
    import imageio.v2 as iio

    from vizmm import export as ex

    used = []
    real = iio.get_writer

    def spy(path, *args, **kwargs):
        used.append(os.path.dirname(path))
        return real(path, *args, **kwargs)

    monkeypatch.setattr(iio, "get_writer", spy)
    monkeypatch.setattr(dst.tempfile, "tempdir", str(tmp_path / "nowhere"))  # never used
    out = tmp_path / "fig58.mp4"
    ex.export(tiled, out, size=(320, 180), progress=False)
    (folder,) = used
    assert os.path.dirname(folder) == str(tmp_path)
    assert os.path.basename(folder).startswith(f".vizmm-{os.getpid()}-mp4-")
    assert os.listdir(tmp_path) == ["fig58.mp4"]


def test_sigterm_handler_is_restored_after_main(tmp_path):
    before = signal.getsignal(signal.SIGTERM)
    assert main(["record", *TINY, "-q", "-o", str(tmp_path / "t.vizmm")]) == 0
    assert signal.getsignal(signal.SIGTERM) is before
