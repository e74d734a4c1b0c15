"""The trace file format: encoding, validation before decoding, atomic writes.

Files are a pickle-free ``.npz`` (a zip of ``.npy`` arrays) with a JSON
manifest stored as a ``uint8`` array named ``manifest``: the format name, its
version, the metadata, a few totals (``stats``: what ``vizmm info`` prints)
and, for every array, its dtype, shape and SHA-256, and how it is stored.

One reader, :func:`read_trace_bytes`, gets a file's bytes for :func:`load`
and :func:`read_info`: it refuses anything but a regular file before opening
it (a folder, a FIFO with no writer, a device such as ``/dev/zero`` behind a
symbolic link, a socket), checks the size of the file it opened against
``max_file_bytes`` (:data:`DEFAULT_MAX_FILE_BYTES`) before reading, and reads
at most one byte more than that. A missing file is a ``FileNotFoundError``.

Decoding then checks, in this order, before any array is rebuilt:

1. the bytes are a zip archive listing at most :data:`MAX_ZIP_ENTRIES`
   members, holding a manifest of at most 1 MiB nested at most 32 deep;
2. the manifest is ours (format, a version this vizmm reads), its metadata
   describes a valid launch and every field that vizmm reads has the type
   and range it must have (:func:`~vizmm.trace.model.check_meta`), every
   array's dtype and shape is the one that launch implies, every array has
   a checksum and a known encoding, and the totals are two counts and a flag;
3. the arrays' total size (the trace in memory) is within ``max_bytes``;
4. every member is a plain zip entry (not encrypted, stored or deflated)
   no larger than its description implies, so none inflates beyond it;
5. every member's ``.npy`` header (read with NumPy's ``read_magic`` and
   ``read_array_header_1_0`` / ``_2_0``, never ``read_array``) says the
   dtype and shape the manifest implies, in C order, before exactly that
   many bytes are read: no header makes NumPy allocate anything;
6. the SHA-256 of what is stored matches, and the zip's CRC;
7. the records themselves (:class:`~vizmm.trace.model.Trace`): codes, blocks
   inside the grid, load records whose (row, col) the kernels can write,
   and the manifest's totals equal to what the arrays hold.

:func:`read_info` makes checks 1-5 (the arrays' data is not read). Only then
are the compact encodings undone: ``seeded`` M and N (made again from the
seed), ``xor-product`` / ``product`` P (from ``M @ N``) and ``fill`` (an
array of one value). M, N and P are rebuilt when first used
(:class:`~vizmm.trace.model.Deferred`), and their own SHA-256 is checked then.
A file that fails any check, or makes the zip, zlib, JSON or NumPy readers
fail in any way, is refused with one :class:`TraceError` naming the file and
saying what is wrong, in our words.

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
import stat
import struct
import tempfile
import threading
import tokenize
import zipfile
import zlib
from collections.abc import Mapping
from typing import Any

import numpy as np

from .launch import LaunchShape
from .model import (
    ARRAY_NAMES,
    OPTIONAL_ARRAYS,
    Deferred,
    Trace,
    TraceError,
    array_specs,
    check_meta,
    describe,
)
from .units import human_bytes

FORMAT = "vizmm-trace"
VERSION = 3
#: Versions this vizmm reads (1: no stored checksums, no stats, no fill; 2: no access log).
READABLE_VERSIONS = (1, 2, 3)
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
#: Largest trace file read by default (bytes on disk, checked before reading):
#: 256 MiB, or ``$VIZMM_MAX_TRACE_FILE_BYTES``.
DEFAULT_MAX_FILE_BYTES = env_limit("VIZMM_MAX_TRACE_FILE_BYTES", 256 * 2**20)

__all__ = [
    "DEFAULT_MAX_BYTES",
    "DEFAULT_MAX_FILE_BYTES",
    "FORMAT",
    "READABLE_VERSIONS",
    "VERSION",
    "TraceInfo",
    "TraceOverLimitError",
    "atomic_write",
    "env_limit",
    "from_bytes",
    "load",
    "read_info",
    "read_trace_bytes",
    "seeded_inputs",
    "to_bytes",
]


class TraceOverLimitError(TraceError):
    """A trace file describes more memory than the reader's limit; nothing was decoded.

    Attributes
    ----------
    nbytes : int
        What the trace's arrays would take in memory (bytes), from its manifest.
    limit : int
        The limit it is over (bytes).
    """

    def __init__(self, message: str, nbytes: int, limit: int):
        super().__init__(message)
        self.nbytes, self.limit = int(nbytes), int(limit)


def to_bytes(trace: Trace) -> bytes:
    """The bytes of ``trace``'s file (see the module docstring for the format).

    Large inputs are stored compactly when that is exact: M and N made by
    :func:`seeded_inputs` are stored as their seed; P as the XOR of its bits
    with NumPy's ``M @ N`` (nothing at all when they are equal) when M and N
    hold integers small enough for every float32 sum to be exact; an integer
    array of one value as that value. The manifest keeps each real array's
    checksum and each stored array's, and loading verifies both.

    Parameters
    ----------
    trace : Trace
        Any trace.
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
    np.savez_compressed(buf, allow_pickle=False, manifest=blob, **stored)
    return buf.getvalue()


