"""Run one recording in a fresh process (used when the caller compiles for another target).

Usage: ``python -m vizmm.record.worker IN.npz OUT.vizmm JOB [FD]``: M, N and
the blocks in ``IN.npz``, the rest of the :class:`~vizmm.record.launcher.Job`
as JSON (``Job.to_json``); each block done is written to the file descriptor
``FD`` (a pipe the parent reads) as a line ``done total``; the environment
(``NUMBA_ENABLE_CUDASIM``, ``VIZMM_KERNELS_TARGET``:
:func:`vizmm.record.targets.environment`) picks the target. A known
failure (:class:`~vizmm.record.targets.GPUUnavailableError`,
:class:`~vizmm.record.admission.RecordError`) is written as its one line to
``OUT.vizmm.error`` and ends the process with
:data:`~vizmm.record.targets.EXIT_KNOWN`.
"""

import os
import sys

import numpy as np

from .admission import RecordError
from .launcher import Job, launch
from .recorder import _LOCK
from .targets import EXIT_KNOWN, GPUUnavailableError, bind_here

#: Limits of a worker that runs a user's kernel file: CPU seconds, and address
#: space (bytes) in the simulator (a GPU driver reserves far more address space).
USER_CPU_SECONDS = 3600
USER_ADDRESS_SPACE = 16 << 30


def _limit_resources(target: str) -> None:
    """Cap CPU time (and, simulating, address space) before a user's file is run."""
    import resource

    resource.setrlimit(resource.RLIMIT_CPU, (USER_CPU_SECONDS, USER_CPU_SECONDS))
    if target in ("numba-cuda-simulator", "vizmm-simulator"):
        resource.setrlimit(resource.RLIMIT_AS, (USER_ADDRESS_SPACE, USER_ADDRESS_SPACE))


def main(argv):
    """Record the job described by ``argv`` (see the module docstring); 0 on success.

    Parameters
    ----------
    argv : sequence of str
        ``(input .npz, output path, job as JSON[, progress fd])``, as the
        parent passes them.
    """
    inp, out, job, *fd = argv
    report = _reporter(int(fd[0])) if fd else False
    with np.load(inp, allow_pickle=False) as z:
        M, N, blocks = z["M"], z["N"], [tuple(b) for b in z["blocks"].tolist()]
    job = Job.from_json(job, blocks)
    if job.user_kernel:  # a user's file runs here, in this child, under limits
        _limit_resources(job.target)
    try:
        bind_here(job.target)
        with _LOCK:
            trace = launch(job, M, N, show=report)
    except Exception as exc:
        if isinstance(exc, (GPUUnavailableError, RecordError)):
            return _known(out, "", exc)
        # the instrumenter is imported only here, once the target is bound: importing it
        # imports the kernels' compiler, which must not fail before bind_here says why
        from .instrument import InstrumentError

        if not isinstance(exc, InstrumentError):
            raise
        return _known(out, "InstrumentError: ", exc)
    trace.save(out)
    return 0


def _reporter(fd: int):
    """``update(done, total)`` writing ``done total`` lines to ``fd``; quiet once it is closed."""
    closed: list[bool] = []

    def update(done: int, total: int) -> None:
        if closed:
            return
        try:
            os.write(fd, f"{done} {total}\n".encode())
        except OSError:  # the parent went away: record on, say nothing
            closed.append(True)

    return update


def _known(out: str, mark: str, exc: BaseException) -> int:
    """Write a known failure's one line beside ``out``; return :data:`EXIT_KNOWN`."""
    with open(out + ".error", "w", encoding="utf-8") as f:
        f.write(mark + " ".join(str(exc).split()))
    return EXIT_KNOWN


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
