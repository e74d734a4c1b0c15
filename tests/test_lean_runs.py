"""The lean variant counts a loop's affine reads once, after the loop (instrument_runs).

Two oracles, both independent of the code under test:

* which loads the rewrite may count once per loop, derived by hand
  from the rule (a load on every iteration, its index affine in the loop
  variable, nothing in it changed by the loop);
* the read counts of the lean variant (the runs added in after the launch),
  run in Numba's simulator, against every thread's index enumerated in plain
  Python from the kernel's formula (a hand derivation, not the rewrite).
"""

from __future__ import annotations

import ast
import itertools
import textwrap

import numpy as np
import pytest

from vizmm.record import instrument as I
from vizmm.record.instrument_runs import plan


def _loop(src: str) -> ast.For:
    tree = ast.parse(textwrap.dedent(src))
    return next(n for n in ast.walk(tree) if isinstance(n, ast.For))


def _covered(src: str, arrays=("M", "N")) -> list[str]:
    loop = _loop(src)
    _, _, covered = plan(loop, set(arrays))
    loads = [n for n in ast.walk(loop) if isinstance(n, ast.Subscript) and id(n) in covered]
    return [ast.unparse(n) for n in loads]


def test_the_tiled_kernels_two_loads_are_runs():
    # Fig. 5.9 lines 9-10: both tile loads, every phase, index affine in ph.
    src = """
    for ph in range(Width // TILE_WIDTH):
        Mds[ty, tx] = M[Row * Width + ph * TILE_WIDTH + tx]
        Nds[ty, tx] = N[(ph * TILE_WIDTH + ty) * Width + Col]
        cuda.syncthreads()
        for k in range(TILE_WIDTH):
            Pvalue += Mds[ty, k] * Nds[k, tx]
        cuda.syncthreads()
    """
    assert _covered(src) == [
        "M[Row * Width + ph * TILE_WIDTH + tx]",
        "N[(ph * TILE_WIDTH + ty) * Width + Col]",
    ]


def test_the_naive_kernels_loads_and_two_dimensional_ones_are_runs():
    assert _covered(
        """
        for k in range(Width):
            Pvalue += M[Row * Width + k] * N[k * Width + Col]
        """
    ) == ["M[Row * Width + k]", "N[k * Width + Col]"]
    assert _covered(
        """
        for k in range(1, n, 2):
            acc += M[row, k] * N[-k + 2 * n, col]
        """
    ) == ["M[row, k]", "N[-k + 2 * n, col]"]


def test_loads_under_affine_tests_are_runs_and_the_else_is_not():
    # Fig. 5.13: each tile load under a test of comparisons affine in ph; the else's
    # zero-fill reads nothing; a load in an else is not one.
    src = """
    for ph in range((Width + T - 1) // T):
        if Row < Width and ph * T + tx < Width:
            Mds[ty, tx] = M[Row * Width + ph * T + tx]
        else:
            Mds[ty, tx] = N[0]
        if 0 <= ph * T + ty < Width and Col < Width:
            if ph > 1:
                Nds[ty, tx] = N[(ph * T + ty) * Width + Col]
    """
    assert _covered(src) == [
        "M[Row * Width + ph * T + tx]",
        "N[(ph * T + ty) * Width + Col]",
    ]


@pytest.mark.parametrize(
    "src",
    [
        # tests that are not a conjunction of affine comparisons
        """
        for ph in range(n):
            if Row != Width:
                x = M[Row * Width + ph]
        """,
        """
        for ph in range(n):
            if Row < Width or ph < 2:
                x = M[Row * Width + ph]
        """,
        """
        for ph in range(n):
            if ph * ph < Width:
                x = M[ph]
        """,
        """
        for ph in range(n):
            if M[ph] > 0:
                x = N[ph]
        """,
        # the loop may stop early
        """
        for ph in range(n):
            Mds[ty, tx] = M[Row * Width + ph * T + tx]
            if ph == 3:
                break
        """,
        # not affine: a product of the loop variable with itself, a division
        """
        for ph in range(n):
            x = M[ph * ph]
        """,
        """
        for ph in range(n):
            x = M[ph // 2]
        """,
        # a name the loop changes
        """
        for ph in range(n):
            x = M[base + ph]
            base += 1
        """,
        # an index read from memory
        """
        for ph in range(n):
            x = M[idx[ph]]
        """,
        # a step that is not a positive constant, a bound read from memory
        """
        for ph in range(0, n, s):
            x = M[ph]
        """,
        """
        for ph in range(N[0]):
            x = M[ph]
        """,
        # a conditional expression, a short circuit
        """
        for ph in range(n):
            x = M[ph] if ph < 3 else 0.0
        """,
        """
        for ph in range(n):
            x = ok and M[ph] > 0
        """,
        # the loop variable reassigned in the body
        """
        for ph in range(n):
            ph = ph + 1
            x = M[ph]
        """,
    ],
)
def test_loads_the_rule_does_not_cover_stay_counted_read_by_read(src):
    assert _covered(src) == []


