"""The instrumenter's launch: a rewritten kernel run and its log read (:func:`run`).

The log is sized before it is allocated (the static bound, or a count
launch) and checked against the byte limit; the kernel then runs in
vizmm's simulator, Numba's, or on a GPU (an aggregated recording: the lean
variant over the grid beside the full one over the detail blocks), and
what it wrote is read as a :class:`RawLog`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import itertools
import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from ..trace import access_log as D
from .instrument_ast import InstrumentError
from .instrument_bound import _bound_or_none
from .instrument_lean import LeanLayout, expand_lean_runs, lean_layout

if TYPE_CHECKING:
    from .instrument import Instrumented


@dataclasses.dataclass(frozen=True)
class RawLog:
    """What one launch of an instrumented kernel logged (see :mod:`.instrument_device`).

    Attributes
    ----------
    events : ndarray of int32, (nd, threads, cap, NF)
        Per detailed block (slot), thread (``tid = (tz*bdy + ty)*bdx + tx``)
        and event, the fields :data:`~.instrument_device.FIELDS`.
    values : ndarray of float64, (nd, threads, cap, 2)
        The value loaded or stored, and the accumulator at that moment.
    counts : ndarray of int32, (nd, threads)
        Events per thread (all of them: ``counts <= cap``).
    reads : dict of str to ndarray of int32
        Per global array, how many times each element was read (flat).
    block_info : ndarray of int64, (gy, gx, 6)
        SM, times, clocks and completion order of every block (-1 where not read).
    outputs : dict of str to ndarray
        The global arrays after the launch (P).
    clocks : ndarray of int64, (nd, threads, nbar)
        ``%clock64`` at each barrier arrival (``2 * epoch``) and release
        (``2 * epoch - 1``, the epoch counted after it) of the logged
        threads; -1 where not read (the simulator has no clock).
    zero_fills : ndarray of int32, (gy, gx, phases, arrays)
        Per block, the constants stored into each shared array (its id) as
        the thread's n-th store into it (n < ``phases``); every block counts.
    notes : tuple of str
        vizmm's simulator: each barrier that opened with some threads of a
        block not arrived (they had ended, or waited at another line).
    """

    events: np.ndarray
    values: np.ndarray
    counts: np.ndarray
    reads: dict
    block_info: np.ndarray
    outputs: dict
    clocks: np.ndarray | None = None
    zero_fills: np.ndarray | None = None
    notes: tuple = ()


def decode(ev, vals, counts, cap, arrays) -> tuple[np.ndarray, np.ndarray]:
    """The log as the rewritten kernel left it in device memory, read as rows of FIELDS.

    :func:`vizmm.trace.access_log.unpack_field_major`, the log's one decoder,
    given the arrays' spaces.

    Parameters
    ----------
    ev : ndarray of int32, flat (cap, NF, threads) or longer
        The kernel's ``_ev``.
    vals : ndarray of float64, flat (cap, 2, threads) or longer
        The kernel's ``_vals``.
    counts : ndarray of int32, (threads,)
        Events per thread (at most ``cap``).
    cap : int
        Events per thread the log had room for.
    arrays : sequence of ArrayInfo
        The arrays the log names, by id (their ``space``: global or shared).

    Returns
    -------
    events : ndarray of int32, (threads, cap, NF)
        Per thread and event, the fields :data:`~vizmm.trace.access_log.FIELDS`; zero past
        the thread's count.
    values : ndarray of float64, (threads, cap, 2)
        The value loaded or stored (0.0 for a barrier and the end) and the accumulator.
    """
    return D.unpack_field_major(ev, vals, counts, cap, _spaces(arrays))


def _spaces(arrays) -> list[str]:
    """Per array id, its space (``'global'`` or ``'shared'``)."""
    return [a.space for a in arrays]


#: Bytes one logged event takes (its int32 fields and two float64 values).
EVENT_BYTES = D.NF * 4 + 16


def log_bytes(cap: int, threads: int) -> int:
    """Bytes of a log of ``cap`` events for each of ``threads`` threads.

    Parameters
    ----------
    cap : int
        Events per thread.
    threads : int
        Threads logged (detail blocks times threads per block).

    Returns
    -------
    int
        ``cap * threads *`` :data:`EVENT_BYTES` (the int32 fields and the two
        float64 values of each event), in bytes.
    """
    return int(cap) * int(threads) * EVENT_BYTES


def _records(
    inst, grid, block, blocks, cap, arrays, aggregated, nbar=0, phases=0, remap=False, rows=False
):
    """The arguments the full variant takes after the kernel's own, by name (host arrays).

    ``remap``: the launch runs only ``blocks`` (a grid of ``len(blocks)``
    blocks reading their place from the block table ``_btab``); it counts
    no reads nor zero-fills (the lean variant did) and its block info is
    thrown away. ``rows``: the simulator's log, a list of rows
    (:data:`~.instrument_device.SIM_ROW`) that :func:`_lay_out` turns into
    the arrays a GPU fills, its counts a list, its ``cap`` an int and its
    read counters lists of the indices read.
    """
    gx, gy = grid
    nthreads = block[0] * block[1] * (block[2] if len(block) > 2 else 1)
    nd = len(blocks)
    detail = np.full((gy, gx), -1, np.int32)
    for i, (by, bx) in enumerate(blocks):
        detail[by, bx] = i
    narr = len(inst.arrays)
    rec: dict[str, Any] = dict(
        _detail=detail,
        _ev=[] if rows else np.zeros(max(nd * nthreads * cap * D.NF, 1), np.int32),
        _vals=np.zeros(1 if rows else max(nd * nthreads * cap * 2, 1), np.float64),
        # the simulator: Python ints, cheaper to work on per event than NumPy's scalars
        _cnt=[0] * max(nd * nthreads, 1) if rows else np.zeros(max(nd * nthreads, 1), np.int32),
        _cap=int(cap) if rows else np.int32(cap),
        # the simulator: a counter per detail block, its next value taken without a lock
        _ticks=[itertools.count() for _ in range(max(nd, 1))]
        if rows
        else np.zeros(max(nd, 1), np.int32),
        _blk=np.full(gy * gx * 6, -1, np.int64),
        _seq=np.zeros(1, np.int32),
        _clk=np.full(max(nd * nthreads * nbar, 1), -1, np.int64),
        _nbar=np.int32(nbar),
        _zf=np.zeros(0 if remap else gy * gx * phases * narr, np.int32),
        _zph=np.int32(phases),
        _btab=np.asarray(blocks, np.int32).reshape(-1) if remap else np.zeros(0, np.int32),
        _gdx=np.int32(gx),
        _gdy=np.int32(gy),
    )
    for g in inst.global_arrays:
        # the simulator: the flat index of each read, counted after the launch
        rec[f"_reads_{g}"] = [] if rows else np.zeros(0 if remap else arrays[g].size, np.int32)
    return rec


def _lay_out(rows, threads: int, cap: int) -> tuple[np.ndarray, np.ndarray]:
    """The simulator's rows of the log laid out as a GPU's kernel writes the log.

    Parameters
    ----------
    rows : list of tuple
        One row per event stored (:data:`~.instrument_device.SIM_ROW`).
    threads : int
        Threads logged (detail blocks times threads per block).
    cap : int
        Events per thread the log had room for.

    Returns
    -------
    ev : ndarray of int32, flat (cap, NF, threads)
        The packed word and the fields ``idx`` to ``tick``; the line, flag
        and array are in the word, as a GPU leaves them (:func:`decode`).
    vals : ndarray of float64, flat (cap, 2, threads)
        The value and the accumulator.
    """
    nf = D.NF
    ev = np.zeros(max(threads * cap * nf, 1), np.int32)
    vals = np.zeros(max(threads * cap * 2, 1), np.float64)
    if not rows:
        return ev, vals
    # float64 holds every int32 field exactly, and the values as the kernel gave them
    table = np.array(rows, np.float64)
    t, n = table[:, 0].astype(np.int64), table[:, 1].astype(np.int64)
    at = n * nf * threads + t
    ev[at + D.OP * threads] = table[:, 2]
    for col, field in enumerate(range(D.IDX, D.TICK + 1), start=3):
        ev[at + field * threads] = table[:, col]
    at = n * 2 * threads + t
    vals[at] = table[:, -2]
    vals[at + threads] = table[:, -1]
    return ev, vals


@contextlib.contextmanager
def priority_stream(cuda):
    """A stream of the device's greatest priority, for the detail blocks' launch; destroyed after.

    An aggregated recording enqueues the lean variant over the whole grid
    first, then the full variant over the detail blocks on a second stream.
    On an ordinary stream the detail blocks wait until the lean launch's last
    blocks have been dispatched, and then run after it; on a stream of
    greater priority the GPU dispatches them as soon as an SM has room, so
    they run beside the lean launch (CUDA C++ Programming Guide, "Stream
    Priorities"; ``benchmarks/launch_order_variants.py`` times both).

    Parameters
    ----------
    cuda : module
        The target's ``numba.cuda`` (numba-cuda or numba-cuda-mlir), its
        context current on this thread.

    Yields
    ------
    stream or None
        The stream, through the target's public ``cuda.external_stream``;
        None where the CUDA driver bindings (``cuda.bindings``) are not
        importable or refuse, and the caller takes an ordinary stream.
    """
    err, ok = None, 0
    try:
        from cuda.bindings import driver

        ok = driver.CUresult.CUDA_SUCCESS
        err, _least, greatest = driver.cuCtxGetStreamPriorityRange()
        if err == ok:
            err, handle = driver.cuStreamCreateWithPriority(0, greatest)
    except Exception:  # noqa: BLE001 - no bindings, or no driver: an ordinary stream does
        err = None
    if err != ok:
        yield None
        return
    try:
        yield cuda.external_stream(int(handle))
    finally:
        driver.cuStreamSynchronize(handle)
        driver.cuStreamDestroy(handle)


def run(
    inst: Instrumented,
    args: Mapping[str, object],
    grid,
    block,
    blocks,
    *,
    max_bytes: int = 1 << 30,
    aggregated: bool = False,
    turns: bool = False,
    update=None,
    cancel=None,
    phases: int = 0,
    schedule: str = "threads",
) -> RawLog:
    """Launch ``inst`` and return its log (see :class:`RawLog`).

    In the simulator: the full variant, once (twice when its events must be
    counted first), over the grid or, ``aggregated``, over ``blocks`` only.
    On a GPU, not aggregated: the full variant over the grid. On a GPU,
    aggregated: the lean variant over the whole grid (read counters,
    zero-fills, the blocks' SM and times: nothing per event), then the full
    variant over ``blocks`` only (a grid of ``len(blocks)`` blocks, each
    playing its block from a table; its P stores repeat the lean launch's).

    Parameters
    ----------
    inst : Instrumented
    args : mapping
        The kernel's own arguments by name: arrays (NumPy, copied in, the
        outputs copied back) and scalars.
    grid : (gx, gy)
    block : (bx, by) or (bx, by, bz)
        Threads per block.
    blocks : list of (by, bx)
        The blocks logged per thread.
    max_bytes : int
        The largest log allowed (bytes), checked before it is allocated.
    aggregated : bool
        Run only ``blocks`` in the simulator; on a GPU every block still
        counts its global reads and zero-fills and records its times.
    turns : bool
        Simulator: the threads of a block take turns between barriers
        (:func:`vizmm.record.simulator.run_block_in_turns`).
    update : callable, optional
        ``update(done, total)``: blocks done so far (after each block in the
        simulator; once, ``(1, 1)``, after a GPU launch).
    cancel : threading.Event, optional
        Simulator: checked before each block; once set, the run stops with
        :class:`~vizmm.record.admission.RecordingCancelled`.
    phases : int
        Zero-fills are counted per block for a thread's first ``phases``
        stores into each shared array (0: not counted).
    schedule : {'threads', 'warps'}
        vizmm's simulator: who runs when between barriers (:mod:`.simt`).

    Raises
    ------
    InstrumentError
        When the log would exceed ``max_bytes`` (nothing allocated), an
        argument is missing, or the grid is not 1-D or 2-D.
    """
    from .simt_compile import SimtKernel

    block = tuple(int(b) for b in block)
    arrays = _checked_arrays(inst, args, block)
    launcher = _Launcher(
        inst,
        arrays,
        {p: args[p] for p in inst.params if p not in arrays},
        tuple(grid),
        block,
        list(blocks),
        simt=isinstance(inst.kernel, SimtKernel),
        aggregated=aggregated,
        turns=turns,
        update=update,
        cancel=cancel,
        phases=phases,
        schedule=schedule,
    )
    cap, nbar = launcher.sizes(max_bytes)
    # two_launches: every block counts, lean, beside the detail blocks in full
    rec, outs = launcher.launch(cap, nbar, with_lean=launcher.two_launches)
    return launcher.raw_log(rec, outs, cap, nbar)


def _checked_arrays(inst, args: Mapping[str, object], block: tuple[int, ...]) -> dict:
    """The kernel's global arrays from ``args``, contiguous, checked against what it indexes."""
    missing = [p for p in inst.params if p not in args]
    if missing:
        raise InstrumentError(
            f"kernel {inst.name}({', '.join(inst.params)}) lacks argument(s) {', '.join(missing)}"
        )
    nthreads = math.prod(block)
    if nthreads > 1024 or nthreads < 1:
        raise InstrumentError(
            f"a block of {' x '.join(map(str, block))} = {nthreads} threads cannot be launched "
            "(1 to 1024 threads per block)"
        )
    arrays = {g: np.ascontiguousarray(cast(Any, args[g])) for g in inst.global_arrays}
    for g, info in zip(inst.global_arrays, inst.arrays, strict=False):
        a = arrays[g]
        if a.size == 0:
            raise InstrumentError(f"array {g!r} is empty")
        if a.size >= 2**31 // D.TAG_ARRAYS:
            raise InstrumentError(
                f"array {g!r} has {a.size} elements; the log traces arrays of fewer than "
                f"{2**31 // D.TAG_ARRAYS} elements"
            )
        if info.ndim == 1 and a.ndim != 1:
            arrays[g] = a.ravel()
        elif info.ndim == 2 and a.ndim != 2:
            raise InstrumentError(
                f"kernel {inst.name} indexes {g!r} as {g}[r, c] but it was given with "
                f"{a.ndim} dimension(s)"
            )
    return arrays


class _Launcher:
    """One :func:`run`: the launch's arrays and shape, and how it runs here.

    vizmm's simulator (``simt``), Numba's simulator (``simulated``) or a GPU;
    on a GPU an aggregated recording is two launches (``two_launches``): the
    lean variant over the grid beside the full one over the detail blocks.
    """

    def __init__(
        self, inst, arrays, scalars, grid, block, blocks, *, simt, aggregated, turns, update,
        cancel, phases, schedule,
    ):  # fmt: skip
        self.inst, self.arrays, self.scalars = inst, arrays, scalars
        self.grid, self.block, self.blocks = grid, block, blocks
        self.nd, self.nthreads = len(blocks), math.prod(block)
        self.simt, self.aggregated, self.turns, self.cancel = simt, aggregated, turns, cancel
        self.phases, self.schedule = phases, schedule
        self.update = update or (lambda done, total: None)
        self.cuda: Any = None
        if simt:
            self.simulated = True
        else:
            from vizmm_kernels import _target

            self.simulated = _target.NAME == _target.SIMULATOR
            self.cuda = _target.cuda
        self.sim_blocks = list(blocks) if aggregated else None
        self.two_launches = aggregated and not self.simulated
        self.notes: list[str] = []

    def _ordered(self, outs: dict) -> list:
        """The kernel's own arguments in order: the arrays from ``outs``, then the scalars'."""
        return [outs[p] if p in outs else self.scalars[p] for p in self.inst.params]

    def sizes(self, max_bytes: int) -> tuple[int, int]:
        """Events and barrier clocks per thread, the log checked against ``max_bytes`` first."""
        inst, nd, nthreads = self.inst, self.nd, self.nthreads
        dims = (self.block + (1,) * 3)[:3]
        gdims = (self.grid + (1,) * 3)[:3]
        cap = _bound_or_none(inst.bound, self.scalars, dims, gdims)
        if cap is None:  # count first: the same kernel with no room, every thread counts
            rec, _ = self.launch(0, 0)
            cap = int(rec["_cnt"].max()) if nd else 0
        nbar = _bound_or_none(inst.barrier_bound, self.scalars, dims, gdims)
        nbar = cap if nbar is None else nbar
        if self.simulated:  # the simulator has no %clock64: no room for clocks, none written
            nbar = 0
        need = log_bytes(cap, nd * nthreads) + nbar * nd * nthreads * 8
        if need > max_bytes:
            raise InstrumentError(
                f"the access log would take {need} bytes ({cap} events for each of "
                f"{nd * nthreads} logged threads), over the limit of {max_bytes}; log fewer "
                "blocks (a window) or a smaller launch"
            )
        return cap, nbar

    def launch(self, cap: int, nbar: int, with_lean: bool = False) -> tuple[dict, dict]:
        """Run the kernel once with room for ``cap`` events: its records and outputs."""
        if self.simt:
            return self.simt_launch(cap)
        inst = self.inst
        rec = _records(
            inst,
            self.grid,
            self.block[:2],
            self.blocks,
            cap,
            self.arrays,
            self.aggregated,
            nbar,
            self.phases,
            self.two_launches,
            rows=self.simulated,
        )
        outs = {g: a.copy() for g, a in self.arrays.items()}
        ordered = self._ordered(outs)
        if self.simulated:
            self.numba_sim_launch(rec, ordered, cap)
            return rec, outs
        return self.gpu_launch(rec, ordered, outs, with_lean)

    def simt_launch(self, cap: int) -> tuple[dict, dict]:
        """Run in vizmm's simulator: the log written thread by thread, the reads counted after."""
        from .simt import launch as run_simt

        inst, arrays = self.inst, self.arrays
        rec = _records(
            inst, self.grid, self.block[:2], self.blocks, cap, arrays, self.aggregated, 0,
            self.phases,
        )  # fmt: skip
        for g in inst.global_arrays:
            rec[f"_reads_{g}"] = []
        outs = {g: a.copy() for g, a in arrays.items()}
        done = run_simt(inst.kernel, [*self._ordered(outs), *rec.values()], rec, self.grid,
                        self.block, self.sim_blocks, self.update, inst.dynamic_shared,
                        self.cancel, self.schedule)  # fmt: skip
        self.notes[:] = done.notes
        for g in inst.global_arrays:
            read = rec[f"_reads_{g}"]
            read = np.concatenate(read).astype(np.int64) if read else np.zeros(0, np.int64)
            rec[f"_reads_{g}"] = np.bincount(read, minlength=arrays[g].size).astype(np.int32)
        return rec, outs

    def numba_sim_launch(self, rec: dict, ordered: list, cap: int) -> None:
        """Numba's simulator, block by block: the log's rows laid out as a GPU's."""
        from .simulator import simulate

        inst = self.inst
        simulate(
            inst.kernel,
            self.grid,
            self.block[:2],
            ordered,
            rec,
            blocks=self.sim_blocks,
            update=self.update,
            dynamic_shared=inst.dynamic_shared,
            turns=self.turns,
            cancel=self.cancel,
        )
        rec["_ev"], rec["_vals"] = _lay_out(rec["_ev"], self.nd * self.nthreads, cap)
        rec["_cnt"] = np.asarray(rec["_cnt"], np.int32)
        for g in inst.global_arrays:
            read = np.asarray(rec[f"_reads_{g}"], np.int64)
            size = self.arrays[g].size
            rec[f"_reads_{g}"] = np.bincount(read, minlength=size).astype(np.int32)

    def device_launch(self, kern, launch_grid, ordered, rec, stream=0):
        """Copy the arguments in, launch ``kern`` on ``stream``; what :meth:`fetch` takes."""
        cuda = self.cuda
        d_args = [
            cuda.to_device(a, stream=stream) if isinstance(a, np.ndarray) else a for a in ordered
        ]
        d_rec = {
            k: cuda.to_device(v, stream=stream) if isinstance(v, np.ndarray) else v
            for k, v in rec.items()
        }
        kern[tuple(launch_grid), self.block, stream, self.inst.dynamic_shared](
            *d_args, *d_rec.values()
        )
        return d_args, d_rec

    @staticmethod
    def fetch(d_args, d_rec):
        """After the device is done: the arguments (outputs) and the records, on the host."""
        outs = [d.copy_to_host() if hasattr(d, "copy_to_host") else d for d in d_args]
        rec = {k: v.copy_to_host() if hasattr(v, "copy_to_host") else v for k, v in d_rec.items()}
        return outs, rec

    def lean_launch(self, stream=0, expand: bool = True):
        """The lean variant over the whole grid (two_launches): its arguments and records.

        ``expand=False`` leaves the run expansion (:func:`expand_lean_runs`) to the caller.
        """
        louts = {g: a.copy() for g, a in self.arrays.items()}
        d_args, d_rec = self.device_launch(
            self.inst.lean, self.grid, self._ordered(louts), self.lean_layout.records(), stream
        )
        if expand:
            expand_lean_runs(self.lean_layout, d_rec, stream)
        return d_args, d_rec

    @functools.cached_property
    def lean_layout(self) -> LeanLayout:
        """Where the lean launch's records lie in its two buffers (laid out once)."""
        return lean_layout(self.inst, self.grid, self.arrays, self.phases)

    def gpu_launch(self, rec: dict, ordered: list, outs: dict, with_lean: bool):
        """On a GPU: the full variant (on the detail blocks, beside the lean one on the grid)."""
        inst, cuda, nd = self.inst, self.cuda, self.nd
        launch_grid = (max(nd, 1), 1) if self.two_launches else self.grid
        lean = None
        if with_lean and nd == 0:
            lean = self.fetch(*self.lean_launch())
            cuda.synchronize()
        elif with_lean:
            # The detail blocks' launch and the lean one over the grid run side by side
            # on two streams, each on its own copies of the arrays (a kernel that reads
            # P, say P += ..., sees the same P in both); the outputs are the lean
            # launch's, which ran every block once.
            # The detail blocks' stream has the greater priority: their blocks start as
            # soon as an SM has room, not after the lean launch's last (priority_stream).
            # They are enqueued before the run expansion, which waits for the lean
            # launch anyway. Copied back before the stream is destroyed: an array
            # copied in on a stream keeps it as the default of its later copies.
            with priority_stream(cuda) as s_detail:
                s_lean = cuda.stream()
                lean_dev = self.lean_launch(s_lean, expand=False)
                detail_dev = self.device_launch(
                    inst.kernel, launch_grid, ordered, rec, s_detail or cuda.stream()
                )
                expand_lean_runs(self.lean_layout, lean_dev[1], s_lean)
                cuda.synchronize()
                lean = self.fetch(*lean_dev)
                _, rec = self.fetch(*detail_dev)
                del detail_dev
        elif not (self.two_launches and nd == 0):
            detail_dev = self.device_launch(inst.kernel, launch_grid, ordered, rec)
            cuda.synchronize()
            got, rec = self.fetch(*detail_dev)
            outs = {p: d for p, d in zip(inst.params, got, strict=True) if p in outs}
        if lean is not None:
            got, lean_rec = lean
            lean_rec = self.lean_layout.views(lean_rec)
            outs = {p: d for p, d in zip(inst.params, got, strict=True) if p in outs}
            rec = {**rec, **{f"_lean{k}": v for k, v in lean_rec.items()}}
        self.update(1, 1)
        return rec, outs

    def raw_log(self, rec: dict, outs: dict, cap: int, nbar: int) -> RawLog:
        """The launch's records read as a :class:`RawLog`."""
        inst, nd, nthreads = self.inst, self.nd, self.nthreads
        gx, gy = self.grid
        lean = (
            {k[5:]: v for k, v in rec.items() if k.startswith("_lean_")}
            if self.two_launches
            else None
        )
        counts = rec["_cnt"][: nd * nthreads].reshape(nd, nthreads)
        if (counts > cap).any():
            raise InstrumentError(
                f"kernel {inst.name} logged more events than its bound "
                f"({int(counts.max())} > {cap})"
            )
        counted = lean if lean is not None else rec
        tt = nd * nthreads
        if self.simt:  # written thread by thread (simt.Launch.write): unpacked in place
            events, values = D.unpack(
                rec["_ev"][: tt * cap * D.NF].reshape(tt, cap, D.NF),
                rec["_vals"][: tt * cap * 2].reshape(tt, cap, 2),
                counts.reshape(-1),
                _spaces(inst.arrays),
            )
        else:
            events, values = decode(rec["_ev"], rec["_vals"], counts.reshape(-1), cap, inst.arrays)
        return RawLog(
            events=events.reshape(nd, nthreads, cap, D.NF),
            values=values.reshape(nd, nthreads, cap, 2),
            counts=counts,
            reads={g: counted[f"_reads_{g}"] for g in inst.global_arrays},
            block_info=counted["_blk"].reshape(gy, gx, 6),
            outputs=outs,
            clocks=rec["_clk"][: tt * nbar].reshape(nbar, tt).T.reshape(nd, nthreads, nbar),
            zero_fills=counted["_zf"].reshape(gy, gx, self.phases, len(inst.arrays)),
            notes=tuple(self.notes),
        )
