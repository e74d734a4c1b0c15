"""The labelled benchmark's own model: labels read, checked and expanded (pure Python).

Nothing here imports vizmm: the racing (block, array, slot) sets are
expanded from the hand-written rules of ``labels.json`` by this small model,
so the benchmark's expectations never come from the checker it scores.

A race rule is ``{"array": "Nds", "slots": ..., "blocks": ..., "kind": ...}``:

``slots``
    ``"all"``; ``{"rows": [r, ...]}`` / ``{"cols": [c, ...]}`` (the last two
    indices of a slot); ``{"diag": true}`` (row == col); ``{"prefix": [b]}``
    (the slots whose leading indices are ``b``: one buffer of a 3-D
    double-buffered tile); ``{"except": [[r, c], ...]}``; or a list of slots.
``blocks``
    ``"all"`` (every block of the launch's grid, ``ceil(j/T) x ceil(l/T)``),
    ``{"bx_even": true}``, or a list of ``[by, bx]``.
``kind``
    The hazard in words (read-after-write, write-after-read,
    write-after-write); it documents the label and is not scored (the
    checker names the order its run took).

A slot is a tuple of indices in the array's ``view`` (its ``shape`` unless
the label gives a ``view``: a 1-D flat tile ``Mds[ty*TILE_WIDTH + tx]`` of
shape ``[T*T]`` is viewed as ``[T, T]``, so its slot is ``(ty, tx)``).
"""

from __future__ import annotations

import ast
import itertools
import json
from pathlib import Path

HERE = Path(__file__).resolve().parent
LABELS = HERE / "labels.json"

#: The error kinds scored at kernel level.
KINDS = ("race", "wrong term", "wrong P", "out of bounds")
CATEGORIES = ("correct", "racy", "wrong")


def load(path: Path = LABELS) -> list[dict]:
    """The labelled kernels of ``labels.json`` (a list of dicts, in file order)."""
    with open(path, encoding="utf-8") as f:
        return json.load(f)["kernels"]


def sizes(label: dict) -> tuple[int, int, int, int]:
    """``(j, k, l, tile_width)`` of a label's launch."""
    launch = label["launch"]
    if "width" in launch:
        w = launch["width"]
        return w, w, w, launch["tile_width"]
    return launch["j"], launch["k"], launch["l"], launch["tile_width"]


