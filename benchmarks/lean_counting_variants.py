"""Ways to count the reads of M and N per element in Fig. 5.9, timed against the plain kernel.

Aggregated GPU recording counts every global read per element (the lean
variant: one atomic per read). This script holds hand-written forms of the
tiled kernel that count another way, each timed with CUDA events against
the plain kernel in the same run, its counts checked exact (Width /
TILE_WIDTH reads of every element) and P against NumPy. GPU only; run with
``VIZMM_KERNELS_TARGET`` naming the compiler::

    python3 benchmarks/lean_counting_variants.py W,W T,T check,atom,probe,pair,run,lane0 32,0
    python3 benchmarks/lean_counting_variants.py W,W T,T log        # per-warp log, no atomics
    python3 benchmarks/lean_counting_variants.py W,W T,T rle 32,0   # runs kept in registers
    python3 benchmarks/lean_counting_variants.py W,W T,T slice      # the address slice alone

Results: ``benchmarks/results/lean-counting-variants-mlir-h100.json``.
"""

import json
import os
import statistics
import sys

import numpy as np

from vizmm_kernels import _target

cuda = _target.cuda
float32 = _target.float32
print("target", _target.NAME, _target.VERSION, flush=True)

FULL = 0xFFFFFFFF
USE_AM = os.environ.get("NOMASK") is None


@cuda.jit(device=True)
def ld_plain(A, i, r):
    return A[i]


@cuda.jit(device=True)
def ld_check(A, i, r):  # checks, no count
    ok = i >= 0 and i < A.shape[0]
    j = i if ok else 0
    v = A[j]
    return v if ok else float32(0)


@cuda.jit(device=True)
def ld_atom(A, i, r):  # today's lg_load
    ok = i >= 0 and i < A.shape[0]
    j = i if ok else 0
    v = A[j]
    cuda.atomic.add(r, j, 1 if ok else 0)
    return v if ok else float32(0)


@cuda.jit(device=True)
def ld_atomif(A, i, r):
    ok = i >= 0 and i < A.shape[0]
    j = i if ok else 0
    v = A[j]
    if ok:
        cuda.atomic.add(r, j, 1)
    return v if ok else float32(0)


@cuda.jit(device=True)
def ld_probe(A, i, r):  # one atomic per load, no checks
    cuda.atomic.add(r, i, 1)
    return A[i]


@cuda.jit(device=True)
def ld_pair(A, i, r):  # r: uint64 words, two int32 counters each (even element low)
    ok = i >= 0 and i < A.shape[0]
    j = i if ok else 0
    v = A[j]
    key = np.int32(j) if ok else np.int32(-4)
    mask = cuda.activemask() if USE_AM else FULL
    lane = cuda.laneid
    p = cuda.shfl_xor_sync(mask, key, 1)
    paired = ((mask >> (lane ^ 1)) & 1) != 0 and p == (key ^ 1) and ok
    low = (j & 1) == 0
    amt = np.uint64(0x100000001) if paired else (np.uint64(1) if low else np.uint64(0x100000000))
    if ok and not (paired and (lane & 1) == 1):
        cuda.atomic.add(r, j >> 1, amt)
    return v if ok else float32(0)


@cuda.jit(device=True)
def ld_run(A, i, r):  # r: int32 difference array (n + 1)
    ok = i >= 0 and i < A.shape[0]
    j = i if ok else 0
    v = A[j]
    key = np.int32(j) if ok else np.int32(-4)
    mask = cuda.activemask() if USE_AM else FULL
    lane = cuda.laneid
    prev = cuda.shfl_up_sync(mask, key, 1)
    nxt = cuda.shfl_down_sync(mask, key, 1)
    cont = lane > 0 and ((mask >> (lane - 1)) & 1) != 0 and prev == key - 1
    goes = lane < 31 and ((mask >> (lane + 1)) & 1) != 0 and nxt == key + 1
    if ok and not cont:
        cuda.atomic.add(r, j, 1)
    if ok and not goes:
        cuda.atomic.add(r, j + 1, -1)
    return v if ok else float32(0)


