"""Recording: launch an instrumented kernel on a GPU or in Numba's CUDA simulator.

This is the only module of vizmm that imports numba. Numba fixes at its first
import whether ``numba.cuda`` is the real driver or the simulator
(``NUMBA_ENABLE_CUDASIM``), and the kernels fix their compiler when first
imported (numba-cuda-mlir or numba-cuda: :mod:`.targets`); when a recording
asks for another target than the one this process is bound to, it runs in a
fresh Python process and the trace comes back as a file.

The simulator runs one block at a time with one Python thread per CUDA
thread; vizmm drives it block by block itself, which gives a progress bar by
block and lets it simulate only a window of blocks (blocks of these kernels
are independent, so their records are exact). Only one simulated kernel runs
per process at a time: recordings are serialized by a lock.

What may be recorded is decided in :mod:`.admission`, from the sizes alone.
"""

from __future__ import annotations

import contextlib
import functools
import os
import select
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Mapping, Sequence

import numpy as np

from ..trace import BARRIER_KERNELS, Trace, from_bytes, seeded_inputs
from . import launcher, targets
from .admission import (
    Budget,
    Estimate,
    Limits,
    RecordError,
    RecordingCancelled,
    _int,
    acquire,
    admit,
    estimate,
    normalize,
)
from .targets import BACKENDS, GPUUnavailableError

# The admission's names (estimate, Limits, the errors ...) are vizmm.record's.
__all__ = ["BACKENDS", "GPUUnavailableError", "gpu_available", "record", "resolve_backend"]

#: A progress bar is shown (on a terminal) when the simulator is expected to take longer (s).
PROGRESS_AFTER_S = 1.0

_LOCK = threading.Lock()
#: How a worker marks a user kernel's error line (vizmm.record.worker).
_INSTRUMENT_ERROR = "InstrumentError: "


def _inputs(j, k, l, M, N, seed):
    M0, N0 = seeded_inputs(j, k, l, seed)
    return (M0 if M is None else M), (N0 if N is None else N)


def _as_matrix(name, a):
    try:
        arr = np.asarray(a)
    except Exception as exc:  # noqa: BLE001 - anything that is not array-like
        raise RecordError(f"{name} must be a 2-D array of numbers: {exc}") from None
    if arr.ndim != 2 or arr.size == 0:
        raise RecordError(f"{name} must be a non-empty 2-D array, got shape {arr.shape}")
    if arr.dtype.kind not in "biuf":
        raise RecordError(f"{name} must hold real numbers, got dtype {arr.dtype}")
    with np.errstate(over="ignore", invalid="ignore"):
        out = np.ascontiguousarray(arr, dtype=np.float32)
    if not np.isfinite(out).all():
        raise RecordError(f"{name} holds NaN or infinite values (or values too large for float32)")
    return out


@functools.cache
def _software() -> targets.Software:
    return targets.Software.here()


def resolve_backend(backend: str = "auto") -> targets.Choice:
    """The backend and compiler a recording asked for with ``backend`` gets here.

    'gpu' is numba-cuda-mlir when installed, else numba-cuda; 'gpu-legacy'
    numba-cuda; 'auto' the GPU when one is usable, else the simulator (the
    choice's ``reason`` says why). Nothing is compiled: the versions come
    from the installed distributions, the driver is asked through ctypes
    (:mod:`.targets`).

    Parameters
    ----------
    backend : {'auto', 'gpu', 'gpu-legacy', 'simulator'}
        The backend asked for.

    Raises
    ------
    GPUUnavailableError
        For 'gpu' or 'gpu-legacy' where that target cannot record, with the
        one line that names the fix (NumPy 2.5 with numba-cuda, no driver,
        a driver older than the toolkit ...).
    RecordError
        For an unknown backend.
    """
    if backend not in BACKENDS:
        raise RecordError(f"unknown backend {backend!r}; choose one of {', '.join(BACKENDS)}")
    software = _software()
    if backend == "simulator":
        return targets.choose(backend, software, targets.Driver())
    # The driver is asked even where the versions already rule a compiler out: a
    # machine without a GPU is told that, not how to fix NumPy (targets.problem).
    return targets.choose(backend, software, targets.driver_here())


