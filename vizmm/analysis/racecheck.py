"""Read compute-sanitizer's racecheck reports, to compare them with the barrier lab's hazards.

``compute-sanitizer --tool racecheck --racecheck-report hazard`` prints one
report per hazard it saw on shared memory, e.g.::

    ========= Error: Potential RAW hazard detected at __shared__ 0x8 in block (1, 0, 0) :
    =========     Write Thread (0, 1, 0) at 0x1f0 in matrixMulKernel...
    =========     Read Thread (1, 1, 0) at 0x2a0 in matrixMulKernel...

and a closing ``RACECHECK SUMMARY: N hazards displayed (E errors, W
warnings)``. Racecheck names a hazard by the order in which it saw the two
accesses (a read it saw after a write is RAW), while
:mod:`vizmm.analysis.hazards` names it by the order the book's kernel
intends; the blocks are the same.

Text only; no NumPy, no numba.
"""

from __future__ import annotations

import collections
import re

__all__ = ["parse", "summary_counts"]

_HEAD = re.compile(
    r"(?P<sev>Error|Warning|Info|ERROR|WARNING|INFO)\w*:?\s+Potential\s+(?P<kind>RAW|WAR|WAW)\s+"
    r"hazard detected at __shared__ (?P<addr>0x[0-9a-fA-F]+) in block "
    r"\((?P<bx>\d+),\s*(?P<by>\d+),\s*(?P<bz>\d+)\)"
)
_THREAD = re.compile(
    r"(?P<access>Read|Write)\s+Thread\s+\((?P<tx>\d+),\s*(?P<ty>\d+),\s*(?P<tz>\d+)\)"
)
_SUMMARY = re.compile(
    r"RACECHECK SUMMARY:\s*(?P<n>\d+) hazards? displayed "
    r"\((?P<e>\d+) errors?, (?P<w>\d+) warnings?\)"
)
_ANALYSIS = re.compile(
    r"Race reported between (?P<a>Read|Write) access at .*? and (?P<b>Read|Write) access"
)


def parse(lines, keep: int = 50) -> dict:
    """The hazards of one racecheck report, counted as it is read.

    Parameters
    ----------
    lines : str or iterable of str
        What ``compute-sanitizer --tool racecheck`` printed (a string, or an
        open file read line by line: reports run to millions of lines).
    keep : int
        How many hazards to keep in full (``first``).

    Returns
    -------
    dict
        ``counts``: ``{kind: {(by, bx): n}}`` with kind 'RAW', 'WAR' or
        'WAW' (racecheck prints blocks as ``(x, y, z)``); ``addresses``: the
        set of ``(kind, (by, bx), address)`` (byte offset in the block's
        shared memory); ``first``: the first ``keep`` hazards as dicts with
        ``kind``, ``severity``, ``address``, ``block`` and ``threads``
        (``[(access, (ty, tx)), ...]``, the earlier access first);
        ``summary``: ``{'displayed', 'errors', 'warnings'}`` from the closing
        line, or None; ``analysis_lines``: the number of "Race reported
        between" lines (racecheck's other report mode).
    """
    if isinstance(lines, str):
        lines = lines.splitlines()
    counts: dict = collections.defaultdict(collections.Counter)
    addresses = set()
    first = []
    current = None
    summary = None
    n_analysis = 0
    for line in lines:
        head = _HEAD.search(line)
        if head:
            block = (int(head["by"]), int(head["bx"]))
            address = int(head["addr"], 16)
            counts[head["kind"]][block] += 1
            addresses.add((head["kind"], block, address))
            current = None
            if len(first) < keep:
                current = {
                    "kind": head["kind"],
                    "severity": head["sev"].lower(),
                    "address": address,
                    "block": block,
                    "threads": [],
                }
                first.append(current)
            continue
        thread = _THREAD.search(line)
        if thread and current is not None and len(current["threads"]) < 2:
            current["threads"].append((thread["access"], (int(thread["ty"]), int(thread["tx"]))))
            continue
        found = _SUMMARY.search(line)
        if found:
            summary = {
                "displayed": int(found["n"]),
                "errors": int(found["e"]),
                "warnings": int(found["w"]),
            }
        elif _ANALYSIS.search(line):
            n_analysis += 1
    return {
        "counts": {kind: dict(c) for kind, c in counts.items()},
        "addresses": addresses,
        "first": first,
        "summary": summary,
        "analysis_lines": n_analysis,
    }


def summary_counts(parsed: dict) -> dict:
    """``{kind: {"by,bx": count}}`` of a :func:`parse` result (JSON-friendly keys)."""
    return {
        kind: {f"{b[0]},{b[1]}": n for b, n in sorted(per.items())}
        for kind, per in sorted(parsed["counts"].items())
    }
