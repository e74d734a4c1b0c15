"""The kernel is read, not run: a student's file parsed, checked and normalised (``ast`` only).

A kernel file is data. :func:`read_kernel` parses it with :mod:`ast` and keeps
three things of it: the ``@cuda.jit`` kernels and device functions, the
module-level constants (literals and constant expressions of them, evaluated
here by a small evaluator of numbers, never by Python's ``eval``) and the
imports of ``numba``, ``numba.cuda``, ``math`` and ``numpy``. Everything else
at module level (a ``__main__`` block, a host test harness, ``import os``, an
assignment to ``vizmm.checker.findings``) is set aside with a note and never
executed.

The kernel's body (and each device function it calls) is checked against the
CUDA Python subset Numba compiles: assignments, ``for ... in range(...)``,
``while``, ``if``, ``break`` / ``continue`` / ``return``; names that are the
kernel's parameters, its locals, the file's constants and device functions,
a few builtins (``range``, ``min``, ``max``, ``abs``, ``int``, ``float``,
``bool``, ``len``) and the numeric types; attributes of ``cuda``
(``threadIdx``, ``blockIdx``, ``blockDim``, ``gridDim``, ``syncthreads``,
``grid``, ``shared.array``, ``local.array``, ``atomic.*`` ...), of ``math``
and of arrays (``shape``, ``size``). Anything outside it is one
:class:`KernelRejected` naming the file's line and the construct.

Then every form of the subset is normalised once, so that the instrumenter
(:mod:`.instrument`) sees one spelling of each thing:

* chained subscripts ``Mds[ty][tx]`` become ``Mds[ty, tx]``;
* ``cuda.shared.array(shape=..., dtype=...)`` (and ``cuda.local.array``)
  take their arguments by position;
* a 3-D shared array ``(D, R, C)`` (double buffering, coarsening) becomes a
  2-D one ``(D * R, C)`` indexed ``[d * R + r, c]``;
* an augmented assignment to an array element ``P[r, c] += v`` becomes
  ``P[r, c] = P[r, c] + v`` (a load and a store, as the GPU does it);
* the aliases of the imports (``numba.cuda.threadIdx``, ``nb.float32``,
  ``np.float32``, ``from numba import cuda as cu``) become ``cuda.*`` and
  ``float32``;
* a device function whose body is one ``return`` expression, or a procedure
  with no ``return``, is inlined at its call (its accesses are logged as the
  kernel's own, at the line of the call); other device functions are
  compiled from their checked tree and called.

Limits are checked before work: a regular file (never a FIFO or device) of at
most :data:`MAX_FILE_BYTES`, a tree at most :data:`MAX_DEPTH` deep, at most
:data:`MAX_INLINED` inlined calls, no recursion between device functions,
shared arrays of at most 48 KiB per block and local arrays of at most
:data:`MAX_LOCAL_BYTES`. A name the kernel reads (``cuda``, ``math``, a numeric
type, a builtin of the subset, a constant, a device function) is bound once at
module level, is never a parameter or local, and no name vizmm keeps (a leading
underscore, a double underscore) is the file's. Decorator arguments are
literals; annotations are dropped.

What runs, in the simulator or on a GPU, is code generated from that checked
tree in globals vizmm builds (:meth:`KernelSource.namespace`): nothing a
student writes can reach ``vizmm``, NumPy, builtins, the file system or a
process.

The front end is five modules: this one (the limits, the subset's names,
:class:`KernelSource` and the entry points), :mod:`.frontend_reader` (the
file's module level), :mod:`.frontend_const` (the evaluator of constant
expressions), :mod:`.frontend_checker` (the kernel's statements and
expressions against the subset) and :mod:`.frontend_inline` (device functions
at their calls).
"""

from __future__ import annotations

import ast
import dataclasses
import math
import os
import stat
from collections.abc import Mapping
from typing import Any

__all__ = [
    "KernelRejected",
    "KernelSource",
    "read_kernel",
    "read_source",
]

