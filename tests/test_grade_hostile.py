"""Hostile submissions: each scores what its kernel scores without the cheat; no process outlives.

A case is judged apart from its submission.

Two layers. The submissions of tests/grade_submissions/hostile/ attach a cheat
at module level (patching vizmm, NumPy, json or builtins; an atexit hook; a
forged result.json; a double fork with setsid; killing or stopping the
grader; a fork bomb; 200 MiB of output; reading the assignment file) to the
kernel of no_boundary.py; a class run grades them with the honest kernels
and each must score exactly what no_boundary.py scores, by hand below. The
front end reads a file and never runs its module code, so those cheats never
run; the second layer runs the same kinds of code for real in a case's
process (vizmm.grade.sandbox.run_apart) and checks that every process of it
is gone when it returns, that the limits hold, and that the grader lives.

The honest score, by hand: one public case, 3 x 3 with TILE_WIDTH 2, checks
exact_p 4, no_out_of_bounds 2, global_reads 1, no_race 2. Without boundary
checks (test_grade.py derives it from Fig. 5.11) P_{0,0} is wrong, M and N
are read outside their matrices and M_{1,0} is read 4 times where tiling
needs Width/TILE_WIDTH = 2; both barriers are there and every thread stores
only its own Mds/Nds slot, so there is no race: 2 of 9 points. The book's
kernel (correct_book.py) gets all 9.
"""

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from vizmm.grade import grade, load_assignment
from vizmm.grade.sandbox import (
    SUPERVISOR_GRACE_S,
    Limits,
    case_folder,
    isolated_user,
    run_apart,
)

HERE = Path(__file__).resolve().parent
SUBS = HERE / "grade_submissions"
HOSTILE = sorted(p.stem for p in (SUBS / "hostile").glob("*.py"))
# This process's own mark: pytest-xdist runs other tests of this module in another
# process at the same time, and their cases must not count as this one's leftovers.
MARK = f"VIZMM_HOSTILE_MARK_{os.getpid()}"
LINUX = sys.platform.startswith("linux")
ROOT = LINUX and os.geteuid() == 0

ASSIGNMENT = """
[assignment]
kernel = "matmul"
time_limit_s = 30
[points]
exact_p = 4
no_out_of_bounds = 2
global_reads = 1
no_race = 2
[[case]]
width = 3
tile_width = 2
"""
HONEST = 2  # no_boundary.py, by hand (module docstring)
FULL = 9


def _marked() -> list[int]:
    """Processes whose command line or environment carries MARK."""
    out = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        for part in ("cmdline", "environ"):
            try:
                with open(f"/proc/{name}/{part}", "rb") as f:
                    if MARK.encode() in f.read():
                        out.append(int(name))
                        break
            except OSError:
                pass
    return out


pytestmark = [
    pytest.mark.skipif(not LINUX, reason="the case's supervisor reads /proc (Linux)"),
    pytest.mark.slow,  # cases in sandboxes, some waiting out their limits
]


@pytest.fixture(scope="module")
def class_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("hostile")
    os.chmod(tmp, 0o700)
    a = tmp / "a.toml"
    a.write_text(ASSIGNMENT)
    os.chmod(a, 0o600)
    subs = tmp / "subs"
    subs.mkdir()
    for name in HOSTILE:
        shutil.copy(SUBS / "hostile" / f"{name}.py", subs / f"{name}.py")
    shutil.copy(SUBS / "no_boundary.py", subs / "no_boundary.py")
    shutil.copy(SUBS / "correct_book.py", subs / "correct_book.py")
    shutil.copy(SUBS / "correct_book.py", subs / "=HYPERLINK(1).py")  # a formula of a name
    (subs / "x.py").mkdir()  # a folder named like a submission
    out = tmp / "out"
    out.mkdir()
    t0 = time.perf_counter()
    run = subprocess.run(
        [sys.executable, "-m", "vizmm", "grade", str(a), str(subs), "--jobs", "2",
         "--csv", str(out / "class.csv"), "--summary", str(out / "summary.html")],
        capture_output=True, text=True, timeout=900, cwd=tmp,
    )  # fmt: skip
    seconds = time.perf_counter() - t0
    return run, out, seconds


def test_the_class_run_finishes_with_every_row(class_run):
    run, out, _ = class_run
    assert run.returncode == 0, run.stderr[-2000:]
    assert "skipped x.py: not a file" in run.stderr
    rows = [r.split(",") for r in (out / "class.csv").read_text().splitlines()]
    names = [r[0] for r in rows[1:]]
    assert sorted(names) == sorted(
        [f"{n}.py" for n in HOSTILE] + ["no_boundary.py", "correct_book.py", "'=HYPERLINK(1).py"]
    )
    assert (out / "summary.html").stat().st_size > 0


