"""The kinds of finding of ``vizmm.check``, each registered once with everything said of it.

A :class:`FindingKind` holds what every part of vizmm needs to know of one
kind of finding (:class:`vizmm.analysis.check.Finding`): its name (the
finding's ``kind``), its severity, its noun for one and for several ("1
race", "2 races"), how the replay of its block draws it and where the
replay goes for it (:mod:`vizmm.replay.findings`), and its place in the
order that breaks a tie in time. Adding a kind is one :func:`register`
call; the report's counts, its words, the order of findings and the
replay's marks and steps read the registry.

How a kind is drawn and where the replay goes are named here, not
programmed here (this layer draws nothing and knows no replay):

:data:`DRAWINGS`
    ``'term'``: the factors a thread multiplied and the ones the book's
    kernel multiplies there (Fig. 5.9's ``Mds[ty][k] * Nds[k][tx]``), the
    slots of Mds and Nds they were read from, and the Fig. 5.8 table's
    Pvalue cell; ``'elements'``: each element of M, N, P and each slot of
    Mds, Nds the finding marks, as what went wrong.
:data:`STEPS`
    ``'k loop'``: the k-loop step of its term's phase ``ph`` and ``k`` (a
    term never multiplied shows where P is written); ``'tile load'``: the
    load of the tile it marks (N's when it marks N or Nds only, else M's);
    ``'P written'``: the write of P.
"""

from __future__ import annotations

import dataclasses

__all__ = [
    "DRAWINGS",
    "ERROR",
    "INFO",
    "SEVERITIES",
    "STEPS",
    "WARNING",
    "FindingKind",
    "finding_kind",
    "kind_names",
    "kinds",
    "rank",
    "register",
]

ERROR, WARNING, INFO = "error", "warning", "information"
#: The severities, gravest first: an error makes :attr:`CheckReport.ok` false.
SEVERITIES = (ERROR, WARNING, INFO)
#: How a kind is drawn on its block's replay (see the module docstring).
DRAWINGS = ("term", "elements")
#: Where the replay goes for a finding of a kind (see the module docstring).
STEPS = ("k loop", "tile load", "P written")


@dataclasses.dataclass(frozen=True)
class FindingKind:
    """One kind of finding of ``vizmm.check``: its name, severity, words and drawing.

    Attributes
    ----------
    name : str
        The finding's ``kind`` (``"wrong term"``, ``"race"``, ...).
    severity : {'error', 'warning', 'information'}
        One of :data:`SEVERITIES`.
    one, several : str
        The kind as a counted noun: ``"race"``, ``"races"``.
    drawn : {'term', 'elements'}
        How the replay of its block marks it (:data:`DRAWINGS`).
    step : {'k loop', 'tile load', 'P written'}
        Where the replay of its block goes for it (:data:`STEPS`).
    other_thread : str or None
        What a thread it marks that is not the finding's own is, in words
        (``"the other thread of the race"``); None: the one that stored the
        slot a wrong factor was read from, else ``"involved"``.
    page_note : str
        What a page listing findings adds below its summary, once, when its
        list holds one of this kind: what the list means by the kind
        (Markdown). Empty: nothing.
    """

    name: str
    severity: str
    one: str
    several: str
    drawn: str = "elements"
    step: str = "tile load"
    other_thread: str | None = None
    page_note: str = ""

    def __post_init__(self) -> None:
        for field, value, allowed in (
            ("severity", self.severity, SEVERITIES),
            ("drawn", self.drawn, DRAWINGS),
            ("step", self.step, STEPS),
        ):
            if value not in allowed:
                raise ValueError(
                    f"finding kind {self.name!r}: {field} {value!r} is not one of "
                    f"{', '.join(map(repr, allowed))}"
                )

    def counted(self, n: int) -> str:
        """``n`` and the kind's noun in its number: ``"1 race"``, ``"2 races"``.

        Parameters
        ----------
        n : int
            How many.
        """
        return f"{n:,} {self.one if n == 1 else self.several}"


_REGISTRY: dict[str, FindingKind] = {}


def register(kind: FindingKind) -> FindingKind:
    """Add ``kind`` to the registry, after every kind registered before it.

    Its place is the order that breaks a tie in time between findings
    (:func:`rank`).

    Parameters
    ----------
    kind : FindingKind
        A kind whose name no registered kind has.

    Returns
    -------
    FindingKind
        ``kind`` itself.

    Raises
    ------
    ValueError
        When a kind of that name is registered already.
    """
    if kind.name in _REGISTRY:
        raise ValueError(f"a finding kind named {kind.name!r} is registered already")
    _REGISTRY[kind.name] = kind
    return kind


def finding_kind(name: str) -> FindingKind:
    """The registered kind called ``name``.

    Parameters
    ----------
    name : str
        A finding's ``kind``.

    Raises
    ------
    KeyError
        For a name no kind is registered under, naming those that are.
    """
    try:
        return _REGISTRY[name]
    except KeyError:
        raise KeyError(
            f"no finding kind {name!r}; the kinds are {', '.join(map(repr, _REGISTRY))}"
        ) from None


def kinds() -> tuple[FindingKind, ...]:
    """Every registered kind, in the order a tie in time is broken."""
    return tuple(_REGISTRY.values())


def kind_names() -> tuple[str, ...]:
    """The names of :func:`kinds`, in their order."""
    return tuple(_REGISTRY)


def rank(name: str) -> int:
    """The place of kind ``name`` in the order a tie in time is broken (0 first).

    Parameters
    ----------
    name : str
        A registered kind's name.
    """
    return kind_names().index(finding_kind(name).name)


register(
    FindingKind(
        "race",
        ERROR,
        "race",
        "races",
        other_thread="the other thread of the race",
        page_note=(
            "A *race* here: two accesses of one shared element by different threads of a "
            "block, at least one a store, in the same barrier epoch (no `cuda.syncthreads()` "
            "between them). It is found whatever order the threads ran in, like "
            "compute-sanitizer racecheck's potential hazards, and listed once per block, "
            "element and epoch; racecheck counts hazards per pair of instructions and reports "
            "per shared address, so its counts differ."
        ),
    )
)
register(FindingKind("out of bounds", ERROR, "out-of-bounds access", "out-of-bounds accesses"))
register(FindingKind("wrong term", ERROR, "wrong term", "wrong terms", "term", "k loop"))
register(FindingKind("wrong P", ERROR, "wrong P element", "wrong P elements", step="P written"))
register(FindingKind("uncoalesced", WARNING, "uncoalesced access", "uncoalesced accesses"))
register(FindingKind("bank conflict", WARNING, "bank conflict", "bank conflicts"))
register(
    FindingKind(
        "more global reads than tiling needs",
        INFO,
        "matrix read more often than tiling needs",
        "matrices read more often than tiling needs",
    )
)
