"""The views a finding's marks and a question's picks may name come from one registry.

The replay cannot import the views' registry (vizmm/render/views/ is a layer
above it), so the two flags it needs live in vizmm/replay/view_roles.py and
the views' specs read them there. The oracles: the tuples the replay spelled
out by hand before (written here literally) and the views' registry.
"""

import pytest

from vizmm.render import views
from vizmm.replay import findings, questions, view_roles


@pytest.fixture
def registries(monkeypatch):
    """Both registries, restored after the test (a test may register a view and its role)."""
    monkeypatch.setattr(view_roles, "_REGISTRY", dict(view_roles._REGISTRY))
    monkeypatch.setattr(views, "_REGISTRY", dict(views._REGISTRY))
    monkeypatch.setattr(views, "_derived", {})
    return views, view_roles


def test_the_views_a_question_asks_to_click_are_the_pickable_ones_as_written_before():
    assert questions.VIEWS == ("M", "N", "Mds", "Nds", "threads", "choice")
    assert questions.VIEWS == (*views.names(pickable=True), "choice")
    assert questions.VIEWS[:-1] == view_roles.names(pickable=True)


def test_the_views_a_mark_may_name_are_the_markable_ones_as_written_before():
    assert findings.MARK_VIEWS == ("M", "N", "P", "Mds", "Nds", "threads")
    assert findings.MARK_VIEWS == views.names(markable=True)
    assert findings.MARK_VIEWS == view_roles.names(markable=True)
    # each markable view draws its marks from a finding source of its own
    for name in findings.MARK_VIEWS:
        assert views.source_names()[name][-1] == f"{name}_finding"


def test_a_view_without_a_role_is_neither_marked_nor_picked():
    for spec in views.all_views(hosted=True):
        if spec.name not in findings.MARK_VIEWS:
            assert not spec.markable and not spec.pickable, spec.name
            assert f"{spec.name}_finding" not in views.source_names().get(spec.name, ())
    assert view_roles.role("caption") == view_roles.ViewRole("caption")


def test_a_view_registered_with_a_role_is_marked_and_picked_with_nothing_else_edited(registries):
    spec = views.register(
        views.ViewSpec(name="Pds", order=6, aspects=("slots",), sources={"Pds": "slots"})
    )
    assert not spec.markable and "Pds" not in views.names(markable=True)
    view_roles.register(view_roles.ViewRole("Pds", markable=True, pickable=True))
    assert spec.markable and spec.pickable
    assert "Pds" in views.names(markable=True) and "Pds" in views.names(pickable=True)
    assert view_roles.names(markable=True)[-1] == "Pds"
    assert views.source_names()["Pds"] == ("Pds", "Pds_finding")
    assert views.source_kind("Pds_finding") == "finding"


def test_a_role_is_registered_once(registries):
    with pytest.raises(ValueError, match="registered already"):
        view_roles.register(view_roles.ViewRole("M"))