def grid(label: dict) -> list[tuple[int, int]]:
    """Every block ``(by, bx)`` of the launch, in grid order."""
    j, _k, l, t = sizes(label)
    return [(by, bx) for by in range(-(-j // t)) for bx in range(-(-l // t))]


def view(label: dict, array: str) -> tuple[int, ...]:
    """The shape a slot of ``array`` is given in (its view, else its shape)."""
    spec = label["shared"][array]
    return tuple(spec.get("view", spec["shape"]))


def _blocks(label: dict, rule) -> list[tuple[int, int]]:
    if rule == "all":
        return grid(label)
    if isinstance(rule, dict) and rule.get("bx_even"):
        return [b for b in grid(label) if b[1] % 2 == 0]
    if isinstance(rule, list):
        return [tuple(b) for b in rule]
    raise ValueError(f"{label['id']}: unknown blocks rule {rule!r}")


def _slots(label: dict, array: str, rule) -> list[tuple[int, ...]]:
    shape = view(label, array)
    every = list(itertools.product(*(range(n) for n in shape)))
    if rule == "all":
        return every
    if isinstance(rule, list):
        return [tuple(s) for s in rule]
    if not isinstance(rule, dict) or len(rule) != 1:
        raise ValueError(f"{label['id']}: unknown slots rule {rule!r}")
    ((key, value),) = rule.items()
    if key == "rows":
        return [s for s in every if s[-2] in value]
    if key == "cols":
        return [s for s in every if s[-1] in value]
    if key == "diag" and value:
        return [s for s in every if s[-2] == s[-1]]
    if key == "prefix":
        return [s for s in every if list(s[: len(value)]) == list(value)]
    if key == "except":
        out = {tuple(x) for x in value}
        return [s for s in every if s not in out]
    raise ValueError(f"{label['id']}: unknown slots rule {rule!r}")


def racing_slots(label: dict) -> set[tuple]:
    """The hand-derived racing set ``{(by, bx, array, slot)}`` of a label (empty: no race)."""
    out: set[tuple] = set()
    for rule in label.get("races", ()):
        for by, bx in _blocks(label, rule["blocks"]):
            for slot in _slots(label, rule["array"], rule["slots"]):
                out.add((by, bx, rule["array"], slot))
    return out


def scored(label: dict) -> set[str]:
    """The kinds scored for this kernel: all but its schedule- and value-dependent ones."""
    skip = set(label.get("schedule_dependent", ())) | set(label.get("value_dependent", ()))
    return set(KINDS) - skip


def tile_width_constant(source: str) -> int | None:
    """The module constant ``TILE_WIDTH = n`` of a kernel file's source (None if absent)."""
    for node in ast.parse(source).body:
        if (
            isinstance(node, ast.Assign)
            and [getattr(t, "id", None) for t in node.targets] == ["TILE_WIDTH"]
            and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, int)
        ):
            return node.value.value
    return None


def kernel_names(source: str) -> set[str]:
    """Names of the module-level functions of a kernel file's source (read with ast)."""
    return {n.name for n in ast.parse(source).body if isinstance(n, ast.FunctionDef)}


def validate(labels: list[dict], root: Path = HERE) -> list[str]:
    """Every problem of a labels list, one line each (empty: the labels are sound).

    Checks that each id is unique, the file exists, the kernel named is a
    function of the file, the file's ``TILE_WIDTH`` equals the launch's
    tile width, the expected kinds are known, racy kernels (and only they)
    carry a non-empty racing set that expands inside their grid and arrays,
    and every label says why.
    """
    problems = []
    seen = set()
    for lab in labels:
        i = lab.get("id", "?")
        if i in seen:
            problems.append(f"{i}: id used twice")
        seen.add(i)
        for key in ("file", "kernel", "category", "launch", "styles", "expected", "why"):
            if key not in lab:
                problems.append(f"{i}: no {key!r}")
        if any(key not in lab for key in ("file", "kernel", "launch", "expected")):
            continue
        path = root / lab["file"]
        if not path.is_file():
            problems.append(f"{i}: {lab['file']} does not exist")
            continue
        source = path.read_text(encoding="utf-8")
        if lab["kernel"] not in kernel_names(source):
            problems.append(f"{i}: no function {lab['kernel']!r} in {lab['file']}")
        t = tile_width_constant(source)
        if t != sizes(lab)[3]:
            problems.append(
                f"{i}: TILE_WIDTH = {t} in the file, tile_width {sizes(lab)[3]} in the launch"
            )
        if lab.get("category") not in CATEGORIES:
            problems.append(f"{i}: category {lab.get('category')!r}")
        for kind in [
            *lab["expected"],
            *lab.get("schedule_dependent", ()),
            *lab.get("value_dependent", ()),
        ]:
            if kind not in KINDS:
                problems.append(f"{i}: unknown kind {kind!r}")
        if set(lab["expected"]) & (
            set(lab.get("schedule_dependent", ())) | set(lab.get("value_dependent", ()))
        ):
            problems.append(f"{i}: a kind both expected and not scored")
        racy = "race" in lab["expected"]
        if racy != bool(lab.get("races")):
            problems.append(
                f"{i}: 'race' expected but no racing set, or a racing set without 'race'"
            )
        if (lab.get("category") == "correct") != (not lab["expected"]):
            problems.append(f"{i}: a correct kernel expects no error and only it")
        if lab.get("races"):
            try:
                slots = racing_slots(lab)
            except (KeyError, ValueError, IndexError) as exc:
                problems.append(f"{i}: racing set does not expand ({exc})")
                continue
            blocks = set(grid(lab))
            if not slots:
                problems.append(f"{i}: racing set expands to nothing")
            for by, bx, array, slot in slots:
                shape = view(lab, array)
                if (
                    (by, bx) not in blocks
                    or len(slot) != len(shape)
                    or not all(0 <= s < n for s, n in zip(slot, shape, strict=True))
                ):
                    problems.append(
                        f"{i}: slot {(by, bx, array, slot)} outside the launch or array"
                    )
                    break
    return problems
