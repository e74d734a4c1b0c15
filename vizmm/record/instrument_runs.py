"""Global reads counted once per loop, not once per iteration (the lean variant's runs).

Aggregated recording on a GPU counts how often each element of M and N is
read. Counted one atomic per read, that costs the tiled kernel (Fig. 5.9)
1.3-1.9x the plain kernel at TILE_WIDTH 16: every phase ``ph`` adds two
atomics to a loop whose work is 2 loads, 32 shared loads and 16 FMAs.

Most reads of the book's kernels need no counting inside the loop at all.
``M[Row*Width + ph*TILE_WIDTH + tx]`` in ``for ph in range(...)`` reads the
elements ``a, a+b, ..., a+(c-1)b`` with ``a = Row*Width + tx``,
``b = TILE_WIDTH`` and ``c`` the trip count: one *run*. When the rewrite can
prove that a load

* stands in a simple statement directly in the body of ``for v in range(...)``
  (not in an ``if``, an inner loop, a conditional expression or an ``and`` /
  ``or``), in a loop with no ``break``, ``continue`` or ``return`` of its own,
  so that it runs on every iteration;
* has an index (or two indices) affine in ``v`` whose other names the loop
  never assigns, built of ``+``, ``-``, ``*`` by a term free of ``v``, and
  names, integers, attributes (``cuda.threadIdx.x``) and ``A.shape[k]``;
* of a loop whose ``range`` arguments are such expressions too, with a
  positive integer step,

the lean variant counts it once, after the loop (:func:`plan`): the part of
the run inside the array (what ``lg_load`` would have counted read by read)
is worked out in closed form, and the thread adds 1 to ``mult[s]`` at the
run's first element ``s`` after claiming ``code[s] = stride << 32 | length``
with a compare-and-swap. Threads whose runs start at the same element with
the same stride and length (the ``gridDim.x`` blocks of a row of blocks share
their M runs) share one entry; a thread whose run starts where another run
of another shape does counts its elements one atomic each, as before. A
kernel after the lean one (``expand_runs``) adds each entry's multiplicity
to every element of its run: work proportional to the elements, not to the
reads. The counts are the same as one atomic per read, element for element.
"""

from __future__ import annotations

import ast
import copy
import itertools
from collections.abc import Iterable, Iterator
from typing import cast

_NEVER = (ast.Return, ast.Break, ast.Continue)
_SKIP = (
    ast.IfExp,
    ast.BoolOp,
    ast.Lambda,
    ast.ListComp,
    ast.SetComp,
    ast.DictComp,
    ast.GeneratorExp,
)


def _stored_names(stmts: Iterable[ast.stmt]) -> set[str]:
    """Every name the statements assign (``=``, ``op=``, ``for`` targets, ``:=``), at any depth."""
    return {
        n.id
        for s in stmts
        for n in ast.walk(s)
        if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del))
    }


def _exits(stmts: list[ast.stmt]) -> bool:
    """Whether a ``return``, ``break`` or ``continue`` is among the statements, at any depth.

    (A ``break`` of an inner loop would do no harm; refusing it too keeps the rule short.)
    """
    return any(isinstance(n, _NEVER) for s in stmts for n in ast.walk(s))


