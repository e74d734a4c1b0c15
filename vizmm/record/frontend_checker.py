"""The front end's checker: a kernel's statements and expressions against the CUDA Python subset.

:class:`_Checker` walks the kernel (and each device function it compiles)
statement by statement, refusing what is outside the subset with one line
naming the file's line, and normalises what it keeps (chained subscripts,
keyword shared arrays, 3-D shared arrays folded to 2-D, ``A[i] += v`` as a load
and a store, aliases as ``cuda.*`` and the numeric types); device functions
are inlined at their calls by :mod:`.frontend_inline`. :class:`_Scope` is what
one function's names are.
"""

from __future__ import annotations

import ast
import copy
import math
from typing import TYPE_CHECKING, Any

from .frontend import (
    _OPS,
    _STMTS,
    BUILTINS,
    CUDA_ATOMICS,
    CUDA_CALLS,
    CUDA_DIMS,
    ITEMSIZE,
    MATH,
    MATH_VALUES,
    MAX_CONSTANT,
    MAX_LOCAL_BYTES,
    MAX_SHARED_BYTES,
    TYPES,
    KernelRejected,
    _cut,
    _show,
    _strip_annotations,
)
from .frontend_const import _const_eval, _NotConstant
from .frontend_inline import _Inliner

if TYPE_CHECKING:
    from .frontend_reader import _Reader


