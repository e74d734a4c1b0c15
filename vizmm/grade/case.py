"""One case's recording, made in a process apart: ``python -I -m vizmm.grade.case < SPEC``.

The grader (:mod:`vizmm.grade.runner`) starts this module through
:mod:`vizmm.grade.sandbox`, in a fresh empty folder of its own, under limits,
and gives it the case's spec as one JSON object on its standard input (no
file of the grader's is named on its command line). The spec names the
submission's file (a copy, in this folder), the kernel, its signature, the
module constant that holds TILE_WIDTH, the case's shape, TILE_WIDTH, seed,
backend and whether to log every access (``reads``). This process records
the kernel, as the front end reads it (:func:`vizmm.record.frontend.read_kernel`:
the file is parsed and checked, its module code never run), on the seeded
inputs and leaves ``trace.vizmm`` in its folder, or
``error.txt``: one line saying why it could not. That is all it does: the
grader computes the verdict from the recording, validated against the
launch (:mod:`vizmm.grade.judge`), and reads nothing else this process
writes (nor its exit code beyond how it ended).
"""

from __future__ import annotations

import json
import os
import sys
import threading
from typing import Any

__all__ = ["ERROR_FILE", "TRACE_FILE", "main", "record_case"]

#: Stack of each simulated CUDA thread (one Python thread each): small, so that
#: the address-space limit counts the submission's memory, not 8 MiB per thread.
THREAD_STACK_BYTES = 1 << 20
#: What the case leaves in its folder.
TRACE_FILE, ERROR_FILE = "trace.vizmm", "error.txt"


class SubmissionError(Exception):
    """The submission cannot be recorded on this case (its one line is the case's message)."""


def _load(spec: dict):
    """The submission's kernel as the front end reads it (never run), its TILE_WIDTH the case's."""
    from vizmm.record.frontend import KernelRejected, read_kernel

    path, name = spec["submission"], spec["kernel"]
    constants = (
        {spec["tile_width_name"]: spec["tile_width"]} if spec.get("tile_width_name") else None
    )
    try:
        ks = read_kernel(path, name, constants)
    except KernelRejected as exc:
        raise SubmissionError(str(exc)) from None
    want = spec.get("signature")
    if want and len(ks.params) != len(want):
        params = list(ks.params)
        raise SubmissionError(
            f"{name}({', '.join(params)}) takes {len(params)} argument(s); the assignment "
            f"asks for {name}({', '.join(want)})"
        )
    return ks


def record_case(spec: dict) -> str | None:
    """Record the case in this process; write ``trace.vizmm`` here, or return why not.

    Parameters
    ----------
    spec : dict
        ``submission`` (a file in the working folder), ``kernel``,
        ``signature`` (list of str, or empty: not checked),
        ``tile_width_name`` (or empty: not set), ``shape`` ([j, k, l]),
        ``tile_width``, ``seed``, ``backend``, ``reads`` (log every access:
        what :func:`vizmm.analysis.check.findings` reads).

    Returns
    -------
    str or None
        None when ``trace.vizmm`` was written; else one line saying why.
    """
    import vizmm
    from vizmm.trace import TraceError

    try:
        kern = _load(spec)
        j, k, l = spec["shape"]
        trace = vizmm.record(
            j,
            k,
            l,
            tile_width=spec["tile_width"],
            kernel=kern,
            backend=spec["backend"],
            seed=spec["seed"],
            reads=bool(spec.get("reads")),
            quiet=True,
            schedule=str(spec.get("schedule", "threads")),
        )
        trace.save(TRACE_FILE)
        return None
    except SubmissionError as exc:
        return str(exc)
    except TraceError as exc:
        return (
            "vizmm could not read this kernel's recording as a tiled matrix multiplication: "
            + " ".join(str(exc).split())
        )
    except MemoryError:
        return "the submission ran out of memory (the memory limit of a case)"
    except RecursionError:
        return "the submission recursed too deeply (RecursionError)"
    except Exception as exc:  # noqa: BLE001 - the student's error, told in one line
        text = " ".join(str(exc).split())
        if "MemoryError" in text:
            return "the submission ran out of memory (the memory limit of a case)"
        from vizmm.record import RecordError
        from vizmm.record.instrument import InstrumentError

        if isinstance(exc, (InstrumentError, RecordError)) and text:
            return text  # vizmm's own words: what was wrong and what is allowed
        return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


