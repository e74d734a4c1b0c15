"""``vizmm serve`` and ``vizmm doctor``: the dashboard's server and the report on this machine."""

from __future__ import annotations

import argparse
import os

from .cli_values import EXIT_FAILURE, EXIT_OK, CLIError, _non_negative


# -------------------------------------------------------------------- serve
def _serve_options(p: argparse.ArgumentParser) -> None:
    """The options of ``vizmm serve``."""
    p.add_argument(
        "--address",
        default="127.0.0.1",
        help="the address to listen on (default: 127.0.0.1, this machine only; 0.0.0.0: "
        "every interface)",
    )
    p.add_argument(
        "--port",
        type=_port,
        default=5006,
        help="the port to listen on, 0 to 65535 (0: any free port; default: 5006)",
    )
    p.add_argument(
        "--allow-websocket-origin",
        action="append",
        default=[],
        metavar="HOST[:PORT]",
        help="a host name the pages may be opened under (repeatable); needed with --address",
    )
    p.add_argument(
        "--num-procs", type=_non_negative, default=1, help="server processes (default: 1)"
    )
    p.add_argument(
        "--traces",
        nargs="+",
        default=[],
        metavar="FILE_OR_FOLDER",
        help="trace files, or folders of .vizmm files, that the pages may open (shown by "
        "name, never by path); nothing else on this machine's disk is reachable from a page",
    )
    p.add_argument(
        "--max-trace-mib",
        type=_positive_mib,
        default=None,
        metavar="MIB",
        help="the most one page may make the server decode or record per trace (MiB of "
        "arrays in memory; default: 256)",
    )
    p.add_argument("--show", action="store_true", help="open the dashboard in a browser")
    p.add_argument(
        "--dry-run", action="store_true", help="print the panel command instead of running it"
    )


def _port(text: str) -> int:
    """A TCP port number, 0 to 65535."""
    if len(text) > 8 or not text.strip().isdigit() or not 0 <= int(text) <= 65535:
        raise argparse.ArgumentTypeError(f"{text[:20]!r} is not a port (a whole number 0 to 65535)")
    return int(text)


def check_can_listen(address: str, port: int) -> None:
    """Say now, in one line, when the server could not listen on ``address:port``.

    Each address the name stands for is bound, as Tornado will bind it
    (``SO_REUSEADDR``, IPv6 sockets IPv6 only), then closed at once; the
    server binds it a moment later.

    Parameters
    ----------
    address : str
        ``--address``: a name or a numeric address of this machine.
    port : int
        ``--port``, 0 to 65535.

    Raises
    ------
    CLIError
        For a port in use, an address that is not this machine's (or not
        an address at all), or a port that needs privileges.
    """
    import errno
    import socket

    try:
        infos = socket.getaddrinfo(
            address or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )
    except (socket.gaierror, UnicodeError) as exc:
        raise CLIError(
            f"--address {address}: no such address ({getattr(exc, 'strerror', None) or exc}); "
            "give an address of this machine, such as 127.0.0.1 or 0.0.0.0"
        ) from None
    for family, kind, proto, _name, sockaddr in infos:
        with socket.socket(family, kind, proto) as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6:
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            try:
                sock.bind(sockaddr)
            except OSError as exc:
                if exc.errno == errno.EADDRINUSE:
                    why = "is in use by another program; choose another with --port"
                elif exc.errno == errno.EADDRNOTAVAIL:
                    raise CLIError(
                        f"--address {address} is not an address of this machine; give one of "
                        "its own, such as 127.0.0.1 (this machine only) or 0.0.0.0 (every "
                        "interface)"
                    ) from None
                elif exc.errno == errno.EACCES:
                    why = "needs privileges to listen on; choose a port above 1023 with --port"
                else:
                    why = f"cannot be listened on ({exc.strerror or exc})"
                raise CLIError(f"port {port} of {address} {why}") from None


def _positive_mib(text: str) -> int:
    """A size in MiB of at least 1 and at most 1 TiB."""
    if len(text) > 12 or not text.strip().isdigit() or not 1 <= int(text) <= 2**20:
        raise argparse.ArgumentTypeError(
            f"{text[:20]!r} is not a size in MiB (a whole number from 1 to 1048576)"
        )
    return int(text)


def cmd_serve(args: argparse.Namespace) -> int:
    """Serve the dashboard, the large view and side by side (localhost unless told otherwise).

    Serve the dashboard (/dashboard), the large-matrix view (/large_view) and two
    replays side by side (/side_by_side) with Panel. It listens on localhost
    (127.0.0.1) unless --address says otherwise; the shipped traces are read once
    per process before it listens, and shared by every visitor. The server uses the
    C library's allocator (PYTHONMALLOC=malloc, unless PYTHONMALLOC is set), which
    gives memory back after pages close.

    Parameters
    ----------
    args : argparse.Namespace
        The parsed command line of ``vizmm serve`` (``vizmm serve --help`` lists its options).

    Examples
    --------
    vizmm serve --show                       (on this machine only)
    vizmm serve --traces lecture/ big.vizmm  (pages may open these, by name)
    vizmm serve --address 0.0.0.0 --allow-websocket-origin=HOST:5006 --num-procs 2
                                             (a class: HOST is the name students type)
    """
    from .serve.command import ServeError, run_server, serve_command, serve_environment

    try:
        cmd = serve_command(
            args.address, args.port, args.num_procs, args.allow_websocket_origin, args.show
        )
        extra = serve_environment(traces=args.traces, max_trace_mib=args.max_trace_mib)
    except ServeError as exc:
        raise CLIError(str(exc)) from None
    if args.dry_run:  # as a shell would take it: the variables, then the command
        print(" ".join([*(f"{k}={v}" for k, v in extra.items()), *cmd]))
        return EXIT_OK
    check_can_listen(args.address, args.port)
    return run_server(cmd, {**os.environ, **extra})


# ------------------------------------------------------------------- doctor
def _doctor_options(p: argparse.ArgumentParser) -> None:
    """The options of ``vizmm doctor``."""
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.add_argument(
        "--no-run",
        action="store_true",
        help="check versions and the driver only: run no kernel",
    )
    p.add_argument(
        "--timeout",
        type=float,
        default=300.0,
        metavar="S",
        help="seconds each target's kernel run may take (default: 300)",
    )


def cmd_doctor(args: argparse.Namespace) -> int:
    """Say what can record here, what cannot and how to fix it.

    Print the versions of Python, NumPy, numba, numba-cuda and numba-cuda-mlir,
    the NVIDIA driver and each GPU (compute capability), which backend
    --backend auto picks and why, and for each compiler (numba-cuda-mlir,
    numba-cuda, the simulator) whether it records here: each usable one runs
    the book's Fig. 5.9 kernel in a fresh process with a time limit, checked
    against NumPy. Every known failure is named with its fix. Exit code 0 when
    some path records (the simulator counts), 1 when none does.

    Parameters
    ----------
    args : argparse.Namespace
        The parsed command line of ``vizmm doctor`` (``vizmm doctor --help`` lists its options).

    Examples
    --------
    vizmm doctor
    vizmm doctor --no-run          (versions and driver only, in a second)
    vizmm doctor --json > doctor.json
    """
    if not args.timeout > 0:
        raise CLIError(f"--timeout must be a number of seconds > 0, got {args.timeout}")
    from .record.doctor import diagnose

    report = diagnose(run=not args.no_run, timeout=args.timeout)
    if args.json:
        import json

        print(json.dumps(report.as_dict(), indent=1))
    else:
        print("\n".join(report.lines()))
    return EXIT_OK if report.ok else EXIT_FAILURE
