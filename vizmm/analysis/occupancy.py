"""Occupancy: how many blocks of a kernel fit on one SM, and what limits them (Section 5.6).

PMPP Section 5.6 (and Chapter 4) bounds the threads resident on an SM by
four resources: thread slots, block slots, shared memory and registers. This
module does that arithmetic for the book's kernels (the kernel and TILE_WIDTH
fix the block's threads, its shared memory and, through the compiler, its
registers) or for raw resources of a kernel of the reader's own, on a device
preset:

``"A100"``
    The book's figures (Section 5.6: 164 KB of shared memory and 2048
    threads per SM; Section 5.4: 1555 GB/s, 19,500 GFLOPS); the limits the
    book does not give (32 blocks and 65,536 registers per SM, 1 KB reserved
    per block, 48 KB per block) are those of compute capability 8.0 in the
    CUDA C++ Programming Guide.
``"H100"``, ``"H200"``
    Measured on a real GPU: ``cuda.get_current_device()`` attributes
    written by ``benchmarks/gpu_speed.py`` into
    ``vizmm/data/gpu-speed-h100.json`` / ``gpu-speed-h200.json``, with the
    measured DRAM bandwidth and FP32 peak.

Any other device is a :class:`Device` built with :meth:`Device.from_attributes`
(the recording layer builds one for the live GPU).

Allocation rules followed (those of CUDA's occupancy calculator,
``cuda_occupancy.h``, for compute capability 8.0 and 9.0; checked against
``cuOccupancyMaxActiveBlocksPerMultiprocessor`` on an H100 and an H200 for
every kernel, TILE_WIDTH 1-32, and raw shared-memory sizes, see the tests):

* **threads**: whole warps; ``floor(max warps per SM / warps per block)``.
* **blocks**: at most ``max_blocks_per_sm`` (32).
* **shared memory**: a block's request is rounded up to 128 bytes and the
  hardware reserves 1 KB more for every block on sm_80 and later
  (``cudaDevAttrReservedSharedMemoryPerBlock``); blocks =
  ``floor(shared per SM / (rounded request + reserved))``. The reservation is
  why Section 5.6's 32 KB block fits 4 times, not 5, on the A100.
* **registers**: allocated per warp in units of 256 (``ceil(registers per
  thread * 32 / 256) * 256``) from each of the SM's 4 sub-partitions (16,384
  registers each); warps = ``4 * floor(16384 / registers per warp)``, blocks =
  ``floor(warps / warps per block)``. 34 registers a thread therefore cost
  as much as 40.

Occupancy is CUDA's: resident warps over the SM's maximum warps.

Registers per thread come from the compiler when the caller has it (the
recording layer asks numba for the live GPU: it passes a :class:`LiveGPU`,
as :func:`vizmm.occupancy` does) and otherwise from the values
measured on a real GPU and shipped with vizmm (an H200, sm_90, numba-cuda
0.30; the same values were measured on an H100). No A100 (sm_80)
measurement ships: for the A100 preset the sm_90 values are used, and
``registers_source`` says so.

What the book's Section 5.6 prints, checked (:func:`section_5_6`): 164 KB /
2048 threads = 82 B/thread and the tiled kernel's 8 B/thread follow from
its inputs; 32 KB / 256 threads is 128 B/thread, not the printed 132; 164 KB
/ 128 B = 1312 threads, not 1272; blocks are resident whole, so at most 5
blocks (1280 threads, 62.5%) fit by the book's own rule, and with the 1 KB
the A100 reserves per block only 4 (1024 threads, 50%). The printed 62%
(1272 / 2048) comes from the wrong 132 B and from counting threads, not
blocks.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import os
from collections.abc import Mapping
from typing import Protocol

from ..trace.kernels import KERNEL_SPECS, OCCUPANCY_KERNELS
from ..trace.launch import MAX_TILE_WIDTH, ceil_div, check_tile_width

__all__ = [
    "DEVICES",
    "KERNEL_NAMES",
    "Device",
    "LiveGPU",
    "Occupancy",
    "OccupancyError",
    "Section56",
    "choose_tile_width",
    "get_device",
    "kernel_resources",
    "measured_peak_gflops",
    "measured_registers",
    "occupancy",
    "section_5_6",
    "speed_data",
]

KB = 1024
FLOAT_BYTES = 4
#: The kernels whose registers were measured (:attr:`vizmm.trace.KernelSpec.occupancy`).
KERNEL_NAMES = OCCUPANCY_KERNELS
DEVICES = ("A100", "H100", "H200")
RESOURCES = ("threads", "blocks", "shared memory", "registers")
_DATA = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data")
SPEED_FILES = {"H100": "gpu-speed-h100.json", "H200": "gpu-speed-h200.json"}
#: The measured register table used for every device (see the module docstring).
REGISTER_FILE = "gpu-speed-h200.json"


class OccupancyError(ValueError):
    """The occupancy question was asked with arguments it cannot take; the message says which."""


@dataclasses.dataclass(frozen=True)
class Device:
    """One GPU's per-SM limits, as the occupancy arithmetic needs them.

    Attributes
    ----------
    name : str
        ``"A100"``, ``"H100"``, ``"H200"`` or the live device's name.
    source : str
        Where the figures come from.
    max_threads_per_sm, max_blocks_per_sm : int
        Thread and block slots of one SM.
    shared_per_sm : int
        Shared memory one SM can give its blocks (bytes, the largest carveout).
    shared_per_block : int
        Largest static request per block (bytes; 48 KB).
    shared_per_block_optin : int
        Largest request per block after opting in (bytes).
    reserved_shared_per_block : int
        Shared memory the system reserves per resident block (bytes; 1 KB on sm_80+).
    registers_per_sm, registers_per_block : int
        32-bit registers.
    max_threads_per_block : int
    warp_size : int
    shared_granularity : int
        A block's shared memory is allocated in multiples of this (bytes).
    register_granularity : int
        Registers are allocated per warp in multiples of this.
    register_partitions : int
        Sub-partitions the register file is split into (warps are placed in one).
    max_registers_per_thread : int
    sm_count : int or None
    compute_capability : tuple of int or None
    clock_mhz : float or None
        SM clock (MHz).
    bandwidth_gb_s : float or None
        DRAM bandwidth (GB/s, 1e9 bytes): measured (H100, H200) or the book's (A100).
    peak_gflops : float or None
        FP32 peak (GFLOP/s): the book's, or the highest rate measured (see
        :func:`measured_peak_gflops`).
    spec_peak_gflops : float or None
        ``sm_count * 128 FP32 lanes * 2 * clock`` (GFLOP/s), the data-sheet figure.
    """

    name: str
    source: str
    max_threads_per_sm: int
    max_blocks_per_sm: int
    shared_per_sm: int
    shared_per_block: int
    shared_per_block_optin: int
    reserved_shared_per_block: int
    registers_per_sm: int
    registers_per_block: int
    max_threads_per_block: int = 1024
    warp_size: int = 32
    shared_granularity: int = 128
    register_granularity: int = 256
    register_partitions: int = 4
    max_registers_per_thread: int = 255
    sm_count: int | None = None
    compute_capability: tuple[int, int] | None = None
    clock_mhz: float | None = None
    bandwidth_gb_s: float | None = None
    peak_gflops: float | None = None
    spec_peak_gflops: float | None = None

    @property
    def max_warps_per_sm(self) -> int:
        """Warp slots of one SM."""
        return self.max_threads_per_sm // self.warp_size

    @classmethod
    def from_attributes(cls, attrs: Mapping[str, object], source: str, **extra: object) -> Device:
        """A device from CUDA device attributes (``CU_DEVICE_ATTRIBUTE_*`` names without prefix).

        Parameters
        ----------
        attrs : mapping
            At least ``MAX_THREADS_PER_MULTIPROCESSOR``,
            ``MAX_BLOCKS_PER_MULTIPROCESSOR``, ``MAX_SHARED_MEMORY_PER_MULTIPROCESSOR``,
            ``MAX_SHARED_MEMORY_PER_BLOCK``, ``MAX_REGISTERS_PER_MULTIPROCESSOR``;
            ``name``, ``MULTIPROCESSOR_COUNT``, ``CLOCK_RATE`` (kHz), the
            compute capability and the others of :data:`ATTRIBUTES` are used
            when present.
        source : str
            Where the attributes come from.
        **extra
            Other fields (``bandwidth_gb_s``, ``peak_gflops``, ...).

        Raises
        ------
        OccupancyError
            When a required attribute is missing or not a positive integer.
        """

        def need(key):
            v = attrs.get(key)
            if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
                raise OccupancyError(
                    f"device attribute {key} must be a positive integer, got {v!r}"
                )
            return v

        def opt(key, default):
            v = attrs.get(key)
            return v if isinstance(v, int) and not isinstance(v, bool) and v >= 0 else default

        cc = attrs.get("compute_capability")
        if cc is None and "COMPUTE_CAPABILITY_MAJOR" in attrs:
            cc = (attrs["COMPUTE_CAPABILITY_MAJOR"], attrs.get("COMPUTE_CAPABILITY_MINOR", 0))
        if cc is not None and not (isinstance(cc, (tuple, list)) and len(cc) == 2):
            raise OccupancyError(
                f"device attribute compute_capability must be (major, minor), got {cc!r}"
            )
        cc = tuple(int(c) for c in cc) if cc is not None else None
        sms = opt("MULTIPROCESSOR_COUNT", None)
        clock_khz = opt("CLOCK_RATE", None)
        clock = clock_khz / 1000 if clock_khz else None
        fields = dict(
            name=str(attrs.get("name", "GPU")),
            source=source,
            max_threads_per_sm=need("MAX_THREADS_PER_MULTIPROCESSOR"),
            max_blocks_per_sm=need("MAX_BLOCKS_PER_MULTIPROCESSOR"),
            shared_per_sm=need("MAX_SHARED_MEMORY_PER_MULTIPROCESSOR"),
            shared_per_block=need("MAX_SHARED_MEMORY_PER_BLOCK"),
            shared_per_block_optin=opt(
                "MAX_SHARED_MEMORY_PER_BLOCK_OPTIN", attrs["MAX_SHARED_MEMORY_PER_BLOCK"]
            ),
            reserved_shared_per_block=opt("RESERVED_SHARED_MEMORY_PER_BLOCK", 0),
            registers_per_sm=need("MAX_REGISTERS_PER_MULTIPROCESSOR"),
            registers_per_block=opt(
                "MAX_REGISTERS_PER_BLOCK", attrs["MAX_REGISTERS_PER_MULTIPROCESSOR"]
            ),
            max_threads_per_block=opt("MAX_THREADS_PER_BLOCK", 1024),
            warp_size=opt("WARP_SIZE", 32),
            sm_count=sms,
            compute_capability=cc,
            clock_mhz=clock,
            spec_peak_gflops=(sms * 128 * 2 * clock / 1000) if sms and clock else None,
        )
        fields.update(extra)
        return cls(**fields)


def _preset_file() -> dict:
    with open(os.path.join(_DATA, "device-presets.json"), encoding="utf-8") as f:
        return json.load(f)


def _book_a100() -> Device:
    p = _preset_file()["A100"]
    dev = Device.from_attributes(
        p["device"],
        source=p["source"],
        bandwidth_gb_s=p["bandwidth_gb_s"],
        peak_gflops=p["peak_gflops"],
    )
    # The book's 19,500 GFLOPS is the data sheet's figure: it is the spec peak too.
    return dataclasses.replace(dev, spec_peak_gflops=p["peak_gflops"])


#: The A100 as the book gives it (Sections 5.4 and 5.6), the rest from compute capability 8.0
#: (``vizmm/data/device-presets.json``).
A100 = _book_a100()


@functools.cache
def speed_data(name: str) -> dict:
    """The measurements shipped for ``"H100"`` or ``"H200"`` (``vizmm/data/gpu-speed-*.json``).

    Raises
    ------
    OccupancyError
        For a name with no shipped measurement.
    """
    if name not in SPEED_FILES:
        raise OccupancyError(
            f"no measurements ship for {name!r}; measured devices: {', '.join(SPEED_FILES)}"
        )
    with open(os.path.join(_DATA, SPEED_FILES[name]), encoding="utf-8") as f:
        return json.load(f)


@functools.cache
def _measured_device(name: str) -> Device:
    data = speed_data(name)
    attrs = dict(data["device"])
    return Device.from_attributes(
        attrs,
        source=(
            f"measured: cuda.get_current_device() on an {attrs['name']}, {data['date'][:10]} "
            f"(vizmm/data/{SPEED_FILES[name]})"
        ),
        name=name,
        bandwidth_gb_s=float(data["dram_bandwidth"]["gb_per_s"]),
        peak_gflops=measured_peak_gflops(data),
    )


def measured_peak_gflops(data: dict) -> float:
    """The highest FP32 rate measured: an FMA-bound kernel's or cuBLAS's SGEMM (GFLOP/s).

    On the H100 and H200 the FMA-bound kernel of ``benchmarks/gpu_speed.py``
    reached about 41-43 TFLOP/s and cuBLAS's float32 ``matmul`` about 51: a
    measured peak is a lower bound on the real one, so the larger counts.

    Parameters
    ----------
    data : dict
        A device's shipped measurements (:func:`speed_data`).
    """
    blas = [r["gflops"] for r in data.get("products", []) if r["kernel"] == "cublas"]
    return float(max([data["fp32_peak"]["gflops"], *blas]))


class LiveGPU(Protocol):
    """What :func:`occupancy` asks of a GPU it cannot see itself (its ``live`` argument).

    This module imports no numba; the recording layer, which does, supplies
    one (:data:`vizmm.record.device.LIVE_GPU`, passed by :func:`vizmm.occupancy`).

    Attributes
    ----------
    name : str
        The device name that means this GPU (``"live"``).
    source : str
        Where its attributes come from (the :class:`Device`'s ``source``).
    registers_source : str
        Where compiled registers come from (``Occupancy.registers_source``).
    """

    name: str
    source: str
    registers_source: str

    def attributes(self) -> Mapping[str, object]:
        """CUDA device attributes, as :meth:`Device.from_attributes` takes them."""

    def compiled_registers(self, kernel: str, tile_width: int, instrumented: bool) -> int | None:
        """Registers per thread of a book kernel as compiled for this GPU (None: cannot compile).

        Parameters
        ----------
        kernel, tile_width, instrumented
            As :func:`measured_registers` takes them.
        """


def get_device(name: str | Device) -> Device:
    """The preset ``"A100"`` (the book's), ``"H100"`` or ``"H200"`` (measured); a Device passes.

    Parameters
    ----------
    name : str or Device
        ``'A100'``, ``'H100'`` or ``'H200'``, or a Device.

    Raises
    ------
    OccupancyError
        For an unknown name, naming the presets.
    """
    if isinstance(name, Device):
        return name
    if name == "A100":
        return A100
    if name in SPEED_FILES:
        return _measured_device(name)
    raise OccupancyError(
        f"unknown device {name!r}; choose one of {', '.join(DEVICES)} ('live', this machine's "
        "GPU, in vizmm.occupancy), or pass a Device"
    )


@functools.cache
def _register_table() -> dict[tuple[str, int, bool], int]:
    data = speed_data("H200")
    return {
        (r["kernel"], r["tile_width"], r["instrumented"]): r["registers_per_thread"]
        for r in data["resources"]
    }


def measured_registers(kernel: str, tile_width: int, instrumented: bool = False) -> int:
    """Registers per thread of a vizmm kernel as compiled for sm_90 (measured on an H200).

    Parameters
    ----------
    kernel : str
        A kernel whose registers were measured: one of :data:`KERNEL_NAMES`
        (:attr:`vizmm.trace.KernelSpec.occupancy`), or ``'dynamic_any'``.
    tile_width : int
        TILE_WIDTH, 1 to 32.
    instrumented : bool
        The recording build (with vizmm's records) rather than the plain kernel.

    Raises
    ------
    OccupancyError
        For a kernel or TILE_WIDTH with no measurement.
    """
    try:
        return _register_table()[(kernel, tile_width, bool(instrumented))]
    except KeyError:
        raise OccupancyError(
            f"no register count was measured for kernel {kernel!r} with TILE_WIDTH {tile_width}"
        ) from None


def kernel_resources(kernel: str, tile_width: int) -> tuple[int, int]:
    """``(threads per block, shared memory per block in bytes)`` of a book kernel.

    Every kernel runs ``TILE_WIDTH x TILE_WIDTH`` threads per block; the
    tiled ones hold Mds and Nds, ``TILE_WIDTH**2`` floats each (Section 5.6),
    the naive kernel (Fig. 3.11) no shared memory.

    Parameters
    ----------
    kernel : str
        One of :data:`KERNEL_NAMES`.
    tile_width : int
        TILE_WIDTH, 1 to 32.

    Raises
    ------
    OccupancyError
        For an unknown kernel or a TILE_WIDTH outside 1..32.
    """
    _check_kernel(kernel)
    T = _check_tile_width(tile_width)
    shared = 2 * T * T * FLOAT_BYTES if KERNEL_SPECS[kernel].tiled else 0
    return T * T, shared


def _check_kernel(kernel):
    if kernel not in KERNEL_NAMES:
        raise OccupancyError(f"unknown kernel {kernel!r}; choose one of {', '.join(KERNEL_NAMES)}")


def _check_tile_width(tile_width):
    return check_tile_width(tile_width, OccupancyError)


def _check_count(name, value, lo, hi, unit):
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        raise OccupancyError(f"{name} must be an integer from {lo} to {hi} ({unit}); got {value!r}")
    return int(value)


@dataclasses.dataclass(frozen=True)
class Occupancy:
    """How a kernel's blocks fill one SM.

    Attributes
    ----------
    device : Device
    kernel : str or None
        The book kernel, or None for raw resources.
    tile_width : int or None
    threads_per_block, warps_per_block : int
    shared_per_block : int
        Shared memory the block asks for (bytes).
    shared_allocated_per_block : int
        What it takes from the SM: rounded up to the granularity plus the
        per-block reservation (bytes).
    shared_per_thread : float
        ``shared_per_block / threads_per_block`` (bytes).
    shared_budget_per_thread : float
        ``shared_per_sm / max_threads_per_sm``: the most a thread may use for
        every thread slot to stay usable (bytes; the book's 82 B/thread).
    registers_per_thread : int or None
        None when unknown (raw resources without registers): then registers
        limit nothing here.
    registers_source : str
        ``"compiler: ..."``, ``"measured: ..."``, ``"given"`` or ``"not given"``.
    blocks_by_threads, blocks_by_blocks, blocks_by_shared : int
        Blocks per SM each resource alone allows.
    blocks_by_registers : int or None
        None when the registers are unknown.
    blocks_per_sm : int
        The smallest of those.
    threads_per_sm, warps_per_sm : int
        Resident threads and warps.
    limit : str
        The limiting resource: ``"threads"``, ``"blocks"``, ``"shared memory"``
        or ``"registers"`` (the first of these in that order when several tie).
    limits : tuple of str
        Every resource that allows only ``blocks_per_sm``.
    occupancy : float
        Resident warps / maximum warps per SM, 0 to 1.
    """

    device: Device
    kernel: str | None
    tile_width: int | None
    threads_per_block: int
    warps_per_block: int
    shared_per_block: int
    shared_allocated_per_block: int
    shared_per_thread: float
    shared_budget_per_thread: float
    registers_per_thread: int | None
    registers_source: str
    blocks_by_threads: int
    blocks_by_blocks: int
    blocks_by_shared: int
    blocks_by_registers: int | None
    blocks_per_sm: int
    threads_per_sm: int
    warps_per_sm: int
    limit: str
    limits: tuple[str, ...]
    occupancy: float

    def blocks_by(self) -> dict[str, int | None]:
        """Blocks per SM allowed by each resource alone (None: registers unknown)."""
        return {
            "threads": self.blocks_by_threads,
            "blocks": self.blocks_by_blocks,
            "shared memory": self.blocks_by_shared,
            "registers": self.blocks_by_registers,
        }

    def describe(self) -> list[str]:
        """A few lines for people (the command line and the dashboard)."""
        d = self.device
        what = (
            f"kernel {self.kernel}, TILE_WIDTH {self.tile_width}"
            if self.kernel
            else "raw resources"
        )
        regs = (
            f"{self.registers_per_thread} registers/thread ({self.registers_source})"
            if self.registers_per_thread is not None
            else "registers not given"
        )
        by = ", ".join(f"{k} {v}" for k, v in self.blocks_by().items() if v is not None)
        return [
            f"{d.name}: {what}: {self.threads_per_block} threads/block, "
            f"{self.shared_per_block} B shared/block ({self.shared_per_thread:.1f} B/thread; "
            f"{self.shared_budget_per_thread:.0f} B/thread keeps every slot), {regs}",
            f"blocks per SM allowed by {by}",
            f"{self.blocks_per_sm} blocks = {self.threads_per_sm} threads = {self.warps_per_sm} "
            f"of {d.max_warps_per_sm} warps per SM: occupancy {self.occupancy:.1%}, "
            f"limited by {' and '.join(self.limits)}",
        ]


def occupancy(
    device: str | Device,
    tile_width: int | None = None,
    kernel: str = "tiled",
    threads_per_block: int | None = None,
    shared_per_block: int | None = None,
    registers_per_thread: int | None = None,
    *,
    instrumented: bool = False,
    registers_source: str | None = None,
    live: LiveGPU | None = None,
) -> Occupancy:
    """Blocks per SM, the limiting resource and the occupancy of a kernel (Section 5.6).

    Either a book kernel and its TILE_WIDTH (threads, shared memory and the
    measured registers follow from them), or raw resources of a kernel of
    your own (``threads_per_block``, ``shared_per_block`` and optionally
    ``registers_per_thread``), as in the book's 32 KB / 256-thread example.
    :func:`vizmm.occupancy` is this function with the recording layer's
    ``live`` GPU.

    Parameters
    ----------
    device : {'A100', 'H100', 'H200', 'live'} or Device
        The preset (see the module docstring), a :class:`Device`, or (with
        ``live``) the GPU this process drives.
    tile_width : int, optional
        TILE_WIDTH, 1 to 32, with ``kernel``.
    kernel : {'tiled', 'naive', 'boundary', 'general', 'dynamic'}
        The book kernel (used with ``tile_width``).
    threads_per_block : int, optional
        Raw resources: threads per block (1 to the device's maximum).
    shared_per_block : int, optional
        Raw resources: shared memory per block (bytes).
    registers_per_thread : int, optional
        Registers per thread (1 to 255). With a kernel it replaces the
        measured value (the recording layer passes the compiler's).
    instrumented : bool
        Use the recording kernel's registers (capped at 32 on the GPU).
    registers_source : str, optional
        Says where given registers came from (default ``"given"``).
    live : LiveGPU, optional
        The GPU this process drives, from the recording layer
        (:func:`vizmm.occupancy` passes it): ``device=live.name`` is that GPU,
        and a book kernel's registers come from its compiler when it can
        compile (``registers_source`` then starts ``compiler:``), else from
        the measured values.

    Returns
    -------
    Occupancy

    Raises
    ------
    OccupancyError
        For an unknown device or kernel, a TILE_WIDTH outside 1..32, both a
        TILE_WIDTH and raw threads/shared memory (or neither), resources out
        of range, or a block the device cannot run at all (too many threads,
        shared memory or registers for one block).
    GPUUnavailableError
        From ``live``, for ``device='live'`` without a usable GPU.
    """
    if live is not None and device == live.name:
        device = Device.from_attributes(live.attributes(), source=live.source)
    dev = get_device(device)
    raw = threads_per_block is not None or shared_per_block is not None
    if tile_width is not None and raw:
        raise OccupancyError(
            "give either a kernel and its tile_width, or raw resources (threads_per_block, "
            "shared_per_block), not both"
        )
    if tile_width is None and not raw:
        raise OccupancyError(
            "give a tile_width for the kernel, or raw resources: threads_per_block and "
            "shared_per_block (bytes)"
        )
    if registers_per_thread is not None:
        regs = _check_count(
            "registers_per_thread",
            registers_per_thread,
            1,
            dev.max_registers_per_thread,
            "registers",
        )
        source = registers_source or "given"
    else:
        regs, source = None, "not given"
    if raw:
        if threads_per_block is None or shared_per_block is None:
            raise OccupancyError(
                "raw resources need both threads_per_block and shared_per_block (bytes; 0 for none)"
            )
        threads = _check_count(
            "threads_per_block", threads_per_block, 1, dev.max_threads_per_block, "threads"
        )
        shared = _check_count(
            "shared_per_block", shared_per_block, 0, dev.shared_per_block_optin, "bytes"
        )
        name, T = None, None
    else:
        _check_kernel(kernel)
        T = _check_tile_width(tile_width)
        threads, shared = kernel_resources(kernel, T)
        name = kernel
        if regs is None and live is not None:
            regs = live.compiled_registers(kernel, T, instrumented)
            source = live.registers_source
        if regs is None:
            regs = measured_registers(kernel, T, instrumented)
            data = speed_data("H200")
            source = (
                f"measured: {data['device']['name']}, numba-cuda "
                f"{data['versions'].get('numba-cuda', '?')} (sm_90)"
                + (
                    "; no A100 (sm_80) measurement ships"
                    if dev.compute_capability == (8, 0)
                    else ""
                )
            )
    if shared > dev.shared_per_block_optin:
        raise OccupancyError(
            f"a block of {shared} bytes of shared memory cannot run on the {dev.name}: at most "
            f"{dev.shared_per_block_optin} bytes per block"
        )
    ws = dev.warp_size
    warps = ceil_div(threads, ws)
    by_threads = dev.max_warps_per_sm // warps
    by_blocks = dev.max_blocks_per_sm
    if shared > 0:
        g = dev.shared_granularity
        allocated = ceil_div(shared, g) * g + dev.reserved_shared_per_block
        by_shared = dev.shared_per_sm // allocated
    else:
        allocated = 0
        by_shared = dev.max_blocks_per_sm
    if regs is not None:
        g = dev.register_granularity
        per_warp = ceil_div(regs * ws, g) * g
        if per_warp * warps > dev.registers_per_block:
            raise OccupancyError(
                f"{regs} registers per thread x {threads} threads need more than the "
                f"{dev.registers_per_block} registers a block may use on the {dev.name}"
            )
        part = dev.registers_per_sm // dev.register_partitions
        by_regs = (part // per_warp) * dev.register_partitions // warps
    else:
        by_regs = None
    by = {
        "threads": by_threads,
        "blocks": by_blocks,
        "shared memory": by_shared,
        "registers": by_regs,
    }
    blocks = min(v for v in by.values() if v is not None)
    limits = tuple(k for k in RESOURCES if by[k] == blocks)
    return Occupancy(
        device=dev,
        kernel=name,
        tile_width=T,
        threads_per_block=threads,
        warps_per_block=warps,
        shared_per_block=shared,
        shared_allocated_per_block=allocated,
        shared_per_thread=shared / threads,
        shared_budget_per_thread=dev.shared_per_sm / dev.max_threads_per_sm,
        registers_per_thread=regs,
        registers_source=source,
        blocks_by_threads=by_threads,
        blocks_by_blocks=by_blocks,
        blocks_by_shared=by_shared,
        blocks_by_registers=by_regs,
        blocks_per_sm=blocks,
        threads_per_sm=blocks * threads,
        warps_per_sm=blocks * warps,
        limit=limits[0],
        limits=limits,
        occupancy=blocks * warps / dev.max_warps_per_sm,
    )


def choose_tile_width(
    device: str | Device, kernel: str = "dynamic", registers: Mapping[int, int] | None = None
) -> int:
    """The TILE_WIDTH the host picks for the Fig. 5.14 kernel from the device's properties.

    The book leaves ``calculate_appropriate_SM_usage(devProp.sharedMemPerBlock, ...)`` as an
    exercise; the rule here: among the widths whose block fits the device
    (``TILE_WIDTH**2`` threads, ``2 * TILE_WIDTH**2 * 4`` bytes within the
    per-block shared memory), those with the highest occupancy, and of them
    the largest (larger tiles read global memory fewer times: CGMA is
    ``TILE_WIDTH / 4`` OP/B).

    Parameters
    ----------
    device : str or Device
    kernel : str
        Whose registers count (the measured ones unless ``registers`` maps
        TILE_WIDTH to registers per thread, e.g. from the compiler).
    registers : mapping of int to int, optional

    Returns
    -------
    int
        TILE_WIDTH, 1 to 32.
    """
    dev = get_device(device)
    best: tuple[float, int] | None = None
    for T in range(1, MAX_TILE_WIDTH + 1):
        threads, shared = kernel_resources(kernel, T)
        if threads > dev.max_threads_per_block or shared > dev.shared_per_block:
            continue
        regs = registers.get(T) if registers else None
        occ = occupancy(
            dev, T, kernel, registers_per_thread=regs, registers_source="given" if regs else None
        ).occupancy
        if best is None or occ >= best[0] - 1e-12:
            best = (max(occ, best[0]) if best else occ, T)
    if best is None:
        raise OccupancyError(f"no TILE_WIDTH from 1 to {MAX_TILE_WIDTH} fits a block of {dev.name}")
    return best[1]


@dataclasses.dataclass(frozen=True)
class Section56:
    """Section 5.6's arithmetic: what the book prints and what follows from its inputs.

    All sizes in bytes (KB = 1024 bytes) and threads.

    Attributes
    ----------
    budget_per_thread : float
        164 KB / 2048 threads (book: 82 B/thread).
    tiled_per_thread : float
        ``(T**2 * 4 + T**2 * 4) / T**2`` (book: 8 B/thread).
    example_per_thread : float
        32 KB / 256 threads (book prints 132 B/thread).
    example_threads_by_division : float
        164 KB / ``example_per_thread`` (book: 164 KB / 132 B = 1272 threads).
    example_blocks_whole : int
        Whole 32 KB blocks in 164 KB, no reservation (book's rule, blocks whole).
    example_occupancy_whole : float
        ``example_blocks_whole * 256 / 2048``.
    example : Occupancy
        The calculator on the A100 preset (with the 1 KB reserved per block).
    printed : dict
        The book's printed values.
    """

    budget_per_thread: float
    tiled_per_thread: float
    example_per_thread: float
    example_threads_by_division: float
    example_blocks_whole: int
    example_occupancy_whole: float
    example: Occupancy
    printed: dict


def section_5_6(tile_width: int = 16) -> Section56:
    """Redo Section 5.6's arithmetic on the book's A100 figures (see the module docstring).

    Parameters
    ----------
    tile_width : int
        TILE_WIDTH, 1 to 32.
    """
    T = _check_tile_width(tile_width)
    shared_sm, threads_sm = A100.shared_per_sm, A100.max_threads_per_sm
    per_thread = 32 * KB / 256
    return Section56(
        budget_per_thread=shared_sm / threads_sm,
        tiled_per_thread=(T * T * FLOAT_BYTES + T * T * FLOAT_BYTES) / (T * T),
        example_per_thread=per_thread,
        example_threads_by_division=shared_sm / per_thread,
        example_blocks_whole=shared_sm // (32 * KB),
        example_occupancy_whole=(shared_sm // (32 * KB)) * 256 / threads_sm,
        example=occupancy(A100, threads_per_block=256, shared_per_block=32 * KB),
        printed={
            "budget_per_thread": 82,
            "tiled_per_thread": 8,
            "example_per_thread": 132,
            "example_threads": 1272,
            "example_occupancy": 0.62,
        },
    )
