"""The kernel is read, not run: the front end (vizmm.record.frontend) and check on students' styles.

Each kernel file in ``fixtures/student/`` was written for these tests in a
style students use; whether it is correct, and what is wrong where it is
not, is derived by hand in the comments of each test (and P is compared
with NumPy's product of the recorded inputs).
"""

import ast
import os
import re

import numpy as np
import pytest

import vizmm
from vizmm.record import RecordError
from vizmm.record.frontend import KernelRejected, read_kernel, read_source

HERE = os.path.join(os.path.dirname(__file__), "fixtures", "student")


def _path(name):
    return os.path.join(HERE, name + ".py")


def _check(name, kernel="k", width=4, **kw):
    return vizmm.check(f"{_path(name)}:{kernel}", width=width, backend="simulator", **kw)


# ------------------------------------------------------------------ reading
def test_the_file_is_read_never_run(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the file's module code would write MODULE_CODE_RAN here
    ks = read_kernel(_path("chained"), "matmul")
    assert ks.params == ("M", "N", "P", "Width")
    assert ks.constants == {"TILE_WIDTH": 2}
    notes = "\n".join(ks.notes)
    for what in ("import os", "import vizmm.checker", "vizmm.checker.findings", "__main__"):
        assert what in notes
    # the file's line of the kernel's first line (its decorator): line 16 of chained.py
    with open(_path("chained")) as f:
        assert f.read().splitlines()[ks.first_line - 1].strip() == "@cuda.jit"
    r = vizmm.check(f"{_path('chained')}:matmul", width=4, backend="simulator")
    assert r.ok and not r.findings  # the replaced vizmm.checker.findings never ran either
    assert not (tmp_path / "MODULE_CODE_RAN").exists()
    np.testing.assert_array_equal(r.trace.P, r.trace.M.astype(np.float64) @ r.trace.N)


def test_chained_subscripts_and_keyword_shared_arrays_are_normalised():
    ks = read_kernel(_path("chained"), "matmul")
    text = ast.unparse(ks.tree)
    assert "Mds[ty, tx] = M[" in text and "Pvalue += Mds[ty, k] * Nds[k, tx]" in text
    # the shape as numbers (a GPU's compiler takes literal sizes only)
    assert "cuda.shared.array((2, 2), float32)" in text
    assert "[ty][" not in text


def test_3d_shared_arrays_fold_into_2d_and_augmented_stores_become_load_and_store():
    ks = read_kernel(_path("double_buffer_3d"), "k")
    text = ast.unparse(ks.tree)
    # (2, T, T) -> (2 * T, T); [b, ty, tx] -> [b * T + ty, tx]; Nds[b][ty][tx] the same
    assert "cuda.shared.array((4, 2), float32)" in text
    assert "Mds[b * 2 + ty, tx] = " in text
    assert "Nds[b * 2 + ty, tx] = " in text
    ks = read_kernel(_path("p_plus_equals"), "k")
    text = ast.unparse(ks.tree)
    assert "P[Row, Col] = P[Row, Col] + Mds[ty, i] * Nds[i, tx]" in text


@pytest.mark.parametrize(
    ("body", "words"),
    [
        ("    import os\n", "outside the CUDA Python subset"),
        ("    os.system(1)\n", "os.system() is not a function a kernel may call"),
        ("    P[0] = (lambda: 1)()\n", "is not a function a kernel may call"),
        ("    P[0] = M.__class__\n", "attribute M.__class__ is outside the subset"),
        ("    open(1)\n", "open() is not a function a kernel may call"),
        ("    P[0] = [x for x in range(3)][0]\n", "subscript an array by its name"),
        ("    _ev = 1\n", "starts with an underscore"),
        ("    with open('x'):\n        pass\n", "with statement is outside"),
        ("    P[0] = 'text'\n", "str constant is outside the subset"),
        ("    S = cuda.shared.array(Width, float32)\n", "must be a constant"),
    ],
)
def test_outside_the_subset_is_one_line_naming_the_file_line(body, words):
    text = "import os\nfrom numba import cuda, float32\n\n@cuda.jit\ndef k(M, N, P, Width):\n"
    with pytest.raises(KernelRejected) as info:
        read_source(text + body, "k", path="student.py")
    msg = str(info.value)
    assert "\n" not in msg and msg.startswith("student.py, line 6: ")
    assert words in msg


def test_names_that_are_not_kernels_are_told_apart():
    text = (
        "from numba import cuda\n"
        "@cuda.jit(device=True)\ndef helper(a):\n    return a\n"
        "def plain(M, N, P, Width):\n    P[0] = 1\n"
        "@cuda.jit\ndef k(M, N, P, Width):\n    P[0] = helper(1.0)\n"
    )
    for name, words in (
        ("helper", "is a device function"),
        ("plain", "is a plain Python function (no @cuda.jit)"),
        ("nope", "has no kernel named 'nope'; kernels there: k"),
    ):
        with pytest.raises(KernelRejected, match=re.escape(words)):
            read_source(text, name, path="f.py")


# --------------------------------------------------- check on students' styles
@pytest.mark.parametrize(
    "name",
    [
        "temporaries",  # a = M[...]; Mds[ty, tx] = a, and a conditional expression into Nds
        "p_plus_equals",  # P[Row, Col] = 0, then P[Row, Col] += Mds * Nds
        "atomic_p",  # each phase's partial sum cuda.atomic.add into P
        "register_reuse",  # a = Mds[ty, i] read once, used for two P elements
        "double_buffer_3d",  # (2, T, T) shared arrays, one barrier per phase (safe: see below)
        "device_functions",  # a procedure and an expression device function, a while loop
        "shared_bound",  # the phase count from a shared element and from M.shape[1]
    ],
)
def test_correct_kernels_in_students_styles_get_no_finding(name):
    # Each computes P = M @ N with no race (hand-checked; double_buffer_3d writes buffer
    # ph % 2 in phase ph, and the barrier of phase ph + 1 separates its reads in phase ph
    # from the next write of the same buffer in phase ph + 2).
    r = _check(name)
    errors = [f for f in r.findings if f.severity == "error"]
    assert errors == [], errors[:2]
    ref = r.trace.M.astype(np.float64) @ r.trace.N.astype(np.float64)
    np.testing.assert_array_equal(r.trace.P, ref)


def test_register_tiled_kernel_with_a_factor_reused_wrongly_names_each_term():
    # register_swap.py, Width 4, TILE_WIDTH 2: blocks bx = 0 compute columns tx and tx + 2;
    # acc1 multiplies b0 = Nds[i][tx] (column Col0) instead of column Col1. So P[r][c],
    # c in {2, 3}, gets M_{r,q} N_{q,c-2} for q = 0..3: 8 elements x 4 wrong terms, and
    # their 4 needed terms each missing (64 wrong-term findings), and 8 wrong P elements.
    # Columns 0 and 1 are right.
    r = _check("register_swap")
    ref = r.trace.M.astype(np.float64) @ r.trace.N.astype(np.float64)
    assert (ref[:, 2:] != ref[:, :2]).all()  # the seeded inputs tell the columns apart
    kinds = [f.kind for f in r.findings if f.severity == "error"]
    assert kinds.count("wrong P") == 8 and kinds.count("wrong term") == 64
    assert {f.expected[1][1] for f in r.findings if f.kind == "wrong term"} == {2, 3}
    first = next(f for f in r.findings if f.kind == "wrong term")
    assert first.got == ((0, 0), (0, 0)) and first.expected == ((0, 0), (0, 2))


def test_a_kernel_with_no_tile_is_wrong_p_per_element_never_an_internal_error():
    # no_tile.py stores 0 into P[Row, Col] (Row, Col = cuda.grid(2): x, then y)
    r = _check("no_tile", tile_width=2)
    assert {f.kind for f in r.findings} == {"wrong P"}
    assert len(r.findings) == 16  # every element of 4 x 4 (M @ N has no zero: seeded 0..9)


def test_a_zero_stored_into_another_threads_slot_is_named_not_a_crash():
    # zero_fill_elsewhere.py at Width 3, TILE_WIDTH 2: the else of M's boundary check stores
    # 0 into Mds[tx][ty] (transposed), and N's check (ph*T + ty < Width - 1) zero-fills the
    # existing row 2 of N. In phase 1 of block (0, 0) the threads (0, 1) and (1, 1) fail M's
    # check (column 3), so thread (0, 1) stores 0 into Mds[1][0], which thread (1, 0) also
    # stores M_{1,2} into: a write-write race with no barrier between.
    r = _check("zero_fill_elsewhere", width=3)
    kinds = {f.kind for f in r.findings}
    assert {"race", "wrong term", "wrong P"} <= kinds
    race = next(f for f in r.findings if f.kind == "race")
    assert race.address == "Mds[1][0]" and race.label == "write-after-write"


def test_the_files_tile_width_against_the_launch():
    # examples/tiled_matmul_correct.py sets TILE_WIDTH = 2
    example = os.path.join(os.path.dirname(__file__), "..", "examples", "tiled_matmul_correct.py")
    with pytest.raises(RecordError, match=r"sets TILE_WIDTH = 2 \(line \d+\) but the launch asks "):
        vizmm.check(f"{example}:matmul", width=8, tile_width=4, backend="simulator")
    r = vizmm.check(f"{example}:matmul", width=4, backend="simulator")  # the file's 2
    assert r.trace.tile_width == 2 and r.ok
    r = vizmm.check(
        f"{example}:matmul", width=8, tile_width=4, constants={"TILE_WIDTH": 4},
        backend="simulator",
    )  # fmt: skip
    assert r.trace.tile_width == 4 and r.ok


def test_a_barrier_some_threads_skip_is_checked_in_the_simulator_never_hangs_a_gpu():
    from vizmm.record.divergence import backend_for, divergent_barriers

    # r08: `if ty == 0: cuda.syncthreads()` at line 19 of its file (the kernel starts at 6);
    # the barrier at line 22, outside the branch, every thread reaches
    path = os.path.join(os.path.dirname(__file__), "..", "benchmarks", "labelled", "kernels")
    ks = read_kernel(os.path.join(path, "r08_barrier_in_branch_ty0.py"), "tiled_2d")
    assert [ln + ks.first_line - 1 for ln in divergent_barriers(ks.tree)] == [19]
    assert backend_for(ks, "auto") == "simulator"
    with pytest.raises(RecordError, match=r"line 19: cuda.syncthreads\(\) inside a branch"):
        backend_for(ks, "gpu")
    # Fig. 5.9 as printed: its barriers are in the phase loop, the same for every thread
    ks = read_kernel(_path("chained"), "matmul")
    assert divergent_barriers(ks.tree) == [] and backend_for(ks, "gpu") == "gpu"