class _Checker:
    """Checks a kernel (and the device functions it calls) against the subset; normalises it."""

    def __init__(self, reader: _Reader, first_line: int):
        self.r = reader
        self.first = first_line
        self.compiled: dict[str, ast.FunctionDef] = {}
        self.pending: list[ast.stmt] = []  # statements an expression's inlined call needs first
        self.hoist = True  # off in a while loop's test (evaluated every turn)
        self.shared_bytes = 0  # the block's static shared memory so far
        self.local_bytes = 0  # a thread's local arrays so far
        self.devices = _Inliner(self)

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
        """A statement checked and normalised (by its kind's ``_stmt_<Kind>``): what replaces it."""
        if not isinstance(st, _STMTS):
            raise self.fail(
                st,
                f"a {type(st).__name__.lower()} statement is outside the CUDA Python subset a "
                "kernel may use (assignments, for ... in range, while, if, break, continue, "
                "return, calls)",
            )
        check = getattr(self, f"_stmt_{type(st).__name__}", None)
        if check is None:
            return [st]  # pass, break, continue
        return check(st, scope)

    def _stmt_Expr(self, st: ast.Expr, scope: _Scope) -> list[ast.stmt]:
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
        inlined = self.devices.inline_call(st.value, scope, statement=True)
        if inlined is not None:
            return inlined
        return [ast.copy_location(ast.Expr(self.expr(st.value, scope)), st)]

    def _stmt_AnnAssign(self, st: ast.AnnAssign, scope: _Scope) -> list[ast.stmt]:
        if st.value is None or not isinstance(st.target, ast.Name):
            raise self.fail(st, "an annotation without a value declares nothing in a kernel")
        plain = ast.copy_location(ast.Assign(targets=[st.target], value=st.value), st)
        return self._stmt_Assign(plain, scope)

    def _stmt_Assign(self, st: ast.Assign, scope: _Scope) -> list[ast.stmt]:
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

    def _stmt_AugAssign(self, st: ast.AugAssign, scope: _Scope) -> list[ast.stmt]:
        if not isinstance(st.op, _OPS):
            raise self.fail(st, "this augmented assignment is outside the subset")
        value = self.expr(st.value, scope)
        if isinstance(st.target, ast.Subscript):  # a load and a store, as the GPU does it
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

    def _stmt_For(self, st: ast.For, scope: _Scope) -> list[ast.stmt]:
        it = st.iter
        if not (
            isinstance(it, ast.Call)
            and isinstance(it.func, ast.Name)
            and it.func.id == "range"
            and it.func.id not in scope.locals
            and 1 <= len(it.args) <= 3
            and not it.keywords
        ):
            raise self.fail(st, "a kernel's for loop runs over range(...) (a start, stop and step)")
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

    def _stmt_While(self, st: ast.While, scope: _Scope) -> list[ast.stmt]:
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

    def _stmt_If(self, st: ast.If, scope: _Scope) -> list[ast.stmt]:
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

    def _stmt_Return(self, st: ast.Return, scope: _Scope) -> list[ast.stmt]:
        if st.value is not None and not (
            isinstance(st.value, ast.Constant) and st.value.value is None
        ):
            if scope.kernel:
                raise self.fail(st, "a kernel returns nothing (it stores into P)")
            return [ast.copy_location(ast.Return(self.expr(st.value, scope)), st)]
        return [ast.copy_location(ast.Return(value=None), st)]

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
        """``name = cuda.shared.array(...)`` (or ``local``) checked, its shape as numbers."""
        args = self._decl_args(call, c)
        shape = self._decl_shape(call, args["shape"], name, scope)
        shape_t = shape if isinstance(shape, tuple) else (shape,)
        if not all(isinstance(s, int) and not isinstance(s, bool) and s >= 0 for s in shape_t):
            raise self.fail(call, f"the shape of {name} must be whole numbers >= 0, got {shape}")
        if len(shape_t) > 3:
            raise self.fail(call, f"{name} has {len(shape_t)} dimensions; at most 3")
        dname = self._decl_dtype(call, args.get("dtype"), name)
        self._count_bytes(
            call, c, f"{name} {shape} of {dname}", math.prod(shape_t) * ITEMSIZE[dname]
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

    def _decl_args(self, call: ast.Call, c: str) -> dict[str, ast.expr]:
        """An array declaration's ``shape`` and ``dtype``, by position or keyword."""
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
        return args

    def _decl_shape(self, call: ast.Call, shape: ast.expr, name: str, scope: _Scope) -> Any:
        """The value of an array's shape: numbers and the file's constants only."""
        for n in ast.walk(shape):
            if isinstance(n, ast.Name) and (n.id in scope.locals or n.id in scope.params):
                raise self.fail(
                    call,
                    f"the shape of {name} reads {n.id}, a variable of the kernel; the shape must "
                    "be a constant: numbers and the file's module-level constants",
                )
        try:
            return _const_eval(shape, self.r.constants)
        except _NotConstant:
            raise self.fail(
                call,
                f"the shape of {name} ({ast.unparse(shape)}) must be a constant: "
                "numbers and the file's module-level constants",
            ) from None

    def _decl_dtype(self, call: ast.Call, dtype: ast.expr | None, name: str) -> str:
        """The numeric type an array declares (``float32`` when it names none)."""
        if dtype is None:
            return "float32"
        t = self.r._type_of(dtype)
        if t is None:
            raise self.fail(
                call, f"the dtype of {name} must be a numeric type (float32, int32 ...)"
            )
        return t

    def _count_bytes(self, call: ast.Call, c: str, what: str, nbytes: int) -> None:
        """Add an array's bytes to the block's shared memory or the thread's local arrays."""
        if c == "cuda.shared.array":
            self.shared_bytes += nbytes
            total, limit = self.shared_bytes, MAX_SHARED_BYTES
            words = (
                f"the shared array {what} takes {nbytes} bytes, {total} with the block's other "
                f"shared arrays; a block declares at most {limit} bytes (48 KiB) of shared memory"
            )
        else:
            self.local_bytes += nbytes
            total, limit = self.local_bytes, MAX_LOCAL_BYTES
            words = (
                f"the local array {what} takes {nbytes} bytes, {total} with the thread's other "
                f"local arrays; a thread's local arrays take at most {limit} bytes"
            )
        if total > limit:
            raise self.fail(call, words)

    # -- expressions
    def subscript(self, node: ast.Subscript, scope: _Scope) -> ast.Subscript:
        """``A[i][j]`` / ``A[i, j]`` / ``A[d, r, c]`` of a known array, as one tuple subscript."""
        idx, base = _indices(node)
        if (
            isinstance(base, ast.Attribute)
            and base.attr == "shape"
            and isinstance(base.value, ast.Name)
        ):
            return self._shape_index(node, base, idx, scope)
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
                return self._slice(node, base, e, len(idx), scope)
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

    def _shape_index(
        self, node: ast.Subscript, base: ast.Attribute, idx: list[ast.expr], scope: _Scope
    ) -> ast.Subscript:
        """``A.shape[i]`` of a known array."""
        assert isinstance(base.value, ast.Name)
        if base.value.id not in scope.arrays and base.value.id not in scope.params:
            raise self.fail(node, f"{base.value.id} is not an array")
        if len(idx) != 1:
            raise self.fail(node, "index an array's shape with one number")
        return ast.copy_location(
            ast.Subscript(value=base, slice=self.expr(idx[0], scope), ctx=ast.Load()), node
        )

    def _slice(
        self, node: ast.Subscript, base: ast.Name, e: ast.Slice, ndim: int, scope: _Scope
    ) -> ast.Subscript:
        """``A[a:b]``: a section of one dimension (no step)."""
        if ndim != 1:
            raise self.fail(node, "slice one dimension of a shared array only")
        lower = None if e.lower is None else self.expr(e.lower, scope)
        upper = None if e.upper is None else self.expr(e.upper, scope)
        if e.step is not None:
            raise self.fail(node, "a slice with a step is outside the subset")
        return ast.copy_location(
            ast.Subscript(value=base, slice=ast.Slice(lower, upper, None), ctx=ast.Load()),
            node,
        )

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
            inlined = self.devices.inline_call(node, scope, statement=False)
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
        """A call of a builtin, a numeric type, a device function, ``cuda.*`` or ``math.*``."""
        if any(isinstance(a, ast.Starred) for a in node.args) or any(
            k.arg is None for k in node.keywords
        ):
            raise self.fail(node, "*args and **kwargs are outside the subset")
        args = [self.expr(a, scope) for a in node.args]
        keywords = [ast.keyword(k.arg, self.expr(k.value, scope)) for k in node.keywords]
        func = node.func
        c = self.r.canonical(func)
        if isinstance(func, ast.Name) and c is None:
            return self._call_name(node, func, args, keywords, scope)
        if c is None:
            raise self.fail(node, f"{ast.unparse(func)[:50]}() is not a function a kernel may call")
        if c in ("cuda.shared.array", "cuda.local.array"):
            raise self.fail(node, f"assign {c}(...) to a name of its own (Mds = {c}(...))")
        if not _callable(c):
            raise self.fail(node, f"{_cut(ast.unparse(func))}() is outside the CUDA Python subset")
        if c.startswith("cuda.atomic."):
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

    def _call_name(
        self,
        node: ast.Call,
        func: ast.Name,
        args: list[ast.expr],
        keywords: list[ast.keyword],
        scope: _Scope,
    ) -> ast.Call:
        """A call of a plain name: a builtin, a numeric type or a device function compiled."""
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

    # -- device functions
    def compile_device(self, name: str, at=None) -> None:
        if name in self.compiled:
            return
        fn = self.devices.checked(name, at)
        scope = _Scope(self, fn, kernel=False)
        fn.body = self.block(fn.body, scope) or [ast.Pass()]
        fn.decorator_list = []
        self.compiled[name] = ast.fix_missing_locations(fn)


def _callable(c: str) -> bool:
    """Whether ``c`` (canonical: ``cuda.syncthreads``, ``math.sqrt`` ...) is a subset call."""
    parts = c.split(".")
    return (
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


def _indices(node: ast.Subscript) -> tuple[list[ast.expr], ast.expr]:
    """The indices of a chain ``A[i][j]`` / ``A[i, j]`` in order, and what is subscripted."""
    idx: list[ast.expr] = []
    base: ast.expr = node
    while isinstance(base, ast.Subscript):
        sl = base.slice
        if isinstance(sl, ast.Tuple):
            idx[:0] = list(sl.elts)
        else:
            idx.insert(0, sl)
        base = base.value
    return idx, base


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
