"""The barrier lab against the GPU's own tool: compute-sanitizer's racecheck.

* Shipped results (no GPU needed): the GPU-recorded race traces in
  ``vizmm/data/`` are analysed here and now, and their hazards are compared
  with what racecheck reported on the same launches on an H200
  (``barrier-lab-racecheck-h200.json``, written by
  ``scripts/gpu_barrier_lab.py``): the same blocks, every slot racecheck names
  is one vizmm names, none with both barriers.
* The reader of racecheck's reports, on an excerpt of a real report.
* On a GPU (``@pytest.mark.gpu``): record, racecheck the plain kernel, compare.
"""

import importlib.resources
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

import vizmm
from vizmm.analysis import hazards as hz
from vizmm.analysis import racecheck as rc

DATA = importlib.resources.files("vizmm") / "data"
SUMMARY = json.loads((DATA / "barrier-lab-racecheck-h200.json").read_text())
CASES = {c["trace"]: c for c in SUMMARY["cases"]}
SHIPPED = SUMMARY["shipped_traces"]


def _blocks(rows):
    return {tuple(int(v) for v in b) for b in rows["block"].tolist()}


def _rc_blocks(case):
    return {
        tuple(int(v) for v in b.split(","))
        for per in case["racecheck_hazards"].values()
        for b in per
    }


@pytest.mark.parametrize("name", SHIPPED)
def test_shipped_gpu_traces_race_where_racecheck_saw_races(name):
    trace = vizmm.load(str(DATA / f"{name}.vizmm"))
    case = CASES[name]
    assert trace.backend == "gpu" and trace.meta["drop_barrier"] == case["drop_barrier"]
    rows = vizmm.hazards(trace)
    # Every block of these full-grid recordings: racecheck saw hazards in exactly
    # the blocks where the analysis finds them.
    assert trace.is_detailed
    assert _blocks(rows) == _rc_blocks(case) != set()
    # Each slot racecheck names (a byte address, four per float) is one vizmm names.
    T = trace.tile_width
    viz = {
        (tuple(int(v) for v in r["block"]), str(r["array"]), tuple(int(v) for v in r["slot"]))
        for r in rows
    }
    assert case["slots"]["racecheck_slots_not_in_vizmm"] == 0
    assert case["slots"]["vizmm_slots"] == len(viz)
    # Without barrier 1 every slot read in the k loop is in a RAW hazard, so racecheck
    # (which saw hazards on every slot: see the JSON) names no slot vizmm does not.
    if 1 in case["drop_barrier"]:
        assert case["slots"]["racecheck_slots"] == len(viz) == 2 * T * T * len(_blocks(rows))


@pytest.mark.parametrize("name", SHIPPED)
def test_shipped_gpu_traces_reads_explain_p(name):
    """What the hardware did: the recorded reads add up to the P the GPU stored."""
    trace = vizmm.load(str(DATA / f"{name}.vizmm"))
    T = trace.tile_width
    prod = trace.read_values[..., 0].astype(np.float64) * trace.read_values[..., 1]
    sums = prod.sum(axis=(1, 4))  # per block slot, ty, tx
    for s, (by, bx) in enumerate(trace.detail_blocks.tolist()):
        got = trace.P[by * T : (by + 1) * T, bx * T : (bx + 1) * T]
        np.testing.assert_array_equal(sums[s], got)  # small integers: exact
    ref = trace.M.astype(np.float64) @ trace.N.astype(np.float64)
    np.testing.assert_array_equal(hz.wrong_p(trace), trace.P != ref)


def test_racecheck_finds_nothing_where_both_barriers_are_kept():
    both = [c for c in SUMMARY["cases"] if not c["drop_barrier"]]
    assert len(both) >= 4
    for case in both:
        assert case["racecheck_summary"] == {"displayed": 0, "errors": 0, "warnings": 0}
        assert case["vizmm_hazards"] == {}