class _Affine:
    """Whether an index is ``a + b*v`` with ``a``, ``b`` unchanged by the loop (see the module)."""

    def __init__(self, var: str, assigned: set[str]):
        self.var, self.assigned = var, assigned

    def invariant(self, e: ast.expr) -> bool:
        """``e`` is free of the loop variable, of what the loop changes and of memory."""
        if isinstance(e, ast.Constant):
            return type(e.value) is int
        if isinstance(e, ast.Name):
            return e.id != self.var and e.id not in self.assigned
        if isinstance(e, ast.Attribute):
            return (
                self.invariant(e.value)
                if not isinstance(e.value, ast.Name)
                else (e.value.id != self.var and e.value.id not in self.assigned)
            )
        if isinstance(e, ast.Subscript):  # A.shape[k] only: no element of memory
            return (
                isinstance(e.value, ast.Attribute)
                and e.value.attr == "shape"
                and isinstance(e.slice, ast.Constant)
                and self.invariant(e.value)
            )
        if isinstance(e, ast.BinOp):
            return self.invariant(e.left) and self.invariant(e.right)
        if isinstance(e, ast.UnaryOp):
            return isinstance(e.op, (ast.USub, ast.UAdd, ast.Invert)) and self.invariant(e.operand)
        return False

    def affine(self, e: ast.expr) -> bool:
        """``e`` is affine in the loop variable with invariant coefficients."""
        if self.invariant(e) or (isinstance(e, ast.Name) and e.id == self.var):
            return True
        if isinstance(e, ast.BinOp):
            if isinstance(e.op, (ast.Add, ast.Sub)):
                return self.affine(e.left) and self.affine(e.right)
            if isinstance(e.op, ast.Mult):
                return (self.invariant(e.left) and self.affine(e.right)) or (
                    self.affine(e.left) and self.invariant(e.right)
                )
        if isinstance(e, ast.UnaryOp) and isinstance(e.op, (ast.USub, ast.UAdd)):
            return self.affine(e.operand)
        return False


class _Put(ast.NodeTransformer):
    """The loop variable replaced by an expression."""

    def __init__(self, var: str, value: ast.expr):
        self.var, self.value = var, value

    def visit_Name(self, node: ast.Name) -> ast.expr:
        return copy.deepcopy(self.value) if node.id == self.var else node


def _at(e: ast.expr, var: str, value: str) -> str:
    """``e`` with ``var`` replaced by the expression ``value``, as source."""
    return ast.unparse(_Put(var, ast.parse(value, mode="eval").body).visit(copy.deepcopy(e)))


def _every_iteration_loads(stmt: ast.stmt, arrays: set[str]) -> Iterator[ast.Subscript]:
    """Loads of ``arrays`` that a simple statement evaluates whenever it runs."""

    def walk(n: ast.AST) -> Iterator[ast.Subscript]:
        if isinstance(n, _SKIP):
            return
        if (
            isinstance(n, ast.Subscript)
            and isinstance(n.ctx, ast.Load)
            and isinstance(n.value, ast.Name)
            and n.value.id in arrays
            and not isinstance(n.slice, ast.Slice)
        ):
            yield n
        for child in ast.iter_child_nodes(n):
            yield from walk(child)

    if isinstance(stmt, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Expr)):
        yield from walk(stmt)


def _range_parts(loop: ast.For, inv: _Affine) -> tuple[str, str, int] | None:
    """``(start, stop, step)`` of ``for v in range(...)`` as source, or None when not countable."""
    it = loop.iter
    if not (
        isinstance(it, ast.Call)
        and isinstance(it.func, ast.Name)
        and it.func.id == "range"
        and not it.keywords
        and 1 <= len(it.args) <= 3
    ):
        return None
    args = list(it.args)
    step = 1
    if len(args) == 3:
        s = args.pop()
        if not (isinstance(s, ast.Constant) and type(s.value) is int and s.value > 0):
            return None
        step = s.value
    if not all(inv.invariant(a) for a in args):
        return None
    start = ast.unparse(args[0]) if len(args) == 2 else "0"
    return start, ast.unparse(args[-1]), step


_CMP = {ast.Lt: 0, ast.LtE: 1, ast.Gt: 2, ast.GtE: 3}


def _guards(test: ast.expr, aff: _Affine) -> list[tuple[ast.expr, int]] | None:
    """An ``if`` test as comparisons ``d op 0`` with ``d`` affine; None when it is not one.

    ``a < b and c >= d`` (and chains ``0 <= x < n``) give ``(a - b, 0)``,
    ``(c - d, 3)``: the codes of :data:`_CMP`.
    """
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        out: list[tuple[ast.expr, int]] = []
        for v in test.values:
            got = _guards(v, aff)
            if got is None:
                return None
            out += got
        return out
    if not isinstance(test, ast.Compare):
        return None
    out, left = [], test.left
    for op, right in zip(test.ops, test.comparators, strict=True):
        if type(op) not in _CMP or not (aff.affine(left) and aff.affine(right)):
            return None
        out.append((ast.BinOp(left=left, op=ast.Sub(), right=right), _CMP[type(op)]))
        left = right
    return out


