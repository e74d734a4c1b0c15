"""Recording: launch an instrumented kernel on a GPU or in Numba's CUDA simulator.

This is the only module of vizmm that imports numba. Numba fixes at its first
import whether ``numba.cuda`` is the real driver or the simulator
(``NUMBA_ENABLE_CUDASIM``); when a recording asks for the other backend than
the one this process already imported, it runs in a fresh Python process and
the trace comes back as a file.

The simulator runs one block at a time with one Python thread per CUDA
thread; vizmm drives it block by block itself, which gives a progress bar by
block and lets it simulate only a window of blocks (blocks of these kernels
are independent, so their records are exact). Only one simulated kernel runs
per process at a time: recordings are serialized by a lock.
"""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Sequence

import numpy as np

from ..trace import LaunchShape, Trace, from_bytes, human_bytes, seeded_inputs
from . import launcher

__all__ = [
    "record",
    "estimate",
    "Estimate",
    "RecordError",
    "GPUUnavailableError",
    "TraceTooLargeError",
    "BACKENDS",
    "DEFAULT_MAX_BYTES",
    "gpu_available",
]

BACKENDS = ("simulator", "gpu", "auto")
DEFAULT_MAX_BYTES = int(os.environ.get("VIZMM_MAX_TRACE_BYTES", 2**30))
PROGRESS_AFTER_S = 2.0  # show a progress bar when the simulator is expected to take longer

# Simulator cost model (seconds), fitted on a 2-core machine: a block costs
# start-up per thread plus per-phase work per thread (k loop and barriers).
_SIM_PER_THREAD = 3.0e-4
_SIM_PER_THREAD_PHASE = 1.5e-4
_SIM_PER_MAC = 6.0e-6

_LOCK = threading.Lock()


class RecordError(ValueError):
    """The recording was asked with arguments it cannot take; the message says which."""


class GPUUnavailableError(RuntimeError):
    """A GPU was asked for where numba sees none."""


class TraceTooLargeError(RecordError):
    """The trace would exceed the size limit; nothing was launched."""


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
            + f", ~{self.simulator_seconds:.1f} s in the simulator"
        )


def _check_dim(name: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise RecordError(f"{name} must be a positive integer (elements), got {value!r}")
    return int(value)


def _normalize(j, k, l, tile_width, kernel, window):
    """The validated launch shape and the window's blocks (``None``: every block).

    Works from the sizes alone: no list of the grid's blocks is built here.
    """
    launch = LaunchShape.make(kernel, j, k, l, tile_width, error=RecordError)
    gy, gx = launch.grid
    if window is None:
        return launch, None
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
    launch, blocks = _normalize(j, k, l, tile_width, kernel, window)
    return _estimate(launch, blocks, simulate_window_only, reads)


def _estimate(
    launch: LaunchShape, blocks, simulate_window_only: bool = True, reads: bool = False
) -> Estimate:
    """:func:`estimate` of a validated launch and window (``blocks``; None: every block)."""
    j, k, l, T, kernel = launch.j, launch.k, launch.l, launch.tile_width, launch.kernel
    (gy, gx), nph = launch.grid, launch.n_phases
    nd = launch.n_blocks if blocks is None else len(blocks)
    per_thread_phase = 6 * 4 + 4 + 2 * 2 * (4 + 8)
    nbytes = (
        4 * (j * k + k * l + j * l) * 2  # M, N, P and the read counters
        + nd * T * T * (nph * per_thread_phase + 1)
        + gy * gx * 6 * 8
        + gy * gx * nph * 2 * 4
        + (gy * gx * nph * 2 * 2 * 4 if blocks is not None else 0)
        + (nd * nph * T**3 * 2 * (4 + 4) if reads else 0)
    )
    sim_blocks = nd if (blocks is not None and simulate_window_only) else gy * gx
    inner = k if kernel == "naive" else nph * T
    secs = (
        sim_blocks
        * T
        * T
        * (_SIM_PER_THREAD + _SIM_PER_THREAD_PHASE * max(nph, 1) + _SIM_PER_MAC * inner)
    )
    return Estimate(int(nbytes), gy * gx, sim_blocks, float(secs))


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


def gpu_available() -> bool:
    """True when a CUDA GPU is usable by numba in this process (imports numba if needed).

    Returns False without importing numba when no CUDA driver library exists,
    and when this process already runs numba's simulator.
    """
    mode = _numba_mode()
    if mode == "simulator":
        return _probe_gpu_in_subprocess()
    if mode is None:
        import ctypes.util

        if ctypes.util.find_library("cuda") is None and not os.path.exists("/dev/nvidia0"):
            return False
    os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "0")
    try:
        from numba import cuda

        return bool(cuda.is_available())
    except Exception:  # noqa: BLE001 - a broken driver means no GPU
        return False


