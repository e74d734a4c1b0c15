"""The trace file format: encoding, decoding and atomic writes.

Files are a pickle-free ``.npz`` (a zip of ``.npy`` arrays) with a JSON
manifest stored as a ``uint8`` array named ``manifest``: the format name, its
version, the metadata and, for every array, its dtype, shape and SHA-256. A
file whose version is unknown, whose arrays do not match the manifest, or
that is truncated or not a trace at all is refused with :class:`TraceError`.

The model (:class:`~vizmm.trace.model.Trace`) lives in :mod:`.model`; this
module only turns it into bytes and back.
"""

from __future__ import annotations

import hashlib
import io
import json
import math
import os
import tempfile
import zipfile
from collections.abc import Mapping

import numpy as np

from .model import ARRAY_NAMES, OPTIONAL_ARRAYS, Trace, TraceError

FORMAT = "vizmm-trace"
VERSION = 1

__all__ = ["FORMAT", "VERSION", "atomic_write", "from_bytes", "load", "seeded_inputs", "to_bytes"]


def to_bytes(trace: Trace) -> bytes:
    """The bytes of ``trace``'s file (see the module docstring for the format).

    Large inputs are stored compactly when that is exact: M and N made by
    :func:`seeded_inputs` are stored as their seed, and P as the XOR of its
    bits with NumPy's ``M @ N`` when M and N hold integers small enough
    for every float32 sum to be exact. The manifest keeps each real
    array's checksum, and loading verifies it.
    """
    arrays = trace.arrays()
    stored = dict(arrays)
    encoding = {}
    j, k, l = trace.shape
    seed = trace.meta.get("seed")
    if trace.meta.get("inputs") == "seeded" and isinstance(seed, int):
        M0, N0 = seeded_inputs(j, k, l, seed)
        for name, ref in (("M", M0), ("N", N0)):
            if np.array_equal(arrays[name], ref):
                stored[name] = np.zeros((0, 0), np.float32)
                encoding[name] = "seeded"
    if _exact_product(trace.M, trace.N):
        ref = _product(trace.M, trace.N)
        stored["P"] = trace.P.view(np.uint32) ^ ref.view(np.uint32)
        encoding["P"] = "xor-product"
    manifest = {
        "format": FORMAT,
        "version": VERSION,
        "meta": _jsonable(dict(trace.meta)),
        "arrays": {
            name: {
                "dtype": a.dtype.str,
                "shape": list(a.shape),
                "sha256": _digest(a),
                **({"encoding": encoding[name]} if name in encoding else {}),
            }
            for name, a in arrays.items()
        },
    }
    buf = io.BytesIO()
    blob = np.frombuffer(json.dumps(manifest).encode(), dtype=np.uint8)
    np.savez_compressed(buf, manifest=blob, **stored)
    return buf.getvalue()