def gpu_available(backend: str = "gpu") -> bool:
    """True when ``backend`` ('gpu' or 'gpu-legacy') can record here.

    A driver and a GPU are found and the target's versions are not a
    combination known to break; nothing is compiled and numba is not
    imported (the driver is asked through ctypes, in a fresh process when
    this one runs numba's simulator).

    Parameters
    ----------
    backend : {'gpu', 'gpu-legacy'}
        The GPU backend asked about.
    """
    try:
        return resolve_backend(backend).backend == backend
    except GPUUnavailableError:
        return False


def _bind_early(backend: str) -> None:
    """Let the kernels compile for the target ``backend`` gets, when nothing has chosen yet.

    The checks before a recording import ``vizmm_kernels`` (the barrier
    lab's, Fig. 5.14's host code), which binds the process to a target: left
    alone, the default GPU compiler, so that a simulator recording would then
    need a worker process (about 1 s more). Does nothing once numba or the
    kernels are imported, when the environment names another target
    (:func:`.targets.early_environment`), or when the backend cannot record
    here (the recording says why later).
    """
    if targets.process_target() is not None or "numba" in sys.modules:
        return
    try:
        choice = resolve_backend(backend)
    except GPUUnavailableError:
        return
    os.environ.update(targets.early_environment(choice.target))


def _on_terminal() -> bool:
    """Whether a progress bar has somewhere to be seen: stderr a terminal, or a notebook."""
    try:
        tty = sys.stderr.isatty()
    except (AttributeError, ValueError):  # replaced, or closed
        tty = False
    return tty or "ipykernel" in sys.modules


def _show(progress, backend: str, est: Estimate, quiet: bool):
    """What to report progress to: ``progress`` when given, else a bar where one is seen."""
    if progress is not None:
        return progress
    return (
        not quiet
        and backend in targets.SIMULATOR_BACKENDS
        and est.simulator_seconds > PROGRESS_AFTER_S
        and _on_terminal()
    )


def _numba_mode() -> str | None:
    """'simulator' or 'gpu' when numba.cuda is already imported here, else None."""
    if "numba.cuda" not in sys.modules and "numba" not in sys.modules:
        return None
    from numba import config

    # numba sets its config attributes at run time, from the environment
    return "simulator" if config.ENABLE_CUDASIM else "gpu"  # type: ignore[attr-defined, unused-ignore]


