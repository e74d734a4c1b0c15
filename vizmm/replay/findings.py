"""Where a finding of ``vizmm.check`` is in the block replay: its step and what to mark.

A :class:`vizmm.analysis.check.Finding` names a block, a thread, a phase
``ph`` and a turn ``k`` of the k loop; the replay of that block (Fig. 5.8's
steps) shows it at one step: a wrong term at its k-loop step, a race or an
out-of-bounds tile load at the load of its tile (Mds: load M, Nds: load
N), a wrong P at the write of P. Read by attributes only (no import of the
analysis layer).
"""

from __future__ import annotations

from .block import Replay, Sub

__all__ = ["finding_step", "finding_url"]


def finding_step(replay: Replay, finding) -> int:
    """The step number (0-based) of ``replay`` at which ``finding`` shows.

    Parameters
    ----------
    replay : Replay
        A replay of the finding's block (any granularity or order).
    finding : Finding
        A finding of :func:`vizmm.check` (``kind``, ``phase``, ``k``, ``marks``).

    Returns
    -------
    int
        0 (the start) for a finding of the whole launch or one without a phase.
    """
    steps = replay.steps
    last = len(steps) - 1
    kind, ph, k = finding.kind, finding.phase, finding.k
    if kind == "wrong P" or (kind == "wrong term" and finding.got is None):
        return last  # P written (a missing term shows in what was stored)
    if ph is None or ph >= replay.trace.n_phases:
        return 0
    marks = getattr(finding, "marks", {}) or {}
    if replay.granularity == "phase":
        sub, kk = Sub.PHASE, None
    elif kind == "wrong term":
        sub, kk = Sub.K, min(int(k or 0), replay.trace.tile_width - 1)
    elif "Nds" in marks and "Mds" not in marks or "N" in marks and "M" not in marks:
        sub, kk = Sub.LOAD_N, None
    else:
        sub, kk = Sub.LOAD_M, None
    try:
        return replay.index_of(ph, sub, kk)
    except ValueError:
        return 0


def finding_url(trace_name: str, replay: Replay, finding, port: int = 5006) -> str:
    """The dashboard's address showing ``finding`` in a trace given to ``vizmm serve --traces``.

    Parameters
    ----------
    trace_name : str
        The file's name as the server offers it (``file:<name>``).
    replay : Replay
        A replay of the finding's block at substep granularity.
    finding : Finding
    port : int
        The server's port (``vizmm serve``'s default 5006).

    Returns
    -------
    str
        ``http://localhost:PORT/dashboard?trace=file:NAME&by=..&bx=..&ty=..&tx=..&step=N``
        (the step 1-based, as the page numbers it).
    """
    from urllib.parse import quote

    by, bx = finding.block or (0, 0)
    ty, tx = finding.thread or (-1, -1)
    step = finding_step(replay, finding) + 1
    return (
        f"http://localhost:{port}/dashboard?trace={quote('file:' + trace_name)}"
        f"&by={by}&bx={bx}&ty={ty}&tx={tx}&step={step}"
    )
