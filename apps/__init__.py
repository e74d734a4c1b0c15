"""Panel apps of vizmm: ``panel serve apps/dashboard.py``.

* :mod:`apps.dashboard`: the dashboard (state, controls, the Bokeh scene).
* :mod:`apps.traces`: presets and the process-wide cache of recorded traces.
* :mod:`apps.keys`: keyboard shortcuts (a small JSComponent).
"""
