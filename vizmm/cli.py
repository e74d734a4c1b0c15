"""The ``vizmm`` command: record a trace, describe it, print the book's Fig. 5.8 table.

::

    vizmm record --width 4 --tile-width 2 --kernel tiled -o fig58.vizmm
    vizmm info fig58.vizmm
    vizmm table fig58.vizmm --block 0,0
    vizmm transactions fig58.vizmm --block 0,0 --phase 0 --k 1

Every subcommand has ``--help``. Bad input (sizes, tile width, kernel,
backend, a damaged trace file, a missing folder...) gives one line on stderr
and exit code 2, never a traceback; a recording that fails writes no file.

Adding a subcommand
-------------------
Each subcommand is a handler ``cmd_NAME(args)`` and a function
``_NAME_options(p)`` declaring its options on its parser, paired in
:data:`SUBCOMMANDS`; :func:`build_parser` adds each with
``_subcommand(subparsers, cmd_NAME)`` (which makes ``cmd_NAME`` the handler
and takes its help, description and examples from ``cmd_NAME``'s
docstring). The handler takes the parsed :class:`argparse.Namespace`,
returns the exit code (0 for success) and raises :class:`CLIError` (or one
of :data:`INPUT_ERRORS`) for bad input; :func:`main` turns those into the
one-line message and exit code 2. A new subcommand is one more pair in
:data:`SUBCOMMANDS`.

The exit codes, the errors and the parsers of values live in
:mod:`vizmm.cli_values`; ``serve`` and ``doctor`` in :mod:`vizmm.cli_serve`,
``grade`` in :mod:`vizmm.cli_grade`. Every name stays importable from here.
"""

from __future__ import annotations

import argparse
import inspect
import math
import os
import re
import signal
import sys
import textwrap
import threading
from collections.abc import Callable, Sequence

from . import __version__
from .cli_grade import _grade_options, cmd_grade
from .cli_serve import _doctor_options, _serve_options, check_can_listen, cmd_doctor, cmd_serve
from .cli_values import (
    EXIT_FAILURE,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_TERMINATED,
    EXIT_USAGE,
    INPUT_ERRORS,
    CLIError,
    Terminated,
    _ints,
    _non_negative,
    _Parser,
    parse_block,
    parse_bytes,
    parse_drop_barrier,
    parse_kernel,
    parse_shape,
    parse_tile_width,
    parse_window,
)
from .record import (
    BACKENDS,
    DEFAULT_MAX_BYTES,
    TooSlowError,
    TraceTooLargeError,
    record,
)
from .record.targets import SIMULATOR_BACKENDS
from .trace import (
    TraceOverLimitError,
    atomic_write,
    human_bytes,
    load,
    not_recorded_message,
    read_info,
)
from .trace.destination import check_writable

__all__ = [
    "CLIError",
    "INPUT_ERRORS",
    "SUBCOMMANDS",
    "Terminated",
    "build_parser",
    "check_can_listen",
    "main",
    "parse_block",
    "parse_bytes",
    "parse_drop_barrier",
    "parse_kernel",
    "parse_shape",
    "parse_tile_width",
    "parse_window",
]


def _subcommand(subparsers, func: Callable) -> argparse.ArgumentParser:
    """Add the subcommand that ``func`` (``cmd_NAME``) runs and its docstring tells; its parser.

    The docstring's summary line is the subcommand's line in ``vizmm --help``
    (first letter lowered, no full stop); the paragraphs after it are the
    description of ``vizmm NAME --help``, and an ``Examples`` section its
    epilog, printed as written. A ``Parameters`` section (``args``) is for
    readers of the code, not printed.
    """
    doc = inspect.getdoc(func)
    if doc is None:
        raise TypeError(f"the subcommand {func.__name__} has no docstring to describe it")
    summary, _, rest = doc.partition("\n\n")
    description, _, examples = rest.partition("Examples\n--------\n")
    description = description.partition("Parameters\n----------\n")[0]
    p = subparsers.add_parser(
        func.__name__.removeprefix("cmd_"),
        help=summary[0].lower() + summary[1:].removesuffix("."),
        description=description.strip(),
        epilog="examples:\n" + textwrap.indent(examples, "  ") if examples else None,
        formatter_class=argparse.RawDescriptionHelpFormatter
        if examples
        else argparse.HelpFormatter,
    )
    p.set_defaults(func=func)
    return p


def _trace_argument(p: argparse.ArgumentParser, metavar: str = "FILE") -> None:
    p.add_argument("file", metavar=metavar, help="a trace written by 'vizmm record'")


def _block_option(
    p: argparse.ArgumentParser,
    help: str = "the block (blockIdx.y, blockIdx.x); default: the first block recorded per thread",
) -> None:
    p.add_argument("--block", type=parse_block, metavar="BY,BX", help=help)


