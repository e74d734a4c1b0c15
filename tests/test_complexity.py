"""Size and complexity limits of vizmm's own code (vizmm/, apps/, kernels/).

No function over a cyclomatic complexity of 25 (McCabe's count, as radon
computes it) and no module over 1,200 lines.
"""

from __future__ import annotations

from pathlib import Path

import pytest

radon_complexity = pytest.importorskip("radon.complexity")

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = ("vizmm", "apps", "kernels")
MAX_COMPLEXITY = 25
MAX_LINES = 1200


def _sources() -> list[Path]:
    return sorted(
        p for f in FOLDERS for p in (ROOT / f).rglob("*.py") if "__pycache__" not in p.parts
    )


def _blocks(block, prefix=""):
    """A function or method radon found, and its closures, each with its qualified name.

    radon lists a class's methods beside the class (``fullname`` says
    ``Class.method``); the class's own entry is a sum and is skipped.
    """
    if hasattr(block, "methods"):  # a class: its methods come on their own
        return
    name = f"{prefix}{block.fullname}"
    yield name, block.complexity
    for c in getattr(block, "closures", ()):
        yield from _blocks(c, f"{name}.")


def _complexities() -> dict[str, int]:
    out = {}
    for path in _sources():
        rel = path.relative_to(ROOT).as_posix()
        for block in radon_complexity.cc_visit(path.read_text(encoding="utf-8")):
            for name, cc in _blocks(block):
                out[f"{rel}:{name}"] = max(cc, out.get(f"{rel}:{name}", 0))
    return out


def _line_counts() -> dict[str, int]:
    return {
        p.relative_to(ROOT).as_posix(): len(p.read_text(encoding="utf-8").splitlines())
        for p in _sources()
    }


def test_radon_sees_a_branchy_function():
    """The measure itself, against a hand count: 1 + if + elif + for + if + and + while = 7."""
    src = (
        "def f(a, b):\n"
        "    if a:\n        return 1\n"
        "    elif b:\n        return 2\n"
        "    for i in a:\n        if i and b:\n            pass\n"
        "    while b:\n        b -= 1\n"
    )
    [block] = radon_complexity.cc_visit(src)
    assert block.complexity == 7  # 1 + if + elif + for + inner if + and + while


def test_no_function_over_the_complexity_limit():
    cc = _complexities()
    assert len(cc) > 1000  # the whole code base was read
    over = {k: v for k, v in cc.items() if v > MAX_COMPLEXITY}
    assert not over, f"over a complexity of {MAX_COMPLEXITY}: {over}"


def test_no_module_over_the_line_limit():
    lines = _line_counts()
    assert len(lines) > 100
    over = {k: v for k, v in lines.items() if v > MAX_LINES}
    assert not over, f"modules over {MAX_LINES} lines: {over}"
