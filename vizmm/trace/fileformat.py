"""The trace file format: encoding, validation before decoding, atomic writes.

Files are a pickle-free ``.npz`` (a zip of ``.npy`` arrays) with a JSON
manifest stored as a ``uint8`` array named ``manifest``: the format name, its
version, the metadata, a few totals (``stats``: what ``vizmm info`` prints)
and, for every array, its dtype, shape and SHA-256, and how it is stored.

Reading checks, in this order, before any array is rebuilt:

1. the file is a zip archive holding a manifest of at most 1 MiB;
2. the manifest is ours (format, a version this vizmm reads), its metadata
   describes a valid launch, and every array's dtype and shape is the one
   that launch implies;
3. the arrays' total size (the trace in memory) is within ``max_bytes``;
4. every stored member has the size its description implies (no member
   inflates beyond it), and the SHA-256 of what is stored matches.

Only then are the compact encodings undone: ``seeded`` M and N (made again
from the seed), ``xor-product`` / ``product`` P (from ``M @ N``) and
``fill`` (an array of one value). M, N and P are rebuilt when first used
(:class:`~vizmm.trace.model.Deferred`), and their own SHA-256 is checked then.
A file that fails any check is refused with :class:`TraceError` saying what
is wrong, in our words.

The model (:class:`~vizmm.trace.model.Trace`) lives in :mod:`.model`; this
module only turns it into bytes and back.
"""

from __future__ import annotations

import dataclasses
import errno
import hashlib
import io
import json
import math
import os
import tempfile
import threading
import zipfile
from collections.abc import Mapping
from typing import Any

import numpy as np

from .launch import LaunchShape
from .model import OPTIONAL_ARRAYS, Deferred, Trace, TraceError, array_specs, check_meta, describe
from .units import human_bytes

FORMAT = "vizmm-trace"
VERSION = 2
#: Versions this vizmm reads (1: no stored checksums, no stats, no fill).
READABLE_VERSIONS = (1, 2)
#: The largest manifest read (bytes).
MAX_MANIFEST_BYTES = 2**20
_NPY_HEADER = 4096  # an .npy header is at most this many bytes (ours: 128)


def env_limit(name: str, default, kind: type | None = None):
    """A limit set by the environment variable ``name``, else ``default``.

    Parameters
    ----------
    name : str
        The variable (``VIZMM_...``).
    default : int, float or None
        The limit when the variable is unset, empty, not a number of
        ``kind`` or not positive (None: no limit).
    kind : {int, float}, optional
        How the variable is read; by default ``default``'s type.

    Returns
    -------
    int, float or None
    """
    text = os.environ.get(name)
    if not text:
        return default
    try:
        value = (kind or type(default))(text)
    except ValueError:
        return default
    return value if value > 0 else default


#: Largest trace (bytes of its arrays in memory) recorded or read by default:
#: 1 GiB, or ``$VIZMM_MAX_TRACE_BYTES``.
DEFAULT_MAX_BYTES = env_limit("VIZMM_MAX_TRACE_BYTES", 2**30)

__all__ = [
    "DEFAULT_MAX_BYTES",
    "FORMAT",
    "READABLE_VERSIONS",
    "VERSION",
    "TraceInfo",
    "atomic_write",
    "env_limit",
    "from_bytes",
    "load",
    "read_info",
    "seeded_inputs",
    "to_bytes",
]


