"""What a server process holds: traces, classes, caches, memory, the server command.

This layer owns the state that ``vizmm serve`` (``panel serve`` of the pages
of ``vizmm_apps``) keeps for its pages: :mod:`vizmm.serve.catalogue` (the
traces a page may open), :mod:`vizmm.serve.classes` (the classes of class
mode, shared between the server's processes), :mod:`vizmm.serve.listeners`
(this process's pages of each class), :mod:`vizmm.serve.caches` (the
one registry of drawing caches), :mod:`vizmm.serve.memory` (memory given back
after pages close) and :mod:`vizmm.serve.command` (the ``panel serve``
command, its environment and process group). Nothing in it draws: it
imports no Panel, Bokeh, Pillow nor :mod:`vizmm.render`
(``tests/test_layers.py`` checks this); the pages of ``apps/`` and the CLI
import it. See ``vizmm/serve/ARCHITECTURE.md``.
"""
