"""The two GPU targets and the simulator: which compiles for which request, known failures, doctor.

Nothing here needs a GPU: the decision functions of :mod:`vizmm.record.targets`
and ``vizmm_kernels._target`` are pure (versions and driver passed in), the
recorder is given made-up versions, and ``vizmm doctor`` runs on this machine
(which on CI has no GPU).
"""

import importlib.util
import json
import os
import subprocess
import sys
import types

import pytest
from conftest import gpu_usable

import vizmm
from vizmm.cli import main
from vizmm.record import GPUUnavailableError, launcher, recorder, targets
from vizmm.record.doctor import _run_probe, diagnose
from vizmm.trace import TraceError, from_bytes
from vizmm.trace.model import check_meta

MLIR, LEGACY, SIMULATOR = targets.MLIR, targets.LEGACY, targets.SIMULATOR
GPU = targets.Driver(
    "libcuda.so.1", (13, 0), None, ({"name": "H100", "compute_capability": [9, 0]},)
)
NO_DRIVER = targets.Driver()


def software(numpy="2.4.6", mlir="0.6.0", legacy="0.30.4", bindings="13.0.3", row_stack=True):
    return targets.Software(
        python="3.12.3",
        numpy=numpy,
        numba="0.63.0",
        numba_cuda=legacy,
        numba_cuda_mlir=mlir,
        cuda_bindings=bindings,
        legacy_row_stack=row_stack,
    )


# ----------------------------------------------------------------- the choice
@pytest.mark.parametrize(
    "backend, mlir, want",
    [
        ("gpu", "0.6.0", MLIR),
        ("gpu", None, LEGACY),
        ("gpu-legacy", "0.6.0", LEGACY),
        ("gpu-legacy", None, LEGACY),
    ],
)
def test_gpu_target_prefers_numba_cuda_mlir(backend, mlir, want):
    assert targets.gpu_target(backend, software(mlir=mlir)) == want
    assert targets.choose(backend, software(mlir=mlir), GPU).target == want


def test_simulator_is_vizmms_own_and_numba_sim_numba_cudas():
    choice = targets.choose("simulator", software(), NO_DRIVER)
    assert (choice.backend, choice.target) == ("simulator", targets.OWN)
    # vizmm's simulator needs no numba-cuda at all
    choice = targets.choose("simulator", software(legacy=None), NO_DRIVER)
    assert (choice.backend, choice.target) == ("simulator", targets.OWN)
    choice = targets.choose("numba-sim", software(), NO_DRIVER)
    assert (choice.backend, choice.target) == ("numba-sim", SIMULATOR)
    with pytest.raises(GPUUnavailableError, match="numba-cuda is not installed"):
        targets.choose("numba-sim", software(legacy=None), NO_DRIVER)


@pytest.mark.parametrize("numpy", ["2.5.0", "2.5.2", "2.6.0rc1", "3.0.0"])
def test_legacy_with_numpy_2_5_is_refused_before_any_compile(numpy):
    with pytest.raises(GPUUnavailableError) as info:
        targets.choose("gpu-legacy", software(numpy=numpy), GPU)
    assert str(info.value).startswith(targets.LEGACY_NUMPY)
    assert targets.LEGACY_NUMPY == (
        "numba-cuda cannot compile with NumPy 2.5: pip install 'vizmm[gpu]' "
        "(numba-cuda-mlir), or pip install 'numpy<2.5'"
    )
    # 'gpu' without numba-cuda-mlir is numba-cuda: the same refusal.
    with pytest.raises(GPUUnavailableError, match="cannot compile with NumPy 2.5"):
        targets.choose("gpu", software(numpy=numpy, mlir=None), GPU)


def test_numba_cuda_mlir_compiles_with_numpy_2_5():
    choice = targets.choose("gpu", software(numpy="2.5.2"), GPU)
    assert (choice.backend, choice.target) == ("gpu", MLIR)
    assert choice.reason == "numba-cuda-mlir 0.6.0"


def test_legacy_with_numpy_2_4_or_a_fixed_numba_cuda_compiles():
    assert targets.choose("gpu-legacy", software(numpy="2.4.6"), GPU).target == LEGACY
    # A numba-cuda whose np.row_stack overload is gone is not refused.
    assert targets.choose("gpu-legacy", software(numpy="2.5.2", row_stack=False), GPU).target
    # Unknown (the file could not be read): refused, to be safe.
    with pytest.raises(GPUUnavailableError):
        targets.choose("gpu-legacy", software(numpy="2.5.2", row_stack=None), GPU)