def record(
    j: int | None = None,
    k: int | None = None,
    l: int | None = None,
    *,
    tile_width: int | None = 2,
    kernel: str | Callable = "boundary",
    backend: str = "auto",
    device: str = "A100",
    M=None,
    N=None,
    width: int | None = None,
    seed: int = 0,
    window: Sequence[tuple[int, int]] | None = None,
    max_bytes: int | None = None,
    progress: bool | Callable[[int, int], None] | None = None,
    quiet: bool = False,
    max_seconds: float | None = None,
    budget: Budget | None = None,
    cancel: threading.Event | None = None,
    drop_barrier: int | Sequence[int] | None = None,
    reads: bool | None = None,
    on_estimate: Callable[[Estimate], object] | None = None,
    instrumenter: bool = False,
    constants: Mapping[str, int | float | bool] | None = None,
    schedule: str = "threads",
) -> Trace:
    """Run an instrumented kernel once and return what it recorded.

    Parameters
    ----------
    j, k, l : int, optional
        M is j x k, N is k x l, P is j x l (elements). Taken from ``M`` and
        ``N`` when those are given, or from ``width`` for square matrices.
    tile_width : int or None
        TILE_WIDTH, 1 to 32 (blocks of TILE_WIDTH x TILE_WIDTH threads).
        None only with ``kernel='dynamic'``: the host chooses it from the
        device's properties as Section 5.6 describes
        (:func:`vizmm.analysis.occupancy.choose_tile_width`): the real GPU's
        on the GPU, the preset ``device``'s in the simulator.
    kernel : {'boundary', 'tiled', 'general', 'naive', 'dynamic'}, a kernel or ``"file.py:name"``
        A ``@cuda.jit`` kernel of your own (the function, its source text, or
        ``"file.py:name"``) is recorded through the instrumenter
        (:mod:`vizmm.record.instrument`): it takes ``(M, N, P, Width)``
        (square, ``j = k = l``) or ``(M, N, P, j, k, l)``, with M, N and P
        flat row-major (``M[r * k + c]``) or 2-D (``M[r, c]``) as its
        subscripts say, one thread per P element in blocks of TILE_WIDTH x
        TILE_WIDTH; a kernel with other arguments is run with
        :func:`vizmm.record.instrument.run`, which takes any arguments by
        name. A file is read by :mod:`vizmm.record.frontend` (never run as
        a module): what records is code generated from its checked tree, in
        a worker process under CPU and memory limits; a function runs here.
        The trace's ``meta['user_kernel']`` names it
        (:attr:`vizmm.trace.Trace.user_kernel`; a book kernel's trace has no such key).
        'tiled' is Fig. 5.9 (no boundary checks: on a Width that is not a
        multiple of TILE_WIDTH its wrong-element and out-of-allocation
        accesses are recorded), 'boundary' Fig. 5.13, 'general' the
        j x k . k x l form, 'naive' Fig. 3.11, 'dynamic' Fig. 5.14 (Fig. 5.13
        with its Mds and Nds in one dynamically sized shared array).
    backend : {'auto', 'simulator', 'gpu', 'gpu-legacy'}
        'gpu' compiles with numba-cuda-mlir when it is installed, else with
        numba-cuda; 'gpu-legacy' with numba-cuda; 'simulator' runs Numba's
        CUDA simulator. 'auto' takes the GPU when one is usable, else the
        simulator, and says which and why on stderr (unless ``quiet``). See
        :func:`resolve_backend`; the trace's ``meta['target']`` names the
        compiler and its version.
    device : {'A100', 'H100', 'H200'}
        The device preset whose properties choose TILE_WIDTH for the
        'dynamic' kernel in the simulator (``tile_width=None``).
    M, N : array_like, optional
        Inputs (cast to float32). By default seeded random integers 0..9,
        exact in float32.
    width : int, optional
        Shorthand for ``j = k = l = width``.
    seed : int
        Seed of the default inputs.
    window : sequence of (by, bx), optional
        Record only these blocks per thread (aggregated mode: every block
        still records its SM, times, barrier spread and the read counts). In
        the simulator only these blocks are run.
    max_bytes : int, optional
        Refuse traces larger than this (default ``DEFAULT_MAX_BYTES``,
        1 GiB, or ``$VIZMM_MAX_TRACE_BYTES``).
    progress : bool or callable, optional
        ``True`` shows a progress bar (tqdm), ``False`` none, a callable is
        called with ``(done, total)`` blocks as they finish, in this
        process (a recording made in a worker process reports through it
        too); by default a bar appears when the simulator is expected to
        take more than :data:`PROGRESS_AFTER_S` (1 s) and stderr is a
        terminal (or a notebook's).
    quiet : bool
        Say nothing on stderr.
    max_seconds : float, optional
        Refuse simulator recordings expected to take longer (s); default
        ``DEFAULT_MAX_SIMULATOR_SECONDS`` (no limit unless
        ``$VIZMM_MAX_SIMULATOR_SECONDS`` is set).
    budget : Budget, optional
        A server's shared budget of simulator work (see
        :class:`~vizmm.record.admission.Budget`).
    cancel : threading.Event, optional
        Set it to stop the recording: a simulator recording stops before its
        next block (or while waiting for the simulator) and raises
        :class:`RecordingCancelled`.
    drop_barrier : {None, 1, 2, (1, 2)}
        Barrier lab ('tiled' and 'boundary'): remove the ``__syncthreads()``
        after the loads (1), the one after the k loop (2), or both; ``None``
        keeps both (the book's kernel). See ``vizmm.hazards(trace)``.
    reads : bool, optional
        Record every k-loop read of Mds / Nds (the element's tag and the
        value: ``Trace.shared_reads`` / ``read_values``). By default on when
        a barrier is removed. In the simulator such recordings run the
        threads of a block in turns (see the README's barrier lab), so they
        are the same on every run. For a kernel of your own, every load of
        a shared array is logged with the tag of its slot (what
        :func:`vizmm.check` reads).
    on_estimate : callable, optional
        Called with the :class:`Estimate` once the arguments are checked,
        before the limits are (the command line prints it first).
    instrumenter : bool
        Kept for old callers; every kernel is recorded through the
        instrumenter.
    constants : mapping of str to number, optional
        For a user's kernel: module constants to override (a grading case
        sets the file's ``TILE_WIDTH``); the file is read, never run.
    schedule : {'threads', 'warps'}
        vizmm's simulator: which thread runs when between barriers, what a
        racing read finds (:mod:`vizmm.record.simt`). ``'threads'``: each
        thread alone to its next barrier, in ``threadIdx`` order;
        ``'warps'``: a warp's 32 lanes in lockstep, warps in turn. A
        race-free kernel records the same either way.

    Returns
    -------
    Trace

    Raises
    ------
    RecordError
        For bad sizes, shapes, tile width, kernel, backend, seed, window or
        drop_barrier.
    TraceTooLargeError
        When the estimated trace exceeds ``max_bytes`` (nothing is launched).
    TooSlowError
        When the simulator would take longer than ``max_seconds``.
    ServerBusyError
        When ``budget`` is full.
    RecordingCancelled
        When ``cancel`` was set before the recording finished.
    GPUUnavailableError
        When a GPU backend was asked for and cannot record here: one line
        naming the fix (see :func:`resolve_backend`), found before anything
        is compiled.

    Notes
    -----
    Every limit is checked by :func:`~vizmm.record.admission.admit` from the
    sizes alone, before the inputs, the record arrays or the list of blocks
    are made.

    A process records for one target only (:mod:`.targets`). The first
    recording of a process that has not imported numba binds it to the
    target it asked for (``NUMBA_ENABLE_CUDASIM=1`` for the simulator) and
    records here; one for another target runs in a worker process.
    """
    _check_choices(backend, schedule)
    _bind_early(backend)
    user, kernel = _users(kernel)
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise RecordError(f"seed must be an integer >= 0, got {seed!r}")
    j, k, l = _sizes(j, k, l, width, M, N)
    chosen_from = None
    if tile_width is None:
        tile_width, chosen_from = _tile_width_from_device(kernel, backend, device)
    launch, blocks = normalize(j, k, l, tile_width, kernel, window)
    j, k, l, T = launch.j, launch.k, launch.l, launch.tile_width
    drop = _check_drop_barrier(kernel, drop_barrier)
    reads = _reads(reads, drop, kernel, user)
    limits = _limits(max_bytes, max_seconds)
    if on_estimate is not None:
        on_estimate(estimate(j, k, l, T, kernel, blocks, reads=reads))
    est = admit(launch, blocks, backend, limits, reads=reads)  # every limit, from sizes alone
    if M is not None:
        M = _as_matrix("M", M)
    if N is not None:
        N = _as_matrix("N", N)

    choice = resolve_backend(backend)  # GPUUnavailableError names the fix, before any compile
    if backend == "auto" and not quiet:
        print(f"vizmm: recording on the {choice.backend} ({choice.reason})", file=sys.stderr)
    with budget.reserve(est) if budget is not None else contextlib.nullcontext():
        inputs = "seeded" if M is None and N is None else "given"
        M, N = _inputs(j, k, l, M, N, seed)
        if blocks is None:  # built only now that the size is admitted (a list of every block)
            blocks = [(by, bx) for by, bx in np.ndindex(launch.grid)]
        job = launcher.Job(
            launch,
            blocks,
            window is not None,
            int(seed),
            choice.backend,
            inputs,
            drop,
            reads,
            chosen_from,
            choice.target,
            user_kernel=user if isinstance(user, str) and "def " not in user else "",
            constants=_constants(constants, user),
            schedule=schedule,
        )
        show = _show(progress, job.backend, est, quiet)
        if user is not None and not job.user_kernel:  # a function or source: here
            return _record_here(job, M, N, user, show, cancel)
        if job.user_kernel:  # a user's file: read, never run; its generated code in a worker
            return _record_in_subprocess(job, M, N, quiet=quiet, cancel=cancel, show=show)
        return _run(job, M, N, show, quiet, cancel)


