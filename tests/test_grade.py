"""vizmm grade: submissions written for the tests get the scores and messages derived by hand.

The submissions are in tests/grade_submissions/ (a syntax error is written here,
so that the linter never reads it). The main assignment has a public 4 x 4 case
and a hidden 3 x 3 one, both TILE_WIDTH 2, with points for exact P (4), no
out-of-bounds access (2) and global reads at most Width/TILE_WIDTH (1); the
cases are recorded with ``vizmm.record`` and NumPy (engine 'record'), so what
is expected does not hang on ``vizmm.check``'s findings.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from vizmm.grade import AssignmentError, grade, grade_many, load_assignment
from vizmm.grade.report import class_csv, feedback_html, gradescope_results, summary_html
from vizmm.trace import seeded_inputs

HERE = Path(__file__).resolve().parent
SUBS = HERE / "grade_submissions"
REPO = HERE.parent

MAIN = """
[assignment]
kernel = "matmul"
signature = ["M", "N", "P", "Width"]
time_limit_s = 60
[points]
exact_p = 4
no_out_of_bounds = 2
global_reads = 1
[[case]]
width = 4
tile_width = 2
[[case]]
width = 3
tile_width = 2
hidden = true
"""

ONE_CASE = """
[assignment]
kernel = "matmul"
time_limit_s = {limit}
[points]
exact_p = 1
[[case]]
width = 4
tile_width = 2
"""

SCHEMA = json.loads((HERE / "gradescope_results.schema.json").read_text())
STYLES = ("correct_book", "correct_2d", "correct_flat_shared")
MISTAKES = ("no_boundary", "swapped_index")


def _assignment(tmp_path, text, name="a.toml"):
    p = tmp_path / name
    p.write_text(text)
    return load_assignment(p)


@pytest.fixture(scope="module")
def main_gradings(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("grade")
    a = _assignment(tmp, MAIN)
    names = STYLES + MISTAKES
    gradings = grade_many(
        a, [SUBS / f"{n}.py" for n in names], jobs=2, workdir=str(tmp / "w"), engine="record"
    )
    return dict(zip(names, gradings, strict=True))


def _validate(doc):
    jsonschema = pytest.importorskip("jsonschema")
    jsonschema.validate(doc, SCHEMA)


@pytest.mark.parametrize("style", STYLES)
def test_correct_kernels_in_three_styles_get_every_point(main_gradings, style):
    g = main_gradings[style]
    assert [(c.error, c.score, c.max_score) for c in g.cases] == [(None, 7, 7), (None, 7, 7)]
    assert all(not c.findings for c in g.cases)
    doc = gradescope_results(g)
    _validate(doc)
    assert doc["score"] == 14 and [t["status"] for t in doc["tests"]] == ["passed", "passed"]


def test_no_boundary_checks_fails_only_the_case_that_is_not_a_multiple(main_gradings):
    g = main_gradings["no_boundary"]
    public, hidden = g.cases
    assert public.score == 7 and not public.findings  # 4 x 4: Fig. 5.9 is right there
    # 3 x 3, TILE_WIDTH 2, by hand (Fig. 5.11). Phase 1 of block (0,0): thread (0,1) loads
    # M[0*3 + 2 + 1] = M_{1,0} (the row wraps) into Mds[0][1]; thread (1,0) loads N[3*3 + 0],
    # past N: logged and not performed, so Nds[1][0] keeps phase 0's N_{1,0}. Thread (0,0)
    # adds M_{1,0} * N_{1,0} to the right sum: P_{0,0} is the first wrong element.
    checks = {c.name: c for c in hidden.checks}
    assert hidden.score == 0
    assert not checks["exact_p"].passed and not checks["no_out_of_bounds"].passed
    assert not checks["global_reads"].passed  # M_{1,0}: twice by phase 0, twice wrapped
    M, N = (a.astype(np.float64) for a in seeded_inputs(3, 3, 3, 0))
    first = checks["exact_p"].finding
    assert first["kind"] == "wrong P" and "P_{0,0}" in first["message"]
    assert first["expected"] == (M @ N)[0, 0]
    assert first["got"] == (M @ N)[0, 0] + M[1, 0] * N[1, 0]
    assert checks["no_out_of_bounds"].finding["kind"] == "out of bounds"
    assert g.score == 7


def test_swapped_index_gets_the_wrong_p_it_computes(main_gradings):
    g = main_gradings["swapped_index"]
    case = g.cases[0]
    checks = {c.name: c for c in case.checks}
    # Nds[ty][tx] = N[ph*T + tx][Col]: thread (r, c) sums M[r][ph*T+k] * N[ph*T + c%T][c].
    M, N = (a.astype(np.float64) for a in seeded_inputs(4, 4, 4, 0))
    T = 2
    got = np.array(
        [
            [
                sum(M[r, ph * T + k] * N[ph * T + c % T, c] for ph in range(2) for k in range(T))
                for c in range(4)
            ]
            for r in range(4)
        ]
    )
    want = M @ N
    r, c = np.argwhere(got != want)[0]
    f = checks["exact_p"].finding
    assert f["kind"] == "wrong P" and f"P_{{{r},{c}}}" in f["message"]
    assert f["got"] == got[r, c] and f["expected"] == want[r, c]
    assert f["block"] == [r // T, c // T] and f["thread"] == [r % T, c % T]
    # Every N element it reads has row % 2 == col % 2, by both ty of 2 blocks of a column:
    # 4 reads where tiling needs Width/TILE_WIDTH = 2.
    assert not checks["global_reads"].passed and checks["global_reads"].finding["got"] == 4
    assert checks["no_out_of_bounds"].passed
    assert case.score == 2


def test_hidden_shapes_never_reach_the_student(main_gradings):
    for g in main_gradings.values():
        doc = gradescope_results(g)
        _validate(doc)
        hidden = doc["tests"][1]
        assert hidden["name"] == "hidden case 1" and hidden["visibility"] == "after_published"
        text = json.dumps(doc) + feedback_html(g, pictures=False)
        for leak in ("3x3", "3 x 3", "M 3", "Width 3"):
            assert leak not in text
    # The finding of no_boundary's hidden case names elements; none reaches the student.
    g = main_gradings["no_boundary"]
    text = json.dumps(gradescope_results(g)) + feedback_html(g)
    assert "P_{0,0}" not in text and "M_{1,0}" not in text and "<iframe" not in text
    assert "4x4" in text  # the public case's shape is told


def test_results_record_the_version_and_seed(main_gradings):
    import vizmm

    doc = gradescope_results(main_gradings["correct_book"])
    assert doc["extra_data"]["vizmm_version"] == vizmm.__version__
    assert doc["extra_data"]["seed"] == 0
    assert {c["seed"] for c in doc["extra_data"]["cases"]} == {0}


@pytest.mark.parametrize(
    "name, words",
    [
        (
            "wrong_signature",
            "matmul(M, N, P) takes 3 argument(s); the assignment asks for matmul(M, N, P, Width)",
        ),
        # module code is set aside by the front end, never run: sys.exit(3) neither
        ("calls_exit", "calls_exit.py has no kernel named 'matmul'"),
        ("syntax_error", "line 8: syntax error"),
    ],
)
def test_a_broken_submission_fails_with_one_clear_line(tmp_path, name, words):
    a = _assignment(tmp_path, ONE_CASE.format(limit=60))
    path = SUBS / f"{name}.py"
    if name == "syntax_error":
        path = tmp_path / "syntax_error.py"
        lines = ["from numba import cuda", "", "", "@cuda.jit", "def matmul(M, N, P, Width):"]
        path.write_text("\n".join([*lines, "", "", "    Row = cuda.blockIdx.y *", ""]))
    g = grade(a, path, workdir=str(tmp_path / "w"), engine="record")
    (case,) = g.cases
    assert case.score == 0 and words in case.error
    assert "Traceback" not in case.error and len(case.error.splitlines()) == 1
    _validate(gradescope_results(g))


def test_module_code_is_never_run(tmp_path):
    # huge_allocation.py asks for 64 GiB at module level: set aside, its kernel graded.
    # It stores M_{0,0} into P_{0,0} alone: P is wrong, and no error.
    a = _assignment(tmp_path, ONE_CASE.format(limit=60))
    g = grade(a, SUBS / "huge_allocation.py", workdir=str(tmp_path / "w"), engine="record")
    (case,) = g.cases
    assert case.error is None and case.score == 0
    assert case.checks[0].finding["kind"] == "wrong P"


@pytest.mark.slow  # waits out the time limit
def test_an_endless_loop_is_stopped_at_the_time_limit(tmp_path):
    import time

    a = _assignment(tmp_path, ONE_CASE.format(limit=4))
    t0 = time.perf_counter()
    g = grade(a, SUBS / "endless_loop.py", workdir=str(tmp_path / "w"), engine="record")
    assert time.perf_counter() - t0 < 4 + 8
    (case,) = g.cases
    assert case.score == 0
    assert "time limit of 4 s" in case.error or "4 s of CPU time" in case.error


def test_uncoalesced_tile_loads_lose_the_coalescing_points(tmp_path):
    text = """
