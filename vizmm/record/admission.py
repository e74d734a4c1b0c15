"""Admission: the one place that decides whether a recording may run, from sizes alone.

Every way of asking for a recording (:func:`vizmm.record`, ``vizmm record``,
the dashboard's record form, a recording named in a URL, the large view's
window form) goes through :func:`admit` before anything is allocated or
launched:

1. the launch is validated (:class:`~vizmm.trace.LaunchShape`) and the
   window's blocks are checked against the grid;
2. the trace's size and the simulator's time are estimated by arithmetic on
   the sizes (never a list of the grid's blocks);
3. the size is compared with ``Limits.max_bytes`` and, for the simulator,
   the time with ``Limits.max_simulator_seconds``;
4. a :class:`Budget` (one per server) admits a simulator recording only
   while the simulator work already waiting or running is small enough.

NumPy only; nothing here imports numba.
"""

from __future__ import annotations

import abc
import contextlib
import dataclasses
import threading
from collections.abc import Iterator, Sequence

import numpy as np

from ..trace import DEFAULT_MAX_BYTES, LaunchShape, env_limit, human_bytes, human_duration

__all__ = [
    "DEFAULT_MAX_BYTES",
    "DEFAULT_MAX_SIMULATOR_SECONDS",
    "Budget",
    "Estimate",
    "Limits",
    "RecordError",
    "RecordingCancelled",
    "ServerBusyError",
    "TooSlowError",
    "TraceTooLargeError",
    "admit",
    "in_words",
    "estimate",
    "normalize",
]


#: Longest expected simulator time (s) by default: no limit for the Python API
#: and the command line (a person waits for their own recording), unless
#: ``$VIZMM_MAX_SIMULATOR_SECONDS`` says otherwise; servers pass their own.
DEFAULT_MAX_SIMULATOR_SECONDS = env_limit("VIZMM_MAX_SIMULATOR_SECONDS", None, float)

# Simulator cost model (seconds), fitted on a 2-core machine: a block costs
# start-up per thread plus per-phase work per thread (k loop and barriers).
_SIM_PER_THREAD = 3.0e-4  # Numba's simulator ('numba-sim'): one Python thread per CUDA thread
_SIM_PER_THREAD_PHASE = 1.5e-4
_SIM_PER_MAC = 6.0e-6
# vizmm's simulator: a block's threads as lanes, so the cost is per block and statement,
# plus a little per lane (measured on the 2-core reference machine, benchmarks/bench_simt.py)
_OWN_START = 0.05
_OWN_PER_BLOCK_PHASE = 3.0e-4
_OWN_PER_ITERATION = 4.0e-5
_OWN_PER_LANE_ITERATION = 2.0e-7
_OWN_PER_LANE_READ = 1.1e-6  # the k loop's shared loads logged too (reads, vizmm.check)


class RecordError(ValueError):
    """The recording was asked with arguments it cannot take; the message says which."""


#: How each place a person records from names the ways out of a refused
#: recording: ``"python"`` (the API's arguments), ``"cli"`` (``vizmm record``'s
#: flags), ``"page"`` (a served page's form, whose limits the server sets).
ADVICE_WORDS = {
    "python": {
        "window": "record a window of blocks (window=[(by, bx), ...])",
        "raise_bytes": "raise max_bytes",
        "raise_time": "raise max_seconds",
        "gpu": "record it on a GPU (backend='gpu')",
    },
    "cli": {
        "window": "record a window of blocks (--window BY,BX, repeatable)",
        "raise_bytes": "raise --max-bytes",
        "raise_time": "raise VIZMM_MAX_SIMULATOR_SECONDS",
        "gpu": "record it on a GPU (--backend gpu)",
    },
    "page": {
        "window": "simulate a window of blocks (the Large matrices tab's window blocks)",
        "raise_bytes": "ask whoever started the server to raise its limit "
        "(vizmm serve --max-trace-mib)",
        "raise_time": "ask whoever started the server for a longer limit",
        "gpu": "record it on a GPU (backend gpu)",
    },
}


def _check_place(place: str) -> dict[str, str]:
    if place not in ADVICE_WORDS:
        raise ValueError(f"place must be one of {', '.join(ADVICE_WORDS)}, got {place!r}")
    return ADVICE_WORDS[place]