def test_auto_picks_the_gpu_when_usable_else_says_why():
    assert targets.choose("auto", software(), GPU).backend == "gpu"
    assert "H100" in targets.choose("auto", software(), GPU).reason
    choice = targets.choose("auto", software(), NO_DRIVER)
    assert (choice.backend, choice.target) == ("simulator", targets.OWN)
    assert choice.reason == "no GPU here: no NVIDIA driver found (libcuda)"
    choice = targets.choose("auto", software(numpy="2.5.0", mlir=None), GPU)
    assert choice.backend == "simulator" and choice.reason == targets.LEGACY_NUMPY


NO_DEVICE = targets.Driver("libcuda.so.1", (13, 0), "CUDA_ERROR_NO_DEVICE")


@pytest.mark.parametrize("numpy", ["2.4.6", "2.5.0", "2.5.2"])
@pytest.mark.parametrize("mlir", [None, "0.6.0"])
@pytest.mark.parametrize(
    "driver, absent",
    [
        (NO_DRIVER, "no NVIDIA driver found (libcuda)"),
        (NO_DEVICE, "the NVIDIA driver sees no GPU (CUDA_ERROR_NO_DEVICE)"),
    ],
    ids=["no-driver", "no-device"],
)
def test_without_a_gpu_the_advice_is_the_missing_gpu_never_numpy(numpy, mlir, driver, absent):
    # Issue: with NumPy 2.5 and only numba-cuda, a machine without a GPU was told to
    # install numba-cuda-mlir or an older NumPy; neither makes a GPU appear.
    sw = software(numpy=numpy, mlir=mlir)
    choice = targets.choose("auto", sw, driver)
    assert (choice.backend, choice.target) == ("simulator", targets.OWN)
    assert choice.reason == f"no GPU here: {absent}"
    for backend in ("gpu", "gpu-legacy"):
        with pytest.raises(GPUUnavailableError) as info:
            targets.choose(backend, sw, driver)
        message = str(info.value)
        assert message.startswith(absent) and "NumPy" not in message, message
    for target in (LEGACY, MLIR):
        line = targets.problem(target, sw, driver)
        if target == MLIR and mlir is None:
            assert line == "numba-cuda-mlir is not installed: pip install 'vizmm[gpu]'"
        else:
            assert line.startswith(absent) and "NumPy" not in line
    # Without asking the driver, the versions alone still name NumPy 2.5's problem.
    if numpy >= "2.5":
        assert targets.problem(LEGACY, sw) == targets.LEGACY_NUMPY


def test_a_gpu_with_numpy_2_5_and_only_numba_cuda_gets_the_numpy_advice():
    sw = software(numpy="2.5.2", mlir=None)
    assert targets.problem(LEGACY, sw, GPU) == targets.LEGACY_NUMPY
    assert targets.choose("auto", sw, GPU).reason == targets.LEGACY_NUMPY
    # A driver too old for the bindings comes after the versions: fix NumPy first.
    old = targets.Driver("libcuda.so.1", (12, 4), None, GPU.devices)
    assert targets.problem(LEGACY, sw, old) == targets.LEGACY_NUMPY


@pytest.mark.parametrize(
    "driver, words",
    [
        (NO_DRIVER, "no NVIDIA driver found (libcuda)"),
        (targets.Driver("libcuda.so.1", (13, 0), "CUDA_ERROR_NO_DEVICE"), "sees no GPU"),
        (targets.Driver("libcuda.so.1", (13, 0), None, ()), "sees no GPU"),
        (
            targets.Driver("libcuda.so.1", (12, 4), None, GPU.devices),
            "older than the CUDA 13 of cuda-bindings 13.0.3",
        ),
        (
            targets.Driver("libcuda.so.1", (13, 0), "CUDA_ERROR_UNKNOWN"),
            "failed to start (CUDA_ERROR_UNKNOWN)",
        ),
    ],
)
def test_driver_problems_name_the_fix(driver, words):
    with pytest.raises(GPUUnavailableError) as info:
        targets.choose("gpu", software(), driver)
    message = str(info.value)
    assert words in message
    assert "\n" not in message
    assert "simulator" in message  # the way that works without a GPU


