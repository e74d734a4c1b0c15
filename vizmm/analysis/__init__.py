"""Analyses: pure NumPy functions over a trace (hazards, occupancy, memory transactions).

Same layer as the replay: they read a :class:`~vizmm.trace.Trace` (or sizes
alone) and import neither numba nor a renderer. Every module here is NumPy
only and imports nothing of vizmm but :mod:`vizmm.trace` and this folder
(``tests/test_layers.py`` holds them to it).
"""
