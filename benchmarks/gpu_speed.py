"""Measured speed of the book's kernels, the device's limits and its occupancy rules, on a GPU.

Run on a machine with an NVIDIA GPU, numba-cuda and CuPy:

    python benchmarks/gpu_speed.py OUT.json [--quick]

Measures, in one run (a few minutes on an H100):

1. the device's attributes (``cuda.get_current_device()``, and CuPy's
   ``getDeviceProperties`` beside them);
2. registers per thread, static shared memory and local memory of every
   kernel (plain, and instrumented: the instrumenter's full variant) for
   several TILE_WIDTHs, from the
   compiled kernel (``get_regs_per_thread`` and friends), and the blocks per
   SM that CUDA's own occupancy API (``cuOccupancyMaxActiveBlocksPerMultiprocessor``)
   reports for each, plus probes of raw shared-memory sizes (the book's
   32 KB / 256-thread block of Section 5.6 among them);
3. the FP32 peak (an FMA-bound kernel) and the DRAM bandwidth (a
   device-to-device copy, bytes read plus bytes written);
4. GFLOP/s (``2 * Width**3`` FLOP per product; CUDA events, one warm-up
   launch, median of several) of the naive kernel (Fig. 3.11), the tiled
   kernel (Fig. 5.9) with TILE_WIDTH 8, 16 and 32, the boundary-checked
   kernel (Fig. 5.13), the dynamically sized one (Fig. 5.14; ``dynamic_any``:
   its variant with TILE_WIDTH as an argument) and cuBLAS
   (CuPy's ``matmul``, float32, no TF32) over square sizes and one odd size;
   every product is checked against cuBLAS's (exact: inputs are small
   integers);
5. the Fig. 5.14 kernel's load records against Fig. 5.13's for the same
   launch, recorded on the GPU.

Writes everything to OUT.json (vizmm ships the result as
``vizmm/data/gpu-speed-*.json``).
"""

from __future__ import annotations

import concurrent.futures as cf
import datetime
import importlib.metadata
import json
import multiprocessing as mp
import os
import platform
import statistics
import sys
import time

os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "0")

import numpy as np  # noqa: E402

from vizmm.record import device  # noqa: E402

KERNELS = ("naive", "tiled", "boundary", "general", "dynamic")
REG_TILE_WIDTHS = tuple(range(1, 33))
SIZES = (256, 512, 1024, 2048, 4096, 8192)
ODD = 3001
NAIVE_MAX = 4096  # the naive kernel is slow: sizes above this are skipped
# the live GPU's attributes vizmm reads (vizmm.record.device), and the memory system's
ATTRIBUTES = (
    *device.ATTRIBUTES,
    "MEMORY_CLOCK_RATE",
    "GLOBAL_MEMORY_BUS_WIDTH",
    "L2_CACHE_SIZE",
    "COMPUTE_CAPABILITY_MAJOR",
    "COMPUTE_CAPABILITY_MINOR",
)


def log(*a):
    print(*a, flush=True)


