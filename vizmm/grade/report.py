"""What a grading writes: Gradescope's results.json, the feedback page, the class CSV and summary.

* :func:`gradescope_results`: the autograder's ``results.json`` as Gradescope
  documents it (``score``, ``execution_time``, ``output``, ``visibility``,
  ``extra_data``, ``tests`` each with ``name``, ``score``, ``max_score``,
  ``status``, ``output``, ``visibility``, ``number``, ``tags``); one test per
  case. A hidden case is named ``hidden case N`` and its output says which
  checks failed and the kind of the first finding, never its shape, nor the
  finding's indices (they would tell the shape).
* :func:`feedback_html`: one self-contained page (no file fetched): per case
  pass or fail, the points per check, the first finding in the book's terms
  and, at feedback level ``pictures``, the replay of the block where it
  happened (the offline HTML export's player, :func:`vizmm.export.export_bytes`,
  opened at the step of its phase) in an ``iframe`` whose ``srcdoc`` holds it.
  Hidden cases: pass or fail and the checks only.
* :func:`class_csv` and :func:`summary_html`: one row per submission (file
  names only) and the class's score distribution with, per finding kind, how
  many submissions made it and one example's replay.
"""

from __future__ import annotations

import csv
import html
import io
import json
import math
import os
from collections.abc import Sequence
from typing import Any

from .assignment import CHECKS
from .runner import CaseResult, Grading

__all__ = [
    "class_csv",
    "feedback_html",
    "gradescope_results",
    "replay_html",
    "summary_html",
]


#: What a student reads of a hidden case that could not be graded (an error's text may
#: name the case's sizes).
HIDDEN_ERROR = "the submission failed on this case; the public cases show the same errors"


