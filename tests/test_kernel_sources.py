"""Every instrumented kernel is its plain kernel plus records, and nothing else.

The oracle is the plain kernel's own source (what students read, as the book
prints it): the instrumented source, with the record machinery taken out,
must parse to the same syntax tree. Record machinery is, and only is:

* calls of ``rec_*`` helpers (statements);
* assignments to the record's bookkeeping names (``slot``, ``bid``, ``tk``,
  ``nph``, ``*kind`` classifications of an access, and the barrier lab's
  ``Mtag`` / ``Ntag`` arrays beside Mds / Nds and their stores);
* ``if <kind> != OUT_OF_ALLOCATION:`` around a load or store (an access past
  the end of an array is recorded, not performed);
* ``if READS: <recording form> else: <plain form>``, the barrier lab's
  compile-time switch for recording every read of Mds / Nds: the plain form
  is kept;
* the record arrays appended to the kernel's parameters.
"""

import ast
import importlib
import inspect
import os
import sys
import textwrap

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KERNELS_DIR = os.path.join(ROOT, "kernels")
BOOKKEEPING = {"slot", "bid", "tk", "nph", "warp", "lane"}


def _modules():
    out = []
    for name in sorted(os.listdir(KERNELS_DIR)):
        if not name.endswith(".py") or name.startswith("_") or name == "codes.py":
            continue
        with open(os.path.join(KERNELS_DIR, name), encoding="utf-8") as f:
            text = f.read()
        if "def make_plain" in text and "def make_instrumented" in text:
            out.append(name[:-3])
    return out


def _kernel_def(factory) -> ast.FunctionDef:
    tree = ast.parse(textwrap.dedent(inspect.getsource(factory)))
    outer = tree.body[0]
    (inner,) = [n for n in outer.body if isinstance(n, ast.FunctionDef)]
    inner.decorator_list = []
    return inner


def _is_record(stmt: ast.stmt) -> bool:
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
        f = stmt.value.func
        return isinstance(f, ast.Name) and f.id.startswith("rec_")
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
        t = stmt.targets[0]
        if isinstance(t, ast.Subscript):  # the barrier lab's tags beside Mds / Nds
            return isinstance(t.value, ast.Name) and t.value.id.endswith("tag")
        return isinstance(t, ast.Name) and (
            t.id in BOOKKEEPING or t.id.endswith("kind") or t.id.endswith("tag")
        )
    return False


def _is_guard(stmt: ast.stmt) -> bool:
    if not isinstance(stmt, ast.If) or stmt.orelse:
        return False
    t = stmt.test
    return (
        isinstance(t, ast.Compare)
        and isinstance(t.left, ast.Name)
        and t.left.id.endswith("kind")
        and len(t.ops) == 1
        and isinstance(t.ops[0], ast.NotEq)
        and isinstance(t.comparators[0], ast.Name)
        and t.comparators[0].id == "OUT_OF_ALLOCATION"
    )


class _StripRecords(ast.NodeTransformer):
    def _body(self, body):
        out = []
        for stmt in body:
            if _is_record(stmt):
                continue
            if _is_guard(stmt):
                out.extend(self._body(stmt.body))
                continue
            if isinstance(stmt, ast.If) and isinstance(stmt.test, ast.Name):
                if stmt.test.id == "READS":  # the recording form, or else the plain one
                    out.extend(self._body(stmt.orelse))
                    continue
            out.append(self.visit(stmt))
        return out

    def generic_visit(self, node):
        for field in ("body", "orelse", "finalbody"):
            if isinstance(getattr(node, field, None), list):
                setattr(node, field, self._body(getattr(node, field)))
        for name, value in ast.iter_fields(node):
            if name in ("body", "orelse", "finalbody"):
                continue
            if isinstance(value, ast.AST):
                setattr(node, name, self.visit(value))
        return node


def _without_comments(node: ast.AST) -> str:
    return ast.dump(node, annotate_fields=True, include_attributes=False)


@pytest.mark.parametrize("name", _modules())
def test_instrumented_is_plain_plus_records(name):
    if ROOT not in sys.path:
        sys.path.insert(0, ROOT)
    module = importlib.import_module(f"vizmm_kernels.{name}")
    plain = _kernel_def(module.make_plain)
    inst = _StripRecords().visit(_kernel_def(module.make_instrumented))
    n = len(plain.args.args)
    assert [a.arg for a in inst.args.args[:n]] == [a.arg for a in plain.args.args], name
    inst.args.args = inst.args.args[:n]
    a, b = ast.unparse(plain), ast.unparse(inst)
    assert a == b, f"{name}: instrumented minus records differs from plain:\n{a}\n---\n{b}"
    assert _without_comments(plain) == _without_comments(inst)


def test_every_kernel_module_is_checked():
    assert {"naive", "tiled", "boundary", "general"} <= set(_modules())
