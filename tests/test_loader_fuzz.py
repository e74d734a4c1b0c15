"""Damaged trace files: each ends in a valid Trace or one TraceError, in bounded time and memory.

The fuzz test takes real trace files (a tiny simulator recording and two
shipped presets) and lets Hypothesis damage them: truncation, byte flips in
every member (deflated data included), rewritten zip header fields, deeply
nested manifests, lying ``.npy`` headers, extra and missing members, and
metadata, totals and record edits whose checksums are made right again, so
that only the checks of what they mean can catch them. Every damaged file
is decoded in a child process whose address space is capped at 512 MiB
(``RLIMIT_AS``, set before it imports vizmm), which answers with what
happened, how long it took and its peak RSS for that file.

Then the regression cases that a hostile corpus of files found, each
refused with a TraceError that names the file.
"""

import io
import json
import os
import select
import stat
import struct
import subprocess
import sys
import time
import tracemalloc
import warnings
import zipfile
import zlib

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import vizmm
from vizmm import TraceError
from vizmm.cli import main
from vizmm.trace import fileformat, from_bytes, read_info

MiB = 2**20
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(ROOT, "vizmm", "data")
#: The child's address-space limit.
AS_LIMIT = 512 * MiB
#: The longest a damaged file may take to be accepted or refused (seconds).
SECONDS = 2.0
#: Examples of the fuzz test (fixed, derandomized: the same files on every run).
EXAMPLES = int(os.environ.get("VIZMM_FUZZ_EXAMPLES", "1000"))

