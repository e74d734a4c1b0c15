"""The assignment file: what a submission must be, which cases it runs and what each check is worth.

An assignment is a TOML file (read with :mod:`tomllib`)::

    [assignment]
    title = "Tiled matrix multiplication (PMPP Section 5.4)"
    kernel = "matmul"                 # the name the submission defines
    signature = ["M", "N", "P", "Width"]   # or ["M", "N", "P", "j", "k", "l"]
    tile_width_name = "TILE_WIDTH"    # module constant the grader sets to each case's value
    feedback = "pictures"             # "findings" or "pictures" (findings and replays)
    time_limit_s = 60                 # per case: wall clock (CPU time gets the same)
    memory_limit_mb = 4096            # per case: address space of the child process
    seed = 0                          # the seeded inputs M, N (integers 0..9)
    backend = "simulator"             # "simulator" (default), "gpu" or "auto"
    hidden_visibility = "after_published"   # Gradescope visibility of hidden cases

    [points]                          # points of each check, per case (0 or absent: not graded)
    exact_p = 4                       # P equals M·N exactly (integer inputs)
    no_race = 2                       # no read-after-write / write-after-read race on Mds, Nds
    no_out_of_bounds = 2              # no global or shared access outside its array
    global_reads = 1                  # each element read at most Width/TILE_WIDTH times
    coalesced = 0.5                   # tile loads touch no more 32-byte sectors than Fig. 5.13's
    no_bank_conflicts = 0.5           # the k loop's Mds/Nds reads need one pass per request

    [[case]]
    width = 4                         # or shape = [j, k, l] for the (M, N, P, j, k, l) signature
    tile_width = 2
    # hidden = true: only the grader sees its shape; students see "hidden case 1"

Every key is checked when the file is read: an unknown key, a wrong type or
a value outside what is allowed raises :class:`AssignmentError`, whose one
line names the key and what is allowed (the command exits with code 2).
"""

from __future__ import annotations

import dataclasses
import math
import os
from typing import Any

import tomllib

from ..trace import MAX_TILE_WIDTH

__all__ = [
    "CHECKS",
    "FEEDBACK_LEVELS",
    "SIGNATURES",
    "Assignment",
    "AssignmentError",
    "Case",
    "load_assignment",
    "parse_assignment",
]

#: The checks an assignment may give points to, in the order they are reported,
#: with the words a student reads.
CHECKS: dict[str, str] = {
    "exact_p": "P equals M·N",
    "no_race": "no race on Mds / Nds",
    "no_out_of_bounds": "no access outside an array",
    "global_reads": "global reads per element at most Width/TILE_WIDTH",
    "coalesced": "coalesced tile loads",
    "no_bank_conflicts": "no bank conflicts in the k loop",
}
#: The kernel signatures a case can launch: the book's square one, or the general one.
SIGNATURES = (("M", "N", "P", "Width"), ("M", "N", "P", "j", "k", "l"))
FEEDBACK_LEVELS = ("findings", "pictures")
BACKENDS = ("simulator", "gpu", "auto")
VISIBILITIES = ("hidden", "after_due_date", "after_published", "visible")
#: The largest matrix side a case may have (a simulator case of this size takes minutes).
MAX_SIDE = 256
MAX_CASES = 50

_TOP_KEYS = {"assignment", "points", "case"}
_ASSIGNMENT_KEYS = {
    "title",
    "kernel",
    "signature",
    "tile_width_name",
    "feedback",
    "time_limit_s",
    "memory_limit_mb",
    "seed",
    "backend",
    "hidden_visibility",
}
_CASE_KEYS = {"name", "width", "shape", "tile_width", "hidden"}


class AssignmentError(ValueError):
    """A bad assignment file: one line naming the key and what is allowed."""


@dataclasses.dataclass(frozen=True)
class Case:
    """One launch a submission is graded on.

    Attributes
    ----------
    number : int
        1-based position in the file.
    shape : (j, k, l)
        M is j x k, N is k x l (elements); ``j = k = l = Width`` for the square signature.
    tile_width : int
        TILE_WIDTH: blocks of TILE_WIDTH x TILE_WIDTH threads.
    hidden : bool
        Whether students may see the shape (never, when True).
    name : str
        What students see: the file's ``name``, or ``case N`` / ``hidden case N``
        (hidden cases never show their shape nor a name that could).
    """

    number: int
    shape: tuple[int, int, int]
    tile_width: int
    hidden: bool
    name: str

    @property
    def shape_text(self) -> str:
        """``'M 4x4 · N 4x4, TILE_WIDTH 2'``: for the grader's eyes (and public cases')."""
        j, k, l = self.shape
        return f"M {j}x{k} · N {k}x{l}, TILE_WIDTH {self.tile_width}"


