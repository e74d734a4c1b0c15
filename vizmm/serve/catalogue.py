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
* a trace file given to the server by whoever started it (``vizmm serve
  --traces FILE_OR_FOLDER ...``): ``file:<name>``, where the name is the
  file's name (for a folder, its path inside the folder); never a path.

What a page may open is exactly that: the presets, its own uploads, the
recordings the limits admit and the given files. A key is never taken as a
path: ``?trace=file:/etc/passwd`` names no given file and is refused with one
line that says nothing about the server's disk.

Every app of a process (the dashboard, the large view) reads traces through
the one :data:`CATALOGUE`: traces are immutable, so each is read once and
shared read-only by every session. Presets ship as package data: their
table (``vizmm/data/presets.json``: key, menu label, what to record, note)
and their traces (``vizmm/data/<key>.vizmm``, made by ``scripts/make_presets.py``);
:meth:`Catalogue.preload` reads them when the server starts. A small preset
whose file is missing is recorded in the simulator instead; a large one
says that it needs a GPU.

Recordings are admitted by :func:`vizmm.record.admit` with the server's
:data:`SERVER_LIMITS` and its one :class:`~vizmm.record.Budget`, whether
they come from the record form or a URL. What any one page can make the
server decode or record is bounded by :data:`SERVER_MAX_TRACE_BYTES` (256 MiB
of arrays in memory unless the server is started with more); uploads are also
limited to :data:`MAX_UPLOAD_BYTES` of file.

Nothing here imports Panel: the apps hold the widgets.
"""

from __future__ import annotations

import collections
import dataclasses
import hashlib
import importlib.resources
import json
import os
import re
import threading
from collections.abc import Callable

from ..record import (
    Budget,
    Estimate,
    Limits,
    RecordError,
    admit,
    normalize,
    record,
)
from ..trace import (
    Trace,
    TraceError,
    TraceOverLimitError,
    env_limit,
    from_bytes,
    human_bytes,
    load,
)

__all__ = [
    "CATALOGUE",
    "Catalogue",
    "DEFAULT",
    "GIVEN_TRACES_VARIABLE",
    "LAB_PRESETS",
    "LARGE_PRESETS",
    "MAX_UPLOAD_BYTES",
    "MAX_UPLOAD_TRACE_BYTES",
    "PRESETS",
    "Preset",
    "RecordSpec",
    "SERVER_LIMITS",
    "SERVER_MAX_TRACE_BYTES",
    "UploadError",
    "given_paths",
    "label_of",
    "parse_key",
    "preload_once",
    "warm",
]


#: The most that one page can make a server decode or record, per trace (bytes
#: of arrays in memory): 256 MiB, or ``$VIZMM_SERVER_MAX_TRACE_BYTES`` (which
#: ``vizmm serve --max-trace-mib`` sets). It bounds uploads, the files given
#: to the server and recordings asked for by a form or a URL; the shipped
#: presets, read once per process when the server starts, are not a page's.
SERVER_MAX_TRACE_BYTES = int(env_limit("VIZMM_SERVER_MAX_TRACE_BYTES", 256 * 2**20, int))
#: What a server admits for recordings (the record form and URLs alike):
#: :data:`SERVER_MAX_TRACE_BYTES` of trace, 900 s of expected simulator time
#: (``$VIZMM_SERVER_MAX_SIMULATOR_SECONDS``).
SERVER_LIMITS = Limits(
    max_bytes=SERVER_MAX_TRACE_BYTES,
    max_simulator_seconds=env_limit("VIZMM_SERVER_MAX_SIMULATOR_SECONDS", 900.0),
)
#: Largest uploaded file (bytes): 20 MiB, or ``$VIZMM_MAX_UPLOAD_BYTES``.
MAX_UPLOAD_BYTES = int(env_limit("VIZMM_MAX_UPLOAD_BYTES", 20.0 * 2**20))
#: Largest trace an upload may decode to (bytes of arrays in memory):
#: :data:`SERVER_MAX_TRACE_BYTES`, or less with ``$VIZMM_MAX_UPLOAD_TRACE_BYTES``.
MAX_UPLOAD_TRACE_BYTES = min(
    SERVER_MAX_TRACE_BYTES,
    int(env_limit("VIZMM_MAX_UPLOAD_TRACE_BYTES", SERVER_MAX_TRACE_BYTES, int)),
)
#: The environment variable through which ``vizmm serve --traces`` hands the
#: server's processes the files and folders it was given (absolute paths,
#: separated by ``os.pathsep``). Only whoever starts the server sets it.
GIVEN_TRACES_VARIABLE = "VIZMM_SERVE_TRACES"
#: At most this many trace files are offered from the given folders.
MAX_GIVEN_FILES = 500
#: The longest name of a given file a key may carry (characters).
MAX_NAME_CHARS = 255


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
    drop_barrier : tuple of int
        Barrier lab: the ``__syncthreads()`` removed (1 after the loads, 2 after
        the k loop); empty keeps both. The one name of a removed barrier from
        the record form to the frame (:func:`vizmm.record`'s argument, the
        trace's ``meta["drop_barrier"]``, :attr:`vizmm.replay.Frame.drop_barrier`).
    """

    kernel: str
    j: int
    k: int
    l: int  # noqa: E741 - the book's name
    tile_width: int
    seed: int = 0
    backend: str = "simulator"
    drop_barrier: tuple = ()

    @property
    def key(self) -> str:
        """The URL-safe key of this recording."""
        return (
            f"rec:{self.kernel}:{self.j}x{self.k}x{self.l}:T{self.tile_width}:"
            f"s{self.seed}:{self.backend}"
            + (f":d{''.join(map(str, self.drop_barrier))}" if self.drop_barrier else "")
        )

    def record_kwargs(self) -> dict:
        """Keyword arguments of :func:`vizmm.record`: the fields (``drop_barrier`` only if any)."""
        kwargs = dataclasses.asdict(self)
        drop_barrier = kwargs.pop("drop_barrier")
        return dict(kwargs, drop_barrier=tuple(drop_barrier)) if drop_barrier else kwargs

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
            + lab.get(tuple(self.drop_barrier), "")
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


