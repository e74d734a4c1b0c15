"""Grading: every case of an assignment run on a submission, each in a child process under limits.

:func:`grade` runs the cases of one submission; :func:`grade_many` the
cases of many, one child process per core at a time. Each case is
``python -m vizmm.grade.case`` (:mod:`vizmm.grade.case`) in its own session,
started with ``RLIMIT_CPU`` (the case's time limit in CPU seconds) and, in the
simulator, ``RLIMIT_AS`` (the assignment's memory limit), and killed with its
whole process group when it runs past the wall-clock limit. Whatever the
submission does, the grader gets a :class:`CaseResult`: an infinite loop, an
enormous allocation, a crash, ``sys.exit``, a syntax error or a wrong
signature is a failed case with one clear line.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from typing import Any

from .._version import __version__
from .assignment import CHECKS, Assignment, Case

__all__ = ["CaseResult", "CheckResult", "Grading", "grade", "grade_many"]

#: Seconds a killed case's process group is given to go before the grader stops waiting.
_REAP_S = 5.0


@dataclasses.dataclass(frozen=True)
class CheckResult:
    """One check of one case.

    Attributes
    ----------
    name : str
        A key of :data:`~vizmm.grade.assignment.CHECKS`.
    points, max_points : float
    passed : bool or None
        None when this vizmm could not evaluate the check (it scores 0).
    finding : dict or None
        The first finding that failed it (kind, block, thread, phase, k,
        message, expected, got).
    """

    name: str
    points: float
    max_points: float
    passed: bool | None
    finding: dict | None = None


@dataclasses.dataclass(frozen=True)
class CaseResult:
    """What one case of one submission got.

    Attributes
    ----------
    case : Case
    error : str or None
        Why the submission could not be graded on it (every check scores 0).
    checks : tuple of CheckResult
    findings : list of dict
        Every finding, in the order they happened (the first is the one to fix).
    trace_path : str or None
        The recording (for the replay); removed with the grading's folder.
    seconds : float
        Wall-clock time of the case, its process's start included.
    engine : str
        'vizmm.check' or 'record' (vizmm.record and NumPy).
    """

    case: Case
    error: str | None
    checks: tuple[CheckResult, ...]
    findings: list[dict]
    trace_path: str | None
    seconds: float
    engine: str = ""

    @property
    def score(self) -> float:
        """Points earned."""
        return float(sum(c.points for c in self.checks))

    @property
    def max_score(self) -> float:
        """Points possible."""
        return float(sum(c.max_points for c in self.checks))

    @property
    def passed(self) -> bool:
        """Every check passed."""
        return self.error is None and all(c.passed for c in self.checks)

    @property
    def first_finding(self) -> dict | None:
        """The first finding that cost points (None when none did)."""
        for f in self.findings:
            if any(c.finding is f for c in self.checks):
                return f
        return next((c.finding for c in self.checks if c.finding), None)


@dataclasses.dataclass(frozen=True)
class Grading:
    """One submission graded.

    Attributes
    ----------
    assignment : Assignment
    submission : str
        The submission's path.
    cases : tuple of CaseResult
    seconds : float
    version : str
        vizmm's version (a grade depends on it, the submission and the assignment).
    workdir : str
        Folder of the cases' traces; :meth:`cleanup` removes it.
    """

    assignment: Assignment
    submission: str
    cases: tuple[CaseResult, ...]
    seconds: float
    version: str
    workdir: str

    @property
    def score(self) -> float:
        """Points earned over every case."""
        return float(sum(c.score for c in self.cases))

    @property
    def max_score(self) -> float:
        """Points possible."""
        return float(sum(c.max_score for c in self.cases))

    def cleanup(self) -> None:
        """Remove the folder of the cases' traces."""
        shutil.rmtree(self.workdir, ignore_errors=True)


