"""The palette under simulated colour-vision deficiencies.

Independent oracle: colorspacious simulates deuteranopia, protanopia and
tritanopia (Machado, Oliveira & Fernandes 2009, severity 100) and measures
colour distance in CAM02-UCS. The threshold is not ours: it is the distance of
the closest pair of the Okabe-Ito palette (Okabe & Ito 2002, the usual set for
colour-blind readers) under the same three simulations, computed here. Every
pair of states a student must tell apart in one view must be at least that far
apart for normal vision and for each deficiency, in both themes.
"""

import itertools

import numpy as np
import pytest

colorspacious = pytest.importorskip("colorspacious")
from colorspacious import cspace_convert, deltaE  # noqa: E402

from vizmm.render import palette as pal  # noqa: E402
from vizmm.replay import CellState, SlotState, ThreadState  # noqa: E402
from vizmm.replay.large import BlockState  # noqa: E402

DEFICIENCIES = ("deuteranomaly", "protanomaly", "tritanomaly")  # at severity 100: -anopia
OKABE_ITO = ("#000000", "#e69f00", "#56b4e9", "#009e73", "#f0e442", "#0072b2", "#d55e00", "#cc79a7")


def srgb(color):
    c = color.lstrip("#")
    return np.array([int(c[i : i + 2], 16) for i in (0, 2, 4)]) / 255.0


def seen(color, deficiency):
    """The sRGB colour a viewer with ``deficiency`` (None: normal vision) sees."""
    rgb = srgb(color)
    if deficiency is None:
        return rgb
    cvd = {"name": "sRGB1+CVD", "cvd_type": deficiency, "severity": 100}
    return np.clip(cspace_convert(rgb, cvd, "sRGB1"), 0, 1)


def distance(a, b, deficiency):
    """CAM02-UCS colour difference of a and b as seen with ``deficiency``."""
    return float(deltaE(seen(a, deficiency), seen(b, deficiency), input_space="sRGB1"))


def worst(a, b):
    return min(distance(a, b, d) for d in (None, *DEFICIENCIES))


THRESHOLD = min(worst(a, b) for a, b in itertools.combinations(OKABE_ITO, 2))


def views(p):
    """The states a student tells apart, view by view: {view: {label: colour}}."""
    cells = {CellState(c).name: p.CELL_COLORS[c] for c in CellState if c != CellState.LOADING}
    cells["P written"] = p.P_WRITTEN_COLOR
    return {
        "threads": {s.name: p.THREAD_STATE_COLORS[s] for s in ThreadState},
        "slots": {s.name: p.SLOT_COLORS[s] for s in SlotState},
        "cells": cells,
        "blocks": {s.name: p.BLOCK_STATE_COLORS[s] for s in BlockState},
        "outlines": {"tile": p.TILE_OUTLINE, "focus": p.FOCUS, "read": p.READ},
        "barriers": dict(zip(("barrier 1", "barrier 2"), p.BARRIER_COLORS, strict=True)),
    }


def test_threshold_is_the_okabe_ito_minimum():
    # the simulation really merges colours: red and green nearly meet for a deuteranope
    normal = distance("#ff0000", "#00ff00", None)
    assert normal > 60
    assert distance("#ff0000", "#00ff00", "deuteranomaly") < normal / 2
    # Okabe-Ito stays apart; its closest pair sets the bar (about 11 CAM02-UCS units)
    assert 8 < THRESHOLD < 14


@pytest.mark.parametrize("theme", sorted(pal.THEMES))
@pytest.mark.parametrize("view", ["threads", "slots", "cells", "blocks", "outlines", "barriers"])
def test_every_pair_of_states_stays_apart(theme, view):
    colors = views(pal.palette(theme))[view]
    too_close = []
    for (a, ca), (b, cb) in itertools.combinations(colors.items(), 2):
        for d in (None, *DEFICIENCIES):
            dist = distance(ca, cb, d)
            if dist < THRESHOLD:
                too_close.append(f"{a} {ca} / {b} {cb} under {d or 'normal vision'}: {dist:.1f}")
    assert not too_close, f"{theme} {view} (threshold {THRESHOLD:.1f}):\n" + "\n".join(too_close)


@pytest.mark.parametrize("deficiency", DEFICIENCIES)
def test_the_pairs_the_issue_named(deficiency):
    # "waiting at barrier 1" vs "released" and Mds "loaded" vs "wrong element" were
    # 8 and 14 (CIE76) under deuteranopia; now well apart under every deficiency
    for p in pal.THEMES.values():
        t, s = p.THREAD_STATE_COLORS, p.SLOT_COLORS
        assert distance(t[ThreadState.WAITING_1], t[ThreadState.RELEASED], deficiency) > 20
        assert distance(s[SlotState.LOADED], s[SlotState.WRONG], deficiency) > 20


