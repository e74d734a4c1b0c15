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
import functools
import inspect
import itertools
import math
import sys
import textwrap
import time
from collections.abc import Callable, Mapping
from types import CodeType, FunctionType
from typing import Any, Protocol, TypeGuard, cast

import numpy as np
from numpy.typing import DTypeLike

from ..trace import access_log as D

__all__ = [
    "InstrumentError",
    "Instrumented",
    "instrument",
    "kernel_source",
    "load_kernel",
    "python_function",
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
    "lg_store",
    "lg_store2",
    "ls_load",
    "ls_load2",
    "ls_store",
    "ls_store2",
    "lend",
)
#: What names ``cuda`` (and a kept device function) while vizmm's simulator rewrites a kernel.
_CUDA_PLACEHOLDER = type("SimulatedName", (), {"__repr__": lambda self: "<simulated>"})()

#: Arguments every logging call ends with (the log and the thread's state).
_LOG = "_ev, _vals, _cnt, _cap, _t, _ep"


#: Register caps on a GPU. The full variant keeps the log's state live (86 registers
#: a thread uncapped at TILE_WIDTH 32, too many for a block of 1024 threads): 64
#: lets 1024 threads launch. The lean variant: 32, the plain kernel's count (the
#: hand-instrumented kernels measured fastest there on an H200 at Width 4096).
MAX_REGISTERS = {"instrumented": 64, "lean": 32}


#: Events per thread of a piece of a kernel, from the namespace a launch gives its names.
_Events = Callable[[dict[str, Any]], int]


class _Bound(Protocol):
    """``bound(scalars, block, grid) -> int``: events per thread (:attr:`Instrumented.bound`)."""

    def __call__(
        self,
        scalars: Mapping[str, object],
        block: tuple[int, ...] = ...,
        grid: tuple[int, ...] = ...,
    ) -> int: ...


class InstrumentError(ValueError):
    """A kernel the instrumenter cannot take; the message says what and what is allowed."""


@dataclasses.dataclass(frozen=True)
class ArrayInfo:
    """One array the log names (its id is its index in :attr:`Instrumented.arrays`).

    Attributes
    ----------
    name : str
        The kernel's name for it (``M``, ``Mds`` ...).
    space : {'global', 'shared'}
    ndim : int or None
        1 or 2 where known from the source (shared arrays; global ones: from
        their subscripts).
    base : str or None
        For a section of the dynamic shared array (``Mds = Mds_Nds[a:b]``),
        the extern array's name.
    """

    name: str
    space: str
    ndim: int | None
    base: str | None = None


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
    if isinstance(kernel, KernelSource) and not simt:
        from vizmm_kernels import _target

        simt = _target.NAME == _target.NONE  # no compiler here: nothing of numba to bind
    if isinstance(kernel, KernelSource) and simt:
        from .simt import TYPES

        ns = {"cuda": _CUDA_PLACEHOLDER, "math": math, **TYPES}
        ns.update({alias: TYPES[t] for alias, t in kernel.types.items() if t in TYPES})
        ns.update(kernel.constants)
        ns.update(dict(constants or {}))
        ns.update({f.name: _CUDA_PLACEHOLDER for f in kernel.device_functions})
    elif isinstance(kernel, KernelSource):
        from vizmm_kernels import _target

        try:
            ns = kernel.namespace(_target, constants)
        except Exception as exc:  # noqa: BLE001 - a device function the compiler refuses
            raise InstrumentError(
                f"{kernel.path}: a device function of kernel {kernel.name} does not compile: "
                + " ".join(str(exc).split())[:200]
            ) from None
    if isinstance(kernel, KernelSource):
        if (kernel.tree.end_lineno or 0) > D.MAX_LINE:
            raise InstrumentError(
                f"the kernel ends on line {kernel.tree.end_lineno}; the access log names lines "
                f"up to {D.MAX_LINE}"
            )
        return copy.deepcopy(kernel.tree), textwrap.dedent(kernel.source), ns, kernel.first_line
    fn = python_function(kernel)
    if fn is None:
        raise InstrumentError(
            f"not a CUDA kernel: {type(kernel).__name__} {kernel!r:.60}; give a @cuda.jit "
            "function, its source text or 'file.py:name'"
        )
    if not _is_cuda_kernel(kernel) and inspect.isfunction(kernel):
        # a plain function: accepted only when its source says @cuda.jit
        pass
    try:
        lines, first = inspect.getsourcelines(fn)
        text = textwrap.dedent("".join(lines))
    except (OSError, TypeError) as exc:
        raise InstrumentError(
            f"the source of kernel {fn.__name__!r} cannot be read: {exc}"
        ) from None
    tree = _parse(text, fn.__code__.co_filename)
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


def _is_zero(node: ast.expr, ns: Mapping) -> bool:
    """Whether a shared array's shape is the constant 0 (an extern array), literal or named."""
    if isinstance(node, ast.Constant):
        return node.value == 0
    return isinstance(node, ast.Name) and ns.get(node.id) == 0


def _live_barrier(stmts: list[ast.stmt], ns: Mapping) -> bool:
    """Whether ``stmts`` keep a ``cuda.syncthreads()`` (none under an ``if`` on a false constant).

    The barrier lab turns a barrier off with ``if BARRIER_1:`` on a constant.
    """
    for st in stmts:
        if isinstance(st, ast.Expr) and _is_call_to(st.value, "syncthreads"):
            return True
        if isinstance(st, ast.If):
            t = st.test
            value: object = None
            if isinstance(t, ast.Constant):
                value = t.value
            elif isinstance(t, ast.Name) and isinstance(ns.get(t.id), (bool, int)):
                value = ns[t.id]
            if value is not None:
                if _live_barrier(st.body if value else st.orelse, ns):
                    return True
            elif _live_barrier(st.body, ns) or _live_barrier(st.orelse, ns):
                return True
        elif isinstance(st, (ast.For, ast.While)):
            if _live_barrier(st.body, ns) or _live_barrier(st.orelse, ns):
                return True
    return False


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


# --------------------------------------------------------------- rewrite
def _is_call_to(node: object, dotted: str) -> TypeGuard[ast.Call]:
    return isinstance(node, ast.Call) and ast.unparse(node.func).endswith(dotted)


def _name(node) -> str | None:
    return node.id if isinstance(node, ast.Name) else None


def _expr(text: str) -> ast.expr:
    return ast.parse(text, mode="eval").body


def _stmts(text: str) -> list[ast.stmt]:
    return ast.parse(textwrap.dedent(text)).body


def _has_array_access(node, arrays) -> bool:
    return any(isinstance(n, ast.Subscript) and _name(n.value) in arrays for n in ast.walk(node))


def _add_terms(node) -> list[ast.expr]:
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _add_terms(node.left) + _add_terms(node.right)
    return [node]


def _split_index(node, scalars, constants) -> tuple[str, str] | None:
    """``(row, col)`` source of a 1-D index ``a*W + b`` (``W`` a scalar argument or constant)."""
    terms = _add_terms(node)
    for pool in (scalars, constants):
        found = []
        for i, term in enumerate(terms):
            if isinstance(term, ast.BinOp) and isinstance(term.op, ast.Mult):
                sides = [(term.left, term.right), (term.right, term.left)]
                for w, a in sides:
                    if _name(w) in pool:
                        found.append((i, a))
        if len(found) == 1:
            i, a = found[0]
            rest = [t for j, t in enumerate(terms) if j != i]
            col = " + ".join(ast.unparse(t) for t in rest) if rest else "0"
            return ast.unparse(a), col
        if found:
            return None
    return None


class _Remap(ast.NodeTransformer):
    """The full variant reads its block from ``_bx``, ``_by``, its grid from ``_gdx``, ``_gdy``.

    ``cuda.blockIdx`` / ``cuda.gridDim`` / ``cuda.grid`` are read
    from the block the thread plays (``_bx``, ``_by``) and the launch's grid (``_gdx``,
    ``_gdy``), so that the detail blocks can run again by themselves.
    """

    _NAMES = {
        "blockIdx.x": "_bx",
        "blockIdx.y": "_by",
        "gridDim.x": "_gdx",
        "gridDim.y": "_gdy",
    }

    def visit_Attribute(self, node):
        text = ast.unparse(node)
        for key, name in self._NAMES.items():
            if text == f"cuda.{key}":
                return ast.copy_location(ast.Name(id=name, ctx=ast.Load()), node)
        return self.generic_visit(node)

    def visit_Call(self, node):
        if _is_call_to(node, "cuda.grid") and len(node.args) == 1:
            arg = node.args[0]
            n = arg.value if isinstance(arg, ast.Constant) else None
            x = "(_bx * cuda.blockDim.x + cuda.threadIdx.x)"
            y = "(_by * cuda.blockDim.y + cuda.threadIdx.y)"
            if n == 1:
                return ast.copy_location(_expr(x), node)
            if n == 2:
                return ast.copy_location(_expr(f"({x}, {y})"), node)
        return self.generic_visit(node)


_CASTS = ("float32", "float64", "float", "int32", "int64", "int")


def _atomic(node) -> bool:
    return isinstance(node, ast.Call) and ast.unparse(node.func).startswith("cuda.atomic.")


def _uncast(node):
    while (
        isinstance(node, ast.Call)
        and _name(node.func) in _CASTS
        and len(node.args) == 1
        and not node.keywords
    ):
        node = node.args[0]
    return node


