"""The instrumenter: any ``@cuda.jit`` kernel rewritten to log what it does.

Given a kernel (the function, its Python source, or ``"file.py:name"``),
:func:`instrument` parses its source with :mod:`ast`, rewrites every load and
store of a global array argument and of every ``cuda.shared.array`` (the
dynamic ``cuda.shared.array(0, ...)`` of Fig. 5.14 and its sections
included), every ``cuda.syncthreads()`` (arrival and release) and the
kernel's end into calls of :mod:`.instrument_device`, and compiles the
result with this process's ``cuda`` (:mod:`vizmm_kernels._target`): the same
rewritten source runs on numba-cuda-mlir, numba-cuda and the simulator.

What the rewrite adds, per kernel:

* parameters after the kernel's own: ``_detail`` (the block's row in the
  log, -1 for a block not recorded in detail), the log ``_ev``, ``_vals``,
  ``_cnt``, ``_cap`` (events per thread), the barrier clocks ``_clk``, the
  block info ``_blk`` / ``_seq`` and one read counter per global array
  (``_reads_M`` ...);
* beside each shared array, a shadow ``int32`` array of the same size
  (``Mds__src``): the *tag* of each slot, the global element last copied
  into it (``src_idx * 8 + src_arr``) or :data:`TAG_ZERO` /
  :data:`TAG_COMPUTED`; stamped :data:`TAG_NEVER` and a barrier at the
  kernel's start. A shared load logs the tag it found, so every value a
  thread used is traced to the global element it came from, on the GPU
  as in the simulator;
* the block's logical clock ``_tick``, one ``int32`` in shared memory set
  to 0 before that barrier: each barrier arrival and release takes a
  ticket of it (a shared atomic, one per warp on a GPU: a global atomic's
  round trip at every barrier had tripled a full recording's time); in
  global memory (``_ticks``, one per detail block) for a kernel with an
  extern ``__shared__`` array, which numba-cuda-mlir 0.6 lays over its
  static shared arrays;
* for a 1-D index ``a*W + b`` (``W`` a scalar argument, or failing that a
  constant) the code's ``(row, col) = (a, b)`` is logged too: how Fig.
  5.11's row wrap (a wrong element) is found afterwards.

Bounds: when every loop is a ``range`` of constants and scalar arguments
the events per thread are bounded statically (:attr:`Instrumented.bound`);
otherwise a first "count" launch of the same kernel with ``cap = 0``
counts them. Either way the log is sized, and checked against the byte
limit, before it is allocated.

Only this layer imports numba; the log is interpreted with NumPy
(:mod:`vizmm.record.instrument_log`).
"""

from __future__ import annotations

import ast
import copy
import dataclasses
import inspect
import math
import textwrap
import time
from collections.abc import Mapping
from types import FunctionType

import numpy as np
from numpy.typing import DTypeLike

from ..trace import access_log as D
from .instrument_ast import (
    _CUDA_PLACEHOLDER,
    ArrayInfo,
    InstrumentError,
    _Bound,
    _Remap,
)
from .instrument_bound import _static_bound
from .instrument_lean import expand_lean_runs, lean_layout
from .instrument_rewrite import _Rewriter
from .instrument_run import (  # noqa: F401 - _records: the GPU scripts' and tests'
    EVENT_BYTES,
    RawLog,
    _records,
    decode,
    log_bytes,
    priority_stream,
    run,
)

__all__ = [
    "EVENT_BYTES",
    "ArrayInfo",
    "InstrumentError",
    "Instrumented",
    "RawLog",
    "decode",
    "expand_lean_runs",
    "instrument",
    "kernel_source",
    "lean_layout",
    "load_kernel",
    "log_bytes",
    "priority_stream",
    "python_function",
    "run",
]

