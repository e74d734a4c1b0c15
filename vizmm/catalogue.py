"""The served traces: presets, recordings named by a key, uploads, files; one cache per process.

A trace is named by a *key* that fits in a URL, so that a bookmark brings the
same trace back:

* a preset: ``fig5-8``, ``fig5-11``, ``fig5-9-3x3``, ``general``, ``medium``
  and the large GPU traces ``gpu-1000-t16-boundary``, ``gpu-4096-t32-tiled``;
* a recording: ``rec:general:5x3x6:T2:s0:simulator`` (kernel, ``j x k x l``,
  TILE_WIDTH, seed of the inputs, backend); recordings are deterministic for
  a seed, so a bookmark records the same trace again on a fresh server;
* an upload: ``upload:<first 12 hex digits of its SHA-256>`` (kept while the
  server runs and the cache has room);
* a file given to the server: ``file:<absolute path>``.

Every app of a process (the dashboard, the large view) reads traces through
the one :data:`CATALOGUE`: traces are immutable, so each is read once and
shared read-only by every session. Presets ship as package data
(``vizmm/data/<key>.vizmm``, made by ``scripts/make_presets.py``);
:meth:`Catalogue.preload` reads them when the server starts. A small preset
whose file is missing is recorded in the simulator instead; a large one
says that it needs a GPU.

Recordings are admitted by :func:`vizmm.record.admit` with the server's
:data:`SERVER_LIMITS` and its one :class:`~vizmm.record.Budget`, whether
they come from the record form or a URL. Uploads are limited to
:data:`MAX_UPLOAD_BYTES` of file and :data:`MAX_UPLOAD_TRACE_BYTES` of trace.

Nothing here imports Panel: the apps hold the widgets.
"""

from __future__ import annotations

import collections
import dataclasses
import hashlib
import importlib.resources
import math
import os
import re
import threading
from collections.abc import Callable

from .record import (
    DEFAULT_MAX_BYTES,
    Budget,
    Estimate,
    Limits,
    RecordError,
    admit,
    normalize,
    record,
)
from .trace import ARRAY_NAMES, Trace, TraceError, from_bytes, human_bytes, load

__all__ = [
    "CATALOGUE",
    "Catalogue",
    "DEFAULT",
    "LAB_PRESETS",
    "LARGE_PRESETS",
    "MAX_UPLOAD_BYTES",
    "MAX_UPLOAD_TRACE_BYTES",
    "PRESETS",
    "Preset",
    "RecordSpec",
    "SERVER_LIMITS",
    "UploadError",
    "label_of",
    "parse_key",
    "preload_once",
    "warm",
]


def _env(name: str, default: float) -> float:
    try:
        v = float(os.environ.get(name, "") or default)
    except ValueError:
        return default
    return v if v > 0 else default


#: What a server admits for recordings (the record form and URLs alike):
#: 1 GiB of trace, 900 s of expected simulator time
#: (``$VIZMM_SERVER_MAX_SIMULATOR_SECONDS``).
SERVER_LIMITS = Limits(
    max_bytes=DEFAULT_MAX_BYTES,
    max_simulator_seconds=_env("VIZMM_SERVER_MAX_SIMULATOR_SECONDS", 900.0),
)
#: Largest uploaded file (bytes): 20 MiB, or ``$VIZMM_MAX_UPLOAD_BYTES``.
MAX_UPLOAD_BYTES = int(_env("VIZMM_MAX_UPLOAD_BYTES", 20 * 2**20))
#: Largest trace an upload may decode to (bytes of arrays in memory): 512 MiB.
MAX_UPLOAD_TRACE_BYTES = int(_env("VIZMM_MAX_UPLOAD_TRACE_BYTES", 512 * 2**20))


