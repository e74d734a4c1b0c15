"""Draw docs/palette.png: every state colour as seen with normal vision and the three deficiencies.

Run from the repository's root: ``python scripts/palette_sheet.py [out.png]``.
The simulation is colorspacious's (Machado et al. 2009, severity 100), the
one tests/test_palette.py measures with.
"""

import sys

import numpy as np
from colorspacious import cspace_convert
from PIL import Image, ImageDraw, ImageFont

from vizmm.render import palette as pal
from vizmm.render.pillow import font_path
from vizmm.replay import CellState, SlotState, ThreadState

VISIONS = (None, "deuteranomaly", "protanomaly", "tritanomaly")
NAMES = ("normal vision", "deuteranopia", "protanopia", "tritanopia")


def seen(color, deficiency):
    """The 0..255 RGB a viewer with ``deficiency`` (None: normal vision) sees for ``color``."""
    rgb = np.array(pal.hex_to_rgb(color)) / 255
    if deficiency is not None:
        cvd = {"name": "sRGB1+CVD", "cvd_type": deficiency, "severity": 100}
        rgb = np.clip(cspace_convert(rgb, cvd, "sRGB1"), 0, 1)
    return tuple(int(round(v * 255)) for v in rgb)


def groups(p):
    """(title, [(name, colour), ...]) of each view's states in palette ``p``."""
    return [
        (
            "threads",
            [
                (
                    {ThreadState.WAITING_1: "wait 1", ThreadState.WAITING_2: "wait 2"}.get(s)
                    or p.THREAD_STATE_SHORT[s],
                    p.THREAD_STATE_COLORS[s],
                )
                for s in ThreadState
            ],
        ),
        (
            "Mds / Nds slots",
            [
                (n, p.SLOT_COLORS[s])
                for n, s in zip(
                    ("empty", "stale", "loaded", "zero-fill", "wrong", "skipped"),
                    (
                        SlotState.EMPTY,
                        SlotState.STALE,
                        SlotState.LOADED,
                        SlotState.ZERO,
                        SlotState.WRONG,
                        SlotState.SKIPPED,
                    ),
                    strict=True,
                )
            ],
        ),
        (
            "M, N, P cells",
            [
                (n, p.CELL_COLORS[c])
                for n, c in (
                    ("unused", CellState.NONE),
                    ("earlier", CellState.DONE),
                    ("tile", CellState.TILE),
                    ("read at k", CellState.READING),
                    ("summing", CellState.COMPUTING),
                )
            ]
            + [("P written", p.P_WRITTEN_COLOR)],
        ),
    ]


def main(out="docs/palette.png"):
    """Draw both themes side by side, one row per kind of vision."""
    sw, sh, label_w, pad = 74, 34, 150, 14
    font = ImageFont.truetype(font_path(), 13)
    bold = ImageFont.truetype(font_path("bold"), 15)
    themes = (pal.LIGHT, pal.DARK)
    width = label_w + 9 * sw + 2 * pad
    rows = sum(1 + len(VISIONS) for _ in groups(pal.LIGHT)) + 1
    img = Image.new("RGB", (width * 2, rows * (sh + 6) + 2 * pad), "white")
    d = ImageDraw.Draw(img)
    for ti, p in enumerate(themes):
        x0 = ti * width
        d.rectangle([x0, 0, x0 + width, img.height], fill=p.BACKGROUND)
        y = pad
        d.text((x0 + pad, y), f"{p.name} theme", font=bold, fill=p.TEXT)
        y += sh
        for title, entries in groups(p):
            d.text((x0 + pad, y + 8), title, font=bold, fill=p.TEXT)
            for i, (name, _) in enumerate(entries):
                d.text((x0 + label_w + i * sw, y + 10), name[:11], font=font, fill=p.TEXT)
            y += sh
            for vision, vname in zip(VISIONS, NAMES, strict=True):
                d.text((x0 + pad, y + 9), vname, font=font, fill=p.MUTED)
                for i, (_, color) in enumerate(entries):
                    box = [x0 + label_w + i * sw, y, x0 + label_w + (i + 1) * sw - 4, y + sh - 4]
                    d.rectangle(box, fill=seen(color, vision), outline=p.GRID_LINE)
                y += sh + 2
            y += 6
    img.save(out)
    print(f"wrote {out} ({img.width}x{img.height})")


if __name__ == "__main__":
    main(*sys.argv[1:])