def _probe_gpu_in_subprocess() -> bool:
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="0")
    code = "from numba import cuda; import sys; sys.exit(0 if cuda.is_available() else 1)"
    try:
        return (
            subprocess.run(
                [sys.executable, "-c", code], env=env, timeout=120, capture_output=True
            ).returncode
            == 0
        )
    except (OSError, subprocess.TimeoutExpired):
        return False


def _numba_mode() -> str | None:
    """'simulator' or 'gpu' when numba.cuda is already imported here, else None."""
    if "numba.cuda" not in sys.modules and "numba" not in sys.modules:
        return None
    from numba import config

    return "simulator" if config.ENABLE_CUDASIM else "gpu"


def record(
    j: int | None = None,
    k: int | None = None,
    l: int | None = None,
    *,
    tile_width: int | None = 2,
    kernel: str = "boundary",
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
    drop_barrier: int | Sequence[int] | None = None,
    reads: bool | None = None,
    on_estimate: Callable[[Estimate], object] | None = None,
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
    kernel : {'boundary', 'tiled', 'general', 'naive', 'dynamic'}
        'tiled' is Fig. 5.9 (no boundary checks: on a Width that is not a
        multiple of TILE_WIDTH its wrong-element and out-of-allocation
        accesses are recorded), 'boundary' Fig. 5.13, 'general' the
        j x k . k x l form, 'naive' Fig. 3.11, 'dynamic' Fig. 5.14 (Fig. 5.13
        with its Mds and Nds in one dynamically sized shared array).
    backend : {'auto', 'simulator', 'gpu'}
        'auto' takes a GPU when numba can use one, else the simulator, and
        says which on stderr (unless ``quiet``).
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
        ``True`` shows a progress bar, a callable gets ``(done, total)``
        blocks; by default a bar appears when the simulator is expected to
        take more than 2 s.
    quiet : bool
        Say nothing on stderr.
    drop_barrier : {None, 1, 2, (1, 2)}
        Barrier lab ('tiled' and 'boundary'): remove the ``__syncthreads()``
        after the loads (1), the one after the k loop (2), or both; ``None``
        keeps both (the book's kernel). See ``Trace.hazards()``.
    reads : bool, optional
        Record every k-loop read of Mds / Nds (the element's tag and the
        value: ``Trace.shared_reads`` / ``read_values``). By default on when
        a barrier is removed. In the simulator such recordings run the
        threads of a block in turns (see the README's barrier lab), so they
        are the same on every run.
    on_estimate : callable, optional
        Called with the :class:`Estimate` once the arguments are checked,
        before the size limit is applied and anything is launched (the
        command line prints it).

    Returns
    -------
    Trace

    Raises
    ------
    RecordError
        For bad sizes, shapes, tile width, kernel, backend, window or
        drop_barrier.
    TraceTooLargeError
        When the estimated trace exceeds ``max_bytes`` (nothing is launched).
    GPUUnavailableError
        When ``backend='gpu'`` and numba sees no usable GPU.
    """
    if backend not in BACKENDS:
        raise RecordError(f"unknown backend {backend!r}; choose one of {', '.join(BACKENDS)}")
    if width is not None:
        w = _check_dim("width", width)
        if any(v is not None and v != w for v in (j, k, l)):
            raise RecordError("give either width or j, k, l, not both with different values")
        j = k = l = w
    if M is not None:
        M = _as_matrix("M", M)
    if N is not None:
        N = _as_matrix("N", N)
    if M is not None:
        if j is not None and j != M.shape[0] or k is not None and k != M.shape[1]:
            raise RecordError(f"M has shape {M.shape}, which disagrees with j={j}, k={k}")
        j, k = M.shape
    if N is not None:
        if k is not None and k != N.shape[0]:
            raise RecordError(
                f"N has {N.shape[0]} rows but M has k={k} columns: M (j x k) . N (k x l) needs "
                "the same k"
            )
        if l is not None and l != N.shape[1]:
            raise RecordError(f"N has shape {N.shape}, which disagrees with l={l}")
        k, l = N.shape
    if j is None or k is None or l is None:
        raise RecordError("give the sizes j, k, l (or width, or the matrices M and N)")
    chosen_from = None
    if tile_width is None:
        if kernel != "dynamic":
            raise RecordError(
                f"tile_width is required for kernel {kernel!r}; only kernel='dynamic' "
                "(Fig. 5.14) chooses its TILE_WIDTH from the device"
            )
        from .device import tile_width_from_device

        tile_width, chosen_from = tile_width_from_device(backend, device)
    launch, blocks = _normalize(j, k, l, tile_width, kernel, window)
    j, k, l, T = launch.j, launch.k, launch.l, launch.tile_width
    drop = _check_drop_barrier(kernel, drop_barrier)
    reads = bool(drop) if reads is None else bool(reads)
    if reads and kernel not in ("tiled", "boundary"):
        raise RecordError(
            f"reads=True records the k loop's reads of Mds / Nds; kernel {kernel!r} has no "
            "such reads (use 'tiled' or 'boundary')"
        )
    est = _estimate(launch, blocks, reads=reads)
    if on_estimate is not None:
        on_estimate(est)
    limit = DEFAULT_MAX_BYTES if max_bytes is None else int(max_bytes)
    if est.bytes > limit:
        raise TraceTooLargeError(
            f"this trace would take about {human_bytes(est.bytes)} ({est.bytes} bytes), over "
            f"the limit of {human_bytes(limit)} ({limit} bytes); record a window of blocks "
            "(window=[(by, bx), ...]), use smaller matrices, or raise max_bytes"
        )
    inputs = "seeded" if M is None and N is None else "given"
    M, N = _inputs(j, k, l, M, N, seed)

    if backend == "auto":
        backend = "gpu" if gpu_available() else "simulator"
        if not quiet:
            print(
                f"vizmm: recording on the {backend}"
                + (" (no usable GPU found)" if backend == "simulator" else ""),
                file=sys.stderr,
            )
    if backend == "gpu" and not gpu_available():
        raise GPUUnavailableError(
            "backend='gpu' was asked for but numba finds no usable CUDA GPU here; use "
            "backend='simulator' (or 'auto'), which runs the same kernels in Numba's CUDA "
            "simulator, slowly but everywhere"
        )
    job = dict(
        j=j,
        k=k,
        l=l,
        T=T,
        kernel=kernel,
        # Built only now that the size is admitted (a list of every block).
        blocks=blocks if blocks is not None else [(by, bx) for by, bx in np.ndindex(launch.grid)],
        aggregated=window is not None,
        seed=seed,
        backend=backend,
        inputs=inputs,
        drop=drop,
        reads=reads,
    )
    if chosen_from is not None:
        job["tile_width_from"] = chosen_from
    mode = _numba_mode()
    want = backend
    if mode is not None and mode != want:
        return _record_in_subprocess(job, M, N, quiet=quiet)
    if mode is None:
        os.environ["NUMBA_ENABLE_CUDASIM"] = "1" if want == "simulator" else "0"
    show = progress
    if show is None:
        show = backend == "simulator" and est.simulator_seconds > PROGRESS_AFTER_S and not quiet
    with _LOCK:
        return launcher.launch(job, M, N, show)


def _check_drop_barrier(kernel: str, drop_barrier) -> tuple[int, ...]:
    from vizmm_kernels import check_drop_barrier

    try:
        return check_drop_barrier(kernel, drop_barrier)
    except ValueError as exc:
        raise RecordError(str(exc)) from None


def _record_in_subprocess(job, M, N, quiet):
    with tempfile.TemporaryDirectory(prefix="vizmm-") as tmp:
        inp = os.path.join(tmp, "in.npz")
        out = os.path.join(tmp, "out.vizmm")
        np.savez(inp, M=M, N=N, blocks=np.asarray(job["blocks"], np.int32).reshape(-1, 2))
        env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1" if job["backend"] == "simulator" else "0")
        args = [
            sys.executable,
            "-m",
            "vizmm.record.worker",
            inp,
            out,
            *(
                f"{key}={job[key]}"
                for key in ("j", "k", "l", "T", "kernel", "aggregated", "seed", "backend", "inputs")
            ),
            *([f"tile_width_from={job['tile_width_from']}"] if "tile_width_from" in job else []),
            f"drop={','.join(map(str, job.get('drop', ()))) or '-'}",
            f"reads={job.get('reads', False)}",
        ]
        proc = subprocess.run(args, env=env, stderr=None if not quiet else subprocess.DEVNULL)
        if proc.returncode != 0 or not os.path.exists(out):
            raise RuntimeError(
                f"the {job['backend']} recording process failed (exit code {proc.returncode})"
            )
        with open(out, "rb") as f:
            return from_bytes(f.read())
