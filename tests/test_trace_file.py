"""The trace file: round trip, and refusal of files that are not intact traces."""

import dataclasses
import io
import json
import os
import zipfile

import numpy as np
import pytest

import vizmm
from vizmm import Trace, TraceError


@pytest.fixture(scope="module")
def trace(record_sim):
    return record_sim(width=3, tile_width=2, kernel="tiled", seed=7)


@pytest.fixture(scope="module")
def given_inputs():
    """A recording of inputs given by the caller (not the seeded default ones)."""
    M = np.arange(12, dtype=np.float32).reshape(3, 4) - 5
    N = np.arange(8, dtype=np.float32).reshape(4, 2) * 0.5
    return vizmm.record(M=M, N=N, tile_width=2, kernel="general", backend="simulator", quiet=True)


@pytest.fixture()
def saved(trace, tmp_path):
    return trace.save(tmp_path / "t.vizmm")


def _members(path):
    with zipfile.ZipFile(path) as z:
        return {name: z.read(name) for name in z.namelist()}


def _write_members(path, members):
    with zipfile.ZipFile(path, "w") as z:
        for name, data in members.items():
            z.writestr(name, data)


def _npy(arr):
    buf = io.BytesIO()
    np.save(buf, arr, allow_pickle=False)
    return buf.getvalue()


def _array(data):
    return np.load(io.BytesIO(data), allow_pickle=False)


def _manifest(members):
    return json.loads(_array(members["manifest.npy"]).tobytes().decode())


def _set_manifest(members, manifest):
    blob = np.frombuffer(json.dumps(manifest).encode(), dtype=np.uint8)
    members["manifest.npy"] = _npy(blob)


@pytest.mark.parametrize("which", ["trace", "given_inputs"])
def test_round_trip(request, which, tmp_path):
    trace = request.getfixturevalue(which)
    back = vizmm.load(trace.save(tmp_path / "t.vizmm"))
    assert isinstance(back, Trace)
    assert dict(back.meta) == dict(trace.meta)
    for name, arr in trace.arrays().items():
        other = getattr(back, name)
        assert other.dtype == arr.dtype and other.shape == arr.shape, name
        np.testing.assert_array_equal(other, arr, err_msg=name)
    # The file is the same when written again.
    assert back.to_bytes() == trace.to_bytes()


def test_save_leaves_no_temporary_file(trace, tmp_path):
    trace.save(tmp_path / "a.vizmm")
    assert sorted(os.listdir(tmp_path)) == ["a.vizmm"]


def test_save_to_missing_folder_raises_and_leaves_nothing(trace, tmp_path):
    target = tmp_path / "missing" / "t.vizmm"
    with pytest.raises(OSError):
        trace.save(target)
    assert not target.parent.exists()
    assert os.listdir(tmp_path) == []


def test_unknown_version(saved):
    members = _members(saved)
    manifest = _manifest(members)
    manifest["version"] = 999
    _set_manifest(members, manifest)
    _write_members(saved, members)
    with pytest.raises(TraceError, match="version 999"):
        vizmm.load(saved)


