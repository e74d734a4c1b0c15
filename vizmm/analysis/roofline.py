"""CGMA and the roofline: the book's GFLOPS argument (Section 5.4) with measured numbers.

Section 5.4: the simple kernel performs one multiply and one add (2 FLOP) per
two 4-byte global reads, 0.25 OP/B; with TILE_WIDTH 16 tiles every element is
read 16 times fewer, 4 OP/B. On the book's A100 (1555 GB/s) that bounds the
kernels at ``1555 x 0.25 = 389`` and ``1555 x 4 = 6220`` GFLOPS, 32% of the
19,500 GFLOPS peak.

Here the arithmetic intensity of a kernel is read from a recorded trace:
the FLOP of the P elements it computed (``2 k`` each) over the bytes it
really read from global memory (the trace's per-element read counts of M and
N, 4 bytes each). The roofline's roof is the measured DRAM bandwidth (a
device-to-device copy) and the measured FP32 peak (an FMA-bound kernel) of
an H100 or H200 (``vizmm/data/gpu-speed-*.json``), and each kernel's point is
its measured GFLOP/s at that intensity.

NumPy only.
"""

from __future__ import annotations

import dataclasses
import functools
import os

import numpy as np

from ..trace import Trace, load
from .occupancy import Device, OccupancyError, get_device, speed_data

__all__ = [
    "BYTES_PER_ELEMENT",
    "ROOFLINE_TRACES",
    "Intensity",
    "Roofline",
    "RooflinePoint",
    "book_a100",
    "intensity",
    "measured_roofline",
    "roofline_trace",
    "speed_series",
]

BYTES_PER_ELEMENT = 4  # float32
_DATA = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data")

#: The traces whose read counts place each timed kernel on the roofline:
#: (kernel, TILE_WIDTH) -> (Width, file in ``vizmm/data``); recorded by
#: ``scripts/make_roofline_traces.py`` in the simulator, whole launches.
ROOFLINE_TRACES = {
    ("naive", 16): (32, "roofline-naive-t16.vizmm"),
    ("tiled", 8): (32, "roofline-tiled-t8.vizmm"),
    ("tiled", 16): (32, "roofline-tiled-t16.vizmm"),
    ("tiled", 32): (64, "roofline-tiled-t32.vizmm"),
    ("boundary", 16): (32, "roofline-boundary-t16.vizmm"),
    ("boundary", 32): (64, "roofline-boundary-t32.vizmm"),
    ("dynamic", 16): (32, "roofline-dynamic-t16.vizmm"),
    ("dynamic", 32): (64, "roofline-dynamic-t32.vizmm"),
}


@dataclasses.dataclass(frozen=True)
class Intensity:
    """Arithmetic intensity of a recorded launch (Section 5.4's CGMA).

    Attributes
    ----------
    flop : int
        ``2 * k`` per P element computed (one multiply and one add per term),
        over the blocks the trace ran (a simulated window: those blocks only).
    global_reads : int
        Elements of M and N read from global memory (the trace's read counts).
    naive_reads : int
        What the naive kernel (Fig. 3.11) reads for the same P elements: ``2 k`` each.
    """

    flop: int
    global_reads: int
    naive_reads: int

    @property
    def bytes_read(self) -> int:
        """Global bytes read: ``4 * global_reads``."""
        return BYTES_PER_ELEMENT * self.global_reads

    @property
    def op_per_byte(self) -> float:
        """CGMA in the book's unit, FLOP per byte read (OP/B); 0.25 for the naive kernel."""
        return self.flop / self.bytes_read if self.global_reads else float("inf")

    @property
    def flop_per_load(self) -> float:
        """FLOP per element read (1.0 for the naive kernel): ``4 x`` :attr:`op_per_byte`."""
        return self.flop / self.global_reads if self.global_reads else float("inf")

    @property
    def naive_op_per_byte(self) -> float:
        """The naive kernel's CGMA for the same product: 0.25 OP/B."""
        return self.flop / (BYTES_PER_ELEMENT * self.naive_reads) if self.naive_reads else 0.0

    @property
    def reduction(self) -> float:
        """``naive_reads / global_reads``: TILE_WIDTH for whole tiles."""
        return self.naive_reads / self.global_reads if self.global_reads else float("inf")


def intensity(trace: Trace) -> Intensity:
    """FLOP per global byte of a recorded launch, from its read counts (not a formula).

    Parameters
    ----------
    trace : Trace
        Any recorded trace; a simulated window counts only its blocks.

    Returns
    -------
    Intensity
    """
    k = trace.shape[1]
    n = trace.computed_elements()
    return Intensity(
        flop=2 * k * n,
        global_reads=int(trace.m_reads.sum()) + int(trace.n_reads.sum()),
        naive_reads=2 * k * n,
    )


@functools.cache
def roofline_trace(kernel: str, tile_width: int) -> Trace:
    """The shipped trace of :data:`ROOFLINE_TRACES` for one kernel and TILE_WIDTH.

    Raises
    ------
    KeyError
        For a kernel and TILE_WIDTH with no roofline trace.
    """
    _, name = ROOFLINE_TRACES[(kernel, tile_width)]
    return load(os.path.join(_DATA, name))