@cuda.jit(device=True)
def ld_lane0(A, i, r):  # timing only: one lane per warp counts (wrong counts)
    v = A[i]
    if cuda.laneid == 0:
        cuda.atomic.add(r, i, 1)
    return v


LOADS = dict(
    lane0=ld_lane0,
    plain=ld_plain,
    check=ld_check,
    atom=ld_atom,
    atomif=ld_atomif,
    probe=ld_probe,
    pair=ld_pair,
    run=ld_run,
)


def make(T, load, cap):
    opts = {"max_registers": cap} if cap else {}

    @cuda.jit(**opts)
    def k(M, N, P, Width, rM, rN):
        Mds = cuda.shared.array((T, T), float32)
        Nds = cuda.shared.array((T, T), float32)
        bx = cuda.blockIdx.x
        by = cuda.blockIdx.y
        tx = cuda.threadIdx.x
        ty = cuda.threadIdx.y
        Row = by * T + ty
        Col = bx * T + tx
        Pvalue = float32(0)
        for ph in range((Width + T - 1) // T):
            Mds[ty, tx] = load(M, Row * Width + ph * T + tx, rM)
            Nds[ty, tx] = load(N, (ph * T + ty) * Width + Col, rN)
            cuda.syncthreads()
            for kk in range(T):
                Pvalue += Mds[ty, kk] * Nds[kk, tx]
            cuda.syncthreads()
        if Row < Width and Col < Width:
            P[Row * Width + Col] = Pvalue

    return k


def make_log(T, vote):
    """Lanes 0 and 16 store their index to a log slot; the rest nothing.

    With ``vote``: every lane checks that it continues its half-warp's run (one shuffle, one vote),
    and the warp falls back to per-lane atomics when not.
    """

    @cuda.jit(max_registers=32)
    def k(M, N, P, Width, L, rM):
        Mds = cuda.shared.array((T, T), float32)
        Nds = cuda.shared.array((T, T), float32)
        bx = cuda.blockIdx.x
        by = cuda.blockIdx.y
        tx = cuda.threadIdx.x
        ty = cuda.threadIdx.y
        lane = cuda.laneid
        nph = (Width + T - 1) // T
        wid = ((by * cuda.gridDim.x + bx) * (T * T // 32) + (ty * T + tx) // 32) * nph * 2
        Row = by * T + ty
        Col = bx * T + tx
        Pvalue = float32(0)
        for ph in range(nph):
            i0 = Row * Width + ph * T + tx
            i1 = (ph * T + ty) * Width + Col
            if vote:
                p0 = cuda.shfl_up_sync(FULL, np.int32(i0), 1)
                p1 = cuda.shfl_up_sync(FULL, np.int32(i1), 1)
                good = cuda.all_sync(FULL, (lane & 15) == 0 or (p0 == i0 - 1 and p1 == i1 - 1))
            else:
                good = True
            if good:
                if (lane & 15) == 0:
                    L[(wid + ph * 2) * 2 + (lane >> 4)] = i0
                    L[(wid + ph * 2 + 1) * 2 + (lane >> 4)] = i1
            else:
                cuda.atomic.add(rM, i0, 1)
                cuda.atomic.add(rM, i1, 1)
            Mds[ty, tx] = M[i0]
            Nds[ty, tx] = N[i1]
            cuda.syncthreads()
            for kk in range(T):
                Pvalue += Mds[ty, kk] * Nds[kk, tx]
            cuda.syncthreads()
        if Row < Width and Col < Width:
            P[Row * Width + Col] = Pvalue

    return k


def make_rle(T, cap):
    """Each thread keeps, per load site, its run of in-bounds reads whose indices step evenly
    (first, step, count in registers) and writes the run once at its end; a read off the run
    writes the run so far (one atomic per element, rare) and starts a new one."""
    opts = {"max_registers": cap} if cap else {}

    @cuda.jit(device=True)
    def step(A, i, f, s, c, direct):
        ok = i >= 0 and i < A.shape[0]
        j = i if ok else 0
        v = A[j]
        ii = np.int32(j)
        if ok:
            if c == 0:
                f = ii
                c = 1
            elif c == 1:
                s = ii - f
                c = 2
            elif ii == f + c * s:
                c += 1
            else:
                for q in range(c):
                    cuda.atomic.add(direct, f + q * s, 1)
                f = ii
                c = 1
        return (v if ok else float32(0)), f, s, c

    @cuda.jit(**opts)
    def k(M, N, P, Width, RF, RS, RC, dM, dN):
        Mds = cuda.shared.array((T, T), float32)
        Nds = cuda.shared.array((T, T), float32)
        bx = cuda.blockIdx.x
        by = cuda.blockIdx.y
        tx = cuda.threadIdx.x
        ty = cuda.threadIdx.y
        gt = (by * cuda.gridDim.x + bx) * (T * T) + ty * T + tx
        Row = by * T + ty
        Col = bx * T + tx
        f0 = np.int32(0)
        s0 = np.int32(0)
        c0 = np.int32(0)
        f1 = np.int32(0)
        s1 = np.int32(0)
        c1 = np.int32(0)
        Pvalue = float32(0)
        for ph in range((Width + T - 1) // T):
            v0, f0, s0, c0 = step(M, Row * Width + ph * T + tx, f0, s0, c0, dM)
            Mds[ty, tx] = v0
            v1, f1, s1, c1 = step(N, (ph * T + ty) * Width + Col, f1, s1, c1, dN)
            Nds[ty, tx] = v1
            cuda.syncthreads()
            for kk in range(T):
                Pvalue += Mds[ty, kk] * Nds[kk, tx]
            cuda.syncthreads()
        if Row < Width and Col < Width:
            P[Row * Width + Col] = Pvalue
        n = RF.shape[0] // 2
        RF[gt] = f0
        RS[gt] = s0
        RC[gt] = c0
        RF[n + gt] = f1
        RS[n + gt] = s1
        RC[n + gt] = c1

    return k


def expand(RF, RS, RC, n):
    """Per-element counts from runs (first, step, count): one bincount per distinct step."""
    out = np.zeros(n, np.int64)
    keep = RC > 0
    RF, RS, RC = RF[keep].astype(np.int64), RS[keep].astype(np.int64), RC[keep].astype(np.int64)
    one = (RC == 1) | (RS == 0)
    out += np.bincount(RF[one], weights=RC[one], minlength=n).astype(np.int64)[:n]
    RF, RS, RC = RF[~one], RS[~one], RC[~one]
    neg = RS < 0
    RF = np.where(neg, RF + (RC - 1) * RS, RF)
    RS = np.abs(RS)
    for s in np.unique(RS):
        m = RS == s
        f, c = RF[m], RC[m]
        span = n + s * 2
        span += (-span) % s
        d = np.bincount(f, minlength=span)[:span].astype(np.int64)
        e = f + c * s
        d -= np.bincount(e[e < span], minlength=span)[:span]
        out += np.cumsum(d.reshape(-1, s), axis=0).ravel()[:n]
    return out


def time_rle(Ws, Ts, caps):
    import time

    out = []
    rng = np.random.default_rng(0)
    for W in Ws:
        n = W * W
        M = cuda.to_device(rng.integers(0, 10, n).astype(np.float32))
        N = cuda.to_device(rng.integers(0, 10, n).astype(np.float32))
        P = cuda.device_array(n, np.float32)
        for T in Ts:
            g = (W + T - 1) // T
            grid, block = (g, g), (T, T)
            reps = 20 if W <= 2048 else 5
            plain = make(T, ld_plain, 32)
            r0 = cuda.to_device(np.zeros(1, np.int32))
            base = ev_time(lambda: plain[grid, block](M, N, P, W, r0, r0), reps)
            nt = g * g * T * T
            RF = cuda.device_array(2 * nt, np.int32)
            RS = cuda.device_array(2 * nt, np.int32)
            RC = cuda.device_array(2 * nt, np.int32)
            dM = cuda.to_device(np.zeros(n, np.int32))
            dN = cuda.to_device(np.zeros(n, np.int32))
            for cap in caps:
                k = make_rle(T, cap)
                k[grid, block](M, N, P, W, RF, RS, RC, dM, dN)
                cuda.synchronize()
                t0 = time.perf_counter()
                f, s_, c = RF.copy_to_host(), RS.copy_to_host(), RC.copy_to_host()
                t1 = time.perf_counter()
                cm = expand(f[:nt], s_[:nt], c[:nt], n) + dM.copy_to_host()
                cn = expand(f[nt:], s_[nt:], c[nt:], n) + dN.copy_to_host()
                t2 = time.perf_counter()
                okc = bool((cm == g).all() and (cn == g).all())
                ms = ev_time(lambda: k[grid, block](M, N, P, W, RF, RS, RC, dM, dN), reps)
                regs = None
                try:
                    regs = list(k.get_regs_per_thread().values())[0]
                except Exception:
                    pass
                print(
                    W,
                    T,
                    "rle",
                    cap,
                    round(ms, 3),
                    round(ms / base, 3),
                    "counts_ok",
                    okc,
                    "regs",
                    regs,
                    "copy_s",
                    round(t1 - t0, 3),
                    "expand_s",
                    round(t2 - t1, 3),
                    flush=True,
                )
                out.append(
                    dict(
                        W=W,
                        T=T,
                        variant="rle",
                        cap=cap,
                        ms=ms,
                        plain_ms=base,
                        ratio=ms / base,
                        counts_ok=okc,
                        regs=regs,
                        copy_s=t1 - t0,
                        expand_s=t2 - t1,
                    )
                )
    return out


def make_slice(T, rle):
    """The kernel's address slice: index arithmetic and control flow only (no loads, no
    products, no shared memory, no barriers), counting reads by atomics or by runs."""

    @cuda.jit(max_registers=32)
    def k(Width, nM, nN, rM, rN, RF, RS, RC):
        bx = cuda.blockIdx.x
        by = cuda.blockIdx.y
        tx = cuda.threadIdx.x
        ty = cuda.threadIdx.y
        Row = by * T + ty
        Col = bx * T + tx
        f0 = np.int32(0)
        s0 = np.int32(0)
        c0 = np.int32(0)
        f1 = np.int32(0)
        s1 = np.int32(0)
        c1 = np.int32(0)
        for ph in range((Width + T - 1) // T):
            i0 = Row * Width + ph * T + tx
            i1 = (ph * T + ty) * Width + Col
            if rle:
                if i0 >= 0 and i0 < nM:
                    if c0 == 0:
                        f0 = np.int32(i0)
                    elif c0 == 1:
                        s0 = np.int32(i0) - f0
                    c0 += 1
                if i1 >= 0 and i1 < nN:
                    if c1 == 0:
                        f1 = np.int32(i1)
                    elif c1 == 1:
                        s1 = np.int32(i1) - f1
                    c1 += 1
            else:
                if i0 >= 0 and i0 < nM:
                    cuda.atomic.add(rM, i0, 1)
                if i1 >= 0 and i1 < nN:
                    cuda.atomic.add(rN, i1, 1)
        if rle:
            gt = (by * cuda.gridDim.x + bx) * (T * T) + ty * T + tx
            n = RF.shape[0] // 2
            RF[gt] = f0
            RS[gt] = s0
            RC[gt] = c0
            RF[n + gt] = f1
            RS[n + gt] = s1
            RC[n + gt] = c1

    return k


def time_slice(Ws, Ts):
    out = []
    rng = np.random.default_rng(0)
    for W in Ws:
        n = W * W
        M = cuda.to_device(rng.integers(0, 10, n).astype(np.float32))
        N = cuda.to_device(rng.integers(0, 10, n).astype(np.float32))
        P = cuda.device_array(n, np.float32)
        for T in Ts:
            g = (W + T - 1) // T
            grid, block = (g, g), (T, T)
            reps = 20 if W <= 2048 else 5
            plain = make(T, ld_plain, 32)
            r0 = cuda.to_device(np.zeros(1, np.int32))
            base = ev_time(lambda: plain[grid, block](M, N, P, W, r0, r0), reps)
            nt = g * g * T * T
            RF = cuda.device_array(2 * nt, np.int32)
            RS = cuda.device_array(2 * nt, np.int32)
            RC = cuda.device_array(2 * nt, np.int32)
            rM = cuda.to_device(np.zeros(n, np.int32))
            rN = cuda.to_device(np.zeros(n, np.int32))
            for rle in (False, True):
                k = make_slice(T, rle)
                ms = ev_time(lambda: k[grid, block](W, n, n, rM, rN, RF, RS, RC), reps)
                print(
                    W,
                    T,
                    "slice-rle" if rle else "slice-atom",
                    round(ms, 3),
                    round(ms / base, 3),
                    flush=True,
                )
                out.append(
                    dict(
                        W=W,
                        T=T,
                        variant="slice-rle" if rle else "slice-atom",
                        ms=ms,
                        plain_ms=base,
                        ratio=ms / base,
                    )
                )
    return out


def time_log(Ws, Ts):
    out = []
    rng = np.random.default_rng(0)
    for W in Ws:
        n = W * W
        M = cuda.to_device(rng.integers(0, 10, n).astype(np.float32))
        N = cuda.to_device(rng.integers(0, 10, n).astype(np.float32))
        P = cuda.device_array(n, np.float32)
        for T in Ts:
            g = (W + T - 1) // T
            grid, block = (g, g), (T, T)
            reps = 20 if W <= 2048 else 5
            plain = make(T, ld_plain, 32)
            r0 = cuda.to_device(np.zeros(1, np.int32))
            base = ev_time(lambda: plain[grid, block](M, N, P, W, r0, r0), reps)
            nent = g * g * (T * T // 32) * g * 2 * 2
            L = cuda.device_array(nent, np.int64 if n > 2**31 else np.int32)
            rM = cuda.to_device(np.zeros(n, np.int32))
            for vote in (False, True):
                k = make_log(T, vote)
                ms = ev_time(lambda: k[grid, block](M, N, P, W, L, rM), reps)
                print(
                    W,
                    T,
                    "log",
                    "vote" if vote else "novote",
                    round(ms, 3),
                    round(ms / base, 3),
                    "entries",
                    nent,
                    "MB",
                    round(nent * L.dtype.itemsize / 2**20),
                    flush=True,
                )
                out.append(
                    dict(
                        W=W,
                        T=T,
                        variant="log-vote" if vote else "log",
                        ms=ms,
                        plain_ms=base,
                        ratio=ms / base,
                    )
                )
            # the histogram of the log: +1/-1 per entry into a difference array (one kernel)
            diff = cuda.to_device(np.zeros(n + 32, np.int32))
            half = 16

            @cuda.jit
            def hist(L, diff):
                e = cuda.grid(1)
                if e < L.shape[0]:
                    b = L[e]
                    cuda.atomic.add(diff, b, 1)
                    cuda.atomic.add(diff, b + half, -1)

            nb = (nent + 255) // 256
            ms = ev_time(lambda: hist[nb, 256](L, diff), reps)
            print(W, T, "hist", round(ms, 3), round(ms / base, 3), flush=True)
            out.append(dict(W=W, T=T, variant="hist", ms=ms, plain_ms=base, ratio=ms / base))
    return out


def ev_time(fn, reps):
    if not hasattr(cuda, "event_elapsed_time"):
        return 1.0
    s, e = cuda.event(), cuda.event()
    fn()
    cuda.synchronize()
    t = []
    for _ in range(reps):
        s.record()
        fn()
        e.record()
        e.synchronize()
        t.append(cuda.event_elapsed_time(s, e))
    return statistics.median(t)


def counts(name, dev, n):
    h = dev.copy_to_host()
    if name == "pair":
        return h.view(np.int32)[:n].astype(np.int64)
    if name == "run":
        return np.cumsum(h[:n].astype(np.int64))
    return h[:n].astype(np.int64)


def main():
    if sys.argv[3] == "slice":
        out = time_slice(
            [int(x) for x in sys.argv[1].split(",")], [int(x) for x in sys.argv[2].split(",")]
        )
        json.dump(out, open(os.path.join(os.environ.get("OUT", "."), "slice.json"), "w"), indent=1)
        return
    if sys.argv[3] == "rle":
        Ws = [int(x) for x in sys.argv[1].split(",")]
        Ts = [int(x) for x in sys.argv[2].split(",")]
        out = time_rle(Ws, Ts, [int(c) for c in sys.argv[4].split(",")])
        json.dump(out, open(os.path.join(os.environ.get("OUT", "."), "rle.json"), "w"), indent=1)
        return
    if sys.argv[3] == "log":
        Ws = [int(x) for x in sys.argv[1].split(",")]
        Ts = [int(x) for x in sys.argv[2].split(",")]
        out = time_log(Ws, Ts)
        json.dump(out, open(os.path.join(os.environ.get("OUT", "."), "log.json"), "w"), indent=1)
        return
    Ws = [int(x) for x in sys.argv[1].split(",")]
    Ts = [int(x) for x in sys.argv[2].split(",")]
    names = sys.argv[3].split(",")
    caps = [32, 0] if len(sys.argv) < 5 else [int(c) for c in sys.argv[4].split(",")]
    rng = np.random.default_rng(0)
    out = []
    kern = {}
    for T in Ts:
        for nm in ["plain"] + names:
            for cap in caps:
                try:
                    kern[T, nm, cap] = make(T, LOADS[nm], cap)
                except Exception as ex:
                    print("make", T, nm, cap, repr(ex)[:200], flush=True)
    for W in Ws:
        n = W * W
        Mh = rng.integers(0, 10, n).astype(np.float32)
        Nh = rng.integers(0, 10, n).astype(np.float32)
        M, N = cuda.to_device(Mh), cuda.to_device(Nh)
        P = cuda.device_array(n, np.float32)
        want = (
            (Mh.reshape(W, W).astype(np.float64) @ Nh.reshape(W, W)).ravel() if W <= 2048 else None
        )
        for T in Ts:
            g = (W + T - 1) // T
            grid, block = (g, g), (T, T)
            reps = 20 if W <= 2048 else 5
            base = None
            for nm in ["plain"] + names:
                for cap in caps:
                    kk = kern.get((T, nm, cap))
                    if kk is None:
                        continue
                    if nm == "pair":
                        rM, rN = (
                            cuda.to_device(np.zeros((n + 1) // 2, np.uint64)),
                            cuda.to_device(np.zeros((n + 1) // 2, np.uint64)),
                        )
                    elif nm == "run":
                        rM, rN = (
                            cuda.to_device(np.zeros(n + 1, np.int32)),
                            cuda.to_device(np.zeros(n + 1, np.int32)),
                        )
                    else:
                        rM, rN = (
                            cuda.to_device(np.zeros(n, np.int32)),
                            cuda.to_device(np.zeros(n, np.int32)),
                        )
                    try:
                        kk[grid, block](M, N, P, W, rM, rN)
                        cuda.synchronize()
                        cm = counts(nm, rM, n)
                        okc = True
                        if nm not in ("plain", "check"):
                            okc = bool((cm == g).all())
                        okp = (
                            True
                            if want is None
                            else bool(np.array_equal(P.copy_to_host(), want.astype(np.float32)))
                        )
                        ms = ev_time(lambda: kk[grid, block](M, N, P, W, rM, rN), reps)
                    except Exception as ex:
                        print(W, T, nm, cap, "ERR", repr(ex)[:300], flush=True)
                        continue
                    if nm == "plain" and base is None:
                        base = ms
                    regs = None
                    try:
                        regs = (
                            list(kk.get_regs_per_thread().values())[0]
                            if hasattr(kk, "get_regs_per_thread")
                            else None
                        )
                    except Exception:
                        pass
                    row = dict(
                        W=W,
                        T=T,
                        variant=nm,
                        cap=cap,
                        ms=ms,
                        ratio=ms / base,
                        counts_ok=okc,
                        P_ok=okp,
                        regs=regs,
                    )
                    out.append(row)
                    print(
                        W, T, nm, cap, round(ms, 3), round(ms / base, 3), okc, okp, regs, flush=True
                    )
    json.dump(out, open(os.path.join(os.environ.get("OUT", "."), "cnt.json"), "w"), indent=1)


main()