def to_bytes(trace: Trace) -> bytes:
    """The bytes of ``trace``'s file (see the module docstring for the format).

    Large inputs are stored compactly when that is exact: M and N made by
    :func:`seeded_inputs` are stored as their seed; P as the XOR of its bits
    with NumPy's ``M @ N`` (nothing at all when they are equal) when M and N
    hold integers small enough for every float32 sum to be exact; an integer
    array of one value as that value. The manifest keeps each real array's
    checksum and each stored array's, and loading verifies both.
    """
    arrays = trace.arrays()
    stored = dict(arrays)
    encoding: dict[str, dict] = {}
    j, k, l = trace.shape
    seed = trace.meta.get("seed")
    if trace.meta.get("inputs") == "seeded" and isinstance(seed, int):
        M0, N0 = seeded_inputs(j, k, l, seed)
        for name, ref in (("M", M0), ("N", N0)):
            if np.array_equal(arrays[name], ref):
                stored[name] = np.zeros((0, 0), np.float32)
                encoding[name] = {"encoding": "seeded"}
        del M0, N0
    if _exact_product(trace.M, trace.N):
        xor = trace.P.view(np.uint32) ^ _product(trace.M, trace.N).view(np.uint32)
        if not xor.any():
            stored["P"] = np.zeros((0, 0), np.uint32)
            encoding["P"] = {"encoding": "product"}
        else:
            stored["P"] = xor
            encoding["P"] = {"encoding": "xor-product"}
    for name, a in arrays.items():
        if name in encoding or a.dtype.kind not in "iu" or a.size < 64:
            continue
        first = a.flat[0]
        if (a == first).all():
            stored[name] = np.zeros((0,), a.dtype)
            encoding[name] = {"encoding": "fill", "fill": int(first)}
    manifest = {
        "format": FORMAT,
        "version": VERSION,
        "meta": _jsonable(dict(trace.meta)),
        "stats": {
            "m_reads": int(trace.m_reads.sum()),
            "n_reads": int(trace.n_reads.sum()),
            "has_clocks": trace.has_clocks,
        },
        "arrays": {
            name: {
                "dtype": a.dtype.str,
                "shape": list(a.shape),
                "sha256": _digest(a),
                **encoding.get(name, {}),
                "stored": {
                    "dtype": stored[name].dtype.str,
                    "shape": list(stored[name].shape),
                    "sha256": _digest(stored[name]),
                },
            }
            for name, a in arrays.items()
        },
    }
    buf = io.BytesIO()
    blob = np.frombuffer(json.dumps(manifest).encode(), dtype=np.uint8)
    np.savez_compressed(buf, manifest=blob, **stored)
    return buf.getvalue()


def _digest(a: np.ndarray) -> str:
    a = np.ascontiguousarray(a)
    return hashlib.sha256(memoryview(a.reshape(-1)).cast("B") if a.size else b"").hexdigest()


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


def _umask() -> int:
    with _UMASK_LOCK:
        mask = os.umask(0o022)
        os.umask(mask)
    return mask


_UMASK_LOCK = threading.Lock()


def check_path(path, what: str = "path") -> str:
    """``path`` as a string, or :class:`TraceError` naming what was given instead."""
    if isinstance(path, bytes):
        path = os.fsdecode(path)
    if not isinstance(path, (str, os.PathLike)):
        raise TraceError(
            f"{what} must be a file path (a str or os.PathLike), got {type(path).__name__} "
            f"{path!r}"[:200]
        )
    path = os.fspath(path)
    if not path:
        raise TraceError(f"{what} is empty: give a file name")
    return path


def atomic_write(path: str | os.PathLike, data: bytes) -> str:
    """Write ``data`` to ``path`` so that a reader never sees a half-written file.

    What is at ``path`` is looked at first (``os.lstat``,
    :func:`vizmm.trace.destination.inspect`):

    * nothing or a regular file: ``data`` goes to a temporary file
      ``.vizmm-<pid>-<random>.tmp`` in the same folder, which is then renamed
      onto ``path``. The file gets the mode a new file gets here (``0o666``
      less the umask, usually ``0o644``: readable by the class), not the
      temporary file's 0600. Leftover temporary files of dead writers in that
      folder are removed first (a writer killed by SIGKILL cannot clean up);
    * a symbolic link: written through to its final target the same way; the
      link stays a link. A dangling link creates its target when the target's
      folder exists;
    * a FIFO or a character device (``/dev/null``, a terminal): opened and
      written to, never replaced; a FIFO that nothing reads is refused at once;
    * a folder, a socket, a block device: refused, never replaced.

    Parameters
    ----------
    path : str or os.PathLike
    data : bytes

    Returns
    -------
    str
        ``path``, as given (a string).

    Raises
    ------
    TraceError
        When ``path`` is not a path.
    FileNotFoundError, IsADirectoryError, PermissionError, OSError
        When the folder does not exist, ``path`` is a folder, a socket or a
        block device, the folder is not writable, nothing reads the FIFO, the
        device is full; the message names ``path``; no file and no temporary
        file is left.
    """
    from . import destination

    path = check_path(path, "the file to write")
    dest = destination.inspect(path)
    if dest.kind in destination.STREAMS:
        destination.write_through(dest, data)
        return path
    folder = dest.folder
    destination.remove_dead_temporaries(folder)
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(prefix=destination.temp_prefix(), suffix=".tmp", dir=folder)
        with os.fdopen(fd, "wb") as f:
            os.fchmod(f.fileno(), 0o666 & ~_umask())
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        destination.replace_file(tmp, dest)
    except BaseException as exc:
        if tmp is not None and os.path.lexists(tmp):
            os.unlink(tmp)
        if not isinstance(exc, OSError) or str(exc.strerror).startswith("cannot write "):
            raise
        raise type(exc)(exc.errno, f"cannot write {path}: {exc.strerror or exc}", path) from None
    return path


