"""vizmm.check's races against compute-sanitizer racecheck on the same launches (needs a GPU).

Usage (on a machine with an NVIDIA GPU, numba-cuda and compute-sanitizer)::

    python scripts/check_racecheck.py [OUT.json]
    VIZMM_RC_WIDTH=32 VIZMM_RC_TILE=16 VIZMM_RC_REPEAT=48 VIZMM_RC_CASES=book-drop2 \
        python scripts/check_racecheck.py drop2.json

(``VIZMM_RC_*``: Width, TILE_WIDTH, seed, how many times the plain launch
runs under racecheck, which cases; defaults 16, 8, 5, 1, all.)

For each case, the book's Fig. 5.9 kernel with barrier 1, barrier 2 or both
removed (and with both kept, the control), and two race-bearing kernels
written for the tests (``tests/check_kernels.py``: ``missing_barrier``, the
tile read with no barrier after its loads, and ``racing_store``, two threads
storing one slot), it

1. runs :func:`vizmm.check` on the GPU and takes the set of
   ``(block, array, slot)`` of its ``race`` findings;
2. runs the *plain* kernel (the same function, not instrumented) on the same
   inputs and launch under ``compute-sanitizer --tool racecheck
   --racecheck-report hazard`` (this script with ``--plain CASE``), reads the
   report with :mod:`vizmm.analysis.racecheck` and maps each byte address to
   its slot (Mds, then Nds, from racecheck's shared base);
3. compares the two sets: they must be equal, and both empty for the control.

Racecheck reports hazards it *saw* (per byte, four per float, with a short
history per byte); check reports every pair of accesses in one barrier epoch,
whatever the schedule. On five of the six cases the sets of slots are the
same; with the second barrier removed racecheck's set, from one launch or
the union of many, stays inside check's (see the README's "Check your own
kernel"); the counts differ. Exit code 0 when every
case agrees (or, for a case of :data:`RACECHECK_GAPS`, racecheck's set lies
inside check's), 1 otherwise; the sets go to OUT.json (default
``check-racecheck.json``).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

# TILE_WIDTH 8: blocks of two warps (at 4, a block is one warp, and racecheck left
# out the write-after-read hazards of Mds's last row and Nds's last column there)
WIDTH = int(os.environ.get("VIZMM_RC_WIDTH", 16))
T = int(os.environ.get("VIZMM_RC_TILE", 8))
SEED = int(os.environ.get("VIZMM_RC_SEED", 5))
REPEAT = int(os.environ.get("VIZMM_RC_REPEAT", 1))
CASES = {
    "book-drop1": ("book", (1,)),
    "book-drop2": ("book", (2,)),
    "book-drop12": ("book", (1, 2)),
    "book-both": ("book", ()),
    "missing_barrier": ("check_kernels", ()),
    "racing_store": ("check_kernels", ()),
}


#: Cases where racecheck reports fewer slots than check, measured (the README says
#: which): their racecheck set must lie inside check's, not equal it.
RACECHECK_GAPS = {
    "book-drop2": "racecheck leaves out Nds's last column in every block (and, from one "
    "launch, one Mds row), write-after-read races by the program",
}


def kernel_of(case: str):
    """The plain ``@cuda.jit`` kernel of a case (the function check instruments too)."""
    where, drop = CASES[case]
    if where == "book":
        import vizmm_kernels as K

        return K.get_kernel("tiled", T, drop_barrier=drop or None)
    import check_kernels

    if check_kernels.TILE_WIDTH != 2:
        raise SystemExit("tests/check_kernels.py's TILE_WIDTH changed")
    return getattr(check_kernels, case)


def tile_width(case: str) -> int:
    """TILE_WIDTH of a case: the book's kernel is built for T, the test kernels fix 2."""
    return T if CASES[case][0] == "book" else 2


