"""Deprecated alias: the catalogue of served traces moved to :mod:`vizmm.serve.catalogue`.

It is what a server process holds, so it lives in the server-state layer.
Importing this module gives that module itself (the same object, so a test
that sets one of its names sets it for the server's pages too).
"""

import sys
import warnings

from .serve import catalogue as _catalogue

warnings.warn(
    "vizmm.catalogue is deprecated: the catalogue of served traces is vizmm.serve.catalogue",
    DeprecationWarning,
    stacklevel=2,
)

sys.modules[__name__] = _catalogue
