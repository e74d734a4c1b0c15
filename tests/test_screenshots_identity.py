"""Every page and every exported frame, pixel for pixel as the references in tests/screenshots/.

The references were made from the code before the views became plug-ins
(``vizmm/render/views/``): a change that only moves code must leave every
picture as it was, to the pixel (Pillow's ``ImageChops.difference`` has no
box). Two families:

* the served pages, screenshotted by the session's Chromium: the dashboard as
  it opens, with each of its view toggles on (``transactions``, ``theme=dark``),
  in presenter mode, at a later step following a thread, the large view, and
  the dashboard on a checked trace at its first finding; each at 1280 x 720
  (Playwright's default viewport; the whole page, scrolled) and 1024 x 768 (the
  projector size that presenter mode fits; the window). ``screenshots/browser.json``
  records the Chromium and platform that made them: pixel identity says something only on the same
  browser, so another Chromium skips these tests, saying so.
* the Pillow frames of ``vizmm/render/pillow.py`` (GIF/MP4): every view alone
  and all together, a few steps of the book's Fig. 5.8 example, the
  transactions row, the dark theme, a finding's marks. No browser: these run
  everywhere.

``VIZMM_UPDATE_SCREENSHOTS=1`` writes the references instead of comparing
(only where a picture is meant to change; say why in the commit).
"""

from __future__ import annotations

import io
import json
import os
import platform

import pytest
from PIL import Image, ImageChops

HERE = os.path.dirname(os.path.abspath(__file__))
REFS = os.path.join(HERE, "screenshots")
BROWSER_JSON = os.path.join(REFS, "browser.json")
UPDATE = os.environ.get("VIZMM_UPDATE_SCREENSHOTS") == "1"
OUT = os.path.join(os.path.dirname(HERE), "test-output", "screenshots-identity")


def _save(img: Image.Image, path: str) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    img.save(path, optimize=True)


def _same(got: Image.Image, name: str) -> None:
    """Assert ``got`` equals the reference ``name``.png pixel for pixel (or write it)."""
    ref_path = os.path.join(REFS, f"{name}.png")
    got = got.convert("RGB")
    if UPDATE:
        _save(got, ref_path)
        return
    assert os.path.exists(ref_path), (
        f"no reference {ref_path}: make it with VIZMM_UPDATE_SCREENSHOTS=1"
    )
    with Image.open(ref_path) as f:
        ref = f.convert("RGB")
    if ref.size != got.size:
        _save(got, os.path.join(OUT, f"{name}.png"))
        pytest.fail(f"{name}: size {got.size}, the reference is {ref.size}")
    box = ImageChops.difference(ref, got).getbbox()
    if box is not None:
        _save(got, os.path.join(OUT, f"{name}.png"))
        pytest.fail(f"{name}: pixels differ from the reference inside {box} (see {OUT})")


# --------------------------------------------------------------- Pillow frames
#: What drew the Pillow references: text is rasterised by FreeType through Pillow.
PILLOW_JSON = os.path.join(REFS, "pillow.json")


@pytest.fixture(scope="module")
def pillow_versions():
    """Skip where another Pillow or FreeType draws the frames than made the references."""
    import PIL
    from PIL import features

    here = {"pillow": PIL.__version__, "freetype2": features.version("freetype2")}
    if UPDATE:
        os.makedirs(REFS, exist_ok=True)
        with open(PILLOW_JSON, "w") as f:
            json.dump(here, f, indent=1)
            f.write("\n")
        return here
    with open(PILLOW_JSON) as f:
        made = json.load(f)
    if made != here:
        pytest.skip(
            f"the Pillow references were drawn by {made}; this is {here}: pixel identity "
            "holds only with the same Pillow and FreeType"
        )
    return here


def _preset(key: str):
    import vizmm
    from vizmm.trace.fileformat import load

    return load(os.path.join(os.path.dirname(vizmm.__file__), "data", f"{key}.vizmm"))


