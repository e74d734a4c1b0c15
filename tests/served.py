"""Serve an app of ``apps/`` with ``panel serve`` for the browser tests (and benchmarks).

Browser tests drive Debian's Chromium (``/usr/bin/chromium``) with Playwright;
``playwright install`` is not needed. The benchmarks that drive a page
(``benchmarks/bench_dashboard.py``, ``benchmarks/load_test.py``) use the same
browser, arguments and latency probe.

``tests/conftest.py`` holds the session's shared fixtures built on these: one
Chromium (``browser``, a fresh context per page: ``new_page``) and one server
per configuration that several modules serve (``dashboard_url``,
``side_by_side_url``, ``large_view_url``, ``vizmm_served``). A module whose
server is configured as no other module's (an environment, ``--traces``)
starts its own. Tests wait on page state (``wait_drawn``, ``poll``, Playwright's
``wait_for_selector`` / ``wait_for_function``), never for a fixed time, but
where the time itself is what they check.
"""

import contextlib
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

import vizmm_apps

#: Where the installed pages are (``apps/`` in a checkout, installed as ``vizmm_apps``).
APPS_DIR = os.path.dirname(os.path.abspath(vizmm_apps.__file__))

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CHROMIUM = "/usr/bin/chromium"
SHOTS = os.path.join(ROOT, "test-output", "screenshots")
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


#: Page pixels (x, y) of a point of a plotted view, in that view's units (one per
#: cell): ``page.evaluate(TO_SCREEN, ["vizmm-M", x, y])``. A scene's grids share
#: plots; ``vizmm-<view>`` names a grid's cells, drawn in the grid's own ranges.
TO_SCREEN = """([name, x, y]) => {
  const doc = Bokeh.documents[0];
  const view = Bokeh.index.find_one_by_id(doc.get_model_by_name(name).id);
  const plot = view.plot_view ?? view;
  const scales = view.coordinates ?? plot.frame;
  const box = plot.canvas_view.el.getBoundingClientRect();
  return [box.left + scales.x_scale.compute(x), box.top + scales.y_scale.compute(y)];
}"""


#: For ``page.evaluate``: from each ``keydown``, the milliseconds until the status
#: element ``#vizmm-status`` changes (``window.__update``) and two animation
#: frames later, the new picture painted (``window.__paint``).
#: A scene's text view as the page draws it (``page.evaluate(TEXT_VIEWS, "vizmm-table")``):
#: for every shown ``Div`` of that name, in the document's order, its rows' texts, the
#: source's markers, and each row's box: its fill, border colour and title (the hover note),
#: read from the elements (``data-row`` says a row's; ``data-rows`` how many).
TEXT_VIEWS = """(name) => {
  const out = [];
  for (const m of Bokeh.documents[0].all_models) {
    if (m.name !== name) continue;
    const view = Bokeh.index.find_one_by_id(m.id);
    if (!view || !(view.el.getBoundingClientRect().width > 0)) continue;
    const root = view.el.shadowRoot || view.el;
    const box = root.querySelector("div.v");
    if (!box) continue;
    const n = Number(box.dataset.rows);
    const rows = () => Array(n).fill("");
    const got = {text: rows(), marker: rows(), note: rows(), fill: rows(), line_color: rows()};
    for (const s of root.querySelectorAll("span.t[data-row]"))
      (s.classList.contains("m") ? got.marker : got.text)[Number(s.dataset.row)] = s.textContent;
    for (const r of root.querySelectorAll("div.r[data-row]")) {
      const i = Number(r.dataset.row), style = r.getAttribute("style");
      got.fill[i] = (style.match(/background:([^;]+)/) || ["", ""])[1];
      got.line_color[i] = (style.match(/border:\\S+ solid ([^;]+)/) || ["", ""])[1];
      got.note[i] = r.getAttribute("title") || "";
    }
    out.push(got);
  }
  return out;
}"""

LATENCY_JS = """() => {
  function find(root) {
    const el = root.querySelector && root.querySelector('#vizmm-status');
    if (el) return el;
    for (const node of root.querySelectorAll('*')) {
      if (node.shadowRoot) { const f = find(node.shadowRoot); if (f) return f; }
    }
    return null;
  }
  window.__update = []; window.__paint = []; window.__t0 = 0;
  document.addEventListener('keydown', () => { window.__t0 = performance.now(); }, true);
  const el = find(document);
  new MutationObserver(() => {
    if (!window.__t0) return;
    const t0 = window.__t0, t1 = performance.now();
    window.__t0 = 0;
    window.__update.push(t1 - t0);
    requestAnimationFrame(() => requestAnimationFrame(
      () => window.__paint.push(performance.now() - t0)));
  }).observe(el.parentNode, {childList: true, subtree: true, attributes: true});
}"""


