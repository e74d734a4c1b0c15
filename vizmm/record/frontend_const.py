"""The front end's evaluator of constant expressions: numbers, names and tuples, never ``eval``.

A module-level constant (``TILE_WIDTH = 16``, ``SIZE = 2 * TILE_WIDTH``), a
shared array's shape and the arithmetic a kernel does on constants are
evaluated here, each operation bounded (:data:`.frontend.MAX_CONSTANT`, an
exponent of at most 64, a shift of at most 62), so that a file cannot make
Python compute ``10 ** 10 ** 10``.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from typing import Any

from .frontend import _OPS, MAX_CONSTANT


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
        return _const_unary(node, env)
    if isinstance(node, ast.BinOp) and isinstance(node.op, _OPS):
        return _const_binop(node, env)
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in _CALLS
        and not node.keywords
    ):
        return _const_call(node, env)
    raise _NotConstant


def _const_unary(node: ast.UnaryOp, env: Mapping[str, Any]) -> Any:
    """``-v``, ``+v`` or ``not v`` of a number."""
    v = _const_eval(node.operand, env)
    if isinstance(v, tuple):
        raise _NotConstant
    return -v if isinstance(node.op, ast.USub) else (+v if isinstance(node.op, ast.UAdd) else not v)


def _const_binop(node: ast.BinOp, env: Mapping[str, Any]) -> Any:
    """``a <op> b`` of numbers, each operation bounded (no huge power, shift or result)."""
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


def _const_call(node: ast.Call, env: Mapping[str, Any]) -> Any:
    """``int``, ``float``, ``min``, ``max`` or ``abs`` of numbers."""
    assert isinstance(node.func, ast.Name)
    args = [_const_eval(a, env) for a in node.args]
    if any(isinstance(a, tuple) for a in args) or not args:
        raise _NotConstant
    try:
        return _CALLS[node.func.id](*args)
    except (TypeError, ValueError, OverflowError):
        raise _NotConstant from None


#: The builtins a constant expression may call.
_CALLS: dict[str, Any] = {"int": int, "float": float, "min": min, "max": max, "abs": abs}
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
