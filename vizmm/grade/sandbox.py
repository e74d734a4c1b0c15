"""A case's process apart from the grader: its own folder, user and limits, nothing left behind.

:func:`run_apart` starts ``_supervisor.py`` (standard library only), which
starts the case (see its docstring): a child subreaper, so every process the
case starts stays its descendant and is killed (``SIGKILL``, which also ends
a stopped process) and reaped before the outcome comes back; the case's
output kept up to :attr:`Limits.output_bytes`; a wall-clock limit, a limit
on the resident memory of all its processes together and on how many it may
start. The case gets a fresh empty folder (mode 0700) and, when the grader
runs as root on Linux, a user of its own (a uid no account uses, with
``RLIMIT_NPROC``): it cannot signal the grader nor the supervisor, read
another case's folder, or read a file only the grader's user may read (keep
the assignment and the submissions in such a folder). Its environment holds
a token; after the supervisor is done (or was killed: a case of the
grader's own user may kill it) the grader kills every process whose
environment still holds that token.
"""

from __future__ import annotations

import dataclasses
import json
import os
import secrets
import signal
import subprocess
import sys
import tempfile
import threading
import time

__all__ = ["Limits", "Outcome", "case_folder", "isolated_user", "run_apart", "sweep"]

SUPERVISOR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_supervisor.py")
#: Seconds past a case's wall-clock limit after which its supervisor itself is killed
#: (a case of the grader's own user may have stopped it).
SUPERVISOR_GRACE_S = 10.0
#: Environment variable telling a case the user to become after its imports (see ``late``).
LATE_UID_VAR = "VIZMM_CASE_UID"
#: Environment variable holding a case's token (how its processes are found afterwards).
TOKEN_VAR = "VIZMM_GRADE_CASE"
#: The range of uids cases run as, when the grader is root (no account uses them).
UID_BASE, UID_SPAN = 1_900_000_000, 100_000_000
#: Variables of the grader's environment a case keeps (where Python finds vizmm, a GPU's and
#: numba's settings).
_KEEP = ("PATH", "PYTHONPATH", "LANG", "LC_ALL", "LD_LIBRARY_PATH", "SYSTEMROOT")
_KEEP_PREFIX = ("CUDA_", "NUMBA_", "NVIDIA_", "VIZMM_KERNELS_")
_LOCK = threading.Lock()
_USERS: set[int] = set()
_USER_WORKS: dict[str, bool] = {}


@dataclasses.dataclass(frozen=True)
class Limits:
    """What one case may use.

    Attributes
    ----------
    wall_s : float
        Wall-clock seconds, from its start.
    cpu_s : int
        CPU seconds of each process (``RLIMIT_CPU``).
    memory_bytes : int
        Resident memory of all its processes together (checked 5 times a second).
    as_bytes : int or None
        Address space of each process (``RLIMIT_AS``); None: not limited (a GPU
        driver reserves far more address space than it uses).
    processes : int
        Processes (not threads) at once.
    nproc : int
        ``RLIMIT_NPROC`` (processes and threads) of its own user (root only).
    file_bytes : int
        Largest file it may write (``RLIMIT_FSIZE``).
    output_bytes : int
        Output (stdout and stderr) kept; the rest is counted and dropped.
    """

    wall_s: float
    cpu_s: int
    memory_bytes: int
    as_bytes: int | None = None
    processes: int = 16
    nproc: int = 4096
    file_bytes: int = 64 << 20
    output_bytes: int = 64 << 10