#: A kernel of vizmm's own, recorded once before the case becomes its user (see :func:`become`).
_WARM_UP = """
from numba import cuda, float32

TILE_WIDTH = 1


@cuda.jit
def matmul(M, N, P, Width):
    Mds = cuda.shared.array((TILE_WIDTH, TILE_WIDTH), float32)
    Nds = cuda.shared.array((TILE_WIDTH, TILE_WIDTH), float32)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    Row = cuda.blockIdx.y * TILE_WIDTH + ty
    Col = cuda.blockIdx.x * TILE_WIDTH + tx
    Pvalue = float32(0)
    for ph in range((Width + TILE_WIDTH - 1) // TILE_WIDTH):
        if Row < Width and ph * TILE_WIDTH + tx < Width:
            Mds[ty, tx] = M[Row * Width + ph * TILE_WIDTH + tx]
        else:
            Mds[ty, tx] = 0
        if ph * TILE_WIDTH + ty < Width and Col < Width:
            Nds[ty, tx] = N[(ph * TILE_WIDTH + ty) * Width + Col]
        else:
            Nds[ty, tx] = 0
        cuda.syncthreads()
        for k in range(TILE_WIDTH):
            Pvalue += Mds[ty, k] * Nds[k, tx]
        cuda.syncthreads()
    if Row < Width and Col < Width:
        P[Row * Width + Col] = Pvalue
"""


def become(uid: int, spec: dict) -> None:
    """Record a kernel of vizmm's own (every module the recording needs imported), then be ``uid``.

    For a grader running as root whose Python only root may read (installed
    under ``/root``): the case starts as root, runs no code of the
    submission's until it is the case's own user.

    Parameters
    ----------
    uid : int
        The case's user (and group).
    spec : dict
        The case's spec: its ``backend`` and ``reads`` are the warm-up's.

    Raises
    ------
    OSError
        When the user cannot be taken (the case then records nothing).
    """
    import vizmm
    from vizmm.record.frontend import read_kernel, read_source

    ks: Any = read_source(_WARM_UP, "matmul", constants={"TILE_WIDTH": 1})
    trace = vizmm.record(
        2, 2, 2, tile_width=1, kernel=ks, backend=spec["backend"], seed=0,
        reads=bool(spec.get("reads")), quiet=True,
    )  # fmt: skip
    trace.to_bytes()
    del read_kernel  # imported, with what it imports, while it still can be
    os.setgroups([])
    os.setgid(uid)
    os.setuid(uid)
    if os.getuid() != uid or os.geteuid() != uid:
        raise PermissionError("the case could not become its own user")


def main() -> int:
    """Read the spec from standard input, record, leave the trace or ``error.txt``; 0 always."""
    threading.stack_size(THREAD_STACK_BYTES)
    spec = json.loads(sys.stdin.readline())
    late = os.environ.pop("VIZMM_CASE_UID", None)
    if late is not None:
        try:
            become(int(late), spec)
        except Exception as exc:  # noqa: BLE001 - nothing of the submission's has run
            with open(ERROR_FILE, "w", encoding="utf-8") as f:
                f.write(f"the grader could not prepare this case ({type(exc).__name__}: {exc})")
            return 0
    try:
        error = record_case(spec)
    except SystemExit as exc:  # the submission's own sys.exit() while it was loaded or run
        error = f"the submission called sys.exit({exc.code!r}) instead of returning"
    except BaseException as exc:  # noqa: BLE001 - KeyboardInterrupt raised by the submission
        error = f"the submission raised {type(exc).__name__}"
    if error is not None:
        if os.path.exists(TRACE_FILE):
            os.remove(TRACE_FILE)
        with open(ERROR_FILE, "w", encoding="utf-8") as f:
            f.write(" ".join(error.split())[:1000])
    return 0


if __name__ == "__main__":
    sys.exit(main())
