"""Grading: every case of an assignment run on a submission, each in a process apart, judged here.

:func:`grade` runs the cases of one submission; :func:`grade_many` the
cases of many, one case per core at a time. Each case is
``python -I -m vizmm.grade.case`` (:mod:`vizmm.grade.case`), started by
:mod:`vizmm.grade.sandbox` in a fresh empty folder of its own, under a
wall-clock limit, a CPU-time limit, a limit on the memory and the processes
of all its processes together and, as root, as a user of its own; every
process it started is gone before its folder is read. The case only
records; the verdict is computed here, in the grader, where no code of a
submission ran, from its recording validated against the launch
(:mod:`vizmm.grade.judge`). Whatever the submission does, the grader gets a
:class:`CaseResult`: an infinite loop, an enormous allocation, a crash,
``sys.exit``, a syntax error, a wrong signature, a killed or stopped process
or a forged result file is a failed case (or no change at all) with one
clear line, and costs that submission alone.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import json
import os
import re
import shutil
import signal
import stat
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from .._version import __version__
from .assignment import CHECKS, Assignment, Case
from .judge import CHECK_KINDS, MAX_TRACE_BYTES, JudgeError, judge, read_recording
from .sandbox import Limits, Outcome, case_folder, isolated_user, run_apart

__all__ = ["CaseResult", "CheckResult", "Grading", "grade", "grade_many"]

#: Output of a case kept (for the grader's eyes only: never shown, never a finding).
OUTPUT_BYTES = 64 << 10
#: Processes (not threads) a case may run at once.
CASE_PROCESSES = 16
#: The longest line of a case's own error a student reads.
ERROR_CHARS = 400


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
    output : str
        The first 64 KiB of what the case printed, for the grader's eyes
        (never in a report).
    """

    case: Case
    error: str | None
    checks: tuple[CheckResult, ...]
    findings: list[dict]
    trace_path: str | None
    seconds: float
    engine: str = ""
    output: str = ""

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


def _limits(assignment: Assignment) -> Limits:
    memory = assignment.memory_limit_mb << 20
    return Limits(
        wall_s=assignment.time_limit_s,
        cpu_s=max(1, int(assignment.time_limit_s)),
        memory_bytes=memory,
        as_bytes=memory if assignment.backend == "simulator" else None,
        processes=CASE_PROCESSES,
        file_bytes=MAX_TRACE_BYTES,
        output_bytes=OUTPUT_BYTES,
    )


def _signal_name(n: int) -> str:
    try:
        return signal.Signals(n).name
    except ValueError:
        return f"signal {n}"


