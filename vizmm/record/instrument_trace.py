"""A recording through the instrumenter: the book's kernel (or a user's) as a Trace.

:func:`launch` is :func:`vizmm.record.launcher.launch` for a job whose
kernel goes through :mod:`.instrument`: the plain kernel (as printed) is
rewritten to log its accesses, run once, and the log read as the book's
matrix multiplication (:func:`.instrument_log.matmul_fields`).
"""

from __future__ import annotations

import datetime
import time

import numpy as np

from ..trace import KERNEL_SPECS, LaunchShape, Trace
from ..trace import access_log as D
from . import instrument as I
from .instrument_log import matmul_fields

__all__ = ["book_kernel", "launch"]


def book_kernel(
    kernel: str, T: int, drop=(), shared_loads=True, engine: str = "process"
) -> I.Instrumented:
    """The book's plain kernel ``kernel`` for TILE_WIDTH ``T`` through the instrumenter.

    Parameters
    ----------
    kernel : str
        The book's kernel (:data:`vizmm_kernels.KERNEL_NAMES`: ``'tiled'``
        is Fig. 5.9, ``'boundary'`` Fig. 5.13 ...).
    T : int
        TILE_WIDTH, 1 to 32.
    drop : tuple of int
        Barrier lab: the ``__syncthreads()`` removed (1: after the loads, 2:
        after the k loop); empty keeps both.
    shared_loads : bool
        Log the loads of Mds and Nds too (see :func:`.instrument.instrument`).
    engine : {'process', 'simt'}
        This process's compiler, or vizmm's simulator (:mod:`.simt`).

    Returns
    -------
    Instrumented
        The rewritten kernel, compiled (cached).
    """
    import vizmm_kernels as K

    plain = K.get_kernel(kernel, T, drop_barrier=drop or None)
    return I.instrument(
        plain,
        dynamic_shared=K.dynamic_shared_bytes(kernel, T),
        shared_loads=shared_loads,
        engine=engine,
    )


def launch(job, M, N, show=None, cancel=None, kernel=None, max_bytes=1 << 30) -> Trace:
    """Record ``job`` (a :class:`~vizmm.record.launcher.Job`) through the instrumenter.

    ``kernel``: a user's kernel (function, source or ``"file.py:name"``)
    instead of the book's ``job.launch.kernel``; it takes ``(M, N, P,
    Width)`` (square) or ``(M, N, P, j, k, l)``, M, N and P given flat
    (row-major) or 2-D as its subscripts say.

    Parameters
    ----------
    job : Job
        What to record (launch shape, detail blocks, barrier lab, mode).
    M, N : ndarray of float32
        The inputs, (j, k) and (k, l).
    show : bool or callable, optional
        True shows a progress bar, a callable gets ``(done, total)`` blocks.
    cancel : threading.Event, optional
        Stops a simulator run before its next block with
        :class:`~vizmm.record.admission.RecordingCancelled`.
    kernel : numba CUDA kernel, function or str, optional
        A user's kernel in place of the book's (see above).
    max_bytes : int
        The largest access log allowed (bytes), checked before it is
        allocated (:func:`.instrument.run`).

    Returns
    -------
    Trace
        The recording, with the access log (``log_events`` ...) beside the
        book's fields.

    Raises
    ------
    InstrumentError
        For a kernel the instrumenter cannot take, a user's kernel whose
        parameters are neither ``(M, N, P, Width)`` nor ``(M, N, P, j, k,
        l)``, or a log over ``max_bytes``.
    GPUUnavailableError
        For a known failure of the GPU's compiler or driver (one line).
    """
    import vizmm_kernels as K
    from vizmm_kernels import _target

    from .launcher import _progress_reporter, _summarise_spread
    from .targets import OWN

    own_sim = job.target == OWN
    engine = "simt" if own_sim else "process"

    shape: LaunchShape = job.launch
    j, k, l, T = shape.j, shape.k, shape.l, shape.tile_width
    (gy, gx), nph = shape.grid, shape.n_phases
    blocks = [tuple(b) for b in job.blocks]
    t0 = time.perf_counter()
    inst, scalars, described = _kernel_of(job, kernel, engine)
    own = inst.params
    # P uninitialised, as cuda.device_array gives it (NaN here): a kernel that adds into P
    # (an atomic, P[r, c] += ...) zeroes it first
    P = np.full((j, l), np.nan, np.float32)
    values = dict(zip(own, (M, N, P, *scalars), strict=True))
    simulated = own_sim or _target.NAME == _target.SIMULATOR
    update, close = _progress_reporter(show, len(blocks) if simulated else gy * gx)
    grid, block = K.grid_dims(j, l, T)
    try:
        log, device = _run_logged(
            inst, values, (grid, block, nph), blocks, job, simulated, update, cancel, max_bytes
        )
    finally:
        close()
    fields = matmul_fields(log, inst, shape, blocks, reads=job.reads)
    meta = _meta(job, inst, log, described, device, simulated, own_sim, user=kernel is not None)
    meta["elapsed_s"] = round(time.perf_counter() - t0, 3)
    from vizmm_kernels import codes

    spread = _detail_spread(fields["barrier_clock"], blocks, (gy, gx, nph), T, codes)
    if job.aggregated:
        meta["spread_from"] = "detail blocks"
    summaries = _summarise_spread(spread, codes, job.aggregated, meta, (gy, gx, nph))
    p_name = own[2] if kernel is not None else inst.global_arrays[-1]
    P_out = np.asarray(log.outputs.get(p_name, P)).reshape(j, l).astype(np.float32)
    r = log.reads
    g = list(own[:2]) if kernel is not None else inst.global_arrays
    return Trace(
        meta=meta,
        M=M,
        N=N,
        P=P_out,
        detail_blocks=np.asarray(blocks, np.int32).reshape(-1, 2),
        loads=fields["loads"],
        pvalue=fields["pvalue"],
        barrier_tick=fields["barrier_tick"],
        barrier_clock=fields["barrier_clock"],
        p_write=fields["p_write"],
        block_info=log.block_info,
        m_reads=r[g[0]].reshape(j, k),
        n_reads=r[g[1]].reshape(k, l),
        zero_fills=fields["zero_fills"],
        log_events=log.events,
        log_values=log.values,
        log_counts=log.counts,
        **summaries,
        **(
            {"shared_reads": fields["shared_reads"], "read_values": fields["read_values"]}
            if job.reads
            else {}
        ),
    )


