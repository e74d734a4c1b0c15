"""Where the dashboard's traces come from: presets, recordings, uploads.

A trace is named by a *key* that fits in a URL, so that a bookmark brings the
same trace back:

* a preset: ``fig5-8``, ``fig5-11``, ``fig5-9-3x3``, ``general``, ``medium``;
* a recording: ``rec:general:5x3x6:T2:s0:simulator`` (kernel, ``j x k x l``,
  TILE_WIDTH, seed of the inputs, backend); recordings are deterministic for
  a seed, so a bookmark records the same trace again on a fresh server;
* an upload: ``upload:<first 12 hex digits of its SHA-256>`` (kept while the
  server runs).

Traces are immutable and shared read-only by every browser session of the
process (:func:`get_trace` caches them). Presets ship pre-recorded as package
data (``vizmm/data/<key>.vizmm``, made by ``scripts/make_presets.py``); when a
file is missing or unreadable (an older trace format) the preset is recorded
in Numba's CUDA simulator instead.
"""

from __future__ import annotations

import collections
import dataclasses
import hashlib
import importlib.resources
import re
import threading
from collections.abc import Callable

import vizmm
from vizmm.trace import Trace, TraceError, from_bytes

__all__ = [
    "Preset",
    "RecordSpec",
    "PRESETS",
    "DEFAULT",
    "get_trace",
    "cached",
    "register_upload",
    "label_of",
    "parse_key",
    "gpu_spec",
]


@dataclasses.dataclass(frozen=True)
class RecordSpec:
    """What to record: a kernel, the shapes, TILE_WIDTH, the inputs' seed, the backend.

    Attributes
    ----------
    kernel : {'boundary', 'tiled', 'general', 'naive'}
    j, k, l : int
        M is j x k, N is k x l (elements).
    tile_width : int
    seed : int
        Seed of the random integer inputs 0..9.
    backend : {'simulator', 'gpu', 'auto'}
    drop : tuple of int
        Barrier lab: the ``__syncthreads()`` removed (1 after the loads, 2 after
        the k loop); empty keeps both.
    """

    kernel: str
    j: int
    k: int
    l: int  # noqa: E741 - the book's name
    tile_width: int
    seed: int = 0
    backend: str = "simulator"
    drop: tuple = ()

    @property
    def key(self) -> str:
        """The URL-safe key of this recording."""
        return (
            f"rec:{self.kernel}:{self.j}x{self.k}x{self.l}:T{self.tile_width}:"
            f"s{self.seed}:{self.backend}"
            + (f":d{''.join(map(str, self.drop))}" if self.drop else "")
        )

    def record_kwargs(self) -> dict:
        """Keyword arguments of :func:`vizmm.record`."""
        return dict(
            j=self.j,
            k=self.k,
            l=self.l,
            tile_width=self.tile_width,
            kernel=self.kernel,
            seed=self.seed,
            backend=self.backend,
            **({"drop_barrier": tuple(self.drop)} if self.drop else {}),
        )

    def describe(self) -> str:
        """A short human label (``general · M 5×3 · N 3×6 · T=2``)."""
        shape = (
            f"{self.j}×{self.j}"
            if self.j == self.k == self.l
            else f"M {self.j}×{self.k} · N {self.k}×{self.l}"
        )
        lab = {(1,): " · no barrier 1", (2,): " · no barrier 2", (1, 2): " · no barriers"}
        return (
            f"{self.kernel} · {shape} · TILE_WIDTH {self.tile_width} · seed {self.seed}"
            + lab.get(tuple(self.drop), "")
        )


@dataclasses.dataclass(frozen=True)
class Preset:
    """A ready-made example of the book.

    Attributes
    ----------
    key : str
    label : str
        What the preset menu shows.
    spec : RecordSpec
    block : (by, bx)
        The block to open on.
    note : str
        One sentence: what to look at.
    """

    key: str
    label: str
    spec: RecordSpec
    block: tuple[int, int] = (0, 0)
    note: str = ""