@dataclasses.dataclass(frozen=True)
class TraceInfo:
    """What a trace file's manifest says, read without decoding any array.

    Attributes
    ----------
    meta : dict
        The trace's metadata (see :class:`~vizmm.trace.model.Trace`).
    launch : LaunchShape
    version : int
        The file format's version.
    nbytes : int
        Size of the trace's arrays in memory (bytes).
    stats : dict or None
        ``m_reads``, ``n_reads`` (global reads, elements) and ``has_clocks``
        (version 2 files; ``None`` for version 1).
    """

    meta: Mapping[str, Any]
    launch: LaunchShape
    version: int
    nbytes: int
    stats: Mapping[str, Any] | None

    def summary(self) -> str | None:
        """The lines of :meth:`Trace.summary`, or None when the file keeps no totals (v1)."""
        st = self.stats
        if not st or not all(isinstance(st.get(k), int) for k in ("m_reads", "n_reads")):
            return None
        return describe(
            self.meta,
            self.launch,
            self.meta["n_detail"],
            st["m_reads"] + st["n_reads"],
            bool(st.get("has_clocks")),
        )


def _refuse_non_zip(data: bytes, name: str) -> None:
    if not data:
        raise TraceError(f"{name} is empty, not a vizmm trace file")
    if data[:4] != b"PK\x03\x04":
        raise TraceError(
            f"{name} is not a vizmm trace file (trace files are zip archives made by "
            "'vizmm record' or Trace.save; this one starts with "
            f"{data[:8]!r})"
        )


def _read_member(zf: zipfile.ZipFile, member: str, limit: int, name: str) -> np.ndarray:
    info = zf.getinfo(member)
    if info.file_size > limit:
        raise TraceError(
            f"{name}: {member} holds {info.file_size} bytes, more than its description allows "
            f"({limit}); the file was changed or damaged"
        )
    with zf.open(info) as f:
        return np.lib.format.read_array(f, allow_pickle=False)


def _manifest_of(zf: zipfile.ZipFile, name: str) -> dict:
    if "manifest.npy" not in zf.namelist():
        raise TraceError(f"{name} is not a vizmm trace (a zip archive with no manifest)")
    blob = _read_member(zf, "manifest.npy", MAX_MANIFEST_BYTES + _NPY_HEADER, name)
    if blob.dtype != np.uint8 or blob.ndim != 1:
        raise TraceError(f"{name}: the manifest is not text")
    try:
        manifest = json.loads(blob.tobytes().decode())
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise TraceError(f"{name}: the manifest is not valid JSON ({exc})") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        what = manifest.get("format") if isinstance(manifest, dict) else type(manifest).__name__
        raise TraceError(f"{name} is not a vizmm trace (format {what!r})")
    version = manifest.get("version")
    if version not in READABLE_VERSIONS:
        raise TraceError(
            f"{name} has trace format version {version!r}; this vizmm reads versions "
            f"{', '.join(map(str, READABLE_VERSIONS))}"
        )
    return manifest


