"""The instrumenter's pieces of Python's syntax tree: the kernel's shape read, code written.

The small readers (:func:`_name`, :func:`_products` ...) and writers
(:func:`_stmts`) that :mod:`.instrument_rewrite` uses, the error every
refusal raises, and what the log names an array (:class:`ArrayInfo`).
"""

from __future__ import annotations

import ast
import dataclasses
import textwrap
from collections.abc import Callable, Mapping
from typing import Any, Protocol, TypeGuard

#: What names ``cuda`` (and a kept device function) while vizmm's simulator rewrites a kernel.
_CUDA_PLACEHOLDER = type("SimulatedName", (), {"__repr__": lambda self: "<simulated>"})()

#: Arguments every logging call ends with (the log and the thread's state).
_LOG = "_ev, _vals, _cnt, _cap, _t, _ep"


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


def _global_arrays(fn: ast.FunctionDef, params: list, first_arrays: int):
    """The kernel's array parameters, in order: those it subscripts or an atomic touches.

    Returns the arrays, the arrays only an atomic touches (name -> its index
    expression: split-k into P) and the first ``first_arrays`` parameters that
    the kernel never indexes (a matmul kernel's M, N and P are arrays even
    where one is never read or stored: its log names them all).
    """
    subscripted = {
        _name(n.value)
        for n in ast.walk(fn)
        if isinstance(n, ast.Subscript) and _name(n.value) is not None
    }
    atomics = {
        _name(n.args[0]): n.args[1]
        for n in ast.walk(fn)
        if isinstance(n, ast.Call)
        and _atomic(n)
        and len(n.args) >= 2
        and _name(n.args[0]) is not None
    }
    subscripted |= set(atomics)
    unindexed = set(params[:first_arrays]) - subscripted
    subscripted |= unindexed
    return [p for p in params if p in subscripted], atomics, unindexed


def _global_ndim(fn: ast.FunctionDef, g: str, atomics: dict, unindexed: set) -> int:
    """How many subscripts global array ``g`` takes (1 or 2, the same everywhere)."""
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
    return next(iter(ndims))