[assignment]
kernel = "matmul"
[points]
exact_p = 1
coalesced = 1
[[case]]
width = 8
tile_width = 8
"""
    a = _assignment(tmp_path, text)
    g_bad, g_book = grade_many(
        a,
        [SUBS / "uncoalesced.py", SUBS / "correct_book.py"],
        jobs=2,
        workdir=str(tmp_path / "w"),
        engine="record",
    )
    assert g_book.score == 2
    bad = {c.name: c for c in g_bad.cases[0].checks}
    assert bad["exact_p"].passed  # the same P, loaded down the columns
    # By hand: warp 0 is ty 0..3, tx 0..7. Fig. 5.13 loads M rows 0..3, 8 floats each:
    # 4 sectors of 32 bytes; loaded as M[tx][ty] it reads 8 rows, 4 floats each: 8.
    f = bad["coalesced"].finding
    assert not bad["coalesced"].passed and "warp 0" in f["message"]
    assert "touches 8 32-byte sectors where Fig. 5.13's touches 4" in f["message"]


@pytest.mark.parametrize(
    "text, words",
    [
        ("[assignment]\nkernel = 'matmul'\n", "[points] is missing"),
        (
            MAIN.replace("time_limit_s = 60", 'time_limit_s = "soon"'),
            "assignment.time_limit_s must be a number",
        ),
        (
            MAIN.replace("tile_width = 2\nhidden", "tile_width = 64\nhidden"),
            "case[2].tile_width must be an integer from 1 to 32",
        ),
        (MAIN.replace("exact_p = 4", "exact_P = 4"), "unknown key 'points.exact_P'"),
        (MAIN.replace("width = 4", "shape = [4, 5, 4]"), "case[1].shape [4, 5, 4] is not square"),
        ("[assignment\n", "is not valid TOML"),
    ],
)
def test_a_bad_assignment_file_names_the_key(tmp_path, text, words):
    p = tmp_path / "bad.toml"
    p.write_text(text)
    with pytest.raises(AssignmentError) as info:
        load_assignment(p)
    assert words in str(info.value)
    run = subprocess.run(
        [sys.executable, "-m", "vizmm", "grade", str(p), str(SUBS / "correct_book.py")],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=dict(os.environ),
    )
    assert run.returncode == 2 and words in run.stderr and "Traceback" not in run.stderr


def test_the_class_csv_and_summary(main_gradings):
    gs = list(main_gradings.values())
    rows = class_csv(gs).splitlines()
    assert rows[0].startswith("submission,score,max_score,case 1 score")
    assert [r.split(",")[:2] for r in rows[1:5]] == [
        ["correct_book.py", "14"],
        ["correct_2d.py", "14"],
        ["correct_flat_shared.py", "14"],
        ["no_boundary.py", "7"],
    ]
    assert rows[5].startswith("swapped_index.py,")
    page = summary_html(gs, pictures=False)
    assert "wrong P: 2 of 5 submissions" in page
    # no_boundary.py and swapped_index.py, by hand on the hidden 3 x 3 case (TILE_WIDTH 2):
    # swapped_index's guard checks ph*T + ty but loads row ph*T + tx of N, so in phase 1
    # thread (0,1) of block (0,0) passes it (2 < 3, Col 1 < 3) and reads N[3*3 + 1],
    # past N's 9 elements
    assert "out of bounds: 2 of 5 submissions" in page


def test_the_example_assignment_reads():
    a = load_assignment(REPO / "examples" / "assignment.toml")
    assert [c.hidden for c in a.cases] == [False, False, True]
    assert a.feedback == "pictures" and a.backend == "simulator"


RACE = """
[assignment]
kernel = "matmul"
time_limit_s = 60
[points]
exact_p = 1
no_race = 2
[[case]]
width = 4
tile_width = 2
"""


def test_graded_through_check_a_missing_barrier_loses_the_race_points(tmp_path):
    # Through vizmm.check (engine 'auto'): without the barrier after the tile loads,
    # thread (0,0)'s k loop reads Mds[0][1] in the same barrier epoch in which thread
    # (0,1) stores it -- a race by epoch, whatever order this run took. The book's
    # kernel, with both barriers, has none.
    a = _assignment(tmp_path, RACE)
    book = grade(a, SUBS / "correct_book.py", workdir=str(tmp_path / "w1"))
    racy = grade(a, SUBS / "missing_barrier.py", workdir=str(tmp_path / "w2"))
    book_doc, racy_doc = gradescope_results(book), gradescope_results(racy)
    _validate(racy_doc)
    assert book_doc["score"] == 3
    (test,) = racy_doc["tests"]
    lines = test["output"].splitlines()
    race_line = next(line for line in lines if "race" in line.lower())
    assert "(0/2)" in race_line, test["output"]
    assert "Mds" in test["output"] or "Nds" in test["output"], test["output"]
    assert racy_doc["score"] <= 1
    # the lines are named as the student's editor numbers them: the store into Mds
    # and the k loop's read, found in the file itself
    text = (SUBS / "missing_barrier.py").read_text().splitlines()
    store = 1 + next(i for i, t in enumerate(text) if "Mds[ty, tx] = M[" in t)
    read = 1 + next(i for i, t in enumerate(text) if "Pvalue += Mds" in t)
    assert f"(line {store}: Mds[ty, tx] = M[" in test["output"], test["output"]
    assert f"(line {read})" in test["output"], test["output"]
