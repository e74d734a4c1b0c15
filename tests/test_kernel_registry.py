"""The kernel registry (vizmm.trace.kernels): one entry per kernel module, each property read
from the kernel itself.

The oracles are the kernels as printed (their source, read with ``ast``: the
parameters of ``matrixMulKernel``, its shared arrays), ``vizmm_kernels``' own
checks (which kernels the barrier lab may drop a ``__syncthreads()`` from), the
shipped register measurements and Section 5.6's shared-memory arithmetic.
"""

import ast
import json
import pathlib

import pytest

from vizmm.trace import kernels as reg

REPO = pathlib.Path(__file__).resolve().parents[1]
KERNEL_DIR = REPO / "kernels"
NOT_KERNELS = {"codes"}  # the record codes, not a kernel


def _kernel_modules() -> list[str]:
    return sorted(
        p.stem
        for p in KERNEL_DIR.glob("*.py")
        if not p.stem.startswith("_") and p.stem not in NOT_KERNELS
    )


def _kernel_def(name: str) -> ast.FunctionDef:
    """The first ``matrixMulKernel`` of kernels/<name>.py (the one ``make_plain`` builds)."""
    tree = ast.parse((KERNEL_DIR / f"{name}.py").read_text(encoding="utf-8"))
    make = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "make_plain")
    return next(
        n for n in ast.walk(make) if isinstance(n, ast.FunctionDef) and n.name == "matrixMulKernel"
    )


def _shared_arrays(fn: ast.FunctionDef) -> int:
    return sum(
        isinstance(n, ast.Call) and ast.unparse(n.func) == "cuda.shared.array" for n in ast.walk(fn)
    )


def test_every_kernel_module_is_registered_once():
    assert sorted(reg.KERNEL_SPECS) == _kernel_modules()
    assert all(name == spec.name for name, spec in reg.KERNEL_SPECS.items())


def test_the_kernels_package_lists_agree_with_the_registry():
    import vizmm_kernels as K

    assert tuple(K.KERNEL_NAMES) == tuple(reg.KERNEL_SPECS)
    assert dict(K.FIGURES) == {s.name: s.figure for s in reg.KERNEL_SPECS.values()}
    assert tuple(K.BARRIER_KERNELS) == reg.BARRIER_KERNELS


@pytest.mark.parametrize("name", _kernel_modules())
def test_each_property_is_the_kernels_own(name):
    import vizmm_kernels as K

    spec = reg.KERNEL_SPECS[name]
    fn = _kernel_def(name)
    params = [a.arg for a in fn.args.args]
    # tiles: the kernel allocates shared arrays (Mds, Nds, or Fig. 5.14's one extern array)
    assert spec.tiled == (_shared_arrays(fn) > 0)
    # square: one size, Width; the general kernel takes j, k and l
    assert spec.square == ("Width" in params and "j" not in params)
    # the barrier lab: vizmm_kernels itself lets a __syncthreads() be dropped
    try:
        K.check_drop_barrier(name, 1)
        droppable = True
    except ValueError:
        droppable = False
    assert spec.barriers == droppable


def test_the_occupancy_kernels_are_those_with_measured_registers():
    from vizmm.analysis import occupancy as occ

    data = json.loads((REPO / "vizmm/data/gpu-speed-h200.json").read_text(encoding="utf-8"))
    measured = {r["kernel"] for r in data["resources"]}
    assert set(reg.OCCUPANCY_KERNELS) == measured & set(reg.KERNEL_SPECS)
    assert occ.KERNEL_NAMES == reg.OCCUPANCY_KERNELS
    # Section 5.6: TILE_WIDTH 16 -> 256 threads; a tiled kernel's Mds and Nds are
    # 2 * 16 * 16 floats = 2048 bytes, the naive kernel holds none
    for name in reg.OCCUPANCY_KERNELS:
        want = 0 if name == "naive" else 2 * 16 * 16 * 4
        assert occ.kernel_resources(name, 16) == (256, want)
    with pytest.raises(occ.OccupancyError, match="unknown kernel 'padded'"):
        occ.kernel_resources("padded", 16)


def test_the_derived_lists_are_the_registry_filtered():
    from vizmm.trace import KERNELS, SQUARE_KERNELS, TILED_KERNELS

    specs = list(reg.KERNEL_SPECS.values())
    assert KERNELS == tuple(s.name for s in specs)
    for names, prop in (
        (TILED_KERNELS, "tiled"),
        (SQUARE_KERNELS, "square"),
        (reg.BARRIER_KERNELS, "barriers"),
        (reg.OCCUPANCY_KERNELS, "occupancy"),
    ):
        assert names == tuple(s.name for s in specs if getattr(s, prop)), prop
    # the barrier lab's refusal names the registry's barrier kernels
    import vizmm

    with pytest.raises(vizmm.RecordError, match="use 'tiled' or 'boundary'"):
        vizmm.record(width=4, tile_width=2, kernel="naive", reads=True, backend="simulator")
