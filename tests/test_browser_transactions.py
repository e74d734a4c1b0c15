"""The memory-transactions view in headless Chromium: turn it on, step to a k, see the banks.

Served with ``panel serve apps/dashboard.py`` (tests/served.py) and driven as
a person would: the preset menu's bank-conflict kernel, the "Memory
transactions" toggle, the arrow key. The page's status element says what it
shows; the banks are checked against a hand derivation from the conflict
kernel's layout, and screenshots go to ``test-output/screenshots/``.
"""

import os

import pytest
from served import CHROMIUM, SHOTS, read_status, wait_drawn

pytestmark = pytest.mark.browser

if not os.path.exists(CHROMIUM):
    pytest.skip(f"{CHROMIUM} is missing (apt-get install chromium)", allow_module_level=True)
sync_api = pytest.importorskip("playwright.sync_api")


@pytest.fixture
def server(dashboard_url):
    """The session's dashboard (tests/conftest.py)."""
    return dashboard_url


@pytest.fixture
def page(browser):
    pg = browser.new_page(viewport={"width": 1600, "height": 1100})
    errors = []
    pg.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    # Left out: BokehJS's DataTable (a table of another tab, hidden) failing to
    # resize when the page is laid out again; not a part of this view.
    known = "reading 'resizeCanvas'"
    pg.on("pageerror", lambda e: errors.append(f"page error: {e}"))
    yield pg
    pg.close()
    errors = [e for e in errors if known not in e]
    assert errors == [], f"console errors: {errors}"


def status(pg) -> dict:
    return read_status(pg, "#vizmm-status")


def shot(pg, name):
    os.makedirs(SHOTS, exist_ok=True)
    wait_drawn(pg)
    pg.screenshot(path=os.path.join(SHOTS, f"{name}.png"), full_page=True)


def test_turn_on_transactions_step_to_k_and_see_the_banks(page, server):
    page.goto(server + "?trace=conflict")
    page.wait_for_selector("#vizmm-status[data-ready='true']", timeout=60000)
    assert status(page)["transactions"] is False
    page.get_by_role("button", name="Memory transactions").click()
    page.wait_for_selector("#vizmm-status[data-transactions='true']", timeout=15000)
    # start, load M, load N, barrier 1, its release, then k = 0, 1, 2, 3
    for _ in range(8):
        page.keyboard.press("ArrowRight")
    page.wait_for_selector("#vizmm-status[data-step='8']", timeout=15000)
    st = status(page)
    assert st["sub"] == "k loop" and st["k"] == 3 and st["warp"] == 0
    # Hand derivation: the conflict kernel stores N[ph*16 + r][bx*16 + c] (drawn in
    # slot (r, c)) at Nds[c][r], word 16c + r, bank (16c + r) mod 32; Mds[r][c] is
    # word 16r + c, bank c + 16 (r mod 2).
    assert st["nds_bank"] == [[(16 * c + r) % 32 for c in range(16)] for r in range(16)]
    assert st["mds_bank"] == [[(16 * r + c) % 32 for c in range(16)] for r in range(16)]
    # Warp 0 (threads (0, 0)..(1, 15)) reads Nds[tx][3]: words 16tx + 3, eight in
    # bank 3 and eight in bank 19 -> 8-way, all 16 slots in conflict; Mds[ty][3]
    # is two words, one per row of threads -> no conflict.
    assert st["nds_way"] == 8 and st["mds_way"] == 1 and st["nds_conflicts"] == 16
    assert any("bank conflicts/request 3.50" in t for t in st["totals"])
    shot(page, "transactions-conflict-k3")
    # The padded kernel at the same step: no conflict.
    page.goto(server + "?trace=padded&step=9&transactions=true")
    page.wait_for_selector("#vizmm-status[data-step='8']", timeout=60000)
    st = status(page)
    assert st["nds_way"] == 1 and st["nds_conflicts"] == 0
    assert st["nds_bank"] == [[(17 * c + r) % 32 for c in range(16)] for r in range(16)]
    shot(page, "transactions-padded-k3")


def test_uncoalesced_loads_outline_sixteen_sectors(page, server):
    page.goto(server + "?trace=uncoalesced&step=2&transactions=true")
    page.wait_for_selector("#vizmm-status[data-step='1']", timeout=60000)
    st = status(page)
    assert st["sub"] == "load M" and st["transactions"] is True
    # 16 sectors per request (one per row of M a warp walks down) against the book's 4.
    assert any("sectors/request 16.00 (ideal 4.00)" in t for t in st["totals"])
    shot(page, "transactions-uncoalesced-load-m")