PRESETS: dict[str, Preset] = {
    p.key: p
    for p in (
        Preset(
            "fig5-8",
            "Fig. 5.7/5.8 · 4×4, TILE_WIDTH 2",
            RecordSpec("boundary", 4, 4, 4, 2),
            note="The book's running example: two phases, every load inside the matrices.",
        ),
        Preset(
            "fig5-11",
            "Fig. 5.11/5.12 · 3×3, TILE_WIDTH 2, boundary checks (Fig. 5.13)",
            RecordSpec("boundary", 3, 3, 3, 2),
            note="Width 3 is not a multiple of 2: the checks zero-fill what lies outside "
            "M and N (phase 1 of block (0,0) is Fig. 5.11, phase 0 of block (1,1) "
            "is Fig. 5.12).",
        ),
        Preset(
            "fig5-9-3x3",
            "Fig. 5.9 unchecked on 3×3 · wrong elements, out of allocation",
            RecordSpec("tiled", 3, 3, 3, 2),
            note="The kernel of Fig. 5.9 without checks: M_{0,3} reads M_{1,0} (row wrap) "
            "and N_{3,0} lies past the end of N.",
        ),
        Preset(
            "general",
            "Rectangular · M 5×3 · N 3×6, TILE_WIDTH 2 (general kernel)",
            RecordSpec("general", 5, 3, 6, 2),
            note="j x k . k x l with separate boundary checks for M's rows, the shared k "
            "and N's columns.",
        ),
        Preset(
            "medium",
            "Medium · 48×48, TILE_WIDTH 16",
            RecordSpec("boundary", 48, 48, 48, 16),
            note="256 threads per block: loads fall 16-fold against the naive kernel.",
        ),
        Preset(
            "coalesced",
            "Memory: the book's kernel · 32×32, TILE_WIDTH 16 (coalesced, no bank conflict)",
            RecordSpec("boundary", 32, 32, 32, 16),
            note="Turn on Memory transactions: each warp (two rows of threads) loads two "
            "64-byte runs of M and of N (4 sectors); at each k, Mds[ty][k] is one word per "
            "row of threads and Nds[k][tx] 16 words in 16 banks.",
        ),
        Preset(
            "uncoalesced",
            "Memory: loads with the thread roles swapped · 32×32, TILE_WIDTH 16 (uncoalesced)",
            RecordSpec("uncoalesced", 32, 32, 32, 16),
            note="Turn on Memory transactions: a warp walks down columns of M and N, one "
            "sector per row: 16 sectors per request instead of 4.",
        ),
        Preset(
            "conflict",
            "Memory: Nds read as Nds[tx][k] · 32×32, TILE_WIDTH 16 (8-way bank conflict)",
            RecordSpec("conflict", 32, 32, 32, 16),
            note="Turn on Memory transactions and step to a k: Nds[tx][k] puts 8 words of a "
            "warp in bank k and 8 in bank k+16, an 8-way conflict.",
        ),
        Preset(
            "padded",
            "Memory: Nds with TILE_WIDTH + 1 columns · 32×32, TILE_WIDTH 16 (the fix)",
            RecordSpec("padded", 32, 32, 32, 16),
            note="The conflict kernel with one more column in Nds: Nds[tx][k] lands in 16 "
            "different banks, no conflict.",
        ),
    )
}
DEFAULT = "fig5-8"

_REC = re.compile(
    r"^rec:(?P<kernel>[a-z]+):(?P<j>\d+)x(?P<k>\d+)x(?P<l>\d+):T(?P<T>\d+):"
    r"s(?P<seed>\d+):(?P<backend>[a-z]+)(?::d(?P<drop>1|2|12))?$"
)
_UPLOAD = re.compile(r"^upload:[0-9a-f]{12}$")
# Shipped GPU traces: gpu-<Width>-t<TILE_WIDTH>-<kernel>, recorded with seed 2024.
_GPU = re.compile(r"^gpu-(?P<width>\d+)-t(?P<T>\d+)-(?P<kernel>[a-z]+)$")
GPU_SEED = 2024
MAX_CACHED = 24  # recordings and uploads kept (presets are always kept)

_lock = threading.Lock()
_key_locks: dict[str, threading.Lock] = collections.defaultdict(threading.Lock)
_cache: collections.OrderedDict[str, Trace] = collections.OrderedDict()
_names: dict[str, str] = {}  # upload key -> file name