def test_a_loop_of_a_shared_array_is_not_a_run():
    assert _covered("for k in range(T):\n    acc += Mds[ty, k]\n") == []


# ---------------------------------------------------------------- the counts, in the simulator

KERNELS = {
    # Fig. 5.9 as printed, Width not a multiple of TILE_WIDTH: the loads run past a row's
    # end into the next row and past the array's end (counted only inside the array).
    "tiled": (
        """
        def k(M, N, P, Width):
            Mds = cuda.shared.array((T, T), float32)
            Nds = cuda.shared.array((T, T), float32)
            tx = cuda.threadIdx.x
            ty = cuda.threadIdx.y
            Row = cuda.blockIdx.y * T + ty
            Col = cuda.blockIdx.x * T + tx
            Pvalue = float32(0)
            for ph in range((Width + T - 1) // T):
                Mds[ty, tx] = M[Row * Width + ph * T + tx]
                Nds[ty, tx] = N[(ph * T + ty) * Width + Col]
                cuda.syncthreads()
                for kk in range(T):
                    Pvalue += Mds[ty, kk] * Nds[kk, tx]
                cuda.syncthreads()
            if Row < Width and Col < Width:
                P[Row * Width + Col] = Pvalue
        """,
        lambda W, T, by, bx, ty, tx: (
            [("M", (by * T + ty) * W + ph * T + tx) for ph in range((W + T - 1) // T)]
            + [("N", (ph * T + ty) * W + bx * T + tx) for ph in range((W + T - 1) // T)]
        ),
    ),
    # Backwards, from before the array's start, with a start and a step; an index the
    # loop does not change (read c times at one element).
    "backwards": (
        """
        def k(M, N, P, Width):
            tx = cuda.threadIdx.x
            ty = cuda.threadIdx.y
            acc = float32(0)
            for j in range(1, Width + 2, 2):
                acc += M[Width * Width + 3 - 4 * j - tx] + N[ty * Width]
            P[ty * Width + tx] = acc
        """,
        lambda W, T, by, bx, ty, tx: (
            [("M", W * W + 3 - 4 * j - tx) for j in range(1, W + 2, 2)]
            + [("N", ty * W) for j in range(1, W + 2, 2)]
        ),
    ),
    # Trip counts that differ by thread: runs that start at the same element with other
    # lengths (one thread's shape claims the element; the others count read by read).
    "ragged": (
        """
        def k(M, N, P, Width):
            tx = cuda.threadIdx.x
            ty = cuda.threadIdx.y
            acc = float32(0)
            for j in range(ty + tx):
                acc += M[2 * j] + N[j * Width + tx % 2]
            P[ty * Width + tx] = acc
        """,
        lambda W, T, by, bx, ty, tx: (
            [("M", 2 * j) for j in range(ty + tx)] + [("N", j * W + tx % 2) for j in range(ty + tx)]
        ),
    ),
    # Fig. 5.13: the tile loads under the boundary tests; M's test in a chain.
    "boundary": (
        """
        def k(M, N, P, Width):
            Mds = cuda.shared.array((T, T), float32)
            Nds = cuda.shared.array((T, T), float32)
            tx = cuda.threadIdx.x
            ty = cuda.threadIdx.y
            Row = cuda.blockIdx.y * T + ty
            Col = cuda.blockIdx.x * T + tx
            Pvalue = float32(0)
            for ph in range((Width + T - 1) // T):
                if Row < Width and 0 <= ph * T + tx < Width:
                    Mds[ty, tx] = M[Row * Width + ph * T + tx]
                else:
                    Mds[ty, tx] = float32(0)
                if ph * T + ty < Width and Col < Width:
                    Nds[ty, tx] = N[(ph * T + ty) * Width + Col]
                else:
                    Nds[ty, tx] = float32(0)
                cuda.syncthreads()
                for kk in range(T):
                    Pvalue += Mds[ty, kk] * Nds[kk, tx]
                cuda.syncthreads()
            if Row < Width and Col < Width:
                P[Row * Width + Col] = Pvalue
        """,
        lambda W, T, by, bx, ty, tx: (
            [
                ("M", (by * T + ty) * W + ph * T + tx)
                for ph in range((W + T - 1) // T)
                if by * T + ty < W and 0 <= ph * T + tx < W
            ]
            + [
                ("N", (ph * T + ty) * W + bx * T + tx)
                for ph in range((W + T - 1) // T)
                if ph * T + ty < W and bx * T + tx < W
            ]
        ),
    ),
    # A window of iterations from both sides, strict and not, nested; and a test on a
    # fraction (not a whole number: those reads are counted in the loop, one by one).
    "windows": (
        """
        def k(M, N, P, Width):
            tx = cuda.threadIdx.x
            ty = cuda.threadIdx.y
            x = float32(tx) + float32(0.5)
            acc = float32(0)
            for j in range(Width + 3):
                if j >= ty and 3 * j < Width + 4 + tx:
                    if j - 1 > tx - 2:
                        acc += M[j * Width + tx]
                if j > x:
                    acc += N[ty * Width + j]
            P[ty * Width + tx] = acc
        """,
        lambda W, T, by, bx, ty, tx: (
            [
                ("M", j * W + tx)
                for j in range(W + 3)
                if j >= ty and 3 * j < W + 4 + tx and j - 1 > tx - 2
            ]
            + [("N", ty * W + j) for j in range(W + 3) if j > tx + 0.5]
        ),
    ),
}


def _counts_by_hand(formula, W, T, grid):
    want = {a: np.zeros(W * W, np.int64) for a in ("M", "N")}
    for by, bx, ty, tx in itertools.product(range(grid), range(grid), range(T), range(T)):
        for a, i in formula(W, T, by, bx, ty, tx):
            if 0 <= i < W * W:  # lg_load counts a read inside the array only
                want[a][i] += 1
    return want


@pytest.mark.parametrize("name", sorted(KERNELS))
@pytest.mark.parametrize(("W", "T"), [(5, 2), (7, 3)])
def test_lean_counts_equal_every_read_counted_by_hand(name, W, T):
    from vizmm_kernels import _target

    if _target.NAME != _target.SIMULATOR:
        pytest.skip("runs the lean variant in Numba's simulator")
    src, formula = KERNELS[name]
    inst = I.instrument(textwrap.dedent(src), constants={"T": T}, shared_loads=False)
    assert set(inst.lean_runs) == {"M", "N"}  # the rule covers every load of these kernels
    grid = (W + T - 1) // T
    args = [
        np.arange(W * W, dtype=np.float32),
        np.ones(W * W, np.float32),
        np.zeros(W * W, np.float32),
        W,
    ]
    layout = I.lean_layout(inst, (grid, grid), dict(zip(inst.params, args, strict=True)), grid)
    rec = layout.records()
    inst.lean[(grid, grid), (T, T)](*args, *rec.values())
    I.expand_lean_runs(layout, rec)
    got = layout.views(rec)
    want = _counts_by_hand(formula, W, T, grid)
    for a in ("M", "N"):
        np.testing.assert_array_equal(got[f"_reads_{a}"], want[a], err_msg=a)
    # the runs lie last in each buffer, dropped after the expansion: nothing copies them back
    assert "_mult_M" not in got and "_code_N" not in got
    assert rec["_r32"].nbytes == 4 * (1 + grid * grid * grid * len(inst.arrays) + 3 * W * W)


def _lean_p(src: str, args: list, grid: int, T: int):
    """P after the lean variant of ``src`` in Numba's simulator."""
    inst = I.instrument(textwrap.dedent(src), constants={"T": T}, shared_loads=False)
    layout = I.lean_layout(inst, (grid, grid), dict(zip(inst.params, args, strict=True)), grid)
    inst.lean[(grid, grid), (T, T)](*args, *layout.records().values())
    return args[2]


def test_a_load_moved_first_still_reads_what_the_loop_stored_before_it():
    # The lean variant issues a run's loads at the top of each iteration (hoist_peeks),
    # except from an array the loop writes: here thread 0 stores M[j] = j + 1 and then
    # reads it back, so P = 1 + 2 + ... + W (by hand), not the 0s M held before.
    from vizmm_kernels import _target

    if _target.NAME != _target.SIMULATOR:
        pytest.skip("runs the lean variant in Numba's simulator")
    src = """
    def k(M, N, P, Width):
        tx = cuda.threadIdx.x
        ty = cuda.threadIdx.y
        acc = float32(0)
        for j in range(Width):
            if tx == 0 and ty == 0:
                M[j] = float32(j + 1)
            acc += M[j]
        if tx == 0 and ty == 0:
            P[0] = acc
    """
    W = 6
    args = [
        np.zeros(W * W, np.float32),
        np.zeros(W * W, np.float32),
        np.zeros(W * W, np.float32),
        W,
    ]
    assert _lean_p(src, args, 1, 1)[0] == W * (W + 1) // 2


def test_the_lean_records_lie_in_two_buffers_where_derived_by_hand():
    # Fig. 5.9 at Width 5, TILE_WIDTH 2: a 3 x 3 grid (9 blocks), 3 phases, 5 arrays
    # (M, N, P, Mds, Nds), M and N counted as runs. By hand, from the documented layout:
    # _r64 = header (1 + 4 * 2 = 9), _blk (9 * 6 = 54), _code_M (25), _code_N (25);
    # _r32 = _seq (1), _zf (9 * 3 * 5 = 135), _reads_M, _reads_N, _reads_P, _mult_M,
    # _mult_N (25 each).
    src, _ = KERNELS["tiled"]
    inst = I.instrument(textwrap.dedent(src), constants={"T": 2}, shared_loads=False)
    arrays = {g: np.zeros(25, np.float32) for g in ("M", "N", "P")}
    layout = I.lean_layout(inst, (3, 3), arrays, 3)
    assert layout.where == {
        "_blk": ("_r64", 9, 63),
        "_code_M": ("_r64", 63, 88),
        "_code_N": ("_r64", 88, 113),
        "_seq": ("_r32", 0, 1),
        "_zf": ("_r32", 1, 136),
        "_reads_M": ("_r32", 136, 161),
        "_reads_N": ("_r32", 161, 186),
        "_reads_P": ("_r32", 186, 211),
        "_mult_M": ("_r32", 211, 236),
        "_mult_N": ("_r32", 236, 261),
    }
    assert layout.sizes == {"_r64": 113, "_r32": 261}
    assert layout.kept == {"_r64": 63, "_r32": 211}  # the runs are not copied back
    rec = layout.records()
    # the header the expansion reads: 2 run arrays, each (mult, code, reads, size)
    assert rec["_r64"][:9].tolist() == [2, 211, 63, 136, 25, 236, 88, 161, 25]
    assert (rec["_r64"][9:63] == -1).all() and not rec["_r64"][63:].any()  # _blk unread
    assert not rec["_r32"].any() and rec["_zph"] == 3
    views = layout.views({"_r64": rec["_r64"][:63], "_r32": rec["_r32"][:211]})
    assert sorted(views) == ["_blk", "_reads_M", "_reads_N", "_reads_P", "_seq", "_zf"]


def test_a_lean_buffer_past_int32_offsets_is_refused_before_anything_is_allocated():
    src, _ = KERNELS["tiled"]
    inst = I.instrument(textwrap.dedent(src), constants={"T": 2}, shared_loads=False)
    # 2**31 elements of M alone, given as a size (nothing that large is made)
    big = np.broadcast_to(np.float32(0), (2**31,))
    with pytest.raises(I.InstrumentError, match="at most 2\\*\\*31 - 1"):
        I.lean_layout(inst, (1, 1), {"M": big, "N": big[:1], "P": big[:1]}, 1)
