"""The verdict of a case, computed in the grader from the recording alone.

A case's process (:mod:`vizmm.grade.case`) only records: it leaves a
``trace.vizmm`` in its own folder and nothing else the grader reads. Here,
in the grader (a process where no code of the submission ever ran), after
every process of the case is gone, :func:`read_recording` reads that file
(a regular file of at most :data:`MAX_TRACE_BYTES`, validated by
:func:`vizmm.trace.from_bytes`) and checks it against the launch: the case's
shape, TILE_WIDTH and seed, and M and N equal to the seeded inputs made here
again. :func:`judge` then computes the findings
(:func:`vizmm.analysis.check.findings` where the trace has the access log,
else the NumPy checks below) and which checks could be evaluated; the
score is :mod:`vizmm.grade.runner`'s sum over them.
"""

from __future__ import annotations

import math
import os
import stat
from typing import Any

__all__ = ["CHECK_KINDS", "MAX_TRACE_BYTES", "JudgeError", "judge", "read_recording"]

#: The largest recording a case may leave (bytes); the case's files are capped at this size.
MAX_TRACE_BYTES = 64 << 20


class JudgeError(ValueError):
    """The case left no recording the grader can use (one line, in vizmm's words)."""


#: Finding kinds (``vizmm.check``'s) that fail each check.
CHECK_KINDS: dict[str, tuple[str, ...]] = {
    "exact_p": ("wrong term", "wrong P"),
    "no_race": ("race",),
    "no_out_of_bounds": ("out of bounds",),
    "global_reads": ("more global reads than tiling needs",),
    "coalesced": ("uncoalesced",),
    "no_bank_conflicts": ("bank conflict",),
}


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


def read_recording(
    folder: str, shape: tuple[int, int, int], tile_width: int, seed: int, kernel: str = ""
) -> tuple[Any, bytes]:
    """The case's ``trace.vizmm``, validated and checked against the launch.

    Parameters
    ----------
    folder : str
        The case's folder (none of its processes running any more).
    shape : (j, k, l)
        The case's launch: M is j x k, N is k x l.
    tile_width : int
        The case's TILE_WIDTH.
    seed : int
        The assignment's seed: M and N must be ``seeded_inputs(j, k, l, seed)``.
    kernel : str, optional
        The kernel's name: the recording must be of a user's kernel of that
        name (not checked when empty).

    Returns
    -------
    trace : Trace
    data : bytes
        The file's bytes (what the grader keeps for the replays).

    Raises
    ------
    JudgeError
        When there is no such regular file, it is larger than
        :data:`MAX_TRACE_BYTES`, it is not a valid trace, or it is not the
        recording of this launch on these inputs.
    FileNotFoundError
        When the case left no recording at all.
    """
    import numpy as np

    from ..trace import TraceError, from_bytes, seeded_inputs

    path = os.path.join(folder, "trace.vizmm")
    try:
        flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
        fd = os.open(path, flags)
    except FileNotFoundError:
        raise
    except OSError:
        raise JudgeError("the case's recording is not a regular file") from None
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise JudgeError("the case's recording is not a regular file")
    with os.fdopen(fd, "rb") as f:
        if st.st_size > MAX_TRACE_BYTES:
            raise JudgeError(f"the case's recording is over {MAX_TRACE_BYTES >> 20} MiB")
        data = f.read(MAX_TRACE_BYTES + 1)
    try:
        trace = from_bytes(data, "trace.vizmm")
    except (TraceError, ValueError) as exc:
        raise JudgeError(
            "vizmm could not read this kernel's recording as a tiled matrix multiplication: "
            + " ".join(str(exc).split())[:300]
        ) from None
    j, k, l = shape
    if tuple(trace.shape) != (j, k, l) or trace.tile_width != tile_width:
        raise JudgeError("the case's recording is not of the launch the grader asked for")
    if trace.meta.get("seed") not in (None, seed):
        raise JudgeError("the case's recording is not of the seeded inputs the grader asked for")
    if kernel and trace.user_kernel != kernel:
        raise JudgeError(f"the case's recording is not of the submission's kernel {kernel}")
    M, N = seeded_inputs(j, k, l, seed)
    if not (np.array_equal(trace.M, M) and np.array_equal(trace.N, N)):
        raise JudgeError("the case's recording is not of the seeded inputs the grader asked for")
    return trace, data


def judge(trace, checks, book=None, log=True) -> tuple[list[dict], list[str], str]:
    """Findings and evaluated checks of a validated recording (in the grader).

    Parameters
    ----------
    trace : Trace
        From :func:`read_recording`.
    checks : iterable of str
        Names of :data:`CHECK_KINDS` the assignment gives points to.
    book : callable, optional
        ``book()`` -> the recording of Fig. 5.13's kernel ('general') on the
        same launch and seed (asked for only when ``coalesced`` is graded).
    log : bool
        Use the access log's findings where the trace has one (False: the
        NumPy checks only, engine 'record').

    Returns
    -------
    findings : list of dict
        kind, block, thread, phase, k, message, expected, got; in the order
        they happened.
    evaluated : list of str
        The checks this recording could decide (race and bank conflicts need
        the access log).
    engine : str
        'vizmm.check' (the access log's findings) or 'record' (NumPy checks).
    """
    checks = set(checks)
    if log and trace.log_counts.size:
        from ..analysis.check import findings as check_findings

        found = [_from_check(f) for f in check_findings(trace)]
        skip = ("uncoalesced", "more global reads than tiling needs")
        out = [f for f in found if f["kind"] not in skip]
        engine, evaluated = "vizmm.check", set(checks)
    else:
        out = _exact_p(trace) + _out_of_bounds(trace)
        engine, evaluated = "record", checks - {"no_race", "no_bank_conflicts"}
    if "global_reads" in checks:
        out += _global_reads(trace)
    if "coalesced" in checks:
        if book is None:
            evaluated.discard("coalesced")
        else:
            out += _coalesced(trace, book())
    return out, sorted(evaluated), engine
