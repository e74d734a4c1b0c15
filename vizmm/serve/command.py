"""How a server is started and stopped: the ``panel serve`` command, its environment, its signals.

``vizmm serve`` (:mod:`vizmm.cli`) parses its options and hands them here:
:func:`serve_command` is the ``panel serve`` command line (the pages of the
installed ``vizmm_apps`` package, the set-up script run in each process
before it listens, the session lifetimes a class needs),
:func:`serve_environment` the variables the server runs with, and
:func:`run_server` runs it as a process group that stops whole. Nothing here
imports Panel: the command names it.

Errors in the given options raise :class:`ServeError`, one line in the
user's words.
"""

from __future__ import annotations

import importlib.util
import os
import pathlib
import signal
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence

from .catalogue import GIVEN_TRACES_VARIABLE

__all__ = [
    "SERVE_ENVIRONMENT",
    "SERVER_SIGNALS",
    "ServeError",
    "check_data_files",
    "given_traces",
    "pages_folder",
    "run_server",
    "serve_command",
    "serve_environment",
]

#: What ``vizmm serve`` sets in the server's environment where it is not set
#: already. ``PYTHONMALLOC=malloc``: Python's own allocator keeps each 1 MiB
#: arena in which a few objects still live, so a server kept 8-13% more
#: memory after ten pages had closed (nearly 60% after sixty browser pages),
#: with the same data live; the C library's allocator gives it back
#: (``benchmarks/bench_sessions.py``: +0-2%; ``load_test.py --pages 30``:
#: +3%), for about the same CPU per new page. ``PYTHONINTMAXSTRDIGITS``:
#: Panel turns a URL value of digits into an ``int`` when it makes a page's
#: location, before any vizmm code runs, and Python refuses more than 4,300
#: digits with an error that leaves the page blank. Tornado refuses requests
#: whose headers exceed 64 KiB, so no URL value has more than 65,536 digits:
#: the limit is raised to that (about 20 ms of CPU at most), and the page
#: then leaves the over-long value out and names it (``vizmm_apps.parts.drop_long_url_values``).
SERVE_ENVIRONMENT = {"PYTHONMALLOC": "malloc", "PYTHONINTMAXSTRDIGITS": "65536"}

#: Signals ``vizmm serve`` passes on to every server process it started.
SERVER_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)

#: The pages ``vizmm serve`` serves, files of the ``vizmm_apps`` package.
PAGES = ("dashboard.py", "large_view.py", "side_by_side.py")

#: The set-up script each server process runs before it listens.
SETUP = "preload.py"

#: The package data a server reads before it listens (``vizmm/data/``): the trace
#: menu's presets and the devices' properties.
DATA_FILES = ("presets.json", "device-presets.json")


class ServeError(ValueError):
    """A server option that cannot be used (one line: what was wrong, what is allowed)."""


def given_traces(paths: Sequence[str]) -> list[str]:
    """The absolute paths of ``--traces``, each checked to be a file or a folder.

    Parameters
    ----------
    paths : sequence of str
        Files and folders, as given.

    Returns
    -------
    list of str
        Their absolute paths.

    Raises
    ------
    ServeError
        For a path that does not exist, is neither a regular file nor a
        folder, or holds the path separator (``:``).
    """
    out = []
    for p in paths:
        if not os.path.exists(p):
            raise ServeError(f"--traces {p}: no such file or folder")
        if not (os.path.isfile(p) or os.path.isdir(p)):
            raise ServeError(f"--traces {p}: not a regular file or a folder")
        if os.pathsep in os.path.abspath(p):
            raise ServeError(f"--traces {p}: a path with {os.pathsep!r} in it cannot be given")
        out.append(os.path.abspath(p))
    return out