class UploadError(TraceError):
    """An uploaded file was refused (empty, too large, not a trace); the message says why."""


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
        """A short human label (``general · M 5×3 · N 3×6 · TILE_WIDTH 2 · seed 0``)."""
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
    large : bool
        A launch recorded in aggregated mode on a GPU: it opens on the large
        view, and is never recorded again in the simulator.
    """

    key: str
    label: str
    spec: RecordSpec
    block: tuple[int, int] = (0, 0)
    note: str = ""
    large: bool = False


_LARGE_NOTE = (
    "Recorded on an NVIDIA H200 in aggregated mode: the Large matrices view shows the whole "
    "launch; a few blocks replay thread by thread."
)

PRESETS: dict[str, Preset] = {
    p.key: p
    for p in (
        Preset(
            "fig5-8",
            "Fig. 5.7/5.8 · 4×4, TILE_WIDTH 2 (Fig. 5.9 kernel)",
            RecordSpec("tiled", 4, 4, 4, 2),
            note="The book's running example: the tiled kernel of Fig. 5.9, two phases, every "
            "load inside the matrices.",
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
        Preset(
            "gpu-1000-t16-boundary",
            "Large: 1000×1000 T=16 (GPU)",
            RecordSpec("boundary", 1000, 1000, 1000, 16, seed=2024, backend="gpu"),
            note=_LARGE_NOTE,
            large=True,
        ),
        Preset(
            "gpu-4096-t32-tiled",
            "Large: 4096×4096 T=32 (GPU)",
            RecordSpec("tiled", 4096, 4096, 4096, 32, seed=2024, backend="gpu"),
            note=_LARGE_NOTE,
            large=True,
        ),
    )
}
# The barrier lab's presets (apps/barrier_view.py shows their hazards).
_LAB = {
    "lab-4x4-drop1": (
        "Barrier lab · 4×4, TILE_WIDTH 2, no barrier 1 (after the loads)",
        ("tiled", 4, 2, (1,), "simulator"),
        "Without the first __syncthreads() a thread may read Mds / Nds before the others "
        "have written them (read-after-write). Step to the k loop: the marked threads read "
        "an old or never-written slot.",
    ),
    "lab-4x4-drop2": (
        "Barrier lab · 4×4, TILE_WIDTH 2, no barrier 2 (after the k loop)",
        ("tiled", 4, 2, (2,), "simulator"),
        "Without the second __syncthreads() a thread may load the next tile over a slot "
        "others still read (write-after-read).",
    ),
    "lab-4x4-drop12": (
        "Barrier lab · 4×4, TILE_WIDTH 2, no barriers",
        ("tiled", 4, 2, (1, 2), "simulator"),
        "Both barriers removed: reads too early and writes too early.",
    ),
    "gpu-barrier-tiled-4-t2-drop1": (
        "Barrier lab on a GPU · 4×4, no barrier 1 (passed by luck)",
        ("tiled", 4, 2, (1,), "gpu"),
        "Recorded on an NVIDIA H200: a 2×2 block is one warp, its threads ran together, "
        "and every read found the right element. The hazards are there all the same.",
    ),
    "gpu-barrier-tiled-32-t16-drop12": (
        "Barrier lab on a GPU · 32×32, TILE_WIDTH 16, no barriers (race rife)",
        ("tiled", 32, 16, (1, 2), "gpu"),
        "Recorded on an NVIDIA H200: 8 warps per block race; 154 of 1,024 P elements "
        "came out wrong.",
    ),
    "gpu-barrier-tiled-64-t16-drop1": (
        "Barrier lab on a GPU · 64×64, TILE_WIDTH 16, no barrier 1",
        ("tiled", 64, 16, (1,), "gpu"),
        "Recorded on an NVIDIA H200: 72 of 4,096 P elements came out wrong.",
    ),
}
LAB_SEED = {"simulator": 0, "gpu": 5}
for _key, (_label, (_kernel, _w, _t, _drop, _backend), _note) in _LAB.items():
    PRESETS[_key] = Preset(
        _key,
        _label,
        RecordSpec(_kernel, _w, _w, _w, _t, seed=LAB_SEED[_backend], backend=_backend, drop=_drop),
        note=_note,
    )
#: The barrier lab's presets: key -> menu label.
LAB_PRESETS = {key: _LAB[key][0] for key in _LAB}

#: The large GPU presets: key -> menu label.
LARGE_PRESETS = {key: p.label for key, p in PRESETS.items() if p.large}
DEFAULT = "fig5-8"

_REC = re.compile(
    r"^rec:(?P<kernel>[a-z]{1,16}):(?P<j>\d{1,7})x(?P<k>\d{1,7})x(?P<l>\d{1,7}):T(?P<T>\d{1,3}):"
    r"s(?P<seed>\d{1,10}):(?P<backend>[a-z]{1,16})(?::d(?P<drop>1|2|12))?$"
)
_UPLOAD = re.compile(r"^upload:[0-9a-f]{12}$")
_FILE = "file:"


def parse_key(key) -> Preset | RecordSpec | str:
    """What a trace key names: a :class:`Preset`, a :class:`RecordSpec` or an upload/file key.

    Raises
    ------
    ValueError
        For a key that is none of these (the message says what keys look like).
    """
    if not isinstance(key, str):
        raise ValueError(f"a trace key is text, got {type(key).__name__}")
    if key in PRESETS:
        return PRESETS[key]
    m = _REC.match(key)
    if m:
        return RecordSpec(
            m["kernel"], int(m["j"]), int(m["k"]), int(m["l"]), int(m["T"]), int(m["seed"]),
            m["backend"], tuple(int(c) for c in m["drop"] or ""),
        )  # fmt: skip
    if _UPLOAD.match(key) or key.startswith(_FILE):
        return key
    shown = key if len(key) <= 80 else key[:77] + "..."
    raise ValueError(
        f"unknown trace {shown!r}: use a preset ({', '.join(PRESETS)}), a recording "
        "'rec:KERNEL:JxKxL:T<tile>:s<seed>:<backend>[:d1|:d2|:d12]' or an uploaded file"
    )


class Catalogue:
    """One process's traces: read or recorded once, kept in one bounded cache, shared read-only.

    Parameters
    ----------
    limits : Limits
        What a recording may cost (:data:`SERVER_LIMITS` by default).
    budget : Budget, optional
        The server's simulator budget (one per catalogue).
    max_cached : int
        Recordings, uploads and files kept besides the presets.
    max_cached_bytes : int
        Bytes of those traces' arrays kept besides the presets.
    """

    def __init__(
        self,
        limits: Limits = SERVER_LIMITS,
        budget: Budget | None = None,
        max_cached: int = 24,
        max_cached_bytes: int = 2 * 2**30,
    ):
        self.limits = limits
        self.budget = budget or Budget()
        self.max_cached = max_cached
        self.max_cached_bytes = max_cached_bytes
        self._lock = threading.Lock()
        self._key_locks: dict[str, threading.Lock] = collections.defaultdict(threading.Lock)
        self._cache: collections.OrderedDict[str, Trace] = collections.OrderedDict()
        self._names: dict[str, str] = {}
        self._preloaded = threading.Event()

    # ------------------------------------------------------------- lookup
    def cached(self, key: str) -> Trace | None:
        """The trace of ``key`` when it is in memory and ready to replay (never reads or records).

        A trace read by :meth:`preload` whose M and N are not made yet is not
        returned: :meth:`get` (off the event loop) makes them first.
        """
        with self._lock:
            trace = self._cache.get(key)
            if trace is None or not is_warm(trace):
                return None
            self._cache.move_to_end(key)
            return trace

    def _peek(self, key: str) -> Trace | None:
        with self._lock:
            return self._cache.get(key)

    def label_of(self, key: str) -> str:
        """A label for the trace menu."""
        try:
            what = parse_key(key)
        except ValueError:
            return key
        if isinstance(what, Preset):
            return what.label
        if isinstance(what, RecordSpec):
            return f"Recorded: {what.describe()}"
        if key.startswith(_FILE):
            return f"File: {os.path.basename(key[len(_FILE) :])}"
        return f"Uploaded: {self._names.get(key, key)}"

    def _store(self, key: str, trace: Trace) -> None:
        with self._lock:
            self._cache[key] = trace
            self._cache.move_to_end(key)
            extra = [k for k in self._cache if k not in PRESETS]
            total = sum(_nbytes(self._cache[k]) for k in extra)
            while extra and (len(extra) > self.max_cached or total > self.max_cached_bytes):
                old = extra.pop(0)
                if old == key:
                    break
                total -= _nbytes(self._cache.pop(old))
                self._names.pop(old, None)

    def get(
        self,
        key: str,
        progress: Callable[[int, int], None] | None = None,
        cancel: threading.Event | None = None,
        warm_up: bool = True,
    ) -> Trace:
        """The trace named by ``key``: from the cache, the package data, a file or a recording.

        Call it off the server's event loop: reading a large trace or
        recording takes seconds. M and N (and P for small traces) are made
        here, so that no later step of a session has to.

        Parameters
        ----------
        key : str
            See the module docstring.
        progress : callable, optional
            ``progress(done, total)`` blocks while the simulator records.
        cancel : threading.Event, optional
            Set it to stop a recording nobody waits for any more.
        warm_up : bool
            Make M and N (and a small P) now; :meth:`preload` reads only.

        Raises
        ------
        ValueError
            For an unknown key.
        KeyError
            For an upload this server no longer holds.
        vizmm.RecordError
            When the recording is refused (too large, too slow, the server
            busy) or cannot be made with these arguments.
        vizmm.record.RecordingCancelled
            When ``cancel`` was set.
        TraceError, OSError
            When a file cannot be read.
        """
        what = parse_key(key)
        trace = self.cached(key)
        if trace is not None:
            return trace
        with self._key_locks[key]:  # one reading or recording per key
            trace = self._peek(key)
            if trace is not None:  # read by preload: make M and N now, here
                return warm(trace) if warm_up else trace
            if isinstance(what, str) and not what.startswith(_FILE):
                raise KeyError(
                    f"the uploaded trace {key!r} is no longer on this server; upload the file again"
                )
            if isinstance(what, str):
                trace = load(what[len(_FILE) :])
            elif isinstance(what, Preset):
                trace = self._packaged(what)
                if trace is None and what.large:
                    raise FileNotFoundError(
                        f"the trace {what.key}.vizmm is not installed with vizmm (vizmm/data); "
                        "record one on a GPU with `vizmm record --window ...`"
                    )
                if trace is None:
                    trace = self._record(what.spec, progress, cancel)
            else:
                trace = self._record(what, progress, cancel)
            if warm_up:
                warm(trace)
            self._store(key, trace)
            return trace

    def _record(self, spec: RecordSpec, progress, cancel) -> Trace:
        return self.record(**spec.record_kwargs(), progress=progress, cancel=cancel)

    def admit(
        self, j, k, l, tile_width, kernel, window=None, backend="simulator", reads=False
    ) -> Estimate:
        """What :meth:`record` would admit: the estimate, or the reason as a RecordError.

        Arithmetic on the sizes (:func:`vizmm.record.admit` with this server's
        limits): the forms call it on every change.
        """
        launch, blocks = normalize(j, k, l, tile_width, kernel, window)
        return admit(launch, blocks, backend, self.limits, reads=reads)

    def record(self, *, progress=None, cancel=None, **kwargs) -> Trace:
        """:func:`vizmm.record` with this server's limits and budget (call it off the loop).

        Raises
        ------
        vizmm.RecordError
            Too large, too slow, the server busy, or bad arguments.
        vizmm.record.RecordingCancelled
            When ``cancel`` was set.
        """
        kwargs.setdefault("quiet", True)
        return record(
            **kwargs,
            progress=progress or False,
            max_bytes=self.limits.max_bytes,
            max_seconds=self.limits.max_simulator_seconds,
            budget=self.budget,
            cancel=cancel,
        )

    @staticmethod
    def _packaged(preset: Preset) -> Trace | None:
        """The preset's shipped trace, if installed, readable and of the right launch."""
        try:
            res = importlib.resources.files("vizmm") / "data" / f"{preset.key}.vizmm"
            if not res.is_file():
                return None
            trace = from_bytes(res.read_bytes(), name=f"{preset.key}.vizmm")
        except (OSError, TraceError):
            return None
        s = preset.spec
        if (trace.kernel, trace.shape, trace.tile_width) != (
            s.kernel,
            (s.j, s.k, s.l),
            s.tile_width,
        ):
            return None
        if tuple(trace.meta.get("drop_barrier", ())) != tuple(s.drop):
            return None
        return trace

    def installed(self, key: str) -> bool:
        """Whether preset ``key`` ships as package data here."""
        res = importlib.resources.files("vizmm") / "data" / f"{key}.vizmm"
        return res.is_file()

    # ------------------------------------------------------------ uploads
    def register_upload(self, data: bytes | None, name: str = "upload.vizmm") -> str:
        """Check and read an uploaded trace file and keep it; returns its key.

        Raises
        ------
        UploadError
            When the upload is empty, over :data:`MAX_UPLOAD_BYTES`, or decodes
            to more than :data:`MAX_UPLOAD_TRACE_BYTES`.
        TraceError
            When the bytes are not a valid trace file (the message says why).
        """
        name = os.path.basename(str(name or "upload.vizmm"))[:120] or "upload.vizmm"
        if not data:
            raise UploadError(f"{name} is empty: choose a .vizmm file saved by vizmm")
        if len(data) > MAX_UPLOAD_BYTES:
            raise UploadError(
                f"{name} is {human_bytes(len(data))}, over this server's upload limit of "
                f"{human_bytes(MAX_UPLOAD_BYTES)}; record a window of blocks to make a "
                "smaller trace, or open it with `panel serve apps/large_view.py --args FILE`"
            )
        data = bytes(data)
        key = "upload:" + hashlib.sha256(data).hexdigest()[:12]
        if self.cached(key) is None:
            trace = from_bytes(data, name=name, max_bytes=MAX_UPLOAD_TRACE_BYTES)
            warm(trace)
            self._names[key] = name
            self._store(key, trace)
        return key

    def file_key(self, path: str) -> str:
        """The key of a trace file given to the server (``file:<absolute path>``)."""
        return _FILE + os.path.abspath(path)

    # ------------------------------------------------------------ preload
    def preload(self, keys=None) -> dict[str, str]:
        """Read the shipped presets now (at server start), so no visitor waits for them.

        Returns ``{key: problem}`` for the presets that could not be read.
        """
        problems = {}
        for key in keys or PRESETS:
            if not self.installed(key):
                continue
            try:
                self.get(key, warm_up=not PRESETS[key].large)  # small ones: ready at once
            except (OSError, TraceError, RecordError, ValueError, KeyError) as exc:
                problems[key] = str(exc)
        self._preloaded.set()
        return problems

    def preload_in_background(self) -> threading.Thread:
        """:meth:`preload` in a daemon thread (the first session of a plain ``panel serve``)."""
        t = threading.Thread(target=self.preload, name="vizmm-preload", daemon=True)
        t.start()
        return t


