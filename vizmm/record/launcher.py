"""A recording's job, its launch through the instrumenter, and the Trace's barrier summaries.

Every kernel, the book's and a user's, is recorded through the instrumenter
(:mod:`.instrument_trace`): the plain kernel as printed, rewritten to log
its accesses. Imports numba (through :mod:`vizmm_kernels`) inside the
functions that launch, so that importing this module does not fix numba's
mode.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import re
import sys

import numpy as np

from ..trace import MAX_STORED_SPREAD, WAIT_BINS, LaunchShape, Trace

__all__ = ["Job", "launch", "plain_source"]


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
    backend : {'simulator', 'numba-sim', 'gpu', 'gpu-legacy'}
    inputs : {'seeded', 'given'}
        Whether M and N came from ``seed`` or from the caller.
    drop_barrier : tuple of int
        The barriers removed (barrier lab); empty keeps both.
    reads : bool
        Record every k-loop read of Mds / Nds.
    tile_width_from : str, optional
        How Fig. 5.14 chose TILE_WIDTH from a device.
    target : str
        What runs it (:data:`vizmm.record.targets.TARGETS`): 'numba-cuda-mlir',
        'numba-cuda', 'numba-cuda-simulator' or 'vizmm-simulator'; by default
        the backend's.
    user_kernel : str
        ``"file.py:name"`` of a user's kernel, recorded through the
        instrumenter (:mod:`vizmm.record.instrument_trace`); empty for the
        book's kernel ``launch.kernel``.
    constants : dict of str to int, float or bool
        Module constants of a user's kernel file overridden for this
        recording (a grading case's TILE_WIDTH); empty for none.
    schedule : {'threads', 'warps'}
        vizmm's simulator: who runs when between barriers
        (:mod:`vizmm.record.simt`); 'threads' is what Numba's simulator did in
        turns.
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
    constants: dict = dataclasses.field(default_factory=dict)
    schedule: str = "threads"

    def __post_init__(self):
        if not self.target:  # the backend's target, as vizmm.record.targets resolves it
            from .targets import OWN, SIMULATOR, Software, gpu_target

            target = {"simulator": OWN, "numba-sim": SIMULATOR}.get(self.backend)
            object.__setattr__(self, "target", target or gpu_target(self.backend, Software.here()))

    def to_json(self) -> str:
        """Every field but ``blocks`` (a worker gets those in an array), as JSON."""
        fields = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        del fields["blocks"]
        return json.dumps(dict(fields, launch=dataclasses.asdict(self.launch)))

    @classmethod
    def from_json(cls, text: str, blocks: list) -> Job:
        """The job that :meth:`to_json` wrote, with its ``blocks``.

        Parameters
        ----------
        text : str
            What :meth:`to_json` wrote.
        blocks : list of (int, int)
            The blocks (by, bx) to record.
        """
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


def launch(job: Job, M, N, show, cancel=None) -> Trace:
    """Record ``job`` through the instrumenter and return its Trace.

    Parameters
    ----------
    job : Job
        What to record (launch, blocks, backend, mode).
    M, N : ndarray of float32
        The inputs, (j, k) and (k, l).
    show : bool or callable
        True shows a progress bar, a callable gets ``(done, total)``.
    cancel : threading.Event, optional
        Stops a simulator run before its next block with
        :class:`~vizmm.record.admission.RecordingCancelled`.
    """
    from .instrument_trace import launch as instrumented

    return instrumented(job, M, N, show, cancel, kernel=job.user_kernel or None)


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
    """The plain kernel's source as a student reads it (the body of ``make_plain``).

    Parameters
    ----------
    kernel : str
        A book kernel of :data:`vizmm.trace.KERNELS`.
    """
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