class _OverLimit(RecordError, metaclass=abc.ABCMeta):
    """A limit a recording would exceed; its advice worded for the place that asks.

    A subclass names the attributes it is made from (``_ARGS``, in its
    ``__init__``'s order) and words its message (:meth:`_message`).
    """

    _ARGS: tuple[str, ...] = ()

    def __reduce__(self):  # a worker process passes it back pickled
        return (type(self), tuple(getattr(self, a) for a in self._ARGS))

    @abc.abstractmethod
    def _message(self, w: dict[str, str]) -> str:
        """The message, its advice in the words ``w`` of one place."""

    def words(self, place: str) -> str:
        """The message with its advice in the words of ``place`` (see :data:`ADVICE_WORDS`).

        Parameters
        ----------
        place : str
            Who asks: a key of :data:`ADVICE_WORDS` (``'python'``, ``'cli'``, ``'page'``).

        Raises
        ------
        ValueError
            For a place not in :data:`ADVICE_WORDS`.
        """
        return self._message(_check_place(place))


class TraceTooLargeError(_OverLimit):
    """The trace would exceed the size limit; nothing was launched.

    Parameters
    ----------
    nbytes : int
        The trace's estimated size (bytes of its arrays in memory).
    limit : int
        The limit it is over (bytes).

    Attributes
    ----------
    nbytes, limit : int
    """

    _ARGS = ("nbytes", "limit")

    def __init__(self, nbytes: int, limit: int):
        self.nbytes, self.limit = int(nbytes), int(limit)
        super().__init__(self.words("python"))

    def _message(self, w: dict[str, str]) -> str:
        return (
            f"this trace would take about {human_bytes(self.nbytes)} ({self.nbytes} bytes), "
            f"over the limit of {human_bytes(self.limit)} ({self.limit} bytes); "
            f"{w['window']}, use smaller matrices, or {w['raise_bytes']}"
        )


class TooSlowError(_OverLimit):
    """The simulator would take longer than the limit; nothing was launched.

    Parameters
    ----------
    seconds : float
        The simulator's expected time (s).
    limit : float
        The limit it is over (s).
    """

    _ARGS = ("seconds", "limit")

    def __init__(self, seconds: float, limit: float):
        self.seconds, self.limit = float(seconds), float(limit)
        super().__init__(self.words("python"))

    def _message(self, w: dict[str, str]) -> str:
        return (
            f"this recording would take the simulator about {human_duration(self.seconds)}, "
            f"over the limit of {human_duration(self.limit)} here; {w['window']}, a larger "
            f"TILE_WIDTH or smaller matrices, or {w['gpu']}"
        )


def in_words(exc: BaseException, place: str) -> str:
    """What ``exc`` says, its advice worded for ``place`` where it has any.

    Parameters
    ----------
    exc : BaseException
        Any error; :class:`TraceTooLargeError` and :class:`TooSlowError`
        reword their advice, others give ``str(exc)``.
    place : {'python', 'cli', 'page'}

    Returns
    -------
    str
    """
    words = getattr(exc, "words", None)
    return words(place) if callable(words) else str(exc)


class ServerBusyError(RecordError):
    """The server's simulator already has as much work as its budget allows; try later."""


class RecordingCancelled(RuntimeError):
    """The recording was cancelled (its ``cancel`` event was set) before it finished."""


@dataclasses.dataclass(frozen=True)
class Estimate:
    """What a recording will cost, known before the launch.

    Attributes
    ----------
    bytes : int
        Size of the trace's arrays in memory (bytes; the file is smaller,
        compressed).
    blocks : int
        Blocks in the grid.
    simulated_blocks : int
        Blocks the simulator would run (the window, or the whole grid).
    simulator_seconds : float
        Expected wall time in the simulator on a 2-core machine (s).
    """

    bytes: int
    blocks: int
    simulated_blocks: int
    simulator_seconds: float

    def describe(self) -> str:
        """One line for people: size and expected simulator time."""
        return (
            f"trace ~{human_bytes(self.bytes)}, {self.blocks} blocks"
            + (
                f" ({self.simulated_blocks} simulated)"
                if self.simulated_blocks != self.blocks
                else ""
            )
            + f", about {human_duration(self.simulator_seconds)} in the simulator"
        )


@dataclasses.dataclass(frozen=True)
class Limits:
    """What one caller admits.

    Attributes
    ----------
    max_bytes : int
        Largest trace (bytes of its arrays in memory).
    max_simulator_seconds : float or None
        Longest expected simulator time (s); ``None``: no limit. Recordings on
        a GPU are not limited by time.
    """

    max_bytes: int = DEFAULT_MAX_BYTES
    max_simulator_seconds: float | None = DEFAULT_MAX_SIMULATOR_SECONDS


