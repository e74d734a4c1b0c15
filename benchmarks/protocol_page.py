"""A dashboard page as the server sees it, with no browser: Bokeh's protocol, spoken from Python.

:class:`ProtocolPage` makes the requests and sends the messages a Chromium
page sends to a served dashboard, in the same order, and measures when the
server's answers arrive. What a page costs the *server* is then measured
without the browsers' own work on the same cores (about 4-5 core-seconds to
open one dashboard page in Chromium, more than the server spends on it).

What a page does (as a Chromium page was seen to, frame by frame):

1. ``GET`` the page: the server builds the session's document;
2. ``GET`` the scripts and style sheets the page names (Bokeh's and Panel's,
   up to six at once as a browser does), and the style sheets the
   document's models name;
3. open the websocket ``/<app>/ws`` with the session's token, wait for
   ``ACK``, send ``PULL-DOC-REQ`` and read the document;
4. report each plot's size (``inner_width``/``inner_height``/``outer_*``,
   one ``PATCH-DOC`` per plot), the location's ``search``, the browser's
   facts (``BrowserInfo``, one ``PATCH-DOC`` each) and the
   ``document_ready`` event, on which Panel runs the page's ``onload``
   callbacks;
5. the page is **ready** when the document's ``#vizmm-status`` says
   ``data-ready="true"`` and the server has answered ``document_ready``
   (its ``OK``);
6. a key press is the change of the keyboard model's ``queue`` (``[[seq,
   "ArrowRight"], ...]``, as ``apps/keys.py``'s script sends it); the
   update is the ``PATCH-DOC`` whose ``#vizmm-status`` says
   ``data-step="seq"``. When the server changes the location's ``search``
   the page answers with the new ``href``, as the browser does.

Only the messages' bytes are read, not their meaning: a page holds no
Bokeh document, so its own CPU time is small (a ``json.loads`` of the
document once, and a search of each message's text).
"""

from __future__ import annotations

import asyncio
import json
import re
import time
import urllib.parse
import uuid

from tornado.httpclient import AsyncHTTPClient, HTTPRequest
from tornado.websocket import websocket_connect

#: Requests one page makes at once (Chromium's per-host limit).
PER_PAGE = 6

_TOKEN = re.compile(r'"token"\s*:\s*"([^"]+)"')
_REFS = re.compile(r'(?:src|href)="([^"]+)"')
_CSS = re.compile(r'(static/extensions/[^"\\]+?\.css(?:\?v=[^"\\]+)?)')
_STATUS = re.compile(r"vizmm-status&quot;(.{0,4000}?)&gt;")
_READY = re.compile(r"data-ready=&quot;(true|false)&quot;")
_STEP = re.compile(r"data-step=&quot;(\d+)&quot;")
_PLOTS = ("Plot", "Figure")


#: The window a page reports (pixels): a projector's, where the dashboard fits its first screen.
VIEWPORT = (1280, 720)


class ProtocolError(RuntimeError):
    """The server answered with something a browser page would not have got."""


def _objects(doc) -> dict[str, tuple[str, dict]]:
    """Every model of a serialized document: ``{id: (name, attributes)}``."""
    out, todo = {}, [doc]
    while todo:
        x = todo.pop()
        if isinstance(x, dict):
            if x.get("type") == "object" and "id" in x:
                out[x["id"]] = (x.get("name", ""), x.get("attributes") or {})
            todo.extend(x.values())
        elif isinstance(x, list):
            todo.extend(x)
    return out


def _change(model: str, attr: str, new) -> dict:
    return {"kind": "ModelChanged", "model": {"id": model}, "attr": attr, "new": new}


