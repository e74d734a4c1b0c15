"""The labelled kernels on a GPU: check's GPU and simulator runs, and racecheck on the plain kernel.

Usage (on a machine with an NVIDIA GPU, numba-cuda or numba-cuda-mlir and
``compute-sanitizer`` on PATH)::

    python scripts/labelled_gpu.py [--json OUT.json] [--only ID,ID] [--timeout 120]
        [--repeat 1] [--seed 0] [--shared-base 0x400] [--jobs 1]
    python scripts/labelled_gpu.py --dry-run --only c01_fig59_chained,r01_fig59_no_first_barrier

For every kernel of ``benchmarks/labelled/labels.json`` (or those of ``--only``):

1. ``vizmm.check("file.py:name", ...)`` on the label's launch, once with
   ``backend='gpu'`` and once with ``backend='simulator'``, each in a child
   process of its own (a process compiles for one target only); for each,
   the error kinds and the race slot set ``(by, bx, array, slot)`` (read as
   ``benchmarks/bench_check_labelled.py`` reads them), and whether the two
   backends agree on the kinds the label scores and on the race slots;
2. the *plain* kernel (the front end's normalised tree, compiled as it is,
   not instrumented) launched on the same seeded inputs and grid under
   ``compute-sanitizer --tool racecheck --racecheck-report hazard``
   (``--repeat`` launches, racecheck's report being the union); its verdict
   (any hazard reported: a race) and the byte addresses it names, mapped to
   slots of the kernel's shared arrays (see "Addresses" below);
3. a table: per kind, kernel-level precision and recall of the GPU run
   against the labels; the kernels where GPU and simulator agree; the
   kernel-level precision and recall of racecheck's verdict against the
   labels' races; with ``--json``, every kernel's results.

Each child has a wall-clock limit (``--timeout``); a kernel whose run fails
or times out is recorded with its one-line error and the run goes on.

``--dry-run`` needs no GPU: the simulator's check stands in for the GPU's,
and the plain kernel is compiled and launched in the simulator
(``NUMBA_ENABLE_CUDASIM=1``) without compute-sanitizer; no racecheck verdict.

Addresses
---------
Racecheck names byte offsets in a block's shared window; on Hopper the
first 1 KiB is reserved (``--shared-base``, default 0x400, as
:mod:`vizmm.analysis.racecheck`). The shared arrays are assumed to follow
one another from there with no gap, each aligned to its element size. Which
array comes first is the compiler's choice, not the source's: the slots are
mapped in declaration order (``layout: declared``), and, where another order
of the arrays gives a set closer to check's GPU set, in that order too
(``layout_best``, as ``scripts/check_racecheck.py`` swaps Mds and Nds). An
address past the arrays' total size is counted as ``unmapped``. The
kernel-level verdict does not depend on the layout.
"""

from __future__ import annotations

import argparse
import ast
import concurrent.futures
import copy
import itertools
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

import bench_check_labelled as bench  # noqa: E402
from labelled import model  # noqa: E402

ITEMSIZE = {"float32": 4, "float64": 8, "int32": 4, "int64": 8, "int16": 2, "int8": 1}
ITEMSIZE |= {"uint32": 4, "uint64": 8, "uint16": 2, "uint8": 1, "float16": 2, "boolean": 1}


# ------------------------------------------------------------ the plain kernel (child)
def _array_ndims(tree: ast.FunctionDef, names) -> dict:
    """1 or 2 per global array, as the kernel's subscripts (and atomics) index it."""
    out = {}
    for g in names:
        two = False
        for n in ast.walk(tree):
            if isinstance(n, ast.Subscript) and isinstance(n.value, ast.Name) and n.value.id == g:
                two |= isinstance(n.slice, ast.Tuple)
            if (
                isinstance(n, ast.Call)
                and ast.unparse(n.func).startswith("cuda.atomic.")
                and len(n.args) >= 2
                and isinstance(n.args[0], ast.Name)
                and n.args[0].id == g
            ):
                two |= isinstance(n.args[1], ast.Tuple)
        out[g] = 2 if two else 1
    return out


