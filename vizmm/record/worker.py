"""Run one recording in a fresh process (used when the caller's numba is in the other mode).

Usage: ``python -m vizmm.record.worker IN.npz OUT.vizmm JOB``: M, N and the
blocks in ``IN.npz``, the rest of the :class:`~vizmm.record.launcher.Job` as
JSON (``Job.to_json``); the environment's ``NUMBA_ENABLE_CUDASIM`` picks the
backend.
"""

import sys

import numpy as np

from .launcher import Job, launch
from .recorder import _LOCK


def main(argv):
    """Record the job described by ``argv`` (see the module docstring); 0 on success."""
    inp, out, job = argv
    with np.load(inp, allow_pickle=False) as z:
        M, N, blocks = z["M"], z["N"], [tuple(b) for b in z["blocks"].tolist()]
    with _LOCK:
        trace = launch(Job.from_json(job, blocks), M, N, show=False)
    trace.save(out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
