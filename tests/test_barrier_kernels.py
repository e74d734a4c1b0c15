"""The barrier lab's kernels: the book's code with a barrier removed, plain and recorded.

The compiled PTX (sm_90, no GPU needed; numba-cuda-mlir when installed, else
numba-cuda, see ``tests/ptx.py``) has exactly the barriers kept: ``bar.sync``
counted in the unoptimized plain kernel and in the instrumenter's rewrites of
it (its full variant, and the lean one a GPU runs over the whole grid when
recording aggregated), and one more where the reads are recorded (the tags'
initialisation before the phase loop).
"""

import ast
import inspect
import textwrap

import ptx
import pytest

import vizmm_kernels as K
from vizmm_kernels import boundary, tiled

DROPS = [(), (1,), (2,), (1, 2)]


def _kernel_def(factory):
    """The ``def matrixMulKernel`` node inside a factory, as written in its module."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(factory)))
    return next(
        n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name != factory.__name__
    )


@pytest.mark.parametrize("name", K.BARRIER_KERNELS)
def test_both_barriers_are_behind_the_flags(name):
    """Each ``cuda.syncthreads()`` of the plain kernel sits under its own flag."""
    src = ast.unparse(_kernel_def({"tiled": tiled, "boundary": boundary}[name].make_plain))
    assert src.count("cuda.syncthreads()") == 2
    assert "if BARRIER_1:\n" in src and "if BARRIER_2:\n" in src


@pytest.mark.parametrize(
    "value, expect",
    [(None, ()), (1, (1,)), (2, (2,)), ((1, 2), (1, 2)), ([2, 1], (1, 2)), ((), ())],
)
def test_drop_barrier_values(value, expect):
    assert K.check_drop_barrier("tiled", value) == expect


@pytest.mark.parametrize("value", [0, 3, "1", True, (1, 3), 1.0])
def test_drop_barrier_refuses_bad_values(value):
    with pytest.raises(ValueError, match="drop_barrier"):
        K.check_drop_barrier("tiled", value)


def test_drop_barrier_only_where_there_are_barriers():
    with pytest.raises(ValueError, match="no __syncthreads"):
        K.get_kernel("naive", 2, drop_barrier=1)
    assert K.check_drop_barrier("naive", None) == ()


SCRIPT = textwrap.dedent(
    """
    import json

    import numpy as np

    import vizmm_kernels as K

    from vizmm.record import instrument as I
    from vizmm.record.instrument_trace import book_kernel

    f32 = np.float32
    out = {"target": TARGET}
    for name in ("tiled", "boundary"):
        for T in (2, 16):
            for drop in ((), (1,), (2,), (1, 2)):
                for instrumented in (False, "reads", True, "lean"):
                    args = [np.zeros(25, f32), np.zeros(25, f32), np.zeros(25, f32), 5]
                    kern = K.get_kernel(name, T, drop_barrier=drop)
                    if instrumented:
                        inst = book_kernel(name, T, drop, shared_loads=instrumented == "reads")
                        host = dict(zip(inst.params, args))
                        if instrumented == "lean":
                            rec = I.lean_layout(inst, (3, 3), host, 3).records()
                            kern = inst.lean
                        else:
                            rec = I._records(inst, (3, 3), (T, T), [(0, 0)], 4, host, False, 4, 3)
                            kern = inst.kernel
                        args += list(rec.values())
                    sig = tuple(typeof(a) for a in args)
                    # Unoptimized, each __syncthreads() kept is one bar.sync; optimized,
                    # LLVM may unroll the phase loop (at TILE_WIDTH 2) and copy them.
                    counts = []
                    for opt in (False, True):
                        ptx, _ = cuda.compile_ptx(kern.py_func, sig, cc=(9, 0), opt=opt)
                        counts.append(ptx.count("bar.sync"))
                    out[f"{name}/{T}/{','.join(map(str, drop))}/{instrumented}"] = counts
    print(json.dumps(out))
    """
)


def ptx_jobs() -> list[tuple[str, ...]]:
    """The compiles this module's tests read: (script, *args) for ``ptx.run``.

    ``tests/conftest.py`` starts them when the session's tests are chosen, so
    they compile while other tests run.
    """
    return [(SCRIPT,)]


@pytest.fixture(scope="module")
def barrier_counts():
    # numba-cuda-mlir when installed, else numba-cuda (tests/ptx.py)
    return ptx.run(*ptx_jobs()[0])


@pytest.mark.slow  # every variant compiled to PTX in a subprocess
@pytest.mark.parametrize("instrumented", [False, True, "reads", "lean"])
@pytest.mark.parametrize("drop", DROPS, ids=lambda d: "drop" + "".join(map(str, d)) or "both")
@pytest.mark.parametrize("T", [2, 16])
@pytest.mark.parametrize("name", ["tiled", "boundary"])
def test_compiled_kernel_has_the_barriers_kept(barrier_counts, name, T, drop, instrumented):
    # One bar.sync per __syncthreads() kept. The full variant adds one before the phase
    # loop when it logs a barrier (the block's clock of barrier tickets is set to 0 in
    # shared memory first), and so does recording the reads (the tags' initialisation;
    # the clock's shares it).
    kept = 2 - len(drop)
    want = kept + int(instrumented == "reads" or (instrumented is True and kept > 0))
    unoptimized, optimized = barrier_counts[f"{name}/{T}/{','.join(map(str, drop))}/{instrumented}"]
    assert unoptimized == want
    # The kernel as launched (optimized) has no barrier left exactly when none is kept.
    assert (optimized == 0) == (want == 0)
