"""What a dashboard page's frame costs per step, made of what it shows, against a whole frame.

Run from the repository root::

    .venv/bin/python benchmarks/bench_page_frames.py
    .venv/bin/python benchmarks/bench_page_frames.py --presets fig5-8 medium --steps 40 --runs 5

For each preset (the default trace ``fig5-8``, the 48 x 48 ``medium``, the
1000 x 1000 GPU recording ``gpu-1000-t16-boundary``, a large trace whose page
leaves M, N, P and the table out), a served-less dashboard
(``Dashboard(served=False)``) opens the trace as a page does; the aspects its
frames are made of are what the page asks for
(``DashboardState.frame_aspects()``: its views' and its status's), in the
normal page and in presenter mode. Then the CPU time (process time, median
of ``--runs`` after one warm-up) of making ``--steps`` steps of its block's
replay spread over the whole block, each run with nothing kept (the trace's
store of made aspects emptied), side by side in one run:

* ``whole``: ``Replay.frame(i)``, every aspect (what every page asked for before);
* ``page``: ``Replay.frame(i, aspects=<the normal page's>)``;
* ``presenter``: ``Replay.frame(i, aspects=<presenter mode's>)``.

Prints milliseconds per step and the ratios ``whole / page`` and
``whole / presenter`` (above 1: the page makes less than a whole frame).
"""

from __future__ import annotations

import argparse
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")

from bench_frame_aspects import _time  # noqa: E402 - each run starts with nothing kept

PRESETS = ("fig5-8", "medium", "gpu-1000-t16-boundary")


def page_aspects(key: str):
    """The replay a dashboard opens for preset ``key``; its page's and presenter mode's aspects."""
    from vizmm_apps.dashboard import Dashboard

    d = Dashboard(served=False)
    d.state.choose_source(key)
    if d.state.replay is None:
        raise SystemExit(f"{key}: the dashboard shows no replay ({d.state.message})")
    page = d.state.frame_aspects()
    d.state.presenter = True
    presenter = d.state.frame_aspects()
    return d.state.replay, page, presenter


def measure(key: str, steps: int, runs: int) -> dict:
    """Seconds per step of preset ``key``'s frames: whole, the page's, presenter mode's."""
    replay, page, presenter = page_aspects(key)
    n = len(replay)
    k = min(steps, n)
    chosen = sorted({round(i * (n - 1) / max(1, k - 1)) for i in range(k)})

    def making(aspects):
        def make():
            for i in chosen:
                replay.frame(i, aspects)

        return make

    out: dict = {"steps": n, "timed": len(chosen), "page": page, "presenter": presenter}
    for name, aspects in (("whole", None), ("page", page), ("presenter", presenter)):
        out[f"{name}_s"] = _time(making(aspects), replay.trace, runs) / len(chosen)
    return out


def main(argv=None) -> int:
    """Print the table; 0."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--steps", type=int, default=40, help="steps timed, spread over the block")
    ap.add_argument("--presets", nargs="+", default=list(PRESETS))
    args = ap.parse_args(argv)
    print(f"ms per step of a block's frames (median of {args.runs}, nothing kept)")
    print(
        f"{'preset':<24}{'steps':>6}{'timed':>6}{'whole':>9}{'page':>9}{'presenter':>11}"
        f"{'whole/page':>12}{'whole/presenter':>17}"
    )
    left_out = {}
    for key in args.presets:
        m = measure(key, args.steps, args.runs)
        w, p, q = m["whole_s"], m["page_s"], m["presenter_s"]
        print(
            f"{key:<24}{m['steps']:>6}{m['timed']:>6}{1e3 * w:>9.2f}{1e3 * p:>9.2f}"
            f"{1e3 * q:>11.2f}{w / p:>12.2f}{w / q:>17.2f}"
        )
        from vizmm.replay import ASPECTS

        left_out[key] = (
            [a for a in ASPECTS if a not in m["page"]],
            [a for a in ASPECTS if a not in m["presenter"]],
        )
    for key, (page, presenter) in left_out.items():
        print(
            f"{key}: the page leaves out {', '.join(page) or 'nothing'}; "
            f"presenter mode {', '.join(presenter) or 'nothing'}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
