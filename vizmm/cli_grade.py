"""``vizmm grade``: an assignment's cases run on one submission or a class, and the reports."""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Callable, Iterator

from .cli_values import EXIT_OK, CLIError, _non_negative
from .trace import (
    atomic_write,
)
from .trace.destination import check_writable


# -------------------------------------------------------------------- grade
def cmd_grade(args: argparse.Namespace) -> int:
    """Grade a submission (or a folder of them) on an assignment's cases.

    The submission is read, never run as a module. Each case records its
    kernel in a process apart (a folder of its own, as root a user of its
    own) under a wall-clock limit, a CPU-time limit and a memory limit for
    all its processes (the assignment's time_limit_s and memory_limit_mb);
    every process it started is gone before its recording is read, and the
    score is computed here from that recording. An endless loop, a crash, a
    syntax error or a wrong signature fails the case with one line; a case
    that fails costs its submission alone. One submission: -o writes
    Gradescope's results.json, --html the feedback page. A folder: every
    *.py in it, one case per core at a time; --csv writes one row per
    submission, --summary the class's page. Exit 0 when graded, 2 for a bad
    assignment file or arguments.

    Parameters
    ----------
    args : argparse.Namespace
        The parsed command line of ``vizmm grade`` (``vizmm grade --help`` lists its options).

    Examples
    --------
    vizmm grade examples/assignment.toml examples/tiled_matmul_correct.py -o results.json
    vizmm grade examples/assignment.toml mine.py --html feedback.html
    vizmm grade examples/assignment.toml submissions/ --csv class.csv --summary summary.html
    """
    from .grade import grade_many, load_assignment

    assignment = load_assignment(args.assignment)
    folder, paths = _submissions(args)
    for p in (args.output, args.html, args.csv, args.summary):
        if p:
            check_writable(p)  # before any case runs
    import tempfile

    show_bar = folder and not args.quiet and sys.stderr.isatty()  # a bar on a terminal only
    with tempfile.TemporaryDirectory(prefix="vizmm-grade-") as tmp:
        with _case_bar(show_bar) as bar:
            gradings = grade_many(assignment, paths, jobs=args.jobs, workdir=tmp, progress=bar)
        if folder:  # written while the cases' folders are still there
            _write_class(args, gradings)
        else:
            _write_one(args, gradings[0])
    return EXIT_OK


def _submissions(args: argparse.Namespace) -> tuple[bool, list[str]]:
    """Whether ``vizmm grade`` was given a folder, and the submissions to grade."""
    target = args.submission
    if not os.path.isdir(target):
        if args.csv or args.summary:
            raise CLIError("--csv and --summary are for a folder of submissions")
        if not os.path.isfile(target):
            raise CLIError(f"{target}: no such submission file")
        return False, [target]
    if args.output or args.html:
        raise CLIError("-o and --html are for one submission; a folder takes --csv, --summary")
    paths = []
    for n in sorted(os.listdir(target)):
        p = os.path.join(target, n)
        if not n.endswith(".py"):
            continue
        if not os.path.isfile(p):  # a folder (or anything else) named x.py: not graded
            print(f"vizmm: skipped {n}: not a file", file=sys.stderr)
            continue
        paths.append(p)
    if not paths:
        raise CLIError(f"{target}: no submission (*.py) in this folder")
    return True, paths


@contextlib.contextmanager
def _case_bar(show: bool) -> Iterator[Callable[[int, int], None]]:
    """``progress(done, total)`` of the cases graded: a tqdm bar on stderr where ``show``."""
    if not show:
        yield lambda done, total: None
        return
    from tqdm import tqdm

    bar = tqdm(unit="case", desc="grading", leave=False, file=sys.stderr)

    def progress(done: int, total: int) -> None:
        bar.total = total
        bar.update(done - bar.n)

    try:
        yield progress
    finally:
        bar.close()


def _write_one(args: argparse.Namespace, g) -> None:
    """One submission's grading: results.json (-o), the feedback page (--html), each case."""
    from .grade.report import feedback_html, results_json

    if args.output:
        atomic_write(args.output, results_json(g).encode("utf-8"))
    if args.html:
        atomic_write(args.html, feedback_html(g).encode("utf-8"))
    if not args.quiet:
        for r in g.cases:
            mark = "pass" if r.passed else "fail"
            print(f"{r.case.name}: {mark} ({r.score:g}/{r.max_score:g})")
        print(f"score: {g.score:g} of {g.max_score:g}")


def _write_class(args: argparse.Namespace, gradings) -> None:
    """A folder's gradings: the class CSV (--csv), the summary page (--summary), each score."""
    from .grade.report import class_csv, summary_html

    if args.csv:
        atomic_write(args.csv, class_csv(gradings).encode("utf-8"))
    if args.summary:
        atomic_write(args.summary, summary_html(gradings).encode("utf-8"))
    if not args.quiet:
        for g in gradings:
            print(f"{os.path.basename(g.submission)}: {g.score:g} of {g.max_score:g}")


def _grade_options(p: argparse.ArgumentParser) -> None:
    """The options of ``vizmm grade``."""
    p.add_argument("assignment", metavar="ASSIGNMENT.toml", help="the assignment file")
    p.add_argument(
        "submission", metavar="SUBMISSION", help="a submission (.py) or a folder of them"
    )
    p.add_argument("-o", "--output", metavar="RESULTS.json", help="Gradescope's results.json")
    p.add_argument("--html", metavar="FEEDBACK.html", help="the feedback page (self-contained)")
    p.add_argument("--csv", metavar="CLASS.csv", help="one row per submission (a folder)")
    p.add_argument("--summary", metavar="SUMMARY.html", help="the class's page (a folder)")
    p.add_argument(
        "--jobs",
        type=_non_negative,
        default=0,
        metavar="N",
        help="cases graded at once (default: one per core)",
    )
    p.add_argument("-q", "--quiet", action="store_true", help="print nothing but errors")
