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
"""

from __future__ import annotations

import ast
import copy
import dataclasses
import itertools
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


def _import_meaning(node: ast.Import | ast.ImportFrom, a: ast.alias) -> tuple[str, str]:
    """The name an import binds and what it means to the kernel (``other`` if nothing)."""
    if isinstance(node, ast.Import):
        if a.name in MODULES:
            return (a.asname or a.name.split(".")[0]), (
                f"alias:{a.name if a.asname else a.name.split('.')[0]}"
            )
        return a.asname or a.name.split(".")[0], "other"
    mod, bound = node.module or "", a.asname or a.name
    if mod not in MODULES or node.level:
        return bound, "other"
    if a.name in TYPES:
        return bound, f"type:{a.name}"
    if a.name == "cuda" and mod in ("numba", "vizmm_kernels._target"):
        return bound, "alias:numba.cuda"
    if f"{mod}.{a.name}" in MODULES or (mod == "math" and a.name in MATH):
        return bound, f"alias:{mod}.{a.name}"
    if mod == "numba.cuda" and a.name in CUDA_NAMES:
        return bound, f"alias:numba.cuda.{a.name}"
    return bound, "other"


def _dotted(node) -> str | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


class _Reader:
    """One file's module level: imports, constants, kernels and device functions."""

    def __init__(
        self,
        module: ast.Module,
        text: str,
        path: str,
        constants: Mapping[str, Any] | None = None,
        lenient: bool = False,
    ):
        self.path = path
        self.lenient = lenient
        self.lines = text.splitlines(True)
        self.aliases: dict[str, str] = {}  # a name the file binds -> its module path
        self.types: dict[str, str] = {}  # a name bound to a numeric type -> the type
        self.constants: dict[str, Any] = {}
        self.constant_lines: dict[str, int] = {}
        self.kernels: dict[str, ast.FunctionDef] = {}
        self.device: dict[str, ast.FunctionDef] = {}
        self.notes: list[str] = []
        self.plain: dict[str, ast.FunctionDef] = {}
        # what each module-level name means to vizmm, and where it was bound
        self.bound: dict[str, tuple[str, int]] = {}
        for stmt in module.body:
            self._top(stmt)
        for k, v in dict(constants or {}).items():  # the caller's (a grading case's TILE_WIDTH)
            if not (isinstance(k, str) and k.isidentifier()) or k.startswith("_") or "__" in k:
                continue
            if k in BUILTINS or k in TYPES or k in ("cuda", "math") or k in self.aliases:
                continue
            if isinstance(v, (int, float, bool)) or (
                isinstance(v, tuple) and all(isinstance(x, (int, float)) for x in v)
            ):
                self.constants[k] = v
        if lenient and not self.kernels and self.plain:  # text of one undecorated function
            first = next(iter(self.plain.values()))
            self.kernels[first.name] = first
        if lenient:
            self.aliases.setdefault("cuda", "numba.cuda")
            self.aliases.setdefault("math", "math")
        for t in TYPES:
            if lenient and t not in self.types and t not in self.constants:
                self.types.setdefault(t, t)

    def _where(self, node) -> str:
        return f"{self.path}, line {getattr(node, 'lineno', '?')}"

    def _note(self, node, what: str) -> None:
        self.notes.append(f"line {node.lineno}: {what} (set aside, not run)")

    def _bind(self, node, name: str, meaning: str) -> None:
        """Record that ``node`` binds ``name`` at module level to ``meaning``.

        A name the kernel may read (an import vizmm keeps, a numeric type, a
        constant, a kernel or device function) is bound once in one sense:
        ``cuda = something`` after ``from numba import cuda`` is refused, never
        half-followed. ``meaning`` is ``alias:...``, ``type:...``, ``constant``,
        ``kernel``, ``device``, ``plain`` or ``other`` (set aside).
        """
        used = not meaning.startswith(("plain", "other"))
        line = getattr(node, "lineno", 0)
        if (name.startswith("_") or "__" in name) and used:
            raise KernelRejected(
                f"{self.path}, line {line}: the name {_show(name)} starts with an underscore or "
                "has a double underscore, which vizmm's recorder keeps for its own names; "
                "rename it"
            )
        reserved = (
            (name in BUILTINS and "builtin")
            or (name in TYPES and meaning != f"type:{name}" and "numeric type")
            or (name == "cuda" and meaning != "alias:numba.cuda" and "numba.cuda")
            or (name == "math" and meaning != "alias:math" and "math module")
        )
        if reserved:
            raise KernelRejected(
                f"{self.path}, line {line}: {_show(name)} is the {reserved} a kernel reads; "
                "a kernel file does not bind it to anything else (rename this one)"
            )
        prev = self.bound.get(name)
        if (
            prev is not None
            and prev[0] != meaning
            and (used or not prev[0].startswith(("plain", "other")))
        ):
            raise KernelRejected(
                f"{self.path}, line {line}: {_show(name)} was bound at line {prev[1]} and is "
                "bound again here; vizmm reads the file without running it, so a name the "
                "kernel uses is bound once (rename one of them)"
            )
        self.bound[name] = (meaning, line)

    def _bind_other(self, stmt: ast.stmt) -> None:
        """Bind (as set aside) every module-level name a statement vizmm never runs binds."""
        stack: list[ast.AST] = [stmt]
        while stack:
            node = stack.pop()
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                self._bind(node, node.name, "other")
                stack.extend(node.decorator_list)
                continue  # its body's names are its own
            if isinstance(node, (ast.Lambda, ast.GeneratorExp, ast.ListComp, ast.SetComp)):
                continue
            if isinstance(node, ast.DictComp):
                continue
            if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
                self._bind(node, node.id, "other")
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                for a in node.names:
                    if a.name != "*":
                        bound, meaning = _import_meaning(node, a)
                        self._bind(node, bound, meaning)
            elif isinstance(node, ast.alias):
                pass
            elif isinstance(node, ast.ExceptHandler) and node.name:
                self._bind(node, node.name, "other")
            stack.extend(ast.iter_child_nodes(node))

    def _top(self, stmt: ast.stmt) -> None:
        if isinstance(stmt, ast.Import):
            for a in stmt.names:
                if a.name in MODULES:
                    bound = a.asname or a.name.split(".")[0]
                    target = a.name if a.asname else a.name.split(".")[0]
                    self._bind(stmt, bound, f"alias:{target}")
                    self.aliases[bound] = target
                else:
                    self._bind(stmt, a.asname or a.name.split(".")[0], "other")
                    self._note(stmt, f"import {a.name}")
            return
        if isinstance(stmt, ast.ImportFrom):
            mod = stmt.module or ""
            if mod not in MODULES or stmt.level:
                self._bind_other(stmt)
                self._note(stmt, f"from {'.' * stmt.level}{mod} import ...")
                return
            for a in stmt.names:
                bound = a.asname or a.name
                if a.name == "*":
                    self._note(stmt, f"from {mod} import *")
                elif a.name in TYPES:
                    self._bind(stmt, bound, f"type:{a.name}")
                    self.types[bound] = a.name
                elif a.name == "cuda" and mod in ("numba", "vizmm_kernels._target"):
                    self._bind(stmt, bound, "alias:numba.cuda")
                    self.aliases[bound] = "numba.cuda"
                elif f"{mod}.{a.name}" in MODULES:
                    self._bind(stmt, bound, f"alias:{mod}.{a.name}")
                    self.aliases[bound] = f"{mod}.{a.name}"
                elif mod == "math" and a.name in MATH:
                    self._bind(stmt, bound, f"alias:math.{a.name}")
                    self.aliases[bound] = f"math.{a.name}"
                elif mod == "numba.cuda" and a.name in CUDA_NAMES:
                    self._bind(stmt, bound, f"alias:numba.cuda.{a.name}")
                    self.aliases[bound] = f"numba.cuda.{a.name}"
                else:
                    self._bind(stmt, bound, "other")
                    self._note(stmt, f"from {mod} import {a.name}")
            return
        if isinstance(stmt, ast.FunctionDef):
            kind = self._decorated(stmt)
            if kind == "kernel":
                self._bind(stmt, stmt.name, "kernel")
                self.kernels[stmt.name] = stmt
            elif kind == "device":
                self._bind(stmt, stmt.name, "device")
                self.device[stmt.name] = stmt
            else:
                self._bind(stmt, stmt.name, "plain")
                self.plain[stmt.name] = stmt
                self._note(stmt, f"function {_cut(stmt.name)} (not @cuda.jit)")
            if len(self.kernels) + len(self.device) > MAX_FUNCTIONS:
                raise KernelRejected(
                    f"{self._where(stmt)}: the file defines more than {MAX_FUNCTIONS} kernels "
                    "and device functions; a kernel file is a page"
                )
            return
        if isinstance(stmt, (ast.Assign, ast.AnnAssign)):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            value = stmt.value
            if value is not None and all(isinstance(t, ast.Name) for t in targets):
                names = [t.id for t in targets]  # type: ignore[attr-defined]
                dunder = all(n.startswith("__") and n.endswith("__") for n in names)
                typ = self._type_of(value)
                if typ is not None and not dunder:
                    for n in names:
                        self._bind(stmt, n, f"type:{typ}")
                        self.types[n] = typ
                    return
                try:
                    v = self._const(value)
                except _NotConstant:
                    pass
                else:
                    if not dunder:  # __version__ = 1 is the module's, not the kernel's
                        for n in names:
                            self._bind(stmt, n, "constant")
                            self.constants[n] = v
                            self.constant_lines[n] = stmt.lineno
                        return
            self._bind_other(stmt)
            self._note(stmt, f"assignment {ast.unparse(stmt)[:60]}")
            return
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
            return  # the module's docstring
        if isinstance(stmt, ast.If) and "__name__" in ast.unparse(stmt.test):
            self._note(stmt, "the __main__ block")
            return
        self._bind_other(stmt)
        self._note(stmt, f"a {type(stmt).__name__} statement at module level")

    # -- names
    def canonical(self, node) -> str | None:
        """``cuda.x``, ``math.x``, a type name or None for a dotted name the file wrote."""
        dotted = _dotted(node)
        if dotted is None:
            return None
        head, _, rest = dotted.partition(".")
        if head in self.types and not rest:
            return self.types[head]
        if head not in self.aliases:
            return None
        full = self.aliases[head] + ("." + rest if rest else "")
        for prefix, canon in (
            ("numba.cuda.", "cuda."),
            ("numba.types.", ""),
            ("numpy.", ""),
            ("numba.", ""),
            ("math.", "math."),
        ):
            if full.startswith(prefix):
                out = canon + full[len(prefix) :]
                if canon == "" and out in TYPES:
                    return out
                if canon:
                    return out
                return None if "." in out or out not in TYPES else out
        if full == "numba.cuda":
            return "cuda"
        if full == "math":
            return "math"
        return None

    def _type_of(self, node) -> str | None:
        c = self.canonical(node)
        return c if c in TYPES else None

    def _decorated(self, fn: ast.FunctionDef) -> str | None:
        for d in fn.decorator_list:
            call = d if isinstance(d, ast.Call) else None
            target = call.func if call is not None else d
            c = self.canonical(target)
            if c != "cuda.jit":
                continue
            if len(fn.decorator_list) > 1:
                raise KernelRejected(
                    f"{self._where(fn)}: {_show(fn.name)} has {len(fn.decorator_list)} "
                    "decorators; a kernel or device function has one, @cuda.jit (the others "
                    "would never be applied here)"
                )
            device = False
            if call is not None:
                for a in [*call.args, *(kw.value for kw in call.keywords)]:
                    self._decorator_arg(fn, a)
                for kw in call.keywords:
                    if kw.arg is None:
                        raise KernelRejected(
                            f"{self._where(fn)}: @cuda.jit(**...) is outside the subset; "
                            "write its options as device=True, ..."
                        )
                    if kw.arg == "device":
                        if not (
                            isinstance(kw.value, ast.Constant) and isinstance(kw.value.value, bool)
                        ):
                            raise KernelRejected(
                                f"{self._where(fn)}: @cuda.jit(device=...) takes True or False"
                            )
                        device = kw.value.value
            return "device" if device else "kernel"
        return None

    def _decorator_arg(self, fn: ast.FunctionDef, arg: ast.expr) -> None:
        """Refuse a ``@cuda.jit(...)`` argument that is not a literal or a signature of types."""
        for n in ast.walk(arg):
            ok = isinstance(
                n,
                (ast.Tuple, ast.List, ast.Slice, ast.Subscript, ast.expr_context, ast.Call),
            ) or (
                isinstance(n, ast.Constant)
                and (n.value is None or isinstance(n.value, (bool, int, float, str)))
            )
            if isinstance(n, ast.Call):
                ok = not n.keywords and isinstance(n.func, (ast.Name, ast.Attribute))
            if isinstance(n, ast.Name):
                ok = (
                    n.id in self.types
                    or n.id in TYPES
                    or n.id == "void"
                    or (n.id in self.aliases and not n.id.startswith("_"))
                )
            if isinstance(n, ast.Attribute):
                head = _dotted(n)
                ok = head is not None and head.split(".")[0] in self.aliases
                ok = ok and not any(p.startswith("_") for p in head.split("."))  # type: ignore
            if not ok:
                raise KernelRejected(
                    f"{self._where(arg)}: the decorator of {_show(fn.name)} passes "
                    f"{_show(ast.unparse(arg))}; @cuda.jit takes literal options (device=True, "
                    "a signature string or numeric types), nothing that runs"
                )

    # -- constants
    def _const(self, node) -> Any:
        return _const_eval(node, self.constants)

    # -- the kernel
    def kernel(self, name: str | None) -> KernelSource:
        if name is None:
            if len(self.kernels) == 1:
                name = next(iter(self.kernels))
            elif not self.kernels and self.notes and self.path == "<kernel source>":
                fns = [n for n in self.notes if "function " in n]
                raise KernelRejected(
                    "no @cuda.jit kernel in the source" + (f" ({fns[0]})" if fns else "")
                )
            else:
                raise KernelRejected(
                    f"{self.path} defines {len(self.kernels)} @cuda.jit kernels; name one "
                    f"({_cut(', '.join(sorted(self.kernels)), 200) or 'none'})"
                )
        fn = self.kernels.get(name)
        if fn is None:
            if name in self.device:
                raise KernelRejected(
                    f"{self.path}: {name} is a device function (@cuda.jit(device=True)); "
                    "name the kernel that launches"
                )
            plain = [n for n in self.notes if f"function {name} " in n]
            pf = self.plain.get(name)
            jit = [
                d
                for d in (pf.decorator_list if pf else [])
                if (_dotted(d.func if isinstance(d, ast.Call) else d) or "").endswith("cuda.jit")
            ]
            if jit:
                raise KernelRejected(
                    f"{self._where(jit[0])}: {name} is decorated {_cut(ast.unparse(jit[0]), 40)} "
                    "but the file does not import cuda at its top level (an import inside try "
                    "or if is set aside, never run); write 'from numba import cuda' at the top"
                )
            if plain:
                raise KernelRejected(
                    f"{self.path}: {name} is a plain Python function (no @cuda.jit); a kernel "
                    "is decorated @cuda.jit"
                )
            found = sorted(self.kernels)
            raise KernelRejected(
                f"{self.path} has no kernel named {_show(name, 40)}"
                + (
                    f"; kernels there: {_cut(', '.join(found), 200)}"
                    if found
                    else "; it defines no kernel"
                )
            )
        first = min([fn.lineno, *(d.lineno for d in fn.decorator_list)])
        end = fn.end_lineno or fn.lineno
        source = "".join(self.lines[first - 1 : end])
        checker = _Checker(self, first)
        tree = checker.kernel(fn)
        return KernelSource(
            path=self.path,
            name=name,
            tree=tree,
            source=source,
            first_line=first,
            params=tuple(a.arg for a in fn.args.args),
            constants=dict(self.constants),
            types=dict(self.types),
            device_functions=tuple(checker.compiled.values()),
            notes=tuple(self.notes),
            constant_lines=dict(self.constant_lines),
        )


