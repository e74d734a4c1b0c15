"""The labelled benchmark of check (benchmarks/labelled): its labels sound, and check meeting them.

The labels and their racing (block, array, slot) sets were derived by hand
from each kernel and the book's semantics (PMPP ch. 5); benchmarks/labelled/
model.py expands the sets, in pure Python, without vizmm. The counts asserted
here are counted by hand from the rules (blocks x arrays x slots).

``test_check_meets_every_label`` runs check on every kernel (20 s in
vizmm's simulator, in four parts) and asks for no crash or refusal, no false
positive or negative of any kind (precision and recall 1.0) and the exact
racing slot set of every kernel.
"""

import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"
sys.path.insert(0, str(BENCH))

import bench_check_labelled as bench  # noqa: E402
from labelled import model  # noqa: E402

LABELS = model.load()
BY_ID = {lab["id"]: lab for lab in LABELS}


def test_labels_file_is_sound():
    # every file exists, its kernel is a function of it (ast), its TILE_WIDTH is the launch's
    assert model.validate(LABELS) == []
    cats = {c: sum(lab["category"] == c for lab in LABELS) for c in model.CATEGORIES}
    assert len(LABELS) >= 80
    assert cats["correct"] >= 35 and cats["racy"] >= 20 and cats["wrong"] >= 20


def test_validate_names_what_is_wrong(tmp_path):
    (tmp_path / "kernels").mkdir()
    (tmp_path / "kernels" / "a.py").write_text(
        "from numba import cuda\n\nTILE_WIDTH = 4\n\n\n"
        "@cuda.jit\ndef k(M, N, P, Width):\n    pass\n"
    )
    lab = {
        "id": "a",
        "file": "kernels/a.py",
        "kernel": "other",
        "category": "racy",
        "launch": {"width": 4, "tile_width": 2},
        "styles": [],
        "expected": ["race"],
        "why": "x",
    }
    problems = model.validate([lab, {**lab, "file": "kernels/b.py"}], tmp_path)
    assert any("no function 'other'" in p for p in problems)
    assert any("TILE_WIDTH = 4 in the file, tile_width 2" in p for p in problems)
    assert any("no racing set" in p for p in problems)
    assert any("a: id used twice" in p for p in problems)
    assert any("kernels/b.py does not exist" in p for p in problems)


@pytest.mark.parametrize(
    "kid, n",
    [
        # 2x2 blocks x (Mds, Nds) x 4 slots
        ("r01_fig59_no_first_barrier", 2 * 2 * 2 * 4),
        # 4 blocks x (Mds row 1: 2 slots, all of Nds: 4)
        ("r08_barrier_in_branch_ty0", 4 * (2 + 4)),
        # block (0,1): Mds 4 + Nds column 1; (1,0): Mds row 1 + Nds 4; (1,1): all 8
        ("r09_barrier_in_branch_boundary", (4 + 2) + (2 + 4) + 8),
        # 3x3 blocks x 2 arrays x buffer 0's 4 slots
        ("r10_double_buffer_3d_no_reuse_barrier", 9 * 2 * 4),
        # 4 blocks x (column 3 of Mds, row 3 of Nds): 4 slots each
        ("r13_neighbour_read_early_last_k_t4", 4 * 2 * 4),
        # 4 blocks x the diagonal of Nds
        ("r14_rotated_first_term_early", 4 * 2),
        # 4 blocks x every Mds slot but (0, 0)
        ("r18_zero_fill_then_load_write_write", 4 * 3),
        # blocks (0,0) and (1,0) x (Mds, Nds0, Nds1) x 4 slots
        ("r20_coarsened_no_first_barrier", 2 * 3 * 4),
    ],
)
def test_model_expands_the_hand_counted_sets(kid, n):
    assert len(model.racing_slots(BY_ID[kid])) == n