def _sites(stmts, arrays, aff, guards=()) -> Iterator[tuple[ast.Subscript, tuple]]:
    """Each load that runs on every iteration where its ``if`` tests (``guards``) hold."""
    for s in stmts:
        if isinstance(s, ast.If):
            got = _guards(s.test, aff)
            if got is not None:  # the body's loads, under the test; the else's are not runs
                yield from _sites(s.body, arrays, aff, (*guards, *got))
            continue
        for n in _every_iteration_loads(s, arrays):
            idx = n.slice.elts if isinstance(n.slice, ast.Tuple) else [n.slice]
            if len(idx) <= 2 and all(aff.affine(e) for e in idx):
                yield n, guards


def _span(guards, m: int, c: str, var: str, at: tuple[str, str], first: tuple[str, str]):
    """The lines working out the iterations where ``guards`` hold.

    Returns ``(before, after, (lo, hi, ok))``: ``before`` (run before the
    loop) sets the flag ``ok`` saying the test's terms are whole numbers (the
    span is exact; the loop counts its reads itself when not), from the
    loop's start written out (``first``: its value and the next); ``after``
    sets ``lo``, ``hi``, the first and one past the last iteration that
    loads, from ``at`` (the names the lines after the loop give them).
    """
    lo, hi, ok = f"_gl{m}", f"_gh{m}", f"_gk{m}"
    before, after = [f"{ok} = True"], [f"{lo} = 0", f"{hi} = {c}"]
    for i, (d, op) in enumerate(guards):
        d0, dd = f"_gd{m}_{i}", f"_ge{m}_{i}"
        f0 = _at(d, var, first[0])
        before.append(f"{ok} = {ok} and whole({f0}) and whole({_at(d, var, first[1])} - ({f0}))")
        after += [
            f"{d0} = {_at(d, var, at[0])}",
            f"{dd} = {_at(d, var, at[1])} - {d0}",
            f"{lo} = cond_lo({d0}, {dd}, {op}, {lo})",
            f"{hi} = cond_hi({d0}, {dd}, {op}, {hi})",
        ]
    return before, after, (lo, hi, ok)


def plan(
    loop: ast.For, arrays: set[str], counter: Iterator[int] | None = None
) -> tuple[list[str], list[str], dict[int, tuple[str, str | None]]]:
    """The runs of a ``for`` loop: what to count around it, and the loads it covers.

    Parameters
    ----------
    loop : ast.For
        A loop of the kernel's tree, before the rewrite.
    arrays : set of str
        The kernel's global arrays (parameters); a shared or local array's
        loads are not counted.
    counter : iterator of int, optional
        Numbers for the temporaries (``_rs3``, ``_ra4`` ...), the rewriter's.

    Returns
    -------
    before : list of str
        Source lines to run just before the loop: per ``if`` around covered
        loads, whether its test's terms are whole numbers (``_gk``: its
        span below is exact).
    after : list of str
        Source lines to run just after the loop (no iteration stops it
        early; the names they read are the loop's start's, unchanged by the
        loop; its registers are free there, none of these stays live through
        it): the trip count; per ``if``, the iterations where its test holds
        (``cond_lo``/``cond_hi``); per covered load, its run's start and
        stride and one ``lg_run``/``lg_run2`` call. Both empty when no load
        qualifies.
    covered : dict of int to (str, str or None)
        ``id()`` of each covered ``ast.Subscript`` load: its array and the
        name of the flag saying its run was counted (None: always). The
        rewrite loads these with ``lg_peek`` (or ``lg_peek_or``, counting
        in the loop when the flag is false).
    """
    counter = counter if counter is not None else itertools.count()
    if loop.orelse or _exits(loop.body) or not isinstance(loop.target, ast.Name):
        return [], [], {}
    var = loop.target.id
    assigned = _stored_names(loop.body)
    if var in assigned:
        return [], [], {}
    parts = _range_parts(loop, _Affine(var, assigned))
    if parts is None:
        return [], [], {}
    sites = list(_sites(loop.body, arrays, _Affine(var, assigned | {var})))
    if not sites:
        return [], [], {}
    start, stop, step = parts
    k = next(counter)
    s0, c = f"_rs{k}", f"_rc{k}"
    before: list[str] = []
    after = [
        f"{s0} = {start}",
        f"_re{k} = {stop}",
        f"{c} = (_re{k} - {s0} + {step - 1}) // {step} if _re{k} > {s0} else 0",
    ]
    at0, at1 = s0, f"({s0} + {step})"
    spans: dict[tuple, tuple[str, str, str | None]] = {(): ("0", c, None)}
    covered: dict[int, tuple[str, str | None]] = {}
    for n, guards in sites:
        key = tuple(id(d) for d, _ in guards)
        if key not in spans:
            first = (f"({start})", f"({start} + {step})")
            lines, more, spans[key] = _span(guards, next(counter), c, var, (at0, at1), first)
            before += lines
            after += more
        lo, hi, ok = spans[key]
        g = n.value.id  # type: ignore[attr-defined]
        j = next(counter)
        idx = n.slice.elts if isinstance(n.slice, ast.Tuple) else [n.slice]
        names = []
        for d, e in enumerate(idx):
            a, b = f"_ra{j}_{d}", f"_rb{j}_{d}"
            after += [f"{a} = {_at(e, var, at0)}", f"{b} = {_at(e, var, at1)} - {a}"]
            names += [a, b]
        shape = f"{g}.shape[0], {g}.shape[1]" if len(idx) == 2 else f"{g}.shape[0]"
        call = (
            f"lg_run{'2' if len(idx) == 2 else ''}(_reads_{g}, _mult_{g}, _code_{g}, "
            f"{', '.join(names)}, {lo}, {hi}, {shape})"
        )
        after += [call] if ok is None else [f"if {ok}:", f"    {call}"]
        covered[id(n)] = (g, ok)
    return before, after, covered


