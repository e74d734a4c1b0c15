"""``vizmm serve --num-procs 2`` in headless Chromium: pages arriving at once, each its own.

The processes share the arriving connections (each takes one per turn of its
loop). Four pages opened at once, each on another URL, must each show the
trace, step and theme of their own URL and step on a key press.
"""

import os

import pytest
from served import CHROMIUM, read_status, vizmm_serve

pytestmark = [pytest.mark.browser, pytest.mark.slow]

if not os.path.exists(CHROMIUM):
    pytest.skip(f"{CHROMIUM} is missing (apt-get install chromium)", allow_module_level=True)
sync_api = pytest.importorskip("playwright.sync_api")

#: URL query -> (source, step, theme) the page must show
PAGES = {
    "trace=fig5-11": ("fig5-11", 0, "light"),
    "trace=general&theme=dark": ("general", 0, "dark"),
    "trace=fig5-8&step=6": ("fig5-8", 5, "light"),  # the URL counts from 1
    "": ("fig5-8", 0, "light"),
}


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with vizmm_serve(tmp_path_factory.mktemp("serve"), "--num-procs", "2") as (_, base):
        yield f"{base}/dashboard"


def test_pages_arriving_at_once_each_show_their_own_url(new_page, server):
    errors = []
    pages = {}
    for query in PAGES:  # all asked for before any is waited on
        pg = new_page(viewport={"width": 1400, "height": 900})
        pg.on("pageerror", lambda e: errors.append(str(e)))
        pg.goto(f"{server}?{query}", wait_until="commit")
        pages[query] = pg
    for query, (source, step, theme) in PAGES.items():
        pg = pages[query]
        pg.wait_for_selector("#vizmm-status[data-ready='true']", timeout=180_000)
        st = read_status(pg, "#vizmm-status")
        assert (st["source"], st["step"], st["theme"]) == (source, step, theme), query
    for query, (_, step, _) in PAGES.items():
        pages[query].keyboard.press("ArrowRight")
        pages[query].wait_for_selector(f"#vizmm-status[data-step='{step + 1}']")
    assert errors == []
