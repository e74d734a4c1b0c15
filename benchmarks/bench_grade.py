"""Grading a class: 30 submissions x 3 cases (examples/assignment.toml), one case per core.

Usage: ``python benchmarks/bench_grade.py [--engine auto|record] [--jobs N]``. The
submissions are the test submissions of tests/grade_submissions/ that finish
(correct ones and planted mistakes), copied round-robin to 30 files. Prints the
wall time, the time per case and the score distribution; the target on a
2-core machine is at most 10 minutes.
"""

import argparse
import os
import shutil
import tempfile
import time
from collections import Counter
from pathlib import Path

from vizmm.grade import grade_many, load_assignment
from vizmm.grade.report import class_csv, summary_html

REPO = Path(__file__).resolve().parents[1]
KINDS = [
    "correct_book",
    "correct_2d",
    "correct_flat_shared",
    "no_boundary",
    "swapped_index",
    "missing_barrier",
    "uncoalesced",
    "wrong_signature",
]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--engine", default="auto", choices=("auto", "record"))
    ap.add_argument("--jobs", type=int, default=os.cpu_count())
    ap.add_argument("-n", type=int, default=30)
    args = ap.parse_args()
    a = load_assignment(REPO / "examples" / "assignment.toml")
    with tempfile.TemporaryDirectory() as tmp:
        paths = []
        for i in range(args.n):
            name = KINDS[i % len(KINDS)]
            dst = Path(tmp) / f"student{i:02d}_{name}.py"
            shutil.copy(REPO / "tests" / "grade_submissions" / f"{name}.py", dst)
            paths.append(dst)
        t0 = time.perf_counter()
        gradings = grade_many(
            a, paths, jobs=args.jobs, workdir=str(Path(tmp) / "w"), engine=args.engine
        )
        wall = time.perf_counter() - t0
        t1 = time.perf_counter()
        class_csv(gradings)
        summary_html(gradings)
        report = time.perf_counter() - t1
    cases = [c for g in gradings for c in g.cases]
    mean = sum(c.seconds for c in cases) / len(cases)
    print(
        f"{args.n} submissions x {len(a.cases)} cases = {len(cases)} cases, {args.jobs} at once "
        f"({os.cpu_count()} cores), engine {args.engine}: {wall:.1f} s "
        f"({wall / len(cases):.2f} s a case; mean case {mean:.2f} s); "
        f"CSV and summary page {report:.1f} s"
    )
    print("scores:", dict(sorted(Counter(g.score for g in gradings).items())))


if __name__ == "__main__":
    main()
