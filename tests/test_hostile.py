"""Hostile inputs: every one answered by one clear message in our words, before any big allocation.

API arguments, command-line flags, crafted trace files (here), and the
served dashboard's URL parameters, uploads and form fields (the browser part,
at the end). Memory is measured with ``tracemalloc``: a refusal allocates
next to nothing.
"""

import io
import json
import os
import stat
import threading
import tracemalloc
import zipfile

import numpy as np
import pytest

import vizmm
from vizmm import RecordError, TraceError, TraceTooLargeError
from vizmm.cli import main
from vizmm.record import Budget, Limits, RecordingCancelled, ServerBusyError, TooSlowError, admit
from vizmm.trace import BlockError, LaunchShape

MiB = 2**20


class _peak:
    """The peak of Python-tracked memory (bytes) while the block runs."""

    def __enter__(self):
        tracemalloc.start()
        return self

    def __exit__(self, *exc):
        self.bytes = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        return False


# ------------------------------------------------------------ API: recording
def test_estimate_of_a_huge_launch_is_arithmetic():
    # 20000^2 / 1^2 = 400 million blocks: counted, never listed.
    with _peak() as p:
        est = vizmm.estimate(20000, 20000, 20000, 1)
    assert est.blocks == 20000 * 20000
    assert p.bytes < MiB


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(width=100000),
        dict(width=20000, tile_width=1),
        dict(j=6000, k=6000, l=6000, kernel="general", tile_width=1),
        dict(width=100000, window=[(0, 0)]),
    ],
)
def test_record_refuses_huge_launches_before_allocating(kwargs):
    # once first: the modules a refusal imports (tens of MB the first time in a
    # process) are not what the refusal allocates
    with pytest.raises(TraceTooLargeError):
        vizmm.record(backend="simulator", quiet=True, **kwargs)
    with _peak() as p, pytest.raises(TraceTooLargeError, match="over the limit"):
        vizmm.record(backend="simulator", quiet=True, **kwargs)
    assert p.bytes < MiB


def test_simulator_time_limit_is_checked_from_sizes():
    # 512^2 with TILE_WIDTH 16: 1024 blocks of 256 threads, about a minute in vizmm's
    # simulator (32 phases of 16 steps each), far over 10 s.
    with _peak() as p, pytest.raises(TooSlowError, match="over the limit of 10 s"):
        vizmm.record(width=512, tile_width=16, backend="simulator", quiet=True, max_seconds=10)
    assert p.bytes < MiB


def test_admit_is_the_one_decision():
    launch = LaunchShape.make("boundary", 512, 512, 512, 16)
    with pytest.raises(TooSlowError):
        admit(launch, None, "simulator", Limits(max_simulator_seconds=30))
    # Numba's simulator, one Python thread per CUDA thread, is estimated far slower
    with pytest.raises(TooSlowError):
        admit(launch, None, "numba-sim", Limits(max_simulator_seconds=900))
    assert admit(launch, None, "gpu", Limits(max_simulator_seconds=900)).blocks == 32 * 32
    with pytest.raises(TraceTooLargeError):
        admit(launch, None, "gpu", Limits(max_bytes=1000))


def test_budget_refuses_when_full():
    budget = Budget(max_jobs=1, max_seconds=10)
    est = vizmm.estimate(4, 4, 4, 2)
    with budget.reserve(est):
        with pytest.raises(ServerBusyError, match="busy"):
            with budget.reserve(est):
                pass
        assert budget.pending[0] == 1
    assert budget.pending == (0, 0.0)
    with budget.reserve(est):  # free again
        pass


def test_cancelled_recording_stops():
    cancel = threading.Event()
    cancel.set()
    with pytest.raises(RecordingCancelled):
        vizmm.record(width=4, tile_width=2, backend="simulator", quiet=True, cancel=cancel)