def test_racecheck_saw_a_hazard_in_every_block_with_a_barrier_removed():
    for case in SUMMARY["cases"]:
        if case["drop_barrier"] and case["window"] is None:
            T, width = case["tile_width"], case["width"]
            n_blocks = (-(-width // T)) ** 2
            assert len(_rc_blocks(case)) == n_blocks, case["trace"]
            assert case["slots"]["racecheck_slots_not_in_vizmm"] == 0, case["trace"]


# The head of a real report (compute-sanitizer 2025.3.1, H200), names shortened.
EXCERPT = """\
========= COMPUTE-SANITIZER
========= Warning: (Warp Level Programming) Potential RAW hazard detected at __shared__ \
0x410 in block (0,1,0) :
=========     Write Thread (0,0,0) at matrixMulKernel(...)+0x13a0
=========     Read Thread (0,1,0) at matrixMulKernel(...)+0x13b0
=========     Current Value : 0
=========
========= Error: Potential WAR hazard detected at __shared__ 0x840 in block (3,0,0) :
=========     Read Thread (0,0,0) at matrixMulKernel(...)+0x660
=========     Write Thread (0,1,0) at matrixMulKernel(...)+0x630
=========     Current Value : 0
=========
========= RACECHECK SUMMARY: 2 hazards displayed (1 error, 1 warning)
"""


def test_reader_of_racecheck_reports():
    parsed = rc.parse(EXCERPT)
    assert parsed["counts"] == {"RAW": {(1, 0): 1}, "WAR": {(0, 3): 1}}
    assert parsed["warp_level"] == {"RAW": 1}
    assert parsed["summary"] == {"displayed": 2, "errors": 1, "warnings": 1}
    first = parsed["first"][0]
    assert first["threads"] == [("Write", (0, 0)), ("Read", (1, 0))]
    # Hopper's shared window starts with 1 KiB reserved: 0x410 is the first Nds slot
    # at TILE_WIDTH 2 (Mds is 16 bytes), and 0x840 is Nds[1][0] at TILE_WIDTH 16.
    assert rc.slot_of(0x410, 2) == ("Nds", (0, 0))
    assert rc.slot_of(0x840, 16) == ("Nds", (1, 0))
    assert rc.slot_of(0x400, 16) == ("Mds", (0, 0))
    assert rc.slot_of(0x3FF, 16) is None


SCRIPT = os.path.join(os.path.dirname(__file__), "..", "scripts", "gpu_barrier_lab.py")


@pytest.mark.gpu
@pytest.mark.parametrize("drop", [(1,), (2,), ()], ids=["drop1", "drop2", "both"])
def test_racecheck_on_this_gpu_agrees_with_the_analysis(tmp_path, drop):
    if shutil.which("compute-sanitizer") is None:
        pytest.skip("compute-sanitizer is not on PATH")
    width, T, seed = 32, 16, 5
    trace = vizmm.record(
        width=width,
        tile_width=T,
        kernel="tiled",
        drop_barrier=drop or None,
        reads=True,
        seed=seed,
        backend="gpu",
        quiet=True,
    )
    proc = subprocess.run(
        [
            *rc.COMMAND,
            sys.executable,
            SCRIPT,
            "plain",
            "tiled",
            str(width),
            str(T),
            ",".join(map(str, drop)) or "-",
            str(seed),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        env=dict(os.environ, NUMBA_ENABLE_CUDASIM="0"),
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    parsed = rc.parse(proc.stdout)
    rows = vizmm.hazards(trace)
    rc_blocks = {b for per in parsed["counts"].values() for b in per}
    assert rc_blocks == _blocks(rows)
    viz = {
        (tuple(int(v) for v in r["block"]), str(r["array"]), tuple(int(v) for v in r["slot"]))
        for r in rows
    }
    for _kind, block, address in parsed["addresses"]:
        array, slot = rc.slot_of(address, T)
        assert (block, array, tuple(slot)) in viz
    if not drop:
        assert parsed["summary"]["displayed"] == 0 and len(rows) == 0