def _clean(v: Any) -> Any:
    """JSON without NaN or infinities (Gradescope's parser refuses them)."""
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if isinstance(v, dict):
        return {str(k): _clean(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_clean(x) for x in v]
    return v


def _num(x: float) -> float | int:
    return int(x) if float(x).is_integer() else round(float(x), 4)


def case_lines(result: CaseResult, student: bool = True) -> list[str]:
    """The lines a student reads about one case (no shape nor indices for a hidden case).

    Parameters
    ----------
    result : CaseResult
    student : bool
        False: the instructor's lines (the hidden case's shape and finding too).

    Returns
    -------
    list of str
    """
    case = result.case
    hide = case.hidden and student
    lines = []
    if not hide:
        lines.append(case.shape_text)
    if result.error:
        lines.append(f"Not graded: {HIDDEN_ERROR if hide else result.error}")
        return lines
    for c in result.checks:
        mark = {True: "passed", False: "FAILED", None: "not checked by this vizmm"}[c.passed]
        lines.append(f"{CHECKS[c.name]}: {mark} ({_num(c.points)}/{_num(c.max_points)})")
    first = result.first_finding
    if first is not None:
        if hide:
            lines.append(f"First finding: {first['kind']} (details are not shown for hidden cases)")
        else:
            lines.append(f"First finding ({first['kind']}): {first['message']}")
    return lines


def gradescope_results(grading: Grading) -> dict[str, Any]:
    """The ``results.json`` of Gradescope's autograder specification for one submission.

    Parameters
    ----------
    grading : Grading

    Returns
    -------
    dict
        ``score``, ``execution_time`` (s), ``output``, ``visibility``,
        ``stdout_visibility``, ``extra_data`` (vizmm's version, the seed, the
        backend, per case its seed and engine, never a hidden shape) and
        ``tests`` (one per case: ``name``, ``number``, ``score``,
        ``max_score``, ``status``, ``output``, ``visibility``, ``tags``).
    """
    a = grading.assignment
    tests = []
    for r in grading.cases:
        tests.append(
            {
                "name": r.case.name,
                "number": str(r.case.number),
                "score": _num(r.score),
                "max_score": _num(r.max_score),
                "status": "passed" if r.passed else "failed",
                "output": "\n".join(case_lines(r)),
                "visibility": a.hidden_visibility if r.case.hidden else "visible",
                "tags": sorted({f["kind"] for f in r.findings if "kind" in f})
                if not r.error
                else ["error"],
            }
        )
    failed = sum(not r.passed for r in grading.cases)
    out = {
        "score": _num(grading.score),
        "execution_time": max(1, round(grading.seconds)),
        "output": (
            f"{a.title}: {_num(grading.score)} of {_num(grading.max_score)} points; "
            f"{len(grading.cases) - failed} of {len(grading.cases)} cases pass every check."
        ),
        "visibility": "visible",
        "stdout_visibility": "hidden",
        "extra_data": {
            "vizmm_version": grading.version,
            "seed": a.seed,
            "backend": a.backend,
            "cases": [
                {"number": r.case.number, "seed": a.seed, "engine": r.engine} for r in grading.cases
            ],
        },
        "tests": tests,
    }
    return _clean(out)


# ------------------------------------------------------------------ replays
def _step_of(replay, phase) -> int:
    if phase is None:
        return len(replay) - 1  # the P store
    try:
        return replay.index_of(int(phase))
    except ValueError:
        return 0


def replay_html(trace_path: str, finding: dict) -> str | None:
    """The offline HTML export of the finding's block, opened at its phase (None if none).

    Parameters
    ----------
    trace_path : str
        The case's recording.
    finding : dict
        A finding with ``block`` (by, bx), ``phase`` (or None: the P store)
        and ``thread`` (followed in the replay when given).

    Returns
    -------
    str or None
        A whole HTML document; None when the finding has no block or the
        block was not recorded per thread.
    """
    from ..export import ExportError, export_bytes
    from ..replay import Replay
    from ..trace import load

    block = finding.get("block")
    if not block:
        return None
    trace = load(trace_path)
    block = (int(block[0]), int(block[1]))
    if not trace.has_block(block):
        return None
    thread = finding.get("thread")
    focus = (int(thread[0]), int(thread[1])) if thread else None
    try:
        replay = Replay(trace, block)
        start = _step_of(replay, finding.get("phase"))
        data = export_bytes(trace, "html", block=block, focus=focus, progress=False, start=start)
    except (ExportError, ValueError):
        return None
    return data.decode("utf-8")


def _replay_frame(trace_path: str, finding: dict, title: str) -> str:
    """The finding's replay (:func:`replay_html`) in an iframe; empty where there is none."""
    doc = replay_html(trace_path, finding)
    if doc is None:
        return ""
    return (
        f'<iframe class="replay" title="{html.escape(title)}" '
        f'srcdoc="{html.escape(doc, quote=True)}"></iframe>'
    )


_CSS = """
body { font: 15px/1.45 system-ui, sans-serif; margin: 1.5rem auto; max-width: 1400px;
       padding: 0 1rem; color: #1b1b1b; background: #fff; }
h1 { font-size: 1.5rem; } h2 { font-size: 1.15rem; margin-top: 1.6rem; }
.pass { color: #0a6b2d; font-weight: 600; } .fail { color: #a4161a; font-weight: 600; }
table { border-collapse: collapse; margin: .4rem 0; }
td, th { border: 1px solid #bbb; padding: .2rem .6rem; text-align: left; }
iframe.replay { width: 100%; height: 860px; border: 1px solid #bbb; }
code, .finding { font-family: ui-monospace, monospace; }
.bar { display: inline-block; background: #3465a4; height: 1em; vertical-align: middle; }
"""


def _page(title: str, body: str) -> str:
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{html.escape(title)}</title><style>{_CSS}</style></head>"
        f"<body><main>{body}</main></body></html>\n"
    )