def _roles(fn: ast.FunctionDef, params: set) -> tuple[set, list]:
    """``(tagged, accumulators)``: the locals that carry a tag, those that sum products."""
    tagged: set = set()
    accs: list = []
    for n in ast.walk(fn):
        if isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name):
            x = n.targets[0].id
            if (
                x in params
                or _is_call_to(n.value, "shared.array")
                or _is_call_to(n.value, "local.array")
            ):
                continue
            tagged.add(x)
            v = n.value
            summed = (
                isinstance(v, ast.BinOp)
                and isinstance(v.op, ast.Add)
                and x in {_name(t) for t in _add_terms(v)}
            )
            fma = _is_call_to(v, "cuda.fma") and len(v.args) == 3 and _name(v.args[2]) == x
            if (summed or fma) and x not in accs:
                accs.append(x)
        elif (
            isinstance(n, ast.AugAssign)
            and isinstance(n.target, ast.Name)
            and isinstance(n.op, (ast.Add, ast.Sub))
            and n.target.id not in params
        ):
            tagged.add(n.target.id)
            if n.target.id not in accs:
                accs.append(n.target.id)
    return tagged, accs


def _sum(terms: list) -> ast.expr:
    out = terms[0]
    for t in terms[1:]:
        out = ast.BinOp(left=out, op=ast.Add(), right=t)
    return out


def _products(node) -> list | None:
    """The ``(X, Y)`` factors of a sum of products (casts aside); None when a term is not one."""
    out = []
    for t in _add_terms(_uncast(node)):
        t = _uncast(t)
        if isinstance(t, ast.BinOp) and isinstance(t.op, ast.Mult):
            out.append((_uncast(t.left), _uncast(t.right)))
        else:
            return None
    return out


