"""What is at a path vizmm writes to, and the temporary files it makes beside it.

:func:`~vizmm.trace.fileformat.atomic_write` asks :func:`inspect` what the
destination is before writing anything:

* nothing, or a regular file: a temporary file beside it, then a rename
  (a reader never sees a half-written file);
* a symbolic link: the same, beside the link's final target; the link stays
  a link (a dangling link creates its target when the target's folder exists);
* a FIFO or a character device (``/dev/null``, a terminal): written to
  directly, never replaced; a FIFO that nothing reads is refused rather than
  waited on;
* a folder, a socket, a block device: refused, never replaced.

Temporary files and scratch folders are named ``.vizmm-<pid>-<random>.tmp``
(:func:`temp_prefix`): a writer killed before it could clean up (SIGKILL, a
power cut) leaves one whose process no longer exists, and the next write to
the same folder removes it (:func:`remove_dead_temporaries`). Its limit: a
folder shared with another machine or another PID namespace (a container)
may hold a live writer's file whose pid means nothing here; that writer then
fails with an error instead of writing, and nothing is corrupted.
"""

from __future__ import annotations

import dataclasses
import errno
import os
import re
import shutil
import stat
import tempfile

__all__ = [
    "TEMP_PREFIX",
    "Destination",
    "check_writable",
    "inspect",
    "pid_alive",
    "remove_dead_temporaries",
    "replace_file",
    "scratch_folder",
    "temp_prefix",
    "write_through",
]

#: Start of the name of every temporary file and scratch folder vizmm makes.
TEMP_PREFIX = ".vizmm-"
_LEFTOVER = re.compile(r"\.vizmm-([0-9]+)-.*\.tmp\Z", re.DOTALL)

#: Kinds of destination written to directly (opened, never replaced).
STREAMS = ("fifo", "character device")


def temp_prefix() -> str:
    """``.vizmm-<pid>-``: the start of this process's temporary names."""
    return f"{TEMP_PREFIX}{os.getpid()}-"


def pid_alive(pid: int) -> bool:
    """Whether a process ``pid`` exists (signal 0); unsure answers count as alive.

    Parameters
    ----------
    pid : int

    Returns
    -------
    bool
        False only when the system says there is no such process
        (``ProcessLookupError``); a process of another user
        (``PermissionError``) is alive.
    """
    if pid <= 0:
        return True  # 0 and negative pids name process groups: never "dead"
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (OSError, OverflowError, ValueError):
        return True
    return True


def remove_dead_temporaries(folder: str | os.PathLike) -> list[str]:
    """Remove the temporary files and folders that dead vizmm writers left in ``folder``.

    An entry counts when its name is ``.vizmm-<pid>-*.tmp``, it belongs to
    this user, it is a regular file, a folder or a symbolic link (a link is
    removed, never followed), and no process ``<pid>`` exists. Errors (a
    folder that cannot be listed, an entry another cleaner removed first)
    are ignored: this is housekeeping.

    Parameters
    ----------
    folder : str or os.PathLike

    Returns
    -------
    list of str
        The paths removed.
    """
    folder = os.fspath(folder)
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    removed = []
    uid = os.geteuid()
    for name in names:
        m = _LEFTOVER.match(name)
        if m is None or pid_alive(int(m.group(1))):
            continue
        path = os.path.join(folder, name)
        try:
            st = os.lstat(path)
            if st.st_uid != uid:
                continue
            if stat.S_ISDIR(st.st_mode):
                shutil.rmtree(path)
            elif stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode):
                os.unlink(path)
            else:
                continue
        except OSError:
            continue
        removed.append(path)
    return removed


def scratch_folder(folder: str | os.PathLike | None, tag: str) -> tempfile.TemporaryDirectory:
    """A hidden scratch folder ``.vizmm-<pid>-<tag>-<random>.tmp`` in ``folder``.

    Dead writers' leftovers in ``folder`` are removed first
    (:func:`remove_dead_temporaries`).

    Parameters
    ----------
    folder : str, os.PathLike or None
        Where (None: the system temp folder).
    tag : str
        What the folder is for, e.g. ``"mp4"``.

    Returns
    -------
    tempfile.TemporaryDirectory
        Use it as a context manager: the folder and all in it are removed on
        leaving, however the block is left (an exception, KeyboardInterrupt,
        the CLI's SIGTERM).
    """
    folder = tempfile.gettempdir() if folder is None else os.fspath(folder)
    remove_dead_temporaries(folder)
    return tempfile.TemporaryDirectory(prefix=f"{temp_prefix()}{tag}-", suffix=".tmp", dir=folder)


