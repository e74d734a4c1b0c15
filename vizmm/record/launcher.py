"""Launching an instrumented kernel: record arrays sized before the launch, the run, the Trace.

Imports numba (through :mod:`vizmm_kernels`) inside the functions that
launch, so that importing this module does not fix numba's mode.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import json
import re
import sys
import time

import numpy as np

from ..trace import MAX_STORED_SPREAD, WAIT_BINS, LaunchShape, Trace
from .simulator import simulate

__all__ = ["Job", "allocate_records", "launch", "plain_source"]


@dataclasses.dataclass(frozen=True)
class Job:
    """One recording to launch, here or in a worker process (:mod:`vizmm.record.worker`).

    Attributes
    ----------
    launch : LaunchShape
        The kernel, sizes and TILE_WIDTH (validated).
    blocks : list of (by, bx)
        The blocks recorded per thread.
    aggregated : bool
        A window of detail blocks: every other block records only its SM,
        times, read counts and barrier spread.
    seed : int
        Seed of the random integer inputs.
    backend : {'simulator', 'gpu', 'gpu-legacy'}
    inputs : {'seeded', 'given'}
        Whether M and N came from ``seed`` or from the caller.
    drop_barrier : tuple of int
        The barriers removed (barrier lab); empty keeps both.
    reads : bool
        Record every k-loop read of Mds / Nds.
    tile_width_from : str, optional
        How Fig. 5.14 chose TILE_WIDTH from a device.
    target : str
        The compiler (:data:`vizmm.record.targets.TARGETS`): 'numba-cuda-mlir',
        'numba-cuda' or 'numba-cuda-simulator'; by default the backend's.
    user_kernel : str
        ``"file.py:name"`` of a user's kernel, recorded through the
        instrumenter (:mod:`vizmm.record.instrument_trace`); empty for the
        book's kernel ``launch.kernel``.
    instrumenter : bool
        Record the book's plain kernel through the instrumenter instead of
        its hand-instrumented copy.
    """

    launch: LaunchShape
    blocks: list
    aggregated: bool
    seed: int
    backend: str
    inputs: str = "given"
    drop_barrier: tuple[int, ...] = ()
    reads: bool = False
    tile_width_from: str | None = None
    target: str = ""
    user_kernel: str = ""
    instrumenter: bool = False

    def __post_init__(self):
        if not self.target:  # the backend's target, as vizmm.record.targets resolves it
            from .targets import SIMULATOR, Software, gpu_target

            target = SIMULATOR if self.backend == "simulator" else None
            object.__setattr__(self, "target", target or gpu_target(self.backend, Software.here()))

    def to_json(self) -> str:
        """Every field but ``blocks`` (a worker gets those in an array), as JSON."""
        fields = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        del fields["blocks"]
        return json.dumps(dict(fields, launch=dataclasses.asdict(self.launch)))

    @classmethod
    def from_json(cls, text: str, blocks: list) -> Job:
        """The job that :meth:`to_json` wrote, with its ``blocks``."""
        fields = json.loads(text)
        launch = LaunchShape(**fields.pop("launch"))
        return cls(launch, blocks, drop_barrier=tuple(fields.pop("drop_barrier")), **fields)


def _versions() -> dict[str, str]:
    import importlib.metadata  # here: importing vizmm stays light (``vizmm info``)

    from .._version import __version__

    out = {"python": sys.version.split()[0], "vizmm": __version__}
    for dist in ("numpy", "numba", "numba-cuda", "numba-cuda-mlir"):
        with contextlib.suppress(importlib.metadata.PackageNotFoundError):
            out[dist] = importlib.metadata.version(dist)
    return out


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


def allocate_records(j, k, l, T, kernel, blocks, aggregated, reads=False):
    """The record arrays an instrumented kernel fills, sized before the launch.

    Returns ``(rec, shapes)``: ``rec`` maps each kernel argument name after
    (M, N, P, dims) to a flat NumPy array (``detail`` stays (gy, gx)), in the
    kernels' argument order, filled with its "not recorded" sentinel;
    ``shapes`` gives the shape each flat array has in the trace. The tiled
    kernels ('tiled', 'boundary') also take the barrier lab's read records
    ``rd`` / ``rv``: ``(nd, nph, T, T, T, 2)`` with ``reads``, else empty.
    """
    from vizmm_kernels import codes

    shape = LaunchShape(kernel, j, k, l, T)
    (gy, gx), nph = shape.grid, shape.n_phases
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
    if kernel in ("tiled", "boundary"):
        shapes["rd"] = shapes["rv"] = (nd, nph, T, T, T, 2) if reads else (0,)
        rec["rd"] = np.full(shapes["rd"], codes.TAG_NOT_RECORDED, np.int32).ravel()
        rec["rv"] = np.full(shapes["rv"], np.nan, np.float32).ravel()
    return rec, shapes


def launch(job: Job, M, N, show, cancel=None) -> Trace:
    """Allocate the record arrays, run the kernel, wrap the result in a Trace.

    ``cancel`` (a ``threading.Event``) stops a simulator run before its next
    block with :class:`~vizmm.record.admission.RecordingCancelled`.
    """
    if job.user_kernel or job.instrumenter:
        from .instrument_trace import launch as instrumented

        return instrumented(job, M, N, show, cancel, kernel=job.user_kernel or None)
    import vizmm_kernels as K
    from vizmm_kernels import _target, codes

    from .targets import SIMULATOR, GPUUnavailableError, gpu_error

    cuda = _target.cuda
    simulated = _target.NAME == SIMULATOR

    shape = job.launch
    kernel, j, k, l, T = shape.kernel, shape.j, shape.k, shape.l, shape.tile_width
    blocks, aggregated = job.blocks, job.aggregated
    (gy, gx), nph = shape.grid, shape.n_phases
    nd = len(blocks)
    drop, reads = job.drop_barrier, job.reads
    rec, shapes = allocate_records(j, k, l, T, kernel, blocks, aggregated, reads)
    P = np.full(j * l, np.nan, np.float32)
    kern = K.get_kernel(kernel, T, instrumented=True, drop_barrier=drop, reads=reads)
    (grid, block) = K.grid_dims(j, l, T)
    scalars = K.launch_dims(kernel, j, k, l, T)
    dyn_shared = K.dynamic_shared_bytes(kernel, T)  # the launch's 4th parameter (Fig. 5.14)
    meta = {
        "kernel": kernel,
        "figure": K.FIGURES[kernel],
        "source": plain_source(kernel),
        "tile_width": T,
        "j": j,
        "k": k,
        "l": l,
        "n_detail": nd,
        "aggregated": aggregated,
        "seed": job.seed,
        "inputs": job.inputs,
        **({"tile_width_from": job.tile_width_from} if job.tile_width_from is not None else {}),
        "versions": _versions(),
        "target": {"name": _target.NAME, "version": _target.VERSION},
        "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    }
    if drop or reads:
        meta["drop_barrier"] = list(drop)
        meta["reads_recorded"] = reads
    update, close = _progress_reporter(show, nd if aggregated and simulated else gy * gx)
    t0 = time.perf_counter()
    try:
        if simulated:
            meta["backend"] = "simulator"
            sim_blocks = blocks if aggregated else None
            if reads or drop:
                meta["sim_schedule"] = "turns"
            simulate(
                kern,
                grid,
                block,
                [M.ravel(), N.ravel(), P, *scalars],
                rec,
                sim_blocks,
                update,
                dyn_shared,
                turns=bool(reads or drop),
                cancel=cancel,
            )
            meta["simulated_blocks"] = [list(b) for b in blocks] if aggregated else "all"
        else:
            meta["backend"] = "gpu"
            try:
                P, rec = _launch_gpu(
                    cuda, kern, grid, block, dyn_shared, M, N, P, scalars, rec, meta
                )
            except Exception as exc:  # a known failure inside the compiler or the driver
                line = gpu_error(exc, _target.NAME)
                if line is None:
                    raise
                raise GPUUnavailableError(line) from exc
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
        **({"shared_reads": rec["rd"], "read_values": rec["rv"]} if reads else {}),
    )


def _launch_gpu(cuda, kern, grid, block, dyn_shared, M, N, P, scalars, rec, meta):
    """Copy the inputs and record arrays to the GPU, launch once, copy back; (P, rec)."""
    dev = cuda.get_current_device()
    meta["device_name"] = dev.name.decode() if isinstance(dev.name, bytes) else dev.name
    meta["sm_count"] = int(dev.MULTIPROCESSOR_COUNT)
    meta["compute_capability"] = list(dev.compute_capability)
    d_args = [cuda.to_device(a) for a in (M.ravel(), N.ravel(), P)]
    d_rec = {name: cuda.to_device(a) for name, a in rec.items()}
    kern[grid, block, 0, dyn_shared](*d_args, *scalars, *d_rec.values())
    cuda.synchronize()
    return d_args[2].copy_to_host(), {name: a.copy_to_host() for name, a in d_rec.items()}


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


def plain_source(kernel: str) -> str:
    """The plain kernel's source as a student reads it (the body of ``make_plain``)."""
    import textwrap

    import vizmm_kernels as K

    with open(K.source_file(kernel), encoding="utf-8") as f:
        text = f.read()
    start = text.index("def make_plain")
    body = text[start : text.index("    return matrixMulKernel", start)]
    lines = body.splitlines()
    first = next(i for i, line in enumerate(lines) if line.strip().startswith("@cuda.jit"))
    text = textwrap.dedent("\n".join(lines[first:])).rstrip() + "\n"
    # The barrier lab's flags stay out of the book's text: "if BARRIER_1:" over an
    # indented "cuda.syncthreads()" reads as the book's line.
    return re.sub(r"^( *)if BARRIER_\d:\n +(cuda\.syncthreads\(\))", r"\1\2", text, flags=re.M)