class _NotConstant(Exception):
    pass


def _const_eval(node, env: Mapping[str, Any]) -> Any:
    """The value of a constant expression of numbers, names of ``env`` and tuples (no ``eval``)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float, bool)):
        if isinstance(node.value, int) and abs(node.value) > MAX_CONSTANT:
            raise _NotConstant
        return node.value
    if isinstance(node, ast.Name) and node.id in env:
        return env[node.id]
    if isinstance(node, ast.Tuple):
        return tuple(_const_eval(e, env) for e in node.elts)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd, ast.Not)):
        v = _const_eval(node.operand, env)
        if isinstance(v, tuple):
            raise _NotConstant
        return (
            -v
            if isinstance(node.op, ast.USub)
            else (+v if isinstance(node.op, ast.UAdd) else not v)
        )
    if isinstance(node, ast.BinOp) and isinstance(node.op, _OPS):
        a, b = _const_eval(node.left, env), _const_eval(node.right, env)
        if isinstance(a, tuple) or isinstance(b, tuple):
            raise _NotConstant
        if isinstance(node.op, ast.Pow) and (abs(b) > 64 or abs(a) > MAX_CONSTANT):
            raise _NotConstant
        if isinstance(node.op, ast.LShift) and not 0 <= b <= 62:
            raise _NotConstant
        try:
            v = _BINOPS[type(node.op)](a, b)
        except (ArithmeticError, ValueError, TypeError):
            raise _NotConstant from None
        if isinstance(v, int) and abs(v) > MAX_CONSTANT:
            raise _NotConstant
        return v
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in ("int", "float", "min", "max", "abs")
        and not node.keywords
    ):
        args = [_const_eval(a, env) for a in node.args]
        if any(isinstance(a, tuple) for a in args) or not args:
            raise _NotConstant
        fns: dict[str, Any] = {"int": int, "float": float, "min": min, "max": max, "abs": abs}
        try:
            return fns[node.func.id](*args)
        except (TypeError, ValueError, OverflowError):
            raise _NotConstant from None
    raise _NotConstant


_BINOPS = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
    ast.Div: lambda a, b: a / b,
    ast.FloorDiv: lambda a, b: a // b,
    ast.Mod: lambda a, b: a % b,
    ast.Pow: lambda a, b: a**b,
    ast.LShift: lambda a, b: a << b,
    ast.RShift: lambda a, b: a >> b,
    ast.BitOr: lambda a, b: a | b,
    ast.BitXor: lambda a, b: a ^ b,
    ast.BitAnd: lambda a, b: a & b,
}


# ------------------------------------------------------------------ checking
class _Checker:
    """Checks a kernel (and the device functions it calls) against the subset; normalises it."""

    def __init__(self, reader: _Reader, first_line: int):
        self.r = reader
        self.first = first_line
        self.compiled: dict[str, ast.FunctionDef] = {}
        self.inline_n = itertools.count()
        self.pending: list[ast.stmt] = []  # statements an expression's inlined call needs first
        self.hoist = True  # off in a while loop's test (evaluated every turn)
        self.shared_bytes = 0  # the block's static shared memory so far
        self.local_bytes = 0  # a thread's local arrays so far
        self.calls: dict[str, list[str]] | None = None
        self.acyclic: set[str] = set()  # device functions that do not call themselves
        self.inlined = 0
        # every name the file writes: an inlined function's locals get names none of these
        self.taken = set(reader.constants) | set(reader.device) | set(reader.kernels)
        for f in (*reader.kernels.values(), *reader.device.values()):
            self.taken.update(n.id for n in ast.walk(f) if isinstance(n, ast.Name))

    def fail(self, node, what: str) -> KernelRejected:
        return KernelRejected(f"{self.r._where(node)}: {what}")

    # -- the whole kernel
    def kernel(self, fn: ast.FunctionDef) -> ast.FunctionDef:
        fn = copy.deepcopy(fn)
        self._signature(fn)
        body = self.block(fn.body, _Scope(self, fn, kernel=True))
        # shared and local arrays first (their shapes are constants, their storage the
        # block's or the thread's for the whole kernel): where a student declares them,
        # among the first statements or inside a loop or a branch, makes no difference
        decl: list[ast.stmt] = []
        body = _hoist_arrays(body, decl)
        fn.body = decl + body or [ast.Pass()]
        fn.decorator_list = []
        ast.fix_missing_locations(fn)
        ast.increment_lineno(fn, -(self.first - 1))  # lines count within the source
        return fn

    def _signature(self, fn: ast.FunctionDef) -> None:
        a = fn.args
        if a.vararg or a.kwarg or a.kwonlyargs or a.posonlyargs or a.defaults or a.kw_defaults:
            raise self.fail(
                fn,
                f"kernel {_show(fn.name)} takes *args, **kwargs, keyword-only parameters or "
                "defaults; a kernel takes plain positional parameters",
            )
        for p in a.args:
            self._name_ok(p, p.arg)
        _strip_annotations(fn)

    def _name_ok(self, node, name: str) -> None:
        """Refuse a parameter or local name vizmm keeps, or one that hides what a kernel reads."""
        if (name.startswith("_") and name != "_") or "__" in name:
            raise self.fail(
                node,
                f"the name {_show(name)} starts with an underscore or has a double underscore, "
                "which vizmm's recorder keeps for its own names; rename it",
            )
        r = self.r
        if (
            name in BUILTINS
            or name in TYPES
            or name in ("cuda", "math")
            or name in r.aliases
            or name in r.types
            or name in r.device
            or name in r.kernels
        ):
            raise self.fail(
                node,
                f"the name {_show(name)} hides the {name} a kernel reads (a builtin, a numeric "
                "type, an import or a function of the file); rename it",
            )

    # -- statements
    def block(self, stmts: list[ast.stmt], scope: _Scope) -> list[ast.stmt]:
        out: list[ast.stmt] = []
        for i, st in enumerate(stmts):
            if (
                i == 0
                and isinstance(st, ast.Expr)
                and isinstance(st.value, ast.Constant)
                and isinstance(st.value.value, str)
            ):
                continue  # a docstring
            saved, self.pending = self.pending, []
            try:
                got = self.stmt(st, scope)
                out.extend(self.pending + got)  # an inlined device function's body first
            finally:
                self.pending = saved
        return out

    def stmt(self, st: ast.stmt, scope: _Scope) -> list[ast.stmt]:
        if not isinstance(st, _STMTS):
            raise self.fail(
                st,
                f"a {type(st).__name__.lower()} statement is outside the CUDA Python subset a "
                "kernel may use (assignments, for ... in range, while, if, break, continue, "
                "return, calls)",
            )
        if isinstance(st, ast.Expr):
            if isinstance(st.value, ast.Constant) and isinstance(st.value.value, str):
                return []  # a string as a comment
            if not isinstance(st.value, ast.Call):
                raise self.fail(st, f"the expression {ast.unparse(st)[:60]} does nothing")
            func = st.value.func
            if (
                isinstance(func, ast.Name)
                and func.id == "print"
                and "print" not in scope.locals
                and "print" not in scope.params
            ):
                # a student's debugging print (device printf): what the kernel stores is the
                # same without it; set aside, never run (its text is never echoed)
                self.r.notes.append(f"line {st.lineno}: print(...) in the kernel (set aside)")
                return []
            inlined = self.inline_call(st.value, scope, statement=True)
            if inlined is not None:
                return inlined
            return [ast.copy_location(ast.Expr(self.expr(st.value, scope)), st)]
        if isinstance(st, ast.AnnAssign):
            if st.value is None or not isinstance(st.target, ast.Name):
                raise self.fail(st, "an annotation without a value declares nothing in a kernel")
            st = ast.copy_location(ast.Assign(targets=[st.target], value=st.value), st)
        if isinstance(st, ast.Assign):
            value = self.rhs(st.value, scope, st)
            targets = [self.target(t, scope) for t in st.targets]
            if len(targets) > 1:  # a = b = v
                out: list[ast.stmt] = []
                for t in targets:
                    out.append(
                        ast.copy_location(ast.Assign(targets=[t], value=copy.deepcopy(value)), st)
                    )
                return out
            return [ast.copy_location(ast.Assign(targets=targets, value=value), st)]
        if isinstance(st, ast.AugAssign):
            if not isinstance(st.op, _OPS):
                raise self.fail(st, "this augmented assignment is outside the subset")
            value = self.expr(st.value, scope)
            if isinstance(st.target, ast.Subscript):
                target = self.target(st.target, scope)
                load = copy.deepcopy(target)
                for n in ast.walk(load):
                    if isinstance(n, ast.Subscript):
                        n.ctx = ast.Load()
                new = ast.BinOp(left=load, op=st.op, right=value)
                return [ast.copy_location(ast.Assign(targets=[target], value=new), st)]
            if not isinstance(st.target, ast.Name):
                raise self.fail(st, "assign to a name or one array element")
            self._name_ok(st.target, st.target.id)
            scope.use(st.target)
            scope.assign(st.target.id)
            return [ast.copy_location(ast.AugAssign(target=st.target, op=st.op, value=value), st)]
        if isinstance(st, ast.For):
            it = st.iter
            if not (
                isinstance(it, ast.Call)
                and isinstance(it.func, ast.Name)
                and it.func.id == "range"
                and it.func.id not in scope.locals
                and 1 <= len(it.args) <= 3
                and not it.keywords
            ):
                raise self.fail(
                    st, "a kernel's for loop runs over range(...) (a start, stop and step)"
                )
            if not isinstance(st.target, ast.Name):
                raise self.fail(st, "a for loop's variable is one name")
            if st.orelse:
                raise self.fail(st, "a for loop's else is outside the subset")
            args = [self.expr(a, scope) for a in it.args]
            self._name_ok(st.target, st.target.id)
            scope.assign(st.target.id)
            new_it = ast.copy_location(ast.Call(func=it.func, args=args, keywords=[]), it)
            return [
                ast.copy_location(
                    ast.For(
                        target=st.target,
                        iter=new_it,
                        body=self.block(st.body, scope) or [ast.Pass()],
                        orelse=[],
                        type_comment=None,
                    ),
                    st,
                )
            ]
        if isinstance(st, ast.While):
            if st.orelse:
                raise self.fail(st, "a while loop's else is outside the subset")
            self.hoist = False
            try:
                test = self.expr(st.test, scope)
            finally:
                self.hoist = True
            return [
                ast.copy_location(
                    ast.While(
                        test=test,
                        body=self.block(st.body, scope) or [ast.Pass()],
                        orelse=[],
                    ),
                    st,
                )
            ]
        if isinstance(st, ast.If):
            return [
                ast.copy_location(
                    ast.If(
                        test=self.expr(st.test, scope),
                        body=self.block(st.body, scope) or [ast.Pass()],
                        orelse=self.block(st.orelse, scope),
                    ),
                    st,
                )
            ]
        if isinstance(st, ast.Return):
            if st.value is not None and not (
                isinstance(st.value, ast.Constant) and st.value.value is None
            ):
                if scope.kernel:
                    raise self.fail(st, "a kernel returns nothing (it stores into P)")
                return [ast.copy_location(ast.Return(self.expr(st.value, scope)), st)]
            return [ast.copy_location(ast.Return(value=None), st)]
        return [st]  # pass, break, continue

    def target(self, t, scope: _Scope):
        if isinstance(t, ast.Name):
            self._name_ok(t, t.id)
            if t.id in scope.arrays and t.id in scope.params:
                raise self.fail(t, f"{t.id} is an array parameter; store into its elements")
            scope.assign(t.id)
            return t
        if isinstance(t, ast.Tuple):
            return ast.copy_location(
                ast.Tuple(elts=[self.target(e, scope) for e in t.elts], ctx=ast.Store()), t
            )
        if isinstance(t, ast.Subscript):
            sub = self.subscript(t, scope)
            sub.ctx = ast.Store()
            return sub
        raise self.fail(t, f"cannot assign to {ast.unparse(t)[:40]} in a kernel")

    def rhs(self, value, scope: _Scope, st):
        """The value of an assignment: an array declaration, or an expression."""
        call = value if isinstance(value, ast.Call) else None
        c = self.r.canonical(call.func) if call is not None else None
        if call is not None and c in ("cuda.shared.array", "cuda.local.array"):
            if len(getattr(st, "targets", [])) != 1 or not isinstance(st.targets[0], ast.Name):
                raise self.fail(st, f"assign {c}(...) to one name")
            return self.array_decl(call, c, st.targets[0].id, scope)
        return self.expr(value, scope)

    def array_decl(self, call: ast.Call, c: str, name: str, scope: _Scope) -> ast.Call:
        args: dict[str, ast.expr] = {}
        for key, a in zip(("shape", "dtype"), call.args, strict=False):
            args[key] = a
        if len(call.args) > 2:
            raise self.fail(call, f"{c} takes a shape and a dtype")
        for kw in call.keywords:
            if kw.arg not in ("shape", "dtype") or kw.arg in args:
                raise self.fail(call, f"{c} takes shape= and dtype= (got {kw.arg}=)")
            args[kw.arg] = kw.value
        if "shape" not in args:
            raise self.fail(call, f"{c} needs a shape: {c}(shape, dtype)")
        for n in ast.walk(args["shape"]):
            if isinstance(n, ast.Name) and (n.id in scope.locals or n.id in scope.params):
                raise self.fail(
                    call,
                    f"the shape of {name} reads {n.id}, a variable of the kernel; the shape must "
                    "be a constant: numbers and the file's module-level constants",
                )
        try:
            shape = _const_eval(args["shape"], self.r.constants)
        except _NotConstant:
            raise self.fail(
                call,
                f"the shape of {name} ({ast.unparse(args['shape'])}) must be a constant: "
                "numbers and the file's module-level constants",
            ) from None
        shape_t = shape if isinstance(shape, tuple) else (shape,)
        if not all(isinstance(s, int) and not isinstance(s, bool) and s >= 0 for s in shape_t):
            raise self.fail(call, f"the shape of {name} must be whole numbers >= 0, got {shape}")
        if len(shape_t) > 3 or (len(shape_t) == 3 and c == "cuda.local.array" and False):
            raise self.fail(call, f"{name} has {len(shape_t)} dimensions; at most 3")
        dtype = args.get("dtype")
        dname = "float32"
        if dtype is not None:
            t = self.r._type_of(dtype)
            if t is None:
                raise self.fail(
                    call, f"the dtype of {name} must be a numeric type (float32, int32 ...)"
                )
            dname = t
        nbytes = math.prod(shape_t) * ITEMSIZE[dname]
        if c == "cuda.shared.array":
            self.shared_bytes += nbytes
            if self.shared_bytes > MAX_SHARED_BYTES:
                raise self.fail(
                    call,
                    f"the shared array {name} {shape} of {dname} takes {nbytes} bytes, "
                    f"{self.shared_bytes} with the block's other shared arrays; a block "
                    f"declares at most {MAX_SHARED_BYTES} bytes (48 KiB) of shared memory",
                )
        else:
            self.local_bytes += nbytes
            if self.local_bytes > MAX_LOCAL_BYTES:
                raise self.fail(
                    call,
                    f"the local array {name} {shape} of {dname} takes {nbytes} bytes, "
                    f"{self.local_bytes} with the thread's other local arrays; a thread's local "
                    f"arrays take at most {MAX_LOCAL_BYTES} bytes",
                )
        scope.arrays[name] = shape_t
        scope.locals.add(name)
        if c == "cuda.shared.array":
            scope.shared.add(name)
        # the shape as numbers: a GPU's compiler takes literal sizes only (2 * TILE_WIDTH is
        # an int64 to numba, not a constant); overridden constants are read before this
        shape_node: ast.expr
        if len(shape_t) == 3:  # (D, R, C) -> (D * R, C), indexed [d * R + r, c]
            scope.fold[name] = ast.Constant(shape_t[1])
            shape_node = ast.Tuple(
                elts=[ast.Constant(shape_t[0] * shape_t[1]), ast.Constant(shape_t[2])],
                ctx=ast.Load(),
            )
        elif len(shape_t) == 1 and not isinstance(args["shape"], ast.Tuple):
            shape_node = ast.Constant(shape_t[0])
        else:
            shape_node = ast.Tuple(elts=[ast.Constant(v) for v in shape_t], ctx=ast.Load())
        space = c.split(".")[1]
        func = ast.Attribute(
            value=ast.Attribute(value=ast.Name("cuda", ast.Load()), attr=space, ctx=ast.Load()),
            attr="array",
            ctx=ast.Load(),
        )
        return ast.copy_location(
            ast.Call(func=func, args=[shape_node, ast.Name(dname, ast.Load())], keywords=[]),
            call,
        )

    # -- expressions
    def subscript(self, node: ast.Subscript, scope: _Scope) -> ast.Subscript:
        """``A[i][j]`` / ``A[i, j]`` / ``A[d, r, c]`` of a known array, as one tuple subscript."""
        idx: list[ast.expr] = []
        base: ast.expr = node
        while isinstance(base, ast.Subscript):
            sl = base.slice
            if isinstance(sl, ast.Tuple):
                idx[:0] = list(sl.elts)
            else:
                idx.insert(0, sl)
            base = base.value
        if (
            isinstance(base, ast.Attribute)
            and base.attr == "shape"
            and isinstance(base.value, ast.Name)
        ):
            if base.value.id not in scope.arrays and base.value.id not in scope.params:
                raise self.fail(node, f"{base.value.id} is not an array")
            if len(idx) != 1:
                raise self.fail(node, "index an array's shape with one number")
            return ast.copy_location(
                ast.Subscript(value=base, slice=self.expr(idx[0], scope), ctx=ast.Load()), node
            )
        if not isinstance(base, ast.Name):
            raise self.fail(node, f"subscript an array by its name, not {ast.unparse(base)[:40]}")
        name = base.id
        if name not in scope.params and name not in scope.arrays:
            if name in scope.locals:
                raise self.fail(node, f"{name} is not an array")
            raise self.fail(node, f"name {_show(name, 40)} is not defined in the kernel")
        scope.params_used_as_arrays.add(name) if name in scope.params else None
        for e in idx:
            if isinstance(e, ast.Slice):
                if len(idx) != 1:
                    raise self.fail(node, "slice one dimension of a shared array only")
                lower = None if e.lower is None else self.expr(e.lower, scope)
                upper = None if e.upper is None else self.expr(e.upper, scope)
                if e.step is not None:
                    raise self.fail(node, "a slice with a step is outside the subset")
                return ast.copy_location(
                    ast.Subscript(value=base, slice=ast.Slice(lower, upper, None), ctx=ast.Load()),
                    node,
                )
            if isinstance(e, ast.Starred):
                raise self.fail(node, "a starred index is outside the subset")
        elems = [self.expr(e, scope) for e in idx]
        fold = scope.fold.get(name)
        if fold is not None and len(elems) == 3:
            elems = [
                ast.BinOp(
                    left=ast.BinOp(left=elems[0], op=ast.Mult(), right=copy.deepcopy(fold)),
                    op=ast.Add(),
                    right=elems[1],
                ),
                elems[2],
            ]
        shape = scope.arrays.get(name)
        if shape is not None and len(shape) != len(idx) and not (fold and len(idx) == 3):
            raise self.fail(
                node,
                f"{name} has {len(shape)} dimension(s) but is indexed with {len(idx)} "
                f"({ast.unparse(node)})",
            )
        sl = elems[0] if len(elems) == 1 else ast.Tuple(elts=elems, ctx=ast.Load())
        return ast.copy_location(ast.Subscript(value=base, slice=sl, ctx=ast.Load()), node)

    def expr(self, node, scope: _Scope):
        if isinstance(node, ast.Constant):
            if isinstance(node.value, (int, float, bool)):
                if isinstance(node.value, int) and abs(node.value) >= 1 << 64:
                    raise self.fail(
                        node, "an integer of more than 64 bits is outside what a GPU computes"
                    )
                return node
            raise self.fail(
                node,
                f"a {type(node.value).__name__} constant is outside the subset "
                f"({_show(ast.unparse(node), 30)}; a kernel computes with int, float and bool)",
            )
        if isinstance(node, ast.Name):
            return self.name(node, scope)
        if isinstance(node, ast.Attribute):
            return self.attribute(node, scope)
        if isinstance(node, ast.Subscript):
            return self.subscript(node, scope)
        if isinstance(node, ast.BinOp):
            if not isinstance(node.op, _OPS):
                raise self.fail(
                    node, f"the operator {ast.unparse(node)[:40]} is outside the subset"
                )
            self._bounded(node, scope)
            return ast.copy_location(
                ast.BinOp(self.expr(node.left, scope), node.op, self.expr(node.right, scope)), node
            )
        if isinstance(node, ast.UnaryOp):
            return ast.copy_location(ast.UnaryOp(node.op, self.expr(node.operand, scope)), node)
        if isinstance(node, ast.BoolOp):
            return ast.copy_location(
                ast.BoolOp(node.op, [self.expr(v, scope) for v in node.values]), node
            )
        if isinstance(node, ast.Compare):
            if any(isinstance(o, (ast.In, ast.NotIn, ast.Is, ast.IsNot)) for o in node.ops):
                raise self.fail(node, "compare numbers with < <= == != >= > in a kernel")
            return ast.copy_location(
                ast.Compare(
                    self.expr(node.left, scope),
                    node.ops,
                    [self.expr(c, scope) for c in node.comparators],
                ),
                node,
            )
        if isinstance(node, ast.IfExp):
            return ast.copy_location(
                ast.IfExp(
                    self.expr(node.test, scope),
                    self.expr(node.body, scope),
                    self.expr(node.orelse, scope),
                ),
                node,
            )
        if isinstance(node, ast.Tuple):
            return ast.copy_location(
                ast.Tuple([self.expr(e, scope) for e in node.elts], ast.Load()), node
            )
        if isinstance(node, ast.Call):
            inlined = self.inline_call(node, scope, statement=False)
            if inlined is not None:
                return inlined
            return self.call(node, scope)
        raise self.fail(
            node,
            f"{ast.unparse(node)[:50]} ({type(node).__name__}) is outside the CUDA Python subset "
            "a kernel may use",
        )

    def _constant_shaped(self, node, scope: _Scope) -> bool:
        """Whether ``node`` is numbers and the file's constants only (no kernel variable)."""
        for n in ast.walk(node):
            if isinstance(n, ast.Name):
                if n.id not in self.r.constants or n.id in scope.locals or n.id in scope.params:
                    return False
            elif not isinstance(
                n, (ast.Constant, ast.BinOp, ast.UnaryOp, ast.operator, ast.unaryop, ast.Load)
            ):
                return False
        return True

    def _bounded(self, node: ast.BinOp, scope: _Scope) -> None:
        """Refuse arithmetic on constants whose value no GPU holds (``10 ** 10 ** 10``).

        Evaluated here (by :func:`_const_eval`, bounded), never by Python: the
        simulator, numba's constant folding and the recorder's bounds would.
        """
        right = node.right
        if isinstance(node.op, (ast.Pow, ast.LShift)) and self._constant_shaped(right, scope):
            try:
                b = _const_eval(right, self.r.constants)
            except _NotConstant:
                b = None
            big = b is None or isinstance(b, tuple)
            if not big and isinstance(node.op, ast.Pow):
                big = abs(b) > 64
            elif not big:
                big = not 0 <= b <= 63
            if big:
                raise self.fail(
                    node,
                    f"{_cut(ast.unparse(node), 40)}: an exponent above 64 or a shift outside "
                    "0..63 is beyond the 64-bit numbers a kernel computes",
                )
        if self._constant_shaped(node, scope):
            try:
                v = _const_eval(node, self.r.constants)
            except _NotConstant:
                v = None
            if v is None or isinstance(v, tuple):
                raise self.fail(
                    node,
                    f"{_cut(ast.unparse(node), 40)} is no number a kernel computes (beyond "
                    f"{MAX_CONSTANT}, a division by zero or a tuple)",
                )

    def name(self, node: ast.Name, scope: _Scope):
        n = node.id
        if n in scope.locals or n in scope.params:
            return node
        if n in self.r.constants:
            return node
        if n in self.r.types:
            return ast.copy_location(ast.Name(self.r.types[n], ast.Load()), node)
        if n in TYPES or n in BUILTINS:
            return node
        if n in self.r.aliases:
            raise self.fail(node, f"the module {n} cannot be used as a value in a kernel")
        raise self.fail(
            node,
            f"name {_show(n, 40)} is not defined in the kernel (a kernel reads its parameters, "
            "its own variables and the file's module-level constants)",
        )

    def attribute(self, node: ast.Attribute, scope: _Scope):
        c = self.r.canonical(node)
        if c is not None:
            parts = c.split(".")
            if c in TYPES:
                return ast.copy_location(ast.Name(c, ast.Load()), node)
            if (
                parts[0] == "cuda"
                and len(parts) == 3
                and parts[1] in CUDA_DIMS
                and parts[2] in ("x", "y", "z")
            ):
                return ast.copy_location(ast.parse(c, mode="eval").body, node)
            if c in ("cuda.laneid", "cuda.warpsize") or c in MATH_VALUES:
                return ast.copy_location(ast.parse(c, mode="eval").body, node)
            raise self.fail(node, f"{_cut(ast.unparse(node))} is not a value a kernel can read")
        if isinstance(node.value, ast.Name) and node.attr in ("shape", "size", "ndim"):
            v = node.value.id
            if v in scope.params or v in scope.arrays:
                return node
        if isinstance(node.value, ast.Subscript) or isinstance(node.value, ast.Name):
            pass
        raise self.fail(
            node,
            f"the attribute {ast.unparse(node)[:50]} is outside the subset (a kernel reads "
            "cuda.threadIdx/blockIdx/blockDim/gridDim .x/.y/.z and an array's shape)",
        )

    def call(self, node: ast.Call, scope: _Scope):
        if any(isinstance(a, ast.Starred) for a in node.args) or any(
            k.arg is None for k in node.keywords
        ):
            raise self.fail(node, "*args and **kwargs are outside the subset")
        args = [self.expr(a, scope) for a in node.args]
        keywords = [ast.keyword(k.arg, self.expr(k.value, scope)) for k in node.keywords]
        func = node.func
        c = self.r.canonical(func)
        if isinstance(func, ast.Name) and c is None:
            n = func.id
            if n in scope.locals or n in scope.params:
                raise self.fail(node, f"{n} is not a function")
            if n in BUILTINS or n in TYPES:
                if keywords:
                    raise self.fail(node, f"{n}() takes no keywords in a kernel")
                return ast.copy_location(ast.Call(func, args, []), node)
            if n in self.r.types:
                return ast.copy_location(
                    ast.Call(ast.Name(self.r.types[n], ast.Load()), args, []), node
                )
            if n in self.r.device:
                self.compile_device(n, node)
                return ast.copy_location(ast.Call(ast.Name(n, ast.Load()), args, keywords), node)
            if n in self.r.kernels:
                raise self.fail(node, f"{n} is a kernel; a kernel calls device functions only")
            raise self.fail(node, f"{_cut(n, 40)}() is not a function a kernel may call")
        if c is None:
            raise self.fail(node, f"{ast.unparse(func)[:50]}() is not a function a kernel may call")
        parts = c.split(".")
        ok = (
            c in TYPES
            or (parts[0] == "cuda" and len(parts) == 2 and parts[1] in CUDA_CALLS)
            or (
                parts[0] == "cuda"
                and len(parts) == 3
                and parts[1] == "atomic"
                and parts[2] in CUDA_ATOMICS
            )
            or (parts[0] == "math" and len(parts) == 2 and parts[1] in MATH)
        )
        if c in ("cuda.shared.array", "cuda.local.array"):
            raise self.fail(node, f"assign {c}(...) to a name of its own (Mds = {c}(...))")
        if not ok:
            raise self.fail(node, f"{_cut(ast.unparse(func))}() is outside the CUDA Python subset")
        if parts[0] == "cuda" and len(parts) == 3 and parts[1] == "atomic":
            first = node.args[0] if node.args else None
            if not (
                isinstance(first, ast.Name)
                and (first.id in scope.arrays or first.id in scope.params)
            ):
                raise self.fail(
                    node,
                    f"{c}() updates an element of an array: {c}(array, index, value)",
                )
        newf = ast.parse(c, mode="eval").body
        return ast.copy_location(ast.Call(newf, args, keywords), node)

    # -- device functions
    def _calls(self) -> dict[str, list[str]]:
        return {
            f: sorted(
                {
                    n.func.id
                    for n in ast.walk(fn)
                    if isinstance(n, ast.Call)
                    and isinstance(n.func, ast.Name)
                    and n.func.id in self.r.device
                }
            )
            for f, fn in self.r.device.items()
        }

    def _cycle(self, name: str) -> list[str] | None:
        """A chain of calls from device function ``name`` back to itself, or None."""
        if self.calls is None:  # the device functions' call graph, built once
            self.calls = self._calls()
        calls = self.calls
        stack: list[tuple[str, list[str]]] = [(name, [name])]
        seen: set[str] = set()
        while stack:
            f, path = stack.pop()
            for g in calls.get(f, ()):
                if g == name:
                    return [*path, g]
                if g not in seen:
                    seen.add(g)
                    stack.append((g, [*path, g]))
        return None

    def _device_checked(self, name: str, at=None) -> ast.FunctionDef:
        cycle = self._cycle(name) if name not in self.acyclic else None
        if cycle is None:
            self.acyclic.add(name)
        else:
            chain = " -> ".join(cycle)
            raise self.fail(
                at if at is not None else self.r.device[name],
                f"device function {name} calls itself ({chain}); recursion is outside the "
                "subset (write it as a loop)",
            )
        fn = copy.deepcopy(self.r.device[name])
        a = fn.args
        if a.vararg or a.kwarg or a.kwonlyargs or a.posonlyargs or a.defaults or a.kw_defaults:
            raise self.fail(fn, f"device function {name} takes plain positional parameters only")
        for p in a.args:
            self._name_ok(p, p.arg)
        _strip_annotations(fn)
        return fn

    def compile_device(self, name: str, at=None) -> None:
        if name in self.compiled:
            return
        fn = self._device_checked(name, at)
        scope = _Scope(self, fn, kernel=False)
        fn.body = self.block(fn.body, scope) or [ast.Pass()]
        fn.decorator_list = []
        self.compiled[name] = ast.fix_missing_locations(fn)

    def inline_call(self, node: ast.Call, scope: _Scope, statement: bool):
        """A device function's body at its call, where it is one return or a procedure."""
        func = node.func
        if not (isinstance(func, ast.Name) and func.id in self.r.device) or func.id in scope.locals:
            return None
        fn = self._device_checked(func.id, node)
        self.inlined += 1
        if self.inlined > MAX_INLINED:
            raise self.fail(
                node,
                f"the kernel's device-function calls expand to more than {MAX_INLINED} inlined "
                "bodies (calls within calls); compute intermediate values in variables",
            )
        return self._inline(node, fn, scope, statement)

    def _inline(self, node: ast.Call, fn: ast.FunctionDef, scope: _Scope, statement: bool):
        func = node.func
        assert isinstance(func, ast.Name)
        body = [
            s
            for i, s in enumerate(fn.body)
            if not (i == 0 and isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))
        ]
        params = [p.arg for p in fn.args.args]
        if node.keywords or len(node.args) != len(params):
            raise self.fail(node, f"{func.id}() takes {len(params)} positional argument(s)")
        returns = [
            n for n in ast.walk(ast.Module(body=body, type_ignores=[])) if isinstance(n, ast.Return)
        ]
        simple = len(body) == 1 and isinstance(body[0], ast.Return) and body[0].value is not None
        procedure = (
            statement
            and not returns
            and not any(
                isinstance(n, (ast.FunctionDef,))
                for n in ast.walk(ast.Module(body=body, type_ignores=[]))
            )
        )
        hoisted = None
        if not (simple or procedure):
            if not self.hoist:
                return None
            hoisted = _returns_to(body, f"{func.id}_result")
            if hoisted is None:
                return None  # a return inside a loop: the device function is compiled and called
        mapping: dict[str, ast.expr] = {}
        pre: list[ast.stmt] = []
        own = {
            t.id
            for s in body
            for t in ast.walk(s)
            if isinstance(t, ast.Name) and isinstance(t.ctx, ast.Store) and t.id not in params
        }
        fresh = [*params, *own, f"{func.id}_result"]
        n = next(self.inline_n)
        while any(f"{func.id}_{v}_{n}" in self.taken for v in fresh):
            n = next(self.inline_n)  # a name the student wrote: skip it
        self.taken.update(f"{func.id}_{v}_{n}" for v in fresh)
        # a parameter the body assigns is the function's own copy (Python passes by value):
        # it never stands for the caller's variable or a literal
        rebound = {
            t.id
            for s in body
            for t in ast.walk(s)
            if isinstance(t, ast.Name) and isinstance(t.ctx, ast.Store) and t.id in params
        }
        for p, arg in zip(params, node.args, strict=True):
            if p in rebound and not simple:
                tmp = f"{func.id}_{p}_{n}"
                pre.append(ast.Assign(targets=[ast.Name(tmp, ast.Store())], value=arg))
                mapping[p] = ast.Name(tmp, ast.Load())
            elif isinstance(arg, ast.Name) and (
                arg.id in scope.arrays or arg.id in scope.params or arg.id in self.r.constants
            ):
                mapping[p] = arg
            elif isinstance(arg, (ast.Constant,)):
                mapping[p] = arg
            elif simple:
                mapping[p] = arg  # an expression: substituted (the subset's expressions are pure)
            else:
                tmp = f"{func.id}_{p}_{n}"
                pre.append(ast.Assign(targets=[ast.Name(tmp, ast.Store())], value=arg))
                mapping[p] = ast.Name(tmp, ast.Load())
        # locals of a procedure get names of their own
        if hoisted is not None:
            body = hoisted
            own.add(f"{func.id}_result")
        for o in own:
            mapping[o] = ast.Name(f"{func.id}_{o}_{n}", ast.Load())
        # a name the body reads that is neither its own nor the file's is no name at all
        # (Python would not find it); inlined, it must not become the kernel's variable
        r = self.r
        for v in ast.walk(ast.Module(body=body, type_ignores=[])):
            if not isinstance(v, ast.Name) or v.id in mapping:
                continue
            known = (
                v.id in r.constants
                or v.id in r.types
                or v.id in r.device
                or v.id in r.aliases
                or v.id in TYPES
                or v.id in BUILTINS
            )
            if not known or v.id in scope.locals or v.id in scope.params:
                raise self.fail(
                    v if known else node,
                    f"device function {func.id} reads {_show(v.id, 40)}, which is not defined "
                    "there (a device function reads its parameters, its own variables and the "
                    "file's module-level constants)",
                )
        sub = _Substitute(mapping)
        line = node.lineno
        if simple:
            ret = body[0]
            assert isinstance(ret, ast.Return) and ret.value is not None
            e = sub.visit(copy.deepcopy(ret.value))
            _relocate(e, node)
            return self.expr(e, scope)
        stmts = pre + [sub.visit(copy.deepcopy(s)) for s in body]
        for s in stmts:
            _relocate(s, node)
        del line
        if hoisted is not None:  # the body before the statement, its result in a local
            self.pending.extend(self.block(stmts, scope))
            res = ast.Name(f"{func.id}_{func.id}_result_{n}", ast.Load())
            return ast.copy_location(res, node)
        return self.block(stmts, scope)