def versions():
    out = {"python": platform.python_version()}
    for dist in ("numpy", "numba", "numba-cuda", "cupy-cuda13x", "cupy-cuda12x", "cupy"):
        try:
            out[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            pass
    try:
        import cupy as cp

        out["cuda_runtime"] = cp.cuda.runtime.runtimeGetVersion()
        out["cuda_driver"] = cp.cuda.runtime.driverGetVersion()
    except Exception as exc:  # noqa: BLE001
        out["cupy_error"] = repr(exc)
    return out


def device_attributes():
    from numba import cuda

    dev = cuda.get_current_device()
    name = dev.name.decode() if isinstance(dev.name, bytes) else dev.name
    attrs = {"name": name, "compute_capability": list(dev.compute_capability)}
    for a in ATTRIBUTES:
        try:
            attrs[a] = int(getattr(dev, a))
        except Exception as exc:  # noqa: BLE001
            attrs[a] = f"unavailable: {exc!r}"[:120]
    props = {}
    try:
        import cupy as cp

        for key, val in cp.cuda.runtime.getDeviceProperties(0).items():
            if isinstance(val, bytes):
                val = val.decode(errors="replace").rstrip("\x00")
            if isinstance(val, (int, float, str)):
                props[key] = val
            elif isinstance(val, (tuple, list)) and all(isinstance(v, int) for v in val):
                props[key] = list(val)
    except Exception as exc:  # noqa: BLE001
        props["error"] = repr(exc)
    return attrs, props


# ---------------------------------------------------------------- registers and occupancy API


def _signature_args(name, T, instrumented):
    import vizmm_kernels as K
    import vizmm_kernels.dynamic as D

    W = 64
    args = [np.zeros(W * W, np.float32) for _ in range(3)]
    if name == "dynamic":
        args += list(D.launch_args(W, T))
    elif name == "dynamic_any":
        args += [W, T, *D.launch_args(W, T)[1:]]
    else:
        args += list(K.launch_dims(name, W, W, W))
    if instrumented:  # the instrumenter's full variant's arguments
        from vizmm.record import instrument as I

        inst = _get_kernel(name, T, True, rewritten=True)
        grid, block = K.grid_dims(W, W, T)
        host = dict(zip(inst.params, args, strict=True))
        args += list(I._records(inst, grid, block, [(0, 0)], 1, host, True, 1, 1).values())
    return args


def _get_kernel(name, T, instrumented, rewritten=False):
    """The kernel compiled for the GPU; ``instrumented``: the instrumenter's full variant."""
    import vizmm_kernels.dynamic as D

    if name == "dynamic_any":
        return D.make_plain_any_width()
    import vizmm_kernels as K

    if not instrumented:
        return K.get_kernel(name, T)
    from vizmm.record.instrument_trace import book_kernel

    inst = book_kernel(name, T, shared_loads=False)
    return inst if rewritten else inst.kernel


def resources(job):
    """Worker: compile one kernel for one TILE_WIDTH, read its resources and CUDA's occupancy."""
    name, T, instrumented = job
    from numba import cuda, typeof

    import vizmm_kernels.dynamic as D

    t0 = time.perf_counter()
    kern = _get_kernel(name, T, instrumented)
    args = _signature_args(name, T, instrumented)
    compiled = kern.compile(tuple(typeof(a) for a in args))
    cufunc = compiled.library.get_cufunc()
    dyn = D.shared_bytes(T) if name.startswith("dynamic") else 0
    ctx = cuda.current_context()
    blocks = ctx.get_active_blocks_per_multiprocessor(cufunc, T * T, dyn)
    if isinstance(blocks, tuple):
        blocks = blocks[-1]
    out = {
        "kernel": name,
        "tile_width": T,
        "instrumented": instrumented,
        "registers_per_thread": int(compiled.regs_per_thread),
        "static_shared_bytes": int(compiled.shared_mem_per_block),
        "dynamic_shared_bytes": dyn,
        "local_bytes_per_thread": int(compiled.local_mem_per_thread),
        "max_threads_per_block": int(compiled.max_threads_per_block),
        "cuda_blocks_per_sm": int(blocks),
        "compile_s": round(time.perf_counter() - t0, 2),
    }
    if name == "dynamic_any":
        # Raw probes: this kernel with block sizes and dynamic shared memory of our
        # choosing (Section 5.6's 32 KB / 256-thread block among them).
        probes = []
        for threads in (64, 128, 256, 512, 1024):
            for smem in (0, 1024, 8192, 16384, 20000, 32768, 40000, 49152):
                b = ctx.get_active_blocks_per_multiprocessor(cufunc, threads, smem)
                if isinstance(b, tuple):
                    b = b[-1]
                probes.append(
                    {"threads": threads, "dynamic_shared_bytes": smem, "cuda_blocks_per_sm": int(b)}
                )
        out["probes"] = probes
    return out


def all_resources():
    jobs = [(n, T, i) for n in KERNELS for T in REG_TILE_WIDTHS for i in (False, True)]
    jobs.append(("dynamic_any", 16, False))
    ctx = mp.get_context("spawn")
    with cf.ProcessPoolExecutor(max_workers=min(15, os.cpu_count() or 2), mp_context=ctx) as ex:
        return list(ex.map(resources, jobs))


# ---------------------------------------------------------------- peak and bandwidth


def fp32_peak(sm_count):
    from numba import cuda, float32

    @cuda.jit(fastmath=True)
    def fma_loop(out, iters, seed):
        i = cuda.grid(1)
        b = float32(0.9999)
        c = float32(0.0001)
        x0 = seed + float32(i)
        x1 = x0 + float32(1)
        x2 = x0 + float32(2)
        x3 = x0 + float32(3)
        x4 = x0 + float32(4)
        x5 = x0 + float32(5)
        x6 = x0 + float32(6)
        x7 = x0 + float32(7)
        for _ in range(iters):
            # two rounds of 8 per iteration; the compiler unrolls this loop (the PTX
            # is the same instructions as the two rounds written out)
            for _ in range(2):
                x0 = cuda.fma(x0, b, c)
                x1 = cuda.fma(x1, b, c)
                x2 = cuda.fma(x2, b, c)
                x3 = cuda.fma(x3, b, c)
                x4 = cuda.fma(x4, b, c)
                x5 = cuda.fma(x5, b, c)
                x6 = cuda.fma(x6, b, c)
                x7 = cuda.fma(x7, b, c)
        out[i] = x0 + x1 + x2 + x3 + x4 + x5 + x6 + x7

    threads, iters = 256, 4096
    blocks = sm_count * 8 * 4
    out = cuda.device_array(blocks * threads, np.float32)
    fma_loop[blocks, threads](out, iters, np.float32(1))
    cuda.synchronize()
    times = _event_times(lambda: fma_loop[blocks, threads](out, iters, np.float32(1)), 10)
    flop = 2 * 16 * iters * blocks * threads
    ms = statistics.median(times)
    return {
        "kernel": "16 independent FMA per loop iteration, 8 accumulators, fastmath",
        "threads": blocks * threads,
        "flop": flop,
        "median_ms": ms,
        "gflops": flop / ms / 1e6,
        "best_gflops": flop / min(times) / 1e6,
    }


def dram_bandwidth():
    import cupy as cp

    n = 1 << 29  # 2 GiB of float32 per buffer
    a = cp.ones(n, cp.float32)
    b = cp.empty_like(a)
    nbytes = a.nbytes
    times = []
    for i in range(12):
        start, stop = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        cp.cuda.runtime.memcpy(b.data.ptr, a.data.ptr, nbytes, 3)  # cudaMemcpyDeviceToDevice
        stop.record()
        stop.synchronize()
        if i >= 2:
            times.append(cp.cuda.get_elapsed_time(start, stop))
    ms = statistics.median(times)
    out = {
        "what": "cudaMemcpy device to device, 2 GiB; bytes read + bytes written per second",
        "bytes_per_copy": nbytes,
        "median_ms": ms,
        "gb_per_s": 2 * nbytes / ms / 1e6,
        "best_gb_per_s": 2 * nbytes / min(times) / 1e6,
    }
    del a, b
    cp.get_default_memory_pool().free_all_blocks()
    return out


# ---------------------------------------------------------------- matrix products


def _event_times(fn, reps):
    from numba import cuda

    out = []
    for _ in range(reps):
        start, stop = cuda.event(), cuda.event()
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        out.append(cuda.event_elapsed_time(start, stop))
    return out


def _timed(fn, budget_s=0.4):
    from numba import cuda

    fn()  # warm-up (and compilation)
    cuda.synchronize()
    first = _event_times(fn, 1)[0]
    reps = int(min(15, max(3, budget_s * 1e3 / max(first, 1e-3))))
    times = [first] + _event_times(fn, reps)
    return statistics.median(times), min(times), len(times)


def products(quick):
    import cupy as cp
    from numba import cuda

    import vizmm_kernels as K
    import vizmm_kernels.dynamic as D

    sizes = (256, 1024, ODD) if quick else (*SIZES, ODD)
    rows = []
    rng = np.random.default_rng(5)
    for W in sizes:
        M = rng.integers(0, 10, (W, W)).astype(np.float32)
        N = rng.integers(0, 10, (W, W)).astype(np.float32)
        dM, dN = cuda.to_device(M.ravel()), cuda.to_device(N.ravel())
        dP = cuda.device_array(W * W, np.float32)
        cM, cN = cp.asarray(M), cp.asarray(N)
        ref = cM @ cN
        flop = 2.0 * W**3
        configs = []
        if W <= NAIVE_MAX or W == ODD:
            configs.append(("naive", 16))
        if W % 32 == 0:
            configs += [("tiled", 8), ("tiled", 16), ("tiled", 32)]
        configs += [("boundary", 16), ("boundary", 32), ("dynamic", 16), ("dynamic", 32)]
        configs += [("dynamic_any", 16), ("dynamic_any", 32)]
        for name, T in configs:
            grid, block = K.grid_dims(W, W, T)
            if name.startswith("dynamic"):
                kern = D.make_plain(T) if name == "dynamic" else D.make_plain_any_width()
                args = D.launch_args(W, T)
                if name == "dynamic_any":
                    args = (W, T, *args[1:])
                smem = D.shared_bytes(T)

                def fn(kern=kern, grid=grid, block=block, args=args, smem=smem):
                    kern[grid, block, 0, smem](dM, dN, dP, *args)

            else:
                kern = K.get_kernel(name, T)

                def fn(kern=kern, grid=grid, block=block):
                    kern[grid, block](dM, dN, dP, W)

            cp.asarray(dP).fill(np.nan)
            med, best, n = _timed(fn)
            exact = bool(cp.array_equal(cp.asarray(dP).reshape(W, W), ref))
            row = {
                "kernel": name,
                "tile_width": T,
                "width": W,
                "median_ms": med,
                "gflops": flop / med / 1e6,
                "best_gflops": flop / best / 1e6,
                "launches": n,
                "exact": exact,
            }
            rows.append(row)
            log(f"  {name:8s} T={T:2d} W={W:5d}: {row['gflops']:9.1f} GFLOP/s  exact={exact}")

        def blas():
            cp.matmul(cM, cN, out=cP)

        cP = cp.empty_like(ref)
        blas()
        cp.cuda.Device().synchronize()
        times = []
        for _ in range(max(3, min(15, int(0.4e3 / max(1e-3, _cupy_ms(blas)))))):
            times.append(_cupy_ms(blas))
        med = statistics.median(times)
        rows.append(
            {
                "kernel": "cublas",
                "tile_width": None,
                "width": W,
                "median_ms": med,
                "gflops": flop / med / 1e6,
                "best_gflops": flop / min(times) / 1e6,
                "launches": len(times),
                "exact": bool(cp.array_equal(cP, ref)),
            }
        )
        log(f"  cublas         W={W:5d}: {rows[-1]['gflops']:9.1f} GFLOP/s")
        dM = dN = dP = cM = cN = cP = ref = None  # free before the next size
        cp.get_default_memory_pool().free_all_blocks()
    return rows


def _cupy_ms(fn):
    import cupy as cp

    start, stop = cp.cuda.Event(), cp.cuda.Event()
    start.record()
    fn()
    stop.record()
    stop.synchronize()
    return cp.cuda.get_elapsed_time(start, stop)


# ---------------------------------------------------------------- Fig. 5.14 records = Fig. 5.13's


def dynamic_records_equal():
    import vizmm

    out = []
    rng = np.random.default_rng(1)
    for W, T in ((37, 8), (64, 16), (100, 32)):
        M = rng.integers(0, 10, (W, W)).astype(np.float32)
        N = rng.integers(0, 10, (W, W)).astype(np.float32)
        got = {
            name: vizmm.record(M=M, N=N, tile_width=T, kernel=name, backend="gpu", quiet=True)
            for name in ("boundary", "dynamic")
        }
        same = {
            k: bool(
                np.array_equal(
                    getattr(got["boundary"], k), getattr(got["dynamic"], k), equal_nan=True
                )
            )
            for k in ("loads", "pvalue", "p_write", "m_reads", "n_reads", "zero_fills", "P")
        }
        out.append({"width": W, "tile_width": T, "equal": same})
        log(f"  Fig. 5.14 vs 5.13 records, W={W} T={T}: {same}")
    return out


def main(argv):
    quick = "--quick" in argv
    paths = [a for a in argv if not a.startswith("--")]
    path = paths[0] if paths else "gpu-speed.json"
    t0 = time.time()
    result = {
        "what": "vizmm benchmarks/gpu_speed.py: measured speed, limits and occupancy",
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "versions": versions(),
    }
    attrs, props = device_attributes()
    result["device"] = attrs
    result["device_properties_cupy"] = props
    log("device:", json.dumps(attrs))

    def save():
        result["elapsed_s"] = round(time.time() - t0, 1)
        with open(path + ".tmp", "w") as f:
            json.dump(result, f, indent=1)
        os.replace(path + ".tmp", path)

    for key, fn in (
        ("resources", all_resources),
        ("fp32_peak", lambda: fp32_peak(attrs["MULTIPROCESSOR_COUNT"])),
        ("dram_bandwidth", dram_bandwidth),
        ("dynamic_records", dynamic_records_equal),
        ("products", lambda: products(quick)),
    ):
        t = time.time()
        log(f"{key} ...")
        try:
            result[key] = fn()
        except Exception as exc:  # noqa: BLE001 - keep what the other parts measured
            import traceback

            traceback.print_exc()
            result[key] = {"error": repr(exc)}
        log(f"{key}: {time.time() - t:.1f} s")
        if key in ("fp32_peak", "dram_bandwidth"):
            log(json.dumps(result[key]))
        if key == "resources" and isinstance(result[key], list):
            for r in result[key]:
                if r["tile_width"] not in (1, 2, 8, 16, 32):
                    continue
                log(
                    f"  {r['kernel']:8s} T={r['tile_width']:2d} inst={r['instrumented']!s:5s} "
                    f"regs={r['registers_per_thread']:3d} smem={r['static_shared_bytes']:5d}"
                    f"+{r['dynamic_shared_bytes']:5d} local={r['local_bytes_per_thread']} "
                    f"blocks/SM={r['cuda_blocks_per_sm']}"
                )
        save()
    log(f"wrote {path} in {time.time() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
