"""Kernels rewritten by the instrumenter compile to PTX for a Hopper GPU (sm_90), without one.

The book's plain kernels and the test kernels in other styles
(``instrument_kernels.py``: 2-D arrays and ``cuda.grid``, a coarsened
kernel, N column-major, a read past the end, a thread-dependent loop) go
through :func:`vizmm.record.instrument.instrument` in a subprocess bound to
a GPU compiler (``tests/ptx.py``), with the shared loads logged and not:
the full variant (the log) and the lean one (counts only, what a GPU runs
over the whole grid when recording aggregated), each reading the clocks.
"""

import os
import textwrap

import ptx
import pytest

pytestmark = pytest.mark.slow  # one compile of every variant, in a subprocess

BOOK = ("naive", "tiled", "boundary", "general", "uncoalesced", "conflict", "padded", "dynamic")
STYLES = ("tiled_2d", "coarsened", "column_major_n", "past_the_end", "while_loop")
#: Students' files (tests/fixtures/student) recorded with check's provenance.
STUDENT = (
    "temporaries",
    "p_plus_equals",
    "atomic_p",
    "register_reuse",
    "double_buffer_3d",
    "device_functions",
    "shared_bound",
)

SCRIPT = textwrap.dedent(
    """
    import json, sys

    import numpy as np

    sys.path.insert(0, sys.argv[1])
    import instrument_kernels as IK
    import vizmm_kernels as K
    from vizmm.record import instrument as I

    out = {"target": TARGET}
    T = 16

    REGISTERS = ("%clock64", "%smid", "%globaltimer")

    def compile_one(inst, arrays, scalars):
        args = {**arrays, **scalars}
        out = {}
        for variant in ("full", "lean"):
            if variant == "full":
                rec = I._records(inst, (2, 2), (T, T), [(0, 0)], 8, arrays, False, 4, 2)
                kern = inst.kernel
            else:
                rec = I.lean_layout(inst, (2, 2), arrays, 2).records()
                kern = inst.lean
            values = [args[p] for p in inst.params] + list(rec.values())
            sig = tuple(typeof(a) for a in values)
            text, _ = cuda.compile_ptx(kern.py_func, sig, cc=(9, 0))
            found = {"bar.sync": "bar.sync" in text, "atom": "atom." in text}
            found["clocks"] = all(r in text for r in REGISTERS)
            out[variant] = dict(found, ok=".target sm_90" in text)
        return out

    for shared_loads in (False, True):
        for name in K.KERNEL_NAMES:
            plain = K.get_kernel(name, T)
            inst = I.instrument(plain, dynamic_shared=K.dynamic_shared_bytes(name, T),
                                shared_loads=shared_loads)
            j, k, l = (5, 6, 7) if name == "general" else (5, 5, 5)
            arrays = {"M": np.zeros(j * k, np.float32), "N": np.zeros(k * l, np.float32),
                      "P": np.zeros(j * l, np.float32)}
            scalars = dict(zip(inst.params[3:], K.launch_dims(name, j, k, l, T)))
            out[f"{name}/{shared_loads}"] = compile_one(inst, arrays, scalars)
        for name in sys.argv[2].split(","):
            inst = I.instrument(getattr(IK, name), shared_loads=shared_loads)
            arrays = {}
            for g, a in zip(inst.global_arrays, inst.arrays):
                arrays[g] = np.zeros((4, 4) if a.ndim == 2 else 16, np.float32)
            scalars = {p: 4 for p in inst.params if p not in arrays}
            out[f"{name}/{shared_loads}"] = compile_one(inst, arrays, scalars)
    # students' files read by the front end, with check's provenance (TERM / MOVE events)
    for name in sys.argv[3].split(","):
        path = f"{sys.argv[1]}/fixtures/student/{name}.py"
        inst = I.instrument(f"{path}:k", shared_loads=True, terms=True, first_arrays=3)
        arrays = {}
        for g, a in zip(inst.global_arrays, inst.arrays):
            arrays[g] = np.zeros((4, 4) if a.ndim == 2 else 16, np.float32)
        scalars = {p: 4 for p in inst.params if p not in arrays}
        out[f"{name}/terms"] = compile_one(inst, arrays, scalars)
    # the run expansion after a lean launch: one kernel over its two buffers
    from vizmm.record import instrument_device_runs as IDR

    sig = (typeof(np.zeros(4, np.int32)), typeof(np.zeros(4, np.int64)))
    text, _ = cuda.compile_ptx(IDR._expand_runs, sig, cc=(9, 0))
    out["expand_runs"] = {"ok": ".target sm_90" in text, "atom": "atom.global.add" in text}
    print(json.dumps(out))
    """
)


def ptx_jobs() -> list[tuple[str, ...]]:
    """The compiles this module's tests read: (script, *args) for ``ptx.run``.

    ``tests/conftest.py`` starts them when the session's tests are chosen, so
    they compile while other tests run.
    """
    return [(SCRIPT, os.path.dirname(__file__), ",".join(STYLES), ",".join(STUDENT))]


@pytest.fixture(scope="module")
def compiled():
    return ptx.run(*ptx_jobs()[0])


@pytest.mark.parametrize("shared_loads", (False, True))
@pytest.mark.parametrize("kernel", BOOK + STYLES)
@pytest.mark.parametrize("variant", ("full", "lean"))
def test_instrumented_kernel_compiles_for_the_gpu(compiled, kernel, shared_loads, variant):
    found = compiled[f"{kernel}/{shared_loads}"][variant]
    assert found["ok"]
    assert found["atom"]  # the global read counters (one atomic add per load)
    # the block's SM, times and clocks (%smid, %globaltimer, %clock64)
    assert found["clocks"]
    # __syncthreads() is bar.sync; kernels without one (and without shared arrays) have none
    assert found["bar.sync"] == (kernel not in ("naive", "past_the_end", "while_loop"))


@pytest.mark.parametrize("kernel", STUDENT)
def test_a_students_kernel_with_provenance_compiles_for_the_gpu(compiled, kernel):
    found = compiled[f"{kernel}/terms"]["full"]
    assert found["ok"] and found["atom"] and found["clocks"] and found["bar.sync"]


def test_the_run_expansion_compiles_for_the_gpu(compiled):
    # one kernel over the lean launch's two buffers, adding each run with atomics
    found = compiled["expand_runs"]
    assert found["ok"] and found["atom"]
