"""vizmm's simulator, its compiler: a rewritten kernel made into NumPy code over a block's lanes.

The instrumenter (:mod:`.instrument`) rewrites a kernel that the front end
(:mod:`.frontend`) read and checked into Python that logs every access. Numba's
simulator ran that Python once per CUDA thread, one Python thread each.
:func:`compile_kernel` compiles the same rewritten tree once more, so that one
call runs a *group* of a block's threads together (all of them, one warp, or
one thread: :mod:`.simt` chooses), each variable a NumPy array with one lane
per thread, the way a GPU's SIMT hardware runs a warp (PMPP Section 4.4):

- every statement runs under the group's **active mask** ``_qm``: an
  assignment changes only the active lanes (:func:`.simt.mset`); a helper
  that touches memory or the log (``g_load``, ``s_store2``, ``log_s`` ...)
  is given the mask and touches only theirs;
- ``if`` splits the mask and runs each side for the lanes that take it (not
  at all when none do); ``for ... in range`` and ``while`` run until no
  active lane goes round again, so a trip count may differ by thread;
  ``break``, ``continue`` and ``return`` take lanes out of the mask;
  ``and``, ``or`` and ``a if c else b`` evaluate their later operands only
  for the lanes that need them, so a load is never logged for a lane that
  would not make it;
- ``cuda.syncthreads()`` becomes ``yield``: the generated function is a
  generator, and the block's driver resumes a group only when every thread
  of the block has arrived at a barrier (:func:`.simt.run_block`);
- Python ``float`` literals are float64, as Numba types them, so that
  ``Pvalue = 0.0`` accumulates in float64 as on a GPU, and ``float32(0)``
  in float32.

Nothing here runs the student's code: the input is the rewritten tree, the
output is Python text compiled with :func:`compile` in globals vizmm builds
(:func:`.simt.namespace`). The generated text is kept (``SimtKernel.code``)
for a reader who wants to see what runs.
"""

from __future__ import annotations

import ast
import dataclasses
import itertools
from collections.abc import Mapping

from .frontend import _dotted

__all__ = ["SimtKernel", "SimtUnsupported", "compile_kernel", "translate"]

#: Helpers the rewritten kernel calls that touch memory or the log: given the mask.
HELPERS = frozenset(
    (
        "log_g log_s log_b g_tag g_tag2 s_tag s_tag2 flat2 g_load g_load2 g_ok g_ok2 g_store "
        "g_store2 s_load s_load2 s_store s_store2 block_start end zfill"
    ).split()
)
#: Builtins the subset allows, as the lane-wise forms of :mod:`.simt`.
BUILTINS = {
    "int": "_qint",
    "float": "_qfloat",
    "bool": "_qbool",
    "abs": "_qabs",
    "min": "_qmin",
    "max": "_qmax",
    "round": "_qround",
    "len": "_qlen",
}
#: ``cuda.<name>(...)`` calls and what runs them.
CUDA_CALLS = {
    "grid": "_qX.grid",
    "gridsize": "_qX.gridsize",
    "fma": "_qfma",
    "selp": "_qselp",
    "popc": "_qpopc",
}
#: ``cuda.<name>()`` statements that order memory only: nothing to do in one process.
CUDA_NOOPS = ("threadfence", "threadfence_block", "threadfence_system", "syncwarp")


class SimtUnsupported(ValueError):
    """A form of the rewritten kernel vizmm's simulator does not run (the message says which)."""


@dataclasses.dataclass(frozen=True)
class SimtKernel:
    """A rewritten kernel compiled for vizmm's simulator.

    Attributes
    ----------
    name : str
        The kernel's name.
    fn : callable
        ``fn(_qX, *args)``: a generator over one group of a block's lanes;
        it yields the active mask at each ``cuda.syncthreads()``.
    code : str
        The generated Python (what ``fn`` was compiled from).
    params : tuple of str
        The rewritten kernel's parameters (the kernel's own, then the log's).
    written : frozenset of str
        The global array parameters the kernel stores into (plain, guarded or
        atomic): only these are watched for races between threads.
    """

    name: str
    fn: object
    code: str
    params: tuple
    written: frozenset


def _calls(node: ast.AST) -> bool:
    """Whether ``node`` calls anything (a helper may log or touch memory)."""
    return any(isinstance(n, ast.Call) for n in ast.walk(node))