def _check_file(path: str) -> None:
    """Refuse a trace path that does not exist or is a folder (CLIError)."""
    if not os.path.exists(path):
        raise CLIError(f"{path}: no such file")
    if os.path.isdir(path):
        raise CLIError(f"{path} is a folder, not a trace file")


def _load(path: str):
    _check_file(path)
    return load(path)


def _check_in_grid(trace, block: tuple[int, int]) -> None:
    """Refuse a ``--block`` outside the trace's grid (CLIError in the one wording)."""
    gy, gx = trace.grid
    if not (0 <= block[0] < gy and 0 <= block[1] < gx):
        raise CLIError(f"--block {block[0]},{block[1]}: {not_recorded_message(trace, block)}")


def _block(trace, args: argparse.Namespace) -> tuple[int, int]:
    """``--block``, or the trace's first block recorded per thread (CLIError if none)."""
    if len(trace.detail_blocks) == 0:
        raise CLIError(f"{args.file} recorded no block per thread")
    if args.block is not None:
        _check_in_grid(trace, args.block)
        return args.block
    from .replay.navigator import default_block

    return default_block(trace)


# ------------------------------------------------------------------- record
def _record_options(p: argparse.ArgumentParser) -> None:
    """The options of ``vizmm record``."""
    size = p.add_mutually_exclusive_group(required=True)
    size.add_argument(
        "--shape",
        type=parse_shape,
        metavar="J,K,L",
        help="M is J x K, N is K x L, P is J x L (elements)",
    )
    size.add_argument(
        "--width", type=int, metavar="W", help="square W x W matrices (Width in the book)"
    )
    p.add_argument(
        "--tile-width",
        "-t",
        type=parse_tile_width,
        default=2,
        metavar="T",
        help="TILE_WIDTH, 1 to 32: blocks of T x T threads (default: 2); 'device' with "
        "--kernel dynamic: chosen from the device's properties (Fig. 5.14)",
    )
    p.add_argument(
        "--kernel",
        "-k",
        type=parse_kernel,
        default="boundary",
        metavar="KERNEL",
        help="naive (Fig. 3.11), tiled (Fig. 5.9, no boundary checks), boundary "
        "(Fig. 5.13), general (j x k . k x l), dynamic (Fig. 5.14, dynamically sized "
        "shared memory), or FILE.py:NAME, a @cuda.jit kernel of your own taking "
        "(M, N, P, Width) or (M, N, P, j, k, l), recorded through the instrumenter in a "
        "worker process; default: boundary",
    )
    p.add_argument(
        "--device",
        default="A100",
        help="with --tile-width device in the simulator: the preset whose properties choose "
        "TILE_WIDTH, A100 (the book's), H100 or H200 (default: A100); on a GPU its own",
    )
    p.add_argument(
        "--backend",
        "-b",
        choices=BACKENDS,
        default="auto",
        help="gpu (numba-cuda-mlir when installed, else numba-cuda), gpu-legacy (numba-cuda), "
        "simulator (vizmm's own: a block's threads as NumPy lanes, runs anywhere), numba-sim "
        "(Numba's CUDA simulator, slow: a cross-check), or auto: the GPU when one is usable "
        "(default: auto; 'vizmm doctor' says which and why)",
    )
    _schedule_option(p)
    p.add_argument(
        "--seed",
        type=_non_negative,
        default=0,
        help="seed of the random integer inputs 0..9, an integer >= 0 (default: 0)",
    )
    p.add_argument(
        "--window",
        type=parse_block,
        action="append",
        metavar="BY,BX",
        help="record only this block per thread (repeatable); the others still "
        "count reads and times, and the simulator runs only these blocks",
    )
    p.add_argument(
        "--drop-barrier",
        type=parse_drop_barrier,
        metavar="B",
        help="barrier lab (tiled, boundary): remove __syncthreads() 1 (after the loads), "
        "2 (after the k loop) or 1,2 (both); every k-loop read is recorded",
    )
    p.add_argument(
        "--max-bytes",
        type=parse_bytes,
        metavar="SIZE",
        help=f"refuse traces larger than SIZE, e.g. 64M (default: {DEFAULT_MAX_BYTES // 2**20}M)",
    )
    p.add_argument(
        "--output",
        "-o",
        required=True,
        metavar="FILE",
        help="the trace file to write (replaced if it exists)",
    )
    p.add_argument(
        "--quiet",
        "-q",
        action="store_true",
        help="print nothing but errors: no estimate, no progress bar",
    )


def _record(args: argparse.Namespace, j: int, k: int, l: int, limit: int, say):  # noqa: E741
    """:func:`vizmm.record` with ``vizmm record``'s arguments."""
    same = {name: getattr(args, name) for name in _RECORD_AS_GIVEN}
    return record(
        j,
        k,
        l,
        **same,
        max_bytes=limit,
        progress=False if args.quiet else None,  # a bar on a terminal, for over a second
        on_estimate=say,
    )