@pytest.mark.parametrize("name", HOSTILE)
def test_each_cheat_scores_what_its_kernel_scores(class_run, name):
    run, out, _ = class_run
    scores = {
        r.split(",")[0]: r.split(",")[1] for r in (out / "class.csv").read_text().splitlines()[1:]
    }
    assert scores["no_boundary.py"] == str(HONEST)
    assert scores["correct_book.py"] == str(FULL) == scores["'=HYPERLINK(1).py"]
    assert scores[f"{name}.py"] == str(HONEST), run.stdout


def test_no_process_of_a_case_outlives_the_class_run(class_run):
    run, out, _ = class_run
    before = {p: p.stat().st_mtime_ns for p in out.iterdir()}
    time.sleep(4)  # double_fork.py's grandchild would rewrite the results after 3 s
    assert _marked() == []
    assert {p: p.stat().st_mtime_ns for p in out.iterdir()} == before


def test_text_of_a_case_never_reaches_the_reports(class_run):
    _, out, _ = class_run
    text = (out / "class.csv").read_text() + (out / "summary.html").read_text()
    assert "hidden case shapes" not in text  # huge_print.py's output
    assert "[assignment]" not in text and "time_limit_s" not in text  # reads_assignment.py


def test_one_hostile_submission_graded_alone_keeps_its_results(tmp_path):
    a = tmp_path / "a.toml"
    a.write_text(ASSIGNMENT)
    res, html = tmp_path / "results.json", tmp_path / "feedback.html"
    run = subprocess.run(
        [sys.executable, "-m", "vizmm", "grade", str(a), str(SUBS / "hostile" / "double_fork.py"),
         "-o", str(res), "--html", str(html)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert f"score: {HONEST} of {FULL}" in run.stdout
    written = res.read_bytes(), html.read_bytes()
    time.sleep(4)
    assert (res.read_bytes(), html.read_bytes()) == written
    assert _marked() == []


def test_a_relative_working_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.toml").write_text(ASSIGNMENT)
    g = grade(load_assignment("a.toml"), SUBS / "correct_book.py", workdir="w")
    assert [(c.error, c.score) for c in g.cases] == [(None, FULL)]


# ---------------------------------------------------------------- the sandbox
#: An interpreter any user may run (the case's own user, as root), for the sandbox's tests;
#: vizmm's may sit where only root reads (then cases run as the grader's user).
PYTHON = next(
    (p for p in ("/usr/bin/python3", "/usr/local/bin/python3") if os.access(p, os.X_OK)),
    sys.executable,
)


def _run(tmp_path, code, limits=None, **kw):
    with isolated_user(PYTHON) as uid:
        folder = case_folder(tempfile.mkdtemp(prefix="vizmm-test-case-"), uid)
        limits = limits or Limits(wall_s=20, cpu_s=20, memory_bytes=1 << 30, processes=16)
        argv = [PYTHON, "-I", "-c", code, MARK]
        return run_apart(argv, folder, limits, uid=uid, **kw), uid


SLEEPER = f"import subprocess, sys; subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)', '{MARK}'], start_new_session=True)"  # noqa: E501


def test_a_setsid_grandchild_is_killed_before_the_case_returns(tmp_path):
    code = f"""
import os, sys
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        {SLEEPER}
    os._exit(0)
os.wait()
"""
    out, _ = _run(tmp_path, code)
    assert out.ended is None and out.code == 0
    assert out.left_behind >= 1
    assert _marked() == []


def _run_as_grader(code, limits):
    """A case of the grader's own user (what a grader that is not root runs)."""
    folder = case_folder(tempfile.mkdtemp(prefix="vizmm-test-case-"), None)
    return run_apart([PYTHON, "-I", "-c", code, MARK], folder, limits)


def test_a_case_of_the_graders_user_that_kills_its_supervisor_loses_its_own_case():
    code = f"""
import os, signal, time
{SLEEPER}
os.kill(os.getppid(), signal.SIGKILL)
time.sleep(30)
"""
    t0 = time.perf_counter()
    out = _run_as_grader(code, Limits(wall_s=5, cpu_s=5, memory_bytes=1 << 30))
    assert out.ended == "supervisor" and time.perf_counter() - t0 < 5
    assert _marked() == []


def test_a_case_of_the_graders_user_that_stops_its_supervisor_is_ended():
    code = f"""
import os, signal
{SLEEPER}
os.kill(os.getppid(), signal.SIGSTOP)
os.kill(os.getpid(), signal.SIGSTOP)
"""
    t0 = time.perf_counter()
    out = _run_as_grader(code, Limits(wall_s=2, cpu_s=2, memory_bytes=1 << 30))
    assert out.ended == "supervisor"
    assert time.perf_counter() - t0 < 2 + SUPERVISOR_GRACE_S + 5
    assert _marked() == []


def test_killing_its_parent_loses_only_its_own_case(tmp_path):
    code = f"""
import os, signal, time
try:
    os.kill(os.getppid(), signal.SIGKILL)
except PermissionError:
    print("not permitted", flush=True)
{SLEEPER}
time.sleep(30)
"""
    t0 = time.perf_counter()
    out, uid = _run(tmp_path, code, Limits(wall_s=5, cpu_s=5, memory_bytes=1 << 30))
    if uid is not None:  # a user of its own cannot signal its supervisor
        assert "not permitted" in out.output and out.ended == "timeout"
    else:
        assert out.ended == "supervisor"
    assert time.perf_counter() - t0 < 5 + 10
    assert _marked() == []


def test_a_stopped_case_is_ended_at_the_wall_clock_limit(tmp_path):
    code = f"import os, signal\n{SLEEPER}\nos.kill(os.getpid(), signal.SIGSTOP)"
    t0 = time.perf_counter()
    out, _ = _run(tmp_path, code, Limits(wall_s=3, cpu_s=3, memory_bytes=1 << 30))
    assert out.ended == "timeout" and time.perf_counter() - t0 < 3 + 10
    assert _marked() == []


def test_a_fork_bomb_is_stopped_at_the_process_limit(tmp_path):
    code = f"""
import os, time
for _ in range(60):  # bounded: a failing test never takes the machine down
    if os.fork() == 0:
        time.sleep(30)
        os._exit(0)
time.sleep(30)  # {MARK}
"""
    out, _ = _run(tmp_path, code, Limits(wall_s=20, cpu_s=20, memory_bytes=1 << 30, processes=16))
    assert out.ended == "processes"
    assert _marked() == []


def test_the_memory_limit_counts_every_process_of_the_case(tmp_path):
    # 4 processes of 80 MiB each: none over 200 MiB, together far over
    code = """
import os, time
for _ in range(3):
    if os.fork() == 0:
        break
block = bytearray(80 << 20)
time.sleep(30)
"""
    limits = Limits(wall_s=20, cpu_s=20, memory_bytes=200 << 20, as_bytes=1 << 30)
    out, _ = _run(tmp_path, code, limits)
    assert out.ended == "memory"
    assert _marked() == []


def test_output_and_files_are_capped(tmp_path):
    code = """
import sys
line = "x" * 1023 + "\\n"
for _ in range(20 * 1024):
    sys.stdout.write(line)
try:
    with open("big.txt", "w") as f:
        f.write(line * 4096)
except OSError as exc:
    print("refused", exc.errno)
"""
    limits = Limits(wall_s=20, cpu_s=20, memory_bytes=1 << 30, file_bytes=1 << 20)
    out, _ = _run(tmp_path, code, limits)
    assert out.code == 0 and out.output_bytes > 20 << 20
    assert len(out.output.encode()) <= limits.output_bytes
    assert out.output.startswith("x" * 1023)


@pytest.mark.skipif(not ROOT, reason="a case runs as a user of its own only when graded as root")
def test_as_root_a_case_cannot_read_the_graders_files_nor_signal_it(tmp_path):
    secret = tmp_path / "secret.toml"
    secret.write_text("[assignment]\n")
    os.chmod(secret, 0o600)
    victim = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    code = f"""
import os, signal
print("uid", os.getuid())
for what, act in (("read", lambda: open({str(secret)!r}).read()),
                  ("signal", lambda: os.kill({victim.pid}, signal.SIGKILL))):
    try:
        act()
        print(what, "allowed")
    except PermissionError:
        print(what, "refused")
"""
    try:
        out, uid = _run(tmp_path, code)
        if uid is None:
            pytest.skip(f"{PYTHON} cannot be run by another user here")
        assert f"uid {uid}" in out.output
        assert "read refused" in out.output and "signal refused" in out.output
        assert victim.poll() is None
    finally:
        victim.kill()
        victim.wait()


def test_vizmm_check_has_a_wall_clock_timeout(tmp_path):
    t0 = time.perf_counter()
    run = subprocess.run(
        [sys.executable, "-m", "vizmm", "check", f"{SUBS / 'endless_loop.py'}:matmul",
         "--width", "4", "-t", "2", "-b", "simulator", "--timeout", "3"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert run.returncode == 2 and "time limit of 3 s" in run.stderr
    assert "Traceback" not in run.stderr
    assert time.perf_counter() - t0 < 3 + 15


# ------------------------------------------------------------------ the judge
def test_the_judge_takes_only_the_recording_of_the_launch_it_asked_for(tmp_path):
    import vizmm
    from vizmm.grade.judge import MAX_TRACE_BYTES, JudgeError, read_recording
    from vizmm.record.frontend import read_kernel

    ks = read_kernel(str(SUBS / "correct_book.py"), "matmul", {"TILE_WIDTH": 2})
    mine = vizmm.record(3, 3, 3, tile_width=2, kernel=ks, backend="simulator", seed=0, quiet=True)
    folder = tmp_path / "case"
    folder.mkdir()
    mine.save(folder / "trace.vizmm")
    trace, data = read_recording(str(folder), (3, 3, 3), 2, 0, "matmul")
    assert data == (folder / "trace.vizmm").read_bytes() and trace.user_kernel == "matmul"
    for args, words in [
        (((4, 4, 4), 2, 0, "matmul"), "not of the launch"),  # another shape
        (((3, 3, 3), 1, 0, "matmul"), "not of the launch"),  # another TILE_WIDTH
        (((3, 3, 3), 2, 1, "matmul"), "seeded inputs"),  # another seed
        (((3, 3, 3), 2, 0, "other"), "not of the submission's kernel"),
    ]:
        with pytest.raises(JudgeError, match=words):
            read_recording(str(folder), *args)
    # the book's own kernel, recorded on the same launch: not the submission's
    book = vizmm.record(3, 3, 3, tile_width=2, kernel="general", backend="simulator", quiet=True)
    book.save(folder / "trace.vizmm")
    with pytest.raises(JudgeError, match="not of the submission's kernel"):
        read_recording(str(folder), (3, 3, 3), 2, 0, "matmul")
    # a link to a file elsewhere, a folder, a file over the cap, bytes that are no trace
    (folder / "trace.vizmm").unlink()
    (folder / "trace.vizmm").symlink_to(tmp_path / "elsewhere.vizmm")
    with pytest.raises(JudgeError, match="not a regular file"):
        read_recording(str(folder), (3, 3, 3), 2, 0, "matmul")
    (folder / "trace.vizmm").unlink()
    (folder / "trace.vizmm").mkdir()
    with pytest.raises(JudgeError, match="not a regular file"):
        read_recording(str(folder), (3, 3, 3), 2, 0, "matmul")
    (folder / "trace.vizmm").rmdir()
    with open(folder / "trace.vizmm", "wb") as f:
        f.truncate(MAX_TRACE_BYTES + 1)
    with pytest.raises(JudgeError, match="over 64 MiB"):
        read_recording(str(folder), (3, 3, 3), 2, 0, "matmul")
    (folder / "trace.vizmm").write_bytes(b'{"score": 30}')
    with pytest.raises(JudgeError, match="could not read"):
        read_recording(str(folder), (3, 3, 3), 2, 0, "matmul")


def test_class_csv_cells_are_never_formulas():
    from vizmm.grade.report import _cell

    for text in ("=1+1", "+1", "-1", "@SUM(A1)", "\t=1", "\r=1"):
        assert _cell(text) == "'" + text
    assert _cell("no_boundary.py") == "no_boundary.py" and _cell(-1) == -1


def test_a_case_the_grader_fails_on_costs_that_submission_alone(tmp_path, monkeypatch):
    from vizmm.grade import grade_many, runner
    from vizmm.grade.report import class_csv

    real = runner.record_apart

    def flaky(path, *args, **kw):
        if os.path.basename(path) == "no_boundary.py":
            raise RuntimeError("the grader's own failure")
        return real(path, *args, **kw)

    monkeypatch.setattr(runner, "record_apart", flaky)
    (tmp_path / "a.toml").write_text(ASSIGNMENT)
    a = load_assignment(tmp_path / "a.toml")
    broken, book = grade_many(
        a, [SUBS / "no_boundary.py", SUBS / "correct_book.py"], jobs=2, workdir=str(tmp_path / "w")
    )
    assert broken.score == 0
    assert broken.cases[0].error == "the grader could not grade this case (RuntimeError)"
    assert book.score == FULL
    rows = class_csv([broken, book]).splitlines()
    assert rows[1].startswith("no_boundary.py,0,")
    assert rows[2].startswith(f"correct_book.py,{FULL},")