def _lam(body: ast.expr) -> ast.Lambda:
    """``lambda _qm: body``: an operand evaluated for the lanes that need it."""
    return ast.Lambda(
        args=ast.arguments(
            posonlyargs=[],
            args=[ast.arg(arg="_qm")],
            kwonlyargs=[],
            kw_defaults=[],
            defaults=[],
        ),
        body=body,
    )


def _call(name: str, args: list[ast.expr]) -> ast.Call:
    return ast.Call(func=ast.parse(name, mode="eval").body, args=args, keywords=[])


def _mask() -> list[ast.expr]:
    return [ast.Name("_qm", ast.Load()), ast.Name("_qX", ast.Load())]


class _Expr(ast.NodeTransformer):
    """An expression of the rewritten kernel as lane-wise NumPy (see the module docstring)."""

    def __init__(self, device_functions: frozenset, consts: dict):
        self.device_functions = device_functions
        self.consts = consts  # float literals, bound once in the globals as float64

    def visit_Constant(self, node):
        if type(node.value) is float:
            key = repr(node.value)
            if key not in self.consts:
                self.consts[key] = f"_qf{len(self.consts)}"
            return ast.copy_location(ast.Name(self.consts[key], ast.Load()), node)
        return node

    def visit_Call(self, node):
        name = _dotted(node.func)
        if name == "cuda.shared.array" or name == "cuda.local.array":
            args = [self.visit(a) for a in node.args]
            kw = {k.arg: self.visit(k.value) for k in node.keywords}
            shape = args[0] if args else kw.get("shape")
            dtype = args[1] if len(args) > 1 else kw.get("dtype")
            if shape is None or dtype is None:
                raise SimtUnsupported(f"{name} needs a shape and a dtype")
            where = "shared" if "shared" in name else "local"
            site = ast.Constant(f"{node.lineno}:{node.col_offset}")
            return _call(f"_qX.{where}", [site, shape, dtype])
        node.args = [self.visit(a) for a in node.args]
        node.keywords = [ast.keyword(k.arg, self.visit(k.value)) for k in node.keywords]
        if name is None:
            raise SimtUnsupported(f"a call of {ast.unparse(node.func)}")
        if name in HELPERS or name in self.device_functions:
            node.args += _mask()
            return node
        if name.startswith("cuda.atomic."):
            op = ast.Constant(name.rpartition(".")[2])
            return _call("_qatomic", [op, *node.args, *_mask()])
        if name.startswith("cuda."):
            short = name[5:]
            if short in CUDA_CALLS:
                return _call(CUDA_CALLS[short], node.args)
            raise SimtUnsupported(f"{name}() in an expression")
        if name in BUILTINS:
            return _call(BUILTINS[name], node.args)
        return node  # casts (float32(...)), math.* (lane-wise in the namespace)

    def visit_Attribute(self, node):
        name = _dotted(node)
        if name in ("cuda.laneid", "cuda.warpsize"):
            return _call(f"_qX.{name[5:]}", [])
        return self.generic_visit(node)

    def visit_Subscript(self, node):
        if isinstance(node.ctx, ast.Store):
            raise SimtUnsupported("an element store inside an expression")
        value = self.visit(node.value)
        index = self.visit(node.slice)
        if isinstance(node.value, ast.Attribute) and node.value.attr == "shape":
            node.value, node.slice = value, index
            return node  # A.shape[1]: a number
        if isinstance(index, ast.Slice):  # Mds_Nds[a:b]: a section of the extern array
            parts = [
                p if p is not None else ast.Constant(None)
                for p in (index.lower, index.upper, index.step)
            ]
            return _call("_qsec", [value, _call("slice", parts), ast.Name("_qX", ast.Load())])
        return _call("_qld", [value, index, *_mask()])

    def visit_BoolOp(self, node):
        values = [self.visit(v) for v in node.values]
        op = "_qand" if isinstance(node.op, ast.And) else "_qor"
        if not any(_calls(v) for v in node.values[1:]):
            return _call(op, values)
        out = values[-1]
        for v in reversed(values[:-1]):  # a and (b and c): each later operand a lambda
            out = _call(op + "_lazy", [ast.Name("_qm", ast.Load()), v, _lam(out)])
        return out

    def visit_IfExp(self, node):
        test, body, orelse = self.visit(node.test), self.visit(node.body), self.visit(node.orelse)
        if not (_calls(node.body) or _calls(node.orelse)):
            return _call("_qwhere", [test, body, orelse])
        return _call("_qifexp", [ast.Name("_qm", ast.Load()), test, _lam(body), _lam(orelse)])

    def visit_UnaryOp(self, node):
        operand = self.visit(node.operand)
        if isinstance(node.op, ast.Not):
            return _call("_qnot", [operand])
        node.operand = operand
        return node

    def visit_Compare(self, node):
        left = self.visit(node.left)
        comps = [self.visit(c) for c in node.comparators]
        if len(comps) == 1:
            node.left, node.comparators = left, comps
            return node
        parts: list[ast.expr] = []
        prev = left
        for op, c in zip(node.ops, comps, strict=True):
            parts.append(ast.Compare(left=prev, ops=[op], comparators=[c]))
            prev = c
        return _call("_qand", parts)

    def visit_Lambda(self, node):  # pragma: no cover - not in the subset
        raise SimtUnsupported("a lambda")