def _check_manifest(manifest: dict, name: str, max_bytes: int) -> tuple[dict, dict, int]:
    """The metadata and the arrays' specs, checked against each other and the limit."""
    meta = manifest.get("meta")
    if not isinstance(meta, dict):
        raise TraceError(f"{name}: the manifest's metadata is not a mapping")
    try:
        check_meta(meta)
        specs = array_specs(meta)
    except TraceError as exc:
        raise TraceError(f"{name}: {exc}") from None
    nbytes = sum(int(np.prod(shape, dtype=object)) * dt.itemsize for dt, shape in specs.values())
    if nbytes > max_bytes:
        launch = LaunchShape.of(meta, error=TraceError)
        raise TraceError(
            f"{name} describes a trace of {human_bytes(nbytes)} in memory ({launch.label()}), "
            f"over the limit of {human_bytes(max_bytes)}; it was not read"
        )
    declared = manifest.get("arrays")
    if not isinstance(declared, dict):
        raise TraceError(f"{name}: the manifest does not describe the arrays")
    specs = {  # files written before these arrays existed: the Trace leaves them empty
        key: v
        for key, v in specs.items()
        if not (key in OPTIONAL_ARRAYS and key not in declared and 0 in v[1])
    }
    for key, (dtype, shape) in specs.items():
        d = declared.get(key)
        if not isinstance(d, dict):
            raise TraceError(f"{name}: the manifest does not describe array {key!r}")
        if d.get("dtype") != dtype.str or d.get("shape") != list(shape):
            raise TraceError(
                f"{name}: array {key!r} is described as {d.get('dtype')} of shape "
                f"{d.get('shape')} but the metadata ({LaunchShape.of(meta).label()}) implies "
                f"{dtype.str} of shape {list(shape)}"
            )
    return meta, specs, nbytes


def _stored_spec(key: str, d: dict, dtype: np.dtype, shape, name: str):
    """(dtype, shape, sha256 or None) of what the file stores for array ``key``."""
    enc = d.get("encoding")
    if enc is None:
        expect = (dtype, tuple(shape))
    elif enc == "seeded" and key in ("M", "N"):
        expect = (np.dtype(np.float32), (0, 0))
    elif enc == "product" and key == "P":
        expect = (np.dtype(np.uint32), (0, 0))
    elif enc == "xor-product" and key == "P":
        expect = (np.dtype(np.uint32), tuple(shape))
    elif enc == "fill" and dtype.kind in "iu":
        fill = d.get("fill")
        info = np.iinfo(dtype)
        if isinstance(fill, bool) or not isinstance(fill, int) or not info.min <= fill <= info.max:
            raise TraceError(f"{name}: array {key!r} has a fill value {fill!r} outside {dtype}")
        expect = (dtype, (0,))
    else:
        raise TraceError(f"{name}: array {key!r} has an unknown encoding {enc!r}")
    stored = d.get("stored")
    digest = d.get("sha256") if enc is None else None
    if isinstance(stored, dict):
        if stored.get("dtype") != expect[0].str or stored.get("shape") != list(expect[1]):
            raise TraceError(
                f"{name}: the stored form of array {key!r} is described as "
                f"{stored.get('dtype')} {stored.get('shape')}; its encoding implies "
                f"{expect[0].str} {list(expect[1])}"
            )
        digest = stored.get("sha256")
    return expect[0], expect[1], digest


def _verified(key: str, a: np.ndarray, digest: str, name: str) -> np.ndarray:
    if _digest(a) != digest:
        raise TraceError(
            f"{name}: array {key!r} does not match its checksum (the file was changed or damaged)"
        )
    a.setflags(write=False)
    return a


def _read(data: bytes, name: str, max_bytes: int | None, manifest_only: bool = False):
    _refuse_non_zip(data, name)
    limit = DEFAULT_MAX_BYTES if max_bytes is None else int(max_bytes)
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        manifest = _manifest_of(zf, name)
        meta, specs, nbytes = _check_manifest(manifest, name, limit)
        stats = manifest.get("stats") if manifest["version"] >= 2 else None
        if manifest_only:
            return TraceInfo(
                meta=meta,
                launch=LaunchShape.of(meta, error=TraceError),
                version=manifest["version"],
                nbytes=nbytes,
                stats=stats if isinstance(stats, dict) else None,
            )
        declared = manifest["arrays"]
        members = set(zf.namelist())
        missing = [key for key in specs if f"{key}.npy" not in members]
        if missing:
            raise TraceError(f"{name} lacks arrays: {', '.join(sorted(missing))}")
        # 1. what is stored: sizes, dtypes, shapes and checksums, before any rebuilding
        stored = {}
        for key, (dtype, shape) in specs.items():
            d = declared[key]
            sdtype, sshape, digest = _stored_spec(key, d, dtype, shape, name)
            size = int(np.prod(sshape, dtype=object)) * sdtype.itemsize
            a = _read_member(zf, f"{key}.npy", size + _NPY_HEADER, name)
            if a.dtype != sdtype or a.shape != tuple(sshape):
                raise TraceError(
                    f"{name}: array {key!r} is stored as {a.dtype.str} {list(a.shape)} but the "
                    f"manifest says {sdtype.str} {list(sshape)}"
                )
            if digest is not None:
                a = _verified(key, a, digest, name)
            stored[key] = a
    # 2. rebuild the compact encodings (M, N and P when first used)
    arrays: dict[str, Any] = {}
    seeded: dict[str, np.ndarray] = {}
    for key, (dtype, shape) in specs.items():
        d, a = declared[key], stored[key]
        enc = d.get("encoding")
        if enc is None:
            a.setflags(write=False)
            arrays[key] = a
        elif enc == "fill":
            a = np.full(shape, d["fill"], dtype)
            a.setflags(write=False)
            arrays[key] = a
        else:
            arrays[key] = Deferred(
                dtype, tuple(shape), _rebuild(key, enc, a, meta, arrays, d["sha256"], name, seeded)
            )
    return Trace(meta=meta, **arrays)