def feedback_html(grading: Grading, pictures: bool | None = None) -> str:
    """The self-contained feedback page of one submission.

    Parameters
    ----------
    grading : Grading
    pictures : bool, optional
        Embed the replays; default: the assignment's feedback level is ``pictures``.

    Returns
    -------
    str
        One HTML document: no script, style sheet or image is fetched (each
        replay is a whole offline export in an ``iframe``'s ``srcdoc``).
    """
    a = grading.assignment
    if pictures is None:
        pictures = a.feedback == "pictures"
    name = os.path.basename(grading.submission)
    parts = [
        f"<h1>{html.escape(a.title)}</h1>",
        f"<p>{html.escape(name)}: <strong>{_num(grading.score)} of "
        f"{_num(grading.max_score)} points</strong>. vizmm {html.escape(grading.version)}, "
        f"seed {a.seed}, {html.escape(a.backend)}.</p>",
    ]
    for r in grading.cases:
        ok = r.passed
        parts.append(
            f'<section class="case" data-case="{r.case.number}" data-passed="{str(ok).lower()}">'
            f"<h2>{html.escape(r.case.name)}: "
            f'<span class="{"pass" if ok else "fail"}">{"pass" if ok else "fail"}</span> '
            f"({_num(r.score)}/{_num(r.max_score)})</h2>"
        )
        if not r.case.hidden:
            parts.append(f"<p>{html.escape(r.case.shape_text)}</p>")
        if r.error:
            why = HIDDEN_ERROR if r.case.hidden else r.error
            parts.append(f'<p class="finding">Not graded: {html.escape(why)}</p></section>')
            continue
        rows = "".join(
            f"<tr><td>{html.escape(CHECKS[c.name])}</td><td>"
            + {
                True: '<span class="pass">passed</span>',
                False: '<span class="fail">failed</span>',
                None: "not checked by this vizmm",
            }[c.passed]
            + f"</td><td>{_num(c.points)}/{_num(c.max_points)}</td></tr>"
            for c in r.checks
        )
        parts.append(f"<table><tr><th>check</th><th>result</th><th>points</th></tr>{rows}</table>")
        first = r.first_finding
        if first is not None:
            if r.case.hidden:
                parts.append(
                    f"<p>First finding: {html.escape(first['kind'])} (a hidden case shows no "
                    "details; the public cases and your own tests can find it).</p>"
                )
            else:
                where = ""
                if first.get("block"):
                    by, bx = first["block"]
                    where = f" Block ({by},{bx})"
                    if first.get("phase") is not None:
                        where += f", phase {first['phase']}"
                    if first.get("thread"):
                        where += f", thread ({first['thread'][0]},{first['thread'][1]})"
                    where += "."
                parts.append(
                    f"<p>First finding, <strong>{html.escape(first['kind'])}</strong>: "
                    f'<span class="finding">{html.escape(str(first["message"]))}</span>'
                    f"{html.escape(where)}</p>"
                )
                if pictures and r.trace_path:
                    parts.append(
                        _replay_frame(r.trace_path, first, f"replay of {r.case.name}{where}")
                    )
        parts.append("</section>")
    return _page(f"{a.title}: {name}", "".join(parts))


# ------------------------------------------------------------------- class
def _cell(v: Any) -> Any:
    """A CSV cell a spreadsheet shows as text: one that could start a formula gets a ``'``.

    OWASP's advice on CSV injection: a cell starting with ``=``, ``+``, ``-``,
    ``@``, a tab or a carriage return is prefixed with a single quote.
    """
    if isinstance(v, str) and v[:1] in ("=", "+", "-", "@", "\t", "\r"):
        return "'" + v
    return v


def class_csv(gradings: Sequence[Grading]) -> str:
    """One row per submission: its file name, score, and per case its score and first finding.

    Parameters
    ----------
    gradings : sequence of Grading

    Returns
    -------
    str
        CSV text with a header row (no names beyond the file names given).
    """
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    if not gradings:
        w.writerow(["submission", "score", "max_score"])
        return buf.getvalue()
    cases = gradings[0].assignment.cases
    head = ["submission", "score", "max_score"]
    for c in cases:
        head += [f"case {c.number} score", f"case {c.number} first finding"]
    w.writerow(head)
    for g in gradings:  # file names and error lines are the submission's text: cells escaped
        row: list[Any] = [os.path.basename(g.submission), _num(g.score), _num(g.max_score)]
        for r in g.cases:
            first = r.first_finding
            row += [
                _num(r.score),
                "error: " + r.error if r.error else (first["kind"] if first else ""),
            ]
        w.writerow([_cell(v) for v in row])
    return buf.getvalue()


