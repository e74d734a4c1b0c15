"""Run one recording in a fresh process (used when the caller compiles for another target).

Usage: ``python -m vizmm.record.worker IN.npz OUT.vizmm JOB``: M, N and the
blocks in ``IN.npz``, the rest of the :class:`~vizmm.record.launcher.Job` as
JSON (``Job.to_json``); the environment (``NUMBA_ENABLE_CUDASIM``,
``VIZMM_KERNELS_TARGET``: :func:`vizmm.record.targets.environment`) picks
the target. A known failure (:class:`~vizmm.record.targets.GPUUnavailableError`,
:class:`~vizmm.record.admission.RecordError`) is written as its one line to
``OUT.vizmm.error`` and ends the process with
:data:`~vizmm.record.targets.EXIT_KNOWN`.
"""

import sys

import numpy as np

from .admission import RecordError
from .launcher import Job, launch
from .recorder import _LOCK
from .targets import EXIT_KNOWN, GPUUnavailableError, bind_here


def main(argv):
    """Record the job described by ``argv`` (see the module docstring); 0 on success."""
    inp, out, job = argv
    with np.load(inp, allow_pickle=False) as z:
        M, N, blocks = z["M"], z["N"], [tuple(b) for b in z["blocks"].tolist()]
    job = Job.from_json(job, blocks)
    try:
        bind_here(job.target)
        with _LOCK:
            trace = launch(job, M, N, show=False)
    except (GPUUnavailableError, RecordError) as exc:
        with open(out + ".error", "w", encoding="utf-8") as f:
            f.write(" ".join(str(exc).split()))
        return EXIT_KNOWN
    trace.save(out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