def _digest(a: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest()


def _jsonable(obj):
    if isinstance(obj, Mapping):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj


def atomic_write(path: str | os.PathLike, data: bytes) -> str:
    """Write ``data`` to ``path`` through a temporary file in the same folder, then rename.

    Raises
    ------
    OSError
        When the folder does not exist or is not writable; no file is left.
    """
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".vizmm-", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return path


def from_bytes(data: bytes, name: str = "<bytes>") -> Trace:
    """Read a trace from the bytes of a trace file (see :func:`load`)."""
    try:
        with np.load(io.BytesIO(data), allow_pickle=False) as npz:
            if "manifest" not in npz.files:
                raise TraceError(f"{name} is not a vizmm trace (no manifest)")
            try:
                manifest = json.loads(npz["manifest"].tobytes().decode())
            except (UnicodeDecodeError, json.JSONDecodeError) as exc:
                raise TraceError(f"{name}: the manifest is not valid JSON ({exc})") from None
            if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
                raise TraceError(f"{name} is not a vizmm trace (format {manifest.get('format')!r})")
            version = manifest.get("version")
            if version != VERSION:
                raise TraceError(
                    f"{name} has trace format version {version!r}; this vizmm reads version "
                    f"{VERSION} only"
                )
            declared = manifest.get("arrays", {})
            missing = set(ARRAY_NAMES) - set(npz.files) - set(OPTIONAL_ARRAYS)
            if missing:
                raise TraceError(f"{name} lacks arrays: {', '.join(sorted(missing))}")
            meta = manifest.get("meta", {})
            if not isinstance(meta, dict):
                raise TraceError(f"{name}: the manifest's metadata is not a mapping")
            arrays = {}
            for key in ARRAY_NAMES:
                if key in OPTIONAL_ARRAYS and key not in npz.files:
                    continue  # written before the barrier lab: the Trace leaves it empty
                a = npz[key]
                d = declared.get(key)
                if d is None:
                    raise TraceError(f"{name}: the manifest does not describe array {key!r}")
                a = _decode(key, a, d.get("encoding"), meta, arrays, name)
                if a.dtype.str != d["dtype"] or list(a.shape) != d["shape"]:
                    raise TraceError(
                        f"{name}: array {key!r} is {a.dtype.str} {list(a.shape)} but the "
                        f"manifest says {d['dtype']} {d['shape']}"
                    )
                if _digest(a) != d["sha256"]:
                    raise TraceError(
                        f"{name}: array {key!r} does not match its checksum "
                        "(the file was changed or damaged)"
                    )
                arrays[key] = a
    except TraceError:
        raise
    except (zipfile.BadZipFile, EOFError, OSError, ValueError, KeyError) as exc:
        raise TraceError(
            f"{name} is not a readable vizmm trace (truncated or damaged file: {exc})"
        ) from None
    return Trace(meta=meta, **arrays)


def seeded_inputs(j: int, k: int, l: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The default inputs: M (j x k) and N (k x l) of random integers 0..9, float32.

    Small integers keep every product exact in float32 and readable in a
    tooltip. ``numpy.random.default_rng(seed)`` draws M first, then N.
    """
    rng = np.random.default_rng(seed)
    M = rng.integers(0, 10, size=(j, k)).astype(np.float32)
    N = rng.integers(0, 10, size=(k, l)).astype(np.float32)
    return M, N


def _exact_product(M: np.ndarray, N: np.ndarray) -> bool:
    """True when M and N hold integers small enough for float32 ``M @ N`` to be exact."""
    if M.size == 0 or N.size == 0:
        return False
    if not (np.all(M == np.round(M)) and np.all(N == np.round(N))):
        return False
    bound = float(np.abs(M).max()) * float(np.abs(N).max()) * M.shape[1]
    return bound < 2**24


def _product(M: np.ndarray, N: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(np.matmul(M, N, dtype=np.float32))


def _decode(key, stored, encoding, meta, done, name):
    """Undo the compact encodings of :meth:`Trace.to_bytes`."""
    if encoding is None:
        return stored
    try:
        if encoding == "seeded":
            j, k, l, seed = meta["j"], meta["k"], meta["l"], meta["seed"]
            M, N = seeded_inputs(j, k, l, seed)
            return M if key == "M" else N
        if encoding == "xor-product" and key == "P":
            ref = _product(done["M"], done["N"])
            return (stored.view(np.uint32) ^ ref.view(np.uint32)).view(np.float32)
    except (KeyError, TypeError, ValueError) as exc:
        raise TraceError(f"{name}: cannot rebuild array {key!r} ({exc})") from None
    raise TraceError(f"{name}: array {key!r} has an unknown encoding {encoding!r}")


def load(path: str | os.PathLike) -> Trace:
    """Read a trace file written by :meth:`Trace.save`.

    Raises
    ------
    FileNotFoundError
        When ``path`` does not exist.
    TraceError
        For an unknown version, a truncated, tampered or foreign file, or
        arrays whose shapes disagree with the metadata.
    """
    path = os.fspath(path)
    with open(path, "rb") as f:
        data = f.read()
    return from_bytes(data, name=os.path.basename(path))
