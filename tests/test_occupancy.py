"""The occupancy calculator against the book's Section 5.6, CUDA's own occupancy API and the GPU.

Oracles: hand derivations from the book's inputs; the blocks per SM that
``cuOccupancyMaxActiveBlocksPerMultiprocessor`` reported on an H100 and an
H200 for every kernel and TILE_WIDTH (``benchmarks/gpu_speed.py``, shipped
in ``vizmm/data/gpu-speed-*.json``); and the blocks resident per SM that
the shipped GPU traces measured with ``%smid`` and ``%globaltimer``.
"""

import json
import os

import numpy as np
import pytest

from vizmm.analysis import occupancy as occ

DATA = os.path.join(os.path.dirname(occ.__file__), "..", "data")


def speed(name):
    with open(os.path.join(DATA, f"gpu-speed-{name}.json")) as f:
        return json.load(f)


# ------------------------------------------------------------------ Section 5.6


def test_section_5_6_inputs_and_what_follows_from_them():
    s = occ.section_5_6()
    # "(164 KB) / (2048 threads) = 82 B/thread": follows (KB = 1024 bytes).
    assert s.budget_per_thread == 164 * 1024 / 2048 == 82
    assert s.printed["budget_per_thread"] == 82
    # "(TILE_WIDTH^2 * 4B + TILE_WIDTH^2 * 4B) / TILE_WIDTH^2 = 8 B/thread": follows, any width.
    for T in (1, 2, 16, 32):
        assert occ.section_5_6(T).tiled_per_thread == 8
    # "(32 KB) / (256 threads) = 132 B/thread": 32768 / 256 is 128.
    assert s.example_per_thread == 128 != s.printed["example_per_thread"]
    # "(164 KB) / (132 B/thread) = 1272 threads": with 128 B it is 1312 threads.
    assert s.example_threads_by_division == 167936 / 128 == 1312
    assert int(167936 / 132) == s.printed["example_threads"]  # the book's slip, reproduced
    # Blocks are resident whole: 167936 // 32768 = 5 blocks = 1280 threads = 62.5%.
    assert s.example_blocks_whole == 5
    assert s.example_occupancy_whole == 1280 / 2048
    # With the 1 KB the A100 reserves per block: 167936 // (32768 + 1024) = 4 blocks, 50%.
    e = s.example
    assert e.shared_allocated_per_block == 33792
    assert e.blocks_by_shared == 4 == 167936 // 33792
    assert (e.blocks_per_sm, e.threads_per_sm, e.occupancy) == (4, 1024, 0.5)
    assert e.limit == "shared memory" and e.limits == ("shared memory",)


def test_the_tiled_kernel_is_not_limited_by_shared_memory_on_the_book_a100():
    for T in (2, 4, 8, 16, 32):
        o = occ.occupancy("A100", T, "tiled")
        assert o.shared_per_block == 2 * T * T * 4
        assert o.shared_per_thread == 8
        assert "shared memory" not in o.limits
        # T*T threads a block, 2048 threads an SM; 32 block slots cap the small tiles.
        assert o.blocks_by_threads == 64 // -(-T * T // 32)
    assert occ.occupancy("A100", 16, "tiled").occupancy == 1.0
    # Shared memory per thread budget: 228 KB / 2048 on the measured Hopper parts.
    assert occ.occupancy("H100", 16).shared_budget_per_thread == 233472 / 2048 == 114


def test_book_example_on_hopper_by_hand():
    # 228 KB per SM (measured), 1 KB reserved per block: 233472 // 33792 = 6 blocks of 256.
    o = occ.occupancy("H100", threads_per_block=256, shared_per_block=32 * 1024)
    assert (o.blocks_per_sm, o.threads_per_sm, o.occupancy) == (6, 1536, 0.75)


# ------------------------------------------------------------------ CUDA's occupancy API


@pytest.mark.parametrize("name", ["h100", "h200"])
def test_blocks_per_sm_equal_cuda_occupancy_api_for_every_measured_kernel(name):
    data = speed(name)
    dev = occ.get_device(name.upper())
    rows = [r for r in data["resources"] if "cuda_blocks_per_sm" in r]
    assert len(rows) >= 50
    for r in rows:
        T = r["tile_width"]
        o = occ.occupancy(
            dev,
            threads_per_block=T * T,
            shared_per_block=r["static_shared_bytes"] + r["dynamic_shared_bytes"],
            registers_per_thread=r["registers_per_thread"],
        )
        assert o.blocks_per_sm == r["cuda_blocks_per_sm"], r


