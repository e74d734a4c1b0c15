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

import json
import os
import subprocess
import sys

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


def run(script: str, *args: str, timeout: int = 900) -> dict:
    """Run :data:`PRELUDE` then ``script`` for the compiling target; its last line as JSON.

    Skips the calling test when no target can compile here.
    """
    target, reason = compile_target()
    if target is None:
        pytest.skip(f"no compiler can build PTX here: {reason}")
    env = dict(os.environ, **targets.environment(target))
    proc = subprocess.run(
        [sys.executable, "-c", PRELUDE + script, *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out.pop("target") == target
    return out
