"""Deprecated alias: the Fig. 5.8 table moved.

The model is :mod:`vizmm.replay.table`; ``format_table`` and ``render_text``
are in :mod:`vizmm.render.text`.
"""

import warnings

warnings.warn(
    "vizmm.table is deprecated: the Fig. 5.8 table model is vizmm.replay.table; "
    "format_table and render_text are in vizmm.render.text",
    DeprecationWarning,
    stacklevel=2,
)

from .render.text import format_table, render_text  # noqa: E402, F401
from .replay.table import *  # noqa: E402, F403