_HELPERS = (
    "log_g",
    "log_s",
    "g_tag",
    "g_tag2",
    "s_tag",
    "s_tag2",
    "flat2",
    "g_load",
    "g_load2",
    "g_ok",
    "g_ok2",
    "g_store",
    "g_store2",
    "s_load",
    "s_load2",
    "s_store",
    "s_store2",
    "arrive",
    "release",
    "warp_mask",
    "lane_rank",
    "lanes",
    "from_leader",
    "block_start",
    "end",
    "zfill",
    "lg_load",
    "lg_load2",
    "lg_peek",
    "lg_peek2",
    "lg_peek_or",
    "lg_peek_or2",
    "lg_count",
    "lg_count2",
    "lg_run",
    "lg_run2",
    "cond_lo",
    "cond_hi",
    "whole",
    "lg_store",
    "lg_ok",
    "lg_ok2",
    "lg_store2",
    "ls_load",
    "ls_load2",
    "ls_store",
    "ls_store2",
    "lend",
)
#: Register caps on a GPU. The full variant keeps the log's state live (86 registers
#: a thread uncapped at TILE_WIDTH 32, too many for a block of 1024 threads): 64
#: lets 1024 threads launch. The lean variant: 32, the plain kernel's count (the
#: hand-instrumented kernels measured fastest there on an H200 at Width 4096).
MAX_REGISTERS = {"instrumented": 64, "lean": 32}


@dataclasses.dataclass(frozen=True)
class Instrumented:
    """A kernel rewritten to log its accesses, compiled for this process's target.

    Attributes
    ----------
    name : str
        The kernel function's name.
    source : str
        The kernel's source as written (dedented).
    code : str
        The rewritten source (readable Python; what is compiled).
    params : tuple of str
        The kernel's own parameters.
    global_arrays : tuple of str
        Parameters used as arrays, in parameter order.
    arrays : tuple of ArrayInfo
        Every array the log names, by id.
    accumulator : str or None
        The variable the kernel stores into its last global array (Pvalue):
        logged with every event.
    kernel : object
        The compiled dispatcher (``cuda.jit`` of the rewritten function).
    bound : callable or None
        ``bound(scalars, block=(1, 1, 1), grid=(1, 1, 1)) -> int``, an upper
        bound of the events per thread from the scalar arguments (a mapping
        of name to value) and the launch's ``blockDim`` and ``gridDim`` (x,
        y, z); None when a loop cannot be bounded statically (a count launch
        is needed).
    seconds : float
        How long the rewrite and the compile's first step took (s).
    lean_code : str
        The lean variant's source: the same kernel counting only (global
        reads, zero-fills, the blocks' SM and times), no log; what a GPU runs
        over the whole grid when recording aggregated.
    lean : object
        Its compiled dispatcher.
    barrier_bound : callable or None
        ``barrier_bound(scalars, block, grid) -> int``: barrier events
        (arrivals and releases) per thread; sizes the barrier clocks.
    copies : mapping of str to tuple of str
        Per shared array, the global arrays its stores copy from (from the
        source: how Mds and Nds are found when no block is logged).
    first_line : int
        The line of its file where :attr:`source` starts (1 for source
        text): the log's line numbers count within :attr:`source`, and
        ``line + first_line - 1`` is the file's line.
    lean_runs : tuple of str
        The global arrays whose reads the lean variant counts as runs at a
        loop's end (:mod:`.instrument_runs`): its records ``_mult_X`` (int32)
        and ``_code_X`` (int64), each of ``X``'s size, zeroed, lie in its two
        buffers (:mod:`.instrument_lean`); :func:`expand_lean_runs` adds them
        into the read counters after the launch.
    """

    name: str
    source: str
    code: str
    params: tuple
    global_arrays: tuple
    arrays: tuple
    accumulator: str | None
    kernel: object
    bound: _Bound | None
    dynamic_shared: int
    after_reads: Mapping[int, bool]
    seconds: float
    lean_code: str = ""
    lean: object = None
    barrier_bound: _Bound | None = None
    copies: Mapping[str, tuple] = dataclasses.field(default_factory=dict)
    first_line: int = 1
    lean_runs: tuple = ()

    def array_id(self, name: str) -> int:
        """The log's id of array ``name``.

        Parameters
        ----------
        name : str
            The kernel's name for the array (``M``, ``Mds`` ...).

        Returns
        -------
        int
            Its index in :attr:`arrays` (the ``arr`` field of its events).

        Raises
        ------
        KeyError
            When the kernel has no such array.
        """
        for i, a in enumerate(self.arrays):
            if a.name == name:
                return i
        raise KeyError(name)