class ProtocolPage:
    """One page of ``app`` opened at ``base/path``, spoken to in Bokeh's protocol.

    Parameters
    ----------
    base : str
        The server, ``http://host:port``.
    path : str
        The page's path and query, ``dashboard?trace=fig5-8``.
    """

    def __init__(self, base: str, path: str):
        self.base, self.path = base, path
        self.app, _, self.query = path.partition("?")
        self.ws = None
        self.ids: dict[str, str] = {}
        self.ready_status = False
        self.step = None
        self.oks: set[str] = set()
        self.error = None
        self.changed = asyncio.Event()
        self.queue: list[list] = []
        self._reader = None
        self._sending = asyncio.Lock()

    # ------------------------------------------------------------ wire
    async def _get(self, url: str) -> bytes:
        response = await AsyncHTTPClient().fetch(
            HTTPRequest(url, request_timeout=600, connect_timeout=600)
        )
        return response.body

    async def _read(self):
        frame = await self.ws.read_message()
        if frame is None:
            raise ProtocolError(f"{self.path}: the server closed the websocket")
        return frame

    async def _message(self) -> tuple[dict, str]:
        header = json.loads(await self._read())
        await self._read()  # metadata
        content = await self._read()
        for _ in range(2 * int(header.get("num_buffers", 0) or 0)):
            await self._read()  # each buffer: its header, then its bytes
        return header, content

    async def _send(self, msgtype: str, content: dict) -> str:
        msgid = uuid.uuid4().hex.upper()
        async with self._sending:  # a message's three frames, never interleaved with another's
            await self.ws.write_message(json.dumps({"msgid": msgid, "msgtype": msgtype}))
            await self.ws.write_message("{}")
            await self.ws.write_message(json.dumps(content))
        return msgid

    async def _patch(self, events: list[dict]) -> str:
        return await self._send("PATCH-DOC", {"events": events})

    def _scan(self, text: str) -> None:
        status = _STATUS.search(text)
        if status:
            ready, step = _READY.search(status.group(1)), _STEP.search(status.group(1))
            if ready:
                self.ready_status = ready.group(1) == "true"
            if step:
                self.step = int(step.group(1))

    async def _read_all(self) -> None:
        try:
            while True:
                header, content = await self._message()
                kind = header.get("msgtype")
                if kind == "OK":
                    self.oks.add(header.get("reqid"))
                elif kind == "ERROR":
                    self.error = f"{self.path}: the server answered ERROR: {content[:300]}"
                elif kind == "PATCH-DOC":
                    self._scan(content)
                    if self.ids.get("location") and '"search"' in content:
                        await self._follow_location(json.loads(content))
                self.changed.set()
        except (ProtocolError, asyncio.CancelledError):
            pass
        except Exception as e:  # noqa: BLE001 - reported by whoever waits
            self.error = f"{self.path}: {type(e).__name__}: {e}"
            self.changed.set()

    async def _follow_location(self, content: dict) -> None:
        """The server changed the URL's query: the page reports its new ``href``."""
        loc = self.ids["location"]
        for ev in content.get("events", []):
            if ev.get("model", {}).get("id") == loc and ev.get("attr") == "search":
                href = f"{self.base}/{self.app}{ev['new']}"
                await self._patch([_change(loc, "href", href)])

    async def _until(self, done, timeout: float) -> None:
        end = time.perf_counter() + timeout
        while not done():
            if self.error:
                raise ProtocolError(self.error)
            self.changed.clear()
            left = end - time.perf_counter()
            if left <= 0:
                raise TimeoutError(f"{self.path}: no answer within {timeout:.0f} s")
            try:
                await asyncio.wait_for(self.changed.wait(), left)
            except asyncio.TimeoutError:
                pass

    # ------------------------------------------------------------ a page
    async def open(self, timeout: float = 300.0) -> float:
        """Open the page as a browser does (steps 1-5 above); seconds until it is ready."""
        t0 = time.perf_counter()
        html = (await self._get(f"{self.base}/{self.path}")).decode()
        token = _TOKEN.search(html)
        if not token:
            raise ProtocolError(f"{self.path}: the page names no session token")
        refs = [
            r for r in _REFS.findall(html) if r.startswith("static/") and not r.endswith(".png")
        ]
        await self._fetch_all(refs)
        ws_url = self.base.replace("http", "ws", 1) + f"/{self.app}/ws"
        if self.query:
            ws_url += "?" + self.query
        self.ws = await websocket_connect(
            HTTPRequest(ws_url, headers={"Origin": self.base}, request_timeout=timeout),
            subprotocols=["bokeh", token.group(1)],
            max_message_size=512 * 2**20,
        )
        self.ws.protocol.stream.set_nodelay(True)  # as a browser: a frame leaves at once
        header, _ = await self._message()
        if header.get("msgtype") != "ACK":
            raise ProtocolError(f"{self.path}: the websocket opened with {header!r}, not ACK")
        await self._send("PULL-DOC-REQ", {})
        header, content = await self._message()
        if header.get("msgtype") != "PULL-DOC-REPLY":
            raise ProtocolError(f"{self.path}: asked for the document, got {header!r}")
        self._scan(content)
        await self._fetch_all(sorted(set(_CSS.findall(content)) - set(refs)))
        objects = _objects(json.loads(content)["doc"])
        self._reader = asyncio.create_task(self._read_all())
        ready = await self._opening_messages(objects)
        await self._until(lambda: self.ready_status and ready in self.oks, timeout)
        return time.perf_counter() - t0

    async def _fetch_all(self, refs: list[str]) -> None:
        slots = asyncio.Semaphore(PER_PAGE)

        async def one(ref):
            async with slots:
                await self._get(f"{self.base}/{urllib.parse.quote(ref, safe='/?=&%@^.-_')}")

        await asyncio.gather(*(one(r) for r in refs))

    async def _opening_messages(self, objects) -> str:
        """What a page reports once drawn (step 4 above); the ``document_ready`` message's id."""
        for mid, (name, attrs) in objects.items():
            if name in _PLOTS:
                w, h = attrs.get("width") or 300, attrs.get("height") or 300
                await self._patch(
                    [
                        _change(mid, "inner_width", max(1, w - 20)),
                        _change(mid, "inner_height", max(1, h - 50)),
                        _change(mid, "outer_width", w),
                        _change(mid, "outer_height", h),
                    ]
                )
            elif name == "panel.models.location.Location":
                self.ids["location"] = mid
            elif name == "panel.models.browser.BrowserInfo":
                self.ids["browser"] = mid
            elif name.startswith(("KeyboardShortcuts", "PageScripts")):  # the keys' data model
                self.ids["keys"] = mid
        if "keys" in self.ids:  # the window's size, as the page's script reports it
            w, h = VIEWPORT
            await self._patch(
                [
                    _change(self.ids["keys"], "inner_width", w),
                    _change(self.ids["keys"], "inner_height", h),
                ]
            )
        if "location" in self.ids:
            search = "?" + self.query if self.query else ""
            await self._patch([_change(self.ids["location"], "search", search)])
        if "browser" in self.ids:
            facts = {
                "dark_mode": False,
                "device_pixel_ratio": 1,
                "language": "en-US",
                "webdriver": True,
                "timezone": "UTC",
                "timezone_offset": 0,
                "webgl": True,
            }
            for attr, value in facts.items():
                await self._patch([_change(self.ids["browser"], attr, value)])
        event = {"type": "event", "name": "document_ready", "values": {"type": "map"}}
        return await self._patch(
            [{"kind": "MessageSent", "msg_type": "bokeh_event", "msg_data": event}]
        )

    async def press(self, key: str = "ArrowRight", timeout: float = 60.0) -> float:
        """Press ``key``; milliseconds until the status shows the next step.

        Raises
        ------
        ProtocolError
            The page has no keyboard model (not a dashboard page).
        TimeoutError
            No update within ``timeout`` seconds.
        """
        if "keys" not in self.ids:
            raise ProtocolError(f"{self.path}: the page has no keyboard shortcuts")
        seq = (self.queue[-1][0] if self.queue else 0) + 1
        self.queue = [*self.queue[-63:], [seq, key]]
        want = (self.step or 0) + 1
        t0 = time.perf_counter()
        await self._patch([_change(self.ids["keys"], "queue", self.queue)])
        await self._until(lambda: self.step is not None and self.step >= want, timeout)
        return 1000 * (time.perf_counter() - t0)

    async def close(self) -> None:
        """Close the websocket, as closing a tab does."""
        if self.ws is not None:
            self.ws.close()
        if self._reader is not None:
            self._reader.cancel()
            try:
                await self._reader
            except asyncio.CancelledError:
                pass


def configure_http(pages: int) -> None:
    """Let tornado's client hold every page's requests at once (its default is 10)."""
    AsyncHTTPClient.configure(None, max_clients=max(10, PER_PAGE * pages))
