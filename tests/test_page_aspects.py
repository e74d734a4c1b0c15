"""A page computes only what it shows: its frames are made of its views' aspects and its status's.

The oracle is the view registry (:mod:`vizmm.render.views`: which views
presenter mode shows, which aspects each view needs) and the whole frame
(``Replay.frame(i)``): every call of an aspect's maker
(``vizmm.replay.frame_aspects.MAKERS``) is counted while a page steps through
a block. A page that does not show the Fig. 5.8 table, the transactions or
the matrices never makes them; switching such a view on makes them; the
status read from a frame of the status's aspects only is the status read
from the whole frame, step by step. No browser, no server.
"""

import importlib.resources
from collections import Counter

import pytest

import vizmm
from vizmm.render import views as view_specs
from vizmm.replay import ASPECT_FIELDS, ASPECTS, frame_aspects
from vizmm.replay.narration import NARRATED_ASPECTS
from vizmm_apps.dashboard import Dashboard
from vizmm_apps.dashboard_state import STATUS_ASPECTS, STATUS_FIELDS, DashboardState

#: The aspects whose making costs most (Fig. 5.8's table, M/N/P, the transactions).
HEAVY = {"table", "matrices", "transactions"}


def fresh(key: str):
    """The shipped trace ``key`` read anew: nothing made of its frames is kept on it yet."""
    return vizmm.load(str(importlib.resources.files("vizmm") / "data" / f"{key}.vizmm"))


@pytest.fixture
def made(monkeypatch):
    """Count the calls of every aspect's maker (aspect -> calls) from here on."""
    calls: Counter = Counter()
    for name, maker in list(frame_aspects.MAKERS.items()):

        def counted(r, at, name=name, make=maker.make):
            calls[name] += 1
            return make(r, at)

        monkeypatch.setitem(frame_aspects.MAKERS, name, maker._replace(make=counted))
    return calls


def state_of(key: str, shows, **params) -> DashboardState:
    """A state opened on a fresh copy of preset ``key``, its frames made for ``shows``."""
    s = DashboardState(**params)
    s.shows = shows
    s.source = key  # not started: nothing is loaded for it
    s.set_trace(key, fresh(key))
    assert s.frame is not None and s.replay is not None, s.message
    return s


def walk(s: DashboardState) -> None:
    """Every step of the block, with the → key."""
    s.handle_key("Home")
    for _ in range(len(s.replay) - 1):
        s.handle_key("ArrowRight")
    assert s.step == len(s.replay) - 1


def test_the_status_aspects_hold_the_fields_it_reads():
    held = {f for a in STATUS_ASPECTS for f in ASPECT_FIELDS[a]}
    assert STATUS_FIELDS <= held
    for aspect in STATUS_ASPECTS:  # none of them for nothing
        assert STATUS_FIELDS & set(ASPECT_FIELDS[aspect]), aspect
    assert not HEAVY & set(STATUS_ASPECTS), "the status needs no heavy view"


@pytest.mark.parametrize(
    ("key", "focus"), [("fig5-8", (0, 1)), ("lab-4x4-drop1", (1, 0)), ("fig5-11", (-1, -1))]
)
def test_status_of_the_status_aspects_is_the_whole_frames(key, focus):
    """The oracle: the status read from whole frames, at every step (lab reads, Pvalue, CGMA)."""
    whole = state_of(key, None, ty=focus[0], tx=focus[1])
    least = state_of(key, lambda: (), ty=focus[0], tx=focus[1])
    assert set(least.frame.aspects) == set(STATUS_ASPECTS)
    assert set(whole.frame.aspects) == set(ASPECTS)
    for i in range(len(whole.replay)):
        whole.go(i)
        least.go(i)
        assert least.status() == whole.status(), i
        assert set(least.frame.aspects) == set(STATUS_ASPECTS)


@pytest.mark.parametrize("name", [s.name for s in view_specs.all_views()])
def test_a_page_of_one_view_makes_only_the_heavy_aspects_it_needs(made, name):
    """Transactions on (the conflict preset has them): only a view that needs them makes them."""
    needs = view_specs.aspects_of([name], always=STATUS_ASPECTS)
    s = state_of("conflict", lambda: needs, transactions=True, granularity="phase")
    walk(s)
    assert HEAVY & set(made) == HEAVY & set(needs), dict(made)
    assert set(needs) <= set(s.frame.aspects)


def test_presenter_mode_never_makes_what_it_does_not_show(made):
    presenter = view_specs.names(presenter=True)
    shown = set(view_specs.aspects_of(presenter, always=(*STATUS_ASPECTS, *NARRATED_ASPECTS)))
    unshown = set(ASPECTS) - shown
    assert "table" in unshown, "presenter mode leaves Fig. 5.8's table out"
    d = Dashboard(served=False)
    d.state.presenter = True
    d.state.set_trace(d.state.source, fresh(d.state.source))
    made.clear()
    walk(d.state)
    assert not unshown & set(made), dict(made)
    assert set(d.state.frame.aspects) == shown

    # the table switched on again (presenter mode off): the frame shown is made again with it
    made.clear()
    d.state.presenter = False
    everything = view_specs.aspects_of(view_specs.names(), always=STATUS_ASPECTS)
    assert set(everything) <= set(d.state.frame.aspects)
    assert made["table"] == 1, dict(made)
    assert "table" in d.scene.views, "the scene drawn from that frame shows the table"
    d.state.handle_key("ArrowLeft")
    assert made["table"] == 2 and set(everything) <= set(d.state.frame.aspects)


# the page's pair menu is made with Panel's `name=` (its label), deprecated for `label=`
@pytest.mark.filterwarnings("ignore:Widget.name is deprecated:PendingDeprecationWarning")
def test_the_side_by_side_page_makes_only_its_scenes_and_counters(made):
    from vizmm_apps.side_by_side import STATUS_ASPECTS as SIDE_STATUS
    from vizmm_apps.side_by_side import SideBySide

    shown = set(view_specs.aspects_of(view_specs.names(presenter=True), always=SIDE_STATUS))
    unshown = set(ASPECTS) - shown
    assert {"table", "source"} <= unshown, "each side shows presenter mode's views"
    page = SideBySide(served=False)
    page.state.pair = "barrier"
    page.state.load()
    both = page.state.lockstep
    assert both is not None, page.state.message
    made.clear()
    for _ in range(len(both) - 1):
        page.state.handle_key("ArrowRight")
    assert page.state.step == len(both) - 1
    assert made, "the frames were made while stepping"
    assert not unshown & set(made), dict(made)