# ---------------------------------------------------------------- source
def load_kernel(spec: str, constants: Mapping | None = None):
    """The kernel named by ``"file.py:name"``, read from its file (never run).

    The file is data: :func:`vizmm.record.frontend.read_kernel` parses it,
    keeps the kernel, its device functions and the module's constants,
    checks it against the CUDA Python subset and normalises it; nothing of
    the file's module is imported or executed.

    Parameters
    ----------
    spec : str
        ``FILE.py:NAME``: a Python file (path as given, relative to the
        working directory or absolute) and the name of a ``@cuda.jit``
        kernel defined there.
    constants : mapping, optional
        Module constants overridden before the kernel is checked (a grading
        case's TILE_WIDTH).

    Returns
    -------
    vizmm.record.frontend.KernelSource
        The checked, normalised kernel (what :func:`instrument` compiles).

    Raises
    ------
    InstrumentError
        When the text is not ``FILE.py:NAME``, the file cannot be read or
        parsed, has no such kernel, or the kernel is outside the subset (the
        message names the file's line).
    """
    from .frontend import KernelRejected, read_kernel

    path, sep, name = spec.rpartition(":")
    if not sep or not path.endswith(".py") or not name.isidentifier():
        raise InstrumentError(
            f"a kernel file is given as FILE.py:NAME (a Python file and the kernel's name), "
            f"got {spec!r}"
        )
    try:
        return read_kernel(path, name, constants)
    except KernelRejected as exc:
        raise InstrumentError(str(exc)) from None


def _read(text: str, constants: Mapping | None = None):
    """A kernel given as text or ``"file.py:name"``, read by the front end (never run)."""
    from .frontend import KernelRejected, read_source

    if "def " not in text:
        return load_kernel(text, constants)
    try:
        return read_source(textwrap.dedent(text), None, constants=constants, lenient=True)
    except KernelRejected as exc:
        raise InstrumentError(str(exc)) from None


def python_function(obj) -> FunctionType | None:
    """The Python function behind a kernel object, or None.

    What :func:`load_kernel` returns is a ``@cuda.jit`` kernel: a numba
    dispatcher on a GPU (its ``py_func``), a simulator kernel in Numba's
    CUDA simulator (its ``fn``); a plain function is its own. Grading
    (``vizmm.grade``) reads a submission's signature and sets its
    TILE_WIDTH constant through this function's ``__globals__``.

    Parameters
    ----------
    obj : object
        A kernel (numba dispatcher or simulator kernel), a plain function,
        or anything else.

    Returns
    -------
    function or None
        The Python function the kernel was compiled from; None when ``obj``
        is neither a kernel nor a function.
    """
    for attr in ("py_func", "fn"):
        fn = getattr(obj, attr, None)
        if inspect.isfunction(fn):
            return fn
    return obj if inspect.isfunction(obj) else None


def _is_cuda_kernel(obj) -> bool:
    if inspect.isfunction(obj):
        return False
    mod = type(obj).__module__ or ""
    return ("numba" in mod or "cuda" in mod) and python_function(obj) is not None


def kernel_source(
    kernel, constants: Mapping | None = None, simt: bool = False
) -> tuple[ast.FunctionDef, str, dict, int]:
    """``(FunctionDef, dedented source, namespace, first line)`` of a kernel.

    A file (``"file.py:name"``), source text or a
    :class:`~vizmm.record.frontend.KernelSource` is read by the front end
    (:mod:`vizmm.record.frontend`: parsed, checked against the CUDA Python
    subset, normalised, never run) and its namespace is built by vizmm. A
    function (the book's kernels, a notebook's) gives its module globals and
    closure. The first line is where the source starts in its file (its
    first decorator; 1 for source text), so that a line of the source is
    named as the person's editor numbers it.

    Parameters
    ----------
    kernel : numba CUDA kernel, function, str or KernelSource
        A ``@cuda.jit`` kernel (its dispatcher or Python function), the
        source text of one (a string containing ``def``), ``"file.py:name"``
        (:func:`load_kernel`) or what the front end read.
    constants : mapping, optional
        Constants that override the file's or text's (read before checking).
    simt : bool
        For vizmm's simulator: a file's or text's namespace is its constants
        and NumPy's types (no compiler imported, no device function compiled).

    Raises
    ------
    InstrumentError
        When ``kernel`` is not a ``@cuda.jit`` kernel (nor a function or
        source text of one), or its source cannot be read, parsed or is
        outside the subset.
    """
    from .frontend import KernelRejected, KernelSource, read_source

    if isinstance(kernel, str):
        if "def " in kernel:  # source text
            try:
                kernel = read_source(
                    textwrap.dedent(kernel), None, constants=constants, lenient=True
                )
            except KernelRejected as exc:
                raise InstrumentError(str(exc)) from None
        else:
            kernel = load_kernel(kernel, constants)
    if isinstance(kernel, KernelSource):
        return _read_kernel_source(kernel, constants, simt)
    return _function_source(kernel)


