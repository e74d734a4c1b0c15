"""The lint step of the test command: ruff's checks and its formatter over the tree.

pyproject.toml holds the rules (pycodestyle, pyflakes, isort, bugbear,
pyupgrade and numpydoc docstrings); a failure prints ruff's own report.
"""

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def _ruff(*args):
    pytest.importorskip("ruff")
    return subprocess.run(
        [sys.executable, "-m", "ruff", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_ruff_check_passes():
    proc = _ruff("check", "--no-cache", ".")
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-2000:]


def test_ruff_format_leaves_the_tree_unchanged():
    proc = _ruff("format", "--check", "--no-cache", ".")
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-2000:]
