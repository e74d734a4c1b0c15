"""HTML export after a page has closed (issue 32, item 2's cause).

On a long-running server every page's HTML export failed with
"'DocumentCallbackManager' object has no attribute '_js_event_callbacks'"
once a page had uploaded a trace and closed. Bokeh's ``file_html``, given
bare models, makes a Document and copies into it the JS callbacks of Bokeh's
current document (``bokeh.io.curdoc()``); in a server that can be a closed
page's document, which Bokeh destroyed (its callback manager's attributes
deleted). The export now hands ``file_html`` a Document of its own.

Two tests: the in-process variant (the current document is a destroyed
one, as a closed page leaves it), and the sequence a person took on a served
page (upload in page A, close A, export HTML from page B, one server process).
"""

import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from served import CHROMIUM, _running, free_port, open_menu, read_status  # noqa: E402

import vizmm  # noqa: E402
from vizmm.export import export_bytes  # noqa: E402
from vizmm.serve.catalogue import CATALOGUE  # noqa: E402


def test_html_export_when_bokehs_current_document_is_a_closed_pages():
    from bokeh.document import Document
    from bokeh.io.doc import curdoc, set_curdoc

    before = curdoc()
    closed = Document()
    session = object()  # what a server session registers, and destroys the document with
    closed.on_change_dispatch_to(session)
    set_curdoc(closed)
    closed.destroy(session)  # what Bokeh does when the page's session ends
    try:
        data = export_bytes(CATALOGUE.get("fig5-8"), "html", block=(0, 0))
    finally:
        set_curdoc(before)
    assert data.lstrip().lower().startswith(b"<!doctype html")
    assert b"vizmm-frames" in data


#: Whether the page's download button has the server's file name for an HTML export
#: (the server names the file once it has the format chosen).
HTML_CHOSEN = """() => Bokeh.documents.some((d) => [...d.all_models].some(
  (m) => typeof m.filename === "string" && m.filename.endsWith(".html")))"""


@pytest.mark.browser
@pytest.mark.skipif(not os.path.exists(CHROMIUM), reason=f"{CHROMIUM} is missing")
def test_upload_in_a_closed_page_then_export_html_from_another(new_page, tmp_path):
    port = free_port()
    panel = os.path.join(os.path.dirname(sys.executable), "panel")
    apps = os.path.join(ROOT, "apps")
    url = f"http://127.0.0.1:{port}/dashboard"
    cmd = [
        panel,
        "serve",
        os.path.join(apps, "dashboard.py"),
        "--port",
        str(port),
        "--address",
        "127.0.0.1",
        f"--allow-websocket-origin=127.0.0.1:{port}",
        # a closed page's session is destroyed within a second or two
        "--unused-session-lifetime",
        "500",
        "--check-unused-sessions",
        "500",
    ]
    trace = vizmm.load(os.path.join(os.path.dirname(vizmm.__file__), "data", "fig5-11.vizmm"))
    path = trace.save(tmp_path / "mine.vizmm")
    log = str(tmp_path / "panel.log")
    with _running(cmd, log, url, 120, "panel serve"):
        a = pg = None
        try:
            a = new_page(viewport={"width": 1280, "height": 720})
            a.goto(url)
            a.wait_for_selector("#vizmm-status[data-ready='true']", timeout=90000)
            open_menu(a)  # the loading sections are behind "☰ More"
            a.get_by_text("Load a trace file", exact=True).first.click()
            a.locator("input[type=file]").first.set_input_files(str(path))  # chosen by path
            for _ in range(300):
                st = read_status(a, "#vizmm-status")
                if str(st.get("source", "")).startswith("upload:") and st["ready"]:
                    break
                a.wait_for_timeout(100)
            assert str(st.get("source", "")).startswith("upload:"), st
            a.close()  # page A goes; its session and document are destroyed
            pg = new_page(viewport={"width": 1280, "height": 720})
            pg.wait_for_timeout(3000)  # a sleep about time: past the unused-session check
            pg.goto(url + "?trace=fig5-8")
            pg.wait_for_selector("#vizmm-status[data-ready='true']", timeout=90000)
            open_menu(pg)
            for _ in range(2):  # again and again in one process
                pg.get_by_text("Export", exact=True).first.click()
                pg.locator("select").filter(has_text="html").first.select_option("html")
                pg.wait_for_function(HTML_CHOSEN, timeout=30000)  # the server has the format
                with pg.expect_download(timeout=120000) as got:
                    pg.get_by_text("Export this block").first.click()
                data = got.value.path().read_bytes()
                assert data.lstrip().lower().startswith(b"<!doctype html"), data[:200]
                assert b"vizmm-frames" in data
                assert "Export failed" not in pg.inner_text("body")
                pg.get_by_text("Export", exact=True).first.click()  # folded again
                # (the server hides the section: the page waits for that before closing)
                pg.get_by_text("Export this block").first.wait_for(state="hidden")
        finally:
            for page in (a, pg):  # closed while the server runs: its log is read below
                if page is not None:
                    page.close()
    with open(log) as f:
        text = f.read()
    assert "_js_event_callbacks" not in text and "Traceback" not in text, text[-3000:]