def _read_kernel_source(kernel, constants: Mapping | None, simt: bool):
    """:func:`kernel_source` of what the front end read: its tree and a namespace vizmm builds."""
    if not simt:  # (vizmm's simulator imports no compiler: _target only when needed)
        from vizmm_kernels import _target

        simt = _target.NAME == _target.NONE  # no compiler here: nothing of numba to bind
    if simt:
        from .simt import TYPES

        ns = {"cuda": _CUDA_PLACEHOLDER, "math": math, **TYPES}
        ns.update({alias: TYPES[t] for alias, t in kernel.types.items() if t in TYPES})
        ns.update(kernel.constants)
        ns.update(dict(constants or {}))
        ns.update({f.name: _CUDA_PLACEHOLDER for f in kernel.device_functions})
    else:
        from vizmm_kernels import _target

        try:
            ns = kernel.namespace(_target, constants)
        except Exception as exc:  # noqa: BLE001 - a device function the compiler refuses
            raise InstrumentError(
                f"{kernel.path}: a device function of kernel {kernel.name} does not compile: "
                + " ".join(str(exc).split())[:200]
            ) from None
    if (kernel.tree.end_lineno or 0) > D.MAX_LINE:
        raise InstrumentError(
            f"the kernel ends on line {kernel.tree.end_lineno}; the access log names lines "
            f"up to {D.MAX_LINE}"
        )
    return copy.deepcopy(kernel.tree), textwrap.dedent(kernel.source), ns, kernel.first_line


def _function_source(kernel):
    """:func:`kernel_source` of a Python function: its source, module globals and closure."""
    fn = python_function(kernel)
    if fn is None:
        raise InstrumentError(
            f"not a CUDA kernel: {type(kernel).__name__} {kernel!r:.60}; give a @cuda.jit "
            "function, its source text or 'file.py:name'"
        )
    try:
        lines, first = inspect.getsourcelines(fn)
        text = textwrap.dedent("".join(lines))
    except (OSError, TypeError) as exc:
        raise InstrumentError(
            f"the source of kernel {fn.__name__!r} cannot be read: {exc}"
        ) from None
    tree = _parse(text, fn.__code__.co_filename)
    # a plain function is accepted only when its source says @cuda.jit
    if not _is_cuda_kernel(kernel) and not any(
        "jit" in ast.unparse(d) for d in tree.decorator_list
    ):
        raise InstrumentError(
            f"not a CUDA kernel: {fn.__name__!r} is a plain Python function (no @cuda.jit)"
        )
    namespace = dict(fn.__globals__)
    if fn.__closure__:
        for name, cell in zip(fn.__code__.co_freevars, fn.__closure__, strict=True):
            try:
                namespace[name] = cell.cell_contents
            except ValueError:  # an empty cell
                pass
    return tree, text, namespace, max(1, int(first))


def _parse(text: str, filename: str) -> ast.FunctionDef:
    try:
        module = ast.parse(text, filename=filename)
    except SyntaxError as exc:
        raise InstrumentError(f"line {exc.lineno}: syntax error: {exc.msg}") from None
    for node in module.body:
        if isinstance(node, ast.FunctionDef):
            if (node.end_lineno or 0) > D.MAX_LINE:
                raise InstrumentError(
                    f"the kernel ends on line {node.end_lineno}; the access log names lines up "
                    f"to {D.MAX_LINE}"
                )
            return node
    raise InstrumentError("no function definition found in the kernel's source")


# --------------------------------------------------------------- compile
_CACHE: dict = {}