_PRELOAD_LOCK = threading.Lock()
_preload_thread: threading.Thread | None = None


def preload_once() -> threading.Thread:
    """Start reading the shipped presets in the background, once per process."""
    global _preload_thread
    with _PRELOAD_LOCK:
        if _preload_thread is None:
            _preload_thread = CATALOGUE.preload_in_background()
        return _preload_thread


def _small_p(trace: Trace) -> bool:
    return trace.shape[0] * trace.shape[2] <= 1 << 20


def warm(trace: Trace) -> Trace:
    """Make a trace's deferred arrays now (M and N; P when small), in the caller's thread.

    Replaying a block reads M and N; drawing P (small traces only) reads P.
    """
    trace.M, trace.N  # noqa: B018 - reading them makes them
    if _small_p(trace):
        trace.P  # noqa: B018
    return trace


def is_warm(trace: Trace) -> bool:
    """Whether :func:`warm` has nothing left to make."""
    need = ("M", "N", "P") if _small_p(trace) else ("M", "N")
    return all(name in trace.__dict__ for name in need)


def _nbytes(trace: Trace) -> int:
    """Bytes of a trace's arrays (made or not yet made)."""
    total = 0
    for name in ARRAY_NAMES:
        a = trace.__dict__.get(name)
        if a is None:
            d = trace._deferred[name]
            total += d.dtype.itemsize * math.prod(d.shape)
        else:
            total += a.nbytes
    return total


#: The process's one catalogue, shared by every app and session.
CATALOGUE = Catalogue()


def label_of(key: str) -> str:
    """A label for the trace menu (see :meth:`Catalogue.label_of`)."""
    return CATALOGUE.label_of(key)
