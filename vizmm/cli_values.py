"""The ``vizmm`` command's exit codes, its errors and the parsers of its values.

Every text a person types (a shape, a block, a window, a size in bytes)
is read here into numbers or refused with :class:`CLIError`, one line that
says what was wrong and what is allowed (exit code 2).
"""

from __future__ import annotations

import argparse
import re
import signal

from .record import (
    GPUUnavailableError,
    RecordError,
)
from .trace import (
    KERNELS,
    MAX_TILE_WIDTH,
    TraceError,
)

EXIT_OK = 0
EXIT_FAILURE = 1  # something broke that is not the user's input
EXIT_USAGE = 2  # bad input: arguments, sizes, files
EXIT_INTERRUPTED = 130
EXIT_TERMINATED = 128 + signal.SIGTERM  # 143, as a shell reports a process killed by SIGTERM


class CLIError(Exception):
    """Bad input to a subcommand; the message is shown on one line and the exit code is 2."""


class Terminated(BaseException):
    """SIGTERM arrived while :func:`main` ran.

    Raised by the handler :func:`main` installs, it unwinds the stack as
    KeyboardInterrupt does for SIGINT: every ``finally`` and ``except
    BaseException`` runs (temporary files and scratch folders are removed,
    a recording's worker process is stopped). Neither an ``Exception`` nor a
    ``KeyboardInterrupt``, so no broad ``except Exception`` swallows it;
    :func:`main` answers it with ``vizmm: terminated`` and exit code 143.
    """


#: Exceptions that a handler may raise for bad input (message shown, exit code 2).
INPUT_ERRORS = (
    CLIError,
    RecordError,  # includes TraceTooLargeError
    GPUUnavailableError,
    TraceError,
    OSError,  # a missing file or folder, no permission
    KeyError,  # a block that is not in the trace
    IndexError,  # a phase that is not in the trace
    ValueError,
)


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser whose usage errors become one line, not usage plus message."""

    def error(self, message: str):  # noqa: D102 - argparse's hook
        raise CLIError(f"{message} (see '{self.prog} --help')")


# ------------------------------------------------------------ value parsers
def _ints(text: str, n: int, what: str, example: str) -> tuple[int, ...]:
    parts = [p for p in re.split(r"[,x]", text.strip()) if p.strip()]
    try:
        values = tuple(int(p) for p in parts)
    except ValueError:
        values = ()
    if len(values) != n or len(parts) != n:
        raise argparse.ArgumentTypeError(
            f"{what} must be {n} integers like {example}, got {text!r}"
        )
    return values


def parse_shape(text: str) -> tuple[int, int, int]:
    """``"J,K,L"`` (or ``"JxKxL"``) to ``(j, k, l)``: M is j x k, N is k x l.

    Parameters
    ----------
    text : str
        What was typed.
    """
    return _ints(text, 3, "--shape", "3,4,5 (M is 3x4, N is 4x5)")  # type: ignore[return-value]


def parse_kernel(text: str) -> str:
    """A book kernel's name or ``FILE.py:NAME`` (a kernel of your own), else an error.

    Parameters
    ----------
    text : str
        What was typed.
    """
    if text in KERNELS or ".py:" in text:
        return text
    raise argparse.ArgumentTypeError(
        f"unknown kernel {text!r}; choose one of {', '.join(KERNELS)}, or FILE.py:NAME"
    )


def parse_tile_width(text: str) -> int | None:
    """``'16'`` -> 16; ``'device'`` -> None (the Fig. 5.14 kernel chooses from the device).

    Parameters
    ----------
    text : str
        What was typed.
    """
    if text.strip().lower() == "device":
        return None
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected an integer from 1 to {MAX_TILE_WIDTH} or 'device', got {text!r}"
        ) from None


_PAIR = re.compile(r"^\(?\s*(\d+)\s*[, ]\s*(\d+)\s*\)?$")


def parse_block(text: str) -> tuple[int, int]:
    """``"BY,BX"`` (also ``"(by, bx)"`` or ``"by bx"``) to ``(by, bx)``: the one block parser.

    Parameters
    ----------
    text : str
        One block as typed, ``by`` and ``bx`` non-negative.

    Raises
    ------
    argparse.ArgumentTypeError
        For text that is not two non-negative integers.
    """
    m = _PAIR.match(text.strip())
    if m is None:
        raise argparse.ArgumentTypeError(
            f"a block must be 2 integers like 1,0 (by,bx), got {text!r}"
        )
    return int(m[1]), int(m[2])


def parse_window(text: str) -> list[tuple[int, int]]:
    """Blocks typed by a person: ``"0,0; 31,17"`` (also ``(0,0) (31,17)`` or one per line).

    Each block is read by :func:`parse_block`; repeated blocks are kept once.

    Parameters
    ----------
    text : str
        The window's blocks as typed, separated by ``;``, new lines or parentheses.

    Raises
    ------
    ValueError
        When a part is not a ``by,bx`` pair of non-negative integers, or none is given.
    """
    parts = [p.strip() for p in re.split(r"[;\n]|\)\s*\(|\)\s*,\s*\(", text) if p.strip()]
    out: list[tuple[int, int]] = []
    for p in parts:
        try:
            pair = parse_block(p.strip("() "))
        except argparse.ArgumentTypeError as exc:
            raise ValueError(
                f"window blocks are 'by,bx' pairs separated by ';' (e.g. '0,0; 31,17'): {exc}"
            ) from None
        if pair not in out:
            out.append(pair)
    if not out:
        raise ValueError("name at least one block of the window, e.g. '0,0; 31,17'")
    return out


_UNITS = {
    "": 1,
    "b": 1,
    "k": 2**10,
    "kb": 2**10,
    "kib": 2**10,
    "m": 2**20,
    "mb": 2**20,
    "mib": 2**20,
    "g": 2**30,
    "gb": 2**30,
    "gib": 2**30,
}


def parse_drop_barrier(text: str) -> tuple[int, ...]:
    """``'1'``, ``'2'`` or ``'1,2'`` -> the barriers to remove.

    Parameters
    ----------
    text : str
        What was typed.
    """
    parts = [p.strip() for p in text.split(",")]
    if any(p not in ("1", "2") for p in parts):
        raise argparse.ArgumentTypeError(
            f"expected 1 (the barrier after the loads), 2 (after the k loop) or 1,2; got {text!r}"
        )
    return tuple(sorted({int(p) for p in parts}))


def parse_bytes(text: str) -> int:
    """``"1000"``, ``"64K"``, ``"256M"``, ``"1G"`` (binary units) to a number of bytes.

    Parameters
    ----------
    text : str
        What was typed.
    """
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*", text)
    if not m or m.group(2).lower() not in _UNITS or float(m.group(1)) <= 0:
        raise argparse.ArgumentTypeError(
            f"--max-bytes must be a positive size like 1000000, 64K, 256M or 1G, got {text!r}"
        )
    return int(float(m.group(1)) * _UNITS[m.group(2).lower()])


def _non_negative(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        v = -1
    if v < 0:
        raise argparse.ArgumentTypeError(f"must be an integer >= 0, got {text!r}")
    return v
