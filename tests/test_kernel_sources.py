"""``kernels/`` holds the book's listings, plain, and nothing that records.

vizmm records a kernel by rewriting its source (the instrumenter,
``vizmm/record/instrument.py``); no hand-written recording copy is kept
beside a listing. The oracle is the module's own text: each kernel module
defines ``make_plain`` and no recording factory, imports only the compiler
seam (``._target``), and names no record machinery.
"""

import ast
import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KERNELS_DIR = os.path.join(ROOT, "kernels")
BOOK = ("naive", "tiled", "boundary", "general", "uncoalesced", "conflict", "padded", "dynamic")


def _tree(name):
    with open(os.path.join(KERNELS_DIR, f"{name}.py"), encoding="utf-8") as f:
        return ast.parse(f.read())


@pytest.mark.parametrize("name", BOOK)
def test_kernel_module_is_the_plain_listing_only(name):
    tree = _tree(name)
    defs = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
    assert "make_plain" in defs
    assert "make_instrumented" not in defs
    imported = {
        n.module
        for n in ast.walk(tree)
        if isinstance(n, ast.ImportFrom) and n.level and n.module is not None
    }
    assert imported <= {"_target"}, imported
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call)]
    called = {n.func.id for n in calls if isinstance(n.func, ast.Name)}
    assert not {c for c in called if c.startswith("rec_")}


def test_no_record_writing_module_is_left():
    assert not os.path.exists(os.path.join(KERNELS_DIR, "_record.py"))
    listed = {n[:-3] for n in os.listdir(KERNELS_DIR) if n.endswith(".py") and n[0] != "_"}
    assert set(BOOK) <= listed