def _kernel_of(job, kernel, engine: str) -> tuple:
    """The instrumented kernel, its scalar arguments and ``(source, first line, figure)``.

    The book's ``job.launch.kernel`` when ``kernel`` is None, else the user's,
    which takes ``(M, N, P, Width)`` or ``(M, N, P, j, k, l)``.
    """
    import vizmm_kernels as K

    from .launcher import plain_source

    shape: LaunchShape = job.launch
    name, j, k, l, T = shape.kernel, shape.j, shape.k, shape.l, shape.tile_width
    if kernel is None:
        inst = book_kernel(name, T, job.drop_barrier, shared_loads=job.reads, engine=engine)
        described = (plain_source(name), 1, KERNEL_SPECS[name].figure)
        return inst, K.launch_dims(name, j, k, l, T), described
    inst = I.instrument(
        kernel,
        shared_loads=job.reads,
        constants=job.constants or None,
        terms=job.reads,
        first_arrays=3,
        engine=engine,
    )
    described = (inst.source, inst.first_line, f"user kernel {inst.name}")
    own = inst.params
    if len(own) == 4:
        scalars: tuple = (k,)
    elif len(own) == 6:
        scalars = (j, k, l)
    else:
        raise I.InstrumentError(
            f"kernel {inst.name}({', '.join(own)}) must take (M, N, P, Width) or (M, N, P, j, k, l)"
        )
    return inst, scalars, described


def _run_logged(inst, values, dims, blocks, job, simulated, update, cancel, max_bytes) -> tuple:
    """The access log of one run and the GPU's properties (none in a simulator).

    A known failure inside the compiler or the driver is one line
    (:class:`~vizmm.record.targets.GPUUnavailableError`).
    """
    from vizmm_kernels import _target

    from .targets import GPUUnavailableError, gpu_error

    grid, block, nph = dims
    device = {}
    try:
        if not simulated:
            dev = _target.cuda.get_current_device()
            device = {
                "device_name": dev.name.decode() if isinstance(dev.name, bytes) else dev.name,
                "sm_count": int(dev.MULTIPROCESSOR_COUNT),
                "compute_capability": list(dev.compute_capability),
            }
        log = I.run(
            inst,
            values,
            grid,
            block,
            blocks,
            max_bytes=max_bytes,
            aggregated=job.aggregated,
            turns=bool(job.reads or job.drop_barrier),
            update=update,
            cancel=cancel,
            phases=nph,
            schedule=job.schedule,
        )
    except Exception as exc:  # a known failure inside the compiler or the driver
        line = (
            None
            if simulated or isinstance(exc, I.InstrumentError)
            else gpu_error(exc, _target.NAME)
        )
        if line is None:
            raise
        raise GPUUnavailableError(line) from exc
    return log, device


