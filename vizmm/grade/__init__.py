"""Grading an assignment: the tiled matrix multiplication, graded with reasons and pictures.

``vizmm grade ASSIGNMENT.toml SUBMISSION.py`` (see :mod:`vizmm.cli`) reads an
assignment file (:mod:`.assignment`), records every case in a process apart
(:mod:`.runner`, :mod:`.sandbox`, :mod:`.case`: its own folder, limits, as
root its own user, no process left behind), judges each recording in the
grader, where no code of a submission ran (:mod:`.judge`), and writes
Gradescope's ``results.json``, a feedback page and, for a folder of
submissions, a class CSV and summary page (:mod:`.report`).
"""

from .assignment import CHECKS, Assignment, AssignmentError, Case, load_assignment
from .runner import CaseResult, CheckResult, Grading, grade, grade_many

__all__ = [
    "CHECKS",
    "Assignment",
    "AssignmentError",
    "Case",
    "CaseResult",
    "CheckResult",
    "Grading",
    "grade",
    "grade_many",
    "load_assignment",
]