def _kills(stmts: list[ast.stmt], what: tuple, loops: bool) -> bool:
    """Whether ``stmts`` hold one of ``what`` (Return, Break, Continue) that applies here.

    ``loops``: look inside nested loops too (a ``return`` there still ends the
    thread; a ``break`` there is the inner loop's).
    """
    for s in stmts:
        for n in ast.walk(s) if loops else _walk_no_loops(s):
            if isinstance(n, what):
                return True
    return False


def _walk_no_loops(node: ast.AST):
    yield node
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (ast.For, ast.While)):
            continue
        yield from _walk_no_loops(child)


def _assigned(fn: ast.FunctionDef) -> list[str]:
    names: dict[str, None] = {}

    def add(t):
        if isinstance(t, ast.Name):
            names[t.id] = None
        elif isinstance(t, (ast.Tuple, ast.List)):
            for e in t.elts:
                add(e)

    for n in ast.walk(fn):
        if isinstance(n, ast.Assign):
            for t in n.targets:
                add(t)
        elif isinstance(n, (ast.AugAssign, ast.AnnAssign, ast.For)):
            add(n.target)
    params = {a.arg for a in fn.args.args}
    return [n for n in names if n not in params]


class _Stmts:
    """The statements of one function, as lines of lane-wise Python."""

    def __init__(self, fn: ast.FunctionDef, expr: _Expr, generator: bool):
        self.fn = fn
        self.expr = expr
        self.generator = generator
        self.returns = _kills(fn.body, (ast.Return,), True)
        self.ids = itertools.count()
        self.lines: list[str] = []

    def e(self, node: ast.expr) -> str:
        return ast.unparse(self.expr.visit(node))

    def emit(self, depth: int, text: str) -> None:
        for line in text.splitlines():
            self.lines.append("    " * depth + line)

    def alive(self, loop) -> str:
        """The lanes still running here: not returned, not broken out of or continued."""
        parts = []
        if self.returns:
            parts.append("_qlive")
        if loop is not None:
            n, brk, cnt = loop
            if brk:
                parts.append(f"~_qbrk{n}")
            if cnt:
                parts.append(f"~_qcnt{n}")
        return " & ".join(parts)

    def assign(self, depth: int, top: bool, name: str, value: str) -> None:
        if top:
            self.emit(depth, f"{name} = {value}")
        else:
            self.emit(depth, f"{name} = _qmset(_qm, {value}, {name})")

    def block(self, stmts: list[ast.stmt], depth: int, top: bool, loop) -> None:
        """``stmts``; after one that may stop lanes, the rest only while some lanes run."""
        if not stmts:
            self.emit(depth, "pass")
            return
        for i, s in enumerate(stmts):
            self.stmt(s, depth, top, loop)
            rest = stmts[i + 1 :]
            if rest and self.stops(s, loop):
                self.emit(depth, "if _qm.any():")
                self.block(rest, depth + 1, False, loop)
                return

    def stops(self, s: ast.stmt, loop) -> bool:
        if isinstance(s, (ast.Return, ast.Break, ast.Continue)):
            return True
        if _kills([s], (ast.Return,), True):
            return True
        if loop is not None and isinstance(s, ast.If):
            return _kills([s], (ast.Break, ast.Continue), False)
        return False

    def barrier(self, depth: int, top: bool, call: ast.Call | None) -> None:
        if call is None:  # the rewrite's own barrier (the shadows' stamp): not logged
            self.emit(depth, "yield _qm")
            return
        # sync(_ticks, _slot, ln, _ev, _vals, _cnt, _cap, _t, _ep, acc)
        a = [self.e(x) for x in call.args]
        ln, t, ep, acc = a[2], a[7], a[8], a[9]
        self.emit(depth, f"_qX.arrive(_qm, {ln}, {t}, {ep}, {acc})")
        self.emit(depth, "yield _qm")
        self.emit(depth, f"_qX.release(_qm, {ln}, {t}, {ep}, {acc})")
        self.assign(depth, top, "_ep", f"{ep} + 1")

    def stmt(self, s: ast.stmt, depth: int, top: bool, loop) -> None:
        if isinstance(s, ast.Pass) or self.barrier_or_noop(s, depth, top):
            return
        if isinstance(s, ast.Expr):
            self.emit(depth, self.e(s.value))
        elif isinstance(s, (ast.Assign, ast.AnnAssign)):
            if s.value is None:
                return
            targets = s.targets if isinstance(s, ast.Assign) else [s.target]
            value = self.e(s.value)
            for target in targets:
                self.target(depth, top, target, value)
        elif isinstance(s, ast.AugAssign):
            self.aug_assign(s, depth, top)
        elif isinstance(s, ast.If):
            self.if_(s, depth, loop)
        elif isinstance(s, ast.For):
            self.for_(s, depth, loop)
        elif isinstance(s, ast.While):
            self.while_(s, depth, loop)
        elif isinstance(s, ast.Return):
            self.return_(s, depth)
        elif isinstance(s, ast.Break):
            self.emit(depth, f"_qbrk{loop[0]} = _qbrk{loop[0]} | _qm\n_qm = _qX.none")
        elif isinstance(s, ast.Continue):
            self.emit(depth, f"_qcnt{loop[0]} = _qcnt{loop[0]} | _qm\n_qm = _qX.none")
        else:
            raise SimtUnsupported(f"line {s.lineno}: a {type(s).__name__} statement")

    def barrier_or_noop(self, s: ast.stmt, depth: int, top: bool) -> bool:
        """Emit a barrier (``cuda.syncthreads()``, ``sync(...)``) or skip a fence: whether done."""
        if isinstance(s, ast.Expr) and isinstance(s.value, ast.Call):
            name = _dotted(s.value.func)
            if name == "cuda.syncthreads":
                self.barrier(depth, top, None)
                return True
            if name is not None and name.startswith("cuda.") and name[5:] in CUDA_NOOPS:
                return True
        if isinstance(s, ast.Assign) and isinstance(s.value, ast.Call):
            if _dotted(s.value.func) == "sync":
                self.barrier(depth, top, s.value)
                return True
        return False

    def aug_assign(self, s: ast.AugAssign, depth: int, top: bool) -> None:
        op = ast.unparse(ast.BinOp(ast.Name("a"), s.op, ast.Name("b")))[2:-2]
        value = self.e(s.value)
        if isinstance(s.target, ast.Name):
            self.assign(depth, top, s.target.id, f"{s.target.id} {op} ({value})")
        elif isinstance(s.target, ast.Subscript):
            base, index = self.e(s.target.value), self.e(s.target.slice)
            old = f"_qld({base}, {index}, _qm, _qX)"
            self.emit(depth, f"_qst({base}, {index}, {old} {op} ({value}), _qm, _qX)")
        else:
            raise SimtUnsupported(f"line {s.lineno}: {ast.unparse(s)}")

    def return_(self, s: ast.Return, depth: int) -> None:
        if s.value is not None:
            if self.generator:
                raise SimtUnsupported(f"line {s.lineno}: a kernel returns no value")
            self.emit(depth, f"_qrv = _qmset(_qm, {self.e(s.value)}, _qrv)")
        self.emit(depth, "_qlive = _qlive & ~_qm\n_qm = _qX.none")

    def target(self, depth: int, top: bool, target: ast.expr, value: str) -> None:
        if isinstance(target, ast.Name):
            self.assign(depth, top, target.id, value)
        elif isinstance(target, ast.Subscript):
            base, index = self.e(target.value), self.e(target.slice)
            self.emit(depth, f"_qst({base}, {index}, {value}, _qm, _qX)")
        elif isinstance(target, (ast.Tuple, ast.List)):
            n = next(self.ids)
            self.emit(depth, f"_qtup{n} = {value}")
            for i, t in enumerate(target.elts):
                self.target(depth, top, t, f"_qtup{n}[{i}]")
        else:
            raise SimtUnsupported(f"an assignment to {ast.unparse(target)}")

    def merge(self, depth: int, n: int, kills: bool, loop) -> None:
        alive = self.alive(loop) if kills else ""
        self.emit(depth, f"_qm = _qms{n}" + (f" & {alive}" if alive else ""))

    def if_(self, s: ast.If, depth: int, loop) -> None:
        n = next(self.ids)
        kills = _kills([s], (ast.Return,), True) or (
            loop is not None and _kills([s], (ast.Break, ast.Continue), False)
        )
        self.emit(depth, f"_qms{n} = _qm\n_qc{n} = _qtruth({self.e(s.test)})")
        self.emit(depth, f"_qm = _qms{n} & _qc{n}\nif _qm.any():")
        self.block(s.body, depth + 1, False, loop)
        if s.orelse:
            alive = self.alive(loop) if kills else ""
            self.emit(depth, f"_qm = _qandnot(_qms{n}, _qc{n})" + (f" & {alive}" if alive else ""))
            self.emit(depth, "if _qm.any():")
            self.block(s.orelse, depth + 1, False, loop)
        self.merge(depth, n, kills, loop)

    def _loop_head(self, depth: int, n: int, brk: bool) -> None:
        self.emit(depth, f"_qms{n} = _qm")
        if brk:
            self.emit(depth, f"_qbrk{n} = _qX.none")

    def _iteration(self, depth: int, n: int, loop) -> None:
        alive = self.alive((n, loop[1], False))
        self.emit(depth, f"_qm = _qms{n}" + (f" & {alive}" if alive else ""))

    def for_(self, s: ast.For, depth: int, outer) -> None:
        it = s.iter
        if (
            not (
                isinstance(it, ast.Call) and _dotted(it.func) == "range" and 1 <= len(it.args) <= 3
            )
            or s.orelse
        ):
            raise SimtUnsupported(f"line {s.lineno}: a for loop over something else than range()")
        n = next(self.ids)
        brk = _kills(s.body, (ast.Break,), False)
        cnt = _kills(s.body, (ast.Continue,), False)
        loop = (n, brk, cnt)
        args = [self.e(a) for a in it.args]
        start, stop, step = (
            ("0", args[0], "1")
            if len(args) == 1
            else (args[0], args[1], args[2] if len(args) > 2 else "1")
        )
        self._loop_head(depth, n, brk)
        self.emit(depth, f"_qb{n} = {stop}\n_qs{n} = {step}\n_qv{n} = {start}\nwhile True:")
        self._iteration(depth + 1, n, loop)
        self.emit(depth + 1, f"_qm = _qm & _qgo(_qv{n}, _qb{n}, _qs{n})")
        self.emit(depth + 1, "if not _qm.any():\n    break")
        if cnt:
            self.emit(depth + 1, f"_qcnt{n} = _qX.none")
        self.target(depth + 1, False, s.target, f"_qv{n}")
        self.block(s.body, depth + 1, False, loop)
        self.emit(depth + 1, f"_qv{n} = _qv{n} + _qs{n}")
        self.merge(depth, n, self.returns, outer)

    def while_(self, s: ast.While, depth: int, outer) -> None:
        if s.orelse:
            raise SimtUnsupported(f"line {s.lineno}: while ... else")
        n = next(self.ids)
        brk = _kills(s.body, (ast.Break,), False)
        cnt = _kills(s.body, (ast.Continue,), False)
        loop = (n, brk, cnt)
        self._loop_head(depth, n, brk)
        self.emit(depth, "while True:")
        self._iteration(depth + 1, n, loop)
        self.emit(depth + 1, f"_qm = _qm & _qtruth({self.e(s.test)})")
        self.emit(depth + 1, "if not _qm.any():\n    break")
        if cnt:
            self.emit(depth + 1, f"_qcnt{n} = _qX.none")
        self.block(s.body, depth + 1, False, loop)
        self.merge(depth, n, self.returns, outer)


