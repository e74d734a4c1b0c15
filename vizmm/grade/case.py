"""One case of a grading, run in a child process: ``python -m vizmm.grade.case SPEC.json``.

The parent (:mod:`vizmm.grade.runner`) starts this module with the CPU-time
and address-space limits already set (``RLIMIT_CPU``, ``RLIMIT_AS``) and a
wall-clock timeout of its own. ``SPEC.json`` names the submission, the kernel
and its signature, the case's shape and TILE_WIDTH, the seed, the backend and
the checks; this process loads the submission (its module code runs here, and
only here), sets its TILE_WIDTH constant to the case's, records the kernel on
the seeded inputs (``vizmm.check`` when this vizmm has it, else
``vizmm.record`` and NumPy), and writes ``result.json`` (and ``trace.vizmm``)
into the spec's folder. Whatever the submission does (raise, ``sys.exit``,
print) ends as a ``result.json`` with ``"error"``, or as a process that the
parent reads by its exit status; nothing here is trusted by the parent beyond
that JSON.
"""

from __future__ import annotations

import json
import math
import os
import sys
import threading
import time
from typing import Any

__all__ = ["CHECK_KINDS", "main", "run_case"]

#: Finding kinds (``vizmm.check``'s) that fail each check.
CHECK_KINDS: dict[str, tuple[str, ...]] = {
    "exact_p": ("wrong term", "wrong P"),
    "no_race": ("race",),
    "no_out_of_bounds": ("out of bounds",),
    "global_reads": ("more global reads than tiling needs",),
    "coalesced": ("uncoalesced",),
    "no_bank_conflicts": ("bank conflict",),
}

#: Stack of each simulated CUDA thread (one Python thread each): small, so that
#: the address-space limit counts the submission's memory, not 8 MiB per thread.
THREAD_STACK_BYTES = 1 << 20


class SubmissionError(Exception):
    """The submission cannot be graded on this case (its one line is the case's message)."""


def _finding(kind, message, block=None, thread=None, phase=None, k=None, expected=None, got=None):
    return {
        "kind": kind,
        "block": None if block is None else [int(v) for v in block],
        "thread": None if thread is None else [int(v) for v in thread],
        "phase": None if phase is None else int(phase),
        "k": None if k is None else int(k),
        "message": message,
        "expected": expected,
        "got": got,
    }


def _plain(v):
    """A JSON value of a finding's field (NumPy scalars, tuples)."""
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    if hasattr(v, "item") and not hasattr(v, "__len__"):
        return v.item()
    if isinstance(v, (list, tuple)) or hasattr(v, "tolist"):
        seq = v.tolist() if hasattr(v, "tolist") else v
        return [_plain(x) for x in seq]
    return str(v)


def _from_check(f) -> dict:
    """A ``vizmm.check`` Finding as the JSON of a case."""
    phase = getattr(f, "phase", None)
    if isinstance(phase, (list, tuple)):
        phase = phase[0] if phase else None
    out = {
        name: _plain(getattr(f, name, None))
        for name in ("kind", "block", "thread", "k", "message", "expected", "got")
    }
    out["phase"] = None if phase is None else int(phase)
    return out


def _load(spec: dict):
    """The submission's kernel as the front end read it (never run), TILE_WIDTH the case's."""
    from vizmm.record.frontend import KernelRejected, read_kernel

    path, name = spec["submission"], spec["kernel"]
    try:
        ks = read_kernel(path, name, {spec["tile_width_name"]: spec["tile_width"]})
    except KernelRejected as exc:
        raise SubmissionError(str(exc).replace(path, os.path.basename(path))) from None
    params = list(ks.params)
    want = spec["signature"]
    if len(params) != len(want):
        raise SubmissionError(
            f"{name}({', '.join(params)}) takes {len(params)} argument(s); the assignment asks "
            f"for {name}({', '.join(want)})"
        )
    return ks