def free_port() -> int:
    """A TCP port nothing listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def _running(
    cmd: list[str], log_path: str, url: str, timeout: float, name: str, env: dict | None = None
):
    """Run ``cmd`` (output to ``log_path``) until ``url`` answers 200; yield the process.

    A server that does not answer within ``timeout`` seconds fails the test
    with the end of its log; the server is stopped on the way out. ``env``:
    more environment variables for the server (a value None: not set).
    """
    environ = dict(os.environ, NUMBA_ENABLE_CUDASIM="1", **(env or {}))
    with open(log_path, "w+") as log:
        proc = subprocess.Popen(
            cmd,
            cwd=ROOT,
            stdout=log,
            stderr=subprocess.STDOUT,
            env={k: v for k, v in environ.items() if v is not None},
        )
        try:
            deadline = time.time() + timeout
            while True:
                try:
                    # a long timeout: each new request builds one more session
                    with urllib.request.urlopen(url, timeout=max(5, deadline - time.time())) as r:
                        if r.status == 200:
                            break
                except OSError:
                    pass
                if proc.poll() is not None or time.time() > deadline:
                    log.seek(0)
                    pytest.fail(f"{name} did not start:\n{log.read()[-3000:]}")
                time.sleep(0.3)
            yield proc
        finally:
            proc.terminate()
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()


@contextlib.contextmanager
def serve(app: str, logdir, timeout: float = 120, env: dict | None = None):
    """Run ``panel serve apps/<app>.py`` on a free local port; yield the app's URL.

    The server's output goes to ``logdir/panel.log``; a server that does not
    answer within ``timeout`` seconds fails the test with the end of that log.
    ``env``: more environment variables for the server (``VIZMM_CLASS_DIR``...).
    """
    port = free_port()
    panel = os.path.join(os.path.dirname(sys.executable), "panel")
    cmd = [
        panel,
        "serve",
        os.path.join(APPS_DIR, f"{app}.py"),
        "--port",
        str(port),
        "--address",
        "127.0.0.1",
    ]
    cmd.append(f"--allow-websocket-origin=127.0.0.1:{port}")
    url = f"http://127.0.0.1:{port}/{app}"
    with _running(cmd, os.path.join(logdir, "panel.log"), url, timeout, "panel serve", env):
        yield url


@contextlib.contextmanager
def vizmm_serve(logdir, *args: str, timeout: float = 240, env: dict | None = None):
    """Run ``vizmm serve --port P *args`` (a free port); yield its process and base URL.

    Ready once ``/dashboard`` answers (a page is built for that request). The
    server's output goes to ``logdir/serve.log``; a server that does not
    answer within ``timeout`` seconds fails the test with the end of that log.
    ``env``: more environment variables for the server (a value None: not set).
    """
    port = free_port()
    exe = os.path.join(os.path.dirname(sys.executable), "vizmm")
    base = f"http://127.0.0.1:{port}"
    cmd = [exe, "serve", "--port", str(port), *args]
    with _running(
        cmd, os.path.join(logdir, "serve.log"), f"{base}/dashboard", timeout, "vizmm serve", env
    ) as proc:
        yield proc, base


#: For ``page.wait_for_function``: every Bokeh document of the page has drawn its roots,
#: every view drawn on the page has finished drawing (BokehJS's own bookkeeping), and no CSS
#: transition is running (a button's colours are the ones it settles on).
DRAWN_JS = """() => {
  if (!window.Bokeh || !Bokeh.documents || Bokeh.documents.length === 0) return false;
  if (!Bokeh.documents.every((doc) => doc.is_idle)) return false;
  for (const view of Bokeh.index.all_views()) {
    if (view.el && !view.has_finished()) return false;  // a view on the page (not a tool)
  }
  return document.getAnimations().every(
    (a) => !(a instanceof CSSTransition) || a.playState !== "running");
}"""


def wait_drawn(pg, timeout: float = 60000) -> None:
    """Wait until the page's Bokeh views have drawn and two animation frames have passed.

    What a person sees once the page has caught up: BokehJS says every view
    has finished (``DRAWN_JS``), and the browser has painted since. A page that
    never finishes drawing fails the test after ``timeout`` milliseconds.
    """
    pg.wait_for_function(DRAWN_JS, timeout=timeout)
    pg.evaluate("() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)))")


def end_and_press(pg, button):
    """End pressed on the step slider and ``button`` (a locator) clicked, in one script.

    Both messages leave the browser in the same moment, so the click reaches
    the server while the slider's change still waits out Panel's debounce:
    the case Panel runs without the document's lock (``parts.on_press``).
    Returns the slider's element handle.
    """
    slider = pg.locator('[role="slider"][aria-label="step"]').element_handle()
    pg.evaluate(
        """([slider, button]) => {
            const end = {key: "End", keyCode: 35, bubbles: true};
            slider.dispatchEvent(new KeyboardEvent("keydown", end));
            button.click();
        }""",
        [slider, button.element_handle()],
    )
    return slider


def poll(condition, timeout: float = 30.0, every: float = 0.1):
    """Ask ``condition()`` until it is true or ``timeout`` seconds pass; its last answer.

    For a state the page shows without a selector to wait on; the caller
    asserts on the answer, so a state never reached fails as before.
    """
    deadline = time.monotonic() + timeout
    while True:
        got = condition()
        if got or time.monotonic() > deadline:
            return got
        time.sleep(every)


def read_status(pg, selector: str) -> dict:
    """The ``data-*`` attributes of the page's status element, JSON values decoded."""
    data = pg.eval_on_selector(selector, "el => Object.assign({}, el.dataset)")
    out = {}
    for k, v in data.items():
        try:
            out[k] = json.loads(v)
        except ValueError:
            out[k] = v
    return out


def open_menu(pg) -> None:
    """Open the dashboard's "☰ More" menu (the speed, record, load, export, keys, side by side)."""
    button = pg.get_by_role("button", name="☰ More", exact=True)
    button.wait_for(timeout=60000)
    if not pg.locator("#vizmm-side-by-side-link").is_visible():
        button.click()
    pg.wait_for_selector("#vizmm-side-by-side-link", timeout=30000)