@dataclasses.dataclass(frozen=True)
class Destination:
    """What is at a path about to be written (see :func:`inspect`).

    Attributes
    ----------
    path : str
        The path as given (messages name it).
    kind : str
        ``"new"`` (nothing there yet), ``"file"`` (a regular file), ``"fifo"``
        or ``"character device"``.
    target : str
        What to write: for ``"new"`` and ``"file"`` the file to create or
        replace, beside which the temporary file goes (a symbolic link's final
        target); for a FIFO or a device, the path to open.
    link : bool
        Whether ``path`` is a symbolic link.
    """

    path: str
    kind: str
    target: str
    link: bool = False

    @property
    def folder(self) -> str:
        """The folder of :attr:`target` (where temporary files go)."""
        return os.path.dirname(os.path.abspath(self.target))


def _error(err: int, path: str, why: str) -> OSError:
    # OSError(errno, ...) is built as the errno's subclass (FileNotFoundError,
    # BrokenPipeError...); the path is the exception's filename.
    return OSError(err, f"cannot write {path}: {why}", path)


def _kind(mode: int) -> str:
    for test, name in (
        (stat.S_ISREG, "file"),
        (stat.S_ISDIR, "folder"),
        (stat.S_ISFIFO, "fifo"),
        (stat.S_ISCHR, "character device"),
        (stat.S_ISBLK, "block device"),
        (stat.S_ISSOCK, "socket"),
    ):
        if test(mode):
            return name
    return "special file"


def _refuse(kind: str, path: str, shown: str) -> None:
    if kind == "folder":
        raise IsADirectoryError(errno.EISDIR, f"cannot write {shown}: it is a folder", shown)
    what = {
        "socket": "a socket",
        "block device": "a block device (a disk or a partition)",
    }.get(kind, "a special file")
    where = "" if path == shown else f" ({path})"
    raise _error(
        errno.EINVAL,
        shown,
        f"it is {what}{where}, not a file; vizmm writes files, FIFOs and character "
        "devices and never replaces anything else",
    )


def inspect(path: str) -> Destination:
    """What is at ``path``, looked at before writing (``os.lstat``, links resolved).

    Parameters
    ----------
    path : str

    Returns
    -------
    Destination

    Raises
    ------
    FileNotFoundError
        When the folder of ``path`` (or of a dangling link's target) does not
        exist.
    IsADirectoryError
        When ``path`` is a folder or a link to one.
    OSError
        When ``path`` is a socket, a block device or another special file, a
        loop of symbolic links, or cannot be looked at (a message names it).
    """
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        folder = os.path.dirname(os.path.abspath(path))
        if not os.path.isdir(folder):
            raise FileNotFoundError(
                errno.ENOENT, f"cannot write {path}: the folder {folder} does not exist", path
            ) from None
        return Destination(path, "new", path)
    except OSError as exc:
        raise _error(exc.errno or errno.EIO, path, exc.strerror or str(exc)) from None
    if not stat.S_ISLNK(st.st_mode):
        kind = _kind(st.st_mode)
        if kind not in ("file", *STREAMS):
            _refuse(kind, path, path)
        return Destination(path, kind, path)
    # A symbolic link: written through, to its final target.
    real = os.path.realpath(path)
    try:
        st = os.stat(path)
    except FileNotFoundError:  # dangling: create the target
        folder = os.path.dirname(real)
        if not os.path.isdir(folder) or os.path.islink(real):
            raise FileNotFoundError(
                errno.ENOENT,
                f"cannot write {path}: it is a symbolic link to {real}, whose folder "
                f"{folder} does not exist",
                path,
            ) from None
        return Destination(path, "new", real, link=True)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise _error(errno.ELOOP, path, "it is a loop of symbolic links") from None
        raise _error(exc.errno or errno.EIO, path, exc.strerror or str(exc)) from None
    kind = _kind(st.st_mode)
    if kind in STREAMS:
        # open() follows the link itself (also /dev/stdout's /proc links)
        return Destination(path, kind, path, link=True)
    if kind != "file":
        _refuse(kind, real, path)
    try:
        same = os.path.samestat(st, os.lstat(real))
    except OSError:
        same = False
    if not same:  # e.g. /proc/self/fd/N of a deleted file: no name to write beside
        raise _error(
            errno.EINVAL,
            path,
            f"it is a symbolic link to a file without a usable name ({real}); give the file's "
            "own path",
        )
    return Destination(path, "file", real, link=True)