FUZZ = settings(
    derandomize=True,
    database=None,
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

# ------------------------------------------------------------------ the child
# It caps its address space before importing anything big, imports only the
# trace layer (NumPy, no numba), then reads files from stdin (8-byte length,
# bytes) and answers one JSON line each: load() and read_info() of the file,
# summary() of what they return, M, N and P rebuilt; what was raised; how
# long it took; the peak RSS while it ran (VmHWM, reset before each file).
WORKER = r"""
import json, os, resource, sys, time, traceback
limit = int(sys.argv[1])
resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
import vizmm.trace as vt
assert "numba" not in sys.modules, "the child imported numba"
path = sys.argv[2]
name = os.path.basename(path)


def peak_kib():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])


def reset_peak():
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pass


def chain(exc):
    out = []
    while exc is not None and len(out) < 10:
        out.append(type(exc).__name__)
        exc = exc.__cause__ or exc.__context__
    return out


def attempt(fn):
    try:
        return {"outcome": "ok", "summary": fn()}
    except vt.TraceError as exc:
        return {"outcome": "TraceError", "message": str(exc), "chain": chain(exc)}
    except BaseException as exc:
        return {
            "outcome": type(exc).__name__,
            "message": str(exc)[:300],
            "chain": chain(exc),
            "traceback": traceback.format_exc()[-3000:],
        }


def load():
    tr = vt.load(path)
    tr.M, tr.N, tr.P
    return tr.summary()


def info():
    return vt.read_info(path).summary()


print(json.dumps({"ready": True, "peak_kib": peak_kib()}), flush=True)
while True:
    head = sys.stdin.buffer.read(8)
    if len(head) < 8:
        break
    data = sys.stdin.buffer.read(int.from_bytes(head, "little"))
    with open(path, "wb") as f:
        f.write(data)
    reset_peak()
    t0 = time.perf_counter()
    res = {"load": attempt(load), "info": attempt(info)}
    res["seconds"] = time.perf_counter() - t0
    res["peak_kib"] = peak_kib()
    print(json.dumps(res), flush=True)
"""


class Worker:
    """The child process that decodes damaged files under the address-space limit."""

    def __init__(self, folder):
        self.folder = folder
        self.stats = {"files": 0, "traces": 0, "refused": 0, "max_s": 0.0, "max_kib": 0}
        self.start()

    def start(self):
        env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
        self.proc = subprocess.Popen(
            [sys.executable, "-c", WORKER, str(AS_LIMIT), os.path.join(self.folder, "fuzz.vizmm")],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            cwd=ROOT,
            env=env,
        )
        hello = self._answer(60)
        assert hello and hello.get("ready"), hello
        self.start_kib = hello["peak_kib"]

    def _answer(self, timeout):
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        if not ready:
            return None
        line = self.proc.stdout.readline()
        return json.loads(line) if line else {"died": self.proc.poll()}

    def stop(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        self.proc.stdin.close()
        self.proc.stdout.close()

    def run(self, data: bytes) -> dict:
        """What became of ``data`` in the child (one JSON answer), restarting it if it hung."""
        self.proc.stdin.write(len(data).to_bytes(8, "little") + data)
        self.proc.stdin.flush()
        res = self._answer(30)
        if res is None or "died" in res:
            self.stop()
            self.start()
            return {"hung or died": res}
        s = self.stats
        s["files"] += 1
        s["traces" if res["load"]["outcome"] == "ok" else "refused"] += 1
        s["max_s"] = max(s["max_s"], res["seconds"])
        s["max_kib"] = max(s["max_kib"], res["peak_kib"])
        return res


@pytest.fixture(scope="module")
def worker(tmp_path_factory):
    if not sys.platform.startswith("linux"):
        pytest.skip("the child reads its peak RSS from Linux's /proc")
    w = Worker(str(tmp_path_factory.mktemp("fuzz")))
    t0 = time.perf_counter()
    yield w
    w.stop()
    s = w.stats
    print(
        f"\nfuzz: {s['files']} files in {time.perf_counter() - t0:.1f} s: {s['traces']} traces, "
        f"{s['refused']} refused; slowest {s['max_s'] * 1000:.0f} ms, peak RSS "
        f"{s['max_kib'] / 1024:.0f} MiB (child at start {w.start_kib / 1024:.0f} MiB, "
        f"address space capped at {AS_LIMIT // MiB} MiB)"
    )


def _check_answer(res, label):
    assert "hung or died" not in res, (label, res)
    for what in ("load", "info"):
        r = res[what]
        assert r["outcome"] in ("ok", "TraceError"), (label, what, r)
        assert "MemoryError" not in r.get("chain", []), (label, what, r)
        if r["outcome"] == "TraceError":
            msg = r["message"]
            assert "fuzz.vizmm" in msg, (label, msg)
            assert "\n" not in msg and len(msg) < 400, (label, msg)
            assert "pickle" not in msg, (label, msg)
    # the manifest's checks are a part of load's: what load accepts, info accepts,
    # and (a version 2 file keeps the totals) says the same
    if res["load"]["outcome"] == "ok":
        assert res["info"]["outcome"] == "ok", (label, res)
        info = res["info"]["summary"]
        assert info is None or info == res["load"]["summary"], (label, res)
    assert res["seconds"] < SECONDS, (label, res["seconds"])
    assert res["peak_kib"] * 1024 < AS_LIMIT


# -------------------------------------------------------------- real files
BASES: dict = {}


@pytest.fixture(scope="module")
def bases(record_sim):
    """A tiny recording (version 2) and two shipped presets (versions 2 and 1)."""
    BASES["recorded"] = record_sim(width=4, tile_width=2, kernel="tiled").to_bytes()
    for name in ("fig5-9-3x3", "lab-4x4-drop1"):
        with open(os.path.join(DATA, f"{name}.vizmm"), "rb") as f:
            BASES[name] = f.read()
    return BASES


def _members(data: bytes) -> dict:
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        return {i.filename: z.read(i) for i in z.infolist()}


def _zip(members) -> bytes:
    """A zip of ``members`` (a dict, or (name, bytes) pairs: names may repeat)."""
    buf = io.BytesIO()
    items = members.items() if isinstance(members, dict) else members
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "Duplicate name": on purpose
        with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
            for name, data in items:
                z.writestr(name, data)
    return buf.getvalue()


def _npy(arr) -> bytes:
    buf = io.BytesIO()
    np.save(buf, arr, allow_pickle=False)
    return buf.getvalue()


def _manifest(members) -> dict:
    return json.loads(np.load(io.BytesIO(members["manifest.npy"])).tobytes().decode())


def _manifest_member(text: str | bytes) -> bytes:
    raw = text.encode() if isinstance(text, str) else text
    return _npy(np.frombuffer(raw, np.uint8))


def _with_manifest(members, manifest) -> bytes:
    return _zip(dict(members, **{"manifest.npy": _manifest_member(json.dumps(manifest))}))


def _digest(a) -> str:
    return fileformat._digest(np.ascontiguousarray(a))


def _layout(data: bytes) -> list[dict]:
    """Each member's central-directory entry, local header and data offsets (read from the zip)."""
    eocd = data.rfind(b"PK\x05\x06")
    entries, _, cd = struct.unpack_from("<HII", data, eocd + 10)
    out, pos = [], cd
    for _ in range(entries):
        assert data[pos : pos + 4] == b"PK\x01\x02"
        csize = struct.unpack_from("<I", data, pos + 20)[0]
        nlen, elen, clen = struct.unpack_from("<HHH", data, pos + 28)
        local = struct.unpack_from("<I", data, pos + 42)[0]
        lnlen, lelen = struct.unpack_from("<HH", data, local + 26)
        name = data[pos + 46 : pos + 46 + nlen].decode()
        start = local + 30 + lnlen + lelen
        out.append(dict(name=name, central=pos, local=local, start=start, csize=csize))
        pos += 46 + nlen + elen + clen
    return out


def test_layout_agrees_with_zipfile(bases):
    for data in bases.values():
        with zipfile.ZipFile(io.BytesIO(data)) as z:
            infos = {i.filename: i for i in z.infolist()}
        for m in _layout(data):
            i = infos[m["name"]]
            assert (m["local"], m["csize"]) == (i.header_offset, i.compress_size)
            if i.compress_type == zipfile.ZIP_DEFLATED:  # what zipfile inflates starts there
                raw = data[m["start"] : m["start"] + m["csize"]]
                assert zlib.decompress(raw, -15) == _members(data)[m["name"]]


# -------------------------------------------------------- the mutations
LOCAL_FIELDS = {"flags": (6, "<H"), "method": (8, "<H"), "crc": (14, "<I"), "csize": (18, "<I")}
LOCAL_FIELDS |= {"usize": (22, "<I"), "nlen": (26, "<H"), "elen": (28, "<H")}
CENTRAL_FIELDS = {"flags": (8, "<H"), "method": (10, "<H"), "crc": (16, "<I")}
CENTRAL_FIELDS |= {"csize": (20, "<I"), "usize": (24, "<I"), "nlen": (28, "<H")}
CENTRAL_FIELDS |= {"elen": (30, "<H"), "clen": (32, "<H"), "offset": (42, "<I")}
EOCD_FIELDS = {"disk_entries": (8, "<H"), "entries": (10, "<H"), "cd_size": (12, "<I")}
EOCD_FIELDS |= {"cd_offset": (16, "<I"), "comment_len": (20, "<H")}
FLAG_BITS = [0x1, 0x8, 0x20, 0x40, 0x800, 0x2000]
METHODS = [0, 1, 6, 8, 9, 12, 14, 19, 93, 95, 97, 98, 99, 0xFFFF]


def _field_value(draw, field, fmt, old):
    top = 0xFFFF if fmt == "<H" else 0xFFFFFFFF
    if field == "flags":
        return old ^ draw(st.sampled_from(FLAG_BITS))
    if field == "method":
        return draw(st.sampled_from(METHODS))
    how = draw(st.sampled_from(["near", "edge", "any"]))
    if how == "near":
        return min(top, max(0, old + draw(st.integers(-70, 70))))
    if how == "edge":
        return draw(st.sampled_from([0, 1, top // 2 + 1, top]))
    return draw(st.integers(0, top))


def m_truncate(draw, data):
    cut = draw(st.integers(0, len(data) - 1))
    return f"truncated at {cut}", data[:cut]


def m_flip(draw, data):
    """Flip bytes inside one member's stored (deflated) data."""
    m = draw(st.sampled_from(_layout(data)))
    out = bytearray(data)
    for _ in range(draw(st.integers(1, 3))):
        at = draw(st.integers(m["start"], m["start"] + max(m["csize"], 1) - 1))
        out[at] ^= draw(st.integers(1, 255))
    return f"bytes flipped in {m['name']}'s data", bytes(out)


def m_flip_anywhere(draw, data):
    at = draw(st.integers(0, len(data) - 1))
    out = bytearray(data)
    out[at] ^= draw(st.integers(1, 255))
    return f"byte {at} flipped", bytes(out)


def m_header(draw, data):
    """Rewrite a field of a member's local header or central-directory entry."""
    m = draw(st.sampled_from(_layout(data)))
    where = draw(st.sampled_from(["local", "central"]))
    fields = LOCAL_FIELDS if where == "local" else CENTRAL_FIELDS
    field = draw(st.sampled_from(["flags", "method", *sorted(fields)]))  # those two more often
    off, fmt = fields[field]
    pos = m[where] + off
    old = struct.unpack_from(fmt, data, pos)[0]
    new = _field_value(draw, field, fmt, old)
    out = bytearray(data)
    struct.pack_into(fmt, out, pos, new)
    return f"{m['name']} {where} {field} {old} -> {new}", bytes(out)


def m_eocd(draw, data):
    eocd = data.rfind(b"PK\x05\x06")
    field = draw(st.sampled_from(sorted(EOCD_FIELDS)))
    off, fmt = EOCD_FIELDS[field]
    old = struct.unpack_from(fmt, data, eocd + off)[0]
    new = _field_value(draw, field, fmt, old)
    out = bytearray(data)
    struct.pack_into(fmt, out, eocd + off, new)
    return f"end of central directory {field} {old} -> {new}", bytes(out)


def m_comment(draw, data):
    """A zip comment (harmless), perhaps with a byte of it flipped."""
    comment = bytearray(draw(st.binary(min_size=1, max_size=100)))
    if draw(st.booleans()):
        comment[draw(st.integers(0, len(comment) - 1))] ^= draw(st.integers(1, 255))
    assert data[-2:] == b"\0\0"  # the files have no comment yet
    return f"zip comment {bytes(comment)!r}", data[:-2] + struct.pack("<H", len(comment)) + comment


def m_nested(draw, data):
    """A manifest nested deeply: the whole of it, or one metadata field."""
    members = _members(data)
    depth = draw(st.integers(1, 100_000))
    opener, closer = draw(st.sampled_from([("[", "]"), ('{"a": ', "}")]))
    if draw(st.booleans()):
        closed = draw(st.booleans())
        text = opener * depth + ("1" + closer * depth if closed else "")
        label = f"manifest nested {depth} deep"
    else:
        depth = min(depth, 5000)
        manifest = _manifest(members)
        key = draw(st.sampled_from(["figure", "versions", "simulated_blocks", "unknown"]))
        manifest["meta"][key] = "@@NEST@@"
        text = json.dumps(manifest).replace('"@@NEST@@"', opener * depth + "1" + closer * depth)
        label = f"meta {key} nested {depth} deep"
    return label, _zip(dict(members, **{"manifest.npy": _manifest_member(text)}))


DESCRS = ["<i4", "<f4", ">i4", "|u1", "<f8", "<i8", "|i1", "|O", "<c16", "|V4", "<U3", "|b1"]
DESCRS += ["[('a', '<i4')]", "('<i4', (2,))", "[('a', '<i4', (1099511627776,))]", "'<i4'"]
SIZES = [0, 1, 2, 3, 4, 6, 2**31, 2**40, 2**62, 2**64, -1]


def m_npy_header(draw, data):
    """A member's .npy header that lies: dtype, shape, order, version, header length."""
    members = _members(data)
    member = draw(st.sampled_from(sorted(members)))
    old = members[member]
    arr_shape = np.load(io.BytesIO(old)).shape
    payload = old[10 + struct.unpack_from("<H", old, 8)[0] :]
    descr = draw(st.sampled_from(DESCRS))
    descr = descr if descr[0] in "[('" else repr(descr)
    shape = draw(
        st.one_of(
            st.just(arr_shape),
            st.lists(st.one_of(st.sampled_from(SIZES), st.integers(0, 64)), max_size=7).map(tuple),
        )
    )
    fortran = draw(st.booleans())
    text = f"{{'descr': {descr}, 'fortran_order': {fortran}, 'shape': {shape!r}, }}"
    if draw(st.integers(0, 9)) == 0:
        text = draw(st.text(max_size=80))
    version = draw(st.sampled_from([(1, 0), (2, 0), (3, 0), (0, 9), (255, 255)]))
    fmt = "<H" if version[0] == 1 else "<I"
    raw = text.encode("utf-8", "replace")
    raw += b" " * (-(len(raw) + 13) % 64) + b"\n"
    length = draw(st.one_of(st.just(len(raw)), st.sampled_from([0, 1, 5, 0xFFFF, 0xFFFFFFFF])))
    length = min(length, 0xFFFF) if fmt == "<H" else length
    tail = draw(st.sampled_from(["keep", "drop", "half", "double"]))
    payload = {
        "keep": payload,
        "drop": b"",
        "half": payload[: len(payload) // 2],
        "double": payload * 2,
    }[tail]
    new = b"\x93NUMPY" + bytes(version) + struct.pack(fmt, length) + raw + payload
    label = f"{member} header v{version} {text[:90]!r} length {length}, data {tail}"
    return label, _zip(dict(members, **{member: new}))


def m_members(draw, data):
    """A member dropped, or one added (junk, a copy, a second entry of the same name)."""
    members = _members(data)
    names = sorted(members)
    if draw(st.booleans()):
        gone = draw(st.sampled_from(names))
        return f"{gone} removed", _zip({k: v for k, v in members.items() if k != gone})
    name = draw(st.sampled_from(["extra.npy", "notes.txt", "dir/", *names]))
    content = draw(st.one_of(st.binary(max_size=300), st.sampled_from([members[n] for n in names])))
    first = draw(st.booleans())
    items = list(members.items())
    items = [(name, content), *items] if first else [*items, (name, content)]
    return f"member {name} ({len(content)} bytes) added {'first' if first else 'last'}", _zip(items)


META_KEYS = ["kernel", "tile_width", "j", "k", "l", "backend", "n_detail", "aggregated"]
META_KEYS += ["figure", "source", "seed", "inputs", "versions", "created", "device_name"]
META_KEYS += ["sm_count", "compute_capability", "elapsed_s", "spread_stored", "drop_barrier"]
META_KEYS += ["reads_recorded", "sim_schedule", "simulated_blocks", "tile_width_from", "unknown"]
SPECIAL = [None, True, False, 0, 1, 2, 3, 4, 16, 33, -1, 2**63, 2**70, 1e308, float("nan")]
SPECIAL += [float("inf"), -0.5, "", "all", "seeded", "given", "simulator", "gpu", "tiled"]
SPECIAL += ["naive", "general", "x" * 3000, [], [1], [2], [1, 2], [2, 1], [1, 1], [3], [[1]]]
SPECIAL += [[[0, 0]], [[0]], [[0, 0], [0, 0]], [[9, 9]], [["a", 0]], [[True, 0]], {}]
SPECIAL += [{"numpy": "2"}, {"numpy": 2}, [9, 0], ["9", "0"]]
json_values = st.recursive(
    st.one_of(
        st.sampled_from(SPECIAL),
        st.none(),
        st.booleans(),
        st.integers(-(2**70), 2**70),
        st.floats(allow_nan=True, allow_infinity=True),
        st.text(max_size=30),
    ),
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=8,
)


def m_meta(draw, data):
    """Metadata edits (wrong types, ranges, shapes): the arrays and their checksums stay right."""
    members = _members(data)
    manifest = _manifest(members)
    edits = []
    for _ in range(draw(st.integers(1, 3))):
        key = draw(st.sampled_from(META_KEYS))
        if draw(st.integers(0, 7)) == 0:
            manifest["meta"].pop(key, None)
            edits.append(f"-{key}")
        else:
            manifest["meta"][key] = value = draw(json_values)
            edits.append(f"{key}={str(value)[:40]}")
    return "meta " + ", ".join(edits), _with_manifest(members, manifest)


def m_manifest(draw, data):
    """Edits of the rest of the manifest: format, version, totals, array descriptions."""
    members = _members(data)
    manifest = _manifest(members)
    where = draw(st.sampled_from(["top", "stats", "array"]))
    if where == "top":
        key = draw(st.sampled_from(["format", "version", "meta", "arrays", "stats"]))
        target = manifest
    elif where == "stats":
        key = draw(st.sampled_from(["m_reads", "n_reads", "has_clocks"]))
        target = manifest.setdefault("stats", {})
    else:
        array = draw(st.sampled_from(sorted(manifest["arrays"])))
        key = draw(st.sampled_from(["dtype", "shape", "sha256", "encoding", "fill", "stored"]))
        target = manifest["arrays"][array]
    target[key] = value = draw(json_values)
    return f"manifest {where} {key}={str(value)[:40]}", _with_manifest(members, manifest)


def m_records(draw, data):
    """One element of a stored integer array set to another value, its checksums made right."""
    members = _members(data)
    manifest = _manifest(members)
    names = [
        k
        for k, d in manifest["arrays"].items()
        if "encoding" not in d and np.dtype(d["dtype"]).kind == "i" and np.prod(d["shape"]) > 0
    ]
    key = draw(st.sampled_from(sorted(names)))
    a = np.load(io.BytesIO(members[f"{key}.npy"])).copy()
    at = draw(st.integers(0, a.size - 1))
    info = np.iinfo(a.dtype)
    value = draw(
        st.one_of(
            st.sampled_from([-3, -2, -1, 0, 1, 2, 3, 4, 5, 7, 99, 127, info.max, info.min]),
            st.integers(-10, 10),
        )
    )
    a.flat[at] = np.clip(value, info.min, info.max)
    d = manifest["arrays"][key]
    d["sha256"] = _digest(a)
    if isinstance(d.get("stored"), dict):
        d["stored"]["sha256"] = d["sha256"]
    members[f"{key}.npy"] = _npy(a)
    return f"{key}.flat[{at}] = {value}, checksums made right", _with_manifest(members, manifest)


MUTATORS = {
    f.__name__[2:]: f
    for f in (
        m_truncate,
        m_flip,
        m_flip_anywhere,
        m_header,
        m_eocd,
        m_comment,
        m_nested,
        m_npy_header,
        m_members,
        m_meta,
        m_manifest,
        m_records,
    )
}


class Mutant:
    """A damaged file: its bytes, and what was done to which real file (its repr)."""

    def __init__(self, base, label, data):
        self.base, self.label, self.data = base, label, data

    def __repr__(self):
        return f"<{self.base}: {self.label} ({len(self.data)} bytes)>"


@st.composite
def mutants(draw):
    base = draw(st.sampled_from(sorted(BASES)))
    kind = draw(st.sampled_from(sorted(MUTATORS)))
    label, data = MUTATORS[kind](draw, BASES[base])
    return Mutant(base, f"{kind}: {label}", data)


@pytest.mark.slow
@pytest.mark.timeout(300)
@FUZZ
@given(m=mutants())
def test_damaged_files_end_in_a_trace_or_a_trace_error(bases, worker, m):
    _check_answer(worker.run(m.data), m)


def test_the_intact_files_load_in_the_child(bases, worker):
    for name, data in bases.items():
        res = worker.run(data)
        _check_answer(res, name)
        assert res["load"]["outcome"] == "ok", res


def test_a_comment_is_harmless(bases, worker):
    # The zip comment is outside every member: a trace with one, and with a
    # byte of it flipped, is the same trace.
    data = bases["recorded"]
    for comment in (b"hello", b"hallo"):
        damaged = data[:-2] + struct.pack("<H", len(comment)) + comment
        res = worker.run(damaged)
        _check_answer(res, comment)
        assert res["load"]["outcome"] == "ok"
        assert res["load"]["summary"] == from_bytes(data).summary()


# ----------------------------------------------------- regression cases
@pytest.fixture(scope="module")
def small(bases):
    return bases["recorded"]


def _write(tmp_path, data, name="damaged.vizmm"):
    path = tmp_path / name
    path.write_bytes(data)
    return str(path)


def _refused(path, *match, info=True):
    """load (and read_info) refuse ``path``: one TraceError naming it and saying ``match``.

    ``info=False`` where the damage is in an array, which read_info never reads.
    """
    for fn in (vizmm.load, read_info) if info else (vizmm.load,):
        with pytest.raises(TraceError) as info:
            fn(path)
        msg = str(info.value)
        assert os.path.basename(path) in msg, msg
        assert "\n" not in msg and "pickle" not in msg, msg
        for text in match:
            assert text in msg, msg
    return msg


def _cli_refuses(path, capsys, commands=("info", "table", "transactions")):
    out = os.path.join(os.path.dirname(path), "out.gif")
    for command in commands:
        argv = [command, str(path)] + (["-o", out] if command == "export" else [])
        assert main(argv) == 2, command
        err = capsys.readouterr().err
        assert err.startswith("vizmm: error: ") and err.count("\n") == 1, err
        assert os.path.basename(path) in err and "Traceback" not in err, err
    assert not os.path.exists(out)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs os.mkfifo")
@pytest.mark.timeout(20)
def test_fifo_without_writer(tmp_path, capsys):
    path = tmp_path / "pipe.vizmm"
    os.mkfifo(path)
    _refused(str(path), "FIFO", "not a trace file")
    _cli_refuses(path, capsys)


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="needs /dev/zero")
@pytest.mark.timeout(20)
def test_symlink_to_dev_zero(tmp_path, capsys):
    path = tmp_path / "zero.vizmm"
    os.symlink("/dev/zero", path)
    with _peak() as p:
        _refused(str(path), "character device")
    assert p.bytes < MiB
    _cli_refuses(path, capsys)


def test_folder(tmp_path):
    folder = tmp_path / "traces.vizmm"
    folder.mkdir()
    _refused(str(folder), "is a folder, not a trace file")


def test_missing_file_is_still_file_not_found(tmp_path):
    with pytest.raises(FileNotFoundError, match="no such file"):
        vizmm.load(tmp_path / "nothing.vizmm")
    with pytest.raises(FileNotFoundError, match="no such file"):
        read_info(tmp_path / "nothing.vizmm")


def test_file_over_the_size_limit_is_not_read(tmp_path, small):
    # A sparse 3 GiB file: refused from its size, before a byte is read.
    path = tmp_path / "huge.vizmm"
    with open(path, "wb") as f:
        f.write(small)
        f.truncate(3 * 2**30)
    with _peak() as p:
        msg = _refused(str(path), "is 3.0 GiB, over the limit")
    assert p.bytes < MiB, msg
    ok = _write(tmp_path, small, "ok.vizmm")
    with pytest.raises(TraceError, match="over the limit"):
        vizmm.load(ok, max_file_bytes=len(small) - 1)
    assert vizmm.load(ok, max_file_bytes=len(small)).summary()


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="needs Linux's /proc")
def test_a_file_larger_than_it_said_is_still_bounded(tmp_path):
    # /proc files are regular files whose size says 0 and which hold more: a
    # file that grows while it is read. At most max_file_bytes + 1 bytes are read.
    assert os.stat("/proc/self/status").st_size == 0
    with pytest.raises(TraceError, match="status grew past the limit of 64 B"):
        fileformat.read_trace_bytes("/proc/self/status", max_file_bytes=64)
    for fn in (vizmm.load, read_info):
        with pytest.raises(TraceError, match="status grew past the limit"):
            fn("/proc/self/status", max_file_bytes=64)
    with pytest.raises(TraceError, match="status is not a vizmm trace file"):
        vizmm.load("/proc/self/status")  # read whole (under the limit), then refused


def test_file_size_limit_from_the_environment():
    code = "from vizmm.trace import fileformat as f; print(f.DEFAULT_MAX_FILE_BYTES)"
    env = dict(os.environ, VIZMM_MAX_TRACE_FILE_BYTES="12345")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert out.stdout.strip() == "12345", out.stderr
    if not os.environ.get("VIZMM_MAX_TRACE_FILE_BYTES"):
        assert fileformat.DEFAULT_MAX_FILE_BYTES == 256 * MiB


def test_read_trace_bytes_reads_a_regular_file(tmp_path, small):
    path = _write(tmp_path, small, "t.vizmm")
    assert fileformat.read_trace_bytes(path) == ("t.vizmm", small)
    os.chmod(path, 0)
    if os.access(path, os.R_OK):  # root reads anything
        pytest.skip("running as root")
    with pytest.raises(TraceError, match="cannot read .*t.vizmm"):
        fileformat.read_trace_bytes(path)


class _peak:
    """The peak of Python-tracked memory (NumPy's arrays included) while the block runs."""

    def __enter__(self):
        tracemalloc.start()
        return self

    def __exit__(self, *exc):
        self.bytes = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        return False


def _lying_header(members, member, shape_text, descr="'<i4'"):
    text = f"{{'descr': {descr}, 'fortran_order': False, 'shape': {shape_text}, }}"
    raw = text.encode() + b" " * (-(len(text) + 11) % 64) + b"\n"
    return dict(members, **{member: b"\x93NUMPY\x01\x00" + struct.pack("<H", len(raw)) + raw})


def test_npy_header_claiming_2_40_bytes(tmp_path, small, worker, capsys):
    # numpy.load would allocate 2^40 bytes from this header before reading.
    members = _lying_header(_members(small), "loads.npy", f"({2**38},)")
    data = _zip(members)
    path = _write(tmp_path, data, "huge-header.vizmm")
    with _peak() as p:
        _refused(path, "'loads' is stored as <i4 [274877906944]", "manifest says <i4")
    assert p.bytes < 2 * MiB
    res = worker.run(data)  # and under the 512 MiB address-space limit
    _check_answer(res, "2^40 header")
    assert res["load"]["outcome"] == "TraceError"
    _cli_refuses(path, capsys)


def test_npy_header_in_fortran_order_or_another_dtype(tmp_path, small):
    members = _members(small)
    shape = np.load(io.BytesIO(members["loads.npy"])).shape
    text = repr(shape)
    fortran = dict(members)
    fortran["loads.npy"] = members["loads.npy"].replace(b"False", b"True ", 1)
    assert fortran["loads.npy"] != members["loads.npy"]
    _refused(_write(tmp_path, _zip(fortran), "f.vizmm"), "Fortran order")
    old = members["loads.npy"]
    payload = old[10 + struct.unpack_from("<H", old, 8)[0] :]
    for descr in ("'>i4'", "'<f4'", "[('a', '<i4')]"):
        lying = _lying_header(members, "loads.npy", text, descr)
        lying["loads.npy"] += payload
        _refused(_write(tmp_path, _zip(lying), "d.vizmm"), "'loads' is stored as")


def _patch_central(data, member, offset, fmt, value):
    out = bytearray(data)
    (m,) = [m for m in _layout(data) if m["name"] == member]
    struct.pack_into(fmt, out, m["central"] + offset, value)
    return bytes(out)


def test_encrypted_member(tmp_path, small, capsys):
    data = _patch_central(small, "loads.npy", 8, "<H", 0x1)
    path = _write(tmp_path, data, "encrypted.vizmm")
    _refused(path, "loads.npy is encrypted")
    _cli_refuses(path, capsys)


@pytest.mark.parametrize("method", [1, 6, 12, 14, 99])
def test_unknown_compression_method(tmp_path, small, method, capsys):
    data = _patch_central(small, "pvalue.npy", 10, "<H", method)
    path = _write(tmp_path, data, "method.vizmm")
    _refused(path, f"pvalue.npy uses zip compression method {method}")
    _cli_refuses(path, capsys, ("info", "table"))


def test_corrupt_deflate_stream(tmp_path, small):
    # The first byte of a deflate stream holds the block type: 3 is invalid.
    (m,) = [m for m in _layout(small) if m["name"] == "loads.npy"]
    out = bytearray(small)
    out[m["start"]] |= 0b110
    _refused(_write(tmp_path, bytes(out), "zlib.vizmm"), "compressed data is corrupt")


@pytest.mark.parametrize("opener", ["[", '{"a": '])
def test_deeply_nested_manifest(tmp_path, small, opener):
    members = dict(_members(small), **{"manifest.npy": _manifest_member(opener * 100_000)})
    _refused(_write(tmp_path, _zip(members), "deep.vizmm"), "nested too deeply")


@pytest.mark.parametrize(
    "key,value,message",
    [
        ("drop_barrier", [[1]], "'drop_barrier' must be a list of the barriers removed"),
        ("simulated_blocks", [[0]], "'simulated_blocks' must be 'all' or a list"),
        ("versions", [], "'versions' must be a mapping"),
        ("elapsed_s", "fast", "'elapsed_s' must be a finite number of seconds"),
        ("elapsed_s", float("inf"), "'elapsed_s' must be a finite number of seconds"),
        ("simulated_blocks", [[0, 0], [0, 0]], "distinct"),
        ("simulated_blocks", [[0, 5]], "inside the grid"),
        ("sm_count", True, "'sm_count' must be an integer"),
        ("seed", -1, "'seed' must be an integer >= 0"),
        ("figure", "x" * 5000, "'figure' must be text of at most 1000"),
        ("backend", "tpu", "'backend' must be one of simulator, gpu"),
        ("compute_capability", [9], "'compute_capability' must be a [major, minor]"),
    ],
)
def test_metadata_that_summary_or_info_would_trip_over(tmp_path, small, key, value, message):
    members = _members(small)
    manifest = _manifest(members)
    manifest["meta"][key] = value
    path = _write(tmp_path, _with_manifest(members, manifest), "meta.vizmm")
    with pytest.raises(TraceError) as info:
        vizmm.load(path).summary()
    assert "meta.vizmm" in str(info.value) and message in str(info.value)
    assert len(str(info.value)) < 300
    _refused(path, message)


def test_metadata_cli(tmp_path, small, capsys):
    members = _members(small)
    for key, value in (("drop_barrier", [[1]]), ("elapsed_s", "fast"), ("versions", [])):
        manifest = _manifest(members)
        manifest["meta"][key] = value
        path = _write(tmp_path, _with_manifest(members, manifest), f"{key}.vizmm")
        _cli_refuses(path, capsys, ("info", "table", "transactions", "export"))


def test_metadata_the_recorder_writes_is_accepted(small):
    meta = from_bytes(small).meta
    assert meta["simulated_blocks"] == "all" and isinstance(meta["versions"], dict)
    assert isinstance(meta["elapsed_s"], float) and meta["elapsed_s"] >= 0


def test_totals_that_disagree_with_the_arrays(tmp_path, small):
    members = _members(small)
    manifest = _manifest(members)
    manifest["stats"]["m_reads"] += 1  # what 'vizmm info' would print: wrong
    path = _write(tmp_path, _with_manifest(members, manifest), "stats.vizmm")
    _refused(path, "totals (stats) disagree with its arrays", info=False)
    manifest["stats"]["m_reads"] = "many"
    path = _write(tmp_path, _with_manifest(members, manifest), "stats2.vizmm")
    _refused(path, "totals (stats) are not two counts")


def _with_loads(members, change):
    """``members`` with loads.npy changed by ``change(loads)``, its checksums made right."""
    manifest = _manifest(members)
    loads = np.load(io.BytesIO(members["loads.npy"])).copy()
    change(loads)
    d = manifest["arrays"]["loads"]
    d["sha256"] = d["stored"]["sha256"] = _digest(loads)
    return _with_manifest(dict(members, **{"loads.npy": _npy(loads)}), manifest)


@pytest.mark.parametrize(
    "field,value,message",
    [
        # (kind, row, col) of M at [slot 0, phase 0, ty 0, tx 0]: a LOADED M[0][0]
        (1, 99, "an M element outside the 4 x 4 tiles"),  # M row 99 of a 4 x 4 M
        (2, -1, "an M element outside the 4 x 4 tiles"),
        (4, 7, "an N element outside the 4 x 4 tiles"),  # N row 7
        (0, 2, "records M[0][0] as ZERO_FILL"),  # a zero-fill inside M
        (0, 3, "records M[0][0] as WRONG_ELEMENT"),  # a row wrap inside M
        (0, 4, "records M[0][0] as OUT_OF_ALLOCATION"),
    ],
)
def test_load_records_outside_the_matrices(tmp_path, small, field, value, message, capsys):
    loads = np.load(io.BytesIO(_members(small)["loads.npy"]))
    assert loads[0, 0, 0, 0].tolist() == [1, 0, 0, 1, 0, 0]  # block (0,0), ph 0: M, N [0][0]

    def change(ld):
        ld[0, 0, 0, 0, field] = value

    path = _write(tmp_path, _with_loads(_members(small), change), "loads.vizmm")
    with pytest.raises(TraceError) as info:
        vizmm.load(path)
    assert "loads.vizmm" in str(info.value) and message in str(info.value)
    _cli_refuses(path, capsys, ("table",))


def test_sentinel_load_records_are_accepted(tmp_path, small):
    # NOT_RECORDED (kind 0 at 0, 0) is what the recorder leaves where nothing loaded.
    def change(ld):
        ld[0, 0, 0, 0, :3] = 0

    trace = vizmm.load(_write(tmp_path, _with_loads(_members(small), change), "s.vizmm"))
    assert trace.loads[0, 0, 0, 0, 0] == 0 and trace.summary()
    # zero-fills and row-wrapped reads outside M, as the book's 3 x 3 example records them
    fig = vizmm.load(os.path.join(DATA, "fig5-9-3x3.vizmm"))
    kinds = set(fig.loads[..., [0, 3]].ravel().tolist())
    assert {1, 3, 4} <= kinds
    boundary = vizmm.load(os.path.join(DATA, "fig5-11.vizmm"))
    assert 2 in boundary.loads[..., [0, 3]]


def test_every_shipped_trace_loads_and_info_agrees():
    for name in sorted(os.listdir(DATA)):
        if not name.endswith(".vizmm"):
            continue
        path = os.path.join(DATA, name)
        trace = vizmm.load(path)
        info = read_info(path)
        assert trace.summary()
        assert info.summary() in (None, trace.summary()), name


def test_from_bytes_of_something_else():
    with pytest.raises(TraceError, match="read from bytes"):
        from_bytes(10**12, name="n.vizmm")


def test_member_count_is_bounded(small, tmp_path):
    members = list(_members(small).items())
    members += [(f"x{i}.npy", b"") for i in range(300)]
    _refused(_write(tmp_path, _zip(members), "many.vizmm"), "more than 256 members")


def test_not_a_regular_file_mode():
    # every kind of file but a regular one is named in the refusal
    for mode, word in (
        (stat.S_IFDIR, "folder"),
        (stat.S_IFIFO, "FIFO"),
        (stat.S_IFCHR, "character device"),
        (stat.S_IFBLK, "block device"),
        (stat.S_IFSOCK, "socket"),
    ):
        with pytest.raises(TraceError, match=word):
            fileformat._refuse_special(mode, "p.vizmm")
    fileformat._refuse_special(stat.S_IFREG, "p.vizmm")
