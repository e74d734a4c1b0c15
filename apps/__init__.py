"""Panel apps of vizmm: ``vizmm serve`` (or ``panel serve apps/dashboard.py``).

The traces they show come from :mod:`vizmm.serve.catalogue` (presets, recordings,
uploads; one cache per process).

* :mod:`vizmm_apps.dashboard`: the dashboard (state, controls, the Bokeh scene).
* :mod:`vizmm_apps.large_view`: the large-matrix view (also a tab of the dashboard).
* :mod:`vizmm_apps.keys`: keyboard shortcuts (a small JSComponent).
"""
