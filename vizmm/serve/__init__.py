"""What a server process holds: the class store now.

This layer owns the state that ``vizmm serve`` (``panel serve`` of ``apps/``)
keeps for its pages and shares between its processes: :mod:`vizmm.serve.classes`,
the classes of class mode (``/dashboard?class=...``). Nothing in it draws: it
imports no Panel and no Bokeh (``tests/test_layers.py`` checks this); the
pages of ``apps/`` import it.
"""