def _limits(cpu_s: int, as_bytes: int | None) -> Callable[[], None]:
    def apply() -> None:  # in the child, before exec
        import resource

        resource.setrlimit(resource.RLIMIT_CPU, (cpu_s, cpu_s + 2))
        if as_bytes is not None:
            resource.setrlimit(resource.RLIMIT_AS, (as_bytes, as_bytes))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))

    return apply


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        proc.wait(timeout=_REAP_S)
    except subprocess.TimeoutExpired:  # pragma: no cover - a process that ignores SIGKILL
        pass


def _signal_name(n: int) -> str:
    try:
        return signal.Signals(n).name
    except ValueError:
        return f"signal {n}"


def _run_child(
    assignment: Assignment, submission: str, case: Case, workdir: str, engine: str = "auto"
) -> dict:
    """Run one case's process; its result.json, or ``{"error": ...}`` saying how it ended."""
    spec = {
        "submission": os.path.abspath(submission),
        "kernel": assignment.kernel,
        "signature": list(assignment.signature),
        "tile_width_name": assignment.tile_width_name,
        "shape": list(case.shape),
        "tile_width": case.tile_width,
        "seed": assignment.seed,
        "backend": assignment.backend,
        "checks": list(assignment.points),
        "workdir": workdir,
        "engine": engine,
    }
    spec_path = os.path.join(workdir, "spec.json")
    with open(spec_path, "w", encoding="utf-8") as f:
        json.dump(spec, f)
    env = dict(os.environ)
    if assignment.backend == "simulator":
        env["NUMBA_ENABLE_CUDASIM"] = "1"
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    cpu = max(1, int(assignment.time_limit_s))
    as_bytes = assignment.memory_limit_mb << 20 if assignment.backend == "simulator" else None
    limit = assignment.time_limit_s
    with open(os.path.join(workdir, "output.txt"), "wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "vizmm.grade.case", spec_path],
            cwd=workdir,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group: killed whole
            preexec_fn=_limits(cpu, as_bytes),
        )
        try:
            proc.wait(timeout=limit)
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            return {
                "error": f"took longer than the time limit of {limit:g} s and was stopped "
                "(an endless loop, or a kernel far too slow?)"
            }
        except BaseException:
            _kill_group(proc)
            raise
        finally:
            if proc.poll() is None:
                _kill_group(proc)
            else:  # threads or children it left behind
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
    result_path = os.path.join(workdir, "result.json")
    code = proc.returncode
    if code == -signal.SIGXCPU or (code == -signal.SIGKILL):
        return {"error": f"used more than the {cpu} s of CPU time a case may use and was stopped"}
    if os.path.exists(result_path):
        try:
            with open(result_path, encoding="utf-8") as f:
                result = json.load(f)
            if isinstance(result, dict):
                return result
        except (OSError, ValueError):
            pass
    if code < 0:
        return {"error": f"crashed ({_signal_name(-code)}) without a result"}
    return {"error": f"ended (exit code {code}) without a result"}


def _checks(assignment: Assignment, result: dict) -> tuple[CheckResult, ...]:
    from .case import CHECK_KINDS

    out = []
    error = result.get("error")
    evaluated = set(result.get("evaluated", ()))
    findings = result.get("findings") or []
    for name in CHECKS:
        if name not in assignment.points:
            continue
        pts = assignment.points[name]
        if error:
            out.append(CheckResult(name, 0.0, pts, False))
            continue
        if name not in evaluated:
            out.append(CheckResult(name, 0.0, pts, None))
            continue
        first = next((f for f in findings if f.get("kind") in CHECK_KINDS[name]), None)
        out.append(CheckResult(name, 0.0 if first else pts, pts, first is None, first))
    return tuple(out)


def _grade_case(
    assignment: Assignment, submission: str, case: Case, root: str, engine: str = "auto"
) -> CaseResult:
    workdir = os.path.join(root, f"case{case.number}")
    os.makedirs(workdir, exist_ok=True)
    t0 = time.perf_counter()
    result = _run_child(assignment, submission, case, workdir, engine)
    seconds = time.perf_counter() - t0
    trace = result.get("trace")
    trace_path = os.path.join(workdir, trace) if isinstance(trace, str) else None
    if trace_path is not None and not os.path.isfile(trace_path):
        trace_path = None
    error = result.get("error")
    return CaseResult(
        case=case,
        error=str(error) if error else None,
        checks=_checks(assignment, result),
        findings=[f for f in result.get("findings") or [] if isinstance(f, dict)],
        trace_path=trace_path,
        seconds=round(seconds, 3),
        engine=str(result.get("engine", "")),
    )


