"""The barrier lab's kernels: the book's code with a barrier removed, plain and instrumented.

* The instrumented kernels are the plain ones plus record calls: their
  syntax trees, with the record calls taken out, equal the plain kernels'.
* The compiled PTX (sm_90, no GPU needed; numba-cuda-mlir when installed,
  else numba-cuda, see ``tests/ptx.py``) has exactly the barriers kept:
  ``bar.sync`` counted in the unoptimized plain and instrumented kernels, and
  one more where the reads are recorded (the tags' initialisation before the
  phase loop).
"""

import ast
import inspect
import textwrap

import ptx
import pytest

import vizmm_kernels as K
from vizmm_kernels import boundary, tiled

DROPS = [(), (1,), (2,), (1, 2)]
# Names the instrumented kernels compute for the recording only.
RECORD_NAMES = {"slot", "bid", "tk", "nph", "Mtag", "Ntag", "mkind", "nkind", "pkind"}


def _kernel_def(factory):
    """The ``def matrixMulKernel`` node inside a factory, as written in its module."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(factory)))
    return next(
        n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name != factory.__name__
    )


class _StripRecords(ast.NodeTransformer):
    """Take the recording out of an instrumented kernel's syntax tree."""

    def visit_Expr(self, node):
        call = node.value
        if isinstance(call, ast.Call) and isinstance(call.func, ast.Name):
            if call.func.id.startswith("rec_"):
                return None
        return self.generic_visit(node)

    def visit_Assign(self, node):
        if all(isinstance(t, ast.Name) and t.id in RECORD_NAMES for t in node.targets):
            return None
        return self.generic_visit(node)

    def visit_If(self, node):
        # Fig. 5.9's recording guards the unchecked accesses it must not perform:
        # ``if mkind != OUT_OF_ALLOCATION: <the book's line>``.
        self.generic_visit(node)
        test = node.test
        if isinstance(test, ast.Name) and test.id == "READS":
            # The barrier lab's recording: with the record calls out, nothing is left
            # (the tags' initialisation) or both branches are the book's line (k loop).
            if not node.body and not node.orelse:
                return None
            assert [ast.dump(s) for s in node.body] == [ast.dump(s) for s in node.orelse]
            return node.orelse
        if isinstance(test, ast.Compare) and isinstance(test.left, ast.Name):
            if test.left.id in RECORD_NAMES:
                return node.body
        return node

    def visit_Call(self, node):
        self.generic_visit(node)
        if isinstance(node.func, ast.Name) and node.func.id == "rec_read":
            ds, _tag, r, c = node.args[-4:]
            return ast.Subscript(value=ds, slice=ast.Tuple([r, c], ast.Load()), ctx=ast.Load())
        return node


def _body_dump(fn_def):
    return [ast.dump(stmt) for stmt in fn_def.body]


@pytest.mark.parametrize("module", [tiled, boundary], ids=["tiled", "boundary"])
def test_instrumented_is_plain_plus_records(module):
    plain = _kernel_def(module.make_plain)
    inst = _StripRecords().visit(_kernel_def(module.make_instrumented))
    ast.fix_missing_locations(inst)
    # Same parameters up to Width; the record arrays follow.
    n = len(plain.args.args)
    assert [a.arg for a in inst.args.args[:n]] == [a.arg for a in plain.args.args]
    got, want = _body_dump(inst), _body_dump(plain)
    # Fig. 5.9's loop bound is written ceil(Width / TILE_WIDTH) in both (Section 5.5's
    # form; the same count when TILE_WIDTH divides Width): no difference left.
    assert got == want


@pytest.mark.parametrize("name", K.BARRIER_KERNELS)
def test_both_barriers_are_behind_the_flags(name):
    """Each ``cuda.syncthreads()`` of the plain kernel sits under its own flag."""
    src = ast.unparse(_kernel_def(getattr(K, name).make_plain))
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

    i32, i64, f32, i8 = np.int32, np.int64, np.float32, np.int8
    out = {"target": TARGET}
    for name in ("tiled", "boundary"):
        for T in (2, 16):
            for drop in ((), (1,), (2,), (1, 2)):
                for instrumented in (False, "reads", True):
                    args = [np.zeros(25, f32), np.zeros(25, f32), np.zeros(25, f32), 5]
                    if instrumented:
                        # detail, ld, pv, bar, bclk, ticks, spread, pw, blk, seq, mcount,
                        # ncount, zf, rd, rv: only the types matter here.
                        args += [np.zeros((1, 1), i32), np.zeros(1, i32), np.zeros(1, f32),
                                 np.zeros(1, i32), np.zeros(1, i64), np.zeros(1, i32),
                                 np.zeros(1, i64), np.zeros(1, i8), np.zeros(1, i64),
                                 np.zeros(1, i32), np.zeros(1, i32), np.zeros(1, i32),
                                 np.zeros(1, i32), np.zeros(1, i32), np.zeros(1, f32)]
                    kern = K.get_kernel(
                        name, T, bool(instrumented), drop_barrier=drop,
                        reads=instrumented == "reads",
                    )
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


@pytest.fixture(scope="module")
def barrier_counts():
    # numba-cuda-mlir when installed, else numba-cuda (tests/ptx.py)
    return ptx.run(SCRIPT)


@pytest.mark.parametrize("instrumented", [False, True, "reads"])
@pytest.mark.parametrize("drop", DROPS, ids=lambda d: "drop" + "".join(map(str, d)) or "both")
@pytest.mark.parametrize("T", [2, 16])
@pytest.mark.parametrize("name", ["tiled", "boundary"])
def test_compiled_kernel_has_the_barriers_kept(barrier_counts, name, T, drop, instrumented):
    # One bar.sync per __syncthreads() kept; recording the reads adds one before the phase
    # loop (the tags' initialisation).
    want = 2 - len(drop) + int(instrumented == "reads")
    unoptimized, optimized = barrier_counts[f"{name}/{T}/{','.join(map(str, drop))}/{instrumented}"]
    assert unoptimized == want
    # The kernel as launched (optimized) has no barrier left exactly when none is kept.
    assert (optimized == 0) == (want == 0)