def test_a_driver_too_old_for_cuda_13_points_to_the_cuda_12_build():
    old = targets.Driver("libcuda.so.1", (12, 8), None, GPU.devices)
    line = targets.problem(MLIR, software(bindings="13.0.3"), old)
    assert "pip install 'vizmm[gpu-cu12]'" in line
    # The CUDA 12 build runs on that driver.
    assert targets.problem(MLIR, software(bindings="12.9.10"), old) is None


def test_unknown_backend():
    with pytest.raises(ValueError, match="unknown backend"):
        targets.choose("cuda", software(), GPU)


@pytest.mark.parametrize(
    "exc, words",
    [
        (AttributeError("module 'numpy' has no attribute 'row_stack'"), "NumPy 2.5"),
        (RuntimeError("CUDA_ERROR_UNSUPPORTED_PTX_VERSION"), "older than the CUDA toolkit"),
        (RuntimeError("CUDA driver library cannot be found."), "no NVIDIA driver"),
        (RuntimeError("[100] Call to cuInit results in CUDA_ERROR_NO_DEVICE"), "sees no GPU"),
    ],
)
def test_failures_met_inside_a_compiler_become_one_line(exc, words):
    line = targets.gpu_error(exc, LEGACY)
    assert words in line and "\n" not in line
    assert targets.gpu_error(ValueError("something else"), LEGACY) is None


# ------------------------------------------------------ one target per process
def test_the_kernels_choice_is_pure():
    from vizmm_kernels import _target

    assert _target.choose(None, True, False) == MLIR
    assert _target.choose("auto", False, False) == LEGACY
    assert _target.choose("numba-cuda", True, False) == LEGACY
    assert _target.choose("numba-cuda-mlir", True, True) == SIMULATOR  # the simulator wins
    with pytest.raises(ValueError, match="not installed"):
        _target.choose("numba-cuda-mlir", False, False)
    with pytest.raises(ValueError, match="must be"):
        _target.choose("cuda", True, False)
    assert _target.simulating({"NUMBA_ENABLE_CUDASIM": "1"}, {}) is True
    assert _target.simulating({}, {}) is False
    config = types.SimpleNamespace(ENABLE_CUDASIM=0)  # numba imported: its config decides
    assert _target.simulating({"NUMBA_ENABLE_CUDASIM": "1"}, {"numba.core.config": config}) is False


def test_the_names_agree_and_this_process_simulates():
    from vizmm_kernels import _target

    assert (_target.MLIR, _target.LEGACY, _target.SIMULATOR) == (MLIR, LEGACY, SIMULATOR)
    assert _target.ENV == targets.KERNELS_ENV
    assert set(targets.TARGETS) == set(vizmm.trace.model.TARGETS)
    if not os.environ.get("VIZMM_TEST_GPU"):  # numba's simulator, or no compiler at all
        want = SIMULATOR if importlib.util.find_spec("numba") else _target.NONE
        assert _target.NAME == want
        assert targets.process_target() == want


def test_a_process_bound_to_one_target_sends_the_others_to_a_worker():
    sim = types.SimpleNamespace(ENABLE_CUDASIM=1)
    gpu = types.SimpleNamespace(ENABLE_CUDASIM=0)
    kernels = {"vizmm_kernels._target": types.SimpleNamespace(NAME=MLIR)}
    assert targets.can_run_here(SIMULATOR, {}) and targets.can_run_here(MLIR, {})
    assert targets.can_run_here(SIMULATOR, {"numba.core.config": sim})
    assert not targets.can_run_here(MLIR, {"numba.core.config": sim})
    assert not targets.can_run_here(SIMULATOR, {"numba.core.config": gpu})
    assert targets.can_run_here(LEGACY, {"numba.core.config": gpu})
    assert targets.can_run_here(MLIR, kernels) and not targets.can_run_here(LEGACY, kernels)
    assert targets.environment(SIMULATOR) == {
        "NUMBA_ENABLE_CUDASIM": "1",
        "VIZMM_KERNELS_TARGET": "auto",
    }
    # vizmm's simulator compiles nothing: any process runs it; a fresh one imports no numba
    assert targets.can_run_here(targets.OWN, {"numba.core.config": gpu})
    assert targets.can_run_here(targets.OWN, kernels)
    assert targets.environment(targets.OWN) == {"VIZMM_KERNELS_TARGET": "none"}
    assert targets.environment(LEGACY) == {
        "NUMBA_ENABLE_CUDASIM": "0",
        "VIZMM_KERNELS_TARGET": "numba-cuda",
    }


