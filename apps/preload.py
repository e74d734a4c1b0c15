"""Read the shipped traces before the server listens (``panel serve ... --setup apps/preload.py``).

``vizmm serve`` passes it; with ``--num-procs N`` Panel runs it once in each
process. Every session of the process then shares the traces read here.
"""

import os
import sys

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)

from apps.barrier_view import lab_findings  # noqa: E402
from vizmm.catalogue import CATALOGUE, LAB_PRESETS  # noqa: E402

for _key, _problem in CATALOGUE.preload().items():
    print(f"vizmm: preset {_key} not loaded: {_problem}", file=sys.stderr)
for _key in LAB_PRESETS:  # the barrier lab's hazard lists, found once for every session
    _trace = CATALOGUE.cached(_key)
    if _trace is not None:
        lab_findings(_trace)
