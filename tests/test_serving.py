"""What ``vizmm serve`` does to its server processes besides serving (apps/parts.py).

* Websocket frames leave at once (``TCP_NODELAY``): the oracle is the socket
  itself, asked with ``getsockopt`` on the server's side of a real websocket.
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
import re
import socket
import sys
import time
import urllib.request
import weakref

import panel as pn
import pytest
from served import free_port, vizmm_serve

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from apps import parts  # noqa: E402


# ------------------------------------------------------------- TCP_NODELAY
def _server_sockets_nodelay(url: str) -> list[int]:
    """Open a websocket to the Panel app at ``url``; TCP_NODELAY of each server-side websocket."""
    from panel.io.server import WSHandler
    from tornado.httpclient import HTTPRequest
    from tornado.websocket import websocket_connect

    with urllib.request.urlopen(url, timeout=60) as r:
        html = r.read().decode()
    token = re.search(r'"token"\s*:\s*"([^"]+)"', html).group(1)
    base = url.rsplit("/", 1)[0]

    async def connect():
        ws = await websocket_connect(
            HTTPRequest(url.replace("http", "ws", 1) + "/ws", headers={"Origin": base}),
            subprotocols=["bokeh", token],
        )
        await ws.read_message()  # the ACK's header: the server has opened its side
        handlers = [o for o in gc.get_objects() if isinstance(o, WSHandler)]
        options = [
            h.ws_connection.stream.socket.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)
            for h in handlers
            if h.ws_connection is not None and h.ws_connection.stream.socket is not None
        ]
        ws.close()
        while await ws.read_message() is not None:  # until the server has closed it too
            pass

        return options

    return asyncio.run(connect())


@pytest.mark.slow
def test_websockets_send_frames_at_once(monkeypatch):
    from panel.io.server import WSHandler

    monkeypatch.setattr(WSHandler, "open", WSHandler.open)  # put back after the test
    port = free_port()
    server = pn.serve(
        {"app": lambda: pn.pane.Markdown("x")},
        port=port,
        address="127.0.0.1",
        threaded=True,
        show=False,
        websocket_origin=[f"127.0.0.1:{port}"],
    )
    try:
        url = f"http://127.0.0.1:{port}/app"
        deadline = time.time() + 60
        while True:
            try:
                with urllib.request.urlopen(url, timeout=10) as r:
                    r.read()
                break
            except OSError:
                assert time.time() < deadline
                time.sleep(0.2)
        if not getattr(WSHandler.open, "_vizmm_nodelay", False):
            # Panel's and Bokeh's own handler: Nagle's algorithm left on
            assert _server_sockets_nodelay(url) == [0]
        assert parts.send_websocket_frames_at_once()
        assert parts.send_websocket_frames_at_once()  # a second call wraps nothing again
        assert getattr(WSHandler.open, "__wrapped__", None) is not None
        assert not hasattr(WSHandler.open.__wrapped__, "__wrapped__")
        assert _server_sockets_nodelay(url) == [1]
    finally:
        server.stop()


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
    monkeypatch.setattr(parts, "_freezing_built_pages", False)
    monkeypatch.setattr(type(pn.state), "_on_session_created", [])
    monkeypatch.setattr(type(pn.state), "curdoc", property(lambda self: None))  # no session
    yield
    gc.unfreeze()


def test_a_frozen_page_is_collected_when_pages_close(thawed):
    parts.freeze_built_pages()
    parts.freeze_built_pages()  # once per process, however often it is asked
    assert type(pn.state)._on_session_created == [parts._freeze]
    cycle = _garbage_cycle()  # garbage already, but not yet collected
    frozen = gc.get_freeze_count()
    type(pn.state)._on_session_created[0](object())  # a new session starts: freeze
    assert gc.get_freeze_count() > frozen
    gc.collect()
    assert cycle() is not None  # a full collection no longer walks it
    parts._release_memory()  # pages closed: unfreeze, collect, freeze the rest
    assert cycle() is None
    assert gc.get_freeze_count() > 0  # what is left is frozen again


def test_without_freezing_the_release_leaves_nothing_frozen(thawed):
    gc.unfreeze()
    cycle = _garbage_cycle()
    parts._release_memory()
    assert cycle() is None and gc.get_freeze_count() == 0


def test_a_page_drawn_freezes_only_where_asked(thawed, monkeypatch):
    calls = []

    class Doc:
        session_context = object()

    monkeypatch.setattr(pn.state, "onload", calls.append)
    parts.page_drawn(True)
    assert calls == []  # not in a session: nothing waits for a browser
    monkeypatch.setattr(type(pn.state), "curdoc", property(lambda self: Doc()))
    parts.page_drawn(True)
    assert parts._freeze not in calls and len(calls) == 1  # plain panel serve: no freeze
    monkeypatch.setattr(type(pn.state), "curdoc", property(lambda self: None))
    parts.freeze_built_pages()  # in a --setup script, before any session
    monkeypatch.setattr(type(pn.state), "curdoc", property(lambda self: Doc()))
    calls.clear()
    parts.page_drawn(True)
    assert calls[1] is parts._freeze and len(calls) == 2


# -------------------------------------------------- a page with no browser
@pytest.fixture(scope="module")
def served_dashboard(tmp_path_factory):
    with vizmm_serve(tmp_path_factory.mktemp("serve")) as (_, base):
        yield base


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