def serve_environment(
    environ: Mapping[str, str] | None = None,
    traces: Sequence[str] = (),
    max_trace_mib: int | None = None,
) -> dict[str, str]:
    """The variables ``vizmm serve`` adds to the server's environment.

    Parameters
    ----------
    environ : mapping of str to str, optional
        The environment it starts from (``os.environ`` by default). A
        variable of :data:`SERVE_ENVIRONMENT` set there is left as it is
        (``PYTHONMALLOC=pymalloc vizmm serve`` keeps Python's allocator).
    traces : sequence of str
        ``--traces``: files and folders the pages may open; they become
        ``VIZMM_SERVE_TRACES``.
    max_trace_mib : int, optional
        ``--max-trace-mib`` (MiB); it becomes ``VIZMM_SERVER_MAX_TRACE_BYTES``.

    Returns
    -------
    dict of str to str
        Those of :data:`SERVE_ENVIRONMENT` not set in ``environ``, and the
        variables of the options.

    Raises
    ------
    ServeError
        For a ``--traces`` path that is neither a file nor a folder.
    """
    environ = os.environ if environ is None else environ
    out = {k: v for k, v in SERVE_ENVIRONMENT.items() if k not in environ}
    if traces:
        out[GIVEN_TRACES_VARIABLE] = os.pathsep.join(given_traces(traces))
    if max_trace_mib is not None:
        out["VIZMM_SERVER_MAX_TRACE_BYTES"] = str(int(max_trace_mib) * 2**20)
    return out


def pages_folder() -> str:
    """The folder of the installed pages (the ``vizmm_apps`` package).

    Returns
    -------
    str
        Its path.

    Raises
    ------
    ServeError
        When ``vizmm_apps`` is not installed with this vizmm.
    """
    spec = importlib.util.find_spec("vizmm_apps")
    if spec is None or not spec.submodule_search_locations:
        raise ServeError(
            "vizmm's pages (the vizmm_apps package) are not installed with this vizmm; "
            "reinstall it with 'pip install vizmm' or 'pip install -e .' in its repository"
        )
    return list(spec.submodule_search_locations)[0]


def check_data_files(root=None) -> None:
    """Check that the data files a server reads (:data:`DATA_FILES`) are there.

    Parameters
    ----------
    root : path-like or importlib.resources.abc.Traversable, optional
        The data folder; by default ``data`` of the ``vizmm`` package this
        Python imports (what the server's processes read).

    Raises
    ------
    ServeError
        Naming the first missing file, and when ``vizmm`` is a folder
        without ``__init__.py`` (a clone's folder in the working directory
        of ``python -m``), that folder.
    """
    if root is None:
        root = _data_folder()
    elif isinstance(root, (str, os.PathLike)):
        root = pathlib.Path(root)
    for name in DATA_FILES:
        path = root / name
        if path.is_file():
            continue
        package = sys.modules.get("vizmm")
        if package is not None and getattr(package, "__file__", None) is None:
            folders = ", ".join(getattr(package, "__path__", []))
            raise ServeError(
                f"vizmm's data file {path} is missing: 'vizmm' was imported from the folder "
                f"{folders}, not the installed package; start vizmm from another folder"
            )
        raise ServeError(
            f"vizmm's data file {path} is missing: reinstall vizmm ('pip install vizmm', "
            "or 'pip install -e .' in its repository)"
        )


def _data_folder():
    """``data`` of the ``vizmm`` package this Python imports."""
    import importlib.resources

    return importlib.resources.files("vizmm") / "data"


