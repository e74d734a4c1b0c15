"""Every kernel compiles to PTX for a Hopper GPU (sm_90), on a machine without a GPU.

The compilation runs in a subprocess, with numba-cuda-mlir when it is
installed and numba-cuda otherwise, answering for a stand-in device of
compute capability 9.0 (``tests/ptx.py``); skipped, with the reason, where
neither can compile (numba-cuda under NumPy 2.5 and no numba-cuda-mlir).
"""

import textwrap

import ptx
import pytest

pytestmark = pytest.mark.slow  # compiles in a subprocess

TILE_WIDTHS = (1, 16, 32)
KERNELS = ("naive", "tiled", "boundary", "general", "uncoalesced", "conflict", "padded", "dynamic")
REGISTERS = ("%clock64", "%smid", "%globaltimer")

SCRIPT = textwrap.dedent(
    """
    import json, sys

    import numpy as np

    import vizmm_kernels as K

    LOOK_FOR = ("%clock64", "%smid", "%globaltimer", "bar.sync", ".target sm_90")
    # Fig. 5.14's extern __shared__ array: numba-cuda declares ".extern .shared",
    # numba-cuda-mlir a "__dynamic_shmem__" symbol.
    DYNAMIC = (".extern .shared", "__dynamic_shmem__")

    out = {"target": TARGET}
    for name in sys.argv[1].split(","):
        j, k, l = (5, 6, 7) if name == "general" else (5, 5, 5)
        for tile_width in map(int, sys.argv[2].split(",")):
            # The arguments of a launch: M, N and P flattened row-major (as in the
            # book), the sizes.
            args = [np.zeros(j * k, np.float32), np.zeros(k * l, np.float32),
                    np.zeros(j * l, np.float32), *K.launch_dims(name, j, k, l, tile_width)]
            kern = K.get_kernel(name, tile_width)
            sig = tuple(typeof(a) for a in args)
            ptx, _ = cuda.compile_ptx(kern.py_func, sig, cc=(9, 0))
            found = {s: s in ptx for s in LOOK_FOR}
            found["dynamic shared"] = any(s in ptx for s in DYNAMIC)
            out[f"{name}/{tile_width}"] = found
    print(json.dumps(out))
    """
)


def ptx_jobs() -> list[tuple[str, ...]]:
    """The compiles this module's tests read: (script, *args) for ``ptx.run``.

    ``tests/conftest.py`` starts them when the session's tests are chosen, so
    they compile while other tests run.
    """
    return [(SCRIPT, ",".join(KERNELS), ",".join(map(str, TILE_WIDTHS)))]


@pytest.fixture(scope="module")
def ptx_features():
    return ptx.run(*ptx_jobs()[0])


@pytest.mark.parametrize("tile_width", TILE_WIDTHS)
@pytest.mark.parametrize("kernel", KERNELS)
def test_plain_kernel_compiles(ptx_features, kernel, tile_width):
    found = ptx_features[f"{kernel}/{tile_width}"]
    assert found[".target sm_90"]
    # The plain kernels read no hardware register.
    assert not any(found[r] for r in REGISTERS)
    # __syncthreads() is bar.sync; the naive kernel (Fig. 3.11) has none.
    assert found["bar.sync"] == (kernel != "naive")
    # Fig. 5.14's extern __shared__ array: a zero-sized shared array in Numba.
    assert found["dynamic shared"] == (kernel == "dynamic")