def test_a_fresh_process_is_bound_early_to_the_recordings_target_unless_told_otherwise():
    early = targets.early_environment
    sim = {"NUMBA_ENABLE_CUDASIM": "1", "VIZMM_KERNELS_TARGET": "auto"}
    assert early(SIMULATOR, {}, {}) == sim
    assert early(SIMULATOR, {"NUMBA_ENABLE_CUDASIM": "1"}, {}) == sim
    assert early(MLIR, {}, {}) == {"NUMBA_ENABLE_CUDASIM": "0", "VIZMM_KERNELS_TARGET": MLIR}
    # a variable the caller set is never overridden (a GPU test run, a chosen compiler)
    assert early(SIMULATOR, {"NUMBA_ENABLE_CUDASIM": "0"}, {}) == {}
    assert early(MLIR, {"NUMBA_ENABLE_CUDASIM": "1"}, {}) == {}
    assert early(MLIR, {"VIZMM_KERNELS_TARGET": LEGACY}, {}) == {}
    # decided already: numba or the kernels imported
    assert early(SIMULATOR, {}, {"numba": types.SimpleNamespace()}) == {}
    bound = {"vizmm_kernels._target": types.SimpleNamespace(NAME=LEGACY)}
    assert early(SIMULATOR, {}, bound) == {}


def test_numba_cuda_sim_set_after_numba_was_imported_is_named():
    gpu = {"numba.core.config": types.SimpleNamespace(ENABLE_CUDASIM=0)}
    line = targets.late_simulator_flag({"NUMBA_ENABLE_CUDASIM": "1"}, gpu)
    assert "after numba was imported" in line and "set it before" in line
    assert targets.late_simulator_flag({"NUMBA_ENABLE_CUDASIM": "0"}, gpu) is None
    assert targets.late_simulator_flag({"NUMBA_ENABLE_CUDASIM": "1"}, {}) is None


# ------------------------------------------------------------ the recorder
@pytest.fixture
def numpy_2_5(monkeypatch):
    """The recorder sees NumPy 2.5 and no numba-cuda-mlir; nothing may be launched."""
    monkeypatch.setattr(recorder, "_software", lambda: software(numpy="2.5.0", mlir=None))
    monkeypatch.setattr(targets, "driver_here", lambda: GPU)  # a GPU: NumPy is the problem

    def no_launch(*args, **kwargs):
        raise AssertionError("launched although the combination is known to break")

    monkeypatch.setattr(launcher, "launch", no_launch)
    monkeypatch.setattr(recorder, "_record_in_subprocess", no_launch)


# (ids: a test whose keywords hold "gpu" is a GPU test for conftest.py)
@pytest.mark.parametrize("backend", ["gpu", "gpu-legacy"], ids=["best", "legacy"])
def test_record_refuses_legacy_under_numpy_2_5_before_compiling(numpy_2_5, backend):
    with pytest.raises(GPUUnavailableError) as info:
        vizmm.record(width=4, tile_width=2, backend=backend, quiet=True)
    assert str(info.value).startswith(targets.LEGACY_NUMPY)


def test_auto_under_numpy_2_5_says_why_it_simulates(numpy_2_5, monkeypatch, capsys):
    recorded = []
    monkeypatch.setattr(launcher, "launch", lambda job, *a, **k: recorded.append(job))
    monkeypatch.setattr(
        recorder, "_record_in_subprocess", lambda job, *a, **k: recorded.append(job)
    )
    vizmm.record(width=4, tile_width=2, backend="auto")
    assert recorded[0].backend == "simulator" and recorded[0].target == targets.OWN
    assert f"recording on the simulator ({targets.LEGACY_NUMPY})" in capsys.readouterr().err