@dataclasses.dataclass(frozen=True)
class Outcome:
    """How a case's process ended (every process of the case is gone by then).

    Attributes
    ----------
    ended : str or None
        None: it exited by itself (see ``code``, ``signal``); 'timeout',
        'memory', 'processes' (stopped at a limit), 'start' (could not be
        started) or 'supervisor' (its supervisor was killed or stopped).
    code : int or None
        Exit code.
    signal : int or None
        The signal that ended it.
    seconds : float
        Wall-clock time.
    output : str
        The first :attr:`Limits.output_bytes` of its output (for the grader's
        eyes: never shown to a student, never a finding).
    output_bytes : int
        All it wrote.
    left_behind : int
        Processes of its own still running when it ended (killed).
    """

    ended: str | None
    code: int | None
    signal: int | None
    seconds: float
    output: str
    output_bytes: int
    left_behind: int


def _can_drop() -> bool:
    return sys.platform.startswith("linux") and hasattr(os, "setuid") and os.geteuid() == 0


def _user_works(uid: int, python: str) -> bool:
    """Whether a process of ``uid`` can run ``python`` (and, ours, import vizmm): checked once."""
    with _LOCK:
        if python in _USER_WORKS:
            return _USER_WORKS[python]
    code = "import vizmm.grade.case" if python == sys.executable else "pass"
    try:
        run = subprocess.run(
            [python, "-I", "-c", code],
            cwd="/",
            user=uid,
            group=uid,
            extra_groups=[],
            env=_environment({}, "/", ""),
            capture_output=True,
            timeout=60,
        )
        ok = run.returncode == 0
    except (OSError, subprocess.SubprocessError):
        ok = False
    with _LOCK:
        _USER_WORKS[python] = ok
    return ok


class isolated_user:  # noqa: N801 - a context manager, used as a function
    """A uid for one case (``with isolated_user() as uid``): None unless root on Linux.

    The uid is drawn at random from [:data:`UID_BASE`, +:data:`UID_SPAN`), is
    unique among this process's running cases, and is None when the grader
    is not root, or when a process of that user could not run the case's
    interpreter (vizmm's: this Python, importing vizmm; an interpreter or a
    package that only root may read, as one installed under ``/root``, keeps
    the cases running as the grader's user).

    Parameters
    ----------
    python : str, optional
        The interpreter the case runs (default: this one, with vizmm).
    late_ok : bool
        Where that interpreter only root may run, give the uid anyway: the
        case (:mod:`vizmm.grade.case`) starts as root, imports what it needs
        and becomes that user before it reads the submission
        (:attr:`late` is then True).
    """

    def __init__(self, python: str | None = None, late_ok: bool = False) -> None:
        self.python = python or sys.executable
        self.late_ok = late_ok
        self.late = False

    def __enter__(self) -> int | None:
        self.uid: int | None = None
        if not _can_drop():
            return None
        with _LOCK:
            while True:
                uid = UID_BASE + secrets.randbelow(UID_SPAN)
                if uid not in _USERS:
                    _USERS.add(uid)
                    break
        if not _user_works(uid, self.python):
            if not self.late_ok:
                with _LOCK:
                    _USERS.discard(uid)
                return None
            self.late = True
        self.uid = uid
        return uid

    def __exit__(self, *exc) -> None:
        if self.uid is not None:
            with _LOCK:
                _USERS.discard(self.uid)


def case_folder(parent: str, uid: int | None) -> str:
    """A fresh empty folder for one case (0700, owned by ``uid`` when given).

    Parameters
    ----------
    parent : str
        The grading's folder (made 0711 when ``uid`` is given: cases can pass
        through it, not list it).
    uid : int or None

    Returns
    -------
    str
        Its absolute path (a random name).
    """
    parent = os.path.abspath(parent)
    os.makedirs(parent, exist_ok=True)
    path = tempfile.mkdtemp(prefix="case-", dir=parent)
    if uid is not None:
        os.chmod(parent, 0o711)
        os.chown(path, uid, uid)
    os.chmod(path, 0o700)
    return path


def _environment(extra: dict[str, str], folder: str, token: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k in _KEEP or k.startswith(_KEEP_PREFIX)}
    env.setdefault("PATH", "/usr/bin:/bin")
    env.update(HOME=folder, TMPDIR=folder, PYTHONDONTWRITEBYTECODE="1", **extra)
    env["NUMBA_CACHE_DIR"] = os.path.join(folder, ".numba")
    if token:
        env[TOKEN_VAR] = token
    return env