def instrument(
    kernel,
    *,
    constants: Mapping | None = None,
    dynamic_shared: int = 0,
    dtypes: Mapping[str, DTypeLike] | None = None,
    shared_loads: bool = True,
    terms: bool = False,
    first_arrays: int = 0,
    engine: str = "process",
) -> Instrumented:
    """Rewrite ``kernel`` to log every access (see the module docstring) and compile it.

    Parameters
    ----------
    kernel : numba CUDA kernel, function, source text or ``"file.py:name"``
        A ``@cuda.jit`` kernel. Its closure and module globals give the
        constants (``TILE_WIDTH``, the barrier lab's flags).
    constants : mapping, optional
        Names to add to (or override in) the kernel's namespace; source text
        gets ``cuda``, ``float32``, ``int32`` and these.
    dynamic_shared : int
        Bytes of dynamic shared memory of the launch (the extern array of
        Fig. 5.14); sizes its shadow.
    dtypes : mapping, optional
        NumPy dtype of each global array argument (default float32): the
        zero an out-of-bounds load returns.
    shared_loads : bool
        Log the loads of shared arrays (each value a thread used, traced to
        its global element by the slot's tag). Off, a shared load is the
        kernel's own line: the simulator runs the book's k loop at the plain
        kernel's speed, and only the copies into shared memory, the barriers,
        the global accesses and the end are logged.
    terms : bool
        Provenance for :func:`vizmm.check`: every local carries the tag of the
        global element its value is a copy of, a shared store the tag of its
        value, each product accumulated is a TERM event (its two factors'
        tags) and each accumulator's value moved into another or into an
        array element a MOVE event (:data:`~.instrument_device.TERM`). Off
        (the book's recordings), the log is as before.
    first_arrays : int
        The first parameters that are arrays whether or not the kernel
        indexes them (3 for a matmul kernel's M, N and P), given flat when
        never indexed.
    engine : {'process', 'simt'}
        Compile for this process's target (a GPU compiler or Numba's
        simulator; vizmm's simulator where the process has no compiler), or
        for vizmm's own simulator (:mod:`.simt`: NumPy lanes, no numba
        imported).

    Returns
    -------
    Instrumented
        Cached per (function, constants, dynamic_shared, dtypes).

    Raises
    ------
    InstrumentError
        For an object that is not a CUDA kernel, a syntax error, or a form
        the instrumenter does not take (the message names the line).
    """
    t0 = time.perf_counter()
    if engine == "process":
        from vizmm_kernels import _target

        if _target.NAME == _target.NONE:  # no compiler here: vizmm's simulator runs it
            engine = "simt"
    simt = engine == "simt"
    if simt and isinstance(kernel, str):
        kernel = _read(kernel, constants)
    tree, text, namespace, first_line = kernel_source(kernel, constants, simt=simt)
    if simt:
        from .simt import TYPES

        target_name = "vizmm-simulator"
        base = {"cuda": _CUDA_PLACEHOLDER, **TYPES, "math": math}
        ns = {**base, **namespace, **dict(constants or {})}
        for k, v in list(ns.items()):  # a book kernel's module: numba's types, as NumPy's
            if type(v).__module__.partition(".")[0] in ("numba", "numba_cuda_mlir"):
                ns[k] = TYPES.get(str(v), _CUDA_PLACEHOLDER)
    else:
        from vizmm_kernels import _target

        target_name = _target.NAME
        base = {"cuda": _target.cuda, "float32": _target.float32, "int32": _target.int32,
                "math": math}  # fmt: skip
        ns = {**base, **namespace, **dict(constants or {})}
        ns["cuda"] = namespace.get("cuda", _target.cuda)
    key_consts = tuple(
        sorted(
            (k, v)
            for k, v in ns.items()
            if isinstance(v, (int, float, bool, np.integer)) and not k.startswith("__")
        )
    )
    key = (
        bool(shared_loads),
        bool(terms),
        int(first_arrays),
        text,
        ast.unparse(tree),  # the normalised kernel (its inlined device functions)
        tuple(
            sorted(
                (k, v.__name__)
                for k, v in namespace.items()
                if hasattr(v, "py_func") and k[0] != "_"
            )
        ),
        key_consts,
        int(dynamic_shared),
        tuple(sorted((dtypes or {}).items())),
        target_name,
        first_line,
    )
    hit = _CACHE.get(key)
    if hit is not None:
        return hit
    simulated = simt or target_name == "numba-cuda-simulator"
    device_functions = (
        kernel.device_functions if simt and hasattr(kernel, "device_functions") else ()
    )
    try:
        return _instrument(tree, text, ns, first_line, key, kernel, shared_loads, dynamic_shared,
                           dtypes, terms, first_arrays, simulated, t0,
                           device_functions if simt else None)  # fmt: skip
    except InstrumentError as exc:  # a line of the kernel's source, told as its file numbers it
        raise InstrumentError(_file_line(str(exc), kernel, first_line)) from None


