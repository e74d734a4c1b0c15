"""Every kernel compiles to PTX for a Hopper GPU (sm_90), on a machine without a GPU.

The compilation runs in a subprocess with ``NUMBA_ENABLE_CUDASIM=0`` (this
test process runs numba's simulator, and numba picks its mode once per
process). numba-cuda asks the current device for its compute capability
when it compiles device functions even when ``cc`` is given; without a GPU
the subprocess answers for it with a stand-in device of compute capability
9.0.
"""

import json
import os
import subprocess
import sys
import textwrap

import pytest

TILE_WIDTHS = (1, 16, 32)
KERNELS = ("naive", "tiled", "boundary", "general", "uncoalesced", "conflict", "padded", "dynamic")
REGISTERS = ("%clock64", "%smid", "%globaltimer")

SCRIPT = textwrap.dedent(
    """
    import json, sys, types as pytypes

    import numba.cuda.dispatcher as dispatcher

    # No GPU here: answer numba-cuda's question about the current device.
    dispatcher.get_current_device = lambda: pytypes.SimpleNamespace(compute_capability=(9, 0))

    import numpy as np
    from numba import config, cuda, typeof

    import vizmm_kernels as K
    from vizmm.record.launcher import allocate_records

    assert not config.ENABLE_CUDASIM
    LOOK_FOR = ("%clock64", "%smid", "%globaltimer", "bar.sync", ".target sm_90", ".extern .shared")

    out = {}
    for name in sys.argv[1].split(","):
        j, k, l = (5, 6, 7) if name == "general" else (5, 5, 5)
        for tile_width in map(int, sys.argv[2].split(",")):
            for instrumented in (False, True):
                # The arguments of a launch, as vizmm.record passes them: M, N and P
                # flattened row-major (as in the book), the sizes, the record arrays.
                args = [np.zeros(j * k, np.float32), np.zeros(k * l, np.float32),
                        np.zeros(j * l, np.float32), *K.launch_dims(name, j, k, l, tile_width)]
                if instrumented:
                    rec, _ = allocate_records(j, k, l, tile_width, name, [(0, 0)], False)
                    args += list(rec.values())
                kern = K.get_kernel(name, tile_width, instrumented)
                sig = tuple(typeof(a) for a in args)
                ptx, _ = cuda.compile_ptx(kern.py_func, sig, cc=(9, 0))
                out[f"{name}/{tile_width}/{instrumented}"] = {s: s in ptx for s in LOOK_FOR}
    print(json.dumps(out))
    """
)


@pytest.fixture(scope="module")
def ptx_features():
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="0")
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT, ",".join(KERNELS), ",".join(map(str, TILE_WIDTHS))],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("tile_width", TILE_WIDTHS)
@pytest.mark.parametrize("kernel", KERNELS)
def test_plain_kernel_compiles(ptx_features, kernel, tile_width):
    found = ptx_features[f"{kernel}/{tile_width}/False"]
    assert found[".target sm_90"]
    # The plain kernels read no hardware register.
    assert not any(found[r] for r in REGISTERS)
    # __syncthreads() is bar.sync; the naive kernel (Fig. 3.11) has none.
    assert found["bar.sync"] == (kernel != "naive")
    # Fig. 5.14's extern __shared__ array: a zero-sized shared array in Numba.
    assert found[".extern .shared"] == (kernel == "dynamic")


@pytest.mark.parametrize("tile_width", TILE_WIDTHS)
@pytest.mark.parametrize("kernel", KERNELS)
def test_instrumented_kernel_reads_the_clocks(ptx_features, kernel, tile_width):
    found = ptx_features[f"{kernel}/{tile_width}/True"]
    assert found[".target sm_90"]
    for register in REGISTERS:
        assert found[register], register
    assert found["bar.sync"] == (kernel != "naive")