#: ``vizmm record``'s options that :func:`vizmm.record` takes as given, under their names.
_RECORD_AS_GIVEN = (
    "tile_width device kernel backend seed schedule window drop_barrier quiet"
).split()


def cmd_record(args: argparse.Namespace) -> int:
    """Run an instrumented kernel and save its trace.

    Run one of the book's matrix-multiplication kernels with recording (on a GPU,
    or in a simulator) and save what every thread did to a trace file.
    The estimated trace size and simulator time are printed first.

    Parameters
    ----------
    args : argparse.Namespace
        The parsed command line of ``vizmm record`` (``vizmm record --help`` lists its options).

    Examples
    --------
    vizmm record --width 4 --tile-width 2 --kernel tiled -o fig58.vizmm   (Fig. 5.8)
    vizmm record --width 3 --tile-width 2 --kernel boundary -o fig511.vizmm
    vizmm record --shape 100,70,90 -t 16 --kernel general --window 0,0 --window 6,5 -o big.vizmm
    vizmm record --width 4 -t 2 --kernel tiled --drop-barrier 1 -o race.vizmm   (barrier lab)
    """
    if args.shape is not None:
        j, k, l = args.shape
    else:
        j = k = l = args.width
    check_writable(args.output)  # before anything is recorded
    if args.tile_width is None:  # Fig. 5.14: record() chooses it; say from what first
        if args.kernel != "dynamic":
            raise CLIError(
                "--tile-width device needs --kernel dynamic: only Fig. 5.14 chooses its "
                "TILE_WIDTH from the device"
            )
        from .record.device import tile_width_from_device

        if not args.quiet:
            print(tile_width_from_device(args.backend, args.device)[1], flush=True)
    limit = DEFAULT_MAX_BYTES if args.max_bytes is None else args.max_bytes

    def say(est) -> None:
        if not args.quiet:
            print(f"estimate: {est.describe()} (limit {human_bytes(limit)})", flush=True)

    try:
        trace = _record(args, j, k, l, limit, say)
    except (TraceTooLargeError, TooSlowError) as exc:  # its advice in this command's flags
        raise CLIError(exc.words("cli")) from None
    data = trace.to_bytes()
    path = atomic_write(args.output, data)
    if not args.quiet:
        print(
            f"wrote {path} ({human_bytes(len(data))}): {trace.kernel} kernel, "
            f"M {j}x{k} . N {k}x{l}, TILE_WIDTH {trace.tile_width}, on the {trace.backend}"
        )
    return EXIT_OK


def _schedule_option(p: argparse.ArgumentParser) -> None:
    """``--schedule``, the one option ``vizmm record`` and ``vizmm check`` word alike."""
    p.add_argument(
        "--schedule",
        choices=("threads", "warps"),
        default="threads",
        help="vizmm's simulator: the order threads run in between barriers, what a racing "
        "read finds: threads (each alone to its next barrier, in threadIdx order; the "
        "default) or warps (a warp's 32 lanes in lockstep, warps in turn)",
    )


# -------------------------------------------------------------------- check
def _check_options(p: argparse.ArgumentParser) -> None:
    """The options of ``vizmm check``."""
    p.add_argument("kernel", metavar="FILE.py:NAME", help="a @cuda.jit kernel of your own")
    size = p.add_mutually_exclusive_group(required=True)
    size.add_argument("--shape", type=parse_shape, metavar="J,K,L", help="M is J x K, N is K x L")
    size.add_argument("--width", type=int, metavar="W", help="square W x W matrices")
    p.add_argument(
        "--tile-width",
        "-t",
        type=int,
        metavar="T",
        help="TILE_WIDTH, 1 to 32 (default: the file's TILE_WIDTH constant)",
    )
    p.add_argument("--backend", "-b", choices=BACKENDS, default="auto")
    _schedule_option(p)
    p.add_argument("--seed", type=_non_negative, default=0, help="seed of the inputs 0..9")
    p.add_argument("--output", "-o", metavar="FILE", help="also write the trace here")
    p.add_argument(
        "--first", type=_non_negative, default=3, help="findings shown in full (default: 3)"
    )
    p.add_argument(
        "--timeout",
        type=_positive_seconds,
        default=CHECK_TIMEOUT_S,
        metavar="S",
        help=f"wall-clock seconds the recording may take (default: {CHECK_TIMEOUT_S:g})",
    )


#: Wall-clock limit of ``vizmm check``'s recording (seconds); ``--timeout`` changes it.
CHECK_TIMEOUT_S = 300.0
#: Memory of ``vizmm check``'s recording: all its processes together (bytes).
CHECK_MEMORY_BYTES = 8 << 30