def finding_kinds(gradings: Sequence[Grading]) -> dict[str, list[tuple[Grading, CaseResult, dict]]]:
    """Per finding kind (and ``error``), the submissions that made it, one example each.

    Parameters
    ----------
    gradings : sequence of Grading

    Returns
    -------
    dict
        Kind -> list of ``(grading, case result, first such finding)``, one per submission.
    """
    out: dict[str, list] = {}
    for g in gradings:
        seen: set[str] = set()
        for r in g.cases:
            items = [{"kind": "error", "message": r.error}] if r.error else r.findings
            for f in items:
                kind = f.get("kind", "?")
                if kind not in seen:
                    seen.add(kind)
                    out.setdefault(kind, []).append((g, r, f))
    return dict(sorted(out.items(), key=lambda kv: -len(kv[1])))


def summary_html(gradings: Sequence[Grading], pictures: bool = True) -> str:
    """The class's page: score distribution, and per finding kind how many and one example replay.

    Parameters
    ----------
    gradings : sequence of Grading
    pictures : bool
        Embed one example replay per finding kind.

    Returns
    -------
    str
        One self-contained HTML document.
    """
    if not gradings:
        return _page("vizmm grading", "<h1>No submissions</h1>")
    a = gradings[0].assignment
    n = len(gradings)
    parts = [
        f"<h1>{html.escape(a.title)}: {n} submission{'s' if n != 1 else ''}</h1>",
        f"<p>vizmm {html.escape(gradings[0].version)}, seed {a.seed}, {html.escape(a.backend)}; "
        f"{_num(a.max_score)} points possible.</p><h2>Scores</h2>",
    ]
    counts: dict[float, int] = {}
    for g in gradings:
        counts[g.score] = counts.get(g.score, 0) + 1
    most = max(counts.values())
    rows = "".join(
        f"<tr><td>{_num(s)}</td><td>{c}</td><td>"
        f'<span class="bar" style="width:{round(300 * c / most)}px"></span></td></tr>'
        for s, c in sorted(counts.items())
    )
    parts.append(
        f'<table class="scores"><tr><th>score</th><th>submissions</th><th></th></tr>{rows}</table>'
    )
    parts.append("<h2>Findings: what to re-teach</h2>")
    kinds = finding_kinds(gradings)
    if not kinds:
        parts.append("<p>No submission made a finding.</p>")
    for kind, items in kinds.items():
        g, r, f = items[0]
        files = ", ".join(html.escape(os.path.basename(x[0].submission)) for x in items)
        parts.append(
            f'<section class="kind" data-kind="{html.escape(kind)}"><h2>{html.escape(kind)}: '
            f"{len(items)} of {n} submissions</h2><p>{files}</p>"
            f"<p>Example ({html.escape(os.path.basename(g.submission))}, "
            f"{html.escape(r.case.name)}, {html.escape(r.case.shape_text)}): "
            f'<span class="finding">{html.escape(str(f.get("message")))}</span></p>'
        )
        if pictures and kind != "error" and r.trace_path:
            parts.append(_replay_frame(r.trace_path, f, f"example of {kind}"))
        parts.append("</section>")
    return _page(f"{a.title}: class summary", "".join(parts))


def results_json(grading: Grading) -> str:
    """:func:`gradescope_results` as JSON text (no NaN).

    Parameters
    ----------
    grading : Grading
        A graded submission.
    """
    return json.dumps(gradescope_results(grading), indent=2, allow_nan=False) + "\n"