def check_writable(path: str) -> Destination:
    """Say now, before any work, whether ``path`` can be written; what is there.

    A FIFO or a character device is opened when written and only looked at
    here. For a file, an empty temporary file is made and removed in the
    folder the write will use (beside a link's target): the folder's mode,
    a read-only file system, a full quota or an access-control list answer
    the same as they will when the work is done, which ``os.access`` cannot
    promise (it says yes to root, and knows nothing of read-only mounts).

    Parameters
    ----------
    path : str
        Where a file will be written.

    Returns
    -------
    Destination
        What :func:`inspect` found.

    Raises
    ------
    OSError
        What :func:`inspect` raises, and, with the errno of the failed
        attempt (``PermissionError``, ``EROFS``...), a message naming the
        folder when nothing can be made there.
    """
    dest = inspect(path)
    if dest.kind in STREAMS:
        return dest
    try:
        fd, name = tempfile.mkstemp(prefix=temp_prefix(), suffix=".tmp", dir=dest.folder)
    except OSError as exc:
        why = exc.strerror or str(exc)
        raise _error(
            exc.errno or errno.EACCES, path, f"the folder {dest.folder} is not writable ({why})"
        ) from None
    os.close(fd)
    os.unlink(name)
    return dest


def write_through(dest: Destination, data: bytes) -> None:
    """Write ``data`` into a FIFO or a character device, opened, never replaced.

    A FIFO is opened without blocking first: with no reader it is refused at
    once instead of waiting forever; once open, every byte is written
    (blocking while the reader catches up).

    Parameters
    ----------
    dest : Destination
        From :func:`inspect`, of kind ``"fifo"`` or ``"character device"``.
    data : bytes

    Raises
    ------
    OSError
        Nothing is reading the FIFO (ENXIO), its reader closed it before all
        was written (EPIPE), the device is full (ENOSPC, ``/dev/full``) or
        refused the bytes; the message names the path.
    """
    shown = dest.path
    fifo = dest.kind == "fifo"
    flags = os.O_WRONLY | os.O_NOCTTY | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(dest.target, flags | (os.O_NONBLOCK if fifo else 0))
    except OSError as exc:
        if fifo and exc.errno == errno.ENXIO:
            raise _error(
                errno.ENXIO,
                shown,
                f"nothing is reading the FIFO {shown}; start its reader first "
                f"(e.g. 'cat {shown} > copy') and try again",
            ) from None
        raise _error(exc.errno or errno.EIO, shown, exc.strerror or str(exc)) from None
    done = 0
    try:
        if fifo:
            os.set_blocking(fd, True)
        view = memoryview(data).cast("B")
        while done < len(view):
            done += os.write(fd, view[done:])
    except OSError as exc:
        if exc.errno == errno.ENOSPC:
            why = f"no space left on the device {shown}"
        elif exc.errno == errno.EPIPE:
            why = f"the reader of {shown} closed it after {done} of {len(data)} bytes"
        else:
            why = exc.strerror or str(exc)
        raise _error(exc.errno or errno.EIO, shown, why) from None
    finally:
        os.close(fd)


def replace_file(tmp: str, dest: Destination) -> None:
    """Rename the complete temporary file ``tmp`` onto ``dest.target``.

    Looks at the target once more just before: if something other than a
    regular file appeared there while the data was written (a FIFO, a
    device, a folder, a link), nothing is replaced.

    Parameters
    ----------
    tmp : str
        A complete temporary file in ``dest.folder``.
    dest : Destination
        Of kind ``"new"`` or ``"file"``.

    Raises
    ------
    OSError
        When the target is no longer a regular file or absent, or the rename fails.
    """
    try:
        st = os.lstat(dest.target)
    except FileNotFoundError:
        st = None
    if st is not None and not stat.S_ISREG(st.st_mode):
        kind = "a symbolic link" if stat.S_ISLNK(st.st_mode) else f"a {_kind(st.st_mode)}"
        raise _error(
            errno.EEXIST,
            dest.path,
            f"{dest.target} became {kind} while vizmm wrote it; nothing was replaced",
        )
    os.replace(tmp, dest.target)
