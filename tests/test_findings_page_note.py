"""What the findings list says of a kind comes from the kind, not from the page.

The oracle: the words the findings page spelled out by hand for a race
before the kinds were a registry (written here literally), added once below
the summary when the list holds a race and never otherwise.
"""

from types import SimpleNamespace

import pytest

pytest.importorskip("panel")

from vizmm.analysis import finding_kinds as fk  # noqa: E402
from vizmm_apps.findings_view import page_notes  # noqa: E402

#: The page's words for a race before they moved to the kind (apps/findings_view.RACE_WORDS).
RACE_WORDS = (
    "\n\nA *race* here: two accesses of one shared element by different threads of a "
    "block, at least one a store, in the same barrier epoch (no `cuda.syncthreads()` "
    "between them). It is found whatever order the threads ran in, like compute-sanitizer "
    "racecheck's potential hazards, and listed once per block, element and epoch; "
    "racecheck counts hazards per pair of instructions and reports per shared address, "
    "so its counts differ."
)


def _found(*kinds):
    return [SimpleNamespace(kind=k) for k in kinds]


@pytest.fixture
def registry(monkeypatch):
    """The registry, restored after the test (a test may register a kind)."""
    monkeypatch.setattr(fk, "_REGISTRY", dict(fk._REGISTRY))
    return fk


def test_a_race_in_the_list_adds_the_words_the_page_wrote_before_once():
    assert page_notes(_found("race")) == RACE_WORDS
    assert page_notes(_found("wrong term", "race", "race", "wrong P")) == RACE_WORDS
    assert page_notes(_found("wrong term", "bank conflict", "out of bounds")) == ""
    assert page_notes(()) == ""


def test_the_notes_are_the_registered_kinds_notes():
    noted = {k.name: k.page_note for k in fk.kinds() if k.page_note}
    assert noted == {"race": RACE_WORDS[2:]}  # only a race is explained today


def test_a_kind_registered_with_a_note_is_explained_with_nothing_else_edited(registry):
    registry.register(
        fk.FindingKind("stale tile", fk.WARNING, "stale tile", "stale tiles", page_note="*Stale*.")
    )
    assert page_notes(_found("stale tile")) == "\n\n*Stale*."
    # in the registry's order, each once
    assert page_notes(_found("stale tile", "race", "stale tile")) == RACE_WORDS + "\n\n*Stale*."