def _meta(job, inst, log, described, device, simulated, own_sim, user: bool) -> dict:
    """The recording's ``meta`` (all but its time taken and barrier summaries)."""
    from vizmm_kernels import _target

    from .launcher import _versions
    from .targets import OWN

    shape: LaunchShape = job.launch
    source, first_line, figure = described
    meta = {
        "kernel": shape.kernel,
        "figure": figure,
        "source": source,
        "source_first_line": first_line,
        "tile_width": shape.tile_width,
        "j": shape.j,
        "k": shape.k,
        "l": shape.l,
        "n_detail": len(job.blocks),
        "aggregated": job.aggregated,
        "seed": job.seed,
        "inputs": job.inputs,
        **({"tile_width_from": job.tile_width_from} if job.tile_width_from is not None else {}),
        "versions": _versions(),
        "target": (
            {"name": OWN, "version": _versions().get("vizmm", "unknown")}
            if own_sim
            else {"name": _target.NAME, "version": _target.VERSION}
        ),
        "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "backend": "simulator" if simulated else "gpu",
        **device,
        "recorder": "instrumenter",
        "access_log": {
            "threads": int(log.events.shape[1]),
            "cap": int(log.events.shape[2]),
            "fields": list(D.FIELDS),
            "arrays": [{"name": a.name, "space": a.space} for a in inst.arrays],
            # the variable whose value the log carries beside each event (None: none)
            "accumulator": inst.accumulator,
        },
        "instrument_s": round(inst.seconds, 3),
    }
    if user:  # a kernel of the user's own: its name (absent: a book kernel)
        meta["user_kernel"] = inst.name
    if job.drop_barrier or job.reads:
        meta["drop_barrier"] = list(job.drop_barrier)
        meta["reads_recorded"] = bool(job.reads)
        if simulated:
            meta["sim_schedule"] = job.schedule if own_sim else "turns"
    if simulated:
        blocks = [tuple(b) for b in job.blocks]
        meta["simulated_blocks"] = [list(b) for b in blocks] if job.aggregated else "all"
    if log.notes:  # vizmm's simulator: barriers some threads did not reach
        meta["barrier_notes"] = list(log.notes[:20])
    return meta


def _detail_spread(clock, blocks, dims, T, codes) -> np.ndarray:
    """The raw barrier spread (gy, gx, nph, 2, 3) from the detail blocks' barrier clocks.

    Per detail block, phase and barrier: the first and last arrival and the
    last release of lane 0 of each warp (``%clock64``), as the large view
    reads them; every other block (and every block without clocks: the
    simulator) keeps ``NO_CLOCK``.
    """
    gy, gx, nph = dims
    spread = np.full((gy, gx, nph, 2, 3), codes.NO_CLOCK, np.int64)
    if not len(blocks) or not nph:
        return spread
    flat = clock.reshape(len(blocks), nph, 2, 2, T * T)
    lanes = flat[..., np.arange(0, T * T, 32)]  # lane 0 of each warp
    arrive, release = lanes[:, :, :, 0], lanes[:, :, :, 1]
    ok = (arrive >= 0).all(axis=-1) & (release >= 0).all(axis=-1)
    big = np.iinfo(np.int64).max
    first = np.where(ok, np.where(arrive >= 0, arrive, big).min(axis=-1), codes.NO_CLOCK)
    last = np.where(ok, arrive.max(axis=-1), codes.NO_CLOCK)
    out = np.where(ok, release.max(axis=-1), codes.NO_CLOCK)
    b = np.asarray(blocks, np.int64).reshape(-1, 2)
    spread[b[:, 0], b[:, 1], :, :, 0] = first
    spread[b[:, 0], b[:, 1], :, :, 1] = last
    spread[b[:, 0], b[:, 1], :, :, 2] = out
    return spread