def _rebuild(key, enc, stored, meta, arrays, digest, name, seeded):
    def compute():
        try:
            if enc == "seeded":
                # one draw makes both M and N (N follows M in the random stream)
                if key not in seeded:
                    M, N = seeded_inputs(meta["j"], meta["k"], meta["l"], meta["seed"])
                    seeded.update(M=M, N=N)
                    del M, N
                out = seeded.pop(key)
            else:
                ref = _product(_value(arrays["M"]), _value(arrays["N"]))
                out = ref if enc == "product" else (stored.view(np.uint32) ^ ref.view(np.uint32))
                out = out.view(np.float32)
        except (KeyError, TypeError, ValueError) as exc:
            raise TraceError(f"{name}: cannot rebuild array {key!r} ({exc})") from None
        return _verified(key, out, digest, name)

    return compute


def _value(a):
    return a.value() if isinstance(a, Deferred) else a


def from_bytes(data: bytes, name: str = "<bytes>", max_bytes: int | None = None) -> Trace:
    """Read a trace from the bytes of a trace file (see :func:`load`)."""
    try:
        return _read(bytes(data), name, max_bytes)
    except TraceError:
        raise
    except (
        zipfile.BadZipFile,
        zipfile.LargeZipFile,
        EOFError,
        OSError,
        ValueError,
        KeyError,
    ) as exc:
        raise TraceError(
            f"{name} is not a readable vizmm trace (truncated or damaged file: {_short(exc)})"
        ) from None


def _short(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    if "pickle" in text:  # NumPy's advice to load pickles is never ours to give
        return "an array that is not plain numbers"
    return text[:200]


def _read_file(path, max_file_bytes: int | None = None) -> tuple[str, bytes]:
    path = check_path(path, "the trace file")
    if os.path.isdir(path):
        raise TraceError(f"{path} is a folder, not a trace file")
    if not os.path.exists(path):
        raise FileNotFoundError(errno.ENOENT, f"{path}: no such file", path)
    with open(path, "rb") as f:
        data = f.read()
    return path, data


def load(path: str | os.PathLike, max_bytes: int | None = None) -> Trace:
    """Read a trace file written by :meth:`Trace.save`, checking it before decoding it.

    Parameters
    ----------
    path : str or os.PathLike
    max_bytes : int, optional
        Refuse traces whose arrays would take more memory (bytes); default
        :data:`DEFAULT_MAX_BYTES`.

    Raises
    ------
    FileNotFoundError
        When ``path`` does not exist.
    TraceError
        When ``path`` is not a path or is a folder; for a file that is not a
        zip archive, an unknown version, a manifest that disagrees with its
        launch, a trace over ``max_bytes``, a truncated, tampered or foreign
        file.
    """
    path, data = _read_file(path)
    return from_bytes(data, name=os.path.basename(path), max_bytes=max_bytes)


def read_info(path: str | os.PathLike, max_bytes: int | None = None) -> TraceInfo:
    """What a trace file holds, from its manifest alone (no array is decoded).

    Raises
    ------
    FileNotFoundError, TraceError
        As :func:`load`, for the checks of the manifest.
    """
    path, data = _read_file(path)
    name = os.path.basename(path)
    try:
        return _read(data, name, max_bytes, manifest_only=True)
    except TraceError:
        raise
    except (zipfile.BadZipFile, EOFError, OSError, ValueError, KeyError) as exc:
        raise TraceError(
            f"{name} is not a readable vizmm trace (truncated or damaged file: {_short(exc)})"
        ) from None


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
