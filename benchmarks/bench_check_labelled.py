"""vizmm check against the labelled kernels of benchmarks/labelled: precision and recall.

Each kernel of ``benchmarks/labelled/labels.json`` is checked through the
API (``vizmm.check("file.py:name", ...)`` in the simulator, or on ``--backend``), in a child
process of its own with a wall-clock limit (a kernel whose barrier some
threads skip may never finish). What check reports is compared with the
hand-derived labels:

* per kind (race, wrong term, wrong P, out of bounds), kernel level: a
  kernel is a true positive for a kind when it is labelled with it and
  check reports at least one error of that kind; kinds a label marks
  ``schedule_dependent`` or ``value_dependent`` are not scored for it;
* races, slot level: the set of ``(by, bx, array, slot)`` of check's race
  findings against the set ``labelled/model.py`` expands from the label's
  rules;
* kernels check crashed on or refused (``RecordError`` / ``InstrumentError``,
  both ``ValueError``), listed; they count as reporting nothing;
* the median wall time of one check.

Usage::

    python benchmarks/bench_check_labelled.py [--json out.json] [--only ID,ID] [--timeout 120]
        [--backend simulator|gpu|gpu-legacy|auto]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from labelled import model  # noqa: E402

ADDRESS = re.compile(r"^([A-Za-z_]\w*)((?:\[\d+\])+)$")


# ------------------------------------------------------------ one kernel (child)
def check_one(label: dict, backend: str = "simulator") -> dict:
    """Run vizmm.check on one labelled kernel; what it found, or how it failed (JSON-able)."""
    import vizmm
    from vizmm.record.admission import RecordError
    from vizmm.record.instrument import InstrumentError

    j, k, l, t = model.sizes(label)
    path = model.HERE / label["file"]
    target = f"{path}:{label['kernel']}"
    sized = {"width": j} if "width" in label["launch"] else {"j": j, "k": k, "l": l}
    t0 = time.perf_counter()
    try:
        if "width" in sized:
            report = vizmm.check(target, width=j, tile_width=t, backend=backend)
        else:
            report = vizmm.check(target, j, k, l, tile_width=t, backend=backend)
    except (RecordError, InstrumentError) as exc:
        return _failed("refusal", exc, t0)
    except BaseException as exc:  # noqa: BLE001 - every failure is counted, none stops the run
        out = _failed("crash", exc, t0)
        if isinstance(exc, RuntimeError):
            _worker_cause(target, j, k, l, t)
        return out
    seconds = time.perf_counter() - t0
    kinds = sorted({f.kind for f in report.errors})
    races = []
    for f in report.findings:
        if f.kind != "race":
            continue
        m = ADDRESS.match(f.address or "")
        if m is None or f.block is None:
            races.append([None, None, f.address, []])
            continue
        idx = [int(x) for x in re.findall(r"\d+", m.group(2))]
        races.append([int(f.block[0]), int(f.block[1]), m.group(1), idx])
    return {
        "status": "ok",
        "seconds": seconds,
        "kinds": kinds,
        "counts": report.counts(),
        "races": races,
        "first": [str(f) for f in report.errors[:2]],
    }


def _worker_cause(target: str, j: int, k: int, l: int, t: int) -> None:
    """Record the kernel again, not quiet, so the worker's own error reaches stderr.

    check records quietly: a recording process that fails says only its exit
    code. The second recording's output is read by :func:`run_child` for the
    cause; it is not scored.
    """
    import vizmm

    try:
        vizmm.record(j, k, l, tile_width=t, kernel=target, backend="simulator", reads=True)
    except BaseException:  # noqa: BLE001 - the cause is on stderr
        pass


def _cause(stderr: str) -> str | None:
    """The last exception line a failed worker printed (``NameError: name 'n' ...``)."""
    lines = [
        x.strip()
        for x in stderr.splitlines()
        if re.match(r"^[A-Za-z_][\w.]*(Error|Exception|Exit)\b.*", x.strip())
    ]
    lines = [x for x in lines if "recording process failed" not in x]
    return " ".join(lines[-1].split())[:300] if lines else None


def _failed(status: str, exc: BaseException, t0: float) -> dict:
    line = " ".join(str(exc).split())[:300]
    return {
        "status": status,
        "seconds": time.perf_counter() - t0,
        "error": f"{type(exc).__name__}: {line}",
    }


def run_child(
    label: dict, timeout: float, backend: str = "simulator", env: dict | None = None
) -> dict:
    """``check_one`` in a child process (its own session, killed with its worker on timeout)."""
    cmd = [sys.executable, str(Path(__file__).resolve()), "--one", label["id"]]
    cmd += ["--backend", backend]
    proc = subprocess.Popen(
        cmd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        env=env,
    )
    t0 = time.perf_counter()
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        return {
            "status": "crash",
            "seconds": time.perf_counter() - t0,
            "error": f"timeout: no result after {timeout:g} s",
        }
    lines = [x for x in out.splitlines() if x.startswith("{")]
    if proc.returncode != 0 or not lines:
        tail = " ".join(err.strip().splitlines()[-1:])[:300]
        return {
            "status": "crash",
            "seconds": time.perf_counter() - t0,
            "error": f"child exited with {proc.returncode}: {tail}",
        }
    res = json.loads(lines[-1])
    cause = _cause(err) if res["status"] == "crash" else None
    if cause:
        res["error"] += f" (the worker: {cause})"
    return res


# ------------------------------------------------------------------- scoring
def slot_of(label: dict, array: str, idx: list) -> tuple:
    """A race finding's slot in the label's view of the array (indices as the label gives them)."""
    spec = label.get("shared", {}).get(array)
    if spec is None:
        return tuple(idx)
    shape = tuple(spec["shape"])
    view = tuple(spec.get("view", shape))
    if len(idx) == len(view):
        return tuple(idx)
    if len(idx) == len(shape):
        flat = 0
        for i, n in zip(idx, shape, strict=True):
            flat = flat * n + i
    elif len(idx) == 1:
        flat = idx[0]
    elif len(idx) == 2:  # a flat tile logged as (row, col) of row*TILE_WIDTH + col
        flat = idx[0] * view[-1] + idx[1]
    else:
        return tuple(idx)
    out = []
    for n in reversed(view):
        flat, r = divmod(flat, n)
        out.append(r)
    return tuple(reversed(out))


def found_slots(label: dict, result: dict) -> set:
    """The ``(by, bx, array, slot)`` set of check's race findings for one kernel."""
    if result.get("status") != "ok":
        return set()
    return {
        (by, bx, arr, slot_of(label, arr, idx) if by is not None else tuple(idx))
        for by, bx, arr, idx in result["races"]
    }


