"""The registry of finding kinds: every kind ``vizmm.check`` emits is registered, and a kind
registered is counted, ordered, drawn and stepped to with nothing else edited.

The oracles: the kinds and severities ``vizmm/analysis/check.py``'s module text
promises (its prose, not its code), the kinds two planted mistakes make the
checker emit, and Fig. 5.8's step order for the replay of a block at TILE_WIDTH 2
(start, then phase 0: load M, load N, barrier 1's arrivals and release, k = 0,
k = 1, ...), as tests/test_findings_view.py derives it.
"""

import dataclasses
import re
from types import SimpleNamespace

import check_kernels as ck
import pytest

import vizmm
from vizmm.analysis import check as C
from vizmm.analysis import finding_kinds as fk

T = 2


@pytest.fixture
def registry(monkeypatch):
    """The registry, restored after the test (a test may register a kind)."""
    monkeypatch.setattr(fk, "_REGISTRY", dict(fk._REGISTRY))
    return fk


@pytest.fixture(scope="module")
def checked():
    return vizmm.check(ck.transposed_tile, width=4, tile_width=T, backend="simulator")


def test_the_kinds_the_checker_describes_are_the_registered_ones():
    promised = dict(
        re.findall(r"^``([^`]+)`` \((error|warning|information)\)$", C.__doc__, re.MULTILINE)
    )
    assert len(promised) == 7
    assert {k.name: k.severity for k in fk.kinds()} == promised


def test_every_kind_the_checker_emits_is_registered():
    import vizmm_kernels as K

    emitted = set()
    for report in (
        # a racing store at 3 x 3: races, a row wrap out of bounds, wrong terms and P,
        # and M read more often than tiling needs
        vizmm.check(ck.racing_store, width=3, tile_width=T, backend="simulator"),
        # thread roles swapped in the loads: uncoalesced requests and bank conflicts
        vizmm.check(K.get_kernel("uncoalesced", 8), width=8, tile_width=8, backend="simulator"),
    ):
        for f in report.findings:
            assert f.severity == fk.finding_kind(f.kind).severity, f
            emitted.add(f.kind)
    assert emitted == set(fk.kind_names())


def test_the_graders_checks_name_registered_kinds():
    from vizmm.grade.judge import CHECK_KINDS

    named = {k for kinds in CHECK_KINDS.values() for k in kinds}
    assert named == set(fk.kind_names())


def test_a_tie_in_time_is_broken_by_the_registry_order(checked):
    # findings at the same time and place sort by kind: the fourth member of `when`
    found = checked.findings
    assert found == sorted(found, key=lambda f: f.when)
    assert {f.kind for f in found} == {"wrong term", "wrong P"}
    for f in found:
        assert f.when[3] == fk.kind_names().index(f.kind)


def test_a_registered_kind_is_counted_ordered_drawn_and_stepped_to(registry, checked):
    from vizmm.replay import Replay
    from vizmm.replay.findings import finding_marks, finding_step

    lost = registry.register(
        fk.FindingKind("lost store", fk.ERROR, "lost store", "lost stores", step="P written")
    )
    stale = registry.register(
        fk.FindingKind(
            "stale tile", fk.WARNING, "stale tile", "stale tiles", other_thread="kept it"
        )
    )
    assert fk.kind_names()[-2:] == ("lost store", "stale tile")
    assert fk.rank("stale tile") == len(fk.kinds()) - 1
    assert lost.counted(1) == "1 lost store"
    assert C.counted(3, "stale tile") == "3 stale tiles"

    meta = {"figure": "k", "j": 4, "k": 4, "l": 4, "tile_width": T}
    found = [
        C.Finding("stale tile", (0, 0), (0, 0), 0, 0, "x", severity="warning"),
        C.Finding("lost store", (0, 0), (0, 0), None, None, "y"),
        C.Finding("race", (0, 0), (0, 0), 0, None, "z"),
    ]
    report = C.CheckReport(False, SimpleNamespace(meta=meta), found)
    assert list(report.counts()) == ["race", "lost store", "stale tile"]
    assert report.summary(first=0).splitlines()[1] == (
        "and 3 more: 1 stale tile, 1 lost store, 1 race."
    )

    # drawn as elements: each marked element what went wrong, in the kind's name;
    # another thread in the kind's words
    f = C.Finding(
        "stale tile",
        (0, 1),
        (1, 0),
        0,
        None,
        "x",
        marks={"Nds": ((1, 1),), "threads": ((1, 0), (0, 1))},
    )
    m = finding_marks(f, 4)
    assert (m.index, m.block, m.thread, m.table) == (4, (0, 1), (1, 0), None)
    assert [(k.view, k.row, k.col, k.role) for k in m.marks] == [
        ("Nds", 1, 1, "wrong"),
        ("threads", 1, 0, "wrong"),
        ("threads", 0, 1, "other"),
    ]
    assert m.marks[0].note == "Nds[1][1]: stale tile" and m.marks[2].note.endswith("kept it")

    # stepped to: a tile load of N only is phase 0's load N (step 2); the write of P the last
    replay = Replay(checked.trace, (0, 0))
    assert finding_step(replay, f) == 2
    assert finding_step(replay, dataclasses.replace(f, marks={"M": ((0, 0),)})) == 1
    assert (
        finding_step(replay, C.Finding("lost store", (0, 0), (0, 0), 0, 0, "y"))
        == len(replay.steps) - 1
    )
    assert stale.step == "tile load"


def test_a_kind_is_registered_once_and_named_in_known_words(registry):
    with pytest.raises(ValueError, match="registered already"):
        registry.register(fk.FindingKind("race", fk.ERROR, "race", "races"))
    with pytest.raises(ValueError, match="severity 'fatal'"):
        fk.FindingKind("x", "fatal", "x", "xs")
    with pytest.raises(ValueError, match="step 'barrier'"):
        fk.FindingKind("x", fk.ERROR, "x", "xs", step="barrier")
    with pytest.raises(KeyError, match="no finding kind 'races'"):
        fk.finding_kind("races")
