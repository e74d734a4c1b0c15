"""The front end's reader of a kernel file's module level (``ast`` only, nothing run).

:class:`_Reader` walks the file's top-level statements once: the imports of
numba / math / numpy it keeps (as aliases), the names bound to numeric types,
the module-level constants (through :mod:`.frontend_const`), the ``@cuda.jit``
kernels and device functions; everything else is set aside with a note. Each
name the kernel may read is bound once in one sense. :meth:`_Reader.kernel`
hands the kernel to :mod:`.frontend_checker`.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from typing import Any

from .frontend import (
    BUILTINS,
    CUDA_NAMES,
    MATH,
    MAX_FUNCTIONS,
    MODULES,
    TYPES,
    KernelRejected,
    KernelSource,
    _cut,
    _dotted,
    _show,
)
from .frontend_checker import _Checker
from .frontend_const import _const_eval, _NotConstant


def _import_meaning(node: ast.Import | ast.ImportFrom, a: ast.alias) -> tuple[str, str]:
    """The name an import binds and what it means to the kernel (``other`` if nothing)."""
    if isinstance(node, ast.Import):
        if a.name in MODULES:
            return (a.asname or a.name.split(".")[0]), (
                f"alias:{a.name if a.asname else a.name.split('.')[0]}"
            )
        return a.asname or a.name.split(".")[0], "other"
    mod, bound = node.module or "", a.asname or a.name
    if mod not in MODULES or node.level:
        return bound, "other"
    if a.name in TYPES:
        return bound, f"type:{a.name}"
    if a.name == "cuda" and mod in ("numba", "vizmm_kernels._target"):
        return bound, "alias:numba.cuda"
    if f"{mod}.{a.name}" in MODULES or (mod == "math" and a.name in MATH):
        return bound, f"alias:{mod}.{a.name}"
    if mod == "numba.cuda" and a.name in CUDA_NAMES:
        return bound, f"alias:numba.cuda.{a.name}"
    return bound, "other"


class _Reader:
    """One file's module level: imports, constants, kernels and device functions."""

    def __init__(
        self,
        module: ast.Module,
        text: str,
        path: str,
        constants: Mapping[str, Any] | None = None,
        lenient: bool = False,
    ):
        self.path = path
        self.lenient = lenient
        self.lines = text.splitlines(True)
        self.aliases: dict[str, str] = {}  # a name the file binds -> its module path
        self.types: dict[str, str] = {}  # a name bound to a numeric type -> the type
        self.constants: dict[str, Any] = {}
        self.constant_lines: dict[str, int] = {}
        self.kernels: dict[str, ast.FunctionDef] = {}
        self.device: dict[str, ast.FunctionDef] = {}
        self.notes: list[str] = []
        self.plain: dict[str, ast.FunctionDef] = {}
        # what each module-level name means to vizmm, and where it was bound
        self.bound: dict[str, tuple[str, int]] = {}
        for stmt in module.body:
            self._top(stmt)
        for k, v in dict(constants or {}).items():  # the caller's (a grading case's TILE_WIDTH)
            if not (isinstance(k, str) and k.isidentifier()) or k.startswith("_") or "__" in k:
                continue
            if k in BUILTINS or k in TYPES or k in ("cuda", "math") or k in self.aliases:
                continue
            if isinstance(v, (int, float, bool)) or (
                isinstance(v, tuple) and all(isinstance(x, (int, float)) for x in v)
            ):
                self.constants[k] = v
        if lenient and not self.kernels and self.plain:  # text of one undecorated function
            first = next(iter(self.plain.values()))
            self.kernels[first.name] = first
        if lenient:
            self.aliases.setdefault("cuda", "numba.cuda")
            self.aliases.setdefault("math", "math")
        for t in TYPES:
            if lenient and t not in self.types and t not in self.constants:
                self.types.setdefault(t, t)

    def _where(self, node) -> str:
        return f"{self.path}, line {getattr(node, 'lineno', '?')}"

    def _note(self, node, what: str) -> None:
        self.notes.append(f"line {node.lineno}: {what} (set aside, not run)")

    def _bind(self, node, name: str, meaning: str) -> None:
        """Record that ``node`` binds ``name`` at module level to ``meaning``.

        A name the kernel may read (an import vizmm keeps, a numeric type, a
        constant, a kernel or device function) is bound once in one sense:
        ``cuda = something`` after ``from numba import cuda`` is refused, never
        half-followed. ``meaning`` is ``alias:...``, ``type:...``, ``constant``,
        ``kernel``, ``device``, ``plain`` or ``other`` (set aside).
        """
        used = not meaning.startswith(("plain", "other"))
        line = getattr(node, "lineno", 0)
        if (name.startswith("_") or "__" in name) and used:
            raise KernelRejected(
                f"{self.path}, line {line}: the name {_show(name)} starts with an underscore or "
                "has a double underscore, which vizmm's recorder keeps for its own names; "
                "rename it"
            )
        reserved = (
            (name in BUILTINS and "builtin")
            or (name in TYPES and meaning != f"type:{name}" and "numeric type")
            or (name == "cuda" and meaning != "alias:numba.cuda" and "numba.cuda")
            or (name == "math" and meaning != "alias:math" and "math module")
        )
        if reserved:
            raise KernelRejected(
                f"{self.path}, line {line}: {_show(name)} is the {reserved} a kernel reads; "
                "a kernel file does not bind it to anything else (rename this one)"
            )
        prev = self.bound.get(name)
        if (
            prev is not None
            and prev[0] != meaning
            and (used or not prev[0].startswith(("plain", "other")))
        ):
            raise KernelRejected(
                f"{self.path}, line {line}: {_show(name)} was bound at line {prev[1]} and is "
                "bound again here; vizmm reads the file without running it, so a name the "
                "kernel uses is bound once (rename one of them)"
            )
        self.bound[name] = (meaning, line)

    def _bind_other(self, stmt: ast.stmt) -> None:
        """Bind (as set aside) every module-level name a statement vizmm never runs binds."""
        stack: list[ast.AST] = [stmt]
        while stack:
            node = stack.pop()
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                self._bind(node, node.name, "other")
                stack.extend(node.decorator_list)
                continue  # its body's names are its own
            if isinstance(node, (ast.Lambda, ast.GeneratorExp, ast.ListComp, ast.SetComp)):
                continue
            if isinstance(node, ast.DictComp):
                continue
            if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
                self._bind(node, node.id, "other")
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                for a in node.names:
                    if a.name != "*":
                        bound, meaning = _import_meaning(node, a)
                        self._bind(node, bound, meaning)
            elif isinstance(node, ast.alias):
                pass
            elif isinstance(node, ast.ExceptHandler) and node.name:
                self._bind(node, node.name, "other")
            stack.extend(ast.iter_child_nodes(node))

    def _top(self, stmt: ast.stmt) -> None:
        """One module-level statement: kept (an import, a function, a constant) or set aside."""
        if isinstance(stmt, ast.Import):
            for a in stmt.names:
                if not self._keep_import(stmt, a):
                    self._note(stmt, f"import {a.name}")
            return
        if isinstance(stmt, ast.ImportFrom):
            self._top_import_from(stmt)
            return
        if isinstance(stmt, ast.FunctionDef):
            self._top_function(stmt)
            return
        if isinstance(stmt, (ast.Assign, ast.AnnAssign)):
            if not self._top_constant(stmt):
                self._bind_other(stmt)
                self._note(stmt, f"assignment {ast.unparse(stmt)[:60]}")
            return
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
            return  # the module's docstring
        if isinstance(stmt, ast.If) and "__name__" in ast.unparse(stmt.test):
            self._note(stmt, "the __main__ block")
            return
        self._bind_other(stmt)
        self._note(stmt, f"a {type(stmt).__name__} statement at module level")

    def _keep_import(self, stmt: ast.Import | ast.ImportFrom, a: ast.alias) -> bool:
        """Bind what one imported name means; whether vizmm keeps it (an alias or a type)."""
        bound, meaning = _import_meaning(stmt, a)
        self._bind(stmt, bound, meaning)
        kind, _, what = meaning.partition(":")
        if kind == "type":
            self.types[bound] = what
        elif kind == "alias":
            self.aliases[bound] = what
        return kind != "other"

    def _top_import_from(self, stmt: ast.ImportFrom) -> None:
        mod = stmt.module or ""
        if mod not in MODULES or stmt.level:
            self._bind_other(stmt)
            self._note(stmt, f"from {'.' * stmt.level}{mod} import ...")
            return
        for a in stmt.names:
            if a.name == "*":
                self._note(stmt, f"from {mod} import *")
            elif not self._keep_import(stmt, a):
                self._note(stmt, f"from {mod} import {a.name}")

    def _top_function(self, stmt: ast.FunctionDef) -> None:
        kind = self._decorated(stmt)
        if kind == "kernel":
            self._bind(stmt, stmt.name, "kernel")
            self.kernels[stmt.name] = stmt
        elif kind == "device":
            self._bind(stmt, stmt.name, "device")
            self.device[stmt.name] = stmt
        else:
            self._bind(stmt, stmt.name, "plain")
            self.plain[stmt.name] = stmt
            self._note(stmt, f"function {_cut(stmt.name)} (not @cuda.jit)")
        if len(self.kernels) + len(self.device) > MAX_FUNCTIONS:
            raise KernelRejected(
                f"{self._where(stmt)}: the file defines more than {MAX_FUNCTIONS} kernels "
                "and device functions; a kernel file is a page"
            )

    def _top_constant(self, stmt: ast.Assign | ast.AnnAssign) -> bool:
        """Keep an assignment of a numeric type or a constant to names; whether it was kept."""
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
        value = stmt.value
        if value is None or not all(isinstance(t, ast.Name) for t in targets):
            return False
        names = [t.id for t in targets]  # type: ignore[attr-defined]
        dunder = all(n.startswith("__") and n.endswith("__") for n in names)
        typ = self._type_of(value)
        if typ is not None and not dunder:
            for n in names:
                self._bind(stmt, n, f"type:{typ}")
                self.types[n] = typ
            return True
        try:
            v = self._const(value)
        except _NotConstant:
            return False
        if dunder:  # __version__ = 1 is the module's, not the kernel's
            return False
        for n in names:
            self._bind(stmt, n, "constant")
            self.constants[n] = v
            self.constant_lines[n] = stmt.lineno
        return True

    # -- names
    def canonical(self, node) -> str | None:
        """``cuda.x``, ``math.x``, a type name or None for a dotted name the file wrote."""
        dotted = _dotted(node)
        if dotted is None:
            return None
        head, _, rest = dotted.partition(".")
        if head in self.types and not rest:
            return self.types[head]
        if head not in self.aliases:
            return None
        full = self.aliases[head] + ("." + rest if rest else "")
        for prefix, canon in (
            ("numba.cuda.", "cuda."),
            ("numba.types.", ""),
            ("numpy.", ""),
            ("numba.", ""),
            ("math.", "math."),
        ):
            if full.startswith(prefix):
                out = canon + full[len(prefix) :]
                if canon == "" and out in TYPES:
                    return out
                if canon:
                    return out
                return None if "." in out or out not in TYPES else out
        if full == "numba.cuda":
            return "cuda"
        if full == "math":
            return "math"
        return None

    def _type_of(self, node) -> str | None:
        c = self.canonical(node)
        return c if c in TYPES else None

    def _decorated(self, fn: ast.FunctionDef) -> str | None:
        for d in fn.decorator_list:
            call = d if isinstance(d, ast.Call) else None
            target = call.func if call is not None else d
            c = self.canonical(target)
            if c != "cuda.jit":
                continue
            if len(fn.decorator_list) > 1:
                raise KernelRejected(
                    f"{self._where(fn)}: {_show(fn.name)} has {len(fn.decorator_list)} "
                    "decorators; a kernel or device function has one, @cuda.jit (the others "
                    "would never be applied here)"
                )
            device = False
            if call is not None:
                for a in [*call.args, *(kw.value for kw in call.keywords)]:
                    self._decorator_arg(fn, a)
                for kw in call.keywords:
                    if kw.arg is None:
                        raise KernelRejected(
                            f"{self._where(fn)}: @cuda.jit(**...) is outside the subset; "
                            "write its options as device=True, ..."
                        )
                    if kw.arg == "device":
                        if not (
                            isinstance(kw.value, ast.Constant) and isinstance(kw.value.value, bool)
                        ):
                            raise KernelRejected(
                                f"{self._where(fn)}: @cuda.jit(device=...) takes True or False"
                            )
                        device = kw.value.value
            return "device" if device else "kernel"
        return None

    def _decorator_arg(self, fn: ast.FunctionDef, arg: ast.expr) -> None:
        """Refuse a ``@cuda.jit(...)`` argument that is not a literal or a signature of types."""
        for n in ast.walk(arg):
            ok = isinstance(
                n,
                (ast.Tuple, ast.List, ast.Slice, ast.Subscript, ast.expr_context, ast.Call),
            ) or (
                isinstance(n, ast.Constant)
                and (n.value is None or isinstance(n.value, (bool, int, float, str)))
            )
            if isinstance(n, ast.Call):
                ok = not n.keywords and isinstance(n.func, (ast.Name, ast.Attribute))
            if isinstance(n, ast.Name):
                ok = (
                    n.id in self.types
                    or n.id in TYPES
                    or n.id == "void"
                    or (n.id in self.aliases and not n.id.startswith("_"))
                )
            if isinstance(n, ast.Attribute):
                head = _dotted(n)
                ok = head is not None and head.split(".")[0] in self.aliases
                ok = ok and not any(p.startswith("_") for p in head.split("."))  # type: ignore
            if not ok:
                raise KernelRejected(
                    f"{self._where(arg)}: the decorator of {_show(fn.name)} passes "
                    f"{_show(ast.unparse(arg))}; @cuda.jit takes literal options (device=True, "
                    "a signature string or numeric types), nothing that runs"
                )

    # -- constants
    def _const(self, node) -> Any:
        return _const_eval(node, self.constants)

    # -- the kernel
    def kernel(self, name: str | None) -> KernelSource:
        if name is None:
            if len(self.kernels) == 1:
                name = next(iter(self.kernels))
            elif not self.kernels and self.notes and self.path == "<kernel source>":
                fns = [n for n in self.notes if "function " in n]
                raise KernelRejected(
                    "no @cuda.jit kernel in the source" + (f" ({fns[0]})" if fns else "")
                )
            else:
                raise KernelRejected(
                    f"{self.path} defines {len(self.kernels)} @cuda.jit kernels; name one "
                    f"({_cut(', '.join(sorted(self.kernels)), 200) or 'none'})"
                )
        fn = self.kernels.get(name)
        if fn is None:
            if name in self.device:
                raise KernelRejected(
                    f"{self.path}: {name} is a device function (@cuda.jit(device=True)); "
                    "name the kernel that launches"
                )
            plain = [n for n in self.notes if f"function {name} " in n]
            pf = self.plain.get(name)
            jit = [
                d
                for d in (pf.decorator_list if pf else [])
                if (_dotted(d.func if isinstance(d, ast.Call) else d) or "").endswith("cuda.jit")
            ]
            if jit:
                raise KernelRejected(
                    f"{self._where(jit[0])}: {name} is decorated {_cut(ast.unparse(jit[0]), 40)} "
                    "but the file does not import cuda at its top level (an import inside try "
                    "or if is set aside, never run); write 'from numba import cuda' at the top"
                )
            if plain:
                raise KernelRejected(
                    f"{self.path}: {name} is a plain Python function (no @cuda.jit); a kernel "
                    "is decorated @cuda.jit"
                )
            found = sorted(self.kernels)
            raise KernelRejected(
                f"{self.path} has no kernel named {_show(name, 40)}"
                + (
                    f"; kernels there: {_cut(', '.join(found), 200)}"
                    if found
                    else "; it defines no kernel"
                )
            )
        first = min([fn.lineno, *(d.lineno for d in fn.decorator_list)])
        end = fn.end_lineno or fn.lineno
        source = "".join(self.lines[first - 1 : end])
        checker = _Checker(self, first)
        tree = checker.kernel(fn)
        return KernelSource(
            path=self.path,
            name=name,
            tree=tree,
            source=source,
            first_line=first,
            params=tuple(a.arg for a in fn.args.args),
            constants=dict(self.constants),
            types=dict(self.types),
            device_functions=tuple(checker.compiled.values()),
            notes=tuple(self.notes),
            constant_lines=dict(self.constant_lines),
        )