def translate(
    fn: ast.FunctionDef, device_functions: frozenset = frozenset(), generator: bool = True
) -> tuple[str, dict]:
    """The lane-wise Python of a rewritten kernel (or a device function) and its float literals.

    Parameters
    ----------
    fn : ast.FunctionDef
        The rewritten kernel (:attr:`.instrument.Instrumented.code`, the
        simulator's form), or a device function the front end kept.
    device_functions : frozenset of str
        Names of the device functions it calls (given the mask).
    generator : bool
        A kernel (a generator yielding at each barrier); False for a device
        function, which returns its value lane by lane.

    Returns
    -------
    code : str
        The function's source: ``def name(_qX, *params)`` (a kernel) or
        ``def name(*params, _qm, _qX)`` (a device function).
    floats : dict of str to str
        Each float literal's text and the global name it is bound to.

    Raises
    ------
    SimtUnsupported
        For a form outside what the instrumenter writes from the subset.
    """
    consts: dict[str, str] = {}
    out = _Stmts(fn, _Expr(device_functions, consts), generator)
    params = [a.arg for a in fn.args.args]
    if generator:
        head = f"def {fn.name}(_qX, {', '.join(params)}):"
        pre = "cuda = _qX.cuda\n_qm = _qX.all\n_qlive = _qm\nif False:\n    yield _qm"
    else:
        head = f"def {fn.name}({', '.join([*params, '_qm', '_qX'])}):"
        pre = "cuda = _qX.cuda\n_qlive = _qm\n_qrv = 0"
        if any(_dotted(c.func) in ("cuda.syncthreads", "sync")
               for c in ast.walk(fn) if isinstance(c, ast.Call)):  # fmt: skip
            raise SimtUnsupported(
                f"device function {fn.name} waits at cuda.syncthreads(): inline it in the kernel"
            )
    out.emit(0, head)
    out.emit(1, pre)
    for name in _assigned(fn):
        if name != "cuda":
            out.emit(1, f"{name} = 0")
    out.block(fn.body, 1, True, None)
    if not generator:
        out.emit(1, "return _qrv")
    return "\n".join(out.lines) + "\n", {v: float(k) for k, v in consts.items()}