def _digest(a: np.ndarray) -> str:
    a = np.ascontiguousarray(a)
    return hashlib.sha256(a.reshape(-1).data.cast("B") if a.size else b"").hexdigest()


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
    """``path`` as a string, or :class:`TraceError` naming what was given instead.

    Parameters
    ----------
    path : str, bytes or os.PathLike
        What was given as a file path.
    what : str
        What to call it in the error (e.g. ``'--out'``).
    """
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
    # zipfile makes one ZipInfo per central-directory entry it finds; every
    # entry starts with this signature, so counting it bounds that work.
    if data.count(_CENTRAL_ENTRY) > MAX_ZIP_ENTRIES:
        raise TraceError(
            f"{name}: the zip archive lists more than {MAX_ZIP_ENTRIES} members; a trace "
            f"file holds {len(ARRAY_NAMES) + 1}"
        )


#: The most central-directory entries a trace file may list (it holds 19).
MAX_ZIP_ENTRIES = 256
_CENTRAL_ENTRY = b"PK\x01\x02"
# Zip flag bits no trace file sets: encrypted (0x1), patched data (0x20),
# strong encryption (0x40).
_FOREIGN_FLAGS = 0x1 | 0x20 | 0x40
# How deeply a manifest may nest lists and mappings (ours: 4).
_MAX_NESTING = 32
# What NumPy raises for a .npy header it cannot read (the zip's own errors,
# BadZipFile, zlib.error and EOFError, are none of these).
_BAD_HEADER = (ValueError, SyntaxError, TypeError, RecursionError, tokenize.TokenError)
# What the zip reader raises for a member whose bytes are damaged.
_DAMAGED = (zipfile.BadZipFile, zlib.error, EOFError, struct.error)


class _Bounded:
    """A zip member's reader that never asks for more than the member's declared size.

    ``zipfile`` inflates at most what is asked for (and 4 KiB); asking for at
    most what is left keeps a lying ``.npy`` header (a 4 GiB header length)
    from inflating more than the member's size.
    """

    def __init__(self, f, size: int):
        self._f, self.left = f, size

    def read(self, n: int = -1) -> bytes:
        n = self.left if n is None or n < 0 else min(n, self.left)
        data = self._f.read(n) if n > 0 else b""
        self.left -= len(data)
        return data