def _read_presets() -> dict[str, Preset]:
    """The presets of ``vizmm/data/presets.json`` (package data), by key, in menu order."""
    text = (importlib.resources.files("vizmm") / "data" / "presets.json").read_text("utf-8")
    presets = {}
    for entry in json.loads(text)["presets"]:
        spec = entry["spec"]
        presets[entry["key"]] = Preset(
            entry["key"],
            entry["label"],
            RecordSpec(**{**spec, "drop_barrier": tuple(spec.get("drop_barrier", ()))}),
            block=tuple(entry.get("block", (0, 0))),
            note=entry.get("note", _LARGE_NOTE if entry.get("large") else ""),
            large=bool(entry.get("large", False)),
        )
    return presets


#: The presets of the trace menu: key -> :class:`Preset` (``vizmm/data/presets.json``).
PRESETS: dict[str, Preset] = _read_presets()
#: The barrier lab's presets (those that remove a barrier): key -> menu label
#: (apps/barrier_view.py shows their hazards).
LAB_PRESETS = {key: p.label for key, p in PRESETS.items() if p.spec.drop_barrier}

#: The large GPU presets: key -> menu label.
LARGE_PRESETS = {key: p.label for key, p in PRESETS.items() if p.large}
DEFAULT = "fig5-8"

_REC = re.compile(
    r"^rec:(?P<kernel>[a-z]{1,16}):(?P<j>\d{1,7})x(?P<k>\d{1,7})x(?P<l>\d{1,7}):T(?P<T>\d{1,3}):"
    r"s(?P<seed>\d{1,10}):(?P<backend>[a-z][a-z-]{0,15})(?::d(?P<drop_barrier>1|2|12))?$"
)
_UPLOAD = re.compile(r"^upload:[0-9a-f]{12}$")
_FILE = "file:"
_NAME = re.compile(rf"^[^\x00-\x1f\x7f]{{1,{MAX_NAME_CHARS}}}$")


def given_paths(environ=None) -> list[str]:
    """The files and folders given to this server (:data:`GIVEN_TRACES_VARIABLE`).

    Parameters
    ----------
    environ : mapping, optional
        Where to read the variable (``os.environ`` by default).

    Returns
    -------
    list of str
        Absolute paths, in the order given; empty when the server was given none.
    """
    text = (os.environ if environ is None else environ).get(GIVEN_TRACES_VARIABLE, "")
    return [os.path.abspath(p) for p in text.split(os.pathsep) if p]