class _Rewriter:
    """Rewrites one kernel's body (see the module docstring)."""

    def __init__(
        self,
        fn: ast.FunctionDef,
        namespace: dict,
        dynamic_shared: int,
        shared_loads=True,
        lean=False,
        simulated=False,
        terms=False,
        first_arrays=0,
    ):
        self.fn = fn
        self.lean = lean
        # provenance (vizmm.check): each local carries the tag of the element it came from,
        # and every product accumulated is a TERM event with its two factors' tags
        self.terms = bool(terms) and not lean
        self.simulated = simulated
        self.shared_loads = shared_loads
        self.ns = namespace
        self.params = [a.arg for a in fn.args.args]
        subscripted = {
            _name(n.value)
            for n in ast.walk(fn)
            if isinstance(n, ast.Subscript) and _name(n.value) is not None
        }
        atomics = {  # arrays only an atomic touches (split-k into P): name -> its index
            _name(n.args[0]): n.args[1]
            for n in ast.walk(fn)
            if isinstance(n, ast.Call)
            and _atomic(n)
            and len(n.args) >= 2
            and _name(n.args[0]) is not None
        }
        subscripted |= set(atomics)
        # a matmul kernel's M, N and P are arrays even where the kernel never indexes one
        # (a kernel that reads nothing, or never stores P): its log names them all
        unindexed = set(self.params[:first_arrays]) - subscripted
        subscripted |= unindexed
        self.globals = [p for p in self.params if p in subscripted]
        self.scalars = [p for p in self.params if p not in subscripted]
        self.constants = {
            k
            for k, v in namespace.items()
            if isinstance(v, (int, np.integer)) and not isinstance(v, bool)
        }
        self.arrays: list[ArrayInfo] = []
        self.ids: dict[str, int] = {}
        for g in self.globals:
            ndims = {
                len(n.slice.elts) if isinstance(n.slice, ast.Tuple) else 1
                for n in ast.walk(fn)
                if isinstance(n, ast.Subscript) and _name(n.value) == g
            }
            if g in atomics:
                index = atomics[g]
                ndims.add(len(index.elts) if isinstance(index, ast.Tuple) else 1)
            if g in unindexed:
                ndims = {1}
            if len(ndims) != 1 or next(iter(ndims)) > 2:
                raise InstrumentError(
                    f"array {g!r} is indexed with {sorted(ndims)} subscripts; the instrumenter "
                    "takes 1-D (M[i]) and 2-D (M[r, c]) arrays, each always the same way"
                )
            self._add(ArrayInfo(g, "global", next(iter(ndims))))
        if len(self.globals) > D.TAG_ARRAYS:
            raise InstrumentError(f"at most {D.TAG_ARRAYS} global array arguments can be traced")
        self.dynamic_shared = dynamic_shared
        self.shared: dict[str, dict] = {}  # name -> {size, ndim, shadow, off}
        self.acc = self._accumulator()
        self.acc_ready = False
        self.tmp = itertools.count()
        self.read_seen = False  # a shared load earlier in this loop iteration
        self.after_reads: dict[int, bool] = {}
        self.copies: dict[str, set] = {}  # shared array -> the global arrays copied into it
        self.barriers = False  # a cuda.syncthreads() logged: the block's clock is kept
        # an extern __shared__ array (Fig. 5.14), known before any barrier is rewritten
        self.extern_shared = any(
            _is_call_to(n, "shared.array") and bool(n.args) and _is_zero(n.args[0], namespace)
            for n in ast.walk(fn)
        )
        # numba-cuda-mlir 0.6 demotes an extern __shared__ array to a static one that
        # may overlap another static array: a kernel with one keeps its clock in global
        # memory (one int32 per detail block, _ticks[_slot]). In the simulator the host
        # makes each detail block's counter (instrument_device.sync): no shared clock.
        self.global_clock = self.extern_shared or simulated
        self.tagged, self.accs = _roles(fn, set(self.params)) if self.terms else (set(), [])

    def _add(self, info: ArrayInfo) -> int:
        if len(self.arrays) >= D.MAX_ARRAYS:
            raise InstrumentError(
                f"the kernel uses more than {D.MAX_ARRAYS} arrays; the access log names at most "
                f"{D.MAX_ARRAYS}"
            )
        self.ids[info.name] = len(self.arrays)
        self.arrays.append(info)
        return self.ids[info.name]

    def _accumulator(self) -> str | None:
        out = None
        for n in ast.walk(self.fn):
            if (
                isinstance(n, ast.Assign)
                and len(n.targets) == 1
                and isinstance(n.targets[0], ast.Subscript)
                and _name(n.targets[0].value) in self.globals
                and isinstance(n.value, ast.Name)
            ):
                out = n.value.id
        return out

    # ------------------------------------------------------------ shared
    def _shared_decl(self, stmt) -> list[ast.stmt] | None:
        """A ``cuda.shared.array`` declaration or a section of the dynamic one, with its shadow."""
        if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1):
            return None
        target = _name(stmt.targets[0])
        value = stmt.value
        if target and _is_call_to(value, "shared.array"):
            if not value.args:
                raise InstrumentError(
                    f"line {stmt.lineno}: shared array {target!r} has no shape; declare it as "
                    "cuda.shared.array(shape, dtype)"
                )
            shape_node = value.args[0]
            dtype = ast.unparse(value.args[1]) if len(value.args) > 1 else "float32"
            try:
                shape = eval(compile(ast.Expression(shape_node), "<shape>", "eval"), dict(self.ns))
            except Exception:
                raise InstrumentError(
                    f"line {stmt.lineno}: the shape of shared array {target!r} "
                    f"({ast.unparse(shape_node)}) must be a constant (a closure or global int)"
                ) from None
            shape = tuple(shape) if isinstance(shape, (tuple, list)) else (int(shape),)
            if shape == (0,):  # extern __shared__ (Fig. 5.14): sized by the launch
                self.extern_shared = True
                item = _np_dtype(dtype, self.ns).itemsize
                if self.dynamic_shared <= 0:
                    raise InstrumentError(
                        f"line {stmt.lineno}: {target!r} is a dynamic shared array "
                        "(cuda.shared.array(0, ...)); give the launch's dynamic shared memory "
                        "in bytes (dynamic_shared=...)"
                    )
                size, ndim = self.dynamic_shared // item, 1
            else:
                if len(shape) > 2:
                    raise InstrumentError(
                        f"line {stmt.lineno}: shared array {target!r} has {len(shape)} "
                        "dimensions; the instrumenter takes 1-D and 2-D shared arrays"
                    )
                size, ndim = math.prod(shape), len(shape)
            self._add(ArrayInfo(target, "shared", ndim))
            shadow = f"{target}__src"
            self.shared[target] = dict(size=size, ndim=ndim, shadow=shadow, off="0")
            if self.lean:  # no tags
                return [stmt]
            return [stmt, *_stmts(f"{shadow} = cuda.shared.array({max(size, 1)}, int32)")]
        extern = _name(value.value) if isinstance(value, ast.Subscript) else None
        if (
            target
            and isinstance(value, ast.Subscript)
            and extern is not None
            and extern in self.shared
            and isinstance(value.slice, ast.Slice)
            and value.slice.step is None
        ):
            base = self.shared[extern]
            lower = ast.unparse(value.slice.lower) if value.slice.lower else "0"
            self._add(ArrayInfo(target, "shared", 1, extern))
            off = f"{target}__off"
            self.shared[target] = dict(
                size=base["size"], ndim=1, shadow=base["shadow"], off=off, section=True
            )
            return [*_stmts(f"{off} = {base['off']} + ({lower})"), stmt]
        return None

    # -------------------------------------------------------- expressions
    def _acc(self) -> str:
        return self.acc if (self.acc and self.acc_ready) else "0.0"

    def _index_parts(self, node: ast.Subscript):
        """(indices as source, (row, col) as source) of a subscript of a known array."""
        sl = node.slice
        if isinstance(sl, ast.Tuple):
            idx = [ast.unparse(self.expr(e)) for e in sl.elts]
            return idx, (idx[0], idx[1])
        if isinstance(sl, ast.Slice):
            raise InstrumentError(
                f"line {node.lineno}: slicing {ast.unparse(node)} is only taken as a section of "
                "the dynamic shared array (Mds = Mds_Nds[a:b])"
            )
        i = ast.unparse(self.expr(sl))
        rc = None
        if not _has_array_access(sl, self.ids):
            rc = _split_index(sl, set(self.scalars), self.constants)
        return [i], rc or (str(D.NO_INDEX), str(D.NO_INDEX))

    def load_call(self, node: ast.Subscript) -> str:
        name = cast(ast.Name, node.value).id  # the callers checked: a known array's name
        aid = self.ids[name]
        idx, (row, col) = self._index_parts(node)
        ln = node.lineno
        if self.lean:
            if name in self.shared:
                return (
                    f"ls_load2({name}, {idx[0]}, {idx[1]})"
                    if len(idx) == 2
                    else (f"ls_load({name}, {idx[0]})")
                )
            if len(idx) == 2:
                return f"lg_load2({name}, {idx[0]}, {idx[1]}, _reads_{name}, _ZERO_{name})"
            return f"lg_load({name}, {idx[0]}, _reads_{name}, _ZERO_{name})"
        if name in self.shared:
            s = self.shared[name]
            if len(idx) == 2:
                return (
                    f"s_load2({name}, {idx[0]}, {idx[1]}, {s['shadow']}, {s['off']}, {aid}, {ln}, "
                    f"{_LOG}, {self._acc()})"
                )
            return (
                f"s_load({name}, {idx[0]}, {row}, {col}, {s['shadow']}, {s['off']}, {aid}, {ln}, "
                f"{_LOG}, {self._acc()})"
            )
        if len(idx) == 2:
            return (
                f"g_load2({name}, {idx[0]}, {idx[1]}, {aid}, {ln}, _reads_{name}, _ZERO_{name}, "
                f"{_LOG}, {self._acc()})"
            )
        return (
            f"g_load({name}, {idx[0]}, {row}, {col}, {aid}, {ln}, _reads_{name}, _ZERO_{name}, "
            f"{_LOG}, {self._acc()})"
        )

    def expr(self, node):
        """``node`` with every load of a known array replaced by its logging call."""
        rewriter = self

        class T(ast.NodeTransformer):
            def visit_Subscript(self, n):
                if (
                    isinstance(n.ctx, ast.Load)
                    and _name(n.value) in rewriter.ids
                    and not isinstance(n.slice, ast.Slice)
                    and (rewriter.shared_loads or _name(n.value) not in rewriter.shared)
                ):
                    return ast.copy_location(_expr(rewriter.load_call(n)), n)
                return self.generic_visit(n)

        return T().visit(node)

    # --------------------------------------------------------- provenance
    def tag_of(self, node) -> str:
        """Source of the provenance tag of ``node``'s value (read before ``node`` is rewritten).

        The tag of the global element the value is a plain copy of (a load, a
        local holding one, a shared slot's shadow, a cast or a conditional
        expression of those), :data:`~.instrument_device.TAG_ZERO` for a
        constant, :data:`~.instrument_device.TAG_COMPUTED` otherwise.
        """
        computed = str(D.TAG_COMPUTED)
        node = _uncast(node)
        if isinstance(node, ast.Constant):
            return str(D.TAG_ZERO)
        if isinstance(node, ast.Name):
            return f"{node.id}__tg" if node.id in self.tagged else computed
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.UAdd):
            return self.tag_of(node.operand)
        if isinstance(node, ast.IfExp):
            if _has_array_access(node.test, self.ids):
                return computed
            a, b = self.tag_of(node.body), self.tag_of(node.orelse)
            return f"({a} if {ast.unparse(node.test)} else {b})"
        if (
            isinstance(node, ast.Subscript)
            and _name(node.value) in self.ids
            and not isinstance(node.slice, ast.Slice)
            and not _has_array_access(node.slice, self.ids)
        ):
            name = cast(ast.Name, node.value).id
            sl = node.slice
            idx = (
                [ast.unparse(e) for e in sl.elts]
                if isinstance(sl, ast.Tuple)
                else [ast.unparse(sl)]
            )
            if name in self.shared:
                sh = self.shared[name]
                if len(idx) == 2:
                    return f"s_tag2({name}, {idx[0]}, {idx[1]}, {sh['shadow']}, {sh['off']})"
                return f"s_tag({name}, {idx[0]}, {sh['shadow']}, {sh['off']})"
            gid = self.ids[name]
            if len(idx) == 2:
                return f"g_tag2({name}, {idx[0]}, {idx[1]}, {gid})"
            return f"g_tag({name}, {idx[0]}, {gid})"
        return computed

    def _flat(self, target: ast.Subscript) -> str | None:
        """Source of the flat index of an element of a known array (None: it reads arrays)."""
        if _has_array_access(target.slice, self.ids) or isinstance(target.slice, ast.Slice):
            return None
        name = cast(ast.Name, target.value).id
        sl = target.slice
        if isinstance(sl, ast.Tuple):
            if len(sl.elts) != 2:
                return None
            return f"flat2({name}, {ast.unparse(sl.elts[0])}, {ast.unparse(sl.elts[1])})"
        return ast.unparse(sl)

    def _event(self, op, flag, arr, idx, tag, sa, si, ln) -> ast.stmt:
        no = D.NO_INDEX
        return _stmts(
            f"log_s({_LOG[:-5]}, {op}, {flag}, {arr}, {idx}, {no}, {no}, {tag}, {sa}, {si}, "
            f"{no}, {no}, _ep, {ln}, 0.0, {self._acc()})"
        )[0]

    def _terms(self, arr, idx, pairs, ln) -> tuple[list[ast.stmt], list[ast.stmt]]:
        """``(before, after)``: the factors' tags read, then one TERM event each product."""
        before: list[ast.stmt] = []
        after: list[ast.stmt] = []
        for x, y in pairs:
            n = next(self.tmp)
            before += _stmts(f"_ta{n} = {self.tag_of(x)}\n_tb{n} = {self.tag_of(y)}")
            after.append(self._event(D.TERM, 0, arr, idx, f"_ta{n}", -1, f"_tb{n}", ln))
        return before, after

    def _move(self, arr, idx, src, flag, ln) -> ast.stmt:
        """A MOVE event into (arr, idx) from ``src``: an accumulator, None or '?' (unknown)."""
        si = -1 if src is None else -2 if src == "?" else self.accs.index(src)
        return self._event(D.MOVE, flag, arr, idx, D.TAG_COMPUTED, -1, si, ln)

    def provenance(self, stmt: ast.stmt, top: bool) -> list[ast.stmt] | None:
        """The statements for ``stmt`` with its tags and TERM / MOVE events; None: not one."""
        ln = stmt.lineno
        if isinstance(stmt, ast.Expr) and _atomic(stmt.value):
            return self.atomic(cast(ast.Call, stmt.value), ln, None)
        if not isinstance(stmt, (ast.Assign, ast.AugAssign)):
            return None
        target = stmt.targets[0] if isinstance(stmt, ast.Assign) else stmt.target
        if isinstance(stmt, ast.Assign) and len(stmt.targets) != 1:
            return None
        value = stmt.value
        if isinstance(stmt, ast.Assign) and isinstance(target, ast.Name) and _atomic(value):
            return self.atomic(cast(ast.Call, value), ln, target.id)
        if isinstance(target, ast.Name):
            x = target.id
            if x not in self.tagged:
                return None
            before: list[ast.stmt] = []
            after: list[ast.stmt] = []
            if isinstance(stmt, ast.Assign):
                before += _stmts(f"_tg = {self.tag_of(value)}")
            if x in self.accs:
                me = self.accs.index(x)
                if isinstance(stmt, ast.AugAssign):
                    if isinstance(stmt.op, ast.Add) and _name(value) in self.accs:
                        after.append(self._move(-1, me, _name(value), D.MOVE_ADD, ln))
                    elif isinstance(stmt.op, ast.Add):
                        pairs = _products(value)
                        if pairs:
                            b, a = self._terms(-1, me, pairs, ln)
                            before, after = before + b, after + a
                elif _name(value) in self.accs and _name(value) != x:
                    after.append(self._move(-1, me, _name(value), D.MOVE_SET, ln))
                elif (
                    isinstance(value, ast.BinOp)
                    and isinstance(value.op, ast.Add)
                    and x in {_name(t) for t in _add_terms(value)}
                ):
                    rest = [t for t in _add_terms(value) if _name(t) != x]
                    pairs = _products(_sum(rest)) if rest else []
                    if pairs:
                        b, a = self._terms(-1, me, pairs, ln)
                        before, after = before + b, after + a
                elif _is_call_to(value, "cuda.fma") and len(value.args) == 3:
                    b, a = self._terms(-1, me, [(value.args[0], value.args[1])], ln)
                    before, after = before + b, after + a
                else:
                    after.append(self._move(-1, me, None, D.MOVE_SET, ln))
            main = [self.expr(stmt)]
            if isinstance(stmt, ast.Assign):
                main += _stmts(f"{x}__tg = _tg")
                if top and self.acc and x == self.acc:
                    self.acc_ready = True
            return before + main + after
        if (
            isinstance(stmt, ast.Assign)
            and isinstance(target, ast.Subscript)
            and _name(target.value) in self.ids
        ):
            name = cast(ast.Name, target.value).id
            flat = self._flat(target)
            if flat is None:
                return None
            aid = self.ids[name]
            before, after = [], []
            own = ast.unparse(target).replace("ctx=Store()", "")
            terms = _add_terms(value)
            if isinstance(value, ast.BinOp) and ast.unparse(terms[0]) == own and len(terms) > 1:
                rest = terms[1:]
                if len(rest) == 1 and _name(rest[0]) in self.accs:
                    after.append(self._move(aid, flat, _name(rest[0]), D.MOVE_ADD, ln))
                else:
                    pairs = _products(_sum(rest))
                    if pairs:
                        before, after = self._terms(aid, flat, pairs, ln)
            elif _name(value) in self.accs:
                after.append(self._move(aid, flat, _name(value), D.MOVE_SET, ln))
            elif name in self.shared:
                return None  # a tile load: the store's tag is its provenance
            else:
                pairs = _products(value)
                const = isinstance(_uncast(value), ast.Constant)
                # a constant starts the element's sum afresh; a value of no known terms
                # (computed otherwise) leaves it unjudged
                after.append(self._move(aid, flat, None if pairs or const else "?", D.MOVE_SET, ln))
                if pairs:
                    b, a = self._terms(aid, flat, pairs, ln)
                    before, after = before + b, after + a
            return before + self.store(target, value, ln) + after
        return None

    def noted_events(self, stmt: ast.stmt) -> int:
        """TERM, MOVE and atomic events ``stmt`` (as written) logs: for the static bound."""
        if not (self.terms or (_atomic(getattr(stmt, "value", None)) and not self.lean)):
            return 0
        if not any(_atomic(n) for n in ast.walk(stmt)) and not self.terms:
            return 0
        saved = (self.acc_ready, dict(self.copies), self.after_reads.copy())
        try:
            tree = _Remap().visit(copy.deepcopy(stmt))
            if self.terms:
                out = self.provenance(tree, False)
            else:
                out = self.atomic(cast(ast.Call, tree.value), stmt.lineno, None)
        except InstrumentError:
            return 0
        finally:
            self.acc_ready, self.copies, self.after_reads = saved[0], saved[1], saved[2]
        if not out:
            return 0
        code = "\n".join(ast.unparse(x) for x in out)
        # (an atomic's two notes are the two sides of one if: a bound may count both)
        return code.count("log_s(") + code.count("log_g(")

    def atomic(self, call: ast.Call, ln: int, result: str | None) -> list[ast.stmt]:
        """``cuda.atomic.op(A, idx, v)``: performed as written, logged as a store of A's element."""
        arr = _name(call.args[0]) if call.args else None
        if arr not in self.ids or len(call.args) < 3:
            out = (
                [self.expr(ast.Expr(call))]
                if result is None
                else _stmts(f"{result} = {ast.unparse(self.expr(call))}")
            )
            return out
        name = str(arr)
        aid = self.ids[name]
        index, v = call.args[1], call.args[2]
        idx = (
            [ast.unparse(e) for e in index.elts]
            if isinstance(index, ast.Tuple)
            else [ast.unparse(index)]
        )
        if _has_array_access(index, self.ids):
            raise InstrumentError(
                f"line {ln}: index an atomic's array with numbers and variables, not array "
                f"elements ({ast.unparse(call)})"
            )
        flat = f"flat2({name}, {idx[0]}, {idx[1]})" if len(idx) == 2 else idx[0]
        op = ast.unparse(call.func)
        add = op.endswith(".add")
        before: list[ast.stmt] = []
        after: list[ast.stmt] = []
        if add and _name(v) in self.accs:
            after.append(self._move(aid, flat, _name(v), D.MOVE_ADD, ln))
        elif add:
            pairs = _products(v)
            if pairs:
                before, after = self._terms(aid, flat, pairs, ln)
        n = next(self.tmp)
        vv = ast.unparse(self.expr(copy.deepcopy(v)))
        ok = f"g_ok2({name}, {idx[0]}, {idx[1]})" if len(idx) == 2 else f"g_ok({name}, {idx[0]})"
        if name in self.shared:
            ok = (
                f"({idx[0]} >= 0 and {idx[0]} < {name}.shape[0] and {idx[1]} >= 0 and "
                f"{idx[1]} < {name}.shape[1])"
                if len(idx) == 2
                else f"({idx[0]} >= 0 and {idx[0]} < {name}.shape[0])"
            )
        at = f"({idx[0]}, {idx[1]})" if len(idx) == 2 else idx[0]
        rc = f"{idx[0]}, {idx[1]}" if len(idx) == 2 else f"{D.NO_INDEX}, {D.NO_INDEX}"
        new = f"_old{n} + _av{n}" if add else f"_av{n}"
        if name in self.shared:
            note = (
                f"log_s({_LOG[:-5]}, {D.STORE}, {{flag}}, {aid}, {flat}, {rc}, {D.TAG_COMPUTED}, "
                f"-1, -1, {D.NO_INDEX}, {D.NO_INDEX}, _ep, {ln}, {{value}}, {self._acc()})"
            )
        else:
            note = (
                f"log_g({_LOG[:-5]}, {D.STORE}, {{flag}}, {aid}, {flat}, {rc}, _ep, {ln}, "
                f"{{value}}, {self._acc()})"
            )
        code = (
            f"_av{n} = {vv}\n"
            f"if {ok}:\n"
            f"    _old{n} = {op}({name}, {at}, _av{n})\n"
            f"    {note.format(flag=D.OK, value=new)}\n"
            "else:\n"
            f"    _old{n} = _av{n} * 0\n"
            f"    {note.format(flag=D.OUT_OF_BOUNDS, value=f'_av{n}')}\n"
        )
        if result is not None:
            code += f"{result} = _old{n}\n"
        return before + _stmts(code) + after

    # --------------------------------------------------------- statements
    def store(self, target: ast.Subscript, value, lineno, guard=None) -> list[ast.stmt]:
        """The statements for ``target = value`` (``guard``: the If's copy, for a zero-fill)."""
        name = cast(ast.Name, target.value).id  # the callers checked: a known array's name
        aid = self.ids[name]
        idx, (row, col) = self._index_parts(target)
        acc = self._acc()
        if name not in self.shared:  # a global store (P)
            v = ast.unparse(self.expr(value))
            if self.lean:
                if len(idx) == 2:
                    return _stmts(f"lg_store2({name}, {idx[0]}, {idx[1]}, {v})")
                return _stmts(f"lg_store({name}, {idx[0]}, {v})")
            if len(idx) == 2:
                return _stmts(
                    f"g_store2({name}, {idx[0]}, {idx[1]}, {v}, {aid}, {lineno}, {_LOG}, {acc})"
                )
            return _stmts(
                f"g_store({name}, {idx[0]}, {v}, {row}, {col}, {aid}, {lineno}, {_LOG}, {acc})"
            )
        s = self.shared[name]
        pre: list[ast.stmt] = []
        ok = "True"
        no = str(D.NO_INDEX)
        src = (str(D.TAG_COMPUTED), "-1", "-1", no, no)  # tag, arr, idx, row, col
        dynamic_zero = ""
        g = _name(value.value) if isinstance(value, ast.Subscript) else None
        copy = value if isinstance(value, ast.Subscript) and g in self.globals else None
        if copy is not None and g is not None:
            self.copies.setdefault(name, set()).add(g)
            gidx, (grow, gcol) = self._index_parts(copy)
            n = next(self.tmp)
            gid = self.ids[g]
            if self.lean:
                if len(gidx) == 2:
                    pre = _stmts(
                        f"_ok{n} = g_ok2({g}, {gidx[0]}, {gidx[1]})\n"
                        f"_v{n} = lg_load2({g}, {gidx[0]}, {gidx[1]}, _reads_{g}, _ZERO_{g})"
                    )
                else:
                    pre = _stmts(
                        f"_i{n} = {gidx[0]}\n"
                        f"_ok{n} = g_ok({g}, _i{n})\n"
                        f"_v{n} = lg_load({g}, _i{n}, _reads_{g}, _ZERO_{g})"
                    )
            elif len(gidx) == 2:
                pre = _stmts(
                    f"_i{n} = ({gidx[0]}) * {g}.shape[1] + ({gidx[1]})\n"
                    f"_ok{n} = g_ok2({g}, {gidx[0]}, {gidx[1]})\n"
                    f"_v{n} = g_load2({g}, {gidx[0]}, {gidx[1]}, {gid}, {lineno}, _reads_{g}, "
                    f"_ZERO_{g}, {_LOG}, {acc})"
                )
                grow, gcol = gidx
            else:
                pre = _stmts(
                    f"_i{n} = {gidx[0]}\n"
                    f"_ok{n} = g_ok({g}, _i{n})\n"
                    f"_v{n} = g_load({g}, _i{n}, {grow}, {gcol}, {gid}, {lineno}, _reads_{g}, "
                    f"_ZERO_{g}, {_LOG}, {acc})"
                )
            v = f"_v{n}"
            ok = f"_ok{n}"
            src = (f"_i{n} * {D.TAG_ARRAYS} + {gid}", str(gid), f"_i{n}", grow, gcol)
        elif self.terms and not (
            isinstance(value, ast.Constant) or (isinstance(_uncast(value), ast.Constant))
        ):
            n = next(self.tmp)
            pre = _stmts(f"_tg{n} = {self.tag_of(value)}")
            v = ast.unparse(self.expr(value))
            src = (
                f"_tg{n}",
                f"(_tg{n} % {D.TAG_ARRAYS} if _tg{n} >= 0 else -1)",
                f"(_tg{n} // {D.TAG_ARRAYS} if _tg{n} >= 0 else -1)",
                no,
                no,
            )
            dynamic_zero = f"_tg{n}"
        else:
            v = ast.unparse(self.expr(value))
            if not _has_array_access(value, self.ids) and not any(
                isinstance(x, ast.Name) and x.id not in self.ns for x in ast.walk(value)
            ):
                src = (str(D.TAG_ZERO), "-1", "-1", no, no)  # a constant (the zero-fill)
                if guard is not None:
                    g = guard.value.id
                    gidx, (grow, gcol) = self._index_parts(guard)
                    if len(gidx) == 2:
                        grow, gcol = gidx
                        flat = f"({gidx[0]}) * {g}.shape[1] + ({gidx[1]})"
                    else:
                        flat = gidx[0]
                    src = (str(D.TAG_ZERO), str(self.ids[g]), flat, grow, gcol)
        tag, sa, si, sr, sc = src
        if self.lean:
            call = (
                f"ls_store2({name}, {idx[0]}, {idx[1]}, {v}, {ok})"
                if len(idx) == 2
                else f"ls_store({name}, {idx[0]}, {v}, {ok})"
            )
        elif len(idx) == 2:
            call = (
                f"s_store2({name}, {idx[0]}, {idx[1]}, {v}, {s['shadow']}, {s['off']}, {ok}, "
                f"{tag}, {sa}, {si}, {sr}, {sc}, {aid}, {lineno}, {_LOG}, {acc})"
            )
        else:
            call = (
                f"s_store({name}, {idx[0]}, {v}, {row}, {col}, {s['shadow']}, {s['off']}, {ok}, "
                f"{tag}, {sa}, {si}, {sr}, {sc}, {aid}, {lineno}, {_LOG}, {acc})"
            )
        out = pre + _stmts(call)
        if tag == str(D.TAG_ZERO):  # a zero-fill: counted for every block
            out += _stmts(f"zfill(_zf, _bid, _nst_{name}, _zph, {aid}, _NARR)")
        elif dynamic_zero:  # a conditional expression's zero
            out += _stmts(
                f"if {dynamic_zero} == {D.TAG_ZERO}:\n"
                f"    zfill(_zf, _bid, _nst_{name}, _zph, {aid}, _NARR)"
            )
        return out + _stmts(f"_nst_{name} += 1")

    def barrier(self, lineno) -> list[ast.stmt]:
        if self.lean:
            return _stmts("cuda.syncthreads()")
        self.barriers = True
        acc = self._acc()
        if self.simulated:  # one call (instrument_device.sync): the simulator pays per call
            return _stmts(f"_ep = sync(_ticks, _slot, {lineno}, {_LOG}, {acc})")
        clock = "_ticks, _slot" if self.global_clock else "_tick, 0"
        ticket = (  # the block's logical clock (see instrument_device)
            "if _t >= 0:\n"
            "    _m = warp_mask()\n"
            "    _r = lane_rank(_m)\n"
            "    if _r == 0:\n"
            f"        _tk = cuda.atomic.add({clock}, lanes(_m))\n"
            "    _tk = from_leader(_m, _tk) + _r\n"
        )
        return _stmts(
            "_tk = 0\n"
            f"{ticket}"
            f"arrive(_tk, {lineno}, _clk, _nbar, {_LOG}, {acc})\n"
            "cuda.syncthreads()\n"
            "_ep += 1\n"
            f"{ticket}"
            f"release(_tk, {lineno}, _clk, _nbar, {_LOG}, {acc})"
        )

    def end(self, lineno) -> list[ast.stmt]:
        if self.lean:
            return _stmts("lend(_blk, _seq, _bid, _tid)")
        return _stmts(f"end(_blk, _seq, _bid, _tid, {lineno}, {_LOG}, {self._acc()})")

    def body(self, stmts: list[ast.stmt], top=False) -> list[ast.stmt]:
        out: list[ast.stmt] = []
        for stmt in stmts:
            reads = any(  # before the rewrite replaces the loads
                isinstance(n, ast.Subscript)
                and isinstance(n.ctx, ast.Load)
                and _name(n.value) in self.shared
                for n in ast.walk(stmt)
            )
            out.extend(self.stmt(stmt, top))
            self.read_seen = self.read_seen or reads
        return out or [ast.Pass()]

    def loop_body(self, stmts: list[ast.stmt]) -> list[ast.stmt]:
        saved, self.read_seen = self.read_seen, False
        try:
            return self.body(stmts)
        finally:
            self.read_seen = saved

    def _copy_of(self, stmts):
        if len(stmts) == 1 and isinstance(stmts[0], ast.Assign):
            a = stmts[0]
            if (
                len(a.targets) == 1
                and isinstance(a.targets[0], ast.Subscript)
                and _name(a.targets[0].value) in self.shared
                and isinstance(a.value, ast.Subscript)
                and _name(a.value.value) in self.globals
            ):
                return a
        return None

    def stmt(self, stmt: ast.stmt, top=False) -> list[ast.stmt]:
        decl = self._shared_decl(stmt)
        if decl is not None:
            if not top:
                raise InstrumentError(
                    f"line {stmt.lineno}: declare shared arrays at the top level of the kernel's "
                    "body (not inside a loop or a branch)"
                )
            return decl
        if isinstance(stmt, ast.Expr) and _is_call_to(stmt.value, "syncthreads"):
            self.after_reads[stmt.lineno] = self.read_seen
            return self.barrier(stmt.lineno)
        if isinstance(stmt, ast.Return):
            return [*self.end(stmt.lineno), ast.Return(value=None)]
        if self.terms:
            got = self.provenance(stmt, top)
            if got is not None:
                return got
        elif isinstance(stmt, ast.Expr) and _atomic(stmt.value) and not self.lean:
            return self.atomic(cast(ast.Call, stmt.value), stmt.lineno, None)
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
            target = stmt.targets[0]
            if isinstance(target, ast.Subscript) and _name(target.value) in self.ids:
                return self.store(target, stmt.value, stmt.lineno)
            if top and self.acc and _name(target) == self.acc:
                out = [self.expr(stmt)]
                self.acc_ready = True
                return out
        if (
            isinstance(stmt, ast.AugAssign)
            and isinstance(stmt.target, ast.Subscript)
            and _name(stmt.target.value) in self.ids
        ):
            load = ast.Subscript(
                value=stmt.target.value, slice=stmt.target.slice, ctx=ast.Load(), lineno=stmt.lineno
            )
            value = ast.BinOp(left=load, op=stmt.op, right=stmt.value)
            return self.store(stmt.target, value, stmt.lineno)
        if isinstance(stmt, (ast.Assign, ast.AugAssign)) and any(
            isinstance(t, (ast.Tuple, ast.List))
            and any(isinstance(e, ast.Subscript) and _name(e.value) in self.ids for e in t.elts)
            for t in (stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target])
        ):
            raise InstrumentError(
                f"line {stmt.lineno}: store into one array element per statement "
                f"({ast.unparse(stmt)})"
            )
        if isinstance(stmt, ast.If):
            copy = self._copy_of(stmt.body)
            test = self.expr(stmt.test)
            body = self.body(stmt.body)
            orelse: list[ast.stmt] = []
            if stmt.orelse:
                other = stmt.orelse
                if (
                    copy is not None
                    and len(other) == 1
                    and isinstance(other[0], ast.Assign)
                    and len(other[0].targets) == 1
                    and isinstance(other[0].targets[0], ast.Subscript)
                    and ast.unparse(other[0].targets[0]) == ast.unparse(copy.targets[0])
                ):
                    orelse = self.store(
                        other[0].targets[0], other[0].value, other[0].lineno, guard=copy.value
                    )
                else:
                    orelse = self.body(other)
            return [ast.If(test=test, body=body, orelse=orelse)]
        if isinstance(stmt, ast.For):
            return [
                ast.For(
                    target=stmt.target,
                    iter=self.expr(stmt.iter),
                    body=self.loop_body(stmt.body),
                    orelse=self.body(stmt.orelse) if stmt.orelse else [],
                    type_comment=None,
                )
            ]
        if isinstance(stmt, ast.While):
            return [
                ast.While(
                    test=self.expr(stmt.test),
                    body=self.loop_body(stmt.body),
                    orelse=self.body(stmt.orelse) if stmt.orelse else [],
                )
            ]
        if isinstance(stmt, (ast.FunctionDef, ast.ClassDef, ast.With, ast.Try)):
            raise InstrumentError(
                f"line {stmt.lineno}: a {type(stmt).__name__} statement cannot be instrumented "
                "in a kernel"
            )
        return [self.expr(stmt)]

    # ------------------------------------------------------------- whole
    def rewrite(self) -> ast.FunctionDef:
        fn = self.fn
        body = self.body(fn.body, top=True)
        nshared = [s for s in self.shared.values() if not s.get("section")]
        # Where the last declaration of a shared array is: the shadows' stamp goes after it.
        last = 0
        for i, stmt in enumerate(body):
            if isinstance(stmt, ast.Assign) and _is_call_to(stmt.value, "shared.array"):
                last = i + 1
            elif (
                isinstance(stmt, ast.Assign)
                and isinstance(stmt.value, ast.Subscript)
                and _name(stmt.value.value) in self.shared
                and isinstance(stmt.value.slice, ast.Slice)
            ):
                last = i + 1
        stamp: list[ast.stmt] = []
        for s in nshared if self.shared_loads and not self.lean else ():  # tags: shared loads
            stamp += _stmts(
                f"for _i in range(_tid, {max(s['size'], 1)}, _nthreads):\n"
                f"    {s['shadow']}[_i] = {D.TAG_NEVER}"
            )
        clock: list[ast.stmt] = []
        if self.barriers and not self.global_clock:  # the block's clock, in shared memory
            clock = _stmts("_tick = cuda.shared.array(1, int32)")
            # set to 0 (and a barrier) only where a barrier is kept: a kernel whose every
            # barrier the barrier lab turned off (a constant False) launches with none
            if _live_barrier(self.fn.body, self.ns):
                stamp += _stmts("if _tid == 0:\n    _tick[0] = 0")
        if stamp:
            stamp += _stmts(
                "cuda.syncthreads()  # the shadows and the clock are set before any access"
            )
        counters = "".join(f"_nst_{name} = 0\n" for name in self.shared)
        if self.lean:
            head: list[ast.stmt] = []
            prologue = _stmts(
                "_tid = (cuda.threadIdx.z * cuda.blockDim.y + cuda.threadIdx.y) * cuda.blockDim.x "
                "+ cuda.threadIdx.x\n"
                "_bid = cuda.blockIdx.y * cuda.gridDim.x + cuda.blockIdx.x\n"
                f"{counters}"
                "block_start(_blk, _bid, _tid)"
            )
            extra = ["_blk", "_seq", "_zf", "_zph"]
        else:
            # The block this thread plays: its own, or the block table's entry when the
            # detail blocks run again by themselves (a GPU's aggregated recording).
            head = _stmts(
                "_bx = cuda.blockIdx.x\n"
                "_by = cuda.blockIdx.y\n"
                "if _btab.shape[0] > 0:\n"
                "    _bi = cuda.blockIdx.y * cuda.gridDim.x + cuda.blockIdx.x\n"
                "    _by = _btab[2 * _bi]\n"
                "    _bx = _btab[2 * _bi + 1]"
            )
            prologue = _stmts(
                "_tid = (cuda.threadIdx.z * cuda.blockDim.y + cuda.threadIdx.y) * cuda.blockDim.x "
                "+ cuda.threadIdx.x\n"
                "_nthreads = cuda.blockDim.x * cuda.blockDim.y * cuda.blockDim.z\n"
                "_bid = _by * _gdx + _bx\n"
                # the simulator: a Python int, so that no NumPy scalar is worked on per event
                f"_slot = {'int(_detail[_by, _bx])' if self.simulated else '_detail[_by, _bx]'}\n"
                "_t = -1\n"
                "if _slot >= 0:\n"
                "    _t = _slot * _nthreads + _tid\n"
                "_ep = 0\n"
                f"{counters}"
                + "".join(f"{x}__tg = {D.TAG_COMPUTED}\n" for x in sorted(self.tagged))
                + "block_start(_blk, _bid, _tid)"
            )
            extra = [
                "_detail",
                "_ev",
                "_vals",
                "_cnt",
                "_cap",
                "_ticks",
                "_blk",
                "_seq",
                "_clk",
                "_nbar",
                "_zf",
                "_zph",
                "_btab",
                "_gdx",
                "_gdy",
            ]
        extra += [f"_reads_{g}" for g in self.globals]
        last_line = max((getattr(n, "lineno", 0) for n in ast.walk(fn)), default=0)
        tail = [] if body and isinstance(body[-1], ast.Return) else self.end(last_line)
        new_body = head + body[:last] + prologue + clock + stamp + body[last:] + tail
        args = ast.arguments(
            posonlyargs=[],
            args=[ast.arg(arg=a) for a in (*self.params, *extra)],
            kwonlyargs=[],
            kw_defaults=[],
            defaults=[],
        )
        if sys.version_info >= (3, 12):  # type parameters (PEP 695): none
            new = ast.FunctionDef(
                name=fn.name,
                args=args,
                body=new_body,
                decorator_list=[],
                returns=None,
                type_params=[],
            )
        else:
            new = ast.FunctionDef(
                name=fn.name, args=args, body=new_body, decorator_list=[], returns=None
            )
        return ast.fix_missing_locations(new)


