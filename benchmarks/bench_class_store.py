"""What the class store sustains: students' polls and seat stamps from several processes.

Run from the repository root::

    .venv/bin/python benchmarks/bench_class_store.py                      # SQLite, in a temp dir
    .venv/bin/python benchmarks/bench_class_store.py --store redis://127.0.0.1:6379/15
    .venv/bin/python benchmarks/bench_class_store.py --students 200 --procs 4 --seconds 20

Two parts, each with ``--procs`` server processes (spawned, as ``vizmm
serve --num-procs`` runs them) sharing one class:

* **a class**: ``--students`` students split between the processes, each
  acting as a page does: read the class every 0.25 s, stamp the seat every
  2 s, answer the open question once. One thread per process runs all its
  students' timers, as a server process's event loop runs its pages'
  callbacks. Prints the reads and writes per second done (what the class
  needs: 4 reads and 0.5 writes per student and second) and the latency of
  each (median, 99th percentile, maximum).
* **flat out**: the same processes reading and stamping with no pause (8
  reads to 1 stamp, a page's ratio): the most the store does per second on
  this machine.

Redis counts the transactions tried again after a conflict (``WATCH``).
"""

from __future__ import annotations

import argparse
import heapq
import multiprocessing
import os
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from vizmm.serve import classes as S  # noqa: E402

POLL_S = 0.25
STAMP_S = 2.0


def _stamp(seat: str, page: str):
    def change(cls):
        cls["seats"][seat] = {"seen": time.time(), "page": page}
        return True

    return change


def _answer(seat: str):
    def change(cls):
        if cls["revealed"]:
            return False
        cls["answers"][seat] = [["M", 0, 0]]
        return True

    return change


def _count_retries(store) -> list:
    """Count the Redis store's retries (its ``_retry`` calls) in a one-item list."""
    counter = [0]
    if isinstance(store, S.RedisStore):
        retry = store._retry

        def counted(tries):
            counter[0] += 1
            retry(tries)

        store._retry = counted
    return counter


def _worker(spec, code, name, students, seconds, flat, out):
    """One server process: one thread runs every student's timers, as its event loop does."""
    store = S.open_store(spec)
    retries = _count_retries(store)
    reads, writes = [], []
    seats = [(f"{name}-{i}", os.urandom(4).hex()) for i in range(students)]
    for seat, page in seats:
        store.update(code, _stamp(seat, page), bump=False)
    start = time.monotonic()
    stop_at = start + seconds
    # (when, what, which student): polls spread over the first 0.25 s, stamps over 2 s
    timers = [(start + POLL_S * i / students, "poll", i) for i in range(students)]
    timers += [(start + STAMP_S * i / students, "stamp", i) for i in range(students)]
    timers += [(start + 1.0 + i / students, "answer", i) for i in range(students)]
    heapq.heapify(timers)
    n = 0
    while True:
        if flat:
            when, what, i = 0.0, ("stamp" if n % 9 == 8 else "poll"), n % students
            n += 1
            if time.monotonic() >= stop_at:
                break
        else:
            when, what, i = heapq.heappop(timers)
            if when >= stop_at:
                break
            time.sleep(max(0.0, when - time.monotonic()))
        seat, page = seats[i]
        t0 = time.perf_counter()
        if what == "poll":
            store.get(code)
            reads.append(time.perf_counter() - t0)
        elif what == "stamp":
            store.update(code, _stamp(seat, page), bump=False)
            writes.append(time.perf_counter() - t0)
        else:
            store.update(code, _answer(seat))
            writes.append(time.perf_counter() - t0)
        if not flat and what != "answer":
            heapq.heappush(timers, (when + (POLL_S if what == "poll" else STAMP_S), what, i))
    out.put((reads, writes, retries[0]))


def _ms(xs: list[float]) -> str:
    if not xs:
        return "-"
    xs = sorted(xs)
    p99 = xs[min(len(xs) - 1, int(0.99 * len(xs)))]
    median = statistics.median(xs)
    return f"median {median * 1e3:.2f} ms, p99 {p99 * 1e3:.2f}, max {xs[-1] * 1e3:.1f}"


def run(spec: str, procs: int, students: int, seconds: float, flat: bool) -> None:
    """One part: print reads and writes per second and their latencies."""
    store = S.open_store(spec)
    code = store.create({"source": "fig5-8", "step": 0})["code"]

    def ask(cls):
        cls["question"] = {"source": "fig5-8", "block": [0, 0], "index": 0, "count": 9}
        return True

    store.update(code, ask)
    ctx = multiprocessing.get_context("spawn")
    out = ctx.Queue()
    per = [students // procs + (i < students % procs) for i in range(procs)]
    ps = [
        ctx.Process(target=_worker, args=(spec, code, f"p{i}", n, seconds, flat, out))
        for i, n in enumerate(per)
    ]
    for p in ps:
        p.start()
    results = [out.get(timeout=seconds + 120) for _ in ps]
    for p in ps:
        p.join()
    reads = [x for r, _, _ in results for x in r]
    writes = [x for _, w, _ in results for x in w]
    retries = sum(n for _, _, n in results)
    label = "flat out" if flat else "a class"
    print(
        f"{label}: {procs} processes, {students} students, {seconds:.0f} s: "
        f"{len(reads) / seconds:.0f} reads/s, {len(writes) / seconds:.0f} writes/s"
        + (f", {retries} Redis retries" if isinstance(store, S.RedisStore) else "")
    )
    print(f"  read:  {_ms(reads)}")
    print(f"  write: {_ms(writes)}")
    final = store.get(code)
    print(f"  the class: {len(final['seats'])} seats, {len(final['answers'])} answers")


def main() -> None:
    """Parse the arguments and run both parts."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--store", default="", help="VIZMM_CLASS_STORE (default: SQLite in a temp dir)")
    ap.add_argument("--procs", type=int, default=2)
    ap.add_argument("--students", type=int, default=100)
    ap.add_argument("--seconds", type=float, default=10.0)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        spec = args.store or f"sqlite://{tmp}/classes.db"
        print(f"store: {S.open_store(spec)!r}, {os.cpu_count()} CPUs")
        run(spec, args.procs, args.students, args.seconds, flat=False)
        run(spec, args.procs, args.students, args.seconds, flat=True)


if __name__ == "__main__":
    main()
