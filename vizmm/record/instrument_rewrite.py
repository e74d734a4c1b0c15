"""The instrumenter's rewrite: a kernel's tree with every access logged (:class:`_Rewriter`).

The full variant logs each event of the threads of the detail blocks; the
lean variant (aggregated recording on a GPU) only counts global reads,
zero-fills and the blocks' times. See :mod:`.instrument` for what the
rewrite adds to a kernel.
"""

from __future__ import annotations

import ast
import copy
import itertools
import math
import sys
from typing import cast

import numpy as np

from ..trace import access_log as D
from .instrument_ast import (
    _LOG,
    ArrayInfo,
    InstrumentError,
    _add_terms,
    _atomic,
    _expr,
    _global_arrays,
    _global_ndim,
    _has_array_access,
    _is_call_to,
    _is_zero,
    _live_barrier,
    _name,
    _products,
    _Remap,
    _roles,
    _split_index,
    _stmts,
    _sum,
    _uncast,
)
from .instrument_lean import BUFFERS as LEAN_BUFFERS
from .instrument_lean import prologue as lean_prologue
from .instrument_runs import hoist_peeks as _hoist_peeks
from .instrument_runs import plan as _runs_of
from .instrument_runs import unwritten as _unwritten


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
        self.globals, atomics, unindexed = _global_arrays(fn, self.params, first_arrays)
        self.scalars = [p for p in self.params if p not in self.globals]
        self.constants = {
            k
            for k, v in namespace.items()
            if isinstance(v, (int, np.integer)) and not isinstance(v, bool)
        }
        self.arrays: list[ArrayInfo] = []
        self.ids: dict[str, int] = {}
        for g in self.globals:
            self._add(ArrayInfo(g, "global", _global_ndim(fn, g, atomics, unindexed)))
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
        # the lean variant: loads counted as runs after their loop (instrument_runs)
        # (id of the load: (its array, the flag saying its run was counted; None: always))
        self.runs: dict[int, tuple[str, str | None]] = {}
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

    @property
    def run_arrays(self) -> list[str]:
        """The global arrays the lean variant counts runs of (``_mult_``, ``_code_`` arguments)."""
        return [g for g in self.globals if g in {a for a, _ in self.runs.values()}]

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
            if id(node) in self.runs:
                return self._run_load(name, idx, self.runs[id(node)][1])
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

    @staticmethod
    def _run_load(g: str, idx: list[str], counted: str | None) -> str:
        """A load a run counts (``lg_peek``); when ``counted`` is false, counted here."""
        two = "2" if len(idx) == 2 else ""
        if counted is None:
            return f"lg_peek{two}({g}, {', '.join(idx)}, _ZERO_{g})"
        return f"lg_peek_or{two}({g}, {', '.join(idx)}, _reads_{g}, _ZERO_{g}, {counted})"

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
        if isinstance(stmt, ast.Assign) and len(stmt.targets) != 1:
            return None
        target = stmt.targets[0] if isinstance(stmt, ast.Assign) else stmt.target
        value = stmt.value
        if isinstance(stmt, ast.Assign) and isinstance(target, ast.Name) and _atomic(value):
            return self.atomic(cast(ast.Call, value), ln, target.id)
        if isinstance(target, ast.Name):
            return self._provenance_of_name(stmt, target.id, top)
        if (
            isinstance(stmt, ast.Assign)
            and isinstance(target, ast.Subscript)
            and _name(target.value) in self.ids
        ):
            return self._provenance_of_element(target, value, ln)
        return None

    def _provenance_of_name(
        self, stmt: ast.Assign | ast.AugAssign, x: str, top: bool
    ) -> list[ast.stmt] | None:
        """A local ``x`` assigned: its tag, and its events when it is an accumulator."""
        if x not in self.tagged:
            return None
        before: list[ast.stmt] = []
        after: list[ast.stmt] = []
        if isinstance(stmt, ast.Assign):
            before += _stmts(f"_tg = {self.tag_of(stmt.value)}")
        if x in self.accs:
            b, a = self._accumulator_events(stmt, x)
            before, after = before + b, after + a
        main = [self.expr(stmt)]
        if isinstance(stmt, ast.Assign):
            main += _stmts(f"{x}__tg = _tg")
            if top and self.acc and x == self.acc:
                self.acc_ready = True
        return before + main + after

    def _accumulator_events(
        self, stmt: ast.Assign | ast.AugAssign, x: str
    ) -> tuple[list[ast.stmt], list[ast.stmt]]:
        """The TERM / MOVE events of accumulator ``x``'s assignment: (before, after) it."""
        me = self.accs.index(x)
        value, ln = stmt.value, stmt.lineno
        if isinstance(stmt, ast.AugAssign):
            if not isinstance(stmt.op, ast.Add):
                return [], []
            if _name(value) in self.accs:
                return [], [self._move(-1, me, _name(value), D.MOVE_ADD, ln)]
            pairs = _products(value)
            return self._terms(-1, me, pairs, ln) if pairs else ([], [])
        if _name(value) in self.accs and _name(value) != x:
            return [], [self._move(-1, me, _name(value), D.MOVE_SET, ln)]
        if (
            isinstance(value, ast.BinOp)
            and isinstance(value.op, ast.Add)
            and x in {_name(t) for t in _add_terms(value)}
        ):
            rest = [t for t in _add_terms(value) if _name(t) != x]
            pairs = _products(_sum(rest)) if rest else []
            return self._terms(-1, me, pairs, ln) if pairs else ([], [])
        if _is_call_to(value, "cuda.fma") and len(value.args) == 3:
            return self._terms(-1, me, [(value.args[0], value.args[1])], ln)
        return [], [self._move(-1, me, None, D.MOVE_SET, ln)]

    def _provenance_of_element(
        self, target: ast.Subscript, value: ast.expr, ln: int
    ) -> list[ast.stmt] | None:
        """An array element assigned: the store, and its TERM / MOVE events."""
        name = cast(ast.Name, target.value).id
        flat = self._flat(target)
        if flat is None:
            return None
        aid = self.ids[name]
        before: list[ast.stmt] = []
        after: list[ast.stmt] = []
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
        if name not in self.shared:  # a global store (P)
            return self._global_store(target, value, lineno)
        g = _name(value.value) if isinstance(value, ast.Subscript) else None
        dynamic_zero = ""
        if isinstance(value, ast.Subscript) and g in self.globals:
            pre, v, ok, src = self._tile_load(name, value, lineno)
        elif self.terms and not (
            isinstance(value, ast.Constant) or (isinstance(_uncast(value), ast.Constant))
        ):
            pre, v, ok, src = self._tagged_value(value)
            dynamic_zero = src[0]
        else:
            pre, v, ok, src = (
                [],
                ast.unparse(self.expr(value)),
                "True",
                self._value_source(value, guard),
            )
        out = pre + _stmts(self._shared_store_call(target, v, ok, src, lineno))
        if src[0] == str(D.TAG_ZERO):  # a zero-fill: counted for every block
            out += _stmts(f"zfill(_zf, _bid, _nst_{name}, _zph, {self.ids[name]}, _NARR)")
        elif dynamic_zero:  # a conditional expression's zero
            out += _stmts(
                f"if {dynamic_zero} == {D.TAG_ZERO}:\n"
                f"    zfill(_zf, _bid, _nst_{name}, _zph, {self.ids[name]}, _NARR)"
            )
        return out + _stmts(f"_nst_{name} += 1")

    def _global_store(self, target: ast.Subscript, value, lineno) -> list[ast.stmt]:
        """A store into a global array (P): logged, or in the lean variant only performed."""
        name = cast(ast.Name, target.value).id
        aid = self.ids[name]
        idx, (row, col) = self._index_parts(target)
        v = ast.unparse(self.expr(value))
        if self.lean:
            if len(idx) == 2:
                return _stmts(f"lg_store2({name}, {idx[0]}, {idx[1]}, {v})")
            return _stmts(f"lg_store({name}, {idx[0]}, {v})")
        acc = self._acc()
        if len(idx) == 2:
            return _stmts(
                f"g_store2({name}, {idx[0]}, {idx[1]}, {v}, {aid}, {lineno}, {_LOG}, {acc})"
            )
        return _stmts(
            f"g_store({name}, {idx[0]}, {v}, {row}, {col}, {aid}, {lineno}, {_LOG}, {acc})"
        )

    def _tile_load(self, name: str, copy: ast.Subscript, lineno) -> tuple:
        """A global element copied into shared array ``name`` (a tile load, Fig. 5.9 lines 9-10).

        Returns the statements loading it, the value's and the in-bounds flag's
        names, and the store's source (tag, array, flat index, row, col).
        """
        g = cast(ast.Name, copy.value).id
        self.copies.setdefault(name, set()).add(g)
        gidx, (grow, gcol) = self._index_parts(copy)
        n = next(self.tmp)
        gid = self.ids[g]
        acc = self._acc()
        if self.lean:
            run = self.runs.get(id(copy))
            if len(gidx) == 2:
                load = (
                    self._run_load(g, gidx, run[1])
                    if run
                    else f"lg_load2({g}, {gidx[0]}, {gidx[1]}, _reads_{g}, _ZERO_{g})"
                )
                pre = _stmts(f"_ok{n} = lg_ok2({g}, {gidx[0]}, {gidx[1]})\n_v{n} = {load}")
            else:
                load = (
                    self._run_load(g, [f"_i{n}"], run[1])
                    if run
                    else f"lg_load({g}, _i{n}, _reads_{g}, _ZERO_{g})"
                )
                pre = _stmts(f"_i{n} = {gidx[0]}\n_ok{n} = lg_ok({g}, _i{n})\n_v{n} = {load}")
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
        src = (f"_i{n} * {D.TAG_ARRAYS} + {gid}", str(gid), f"_i{n}", grow, gcol)
        return pre, f"_v{n}", f"_ok{n}", src

    def _tagged_value(self, value) -> tuple:
        """A computed value stored into shared memory, its provenance tag carried (check)."""
        n = next(self.tmp)
        no = str(D.NO_INDEX)
        pre = _stmts(f"_tg{n} = {self.tag_of(value)}")
        v = ast.unparse(self.expr(value))
        src = (
            f"_tg{n}",
            f"(_tg{n} % {D.TAG_ARRAYS} if _tg{n} >= 0 else -1)",
            f"(_tg{n} // {D.TAG_ARRAYS} if _tg{n} >= 0 else -1)",
            no,
            no,
        )
        return pre, v, "True", src

    def _value_source(self, value, guard) -> tuple:
        """The source of a computed value stored into shared memory: a zero-fill's or none."""
        no = str(D.NO_INDEX)
        if _has_array_access(value, self.ids) or any(
            isinstance(x, ast.Name) and x.id not in self.ns for x in ast.walk(value)
        ):
            return (str(D.TAG_COMPUTED), "-1", "-1", no, no)
        if guard is None:
            return (str(D.TAG_ZERO), "-1", "-1", no, no)  # a constant (the zero-fill)
        g = guard.value.id
        gidx, (grow, gcol) = self._index_parts(guard)
        if len(gidx) == 2:
            grow, gcol = gidx
            flat = f"({gidx[0]}) * {g}.shape[1] + ({gidx[1]})"
        else:
            flat = gidx[0]
        return (str(D.TAG_ZERO), str(self.ids[g]), flat, grow, gcol)

    def _shared_store_call(self, target: ast.Subscript, v: str, ok: str, src: tuple, lineno) -> str:
        """The helper call storing ``v`` into a shared element, logged with its source."""
        name = cast(ast.Name, target.value).id
        idx, (row, col) = self._index_parts(target)
        if self.lean:
            return (
                f"ls_store2({name}, {idx[0]}, {idx[1]}, {v}, {ok})"
                if len(idx) == 2
                else f"ls_store({name}, {idx[0]}, {v}, {ok})"
            )
        s, aid, acc = self.shared[name], self.ids[name], self._acc()
        tag, sa, si, sr, sc = src
        if len(idx) == 2:
            return (
                f"s_store2({name}, {idx[0]}, {idx[1]}, {v}, {s['shadow']}, {s['off']}, {ok}, "
                f"{tag}, {sa}, {si}, {sr}, {sc}, {aid}, {lineno}, {_LOG}, {acc})"
            )
        return (
            f"s_store({name}, {idx[0]}, {v}, {row}, {col}, {s['shadow']}, {s['off']}, {ok}, "
            f"{tag}, {sa}, {si}, {sr}, {sc}, {aid}, {lineno}, {_LOG}, {acc})"
        )

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
        for step in (self._marker, self._noted, self._assignment, self._control):
            got = step(stmt, top)
            if got is not None:
                return got
        if isinstance(stmt, (ast.FunctionDef, ast.ClassDef, ast.With, ast.Try)):
            raise InstrumentError(
                f"line {stmt.lineno}: a {type(stmt).__name__} statement cannot be instrumented "
                "in a kernel"
            )
        return [self.expr(stmt)]

    def _marker(self, stmt: ast.stmt, top: bool) -> list[ast.stmt] | None:
        """A shared array's declaration, a barrier or a return; None: none of them."""
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
        return None

    def _noted(self, stmt: ast.stmt, top: bool) -> list[ast.stmt] | None:
        """A statement with provenance events (recording terms) or an atomic; None: not one."""
        if self.terms:
            return self.provenance(stmt, top)
        if isinstance(stmt, ast.Expr) and _atomic(stmt.value) and not self.lean:
            return self.atomic(cast(ast.Call, stmt.value), stmt.lineno, None)
        return None

    def _assignment(self, stmt: ast.stmt, top: bool) -> list[ast.stmt] | None:
        """A store into an array element (``=`` or ``op=``) or the accumulator's start."""
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
        return None

    def _control(self, stmt: ast.stmt, top: bool) -> list[ast.stmt] | None:
        """An ``if``, ``for`` or ``while`` with its bodies rewritten; None: not one."""
        if isinstance(stmt, ast.If):
            return [self._if(stmt)]
        if isinstance(stmt, ast.For):
            entry: list[ast.stmt] = []
            after: list[ast.stmt] = []
            if self.lean:  # reads counted once, after the loop, where they can be
                first, last, covered = _runs_of(stmt, set(self.globals), self.tmp)
                self.runs.update(covered)
                entry = _stmts("\n".join(first)) if first else []
                after = _stmts("\n".join(last)) if last else []
            fixed = _unwritten(stmt.body, set(self.globals))  # before the rewrite changes it
            body = self.loop_body(stmt.body)
            if entry or after:  # the runs' loads issued first in each iteration
                body = _hoist_peeks(body, fixed, self.tmp)
            return (
                entry
                + [
                    ast.For(
                        target=stmt.target,
                        iter=self.expr(stmt.iter),
                        body=body,
                        orelse=self.body(stmt.orelse) if stmt.orelse else [],
                        type_comment=None,
                    )
                ]
                + after
            )
        if isinstance(stmt, ast.While):
            return [
                ast.While(
                    test=self.expr(stmt.test),
                    body=self.loop_body(stmt.body),
                    orelse=self.body(stmt.orelse) if stmt.orelse else [],
                )
            ]
        return None

    def _if(self, stmt: ast.If) -> ast.If:
        """An ``if``: a guarded copy's ``else`` store (Fig. 5.13's zero) logged as that copy's."""
        copy = self._copy_of(stmt.body)
        test = self.expr(stmt.test)
        body = self.body(stmt.body)
        orelse: list[ast.stmt] = []
        other = stmt.orelse
        if (
            other
            and copy is not None
            and len(other) == 1
            and isinstance(other[0], ast.Assign)
            and len(other[0].targets) == 1
            and isinstance(other[0].targets[0], ast.Subscript)
            and ast.unparse(other[0].targets[0]) == ast.unparse(copy.targets[0])
        ):
            orelse = self.store(
                other[0].targets[0], other[0].value, other[0].lineno, guard=copy.value
            )
        elif other:
            orelse = self.body(other)
        return ast.If(test=test, body=body, orelse=orelse)

    # ------------------------------------------------------------- whole
    def rewrite(self) -> ast.FunctionDef:
        """The kernel rewritten: its body's statements logged, its prologue and its arguments."""
        fn = self.fn
        body = self.body(fn.body, top=True)
        last = self._after_shared_declarations(body)
        stamp, clock = self._stamp_and_clock()
        head, prologue, extra = self._prologue()
        if not self.lean:  # the lean variant's counters are views of its buffers
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

    def _after_shared_declarations(self, body: list[ast.stmt]) -> int:
        """Where the last declaration of a shared array is: the shadows' stamp goes after it."""
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
        return last

    def _stamp_and_clock(self) -> tuple[list[ast.stmt], list[ast.stmt]]:
        """The shadows' stamp (tags of shared loads) and the block's clock in shared memory."""
        nshared = [s for s in self.shared.values() if not s.get("section")]
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
        return stamp, clock

    def _prologue(self) -> tuple[list[ast.stmt], list[ast.stmt], list[str]]:
        """What the rewrite adds: statements before the body, after the declarations, and arguments.

        The head picks the block this thread plays; the prologue sets the
        thread's place in the log; the arguments follow the kernel's own.
        """
        counters = "".join(f"_nst_{name} = 0\n" for name in self.shared)
        if self.lean:
            head: list[ast.stmt] = []
            prologue = _stmts(
                "_tid = (cuda.threadIdx.z * cuda.blockDim.y + cuda.threadIdx.y) * cuda.blockDim.x "
                "+ cuda.threadIdx.x\n"
                "_bid = cuda.blockIdx.y * cuda.gridDim.x + cuda.blockIdx.x\n"
                f"{counters}"
                # the records: views of the two buffers (instrument_lean), then the block's start
                + lean_prologue(self.globals, self.run_arrays)
                + "block_start(_blk, _bid, _tid)"
            )
            extra = list(LEAN_BUFFERS) + ["_zph"]
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
        return head, prologue, extra


def _np_dtype(text: str, ns: dict):
    obj = ns.get(text.split(".")[-1])
    if isinstance(obj, type) and issubclass(obj, np.generic):  # vizmm's simulator: NumPy's
        return np.dtype(obj)
    try:
        return np.dtype(str(obj)) if obj is not None else np.dtype(text.split(".")[-1])
    except TypeError:
        return np.dtype(np.float32)