def _np_dtype(text: str, ns: dict):
    obj = ns.get(text.split(".")[-1])
    if isinstance(obj, type) and issubclass(obj, np.generic):  # vizmm's simulator: NumPy's
        return np.dtype(obj)
    try:
        return np.dtype(str(obj)) if obj is not None else np.dtype(text.split(".")[-1])
    except TypeError:
        return np.dtype(np.float32)


# ------------------------------------------------------------------ bound
def _fixed_events(n: int) -> _Events:
    """A statement's events: ``n`` whatever the launch."""
    return lambda env: n


def _loop_events(head: int, args: list[CodeType], inner: _Events) -> _Events:
    """A ``for`` over ``range(*args)`` (compiled): ``head``, then ``inner`` each time round.

    ``head`` counts the range's own accesses.
    """
    return lambda env: head + len(range(*(int(eval(a, env)) for a in args))) * inner(env)


def _branch_events(head: int, body: _Events, orelse: _Events) -> _Events:
    """An ``if``: ``head`` (the test's accesses), then the larger of its two branches."""
    return lambda env: head + max(body(env), orelse(env))


def _static_bound(fn: ast.FunctionDef, rw: _Rewriter, barriers_only: bool = False) -> _Bound | None:
    """``bound(scalars) -> events per thread`` when every loop is a static ``range``; else None.

    With ``barriers_only``: the barrier events (arrivals and releases) per thread.
    """
    arrays = set(rw.ids)

    def accesses(node) -> int:
        if barriers_only:
            return 0
        return sum(
            1
            for n in ast.walk(node)
            if isinstance(n, ast.Subscript)
            and _name(n.value) in arrays
            and not isinstance(n.slice, ast.Slice)
            and (
                rw.shared_loads
                or _name(n.value) not in rw.shared
                or not isinstance(n.ctx, ast.Load)
            )
        )

    known_locals: dict[str, ast.expr] = {}
    for stmt in fn.body:
        if (
            isinstance(stmt, ast.Assign)
            and len(stmt.targets) == 1
            and isinstance(stmt.targets[0], ast.Name)
        ):
            known_locals[stmt.targets[0].id] = stmt.value

    def count(stmts: list[ast.stmt], env_names: set[str]) -> _Events | None:
        parts: list[_Events] = []
        for stmt in stmts:
            if isinstance(stmt, ast.For):
                it = stmt.iter
                if not (_is_call_to(it, "range") and isinstance(it.func, ast.Name)):
                    return None
                inner = count(stmt.body, env_names)
                if inner is None:
                    return None
                args = [compile(ast.Expression(a), "<bound>", "eval") for a in it.args]
                used = {n.id for a in it.args for n in ast.walk(a) if isinstance(n, ast.Name)}
                if used & {stmt.target.id if isinstance(stmt.target, ast.Name) else ""} or (
                    used - env_names - set(rw.ns) - set(known_locals)
                ):
                    return None
                if any(
                    isinstance(n, ast.Attribute) and n.attr in ("threadIdx", "blockIdx")
                    for a in it.args
                    for n in ast.walk(a)
                ):
                    return None
                parts.append(_loop_events(accesses(it), args, inner))
            elif isinstance(stmt, ast.While):
                return None
            elif isinstance(stmt, ast.If):
                a, b = count(stmt.body, env_names), count(stmt.orelse, env_names)
                if a is None or b is None:
                    return None
                parts.append(_branch_events(accesses(stmt.test), a, b))
            elif isinstance(stmt, ast.Expr) and _is_call_to(stmt.value, "syncthreads"):
                parts.append(_fixed_events(2))  # arrival and release
            else:
                n = accesses(stmt) + (
                    1 if isinstance(stmt, ast.Return) and not barriers_only else 0
                )
                if not barriers_only:
                    n += rw.noted_events(stmt)
                parts.append(_fixed_events(n))
        return lambda env: sum(p(env) for p in parts)

    total = count(fn.body, set(rw.scalars))
    if total is None:
        return None

    def bound(
        scalars: Mapping[str, object],
        block: tuple[int, ...] = (1, 1, 1),
        grid: tuple[int, ...] = (1, 1, 1),
    ) -> int:
        env = dict(rw.ns)
        env.update(scalars)

        class _Dim:
            def __init__(self, x, y, z):
                self.x, self.y, self.z = x, y, z

        env["cuda"] = type("cuda", (), {"blockDim": _Dim(*block), "gridDim": _Dim(*grid)})
        for name, value in known_locals.items():
            try:
                env[name] = eval(compile(ast.Expression(value), "<bound>", "eval"), env)
            except Exception:
                pass
        return total(env) + (0 if barriers_only else 1)  # the end event

    return bound


