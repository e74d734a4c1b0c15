"""Barriers some threads of a block may skip: cuda.syncthreads() under a thread-dependent branch.

CUDA asks every thread of a block to reach each ``__syncthreads()`` (PMPP
4th ed., Section 4.3: a barrier in an ``if`` whose threads take different
paths waits for threads that never come). On a GPU such a kernel can hang;
Numba's simulator, and vizmm's check, see the threads that skip it. This
module finds such barriers in a kernel's tree, from the source alone: a
barrier inside an ``if`` or ``while`` whose test, or a ``for`` whose range,
depends on the thread (``cuda.threadIdx``, ``cuda.grid``, ``cuda.laneid``, or
a local computed from them, like ``Row`` and ``Col``).
"""

from __future__ import annotations

import ast

__all__ = ["divergent_barriers"]

_THREAD = ("cuda.threadIdx", "cuda.grid", "cuda.laneid")


def _depends(node, tainted: set) -> bool:
    for n in ast.walk(node):
        if isinstance(n, ast.Name) and n.id in tainted:
            return True
        if isinstance(n, (ast.Attribute, ast.Call)) and ast.unparse(n).startswith(_THREAD):
            return True
    return False


def _thread_locals(fn: ast.FunctionDef) -> set:
    """The locals whose value depends on the thread (to a fixed point over the assignments)."""
    tainted: set = set()
    while True:
        before = len(tainted)
        for n in ast.walk(fn):
            if isinstance(n, (ast.Assign, ast.AugAssign)):
                targets = n.targets if isinstance(n, ast.Assign) else [n.target]
                if _depends(n.value, tainted):
                    for t in targets:  # a name, or names unpacked (an array element: no)
                        elts = t.elts if isinstance(t, ast.Tuple) else [t]
                        tainted |= {x.id for x in elts if isinstance(x, ast.Name)}
            elif isinstance(n, ast.For) and _depends(n.iter, tainted):
                tainted |= {x.id for x in ast.walk(n.target) if isinstance(x, ast.Name)}
        if len(tainted) == before:
            return tainted


def divergent_barriers(fn: ast.FunctionDef) -> list[int]:
    """Lines of the ``cuda.syncthreads()`` calls that only some threads of a block may reach.

    Parameters
    ----------
    fn : ast.FunctionDef
        A kernel as the front end normalised it (``cuda.*`` spelled out).

    Returns
    -------
    list of int
        The barriers' lines (as ``fn`` numbers them), in source order; empty
        when every barrier is reached by every thread, or the kernel has none.
    """
    tainted = _thread_locals(fn)
    lines: list[int] = []

    def visit(stmts: list, divergent: bool) -> None:
        for st in stmts:
            if (
                isinstance(st, ast.Expr)
                and isinstance(st.value, ast.Call)
                and ast.unparse(st.value.func) == "cuda.syncthreads"
            ):
                if divergent:
                    lines.append(st.lineno)
            elif isinstance(st, ast.If):
                d = divergent or _depends(st.test, tainted)
                visit(st.body, d)
                visit(st.orelse, d)
            elif isinstance(st, ast.While):
                visit(st.body, divergent or _depends(st.test, tainted))
            elif isinstance(st, ast.For):
                visit(st.body, divergent or _depends(st.iter, tainted))

    visit(fn.body, False)
    return lines


def backend_for(kernel, backend: str) -> str:
    """The backend a check of ``kernel`` records on: never a GPU where a barrier may hang it.

    Parameters
    ----------
    kernel : KernelSource
        What :func:`vizmm.record.frontend.read_kernel` read.
    backend : {'auto', 'simulator', 'numba-sim', 'gpu', 'gpu-legacy'}
        What was asked for.

    Returns
    -------
    str
        ``backend``; 'simulator' for 'auto' when the kernel has a barrier some
        threads may skip (the simulator sees the threads that skip it, and
        check reports the race).

    Raises
    ------
    RecordError
        For 'gpu' or 'gpu-legacy' and such a barrier: one line naming its
        file lines and what to do.
    """
    from .admission import RecordError
    from .targets import SIMULATOR_BACKENDS

    lines = divergent_barriers(kernel.tree)
    if not lines or backend in SIMULATOR_BACKENDS:  # a simulator never hangs there
        return backend
    if backend == "auto":
        return "simulator"
    where = ", ".join(str(ln + kernel.first_line - 1) for ln in lines)
    raise RecordError(
        f"{kernel.path}, line {where}: cuda.syncthreads() inside a branch that depends on the "
        "thread: threads that skip it leave the others waiting, and on a GPU the kernel can "
        "hang; check it in the simulator (--backend simulator), which reports the race"
    )