def _users(kernel: str | Callable) -> tuple[str | Callable | None, str]:
    """``(user, kernel)``: a user's kernel and the book's kernel whose launch it takes.

    A function, source or ``file.py:name`` takes ``'general'``'s launch (j x k . k x l);
    a book kernel named is ``(None, kernel)``.
    """
    if not isinstance(kernel, str) or ".py:" in kernel or "def " in kernel:
        return kernel, "general"
    return None, kernel


def _reads(reads: bool | None, drop: tuple, kernel: str, user) -> bool:
    """Whether the k loop's shared reads are recorded (by default when a barrier is dropped)."""
    reads = bool(drop) if reads is None else bool(reads)
    if reads and kernel not in BARRIER_KERNELS and user is None:
        raise RecordError(
            f"reads=True records the k loop's reads of Mds / Nds; kernel {kernel!r} has no "
            f"such reads (use {' or '.join(map(repr, BARRIER_KERNELS))})"
        )
    return reads


def _limits(max_bytes: int | None, max_seconds: float | None) -> Limits:
    """The limits of a recording: the defaults (or the environment's) where none is given."""
    limits = Limits()
    return Limits(
        limits.max_bytes if max_bytes is None else int(max_bytes),
        limits.max_simulator_seconds if max_seconds is None else float(max_seconds),
    )


