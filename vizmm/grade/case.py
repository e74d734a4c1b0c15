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
        return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def main() -> int:
    """Read the spec from standard input, record, leave the trace or ``error.txt``; 0 always."""
    threading.stack_size(THREAD_STACK_BYTES)
    spec = json.loads(sys.stdin.readline())
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