#: The largest kernel file read (bytes): a kernel is a page, not a library.
MAX_FILE_BYTES = 1 << 20
#: The largest integer a constant expression may reach (|value|).
MAX_CONSTANT = 1 << 62
#: The deepest a kernel file's syntax tree may nest (a kernel nests a few levels, not hundreds).
MAX_DEPTH = 100
#: The most device functions (and kernels) a file defines: a kernel file is a page.
MAX_FUNCTIONS = 256
#: The most device-function calls inlined into one kernel (calls within calls counted).
MAX_INLINED = 500
#: Static shared memory a block may declare (bytes): CUDA's 48 KiB per block.
MAX_SHARED_BYTES = 48 * 1024
#: The most bytes of local arrays a thread may declare.
MAX_LOCAL_BYTES = 16 * 1024
#: Bytes of one element of each numeric type.
ITEMSIZE = {
    "float32": 4,
    "float64": 8,
    "int32": 4,
    "int64": 8,
    "uint32": 4,
    "uint64": 8,
    "int16": 2,
    "int8": 1,
    "boolean": 1,
}

#: Modules a kernel file may import (anything else is set aside, never imported).
MODULES = ("numba", "numba.cuda", "math", "numpy", "numba.types", "vizmm_kernels._target")
#: Numeric types the generated code binds (numba's, for the process's target).
TYPES = ("float32", "float64", "int32", "int64", "uint32", "uint64", "int16", "int8", "boolean")
#: Builtins the kernel may call.
BUILTINS = ("range", "min", "max", "abs", "int", "float", "bool", "len", "round")
#: ``cuda.<name>`` attributes the kernel may read (with ``.x/.y/.z`` where they are dims).
CUDA_DIMS = ("threadIdx", "blockIdx", "blockDim", "gridDim")
CUDA_CALLS = (
    "syncthreads",
    "syncwarp",
    "grid",
    "gridsize",
    "threadfence",
    "threadfence_block",
    "fma",
    "selp",
    "popc",
    "laneid",
    "warpsize",
)
#: Names ``from numba.cuda import ...`` may bind (then read as ``cuda.<name>``).
CUDA_NAMES = (*CUDA_DIMS, *CUDA_CALLS, "jit", "shared", "local", "atomic")
CUDA_ATOMICS = ("add", "sub", "max", "min", "exch", "cas", "and_", "or_", "xor", "inc", "dec")
#: ``math.<name>`` functions the kernel may call.
MATH = tuple(
    n
    for n in (
        "sqrt exp exp2 expm1 log log2 log10 log1p floor ceil trunc fabs fmod pow sin cos tan "
        "asin acos atan atan2 sinh cosh tanh isnan isinf isfinite copysign hypot erf erfc "
        "gamma lgamma degrees radians"
    ).split()
)
#: ``math.<name>`` values the kernel may read.
MATH_VALUES = ("math.pi", "math.e", "math.tau", "math.inf", "math.nan")
#: Statements of the subset.
_STMTS = (
    ast.Assign,
    ast.AugAssign,
    ast.AnnAssign,
    ast.For,
    ast.While,
    ast.If,
    ast.Expr,
    ast.Return,
    ast.Pass,
    ast.Break,
    ast.Continue,
)
_OPS = (
    ast.Add,
    ast.Sub,
    ast.Mult,
    ast.Div,
    ast.FloorDiv,
    ast.Mod,
    ast.Pow,
    ast.LShift,
    ast.RShift,
    ast.BitOr,
    ast.BitXor,
    ast.BitAnd,
)


class KernelRejected(ValueError):
    """A kernel file vizmm does not take; the message names the file's line and what is allowed."""