def _check_choices(backend: str, schedule: str) -> None:
    """Refuse a backend or a schedule of vizmm's simulator that is not one of the names."""
    if backend not in BACKENDS:
        raise RecordError(f"unknown backend {backend!r}; choose one of {', '.join(BACKENDS)}")
    from .simt import SCHEDULES

    if schedule not in SCHEDULES:
        raise RecordError(
            f"unknown schedule {schedule!r}; choose one of {', '.join(SCHEDULES)} (the order "
            "vizmm's simulator runs threads in between barriers)"
        )


def _sizes(j, k, l, width, M, N) -> tuple:
    """``j, k, l`` from the sizes, ``width`` or the matrices' shapes (which must agree)."""
    if width is not None:
        w = _int("width", width)
        if any(v is not None and v != w for v in (j, k, l)):
            raise RecordError("give either width or j, k, l, not both with different values")
        j = k = l = w
    m_shape, n_shape = _shape_of("M", M), _shape_of("N", N)
    if m_shape is not None:
        if j is not None and j != m_shape[0] or k is not None and k != m_shape[1]:
            raise RecordError(f"M has shape {m_shape}, which disagrees with j={j}, k={k}")
        j, k = m_shape
    if n_shape is not None:
        if k is not None and k != n_shape[0]:
            raise RecordError(
                f"N has {n_shape[0]} rows but M has k={k} columns: M (j x k) . N (k x l) needs "
                "the same k"
            )
        if l is not None and l != n_shape[1]:
            raise RecordError(f"N has shape {n_shape}, which disagrees with l={l}")
        k, l = n_shape
    if j is None or k is None or l is None:
        raise RecordError("give the sizes j, k, l (or width, or the matrices M and N)")
    return j, k, l


def _tile_width_from_device(kernel: str, backend: str, device: str) -> tuple:
    """TILE_WIDTH chosen from the device (Fig. 5.14's host code), and what chose it."""
    if kernel != "dynamic":
        raise RecordError(
            f"tile_width is required for kernel {kernel!r}; only kernel='dynamic' "
            "(Fig. 5.14) chooses its TILE_WIDTH from the device"
        )
    from .device import tile_width_from_device

    return tile_width_from_device(backend, device)


def _record_here(job, M, N, user, show, cancel) -> Trace:
    """Record a kernel given as a function or source, in this process (bound to its target)."""
    if not targets.can_run_here(job.target):
        raise RecordError(
            "a kernel given as a function records in this process, which is bound to "
            "another target; give it as 'file.py:name' to record it in a worker"
        )
    targets.bind_here(job.target)
    from .instrument_trace import launch as instrumented

    acquire(_LOCK, cancel)
    try:
        return instrumented(job, M, N, show, cancel, kernel=user)
    finally:
        _LOCK.release()


def _constants(constants, user) -> dict:
    """The constants to override in a user's kernel, checked (numbers and flags only)."""
    if not constants:
        return {}
    if user is None:
        raise RecordError("constants= overrides a user's kernel's module constants; give kernel=")
    out = {}
    for k, v in dict(constants).items():
        if not (isinstance(k, str) and k.isidentifier()) or not isinstance(
            v, (int, float, bool, np.integer, np.floating)
        ):
            raise RecordError(
                f"constants maps names to numbers (e.g. {{'TILE_WIDTH': 4}}); got {k!r}: {v!r}"
            )
        out[k] = v.item() if isinstance(v, np.generic) else v
    return out


def _check_drop_barrier(kernel: str, drop_barrier) -> tuple[int, ...]:
    from vizmm_kernels import check_drop_barrier

    try:
        return check_drop_barrier(kernel, drop_barrier)
    except ValueError as exc:
        raise RecordError(str(exc)) from None


