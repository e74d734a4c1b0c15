"""The front end's device functions: the call graph (no recursion) and a call's body inlined.

A device function whose body is one ``return`` expression, or a procedure
with no ``return``, is inlined at its call: its accesses are logged as the
kernel's own, at the line of the call; one whose returns all end its paths is
inlined as statements before the call, its result in a local. Others are
compiled from their checked tree and called (:meth:`.frontend_checker._Checker.compile_device`).
"""

from __future__ import annotations

import ast
import copy
import itertools
from collections.abc import Mapping
from typing import TYPE_CHECKING

from .frontend import BUILTINS, MAX_INLINED, TYPES, _show, _strip_annotations

if TYPE_CHECKING:
    from .frontend_checker import _Checker, _Scope


class _Inliner:
    """The device functions one kernel calls: each checked once, inlined where it can be."""

    def __init__(self, checker: _Checker):
        self.checker = checker
        self.r = reader = checker.r
        self.inline_n = itertools.count()
        self.calls: dict[str, list[str]] | None = None
        self.acyclic: set[str] = set()  # device functions that do not call themselves
        self.inlined = 0
        # every name the file writes: an inlined function's locals get names none of these
        self.taken = set(reader.constants) | set(reader.device) | set(reader.kernels)
        for f in (*reader.kernels.values(), *reader.device.values()):
            self.taken.update(n.id for n in ast.walk(f) if isinstance(n, ast.Name))

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

    def checked(self, name: str, at=None) -> ast.FunctionDef:
        """Device function ``name``, copied and its signature checked (recursion refused)."""
        cycle = self._cycle(name) if name not in self.acyclic else None
        if cycle is None:
            self.acyclic.add(name)
        else:
            chain = " -> ".join(cycle)
            raise self.checker.fail(
                at if at is not None else self.r.device[name],
                f"device function {name} calls itself ({chain}); recursion is outside the "
                "subset (write it as a loop)",
            )
        fn = copy.deepcopy(self.r.device[name])
        a = fn.args
        if a.vararg or a.kwarg or a.kwonlyargs or a.posonlyargs or a.defaults or a.kw_defaults:
            raise self.checker.fail(
                fn, f"device function {name} takes plain positional parameters only"
            )
        for p in a.args:
            self.checker._name_ok(p, p.arg)
        _strip_annotations(fn)
        return fn

    def inline_call(self, node: ast.Call, scope: _Scope, statement: bool):
        """A device function's body at its call, where it is one return or a procedure."""
        func = node.func
        if not (isinstance(func, ast.Name) and func.id in self.r.device) or func.id in scope.locals:
            return None
        fn = self.checked(func.id, node)
        self.inlined += 1
        if self.inlined > MAX_INLINED:
            raise self.checker.fail(
                node,
                f"the kernel's device-function calls expand to more than {MAX_INLINED} inlined "
                "bodies (calls within calls); compute intermediate values in variables",
            )
        return self._inline(node, fn, scope, statement)

    def _inline(self, node: ast.Call, fn: ast.FunctionDef, scope: _Scope, statement: bool):
        """The call ``node`` of ``fn`` inlined (an expression or statements), or None: called."""
        func = node.func
        assert isinstance(func, ast.Name)
        body = _without_docstring(fn.body)
        params = [p.arg for p in fn.args.args]
        if node.keywords or len(node.args) != len(params):
            raise self.checker.fail(node, f"{func.id}() takes {len(params)} positional argument(s)")
        simple = len(body) == 1 and isinstance(body[0], ast.Return) and body[0].value is not None
        hoisted = None
        if not (simple or _is_procedure(body, statement)):
            if not self.checker.hoist:
                return None
            hoisted = _returns_to(body, f"{func.id}_result")
            if hoisted is None:
                return None  # a return inside a loop: the device function is compiled and called
        stored = _stored_names(body)
        own = stored - set(params)
        n = self._suffix(func.id, [*params, *own, f"{func.id}_result"])
        # a parameter the body assigns is the function's own copy (Python passes by value):
        # it never stands for the caller's variable or a literal
        rebound = stored & set(params)
        mapping, pre = self._arguments(node, params, rebound, simple, scope, n)
        # locals of a procedure get names of their own
        if hoisted is not None:
            body = hoisted
            own.add(f"{func.id}_result")
        for o in own:
            mapping[o] = ast.Name(f"{func.id}_{o}_{n}", ast.Load())
        self._refuse_free_names(body, mapping, scope, node)
        sub = _Substitute(mapping)
        if simple:
            ret = body[0]
            assert isinstance(ret, ast.Return) and ret.value is not None
            e = sub.visit(copy.deepcopy(ret.value))
            _relocate(e, node)
            return self.checker.expr(e, scope)
        stmts = pre + [sub.visit(copy.deepcopy(s)) for s in body]
        for s in stmts:
            _relocate(s, node)
        if hoisted is not None:  # the body before the statement, its result in a local
            self.checker.pending.extend(self.checker.block(stmts, scope))
            res = ast.Name(f"{func.id}_{func.id}_result_{n}", ast.Load())
            return ast.copy_location(res, node)
        return self.checker.block(stmts, scope)

    def _suffix(self, fname: str, names: list[str]) -> int:
        """The number ``n`` that makes each ``{fname}_{name}_{n}`` a name the file never wrote."""
        n = next(self.inline_n)
        while any(f"{fname}_{v}_{n}" in self.taken for v in names):
            n = next(self.inline_n)  # a name the student wrote: skip it
        self.taken.update(f"{fname}_{v}_{n}" for v in names)
        return n

    def _arguments(
        self,
        node: ast.Call,
        params: list[str],
        rebound: set[str],
        simple: bool,
        scope: _Scope,
        n: int,
    ) -> tuple[dict[str, ast.expr], list[ast.stmt]]:
        """What each parameter stands for in the body, and the temporaries assigned first."""
        assert isinstance(node.func, ast.Name)
        mapping: dict[str, ast.expr] = {}
        pre: list[ast.stmt] = []
        for p, arg in zip(params, node.args, strict=True):
            if (p in rebound and not simple) or not self._as_written(arg, simple, scope):
                tmp = f"{node.func.id}_{p}_{n}"
                pre.append(ast.Assign(targets=[ast.Name(tmp, ast.Store())], value=arg))
                mapping[p] = ast.Name(tmp, ast.Load())
            else:
                mapping[p] = arg
        return mapping, pre

    def _as_written(self, arg: ast.expr, simple: bool, scope: _Scope) -> bool:
        """Whether an argument may stand for its parameter as written (no temporary).

        An array, a parameter, a constant or a literal may; in a one-``return``
        body, so may an expression (the subset's expressions are pure).
        """
        if isinstance(arg, ast.Name) and (
            arg.id in scope.arrays or arg.id in scope.params or arg.id in self.r.constants
        ):
            return True
        return isinstance(arg, ast.Constant) or simple

    def _refuse_free_names(
        self, body: list[ast.stmt], mapping: Mapping[str, ast.expr], scope: _Scope, node: ast.Call
    ) -> None:
        """Refuse a name the body reads that is neither its own nor the file's.

        Python would not find it; inlined, it must not become the kernel's variable.
        """
        assert isinstance(node.func, ast.Name)
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
                raise self.checker.fail(
                    v if known else node,
                    f"device function {node.func.id} reads {_show(v.id, 40)}, which is not "
                    "defined there (a device function reads its parameters, its own variables "
                    "and the file's module-level constants)",
                )


def _without_docstring(body: list[ast.stmt]) -> list[ast.stmt]:
    """A function's statements without its docstring (a first constant expression)."""
    return [
        s
        for i, s in enumerate(body)
        if not (i == 0 and isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))
    ]


def _is_procedure(body: list[ast.stmt], statement: bool) -> bool:
    """Whether a call standing as a statement calls a body with no return (nor function)."""
    tree = ast.Module(body=body, type_ignores=[])
    return (
        statement
        and not any(isinstance(n, ast.Return) for n in ast.walk(tree))
        and not any(isinstance(n, ast.FunctionDef) for n in ast.walk(tree))
    )


def _stored_names(body: list[ast.stmt]) -> set[str]:
    """Every name the statements assign (parameters and locals alike)."""
    return {
        t.id
        for s in body
        for t in ast.walk(s)
        if isinstance(t, ast.Name) and isinstance(t.ctx, ast.Store)
    }


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