@dataclasses.dataclass(frozen=True)
class Assignment:
    """An assignment file, checked (see the module docstring for the keys).

    Attributes
    ----------
    title, kernel : str
    signature : tuple of str
        One of :data:`SIGNATURES`.
    tile_width_name : str
        The module constant that the grader sets to each case's TILE_WIDTH.
    feedback : {'findings', 'pictures'}
    time_limit_s : float
        Wall-clock seconds per case; the CPU-time limit is the same (whole seconds, at least 1).
    memory_limit_mb : int
        Address-space limit of a case's process (MiB).
    seed : int
    backend : {'simulator', 'gpu', 'auto'}
    hidden_visibility : str
        Gradescope visibility of the hidden cases' tests.
    points : dict
        Check name (:data:`CHECKS`) -> points per case (> 0 only).
    cases : tuple of Case
    path : str
        The file it was read from ('' when parsed from text).
    """

    title: str
    kernel: str
    signature: tuple[str, ...]
    tile_width_name: str
    feedback: str
    time_limit_s: float
    memory_limit_mb: int
    seed: int
    backend: str
    hidden_visibility: str
    points: dict[str, float]
    cases: tuple[Case, ...]
    path: str = ""

    @property
    def case_points(self) -> float:
        """The most a case can score (sum of the checks' points)."""
        return float(sum(self.points.values()))

    @property
    def max_score(self) -> float:
        """The most a submission can score."""
        return self.case_points * len(self.cases)


def _where(section: str, key: str) -> str:
    return f"{section}.{key}" if section else key


def _unknown(section: str, table: dict, allowed: set[str]) -> None:
    extra = sorted(set(table) - allowed)
    if extra:
        raise AssignmentError(
            f"unknown key {_where(section, extra[0])!r}; allowed in "
            f"{('[' + section + ']') if section else 'the file'}: {', '.join(sorted(allowed))}"
        )


def _str(table, section, key, default=None, choices=None) -> str:
    if key not in table:
        if default is None:
            raise AssignmentError(f"{_where(section, key)} is missing: it is required")
        return default
    v = table[key]
    if not isinstance(v, str) or not v.strip():
        raise AssignmentError(f"{_where(section, key)} must be a non-empty string, got {v!r}")
    if choices is not None and v not in choices:
        raise AssignmentError(
            f"{_where(section, key)} = {v!r} is not allowed; choose one of {', '.join(choices)}"
        )
    return v


def _num(table, section, key, default, lo, hi, integer=False) -> Any:
    v = table.get(key, default)
    kind = "an integer" if integer else "a number"
    ok = isinstance(v, int) if integer else isinstance(v, (int, float))
    if isinstance(v, bool) or not ok or not math.isfinite(v) or not lo <= v <= hi:
        raise AssignmentError(f"{_where(section, key)} must be {kind} from {lo} to {hi}, got {v!r}")
    return v


def parse_assignment(data: dict, path: str = "") -> Assignment:
    """Check a parsed assignment (the dict :mod:`tomllib` gives) and build the :class:`Assignment`.

    Parameters
    ----------
    data : dict
        The TOML document.
    path : str
        The file's path, kept for messages and the results.

    Returns
    -------
    Assignment
        The assignment, every key checked and its defaults filled in.

    Raises
    ------
    AssignmentError
        For a missing, unknown or ill-typed key or a value outside its range; the
        message names the key (``case[2].tile_width``) and what is allowed.
    """
    _unknown("", data, _TOP_KEYS)
    a = data.get("assignment")
    if not isinstance(a, dict):
        raise AssignmentError("[assignment] is missing: it names the kernel and its signature")
    _unknown("assignment", a, _ASSIGNMENT_KEYS)
    kernel, sig, tw_name = _kernel_and_signature(a)
    points = _points(data)
    cases = _cases(data, general=len(sig) == 6)
    return Assignment(
        title=_str(a, "assignment", "title", "Tiled matrix multiplication"),
        kernel=kernel,
        signature=tuple(sig),
        tile_width_name=tw_name,
        feedback=_str(a, "assignment", "feedback", "pictures", FEEDBACK_LEVELS),
        time_limit_s=float(_num(a, "assignment", "time_limit_s", 60, 1, 3600)),
        memory_limit_mb=_num(a, "assignment", "memory_limit_mb", 4096, 512, 1 << 20, True),
        seed=_num(a, "assignment", "seed", 0, 0, 2**32 - 1, integer=True),
        backend=_str(a, "assignment", "backend", "simulator", BACKENDS),
        hidden_visibility=_str(
            a, "assignment", "hidden_visibility", "after_published", VISIBILITIES
        ),
        points=points,
        cases=cases,
        path=path,
    )