def _positive_seconds(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        v = float("nan")
    if not (0 < v <= 24 * 3600):
        raise argparse.ArgumentTypeError(f"seconds from 0 to 86400 (exclusive of 0), got {text!r}")
    return v


def _check_apart(args: argparse.Namespace, j: int, k: int, l: int):
    """``vizmm.check`` of the file's kernel, recorded in a process apart under limits."""
    from .analysis.check import CheckReport, findings
    from .checker import MAX_CHECK_ELEMENTS, _tile_width
    from .grade.runner import record_apart
    from .grade.sandbox import Limits

    path, _, name = args.kernel.rpartition(":")
    if not os.path.isfile(path):
        raise CLIError(f"kernel file {path!r} does not exist")
    if not name.isidentifier():
        raise CLIError(f"{name!r} is not a Python name (give the kernel as FILE.py:NAME)")
    for v in (j, k, l):
        if v < 1:
            raise CLIError(f"sizes are integers >= 1, got {v}")
    if max(j * l, j * k, k * l) > MAX_CHECK_ELEMENTS:
        raise CLIError(
            f"check records every thread in detail: M {j}x{k}, N {k}x{l} is over its "
            f"{MAX_CHECK_ELEMENTS} elements a matrix; a small launch shows the same mistakes"
        )
    tile_width = _tile_width(args.kernel, args.tile_width, None, "TILE_WIDTH")
    sim = args.backend in SIMULATOR_BACKENDS
    limits = Limits(
        wall_s=args.timeout,
        cpu_s=max(1, int(args.timeout) + 1),
        memory_bytes=CHECK_MEMORY_BYTES,
        as_bytes=CHECK_MEMORY_BYTES if sim else None,
    )
    trace, _, _ = record_apart(
        path, name, (j, k, l), tile_width, seed=args.seed, backend=args.backend,
        reads=True, limits=limits, schedule=args.schedule,
    )  # fmt: skip
    found = findings(trace)
    return CheckReport(
        ok=not any(f.severity == "error" for f in found), trace=trace, findings=found
    )


def cmd_check(args: argparse.Namespace) -> int:
    """Check a kernel of your own: what went wrong, in the book's terms.

    Record the kernel (in a worker process, under limits) on seeded small
    integers, trace every product it accumulated back through the shared
    slot it was read from to the M and N elements stored there, and list
    wrong terms, wrong P elements, races (two threads, one shared element,
    no barrier between), out-of-bounds accesses, then warnings (uncoalesced,
    bank conflicts) and information (global reads against Width/TILE_WIDTH).
    The first few findings are printed in full, the rest counted. The
    kernel file is recorded in a process apart, in a folder of its own,
    under a wall-clock limit (--timeout), a CPU-time limit and a memory
    limit; findings are computed here from its recording. Exit code 0: no
    error found; 1: findings that are errors; 2: bad input, or a kernel that
    could not be recorded within the limits.

    Parameters
    ----------
    args : argparse.Namespace
        The parsed command line of ``vizmm check`` (``vizmm check --help`` lists its options).

    Examples
    --------
    vizmm check mykernel.py:matrixMulKernel --width 4 --tile-width 2
    vizmm check mykernel.py:matmul --shape 3,5,4 -t 2 -o checked.vizmm
    """
    from .replay.block import Replay
    from .replay.findings import finding_step, finding_url

    if ".py:" not in args.kernel:
        raise CLIError(
            f"give the kernel as FILE.py:NAME (a Python file and the kernel's name), "
            f"got {args.kernel!r}"
        )
    if args.shape is not None:
        j, k, l = args.shape
    else:
        j = k = l = args.width
    if args.output is not None:
        check_writable(args.output)
    report = _check_apart(args, j, k, l)
    print(report.summary(first=args.first))
    if args.output is not None:
        data = report.trace.to_bytes()
        path = atomic_write(args.output, data)
        print(f"wrote {path} ({human_bytes(len(data))})")
        if report.findings and report.findings[0].block is not None:
            first = report.findings[0]
            replay = Replay(report.trace, first.block)
            name = os.path.basename(path)
            print(
                f"to see the first finding (step {finding_step(replay, first) + 1} of block "
                f"{first.block}): vizmm serve --traces {path}, then open "
                f"{finding_url(name, replay, first)}"
            )
    elif report.findings:
        print("write the trace with -o FILE to see the findings in the dashboard")
    return EXIT_OK if report.ok else EXIT_FAILURE


# --------------------------------------------------------------------- info
def _info_options(p: argparse.ArgumentParser) -> None:
    """The options of ``vizmm info``."""
    _trace_argument(p)


def cmd_info(args: argparse.Namespace) -> int:
    """Say what a trace file holds.

    Print what a trace file holds: kernel, shapes, grid, backend and device, when
    it was recorded, global reads and CGMA.

    Parameters
    ----------
    args : argparse.Namespace
        The parsed command line of ``vizmm info`` (``vizmm info --help`` lists its options).
    """
    _check_file(args.file)
    text = read_info(args.file).summary()  # checks the manifest; decodes no array
    if text is None:  # a version 1 file keeps no totals: read the arrays
        text = load(args.file).summary()
    print(f"file        {args.file} ({human_bytes(os.path.getsize(args.file))})")
    print(text)
    return EXIT_OK


# -------------------------------------------------------------------- table
def _table_options(p: argparse.ArgumentParser) -> None:
    """The options of ``vizmm table``."""
    _trace_argument(p)
    _block_option(p)
    p.add_argument(
        "--phase",
        type=_non_negative,
        action="append",
        metavar="PH",
        help="show only this phase (repeatable); default: all",
    )
    p.add_argument(
        "--ascii",
        action="store_true",
        help="plain ASCII: M[0,1] -> Mds[0,1] instead of M₀,₁ → Mds₀,₁",
    )
    p.add_argument(
        "--book", action="store_true", help="only the book's columns: no Pvalue values, no P store"
    )
    p.add_argument(
        "--max-terms",
        type=_non_negative,
        default=4,
        metavar="N",
        help="shorten Pvalue sums longer than N terms (default: 4; 0: never)",
    )


def cmd_table(args: argparse.Namespace) -> int:
    """Print the book's Fig. 5.8 table for one block.

    Print the book's Fig. 5.8 table for one block of a trace: one row per thread
    (ty, tx); per phase the M element loaded into Mds, the N element loaded into
    Nds (or the zero-fill, the wrong element, the access past the allocation) and
    the Pvalue terms, with the Pvalue after the phase; then the P store.

    Parameters
    ----------
    args : argparse.Namespace
        The parsed command line of ``vizmm table`` (``vizmm table --help`` lists its options).
    """
    trace = _load(args.file)
    block = _block(trace, args)
    if args.max_terms == 1:
        raise CLIError("--max-terms must be 0 (never shorten) or at least 2")
    from .render.text import format_table
    from .replay.table import build_table

    table = build_table(
        trace,
        block,
        phases=args.phase,
        values=not args.book,
        p_write=not args.book,
        max_terms=args.max_terms or None,
    )
    unicode = not args.ascii and _can_print("→₀┌")
    print(format_table(table, unicode=unicode))
    return EXIT_OK


def _can_print(sample: str) -> bool:
    """Whether stdout's encoding can show ``sample`` (False on a plain-ASCII terminal)."""
    try:
        sample.encode(getattr(sys.stdout, "encoding", None) or "ascii")
    except (UnicodeEncodeError, LookupError):
        return False
    return True


def _parse_focus(text: str) -> tuple[int, int]:
    """``"TY,TX"`` to ``(ty, tx)``."""
    return _ints(text, 2, "--focus", "1,0 (ty,tx)")  # type: ignore[return-value]


def _parse_size(text: str) -> tuple[int, int]:
    """``"1920x1080"`` to ``(width, height)`` in pixels."""
    return _ints(text, 2, "--size", "1920x1080 (width x height)")  # type: ignore[return-value]


def _parse_fps(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        v = float("nan")
    if not math.isfinite(v) or v <= 0:
        raise argparse.ArgumentTypeError(f"--fps must be a number > 0, got {text!r}")
    return v


# ------------------------------------------------------------------- export
#: ``vizmm export`` options passed to :func:`vizmm.export.export` as keywords of the same name.
EXPORT_OPTIONS = (
    "granularity",
    "order",
    "views",
    "fps",
    "size",
    "focus",
    "theme",
    "transactions",
    "warp",
)


def _export_options(p: argparse.ArgumentParser) -> None:
    """The options of ``vizmm export``."""
    from . import export
    from .replay import GRANULARITIES, ORDERS

    _trace_argument(p, "TRACE")
    p.add_argument(
        "-o",
        "--output",
        metavar="FILE",
        help="where to write (default: TRACE with the format's suffix)",
    )
    p.add_argument(
        "--format",
        "-f",
        choices=export.EXPORT_FORMATS,
        dest="fmt",
        help="gif, mp4 or html (default: from the suffix of -o)",
    )
    _block_option(p)
    p.add_argument(
        "--granularity",
        choices=GRANULARITIES,
        default="substep",
        help="one frame per sub-step of the loop or per phase (default: substep)",
    )
    p.add_argument(
        "--order",
        choices=ORDERS,
        default="lockstep",
        help="barrier arrivals all at once or in the recorded order (default: lockstep)",
    )
    p.add_argument(
        "--views", metavar="V1,V2,...", help="views to draw, e.g. M,N,P,Mds,Nds (default: all)"
    )
    p.add_argument("--fps", type=_parse_fps, default=2.0, help="steps per second (default: 2)")
    p.add_argument(
        "--size",
        type=_parse_size,
        default=(1280, 720),
        metavar="WxH",
        help="GIF / MP4 frame size in pixels (default: 1280x720; 1920x1080 for full HD)",
    )
    p.add_argument(
        "--focus",
        type=_parse_focus,
        metavar="TY,TX",
        help="follow one thread: outline its loads and reads",
    )
    p.add_argument(
        "--theme",
        choices=("light", "dark"),
        default="light",
        help="colours: light (default) or dark for dim rooms; both survive colour-blindness",
    )
    p.add_argument(
        "--transactions",
        action="store_true",
        help="draw the memory-transactions view: the warp's sectors on M and N, the banks of "
        "Mds and Nds at each k with its conflicts, a row per warp, the totals",
    )
    p.add_argument(
        "--warp",
        type=int,
        default=0,
        metavar="W",
        help="the warp of that view (threads 32W..32W+31; default 0; --focus picks its own)",
    )
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bar")


def cmd_export(args: argparse.Namespace) -> int:
    """Write a block's replay as a GIF, an MP4 video or one offline HTML file.

    Replay one block of a trace and write it as an animated GIF, an H.264 MP4 (for
    slides) or one self-contained HTML file that works offline (play, step, scrub;
    keys ← → space Home End). One frame per step.

    Parameters
    ----------
    args : argparse.Namespace
        The parsed command line of ``vizmm export`` (``vizmm export --help`` lists its options).
    """
    from . import export
    from .replay import Replay

    _check_file(args.file)
    if args.output is None and args.fmt is None:
        raise export.ExportError("give -o FILE (.gif, .mp4 or .html) or --format")
    fmt = args.fmt or export.format_from_path(args.output)
    out = args.output or os.path.splitext(args.file)[0] + "." + fmt
    if args.output is not None and args.fmt is not None:
        suffix = os.path.splitext(out)[1].lower().lstrip(".")
        suffix = "html" if suffix == "htm" else suffix
        if suffix in export.EXPORT_FORMATS and suffix != fmt:
            raise export.ExportError(f"--format {fmt} does not match the suffix of {out}")
    trace = load(args.file)
    block = _block(trace, args)
    options = {name: getattr(args, name) for name in EXPORT_OPTIONS}
    export.export(trace, out, fmt, block=block, progress=False if args.quiet else None, **options)
    n = len(Replay(trace, block, granularity=args.granularity, order=args.order))
    # a FIFO or a device keeps no size to report
    size = f" ({human_bytes(os.path.getsize(out))})" if os.path.isfile(out) else ""
    what = f"{args.size[0]}x{args.size[1]}, " if fmt != "html" else ""
    print(
        f"wrote {out}{size}: {fmt} of block ({block[0]},{block[1]}), {n} frames "
        f"({args.granularity}, {args.order}), {what}{args.fps:g} fps"
    )
    return 0


# ---------------------------------------------------------------- occupancy
def _occupancy_options(p: argparse.ArgumentParser) -> None:
    """The options of ``vizmm occupancy``."""
    p.add_argument(
        "--device",
        default="A100",
        help="A100 (the book's figures), H100 or H200 (measured), or live (this GPU); default A100",
    )
    p.add_argument("--kernel", default="tiled", help="tiled (default), boundary, dynamic, ...")
    p.add_argument("-t", "--tile-width", type=int, help="TILE_WIDTH, 1 to 32")
    p.add_argument("--threads", type=int, help="threads per block (raw resources)")
    p.add_argument("--shared", type=int, help="shared memory per block, bytes (raw resources)")
    p.add_argument("--registers", type=int, help="registers per thread (default: measured)")
    p.add_argument("--book", action="store_true", help="print Section 5.6's arithmetic, checked")


def cmd_occupancy(args: argparse.Namespace) -> int:
    """Blocks per SM, what limits them and the occupancy (Section 5.6).

    How many blocks of a kernel fit on one SM of a device, limited by thread
    slots, block slots, shared memory and registers, and the occupancy. Give a
    kernel and --tile-width, or --threads and --shared for a kernel of your own
    (the book's 32 KB, 256-thread example: --threads 256 --shared 32768). --book
    redoes Section 5.6's arithmetic.

    Parameters
    ----------
    args : argparse.Namespace
        The parsed command line of ``vizmm occupancy``
        (``vizmm occupancy --help`` lists its options).
    """
    from . import occupancy
    from .analysis.occupancy import section_5_6

    if args.book:
        s = section_5_6()
        e = s.example
        print(
            f"164 KB / 2048 threads = {s.budget_per_thread:g} B/thread (book: 82)\n"
            f"tiled kernel: {s.tiled_per_thread:g} B/thread (book: 8)\n"
            f"32 KB / 256 threads = {s.example_per_thread:g} B/thread (book: 132)\n"
            f"164 KB / {s.example_per_thread:g} B = {s.example_threads_by_division:g} threads "
            "(book: 164 KB / 132 B = 1272)\n"
            f"whole blocks: {s.example_blocks_whole} x 256 threads = "
            f"{s.example_occupancy_whole:.1%} (book: 62%)\n"
            f"with the 1 KB reserved per block: {e.blocks_per_sm} blocks, "
            f"{e.threads_per_sm} threads, occupancy {e.occupancy:.0%}"
        )
        if args.tile_width is None and args.threads is None:
            return EXIT_OK
    raw = args.threads is not None or args.shared is not None
    o = occupancy(
        args.device,
        None if raw else (16 if args.tile_width is None else args.tile_width),
        args.kernel,
        args.threads,
        args.shared,
        args.registers,
    )
    print("\n".join(o.describe()))
    return EXIT_OK


# ------------------------------------------------------------- transactions
def _transactions_options(p: argparse.ArgumentParser) -> None:
    """The options of ``vizmm transactions``."""
    _trace_argument(p)
    _block_option(p, "one row per warp")
    p.add_argument("--phase", type=int, default=0, help="phase of the rows (default 0)")
    p.add_argument("--k", type=int, metavar="K", help="add each warp's n-way conflict at this k")
    p.add_argument(
        "--vector-loads",
        action="store_true",
        help="count the k loop's shared loads as compiled for sm_90 (128-bit loads of 4 k)",
    )


def cmd_transactions(args: argparse.Namespace) -> int:
    """Count the memory transactions of the tiles (sectors, banks).

    Count what each warp of the recorded blocks asks of memory: the 32-byte
    sectors and 128-byte segments of its tile loads, and the shared-memory banks
    of its Mds / Nds reads in the k loop (n-way conflicts). Prints the totals
    (sectors per request, bank conflicts per request, as Nsight Compute reports
    them) and, with --block, one row per warp.

    Parameters
    ----------
    args : argparse.Namespace
        The parsed command line of ``vizmm transactions``
        (``vizmm transactions --help`` lists its options).
    """
    from .analysis.transactions import TransactionsError, memory_transactions

    trace = _load(args.file)
    if args.block is not None:  # before any totals are printed
        _check_in_grid(trace, args.block)
    try:
        mt = memory_transactions(trace, vector_loads=args.vector_loads)
    except TransactionsError as exc:
        raise CLIError(str(exc)) from None
    print(mt.summary())
    if args.block is None:
        return EXIT_OK
    if not 0 <= args.phase < mt.n_phases:
        raise CLIError(f"--phase must be 0..{mt.n_phases - 1}, got {args.phase}")
    if args.k is not None and not 0 <= args.k < mt.tile_width:
        raise CLIError(f"--k must be 0..{mt.tile_width - 1}, got {args.k}")
    try:
        rows = mt.warp_rows(args.block, args.phase, args.k)
    except KeyError as exc:
        raise CLIError(str(exc).strip("'\"")) from None
    print(f"block ({args.block[0]},{args.block[1]}), phase {args.phase}"
          + (f", k = {args.k}" if args.k is not None else ""))  # fmt: skip
    for r in rows:
        line = (
            f"  warp {r['warp']:>2} (threads {r['threads'][0]}-{r['threads'][1]}): "
            f"M {r['m_sectors']} sectors {r['m_segments']} segments "
            f"(ideal {r['m_ideal_sectors']}), "
            f"N {r['n_sectors']} sectors {r['n_segments']} segments "
            f"(ideal {r['n_ideal_sectors']})"
        )
        if args.k is not None:
            line += f", Mds {r['mds_way']}-way, Nds {r['nds_way']}-way"
        print(line)
    return EXIT_OK


# --------------------------------------------------------------------- main
#: Every subcommand: its handler ``cmd_NAME`` and the function adding its options.
SUBCOMMANDS: list[tuple[Callable, Callable[[argparse.ArgumentParser], None]]] = [
    (cmd_record, _record_options),
    (cmd_check, _check_options),
    (cmd_info, _info_options),
    (cmd_table, _table_options),
    (cmd_export, _export_options),
    (cmd_occupancy, _occupancy_options),
    (cmd_transactions, _transactions_options),
    (cmd_serve, _serve_options),
    (cmd_doctor, _doctor_options),
    (cmd_grade, _grade_options),
]


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The ``vizmm`` argument parser with every subcommand of :data:`SUBCOMMANDS`.

    With ``command`` (a subcommand's name), only that subcommand is added:
    :func:`main` does so when the first argument names one, so that
    ``vizmm info`` imports nothing that the other subcommands need (the
    replay, the renderers, the exporters).

    Parameters
    ----------
    command : str, optional
        A subcommand's name: only that one is added; every one by default.
    """
    chosen = [c for c in SUBCOMMANDS if c[0].__name__ == f"cmd_{command}"] or SUBCOMMANDS
    parser = _Parser(
        prog="vizmm",
        description="See the tiled matrix multiplication of PMPP chapter 5 run: record what "
        "every thread did, then look at it.",
        epilog="Run 'vizmm COMMAND --help' for the options of each command.",
    )
    parser.add_argument("--version", action="version", version=f"vizmm {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for cmd, options in chosen:
        options(_subcommand(subparsers, cmd))
    return parser


def _one_line(exc: BaseException) -> str:
    if isinstance(exc, KeyError) and exc.args:
        msg = str(exc.args[0])
    elif isinstance(exc, OSError) and exc.strerror and exc.filename:
        named = str(exc.filename) in exc.strerror  # "cannot write F: ..." names it already
        msg = exc.strerror if named else f"{exc.filename}: {exc.strerror}"
    else:
        msg = str(exc) or type(exc).__name__
    return " ".join(msg.split())


def _silence_stdout() -> None:
    """Point stdout at the null device, so that Python's final flush does not fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):  # no file descriptor (captured output)
        pass


#: Options whose values may start with a minus sign (``--window -1,0``).
_PAIR_OPTIONS = ("--window", "--block", "--focus", "--shape", "--seed", "--phase")


def _join_negative_values(argv: Sequence[str] | None) -> list[str]:
    """``--window -1,0`` to ``--window=-1,0``, so that our own message answers it.

    argparse takes a value starting with ``-`` for an option and would answer
    "expected one argument".
    """
    args = list(sys.argv[1:] if argv is None else argv)
    out: list[str] = []
    i = 0
    while i < len(args):
        a = args[i]
        nxt = args[i + 1] if i + 1 < len(args) else None
        if a in _PAIR_OPTIONS and nxt is not None and re.match(r"^-\d", nxt):
            out.append(f"{a}={nxt}")
            i += 2
            continue
        out.append(a)
        i += 1
    return out


def _raise_terminated(signum, frame) -> None:
    """The SIGTERM handler of :func:`main`: raise :class:`Terminated` once.

    A second SIGTERM (cleanup taking too long) gets the default action and
    ends the process at once; temporary files it leaves are named for this
    process and removed by a later write (:mod:`vizmm.trace.destination`).
    """
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    raise Terminated(signum)


def _handle_sigterm():
    """Install :func:`_raise_terminated` for SIGTERM; return what to restore (None: nothing).

    Only in the main thread (Python's rule for signal handlers), and not
    where SIGTERM is ignored (the caller chose so, as ``nohup`` does for SIGHUP).
    """
    if threading.current_thread() is not threading.main_thread():
        return None
    try:
        previous = signal.getsignal(signal.SIGTERM)
        if previous == signal.SIG_IGN:
            return None
        signal.signal(signal.SIGTERM, _raise_terminated)
    except (ValueError, OSError):  # no signals here (an embedded interpreter)
        return None
    return (previous,)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``vizmm`` command line; return the exit code.

    While it runs (in the main thread), SIGTERM is handled like SIGINT: the
    work unwinds, temporary files are removed, a recording's worker process
    is stopped, and the exit code is 143 with ``vizmm: terminated`` on
    stderr. The previous SIGTERM handler is restored on return.

    Parameters
    ----------
    argv : sequence of str, optional
        The arguments after the program name; ``sys.argv[1:]`` by default.

    Returns
    -------
    int
        0 on success, 2 for bad input (one line on stderr), 1 when something
        else failed, 130 when interrupted (SIGINT), 143 when terminated (SIGTERM).
    """
    restore = _handle_sigterm()
    try:
        return _main(argv)
    except Terminated:  # arrived after _main's own handlers (while it returned)
        print("vizmm: terminated", file=sys.stderr)
        return EXIT_TERMINATED
    finally:
        if restore is not None:
            signal.signal(signal.SIGTERM, restore[0])


def _main(argv: Sequence[str] | None) -> int:
    try:
        argv = _join_negative_values(argv)
        args = build_parser(argv[0] if argv else None).parse_args(argv)
        return int(args.func(args))
    except SystemExit as exc:  # --help, --version
        if exc.code is None:
            return EXIT_OK
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    except BrokenPipeError as exc:
        if exc.filename is None:  # the reader went away, as with 'vizmm table ... | head'
            _silence_stdout()
            return EXIT_FAILURE
        # the reader of a FIFO given to -o went away: say so
        print(f"vizmm: error: {_one_line(exc)}", file=sys.stderr)
        return EXIT_USAGE
    except INPUT_ERRORS as exc:
        hint = ""
        if isinstance(exc, TraceOverLimitError):  # say how to raise the limit, here
            hint = f"; to read it, set VIZMM_MAX_TRACE_BYTES={exc.nbytes} (bytes)"
        print(f"vizmm: error: {_one_line(exc)}{hint}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("vizmm: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Terminated:
        print("vizmm: terminated", file=sys.stderr)
        return EXIT_TERMINATED
    except Exception as exc:  # noqa: BLE001 - the promise is: never a traceback
        print(f"vizmm: failed: {type(exc).__name__}: {_one_line(exc)}", file=sys.stderr)
        return EXIT_FAILURE


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
