"""The same launches recorded by each target, compared byte for byte.

Each target runs in its own process (a process compiles for one target, and
numba-cuda needs NumPy < 2.5 where numba-cuda-mlir does not), so recording
and comparing are two steps::

    python scripts/compare_targets.py record gpu        OUT/mlir       # numba-cuda-mlir
    python scripts/compare_targets.py record gpu-legacy OUT/legacy     # numba-cuda (NumPy 2.4)
    python scripts/compare_targets.py record simulator  OUT/sim        # numba-cuda's simulator
    python scripts/compare_targets.py compare OUT/mlir OUT/legacy OUT/sim [--json OUT.json]

``record`` saves every case's record arrays (``CASE.npz``) and the trace's
target and NumPy version (``CASE.json``); ``compare`` prints one row per case
and field saying whether every folder holds the same bytes, and exits 1 when
one differs.

Cases: Fig. 5.9 (tiled), Fig. 5.13 (boundary), the j x k . k x l kernel
(general) and Fig. 5.14 (dynamic) at Width 64, TILE_WIDTH 16, and a window
recording (three blocks of Fig. 5.13 at Width 200). Of a window recording the
simulator runs only the window's blocks, so its read counts, zero-fill counts
and P cover fewer blocks; those fields are compared between the GPU targets
only.
"""

from __future__ import annotations

import json
import os
import sys

import numpy as np

#: name -> vizmm.record arguments
CASES = {
    "tiled-64-t16": dict(width=64, tile_width=16, kernel="tiled"),
    "boundary-64-t16": dict(width=64, tile_width=16, kernel="boundary"),
    "general-64x48x80-t16": dict(j=64, k=48, l=80, tile_width=16, kernel="general"),
    "dynamic-64-t16": dict(width=64, tile_width=16, kernel="dynamic"),
    "boundary-200-t16-window": dict(
        width=200, tile_width=16, kernel="boundary", window=[(0, 0), (6, 6), (12, 12)]
    ),
}
#: Fields that depend on the launch alone, not on timing.
FIELDS = (
    "loads",
    "p_write",
    "pvalue",
    "zero_fills",
    "detail_blocks",
    "m_reads",
    "n_reads",
    "P",
    "M",
    "N",
)
#: Fields a window recording in the simulator covers for its blocks only.
WINDOW_GPU_ONLY = ("m_reads", "n_reads", "zero_fills", "P")


def record(backend: str, outdir: str) -> int:
    """Record every case with ``backend`` and save its arrays to ``outdir``."""
    import vizmm

    os.makedirs(outdir, exist_ok=True)
    for name, case in CASES.items():
        t = vizmm.record(backend=backend, seed=7, quiet=True, **case)
        np.savez(os.path.join(outdir, f"{name}.npz"), **{f: getattr(t, f) for f in FIELDS})
        info = {
            "backend": t.meta["backend"],
            "target": t.meta.get("target"),
            "numpy": t.meta["versions"].get("numpy"),
            "device": t.meta.get("device_name"),
            "has_clocks": bool(t.has_clocks),
        }
        with open(os.path.join(outdir, f"{name}.json"), "w", encoding="utf-8") as f:
            json.dump(info, f)
        print(f"{name}: {info}", flush=True)
    return 0


def compare(dirs: list[str], json_out: str | None = None) -> int:
    """Compare the cases saved in ``dirs``; print a table; 0 when every field is identical."""
    labels = []
    for d in dirs:
        with open(os.path.join(d, f"{next(iter(CASES))}.json"), encoding="utf-8") as f:
            info = json.load(f)
        target = info["target"] or {"name": info["backend"], "version": "?"}
        labels.append(f"{target['name']} {target['version']} (NumPy {info['numpy']})")
    print("compared: " + "; ".join(f"[{i}] {label}" for i, label in enumerate(labels)))
    rows, ok = [], True
    for name, case in CASES.items():
        data = [np.load(os.path.join(d, f"{name}.npz")) for d in dirs]
        sims = [i for i, label in enumerate(labels) if label.startswith("numba-cuda-simulator")]
        for field in FIELDS:
            use = list(range(len(dirs)))
            if case.get("window") and field in WINDOW_GPU_ONLY:
                use = [i for i in use if i not in sims]
            if len(use) < 2:
                continue
            arrays = [data[i][field] for i in use]
            same = all(
                a.dtype == arrays[0].dtype
                and a.shape == arrays[0].shape
                and a.tobytes() == arrays[0].tobytes()
                for a in arrays
            )
            ok &= same
            rows.append(
                {
                    "case": name,
                    "field": field,
                    "compared": use,
                    "identical": same,
                    "bytes": int(arrays[0].nbytes),
                }
            )
    width = max(len(r["case"]) for r in rows)
    print(f"{'case':<{width}}  {'field':<13} {'bytes':>9}  compared  identical")
    for r in rows:
        print(
            f"{r['case']:<{width}}  {r['field']:<13} {r['bytes']:>9}  "
            f"{','.join(map(str, r['compared'])):<8}  {'yes' if r['identical'] else 'NO'}"
        )
    print("all identical" if ok else "SOME FIELDS DIFFER")
    if json_out:
        with open(json_out, "w", encoding="utf-8") as f:
            json.dump({"targets": labels, "rows": rows, "all_identical": ok}, f, indent=1)
    return 0 if ok else 1


def main(argv: list[str]) -> int:
    """Command line: ``record BACKEND OUTDIR`` or ``compare DIR... [--json FILE]``."""
    if len(argv) == 3 and argv[0] == "record":
        return record(argv[1], argv[2])
    if len(argv) >= 2 and argv[0] == "compare":
        rest, json_out = argv[1:], None
        if "--json" in rest:
            i = rest.index("--json")
            json_out, rest = rest[i + 1], rest[:i] + rest[i + 2 :]
        return compare(rest, json_out)
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
