"""Compile the kernels to PTX for a Hopper GPU (sm_90) on a machine without a GPU.

The compilation runs in a subprocess (this test process runs numba's
simulator, and a process compiles for one target only) with the GPU
target's variables (:func:`vizmm.record.targets.environment`): numba-cuda-mlir
when it is installed, else numba-cuda. Both compilers ask the current device
for its compute capability even when ``cc`` is given; :data:`PRELUDE` answers
for a stand-in device of compute capability 9.0.

Under NumPy 2.5 numba-cuda cannot compile (its ``np.row_stack`` overload);
then only numba-cuda-mlir can, and without it the tests are skipped with
that reason (:func:`compile_target`).
"""

import contextlib
import hashlib
import json
import os
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from vizmm.record import targets

#: Run first by every compile script: the target's cuda and typeof, and the stand-in device.
PRELUDE = """
import types as pytypes

from vizmm_kernels import _target

if _target.NAME == _target.MLIR:
    import numba_cuda_mlir.tools as _tools

    _tools._cached_cc = (9, 0)  # the compute capability it would ask the device for
elif _target.NAME == _target.LEGACY:
    import numba.cuda.dispatcher as _dispatcher

    _dispatcher.get_current_device = lambda: pytypes.SimpleNamespace(compute_capability=(9, 0))
else:
    raise SystemExit(f"compiling for a GPU needs a GPU target, not {_target.NAME}")
cuda, typeof = _target.cuda, _target.typeof
TARGET = _target.NAME
"""


def compile_target():
    """The target that compiles here, preferring numba-cuda-mlir; None and the reason if none."""
    software = targets.Software.here()
    reasons = []
    for target in (targets.MLIR, targets.LEGACY):
        found = targets.software_problem(target, software)
        if found is None:
            return target, None
        reasons.append(found)
    return None, "; ".join(reasons)


class _Job:
    """One compile script run in a subprocess, from a thread of its own: its result, later."""

    def __init__(
        self, target: str, script: str, args: tuple[str, ...], timeout: int, share: str = ""
    ):
        self.target, self.proc, self.result, self.share = target, None, None, share
        self.done = threading.Event()
        self.cmd = [sys.executable, "-c", PRELUDE + script, *args]
        self.env = dict(os.environ, **targets.environment(target))
        self.timeout = timeout

    def run(self) -> None:
        try:
            self.proc = subprocess.Popen(
                self.cmd,
                env=self.env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            # at the lowest priority: it compiles while the tests leave a core idle
            # (waiting on a page, a server or this result) instead of slowing the
            # tests that keep both busy
            with contextlib.suppress(OSError):
                os.setpriority(os.PRIO_PROCESS, self.proc.pid, 19)
            try:
                out, err = self.proc.communicate(timeout=self.timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                out, err = self.proc.communicate()
                err += f"\n(stopped after {self.timeout} s)"
            self.result = (self.proc.returncode, out, err)
        finally:
            if self.share:  # for the pytest-xdist workers (:func:`run`): written whole, then named
                path = os.path.join(self.share, _key(self.cmd[2], self.cmd[3:]))
                with open(path + ".tmp", "w", encoding="utf-8") as f:
                    json.dump(self.result or (1, "", "the compile did not run"), f)
                os.replace(path + ".tmp", path + ".json")
            self.done.set()

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()


#: The compiles started ahead (:func:`start`), by (script, args).
_JOBS: dict[tuple, _Job] = {}

#: How many compiles started ahead run at once (this machine's cores: two).
LANES = 2

#: The threads that run the compiles started ahead (:func:`start`).
_POOL: ThreadPoolExecutor | None = None

#: Where a pytest-xdist controller's compiles leave their results for the workers.
SHARE = "VIZMM_TEST_PTX_SHARE"


def _key(script: str, args) -> str:
    """A compile's file name in the shared folder: a digest of its script and arguments."""
    text = "\0".join([script, *args])
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def start(jobs, timeout: int = 900, share: str = "") -> None:
    """Start compile scripts ahead, two at a time in background threads.

    ``jobs``: (script, *args) tuples, as :func:`run` takes them. Each compile
    runs on one core while the tests go on, :data:`LANES` at a time;
    :func:`run` of the same script and arguments then waits for its result.
    Nothing starts where no target can compile (:func:`run` skips those
    tests). ``share``: a folder where each result is also written
    (``<digest>.json``) and each compile started is announced
    (``<digest>.started``), for the pytest-xdist workers, whose :func:`run`
    then waits for the file instead of compiling again.
    """
    target, _ = compile_target()
    if target is None:
        return
    queue = []
    for script, *args in jobs:
        key = (script, tuple(args))
        if key not in _JOBS:
            _JOBS[key] = _Job(target, script, tuple(args), timeout, share)
            queue.append(_JOBS[key])
            if share:
                open(os.path.join(share, _key(PRELUDE + script, args) + ".started"), "w").close()

    # two at a time, each on a core: when the tests leave both cores idle (the last
    # tests wait for these results), both compile
    global _POOL
    if _POOL is None:
        _POOL = ThreadPoolExecutor(max_workers=LANES, thread_name_prefix="ptx-compiles")
    for job in queue:
        _POOL.submit(job.run)


def stop() -> None:
    """Stop every compile started ahead and still running (the session is over)."""
    if _POOL is not None:
        _POOL.shutdown(wait=False, cancel_futures=True)  # those not started: never
    for job in _JOBS.values():
        job.stop()


def _shared_result(script: str, args, timeout: int):
    """The result the controller's compile wrote to the shared folder, waited for; None: none."""
    share = os.environ.get(SHARE, "")
    if not share:
        return None
    path = os.path.join(share, _key(PRELUDE + script, args))
    if not os.path.exists(path + ".started"):
        return None
    deadline = time.monotonic() + timeout
    while not os.path.exists(path + ".json"):  # a file another process writes: polled
        if time.monotonic() > deadline:
            return (1, "", f"no result from the controller's compile after {timeout} s")
        time.sleep(0.25)
    with open(path + ".json", encoding="utf-8") as f:
        return tuple(json.load(f))


def run(script: str, *args: str, timeout: int = 900) -> dict:
    """Run :data:`PRELUDE` then ``script`` for the compiling target; its last line as JSON.

    A compile started ahead (:func:`start`) is waited for, not run again.
    Skips the calling test when no target can compile here.
    """
    target, reason = compile_target()
    if target is None:
        pytest.skip(f"no compiler can build PTX here: {reason}")
    job = _JOBS.get((script, args))
    result = _shared_result(script, args, timeout) if job is None else None
    if result is not None:
        job = _Job(target, script, args, timeout)
        job.result = result
        job.done.set()
    elif job is None:
        job = _JOBS[(script, args)] = _Job(target, script, args, timeout)
        job.run()
    job.done.wait()
    assert job.result is not None, "the compile did not run"
    returncode, stdout, stderr = job.result
    assert returncode == 0, stderr[-4000:]
    out = json.loads(stdout.strip().splitlines()[-1])
    assert out.pop("target") == target
    return out
