"""Read compute-sanitizer's racecheck reports, to compare them with the barrier lab's hazards.

``compute-sanitizer --tool racecheck --racecheck-report hazard`` (2025.3)
prints one report per byte of shared memory on which it saw a hazard, e.g.::

    ========= Error: Potential RAW hazard detected at __shared__ 0x840 in block (3,0,0) :
    =========     Write Thread (0,1,0) at matrixMulKernel...+0x630
    =========     Read Thread (0,0,0) at matrixMulKernel...+0x660

(``Warning: (Warp Level Programming) Potential ...`` when both threads are
in one warp), threads and blocks as ``(x, y, z)``, and a closing
``RACECHECK SUMMARY: N hazards displayed (E errors, W warnings)``. A float
slot is four bytes, so one hazard on a slot is four reports. Addresses
count from the start of the block's shared window, whose first 1 KiB the
system reserves on Hopper (:data:`SHARED_BASE`): Mds, then Nds.

Racecheck names a hazard by the order in which it saw the two accesses (a
read it saw after the write is RAW, before it WAR), while
:mod:`vizmm.analysis.hazards` names it by the order the book's kernel
intends; and it keeps a short history per byte, so it reports a subset of
the conflicting pairs.

Text only; no NumPy, no numba.
"""

from __future__ import annotations

import collections
import re
from typing import Any

__all__ = ["COMMAND", "SHARED_BASE", "parse", "slot_of", "summary_counts"]

#: The compute-sanitizer command line whose reports :func:`parse` reads (the
#: program to check and its arguments follow).
COMMAND = (
    "compute-sanitizer",
    "--tool",
    "racecheck",
    "--racecheck-report",
    "hazard",
    "--print-limit",
    "0",
    "--show-backtrace",
    "no",
)

#: Byte address of the first user shared array in racecheck's reports on Hopper
#: (sm_90 reserves the first 1 KiB of a block's shared memory).
SHARED_BASE = 0x400

_HEAD = re.compile(
    r"(?P<sev>Error|Warning|Info)\s*:\s*(?:\((?P<qual>[^)]*)\)\s*)?Potential\s+(?P<kind>RAW|WAR|WAW)"
    r"\s+hazard detected at __shared__ (?P<addr>0x[0-9a-fA-F]+) in block "
    r"\((?P<bx>\d+),\s*(?P<by>\d+),\s*(?P<bz>\d+)\)",
    re.IGNORECASE,
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
        'WAW' (racecheck prints blocks as ``(x, y, z)``); ``warp_level``:
        ``{kind: n}`` of those between threads of one warp; ``addresses``: the
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
    warp_level: collections.Counter[str] = collections.Counter()
    addresses: set[tuple[str, tuple[int, int], int]] = set()
    first: list[dict[str, Any]] = []
    current: dict[str, Any] | None = None
    summary = None
    n_analysis = 0
    for line in lines:
        head = _HEAD.search(line)
        if head:
            block = (int(head["by"]), int(head["bx"]))
            address = int(head["addr"], 16)
            counts[head["kind"]][block] += 1
            if head["qual"] and "warp" in head["qual"].lower():
                warp_level[head["kind"]] += 1
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
        "warp_level": dict(warp_level),
        "addresses": addresses,
        "first": first,
        "summary": summary,
        "analysis_lines": n_analysis,
    }


def summary_counts(parsed: dict) -> dict:
    """``{kind: {"by,bx": count}}`` of a :func:`parse` result (JSON-friendly keys).

    Parameters
    ----------
    parsed : dict
        What :func:`parse` returned.
    """
    return {
        kind: {f"{b[0]},{b[1]}": n for b, n in sorted(per.items())}
        for kind, per in sorted(parsed["counts"].items())
    }


def slot_of(address: int, tile_width: int, base: int = SHARED_BASE):
    """``('Mds' | 'Nds', (row, col))`` of a byte address in racecheck's report, or None.

    The tiled kernels hold two ``TILE_WIDTH x TILE_WIDTH`` float32 arrays,
    Mds then Nds, from ``base`` on (row-major).

    Parameters
    ----------
    address : int
        A byte address of shared memory, as racecheck reports it.
    tile_width : int
        TILE_WIDTH of the launch.
    base : int
        The address Mds starts at.
    """
    T = tile_width
    index = (address - base) // 4
    if not 0 <= index < 2 * T * T:
        return None
    array = "Mds" if index < T * T else "Nds"
    return array, divmod(index % (T * T), T)