def _read_member(
    zf: zipfile.ZipFile, member: str, limit: int, name: str, expect, header_only: bool = False
) -> np.ndarray | None:
    """The array stored as ``member``, its zip entry and ``.npy`` header checked before its data.

    ``expect(dtype, shape)`` raises :class:`TraceError` unless the header's
    dtype and shape are what the manifest describes; only then are exactly
    that many bytes read, and the array is a read-only view of them (None
    with ``header_only``: the entry and the header are checked, no data read).
    """
    info = zf.getinfo(member)
    if info.flag_bits & _FOREIGN_FLAGS:
        raise TraceError(
            f"{name}: {member} is encrypted or patched (zip flag bits {info.flag_bits:#06x}); "
            "trace files hold plain members"
        )
    if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
        raise TraceError(
            f"{name}: {member} uses zip compression method {info.compress_type}; trace files "
            f"are stored ({zipfile.ZIP_STORED}) or deflated ({zipfile.ZIP_DEFLATED})"
        )
    if info.file_size > limit:
        raise TraceError(
            f"{name}: {member} holds {info.file_size} bytes, more than its description allows "
            f"({limit}); the file was changed or damaged"
        )
    try:
        with zf.open(info) as raw:
            f = _Bounded(raw, info.file_size)
            try:
                version = np.lib.format.read_magic(f)
                if version == (1, 0):
                    read_header = np.lib.format.read_array_header_1_0
                elif version == (2, 0):
                    read_header = np.lib.format.read_array_header_2_0
                else:
                    raise TraceError(
                        f"{name}: {member} is a .npy array of format version "
                        f"{version[0]}.{version[1]}; trace files use 1.0 or 2.0"
                    )
                shape, fortran_order, dtype = read_header(f, max_header_size=_NPY_HEADER)
            except TraceError:
                raise
            except _BAD_HEADER:  # NumPy's words would quote the header: ours say what is wrong
                raise TraceError(
                    f"{name}: {member} has no valid .npy header (cut short, or not a "
                    "description of an array)"
                ) from None
            if fortran_order:
                raise TraceError(f"{name}: {member} is in Fortran order; trace files use C order")
            expect(dtype, shape)
            if header_only:
                return None
            nbytes = math.prod(shape) * dtype.itemsize
            data = f.read(nbytes)
            if len(data) != nbytes:
                raise TraceError(f"{name}: {member} is cut short ({len(data)} of {nbytes} bytes)")
            if f.left:
                raise TraceError(f"{name}: {member} holds {f.left} bytes more than its header says")
    except _DAMAGED as exc:  # the zip's own checks: CRC, inflating, sizes
        raise TraceError(f"{name}: {member} is damaged ({_why(exc)})") from None
    return np.frombuffer(data, dtype).reshape(shape)