def _ratio(a: int, b: int) -> float | None:
    return a / b if b else None


def score(labels: list[dict], results: dict) -> dict:
    """Precision and recall per kind (kernel level) and for race slots, with the misses."""
    kinds = {}
    for kind in model.KINDS:
        tp = fp = fn = 0
        fps, fns = [], []
        for lab in labels:
            if kind not in model.scored(lab):
                continue
            res = results[lab["id"]]
            got = kind in res.get("kinds", ()) if res["status"] == "ok" else False
            want = kind in lab["expected"]
            tp += got and want
            if got and not want:
                fp += 1
                fps.append(lab["id"])
            if want and not got:
                fn += 1
                fns.append(lab["id"])
        kinds[kind] = {
            "tp": tp,
            "fp": fp,
            "fn": fn,
            "precision": _ratio(tp, tp + fp),
            "recall": _ratio(tp, tp + fn),
            "false_positives": fps,
            "false_negatives": fns,
        }
    tp = fp = fn = 0
    exact, inexact = [], []
    for lab in labels:
        want = model.racing_slots(lab)
        got = found_slots(lab, results[lab["id"]])
        tp += len(want & got)
        fp += len(got - want)
        fn += len(want - got)
        if want or got:
            (exact if want == got else inexact).append(lab["id"])
    slots = {
        "tp": tp,
        "fp": fp,
        "fn": fn,
        "precision": _ratio(tp, tp + fp),
        "recall": _ratio(tp, tp + fn),
        "exact_kernels": exact,
        "inexact_kernels": inexact,
    }
    failed = {
        s: [
            (lab["id"], results[lab["id"]]["error"])
            for lab in labels
            if results[lab["id"]]["status"] == s
        ]
        for s in ("crash", "refusal")
    }
    secs = [r["seconds"] for r in results.values() if r["status"] == "ok"]
    return {
        "kernels": len(labels),
        "categories": {c: sum(lab["category"] == c for lab in labels) for c in model.CATEGORIES},
        "kinds": kinds,
        "race_slots": slots,
        "crashes": failed["crash"],
        "refusals": failed["refusal"],
        "median_check_seconds": statistics.median(secs) if secs else None,
        "results": results,
    }