def sweep(token: str, uid: int | None = None, rounds: int = 50) -> int:
    """SIGKILL every process whose environment holds ``token`` (or, as root, runs as ``uid``).

    Parameters
    ----------
    token : str
        A case's token (the value of :data:`TOKEN_VAR`).
    uid : int, optional
        The case's user: every process of it is killed too.
    rounds : int
        Passes over ``/proc`` until none is found.

    Returns
    -------
    int
        Processes killed (0 where ``/proc`` is not there).
    """
    if not os.path.isdir("/proc/self"):
        return 0
    needle = f"{TOKEN_VAR}={token}".encode()
    killed = 0
    for _ in range(rounds):
        found = 0
        for name in os.listdir("/proc"):
            if not name.isdigit() or int(name) == os.getpid():
                continue
            try:
                if uid is not None and os.stat(f"/proc/{name}").st_uid == uid:
                    hit = True
                else:
                    with open(f"/proc/{name}/environ", "rb") as f:
                        hit = needle in f.read(1 << 20)
            except OSError:
                continue
            if hit:
                try:
                    os.kill(int(name), signal.SIGKILL)
                    found += 1
                except OSError:
                    pass
        killed += found
        if not found:
            break
        time.sleep(0.02)
    return killed


def run_apart(
    argv: list[str],
    folder: str,
    limits: Limits,
    stdin: str = "",
    env: dict[str, str] | None = None,
    uid: int | None = None,
    late: bool = False,
) -> Outcome:
    """Run ``argv`` as a case: in ``folder``, under ``limits``, every process of it ended.

    Parameters
    ----------
    argv : list of str
        The command (``argv[0]`` an absolute path).
    folder : str
        Its working folder (from :func:`case_folder`).
    limits : Limits
    stdin : str
        Text given on its standard input (its spec: no file of the grader's is named).
    env : dict, optional
        Variables added to the small environment a case gets.
    uid : int, optional
        Its user (from :class:`isolated_user`); None: the grader's own.
    late : bool
        The case becomes ``uid`` itself, after its imports (its environment's
        ``VIZMM_CASE_UID``; :attr:`isolated_user.late`); until then it runs
        as root.

    Returns
    -------
    Outcome
        Returned only once no process of the case is left.
    """
    token = secrets.token_hex(16)
    extra = dict(env or {})
    if late and uid is not None:
        extra[LATE_UID_VAR] = str(uid)
    cfg = {
        "argv": argv,
        "cwd": folder,
        "env": _environment(extra, folder, token),
        "uid": None if late else uid,
        "kill_uid": uid,
        "stdin": stdin,
        "limits": dataclasses.asdict(limits),
    }
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-I", "-S", SUPERVISOR],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        cwd="/",
        start_new_session=True,
    )
    try:
        out, _ = proc.communicate(
            json.dumps(cfg).encode() + b"\n", timeout=limits.wall_s + SUPERVISOR_GRACE_S
        )
    except subprocess.TimeoutExpired:  # the supervisor itself stopped (SIGSTOP by the case)
        proc.kill()
        out, _ = proc.communicate()
        out = b""
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        sweep(token, uid)
    try:
        res = json.loads(out.decode("utf-8", "replace").splitlines()[0])
        if not isinstance(res, dict):
            raise ValueError
    except (ValueError, IndexError):
        res = {"ended": "supervisor"}
    return Outcome(
        ended=res.get("ended"),
        code=res.get("code"),
        signal=res.get("signal"),
        seconds=round(float(res.get("seconds") or time.perf_counter() - t0), 3),
        output=str(res.get("output", ""))[: limits.output_bytes],
        output_bytes=int(res.get("output_bytes") or 0),
        left_behind=int(res.get("left_behind") or 0),
    )