def _bound_or_none(bound, scalars, dims, gdims) -> int | None:
    """A static bound's value, or None where a loop's bound is not known before the launch.

    A bound from a local the launch computes (``n = M.shape[1]``), or from a shared
    element (``range(nt[0])``), cannot be evaluated from the scalars: the events are
    then counted by a first launch, never a failure.
    """
    if bound is None:
        return None
    try:
        return int(bound(scalars, dims, gdims))
    except Exception:  # noqa: BLE001 - any name or value the static view cannot know
        return None


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

        env.update({h: getattr(helpers, h) for h in _HELPERS})
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
    )
    _CACHE[key] = out
    return out


@functools.cache
def _empty(dtype):
    return np.zeros(0, dtype)


# ------------------------------------------------------------------ launch
@dataclasses.dataclass(frozen=True)
class RawLog:
    """What one launch of an instrumented kernel logged (see :mod:`.instrument_device`).

    Attributes
    ----------
    events : ndarray of int32, (nd, threads, cap, NF)
        Per detailed block (slot), thread (``tid = (tz*bdy + ty)*bdx + tx``)
        and event, the fields :data:`~.instrument_device.FIELDS`.
    values : ndarray of float64, (nd, threads, cap, 2)
        The value loaded or stored, and the accumulator at that moment.
    counts : ndarray of int32, (nd, threads)
        Events per thread (all of them: ``counts <= cap``).
    reads : dict of str to ndarray of int32
        Per global array, how many times each element was read (flat).
    block_info : ndarray of int64, (gy, gx, 6)
        SM, times, clocks and completion order of every block (-1 where not read).
    outputs : dict of str to ndarray
        The global arrays after the launch (P).
    clocks : ndarray of int64, (nd, threads, nbar)
        ``%clock64`` at each barrier arrival (``2 * epoch``) and release
        (``2 * epoch - 1``, the epoch counted after it) of the logged
        threads; -1 where not read (the simulator has no clock).
    zero_fills : ndarray of int32, (gy, gx, phases, arrays)
        Per block, the constants stored into each shared array (its id) as
        the thread's n-th store into it (n < ``phases``); every block counts.
    notes : tuple of str
        vizmm's simulator: each barrier that opened with some threads of a
        block not arrived (they had ended, or waited at another line).
    """

    events: np.ndarray
    values: np.ndarray
    counts: np.ndarray
    reads: dict
    block_info: np.ndarray
    outputs: dict
    clocks: np.ndarray | None = None
    zero_fills: np.ndarray | None = None
    notes: tuple = ()


