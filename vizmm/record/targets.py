"""Which compiler records on the GPU, and the combinations known to break, found before any compile.

A recording asks for a *backend*; a *target* compiles (or simulates) the kernels:

==============  ==========================================================================
backend         target
==============  ==========================================================================
``gpu``         ``numba-cuda-mlir`` when it is installed, else ``numba-cuda``
``gpu-legacy``  ``numba-cuda`` (NVIDIA's earlier compiler, in maintenance)
``simulator``   ``vizmm-simulator`` (vizmm's own: a block's threads as NumPy lanes,
                :mod:`.simt`; no GPU and no numba needed)
``numba-sim``   ``numba-cuda-simulator`` (numba-cuda's CUDA simulator, one Python thread
                per CUDA thread: kept as a cross-check while numba-cuda installs)
``auto``        ``gpu`` when it is usable (a driver, a GPU, no combination known to break),
                else ``simulator``, saying why
==============  ==========================================================================

vizmm's simulator needs no compiler: any process runs it, whichever target
it is bound to (:func:`can_run_here`).

A process compiles with one target only (the kernels take ``cuda`` from
``vizmm_kernels._target``, which chooses when first imported, from
``NUMBA_ENABLE_CUDASIM`` and ``VIZMM_KERNELS_TARGET``); a recording for
another target runs in a fresh process (:mod:`.worker`) with those variables
set by :func:`environment`.

Known-broken combinations are found from the installed distributions' versions
and the driver, before anything is compiled, and answered with one line that
names the fix (:func:`problem`); :func:`gpu_error` turns the same failures met
later (inside a compiler or at a launch) into that line.

Nothing here imports numba or numba-cuda-mlir: versions come from the
distributions' metadata, the driver is asked through ``ctypes``.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import dataclasses
import functools
import importlib.metadata
import importlib.util
import json
import os
import re
import subprocess
import sys

__all__ = [
    "BACKENDS",
    "GPUUnavailableError",
    "GPU_BACKENDS",
    "LEGACY",
    "MLIR",
    "OWN",
    "SIMULATOR",
    "TARGETS",
    "Choice",
    "Driver",
    "Software",
    "can_run_here",
    "choose",
    "driver_here",
    "early_environment",
    "environment",
    "gpu_absent",
    "gpu_error",
    "gpu_target",
    "problem",
    "probe_driver",
    "process_target",
]

# The names of vizmm_kernels._target (a test keeps them equal; importing that
# module would choose this process's target).
MLIR = "numba-cuda-mlir"
LEGACY = "numba-cuda"
SIMULATOR = "numba-cuda-simulator"
#: vizmm's own simulator (:mod:`.simt`): not a compiler, but where a trace was recorded.
OWN = "vizmm-simulator"
TARGETS = (MLIR, LEGACY, SIMULATOR, OWN)
KERNELS_ENV = "VIZMM_KERNELS_TARGET"
#: ``vizmm_kernels._target``'s name for a process that compiles nothing (numba never imported).
NO_COMPILER = "none"

#: What a recording may ask for.
BACKENDS = ("simulator", "numba-sim", "gpu", "gpu-legacy", "auto")
#: The simulators: vizmm's own and Numba's.
SIMULATOR_BACKENDS = ("simulator", "numba-sim")
#: The backends that run on a GPU.
GPU_BACKENDS = ("gpu", "gpu-legacy")

#: Added to the line of a GPU backend that cannot record.
SIMULATOR_HINT = "or record in the simulator (backend 'simulator': slow, but no GPU needed)"
#: A worker's exit code for a known failure (its one line is in OUT.error).
EXIT_KNOWN = 3

#: The fix for numba-cuda under NumPy 2.5 (numba-cuda's np.row_stack overload).
LEGACY_NUMPY = (
    "numba-cuda cannot compile with NumPy 2.5: pip install 'vizmm[gpu]' (numba-cuda-mlir), "
    "or pip install 'numpy<2.5'"
)


class GPUUnavailableError(RuntimeError):
    """A GPU was asked for where none can record; the message names the fix in one line."""


@dataclasses.dataclass(frozen=True)
class Software:
    """The versions that decide which target can compile (None: not installed).

    Attributes
    ----------
    python, numpy, numba, numba_cuda, numba_cuda_mlir : str or None
    cuda_bindings : str or None
        The CUDA Python bindings; their major version is the CUDA major
        version the driver must support.
    legacy_row_stack : bool or None
        Whether numba-cuda's ``np/arrayobj.py`` overloads ``np.row_stack``
        (which NumPy 2.5 removed); None when the file could not be read.
    """

    python: str
    numpy: str | None = None
    numba: str | None = None
    numba_cuda: str | None = None
    numba_cuda_mlir: str | None = None
    cuda_bindings: str | None = None
    legacy_row_stack: bool | None = None

    @classmethod
    def here(cls) -> Software:
        """The versions installed for this Python (read from metadata, nothing imported)."""
        return cls(
            python=sys.version.split()[0],
            numpy=_dist_version("numpy"),
            numba=_dist_version("numba"),
            numba_cuda=_dist_version("numba-cuda"),
            numba_cuda_mlir=(
                _dist_version("numba-cuda-mlir")
                if importlib.util.find_spec("numba_cuda_mlir") is not None
                else None
            ),
            cuda_bindings=_dist_version("cuda-bindings"),
            legacy_row_stack=_legacy_row_stack(),
        )

    def as_dict(self) -> dict:
        """The fields as a dict (for ``vizmm doctor --json``)."""
        return dataclasses.asdict(self)


def _dist_version(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def _legacy_row_stack() -> bool | None:
    """Whether numba-cuda's array overloads name ``np.row_stack`` (read as text, not imported)."""
    try:
        dist = importlib.metadata.distribution("numba-cuda")
    except importlib.metadata.PackageNotFoundError:
        return None
    for f in dist.files or ():
        if str(f).replace("\\", "/").endswith("numba/cuda/np/arrayobj.py"):
            try:
                with open(str(dist.locate_file(f)), encoding="utf-8") as source:
                    text = source.read()
            except OSError:
                return None
            return re.search(r"^\s*overload\(np\.row_stack\)", text, flags=re.M) is not None
    return None


