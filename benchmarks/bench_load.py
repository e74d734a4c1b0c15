"""Reading the shipped 4096 x 4096 trace: ``vizmm info`` and ``vizmm.load``, before and after.

Run from the repository root::

    .venv/bin/python benchmarks/bench_load.py [--repeat 3] [FILE]

Each measurement runs in a fresh Python process (wall time of the read, peak
resident memory of the process over its baseline after imports), so the
figures do not share caches. "before" is the way vizmm read a trace until
format 2, kept here as the reference: every array inflated, M and N made
again from their seed, P rebuilt from a 4096^3 product, every array copied
and checked; ``vizmm info`` printed its summary from that. "after" is
``vizmm.trace.read_info`` (the manifest alone) and ``vizmm.load`` (checks
first; M, N and P made when first used).

Targets (issue "A server a whole class can share"): info <= 0.3 s and
<= 50 MiB; load <= 1.5 s on an idle machine, peak <= 1.3x the arrays held.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT = os.path.join(ROOT, "vizmm", "data", "gpu-4096-t32-tiled.vizmm")

CHILD = r"""
import json, os, resource, sys, time, io, zipfile, hashlib
import numpy as np
import vizmm
from vizmm.trace import fileformat as ff
from vizmm.trace.model import Trace

path, what = sys.argv[1], sys.argv[2]

def rss_mib():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024

def reset_peak():
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")

def before_load(path):
    # the reference: the reader vizmm had before format 2 (eager, copies)
    with open(path, "rb") as f:
        data = f.read()
    with np.load(io.BytesIO(data), allow_pickle=False) as npz:
        manifest = json.loads(npz["manifest"].tobytes().decode())
        meta = manifest["meta"]
        arrays = {}
        for key, d in manifest["arrays"].items():
            a = npz[key]
            enc = d.get("encoding")
            if enc == "seeded":
                M, N = ff.seeded_inputs(meta["j"], meta["k"], meta["l"], meta["seed"])
                a = M if key == "M" else N
            elif enc in ("product", "xor-product"):
                ref = np.ascontiguousarray(np.matmul(arrays["M"], arrays["N"], dtype=np.float32))
                if enc == "xor-product":
                    ref = (a.view(np.uint32) ^ ref.view(np.uint32)).view(np.float32)
                a = ref
            elif enc == "fill":
                a = np.full(d["shape"], d["fill"], np.dtype(d["dtype"]))
            assert hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest() == d["sha256"]
            arrays[key] = a
    return Trace(meta=meta, **arrays)  # writable arrays: copied, as before

base = rss_mib()
reset_peak()
base = rss_mib()
t0 = time.perf_counter()
if what == "info-before":
    text = before_load(path).summary()
elif what == "info-after":
    text = ff.read_info(path).summary()
elif what == "load-before":
    tr = before_load(path)
elif what == "load-after":
    tr = vizmm.load(path)
elif what == "load-after-all":
    tr = vizmm.load(path); tr.M; tr.N; tr.P
dt = time.perf_counter() - t0
peak = rss_mib() - base
held = None
if what.startswith("load"):
    held = sum(a.nbytes for a in tr.__dict__.values() if isinstance(a, np.ndarray)) / 2**20
print(json.dumps({"what": what, "s": dt, "peak_mib": peak, "held_mib": held}))
"""


def run(path: str, what: str) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", CHILD, path, what],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("file", nargs="?", default=DEFAULT)
    p.add_argument("--repeat", type=int, default=3)
    args = p.parse_args(argv)
    print(f"{os.path.basename(args.file)}, {os.path.getsize(args.file) / 2**20:.1f} MiB on disk")
    print(f"load average: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    rows = {}
    for what in ("info-before", "info-after", "load-before", "load-after", "load-after-all"):
        res = [run(args.file, what) for _ in range(args.repeat)]
        best = min(res, key=lambda r: r["s"])
        rows[what] = best
        held = f", holds {best['held_mib']:.0f} MiB" if best["held_mib"] is not None else ""
        ratio = f" = {best['peak_mib'] / best['held_mib']:.2f}x" if best["held_mib"] else ""
        print(
            f"{what:15s} best of {args.repeat}: {best['s']:6.2f} s, peak +{best['peak_mib']:6.0f} "
            f"MiB{ratio}{held}"
        )
    # the whole command, as a person types it (Python start-up and imports included)
    import time

    vizmm_cmd = os.path.join(os.path.dirname(sys.executable), "vizmm")
    for what, cmd in (
        ("before", [sys.executable, "-c", CHILD, args.file, "info-before"]),
        ("after", [vizmm_cmd, "info", args.file]),
    ):
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, cwd=ROOT)
        _, status, usage = os.wait4(proc.pid, 0)
        dt = time.perf_counter() - t0
        assert status == 0, cmd
        print(
            f"command 'vizmm info' ({what}): {dt:.2f} s wall, "
            f"max RSS {usage.ru_maxrss / 1024:.0f} MiB"
        )
    for kind in ("info", "load"):
        b, a = rows[f"{kind}-before"], rows[f"{kind}-after"]
        print(
            f"{kind}: {b['s'] / a['s']:.1f}x faster ({b['s']:.2f} -> {a['s']:.2f} s), "
            f"{b['peak_mib'] / max(a['peak_mib'], 1):.1f}x less memory "
            f"({b['peak_mib']:.0f} -> {a['peak_mib']:.0f} MiB)"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