def serve_command(
    address: str = "127.0.0.1",
    port: int = 5006,
    num_procs: int = 1,
    allow_websocket_origin: Sequence[str] = (),
    show: bool = False,
) -> list[str]:
    """The ``panel serve`` command line that ``vizmm serve`` runs.

    Parameters
    ----------
    address : str
        The address to listen on.
    port : int
        The port.
    num_procs : int
        Server processes (``panel serve --num-procs``).
    allow_websocket_origin : sequence of str
        Host names (``HOST[:PORT]``) the pages may be opened under; on a
        loopback address with none given, ``localhost`` and ``127.0.0.1`` at
        ``port``.
    show : bool
        Open the dashboard in a browser.

    Returns
    -------
    list of str
        The command, this Python first.

    Raises
    ------
    ServeError
        When the pages are not installed (:func:`pages_folder`) or a data
        file is missing (:func:`check_data_files`).

    Notes
    -----
    The server's Python runs with ``-P``: the working directory is not put
    on its ``sys.path`` (``python -m`` would), so a folder named ``vizmm``
    there (a clone, as git names it) is never imported in place of the
    installed package.
    """
    apps = pages_folder()
    check_data_files()
    cmd = [
        sys.executable,
        "-P",
        "-m",
        "panel",
        "serve",
        *(os.path.join(apps, page) for page in PAGES),
        "--setup",
        os.path.join(apps, SETUP),
        "--address",
        address,
        "--port",
        str(port),
        "--num-procs",
        str(num_procs),
        # A page's session is built when the page is asked for and kept until its
        # browser connects: with a class arriving at once the connections queue
        # behind the other pages' builds, and a session let go after Panel's 15 s
        # would be built a second time. Closed pages' sessions go after a minute.
        "--unused-session-lifetime",
        "60000",
        "--check-unused-sessions",
        "5000",
    ]
    origins = list(allow_websocket_origin)
    if address in ("127.0.0.1", "localhost", "::1") and not origins:
        origins = [f"localhost:{port}", f"127.0.0.1:{port}"]
    cmd += [f"--allow-websocket-origin={o}" for o in origins]
    if show:
        cmd.append("--show")
    return cmd


def run_server(cmd: list[str], env: Mapping[str, str], grace_s: float = 10.0) -> int:
    """Run the server ``cmd`` in a process group of its own; stop all of it on a signal.

    ``panel serve --num-procs N`` forks N worker processes. Killing only the
    process that forked them would leave the workers serving the port, so
    ``vizmm serve`` stays the parent: SIGTERM, SIGINT or SIGHUP sent to it is
    passed on to the whole group, and when the server's first process ends,
    whatever of the group is left is stopped too (SIGTERM, then SIGKILL after
    ``grace_s`` seconds).

    Parameters
    ----------
    cmd : list of str
        The ``panel serve`` command (:func:`serve_command`).
    env : mapping of str to str
        The server's environment.
    grace_s : float
        Seconds the group is given to stop before it is killed.

    Returns
    -------
    int
        The server's exit status (0 when it was stopped by a signal sent to
        ``vizmm serve``).

    Notes
    -----
    The handlers are installed before the server is started, whatever the
    signals' dispositions were: a shell script's ``vizmm serve &`` starts
    with SIGINT ignored, and a signal ignored at ``exec`` stays ignored in
    the child (POSIX), so Panel would never see the SIGINT passed on. A
    signal caught here is reset to its default action in the child at
    ``exec``: Panel's Python turns SIGINT into ``KeyboardInterrupt`` again.
    """
    stopping: list[int] = []
    started: list[subprocess.Popen] = []

    def forward(signum, _frame):
        stopping.append(signum)
        if started:
            _signal_group(started[0].pid, signal.SIGTERM if signum == signal.SIGHUP else signum)

    previous = {sig: signal.signal(sig, forward) for sig in SERVER_SIGNALS}
    try:
        proc = subprocess.Popen(cmd, env=dict(env), start_new_session=True)
    except BaseException:
        _restore(previous)
        raise
    started.append(proc)
    try:
        if stopping:  # a signal came while the server was being started
            forward(stopping[0], None)
        rc = proc.wait()
    finally:
        _restore(previous)
        _signal_group(proc.pid, signal.SIGTERM)
        deadline = time.monotonic() + grace_s
        while _group_alive(proc.pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        _signal_group(proc.pid, signal.SIGKILL)
    return 0 if stopping else rc


def _restore(previous: dict) -> None:
    for sig, handler in previous.items():
        signal.signal(sig, handler)


def _signal_group(pgid: int, signum: int) -> None:
    try:
        os.killpg(pgid, signum)
    except (ProcessLookupError, PermissionError):
        pass


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return True