def _is_array_decl(st) -> bool:
    return (
        isinstance(st, ast.Assign)
        and isinstance(st.value, ast.Call)
        and ast.unparse(st.value.func) in ("cuda.shared.array", "cuda.local.array")
    )


def _hoist_arrays(stmts: list, decl: list) -> list:
    """``stmts`` without their array declarations (at any depth), which go to ``decl``."""
    out = []
    for st in stmts:
        if _is_array_decl(st):
            decl.append(st)
            continue
        if isinstance(st, (ast.If, ast.For, ast.While)):
            st.body = _hoist_arrays(st.body, decl) or [ast.Pass()]
            st.orelse = _hoist_arrays(st.orelse, decl)
        out.append(st)
    return out


def _ends_in_return(stmts: list) -> bool:
    return bool(stmts) and isinstance(stmts[-1], ast.Return)


def _returns_to(stmts: list, res: str) -> list | None:
    """``stmts`` of a device function with each ``return v`` made ``res = v`` (None: cannot).

    A return ends its path: an ``if`` whose branch returns takes the statements after it
    into its other branch. A return inside a loop cannot be so rewritten.
    """
    out: list = []
    for i, st in enumerate(stmts):
        if isinstance(st, ast.Return):
            value = st.value if st.value is not None else ast.Constant(0)
            assign = ast.Assign(targets=[ast.Name(res, ast.Store())], value=value)
            out.append(ast.copy_location(assign, st))
            return out
        has = any(isinstance(n, ast.Return) for n in ast.walk(st))
        if not has:
            out.append(st)
            continue
        if not isinstance(st, ast.If):
            return None  # a return inside a loop
        rest = stmts[i + 1 :]
        body = _returns_to(st.body if _ends_in_return(st.body) else st.body + rest, res)
        orelse = _returns_to(st.orelse if _ends_in_return(st.orelse) else st.orelse + rest, res)
        if body is None or orelse is None:
            return None
        out.append(
            ast.copy_location(ast.If(test=st.test, body=body or [ast.Pass()], orelse=orelse), st)
        )
        return out
    return out