@pytest.mark.parametrize("theme", sorted(pal.THEMES))
def test_states_stand_out_from_the_background(theme):
    p = pal.palette(theme)
    for color in (*p.THREAD_STATE_COLORS.values(), p.READ, p.FOCUS, p.TILE_OUTLINE):
        assert distance(color, p.BACKGROUND, None) > 5, color
    # text is readable on the background in both themes
    assert distance(p.TEXT, p.BACKGROUND, None) > 60


def test_unknown_theme_is_refused_in_plain_words():
    with pytest.raises(ValueError, match="unknown theme 'sepia'; choose from 'light', 'dark'"):
        pal.palette("sepia")
    assert pal.palette("dark") is pal.DARK and pal.palette(pal.LIGHT) is pal.LIGHT


# ------------------------------------------------ every renderer, one picture
@pytest.fixture(scope="module")
def fig58(record_sim):
    return record_sim(width=4, tile_width=2, kernel="boundary")


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_dashboard_gif_and_html_show_the_same_colours(fig58, theme):
    import json
    import re

    from vizmm import export as ex
    from vizmm.render.bokeh_scene import Scene, frame_columns
    from vizmm.render.pillow import FrameRenderer
    from vizmm.replay import Replay, Sub

    p = pal.palette(theme)
    replay = Replay(fig58)
    i = replay.index_of(0, Sub.ARRIVE_1)  # Fig. 5.9 line 11: every thread waits at barrier 1
    frame = replay.frame(i)
    want = p.THREAD_STATE_COLORS[ThreadState.WAITING_1]
    # the dashboard's scene
    scene = Scene(fig58, theme=theme)
    scene.update(frame)
    assert list(scene.sources["threads"].data["fill"]) == [want] * 4
    assert scene.figures["threads"].background_fill_color == p.BACKGROUND
    # the GIF / MP4 frames
    r = FrameRenderer(fig58, size=(1280, 720), theme=theme)
    img = r.render(frame)
    assert img.getpixel((2, 2)) == pal.hex_to_rgb(p.BACKGROUND)
    x0, y0, x1, y1 = r.panels["threads"].cell_box(1, 0)
    assert img.getpixel(((x0 + x1) // 2, y1 - 3)) == pal.hex_to_rgb(want)
    # the HTML export: the same columns for that frame, the page in the theme's background
    html = ex.export_bytes(fig58, "html", theme=theme).decode()
    pack = json.loads(re.search(r'id="vizmm-frames">(.*?)</script>', html, re.S).group(1))
    got = pack["pool"][pack["frames"][i]["threads"]["fill"]]
    assert got == [want] * 4 == frame_columns(frame, fig58, theme=theme)["threads"]["fill"]
    assert f"background: {p.BACKGROUND}" in html


def test_themes_differ_where_they_should(fig58):
    from vizmm.render.bokeh_scene import frame_columns
    from vizmm.replay import Replay

    frame = Replay(fig58).frame(0)
    light = frame_columns(frame, fig58, theme="light")
    dark = frame_columns(frame, fig58, theme="dark")
    assert light["threads"]["fill"] == [pal.LIGHT.THREAD_STATE_COLORS[ThreadState.READY]] * 4
    assert dark["threads"]["fill"] == [pal.DARK.THREAD_STATE_COLORS[ThreadState.READY]] * 4
    assert light["caption"]["color"][0] == pal.LIGHT.TEXT != dark["caption"]["color"][0]
    with pytest.raises(ValueError, match="unknown theme"):
        frame_columns(frame, fig58, theme="blue")


def test_cli_export_takes_the_theme(fig58, tmp_path, capsys):
    from PIL import Image

    from vizmm.cli import main

    path = fig58.save(tmp_path / "fig58.vizmm")
    out = tmp_path / "dark.gif"
    assert main(["export", str(path), "-o", str(out), "--theme", "dark", "-q"]) == 0
    with Image.open(out) as gif:
        assert gif.convert("RGB").getpixel((2, 2)) == pal.hex_to_rgb(pal.DARK.BACKGROUND)
    assert main(["export", str(path), "-o", str(tmp_path / "x.gif"), "--theme", "sepia"]) == 2
    assert "invalid choice: 'sepia'" in capsys.readouterr().err
    assert not (tmp_path / "x.gif").exists()