def parse_key(key) -> Preset | RecordSpec | str:
    """What a trace key names: a :class:`Preset`, a :class:`RecordSpec` or an upload/file key.

    A ``file:`` key is only a name here: whether the server was given a file
    of that name is :meth:`Catalogue.get`'s question, and no key is ever
    taken as a path.

    Parameters
    ----------
    key : str
        A trace key: a preset's name, a recording's
        ``rec:KERNEL:JxKxL:T<tile>:s<seed>:<backend>[:d1|:d2|:d12]``, an
        uploaded file's key or ``file:NAME``.

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
            m["backend"], tuple(int(c) for c in m["drop_barrier"] or ""),
        )  # fmt: skip
    if _UPLOAD.match(key) or (key.startswith(_FILE) and _NAME.match(key[len(_FILE) :])):
        return key
    shown = key if len(key) <= 80 else key[:77] + "..."
    raise ValueError(
        f"unknown trace {shown!r}: use a preset ({', '.join(PRESETS)}), a recording "
        "'rec:KERNEL:JxKxL:T<tile>:s<seed>:<backend>[:d1|:d2|:d12]', an uploaded file "
        "or a file this server was given"
    )


def _refused_file(key: str) -> ValueError:
    """The one answer to a ``file:`` key that names no given file (nothing about the disk)."""
    shown = key if len(key) <= 80 else key[:77] + "..."
    return ValueError(
        f"unknown trace {shown!r}: this server opens only the trace files it was started "
        "with (vizmm serve --traces ...); load your own with 'Load a trace file'"
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
        Bytes of those traces' arrays kept besides the presets (1 GiB: four
        traces of :data:`SERVER_MAX_TRACE_BYTES`).
    given : list of str, optional
        Trace files and folders of ``*.vizmm`` files that pages may open by
        name (``file:<name>``); by default those of :func:`given_paths`.
    max_trace_bytes : int
        The most a file given to the server or an upload may decode to
        (bytes of arrays in memory); :data:`SERVER_MAX_TRACE_BYTES`.
    """

    def __init__(
        self,
        limits: Limits = SERVER_LIMITS,
        budget: Budget | None = None,
        max_cached: int = 24,
        max_cached_bytes: int = 2**30,
        given: list[str] | None = None,
        max_trace_bytes: int = SERVER_MAX_TRACE_BYTES,
    ):
        self.limits = limits
        self.budget = budget or Budget()
        self.max_cached = max_cached
        self.max_cached_bytes = max_cached_bytes
        self.max_trace_bytes = int(max_trace_bytes)
        self._given: list[str] = [
            os.path.abspath(os.fspath(p)) for p in (given_paths() if given is None else given)
        ]
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

        Parameters
        ----------
        key : str
            A trace key (:func:`parse_key`).
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
        """A label for the trace menu.

        Parameters
        ----------
        key : str
            A trace key (:func:`parse_key`).
        """
        try:
            what = parse_key(key)
        except ValueError:
            return key
        if isinstance(what, Preset):
            return what.label
        if isinstance(what, RecordSpec):
            return f"Recorded: {what.describe()}"
        if key.startswith(_FILE):
            return f"File: {key[len(_FILE) :]}"
        return f"Uploaded: {self._names.get(key, key)}"

    # ------------------------------------------------------- given files
    def give(self, paths) -> list[str]:
        """Let pages open these trace files and folders by name; returns the files' keys.

        Only whoever starts the server calls this (``vizmm serve --traces``,
        ``panel serve apps/large_view.py --args FILE``); no page does.

        Parameters
        ----------
        paths : iterable of str or os.PathLike
            Trace files, or folders whose ``*.vizmm`` files (at any depth, at
            most :data:`MAX_GIVEN_FILES`) are offered.

        Returns
        -------
        list of str
            The ``file:<name>`` keys of the given files and folders' files.
        """
        added = [os.path.abspath(os.fspath(p)) for p in paths]
        with self._lock:
            self._given += [p for p in added if p not in self._given]
        names = self.given()
        return [_FILE + n for n, path in names.items() if any(_under(path, a) for a in added)]

    def given(self) -> dict[str, str]:
        """The trace files pages may open: ``{name: absolute path}``, in the order given.

        A given file is named by its file name; a file of a given folder by
        its path inside that folder (``/``-separated). A name taken already
        gets `` (2)``, `` (3)``, ... A folder is looked at again on each call,
        so files added to it later are offered too. Nothing here reads a file.
        """
        with self._lock:
            roots = list(self._given)
        names: dict[str, str] = {}

        def add(name: str, path: str) -> None:
            if path in names.values() or len(names) >= MAX_GIVEN_FILES:
                return
            base, n = name[: MAX_NAME_CHARS - 8], 2
            while name in names:
                name, n = f"{base} ({n})", n + 1
            names[name] = path

        for root in roots:
            if os.path.isdir(root):
                for folder, dirs, files in os.walk(root):
                    dirs.sort()
                    for f in sorted(files):
                        if f.endswith(".vizmm") and not f.startswith("."):
                            path = os.path.join(folder, f)
                            add(os.path.relpath(path, root).replace(os.sep, "/"), path)
            else:
                add(os.path.basename(root) or root, root)
        return {n: p for n, p in names.items() if _NAME.match(n)}

    def given_keys(self) -> dict[str, str]:
        """``{menu label: key}`` of the given files (see :meth:`given`)."""
        return {f"File: {name}": _FILE + name for name in self.given()}

    def _store(self, key: str, trace: Trace) -> None:
        with self._lock:
            self._cache[key] = trace
            self._cache.move_to_end(key)
            extra = [k for k in self._cache if k not in PRESETS]
            total = sum(self._cache[k].nbytes for k in extra)
            while extra and (len(extra) > self.max_cached or total > self.max_cached_bytes):
                old = extra.pop(0)
                if old == key:
                    break
                total -= self._cache.pop(old).nbytes
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
            When a given file cannot be read (the message names it by its name).
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
                trace = self._load_given(key)
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

    def _load_given(self, key: str) -> Trace:
        """Read the given file of ``key``; every failure is said by the file's name, not path."""
        name = key[len(_FILE) :]
        path = self.given().get(name)
        if path is None:
            raise _refused_file(key)
        try:
            return load(path, max_bytes=self.max_trace_bytes)
        except TraceError as exc:  # said by the file's name: a page never sees a path
            raise TraceError(str(exc).replace(path, name) + _over_limit(exc)) from None
        except FileNotFoundError:
            raise TraceError(
                f"the trace file {name!r} given to this server is no longer there"
            ) from None
        except OSError as exc:
            raise TraceError(
                f"the trace file {name!r} given to this server cannot be read "
                f"({exc.strerror or type(exc).__name__})"
            ) from None

    def _record(self, spec: RecordSpec, progress, cancel) -> Trace:
        return self.record(**spec.record_kwargs(), progress=progress, cancel=cancel)

    def admit(
        self, j, k, l, tile_width, kernel, window=None, backend="simulator", reads=False
    ) -> Estimate:
        """What :meth:`record` would admit: the estimate, or the reason as a RecordError.

        Arithmetic on the sizes (:func:`vizmm.record.admit` with this server's
        limits): the forms call it on every change.

        Parameters
        ----------
        j, k, l : int
            The sizes: M is j x k, N is k x l, P is j x l.
        tile_width : int
            TILE_WIDTH, 1 to 32.
        kernel : str
            A kernel of :data:`vizmm.trace.KERNELS`.
        window : sequence of (int, int), optional
            The blocks (by, bx) to simulate; None for every block.
        backend : {'simulator', 'auto', 'gpu'}
            Where it would run.
        reads : bool
            Record every shared-memory read (the barrier lab), which costs memory.
        """
        launch, blocks = normalize(j, k, l, tile_width, kernel, window)
        return admit(launch, blocks, backend, self.limits, reads=reads)

    def record(self, *, progress=None, cancel=None, **kwargs) -> Trace:
        """:func:`vizmm.record` with this server's limits and budget (call it off the loop).

        Parameters
        ----------
        progress : callable, optional
            ``progress(done, total)`` as blocks finish.
        cancel : threading.Event, optional
            Set it to stop the recording before its next block.
        **kwargs
            The arguments of :func:`vizmm.record` (``j``, ``k``, ``l``, ``tile_width``,
            ``kernel``, ``window``, ``backend``, ...).

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
        if tuple(trace.meta.get("drop_barrier", ())) != tuple(s.drop_barrier):
            return None
        return trace

    def installed(self, key: str) -> bool:
        """Whether preset ``key`` ships as package data here.

        Parameters
        ----------
        key : str
            A preset's name (:data:`PRESETS`).
        """
        res = importlib.resources.files("vizmm") / "data" / f"{key}.vizmm"
        return res.is_file()

    # ------------------------------------------------------------ uploads
    def register_upload(self, data: bytes | None, name: str = "upload.vizmm") -> str:
        """Check and read an uploaded trace file and keep it; returns its key.

        Parameters
        ----------
        data : bytes or None
            The file's bytes as the browser sent them (None: nothing was sent).
        name : str
            The file's name, shown in the trace menu and in errors.

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
                "smaller trace, or have the server started with it (`vizmm serve --traces FILE`)"
            )
        data = bytes(data)
        key = "upload:" + hashlib.sha256(data).hexdigest()[:12]
        if self.cached(key) is None:
            try:
                trace = from_bytes(
                    data, name=name, max_bytes=min(MAX_UPLOAD_TRACE_BYTES, self.max_trace_bytes)
                )
            except TraceOverLimitError as exc:
                raise UploadError(str(exc) + _over_limit(exc)) from None
            warm(trace)
            self._names[key] = name
            self._store(key, trace)
        return key

    def file_key(self, path: str) -> str:
        """The key of a file given to the server (:meth:`give`), from its path.

        Parameters
        ----------
        path : str
            A path given to the server (``vizmm serve --traces``).

        Raises
        ------
        ValueError
            When the server was not given that file (said as for any key).
        """
        path = os.path.abspath(os.fspath(path))
        for name, p in self.given().items():
            if p == path:
                return _FILE + name
        raise _refused_file(_FILE + os.path.basename(path))

    # ------------------------------------------------------------ preload
    def preload(self, keys=None) -> dict[str, str]:
        """Read the shipped presets now (at server start), so no visitor waits for them.

        Returns ``{key: problem}`` for the presets that could not be read.

        Parameters
        ----------
        keys : iterable of str, optional
            Preset names; every preset by default.
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


def preload_once() -> threading.Thread | None:
    """Start reading the shipped presets in the background, once per process.

    Returns
    -------
    threading.Thread or None
        The thread reading them; None where :meth:`Catalogue.preload` has
        already run in this process (``vizmm serve`` runs it before the server
        listens), so that a first page starts no thread.
    """
    global _preload_thread
    with _PRELOAD_LOCK:
        if _preload_thread is None and not CATALOGUE._preloaded.is_set():
            _preload_thread = CATALOGUE.preload_in_background()
        return _preload_thread


def _over_limit(exc: TraceError) -> str:
    """What a page is told of a trace over the server's limit: who can raise it, and how."""
    if not isinstance(exc, TraceOverLimitError):
        return ""
    return (
        " (the most one page may open on this server; whoever starts it can raise it with "
        "vizmm serve --max-trace-mib)"
    )