#: The loads a run counts, by the rewrite's call: how many indices each takes.
_PEEKS = {"lg_peek": 1, "lg_peek2": 2, "lg_peek_or": 1, "lg_peek_or2": 2}


def unwritten(stmts: list[ast.stmt], arrays: set[str]) -> set[str]:
    """The arrays among ``arrays`` the statements cannot write (never stored into nor passed on).

    Parameters
    ----------
    stmts : list of ast.stmt
        A loop's body, before the rewrite.
    arrays : set of str
        The kernel's global arrays.

    Returns
    -------
    set of str
        Those no statement stores into (``A[i] = ...``) or passes to a call.
    """
    out = set()
    for n in (n for s in stmts for n in ast.walk(s)):
        if isinstance(n, ast.Subscript) and isinstance(n.ctx, ast.Store):
            out.add(_name_of(n.value))
        elif isinstance(n, ast.Call):
            out.update(a.id for a in n.args if isinstance(a, ast.Name))
    return arrays - out


def _name_of(node) -> str | None:
    """The array a (possibly chained) subscript names: ``Mds`` for ``Mds[ty][tx]``."""
    while isinstance(node, ast.Subscript):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def hoist_peeks(
    body: list[ast.stmt], fixed: set[str], counter: Iterator[int] | None = None
) -> list[ast.stmt]:
    """The lean loop's rewritten ``body`` with the loads its runs count issued first.

    A covered load in the body of an ``if`` (Fig. 5.13's tile loads) is
    loaded where it stands: each ``if`` is a branch of its own, so a thread
    waits for M's element before it starts the load of N's, two global
    latencies a phase where the plain kernel, whose two ``if`` bodies the
    compiler turns into predicated loads, issues both loads together. Here
    each such load (``lg_peek``, which is in bounds whatever its index and
    has no other effect) moves to the top of the iteration, with the index
    temporary it reads; where it stood, a load counted in the loop
    (``lg_peek_or``, its run not counted) keeps its count, ``lg_count``.
    A load moves only when the loop neither stores into its array nor
    passes the array to a call, and its index reads no name the loop body
    assigns (true of every covered load's index: affine in the loop's
    variable, with no other name the loop changes).

    Parameters
    ----------
    body : list of ast.stmt
        The loop's body as rewritten for the lean variant.
    fixed : set of str
        The global arrays the loop does not write (:func:`unwritten`, read
        from the loop before the rewrite, which changes it in place).
    counter : iterator of int, optional
        Numbers for the temporaries a load inside an expression moves into (``_h7``).

    Returns
    -------
    list of ast.stmt
        The body, the moved loads first; ``body`` itself is changed in place.
    """
    hoist = _Hoist(fixed, _stored_names(body), counter or itertools.count())
    rest = hoist.block(body)
    return [*hoist.first, *rest] if hoist.first else body


