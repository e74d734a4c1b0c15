"""What the replay's data says of the views it is addressed to, by name, each view once.

The replay names views in two places: a finding's marks
(:class:`vizmm.replay.findings.Mark`: an element of M, N or P, a slot of
Mds or Nds, a thread) and a question's picks
(:mod:`vizmm.replay.questions`: what a student clicks). A
:class:`ViewRole` says, for one view, whether a mark may name it
(``markable``) and whether a question may ask to click it (``pickable``).

The views themselves are registered in :mod:`vizmm.render.views`, a layer
above this one (the replay imports nothing of the renderers): a
``ViewSpec``'s ``markable`` and ``pickable`` are read from here, so that
the flag is written once, where the marks and the picks are made. A view
whose cells the replay marks or asks about is registered here by the
replay module that makes them (:func:`register`); every other view has no
role (:func:`role` gives one with both flags False).

The standard library only.
"""

from __future__ import annotations

import dataclasses

__all__ = ["ViewRole", "names", "register", "role", "roles"]


@dataclasses.dataclass(frozen=True)
class ViewRole:
    """What the replay's marks and picks may do with one view.

    Attributes
    ----------
    name : str
        The view's name, as :mod:`vizmm.render.views` registers it (``"M"``,
        ``"Mds"``, ``"threads"``).
    markable : bool
        A finding's mark may name it (:class:`vizmm.replay.findings.Mark`);
        the renderers draw a ``<name>_finding`` source on it.
    pickable : bool
        A question may ask the student to click a cell of it
        (:mod:`vizmm.replay.questions`).
    """

    name: str
    markable: bool = False
    pickable: bool = False


_REGISTRY: dict[str, ViewRole] = {}


def register(view_role: ViewRole) -> ViewRole:
    """Add ``view_role`` to the registry, after every role registered before it.

    Parameters
    ----------
    view_role : ViewRole
        The role of a view no role is registered for yet.

    Returns
    -------
    ViewRole
        ``view_role`` itself.

    Raises
    ------
    ValueError
        When a role for that view is registered already.
    """
    if view_role.name in _REGISTRY:
        raise ValueError(f"a role for view {view_role.name!r} is registered already")
    _REGISTRY[view_role.name] = view_role
    return view_role


def role(name: str) -> ViewRole:
    """The role of view ``name``; a view the replay does not address has both flags False.

    Parameters
    ----------
    name : str
        A view's name.

    Returns
    -------
    ViewRole
    """
    return _REGISTRY.get(name) or ViewRole(name)


def roles() -> tuple[ViewRole, ...]:
    """Every registered role, in the order they were registered."""
    return tuple(_REGISTRY.values())


def names(**flags: bool) -> tuple[str, ...]:
    """The names of the views whose roles have the flags given, in registration order.

    Parameters
    ----------
    **flags : bool
        Fields of :class:`ViewRole` and the value they must have
        (``names(markable=True)``).

    Returns
    -------
    tuple of str
    """
    return tuple(r.name for r in roles() if all(getattr(r, k) == v for k, v in flags.items()))


# The grids of the block replay: every one carries a finding's marks; a question asks for
# clicks on all but P (its answers are elements of M and N, slots and threads).
for _name in ("M", "N", "P", "Mds", "Nds", "threads"):
    register(ViewRole(_name, markable=True, pickable=_name != "P"))