def normalize(j, k, l, tile_width, kernel, window):
    """The validated launch shape and the window's blocks (``None``: every block).

    Works from the sizes alone: no list of the grid's blocks is built here
    (only the window's, which the caller gave).

    Parameters
    ----------
    j, k, l : int
        The sizes: M is j x k, N is k x l.
    tile_width : int
        TILE_WIDTH, 1 to 32.
    kernel : str
        A kernel of :data:`vizmm.trace.KERNELS`.
    window : sequence of (int, int) or None
        The blocks (by, bx) to record; None for every block.

    Raises
    ------
    RecordError
        For bad sizes, TILE_WIDTH, kernel or window.
    """
    launch = LaunchShape.make(kernel, j, k, l, tile_width, error=RecordError)
    gy, gx = launch.grid
    if window is None:
        return launch, None
    if isinstance(window, (str, bytes)) or not hasattr(window, "__iter__"):
        raise RecordError(f"window must be a list of (by, bx) pairs, got {window!r}")
    blocks, seen = [], set()
    for b in window:
        try:
            by, bx = (int(v) for v in b)
        except (TypeError, ValueError):
            raise RecordError(f"window entries must be (by, bx) pairs, got {b!r}") from None
        if not (0 <= by < gy and 0 <= bx < gx):
            raise RecordError(
                f"window block ({by}, {bx}) is outside the {gy} x {gx} grid of blocks"
            )
        if (by, bx) not in seen:
            seen.add((by, bx))
            blocks.append((by, bx))
    if not blocks:
        raise RecordError("window is empty: name at least one (by, bx) block")
    return launch, blocks


def _estimate(
    launch: LaunchShape,
    n_window: int | None,
    simulate_window_only: bool = True,
    reads=False,
    numba_sim: bool = False,
):
    j, k, l, T = launch.j, launch.k, launch.l, launch.tile_width
    (gy, gx), nph = launch.grid, launch.n_phases
    nd = launch.n_blocks if n_window is None else n_window
    per_thread_phase = 6 * 4 + 4 + 2 * 2 * (4 + 8)
    nbytes = (
        4 * (j * k + k * l + j * l) * 2  # M, N, P and the read counters
        + nd * T * T * (nph * per_thread_phase + 1)
        + gy * gx * 6 * 8
        + gy * gx * nph * 2 * 4
        + (gy * gx * nph * 2 * 2 * 4 if n_window is not None else 0)
        + (nd * nph * T**3 * 2 * (4 + 4) if reads else 0)
    )
    sim_blocks = nd if (n_window is not None and simulate_window_only) else gy * gx
    inner = k if launch.kernel == "naive" else nph * T
    if numba_sim:
        secs = (
            sim_blocks
            * T
            * T
            * (_SIM_PER_THREAD + _SIM_PER_THREAD_PHASE * max(nph, 1) + _SIM_PER_MAC * inner)
        )
    else:
        lane = _OWN_PER_LANE_ITERATION + (_OWN_PER_LANE_READ if reads else 0.0)
        secs = _OWN_START + sim_blocks * (
            _OWN_PER_BLOCK_PHASE * max(nph, 1) + inner * (_OWN_PER_ITERATION + T * T * lane)
        )
    return Estimate(int(nbytes), gy * gx, sim_blocks, float(secs))


def estimate(
    j: int,
    k: int,
    l: int,
    tile_width: int,
    kernel: str = "boundary",
    window: Sequence[tuple[int, int]] | None = None,
    simulate_window_only: bool = True,
    reads: bool = False,
) -> Estimate:
    """Estimate a recording's trace size and simulator time before launching it.

    Arithmetic on the sizes only: ``estimate(20000, 20000, 20000, 1)`` answers
    at once (400 million blocks, ~670 TB).

    Parameters
    ----------
    j, k, l : int
        M is j x k, N is k x l (elements).
    tile_width : int
        TILE_WIDTH, 1 to 32.
    kernel : {'naive', 'tiled', 'boundary', 'general'}
    window : sequence of (by, bx), optional
        Blocks recorded per thread; ``None`` records every block.
    simulate_window_only : bool
        Whether the simulator runs only the window (True) or the whole grid.
    reads : bool
        Barrier lab: whether every k-loop read of Mds / Nds is recorded (a tag
        and a value per thread, phase, k and array: 16 * TILE_WIDTH bytes per
        thread and phase more).

    Raises
    ------
    RecordError
        For bad sizes, tile width, kernel or window.
    """
    launch, blocks = normalize(j, k, l, tile_width, kernel, window)
    return _estimate(
        launch, None if blocks is None else len(blocks), simulate_window_only, reads=reads
    )


