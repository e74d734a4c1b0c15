"""``vizmm doctor``: what can record here, what cannot and why, each failure with its fix.

:func:`diagnose` gathers, without compiling anything in this process:

* the versions of Python, NumPy, numba, numba-cuda, numba-cuda-mlir and the
  CUDA bindings (:class:`~vizmm.record.targets.Software`);
* the driver's CUDA version and each GPU's name, compute capability and
  memory (asked through ``ctypes``: :func:`~vizmm.record.targets.driver_here`);
* for each target (numba-cuda-mlir, numba-cuda, vizmm's simulator, Numba's) whether a
  combination known to break stops it, with the one line that names the fix
  (:func:`~vizmm.record.targets.problem`);
* which backend ``auto`` picks and why (:func:`~vizmm.record.recorder.resolve_backend`);
* a proof that each usable target computes: in a fresh process per target,
  with a time limit so that a hang or a crash cannot take the doctor down, the
  book's tiled kernel (Fig. 5.9) on a 16 x 16 product checked against NumPy,
  then a recording of it (whose clocks must have been read on a GPU).

The report is a :class:`Report`; ``vizmm doctor`` prints its :meth:`Report.lines`
(or its :meth:`Report.as_dict` as JSON) and exits 0 when some path records
(the simulator counts), 1 when none does.

Usage of the probe (run by :func:`diagnose`): ``python -m vizmm.record.doctor TARGET``
prints one JSON line.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import time

from . import targets
from .recorder import _software, resolve_backend

__all__ = ["PROBE_TIMEOUT_S", "Report", "TargetStatus", "diagnose", "probe"]

#: Seconds a target's proof run may take (compiling both kernels included).
PROBE_TIMEOUT_S = 300.0
#: The backend that records with each target.
BACKEND_OF = {
    targets.MLIR: "gpu",
    targets.LEGACY: "gpu-legacy",
    targets.OWN: "simulator",
    targets.SIMULATOR: "numba-sim",
}
#: The targets that simulate (no GPU): vizmm's own and Numba's.
SIMULATORS = (targets.OWN, targets.SIMULATOR)
_W, _T = 16, 4  # the proof: Fig. 5.9 on a 16 x 16 product, TILE_WIDTH 4 (4 phases, 16 blocks)


@dataclasses.dataclass
class TargetStatus:
    """One target as the doctor found it.

    Attributes
    ----------
    name : str
        One of :data:`vizmm.record.targets.TARGETS`.
    version : str or None
        Its distribution's version; None when not installed.
    problem : str or None
        Why it cannot record here (one line with the fix), found before any compile.
    run : dict or None
        The proof run: ``ok``, ``seconds``, and ``detail`` or ``error``;
        None when not run.
    """

    name: str
    version: str | None
    problem: str | None = None
    run: dict | None = None

    @property
    def works(self) -> bool:
        """No known problem, and the proof run (if any) passed."""
        return self.problem is None and (self.run is None or bool(self.run.get("ok")))


@dataclasses.dataclass
class Report:
    """What :func:`diagnose` found.

    Attributes
    ----------
    software : dict
        Versions by distribution name (None: not installed).
    driver : dict
        :meth:`vizmm.record.targets.Driver.as_dict`.
    targets : list of TargetStatus
    auto : dict
        ``backend``, ``target`` and ``reason``: what ``backend='auto'`` picks.
    notes : list of str
        Other findings, each with its fix.
    """

    software: dict
    driver: dict
    targets: list
    auto: dict
    notes: list

    @property
    def gpu_works(self) -> bool:
        """Whether a GPU target records here (its proof run passed when run)."""
        return any(t.works for t in self.targets if t.name not in SIMULATORS)

    @property
    def ok(self) -> bool:
        """Whether some target records here (the simulator counts)."""
        return any(t.works for t in self.targets)

    def as_dict(self) -> dict:
        """The report as JSON-ready data."""
        return {
            "ok": self.ok,
            "gpu_works": self.gpu_works,
            "software": self.software,
            "driver": self.driver,
            "targets": [dict(dataclasses.asdict(t), works=t.works) for t in self.targets],
            "auto": self.auto,
            "notes": self.notes,
        }

    def lines(self) -> list[str]:
        """The report as ``vizmm doctor`` prints it."""
        out = [f"{name:<17} {v or 'not installed'}" for name, v in self.software.items()]
        d = self.driver
        if d["library"] is None:
            out.append(f"{'driver':<17} none found (no libcuda)")
        else:
            v = d["version"]
            cuda = f"CUDA {v[0]}.{v[1]}" if v else "CUDA version unknown"
            err = f", cuInit: {d['init_error']}" if d["init_error"] else ""
            out.append(f"{'driver':<17} {cuda} ({d['library']}){err}")
        for i, g in enumerate(d["devices"]):
            cc = ".".join(map(str, g["compute_capability"]))
            mem = f", {g['memory_bytes'] / 2**30:.1f} GiB" if g.get("memory_bytes") else ""
            out.append(f"{f'gpu {i}':<17} {g['name']}, compute capability {cc}{mem}")
        out.append("")
        for t in self.targets:
            name = BACKEND_OF[t.name] if t.name in SIMULATORS else t.name
            if t.version is None and t.problem:
                state = f"not installed: {t.problem.split(': ', 1)[-1]}"
            elif t.problem:
                state = f"cannot record: {t.problem}"
            elif t.run is None:
                state = "no known problem (not run)"
            elif t.run.get("ok"):
                state = f"ok: {t.run['detail']} ({t.run['seconds']:.1f} s)"
            else:
                state = f"FAILED: {t.run.get('error', 'no answer')}"
            out.append(f"{name:<17} {state}")
        out.append("")
        out.append(f"{'auto picks':<17} {self.auto['backend']} ({self.auto['reason']})")
        out.extend(f"{'note':<17} {n}" for n in self.notes)
        if self.gpu_works:
            gpu = next(t for t in self.targets if t.name not in SIMULATORS and t.works)
            verdict = f"ok: recordings run on the GPU ({gpu.name} {gpu.version})"
        elif self.ok:
            why = self.auto["reason"] if self.auto["backend"] == "simulator" else "see above"
            verdict = f"ok, in the simulator only: the GPU path is unavailable ({why})"
        else:
            verdict = "nothing can record here: see the lines above for the fixes"
        out.append(f"{'verdict':<17} {verdict}")
        return out


def diagnose(run: bool = True, timeout: float = PROBE_TIMEOUT_S) -> Report:
    """Find what can record here; see the module docstring.

    Parameters
    ----------
    run : bool
        Prove each usable target by running the tiny kernel in a fresh process.
    timeout : float
        Seconds each proof run may take.
    """
    software = _software()
    driver = targets.driver_here()
    versions = {
        "python": software.python,
        "numpy": software.numpy,
        "numba": software.numba,
        "numba-cuda": software.numba_cuda,
        "numba-cuda-mlir": software.numba_cuda_mlir,
        "cuda-bindings": software.cuda_bindings,
    }
    statuses = []
    from .._version import __version__

    for name in targets.TARGETS:
        version = {targets.MLIR: software.numba_cuda_mlir, targets.OWN: __version__}.get(
            name, software.numba_cuda
        )
        status = TargetStatus(name, version, targets.problem(name, software, driver))
        if run and status.problem is None:
            status.run = _run_probe(name, timeout)
        statuses.append(status)
    choice = resolve_backend("auto")
    auto = {"backend": choice.backend, "target": choice.target, "reason": choice.reason}
    notes = []
    late = targets.late_simulator_flag()
    if late:
        notes.append(late)
    if choice.backend == "gpu":
        picked = next(t for t in statuses if t.name == choice.target)
        if not picked.works:
            notes.append(
                f"auto picks {picked.name}, whose proof run failed: record with "
                "--backend gpu-legacy or --backend simulator, and report the failure"
            )
    if software.numba_cuda_mlir is None and driver.devices:
        notes.append(
            "numba-cuda-mlir is not installed: pip install 'vizmm[gpu]' (CUDA 13) or "
            "'vizmm[gpu-cu12]' (CUDA 12) for the maintained compiler"
        )
    return Report(versions, driver.as_dict(), statuses, auto, notes)


def _run_probe(target: str, timeout: float) -> dict:
    """:func:`probe` in a fresh process for ``target``, within ``timeout`` seconds."""
    env = dict(os.environ, **targets.environment(target))
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(
            [sys.executable, "-P", "-m", "vizmm.record.doctor", target],
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        return {"ok": False, "seconds": timeout, "error": f"no answer within {timeout:.0f} s"}
    except OSError as exc:
        return {"ok": False, "seconds": 0.0, "error": f"could not start Python: {exc}"}
    seconds = round(time.perf_counter() - t0, 2)
    try:
        answer = json.loads(proc.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        tail = " ".join((proc.stderr.strip().splitlines() or ["no output"])[-1].split())
        return {"ok": False, "seconds": seconds, "error": f"exit code {proc.returncode}: {tail}"}
    answer["seconds"] = seconds
    return answer


def probe(target: str) -> dict:
    """Prove ``target`` computes, in this process: the plain kernel, then a recording.

    Fig. 5.9 (``tiled``) on a 16 x 16 product with TILE_WIDTH 4 must give
    NumPy's product exactly (small integers), first as the plain kernel, then
    recorded with ``vizmm.record`` (whose clocks must be read on a GPU).

    Parameters
    ----------
    target : str
        A target of :data:`vizmm.record.targets.TARGETS`.
    """
    import numpy as np

    from .recorder import record

    try:
        _target = targets.bind_here(target)
        detail = []
        if target not in SIMULATORS:
            import vizmm_kernels as K

            cuda = _target.cuda
            rng = np.random.default_rng(1)
            M = rng.integers(0, 10, (_W, _W)).astype(np.float32)
            N = rng.integers(0, 10, (_W, _W)).astype(np.float32)
            grid, block = K.grid_dims(_W, _W, _T)
            d = [cuda.to_device(a) for a in (M.ravel(), N.ravel(), np.zeros(_W * _W, np.float32))]
            K.get_kernel("tiled", _T)[grid, block](*d, _W)
            cuda.synchronize()
            P = d[2].copy_to_host().reshape(_W, _W)
            if not np.array_equal(P, M.astype(np.float64) @ N):
                return {"ok": False, "error": "the plain kernel's P differs from NumPy's M @ N"}
            dev = cuda.get_current_device()
            name = dev.name.decode() if isinstance(dev.name, bytes) else dev.name
            detail.append(f"Fig. 5.9 on the {name}, P == NumPy")
        trace = record(
            width=_W, tile_width=_T, kernel="tiled", backend=BACKEND_OF[target], quiet=True
        )
        if not np.array_equal(trace.P, trace.M.astype(np.float64) @ trace.N):
            return {"ok": False, "error": "the recording's P differs from NumPy's M @ N"}
        if target not in SIMULATORS and not trace.has_clocks:
            return {"ok": False, "error": "the recording read no %clock64 on the GPU"}
        where = {
            targets.OWN: "in vizmm's simulator",
            targets.SIMULATOR: "in Numba's simulator",
        }.get(target, "on the GPU")
        clocks = ", clocks read" if trace.has_clocks else " (no clocks there)"
        detail.append(f"Fig. 5.9 recorded {where}, P == NumPy{clocks}")
        return {"ok": True, "detail": "; ".join(detail)}
    except Exception as exc:  # noqa: BLE001 - reported as the target's failure
        line = targets.gpu_error(exc, target) or f"{type(exc).__name__}: {exc}"
        return {"ok": False, "error": " ".join(line.split())[:500]}


if __name__ == "__main__":
    print(json.dumps(probe(sys.argv[1])), flush=True)