def test_cli_prints_the_fix_on_one_line_with_exit_2(numpy_2_5, tmp_path, capsys):
    out = tmp_path / "t.vizmm"
    code = main(["record", "--width", "4", "-t", "2", "--backend", "gpu-legacy", "-o", str(out)])
    err = capsys.readouterr().err
    assert code == 2
    assert err.strip() == f"vizmm: error: {targets.LEGACY_NUMPY}; {targets.SIMULATOR_HINT}"
    assert not out.exists()


@pytest.mark.skipif(gpu_usable(), reason="a GPU is usable here")
@pytest.mark.parametrize("numpy", [None, "2.5.2"], ids=["installed-numpy", "numpy-2.5"])
def test_cli_on_a_machine_without_a_gpu_says_so_and_nothing_of_numpy(
    numpy, monkeypatch, tmp_path, capsys
):
    # This machine's own driver (none): with the NumPy installed here, and with
    # NumPy 2.5 and numba-cuda only (what Python >= 3.12 gets).
    if numpy is not None:
        monkeypatch.setattr(recorder, "_software", lambda: software(numpy=numpy, mlir=None))
    out = tmp_path / "t.vizmm"
    assert main(["record", "--width", "4", "-t", "2", "-o", str(out)]) == 0
    err = capsys.readouterr().err
    assert "vizmm: recording on the simulator (no GPU here: " in err, err
    assert "NumPy" not in err and "numpy" not in err
    assert vizmm.load(out).backend == "simulator"
    out.unlink()
    for backend in ("gpu", "gpu-legacy"):
        code = main(["record", "--width", "4", "-t", "2", "--backend", backend, "-o", str(out)])
        err = capsys.readouterr().err.strip()
        assert code == 2 and "\n" not in err
        said = ("vizmm: error: no NVIDIA driver", "vizmm: error: the NVIDIA driver")
        if numpy is None and importlib.util.find_spec("numba") is None:
            said += ("vizmm: error: numba-cuda is not installed",)  # no compiler to name
        assert err.startswith(said), err
        assert "NumPy" not in err and "numpy" not in err
        assert err.endswith(targets.SIMULATOR_HINT)
        assert not out.exists()


def _doctor(monkeypatch, sw, driver):
    doctor = sys.modules[diagnose.__module__]
    monkeypatch.setattr(doctor, "_software", lambda: sw)
    monkeypatch.setattr(recorder, "_software", lambda: sw)
    monkeypatch.setattr(targets, "driver_here", lambda: driver)
    lines = diagnose(run=False).lines()
    return {line.split("  ")[0]: line[18:] for line in lines if line}


def test_doctor_without_a_gpu_names_the_missing_gpu_before_numpy(monkeypatch):
    said = _doctor(monkeypatch, software(numpy="2.5.2", mlir=None), NO_DRIVER)
    assert said["numba-cuda"] == (
        "cannot record: no NVIDIA driver found (libcuda): install the NVIDIA driver on a "
        "machine with a GPU"
    )
    assert said["auto picks"] == "simulator (no GPU here: no NVIDIA driver found (libcuda))"
    assert said["verdict"] == (
        "ok, in the simulator only: the GPU path is unavailable "
        "(no GPU here: no NVIDIA driver found (libcuda))"
    )
    assert not any("NumPy" in v for v in said.values())


def test_doctor_with_a_gpu_under_numpy_2_5_keeps_the_numpy_advice(monkeypatch):
    said = _doctor(monkeypatch, software(numpy="2.5.2", mlir=None), GPU)
    assert said["numba-cuda"] == f"cannot record: {targets.LEGACY_NUMPY}"
    assert said["auto picks"] == f"simulator ({targets.LEGACY_NUMPY})"
    assert said["verdict"] == (
        f"ok, in the simulator only: the GPU path is unavailable ({targets.LEGACY_NUMPY})"
    )


@pytest.mark.skipif(gpu_usable(), reason="a GPU is usable here")
def test_a_worker_answers_a_known_failure_in_one_line():
    job = launcher.Job(
        vizmm.LaunchShape("tiled", 4, 4, 4, 2), [(0, 0)], False, 0, "gpu", "seeded", target=MLIR
    )
    M, N = vizmm.trace.seeded_inputs(4, 4, 4, 0)
    with pytest.raises(GPUUnavailableError) as info:  # not installed, or no driver
        recorder._record_in_subprocess(job, M, N, quiet=True)
    assert "\n" not in str(info.value) and "Traceback" not in str(info.value)