def admit(
    launch: LaunchShape,
    blocks: Sequence[tuple[int, int]] | None,
    backend: str,
    limits: Limits | None = None,
    reads: bool = False,
) -> Estimate:
    """Admit a recording or say why not; every check is arithmetic on the sizes.

    Parameters
    ----------
    launch : LaunchShape
    blocks : sequence of (by, bx) or None
        The window (already checked by :func:`normalize`); ``None``: every block.
    backend : {'simulator', 'gpu', 'gpu-legacy', 'auto'}
        The simulator's time is checked for 'simulator' and 'auto' (a GPU
        may be missing).
    limits : Limits, optional
        Default: :class:`Limits()` (1 GiB, no time limit unless the
        environment sets one).
    reads : bool
        Whether the barrier lab's reads are recorded too (see :func:`estimate`).

    Returns
    -------
    Estimate

    Raises
    ------
    TraceTooLargeError
        When the trace would exceed ``limits.max_bytes``.
    TooSlowError
        When the simulator would take longer than ``limits.max_simulator_seconds``.
    """
    limits = limits or Limits()
    est = _estimate(
        launch,
        None if blocks is None else len(blocks),
        reads=reads,
        numba_sim=backend == "numba-sim",
    )
    if est.bytes > limits.max_bytes:
        raise TraceTooLargeError(est.bytes, limits.max_bytes)
    cap = limits.max_simulator_seconds
    if backend not in ("gpu", "gpu-legacy") and cap is not None and est.simulator_seconds > cap:
        raise TooSlowError(est.simulator_seconds, cap)
    return est


class Budget:
    """A server's budget of simulator work, shared by all its visitors.

    The simulator runs one recording at a time per process; a budget admits
    a new one only while at most ``max_jobs`` are waiting or running and
    their expected seconds add up to at most ``max_seconds``, so that one
    visitor cannot queue hours of work ahead of the others.

    Parameters
    ----------
    max_jobs : int
        Recordings waiting or running at once.
    max_seconds : float
        Expected simulator seconds waiting or running at once.
    """

    def __init__(self, max_jobs: int = 4, max_seconds: float = 1800.0):
        self.max_jobs = int(max_jobs)
        self.max_seconds = float(max_seconds)
        self._lock = threading.Lock()
        self._jobs: dict[int, float] = {}
        self._next = 0

    @property
    def pending(self) -> tuple[int, float]:
        """``(recordings, expected seconds)`` waiting or running now."""
        with self._lock:
            return len(self._jobs), sum(self._jobs.values())

    @contextlib.contextmanager
    def reserve(self, est: Estimate) -> Iterator[None]:
        """Hold a place for one recording of ``est`` while the ``with`` block runs.

        Parameters
        ----------
        est : Estimate
            What the recording costs (:func:`admit`).

        Raises
        ------
        ServerBusyError
            When the budget is full (the message says how much is queued).
        """
        with self._lock:
            jobs, secs = len(self._jobs), sum(self._jobs.values())
            if jobs >= self.max_jobs or (jobs and secs + est.simulator_seconds > self.max_seconds):
                raise ServerBusyError(
                    f"the simulator of this server is busy ({jobs} recording(s), about "
                    f"{secs:,.0f} s of work, waiting or running); try again in a while, or "
                    "record something smaller"
                )
            ticket = self._next
            self._next += 1
            self._jobs[ticket] = est.simulator_seconds
        try:
            yield
        finally:
            with self._lock:
                self._jobs.pop(ticket, None)


def acquire(lock: threading.Lock, cancel: threading.Event | None) -> None:
    """Take ``lock``, giving up with :class:`RecordingCancelled` once ``cancel`` is set.

    Parameters
    ----------
    lock : threading.Lock
        The lock to take.
    cancel : threading.Event or None
        Set it to give up waiting.
    """
    while not lock.acquire(timeout=0.1):
        if cancel is not None and cancel.is_set():
            raise RecordingCancelled("the recording was cancelled while waiting for the simulator")
    if cancel is not None and cancel.is_set():
        lock.release()
        raise RecordingCancelled("the recording was cancelled before it started")


def _int(name: str, value) -> int:  # kept for callers that check one size
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise RecordError(f"{name} must be a positive integer (elements), got {value!r}")
    return int(value)
