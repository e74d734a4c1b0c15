"""Deprecated alias: the launch-level models moved to :mod:`vizmm.replay.large`."""

import warnings

warnings.warn(
    "vizmm.large is deprecated: the launch-level models are vizmm.replay.large",
    DeprecationWarning,
    stacklevel=2,
)

from .replay.large import *  # noqa: E402, F403
