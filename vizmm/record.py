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

import contextlib
import dataclasses
import datetime
import importlib.metadata
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Sequence

import numpy as np

from .trace import (
    MAX_STORED_SPREAD,
    WAIT_BINS,
    Trace,
    from_bytes,
    human_bytes,
    seeded_inputs,
)

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
KERNELS = ("naive", "tiled", "boundary", "general")
SQUARE_KERNELS = ("naive", "tiled", "boundary")
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


def _check_tile_width(tile_width) -> int:
    if (
        isinstance(tile_width, bool)
        or not isinstance(tile_width, (int, np.integer))
        or not 1 <= tile_width <= 32
    ):
        raise RecordError(
            "tile_width (TILE_WIDTH) must be an integer from 1 to 32: a block has "
            f"TILE_WIDTH x TILE_WIDTH threads and CUDA allows at most 1024; got {tile_width!r}"
        )
    return int(tile_width)


def _normalize(j, k, l, tile_width, kernel, window):
    if kernel not in KERNELS:
        raise RecordError(f"unknown kernel {kernel!r}; choose one of {', '.join(KERNELS)}")
    j, k, l = _check_dim("j", j), _check_dim("k", k), _check_dim("l", l)
    T = _check_tile_width(tile_width)
    if kernel in SQUARE_KERNELS and not j == k == l:
        raise RecordError(
            f"kernel {kernel!r} multiplies square Width x Width matrices, but the shapes are "
            f"M {j}x{k} and N {k}x{l}; use kernel='general' for j x k . k x l"
        )
    gy, gx = -(-j // T), -(-l // T)
    if window is None:
        blocks = [(by, bx) for by in range(gy) for bx in range(gx)]
    else:
        blocks = []
        for b in window:
            try:
                by, bx = (int(v) for v in b)
            except (TypeError, ValueError):
                raise RecordError(f"window entries must be (by, bx) pairs, got {b!r}") from None
            if not (0 <= by < gy and 0 <= bx < gx):
                raise RecordError(
                    f"window block ({by}, {bx}) is outside the {gy} x {gx} grid of blocks"
                )
            if (by, bx) not in blocks:
                blocks.append((by, bx))
        if not blocks:
            raise RecordError("window is empty: name at least one (by, bx) block")
    return j, k, l, T, gy, gx, blocks


def estimate(
    j: int,
    k: int,
    l: int,
    tile_width: int,
    kernel: str = "boundary",
    window: Sequence[tuple[int, int]] | None = None,
    simulate_window_only: bool = True,
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

    Raises
    ------
    RecordError
        For bad sizes, tile width, kernel or window.
    """
    j, k, l, T, gy, gx, blocks = _normalize(j, k, l, tile_width, kernel, window)
    nph = 0 if kernel == "naive" else -(-k // T)
    nd = len(blocks)
    per_thread_phase = 6 * 4 + 4 + 2 * 2 * (4 + 8)
    nbytes = (
        4 * (j * k + k * l + j * l) * 2  # M, N, P and the read counters
        + nd * T * T * (nph * per_thread_phase + 1)
        + gy * gx * 6 * 8
        + gy * gx * nph * 2 * 4
        + (gy * gx * nph * 2 * 2 * 4 if window is not None else 0)
    )
    sim_blocks = nd if (window is not None and simulate_window_only) else gy * gx
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


def _versions() -> dict[str, str]:
    from . import __version__

    out = {"python": sys.version.split()[0], "vizmm": __version__}
    for dist in ("numpy", "numba", "numba-cuda"):
        with contextlib.suppress(importlib.metadata.PackageNotFoundError):
            out[dist] = importlib.metadata.version(dist)
    return out


def record(
    j: int | None = None,
    k: int | None = None,
    l: int | None = None,
    *,
    tile_width: int = 2,
    kernel: str = "boundary",
    backend: str = "auto",
    M=None,
    N=None,
    width: int | None = None,
    seed: int = 0,
    window: Sequence[tuple[int, int]] | None = None,
    max_bytes: int | None = None,
    progress: bool | Callable[[int, int], None] | None = None,
    quiet: bool = False,
) -> Trace:
    """Run an instrumented kernel once and return what it recorded.

    Parameters
    ----------
    j, k, l : int, optional
        M is j x k, N is k x l, P is j x l (elements). Taken from ``M`` and
        ``N`` when those are given, or from ``width`` for square matrices.
    tile_width : int
        TILE_WIDTH, 1 to 32 (blocks of TILE_WIDTH x TILE_WIDTH threads).
    kernel : {'boundary', 'tiled', 'general', 'naive'}
        'tiled' is Fig. 5.9 (no boundary checks: on a Width that is not a
        multiple of TILE_WIDTH its wrong-element and out-of-allocation
        accesses are recorded), 'boundary' Fig. 5.13, 'general' the
        j x k . k x l form, 'naive' Fig. 3.11.
    backend : {'auto', 'simulator', 'gpu'}
        'auto' takes a GPU when numba can use one, else the simulator, and
        says which on stderr (unless ``quiet``).
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

    Returns
    -------
    Trace

    Raises
    ------
    RecordError
        For bad sizes, shapes, tile width, kernel, backend or window.
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
    j, k, l, T, gy, gx, blocks = _normalize(j, k, l, tile_width, kernel, window)
    est = estimate(j, k, l, T, kernel, window)
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
        blocks=blocks,
        aggregated=window is not None,
        seed=seed,
        backend=backend,
        inputs=inputs,
    )
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
        return _launch(job, M, N, show)


def _record_in_subprocess(job, M, N, quiet):
    with tempfile.TemporaryDirectory(prefix="vizmm-") as tmp:
        inp = os.path.join(tmp, "in.npz")
        out = os.path.join(tmp, "out.vizmm")
        np.savez(inp, M=M, N=N, blocks=np.asarray(job["blocks"], np.int32).reshape(-1, 2))
        env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1" if job["backend"] == "simulator" else "0")
        args = [
            sys.executable,
            "-m",
            "vizmm._worker",
            inp,
            out,
            *(
                f"{key}={job[key]}"
                for key in ("j", "k", "l", "T", "kernel", "aggregated", "seed", "backend", "inputs")
            ),
        ]
        proc = subprocess.run(args, env=env, stderr=None if not quiet else subprocess.DEVNULL)
        if proc.returncode != 0 or not os.path.exists(out):
            raise RuntimeError(
                f"the {job['backend']} recording process failed (exit code {proc.returncode})"
            )
        with open(out, "rb") as f:
            return from_bytes(f.read())


def _progress_reporter(show, total):
    if callable(show):
        return show, lambda: None
    if not show:
        return (lambda done, tot: None), lambda: None
    from tqdm.auto import tqdm

    bar = tqdm(total=total, unit="block", desc="simulating", leave=False)

    def update(done, tot):
        bar.update(done - bar.n)

    return update, bar.close


def allocate_records(j, k, l, T, kernel, blocks, aggregated):
    """The record arrays an instrumented kernel fills, sized before the launch.

    Returns ``(rec, shapes)``: ``rec`` maps each kernel argument name after
    (M, N, P, dims) to a flat NumPy array (``detail`` stays (gy, gx)), in the
    kernels' argument order, filled with its "not recorded" sentinel;
    ``shapes`` gives the shape each flat array has in the trace.
    """
    from vizmm_kernels import codes

    gy, gx = -(-j // T), -(-l // T)
    nph = 0 if kernel == "naive" else -(-k // T)
    nd = len(blocks)
    detail = np.full((gy, gx), -1, np.int32)
    for i, (by, bx) in enumerate(blocks):
        detail[by, bx] = i
    shapes = dict(
        ld=(nd, nph, T, T, codes.LOAD_FIELDS),
        pv=(nd, nph, T, T),
        bar=(nd, nph, 2, 2, T, T),
        bclk=(nd, nph, 2, 2, T, T),
        ticks=(max(nd, 1),),
        spread=(gy, gx, nph, 2, codes.SPREAD_FIELDS) if aggregated else (0,),
        pw=(nd, T, T),
        blk=(gy, gx, codes.BLK_FIELDS),
        seq=(1,),
        mcount=(j * k,),
        ncount=(k * l,),
        zf=(gy, gx, nph, 2),
    )
    int64_min, int64_max = np.iinfo(np.int64).min, np.iinfo(np.int64).max
    spread0 = np.zeros((0,), np.int64)
    if aggregated:  # first arrival (a min), last arrival and last release (maxima)
        spread0 = np.empty(shapes["spread"], np.int64)
        spread0[..., codes.SPREAD_FIRST_ARRIVE] = int64_max
        spread0[..., codes.SPREAD_LAST_ARRIVE] = int64_min
        spread0[..., codes.SPREAD_LAST_RELEASE] = int64_min
    # The kernels take every record array flat (one dimension, C order).
    rec = dict(
        detail=detail,
        ld=np.zeros(shapes["ld"], np.int32).ravel(),
        pv=np.full(shapes["pv"], np.nan, np.float32).ravel(),
        bar=np.full(shapes["bar"], -1, np.int32).ravel(),
        bclk=np.full(shapes["bclk"], codes.NO_CLOCK, np.int64).ravel(),
        ticks=np.zeros(shapes["ticks"], np.int32),
        spread=spread0.ravel(),
        pw=np.zeros(shapes["pw"], np.int8).ravel(),
        blk=np.full(shapes["blk"], codes.NO_CLOCK, np.int64).ravel(),
        seq=np.zeros(1, np.int32),
        mcount=np.zeros(j * k, np.int32),
        ncount=np.zeros(k * l, np.int32),
        zf=np.zeros(shapes["zf"], np.int32).ravel(),
    )
    return rec, shapes


def _launch(job, M, N, show) -> Trace:
    """Allocate the record arrays, run the kernel, wrap the result in a Trace."""
    import vizmm_kernels as K
    from numba import config, cuda
    from vizmm_kernels import codes

    j, k, l, T, kernel = job["j"], job["k"], job["l"], job["T"], job["kernel"]
    blocks, aggregated = job["blocks"], job["aggregated"]
    gy, gx = -(-j // T), -(-l // T)
    nph = 0 if kernel == "naive" else -(-k // T)
    nd = len(blocks)
    rec, shapes = allocate_records(j, k, l, T, kernel, blocks, aggregated)
    P = np.full(j * l, np.nan, np.float32)
    kern = K.get_kernel(kernel, T, instrumented=True)
    (grid, block) = K.grid_dims(j, l, T)
    scalars = K.launch_dims(kernel, j, k, l)
    meta = {
        "kernel": kernel,
        "figure": K.FIGURES[kernel],
        "source": _plain_source(kernel),
        "tile_width": T,
        "j": j,
        "k": k,
        "l": l,
        "n_detail": nd,
        "aggregated": aggregated,
        "seed": job["seed"],
        "inputs": job.get("inputs", "given"),
        "versions": _versions(),
        "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    }
    update, close = _progress_reporter(
        show, nd if aggregated and config.ENABLE_CUDASIM else gy * gx
    )
    t0 = time.perf_counter()
    try:
        if config.ENABLE_CUDASIM:
            meta["backend"] = "simulator"
            sim_blocks = blocks if aggregated else None
            _simulate(
                kern, grid, block, [M.ravel(), N.ravel(), P, *scalars], rec, sim_blocks, update
            )
            meta["simulated_blocks"] = [list(b) for b in blocks] if aggregated else "all"
        else:
            meta["backend"] = "gpu"
            dev = cuda.get_current_device()
            meta["device_name"] = dev.name.decode() if isinstance(dev.name, bytes) else dev.name
            meta["sm_count"] = int(dev.MULTIPROCESSOR_COUNT)
            meta["compute_capability"] = list(dev.compute_capability)
            d_args = [cuda.to_device(a) for a in (M.ravel(), N.ravel(), P)]
            d_rec = {name: cuda.to_device(a) for name, a in rec.items()}
            kern[grid, block](*d_args, *scalars, *d_rec.values())
            cuda.synchronize()
            P = d_args[2].copy_to_host()
            rec = {name: a.copy_to_host() for name, a in d_rec.items()}
            update(gy * gx, gy * gx)
    finally:
        close()
    meta["elapsed_s"] = round(time.perf_counter() - t0, 3)
    rec = {name: (a if name == "detail" else a.reshape(shapes[name])) for name, a in rec.items()}
    summaries = _summarise_spread(rec["spread"], codes, aggregated, meta, (gy, gx, nph))
    return Trace(
        meta=meta,
        M=M,
        N=N,
        P=P.reshape(j, l),
        detail_blocks=np.asarray(blocks, np.int32).reshape(-1, 2),
        loads=rec["ld"],
        pvalue=rec["pv"],
        barrier_tick=rec["bar"],
        barrier_clock=rec["bclk"],
        p_write=rec["pw"],
        block_info=rec["blk"],
        m_reads=rec["mcount"].reshape(j, k),
        n_reads=rec["ncount"].reshape(k, l),
        zero_fills=rec["zf"],
        **summaries,
    )


def _summarise_spread(raw: np.ndarray, codes, aggregated: bool, meta: dict, dims) -> dict:
    """The trace's barrier fields from the kernel's raw (min, max) warp clocks."""
    gy, gx, nph = dims
    if not aggregated:
        meta["spread_stored"] = False
        return {
            "barrier_spread": np.zeros((0, 0, nph, 2, 2), np.int32),
            "wait_hist": np.zeros((0, 2, WAIT_BINS), np.int32),
            "block_wait": np.zeros((0, 0, 2, 3), np.int32),
        }
    spread = _reduce_spread(raw, codes)  # (gy, gx, nph, 2, 2)
    wait = spread[..., 0].astype(np.int64)  # arrival spread, -1 without clocks
    has = wait >= 0
    bins = np.where(wait > 0, np.floor(np.log2(np.maximum(wait, 1))).astype(np.int64) + 1, 0)
    bins = np.minimum(bins, WAIT_BINS - 1)
    hist = np.zeros((nph, 2, WAIT_BINS), np.int32)
    for b in range(2):
        for ph in range(nph):
            sel = has[:, :, ph, b]
            hist[ph, b] = np.bincount(bins[:, :, ph, b][sel], minlength=WAIT_BINS)[:WAIT_BINS]
    block_wait = np.full((gy, gx, 2, 3), codes.NO_CLOCK, np.int32)
    if nph:
        w = np.where(has, wait, -1)  # (gy, gx, nph, 2)
        any_clock = has.any(axis=2)  # (gy, gx, 2)
        mx = w.max(axis=2)
        arg = w.argmax(axis=2)
        mean = np.where(
            any_clock, np.where(has, wait, 0).sum(axis=2) / np.maximum(has.sum(axis=2), 1), -1
        )
        block_wait[..., 0] = np.where(any_clock, mx, -1)
        block_wait[..., 1] = np.where(any_clock, np.rint(mean), -1)
        block_wait[..., 2] = np.where(any_clock, arg, -1)
    stored = gy * gx * nph <= MAX_STORED_SPREAD
    meta["spread_stored"] = bool(stored)
    return {
        "barrier_spread": spread if stored else np.zeros((0, 0, nph, 2, 2), np.int32),
        "wait_hist": hist,
        "block_wait": block_wait,
    }


def _reduce_spread(spread: np.ndarray, codes) -> np.ndarray:
    """(first, last) warp arrival and release clocks -> (arrival spread, release lag), int32.

    Blocks or barriers whose clocks were not read (the simulator, or a block
    outside a simulated window) get -1.
    """
    fa = spread[..., codes.SPREAD_FIRST_ARRIVE]
    la = spread[..., codes.SPREAD_LAST_ARRIVE]
    lr = spread[..., codes.SPREAD_LAST_RELEASE]
    ok = (fa >= 0) & (la >= fa) & (lr >= la) & (fa != np.iinfo(np.int64).max)
    out = np.full(spread.shape[:-1] + (2,), codes.NO_CLOCK, np.int32)
    big = np.iinfo(np.int32).max
    out[..., 0] = np.where(ok, np.minimum(la - fa, big), codes.NO_CLOCK)
    out[..., 1] = np.where(ok, np.minimum(lr - la, big), codes.NO_CLOCK)
    return out


def _plain_source(kernel: str) -> str:
    """The plain kernel's source as a student reads it (the body of ``make_plain``)."""
    import textwrap

    import vizmm_kernels as K

    with open(K.source_file(kernel), encoding="utf-8") as f:
        text = f.read()
    start = text.index("def make_plain")
    body = text[start : text.index("    return matrixMulKernel", start)]
    lines = body.splitlines()
    first = next(i for i, line in enumerate(lines) if line.strip().startswith("@cuda.jit"))
    return textwrap.dedent("\n".join(lines[first:])).rstrip() + "\n"


def _simulate(kern, grid, block, args, rec, blocks: Iterable[tuple[int, int]] | None, update):
    """Run ``kern`` in Numba's simulator one block at a time, reporting progress.

    Mirrors what the simulator's own launch does (one ``BlockManager`` per
    block) but lets vizmm choose the blocks and count them. Falls back to a
    plain launch of the whole grid when the simulator's internals differ.
    """
    gx, gy = grid
    all_args = [*args, *rec.values()]
    order = [(by, bx) for by in range(gy) for bx in range(gx)] if blocks is None else list(blocks)
    old_interval = sys.getswitchinterval()
    # The simulator's block manager busy-polls its threads; short GIL slices
    # let threads reach each barrier sooner (measured in benchmarks/).
    sys.setswitchinterval(SIM_SWITCH_INTERVAL)
    try:
        try:
            from numba.cuda.simulator import kernel as simk
            from numba.cuda.simulator.cudadrv.devicearray import (
                FakeCUDAArray,
                FakeWithinKernelCUDAArray,
            )

            fake_module = simk.FakeCUDAModule((gx, gy, 1), (*block, 1), 0)
            bm_cls = simk.BlockManager
        except (ImportError, AttributeError, TypeError):
            kern[grid, block](*all_args)
            update(len(order), len(order))
            return
        # M, N and P go in as the simulator's device arrays, as in its own
        # launch. The record arrays go in as plain NumPy arrays: the recording
        # only stores scalars and takes atomics on them, which the simulator
        # does the same on both, and it skips two Python wrappers per store.
        fake_args = [
            FakeWithinKernelCUDAArray(FakeCUDAArray(a)) if isinstance(a, np.ndarray) else a
            for a in args
        ] + list(rec.values())
        with simk._push_kernel_context(fake_module), simk.swapped_cuda_module(kern.fn, fake_module):
            for i, (by, bx) in enumerate(order):
                bm = bm_cls(kern.fn, (gx, gy, 1), (*block, 1), False)
                bm.run((bx, by, 0), *fake_args)
                update(i + 1, len(order))
    finally:
        sys.setswitchinterval(old_interval)


SIM_SWITCH_INTERVAL = 1e-3  # seconds; the interpreter's default is 5e-3