def decode(ev, vals, counts, cap, arrays) -> tuple[np.ndarray, np.ndarray]:
    """The log as the rewritten kernel left it in device memory, read as rows of FIELDS.

    :func:`vizmm.trace.access_log.unpack_field_major`, the log's one decoder,
    given the arrays' spaces.

    Parameters
    ----------
    ev : ndarray of int32, flat (cap, NF, threads) or longer
        The kernel's ``_ev``.
    vals : ndarray of float64, flat (cap, 2, threads) or longer
        The kernel's ``_vals``.
    counts : ndarray of int32, (threads,)
        Events per thread (at most ``cap``).
    cap : int
        Events per thread the log had room for.
    arrays : sequence of ArrayInfo
        The arrays the log names, by id (their ``space``: global or shared).

    Returns
    -------
    events : ndarray of int32, (threads, cap, NF)
        Per thread and event, the fields :data:`~vizmm.trace.access_log.FIELDS`; zero past
        the thread's count.
    values : ndarray of float64, (threads, cap, 2)
        The value loaded or stored (0.0 for a barrier and the end) and the accumulator.
    """
    return D.unpack_field_major(ev, vals, counts, cap, [a.space for a in arrays])


#: Bytes one logged event takes (its int32 fields and two float64 values).
EVENT_BYTES = D.NF * 4 + 16


