"""What a block replay's frames cost: whole frames, only the lightest page's aspects, kept ones.

Run from the repository root::

    .venv/bin/python benchmarks/bench_frame_aspects.py
    .venv/bin/python benchmarks/bench_frame_aspects.py --before a0412ea --runs 9

For each preset (the default trace ``fig5-8``, the 48 x 48 ``medium``, the
barrier lab's ``lab-4x4-drop1``), the CPU time (process time, median of
``--runs`` after one warm-up) of making every frame of its block's replay
(sub-steps, lockstep, as a page opens it), side by side in one run:

* ``before``: with ``--before REV``, the ``Replay`` of ``vizmm/replay/block.py``
  at that commit (the one-piece ``Replay.frame``, read with ``git show`` and
  loaded beside this tree's modules);
* ``whole``: ``Replay.frame(i)``, every aspect;
* ``light``: ``Replay.frame(i, aspects=LIGHT)``, only what the lightest page
  shows (caption, Mds, Nds, threads, counters);
* ``kept``: the lightest page's frames asked again (each aspect kept on the
  trace under the frame's key).

Each timed run starts with nothing kept (the trace's store of made aspects
emptied). Prints the times and the ratios ``before / whole`` and
``whole / light``.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")

PRESETS = ("fig5-8", "medium", "lab-4x4-drop1")
#: The aspects of the lightest page: caption, Mds and Nds, threads, counters.
LIGHT = frozenset({"caption", "slots", "threads", "counters"})
_STORE = "vizmm.replay.frame_aspects.store"


def _forget(trace) -> None:
    """Empty the trace's store of made aspects (what ``kept`` keeps on it)."""
    trace.__dict__.get("_derived", {}).pop(_STORE, None)


def _before_replay(rev: str):
    """The ``Replay`` class of ``vizmm/replay/block.py`` at commit ``rev``."""
    text = subprocess.run(
        ["git", "show", f"{rev}:vizmm/replay/block.py"],
        cwd=ROOT,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    path = os.path.join(tempfile.mkdtemp(), "block_before.py")
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    import vizmm.replay  # its relative imports resolve against this package

    spec = importlib.util.spec_from_file_location("vizmm.replay._block_before", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    assert vizmm.replay is not None
    return module.Replay


def _time(make, trace, runs: int, again: bool = False) -> float:
    """Median process seconds of ``make()`` (after ``make()`` once when ``again``)."""
    times = []
    for _ in range(runs + 1):
        _forget(trace)
        if again:
            make()
        t0 = time.process_time()
        make()
        times.append(time.process_time() - t0)
    return statistics.median(times[1:])


def measure(key: str, runs: int, before) -> dict:
    """Seconds to make every frame of preset ``key``'s block, each way."""
    from vizmm.replay import Replay
    from vizmm.serve.catalogue import CATALOGUE, PRESETS

    trace = CATALOGUE.get(key)
    block = PRESETS[key].block

    def whole():
        replay = Replay(trace, block)
        for i in range(len(replay)):
            replay.frame(i)

    def light():
        replay = Replay(trace, block)
        for i in range(len(replay)):
            replay.frame(i, LIGHT)

    out = {"steps": len(Replay(trace, block)), "shape": trace.shape, "T": trace.tile_width}
    if before is not None:

        def old():
            replay = before(trace, block)
            for i in range(len(replay)):
                replay.frame(i)

        out["before"] = _time(old, trace, runs)
    out["whole"] = _time(whole, trace, runs)
    out["light"] = _time(light, trace, runs)
    out["kept"] = _time(light, trace, runs, again=True)
    return out


def main(argv=None) -> int:
    """Print the table; 0."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--before", metavar="REV", help="also time block.py's Replay at REV")
    ap.add_argument("--presets", nargs="+", default=list(PRESETS))
    args = ap.parse_args(argv)
    before = _before_replay(args.before) if args.before else None
    print(f"every frame of a block, ms (median of {args.runs}); light = {', '.join(sorted(LIGHT))}")
    head = f"{'preset':<15}{'steps':>6}"
    if before is not None:
        head += f"{'before':>9}"
    head += f"{'whole':>9}{'light':>9}{'kept':>9}"
    if before is not None:
        head += f"{'before/whole':>14}"
    head += f"{'whole/light':>13}{'before/light' if before is not None else '':>14}"
    print(head)
    for key in args.presets:
        m = measure(key, args.runs, before)
        row = f"{key:<15}{m['steps']:>6}"
        if before is not None:
            row += f"{1e3 * m['before']:>9.1f}"
        row += f"{1e3 * m['whole']:>9.1f}{1e3 * m['light']:>9.1f}{1e3 * m['kept']:>9.2f}"
        if before is not None:
            row += f"{m['before'] / m['whole']:>14.2f}"
        row += f"{m['whole'] / m['light']:>13.2f}"
        if before is not None:
            row += f"{m['before'] / m['light']:>14.2f}"
        print(row)
    return 0


if __name__ == "__main__":
    sys.exit(main())
