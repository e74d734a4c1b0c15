"""Orders of the aggregated recording's launches, timed against the plain kernel at small widths.

An aggregated recording on a GPU is three launches: the lean variant over
the whole grid, its run expansion after it (one stream), and the full
variant over one detail block (another stream). At Width 1024 the plain
kernel takes about 0.3 ms and the host takes 0.05-0.1 ms to enqueue each
of the recording's launches (Numba's handling of a dozen arguments), so
the order of the launches, and where the detail block's one block waits,
decide the ratio. Timed side by side with CUDA events (median), for each
book kernel and TILE_WIDTH:

``detail_first``
    the detail block enqueued first, then the lean launch and its expansion;
``lean_first``
    the lean launch and its expansion first, then the detail block on an
    ordinary stream: its block waits until the lean launch's last blocks
    are dispatched;
``lean_first_priority``
    as ``lean_first``, the detail block on a stream of the device's
    greatest priority: the GPU dispatches its
    block as soon as an SM has room (CUDA Programming Guide, "Stream
    Priorities");
``detail_first_priority``
    the detail block first, on that stream;
``lean_detail_expand``
    the lean launch, the detail block on that stream, then the expansion
    (which waits for the lean launch anyway): ``vizmm.record``'s order;
``specialized``
    that order, the lean and full kernels specialized to their arguments'
    types (``Dispatcher.specialize``: a launch skips the dispatcher's
    look-up of every argument's type), to see what that look-up costs
    the host.

GPU only; run with ``VIZMM_KERNELS_TARGET`` naming the compiler::

    python3 benchmarks/launch_order_variants.py OUT.json [1024,2048]
"""

from __future__ import annotations

import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import gpu_suite as S  # noqa: E402

from vizmm.record import instrument as I  # noqa: E402
from vizmm.record.instrument_run import priority_stream  # noqa: E402

ORDERS = (
    "detail_first",
    "lean_first",
    "lean_first_priority",
    "detail_first_priority",
    "lean_detail_expand",
    "specialized",
)


def _shape(cuda, W, T, kernel, reps):
    """One row: the plain kernel and each order's aggregated time (ms) and host time (ms)."""
    import vizmm_kernels as K

    rng = np.random.default_rng(0)
    M = cuda.to_device(rng.integers(0, 10, W * W).astype(np.float32))
    N = cuda.to_device(rng.integers(0, 10, W * W).astype(np.float32))
    P = cuda.device_array(W * W, np.float32)
    grid, block = K.grid_dims(W, W, T)
    plain = K.get_kernel(kernel, T)
    S.HOST_MS.clear()
    row = {"W": W, "T": T, "kernel": kernel}
    row["plain_ms"], _ = S._event_time(cuda, lambda: plain[grid, block](M, N, P, W), reps, "plain")
    P_plain = P.copy_to_host()
    setup = S.aggregated_records(cuda, W, T, kernel)
    inst, lean, named, detail = setup.inst, setup.lean, setup.lean_rec, setup.detail
    layout, reset = setup.layout, setup.reset
    lean_k, full_k = inst.lean, inst.kernel
    s_lean, s_plain = cuda.stream(), cuda.stream()
    with priority_stream(cuda) as s_high:
        row["priority_stream"] = s_high is not None
        s_high = s_high or cuda.stream()

        def lean_run():
            lean_k[grid, block, s_lean](M, N, P, W, *lean)
            I.expand_lean_runs(layout, named, s_lean, keep=True)

        def detail_on(stream):
            return lambda: full_k[(1, 1), block, stream](M, N, P, W, *detail)

        variants = {
            "detail_first": (detail_on(s_plain), lean_run),
            "lean_first": (lean_run, detail_on(s_plain)),
            "lean_first_priority": (lean_run, detail_on(s_high)),
            "detail_first_priority": (detail_on(s_high), lean_run),
        }

        def lean_detail_expand():
            lean_k[grid, block, s_lean](M, N, P, W, *lean)
            detail_on(s_high)()
            I.expand_lean_runs(layout, named, s_lean, keep=True)

        variants["lean_detail_expand"] = (lean_detail_expand, lambda: None)
        lean_s = lean_k.specialize(M, N, P, W, *lean)
        full_s = full_k.specialize(M, N, P, W, *detail)

        def specialized():
            lean_s[grid, block, s_lean](M, N, P, W, *lean)
            full_s[(1, 1), block, s_high](M, N, P, W, *detail)
            I.expand_lean_runs(layout, named, s_lean, keep=True)

        variants["specialized"] = (specialized, lambda: None)
        for name in ORDERS:
            first, second = variants[name]

            def both(first=first, second=second):
                first()
                second()

            row[f"{name}_ms"], _ = S._event_time(cuda, both, reps, name, reset)
            row[f"{name}_ratio"] = row[f"{name}_ms"] / row["plain_ms"]
            row[f"{name}_P_equals_plain"] = bool(P.copy_to_host().tobytes() == P_plain.tobytes())
        cuda.synchronize()
    row.update({f"{k}_host": v for k, v in S.HOST_MS.items()})
    return row


def main(argv):
    """Time every order at the widths given (default 1024 and 2048); write OUT.json."""
    from vizmm_kernels import _target

    cuda = _target.cuda
    widths = [int(w) for w in (argv[1] if len(argv) > 1 else "1024,2048").split(",")]
    dev = cuda.get_current_device()
    name = dev.name.decode() if isinstance(dev.name, bytes) else dev.name
    out = {"target": _target.NAME, "version": _target.VERSION, "device": name, "rows": []}
    for kernel in ("tiled", "boundary"):
        for W in widths:
            for T in (16, 32):
                row = _shape(cuda, W, T, kernel, 30 if W <= 2048 else 10)
                out["rows"].append(row)
                print(
                    kernel,
                    W,
                    T,
                    f"plain {row['plain_ms']:.3f} ms",
                    " ".join(f"{o} x{row[o + '_ratio']:.2f}" for o in ORDERS),
                    flush=True,
                )
                with open(argv[0], "w", encoding="utf-8") as f:
                    json.dump(out, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
