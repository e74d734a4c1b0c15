"""Events per thread known before the launch: the static bound of a rewritten kernel.

When every loop is a ``range`` of constants and scalar arguments, the log's
size follows from the launch alone (:func:`_static_bound`); otherwise a
count launch finds it (:func:`.instrument.run`).
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from types import CodeType
from typing import TYPE_CHECKING

from .instrument_ast import _Bound, _Events, _is_call_to, _name

if TYPE_CHECKING:
    from .instrument_rewrite import _Rewriter


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


class _EventCount:
    """Events per thread of a kernel's statements, a function of the launch (_static_bound)."""

    def __init__(self, rw: _Rewriter, barriers_only: bool, known_locals: dict):
        self.rw = rw
        self.arrays = set(rw.ids)
        self.barriers_only = barriers_only
        self.known_locals = known_locals

    def accesses(self, node) -> int:
        """Logged array accesses in ``node`` (none when counting barriers only)."""
        if self.barriers_only:
            return 0
        rw = self.rw
        return sum(
            1
            for n in ast.walk(node)
            if isinstance(n, ast.Subscript)
            and _name(n.value) in self.arrays
            and not isinstance(n.slice, ast.Slice)
            and (
                rw.shared_loads
                or _name(n.value) not in rw.shared
                or not isinstance(n.ctx, ast.Load)
            )
        )

    def count(self, stmts: list[ast.stmt], env_names: set[str]) -> _Events | None:
        """The statements' events; None where a loop's trip count is not static."""
        parts: list[_Events] = []
        for stmt in stmts:
            part = self.statement(stmt, env_names)
            if part is None:
                return None
            parts.append(part)
        return lambda env: sum(p(env) for p in parts)

    def statement(self, stmt: ast.stmt, env_names: set[str]) -> _Events | None:
        if isinstance(stmt, ast.For):
            return self.range_loop(stmt, env_names)
        if isinstance(stmt, ast.While):
            return None
        if isinstance(stmt, ast.If):
            a, b = self.count(stmt.body, env_names), self.count(stmt.orelse, env_names)
            if a is None or b is None:
                return None
            return _branch_events(self.accesses(stmt.test), a, b)
        if isinstance(stmt, ast.Expr) and _is_call_to(stmt.value, "syncthreads"):
            return _fixed_events(2)  # arrival and release
        n = self.accesses(stmt)
        if not self.barriers_only:
            n += 1 if isinstance(stmt, ast.Return) else 0
            n += self.rw.noted_events(stmt)
        return _fixed_events(n)

    def range_loop(self, stmt: ast.For, env_names: set[str]) -> _Events | None:
        """A ``for`` over ``range`` whose bounds the launch's scalars and constants give."""
        it = stmt.iter
        if not (_is_call_to(it, "range") and isinstance(it.func, ast.Name)):
            return None
        inner = self.count(stmt.body, env_names)
        if inner is None:
            return None
        args = [compile(ast.Expression(a), "<bound>", "eval") for a in it.args]
        used = {n.id for a in it.args for n in ast.walk(a) if isinstance(n, ast.Name)}
        if used & {stmt.target.id if isinstance(stmt.target, ast.Name) else ""} or (
            used - env_names - set(self.rw.ns) - set(self.known_locals)
        ):
            return None
        if any(
            isinstance(n, ast.Attribute) and n.attr in ("threadIdx", "blockIdx")
            for a in it.args
            for n in ast.walk(a)
        ):
            return None
        return _loop_events(self.accesses(it), args, inner)


def _static_bound(fn: ast.FunctionDef, rw: _Rewriter, barriers_only: bool = False) -> _Bound | None:
    """``bound(scalars) -> events per thread`` when every loop is a static ``range``; else None.

    With ``barriers_only``: the barrier events (arrivals and releases) per thread.
    """
    known_locals: dict[str, ast.expr] = {}
    for stmt in fn.body:
        if (
            isinstance(stmt, ast.Assign)
            and len(stmt.targets) == 1
            and isinstance(stmt.targets[0], ast.Name)
        ):
            known_locals[stmt.targets[0].id] = stmt.value
    total = _EventCount(rw, barriers_only, known_locals).count(fn.body, set(rw.scalars))
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
