"""The supervisor of one case: starts it under limits, and ends every process it started.

Run by :mod:`vizmm.grade.sandbox` as ``python -I -S _supervisor.py`` (the
standard library only: nothing of the submission's, nor of vizmm's, is
imported here). It reads one JSON object from its standard input (the case's
command, folder, environment, user, limits and the text given to the case's
standard input), becomes a child subreaper (``prctl(PR_SET_CHILD_SUBREAPER)``,
Linux) so that every process the case starts, a ``setsid`` grandchild
included, stays its descendant, and runs the case in a session of its own.
It ends the case at the wall-clock limit, when the case's processes together
hold more resident memory than the case may use, or when they are more than
the case may start; and, whatever happened, it kills every descendant left
(``SIGKILL`` also ends a stopped process) and reaps them before it writes
one JSON object, the outcome, to its standard output. The case's output is
read through a pipe and kept up to a cap; the rest is counted and dropped.
"""

import ctypes
import errno
import json
import os
import resource
import select
import signal
import sys
import time

PR_SET_CHILD_SUBREAPER = 36
POLL_S = 0.05


def _subreaper() -> bool:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _table():
    """{pid: (ppid, resident bytes)} of every process, or None without /proc."""
    if not os.path.isdir("/proc/self"):
        return None
    page = os.sysconf("SC_PAGE_SIZE")
    out = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                data = f.read()
            rest = data[data.rfind(b")") + 2 :].split()
            ppid, rss = int(rest[1]), int(rest[21]) * page
        except (OSError, ValueError, IndexError):
            continue
        out[int(name)] = (ppid, rss)
    return out


def _descendants(root: int, table) -> list:
    kids: dict = {}
    for pid, (ppid, _) in table.items():
        kids.setdefault(ppid, []).append(pid)
    out, todo = [], [root]
    while todo:
        for c in kids.get(todo.pop(), ()):
            out.append(c)
            todo.append(c)
    return out


def _kill_uid(uid: int) -> None:
    """As root: every process of ``uid`` gets SIGKILL (kill(-1) run as that user)."""
    pid = os.fork()
    if pid == 0:
        try:
            os.setgroups([])
            os.setgid(uid)
            os.setuid(uid)
            os.kill(-1, signal.SIGKILL)
        finally:
            os._exit(0)
    os.waitpid(pid, 0)


def _reap(state: dict) -> None:
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        if pid == state["pid"]:
            state["status"] = status


def _end_all(state: dict, uid) -> int:
    """SIGKILL every descendant (and every process of the case's user) until none is left."""
    me = os.getpid()
    killed = set()
    for _ in range(2000):
        try:
            os.killpg(state["pid"], signal.SIGKILL)
        except OSError:
            pass
        if uid is not None:
            _kill_uid(uid)
        table = _table()
        left = _descendants(me, table) if table is not None else []
        for pid in left:
            try:
                os.kill(pid, signal.SIGKILL)
                killed.add(pid)
            except OSError:
                pass
        _reap(state)
        table = _table()
        if table is None or not _descendants(me, table):
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return len(killed - {state["pid"]})
            if pid == state["pid"]:
                state["status"] = status
        time.sleep(0.005)
    return len(killed - {state["pid"]})


def _child(cfg: dict, stdin_r: int, out_w: int) -> None:
    """In the forked child: limits, user, folder, then exec the case (never returns)."""
    try:
        os.setsid()
        os.dup2(stdin_r, 0)
        os.dup2(out_w, 1)
        os.dup2(out_w, 2)
        os.closerange(3, 1 << 16)
        lim = cfg["limits"]
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        resource.setrlimit(resource.RLIMIT_CPU, (lim["cpu_s"], lim["cpu_s"] + 2))
        resource.setrlimit(resource.RLIMIT_FSIZE, (lim["file_bytes"], lim["file_bytes"]))
        if lim.get("as_bytes"):
            resource.setrlimit(resource.RLIMIT_AS, (lim["as_bytes"], lim["as_bytes"]))
        if cfg.get("kill_uid") is not None:  # enforced once the case is that user
            resource.setrlimit(resource.RLIMIT_NPROC, (lim["nproc"], lim["nproc"]))
        uid = cfg.get("uid")
        if uid is not None:
            os.setgroups([])
            os.setgid(uid)
            os.setuid(uid)
        os.chdir(cfg["cwd"])
        os.umask(0o077)
        os.execve(cfg["argv"][0], cfg["argv"], cfg["env"])
    except BaseException as exc:  # noqa: BLE001 - said on the case's output, then exit 127
        try:
            os.write(2, f"the case could not start: {exc}\n".encode())
        except OSError:
            pass
    finally:
        os._exit(127)