def test_cancel_between_blocks():
    cancel = threading.Event()
    seen = []

    def progress(done, total):
        seen.append(done)
        if done == 1:
            cancel.set()

    with pytest.raises(RecordingCancelled, match="after 1 of 4 blocks"):
        vizmm.record(
            width=4, tile_width=2, backend="simulator", quiet=True, cancel=cancel, progress=progress
        )
    assert seen == [1]


@pytest.mark.parametrize("seed", [-1, 1.5, "0", True])
def test_bad_seed(seed):
    with pytest.raises(RecordError, match="seed must be an integer >= 0"):
        vizmm.record(width=4, backend="simulator", quiet=True, seed=seed)


@pytest.mark.parametrize("window", ["0,0", 7, [(0,)], [("a", "b")]])
def test_bad_window(window):
    with pytest.raises(RecordError, match="window"):
        vizmm.record(width=4, backend="simulator", quiet=True, window=window)


# -------------------------------------------------------------- API: traces
@pytest.fixture(scope="module")
def small(record_sim):
    return record_sim(width=4, tile_width=2, kernel="tiled")


@pytest.mark.parametrize(
    "block,message",
    [
        ((9, 9), "block (9, 9) is outside the 2 x 2 grid of blocks"),
        ((-1, 0), "outside the 2 x 2 grid"),
        ("ab", "block must be a (by, bx) pair of integers"),
        ((0.5, 0), "block must be a (by, bx) pair of integers"),
        (None, "block must be a (by, bx) pair of integers"),
    ],
)
def test_tile_loads_bad_block(small, block, message):
    with pytest.raises(BlockError) as info:
        small.tile_loads(block=block, phase=0)
    assert message in str(info.value)
    assert not str(info.value).startswith("'")  # a sentence, not a quoted key
    assert isinstance(info.value, KeyError)


@pytest.mark.parametrize("path", [None, 3, b"", ""])
def test_load_of_something_that_is_not_a_path(path):
    with pytest.raises(TraceError, match="file path|empty"):
        vizmm.load(path)


def test_load_of_a_folder(tmp_path):
    with pytest.raises(TraceError, match="is a folder, not a trace file"):
        vizmm.load(tmp_path)


def test_load_of_a_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="no such file"):
        vizmm.load(tmp_path / "nope.vizmm")


@pytest.mark.parametrize(
    "content",
    [
        b"",
        b"hello, this is text\n",
        b"\x93NUMPY\x01\x00v\x00{'descr': '|O', 'fortran_order': False, 'shape': (1,), }",
        b"\x89PNG\r\n\x1a\n" + bytes(100),
    ],
    ids=["empty", "text", "pickled-npy", "png"],
)
def test_files_that_are_not_traces(tmp_path, content):
    path = tmp_path / "x.vizmm"
    path.write_bytes(content)
    with pytest.raises(TraceError) as info:
        vizmm.load(path)
    msg = str(info.value)
    assert "x.vizmm" in msg and "vizmm trace" in msg
    assert "pickle" not in msg and "allow_pickle" not in msg


def test_npz_of_pickled_objects(tmp_path):
    path = tmp_path / "x.vizmm"
    with open(path, "wb") as f:
        np.savez(f, manifest=np.array([{"a": 1}], dtype=object))
    with pytest.raises(TraceError) as info:
        vizmm.load(path)
    assert "pickle" not in str(info.value)


def test_save_into_a_missing_folder_names_the_path(small, tmp_path):
    target = tmp_path / "missing" / "t.vizmm"
    with pytest.raises(FileNotFoundError) as info:
        small.save(target)
    assert str(target) in str(info.value) and ".vizmm-" not in str(info.value)
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("target", [None, 5])
def test_save_to_something_that_is_not_a_path(small, target):
    with pytest.raises(TraceError, match="file path"):
        small.save(target)


def test_save_onto_a_folder(small, tmp_path):
    with pytest.raises(IsADirectoryError, match="it is a folder"):
        small.save(tmp_path)