@pytest.mark.parametrize("name", ["h100", "h200"])
def test_raw_shared_memory_probes_equal_cuda_occupancy_api(name):
    data = speed(name)
    dev = occ.get_device(name.upper())
    (probe_kernel,) = [r for r in data["resources"] if "probes" in r]
    for p in probe_kernel["probes"]:
        o = occ.occupancy(
            dev,
            threads_per_block=p["threads"],
            shared_per_block=p["dynamic_shared_bytes"],
            registers_per_thread=probe_kernel["registers_per_thread"],
        )
        assert o.blocks_per_sm == p["cuda_blocks_per_sm"], p


def test_kernel_shared_memory_is_what_the_compiler_allocated():
    data = speed("h200")
    for r in data["resources"]:
        if r["kernel"] not in occ.KERNEL_NAMES:
            continue
        threads, shared = occ.kernel_resources(r["kernel"], r["tile_width"])
        assert threads == r["tile_width"] ** 2
        assert shared == r["static_shared_bytes"] + r["dynamic_shared_bytes"], r


def test_a_kernel_occupancy_uses_the_measured_registers():
    # Fig. 5.13 at TILE_WIDTH 32 compiles to 34 registers (measured): rounded to 40 a
    # thread, 1280 a warp, 12 warps per 16384-register sub-partition, 48 warps: 1 block.
    o = occ.occupancy("H200", 32, "boundary")
    assert o.registers_per_thread == 34
    assert o.registers_source.startswith("measured")
    assert (o.blocks_by_registers, o.blocks_per_sm, o.limit) == (1, 1, "registers")
    assert o.occupancy == 0.5
    # The recording kernel is capped at 32 registers: 2 blocks.
    assert occ.occupancy("H200", 32, "boundary", instrumented=True).blocks_per_sm == 2
    # Given registers replace the measured ones.
    g = occ.occupancy("H200", 32, "boundary", registers_per_thread=32)
    assert g.blocks_per_sm == 2 and g.registers_source == "given"


def test_a_live_gpu_gives_the_device_and_the_compiled_registers():
    # The recording layer's hook (vizmm.occupancy passes it): "live" is the GPU the
    # hook describes, and its compiler's registers replace the measured ones. Here a
    # GPU with the H200's attributes whose compiler gives 32 registers (Fig. 5.13,
    # TILE_WIDTH 32: 2 blocks, as derived above), then one that cannot compile.
    class FakeGPU:
        name, source, registers_source = "live", "a test's GPU", "compiler: a test's"

        def __init__(self, regs):
            self.regs, self.asked = regs, []

        def attributes(self):
            return dict(speed("h200")["device"])

        def compiled_registers(self, kernel, tile_width, instrumented):
            self.asked.append((kernel, tile_width, instrumented))
            return self.regs

    gpu = FakeGPU(32)
    o = occ.occupancy("live", 32, "boundary", live=gpu)
    assert gpu.asked == [("boundary", 32, False)]
    assert o.device.source == "a test's GPU" and o.device.name == speed("h200")["device"]["name"]
    assert (o.registers_per_thread, o.registers_source, o.blocks_per_sm) == (
        32,
        "compiler: a test's",
        2,
    )
    # Given registers win over the compiler's; a preset device stays the preset.
    assert (
        occ.occupancy(
            "H200", 32, "boundary", registers_per_thread=34, live=gpu
        ).registers_per_thread
        == 34
    )
    assert occ.occupancy("A100", 16, live=gpu).device.name == occ.get_device("A100").name
    none = occ.occupancy("live", 32, "boundary", live=FakeGPU(None))
    assert none.registers_per_thread == 34 and none.registers_source.startswith("measured")
    # Without the hook "live" is unknown here, and the error names vizmm.occupancy.
    with pytest.raises(occ.OccupancyError, match="vizmm.occupancy"):
        occ.occupancy("live", 16)


def test_register_counts_measured_on_h100_and_h200_agree():
    h100 = {
        (r["kernel"], r["tile_width"], r["instrumented"]): r["registers_per_thread"]
        for r in speed("h100")["resources"]
    }
    h200 = {
        (r["kernel"], r["tile_width"], r["instrumented"]): r["registers_per_thread"]
        for r in speed("h200")["resources"]
    }
    common = [k for k in h100 if k in h200 and k[0] in ("naive", "tiled", "boundary", "general")]
    assert len(common) >= 40
    assert all(h100[k] == h200[k] for k in common)


# ------------------------------------------------------------------ residency on the GPU