def _version_tuple(text: str | None) -> tuple[int, ...]:
    """``'2.5.0rc1'`` -> ``(2, 5, 0)``; ``()`` for None."""
    if not text:
        return ()
    return tuple(int(x) for x in re.findall(r"\d+", text.split("+")[0])[:3])


@dataclasses.dataclass(frozen=True)
class Driver:
    """What the NVIDIA driver says, asked through ``ctypes`` (no compiler imported).

    Attributes
    ----------
    library : str or None
        The driver library loaded (``libcuda.so.1``), None when none was found.
    version : (int, int) or None
        The CUDA version the driver supports, e.g. ``(13, 0)``.
    init_error : str or None
        ``cuInit``'s error name when it failed (``CUDA_ERROR_NO_DEVICE`` ...).
    devices : tuple of dict
        Each GPU's ``name``, ``compute_capability`` ([major, minor]) and
        ``memory_bytes``.
    """

    library: str | None = None
    version: tuple[int, int] | None = None
    init_error: str | None = None
    devices: tuple = ()

    def as_dict(self) -> dict:
        """The fields as a dict (JSON-ready)."""
        return {
            "library": self.library,
            "version": list(self.version) if self.version else None,
            "init_error": self.init_error,
            "devices": [dict(d) for d in self.devices],
        }

    @classmethod
    def from_dict(cls, d: dict) -> Driver:
        """The inverse of :meth:`as_dict`.

        Parameters
        ----------
        d : dict
            What :meth:`as_dict` made.
        """
        v = d.get("version")
        return cls(
            d.get("library"), tuple(v) if v else None, d.get("init_error"), tuple(d["devices"])
        )


def _driver_library():
    names = ["nvcuda.dll"] if sys.platform == "win32" else ["libcuda.so.1", "libcuda.so"]
    found = ctypes.util.find_library("cuda")
    if found and found not in names:
        names.append(found)
    if sys.platform == "win32":
        load = ctypes.WinDLL
    else:
        load = ctypes.CDLL
    for name in names:
        with contextlib.suppress(OSError):
            return name, load(name)
    return None, None