def _exact_p(trace) -> list[dict]:
    import numpy as np

    T = trace.tile_width
    want = trace.M.astype(np.float64) @ trace.N.astype(np.float64)
    got = trace.P.astype(np.float64)
    bad = np.argwhere(~(got == want))
    if not len(bad):
        return []
    r, c = (int(v) for v in bad[0])
    block, thread = (r // T, c // T), (r % T, c % T)
    if math.isnan(got[r, c]):
        msg = f"P_{{{r},{c}}} was never stored (thread {thread} of block {block} computes it)"
        return [_finding("wrong P", msg, block, thread, expected=float(want[r, c]))]
    msg = (
        f"P_{{{r},{c}}} is {got[r, c]:g}; M·N gives {want[r, c]:g} "
        f"({len(bad)} of {got.size} P elements differ)"
    )
    return [_finding("wrong P", msg, block, thread, None, None, float(want[r, c]), got[r, c])]


def _out_of_bounds(trace) -> list[dict]:
    import numpy as np

    from vizmm.trace import Access, PWrite

    bad_kinds = (Access.WRONG_ELEMENT, Access.OUT_OF_ALLOCATION)
    for arr, base in (("M", 0), ("N", 3)):
        kind = trace.loads[..., base]
        hits = np.argwhere(np.isin(kind, bad_kinds))
        if len(hits):
            b, ph, ty, tx = (int(v) for v in hits[0])
            row, col = (int(v) for v in trace.loads[b, ph, ty, tx, base + 1 : base + 3])
            block = tuple(int(v) for v in trace.detail_blocks[b])
            msg = (
                f"phase {ph}: thread ({ty},{tx}) of block {block} loads {arr}_{{{row},{col}}}, "
                f"outside {arr}; a boundary check (Fig. 5.13) stores 0 into the tile instead"
            )
            return [_finding("out of bounds", msg, block, (ty, tx), ph)]
    hits = np.argwhere(np.isin(trace.p_write, (PWrite.WRONG_ELEMENT, PWrite.OUT_OF_ALLOCATION)))
    if len(hits):
        b, ty, tx = (int(v) for v in hits[0][:3])
        block = tuple(int(v) for v in trace.detail_blocks[b])
        msg = (
            f"thread ({ty},{tx}) of block {block} stores P outside P: its Row or Col is past "
            "the matrix (check Row < Width and Col < Width before the store)"
        )
        return [_finding("out of bounds", msg, block, (ty, tx))]
    return []


def _global_reads(trace) -> list[dict]:
    """Each element read at most ceil(l / T) (M) or ceil(j / T) (N) times: Section 5.4."""
    import numpy as np

    from vizmm.trace import ceil_div

    j, _, l = trace.shape
    T = trace.tile_width
    for arr, reads, limit in (
        ("M", trace.m_reads, ceil_div(l, T)),
        ("N", trace.n_reads, ceil_div(j, T)),
    ):
        r, c = np.unravel_index(int(np.argmax(reads)), reads.shape)
        n = int(reads[r, c])
        if n > limit:
            msg = (
                f"{arr}_{{{r},{c}}} was read from global memory {n} times; tiling with "
                f"TILE_WIDTH {T} needs it at most Width/TILE_WIDTH = {limit} times "
                "(once per block that uses it)"
            )
            return [
                _finding(
                    "more global reads than tiling needs", msg, None, None, None, None, limit, n
                )
            ]
    return []


def _coalesced(trace, book) -> list[dict]:
    """Tile loads touching more 32-byte sectors than Fig. 5.13's loads of the same launch."""
    import numpy as np

    from vizmm.analysis.transactions import memory_transactions

    mine = memory_transactions(trace).global_sectors  # (nd, nph, nw, 2)
    ref = memory_transactions(book).global_sectors
    if mine.shape != ref.shape or int(mine.sum()) <= int(ref.sum()):
        return []
    b, ph, w, a = (int(v) for v in np.argwhere(mine > ref)[0])
    block = tuple(int(v) for v in trace.detail_blocks[b])
    arr = "MN"[a]
    msg = (
        f"phase {ph}, block {block}, warp {w}: the tile load of {arr} touches {mine[b, ph, w, a]} "
        f"32-byte sectors where Fig. 5.13's touches {ref[b, ph, w, a]} "
        f"({int(mine.sum())} against {int(ref.sum())} in all): neighbouring tx should read "
        "neighbouring elements of a row"
    )
    return [_finding("uncoalesced", msg, block, None, ph, None, int(ref.sum()), int(mine.sum()))]


def run_case(spec: dict) -> dict[str, Any]:
    """Grade the submission on one case (in this process); the result as JSON-able dict.

    Parameters
    ----------
    spec : dict
        ``submission`` (path), ``kernel``, ``signature`` (list of str),
        ``tile_width_name``, ``shape`` ([j, k, l]), ``tile_width``, ``seed``,
        ``backend``, ``checks`` (names of :data:`CHECK_KINDS`), ``workdir``;
        ``engine``: 'auto' (``vizmm.check`` where this vizmm has it) or
        'record' (``vizmm.record`` and NumPy only).

    Returns
    -------
    dict
        ``error`` (None or one line), ``findings`` (list of dicts: kind, block,
        thread, phase, k, message, expected, got), ``evaluated`` (checks that
        could be evaluated), ``engine`` ('vizmm.check' or 'record'), ``trace``
        (file name in the workdir, or None), ``seconds``.
    """
    t0 = time.perf_counter()
    out: dict[str, Any] = {"error": None, "findings": [], "evaluated": [], "trace": None}
    import vizmm
    from vizmm.trace import TraceError

    try:
        kern = _load(spec)
        j, k, l = spec["shape"]
        T, seed, backend = spec["tile_width"], spec["seed"], spec["backend"]
        checks = spec["checks"]
        findings: list[dict] = []
        check = getattr(vizmm, "check", None) if spec.get("engine", "auto") == "auto" else None
        if check is not None:
            report = check(kern, j, k, l, tile_width=T, backend=backend, seed=seed)
            trace = report.trace
            findings = [_from_check(f) for f in report.findings]
            findings = [f for f in findings if f["kind"] not in ("uncoalesced",)]
            findings = [f for f in findings if f["kind"] != "more global reads than tiling needs"]
            out["engine"] = "vizmm.check"
            evaluated = set(checks)
        else:
            trace = vizmm.record(
                j, k, l, tile_width=T, kernel=kern, backend=backend, seed=seed, quiet=True
            )
            findings = _exact_p(trace) + _out_of_bounds(trace)
            out["engine"] = "record"
            evaluated = set(checks) - {"no_race", "no_bank_conflicts"}
        if "global_reads" in checks:
            findings += _global_reads(trace)
        if "coalesced" in checks:
            book = vizmm.record(
                j, k, l, tile_width=T, kernel="general", backend=backend, seed=seed, quiet=True
            )
            findings += _coalesced(trace, book)
        out["findings"] = findings
        out["evaluated"] = sorted(evaluated)
        trace.save(os.path.join(spec["workdir"], "trace.vizmm"))
        out["trace"] = "trace.vizmm"
    except SubmissionError as exc:
        out["error"] = str(exc)
    except TraceError as exc:
        out["error"] = (
            "vizmm could not read this kernel's recording as a tiled matrix multiplication: "
            + " ".join(str(exc).split())[:300]
        )
    except MemoryError:
        out["error"] = "the submission ran out of memory (the address-space limit of a case)"
    except RecursionError:
        out["error"] = "the submission recursed too deeply (RecursionError)"
    except Exception as exc:  # noqa: BLE001 - the student's error, told in one line
        text = " ".join(str(exc).split())[:300]
        if "MemoryError" in text:
            out["error"] = "the submission ran out of memory (the address-space limit of a case)"
        else:
            out["error"] = f"{type(exc).__name__}: {text}" if text else type(exc).__name__
    out["seconds"] = round(time.perf_counter() - t0, 3)
    return out


def main(argv: list[str]) -> int:
    """Run the case ``argv[0]`` (SPEC.json) names; write ``result.json`` beside it. 0 always.

    Parameters
    ----------
    argv : list of str
        ``[SPEC.json]``: the path of the case's description.
    """
    threading.stack_size(THREAD_STACK_BYTES)
    with open(argv[0], encoding="utf-8") as f:
        spec = json.load(f)
    result_path = os.path.join(spec["workdir"], "result.json")
    try:
        result = run_case(spec)
    except SystemExit as exc:  # the submission's own sys.exit() while it was loaded or run
        result = {"error": f"the submission called sys.exit({exc.code!r}) instead of returning"}
    except BaseException as exc:  # noqa: BLE001 - KeyboardInterrupt raised by the submission
        result = {"error": f"the submission raised {type(exc).__name__}"}
    tmp = result_path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(result, f, default=str)
    os.replace(tmp, result_path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
