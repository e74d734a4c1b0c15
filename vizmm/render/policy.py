"""The size policy: which views a trace of a given size affords, for every renderer.

The dashboard and every export ask this module, so they agree on what a large
trace draws.
"""

from __future__ import annotations

from . import views as view_specs

__all__ = [
    "LARGE_ELEMENTS",
    "LIGHT_VIEWS",
    "affordable_views",
    "is_large",
    "view_names",
    "check_known_views",
]

#: M, N and P elements (together) up to which the matrices are drawn element by element.
LARGE_ELEMENTS = 40_000

#: The per-thread views of a large trace: the block's shared memory and threads,
#: no element-by-element M, N, P (the large views show those at block granularity).
LIGHT_VIEWS = view_specs.names(light=True)


def is_large(trace) -> bool:
    """True when drawing M, N and P element by element would be too slow or too small to read.

    That is when M, N and P hold more than :data:`LARGE_ELEMENTS` elements together.

    Parameters
    ----------
    trace : Trace
        Any trace.
    """
    j, k, l = trace.shape
    return j * k + k * l + j * l > LARGE_ELEMENTS


def view_names(views) -> list[str]:
    """A choice of views as a list of names.

    Parameters
    ----------
    views : iterable of str, or str
        View names; a string is split at commas (``"M, Nds"``).

    Returns
    -------
    list of str
        The names, as given (not checked).
    """
    if isinstance(views, str):
        return [v.strip() for v in views.split(",") if v.strip()]
    return list(views)


def check_known_views(views, available, error: type[Exception] = ValueError) -> None:
    """Raise ``error`` naming every view of ``views`` that is not in ``available``.

    Parameters
    ----------
    views : iterable of str
        The view names asked for.
    available : tuple of str
        The renderer's view names.
    error : type of Exception
        The exception to raise.

    Raises
    ------
    error
        ``unknown view(s) 'X'; choose from ...``: the one wording of every renderer
        and export.
    """
    unknown = [v for v in views if v not in available]
    if unknown:
        raise error(
            f"unknown view(s) {', '.join(map(repr, unknown))}; choose from {', '.join(available)}"
        )


def affordable_views(trace, views: tuple[str, ...]) -> tuple[str, ...]:
    """Of ``views`` (a renderer's view names), those a trace of this size can afford.

    Small traces keep every view. Large ones keep :data:`LIGHT_VIEWS`, and
    drop the counters past 16 phases (they list Pvalue after every phase).
    The dashboard and every export use this, so they agree.

    Parameters
    ----------
    trace : Trace
        Any trace.
    views : tuple of str
        A renderer's view names.
    """
    if not is_large(trace):
        return tuple(views)
    light = (
        LIGHT_VIEWS if trace.n_phases <= 16 else tuple(v for v in LIGHT_VIEWS if v != "counters")
    )
    return tuple(v for v in views if v in light)
