"""``vizmm.check``: record a kernel on seeded small integers and say what it did wrong.

The recording is :func:`vizmm.record` through the instrumenter with every
shared load logged; the findings are :func:`vizmm.analysis.check.findings`
over the trace's access log (PMPP 4th ed., Sections 5.3-5.5).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from .analysis.check import CheckReport, Finding, findings
from .record import RecordError, record

__all__ = ["CheckReport", "Finding", "check"]

#: The largest matrix check records (elements): every thread is logged in detail, and at
#: 256 x 256 vizmm's simulator records Fig. 5.13's every access in seconds; a log over
#: the recording's byte limit is refused before anything runs.
MAX_CHECK_ELEMENTS = 256 * 256


def check(
    kernel: str | Callable,
    j: int | None = None,
    k: int | None = None,
    l: int | None = None,
    *,
    width: int | None = None,
    tile_width: int | None = None,
    backend: str = "auto",
    seed: int = 0,
    constants: Mapping[str, int | float | bool] | None = None,
    tile_width_name: str = "TILE_WIDTH",
    schedule: str = "threads",
) -> CheckReport:
    """Record ``kernel`` on seeded small-integer matrices and report what went wrong.

    Parameters
    ----------
    kernel : callable or str
        A ``@cuda.jit`` kernel: the function, its source text, or
        ``"file.py:name"`` (read, never run: :mod:`vizmm.record.frontend`;
        what records is code generated from its checked tree). It takes
        ``(M, N, P, Width)`` (square) or ``(M, N, P, j, k, l)``, one thread
        per P element in blocks of TILE_WIDTH x TILE_WIDTH threads (see
        :func:`vizmm.record`).
    j, k, l : int, optional
        M is j x k, N is k x l, P is j x l.
    width : int, optional
        ``j = k = l = width`` (the book's square Width).
    tile_width : int, optional
        TILE_WIDTH, 1 to 32 (blocks of TILE_WIDTH x TILE_WIDTH threads).
        None takes the kernel file's own ``TILE_WIDTH`` constant.
    backend : {'auto', 'simulator', 'numba-sim', 'gpu', 'gpu-legacy'}
    seed : int
        Seed of the inputs: random integers 0..9, so M·N is exact in float32.
    constants : mapping of str to number, optional
        Module constants of the kernel's file to override (what a grading
        case does to ``TILE_WIDTH``).
    tile_width_name : str
        The name of the file's TILE_WIDTH constant (an assignment may use
        another).
    schedule : {'threads', 'warps'}
        vizmm's simulator: the order threads run in between barriers, what a
        racing read finds (see :func:`vizmm.record`).

    Returns
    -------
    CheckReport
        ``ok`` (no finding is an error), ``trace`` (the recording, with its
        access log) and ``findings``, ordered by when they happened.

    Raises
    ------
    RecordError
        For bad sizes, tile width, backend or seed, a kernel that cannot be
        instrumented or loaded, or a launch over :data:`MAX_CHECK_ELEMENTS`
        P elements; a file whose TILE_WIDTH the kernel uses and that differs
        from ``tile_width`` (one line naming both).
    """
    read = _read(kernel)  # a file read once (never run): its TILE_WIDTH and its barriers
    tile_width = _tile_width(read, tile_width, constants, tile_width_name)
    backend = _backend(read, backend)
    if width is not None and all(v is None for v in (j, k, l)):
        j = k = l = width
        width = None
    for name, v in (("j", j), ("k", k), ("l", l)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise RecordError(
                f"check needs the sizes as integers >= 1 (j, k, l or width); {name} is {v!r}"
            )
    assert isinstance(j, int) and isinstance(k, int) and isinstance(l, int)  # checked above
    if j * l > MAX_CHECK_ELEMENTS or j * k > MAX_CHECK_ELEMENTS or k * l > MAX_CHECK_ELEMENTS:
        raise RecordError(
            f"check records every thread in detail: M {j}x{k}, N {k}x{l} is over its "
            f"{MAX_CHECK_ELEMENTS} elements a matrix; a small launch shows the same mistakes"
        )
    try:
        trace = record(
            j,
            k,
            l,
            tile_width=tile_width,
            kernel=kernel,
            backend=backend,
            seed=seed,
            reads=True,
            quiet=True,
            constants=constants,
            schedule=schedule,
        )
    except RecordError:
        raise
    except ValueError as exc:  # the instrumenter's refusals (InstrumentError)
        raise RecordError(str(exc)) from None
    found = findings(trace)
    return CheckReport(
        ok=not any(f.severity == "error" for f in found), trace=trace, findings=found
    )


def _read(kernel):
    """A ``"file.py:name"`` as the front end reads it; anything else as given."""
    from .record.frontend import KernelRejected, read_kernel

    if isinstance(kernel, str) and ".py:" in kernel and "def " not in kernel:
        path, _, name = kernel.rpartition(":")
        try:
            return read_kernel(path, name)
        except KernelRejected as exc:
            raise RecordError(str(exc)) from None
    return kernel


def _backend(kernel, backend: str) -> str:
    """The backend to record on: the simulator where a skipped barrier could hang a GPU."""
    from .record.divergence import backend_for
    from .record.frontend import KernelSource

    if isinstance(kernel, KernelSource):
        return backend_for(kernel, backend)
    return backend


def _tile_width(kernel, tile_width, constants, name) -> int:
    """``tile_width``, or the file's own; a file's TILE_WIDTH that disagrees is one line."""
    from .record.frontend import KernelSource

    ks = _read(kernel)
    if isinstance(ks, KernelSource) and ks.path != "<kernel source>":
        path = ks.path
        own = ks.constants.get(name)
        overridden = constants is not None and name in constants
        if isinstance(own, int) and not isinstance(own, bool) and ks.uses(name) and not overridden:
            if tile_width is None:
                return own
            if own != tile_width:
                line = ks.constant_lines.get(name)
                where = f" (line {line})" if line else ""
                raise RecordError(
                    f"{path} sets {name} = {own}{where} but the launch asks for TILE_WIDTH "
                    f"{tile_width}: leave --tile-width out to use the file's {own}, or set "
                    f"{name} = {tile_width} in the file"
                )
        if tile_width is None and overridden and constants is not None:
            return int(constants[name])
    if tile_width is None:
        raise RecordError(
            f"give TILE_WIDTH (--tile-width): the kernel does not set a constant {name}"
        )
    return tile_width
