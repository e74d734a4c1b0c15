"""Fig. 5.14: the tiled kernel with dynamically sized shared memory (Section 5.6).

Oracles: the Fig. 5.13 kernel's records for the same launch (Fig. 5.14 only
changes where Mds and Nds live), NumPy's product, and the book's byte
arithmetic (``2 x 16 x 16 x 4 = 2048`` bytes for a 16 x 16 tile).
"""

import numpy as np
import pytest

import vizmm
from vizmm.replay.block import Sub, source_lines

FIELDS = ("loads", "p_write", "m_reads", "n_reads", "zero_fills", "pvalue", "P")


@pytest.mark.parametrize("width, tile_width", [(4, 2), (5, 2), (7, 4), (3, 1)])
def test_its_records_equal_fig_5_13s_for_the_same_launch(width, tile_width):
    kw = dict(width=width, tile_width=tile_width, backend="simulator", seed=width, quiet=True)
    dyn = vizmm.record(kernel="dynamic", **kw)
    ref = vizmm.record(kernel="boundary", **kw)
    for field in FIELDS:
        a, b = getattr(dyn, field), getattr(ref, field)
        assert a.shape == b.shape and np.array_equal(a, b, equal_nan=True), field
    assert np.array_equal(dyn.P, dyn.M.astype(np.float64) @ dyn.N)
    assert dyn.meta["figure"] == "Fig. 5.14"


def test_shared_memory_is_the_launch_parameter_the_book_computes():
    import vizmm_kernels as K

    # Section 5.6: "for a 16x16 tile, we have a size of 2 x 16 x 16 x 4 = 2048 bytes",
    # passed as size/2 = 1024 bytes for each of Mds and Nds.
    assert K.dynamic_shared_bytes("dynamic", 16) == 2048
    assert K.launch_dims("dynamic", 9, 9, 9, 16) == (9, 1024, 1024)
    assert K.dynamic_shared_bytes("boundary", 16) == 0
    with pytest.raises(ValueError, match="TILE_WIDTH"):
        K.launch_dims("dynamic", 9, 9, 9, None)


def test_its_source_is_the_one_shown_and_its_steps_are_found():
    t = vizmm.record(width=4, tile_width=2, kernel="dynamic", backend="simulator", quiet=True)
    src = t.meta["source"]
    assert "cuda.shared.array(0, float32)" in src  # extern __shared__ float Mds_Nds[]
    assert "Mds[ty * TILE_WIDTH + tx] = M[" in src
    lines = src.splitlines()
    found = source_lines(src)
    assert "Mds[ty * TILE_WIDTH + tx] = M[" in lines[found[Sub.LOAD_M]]
    assert "Nds[ty * TILE_WIDTH + tx] = N[" in lines[found[Sub.LOAD_N]]
    assert "float32(0)" in lines[found["zero_m"]]
    assert lines[found[Sub.ARRIVE_1]].strip() == "cuda.syncthreads()"


def test_tile_width_from_a_device_preset_in_the_simulator():
    from vizmm_kernels.dynamic import choose_tile_width

    # By hand from the book's A100 figures: TILE_WIDTH 32 is 1024 threads and 8 KB
    # (+1 KB reserved) a block; 2 blocks fill the 2048 thread slots.
    a100 = {
        "MAX_THREADS_PER_BLOCK": 1024,
        "MAX_SHARED_MEMORY_PER_BLOCK": 48 * 1024,
        "MAX_THREADS_PER_MULTIPROCESSOR": 2048,
        "MAX_BLOCKS_PER_MULTIPROCESSOR": 32,
        "MAX_SHARED_MEMORY_PER_MULTIPROCESSOR": 164 * 1024,
        "RESERVED_SHARED_MEMORY_PER_BLOCK": 1024,
    }
    assert choose_tile_width(a100) == 32
    # A device of 16 KB per SM, 4 KB per block: 2 * T * T * 4 <= 4096 -> T <= 22;
    # T = 16 (2 KB + 1 KB) fits 5 blocks = 1280 threads, T = 22 (3872 B) 3 = 1452, the most.
    small = dict(
        a100,
        MAX_SHARED_MEMORY_PER_BLOCK=4096,
        MAX_SHARED_MEMORY_PER_MULTIPROCESSOR=16 * 1024,
    )
    assert choose_tile_width(small) == 22
    t = vizmm.record(
        width=3, tile_width=None, kernel="dynamic", backend="simulator", device="A100", quiet=True
    )
    assert t.tile_width == 32
    assert "A100" in t.meta["tile_width_from"]


def test_only_the_dynamic_kernel_chooses_its_tile_width():
    with pytest.raises(vizmm.RecordError, match="only kernel='dynamic'"):
        vizmm.record(width=4, tile_width=None, kernel="tiled", backend="simulator", quiet=True)
    with pytest.raises(vizmm.RecordError, match="unknown device 'B200'"):
        vizmm.record(width=4, tile_width=None, kernel="dynamic", backend="simulator", device="B200")


@pytest.mark.gpu
@pytest.mark.parametrize("width, tile_width", [(37, 8), (64, 16), (100, 32)])
def test_on_the_gpu_its_records_equal_fig_5_13s(width, tile_width):
    kw = dict(width=width, tile_width=tile_width, backend="gpu", seed=3, quiet=True)
    dyn = vizmm.record(kernel="dynamic", **kw)
    ref = vizmm.record(kernel="boundary", **kw)
    for field in FIELDS:
        assert np.array_equal(getattr(dyn, field), getattr(ref, field), equal_nan=True), field


@pytest.mark.gpu
def test_on_the_gpu_tile_width_comes_from_the_device():
    t = vizmm.record(width=40, tile_width=None, kernel="dynamic", backend="gpu", quiet=True)
    assert "this machine's GPU" in t.meta["tile_width_from"]
    assert 1 <= t.tile_width <= 32
    assert np.array_equal(t.P, t.M.astype(np.float64) @ t.N)


def test_command_line_chooses_tile_width_from_a_preset(tmp_path, capsys):
    from vizmm.cli import main

    out = tmp_path / "d.vizmm"
    args = ["record", "--width", "3", "--kernel", "dynamic", "-t", "device", "--device", "A100"]
    assert main([*args, "--backend", "simulator", "-o", str(out)]) == 0
    assert "TILE_WIDTH 32 chosen from the properties of A100" in capsys.readouterr().out
    assert vizmm.load(str(out)).tile_width == 32
    bad = ["record", "--width", "3", "--kernel", "tiled", "-t", "device", "-o", str(out)]
    assert main(bad) == 2
    assert "needs --kernel dynamic" in capsys.readouterr().err