def _file_line(message: str, kernel, first_line: int) -> str:
    """``line n: ...`` of a rewrite's refusal, as the kernel's file numbers the line."""
    import re

    from .frontend import KernelSource

    path = kernel.path if isinstance(kernel, KernelSource) else None
    if isinstance(kernel, str) and ".py:" in kernel and "def " not in kernel:
        path = kernel.rpartition(":")[0]
    got = re.match(r"line (\d+): (.*)", message, re.S)
    if got is None or path is None:
        return message
    return f"{path}, line {int(got.group(1)) + first_line - 1}: {got.group(2)}"


def _instrument(
    tree, text, ns, first_line, key, kernel, shared_loads, dynamic_shared, dtypes, terms,
    first_arrays, simulated, t0, simt_device=None,
) -> Instrumented:  # fmt: skip
    """The rewrite and compile of :func:`instrument` (its refusals count lines in the source).

    ``simt_device``: None compiles for this process's target; a tuple (the
    device functions the front end kept) compiles for vizmm's simulator.
    """
    rw = _Rewriter(
        _Remap().visit(copy.deepcopy(tree)),
        ns,
        int(dynamic_shared),
        bool(shared_loads),
        simulated=simulated,
        terms=terms,
        first_arrays=first_arrays,
    )
    code = ast.unparse(rw.rewrite()) + "\n"

    lean_rw = _Rewriter(
        copy.deepcopy(tree),
        ns,
        int(dynamic_shared),
        bool(shared_loads),
        lean=True,
        first_arrays=first_arrays,
    )
    lean_code = ast.unparse(lean_rw.rewrite()) + "\n"

    def compiled(text, label):
        if simt_device is not None:
            if label == "lean":  # the simulator counts every block with the full variant
                return None
            from .simt_compile import SimtUnsupported, compile_kernel

            env = dict(ns)
            env["_NARR"] = len(rw.arrays)
            for g in rw.globals:
                env[f"_ZERO_{g}"] = np.dtype((dtypes or {}).get(g, np.float32)).type(0)
            try:
                return compile_kernel(text, env, tree.name, tuple(simt_device))
            except SimtUnsupported as exc:
                raise InstrumentError(f"vizmm's simulator cannot run this kernel: {exc}") from None
        from vizmm_kernels import _target

        filename = f"<vizmm {label} {tree.name}>"
        env = dict(ns)
        from . import instrument_device as helpers  # binds this process's target (numba)
        from . import instrument_device_runs as runs

        env.update({h: getattr(helpers, h, None) or getattr(runs, h) for h in _HELPERS})
        if simulated:
            env["sync"] = helpers.sync
        env["_NARR"] = len(rw.arrays)
        for g in rw.globals:
            env[f"_ZERO_{g}"] = np.dtype((dtypes or {}).get(g, np.float32)).type(0)
        import linecache

        linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)
        try:
            exec(compile(text, filename, "exec"), env)
        except SyntaxError as exc:  # pragma: no cover - the rewrite writes valid Python
            raise InstrumentError(f"the rewritten kernel does not parse: {exc}") from None
        if _target.NAME == _target.SIMULATOR:
            return _target.cuda.jit(env[tree.name])
        return _target.cuda.jit(max_registers=MAX_REGISTERS[label])(env[tree.name])

    kern = compiled(code, "instrumented")
    lean = compiled(lean_code, "lean")
    out = Instrumented(
        name=tree.name,
        source=text,
        code=code,
        params=tuple(rw.params),
        global_arrays=tuple(rw.globals),
        arrays=tuple(rw.arrays),
        accumulator=rw.acc,
        kernel=kern,
        bound=_static_bound(tree, rw),
        dynamic_shared=int(dynamic_shared),
        after_reads=dict(rw.after_reads),
        seconds=time.perf_counter() - t0,
        lean_code=lean_code,
        lean=lean,
        barrier_bound=_static_bound(tree, rw, barriers_only=True),
        copies={k: tuple(sorted(v)) for k, v in rw.copies.items()},
        first_line=first_line,
        lean_runs=tuple(lean_rw.run_arrays),
    )
    _CACHE[key] = out
    return out
