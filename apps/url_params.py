"""A page's 0-based choice shown 1-based in its URL (as the page numbers steps and findings)."""

from __future__ import annotations

from collections.abc import Callable

import param

__all__ = ["link_one_based"]


def link_one_based(
    obj: param.Parameterized,
    name: str,
    url_name: str,
    on_url: Callable[[int], None] | None = None,
) -> None:
    """Keep ``obj.<url_name>`` (synced to the URL) equal to ``obj.<name> + 1``, both ways.

    A change of ``name`` sets ``url_name``; a change of ``url_name`` that did
    not come from there (a URL the visitor opened or edited) hands the
    0-based value to ``on_url``, by default setting ``name``.

    Parameters
    ----------
    obj : param.Parameterized
        The page's state.
    name : str
        Its 0-based integer parameter (a step, a finding; -1 may mean none).
    url_name : str
        Its 1-based integer parameter, the one ``pn.state.location`` syncs.
    on_url : callable, optional
        ``on_url(value)`` with ``url_name``'s value minus 1, instead of setting
        ``name``.
    """
    syncing = False

    def to_url(event: param.parameterized.Event) -> None:
        nonlocal syncing
        if getattr(obj, url_name) != event.new + 1:
            syncing = True
            try:
                setattr(obj, url_name, event.new + 1)
            finally:
                syncing = False

    def from_url(event: param.parameterized.Event) -> None:
        if not syncing:
            if on_url is None:
                setattr(obj, name, event.new - 1)
            else:
                on_url(event.new - 1)

    obj.param.watch(to_url, [name])
    obj.param.watch(from_url, [url_name])