def _resident_per_sm(trace):
    """Most blocks on one SM at once, from each block's %smid and %globaltimer start/end."""
    from vizmm_kernels import codes

    b = trace.block_info.reshape(-1, codes.BLK_FIELDS)
    sm, t0, t1 = b[:, codes.BLK_SMID], b[:, codes.BLK_T0], b[:, codes.BLK_T1]
    assert (sm >= 0).all() and (t1 >= t0).all()
    most = 0
    for s in np.unique(sm):
        on = sm == s
        times = np.concatenate([t0[on], t1[on]])
        step = np.concatenate([np.ones(on.sum()), -np.ones(on.sum())])
        order = np.lexsort((step, times))  # an end before a start at the same time
        most = max(most, int(np.cumsum(step[order]).max()))
    return most


@pytest.mark.parametrize(
    "file, resident",
    [("gpu-1000-t16-boundary.vizmm", 8), ("gpu-4096-t32-tiled.vizmm", 2)],
)
def test_blocks_per_sm_equal_the_residency_the_shipped_gpu_traces_measured(file, resident):
    import vizmm

    trace = vizmm.load(os.path.join(DATA, file))
    assert trace.meta["device_name"] == "NVIDIA H200"
    measured = _resident_per_sm(trace)
    assert measured == resident
    # The traces were recorded by the instrumented kernels.
    o = occ.occupancy("H200", trace.tile_width, trace.kernel, instrumented=True)
    assert o.blocks_per_sm == measured


# ------------------------------------------------------------------ choosing TILE_WIDTH


def test_choose_tile_width_prefers_full_occupancy_then_the_largest_tile():
    assert occ.choose_tile_width("H200") == 32
    # If TILE_WIDTH 32 needed 64 registers a thread (1 block of 1024, 50%), the largest
    # width with every warp slot used is 22: 484 threads = 16 warps, 4 blocks = 64 warps.
    regs = {T: 32 for T in range(1, 33)}
    regs[32] = 64
    assert occ.choose_tile_width("H200", registers=regs) == 22


# ------------------------------------------------------------------ errors


@pytest.mark.parametrize(
    "kwargs, words",
    [
        (dict(device="B200", tile_width=16), "unknown device 'B200'; choose one of A100, H100"),
        (dict(device="A100", tile_width=0), "must be an integer from 1 to 32"),
        (dict(device="A100", tile_width=33), "must be an integer from 1 to 32"),
        (dict(device="A100", tile_width=True), "must be an integer from 1 to 32"),
        (dict(device="A100", tile_width=16, kernel="fast"), "unknown kernel 'fast'"),
        (
            dict(device="A100", tile_width=16, threads_per_block=256, shared_per_block=0),
            "either a kernel and its tile_width, or raw resources",
        ),
        (dict(device="A100"), "give a tile_width for the kernel, or raw resources"),
        (dict(device="A100", threads_per_block=256), "need both threads_per_block and shared"),
        (
            dict(device="A100", threads_per_block=2048, shared_per_block=0),
            "threads_per_block must be an integer from 1 to 1024",
        ),
        (
            dict(device="A100", threads_per_block=256, shared_per_block=200 * 1024),
            "shared_per_block must be an integer from 0 to 166912",
        ),
        (
            dict(device="A100", tile_width=16, registers_per_thread=300),
            "registers_per_thread must be an integer from 1 to 255",
        ),
        (
            dict(device="A100", tile_width=32, registers_per_thread=80),
            "need more than the 65536 registers a block may use",
        ),
    ],
)
def test_bad_input_gets_a_clear_error(kwargs, words):
    with pytest.raises(occ.OccupancyError, match=None) as info:
        occ.occupancy(**kwargs)
    assert words in str(info.value)


def test_a_device_from_attributes_needs_the_limits():
    with pytest.raises(occ.OccupancyError, match="MAX_THREADS_PER_MULTIPROCESSOR"):
        occ.Device.from_attributes({"name": "x"}, source="test")


def test_command_line(capsys):
    from vizmm.cli import main

    assert main(["occupancy", "--book"]) == 0
    out = capsys.readouterr().out
    assert "32 KB / 256 threads = 128 B/thread (book: 132)" in out
    assert "4 blocks, 1024 threads, occupancy 50%" in out
    assert main(["occupancy", "--device", "H200", "-t", "32", "--kernel", "boundary"]) == 0
    out = capsys.readouterr().out
    assert "occupancy 50.0%, limited by registers" in out
    assert main(["occupancy", "--device", "B200", "-t", "2"]) == 2
    assert "unknown device 'B200'" in capsys.readouterr().err