def test_model_slots_are_the_rules():
    r10 = model.racing_slots(BY_ID["r10_double_buffer_3d_no_reuse_barrier"])
    assert (2, 1, "Nds", (0, 1, 0)) in r10 and not any(s[3][0] == 1 for s in r10)
    r14 = model.racing_slots(BY_ID["r14_rotated_first_term_early"])
    assert {s[3] for s in r14} == {(0, 0), (1, 1)} and {s[2] for s in r14} == {"Nds"}
    r09 = model.racing_slots(BY_ID["r09_barrier_in_branch_boundary"])
    assert {(by, bx) for by, bx, _a, _s in r09} == {(0, 1), (1, 0), (1, 1)}
    assert model.racing_slots(BY_ID["c01_fig59_chained"]) == set()


def test_a_flat_tile_slot_reads_as_the_labels_view():
    lab = BY_ID["r04_flat_shared_no_first_barrier"]  # Mds of TILE_WIDTH*TILE_WIDTH = 4
    assert bench.slot_of(lab, "Mds", [3]) == (1, 1)
    assert bench.slot_of(lab, "Mds", [1, 0]) == (1, 0)
    lab = BY_ID["r10_double_buffer_3d_no_reuse_barrier"]
    assert bench.slot_of(lab, "Nds", [0, 1, 1]) == (0, 1, 1)


def test_scoring_counts_hits_misses_and_failures():
    labs = [
        BY_ID["c03_tuple_2d_global"],
        BY_ID["w07_one_phase_too_few"],
        BY_ID["r14_rotated_first_term_early"],
    ]
    r14 = sorted(model.racing_slots(labs[2]))
    results = {
        "c03_tuple_2d_global": {"status": "ok", "seconds": 1.0, "kinds": ["wrong P"], "races": []},
        "w07_one_phase_too_few": {"status": "refusal", "seconds": 0.1, "error": "RecordError: x"},
        "r14_rotated_first_term_early": {
            "status": "ok",
            "seconds": 3.0,
            # one labelled slot reported in its flat form, one missed, one extra (Mds)
            "kinds": ["race", "wrong term"],
            "races": [
                [r14[0][0], r14[0][1], "Nds", [r14[0][3][0] * 2 + r14[0][3][1]]],
                [0, 0, "Mds", [0]],
            ],
        },
    }
    s = bench.score(labs, results)
    # c03 is correct: its wrong P is a false positive; w07 was refused, so it reported
    # nothing: its wrong term and wrong P are misses; r14's wrong term is not scored
    assert (s["kinds"]["wrong P"]["fp"], s["kinds"]["wrong P"]["fn"]) == (1, 1)
    assert s["kinds"]["wrong P"]["false_positives"] == ["c03_tuple_2d_global"]
    assert (s["kinds"]["wrong term"]["tp"], s["kinds"]["wrong term"]["fn"]) == (0, 1)
    assert s["kinds"]["wrong term"]["fp"] == 0
    assert s["kinds"]["race"]["precision"] == 1.0 and s["kinds"]["race"]["recall"] == 1.0
    assert (s["race_slots"]["tp"], s["race_slots"]["fp"], s["race_slots"]["fn"]) == (1, 1, 7)
    assert s["refusals"] == [("w07_one_phase_too_few", "RecordError: x")]
    assert s["median_check_seconds"] == 2.0


#: The labelled kernels are checked in this many parts, which pytest-xdist
#: spreads over its workers (one part was a minute of one worker's time), each
#: kernel in this process (a process each, as the benchmark runs them, took
#: three times as long).
PARTS = 4


@pytest.mark.slow
@pytest.mark.parametrize("part", range(PARTS))
def test_check_meets_every_label(part):
    # precision and recall 1.0 over the whole set: no false positive nor negative in any part
    s = bench.run_all(LABELS[part::PARTS], in_process=True)  # the benchmark itself starts one each
    report = bench.format_report(s)
    assert not s["crashes"] and not s["refusals"], report
    for kind, k in s["kinds"].items():
        assert (k["fp"], k["fn"]) == (0, 0), f"{kind}\n{report}"
    assert not s["race_slots"]["inexact_kernels"], report