def parse_key(key: str) -> Preset | RecordSpec | str:
    """What a trace key names: a :class:`Preset`, a :class:`RecordSpec` or an upload key.

    Raises
    ------
    ValueError
        For a key that is none of these (the message says what keys look like).
    """
    if key in PRESETS:
        return PRESETS[key]
    m = _REC.match(key)
    if m:
        return RecordSpec(
            m["kernel"],
            int(m["j"]),
            int(m["k"]),
            int(m["l"]),
            int(m["T"]),
            int(m["seed"]),
            m["backend"],
            tuple(int(c) for c in m["drop"] or ""),
        )
    if _UPLOAD.match(key):
        return key
    raise ValueError(
        f"unknown trace {key!r}: use a preset ({', '.join(PRESETS)}), a recording "
        "'rec:KERNEL:JxKxL:T<tile>:s<seed>:<backend>[:d1|:d2|:d12]' or an uploaded file"
    )


def gpu_spec(key: str) -> RecordSpec:
    """The recording a shipped GPU trace's key names (``gpu-4096-t32-tiled``).

    Raises
    ------
    ValueError
        For a key of another form.
    """
    m = _GPU.match(key)
    if m is None:
        raise ValueError(f"{key!r} is not a shipped GPU trace's key (gpu-WIDTH-tTILE-KERNEL)")
    w = int(m["width"])
    return RecordSpec(m["kernel"], w, w, w, int(m["T"]), seed=GPU_SEED, backend="gpu")


def label_of(key: str) -> str:
    """A label for the trace menu."""
    try:
        what = parse_key(key)
    except ValueError:
        return key
    if isinstance(what, Preset):
        return what.label
    if isinstance(what, RecordSpec):
        return f"Recorded: {what.describe()}"
    return f"Uploaded: {_names.get(key, key)}"


def cached(key: str) -> Trace | None:
    """The trace of ``key`` when it is already in memory (never records or reads)."""
    with _lock:
        return _cache.get(key)


def _store(key: str, trace: Trace) -> None:
    with _lock:
        _cache[key] = trace
        _cache.move_to_end(key)
        extra = [k for k in _cache if k not in PRESETS]
        for k in extra[:-MAX_CACHED] if len(extra) > MAX_CACHED else []:
            del _cache[k]


def _packaged(preset: Preset) -> Trace | None:
    """The preset's shipped trace file, if present, readable and of the right recording."""
    try:
        res = importlib.resources.files("vizmm") / "data" / f"{preset.key}.vizmm"
        if not res.is_file():
            return None
        trace = from_bytes(res.read_bytes(), name=f"{preset.key}.vizmm")
    except (OSError, TraceError, ValueError, KeyError):
        return None
    s = preset.spec
    if (trace.kernel, trace.shape, trace.tile_width) != (s.kernel, (s.j, s.k, s.l), s.tile_width):
        return None
    if tuple(trace.meta.get("drop_barrier", ())) != tuple(s.drop):
        return None
    return trace


def get_trace(key: str, progress: Callable[[int, int], None] | None = None) -> Trace:
    """The trace named by ``key``, from the cache, the package data or a new recording.

    Parameters
    ----------
    key : str
        See the module docstring.
    progress : callable, optional
        ``progress(done, total)`` blocks while the simulator records.

    Raises
    ------
    ValueError
        For an unknown key.
    KeyError
        For an upload this server no longer holds.
    vizmm.RecordError
        When the recording cannot be made with these arguments.
    """
    what = parse_key(key)
    with _key_locks[key]:  # one recording per key, even with many sessions asking
        trace = cached(key)
        if trace is not None:
            return trace
        if isinstance(what, str):
            raise KeyError(
                f"the uploaded trace {key!r} is no longer on this server; upload the file again"
            )
        if isinstance(what, Preset):
            trace = _packaged(what)
            spec = what.spec
        else:
            spec = what
        if trace is None:
            trace = vizmm.record(**spec.record_kwargs(), progress=progress or False, quiet=True)
        _store(key, trace)
        return trace


def register_upload(data: bytes, name: str = "upload.vizmm") -> str:
    """Read an uploaded trace file and keep it; returns its key.

    Raises
    ------
    TraceError
        When the bytes are not a valid trace file (the message says why).
    """
    if not data:
        raise TraceError(f"{name} is empty")
    trace = from_bytes(bytes(data), name=name)
    key = "upload:" + hashlib.sha256(data).hexdigest()[:12]
    _names[key] = name
    _store(key, trace)
    return key