#: Each Pillow case: name -> (preset, renderer keywords, replay keywords, steps).
PILLOW_VIEWS = ("caption", "M", "N", "P", "Mds", "Nds", "threads", "legend", "source", "counters")
_HEADER_ONLY = ("caption", "legend", "source", "counters")
PILLOW_CASES = {
    **{
        f"view-{v}": (
            "fig5-8",
            {"views": (v, "M") if v in _HEADER_ONLY else (v,), "size": (480, 270)},
            {},
            (5,),
        )
        for v in PILLOW_VIEWS
    },
    "all": ("fig5-8", {"size": (1280, 720)}, {}, (3, -1)),
    "all-small": ("fig5-8", {"size": (640, 360)}, {}, (2, 11)),
    "boundary": ("fig5-11", {"size": (640, 360)}, {"block": (1, 1)}, (0, 6)),
    "unchecked": ("fig5-9-3x3", {"size": (640, 360)}, {}, (4, 9)),
    "dark": ("fig5-8", {"size": (640, 360), "theme": "dark"}, {}, (5,)),
    "follow": ("fig5-8", {"size": (640, 360)}, {"focus": (0, 1)}, (6,)),
    "phases": ("general", {"size": (640, 360)}, {"granularity": "phase"}, (1,)),
    "transactions": (
        "conflict",
        {"size": (960, 540), "transactions": True},
        {"transactions": True},
        (0, 6),
    ),
    "medium": ("medium", {"size": (640, 360)}, {}, (3,)),
}


@pytest.mark.parametrize("case", list(PILLOW_CASES))
def test_pillow_frames_are_the_references(case, pillow_versions):
    from vizmm.render.pillow import FrameRenderer
    from vizmm.replay import Replay

    key, kw, rkw, steps = PILLOW_CASES[case]
    trace = _preset(key)
    renderer = FrameRenderer(trace, **kw)
    replay = Replay(trace, **rkw)
    for step in steps:
        i = step % len(replay)
        _same(renderer.render(replay.frame(i)), f"pillow-{case}-{i}")


def test_pillow_finding_marks_are_the_references(pillow_versions):
    import check_kernels as ck

    import vizmm
    from vizmm.render.pillow import FrameRenderer
    from vizmm.replay.findings import finding_marks, with_finding

    report = vizmm.check(ck.transposed_tile, width=4, tile_width=2, backend="simulator")
    from vizmm.replay import Replay

    marks = finding_marks(report.findings[0], 0)
    # block (0, 0) following thread (0, 1), k = 0 of phase 0 (tests/test_findings_view.py)
    frame = with_finding(Replay(report.trace, (0, 0), focus=(0, 1)).frame(5), marks)
    _same(FrameRenderer(report.trace, size=(640, 360)).render(frame), "pillow-finding")


# --------------------------------------------------------------- served pages
#: The pages: name -> (server fixture, path and query).
PAGES = {
    "dashboard": ("dashboard_url", ""),
    "transactions": ("dashboard_url", "?trace=coalesced&transactions=true&step=4"),
    "dark": ("dashboard_url", "?theme=dark&step=6"),
    "presenter": ("dashboard_url", "?trace=fig5-11&step=12&presenter=true"),
    "follow": ("dashboard_url", "?trace=fig5-9-3x3&step=9&ty=0&tx=1"),
    "large": ("large_view_url", ""),
    "findings": ("checked_url", "/dashboard?trace=file%3Atransposed.vizmm&finding=1"),
}
SIZES = ((1280, 720), (1024, 768))

#: The page's ready element, per server fixture.
READY = {
    "dashboard_url": "#vizmm-status[data-ready='true'][data-busy='']",
    "checked_url": "#vizmm-status[data-ready='true'][data-busy=''][data-thread='[0, 1]']",
    "large_view_url": "#vizmm-large-status[data-ready='true']",
}


#: For ``wait_for_function``: the Bokeh model named ``name`` is drawn and its bottom is at
#: most ``h`` pixels down the page (tests/test_first_screen_browser.py's ``BOX_OF``).
FITTED = """([h, name]) => { for (const d of Bokeh.documents) for (const m of d.all_models)
  if (m.name === name) { const v = Bokeh.index.find_one_by_id(m.id);
    if (v && v.el.getBoundingClientRect().bottom <= h) return true; }
  return false; }"""