@dataclasses.dataclass(frozen=True)
class KernelSource:
    """A kernel read from a file (or text) by :func:`read_kernel`: checked, normalised, not run.

    Attributes
    ----------
    path : str
        The file as given (``'<kernel source>'`` for text).
    name : str
        The kernel's name.
    tree : ast.FunctionDef
        The normalised kernel; its line numbers count within :attr:`source`
        (line 1 is :attr:`first_line` of the file).
    source : str
        The kernel's text as written, from its first decorator to its end.
    first_line : int
        The file's line where :attr:`source` starts (1-based).
    params : tuple of str
        The kernel's parameters.
    constants : mapping of str to int, float, bool or tuple
        The file's module-level constants (``TILE_WIDTH`` ...), as read.
    types : mapping of str to str
        Names the file binds to numeric types (``{'f32': 'float32'}``).
    device_functions : tuple of ast.FunctionDef
        The device functions the kernel calls that were not inlined
        (compiled from their checked tree), normalised.
    notes : tuple of str
        What was set aside and never run (one line each, with the file's line).
    constant_lines : mapping of str to int
        The file's line where each constant is set.
    """

    path: str
    name: str
    tree: ast.FunctionDef
    source: str
    first_line: int
    params: tuple
    constants: Mapping[str, Any]
    types: Mapping[str, str]
    device_functions: tuple = ()
    notes: tuple = ()
    constant_lines: Mapping[str, int] = dataclasses.field(default_factory=dict)

    def uses(self, name: str) -> bool:
        """Whether the kernel (or a device function it calls) reads the name ``name``.

        Parameters
        ----------
        name : str
            A module constant's name (``TILE_WIDTH``).
        """
        trees = (self.tree, *self.device_functions)
        return any(isinstance(n, ast.Name) and n.id == name for t in trees for n in ast.walk(t))

    def namespace(self, target, constants: Mapping[str, Any] | None = None) -> dict:
        """The globals the generated code runs in: built by vizmm, nothing of the file's module.

        Parameters
        ----------
        target : module
            The process's compiler (:mod:`vizmm_kernels._target`): its
            ``cuda`` and numeric types.
        constants : mapping, optional
            Constants that override the file's (a grading case's TILE_WIDTH).

        Returns
        -------
        dict
            ``cuda``, ``math``, the numeric types, the file's constants (with
            the overrides) and the compiled device functions.
        """
        import numba

        ns: dict[str, Any] = {"cuda": target.cuda, "math": math}
        for t in TYPES:
            ns[t] = getattr(target, t, None) or getattr(numba, t)
        for alias, t in self.types.items():
            ns[alias] = ns[t]
        ns.update(self.constants)
        ns.update(dict(constants or {}))
        for fn in self.device_functions:
            code = ast.unparse(ast.fix_missing_locations(ast.Module(body=[fn], type_ignores=[])))
            exec(compile(code, f"<vizmm device function {fn.name}>", "exec"), ns)  # noqa: S102
            ns[fn.name] = target.cuda.jit(device=True)(ns[fn.name])
        return ns


# ------------------------------------------------------------------ reading
def read_kernel(path: str, name: str, constants: Mapping[str, Any] | None = None) -> KernelSource:
    """Read kernel ``name`` from the file ``path`` (parsed, checked, normalised; never run).

    Parameters
    ----------
    path : str
        A Python file (relative to the working directory or absolute), at
        most :data:`MAX_FILE_BYTES` bytes of UTF-8.
    name : str
        The ``@cuda.jit`` kernel's name.
    constants : mapping, optional
        Constants that override the file's (a grading case's TILE_WIDTH).

    Returns
    -------
    KernelSource

    Raises
    ------
    KernelRejected
        For a file that cannot be read or parsed, a name that is not a
        kernel there, or a kernel outside the CUDA Python subset (the message
        names the file's line and the construct).
    """
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        raise KernelRejected(f"kernel file {path!r} does not exist") from None
    if not stat.S_ISREG(st.st_mode):  # a directory, a FIFO, /dev/zero: never opened
        raise KernelRejected(f"kernel file {path!r} is not a regular file")
    if st.st_size > MAX_FILE_BYTES:
        raise KernelRejected(
            f"kernel file {path!r} is {st.st_size} bytes; a kernel file is at most {MAX_FILE_BYTES}"
        )
    try:
        # opened without blocking and checked again: the path may have changed since
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        with os.fdopen(fd, "rb") as f:
            if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
                raise KernelRejected(f"kernel file {path!r} is not a regular file")
            data = f.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise KernelRejected(f"kernel file {path!r} cannot be read: {exc.strerror}") from None
    if len(data) > MAX_FILE_BYTES:
        raise KernelRejected(
            f"kernel file {path!r} is over {MAX_FILE_BYTES} bytes; a kernel file is at most "
            f"{MAX_FILE_BYTES}"
        )
    try:
        # an editor's byte-order mark is no character (stripped here: the utf-8-sig codec is
        # imported on first use, which a grading case, its own user by then, may not do)
        text = data.removeprefix(b"\xef\xbb\xbf").decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise KernelRejected(
            f"{path}, line {line}: the file is not UTF-8 text (byte {exc.start}); a kernel "
            "file is Python source in UTF-8"
        ) from None
    return read_source(text, name, path=path, constants=constants)


