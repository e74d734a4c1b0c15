"""What ``vizmm serve`` does to its server processes besides serving (apps/parts.py).

* Built pages are frozen out of the collector's walks and collected when
  pages close: the oracle is Python's collector (a weak reference to an
  object of a garbage cycle dies only when the cycle is collected).
* A dashboard served by ``vizmm serve`` answers a page that speaks Bokeh's
  protocol with no browser (``benchmarks/protocol_page.py``, what the load
  test's ``--clients protocol`` uses): ready, and one step per key press.
"""

import asyncio
import gc
import os
import sys
import weakref

import panel as pn
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from vizmm.serve import memory  # noqa: E402
from vizmm_apps import parts  # noqa: E402


# ------------------------------------------------------------------ gc.freeze
class _Node:
    """An object that can sit in a reference cycle and be watched with a weak reference."""


def _garbage_cycle() -> weakref.ref:
    a, b = _Node(), _Node()
    a.other, b.other = b, a
    return weakref.ref(a)


@pytest.fixture
def thawed(monkeypatch):
    """Built pages frozen as ``vizmm serve`` freezes them; everything thawed afterwards."""
    monkeypatch.setattr(memory, "_freezing", False)
    monkeypatch.setattr(type(pn.state), "_on_session_created", [])
    monkeypatch.setattr(type(pn.state), "curdoc", property(lambda self: None))  # no session
    yield
    gc.unfreeze()


def _frozen_by_python() -> int:
    """What the interpreter itself keeps frozen after a full collection, with nothing frozen.

    0 on CPython 3.11 and 3.13; CPython 3.12.1 puts 375 objects of its own in
    the permanent generation at start and again at every ``gc.collect()``.
    """
    gc.unfreeze()
    gc.collect()
    return gc.get_freeze_count()


def test_a_frozen_page_is_collected_when_pages_close(thawed):
    own = _frozen_by_python()
    parts.freeze_built_pages()
    parts.freeze_built_pages()  # once per process, however often it is asked
    assert type(pn.state)._on_session_created == [memory.freeze]
    cycle = _garbage_cycle()  # garbage already, but not yet collected
    frozen = gc.get_freeze_count()
    type(pn.state)._on_session_created[0](object())  # a new session starts: freeze
    assert gc.get_freeze_count() > frozen
    gc.collect()
    assert cycle() is not None  # a full collection no longer walks it
    memory.release_memory()  # pages closed: unfreeze, collect, freeze the rest
    assert cycle() is None
    assert gc.get_freeze_count() > own  # what is left is frozen again


def test_without_freezing_the_release_leaves_nothing_frozen(thawed):
    own = _frozen_by_python()
    cycle = _garbage_cycle()
    memory.release_memory()
    assert cycle() is None and gc.get_freeze_count() == own


def test_a_page_drawn_freezes_only_where_asked(thawed, monkeypatch):
    calls = []

    class Doc:
        session_context = object()

    closing = []
    monkeypatch.setattr(pn.state, "onload", calls.append)
    monkeypatch.setattr(pn.state, "on_session_destroyed", closing.append)
    parts.page_drawn(True)
    assert calls == [] and closing == []  # not in a session: nothing waits for a browser
    monkeypatch.setattr(type(pn.state), "curdoc", property(lambda self: Doc()))
    drawn = parts.page_drawn(True)
    assert memory.freeze not in calls and len(calls) == 1  # plain panel serve: no freeze
    # a page closed before it was drawn: what waits for the drawing stops waiting
    assert len(closing) == 1 and not drawn.is_set()
    closing[0](None)
    assert drawn.is_set()
    monkeypatch.setattr(type(pn.state), "curdoc", property(lambda self: None))
    parts.freeze_built_pages()  # in a --setup script, before any session
    monkeypatch.setattr(type(pn.state), "curdoc", property(lambda self: Doc()))
    calls.clear()
    parts.page_drawn(True)
    assert calls[1] is memory.freeze and len(calls) == 2


# -------------------------------------------------- a page with no browser
@pytest.fixture
def served_dashboard(vizmm_served):
    """The session's ``vizmm serve`` (tests/conftest.py): its base URL."""
    return vizmm_served[1]


@pytest.mark.slow
def test_a_page_without_a_browser_opens_and_steps(served_dashboard):
    sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
    try:
        from protocol_page import ProtocolPage, configure_http
    finally:
        sys.path.remove(os.path.join(ROOT, "benchmarks"))

    async def run():
        configure_http(2)
        page = ProtocolPage(served_dashboard, "dashboard?trace=fig5-8&step=3")
        ready = await page.open()
        assert ready > 0 and page.ready_status and page.step == 2  # the URL's step 3 (1-based)
        assert {"keys", "location", "browser"} <= set(page.ids)
        for want in (3, 4, 5):
            ms = await page.press()
            assert ms > 0 and page.step == want  # one step per press
        await page.close()
        other = ProtocolPage(served_dashboard, "dashboard?trace=fig5-11")
        await other.open()
        assert other.step == 0  # each page its own session
        await other.close()

    asyncio.run(run())


# ------------------------------------------------------------- to_page
class _Receiver:
    """What a Bokeh server session is to its document: told of its changes."""

    def _document_patched(self, event) -> None:
        pass

    def _session_callback_added(self, event) -> None:
        pass

    def _session_callback_removed(self, event) -> None:
        pass


def test_work_finished_after_its_page_closed_is_dropped():
    from bokeh.document import Document

    doc, receiver = Document(), _Receiver()
    doc.on_change_dispatch_to(receiver)
    doc.destroy(receiver)  # what Bokeh does to a closed page's document
    called = []
    assert parts.to_page(doc, lambda: called.append(1)) is False
    assert called == []


def test_work_handed_to_a_page_closing_at_that_moment_is_dropped():
    called = []

    class Closing:  # its session still set, its callbacks already gone
        session_context = object()

        def add_next_tick_callback(self, callback):
            raise AttributeError("'DocumentCallbackManager' object has no attribute")

    class Open:
        session_context = object()
        added: list = []

        def add_next_tick_callback(self, callback):
            self.added.append(callback)

    assert parts.to_page(Closing(), lambda: called.append(1)) is False
    page = Open()
    assert parts.to_page(page, lambda: called.append(1)) is True
    page.added[0]()  # the page's next tick
    assert called == [1]
