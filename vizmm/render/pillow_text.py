"""Type for the Pillow renderer: DejaVu's files found, sized fonts, text measured and drawn.

Shared by :mod:`vizmm.render.pillow` and the Pillow drawing of the views
(:mod:`vizmm.render.views`).
"""

from __future__ import annotations

import os
from functools import lru_cache

from PIL import ImageFont

from . import palette as pal

__all__ = ["font_path"]

_FONT_FILES = {
    "regular": ("DejaVuSans.ttf",),
    "bold": ("DejaVuSans-Bold.ttf",),
    "mono": ("DejaVuSansMono.ttf",),
}


_FONT_DIRS = (
    "/usr/share/fonts/truetype/dejavu",
    "/usr/share/fonts/TTF",
    "/usr/share/fonts/dejavu",
    "/usr/local/share/fonts",
    "/Library/Fonts",
    "C:/Windows/Fonts",
)


@lru_cache(maxsize=8)
def font_path(style: str = "regular") -> str | None:
    """Path of a DejaVu TrueType file for ``style`` ('regular', 'bold', 'mono'), or None.

    Looks in the usual system font folders and in matplotlib's bundled fonts.
    """
    names = _FONT_FILES[style]
    dirs = list(_FONT_DIRS)
    try:  # matplotlib ships DejaVu; use it where the system has none
        import importlib.util

        spec = importlib.util.find_spec("matplotlib")
        if spec and spec.submodule_search_locations:
            dirs.append(os.path.join(spec.submodule_search_locations[0], "mpl-data/fonts/ttf"))
    except (ImportError, ValueError):
        pass
    for d in dirs:
        for n in names:
            p = os.path.join(d, n)
            if os.path.isfile(p):
                return p
    return None


@lru_cache(maxsize=256)
def _font(size: int, style: str = "regular") -> ImageFont.FreeTypeFont | ImageFont.ImageFont:
    size = max(1, int(size))
    path = font_path(style)
    if path is not None:
        try:
            return ImageFont.truetype(path, size)
        except OSError:
            pass
    return ImageFont.load_default(size=size)  # scalable (Pillow >= 10.1)


def _text_w(text: str, size: int, style: str = "regular") -> float:
    return _font(size, style).getlength(text)


def _draw_text(draw, xy, text: str, size: int, fill, anchor: str = "la", style: str = "regular"):
    """Draw ``text`` at ``xy`` (pixels; ``anchor`` as Pillow's) in ``style`` type of ``size``."""
    draw.text(xy, text, font=_font(size, style), fill=fill, anchor=anchor)


def _fit_size(text: str, size: int, max_w: float, style: str = "regular", min_size: int = 8):
    """Largest font size <= size at which ``text`` fits in ``max_w`` pixels (>= min_size)."""
    while size > min_size and _text_w(text, size, style) > max_w:
        size -= 1
    return size


def _wrap(text: str, size: int, max_w: float, style: str = "regular") -> list[str]:
    words = text.split()
    lines: list[str] = []
    cur = ""
    for w in words:
        trial = f"{cur} {w}" if cur else w
        if cur and _text_w(trial, size, style) > max_w:
            lines.append(cur)
            cur = w
        else:
            cur = trial
    if cur:
        lines.append(cur)
    return lines or [""]


def _ellipsize(text: str, size: int, max_w: float, style: str = "regular") -> str:
    if _text_w(text, size, style) <= max_w:
        return text
    while text and _text_w(text + "…", size, style) > max_w:
        text = text[:-1]
    return text + "…"


def _rgb(color: str) -> tuple[int, int, int]:
    return pal.hex_to_rgb(color)


def _ink_on(fill: tuple[int, ...]) -> tuple[int, int, int]:
    """Dark text on light fills, white text on dark ones (:func:`vizmm.render.palette.text_on`)."""
    return _rgb(pal.text_on("#{:02x}{:02x}{:02x}".format(*(int(v) for v in fill))))
