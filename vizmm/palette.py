"""Deprecated alias of :mod:`vizmm.render.palette` (the palette is vizmm.render.palette)."""

import warnings

warnings.warn(
    "vizmm.palette is deprecated: the palette is vizmm.render.palette",
    DeprecationWarning,
    stacklevel=2,
)

from .render.palette import *  # noqa: E402, F403