def plain_main(case: str) -> None:
    """Launch the case's plain kernel once on check's seeded inputs (racecheck watches this)."""
    import vizmm_kernels as K
    from vizmm.trace import seeded_inputs
    from vizmm_kernels._target import cuda

    t = tile_width(case)
    M, N = seeded_inputs(WIDTH, WIDTH, WIDTH, SEED)
    grid, block = K.grid_dims(WIDTH, WIDTH, t)
    dM, dN = cuda.to_device(M.ravel()), cuda.to_device(N.ravel())
    dP = cuda.to_device(np.zeros(WIDTH * WIDTH, np.float32))
    for _ in range(REPEAT):  # racecheck's report: the union over the launches
        kernel_of(case)[grid, block](dM, dN, dP, WIDTH)
        cuda.synchronize()


def check_set(case: str) -> set:
    """``{((by, bx), array, (r, c))}`` of vizmm.check's races on the GPU."""
    import vizmm

    report = vizmm.check(
        kernel_of(case), width=WIDTH, tile_width=tile_width(case), backend="gpu", seed=SEED
    )
    out = set()
    for f in report.findings:
        if f.kind != "race":
            continue
        for array in ("Mds", "Nds"):
            for rc in f.marks.get(array, ()):
                out.add((tuple(f.block), array, tuple(rc)))
    return out


def racecheck_set(case: str) -> tuple[set, dict]:
    """``{((by, bx), array, (r, c))}`` racecheck reported on the plain launch, and its counts."""
    from vizmm.analysis import racecheck

    cmd = [*racecheck.COMMAND, sys.executable, str(Path(__file__).resolve()), "--plain", case]
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=600, check=False)
    parsed = racecheck.parse(run.stdout + run.stderr)
    slots = set()
    for _kind, block, address in parsed["addresses"]:
        slot = racecheck.slot_of(address, tile_width(case))
        if slot is not None:
            slots.add((tuple(block), slot[0], tuple(int(v) for v in slot[1])))
    return slots, racecheck.summary_counts(parsed)


def swapped(slots: set) -> set:
    """The same slots with Mds and Nds exchanged: the compiler, not the source, orders them.

    racecheck names byte addresses; which of the two arrays starts at the
    shared base is the compiler's choice (the book's kernel gets Mds first, a
    kernel that stores only one of them racily may get it second).
    """
    other = {"Mds": "Nds", "Nds": "Mds"}
    return {(b, other[a], rc) for b, a, rc in slots}


def main(argv) -> int:
    """Compare every case; write the JSON; 0 when all agree (but the known gaps)."""
    if len(argv) >= 2 and argv[0] == "--plain":
        plain_main(argv[1])
        return 0
    if shutil.which("compute-sanitizer") is None:
        print("compute-sanitizer is not on PATH (it comes with the CUDA toolkit)")
        return 1
    out_path = argv[0] if argv else "check-racecheck.json"
    results, ok = [], True
    chosen = os.environ.get("VIZMM_RC_CASES")
    for case in chosen.split(",") if chosen else CASES:
        mine = check_set(case)
        theirs, counts = racecheck_set(case)
        layout = "Mds first"
        if mine != theirs and mine == swapped(theirs):
            theirs, layout = swapped(theirs), "Nds first"
        agree = mine == theirs and (bool(mine) == (case != "book-both"))
        within = theirs <= mine and bool(mine) == (case != "book-both")
        ok &= agree or (case in RACECHECK_GAPS and within)
        results.append(
            {
                "case": case,
                "width": WIDTH,
                "tile_width": tile_width(case),
                "check_slots": len(mine),
                "racecheck_slots": len(theirs),
                "launches_under_racecheck": REPEAT,
                "only_check": sorted(map(str, mine - theirs))[:20],
                "only_racecheck": sorted(map(str, theirs - mine))[:20],
                "racecheck_counts": counts,
                "shared_layout": layout,
                "agree": agree,
                "racecheck_within_check": within,
            }
        )
        said = "agree" if agree else "racecheck within check" if within else "DIFFER"
        print(f"{case}: check {len(mine)} slots, racecheck {len(theirs)}: {said}")
    Path(out_path).write_text(json.dumps({"cases": results}, indent=1) + "\n")
    return 0 if ok else 1


if __name__ == "__main__":
    os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "0")
    sys.exit(main(sys.argv[1:]))