def run(cfg: dict) -> dict:
    """Run the case ``cfg`` describes and end every process it started.

    Parameters
    ----------
    cfg : dict
        ``argv``, ``cwd``, ``env``, ``uid`` (the user to run as, or None),
        ``kill_uid`` (the case's user, whose processes are all killed at the
        end, or None), ``stdin`` (text) and ``limits`` (the fields of
        :class:`vizmm.grade.sandbox.Limits`).

    Returns
    -------
    dict
        ``ended`` (None, 'timeout', 'memory' or 'processes'), ``code``,
        ``signal``, ``seconds``, ``output`` (capped), ``output_bytes``,
        ``left_behind`` (processes killed after the case's own ended),
        ``subreaper`` (whether ``prctl`` made this process one).
    """
    lim = cfg["limits"]
    reaper = _subreaper()
    stdin_r, stdin_w = os.pipe()
    out_r, out_w = os.pipe()
    t0 = time.monotonic()
    pid = os.fork()
    if pid == 0:
        os.close(stdin_w)
        os.close(out_r)
        _child(cfg, stdin_r, out_w)
    os.close(stdin_r)
    os.close(out_w)
    state: dict = {"pid": pid, "status": None}
    data = cfg.get("stdin", "").encode("utf-8")
    try:
        os.write(stdin_w, data)  # the case's spec: far smaller than a pipe's buffer
    except OSError:
        pass
    os.close(stdin_w)
    cap, kept, seen = int(lim["output_bytes"]), bytearray(), 0
    ended = None
    deadline = t0 + float(lim["wall_s"])
    next_poll = 0.0
    while True:
        _reap(state)
        if state["status"] is not None:
            break
        now = time.monotonic()
        if now >= deadline:
            ended = "timeout"
            break
        if now >= next_poll:
            next_poll = now + 0.2
            table = _table()
            if table is not None:
                mine = _descendants(os.getpid(), table)
                if len(mine) > lim["processes"]:
                    ended = "processes"
                    break
                if sum(table[p][1] for p in mine if p in table) > lim["memory_bytes"]:
                    ended = "memory"
                    break
        ready, _, _ = select.select([out_r], [], [], min(POLL_S, max(0.0, deadline - now)))
        if ready:
            chunk = os.read(out_r, 1 << 16)
            if chunk:
                seen += len(chunk)
                if len(kept) < cap:
                    kept += chunk[: cap - len(kept)]
            else:
                time.sleep(POLL_S)  # output closed; the process may still run
    left = _end_all(state, cfg.get("kill_uid", cfg.get("uid")))
    while True:  # every writer is gone: the rest of the output, to its end
        ready, _, _ = select.select([out_r], [], [], 1.0)
        if not ready:
            break
        chunk = os.read(out_r, 1 << 16)
        if not chunk:
            break
        seen += len(chunk)
        if len(kept) < cap:
            kept += chunk[: cap - len(kept)]
    os.close(out_r)
    status = state["status"]
    out = {
        "ended": ended,
        "code": None,
        "signal": None,
        "seconds": round(time.monotonic() - t0, 3),
        "output": kept.decode("utf-8", "replace"),
        "output_bytes": seen,
        "left_behind": left,
        "subreaper": reaper,
    }
    if status is not None and ended is None:
        if os.WIFSIGNALED(status):
            out["signal"] = os.WTERMSIG(status)
        elif os.WIFEXITED(status):
            out["code"] = os.WEXITSTATUS(status)
    return out


def main() -> int:
    """Read the configuration, run the case, write the outcome; 0 always."""
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    cfg = json.loads(sys.stdin.readline())
    try:
        out = run(cfg)
    except OSError as exc:
        out = {"ended": "start", "message": f"{errno.errorcode.get(exc.errno or 0, '')} {exc}"}
    sys.stdout.write(json.dumps(out) + "\n")
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