def _check_submission(path: str) -> None:
    if not os.path.isfile(path):
        raise FileNotFoundError(2, "no such submission file", path)
    if not path.endswith(".py"):
        raise ValueError(f"{path}: a submission is a Python file (.py)")


def grade(
    assignment: Assignment,
    submission: str | os.PathLike,
    workdir: str | None = None,
    engine: str = "auto",
) -> Grading:
    """Grade one submission on every case of the assignment (one child process per case).

    Parameters
    ----------
    assignment : Assignment
        From :func:`~vizmm.grade.assignment.load_assignment`.
    submission : str or os.PathLike
        The student's Python file defining ``assignment.kernel``.
    workdir : str, optional
        Folder for the cases' traces (a new temporary folder by default;
        :meth:`Grading.cleanup` removes it).
    engine : {'auto', 'record'}
        'auto': ``vizmm.check``'s findings where this vizmm has it; 'record':
        ``vizmm.record`` and NumPy only (race and bank conflicts not checked).

    Returns
    -------
    Grading

    Raises
    ------
    FileNotFoundError
        When the submission does not exist.
    ValueError
        When it is not a ``.py`` file.
    """
    return grade_many(assignment, [submission], workdir=workdir, jobs=1, engine=engine)[0]


def grade_many(
    assignment: Assignment,
    submissions: Sequence[str | os.PathLike],
    jobs: int | None = None,
    workdir: str | None = None,
    progress: Callable[[int, int], Any] | None = None,
    engine: str = "auto",
) -> list[Grading]:
    """Grade several submissions, ``jobs`` cases at a time (default: one per core).

    Parameters
    ----------
    assignment : Assignment
    submissions : sequence of path
    jobs : int, optional
        Cases run at once (child processes); default ``os.cpu_count()``.
    workdir : str, optional
        Folder holding one sub-folder per submission (default: a new temporary folder).
    progress : callable, optional
        Called as ``progress(done, total)`` after each case.
    engine : {'auto', 'record'}
        See :func:`grade`.

    Returns
    -------
    list of Grading
        In the order of ``submissions``.

    Raises
    ------
    FileNotFoundError, ValueError
        For a submission that is not a ``.py`` file that exists (before any case runs).
    """
    if engine not in ("auto", "record"):
        raise ValueError(f"engine must be 'auto' or 'record', got {engine!r}")
    paths = [os.fspath(p) for p in submissions]
    for p in paths:
        _check_submission(p)
    jobs = max(1, int(jobs or os.cpu_count() or 1))
    root = workdir or tempfile.mkdtemp(prefix="vizmm-grade-")
    roots = [root] if len(paths) == 1 else [os.path.join(root, f"s{i}") for i in range(len(paths))]
    tasks = [(i, case) for i in range(len(paths)) for case in assignment.cases]
    results: dict[tuple[int, int], CaseResult] = {}
    t0 = time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        futures = {
            pool.submit(_grade_case, assignment, paths[i], case, roots[i], engine): (
                i,
                case.number,
            )
            for i, case in tasks
        }
        for done, fut in enumerate(concurrent.futures.as_completed(futures), 1):
            results[futures[fut]] = fut.result()
            if progress is not None:
                progress(done, len(tasks))
    seconds = time.perf_counter() - t0
    return [
        Grading(
            assignment=assignment,
            submission=p,
            cases=tuple(results[(i, c.number)] for c in assignment.cases),
            seconds=round(seconds, 3),
            version=__version__,
            workdir=roots[i],
        )
        for i, p in enumerate(paths)
    ]