def test_saved_trace_is_readable_by_the_class(small, tmp_path):
    path = small.save(tmp_path / "t.vizmm")
    umask = os.umask(0o022)
    os.umask(umask)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o666 & ~umask


# ------------------------------------------------------------ crafted files
def _npy(arr):
    buf = io.BytesIO()
    np.save(buf, arr, allow_pickle=False)
    return buf.getvalue()


def _crafted(members: dict) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in members.items():
            z.writestr(name, data)
    return buf.getvalue()


def _members_of(data: bytes) -> dict:
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        return {n: z.read(n) for n in z.namelist()}


def _manifest(members) -> dict:
    return json.loads(np.load(io.BytesIO(members["manifest.npy"])).tobytes().decode())


def _with_manifest(members, manifest) -> dict:
    blob = np.frombuffer(json.dumps(manifest).encode(), dtype=np.uint8)
    return dict(members, **{"manifest.npy": _npy(blob)})


def test_crafted_file_claiming_12000_cubed_is_refused_at_once(small, tmp_path):
    # A small file whose manifest says "seeded 12000^3": refused from the
    # manifest's sizes, before anything is rebuilt.
    members = _members_of(small.to_bytes())
    manifest = _manifest(members)
    meta = manifest["meta"]
    meta.update(j=12000, k=12000, l=12000, n_detail=0, aggregated=True)
    from vizmm.trace.model import array_specs

    for name, (dtype, shape) in array_specs(meta).items():
        manifest["arrays"][name].update(dtype=dtype.str, shape=list(shape))
    data = _crafted(_with_manifest(members, manifest))
    assert len(data) < 20_000
    path = tmp_path / "evil.vizmm"
    path.write_bytes(data)
    with _peak() as p, pytest.raises(TraceError, match="over the limit") as info:
        vizmm.load(path)
    assert "12000x12000x12000" in str(info.value)
    assert p.bytes < 2 * MiB


def test_member_larger_than_its_description_is_not_inflated(small, tmp_path):
    # 'pvalue' replaced by 64 MiB of zeros (a few KB compressed): refused
    # from the zip's own sizes before it is inflated.
    members = _members_of(small.to_bytes())
    members["pvalue.npy"] = _npy(np.zeros(16 * MiB, np.float32))
    data = _crafted(members)
    assert len(data) < 200_000
    with _peak() as p, pytest.raises(TraceError, match="more than its description allows"):
        vizmm.trace.from_bytes(data, name="bomb.vizmm")
    assert p.bytes < 4 * MiB


def test_stored_checksum_is_checked_before_rebuilding(small):
    # The stored (XOR) form of P changed: refused on what is stored.
    members = _members_of(small.to_bytes())
    manifest = _manifest(members)
    assert manifest["arrays"]["P"].get("encoding") in ("product", "xor-product")
    manifest["arrays"]["P"]["encoding"] = "xor-product"
    manifest["arrays"]["P"]["stored"]["shape"] = [4, 4]
    members["P.npy"] = _npy(np.ones((4, 4), np.uint32))
    data = _crafted(_with_manifest(members, manifest))
    with pytest.raises(TraceError, match="'P' does not match its checksum"):
        vizmm.trace.from_bytes(data, name="t.vizmm")


@pytest.mark.parametrize(
    "change,message",
    [
        (lambda m: m.update(format="other"), "not a vizmm trace"),
        (lambda m: m.update(version=99), "version 99"),
        (lambda m: m.update(meta=[1, 2]), "metadata is not a mapping"),
        (lambda m: m["meta"].update(tile_width=64), "from 1 to 32"),
        (lambda m: m["meta"].update(j=-5), "j must be a positive integer"),
        (lambda m: m["meta"].update(n_detail=10**9), "n_detail must be 0..4"),
        (lambda m: m["meta"].pop("kernel"), "lacks 'kernel'"),
        (lambda m: m["arrays"]["loads"].update(shape=[1]), "implies"),
        (lambda m: m["arrays"]["M"].update(encoding="zstd"), "unknown encoding"),
        (lambda m: m.update(arrays=None), "does not describe the arrays"),
    ],
)
def test_crafted_manifests(small, change, message):
    members = _members_of(small.to_bytes())
    manifest = _manifest(members)
    change(manifest)
    with pytest.raises(TraceError, match=message):
        vizmm.trace.from_bytes(_crafted(_with_manifest(members, manifest)), name="t.vizmm")