def _relocate(tree, at) -> None:
    """Every node of ``tree`` at ``at``'s place: an inlined body is the call's line."""
    for n in ast.walk(tree):
        if hasattr(n, "lineno"):
            setattr(n, "lineno", at.lineno)  # noqa: B010 - any node with a place
            setattr(n, "end_lineno", getattr(at, "end_lineno", at.lineno))  # noqa: B010
            setattr(n, "col_offset", getattr(at, "col_offset", 0))  # noqa: B010
            setattr(n, "end_col_offset", getattr(at, "end_col_offset", 0))  # noqa: B010


class _Substitute(ast.NodeTransformer):
    def __init__(self, mapping: Mapping[str, ast.expr]):
        self.mapping = mapping

    def visit_Name(self, node: ast.Name):
        if node.id in self.mapping:
            new = copy.deepcopy(self.mapping[node.id])
            if isinstance(new, ast.Name):
                new.ctx = node.ctx
            return ast.copy_location(new, node)
        return node


class _Scope:
    """What a function's names are: parameters, locals, arrays (with shapes)."""

    def __init__(self, checker: _Checker, fn: ast.FunctionDef, kernel: bool):
        self.kernel = kernel
        self.checker = checker
        self.params = {a.arg for a in fn.args.args}
        # every name the function assigns anywhere (Python's rule: a local)
        self.locals: set[str] = set()
        aug = {id(n.target) for n in ast.walk(fn) if isinstance(n, ast.AugAssign)}
        for n in ast.walk(fn):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store) and id(n) not in aug:
                self.locals.add(n.id)
        self.arrays: dict[str, tuple] = {}
        self.shared: set[str] = set()
        self.fold: dict[str, ast.expr] = {}
        self.params_used_as_arrays: set[str] = set()

    def assign(self, name: str) -> None:
        self.locals.add(name)

    def use(self, node: ast.Name) -> None:
        if node.id not in self.locals and node.id not in self.params:
            raise self.checker.fail(
                node, f"name {_show(node.id, 40)} is used before it is assigned"
            )