class _Hoist:
    """:func:`hoist_peeks`'s walk: the moved statements gathered in ``first``."""

    def __init__(self, fixed: set[str], assigned: set[str], counter: Iterator[int]):
        self.fixed, self.assigned, self.counter = fixed, assigned, counter
        self.first: list[ast.stmt] = []

    def free(self, e) -> bool:
        """Whether ``e`` reads no name the loop body assigns."""
        return not {n.id for n in ast.walk(e) if isinstance(n, ast.Name)} & self.assigned

    def block(self, stmts: list[ast.stmt]) -> list[ast.stmt]:
        """``stmts`` with their runs' loads moved out (into ``first``), into ``if`` bodies too."""
        defs: dict[str, ast.Assign] = {}  # this block's temporaries (an index's ``_i5``)
        out: list[ast.stmt] = []
        for st in stmts:
            if isinstance(st, ast.If):
                st.body = self.block(st.body) or [ast.Pass()]
                st.orelse = self.block(st.orelse)
                out.append(st)
                continue
            kept: ast.stmt | None = st
            for call in [n for n in ast.walk(st) if self._peek(n)]:
                kept = self.move(st, cast(ast.Call, call), defs, out)
                if kept is None:
                    break
            if kept is not None:
                if isinstance(st, ast.Assign) and isinstance(st.targets[0], ast.Name):
                    defs[st.targets[0].id] = st
                out.append(st)
        return out

    def _peek(self, n) -> bool:
        return (
            isinstance(n, ast.Call)
            and _name_of(n.func) in _PEEKS
            and _name_of(n.args[0]) in self.fixed
        )

    def move(self, st, call: ast.Call, defs: dict, out: list) -> ast.stmt | None:
        """Move ``call`` (a load in ``st``) out; ``st`` still to keep, or None (it was the load)."""
        fn = cast(str, _name_of(call.func))
        n = _PEEKS[fn]
        idx = call.args[1 : 1 + n]
        temps = [defs[i.id] for i in idx if isinstance(i, ast.Name) and i.id in defs]
        rest = [i for i in idx if not (isinstance(i, ast.Name) and i.id in defs)]
        if not all(self.free(e) for e in [*(t.value for t in temps), *rest]):
            return st
        for t in temps:  # the index's temporary moves with the load
            out.remove(t)
            self.first.append(t)
        whole = isinstance(st, ast.Assign) and len(st.targets) == 1 and st.value is call
        name = st.targets[0].id if whole else f"_h{next(self.counter)}"
        two = "2" if n == 2 else ""
        g, zero = call.args[0], call.args[1 + n + (1 if "_or" in fn else 0)]
        peek = ast.Call(ast.Name(f"lg_peek{two}", ast.Load()), [g, *idx, zero], [])
        self.first.append(ast.Assign([ast.Name(name, ast.Store())], peek, lineno=st.lineno))
        if "_or" in fn:  # counted where it stood when its run was not
            count = ast.Call(
                ast.Name(f"lg_count{two}", ast.Load()), [g, *idx, call.args[1 + n]], []
            )
            out.append(ast.If(ast.UnaryOp(ast.Not(), call.args[-1]), [ast.Expr(count)], []))
        if whole:
            return None
        _replace(st, call, ast.Name(name, ast.Load()))
        return st


def _replace(tree: ast.AST, old: ast.AST, new: ast.AST) -> None:
    """Put ``new`` where the node ``old`` stands in ``tree`` (in place)."""

    class _Swap(ast.NodeTransformer):
        def visit(self, node):
            return new if node is old else super().visit(node)

    _Swap().visit(tree)