def shared_arrays(tree: ast.FunctionDef) -> list[dict]:
    """The kernel's shared arrays in declaration order: name, shape, dtype, bytes per element."""
    out = []
    for n in ast.walk(tree):
        if not (
            isinstance(n, ast.Assign)
            and isinstance(n.value, ast.Call)
            and ast.unparse(n.value.func) == "cuda.shared.array"
        ):
            continue
        names = [t.id for t in n.targets if isinstance(t, ast.Name)]
        shape_node, dtype_node = n.value.args[0], n.value.args[1]
        shape = ast.literal_eval(shape_node)
        shape = tuple(shape) if isinstance(shape, tuple) else (shape,)
        dtype = ast.unparse(dtype_node)
        out.append(
            {
                "name": names[0] if names else "?",
                "shape": list(shape),
                "dtype": dtype,
                "itemsize": ITEMSIZE.get(dtype, 4),
                "line": n.lineno,
            }
        )
    out.sort(key=lambda a: a["line"])
    return out


def plain_main(label: dict, repeat: int, seed: int) -> dict:
    """Compile the plain kernel from the front end's tree and launch it ``repeat`` times."""
    import numpy as np

    from vizmm.record.frontend import read_kernel
    from vizmm.trace import seeded_inputs
    from vizmm_kernels import _target

    j, k, l, t = model.sizes(label)
    ks = read_kernel(str(model.HERE / label["file"]), label["kernel"])
    fn = copy.deepcopy(ks.tree)
    fn.decorator_list = []
    code = ast.unparse(ast.fix_missing_locations(ast.Module(body=[fn], type_ignores=[])))
    ns = ks.namespace(_target)
    exec(compile(code, f"<plain {ks.name}>", "exec"), ns)  # noqa: S102 - the checked tree
    kernel = _target.cuda.jit(ns[ks.name])
    params = ks.params
    if len(params) == 4:
        scalars = (k,)
    elif len(params) == 6:
        scalars = (j, k, l)
    else:
        raise ValueError(f"kernel {ks.name} takes {len(params)} parameters; 4 or 6 expected")
    ndims = _array_ndims(ks.tree, params[:3])
    M, N = seeded_inputs(j, k, l, seed)
    P = np.full((j, l), np.nan, np.float32)
    host = [a if ndims[p] == 2 else a.ravel() for p, a in zip(params[:3], (M, N, P), strict=True)]
    cuda = _target.cuda
    grid = (-(-l // t), -(-j // t))
    info = {
        "status": "ok",
        "target": _target.NAME,
        "ndims": ndims,
        "grid": list(grid),
        "shared": shared_arrays(ks.tree),
    }
    try:  # a launch that fails (an out-of-bounds access) still leaves racecheck's report
        dev = [cuda.to_device(np.ascontiguousarray(a)) for a in host]
        for _ in range(repeat):
            kernel[grid, (t, t)](*dev, *scalars)
            cuda.synchronize()
        out = dev[2].copy_to_host().reshape(j, l)
    except Exception as exc:  # noqa: BLE001 - reported as one line
        info["status"] = "crash"
        info["error"] = f"launch failed: {type(exc).__name__}: {_one_line(str(exc))}"
        return info
    info["p_exact"] = bool(np.array_equal(out, M @ N))
    return info


# ------------------------------------------------------------------ children
def _env(target: str) -> dict:
    from vizmm.record import targets

    env = dict(os.environ)
    env.pop("NUMBA_ENABLE_CUDASIM", None)
    env.pop(targets.KERNELS_ENV, None)
    if target != "gpu":
        env.update(targets.environment(targets.SIMULATOR))
    else:
        env.update(targets.environment(targets.gpu_target("gpu", targets.Software.here())))
    return env


def _run(cmd: list[str], env: dict, timeout: float) -> tuple[int | None, str, str, str | None]:
    """Run ``cmd`` in its own session; (exit code, stdout, stderr, timeout line or None)."""
    proc = subprocess.Popen(
        cmd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        env=env,
    )
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        return None, out, err, f"timeout: no result after {timeout:g} s"
    return proc.returncode, out, err, None


def _one_line(text: str) -> str:
    lines = [x.strip() for x in text.strip().splitlines() if x.strip()]
    return " ".join(lines[-1:])[:300]


def run_check(label: dict, backend: str, timeout: float) -> dict:
    """vizmm.check on ``backend`` in a child process (bench_check_labelled's own child)."""
    return bench.run_child(label, timeout, backend, env=_env(backend))


def run_plain(label: dict, args, sanitize: bool) -> dict:
    """The plain kernel in a child, under racecheck when ``sanitize``; the parsed report."""
    from vizmm.analysis import racecheck

    cmd = [sys.executable, str(Path(__file__).resolve()), "--plain", label["id"]]
    cmd += ["--repeat", str(args.repeat), "--seed", str(args.seed)]
    if sanitize:
        cmd = [*racecheck.COMMAND, *cmd]
    t0 = time.perf_counter()
    rc, out, err, late = _run(cmd, _env("gpu" if sanitize else "simulator"), args.timeout)
    seconds = time.perf_counter() - t0
    if late:
        return {"status": "crash", "seconds": seconds, "error": late}
    lines = [x for x in out.splitlines() if x.startswith("{")]
    if not lines:
        why = _one_line(err) or _one_line(out)
        return {"status": "crash", "seconds": seconds, "error": f"exited with {rc}: {why}"}
    res = json.loads(lines[-1])
    res["seconds"] = seconds
    if "shared" not in res or not sanitize:
        return res
    parsed = racecheck.parse(out + "\n" + err)
    if parsed["summary"] is None and rc == 0 and not parsed["addresses"]:
        parsed["summary"] = {"displayed": 0, "errors": 0, "warnings": 0, "no_summary_line": True}
    if parsed["summary"] is None:
        res["status"] = "crash"
        why = f"no RACECHECK SUMMARY in the report (exit {rc}): {_one_line(err)}"
        res["error"] = f"{res['error']}; {why}" if res.get("error") else why
        return res
    res["racecheck"] = {
        "summary": parsed["summary"],
        "counts": racecheck.summary_counts(parsed),
        "warp_level": parsed["warp_level"],
        "addresses": sorted([list(b), a] for _k, b, a in parsed["addresses"]),
    }
    return res


# ------------------------------------------------------------------- addresses
def map_addresses(label: dict, shared: list[dict], addresses, base: int, order) -> dict:
    """Racecheck's ``[(by, bx), address]`` as ``(by, bx, array, slot)`` with arrays in ``order``."""
    spans, off = [], 0
    for i in order:
        a = shared[i]
        size = a["itemsize"]
        off = -(-off // size) * size
        n = 1
        for d in a["shape"]:
            n *= d
        spans.append((off, off + n * size, a))
        off += n * size
    slots, unmapped = set(), 0
    for (by, bx), address in addresses:
        rel = address - base
        for lo, hi, a in spans:
            if lo <= rel < hi:
                flat = (rel - lo) // a["itemsize"]
                idx = []
                for d in reversed(a["shape"]):
                    flat, r = divmod(flat, d)
                    idx.append(r)
                slot = bench.slot_of(label, a["name"], list(reversed(idx)))
                slots.add((by, bx, a["name"], tuple(slot)))
                break
        else:
            unmapped += 1
    return {"slots": slots, "unmapped": unmapped}


def _compare(got: set, want: set) -> dict:
    return {"tp": len(got & want), "fp": len(got - want), "fn": len(want - got)}


def racecheck_result(label: dict, plain: dict, check_slots: set, base: int) -> dict:
    """Racecheck's verdict, per-block counts and slots (declared order, and the closest order)."""
    rc = plain["racecheck"]
    summary = rc["summary"]
    addresses = [(tuple(b), a) for b, a in rc["addresses"]]
    shared = plain["shared"]
    want = model.racing_slots(label)
    declared = map_addresses(label, shared, addresses, base, range(len(shared)))
    best, best_order = declared, list(range(len(shared)))
    if check_slots and len(shared) <= 4:
        for order in itertools.permutations(range(len(shared))):
            m = map_addresses(label, shared, addresses, base, order)
            if len(m["slots"] & check_slots) > len(best["slots"] & check_slots):
                best, best_order = m, list(order)
    per_block: dict = {}
    for by, bx, _a, _s in declared["slots"]:
        per_block[f"{by},{bx}"] = per_block.get(f"{by},{bx}", 0) + 1
    lo = min((a for _b, a in addresses), default=None)
    hi = max((a for _b, a in addresses), default=None)
    return {
        "verdict": "race" if (summary["displayed"] or addresses) else "none",
        "errors": summary["errors"],
        "warnings": summary["warnings"],
        "warp_level": rc["warp_level"],
        "counts": rc["counts"],
        "addresses": len(addresses),
        "address_range": [lo, hi],
        "slots": len(declared["slots"]),
        "slots_per_block": dict(sorted(per_block.items())),
        "unmapped": declared["unmapped"],
        "vs_label": _compare(declared["slots"], want),
        "vs_check_gpu": _compare(declared["slots"], check_slots),
        "layout_best": [shared[i]["name"] for i in best_order],
        "best_vs_label": _compare(best["slots"], want),
        "best_vs_check_gpu": _compare(best["slots"], check_slots),
        "sample": sorted(map(str, declared["slots"]))[:8],
    }


# ------------------------------------------------------------------ one kernel
def _summary(label: dict, res: dict) -> dict:
    """A check child's result for the JSON: status, kinds, race slot count, error."""
    out = {"status": res["status"], "seconds": round(res.get("seconds", 0.0), 2)}
    if res["status"] == "ok":
        out["kinds"] = res["kinds"]
        out["race_slots"] = len(bench.found_slots(label, res))
        out["counts"] = res.get("counts")
    else:
        out["error"] = res.get("error")
    return out


def one_kernel(label: dict, args) -> tuple[dict, dict]:
    """Everything for one kernel: (the JSON row, the GPU check result for scoring)."""
    scored = model.scored(label)
    skipped = {"status": "skipped (--no-check)", "seconds": 0.0, "kinds": []}
    sim = skipped if args.no_check else run_check(label, "simulator", args.timeout)
    gpu = sim if args.dry_run or args.no_check else run_check(label, "gpu", args.timeout)
    row = {
        "id": label["id"],
        "category": label["category"],
        "label_kinds": sorted(label["expected"]),
        "scored_kinds": sorted(scored),
        "gpu": {"status": "skipped (dry run)"} if args.dry_run else _summary(label, gpu),
        "simulator": _summary(label, sim),
        "label_race_slots": len(model.racing_slots(label)),
    }
    if gpu["status"] == "ok" and sim["status"] == "ok" and not args.dry_run:
        g_slots, s_slots = bench.found_slots(label, gpu), bench.found_slots(label, sim)
        same_kinds = set(gpu["kinds"]) & scored == set(sim["kinds"]) & scored
        row["agree"] = bool(same_kinds and g_slots == s_slots)
        row["agree_kinds"], row["agree_race_slots"] = same_kinds, g_slots == s_slots
    else:
        row["agree"] = None
    row["check_race_slots_gpu"] = row["gpu"].get("race_slots")
    if args.no_racecheck:
        row["plain"] = {"status": "skipped (--no-racecheck)"}
        row["racecheck"] = {"verdict": None, "error": "not run (--no-racecheck)"}
        return row, gpu
    plain = run_plain(label, args, sanitize=not args.dry_run)
    row["plain"] = {
        k: plain.get(k)
        for k in ("status", "target", "ndims", "grid", "shared", "p_exact", "error")
        if k in plain
    }
    if "racecheck" in plain:
        check_slots = bench.found_slots(label, gpu) if gpu["status"] == "ok" else set()
        row["racecheck"] = racecheck_result(label, plain, check_slots, args.shared_base)
    elif plain.get("status") != "ok":
        row["racecheck"] = {"verdict": None, "error": plain.get("error")}
    else:
        row["racecheck"] = {"verdict": None, "error": "not run (dry run)"}
    return row, gpu


# ------------------------------------------------------------------- the table
def _pr(tp: int, fp: int, fn: int) -> str:
    p = f"{tp / (tp + fp):.2f}" if tp + fp else " n/a"
    r = f"{tp / (tp + fn):.2f}" if tp + fn else " n/a"
    return f"{tp:4d} {fp:4d} {fn:4d}      {p:>5}   {r:>5}"


def table(labels: list[dict], rows: dict, gpu: dict, dry_run: bool) -> str:
    """Per kind precision/recall (GPU run), agreement count, racecheck verdict precision/recall."""
    s = bench.score(labels, gpu)
    run = "simulator (dry run: no GPU)" if dry_run else "gpu"
    failed = sum(
        gpu[lab["id"]]["status"] != "ok" and not gpu[lab["id"]]["status"].startswith("skipped")
        for lab in labels
    )
    out = [f"vizmm check on {len(labels)} labelled kernels, {run}"]
    if failed:
        out.append(f"({failed} failed run(s) count as reporting nothing; listed below)")
    out.append("")
    out.append("kernel level        TP   FP   FN  precision  recall")
    for kind, k in s["kinds"].items():
        out.append(f"  {kind:<16}{_pr(k['tp'], k['fp'], k['fn'])}")
        if k["false_positives"]:
            out.append(f"    reported, not labelled: {', '.join(k['false_positives'])}")
        if k["false_negatives"]:
            out.append(f"    labelled, not reported: {', '.join(k['false_negatives'])}")
    r = s["race_slots"]
    out.append(f"  race slots      {_pr(r['tp'], r['fp'], r['fn'])}")
    both = [x for x in rows.values() if x["agree"] is not None]
    agree = [x["id"] for x in both if x["agree"]]
    out += [
        "",
        f"GPU and simulator agree (scored kinds and race slots): {len(agree)} of {len(both)}",
    ]
    if not dry_run:
        differ = [x["id"] for x in both if not x["agree"]]
        if differ:
            out.append(f"  differ: {', '.join(differ)}")
    tp = fp = fn = 0
    fps, fns, slot = [], [], [0, 0, 0]
    judged = [x for x in rows.values() if x["racecheck"].get("verdict") is not None]
    for lab in labels:
        rc = rows[lab["id"]]["racecheck"]
        if rc.get("verdict") is None:
            continue
        got, want = rc["verdict"] == "race", "race" in lab["expected"]
        tp += got and want
        if got and not want:
            fp += 1
            fps.append(lab["id"])
        if want and not got:
            fn += 1
            fns.append(lab["id"])
        for i, key in enumerate(("tp", "fp", "fn")):
            slot[i] += rc["vs_label"][key]
    out += ["", f"racecheck on the plain kernel ({len(judged)} of {len(labels)} run)"]
    out.append(f"  race verdict    {_pr(tp, fp, fn)}")
    if judged:
        out.append(
            f"  slots (shared arrays in declaration order from --shared-base) vs label: "
            f"TP {slot[0]}, FP {slot[1]}, FN {slot[2]}"
        )
        odd = [x["id"] for x in judged if x["racecheck"].get("unmapped")]
        if odd:
            out.append(f"    addresses outside the arrays in: {', '.join(odd)}")
    if fps:
        out.append(f"    race reported, not labelled: {', '.join(fps)}")
    if fns:
        out.append(f"    race labelled, not reported: {', '.join(fns)}")
    failed = []
    for x in rows.values():
        for what in ("gpu", "simulator"):
            if x[what]["status"] != "ok" and not x[what]["status"].startswith("skipped"):
                failed.append(f"  {x['id']} check {what}: {x[what].get('error')}")
        if x["plain"].get("status") != "ok" and not x["plain"]["status"].startswith("skipped"):
            failed.append(f"  {x['id']} plain kernel: {x['plain'].get('error')}")
    out += ["", f"failures: {len(failed)}", *failed]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    """Run every chosen kernel, print the table, write the JSON."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", help="write every kernel's results to this file")
    ap.add_argument("--only", help="comma-separated kernel ids")
    ap.add_argument("--timeout", type=float, default=120.0, help="seconds per child process")
    ap.add_argument("--repeat", type=int, default=1, help="launches under racecheck (union)")
    ap.add_argument("--seed", type=int, default=0, help="seed of M and N (check's default 0)")
    ap.add_argument(
        "--shared-base",
        type=lambda x: int(x, 0),
        default=0x400,
        help="byte address of the first shared array in racecheck's reports (Hopper: 0x400)",
    )
    ap.add_argument(
        "--dry-run",
        action="store_true",
        help="no GPU: simulator check only, plain kernel in the simulator, no racecheck",
    )
    ap.add_argument("--jobs", type=int, default=1, help="kernels run at once (default 1)")
    ap.add_argument("--no-racecheck", action="store_true", help="check's runs only")
    ap.add_argument("--no-check", action="store_true", help="racecheck's runs only")
    ap.add_argument("--category", help="only the kernels of these categories (correct,racy,wrong)")
    ap.add_argument("--plain", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    labels = model.load()
    if args.plain:
        (lab,) = [x for x in labels if x["id"] == args.plain]
        try:
            res = plain_main(lab, args.repeat, args.seed)
        except BaseException as exc:  # noqa: BLE001 - reported as one line, the parent goes on
            res = {"status": "crash", "error": f"{type(exc).__name__}: {_one_line(str(exc))}"}
        print(json.dumps(res), flush=True)
        return 0
    if args.repeat < 1:
        print("--repeat must be 1 or more", file=sys.stderr)
        return 2
    problems = model.validate(labels)
    if problems:
        print("labels.json is not sound:\n" + "\n".join(problems), file=sys.stderr)
        return 2
    if args.only:
        ids = args.only.split(",")
        unknown = sorted(set(ids) - {x["id"] for x in labels})
        if unknown:
            print(f"no labelled kernel {', '.join(unknown)}", file=sys.stderr)
            return 2
        labels = [x for x in labels if x["id"] in ids]
    if args.category:
        labels = [x for x in labels if x["category"] in args.category.split(",")]
    if not (args.dry_run or args.no_racecheck) and shutil.which("compute-sanitizer") is None:
        print("compute-sanitizer is not on PATH (it comes with the CUDA toolkit)", file=sys.stderr)
        return 2
    rows, gpu = {}, {}

    def run(lab: dict) -> None:
        try:
            rows[lab["id"]], gpu[lab["id"]] = one_kernel(lab, args)
        except Exception as exc:  # noqa: BLE001 - one kernel's failure never stops the run
            why = f"{type(exc).__name__}: {_one_line(str(exc))}"
            failed = {"status": "crash", "seconds": 0.0, "error": why}
            gpu[lab["id"]] = failed
            rows[lab["id"]] = {
                "id": lab["id"],
                "category": lab["category"],
                "label_kinds": sorted(lab["expected"]),
                "gpu": failed,
                "simulator": failed,
                "agree": None,
                "plain": failed,
                "racecheck": {"verdict": None, "error": why},
            }
        r = rows[lab["id"]]
        print(
            f"{lab['id']}: gpu {r['gpu'].get('kinds', r['gpu'].get('error', r['gpu']['status']))}"
            f", simulator {r['simulator'].get('kinds', r['simulator'].get('error'))}, agree "
            f"{r['agree']}, plain {r['plain'].get('status')} (P exact: "
            f"{r['plain'].get('p_exact')}), racecheck {r['racecheck'].get('verdict')} "
            f"({r['racecheck'].get('error') or r['racecheck'].get('slots')})",
            file=sys.stderr,
            flush=True,
        )

    with concurrent.futures.ThreadPoolExecutor(max(1, args.jobs)) as pool:
        list(pool.map(run, labels))
    rows = {lab["id"]: rows[lab["id"]] for lab in labels}
    text = table(labels, rows, gpu, args.dry_run)
    print(text)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({"kernels": list(rows.values()), "table": text}, f, indent=1, default=list)
            f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
