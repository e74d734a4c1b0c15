"""``vizmm.check``: record a kernel on seeded small integers and say what it did wrong.

The recording is :func:`vizmm.record` through the instrumenter with every
shared load logged; the findings are :func:`vizmm.analysis.check.findings`
over the trace's access log (PMPP 4th ed., Sections 5.3-5.5).
"""

from __future__ import annotations

from collections.abc import Callable

from .analysis.check import CheckReport, Finding, findings
from .record import RecordError, record

__all__ = ["CheckReport", "Finding", "check"]

#: The largest launch check records (threads): the simulator runs one Python thread each.
MAX_CHECK_ELEMENTS = 64 * 64


def check(
    kernel: str | Callable,
    j: int | None = None,
    k: int | None = None,
    l: int | None = None,
    *,
    width: int | None = None,
    tile_width: int,
    backend: str = "auto",
    seed: int = 0,
) -> CheckReport:
    """Record ``kernel`` on seeded small-integer matrices and report what went wrong.

    Parameters
    ----------
    kernel : callable or str
        A ``@cuda.jit`` kernel: the function, its source text, or
        ``"file.py:name"`` (run in a worker process under limits). It takes
        ``(M, N, P, Width)`` (square) or ``(M, N, P, j, k, l)``, one thread
        per P element in blocks of TILE_WIDTH x TILE_WIDTH threads (see
        :func:`vizmm.record`).
    j, k, l : int, optional
        M is j x k, N is k x l, P is j x l.
    width : int, optional
        ``j = k = l = width`` (the book's square Width).
    tile_width : int
        TILE_WIDTH, 1 to 32.
    backend : {'auto', 'simulator', 'gpu', 'gpu-legacy'}
    seed : int
        Seed of the inputs: random integers 0..9, so M·N is exact in float32.

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
        P elements.
    """
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
        )
    except RecordError:
        raise
    except ValueError as exc:  # the instrumenter's refusals (InstrumentError)
        raise RecordError(str(exc)) from None
    found = findings(trace)
    return CheckReport(
        ok=not any(f.severity == "error" for f in found), trace=trace, findings=found
    )