def log_bytes(cap: int, threads: int) -> int:
    """Bytes of a log of ``cap`` events for each of ``threads`` threads.

    Parameters
    ----------
    cap : int
        Events per thread.
    threads : int
        Threads logged (detail blocks times threads per block).

    Returns
    -------
    int
        ``cap * threads *`` :data:`EVENT_BYTES` (the int32 fields and the two
        float64 values of each event), in bytes.
    """
    return int(cap) * int(threads) * EVENT_BYTES


def _records(
    inst, grid, block, blocks, cap, arrays, aggregated, nbar=0, phases=0, remap=False, rows=False
):
    """The arguments the full variant takes after the kernel's own, by name (host arrays).

    ``remap``: the launch runs only ``blocks`` (a grid of ``len(blocks)``
    blocks reading their place from the block table ``_btab``); it counts
    no reads nor zero-fills (the lean variant did) and its block info is
    thrown away. ``rows``: the simulator's log, a list of rows
    (:data:`~.instrument_device.SIM_ROW`) that :func:`_lay_out` turns into
    the arrays a GPU fills, its counts a list, its ``cap`` an int and its
    read counters lists of the indices read.
    """
    gx, gy = grid
    nthreads = block[0] * block[1] * (block[2] if len(block) > 2 else 1)
    nd = len(blocks)
    detail = np.full((gy, gx), -1, np.int32)
    for i, (by, bx) in enumerate(blocks):
        detail[by, bx] = i
    narr = len(inst.arrays)
    rec: dict[str, Any] = dict(
        _detail=detail,
        _ev=[] if rows else np.zeros(max(nd * nthreads * cap * D.NF, 1), np.int32),
        _vals=np.zeros(1 if rows else max(nd * nthreads * cap * 2, 1), np.float64),
        # the simulator: Python ints, cheaper to work on per event than NumPy's scalars
        _cnt=[0] * max(nd * nthreads, 1) if rows else np.zeros(max(nd * nthreads, 1), np.int32),
        _cap=int(cap) if rows else np.int32(cap),
        # the simulator: a counter per detail block, its next value taken without a lock
        _ticks=[itertools.count() for _ in range(max(nd, 1))]
        if rows
        else np.zeros(max(nd, 1), np.int32),
        _blk=np.full(gy * gx * 6, -1, np.int64),
        _seq=np.zeros(1, np.int32),
        _clk=np.full(max(nd * nthreads * nbar, 1), -1, np.int64),
        _nbar=np.int32(nbar),
        _zf=np.zeros(0 if remap else gy * gx * phases * narr, np.int32),
        _zph=np.int32(phases),
        _btab=np.asarray(blocks, np.int32).reshape(-1) if remap else np.zeros(0, np.int32),
        _gdx=np.int32(gx),
        _gdy=np.int32(gy),
    )
    for g in inst.global_arrays:
        # the simulator: the flat index of each read, counted after the launch
        rec[f"_reads_{g}"] = [] if rows else np.zeros(0 if remap else arrays[g].size, np.int32)
    return rec


def _lay_out(rows, threads: int, cap: int) -> tuple[np.ndarray, np.ndarray]:
    """The simulator's rows of the log laid out as a GPU's kernel writes the log.

    Parameters
    ----------
    rows : list of tuple
        One row per event stored (:data:`~.instrument_device.SIM_ROW`).
    threads : int
        Threads logged (detail blocks times threads per block).
    cap : int
        Events per thread the log had room for.

    Returns
    -------
    ev : ndarray of int32, flat (cap, NF, threads)
        The packed word and the fields ``idx`` to ``tick``; the line, flag
        and array are in the word, as a GPU leaves them (:func:`decode`).
    vals : ndarray of float64, flat (cap, 2, threads)
        The value and the accumulator.
    """
    nf = D.NF
    ev = np.zeros(max(threads * cap * nf, 1), np.int32)
    vals = np.zeros(max(threads * cap * 2, 1), np.float64)
    if not rows:
        return ev, vals
    # float64 holds every int32 field exactly, and the values as the kernel gave them
    table = np.array(rows, np.float64)
    t, n = table[:, 0].astype(np.int64), table[:, 1].astype(np.int64)
    at = n * nf * threads + t
    ev[at + D.OP * threads] = table[:, 2]
    for col, field in enumerate(range(D.IDX, D.TICK + 1), start=3):
        ev[at + field * threads] = table[:, col]
    at = n * 2 * threads + t
    vals[at] = table[:, -2]
    vals[at + threads] = table[:, -1]
    return ev, vals


def _lean_records(inst, grid, arrays, phases):
    """The arguments the lean variant takes after the kernel's own, by name (host arrays)."""
    gx, gy = grid
    rec = dict(
        _blk=np.full(gy * gx * 6, -1, np.int64),
        _seq=np.zeros(1, np.int32),
        _zf=np.zeros(gy * gx * phases * len(inst.arrays), np.int32),
        _zph=np.int32(phases),
    )
    for g in inst.global_arrays:
        rec[f"_reads_{g}"] = np.zeros(arrays[g].size, np.int32)
    return rec


