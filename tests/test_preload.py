"""The served process's setup (apps/preload.py): what it turns off, and what it must not."""

import os
import subprocess
import sys

import pytest

import vizmm_apps

PRELOAD = os.path.join(os.path.dirname(vizmm_apps.__file__), "preload.py")

# Runs the setup as ``panel serve --setup`` does (a fresh process), then reports
# what it left set: property validation before and after, document validation,
# Panel's signature rewriting.
_REPORT = f"""
import runpy
from bokeh.core.property.bases import validation_on
from bokeh.settings import settings
import panel as pn
before = validation_on()
runpy.run_path({PRELOAD!r})
print("REPORT", before, validation_on(), settings.perform_document_validation(),
      pn.config.apply_signatures)
"""


@pytest.mark.slow  # a served process's set-up run in a fresh interpreter
def test_a_served_process_keeps_bokehs_property_checks():
    """The setup turns off Bokeh's document validation and Panel's signatures, not more.

    Bokeh's property checks cost a sixth of a new page's CPU, but turning them
    off (``validate(False)``) also skips the conversions Bokeh makes of values
    that fail them: a served page of a checked trace then failed in BokehJS
    ("n is not iterable" while drawing a glyph's visuals), though every value
    the page's models held in-process was valid.
    """
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1")
    out = subprocess.run(
        [sys.executable, "-c", _REPORT], env=env, capture_output=True, text=True, timeout=600
    )
    assert out.returncode == 0, out.stderr[-2000:]
    report = [line for line in out.stdout.splitlines() if line.startswith("REPORT")]
    assert report == ["REPORT True True False False"]