def test_manifest_that_is_not_text(small):
    members = _members_of(small.to_bytes())
    members["manifest.npy"] = _npy(np.arange(4.0))
    with pytest.raises(TraceError, match="manifest is not text"):
        vizmm.trace.from_bytes(_crafted(members), name="t.vizmm")


def test_huge_manifest_is_not_read(small):
    members = _members_of(small.to_bytes())
    members["manifest.npy"] = _npy(np.zeros(8 * MiB, np.uint8))
    with pytest.raises(TraceError, match="more than its description allows"):
        vizmm.trace.from_bytes(_crafted(members), name="t.vizmm")


def test_info_reads_the_manifest_alone(small, tmp_path):
    path = small.save(tmp_path / "t.vizmm")
    info = vizmm.trace.read_info(path)
    assert info.summary() == small.summary()
    assert info.nbytes == sum(a.nbytes for a in small.arrays().values())


# --------------------------------------------------------------------- CLI
@pytest.mark.parametrize(
    "argv,message",
    [
        (["record", "--width", "4", "--seed", "-1", "-o", "x.vizmm"], "--seed: must be an integer"),
        (
            ["record", "--width", "4", "--window", "-1,0", "-o", "x.vizmm"],
            "argument --window: a block must be 2 integers",
        ),
        (["record", "--width", "100000", "-o", "x.vizmm"], "over the limit"),
        (["record", "--width", "4", "--window", "a,b", "-o", "x.vizmm"], "a block must be"),
        (["table", "T", "--block", "-3,0"], "a block must be 2 integers"),
        (["table", "T", "--block", "5,0"], "outside the 2 x 2 grid"),
        (["info", "."], "is a folder"),
        (["info", "missing.vizmm"], "no such file"),
    ],
)
def test_cli_hostile_flags(argv, message, small, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    small.save(tmp_path / "T")
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert message in err, err
    assert err.count("\n") == 0 and "Traceback" not in err
    assert not (tmp_path / "x.vizmm").exists()


# ------------------------------------------------- the dashboard's inputs
def _dashboard():
    import sys

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    if root not in sys.path:
        sys.path.insert(0, root)
    from vizmm_apps.dashboard import Dashboard

    return Dashboard(served=False)


@pytest.mark.parametrize(
    "query,message",
    [
        ("url_step=abc", "step=abc (a whole number >= 1)"),  # the URL counts from 1
        ("by=-3", "by=-3 (a whole number >= 0)"),
        ("granularity=zzz", "granularity=zzz (one of substep, phase)"),
        ("order=sideways", "order=sideways (one of lockstep, recorded)"),
        ("presenter=maybe", "presenter=maybe (true or false)"),
    ],
)
def test_garbage_url_values_are_named(query, message):
    d = _dashboard()
    d.state.apply_values(dict([query.split("=")]))
    assert message in d.state.message and d.alert.visible
    assert d.state.status()["ready"]  # the rest of the page still works


def test_block_outside_the_grid_from_the_url():
    d = _dashboard()
    d.state.apply_values({"by": 999})
    assert "Block (999,0) is outside this trace's 2 x 2 grid" in d.state.message
    assert d.state.status()["block"] == [0, 0]


@pytest.fixture
def ten_seconds(monkeypatch):
    """The server's simulator time limit at 10 s (its 900 s: over 256 MiB of trace first).

    vizmm's simulator records Fig. 5.13 at 448 x 448, TILE_WIDTH 32 in about 22 s, so a
    launch over 900 s is over the server's 256 MiB of trace before it is over its time.
    """
    import dataclasses

    from vizmm.serve.catalogue import CATALOGUE

    monkeypatch.setattr(
        CATALOGUE, "limits", dataclasses.replace(CATALOGUE.limits, max_simulator_seconds=10.0)
    )


@pytest.mark.parametrize(
    "key,message",
    [
        # the form refuses over the server's time limit (10 s here); a URL gets the same
        ("rec:boundary:448x448x448:T32:s0:simulator", "over the limit of 10 s"),
        ("rec:boundary:6000x6000x6000:T1:s0:simulator", "over the limit of 256.0 MiB"),
        ("rec:boundary:4x4x4:T64:s0:simulator", "from 1 to 32"),
        ("rec:strassen:4x4x4:T2:s0:simulator", "unknown kernel"),
        ("rec:boundary:4x4x4:T2:s0:tpu", "unknown backend"),
        ("x" * 5000, "unknown trace"),
    ],
)
def test_url_recordings_are_admitted_like_the_form(key, message, ten_seconds):
    d = _dashboard()
    shown = d.state.trace
    with _peak() as p:
        d.state.choose_source(key)
    assert message in d.state.message
    assert d.state.trace is shown and d.state.source == "fig5-8"
    assert p.bytes < 8 * MiB
    assert len(d.state.message) < 600


@pytest.mark.parametrize(
    "values,message",
    [
        (dict(tile_width=64), "from 1 to 32"),
        (dict(tile_width=0), "from 1 to 32"),
        (dict(j=-5), "positive integer"),
        (dict(seed=-1), "seed must be an integer"),
        (dict(j=448, tile_width=32), "over the limit of 10 s"),
        (dict(kernel="general", j=6000, k=6000, l=6000, tile_width=1), "over the limit"),
    ],
)
def test_record_form_answers_out_of_range_values(values, message, ten_seconds):
    d = _dashboard()
    form = d.record_form
    form.param.update(**values)
    assert not form.valid and message in form.estimate
    assert form._button.disabled
    form.record()  # refused: nothing starts
    assert d.state.source == "fig5-8"
    form.param.update(kernel="boundary", j=6, tile_width=2, seed=0)
    assert form.valid and form.estimate.startswith("Estimate:")  # not stale


def test_uploads_empty_too_large_and_foreign():
    from vizmm.serve.catalogue import CATALOGUE, MAX_UPLOAD_BYTES, UploadError

    with pytest.raises(UploadError, match="empty"):
        CATALOGUE.register_upload(b"", "e.vizmm")
    with pytest.raises(UploadError, match="over this server's upload limit"):
        CATALOGUE.register_upload(bytes(MAX_UPLOAD_BYTES + 1), "big.vizmm")
    with pytest.raises(TraceError, match="not a vizmm trace file"):
        CATALOGUE.register_upload(b"%PDF-1.4", "slides.pdf")
    d = _dashboard()
    d.upload.value = {"e.vizmm": b""}
    assert "e.vizmm is empty" in d.state.message and d.alert.visible


def _chunk(name, chunk, total, data):
    """One upload message as the page sends it (``UploadBox``'s ``model.send_msg``)."""
    return {"name": name, "chunk": chunk, "total_chunks": total, "data": data}


def test_upload_box_refuses_chunks_over_the_limit():
    from vizmm.serve.catalogue import MAX_UPLOAD_BYTES

    d = _dashboard()
    box = d.upload
    n = MAX_UPLOAD_BYTES // box.chunk_size + 5  # says so up front
    box.receive(_chunk("huge.vizmm", 1, n, bytes(box.chunk_size)))
    assert "over this server's upload limit" in box.refused
    assert "huge.vizmm" in d.state.message and not box.pending
    # a file whose declared size is over the limit is refused from its first message
    box.refused = ""
    box.receive({**_chunk("big.vizmm", 1, 1, b""), "size": MAX_UPLOAD_BYTES + 1})
    assert "big.vizmm" in box.refused and not box.pending
    # a client that sends bigger chunks than it says is cut off when the bytes add up
    box.refused = ""
    big = bytes(MAX_UPLOAD_BYTES // 2 + 1)
    box.receive(_chunk("liar.vizmm", 1, 3, big))
    assert box.pending == ("liar.vizmm",) and not box.refused
    box.receive(_chunk("liar.vizmm", 2, 3, big))
    assert "liar.vizmm" in box.refused and not box.pending
    box.receive(_chunk("liar.vizmm", 3, 3, big))  # the rest is ignored
    assert not box.value and not box.pending
    # chunks out of order, or numbered past their total, are refused
    box.receive(_chunk("skip.vizmm", 1, 3, b"ab"))
    box.receive(_chunk("skip.vizmm", 3, 3, b"cd"))
    assert "skip.vizmm" in box.refused and not box.pending and not box.value
    # a new upload forgets an unfinished one: the box holds one file's chunks at most
    box.receive(_chunk("first.vizmm", 1, 3, b"ab"))
    box.receive(_chunk("second.vizmm", 1, 3, b"cd"))
    assert box.pending == ("second.vizmm",)
    box.receive(_chunk("first.vizmm", 2, 3, b"ef"))  # ignored: no longer begun
    assert box.pending == ("second.vizmm",) and not box.value
    box.receive(_chunk("odd.vizmm", 2, 1, b"ab"))
    assert "odd.vizmm" in box.refused and not box.value
    box.receive(_chunk("empty.vizmm", 1, 1, b""))
    assert "empty" in box.refused and not box.value


def test_upload_box_joins_the_chunks_in_order():
    d = _dashboard()
    box = d.upload
    seen = []
    box.param.watch(lambda e: seen.append(dict(e.new)), "value")
    box.receive(_chunk("a.vizmm", 1, 3, b"PK"))
    box.receive(_chunk("a.vizmm", 2, 3, b"\x03"))
    assert not seen and box.pending == ("a.vizmm",)
    box.receive(_chunk("a.vizmm", 3, 3, b"\x04"))
    assert {"a.vizmm": b"PK\x03\x04"} in seen and not box.pending
    # the dashboard read it (and keeps no copy): not a trace file, said in one line
    assert "a.vizmm" in d.state.message and "not a" in d.state.message and not box.value


# ------------------------------------------------------------------ server
def _parent(pid: int) -> int:
    """The parent's pid of process ``pid`` (from /proc), or -1 when it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
    except OSError:
        return -1
    return int(stat[stat.rindex(")") + 2 :].split()[1])


def _listening(port: int) -> list[str]:
    """Local addresses (hex, as /proc/net/tcp{,6} writes them) listening on ``port``."""
    out = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as f:
                rows = f.read().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            local, state = row.split()[1], row.split()[3]
            addr, p = local.rsplit(":", 1)
            if state == "0A" and int(p, 16) == port:
                out.append(addr)
    return out


@pytest.mark.slow
def test_vizmm_serve_listens_on_localhost_only(vizmm_served):
    proc, base = vizmm_served  # the session's (tests/conftest.py)
    port = int(base.rsplit(":", 1)[1])
    # 127.0.0.1 only: no 0.0.0.0 (00000000), no [::]
    assert _listening(port) == ["0100007F"]
    # the server (vizmm serve's child) runs with the C library's allocator,
    # unless the environment chose one
    (server,) = [int(p) for p in os.listdir("/proc") if p.isdigit() and _parent(int(p)) == proc.pid]
    with open(f"/proc/{server}/environ", "rb") as f:
        environ = dict(v.split(b"=", 1) for v in f.read().split(b"\0") if b"=" in v)
    want = os.environ.get("PYTHONMALLOC", "malloc").encode()
    assert environ.get(b"PYTHONMALLOC") == want