def _under(path: str, root: str) -> bool:
    """Whether ``path`` is ``root`` or inside folder ``root``."""
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def _small_p(trace: Trace) -> bool:
    return trace.shape[0] * trace.shape[2] <= 1 << 20


def warm(trace: Trace) -> Trace:
    """Make a trace's deferred arrays now (M and N; P when small), in the caller's thread.

    Replaying a block reads M and N; drawing P (small traces only) reads P.

    Parameters
    ----------
    trace : Trace
        A trace read from a file, whose M, N and P may be deferred.
    """
    trace.M, trace.N  # noqa: B018 - reading them makes them
    if _small_p(trace):
        trace.P  # noqa: B018
    return trace


def is_warm(trace: Trace) -> bool:
    """Whether :func:`warm` has nothing left to make.

    Parameters
    ----------
    trace : Trace
        Any trace.
    """
    need = ("M", "N", "P") if _small_p(trace) else ("M", "N")
    return all(trace.is_made(name) for name in need)


#: The process's one catalogue, shared by every app and session.
CATALOGUE = Catalogue()


def label_of(key: str) -> str:
    """A label for the trace menu (see :meth:`Catalogue.label_of`).

    Parameters
    ----------
    key : str
        A trace key (:func:`parse_key`).
    """
    return CATALOGUE.label_of(key)
