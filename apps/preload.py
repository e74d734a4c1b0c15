"""Get a server process ready before it listens (``panel serve ... --setup apps/preload.py``).

``vizmm serve`` passes it; with ``--num-procs N`` Panel runs it once in each
process. It reads the shipped traces (every session of the process then
shares them) and the barrier lab's findings, then builds one dashboard page
and throws it away: the libraries a page needs are imported before the first
visitor, not while the first class waits. Bokeh's validation of every new
session's document (warnings in the log, nothing a visitor sees) is turned
off, and what the process holds by then is frozen out of the garbage
collector's walks (``gc.freeze``), as each page will be once built
(``vizmm_apps.parts.freeze_built_pages``).

Only public settings and hooks of Bokeh, Panel and Tornado are used: no
method or private attribute of theirs is replaced.
"""

import gc
import sys

import panel as pn
from bokeh.settings import settings  # noqa: E402

from vizmm.render.bokeh_scene import table_extent  # noqa: E402
from vizmm.serve.caches import CACHES  # noqa: E402
from vizmm.serve.catalogue import CATALOGUE, LAB_PRESETS, PRESETS  # noqa: E402
from vizmm.serve.memory import give_back_memory  # noqa: E402
from vizmm_apps.barrier_view import lab_findings  # noqa: E402
from vizmm_apps.parts import freeze_built_pages  # noqa: E402

for _key, _problem in CATALOGUE.preload().items():
    print(f"vizmm: preset {_key} not loaded: {_problem}", file=sys.stderr)
for _key in LAB_PRESETS:  # the barrier lab's hazard lists, kept on each trace for every session
    _trace = CATALOGUE.cached(_key)
    if _trace is not None:
        lab_findings(_trace)
for _key, _preset in PRESETS.items():  # the Fig. 5.8 table's size, per preset's block replay
    _trace = CATALOGUE.cached(_key)
    if _trace is not None and not _preset.large:
        table_extent(_trace)
CACHES.clear()  # the labels drawn for that are not kept
give_back_memory()

settings.perform_document_validation.set_value(False)

# Built pages' objects leave the collector's walks (vizmm_apps.parts.freeze_built_pages).
freeze_built_pages()


# Panel rewrites the signatures of all its classes on every pn.extension()
# call, that is, for every new page: thousands of objects that outlive the
# page, made among its objects, so the page's memory cannot be given back once
# it closes. They are for a notebook's tab completion; a server has no use.
pn.config.apply_signatures = False


def _warm() -> None:
    # What a first served page would import or read on first use, done now: a
    # module imported while a page is built stays, among that page's objects.
    import encodings.ascii  # noqa: F401

    import numpy.ma  # noqa: F401
    import panel.io.browser  # noqa: F401
    import panel.io.location  # noqa: F401
    from bokeh.document import Document

    from vizmm_apps.dashboard import create_app

    doc = Document()
    doc.add_root(create_app(served=False).__panel__().get_root(doc))
    doc.to_json()


_warm()

# What the process holds from now on (libraries, shipped traces) is kept for
# good: the garbage collector no longer walks it on every collection while
# pages are built.
give_back_memory()
gc.freeze()