def _pct(x: float | None) -> str:
    return "  n/a" if x is None else f"{x:5.2f}"


def format_report(s: dict, backend: str = "simulator") -> str:
    """The score as plain text (several lines); ``backend``: what check recorded with."""
    c = s["categories"]
    out = [
        f"vizmm check on {s['kernels']} labelled kernels "
        f"({c['correct']} correct, {c['racy']} racy, {c['wrong']} wrong), {backend}",
        "",
        "kernel level        TP   FP   FN  precision  recall",
    ]
    for kind, k in s["kinds"].items():
        out.append(
            f"  {kind:<16} {k['tp']:4d} {k['fp']:4d} {k['fn']:4d}      {_pct(k['precision'])}   "
            f"{_pct(k['recall'])}"
        )
    r = s["race_slots"]
    out += [
        "",
        f"race slots (by, bx, array, slot): TP {r['tp']}, FP {r['fp']}, FN {r['fn']}, "
        f"precision {_pct(r['precision']).strip()}, recall {_pct(r['recall']).strip()}; "
        f"exact sets in {len(r['exact_kernels'])} of "
        f"{len(r['exact_kernels']) + len(r['inexact_kernels'])} kernels with a race "
        "labelled or found",
    ]
    for kind, k in s["kinds"].items():
        if k["false_positives"]:
            out.append(f"  {kind} reported, not labelled: {', '.join(k['false_positives'])}")
        if k["false_negatives"]:
            out.append(f"  {kind} labelled, not reported: {', '.join(k['false_negatives'])}")
    if r["inexact_kernels"]:
        out.append(f"  race slot sets differing: {', '.join(r['inexact_kernels'])}")
    med = s["median_check_seconds"]
    out += [
        "",
        f"crashes: {len(s['crashes'])}, refusals: {len(s['refusals'])}; median wall time of a "
        f"check: {'n/a' if med is None else f'{med:.2f} s'}",
    ]
    for status in ("crashes", "refusals"):
        for i, why in s[status]:
            out.append(f"  {status[:-2] if status == 'crashes' else 'refusal'} {i}: {why}")
    return "\n".join(out)


def run_all(
    labels: list[dict],
    timeout: float = 120.0,
    progress=None,
    backend: str = "simulator",
    in_process: bool = False,
) -> dict:
    """Check every labelled kernel (one child process each) and score the results.

    ``in_process`` checks them in this process instead (no timeout, no process
    start in the times): the test suite's way, which asks for the labels, not
    the times.
    """
    results = {}
    for lab in labels:
        if in_process:
            results[lab["id"]] = check_one(lab, backend)
        else:
            results[lab["id"]] = run_child(lab, timeout, backend)
        if progress:
            progress(lab["id"], results[lab["id"]])
    return score(labels, results)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", help="also write the score and every result to this file")
    ap.add_argument("--only", help="comma-separated kernel ids")
    ap.add_argument("--timeout", type=float, default=120.0, help="seconds per kernel")
    ap.add_argument(
        "--backend",
        default="simulator",
        choices=("simulator", "numba-sim", "gpu", "gpu-legacy", "auto"),
        help="the backend check records with (default simulator)",
    )
    ap.add_argument("--one", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    labels = model.load()
    if args.one:
        (lab,) = [x for x in labels if x["id"] == args.one]
        print(json.dumps(check_one(lab, args.backend)))
        return 0
    problems = model.validate(labels)
    if problems:
        print("labels.json is not sound:\n" + "\n".join(problems), file=sys.stderr)
        return 2
    if args.only:
        ids = set(args.only.split(","))
        labels = [x for x in labels if x["id"] in ids]

    def progress(i, res):
        print(f"{i}: {res['status']} {res.get('kinds', res.get('error', ''))}", file=sys.stderr)

    s = run_all(labels, args.timeout, progress, args.backend)
    print(format_report(s, args.backend))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(s, f, indent=1, default=list)
            f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
