"""Where the apps' traces come from: a thin alias of :mod:`vizmm.catalogue`.

The presets, the recordings named by a key, uploads and the one cache of the
process live in :mod:`vizmm.catalogue` (:data:`~vizmm.catalogue.CATALOGUE`);
the apps that still say ``traces.get_trace(key)`` read them through here.
"""

from vizmm.catalogue import (
    CATALOGUE,
    DEFAULT,
    LAB_PRESETS,
    LARGE_PRESETS,
    PRESETS,
    Preset,
    RecordSpec,
    label_of,
    parse_key,
)

__all__ = [
    "DEFAULT",
    "LAB_PRESETS",
    "LARGE_PRESETS",
    "PRESETS",
    "Preset",
    "RecordSpec",
    "cached",
    "get_trace",
    "label_of",
    "parse_key",
    "register_upload",
]

get_trace = CATALOGUE.get
cached = CATALOGUE.cached
register_upload = CATALOGUE.register_upload