def probe_driver() -> Driver:
    """Ask the NVIDIA driver for its CUDA version and GPUs, in this process (``cuInit``)."""
    name, lib = _driver_library()
    if lib is None:
        return Driver()
    v = ctypes.c_int(0)
    version = None
    if lib.cuDriverGetVersion(ctypes.byref(v)) == 0 and v.value > 0:
        version = (v.value // 1000, v.value % 1000 // 10)
    rc = lib.cuInit(0)
    if rc != 0:
        return Driver(name, version, _error_name(lib, rc))
    n = ctypes.c_int(0)
    lib.cuDeviceGetCount(ctypes.byref(n))
    devices = []
    for i in range(n.value):
        dev = ctypes.c_int(0)
        if lib.cuDeviceGet(ctypes.byref(dev), i) != 0:
            continue
        buf = ctypes.create_string_buffer(256)
        lib.cuDeviceGetName(buf, 256, dev)
        cc = []
        for attr in (75, 76):  # CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR / _MINOR
            a = ctypes.c_int(0)
            lib.cuDeviceGetAttribute(ctypes.byref(a), attr, dev)
            cc.append(a.value)
        mem = ctypes.c_size_t(0)
        fn = getattr(lib, "cuDeviceTotalMem_v2", None)
        if fn is not None:
            fn(ctypes.byref(mem), dev)
        devices.append(
            {
                "name": buf.value.decode(errors="replace"),
                "compute_capability": cc,
                "memory_bytes": int(mem.value),
            }
        )
    return Driver(name, version, None if devices else "CUDA_ERROR_NO_DEVICE", tuple(devices))


def _error_name(lib, rc: int) -> str:
    s = ctypes.c_char_p()
    with contextlib.suppress(Exception):
        if lib.cuGetErrorName(rc, ctypes.byref(s)) == 0 and s.value:
            return s.value.decode()
    return f"CUDA error {rc}"


@functools.cache
def driver_here() -> Driver:
    """:func:`probe_driver`, asked once per process; in a fresh process while this one simulates.

    A process that runs numba's simulator (a server, the test suite) never
    loads the driver itself.
    """
    if process_target() != SIMULATOR:
        return probe_driver()
    code = (
        "import json; from vizmm.record.targets import probe_driver as p; "
        "print(json.dumps(p().as_dict()))"
    )
    try:
        proc = subprocess.run(
            [sys.executable, "-P", "-c", code], capture_output=True, text=True, timeout=120
        )
        return Driver.from_dict(json.loads(proc.stdout.strip().splitlines()[-1]))
    except (OSError, subprocess.TimeoutExpired, ValueError, IndexError, KeyError):
        return Driver()


def gpu_target(backend: str, software: Software) -> str:
    """The target that compiles for ``backend`` ('gpu' or 'gpu-legacy'), pure.

    'gpu' is numba-cuda-mlir when it is installed, else numba-cuda;
    'gpu-legacy' is numba-cuda.

    Parameters
    ----------
    backend : {'gpu', 'gpu-legacy'}
        The backend asked for.
    software : Software
        The installed versions.
    """
    if backend == "gpu-legacy":
        return LEGACY
    if backend == "gpu":
        return MLIR if software.numba_cuda_mlir else LEGACY
    raise ValueError(f"{backend!r} is not a GPU backend ({', '.join(GPU_BACKENDS)})")


def software_problem(target: str, software: Software) -> str | None:
    """Why ``target`` cannot compile with these versions (one line with the fix), or None.

    Parameters
    ----------
    target : str
        The target asked about, one of :data:`TARGETS`.
    software : Software
        The installed versions it is checked against.
    """
    missing = _not_installed(target, software)
    if missing is not None:
        return missing
    if target == LEGACY:
        if _version_tuple(software.numpy)[:2] >= (2, 5) and software.legacy_row_stack is not False:
            return LEGACY_NUMPY
    return None


def _not_installed(target: str, software: Software) -> str | None:
    """The line for a GPU target whose distribution is not installed, else None."""
    if target == MLIR and not software.numba_cuda_mlir:
        return "numba-cuda-mlir is not installed: pip install 'vizmm[gpu]'"
    if target == LEGACY and not software.numba_cuda:
        return "numba-cuda is not installed: pip install 'vizmm[gpu]' (numba-cuda-mlir)"
    return None


def gpu_absent(driver: Driver) -> str | None:
    """Why there is no GPU here at all (no driver, or a driver that sees none), else None.

    Pure. A machine without a GPU is told so before anything about versions:
    no fix of NumPy or of a compiler makes a GPU appear.

    Parameters
    ----------
    driver : Driver
        What the NVIDIA driver says (:func:`probe_driver`).

    Returns
    -------
    str or None
        ``'no NVIDIA driver found (libcuda)'`` or ``'the NVIDIA driver sees no
        GPU (CUDA_ERROR_NO_DEVICE)'``; None when the driver lists a GPU or
        failed for another reason.
    """
    if driver.library is None:
        return "no NVIDIA driver found (libcuda)"
    no_device = driver.init_error is None and not driver.devices
    if driver.init_error == "CUDA_ERROR_NO_DEVICE" or no_device:
        return "the NVIDIA driver sees no GPU (CUDA_ERROR_NO_DEVICE)"
    return None


def driver_problem(target: str, software: Software, driver: Driver) -> str | None:
    """Why the driver cannot run ``target``'s kernels (one line with the fix), or None.

    Parameters
    ----------
    target : str
        The target whose kernels the driver would run, one of :data:`TARGETS`.
    software : Software
        The installed versions (cuda-bindings names the CUDA it needs).
    driver : Driver
        What the NVIDIA driver says (:func:`probe_driver`).
    """
    absent = gpu_absent(driver)
    if driver.library is None:
        return f"{absent}: install the NVIDIA driver on a machine with a GPU"
    if absent is not None:
        return absent
    needed = _version_tuple(software.cuda_bindings)[:1]
    if driver.version and needed and driver.version[0] < needed[0]:
        have = f"{driver.version[0]}.{driver.version[1]}"
        fix = (
            "pip install 'vizmm[gpu-cu12]' (the CUDA 12 build)"
            if needed[0] >= 13 and driver.version[0] == 12
            else f"install the CUDA {driver.version[0]} build of cuda-bindings"
        )
        return (
            f"the NVIDIA driver supports CUDA {have}, older than the CUDA {needed[0]} of "
            f"cuda-bindings {software.cuda_bindings} that {target} compiles with: {fix}, "
            "or update the driver"
        )
    if driver.init_error is not None:
        return f"the NVIDIA driver failed to start ({driver.init_error})"
    return None


def problem(target: str, software: Software, driver: Driver | None = None) -> str | None:
    """The first reason ``target`` cannot record here, as one line naming the fix; None if none.

    In the order that helps the person where they are: the target not
    installed; then, when ``driver`` is given, no GPU at all (no driver, or
    none seen: nothing about versions helps there); then the versions (a
    combination known to break, such as numba-cuda under NumPy 2.5); then
    the rest of the driver's problems (too old for the toolkit, failed to
    start). The simulator needs numba-cuda only.

    Parameters
    ----------
    target : str
        A target of :data:`TARGETS`.
    software : Software
        The installed versions.
    driver : Driver, optional
        What the NVIDIA driver says; not asked when None.
    """
    if target == OWN:
        return None
    if target == SIMULATOR:
        if not software.numba_cuda:
            return (
                "numba-cuda is not installed (backend 'numba-sim' is numba-cuda's simulator): "
                "pip install 'vizmm[gpu]', or record in vizmm's simulator (backend 'simulator')"
            )
        return None
    found = _not_installed(target, software)
    if found is None and driver is not None and gpu_absent(driver) is not None:
        found = driver_problem(target, software, driver)
    if found is None:
        found = software_problem(target, software)
    if found is None and driver is not None:
        found = driver_problem(target, software, driver)
    return found


@dataclasses.dataclass(frozen=True)
class Choice:
    """What a backend request resolves to.

    Attributes
    ----------
    backend : {'gpu', 'gpu-legacy', 'simulator'}
    target : str
        One of :data:`TARGETS`.
    reason : str
        Why (for 'auto': why the GPU was taken, or why not: ``'no GPU here:
        ...'`` where there is none, else the first :func:`problem`).
    """

    backend: str
    target: str
    reason: str


def choose(backend: str, software: Software, driver: Driver | None) -> Choice:
    """Resolve a backend request to a target, pure (given the versions and the driver).

    Parameters
    ----------
    backend : {'gpu', 'gpu-legacy', 'simulator', 'auto'}
        The backend asked for.
    software : Software
        The installed versions.
    driver : Driver or None
        What the NVIDIA driver says; None when there is none to ask.

    Raises
    ------
    GPUUnavailableError
        For 'gpu' or 'gpu-legacy' when :func:`problem` finds a reason.
    ValueError
        For an unknown backend.
    """
    if backend not in BACKENDS:
        raise ValueError(f"unknown backend {backend!r}; choose one of {', '.join(BACKENDS)}")
    if backend == "simulator":
        return Choice("simulator", OWN, "asked for")
    if backend == "numba-sim":
        found = problem(SIMULATOR, software)
        if found is not None:
            raise GPUUnavailableError(found)
        return Choice("numba-sim", SIMULATOR, "asked for")
    target = gpu_target("gpu" if backend == "auto" else backend, software)
    found = problem(target, software, driver)
    version = software.numba_cuda_mlir if target == MLIR else software.numba_cuda
    if backend == "auto":
        if found is None:
            gpu = driver.devices[0]["name"] if driver and driver.devices else "the GPU"
            return Choice("gpu", target, f"{target} {version} on {gpu}")
        absent = gpu_absent(driver) if driver is not None else None
        return Choice("simulator", OWN, f"no GPU here: {absent}" if absent else found)
    if found is not None:
        raise GPUUnavailableError(f"{found}; {SIMULATOR_HINT}")
    return Choice(backend, target, f"{target} {version}")


def process_target(modules=None) -> str | None:
    """The target this process is bound to, or None while nothing has decided it.

    Bound once the kernels are imported (``vizmm_kernels._target``), or to
    the simulator once numba was imported in simulator mode.

    Parameters
    ----------
    modules : mapping, optional
        ``sys.modules`` by default.
    """
    modules = sys.modules if modules is None else modules
    bound = modules.get("vizmm_kernels._target")
    if bound is not None:
        return bound.NAME
    config = modules.get("numba.core.config")
    if config is not None and config.ENABLE_CUDASIM:
        return SIMULATOR
    return None


def can_run_here(target: str, modules=None) -> bool:
    """Whether this process can compile for ``target`` (else a fresh process must).

    Parameters
    ----------
    target : str
        A target of :data:`TARGETS`.
    modules : mapping, optional
        ``sys.modules`` by default.
    """
    if target == OWN:  # vizmm's simulator compiles nothing: any process runs it
        return True
    modules = sys.modules if modules is None else modules
    bound = process_target(modules)
    if bound is not None:
        return bound == target
    config = modules.get("numba.core.config")
    return not (config is not None and target == SIMULATOR and not config.ENABLE_CUDASIM)


def environment(target: str) -> dict[str, str]:
    """The environment variables that make a fresh process compile for ``target``.

    Parameters
    ----------
    target : str
        A target of :data:`TARGETS`.
    """
    if target == SIMULATOR:
        return {"NUMBA_ENABLE_CUDASIM": "1", KERNELS_ENV: "auto"}
    if target == OWN:  # the kernels kept as written: numba is never imported
        return {KERNELS_ENV: NO_COMPILER}
    return {"NUMBA_ENABLE_CUDASIM": "0", KERNELS_ENV: target}


def early_environment(target: str, environ=None, modules=None) -> dict[str, str]:
    """The variables to set now so that this process compiles for ``target``; pure.

    Empty when the process is decided already: numba or the kernels are
    imported, or the environment names another target (a variable the
    caller set, such as ``NUMBA_ENABLE_CUDASIM=0`` for a test run on the
    GPU, is never overridden; a recording for another target then runs in
    a worker).

    Parameters
    ----------
    target : str
        A target of :data:`TARGETS`.
    environ : mapping, optional
        The environment whose variables the caller may have set (``os.environ``
        by default).
    modules : mapping, optional
        The modules imported, numba or the kernels among them deciding the target
        (``sys.modules`` by default).
    """
    environ, modules = _this_process(environ, modules)
    if process_target(modules) is not None or "numba" in modules:
        return {}
    wanted = environment(target)
    if any(environ.get(k, v) != v for k, v in wanted.items()):
        return {}
    return wanted


def bind_here(target: str):
    """Make this process compile for ``target``; return ``vizmm_kernels._target``.

    Sets the variables of :func:`environment` unless the process is bound
    already (:func:`can_run_here` must be true).

    Parameters
    ----------
    target : str
        A target of :data:`TARGETS`.

    Raises
    ------
    GPUUnavailableError
        When the process is bound to another target after all.
    """
    decided = "numba" in sys.modules or KERNELS_ENV in os.environ
    if process_target() is None and not (target == OWN and decided):
        os.environ.update(environment(target))
    try:
        from vizmm_kernels import _target
    except ValueError as exc:  # VIZMM_KERNELS_TARGET names a compiler that is not installed
        raise GPUUnavailableError(str(exc)) from None

    if target == OWN:  # runs whatever the kernels were bound to
        return _target
    if _target.NAME != target:
        raise GPUUnavailableError(
            f"this process compiles with {_target.NAME}, not {target}: NUMBA_ENABLE_CUDASIM or "
            f"{KERNELS_ENV} changed after numba or the kernels were imported; set them before "
            "anything imports numba, or let vizmm record in a fresh process"
        )
    return _target


def late_simulator_flag(environ=None, modules=None) -> str | None:
    """A line when ``NUMBA_ENABLE_CUDASIM`` disagrees with the numba already imported, else None.

    numba reads the variable once, when first imported; setting it later
    changes nothing in this process.

    Parameters
    ----------
    environ : mapping, optional
        The environment holding ``NUMBA_ENABLE_CUDASIM`` (``os.environ`` by default).
    modules : mapping, optional
        The modules imported, where numba's config is read (``sys.modules`` by default).
    """
    environ, modules = _this_process(environ, modules)
    config = modules.get("numba.core.config")
    if config is None or "NUMBA_ENABLE_CUDASIM" not in environ:
        return None
    try:
        wanted = int(environ["NUMBA_ENABLE_CUDASIM"] or 0) != 0
    except ValueError:
        return None
    if wanted == bool(config.ENABLE_CUDASIM):
        return None
    now = "the simulator" if config.ENABLE_CUDASIM else "the GPU driver"
    return (
        f"NUMBA_ENABLE_CUDASIM={environ['NUMBA_ENABLE_CUDASIM']} was set after numba was "
        f"imported, so this process's numba.cuda is {now}: set it before anything imports "
        "numba (vizmm records in a fresh process meanwhile)"
    )


def _this_process(environ, modules) -> tuple:
    """``environ`` and ``modules``, or this process's ``os.environ`` and ``sys.modules``."""
    return (
        os.environ if environ is None else environ,
        sys.modules if modules is None else modules,
    )


#: Errors met inside a compiler or at a launch -> the line that names the fix.
_KNOWN_FAILURES = (
    (re.compile(r"has no attribute 'row_stack'"), lambda t: LEGACY_NUMPY),
    (
        re.compile(r"UNSUPPORTED_PTX_VERSION|PTX was compiled with an unsupported toolchain"),
        lambda t: (
            f"the NVIDIA driver is older than the CUDA toolkit {t} compiles with "
            "(CUDA_ERROR_UNSUPPORTED_PTX_VERSION): update the driver, or install the toolkit "
            "of the driver's CUDA version (pip install 'vizmm[gpu-cu12]' for CUDA 12)"
        ),
    ),
    (
        re.compile(r"CUDA driver library cannot be found|libcuda\.so.*(not found|cannot open)"),
        lambda t: f"no NVIDIA driver found (libcuda): install the NVIDIA driver; {SIMULATOR_HINT}",
    ),
    (
        re.compile(r"CUDA_ERROR_NO_DEVICE|no CUDA-capable device"),
        lambda t: f"the NVIDIA driver sees no GPU (CUDA_ERROR_NO_DEVICE); {SIMULATOR_HINT}",
    ),
)


def gpu_error(exc: BaseException, target: str) -> str | None:
    """The one-line fix for a known failure ``exc`` met while compiling or launching, else None.

    Parameters
    ----------
    exc : BaseException
        What the compiler or the launch raised.
    target : str
        A target of :data:`TARGETS`.
    """
    text = f"{type(exc).__name__}: {exc}"
    for pattern, message in _KNOWN_FAILURES:
        if pattern.search(text):
            return message(target)
    return None