#: For ``wait_for_function``: the Bokeh model named ``name`` is ``w`` pixels wide.
WIDE = """([name, w]) => Bokeh.documents.length > 0 &&
  [...Bokeh.documents[0].all_models].some(m => m.name === name && m.width === w)"""


def _presenter_width(width: int, height: int) -> int:
    """The width of presenter mode's matrices plot, fitted to a window of this size.

    The dashboard first draws the scene at the default size, then again once
    the browser has said its window's size; the second is the one compared.
    """
    from vizmm.render.bokeh_scene import PRESENTER_VIEWS, Scene
    from vizmm_apps.dashboard import PRESENTER_CHROME, PRESENTER_MIN

    fit = (
        max(PRESENTER_MIN[0], (width - PRESENTER_CHROME[0]) // 20 * 20),
        max(PRESENTER_MIN[1], (height - PRESENTER_CHROME[1]) // 20 * 20),
    )
    scene = Scene(_preset("fig5-11"), views=PRESENTER_VIEWS, presenter=True, fit=fit)
    return scene.figures["M"].width


@pytest.fixture(scope="module")
def checked_url(tmp_path_factory):
    """``vizmm serve --traces`` a checked trace with findings: the server's base URL."""
    import check_kernels as ck
    from served import vizmm_serve

    import vizmm

    report = vizmm.check(ck.transposed_tile, width=4, tile_width=2, backend="simulator")
    folder = tmp_path_factory.mktemp("checked-shots")
    path = folder / "transposed.vizmm"
    report.trace.save(str(path))
    with vizmm_serve(folder, "--traces", str(path)) as (_proc, base):
        yield base


@pytest.fixture(scope="module")
def chromium(browser):
    """The session's Chromium, skipped where it is not the one that made the references."""
    made = {}
    if os.path.exists(BROWSER_JSON):
        with open(BROWSER_JSON) as f:
            made = json.load(f)
    here = {"chromium": browser.version, "platform": f"{platform.system()} {platform.machine()}"}
    if UPDATE:
        os.makedirs(REFS, exist_ok=True)
        with open(BROWSER_JSON, "w") as f:
            json.dump(here, f, indent=1)
            f.write("\n")
    elif made.get("chromium") != here["chromium"]:
        pytest.skip(
            f"the page references were made by Chromium {made.get('chromium')} "
            f"({made.get('platform')}); this is Chromium {here['chromium']}: pixel identity "
            "holds only on the same browser"
        )
    return browser


@pytest.mark.parametrize(("width", "height"), SIZES)
@pytest.mark.parametrize("page", list(PAGES))
def test_pages_are_the_references(request, chromium, page, width, height):
    from served import wait_drawn

    fixture, path = PAGES[page]
    base = request.getfixturevalue(fixture)
    pg = chromium.new_page(viewport={"width": width, "height": height})
    try:
        pg.goto(base + path)
        pg.wait_for_selector(READY[fixture], timeout=120000)
        if page == "presenter":  # the scene is made again, fitted, once the window is known
            pg.wait_for_function(WIDE, arg=["vizmm-matrices", _presenter_width(width, height)])
        if page == "large":  # the grid is made again, fitted, once the browser has said its size
            pg.wait_for_function(FITTED, arg=[height, "vizmm-block-grid"], timeout=60000)
            pg.wait_for_function(FITTED, arg=[1e9, "vizmm-sm-gantt"], timeout=60000)
        wait_drawn(pg)
        # the whole page at 1280 x 720 (the views below the fold too), the window at 1024 x 768
        full = (width, height) == SIZES[0]
        shot = pg.screenshot(animations="disabled", caret="hide", full_page=full)
    finally:
        pg.close()
    _same(Image.open(io.BytesIO(shot)), f"page-{page}-{width}x{height}")