def _kernel_and_signature(a: dict) -> tuple[str, list, str]:
    """``[assignment]``'s kernel name, signature and the name of its TILE_WIDTH, checked."""
    kernel = _str(a, "assignment", "kernel")
    if not kernel.isidentifier():
        raise AssignmentError(f"assignment.kernel must be a Python name, got {kernel!r}")
    sig = a.get("signature", list(SIGNATURES[0]))
    if not isinstance(sig, list) or tuple(sig) not in SIGNATURES:
        raise AssignmentError(
            f"assignment.signature must be {list(SIGNATURES[0])} or {list(SIGNATURES[1])}, "
            f"got {sig!r}"
        )
    tw_name = _str(a, "assignment", "tile_width_name", "TILE_WIDTH")
    if not tw_name.isidentifier():
        raise AssignmentError(f"assignment.tile_width_name must be a Python name, got {tw_name!r}")
    return kernel, sig, tw_name


def _points(data: dict) -> dict[str, float]:
    """``[points]``: each check's points (those above 0; at least one)."""
    pts = data.get("points")
    if not isinstance(pts, dict) or not pts:
        raise AssignmentError(
            f"[points] is missing: give points to at least one of {', '.join(CHECKS)}"
        )
    _unknown("points", pts, set(CHECKS))
    points = {name: float(_num(pts, "points", name, 0, 0, 1000)) for name in CHECKS if name in pts}
    points = {n: p for n, p in points.items() if p > 0}
    if not points:
        raise AssignmentError("[points]: every check has 0 points; give at least one more")
    return points


def _cases(data: dict, general: bool) -> tuple[Case, ...]:
    """``[[case]]``: each case's shape, TILE_WIDTH and name (a hidden one's its number)."""
    cases_in = data.get("case")
    if not isinstance(cases_in, list) or not cases_in:
        raise AssignmentError("[[case]] is missing: give at least one case (width, tile_width)")
    if len(cases_in) > MAX_CASES:
        raise AssignmentError(f"[[case]]: at most {MAX_CASES} cases, got {len(cases_in)}")
    cases = []
    n_hidden = n_public = 0
    for i, c in enumerate(cases_in, 1):
        sec = f"case[{i}]"
        if not isinstance(c, dict):
            raise AssignmentError(f"{sec} must be a table ([[case]]), got {c!r}")
        _unknown(sec, c, _CASE_KEYS)
        shape = _case_shape(c, sec, general)
        tw = _num(c, sec, "tile_width", None, 1, MAX_TILE_WIDTH, integer=True)
        hidden = c.get("hidden", False)
        if not isinstance(hidden, bool):
            raise AssignmentError(f"{sec}.hidden must be true or false, got {hidden!r}")
        if hidden:
            n_hidden += 1
            name = f"hidden case {n_hidden}"
            if "name" in c:
                raise AssignmentError(
                    f"{sec}.name: a hidden case takes no name (students see {name!r})"
                )
        else:
            n_public += 1
            name = _str(c, sec, "name", f"case {n_public}")
        cases.append(Case(i, shape, tw, hidden, name))
    return tuple(cases)


def _case_shape(c: dict, sec: str, general: bool) -> tuple[int, int, int]:
    """A case's ``(j, k, l)``: ``width = W`` or ``shape = [j, k, l]`` (square unless general)."""
    if ("width" in c) == ("shape" in c):
        raise AssignmentError(f"{sec}: give either width = W or shape = [j, k, l], not both")
    if "width" in c:
        w = _num(c, sec, "width", None, 1, MAX_SIDE, integer=True)
        return (w, w, w)
    s = c["shape"]
    if (
        not isinstance(s, list)
        or len(s) != 3
        or any(isinstance(v, bool) or not isinstance(v, int) for v in s)
        or not all(1 <= v <= MAX_SIDE for v in s)
    ):
        raise AssignmentError(
            f"{sec}.shape must be [j, k, l], three integers from 1 to {MAX_SIDE}, got {s!r}"
        )
    shape = (s[0], s[1], s[2])
    if not general and len(set(shape)) != 1:
        raise AssignmentError(
            f"{sec}.shape {s!r} is not square, but the signature (M, N, P, Width) "
            "takes square matrices; use width = W or the signature "
            "['M', 'N', 'P', 'j', 'k', 'l']"
        )
    return shape


def load_assignment(path: str | os.PathLike) -> Assignment:
    """Read and check an assignment file.

    Parameters
    ----------
    path : str or os.PathLike
        A TOML file (see the module docstring).

    Returns
    -------
    Assignment

    Raises
    ------
    AssignmentError
        When the file is missing, not TOML, or a key is wrong (one line naming it).
    """
    path = os.fspath(path)
    try:
        with open(path, "rb") as f:
            data = tomllib.load(f)
    except FileNotFoundError:
        raise AssignmentError(f"{path}: no such assignment file") from None
    except IsADirectoryError:
        raise AssignmentError(f"{path} is a folder, not an assignment file") from None
    except tomllib.TOMLDecodeError as exc:
        raise AssignmentError(f"{path} is not valid TOML: {exc}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise AssignmentError(f"{path} cannot be read: {exc}") from None
    try:
        return parse_assignment(data, path)
    except AssignmentError as exc:
        raise AssignmentError(f"{path}: {exc}") from None