def _shape_of(name, a) -> tuple[int, int] | None:
    """The shape of a matrix argument without copying it (None when not given)."""
    if a is None:
        return None
    try:
        shape = np.shape(a)
    except Exception as exc:  # noqa: BLE001 - anything that is not array-like
        raise RecordError(f"{name} must be a 2-D array of numbers: {exc}") from None
    if len(shape) != 2 or 0 in shape:
        raise RecordError(f"{name} must be a non-empty 2-D array, got shape {shape}")
    return int(shape[0]), int(shape[1])


def _run(job, M, N, show, quiet, cancel) -> Trace:
    if not targets.can_run_here(job.target):  # numba or the kernels chose another target here
        return _record_in_subprocess(job, M, N, quiet=quiet, cancel=cancel, show=show)
    targets.bind_here(job.target)
    acquire(_LOCK, cancel)
    try:
        return launcher.launch(job, M, N, show, cancel=cancel)
    finally:
        _LOCK.release()


def _record_in_subprocess(job, M, N, quiet, cancel=None, show=False):
    """Record ``job`` in a worker process (:mod:`.worker`) and read its trace back.

    The worker reports each block done on a pipe of its own (not its
    stdout, which a user's kernel may print to); ``show`` (a bar, a
    callback) is told here, in this process's thread.
    """
    gy, gx = job.launch.grid
    total = len(job.blocks) if job.target in (targets.SIMULATOR, targets.OWN) else gy * gx
    update, close = launcher._progress_reporter(show, total)
    with tempfile.TemporaryDirectory(prefix="vizmm-") as tmp:
        inp = os.path.join(tmp, "in.npz")
        out = os.path.join(tmp, "out.vizmm")
        np.savez(inp, M=M, N=N, blocks=np.asarray(job.blocks, np.int32).reshape(-1, 2))
        env = dict(os.environ, **targets.environment(job.target))
        read_fd, write_fd = os.pipe()
        args = [sys.executable, "-P", "-m", "vizmm.record.worker", inp, out, job.to_json()]
        try:
            proc = subprocess.Popen(
                [*args, str(write_fd)],
                env=env,
                stderr=None if not quiet else subprocess.DEVNULL,
                pass_fds=(write_fd,),
            )
        except BaseException:
            os.close(read_fd)
            raise
        finally:
            os.close(write_fd)
        try:
            _follow(proc, read_fd, update, cancel)
        except BaseException:  # cancelled, KeyboardInterrupt, the CLI's SIGTERM: no orphan
            if proc.poll() is None:
                proc.kill()
            proc.wait()
            raise
        finally:
            os.close(read_fd)
            close()
        if proc.returncode == targets.EXIT_KNOWN and os.path.exists(out + ".error"):
            with open(out + ".error", encoding="utf-8") as f:  # one line naming the fix
                line = f.read().strip()
            if line.startswith(_INSTRUMENT_ERROR):  # the user's kernel, not the GPU
                from .instrument import InstrumentError

                raise InstrumentError(line[len(_INSTRUMENT_ERROR) :])
            raise GPUUnavailableError(line)
        if proc.returncode != 0 or not os.path.exists(out):
            raise RuntimeError(
                f"the {job.backend} recording process failed (exit code {proc.returncode})"
            )
        with open(out, "rb") as f:
            return from_bytes(f.read())


def _follow(proc: subprocess.Popen, fd: int, update, cancel) -> None:
    """Wait for the worker ``proc``, passing on the ``done total`` lines it writes to ``fd``.

    Checks ``cancel`` every 0.2 s. Once the worker has ended, what it wrote
    last is read before this returns (the last count is never lost).
    """
    pending = b""
    eof = False

    def read(timeout: float) -> bool:
        """Read what is there within ``timeout``; pass the latest count on. False: nothing."""
        nonlocal pending, eof
        if eof or not select.select([fd], [], [], timeout)[0]:
            return False
        chunk = os.read(fd, 1 << 16)
        eof = not chunk
        *lines, pending = (pending + chunk).split(b"\n")
        if lines:  # only the latest count matters
            done, total = (int(x) for x in lines[-1].split())
            update(done, total)
        return not eof

    while True:
        read(0.2)
        if cancel is not None and cancel.is_set():
            raise RecordingCancelled("the recording was cancelled")
        if eof or proc.poll() is not None:
            while read(0):  # the ended worker's last lines (a descendant may hold the pipe)
                pass
            try:
                proc.wait(timeout=0.2)
                return
            except subprocess.TimeoutExpired:  # the pipe closed, the process not yet ended
                continue
