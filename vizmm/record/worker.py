"""Run one recording in a fresh process (used when the caller's numba is in the other mode).

Usage: ``python -m vizmm.record.worker IN.npz OUT.vizmm key=value ...``; the
environment's ``NUMBA_ENABLE_CUDASIM`` picks the backend.
"""

import sys

import numpy as np

from .launcher import launch
from .recorder import _LOCK


def main(argv):
    """Record the job described by ``argv`` (see the module docstring); 0 on success."""
    inp, out, *pairs = argv
    opts = dict(p.split("=", 1) for p in pairs)
    with np.load(inp, allow_pickle=False) as z:
        M, N, blocks = z["M"], z["N"], [tuple(b) for b in z["blocks"].tolist()]
    job = {
        "j": int(opts["j"]),
        "k": int(opts["k"]),
        "l": int(opts["l"]),
        "T": int(opts["T"]),
        "kernel": opts["kernel"],
        "aggregated": opts["aggregated"] == "True",
        "seed": int(opts["seed"]),
        "backend": opts["backend"],
        "blocks": blocks,
        "inputs": opts.get("inputs", "given"),
        "drop": tuple(int(v) for v in opts.get("drop", "-").split(",") if v != "-"),
        "reads": opts.get("reads") == "True",
    }
    if "tile_width_from" in opts:
        job["tile_width_from"] = opts["tile_width_from"]
    with _LOCK:
        trace = launch(job, M, N, show=False)
    trace.save(out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