def _case_line(folder: str) -> str | None:
    """The case's own ``error.txt``: its first line, printable, at most :data:`ERROR_CHARS`."""
    from .case import ERROR_FILE

    try:
        fd = os.open(os.path.join(folder, ERROR_FILE), os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        return None
    with os.fdopen(fd, "rb") as f:
        text = f.read(4 * ERROR_CHARS).decode("utf-8", "replace")
    line = re.sub(r"[^\S ]|[\x00-\x1f\x7f]", " ", text.strip().split("\n")[0])
    line = " ".join(line.split())
    if len(line) > ERROR_CHARS:
        line = line[: ERROR_CHARS - 1] + "…"
    return line or None


def _stopped(outcome: Outcome, limits: Limits) -> str | None:
    """Why the case was stopped from outside (None: it ended by itself)."""
    if outcome.ended == "timeout":
        return (
            f"took longer than the time limit of {limits.wall_s:g} s and was stopped "
            "(an endless loop, or a kernel far too slow?)"
        )
    if outcome.ended == "memory":
        return (
            "the submission ran out of memory (its processes together held more than the "
            f"{limits.memory_bytes >> 20} MiB a case may use)"
        )
    if outcome.ended == "processes":
        return f"the submission started more than the {limits.processes} processes a case may run"
    if outcome.ended is not None:
        return "the case's process was stopped from outside its limits and left no result"
    if outcome.signal in (signal.SIGXCPU, signal.SIGKILL):
        return f"used more than the {limits.cpu_s} s of CPU time a case may use and was stopped"
    return None


class _Books:
    """Fig. 5.13's recording of a launch, made once per launch in the grader (for ``coalesced``)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._made: dict = {}

    def get(self, shape, tile_width: int, backend: str, seed: int):
        import vizmm

        key = (tuple(shape), tile_width, backend, seed)
        with self._lock:
            if key not in self._made:
                j, k, l = shape
                self._made[key] = vizmm.record(
                    j, k, l, tile_width=tile_width, kernel="general", backend=backend,
                    seed=seed, quiet=True,
                )  # fmt: skip
            return self._made[key]


def _copy_submission(path: str, folder: str, uid: int | None) -> str:
    """The submission's bytes copied into the case's folder; its name there."""
    name = os.path.basename(path)
    if not re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,100}\.py", name):
        name = "submission.py"
    with open(path, "rb") as f:
        data = f.read()
    target = os.path.join(folder, name)
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    if uid is not None:
        os.chown(target, uid, uid)
    return name


def _read_here(path: str, kernel: str, signature: Sequence[str], constants):
    """The kernel as the front end reads it (never run); its refusals and a wrong signature."""
    from ..record.frontend import KernelRejected, read_kernel

    try:
        ks = read_kernel(path, kernel, constants)
    except KernelRejected as exc:
        raise JudgeError(str(exc).replace(path, os.path.basename(path))) from None
    if signature and len(ks.params) != len(signature):
        params = ", ".join(ks.params)
        raise JudgeError(
            f"{kernel}({params}) takes {len(ks.params)} argument(s); the assignment asks for "
            f"{kernel}({', '.join(signature)})"
        )
    return ks


def _backend_here(ks, backend: str) -> str:
    """The backend the case records on (never a GPU a skipped barrier could hang)."""
    from vizmm.record import RecordError
    from vizmm.record.divergence import backend_for

    try:
        return backend_for(ks, backend)
    except RecordError as exc:
        raise JudgeError(str(exc)) from None


def record_apart(
    path: str,
    kernel: str,
    shape: tuple[int, int, int],
    tile_width: int,
    *,
    seed: int,
    backend: str,
    reads: bool,
    limits: Limits,
    signature: Sequence[str] = (),
    tile_width_name: str = "",
    schedule: str = "threads",
) -> tuple[Any, bytes, Outcome]:
    """Record a kernel file in a process apart (:mod:`vizmm.grade.case`) and read back its trace.

    The file is copied into a fresh folder of the case's own; the case runs
    under ``limits`` (as a user of its own when root); every process it
    started is gone before its folder is read, and only its ``trace.vizmm``
    is, validated against the launch (:func:`~vizmm.grade.judge.read_recording`).

    Parameters
    ----------
    path : str
        The kernel's Python file.
    kernel : str
        The kernel's name in it.
    shape : (j, k, l)
        M is j x k, N is k x l.
    tile_width : int
        TILE_WIDTH.
    seed : int
        Seed of the inputs (:func:`vizmm.trace.seeded_inputs`).
    backend : str
        'simulator', 'gpu' or 'auto'.
    reads : bool
        Log every access (what :func:`vizmm.analysis.check.findings` reads).
    limits : Limits
        What the case may use (:class:`vizmm.grade.sandbox.Limits`).
    signature : sequence of str, optional
        The parameters the kernel must take (not checked when empty).
    tile_width_name : str, optional
        The module constant set to ``tile_width`` (none when empty).
    schedule : {'threads', 'warps'}
        vizmm's simulator: the order threads run in between barriers.

    Returns
    -------
    trace : Trace
        Validated, of this launch and these inputs.
    data : bytes
        Its file's bytes.
    outcome : Outcome
        How the case's process ended.

    Raises
    ------
    JudgeError
        One line: why there is no recording (the front end's refusal of the
        file, read here first; a wrong signature; stopped at a limit; the
        kernel's own error; a crash; a recording of another launch).
    """
    ks = _read_here(
        path, kernel, signature, {tile_width_name: tile_width} if tile_width_name else None
    )
    backend = _backend_here(ks, backend)
    user = isolated_user(late_ok=True)
    with user as uid:
        # in the system's temporary folder, whatever the grading's folder: a case's own user
        # must pass through every folder above its own
        outer = tempfile.mkdtemp(prefix="vizmm-case-")
        folder = case_folder(outer, uid)
        try:
            spec = {
                "submission": _copy_submission(path, folder, uid),
                "kernel": kernel,
                "signature": list(signature),
                "tile_width_name": tile_width_name,
                "shape": list(shape),
                "tile_width": tile_width,
                "seed": seed,
                "backend": backend,
                "reads": reads,
                "schedule": schedule,
            }
            # vizmm's simulator: the case imports no numba at all
            env = {"VIZMM_KERNELS_TARGET": "none"} if backend == "simulator" else {}
            argv = [sys.executable, "-I", "-m", "vizmm.grade.case"]
            outcome = run_apart(argv, folder, limits, json.dumps(spec), env, uid, user.late)
            # every process of the case is gone: its folder is read now, and only its recording
            stopped = _stopped(outcome, limits)
            if stopped:
                raise JudgeError(stopped)
            try:
                trace, data = read_recording(folder, shape, tile_width, seed, kernel)
            except FileNotFoundError:
                line = _case_line(folder)
                if line:
                    raise JudgeError(line) from None
                if outcome.signal is not None:
                    raise JudgeError(
                        f"crashed ({_signal_name(outcome.signal)}) without a result"
                    ) from None
                raise JudgeError(f"ended (exit code {outcome.code}) without a result") from None
        finally:
            shutil.rmtree(outer, ignore_errors=True)
    return trace, data, outcome


def _run_case(
    assignment: Assignment,
    submission: str,
    case: Case,
    root: str,
    engine: str,
    books: _Books,
) -> dict:
    """Record one case apart and judge it here: a result dict (error, findings, ...)."""
    from ..checker import MAX_CHECK_ELEMENTS

    j, k, l = case.shape
    reads = engine == "auto" and max(j * l, j * k, k * l) <= MAX_CHECK_ELEMENTS
    try:
        trace, data, outcome = record_apart(
            submission,
            assignment.kernel,
            case.shape,
            case.tile_width,
            seed=assignment.seed,
            backend=assignment.backend,
            reads=reads,
            limits=_limits(assignment),
            signature=assignment.signature,
            tile_width_name=assignment.tile_width_name,
        )
    except JudgeError as exc:
        return {"error": str(exc)}
    path = os.path.join(root, f"case{case.number}.vizmm")
    with open(path, "wb") as f:
        f.write(data)

    def book():
        return books.get(case.shape, case.tile_width, trace.backend, assignment.seed)

    try:
        findings, evaluated, used = judge(trace, assignment.points, book, log=reads)
    except ValueError as exc:  # a recording that is not a matrix multiplication's
        text = " ".join(str(exc).split())[:ERROR_CHARS]
        return {"error": f"vizmm could not check this kernel's recording: {text}"}
    return {
        "findings": findings,
        "evaluated": evaluated,
        "engine": used,
        "trace": path,
        "output": outcome.output,
    }


def _checks(assignment: Assignment, result: dict) -> tuple[CheckResult, ...]:
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
    assignment: Assignment,
    submission: str,
    case: Case,
    root: str,
    engine: str = "auto",
    books: _Books | None = None,
) -> CaseResult:
    t0 = time.perf_counter()
    try:
        result = _run_case(assignment, submission, case, root, engine, books or _Books())
    except Exception as exc:  # noqa: BLE001 - a failure costs this case, never the class run
        result = {"error": f"the grader could not grade this case ({type(exc).__name__})"}
    seconds = time.perf_counter() - t0
    trace = result.get("trace")
    error = result.get("error")
    return CaseResult(
        case=case,
        error=str(error) if error else None,
        checks=_checks(assignment, result),
        findings=list(result.get("findings") or []),
        trace_path=trace if isinstance(trace, str) else None,
        seconds=round(seconds, 3),
        engine=str(result.get("engine", "")),
        output=str(result.get("output", "")),
    )


def _check_submission(path: str) -> None:
    if not os.path.isfile(path):
        raise FileNotFoundError(2, "no such submission file", path)
    if not path.endswith(".py"):
        raise ValueError(f"{path}: a submission is a Python file (.py)")


def roots_of(root: str, n: int) -> list[str]:
    """The folder of each of ``n`` submissions' traces under ``root``.

    Parameters
    ----------
    root : str
        The grading's folder.
    n : int
        Submissions.

    Returns
    -------
    list of str
        ``[root]`` for one, else ``root/s0``, ``root/s1``, ...
    """
    return [root] if n == 1 else [os.path.join(root, f"s{i}") for i in range(n)]


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
    root = os.path.abspath(workdir) if workdir else tempfile.mkdtemp(prefix="vizmm-grade-")
    os.makedirs(root, exist_ok=True)
    for r in roots_of(root, len(paths)):
        os.makedirs(r, exist_ok=True)
    books = _Books()
    roots = roots_of(root, len(paths))
    tasks = [(i, case) for i in range(len(paths)) for case in assignment.cases]
    results: dict[tuple[int, int], CaseResult] = {}
    t0 = time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        futures = {
            pool.submit(_grade_case, assignment, paths[i], case, roots[i], engine, books): (
                i,
                case.number,
            )
            for i, case in tasks
        }
        for done, fut in enumerate(concurrent.futures.as_completed(futures), 1):
            results[futures[fut]] = fut.result()
            if progress is not None:
                try:
                    progress(done, len(tasks))
                except Exception:  # noqa: BLE001, S110 - a progress line never stops grading
                    pass
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