def compile_kernel(code: str, env: Mapping, name: str, device_functions: tuple = ()) -> SimtKernel:
    """Compile the rewritten kernel ``code`` (its simulator form) for vizmm's simulator.

    Parameters
    ----------
    code : str
        The rewritten kernel's source (:attr:`.instrument.Instrumented.code`).
    env : mapping
        Its globals: the kernel's constants and types (NumPy's), as
        :func:`.simt.namespace` builds them.
    name : str
        The kernel function's name.
    device_functions : tuple of ast.FunctionDef
        Device functions the kernel calls that the front end did not inline.

    Returns
    -------
    SimtKernel

    Raises
    ------
    SimtUnsupported
        For a form the simulator does not run (the message says which).
    """
    from . import simt

    tree = ast.parse(code)
    fn = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name)
    names = frozenset(f.name for f in device_functions)
    glb = simt.namespace(env)
    pieces = []
    for dfn in device_functions:
        text, floats = translate(dfn, names, generator=False)
        glb.update({k: simt.F64(v) for k, v in floats.items()})
        pieces.append(text)
    text, floats = translate(fn, names)
    glb.update({k: simt.F64(v) for k, v in floats.items()})
    pieces.append(text)
    full = "\n\n".join(pieces)
    filename = f"<vizmm simulator {name}>"
    import linecache

    linecache.cache[filename] = (len(full), None, full.splitlines(True), filename)
    exec(compile(full, filename, "exec"), glb)  # noqa: S102 - vizmm's own generated code
    written = frozenset(
        c.args[0].id
        for c in ast.walk(fn)
        if isinstance(c, ast.Call)
        and c.args
        and isinstance(c.args[0], ast.Name)
        and (
            _dotted(c.func) in ("g_store", "g_store2")
            or (_dotted(c.func) or "").startswith("cuda.atomic.")
        )
    )
    return SimtKernel(name, glb[name], full, tuple(a.arg for a in fn.args.args), written)