def read_source(
    text: str,
    name: str | None = None,
    *,
    path: str = "<kernel source>",
    constants: Mapping[str, Any] | None = None,
    lenient: bool = False,
) -> KernelSource:
    """Read a kernel from Python source text (see :func:`read_kernel`).

    Parameters
    ----------
    text : str
        The whole file's text (or a kernel's alone).
    name : str, optional
        The kernel's name; None takes the file's only kernel (or, in text
        with no decorated function, its first function).
    path : str
        What messages call the text.
    constants : mapping, optional
        Constants that override (or add to) the text's.
    lenient : bool
        Text given in code (not a file): an undecorated function is the
        kernel, and ``cuda`` and the numeric types are bound without imports.

    Returns
    -------
    KernelSource
        The kernel as :func:`read_kernel` reads it from a file.

    Raises
    ------
    KernelRejected
        As :func:`read_kernel`.
    """
    if len(text) > MAX_FILE_BYTES:
        raise KernelRejected(
            f"{path} is {len(text)} characters; a kernel file is at most {MAX_FILE_BYTES}"
        )
    try:
        module = ast.parse(text, filename=path)
    except SyntaxError as exc:
        where = f", line {exc.lineno}" if exc.lineno else ""
        raise KernelRejected(f"{path}{where}: syntax error: {exc.msg}") from None
    except ValueError as exc:  # a NUL byte (Python 3.11)
        raise KernelRejected(f"{path}: syntax error: {exc}") from None
    except (RecursionError, MemoryError):
        raise KernelRejected(
            f"{path}: an expression nests too deeply for Python's parser; a kernel nests "
            f"at most {MAX_DEPTH} levels"
        ) from None
    _check_depth(module, path)
    from .frontend_reader import _Reader  # it reads this module's names

    try:
        return _Reader(module, text, path, constants, lenient).kernel(name)
    except (RecursionError, MemoryError):  # a backstop: the depth and inlining are bounded
        raise KernelRejected(
            f"{path}: the kernel is too deep or too large to read; a kernel nests at most "
            f"{MAX_DEPTH} levels"
        ) from None


def _check_depth(module: ast.Module, path: str) -> None:
    """Refuse a tree nested deeper than :data:`MAX_DEPTH` (walked without recursion)."""
    stack: list[tuple[ast.AST, int]] = [(module, 0)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise KernelRejected(
                f"{path}, line {getattr(node, 'lineno', '?')}: the code nests more than "
                f"{MAX_DEPTH} levels deep (a long chain like 1 + 1 + ... or a(b(c(...))) ); "
                "split it into steps"
            )
        stack.extend((child, depth + 1) for child in ast.iter_child_nodes(node))


def _cut(text: str, n: int = 60) -> str:
    """``text`` on one line, cut to ``n`` characters (a message is one short line)."""
    text = " ".join(str(text).split())
    return text if len(text) <= n else text[: n - 3] + "..."


def _show(text: str, n: int = 60) -> str:
    """``text`` quoted for a message, cut to ``n`` characters."""
    return repr(_cut(text, n))


def _strip_annotations(fn: ast.FunctionDef) -> None:
    """Drop a function's annotations and type comments: they are never part of the kernel."""
    for a in (*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs):
        a.annotation = None
        a.type_comment = None
    for rest in (fn.args.vararg, fn.args.kwarg):
        if rest is not None:
            rest.annotation = None
    fn.returns = None
    fn.type_comment = None


def _dotted(node: ast.AST) -> str | None:
    """``a.b.c`` for an attribute chain on a name (``cuda.threadIdx.x``), else None."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None
