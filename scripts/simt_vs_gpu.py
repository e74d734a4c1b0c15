"""vizmm's simulator against a GPU: the same access log, field for field, the tickets apart.

Run on a machine with an NVIDIA GPU (``NUMBA_ENABLE_CUDASIM`` unset)::

    VIZMM_KERNELS_TARGET=numba-cuda-mlir python scripts/simt_vs_gpu.py [--json OUT.json]

For every race-free kernel of ``benchmarks/labelled`` (the correct and the
wrong ones: a racing kernel's reads depend on the schedule, a GPU's being
timing) and the book's kernels, the rewritten kernel is launched on the GPU
(this process's compiler) and run in vizmm's simulator, both as
``vizmm.check`` records (every shared load, provenance) and, for the book's
kernels, as a plain recording; the decoded logs (events but the barrier
tickets, values, counts), the read counters, the zero-fills and the outputs
are compared byte for byte. Prints one line per kernel and a count.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def _launch(inst, j, k, l, t):
    import vizmm
    from vizmm.record import instrument as I

    M, N = vizmm.trace.seeded_inputs(j, k, l, 0)
    P = np.full((j, l), np.nan, np.float32)
    own = inst.params
    scalars = (k,) if len(own) == 4 else (j, k, l)
    args = dict(zip(own, (M, N, P, *scalars), strict=True))
    gx, gy = -(-l // t), -(-j // t)
    blocks = [(by, bx) for by in range(gy) for bx in range(gx)]
    return I.run(inst, args, (gx, gy), (t, t), blocks, phases=-(-k // t))


def _compare(a, b) -> dict:
    from vizmm.trace import access_log as D

    ea, eb = a.events.copy(), b.events.copy()
    ea[..., D.TICK] = eb[..., D.TICK] = 0
    out = {
        "events": ea.tobytes() == eb.tobytes(),
        "values": a.values.tobytes() == b.values.tobytes(),
        "counts": a.counts.tobytes() == b.counts.tobytes(),
        "zero_fills": a.zero_fills.tobytes() == b.zero_fills.tobytes(),
    }
    for name in a.reads:
        out[f"reads_{name}"] = a.reads[name].tobytes() == b.reads[name].tobytes()
    for name in a.outputs:
        out[f"out_{name}"] = np.array_equal(a.outputs[name], b.outputs[name], equal_nan=True)
    return out


def main(argv=None) -> int:
    """Compare every kernel; 0 when all are identical."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json")
    ap.add_argument("--start", help="begin at this labelled kernel's id (the rest of a run)")
    opts = ap.parse_args(argv)
    from vizmm.record import instrument as I
    from vizmm.record.instrument_trace import book_kernel
    from vizmm_kernels import _target

    results = []
    labels = json.loads((REPO / "benchmarks" / "labelled" / "labels.json").read_text())["kernels"]
    if opts.start:
        labels = labels[[lab["id"] for lab in labels].index(opts.start) :]
    for lab in labels:
        if lab["category"] == "racy":
            continue
        L = lab["launch"]
        j = k = l = L.get("width", 0)
        if "j" in L:
            j, k, l = L["j"], L["k"], L["l"]
        spec = f"{REPO / 'benchmarks' / 'labelled' / lab['file']}:{lab['kernel']}"
        logs = {}
        for engine in ("process", "simt"):
            inst = I.instrument(I.load_kernel(spec), terms=True, first_arrays=3, engine=engine)
            logs[engine] = _launch(inst, j, k, l, L["tile_width"])
        fields = _compare(logs["process"], logs["simt"])
        results.append({"kernel": lab["id"], "identical": all(fields.values()), "fields": fields})
        print(lab["id"], "identical" if all(fields.values()) else fields, flush=True)
    for name in ("naive", "tiled", "boundary", "general", "dynamic", "uncoalesced", "conflict"):
        for reads in (False, True):
            if reads and name not in ("tiled", "boundary"):
                continue
            j, k, l, t = (37, 29, 45, 8) if name == "general" else (64, 64, 64, 16)
            if _target.NAME == _target.SIMULATOR:  # a dry run here: Numba's simulator is slow
                j, k, l, t = (10, 7, 11, 3) if name == "general" else (8, 8, 8, 4)
            logs = {}
            for engine in ("process", "simt"):
                inst = book_kernel(name, t, shared_loads=reads, engine=engine)
                if name == "dynamic":
                    import vizmm_kernels as K

                    scal = K.launch_dims(name, j, k, l, t)
                    M, N = np.ones((j, k), np.float32), np.ones((k, l), np.float32)
                    args = dict(zip(inst.params, (M.ravel(), N.ravel(),
                                np.zeros(j * l, np.float32), *scal), strict=True))  # fmt: skip
                    g = -(-l // t)
                    logs[engine] = I.run(inst, args, (g, g), (t, t), [(0, 0), (g - 1, g - 1)])
                else:
                    logs[engine] = _launch(inst, j, k, l, t)
            fields = _compare(logs["process"], logs["simt"])
            key = f"book {name} {j}x{k}x{l} T{t}" + (" reads" if reads else "")
            results.append({"kernel": key, "identical": all(fields.values()), "fields": fields})
            print(key, "identical" if all(fields.values()) else fields, flush=True)
    same = sum(r["identical"] for r in results)
    print(f"{_target.NAME} {_target.VERSION}: {same} of {len(results)} identical")
    if opts.json:
        Path(opts.json).write_text(
            json.dumps({"target": _target.NAME, "results": results}, indent=1)
        )
    return 0 if same == len(results) else 1


if __name__ == "__main__":
    sys.exit(main())