@dataclasses.dataclass(frozen=True)
class RooflinePoint:
    """One kernel on the roofline.

    Attributes
    ----------
    label : str
        ``'tiled T=16'``.
    kernel : str
    tile_width : int or None
    op_per_byte : float
        Arithmetic intensity (OP/B).
    gflops : float
        Measured (or, for the book's example, the book's) GFLOP/s.
    bound_gflops : float
        The roof at that intensity: ``min(peak, bandwidth x intensity)``.
    width : int or None
        The square size the speed was measured at.
    """

    label: str
    kernel: str
    tile_width: int | None
    op_per_byte: float
    gflops: float
    bound_gflops: float
    width: int | None = None

    @property
    def fraction_of_bound(self) -> float:
        """``gflops / bound_gflops``."""
        return self.gflops / self.bound_gflops


@dataclasses.dataclass(frozen=True)
class Roofline:
    """A device's roofline and kernels placed on it.

    Attributes
    ----------
    device : str
    bandwidth_gb_s : float
        DRAM bandwidth (GB/s = 1e9 bytes/s).
    peak_gflops : float
        FP32 peak (GFLOP/s).
    spec_peak_gflops : float or None
        The data-sheet peak (``SMs x 128 x 2 x clock``), drawn beside a measured one.
    source : str
    points : tuple of RooflinePoint
    """

    device: str
    bandwidth_gb_s: float
    peak_gflops: float
    spec_peak_gflops: float | None
    source: str
    points: tuple[RooflinePoint, ...]

    @property
    def ridge_op_per_byte(self) -> float:
        """Intensity where memory stops limiting: ``peak / bandwidth`` (OP/B)."""
        return self.peak_gflops / self.bandwidth_gb_s

    def attainable(self, op_per_byte) -> np.ndarray:
        """``min(peak, bandwidth x intensity)`` (GFLOP/s) for intensities in OP/B.

        Parameters
        ----------
        op_per_byte : float or array_like of float
            Intensities (OP/B).
        """
        x = np.asarray(op_per_byte, np.float64)
        return np.minimum(self.peak_gflops, self.bandwidth_gb_s * x)


def _roof(dev: Device) -> tuple[float, float]:
    """The device's DRAM bandwidth (GB/s) and FP32 peak (GFLOP/s), which a roofline needs."""
    if dev.bandwidth_gb_s is None or dev.peak_gflops is None:
        raise OccupancyError(
            f"device {dev.name} has no DRAM bandwidth or FP32 peak; a roofline needs both"
        )
    return dev.bandwidth_gb_s, dev.peak_gflops


def book_a100() -> Roofline:
    """Section 5.4's A100 example: 1555 GB/s, 19,500 GFLOPS; 0.25 OP/B -> 389, 4 OP/B -> 6220."""
    dev = get_device("A100")
    bw, peak = _roof(dev)
    pts = (
        RooflinePoint("naive (book)", "naive", None, 0.25, bw * 0.25, bw * 0.25),
        RooflinePoint("tiled T=16 (book)", "tiled", 16, 4.0, bw * 4.0, bw * 4.0),
    )
    return Roofline("A100 (book)", bw, peak, peak, dev.source, pts)


def speed_series(device: str = "H200") -> dict[str, list[tuple[int, float]]]:
    """Measured GFLOP/s against square size: ``{'tiled T=16': [(Width, GFLOP/s), ...], ...}``.

    ``'cuBLAS'`` is CuPy's float32 ``matmul``. Sizes ascending.

    Parameters
    ----------
    device : {'H200', 'H100'}
        The device whose shipped measurements are read.
    """
    out: dict[str, list[tuple[int, float]]] = {}
    for r in speed_data(device)["products"]:
        label = "cuBLAS" if r["kernel"] == "cublas" else f"{r['kernel']} T={r['tile_width']}"
        out.setdefault(label, []).append((int(r["width"]), float(r["gflops"])))
    return {k: sorted(v) for k, v in out.items()}


def measured_roofline(device: str = "H200", width: int = 4096) -> Roofline:
    """The measured roofline of ``device`` with each timed kernel at its recorded intensity.

    Parameters
    ----------
    device : {'H200', 'H100'}
    width : int
        The square size whose measured GFLOP/s are placed (4096 by default).

    Returns
    -------
    Roofline
        Points for every kernel of :data:`ROOFLINE_TRACES` measured at ``width``.
    """
    dev = get_device(device)
    data = speed_data(device)
    speeds = {
        (r["kernel"], r["tile_width"]): float(r["gflops"])
        for r in data["products"]
        if r["width"] == width
    }
    pts = []
    roof = Roofline(device, *_roof(dev), dev.spec_peak_gflops, dev.source, ())
    for key in ROOFLINE_TRACES:
        if key not in speeds:
            continue
        ai = intensity(roofline_trace(*key)).op_per_byte
        bound = float(roof.attainable(ai))
        pts.append(
            RooflinePoint(f"{key[0]} T={key[1]}", key[0], key[1], ai, speeds[key], bound, width)
        )
    return dataclasses.replace(roof, points=tuple(pts))