def run(
    inst: Instrumented,
    args: Mapping[str, object],
    grid,
    block,
    blocks,
    *,
    max_bytes: int = 1 << 30,
    aggregated: bool = False,
    turns: bool = False,
    update=None,
    cancel=None,
    phases: int = 0,
    schedule: str = "threads",
) -> RawLog:
    """Launch ``inst`` and return its log (see :class:`RawLog`).

    In the simulator: the full variant, once (twice when its events must be
    counted first), over the grid or, ``aggregated``, over ``blocks`` only.
    On a GPU, not aggregated: the full variant over the grid. On a GPU,
    aggregated: the lean variant over the whole grid (read counters,
    zero-fills, the blocks' SM and times: nothing per event), then the full
    variant over ``blocks`` only (a grid of ``len(blocks)`` blocks, each
    playing its block from a table; its P stores repeat the lean launch's).

    Parameters
    ----------
    inst : Instrumented
    args : mapping
        The kernel's own arguments by name: arrays (NumPy, copied in, the
        outputs copied back) and scalars.
    grid : (gx, gy)
    block : (bx, by) or (bx, by, bz)
        Threads per block.
    blocks : list of (by, bx)
        The blocks logged per thread.
    max_bytes : int
        The largest log allowed (bytes), checked before it is allocated.
    aggregated : bool
        Run only ``blocks`` in the simulator; on a GPU every block still
        counts its global reads and zero-fills and records its times.
    turns : bool
        Simulator: the threads of a block take turns between barriers
        (:func:`vizmm.record.simulator.run_block_in_turns`).
    update : callable, optional
        ``update(done, total)``: blocks done so far (after each block in the
        simulator; once, ``(1, 1)``, after a GPU launch).
    cancel : threading.Event, optional
        Simulator: checked before each block; once set, the run stops with
        :class:`~vizmm.record.admission.RecordingCancelled`.
    phases : int
        Zero-fills are counted per block for a thread's first ``phases``
        stores into each shared array (0: not counted).
    schedule : {'threads', 'warps'}
        vizmm's simulator: who runs when between barriers (:mod:`.simt`).

    Raises
    ------
    InstrumentError
        When the log would exceed ``max_bytes`` (nothing allocated), an
        argument is missing, or the grid is not 1-D or 2-D.
    """
    from .simt_compile import SimtKernel

    simt = isinstance(inst.kernel, SimtKernel)
    missing = [p for p in inst.params if p not in args]
    if missing:
        raise InstrumentError(
            f"kernel {inst.name}({', '.join(inst.params)}) lacks argument(s) {', '.join(missing)}"
        )
    block = tuple(int(b) for b in block)
    nthreads = math.prod(block)
    if nthreads > 1024 or nthreads < 1:
        raise InstrumentError(
            f"a block of {' x '.join(map(str, block))} = {nthreads} threads cannot be launched "
            "(1 to 1024 threads per block)"
        )
    arrays = {g: np.ascontiguousarray(args[g]) for g in inst.global_arrays}
    for g, info in zip(inst.global_arrays, inst.arrays, strict=False):
        a = arrays[g]
        if a.size == 0:
            raise InstrumentError(f"array {g!r} is empty")
        if a.size >= 2**31 // D.TAG_ARRAYS:
            raise InstrumentError(
                f"array {g!r} has {a.size} elements; the log traces arrays of fewer than "
                f"{2**31 // D.TAG_ARRAYS} elements"
            )
        if info.ndim == 1 and a.ndim != 1:
            arrays[g] = a.ravel()
        elif info.ndim == 2 and a.ndim != 2:
            raise InstrumentError(
                f"kernel {inst.name} indexes {g!r} as {g}[r, c] but it was given with "
                f"{a.ndim} dimension(s)"
            )
    scalars = {p: args[p] for p in inst.params if p not in arrays}
    nd = len(blocks)
    if simt:
        simulated = True
    else:
        from vizmm_kernels import _target

        simulated = _target.NAME == _target.SIMULATOR
    sim_blocks = list(blocks) if aggregated else None
    dims = (block + (1,) * 3)[:3]
    gdims = (tuple(grid) + (1,) * 3)[:3]
    update = update or (lambda done, total: None)
    gx, gy = grid
    two_launches = aggregated and not simulated
    cuda: Any = None if simt else _target.cuda
    notes: list[str] = []

    def device_launch(kern, launch_grid, ordered, rec, stream=0):
        """Copy the arguments in, launch ``kern`` on ``stream``; what :func:`fetch` takes."""
        d_args = [
            cuda.to_device(a, stream=stream) if isinstance(a, np.ndarray) else a for a in ordered
        ]
        d_rec = {
            k: cuda.to_device(v, stream=stream) if isinstance(v, np.ndarray) else v
            for k, v in rec.items()
        }
        kern[tuple(launch_grid), block, stream, inst.dynamic_shared](*d_args, *d_rec.values())
        return d_args, d_rec

    def fetch(d_args, d_rec):
        """After the device is done: the arguments (outputs) and the records, on the host."""
        outs = [d.copy_to_host() if hasattr(d, "copy_to_host") else d for d in d_args]
        rec = {k: v.copy_to_host() if hasattr(v, "copy_to_host") else v for k, v in d_rec.items()}
        return outs, rec

    def lean_launch(stream=0):
        """The lean variant over the whole grid (two_launches): its arguments and records."""
        louts = {g: a.copy() for g, a in arrays.items()}
        ordered = [louts[p] if p in louts else scalars[p] for p in inst.params]
        lrec = _lean_records(inst, grid, arrays, phases)
        return device_launch(inst.lean, grid, ordered, lrec, stream)

    def simt_launch(cap):
        from .simt import launch as run_simt

        rec = _records(inst, grid, block[:2], blocks, cap, arrays, aggregated, 0, phases)
        for g in inst.global_arrays:
            rec[f"_reads_{g}"] = []
        outs = {g: a.copy() for g, a in arrays.items()}
        ordered = [outs[p] if p in outs else scalars[p] for p in inst.params]
        done = run_simt(inst.kernel, [*ordered, *rec.values()], rec, tuple(grid), block,
                        sim_blocks, update, inst.dynamic_shared, cancel, schedule)  # fmt: skip
        notes[:] = done.notes
        for g in inst.global_arrays:
            read = rec[f"_reads_{g}"]
            read = np.concatenate(read).astype(np.int64) if read else np.zeros(0, np.int64)
            rec[f"_reads_{g}"] = np.bincount(read, minlength=arrays[g].size).astype(np.int32)
        return rec, outs

    def launch(cap, nbar, outs=None, with_lean=False):
        if simt:
            return simt_launch(cap)
        rec = _records(
            inst,
            grid,
            block[:2],
            blocks,
            cap,
            arrays,
            aggregated,
            nbar,
            phases,
            two_launches,
            rows=simulated,
        )
        outs = outs or {g: a.copy() for g, a in arrays.items()}
        ordered = [outs[p] if p in outs else scalars[p] for p in inst.params]
        if simulated:
            from .simulator import simulate

            simulate(
                inst.kernel,
                tuple(grid),
                block[:2],
                ordered,
                rec,
                sim_blocks,
                update,
                inst.dynamic_shared,
                turns=turns,
                cancel=cancel,
            )
            rec["_ev"], rec["_vals"] = _lay_out(rec["_ev"], nd * nthreads, cap)
            rec["_cnt"] = np.asarray(rec["_cnt"], np.int32)
            for g in inst.global_arrays:
                read = np.asarray(rec[f"_reads_{g}"], np.int64)
                rec[f"_reads_{g}"] = np.bincount(read, minlength=arrays[g].size).astype(np.int32)
        else:
            launch_grid = (max(nd, 1), 1) if two_launches else grid
            lean = None
            if with_lean and nd == 0:
                lean = fetch(*lean_launch())
                cuda.synchronize()
            elif with_lean:
                # The detail blocks' launch and the lean one over the grid run side by side
                # on two streams, each on its own copies of the arrays (a kernel that reads
                # P, say P += ..., sees the same P in both); the outputs are the lean
                # launch's, which ran every block once.
                s_lean, s_detail = cuda.stream(), cuda.stream()
                lean_dev = lean_launch(s_lean)
                detail_dev = device_launch(inst.kernel, launch_grid, ordered, rec, s_detail)
                cuda.synchronize()
                lean = fetch(*lean_dev)
                _, rec = fetch(*detail_dev)
            elif not (two_launches and nd == 0):
                detail_dev = device_launch(inst.kernel, launch_grid, ordered, rec)
                cuda.synchronize()
                got, rec = fetch(*detail_dev)
                outs = {p: d for p, d in zip(inst.params, got, strict=True) if p in outs}
            if lean is not None:
                got, lean_rec = lean
                outs = {p: d for p, d in zip(inst.params, got, strict=True) if p in outs}
                rec = {**rec, **{f"_lean{k}": v for k, v in lean_rec.items()}}
            update(1, 1)
        return rec, outs

    cap = _bound_or_none(inst.bound, scalars, dims, gdims)
    if cap is None:  # count first: the same kernel with no room, every thread counts its events
        rec, _ = launch(0, 0)
        cap = int(rec["_cnt"].max()) if nd else 0
    nbar = _bound_or_none(inst.barrier_bound, scalars, dims, gdims)
    nbar = cap if nbar is None else nbar
    if simulated:  # the simulator has no %clock64: no room for clocks, none written
        nbar = 0
    need = log_bytes(cap, nd * nthreads) + nbar * nd * nthreads * 8
    if need > max_bytes:
        raise InstrumentError(
            f"the access log would take {need} bytes ({cap} events for each of {nd * nthreads} "
            f"logged threads), over the limit of {max_bytes}; log fewer blocks (a window) or "
            "a smaller launch"
        )
    # two_launches: every block counts, lean, beside the detail blocks in full
    rec, outs = launch(cap, nbar, with_lean=two_launches)
    lean = {k[5:]: v for k, v in rec.items() if k.startswith("_lean_")} if two_launches else None
    counts = rec["_cnt"][: nd * nthreads].reshape(nd, nthreads)
    if (counts > cap).any():
        raise InstrumentError(
            f"kernel {inst.name} logged more events than its bound ({int(counts.max())} > {cap})"
        )
    counted = lean if lean is not None else rec
    if simt:  # written thread by thread (simt.Launch.write): unpacked in place, no copy
        tt = nd * nthreads
        events, values = D.unpack(
            rec["_ev"][: tt * cap * D.NF].reshape(tt, cap, D.NF),
            rec["_vals"][: tt * cap * 2].reshape(tt, cap, 2),
            counts.reshape(-1),
            [a.space for a in inst.arrays],
        )
    else:
        events, values = decode(rec["_ev"], rec["_vals"], counts.reshape(-1), cap, inst.arrays)
    tt = nd * nthreads
    return RawLog(
        events=events.reshape(nd, nthreads, cap, D.NF),
        values=values.reshape(nd, nthreads, cap, 2),
        counts=counts,
        reads={g: counted[f"_reads_{g}"] for g in inst.global_arrays},
        block_info=counted["_blk"].reshape(gy, gx, 6),
        outputs=outs,
        clocks=rec["_clk"][: tt * nbar].reshape(nbar, tt).T.reshape(nd, nthreads, nbar),
        zero_fills=counted["_zf"].reshape(gy, gx, phases, len(inst.arrays)),
        notes=tuple(notes),
    )
