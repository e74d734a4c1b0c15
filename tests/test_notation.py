"""The book's notation for an element, written by one function for every layer."""

import re
from pathlib import Path

from vizmm.trace.notation import subscript

REPO = Path(__file__).resolve().parents[1]


def test_an_element_as_the_book_writes_it():
    # Fig. 5.8 names M's row 0, column 2 "M_{0,2}" and a slot of Mds "Mds_{1,0}"
    assert subscript("M", 0, 2) == "M_{0,2}"
    assert subscript("Mds", 1, 0) == "Mds_{1,0}"


def test_no_module_keeps_a_helper_of_its_own():
    # the five copies it replaced: a function whose one line is f"{name}_{{{a},{b}}}"
    copy = re.compile(r"def \w+\(name: str, \w+: int, \w+: int\) -> str:\n\s+return f\"\{name\}_")
    found = [
        str(p.relative_to(REPO))
        for folder in ("vizmm", "apps")
        for p in (REPO / folder).rglob("*.py")
        if copy.search(p.read_text(encoding="utf-8"))
    ]
    assert found == []
    # the oracle of the search: the copy it would find
    old = 'def _sub(name: str, a: int, b: int) -> str:\n    return f"{name}_{{{a},{b}}}"'
    assert copy.search(old)