def test_gpu_available_asks_the_driver_not_a_compiler(monkeypatch):
    monkeypatch.setattr(recorder, "_software", lambda: software())
    monkeypatch.setattr(targets, "driver_here", lambda: NO_DRIVER)
    assert not vizmm.gpu_available() and not vizmm.gpu_available("gpu-legacy")
    monkeypatch.setattr(targets, "driver_here", lambda: GPU)
    assert vizmm.gpu_available() and vizmm.gpu_available("gpu-legacy")


# ------------------------------------------------------- the trace's target
def test_the_trace_records_its_target_and_keeps_it(record_sim):
    trace = record_sim(width=4, tile_width=2, kernel="tiled")
    target = trace.meta["target"]
    assert target["name"] == targets.OWN
    assert target["version"] == trace.meta["versions"]["vizmm"]
    again = from_bytes(trace.to_bytes())
    assert again.meta["target"] == target
    assert f"compiler    {targets.OWN} {target['version']}" in again.summary()


@pytest.mark.parametrize(
    "bad",
    [
        "numba-cuda-mlir",
        {"name": "numba-cuda-mlir"},
        {"name": "cupy", "version": "13"},
        {"name": "numba-cuda", "version": 30},
        {"name": "numba-cuda", "version": ""},
        {"name": "numba-cuda", "version": "0.30", "extra": 1},
    ],
)
def test_a_bad_target_in_the_metadata_is_refused(record_sim, bad):
    meta = dict(record_sim(width=4, tile_width=2, kernel="tiled").meta, target=bad)
    with pytest.raises(TraceError, match="'target'"):
        check_meta(meta)


# ------------------------------------------------------------------- doctor
@pytest.mark.skipif(gpu_usable(), reason="a GPU is usable here")
def test_doctor_without_a_gpu_exits_0_and_says_why():
    env = dict(os.environ)
    env.pop("NUMBA_ENABLE_CUDASIM", None)
    proc = subprocess.run(
        [sys.executable, "-m", "vizmm", "doctor"], capture_output=True, text=True, env=env
    )
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    for name in ("python", "numpy", "numba", "numba-cuda", "numba-cuda-mlir"):
        assert any(line.split()[0] == name for line in lines if line), name
    sim = next(line for line in lines if line.startswith("simulator "))
    assert "ok: Fig. 5.9 recorded in vizmm's simulator, P == NumPy" in sim
    numba_sim = next(line for line in lines if line.startswith("numba-sim "))
    if importlib.util.find_spec("numba") is not None:
        assert "ok: Fig. 5.9 recorded in Numba's simulator, P == NumPy" in numba_sim
    else:
        assert "not installed" in numba_sim
    assert next(line for line in lines if line.startswith("auto picks")).split()[2] == "simulator"
    verdict = next(line for line in lines if line.startswith("verdict"))
    assert "ok, in the simulator only: the GPU path is unavailable (" in verdict


@pytest.mark.skipif(gpu_usable(), reason="a GPU is usable here")
def test_doctor_json_and_no_run(capsys):
    assert main(["doctor", "--no-run", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["ok"] and not report["gpu_works"]
    by_name = {t["name"]: t for t in report["targets"]}
    numba_here = importlib.util.find_spec("numba") is not None
    assert by_name[SIMULATOR]["works"] == numba_here and by_name[SIMULATOR]["run"] is None
    assert by_name[targets.OWN]["works"] and by_name[targets.OWN]["run"] is None
    assert by_name[MLIR]["problem"] and by_name[LEGACY]["problem"]
    assert report["auto"]["backend"] == "simulator"


def test_a_hanging_probe_cannot_take_doctor_down():
    answer = _run_probe(SIMULATOR, timeout=0.01)
    assert answer == {"ok": False, "seconds": 0.01, "error": "no answer within 0 s"}
    report = diagnose(run=True, timeout=0.01)  # every run times out: nothing is proven
    assert not report.ok
    assert "nothing can record here" in report.lines()[-1]


def test_doctor_rejects_a_bad_timeout(capsys):
    assert main(["doctor", "--timeout", "0"]) == 2
    assert "--timeout" in capsys.readouterr().err