def _cut(value) -> str:
    text = str(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _expect(key: str, dtype: np.dtype, shape, name: str):
    """A check that a member's header says ``dtype`` and ``shape`` (see :func:`_read_member`)."""

    def check(got_dtype: np.dtype, got_shape: tuple) -> None:
        if got_dtype != dtype or got_dtype.str != dtype.str or got_shape != tuple(shape):
            raise TraceError(
                f"{name}: array {key!r} is stored as {_cut(got_dtype.str)} "
                f"{_cut(list(got_shape))} but the manifest says {dtype.str} {list(shape)}"
            )

    return check


def _nesting(obj) -> int:
    """How deeply lists and mappings nest in ``obj`` (iteratively: no recursion)."""
    deepest, todo = 0, [(obj, 1)]
    while todo:
        item, depth = todo.pop()
        if isinstance(item, dict):
            item = list(item.values())
        if isinstance(item, list):
            deepest = max(deepest, depth)
            if depth <= _MAX_NESTING:
                todo.extend((v, depth + 1) for v in item)
    return deepest


def _manifest_of(zf: zipfile.ZipFile, name: str) -> dict:
    if "manifest.npy" not in zf.namelist():
        raise TraceError(f"{name} is not a vizmm trace (a zip archive with no manifest)")

    def text(dtype: np.dtype, shape: tuple) -> None:
        if dtype != np.uint8 or dtype.str != "|u1" or len(shape) != 1:
            raise TraceError(f"{name}: the manifest is not text")
        if not 0 <= shape[0] <= MAX_MANIFEST_BYTES:
            raise TraceError(
                f"{name}: the manifest says it holds {_cut(shape[0])} bytes, not 0 to "
                f"{MAX_MANIFEST_BYTES}"
            )

    blob = _read_member(zf, "manifest.npy", MAX_MANIFEST_BYTES + _NPY_HEADER, name, text)
    assert blob is not None  # read with its data (not header_only)
    try:
        manifest = json.loads(blob.tobytes().decode())
    except RecursionError:
        raise TraceError(f"{name}: the manifest is nested too deeply to be a trace's") from None
    except ValueError as exc:  # not UTF-8, not JSON, a number too long
        raise TraceError(f"{name}: the manifest is not valid JSON ({_short(exc)})") from None
    if _nesting(manifest) > _MAX_NESTING:
        raise TraceError(f"{name}: the manifest is nested too deeply to be a trace's")
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        what = manifest.get("format") if isinstance(manifest, dict) else type(manifest).__name__
        raise TraceError(f"{name} is not a vizmm trace (format {_cut(repr(what))})")
    version = manifest.get("version")
    if type(version) is not int or version not in READABLE_VERSIONS:
        raise TraceError(
            f"{name} has trace format version {_cut(repr(version))}; this vizmm reads versions "
            f"{', '.join(map(str, READABLE_VERSIONS))}"
        )
    return manifest


def _is_digest(value) -> bool:
    return (
        isinstance(value, str) and len(value) == 64 and all(c in "0123456789abcdef" for c in value)
    )


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
        raise TraceOverLimitError(
            f"{name} describes a trace of {human_bytes(nbytes)} in memory ({launch.label()}), "
            f"over the limit of {human_bytes(max_bytes)}; it was not read",
            nbytes=nbytes,
            limit=max_bytes,
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
                f"{name}: array {key!r} is described as {_cut(d.get('dtype'))} of shape "
                f"{_cut(d.get('shape'))} but the metadata ({LaunchShape.of(meta).label()}) "
                f"implies {dtype.str} of shape {list(shape)}"
            )
        if not _is_digest(d.get("sha256")):
            raise TraceError(f"{name}: array {key!r} has no valid checksum in the manifest")
    return meta, specs, nbytes


def _is_count(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2**63


def _stats_of(manifest: dict, name: str) -> dict | None:
    """The totals ``vizmm info`` prints (version 2; None for version 1), checked."""
    if manifest["version"] < 2:
        return None
    st = manifest.get("stats")
    if not (
        isinstance(st, dict)
        and _is_count(st.get("m_reads"))
        and _is_count(st.get("n_reads"))
        and isinstance(st.get("has_clocks"), bool)
    ):
        raise TraceError(
            f"{name}: the manifest's totals (stats) are not two counts of reads and a flag"
        )
    return st


def _stored_spec(key: str, d: dict, dtype: np.dtype, shape, meta: dict, name: str):
    """(dtype, shape, sha256 or None) of what the file stores for array ``key``."""
    enc = d.get("encoding")
    if enc is None:
        expect = (dtype, tuple(shape))
    elif enc == "seeded" and key in ("M", "N"):
        if "seed" not in meta:
            raise TraceError(f"{name}: array {key!r} is stored as its seed, but there is no seed")
        expect = (np.dtype(np.float32), (0, 0))
    elif enc == "product" and key == "P":
        expect = (np.dtype(np.uint32), (0, 0))
    elif enc == "xor-product" and key == "P":
        expect = (np.dtype(np.uint32), tuple(shape))
    elif enc == "fill" and dtype.kind in "iu":
        fill = d.get("fill")
        info = np.iinfo(dtype)
        if isinstance(fill, bool) or not isinstance(fill, int) or not info.min <= fill <= info.max:
            raise TraceError(
                f"{name}: array {key!r} has a fill value {_cut(repr(fill))} outside {dtype}"
            )
        expect = (dtype, (0,))
    else:
        raise TraceError(f"{name}: array {key!r} has an unknown encoding {_cut(repr(enc))}")
    stored = d.get("stored")
    digest = d.get("sha256") if enc is None else None
    if isinstance(stored, dict):
        if stored.get("dtype") != expect[0].str or stored.get("shape") != list(expect[1]):
            raise TraceError(
                f"{name}: the stored form of array {key!r} is described as "
                f"{_cut(stored.get('dtype'))} {_cut(stored.get('shape'))}; its encoding implies "
                f"{expect[0].str} {list(expect[1])}"
            )
        digest = stored.get("sha256")
        if not _is_digest(digest):
            raise TraceError(f"{name}: the stored form of array {key!r} has no valid checksum")
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
        stats = _stats_of(manifest, name)
        declared = manifest["arrays"]
        members = set(zf.namelist())
        missing = [key for key in specs if f"{key}.npy" not in members]
        if missing:
            raise TraceError(f"{name} lacks arrays: {', '.join(sorted(missing))}")
        # 1. what is stored: zip entries, .npy headers (all that read_info reads of
        # the arrays), then sizes and checksums, before any rebuilding
        stored: dict[str, np.ndarray | None] = {}
        for key, (dtype, shape) in specs.items():
            d = declared[key]
            sdtype, sshape, digest = _stored_spec(key, d, dtype, shape, meta, name)
            size = math.prod(sshape) * sdtype.itemsize
            check = _expect(key, sdtype, sshape, name)
            a = _read_member(zf, f"{key}.npy", size + _NPY_HEADER, name, check, manifest_only)
            if digest is not None and a is not None:
                a = _verified(key, a, digest, name)
            stored[key] = a
        if manifest_only:
            return TraceInfo(
                meta=meta,
                launch=LaunchShape.of(meta, error=TraceError),
                version=manifest["version"],
                nbytes=nbytes,
                stats=stats,
            )
    # 2. rebuild the compact encodings (M, N and P when first used)
    arrays: dict[str, Any] = {}
    seeded: dict[str, np.ndarray] = {}
    for key, (dtype, shape) in specs.items():
        d, a = declared[key], stored[key]
        assert a is not None  # not manifest_only: every array was read
        enc = d.get("encoding")
        if enc is None:
            a.setflags(write=False)
            arrays[key] = a
        elif enc == "fill":
            # one value repeated: a read-only view of it, no memory per element (the
            # 4096 x 4096 launch's read counts were 64 MiB each, 0.03 s each to fill)
            arrays[key] = np.broadcast_to(np.array(d["fill"], dtype), tuple(shape))
        else:
            arrays[key] = Deferred(
                dtype, tuple(shape), _rebuild(key, enc, a, meta, arrays, d["sha256"], name, seeded)
            )
    # 3. the records themselves (codes, blocks, load indices), and the totals info printed
    try:
        trace = Trace(meta=meta, **arrays)
    except TraceError as exc:
        raise TraceError(f"{name}: {exc}") from None
    if stats is not None and (
        stats["m_reads"] != int(trace.m_reads.sum())
        or stats["n_reads"] != int(trace.n_reads.sum())
        or stats["has_clocks"] != trace.has_clocks
    ):
        raise TraceError(
            f"{name}: the manifest's totals (stats) disagree with its arrays (the file was "
            "changed or damaged)"
        )
    return trace


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
        except TraceError:
            raise
        except Exception as exc:  # noqa: BLE001 - any failure here is a damaged file's
            raise TraceError(f"{name}: cannot rebuild array {key!r} ({_why(exc)})") from None
        return _verified(key, out, digest, name)

    return compute


def _value(a):
    return a.value() if isinstance(a, Deferred) else a


def _decode(data, name: str, max_bytes: int | None, manifest_only: bool = False):
    """:func:`_read`, with every failure of a damaged file turned into :class:`TraceError`."""
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TraceError(f"{name}: a trace is read from bytes, got {type(data).__name__}")
    try:
        return _read(bytes(data), name, max_bytes, manifest_only)
    except TraceError:
        raise
    except Exception as exc:  # noqa: BLE001 - the promise: one TraceError, in our words
        raise TraceError(
            f"{name} is not a readable vizmm trace (truncated or damaged file: {_why(exc)})"
        ) from None


def from_bytes(data: bytes, name: str = "<bytes>", max_bytes: int | None = None) -> Trace:
    """Read a trace from the bytes of a trace file (see :func:`load`).

    Parameters
    ----------
    data : bytes
        The file's bytes.
    name : str
        The file's name, for messages.
    max_bytes : int, optional
        As :func:`load`.

    Raises
    ------
    TraceError
        For anything that is not an intact trace (see the module docstring).
    """
    return _decode(data, name, max_bytes)


# Exceptions a damaged file makes the zip, zlib, JSON or NumPy readers raise,
# and what each says about the file (never the library's own words).
_WHY = (
    (RecursionError, "nested too deeply"),
    (MemoryError, "it would take more memory than there is"),
    (zlib.error, "its compressed data is corrupt"),
    (NotImplementedError, "it uses a zip feature trace files never use"),
    (struct.error, "a zip or .npy header is cut short"),
    (UnicodeError, "a name or header is not valid text"),
    (OverflowError, "a size is out of range"),
)


def _why(exc: BaseException) -> str:
    for cls, text in _WHY:
        if isinstance(exc, cls):
            return text
    if isinstance(exc, (zipfile.BadZipFile, EOFError, OSError, ValueError, KeyError)):
        return _short(exc)
    return f"unreadable data ({type(exc).__name__})"


def _short(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    if "pickle" in text:  # NumPy's advice to load pickles is never ours to give
        return "an array that is not plain numbers"
    text = text.encode("ascii", "backslashreplace").decode("ascii")
    return text if len(text) <= 160 else text[:157] + "..."


_OPEN_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_NONBLOCK", 0)  # a FIFO opened anyway (a race) never blocks
    | getattr(os, "O_CLOEXEC", 0)
    | getattr(os, "O_NOCTTY", 0)
    | getattr(os, "O_BINARY", 0)
)


def _refuse_special(mode: int, path: str) -> None:
    """Refuse anything but a regular file (:class:`TraceError` saying what it is)."""
    if stat.S_ISREG(mode):
        return
    kinds = (
        (stat.S_ISDIR, "a folder"),
        (stat.S_ISFIFO, "a FIFO (named pipe)"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
    )
    what = next((text for test, text in kinds if test(mode)), "not a regular file")
    raise TraceError(f"{path} is {what}, not a trace file")


def read_trace_bytes(path, max_file_bytes: int | None = None) -> tuple[str, bytes]:
    """The bytes of the trace file at ``path``, read within a size limit; and its name.

    The one reader of trace files. ``path`` is looked at (``os.stat``) and
    anything but a regular file is refused before it is opened (a FIFO with
    no writer, ``/dev/zero`` behind a symbolic link); the file is then
    opened non-blocking and looked at again (``os.fstat``: the file that was
    opened is the one checked); its size is checked against
    ``max_file_bytes`` before anything is read, and at most
    ``max_file_bytes + 1`` bytes are read (a file that grows meanwhile is
    still refused).

    Parameters
    ----------
    path : str or os.PathLike
    max_file_bytes : int, optional
        The largest file read (bytes); default :data:`DEFAULT_MAX_FILE_BYTES`.

    Returns
    -------
    name : str
        The file's name (its last path component), for messages.
    data : bytes

    Raises
    ------
    FileNotFoundError
        When nothing is at ``path``.
    TraceError
        When ``path`` is not a path, is a folder or any other non-regular
        file, cannot be read (permissions), or is larger than
        ``max_file_bytes``.
    """
    path = check_path(path, "the trace file")
    limit = DEFAULT_MAX_FILE_BYTES if max_file_bytes is None else int(max_file_bytes)
    name = os.path.basename(os.path.normpath(path)) or path
    try:
        _refuse_special(os.stat(path).st_mode, path)  # a FIFO is never opened
        fd = os.open(path, _OPEN_FLAGS)
    except FileNotFoundError:
        raise FileNotFoundError(errno.ENOENT, f"{path}: no such file", path) from None
    except OSError as exc:
        raise TraceError(f"cannot read {path}: {exc.strerror or exc}") from None
    try:
        st = os.fstat(fd)
        _refuse_special(st.st_mode, path)
        if st.st_size > limit:
            raise TraceError(
                f"{path} is {human_bytes(st.st_size)}, over the limit of {human_bytes(limit)} "
                "for a trace file ($VIZMM_MAX_TRACE_FILE_BYTES); it was not read"
            )
        chunks, total = [], 0
        while total <= limit:
            ask = st.st_size + 1 - total if total <= st.st_size else 2**20
            chunk = os.read(fd, min(ask, limit + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
    except OSError as exc:
        raise TraceError(f"cannot read {path}: {exc.strerror or exc}") from None
    finally:
        os.close(fd)
    if total > limit:
        raise TraceError(
            f"{path} grew past the limit of {human_bytes(limit)} for a trace file while it "
            "was read; it was not read"
        )
    return name, chunks[0] if len(chunks) == 1 else b"".join(chunks)


def load(
    path: str | os.PathLike, max_bytes: int | None = None, max_file_bytes: int | None = None
) -> Trace:
    """Read a trace file written by :meth:`Trace.save`, checking it before decoding it.

    Parameters
    ----------
    path : str or os.PathLike
    max_bytes : int, optional
        Refuse traces whose arrays would take more memory (bytes); default
        :data:`DEFAULT_MAX_BYTES`.
    max_file_bytes : int, optional
        Refuse files larger than this on disk (bytes), before reading them;
        default :data:`DEFAULT_MAX_FILE_BYTES`.

    Raises
    ------
    FileNotFoundError
        When ``path`` does not exist.
    TraceError
        For everything else that is not an intact trace, with the file's
        name and what is wrong: ``path`` is not a path, a folder, a FIFO, a
        device or a socket; a file over ``max_file_bytes``; not a zip
        archive, an encrypted or foreign zip, an unknown version, a manifest
        or metadata that disagrees with its launch, a trace over
        ``max_bytes``, a truncated, tampered or corrupt file (see the
        module docstring for the order of the checks).
    """
    name, data = read_trace_bytes(path, max_file_bytes)
    return _decode(data, name, max_bytes)


def read_info(
    path: str | os.PathLike, max_bytes: int | None = None, max_file_bytes: int | None = None
) -> TraceInfo:
    """What a trace file holds, from its manifest alone (no array is decoded).

    The file, its manifest, the arrays' zip entries and their ``.npy``
    headers get :func:`load`'s checks; the arrays' data is not read, so a
    file whose array bytes are damaged is refused when it is loaded.

    Parameters
    ----------
    path : str or os.PathLike
    max_bytes, max_file_bytes : int, optional
        As :func:`load`.

    Raises
    ------
    FileNotFoundError, TraceError
        As :func:`load`, for those checks.
    """
    name, data = read_trace_bytes(path, max_file_bytes)
    return _decode(data, name, max_bytes, manifest_only=True)


def seeded_inputs(j: int, k: int, l: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The default inputs: M (j x k) and N (k x l) of random integers 0..9, float32.

    Small integers keep every product exact in float32 and readable in a
    tooltip. ``numpy.random.default_rng(seed)`` draws M first, then N.

    Parameters
    ----------
    j, k, l : int
        The sizes: M is j x k, N is k x l.
    seed : int
        The seed of ``numpy.random.default_rng``.
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