def test_truncated_file(saved):
    with open(saved, "rb") as f:
        data = f.read()
    for cut in (len(data) // 2, len(data) - 10, 30):
        with open(saved, "wb") as f:
            f.write(data[:cut])
        with pytest.raises(TraceError, match="truncated or damaged|not a vizmm trace"):
            vizmm.load(saved)


@pytest.mark.parametrize("which", ["trace", "given_inputs"])
def test_tampered_array(request, which, tmp_path):
    # Change one element of an array inside the file and zip it again: the
    # manifest's checksum no longer matches.
    path = request.getfixturevalue(which).save(tmp_path / "t.vizmm")
    members = _members(path)
    for name in ("loads", "pvalue", "M"):
        arr = _array(members[f"{name}.npy"]).copy()
        if arr.size == 0:  # stored in a compact form (the seeded inputs)
            continue
        arr.flat[0] += 1
        changed = dict(members, **{f"{name}.npy": _npy(arr)})
        _write_members(path, changed)
        with pytest.raises(TraceError, match=f"'{name}' does not match its checksum"):
            vizmm.load(path)


def test_tampered_byte_in_any_array(given_inputs, tmp_path):
    # Flip the last byte (array data, not header) of each stored array in turn.
    path = given_inputs.save(tmp_path / "t.vizmm")
    members = _members(path)
    tried = 0
    for member, data in members.items():
        if member == "manifest.npy" or _array(data).size == 0:
            continue
        raw = bytearray(data)
        raw[-1] ^= 0x01
        _write_members(path, dict(members, **{member: bytes(raw)}))
        with pytest.raises(TraceError, match="checksum|shape|code"):
            vizmm.load(path)
        tried += 1
    assert tried >= 10


def test_array_disagrees_with_manifest(saved):
    members = _members(saved)
    members["pvalue.npy"] = _npy(np.zeros((2, 2), np.float32))
    _write_members(saved, members)
    with pytest.raises(TraceError, match="'pvalue'.*manifest"):
        vizmm.load(saved)


def test_wrong_shape_for_the_metadata(given_inputs, tmp_path):
    # A manifest (right checksums) whose metadata says M has 4 rows while the
    # arrays have 3: refused.
    saved = given_inputs.save(tmp_path / "t.vizmm")
    members = _members(saved)
    manifest = _manifest(members)
    manifest["meta"]["j"] = 4
    _set_manifest(members, manifest)
    _write_members(saved, members)
    with pytest.raises(TraceError, match="shape"):
        vizmm.load(saved)


def test_missing_array(saved):
    members = _members(saved)
    del members["pvalue.npy"]
    _write_members(saved, members)
    with pytest.raises(TraceError, match="lacks arrays: pvalue"):
        vizmm.load(saved)


def test_not_a_zip(tmp_path):
    path = tmp_path / "notes.vizmm"
    path.write_text("this is not a trace\n")
    with pytest.raises(TraceError, match="notes.vizmm"):
        vizmm.load(path)


def test_zip_without_manifest(tmp_path):
    path = tmp_path / "other.vizmm"
    with open(path, "wb") as f:
        np.savez(f, a=np.arange(3))
    with pytest.raises(TraceError, match="no manifest"):
        vizmm.load(path)


def test_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError):
        vizmm.load(tmp_path / "nothing.vizmm")


def test_arrays_are_read_only(trace):
    for name, arr in trace.arrays().items():
        assert not arr.flags.writeable, name
        if arr.size:
            with pytest.raises(ValueError):
                arr.flat[0] = arr.flat[0]


def test_loaded_arrays_are_read_only(saved):
    back = vizmm.load(saved)
    with pytest.raises(ValueError):
        back.P[0, 0] = 1


def test_meta_is_read_only(trace):
    with pytest.raises(TypeError):
        trace.meta["kernel"] = "naive"
    with pytest.raises(TypeError):
        trace.meta.update(kernel="naive")
    with pytest.raises(TypeError):
        del trace.meta["kernel"]
    assert trace.kernel == "tiled"


def test_fields_cannot_be_replaced(trace):
    with pytest.raises(dataclasses.FrozenInstanceError):
        trace.P = np.zeros((3, 3), np.float32)


def test_trace_copies_writable_inputs(trace):
    # Building a Trace from writable arrays copies them: later changes to the
    # caller's arrays do not reach the trace.
    arrays = {name: np.array(a) for name, a in trace.arrays().items()}
    made = Trace(meta=dict(trace.meta), **arrays)
    arrays["M"][0, 0] = 12345
    assert made.M[0, 0] == trace.M[0, 0]


def test_constructor_validates_shapes(trace):
    arrays = {name: np.array(a) for name, a in trace.arrays().items()}
    arrays["loads"] = arrays["loads"][:, :1]
    with pytest.raises(TraceError, match="loads must be int32 of shape"):
        Trace(meta=dict(trace.meta), **arrays)


def test_constructor_validates_codes(trace):
    arrays = {name: np.array(a) for name, a in trace.arrays().items()}
    arrays["loads"][0, 0, 0, 0, 0] = 9
    with pytest.raises(TraceError, match="unknown access code"):
        Trace(meta=dict(trace.meta), **arrays)


def test_a_read_trace_makes_its_seeded_inputs_when_first_read(trace, saved):
    from vizmm.trace.model import ARRAY_NAMES

    back = vizmm.load(saved)
    assert all(trace.is_made(n) for n in ARRAY_NAMES)  # a recording holds every array
    assert not back.is_made("M") and not back.is_made("N")  # from the seed, when read
    bytes_before = back.nbytes
    np.testing.assert_array_equal(back.M, trace.M)
    assert back.is_made("M") and not back.is_made("N")
    for n in ARRAY_NAMES:
        getattr(back, n)
    assert all(back.is_made(n) for n in ARRAY_NAMES)
    # counted before as they are once made: the bytes of the arrays themselves
    assert bytes_before == back.nbytes == sum(getattr(trace, n).nbytes for n in ARRAY_NAMES)
